//! The profile layer, rule by rule: for every rule a chain that breaks it (refused with
//! that rule's code, naming the certificate) and the same chain without the breach
//! (accepted), under the profile(s) where the rule applies; plus the interop cases of
//! issue 13 with their expected answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints, SanType, SerialNumber,
};
use tlskit_verify::{
    CertRole, CertificateDer, ChainVerifier, Profile, Purpose, Rule, ServerName, VerifierConfig,
    VerifyError,
};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/interop");

fn verifier(profile: Profile, allow: &[Rule]) -> ChainVerifier {
    ChainVerifier::new(VerifierConfig {
        cache: None,
        profile,
        allow: allow.to_vec(),
        ..VerifierConfig::default()
    })
}

/// A chain to verify: anchors, end entity, presented intermediates.
struct Case {
    anchors: Vec<CertificateDer<'static>>,
    ee: CertificateDer<'static>,
    chain: Vec<CertificateDer<'static>>,
}

impl Case {
    fn run(
        &self,
        profile: Profile,
        purpose: Purpose,
        host: Option<&str>,
    ) -> Result<(), VerifyError> {
        self.run_allow(profile, purpose, host, &[])
    }
    /// Verify under `profile` and give the warnings of the accepted path.
    fn run_verified(
        &self,
        profile: Profile,
        allow: &[Rule],
    ) -> Result<Vec<tlskit_verify::Violation>, VerifyError> {
        let refs: Vec<&CertificateDer<'_>> = self.anchors.iter().collect();
        let s = store(&refs);
        verifier(profile, allow)
            .verify(&s, &self.ee, &self.chain, None, Purpose::Server, now())
            .map(|v| v.chain.warnings.clone())
    }
    fn run_allow(
        &self,
        profile: Profile,
        purpose: Purpose,
        host: Option<&str>,
        allow: &[Rule],
    ) -> Result<(), VerifyError> {
        let refs: Vec<&CertificateDer<'_>> = self.anchors.iter().collect();
        let s = store(&refs);
        let name = host.map(|h| ServerName::try_from(h.to_string()).unwrap());
        verifier(profile, allow)
            .verify(&s, &self.ee, &self.chain, name.as_ref(), purpose, now())
            .map(|_| ())
    }
}

/// root -> intermediate -> leaf from three parameter sets (rcgen).
fn chain3(root_p: CertificateParams, int_p: CertificateParams, leaf_p: CertificateParams) -> Case {
    let r = root_with(root_p);
    let i = intermediate_with(int_p, KeyPair::generate().unwrap(), &r);
    let l = leaf_with(leaf_p, &i);
    Case {
        anchors: vec![r.der.clone()],
        ee: l.der,
        chain: vec![i.der],
    }
}

fn good_leaf() -> CertificateParams {
    leaf_params(&["a.example"])
}

fn dn(cn: &str) -> DistinguishedName {
    let mut d = DistinguishedName::new();
    d.push(DnType::CommonName, cn);
    d
}

/// (rule, broken chain, fixed chain, profiles where it applies, purpose).
struct RuleCase {
    rule: Rule,
    bad: Case,
    good: Case,
    role: CertRole,
    /// Whether the `browser` profile refuses this breach (else: a warning).
    browser_refuses: bool,
}

fn rule_cases() -> Vec<RuleCase> {
    let mut v = Vec::new();
    // Set before an `add` whose breach is the part of its rule that `browser` refuses
    // although the rule otherwise warns there.
    let hard = std::cell::Cell::new(false);
    let mut add = |rule: Rule, role: CertRole, bad: Case, good: Case| {
        v.push(RuleCase {
            rule,
            bad,
            good,
            role,
            browser_refuses: rule.browser_refuses() || hard.replace(false),
        })
    };

    // serial-invalid: zero, and 21 octets.
    let mut l = good_leaf();
    l.serial_number = Some(SerialNumber::from_slice(&[0]));
    add(
        Rule::SerialInvalid,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    let mut l = good_leaf();
    l.serial_number = Some(SerialNumber::from_slice(&[0x11; 21]));
    let mut ok = good_leaf();
    ok.serial_number = Some(SerialNumber::from_slice(&[0x11; 19])); // 19 + sign byte = 20
    add(
        Rule::SerialInvalid,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    // serial-invalid: negative (re-signed by hand: rcgen writes serials unsigned).
    {
        let r = root("R");
        let i = intermediate("I", &r);
        let mut l = good_leaf();
        l.serial_number = Some(SerialNumber::from_slice(&[0x01, 0x02, 0x03]));
        let bad = with_negative_serial(&leaf_with(l.clone(), &i).der, &i);
        let good = leaf_with(l, &i).der;
        let case = |ee| Case {
            anchors: vec![r.der.clone()],
            ee,
            chain: vec![i.der.clone()],
        };
        let err = case(bad.clone())
            .run(Profile::WebPki, Purpose::Server, None)
            .unwrap_err();
        assert!(err.to_string().contains("negative"), "{err}");
        add(
            Rule::SerialInvalid,
            CertRole::EndEntity,
            case(bad),
            case(good),
        );
    }

    // aki-missing: leaf, and intermediate.
    let mut l = good_leaf();
    l.use_authority_key_identifier_extension = false;
    add(
        Rule::AkiMissing,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    let mut i = ca_params("I");
    i.use_authority_key_identifier_extension = false;
    add(
        Rule::AkiMissing,
        CertRole::Intermediate,
        chain3(ca_params("R"), i, good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // aki-missing: an AKI with authorityCertSerialNumber but no keyIdentifier.
    let mut l = good_leaf();
    l.use_authority_key_identifier_extension = false;
    l.custom_extensions
        .push(ext(AKI, false, tlv(0x30, &tlv(0x82, &[0x01]))));
    add(
        Rule::AkiMissing,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // aki-critical: the leaf's AKI (right key id) marked critical.
    {
        let r = root("R");
        let i = intermediate("I", &r);
        let kid = ski_of(&i.der);
        let aki = tlv(0x30, &tlv(0x80, &kid));
        let mut bad = good_leaf();
        bad.use_authority_key_identifier_extension = false;
        bad.custom_extensions.push(ext(AKI, true, aki.clone()));
        let mut good = good_leaf();
        good.use_authority_key_identifier_extension = false;
        good.custom_extensions.push(ext(AKI, false, aki));
        let b = leaf_with(bad, &i).der;
        let g = leaf_with(good, &i).der;
        add(
            Rule::AkiCritical,
            CertRole::EndEntity,
            Case {
                anchors: vec![r.der.clone()],
                ee: b,
                chain: vec![i.der.clone()],
            },
            Case {
                anchors: vec![r.der.clone()],
                ee: g,
                chain: vec![i.der.clone()],
            },
        );
    }

    // ski-missing / ski-critical (intermediate).
    add(
        Rule::SkiMissing,
        CertRole::Intermediate,
        chain3(ca_params("R"), hand_ca("I", true, None, true), good_leaf()),
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(false), true),
            good_leaf(),
        ),
    );
    add(
        Rule::SkiCritical,
        CertRole::Intermediate,
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(true), true),
            good_leaf(),
        ),
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(false), true),
            good_leaf(),
        ),
    );

    // basic-constraints-not-critical (intermediate).
    add(
        Rule::BasicConstraintsNotCritical,
        CertRole::Intermediate,
        chain3(
            ca_params("R"),
            hand_ca("I", false, Some(false), true),
            good_leaf(),
        ),
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(false), true),
            good_leaf(),
        ),
    );

    // ca-key-usage: no keyUsage, and one without keyCertSign.
    add(
        Rule::CaKeyUsage,
        CertRole::Intermediate,
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(false), false),
            good_leaf(),
        ),
        chain3(
            ca_params("R"),
            hand_ca("I", true, Some(false), true),
            good_leaf(),
        ),
    );
    let mut i = ca_params("I");
    i.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::CrlSign];
    hard.set(true); // Chrome, NSS and OpenSSL refuse an issuer without keyCertSign.
    add(
        Rule::CaKeyUsage,
        CertRole::Intermediate,
        chain3(ca_params("R"), i, good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // key-cert-sign-not-ca (leaf).
    let mut l = good_leaf();
    l.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    let mut ok = good_leaf();
    ok.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    add(
        Rule::KeyCertSignNotCa,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    let mut l = good_leaf();
    l.custom_extensions
        .push(ext(&[1, 3, 6, 1, 4, 1, 99999, 1], true, vec![0x05, 0x00]));
    let mut l_ok = good_leaf();
    l_ok.custom_extensions
        .push(ext(&[1, 3, 6, 1, 4, 1, 99999, 1], false, vec![0x05, 0x00]));
    // unknown-critical-extension in the leaf (rustls-webpki refuses; the refusal is
    // traced to the certificate).
    add(
        Rule::UnknownCriticalExtension,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), l_ok),
    );

    // empty-subject-san: empty subject with a non-critical SAN (rcgen makes it critical
    // by itself when the subject is empty: that is the good case).
    let san = tlv(0x30, &tlv(0x82, b"a.example"));
    let mut l = good_leaf();
    l.distinguished_name = DistinguishedName::new();
    l.subject_alt_names.clear();
    l.custom_extensions.push(ext(SAN, false, san.clone()));
    let mut ok = good_leaf();
    ok.distinguished_name = DistinguishedName::new();
    add(
        Rule::EmptySubjectSan,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    // san-critical with a subject.
    let mut l = good_leaf();
    l.subject_alt_names.clear();
    l.custom_extensions.push(ext(SAN, true, san));
    add(
        Rule::SanCritical,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // name constraints: in a leaf, not critical, empty.
    let nc_body = tlv(0x30, &tlv(0xa0, &tlv(0x30, &tlv(0x82, b"example"))));
    let mut l = good_leaf();
    l.custom_extensions.push(ext(NC, true, nc_body.clone()));
    add(
        Rule::NameConstraintsNotCa,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    let mut i = ca_params("I");
    i.custom_extensions.push(ext(NC, false, nc_body));
    let mut i_ok = ca_params("I");
    i_ok.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("example".into())],
        excluded_subtrees: vec![],
    });
    add(
        Rule::NameConstraintsNotCritical,
        CertRole::Intermediate,
        chain3(ca_params("R"), i.clone(), good_leaf()),
        chain3(ca_params("R"), i_ok.clone(), good_leaf()),
    );
    let mut i = ca_params("I");
    i.custom_extensions.push(ext(NC, true, vec![0x30, 0x00]));
    add(
        Rule::NameConstraintsEmpty,
        CertRole::Intermediate,
        chain3(ca_params("R"), i, good_leaf()),
        chain3(ca_params("R"), i_ok, good_leaf()),
    );

    // policy-constraints-not-critical: inhibitPolicyMapping 0, not critical; the fix is
    // the same extension marked critical (rustls-webpki refuses it as unknown; tlskit's
    // RFC 5280 validator accepts it, since without requireExplicitPolicy it cannot
    // change the answer).
    let pc = tlv(0x30, &[0x81, 0x01, 0x00]);
    let mut i = ca_params("I");
    i.custom_extensions.push(ext(PC, false, pc.clone()));
    let mut i_ok = ca_params("I");
    i_ok.custom_extensions.push(ext(PC, true, pc));
    add(
        Rule::PolicyConstraintsNotCritical,
        CertRole::Intermediate,
        chain3(ca_params("R"), i, good_leaf()),
        chain3(ca_params("R"), i_ok, good_leaf()),
    );
    // requireExplicitPolicy needs certificate-policy processing, which tlskit does not
    // do (crates/verify/README.md): refused, critical or not, under both profiles.
    let mut i_req = ca_params("I");
    i_req
        .custom_extensions
        .push(ext(PC, true, tlv(0x30, &[0x80, 0x01, 0x00])));
    for p in [Profile::WebPki, Profile::Rfc5280] {
        let err = chain3(ca_params("R"), i_req.clone(), good_leaf())
            .run(p, Purpose::Server, None)
            .unwrap_err();
        assert_eq!(err.rule(), "unknown-critical-extension", "{p}: {err}");
    }

    // aia-malformed: a location that is a dNSName, not a URI.
    let ca_issuers = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x02];
    let mut bad_ad = ca_issuers.to_vec();
    bad_ad.extend(tlv(0x82, b"ca.example"));
    let mut good_ad = ca_issuers.to_vec();
    good_ad.extend(tlv(0x86, b"http://ca.example/i.crt"));
    let mut l = good_leaf();
    l.custom_extensions
        .push(ext(AIA, false, tlv(0x30, &tlv(0x30, &bad_ad))));
    let mut ok = good_leaf();
    ok.custom_extensions
        .push(ext(AIA, false, tlv(0x30, &tlv(0x30, &good_ad))));
    add(
        Rule::AiaMalformed,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    // aia-malformed: critical, and empty (SIZE (1..MAX)).
    let mut l = good_leaf();
    l.custom_extensions
        .push(ext(AIA, true, tlv(0x30, &tlv(0x30, &good_ad))));
    let mut ok = good_leaf();
    ok.custom_extensions
        .push(ext(AIA, false, tlv(0x30, &tlv(0x30, &good_ad))));
    hard.set(true); // a critical extension Chrome and rustls-webpki do not process.
    add(
        Rule::AiaMalformed,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok.clone()),
    );
    let mut l = good_leaf();
    l.custom_extensions.push(ext(AIA, false, vec![0x30, 0x00]));
    add(
        Rule::AiaMalformed,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    // EKU rules (webpki profile only).
    let mut l = good_leaf();
    l.extended_key_usages.clear();
    add(
        Rule::EkuServerAuthMissing,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    let mut l = good_leaf();
    l.extended_key_usages.push(ExtendedKeyUsagePurpose::Any);
    add(
        Rule::EkuAny,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    let server_auth = tlv(
        0x30,
        &[0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01],
    );
    let mut l = good_leaf();
    l.extended_key_usages.clear();
    l.custom_extensions
        .push(ext(EKU, true, server_auth.clone()));
    let mut ok = good_leaf();
    ok.extended_key_usages.clear();
    ok.custom_extensions.push(ext(EKU, false, server_auth));
    add(
        Rule::EkuCritical,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );
    // wildcard-public-suffix.
    let mut l = leaf_params(&["*.co.uk"]);
    l.distinguished_name = DistinguishedName::new();
    l.distinguished_name.push(DnType::OrganizationName, "x");
    let mut ok = leaf_params(&["*.example.co.uk"]);
    ok.distinguished_name = DistinguishedName::new();
    ok.distinguished_name.push(DnType::OrganizationName, "x");
    add(
        Rule::WildcardPublicSuffix,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );

    // cn-not-in-san; IP in canonical form counts.
    let mut l = good_leaf();
    l.distinguished_name = dn("b.example");
    let mut ok = leaf_params(&["a.example"]);
    ok.subject_alt_names
        .push(SanType::IpAddress("2001:db8::1".parse().unwrap()));
    ok.distinguished_name = dn("2001:db8::1");
    add(
        Rule::CnNotInSan,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), ok),
    );
    let mut l = leaf_params(&["a.example"]);
    l.subject_alt_names
        .push(SanType::IpAddress("2001:db8::1".parse().unwrap()));
    l.distinguished_name = dn("2001:0db8:0:0::1");
    add(
        Rule::CnNotInSan,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // cn-not-in-san: the same name in another case (BR 7.1.4.3: equal, not equal
    // ignoring case).
    let mut l = good_leaf();
    l.distinguished_name = dn("A.Example");
    add(
        Rule::CnNotInSan,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // san-missing: CN only.
    let mut l = good_leaf();
    l.subject_alt_names.clear();
    add(
        Rule::SanMissing,
        CertRole::EndEntity,
        chain3(ca_params("R"), ca_params("I"), l),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // issuer-not-ca: an intermediate without basicConstraints (rustls-webpki refuses
    // with EndEntityUsedAsCa; the message names the certificate).
    let mut i = ca_params("I");
    i.is_ca = IsCa::NoCa;
    add(
        Rule::IssuerNotCa,
        CertRole::Intermediate,
        chain3(ca_params("R"), i, good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // path-len-exceeded: a root with pathLenConstraint 0 above an intermediate.
    // Boundary: two intermediates below a root with pathLenConstraint 1 (refused) and 2.
    let mut r = ca_params("R");
    r.is_ca = IsCa::Ca(BasicConstraints::Constrained(1));
    let mut r_ok = ca_params("R");
    r_ok.is_ca = IsCa::Ca(BasicConstraints::Constrained(2));
    let mut i = ca_params("I");
    i.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let bad = {
        let r = root_with(r);
        let i1 = intermediate_with(ca_params("I1"), KeyPair::generate().unwrap(), &r);
        let i2 = intermediate_with(i.clone(), KeyPair::generate().unwrap(), &i1);
        let l = common::leaf(&["a.example"], &i2);
        Case {
            anchors: vec![r.der.clone()],
            ee: l.der,
            chain: vec![i2.der, i1.der],
        }
    };
    let good = {
        let r = root_with(r_ok);
        let i1 = intermediate_with(ca_params("I1"), KeyPair::generate().unwrap(), &r);
        let i2 = intermediate_with(i, KeyPair::generate().unwrap(), &i1);
        let l = common::leaf(&["a.example"], &i2);
        Case {
            anchors: vec![r.der.clone()],
            ee: l.der,
            chain: vec![i2.der, i1.der],
        }
    };
    // The anchor's own pathLenConstraint (rustls-webpki checks only intermediates').
    add(Rule::PathLenExceeded, CertRole::Anchor, bad, good);
    // An intermediate's pathLenConstraint (rustls-webpki refuses; traced to it).
    let mut i1 = ca_params("I1");
    i1.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let mk = |i1: CertificateParams| {
        let r = root("R");
        let i1 = intermediate_with(i1, KeyPair::generate().unwrap(), &r);
        let i2 = intermediate_with(ca_params("I2"), KeyPair::generate().unwrap(), &i1);
        let l = common::leaf(&["a.example"], &i2);
        Case {
            anchors: vec![r.der.clone()],
            ee: l.der,
            chain: vec![i2.der, i1.der],
        }
    };
    let mut i1_ok = ca_params("I1");
    i1_ok.is_ca = IsCa::Ca(BasicConstraints::Constrained(1));
    add(
        Rule::PathLenExceeded,
        CertRole::Intermediate,
        mk(i1),
        mk(i1_ok),
    );

    // name-constraint-violated: leaf outside the intermediate's permitted subtree.
    let mut i = ca_params("I");
    i.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("allowed.example".into())],
        excluded_subtrees: vec![],
    });
    let mut lok = leaf_params(&["www.allowed.example"]);
    lok.distinguished_name = dn("www.allowed.example");
    add(
        Rule::NameConstraintViolated,
        CertRole::EndEntity,
        chain3(ca_params("R"), i.clone(), good_leaf()),
        chain3(ca_params("R"), i, lok),
    );
    v
}

/// Trust anchors are anchors (RFC 5280 6.1.1 (d)): a root that breaks a rule about how
/// a certificate is formed (the breaches the webpki profile refused in anchors before
/// issue 23) anchors a valid path under every profile, without a warning.
fn anchor_formation_cases() -> Vec<(Rule, Case)> {
    let mut v = Vec::new();
    let mut add = |rule: Rule, _role: CertRole, bad: Case, _good: Case| v.push((rule, bad));
    // aki-self-signed-mismatch: a root whose AKI names another key.
    let mut r = ca_params("R");
    r.use_authority_key_identifier_extension = false;
    r.custom_extensions
        .push(ext(AKI, false, tlv(0x30, &tlv(0x80, &[0x42; 20]))));
    add(
        Rule::AkiSelfSignedMismatch,
        CertRole::Anchor,
        chain3(r, ca_params("I"), good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // aki-self-signed-mismatch: a root's AKI with its own keyIdentifier plus an
    // authorityCertSerialNumber, or plus an authorityCertIssuer; the fix carries only the
    // keyIdentifier.
    let own = vec![0x42; 20];
    let root_aki = |extra: &[u8]| {
        let mut r = ca_params("R");
        r.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(own.clone());
        r.use_authority_key_identifier_extension = false;
        let body = [tlv(0x80, &own), extra.to_vec()].concat();
        r.custom_extensions.push(ext(AKI, false, tlv(0x30, &body)));
        r
    };
    for extra in [tlv(0x82, &[0x01]), tlv(0xa1, &tlv(0x82, b"r.example"))] {
        add(
            Rule::AkiSelfSignedMismatch,
            CertRole::Anchor,
            chain3(root_aki(&extra), ca_params("I"), good_leaf()),
            chain3(root_aki(&[]), ca_params("I"), good_leaf()),
        );
    }

    // unknown-critical-extension: in the anchor (rustls-webpki never looks there) and
    // in the leaf (rustls-webpki refuses; the refusal is traced to the certificate).
    let mut r = ca_params("R");
    r.custom_extensions
        .push(ext(&[1, 3, 6, 1, 4, 1, 99999, 1], true, vec![0x05, 0x00]));
    let mut r_ok = ca_params("R");
    r_ok.custom_extensions
        .push(ext(&[1, 3, 6, 1, 4, 1, 99999, 1], false, vec![0x05, 0x00]));
    add(
        Rule::UnknownCriticalExtension,
        CertRole::Anchor,
        chain3(r, ca_params("I"), good_leaf()),
        chain3(r_ok, ca_params("I"), good_leaf()),
    );
    let mut r = ca_params("R");
    r.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    add(
        Rule::EkuInRoot,
        CertRole::Anchor,
        chain3(r, ca_params("I"), good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );

    // serial 0 (9 Mozilla roots), no SKI, keyUsage without keyCertSign... in a root.
    let mut r = ca_params("R");
    r.serial_number = Some(SerialNumber::from_slice(&[0]));
    add(
        Rule::SerialInvalid,
        CertRole::Anchor,
        chain3(r, ca_params("I"), good_leaf()),
        chain3(ca_params("R"), ca_params("I"), good_leaf()),
    );
    v
}

#[test]
fn anchors_are_exempt_from_formation_rules_in_every_profile() {
    let cases = anchor_formation_cases();
    assert!(cases.len() >= 6);
    for (rule, c) in &cases {
        for p in [Profile::Browser, Profile::WebPki, Profile::Rfc5280] {
            let refs: Vec<&CertificateDer<'_>> = c.anchors.iter().collect();
            let s = store(&refs);
            let v = verifier(p, &[])
                .verify(&s, &c.ee, &c.chain, None, Purpose::Server, now())
                .unwrap_or_else(|e| panic!("{rule} in an anchor under {p}: refused: {e}"));
            assert!(
                v.chain.warnings.is_empty(),
                "{rule} in an anchor under {p}: warned {:?}",
                v.chain.warnings
            );
        }
    }
}

fn ski_of(der: &[u8]) -> Vec<u8> {
    let (_, c) = x509_parser::parse_x509_certificate(der).unwrap();
    c.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
            _ => None,
        })
        .unwrap()
}

fn profiles_for(rule: Rule) -> &'static [Profile] {
    if rule.cabf_only() {
        &[Profile::WebPki]
    } else {
        &[Profile::WebPki, Profile::Rfc5280]
    }
}

#[test]
fn every_rule_refuses_its_breach_and_accepts_the_fix() {
    let cases = rule_cases();
    let mut covered = std::collections::HashSet::new();
    for c in &cases {
        for &p in profiles_for(c.rule) {
            let err = c
                .bad
                .run(p, Purpose::Server, None)
                .expect_err(&format!("{} under {p}: breach accepted", c.rule));
            assert_eq!(err.rule(), c.rule.code(), "{} under {p}: {err}", c.rule);
            let v = err.violation().expect("a violation");
            assert_eq!(v.role, c.role, "{}: {err}", c.rule);
            let text = err.to_string();
            assert!(text.contains(c.rule.section()), "{text}");
            assert!(
                text.starts_with(&format!("certificate {} (", v.position)),
                "{text}"
            );
            assert!(
                !text.contains("Context {") && !text.contains("[6, "),
                "{text}"
            );
            c.good
                .run(p, Purpose::Server, None)
                .unwrap_or_else(|e| panic!("{} under {p}: fixed chain refused: {e}", c.rule));
        }
        // browser: refused where relying parties refuse, else accepted with a warning
        // that names the rule and the certificate; the fix gives no such warning.
        let b = c.bad.run_verified(Profile::Browser, &[]);
        if c.browser_refuses {
            let err = b.expect_err(&format!("{} under browser: breach accepted", c.rule));
            assert_eq!(err.rule(), c.rule.code(), "{} under browser: {err}", c.rule);
        } else {
            let w = b.unwrap_or_else(|e| panic!("{} under browser: refused: {e}", c.rule));
            let hit = w
                .iter()
                .find(|v| v.rule == c.rule)
                .unwrap_or_else(|| panic!("{} under browser: no warning in {w:?}", c.rule));
            assert_eq!(hit.role, c.role, "{}", c.rule);
            assert!(hit.to_string().contains(c.rule.code()), "{hit}");
            // --allow silences the warning.
            let quiet = c.bad.run_verified(Profile::Browser, &[c.rule]).unwrap();
            assert!(quiet.iter().all(|v| v.rule != c.rule), "{quiet:?}");
        }
        if let Ok(w) = c.good.run_verified(Profile::Browser, &[]) {
            assert!(w.iter().all(|v| v.rule != c.rule), "{}: {w:?}", c.rule);
        } else {
            panic!("{} under browser: fixed chain refused", c.rule);
        }
        if c.rule.cabf_only() {
            // Not a rule of rfc5280: the breach passes there.
            c.bad
                .run(Profile::Rfc5280, Purpose::Server, None)
                .unwrap_or_else(|e| panic!("{} is CA/B-only but rfc5280 refused: {e}", c.rule));
        }
        // An unknown critical extension in a presented certificate is refused by
        // rustls-webpki and by tlskit's RFC 5280 validator alike: --allow cannot lift
        // that; it lifts the profile's own check (e.g. in an anchor). A critical AKI or
        // SKI, which rustls-webpki refuses too, is processed by the RFC 5280 validator,
        // so --allow aki-critical / ski-critical does accept it.
        let webpki_too = c.role != CertRole::Anchor && c.rule == Rule::UnknownCriticalExtension;
        if webpki_too {
            let err = c
                .bad
                .run_allow(Profile::WebPki, Purpose::Server, None, &[c.rule])
                .unwrap_err();
            assert_eq!(err.rule(), c.rule.code(), "{err}");
        } else if c.rule.allowable() {
            c.bad
                .run_allow(Profile::WebPki, Purpose::Server, None, &[c.rule])
                .unwrap_or_else(|e| panic!("--allow {} still refused: {e}", c.rule));
        }
        covered.insert(c.rule);
    }
    // Every certificate rule has a case (CRL rules and the client-auth twin are tested
    // below).
    for r in Rule::ALL {
        if matches!(
            r,
            // crl_rules, client_auth_needs_explicit_eku_under_webpki,
            // keys_and_signature_algorithms.
            Rule::CrlNumberMissing
                | Rule::CrlNumberCritical
                | Rule::CrlIssuerNotCrlSign
                | Rule::EkuClientAuthMissing
                | Rule::RsaKeyTooSmall
                | Rule::RsaModulusSize
                | Rule::DsaKey
                | Rule::WeakCurve
                | Rule::SignatureAlgorithm
                | Rule::CaAsEndEntity
                // anchors_are_exempt_from_formation_rules_in_every_profile: these
                // rules only ever concerned roots.
                | Rule::AkiSelfSignedMismatch
                | Rule::EkuInRoot
                // tests/verify/anchors.rs.
                | Rule::AnchorEkuPurpose
                | Rule::RsaPssKey
        ) {
            continue;
        }
        assert!(covered.contains(r), "no case for {r}");
    }
}

/// A CA certificate in the end-entity position is refused (the chain is usually in the
/// wrong order) unless the caller asks for it with `--allow ca-as-end-entity`; then it
/// is verified like any end entity (RFC 5280 6.1 allows it), and the rest of the path
/// still counts.
#[test]
fn ca_as_end_entity_only_when_allowed() {
    let case = chain3(ca_params("R"), ca_params("I"), ca_params("Sub CA"));
    let err = case
        .run(Profile::Rfc5280, Purpose::Server, None)
        .unwrap_err();
    assert_eq!(err.rule(), "ca-as-end-entity", "{err}");
    assert!(
        err.to_string().contains("--allow ca-as-end-entity"),
        "{err}"
    );
    case.run_allow(
        Profile::Rfc5280,
        Purpose::Server,
        None,
        &[Rule::CaAsEndEntity],
    )
    .unwrap();
    // Allowed, but from an anchor the store does not hold: still refused.
    let mut other = chain3(ca_params("R"), ca_params("I"), ca_params("Sub CA"));
    other.anchors = chain3(ca_params("Other"), ca_params("I"), good_leaf()).anchors;
    let err = other
        .run_allow(
            Profile::Rfc5280,
            Purpose::Server,
            None,
            &[Rule::CaAsEndEntity],
        )
        .unwrap_err();
    assert_eq!(err.rule(), "unknown-issuer", "{err}");
}

#[test]
fn client_auth_needs_explicit_eku_under_webpki() {
    let mut l = good_leaf();
    l.extended_key_usages.clear();
    let bad = chain3(ca_params("R"), ca_params("I"), l);
    let err = bad.run(Profile::WebPki, Purpose::Client, None).unwrap_err();
    assert_eq!(err.rule(), "eku-client-auth-missing", "{err}");
    bad.run(Profile::Rfc5280, Purpose::Client, None).unwrap();
    let mut l = good_leaf();
    l.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    chain3(ca_params("R"), ca_params("I"), l)
        .run(Profile::WebPki, Purpose::Client, None)
        .unwrap();
}

fn pem_case(leaf: &str) -> Case {
    let root =
        tlskit_verify::load_certs(std::path::Path::new(&format!("{DATA}/root.pem"))).unwrap();
    let mut ee =
        tlskit_verify::load_certs(std::path::Path::new(&format!("{DATA}/{leaf}.pem"))).unwrap();
    Case {
        anchors: root,
        ee: ee.remove(0),
        chain: Vec::new(),
    }
}

/// Keys and signatures (OpenSSL-made fixtures, tests/data/interop/make.sh).
#[test]
fn keys_and_signature_algorithms() {
    let good = pem_case("rsa2048");
    good.run(Profile::WebPki, Purpose::Server, Some("rsa2048.example"))
        .unwrap();
    for (file, rule, bits) in [
        ("rsa1024", Rule::RsaKeyTooSmall, "1024 bits"),
        ("rsa2052", Rule::RsaModulusSize, "2052 bits"),
        ("dsa", Rule::DsaKey, "DSA"),
        ("p192", Rule::WeakCurve, "P-192"),
    ] {
        let c = pem_case(file);
        let err = c.run(Profile::WebPki, Purpose::Server, None).unwrap_err();
        assert_eq!(err.rule(), rule.code(), "{file}: {err}");
        assert!(err.to_string().contains(bits), "{err}");
        assert!(
            err.to_string()
                .starts_with("certificate 0 (end entity, CN="),
            "{err}"
        );
        // CA/B Forum key rules: not in rfc5280, and --allow lifts them.
        c.run(Profile::Rfc5280, Purpose::Server, None).unwrap();
        c.run_allow(Profile::WebPki, Purpose::Server, None, &[rule])
            .unwrap();
    }
    // SHA-1: refused under every profile by rustls-webpki; the reason is one sentence
    // naming the certificate, not a kilobyte of Debug output.
    let c = pem_case("sha1");
    for p in [Profile::WebPki, Profile::Rfc5280] {
        let err = c.run(p, Purpose::Server, None).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.rule(), "signature-algorithm", "{text}");
        assert!(
            text.contains("certificate 0 (end entity, CN=sha1.example)"),
            "{text}"
        );
        assert!(text.contains("sha1WithRSAEncryption"), "{text}");
        assert!(text.len() < 400, "{text}");
        assert!(!text.contains("signature_algorithm_id"), "{text}");
    }
}

/// The interop cases of issue 13, with what tlskit answers and why.
#[test]
fn interop_cases_from_the_issue() {
    // 1. Leaf without an authority key identifier: refused (OpenSSL -x509_strict and
    //    pyca/cryptography refuse it too; RFC 5280 4.2.1.1 MUST), under both profiles;
    //    `--allow aki-missing` accepts it on purpose.
    let mut l = good_leaf();
    l.use_authority_key_identifier_extension = false;
    let c = chain3(ca_params("R"), ca_params("I"), l);
    for p in [Profile::WebPki, Profile::Rfc5280] {
        assert_eq!(
            c.run(p, Purpose::Server, Some("a.example"))
                .unwrap_err()
                .rule(),
            "aki-missing"
        );
    }
    c.run_allow(
        Profile::WebPki,
        Purpose::Server,
        Some("a.example"),
        &[Rule::AkiMissing],
    )
    .unwrap();

    // 2. RSA-1024 and 3. SHA-1: keys_and_signature_algorithms.

    // 4. CN-only leaf: under webpki refused as san-missing (BR 7.1.2.7.12); under rfc5280
    //    the chain is valid but a host name never matches a CN (RFC 9525: CN-IDs are not
    //    used), so with --host it is a name mismatch, as in every current browser.
    let mut l = good_leaf();
    l.subject_alt_names.clear();
    let c = chain3(ca_params("R"), ca_params("I"), l);
    assert_eq!(
        c.run(Profile::WebPki, Purpose::Server, Some("a.example"))
            .unwrap_err()
            .rule(),
        "san-missing"
    );
    assert_eq!(
        c.run(Profile::Rfc5280, Purpose::Server, Some("a.example"))
            .unwrap_err()
            .rule(),
        "name-mismatch"
    );
    c.run(Profile::Rfc5280, Purpose::Server, None).unwrap();

    // 5. A CA certificate as the leaf: refused (rustls-webpki: a CA is never an end
    //    entity; the message suggests the chain is in the wrong order).
    let r = root("R");
    let i = intermediate("I", &r);
    let c = Case {
        anchors: vec![r.der.clone()],
        ee: i.der.clone(),
        chain: vec![],
    };
    let err = c.run(Profile::WebPki, Purpose::Server, None).unwrap_err();
    assert_eq!(err.rule(), "ca-as-end-entity", "{err}");

    // 7. Trailing-dot host name: `a.example.` is the same host as `a.example` (an
    //    absolute name), so it is accepted, as curl and OpenSSL do. tlskit's
    //    reference-name parser strips the dot first (names.rs), so the name that is
    //    matched and reported is `a.example`; `tlskit verify --host a.example.` succeeds
    //    too (crates/cli/tests). Here through the library, as an embedder would parse it.
    let c = chain3(ca_params("R"), ca_params("I"), good_leaf());
    let reference = tlskit_verify::names::ReferenceName::parse("a.example.").unwrap();
    let name = reference.to_server_name().unwrap();
    assert_eq!(name.to_str(), "a.example");
    let refs: Vec<&CertificateDer<'_>> = c.anchors.iter().collect();
    let st = store(&refs);
    let v = verifier(Profile::WebPki, &[]);
    v.verify(&st, &c.ee, &c.chain, Some(&name), Purpose::Server, now())
        .unwrap();
    // The raw name, dot kept, handed straight to the verifier: rustls-webpki (0.103)
    // ignores the root dot as well.
    let raw = ServerName::try_from("a.example.".to_string()).unwrap();
    v.verify(&st, &c.ee, &c.chain, Some(&raw), Purpose::Server, now())
        .unwrap();
    // Another host, dot or not: refused.
    let other = tlskit_verify::names::ReferenceName::parse("b.example.")
        .unwrap()
        .to_server_name()
        .unwrap();
    let err = v
        .verify(&st, &c.ee, &c.chain, Some(&other), Purpose::Server, now())
        .unwrap_err();
    assert_eq!(err.rule(), "name-mismatch", "{err}");
}

#[test]
fn profile_names_parse_and_unknown_ones_are_refused() {
    assert_eq!("webpki".parse::<Profile>().unwrap(), Profile::WebPki);
    assert_eq!("rfc5280".parse::<Profile>().unwrap(), Profile::Rfc5280);
    assert_eq!("browser".parse::<Profile>().unwrap(), Profile::Browser);
    assert!("strict".parse::<Profile>().is_err());
    assert_eq!(Profile::default(), Profile::Browser);
    assert_eq!(VerifierConfig::default().profile, Profile::Browser);
}

/// Interop case 6: a self-signed end-entity certificate given as a trust source (a dev
/// certificate, Debian's snakeoil) is trusted for exactly itself (curl, gnutls-cli and
/// Python accept it the same way), under RFC 5280 rules only (no EKU asked: the CA/B
/// Forum rules are about public issuance); it never issues anything.
#[test]
fn pinned_self_signed_end_entity_trusts_exactly_itself() {
    let key = KeyPair::generate().unwrap();
    let mut p = leaf_params(&["dev.example"]);
    p.extended_key_usages.clear(); // like snakeoil: no EKU
    p.use_authority_key_identifier_extension = false;
    let pinned = p.self_signed(&key).unwrap().der().clone();
    let s = store(&[&pinned]);
    assert!(s.anchors().next().unwrap().is_pinned());
    let v = verifier(Profile::WebPki, &[]);
    let sn = ServerName::try_from("dev.example").unwrap();
    let ok = v
        .verify(&s, &pinned, &[], Some(&sn), Purpose::Server, now())
        .unwrap();
    assert_eq!(ok.chain.certs.len(), 2);
    // Wrong name: still a name check.
    let other = ServerName::try_from("other.example").unwrap();
    assert_eq!(
        v.verify(&s, &pinned, &[], Some(&other), Purpose::Server, now())
            .unwrap_err()
            .rule(),
        "name-mismatch"
    );
    // A certificate with the pinned subject as issuer, signed by the pinned key, is not
    // trusted: the pinned certificate is not an issuer.
    let issuer = rcgen::Issuer::from_params(&p, &key);
    let child = leaf_params(&["child.example"])
        .signed_by(&KeyPair::generate().unwrap(), &issuer)
        .unwrap()
        .der()
        .clone();
    let err = v
        .verify(&s, &child, &[], None, Purpose::Server, now())
        .unwrap_err();
    assert_eq!(err.rule(), "unknown-issuer", "{err}");
}

/// A CRL by `issuer`, built by hand (rcgen always writes a non-critical CRLNumber):
/// `number` = None (no CRLNumber), Some(false) / Some(true) (its criticality).
fn hand_crl(issuer: &Ca, number: Option<bool>) -> tlskit_verify::Crl {
    let (_, cert) = x509_parser::parse_x509_certificate(&issuer.der).unwrap();
    let subject = cert.tbs_certificate.subject.as_raw().to_vec();
    let alg = vec![
        0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
    ];
    let mut tbs = vec![0x02, 0x01, 0x01];
    tbs.extend(&alg);
    tbs.extend(&subject);
    tbs.extend(tlv(0x17, b"250101000000Z"));
    tbs.extend(tlv(0x17, b"350101000000Z"));
    // authorityKeyIdentifier, then the CRLNumber as asked.
    let mut exts = tlv(
        0x30,
        &[
            &[0x06, 0x03, 0x55, 0x1d, 0x23][..],
            &tlv(0x04, &tlv(0x30, &tlv(0x80, &ski_of(&issuer.der)))),
        ]
        .concat(),
    );
    if let Some(critical) = number {
        let mut ext = vec![0x06, 0x03, 0x55, 0x1d, 0x14];
        if critical {
            ext.extend([0x01, 0x01, 0xff]);
        }
        ext.extend(tlv(0x04, &[0x02, 0x01, 0x01]));
        exts.extend(tlv(0x30, &ext));
    }
    tbs.extend(tlv(0xa0, &tlv(0x30, &exts)));
    let tbs = tlv(0x30, &tbs);
    use rcgen::SigningKey;
    let sig = issuer.key.sign(&tbs).unwrap();
    let mut bits = vec![0x00];
    bits.extend(sig);
    let mut body = tbs;
    body.extend(&alg);
    body.extend(tlv(0x03, &bits));
    tlskit_verify::Crl::from_der(&tlv(0x30, &body)).unwrap()
}

/// The CRL rules, both ways: a CRL by the root (which issued the intermediate) without a
/// CRLNumber, with a critical one, and by a root whose keyUsage lacks cRLSign.
#[test]
fn crl_rules() {
    // RFC 5280 rules: the same answers under both profiles.
    for profile in [Profile::WebPki, Profile::Rfc5280] {
        crl_rules_under(profile);
    }
}

fn crl_rules_under(profile: Profile) {
    let run = |root_p: CertificateParams, number: Option<bool>| {
        let r = root_with(root_p);
        let i = intermediate("I", &r);
        let l = common::leaf(&["a.example"], &i);
        let crl = hand_crl(&r, number);
        let s = store(&[&r.der]);
        ChainVerifier::new(VerifierConfig {
            cache: None,
            crls: vec![crl],
            profile,
            ..VerifierConfig::default()
        })
        .verify(
            &s,
            &l.der,
            std::slice::from_ref(&i.der),
            None,
            Purpose::Server,
            now(),
        )
        .map(|_| ())
    };
    run(ca_params("R"), Some(false)).unwrap();
    let err = run(ca_params("R"), None).unwrap_err();
    assert_eq!(err.rule(), "crl-number-missing", "{err}");
    assert!(
        err.to_string()
            .starts_with("certificate 2 (trust anchor, CN=R)"),
        "{err}"
    );
    let err = run(ca_params("R"), Some(true)).unwrap_err();
    assert_eq!(err.rule(), "crl-number-critical", "{err}");
    let mut no_crl_sign = ca_params("R");
    no_crl_sign.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let err = run(no_crl_sign, Some(false)).unwrap_err();
    assert_eq!(err.rule(), "crl-issuer-not-crl-sign", "{err}");
}

/// Name constraints rustls-webpki refuses outright (rfc822Name, directoryName) are
/// processed by tlskit's RFC 5280 validator: a name inside passes, a name outside (or
/// inside an excluded subtree) is refused as `name-constraint-violated`. (URI subtrees,
/// which rcgen cannot write, are covered by PKITS 4.13.34-38.)
#[test]
fn rfc822_and_directory_name_constraints_both_ways() {
    let constrained = |permitted: Vec<GeneralSubtree>, excluded: Vec<GeneralSubtree>| {
        let mut i = ca_params("I");
        i.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: excluded,
        });
        i
    };
    let with_mail = |m: &str| {
        let mut l = good_leaf();
        l.subject_alt_names
            .push(SanType::Rfc822Name(m.try_into().unwrap()));
        l
    };
    let with_org = |o: &str| {
        let mut l = good_leaf();
        let mut d = DistinguishedName::new();
        d.push(DnType::OrganizationName, o);
        d.push(DnType::CommonName, "a.example");
        l.distinguished_name = d;
        l
    };
    let org = |o: &str| {
        let mut d = DistinguishedName::new();
        d.push(DnType::OrganizationName, o);
        GeneralSubtree::DirectoryName(d)
    };
    let mail = |m: &str| GeneralSubtree::Rfc822Name(m.into());
    // (permitted, excluded, leaf, accepted?)
    let table: Vec<(
        Vec<GeneralSubtree>,
        Vec<GeneralSubtree>,
        CertificateParams,
        bool,
    )> = vec![
        // rfc822Name: a host
        (
            vec![mail("example.com")],
            vec![],
            with_mail("a@example.com"),
            true,
        ),
        (
            vec![mail("example.com")],
            vec![],
            with_mail("a@mail.example.com"),
            false,
        ),
        // a domain (leading dot): hosts below it only
        (
            vec![mail(".example.com")],
            vec![],
            with_mail("a@mail.example.com"),
            true,
        ),
        (
            vec![mail(".example.com")],
            vec![],
            with_mail("a@example.com"),
            false,
        ),
        // an exact mailbox
        (
            vec![mail("ops@example.com")],
            vec![],
            with_mail("ops@example.com"),
            true,
        ),
        (
            vec![mail("ops@example.com")],
            vec![],
            with_mail("dev@example.com"),
            false,
        ),
        // excluded
        (
            vec![],
            vec![mail("evil.example")],
            with_mail("x@evil.example"),
            false,
        ),
        (
            vec![],
            vec![mail("evil.example")],
            with_mail("x@good.example"),
            true,
        ),
        // directoryName: an RDN prefix, compared as RFC 5280 7.1 says (case, spaces)
        (
            vec![org("Example Org")],
            vec![],
            with_org("Example Org"),
            true,
        ),
        (
            vec![org("EXAMPLE  org")],
            vec![],
            with_org("Example Org"),
            true,
        ),
        (
            vec![org("Example Org")],
            vec![],
            with_org("Other Org"),
            false,
        ),
        (
            vec![],
            vec![org("Example Org")],
            with_org("example org"),
            false,
        ),
        (
            vec![],
            vec![org("Example Org")],
            with_org("Other Org"),
            true,
        ),
    ];
    for (n, (permitted, excluded, leaf, ok)) in table.into_iter().enumerate() {
        let case = chain3(ca_params("R"), constrained(permitted, excluded), leaf);
        let got = case.run(Profile::Rfc5280, Purpose::Server, Some("a.example"));
        if ok {
            got.unwrap_or_else(|e| panic!("row {n}: refused: {e}"));
        } else {
            let e = got.expect_err(&format!("row {n}: accepted"));
            assert_eq!(e.rule(), "name-constraint-violated", "row {n}: {e}");
        }
    }
}

/// RFC 5280 6.1.4 (l): a self-issued intermediate (a key rollover: same name, new key,
/// signed by the old one) does not count toward a pathLenConstraint above it; another
/// CA there does. Under the default (webpki) profile, both ways.
#[test]
fn self_issued_intermediate_does_not_count_toward_path_len() {
    let r = root("R");
    let mut ip = ca_params("I");
    ip.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let i = intermediate_with(ip, KeyPair::generate().unwrap(), &r);
    let run = |next: &Ca| {
        let l = common::leaf(&["a.example"], next);
        Case {
            anchors: vec![r.der.clone()],
            ee: l.der,
            chain: vec![next.der.clone(), i.der.clone()],
        }
        .run(Profile::WebPki, Purpose::Server, Some("a.example"))
    };
    // Same name as I, new key, signed by I's old key: self-issued.
    let rollover = intermediate_with(ca_params("I"), KeyPair::generate().unwrap(), &i);
    run(&rollover).unwrap_or_else(|e| panic!("self-issued counted: {e}"));
    // Another name: a second CA below I's pathLenConstraint 0.
    let other = intermediate_with(ca_params("J"), KeyPair::generate().unwrap(), &i);
    let err = run(&other).unwrap_err();
    assert_eq!(err.rule(), "path-len-exceeded", "{err}");
}
