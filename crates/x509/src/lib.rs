#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod certrules;
pub mod datetime;
pub mod der;
pub mod dn;
pub mod lintcode;
pub mod stats;
pub mod text;

pub use lintcode::{LintCode, Severity};
