//! tlskit-store end to end: sources, incremental loads, snapshots, large stores.
//!
//! One test binary (ripgrep's pattern): each file below was a binary of its own.

// The certificate builders, shared with the CLI's tests.
use tlskit_testkit::store_certs as common;

mod store_damage;
mod store_errors;
mod store_incremental;
mod store_large;
mod store_snapshot;
mod store_sources;
