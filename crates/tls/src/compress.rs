//! Certificate compression (RFC 8879) without compressing on the handshake path.
//!
//! rustls compresses a certificate message the first time a client asks for it and keeps
//! the result in a small LRU cache (4 entries by default: two chains, two algorithms).
//! Two consequences matter for a terminator:
//! - the first handshake after start or reload waits for a brotli compression of the whole
//!   chain at the highest quality (tens of milliseconds for a 25 KB chain: the probe
//!   measured 84 ms instead of 51 ms on a 50 ms link, a lost round trip's worth);
//! - with more chains than that (an SNI directory), clients asking for different names
//!   evict each other and every handshake compresses again, a CPU cost any client can
//!   trigger.
//!
//! [`CachedCompressor`] wraps rustls's own brotli and zlib compressors with a cache keyed
//! by the exact bytes of the certificate message (xxh3 to find the entry, full comparison
//! to accept it), bounded in bytes, shared across reloads. [`warm_now`] compresses the
//! configured chains before the server says it is ready and before a reload's chains are
//! served, so handshakes find them ready (the first one too: before, the warm-up ran in
//! the background and raced readiness, and the first client waited 150 ms for brotli on a
//! long chain, debug build), and an ACME certificate before it is installed (off the
//! runtime's threads). Past [`MAX_WARM_CHAINS`] chains, the rest are compressed on first
//! use. The server turns rustls's own cache off (it would only hold copies).
//! Compression itself is rustls's code (brotli and zlib crates); nothing here touches the
//! TLS state machine: a cache miss simply compresses, exactly as rustls would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use rustls::compress::{CertCompressor, CompressionFailed, CompressionLevel};
use rustls::sign::CertifiedKey;
use rustls::CertificateCompressionAlgorithm;

/// Certificate compression algorithms (RFC 8879) the server may use.
///
/// Not `#[non_exhaustive]`, on purpose: the terminator's metrics match it exhaustively,
/// so that a new algorithm cannot be added without its own metric series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// brotli (algorithm 2).
    Brotli,
    /// zlib (algorithm 1).
    Zlib,
}

impl Compression {
    /// The RFC 8879 code point.
    pub fn code(self) -> u16 {
        match self {
            Self::Zlib => 1,
            Self::Brotli => 2,
        }
    }
    /// `brotli`, `zlib`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Zlib => "zlib",
            Self::Brotli => "brotli",
        }
    }
}

/// Cached bytes (originals and compressed) per algorithm before the cache starts over.
const MAX_CACHE_BYTES: usize = 64 << 20;
/// Chains compressed ahead of time per start or reload; the rest are compressed (and
/// cached) on first use.
pub const MAX_WARM_CHAINS: usize = 256;

struct Entry {
    original: Vec<u8>,
    compressed: Arc<[u8]>,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<u64, Vec<Entry>>,
    bytes: usize,
}

/// A rustls [`CertCompressor`] that compresses each distinct certificate message once.
pub struct CachedCompressor {
    inner: &'static dyn CertCompressor,
    cache: RwLock<Cache>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Misses on a handshake (not ahead of time): each made a client wait for a compression.
    handshake_misses: AtomicU64,
}

impl std::fmt::Debug for CachedCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedCompressor")
            .field("algorithm", &self.inner.algorithm())
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .field("misses", &self.misses.load(Ordering::Relaxed))
            .finish()
    }
}

impl CachedCompressor {
    fn new(inner: &'static dyn CertCompressor) -> Self {
        Self {
            inner,
            cache: RwLock::new(Cache::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            handshake_misses: AtomicU64::new(0),
        }
    }

    fn lookup(&self, key: u64, input: &[u8]) -> Option<Arc<[u8]>> {
        // A poisoned lock only means a panic elsewhere mid-insert; the map is still
        // consistent (inserts are single pushes), so keep using it.
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        cache
            .entries
            .get(&key)?
            .iter()
            .find(|e| e.original == input)
            .map(|e| e.compressed.clone())
    }

    fn insert(&self, key: u64, original: Vec<u8>, compressed: Arc<[u8]>) {
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        let size = original.len() + compressed.len();
        if cache.bytes + size > MAX_CACHE_BYTES {
            // Only when the live chains alone exceed the bound (a reload drops the dead
            // ones, see `retain`): start over rather than track recency.
            cache.entries.clear();
            cache.bytes = 0;
        }
        let bucket = cache.entries.entry(key).or_default();
        if bucket.iter().any(|e| e.original == original) {
            return; // another thread compressed the same message meanwhile
        }
        bucket.push(Entry {
            original,
            compressed,
        });
        cache.bytes += size;
    }

    /// Drop every entry whose message is not in `live` (keyed as by [`Self::get_or_compress`]):
    /// the chains a reload replaced.
    fn retain(&self, live: &[(u64, Vec<u8>)]) {
        let mut by_key: HashMap<u64, Vec<&[u8]>> = HashMap::new();
        for (k, m) in live {
            by_key.entry(*k).or_default().push(m);
        }
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        let mut bytes = 0;
        cache.entries.retain(|key, bucket| {
            let msgs = by_key.get(key).map_or(&[][..], Vec::as_slice);
            bucket.retain(|e| msgs.contains(&e.original.as_slice()));
            bytes += bucket
                .iter()
                .map(|e| e.original.len() + e.compressed.len())
                .sum::<usize>();
            !bucket.is_empty()
        });
        cache.bytes = bytes;
    }

    fn get_or_compress(
        &self,
        input: Vec<u8>,
        on_handshake: bool,
    ) -> Result<Arc<[u8]>, CompressionFailed> {
        let key = xxhash_rust::xxh3::xxh3_64(&input);
        if let Some(c) = self.lookup(key, &input) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(c);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        if on_handshake {
            self.handshake_misses.fetch_add(1, Ordering::Relaxed);
        }
        let compressed: Arc<[u8]> = self
            .inner
            .compress(input.clone(), CompressionLevel::Amortized)?
            .into();
        self.insert(key, input, compressed.clone());
        Ok(compressed)
    }

    /// Certificate messages served from the cache so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Certificate messages that had to be compressed (ahead of time or on a handshake).
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Certificate messages compressed while a client waited (a handshake found no
    /// compressed message ready).
    pub fn handshake_misses(&self) -> u64 {
        self.handshake_misses.load(Ordering::Relaxed)
    }
}

impl CertCompressor for CachedCompressor {
    fn compress(
        &self,
        input: Vec<u8>,
        _level: CompressionLevel,
    ) -> Result<Vec<u8>, CompressionFailed> {
        // Always the amortized (best) level: the result is cached.
        self.get_or_compress(input, true).map(|c| c.to_vec())
    }

    fn algorithm(&self) -> CertificateCompressionAlgorithm {
        self.inner.algorithm()
    }
}

static BROTLI: LazyLock<CachedCompressor> =
    LazyLock::new(|| CachedCompressor::new(rustls::compress::BROTLI_COMPRESSOR));
static ZLIB: LazyLock<CachedCompressor> =
    LazyLock::new(|| CachedCompressor::new(rustls::compress::ZLIB_COMPRESSOR));

/// The process-wide cached compressor for an algorithm (rustls wants `&'static`).
pub fn compressor(c: Compression) -> &'static CachedCompressor {
    match c {
        Compression::Brotli => &BROTLI,
        Compression::Zlib => &ZLIB,
    }
}

/// The TLS 1.3 Certificate message body rustls compresses for `ck` (RFC 8446 4.4.2:
/// empty request context, each certificate with no extensions; tlskit staples no OCSP).
/// If this ever differs from rustls's encoding the only cost is a cache miss.
pub fn certificate_message(ck: &CertifiedKey) -> Vec<u8> {
    let list_len: usize = ck.cert.iter().map(|c| 3 + c.len() + 2).sum();
    let mut out = Vec::with_capacity(1 + 3 + list_len);
    out.push(0); // certificate_request_context: empty for server certificates
    push_u24(&mut out, list_len);
    for c in &ck.cert {
        push_u24(&mut out, c.len());
        out.extend_from_slice(c);
        out.extend_from_slice(&[0, 0]); // no extensions
    }
    out
}

fn push_u24(out: &mut Vec<u8>, n: usize) {
    // Certificates are bounded far below 2^24 by the TLS record layer and our file limits.
    let n = u32::try_from(n).unwrap_or(u32::MAX).min(0xff_ffff);
    out.extend_from_slice(&n.to_be_bytes()[1..]);
}

/// Before the server says it is ready (and before a reload's chains are served):
/// synchronously, on the calling thread, drop cached messages of chains
/// no longer served, then compress the first [`MAX_WARM_CHAINS`] chains with every
/// algorithm in `algs`, so the first handshake costs what the hundredth does. `chains` is
/// every chain the server now serves (the caches are process-wide: a second server in the
/// same process loses its entries to this one's reload and compresses them again on first
/// use). Chains past [`MAX_WARM_CHAINS`] (an SNI directory of more than 256 pairs) are not
/// compressed ahead: the first handshake for each of them compresses it (tens of ms for
/// brotli on a long chain) and caches the result for the next ones. Failures are ignored:
/// a handshake then compresses.
pub fn warm_now(chains: &[Arc<CertifiedKey>], algs: &[Compression]) {
    let compressors: Vec<&'static CachedCompressor> = algs.iter().map(|&a| compressor(a)).collect();
    if !chains.is_empty() && !compressors.is_empty() {
        warm_into(chains, &compressors, true);
    }
}

/// [`warm_now`] for one more chain served beside the others (an ACME certificate): compress
/// it now, dropping nothing from the caches.
pub fn warm_one(chain: &Arc<CertifiedKey>, algs: &[Compression]) {
    let compressors: Vec<&'static CachedCompressor> = algs.iter().map(|&a| compressor(a)).collect();
    warm_into(std::slice::from_ref(chain), &compressors, false);
}

fn warm_into(chains: &[Arc<CertifiedKey>], compressors: &[&CachedCompressor], retain: bool) {
    let live: Vec<(u64, Vec<u8>)> = chains
        .iter()
        .map(|ck| {
            let msg = certificate_message(ck);
            (xxhash_rust::xxh3::xxh3_64(&msg), msg)
        })
        .collect();
    if retain {
        for c in compressors {
            c.retain(&live);
        }
    }
    for (_, msg) in live.iter().take(MAX_WARM_CHAINS) {
        for c in compressors {
            let _ = c.get_or_compress(msg.clone(), false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use std::io::{Read, Write};

    fn pki(names: usize) -> (CertificateDer<'static>, Arc<CertifiedKey>) {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let root = rcgen::CertifiedIssuer::self_signed(ca, ca_key).expect("ca");
        let mut sans = vec!["test.example".to_string()];
        sans.extend((0..names).map(|i| format!("host-{i}.compress.test")));
        let leaf_key = rcgen::KeyPair::generate().expect("key");
        let leaf = rcgen::CertificateParams::new(sans)
            .expect("params")
            .signed_by(&leaf_key, &root)
            .expect("leaf");
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let ck =
            CertifiedKey::from_der(vec![leaf.der().clone(), root.der().clone()], key, &provider)
                .expect("certified key");
        (root.der().clone(), Arc::new(ck))
    }

    /// A compressor of the test's own (the process-wide ones are shared by every test).
    fn own(alg: Compression) -> &'static CachedCompressor {
        Box::leak(Box::new(CachedCompressor::new(match alg {
            Compression::Brotli => rustls::compress::BROTLI_COMPRESSOR,
            Compression::Zlib => rustls::compress::ZLIB_COMPRESSOR,
        })))
    }

    /// One in-memory TLS 1.3 handshake, the server compressing with `comp` and rustls's
    /// own cache off, as `tlskit serve` configures it.
    fn handshake(
        root: CertificateDer<'static>,
        ck: Arc<CertifiedKey>,
        alg: Compression,
        comp: &'static CachedCompressor,
    ) {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Fixed(ck)));
        server.cert_compressors = vec![comp];
        server.cert_compression_cache = Arc::new(rustls::compress::CompressionCache::Disabled);
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root).expect("root");
        let mut client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.cert_decompressors = vec![match alg {
            Compression::Brotli => rustls::compress::BROTLI_DECOMPRESSOR,
            Compression::Zlib => rustls::compress::ZLIB_DECOMPRESSOR,
        }];
        let mut c = rustls::ClientConnection::new(
            Arc::new(client),
            ServerName::try_from("test.example").expect("name"),
        )
        .expect("client");
        let mut s = rustls::ServerConnection::new(Arc::new(server)).expect("server");
        let mut buf = Vec::new();
        for _ in 0..10 {
            buf.clear();
            while c.wants_write() {
                c.write_tls(&mut buf).expect("client write");
            }
            s.read_tls(&mut buf.as_slice()).expect("server read");
            s.process_new_packets().expect("server process");
            buf.clear();
            while s.wants_write() {
                s.write_tls(&mut buf).expect("server write");
            }
            c.read_tls(&mut buf.as_slice()).expect("client read");
            c.process_new_packets().expect("client process");
            if !c.is_handshaking() && !s.is_handshaking() {
                break;
            }
        }
        assert!(!c.is_handshaking(), "handshake completed");
        c.writer().write_all(b"ping").expect("write");
        let _ = s.reader().read(&mut [0u8; 4]);
    }

    #[derive(Debug)]
    struct Fixed(Arc<CertifiedKey>);
    impl rustls::server::ResolvesServerCert for Fixed {
        fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            Some(self.0.clone())
        }
    }

    #[test]
    fn warmed_chains_are_served_from_the_cache_with_rustls_encoding() {
        let (root, ck) = pki(300);
        for alg in [Compression::Brotli, Compression::Zlib] {
            let comp = own(alg);
            warm_into(std::slice::from_ref(&ck), &[comp], true);
            assert_eq!((comp.hits(), comp.misses()), (0, 1));
            handshake(root.clone(), ck.clone(), alg, comp);
            handshake(root.clone(), ck.clone(), alg, comp);
            assert_eq!(
                (comp.hits(), comp.misses()),
                (2, 1),
                "{alg:?}: both handshakes found the warmed message (our encoding = rustls's)"
            );
        }
    }

    #[test]
    fn cache_hits_return_what_the_compressor_made() {
        let (_, ck) = pki(50);
        let msg = certificate_message(&ck);
        let c = own(Compression::Zlib);
        let a = c
            .compress(msg.clone(), CompressionLevel::Interactive)
            .expect("a");
        let b = c
            .compress(msg.clone(), CompressionLevel::Interactive)
            .expect("b");
        assert_eq!(a, b);
        let mut out = vec![0u8; msg.len()];
        rustls::compress::ZLIB_DECOMPRESSOR
            .decompress(&a, &mut out)
            .expect("decompresses");
        assert_eq!(out, msg);
    }

    /// A reload's warm-up drops the messages of chains no longer served and keeps (does
    /// not recompress) the ones still served.
    #[test]
    fn warming_after_a_reload_drops_replaced_chains() {
        let (_, old) = pki(20);
        let (_, kept) = pki(30);
        let c = own(Compression::Zlib);
        warm_into(&[old.clone(), kept.clone()], &[c], true);
        assert_eq!((c.hits(), c.misses()), (0, 2));
        let before = c.cache.read().expect("lock").bytes;
        warm_into(std::slice::from_ref(&kept), &[c], true);
        assert_eq!((c.hits(), c.misses()), (1, 2), "the kept chain was a hit");
        let cache = c.cache.read().expect("lock");
        assert_eq!(cache.entries.values().map(Vec::len).sum::<usize>(), 1);
        assert!(cache.bytes < before && cache.bytes > 0);
        let msg = certificate_message(&old);
        assert!(c.lookup(xxhash_rust::xxh3::xxh3_64(&msg), &msg).is_none());
    }

    /// An ACME certificate's warm-up (warm_one: no retain) adds its chain and drops
    /// nothing: the --cert and SNI chains warmed at start stay cached.
    #[test]
    fn warming_one_more_chain_drops_nothing() {
        let (_, served) = pki(20);
        let (_, acme) = pki(25);
        let c = own(Compression::Zlib);
        warm_into(std::slice::from_ref(&served), &[c], true);
        warm_into(std::slice::from_ref(&acme), &[c], false);
        assert_eq!((c.hits(), c.misses()), (0, 2));
        for ck in [&served, &acme] {
            let msg = certificate_message(ck);
            assert!(c.lookup(xxhash_rust::xxh3::xxh3_64(&msg), &msg).is_some());
        }
    }
}
