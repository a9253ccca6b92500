#![doc = include_str!("../README.md")]
//!
//! ## The items at a glance
//!
//! - [`ChainVerifier`]: builds chains by looking candidate issuers up in a
//!   [`tlskit_store::TrustStore`]'s index and hands only those to rustls-webpki. Its cost
//!   does not depend on the number of anchors in the store.
//! - [`StoreServerVerifier`] / [`StoreClientVerifier`]: rustls verifiers that follow a
//!   [`tlskit_store::StoreHandle`]'s live reloads.
//! - [`GenerationTickets`], [`GenerationSessionCache`], [`GenerationClientSessions`]:
//!   resumption that a store reload invalidates.
//! - [`names`]: the one module that turns typed names into A-labels.
#![deny(missing_docs)]

// Modules in layer order, bottom first: each uses only modules declared above it
// (rustfmt keeps the order because every module is a group of its own).

// Counted signature algorithms.
mod count;

// Purpose: what the end entity must be good for.
mod purpose;

// Crl: a parsed revocation list.
mod crl;

// The profile rules checked on every candidate path.
mod profile;

// The RFC 5280 path validator for what rustls-webpki refuses.
mod rfc5280;

// The answer of a verification.
mod verified;

// The verification cache.
mod cache;

// Chain building and verification on the store's index.
mod chain;

// Certificates and CRLs read from files.
mod input;

// Resumption bound to the store generation.
mod resume;

// rustls verifiers.
mod tls;

pub use cache::CacheLimits;
pub use chain::{
    ChainVerifier, VerifierConfig, VerifyError, MAX_ISSUER_CANDIDATES, MAX_SUPPORTED_DEPTH,
    WEBPKI_MAX_DEPTH,
};
pub use count::signature_checks_on_thread;
pub use crl::{Crl, CrlEntry, CrlSigner, MAX_CRL_SIGNERS};
pub use input::{load_certs, load_crl, InputError, MAX_INPUT_BYTES};
pub use profile::{CertRole, Profile, Rule, UnknownName, Violation};
pub use purpose::Purpose;
pub use resume::{GenerationClientSessions, GenerationSessionCache, GenerationTickets};
pub use tls::{
    hint_names, CertificateRefusal, HintOverflow, RootHints, StoreClientVerifier,
    StoreServerVerifier, MAX_HINT_BYTES, MAX_HINT_SETS,
};
pub use verified::{Verified, VerifiedChain};

/// Re-exported so embedders use the same rustls version.
pub use rustls;
/// Types from rustls-pki-types that appear in this crate's API.
pub use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
/// The one conversion of typed names (the `tlskit-names` crate).
pub use tlskit_names as names;
