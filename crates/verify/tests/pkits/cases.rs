//! NIST PKITS cases from tests/data/pkits (see PROVENANCE.md there): for each end-entity
//! certificate, the section it belongs to, the expected answer (file name Valid/Invalid),
//! the candidate intermediates (every CA certificate reachable upward by issuer name) and
//! the CRLs of their issuers. Shared by tests/pkits.rs and examples/pkits_compare.rs.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

pub(crate) const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pkits");

/// PKITS section for a test name, and whether it is in scope.
pub(crate) fn section(name: &str) -> (&'static str, bool) {
    let has = |s: &str| name.contains(s);
    if has("CertificateExtension") {
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
    match x509_parser::x509::X509Name::from_der(raw) {
        Ok((_, n)) => n
            .to_string()
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
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
        // Every CA certificate reachable upward by issuer name.
        let mut want = vec![ee_issuer];
        let mut chosen: Vec<usize> = Vec::new();
        while let Some(n) = want.pop() {
            for (i, (_, s, iss)) in cas.iter().enumerate() {
                if *s == n && !chosen.contains(&i) {
                    chosen.push(i);
                    want.push(iss.clone());
                }
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
