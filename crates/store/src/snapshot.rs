//! Snapshot files: a store compiled to one file that a process opens in microseconds and
//! reads as it uses it.
//!
//! # Format (version 2, little-endian)
//!
//! ```text
//! 0    magic "TLSKSNAP"        8
//! 8    version u32 = 2          header_len u32 = 128
//! 16   n u32  m u32  subj_cap u32  ski_cap u32  sha_cap u32  page_shift u32 (10)
//! 40   encoded_len u64         CA-name list size in a CertificateRequest
//! 48   tables_off u64  tables_len u64     store tables (layout in store.rs), in pages
//! 64   sources_off u64 sources_len u64    the sources it was built from
//! 80   der_off u64     der_len u64        DER arena
//! 96   created u64 (Unix s)     pages_xxh3 u64 (xxh3 of the page sums)
//! 112  sources_xxh3 u64                   header_xxh3 u64 (bytes 0..120)
//! 128  page sums: one xxh3 u64 per 1,024-byte page of the tables section
//! ```
//! followed by the tables (at `tables_off` = 128 + 8 × pages), the sources and the DER
//! arena, in that order, ending exactly at the end of the file. The tables section is the
//! store's index, records and fingerprints (store.rs) and, for snapshots only, the hash
//! tags of the subject and SKI tables and the sorted notAfter list (`SnapParts`).
//!
//! # Reading: what is read and checked when
//!
//! The file is never mapped and never read whole: opening reads the header and the page
//! sums (8 bytes per 1 KiB of tables: 92 KB at 100,000 anchors) with positioned reads, so
//! it costs the same at 100 anchors as at 100,000 (tested by counting the bytes read).
//! * **at open**: magic, version, the header's xxh3, that every section lies inside the
//!   file and the file ends where the header says (truncation or extension is rejected),
//!   the table layout, and the xxh3 of the page sums. Any failure rejects the whole file
//!   with a [`SnapshotError`].
//! * **a page of the tables**, the first time a lookup needs it: read (`pread`) and
//!   compared with its sum; kept once it matches. A page that cannot be read or does not
//!   match is not used (the lookup misses) and not kept.
//! * **an anchor, before its first use**: its record and fingerprint (from checked pages)
//!   and its DER (one `pread`); the DER is hashed with SHA-256 and compared with the
//!   fingerprint, and re-parsed and compared with its record (subject, SKI, validity, CA
//!   flag). An intact anchor is kept (memory grows with the anchors used); the verdict on a
//!   damaged one is kept, and it is never returned by any lookup or iterator;
//!   [`TrustStore::verify_all`] reports it.
//! * **stale sources**: [`TrustStore::stale_sources`] checks the recorded sources' size
//!   and mtime (and the sources section's own xxh3); `load` reports it, opening does not
//!   (a `stat` per source file would break the time budget for 100,000-file directories).
//!
//! Lookups compare the key with the anchor they reach (subject, SKI, fingerprint), so even
//! a damaged index could only cause a miss, never a wrong anchor.
//!
//! Snapshots are written to a temporary file in the target directory and renamed over the
//! target (tlskit-io's writer), so a reader never sees a half-written file, and a store
//! keeps reading the file it opened (its handle), not a newer one renamed over it. A file
//! truncated or rewritten in place under a store cannot crash it or change what it
//! returns: anchors and pages already checked are kept in memory, and anything read
//! afterwards fails its read or its checksum and is treated as missing or damaged; a
//! reload reads the file again and, if it is damaged, keeps the store it has.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::{AnchorDamage, IssueKind, LoadIssue, SnapshotError, StoreError};
use crate::origin::{SnapshotMeta, SourceRecord};
use crate::paged::{Paged, SnapFile, PAGE, PAGE_SHIFT};
use crate::store::{hash_bytes, CaNames, Core, Layout, Snap, SnapParts, Src, TrustStore};

/// First 8 bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"TLSKSNAP";
/// The format version this code reads and writes.
pub const VERSION: u32 = 2;
const HEADER_LEN: usize = 128;
/// Largest snapshot accepted: 2 GiB (about 3.6 million anchors).
pub const MAX_SNAPSHOT_BYTES: u64 = 2 << 30;

/// Does the file at `path` start with the snapshot magic?
pub fn has_magic(path: &Path) -> bool {
    // Only regular files, checked on the opened handle (opened non-blocking): a FIFO
    // would block until a writer comes, and a device is never a snapshot.
    let mut m = [0u8; 8];
    tlskit_io::open_regular(path)
        .is_ok_and(|(mut f, _)| f.read_exact(&mut m).is_ok() && &m == MAGIC)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    // Callers pass offsets inside the 128-byte header they have checked is present.
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

fn read_fail(e: crate::paged::ReadFail, what: &str) -> SnapshotError {
    match e {
        crate::paged::ReadFail::Io(e) => SnapshotError::io(e.to_string(), e),
        crate::paged::ReadFail::Short => {
            SnapshotError::Truncated(format!("the file ended inside its {what}"))
        }
    }
}

impl TrustStore {
    /// Open a snapshot: read and check its header and page sums (see the module docs).
    /// Tables pages and anchors are read, checked and kept as lookups first need them.
    pub fn open_snapshot(path: &Path) -> Result<TrustStore, SnapshotError> {
        let (file, md) = tlskit_io::open_regular(path).map_err(|e| {
            let reason = match &e.kind {
                tlskit_io::ReadErrorKind::NotRegular(what) => {
                    format!("not a regular file ({what}): refused")
                }
                other => other.to_string(),
            };
            SnapshotError::io(reason, e)
        })?;
        let len = md.len();
        if len > MAX_SNAPSHOT_BYTES {
            return Err(SnapshotError::TooLarge(len));
        }
        let file = SnapFile::new(file);
        if len < HEADER_LEN as u64 {
            if len >= 8 {
                let mut m = [0u8; 8];
                file.read_exact_at(&mut m, 0)
                    .map_err(|e| read_fail(e, "magic"))?;
                if &m != MAGIC {
                    return Err(SnapshotError::BadMagic);
                }
            }
            return Err(SnapshotError::Truncated(format!(
                "{len} bytes, shorter than the {HEADER_LEN}-byte header"
            )));
        }
        let mut h = [0u8; HEADER_LEN];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| read_fail(e, "header"))?;
        if &h[..8] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = u32_at(&h, 8);
        if version != VERSION {
            return Err(SnapshotError::WrongVersion {
                found: version,
                supported: VERSION,
            });
        }
        if xxh3_64(&h[..120]) != u64_at(&h, 120) {
            return Err(SnapshotError::HeaderChecksum);
        }
        if u32_at(&h, 12) as usize != HEADER_LEN || u32_at(&h, 36) != PAGE_SHIFT {
            return Err(SnapshotError::Layout("unknown header length or page size"));
        }
        let lay = Layout {
            n: u32_at(&h, 16),
            m: u32_at(&h, 20),
            subj_cap: u32_at(&h, 24),
            ski_cap: u32_at(&h, 28),
            sha_cap: u32_at(&h, 32),
            encoded_len: u64_at(&h, 40),
        };
        if !lay.sane() {
            return Err(SnapshotError::Layout("table sizes"));
        }
        let off = lay
            .offsets()
            .ok_or(SnapshotError::Layout("table sizes overflow"))?;
        let parts =
            SnapParts::new(&lay, &off).ok_or(SnapshotError::Layout("table sizes overflow"))?;
        let (t_off, t_len) = (u64_at(&h, 48), u64_at(&h, 56));
        let (s_off, s_len) = (u64_at(&h, 64), u64_at(&h, 72));
        let (d_off, d_len) = (u64_at(&h, 80), u64_at(&h, 88));
        let pages = Paged::count(parts.total);
        let sums_len = pages * 8;
        if t_off != (HEADER_LEN + sums_len) as u64 || t_len != parts.total as u64 {
            return Err(SnapshotError::Layout("tables section"));
        }
        let t_end = t_off.saturating_add(t_len);
        if s_off != t_end || d_off != s_off.saturating_add(s_len) || d_len > u32::MAX as u64 {
            return Err(SnapshotError::Layout("section order"));
        }
        let end = d_off.saturating_add(d_len);
        if end != len {
            return Err(SnapshotError::Truncated(format!(
                "header says {end} bytes, file has {len}"
            )));
        }
        // t_off <= len <= 2 GiB, so the sums are at most 2 GiB / 512.
        let mut raw = vec![0u8; sums_len];
        file.read_exact_at(&mut raw, HEADER_LEN as u64)
            .map_err(|e| read_fail(e, "page sums"))?;
        if xxh3_64(&raw) != u64_at(&h, 104) {
            return Err(SnapshotError::TableChecksum);
        }
        let sums: Box<[u64]> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        let paged = Paged::new(file, t_off, parts.total, sums);
        let snap = Snap::new(
            paged,
            parts,
            (d_off, d_len),
            (s_off, s_len, u64_at(&h, 112)),
            lay.n,
        );
        let meta = SnapshotMeta {
            path: path.to_path_buf(),
            created: u64_at(&h, 96),
            sources: Vec::new(),
        };
        Ok(TrustStore {
            generation: 1,
            names: CaNames {
                checked: std::sync::OnceLock::new(),
                core: Core {
                    src: Src::Snap(Box::new(snap)),
                    lay,
                    off,
                },
            },
            snapshot: Some(Box::new(meta)),
        })
    }

    /// Bytes read from the snapshot file so far (0 for a built store): what opening and
    /// each lookup cost in I/O.
    pub fn snapshot_bytes_read(&self) -> u64 {
        self.core().snap().map_or(0, |s| s.pages.file.bytes_read())
    }

    /// Check every anchor now (SHA-256 of its DER and its record). Built stores always
    /// pass. The error names how many failed, the first and why (they are never
    /// returned; [`TrustStore::damaged_anchors`] lists them all).
    pub fn verify_all(&self) -> Result<(), SnapshotError> {
        let bad = self.damaged_anchors();
        match bad.first() {
            None => Ok(()),
            Some(&(first, reason)) => Err(SnapshotError::CorruptAnchors {
                count: bad.len(),
                first,
                reason,
            }),
        }
    }

    /// Check every anchor now, like [`TrustStore::verify_all`], and list those that fail
    /// with why, in store order (empty for a built store). Two threads above 4,096
    /// anchors; each anchor's verdict is kept, so lookups do not check it again.
    pub fn damaged_anchors(&self) -> Vec<(u32, AnchorDamage)> {
        let n = self.core().lay.n;
        if self.core().snap().is_none() {
            return Vec::new();
        }
        let check = |range: std::ops::Range<u32>| -> Vec<(u32, AnchorDamage)> {
            range
                .filter_map(|i| self.core().damage(i).map(|d| (i, d)))
                .collect()
        };
        if n > 4096 {
            let mid = n / 2;
            std::thread::scope(|s| {
                let t = s.spawn(|| check(mid..n));
                let mut a = check(0..mid);
                // A panicked checker proves nothing: count its whole range as failed.
                a.extend(
                    t.join().unwrap_or_else(|_| {
                        (mid..n).map(|i| (i, AnchorDamage::Unreadable)).collect()
                    }),
                );
                a
            })
        } else {
            check(0..n)
        }
    }

    /// Snapshot anchors found damaged so far, by [`TrustStore::damaged_anchors`] or at
    /// their first use by a lookup (0 for a built store): what a server reports in its
    /// metrics without checking every anchor itself.
    pub fn damaged_seen(&self) -> usize {
        self.core().damaged_seen()
    }

    /// For a snapshot: its path and when it was built (Unix seconds).
    pub fn snapshot_info(&self) -> Option<(&Path, u64)> {
        self.snapshot
            .as_ref()
            .map(|m| (m.path.as_path(), m.created))
    }

    /// The sources recorded in this snapshot (empty for built stores).
    pub fn snapshot_sources(&self) -> Result<Vec<SourceRecord>, SnapshotError> {
        let Some(s) = self.core().snap() else {
            return Ok(Vec::new());
        };
        let (o, l, sum) = s.sources;
        // Within the file (checked at open), so at most MAX_SNAPSHOT_BYTES.
        let mut b = vec![0u8; usize::try_from(l).map_err(|_| SnapshotError::TooLarge(l))?];
        s.pages
            .file
            .read_exact_at(&mut b, o)
            .map_err(|e| read_fail(e, "sources section"))?;
        if xxh3_64(&b) != sum {
            return Err(SnapshotError::TableChecksum);
        }
        SourceRecord::read_all(&b).ok_or(SnapshotError::Layout("sources section"))
    }

    /// Issues for each recorded source that changed, vanished or appeared since the
    /// snapshot was built (empty for built stores).
    pub fn stale_sources(&self) -> Vec<LoadIssue> {
        let Some(m) = &self.snapshot else {
            return Vec::new();
        };
        let recs = match self.snapshot_sources() {
            Ok(r) => r,
            Err(e) => return vec![LoadIssue::new(&m.path, IssueKind::Snapshot(e))],
        };
        let mut out = Vec::new();
        for r in recs {
            let why = match fs::metadata(&r.path) {
                Err(_) => Some("was removed"),
                Ok(md) if md.mtime() != r.mtime_s || md.mtime_nsec() != r.mtime_ns => {
                    Some("changed")
                }
                Ok(md) if !r.is_dir && md.len() != r.size => Some("changed size"),
                Ok(_) => None,
            };
            if let Some(why) = why {
                out.push(LoadIssue::new(
                    &m.path,
                    IssueKind::Stale(format!(
                        "{} {why} since the snapshot was built",
                        r.path.display()
                    )),
                ));
            }
        }
        out
    }

    /// Write this built store as a snapshot at `out` (atomically: temp file + rename),
    /// recording `sources` for staleness checks. [`TrustStore::write_snapshot`] (source.rs)
    /// rebuilds a snapshot store in memory first; here one is refused.
    pub(crate) fn write_built(
        &self,
        out: &Path,
        sources: &[SourceRecord],
    ) -> Result<(), StoreError> {
        let c = self.core();
        let Src::Mem {
            tables,
            recs,
            sha,
            der,
        } = &c.src
        else {
            return Err(
                SnapshotError::Layout("a snapshot store is written after a rebuild").into(),
            );
        };
        let (index, recs, sha, der) = (
            tables.as_slice(),
            recs.as_slice(),
            sha.as_slice(),
            der.as_slice(),
        );
        let lay = c.lay;
        let parts =
            SnapParts::new(&lay, &c.off).ok_or(SnapshotError::Layout("table sizes overflow"))?;
        // The snapshot-only parts: each table slot's tag, and the sorted notAfter list.
        let mut extra = vec![0u8; parts.total - c.off.total];
        let tag_of = |key: Option<&[u8]>| key.map_or(0, |k| (hash_bytes(k) >> 32) as u32);
        for (tab, cap, at, by_ski) in [
            (c.off.subj_tab, lay.subj_cap, parts.subj_tag, false),
            (c.off.ski_tab, lay.ski_cap, parts.ski_tag, true),
        ] {
            for s in 0..cap as usize {
                let v = index
                    .get(tab + s * 4..tab + s * 4 + 4)
                    .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                let tag = match v.checked_sub(1).and_then(|i| c.anchor(i)) {
                    Some(a) if by_ski => tag_of(a.key_id()),
                    Some(a) => tag_of(Some(a.subject())),
                    None => 0,
                };
                let o = at - c.off.total + s * 4;
                extra[o..o + 4].copy_from_slice(&tag.to_le_bytes());
            }
        }
        let mut expiry: Vec<i64> = (0..lay.n)
            .filter_map(|i| c.rec(i))
            .map(|r| r.not_after)
            .collect();
        expiry.sort_unstable();
        for (k, t) in expiry.iter().enumerate() {
            let o = parts.expiry - c.off.total + k * 8;
            extra[o..o + 8].copy_from_slice(&t.to_le_bytes());
        }
        // Page sums over the tables section as written: index, records, fingerprints, extra.
        let mut tables_all = Vec::with_capacity(parts.total);
        tables_all.extend_from_slice(index);
        tables_all.extend_from_slice(recs);
        tables_all.extend_from_slice(sha);
        tables_all.extend_from_slice(&extra);
        debug_assert_eq!(tables_all.len(), parts.total);
        let mut sums = Vec::with_capacity(Paged::count(parts.total) * 8);
        for page in tables_all.chunks(PAGE) {
            sums.extend_from_slice(&xxh3_64(page).to_le_bytes());
        }
        let mut src = Vec::new();
        src.extend_from_slice(&(sources.len() as u32).to_le_bytes());
        for s in sources {
            s.write(&mut src);
        }
        let t_off = (HEADER_LEN + sums.len()) as u64;
        let tables_len = tables_all.len() as u64;
        let s_off = t_off + tables_len;
        let d_off = s_off + src.len() as u64;
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        for v in [
            VERSION,
            HEADER_LEN as u32,
            lay.n,
            lay.m,
            lay.subj_cap,
            lay.ski_cap,
            lay.sha_cap,
            PAGE_SHIFT,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for v in [
            lay.encoded_len,
            t_off,
            tables_len,
            s_off,
            src.len() as u64,
            d_off,
            der.len() as u64,
            created,
            xxh3_64(&sums),
            xxh3_64(&src),
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let hx = xxh3_64(&h);
        h.extend_from_slice(&hx.to_le_bytes());
        debug_assert_eq!(h.len(), HEADER_LEN);
        atomic_write(out, &[&h, &sums, &tables_all, &src, der])
    }
}

/// Write `parts` to `path` atomically: a temporary file in the same directory, fsync,
/// rename over `path`, fsync the directory (tlskit-io's [`tlskit_io::replace`]). The file
/// is never written in place.
pub fn atomic_write(path: &Path, parts: &[&[u8]]) -> Result<(), StoreError> {
    tlskit_io::replace(path, parts, false).map_err(|source| StoreError::Write {
        path: path.to_path_buf(),
        source,
    })
}
