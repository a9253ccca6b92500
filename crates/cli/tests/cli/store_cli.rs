//! End-to-end tests of `tlskit store ...`, `tlskit bench store` and `tlskit doctor`.
#![allow(clippy::unwrap_used)]

use crate::hostile;
use crate::store_pki;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use store_pki::*;

use crate::run::tlskit;

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// a.pem, b.pem (duplicate of a), c.pem (expired), key.pem (private key), leaf.pem.
fn messy_dir() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let a = ca("CLI Root A");
    let key = private_key_pem();
    fs::write(d.path().join("a.pem"), &a).unwrap();
    fs::write(d.path().join("b.pem"), &a).unwrap();
    fs::write(d.path().join("c.pem"), expired_ca("CLI Old")).unwrap();
    fs::write(d.path().join("key.pem"), &key).unwrap();
    fs::write(d.path().join("leaf.pem"), leaf("leaf.example")).unwrap();
    (d, key)
}

#[test]
fn store_show_json_reports_counts_and_per_file_errors() {
    let (d, key) = messy_dir();
    let o = tlskit(&["store", "show", s(d.path()), "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(j["anchors"], 2);
    assert_eq!(j["files"], 5);
    assert_eq!(j["duplicates"], 1);
    assert_eq!(j["expired"], 1);
    assert_eq!(j["generation"], 1);
    assert!(j["load_ms"].as_f64().unwrap() >= 0.0);
    let errors = j["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for e in errors {
        assert!(e["path"].as_str().unwrap().starts_with(s(d.path())));
        assert!(!e["reason"].as_str().unwrap().is_empty());
    }
    assert!(errors
        .iter()
        .any(|e| e["path"].as_str().unwrap().ends_with("key.pem")));
    assert!(errors
        .iter()
        .any(|e| e["path"].as_str().unwrap().ends_with("leaf.pem")));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let body_line = key.lines().nth(1).unwrap();
    assert!(!all.contains(body_line), "private key material echoed");
}

#[test]
fn store_show_human_output_and_stderr_warnings() {
    let (d, _) = messy_dir();
    let o = tlskit(&["store", "show", s(d.path())]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("anchors") && out.contains('2'), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("key.pem") && err.contains("private key"),
        "{err}"
    );
    assert!(!out.contains("\x1b["), "no colour when not a terminal");
}

#[test]
fn store_show_nothing_loadable_exits_2() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("key.pem"), private_key_pem()).unwrap();
    let o = tlskit(&["store", "show", s(d.path()), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nothing loadable") && err.contains("key.pem"),
        "{err}"
    );
    let o = tlskit(&["store", "show", "/nonexistent/tlskit-test"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(tlskit(&["store", "show"]).status.code(), Some(2));
    assert_eq!(tlskit(&["store", "build", "x.pem"]).status.code(), Some(2));
    assert_eq!(tlskit(&["store", "prune", "x"]).status.code(), Some(2));
}

#[test]
fn help_has_examples() {
    for cmd in [
        &["store", "show", "--help"][..],
        &["store", "build", "--help"],
        &["store", "lint", "--help"],
        &["store", "prune", "--help"],
        &["bench", "store", "--help"],
        &["doctor", "--help"],
    ] {
        let o = tlskit(cmd);
        assert_eq!(o.status.code(), Some(0));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Examples:"),
            "{cmd:?}"
        );
    }
}

#[test]
fn store_build_then_every_command_accepts_the_snapshot() {
    let (d, _) = messy_dir();
    let snap = d.path().join("out").join("roots.snap");
    fs::create_dir_all(snap.parent().unwrap()).unwrap();
    let o = tlskit(&["store", "build", s(d.path()), "-o", s(&snap)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(snap.exists());
    let o = tlskit(&["store", "show", s(&snap), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let j = json(&o);
    assert_eq!(j["anchors"], 2);
    assert_eq!(j["snapshot"], true);
    assert_eq!(j["errors"].as_array().unwrap().len(), 0, "{j}");
    let o = tlskit(&["store", "lint", s(&snap), "--json"]);
    assert_eq!(o.status.code(), Some(1), "the expired anchor is a finding");
    assert!(json(&o)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "expired"));
    let o = tlskit(&["bench", "store", s(&snap), "--json", "--runs", "1"]);
    assert_eq!(o.status.code(), Some(0));

    // Stale: a source changes after the build (its modification time set, not waited
    // for: a write within the same clock tick would keep the old one).
    let a = d.path().join("a.pem");
    tlskit_testkit::store_certs::rewrite_later(&a, ca("CLI Root A2"));
    let j = json(&tlskit(&["store", "show", s(&snap), "--json"]));
    let errs = j["errors"].as_array().unwrap();
    assert!(errs.iter().any(|e| e["kind"] == "stale-snapshot"), "{j}");
}

#[test]
fn corrupt_snapshot_is_rejected_with_a_clear_error() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b.pem");
    fs::write(&bundle, format!("{}{}", ca("One"), ca("Two"))).unwrap();
    let snap = d.path().join("s.snap");
    assert_eq!(
        tlskit(&["store", "build", s(&bundle), "-o", s(&snap)])
            .status
            .code(),
        Some(0)
    );
    let good = fs::read(&snap).unwrap();
    // Truncated.
    fs::write(&snap, &good[..good.len() - 100]).unwrap();
    let o = tlskit(&["store", "show", s(&snap), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("truncated"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A flipped byte in the DER: the anchor is dropped and reported.
    let mut b = good.clone();
    let n = b.len();
    b[n - 50] ^= 1;
    fs::write(&snap, &b).unwrap();
    let o = tlskit(&["store", "show", s(&snap), "--json"]);
    let j = json(&o);
    assert_eq!(j["anchors"], 2, "count from the header");
    let errs = j["errors"].as_array().unwrap();
    assert!(
        errs.iter()
            .any(|e| e["reason"].as_str().unwrap().contains("integrity")),
        "{j}"
    );
    // Wrong version.
    let mut b = good.clone();
    b[8] = 9;
    fs::write(&snap, &b).unwrap();
    let o = tlskit(&["store", "show", s(&snap)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("version 9"));
}

#[test]
fn store_lint_json_findings_and_exit_codes() {
    let (d, _) = messy_dir();
    let o = tlskit(&["store", "lint", s(d.path()), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let f = j["findings"].as_array().unwrap();
    for k in ["duplicate", "expired", "non-ca", "private-key"] {
        assert!(f.iter().any(|x| x["kind"] == k), "missing {k}: {j}");
    }
    for x in f {
        for field in ["kind", "path", "subject", "detail"] {
            assert!(x.get(field).is_some(), "{x}");
        }
    }
    let clean = tempfile::tempdir().unwrap();
    fs::write(clean.path().join("a.pem"), ca("Clean")).unwrap();
    let o = tlskit(&["store", "lint", s(clean.path()), "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(json(&o)["findings"].as_array().unwrap().len(), 0);
    let o = tlskit(&["store", "lint", s(clean.path())]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn store_prune_dry_run_then_apply_moves_into_backup() {
    let (d, _) = messy_dir();
    let backup = tempfile::tempdir().unwrap();
    let bk = backup.path().join("bk");
    let o = tlskit(&["store", "prune", s(d.path()), "--backup", s(&bk)]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("would move") && out.contains("b.pem") && out.contains("c.pem"),
        "{out}"
    );
    assert!(d.path().join("b.pem").exists(), "dry run must not move");
    let o = tlskit(&[
        "store",
        "prune",
        s(d.path()),
        "--backup",
        s(&bk),
        "--apply",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    assert_eq!(j["applied"], true);
    assert_eq!(j["moves"].as_array().unwrap().len(), 2);
    assert!(!d.path().join("b.pem").exists() && bk.join("b.pem").exists());
    assert!(!d.path().join("c.pem").exists() && bk.join("c.pem").exists());
    assert!(d.path().join("a.pem").exists() && d.path().join("key.pem").exists());
    let o = tlskit(&["store", "prune", s(d.path()), "--backup", s(&bk)]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to prune"));
}

#[test]
fn bench_store_reports_medians() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b.pem");
    fs::write(&bundle, format!("{}{}{}", ca("B1"), ca("B2"), ca("B3"))).unwrap();
    let o = tlskit(&["bench", "store", s(&bundle), "--json", "--runs", "3"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    for k in [
        "load_ms",
        "snapshot_load_ms",
        "lookup_ns",
        "memory_bytes",
        "der_bytes",
    ] {
        assert!(j[k].as_f64().unwrap() > 0.0, "{k}: {j}");
    }
    assert_eq!(j["anchors"], 3);
}

#[test]
fn doctor_reports_the_store_chosen_by_environment() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("system.pem");
    fs::write(&bundle, format!("{}{}", ca("Doc 1"), expired_ca("Doc 2"))).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .args(["doctor", "--json"])
        .env("SSL_CERT_FILE", &bundle)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j = json(&o);
    let sys = &j["sections"]["system_store"];
    assert_eq!(sys["chosen_by"], "SSL_CERT_FILE");
    assert_eq!(sys["sources"][0], s(&bundle));
    let ts = &j["sections"]["trust_store"];
    assert_eq!(ts["anchors"], 2);
    assert_eq!(ts["expired"], 1);
    assert!(ts["load_ms"].as_f64().is_some());
    assert_eq!(j["sections"]["lint"]["by_kind"]["expired"], 1);
    let o = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .arg("doctor")
        .env("SSL_CERT_FILE", &bundle)
        .env_remove("SSL_CERT_DIR")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("SSL_CERT_FILE") && out.contains("anchors"),
        "{out}"
    );
    // Nothing usable: exit 2.
    let empty = d.path().join("empty.pem");
    fs::write(&empty, "").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .arg("doctor")
        .env("SSL_CERT_FILE", &empty)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

fn have_openssl() -> bool {
    Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `tlskit lint` and `tlskit store lint` apply the same certificate rules
/// (tlskit_x509::certrules): to both, an OpenSSL-made P-192 CA signed with SHA-1 is a
/// weak key and a SHA-1 signature (store lint used to miss small EC keys), and an RSA CA
/// signed with MD5 an MD5 signature (lint used to call it "sha1-signature").
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn lint_and_store_lint_share_certificate_rules() {
    assert!(
        have_openssl(),
        "openssl is not installed: scripts/setup installs the test peers"
    );
    let d = tempfile::tempdir().unwrap();
    let make = |name: &str, newkey: &[&str], digest: &str| {
        let cert = d.path().join(format!("{name}.pem"));
        let key = d.path().join(format!("{name}.key"));
        let st = Command::new("openssl")
            .args(["req", "-x509", "-newkey"])
            .args(newkey)
            .args([
                digest,
                "-nodes",
                "-subj",
                &format!("/CN={name} CA"),
                "-days",
                "30",
            ])
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-keyout", s(&key), "-out", s(&cert)])
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        cert
    };
    let p192 = make(
        "p192",
        &["ec", "-pkeyopt", "ec_paramgen_curve:prime192v1"],
        "-sha1",
    );
    let md5 = make("md5", &["rsa:2048"], "-md5");
    let codes = |j: &serde_json::Value, field: &str| -> Vec<String> {
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f[field].as_str().unwrap().to_string())
            .collect()
    };
    for (cert, wants) in [
        (&p192, &["weak-key", "sha1-signature"][..]),
        (&md5, &["md5-signature"][..]),
    ] {
        let o = tlskit(&["store", "lint", s(cert), "--json"]);
        assert_eq!(o.status.code(), Some(1));
        let store = codes(&json(&o), "kind");
        let lint = codes(&json(&tlskit(&["lint", s(cert), "--json"])), "code");
        for want in wants {
            assert!(store.iter().any(|c| c == want), "store lint: {store:?}");
            assert!(lint.iter().any(|c| c == want), "lint: {lint:?}");
        }
    }
}

/// Interop with OpenSSL: a 1024-bit RSA CA signed with SHA-1 (lint: weak-key and
/// sha1-signature), the same CA as DER, and an `openssl rehash` directory (hash links are
/// aliases: each certificate counted once, nothing reported as duplicate).
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn openssl_made_inputs_weak_key_sha1_der_and_rehash_dir() {
    assert!(
        have_openssl(),
        "openssl is not installed: scripts/setup installs the test peers"
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("hashed");
    fs::create_dir(&dir).unwrap();
    let weak = dir.join("weak.pem");
    let key = d.path().join("weak.key");
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:1024",
            "-sha1",
            "-nodes",
            "-subj",
            "/CN=Weak Old CA",
            "-days",
            "30",
        ])
        .args([
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-keyout",
            s(&key),
            "-out",
            s(&weak),
        ])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let o = tlskit(&["store", "lint", s(&weak), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    let kinds: Vec<&str> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"weak-key") && kinds.contains(&"sha1-signature"),
        "{j}"
    );

    let der = d.path().join("weak.der");
    let st = Command::new("openssl")
        .args(["x509", "-in", s(&weak), "-outform", "DER", "-out", s(&der)])
        .output()
        .unwrap();
    assert!(st.status.success());
    let j = json(&tlskit(&["store", "show", s(&der), "--json"]));
    assert_eq!(j["anchors"], 1);

    fs::write(dir.join("a.pem"), ca("Rehash A")).unwrap();
    fs::write(dir.join("b.pem"), ca("Rehash B")).unwrap();
    let st = Command::new("openssl")
        .args(["rehash", s(&dir)])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let links = fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".0")
        })
        .count();
    assert_eq!(
        links, 3,
        "openssl rehash made one hash link per certificate"
    );
    let j = json(&tlskit(&["store", "show", s(&dir), "--json"]));
    assert_eq!(j["anchors"], 3);
    assert_eq!(j["files"], 3);
    assert_eq!(j["aliases"], 3);
    assert_eq!(j["duplicates"], 0);
    let o = tlskit(&["store", "lint", s(&dir), "--json"]);
    let f = json(&o)["findings"].as_array().unwrap().clone();
    assert!(
        !f.iter().any(|x| x["kind"] == "duplicate"),
        "hash links are not duplicates: {f:?}"
    );
}

/// Issue 12: trust anchors whose names hold ESC sequences, BEL, CR and bidi overrides:
/// `store show --list` and `store lint` print them escaped; `--json` keeps them exact.
#[test]
fn escape_codes_in_anchor_names_are_escaped() {
    let d = tempfile::tempdir().unwrap();
    hostile::evil_pki(d.path());
    fs::write(d.path().join("expired.pem"), expired_ca(hostile::EVIL_CN)).unwrap();
    let root = d.path().join("evil-root.pem");
    let expired = d.path().join("expired.pem");
    for args in [
        vec!["store", "show", "--list", s(&root)],
        vec!["store", "show", "--list", "--json", s(&root)],
        vec!["store", "lint", s(&root), s(&expired)],
        vec!["store", "lint", "--json", s(&root), s(&expired)],
    ] {
        let o = tlskit(&args);
        hostile::assert_no_raw_controls(&format!("{args:?}"), &o.stdout);
        hostile::assert_no_raw_controls(&format!("{args:?}"), &o.stderr);
        let out = String::from_utf8_lossy(&o.stdout);
        if !args.contains(&"--json") {
            assert!(out.contains(hostile::EVIL_CN_DN), "{args:?}: {out}");
        }
    }
    let v = json(&tlskit(&["store", "show", "--list", "--json", s(&root)]));
    let subject = v["list"][0]["subject"].as_str().unwrap();
    assert!(
        subject.contains(hostile::EVIL_CN_DN) && subject.contains(hostile::EVIL_O_DN),
        "{v}"
    );
    let v = json(&tlskit(&["store", "lint", "--json", s(&root), s(&expired)]));
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["subject"].as_str().is_some_and(hostile::has_evil_cn)),
        "{v}"
    );
}
