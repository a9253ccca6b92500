//! Sources and bad input: every class is reported with its path and the load goes on.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::fs;
use std::os::unix::fs::symlink;

use common::*;
use tlskit_store::{load, IssueKind, LoadReport, Source, StoreBuilder, MAX_FILE_BYTES};

fn tags(r: &LoadReport) -> Vec<&'static str> {
    r.errors.iter().map(|e| e.reason.tag()).collect()
}

#[test]
fn pem_bundle_with_text_around_blocks() {
    let d = tempfile::tempdir().unwrap();
    let cas = many(5, "Bundle");
    let mut text = String::from("# a comment\nsome text\n");
    for (pem, _) in &cas {
        text.push_str("Subject: whatever\n");
        text.push_str(pem);
        text.push_str("\n\n");
    }
    let p = d.path().join("bundle.pem");
    fs::write(&p, text).unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert_eq!(store.len(), 5);
    assert_eq!(report.files, 1);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for (_, der) in &cas {
        let a = store.anchors().find(|a| a.der() == der.as_slice()).unwrap();
        assert_eq!(store.by_subject(a.subject()).count(), 1);
        assert!(store
            .by_key_id(a.key_id().unwrap())
            .any(|b| b.der() == a.der()));
        assert_eq!(store.by_fingerprint(a.sha256()).unwrap().der(), a.der());
    }
}

#[test]
fn der_file_and_concatenated_der() {
    let d = tempfile::tempdir().unwrap();
    let cas = many(3, "Der");
    fs::write(d.path().join("one.der"), &cas[0].1).unwrap();
    let mut cat = cas[1].1.clone();
    cat.extend_from_slice(&cas[2].1);
    fs::write(d.path().join("two.der"), cat).unwrap();
    let (store, report) = load(&[Source::Dir(d.path().into())]).unwrap();
    assert_eq!(store.len(), 3);
    assert_eq!(report.files, 2);
    assert!(report.errors.is_empty());
}

/// A DER file over the streaming threshold: the first round finds no PEM, the worker
/// (already preparing the second round) is stopped, and the whole file takes the DER
/// path: every certificate, duplicates counted once. A large binary file that is neither
/// is reported as such, not read as PEM.
#[test]
fn large_concatenated_der_file_takes_the_der_path() {
    let d = tempfile::tempdir().unwrap();
    let cas = many(4, "BigDer");
    let mut cat = Vec::new();
    let mut copies = 0usize;
    while cat.len() < (3 << 20) {
        cat.extend_from_slice(&cas[copies % 4].1);
        copies += 1;
    }
    let p = d.path().join("big.der");
    fs::write(&p, &cat).unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert_eq!(store.len(), 4);
    assert_eq!(report.duplicates, copies - 4);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for (_, der) in &cas {
        assert!(store.anchors().any(|a| a.der() == der.as_slice()));
    }

    let junk = d.path().join("junk.bin");
    fs::write(&junk, vec![0x5au8; 2 << 20]).unwrap();
    let Err(tlskit_store::StoreError::NothingLoadable { issues, .. }) = load(&[Source::File(junk)])
    else {
        panic!("a junk file loaded");
    };
    let tags: Vec<_> = issues.iter().map(|e| e.reason.tag()).collect();
    assert_eq!(tags, vec!["no-certificates"]);
    assert!(issues[0].path.ends_with("junk.bin"));
}

#[test]
fn private_key_is_skipped_reported_and_never_echoed() {
    let d = tempfile::tempdir().unwrap();
    let c = ca("With key");
    let p = d.path().join("mixed.pem");
    fs::write(
        &p,
        format!("{}{}{}", FAKE_KEY, c.pem, c.key.serialize_pem()),
    )
    .unwrap();
    let (store, report) = load(&[Source::File(p.clone())]).unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(tags(&report), vec!["private-key", "private-key"]);
    for e in &report.errors {
        assert_eq!(e.path, p);
        let msg = e.to_string();
        assert!(!msg.contains(SECRET_MARKER), "{msg}");
        assert!(!msg.contains(&c.key.serialize_pem()[30..60]), "{msg}");
        assert!(msg.contains("private key"), "{msg}");
    }
}

#[test]
fn bad_pem_blocks() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    let p = d.path().join("bad.pem");
    let text = format!(
        "-----BEGIN CERTIFICATE-----\n!!!notbase64!!!\n-----END CERTIFICATE-----\n{}-----BEGIN CERTIFICATE-----\nMIIB\n-----END CRL-----\n-----BEGIN CERTIFICATE-----\nMIIB\n",
        good.pem
    );
    fs::write(&p, text).unwrap();
    let (store, report) = load(&[Source::File(p.clone())]).unwrap();
    assert_eq!(store.len(), 1);
    let t = tags(&report);
    assert_eq!(
        t.iter().filter(|k| **k == "bad-pem").count(),
        3,
        "{:?}",
        report.errors
    );
    assert!(report
        .errors
        .iter()
        .all(|e| e.path == p && e.block.is_some()));
}

#[test]
fn non_certificate_block_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    let p = d.path().join("crl.pem");
    fs::write(
        &p,
        format!(
            "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n{}",
            good.pem
        ),
    )
    .unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert_eq!(store.len(), 1);
    assert!(
        matches!(&report.errors[0].reason, IssueKind::NotCertificate { label } if label == "X509 CRL")
    );
}

#[test]
fn malformed_der_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    let mut bad = good.der.clone();
    bad.truncate(bad.len() - 10);
    fs::write(d.path().join("a.der"), &bad).unwrap();
    fs::write(d.path().join("b.der"), &good.der).unwrap();
    // Well-formed base64 of garbage inside a PEM block.
    fs::write(
        d.path().join("c.pem"),
        "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let (store, report) = load(&[Source::Dir(d.path().into())]).unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(tags(&report), vec!["malformed-der", "malformed-der"]);
}

#[test]
fn non_ca_is_reported_and_not_loaded() {
    let d = tempfile::tempdir().unwrap();
    let (leaf_pem, _) = leaf("leaf.example");
    let good = ca("Good");
    let p = d.path().join("leaf.pem");
    fs::write(&p, format!("{leaf_pem}{}", good.pem)).unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert_eq!(store.len(), 1);
    match &report.errors[0].reason {
        IssueKind::NotCa { subject } => assert!(subject.contains("leaf.example"), "{subject}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unreadable_and_missing_files() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    fs::write(d.path().join("good.pem"), &good.pem).unwrap();
    let missing = d.path().join("missing.pem");
    let (store, report) =
        load(&[Source::File(missing.clone()), Source::Dir(d.path().into())]).unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(report.errors[0].path, missing);
    assert_eq!(report.errors[0].reason.tag(), "unreadable");
}

#[test]
fn symlink_loop_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    fs::write(d.path().join("good.pem"), &good.pem).unwrap();
    symlink(d.path().join("loop2"), d.path().join("loop1")).unwrap();
    symlink(d.path().join("loop1"), d.path().join("loop2")).unwrap();
    let (store, report) = load(&[Source::Dir(d.path().into())]).unwrap();
    assert_eq!(store.len(), 1);
    assert_eq!(tags(&report), vec!["symlink-loop", "symlink-loop"]);
}

#[test]
fn oversized_file_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good");
    fs::write(d.path().join("good.pem"), &good.pem).unwrap();
    let big = fs::File::create(d.path().join("huge.pem")).unwrap();
    big.set_len(MAX_FILE_BYTES + 1).unwrap(); // sparse
    let (store, report) = load(&[Source::Dir(d.path().into())]).unwrap();
    assert_eq!(store.len(), 1);
    assert!(matches!(
        report.errors[0].reason,
        IssueKind::TooLarge { .. }
    ));
}

#[test]
fn nothing_loadable_is_an_error_with_the_issues() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("key.pem");
    fs::write(&p, FAKE_KEY).unwrap();
    match load(&[Source::File(p)]) {
        Err(tlskit_store::StoreError::NothingLoadable { issues, .. }) => {
            assert_eq!(issues.len(), 1)
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Debian layout: /usr/share/ca-certificates/*.crt, /etc/ssl/certs/*.pem symlinks to them,
/// hash links to the .pem links, and a bundle holding them all.
#[test]
fn debian_directory_counts_each_certificate_once() {
    let root = tempfile::tempdir().unwrap();
    let share = root.path().join("share");
    let certs = root.path().join("certs");
    fs::create_dir_all(&share).unwrap();
    fs::create_dir_all(&certs).unwrap();
    let cas = many(4, "Debian");
    let mut bundle = String::new();
    for (i, (pem, _)) in cas.iter().enumerate() {
        let crt = share.join(format!("ca{i}.crt"));
        fs::write(&crt, pem).unwrap();
        symlink(&crt, certs.join(format!("ca{i}.pem"))).unwrap();
        symlink(
            format!("ca{i}.pem"),
            certs.join(format!("{:08x}.0", 0xabc0 + i)),
        )
        .unwrap();
        bundle.push_str(pem);
    }
    fs::write(certs.join("ca-certificates.crt"), &bundle).unwrap();
    let (store, report) = load(&[Source::Dir(certs.clone())]).unwrap();
    assert_eq!(store.len(), 4);
    assert_eq!(report.files, 5, "4 certificate files + 1 bundle");
    assert_eq!(
        report.aliases, 4,
        "the .pem links lead to files already read via hash links"
    );
    assert_eq!(report.duplicates, 4, "the bundle repeats the four");
    assert!(report.errors.is_empty());
    assert_eq!(store.ca_names().len(), 4);
}

#[test]
fn same_subject_anchors_are_all_returned() {
    let d = tempfile::tempdir().unwrap();
    let (old_pem, _) = ca_with(&key(), "Same Name", 2000, 2010, true);
    let (new_pem, _) = ca_with(&key(), "Same Name", 2020, 2090, true);
    let p = d.path().join("b.pem");
    fs::write(&p, format!("{old_pem}{new_pem}")).unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert_eq!(store.len(), 2);
    assert_eq!(report.expired, 1);
    let subject = store.get(0).unwrap().subject().to_vec();
    let group: Vec<_> = store.by_subject(&subject).collect();
    assert_eq!(group.len(), 2);
    assert!(group[0].not_after() < group[1].not_after());
    assert_eq!(store.ca_names().len(), 1);
    assert_eq!(store.ca_names().encoded_len(), 2 + subject.len());
}

#[test]
fn add_der_reports_duplicates() {
    let c = ca("Dup");
    let mut b = StoreBuilder::new();
    let o = std::path::Path::new("x");
    assert_eq!(b.add_der(&c.der, o).unwrap(), tlskit_store::Added::New);
    assert_eq!(
        b.add_der(&c.der, o).unwrap(),
        tlskit_store::Added::Duplicate
    );
    assert!(b.add_der(b"\x30\x03\x02\x01\x00", o).is_err());
    let s = b.build();
    assert_eq!(s.len(), 1);
    assert!(s.by_subject(b"\x30\x00").next().is_none());
    assert!(s.by_fingerprint(&[0u8; 32]).is_none());
}

/// A file over the streaming threshold (1 MiB, read in two-core rounds) with blocks around
/// round boundaries, bad blocks and a private key: same anchors and the same block numbers as
/// the same blocks in a small file (which takes the whole-buffer path).
#[test]
fn large_file_streaming_path_matches_small_file() {
    let d = tempfile::tempdir().unwrap();
    let cas = many(6, "Stream");
    let bad = "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
    let filler = |n: usize| format!("{}\n", "# filler text that is not PEM ".repeat(n / 30));
    let parts: Vec<String> = vec![
        cas[0].0.clone(),
        filler((2 << 20) - 300),
        cas[1].0.clone(),
        bad.to_string(),
        filler(1 << 20),
        cas[2].0.clone(),
        FAKE_KEY.to_string(),
        filler((1 << 20) + 12345),
        cas[3].0.clone(),
        cas[1].0.clone(),
        filler(1 << 19),
        cas[4].0.clone(),
        cas[5].0.clone(),
    ];
    let big: String = parts.concat();
    assert!(big.len() > (4 << 20) + 1000);
    let small: String = parts
        .iter()
        .filter(|p| !p.starts_with("# filler"))
        .cloned()
        .collect();
    let bp = d.path().join("big.pem");
    let sp = d.path().join("small.pem");
    fs::write(&bp, &big).unwrap();
    fs::write(&sp, &small).unwrap();
    let (b, br) = load(&[Source::File(bp)]).unwrap();
    let (s, sr) = load(&[Source::File(sp)]).unwrap();
    let ders =
        |x: &tlskit_store::TrustStore| x.anchors().map(|a| a.der().to_vec()).collect::<Vec<_>>();
    assert_eq!(ders(&b), ders(&s));
    assert_eq!(b.len(), 6);
    assert_eq!(br.duplicates, 1);
    let issues = |r: &LoadReport| {
        r.errors
            .iter()
            .map(|e| (e.block, e.reason.tag()))
            .collect::<Vec<_>>()
    };
    assert_eq!(issues(&br), issues(&sr));
    assert_eq!(
        issues(&br),
        vec![(Some(3), "bad-pem"), (Some(5), "private-key")]
    );
}

/// Many rounds (a file of 1-2 MiB is cut into 32 rounds of 64 KiB that two threads
/// prepare in any order): blocks start at and around every round boundary (BEGIN lines
/// from 11 bytes before to 11 after), with CRLF blocks, unclosed BEGIN lines, marker-like
/// text, a block spanning several rounds, bad blocks and duplicates. Anchors (in order),
/// duplicates and every issue with its block number must equal the whole-buffer path on
/// the same blocks without the filler.
#[test]
fn many_rounds_match_the_whole_buffer_path() {
    const ROUND: usize = 64 << 10;
    let d = tempfile::tempdir().unwrap();
    let cas = many(12, "Rounds");
    let huge_body: String = "QUJD\n".repeat(150_000 / 5);
    let huge = format!("-----BEGIN CERTIFICATE-----\n{huge_body}-----END CERTIFICATE-----\n");
    let mut x = 0x2545_f491u64;
    let mut rnd = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for seed in 0..3usize {
        let mut parts: Vec<String> = Vec::new();
        let push = |parts: &mut Vec<String>, p: String| parts.push(p);
        for i in 0..29usize {
            let p = match (i + seed) % 10 {
                0..=5 => cas[rnd(cas.len() as u64) as usize].0.clone(),
                6 => cas[i % cas.len()].0.replace('\n', "\r\n"),
                7 => "-----BEGIN CERTIFICATE-----\nQUJD\n".to_string(), // never closed
                8 => "text -----BEGIN\n-----BEGIN-----\n--- END ---\n".to_string(),
                _ => "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_string(),
            };
            // Start this block `off` bytes from the next round boundary (if still ahead).
            let len: usize = parts.iter().map(String::len).sum();
            let off = (i * 7 + seed * 5) % 23;
            let target = ((len / ROUND) + 1) * ROUND + off - 11;
            if i > 0 && target > len + 2 {
                let pad = format!("#{}\n", "f".repeat(target - len - 2));
                push(&mut parts, pad);
            }
            push(&mut parts, p);
            if i == 12 {
                push(&mut parts, huge.clone());
            }
            if rnd(2) == 0 {
                push(&mut parts, cas[rnd(cas.len() as u64) as usize].0.clone());
            }
        }
        let big: String = parts.concat();
        assert!(big.len() > 1 << 20 && big.len() <= 2 << 20, "{}", big.len());
        let small: String = parts
            .iter()
            .filter(|p| !p.starts_with('#'))
            .cloned()
            .collect();
        assert!(small.len() < 1 << 20);
        let bp = d.path().join(format!("big{seed}.pem"));
        let sp = d.path().join(format!("small{seed}.pem"));
        fs::write(&bp, &big).unwrap();
        fs::write(&sp, &small).unwrap();
        let (b, br) = load(&[Source::File(bp)]).unwrap();
        let (s, sr) = load(&[Source::File(sp)]).unwrap();
        // Fingerprints in order (short failure messages; equal SHA-256 means equal DER).
        let shas = |x: &tlskit_store::TrustStore| {
            x.anchors()
                .map(|a| u64::from_be_bytes(a.sha256()[..8].try_into().unwrap()))
                .collect::<Vec<_>>()
        };
        assert_eq!(shas(&b), shas(&s), "seed {seed}");
        // Each anchor's DER is whole where it was indexed (rounds are copied in one piece
        // and the certificates after a duplicate or a refused one moved down): it hashes
        // to its fingerprint, and the arena holds exactly the kept certificates.
        for x in [&b, &s] {
            use sha2::Digest;
            let mut total = 0;
            for a in x.anchors() {
                assert_eq!(
                    sha2::Sha256::digest(a.der())[..],
                    a.sha256()[..],
                    "seed {seed}"
                );
                total += a.der().len();
            }
            assert_eq!(x.der_bytes(), total, "seed {seed}");
        }
        assert_eq!(br.duplicates, sr.duplicates, "seed {seed}");
        assert!(br.duplicates > 0);
        let issues = |r: &LoadReport| {
            r.errors
                .iter()
                .map(|e| (e.block, e.reason.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(issues(&br), issues(&sr), "seed {seed}");
        assert!(issues(&br).len() > 5);
    }
}

/// A regular file swapped for a FIFO (and back) while loads run: the swap can land between
/// the loader's `stat` and its `open`. Every load must finish (the opened handle is checked,
/// and opening is non-blocking); each either loads the CA or reports the FIFO. Before, a
/// load could block for ever in `open()`.
#[test]
fn fifo_swapped_in_between_stat_and_open_never_blocks() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    let d = tempfile::tempdir().unwrap();
    let reg = d.path().join("reg.pem");
    fs::write(&reg, ca("Swap").pem).unwrap();
    let fifo = d.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let target = d.path().join("x.pem");
    fs::copy(&reg, &target).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let toggler = {
        let (stop, dir) = (stop.clone(), d.path().to_path_buf());
        let (reg, fifo, target) = (reg.clone(), fifo.clone(), target.clone());
        std::thread::spawn(move || {
            let tmp = dir.join("swap.tmp");
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let from = if flips.is_multiple_of(2) { &fifo } else { &reg };
                let _ = fs::remove_file(&tmp);
                fs::hard_link(from, &tmp).unwrap();
                fs::rename(&tmp, &target).unwrap();
                flips += 1;
            }
            flips
        })
    };
    let (tx, rx) = mpsc::channel();
    let t2 = target.clone();
    std::thread::spawn(move || {
        let (mut loaded, mut refused) = (0, 0);
        // For 3 s (the window between stat and open is a few microseconds wide).
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_secs(3) {
            match load(&[Source::File(t2.clone())]) {
                Ok(_) => loaded += 1,
                Err(tlskit_store::StoreError::NothingLoadable { issues, .. }) => {
                    let k = &issues[0].reason;
                    assert!(
                        matches!(k, IssueKind::NotRegular | IssueKind::Unreadable(_)),
                        "{k}"
                    );
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let _ = tx.send((loaded, refused));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(30));
    stop.store(true, Ordering::Relaxed);
    let flips = toggler.join().unwrap();
    let (loaded, refused) = got.expect("a load blocked (on the FIFO)");
    eprintln!("{loaded} loaded, {refused} refused, {flips} swaps");
    assert!(loaded > 0 && refused > 0, "{loaded} {refused}");
}

#[test]
fn self_signed_end_entity_is_loaded_as_pinned() {
    let d = tempfile::tempdir().unwrap();
    let (pem, der) = common::self_signed_leaf("dev.example");
    let p = d.path().join("snakeoil.pem");
    fs::write(&p, &pem).unwrap();
    let (store, report) = load(&[Source::File(p)]).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(store.len(), 1);
    let a = store.anchors().next().unwrap();
    assert_eq!(a.der(), &der[..]);
    assert!(a.is_pinned());
    // A CA is not pinned.
    let good = ca("Good");
    let p = d.path().join("ca.pem");
    fs::write(&p, &good.pem).unwrap();
    let (store, _) = load(&[Source::File(p)]).unwrap();
    assert!(!store.anchors().next().unwrap().is_pinned());
}
