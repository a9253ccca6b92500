//! The network commands against real peers: `serve` (terminator, reloads, limits,
//! metrics), interop with curl, OpenSSL, GnuTLS, nginx, HAProxy, Chromium, nghttpd,
//! Redis (and a hostile RESP server), `probe`/`connect` (STARTTLS too), ACME against Pebble (DNS-01 with BIND's named too), PKCS#11 with SoftHSM2,
//! outbound verification knobs and Pebble as shipped,
//! and the synthetic shapes of every Mozilla root (mozilla_shapes).
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.
//!
//! Tiers: the tests that need an external program (a peer `scripts/setup` installs), a
//! `cargo install` or a million files run only with `--features slow-tests` (the slow
//! tier); plain `cargo test` (the fast tier) marks them ignored or leaves their module out.

use tlskit_testkit::{hostile, net_support};

/// The binary under test (the same file as `tlskit_testkit::run::bin()`).
pub const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

#[cfg(feature = "slow-tests")] // slow tier: Pebble, curl, OpenSSL, Redis
mod acme;
#[cfg(feature = "slow-tests")] // slow tier: Pebble, Redis
mod acme_accounts;
#[cfg(feature = "slow-tests")] // slow tier: named, Pebble, nsupdate, curl, Redis
mod acme_dns;
#[cfg(feature = "slow-tests")] // slow tier: Pebble
mod acme_short;
mod acme_hostile;
#[cfg(feature = "slow-tests")] // slow tier: certbot, lego, OpenSSL
mod ca_serve;
mod hostile_ca;
#[cfg(feature = "slow-tests")] // slow tier: python3, OpenSSL
mod mozilla_shapes;
mod net_bounds;
#[cfg(feature = "slow-tests")] // slow tier: every external peer
mod net_interop;
mod net_serve;
#[cfg(feature = "slow-tests")] // slow tier: Pebble, step-ca
mod outbound;
#[cfg(feature = "slow-tests")] // slow tier: SoftHSM2, OpenSC, GnuTLS
mod pkcs11;
mod probe_cli;
#[cfg(feature = "slow-tests")] // slow tier: exim4
mod probe_starttls;
mod redis_hostile;
#[cfg(feature = "slow-tests")] // slow tier: update-ca-certificates, curl, certutil, Chromium, keytool
mod trust_interop;
