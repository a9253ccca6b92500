//! Certificate signing requests and self-signed certificates (rcgen writes them).

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, ExtendedKeyUsagePurpose, IsCa,
    KeyUsagePurpose, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};

use crate::{dn, san, PkiError, Result};

/// Subject and SANs resolved from user input.
#[derive(Debug, Clone)]
pub struct Names {
    /// The subject.
    pub subject: DistinguishedName,
    /// The subjectAltNames (A-labels).
    pub sans: Vec<SanType>,
    /// Set when the CN was used as the only SAN because none was given.
    pub san_from_cn: bool,
    /// Set to (as typed, as written) when a CN given as U-labels was written as the
    /// A-label form of the matching DNS SAN (the CA/Browser Forum requires the CN to be
    /// one of the SANs, byte for byte).
    pub cn_as_a_label: Option<(String, String)>,
}

/// Parse `--subject` and `--san` values. When no SAN is given and the CN is a DNS name
/// or IP address, the CN becomes the one SAN (clients ignore the CN).
pub fn names(subject: &str, sans: &[String]) -> Result<Names> {
    let mut subject = dn::parse(subject)?;
    let mut parsed = san::parse_all(sans)?;
    let mut san_from_cn = false;
    if parsed.is_empty() {
        if let Some(s) = san::default_from_cn(&subject) {
            parsed.push(s);
            san_from_cn = true;
        }
    }
    let cn_as_a_label = cn_to_a_label(&mut subject, &parsed);
    Ok(Names {
        subject,
        sans: parsed,
        san_from_cn,
        cn_as_a_label,
    })
}

/// A CN typed as U-labels that names one of the DNS SANs is written as that SAN's
/// A-labels, never raw. Any other CN (a person's name, a label) is kept as typed.
fn cn_to_a_label(subject: &mut DistinguishedName, sans: &[SanType]) -> Option<(String, String)> {
    let typed = match subject.get(&rcgen::DnType::CommonName)? {
        rcgen::DnValue::Utf8String(s) => s.clone(),
        _ => return None,
    };
    if typed.is_ascii() {
        return None;
    }
    let name = tlskit_names::DnsName::parse(&typed).ok()?;
    let matches_san = sans
        .iter()
        .any(|s| matches!(s, SanType::DnsName(n) if n.as_str() == name.ascii()));
    if !matches_san {
        return None;
    }
    let written = name.ascii().to_string();
    subject.push(
        rcgen::DnType::CommonName,
        rcgen::DnValue::Utf8String(written.clone()),
    );
    Some((typed, written))
}

/// Whether a key is RSA (RSA leaf keys also get keyEncipherment).
pub(crate) fn is_rsa(key: &impl rcgen::PublicKeyData) -> bool {
    let alg = key.algorithm();
    [
        &rcgen::PKCS_RSA_SHA256,
        &rcgen::PKCS_RSA_SHA384,
        &rcgen::PKCS_RSA_SHA512,
    ]
    .contains(&alg)
}

/// A random positive serial number of 16 bytes (first byte 0x01..=0x7f, so the DER
/// INTEGER is exactly 16 bytes and never negative).
pub(crate) fn random_serial() -> Result<Vec<u8>> {
    let mut b = [0u8; 16];
    aws_lc_rs::rand::fill(&mut b)
        .map_err(|_| PkiError::Other("the system random generator failed".into()))?;
    b[0] &= 0x7f;
    if b[0] == 0 {
        b[0] = 1;
    }
    Ok(b.to_vec())
}

/// Validity starting one minute ago (clock skew) and lasting `days` days, whole seconds. At least one
/// day, and it must end before the year 9999 (the last GeneralizedTime year).
pub(crate) fn validity(days: u32) -> Result<(OffsetDateTime, OffsetDateTime)> {
    if days == 0 {
        return Err(PkiError::Refused(
            "the validity must be at least 1 day".into(),
        ));
    }
    let now = OffsetDateTime::now_utc();
    let now = now - Duration::nanoseconds(i64::from(now.nanosecond()));
    let start = now - Duration::minutes(1);
    // RFC 5280 validity is inclusive of both ends: `days` days means the last second is
    // start + days - 1s (so `--days 398` stays within the CA/B Forum limit).
    let end = start
        .checked_add(Duration::days(i64::from(days)) - Duration::seconds(1))
        .filter(|e| e.year() < 9999)
        .ok_or_else(|| PkiError::Refused(format!("{days} days is too long a validity")))?;
    Ok((start, end))
}

/// Usages of an end-entity certificate.
pub(crate) fn set_leaf_usages(p: &mut CertificateParams, rsa: bool, server: bool, client: bool) {
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    if rsa {
        p.key_usages.push(KeyUsagePurpose::KeyEncipherment);
    }
    p.extended_key_usages.clear();
    if server {
        p.extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
    }
    if client {
        p.extended_key_usages
            .push(ExtendedKeyUsagePurpose::ClientAuth);
    }
}

/// Usages of a CA certificate.
pub(crate) fn set_ca_usages(p: &mut CertificateParams, path_len: Option<u8>) {
    p.is_ca = IsCa::Ca(match path_len {
        Some(n) => BasicConstraints::Constrained(n),
        None => BasicConstraints::Unconstrained,
    });
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.extended_key_usages.clear();
}

/// Build a PKCS#10 request (PEM) signed by `key`.
pub fn csr_pem(key: &impl rcgen::SigningKey, names: &Names) -> Result<String> {
    let mut p = CertificateParams::default();
    p.distinguished_name = names.subject.clone();
    p.subject_alt_names = names.sans.clone();
    p.serialize_request(key)
        .and_then(|r| r.pem())
        .map_err(PkiError::rcgen("building the request"))
}

/// Build a self-signed certificate (PEM). `ca` makes it a CA (keyCertSign, no EKU);
/// otherwise a TLS server+client leaf.
pub fn self_signed_pem(
    key: &impl rcgen::SigningKey,
    names: &Names,
    days: u32,
    ca: bool,
) -> Result<String> {
    let mut p = CertificateParams::default();
    p.distinguished_name = names.subject.clone();
    p.subject_alt_names = names.sans.clone();
    p.serial_number = Some(SerialNumber::from_slice(&random_serial()?));
    (p.not_before, p.not_after) = validity(days)?;
    if ca {
        set_ca_usages(&mut p, None);
    } else {
        set_leaf_usages(&mut p, is_rsa(key), true, true);
    }
    p.self_signed(key)
        .map(|c| c.pem())
        .map_err(PkiError::rcgen("signing the certificate"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use x509_parser::prelude::*;

    #[test]
    fn csr_keeps_a_labels_and_verifies() {
        let key = rcgen::KeyPair::generate().unwrap();
        let n = names("CN=räksmörgås.com,O=Ö", &["dns:räksmörgås。com".into()]).unwrap();
        let pem = csr_pem(&key, &n).unwrap();
        let blocks = crate::key::pem_blocks(pem.as_bytes()).unwrap().unwrap();
        let (_, req) = X509CertificationRequest::from_der(&blocks[0].1).unwrap();
        req.verify_signature().unwrap();
        let mut dns = Vec::new();
        for ext in req.requested_extensions().unwrap() {
            if let ParsedExtension::SubjectAlternativeName(s) = ext {
                for g in &s.general_names {
                    if let GeneralName::DNSName(d) = g {
                        dns.push(d.to_string());
                    }
                }
            }
        }
        assert_eq!(dns, vec!["xn--rksmrgs-5wao1o.com"]);
    }

    #[test]
    fn cn_becomes_san_when_none_given() {
        let n = names("CN=räksmörgås。com", &["dns:räksmörgås.com".into()]).unwrap();
        assert_eq!(
            n.cn_as_a_label,
            Some(("räksmörgås。com".into(), "xn--rksmrgs-5wao1o.com".into()))
        );
        assert_eq!(
            n.subject.get(&rcgen::DnType::CommonName),
            Some(&rcgen::DnValue::Utf8String("xn--rksmrgs-5wao1o.com".into()))
        );
        let n = names("CN=Björn Svensson", &["dns:b.example".into()]).unwrap();
        assert_eq!(n.cn_as_a_label, None, "a person's name is kept as typed");
        let n = names("CN=www.example.com", &[]).unwrap();
        assert!(n.san_from_cn);
        assert_eq!(n.sans.len(), 1);
        let n = names("CN=My Laptop", &[]).unwrap();
        assert!(n.sans.is_empty());
    }

    #[test]
    fn serials_are_positive_16_bytes() {
        for _ in 0..100 {
            let s = random_serial().unwrap();
            assert_eq!(s.len(), 16);
            assert!(s[0] >= 1 && s[0] <= 0x7f);
        }
    }
}
