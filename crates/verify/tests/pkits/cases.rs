//! NIST PKITS cases from tests/data/pkits (see PROVENANCE.md there): for each end-entity
//! certificate, the section it belongs to, the expected answer (file name Valid/Invalid),
//! the candidate intermediates (every CA certificate reachable upward by issuer name) and
//! the CRLs of their issuers, and how tlskit runs a case. Shared by tests/verify/pkits.rs and
//! examples/pkits_compare.rs.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tlskit_store::StoreBuilder;
use tlskit_verify::{
    CertificateDer, ChainVerifier, Crl, Profile, Purpose, Rule, UnixTime, VerifierConfig,
    VerifyError,
};

/// 2024-01-01: inside every PKITS validity period that is meant to be valid.
pub(crate) const TIME: u64 = 1_704_067_200;

/// How tlskit runs PKITS: the `rfc5280` profile (PKITS leaves carry no EKU), every
/// certificate's revocation status required from the PKITS CRLs, and the two deliberate
/// exceptions PKITS's "initial settings" imply: a CA certificate may be the end entity
/// (4.6.8, 4.6.14, 4.14.13), and basicConstraints need not be critical (4.6.4: a CA
/// issuance rule, not a path-validation one). `pkits.rs` checks that both are refused
/// without the exception.
pub(crate) fn pkits_config(crls: Vec<Crl>, allow: Vec<Rule>) -> VerifierConfig {
    // `pkits_compare` measures other profiles with TLSKIT_PKITS_PROFILE (issue 23); the
    // test suite always runs rfc5280.
    let profile = std::env::var("TLSKIT_PKITS_PROFILE")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(Profile::Rfc5280);
    VerifierConfig {
        cache: None,
        profile,
        crls,
        allow_unknown_revocation: false,
        enforce_crl_expiry: true,
        max_presented: 64,
        allow,
        ..VerifierConfig::default()
    }
}

/// The exceptions tlskit runs PKITS with (see [`pkits_config`]).
pub(crate) const PKITS_ALLOW: &[Rule] = &[Rule::CaAsEndEntity, Rule::BasicConstraintsNotCritical];

/// Run one case through `ChainVerifier` with `allow`. CRLs tlskit refuses to load (delta
/// CRLs, unknown critical extensions) are left out, as `tlskit verify --crl` would refuse
/// them.
pub(crate) fn run_case_with(c: &PkitsCase, allow: &[Rule]) -> Result<(), VerifyError> {
    let mut b = StoreBuilder::new();
    b.add_der(&read(&anchor()), Path::new("pkits")).unwrap();
    let store = b.build();
    let crls: Vec<Crl> = c
        .crls
        .iter()
        .filter_map(|p| Crl::from_der(&read(p)).ok())
        .collect();
    let v = ChainVerifier::new(pkits_config(crls, allow.to_vec()));
    let ee = CertificateDer::from(read(&c.ee));
    let inter: Vec<CertificateDer<'static>> = c
        .intermediates
        .iter()
        .map(|p| CertificateDer::from(read(p)))
        .collect();
    let t = UnixTime::since_unix_epoch(Duration::from_secs(TIME));
    v.verify(&store, &ee, &inter, None, Purpose::Server, t)
        .map(|_| ())
}

/// [`run_case_with`] with [`PKITS_ALLOW`].
pub(crate) fn run_case(c: &PkitsCase) -> Result<(), VerifyError> {
    run_case_with(c, PKITS_ALLOW)
}

pub(crate) const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pkits");

/// PKITS section for a test name, and whether it is in scope.
pub(crate) fn section(name: &str) -> (&'static str, bool) {
    let has = |s: &str| name.contains(s);
    if has("DSA") {
        // No DSA in the crypto provider (aws-lc-rs); tlskit implements no cryptography.
        ("4.1 DSA", false)
    } else if has("CertificateExtension") {
        ("4.16", true)
    } else if has("deltaCRL") {
        ("4.15", false)
    } else if has("distributionPoint")
        || has("onlyContains")
        || has("onlySomeReasons")
        || has("IDPwithindirectCRL")
        || has("cRLIssuer")
        || has("NoissuingDistributionPoint")
    {
        ("4.14", true)
    } else if has("nameConstraints") {
        ("4.13", true)
    } else if has("Polic")
        || has("Mapping")
        || has("Qualifier")
        || has("inhibit")
        || has("requireExplicit")
    {
        ("4.8-4.12", false)
    } else if has("keyUsage") {
        ("4.7", true)
    } else if has("basicConstraints") || has("cAFalse") || has("pathLenConstraint") {
        ("4.6", true)
    } else if has("BasicSelfIssued") {
        ("4.5", true)
    } else if has("CRL")
        || has("Revoked")
        || has("SerialNumber")
        || has("SeparateCertificateandCRLKeys")
    {
        ("4.4", true)
    } else if has("NameChaining")
        || has("NameUIDs")
        || has("RFC3280")
        || has("UTF8String")
        || has("Rollover")
    {
        ("4.3", true)
    } else if has("notBefore") || has("notAfter") {
        ("4.2", true)
    } else {
        ("4.1", true)
    }
}

pub(crate) struct PkitsCase {
    /// Test name (file name without EE.crt), e.g. `InvalidCASignatureTest2`.
    pub name: String,
    pub section: &'static str,
    pub in_scope: bool,
    /// From the name: Valid... or Invalid... (None for policy cases named otherwise).
    pub expect_valid: Option<bool>,
    pub ee: PathBuf,
    pub intermediates: Vec<PathBuf>,
    pub crls: Vec<PathBuf>,
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Issuer/subject names compared loosely (case, spaces) so that the name-chaining
/// cases find their candidate CAs; the verifier itself compares exactly.
fn norm(raw: &[u8]) -> String {
    use x509_parser::prelude::FromDer;
    // RFC 5280 7.1, roughly: attribute values case-folded, whitespace collapsed and
    // trimmed (leading and trailing spaces are escaped by a rendered name, so each value
    // is folded on its own).
    match x509_parser::x509::X509Name::from_der(raw) {
        Ok((_, n)) => n
            .iter_attributes()
            .map(|a| {
                let v = a
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|_| String::from_utf8_lossy(a.as_slice()).into_owned());
                format!(
                    "{}={}",
                    a.attr_type(),
                    v.to_lowercase()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join(","),
        Err(_) => String::new(),
    }
}

fn names(der: &[u8]) -> (String, String) {
    let (_, c) = x509_parser::parse_x509_certificate(der).unwrap();
    (
        norm(c.tbs_certificate.subject.as_raw()),
        norm(c.tbs_certificate.issuer.as_raw()),
    )
}

/// The cRLIssuer directory names of a certificate's cRLDistributionPoints, normalized.
fn crl_issuers(der: &[u8]) -> Vec<String> {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    let (_, c) = x509_parser::parse_x509_certificate(der).unwrap();
    let mut out = Vec::new();
    for e in c.extensions() {
        if let ParsedExtension::CRLDistributionPoints(p) = e.parsed_extension() {
            for dp in p.points.iter() {
                for g in dp.crl_issuer.iter().flatten() {
                    if let GeneralName::DirectoryName(n) = g {
                        out.push(norm(n.as_raw()));
                    }
                }
            }
        }
    }
    out
}

/// keyUsage asserts cRLSign and not keyCertSign.
fn crl_signer_only(der: &[u8]) -> bool {
    let (_, c) = x509_parser::parse_x509_certificate(der).unwrap();
    matches!(c.key_usage(), Ok(Some(ku)) if ku.value.crl_sign() && !ku.value.key_cert_sign())
}

pub(crate) fn anchor() -> PathBuf {
    Path::new(DIR).join("certs/TrustAnchorRootCertificate.crt")
}

pub(crate) fn cases() -> Vec<PkitsCase> {
    let certs_dir = Path::new(DIR).join("certs");
    let crls_dir = Path::new(DIR).join("crls");
    let mut cas = Vec::new();
    let mut ees = Vec::new();
    for e in std::fs::read_dir(&certs_dir).unwrap() {
        let p = e.unwrap().path();
        let f = p.file_name().unwrap().to_string_lossy().to_string();
        if f == "TrustAnchorRootCertificate.crt" {
            continue;
        }
        let (s, i) = names(&read(&p));
        if f.ends_with("EE.crt") {
            ees.push((p, i));
        } else {
            cas.push((p, s, i));
        }
    }
    let mut crls = Vec::new();
    for e in std::fs::read_dir(&crls_dir).unwrap() {
        let p = e.unwrap().path();
        use x509_parser::prelude::FromDer;
        let der = read(&p);
        let issuer = match x509_parser::revocation_list::CertificateRevocationList::from_der(&der) {
            Ok((_, c)) => norm(c.tbs_cert_list.issuer.as_raw()),
            Err(_) => continue,
        };
        crls.push((p, issuer));
    }
    let (anchor_subject, _) = names(&read(&anchor()));
    let mut out = Vec::new();
    ees.sort();
    for (ee, ee_issuer) in ees {
        let name = ee
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches("EE.crt")
            .to_string();
        let (section, in_scope) = section(&name);
        // Every CA certificate reachable upward by issuer name, and the certificates of
        // CRL issuers named in cRLDistributionPoints (indirect CRLs), with theirs.
        let mut want = vec![ee_issuer];
        want.extend(crl_issuers(&read(&ee)));
        let mut chosen: Vec<usize> = Vec::new();
        while let Some(n) = want.pop() {
            for (i, (_, s, iss)) in cas.iter().enumerate() {
                if *s == n && !chosen.contains(&i) {
                    chosen.push(i);
                    want.push(iss.clone());
                    want.extend(crl_issuers(&read(&cas[i].0)));
                }
            }
        }
        // CRL-signing certificates (cRLSign without keyCertSign) issued by a chosen CA:
        // an indirect CRL's issuer named by a relative distribution point name, which
        // x509-parser 0.18 cannot read above.
        for i in 0..cas.len() {
            if !chosen.contains(&i)
                && chosen.iter().any(|&j| cas[j].1 == cas[i].2)
                && crl_signer_only(&read(&cas[i].0))
            {
                chosen.push(i);
            }
        }
        let mut subjects: Vec<&String> = chosen.iter().map(|&i| &cas[i].1).collect();
        subjects.push(&anchor_subject);
        let mut case_crls: Vec<PathBuf> = crls
            .iter()
            .filter(|(_, iss)| subjects.contains(&iss))
            .map(|(p, _)| p.clone())
            .collect();
        case_crls.sort();
        let mut intermediates: Vec<PathBuf> = chosen.iter().map(|&i| cas[i].0.clone()).collect();
        intermediates.sort();
        let expect_valid = if name.starts_with("Valid") {
            Some(true)
        } else if name.starts_with("Invalid") {
            Some(false)
        } else {
            None
        };
        out.push(PkitsCase {
            in_scope: in_scope && expect_valid.is_some(),
            name,
            section,
            expect_valid,
            ee,
            intermediates,
            crls: case_crls,
        });
    }
    out
}
