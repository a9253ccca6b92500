//! tlskit-verify end to end: chain building, bounds, NIST PKITS, the profile rules,
//! the rustls verifiers.
//!
//! One test binary (ripgrep's pattern): each file below was a binary of its own.

#[path = "../common/mod.rs"]
mod common;

mod anchors;
mod chain;
mod chain_bounds;
mod input;
mod pkits;
mod profile;
mod same_subject;
mod tls;
