//! Fuzz harness bodies, shared by the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`, each
//! a one-line wrapper) and by the regression replay test
//! (`crates/cli/tests/cli/fuzz_regressions.rs`, which includes this file with `#[path]`), so
//! a saved input is replayed through exactly the code the fuzzer ran.
//!
//! Every function takes arbitrary bytes, drives one public tlskit entry point that reads
//! untrusted input, exercises whatever it returns, and checks invariants with `assert!`
//! (a violated invariant is a bug the fuzzer should report, like a panic).
//!
//! Only public library API is used; files are written to a per-call scratch file
//! (`/dev/shm` when present) because several entry points take a path.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tlskit_store::{LoadReport, Source, StoreBuilder, TrustStore};
use tlskit_verify::names::{self, DnsName, ReferenceName};
use tlskit_verify::{
    CertificateDer, ChainVerifier, Crl, Purpose, ServerName, UnixTime, VerifierConfig,
};

/// Fixed "now" for every time-dependent check (2026-01-01T00:00:00Z), so a saved input
/// replays the same way on any day. Seeds are issued valid 2020..2040.
pub const FIXED_NOW: u64 = 1_767_225_600;

/// The DNS name chains are verified for (seed leaves carry it).
pub const FUZZ_NAME: &str = "fuzz.example";

/// Snapshot header layout (see `crates/store/src/snapshot.rs`): used only to repair
/// checksums so mutated snapshots get past the header and reach the tables and anchors.
const SNAP_HEADER_LEN: usize = 128;

/// The snapshot checksum function (xxh3-64). Passed in because the regression test's
/// crate does not depend on `xxhash-rust`; it replays snapshot inputs saved already
/// repaired (see FUZZING.md), so it passes `None`.
pub type Hasher = fn(&[u8]) -> u64;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A scratch file holding `data`, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(kind: &str, data: &[u8]) -> Option<Self> {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("tlskit-fuzz-{}-{kind}-{n}", std::process::id()));
        // A full /dev/shm is the machine's problem, not a finding: skip the input.
        fs::write(&path, data).ok()?;
        Some(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Look every anchor of `store` up by each of its keys and check that lookups only ever
/// return anchors matching the key. `must_hit`: the store was built in memory, so every
/// anchor must also be found (a mapped snapshot with a damaged index may miss).
fn exercise_store(store: &TrustStore, probe: &[u8], must_hit: bool) -> usize {
    let mut seen = 0usize;
    let _ = (store.generation(), store.is_empty(), store.der_bytes());
    for a in store.anchors() {
        seen += 1;
        let (subject, sha) = (a.subject(), a.sha256());
        let _ = (a.der().len(), a.not_before(), a.not_after(), a.index());
        let _ = tlskit_x509::dn::display(subject);
        let mut hit = false;
        for b in store.by_subject(subject) {
            assert_eq!(b.subject(), subject, "by_subject returned another subject");
            hit |= b.sha256() == sha;
        }
        assert!(hit || !must_hit, "anchor not found by its subject");
        if let Some(kid) = a.key_id() {
            let mut hit = false;
            for b in store.by_key_id(kid) {
                assert_eq!(b.key_id(), Some(kid), "by_key_id returned another key id");
                hit |= b.sha256() == sha;
            }
            assert!(hit || !must_hit, "anchor not found by its key id");
        }
        match store.by_fingerprint(sha) {
            Some(b) => assert_eq!(b.sha256(), sha, "by_fingerprint returned another anchor"),
            None => assert!(!must_hit, "anchor not found by its fingerprint"),
        }
    }
    assert!(
        seen <= store.len(),
        "iterator yielded more anchors than len()"
    );
    for i in 0..(store.len() as u32).saturating_add(2) {
        let _ = store.get(i);
    }
    // Arbitrary keys: any hit must match the key.
    for b in store.by_subject(probe) {
        assert_eq!(b.subject(), probe);
    }
    for b in store.by_key_id(probe) {
        assert_eq!(b.key_id(), Some(probe));
    }
    if let Ok(fp) = <[u8; 32]>::try_from(probe.get(..32).unwrap_or(&[])) {
        if let Some(b) = store.by_fingerprint(&fp) {
            assert_eq!(b.sha256(), &fp);
        }
    }
    let names = store.ca_names();
    let (mut count, mut bytes) = (0usize, 0usize);
    for dn in names.iter() {
        count += 1;
        bytes += 2 + dn.len();
    }
    // Built and mapped stores alike: the counts are what is sent (for a mapped store,
    // names of anchors that fail their integrity check are neither sent nor counted).
    assert_eq!(
        count,
        names.len(),
        "CaNames::len disagrees with its iterator"
    );
    assert_eq!(bytes, names.encoded_len(), "CaNames::encoded_len is wrong");
    let _ = (names.fits_tls(), names.is_empty());
    seen
}

/// PEM/DER source loading: the bytes as a trust-store source file
/// (`StoreBuilder::add_source(Source::File)`, i.e. the PEM scanner and DER detection), as
/// one DER certificate (`StoreBuilder::add_der`), and as `tlskit verify`'s certificate and
/// CRL input files (`load_certs`, `load_crl`). Returns the number of anchors loaded.
pub fn sources(data: &[u8]) -> usize {
    let Some(file) = Scratch::new("src", data) else {
        return 0;
    };
    let mut builder = StoreBuilder::new();
    let mut report = LoadReport::default();
    builder.add_source(&Source::File(file.0.clone()), &mut report);
    let _ = builder.add_der(data, &file.0);
    for e in &report.errors {
        let _ = e.to_string();
    }
    let store = builder.build();
    let n = exercise_store(&store, data, true);
    assert_eq!(n, store.len(), "a built store hides anchors");
    if let Ok(certs) = tlskit_verify::load_certs(&file.0) {
        assert!(!certs.is_empty());
    }
    let _ = tlskit_verify::load_crl(&file.0);
    n
}

/// What [`snapshot`] saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotOutcome {
    /// The bytes as given opened as a snapshot.
    pub raw_opened: bool,
    /// Anchors usable in the raw snapshot.
    pub raw_anchors: usize,
    /// The bytes with repaired checksums opened as a snapshot.
    pub repaired_opened: bool,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// Rewrite the snapshot's checksums (the tables' page sums, their sum, the sources' and
/// the header's) so they match the bytes, the way anyone writing a hostile snapshot could
/// (xxh3 is not a MAC). `None` when the header is too short or its offsets do not fit the
/// file.
pub fn repair_snapshot(data: &[u8], xxh3_64: Hasher) -> Option<Vec<u8>> {
    if data.len() < SNAP_HEADER_LEN || &data[..8] != tlskit_store::MAGIC {
        return None;
    }
    let mut out = data.to_vec();
    // Version 2: one xxh3 per page (2^page_shift bytes, header offset 36) of the tables
    // section, from byte 128 to the tables' offset.
    let shift = u32::from_le_bytes([out[36], out[37], out[38], out[39]]);
    let page = 1usize
        .checked_shl(shift)
        .filter(|p| (64..=1 << 20).contains(p))?;
    let t_off = usize::try_from(u64_at(&out, 48)).ok()?;
    let t_len = usize::try_from(u64_at(&out, 56)).ok()?;
    let sums_end = t_off.min(out.len());
    if sums_end >= SNAP_HEADER_LEN {
        let pages = (sums_end - SNAP_HEADER_LEN) / 8;
        for p in 0..pages {
            let start = t_off.checked_add(p.checked_mul(page)?)?;
            let end = start
                .saturating_add(page)
                .min(t_off.saturating_add(t_len))
                .min(out.len());
            if let Some(page) = out.get(start..end) {
                let h = xxh3_64(page);
                let at = SNAP_HEADER_LEN + p * 8;
                out[at..at + 8].copy_from_slice(&h.to_le_bytes());
            }
        }
        let h = xxh3_64(&out[SNAP_HEADER_LEN..sums_end]);
        out[104..112].copy_from_slice(&h.to_le_bytes());
    }
    let s_off = usize::try_from(u64_at(&out, 64)).ok()?;
    let s_len = usize::try_from(u64_at(&out, 72)).ok()?;
    if let Some(src) = out.get(s_off..s_off.checked_add(s_len)?) {
        let h = xxh3_64(src);
        out[112..120].copy_from_slice(&h.to_le_bytes());
    }
    let h = xxh3_64(&out[..120]);
    out[120..128].copy_from_slice(&h.to_le_bytes());
    Some(out)
}

fn open_and_exercise(file: &Scratch, probe: &[u8]) -> Option<usize> {
    let store = TrustStore::open_snapshot(&file.0).ok()?;
    let n = exercise_store(&store, probe, false);
    let _ = store.verify_all();
    let _ = store.snapshot_info();
    let _ = store.snapshot_sources();
    for issue in store.stale_sources() {
        let _ = issue.to_string();
    }
    drop(store);
    // The same file as a source of `tlskit store build` (copies anchors into a builder).
    let mut builder = StoreBuilder::new();
    let mut report = LoadReport::default();
    builder.add_source(&Source::Snapshot(file.0.clone()), &mut report);
    let rebuilt = builder.build();
    let m = exercise_store(&rebuilt, probe, true);
    assert_eq!(
        m, n,
        "rebuilding from a snapshot changed the usable anchors"
    );
    Some(n)
}

/// Snapshot reading: the bytes as a snapshot file (`TrustStore::open_snapshot`), then
/// (when `repair_with` is given) the same bytes with their checksums repaired (so the fuzzer reaches the tables and the
/// per-anchor checks, as a deliberately forged file would). An opened snapshot is
/// iterated and every anchor looked up; it is also loaded as a `Source::Snapshot`.
pub fn snapshot(data: &[u8], repair_with: Option<Hasher>) -> SnapshotOutcome {
    let mut out = SnapshotOutcome::default();
    let probe = data.get(data.len().saturating_sub(48)..).unwrap_or(&[]);
    if let Some(file) = Scratch::new("snap", data) {
        if let Some(n) = open_and_exercise(&file, probe) {
            out.raw_opened = true;
            out.raw_anchors = n;
        }
    }
    if let Some(fixed) = repair_with.and_then(|h| repair_snapshot(data, h)) {
        if fixed != data {
            if let Some(file) = Scratch::new("snapfix", &fixed) {
                out.repaired_opened = open_and_exercise(&file, probe).is_some();
            }
        } else {
            out.repaired_opened = out.raw_opened;
        }
    }
    out
}

/// Split DER objects laid end to end; a header that does not fit makes the rest one piece.
pub fn split_der(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let len = der_len(data)
            .filter(|&l| l <= data.len())
            .unwrap_or(data.len());
        let (a, b) = data.split_at(len);
        out.push(a);
        data = b;
    }
    out
}

/// Total length (header + contents) of the DER object at the start of `d`.
fn der_len(d: &[u8]) -> Option<usize> {
    let first = *d.get(1)? as usize;
    if first < 0x80 {
        return Some(2 + first);
    }
    let k = first & 0x7f;
    if k == 0 || k > 3 {
        return None;
    }
    let mut len = 0usize;
    for i in 0..k {
        len = (len << 8) | *d.get(2 + i)? as usize;
    }
    Some(2 + k + len)
}

/// What [`verify_chain`] concluded (for regression tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainOutcome {
    /// Too little input to form a chain.
    Empty,
    /// The chain verified.
    Valid,
    /// Refused, with the error's text.
    Refused(String),
}

/// Verification of an arbitrary chain. Input: one control byte, then DER objects laid end
/// to end. Control bits: 0-1 number of leading objects that become the (small) trust
/// store via `StoreBuilder::add_der`; 2 the last object is a CRL to check against; 3 client
/// instead of server purpose; 4 no reference name (else [`FUZZ_NAME`]). The next object is
/// the end entity, the rest are the presented intermediates. Verified with the cache
/// twice and without it once; the three answers must agree.
pub fn verify_chain(data: &[u8]) -> ChainOutcome {
    let Some((&ctl, rest)) = data.split_first() else {
        return ChainOutcome::Empty;
    };
    let mut pieces = split_der(rest);
    let mut config = VerifierConfig::default();
    if ctl & 4 != 0 {
        if let Some(last) = pieces.pop() {
            match Crl::from_der(last) {
                Ok(crl) => config.crls.push(crl),
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
    }
    let n_anchors = usize::from(ctl & 3).min(pieces.len());
    let mut builder = StoreBuilder::new();
    for a in &pieces[..n_anchors] {
        let _ = builder.add_der(a, Path::new("fuzz-anchor"));
    }
    let store = builder.build();
    let Some((ee, inter)) = pieces[n_anchors..].split_first() else {
        return ChainOutcome::Empty;
    };
    let ee = CertificateDer::from(*ee);
    let inter: Vec<CertificateDer<'_>> = inter.iter().map(|c| CertificateDer::from(*c)).collect();
    let purpose = if ctl & 8 != 0 {
        Purpose::Client
    } else {
        Purpose::Server
    };
    let name = if ctl & 16 != 0 {
        None
    } else {
        ServerName::try_from(FUZZ_NAME).ok()
    };
    let now = UnixTime::since_unix_epoch(Duration::from_secs(FIXED_NOW));
    let verifier = ChainVerifier::new(config.clone());
    let first = verifier.verify(&store, &ee, &inter, name.as_ref(), purpose, now);
    let second = verifier.verify(&store, &ee, &inter, name.as_ref(), purpose, now);
    config.cache = None;
    let uncached = ChainVerifier::new(config).verify_uncached(
        &store,
        &ee,
        &inter,
        name.as_ref(),
        purpose,
        now,
    );
    match (&first, &second, &uncached) {
        (Ok(a), Ok(b), Ok(c)) => {
            assert_eq!(a.chain, b.chain, "cached answer differs");
            assert_eq!(a.chain, c.chain, "uncached answer differs");
            let _ = a.chain.subjects();
            assert_eq!(a.chain.certs.first().map(|c| c.as_ref()), Some(ee.as_ref()));
            assert!(store.by_fingerprint(&a.chain.anchor_sha256).is_some());
            ChainOutcome::Valid
        }
        (Err(a), Err(b), Err(c)) => {
            assert_eq!(a, b, "cached refusal differs");
            assert_eq!(a, c, "uncached refusal differs");
            ChainOutcome::Refused(a.to_string())
        }
        _ => panic!(
            "cached and uncached verification disagree: {:?} / {:?} / {:?}",
            first.as_ref().map(|_| ()),
            second.as_ref().map(|_| ()),
            uncached.as_ref().map(|_| ())
        ),
    }
}

/// Certificate, request, key and CRL inspection: `tlskit_pki::inspect::describe_bytes`
/// (the `show` path, including its JSON rendering) and `tlskit_pki::lint::lint_bytes`.
/// Returns the number of items described.
pub fn pki_inspect(data: &[u8]) -> usize {
    let now = time::OffsetDateTime::from_unix_timestamp(FIXED_NOW as i64)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut items = 0;
    if let Ok(d) = tlskit_pki::inspect::describe_bytes(data) {
        items = d.items.len();
        assert!(items > 0, "describe_bytes returned Ok with nothing");
        let _ = format!("{d:?}");
        let _ = serde_json::to_string(&d.items);
    }
    if let Ok(findings) = tlskit_pki::lint::lint_bytes(data, now) {
        for f in &findings {
            let _ = format!("{f:?}");
        }
    }
    items
}

/// Removes a PKCS#12 file's MAC (re-encoded without it), or `None` when the bytes are not
/// a PFX with a MAC. Passed in like [`Hasher`]: the regression test's crate has no DER
/// encoder, and replays inputs saved already stripped.
pub type MacStripper = fn(&[u8]) -> Option<Vec<u8>>;

/// The harness's key-derivation limit: lower than the default (100,000) so the fuzzer
/// spends its time parsing rather than in PBKDF2 (the check is the same code either way).
pub const FUZZ_P12_MAX_ITERATIONS: u32 = 1_000;

fn p12_import(data: &[u8]) -> bool {
    let Some(file) = Scratch::new("p12", data) else {
        return false;
    };
    let limits = tlskit_pki::p12::P12Limits::default().max_iterations(FUZZ_P12_MAX_ITERATIONS);
    match tlskit_pki::p12::import_with_limits(&file.0, "fuzz", &limits) {
        Ok(imp) => {
            assert!(!imp.key_pkcs8.is_empty());
            true
        }
        Err(e) => {
            let _ = e.to_string();
            false
        }
    }
}

/// PKCS#12 import (`tlskit pki p12 import`): the bytes as a .p12 file, password "fuzz",
/// at most [`FUZZ_P12_MAX_ITERATIONS`] iterations per key derivation;
/// then (when `strip_mac` is given) the same file without its MAC. The MAC covers every
/// safe, so nearly every mutation fails it and stops there; a hostile file need not carry
/// a MAC at all, so the stripped copy is what reaches the safes, the bags, the
/// key-derivation limits and the decryption. Returns whether either imported.
pub fn pki_p12(data: &[u8], strip_mac: Option<MacStripper>) -> bool {
    let mut ok = p12_import(data);
    if let Some(stripped) = strip_mac.and_then(|f| f(data)) {
        ok |= p12_import(&stripped);
    }
    ok
}

/// Names: arbitrary UTF-8 as a typed reference name (`DnsName::parse`,
/// `ReferenceName::parse`, `parse_ip`) and as a name presented in a certificate
/// (`check_presented_dns`). A parsed name's A-label form must parse to itself.
pub fn names(data: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(data) else {
        return false;
    };
    let _ = names::parse_ip(s);
    if let Ok(r) = ReferenceName::parse(s) {
        let _ = r.to_string();
        let _ = r.to_server_name();
    }
    let _ = names::check_presented_dns(s).map_err(|e| e.to_string());
    match DnsName::parse(s) {
        Ok(n) => {
            let ascii = n.ascii().to_string();
            let _ = (n.unicode(), n.is_wildcard(), n.to_string());
            assert!(ascii.is_ascii(), "A-label form is not ASCII: {ascii:?}");
            match DnsName::parse(&ascii) {
                Ok(again) => assert_eq!(
                    again.ascii(),
                    ascii,
                    "A-label form is not stable under parse: {s:?}"
                ),
                Err(e) => panic!("A-label form {ascii:?} of {s:?} does not parse: {e}"),
            }
            true
        }
        Err(e) => {
            let _ = e.to_string();
            false
        }
    }
}

/// What [`probe_wire`] did with its input (for the replay test's expectations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireOutcome {
    /// The STARTTLS dance succeeded; the bytes of the server's side it consumed.
    Upgraded(usize),
    /// The dance failed (refusal or unreadable reply); its message.
    Refused(String),
    /// Reply readers run directly: the lines read before the input ran out or a reader failed.
    Replies(usize),
    /// `parse_ss` and `group_bursts`: the number of bursts.
    Bursts(usize),
}

/// The server side of a STARTTLS dance: reads come from the fuzz input (once, or
/// repeated forever: a server that never stops talking), writes are recorded.
struct WirePeer<'a> {
    data: &'a [u8],
    at: usize,
    endless: bool,
    consumed: usize,
    sent: Vec<u8>,
}

impl std::io::Read for WirePeer<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() || self.data.is_empty() {
            return Ok(0);
        }
        if self.at == self.data.len() {
            if !self.endless {
                return Ok(0);
            }
            self.at = 0;
        }
        let n = buf.len().min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        self.consumed += n;
        Ok(n)
    }
}

impl std::io::Write for WirePeer<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sent.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the probe and `connect --starttls` parse from the wire (`tlskit_client::starttls`,
/// `tlskit_client::probe::{parse_ss, group_bursts}`). The first byte picks the mode, the
/// rest is the server's bytes:
/// - 0..=2: the SMTP / IMAP / POP3 STARTTLS dance (`starttls::upgrade`) against the bytes;
/// - 3..=5: the same against the bytes repeated forever (a server that never stops): the
///   dance must still end, having read at most 3 × (MAX_LINES + 1) × MAX_LINE bytes;
/// - 6: the reply readers alone (`read_line`, `smtp_reply`, `imap_tagged`, `pop3_status`)
///   until the input runs out;
/// - 7: the bytes as `ss -ti` output (`parse_ss`), and as probe events for
///   `group_bursts` (3 bytes each: kind/flags, a time step in ms, a read size in
///   hundreds of bytes).
///
/// Invariants: no panic; a successful dance wrote exactly the protocol's commands and
/// stopped right after a line feed (no TLS byte consumed); every line is at most
/// `MAX_LINE` bytes and every SMTP reply at most `MAX_LINES` lines; burst bytes add up
/// to the reads up to the end time.
pub fn probe_wire(data: &[u8]) -> WireOutcome {
    use tlskit_client::probe::{group_bursts, parse_ss, WireEvent};
    use tlskit_client::starttls::{self, Starttls, MAX_LINE, MAX_LINES};
    let Some((&mode, rest)) = data.split_first() else {
        return WireOutcome::Replies(0);
    };
    match mode % 8 {
        m @ 0..=5 => {
            let proto = [Starttls::Smtp, Starttls::Imap, Starttls::Pop3][usize::from(m % 3)];
            let mut peer = WirePeer {
                data: rest,
                at: 0,
                endless: m >= 3,
                consumed: 0,
                sent: Vec::new(),
            };
            let r = starttls::upgrade(&mut peer, proto);
            assert!(
                peer.consumed <= 3 * (MAX_LINES + 1) * MAX_LINE,
                "the dance read {} bytes",
                peer.consumed
            );
            match r {
                Ok(()) => {
                    let expected: &[u8] = match proto {
                        Starttls::Smtp => b"EHLO tlskit.invalid\r\nSTARTTLS\r\n",
                        Starttls::Imap => b"a1 STARTTLS\r\n",
                        Starttls::Pop3 => b"STLS\r\n",
                        _ => unreachable!("only SMTP, IMAP and POP3 are picked above"),
                    };
                    assert_eq!(peer.sent, expected, "commands sent");
                    let last = peer.at.checked_sub(1).and_then(|i| rest.get(i));
                    assert_eq!(last, Some(&b'\n'), "the dance read past its last line");
                    WireOutcome::Upgraded(peer.consumed)
                }
                Err(e) => WireOutcome::Refused(e.to_string()),
            }
        }
        6 => {
            let mut r = rest;
            let mut lines = 0usize;
            // One reader per pass, rotating, until the input runs out or a reader fails.
            for pass in 0usize.. {
                let before = r.len();
                let ok = match pass % 4 {
                    0 => starttls::read_line(&mut r).map(|l| {
                        // At most MAX_LINE bytes read; lossy UTF-8 can triple them.
                        assert!(before - r.len() <= MAX_LINE, "read_line past MAX_LINE");
                        assert!(l.len() <= 3 * MAX_LINE, "line of {} bytes", l.len());
                        1
                    }),
                    1 => starttls::smtp_reply(&mut r).map(|rep| {
                        assert!(!rep.lines.is_empty() && rep.lines.len() <= MAX_LINES);
                        let _ = (rep.offers("STARTTLS"), rep.text());
                        assert!(rep.code.chars().count() <= 3);
                        rep.lines.len()
                    }),
                    2 => starttls::imap_tagged(&mut r, starttls::IMAP_TAG).map(|(_, l)| {
                        assert!(l.starts_with("a1 "));
                        1
                    }),
                    _ => starttls::pop3_status(&mut r).map(|_| 1),
                };
                let read = before - r.len();
                // Lines are bounded: a reader reads at most MAX_LINE bytes per line.
                assert!(read <= (MAX_LINES + 1) * MAX_LINE, "read {read} bytes");
                match ok {
                    Ok(n) => lines += n,
                    Err(e) => {
                        let _ = e.to_string();
                        break;
                    }
                }
            }
            WireOutcome::Replies(lines)
        }
        _ => {
            let info = parse_ss(&String::from_utf8_lossy(rest));
            let _ = format!("{info:?}");
            let mut t = Duration::ZERO;
            let mut events = Vec::new();
            for c in rest.chunks_exact(3) {
                t += Duration::from_millis(u64::from(c[1]));
                let ev = if c[0] & 1 == 0 {
                    WireEvent::Write
                } else {
                    WireEvent::Read(usize::from(c[2]) * 100)
                };
                events.push((t, ev));
            }
            let end = t.saturating_sub(Duration::from_millis(u64::from(mode >> 3)));
            let gap = Duration::from_millis(u64::from(rest.first().copied().unwrap_or(0) % 64));
            let mss = usize::from(rest.last().copied().unwrap_or(0)) * 8;
            let flights = group_bursts(&events, end, gap, mss);
            let read: usize = events
                .iter()
                .filter(|(at, _)| *at <= end)
                .map(|(_, e)| match e {
                    WireEvent::Read(n) => *n,
                    WireEvent::Write => 0,
                })
                .sum();
            assert_eq!(flights.iter().map(|f| f.bytes).sum::<usize>(), read);
            for w in flights.windows(2) {
                assert!(w[0].at_ms <= w[1].at_ms, "bursts out of order");
            }
            for f in &flights {
                assert_eq!(f.segments, f.bytes.div_ceil(mss.max(1)));
            }
            WireOutcome::Bursts(flights.len())
        }
    }
}

/// The `tlskit serve` configuration file: the bytes as a TOML file read by
/// `tlskit_server::ServeSettings::load` (from a scratch file, as `serve --config` does),
/// which types every value (the words, the comma lists, the log level). A loaded file's
/// values are then taken the way `serve` takes them, as far as that needs no network:
/// addresses parsed as `SocketAddr` (never resolved), seconds converted to durations.
/// Relative paths in the file must come back resolved against the file's directory.
/// Returns whether it loaded.
pub fn config(data: &[u8]) -> bool {
    let Some(file) = Scratch::new("conf", data) else {
        return false;
    };
    let c = match tlskit_server::ServeSettings::load(&file.0) {
        Ok(c) => c,
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty(), "a config error without a message");
            return false;
        }
    };
    // The scratch file's path is absolute, so every path must come back absolute
    // (relative ones joined to its directory).
    for p in [
        &c.cert,
        &c.key,
        &c.sni_dir,
        &c.shared_state_key,
        &c.shared_state_ca,
    ]
    .into_iter()
    .flatten()
    {
        assert!(
            p.is_absolute(),
            "path {p:?} not resolved against the file's directory"
        );
    }
    for a in c
        .listen
        .iter()
        .flatten()
        .chain(c.backend.iter())
        .chain(c.metrics.iter())
    {
        let _ = a.parse::<std::net::SocketAddr>();
    }
    for v in [
        c.handshake_timeout,
        c.idle_timeout,
        c.header_timeout,
        c.shutdown_grace,
        c.shared_state_reread,
    ]
    .into_iter()
    .flatten()
    {
        let _ = Duration::try_from_secs_f64(v);
    }
    if let Some(s) = c.ticket_rotation {
        let _ = Duration::from_secs(s);
    }
    if let Some(l) = c.log_level {
        let _ = l.name();
    }
    let _ = (&c.compress, &c.tls_version);
    let _ = (
        &c.respond,
        &c.client_ca,
        &c.client_auth,
        &c.ca_hints,
        &c.alpn,
        c.max_connections,
        c.proxy_protocol,
        c.no_watch,
    );
    let _ = format!("{c:?}");
    // Loading is a pure function of the bytes.
    match tlskit_server::ServeSettings::load(&file.0) {
        Ok(again) => assert_eq!(format!("{again:?}"), format!("{c:?}"), "reload differs"),
        Err(e) => panic!("the same file loaded once and failed the second time: {e}"),
    }
    true
}

/// What [`client_hello`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum HelloOutcome {
    /// Too short for the control bytes.
    Empty,
    /// Each connection's result: bytes handed on, or the refusal's label.
    Runs(Vec<Result<usize, &'static str>>),
}

/// The alert the reader sends when it refuses (plaintext, fatal).
fn alert(desc: u8) -> [u8; 7] {
    [21, 3, 3, 0, 2, 2, desc]
}

/// Check one connection's run through the ClientHello reader (`wire` what it was sent,
/// `stalled` whether its client went quiet instead of closing).
fn check_hello_run(
    run: &tlskit_server::fuzzing::HelloRun,
    wire: &[u8],
    max: usize,
    stalled: bool,
) -> Result<usize, &'static str> {
    assert!(run.read <= wire.len(), "read past the input");
    match &run.result {
        Ok(out) => {
            assert!(run.written.is_empty(), "wrote to an accepted client");
            // Everything read is handed on to rustls, nothing more, nothing changed.
            assert_eq!(out.as_slice(), &wire[..run.read], "handed-on bytes differ");
            // The per-connection cap (a first header that is not a handshake's: 5 bytes).
            assert!(
                out.len() <= max.max(5),
                "{} bytes buffered, cap {max}",
                out.len()
            );
            // Whole records only: the walk ends on a record boundary, or on one
            // non-handshake record header that is handed on as read.
            let mut at = 0;
            let mut hs = Vec::new();
            let mut foreign = false;
            while at < out.len() {
                let h = &out[at..];
                assert!(h.len() >= 5, "a partial record header handed on");
                let frag = usize::from(u16::from_be_bytes([h[3], h[4]]));
                if h[0] != 22 || h[1] != 3 || frag == 0 || frag > 16 * 1024 {
                    assert_eq!(at + 5, out.len(), "bytes after a non-handshake header");
                    foreign = true;
                    break;
                }
                assert!(h.len() >= 5 + frag, "a partial record handed on");
                hs.extend_from_slice(&h[5..5 + frag]);
                at += 5 + frag;
            }
            // A ClientHello whose header is in fits the cap, and it is complete unless a
            // record that is not a handshake's cut it short (rustls refuses that one).
            if hs.len() >= 4 && hs[0] == 1 {
                let total =
                    4 + (usize::from(hs[1]) << 16 | usize::from(hs[2]) << 8) + usize::from(hs[3]);
                assert!(total + 5 <= max, "a ClientHello of {total} bytes accepted");
                assert!(
                    foreign || hs.len() >= total,
                    "an incomplete ClientHello handed on"
                );
            }
            Ok(out.len())
        }
        Err(label) => {
            let expected: &[u8] = match *label {
                "client_hello_too_large" => &alert(47),
                "handshake_budget" | "evicted" => &alert(80),
                "eof" => {
                    if !stalled {
                        assert_eq!(run.read, wire.len(), "eof before the input's end");
                    }
                    assert!(run.read > 0, "eof before any byte (no_client_hello)");
                    &[]
                }
                // Closed before its first byte: a TCP health check, no alert.
                "no_client_hello" => {
                    assert_eq!(run.read, 0, "no_client_hello after bytes were read");
                    &[]
                }
                other => panic!("unknown refusal {other}"),
            };
            assert_eq!(run.written, expected, "alert for {label}");
            Err(label)
        }
    }
}

/// The server's own ClientHello reader (`crates/server/src/hello.rs`), through
/// `tlskit_server::fuzzing::client_hello`. Control bytes: [flags, cap, chunk, split], then
/// the client's bytes. flags bit 0: two connections share the budget (the input split
/// at `split` * len / 256; the first stalls at its end so the second may evict it);
/// bits 1-2: slots in the budget (0..=3); cap: `max_client_hello` = (cap + 1) * 64
/// (64 B .. 16 KiB, the default); chunk: the client's read size (0: all at once).
///
/// Invariants: no panic, no hang; what is handed on is exactly what was read, whole
/// records, never more than the cap, and a ClientHello in it is complete and declared
/// within the cap; every refusal sends its alert (none for eof, nor for no_client_hello:
/// a close before any byte); a single connection with room for a slot is never refused
/// for the budget; every slot is given back.
pub fn client_hello(data: &[u8]) -> HelloOutcome {
    let Some((&[flags, cap, chunk, split], wire)) = data.split_first_chunk::<4>() else {
        return HelloOutcome::Empty;
    };
    let max = (usize::from(cap) + 1) * 64;
    let slots = usize::from(flags >> 1) & 3;
    let chunk = if chunk == 0 {
        usize::MAX
    } else {
        usize::from(chunk)
    };
    let two = flags & 1 == 1;
    let (first, second) = if two {
        let (a, b) = wire.split_at(wire.len() * usize::from(split) / 256);
        (a, Some(b))
    } else {
        (wire, None)
    };
    let Some((a, b, used)) =
        tlskit_server::fuzzing::client_hello(first, second, chunk, max, slots * max)
    else {
        return HelloOutcome::Empty;
    };
    assert_eq!(used, 0, "slots still in use after every connection ended");
    let mut runs = vec![check_hello_run(&a, first, max, two)];
    if let (Some(b), Some(wire)) = (&b, second) {
        runs.push(check_hello_run(b, wire, max, false));
    }
    if !two && slots > 0 {
        assert_ne!(
            a.result,
            Err("handshake_budget"),
            "one connection, a free slot"
        );
    }
    if !two {
        assert_ne!(a.result, Err("evicted"), "evicted with nobody else there");
    }
    HelloOutcome::Runs(runs)
}

/// The HTTP responder's request-head parser (`crates/server/src/http.rs`, through
/// `tlskit_server::fuzzing::http_head`): the bytes up to the first CRLF CRLF (the whole
/// input when there is none). Returns the parse as the responder sees it.
///
/// Invariants, checked against an independent reading of the header lines: a head with
/// both Content-Length and Transfer-Encoding, a folded (obs-fold) line, a line without a
/// colon or with whitespace before it, or a request line that is not three parts with
/// `HTTP/1.` is refused; an accepted length is the value of a Content-Length header and
/// never 0; chunked only with a Transfer-Encoding header ending in chunked on HTTP/1.1+;
/// HTTP/1.0 without keep-alive closes; parsing is a pure function of the bytes.
pub fn http_head(data: &[u8]) -> Result<tlskit_server::fuzzing::HttpHead, &'static str> {
    use tlskit_server::fuzzing::{http_head, http_head_end};
    let head = match http_head_end(data) {
        Some(end) => {
            assert!(end >= 4 && &data[end - 4..end] == b"\r\n\r\n", "head end");
            assert!(
                !data[..end - 1].windows(4).any(|w| w == b"\r\n\r\n"),
                "an earlier CRLF CRLF"
            );
            &data[..end]
        }
        None => {
            assert!(!data.windows(4).any(|w| w == b"\r\n\r\n"), "missed the end");
            data
        }
    };
    let r = http_head(head);
    assert_eq!(r, http_head(head), "not a pure function of the bytes");
    let text = head.strip_suffix(b"\r\n\r\n").unwrap_or(head);
    let mut lines = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request = lines.next().unwrap_or_default();
    let parts: Vec<&[u8]> = request.split(|&b| b == b' ').collect();
    let request_ok =
        parts.len() == 3 && parts.iter().all(|p| !p.is_empty()) && parts[2].starts_with(b"HTTP/1.");
    let http10 = request_ok && parts[2] == b"HTTP/1.0";
    let (mut cl, mut te, mut folded, mut malformed) = (Vec::new(), Vec::new(), false, false);
    let mut keep_alive = false;
    for line in lines {
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            folded = true;
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            malformed = true;
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.is_empty() || name.iter().any(|b| *b <= b' ' || *b == 0x7f) {
            malformed = true;
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            cl.push(value);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            te.push(value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            keep_alive |= value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"keep-alive"));
        }
    }
    let Ok(h) = r else {
        return r;
    };
    assert!(request_ok, "accepted a malformed request line");
    assert!(!folded, "accepted obs-fold");
    assert!(!malformed, "accepted a malformed header line");
    assert!(
        cl.is_empty() || te.is_empty(),
        "accepted both Content-Length and TE"
    );
    assert!(
        !(h.chunked && h.length.is_some()),
        "both chunked and a length"
    );
    if let Some(n) = h.length {
        assert_ne!(n, 0, "a zero length reported as a body");
        let s = n.to_string();
        for v in &cl {
            for one in v.split(|&b| b == b',') {
                let one = one.trim_ascii();
                let digits = one
                    .iter()
                    .position(|&b| b != b'0')
                    .map_or(&b"0"[..], |i| &one[i..]);
                assert_eq!(digits, s.as_bytes(), "length differs from a Content-Length");
            }
        }
    } else if !h.chunked {
        assert!(te.is_empty(), "Transfer-Encoding ignored");
        for v in &cl {
            assert!(v
                .split(|&b| b == b',')
                .all(|d| d.trim_ascii().iter().all(|&b| b == b'0')));
        }
    }
    if h.chunked {
        assert!(
            !te.is_empty() && !http10,
            "chunked without TE or on HTTP/1.0"
        );
        let all = te.join(&b","[..]);
        let last = all
            .rsplit(|&b| b == b',')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        assert!(last.eq_ignore_ascii_case(b"chunked"), "chunked not last");
    }
    if http10 && !keep_alive {
        assert!(h.close, "HTTP/1.0 without keep-alive kept open");
    }
    r
}

/// The RFC 7512 `pkcs11:` URI parser (`tlskit_pkcs11::Pkcs11Uri::parse`), on the bytes as
/// (lossy) UTF-8. Invariants: no panic; an error's message never carries the PIN (the
/// value after `pin-value=`) nor a raw control character; a parsed URI names a token or
/// an object, its `Display` hides the PIN and parses back to the same fields (the PIN
/// then `***`), and displaying that again gives the same text. Returns whether it parsed.
pub fn pkcs11_uri(data: &[u8]) -> bool {
    use tlskit_pkcs11::Pkcs11Uri;
    let input = String::from_utf8_lossy(data);
    let pin = input.find("pin-value=").map(|i| {
        let v = &input[i + "pin-value=".len()..];
        &v[..v.find(['&', ';']).unwrap_or(v.len())]
    });
    let u = match Pkcs11Uri::parse(&input) {
        Ok(u) => u,
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty());
            assert!(
                !msg.chars().any(char::is_control),
                "control character in {msg:?}"
            );
            // The PIN next to its name (its characters alone may be in the message's
            // own words: a PIN `kcs1` is in "pkcs11:"; `*` is in the mask `***`).
            let masked = |p: &str| p.starts_with("***") || "***".starts_with(p);
            if let Some(p) = pin.filter(|p| !masked(p)) {
                let shown = format!("pin-value={}", p.escape_default());
                assert!(!msg.contains(&shown), "the PIN in an error message");
            }
            return false;
        }
    };
    assert!(
        u.token.is_some()
            || u.serial.is_some()
            || u.slot_id.is_some()
            || u.object.is_some()
            || u.id.is_some()
    );
    let shown = u.to_string();
    assert_eq!(format!("{u:?}"), format!("Pkcs11Uri({shown})"));
    if u.has_pin_value() {
        assert!(shown.contains("pin-value=***"), "PIN shown as {shown:?}");
    }
    // Display normalises and %-encodes (a U+FFFD becomes 9 bytes): a URI under the
    // parser's 4,096-byte limit may display longer than it, and that text is refused.
    if shown.len() > 4096 {
        return true;
    }
    let again = match Pkcs11Uri::parse(&shown) {
        Ok(a) => a,
        Err(e) => panic!("displayed URI {shown:?} does not parse: {e}"),
    };
    assert_eq!(again.has_pin_value(), u.has_pin_value());
    assert_eq!(
        again.without_pin_value(),
        u.without_pin_value(),
        "round trip of {shown:?}"
    );
    assert_eq!(again.to_string(), shown, "display not stable");
    true
}

/// Replies of the fleet's Redis as tlskit reads them (`crates/fleet/src/resp.rs`, through
/// `tlskit_fleet::fuzzing::resp_replies`). The first byte picks the cap of each reply (64
/// bytes, the 4 KiB of ticket keys, the 256 KiB of an ACME certificate) and the size of
/// each read (a drip of one byte, 7 bytes, 4 KiB); the rest is what "Redis" sends.
///
/// Invariants: the reader's buffer never holds more than the cap; the replies read and
/// how the stream ends do not depend on how the bytes arrive (the same bytes read with a
/// drip of one byte give the same result).
pub fn resp_reply(data: &[u8]) -> tlskit_fleet::fuzzing::RespRun {
    use tlskit_fleet::fuzzing::resp_replies;
    let (mode, rest) = data.split_first().map_or((0, &[][..]), |(m, r)| (*m, r));
    let cap = [64, 4096, 262_144][usize::from(mode % 3)];
    let chunk = [1, 7, 4096][usize::from(mode / 3 % 3)];
    let run = resp_replies(rest, cap, chunk);
    assert!(
        run.buffered_max <= cap,
        "buffer {} over the cap {cap}",
        run.buffered_max
    );
    if chunk != 1 {
        let drip = resp_replies(rest, cap, 1);
        assert_eq!(drip.replies, run.replies, "replies depend on the read size");
        assert_eq!(drip.end, run.end, "the end depends on the read size");
    }
    run
}

/// ACME documents as tlskit reads them from a CA (`tlskit_acme::fuzzing::acme_json`, the
/// types instant-acme deserializes, then what tlskit does with them). First byte: the
/// document (mod 5: 0 order, 1 authorization, 2 renewal information, 3 problem, 4 a
/// certificate chain in PEM through the result check); second byte: where in the ARI
/// window to pick (/255); the rest is the document.
pub fn acme_json(data: &[u8]) -> Option<tlskit_acme::fuzzing::AcmeDoc> {
    use tlskit_acme::fuzzing::{acme_json, acme_result, AcmeDoc, ACME_LEAF, ACME_MAX_CHAIN};
    let (&kind, rest) = data.split_first()?;
    let (&pick, doc) = rest.split_first()?;
    let rand01 = f64::from(pick) / 255.0;
    let kind = kind % 5;
    if kind == 4 {
        let names = vec!["fuzz.example".to_string()];
        if let Ok(n) = acme_result(doc, &names) {
            assert!(
                (1..=ACME_MAX_CHAIN).contains(&n),
                "{n} certificates accepted"
            );
        }
        return None;
    }
    let parsed = acme_json(kind, doc, rand01);
    assert_eq!(parsed, acme_json(kind, doc, rand01), "not a pure function");
    let printable = |s: &str| !s.chars().any(char::is_control);
    match &parsed {
        Some(AcmeDoc::RenewalInfo { due, .. }) => {
            let (nb, na) = ACME_LEAF;
            assert!(
                *due >= nb && *due <= na - (na - nb) / 10,
                "due {due} outside the clamped lifetime"
            );
        }
        Some(AcmeDoc::Problem(p)) => assert!(printable(p), "{p}"),
        Some(AcmeDoc::Order {
            problem: Some(p), ..
        }) => assert!(printable(p), "{p}"),
        Some(AcmeDoc::Authorization { identifier, .. }) => {
            assert!(printable(identifier), "{identifier}")
        }
        _ => {}
    }
    parsed
}

/// `Retry-After` values and ARI windows (`tlskit_acme::fuzzing::acme_retry_after`,
/// `acme_window`): the whole input as a header value (at most a day; delay-seconds of
/// any length saturate), and, after a first byte picking where in the window, as
/// `START\nEND` RFC 3339 times clamped into the certificate's lifetime.
pub fn acme_time(data: &[u8]) -> (Option<u64>, Option<u64>) {
    use tlskit_acme::fuzzing::{acme_retry_after, acme_window, ACME_LEAF};
    const DAY_MS: u64 = 86_400_000;
    let wait = acme_retry_after(data);
    if let Some(ms) = wait {
        assert!(ms <= DAY_MS, "waits {ms} ms");
    }
    if !data.is_empty() && data.iter().all(u8::is_ascii_digit) {
        let secs = std::str::from_utf8(data)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        assert_eq!(wait, Some(secs.min(86_400) * 1000), "delay-seconds");
    }
    let due = data
        .split_first()
        .and_then(|(&pick, text)| acme_window(text, f64::from(pick) / 255.0));
    if let Some(d) = due {
        let (nb, na) = ACME_LEAF;
        assert!(d >= nb && d <= na - (na - nb) / 10, "due {d}");
    }
    (wait, due)
}

/// The BIND TSIG key file parser (`tlskit_dns::TsigKey::parse`, DNS-01), on the bytes as
/// (lossy) UTF-8. Invariants: no panic; an error's message is not empty and has no raw
/// control character; a parsed key's `Debug` shows the secret as `***`; and neither an
/// error nor `Debug` ever carries the text of the input's `secret "..."` value. That last
/// one is checked by parsing the input again with the secret's characters replaced by a
/// letter the input does not contain (a secret such as `aracter ` is otherwise found in
/// any message that says "character"). Returns whether the input parsed.
pub fn dns_key_file(data: &[u8]) -> bool {
    let input = String::from_utf8_lossy(data);
    let parsed = match tlskit_dns::TsigKey::parse(&input) {
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty());
            assert!(
                !msg.chars().any(char::is_control),
                "control character in {msg:?}"
            );
            false
        }
        Ok(k) => {
            let d = format!("{k:?}");
            assert!(d.contains("***"), "{d}");
            true
        }
    };
    // The secret's value: from the first quote after "secret" to the next quote.
    let secret = input.find("secret").and_then(|i| {
        let from = i + "secret".len();
        let open = from + input[from..].find('"')? + 1;
        let close = open + input[open..].find('"')?;
        Some(open..close)
    });
    let marker = ['Q', 'Z', 'X', 'J', 'K', 'W']
        .into_iter()
        .find(|c| !input.contains(*c));
    if let (Some(range), Some(marker)) = (secret, marker) {
        let n = input[range.clone()].chars().count();
        if n >= 4 {
            let run: String = std::iter::repeat_n(marker, n).collect();
            let marked = format!("{}{run}{}", &input[..range.start], &input[range.end..]);
            let shown = match tlskit_dns::TsigKey::parse(&marked) {
                Err(e) => e.to_string(),
                Ok(k) => format!("{k:?}"),
            };
            assert!(
                !shown.contains(&run[..4 * marker.len_utf8()]),
                "the secret's text in {shown:?}"
            );
        }
    }
    parsed
}
