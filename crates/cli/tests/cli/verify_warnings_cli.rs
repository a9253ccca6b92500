//! Issue 23 through the binary: the `browser` default profile (warnings, exit 0),
//! trust anchors that break formation rules (serial 0, made by the openssl CLI as the
//! issue reproduces it), and the true reason for RSASSA-PSS-only keys.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run::tlskit_streams as tlskit;

/// `tlskit verify --json` as far as these tests read it.
#[derive(serde::Deserialize, Debug)]
struct VerifyJson {
    valid: bool,
    rule: Option<String>,
    reason: Option<String>,
    warnings: Vec<crate::verify_cli::WarningJson>,
    profile: String,
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl CLI (scripts/setup installs it)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A root made by `openssl req -x509` with `root_args` (key, serial, ...), and a leaf
/// under it with SAN a.example, serverAuth, AKI and subject CN `cn`.
fn root_and_leaf(dir: &Path, root_args: &[&str], cn: &str) -> (PathBuf, PathBuf) {
    let mut args = vec![
        "req",
        "-x509",
        "-nodes",
        "-keyout",
        "root.key",
        "-out",
        "root.pem",
        "-subj",
        "/CN=Issue 23 Root",
        "-days",
        "3650",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ];
    args.extend_from_slice(root_args);
    openssl(dir, &args);
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            &format!("/CN={cn}"),
        ],
    );
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:a.example\nextendedKeyUsage=serverAuth\n\
         authorityKeyIdentifier=keyid\nkeyUsage=critical,digitalSignature\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "leaf.csr",
            "-CA",
            "root.pem",
            "-CAkey",
            "root.key",
            "-set_serial",
            "4660",
            "-days",
            "365",
            "-sha256",
            "-extfile",
            "leaf.ext",
            "-out",
            "leaf.pem",
        ],
    );
    (dir.join("root.pem"), dir.join("leaf.pem"))
}

fn verify(root: &Path, leaf: &Path, extra: &[&str]) -> (i32, VerifyJson) {
    let mut args = vec![
        "verify",
        "--roots",
        root.to_str().unwrap(),
        "--cert",
        leaf.to_str().unwrap(),
        "--host",
        "a.example",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = tlskit(&args);
    let j: VerifyJson = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, j)
}

const EC_KEY: &[&str] = &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];

/// The reproduction: a root with serial number 0 (9 Mozilla roots have one), a
/// compliant leaf under it: accepted by default and under webpki and rfc5280 (it was
/// exit 1, serial-invalid on the anchor), like `openssl verify -x509_strict`.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn serial_zero_root_is_an_anchor_under_every_profile() {
    let dir = tempfile::tempdir().unwrap();
    let root_args = [EC_KEY, &["-set_serial", "0"]].concat();
    let (root, leaf) = root_and_leaf(dir.path(), &root_args, "a.example");
    for extra in [&[][..], &["--profile", "webpki"], &["--profile", "rfc5280"]] {
        let (code, j) = verify(&root, &leaf, extra);
        assert_eq!(code, 0, "{extra:?}: {j:?}");
        assert!(j.valid && j.warnings.is_empty(), "{extra:?}: {j:?}");
    }
}

/// cn-not-in-san: a warning with exit 0 under the default, in JSON and in the human
/// output; a refusal (exit 1) under webpki; --allow silences it; `warnings` is present
/// and empty on a clean chain and on a refused one.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn cn_not_in_san_warns_by_default_and_refuses_under_webpki() {
    let dir = tempfile::tempdir().unwrap();
    let (root, leaf) = root_and_leaf(dir.path(), EC_KEY, "Example \u{1b}[31mServer");
    let (code, j) = verify(&root, &leaf, &[]);
    assert_eq!(code, 0, "{j:?}");
    assert!(j.valid);
    assert_eq!(j.profile, "browser");
    assert_eq!(j.warnings.len(), 1, "{j:?}");
    let w = &j.warnings[0];
    assert_eq!(w.rule, "cn-not-in-san");
    assert_eq!(w.section, "CA/B Forum BR 7.1.4.3");
    assert_eq!((w.position, w.role.as_str()), (0, "end-entity"));
    assert!(w.subject.starts_with("CN=Example"), "{w:?}");
    assert!(w.message.contains("rule cn-not-in-san"), "{w:?}");

    // Human output: the warning, escaped (the CN holds ESC), exit 0.
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        root.to_str().unwrap(),
        "--cert",
        leaf.to_str().unwrap(),
        "--host",
        "a.example",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("warnings: 1 (profile browser"), "{out}");
    assert!(out.contains("rule cn-not-in-san"), "{out}");
    // No raw ESC reaches the terminal (the subject's RFC 4514 form writes it \1B).
    assert!(
        !out.contains('\u{1b}') && out.contains("Example \\1B[31mServer"),
        "{out}"
    );

    let (code, j) = verify(&root, &leaf, &["--profile", "webpki"]);
    assert_eq!(code, 1, "{j:?}");
    assert_eq!(j.rule.as_deref(), Some("cn-not-in-san"));
    assert!(j.warnings.is_empty(), "refused: no warnings array entries");
    let (code, j) = verify(
        &root,
        &leaf,
        &["--profile", "webpki", "--allow", "cn-not-in-san"],
    );
    assert_eq!(code, 0, "{j:?}");
    let (code, j) = verify(&root, &leaf, &["--allow", "cn-not-in-san"]);
    assert_eq!(code, 0, "{j:?}");
    assert!(j.warnings.is_empty(), "--allow silences the warning: {j:?}");

    // A clean chain: the array is there, empty.
    let clean = tempfile::tempdir().unwrap();
    let (root, leaf) = root_and_leaf(clean.path(), EC_KEY, "a.example");
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        root.to_str().unwrap(),
        "--cert",
        leaf.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["warnings"], serde_json::json!([]), "{out}");
}

/// A certificate signed with RSASSA-PSS by an id-RSASSA-PSS key (`openssl genpkey
/// -algorithm RSA-PSS`) is refused for what it is, not as "SHA-1, MD5 and DSA"; and
/// `serve --key` with such a key says what the key is, not "failed to parse".
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn rsa_pss_only_keys_get_their_true_reason() {
    let dir = tempfile::tempdir().unwrap();
    openssl(
        dir.path(),
        &[
            "genpkey",
            "-algorithm",
            "RSA-PSS",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "root.key",
        ],
    );
    // With -key, openssl req uses that key (root.key, which signs the leaf too).
    let (root, leaf) = root_and_leaf(dir.path(), &["-key", "root.key", "-sha256"], "a.example");
    let (code, j) = verify(&root, &leaf, &[]);
    assert_eq!(code, 1, "{j:?}");
    assert_eq!(j.rule.as_deref(), Some("rsa-pss-key"), "{j:?}");
    let reason = j.reason.unwrap();
    assert!(reason.contains("id-RSASSA-PSS"), "{reason}");
    assert!(
        reason.contains("trust anchor, CN=Issue 23 Root"),
        "{reason}"
    );
    assert!(!reason.contains("SHA-1, MD5 and DSA"), "{reason}");

    let (code, out, err) = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        root.to_str().unwrap(),
        "--key",
        dir.path().join("root.key").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("RSASSA-PSS-only key"), "{err}");
    assert!(!err.contains("failed to parse private key"), "{err}");
}
