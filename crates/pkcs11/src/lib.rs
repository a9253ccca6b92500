//! Private keys that never touch the disk: keys on PKCS#11 tokens (HSMs, smart cards,
//! SoftHSM2), named by RFC 7512 `pkcs11:` URIs, signing for rustls (handshakes) and for
//! rcgen (requests, certificates, a CA).
//!
//! [`TokenKey::open`] loads the module (once per process, shared), finds the token and
//! the private key, logs in once and keeps a pool of sessions: a handshake takes an idle
//! session, signs and gives it back, so there is no login per handshake and several
//! handshakes sign in parallel on several sessions. A wrong PIN stops at once (never
//! retried: tokens lock after a few wrong PINs). When the token goes away
//! (`CKR_DEVICE_REMOVED`, `CKR_TOKEN_NOT_PRESENT`, `CKR_SESSION_HANDLE_INVALID`, ...)
//! signing fails with a clear error and the next signature re-opens the token (at most one
//! attempt a second), so service comes back when the token does.
//!
//! The PIN comes from the URI (`pin-value=`, `pin-source=file:PATH`) or from the
//! environment variable `TLSKIT_PKCS11_PIN`; it is never logged nor shown (`Display` of a
//! URI prints `pin-value=***`). The module comes from the URI (`module-path=`), else from
//! [`set_default_module`] (the CLI's `--pkcs11-module`), else `TLSKIT_PKCS11_MODULE`.
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
