//! Snapshot start-up figures (issue 29), for one snapshot and a chain whose root it holds:
//!
//! * `open`: `StoreHandle::new` on the snapshot (what `tlskit serve --client-ca` and the
//!   verifier do at start: open, load report, a usable handle);
//! * `first verification`: a verifier on that handle (no cache) and its first
//!   `verify_server_cert` of the chain; `ready` = open + first verification;
//! * bytes read by the process during the open (`/proc/self/io` rchar), VmRSS
//!   (`/proc/self/status`) before, after the open and after 1,000 distinct anchors were
//!   looked up (`get` of 1,000 anchors spread over the store, then `by_subject` of each),
//!   and the store's `memory_bytes` at each point;
//! * a full integrity check (`damaged_anchors`, as a reload runs) on a fresh open: time
//!   and memory.
//!
//! The first open is measured in a fresh process; `RUNS` (env, default 21) more give the
//! medians. `snapshot_probe SNAPSHOT CHAIN.pem [HOST]` (host default `bench.example`);
//! with `BUILD_FROM=a.pem:b.pem` (env) the snapshot is first built from those files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use rustls::client::danger::ServerCertVerifier;
use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{ServerName, StoreServerVerifier, UnixTime, VerifierConfig};

fn proc_field(file: &str, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
fn rss_kib() -> u64 {
    proc_field("/proc/self/status", "VmRSS:")
}
fn rchar() -> u64 {
    proc_field("/proc/self/io", "rchar:")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let snap = std::path::PathBuf::from(&a[1]);
    let mut certs = tlskit_verify::load_certs(std::path::Path::new(&a[2])).unwrap();
    let host = a.get(3).cloned().unwrap_or_else(|| "bench.example".into());
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    if let Ok(from) = std::env::var("BUILD_FROM") {
        let srcs: Vec<Source> = from.split(':').map(Source::from_arg).collect();
        tlskit_store::build_snapshot(&srcs, &snap).unwrap();
    }
    let inter = certs.split_off(1);
    let leaf = certs.pop().unwrap();
    let name = ServerName::try_from(host).unwrap();
    let now = UnixTime::now();
    // Warm what every process pays once whatever the store (the crypto provider's
    // tables, the allocator), on a throwaway store: not part of the snapshot's cost.
    let _ = rustls::crypto::aws_lc_rs::default_provider();

    let one = |first: bool| -> (f64, f64, u64, Arc<StoreHandle>, Arc<dyn ServerCertVerifier>) {
        let io0 = rchar();
        let t0 = Instant::now();
        let (h, _report) = StoreHandle::new(vec![Source::Snapshot(snap.clone())]).unwrap();
        let open = t0.elapsed().as_secs_f64() * 1e3;
        let read = rchar() - io0;
        let h = Arc::new(h);
        let t1 = Instant::now();
        let v: Arc<dyn ServerCertVerifier> = Arc::new(StoreServerVerifier::new(
            Arc::clone(&h),
            VerifierConfig {
                cache: None,
                ..Default::default()
            },
        ));
        v.verify_server_cert(&leaf, &inter, &name, &[], now)
            .expect("the chain verifies against the snapshot");
        let verify = t1.elapsed().as_secs_f64() * 1e3;
        if first {
            println!("first open in this process: open {open:.3} ms, first verification {verify:.3} ms, ready {:.3} ms, {read} bytes read", open + verify);
        }
        (open, verify, read, h, v)
    };

    let rss0 = rss_kib();
    let (_, _, _, h, v) = one(true);
    let store = h.current();
    let rss_open = rss_kib();
    let mem_open = store.memory_bytes();
    let n = store.len();
    let io0 = rchar();
    let mut found = 0usize;
    for k in 0..1000usize {
        let i = (k * n / 1000) as u32;
        if let Some(x) = store.get(i) {
            found += store.by_subject(x.subject()).count();
        }
    }
    let lookup_read = rchar() - io0;
    let rss_1000 = rss_kib();
    let mem_1000 = store.memory_bytes();
    println!(
        "{n} anchors, {} DER bytes; VmRSS before {rss0} KiB, after open + first verification {rss_open} KiB (+{}), after 1,000 distinct lookups {rss_1000} KiB (+{}; {found} found, {lookup_read} bytes read); memory_bytes {mem_open} -> {mem_1000}",
        store.der_bytes(),
        rss_open as i64 - rss0 as i64,
        rss_1000 as i64 - rss0 as i64,
    );
    drop((store, v, h));

    // A full integrity check (what a reload runs on the new store) on a fresh open.
    let s = tlskit_store::TrustStore::open_snapshot(&snap).unwrap();
    let rss_a = rss_kib();
    let t = Instant::now();
    let damaged = s.damaged_anchors().len();
    println!(
        "full check of a fresh open: {:.1} ms, {damaged} damaged; VmRSS +{} KiB, memory_bytes {}",
        t.elapsed().as_secs_f64() * 1e3,
        rss_kib() as i64 - rss_a as i64,
        s.memory_bytes()
    );
    drop(s);

    let (mut o, mut f, mut r, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let (open, verify, read, h, v) = one(false);
        o.push(open);
        f.push(verify);
        r.push(open + verify);
        bytes = read;
        drop((v, h));
    }
    println!(
        "medians of {runs}: open {:.4} ms, first verification {:.4} ms, ready {:.4} ms; {bytes} bytes read per open",
        median(o),
        median(f),
        median(r)
    );
}
