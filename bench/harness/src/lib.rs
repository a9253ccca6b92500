#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod store;
pub mod verify;

pub use error::BenchError;

pub use store::StoreBench;
pub use verify::{VerifyBench, VerifyOptions};
