//! [`StoreBuilder`]: incremental, linear-time construction of a [`TrustStore`].
//!
//! Each added certificate costs O(its bytes) + O(1) expected: it is parsed once, hashed
//! once, and inserted into three growing hash tables (amortised O(1)); the CA-name list and
//! its encoded size are extended in place. Nothing walks the anchors already added, so a
//! long sequence of one-file `add_source` calls stays linear (the "40-second pattern").

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::arena::{Arena, Buf, LARGE_STORE};
use crate::error::{IssueKind, LoadIssue};
use crate::origin::SourceRecord;
use crate::store::{
    hash_bytes, hash_sha, slot_of, CaNames, Core, Layout, Rec, Src, TrustStore, NO_SKI,
};
use tlskit_x509::der;

/// Result of adding one certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Added {
    /// A new anchor.
    New,
    /// Same SHA-256 as an anchor already in the builder: not added again.
    Duplicate,
}

/// Open-addressing table of anchor indices, power-of-two capacity, linear probing.
///
/// Each builder slot is `(hash >> 32) << 32 | (index + 1)` (0 = empty): the high half of
/// the hash both picks the home slot ([`slot_of`]) and serves as a tag, so probing compares
/// keys only on a tag match and growing never recomputes a hash. The built store keeps
/// just the low 32 bits (index + 1) and recomputes the hash of the key it looks up.
pub(crate) struct Table {
    slots: Buf<u64>,
    count: u32,
}

impl Table {
    fn new() -> Self {
        Table {
            slots: Buf::zeroed(16, false),
            count: 0,
        }
    }
    pub(crate) fn cap(&self) -> usize {
        self.slots.len()
    }
    fn find(&self, h: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let slots: &[u64] = &self.slots;
        let mask = slots.len() - 1;
        let tag = h >> 32;
        let mut s = slot_of(h, slots.len());
        loop {
            let v = slots[s];
            if v == 0 {
                return None;
            }
            if v >> 32 == tag {
                let i = (v as u32).wrapping_sub(1);
                if eq(i) {
                    return Some(i);
                }
            }
            s = (s + 1) & mask;
        }
    }
    /// The home slot's contents (a cache warm-up; see `StoreBuilder::touch_slots`).
    #[inline]
    fn peek(&self, h: u64) -> u64 {
        self.slots[slot_of(h, self.slots.len())]
    }
    fn put(slots: &mut [u64], v: u64) {
        let mask = slots.len() - 1;
        let mut s = (v >> 32) as usize & mask;
        while slots[s] != 0 {
            s = (s + 1) & mask;
        }
        slots[s] = v;
    }
    /// Insert an index known to be absent; doubles at load 3/4.
    fn insert(&mut self, h: u64, idx: u32) {
        if (self.count as usize + 1) * 4 > self.slots.len() * 3 {
            let mut bigger = Buf::zeroed(self.slots.len() * 2, false);
            for &v in self.slots.iter() {
                if v != 0 {
                    Self::put(&mut bigger, v);
                }
            }
            self.slots = bigger;
        }
        Self::put(&mut self.slots, (h >> 32) << 32 | u64::from(idx + 1));
        self.count += 1;
    }
    /// Grow (once) so that `n` entries fit under the 3/4 load limit (`large`: see
    /// [`Buf::reserve_large`]).
    fn reserve(&mut self, n: usize, large: bool) {
        let want = (n * 4 / 3 + 1).next_power_of_two();
        if want > self.slots.len() {
            let mut bigger = Buf::zeroed(want, large);
            for &v in self.slots.iter() {
                if v != 0 {
                    Self::put(&mut bigger, v);
                }
            }
            self.slots = bigger;
        }
    }
    /// The slots as the built store keeps them: index + 1, 0 = empty.
    fn low_words(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.slots.iter().map(|&v| v as u32)
    }
}

/// Incremental builder: linear in bytes, amortised O(1) per added certificate.
pub struct StoreBuilder {
    pub(crate) der: Arena,
    pub(crate) recs: Buf<Rec>,
    pub(crate) sha: Buf<[u8; 32]>,
    subj_next: Buf<u32>,
    ski_next: Buf<u32>,
    /// Last anchor of the group each head starts (valid at heads only).
    subj_tail: Buf<u32>,
    ski_tail: Buf<u32>,
    subj_tab: Table,
    ski_tab: Table,
    sha_tab: Table,
    names: Buf<u32>,
    encoded_len: u64,
    // Bookkeeping for reports (not part of the built store).
    pub(crate) seen_inodes: HashSet<(u64, u64)>,
    pub(crate) files: usize,
    pub(crate) aliases: usize,
    pub(crate) duplicates: usize,
    pub(crate) read_buf: Vec<u8>,
    pub(crate) snapshot_sources: Vec<SourceRecord>,
    /// Whether to fill `snapshot_sources` (only `build_snapshot` needs them; skipping
    /// them saves about 90 bytes and a `getcwd` per file of a large directory).
    pub(crate) record_sources: bool,
    /// When set, every certificate occurrence is recorded (for lint and prune).
    pub(crate) tracker: Option<Tracker>,
}

/// Per-occurrence bookkeeping for lint and prune.
#[derive(Default)]
pub(crate) struct Tracker {
    pub(crate) files: Vec<PathBuf>,
    /// (file index, anchor index, block number, new?) for every certificate seen.
    pub(crate) occurrences: Vec<(u32, u32, u32, bool)>,
    /// Issues per file, by file index.
    pub(crate) file_issues: Vec<(u32, LoadIssue)>,
    /// Paths that resolved to an inode already read (hash links, symlinks).
    pub(crate) alias_of: Vec<(PathBuf, PathBuf)>,
    pub(crate) inode_path: std::collections::HashMap<(u64, u64), PathBuf>,
}

/// One certificate parsed and fingerprinted, with the hashes of its index keys, ready to
/// be indexed. Computed without builder state, so it can be made on a worker thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared {
    pub(crate) fields: der::CertFields,
    pub(crate) sha: [u8; 32],
    /// `hash_bytes` of the subject and of the SKI (0 without one).
    subj_hash: u64,
    ski_hash: u64,
}

/// Parse and fingerprint one certificate (no builder state: safe on worker threads).
/// Rejects malformed DER, non-CA certificates that are not self-issued (a self-issued
/// one is kept as a pinned certificate) and oversized subjects.
pub(crate) fn prepare(cert: &[u8]) -> Result<Prepared, IssueKind> {
    let f = der::parse_cert(cert).map_err(|e| IssueKind::MalformedDer(e.0))?;
    let (o, l) = (f.subject.0 as usize, f.subject.1 as usize);
    // parse_cert returns ranges inside `cert`; `get` keeps this panic-free regardless.
    let subject = cert.get(o..o + l).unwrap_or(&[]);
    let (io, il) = (f.issuer.0 as usize, f.issuer.1 as usize);
    let issuer = cert.get(io..io + il).unwrap_or(&[]);
    // A self-issued end-entity certificate given as a trust source is pinned: the
    // verifier trusts it for exactly itself, never as an issuer (tlskit-verify).
    if !f.is_ca && subject != issuer {
        return Err(IssueKind::NotCa {
            subject: tlskit_x509::dn::display(subject),
        });
    }
    if f.subject.1 > 65533 {
        return Err(IssueKind::SubjectTooLarge(f.subject.1 as usize));
    }
    let ski_hash = f.ski.map_or(0, |(o, l)| {
        hash_bytes(cert.get(o as usize..(o + l) as usize).unwrap_or(&[]))
    });
    Ok(Prepared {
        fields: f,
        sha: sha2::Sha256::digest(cert).into(),
        subj_hash: hash_bytes(subject),
        ski_hash,
    })
}

impl Default for StoreBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl StoreBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        StoreBuilder {
            der: Arena::default(),
            recs: Buf::new(),
            sha: Buf::new(),
            subj_next: Buf::new(),
            ski_next: Buf::new(),
            subj_tail: Buf::new(),
            ski_tail: Buf::new(),
            subj_tab: Table::new(),
            ski_tab: Table::new(),
            sha_tab: Table::new(),
            names: Buf::new(),
            encoded_len: 0,
            seen_inodes: HashSet::new(),
            files: 0,
            aliases: 0,
            duplicates: 0,
            read_buf: Vec::new(),
            snapshot_sources: Vec::new(),
            record_sources: false,
            tracker: None,
        }
    }

    /// Pre-size for about `anchors` certificates of `der_bytes` total. A large store
    /// (`der_bytes` of at least 8 MiB) gets its arrays in huge pages (see crate::arena).
    pub fn reserve(&mut self, anchors: usize, der_bytes: usize) {
        let total = self.recs.len() + anchors;
        let large = der_bytes >= LARGE_STORE;
        self.sha_tab.reserve(total, large);
        self.subj_tab.reserve(self.names.len() + anchors, large);
        self.ski_tab.reserve(total, large);
        fn more<T: bytemuck::Pod>(b: &mut Buf<T>, n: usize, large: bool) {
            if large {
                b.reserve_large(n);
            } else {
                b.reserve(n);
            }
        }
        more(&mut self.der, der_bytes, large);
        more(&mut self.recs, anchors, large);
        more(&mut self.sha, anchors, large);
        more(&mut self.subj_next, anchors, large);
        more(&mut self.ski_next, anchors, large);
        more(&mut self.subj_tail, anchors, large);
        more(&mut self.ski_tail, anchors, large);
        more(&mut self.names, anchors, large);
    }

    pub(crate) fn track(&mut self) {
        self.tracker = Some(Tracker::default());
    }

    /// Anchors added so far.
    pub fn len(&self) -> usize {
        self.recs.len()
    }
    /// No anchor added yet.
    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }
    /// Distinct subjects so far (the CA-name list length).
    pub fn ca_names_len(&self) -> usize {
        self.names.len()
    }
    /// Encoded size of the CA-name list so far (sum of 2 + DN length).
    pub fn ca_names_encoded_len(&self) -> usize {
        self.encoded_len as usize
    }

    /// Add one DER certificate found at `origin`. Duplicates (same SHA-256) are one anchor.
    pub fn add_der(&mut self, der: &[u8], origin: &Path) -> Result<Added, LoadIssue> {
        let start = self.der.len();
        self.der.extend_from_slice(der);
        self.commit_tail(start)
            .map(|(a, _)| a)
            .map_err(|k| LoadIssue::new(origin, k))
    }

    /// The certificate is `self.der[start..]`; index it or roll the arena back.
    /// Returns what happened and the anchor's index.
    pub(crate) fn commit_tail(&mut self, start: usize) -> Result<(Added, u32), IssueKind> {
        let result = prepare(&self.der[start..]).and_then(|p| match self.find_sha(&p.sha) {
            Some(i) => {
                self.duplicates += 1;
                Ok((Added::Duplicate, i))
            }
            None => {
                let len = self.der.len() - start;
                self.insert_new(start, len, &p).map(|i| (Added::New, i))
            }
        });
        if !matches!(result, Ok((Added::New, _))) {
            self.der.truncate(start);
        }
        result
    }

    /// Bring the table slots that indexing these certificates will probe into the cache,
    /// all at once: the loads are independent, so their misses overlap instead of
    /// stalling one insert after another. Only a hint: no state changes.
    pub(crate) fn touch_slots<'a>(&self, prepared: impl Iterator<Item = &'a Prepared>) {
        let mut acc = 0u64;
        for p in prepared {
            acc = acc
                .wrapping_add(self.sha_tab.peek(hash_sha(&p.sha)))
                .wrapping_add(self.subj_tab.peek(p.subj_hash));
            if p.fields.ski.is_some() {
                acc = acc.wrapping_add(self.ski_tab.peek(p.ski_hash));
            }
        }
        std::hint::black_box(acc);
    }

    /// Index the certificate at `self.der[start..start + cert_len]`, prepared by
    /// [`prepare`] and known not to be present (see [`Self::find_sha`]). On error the
    /// caller truncates the arena. Returns the new anchor's index.
    pub(crate) fn insert_new(
        &mut self,
        start: usize,
        cert_len: usize,
        p: &Prepared,
    ) -> Result<u32, IssueKind> {
        let f = &p.fields;
        let (Ok(der_off), Ok(der_len)) = (u32::try_from(start), u32::try_from(cert_len)) else {
            return Err(IssueKind::Unreadable(
                "store full: DER arena exceeds 4 GiB".into(),
            ));
        };
        if der_off.checked_add(der_len).is_none() || self.recs.len() >= (u32::MAX - 1) as usize {
            return Err(IssueKind::Unreadable(
                "store full: DER arena exceeds 4 GiB".into(),
            ));
        }
        let (ski_off, ski_len) = f.ski.unwrap_or((NO_SKI, 0));
        let rec = Rec {
            der_off,
            der_len,
            subj_off: f.subject.0,
            subj_len: f.subject.1,
            ski_off,
            ski_len,
            not_before: f.not_before,
            not_after: f.not_after,
        };
        let idx = self.recs.len() as u32;
        self.recs.push(rec);
        self.sha.push(p.sha);
        self.subj_next.push(0);
        self.ski_next.push(0);
        self.subj_tail.push(idx);
        self.ski_tail.push(idx);

        let (der_arena, recs) = (&self.der, &self.recs);
        let subj_of = |i: u32| {
            let r = &recs[i as usize];
            let s = (r.der_off + r.subj_off) as usize;
            &der_arena[s..s + r.subj_len as usize]
        };
        let ski_of = |i: u32| {
            let r = &recs[i as usize];
            let s = (r.der_off + r.ski_off) as usize;
            &der_arena[s..s + r.ski_len as usize]
        };
        self.sha_tab.insert(hash_sha(&p.sha), idx);

        let subject = subj_of(idx);
        let hs = p.subj_hash;
        match self.subj_tab.find(hs, |i| subj_of(i) == subject) {
            Some(head) => {
                let tail = self.subj_tail[head as usize];
                self.subj_next[tail as usize] = idx + 1;
                self.subj_tail[head as usize] = idx;
            }
            None => {
                self.subj_tab.insert(hs, idx);
                self.names.push(idx);
                self.encoded_len += 2 + subject.len() as u64;
            }
        }
        if ski_off != NO_SKI {
            let key = ski_of(idx);
            let hk = p.ski_hash;
            match self.ski_tab.find(hk, |i| ski_of(i) == key) {
                Some(head) => {
                    let tail = self.ski_tail[head as usize];
                    self.ski_next[tail as usize] = idx + 1;
                    self.ski_tail[head as usize] = idx;
                }
                None => self.ski_tab.insert(hk, idx),
            }
        }
        Ok(idx)
    }

    /// Index of the anchor with this fingerprint, if present.
    pub(crate) fn find_sha(&self, sha: &[u8; 32]) -> Option<u32> {
        self.sha_tab
            .find(hash_sha(sha), |i| &self.sha[i as usize] == sha)
    }

    pub(crate) fn layout(&self) -> Layout {
        Layout {
            n: self.recs.len() as u32,
            m: self.names.len() as u32,
            subj_cap: self.subj_tab.cap() as u32,
            ski_cap: self.ski_tab.cap() as u32,
            sha_cap: self.sha_tab.cap() as u32,
            encoded_len: self.encoded_len,
        }
    }

    /// Serialise the index part (see the layout in store.rs).
    pub(crate) fn index_bytes(&self) -> Arena {
        let lay = self.layout();
        let Some(off) = lay.offsets() else {
            return Arena::default();
        };
        let mut out = Arena::with_capacity(off.index_len);
        out.resize(off.index_len, 0);
        // Filled in place, in layout order (the padding before the records stays zero).
        fn words(buf: &mut [u8], at: &mut usize, v: impl ExactSizeIterator<Item = u32>) {
            let end = *at + v.len() * 4;
            for (dst, x) in buf[*at..end].chunks_exact_mut(4).zip(v) {
                dst.copy_from_slice(&x.to_le_bytes());
            }
            *at = end;
        }
        let buf: &mut [u8] = &mut out;
        let mut at = 0usize;
        words(buf, &mut at, self.subj_tab.low_words());
        words(buf, &mut at, self.ski_tab.low_words());
        words(buf, &mut at, self.sha_tab.low_words());
        words(buf, &mut at, self.subj_next.iter().copied());
        words(buf, &mut at, self.ski_next.iter().copied());
        words(buf, &mut at, self.names.iter().copied());
        debug_assert!(at <= off.index_len && off.index_len - at < 8);
        out
    }

    /// Finish: an immutable store of generation 1 (a [`crate::StoreHandle`] renumbers it).
    pub fn build(self) -> TrustStore {
        let lay = self.layout();
        let tables = self.index_bytes();
        // offsets() only fails on overflow, which the u32 caps on counts rule out.
        let off = lay.offsets().unwrap_or_default();
        let mut der = self.der;
        // A bulk PEM load reserves 3/4 of the text (base64's bound) and typically fills
        // 85-90% of it. Keeping that slack (counted by `memory_bytes`) instead of shrinking
        // lets the allocator hand the same block to the next load (a reload, a benchmark
        // loop) without fresh page faults; a shrunk block is too small for the next
        // reservation. Only a large slack is given back.
        der.trim();
        TrustStore {
            generation: 1,
            names: CaNames {
                checked: std::sync::OnceLock::new(),
                core: Core {
                    src: Src::Mem {
                        tables: tables.into_bytes(),
                        // Records are stored little-endian: on such hosts, their memory.
                        recs: self
                            .recs
                            .into_stored(cfg!(target_endian = "little"), |r, out| {
                                out.copy_from_slice(&r.to_bytes())
                            }),
                        sha: self.sha.into_stored(true, |s, out| out.copy_from_slice(s)),
                        der: der.into_bytes(),
                    },
                    lay,
                    off,
                },
            },
            snapshot: None,
        }
    }
}
