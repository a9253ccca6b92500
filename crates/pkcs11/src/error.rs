//! Errors of the PKCS#11 layer: each names the URI (PIN redacted), the token or the module,
//! and the PKCS#11 return value by its CKR_ name.

use std::path::PathBuf;

/// Why a token key could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Pkcs11Error {
    /// The URI is malformed.
    #[error("{uri}: not a valid PKCS#11 URI: {reason}")]
    BadUri {
        /// The URI as given (PIN redacted, control characters escaped).
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// No module was named.
    #[error("{uri}: no PKCS#11 module: add module-path=/path/to/module.so to the URI, or give --pkcs11-module (or TLSKIT_PKCS11_MODULE)")]
    NoModule {
        /// The URI.
        uri: String,
    },
    /// The module could not be loaded or initialised.
    #[error("{}: cannot load the PKCS#11 module: {reason}", path.display())]
    Module {
        /// The module path.
        path: PathBuf,
        /// The loader's or the module's reason.
        reason: String,
    },
    /// The module file could not be looked at.
    #[error("{}: cannot load the PKCS#11 module: {source}", path.display())]
    ModuleIo {
        /// The module path.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The PIN file could not be looked at or read.
    #[error("{}: cannot read the PIN file: {source}", path.display())]
    PinFileIo {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The PIN file could not be read.
    #[error("{}: cannot read the PIN file: {reason}", path.display())]
    PinFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No token matches the URI.
    #[error("{uri}: no token matches (tokens present: {present})")]
    NoToken {
        /// The URI.
        uri: String,
        /// The labels of the tokens present.
        present: String,
    },
    /// No key object matches the URI, or several do.
    #[error("{uri}: {reason}")]
    Object {
        /// The URI.
        uri: String,
        /// What was found.
        reason: String,
    },
    /// The token needs a PIN and none was given.
    #[error("{uri}: token {token:?} needs a PIN: add pin-source=file:PATH to the URI or set TLSKIT_PKCS11_PIN")]
    NoPin {
        /// The URI.
        uri: String,
        /// The token label.
        token: String,
    },
    /// C_Login said CKR_PIN_INCORRECT. Not retried.
    #[error("{uri}: wrong PIN for token {token:?} (CKR_PIN_INCORRECT; not retried: tokens lock after a few wrong PINs)")]
    PinIncorrect {
        /// The URI.
        uri: String,
        /// The token label.
        token: String,
    },
    /// The token refused this PIN before (in this process): no login is tried again
    /// with it until the PIN given changes.
    #[error("{uri}: token {token:?} refused this PIN before ({rv}); the key stays disabled and no login is tried with the same PIN again: correct the PIN where it comes from (the URI's pin-value, the pin-source file or TLSKIT_PKCS11_PIN), then reload")]
    PinRefused {
        /// The URI.
        uri: String,
        /// The token label.
        token: String,
        /// What the token answered then: `CKR_PIN_INCORRECT` or `CKR_PIN_LOCKED`.
        rv: String,
    },
    /// The user PIN is locked, or one more wrong PIN would lock it.
    #[error("{uri}: token {token:?}: {reason}")]
    PinLocked {
        /// The URI.
        uri: String,
        /// The token label.
        token: String,
        /// Locked, or on its final try.
        reason: String,
    },
    /// The token is gone (removed, or its sessions were closed) and could not be re-opened.
    #[error("{uri}: token unavailable: {reason}")]
    TokenGone {
        /// The URI.
        uri: String,
        /// The last PKCS#11 error.
        reason: String,
    },
    /// The key cannot do what was asked (type or mechanism).
    #[error("{uri}: {reason}")]
    Unsupported {
        /// The URI.
        uri: String,
        /// Why.
        reason: String,
    },
    /// A PKCS#11 call failed.
    #[error("{uri}: {call} failed: {rv}")]
    Call {
        /// The URI (or module) it was about.
        uri: String,
        /// The PKCS#11 function.
        call: String,
        /// The CKR_ name.
        rv: String,
    },
}

/// The CKR_ name of a cryptoki error (`PinIncorrect` -> `CKR_PIN_INCORRECT`), or the
/// error's text for errors that are not a PKCS#11 return value.
pub(crate) fn rv_name(e: &cryptoki::error::Error) -> String {
    match e {
        cryptoki::error::Error::Pkcs11(rv, _) => {
            let dbg = format!("{rv:?}");
            let mut out = String::from("CKR_");
            for (i, c) in dbg.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_uppercase());
            }
            out
        }
        other => other.to_string(),
    }
}

/// The function name of a cryptoki error (`C_Login`), if it has one.
pub(crate) fn call_name(e: &cryptoki::error::Error, fallback: &str) -> String {
    match e {
        cryptoki::error::Error::Pkcs11(_, f) => format!("C_{f:?}"),
        _ => fallback.to_string(),
    }
}
