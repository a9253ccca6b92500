//! The verification cache: positive answers keyed by (store generation, chain bytes,
//! reference name, purpose).
//!
//! - An answer is only given inside its validity window: not before the latest notBefore
//!   and not after the earliest notAfter on the path (and CRL nextUpdate when enforced).
//! - Never across a store reload: the generation is part of the key, and the whole cache
//!   is emptied the first time a newer generation is seen.
//! - Bounded: at most `max_entries` answers and `max_bytes` of stored chains, split
//!   evenly over the shards; the oldest answers of a shard go first.
//! - The generation must identify the store: stores handed out by one `StoreHandle` do.
//! - No cache-wide lock: up to 64 shards picked by the key hash. A hit reads a shard
//!   through an `ArcSwap` (no lock, no write to shared memory); an insert copies one shard
//!   (at most `max_entries / 64` entries) under that shard's mutex. A hit compares the full
//!   chain bytes, so a hash collision can never return a wrong answer.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use rustls_pki_types::{CertificateDer, ServerName};
use xxhash_rust::xxh3::Xxh3;

use crate::purpose::Purpose;
use crate::verified::VerifiedChain;

/// Bounds on the verification cache. Build it with [`CacheLimits::new`] or
/// `CacheLimits::default()` and read or set the public fields; more bounds may be added.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CacheLimits {
    /// Most cached answers (default 16,384).
    pub max_entries: usize,
    /// Most bytes of cached chains and names (default 32 MiB).
    pub max_bytes: usize,
}

impl CacheLimits {
    /// At most `max_entries` answers and `max_bytes` of cached chains and names.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries,
            max_bytes,
        }
    }
}

impl Default for CacheLimits {
    fn default() -> Self {
        Self {
            max_entries: 16_384,
            max_bytes: 32 << 20,
        }
    }
}

const SHARDS: usize = 64;

/// The hash is already uniform; the map uses it as is.
#[derive(Default)]
struct IdentityHasher(u64);
impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

struct Entry {
    generation: u64,
    purpose: Purpose,
    name: Box<[u8]>,
    /// End entity then intermediates, concatenated.
    chain: Box<[u8]>,
    /// Length of each certificate in `chain`.
    lens: Box<[u32]>,
    result: Arc<VerifiedChain>,
}

impl Entry {
    fn size(&self) -> usize {
        self.name.len() + self.chain.len() + self.lens.len() * 4 + 128
    }

    fn matches(
        &self,
        generation: u64,
        ee: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &[u8],
        purpose: Purpose,
    ) -> bool {
        if self.generation != generation
            || self.purpose != purpose
            || *self.name != *name
            || self.lens.len() != intermediates.len() + 1
        {
            return false;
        }
        let mut off = 0usize;
        for (c, &len) in std::iter::once(ee)
            .chain(intermediates)
            .zip(self.lens.iter())
        {
            let c: &[u8] = c.as_ref();
            let end = off + len as usize;
            if c.len() != len as usize || self.chain.get(off..end) != Some(c) {
                return false;
            }
            off = end;
        }
        true
    }
}

/// A cache key: the hash and the name bytes (so they are computed once per verification).
pub(crate) struct Key {
    hash: u64,
    name: NameBytes,
}

/// The reference name as bytes: a kind byte then the DNS name or the IP octets.
struct NameBytes {
    buf: [u8; 256],
    len: usize,
}

impl NameBytes {
    fn new(name: Option<&ServerName<'_>>) -> Self {
        let mut buf = [0u8; 256];
        let mut put = |kind: u8, bytes: &[u8]| {
            buf[0] = kind;
            let n = bytes.len().min(255);
            buf[1..1 + n].copy_from_slice(&bytes[..n]);
            1 + n
        };
        let len = match name {
            None => put(0, &[]),
            Some(ServerName::DnsName(d)) => put(1, d.as_ref().as_bytes()),
            Some(ServerName::IpAddress(ip)) => match std::net::IpAddr::from(*ip) {
                std::net::IpAddr::V4(v4) => put(4, &v4.octets()),
                std::net::IpAddr::V6(v6) => put(6, &v6.octets()),
            },
            Some(_) => put(0xff, &[]),
        };
        Self { buf, len }
    }
    fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

pub(crate) struct VerifyCache {
    shards: Box<[Shard]>,
    seed: u64,
    generation: AtomicU64,
    per_shard_entries: usize,
    per_shard_bytes: usize,
}

/// One shard's contents. Readers load it through an `ArcSwap` (no shared writes on a
/// hit); writers copy it, change the copy and swap it in under the shard's mutex.
#[derive(Default, Clone)]
struct ShardMap {
    map: HashMap<u64, Arc<Entry>, BuildHasherDefault<IdentityHasher>>,
    order: VecDeque<u64>,
    bytes: usize,
}

#[derive(Default)]
struct Shard {
    current: ArcSwap<ShardMap>,
    write: Mutex<()>,
}

impl std::fmt::Debug for VerifyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyCache")
            .field("entries", &self.len())
            .finish()
    }
}

impl VerifyCache {
    pub(crate) fn new(limits: CacheLimits) -> Self {
        // A per-process random seed: keys cannot be steered into one shard or bucket.
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x746c_736b_6974u64);
        // Fewer shards for tiny caches, so that the per-shard bounds add up to at most
        // the configured totals.
        let max_entries = limits.max_entries.max(1);
        let mut shards = SHARDS;
        while shards > max_entries {
            shards /= 2;
        }
        Self {
            shards: (0..shards).map(|_| Shard::default()).collect(),
            seed,
            generation: AtomicU64::new(0),
            per_shard_entries: (max_entries / shards).max(1),
            per_shard_bytes: limits.max_bytes / shards,
        }
    }

    pub(crate) fn key(
        &self,
        generation: u64,
        ee: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: Option<&ServerName<'_>>,
        purpose: Purpose,
    ) -> Key {
        let name = NameBytes::new(name);
        let mut h = Xxh3::with_seed(self.seed);
        h.update(&generation.to_le_bytes());
        h.update(&[purpose as u8]);
        h.update(&(name.len as u32).to_le_bytes());
        h.update(name.as_slice());
        for c in std::iter::once(ee).chain(intermediates) {
            h.update(&(c.len() as u32).to_le_bytes());
            h.update(c);
        }
        Key {
            hash: h.digest(),
            name,
        }
    }

    fn shard(&self, hash: u64) -> &Shard {
        &self.shards[(hash >> 32) as usize % self.shards.len()]
    }

    /// Empty the cache when a newer store generation shows up.
    fn observe(&self, generation: u64) {
        let seen = self.generation.load(Ordering::Acquire);
        if generation > seen
            && self
                .generation
                .compare_exchange(seen, generation, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.clear();
        }
    }

    /// Look the key up; on a hit inside the validity window, call `f` on the answer.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn get_with<R>(
        &self,
        key: &Key,
        generation: u64,
        ee: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        purpose: Purpose,
        now: i64,
        f: impl FnOnce(&Arc<VerifiedChain>) -> R,
    ) -> Option<R> {
        self.observe(generation);
        let shard = self.shard(key.hash).current.load();
        let e = shard.map.get(&key.hash)?;
        if !e.matches(generation, ee, intermediates, key.name.as_slice(), purpose) {
            return None;
        }
        let r = &e.result;
        (r.valid_from <= now && now <= r.valid_until).then(|| f(r))
    }

    pub(crate) fn insert(
        &self,
        key: Key,
        generation: u64,
        ee: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        purpose: Purpose,
        result: Arc<VerifiedChain>,
    ) {
        self.observe(generation);
        if generation < self.generation.load(Ordering::Acquire) {
            return; // an answer from a store that has been replaced meanwhile
        }
        let mut chain =
            Vec::with_capacity(ee.len() + intermediates.iter().map(|c| c.len()).sum::<usize>());
        let mut lens = Vec::with_capacity(intermediates.len() + 1);
        for c in std::iter::once(ee).chain(intermediates) {
            chain.extend_from_slice(c);
            lens.push(u32::try_from(c.len()).unwrap_or(u32::MAX));
        }
        let entry = Entry {
            generation,
            purpose,
            name: key.name.as_slice().into(),
            chain: chain.into(),
            lens: lens.into(),
            result,
        };
        let size = entry.size();
        if size > self.per_shard_bytes {
            return;
        }
        let shard = self.shard(key.hash);
        let _writer = shard.write.lock().unwrap_or_else(|p| p.into_inner());
        let mut m = ShardMap::clone(&shard.current.load());
        match m.map.insert(key.hash, Arc::new(entry)) {
            Some(old) => m.bytes -= old.size(),
            None => m.order.push_back(key.hash),
        }
        m.bytes += size;
        while m.map.len() > self.per_shard_entries || m.bytes > self.per_shard_bytes {
            let Some(h) = m.order.pop_front() else {
                break;
            };
            if let Some(old) = m.map.remove(&h) {
                m.bytes -= old.size();
            }
        }
        shard.current.store(Arc::new(m));
    }

    pub(crate) fn clear(&self) {
        for s in self.shards.iter() {
            let _writer = s.write.lock().unwrap_or_else(|p| p.into_inner());
            s.current.store(Arc::new(ShardMap::default()));
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.current.load().map.len()).sum()
    }

    /// Bytes held (for tests of the bound).
    pub(crate) fn bytes(&self) -> usize {
        self.shards.iter().map(|s| s.current.load().bytes).sum()
    }
}
