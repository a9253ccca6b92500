//! The profile layer: RFC 5280 and CA/Browser Forum Baseline Requirements rules that
//! rustls-webpki leaves out, checked on every candidate path it builds.
//!
//! rustls-webpki does the signatures, validity, basicConstraints, EKU (when present),
//! name constraints and CRLs. For each path it finds, it calls back into
//! [`check_path`], which parses each certificate of the path once (x509-parser) and
//! checks the rules of the configured [`Profile`]; a path that breaks a rule is refused
//! and rustls-webpki goes on to the next candidate path. A rule breach is reported as a
//! [`Violation`]: which certificate (position and subject), which rule (stable code and
//! RFC or BR section), and what to do.
//!
//! Cost: the profile runs once per candidate path that rustls-webpki already verified
//! (usually one per verification) and the verification cache keeps positive answers, so a
//! cached verification never runs it.

use std::fmt;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::oid_registry::{
    Oid, OID_EC_P256, OID_KEY_TYPE_DSA, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_RSAENCRYPTION,
    OID_PKIX_AUTHORITY_INFO_ACCESS, OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER,
    OID_X509_EXT_BASIC_CONSTRAINTS, OID_X509_EXT_CERTIFICATE_POLICIES,
    OID_X509_EXT_CRL_DISTRIBUTION_POINTS, OID_X509_EXT_EXTENDED_KEY_USAGE,
    OID_X509_EXT_INHIBIT_ANY_POLICY, OID_X509_EXT_KEY_USAGE, OID_X509_EXT_NAME_CONSTRAINTS,
    OID_X509_EXT_POLICY_CONSTRAINTS, OID_X509_EXT_POLICY_MAPPINGS, OID_X509_EXT_SUBJECT_ALT_NAME,
    OID_X509_EXT_SUBJECT_KEY_IDENTIFIER,
};
use x509_parser::prelude::FromDer;

use crate::crl::Crl;
use crate::purpose::Purpose;
use tlskit_x509::dn;

/// Which rule set a verification applies on top of rustls-webpki.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Profile {
    /// What mainstream relying parties (browsers, rustls) refuse is refused
    /// ([`Rule::browser_refuses`]); every other rule is checked and reported as a
    /// warning on the verified path ([`VerifiedChain::warnings`](crate::VerifiedChain)).
    /// The default.
    #[default]
    Browser,
    /// Every rule refused: RFC 5280 and the CA/Browser Forum Baseline Requirements (key
    /// sizes, explicit TLS EKU, public-suffix wildcards, CN in SAN, ...).
    WebPki,
    /// RFC 5280 rules only: for private PKIs that do not follow the CA/B Forum profile.
    Rfc5280,
}

impl Profile {
    /// `"browser"`, `"webpki"` or `"rfc5280"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Browser => "browser",
            Self::WebPki => "webpki",
            Self::Rfc5280 => "rfc5280",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Profile {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s {
            "browser" => Ok(Self::Browser),
            "webpki" => Ok(Self::WebPki),
            "rfc5280" => Ok(Self::Rfc5280),
            _ => Err(UnknownName {
                what: "profile",
                expected: "browser, webpki, rfc5280".into(),
            }),
        }
    }
}

/// A profile or rule name that is not known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what}; expected one of: {expected}")]
pub struct UnknownName {
    what: &'static str,
    expected: String,
}

macro_rules! rules {
    ($( $(#[$m:meta])* $v:ident = ($code:literal, $sec:literal, $cabf:literal, $advice:literal), )*) => {
        /// A named rule of the profile layer (or a refusal by rustls-webpki diagnosed to a
        /// rule). The code (`aki-missing`, ...) is stable: it appears in `--json` output
        /// and is what `--allow` takes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Rule { $( $(#[$m])* $v, )* }

        impl Rule {
            /// Every rule, in table order.
            pub const ALL: &'static [Rule] = &[$(Rule::$v,)*];
            /// The stable code, e.g. `aki-missing`.
            pub fn code(self) -> &'static str { match self { $(Rule::$v => $code,)* } }
            /// The RFC or Baseline Requirements section.
            pub fn section(self) -> &'static str { match self { $(Rule::$v => $sec,)* } }
            /// A CA/Browser Forum rule (not in the `rfc5280` profile).
            pub fn cabf_only(self) -> bool { match self { $(Rule::$v => $cabf,)* } }
            /// What to do about a breach.
            pub fn advice(self) -> &'static str { match self { $(Rule::$v => $advice,)* } }
        }
    };
}

rules! {
    /// serialNumber must be positive, non-zero and at most 20 octets.
    SerialInvalid = ("serial-invalid", "RFC 5280 4.1.2.2", false,
        "reissue the certificate with a positive serial number of at most 20 octets"),
    /// authorityKeyIdentifier with keyIdentifier missing in a certificate not self-signed.
    AkiMissing = ("aki-missing", "RFC 5280 4.2.1.1", false,
        "reissue it with an authorityKeyIdentifier (keyIdentifier = the issuer's subjectKeyIdentifier), or accept this deliberately with --allow aki-missing"),
    /// authorityKeyIdentifier marked critical.
    AkiCritical = ("aki-critical", "RFC 5280 4.2.1.1", false,
        "reissue it with a non-critical authorityKeyIdentifier"),
    /// A self-signed root whose authorityKeyIdentifier is not only its own keyIdentifier
    /// (another key, none, or an authorityCertIssuer / authorityCertSerialNumber).
    AkiSelfSignedMismatch = ("aki-self-signed-mismatch", "RFC 5280 4.2.1.1", false,
        "a self-signed certificate's authorityKeyIdentifier, when present, should be only its own keyIdentifier; trust anchors are exempt (RFC 5280 6.1.1 (d)), so this is never held against a root"),
    /// subjectKeyIdentifier missing in a CA certificate.
    SkiMissing = ("ski-missing", "RFC 5280 4.2.1.2", false,
        "reissue the CA certificate with a subjectKeyIdentifier"),
    /// subjectKeyIdentifier marked critical.
    SkiCritical = ("ski-critical", "RFC 5280 4.2.1.2", false,
        "reissue it with a non-critical subjectKeyIdentifier"),
    /// basicConstraints not critical in a CA certificate.
    BasicConstraintsNotCritical = ("basic-constraints-not-critical", "RFC 5280 4.2.1.9", false,
        "reissue the CA certificate with basicConstraints marked critical"),
    /// keyUsage missing in a CA certificate, or without keyCertSign.
    CaKeyUsage = ("ca-key-usage", "RFC 5280 4.2.1.3", false,
        "reissue the CA certificate with a keyUsage that asserts keyCertSign"),
    /// keyCertSign asserted in a certificate that is not a CA.
    KeyCertSignNotCa = ("key-cert-sign-not-ca", "RFC 5280 4.2.1.3", false,
        "only CA certificates may assert keyCertSign; reissue the certificate without it"),
    /// A critical extension this verifier does not process.
    UnknownCriticalExtension = ("unknown-critical-extension", "RFC 5280 4.2", false,
        "a certificate with a critical extension the verifier does not know must be refused; reissue it without that extension or with it non-critical"),
    /// Empty subject without a critical subjectAltName.
    EmptySubjectSan = ("empty-subject-san", "RFC 5280 4.2.1.6", false,
        "a certificate with an empty subject must carry a critical subjectAltName; reissue it"),
    /// subjectAltName critical while the subject is not empty.
    SanCritical = ("san-critical", "RFC 5280 4.2.1.6", false,
        "reissue it with a non-critical subjectAltName (critical only when the subject is empty)"),
    /// nameConstraints in a certificate that is not a CA.
    NameConstraintsNotCa = ("name-constraints-not-ca", "RFC 5280 4.2.1.10", false,
        "name constraints belong in CA certificates only; reissue the certificate without them"),
    /// nameConstraints not critical.
    NameConstraintsNotCritical = ("name-constraints-not-critical", "RFC 5280 4.2.1.10", false,
        "reissue the CA certificate with nameConstraints marked critical, or accept it deliberately with --allow name-constraints-not-critical"),
    /// nameConstraints with neither permitted nor excluded subtrees.
    NameConstraintsEmpty = ("name-constraints-empty", "RFC 5280 4.2.1.10", false,
        "a nameConstraints extension needs permittedSubtrees or excludedSubtrees; reissue it"),
    /// policyConstraints not critical.
    PolicyConstraintsNotCritical = ("policy-constraints-not-critical", "RFC 5280 4.2.1.11", false,
        "reissue the CA certificate with policyConstraints marked critical"),
    /// authorityInfoAccess malformed (critical, empty, a location that is not a URI).
    AiaMalformed = ("aia-malformed", "RFC 5280 4.2.2.1", false,
        "reissue it with a non-critical authorityInfoAccess whose locations are URIs"),
    /// The end-entity certificate lacks an explicit serverAuth EKU.
    EkuServerAuthMissing = ("eku-server-auth-missing", "CA/B Forum BR 7.1.2.7.10", true,
        "reissue the certificate with extendedKeyUsage id-kp-serverAuth, or verify with --profile rfc5280"),
    /// The end-entity certificate lacks an explicit clientAuth EKU.
    EkuClientAuthMissing = ("eku-client-auth-missing", "CA/B Forum BR 7.1.2.7.10", true,
        "reissue the certificate with extendedKeyUsage id-kp-clientAuth, or verify with --profile rfc5280"),
    /// anyExtendedKeyUsage in the end-entity certificate.
    EkuAny = ("eku-any", "CA/B Forum BR 7.1.2.7.10", true,
        "reissue the certificate with the specific key purposes instead of anyExtendedKeyUsage"),
    /// extendedKeyUsage marked critical.
    EkuCritical = ("eku-critical", "CA/B Forum BR 7.1.2.7.10", true,
        "reissue the certificate with a non-critical extendedKeyUsage"),
    /// extendedKeyUsage in a root certificate.
    EkuInRoot = ("eku-in-root", "CA/B Forum BR 7.1.2.1.2", true,
        "the Baseline Requirements keep extendedKeyUsage out of root certificates; trust anchors are exempt (RFC 5280 6.1.1 (d)), so this is never held against a root in verification"),
    /// A trust anchor whose extendedKeyUsage leaves out the purpose verified (Chrome,
    /// NSS and Go treat an anchor's EKU as a constraint on the whole path).
    AnchorEkuPurpose = ("anchor-eku-purpose", "RFC 5280 4.2.1.12, RFC 5937 3.2", false,
        "this trust anchor is constrained to other key purposes; use a trust anchor meant for this purpose, or accept it deliberately with --allow anchor-eku-purpose"),
    /// An RSA key under 2048 bits.
    RsaKeyTooSmall = ("rsa-key-too-small", "CA/B Forum BR 6.1.5", true,
        "replace the key with RSA of at least 2048 bits (or ECDSA P-256) and reissue"),
    /// An RSA modulus whose length is not a multiple of 8 bits.
    RsaModulusSize = ("rsa-modulus-size", "CA/B Forum BR 6.1.5", true,
        "replace the key with an RSA key whose modulus is a whole number of bytes"),
    /// A DSA key.
    DsaKey = ("dsa-key", "CA/B Forum BR 6.1.5", true,
        "replace the DSA key with RSA (2048 bits or more) or ECDSA P-256/P-384"),
    /// An elliptic curve other than P-256, P-384, P-521 (P-192, ...).
    WeakCurve = ("weak-curve", "CA/B Forum BR 6.1.5", true,
        "replace the key with ECDSA P-256 or P-384"),
    /// A wildcard SAN whose base is a public suffix (`*.com`, `*.co.uk`).
    WildcardPublicSuffix = ("wildcard-public-suffix", "CA/B Forum BR 3.2.2.6", true,
        "a wildcard may not cover a whole public suffix; reissue the certificate for names under a registered domain"),
    /// A subject CN that is not one of the SANs.
    CnNotInSan = ("cn-not-in-san", "CA/B Forum BR 7.1.4.3", true,
        "the subject commonName must repeat one subjectAltName exactly; reissue it"),
    /// An end-entity certificate without subjectAltName.
    SanMissing = ("san-missing", "CA/B Forum BR 7.1.2.7.12", true,
        "TLS clients match names in subjectAltName only, not in the commonName; reissue the certificate with subjectAltName entries"),
    /// A CRL without a CRLNumber extension.
    CrlNumberMissing = ("crl-number-missing", "RFC 5280 5.2.3", false,
        "ask the CA for a CRL with a CRLNumber extension"),
    /// A CRL with a critical CRLNumber extension.
    CrlNumberCritical = ("crl-number-critical", "RFC 5280 5.2.3", false,
        "ask the CA for a CRL whose CRLNumber extension is not critical"),
    /// A CRL issued by a certificate whose keyUsage lacks cRLSign.
    CrlIssuerNotCrlSign = ("crl-issuer-not-crl-sign", "RFC 5280 4.2.1.3", false,
        "the CRL issuer's keyUsage must assert cRLSign; use a CRL signed by a key allowed to sign CRLs"),
    /// A CA certificate in the end-entity position. Usually a chain given in the wrong
    /// order; `--allow ca-as-end-entity` verifies a CA certificate as the end entity on
    /// purpose (RFC 5280 6.1 does not forbid it).
    CaAsEndEntity = ("ca-as-end-entity", "RFC 5280 6.1", false,
        "put the end-entity certificate first; to verify a CA certificate as the end entity on purpose, use --allow ca-as-end-entity"),
    // Refusals by rustls-webpki, diagnosed to a certificate. Not allowable.
    /// A signature algorithm that is not accepted (SHA-1, MD5, DSA, ...).
    SignatureAlgorithm = ("signature-algorithm", "RFC 9155, CA/B Forum BR 7.1.3.2", false,
        "reissue the certificate with a SHA-256 (or stronger) RSA, ECDSA or Ed25519 signature"),
    /// A key of type id-RSASSA-PSS (an RSASSA-PSS-only key) that signed the path: not
    /// supported, as in browsers (RSASSA-PSS signatures by rsaEncryption keys are).
    RsaPssKey = ("rsa-pss-key", "RFC 4055 1.2, CA/B Forum BR 7.1.3.1.1", false,
        "RSASSA-PSS-only keys (id-RSASSA-PSS) are not supported here, nor by browsers; the issuer needs an rsaEncryption RSA key (which may sign with RSASSA-PSS) or an ECDSA key"),
    /// A certificate used as an issuer that is not a CA (basicConstraints cA absent).
    IssuerNotCa = ("issuer-not-ca", "RFC 5280 4.2.1.9 and 6.1.4 (k)", false,
        "this certificate signed another one but is not a CA certificate (basicConstraints cA is not set); use the right intermediate, or reissue it as a CA"),
    /// pathLenConstraint exceeded.
    PathLenExceeded = ("path-len-exceeded", "RFC 5280 4.2.1.9 and 6.1.4 (m)", false,
        "the path has more intermediates below this CA than its pathLenConstraint allows"),
    /// A name outside the permitted (or inside the excluded) name constraints.
    NameConstraintViolated = ("name-constraint-violated", "RFC 5280 4.2.1.10 and 6.1.3 (b)", false,
        "a name in the certificate is outside what an issuing CA's nameConstraints permit"),
}

impl Rule {
    /// The rule with this code.
    pub fn from_code(code: &str) -> Result<Rule, UnknownName> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.code() == code)
            .ok_or_else(|| UnknownName {
                what: "rule",
                expected: Rule::ALL
                    .iter()
                    .filter(|r| r.allowable())
                    .map(|r| r.code())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Whether the `browser` profile refuses a breach (what mainstream relying parties
    /// refuse: Chrome, Firefox/NSS or rustls-webpki; the crate README's rule table gives
    /// the evidence); the other rules are reported as warnings. `ca-key-usage` and
    /// `aia-malformed` are refused in part: a keyUsage without keyCertSign and a
    /// critical authorityInfoAccess are refused, the rest of those rules warns.
    pub fn browser_refuses(self) -> bool {
        matches!(
            self,
            Rule::AkiCritical
                | Rule::SkiCritical
                | Rule::UnknownCriticalExtension
                | Rule::AnchorEkuPurpose
                | Rule::RsaKeyTooSmall
                | Rule::DsaKey
                | Rule::WeakCurve
                | Rule::WildcardPublicSuffix
                | Rule::CrlIssuerNotCrlSign
                | Rule::CaAsEndEntity
                | Rule::SignatureAlgorithm
                | Rule::RsaPssKey
                | Rule::IssuerNotCa
                | Rule::PathLenExceeded
                | Rule::NameConstraintViolated
        )
    }

    /// Whether `--allow` can lift it (rules rustls-webpki enforces itself cannot be).
    pub fn allowable(self) -> bool {
        !matches!(
            self,
            Rule::SignatureAlgorithm
                | Rule::RsaPssKey
                | Rule::IssuerNotCa
                | Rule::PathLenExceeded
                | Rule::NameConstraintViolated
        )
    }

    fn bit(self) -> u64 {
        let i = Rule::ALL.iter().position(|r| *r == self).unwrap_or(63);
        1u64 << i
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The rules a verification applies: a profile minus the allowed exceptions. A rule
/// is refused, reported as a warning, or not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuleSet {
    refuse: u64,
    warn: u64,
}

impl RuleSet {
    pub(crate) fn new(profile: Profile, allow: &[Rule]) -> Self {
        let (mut refuse, mut warn) = (0u64, 0u64);
        for r in Rule::ALL {
            match profile {
                Profile::Rfc5280 if r.cabf_only() => {}
                Profile::Browser if !r.browser_refuses() => warn |= r.bit(),
                _ => refuse |= r.bit(),
            }
        }
        for r in allow {
            if r.allowable() {
                refuse &= !r.bit();
                warn &= !r.bit();
            }
        }
        Self { refuse, warn }
    }
    /// RFC 5280 rules only, minus the allowed ones (pinned certificates).
    pub(crate) fn without_cabf(self) -> Self {
        let mut s = self;
        for r in Rule::ALL {
            if r.cabf_only() {
                s.refuse &= !r.bit();
                s.warn &= !r.bit();
            }
        }
        s
    }
    /// Whether the rule is checked at all (refused or reported).
    pub(crate) fn has(self, r: Rule) -> bool {
        (self.refuse | self.warn) & r.bit() != 0
    }
    /// Whether a breach of the rule rejects the path.
    pub(crate) fn refuses(self, r: Rule) -> bool {
        self.refuse & r.bit() != 0
    }
}

/// Where a path's breaches go: refused rules stop the check, the others are kept as
/// warnings.
struct Findings<'w> {
    rules: RuleSet,
    warnings: &'w mut Vec<Violation>,
}

impl Findings<'_> {
    /// Report a breach: `Err` when the rule is refused, a warning otherwise.
    fn breach(&mut self, v: Violation) -> Result<(), Violation> {
        if self.rules.refuses(v.rule) {
            Err(v)
        } else {
            self.warnings.push(v);
            Ok(())
        }
    }
    /// The part of a rule every mainstream verifier refuses: refused whenever the rule
    /// is checked at all, whatever the profile says of its milder breaches.
    fn refuse_if_checked(&mut self, v: Violation) -> Result<(), Violation> {
        if self.rules.has(v.rule) {
            Err(v)
        } else {
            Ok(())
        }
    }
}

/// Where a certificate sits on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CertRole {
    /// Position 0.
    EndEntity,
    /// Between the end entity and the anchor.
    Intermediate,
    /// The trust anchor (last).
    Anchor,
}

impl CertRole {
    fn as_str(self) -> &'static str {
        match self {
            Self::EndEntity => "end entity",
            Self::Intermediate => "intermediate",
            Self::Anchor => "trust anchor",
        }
    }
}

/// One rule broken by one certificate of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// Position on the path: 0 = end entity, counting up to the anchor. For a
    /// presented certificate diagnosed after rustls-webpki refused the chain, its
    /// position in what was presented (end entity first).
    pub position: usize,
    /// The certificate's role.
    pub role: CertRole,
    /// The certificate's subject (RFC 4514-like).
    pub subject: String,
    /// What is wrong, in words (no input bytes beyond names and numbers).
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "certificate {} ({}, {}): {} ({}, rule {}); {}",
            self.position,
            self.role.as_str(),
            self.subject,
            self.detail,
            self.rule.section(),
            self.rule.code(),
            self.advice()
        )
    }
}

/// One JSON shape for a rule breach, refused or reported as a warning: `rule` (stable
/// code), `section`, `position` (0 = end entity), `role` (`end-entity`,
/// `intermediate`, `anchor`), `subject` (RFC 4514) and `message` (the sentence,
/// [`Display`](fmt::Display)).
impl serde::Serialize for Violation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Violation", 6)?;
        st.serialize_field("rule", self.rule.code())?;
        st.serialize_field("section", self.rule.section())?;
        st.serialize_field("position", &self.position)?;
        st.serialize_field("role", &self.role)?;
        st.serialize_field("subject", &self.subject)?;
        st.serialize_field("message", &self.to_string())?;
        st.end()
    }
}

impl Violation {
    /// What to do about it. A trust anchor is never to be reissued by whoever meets
    /// it: the advice for an anchor's key is about the trust store, not the certificate.
    pub fn advice(&self) -> &'static str {
        match (self.role, self.rule) {
            (
                CertRole::Anchor,
                Rule::RsaKeyTooSmall | Rule::RsaModulusSize | Rule::DsaKey | Rule::WeakCurve,
            ) => "this trust anchor's key is too weak to rely on; use a chain that leads to another trust anchor",
            _ => self.rule.advice(),
        }
    }
}

const OID_EC_P384: &[u64] = &[1, 3, 132, 0, 34];
const OID_EC_P521: &[u64] = &[1, 3, 132, 0, 35];
const OID_ED25519: &[u64] = &[1, 3, 101, 112];
const OID_ED448: &[u64] = &[1, 3, 101, 113];
/// id-ce-cRLNumber 2.5.29.20.
const OID_CRL_NUMBER: &[u64] = &[2, 5, 29, 20];

fn oid_is(oid: &Oid<'_>, arcs: &[u64]) -> bool {
    oid.iter().is_some_and(|it| it.eq(arcs.iter().copied()))
}

/// Extensions this verifier (or rustls-webpki) processes: a critical one of any other
/// type is refused.
fn known_extension(oid: &Oid<'_>) -> bool {
    [
        &OID_X509_EXT_BASIC_CONSTRAINTS,
        &OID_X509_EXT_KEY_USAGE,
        &OID_X509_EXT_EXTENDED_KEY_USAGE,
        &OID_X509_EXT_SUBJECT_ALT_NAME,
        &OID_X509_EXT_NAME_CONSTRAINTS,
        &OID_X509_EXT_CERTIFICATE_POLICIES,
        &OID_X509_EXT_POLICY_CONSTRAINTS,
        &OID_X509_EXT_POLICY_MAPPINGS,
        &OID_X509_EXT_INHIBIT_ANY_POLICY,
        &OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER,
        &OID_X509_EXT_SUBJECT_KEY_IDENTIFIER,
        &OID_X509_EXT_CRL_DISTRIBUTION_POINTS,
        &OID_PKIX_AUTHORITY_INFO_ACCESS,
    ]
    .contains(&oid)
}

/// One certificate of a path to check.
pub(crate) struct PathCert<'a> {
    pub(crate) der: &'a [u8],
    pub(crate) role: CertRole,
}

/// Check every certificate of a path (end entity first, anchor last) against `rules`.
/// Certificates x509-parser cannot read are left to rustls-webpki's judgement (it
/// already accepted them). `Ok` carries the breaches of rules the profile reports
/// rather than refuses (warnings), in path order.
pub(crate) fn check_path(
    path: &[PathCert<'_>],
    rules: RuleSet,
    purpose: Purpose,
    crls: &[Crl],
) -> Result<Vec<Violation>, Violation> {
    let mut warnings = Vec::new();
    let mut out = Findings {
        rules,
        warnings: &mut warnings,
    };
    let mut anchor_path_len: Option<(u32, String)> = None;
    for (i, pc) in path.iter().enumerate() {
        // Intermediates and anchors repeat from one verification to the next: a
        // certificate that passed as this role under these rules is not parsed again
        // (positive answers only, compared byte for byte; its warnings are kept).
        if pc.role != CertRole::EndEntity {
            if let Some(len) = memo::get(pc.der, pc.role, rules, purpose, i, out.warnings) {
                if pc.role == CertRole::Anchor {
                    anchor_path_len = len.map(|l| (l, String::new()));
                }
                continue;
            }
        }
        let Ok((_, c)) = x509_parser::parse_x509_certificate(pc.der) else {
            continue;
        };
        let before = out.warnings.len();
        check_cert(&c, i, pc.role, purpose, &mut out)?;
        let len = c
            .basic_constraints()
            .ok()
            .flatten()
            .and_then(|b| b.value.path_len_constraint);
        if pc.role == CertRole::Anchor {
            anchor_path_len = len.map(|l| (l, dn::display(c.tbs_certificate.subject.as_raw())));
        }
        if pc.role != CertRole::EndEntity {
            memo::put(
                pc.der,
                pc.role,
                rules,
                purpose,
                len,
                &out.warnings[before..],
            );
        }
    }
    if let Some((len, subject)) = anchor_path_len {
        check_anchor_path_len(path, len, subject)?;
    }
    if !crls.is_empty() {
        let parsed: Vec<Option<X509Certificate<'_>>> = path
            .iter()
            .map(|pc| {
                x509_parser::parse_x509_certificate(pc.der)
                    .ok()
                    .map(|(_, c)| c)
            })
            .collect();
        check_crls(path, &parsed, crls, &mut out)?;
    }
    Ok(warnings)
}

/// A small per-thread memo of intermediates and anchors that passed the profile.
mod memo {
    use std::cell::RefCell;

    use super::{CertRole, Purpose, RuleSet, Violation};

    const ENTRIES: usize = 32;

    struct Entry {
        hash: u64,
        role: CertRole,
        rules: RuleSet,
        purpose: Purpose,
        der: Box<[u8]>,
        path_len: Option<u32>,
        /// The warnings it gave (positions are set again on each use).
        warnings: Box<[Violation]>,
    }

    thread_local! {
        static MEMO: RefCell<(Vec<Entry>, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }

    /// `Some(pathLenConstraint)` when `der` passed as `role` under `rules` and
    /// `purpose` before; its warnings are appended to `warnings` at `position`.
    pub(super) fn get(
        der: &[u8],
        role: CertRole,
        rules: RuleSet,
        purpose: Purpose,
        position: usize,
        warnings: &mut Vec<Violation>,
    ) -> Option<Option<u32>> {
        let hash = xxhash_rust::xxh3::xxh3_64(der);
        MEMO.with(|m| {
            let m = m.borrow();
            let e = m.0.iter().find(|e| {
                e.hash == hash
                    && e.role == role
                    && e.rules == rules
                    && e.purpose == purpose
                    && *e.der == *der
            })?;
            warnings.extend(e.warnings.iter().map(|w| Violation {
                position,
                ..w.clone()
            }));
            Some(e.path_len)
        })
    }

    pub(super) fn put(
        der: &[u8],
        role: CertRole,
        rules: RuleSet,
        purpose: Purpose,
        path_len: Option<u32>,
        warnings: &[Violation],
    ) {
        let e = Entry {
            hash: xxhash_rust::xxh3::xxh3_64(der),
            role,
            rules,
            purpose,
            der: der.into(),
            path_len,
            warnings: warnings.into(),
        };
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            let (v, next) = &mut *m;
            if v.len() < ENTRIES {
                v.push(e);
            } else {
                v[*next] = e;
                *next = (*next + 1) % ENTRIES;
            }
        });
    }
}

/// RFC 5280 6.1.4 (l)-(m) for the trust anchor's own pathLenConstraint, which
/// rustls-webpki does not look at (it checks those of the intermediates). Self-issued
/// intermediates do not count, as the RFC says. Always on: it is a basicConstraints
/// rule like the ones rustls-webpki enforces.
fn check_anchor_path_len(
    path: &[PathCert<'_>],
    len: u32,
    subject: String,
) -> Result<(), Violation> {
    let below = path[1..path.len() - 1]
        .iter()
        .filter(|pc| tlskit_x509::der::cert_view(pc.der).is_none_or(|f| f.subject != f.issuer))
        .count();
    if below as u64 > u64::from(len) {
        let subject = if subject.is_empty() {
            path.last()
                .and_then(|pc| tlskit_x509::der::cert_view(pc.der))
                .map_or_else(String::new, |f| dn::display(f.subject))
        } else {
            subject
        };
        return Err(Violation {
            rule: Rule::PathLenExceeded,
            position: path.len() - 1,
            role: CertRole::Anchor,
            subject,
            detail: format!(
                "its pathLenConstraint is {len} but {below} intermediate certificates (not counting self-issued ones) follow it"
            ),
        });
    }
    Ok(())
}

fn violation(
    rule: Rule,
    pos: usize,
    role: CertRole,
    c: &X509Certificate<'_>,
    detail: impl Into<String>,
) -> Violation {
    Violation {
        rule,
        position: pos,
        role,
        subject: dn::display(c.tbs_certificate.subject.as_raw()),
        detail: detail.into(),
    }
}

/// Self-signed as far as the encoding tells (subject = issuer and no key identifier
/// pointing elsewhere); the signature itself was checked by rustls-webpki when the
/// certificate is an anchor's issuer.
fn self_issued(c: &X509Certificate<'_>) -> bool {
    c.tbs_certificate.subject.as_raw() == c.tbs_certificate.issuer.as_raw()
}

/// RFC 5280 6.1.1 (d): a trust anchor is trusted by configuration, so no rule about
/// how a certificate is formed applies to it (serial, key identifiers, criticality,
/// keyUsage form, EKU presence, its self-signature). What it constrains still does:
/// its key (it verifies the next signature), its pathLenConstraint
/// ([`check_anchor_path_len`]), its name constraints (rustls-webpki and the RFC 5280
/// validator apply them) and its extendedKeyUsage as a constraint on the purpose, as
/// Chrome (BoringSSL pki `ApplyTrustAnchorConstraints`), NSS and Go
/// (`checkChainForKeyUsage`) apply it.
fn check_anchor(
    c: &X509Certificate<'_>,
    pos: usize,
    purpose: Purpose,
    out: &mut Findings<'_>,
) -> Result<(), Violation> {
    check_key(c, pos, CertRole::Anchor, out)?;
    if !out.rules.has(Rule::AnchorEkuPurpose) {
        return Ok(());
    }
    let Ok(Some(eku)) = c.extended_key_usage() else {
        return Ok(());
    };
    let e = eku.value;
    let allowed = e.any
        || match purpose {
            Purpose::Server => e.server_auth,
            Purpose::Client => e.client_auth,
        };
    if !allowed {
        out.breach(violation(
            Rule::AnchorEkuPurpose,
            pos,
            CertRole::Anchor,
            c,
            format!(
                "its extendedKeyUsage does not include id-kp-{}Auth, which constrains every certificate below it",
                purpose.as_str()
            ),
        ))?;
    }
    Ok(())
}

fn check_cert(
    c: &X509Certificate<'_>,
    pos: usize,
    role: CertRole,
    purpose: Purpose,
    out: &mut Findings<'_>,
) -> Result<(), Violation> {
    if role == CertRole::Anchor {
        return check_anchor(c, pos, purpose, out);
    }
    let rules = out.rules;
    let v = |rule: Rule, detail: String| violation(rule, pos, role, c, detail);
    let tbs = &c.tbs_certificate;
    let is_ca = c.is_ca();
    let leaf = role == CertRole::EndEntity;

    // Serial number (RFC 5280 4.1.2.2).
    if rules.has(Rule::SerialInvalid) {
        let raw = tbs.raw_serial();
        let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
        let zero = raw.iter().all(|b| *b == 0);
        if raw.is_empty() || negative || zero || raw.len() > 20 {
            let what = if raw.len() > 20 {
                format!(
                    "the serial number is {} octets long (at most 20)",
                    raw.len()
                )
            } else if negative {
                "the serial number is negative".into()
            } else {
                "the serial number is zero".into()
            };
            out.breach(v(Rule::SerialInvalid, what))?;
        }
    }

    let mut aki: Option<(bool, Option<&[u8]>)> = None;
    let mut ski: Option<(bool, &[u8])> = None;
    let mut bc_critical = None;
    let mut ku = None;
    let mut eku = None;
    let mut san: Option<(bool, Vec<&GeneralName<'_>>)> = None;
    for ext in tbs.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                aki = Some((ext.critical, a.key_identifier.as_ref().map(|k| k.0)));
            }
            ParsedExtension::SubjectKeyIdentifier(k) => ski = Some((ext.critical, k.0)),
            ParsedExtension::BasicConstraints(_) => bc_critical = Some(ext.critical),
            ParsedExtension::KeyUsage(k) => ku = Some(*k),
            ParsedExtension::ExtendedKeyUsage(e) => eku = Some((ext.critical, e)),
            ParsedExtension::SubjectAlternativeName(s) => {
                san = Some((ext.critical, s.general_names.iter().collect()));
            }
            ParsedExtension::NameConstraints(nc) => {
                if !is_ca && rules.has(Rule::NameConstraintsNotCa) {
                    out.breach(v(
                        Rule::NameConstraintsNotCa,
                        "it is not a CA certificate but carries nameConstraints".into(),
                    ))?;
                }
                if !ext.critical && rules.has(Rule::NameConstraintsNotCritical) {
                    out.breach(v(
                        Rule::NameConstraintsNotCritical,
                        "its nameConstraints extension is not critical".into(),
                    ))?;
                }
                let empty = |s: &Option<Vec<_>>| s.as_ref().is_none_or(|v| v.is_empty());
                if empty(&nc.permitted_subtrees)
                    && empty(&nc.excluded_subtrees)
                    && rules.has(Rule::NameConstraintsEmpty)
                {
                    out.breach(v(
                        Rule::NameConstraintsEmpty,
                        "its nameConstraints has neither permitted nor excluded subtrees".into(),
                    ))?;
                }
            }
            ParsedExtension::PolicyConstraints(_)
                if !ext.critical && rules.has(Rule::PolicyConstraintsNotCritical) =>
            {
                out.breach(v(
                    Rule::PolicyConstraintsNotCritical,
                    "its policyConstraints extension is not critical".into(),
                ))?;
            }
            ParsedExtension::AuthorityInfoAccess(aia) if rules.has(Rule::AiaMalformed) => {
                if ext.critical {
                    // Chrome and rustls-webpki refuse a critical extension they do
                    // not process: refused whatever the profile.
                    out.refuse_if_checked(v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess is critical".into(),
                    ))?;
                } else if aia.accessdescs.is_empty() {
                    out.breach(v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess is empty".into(),
                    ))?;
                } else if aia
                    .accessdescs
                    .iter()
                    .any(|d| !matches!(d.access_location, GeneralName::URI(_)))
                {
                    out.breach(v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess has a location that is not a URI".into(),
                    ))?;
                }
            }
            ParsedExtension::ParseError { .. }
                if ext.oid == OID_PKIX_AUTHORITY_INFO_ACCESS && rules.has(Rule::AiaMalformed) =>
            {
                out.breach(v(
                    Rule::AiaMalformed,
                    "its authorityInfoAccess cannot be parsed".into(),
                ))?;
            }
            _ => {}
        }
        if ext.critical && !known_extension(&ext.oid) && rules.has(Rule::UnknownCriticalExtension) {
            out.breach(v(
                Rule::UnknownCriticalExtension,
                format!(
                    "it has a critical extension this verifier does not process ({})",
                    ext.oid
                ),
            ))?;
        }
    }

    let self_signed = self_issued(c)
        && match (aki, ski) {
            (Some((_, Some(a))), Some((_, s))) => a == s,
            (Some((_, Some(_))), None) => false,
            _ => true,
        };

    // Authority key identifier (RFC 5280 4.2.1.1).
    if let Some((true, _)) = aki {
        if rules.has(Rule::AkiCritical) {
            out.breach(v(
                Rule::AkiCritical,
                "its authorityKeyIdentifier is critical".into(),
            ))?;
        }
    }
    if !self_signed && rules.has(Rule::AkiMissing) {
        match aki {
            None => out.breach(v(
                Rule::AkiMissing,
                "it has no authorityKeyIdentifier (it is not self-signed)".into(),
            ))?,
            Some((_, None)) => out.breach(v(
                Rule::AkiMissing,
                "its authorityKeyIdentifier has no keyIdentifier".into(),
            ))?,
            _ => {}
        }
    }

    // Subject key identifier (RFC 5280 4.2.1.2).
    if let Some((true, _)) = ski {
        if rules.has(Rule::SkiCritical) {
            out.breach(v(
                Rule::SkiCritical,
                "its subjectKeyIdentifier is critical".into(),
            ))?;
        }
    }
    if is_ca && ski.is_none() && rules.has(Rule::SkiMissing) {
        out.breach(v(
            Rule::SkiMissing,
            "it is a CA certificate without a subjectKeyIdentifier".into(),
        ))?;
    }

    // basicConstraints critical in CA certificates (RFC 5280 4.2.1.9).
    if is_ca && bc_critical == Some(false) && rules.has(Rule::BasicConstraintsNotCritical) {
        out.breach(v(
            Rule::BasicConstraintsNotCritical,
            "it is a CA certificate whose basicConstraints is not critical".into(),
        ))?;
    }

    // keyUsage consistent with cA (RFC 5280 4.2.1.3).
    if let Some(k) = ku {
        if k.key_cert_sign() && !is_ca && rules.has(Rule::KeyCertSignNotCa) {
            out.breach(v(
                Rule::KeyCertSignNotCa,
                "its keyUsage asserts keyCertSign but it is not a CA certificate".into(),
            ))?;
        }
    }
    if is_ca && rules.has(Rule::CaKeyUsage) {
        match ku {
            None => out.breach(v(
                Rule::CaKeyUsage,
                "it is a CA certificate without a keyUsage extension".into(),
            ))?,
            // Chrome, NSS and OpenSSL refuse an issuer whose keyUsage leaves out
            // keyCertSign: refused whatever the profile.
            Some(k) if !k.key_cert_sign() => out.refuse_if_checked(v(
                Rule::CaKeyUsage,
                "it is a CA certificate whose keyUsage does not assert keyCertSign".into(),
            ))?,
            _ => {}
        }
    }

    // Subject and subjectAltName (RFC 5280 4.2.1.6).
    let subject_empty = tbs.subject.iter().next().is_none();
    if subject_empty && rules.has(Rule::EmptySubjectSan) && !matches!(san, Some((true, _))) {
        out.breach(v(
            Rule::EmptySubjectSan,
            "its subject is empty and it has no critical subjectAltName".into(),
        ))?;
    }
    if !subject_empty && matches!(san, Some((true, _))) && rules.has(Rule::SanCritical) {
        out.breach(v(
            Rule::SanCritical,
            "its subjectAltName is critical although the subject is not empty".into(),
        ))?;
    }

    // Keys (BR 6.1.5).
    check_key(c, pos, role, out)?;

    if leaf && !is_ca {
        check_leaf(
            c,
            pos,
            role,
            purpose,
            eku,
            san.as_ref().map(|s| &s.1[..]),
            out,
        )?;
    }
    Ok(())
}

fn check_key(
    c: &X509Certificate<'_>,
    pos: usize,
    role: CertRole,
    out: &mut Findings<'_>,
) -> Result<(), Violation> {
    let rules = out.rules;
    let spki = c.public_key();
    let alg = &spki.algorithm.algorithm;
    if *alg == OID_PKCS1_RSAENCRYPTION {
        if let Ok(x509_parser::public_key::PublicKey::RSA(rsa)) = spki.parsed() {
            let m = rsa.modulus;
            let start = m.iter().position(|b| *b != 0).unwrap_or(m.len());
            let m = &m[start..];
            let bits = m
                .first()
                .map_or(0, |b| (m.len() - 1) * 8 + (8 - b.leading_zeros() as usize));
            if bits < 2048 && rules.has(Rule::RsaKeyTooSmall) {
                out.breach(violation(
                    Rule::RsaKeyTooSmall,
                    pos,
                    role,
                    c,
                    format!("its RSA key has {bits} bits (at least 2048 are required)"),
                ))?;
            }
            if bits % 8 != 0 && rules.has(Rule::RsaModulusSize) {
                out.breach(violation(
                    Rule::RsaModulusSize,
                    pos,
                    role,
                    c,
                    format!("its RSA modulus has {bits} bits, not a multiple of 8"),
                ))?;
            }
        }
    } else if *alg == OID_KEY_TYPE_DSA {
        if rules.has(Rule::DsaKey) {
            out.breach(violation(Rule::DsaKey, pos, role, c, "it has a DSA key"))?;
        }
    } else if *alg == OID_KEY_TYPE_EC_PUBLIC_KEY && rules.has(Rule::WeakCurve) {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok());
        let good = curve
            .as_ref()
            .is_some_and(|o| *o == OID_EC_P256 || oid_is(o, OID_EC_P384) || oid_is(o, OID_EC_P521));
        if !good {
            let name = match &curve {
                Some(o) if oid_is(o, &[1, 2, 840, 10045, 3, 1, 1]) => "P-192".to_string(),
                Some(o) => o.to_id_string(),
                None => "unnamed curve".to_string(),
            };
            out.breach(violation(
                Rule::WeakCurve,
                pos,
                role,
                c,
                format!("its EC key is on {name} (P-256, P-384 or P-521 are accepted)"),
            ))?;
        }
    } else if !(oid_is(alg, OID_ED25519) || oid_is(alg, OID_ED448)) {
        // Other key types never verify in rustls-webpki; nothing to add.
    }
    Ok(())
}

type Eku<'a> = Option<(bool, &'a x509_parser::extensions::ExtendedKeyUsage<'a>)>;

fn check_leaf(
    c: &X509Certificate<'_>,
    pos: usize,
    role: CertRole,
    purpose: Purpose,
    eku: Eku<'_>,
    san: Option<&[&GeneralName<'_>]>,
    out: &mut Findings<'_>,
) -> Result<(), Violation> {
    let rules = out.rules;
    let v = |rule: Rule, detail: String| violation(rule, pos, role, c, detail);
    // EKU (BR 7.1.2.7.10).
    match eku {
        Some((critical, e)) => {
            if e.any && rules.has(Rule::EkuAny) {
                out.breach(v(
                    Rule::EkuAny,
                    "its extendedKeyUsage includes anyExtendedKeyUsage".into(),
                ))?;
            }
            if critical && rules.has(Rule::EkuCritical) {
                out.breach(v(
                    Rule::EkuCritical,
                    "its extendedKeyUsage is critical".into(),
                ))?;
            }
        }
        None => {
            let rule = match purpose {
                Purpose::Server => Rule::EkuServerAuthMissing,
                Purpose::Client => Rule::EkuClientAuthMissing,
            };
            if rules.has(rule) {
                out.breach(v(
                    rule,
                    format!(
                        "it has no extendedKeyUsage; TLS {} certificates must name id-kp-{}Auth explicitly",
                        purpose.as_str(),
                        purpose.as_str()
                    ),
                ))?;
            }
        }
    }
    // The naming rules below are the Baseline Requirements' for TLS server
    // certificates; client certificates (often a person's name in the CN, no SAN) are
    // not held to them.
    if purpose == Purpose::Client {
        return Ok(());
    }
    // SAN present (BR 7.1.2.7.12).
    let Some(san) = san else {
        if rules.has(Rule::SanMissing) {
            out.breach(v(
                Rule::SanMissing,
                "it has no subjectAltName (a name only in the commonName is not matched)".into(),
            ))?;
        }
        return Ok(());
    };
    // Wildcards never over a public suffix (BR 3.2.2.6).
    if rules.has(Rule::WildcardPublicSuffix) {
        for n in san {
            if let GeneralName::DNSName(d) = n {
                if let Some(base) = d.strip_prefix("*.") {
                    if is_public_suffix(base) {
                        out.breach(v(
                            Rule::WildcardPublicSuffix,
                            format!(
                                "its wildcard name *.{} covers the public suffix {}",
                                escape(base),
                                escape(base)
                            ),
                        ))?;
                        break;
                    }
                }
            }
        }
    }
    // CN, when present, equal to one SAN (BR 7.1.4.3).
    if rules.has(Rule::CnNotInSan) {
        for cn in c.tbs_certificate.subject.iter_common_name() {
            let Ok(cn) = cn.as_str() else {
                out.breach(v(Rule::CnNotInSan, "its commonName is not a string".into()))?;
                break;
            };
            let found = san.iter().any(|n| match n {
                GeneralName::DNSName(d) => *d == cn,
                GeneralName::IPAddress(ip) => ip_text(ip).is_some_and(|t| t == cn),
                _ => false,
            });
            if !found {
                out.breach(v(
                    Rule::CnNotInSan,
                    format!(
                        "its commonName {} is not one of its subjectAltNames",
                        escape(cn)
                    ),
                ))?;
                break;
            }
        }
    }
    Ok(())
}

/// Control characters from a certificate, escaped before they reach a message.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if ch.is_control() {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

/// The canonical text form of an IP address SAN (RFC 5952 for IPv6).
fn ip_text(b: &[u8]) -> Option<String> {
    match b.len() {
        4 => Some(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string()),
        16 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(b);
            Some(std::net::Ipv6Addr::from(a).to_string())
        }
        _ => None,
    }
}

/// Whether `name` (lower-cased, no trailing dot) is itself a public suffix of the ICANN
/// section of the Public Suffix List (`com`, `co.uk`, ...).
pub(crate) fn is_public_suffix(name: &str) -> bool {
    let lower = name.trim_end_matches('.').to_ascii_lowercase();
    match psl::suffix(lower.as_bytes()) {
        Some(s) => {
            s.is_known() && s.typ() == Some(psl::Type::Icann) && s.as_bytes() == lower.as_bytes()
        }
        None => false,
    }
}

/// CRL rules for the CRLs that apply to the path: those whose issuer is the issuer of a
/// certificate on it.
fn check_crls(
    path: &[PathCert<'_>],
    parsed: &[Option<X509Certificate<'_>>],
    crls: &[Crl],
    out: &mut Findings<'_>,
) -> Result<(), Violation> {
    let rules = out.rules;
    for i in 0..path.len().saturating_sub(1) {
        let (Some(c), Some(issuer)) = (&parsed[i], &parsed[i + 1]) else {
            continue;
        };
        let issuer_name = c.tbs_certificate.issuer.as_raw();
        for crl in crls.iter().filter(|k| k.issuer() == issuer_name) {
            let role = path[i + 1].role;
            if !crl.has_number && rules.has(Rule::CrlNumberMissing) {
                out.breach(violation(
                    Rule::CrlNumberMissing,
                    i + 1,
                    role,
                    issuer,
                    "the CRL it issued has no CRLNumber extension",
                ))?;
            }
            if crl.number_critical && rules.has(Rule::CrlNumberCritical) {
                out.breach(violation(
                    Rule::CrlNumberCritical,
                    i + 1,
                    role,
                    issuer,
                    "the CRL it issued has a critical CRLNumber extension",
                ))?;
            }
            // A CRL whose authorityKeyIdentifier names another key was signed by a
            // separate CRL signer with the same name, not by this certificate.
            let ski = issuer
                .extensions()
                .iter()
                .find_map(|e| match e.parsed_extension() {
                    ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0),
                    _ => None,
                });
            if crl
                .aki
                .as_deref()
                .is_some_and(|a| ski.is_some_and(|s| s != a))
            {
                continue;
            }
            if let Ok(Some(ku)) = issuer.key_usage() {
                if !ku.value.crl_sign() && rules.has(Rule::CrlIssuerNotCrlSign) {
                    out.breach(violation(
                        Rule::CrlIssuerNotCrlSign,
                        i + 1,
                        role,
                        issuer,
                        "it issued a CRL for this path but its keyUsage does not assert cRLSign",
                    ))?;
                }
            }
        }
    }
    Ok(())
}

/// What the profile reads of a CRL: its raw issuer Name, whether it has a CRLNumber
/// and whether that is critical, and its authorityKeyIdentifier keyIdentifier.
pub(crate) struct CrlInfo {
    pub(crate) issuer: Vec<u8>,
    pub(crate) has_number: bool,
    pub(crate) number_critical: bool,
    pub(crate) aki: Option<Vec<u8>>,
}

/// Read [`CrlInfo`] from a DER CRL (empty when x509-parser cannot read it).
pub(crate) fn crl_info(der: &[u8]) -> CrlInfo {
    match x509_parser::revocation_list::CertificateRevocationList::from_der(der) {
        Ok((_, crl)) => {
            let (has_number, number_critical) = crl
                .extensions()
                .iter()
                .find(|e| oid_is(&e.oid, OID_CRL_NUMBER))
                .map_or((false, false), |e| (true, e.critical));
            let aki = crl
                .extensions()
                .iter()
                .find_map(|e| match e.parsed_extension() {
                    ParsedExtension::AuthorityKeyIdentifier(a) => {
                        a.key_identifier.as_ref().map(|k| k.0.to_vec())
                    }
                    _ => None,
                });
            CrlInfo {
                issuer: crl.issuer().as_raw().to_vec(),
                has_number,
                number_critical,
                aki,
            }
        }
        Err(_) => CrlInfo {
            issuer: Vec::new(),
            has_number: false,
            number_critical: false,
            aki: None,
        },
    }
}

/// After rustls-webpki refused a chain, name the certificate and rule behind errors it
/// reports without saying which certificate (signature algorithm, an issuer that is not
/// a CA, pathLenConstraint, name constraints, unknown critical extensions). `certs` is
/// the end entity followed by the presented intermediates; `anchors` the candidate
/// anchors (read only to name an id-RSASSA-PSS issuer). Runs on the error path only.
#[allow(deprecated)]
pub(crate) fn diagnose(
    err: &webpki::Error,
    certs: &[&[u8]],
    anchors: &[&[u8]],
) -> Option<Violation> {
    use webpki::Error as E;
    let parsed: Vec<Option<X509Certificate<'_>>> = certs
        .iter()
        .map(|d| x509_parser::parse_x509_certificate(d).ok().map(|(_, c)| c))
        .collect();
    let role = |i: usize| {
        if i == 0 {
            CertRole::EndEntity
        } else {
            CertRole::Intermediate
        }
    };
    let each = || {
        parsed
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
    };
    match err {
        E::UnsupportedSignatureAlgorithm
        | E::UnsupportedSignatureAlgorithmContext(_)
        | E::UnsupportedSignatureAlgorithmForPublicKey
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => each()
            .find_map(|(i, c)| {
                let name = weak_signature_name(&c.signature_algorithm.algorithm)?;
                Some(violation(
                    Rule::SignatureAlgorithm,
                    i,
                    role(i),
                    c,
                    format!("it is signed with {name}, which is not accepted"),
                ))
            })
            .or_else(|| rsa_pss_issuer(&parsed, anchors)),
        E::EndEntityUsedAsCa => each().skip(1).find(|(_, c)| !c.is_ca()).map(|(i, c)| {
            violation(
                Rule::IssuerNotCa,
                i,
                role(i),
                c,
                if c.basic_constraints().ok().flatten().is_none() {
                    "it is presented as an issuer but has no basicConstraints extension"
                } else {
                    "it is presented as an issuer but its basicConstraints says cA = FALSE"
                },
            )
        }),
        E::PathLenConstraintViolated => each().skip(1).find_map(|(i, c)| {
            let len = c.basic_constraints().ok().flatten()?.value.path_len_constraint?;
            let below = i.saturating_sub(1);
            (below as u32 > len).then(|| {
                violation(
                    Rule::PathLenExceeded,
                    i,
                    role(i),
                    c,
                    format!(
                        "its pathLenConstraint is {len} but {below} intermediate certificates follow it"
                    ),
                )
            })
        }),
        E::NameConstraintViolation => Some(match parsed.first().and_then(|c| c.as_ref()) {
            Some(c) => violation(
                Rule::NameConstraintViolated,
                0,
                CertRole::EndEntity,
                c,
                "a name in it is outside an issuing CA's name constraints",
            ),
            None => return None,
        }),
        E::UnsupportedCriticalExtension => each().find_map(|(i, c)| {
            // rustls-webpki processes basicConstraints, keyUsage, extendedKeyUsage,
            // subjectAltName, nameConstraints and cRLDistributionPoints; any other
            // critical extension stops it. Name the more precise rule where one applies.
            let ext = c.extensions().iter().find(|e| {
                e.critical
                    && ![
                        &OID_X509_EXT_BASIC_CONSTRAINTS,
                        &OID_X509_EXT_KEY_USAGE,
                        &OID_X509_EXT_EXTENDED_KEY_USAGE,
                        &OID_X509_EXT_SUBJECT_ALT_NAME,
                        &OID_X509_EXT_NAME_CONSTRAINTS,
                        &OID_X509_EXT_CRL_DISTRIBUTION_POINTS,
                    ]
                    .contains(&&e.oid)
            })?;
            let (rule, what) = if ext.oid == OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER {
                (Rule::AkiCritical, "its authorityKeyIdentifier is critical".to_string())
            } else if ext.oid == OID_X509_EXT_SUBJECT_KEY_IDENTIFIER {
                (Rule::SkiCritical, "its subjectKeyIdentifier is critical".to_string())
            } else if ext.oid == OID_PKIX_AUTHORITY_INFO_ACCESS {
                (Rule::AiaMalformed, "its authorityInfoAccess is critical".to_string())
            } else if known_extension(&ext.oid) {
                (
                    Rule::UnknownCriticalExtension,
                    format!(
                        "it has a critical certificate-policy extension ({}); certificate policies are not processed, so it cannot be accepted",
                        ext.oid
                    ),
                )
            } else {
                (
                    Rule::UnknownCriticalExtension,
                    format!("it has a critical extension this verifier does not process ({})", ext.oid),
                )
            };
            Some(violation(rule, i, role(i), c, what))
        }),
        _ => None,
    }
}

/// id-RSASSA-PSS, 1.2.840.113549.1.1.10: as a key algorithm, an RSASSA-PSS-only key.
const OID_RSASSA_PSS: &[u64] = &[1, 2, 840, 113549, 1, 1, 10];

/// A presented certificate or candidate anchor whose id-RSASSA-PSS key signed a
/// presented certificate: why rustls-webpki found no algorithm for that signature.
fn rsa_pss_issuer(parsed: &[Option<X509Certificate<'_>>], anchors: &[&[u8]]) -> Option<Violation> {
    let pss_key =
        |c: &X509Certificate<'_>| oid_is(&c.public_key().algorithm.algorithm, OID_RSASSA_PSS);
    let anchors: Vec<X509Certificate<'_>> = anchors
        .iter()
        .filter_map(|d| x509_parser::parse_x509_certificate(d).ok().map(|(_, c)| c))
        .collect();
    let presented = parsed.iter().flatten();
    for c in presented.clone() {
        let issuer = c.tbs_certificate.issuer.as_raw();
        let signed_by =
            |k: &X509Certificate<'_>| k.tbs_certificate.subject.as_raw() == issuer && pss_key(k);
        if let Some((i, k)) = parsed
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.as_ref().map(|k| (i, k)))
            .find(|(_, k)| signed_by(k))
        {
            let role = if i == 0 {
                CertRole::EndEntity
            } else {
                CertRole::Intermediate
            };
            return Some(violation(
                Rule::RsaPssKey,
                i,
                role,
                k,
                "its key is an RSASSA-PSS-only key (id-RSASSA-PSS), so the signature it made cannot be verified",
            ));
        }
        if let Some(k) = anchors.iter().find(|k| signed_by(k)) {
            return Some(violation(
                Rule::RsaPssKey,
                parsed.len(),
                CertRole::Anchor,
                k,
                "its key is an RSASSA-PSS-only key (id-RSASSA-PSS), so the signature it made cannot be verified",
            ));
        }
    }
    None
}

/// The name of a signature algorithm rustls-webpki does not accept, if `oid` is one.
fn weak_signature_name(oid: &Oid<'_>) -> Option<String> {
    // The broken hashes are tlskit-x509's one table (shared with both lint commands);
    // DSA with SHA-256 is refused for DSA alone.
    let id = oid.to_id_string();
    if let Some((rule, name)) = tlskit_x509::certrules::weak_signature(&id) {
        let hash = match rule {
            tlskit_x509::certrules::CertRule::Md5Signature => "MD5",
            tlskit_x509::certrules::CertRule::Md2Signature => "MD2",
            _ if name.starts_with("dsa") => "DSA, SHA-1",
            _ => "SHA-1",
        };
        return Some(format!("{name} ({hash})"));
    }
    oid_is(oid, &[2, 16, 840, 1, 101, 3, 4, 3, 2]).then(|| "dsa-with-SHA256 (DSA)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for r in Rule::ALL {
            assert!(seen.insert(r.code()), "duplicate {}", r.code());
            assert_eq!(Rule::from_code(r.code()), Ok(*r));
        }
        assert!(Rule::ALL.len() < 64);
        assert!(Rule::from_code("nope").is_err());
    }

    #[test]
    fn profiles_differ_in_cabf_rules_only() {
        let w = RuleSet::new(Profile::WebPki, &[]);
        let r = RuleSet::new(Profile::Rfc5280, &[]);
        let b = RuleSet::new(Profile::Browser, &[]);
        for rule in Rule::ALL {
            assert!(w.has(*rule) && w.refuses(*rule));
            assert_eq!(r.has(*rule), !rule.cabf_only(), "{rule}");
            assert_eq!(r.refuses(*rule), !rule.cabf_only(), "{rule}");
            // browser checks every rule; it refuses only what relying parties refuse.
            assert!(b.has(*rule));
            assert_eq!(b.refuses(*rule), rule.browser_refuses(), "{rule}");
        }
        assert!(!b.refuses(Rule::CnNotInSan) && !b.refuses(Rule::SerialInvalid));
        let ba = RuleSet::new(Profile::Browser, &[Rule::CnNotInSan]);
        assert!(!ba.has(Rule::CnNotInSan), "--allow silences a warning too");
        let a = RuleSet::new(Profile::WebPki, &[Rule::AkiMissing, Rule::IssuerNotCa]);
        assert!(!a.has(Rule::AkiMissing));
        assert!(
            a.has(Rule::IssuerNotCa),
            "webpki-enforced rules cannot be allowed"
        );
    }

    #[test]
    fn public_suffixes() {
        assert!(is_public_suffix("com"));
        assert!(is_public_suffix("co.uk"));
        assert!(is_public_suffix("CO.UK."));
        assert!(!is_public_suffix("example.com"));
        assert!(!is_public_suffix("example.co.uk"));
    }
}
