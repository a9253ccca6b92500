#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod ca;
pub mod cert;
pub mod chain;
mod constraints;
pub mod dn;
mod error;
pub mod fsx;
pub mod inspect;
pub mod key;
pub mod lint;
pub mod p12;
pub mod san;

pub use error::PkiError;

/// Result type of this crate.
pub type Result<T, E = PkiError> = std::result::Result<T, E>;
