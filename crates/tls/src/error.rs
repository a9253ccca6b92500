//! The error of tlskit's network crates (base, client, ACME, fleet, terminator): each
//! names what it was about (a file, an address) and why. Errors of the crates above this
//! one (STARTTLS replies, ACME) are carried boxed with their type kept, so that
//! `downcast_ref` finds them: `tlskit_client::starttls::StarttlsError`,
//! `tlskit_acme::AcmeError`.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::tls_text::tls_text;

/// Everything that can stop `serve` or `connect`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// A certificate or key file could not be read or parsed.
    #[error("{}: {reason}", shown_path(path))]
    File {
        /// The file.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// A private key on a PKCS#11 token could not be opened (the message names the URI,
    /// PIN redacted, and the reason).
    #[error(transparent)]
    Pkcs11(#[from] tlskit_pkcs11::Pkcs11Error),
    /// The private key does not belong to the certificate's public key.
    #[error(
        "{}: private key does not match the certificate in {}",
        shown_path(key),
        shown_path(cert)
    )]
    KeyMismatch {
        /// The certificate chain file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// A listening socket could not be set up.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        reason: std::io::Error,
    },
    /// Something in the configuration is inconsistent or invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// A name to connect to and verify is neither a DNS name nor an IP address (UTS #46).
    #[error("configuration: {0}")]
    Name(#[source] tlskit_verify::names::NameError),
    /// The trust store for client authentication or server verification could not load.
    #[error("trust store: {0}")]
    Store(#[source] tlskit_store::StoreError),
    /// A named trust store (the shared-state CA, say) could not load.
    #[error("trust store: {what}: {source}")]
    StoreOf {
        /// Which store: `shared-state CA`.
        what: &'static str,
        /// Why it did not load.
        #[source]
        source: tlskit_store::StoreError,
    },
    /// A trust store loaded but holds nothing usable, or its problems are told in a
    /// sentence of their own (the first few issues of each file).
    #[error("trust store: {0}")]
    StoreUnusable(String),
    /// rustls refused the configuration. Said through `tls_text` and not chained as a
    /// source: rustls's own Display names some errors with Rust `Debug` text.
    #[error("TLS configuration: {}", tls_text(.0))]
    Tls(rustls::Error),
    /// Could not reach the peer (name resolution, TCP connect, timeout).
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// HOST:PORT as given.
        target: String,
        /// Why.
        reason: String,
    },
    /// The TLS handshake failed for a reason other than certificate verification.
    #[error("TLS handshake with {target} failed: {reason}")]
    Handshake {
        /// HOST:PORT as given.
        target: String,
        /// Why.
        reason: String,
    },
    /// The plain-text STARTTLS dance before the handshake failed (the message quotes
    /// the server's reply).
    #[error("{target}: {reason}")]
    Starttls {
        /// HOST:PORT as given.
        target: String,
        /// What the server said or why it could not be read (shown in the message, not
        /// chained as a source, so it is printed once).
        reason: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// ACME: storage, the CA, validation (a `tlskit_acme::AcmeError`).
    #[error(transparent)]
    Acme(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// Any other I/O error (runtime start, relaying).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A file name or key spec as messages show it: a `pkcs11:` URI with its PIN and every
/// other secret hidden (`tlskit_pkcs11::redact_uri`), any other text through the one
/// redaction (`tlskit_x509::text::redact`).
pub(crate) fn shown_path(p: &std::path::Path) -> String {
    let text = p.to_string_lossy();
    if tlskit_pkcs11::is_uri(&text) {
        tlskit_pkcs11::redact_uri(&text)
    } else {
        tlskit_x509::text::redact(&text).into_owned()
    }
}

impl From<rustls::Error> for NetError {
    fn from(e: rustls::Error) -> Self {
        Self::Tls(e)
    }
}

impl NetError {
    /// A file that could not be read or parsed, and why.
    pub fn file(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        Self::File {
            path: path.into(),
            reason: reason.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;
    use tlskit_store::StoreError;

    /// The store's error is kept as a typed source, and the text is the one the CLI has
    /// always printed ("trust store: " and the store's sentence).
    #[test]
    fn a_store_error_is_kept_typed_with_the_same_text() {
        let e = NetError::Store(StoreError::NoSystemStore);
        assert_eq!(
            e.to_string(),
            format!("trust store: {}", StoreError::NoSystemStore)
        );
        let source = e.source().and_then(|s| s.downcast_ref::<StoreError>());
        assert!(
            matches!(source, Some(StoreError::NoSystemStore)),
            "{source:?}"
        );

        let e = NetError::StoreOf {
            what: "shared-state CA",
            source: StoreError::NoSystemStore,
        };
        assert_eq!(
            e.to_string(),
            format!(
                "trust store: shared-state CA: {}",
                StoreError::NoSystemStore
            )
        );
        assert!(e
            .source()
            .is_some_and(|s| s.downcast_ref::<StoreError>().is_some()));

        let e = NetError::StoreUnusable("roots: nothing loadable (no certificates)".into());
        assert_eq!(
            e.to_string(),
            "trust store: roots: nothing loadable (no certificates)"
        );
        assert!(e.source().is_none());
    }
}
