//! Failures keep the error behind them: `source()` is the writer's, the operating
//! system's or the watcher's typed error, and the message is unchanged.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::error::Error as _;
use std::fs;

use common::*;
use tlskit_store::{SnapshotError, Source, StoreError, StoreHandle, TrustStore};

#[test]
fn a_failed_write_keeps_the_writers_error() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("no-such-dir").join("roots.snap");
    let e = tlskit_store::atomic_write(&out, &[b"x"]).unwrap_err();
    let source = e
        .source()
        .and_then(|s| s.downcast_ref::<tlskit_io::WriteError>())
        .expect("the writer's error is the source");
    let tlskit_io::WriteError::Io { source: io, .. } = source else {
        panic!("not an I/O failure: {source}");
    };
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    // The message names the file and the operating system's reason, as before.
    assert_eq!(
        e.to_string(),
        format!("cannot write {}: {io}", out.display())
    );
}

#[test]
fn prune_refuses_a_snapshot_or_the_system_store_in_words() {
    let d = tempfile::tempdir().unwrap();
    let e = tlskit_store::plan_prune(&Source::System, d.path()).unwrap_err();
    assert!(matches!(e, StoreError::NotPrunable { .. }));
    assert_eq!(
        e.to_string(),
        "cannot write system: prune works on a file or a directory of certificate files"
    );
}

#[test]
fn a_prune_move_onto_an_existing_backup_is_an_io_error_and_moves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("cas");
    let backup = d.path().join("backup");
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(&backup).unwrap();
    let good = ca("Keep");
    fs::write(src.join("a.pem"), &good.pem).unwrap();
    fs::write(src.join("b.pem"), &good.pem).unwrap(); // duplicate: planned to move
    fs::write(backup.join("b.pem"), "already here").unwrap();
    let plan = tlskit_store::plan_prune(&Source::Dir(src.clone()), &backup).unwrap();
    assert_eq!(plan.moves.len(), 1);
    let results = tlskit_store::apply_prune(&plan);
    assert_eq!(results.len(), 1);
    let (path, r) = &results[0];
    assert_eq!(path, &src.join("b.pem"));
    let e = r.as_ref().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(
        e.to_string(),
        format!(
            "{} already exists in the backup; not overwritten",
            backup.join("b.pem").display()
        )
    );
    assert!(src.join("b.pem").exists());
    assert_eq!(
        fs::read_to_string(backup.join("b.pem")).unwrap(),
        "already here"
    );
}

#[test]
fn a_directory_that_cannot_be_watched_is_named_and_its_error_kept() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("cas");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("a.pem"), ca("Watched").pem).unwrap();
    let (h, _) = StoreHandle::new(vec![Source::Dir(dir.clone())]).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    let Err(e) = h.watch_sources(std::time::Duration::from_millis(50), None) else {
        panic!("a removed directory was watched");
    };
    let StoreError::Watch {
        dir: Some(which), ..
    } = &e
    else {
        panic!("not a directory watch failure: {e}");
    };
    assert_eq!(which, &dir);
    let source = e.source().expect("the watcher's error is the source");
    assert_eq!(
        e.to_string(),
        format!("cannot watch: {}: {source}", dir.display())
    );
}

#[test]
fn a_snapshot_that_cannot_be_opened_keeps_the_readers_error() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("absent.snap");
    let Err(e) = TrustStore::open_snapshot(&missing) else {
        panic!("a missing snapshot opened");
    };
    let SnapshotError::Io { reason, cause } = &e else {
        panic!("not an I/O refusal: {e}");
    };
    let read = cause
        .get()
        .downcast_ref::<tlskit_io::ReadError>()
        .expect("tlskit-io's error is the cause");
    assert!(
        matches!(read.kind, tlskit_io::ReadErrorKind::Io(_)),
        "{read}"
    );
    assert_eq!(reason, &read.kind.to_string());
    assert_eq!(e.to_string(), format!("cannot read snapshot: {reason}"));
    // The chain goes on from the cause.
    let via_source = e.source().and_then(|c| c.source()).unwrap();
    assert!(via_source.downcast_ref::<tlskit_io::ReadError>().is_some());

    // A directory is refused before reading, in words, with the same kind of cause.
    let Err(e) = TrustStore::open_snapshot(d.path()) else {
        panic!("a directory opened as a snapshot");
    };
    assert_eq!(
        e.to_string(),
        "cannot read snapshot: not a regular file (directory): refused"
    );
    let SnapshotError::Io { cause, .. } = &e else {
        panic!("not an I/O refusal: {e}");
    };
    let read = cause.get().downcast_ref::<tlskit_io::ReadError>().unwrap();
    assert!(matches!(read.kind, tlskit_io::ReadErrorKind::NotRegular(_)));
}
