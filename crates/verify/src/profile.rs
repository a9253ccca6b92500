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

use crate::chain::{format_name, Purpose};

/// Which rule set a verification applies on top of rustls-webpki.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Every rule: RFC 5280 and the CA/Browser Forum Baseline Requirements (key sizes,
    /// explicit TLS EKU, public-suffix wildcards, CN in SAN, ...). The default for TLS.
    #[default]
    WebPki,
    /// RFC 5280 rules only: for private PKIs that do not follow the CA/B Forum profile.
    Rfc5280,
}

impl Profile {
    /// `"webpki"` or `"rfc5280"`.
    pub fn as_str(self) -> &'static str {
        match self {
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
            "webpki" => Ok(Self::WebPki),
            "rfc5280" => Ok(Self::Rfc5280),
            _ => Err(UnknownName {
                what: "profile",
                expected: "webpki, rfc5280".into(),
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
        "a self-signed root may only carry an authorityKeyIdentifier with just a keyIdentifier equal to its own subjectKeyIdentifier; reissue it"),
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
        "a root certificate must not carry extendedKeyUsage; use a root without it"),
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

    /// Whether `--allow` can lift it (rules rustls-webpki enforces itself cannot be).
    pub fn allowable(self) -> bool {
        !matches!(
            self,
            Rule::SignatureAlgorithm
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

/// The rules a verification applies: a profile minus the allowed exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuleSet(u64);

impl RuleSet {
    pub(crate) fn new(profile: Profile, allow: &[Rule]) -> Self {
        let mut bits = 0u64;
        for r in Rule::ALL {
            if profile == Profile::Rfc5280 && r.cabf_only() {
                continue;
            }
            bits |= r.bit();
        }
        for r in allow {
            if r.allowable() {
                bits &= !r.bit();
            }
        }
        Self(bits)
    }
    /// RFC 5280 rules only, minus the allowed ones (pinned certificates).
    pub(crate) fn without_cabf(self) -> Self {
        let mut bits = self.0;
        for r in Rule::ALL {
            if r.cabf_only() {
                bits &= !r.bit();
            }
        }
        Self(bits)
    }
    pub(crate) fn has(self, r: Rule) -> bool {
        self.0 & r.bit() != 0
    }
}

/// Where a certificate sits on the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
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
            self.rule.advice()
        )
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
/// already accepted them).
pub(crate) fn check_path(
    path: &[PathCert<'_>],
    rules: RuleSet,
    purpose: Purpose,
    crls: &[crate::chain::Crl],
) -> Result<(), Violation> {
    let mut anchor_path_len: Option<(u32, String)> = None;
    for (i, pc) in path.iter().enumerate() {
        // Intermediates and anchors repeat from one verification to the next: a
        // certificate that passed as this role under these rules is not parsed again
        // (positive answers only, compared byte for byte).
        if pc.role != CertRole::EndEntity {
            if let Some(len) = memo::get(pc.der, pc.role, rules) {
                if pc.role == CertRole::Anchor {
                    anchor_path_len = len.map(|l| (l, String::new()));
                }
                continue;
            }
        }
        let Ok((_, c)) = x509_parser::parse_x509_certificate(pc.der) else {
            continue;
        };
        check_cert(&c, i, pc.role, rules, purpose)?;
        let len = c
            .basic_constraints()
            .ok()
            .flatten()
            .and_then(|b| b.value.path_len_constraint);
        if pc.role == CertRole::Anchor {
            anchor_path_len = len.map(|l| (l, format_name(c.tbs_certificate.subject.as_raw())));
        }
        if pc.role != CertRole::EndEntity {
            memo::put(pc.der, pc.role, rules, len);
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
        check_crls(path, &parsed, rules, crls)?;
    }
    Ok(())
}

/// A small per-thread memo of intermediates and anchors that passed the profile.
mod memo {
    use std::cell::RefCell;

    use super::{CertRole, RuleSet};

    const ENTRIES: usize = 32;

    struct Entry {
        hash: u64,
        role: CertRole,
        rules: RuleSet,
        der: Box<[u8]>,
        path_len: Option<u32>,
    }

    thread_local! {
        static MEMO: RefCell<(Vec<Entry>, usize)> = const { RefCell::new((Vec::new(), 0)) };
    }

    /// `Some(pathLenConstraint)` when `der` passed as `role` under `rules` before.
    pub(super) fn get(der: &[u8], role: CertRole, rules: RuleSet) -> Option<Option<u32>> {
        let hash = xxhash_rust::xxh3::xxh3_64(der);
        MEMO.with(|m| {
            m.borrow()
                .0
                .iter()
                .find(|e| e.hash == hash && e.role == role && e.rules == rules && *e.der == *der)
                .map(|e| e.path_len)
        })
    }

    pub(super) fn put(der: &[u8], role: CertRole, rules: RuleSet, path_len: Option<u32>) {
        let e = Entry {
            hash: xxhash_rust::xxh3::xxh3_64(der),
            role,
            rules,
            der: der.into(),
            path_len,
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
        .filter(|pc| tlskit_store::der::cert_view(pc.der).is_none_or(|f| f.subject != f.issuer))
        .count();
    if below as u64 > u64::from(len) {
        let subject = if subject.is_empty() {
            path.last()
                .and_then(|pc| tlskit_store::der::cert_view(pc.der))
                .map_or_else(String::new, |f| format_name(f.subject))
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
        subject: format_name(c.tbs_certificate.subject.as_raw()),
        detail: detail.into(),
    }
}

/// Self-signed as far as the encoding tells (subject = issuer and no key identifier
/// pointing elsewhere); the signature itself was checked by rustls-webpki when the
/// certificate is an anchor's issuer.
fn self_issued(c: &X509Certificate<'_>) -> bool {
    c.tbs_certificate.subject.as_raw() == c.tbs_certificate.issuer.as_raw()
}

fn check_cert(
    c: &X509Certificate<'_>,
    pos: usize,
    role: CertRole,
    rules: RuleSet,
    purpose: Purpose,
) -> Result<(), Violation> {
    let v = |rule: Rule, detail: String| Err(violation(rule, pos, role, c, detail));
    let tbs = &c.tbs_certificate;
    let is_ca = c.is_ca();
    let leaf = role == CertRole::EndEntity;
    let anchor = role == CertRole::Anchor;

    // Serial number (RFC 5280 4.1.2.2); anchors are trusted by configuration, checked too.
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
            return v(Rule::SerialInvalid, what);
        }
    }

    let mut aki: Option<(bool, Option<&[u8]>)> = None;
    // authorityCertIssuer or authorityCertSerialNumber present in the AKI.
    let mut aki_issuer_serial = false;
    let mut ski: Option<(bool, &[u8])> = None;
    let mut bc_critical = None;
    let mut ku = None;
    let mut eku = None;
    let mut san: Option<(bool, Vec<&GeneralName<'_>>)> = None;
    for ext in tbs.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                aki = Some((ext.critical, a.key_identifier.as_ref().map(|k| k.0)));
                aki_issuer_serial =
                    a.authority_cert_issuer.is_some() || a.authority_cert_serial.is_some();
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
                    return v(
                        Rule::NameConstraintsNotCa,
                        "it is not a CA certificate but carries nameConstraints".into(),
                    );
                }
                if !ext.critical && rules.has(Rule::NameConstraintsNotCritical) {
                    return v(
                        Rule::NameConstraintsNotCritical,
                        "its nameConstraints extension is not critical".into(),
                    );
                }
                let empty = |s: &Option<Vec<_>>| s.as_ref().is_none_or(|v| v.is_empty());
                if empty(&nc.permitted_subtrees)
                    && empty(&nc.excluded_subtrees)
                    && rules.has(Rule::NameConstraintsEmpty)
                {
                    return v(
                        Rule::NameConstraintsEmpty,
                        "its nameConstraints has neither permitted nor excluded subtrees".into(),
                    );
                }
            }
            ParsedExtension::PolicyConstraints(_)
                if !ext.critical && rules.has(Rule::PolicyConstraintsNotCritical) =>
            {
                return v(
                    Rule::PolicyConstraintsNotCritical,
                    "its policyConstraints extension is not critical".into(),
                );
            }
            ParsedExtension::AuthorityInfoAccess(aia) if rules.has(Rule::AiaMalformed) => {
                if ext.critical {
                    return v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess is critical".into(),
                    );
                }
                if aia.accessdescs.is_empty() {
                    return v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess is empty".into(),
                    );
                }
                if aia
                    .accessdescs
                    .iter()
                    .any(|d| !matches!(d.access_location, GeneralName::URI(_)))
                {
                    return v(
                        Rule::AiaMalformed,
                        "its authorityInfoAccess has a location that is not a URI".into(),
                    );
                }
            }
            ParsedExtension::ParseError { .. }
                if ext.oid == OID_PKIX_AUTHORITY_INFO_ACCESS && rules.has(Rule::AiaMalformed) =>
            {
                return v(
                    Rule::AiaMalformed,
                    "its authorityInfoAccess cannot be parsed".into(),
                );
            }
            _ => {}
        }
        if ext.critical && !known_extension(&ext.oid) && rules.has(Rule::UnknownCriticalExtension) {
            return v(
                Rule::UnknownCriticalExtension,
                format!(
                    "it has a critical extension this verifier does not process ({})",
                    ext.oid
                ),
            );
        }
    }

    let self_signed = self_issued(c)
        && match (aki, ski) {
            (Some((_, Some(a))), Some((_, s))) => a == s,
            (Some((_, Some(_))), None) => false,
            _ => true,
        };

    // Authority key identifier (RFC 5280 4.2.1.1).
    match aki {
        Some((true, _)) if rules.has(Rule::AkiCritical) => {
            return v(
                Rule::AkiCritical,
                "its authorityKeyIdentifier is critical".into(),
            );
        }
        _ => {}
    }
    if self_issued(c) && rules.has(Rule::AkiSelfSignedMismatch) {
        if let (Some((_, Some(a))), Some((_, s))) = (aki, ski) {
            // A self-issued certificate whose AKI names another key is a key-rollover
            // certificate (not self-signed), which is fine; a root must not do that.
            if anchor && a != s {
                return v(
                    Rule::AkiSelfSignedMismatch,
                    "this self-signed root's authorityKeyIdentifier is not its own subjectKeyIdentifier".into(),
                );
            }
        }
        if anchor {
            if let Some((_, None)) = aki {
                return v(
                    Rule::AkiSelfSignedMismatch,
                    "this self-signed root's authorityKeyIdentifier has no keyIdentifier".into(),
                );
            }
            // A root's AKI, when present, is only its own key identifier: naming an
            // issuer and serial number would name another certificate.
            if aki_issuer_serial {
                return v(
                    Rule::AkiSelfSignedMismatch,
                    "this self-signed root's authorityKeyIdentifier carries authorityCertIssuer \
                     or authorityCertSerialNumber; only a keyIdentifier is allowed"
                        .into(),
                );
            }
        }
    }
    if !anchor && !self_signed && rules.has(Rule::AkiMissing) {
        match aki {
            None => {
                return v(
                    Rule::AkiMissing,
                    "it has no authorityKeyIdentifier (it is not self-signed)".into(),
                )
            }
            Some((_, None)) => {
                return v(
                    Rule::AkiMissing,
                    "its authorityKeyIdentifier has no keyIdentifier".into(),
                )
            }
            _ => {}
        }
    }

    // Subject key identifier (RFC 5280 4.2.1.2).
    if let Some((true, _)) = ski {
        if rules.has(Rule::SkiCritical) {
            return v(
                Rule::SkiCritical,
                "its subjectKeyIdentifier is critical".into(),
            );
        }
    }
    if is_ca && !anchor && ski.is_none() && rules.has(Rule::SkiMissing) {
        return v(
            Rule::SkiMissing,
            "it is a CA certificate without a subjectKeyIdentifier".into(),
        );
    }

    // basicConstraints critical in CA certificates (RFC 5280 4.2.1.9).
    if is_ca
        && !anchor
        && bc_critical == Some(false)
        && rules.has(Rule::BasicConstraintsNotCritical)
    {
        return v(
            Rule::BasicConstraintsNotCritical,
            "it is a CA certificate whose basicConstraints is not critical".into(),
        );
    }

    // keyUsage consistent with cA (RFC 5280 4.2.1.3).
    if let Some(k) = ku {
        if k.key_cert_sign() && !is_ca && rules.has(Rule::KeyCertSignNotCa) {
            return v(
                Rule::KeyCertSignNotCa,
                "its keyUsage asserts keyCertSign but it is not a CA certificate".into(),
            );
        }
    }
    if is_ca && !anchor && rules.has(Rule::CaKeyUsage) {
        match ku {
            None => {
                return v(
                    Rule::CaKeyUsage,
                    "it is a CA certificate without a keyUsage extension".into(),
                )
            }
            Some(k) if !k.key_cert_sign() => {
                return v(
                    Rule::CaKeyUsage,
                    "it is a CA certificate whose keyUsage does not assert keyCertSign".into(),
                )
            }
            _ => {}
        }
    }

    // Subject and subjectAltName (RFC 5280 4.2.1.6).
    let subject_empty = tbs.subject.iter().next().is_none();
    if subject_empty
        && !anchor
        && rules.has(Rule::EmptySubjectSan)
        && !matches!(san, Some((true, _)))
    {
        return v(
            Rule::EmptySubjectSan,
            "its subject is empty and it has no critical subjectAltName".into(),
        );
    }
    if !subject_empty && !anchor && matches!(san, Some((true, _))) && rules.has(Rule::SanCritical) {
        return v(
            Rule::SanCritical,
            "its subjectAltName is critical although the subject is not empty".into(),
        );
    }

    // Keys (BR 6.1.5).
    check_key(c, pos, role, rules)?;

    // EKU in roots (BR 7.1.2.1.2).
    if anchor && self_signed && eku.is_some() && rules.has(Rule::EkuInRoot) {
        return v(
            Rule::EkuInRoot,
            "this root certificate carries an extendedKeyUsage extension".into(),
        );
    }

    if leaf && !is_ca {
        check_leaf(
            c,
            pos,
            role,
            rules,
            purpose,
            eku,
            san.as_ref().map(|s| &s.1[..]),
        )?;
    }
    Ok(())
}

fn check_key(
    c: &X509Certificate<'_>,
    pos: usize,
    role: CertRole,
    rules: RuleSet,
) -> Result<(), Violation> {
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
                return Err(violation(
                    Rule::RsaKeyTooSmall,
                    pos,
                    role,
                    c,
                    format!("its RSA key has {bits} bits (at least 2048 are required)"),
                ));
            }
            if bits % 8 != 0 && rules.has(Rule::RsaModulusSize) {
                return Err(violation(
                    Rule::RsaModulusSize,
                    pos,
                    role,
                    c,
                    format!("its RSA modulus has {bits} bits, not a multiple of 8"),
                ));
            }
        }
    } else if *alg == OID_KEY_TYPE_DSA {
        if rules.has(Rule::DsaKey) {
            return Err(violation(Rule::DsaKey, pos, role, c, "it has a DSA key"));
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
            return Err(violation(
                Rule::WeakCurve,
                pos,
                role,
                c,
                format!("its EC key is on {name} (P-256, P-384 or P-521 are accepted)"),
            ));
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
    rules: RuleSet,
    purpose: Purpose,
    eku: Eku<'_>,
    san: Option<&[&GeneralName<'_>]>,
) -> Result<(), Violation> {
    let v = |rule: Rule, detail: String| Err(violation(rule, pos, role, c, detail));
    // EKU (BR 7.1.2.7.10).
    match eku {
        Some((critical, e)) => {
            if e.any && rules.has(Rule::EkuAny) {
                return v(
                    Rule::EkuAny,
                    "its extendedKeyUsage includes anyExtendedKeyUsage".into(),
                );
            }
            if critical && rules.has(Rule::EkuCritical) {
                return v(Rule::EkuCritical, "its extendedKeyUsage is critical".into());
            }
        }
        None => {
            let rule = match purpose {
                Purpose::Server => Rule::EkuServerAuthMissing,
                Purpose::Client => Rule::EkuClientAuthMissing,
            };
            if rules.has(rule) {
                return v(
                    rule,
                    format!(
                        "it has no extendedKeyUsage; TLS {} certificates must name id-kp-{}Auth explicitly",
                        purpose.as_str(),
                        purpose.as_str()
                    ),
                );
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
            return v(
                Rule::SanMissing,
                "it has no subjectAltName (a name only in the commonName is not matched)".into(),
            );
        }
        return Ok(());
    };
    // Wildcards never over a public suffix (BR 3.2.2.6).
    if rules.has(Rule::WildcardPublicSuffix) {
        for n in san {
            if let GeneralName::DNSName(d) = n {
                if let Some(base) = d.strip_prefix("*.") {
                    if is_public_suffix(base) {
                        return v(
                            Rule::WildcardPublicSuffix,
                            format!(
                                "its wildcard name *.{} covers the public suffix {}",
                                escape(base),
                                escape(base)
                            ),
                        );
                    }
                }
            }
        }
    }
    // CN, when present, equal to one SAN (BR 7.1.4.3).
    if rules.has(Rule::CnNotInSan) {
        for cn in c.tbs_certificate.subject.iter_common_name() {
            let Ok(cn) = cn.as_str() else {
                return v(Rule::CnNotInSan, "its commonName is not a string".into());
            };
            let found = san.iter().any(|n| match n {
                GeneralName::DNSName(d) => *d == cn,
                GeneralName::IPAddress(ip) => ip_text(ip).is_some_and(|t| t == cn),
                _ => false,
            });
            if !found {
                return v(
                    Rule::CnNotInSan,
                    format!(
                        "its commonName {} is not one of its subjectAltNames",
                        escape(cn)
                    ),
                );
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
    rules: RuleSet,
    crls: &[crate::chain::Crl],
) -> Result<(), Violation> {
    for i in 0..path.len().saturating_sub(1) {
        let (Some(c), Some(issuer)) = (&parsed[i], &parsed[i + 1]) else {
            continue;
        };
        let issuer_name = c.tbs_certificate.issuer.as_raw();
        for crl in crls.iter().filter(|k| k.issuer() == issuer_name) {
            let role = path[i + 1].role;
            if !crl.has_number && rules.has(Rule::CrlNumberMissing) {
                return Err(violation(
                    Rule::CrlNumberMissing,
                    i + 1,
                    role,
                    issuer,
                    "the CRL it issued has no CRLNumber extension",
                ));
            }
            if crl.number_critical && rules.has(Rule::CrlNumberCritical) {
                return Err(violation(
                    Rule::CrlNumberCritical,
                    i + 1,
                    role,
                    issuer,
                    "the CRL it issued has a critical CRLNumber extension",
                ));
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
                    return Err(violation(
                        Rule::CrlIssuerNotCrlSign,
                        i + 1,
                        role,
                        issuer,
                        "it issued a CRL for this path but its keyUsage does not assert cRLSign",
                    ));
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
/// the end entity followed by the presented intermediates. Runs on the error path only.
#[allow(deprecated)]
pub(crate) fn diagnose(err: &webpki::Error, certs: &[&[u8]]) -> Option<Violation> {
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
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
            each().find_map(|(i, c)| {
                let name = weak_signature_name(&c.signature_algorithm.algorithm)?;
                Some(violation(
                    Rule::SignatureAlgorithm,
                    i,
                    role(i),
                    c,
                    format!("it is signed with {name}, which is not accepted"),
                ))
            })
        }
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

/// The name of a signature algorithm rustls-webpki does not accept, if `oid` is one.
fn weak_signature_name(oid: &Oid<'_>) -> Option<String> {
    // The broken hashes are tlskit-store's one table (shared with both lint commands);
    // DSA with SHA-256 is refused for DSA alone.
    let id = oid.to_id_string();
    if let Some((rule, name)) = tlskit_store::certrules::weak_signature(&id) {
        let hash = match rule {
            tlskit_store::certrules::CertRule::Md5Signature => "MD5",
            tlskit_store::certrules::CertRule::Md2Signature => "MD2",
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
        for rule in Rule::ALL {
            assert!(w.has(*rule));
            assert_eq!(r.has(*rule), !rule.cabf_only(), "{rule}");
        }
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
