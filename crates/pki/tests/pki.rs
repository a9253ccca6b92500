//! tlskit-pki through its public API, as a program that runs its own small PKI would use
//! it: keys, a request with its SANs, a CA that signs it (SANs and name constraints
//! kept), inspection of what was made, lint, and a PKCS#12 round trip.
#![allow(clippy::unwrap_used)]
// Options are set field by field on `default()`, as a caller must once they are
// `#[non_exhaustive]` (a struct literal would not compile there).
#![allow(clippy::field_reassign_with_default)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rcgen::PublicKeyData;

use tlskit_pki::ca::{self, InitOptions, IssueOptions, Profile};
use tlskit_pki::inspect::{describe, describe_bytes, Item};
use tlskit_pki::key::{self, KeyType};
use tlskit_pki::lint::{lint, lint_bytes, Severity};
use tlskit_pki::{cert, p12, PkiError};
use x509_parser::prelude::{FromDer, X509Certificate};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

/// The first certificate of a PEM text, DER.
fn first_der(pem: &str) -> Vec<u8> {
    let begin = "-----BEGIN CERTIFICATE-----";
    let end = "-----END CERTIFICATE-----";
    let start = pem.find(begin).unwrap() + begin.len();
    let stop = pem[start..].find(end).unwrap() + start;
    let b64: String = pem[start..stop].split_whitespace().collect();
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

#[test]
fn keys_are_written_private_and_never_replaced_silently() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("k.pem");
    key::generate_to_file(KeyType::P256, &p, false).unwrap();
    assert_eq!(mode(&p), 0o600);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.starts_with("-----BEGIN PRIVATE KEY-----\n"),
        "PKCS#8 PEM"
    );
    let e = key::generate_to_file(KeyType::P256, &p, false).unwrap_err();
    assert!(matches!(e, PkiError::Exists { .. }), "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), text, "left as it was");
    key::generate_to_file(KeyType::Ed25519, &p, true).unwrap();
    assert_ne!(
        std::fs::read_to_string(&p).unwrap(),
        text,
        "--force replaces"
    );

    let k = key::load(&p).unwrap();
    assert_eq!(k.algorithm(), &rcgen::PKCS_ED25519);
    assert_eq!("p384".parse::<KeyType>().unwrap(), KeyType::P384);
    assert!("dsa".parse::<KeyType>().is_err());
    // A private key is described by its public half only.
    let described = describe(&p).unwrap();
    match &described.items[..] {
        [Item::PrivateKey(k)] => assert_eq!(k.key.as_ref().unwrap().kind, "ed25519"),
        other => panic!("{other:?}"),
    }
    assert!(!format!("{described:?}").contains("PRIVATE KEY"));
}

#[test]
fn a_ca_signs_a_request_keeping_its_names() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("ca");
    let mut o = InitOptions::default();
    o.subject = Some("CN=Test Root,O=tlskit tests".into());
    o.days = 3650;
    o.permit_dns = vec!["example.test".into()];
    let ca_pem = ca::init(&dir, &o).unwrap();
    let ca_der = first_der(&ca_pem);
    // A second init in the same directory is refused.
    assert!(ca::init(&dir, &o).is_err());

    // A request: P-384 key, a subject, DNS (one as U-labels) and IP SANs.
    let key_path = d.path().join("leaf.key");
    key::generate_to_file(KeyType::P384, &key_path, false).unwrap();
    let kp = key::load(&key_path).unwrap();
    let names = cert::names(
        "CN=www.example.test,O=Example",
        &[
            "dns:www.example.test".into(),
            "dns:bücher.example.test".into(),
            "ip:192.0.2.7".into(),
        ],
    )
    .unwrap();
    let csr = cert::csr_pem(&kp, &names).unwrap();
    let csr_path = d.path().join("leaf.csr");
    std::fs::write(&csr_path, &csr).unwrap();
    match &describe_bytes(csr.as_bytes()).unwrap().items[..] {
        [Item::Request(r)] => {
            assert!(r.signature_valid);
            assert_eq!(r.key.kind, "ec");
            let sans: Vec<&str> = r.sans.iter().map(|s| s.value.as_str()).collect();
            assert_eq!(
                sans,
                [
                    "www.example.test",
                    "xn--bcher-kva.example.test",
                    "192.0.2.7"
                ]
            );
        }
        other => panic!("{other:?}"),
    }

    let mut io = IssueOptions::default();
    io.profile = Profile::Server;
    io.days = Some(90);
    let (pem, entry) = ca::issue(&dir, &csr_path, &io).unwrap();
    assert_eq!(
        entry.sans,
        [
            "dns:www.example.test",
            "dns:xn--bcher-kva.example.test",
            "ip:192.0.2.7"
        ]
    );
    assert_eq!(entry.profile, "server");
    let leaf_der = first_der(&pem);
    let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
    let (_, root) = X509Certificate::from_der(&ca_der).unwrap();
    leaf.verify_signature(Some(root.public_key())).unwrap();
    assert_eq!(
        leaf.public_key().raw,
        kp.subject_public_key_info().as_slice()
    );

    match &describe_bytes(pem.as_bytes()).unwrap().items[..] {
        [Item::Certificate(c)] => {
            assert_eq!(c.kind, "certificate");
            assert!(c.subject.contains("www.example.test"), "{}", c.subject);
            assert!(c.issuer.contains("Test Root"), "{}", c.issuer);
            assert!(!c.is_ca);
            assert!(!c.self_issued);
            assert_eq!(c.serial, entry.serial);
            let sans: Vec<(&str, &str)> = c
                .sans
                .iter()
                .map(|s| (s.kind.as_str(), s.value.as_str()))
                .collect();
            assert_eq!(
                sans,
                [
                    ("dns", "www.example.test"),
                    ("dns", "xn--bcher-kva.example.test"),
                    ("ip", "192.0.2.7")
                ]
            );
            assert_eq!(c.sans[1].unicode, "bücher.example.test");
            assert!(
                c.extended_key_usage
                    .iter()
                    .any(|u| u.contains("serverAuth")),
                "{:?}",
                c.extended_key_usage
            );
            assert!(c.authority_key_id.is_some());
        }
        other => panic!("{other:?}"),
    }
    match &describe_bytes(ca_pem.as_bytes()).unwrap().items[..] {
        [Item::Certificate(c)] => {
            assert!(c.is_ca && c.self_issued);
            let nc = c.name_constraints.as_ref().unwrap();
            assert_eq!(nc.permitted.len(), 1, "{nc:?}");
            assert!(nc.permitted[0].contains("example.test"), "{nc:?}");
        }
        other => panic!("{other:?}"),
    }

    let index = ca::index(&dir).unwrap();
    assert_eq!(index.len(), 1);
    assert_eq!(index[0].serial, entry.serial);

    // Outside the permitted subtree: refused, and nothing is added to the index.
    let other = cert::names("CN=evil.other.test", &["dns:evil.other.test".into()]).unwrap();
    let other_csr = d.path().join("other.csr");
    std::fs::write(&other_csr, cert::csr_pem(&kp, &other).unwrap()).unwrap();
    let e = ca::issue(&dir, &other_csr, &io).unwrap_err();
    assert!(e.to_string().starts_with("refusing to issue"), "{e}");
    assert!(e.to_string().contains("evil.other.test"), "{e}");
    assert_eq!(ca::index(&dir).unwrap().len(), 1);
}

#[test]
fn lint_finds_what_a_client_would_object_to() {
    let kp = rcgen::KeyPair::generate().unwrap();
    // A self-signed leaf valid ten years: too long for a public TLS leaf, and self-signed.
    let names = cert::names("CN=long.example.test", &[]).unwrap();
    assert!(names.san_from_cn, "the CN becomes the one SAN");
    let pem = cert::self_signed_pem(&kp, &names, 3650, false).unwrap();
    let findings = lint_bytes(pem.as_bytes(), now()).unwrap();
    let codes: Vec<String> = findings.iter().map(|f| f.code.to_string()).collect();
    assert!(
        codes.contains(&"validity-too-long".to_string()),
        "{codes:?}"
    );
    assert!(codes.contains(&"self-signed".to_string()), "{codes:?}");
    let long = findings
        .iter()
        .find(|f| f.code.to_string() == "validity-too-long")
        .unwrap();
    assert_eq!(long.severity, Severity::Warning);
    assert_eq!(long.index, 1);
    assert!(long.message.contains("3650 days"), "{}", long.message);
    assert!(
        long.subject.contains("long.example.test"),
        "{}",
        long.subject
    );

    // 90 days: no validity finding.
    let short = cert::self_signed_pem(&kp, &names, 90, false).unwrap();
    let findings = lint_bytes(short.as_bytes(), now()).unwrap();
    assert!(
        findings
            .iter()
            .all(|f| f.code.to_string() != "validity-too-long"),
        "{findings:?}"
    );

    // A file that does not exist, and one that is not PEM: errors naming the file.
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing.pem");
    assert!(lint(&missing, now())
        .unwrap_err()
        .to_string()
        .starts_with(&missing.display().to_string()));
    let junk = d.path().join("junk.pem");
    std::fs::write(&junk, "-----BEGIN CERTIFICATE-----\n!!!\n").unwrap();
    assert!(lint(&junk, now()).is_err());
}

#[test]
fn pkcs12_export_and_import_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let key_path = d.path().join("k.pem");
    key::generate_to_file(KeyType::P256, &key_path, false).unwrap();
    let kp = key::load(&key_path).unwrap();
    let names = cert::names("CN=p12.example.test", &[]).unwrap();
    let cert_path = d.path().join("c.pem");
    std::fs::write(
        &cert_path,
        cert::self_signed_pem(&kp, &names, 30, false).unwrap(),
    )
    .unwrap();

    let out = d.path().join("bundle.p12");
    p12::export_to_file(&key_path, &cert_path, "correct horse", &out, false).unwrap();
    assert_eq!(mode(&out), 0o600, "the bundle holds the key");
    let imported = p12::import(&out, "correct horse").unwrap();
    assert_eq!(imported.key_pkcs8, key::pkcs8_der(&kp));
    assert_eq!(imported.certs, p12::read_certs(&cert_path).unwrap());

    let e = p12::import(&out, "wrong").unwrap_err();
    assert!(matches!(e, PkiError::WrongPassword { .. }), "{e}");
    assert!(e.to_string().contains("wrong password"), "{e}");

    // A key that is not the certificate's: refused before anything is written.
    let other = d.path().join("other.pem");
    key::generate_to_file(KeyType::P256, &other, false).unwrap();
    let out2 = d.path().join("mismatch.p12");
    let e = p12::export_to_file(&other, &cert_path, "pw", &out2, false).unwrap_err();
    assert!(matches!(e, PkiError::Mismatch(_)), "{e}");
    assert!(!out2.exists());
}
