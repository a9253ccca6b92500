//! Replays every saved fuzz input (`fuzz/regressions/<target>/*`) through the same harness
//! the fuzz targets run (`fuzz/src/harness.rs`, included below), on the stable toolchain,
//! so a crash or hang the fuzzer found stays fixed. Also checks that hostile snapshots are
//! rejected and that the seed-shaped inputs behave as documented.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(unreachable_pub, dead_code)]
#[path = "../../../../fuzz/src/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    // A replay over nothing proves nothing: every target keeps inputs (its seeds at
    // least: `scripts/fuzz-seeds`, copied as seed-*; and whatever the fuzzer found).
    assert!(
        !files.is_empty(),
        "fuzz/regressions/{target}/ holds no inputs: commit the target's seeds"
    );
    files
}

/// Every fuzz target has committed regression inputs, and this file replays them.
#[test]
fn every_fuzz_target_has_regressions_and_a_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let this = include_str!("fuzz_regressions.rs");
    let mut targets: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    targets.sort();
    assert!(targets.len() >= 14, "fuzz targets: {targets:?}");
    for t in &targets {
        assert!(!regressions(t).is_empty());
        assert!(
            this.contains(&format!("replay(\"{t}\"")),
            "no replay test for fuzz target {t}"
        );
    }
}

/// Run `f` on every saved input of `target`, naming the file when one panics.
fn replay<T>(target: &str, f: impl Fn(&[u8]) -> T) -> Vec<(PathBuf, T)> {
    regressions(target)
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&data)));
            match r {
                Ok(v) => (p, v),
                Err(_) => panic!("fuzz regression {} panicked", p.display()),
            }
        })
        .collect()
}

#[test]
fn sources_regressions() {
    replay("sources", harness::sources);
}

/// Saved snapshot inputs are stored with their checksums already repaired (the replay
/// cannot compute xxh3), so they reach the same code the fuzzer's repaired copy did.
#[test]
fn snapshot_regressions() {
    replay("snapshot", |d| harness::snapshot(d, None));
}

#[test]
fn verify_chain_regressions() {
    replay("verify_chain", harness::verify_chain);
}

#[test]
fn pki_inspect_regressions() {
    replay("pki_inspect", harness::pki_inspect);
}

/// Saved PKCS#12 inputs are stored as the fuzzer's stripped copy (no MAC) when that is
/// what failed (the replay cannot re-encode DER).
#[test]
fn pki_p12_regressions() {
    replay("pki_p12", |d| harness::pki_p12(d, None));
}

#[test]
fn names_regressions() {
    replay("names", harness::names);
}

#[test]
fn probe_wire_regressions() {
    replay("probe_wire", harness::probe_wire);
}

/// The `probe_wire` harness reaches its success paths with seed-shaped inputs, and the
/// endless-server modes end at the documented limits.
#[test]
fn probe_wire_accepts_valid_dances_and_bounds_endless_ones() {
    use harness::{probe_wire, WireOutcome};
    let smtp = b"\x00220-mx.example ESMTP\r\n220 ready\r\n250-mx.example\r\n250-STARTTLS\r\n250 8BITMIME\r\n220 go ahead\r\n";
    assert_eq!(probe_wire(smtp), WireOutcome::Upgraded(smtp.len() - 1));
    let imap = b"\x01* OK [CAPABILITY IMAP4rev1 STARTTLS] hi\r\n* x\r\na1 OK go\r\n\x16\x03";
    assert_eq!(probe_wire(imap), WireOutcome::Upgraded(imap.len() - 3));
    assert_eq!(
        probe_wire(b"\x02+OK pop\r\n+OK go\r\n"),
        WireOutcome::Upgraded(17)
    );
    match probe_wire(b"\x00220 hi\r\n250 mx.example\r\n") {
        WireOutcome::Refused(e) => assert!(e.contains("STARTTLS not offered"), "{e}"),
        other => panic!("{other:?}"),
    }
    // Endless servers: continuation lines forever, a line without end, untagged forever.
    for endless in [&b"\x03220-x\r\n"[..], b"\x03x", b"\x04* OK\r\n"] {
        match probe_wire(endless) {
            WireOutcome::Refused(e) => assert!(e.contains("longer than"), "{e}"),
            other => panic!("{endless:?}: {other:?}"),
        }
    }
    // A POP3 server repeating +OK is answered after two lines.
    assert_eq!(probe_wire(b"\x05+OK\r\n"), WireOutcome::Upgraded(10));
    assert_eq!(
        probe_wire(b"\x06220 a\r\n250-b\r\n250 c\r\n"),
        WireOutcome::Replies(3)
    );
    assert_eq!(
        probe_wire(b"\x07\x20\x00\x00\x01\x32\x28\x01\x01\x01"),
        WireOutcome::Bursts(1)
    );
}

#[test]
fn config_regressions() {
    replay("config", harness::config);
}

#[test]
fn client_hello_regressions() {
    replay("client_hello", harness::client_hello);
}

#[test]
fn http_head_regressions() {
    replay("http_head", harness::http_head);
}

#[test]
fn dns_key_file_regressions() {
    let got = replay("dns_key_file", harness::dns_key_file);
    assert!(got.iter().any(|(_, ok)| *ok), "no seed parses");
    assert!(got.iter().any(|(_, ok)| !*ok), "no seed is refused");
}

#[test]
fn pkcs11_uri_regressions() {
    replay("pkcs11_uri", harness::pkcs11_uri);
}

/// The `client_hello`, `http_head` and `pkcs11_uri` harnesses reach their accepting and
/// refusing paths with seed-shaped inputs.
#[test]
fn server_side_harnesses_accept_and_refuse() {
    use harness::{client_hello, http_head, pkcs11_uri, HelloOutcome};
    fn record(body: &[u8]) -> Vec<u8> {
        let mut r = vec![22, 3, 1];
        r.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
        r.extend_from_slice(body);
        r
    }
    let mut hello = vec![1, 0, 0x01, 0x00];
    hello.resize(4 + 256, 7);
    // One slot, 16 KiB cap, all at once: handed on whole.
    let mut one = vec![2, 255, 0, 0];
    one.extend(record(&hello));
    assert_eq!(client_hello(&one), HelloOutcome::Runs(vec![Ok(265)]));
    // A 128-byte cap: too large after its header.
    one[1] = 1;
    assert_eq!(
        client_hello(&one),
        HelloOutcome::Runs(vec![Err("client_hello_too_large")])
    );
    // No slot: refused for the budget.
    let mut none = one.clone();
    none[..2].copy_from_slice(&[0, 255]);
    assert_eq!(
        client_hello(&none),
        HelloOutcome::Runs(vec![Err("handshake_budget")])
    );
    // Two connections, one slot: the first sends all but its last byte and waits; the
    // second evicts it and completes.
    let whole = record(&hello);
    let mut two = vec![3, 255, 7, 0];
    two.extend_from_slice(&whole[..whole.len() - 1]);
    two.extend_from_slice(&whole);
    two[3] = u8::try_from((whole.len() - 1) * 256 / (2 * whole.len() - 1) + 1).unwrap();
    assert_eq!(
        client_hello(&two),
        HelloOutcome::Runs(vec![Err("evicted"), Ok(265)])
    );

    let ok = http_head(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello").unwrap();
    assert_eq!((ok.length, ok.chunked, ok.close), (Some(5), false, false));
    assert!(
        http_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .chunked
    );
    for bad in [
        &b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
        b"GET /\r\n\r\n",
    ] {
        assert!(http_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }

    assert!(pkcs11_uri(
        b"pkcs11:token=My%20Token;object=k;id=%01%02?pin-value=1234"
    ));
    assert!(pkcs11_uri(
        b"pkcs11:slot-id=3;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so"
    ));
    assert!(!pkcs11_uri(b"pkcs11:token=a?pin-value=secret-pin&bogus"));
    assert!(!pkcs11_uri(b"pkcs11:manufacturer=x"));
}

/// Arbitrary bytes behind a valid-looking header are never trusted: garbage, a bare
/// magic, a header with a wrong checksum, and a truncated header are all refused.
#[test]
fn garbage_snapshots_are_refused() {
    let mut header = tlskit_store::MAGIC.to_vec();
    header.extend_from_slice(&1u32.to_le_bytes());
    header.extend_from_slice(&128u32.to_le_bytes());
    header.resize(128, 0);
    let mut long = header.clone();
    long.resize(4096, 0xa5);
    for data in [
        &b""[..],
        b"TLSKSNAP",
        &tlskit_store::MAGIC[..7],
        &header[..],
        &header[..127],
        &long[..],
        &[0xffu8; 300][..],
    ] {
        let out = harness::snapshot(data, None);
        assert!(!out.raw_opened, "{data:?} opened as a snapshot");
    }
}

#[test]
fn der_splitting_matches_the_documented_framing() {
    assert_eq!(
        harness::split_der(&[0x30, 1, 0, 0x30, 0]),
        [&[0x30, 1, 0][..], &[0x30, 0]]
    );
    assert_eq!(harness::split_der(&[0x30, 0x82, 0, 2, 1, 2, 9]).len(), 2);
    assert_eq!(harness::split_der(&[0x30, 9, 1]), [&[0x30, 9, 1][..]]);
    assert_eq!(harness::verify_chain(&[]), harness::ChainOutcome::Empty);
    assert_eq!(harness::verify_chain(&[1]), harness::ChainOutcome::Empty);
}

fn ymd(y: i32) -> time::OffsetDateTime {
    time::Date::from_calendar_date(y, time::Month::January, 1)
        .unwrap()
        .midnight()
        .assume_utc()
}

/// The harness certificates: webpki-shaped, valid 2020 to 2040.
fn params(cn: &str, ca: bool, sans: &[&str]) -> rcgen::CertificateParams {
    use crate::net_support::pki::{webpki_params, Extras, Role};
    let role = if ca { Role::Ca } else { Role::Server };
    webpki_params(cn, role, sans, Extras::valid(2020, 2040))
}

/// The harnesses reach their success paths with seed-shaped inputs (a harness that
/// refused everything would fuzz nothing), and a damaged anchor in a snapshot is never
/// returned.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn harnesses_accept_valid_inputs() {
    let root_key = rcgen::KeyPair::generate().unwrap();
    let root_p = params("Fuzz Root", true, &[]);
    let root = root_p.self_signed(&root_key).unwrap();
    let int_key = rcgen::KeyPair::generate().unwrap();
    let int_p = params("Fuzz Intermediate", true, &[]);
    let int = int_p
        .signed_by(&int_key, &rcgen::Issuer::from_params(&root_p, &root_key))
        .unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf_p = params(harness::FUZZ_NAME, false, &[harness::FUZZ_NAME]);
    leaf_p.serial_number = Some(rcgen::SerialNumber::from(77u64));
    let int_issuer = rcgen::Issuer::from_params(&int_p, &int_key);
    let leaf = leaf_p.signed_by(&leaf_key, &int_issuer).unwrap();
    let crl = rcgen::CertificateRevocationListParams {
        this_update: ymd(2025),
        next_update: ymd(2030),
        crl_number: rcgen::SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![rcgen::RevokedCertParams {
            serial_number: rcgen::SerialNumber::from(77u64),
            revocation_time: ymd(2025),
            reason_code: None,
            invalidity_date: None,
        }],
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    }
    .signed_by(&int_issuer)
    .unwrap();
    let (r, i, l) = (root.der().to_vec(), int.der().to_vec(), leaf.der().to_vec());

    let chain = [&[1u8][..], &r, &l, &i].concat();
    assert_eq!(harness::verify_chain(&chain), harness::ChainOutcome::Valid);
    let chain = [&[0x11u8][..], &r, &l, &i].concat();
    assert_eq!(harness::verify_chain(&chain), harness::ChainOutcome::Valid);
    let revoked = [&[5u8][..], &r, &l, &i, crl.der()].concat();
    match harness::verify_chain(&revoked) {
        harness::ChainOutcome::Refused(why) => assert!(why.contains("revoked"), "{why}"),
        other => panic!("revoked chain: {other:?}"),
    }
    let no_anchor = [&[0u8][..], &l, &i].concat();
    assert!(matches!(
        harness::verify_chain(&no_anchor),
        harness::ChainOutcome::Refused(_)
    ));

    let pem = format!("{}{}", root.pem(), int.pem());
    assert_eq!(harness::sources(pem.as_bytes()), 2);
    assert_eq!(harness::pki_inspect(pem.as_bytes()), 2);
    assert_eq!(harness::pki_inspect(crl.der()), 1);
    assert!(harness::names("räksmörgås.example".as_bytes()));
    assert!(!harness::names(b"a\xe2\x80\xa4b.example"));
    assert!(harness::config(
        b"listen = [\"127.0.0.1:0\"]\ncert = \"c.pem\"\nsni_dir = \"\"\nhandshake_timeout = inf\n"
    ));
    assert!(!harness::config(b"lissen = 1\n"));
    assert!(!harness::config(b"cert = \"\xff\"\n"));

    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("roots.pem");
    std::fs::write(&src, &pem).unwrap();
    let snap = dir.path().join("roots.snap");
    tlskit_store::build_snapshot(&[tlskit_store::Source::File(src)], &snap).unwrap();
    let mut bytes = std::fs::read(&snap).unwrap();
    let out = harness::snapshot(&bytes, None);
    assert!(out.raw_opened);
    assert_eq!(out.raw_anchors, 2);
    // The DER arena ends the file: damage the last anchor's signature. The file still
    // opens (anchors are checked lazily) but that anchor is never returned.
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55;
    let out = harness::snapshot(&bytes, None);
    assert!(out.raw_opened);
    assert_eq!(out.raw_anchors, 1);

    let kp = dir.path().join("leaf.key");
    std::fs::write(&kp, leaf_key.serialize_pem()).unwrap();
    let cp = dir.path().join("leaf.pem");
    std::fs::write(&cp, format!("{}{}", leaf.pem(), int.pem())).unwrap();
    // tlskit writes 10,000 iterations: over the harness's limit.
    let p12 = tlskit_pki::p12::export(&kp, &cp, "fuzz").unwrap();
    assert!(!harness::pki_p12(&p12, None));
    // OpenSSL with one iteration per derivation (as the fuzz seed has) imports.
    let one = dir.path().join("one.p12");
    let out = std::process::Command::new("openssl")
        .args([
            "pkcs12",
            "-export",
            "-noiter",
            "-nomaciter",
            "-passout",
            "pass:fuzz",
        ])
        .arg("-inkey")
        .arg(&kp)
        .arg("-in")
        .arg(&cp)
        .arg("-out")
        .arg(&one)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p12 = std::fs::read(&one).unwrap();
    assert!(harness::pki_p12(&p12, None));
    let mut damaged = p12.clone();
    let mid = damaged.len() / 2;
    damaged[mid] ^= 1;
    assert!(
        !harness::pki_p12(&damaged, None),
        "the MAC covers the safes"
    );
}

/// Found by the `snapshot` target's invariant check (not a crash; fixed): a snapshot's
/// `CaNames::len`/`encoded_len`/`fits_tls` are the header's values, so when an anchor
/// fails its lazy integrity check its subject is no longer yielded by `iter()` (and not
/// sent in a CertificateRequest: `hint_names` walks the iterator) but is still counted.
/// `tlskit store info` and `tlskit doctor` then report names that are never sent, and a
/// forged snapshot can make `fits_tls()` claim a list fits when it does not.
#[test]
fn snapshot_ca_name_counts_match_what_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let a = params("Root A", true, &[]).self_signed(&key).unwrap();
    let b = params("Root B", true, &[]).self_signed(&key).unwrap();
    let src = dir.path().join("roots.pem");
    std::fs::write(&src, format!("{}{}", a.pem(), b.pem())).unwrap();
    let snap = dir.path().join("roots.snap");
    tlskit_store::build_snapshot(&[tlskit_store::Source::File(src)], &snap).unwrap();
    let mut bytes = std::fs::read(&snap).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x55; // the last anchor's signature: it fails its check
    std::fs::write(&snap, &bytes).unwrap();
    let store = tlskit_store::TrustStore::open_snapshot(&snap).unwrap();
    let names = store.ca_names();
    let sent: Vec<&[u8]> = names.iter().collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(names.len(), sent.len());
    assert_eq!(
        names.encoded_len(),
        sent.iter().map(|n| 2 + n.len()).sum::<usize>()
    );
}

#[test]
fn resp_reply_regressions() {
    replay("resp_reply", harness::resp_reply);
}

/// The `resp_reply` harness reads the shapes the fleet's Redis sends and refuses the
/// hostile ones at their header, whatever the read size.
#[test]
fn resp_reply_reads_fleet_shapes_and_refuses_hostile_ones() {
    use harness::resp_reply;
    let r = resp_reply(b"\x04+OK\r\n:1\r\n$-1\r\n");
    assert_eq!(r.replies, ["status", "int", "nil"]);
    assert_eq!(r.end, "closed");
    let pubsub = b"\x07*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n";
    assert_eq!(resp_reply(pubsub).replies, ["array 3"]);
    // A 1 GB header under the ticket-key cap: refused before any body byte.
    let r = resp_reply(b"\x01$1000000000\r\n");
    assert_eq!((r.replies.len(), r.end), (0, "too_large"));
    assert!(r.buffered_max <= 64);
    assert_eq!(resp_reply(b"\x04*1\r\n*1\r\n*0\r\n").end, "malformed");
    assert_eq!(resp_reply(b"\x04*17\r\n").end, "malformed");
    // An endless status line: refused at the cap, not read on.
    let mut endless = b"\x00+".to_vec();
    endless.extend([b'O'; 200]);
    assert_eq!(resp_reply(&endless).end, "too_large");
}

/// Issue 27: ACME documents from a hostile CA (orders, authorizations, renewal
/// information with windows in years 0001 and 9999, problems with control characters,
/// a 51-certificate chain) replay through the same harness the fuzzer runs.
#[test]
fn acme_json_regressions() {
    let seen = replay("acme_json", harness::acme_json);
    assert!(
        seen.iter()
            .any(|(_, d)| matches!(d, Some(tlskit_acme::fuzzing::AcmeDoc::RenewalInfo { .. }))),
        "no renewal information among the saved inputs"
    );
}

/// Issue 27: `Retry-After` of 2^64-1, HTTP-dates in years 1994 and 9999, and ARI windows
/// far in the past and future replay without a panic, clamped.
#[test]
fn acme_time_regressions() {
    let seen = replay("acme_time", harness::acme_time);
    assert!(
        seen.iter().any(|(_, (w, _))| *w == Some(86_400_000)),
        "no clamped Retry-After among the saved inputs"
    );
    assert!(seen.iter().any(|(_, (_, d))| d.is_some()), "no window");
}
