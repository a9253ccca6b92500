//! Snapshots: round trip, staleness, and corruption (never trusted).
#![allow(clippy::unwrap_used)]

use crate::common;

use std::fs;

use common::*;
use tlskit_store::{build_snapshot, load, SnapshotError, Source, TrustStore};

fn fixture(n: usize) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for (pem, _) in many(n, "Snap") {
        text.push_str(&pem);
    }
    let bundle = d.path().join("bundle.pem");
    fs::write(&bundle, text).unwrap();
    let snap = d.path().join("roots.snap");
    build_snapshot(&[Source::File(bundle.clone())], &snap).unwrap();
    (d, bundle, snap)
}

#[test]
fn snapshot_round_trip_matches_the_source_store() {
    let (_d, bundle, snap) = fixture(20);
    assert!(matches!(
        Source::from_arg(snap.to_str().unwrap()),
        Source::Snapshot(_)
    ));
    let (mem, _) = load(&[Source::File(bundle)]).unwrap();
    let mapped = TrustStore::open_snapshot(&snap).unwrap();
    assert!(mapped.is_snapshot());
    mapped.verify_all().unwrap();
    assert_eq!(mem.len(), mapped.len());
    let a: Vec<_> = mem.anchors().map(|x| x.der().to_vec()).collect();
    let b: Vec<_> = mapped.anchors().map(|x| x.der().to_vec()).collect();
    assert_eq!(a, b);
    let na: Vec<_> = mem.ca_names().iter().collect();
    let nb: Vec<_> = mapped.ca_names().iter().collect();
    assert_eq!(na, nb);
    assert_eq!(
        mem.ca_names().encoded_len(),
        mapped.ca_names().encoded_len()
    );
    for x in mem.anchors() {
        assert_eq!(mapped.by_subject(x.subject()).count(), 1);
        assert_eq!(mapped.by_fingerprint(x.sha256()).unwrap().der(), x.der());
        assert!(mapped
            .by_key_id(x.key_id().unwrap())
            .any(|y| y.der() == x.der()));
        let y = mapped.by_fingerprint(x.sha256()).unwrap();
        assert_eq!(
            (y.not_before(), y.not_after()),
            (x.not_before(), x.not_after())
        );
    }
    // A snapshot is also a source like any other.
    let (again, report) = load(&[Source::Snapshot(snap)]).unwrap();
    assert_eq!(again.len(), 20);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[test]
fn stale_snapshot_is_reported() {
    let (_d, bundle, snap) = fixture(3);
    let mut text = fs::read_to_string(&bundle).unwrap();
    text.push_str(&ca("New").pem);
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(&bundle, text).unwrap();
    let (store, report) = load(&[Source::Snapshot(snap)]).unwrap();
    assert_eq!(store.len(), 3, "the snapshot still serves what it holds");
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].reason.tag(), "stale-snapshot");
}

#[test]
fn wrong_version_is_rejected() {
    let (_d, _b, snap) = fixture(3);
    let mut bytes = fs::read(&snap).unwrap();
    bytes[8] = 2;
    fs::write(&snap, &bytes).unwrap();
    assert!(matches!(
        TrustStore::open_snapshot(&snap),
        Err(SnapshotError::WrongVersion { found: 2, .. })
    ));
    bytes[..8].copy_from_slice(b"NOTASNAP");
    fs::write(&snap, &bytes).unwrap();
    assert!(matches!(
        TrustStore::open_snapshot(&snap),
        Err(SnapshotError::BadMagic)
    ));
}

#[test]
fn truncation_at_many_offsets_is_rejected() {
    let (d, _b, snap) = fixture(5);
    let bytes = fs::read(&snap).unwrap();
    let cut = d.path().join("cut.snap");
    let mut offsets: Vec<usize> = (0..200).collect();
    offsets.extend((200..bytes.len()).step_by(37));
    offsets.push(bytes.len() - 1);
    for &n in &offsets {
        fs::write(&cut, &bytes[..n]).unwrap();
        let r = TrustStore::open_snapshot(&cut);
        assert!(
            r.is_err(),
            "truncated to {n} of {} bytes was accepted",
            bytes.len()
        );
    }
    // Extended files are rejected too.
    let mut longer = bytes.clone();
    longer.push(0);
    fs::write(&cut, &longer).unwrap();
    assert!(matches!(
        TrustStore::open_snapshot(&cut),
        Err(SnapshotError::Truncated(_))
    ));
}

/// Flip every byte of the header and index, and a spread of bytes in the records and DER:
/// the file is rejected at open, or the damaged anchor is never returned and verify_all
/// reports it; no lookup ever returns bytes that differ from the original anchors.
#[test]
fn flipped_bytes_are_detected_and_never_trusted() {
    let (d, bundle, snap) = fixture(6);
    let (good, _) = load(&[Source::File(bundle)]).unwrap();
    let originals: std::collections::HashSet<Vec<u8>> =
        good.anchors().map(|a| a.der().to_vec()).collect();
    let bytes = fs::read(&snap).unwrap();
    let bad = d.path().join("bad.snap");
    let mut rejected_at_open = 0;
    let mut caught_lazily = 0;
    let positions: Vec<usize> = (0..bytes.len())
        .filter(|i| *i < 128 || i % 3 == 0) // every header byte, every third after
        .collect();
    for &i in &positions {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        fs::write(&bad, &b).unwrap();
        match TrustStore::open_snapshot(&bad) {
            Err(_) => rejected_at_open += 1,
            Ok(s) => {
                // Whatever it returns must be one of the original certificates, unaltered.
                for a in s.anchors() {
                    assert!(
                        originals.contains(a.der()),
                        "flip at {i} returned an altered anchor"
                    );
                }
                for a in good.anchors() {
                    for x in s.by_subject(a.subject()) {
                        assert!(originals.contains(x.der()));
                    }
                    if let Some(x) = s.by_fingerprint(a.sha256()) {
                        assert_eq!(x.der(), a.der(), "flip at {i}");
                    }
                }
                if s.anchors().count() < good.len() {
                    assert!(
                        s.verify_all().is_err(),
                        "flip at {i}: dropped anchor not reported"
                    );
                    caught_lazily += 1;
                } else {
                    // Anchors intact: the flip hit the recorded sources, which are checked
                    // (with their own checksum) when staleness is checked.
                    assert!(!s.stale_sources().is_empty(), "flip at {i} went unnoticed");
                }
            }
        }
    }
    assert!(
        rejected_at_open > 0 && caught_lazily > 0,
        "{rejected_at_open} {caught_lazily}"
    );
}

#[test]
fn build_is_atomic_and_replaces() {
    let (d, bundle, snap) = fixture(2);
    let before = TrustStore::open_snapshot(&snap).unwrap();
    let mut text = fs::read_to_string(&bundle).unwrap();
    text.push_str(&ca("Third").pem);
    fs::write(&bundle, text).unwrap();
    build_snapshot(&[Source::File(bundle)], &snap).unwrap();
    // The old store still holds its (old, intact) content.
    before.verify_all().unwrap();
    assert_eq!(before.len(), 2);
    assert_eq!(TrustStore::open_snapshot(&snap).unwrap().len(), 3);
    let leftovers: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// Every anchor's DER, subject lookup and integrity check, as a list to compare.
fn everything(s: &TrustStore) -> Vec<(Vec<u8>, usize)> {
    s.verify_all().unwrap();
    s.anchors()
        .map(|a| (a.der().to_vec(), s.by_subject(a.subject()).count()))
        .collect()
}

/// A snapshot in use whose file is truncated, then rewritten in place (what `truncate -s
/// 0` and `cp other.snap roots.snap` do): the open store is unaffected, since it holds its
/// own copy. A mapped file took the process down with SIGBUS on the next lookup.
#[test]
fn open_store_survives_its_file_truncated_or_rewritten_in_place() {
    let (_d, _bundle, snap) = fixture(300);
    let store = TrustStore::open_snapshot(&snap).unwrap();
    let want = everything(&store);
    assert_eq!(want.len(), 300);
    let len = fs::metadata(&snap).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&snap).unwrap();
    f.set_len(0).unwrap();
    assert!(everything(&store) == want);
    // Rewritten in place with other bytes of the same length.
    use std::os::unix::fs::FileExt;
    f.set_len(len).unwrap();
    f.write_all_at(&vec![0x5a; len as usize], 0).unwrap();
    assert!(everything(&store) == want);
    // And reopening the damaged file is refused, not trusted.
    assert!(TrustStore::open_snapshot(&snap).is_err());
}

/// A big file that starts like a snapshot but whose header does not account for it is
/// refused after reading its 128-byte header, not read whole into memory.
#[test]
fn big_file_with_a_bad_header_is_not_read_whole() {
    let (d, _bundle, snap) = fixture(3);
    let big = d.path().join("big.snap");
    let head = fs::read(&snap).unwrap();
    let f = fs::File::create(&big).unwrap();
    use std::io::Write;
    (&f).write_all(&head[..128]).unwrap();
    f.set_len(1 << 30).unwrap();
    let t = std::time::Instant::now();
    let e = TrustStore::open_snapshot(&big).err().unwrap();
    assert!(
        matches!(&e, SnapshotError::Truncated(m) if m.contains("file has 1073741824")),
        "{e}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    // Over the limit: refused by its size alone.
    f.set_len(tlskit_store::MAX_SNAPSHOT_BYTES + 1).unwrap();
    assert!(matches!(
        TrustStore::open_snapshot(&big),
        Err(SnapshotError::TooLarge(_))
    ));
}
