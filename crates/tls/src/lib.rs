#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
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
