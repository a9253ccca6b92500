//! `lint`: findings about a certificate or chain (or a request), each with a severity.
//! Errors and warnings make `tlskit lint` exit 1; info findings do not.

use std::path::Path;

use ::time::{Duration, OffsetDateTime};
use serde::Serialize;
use tlskit_x509::certrules::{self, CertRule};
use tlskit_x509::LintCode;
use x509_parser::prelude::*;

use crate::constraints::{Constraints, Name};
use crate::inspect::san_info;
use crate::{dn, fsx, key, PkiError, Result};

/// How serious a finding is: the one scale of every lint (tlskit-x509's), so that
/// `tlskit lint` and `tlskit store lint` grade alike.
pub use tlskit_x509::Severity;

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Severity.
    pub severity: Severity,
    /// A stable identifier, e.g. `expired`, `weak-key` (serialized as its text).
    pub code: LintCode,
    /// What is wrong, in words.
    pub message: String,
    /// Position of the certificate (or request) in the file, from 1.
    pub index: usize,
    /// Its subject.
    pub subject: String,
}

/// Why bytes could not be linted at all.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LintInputError {
    /// The PEM text is malformed.
    #[error(transparent)]
    Pem(#[from] key::PemError),
    /// A certificate that does not parse.
    #[error("certificate #{index}: malformed: {source}")]
    Certificate {
        /// Its position in the file, from 1.
        index: usize,
        /// What x509-parser found.
        #[source]
        source: x509_parser::nom::Err<X509Error>,
    },
    /// Neither certificates nor a request.
    #[error("no certificate or request found")]
    Nothing,
    /// DER that parses as none of a certificate, a chain or a request.
    #[error("not a certificate, chain or request: {0}")]
    Unknown(#[source] x509_parser::nom::Err<X509Error>),
}

/// Longest validity CA/Browser Forum baseline requirements allow for TLS leaves.
pub const MAX_LEAF_DAYS: i64 = 398;

/// Lint a file at time `now`.
pub fn lint(path: &Path, now: OffsetDateTime) -> Result<Vec<Finding>> {
    let data = fsx::read(path)?;
    lint_bytes(&data, now).map_err(|e| PkiError::content(path, e))
}

/// Lint bytes (PEM or DER certificates, or a request).
pub fn lint_bytes(data: &[u8], now: OffsetDateTime) -> Result<Vec<Finding>, LintInputError> {
    let mut certs: Vec<Vec<u8>> = Vec::new();
    let mut requests: Vec<Vec<u8>> = Vec::new();
    match key::pem_blocks(data) {
        Some(Err(e)) => return Err(LintInputError::Pem(e)),
        Some(Ok(blocks)) => {
            for (label, der) in blocks {
                match label.as_str() {
                    "CERTIFICATE" | "TRUSTED CERTIFICATE" => certs.push(der),
                    "CERTIFICATE REQUEST" | "NEW CERTIFICATE REQUEST" => requests.push(der),
                    _ => {}
                }
            }
        }
        None => {
            let mut rest = data;
            while let Ok((r, _)) = X509Certificate::from_der(rest) {
                certs.push(rest[..rest.len() - r.len()].to_vec());
                rest = r;
                if rest.is_empty() {
                    break;
                }
            }
            if certs.is_empty() {
                requests.push(data.to_vec());
            }
        }
    }
    let mut parsed = Vec::new();
    for (i, der) in certs.iter().enumerate() {
        let (_, c) =
            X509Certificate::from_der(der).map_err(|source| LintInputError::Certificate {
                index: i + 1,
                source,
            })?;
        parsed.push(c);
    }
    let mut out = Vec::new();
    for i in 0..parsed.len() {
        lint_cert(&parsed, i, now, &mut out);
    }
    if parsed.is_empty() {
        if requests.is_empty() {
            return Err(LintInputError::Nothing);
        }
        for (i, der) in requests.iter().enumerate() {
            let (_, r) =
                X509CertificationRequest::from_der(der).map_err(LintInputError::Unknown)?;
            lint_request(&r, i + 1, &mut out);
        }
    }
    out.sort_by(|a, b| a.index.cmp(&b.index).then(b.severity.cmp(&a.severity)));
    Ok(out)
}

struct Sink<'a> {
    out: &'a mut Vec<Finding>,
    index: usize,
    subject: String,
}

impl Sink<'_> {
    fn add(&mut self, severity: Severity, code: LintCode, message: String) {
        self.out.push(Finding {
            severity,
            code,
            message,
            index: self.index,
            subject: self.subject.clone(),
        });
    }
}

/// A weak public key (shared rule), as an error.
fn weak_key(s: &mut Sink<'_>, spki: &SubjectPublicKeyInfo<'_>) {
    if let Some(why) = certrules::weak_key(spki) {
        s.add(Severity::Error, CertRule::WeakKey.into(), why);
    }
}

fn names_of<'a>(c: &X509Certificate<'a>) -> Option<Vec<GeneralName<'a>>> {
    c.subject_alternative_name()
        .ok()
        .flatten()
        .map(|s| s.value.general_names.clone())
}

fn san_checks(s: &mut Sink<'_>, sans: &[GeneralName<'_>], cn: Option<&str>) {
    for g in sans {
        let info = san_info(g);
        if let Some(p) = info.problem {
            s.add(
                Severity::Error,
                LintCode::MalformedName,
                format!("{} SAN {:?} is malformed: {p}", info.kind, info.value),
            );
        }
    }
    if let Some(cn) = cn {
        let matches = sans.iter().any(|g| match g {
            GeneralName::DNSName(d) => tlskit_names::DnsName::parse(cn)
                .map(|n| n.ascii().eq_ignore_ascii_case(d))
                .unwrap_or(false),
            GeneralName::IPAddress(_) => san_info(g).value == cn,
            GeneralName::RFC822Name(e) => e.eq_ignore_ascii_case(cn),
            _ => false,
        });
        if !matches {
            s.add(
                Severity::Warning,
                LintCode::CnNotInSans,
                format!("the CN {cn:?} is not among the subjectAltNames"),
            );
        }
    }
}

fn lint_cert(chain: &[X509Certificate<'_>], i: usize, now: OffsetDateTime, out: &mut Vec<Finding>) {
    let c = &chain[i];
    let mut s = Sink {
        out,
        index: i + 1,
        subject: dn::display(c.subject()),
    };
    let nb = c.validity().not_before.to_datetime();
    let na = c.validity().not_after.to_datetime();
    let bc = c
        .basic_constraints()
        .ok()
        .flatten()
        .map(|b| b.value.clone());
    let is_ca = bc.as_ref().is_some_and(|b| b.ca);
    let self_issued = c.subject().as_raw() == c.issuer().as_raw();
    // Validity, key and signature hash: the rules shared with `store lint`.
    for f in certrules::check(c, now.unix_timestamp(), Some(14)) {
        let severity = match f.rule {
            CertRule::ExpiresSoon => Severity::Warning,
            // A root's self-signature is not checked by clients.
            r if r.is_weak_signature() && self_issued && is_ca => Severity::Info,
            _ => Severity::Error,
        };
        let detail = if f.rule.is_weak_signature() {
            if severity == Severity::Info {
                format!(
                    "{} on a self-signed root (clients do not check it)",
                    f.detail
                )
            } else {
                format!("{}; clients refuse SHA-1, MD5 and MD2", f.detail)
            }
        } else {
            f.detail
        };
        s.add(severity, f.rule.into(), detail);
    }
    let sans = names_of(c);
    let cn = dn::common_name(c.subject());

    if !is_ca {
        let days = (na - nb).whole_seconds() as f64 / 86400.0;
        // Inclusive of both ends (RFC 5280), as the CA/B Forum counts it.
        if na - nb + Duration::seconds(1) > Duration::days(MAX_LEAF_DAYS) {
            s.add(
                Severity::Warning,
                LintCode::ValidityTooLong,
                format!(
                    "validity of {days:.0} days is longer than the {MAX_LEAF_DAYS} days publicly trusted TLS certificates may have"
                ),
            );
        }
        match &sans {
            None => s.add(
                Severity::Error,
                LintCode::MissingSan,
                "no subjectAltName extension: TLS clients ignore the CN and will reject it".into(),
            ),
            Some(v) if v.is_empty() => s.add(
                Severity::Error,
                LintCode::MissingSan,
                "empty subjectAltName".into(),
            ),
            Some(v) => san_checks(&mut s, v, cn.as_deref()),
        }
    } else if let Some(v) = &sans {
        san_checks(&mut s, v, None);
    }
    if is_ca {
        match c.key_usage() {
            Ok(Some(ku)) if !ku.value.key_cert_sign() => s.add(
                Severity::Error,
                LintCode::CaWithoutKeycertsign,
                "CA certificate whose keyUsage lacks keyCertSign".into(),
            ),
            Ok(None) => s.add(
                Severity::Warning,
                LintCode::CaWithoutKeyusage,
                "CA certificate without a keyUsage extension (RFC 5280 requires keyCertSign)"
                    .into(),
            ),
            _ => {}
        }
        if i == 0 && chain.len() > 1 {
            s.add(
                Severity::Error,
                LintCode::LeafIsCa,
                "the first (leaf) certificate of the chain has the CA flag".into(),
            );
        }
    } else if let Ok(Some(ku)) = c.key_usage() {
        if ku.value.key_cert_sign() {
            s.add(
                Severity::Error,
                LintCode::LeafKeycertsign,
                "keyCertSign without the CA flag".into(),
            );
        }
    }
    if i > 0 && !is_ca {
        s.add(
            Severity::Error,
            LintCode::IntermediateNotCa,
            "a certificate after the leaf is not a CA certificate".into(),
        );
    }
    if i + 1 < chain.len() && chain[i + 1].subject().as_raw() != c.issuer().as_raw() && !self_issued
    {
        s.add(
            Severity::Warning,
            LintCode::ChainOrder,
            format!(
                "the next certificate ({}) is not this one's issuer ({})",
                dn::display(chain[i + 1].subject()),
                dn::display(c.issuer())
            ),
        );
    }
    let serial = c.raw_serial();
    if serial.len() > 20
        || serial.first().is_some_and(|b| b & 0x80 != 0)
        || serial.iter().all(|b| *b == 0)
    {
        s.add(
            Severity::Warning,
            LintCode::BadSerial,
            "serial number is zero, negative or longer than 20 bytes (RFC 5280)".into(),
        );
    }

    // Name constraints of every issuer found in the file.
    let mut cur = c;
    let mut seen = 0;
    while let Some(issuer) = chain
        .iter()
        .find(|p| p.subject().as_raw() == cur.issuer().as_raw() && !std::ptr::eq(*p, cur))
    {
        seen += 1;
        if seen > chain.len() {
            break;
        }
        if let Some(nc) = Constraints::of(issuer) {
            for g in sans.iter().flatten() {
                let g = g.clone();
                let r = match g {
                    GeneralName::DNSName(d) => nc.check(&Name::Dns(d)),
                    GeneralName::RFC822Name(e) => nc.check(&Name::Email(e)),
                    GeneralName::IPAddress(b) if b.len() == 4 || b.len() == 16 => {
                        let ip = san_info(&g).value.parse().ok();
                        ip.map_or(Ok(()), |ip| nc.check(&Name::Ip(ip)))
                    }
                    _ => Ok(()),
                };
                if let Err(e) = r {
                    s.add(Severity::Error, LintCode::NameConstraints, e.to_string());
                }
            }
        }
        cur = issuer;
    }
    if chain.len() == 1 && self_issued && !is_ca {
        s.add(
            Severity::Info,
            LintCode::SelfSigned,
            "self-signed certificate: clients must trust it explicitly".into(),
        );
    }
}

fn lint_request(r: &X509CertificationRequest<'_>, index: usize, out: &mut Vec<Finding>) {
    let info = &r.certification_request_info;
    let mut s = Sink {
        out,
        index,
        subject: dn::display(&info.subject),
    };
    if r.verify_signature().is_err() {
        s.add(
            Severity::Error,
            LintCode::BadSignature,
            "the request's self-signature does not verify".into(),
        );
    }
    weak_key(&mut s, &info.subject_pki);
    let mut sans = None;
    if let Some(exts) = r.requested_extensions() {
        for e in exts {
            if let ParsedExtension::SubjectAlternativeName(n) = e {
                sans = Some(n.general_names.clone());
            }
        }
    }
    match sans {
        None => s.add(
            Severity::Warning,
            LintCode::MissingSan,
            "the request asks for no subjectAltName".into(),
        ),
        Some(v) => san_checks(&mut s, &v, dn::common_name(&info.subject).as_deref()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

    fn codes(pem: &str, now: OffsetDateTime) -> Vec<&'static str> {
        lint_bytes(pem.as_bytes(), now)
            .unwrap()
            .into_iter()
            .map(|f| f.code.as_str())
            .collect()
    }

    #[test]
    fn clean_leaf_has_only_info() {
        let key = KeyPair::generate().unwrap();
        let n = crate::cert::names("CN=a.example", &[]).unwrap();
        let pem = crate::cert::self_signed_pem(&key, &n, 90, false).unwrap();
        assert_eq!(codes(&pem, OffsetDateTime::now_utc()), vec!["self-signed"]);
        let later = OffsetDateTime::now_utc() + Duration::days(200);
        assert!(codes(&pem, later).contains(&"expired"));
    }

    #[test]
    fn finds_long_validity_missing_san_and_cn_mismatch() {
        let key = KeyPair::generate().unwrap();
        let n = crate::cert::names("CN=My Laptop", &[]).unwrap();
        let pem = crate::cert::self_signed_pem(&key, &n, 825, false).unwrap();
        let c = codes(&pem, OffsetDateTime::now_utc());
        assert!(
            c.contains(&"validity-too-long") && c.contains(&"missing-san"),
            "{c:?}"
        );

        let n = crate::cert::names("CN=a.example", &["dns:b.example".into()]).unwrap();
        let pem = crate::cert::self_signed_pem(&key, &n, 30, false).unwrap();
        assert!(codes(&pem, OffsetDateTime::now_utc()).contains(&"cn-not-in-sans"));
    }

    #[test]
    fn malformed_a_label_and_ca_without_keycertsign() {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(vec!["xn--zz.example".to_string()]).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let pem = p.self_signed(&key).unwrap().pem();
        let c = codes(&pem, OffsetDateTime::now_utc());
        assert!(c.contains(&"malformed-name"), "{c:?}");
        assert!(c.contains(&"ca-without-keycertsign"), "{c:?}");
    }
}
