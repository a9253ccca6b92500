#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod uri;
mod spki;
mod token;
mod signer;
mod list;
mod keygen;

// The public interface is:
/// The PIN type (zeroised on drop).
pub use cryptoki::types::AuthPin;
pub use error::Pkcs11Error;
pub use keygen::{generate, GenType, Generated};
pub use list::{list, ObjectEntry, SlotEntry, TokenEntry};
pub use signer::{RcgenKey, RustlsKey};
pub use token::{
    login_stats, set_default_module, KeyKind, LoginStats, PinRefusal, TokenKey, MODULE_ENV,
    PIN_ENV, SESSIONS_ENV,
};
pub use uri::{encode as uri_encode, is_uri, redact as redact_uri, ObjectType, Pkcs11Uri};
