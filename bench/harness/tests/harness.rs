//! The harness on real inputs: a small store, a chain made by tlskit-pki.
#![allow(clippy::unwrap_used)]

use tlskit_bench_harness::{store, verify, BenchError, VerifyOptions};
use tlskit_pki::chain::{server_chain, ServerChain, ServerChainOptions};
use tlskit_store::Source;
use tlskit_verify::{CertificateDer, ServerName};

fn chain(tag: &str) -> ServerChain {
    server_chain(
        &ServerChainOptions::new(
            format!("CN=Harness Root {tag}"),
            format!("CN=Harness Int {tag}"),
            "CN=bench.example",
        )
        .sans(["dns:bench.example"]),
    )
    .unwrap()
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("c.pem");
    std::fs::write(&p, pem).unwrap();
    tlskit_verify::load_certs(&p).unwrap()
}

#[test]
fn store_bench_measures_the_store_it_was_given() {
    let d = tempfile::tempdir().unwrap();
    for t in ["a", "b", "c"] {
        std::fs::write(d.path().join(format!("{t}.pem")), chain(t).root_pem).unwrap();
    }
    let srcs = [Source::Dir(d.path().into())];
    let (s, report) = tlskit_store::load(&srcs).unwrap();
    let r = store::run(&srcs, &s, &report, 2).unwrap();
    assert_eq!((r.anchors, r.files, r.runs), (3, 3, 2));
    assert_eq!(
        (r.der_bytes, r.memory_bytes),
        (s.der_bytes(), s.memory_bytes())
    );
    assert!(r.der_bytes > 0 && r.memory_bytes >= r.der_bytes);
    assert_eq!(r.memory_ratio, r.memory_bytes as f64 / r.der_bytes as f64);
    assert_eq!(r.us_per_cert, r.load_ms * 1e3 / 3.0);
    for t in [r.load_ms, r.snapshot_load_ms, r.lookup_ns] {
        assert!(t.is_finite() && t > 0.0, "{r:?}");
    }
    // The document's field order (`tlskit.bench.store/1`).
    let json = serde_json::to_value(&r).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "anchors",
            "der_bytes",
            "files",
            "load_ms",
            "lookup_ns",
            "memory_bytes",
            "memory_ratio",
            "runs",
            "snapshot_load_ms",
            "us_per_cert"
        ]
    );
}

#[test]
fn verify_bench_times_a_chain_that_verifies_and_refuses_one_that_does_not() {
    let c = chain("v");
    let mut sent = certs(&c.chain_pem);
    let inter = sent.split_off(1);
    let leaf = sent.pop().unwrap();
    let name = ServerName::try_from("bench.example").unwrap();
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root.pem");
    std::fs::write(&root, &c.root_pem).unwrap();
    let load = || tlskit_store::load(&[Source::File(root.clone())]).unwrap().0;

    let opts = VerifyOptions::new(1, 10).compare_rustls(true);
    let r = verify::run(load(), &leaf, &inter, &name, &opts).unwrap();
    assert_eq!(
        (r.anchors, r.host.as_str(), r.runs),
        (1, "bench.example", 1)
    );
    for v in [
        r.verify_us,
        r.cached_verify_us,
        r.one_thread_per_s,
        r.two_thread_per_s,
        r.two_thread_speedup,
        r.cached_two_thread_speedup,
    ] {
        assert!(v.is_finite() && v > 0.0, "{r:?}");
    }
    assert!(r.rustls_webpki_us.is_some_and(|v| v > 0.0));
    assert_eq!(r.verify_us, 1e6 / r.one_thread_per_s);

    let r = verify::run(load(), &leaf, &inter, &name, &VerifyOptions::new(1, 10)).unwrap();
    assert_eq!(r.rustls_webpki_us, None);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.starts_with(r#"{"anchors":1,"host":"bench.example","runs":1,"verify_us":"#));
    assert!(!json.contains("rustls_webpki_us"), "{json}");

    // Another root: not benchmarked.
    let other = d.path().join("other.pem");
    std::fs::write(&other, chain("other").root_pem).unwrap();
    let (s, _) = tlskit_store::load(&[Source::File(other)]).unwrap();
    let e = verify::run(s, &leaf, &inter, &name, &VerifyOptions::new(1, 10)).unwrap_err();
    assert!(matches!(e, BenchError::ChainInvalid(_)), "{e}");
    assert!(
        e.to_string().starts_with("the chain does not verify: "),
        "{e}"
    );
}
