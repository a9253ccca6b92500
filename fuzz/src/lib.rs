//! tlskit fuzz harnesses. The bodies live in `harness.rs` so that the regression replay
//! test in `crates/cli/tests/cli/fuzz_regressions.rs` runs exactly the same code.

mod harness;
pub use harness::*;

/// xxh3-64, the snapshot checksum, for [`snapshot`]'s checksum repair.
pub fn xxh3(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}

/// A PKCS#12 file without its MAC, for [`pki_p12`].
pub fn strip_p12_mac(data: &[u8]) -> Option<Vec<u8>> {
    use der::{Decode, Encode};
    let mut pfx = pkcs12::pfx::Pfx::from_der(data).ok()?;
    pfx.mac_data.take()?;
    pfx.to_der().ok()
}
