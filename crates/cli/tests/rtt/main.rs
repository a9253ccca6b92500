//! Round trips on a delayed link between two network namespaces (needs root,
//! /dev/net/tun, iproute2; fails under CI=true without them; a missing peer program
//! fails the test): one flight per write,
//! handshakes in the expected number of round trips, probe counts.
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.
//!
//! The slow tier: built only with `--features slow-tests` (Cargo.toml `required-features`).

use tlskit_testkit::net_support;

/// The binary under test (the same file as `tlskit_testkit::run::bin()`).
pub const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

mod net_flight;
mod net_rtt;
mod netns;
mod probe_rtt;
