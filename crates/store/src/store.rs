//! The trust store: one byte layout shared by stores built in memory and stores read
//! from a snapshot file, so there is a single lookup path.
//!
//! Layout (all integers little-endian): an index buffer, the records, the fingerprints and
//! the DER arena (four buffers in memory; one "tables" section of a snapshot file holds the
//! first three back to back, at the offsets [`Layout::offsets`] gives, followed by the
//! snapshot-only parts of [`SnapParts`]):
//!
//! ```text
//! index part (checksummed when a snapshot is opened)
//!   subj_tab[subj_cap] u32   open addressing, linear probing; slot = head anchor + 1, 0 = empty
//!   ski_tab[ski_cap]   u32   same, keyed by subjectKeyIdentifier
//!   sha_tab[sha_cap]   u32   same, keyed by SHA-256 (first 8 bytes are the hash)
//!   subj_next[n]       u32   next anchor with the same subject + 1, 0 = end (insertion order)
//!   ski_next[n]        u32   next anchor with the same SKI + 1
//!   names[m]           u32   first anchor of each distinct subject, in first-seen order
//! record part (verified per anchor on first use for a snapshot store; see snapshot.rs)
//!   recs[n]            40 B  der_off der_len subj_off subj_len ski_off ski_len (u32),
//!                            not_before not_after (i64)
//!   sha[n]             32 B  SHA-256 of the anchor's DER
//! snapshot parts (SnapParts; a snapshot store reads them, a built store has none)
//!   subj_tag[subj_cap] u32   high half of the subject hash of each subj_tab slot's anchor
//!   ski_tag[ski_cap]   u32   same for ski_tab: probing fetches only anchors whose tag matches
//!   expiry[n]          i64   every notAfter, sorted: expired anchors counted by bisection
//! der arena                  the anchors' DER, back to back
//! ```
//!
//! A built store holds all of it in memory. A snapshot store ([`Src::Snap`]) holds only
//! the page sums read at open and reads the rest with positioned reads as it is used:
//! tables in checked pages, each anchor's record, fingerprint and DER once, verified
//! (SHA-256 against the fingerprint, a re-parse against the record) before it is kept.
//!
//! Memory per anchor beyond its DER: 40 (record) + 32 (fingerprint) + 8 (chains) + about
//! 16..32 (three tables at load factor <= 3/4) + 4 per distinct subject.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::arena::Bytes;
use crate::error::AnchorDamage;
use crate::origin::SnapshotMeta;
use crate::paged::{Paged, Slots};
use tlskit_x509::der;

pub(crate) const REC_LEN: usize = 40;
pub(crate) const NO_SKI: u32 = u32::MAX;

/// Home slot of a hash in a table of `cap` (a power of two) slots.
#[inline]
pub(crate) fn slot_of(h: u64, cap: usize) -> usize {
    (h >> 32) as usize & (cap - 1)
}

/// One anchor's record: offsets into the arena and validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Rec {
    pub(crate) der_off: u32,
    pub(crate) der_len: u32,
    pub(crate) subj_off: u32,
    pub(crate) subj_len: u32,
    pub(crate) ski_off: u32,
    pub(crate) ski_len: u32,
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
}

impl Rec {
    /// The record as stored in the tables buffer (little-endian fields in order).
    pub(crate) fn to_bytes(self) -> [u8; REC_LEN] {
        let mut b = [0u8; REC_LEN];
        for (i, v) in [
            self.der_off,
            self.der_len,
            self.subj_off,
            self.subj_len,
            self.ski_off,
            self.ski_len,
        ]
        .into_iter()
        .enumerate()
        {
            b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[24..32].copy_from_slice(&self.not_before.to_le_bytes());
        b[32..40].copy_from_slice(&self.not_after.to_le_bytes());
        b
    }
    fn read(b: &[u8]) -> Option<Rec> {
        let u = |i: usize| {
            b.get(i..i + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        };
        let l = |i: usize| {
            b.get(i..i + 8)
                .map(|s| i64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
        };
        Some(Rec {
            der_off: u(0)?,
            der_len: u(4)?,
            subj_off: u(8)?,
            subj_len: u(12)?,
            ski_off: u(16)?,
            ski_len: u(20)?,
            not_before: l(24)?,
            not_after: l(32)?,
        })
    }
}

/// Sizes that determine every offset in the tables buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Layout {
    pub(crate) n: u32,
    pub(crate) m: u32,
    pub(crate) subj_cap: u32,
    pub(crate) ski_cap: u32,
    pub(crate) sha_cap: u32,
    pub(crate) encoded_len: u64,
}

/// Byte offsets of each section in the tables buffer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offsets {
    pub(crate) subj_tab: usize,
    pub(crate) ski_tab: usize,
    sha_tab: usize,
    subj_next: usize,
    ski_next: usize,
    names: usize,
    /// End of the index part (= start of the record part, 8-aligned).
    pub(crate) index_len: usize,
    pub(crate) recs: usize,
    pub(crate) sha: usize,
    pub(crate) total: usize,
}

impl Layout {
    pub(crate) fn offsets(&self) -> Option<Offsets> {
        let mut o = Offsets::default();
        let mut p = 0usize;
        let mut take = |count: u32, size: usize| -> Option<usize> {
            let at = p;
            p = p.checked_add((count as usize).checked_mul(size)?)?;
            Some(at)
        };
        o.subj_tab = take(self.subj_cap, 4)?;
        o.ski_tab = take(self.ski_cap, 4)?;
        o.sha_tab = take(self.sha_cap, 4)?;
        o.subj_next = take(self.n, 4)?;
        o.ski_next = take(self.n, 4)?;
        o.names = take(self.m, 4)?;
        p = p.checked_add(7)? & !7;
        o.index_len = p;
        o.recs = p;
        p = p.checked_add((self.n as usize).checked_mul(REC_LEN)?)?;
        o.sha = p;
        p = p.checked_add((self.n as usize).checked_mul(32)?)?;
        o.total = p;
        Some(o)
    }
    /// Tables must be powers of two, big enough for their entries (the SKI table holds
    /// one entry per distinct SKI, which may be fewer than n) and not absurdly large.
    pub(crate) fn sane(&self) -> bool {
        let limit = (u64::from(self.n) + 16) * 4;
        let ok =
            |cap: u32, need: u32| cap.is_power_of_two() && cap > need && u64::from(cap) <= limit;
        self.m <= self.n
            && ok(self.subj_cap, self.m)
            && ok(self.ski_cap, 0)
            && ok(self.sha_cap, self.n)
    }
}

/// Byte offsets, within a snapshot's tables section, of the parts only a snapshot has
/// (after [`Offsets::total`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SnapParts {
    pub(crate) subj_tag: usize,
    pub(crate) ski_tag: usize,
    pub(crate) expiry: usize,
    /// Length of the whole tables section.
    pub(crate) total: usize,
}

impl SnapParts {
    pub(crate) fn new(lay: &Layout, off: &Offsets) -> Option<SnapParts> {
        let subj_tag = off.total;
        let ski_tag = subj_tag.checked_add((lay.subj_cap as usize).checked_mul(4)?)?;
        let expiry = ski_tag
            .checked_add((lay.ski_cap as usize).checked_mul(4)?)?
            .checked_add(7)?
            & !7;
        let total = expiry.checked_add((lay.n as usize).checked_mul(8)?)?;
        Some(SnapParts {
            subj_tag,
            ski_tag,
            expiry,
            total,
        })
    }
}

/// Largest DER one snapshot anchor may have (a record claiming more is damaged): far
/// above any real CA certificate, and a bound on what one lookup can make the store read.
pub(crate) const MAX_ANCHOR_DER: u32 = 1 << 20;

/// What is wrong with this anchor, if anything: does its DER hash to its recorded
/// fingerprint, and do the recorded fields match what the DER says? (Checked for each
/// snapshot anchor before its first use.)
pub(crate) fn anchor_damage(a: &Anchor<'_>, rec: &Rec) -> Option<AnchorDamage> {
    use sha2::Digest;
    let digest: [u8; 32] = sha2::Sha256::digest(a.der).into();
    if &digest != a.sha256 {
        return Some(AnchorDamage::Digest);
    }
    let Ok(f) = der::parse_cert(a.der) else {
        return Some(AnchorDamage::Unreadable);
    };
    let (ski_off, ski_len) = f.ski.unwrap_or((NO_SKI, 0));
    let self_issued = a
        .der
        .get(f.subject.0 as usize..(f.subject.0 + f.subject.1) as usize)
        == a.der
            .get(f.issuer.0 as usize..(f.issuer.0 + f.issuer.1) as usize);
    let intact = (f.is_ca || self_issued)
        && f.subject == (rec.subj_off, rec.subj_len)
        && (ski_off, ski_len) == (rec.ski_off, rec.ski_len)
        && f.not_before == rec.not_before
        && f.not_after == rec.not_after;
    (!intact).then_some(AnchorDamage::Record)
}

/// The fields of one anchor as views into `der`, if the record's ranges fit in it.
fn view<'a>(der: &'a [u8], r: &Rec, sha256: &'a [u8; 32], index: u32) -> Option<Anchor<'a>> {
    let subject =
        der.get(r.subj_off as usize..(r.subj_off as usize).checked_add(r.subj_len as usize)?)?;
    let key_id = if r.ski_off == NO_SKI {
        None
    } else {
        Some(der.get(r.ski_off as usize..(r.ski_off as usize).checked_add(r.ski_len as usize)?)?)
    };
    Some(Anchor {
        der,
        subject,
        key_id,
        sha256,
        not_before: r.not_before,
        not_after: r.not_after,
        index,
    })
}

/// One snapshot anchor as read from the file and verified: what its [`Anchor`] views.
pub(crate) struct Entry {
    rec: Rec,
    sha: [u8; 32],
    der: Box<[u8]>,
}

/// The verdict on one snapshot anchor, kept once reached.
pub(crate) enum Verdict {
    Intact(Box<Entry>),
    Damaged(AnchorDamage),
}

/// A store read from a snapshot file on demand (see the module docs and snapshot.rs).
pub(crate) struct Snap {
    /// The tables section in checked pages (and the file handle).
    pub(crate) pages: Paged,
    pub(crate) parts: SnapParts,
    /// File offset and length of the DER section.
    pub(crate) der_at: u64,
    pub(crate) der_len: u64,
    /// Sources section (file offset, length) and its xxh3.
    pub(crate) sources: (u64, u64, u64),
    pub(crate) verdicts: Slots<Verdict>,
    /// Anchors found damaged (verdicts `Damaged` set).
    damaged: AtomicUsize,
    /// DER bytes held by intact verdicts, and how many those are.
    held: AtomicUsize,
    intact: AtomicUsize,
}

impl Snap {
    pub(crate) fn new(
        pages: Paged,
        parts: SnapParts,
        der: (u64, u64),
        sources: (u64, u64, u64),
        n: u32,
    ) -> Self {
        Snap {
            pages,
            parts,
            der_at: der.0,
            der_len: der.1,
            sources,
            verdicts: Slots::new(n as usize),
            damaged: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            intact: AtomicUsize::new(0),
        }
    }

    /// Read anchor `i` from the file and verify it.
    fn fetch(&self, off: &Offsets, i: u32) -> Verdict {
        let mut rb = [0u8; REC_LEN];
        let mut sha = [0u8; 32];
        let (Some(()), Some(()), Some(rec)) = (
            self.pages.read(off.recs + i as usize * REC_LEN, &mut rb),
            self.pages.read(off.sha + i as usize * 32, &mut sha),
            Rec::read(&rb),
        ) else {
            return Verdict::Damaged(AnchorDamage::Unreadable);
        };
        let end = u64::from(rec.der_off) + u64::from(rec.der_len);
        // A record beyond the DER section, or one that would take the cache past the
        // section's size (it overlaps others: a forged file), is damaged.
        if end > self.der_len
            || rec.der_len > MAX_ANCHOR_DER
            || self.held.load(Ordering::Relaxed) as u64 + u64::from(rec.der_len) > self.der_len
        {
            return Verdict::Damaged(AnchorDamage::Record);
        }
        let mut der = vec![0u8; rec.der_len as usize];
        if self
            .pages
            .file
            .read_exact_at(&mut der, self.der_at + u64::from(rec.der_off))
            .is_err()
        {
            return Verdict::Damaged(AnchorDamage::Unreadable);
        }
        let damage = match view(&der, &rec, &sha, i) {
            Some(a) => anchor_damage(&a, &rec),
            None => Some(AnchorDamage::Record),
        };
        match damage {
            Some(d) => Verdict::Damaged(d),
            None => Verdict::Intact(Box::new(Entry {
                rec,
                sha,
                der: der.into_boxed_slice(),
            })),
        }
    }

    /// Anchor `i`'s verdict, fetching and keeping it on first use.
    fn verdict(&self, off: &Offsets, i: u32) -> Option<&Verdict> {
        if let Some(v) = self.verdicts.get(i as usize) {
            return Some(v);
        }
        self.keep(i, self.fetch(off, i))
    }

    fn keep(&self, i: u32, v: Verdict) -> Option<&Verdict> {
        let (kept, fresh) = self.verdicts.set(i as usize, v)?;
        // Count only what this call put in (another thread may have been first).
        if fresh {
            match kept {
                Verdict::Intact(e) => {
                    self.held.fetch_add(e.der.len(), Ordering::Relaxed);
                    self.intact.fetch_add(1, Ordering::Relaxed);
                }
                Verdict::Damaged(_) => {
                    self.damaged.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Some(kept)
    }

    /// What is wrong with anchor `i`, checking it if needed; an intact anchor checked here
    /// for the first time is not kept (a full check must not fill the cache).
    fn check(&self, off: &Offsets, i: u32) -> Option<AnchorDamage> {
        match self.verdicts.get(i as usize) {
            Some(Verdict::Intact(_)) => None,
            Some(Verdict::Damaged(d)) => Some(*d),
            None => match self.fetch(off, i) {
                Verdict::Intact(_) => None,
                v @ Verdict::Damaged(_) => match self.keep(i, v) {
                    Some(Verdict::Damaged(d)) => Some(*d),
                    _ => None,
                },
            },
        }
    }

    fn memory(&self) -> usize {
        self.pages.memory()
            + self.verdicts.memory()
            + self.held.load(Ordering::Relaxed)
            + self.intact.load(Ordering::Relaxed) * size_of::<Entry>()
    }
}

/// Where a store's bytes are.
pub(crate) enum Src {
    /// Built in memory: all four buffers.
    Mem {
        /// The index part: hash tables, subject/SKI chains, CA names (`off.index_len` bytes).
        tables: Bytes,
        /// `recs[n]`, REC_LEN bytes each.
        recs: Bytes,
        /// `sha[n]`, 32 bytes each.
        sha: Bytes,
        der: Bytes,
    },
    /// Read from a snapshot file on demand, anchors verified before first use.
    Snap(Box<Snap>),
}

/// The data of a store. Lives inside [`CaNames`] so that `ca_names()` can hand out a
/// reference without a second copy; [`TrustStore`] reaches it through there.
pub(crate) struct Core {
    pub(crate) src: Src,
    pub(crate) lay: Layout,
    pub(crate) off: Offsets,
}

#[inline]
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Which table a probe searches, with the key sought.
#[derive(Clone, Copy)]
enum Key<'k> {
    Subject(&'k [u8]),
    Ski(&'k [u8]),
    Sha(&'k [u8; 32]),
}

impl Core {
    pub(crate) fn snap(&self) -> Option<&Snap> {
        match &self.src {
            Src::Snap(s) => Some(s),
            Src::Mem { .. } => None,
        }
    }

    /// The u32 at `at` in the index part.
    #[inline]
    fn word(&self, at: usize) -> Option<u32> {
        match &self.src {
            Src::Mem { tables, .. } => rd_u32(tables.as_slice(), at),
            Src::Snap(s) => s.pages.u32_at(at),
        }
    }

    pub(crate) fn rec(&self, i: u32) -> Option<Rec> {
        if i >= self.lay.n {
            return None;
        }
        let o = i as usize * REC_LEN;
        match &self.src {
            Src::Mem { recs, .. } => Rec::read(recs.as_slice().get(o..o + REC_LEN)?),
            Src::Snap(s) => {
                let mut b = [0u8; REC_LEN];
                s.pages.read(self.off.recs + o, &mut b)?;
                Rec::read(&b)
            }
        }
    }

    /// The recorded fingerprint of anchor `i` (a snapshot's from its checked pages,
    /// without reading the anchor's DER).
    pub(crate) fn sha(&self, i: u32) -> Option<[u8; 32]> {
        if i >= self.lay.n {
            return None;
        }
        let o = i as usize * 32;
        match &self.src {
            Src::Mem { sha, .. } => sha.as_slice().get(o..o + 32)?.try_into().ok(),
            Src::Snap(s) => {
                let mut b = [0u8; 32];
                s.pages.read(self.off.sha + o, &mut b)?;
                Some(b)
            }
        }
    }

    /// A built store's anchor (built stores are never damaged).
    fn mem_anchor(&self, i: u32) -> Option<Anchor<'_>> {
        let Src::Mem { der, sha, .. } = &self.src else {
            return None;
        };
        let r = self.rec(i)?;
        let der = der
            .as_slice()
            .get(r.der_off as usize..(r.der_off as usize).checked_add(r.der_len as usize)?)?;
        let so = i as usize * 32;
        let sha256: &[u8; 32] = sha.as_slice().get(so..so + 32)?.try_into().ok()?;
        view(der, &r, sha256, i)
    }

    /// The anchor; a snapshot's is read and verified on first use. `None` if it fails.
    pub(crate) fn anchor(&self, i: u32) -> Option<Anchor<'_>> {
        match &self.src {
            Src::Mem { .. } => self.mem_anchor(i),
            Src::Snap(s) => {
                if i >= self.lay.n {
                    return None;
                }
                match s.verdict(&self.off, i)? {
                    Verdict::Intact(e) => view(&e.der, &e.rec, &e.sha, i),
                    Verdict::Damaged(_) => None,
                }
            }
        }
    }

    /// Why anchor `i` is not returned by [`Core::anchor`], if it is not (checks it; a
    /// snapshot anchor found intact here is not kept).
    pub(crate) fn damage(&self, i: u32) -> Option<AnchorDamage> {
        match &self.src {
            Src::Mem { .. } => None,
            Src::Snap(s) if i < self.lay.n => s.check(&self.off, i),
            Src::Snap(_) => None,
        }
    }

    /// Snapshot anchors found damaged so far (at a check or at first use); 0 for a
    /// built store.
    pub(crate) fn damaged_seen(&self) -> usize {
        self.snap().map_or(0, |s| s.damaged.load(Ordering::Relaxed))
    }

    /// Is there an anchor with this fingerprint? Compares recorded fingerprints only: a
    /// snapshot store reads no DER for it (an anchor already found damaged does not count).
    pub(crate) fn has_fingerprint(&self, sha256: &[u8; 32]) -> bool {
        match self.probe(Key::Sha(sha256), hash_sha(sha256)) {
            None => false,
            Some(i) => !matches!(
                self.snap().and_then(|s| s.verdicts.get(i as usize)),
                Some(Verdict::Damaged(_))
            ),
        }
    }

    /// The recorded fingerprints of the anchors not found damaged, in store order.
    pub(crate) fn fingerprints(&self) -> impl Iterator<Item = [u8; 32]> + '_ {
        (0..self.lay.n).filter_map(move |i| {
            if let Some(Verdict::Damaged(_)) = self.snap().and_then(|s| s.verdicts.get(i as usize))
            {
                return None;
            }
            self.sha(i)
        })
    }

    /// Linear probing for `key`. A built store compares the key with each anchor it
    /// reaches; a snapshot store first compares the slot's tag (subject and SKI tables) or
    /// recorded fingerprint, so it reads (and verifies) only anchors that match.
    fn probe(&self, key: Key<'_>, h: u64) -> Option<u32> {
        let (tab, cap) = match key {
            Key::Subject(_) => (self.off.subj_tab, self.lay.subj_cap),
            Key::Ski(_) => (self.off.ski_tab, self.lay.ski_cap),
            Key::Sha(_) => (self.off.sha_tab, self.lay.sha_cap),
        };
        if cap == 0 {
            return None;
        }
        let mask = cap as usize - 1;
        let tag = (h >> 32) as u32;
        let mut s = slot_of(h, cap as usize);
        for _ in 0..cap {
            let v = self.word(tab + s * 4)?;
            if v == 0 {
                return None;
            }
            let i = v - 1;
            let found = match (&self.src, key) {
                (Src::Mem { .. }, _) => self.mem_anchor(i).is_some_and(|a| match key {
                    Key::Subject(k) => a.subject == k,
                    Key::Ski(k) => a.key_id == Some(k),
                    Key::Sha(k) => a.sha256 == k,
                }),
                (Src::Snap(_), Key::Sha(k)) => self.sha(i).as_ref() == Some(k),
                (Src::Snap(sn), Key::Subject(k)) => {
                    sn.pages.u32_at(sn.parts.subj_tag + s * 4) == Some(tag)
                        && self.anchor(i).is_some_and(|a| a.subject == k)
                }
                (Src::Snap(sn), Key::Ski(k)) => {
                    sn.pages.u32_at(sn.parts.ski_tag + s * 4) == Some(tag)
                        && self.anchor(i).is_some_and(|a| a.key_id == Some(k))
                }
            };
            if found {
                return Some(i);
            }
            s = (s + 1) & mask;
        }
        None
    }

    fn next(&self, chain: usize, i: u32) -> u32 {
        self.word(chain + i as usize * 4).unwrap_or(0)
    }

    pub(crate) fn name_anchor(&self, j: u32) -> Option<u32> {
        self.word(self.off.names + j as usize * 4)
    }

    /// Anchors whose notAfter is before `now`: a built store scans its records, a
    /// snapshot bisects its sorted expiry list (a few pages).
    fn count_expired(&self, now: i64) -> usize {
        match &self.src {
            Src::Mem { .. } => (0..self.lay.n)
                .filter_map(|i| self.rec(i))
                .filter(|r| r.not_after < now)
                .count(),
            Src::Snap(s) => {
                let (mut lo, mut hi) = (0usize, self.lay.n as usize);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match s.pages.i64_at(s.parts.expiry + mid * 8) {
                        Some(t) if t < now => lo = mid + 1,
                        Some(_) => hi = mid,
                        // Unreadable now: count what is known.
                        None => break,
                    }
                }
                lo
            }
        }
    }

    fn der_bytes(&self) -> usize {
        match &self.src {
            Src::Mem { der, .. } => der.as_slice().len(),
            Src::Snap(s) => s.der_len as usize,
        }
    }

    fn memory(&self) -> usize {
        match &self.src {
            Src::Mem {
                tables,
                recs,
                sha,
                der,
            } => tables.allocated() + recs.allocated() + sha.allocated() + der.allocated(),
            Src::Snap(s) => s.memory(),
        }
    }
}

pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

pub(crate) fn hash_sha(s: &[u8; 32]) -> u64 {
    u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
}

/// One trust anchor: views into the store's memory.
#[derive(Clone, Copy, Debug)]
pub struct Anchor<'a> {
    der: &'a [u8],
    subject: &'a [u8],
    key_id: Option<&'a [u8]>,
    sha256: &'a [u8; 32],
    not_before: i64,
    not_after: i64,
    index: u32,
}

impl<'a> Anchor<'a> {
    /// The whole certificate DER.
    pub fn der(&self) -> &'a [u8] {
        self.der
    }
    /// Raw subject Name DER, with its SEQUENCE header.
    pub fn subject(&self) -> &'a [u8] {
        self.subject
    }
    /// subjectKeyIdentifier contents, if the certificate has one.
    pub fn key_id(&self) -> Option<&'a [u8]> {
        self.key_id
    }
    /// SHA-256 of [`Anchor::der`].
    pub fn sha256(&self) -> &'a [u8; 32] {
        self.sha256
    }
    /// notBefore, Unix seconds.
    pub fn not_before(&self) -> i64 {
        self.not_before
    }
    /// notAfter, Unix seconds.
    pub fn not_after(&self) -> i64 {
        self.not_after
    }
    /// Position in the store (insertion order), stable for this store.
    pub fn index(&self) -> u32 {
        self.index
    }
    /// A pinned certificate: a self-issued end-entity certificate (not a CA) given as a
    /// trust source. It is trusted for exactly itself, never as an issuer. Parses the
    /// DER (for listings, not for the verification hot path).
    pub fn is_pinned(&self) -> bool {
        der::parse_cert(self.der).is_ok_and(|f| !f.is_ca)
    }
}

/// The distinct subject names of a store, for a TLS CertificateRequest.
///
/// (This struct also holds the store's data, so `TrustStore::ca_names` is free.)
pub struct CaNames {
    pub(crate) core: Core,
    /// For a snapshot store: (count, encoded length) of the names that pass their anchor's
    /// integrity check, computed on first use. The header's figures are not trusted for
    /// what is sent (a corrupted anchor's name is never sent, so it must not be counted).
    pub(crate) checked: std::sync::OnceLock<(usize, usize)>,
}

impl CaNames {
    /// Each distinct subject DN once (DER with outer SEQUENCE), in first-seen order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let c = &self.core;
        (0..c.lay.m).filter_map(move |j| c.anchor(c.name_anchor(j)?).map(|a| a.subject))
    }
    /// Number of distinct subjects (exactly as many as [`CaNames::iter`] yields).
    pub fn len(&self) -> usize {
        self.counts().0
    }
    /// No subject at all (an empty store).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes these names take in a TLS CertificateRequest: sum of (2 + dn.len()) over
    /// what [`CaNames::iter`] yields. TLS caps the whole list at 65,535 bytes; see
    /// [`CaNames::fits_tls`].
    pub fn encoded_len(&self) -> usize {
        self.counts().1
    }
    /// Built stores know their figures; a snapshot store counts what passes the per-anchor
    /// checks once (this verifies the names' anchors, so it is not done at open).
    fn counts(&self) -> (usize, usize) {
        if self.core.snap().is_none() {
            return (self.core.lay.m as usize, self.core.lay.encoded_len as usize);
        }
        *self.checked.get_or_init(|| {
            self.iter()
                .fold((0, 0), |(n, bytes), dn| (n + 1, bytes + 2 + dn.len()))
        })
    }
    /// Whether the list fits the 16-bit length of `certificate_authorities`.
    pub fn fits_tls(&self) -> bool {
        self.encoded_len() <= 65535
    }
}

/// An immutable trust store: anchors, indexes and the CA-name list. Send + Sync; share it
/// as `Arc<TrustStore>`. Built in memory ([`crate::StoreBuilder`]) or read from a
/// snapshot ([`TrustStore::open_snapshot`]); the API is the same.
pub struct TrustStore {
    pub(crate) generation: u64,
    pub(crate) names: CaNames,
    pub(crate) snapshot: Option<Box<SnapshotMeta>>,
}

/// Iterator over anchors sharing a subject or key identifier (insertion order).
struct ChainIter<'a> {
    core: &'a Core,
    chain: usize,
    next: u32,
    want: &'a [u8],
    by_ski: bool,
    steps: u32,
}

impl<'a> Iterator for ChainIter<'a> {
    type Item = Anchor<'a>;
    fn next(&mut self) -> Option<Anchor<'a>> {
        while self.next != 0 && self.steps < self.core.lay.n {
            self.steps += 1;
            let i = self.next - 1;
            self.next = self.core.next(self.chain, i);
            if let Some(a) = self.core.anchor(i) {
                let key = if self.by_ski {
                    a.key_id
                } else {
                    Some(a.subject)
                };
                if key == Some(self.want) {
                    return Some(a);
                }
            }
        }
        None
    }
}

impl TrustStore {
    pub(crate) fn core(&self) -> &Core {
        &self.names.core
    }
    /// Generation number: 1 for a fresh load, +1 for each reload by a [`crate::StoreHandle`].
    pub fn generation(&self) -> u64 {
        self.generation
    }
    pub(crate) fn set_generation(&mut self, g: u64) {
        self.generation = g;
    }
    /// Number of anchors (unique certificates). For a store read from a snapshot this is
    /// the count recorded in the file: an anchor that fails its integrity check is still
    /// counted but never returned (see [`TrustStore::verify_all`]).
    pub fn len(&self) -> usize {
        self.core().lay.n as usize
    }
    /// No anchor at all.
    pub fn is_empty(&self) -> bool {
        self.core().lay.n == 0
    }
    /// Every anchor in insertion order (snapshot stores skip anchors failing their check).
    pub fn anchors(&self) -> impl Iterator<Item = Anchor<'_>> + '_ {
        let c = self.core();
        (0..c.lay.n).filter_map(move |i| c.anchor(i))
    }
    /// One anchor by position.
    pub fn get(&self, index: u32) -> Option<Anchor<'_>> {
        self.core().anchor(index)
    }
    /// Every anchor whose subject is exactly `subject` (raw Name DER with its SEQUENCE
    /// header), in insertion order.
    pub fn by_subject<'a>(&'a self, subject: &[u8]) -> impl Iterator<Item = Anchor<'a>> + 'a {
        let c = self.core();
        let head = c.probe(Key::Subject(subject), hash_bytes(subject));
        let (next, want) = match head.and_then(|h| c.anchor(h).map(|a| (h + 1, a.subject))) {
            Some(x) => x,
            None => (0, &[][..]),
        };
        ChainIter {
            core: c,
            chain: c.off.subj_next,
            next,
            want,
            by_ski: false,
            steps: 0,
        }
    }
    /// Every anchor whose subjectKeyIdentifier is `key_id`.
    pub fn by_key_id<'a>(&'a self, key_id: &[u8]) -> impl Iterator<Item = Anchor<'a>> + 'a {
        let c = self.core();
        let head = c.probe(Key::Ski(key_id), hash_bytes(key_id));
        let (next, want) =
            match head.and_then(|h| c.anchor(h).and_then(|a| Some((h + 1, a.key_id?)))) {
                Some(x) => x,
                None => (0, &[][..]),
            };
        ChainIter {
            core: c,
            chain: c.off.ski_next,
            next,
            want,
            by_ski: true,
            steps: 0,
        }
    }
    /// The anchor with this SHA-256 fingerprint.
    pub fn by_fingerprint(&self, sha256: &[u8; 32]) -> Option<Anchor<'_>> {
        let c = self.core();
        let i = c.probe(Key::Sha(sha256), hash_sha(sha256))?;
        c.anchor(i)
    }
    /// The DN list a server sends in CertificateRequest (certificate_authorities).
    pub fn ca_names(&self) -> &CaNames {
        &self.names
    }
    /// Bytes of certificate DER this store holds (for a snapshot store: in its file).
    pub fn der_bytes(&self) -> usize {
        self.core().der_bytes()
    }
    /// Bytes this store occupies: DER arena (its allocated capacity, which may exceed the
    /// DER it holds), records, fingerprints, indexes (for a snapshot store: the page sums,
    /// the pages and the anchors read so far, and their slots).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.core().memory()
    }
    /// Whether this store was read from a snapshot file.
    pub fn is_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }
    /// Number of anchors at or past their notAfter at `now` (Unix seconds).
    pub fn count_expired(&self, now: i64) -> usize {
        self.core().count_expired(now)
    }
}

pub(crate) fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built store hands its records over without copying on little-endian hosts
    /// (builder.rs `build`): their memory must be exactly the stored form.
    #[test]
    fn rec_memory_is_its_stored_form_on_little_endian() {
        let r = Rec {
            der_off: 0x0102_0304,
            der_len: 0x1112_1314,
            subj_off: 0x2122_2324,
            subj_len: 0x3132_3334,
            ski_off: NO_SKI,
            ski_len: 0x5152_5354,
            not_before: -0x0102_0304_0506_0708,
            not_after: 0x7172_7374_7576_7778,
        };
        assert_eq!(size_of::<Rec>(), REC_LEN);
        if cfg!(target_endian = "little") {
            assert_eq!(bytemuck::bytes_of(&r), &r.to_bytes()[..]);
        }
        assert_eq!(Rec::read(&r.to_bytes()), Some(r));
    }
}
