#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod store;
pub mod verify;

pub use store::StoreBench;
pub use verify::{VerifyBench, VerifyOptions};

/// What stops a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Loading the sources, or building the snapshot from them, failed.
    #[error(transparent)]
    Store(#[from] tlskit_store::StoreError),
    /// The snapshot built for the run could not be opened.
    #[error(transparent)]
    Snapshot(#[from] tlskit_store::SnapshotError),
    /// The temporary directory that holds the snapshot could not be created.
    #[error("creating a temporary directory")]
    TempDir(#[source] std::io::Error),
    /// rustls's own verifier (for `compare_rustls`) could not be built.
    #[error("rustls verifier: {0}")]
    RustlsVerifier(#[source] tlskit_verify::rustls::client::VerifierBuilderError),
    /// The chain does not verify before the run: it is not benchmarked.
    #[error("the chain does not verify: {0}")]
    ChainInvalid(#[source] tlskit_verify::VerifyError),
    /// A verification failed during the run.
    #[error(transparent)]
    Verify(#[from] tlskit_verify::rustls::Error),
    /// A benchmark thread panicked.
    #[error("benchmark thread panicked")]
    ThreadPanicked,
}

/// The median of `v`, NaN when empty (never: every run records one).
fn median_of(mut v: Vec<f64>) -> f64 {
    tlskit_x509::stats::median(&mut v).unwrap_or(f64::NAN)
}
