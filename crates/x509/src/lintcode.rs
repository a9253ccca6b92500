//! The one list of finding codes of `tlskit lint` and `tlskit store lint`: the shared
//! certificate rules ([`CertRule`]), the checks only one of them makes, and the load
//! issues `store lint` reports. [`LintCode::as_str`] is the stable text JSON carries
//! (docs/json.md lists them). [`Severity`] is the one scale both lints grade their
//! findings on; which code gets which severity is each lint's policy
//! (`tlskit_store::lint::severity`, `tlskit_pki::lint`).

use crate::certrules::CertRule;

/// A finding's code. Serialized as its [`as_str`](Self::as_str) text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LintCode {
    /// A certificate rule both lints apply (validity, key strength, signature hash).
    Rule(CertRule),

    // `store lint`: the store as a whole.
    /// The same certificate more than once.
    Duplicate,
    /// Several anchors with one subject.
    SameSubject,

    // `store lint`: load issues (`tlskit_store::IssueKind::code`).
    /// A path that could not be read.
    Unreadable,
    /// A symbolic link loop.
    SymlinkLoop,
    /// A file over the size limit.
    TooLarge,
    /// Not a regular file (FIFO, device).
    NotRegular,
    /// A PEM block that does not decode.
    BadPem,
    /// A private key among the certificates.
    PrivateKey,
    /// A PEM block that is not a certificate.
    NotCertificate,
    /// Bytes that are not a DER certificate.
    MalformedDer,
    /// A certificate that is not a CA.
    NonCa,
    /// A file with no certificate.
    NoCertificates,
    /// A subject too large for a CA-name entry.
    SubjectTooLarge,
    /// A snapshot that could not be used.
    BadSnapshot,
    /// A snapshot older than one of its sources.
    StaleSnapshot,
    /// A snapshot anchor that failed its integrity check.
    CorruptAnchor,

    // `lint`: a certificate, a chain or a request.
    /// A serial number that breaks RFC 5280's rules.
    BadSerial,
    /// A signature that does not verify with the issuer's key.
    BadSignature,
    /// A CA whose keyUsage lacks keyCertSign.
    CaWithoutKeycertsign,
    /// A CA without keyUsage.
    CaWithoutKeyusage,
    /// A chain out of order.
    ChainOrder,
    /// A CN that is not among the SANs.
    CnNotInSans,
    /// An intermediate that is not a CA.
    IntermediateNotCa,
    /// A leaf that is a CA.
    LeafIsCa,
    /// A leaf with keyCertSign.
    LeafKeycertsign,
    /// A malformed SAN.
    MalformedName,
    /// No subjectAltName.
    MissingSan,
    /// A name outside the issuer's name constraints.
    NameConstraints,
    /// A self-signed certificate.
    SelfSigned,
    /// A validity longer than the CA/Browser Forum allows.
    ValidityTooLong,
}

impl LintCode {
    /// The stable code, e.g. `weak-key`, `duplicate`, `cn-not-in-sans`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rule(r) => r.code(),
            Self::Duplicate => "duplicate",
            Self::SameSubject => "same-subject",
            Self::Unreadable => "unreadable",
            Self::SymlinkLoop => "symlink-loop",
            Self::TooLarge => "too-large",
            Self::NotRegular => "not-regular",
            Self::BadPem => "bad-pem",
            Self::PrivateKey => "private-key",
            Self::NotCertificate => "not-certificate",
            Self::MalformedDer => "malformed-der",
            Self::NonCa => "non-ca",
            Self::NoCertificates => "no-certificates",
            Self::SubjectTooLarge => "subject-too-large",
            Self::BadSnapshot => "bad-snapshot",
            Self::StaleSnapshot => "stale-snapshot",
            Self::CorruptAnchor => "corrupt-anchor",
            Self::BadSerial => "bad-serial",
            Self::BadSignature => "bad-signature",
            Self::CaWithoutKeycertsign => "ca-without-keycertsign",
            Self::CaWithoutKeyusage => "ca-without-keyusage",
            Self::ChainOrder => "chain-order",
            Self::CnNotInSans => "cn-not-in-sans",
            Self::IntermediateNotCa => "intermediate-not-ca",
            Self::LeafIsCa => "leaf-is-ca",
            Self::LeafKeycertsign => "leaf-keycertsign",
            Self::MalformedName => "malformed-name",
            Self::MissingSan => "missing-san",
            Self::NameConstraints => "name-constraints",
            Self::SelfSigned => "self-signed",
            Self::ValidityTooLong => "validity-too-long",
        }
    }
}

impl From<CertRule> for LintCode {
    fn from(r: CertRule) -> Self {
        Self::Rule(r)
    }
}

impl std::fmt::Display for LintCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for LintCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// How serious a finding is, one scale for every lint: errors and warnings make a lint
/// exit 1, info findings do not. Ordered `Info < Warning < Error`; serialized (and shown)
/// as `info`, `warning`, `error`. Exhaustive on purpose: callers map each level to an
/// exit status and a colour, and a fourth level would change that contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational: what stock stores hold by design, or worth knowing.
    Info,
    /// Likely a problem.
    Warning,
    /// Clients will refuse it, or it breaks a hard rule.
    Error,
}

impl Severity {
    /// The text JSON carries: `info`, `warning` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Severity;

    #[test]
    fn severity_orders_and_reads_as_json_carries_it() {
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
        let all = [Severity::Info, Severity::Warning, Severity::Error];
        assert_eq!(all.map(Severity::as_str), ["info", "warning", "error"]);
        assert_eq!(all.map(|s| s.to_string()), ["info", "warning", "error"]);
    }
}
