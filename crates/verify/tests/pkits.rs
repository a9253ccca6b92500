//! NIST PKITS through `ChainVerifier` (profile rfc5280, every certificate's revocation
//! status required from the PKITS CRLs): every in-scope case gives the expected answer,
//! except the documented deviations, which must still deviate (so that a fix in
//! rustls-webpki shows up here). Table: crates/verify/README.md, "Conformance".
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "pkits/cases.rs"]
mod cases;

use std::time::Duration;

use tlskit_store::StoreBuilder;
use tlskit_verify::{
    CertificateDer, ChainVerifier, Crl, Profile, Purpose, UnixTime, VerifierConfig,
};

/// In-scope cases where tlskit's answer differs from PKITS, and why. Each is a
/// limitation of rustls-webpki that tlskit cannot lift without doing its job
/// (signatures, name constraints, CRL processing) itself.
/// The second field names the cause, explained in crates/verify/README.md,
/// "Conformance": every one but `bc-not-critical` (a deliberate profile rule that
/// `openssl verify -x509_strict` shares) is a rustls-webpki limitation.
pub(crate) const DEVIATIONS: &[(&str, &str)] = &[
    ("ValidBasicSelfIssuedCRLSigningKeyTest6", "crl-key"),
    ("ValidBasicSelfIssuedNewWithOldTest3", "crl-key"),
    ("ValidBasicSelfIssuedNewWithOldTest4", "crl-key"),
    ("ValidBasicSelfIssuedOldWithNewTest1", "crl-key"),
    ("ValidSeparateCertificateandCRLKeysTest19", "crl-key"),
    ("ValidDSASignaturesTest4", "dsa"),
    ("ValidDSAParameterInheritanceTest5", "dsa"),
    ("Validpre2000UTCnotBeforeDateTest3", "pre-1970"),
    ("ValidNameChainingWhitespaceTest3", "name-bytes"),
    ("ValidNameChainingWhitespaceTest4", "name-bytes"),
    ("ValidNameChainingCapitalizationTest5", "name-bytes"),
    ("ValidUTF8StringCaseInsensitiveMatchTest11", "name-bytes"),
    (
        "ValidRolloverfromPrintableStringtoUTF8StringTest10",
        "name-bytes",
    ),
    ("ValidNameUIDsTest6", "unique-ids"),
    ("ValidpathLenConstraintTest8", "ca-as-ee"),
    ("ValidpathLenConstraintTest14", "ca-as-ee"),
    ("ValidonlyContainsCACertsTest13", "ca-as-ee"),
    (
        "ValidSelfIssuedpathLenConstraintTest15",
        "self-issued-pathlen",
    ),
    (
        "ValidSelfIssuedpathLenConstraintTest17",
        "self-issued-pathlen",
    ),
    ("ValidDNnameConstraintsTest1", "name-constraints"),
    ("ValidDNnameConstraintsTest4", "name-constraints"),
    ("ValidDNnameConstraintsTest5", "name-constraints"),
    ("ValidDNnameConstraintsTest6", "name-constraints"),
    ("ValidDNnameConstraintsTest11", "name-constraints"),
    ("ValidDNnameConstraintsTest14", "name-constraints"),
    ("ValidDNnameConstraintsTest18", "name-constraints"),
    ("ValidDNnameConstraintsTest19", "name-constraints"),
    ("ValidDNandRFC822nameConstraintsTest27", "name-constraints"),
    ("ValidRFC822nameConstraintsTest21", "name-constraints"),
    ("ValidRFC822nameConstraintsTest23", "name-constraints"),
    ("ValidRFC822nameConstraintsTest25", "name-constraints"),
    ("ValidURInameConstraintsTest34", "name-constraints"),
    ("ValidURInameConstraintsTest36", "name-constraints"),
    ("ValiddistributionPointTest1", "crl-scope"),
    ("ValiddistributionPointTest4", "crl-scope"),
    ("ValiddistributionPointTest5", "crl-scope"),
    ("ValiddistributionPointTest7", "crl-scope"),
    ("ValidIDPwithindirectCRLTest22", "crl-scope"),
    ("ValidIDPwithindirectCRLTest24", "crl-scope"),
    ("ValidIDPwithindirectCRLTest25", "crl-scope"),
    ("ValidcRLIssuerTest28", "crl-scope"),
    ("ValidcRLIssuerTest29", "crl-scope"),
    ("ValidcRLIssuerTest30", "crl-scope"),
    ("ValidcRLIssuerTest33", "crl-scope"),
    ("ValidonlySomeReasonsTest18", "crl-scope"),
    ("ValidonlySomeReasonsTest19", "crl-scope"),
    ("ValidbasicConstraintsNotCriticalTest4", "bc-not-critical"),
];

pub(crate) fn run_case(c: &cases::PkitsCase) -> Result<(), tlskit_verify::VerifyError> {
    let mut b = StoreBuilder::new();
    let anchor = std::fs::read(cases::anchor()).unwrap();
    b.add_der(&anchor, std::path::Path::new("pkits")).unwrap();
    let store = b.build();
    let crls: Vec<Crl> = c
        .crls
        .iter()
        .filter_map(|p| Crl::from_der(&std::fs::read(p).unwrap()).ok())
        .collect();
    let v = ChainVerifier::new(VerifierConfig {
        cache: None,
        profile: Profile::Rfc5280,
        crls,
        allow_unknown_revocation: false,
        enforce_crl_expiry: true,
        max_presented: 64,
        ..VerifierConfig::default()
    });
    let ee = CertificateDer::from(std::fs::read(&c.ee).unwrap());
    let inter: Vec<CertificateDer<'static>> = c
        .intermediates
        .iter()
        .map(|p| CertificateDer::from(std::fs::read(p).unwrap()))
        .collect();
    // 2024-01-01: inside every PKITS validity period that is meant to be valid.
    let t = UnixTime::since_unix_epoch(Duration::from_secs(1_704_067_200));
    v.verify(&store, &ee, &inter, None, Purpose::Server, t)
        .map(|_| ())
}

#[test]
fn pkits_in_scope_cases_give_the_expected_answer() {
    let all = cases::cases();
    assert!(all.len() > 200, "PKITS data missing: {} cases", all.len());
    let mut wrong = Vec::new();
    let mut ran = 0;
    for c in all.iter().filter(|c| c.in_scope) {
        ran += 1;
        let got = run_case(c);
        let expected = c.expect_valid.unwrap();
        let deviation = DEVIATIONS.iter().find(|(n, _)| *n == c.name);
        let ok = got.is_ok() == expected;
        match (ok, deviation) {
            (true, None) | (false, Some(_)) => {}
            (true, Some(_)) => wrong.push(format!(
                "{} {}: now correct, remove it from DEVIATIONS",
                c.section, c.name
            )),
            (false, None) => wrong.push(format!(
                "{} {}: expected {}, got {}",
                c.section,
                c.name,
                if expected { "valid" } else { "invalid" },
                match &got {
                    Ok(()) => "valid".to_string(),
                    Err(e) => format!("invalid ({}: {e})", e.rule()),
                }
            )),
        }
    }
    assert!(ran > 100, "only {ran} in-scope cases");
    assert!(
        wrong.is_empty(),
        "{} of {ran} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
