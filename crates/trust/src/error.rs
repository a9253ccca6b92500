//! The one error type of the crate: what went wrong, with the file or command it concerns.

use std::path::PathBuf;

/// Why an install, uninstall or list failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The CA file could not be read.
    #[error(transparent)]
    Read(#[from] tlskit_io::ReadError),
    /// A file could not be written atomically.
    #[error(transparent)]
    Write(#[from] tlskit_io::WriteError),
    /// The file holds no certificate, several, or one that does not parse.
    #[error("{}: {reason}", path.display())]
    BadCertificate {
        /// The file as given.
        path: PathBuf,
        /// Why (a sentence; never the file's bytes).
        reason: String,
    },
    /// The certificate is not a CA certificate: installing it as a trust anchor is refused.
    #[error("{}: not a CA certificate ({reason}); refused", path.display())]
    NotACa {
        /// The file as given.
        path: PathBuf,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A file-system operation failed.
    #[error("{}: {what}", path.display())]
    Io {
        /// The path it concerned.
        path: PathBuf,
        /// What was being done (`cannot remove`, ...).
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An external command could not be started, ran past its deadline or failed.
    #[error("{program}: {reason}")]
    Command {
        /// The program as run.
        program: String,
        /// What happened, with its last output lines escaped.
        reason: String,
    },
    /// A journal file is not one this version wrote.
    #[error("{}: not a tlskit trust journal ({reason})", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The CA is already installed (a journal for it exists).
    #[error("already installed by tlskit (journal {}); uninstall it first to install it again", journal.display())]
    AlreadyInstalled {
        /// Its journal.
        journal: PathBuf,
    },
    /// A target asked for is not present on this machine (or under the root tree).
    #[error("{target}: {reason}")]
    TargetMissing {
        /// The target's name.
        target: &'static str,
        /// What was looked for.
        reason: String,
    },
    /// No target at all was found.
    #[error("no trust store found to install into ({0})")]
    NoTarget(String),
    /// The undo of a journal left some steps undone (each with its reason); the journal is
    /// kept so that a second `uninstall` can finish.
    #[error("{} step(s) could not be undone: {}; the journal {} is kept", failures.len(), failures.join("; "), journal.display())]
    Undo {
        /// The journal kept.
        journal: PathBuf,
        /// One sentence per step.
        failures: Vec<String>,
    },
    /// An install step failed; what was done before it was undone.
    #[error("{step}: {source}; the steps before it were undone{}", if rollback.is_empty() { String::new() } else { format!(" except: {}", rollback.join("; ")) })]
    Install {
        /// The step that failed, in words.
        step: String,
        /// Why.
        #[source]
        source: Box<TrustError>,
        /// Steps whose undo failed too (the journal is then kept).
        rollback: Vec<String>,
    },
}

impl TrustError {
    pub(crate) fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        TrustError::Io {
            path: path.into(),
            what,
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = TrustError> = std::result::Result<T, E>;
