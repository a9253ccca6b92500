//! [`Buf`]: the growable arrays behind a store under construction (the DER of every
//! anchor, the hash tables, the records) and behind a built store's index.
//!
//! Small arrays are ordinary `Vec`s. A large one is an anonymous mapping advised for
//! transparent huge pages: every load of a large store needs that much fresh memory
//! (glibc maps anything over 32 MiB afresh on each allocation, smaller blocks depending on
//! what was freed before and how the heap was trimmed), and faulting it in 4 KiB pages cost
//! more than copying the bytes into it: a 45 MB arena took 11,520 faults and 19 ms, against
//! 2.8 ms in 2 MiB pages on the benchmark machine. Where huge pages are off or unavailable
//! the kernel falls back to small pages: the cost of a `Vec`, never more. With the kernel's
//! THP `defrag` setting at `madvise` (the usual default) a fault in an advised mapping may
//! first compact memory when no huge page is free: on a fragmented machine a large load
//! can then take longer, never fail (it runs off the handshake path: start-up, reloads).
//!
//! When is an array large? One that grows past [`MAP_MIN`] is mapped. A builder that
//! knows it is loading a large store ([`Buf::reserve_large`], used when its DER estimate
//! reaches [`LARGE_STORE`]) maps each of its arrays of at least [`HUGE_PAGE`]; below that,
//! the allocator's reused heap memory is cheaper than a fresh huge page. A finished array
//! becomes the store's memory as it is, without a copy, when its memory is already the
//! stored form ([`Buf::into_stored`]).
//!
//! No `unsafe`: memmap2's anonymous mappings are safe, and bytemuck checks each view.

use std::ops::{Deref, DerefMut};

use bytemuck::Pod;

/// An array growing past this many bytes is mapped.
pub(crate) const MAP_MIN: usize = 8 << 20;
/// In a large store, arrays of at least this many bytes are mapped.
pub(crate) const HUGE_PAGE: usize = 2 << 20;
/// A builder that expects at least this much DER treats the store as large
/// ([`Buf::reserve_large`] for its arrays). Not lower: at 10,000 anchors (4.7 MB of DER)
/// huge pages cut a one-shot command's first load by a few faults' worth, but every warm
/// load (a reload) then clears fresh pages that the heap would have handed back: 3.6–3.7
/// ms became 4.2–5.0 ms (issue 29, `load_floor`, 2026-11-27).
pub(crate) const LARGE_STORE: usize = MAP_MIN;

/// Bytes owned in memory (a `Vec`, or for a large store an anonymous mapping: see
/// the module docs).
pub(crate) enum Bytes {
    Owned(Vec<u8>),
    /// `map[..len]`; no longer written once the store is built.
    Anon {
        map: memmap2::MmapMut,
        len: usize,
    },
    /// An array of 8-byte-aligned elements (the records) kept in its own allocation:
    /// its memory is the stored form, so it is handed over rather than copied.
    Words(Vec<u64>),
}

impl Bytes {
    /// Bytes of memory held: the capacity of an owned buffer or anonymous mapping, the
    /// length of a snapshot section.
    pub(crate) fn allocated(&self) -> usize {
        match self {
            Bytes::Owned(v) => v.capacity(),
            Bytes::Anon { map, .. } => map.len(),
            Bytes::Words(v) => v.capacity() * 8,
        }
    }
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            // The arena keeps len <= map.len().
            Bytes::Anon { map, len } => map.get(..*len).unwrap_or(&[]),
            Bytes::Words(v) => bytemuck::cast_slice(v),
        }
    }
}

/// A growable array of plain-old-data elements: a `Vec` while small, a huge-page mapping
/// once large. Derefs to `[T]`.
pub(crate) struct Buf<T: Pod> {
    repr: Repr<T>,
}

/// The DER arena and other byte buffers.
pub(crate) type Arena = Buf<u8>;

enum Repr<T> {
    Heap(Vec<T>),
    /// The first `len` elements of the mapping are the content; the rest is capacity.
    /// Elements from `zero_from` on were never written: still the zeros of a fresh
    /// anonymous mapping, so zero-filling them is skipped.
    Map {
        map: memmap2::MmapMut,
        len: usize,
        zero_from: usize,
    },
}

impl<T: Pod> Default for Buf<T> {
    fn default() -> Self {
        Buf {
            repr: Repr::Heap(Vec::new()),
        }
    }
}

/// A fresh anonymous mapping of `bytes` bytes advised for huge pages, or `None` when the
/// system refuses (the caller then stays on the heap).
fn map_huge(bytes: usize) -> Option<memmap2::MmapMut> {
    let map = memmap2::MmapOptions::new().len(bytes).map_anon().ok()?;
    // Only advice: without transparent huge pages the mapping works in small pages.
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(map)
}

/// The typed view of a mapping's first `len` elements. Mappings are page-aligned and
/// `len` never exceeds the mapping's capacity in elements, so bytemuck's checks (alignment,
/// size) always pass.
#[inline]
fn view<T: Pod>(map: &[u8], len: usize) -> &[T] {
    bytemuck::cast_slice(&map[..len * size_of::<T>()])
}

#[inline]
fn view_mut<T: Pod>(map: &mut [u8], len: usize) -> &mut [T] {
    bytemuck::cast_slice_mut(&mut map[..len * size_of::<T>()])
}

impl<T: Pod> Buf<T> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_capacity(cap: usize) -> Self {
        let mut b = Self::new();
        b.reserve(cap);
        b
    }

    /// `n` zero elements; mapped when `large` and at least [`HUGE_PAGE`] bytes, or when
    /// at least [`MAP_MIN`] bytes.
    pub(crate) fn zeroed(n: usize, large: bool) -> Self {
        let map_min = if large { HUGE_PAGE } else { MAP_MIN };
        if n.saturating_mul(size_of::<T>()) < map_min {
            // `vec![0; n]` asks the allocator for zeroed memory: fresh pages are not
            // written twice (calloc skips clearing what the kernel cleared).
            return Buf {
                repr: Repr::Heap(vec![T::zeroed(); n]),
            };
        }
        let mut b = Self::new();
        b.grow(n, map_min);
        b.resize(n, T::zeroed());
        b
    }

    /// Elements the buffer can hold without growing.
    pub(crate) fn capacity(&self) -> usize {
        match &self.repr {
            Repr::Heap(v) => v.capacity(),
            Repr::Map { map, .. } => map.len() / size_of::<T>(),
        }
    }

    /// Room for `additional` more elements (amortised doubling, as a `Vec` grows); mapped
    /// once the capacity reaches [`MAP_MIN`] bytes.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.grow(additional, MAP_MIN);
    }

    /// As [`Self::reserve`], for a builder loading a large store: mapped from
    /// [`HUGE_PAGE`] bytes.
    pub(crate) fn reserve_large(&mut self, additional: usize) {
        self.grow(additional, HUGE_PAGE);
    }

    fn grow(&mut self, additional: usize, map_min: usize) {
        let (len, cap) = (self.len(), self.capacity());
        let need = len.saturating_add(additional);
        if need <= cap {
            return;
        }
        let new_cap = need.max(cap.saturating_mul(2));
        if let Some(bytes) = new_cap.checked_mul(size_of::<T>()) {
            if bytes >= map_min {
                if let Some(mut map) = map_huge(bytes) {
                    view_mut::<T>(&mut map, len).copy_from_slice(self);
                    self.repr = Repr::Map {
                        map,
                        len,
                        zero_from: len,
                    };
                    return;
                }
            }
        }
        if let Repr::Heap(v) = &mut self.repr {
            v.reserve(additional);
            return;
        }
        // A mapping that could not be replaced by a larger one: continue on the heap.
        let mut v = Vec::with_capacity(need);
        v.extend_from_slice(self);
        self.repr = Repr::Heap(v);
    }

    #[inline]
    pub(crate) fn push(&mut self, x: T) {
        self.extend_from_slice(std::slice::from_ref(&x));
    }

    #[inline]
    pub(crate) fn extend_from_slice(&mut self, items: &[T]) {
        match &mut self.repr {
            Repr::Heap(v) if v.capacity() - v.len() >= items.len() => v.extend_from_slice(items),
            Repr::Map {
                map,
                len,
                zero_from,
            } if map.len() / size_of::<T>() - *len >= items.len() => {
                let end = *len + items.len();
                view_mut::<T>(map, end)[*len..].copy_from_slice(items);
                *len = end;
                *zero_from = (*zero_from).max(end);
            }
            _ => {
                self.reserve(items.len());
                self.extend_within_capacity(items);
            }
        }
    }

    fn extend_within_capacity(&mut self, items: &[T]) {
        match &mut self.repr {
            Repr::Heap(v) => v.extend_from_slice(items),
            Repr::Map {
                map,
                len,
                zero_from,
            } => {
                // `reserve` made room: the range is within the mapping.
                let end = *len + items.len();
                view_mut::<T>(map, end)[*len..].copy_from_slice(items);
                *len = end;
                *zero_from = (*zero_from).max(end);
            }
        }
    }

    /// Set the length to `new_len`, filling new elements with `x`.
    pub(crate) fn resize(&mut self, new_len: usize, x: T) {
        let len = self.len();
        if new_len <= len {
            self.truncate(new_len);
            return;
        }
        self.reserve(new_len - len);
        match &mut self.repr {
            Repr::Heap(v) => v.resize(new_len, x),
            Repr::Map {
                map,
                len,
                zero_from,
            } => {
                // Elements past `len` may hold truncated content: overwrite them, except
                // never-written ones that already hold the zero asked for.
                let is_zero = bytemuck::bytes_of(&x).iter().all(|&b| b == 0);
                let end = if is_zero {
                    new_len.min(*zero_from).max(*len)
                } else {
                    new_len
                };
                view_mut::<T>(map, end)[*len..].fill(x);
                *len = new_len;
                *zero_from = (*zero_from).max(new_len);
            }
        }
    }

    /// Shorten to `new_len` (no effect when already shorter).
    pub(crate) fn truncate(&mut self, new_len: usize) {
        match &mut self.repr {
            Repr::Heap(v) => v.truncate(new_len),
            Repr::Map { len, .. } => *len = (*len).min(new_len),
        }
    }

    /// Give back spare room when it is more than a quarter of the content (a bad size
    /// estimate); smaller slack is kept, so the next load of the same size can reuse it.
    pub(crate) fn trim(&mut self) {
        let (len, cap) = (self.len(), self.capacity());
        if cap - len <= len / 4 {
            return;
        }
        if let Repr::Heap(v) = &mut self.repr {
            v.shrink_to_fit();
            return;
        }
        let mut exact = Self::with_capacity(len);
        exact.extend_from_slice(self);
        *self = exact;
    }
}

impl<T: Pod> Buf<T> {
    /// The finished array in its stored form, read-only from now on. `raw`: the
    /// elements' memory is their stored form; then a mapping is handed over as it is,
    /// and so is a heap array whose allocation can be viewed as bytes or as 8-byte words
    /// (bytemuck checks alignment and size), without copying. Otherwise each element is
    /// written with `put` into a buffer of `size_of::<T>()` bytes per element.
    pub(crate) fn into_stored(mut self, raw: bool, put: impl Fn(&T, &mut [u8])) -> Bytes {
        self.trim();
        let size = size_of::<T>();
        let repr = match self.repr {
            Repr::Map { map, len, .. } if raw => {
                return Bytes::Anon {
                    map,
                    len: len * size,
                }
            }
            Repr::Heap(v) if raw => match bytemuck::allocation::try_cast_vec::<T, u8>(v) {
                Ok(b) => return Bytes::Owned(b),
                Err((_, v)) => match bytemuck::allocation::try_cast_vec::<T, u64>(v) {
                    Ok(w) => return Bytes::Words(w),
                    Err((_, v)) => Repr::Heap(v),
                },
            },
            other => other,
        };
        self.repr = repr;
        let mut out = Arena::with_capacity(self.len() * size);
        out.resize(self.len() * size, 0);
        for (dst, x) in out.chunks_exact_mut(size).zip(self.iter()) {
            put(x, dst);
        }
        out.into_bytes()
    }
}

impl Arena {
    /// The finished buffer, read-only from now on.
    pub(crate) fn into_bytes(self) -> Bytes {
        match self.repr {
            Repr::Heap(v) => Bytes::Owned(v),
            Repr::Map { map, len, .. } => Bytes::Anon { map, len },
        }
    }
}

impl<T: Pod> Deref for Buf<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Heap(v) => v,
            Repr::Map { map, len, .. } => view(map, *len),
        }
    }
}

impl<T: Pod> DerefMut for Buf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Heap(v) => v,
            Repr::Map { map, len, .. } => view_mut(map, *len),
        }
    }
}

/// What a PEM decoder appends to: a `Vec<u8>` or an [`Arena`].
pub(crate) trait ByteBuf: DerefMut<Target = [u8]> {
    /// Make room for `additional` more bytes.
    fn reserve(&mut self, additional: usize);
    /// Set the length to `len`; new bytes are zero.
    fn resize_zeroed(&mut self, len: usize);
    /// Shorten to `len` (no effect when already shorter).
    fn truncate(&mut self, len: usize);
    /// Append the bytes of `b64`, unpadded standard base64 of a multiple of 4 characters
    /// (`base64-simd`). On error (a character outside the alphabet) the length is
    /// unchanged.
    fn append_base64(&mut self, b64: &[u8]) -> bool {
        let start = self.len();
        self.resize_zeroed(start + b64.len() / 4 * 3);
        let ok = base64_simd::STANDARD_NO_PAD
            .decode(b64, base64_simd::Out::from_slice(&mut self[start..]))
            .is_ok_and(|d| d.len() == b64.len() / 4 * 3);
        if !ok {
            self.truncate(start);
        }
        ok
    }
}

impl ByteBuf for Vec<u8> {
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
    fn resize_zeroed(&mut self, len: usize) {
        self.resize(len, 0);
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
    /// Decoded into the spare capacity: no zeroing first.
    fn append_base64(&mut self, b64: &[u8]) -> bool {
        let start = self.len();
        let ok = base64_simd::STANDARD_NO_PAD
            .decode_append(b64, self)
            .is_ok_and(|()| self.len() == start + b64.len() / 4 * 3);
        if !ok {
            Vec::truncate(self, start);
        }
        ok
    }
}

impl ByteBuf for Arena {
    fn reserve(&mut self, additional: usize) {
        Buf::reserve(self, additional);
    }
    fn resize_zeroed(&mut self, len: usize) {
        self.resize(len, 0);
    }
    fn truncate(&mut self, len: usize) {
        Buf::truncate(self, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_mapped<T: Pod>(b: &Buf<T>) -> bool {
        matches!(b.repr, Repr::Map { .. })
    }

    #[test]
    fn small_stays_on_heap_and_large_is_mapped() {
        let mut a = Arena::new();
        a.extend_from_slice(b"abc");
        assert!(!is_mapped(&a));
        a.reserve(MAP_MIN);
        assert!(is_mapped(&a));
        assert_eq!(&a[..], b"abc");
        assert!(a.capacity() >= MAP_MIN + 3);

        let mut w: Buf<u64> = Buf::new();
        w.reserve_large(HUGE_PAGE / 8 - 1);
        assert!(!is_mapped(&w));
        w.reserve_large(HUGE_PAGE / 8);
        assert!(is_mapped(&w));
        let z: Buf<u32> = Buf::zeroed(HUGE_PAGE / 4, true);
        assert!(is_mapped(&z) && z.len() == HUGE_PAGE / 4 && z.iter().all(|&x| x == 0));
    }

    /// A finished heap array whose memory is its stored form is handed over, not copied:
    /// byte arrays as bytes, 8-byte-aligned records as words; the stored bytes equal what
    /// `put` writes. Without `raw`, `put` decides.
    #[test]
    fn into_stored_hands_over_heap_arrays() {
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct R {
            a: u32,
            b: u32,
            c: i64,
        }
        let put = |r: &R, out: &mut [u8]| {
            out[..4].copy_from_slice(&r.a.to_le_bytes());
            out[4..8].copy_from_slice(&r.b.to_le_bytes());
            out[8..].copy_from_slice(&r.c.to_le_bytes());
        };
        let mut recs: Buf<R> = Buf::new();
        for i in 0..1000u32 {
            recs.push(R {
                a: i,
                b: !i,
                c: -i64::from(i),
            });
        }
        let mut want = vec![0u8; 1000 * 16];
        for (r, out) in recs.iter().zip(want.chunks_exact_mut(16)) {
            put(r, out);
        }
        let at = recs.as_ptr() as usize;
        let stored = recs.into_stored(cfg!(target_endian = "little"), put);
        assert_eq!(stored.as_slice(), &want[..]);
        if cfg!(target_endian = "little") {
            assert!(matches!(stored, Bytes::Words(_)));
            assert_eq!(stored.as_slice().as_ptr() as usize, at);
        }

        let mut sha: Buf<[u8; 32]> = Buf::new();
        for i in 0..100u8 {
            sha.push([i; 32]);
        }
        let at = sha.as_ptr() as usize;
        let stored = sha.into_stored(true, |s, out| out.copy_from_slice(s));
        assert!(matches!(stored, Bytes::Owned(_)));
        assert_eq!(stored.as_slice().as_ptr() as usize, at);
        assert_eq!(stored.as_slice()[32 * 7..32 * 8], [7u8; 32]);

        // Not raw: written element by element into a new buffer.
        let mut w: Buf<u32> = Buf::new();
        w.extend_from_slice(&[1, 2, 3]);
        let stored = w.into_stored(false, |x, out| out.copy_from_slice(&x.to_be_bytes()));
        assert_eq!(stored.as_slice(), &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);
    }

    /// The same operations on a Buf (crossing into a mapping, then growing the mapping)
    /// and on a Vec give the same contents.
    #[test]
    fn buf_matches_vec_across_growth() {
        let mut a = Arena::new();
        let mut v: Vec<u8> = Vec::new();
        let piece: Vec<u8> = (0..=255u8).cycle().take(70_001).collect();
        let mut round = 0usize;
        while v.len() < 3 * MAP_MIN {
            a.extend_from_slice(&piece[round % 7..]);
            v.extend_from_slice(&piece[round % 7..]);
            if round.is_multiple_of(5) {
                let n = v.len() - 1000;
                a.truncate(n);
                v.truncate(n);
                let m = n + 2000;
                a.resize_zeroed(m);
                v.resize(m, 0);
            }
            round += 1;
        }
        assert!(is_mapped(&a));
        assert!(a[..] == v[..]);
        let bytes = a.into_bytes();
        assert!(bytes.as_slice() == &v[..]);
        assert!(bytes.allocated() >= v.len());

        let mut w: Buf<[u8; 32]> = Buf::new();
        let mut x: Vec<[u8; 32]> = Vec::new();
        for i in 0..(MAP_MIN / 32 + 1000) {
            let e = [i as u8; 32];
            w.push(e);
            x.push(e);
        }
        assert!(is_mapped(&w));
        assert!(w[..] == x[..]);
        w[5] = [9; 32];
        x[5] = [9; 32];
        assert!(w[..] == x[..]);
    }

    /// Growing with zeros after shrinking must clear what was written before, while
    /// never-written room is left to the mapping's own zeros.
    #[test]
    fn resize_clears_written_bytes_only() {
        let mut a = Arena::with_capacity(MAP_MIN);
        assert!(is_mapped(&a));
        a.resize(1000, 7);
        a.truncate(10);
        a.resize(5000, 0);
        assert!(a[..10].iter().all(|&b| b == 7));
        assert!(a[10..].iter().all(|&b| b == 0));
        a.truncate(0);
        a.resize(3000, 9);
        a.resize(6000, 0);
        assert!(a[..3000].iter().all(|&b| b == 9) && a[3000..].iter().all(|&b| b == 0));
    }

    #[test]
    fn trim_gives_back_large_slack_only() {
        let mut a = Arena::with_capacity(4 * MAP_MIN);
        a.extend_from_slice(&vec![1u8; MAP_MIN]);
        a.trim();
        assert_eq!(a.capacity(), MAP_MIN);
        assert_eq!(a.len(), MAP_MIN);
        assert!(a.iter().all(|&b| b == 1));
        let mut small = Arena::with_capacity(1000);
        small.extend_from_slice(&[2u8; 900]);
        small.trim();
        assert_eq!(small.capacity(), 1000);
    }
}
