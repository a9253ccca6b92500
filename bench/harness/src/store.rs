//! `tlskit bench store`: how long a trust store takes to load from its sources and to
//! open as a snapshot, how long one subject lookup takes, and how much memory it holds.

use std::time::Instant;

use serde::Serialize;
use tlskit_store::{LoadReport, Source, TrustStore};

use crate::{median_of, BenchError};

/// Lookups per timed run of the subject-lookup measurement.
const LOOKUPS_PER_RUN: u32 = 200_000;

/// The result: the body of a `tlskit.bench.store/1` document (fields in its order).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StoreBench {
    /// Anchors in the store.
    pub anchors: usize,
    /// DER bytes of the anchors.
    pub der_bytes: usize,
    /// Files read for the store.
    pub files: usize,
    /// Median time to load the sources, in milliseconds.
    pub load_ms: f64,
    /// Median time of one subject lookup, in nanoseconds.
    pub lookup_ns: f64,
    /// Memory the store holds, in bytes.
    pub memory_bytes: usize,
    /// `memory_bytes / der_bytes` (0 for an empty store).
    pub memory_ratio: f64,
    /// Timed runs behind each median.
    pub runs: usize,
    /// Median time to open a snapshot built from the sources, in milliseconds.
    pub snapshot_load_ms: f64,
    /// `load_ms` per anchor, in microseconds (0 for an empty store).
    pub us_per_cert: f64,
}

/// Measure `sources`, already loaded once by the caller into `store` (with `report`):
/// `runs` timed loads, a snapshot built in a temporary directory and opened `runs` times,
/// and `runs` runs of subject lookups on `store` (a subject from its middle).
pub fn run(
    sources: &[Source],
    store: &TrustStore,
    report: &LoadReport,
    runs: usize,
) -> Result<StoreBench, BenchError> {
    let mut load_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let r = tlskit_store::load(sources)?;
        load_ms.push(t.elapsed().as_secs_f64() * 1e3);
        drop(r);
    }
    let load_ms = median_of(load_ms);

    let tmp = tempfile::Builder::new()
        .prefix("tlskit-bench-")
        .tempdir()
        .map_err(BenchError::TempDir)?;
    let snap = tmp.path().join("bench.snap");
    tlskit_store::build_snapshot(sources, &snap)?;
    let mut snap_ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let s = TrustStore::open_snapshot(&snap)?;
        snap_ms.push(t.elapsed().as_secs_f64() * 1e3);
        drop(s);
    }
    let snapshot_load_ms = median_of(snap_ms);

    // One subject lookup on the in-memory store: a subject from the middle of the store.
    let subject = store
        .get((store.len() / 2) as u32)
        .map(|x| x.subject().to_vec())
        .unwrap_or_default();
    let mut lookup = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let mut found = 0usize;
        for _ in 0..LOOKUPS_PER_RUN {
            found += store.by_subject(std::hint::black_box(&subject)).count();
        }
        std::hint::black_box(found);
        lookup.push(t.elapsed().as_nanos() as f64 / f64::from(LOOKUPS_PER_RUN));
    }
    let lookup_ns = median_of(lookup);
    let anchors = store.len();
    let der_bytes = store.der_bytes();
    let memory_bytes = store.memory_bytes();
    Ok(StoreBench {
        anchors,
        der_bytes,
        files: report.files,
        load_ms,
        lookup_ns,
        memory_bytes,
        memory_ratio: if der_bytes > 0 {
            memory_bytes as f64 / der_bytes as f64
        } else {
            0.0
        },
        runs,
        snapshot_load_ms,
        us_per_cert: if anchors > 0 {
            load_ms * 1e3 / anchors as f64
        } else {
            0.0
        },
    })
}
