//! Commands end to end through the `tlskit` binary: store, verify, pki (with OpenSSL and
//! GnuTLS as peers), input bounds, the JSON and exit-code contract, doctor, the Debian
//! package (`scripts/deb`), README.md's examples run as written, and the replay of saved
//! fuzz inputs.
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.
//!
//! Tiers: the tests that need an external program (a peer `scripts/setup` installs), a
//! `cargo install` or a million files run only with `--features slow-tests` (the slow
//! tier); plain `cargo test` (the fast tier) marks them ignored or leaves their module out.

use tlskit_testkit::{hostile, net_support, run, show, store_pki, verify_pki};

/// The binary under test (the same file as `tlskit_testkit::run::bin()`).
pub const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

mod acme_dns_cli;
mod bounds_cli;
mod contract;
mod deb_package;
mod doctor_cli;
mod fuzz_regressions;
mod pki_cli;
#[cfg(feature = "slow-tests")] // slow tier: OpenSSL and GnuTLS as peers
mod pki_interop;
mod readme_examples;
mod serve_ranges;
mod store_cli;
mod trust_cli;
mod verify_cli;
mod verify_warnings_cli;

/// The test-support crate runs the binary Cargo built for these tests (its runner and
/// `Serve` find it beside the test binary).
#[test]
fn testkit_finds_the_binary() {
    let canon = |p: &std::path::Path| std::fs::canonicalize(p).expect("the binary exists");
    assert_eq!(canon(run::bin()), canon(std::path::Path::new(BIN)));
}
