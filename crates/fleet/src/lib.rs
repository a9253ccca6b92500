#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
mod resp;
pub mod shared;
#[cfg(feature = "acme")]
pub mod acme_storage;
#[doc(hidden)]
pub mod fuzzing;

#[cfg(feature = "acme")]
pub use acme_storage::RedisAcmeStorage;
pub use shared::{SharedSettings, SharedTickets};
