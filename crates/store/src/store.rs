//! The trust store: one byte layout shared by stores built in memory and stores read
//! from a snapshot file, so there is a single lookup path.
//!
//! Layout (all integers little-endian): an index buffer, the records, the fingerprints and
//! the DER arena (four buffers in memory; one "tables" section of a snapshot file holds the
//! first three back to back, at the offsets [`Layout::offsets`] gives):
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
//! der arena                  the anchors' DER, back to back
//! ```
//!
//! Memory per anchor beyond its DER: 40 (record) + 32 (fingerprint) + 8 (chains) + about
//! 16..32 (three tables at load factor <= 3/4) + 4 per distinct subject.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::arena::Bytes;
use crate::error::AnchorDamage;
use crate::origin::SnapshotMeta;
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
    subj_tab: usize,
    ski_tab: usize,
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

/// Lazy per-anchor integrity state of a snapshot store: two bits per anchor.
pub(crate) struct Checker {
    ok: Vec<AtomicU64>,
    bad: Vec<AtomicU64>,
}

impl Checker {
    pub(crate) fn new(n: u32) -> Self {
        let words = (n as usize).div_ceil(64);
        Checker {
            ok: (0..words).map(|_| AtomicU64::new(0)).collect(),
            bad: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }
    fn bit(v: &[AtomicU64], i: u32) -> bool {
        v.get(i as usize / 64)
            .is_some_and(|w| w.load(Ordering::Acquire) & (1 << (i % 64)) != 0)
    }
    fn set(v: &[AtomicU64], i: u32) {
        if let Some(w) = v.get(i as usize / 64) {
            w.fetch_or(1 << (i % 64), Ordering::AcqRel);
        }
    }
    fn memory(&self) -> usize {
        (self.ok.len() + self.bad.len()) * 8
    }
    /// Anchors found damaged so far.
    fn bad_count(&self) -> usize {
        self.bad
            .iter()
            .map(|w| w.load(Ordering::Acquire).count_ones() as usize)
            .sum()
    }
}

/// Does this anchor's DER hash to its recorded fingerprint, and do the recorded fields
/// match what the DER says? (Used for snapshot anchors before their first use.)
pub(crate) fn anchor_is_intact(a: &Anchor<'_>, rec: &Rec) -> bool {
    anchor_damage(a, rec).is_none()
}

/// What is wrong with this anchor, if anything (see [`anchor_is_intact`]).
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

/// The data of a store. Lives inside [`CaNames`] so that `ca_names()` can hand out a
/// reference without a second copy; [`TrustStore`] reaches it through there.
pub(crate) struct Core {
    /// The index part: hash tables, subject/SKI chains, CA names (`off.index_len` bytes).
    pub(crate) tables: Bytes,
    /// `recs[n]`, REC_LEN bytes each.
    pub(crate) recs: Bytes,
    /// `sha[n]`, 32 bytes each.
    pub(crate) sha: Bytes,
    pub(crate) der: Bytes,
    pub(crate) lay: Layout,
    pub(crate) off: Offsets,
    /// `Some` for stores read from a snapshot: anchors are verified before first use.
    pub(crate) check: Option<Checker>,
}

#[inline]
fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl Core {
    #[inline]
    fn tab(&self) -> &[u8] {
        self.tables.as_slice()
    }

    pub(crate) fn rec(&self, i: u32) -> Option<Rec> {
        if i >= self.lay.n {
            return None;
        }
        let o = i as usize * REC_LEN;
        Rec::read(self.recs.as_slice().get(o..o + REC_LEN)?)
    }

    /// The anchor's fields without the integrity check (used to compare keys while probing).
    fn raw(&self, i: u32) -> Option<(Anchor<'_>, Rec)> {
        let r = self.rec(i)?;
        let der = self
            .der
            .as_slice()
            .get(r.der_off as usize..(r.der_off as usize).checked_add(r.der_len as usize)?)?;
        let subject =
            der.get(r.subj_off as usize..(r.subj_off as usize).checked_add(r.subj_len as usize)?)?;
        let key_id = if r.ski_off == NO_SKI {
            None
        } else {
            Some(
                der.get(r.ski_off as usize..(r.ski_off as usize).checked_add(r.ski_len as usize)?)?,
            )
        };
        let so = i as usize * 32;
        let sha256: &[u8; 32] = self.sha.as_slice().get(so..so + 32)?.try_into().ok()?;
        Some((
            Anchor {
                der,
                subject,
                key_id,
                sha256,
                not_before: r.not_before,
                not_after: r.not_after,
                index: i,
            },
            r,
        ))
    }

    /// The anchor, verified first if this store was read from a snapshot. `None` if it fails the check.
    pub(crate) fn anchor(&self, i: u32) -> Option<Anchor<'_>> {
        let (a, r) = self.raw(i)?;
        match &self.check {
            None => Some(a),
            Some(c) => {
                if Checker::bit(&c.ok, i) {
                    return Some(a);
                }
                if Checker::bit(&c.bad, i) {
                    return None;
                }
                if anchor_is_intact(&a, &r) {
                    Checker::set(&c.ok, i);
                    Some(a)
                } else {
                    Checker::set(&c.bad, i);
                    None
                }
            }
        }
    }

    /// Why anchor `i` is not returned by [`Core::anchor`], if it is not (checks it).
    pub(crate) fn damage(&self, i: u32) -> Option<AnchorDamage> {
        if i >= self.lay.n || self.anchor(i).is_some() {
            return None;
        }
        Some(
            self.raw(i)
                .map_or(Some(AnchorDamage::Unreadable), |(a, r)| {
                    anchor_damage(&a, &r)
                })
                .unwrap_or(AnchorDamage::Record),
        )
    }

    /// Snapshot anchors found damaged so far (at a check or at first use); 0 for a
    /// built store.
    pub(crate) fn damaged_seen(&self) -> usize {
        self.check.as_ref().map_or(0, Checker::bad_count)
    }

    fn probe<'a>(
        &'a self,
        tab: usize,
        cap: u32,
        h: u64,
        eq: impl Fn(&Anchor<'a>) -> bool,
    ) -> Option<u32> {
        if cap == 0 {
            return None;
        }
        let mask = cap as usize - 1;
        let mut s = slot_of(h, cap as usize);
        for _ in 0..cap {
            let v = rd_u32(self.tab(), tab + s * 4)?;
            if v == 0 {
                return None;
            }
            let i = v - 1;
            if let Some((a, _)) = self.raw(i) {
                if eq(&a) {
                    return Some(i);
                }
            }
            s = (s + 1) & mask;
        }
        None
    }

    fn next(&self, chain: usize, i: u32) -> u32 {
        rd_u32(self.tab(), chain + i as usize * 4).unwrap_or(0)
    }

    pub(crate) fn name_anchor(&self, j: u32) -> Option<u32> {
        rd_u32(self.tab(), self.off.names + j as usize * 4)
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
        if self.core.check.is_none() {
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
        let head = c.probe(c.off.subj_tab, c.lay.subj_cap, hash_bytes(subject), |a| {
            a.subject == subject
        });
        let (next, want) = match head.and_then(|h| c.raw(h).map(|(a, _)| (h + 1, a.subject))) {
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
        let head = c.probe(c.off.ski_tab, c.lay.ski_cap, hash_bytes(key_id), |a| {
            a.key_id == Some(key_id)
        });
        let (next, want) =
            match head.and_then(|h| c.raw(h).and_then(|(a, _)| Some((h + 1, a.key_id?)))) {
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
        let i = c.probe(c.off.sha_tab, c.lay.sha_cap, hash_sha(sha256), |a| {
            a.sha256 == sha256
        })?;
        c.anchor(i)
    }
    /// The DN list a server sends in CertificateRequest (certificate_authorities).
    pub fn ca_names(&self) -> &CaNames {
        &self.names
    }
    /// Bytes of certificate DER this store holds.
    pub fn der_bytes(&self) -> usize {
        self.core().der.as_slice().len()
    }
    /// Bytes this store occupies: DER arena (its allocated capacity, which may exceed the
    /// DER it holds), records, fingerprints, indexes, integrity bits (for a snapshot store:
    /// the sections of the file it uses).
    pub fn memory_bytes(&self) -> usize {
        let c = self.core();
        std::mem::size_of::<Self>()
            + c.tables.allocated()
            + c.recs.allocated()
            + c.sha.allocated()
            + c.der.allocated()
            + c.check.as_ref().map_or(0, Checker::memory)
    }
    /// Whether this store was read from a snapshot file.
    pub fn is_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }
    /// Number of anchors at or past their notAfter at `now` (Unix seconds).
    pub fn count_expired(&self, now: i64) -> usize {
        let c = self.core();
        (0..c.lay.n)
            .filter_map(|i| c.rec(i))
            .filter(|r| r.not_after < now)
            .count()
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
