//! A snapshot whose anchor's DER was overwritten in place (issue #27): the anchor is
//! never trusted (as before), and it is now reported, by index and reason, wherever the
//! store meets it: a reload, its first use (`damaged_seen`), and a full check.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::fs;

use common::*;
use tlskit_store::{build_snapshot, AnchorDamage, IssueKind, Source, StoreHandle, TrustStore};

/// A 5-anchor snapshot and the DER of each anchor, in store order.
fn fixture() -> (tempfile::TempDir, std::path::PathBuf, Vec<Vec<u8>>) {
    let d = tempfile::tempdir().unwrap();
    let all = many(5, "Damage");
    let text: String = all.iter().map(|(pem, _)| pem.as_str()).collect();
    let bundle = d.path().join("bundle.pem");
    fs::write(&bundle, text).unwrap();
    let snap = d.path().join("roots.snap");
    build_snapshot(&[Source::File(bundle)], &snap).unwrap();
    let ders = TrustStore::open_snapshot(&snap)
        .unwrap()
        .anchors()
        .map(|a| a.der().to_vec())
        .collect();
    (d, snap, ders)
}

/// Write garbage over 16 bytes in the middle of `der` where it sits in the file.
fn damage(snap: &std::path::Path, der: &[u8]) {
    let mut bytes = fs::read(snap).unwrap();
    let at = bytes
        .windows(der.len())
        .position(|w| w == der)
        .expect("anchor DER in the snapshot");
    let mid = at + der.len() / 2;
    bytes[mid..mid + 16].copy_from_slice(&[0xee; 16]);
    fs::write(snap, bytes).unwrap();
}

#[test]
fn damaged_anchor_is_reported_at_reload_by_index_and_reason() {
    let (_d, snap, ders) = fixture();
    let (h, report) = StoreHandle::new(vec![Source::Snapshot(snap.clone())]).unwrap();
    assert!(report.errors.is_empty());
    damage(&snap, &ders[2]);
    let out = h.reload().unwrap();
    let damaged: Vec<_> = out
        .report
        .errors
        .iter()
        .filter_map(|e| match e.reason {
            IssueKind::CorruptAnchor { index, reason } => Some((index, reason)),
            _ => None,
        })
        .collect();
    assert_eq!(damaged, vec![(2, AnchorDamage::Digest)]);
    assert_eq!(out.report.error_counts.get("corrupt-anchor"), Some(&1));
    let text = out.report.errors[0].to_string();
    assert!(
        text.contains("anchor #2") && text.contains("SHA-256"),
        "{text}"
    );
    // One anchor fewer is trusted: the anchor set changed.
    assert!(out.anchors_changed);
    assert_eq!(h.current().anchors().count(), 4);
    assert_eq!(h.current().damaged_seen(), 1);
}

#[test]
fn damaged_anchor_is_counted_at_first_use_and_named_by_verify_all() {
    let (_d, snap, ders) = fixture();
    damage(&snap, &ders[3]);
    let s = TrustStore::open_snapshot(&snap).unwrap();
    assert_eq!(s.damaged_seen(), 0, "nothing checked at open");
    let subject = tlskit_store::der::cert_view(&ders[3]).unwrap().subject;
    assert_eq!(s.by_subject(subject).count(), 0, "never returned");
    assert_eq!(s.damaged_seen(), 1, "found at first use");
    assert_eq!(s.damaged_anchors(), vec![(3, AnchorDamage::Digest)]);
    let e = s.verify_all().unwrap_err().to_string();
    assert!(e.contains("first #3") && e.contains("SHA-256"), "{e}");
}
