//! Test support shared by the tests of the tlskit crates: one copy of each helper, taken
//! as a dev-dependency (`tlskit-testkit = { path = "../testkit" }`) instead of `#[path]`
//! includes across crates. Unpublished (`publish = false`); it depends on no tlskit crate,
//! so every crate, the lowest included, can use it without a cycle.
//!
//! - [`run`]: the command runner of the CLI tests (`tlskit ARGS` in a directory).
//! - [`pki`]: the rcgen parameters the default (webpki) verification profile accepts.
//! - [`net_support`]: a PKI on disk, a `tlskit serve` child killed on drop, peers
//!   (Redis), schema checks and small network utilities.
//! - [`store_certs`]: the store tests' certificate builders; [`store_pki`] the CLI's
//!   store, bounds and fuzz-replay PKI built on them.
//! - [`verify_pki`]: the PKI of the `tlskit verify` tests.
//! - [`hostile`]: hostile names and malformed keys (issue 12).
//! - [`show`]: `show --json` in the shape the older pki tests expect.
//! - [`layers`]: the layer check of the library crates (no import loop, no upward
//!   import between the modules of a crate), run by `tests/layers.rs`.
//!
//! Test code: a failed set-up panics with a message rather than returning an error.
#![allow(clippy::unwrap_used)]

// Bottom first (the layer check holds this crate too).
// Bottom first: a module uses only those above it (the layer check holds this crate too).
pub mod hostile;
pub mod layers;
pub mod pki;
pub mod run;
pub mod show;
pub mod store_certs;
pub mod verify_pki;
pub mod net_support;
pub mod store_pki;
