//! Soak tests of `tlskit serve`: many connections and reloads for a while, bounded
//! memory and file descriptors. A binary of their own so that nothing else runs beside
//! them.
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.
//!
//! The slow tier: built only with `--features slow-tests` (Cargo.toml `required-features`).

use tlskit_testkit::net_support;

/// The binary under test (the same file as `tlskit_testkit::run::bin()`).
pub const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

mod net_soak;
