#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
mod challenge;
pub mod check;
pub mod client;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod manager;
mod ops;
pub mod settings;
pub mod storage;

pub use challenge::{accept, Accepted, Challenges};
pub use error::{AcmeError, Refusal, Refused};
pub use manager::{AcmeEvents, Managed, ServerAcme};
pub use ops::{issue, renew, revoke, IssueOptions, IssueReport, RenewReport, RevokeOptions};
pub use settings::{domain, AcmeSettings, ChallengeKind};
pub use storage::{AcmeStorage, FsStorage, IssuanceLock, StoredCert};
