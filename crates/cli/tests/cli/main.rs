//! Commands end to end through the `tlskit` binary: store, verify, pki (with OpenSSL and
//! GnuTLS as peers), input bounds, the JSON and exit-code contract, doctor, and the replay
//! of saved fuzz inputs.
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.

#[path = "../common/hostile.rs"]
mod hostile;
#[path = "../net_support/mod.rs"]
mod net_support;
use net_support::run;
#[path = "../common/show.rs"]
mod show;
#[path = "../common/store_pki.rs"]
mod store_pki;
#[path = "../common/verify_pki.rs"]
mod verify_pki;

mod bounds_cli;
mod contract;
mod doctor_cli;
mod fuzz_regressions;
mod pki_cli;
mod pki_interop;
mod serve_ranges;
mod store_cli;
mod verify_cli;
mod verify_warnings_cli;
