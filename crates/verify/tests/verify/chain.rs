//! Chain building on the store index: names, purposes, validity, same-subject roots,
//! cross-signing, CRLs, depth, and the cache.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cloned_ref_to_slice_refs
)]

use crate::common;

use std::path::Path;

use common::*;
use rcgen::{
    CertificateRevocationListParams, ExtendedKeyUsagePurpose, KeyIdMethod, RevokedCertParams,
    SerialNumber,
};
use tlskit_store::StoreBuilder;
use tlskit_verify::names::ReferenceName;
use tlskit_verify::{
    CacheLimits, ChainVerifier, Crl, CrlSigner, Purpose, ServerName, VerifierConfig, VerifyError,
};

fn sn(name: &str) -> ServerName<'static> {
    ReferenceName::parse(name)
        .unwrap()
        .to_server_name()
        .unwrap()
}

fn uncached() -> ChainVerifier {
    ChainVerifier::new(VerifierConfig {
        cache: None,
        ..VerifierConfig::default()
    })
}

#[test]
fn leaf_intermediate_root_is_valid_and_chain_is_reported() {
    let p = pki();
    let leaf = leaf(&["www.example.com"], &p.int);
    let store = store(&[&p.root.der]);
    let v = uncached()
        .verify(
            &store,
            &leaf.der,
            &[p.int.der.clone()],
            Some(&sn("www.example.com")),
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert_eq!(v.chain.certs.len(), 3);
    assert_eq!(v.chain.certs[2], p.root.der);
    let subjects = v.chain.subjects();
    assert_eq!(
        subjects,
        ["CN=www.example.com", "CN=Test Intermediate", "CN=Test Root"]
    );
}

#[test]
fn unknown_issuer_is_named() {
    let p = pki();
    let other = root("Other Root");
    let leaf = leaf(&["a.example"], &p.int);
    let e = uncached()
        .verify(
            &store(&[&other.der]),
            &leaf.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    match e {
        VerifyError::UnknownIssuer { issuer } => assert_eq!(issuer, "CN=Test Root"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_intermediate_is_unknown_issuer() {
    let p = pki();
    let leaf = leaf(&["a.example"], &p.int);
    let e = uncached()
        .verify(
            &store(&[&p.root.der]),
            &leaf.der,
            &[],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(matches!(e, VerifyError::UnknownIssuer { .. }), "{e:?}");
}

#[test]
fn intermediates_in_any_order() {
    let root = root("R");
    let i1 = intermediate("I1", &root);
    let i2 = intermediate("I2", &i1);
    let leaf = leaf(&["a.example"], &i2);
    let st = store(&[&root.der]);
    let v = uncached()
        .verify(
            &st,
            &leaf.der,
            &[root.der.clone(), i1.der.clone(), i2.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert_eq!(v.chain.certs.len(), 4);
}

// ---- names (RFC 9525 wildcards through rustls-webpki, IP addresses, IDNA) ----

#[test]
fn wildcard_matches_exactly_one_label() {
    let p = pki();
    let leaf = leaf(&["*.example.com"], &p.int);
    let st = store(&[&p.root.der]);
    let v = uncached();
    let check = |name: &str| {
        v.verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            Some(&sn(name)),
            Purpose::Server,
            now(),
        )
    };
    assert!(check("a.example.com").is_ok());
    assert!(matches!(
        check("example.com"),
        Err(VerifyError::NameMismatch { .. })
    ));
    assert!(matches!(
        check("a.b.example.com"),
        Err(VerifyError::NameMismatch { .. })
    ));
}

#[test]
fn partial_label_wildcards_never_match() {
    let p = pki();
    let leaf = leaf(&["f*.example.com", "*oo.example.com"], &p.int);
    let st = store(&[&p.root.der]);
    let e = uncached()
        .verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            Some(&sn("foo.example.com")),
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(matches!(e, VerifyError::NameMismatch { .. }), "{e:?}");
}

#[test]
fn ip_address_names() {
    let p = pki();
    let leaf = leaf_with(with_ip(leaf_params(&["a.example"]), "192.0.2.7"), &p.int);
    let st = store(&[&p.root.der]);
    let v = uncached();
    let check = |name: &str| {
        v.verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            Some(&sn(name)),
            Purpose::Server,
            now(),
        )
    };
    assert!(check("192.0.2.7").is_ok());
    assert!(matches!(
        check("192.0.2.8"),
        Err(VerifyError::NameMismatch { .. })
    ));
    // A DNS reference never matches an IP SAN.
    assert!(check("a.example").is_ok());
}

#[test]
fn unicode_reference_names_match_a_label_certificates() {
    let p = pki();
    let leaf = leaf(&["xn--rksmrgs-5wao1o.com"], &p.int);
    let st = store(&[&p.root.der]);
    let v = uncached();
    for name in [
        "räksmörgås\u{3002}com",
        "räksmörgås\u{FF0E}com",
        "räksmörgås\u{FF61}com",
        "RÄKSMÖRGÅS.com",
    ] {
        let r = ReferenceName::parse(name).unwrap();
        assert_eq!(r.to_string(), "xn--rksmrgs-5wao1o.com");
        v.verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            Some(&r.to_server_name().unwrap()),
            Purpose::Server,
            now(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn one_dot_leader_is_refused_with_its_name() {
    let e = ReferenceName::parse("example\u{2024}com").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("U+2024") && msg.contains("ONE DOT LEADER"),
        "{msg}"
    );
}

#[test]
fn wildcard_reference_name_is_refused() {
    assert!(ReferenceName::parse("*.example.com")
        .unwrap()
        .to_server_name()
        .is_err());
}

// ---- purposes ----

#[test]
fn purposes_follow_extended_key_usage() {
    let p = pki();
    let st = store(&[&p.root.der]);
    let v = uncached();
    let server = leaf_with(
        with_eku(
            leaf_params(&["s.example"]),
            &[ExtendedKeyUsagePurpose::ServerAuth],
        ),
        &p.int,
    );
    let client = leaf_with(
        with_eku(
            leaf_params(&["c.example"]),
            &[ExtendedKeyUsagePurpose::ClientAuth],
        ),
        &p.int,
    );
    let none = leaf(&["n.example"], &p.int);
    let run = |c: &Ca, purpose| v.verify(&st, &c.der, &[p.int.der.clone()], None, purpose, now());
    assert!(run(&server, Purpose::Server).is_ok());
    assert_eq!(
        run(&server, Purpose::Client).unwrap_err(),
        VerifyError::WrongPurpose {
            purpose: Purpose::Client
        }
    );
    assert!(run(&client, Purpose::Client).is_ok());
    assert_eq!(
        run(&client, Purpose::Server).unwrap_err(),
        VerifyError::WrongPurpose {
            purpose: Purpose::Server
        }
    );
    // No EKU extension: good for both.
    assert!(run(&none, Purpose::Server).is_ok());
    assert!(run(&none, Purpose::Client).is_ok());
}

// ---- validity ----

#[test]
fn expired_and_not_yet_valid_leaves() {
    let p = pki();
    let st = store(&[&p.root.der]);
    let leaf = leaf(&["a.example"], &p.int); // 2025..2035
    let v = uncached();
    let run = |t| {
        v.verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            at(t),
        )
    };
    assert!(run(ymd(2030, 6, 1)).is_ok());
    assert!(matches!(
        run(ymd(2036, 1, 1)),
        Err(VerifyError::Expired { .. })
    ));
    assert!(matches!(
        run(ymd(2024, 1, 1)),
        Err(VerifyError::NotYetValid { .. })
    ));
    // The message names the certificate (0 = the end entity) and what to do.
    let e = run(ymd(2036, 1, 1)).unwrap_err().to_string();
    assert!(
        e.starts_with("the end-entity certificate (CN=a.example) expired at 2035-01-01T00:00:00Z"),
        "{e}"
    );
    let e = run(ymd(2024, 1, 1)).unwrap_err().to_string();
    assert!(
        e.starts_with("the end-entity certificate (CN=a.example) is not valid before 2025"),
        "{e}"
    );
}

#[test]
fn expired_root_beside_valid_root_with_same_subject() {
    // Two roots named alike with different keys; the old one expired.
    let mut old_p = ca_params("Shared Root Name");
    old_p.not_before = ymd(2000, 1, 1);
    old_p.not_after = ymd(2010, 1, 1);
    let old = root_with(old_p);
    let new = root("Shared Root Name");
    let int = intermediate("Int", &new);
    let leaf = leaf(&["a.example"], &int);
    let v = uncached();
    // Either order in the store.
    for st in [store(&[&old.der, &new.der]), store(&[&new.der, &old.der])] {
        v.verify(
            &st,
            &leaf.der,
            &[int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
    }
    // A chain that only the expired root issued: refused, and the reason says why.
    let old_int = intermediate("Old Int", &old);
    let old_leaf = common::leaf(&["b.example"], &old_int);
    let e = v
        .verify(
            &store(&[&old.der, &new.der]),
            &old_leaf.der,
            &[old_int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            VerifyError::AnchorNotValid { .. }
                | VerifyError::BadSignature
                | VerifyError::UnknownIssuer { .. }
        ),
        "{e:?}"
    );
    let e2 = v
        .verify(
            &store(&[&old.der]),
            &old_leaf.der,
            &[old_int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(matches!(e2, VerifyError::AnchorNotValid { .. }), "{e2:?}");
    // accept_expired_anchors restores rustls's behaviour.
    let lax = ChainVerifier::new(VerifierConfig {
        accept_expired_anchors: true,
        cache: None,
        ..Default::default()
    });
    lax.verify(
        &store(&[&old.der]),
        &old_leaf.der,
        &[old_int.der.clone()],
        None,
        Purpose::Server,
        now(),
    )
    .unwrap();
}

#[test]
fn same_subject_same_key_reissued_root() {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut old_p = ca_params("Reissued Root");
    old_p.not_before = ymd(2000, 1, 1);
    old_p.not_after = ymd(2010, 1, 1);
    let old_der = old_p.self_signed(&key).unwrap().der().clone();
    let new_p = ca_params("Reissued Root");
    let new_der = new_p.self_signed(&key).unwrap().der().clone();
    let issuer_ca = Ca {
        params: new_p,
        key,
        der: new_der.clone(),
    };
    let leaf = leaf(&["a.example"], &issuer_ca);
    let v = uncached()
        .verify(
            &store(&[&old_der, &new_der]),
            &leaf.der,
            &[],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert_eq!(v.chain.certs[1], new_der);
}

// ---- cross-signing and several paths ----

#[test]
fn cross_signed_intermediate_works_with_either_root() {
    let old_root = root("Old Root");
    let new_root = root("New Root");
    let int_key = rcgen::KeyPair::generate().unwrap();
    let int_params = ca_params("Cross Int");
    let by_old = int_params
        .signed_by(&int_key, &old_root.issuer())
        .unwrap()
        .der()
        .clone();
    let by_new = int_params
        .signed_by(&int_key, &new_root.issuer())
        .unwrap()
        .der()
        .clone();
    let int = Ca {
        params: int_params,
        key: int_key,
        der: by_new.clone(),
    };
    let leaf = leaf(&["x.example"], &int);
    let presented = [by_old.clone(), by_new.clone()];
    let v = uncached();
    for (st, want) in [
        (store(&[&old_root.der]), &old_root.der),
        (store(&[&new_root.der]), &new_root.der),
    ] {
        let r = v
            .verify(&st, &leaf.der, &presented, None, Purpose::Server, now())
            .unwrap();
        assert_eq!(r.chain.certs.last().unwrap(), want);
    }
    // The new root cross-signed by the old one: leaf <- int(by new) <- new(by old) <- old.
    let new_by_old = new_root
        .params
        .signed_by(&new_root.key, &old_root.issuer())
        .unwrap()
        .der()
        .clone();
    let r = v
        .verify(
            &store(&[&old_root.der]),
            &leaf.der,
            &[by_new, new_by_old],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert_eq!(r.chain.certs.len(), 4);
}

#[test]
fn a_large_store_of_unrelated_anchors_still_finds_the_root() {
    // Correctness with a large store full of unrelated anchors; that the cost does not grow
    // with the store is measured in instructions per verification (bench/README.md).
    let p = pki();
    let mut b = StoreBuilder::new();
    for d in filler_roots(3000) {
        b.add_der(&d, Path::new("filler")).unwrap();
    }
    b.add_der(&p.root.der, Path::new("root")).unwrap();
    let st = b.build();
    let leaf = leaf(&["a.example"], &p.int);
    uncached()
        .verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
}

#[test]
fn lookup_by_authority_key_identifier() {
    // The issuer name of the intermediate differs in encoding from the root's subject?
    // rustls-webpki requires byte-equal names, so key-id candidates that differ in name
    // cannot anchor; a root found both ways is used once.
    let p = pki();
    let leaf = leaf(&["a.example"], &p.int);
    uncached()
        .verify(
            &store(&[&p.root.der]),
            &leaf.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
}

// ---- CRLs ----

fn crl(issuer: &Ca, serials: &[u64]) -> Crl {
    let params = CertificateRevocationListParams {
        this_update: ymd(2029, 1, 1),
        next_update: ymd(2031, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: serials
            .iter()
            .map(|s| RevokedCertParams {
                serial_number: SerialNumber::from(*s),
                revocation_time: ymd(2029, 1, 1),
                reason_code: None,
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    };
    Crl::from_der(params.signed_by(&issuer.issuer()).unwrap().der()).unwrap()
}

/// Issue 25: what `tlskit verify --crl` reports: the entry of a revoked certificate
/// (serial, reason, date) and whether a CRL's issuer at hand signed it.
#[test]
fn crl_entries_and_signers() {
    let p = pki();
    let st = store(&[&p.root.der]);
    let revoked = leaf_with(with_serial(leaf_params(&["r.example"]), 0x8042), &p.int);
    let good = leaf_with(with_serial(leaf_params(&["g.example"]), 4243), &p.int);
    let der = CertificateRevocationListParams {
        this_update: ymd(2029, 1, 1),
        next_update: ymd(2031, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![RevokedCertParams {
            serial_number: SerialNumber::from(0x8042u64),
            revocation_time: ymd(2029, 6, 1),
            reason_code: Some(rcgen::RevocationReason::Superseded),
            invalidity_date: None,
        }],
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&p.int.issuer())
    .unwrap()
    .der()
    .to_vec();
    let c = Crl::from_der(&der).unwrap();
    let e = c.entry_for(&revoked.der).expect("listed");
    assert_eq!(e.serial, "8042");
    assert_eq!((e.reason_code, e.reason_name()), (Some(4), "superseded"));
    assert_eq!(e.revoked_at, 1_874_966_400); // 2029-06-01
    assert!(c.entry_for(&good.der).is_none());
    // The root issued the intermediate, not the leaf: not this CRL's business.
    assert!(c.entry_for(&p.int.der).is_none());

    assert!(c.signed_by(&p.int.der));
    assert!(!c.signed_by(&p.root.der));
    let chain: [&[u8]; 2] = [&revoked.der, &p.int.der];
    assert_eq!(c.check_signer(&st, &chain), CrlSigner::Verified);
    // Not presented, not an anchor: no issuer at hand.
    assert_eq!(c.check_signer(&st, &chain[..1]), CrlSigner::NoIssuer);
    // One bit of the signature changed: its issuer is at hand, its key says no.
    let mut bad = der.clone();
    let n = bad.len();
    bad[n - 2] ^= 1;
    let bad = Crl::from_der(&bad).unwrap();
    assert!(!bad.signed_by(&p.int.der));
    assert_eq!(bad.check_signer(&st, &chain), CrlSigner::BadSignature);
    // The root's CRL: its issuer is the anchor in the store.
    assert_eq!(
        crl(&p.root, &[]).check_signer(&st, &chain[..1]),
        CrlSigner::Verified
    );
    assert!(c.issuer_name().contains("CN="), "{}", c.issuer_name());
}

#[test]
fn crl_revocation() {
    let p = pki();
    let st = store(&[&p.root.der]);
    let revoked = leaf_with(with_serial(leaf_params(&["r.example"]), 4242), &p.int);
    let good = leaf_with(with_serial(leaf_params(&["g.example"]), 4243), &p.int);
    let v = ChainVerifier::new(VerifierConfig {
        crls: vec![crl(&p.int, &[4242])],
        cache: None,
        ..Default::default()
    });
    let run = |c: &Ca| {
        v.verify(
            &st,
            &c.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
    };
    // The refusal names the certificate (position 0, its subject) and the section.
    let e = run(&revoked).unwrap_err();
    assert!(
        matches!(
            &e,
            VerifyError::Revoked {
                which: Some((0, _))
            }
        ),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.starts_with("the end-entity certificate ("), "{text}");
    assert!(text.contains("RFC 5280 6.3"), "{text}");
    assert!(run(&good).is_ok());
    // A revoked intermediate (CRL from the root).
    let v2 = ChainVerifier::new(VerifierConfig {
        crls: vec![crl(&p.root, &[]), crl(&p.int, &[])],
        cache: None,
        ..Default::default()
    });
    assert!(v2
        .verify(
            &st,
            &good.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now()
        )
        .is_ok());
    // Past the CRL's nextUpdate (2031) the CRL is refused as expired.
    let late = v.verify(
        &st,
        &good.der,
        &[p.int.der.clone()],
        None,
        Purpose::Server,
        at(ymd(2032, 1, 1)),
    );
    assert!(late.is_err(), "{late:?}");
}

// ---- depth ----

#[test]
fn maximum_depth_is_enforced() {
    let root = root("R");
    let i1 = intermediate("I1", &root);
    let i2 = intermediate("I2", &i1);
    let leaf = leaf(&["a.example"], &i2);
    let st = store(&[&root.der]);
    let chain = [i2.der.clone(), i1.der.clone()];
    let v3 = ChainVerifier::new(VerifierConfig {
        max_depth: 3,
        cache: None,
        ..Default::default()
    });
    assert_eq!(
        v3.verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
            .unwrap_err(),
        VerifyError::ChainTooDeep { limit: 3 }
    );
    let v4 = ChainVerifier::new(VerifierConfig {
        max_depth: 4,
        cache: None,
        ..Default::default()
    });
    assert!(v4
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
        .is_ok());
}

/// rustls-webpki stops at 8 certificates; a configured `max_depth` above that is
/// honoured exactly by the RFC 5280 validator: a 10-certificate path passes with 10 and
/// is refused with 9.
#[test]
fn paths_longer_than_webpki_builds_when_configured() {
    let root = root("R");
    let mut cas = vec![intermediate("I0", &root)];
    for i in 1..8 {
        let next = intermediate(&format!("I{i}"), cas.last().unwrap());
        cas.push(next);
    }
    let leaf = leaf(&["a.example"], cas.last().unwrap());
    let chain: Vec<_> = cas.iter().rev().map(|c| c.der.clone()).collect();
    assert_eq!(chain.len() + 2, 10);
    let st = store(&[&root.der]);
    let with = |max_depth| {
        ChainVerifier::new(VerifierConfig {
            max_depth,
            cache: None,
            ..Default::default()
        })
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
    };
    let ok = with(10).unwrap();
    assert_eq!(ok.chain.certs.len(), 10);
    assert_eq!(with(9).unwrap_err().rule(), "chain-too-deep");
    assert_eq!(with(8).unwrap_err().rule(), "chain-too-deep");
}

#[test]
fn hundred_certificate_chain_stops_with_clear_error() {
    let root = root("R");
    let mut cas = vec![intermediate("I0", &root)];
    for i in 1..99 {
        let next = intermediate(&format!("I{i}"), cas.last().unwrap());
        cas.push(next);
    }
    let leaf = leaf(&["a.example"], cas.last().unwrap());
    let chain: Vec<_> = cas.iter().rev().map(|c| c.der.clone()).collect();
    assert_eq!(chain.len() + 1, 100);
    let e = uncached()
        .verify(
            &store(&[&root.der]),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert_eq!(
        e,
        VerifyError::TooManyCertificates {
            count: 100,
            limit: 16
        }
    );
    assert!(e.to_string().contains("100 certificates"), "{e}");
    // With a generous presented limit, rustls-webpki's own depth limit stops it.
    let v = ChainVerifier::new(VerifierConfig {
        max_presented: 1000,
        cache: None,
        ..Default::default()
    });
    let e = v
        .verify(
            &store(&[&root.der]),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(matches!(e, VerifyError::ChainTooDeep { .. }), "{e:?}");
}

// ---- cache ----

#[test]
fn cache_answers_repeats_and_keys_on_name_and_purpose() {
    let p = pki();
    let h = handle(&[&p.root.der]);
    let leaf = leaf(&["a.example", "b.example"], &p.int);
    let v = ChainVerifier::new(VerifierConfig::default());
    let st = h.current();
    let chain = [p.int.der.clone()];
    let first = v
        .verify(
            &st,
            &leaf.der,
            &chain,
            Some(&sn("a.example")),
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert!(!first.cached);
    let second = v
        .verify(
            &st,
            &leaf.der,
            &chain,
            Some(&sn("a.example")),
            Purpose::Server,
            now(),
        )
        .unwrap();
    assert!(second.cached);
    assert_eq!(first.chain, second.chain);
    // Another name or purpose is another key.
    assert!(
        !v.verify(
            &st,
            &leaf.der,
            &chain,
            Some(&sn("b.example")),
            Purpose::Server,
            now()
        )
        .unwrap()
        .cached
    );
    assert!(
        !v.verify(
            &st,
            &leaf.der,
            &chain,
            Some(&sn("a.example")),
            Purpose::Client,
            now()
        )
        .unwrap()
        .cached
    );
    // A wrong name is never answered from the cache.
    assert!(v
        .verify(
            &st,
            &leaf.der,
            &chain,
            Some(&sn("c.example")),
            Purpose::Server,
            now()
        )
        .is_err());
}

#[test]
fn cache_is_invalidated_by_reload() {
    let p = pki();
    let other = root("Other");
    let h = handle(&[&p.root.der]);
    let leaf = leaf(&["a.example"], &p.int);
    let chain = [p.int.der.clone()];
    let v = ChainVerifier::new(VerifierConfig::default());
    v.verify(
        &h.current(),
        &leaf.der,
        &chain,
        None,
        Purpose::Server,
        now(),
    )
    .unwrap();
    assert!(
        v.verify(
            &h.current(),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now()
        )
        .unwrap()
        .cached
    );
    // Reload to a store without the root: the cached answer must not be used.
    h.replace(store(&[&other.der]));
    let e = v
        .verify(
            &h.current(),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now(),
        )
        .unwrap_err();
    assert!(matches!(e, VerifyError::UnknownIssuer { .. }), "{e:?}");
    assert_eq!(v.cache_len(), 0, "old generation's answers are dropped");
    // Reload back: verified afresh, then cached again.
    h.replace(store(&[&p.root.der]));
    assert!(
        !v.verify(
            &h.current(),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now()
        )
        .unwrap()
        .cached
    );
    assert!(
        v.verify(
            &h.current(),
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            now()
        )
        .unwrap()
        .cached
    );
}

#[test]
fn cache_never_answers_outside_the_validity_window() {
    let p = pki();
    let h = handle(&[&p.root.der]);
    // Intermediate valid 2024..2033, leaf 2025..2035: window 2025..2033.
    let mut ip = ca_params("Short Int");
    ip.not_before = ymd(2024, 1, 1);
    ip.not_after = ymd(2033, 1, 1);
    let int = intermediate_with(ip, rcgen::KeyPair::generate().unwrap(), &p.root);
    let leaf = leaf(&["a.example"], &int);
    let chain = [int.der.clone()];
    let v = ChainVerifier::new(VerifierConfig::default());
    let st = h.current();
    let r = v
        .verify(
            &st,
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            at(ymd(2030, 1, 1)),
        )
        .unwrap();
    assert_eq!(r.chain.valid_until, ymd(2033, 1, 1).unix_timestamp());
    assert_eq!(r.chain.valid_from, ymd(2025, 1, 1).unix_timestamp());
    assert!(
        v.verify(
            &st,
            &leaf.der,
            &chain,
            None,
            Purpose::Server,
            at(ymd(2032, 12, 31))
        )
        .unwrap()
        .cached
    );
    // Past the earliest notAfter (the intermediate's): no cached answer, and invalid.
    let late = v.verify(
        &st,
        &leaf.der,
        &chain,
        None,
        Purpose::Server,
        at(ymd(2033, 1, 2)),
    );
    assert!(matches!(late, Err(VerifyError::Expired { .. })), "{late:?}");
    // Before the latest notBefore (the leaf's): likewise.
    let early = v.verify(
        &st,
        &leaf.der,
        &chain,
        None,
        Purpose::Server,
        at(ymd(2024, 6, 1)),
    );
    assert!(
        matches!(early, Err(VerifyError::NotYetValid { .. })),
        "{early:?}"
    );
}

#[test]
fn cache_is_bounded() {
    let p = pki();
    let h = handle(&[&p.root.der]);
    let v = ChainVerifier::new(VerifierConfig {
        cache: Some(CacheLimits::new(4, 1 << 20)),
        ..Default::default()
    });
    let st = h.current();
    for i in 0..12 {
        let leaf = leaf(&[&format!("h{i}.example")], &p.int);
        v.verify(
            &st,
            &leaf.der,
            &[p.int.der.clone()],
            None,
            Purpose::Server,
            now(),
        )
        .unwrap();
        assert!(v.cache_len() <= 4, "{} entries", v.cache_len());
    }
    let small = ChainVerifier::new(VerifierConfig {
        cache: Some(CacheLimits::new(1000, 4096)),
        ..Default::default()
    });
    for i in 0..12 {
        let leaf = leaf(&[&format!("h{i}.example")], &p.int);
        small
            .verify(
                &st,
                &leaf.der,
                &[p.int.der.clone()],
                None,
                Purpose::Server,
                now(),
            )
            .unwrap();
        assert!(small.cache_bytes() <= 4096, "{} bytes", small.cache_bytes());
    }
}

/// Issue 13: every refusal reads as a sentence with the certificate (where known), the
/// RFC section and what to do; no Rust debug output.
#[test]
fn refusal_sentences_name_the_certificate_section_and_remedy() {
    let cases: [(VerifyError, &[&str]); 5] = [
        (
            VerifyError::Revoked {
                which: Some((1, "CN=Int".into())),
            },
            &[
                "certificate 1 of the chain (CN=Int)",
                "RFC 5280 6.3",
                "replaced",
            ],
        ),
        (
            VerifyError::BadSignature,
            &["RFC 5280 6.1.3 (a)(1)", "issuer", "send the chain"],
        ),
        (
            VerifyError::WrongPurpose {
                purpose: Purpose::Client,
            },
            &[
                "certificate 0",
                "id-kp-clientAuth",
                "RFC 5280 4.2.1.12",
                "issue it",
            ],
        ),
        (
            VerifyError::UnknownIssuer {
                issuer: "CN=Gone".into(),
            },
            &["CN=Gone", "RFC 5280 6.1", "trust that CA", "intermediate"],
        ),
        (
            VerifyError::Other("no valid path".into()),
            &["RFC 5280 6.1", "no valid path"],
        ),
    ];
    for (e, wants) in cases {
        let text = e.to_string();
        for w in wants {
            assert!(text.contains(w), "{w}: {text}");
        }
        assert!(!text.contains(" {") && !text.contains("Some("), "{text}");
    }
}
