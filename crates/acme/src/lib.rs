//! ACME (RFC 8555): certificates that get and renew themselves, for `tlskit serve --acme`
//! and for `tlskit acme issue|renew|revoke`. The protocol is `instant-acme`'s; this module
//! keeps the state ([`storage`]), answers the challenges (HTTP-01, TLS-ALPN-01), and
//! schedules renewals (ARI, RFC 9773, else two thirds of the lifetime) with backoff.
//!
//! The public API is blocking, like the rest of the crate: [`issue`], [`renew`],
//! [`revoke`]; the server side is wired by `Server::bind` from [`AcmeSettings`].

//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

pub mod error;
pub mod settings;
pub mod storage;
pub mod check;
mod challenge;
pub mod client;
pub mod manager;
mod ops;
#[doc(hidden)]
pub mod fuzzing;

pub use challenge::{accept, Accepted, Challenges};
pub use error::{AcmeError, Refusal, Refused};
pub use manager::{AcmeEvents, Managed, ServerAcme};
pub use ops::{issue, renew, revoke, IssueOptions, IssueReport, RenewReport, RevokeOptions};
pub use settings::{domain, AcmeSettings, ChallengeKind};
pub use storage::{AcmeStorage, FsStorage, IssuanceLock, StoredCert};
