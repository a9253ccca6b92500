//! tlskit fuzz harnesses. The bodies live in `harness.rs` so that the regression replay
//! test in `crates/cli/tests/fuzz_regressions.rs` runs exactly the same code.

mod harness;
pub use harness::*;

/// xxh3-64, the snapshot checksum, for [`snapshot`]'s checksum repair.
pub fn xxh3(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}
