//! Soak tests of `tlskit serve`: many connections and reloads for a while, bounded
//! memory and file descriptors. A binary of their own so that nothing else runs beside
//! them.
//!
//! One test binary per group (ripgrep's pattern): each file below was a binary of its
//! own; grouped, they link aws-lc once.

#[path = "../net_support/mod.rs"]
mod net_support;

mod net_soak;
