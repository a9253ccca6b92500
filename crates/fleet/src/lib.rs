//! tlskit fleet: the state a fleet of `tlskit serve` nodes shares through Redis.
//!
//! - [`shared`]: session-ticket keys sealed under a key-encryption key, rotated under a
//!   lease, announced and re-read, so a ticket made on one node resumes on every node.
//! - `acme_storage` (feature `acme`): the ACME account, certificates and challenge answers
//!   in the same Redis, so the fleet orders each name once and any node answers a
//!   validation.
//! - `resp`: the small RESP client these use, with one deadline per call and a cap on
//!   every reply by key type.
//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

mod resp;
pub mod shared;
#[cfg(feature = "acme")]
pub mod acme_storage;
#[doc(hidden)]
pub mod fuzzing;

#[cfg(feature = "acme")]
pub use acme_storage::RedisAcmeStorage;
pub use shared::{SharedSettings, SharedTickets};
