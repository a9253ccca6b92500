//! Where a store came from: the sources a snapshot was built from ([`SourceRecord`],
//! with their encoding in the snapshot's sources section) and the snapshot file a store
//! was read from. The store keeps it; the snapshot module writes and reads it.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One source a snapshot was built from, to detect staleness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRecord {
    /// The source's absolute path.
    pub path: PathBuf,
    /// A directory source (its size is not compared).
    pub is_dir: bool,
    /// The file's size in bytes when the snapshot was built (0 for a directory).
    pub size: u64,
    /// Its modification time: seconds since the Unix epoch.
    pub mtime_s: i64,
    /// Its modification time: the nanoseconds within that second.
    pub mtime_ns: i64,
}

impl SourceRecord {
    pub(crate) fn from_meta(path: &Path, md: &fs::Metadata, is_dir: bool) -> Self {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Self::from_absolute(path, md, is_dir)
    }
    /// [`Self::from_meta`] for a path already made absolute (saves a `getcwd` per file).
    pub(crate) fn from_absolute(path: PathBuf, md: &fs::Metadata, is_dir: bool) -> Self {
        SourceRecord {
            path,
            is_dir,
            size: if is_dir { 0 } else { md.len() },
            mtime_s: md.mtime(),
            mtime_ns: md.mtime_nsec(),
        }
    }
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let p = self.path.as_os_str().as_bytes();
        out.push(u8::from(self.is_dir));
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.mtime_s.to_le_bytes());
        out.extend_from_slice(&self.mtime_ns.to_le_bytes());
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    pub(crate) fn read_all(mut b: &[u8]) -> Option<Vec<SourceRecord>> {
        let mut out = Vec::new();
        let take = |b: &mut &[u8], n: usize| -> Option<Vec<u8>> {
            let (h, t) = (b.get(..n)?, b.get(n..)?);
            *b = t;
            Some(h.to_vec())
        };
        let count = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?);
        for _ in 0..count {
            let is_dir = take(&mut b, 1)?[0] != 0;
            let size = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
            let mtime_s = i64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
            let mtime_ns = i64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
            let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?) as usize;
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(&take(&mut b, len)?));
            out.push(SourceRecord {
                path,
                is_dir,
                size,
                mtime_s,
                mtime_ns,
            });
        }
        Some(out)
    }
}

/// Where a snapshot store came from.
pub(crate) struct SnapshotMeta {
    pub(crate) path: PathBuf,
    pub(crate) created: u64,
    /// Parsed sources (for stores whose sources were read when they were built).
    pub(crate) sources: Vec<SourceRecord>,
}
