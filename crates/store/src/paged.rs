//! Positioned reads of an open snapshot file (no mapping, no whole-file read).
//!
//! [`Paged`] holds the file handle, and a section of it (the store tables) cut into pages
//! of [`PAGE`] bytes whose xxh3 sums were read at open: a page is read with `pread` the
//! first time it is needed, checked against its sum and kept. [`Slots`] is a grow-only
//! cache of per-item values (a snapshot store's verified anchors), allocated in small
//! groups as items are first used, so memory follows the items used, not the file.
//!
//! A file truncated or rewritten under a reader gives a short read or a checksum mismatch
//! (the caller treats the item as missing or damaged), never a crash: nothing is mapped,
//! and what was checked and kept cannot change.

use std::fs;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use xxhash_rust::xxh3::xxh3_64;

/// log2 of [`PAGE`].
pub(crate) const PAGE_SHIFT: u32 = 10;
/// Bytes per checked page of the tables section (the last page may be shorter).
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;

/// Why a positioned read gave nothing usable.
#[derive(Debug)]
pub(crate) enum ReadFail {
    /// The operating system refused the read.
    Io(std::io::Error),
    /// The file ended first (it was truncated after it was opened).
    Short,
}

/// An open file read only with positioned reads, counting the bytes read.
pub(crate) struct SnapFile {
    file: fs::File,
    read: AtomicU64,
}

impl SnapFile {
    pub(crate) fn new(file: fs::File) -> Self {
        SnapFile {
            file,
            read: AtomicU64::new(0),
        }
    }

    /// Fill `buf` from offset `off`.
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], off: u64) -> Result<(), ReadFail> {
        let mut got = 0;
        while got < buf.len() {
            match self.file.read_at(&mut buf[got..], off + got as u64) {
                Ok(0) => return Err(ReadFail::Short),
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadFail::Io(e)),
            }
        }
        self.read.fetch_add(got as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes read through this handle so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
}

/// One section of a [`SnapFile`] in checked pages, read on demand.
pub(crate) struct Paged {
    pub(crate) file: SnapFile,
    /// File offset of the section.
    base: u64,
    /// Section length in bytes.
    len: usize,
    /// xxh3 of each page, as read (and checked) at open.
    sums: Box<[u64]>,
    pages: Box<[OnceLock<Box<[u8]>>]>,
    /// Bytes of pages held.
    held: AtomicUsize,
}

impl Paged {
    /// `sums` must hold one sum per page of `len` bytes (checked by the caller).
    pub(crate) fn new(file: SnapFile, base: u64, len: usize, sums: Box<[u64]>) -> Self {
        let pages = (0..sums.len()).map(|_| OnceLock::new()).collect();
        Paged {
            file,
            base,
            len,
            sums,
            pages,
            held: AtomicUsize::new(0),
        }
    }

    /// Number of pages a section of `len` bytes has.
    pub(crate) fn count(len: usize) -> usize {
        len.div_ceil(PAGE)
    }

    /// Page `p`, read and checked on first use; `None` if it cannot be read or does not
    /// match its sum (not kept: a later call tries again).
    fn page(&self, p: usize) -> Option<&[u8]> {
        let slot = self.pages.get(p)?;
        if let Some(b) = slot.get() {
            return Some(b);
        }
        let start = p * PAGE;
        let end = (start + PAGE).min(self.len);
        let mut buf = vec![0u8; end.checked_sub(start)?];
        self.file
            .read_exact_at(&mut buf, self.base + start as u64)
            .ok()?;
        if xxh3_64(&buf) != *self.sums.get(p)? {
            return None;
        }
        let n = buf.len();
        if slot.set(buf.into_boxed_slice()).is_ok() {
            self.held.fetch_add(n, Ordering::Relaxed);
        }
        slot.get().map(|b| &b[..])
    }

    /// Copy `out.len()` bytes at section offset `off` (across pages if need be).
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Option<()> {
        let end = off.checked_add(out.len())?;
        if end > self.len {
            return None;
        }
        let mut at = off;
        while at < end {
            let page = self.page(at >> PAGE_SHIFT)?;
            let within = at & (PAGE - 1);
            let take = (PAGE - within).min(end - at);
            out[at - off..at - off + take].copy_from_slice(page.get(within..within + take)?);
            at += take;
        }
        Some(())
    }

    /// The little-endian u32 at section offset `off`.
    #[inline]
    pub(crate) fn u32_at(&self, off: usize) -> Option<u32> {
        let within = off & (PAGE - 1);
        if within + 4 <= PAGE {
            let s = self.page(off >> PAGE_SHIFT)?.get(within..within + 4)?;
            return Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        }
        let mut b = [0u8; 4];
        self.read(off, &mut b)?;
        Some(u32::from_le_bytes(b))
    }

    /// The little-endian i64 at section offset `off`.
    pub(crate) fn i64_at(&self, off: usize) -> Option<i64> {
        let mut b = [0u8; 8];
        self.read(off, &mut b)?;
        Some(i64::from_le_bytes(b))
    }

    /// Bytes of memory held: the page sums, the page slots and the pages read so far.
    pub(crate) fn memory(&self) -> usize {
        self.sums.len() * 8
            + self.pages.len() * size_of::<OnceLock<Box<[u8]>>>()
            + self.held.load(Ordering::Relaxed)
    }
}

/// Items per group of [`Slots`].
const GROUP: usize = 32;

/// One group of [`Slots`]: its items' values, allocated when the first is set.
type Group<T> = OnceLock<Box<[OnceLock<T>]>>;

/// A grow-only cache of one value per item `0..n`, set at most once each. Slots are
/// allocated in groups of 32 when an item of the group is first set, so an unused store
/// costs one slot (24 bytes) per 32 items.
pub(crate) struct Slots<T> {
    n: usize,
    groups: Box<[Group<T>]>,
    made: AtomicUsize,
}

impl<T> Slots<T> {
    pub(crate) fn new(n: usize) -> Self {
        Slots {
            n,
            groups: (0..n.div_ceil(GROUP)).map(|_| OnceLock::new()).collect(),
            made: AtomicUsize::new(0),
        }
    }

    /// Item `i`'s value, if set.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.n {
            return None;
        }
        self.groups.get(i / GROUP)?.get()?.get(i % GROUP)?.get()
    }

    /// Set item `i` (if no other thread did first) and return the value it holds, and
    /// whether that is `v` (false: it was set before).
    pub(crate) fn set(&self, i: usize, v: T) -> Option<(&T, bool)> {
        if i >= self.n {
            return None;
        }
        let g = self.groups.get(i / GROUP)?;
        let group = g.get_or_init(|| {
            self.made.fetch_add(1, Ordering::Relaxed);
            (0..GROUP).map(|_| OnceLock::new()).collect()
        });
        let slot = group.get(i % GROUP)?;
        let fresh = slot.set(v).is_ok();
        slot.get().map(|x| (x, fresh))
    }

    /// Bytes of memory the slots take (not what the values point to).
    pub(crate) fn memory(&self) -> usize {
        self.groups.len() * size_of::<Group<T>>()
            + self.made.load(Ordering::Relaxed) * GROUP * size_of::<OnceLock<T>>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn section(bytes: &[u8]) -> (tempfile::NamedTempFile, Paged) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"HEAD").unwrap();
        f.write_all(bytes).unwrap();
        let sums: Box<[u64]> = bytes.chunks(PAGE).map(xxh3_64).collect();
        let file = SnapFile::new(fs::File::open(f.path()).unwrap());
        let p = Paged::new(file, 4, bytes.len(), sums);
        (f, p)
    }

    #[test]
    fn reads_across_pages_and_only_the_pages_touched() {
        let bytes: Vec<u8> = (0..3 * PAGE + 100).map(|i| (i * 7) as u8).collect();
        let (_f, p) = section(&bytes);
        assert_eq!(p.file.bytes_read(), 0);
        let mut out = [0u8; 10];
        p.read(PAGE - 5, &mut out).unwrap();
        assert_eq!(&out[..], &bytes[PAGE - 5..PAGE + 5]);
        assert_eq!(p.file.bytes_read(), 2 * PAGE as u64);
        // Cached: no further read.
        assert_eq!(
            p.u32_at(PAGE - 2),
            Some(u32::from_le_bytes(
                bytes[PAGE - 2..PAGE + 2].try_into().unwrap()
            ))
        );
        assert_eq!(p.file.bytes_read(), 2 * PAGE as u64);
        // The short last page, and past the end.
        assert_eq!(
            p.i64_at(3 * PAGE + 92),
            Some(i64::from_le_bytes(
                bytes[3 * PAGE + 92..].try_into().unwrap()
            ))
        );
        assert!(p.read(3 * PAGE + 95, &mut out).is_none());
    }

    #[test]
    fn changed_or_truncated_file_gives_none_not_a_crash() {
        let bytes = vec![1u8; 2 * PAGE];
        let (f, p) = section(&bytes);
        assert_eq!(p.u32_at(0), Some(0x0101_0101));
        // Rewritten in place: the second page no longer matches its sum.
        let w = fs::OpenOptions::new().write(true).open(f.path()).unwrap();
        w.write_all_at(&[2u8; 8], 4 + PAGE as u64).unwrap();
        assert_eq!(p.u32_at(PAGE), None);
        // Truncated: a short read. The page read before is kept.
        w.set_len(0).unwrap();
        assert_eq!(p.u32_at(PAGE + 8), None);
        assert_eq!(p.u32_at(4), Some(0x0101_0101));
    }

    #[test]
    fn slots_allocate_groups_on_first_use() {
        let s: Slots<u32> = Slots::new(1000);
        let empty = s.memory();
        assert!(s.get(5).is_none());
        assert_eq!(s.set(5, 7), Some((&7, true)));
        assert_eq!(s.set(5, 8), Some((&7, false)), "set once");
        assert_eq!(s.get(5), Some(&7));
        assert!(s.get(6).is_none() && s.get(999).is_none() && s.get(1000).is_none());
        assert_eq!(s.memory(), empty + GROUP * size_of::<OnceLock<u32>>());
        assert!(s.set(1000, 1).is_none());
    }
}
