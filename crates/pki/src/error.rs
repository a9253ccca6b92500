//! The error type of the pki crate: each variant names the file (where there is one) and
//! the reason, so the CLI can print it as it is.

use std::path::PathBuf;

/// Why a pki operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An input file could not be read: missing, not a regular file (FIFO, device), or
    /// larger than its limit (named in the message).
    #[error(transparent)]
    Read(#[from] tlskit_io::ReadError),
    /// The output file exists and `--force` was not given.
    #[error("{}: already exists (use --force to replace it)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// A file's content could not be understood.
    #[error("{}: {reason}", path.display())]
    BadInput {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A distinguished name given by the user is malformed.
    #[error("invalid subject DN {input:?}: {reason}")]
    Dn {
        /// The DN as given.
        input: String,
        /// The problem.
        reason: String,
    },
    /// A subjectAltName given by the user is invalid.
    #[error("invalid SAN {input:?}: {reason}")]
    San {
        /// The SAN as given.
        input: String,
        /// The problem.
        reason: String,
    },
    /// A CA operation was refused (name constraints, path length, validity, ...).
    #[error("{0}")]
    Refused(String),
    /// Key and certificate do not belong together.
    #[error("{0}")]
    Mismatch(String),
    /// The PKCS#12 password is wrong.
    #[error("{}: wrong password (PKCS#12 MAC check failed)", path.display())]
    WrongPassword {
        /// The PKCS#12 file.
        path: PathBuf,
    },
    /// A file asks for more work than allowed (a PKCS#12 file's key-derivation cost).
    #[error("{}: {reason}", path.display())]
    Limit {
        /// The file.
        path: PathBuf,
        /// Which limit, and how to raise it.
        reason: String,
    },
    /// rcgen could not build or sign something.
    #[error("{context}: {source}")]
    Rcgen {
        /// What was being built.
        context: String,
        /// The rcgen error.
        source: rcgen::Error,
    },
    /// A key on a PKCS#11 token could not be used (the message names the URI, PIN
    /// redacted).
    #[error(transparent)]
    Pkcs11(#[from] tlskit_pkcs11::Pkcs11Error),
    /// Another error with its explanation.
    #[error("{0}")]
    Other(String),
}

impl From<tlskit_io::WriteError> for PkiError {
    fn from(e: tlskit_io::WriteError) -> Self {
        match e {
            tlskit_io::WriteError::Exists { path } => PkiError::Exists { path },
            tlskit_io::WriteError::Io { path, source } => PkiError::Io { path, source },
            // WriteError is non_exhaustive.
            other => PkiError::Other(other.to_string()),
        }
    }
}

impl PkiError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn bad(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::BadInput {
            path: path.into(),
            reason: reason.into(),
        }
    }
    pub(crate) fn rcgen(context: impl Into<String>) -> impl FnOnce(rcgen::Error) -> Self {
        let context = context.into();
        move |source| Self::Rcgen { context, source }
    }
}
