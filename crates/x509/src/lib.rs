#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod text;
pub mod datetime;
pub mod stats;
pub mod der;
pub mod dn;
pub mod certrules;
pub mod lintcode;
pub mod revocation;

pub use lintcode::{LintCode, Severity};
pub use revocation::RevocationReason;
