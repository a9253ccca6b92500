//! tlskit-x509 through its public API, as an embedding program would use it: the DER
//! reader on certificates rcgen made (the fields a trust store indexes, malformed and
//! out-of-range input refused with a reason), distinguished names and text made safe to
//! print, RFC 3339 dates, the certificate rules, lint codes and severities, the median.
#![allow(clippy::unwrap_used)]

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer,
    KeyPair,
};
use x509_parser::prelude::{FromDer, X509Certificate};

use tlskit_x509::certrules::{self, CertRule};
use tlskit_x509::datetime::{civil_from_days, days_from_civil, rfc3339};
use tlskit_x509::der::{self, DerError};
use tlskit_x509::text::{escape, hex, Escaped};
use tlskit_x509::{dn, stats, LintCode, Severity};

/// A CA (2025-01-02 .. `ca_until`) and a leaf it signed (2025-03-04 .. 2030-01-02): DER.
fn ca_and_leaf(ca_until: (i32, u8, u8)) -> (Vec<u8>, Vec<u8>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut name = DistinguishedName::new();
    name.push(DnType::CountryName, "SE");
    name.push(DnType::OrganizationName, "Zoë, Inc.");
    name.push(DnType::CommonName, "Root \u{202e}AC");
    p.distinguished_name = name;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.not_before = date_time_ymd(2025, 1, 2);
    p.not_after = date_time_ymd(ca_until.0, ca_until.1, ca_until.2);
    let ca = p.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_ca_cert_der(ca.der(), &ca_key).unwrap();

    let leaf_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["www.example.com".to_string()]).unwrap();
    p.distinguished_name = DistinguishedName::new();
    p.distinguished_name
        .push(DnType::CommonName, "www.example.com");
    p.not_before = date_time_ymd(2025, 3, 4);
    p.not_after = date_time_ymd(2030, 1, 2);
    p.use_authority_key_identifier_extension = true;
    let leaf = p.signed_by(&leaf_key, &issuer).unwrap();
    (ca.der().to_vec(), leaf.der().to_vec())
}

fn parsed(der: &[u8]) -> X509Certificate<'_> {
    X509Certificate::from_der(der).unwrap().1
}

#[test]
fn the_der_reader_finds_what_a_store_indexes() {
    let (ca, leaf) = ca_and_leaf((2060, 5, 6));
    let f = der::parse_cert(&ca).unwrap();
    let v = f.view(&ca);
    let x = parsed(&ca);
    assert_eq!(v.subject, x.subject().as_raw());
    assert_eq!(v.issuer, v.subject, "self-signed");
    assert!(v.is_ca && der::cert_is_ca(&ca));
    assert_eq!(v.not_before, days_from_civil(2025, 1, 2) * 86_400);
    // 2060 is past 2049: a GeneralizedTime, read the same.
    assert_eq!(rfc3339(v.not_after), "2060-05-06T00:00:00Z");
    assert_eq!(v.not_after, x.validity().not_after.timestamp());
    let ski = v.ski.expect("a CA's subjectKeyIdentifier");
    assert!(!ski.is_empty());

    let l = der::cert_view(&leaf).unwrap();
    let xl = parsed(&leaf);
    assert!(!l.is_ca && !der::cert_is_ca(&leaf));
    assert_eq!(l.subject, xl.subject().as_raw());
    assert_eq!(l.issuer, v.subject, "the leaf's issuer is the CA's subject");
    assert_eq!(
        l.aki,
        Some(ski),
        "authorityKeyIdentifier is the CA's key id"
    );
    assert_eq!(rfc3339(l.not_before), "2025-03-04T00:00:00Z");
    assert_eq!(rfc3339(l.not_after), "2030-01-02T00:00:00Z");

    // The parts a signature check needs.
    let s = der::signed(&leaf).unwrap();
    assert_eq!(s.tbs, xl.tbs_certificate.as_ref());
    assert_eq!(s.sig, xl.signature_value.data.as_ref());
    let (alg, key) = der::spki(xl.public_key().raw).unwrap();
    assert!(!alg.is_empty());
    assert_eq!(key, xl.public_key().subject_public_key.data.as_ref());

    // Concatenated DER: where the first certificate ends.
    let mut two = ca.clone();
    two.extend_from_slice(&leaf);
    assert_eq!(der::first_element_len(&two).unwrap(), ca.len());
    let (body, rest) = der::sequence_contents(&two).unwrap();
    assert_eq!((body.len() < ca.len(), rest), (true, &leaf[..]));
}

#[test]
fn malformed_and_out_of_range_der_is_refused_with_a_reason() {
    let (_, leaf) = ca_and_leaf((2030, 1, 2));
    let e = der::parse_cert(b"\x02\x01\x00").unwrap_err();
    assert_eq!(e, DerError("not a SEQUENCE (not a certificate)"));
    assert_eq!(e.to_string(), "not a SEQUENCE (not a certificate)");
    assert!(
        der::parse_cert(&leaf[..leaf.len() - 1]).is_err(),
        "truncated"
    );
    let mut trailing = leaf.clone();
    trailing.push(0);
    assert_eq!(
        der::parse_cert(&trailing).unwrap_err(),
        DerError("trailing data after the certificate")
    );
    assert!(der::cert_view(&trailing).is_none() && !der::cert_is_ca(&trailing));
    assert!(der::signed(&trailing).is_none());

    // notAfter 2030-01-02 is the UTCTime 300102000000Z; month 13 is out of range.
    let at = leaf
        .windows(13)
        .position(|w| w == b"300102000000Z")
        .expect("the leaf's notAfter");
    let mut bad = leaf.clone();
    bad[at + 2..at + 4].copy_from_slice(b"13");
    assert_eq!(
        der::parse_cert(&bad).unwrap_err(),
        DerError("time out of range")
    );
    bad[at + 2..at + 4].copy_from_slice(b"0x");
    assert_eq!(
        der::parse_cert(&bad).unwrap_err(),
        DerError("bad digit in time")
    );
}

#[test]
fn names_render_as_rfc4514_with_escapes_and_keep_non_ascii() {
    let (ca, _) = ca_and_leaf((2030, 1, 2));
    let subject = der::cert_view(&ca).unwrap().subject.to_vec();
    // Most specific first; `,` escaped; ë kept; the right-to-left override as hex bytes,
    // so it cannot reverse what follows it on a terminal.
    assert_eq!(
        dn::display(&subject),
        "CN=Root \\E2\\80\\AEAC,O=Zoë\\, Inc.,C=SE"
    );
    assert_eq!(
        dn::rfc4514_der(&subject).as_deref(),
        Some("CN=Root \\E2\\80\\AEAC,O=Zoë\\, Inc.,C=SE")
    );
    assert_eq!(dn::display(b"\x30\x00"), "(empty name)");
    assert_eq!(dn::display(b"\x30\x05\x31"), "(unparsable name)");
    assert_eq!(dn::rfc4514_der(b"\x30\x05\x31"), None);
}

#[test]
fn control_and_bidi_characters_show_escaped_and_other_text_is_kept() {
    assert_eq!(escape("moc.elpmaxe\u{202e}"), "moc.elpmaxe\\u{202e}");
    assert_eq!(escape("\u{1b}[2J\u{7}x\r\n\t"), "\\x1b[2J\\x07x\\r\\n\\t");
    assert_eq!(escape("\u{85}\u{2066}\u{061c}"), "\\u{85}\\u{2066}\\u{61c}");
    assert!(matches!(
        escape("Zoë 日本"),
        std::borrow::Cow::Borrowed("Zoë 日本")
    ));
    assert_eq!(
        Escaped("a\u{202e}b\u{1b}c").to_string(),
        escape("a\u{202e}b\u{1b}c")
    );
    assert_eq!(hex(&[0x00, 0xab, 0x10]), "00ab10");
    // The redaction re-exported next to `escape`.
    assert_eq!(
        tlskit_x509::text::redact("pkcs11:token=t?pin-value=1234"),
        "pkcs11:token=t?pin-value=***"
    );
}

#[test]
fn dates_round_trip_through_day_numbers_and_rfc3339() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
    for (y, m, d) in [
        (1950, 1, 1),
        (1969, 12, 31),
        (2000, 2, 29),
        (2100, 3, 1),
        (9999, 12, 31),
    ] {
        let days = days_from_civil(y, m, d);
        assert_eq!(civil_from_days(days), (y, m, d));
        assert_eq!(
            rfc3339(days * 86_400 + 3_723),
            format!("{y:04}-{m:02}-{d:02}T01:02:03Z")
        );
    }
}

#[test]
fn certificate_rules_report_expiry_with_rfc3339_dates() {
    let (ca, _) = ca_and_leaf((2030, 1, 2));
    let x = parsed(&ca);
    let not_after = days_from_civil(2030, 1, 2) * 86_400;

    let after = certrules::check(&x, not_after + 1, None);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].rule, CertRule::Expired);
    assert_eq!(after[0].detail, "expired on 2030-01-02T00:00:00Z");

    let before = certrules::check(&x, days_from_civil(2025, 1, 1) * 86_400, None);
    assert_eq!(before[0].rule, CertRule::NotYetValid);
    assert_eq!(before[0].detail, "not valid before 2025-01-02T00:00:00Z");

    let soon = certrules::check(&x, not_after - 10 * 86_400, Some(30));
    assert_eq!(soon[0].rule, CertRule::ExpiresSoon);
    assert_eq!(soon[0].detail, "expires in 10 days (2030-01-02T00:00:00Z)");
    assert!(certrules::check(&x, not_after - 10 * 86_400, Some(5)).is_empty());
    assert!(certrules::check(&x, not_after - 10 * 86_400, None).is_empty());

    assert_eq!(
        certrules::weak_signature("1.2.840.113549.1.1.5"),
        Some((CertRule::Sha1Signature, "sha1WithRSAEncryption"))
    );
    assert_eq!(certrules::weak_signature("1.2.840.10045.4.3.2"), None);
    assert!(CertRule::Md5Signature.is_weak_signature() && !CertRule::WeakKey.is_weak_signature());
}

#[test]
fn lint_codes_and_severities_read_as_json_carries_them() {
    assert_eq!(LintCode::from(CertRule::WeakKey).as_str(), "weak-key");
    assert_eq!(LintCode::Rule(CertRule::Expired).to_string(), "expired");
    assert_eq!(LintCode::SameSubject.as_str(), "same-subject");
    assert_eq!(LintCode::CnNotInSans.as_str(), "cn-not-in-sans");
    assert_eq!(
        serde_json::to_string(&[
            LintCode::NotRegular,
            LintCode::Rule(CertRule::Sha1Signature)
        ])
        .unwrap(),
        r#"["not-regular","sha1-signature"]"#
    );
    assert_eq!(
        serde_json::to_string(&CertRule::NotYetValid).unwrap(),
        r#""not-yet-valid""#
    );
    assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
    assert_eq!(Severity::Warning.to_string(), "warning");
    assert_eq!(
        serde_json::to_string(&[Severity::Info, Severity::Error]).unwrap(),
        r#"["info","error"]"#
    );
}

#[test]
fn the_median_is_the_middle_or_the_mean_of_the_two_middles() {
    assert_eq!(stats::median(&mut []), None);
    assert_eq!(stats::median(&mut [7.0]), Some(7.0));
    assert_eq!(stats::median(&mut [9.0, 1.0, 5.0]), Some(5.0));
    let mut v = [4.0, 1.0, 3.0, 2.0];
    assert_eq!(stats::median(&mut v), Some(2.5));
    assert_eq!(v, [1.0, 2.0, 3.0, 4.0], "sorted in place");
}
