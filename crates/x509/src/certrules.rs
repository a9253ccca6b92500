//! The one set of certificate rules that both `tlskit lint` (a certificate, a chain, a
//! request: `tlskit_pki::lint`) and `tlskit store lint` (every anchor of a trust store:
//! `tlskit_store::lint`) apply: validity, key strength and signature hash. Each finding has a
//! typed [`CertRule`] whose stable code is what `--json` carries; severities and the
//! checks only one of them makes (SANs and chain order for `lint`, duplicates and shared
//! subjects for `store lint`) stay with each caller.

use x509_parser::certificate::X509Certificate;
use x509_parser::oid_registry as o;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

/// A certificate rule. `code()` is stable (JSON, scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CertRule {
    /// Past its notAfter.
    Expired,
    /// Before its notBefore.
    NotYetValid,
    /// Within the caller's warning window before notAfter.
    ExpiresSoon,
    /// RSA under 2048 bits, an elliptic curve under 256 bits, or DSA.
    WeakKey,
    /// Signed with SHA-1.
    Sha1Signature,
    /// Signed with MD5.
    Md5Signature,
    /// Signed with MD2.
    Md2Signature,
}

impl CertRule {
    /// The stable code, e.g. `weak-key`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::NotYetValid => "not-yet-valid",
            Self::ExpiresSoon => "expires-soon",
            Self::WeakKey => "weak-key",
            Self::Sha1Signature => "sha1-signature",
            Self::Md5Signature => "md5-signature",
            Self::Md2Signature => "md2-signature",
        }
    }

    /// A broken signature hash (SHA-1, MD5, MD2).
    pub fn is_weak_signature(self) -> bool {
        matches!(
            self,
            Self::Sha1Signature | Self::Md5Signature | Self::Md2Signature
        )
    }
}

/// One finding: the rule and what was found, in words (dates in RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFinding {
    /// The rule.
    pub rule: CertRule,
    /// What was found.
    pub detail: String,
}

/// The signature algorithms with a broken hash: (OID, rule, name).
const WEAK_SIGNATURES: &[(&str, CertRule, &str)] = &[
    (
        "1.2.840.113549.1.1.5",
        CertRule::Sha1Signature,
        "sha1WithRSAEncryption",
    ),
    (
        "1.2.840.10045.4.1",
        CertRule::Sha1Signature,
        "ecdsa-with-SHA1",
    ),
    (
        "1.2.840.10040.4.3",
        CertRule::Sha1Signature,
        "dsa-with-SHA1",
    ),
    (
        "1.3.14.3.2.29",
        CertRule::Sha1Signature,
        "sha1WithRSASignature (OIW)",
    ),
    (
        "1.2.840.113549.1.1.4",
        CertRule::Md5Signature,
        "md5WithRSAEncryption",
    ),
    (
        "1.2.840.113549.1.1.2",
        CertRule::Md2Signature,
        "md2WithRSAEncryption",
    ),
];

/// The rule and name of a signature algorithm with a broken hash, by dotted OID
/// (`1.2.840.113549.1.1.5` is `sha1WithRSAEncryption`); `None` for any other algorithm.
/// Also what tlskit-verify names when rustls-webpki refuses such a signature.
pub fn weak_signature(oid: &str) -> Option<(CertRule, &'static str)> {
    WEAK_SIGNATURES
        .iter()
        .find(|(o, _, _)| *o == oid)
        .map(|&(_, rule, name)| (rule, name))
}

/// Apply the rules to `cert` at `now` (Unix seconds). `soon_days`: report
/// [`CertRule::ExpiresSoon`] when notAfter is fewer days away (`None`: never).
pub fn check(cert: &X509Certificate<'_>, now: i64, soon_days: Option<i64>) -> Vec<CertFinding> {
    let mut out = Vec::new();
    let mut add = |rule, detail: String| out.push(CertFinding { rule, detail });
    let (nb, na) = (
        cert.validity().not_before.timestamp(),
        cert.validity().not_after.timestamp(),
    );
    if now > na {
        add(
            CertRule::Expired,
            format!("expired on {}", crate::datetime::rfc3339(na)),
        );
    } else if now < nb {
        add(
            CertRule::NotYetValid,
            format!("not valid before {}", crate::datetime::rfc3339(nb)),
        );
    } else if let Some(days) = soon_days {
        if na - now < days * 86_400 {
            add(
                CertRule::ExpiresSoon,
                format!(
                    "expires in {} days ({})",
                    (na - now) / 86_400,
                    crate::datetime::rfc3339(na)
                ),
            );
        }
    }
    if let Some(why) = weak_key(cert.public_key()) {
        add(CertRule::WeakKey, why);
    }
    let oid = cert.signature_algorithm.algorithm.to_id_string();
    if let Some((rule, name)) = weak_signature(&oid) {
        add(rule, format!("signed with {name} ({oid}), a broken hash"));
    }
    out
}

/// The [`CertRule::WeakKey`] rule on a public key (a certificate's or a request's): what
/// is weak about it, or `None`.
pub fn weak_key(spki: &SubjectPublicKeyInfo<'_>) -> Option<String> {
    if spki.algorithm.algorithm == o::OID_SIG_ED25519
        || spki.algorithm.algorithm == o::OID_SIG_ED448
    {
        return None;
    }
    match spki.parsed() {
        Ok(PublicKey::RSA(r)) if r.key_size() < 2048 => Some(format!(
            "RSA key of {} bits (at least 2048 needed)",
            r.key_size()
        )),
        Ok(PublicKey::EC(ec)) if ec.key_size() < 256 => Some(format!(
            "EC key of {} bits (at least 256 needed)",
            ec.key_size()
        )),
        Ok(PublicKey::DSA(_)) => Some("DSA key (not usable in TLS 1.3)".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(CertRule::Md2Signature.code(), "md2-signature");
        assert_eq!(CertRule::Md5Signature.code(), "md5-signature");
        assert_eq!(CertRule::Sha1Signature.code(), "sha1-signature");
        assert!(CertRule::Md2Signature.is_weak_signature());
        assert!(!CertRule::WeakKey.is_weak_signature());
        // MD2 is not MD5 (store lint used to call it md5-signature).
        let md2 = weak_signature("1.2.840.113549.1.1.2");
        assert_eq!(md2, Some((CertRule::Md2Signature, "md2WithRSAEncryption")));
        assert_eq!(weak_signature("1.2.840.10045.4.3.2"), None); // ecdsa-with-SHA256
    }

    #[test]
    fn validity_and_keys() {
        use x509_parser::prelude::FromDer;
        let mut p = rcgen::CertificateParams::new(vec!["a.example".into()]).expect("params");
        p.not_before = rcgen::date_time_ymd(2020, 1, 1);
        p.not_after = rcgen::date_time_ymd(2030, 1, 1);
        let key = rcgen::KeyPair::generate().expect("key");
        let c = p.self_signed(&key).expect("cert");
        let (_, x) = X509Certificate::from_der(c.der()).expect("parse");
        let t2025 = crate::datetime::days_from_civil(2025, 1, 1) * 86_400;
        assert!(check(&x, t2025, Some(14)).is_empty());
        let rules = |now, soon| -> Vec<CertRule> {
            check(&x, now, soon).into_iter().map(|f| f.rule).collect()
        };
        let t2031 = crate::datetime::days_from_civil(2031, 1, 1) * 86_400;
        assert_eq!(rules(t2031, None), vec![CertRule::Expired]);
        let t2019 = crate::datetime::days_from_civil(2019, 1, 1) * 86_400;
        assert_eq!(rules(t2019, None), vec![CertRule::NotYetValid]);
        let late2029 = crate::datetime::days_from_civil(2029, 12, 25) * 86_400;
        assert_eq!(rules(late2029, Some(14)), vec![CertRule::ExpiresSoon]);
        assert!(rules(late2029, None).is_empty());
    }
}
