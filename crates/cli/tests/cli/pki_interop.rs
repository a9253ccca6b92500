//! Interoperability of what `tlskit` writes with the real tools: OpenSSL 3 (`req -verify`,
//! `verify -verify_hostname`, `pkcs12`, `s_server`/`s_client`) and GnuTLS `certtool`.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::run::{ok, text, tlskit_in as tlskit};
use crate::show;
use show::show_items;

/// Run an external tool in `dir`; returns its output (status not checked).
fn tool(dir: &Path, prog: &str, args: &[&str]) -> Output {
    Command::new(prog)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{prog} is needed for this test: {e}"))
}

#[track_caller]
fn tool_ok(dir: &Path, prog: &str, args: &[&str]) -> String {
    let o = tool(dir, prog, args);
    assert!(o.status.success(), "{prog} {args:?}\n{}", text(&o));
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Root CA `root`, intermediate `sub`, a server key and its request with `sans`, issued
/// by `sub` into `chain.pem` (leaf + intermediate).
fn pki(dir: &Path, key_type: &str, sans: &[&str]) {
    ok(
        dir,
        &[
            "ca",
            "init",
            "root",
            "--subject",
            "CN=Interop Root,O=tlskit tests,C=SE",
        ],
    );
    ok(
        dir,
        &[
            "ca",
            "init",
            "sub",
            "--parent",
            "root",
            "--subject",
            "CN=Interop Issuing CA,O=tlskit tests",
            "--days",
            "1000",
        ],
    );
    ok(dir, &["key", "new", "--type", key_type, "-o", "server.key"]);
    let subject = format!("CN={}", sans[0]);
    let mut args = vec![
        "csr",
        "new",
        "--key",
        "server.key",
        "--subject",
        subject.as_str(),
    ];
    let san_args: Vec<String> = sans.iter().map(|s| format!("dns:{s}")).collect();
    for s in &san_args {
        args.push("--san");
        args.push(s);
    }
    args.extend(["-o", "server.csr"]);
    ok(dir, &args);
    ok(
        dir,
        &[
            "ca",
            "issue",
            "sub",
            "--csr",
            "server.csr",
            "-o",
            "chain.pem",
        ],
    );
    // The leaf alone and the intermediates alone, for tools that want them apart.
    let chain = fs::read_to_string(dir.join("chain.pem")).unwrap();
    let end = "-----END CERTIFICATE-----\n";
    let cut = chain.find(end).unwrap() + end.len();
    fs::write(dir.join("leaf.pem"), &chain[..cut]).unwrap();
    fs::write(dir.join("untrusted.pem"), &chain[cut..]).unwrap();
}

#[test]
fn openssl_req_verify_accepts_requests_of_every_key_type() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for ty in ["p256", "p384", "ed25519", "rsa2048"] {
        let k = format!("{ty}.key");
        let r = format!("{ty}.csr");
        ok(d, &["key", "new", "--type", ty, "-o", &k]);
        ok(
            d,
            &[
                "csr",
                "new",
                "--key",
                &k,
                "--subject",
                "CN=räksmörgås.com,O=Räksmörgås AB,C=SE",
                "--san",
                "dns:räksmörgås。com",
                "-o",
                &r,
            ],
        );
        let out = tool_ok(
            d,
            "openssl",
            &[
                "req", "-in", &r, "-verify", "-noout", "-text", "-nameopt", "utf8",
            ],
        );
        assert!(
            out.contains("verify OK") || out.contains("self-signature verify OK"),
            "{ty}: {out}"
        );
        assert!(out.contains("DNS:xn--rksmrgs-5wao1o.com"), "{ty}: {out}");
        // Non-ASCII attributes are UTF8String; the CN that names the SAN is its A-labels.
        assert!(
            out.contains("O=Räksmörgås AB") && out.contains("CN=xn--rksmrgs-5wao1o.com"),
            "{ty}: UTF8String O and A-label CN expected: {out}"
        );
        // OpenSSL can use our key files too.
        tool_ok(d, "openssl", &["pkey", "-in", &k, "-noout"]);
    }
}

#[test]
fn openssl_and_certtool_verify_issued_chains_with_hostnames() {
    for (ty, names) in [
        ("p256", vec!["www.example.com", "example.com"]),
        ("rsa2048", vec!["räksmörgås.se", "www.räksmörgås.se"]),
        ("ed25519", vec!["ed.example.net"]),
    ] {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        pki(d, ty, &names);
        let v: Value =
            show_items(serde_json::from_str(&ok(d, &["show", "--json", "chain.pem"])).unwrap());
        assert_eq!(
            v.as_array().unwrap().len(),
            2,
            "leaf + intermediate, no root"
        );
        for name in &names {
            let ascii = tlskit_verify_ascii(name);
            let out = tool_ok(
                d,
                "openssl",
                &[
                    "verify",
                    "-CAfile",
                    "root/ca.pem",
                    "-untrusted",
                    "untrusted.pem",
                    "-verify_hostname",
                    &ascii,
                    "leaf.pem",
                ],
            );
            assert!(out.contains("leaf.pem: OK"), "{ty} {name}: {out}");
            let out = tool_ok(
                d,
                "certtool",
                &[
                    "--verify",
                    "--load-ca-certificate",
                    "root/ca.pem",
                    "--verify-hostname",
                    &ascii,
                    "--infile",
                    "chain.pem",
                ],
            );
            assert!(
                out.contains("Chain verification output: Verified"),
                "{ty} {name}: {out}"
            );
            // And rustls-webpki, through `tlskit verify`.
            ok(
                d,
                &[
                    "verify",
                    "--roots",
                    "root/ca.pem",
                    "--cert",
                    "chain.pem",
                    "--host",
                    name,
                ],
            );
        }
        // A name that is not in the certificate is refused by both.
        let o = tool(
            d,
            "openssl",
            &[
                "verify",
                "-CAfile",
                "root/ca.pem",
                "-untrusted",
                "untrusted.pem",
                "-verify_hostname",
                "other.example",
                "leaf.pem",
            ],
        );
        assert!(!o.status.success());
        let o = tool(
            d,
            "certtool",
            &[
                "--verify",
                "--load-ca-certificate",
                "root/ca.pem",
                "--verify-hostname",
                "other.example",
                "--infile",
                "chain.pem",
            ],
        );
        assert!(!o.status.success() || !String::from_utf8_lossy(&o.stdout).contains("Verified."));
    }
}

#[test]
fn constrained_ca_with_idn_names_verifies_everywhere() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca", "--permit-dns", "räksmörgås.se"]);
    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=www.räksmörgås.se",
            "--san",
            "dns:www.räksmörgås.se",
            "-o",
            "r.csr",
        ],
    );
    ok(d, &["ca", "issue", "ca", "--csr", "r.csr", "-o", "c.pem"]);
    let host = "www.xn--rksmrgs-5wao1o.se";
    let out = tool_ok(
        d,
        "openssl",
        &[
            "verify",
            "-CAfile",
            "ca/ca.pem",
            "-verify_hostname",
            host,
            "c.pem",
        ],
    );
    assert!(out.contains("c.pem: OK"), "{out}");
    let out = tool_ok(
        d,
        "certtool",
        &[
            "--verify",
            "--load-ca-certificate",
            "ca/ca.pem",
            "--verify-hostname",
            host,
            "--infile",
            "c.pem",
        ],
    );
    assert!(out.contains("Chain verification output: Verified"), "{out}");
    ok(
        d,
        &[
            "verify",
            "--roots",
            "ca/ca.pem",
            "--cert",
            "c.pem",
            "--host",
            "www.räksmörgås.se",
        ],
    );
    let mut full = fs::read_to_string(d.join("c.pem")).unwrap();
    full.push_str(&fs::read_to_string(d.join("ca/ca.pem")).unwrap());
    fs::write(d.join("full.pem"), full).unwrap();
    ok(d, &["lint", "full.pem"]);
}

/// The A-label form of the names these tests use.
fn tlskit_verify_ascii(name: &str) -> String {
    name.replace("räksmörgås", "xn--rksmrgs-5wao1o")
}

#[test]
fn ca_issue_keeps_the_sans_of_an_openssl_request() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca"]);
    tool_ok(
        d,
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "o.key",
            "-out",
            "o.csr",
            "-subj",
            "/CN=svc.example.org",
            "-addext",
            "subjectAltName=DNS:svc.example.org,DNS:alt.example.org,IP:192.0.2.9",
        ],
    );
    ok(d, &["ca", "issue", "ca", "--csr", "o.csr", "-o", "o.pem"]);
    let v: Value = show_items(serde_json::from_str(&ok(d, &["show", "--json", "o.pem"])).unwrap());
    let sans: Vec<&str> = v["sans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_str().unwrap())
        .collect();
    assert_eq!(
        sans,
        vec!["svc.example.org", "alt.example.org", "192.0.2.9"]
    );
    let out = tool_ok(
        d,
        "openssl",
        &[
            "verify",
            "-CAfile",
            "ca/ca.pem",
            "-verify_ip",
            "192.0.2.9",
            "o.pem",
        ],
    );
    assert!(out.contains("OK"), "{out}");
    // Keys OpenSSL wrote in its traditional formats are usable by tlskit.
    tool_ok(
        d,
        "openssl",
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "sec1.key",
        ],
    );
    tool_ok(
        d,
        "openssl",
        &["genrsa", "-traditional", "-out", "pkcs1.key", "2048"],
    );
    for k in ["sec1.key", "pkcs1.key"] {
        let r = format!("{k}.csr");
        ok(
            d,
            &[
                "csr",
                "new",
                "--key",
                k,
                "--subject",
                "CN=legacy.example",
                "-o",
                &r,
            ],
        );
        tool_ok(d, "openssl", &["req", "-in", &r, "-verify", "-noout"]);
    }
}

#[test]
fn pkcs12_interoperates_with_openssl_both_ways() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    pki(d, "p256", &["p12.example.com"]);
    fs::write(d.join("pw.txt"), "s3cret pass\n").unwrap();

    // tlskit -> openssl
    ok(
        d,
        &[
            "p12",
            "export",
            "--key",
            "server.key",
            "--cert",
            "chain.pem",
            "--password-file",
            "pw.txt",
            "-o",
            "ours.p12",
        ],
    );
    let info = tool_ok(
        d,
        "openssl",
        &[
            "pkcs12",
            "-in",
            "ours.p12",
            "-passin",
            "file:pw.txt",
            "-info",
            "-noout",
        ],
    );
    assert!(
        info.contains("AES-256-CBC") && info.contains("MAC: sha256"),
        "{info}"
    );
    let dump = tool_ok(
        d,
        "openssl",
        &[
            "pkcs12",
            "-in",
            "ours.p12",
            "-passin",
            "file:pw.txt",
            "-nodes",
        ],
    );
    assert!(
        dump.contains("BEGIN PRIVATE KEY") && dump.matches("BEGIN CERTIFICATE").count() == 2,
        "{dump}"
    );
    let o = tool(
        d,
        "openssl",
        &[
            "pkcs12",
            "-in",
            "ours.p12",
            "-passin",
            "pass:wrong",
            "-nodes",
        ],
    );
    assert!(!o.status.success());

    // openssl (3.x defaults) -> tlskit
    tool_ok(
        d,
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-inkey",
            "server.key",
            "-in",
            "leaf.pem",
            "-certfile",
            "untrusted.pem",
            "-passout",
            "file:pw.txt",
            "-out",
            "theirs.p12",
        ],
    );
    ok(
        d,
        &[
            "p12",
            "import",
            "theirs.p12",
            "--password-file",
            "pw.txt",
            "--key-out",
            "k.pem",
            "--cert-out",
            "c.pem",
        ],
    );
    let ours: Value =
        show_items(serde_json::from_str(&ok(d, &["show", "--json", "chain.pem"])).unwrap());
    let back: Value =
        show_items(serde_json::from_str(&ok(d, &["show", "--json", "c.pem"])).unwrap());
    assert_eq!(back[0]["sha256"], ours[0]["sha256"], "leaf first");
    assert_eq!(back.as_array().unwrap().len(), 2);
    let a: Value =
        show_items(serde_json::from_str(&ok(d, &["show", "--json", "server.key"])).unwrap());
    let b: Value = show_items(serde_json::from_str(&ok(d, &["show", "--json", "k.pem"])).unwrap());
    assert_eq!(a["public_key_sha256"], b["public_key_sha256"]);

    // Wrong password for an OpenSSL file: exit 2, clear message, nothing written.
    fs::write(d.join("bad.txt"), "nope\n").unwrap();
    let o = tlskit(
        d,
        &[
            "p12",
            "import",
            "theirs.p12",
            "--password-file",
            "bad.txt",
            "--key-out",
            "k3.pem",
            "--cert-out",
            "c3.pem",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("wrong password"));
    assert!(!d.join("k3.pem").exists() && !d.join("c3.pem").exists());
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn issued_certificate_serves_a_tls_handshake_to_openssl_s_client() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    pki(d, "p256", &["tls.example.com", "räksmörgås.com"]);
    let port = free_port();
    let accept = format!("127.0.0.1:{port}");
    let mut server = Server(
        Command::new("openssl")
            .args([
                "s_server",
                "-accept",
                &accept,
                "-cert",
                "leaf.pem",
                "-key",
                "server.key",
                "-cert_chain",
                "untrusted.pem",
                "-quiet",
            ])
            .current_dir(d)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait until it listens (no timing assertion: just a bounded wait for readiness).
    let start = Instant::now();
    while TcpStream::connect(&accept).is_err() {
        if let Ok(Some(status)) = server.0.try_wait() {
            let mut err = String::new();
            server
                .0
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("s_server exited: {status}: {err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "s_server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for name in ["tls.example.com", "xn--rksmrgs-5wao1o.com"] {
        let o = tool(
            d,
            "openssl",
            &[
                "s_client",
                "-connect",
                &accept,
                "-servername",
                name,
                "-verify_hostname",
                name,
                "-verify_return_error",
                "-CAfile",
                "root/ca.pem",
                "-brief",
            ],
        );
        let all = text(&o);
        assert!(o.status.success(), "{name}: {all}");
        assert!(all.contains("Verification: OK"), "{name}: {all}");
        assert!(
            all.contains(&format!("Verified peername: {name}")),
            "{name}: {all}"
        );
    }
    // GnuTLS as the client too.
    let port_s = port.to_string();
    let o = tool(
        d,
        "gnutls-cli",
        &[
            "--x509cafile",
            "root/ca.pem",
            "--sni-hostname",
            "tls.example.com",
            "--verify-hostname",
            "tls.example.com",
            "-p",
            &port_s,
            "127.0.0.1",
        ],
    );
    let all = text(&o);
    assert!(o.status.success(), "gnutls-cli: {all}");
    assert!(all.contains("Handshake was completed"), "gnutls-cli: {all}");
    let o = tool(
        d,
        "gnutls-cli",
        &[
            "--x509cafile",
            "root/ca.pem",
            "--verify-hostname",
            "wrong.example.com",
            "-p",
            &port_s,
            "127.0.0.1",
        ],
    );
    assert!(
        !o.status.success(),
        "gnutls-cli accepted a wrong name: {}",
        text(&o)
    );
}

#[test]
fn lint_flags_what_openssl_lets_you_make() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    tool_ok(
        d,
        "openssl",
        &[
            "req",
            "-x509",
            "-sha1",
            "-newkey",
            "rsa:1024",
            "-nodes",
            "-keyout",
            "old.key",
            "-out",
            "old.pem",
            "-subj",
            "/CN=old.example",
            "-days",
            "3650",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ],
    );
    let o = tlskit(d, &["lint", "--json", "old.pem"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    for c in [
        "weak-key",
        "sha1-signature",
        "missing-san",
        "validity-too-long",
    ] {
        assert!(codes.contains(&c), "{c} missing from {codes:?}");
    }
    let show: Value =
        show_items(serde_json::from_str(&ok(d, &["show", "--json", "old.key"])).unwrap());
    assert_eq!(show["key"]["bits"], 1024);
    // Not yet valid.
    let o = Command::new("faketime")
        .args([
            "-f",
            "-2d",
            env!("CARGO_BIN_EXE_tlskit"),
            "lint",
            "--json",
            "old.pem",
        ])
        .current_dir(d)
        .output();
    if let Ok(o) = o {
        if o.status.code() == Some(1) {
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            let codes: Vec<&str> = v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["code"].as_str().unwrap())
                .collect();
            assert!(codes.contains(&"not-yet-valid"), "{codes:?}");
        }
    }
}

/// A leaf request `NAME.csr` with one DNS SAN.
fn leaf_request(dir: &Path, name: &str) {
    let key = format!("{name}.key");
    ok(dir, &["key", "new", "-o", &key]);
    let subject = format!("CN={name}");
    let san = format!("dns:{name}");
    let csr = format!("{name}.csr");
    ok(
        dir,
        &[
            "csr",
            "new",
            "--key",
            &key,
            "--subject",
            &subject,
            "--san",
            &san,
            "-o",
            &csr,
        ],
    );
}

/// Issue 25: the CRL `ca crl` writes (root and intermediate, ECDSA and RSA CA keys) is
/// one OpenSSL verifies (`crl -verify`) and uses (`verify -crl_check[_all]`: the revoked
/// certificate is refused as "certificate revoked", the other accepted); tlskit's own
/// `verify --crl` agrees; the distribution point of `--crl-url` is in the certificates.
#[test]
fn openssl_checks_revocation_with_the_crl_of_ca_crl() {
    for key_type in ["p256", "rsa2048"] {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let url = "http://pki.example/root.crl";
        let sub_url = "https://pki.example/sub.crl";
        ok(
            d,
            &[
                "ca",
                "init",
                "root",
                "--type",
                key_type,
                "--subject",
                "CN=CRL Root,O=tlskit tests",
                "--crl-url",
                url,
            ],
        );
        ok(
            d,
            &[
                "ca",
                "init",
                "sub",
                "--parent",
                "root",
                "--type",
                key_type,
                "--subject",
                "CN=CRL Issuing CA,O=tlskit tests",
                "--days",
                "1000",
                "--crl-url",
                sub_url,
            ],
        );
        for name in ["revoked.example", "good.example", "subrevoked.example"] {
            leaf_request(d, name);
        }
        ok(
            d,
            &[
                "ca",
                "issue",
                "root",
                "--csr",
                "revoked.example.csr",
                "-o",
                "revoked.pem",
            ],
        );
        ok(
            d,
            &[
                "ca",
                "issue",
                "root",
                "--csr",
                "good.example.csr",
                "-o",
                "good.pem",
            ],
        );
        ok(
            d,
            &[
                "ca",
                "issue",
                "sub",
                "--csr",
                "subrevoked.example.csr",
                "-o",
                "subrevoked.pem",
            ],
        );
        // The intermediate carries the root's distribution point, the leaves theirs.
        for (cert, want) in [
            ("revoked.pem", url),
            ("good.pem", url),
            ("sub/ca.pem", url),
            ("subrevoked.pem", sub_url),
        ] {
            let out = tool_ok(d, "openssl", &["x509", "-in", cert, "-noout", "-text"]);
            assert!(
                out.contains("X509v3 CRL Distribution Points"),
                "{cert}: {out}"
            );
            assert!(out.contains(&format!("URI:{want}")), "{cert}: {out}");
        }

        ok(
            d,
            &[
                "ca",
                "revoke",
                "root",
                "--cert",
                "revoked.pem",
                "--reason",
                "keyCompromise",
            ],
        );
        ok(
            d,
            &[
                "ca",
                "revoke",
                "sub",
                "--cert",
                "subrevoked.pem",
                "--reason",
                "superseded",
            ],
        );
        ok(d, &["ca", "crl", "root", "-o", "root.crl"]);
        ok(
            d,
            &["ca", "crl", "sub", "-o", "sub.crl", "--next-update", "1"],
        );
        ok(d, &["ca", "crl", "sub", "-o", "sub.der", "--der"]);

        // openssl crl: signature, number, AKI, reason.
        let out = tool_ok(
            d,
            "openssl",
            &[
                "crl",
                "-in",
                "root.crl",
                "-noout",
                "-verify",
                "-CAfile",
                "root/ca.pem",
                "-text",
            ],
        );
        assert!(out.contains("verify OK"), "{key_type}: {out}");
        assert!(out.contains("X509v3 CRL Number"), "{out}");
        assert!(out.contains("X509v3 Authority Key Identifier"), "{out}");
        assert!(out.contains("Key Compromise"), "{out}");
        assert!(out.contains("Version 2"), "{out}");
        let out = tool_ok(
            d,
            "openssl",
            &[
                "crl",
                "-in",
                "sub.der",
                "-inform",
                "DER",
                "-noout",
                "-verify",
                "-CAfile",
                "sub/ca.pem",
                "-crlnumber",
            ],
        );
        assert!(out.contains("verify OK"), "{out}");
        assert!(out.contains("crlNumber=0x02"), "{out}");
        // A CRL verified against the wrong CA is refused by OpenSSL too.
        let o = tool(
            d,
            "openssl",
            &[
                "crl",
                "-in",
                "sub.crl",
                "-noout",
                "-verify",
                "-CAfile",
                "root/ca.pem",
            ],
        );
        assert!(
            !o.status.success() && !text(&o).contains("verify OK"),
            "{}",
            text(&o)
        );

        // openssl verify -crl_check: revoked refused, good accepted.
        let o = tool(
            d,
            "openssl",
            &[
                "verify",
                "-crl_check",
                "-CRLfile",
                "root.crl",
                "-CAfile",
                "root/ca.pem",
                "revoked.pem",
            ],
        );
        let out = text(&o);
        assert!(
            !o.status.success() && out.contains("certificate revoked"),
            "{key_type}: {out}"
        );
        tool_ok(
            d,
            "openssl",
            &[
                "verify",
                "-crl_check",
                "-CRLfile",
                "root.crl",
                "-CAfile",
                "root/ca.pem",
                "good.pem",
            ],
        );
        // Through the intermediate, every level checked.
        let o = tool(
            d,
            "openssl",
            &[
                "verify",
                "-crl_check_all",
                "-CRLfile",
                "root.crl",
                "-CRLfile",
                "sub.crl",
                "-CAfile",
                "root/ca.pem",
                "-untrusted",
                "sub/ca.pem",
                "subrevoked.pem",
            ],
        );
        let out = text(&o);
        assert!(
            !o.status.success() && out.contains("certificate revoked"),
            "{key_type}: {out}"
        );

        // tlskit verify --crl agrees.
        let verify = |cert: &str, host: &str, crls: &[&str]| {
            let mut args = vec![
                "verify",
                "--roots",
                "root/ca.pem",
                "--cert",
                cert,
                "--host",
                host,
                "--json",
            ];
            for c in crls {
                args.extend(["--crl", c]);
            }
            tlskit(d, &args)
        };
        let o = verify("revoked.pem", "revoked.example", &["root.crl"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["revocation"]["reason"], "keyCompromise");
        let o = verify("good.pem", "good.example", &["root.crl"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = verify(
            "subrevoked.pem",
            "subrevoked.example",
            &["root.crl", "sub.crl"],
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["revocation"]["reason"], "superseded");
        assert_eq!(v["revocation"]["crl"], "sub.crl");
    }
}
