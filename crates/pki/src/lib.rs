//! Certificate tooling for tlskit: private keys, certificate signing requests,
//! self-signed and CA-issued certificates, a small file-based CA, inspection (`show`),
//! lint, and PKCS#12 import/export.
//!
//! Writing uses rcgen, reading uses x509-parser, key generation uses aws-lc-rs, and every
//! DNS name goes through [`tlskit_names`] (UTS #46 to A-labels, dot lookalikes
//! refused by name). Files are written atomically; private keys are created with mode 0600
//! and never printed.
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
