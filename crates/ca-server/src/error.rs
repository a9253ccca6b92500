//! The error that stops `ca serve` (what problem documents answer to a client is in
//! `problem.rs`): each names the file or address it was about and why.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can stop the ACME server from starting or running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The CA directory could not be used (not a CA, unreadable, refused to issue the
    /// server's own certificate).
    #[error(transparent)]
    Pki(#[from] tlskit_pki::PkiError),
    /// A state or configuration file could not be read or written.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// `acme.toml` is malformed or inconsistent.
    #[error("{}: {reason}", path.display())]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another `ca serve` holds this CA directory's ACME lock.
    #[error("{}: another `tlskit ca serve` is running on this CA directory (its lock is held)", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// The listening socket could not be set up.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        #[source]
        reason: std::io::Error,
    },
    /// The TLS configuration of the server could not be built.
    #[error("the server's TLS configuration: {0}")]
    Tls(#[source] rustls::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl ServerError {
    pub(crate) fn file(path: impl Into<PathBuf>, reason: impl std::fmt::Display) -> Self {
        ServerError::File {
            path: path.into(),
            reason: reason.to_string(),
        }
    }
}
