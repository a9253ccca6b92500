//! Issue 23: trust anchors are anchors, and the `browser` profile (the default) reports
//! hygiene rules as warnings instead of refusing the chain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;

use rcgen::{
    CertificateParams, DnType, ExtendedKeyUsagePurpose, GeneralSubtree, NameConstraints, SanType,
    SerialNumber,
};
use tlskit_verify::{
    CacheLimits, CertRole, CertificateDer, ChainVerifier, Profile, Purpose, Rule, ServerName,
    Verified, VerifierConfig, VerifyError,
};

fn verifier(profile: Profile, allow: &[Rule]) -> ChainVerifier {
    ChainVerifier::new(VerifierConfig {
        cache: None,
        profile,
        allow: allow.to_vec(),
        ..VerifierConfig::default()
    })
}

/// root -> intermediate -> leaf, verified for `host` (when given) under `profile`.
fn run(
    root_p: CertificateParams,
    leaf_p: CertificateParams,
    host: Option<&str>,
    profile: Profile,
    purpose: Purpose,
) -> Result<Verified, VerifyError> {
    let r = root_with(root_p);
    let i = intermediate("I", &r);
    let l = leaf_with(leaf_p, &i);
    let s = store(&[&r.der]);
    let name = host.map(|h| ServerName::try_from(h.to_string()).unwrap());
    verifier(profile, &[]).verify(&s, &l.der, &[i.der], name.as_ref(), purpose, now())
}

fn root_with_eku(eku: &[ExtendedKeyUsagePurpose]) -> CertificateParams {
    let mut r = ca_params("R");
    r.extended_key_usages = eku.to_vec();
    r
}

/// An anchor's EKU is a constraint, as Chrome, NSS and Go apply it: a root limited to
/// clientAuth does not anchor a server chain, in any profile; one that includes the
/// purpose (Pebble's minica root: serverAuth + clientAuth) or anyExtendedKeyUsage does,
/// with no warning (eku-in-root is never held against an anchor).
#[test]
fn anchor_eku_constrains_the_purpose_and_is_no_formation_breach() {
    use ExtendedKeyUsagePurpose::{Any, ClientAuth, ServerAuth};
    for p in [Profile::Browser, Profile::WebPki, Profile::Rfc5280] {
        let err = run(
            root_with_eku(&[ClientAuth]),
            leaf_params(&["a.example"]),
            Some("a.example"),
            p,
            Purpose::Server,
        )
        .expect_err("a clientAuth-only anchor accepted for a server");
        assert_eq!(err.rule(), "anchor-eku-purpose", "{p}: {err}");
        let v = err.violation().unwrap();
        assert_eq!(v.role, CertRole::Anchor);
        assert_eq!(v.position, 2);
        let text = err.to_string();
        assert!(text.contains("id-kp-serverAuth"), "{text}");
        assert!(
            !text.contains("reissue"),
            "never advise reissuing a root: {text}"
        );
        // The same root anchors a client certificate.
        run(
            root_with_eku(&[ClientAuth]),
            leaf_params(&["a.example"]),
            None,
            p,
            Purpose::Client,
        )
        .unwrap_or_else(|e| panic!("{p}: clientAuth anchor refused for a client: {e}"));
        for eku in [&[ServerAuth, ClientAuth][..], &[Any]] {
            let v = run(
                root_with_eku(eku),
                leaf_params(&["a.example"]),
                Some("a.example"),
                p,
                Purpose::Server,
            )
            .unwrap_or_else(|e| panic!("{p}: anchor with EKU {eku:?} refused: {e}"));
            assert!(v.chain.warnings.is_empty(), "{p}: {:?}", v.chain.warnings);
        }
        // --allow lifts the constraint deliberately.
        let r = root_with(root_with_eku(&[ClientAuth]));
        let i = intermediate("I", &r);
        let l = leaf(&["a.example"], &i);
        let s = store(&[&r.der]);
        verifier(p, &[Rule::AnchorEkuPurpose])
            .verify(&s, &l.der, &[i.der], None, Purpose::Server, now())
            .unwrap();
    }
}

fn leaf_named(name: &str) -> CertificateParams {
    leaf_params(&[name])
}

/// QuoVadis Root CA 2 and 3 and Certigna carry an authorityKeyIdentifier with their own
/// keyIdentifier plus authorityCertIssuer and authorityCertSerialNumber; 9 Mozilla roots
/// have serial number 0. Both anchor a compliant chain under every profile, silently.
#[test]
fn quovadis_like_and_serial_zero_roots_anchor_chains() {
    let own = vec![0x5a; 20];
    let mut qv = ca_params("QuoVadis-like Root CA 2");
    qv.key_identifier_method = rcgen::KeyIdMethod::PreSpecified(own.clone());
    qv.use_authority_key_identifier_extension = false;
    // keyIdentifier [0], authorityCertIssuer [1] { directoryName [4] Name },
    // authorityCertSerialNumber [2] 0x0509.
    let name = tlv(
        0x30,
        &tlv(
            0x31,
            &tlv(
                0x30,
                &[
                    vec![0x06, 0x03, 0x55, 0x04, 0x03],
                    tlv(0x0c, b"QuoVadis-like Root CA 2"),
                ]
                .concat(),
            ),
        ),
    );
    let body = [
        tlv(0x80, &own),
        tlv(0xa1, &tlv(0xa4, &name)),
        tlv(0x82, &[0x05, 0x09]),
    ]
    .concat();
    qv.custom_extensions
        .push(ext(&[2, 5, 29, 35], false, tlv(0x30, &body)));
    let mut zero = ca_params("Go Daddy-like Root Certificate Authority - G2");
    zero.serial_number = Some(SerialNumber::from_slice(&[0]));
    for root in [qv, zero] {
        for p in [Profile::Browser, Profile::WebPki, Profile::Rfc5280] {
            let v = run(
                root.clone(),
                leaf_named("a.example"),
                Some("a.example"),
                p,
                Purpose::Server,
            )
            .unwrap_or_else(|e| panic!("{p}: refused: {e}"));
            assert!(v.chain.warnings.is_empty(), "{p}: {:?}", v.chain.warnings);
        }
    }
}

/// The cases of the issue that were refused for cn-not-in-san alone: a name-constrained
/// chain, a leftmost-wildcard SAN and an IP SAN, each with a CN outside the SANs. The
/// browser default accepts them with a cn-not-in-san warning on the end entity; webpki
/// refuses them for that rule.
#[test]
fn cn_outside_san_is_a_warning_by_default_and_a_refusal_under_webpki() {
    let cn_out = |mut p: CertificateParams| {
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(DnType::CommonName, "Example Web Server");
        p
    };
    // Name-constrained intermediate.
    let r = root("R");
    let mut ip = ca_params("Constrained I");
    ip.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("corp.example".into())],
        excluded_subtrees: vec![],
    });
    let i = intermediate_with(ip, rcgen::KeyPair::generate().unwrap(), &r);
    let nc_leaf = leaf_with(cn_out(leaf_params(&["www.corp.example"])), &i);
    let i2 = intermediate("I", &r);
    let wild = leaf_with(cn_out(leaf_params(&["*.example.org"])), &i2);
    let mut ipp = cn_out(leaf_params(&[]));
    ipp.subject_alt_names = vec![SanType::IpAddress("192.0.2.7".parse().unwrap())];
    let ip_leaf = leaf_with(ipp, &i2);
    let s = store(&[&r.der]);
    let cases: [(&CertificateDer<'_>, &CertificateDer<'static>, &str); 3] = [
        (&nc_leaf.der, &i.der, "www.corp.example"),
        (&wild.der, &i2.der, "host.example.org"),
        (&ip_leaf.der, &i2.der, "192.0.2.7"),
    ];
    for (ee, inter, host) in cases {
        let name = ServerName::try_from(host.to_string()).unwrap();
        let v = verifier(Profile::Browser, &[])
            .verify(
                &s,
                ee,
                std::slice::from_ref(inter),
                Some(&name),
                Purpose::Server,
                now(),
            )
            .unwrap_or_else(|e| panic!("{host}: refused by default: {e}"));
        let w = &v.chain.warnings;
        assert_eq!(w.len(), 1, "{host}: {w:?}");
        assert_eq!(w[0].rule, Rule::CnNotInSan);
        assert_eq!(w[0].position, 0);
        assert_eq!(w[0].role, CertRole::EndEntity);
        assert_eq!(w[0].subject, "CN=Example Web Server");
        assert!(w[0].to_string().contains("Example Web Server"), "{}", w[0]);
        let err = verifier(Profile::WebPki, &[])
            .verify(
                &s,
                ee,
                std::slice::from_ref(inter),
                Some(&name),
                Purpose::Server,
                now(),
            )
            .expect_err("webpki accepted a CN outside the SANs");
        assert_eq!(err.rule(), "cn-not-in-san", "{host}: {err}");
        // --allow still works under webpki.
        verifier(Profile::WebPki, &[Rule::CnNotInSan])
            .verify(
                &s,
                ee,
                std::slice::from_ref(inter),
                Some(&name),
                Purpose::Server,
                now(),
            )
            .unwrap();
    }
}

/// A cached answer keeps the warnings of the verification that filled the cache.
#[test]
fn the_cache_keeps_warnings() {
    let r = root("R");
    let i = intermediate("I", &r);
    let mut lp = leaf_params(&["a.example"]);
    lp.distinguished_name = rcgen::DistinguishedName::new();
    lp.distinguished_name
        .push(DnType::CommonName, "other.example");
    let l = leaf_with(lp, &i);
    let s = store(&[&r.der]);
    let v = ChainVerifier::new(VerifierConfig {
        cache: Some(CacheLimits::default()),
        ..VerifierConfig::default()
    });
    let name = ServerName::try_from("a.example").unwrap();
    let chain = [i.der];
    let first = v
        .verify(&s, &l.der, &chain, Some(&name), Purpose::Server, now())
        .unwrap();
    let second = v
        .verify(&s, &l.der, &chain, Some(&name), Purpose::Server, now())
        .unwrap();
    assert!(!first.cached && second.cached);
    assert_eq!(first.chain.warnings.len(), 1);
    assert_eq!(second.chain.warnings, first.chain.warnings);
}

/// Warnings of an intermediate survive the per-thread memo (a second verification of
/// the same path, uncached, reports them again at the right position).
#[test]
fn intermediate_warnings_are_reported_on_every_verification() {
    let r = root("R");
    let mut ip = ca_params("I");
    ip.use_authority_key_identifier_extension = false;
    let i = intermediate_with(ip, rcgen::KeyPair::generate().unwrap(), &r);
    let l = leaf(&["a.example"], &i);
    let s = store(&[&r.der]);
    let v = verifier(Profile::Browser, &[]);
    for _ in 0..3 {
        let got = v
            .verify_uncached(
                &s,
                &l.der,
                std::slice::from_ref(&i.der),
                None,
                Purpose::Server,
                now(),
            )
            .unwrap();
        let w = &got.chain.warnings;
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!((w[0].rule, w[0].position), (Rule::AkiMissing, 1));
        assert_eq!(w[0].role, CertRole::Intermediate);
    }
}
