//! Path-building work is bounded (issue #7): chains built to make the search explode stop
//! at documented limits (README "Limits") with a clear, typed error. Times are printed,
//! never asserted tightly.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Instant;

use common::*;
use rcgen::KeyPair;
use tlskit_verify::{ChainVerifier, Purpose, VerifierConfig, VerifyError};

fn uncached(max_presented: usize) -> ChainVerifier {
    ChainVerifier::new(VerifierConfig {
        max_presented,
        cache: None,
        ..VerifierConfig::default()
    })
}

/// `n` intermediates that all have the subject (and issuer) name `name`, each signed by
/// the previous one (the first by `first_issuer`), so every one of them is a candidate
/// issuer of every other: the number of candidate paths grows like n^depth.
fn same_subject_chain(n: usize, name: &str, first_issuer: &Ca) -> Vec<Ca> {
    let mut out: Vec<Ca> = Vec::with_capacity(n);
    for _ in 0..n {
        let issuer = out.last().unwrap_or(first_issuer);
        let next = intermediate_with(ca_params(name), KeyPair::generate().unwrap(), issuer);
        out.push(next);
    }
    out
}

/// The peer sends 15 same-subject intermediates (the most the default `max_presented`
/// of 16 lets through) and the store holds an anchor with that subject: every partial
/// path ends in a signature check against the anchor, and rustls-webpki's budget of 100
/// signature checks per verification stops the search.
#[test]
fn same_subject_intermediates_stop_at_the_signature_budget() {
    let root = root("Bogus Subject");
    let cas = same_subject_chain(15, "Bogus Subject", &root);
    let leaf = leaf(&["a.example"], cas.last().unwrap());
    let chain: Vec<_> = cas.iter().rev().map(|c| c.der.clone()).collect();
    let st = store(&[&root.der]);
    let t = Instant::now();
    let e = uncached(16)
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
        .unwrap_err();
    eprintln!(
        "15 same-subject intermediates, anchor named alike: {e:?} in {:?}",
        t.elapsed()
    );
    assert_eq!(
        e,
        VerifyError::PathBuildingBudget {
            limit: "100 signature checks"
        }
    );
    assert!(
        e.to_string().contains("100 signature checks"),
        "clear message: {e}"
    );
}

/// The same chain with no anchor of that name in the store: no path can end at an
/// anchor, so there is nothing to explore. The answer is the unknown issuer, at once
/// (rustls-webpki would otherwise walk its 200,000 path-building steps first).
#[test]
fn same_subject_intermediates_without_anchor_are_unknown_issuer_at_once() {
    let hidden = root("Bogus Subject");
    let cas = same_subject_chain(15, "Bogus Subject", &hidden);
    let leaf = leaf(&["a.example"], cas.last().unwrap());
    let chain: Vec<_> = cas.iter().rev().map(|c| c.der.clone()).collect();
    let other = root("Unrelated Root");
    let st = store(&[&other.der]);
    let t = Instant::now();
    let e = uncached(16)
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
        .unwrap_err();
    eprintln!(
        "15 same-subject intermediates, no anchor: {e:?} in {:?}",
        t.elapsed()
    );
    assert!(
        matches!(&e, VerifyError::UnknownIssuer { issuer } if issuer.contains("Bogus Subject")),
        "{e:?}"
    );
}

/// With an anchor present but never a match for the intermediates' signatures, and a
/// trust anchor's certificate sent in the chain, the search is wide instead of deep:
/// rustls-webpki's limit of 200,000 path-building steps (or its signature budget,
/// whichever comes first) ends it with the typed error.
#[test]
fn wide_search_stops_at_a_budget() {
    // The anchor the store holds signs nothing in the chain, but is named like the
    // intermediates' issuer, so candidates exist.
    let decoy = root("Bogus Subject");
    let real = root("Bogus Subject");
    let cas = same_subject_chain(15, "Bogus Subject", &real);
    let leaf = leaf(&["a.example"], cas.last().unwrap());
    let chain: Vec<_> = cas.iter().rev().map(|c| c.der.clone()).collect();
    let st = store(&[&decoy.der]);
    let t = Instant::now();
    let e = uncached(16)
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
        .unwrap_err();
    eprintln!(
        "15 same-subject intermediates, decoy anchor: {e:?} in {:?}",
        t.elapsed()
    );
    assert!(matches!(e, VerifyError::PathBuildingBudget { .. }), "{e:?}");
}

/// Many same-subject anchors in the store (a store an attacker does not control, but a
/// messy one): the one whose key identifier the chain names is tried first, so the real
/// anchor is found at once (before issue #27 it came last among 301 candidates, past
/// the 100-signature budget), with one signature check for the anchor's edge.
#[test]
fn many_same_subject_anchors_do_not_hide_the_real_one() {
    let key = KeyPair::generate().unwrap();
    let decoys: Vec<_> = (0..300)
        .map(|_| {
            ca_params("Shared Name")
                .self_signed(&key)
                .unwrap()
                .der()
                .clone()
        })
        .collect();
    let real = root("Shared Name");
    let int = intermediate("Issuing CA", &real);
    let leaf = leaf(&["a.example"], &int);
    let mut refs: Vec<_> = decoys.iter().collect();
    refs.push(&real.der);
    let st = store(&refs);
    let before = tlskit_verify::signature_checks_on_thread();
    let t = Instant::now();
    let r = uncached(16).verify(
        &st,
        &leaf.der,
        std::slice::from_ref(&int.der),
        None,
        Purpose::Server,
        now(),
    );
    let sigs = tlskit_verify::signature_checks_on_thread() - before;
    eprintln!(
        "300 decoy anchors with one name + the real one: {} in {:?}, {sigs} signature checks",
        r.is_ok(),
        t.elapsed()
    );
    assert!(r.is_ok(), "{:?}", r.err());
    assert_eq!(sigs, 2, "leaf and intermediate signatures only");
}

/// The leaf names a real anchor as its issuer (so candidates exist), but what the peer
/// sends above it is a cluster of 14 certificates that only name each other: no path
/// through them can reach an anchor. They are not explored (before this was filtered,
/// rustls-webpki walked its 200,000-step budget: about 3 s of CPU per handshake in a
/// debug build), and the answer is the leaf's own failure against the anchor.
#[test]
fn cluster_that_reaches_no_anchor_is_not_explored() {
    let hidden = root("Cluster B");
    let cluster = same_subject_chain(14, "Cluster B", &hidden);
    let fake_a = intermediate_with(
        ca_params("Anchor A"),
        KeyPair::generate().unwrap(),
        cluster.last().unwrap(),
    );
    let leaf = leaf(&["a.example"], &fake_a);
    let mut chain = vec![fake_a.der.clone()];
    chain.extend(cluster.iter().rev().map(|c| c.der.clone()));
    assert_eq!(chain.len() + 1, 16);
    let anchor = root("Anchor A");
    let st = store(&[&anchor.der]);
    let t = Instant::now();
    let e = uncached(16)
        .verify(&st, &leaf.der, &chain, None, Purpose::Server, now())
        .unwrap_err();
    eprintln!(
        "leaf under a 15-certificate cluster: {e:?} in {:?}",
        t.elapsed()
    );
    assert!(
        matches!(
            e,
            VerifyError::BadSignature | VerifyError::UnknownIssuer { .. }
        ),
        "{e:?}"
    );
}
