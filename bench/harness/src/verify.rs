//! `tlskit bench verify`: verifications per second through the rustls entry point a TLS
//! client calls for every handshake, without and with the cache, on one and two threads;
//! optionally rustls's own `WebPkiServerVerifier` on the same anchors and chain.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tlskit_store::{StoreHandle, TrustStore};
use tlskit_verify::rustls::client::danger::ServerCertVerifier as _;
use tlskit_verify::{CertificateDer, ServerName, StoreServerVerifier, UnixTime, VerifierConfig};

use crate::{median_of, BenchError};

/// Verifications between two looks at the clock.
const BATCH: u64 = 32;

/// Shortest run accepted, whatever `run_ms` says.
const MIN_RUN: Duration = Duration::from_millis(10);

/// How to run the verification benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyOptions {
    /// Runs per measurement (the median is reported); at least 1.
    pub runs: usize,
    /// Minimum time per run, in milliseconds (at least 10; cached runs take a quarter).
    pub run_ms: u64,
    /// Also time rustls's `WebPkiServerVerifier` (`rustls_webpki_us`).
    pub compare_rustls: bool,
}

impl VerifyOptions {
    /// `runs` runs of at least `run_ms` ms each, without the rustls comparison.
    pub fn new(runs: usize, run_ms: u64) -> Self {
        Self {
            runs,
            run_ms,
            compare_rustls: false,
        }
    }

    /// Also time rustls's own verifier on the same anchors and chain.
    pub fn compare_rustls(mut self, on: bool) -> Self {
        self.compare_rustls = on;
        self
    }
}

/// The result: the body of a `tlskit.bench.verify/1` document (fields in its order).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct VerifyBench {
    /// Anchors in the store.
    pub anchors: usize,
    /// The name verified for.
    pub host: String,
    /// Runs behind each median.
    pub runs: usize,
    /// One verification without the cache, in microseconds.
    pub verify_us: f64,
    /// One verification answered by the cache, in microseconds.
    pub cached_verify_us: f64,
    /// Uncached verifications per second on one thread.
    pub one_thread_per_s: f64,
    /// Uncached verifications per second on two threads.
    pub two_thread_per_s: f64,
    /// The two-thread rate over the one-thread rate (median of the runs' ratios).
    pub two_thread_speedup: f64,
    /// The same for cache hits.
    pub cached_two_thread_speedup: f64,
    /// rustls's `WebPkiServerVerifier`, one verification in microseconds
    /// (`compare_rustls` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rustls_webpki_us: Option<f64>,
}

/// Run `f` on `threads` threads for at least `min` and return verifications per second.
fn rate<F>(threads: usize, min: Duration, f: &F) -> Result<f64, BenchError>
where
    F: Fn() -> Result<(), BenchError> + Sync,
{
    let start = Instant::now();
    let total = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || -> Result<u64, BenchError> {
                    let mut n = 0u64;
                    loop {
                        for _ in 0..BATCH {
                            f()?;
                        }
                        n += BATCH;
                        if start.elapsed() >= min {
                            return Ok(n);
                        }
                    }
                })
            })
            .collect();
        let mut total = 0u64;
        for h in handles {
            total += h.join().map_err(|_| BenchError::ThreadPanicked)??;
        }
        Ok::<_, BenchError>((total, start.elapsed()))
    })?;
    Ok(total.0 as f64 / total.1.as_secs_f64())
}

/// Benchmark verifying `leaf` (with `intermediates`) for `name` against `store`, now.
/// The chain is verified once first: one that does not verify is not benchmarked
/// ([`BenchError::ChainInvalid`]). Uncached and cached runs are interleaved, and with
/// `compare_rustls` the rustls runs alternate going first, so that neither side gets a
/// systematically warmer or cooler machine.
pub fn run(
    store: TrustStore,
    leaf: &CertificateDer<'static>,
    intermediates: &[CertificateDer<'static>],
    name: &ServerName<'static>,
    opts: &VerifyOptions,
) -> Result<VerifyBench, BenchError> {
    let anchors = store.len();
    let rustls_verifier = if opts.compare_rustls {
        let mut roots = tlskit_verify::rustls::RootCertStore::empty();
        for a in store.anchors() {
            // Anchors rustls cannot parse are skipped, as rustls would.
            let _ = roots.add(CertificateDer::from(a.der()));
        }
        let provider = Arc::new(tlskit_verify::rustls::crypto::aws_lc_rs::default_provider());
        Some(
            tlskit_verify::rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(BenchError::RustlsVerifier)?,
        )
    } else {
        None
    };
    let handle = Arc::new(StoreHandle::from_store(store));
    let now = UnixTime::now();
    let runs = opts.runs.max(1);
    let min = Duration::from_millis(opts.run_ms).max(MIN_RUN);

    let uncached = StoreServerVerifier::new(
        handle.clone(),
        VerifierConfig {
            cache: None,
            ..VerifierConfig::default()
        },
    );
    let cached = StoreServerVerifier::new(handle, VerifierConfig::default());
    uncached
        .verify(leaf, intermediates, name, now)
        .map_err(BenchError::ChainInvalid)?;
    // Both go through the rustls entry point a TLS client calls for every handshake.
    let v_uncached = || -> Result<(), BenchError> {
        uncached.verify_server_cert(leaf, intermediates, name, &[], now)?;
        Ok(())
    };
    let v_cached = || -> Result<(), BenchError> {
        cached.verify_server_cert(leaf, intermediates, name, &[], now)?;
        Ok(())
    };
    v_cached()?;

    let mut one = Vec::new();
    let mut two = Vec::new();
    let mut speedup = Vec::new();
    let mut c_one = Vec::new();
    let mut c_speedup = Vec::new();
    let v_rustls = || -> Result<(), BenchError> {
        if let Some(rv) = &rustls_verifier {
            rv.verify_server_cert(leaf, intermediates, name, &[], now)?;
        }
        Ok(())
    };
    v_rustls()?;
    let mut rustls_us = Vec::new();
    let compare = rustls_verifier.is_some();
    for run in 0..runs {
        if compare && run % 2 == 1 {
            rustls_us.push(1e6 / rate(1, min, &v_rustls)?);
        }
        let r1 = rate(1, min, &v_uncached)?;
        if compare && run % 2 == 0 {
            rustls_us.push(1e6 / rate(1, min, &v_rustls)?);
        }
        let r2 = rate(2, min, &v_uncached)?;
        one.push(r1);
        two.push(r2);
        speedup.push(r2 / r1);
        let c1 = rate(1, min / 4, &v_cached)?;
        let c2 = rate(2, min / 4, &v_cached)?;
        c_one.push(c1);
        c_speedup.push(c2 / c1);
    }
    let rustls_webpki_us = compare.then(|| median_of(rustls_us));
    let one_rate = median_of(one);
    Ok(VerifyBench {
        anchors,
        host: name.to_str().into_owned(),
        runs,
        verify_us: 1e6 / one_rate,
        cached_verify_us: 1e6 / median_of(c_one),
        one_thread_per_s: one_rate,
        two_thread_per_s: median_of(two),
        two_thread_speedup: median_of(speedup),
        cached_two_thread_speedup: median_of(c_speedup),
        rustls_webpki_us,
    })
}
