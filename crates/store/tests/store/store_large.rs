//! A store large enough for its arrays to live in huge-page mappings (see src/arena.rs:
//! arrays growing past 8 MiB, or every array of 2 MiB or more once a builder knows the
//! store is large) is the same store as one built in ordinary vectors, by every way of
//! building it: one certificate at a time, pre-sized, and the two-core PEM path.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;

use base64::Engine;
use tlskit_store::{load, Source, StoreBuilder, TrustStore};

/// `n` distinct CA certificates of equal length made from one signed template by
/// rewriting its serial number and common name (the store parses but does not verify
/// signatures). Every fourth certificate repeats an earlier subject, so subject groups
/// of two exist throughout.
fn variants(n: usize) -> Vec<Vec<u8>> {
    let key = common::key();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "Large 0000000");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.serial_number = Some(rcgen::SerialNumber::from_slice(&[
        0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
    ]));
    let template = p.self_signed(&key).unwrap().der().to_vec();
    let serial_at = template.windows(8).position(|w| w == [0x5a; 8]).unwrap();
    // The name appears twice (issuer, then subject): rewrite both.
    let cn_at: Vec<usize> = template
        .windows(13)
        .enumerate()
        .filter(|(_, w)| *w == b"Large 0000000")
        .map(|(i, _)| i + 6)
        .collect();
    assert_eq!(cn_at.len(), 2);
    (0..n)
        .map(|i| {
            let mut d = template.clone();
            d[serial_at..serial_at + 8].copy_from_slice(&(i as u64 | 1 << 62).to_be_bytes());
            let name = if i % 4 == 3 { i - 1 } else { i };
            for &at in &cn_at {
                d[at..at + 7].copy_from_slice(format!("{name:07}").as_bytes());
            }
            d
        })
        .collect()
}

fn pem(ders: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for d in ders {
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        let b = base64::engine::general_purpose::STANDARD.encode(d);
        for line in b.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(line).unwrap());
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

/// Everything a user can ask of the store, in order.
fn summary(s: &TrustStore) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for a in s.anchors() {
        out.push(a.der().to_vec());
        out.push(a.sha256().to_vec());
        let same_subject: Vec<u32> = s.by_subject(a.subject()).map(|b| b.index()).collect();
        out.push(same_subject.iter().flat_map(|i| i.to_le_bytes()).collect());
        assert_eq!(s.by_fingerprint(a.sha256()).unwrap().index(), a.index());
    }
    for name in s.ca_names().iter() {
        out.push(name.to_vec());
    }
    out.push(s.ca_names().encoded_len().to_le_bytes().to_vec());
    out
}

#[test]
fn large_store_is_the_same_however_built() {
    let n = 30_000;
    let ders = variants(n);
    let total: usize = ders.iter().map(Vec::len).sum();
    assert!(
        total > 9 << 20,
        "{total} bytes: not past the 8 MiB mapping threshold"
    );

    // One at a time, never pre-sized: the arena becomes a mapping as it grows.
    let mut grown = StoreBuilder::new();
    for d in &ders {
        grown.add_der(d, Path::new("grown")).unwrap();
    }
    let grown = grown.build();

    // Pre-sized as a large store, with room for four times as many anchors (as the PEM
    // path overestimates): the tables and records too are mapped from the start.
    let mut sized = StoreBuilder::new();
    sized.reserve(4 * n, total);
    for d in &ders {
        sized.add_der(d, Path::new("sized")).unwrap();
    }
    let sized = sized.build();

    // A PEM bundle through the two-core path (and its own estimate of the size).
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.pem");
    std::fs::write(&bundle, pem(&ders)).unwrap();
    let (loaded, report) = load(&[Source::File(bundle)]).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);

    assert_eq!(grown.len(), n);
    assert_eq!(grown.ca_names().len(), n - n / 4);
    let want = summary(&grown);
    assert!(summary(&sized) == want, "pre-sized store differs");
    assert!(summary(&loaded) == want, "PEM-loaded store differs");
    for s in [&grown, &sized, &loaded] {
        assert_eq!(s.der_bytes(), total);
    }
    // (The deliberately oversized one aside.)
    for s in [&grown, &loaded] {
        let (m, d) = (s.memory_bytes(), s.der_bytes());
        assert!(m * 2 <= d * 3, "memory {m} over 1.5x DER {d}");
    }

    // Its snapshot maps back to the same store.
    let snap = dir.path().join("large.tlskit");
    loaded.write_snapshot(&snap, &[]).unwrap();
    let mapped = TrustStore::open_snapshot(&snap).unwrap();
    mapped.verify_all().unwrap();
    assert!(summary(&mapped) == want, "snapshot differs");
}
