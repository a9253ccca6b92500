//! Snapshot files: a store compiled to one file that a process reads and uses at once.
//!
//! # Format (version 1, little-endian)
//!
//! ```text
//! 0    magic "TLSKSNAP"        8
//! 8    version u32 = 1          header_len u32 = 128
//! 16   n u32  m u32  subj_cap u32  ski_cap u32  sha_cap u32  flags u32 (0)
//! 40   encoded_len u64         CA-name list size in a CertificateRequest
//! 48   tables_off u64  tables_len u64     store tables (layout in store.rs)
//! 64   sources_off u64 sources_len u64    the sources it was built from
//! 80   der_off u64     der_len u64        DER arena
//! 96   created u64 (Unix s)     index_xxh3 u64 (tables' index part)
//! 112  sources_xxh3 u64                   header_xxh3 u64 (bytes 0..120)
//! ```
//! followed by the tables, the sources and the DER arena, in that order, ending exactly at
//! the end of the file.
//!
//! # Integrity: what is checked when
//!
//! Opening reads the whole file into memory (huge-page anonymous memory; never a mapping
//! of the file, see `read_whole`), and must stay far inside a server's start budget at
//! 100,000 anchors, so it does not hash or parse the ~40 MB of DER. Instead:
//! * **at open**: magic, version, the header's xxh3, that every section lies inside the
//!   file and the file ends where the header says (truncation or extension is rejected),
//!   the table layout, and the xxh3 of the index part (hash tables, subject/SKI chains,
//!   CA-name list). Any failure rejects the whole file with a [`SnapshotError`].
//! * **before an anchor's first use**: its DER is hashed with SHA-256 and compared with
//!   its recorded fingerprint, and re-parsed and compared with its record (subject, SKI,
//!   validity, CA flag). The result is kept in a bitset. An anchor that fails is never
//!   returned by any lookup or iterator; [`TrustStore::verify_all`] reports it.
//! * **stale sources**: [`TrustStore::stale_sources`] checks the recorded sources' size
//!   and mtime (and the sources section's own xxh3); `load` reports it, opening does not
//!   (a `stat` per source file would break the time budget for 100,000-file directories).
//!
//! Lookups compare the key with the anchor they reach (subject, SKI, fingerprint), so even
//! a damaged index could only cause a miss, never a wrong anchor.
//!
//! Snapshots are written to a temporary file in the target directory and renamed over the
//! target (tlskit-io's writer), so a reader never sees a half-written file. A process that
//! opened a snapshot holds its own copy: whatever happens to the file afterwards
//! (truncated, rewritten in place, replaced) cannot change or crash it; a reload reads
//! the file again and, if it is damaged, keeps the store it has.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use xxhash_rust::xxh3::xxh3_64;

use crate::arena::{Arena, Bytes};
use crate::error::{AnchorDamage, IssueKind, LoadIssue, SnapshotError, StoreError};
use crate::origin::{SnapshotMeta, SourceRecord};
use crate::store::{CaNames, Checker, Core, Layout, TrustStore};

/// First 8 bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"TLSKSNAP";
/// The format version this code reads and writes.
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 128;
/// Largest snapshot accepted: 2 GiB (about 3.6 million anchors). The file is read into
/// memory, and only after its header has been checked (see `precheck_header`).
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

/// Before reading a whole file: its header must be a snapshot header (magic, version,
/// checksum) that accounts for exactly `len` bytes, so a large file that is not a snapshot
/// (or not this one) costs 128 bytes of reading, not its size in memory. Everything is
/// checked again on the copy read afterwards (the file may change in between).
fn precheck_header(file: &fs::File, len: u64) -> Result<(), SnapshotError> {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; HEADER_LEN];
    file.read_exact_at(&mut h, 0)
        .map_err(|e| SnapshotError::io(e.to_string(), e))?;
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
    let end = u64_at(&h, 80).saturating_add(u64_at(&h, 88));
    if end != len {
        return Err(SnapshotError::Truncated(format!(
            "header says {end} bytes, file has {len}"
        )));
    }
    Ok(())
}

/// Read the whole snapshot (`len` bytes, already checked against
/// [`MAX_SNAPSHOT_BYTES`]) into fresh memory: huge-page anonymous memory from 2 MiB on
/// (the store arena's [`Arena`]), so the copy costs little more than the bytes themselves.
///
/// The store never maps the file: a mapping would let anyone who can write the file
/// (`truncate`, `cp new.snap s.snap`) crash every process using it with SIGBUS, or change
/// anchors under a running verifier. A copy is immune to both, and what it holds is
/// exactly what was checked. A file that shrinks while being read is reported as
/// truncated; one that grows is caught by the header's length check.
fn read_whole(mut file: fs::File, len: u64) -> Result<Bytes, SnapshotError> {
    let len = usize::try_from(len).map_err(|_| SnapshotError::TooLarge(len))?;
    let mut buf = Arena::new();
    buf.reserve_large(len);
    buf.resize(len, 0);
    let mut got = 0;
    while got < len {
        match file.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(SnapshotError::Truncated(format!(
                    "file shrank to {got} bytes while being read (expected {len})"
                )))
            }
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(SnapshotError::io(e.to_string(), e)),
        }
    }
    Ok(buf.into_bytes())
}

impl TrustStore {
    /// Open a snapshot: read it into memory and check the header and index (see the
    /// module docs). Anchors are verified lazily before their first use.
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
        let io = |e: std::io::Error| SnapshotError::io(e.to_string(), e);
        let len = md.len();
        if len > MAX_SNAPSHOT_BYTES {
            return Err(SnapshotError::TooLarge(len));
        }
        if len < HEADER_LEN as u64 {
            if len >= 8 {
                let mut m = [0u8; 8];
                (&file).read_exact(&mut m).map_err(io)?;
                if &m != MAGIC {
                    return Err(SnapshotError::BadMagic);
                }
            }
            return Err(SnapshotError::Truncated(format!(
                "{len} bytes, shorter than the {HEADER_LEN}-byte header"
            )));
        }
        precheck_header(&file, len)?;
        let map = Arc::new(read_whole(file, len)?);
        let h = map
            .as_slice()
            .get(..HEADER_LEN)
            .ok_or(SnapshotError::Truncated("short header".into()))?;
        if &h[..8] != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let version = u32_at(h, 8);
        if version != VERSION {
            return Err(SnapshotError::WrongVersion {
                found: version,
                supported: VERSION,
            });
        }
        if xxh3_64(&h[..120]) != u64_at(h, 120) {
            return Err(SnapshotError::HeaderChecksum);
        }
        if u32_at(h, 12) as usize != HEADER_LEN || u32_at(h, 36) != 0 {
            return Err(SnapshotError::Layout("unknown header length or flags"));
        }
        let lay = Layout {
            n: u32_at(h, 16),
            m: u32_at(h, 20),
            subj_cap: u32_at(h, 24),
            ski_cap: u32_at(h, 28),
            sha_cap: u32_at(h, 32),
            encoded_len: u64_at(h, 40),
        };
        if !lay.sane() {
            return Err(SnapshotError::Layout("table sizes"));
        }
        let off = lay
            .offsets()
            .ok_or(SnapshotError::Layout("table sizes overflow"))?;
        let (t_off, t_len) = (u64_at(h, 48), u64_at(h, 56));
        let (s_off, s_len) = (u64_at(h, 64), u64_at(h, 72));
        let (d_off, d_len) = (u64_at(h, 80), u64_at(h, 88));
        if t_off != HEADER_LEN as u64 || t_len != off.total as u64 {
            return Err(SnapshotError::Layout("tables section"));
        }
        let t_end = t_off + t_len;
        if s_off != t_end || d_off != s_off.saturating_add(s_len) || d_len > u32::MAX as u64 {
            return Err(SnapshotError::Layout("section order"));
        }
        let end = d_off.saturating_add(d_len);
        if end != len {
            return Err(SnapshotError::Truncated(format!(
                "header says {end} bytes, file has {len}"
            )));
        }
        let index = map
            .as_slice()
            .get(t_off as usize..t_off as usize + off.index_len)
            .ok_or(SnapshotError::Layout("index part"))?;
        if xxh3_64(index) != u64_at(h, 104) {
            return Err(SnapshotError::TableChecksum);
        }
        let meta = SnapshotMeta {
            path: path.to_path_buf(),
            file: Arc::clone(&map),
            sources_range: (s_off as usize, s_len as usize),
            sources_xxh3: u64_at(h, 112),
            created: u64_at(h, 96),
            sources: Vec::new(),
        };
        Ok(TrustStore {
            generation: 1,
            names: CaNames {
                checked: std::sync::OnceLock::new(),
                core: Core {
                    tables: Bytes::Shared {
                        all: Arc::clone(&map),
                        start: t_off as usize,
                        len: off.index_len,
                    },
                    // Within the tables section (its length, off.total, was checked).
                    recs: Bytes::Shared {
                        all: Arc::clone(&map),
                        start: t_off as usize + off.recs,
                        len: off.sha - off.recs,
                    },
                    sha: Bytes::Shared {
                        all: Arc::clone(&map),
                        start: t_off as usize + off.sha,
                        len: off.total - off.sha,
                    },
                    der: Bytes::Shared {
                        all: map,
                        start: d_off as usize,
                        len: d_len as usize,
                    },
                    lay,
                    off,
                    check: Some(Checker::new(lay.n)),
                },
            },
            snapshot: Some(Box::new(meta)),
        })
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
        if self.core().check.is_none() {
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
        let Some(m) = &self.snapshot else {
            return Ok(Vec::new());
        };
        let (o, l) = m.sources_range;
        let b = m
            .file
            .as_slice()
            .get(o..o + l)
            .ok_or(SnapshotError::Layout("sources section"))?;
        if xxh3_64(b) != m.sources_xxh3 {
            return Err(SnapshotError::TableChecksum);
        }
        SourceRecord::read_all(b).ok_or(SnapshotError::Layout("sources section"))
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

    /// Write this store as a snapshot at `out` (atomically: temp file + rename), recording
    /// `sources` for staleness checks.
    pub fn write_snapshot(&self, out: &Path, sources: &[SourceRecord]) -> Result<(), StoreError> {
        let c = self.core();
        let (index, recs, sha) = (c.tables.as_slice(), c.recs.as_slice(), c.sha.as_slice());
        let tables_len = (index.len() + recs.len() + sha.len()) as u64;
        let der = c.der.as_slice();
        let mut src = Vec::new();
        src.extend_from_slice(&(sources.len() as u32).to_le_bytes());
        for s in sources {
            s.write(&mut src);
        }
        let t_off = HEADER_LEN as u64;
        let s_off = t_off + tables_len;
        let d_off = s_off + src.len() as u64;
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        for v in [
            VERSION,
            HEADER_LEN as u32,
            c.lay.n,
            c.lay.m,
            c.lay.subj_cap,
            c.lay.ski_cap,
            c.lay.sha_cap,
            0,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for v in [
            c.lay.encoded_len,
            t_off,
            tables_len,
            s_off,
            src.len() as u64,
            d_off,
            der.len() as u64,
            created,
            xxh3_64(index),
            xxh3_64(&src),
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let hx = xxh3_64(&h);
        h.extend_from_slice(&hx.to_le_bytes());
        debug_assert_eq!(h.len(), HEADER_LEN);
        atomic_write(out, &[&h, index, recs, sha, &src, der])
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
