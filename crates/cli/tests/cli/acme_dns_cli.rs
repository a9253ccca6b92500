//! Issue 26, fast tier: the DNS-01 flags of `acme issue|renew` refused before any CA is
//! contacted (the directory URL points nowhere), with sentences and exit 2, and a TSIG
//! secret never printed.

use crate::run::tlskit_streams;

/// `tlskit acme issue` against a directory nobody listens on.
fn issue(dir: &std::path::Path, extra: &[&str]) -> (i32, String, String) {
    let st = dir.join("acme").display().to_string();
    let out = dir.join("c.pem").display().to_string();
    let key = dir.join("k.pem").display().to_string();
    let mut args = vec![
        "acme",
        "issue",
        "--directory",
        "https://127.0.0.1:9/dir",
        "--acme-storage",
        &st,
        "-o",
        &out,
        "--key",
        &key,
    ];
    args.extend_from_slice(extra);
    tlskit_streams(&args)
}

#[test]
fn dns01_flags_are_checked_before_the_ca_is_asked() {
    let t = tempfile::tempdir().expect("tempdir");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--domain", "*.example.test", "--http-listen", "127.0.0.1:0"],
            "*.example.test: a wildcard name needs --acme-challenge dns-01",
        ),
        (
            &["--domain", "*.example.test", "--acme-challenge", "dns-01"],
            "dns-01 needs --acme-dns-update ADDR",
        ),
        (
            &[
                "--domain",
                "a.test",
                "--acme-challenge",
                "dns-01",
                "--tls-listen",
                "127.0.0.1:0",
            ],
            "--acme-challenge dns-01 answers in DNS",
        ),
        (
            &["--domain", "a.test", "--acme-dns-update", "ns.example.test"],
            "ns.example.test: not a DNS server address",
        ),
        (
            &[
                "--domain",
                "a.test",
                "--acme-dns-update",
                "127.0.0.1",
                "--acme-dns-exec",
                "/bin/true",
            ],
            "--acme-dns-update and --acme-dns-exec exclude each other",
        ),
        (
            &[
                "--domain",
                "a.test",
                "--acme-challenge",
                "http-01",
                "--acme-dns-update",
                "127.0.0.1",
                "--http-listen",
                "127.0.0.1:0",
            ],
            "need --acme-challenge dns-01",
        ),
    ];
    for (extra, want) in cases {
        let (code, out, err) = issue(t.path(), extra);
        assert_eq!(code, 2, "{extra:?}: {out}{err}");
        assert!(err.contains(want), "{extra:?}: {err}");
        assert!(!err.contains("Error {") && !err.contains("Some("), "{err}");
    }
}

#[test]
fn a_bad_tsig_key_file_is_named_and_its_secret_never_shown() {
    let t = tempfile::tempdir().expect("tempdir");
    let key = t.path().join("acme.key");
    let secret = "c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1hcHBlYXI=";
    // An unsupported algorithm, the secret on the next line.
    std::fs::write(
        &key,
        format!("key \"acme\" {{\n algorithm hmac-md5;\n secret \"{secret}\";\n}};\n"),
    )
    .expect("write");
    let k = key.display().to_string();
    let base = [
        "--domain",
        "*.example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        "127.0.0.1:53",
        "--acme-dns-tsig-key",
    ];
    let mut args = base.to_vec();
    args.push(&k);
    let (code, _, err) = issue(t.path(), &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&k), "{err}");
    assert!(err.contains("unsupported algorithm `hmac-md5`"), "{err}");
    assert!(!err.contains(secret), "{err}");
    // Not base64: said without quoting it.
    std::fs::write(
        &key,
        "key \"acme\" { algorithm hmac-sha256; secret \"not*base64*secret\"; };\n",
    )
    .expect("write");
    let (code, _, err) = issue(t.path(), &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the secret is not valid base64"), "{err}");
    assert!(!err.contains("not*base64*secret"), "{err}");
    // A directory instead of a file.
    let mut args = base.to_vec();
    let d = t.path().display().to_string();
    args.push(&d);
    let (code, _, err) = issue(t.path(), &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a regular file (directory)"), "{err}");
}
