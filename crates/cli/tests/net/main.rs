//! The network commands against real peers: `serve` (terminator, reloads, limits,
//! metrics), interop with curl, OpenSSL, GnuTLS, nginx, HAProxy, Chromium, nghttpd,
//! Redis (and a hostile RESP server), `probe`/`connect` (STARTTLS too), ACME against Pebble, PKCS#11 with SoftHSM2,
//! outbound verification knobs and Pebble as shipped,
//! and the synthetic shapes of every Mozilla root (mozilla_shapes).
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.

use tlskit_testkit::{hostile, net_support};

/// The binary under test (the same file as `tlskit_testkit::run::bin()`).
pub const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

mod acme;
mod acme_hostile;
mod hostile_ca;
mod mozilla_shapes;
mod net_bounds;
mod net_interop;
mod net_serve;
mod outbound;
mod pkcs11;
mod probe_cli;
mod probe_starttls;
mod redis_hostile;
