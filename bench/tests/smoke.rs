//! End-to-end smoke test of the benchmark's Rust programs on a tiny data set: `bench-gen`
//! writes what bench/README.md promises (bundles, one-file directories, N-anchor roots with the
//! chain's root last, a verifiable chain), and `peer-rustls` loads and verifies it. No timing
//! is asserted: speed belongs in the benchmark itself.

use std::fs;
use std::path::Path;
use std::process::Command;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, ParsedExtension, X509Certificate};

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

fn peer(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_peer-rustls"))
        .args(args)
        .output()
        .expect("run peer-rustls");
    assert!(
        out.status.success(),
        "peer-rustls {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("peer-rustls prints JSON")
}

#[test]
fn generated_data_has_the_promised_shape_and_the_chain_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path();
    let status = Command::new(env!("CARGO_BIN_EXE_bench-gen"))
        .arg(data)
        .arg("5,3")
        .status()
        .expect("run bench-gen");
    assert!(status.success());

    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(data.join("manifest.json")).expect("manifest"))
            .expect("manifest JSON");
    assert_eq!(manifest["ns"], serde_json::json!([3, 5]));

    let bundle5 = certs(&data.join("ca/bundle-5.pem"));
    let bundle3 = certs(&data.join("ca/bundle-3.pem"));
    assert_eq!(bundle5.len(), 5);
    assert_eq!(
        bundle3[..],
        bundle5[..3],
        "smaller N is a prefix of the larger"
    );
    assert_eq!(
        fs::read_dir(data.join("ca/dir-5")).expect("dir-5").count(),
        5
    );
    assert_eq!(
        fs::read_dir(data.join("ca/dir-3")).expect("dir-3").count(),
        3
    );

    let mut subjects = Vec::new();
    for der in &bundle5 {
        let (_, cert) = X509Certificate::from_der(der).expect("parse CA");
        assert_eq!(
            cert.subject().as_raw(),
            cert.issuer().as_raw(),
            "self-signed"
        );
        let ext = |want: fn(&ParsedExtension<'_>) -> bool| {
            cert.extensions().iter().any(|e| want(e.parsed_extension()))
        };
        assert!(ext(
            |e| matches!(e, ParsedExtension::BasicConstraints(bc) if bc.ca)
        ));
        assert!(ext(|e| matches!(
            e,
            ParsedExtension::SubjectKeyIdentifier(_)
        )));
        subjects.push(cert.subject().as_raw().to_vec());
    }
    subjects.sort();
    subjects.dedup();
    assert_eq!(subjects.len(), 5, "distinct subjects");

    let root = certs(&data.join("verify/root.pem"));
    let roots5 = certs(&data.join("verify/roots-5.pem"));
    assert_eq!(roots5.len(), 5);
    assert_eq!(roots5[4], root[0], "the chain's root is the last anchor");
    assert_eq!(roots5[..4], bundle5[..4]);
    assert_eq!(certs(&data.join("verify/chain.pem")).len(), 2);

    let bundle = data.join("ca/bundle-5.pem");
    let load = peer(&["load", bundle.to_str().expect("utf-8 path"), "2", "10"]);
    assert_eq!(load["anchors"], 5);
    assert_eq!(load["samples_ms"].as_array().map(Vec::len), Some(2));
    let dir = data.join("ca/dir-5");
    assert_eq!(
        peer(&["loaddir", dir.to_str().expect("utf-8 path"), "1", "10"])["anchors"],
        5
    );
    let roots = data.join("verify/roots-3.pem");
    let chain = data.join("verify/chain.pem");
    let v = peer(&[
        "verify",
        roots.to_str().expect("utf-8 path"),
        chain.to_str().expect("utf-8 path"),
        "3",
        "10",
    ]);
    assert_eq!(v["valid"], true);
    assert_eq!(v["anchors"], 3);
    assert_eq!(v["iterations"], 3);
}

/// `tls-load pki DIR` writes the terminator benchmark's PKI: a root, a two-certificate chain
/// whose leaf names bench.example and 127.0.0.1, and a private key only its owner can read.
#[test]
fn tls_load_pki_writes_a_usable_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = Command::new(env!("CARGO_BIN_EXE_tls-load"))
        .args(["pki", &dir.path().display().to_string()])
        .status()
        .expect("run tls-load");
    assert!(status.success());
    assert_eq!(certs(&dir.path().join("ca.pem")).len(), 1);
    let chain = certs(&dir.path().join("chain.pem"));
    assert_eq!(chain.len(), 2, "leaf + intermediate");
    assert_eq!(chain[0], certs(&dir.path().join("leaf.pem"))[0]);
    let (_, leaf) = X509Certificate::from_der(&chain[0]).expect("leaf parses");
    let san = leaf
        .subject_alternative_name()
        .expect("SAN extension")
        .expect("SAN present");
    let names = format!("{:?}", san.value.general_names);
    assert!(
        names.contains("bench.example")
            && (names.contains("127.0.0.1") || names.contains("[127, 0, 0, 1]")),
        "{names}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir.path().join("leaf.key"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// `tls-load hold` against the bare rustls server: N connections held after their
/// handshake, and N held in the middle of it (`--partial`), each reported `ready N`; the
/// bare server reports the size of its connection future before `listening on`.
#[test]
fn tls_load_holds_connections_done_and_half_way() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = dir.path().display().to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_tls-load"))
        .args(["pki", &pki])
        .status()
        .expect("run tls-load");
    assert!(status.success());
    let mut server = Command::new(env!("CARGO_BIN_EXE_bare-rustls"))
        .arg(dir.path().join("chain.pem"))
        .arg(dir.path().join("leaf.key"))
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bare-rustls");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let mut future = None;
    let addr = loop {
        let line = lines.next().expect("a line").expect("text");
        if let Some(n) = line.strip_prefix("connection future ") {
            future = n.trim_end_matches(" bytes").parse::<usize>().ok();
        }
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.to_string();
        }
    };
    assert!(future.is_some_and(|n| n > 0), "future size reported first");
    for partial in [false, true] {
        let mut args = vec!["hold", &addr, "--count", "5", "--limit-s", "60"];
        if partial {
            args.push("--partial");
        }
        let mut hold = Command::new(env!("CARGO_BIN_EXE_tls-load"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run tls-load hold");
        let mut out = BufReader::new(hold.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("read");
        assert_eq!(line.trim(), "ready 5", "partial: {partial}");
        hold.stdin
            .take()
            .expect("stdin")
            .write_all(b"done\n")
            .expect("write");
        assert!(hold.wait().expect("wait").success(), "partial: {partial}");
    }
    let _ = server.kill();
    let _ = server.wait();
}
