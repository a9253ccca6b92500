//! tlskit tls: the base that tlskit's TLS client (`tlskit-client`), terminator
//! (`tlskit-server`), ACME (`tlskit-acme`) and fleet (`tlskit-fleet`) crates share.
//!
//! - [`clock`]: where "now" comes from ([`Clock`]): the system's clocks by default, a
//!   [`ManualClock`] that tests move.
//! - [`keys`]: a served chain and its private key (PEM file or PKCS#11 URI), checked to
//!   belong together.
//! - [`compress`]: certificate compression (RFC 8879) with a cache of compressed chains.
//! - [`versions`]: protocol versions as tlskit spells them.
//! - [`sock`]: socket options every TLS socket gets (TCP_NODELAY, a send buffer that holds
//!   a whole flight) and listeners.
//! - [`log`] and [`ratelimit`]: structured log events and their rate limits.
//! - [`tls_text`]: rustls errors as sentences.
//! - [`NetError`]: the error of every network crate.
//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

pub mod clock;
pub mod tls_text;
pub mod log;
pub mod ratelimit;
pub mod error;
pub mod sock;
pub mod versions;
pub mod compress;
pub mod keys;

pub use clock::{Clock, ManualClock, SystemClock};
pub use compress::Compression;
pub use error::NetError;
pub use keys::{load_certified_key, load_signing_key};
pub use sock::SEND_BUFFER;
pub use versions::{version_name, TlsVersion};
