#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
pub mod error;
pub mod settings;
pub mod storage;
pub mod check;
mod dns01;
mod challenge;
pub mod client;
pub mod manager;
mod ops;
mod account;
#[doc(hidden)]
pub mod fuzzing;

pub use account::{
    account_deactivate, account_restore, account_rollover, account_show, default_rescue_dirs,
    AccountOptions, AccountReport, AccountStatus,
};
pub use challenge::{accept, Accepted, Challenges};
pub use error::{AcmeError, Refusal, Refused};
pub use manager::{AcmeEvents, Managed, RenewalOutcome, RenewalRequest, ServerAcme};
pub use ops::{issue, renew, revoke, IssueOptions, IssueReport, RenewReport, RevokeOptions};
pub use settings::{dns_server, domain, AcmeSettings, ChallengeKind, DnsSettings, Eab};
pub use storage::{AcmeStorage, DnsRecord, FsStorage, IssuanceLock, StoredCert};
