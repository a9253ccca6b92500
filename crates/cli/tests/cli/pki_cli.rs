//! End-to-end tests of `tlskit key|csr|cert|ca|show|lint|p12` with the real binary:
//! behaviour, exit codes, and what is (not) left on disk after bad input.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::show;
use show::show_items;

use crate::hostile;
use crate::run::{ok, text, tlskit_in as tlskit};

/// Runs a command that must fail with exit 2; returns stderr.
#[track_caller]
fn fails(dir: &Path, args: &[&str]) -> String {
    let o = tlskit(dir, args);
    assert_eq!(o.status.code(), Some(2), "{args:?}\n{}", text(&o));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(!err.trim().is_empty(), "no error message for {args:?}");
    err
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let v: Value = serde_json::from_str(&ok(dir, args)).unwrap();
    match args {
        ["show", ..] => show_items(v),
        ["ca", "list", ..] => v["issued"].clone(),
        _ => v,
    }
}

/// Files in `dir`, sorted (to prove nothing partial was left behind).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A CA in `dir/ca` and a server certificate for `names` in `dir/leaf.pem`.
fn ca_and_leaf(dir: &Path, names: &[&str]) -> PathBuf {
    ok(
        dir,
        &[
            "ca",
            "init",
            "ca",
            "--subject",
            "CN=Test Root,O=tlskit tests",
        ],
    );
    ok(dir, &["key", "new", "-o", "leaf.key"]);
    let mut args = vec!["csr", "new", "--key", "leaf.key", "--subject"];
    let subject = format!("CN={}", names[0]);
    args.push(&subject);
    let sans: Vec<String> = names.iter().map(|n| format!("dns:{n}")).collect();
    for s in &sans {
        args.push("--san");
        args.push(s);
    }
    args.extend(["-o", "leaf.csr"]);
    ok(dir, &args);
    ok(
        dir,
        &["ca", "issue", "ca", "--csr", "leaf.csr", "-o", "leaf.pem"],
    );
    dir.join("leaf.pem")
}

#[test]
fn key_new_is_pkcs8_0600_never_printed_and_never_overwritten() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let out = ok(d, &["key", "new", "-o", "k.pem"]);
    let pem = fs::read_to_string(d.join("k.pem")).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{pem}");
    assert_eq!(mode(&d.join("k.pem")), 0o600);
    let body = pem.lines().nth(1).unwrap();
    assert!(!out.contains(body), "key material printed");

    let err = fails(d, &["key", "new", "-o", "k.pem"]);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(fs::read_to_string(d.join("k.pem")).unwrap(), pem);

    ok(
        d,
        &["key", "new", "--type", "ed25519", "-o", "k.pem", "--force"],
    );
    assert_ne!(fs::read_to_string(d.join("k.pem")).unwrap(), pem);
    assert_eq!(fs::read_to_string(d.join("k.pem.bak")).unwrap(), pem);
    assert_eq!(mode(&d.join("k.pem")), 0o600);
    assert_eq!(listing(d), vec!["k.pem", "k.pem.bak"]);
}

#[test]
fn key_types_and_show_of_private_key_shows_only_public_part() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for (ty, kind, bits) in [
        ("p256", "ec", 256),
        ("p384", "ec", 384),
        ("ed25519", "ed25519", 256),
        ("rsa2048", "rsa", 2048),
        ("rsa3072", "rsa", 3072),
    ] {
        let f = format!("{ty}.pem");
        ok(d, &["key", "new", "--type", ty, "-o", &f]);
        let pem = fs::read_to_string(d.join(&f)).unwrap();
        let o = tlskit(d, &["show", "--json", &f]);
        let stdout = String::from_utf8(o.stdout).unwrap();
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(
                !stdout.contains(line),
                "{ty}: private key material in show output"
            );
        }
        let v = show_items(serde_json::from_str(&stdout).unwrap());
        assert_eq!(v["kind"], "private key", "{ty}");
        assert_eq!(v["key"]["type"], kind, "{ty}");
        assert_eq!(v["key"]["bits"], bits, "{ty}");
        assert_eq!(v["public_key_sha256"].as_str().unwrap().len(), 64);
        let human = ok(d, &["show", &f]);
        assert!(human.contains("Public key SHA-256"), "{human}");
    }
    fails(d, &["key", "new", "--type", "dsa1024", "-o", "x.pem"]);
    assert!(!d.join("x.pem").exists());
}

#[test]
fn csr_converts_idn_to_a_labels_and_show_prints_both_forms() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=räksmörgås.com,O=Räksmörgås AB,C=SE",
            "--san",
            "dns:räksmörgås。com",
            "--san",
            "ip:192.0.2.7",
            "--san",
            "email:info@räksmörgås.com",
            "-o",
            "r.csr",
        ],
    );
    let v = json(d, &["show", "--json", "r.csr"]);
    assert_eq!(v["kind"], "request");
    assert_eq!(v["signature_valid"], true);
    // The CN names the DNS SAN, so it is written as the SAN's A-labels (never raw U-labels);
    // other attributes keep what was typed.
    assert_eq!(
        v["subject"],
        "CN=xn--rksmrgs-5wao1o.com,O=Räksmörgås AB,C=SE"
    );
    let sans = v["sans"].as_array().unwrap();
    assert_eq!(sans[0]["type"], "dns");
    assert_eq!(sans[0]["value"], "xn--rksmrgs-5wao1o.com");
    assert_eq!(sans[0]["unicode"], "räksmörgås.com");
    assert_eq!(sans[1]["value"], "192.0.2.7");
    assert_eq!(sans[2]["value"], "info@xn--rksmrgs-5wao1o.com");
    let human = ok(d, &["show", "r.csr"]);
    assert!(
        human.contains("xn--rksmrgs-5wao1o.com (räksmörgås.com)"),
        "{human}"
    );
}

#[test]
fn one_dot_leader_is_refused_and_nothing_written() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "-o", "k.pem"]);
    for san in ["dns:example\u{2024}com", "example\u{2024}com"] {
        let err = fails(
            d,
            &[
                "csr",
                "new",
                "--key",
                "k.pem",
                "--subject",
                "CN=x",
                "--san",
                san,
                "-o",
                "r.csr",
            ],
        );
        assert!(
            err.contains("U+2024") && err.contains("ONE DOT LEADER"),
            "{err}"
        );
    }
    let err = fails(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=example\u{2024}com",
            "--san",
            "dns:example\u{2024}com",
            "-o",
            "c.pem",
        ],
    );
    assert!(err.contains("U+2024"), "{err}");
    assert_eq!(listing(d), vec!["k.pem"]);
}

#[test]
fn malformed_dn_is_exit_2_naming_the_problem() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "-o", "k.pem"]);
    for (dn, needle) in [
        ("CN=a,,O=b", "empty component"),
        ("CN", "no '='"),
        ("XY=z", "unknown attribute type"),
        ("C=Sweden", "two-letter"),
        ("CN=a\\", "backslash"),
        ("CN=", "empty value"),
    ] {
        let err = fails(
            d,
            &[
                "csr",
                "new",
                "--key",
                "k.pem",
                "--subject",
                dn,
                "-o",
                "r.csr",
            ],
        );
        assert!(
            err.contains("invalid subject DN") && err.contains(needle),
            "{dn}: {err}"
        );
    }
    // An escaped comma is part of the value.
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            r"CN=a.example,O=Example\, Inc.",
            "-o",
            "r.csr",
        ],
    );
    let v = json(d, &["show", "--json", "r.csr"]);
    assert_eq!(v["subject"], r"CN=a.example,O=Example\, Inc.");
    assert_eq!(listing(d), vec!["k.pem", "r.csr"]);
}

#[test]
fn unreadable_or_wrong_inputs_are_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let err = fails(
        d,
        &[
            "csr",
            "new",
            "--key",
            "missing.pem",
            "--subject",
            "CN=a.example",
            "-o",
            "r.csr",
        ],
    );
    assert!(err.contains("missing.pem"), "{err}");
    fs::write(d.join("junk.pem"), "hello\n").unwrap();
    let err = fails(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "junk.pem",
            "--subject",
            "CN=a.example",
            "-o",
            "c.pem",
        ],
    );
    assert!(err.contains("junk.pem"), "{err}");
    let err = fails(d, &["show", "junk.pem"]);
    assert!(err.contains("junk.pem"), "{err}");
    fails(d, &["show", "nope.pem"]);
    fs::create_dir(d.join("adir")).unwrap();
    let err = fails(
        d,
        &[
            "csr",
            "new",
            "--key",
            "adir",
            "--subject",
            "CN=a.example",
            "-o",
            "r.csr",
        ],
    );
    assert!(err.contains("adir"), "{err}");
    fs::remove_dir(d.join("adir")).unwrap();
    fails(d, &["lint", "nope.pem"]);
    fails(
        d,
        &["ca", "issue", "nodir", "--csr", "junk.pem", "-o", "x.pem"],
    );
    assert_eq!(listing(d), vec!["junk.pem"]);
}

#[test]
fn self_signed_leaf_and_ca() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=localhost",
            "--san",
            "dns:localhost",
            "--san",
            "ip:127.0.0.1",
            "--days",
            "30",
            "-o",
            "leaf.pem",
        ],
    );
    let v = json(d, &["show", "--json", "leaf.pem"]);
    assert_eq!(v["is_ca"], false);
    assert_eq!(v["subject"], v["issuer"]);
    assert_eq!(v["sans"].as_array().unwrap().len(), 2);
    assert_eq!(v["extended_key_usage"][0], "serverAuth");
    for f in [
        "subject",
        "issuer",
        "not_before",
        "not_after",
        "sans",
        "key",
        "sha256",
        "serial",
        "extensions",
    ] {
        assert!(!v[f].is_null(), "missing {f}");
    }
    let nb = time::OffsetDateTime::parse(
        v["not_before"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let na = time::OffsetDateTime::parse(
        v["not_after"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!((na - nb).whole_seconds(), 30 * 86400 - 1);

    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=My Root",
            "--ca",
            "-o",
            "root.pem",
        ],
    );
    let v = json(d, &["show", "--json", "root.pem"]);
    assert_eq!(v["is_ca"], true);
    assert!(v["key_usage"]
        .as_array()
        .unwrap()
        .contains(&Value::from("keyCertSign")));
    let err = fails(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=x.example",
            "-o",
            "root.pem",
        ],
    );
    assert!(err.contains("already exists"));
    for days in ["0", "4000000000"] {
        let err = fails(
            d,
            &[
                "cert",
                "self-sign",
                "--key",
                "k.pem",
                "--subject",
                "CN=x.example",
                "--days",
                days,
                "-o",
                "d.pem",
            ],
        );
        assert!(err.contains("day"), "{err}");
    }
    assert!(!d.join("d.pem").exists());
}

#[test]
fn ca_issue_keeps_sans_writes_index_and_chain_without_root() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(
        d,
        &["ca", "init", "ca", "--type", "p384", "--path-len", "1"],
    );
    assert_eq!(mode(&d.join("ca/ca.key")), 0o600);
    assert_eq!(
        listing(&d.join("ca")),
        vec!["ca.key", "ca.pem", "index.jsonl", "serial"]
    );
    let err = fails(d, &["ca", "init", "ca"]);
    assert!(err.contains("not empty"), "{err}");

    ok(d, &["key", "new", "--type", "rsa2048", "-o", "k.pem"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=www.example.com",
            "--san",
            "dns:www.example.com",
            "--san",
            "dns:example.com",
            "--san",
            "ip:10.0.0.1",
            "-o",
            "r.csr",
        ],
    );
    ok(
        d,
        &["ca", "issue", "ca", "--csr", "r.csr", "-o", "leaf.pem"],
    );
    // Root-issued: the output is only the leaf (the root is not included).
    let v = json(d, &["show", "--json", "leaf.pem"]);
    assert!(v.is_object());
    let sans: Vec<&str> = v["sans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_str().unwrap())
        .collect();
    assert_eq!(sans, vec!["www.example.com", "example.com", "10.0.0.1"]);
    assert_eq!(v["extended_key_usage"], serde_json::json!(["serverAuth"]));
    assert!(v["key_usage"]
        .as_array()
        .unwrap()
        .contains(&Value::from("keyEncipherment")));
    assert!(!v["authority_key_id"].is_null());

    let idx = fs::read_to_string(d.join("ca/index.jsonl")).unwrap();
    let lines: Vec<Value> = idx
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["serial"], v["serial"]);
    assert_eq!(lines[0]["sha256"], v["sha256"]);
    assert_eq!(lines[0]["sans"][0], "dns:www.example.com");
    assert_eq!(
        fs::read_to_string(d.join("ca/serial")).unwrap().trim(),
        v["serial"].as_str().unwrap()
    );
    assert_eq!(
        listing(&d.join("ca")),
        vec!["ca.key", "ca.pem", "index.jsonl", "lock", "serial"]
    );

    // Client profile and the existing-output rule (no index entry for a refused issue).
    let err = fails(
        d,
        &["ca", "issue", "ca", "--csr", "r.csr", "-o", "leaf.pem"],
    );
    assert!(err.contains("already exists"));
    assert_eq!(fs::read_to_string(d.join("ca/index.jsonl")).unwrap(), idx);
    let err = fails(
        d,
        &[
            "ca",
            "issue",
            "ca",
            "--csr",
            "r.csr",
            "-o",
            "no/such/dir/x.pem",
        ],
    );
    assert!(err.contains("no/such/dir"), "{err}");
    assert_eq!(fs::read_to_string(d.join("ca/index.jsonl")).unwrap(), idx);
    ok(
        d,
        &[
            "ca",
            "issue",
            "ca",
            "--csr",
            "r.csr",
            "--profile",
            "client",
            "--days",
            "7",
            "-o",
            "client.pem",
        ],
    );
    let v = json(d, &["show", "--json", "client.pem"]);
    assert_eq!(v["extended_key_usage"], serde_json::json!(["clientAuth"]));
    let list = json(d, &["ca", "list", "ca", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 2);

    // An intermediate CA and a leaf from it: leaf + intermediate, root left out.
    ok(
        d,
        &[
            "ca",
            "init",
            "sub",
            "--parent",
            "ca",
            "--subject",
            "CN=Issuing CA",
            "--days",
            "1000",
        ],
    );
    ok(
        d,
        &["ca", "issue", "sub", "--csr", "r.csr", "-o", "chain.pem"],
    );
    let v = json(d, &["show", "--json", "chain.pem"]);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 2);
    assert_eq!(arr[0]["issuer"], "CN=Issuing CA");
    assert_eq!(arr[1]["subject"], "CN=Issuing CA");
    assert_eq!(arr[1]["is_ca"], true);
    assert_eq!(arr[1]["path_len"], 0);
    // An intermediate with pathlen 0 cannot issue another intermediate.
    let err = fails(
        d,
        &[
            "ca",
            "issue",
            "sub",
            "--csr",
            "r.csr",
            "--profile",
            "intermediate",
            "-o",
            "sub2.pem",
        ],
    );
    assert!(err.contains("pathlen 0"), "{err}");
    assert!(!d.join("sub2.pem").exists());
}

#[test]
fn ca_refuses_names_outside_its_constraints() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(
        d,
        &[
            "ca",
            "init",
            "ca",
            "--permit-dns",
            "example.com",
            "--permit-dns",
            "räksmörgås.se",
        ],
    );
    let v = json(d, &["show", "--json", "ca/ca.pem"]);
    assert_eq!(
        v["name_constraints"]["permitted"],
        serde_json::json!(["dns:example.com", "dns:xn--rksmrgs-5wao1o.se"])
    );
    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example.com",
            "--san",
            "dns:a.example.com",
            "--san",
            "dns:www.räksmörgås.se",
            "-o",
            "good.csr",
        ],
    );
    ok(
        d,
        &["ca", "issue", "ca", "--csr", "good.csr", "-o", "good.pem"],
    );
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example.com",
            "--san",
            "dns:a.example.com",
            "--san",
            "dns:evil.example.org",
            "-o",
            "bad.csr",
        ],
    );
    let err = fails(
        d,
        &["ca", "issue", "ca", "--csr", "bad.csr", "-o", "bad.pem"],
    );
    assert!(
        err.contains("evil.example.org") && err.contains("outside the name constraints"),
        "{err}"
    );
    assert!(!d.join("bad.pem").exists());
    assert_eq!(
        fs::read_to_string(d.join("ca/index.jsonl"))
            .unwrap()
            .lines()
            .count(),
        1
    );
    // A look-alike suffix is not inside example.com.
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=notexample.com",
            "-o",
            "bad2.csr",
        ],
    );
    fails(
        d,
        &["ca", "issue", "ca", "--csr", "bad2.csr", "-o", "bad2.pem"],
    );
}

#[test]
fn ca_rejects_a_request_whose_signature_does_not_verify() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca"]);
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["a.example".to_string()]).unwrap();
    let mut der = params.serialize_request(&key).unwrap().der().to_vec();
    let n = der.len();
    der[n - 5] ^= 0x55; // inside the signature
    fs::write(d.join("bad.der"), &der).unwrap();
    let err = fails(d, &["ca", "issue", "ca", "--csr", "bad.der", "-o", "x.pem"]);
    assert!(err.contains("signature"), "{err}");
    assert!(!d.join("x.pem").exists());
    // The intact request (DER) is accepted.
    let good = params.serialize_request(&key).unwrap().der().to_vec();
    fs::write(d.join("good.der"), &good).unwrap();
    ok(
        d,
        &["ca", "issue", "ca", "--csr", "good.der", "-o", "x.pem"],
    );
}

#[test]
fn concurrent_issues_never_share_a_serial() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca"]);
    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "-o",
            "r.csr",
        ],
    );
    // Really concurrent: spawn all, then wait for all.
    let children: Vec<_> = (0..24)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_tlskit"))
                .args([
                    "ca",
                    "issue",
                    "ca",
                    "--csr",
                    "r.csr",
                    "-o",
                    &format!("p{i}.pem"),
                ])
                .current_dir(d)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let idx = fs::read_to_string(d.join("ca/index.jsonl")).unwrap();
    let serials: std::collections::HashSet<String> = idx
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["serial"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(idx.lines().count(), 24);
    assert_eq!(serials.len(), 24, "a serial was reused");
    let mut from_certs = std::collections::HashSet::new();
    for i in 0..24 {
        let p = format!("p{i}.pem");
        from_certs.insert(
            json(d, &["show", "--json", &p])["serial"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(from_certs, serials);
}

#[test]
fn lint_exit_codes_and_findings() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let leaf = ca_and_leaf(d, &["www.example.com"]);
    let o = tlskit(d, &["lint", leaf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    ok(d, &["key", "new", "-o", "k.pem"]);
    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=My Laptop",
            "--days",
            "825",
            "-o",
            "long.pem",
        ],
    );
    // Exactly the limit is fine, one day more is not.
    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "--days",
            "398",
            "-o",
            "398.pem",
        ],
    );
    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "--days",
            "399",
            "-o",
            "399.pem",
        ],
    );
    let o = tlskit(d, &["lint", "398.pem"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = tlskit(d, &["lint", "399.pem"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = tlskit(d, &["lint", "--json", "long.pem"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(
        codes.contains(&"validity-too-long") && codes.contains(&"missing-san"),
        "{codes:?}"
    );
    assert!(v["findings"][0]["severity"].is_string());

    ok(
        d,
        &[
            "cert",
            "self-sign",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "--san",
            "dns:b.example",
            "-o",
            "cn.pem",
        ],
    );
    let o = tlskit(d, &["lint", "cn.pem"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("cn-not-in-sans"));

    // Requests are linted too.
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=My Laptop",
            "-o",
            "r.csr",
        ],
    );
    let o = tlskit(d, &["lint", "r.csr"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("missing-san"));
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "-o",
            "r2.csr",
        ],
    );
    ok(d, &["lint", "r2.csr"]);
}

/// Certificates rcgen makes for the lint cases tlskit itself refuses to create.
#[test]
fn lint_finds_constraint_violations_bad_a_labels_and_ca_problems() {
    use rcgen::{
        BasicConstraints, CertificateParams, GeneralSubtree, IsCa, Issuer, KeyPair,
        KeyUsagePurpose, NameConstraints,
    };
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Constrained CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    ca.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("example.com".into())],
        excluded_subtrees: vec![],
    });
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec![
        "www.example.org".to_string(),
        "xn--zz.example.com".to_string(),
    ])
    .unwrap();
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "www.example.org");
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    fs::write(
        d.join("chain.pem"),
        format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
    )
    .unwrap();
    let o = tlskit(d, &["lint", "--json", "chain.pem"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"name-constraints"), "{codes:?}");
    assert!(codes.contains(&"malformed-name"), "{codes:?}");

    // A CA without keyCertSign, and a leaf (first in the chain) with the CA flag.
    let mut bad_ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    bad_ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    bad_ca.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let bad_ca = bad_ca.self_signed(&ca_key).unwrap();
    fs::write(
        d.join("badca.pem"),
        format!("{}{}", bad_ca.pem(), ca_cert.pem()),
    )
    .unwrap();
    let o = tlskit(d, &["lint", "badca.pem"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("ca-without-keycertsign") && out.contains("leaf-is-ca"),
        "{out}"
    );
}

#[test]
fn show_handles_der_chains_public_keys_and_crls() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let key = rcgen::KeyPair::generate().unwrap();
    fs::write(d.join("pub.pem"), key.public_key_pem()).unwrap();
    let v = json(d, &["show", "--json", "pub.pem"]);
    assert_eq!(v["kind"], "public key");
    assert_eq!(v["key"]["curve"], "P-256");

    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_cert = ca.self_signed(&key).unwrap();
    fs::write(d.join("ca.der"), ca_cert.der()).unwrap();
    let v = json(d, &["show", "--json", "ca.der"]);
    assert_eq!(v["kind"], "certificate");
    assert_eq!(v["is_ca"], true);

    let now = time::OffsetDateTime::now_utc();
    let crl = rcgen::CertificateRevocationListParams {
        this_update: now,
        next_update: now + time::Duration::days(7),
        crl_number: rcgen::SerialNumber::from(42u64),
        issuing_distribution_point: None,
        revoked_certs: vec![rcgen::RevokedCertParams {
            serial_number: rcgen::SerialNumber::from_slice(&[0x12, 0x34]),
            revocation_time: now,
            reason_code: Some(rcgen::RevocationReason::KeyCompromise),
            invalidity_date: None,
        }],
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    };
    let crl = crl.signed_by(&rcgen::Issuer::new(ca, &key)).unwrap();
    fs::write(d.join("crl.pem"), crl.pem().unwrap()).unwrap();
    fs::write(d.join("crl.der"), crl.der()).unwrap();
    for f in ["crl.pem", "crl.der"] {
        let v = json(d, &["show", "--json", f]);
        assert_eq!(v["kind"], "crl", "{f}");
        assert_eq!(v["crl_number"], "42");
        assert_eq!(v["revoked"][0]["serial"], "1234");
    }
    let human = ok(d, &["show", "crl.pem", "pub.pem", "ca.der"]);
    assert!(
        human.contains("CRL #1")
            && human.contains("Public key #2")
            && human.contains("Certificate #3"),
        "{human}"
    );
}

#[test]
fn p12_round_trip_and_bad_inputs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let leaf = ca_and_leaf(d, &["p12.example.com"]);
    let leaf = leaf.to_str().unwrap();
    fs::write(d.join("pw.txt"), "correct horse\n").unwrap();
    fs::write(d.join("wrong.txt"), "battery staple\n").unwrap();

    // No password source: exit 2, nothing written.
    let err = fails(
        d,
        &[
            "p12", "export", "--key", "leaf.key", "--cert", leaf, "-o", "x.p12",
        ],
    );
    assert!(err.contains("TLSKIT_P12_PASSWORD"), "{err}");
    // Mismatched key: exit 2, nothing written.
    ok(d, &["key", "new", "-o", "other.key"]);
    let err = fails(
        d,
        &[
            "p12",
            "export",
            "--key",
            "other.key",
            "--cert",
            leaf,
            "--password-file",
            "pw.txt",
            "-o",
            "x.p12",
        ],
    );
    assert!(err.contains("does not match"), "{err}");
    assert!(!d.join("x.p12").exists());

    ok(
        d,
        &[
            "p12",
            "export",
            "--key",
            "leaf.key",
            "--cert",
            leaf,
            "--password-file",
            "pw.txt",
            "-o",
            "x.p12",
        ],
    );
    assert_eq!(mode(&d.join("x.p12")), 0o600);
    let err = fails(d, &["show", "x.p12"]);
    assert!(err.contains("PKCS#12"), "{err}");
    let err = fails(
        d,
        &[
            "p12",
            "export",
            "--key",
            "leaf.key",
            "--cert",
            leaf,
            "--password-file",
            "pw.txt",
            "-o",
            "x.p12",
        ],
    );
    assert!(err.contains("already exists"));

    let before = listing(d);
    let err = fails(
        d,
        &[
            "p12",
            "import",
            "x.p12",
            "--password-file",
            "wrong.txt",
            "--key-out",
            "k2.pem",
            "--cert-out",
            "c2.pem",
        ],
    );
    assert!(err.contains("wrong password"), "{err}");
    assert_eq!(listing(d), before, "partial output after a wrong password");
    // The file's key-derivation cost is capped (tlskit writes 10,000 iterations).
    let err = fails(
        d,
        &[
            "p12",
            "import",
            "x.p12",
            "--password-file",
            "pw.txt",
            "--max-iterations",
            "5000",
            "--key-out",
            "k2.pem",
            "--cert-out",
            "c2.pem",
        ],
    );
    assert!(err.contains("exceeds the limit 5000"), "{err}");
    assert!(err.contains("--max-iterations 10000"), "{err}");
    assert_eq!(listing(d), before, "partial output after a refused file");

    // Password from an environment variable (named, or the default one).
    let o = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .args([
            "p12",
            "import",
            "x.p12",
            "--password-env",
            "MY_PW",
            "--key-out",
            "k2.pem",
            "--cert-out",
            "c2.pem",
        ])
        .current_dir(d)
        .env("MY_PW", "correct horse")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(mode(&d.join("k2.pem")), 0o600);
    let a = json(d, &["show", "--json", "leaf.key"]);
    let b = json(d, &["show", "--json", "k2.pem"]);
    assert_eq!(a["public_key_sha256"], b["public_key_sha256"]);
    let c = json(d, &["show", "--json", "c2.pem"]);
    assert_eq!(c["sha256"], json(d, &["show", "--json", leaf])["sha256"]);

    // An existing output refuses the whole import (neither file is written).
    fs::remove_file(d.join("k2.pem")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .args([
            "p12",
            "import",
            "x.p12",
            "--key-out",
            "k2.pem",
            "--cert-out",
            "c2.pem",
        ])
        .current_dir(d)
        .env("TLSKIT_P12_PASSWORD", "correct horse")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!d.join("k2.pem").exists());
}

#[test]
fn help_has_examples() {
    let t = tempfile::tempdir().unwrap();
    for cmd in [
        vec!["key", "new"],
        vec!["csr", "new"],
        vec!["cert", "self-sign"],
        vec!["ca", "init"],
        vec!["ca", "issue"],
        vec!["ca", "revoke"],
        vec!["ca", "crl"],
        vec!["show"],
        vec!["lint"],
        vec!["p12", "export"],
        vec!["p12", "import"],
    ] {
        let mut args = cmd.clone();
        args.push("--help");
        let out = ok(t.path(), &args);
        assert!(out.contains("Examples:"), "{cmd:?}");
    }
    // Usage errors are exit 2.
    fails(t.path(), &["key", "new"]);
}

/// Issue 12: a malformed private key (one line with spaces or a literal `\n`, CRLF,
/// truncated, wrong label, stray character, binary) is never quoted, in any form, by any
/// command that reads a key; each message names the file and a reason, in under 1 KB.
/// (Before: a one-line key came back whole as decimal bytes.)
#[test]
fn malformed_keys_are_never_quoted_by_any_command() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let leaf = ca_and_leaf(d, &["keys.example"]);
    let leaf = leaf.to_str().unwrap().to_string();
    fs::write(d.join("pw.txt"), "pw\n").unwrap();
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "leaf.key",
            "--subject",
            "CN=r.example",
            "-o",
            "r.csr",
        ],
    );
    let good_ca_key = fs::read(d.join("ca/ca.key")).unwrap();
    let corpus = hostile::key_corpus();
    assert!(corpus.len() >= 30, "corpus of {} keys", corpus.len());
    let mut largest = 0;
    let mut accepted = Vec::new();
    for key in &corpus {
        let file = format!("{}.key", key.name);
        fs::write(d.join(&file), &key.bytes).unwrap();
        fs::write(d.join("ca/ca.key"), &key.bytes).unwrap();
        let runs: Vec<(Vec<&str>, &str)> = vec![
            (
                vec![
                    "csr",
                    "new",
                    "--key",
                    &file,
                    "--subject",
                    "CN=x.example",
                    "-o",
                    "o.csr",
                    "--force",
                ],
                &file,
            ),
            (
                vec![
                    "cert",
                    "self-sign",
                    "--key",
                    &file,
                    "--subject",
                    "CN=x.example",
                    "-o",
                    "o.pem",
                    "--force",
                ],
                &file,
            ),
            (
                vec![
                    "p12",
                    "export",
                    "--key",
                    &file,
                    "--cert",
                    &leaf,
                    "--password-file",
                    "pw.txt",
                    "-o",
                    "o.p12",
                    "--force",
                ],
                &file,
            ),
            (vec!["show", &file], &file),
            (vec!["show", "--json", &file], &file),
            (vec!["lint", &file], &file),
            (
                vec![
                    "ca",
                    "issue",
                    "ca",
                    "--csr",
                    "r.csr",
                    "-o",
                    "o-issued.pem",
                    "--force",
                ],
                "ca.key",
            ),
            (vec!["ca", "init", "sub", "--parent", "ca"], "ca.key"),
        ];
        for (args, names) in runs {
            let o = tlskit(d, &args);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            hostile::assert_no_key_material(&format!("{args:?}"), key, &all);
            let err = String::from_utf8_lossy(&o.stderr);
            largest = largest.max(err.len());
            if o.status.code() == Some(0) {
                accepted.push(format!("{} {args:?}", key.name));
                continue;
            }
            assert_eq!(o.status.code(), Some(2), "{args:?}\n{}", text(&o));
            assert!(
                err.contains(names) && err.len() < 1024,
                "{} {args:?}: the message must name {names} and be short:\n{err}",
                key.name
            );
        }
        let _ = fs::remove_dir_all(d.join("sub"));
    }
    fs::write(d.join("ca/ca.key"), good_ca_key).unwrap();
    // `show` of a key prints only its public part, and x509-parser's PEM reader does not
    // compare the END label with the BEGIN label; nothing else may accept these files.
    assert!(
        accepted
            .iter()
            .all(|a| a.contains("\"show\"") || a.contains("wrong-end-label")),
        "accepted: {accepted:#?}"
    );
    eprintln!("largest key error message: {largest} bytes");
}

/// Issue 12: names with ESC sequences, BEL, CR and bidi overrides are shown escaped by
/// `show`, `lint`, `ca issue` and `ca list`; `--json` keeps them exact.
#[test]
fn escape_codes_in_names_are_escaped_and_json_is_exact() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    hostile::evil_pki(d);
    // `--json` too: DEL, C1 and bidi controls are \u escapes there (exact once decoded).
    for args in [
        vec!["show", "--json", "evil-chain.pem"],
        vec!["lint", "--json", "evil-chain.pem"],
    ] {
        let o = tlskit(d, &args);
        hostile::assert_no_raw_controls(&format!("{args:?}"), &o.stdout);
    }
    for args in [
        vec!["show", "evil-chain.pem"],
        vec!["show", "evil-root.pem", "evil-chain.pem"],
        vec!["lint", "evil-chain.pem"],
    ] {
        let o = tlskit(d, &args);
        hostile::assert_no_raw_controls(&format!("{args:?}"), &o.stdout);
        hostile::assert_no_raw_controls(&format!("{args:?}"), &o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(hostile::EVIL_CN_DN), "{args:?}: {out}");
    }
    let show = tlskit(d, &["show", "evil-chain.pem"]);
    let out = String::from_utf8_lossy(&show.stdout);
    assert!(
        out.contains("contains control character U+001B at byte 1") && !out.contains("Punycode"),
        "{out}"
    );
    let v = json(d, &["show", "--json", "evil-chain.pem"]);
    let v = if v.is_array() { v[0].clone() } else { v };
    let subject = v["subject"].as_str().unwrap();
    assert!(
        subject.contains(hostile::EVIL_CN_DN) && subject.contains(hostile::EVIL_O_DN),
        "{subject:?}"
    );
    let sans: Vec<&str> = v["sans"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["value"].as_str())
        .collect();
    assert!(sans.contains(&hostile::EVIL_SAN), "{sans:?}");
    let o = tlskit(d, &["lint", "--json", "evil-chain.pem"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .any(|f| f["subject"].as_str().is_some_and(hostile::has_evil_cn)),
        "{v}"
    );

    // A request with the same names, issued by a CA: the printed subject is escaped, the
    // index and `ca list --json` keep it exact.
    ok(d, &["ca", "init", "ca", "--subject", "CN=Escape Test Root"]);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["evil.test".to_string()]).unwrap();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, hostile::EVIL_CN);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, hostile::EVIL_O);
    fs::write(
        d.join("evil.csr"),
        p.serialize_request(&key).unwrap().pem().unwrap(),
    )
    .unwrap();
    let o = tlskit(
        d,
        &["ca", "issue", "ca", "--csr", "evil.csr", "-o", "issued.pem"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    hostile::assert_no_raw_controls("ca issue", &o.stdout);
    hostile::assert_no_raw_controls("ca issue", &o.stderr);
    let o = tlskit(d, &["ca", "list", "ca"]);
    hostile::assert_no_raw_controls("ca list", &o.stdout);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\\x1b[31m")
            || String::from_utf8_lossy(&o.stdout).contains("\\1B[31m"),
        "{}",
        text(&o)
    );
    let v = json(d, &["ca", "list", "ca", "--json"]);
    assert!(
        hostile::has_evil_cn(v[0]["subject"].as_str().unwrap()),
        "{v}"
    );
    // A request whose SAN holds an ESC is refused with an escaped message.
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.subject_alt_names = vec![rcgen::SanType::DnsName(
        hostile::EVIL_SAN.try_into().unwrap(),
    )];
    fs::write(
        d.join("evil-san.csr"),
        p.serialize_request(&key).unwrap().pem().unwrap(),
    )
    .unwrap();
    let o = tlskit(
        d,
        &["ca", "issue", "ca", "--csr", "evil-san.csr", "-o", "x.pem"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    hostile::assert_no_raw_controls("ca issue (bad SAN)", &o.stderr);
}

/// Issue 12: `ca issue` says that it waits when another process holds the CA's lock.
#[test]
fn ca_issue_says_when_it_waits_for_the_lock() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ca_and_leaf(d, &["lock.example"]);
    ok(
        d,
        &[
            "csr",
            "new",
            "--key",
            "leaf.key",
            "--subject",
            "CN=lock.example",
            "-o",
            "l.csr",
        ],
    );
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(d.join("ca/lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .args(["ca", "issue", "ca", "--csr", "l.csr", "-o", "l.pem"])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its stderr line by line, and all of it at the end.
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            all.push_str(&line);
            all.push('\n');
            let _ = tx.send(line);
        }
        all
    });
    // It says it waits once its first try found the lock held (no guessed delay), and
    // while the lock is held nothing is issued.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) if l.contains("waiting for the CA lock") => break,
            Ok(_) => {}
            Err(_) => panic!("`ca issue` did not say it waits for the lock"),
        }
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "did not wait for the lock"
    );
    assert!(!d.join("l.pem").exists());
    // Released: it takes the lock and issues.
    lock.unlock().unwrap();
    let status = child.wait().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(d.join("l.pem").exists());
}

/// Issue 12: an I/O error is said once ("(os error 2) at path X: ... at path X" was the
/// same error printed as the message and again as each of its sources).
#[test]
fn io_errors_are_said_once() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["key", "new", "-o", "k.pem"]);
    for args in [
        vec!["key", "new", "-o", "missing/k.pem"],
        vec![
            "csr",
            "new",
            "--key",
            "k.pem",
            "--subject",
            "CN=a.example",
            "-o",
            "missing/r.csr",
        ],
        vec!["show", "missing.pem"],
    ] {
        let err = fails(d, &args);
        assert_eq!(err.matches("os error 2").count(), 1, "{args:?}: {err}");
    }
}

/// A serial whose top bit is set (DER puts a `00` sign byte before it): `show` prints the
/// number without that byte (as ACME's log lines do); `show --json` keeps the INTEGER's
/// content as its contract has it.
#[test]
fn show_prints_serials_without_the_der_sign_byte() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["serial.test".to_string()]).unwrap();
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x85, 0xc2, 0x01, 0x02]));
    let c = p.self_signed(&key).unwrap();
    fs::write(d.join("c.pem"), c.pem()).unwrap();
    let v = json(d, &["show", "--json", "c.pem"]);
    assert_eq!(v["serial"], "0085c20102");
    let human = ok(d, &["show", "c.pem"]);
    let serial = human
        .lines()
        .find(|l| l.trim_start().starts_with("Serial"))
        .unwrap_or_else(|| panic!("no Serial line: {human}"));
    assert_eq!(
        serial.split_whitespace().last(),
        Some("85c20102"),
        "{serial}"
    );
}

/// Runs a command that must exit 1; returns stdout.
#[track_caller]
fn negative(dir: &Path, args: &[&str]) -> String {
    let o = tlskit(dir, args);
    assert_eq!(o.status.code(), Some(1), "{args:?}\n{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Issue 25: `ca revoke` records a revocation once (serial in any usual form, or the
/// certificate), `ca crl` publishes it with a growing CRL number, `ca list` shows it,
/// `verify --crl` refuses the revoked certificate naming serial, reason and CRL file,
/// accepts another, and refuses a CRL whose signature does not verify.
#[test]
fn ca_revoke_crl_and_verify_crl() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ca_and_leaf(d, &["revoked.example"]);
    let url = "http://pki.example/ca.crl";
    ok(
        d,
        &[
            "ca",
            "issue",
            "ca",
            "--csr",
            "leaf.csr",
            "--crl-url",
            url,
            "-o",
            "good.pem",
        ],
    );
    let idx = json(d, &["ca", "list", "ca", "--json"]);
    let serial = idx[0]["serial"].as_str().unwrap().to_string();
    let good_serial = idx[1]["serial"].as_str().unwrap().to_string();
    assert!(idx[0].get("revoked_at").is_none());

    // Nothing to publish yet: an empty CRL, number 1.
    let c = json(d, &["ca", "crl", "ca", "-o", "crl.pem", "--json"]);
    assert_eq!(c["schema"], "tlskit.ca.crl/1");
    assert_eq!(
        (c["number"].as_u64(), c["revoked"].as_u64()),
        (Some(1), Some(0))
    );

    // Colons and the DER sign byte are accepted.
    let pairs: Vec<String> = serial
        .as_bytes()
        .chunks(2)
        .map(|c| String::from_utf8(c.to_vec()).unwrap().to_uppercase())
        .collect();
    let colons = format!("00:{}", pairs.join(":"));
    let r = json(
        d,
        &[
            "ca",
            "revoke",
            "ca",
            "--serial",
            &colons,
            "--reason",
            "keyCompromise",
            "--json",
        ],
    );
    assert_eq!(r["schema"], "tlskit.ca.revoke/1");
    assert_eq!(r["serial"], serial.as_str());
    assert_eq!(r["revoked"], true);
    assert_eq!(r["reason"], "keyCompromise");
    assert_eq!(r["reason_code"], 1);

    // Again, by certificate and another reason: exit 1, the first record stands.
    let again: Value = serde_json::from_str(&negative(
        d,
        &[
            "ca", "revoke", "ca", "--cert", "leaf.pem", "--reason", "4", "--json",
        ],
    ))
    .unwrap();
    assert_eq!(again["already_revoked"], true);
    assert_eq!(again["revoked"], false);
    assert_eq!(again["reason"], "keyCompromise");
    let human = negative(d, &["ca", "revoke", "ca", "--serial", &serial]);
    assert!(human.contains("already revoked (keyCompromise)"), "{human}");

    // Errors: a serial never issued, a bad serial, an unknown reason, neither flag.
    let e = fails(d, &["ca", "revoke", "ca", "--serial", "01:02:03"]);
    assert!(
        e.contains("has not issued a certificate with serial 010203"),
        "{e}"
    );
    let e = fails(d, &["ca", "revoke", "ca", "--serial", "xyz"]);
    assert!(e.contains("--serial"), "{e}");
    let e = fails(
        d,
        &[
            "ca",
            "revoke",
            "ca",
            "--serial",
            &good_serial,
            "--reason",
            "2",
        ],
    );
    assert!(e.contains("1 (keyCompromise)"), "{e}");
    fails(d, &["ca", "revoke", "ca"]);
    // `acme revoke --reason` parses with the same type: the same codes as before (2 still
    // refused), and the names; with a name, what fails next is the missing file.
    let acme = |reason: &str| {
        fails(
            d,
            &[
                "acme",
                "revoke",
                "--directory",
                "https://127.0.0.1:1/dir",
                "--acme-storage",
                "st",
                "--cert",
                "nothere.pem",
                "--reason",
                reason,
            ],
        )
    };
    assert!(acme("2").contains("1 (keyCompromise)"));
    for good in ["1", "keyCompromise", "cessationofoperation"] {
        let e = acme(good);
        assert!(
            e.contains("nothere.pem") && !e.contains("--reason"),
            "{good}: {e}"
        );
    }
    let e = fails(
        d,
        &[
            "ca",
            "issue",
            "ca",
            "--csr",
            "leaf.csr",
            "--crl-url",
            "ftp://x/y",
            "-o",
            "x.pem",
        ],
    );
    assert!(e.contains("http:// or https://"), "{e}");
    assert!(!d.join("x.pem").exists());

    let idx = json(d, &["ca", "list", "ca", "--json"]);
    assert_eq!(idx[0]["revocation_reason"], "keyCompromise");
    assert!(idx[1].get("revocation_reason").is_none());
    assert!(ok(d, &["ca", "list", "ca"]).contains("REVOKED"));

    for bad in ["0", "366", "x"] {
        fails(
            d,
            &["ca", "crl", "ca", "-o", "crl.pem", "--next-update", bad],
        );
    }
    let c = json(
        d,
        &[
            "ca",
            "crl",
            "ca",
            "-o",
            "crl.pem",
            "--next-update",
            "2",
            "--json",
        ],
    );
    assert_eq!(
        (c["number"].as_u64(), c["revoked"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(fs::read_to_string(d.join("crl.pem"))
        .unwrap()
        .starts_with("-----BEGIN X509 CRL-----"));
    let c = json(d, &["ca", "crl", "ca", "-o", "crl.der", "--der", "--json"]);
    assert_eq!(c["number"].as_u64(), Some(3));
    let der = fs::read(d.join("crl.der")).unwrap();
    assert_eq!(
        (der[0], der.len() as u64),
        (0x30, c["der_bytes"].as_u64().unwrap())
    );
    // `show` reads it back: one entry, our serial.
    let shown: Value = serde_json::from_str(&ok(d, &["show", "crl.der", "--json"])).unwrap();
    let text_shown = shown.to_string();
    assert!(text_shown.contains(&serial), "{text_shown}");

    let verify = |cert: &str, crl: &str| {
        tlskit(
            d,
            &[
                "verify",
                "--roots",
                "ca/ca.pem",
                "--cert",
                cert,
                "--host",
                "revoked.example",
                "--crl",
                crl,
                "--json",
            ],
        )
    };
    let o = verify("leaf.pem", "crl.pem");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["rule"], "revoked");
    assert_eq!(v["revocation"]["serial"], serial.as_str());
    assert_eq!(v["revocation"]["reason"], "keyCompromise");
    assert_eq!(v["revocation"]["certificate"], 0);
    assert_eq!(v["revocation"]["crl"], "crl.pem");
    let o = tlskit(
        d,
        &[
            "verify",
            "--roots",
            "ca/ca.pem",
            "--cert",
            "leaf.pem",
            "--host",
            "revoked.example",
            "--crl",
            "crl.der",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("revoked: serial {serial} (keyCompromise")),
        "{out}"
    );
    let o = verify("good.pem", "crl.pem");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // One bit of the signature changed: an error naming the file, for either certificate.
    let mut bad = der.clone();
    let n = bad.len();
    bad[n - 3] ^= 1;
    fs::write(d.join("bad.der"), &bad).unwrap();
    for cert in ["leaf.pem", "good.pem"] {
        let o = verify(cert, "bad.der");
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("bad.der: the CRL's signature does not verify"),
            "{err}"
        );
    }
}

/// `ca list` prints what the index file says: a revocation record written by hand (or by
/// an attacker) with control characters in its time comes out escaped, never raw.
#[test]
fn ca_list_escapes_a_hostile_revocation_record() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ca_and_leaf(d, &["list.example"]);
    let serial = json(d, &["ca", "list", "ca", "--json"])[0]["serial"]
        .as_str()
        .unwrap()
        .to_string();
    let index = d.join("ca/index.jsonl");
    let mut lines = fs::read_to_string(&index).unwrap();
    lines.push_str(&format!(
        "{{\"revoke\":\"{serial}\",\"reason\":\"keyCompromise\",\"revoked_at\":\"\\u001b[31m2027\"}}\n"
    ));
    fs::write(&index, lines).unwrap();
    let o = tlskit(d, &["ca", "list", "ca"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    hostile::assert_no_raw_controls("ca list", &o.stdout);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("REVOKED \\x1b[31m2027 (keyCompromise)"),
        "{out}"
    );
}

/// `ca serve` refuses a resolver or validation port that can name no peer (port 0, an
/// unspecified address) before it opens anything: exit 2 and a sentence naming the flag.
#[test]
fn ca_serve_refuses_resolvers_and_ports_that_name_no_peer() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca"]);
    for (args, want) in [
        (
            &["--resolver", "127.0.0.1:0"][..],
            "--resolver 127.0.0.1:0: port 0",
        ),
        (
            &["--resolver", "0.0.0.0"][..],
            "--resolver 0.0.0.0: an unspecified",
        ),
        (
            &["--resolver", "name.example"][..],
            "not a DNS server address",
        ),
        (
            &["--validation-http-port", "0"][..],
            "--validation-http-port",
        ),
        (&["--validation-tls-port", "0"][..], "--validation-tls-port"),
    ] {
        let mut argv = vec!["ca", "serve", "ca", "--listen", "127.0.0.1:0"];
        argv.extend_from_slice(args);
        let o = tlskit(d, &argv);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
        assert!(!d.join("ca/acme").exists(), "{args:?}: state was written");
    }
}

/// Issue 25: `ca eab add DIR --kid ID` prints the HMAC key once (the one stdout line, or
/// `hmac_key` under --json: the same key the file holds); a repeated key id is refused;
/// `ca eab list` shows key ids and enrolment times, never a key.
#[test]
fn ca_eab_add_shows_the_key_once_and_list_never_does() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    ok(d, &["ca", "init", "ca"]);
    let o = tlskit(d, &["ca", "eab", "add", "ca", "--kid", "web-01"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let key1 = stdout.trim().to_string();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert_eq!(key1.len(), 43, "{key1}");
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        stderr.contains("web-01") && !stderr.contains(&key1),
        "{stderr}"
    );
    let file = fs::read_to_string(d.join("ca/acme/eab/web-01.key")).unwrap();
    assert_eq!(file.trim(), key1);
    assert_eq!(mode(&d.join("ca/acme/eab/web-01.key")) & 0o777, 0o600);

    let v = json(d, &["ca", "eab", "add", "ca", "--kid", "db-01", "--json"]);
    assert_eq!(v["schema"], "tlskit.ca.eab.add/1");
    assert_eq!(v["kid"], "db-01");
    let key2 = v["hmac_key"].as_str().unwrap().to_string();
    assert_eq!(
        fs::read_to_string(d.join("ca/acme/eab/db-01.key"))
            .unwrap()
            .trim(),
        key2
    );
    assert_ne!(key1, key2);
    let err = fails(d, &["ca", "eab", "add", "ca", "--kid", "db-01"]);
    assert!(err.contains("db-01"), "{err}");
    fails(d, &["ca", "eab", "add", "ca", "--kid", "../x"]);

    let o = tlskit(d, &["ca", "eab", "list", "ca"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let all = text(&o);
    let lines: Vec<&str> = all.lines().filter(|l| l.contains("-01")).collect();
    assert_eq!(lines.len(), 2, "{all}");
    assert!(
        lines[0].starts_with("db-01  20") && lines[1].starts_with("web-01  20"),
        "{all}"
    );
    let v = json(d, &["ca", "eab", "list", "ca", "--json"]);
    assert_eq!(v["count"], 2);
    assert_eq!(v["keys"][1]["kid"], "web-01");
    let created = v["keys"][1]["created"].as_str().unwrap();
    assert!(created.len() == 20 && created.ends_with('Z'), "{created}");
    for listing in [all, v.to_string()] {
        assert!(
            !listing.contains(&key1) && !listing.contains(&key2),
            "{listing}"
        );
    }
}
