//! Many trust anchors with one subject name (issue #27): candidates are ordered by the
//! key-identifier match, so every anchor's clients verify, and a forged chain costs a
//! bounded number of signature checks whatever the number of same-name anchors. Work is
//! counted in signature verifications ([`tlskit_verify::signature_checks_on_thread`]),
//! never timed.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::*;
use rcgen::{KeyIdMethod, KeyPair};
use tlskit_verify::{
    signature_checks_on_thread, ChainVerifier, Purpose, VerifierConfig, VerifyError,
    MAX_ISSUER_CANDIDATES,
};

const NAME: &str = "Shared Client CA";

fn uncached() -> ChainVerifier {
    ChainVerifier::new(VerifierConfig {
        cache: None,
        ..VerifierConfig::default()
    })
}

/// `n` roots named alike, each with its own key (so its own subjectKeyIdentifier).
fn same_name_roots(n: usize) -> Vec<Ca> {
    (0..n).map(|_| root(NAME)).collect()
}

/// The verification's result and the signature checks it made.
fn counted(
    v: &ChainVerifier,
    st: &tlskit_store::TrustStore,
    leaf: &Ca,
) -> (Result<(), VerifyError>, u64) {
    let before = signature_checks_on_thread();
    let r = v
        .verify(st, &leaf.der, &[], None, Purpose::Client, now())
        .map(|_| ());
    (r, signature_checks_on_thread() - before)
}

/// A client certificate named as issued by `NAME` but signed by a key no anchor holds,
/// its authorityKeyIdentifier chosen by the attacker (`None`: no AKI extension).
fn forged(aki: Option<Vec<u8>>) -> Ca {
    let mut ip = ca_params(NAME);
    let mut p = leaf_params(&["client.example"]);
    match aki {
        Some(kid) => ip.key_identifier_method = KeyIdMethod::PreSpecified(kid),
        None => p.use_authority_key_identifier_extension = false,
    }
    let attacker = Ca {
        der: ip
            .self_signed(&KeyPair::generate().unwrap())
            .unwrap()
            .der()
            .clone(),
        key: KeyPair::generate().unwrap(),
        params: ip,
    };
    leaf_with(p, &attacker)
}

fn ski(ca: &Ca) -> Vec<u8> {
    tlskit_store::der::cert_view(&ca.der)
        .and_then(|v| v.ski)
        .unwrap()
        .to_vec()
}

/// 300 anchors with one subject: the client of EVERY anchor verifies, each with one
/// signature check (before: anchor #100 and later were refused with
/// `path-building-budget`, the candidates being tried in store order).
#[test]
fn every_one_of_300_same_subject_anchors_verifies_its_clients() {
    let roots = same_name_roots(300);
    let refs: Vec<_> = roots.iter().map(|r| &r.der).collect();
    let st = store(&refs);
    let v = uncached();
    for (i, r) in roots.iter().enumerate() {
        let client = leaf(&["client.example"], r);
        let (res, sigs) = counted(&v, &st, &client);
        assert!(res.is_ok(), "anchor #{i}: {res:?}");
        assert_eq!(sigs, 1, "anchor #{i}: signature checks");
    }
}

/// Forged client chains against 30 and 300 same-name anchors: refused, with at most
/// a bounded number of signature checks, the same for both store sizes (flat), whatever
/// the authorityKeyIdentifier says (another key's, an anchor's, or none).
#[test]
fn forged_chains_cost_a_bounded_flat_number_of_signature_checks() {
    let roots = same_name_roots(300);
    let v = uncached();
    let bound = 2 * MAX_ISSUER_CANDIDATES as u64;
    let kinds: Vec<(&str, Option<Vec<u8>>)> = vec![
        ("an unknown key id", Some(vec![0x42; 20])),
        ("anchor #20's key id", Some(ski(&roots[20]))),
        ("no key id", None),
    ];
    let mut seen = Vec::new();
    for (what, aki) in kinds {
        let f = forged(aki);
        for n in [30, 300] {
            let refs: Vec<_> = roots[..n].iter().map(|r| &r.der).collect();
            let st = store(&refs);
            let (res, sigs) = counted(&v, &st, &f);
            // CPU per verification, printed for the README (never asserted).
            let t = std::time::Instant::now();
            for _ in 0..20 {
                let _ = v.verify(&st, &f.der, &[], None, Purpose::Client, now());
            }
            eprintln!(
                "forged chain with {what}, {n} anchors: {res:?}, {sigs} signature checks, \
                 {:?} per verification",
                t.elapsed() / 20
            );
            seen.push((what, n, res, sigs));
        }
    }
    for pair in seen.chunks(2) {
        for (what, n, res, sigs) in pair {
            assert!(res.is_err(), "{what}, {n} anchors: forged chain accepted");
            assert!(
                *sigs <= bound,
                "{what}, {n} anchors: {sigs} signature checks > {bound}"
            );
        }
        assert_eq!(
            pair[0].3, pair[1].3,
            "{}: cost grows with the anchors",
            pair[0].0
        );
    }
}

/// A forged chain naming anchor #150's key identifier tries that anchor first and
/// nothing that contradicts it, then stops: one signature check by rustls-webpki, one by
/// the RFC 5280 validator's second look.
#[test]
fn an_exact_key_id_match_is_tried_first_and_mismatches_not_at_all() {
    let roots = same_name_roots(300);
    let refs: Vec<_> = roots.iter().map(|r| &r.der).collect();
    let st = store(&refs);
    let f = forged(Some(ski(&roots[150])));
    let (res, sigs) = counted(&uncached(), &st, &f);
    assert!(matches!(res, Err(VerifyError::BadSignature)), "{res:?}");
    assert!(sigs <= 2, "{sigs} signature checks");
}
