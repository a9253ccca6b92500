#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod error;
pub mod fsx;
pub mod dn;
pub mod san;
pub mod key;
mod constraints;
pub mod cert;
pub mod ca;
pub mod inspect;
pub mod lint;
pub mod p12;
pub mod chain;

pub use error::{PkiError, Result};
