//! `tlskit verify` end to end through the real binary: exit codes, JSON contract, bad
//! inputs, names, time, CRLs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use crate::hostile;
use crate::run::tlskit_streams as tlskit;
use crate::verify_pki::*;

use rcgen::{
    CertificateParams, CertificateRevocationListParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, Issuer, KeyIdMethod, KeyPair, RevokedCertParams, SerialNumber,
};

#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct VerifyJson {
    /// `tlskit.verify/1` (docs/json.md).
    schema: String,
    valid: bool,
    reason: Option<String>,
    chain: Option<Vec<String>>,
    host: Option<String>,
    host_unicode: Option<String>,
    ip: Option<String>,
    purpose: String,
    at: String,
    anchor_sha256: Option<String>,
    rule: Option<String>,
    certificate: Option<usize>,
    certificate_subject: Option<String>,
    /// Always present (issue 23), empty when none.
    warnings: Vec<WarningJson>,
    profile: String,
    /// Issue 25: the CRL entry of a revoked certificate.
    revocation: Option<RevocationJson>,
}

/// `revocation` (docs/json.md, "verify").
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RevocationJson {
    certificate: usize,
    serial: String,
    reason: String,
    reason_code: u8,
    revoked_at: String,
    crl: String,
}

/// One entry of `warnings` (docs/json.md, "verify").
#[derive(serde::Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct WarningJson {
    pub(crate) rule: String,
    pub(crate) section: String,
    pub(crate) position: usize,
    pub(crate) role: String,
    pub(crate) subject: String,
    pub(crate) message: String,
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(stdout: &str) -> VerifyJson {
    let v: VerifyJson = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v.schema, "tlskit.verify/1");
    v
}

const AT: &str = "2030-01-01T00:00:00Z";

#[test]
fn valid_chain_json_contract() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--host",
        "räksmörgås\u{3002}com",
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json(&out);
    assert!(j.valid);
    assert!(j.reason.is_none());
    assert!(j.warnings.is_empty(), "{:?}", j.warnings);
    assert_eq!(j.host.as_deref(), Some("xn--rksmrgs-5wao1o.com"));
    assert_eq!(j.host_unicode.as_deref(), Some("räksmörgås.com"));
    assert_eq!(j.purpose, "server");
    assert_eq!(j.at, AT);
    assert_eq!(
        j.chain.unwrap(),
        [
            "CN=xn--rksmrgs-5wao1o.com",
            "CN=CLI Intermediate",
            "CN=CLI Root"
        ]
    );
    assert_eq!(j.anchor_sha256.unwrap().len(), 64);
    assert!(j.ip.is_none());
}

#[test]
fn human_output_and_unix_seconds() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--host",
        "a.example.com",
        "--at",
        "1893456000",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("valid: server certificate for a.example.com at 2030-01-01T00:00:00Z"),
        "{out}"
    );
    assert!(out.contains("[trust anchor]"), "{out}");
}

#[test]
fn wildcard_and_ip_rules_through_the_cli() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let run = |extra: &[&str]| {
        let mut a = vec![
            "verify",
            "--roots",
            s(&roots),
            "--cert",
            s(&chain),
            "--at",
            AT,
            "--json",
        ];
        a.extend_from_slice(extra);
        tlskit(&a)
    };
    assert_eq!(run(&["--host", "a.example.com"]).0, 0);
    let (code, out, _) = run(&["--host", "example.com"]);
    assert_eq!(code, 1);
    assert!(json(&out)
        .reason
        .unwrap()
        .contains("not valid for example.com"));
    assert_eq!(run(&["--host", "a.b.example.com"]).0, 1);
    let (code, out, _) = run(&["--ip", "192.0.2.1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(json(&out).ip.as_deref(), Some("192.0.2.1"));
    assert_eq!(run(&["--ip", "192.0.2.2"]).0, 1);
    for sep in ['\u{FF0E}', '\u{FF61}'] {
        let host = format!("räksmörgås{sep}com");
        let (code, out, _) = run(&["--host", &host]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(json(&out).host.as_deref(), Some("xn--rksmrgs-5wao1o.com"));
    }
}

#[test]
fn one_dot_leader_is_a_usage_error_naming_it() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let (code, _, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--host",
        "example\u{2024}com",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("U+2024") && err.contains("ONE DOT LEADER"),
        "{err}"
    );
}

#[test]
fn expired_and_not_yet_valid_via_at() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    for (t, word) in [
        ("2036-01-01T00:00:00Z", "expired"),
        ("2024-01-01T00:00:00+02:00", "not valid before"),
    ] {
        let (code, out, err) = tlskit(&[
            "verify",
            "--roots",
            s(&roots),
            "--cert",
            s(&chain),
            "--at",
            t,
            "--json",
        ]);
        assert_eq!(code, 1, "{out}{err}");
        let j = json(&out);
        assert!(!j.valid && j.chain.is_none());
        assert!(j.reason.unwrap().contains(word));
    }
    let (code, _, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--at",
        "yesterday",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("RFC 3339"), "{err}");
}

#[test]
fn garbage_cert_is_exit_2_with_the_path() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let junk = p.write("junk.pem", "this is not a certificate\n");
    let (code, _, err) = tlskit(&["verify", "--roots", s(&roots), "--cert", s(&junk)]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("junk.pem") && err.contains("not a PEM or DER certificate"),
        "{err}"
    );
    let bad_pem = p.write(
        "bad.pem",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    let (code, _, err) = tlskit(&["verify", "--roots", s(&roots), "--cert", s(&bad_pem)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.pem"), "{err}");
    let (code, _, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&p.path("missing.pem")),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing.pem"), "{err}");
}

#[test]
fn empty_roots_is_exit_2() {
    let p = pki();
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let empty_dir = p.path("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let empty_file = p.write("empty.pem", "");
    for src in [&empty_dir, &empty_file] {
        let (code, out, err) = tlskit(&["verify", "--roots", s(src), "--cert", s(&chain)]);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains("--roots") && err.contains("no trust anchor"),
            "{err}"
        );
    }
}

/// `--max-depth` is honoured exactly: the three-certificate path passes with 3 and is
/// refused with 2; values outside 2..=16 are refused rather than capped.
#[test]
fn max_depth_exact_and_out_of_range_refused() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let run = |depth: &str| {
        tlskit(&[
            "verify",
            "--roots",
            s(&roots),
            "--cert",
            s(&chain),
            "--at",
            AT,
            "--max-depth",
            depth,
            "--json",
        ])
    };
    let (code, out, err) = run("3");
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = run("2");
    assert_eq!(code, 1, "{out}");
    assert_eq!(json(&out).rule.as_deref(), Some("chain-too-deep"), "{out}");
    for bad in ["1", "17"] {
        let (code, out, err) = run(bad);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("must be between 2 and 16"), "{err}");
    }
}

#[test]
fn chain_in_wrong_order_still_builds_and_missing_piece_is_exit_1() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    // Root and intermediate before the leaf's issuer order: leaf, root, intermediate.
    let shuffled = p.write(
        "shuffled.pem",
        &format!("{}{}{}", p.leaf_pem, p.root_pem, p.int_pem),
    );
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&shuffled),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The leaf not first: the first certificate is the end entity, so this is an
    // intermediate presented as a leaf: invalid with a reason.
    let reversed = p.write("reversed.pem", &format!("{}{}", p.int_pem, p.leaf_pem));
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&reversed),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(json(&out).reason.unwrap().contains("wrong order"), "{out}");
    // Asked for on purpose, the intermediate is verified as the end entity: it chains to
    // the root (RFC 5280 6.1 allows a CA certificate there).
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&reversed),
        "--at",
        AT,
        "--profile",
        "rfc5280",
        "--allow",
        "ca-as-end-entity",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // Missing intermediate: unknown issuer.
    let leaf_only = p.write("leaf.pem", &p.leaf_pem);
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&leaf_only),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 1);
    assert!(json(&out).reason.unwrap().contains("CN=CLI Intermediate"));
    // ... supplied with --intermediates: valid.
    let int = p.write("int.pem", &p.int_pem);
    let (code, _, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--intermediates",
        s(&int),
        "--cert",
        s(&leaf_only),
        "--at",
        AT,
    ]);
    assert_eq!(code, 0);
}

#[test]
fn crl_revocation_and_purpose() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let crl = CertificateRevocationListParams {
        this_update: ymd(2029, 1, 1),
        next_update: ymd(2031, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![RevokedCertParams {
            serial_number: SerialNumber::from(77u64),
            revocation_time: ymd(2029, 1, 1),
            reason_code: None,
            invalidity_date: None,
        }],
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&Issuer::from_params(&p.int_params, &p.int_key))
    .unwrap();
    let crl_path = p.write("int.crl", &crl.pem().unwrap());
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--crl",
        s(&crl_path),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let v = json(&out);
    assert!(v.reason.unwrap().contains("revoked"));
    // Issue 25: the entry that revoked it (no reasonCode: unspecified).
    let r = v.revocation.expect("the revocation entry");
    assert_eq!(
        (r.certificate, r.reason.as_str(), r.reason_code),
        (0, "unspecified", 0)
    );
    assert_eq!(r.revoked_at, "2029-01-01T00:00:00Z");
    assert_eq!(r.crl, s(&crl_path));
    assert_eq!(r.serial, "4d"); // 77
                                // Client purpose (no EKU in the leaf: allowed).
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--purpose",
        "client",
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 0);
    assert_eq!(json(&out).purpose, "client");
    let (code, _, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--purpose",
        "email",
    ]);
    assert_eq!(code, 2);
}

#[test]
fn hundred_certificate_chain_is_refused_clearly() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let mut body = p.leaf_pem.clone();
    for _ in 0..99 {
        body.push_str(&p.int_pem);
    }
    let long = p.write("long.pem", &body);
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&long),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 1);
    assert!(json(&out).reason.unwrap().contains("100 certificates"));
}

#[test]
fn help_has_examples() {
    let (code, out, _) = tlskit(&["verify", "--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Examples:") && out.contains("--roots"),
        "{out}"
    );
    let (code, out, _) = tlskit(&["bench", "verify", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("cached_verify_us"), "{out}");
}

#[test]
fn bench_verify_reports_the_contract_fields() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let (code, out, err) = tlskit(&[
        "bench",
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--host",
        "a.example.com",
        "--runs",
        "1",
        "--run-ms",
        "20",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in ["verify_us", "cached_verify_us", "two_thread_speedup"] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k}: {out}");
    }
}

/// Issue 12: a certificate whose names hold ESC sequences, BEL, CR and bidi overrides,
/// through `verify` that passes and that fails (wrong name, expired): nothing raw reaches
/// stdout or stderr; `--json` keeps the names exact.
#[test]
fn escape_codes_in_names_passing_and_failing() {
    let t = tempfile::tempdir().unwrap();
    hostile::evil_pki(t.path());
    let roots = t.path().join("evil-root.pem");
    let chain = t.path().join("evil-chain.pem");
    let run = |extra: &[&str]| {
        let mut args = vec!["verify", "--roots", s(&roots), "--cert", s(&chain)];
        args.extend_from_slice(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_tlskit"))
            .args(&args)
            .output()
            .unwrap();
        hostile::assert_no_raw_controls(&format!("{extra:?} stdout"), &out.stdout);
        hostile::assert_no_raw_controls(&format!("{extra:?} stderr"), &out.stderr);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = run(&["--host", "evil.test"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(hostile::EVIL_CN_DN), "{out}");
    let (code, out) = run(&["--host", "evil.test", "--json"]);
    assert_eq!(code, 0, "{out}");
    let j = json(&out);
    let chain = j.chain.unwrap();
    assert!(
        chain[0].contains(hostile::EVIL_CN_DN) && chain[0].contains(hostile::EVIL_O_DN),
        "{chain:?}"
    );
    let (code, out) = run(&["--host", "other.test"]);
    assert_eq!(code, 1, "{out}");
    let (code, out) = run(&["--host", "evil.test", "--at", "2099-01-01T00:00:00Z"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("end-entity certificate (") && out.contains(hostile::EVIL_CN_DN),
        "{out}"
    );
}

/// Issue 12: "a certificate expired" says which one (position and subject).
#[test]
fn expired_and_not_yet_valid_name_the_certificate() {
    let p = pki();
    let mut short = ca("Short Intermediate");
    short.not_before = ymd(2026, 1, 1);
    short.not_after = ymd(2031, 1, 1);
    let short_key = KeyPair::generate().unwrap();
    let short_cert = short
        .signed_by(&short_key, &Issuer::from_params(&p.int_params, &p.int_key))
        .unwrap();
    let mut lp = CertificateParams::new(vec!["leaf.example".to_string()]).unwrap();
    lp.not_before = ymd(2025, 1, 1);
    lp.not_after = ymd(2035, 1, 1);
    let leaf = lp
        .signed_by(
            &KeyPair::generate().unwrap(),
            &Issuer::from_params(&short, &short_key),
        )
        .unwrap();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write(
        "chain.pem",
        &format!("{}{}{}", leaf.pem(), short_cert.pem(), p.int_pem),
    );
    for (at, want) in [
        (
            "2032-01-01T00:00:00Z",
            "certificate 1 of the chain (CN=Short Intermediate) expired",
        ),
        (
            "2036-01-01T00:00:00Z",
            "the end-entity certificate (CN=rcgen self signed cert) expired",
        ),
        (
            "2025-06-01T00:00:00Z",
            "certificate 1 of the chain (CN=Short Intermediate) is not valid before",
        ),
    ] {
        let (code, out, err) = tlskit(&[
            "verify",
            "--roots",
            s(&roots),
            "--cert",
            s(&chain),
            "--at",
            at,
        ]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains(want), "at {at}: want {want:?}:\n{out}");
    }
}

/// Issue 12: `--at -1` is a value (refused: before 1970), not an unknown flag; an error's
/// sources are not repeated ("day was not in range" once).
#[test]
fn negative_at_is_a_value_and_error_text_is_not_repeated() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("chain.pem", &format!("{}{}", p.leaf_pem, p.int_pem));
    let (code, out, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--at",
        "-1",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("before 1970") && !err.contains("unexpected argument"),
        "{err}"
    );
    let (code, _, err) = tlskit(&[
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--at",
        "2025-02-30T00:00:00Z",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.matches("day was not in range").count(), 1, "{err}");
    let (code, _, err) = tlskit(&["show", s(&p.path("missing.pem"))]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

/// Issue 12: a 55 MB file without newlines after a BEGIN line gets a short error (it was
/// 220 MB: the line as decimal bytes).
#[test]
fn huge_one_line_pem_gets_a_short_error() {
    let p = pki();
    let roots = p.write("roots.pem", &p.root_pem);
    let big = p.path("big.pem");
    let mut body = b"-----BEGIN CERTIFICATE----- ".to_vec();
    body.resize(55_000_000, b'A');
    std::fs::write(&big, &body).unwrap();
    let (code, out, err) = tlskit(&["verify", "--roots", s(&roots), "--cert", s(&big)]);
    assert_eq!(code, 2, "{}", &err[..err.len().min(2000)]);
    assert!(
        err.len() + out.len() < 1024 && err.contains("big.pem"),
        "{} bytes: {}",
        err.len(),
        &err[..err.len().min(2000)]
    );
}

/// Issue 13 through the binary: profiles, --allow, the JSON `rule` code, sentences
/// naming the certificate, pinned self-signed certificates, trailing-dot host names.
#[test]
fn profiles_allow_and_rule_codes() {
    let p = pki();
    // A leaf without AKI under the same intermediate.
    let mut lp = CertificateParams::new(vec!["noaki.example".to_string()]).unwrap();
    lp.distinguished_name = DistinguishedName::new();
    lp.distinguished_name
        .push(DnType::CommonName, "noaki.example");
    lp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    lp.not_before = ymd(2025, 1, 1);
    lp.not_after = ymd(2035, 1, 1);
    let leaf = lp
        .signed_by(
            &KeyPair::generate().unwrap(),
            &Issuer::from_params(&p.int_params, &p.int_key),
        )
        .unwrap();
    let roots = p.write("roots.pem", &p.root_pem);
    let chain = p.write("noaki.pem", &format!("{}{}", leaf.pem(), p.int_pem));
    // The strict profile, where aki-missing is a refusal (under the default `browser`
    // it is a warning: verify_warnings_cli.rs).
    let base = [
        "verify",
        "--roots",
        s(&roots),
        "--cert",
        s(&chain),
        "--at",
        AT,
        "--profile",
        "webpki",
    ];
    let (code, out, _) = tlskit(&[&base[..], &["--json"]].concat());
    assert_eq!(code, 1, "{out}");
    let j = json(&out);
    assert_eq!(j.rule.as_deref(), Some("aki-missing"));
    assert_eq!(j.certificate, Some(0));
    assert_eq!(j.certificate_subject.as_deref(), Some("CN=noaki.example"));
    assert_eq!(j.profile, "webpki");
    let reason = j.reason.unwrap();
    assert!(
        reason.starts_with("certificate 0 (end entity, CN=noaki.example): "),
        "{reason}"
    );
    assert!(reason.contains("RFC 5280 4.2.1.1"), "{reason}");
    // Human output: reason and rule.
    let (code, out, _) = tlskit(&base);
    assert_eq!(code, 1);
    assert!(
        out.contains("rule:   aki-missing (profile webpki)"),
        "{out}"
    );
    // Allowed on purpose.
    let (code, out, _) = tlskit(&[&base[..], &["--allow", "aki-missing", "--json"]].concat());
    assert_eq!(code, 0, "{out}");
    // The rfc5280 profile still has the rule (RFC 5280 4.2.1.1 is a MUST).
    let mut rfc = base.to_vec();
    rfc.truncate(base.len() - 2);
    let (code, _, _) = tlskit(&[&rfc[..], &["--profile", "rfc5280"]].concat());
    assert_eq!(code, 1);
    // Usage errors: unknown profile / rule, a rule rustls-webpki enforces.
    for bad in [
        &["--profile", "strict"][..],
        &["--allow", "no-such-rule"][..],
        &["--allow", "issuer-not-ca"][..],
    ] {
        let (code, _, err) = tlskit(&[&base[..], bad].concat());
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

#[test]
fn pinned_self_signed_certificate_and_trailing_dot() {
    let dir = tempfile::tempdir().unwrap();
    let mut lp = CertificateParams::new(vec!["dev.example".to_string()]).unwrap();
    lp.distinguished_name = DistinguishedName::new();
    lp.distinguished_name
        .push(DnType::CommonName, "dev.example");
    lp.not_before = ymd(2025, 1, 1);
    lp.not_after = ymd(2035, 1, 1);
    let c = lp.self_signed(&KeyPair::generate().unwrap()).unwrap();
    let path = dir.path().join("snakeoil.pem");
    std::fs::write(&path, c.pem()).unwrap();
    // store show: listed as pinned, not as a problem.
    let (code, out, err) = tlskit(&["store", "show", s(&path), "--list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pinned       1"), "{out}");
    assert!(out.contains("[pinned]"), "{out}");
    assert!(out.contains("problems     0"), "{out}");
    // Trusted for exactly itself, and a trailing-dot host name is the same host.
    for host in ["dev.example", "dev.example."] {
        let (code, out, _) = tlskit(&[
            "verify",
            "--roots",
            s(&path),
            "--cert",
            s(&path),
            "--host",
            host,
            "--at",
            AT,
        ]);
        assert_eq!(code, 0, "{host}: {out}");
    }
}

/// A SHA-1 signature reads as one sentence (it was ~1 KB of Debug output).
#[test]
fn sha1_refusal_is_a_sentence() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../verify/tests/data/interop");
    let (code, out, _) = tlskit(&[
        "verify",
        "--roots",
        &format!("{data}/root.pem"),
        "--cert",
        &format!("{data}/sha1.pem"),
        "--at",
        AT,
        "--json",
    ]);
    assert_eq!(code, 1, "{out}");
    let j = json(&out);
    assert_eq!(j.rule.as_deref(), Some("signature-algorithm"));
    let reason = j.reason.unwrap();
    assert!(reason.contains("sha1WithRSAEncryption"), "{reason}");
    assert!(reason.len() < 400 && !reason.contains("[6, "), "{reason}");
}
