//! Typed errors: per-file load issues (the load goes on) and store-level errors.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Largest file the store reads (bundle, DER file or snapshot source file): 64 MiB.
/// Larger files are reported as [`IssueKind::TooLarge`] and skipped. A snapshot file is
/// read whole after its header is checked, and has its own limit
/// ([`crate::MAX_SNAPSHOT_BYTES`]).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Most problems of one kind ([`IssueKind::tag`]) a load keeps with their paths; the
/// rest are only counted ([`crate::LoadReport::error_counts`]), so memory stays bounded
/// whatever the input (a million bad files, a million bad blocks).
pub const MAX_ISSUES_PER_KIND: usize = 1000;

/// Why one input (a file, a PEM block, a certificate) was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IssueKind {
    /// The file could not be opened or read.
    #[error("unreadable: {0}")]
    Unreadable(String),
    /// A symlink chain loops, or is deeper than the system follows (ELOOP: 40 links on
    /// Linux).
    #[error("symlink loop (or more than 40 levels of symbolic links)")]
    SymlinkLoop,
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("file too large ({size} bytes; limit {limit} bytes)")]
    TooLarge {
        /// The file's size, in bytes.
        size: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Not a regular file (device, FIFO, socket).
    #[error("not a regular file")]
    NotRegular,
    /// A malformed PEM block (missing END, bad base64, ...).
    #[error("bad PEM block: {0}")]
    BadPem(&'static str),
    /// A private key block: skipped, never loaded, never shown.
    #[error("private key block ({label}) skipped: not loaded, contents not shown")]
    PrivateKey {
        /// The PEM label (e.g. `PRIVATE KEY`).
        label: String,
    },
    /// A well-formed PEM block that is not a certificate (CRL, CSR, public key, ...).
    #[error("not a certificate ({label} block) skipped")]
    NotCertificate {
        /// The PEM label (e.g. `X509 CRL`).
        label: String,
    },
    /// Bytes that are not a well-formed DER certificate.
    #[error("malformed DER certificate: {0}")]
    MalformedDer(&'static str),
    /// A well-formed certificate that cannot be a trust anchor: basicConstraints does not
    /// say cA (and it is not a legacy v1 self-issued root). Reported, not loaded.
    #[error("not a CA certificate (basicConstraints cA is not set): not loaded as an anchor; subject {subject}")]
    NotCa {
        /// The certificate's subject, RFC 4514-like.
        subject: String,
    },
    /// Neither a PEM block nor a DER certificate in the file.
    #[error("no certificate found (no PEM block, not DER)")]
    NoCertificates,
    /// The certificate's subject is larger than a TLS CA-name entry can carry.
    #[error("subject name too large ({0} bytes)")]
    SubjectTooLarge(usize),
    /// A snapshot file could not be used.
    #[error("{0}")]
    Snapshot(#[from] SnapshotError),
    /// A source recorded in a snapshot changed after the snapshot was built.
    #[error("snapshot is stale: source {0}")]
    Stale(String),
    /// One anchor of a snapshot failed its integrity check and is never returned.
    #[error("snapshot anchor #{index} failed its integrity check ({reason}): not trusted")]
    CorruptAnchor {
        /// Its position in the snapshot (0-based, as `store show --list` counts).
        index: u32,
        /// What is wrong with it.
        reason: AnchorDamage,
    },
}

impl IssueKind {
    /// A short, stable tag for JSON output and lint findings (the text of [`Self::code`]).
    pub fn tag(&self) -> &'static str {
        self.code().as_str()
    }

    /// The typed code of this issue, as `store lint` reports it.
    pub fn code(&self) -> tlskit_x509::lintcode::LintCode {
        use tlskit_x509::lintcode::LintCode as C;
        match self {
            IssueKind::Unreadable(_) => C::Unreadable,
            IssueKind::SymlinkLoop => C::SymlinkLoop,
            IssueKind::TooLarge { .. } => C::TooLarge,
            IssueKind::NotRegular => C::NotRegular,
            IssueKind::BadPem(_) => C::BadPem,
            IssueKind::PrivateKey { .. } => C::PrivateKey,
            IssueKind::NotCertificate { .. } => C::NotCertificate,
            IssueKind::MalformedDer(_) => C::MalformedDer,
            IssueKind::NotCa { .. } => C::NonCa,
            IssueKind::NoCertificates => C::NoCertificates,
            IssueKind::SubjectTooLarge(_) => C::SubjectTooLarge,
            IssueKind::Snapshot(_) => C::BadSnapshot,
            IssueKind::Stale(_) => C::StaleSnapshot,
            IssueKind::CorruptAnchor { .. } => C::CorruptAnchor,
        }
    }
}

/// One problem with one input, with its path. The load goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadIssue {
    /// The file (or directory entry) the problem is in.
    pub path: PathBuf,
    /// 1-based index of the PEM block (or DER element) in the file, where it applies.
    pub block: Option<u32>,
    /// What is wrong.
    pub reason: IssueKind,
}

impl LoadIssue {
    pub(crate) fn new(path: impl Into<PathBuf>, reason: IssueKind) -> Self {
        LoadIssue {
            path: path.into(),
            block: None,
            reason,
        }
    }
    pub(crate) fn at(path: impl Into<PathBuf>, block: u32, reason: IssueKind) -> Self {
        LoadIssue {
            path: path.into(),
            block: Some(block),
            reason,
        }
    }
}

impl fmt::Display for LoadIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.block {
            Some(b) => write!(f, "{}: block {b}: {}", self.path.display(), self.reason),
            None => write!(f, "{}: {}", self.path.display(), self.reason),
        }
    }
}

impl std::error::Error for LoadIssue {}

/// Why a snapshot anchor failed its integrity check (the anchor is never trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnchorDamage {
    /// Its DER does not hash to the SHA-256 fingerprint recorded for it.
    #[error(
        "its DER does not hash to its recorded SHA-256 fingerprint: bytes were changed in the file"
    )]
    Digest,
    /// Its DER hashes right but is not a certificate tlskit reads (or its record points
    /// outside the file's DER).
    #[error("its DER is not a readable certificate")]
    Unreadable,
    /// Its DER differs from its index record (subject, key identifier, validity, CA flag).
    #[error(
        "its DER does not match its index record (subject, key identifier, validity or CA flag)"
    )]
    Record,
}

/// Why a snapshot file was rejected. A rejected snapshot is never trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file could not be opened or read.
    #[error("cannot read snapshot: {reason}")]
    Io {
        /// Why, in words.
        reason: String,
        /// The error behind it: the operating system's `std::io::Error`, or tlskit-io's
        /// `ReadError` for a file refused before reading.
        #[source]
        cause: Cause,
    },
    #[error("not a tlskit snapshot (bad magic)")]
    /// The file does not start with [`crate::MAGIC`].
    BadMagic,
    /// Written in a format version this code does not read.
    #[error("unsupported snapshot version {found} (this tlskit reads version {supported}); rebuild it with `tlskit store build`")]
    WrongVersion {
        /// The file's version.
        found: u32,
        /// The version this code reads ([`crate::VERSION`]).
        supported: u32,
    },
    /// The file is shorter or longer than its header says.
    #[error("snapshot truncated or extended: {0}")]
    Truncated(String),
    /// The header's xxh3 does not match.
    #[error("snapshot header checksum mismatch: file altered or corrupt")]
    HeaderChecksum,
    /// The index part's xxh3 does not match.
    #[error("snapshot index checksum mismatch: file altered or corrupt")]
    TableChecksum,
    /// Sections or tables that do not fit together.
    #[error("snapshot layout inconsistent: {0}")]
    Layout(&'static str),
    /// Larger than [`crate::MAX_SNAPSHOT_BYTES`] (the size in bytes).
    #[error("snapshot too large ({0} bytes)")]
    TooLarge(u64),
    /// Anchors whose DER or record failed the integrity check (a full check).
    #[error("{count} snapshot anchor(s) failed their integrity check, first #{first} ({reason})")]
    CorruptAnchors {
        /// How many anchors failed.
        count: usize,
        /// The index of the first that failed.
        first: u32,
        /// What is wrong with the first.
        reason: AnchorDamage,
    },
}

/// " (PATH: reason)" for the first issue, and the count of the others.
fn nothing_detail(issues: &[LoadIssue], counts: &BTreeMap<&'static str, usize>) -> String {
    let total = counts.values().sum::<usize>().max(issues.len());
    match issues.first() {
        None if total == 0 => String::new(),
        None => format!(" ({total} problem(s) reported)"),
        Some(first) if total <= 1 => format!(" ({first})"),
        Some(first) => format!(" ({first}; and {} more problem(s))", total - 1),
    }
}

/// Store-level failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No source yielded a single anchor. Carries the per-file issues (at most
    /// [`MAX_ISSUES_PER_KIND`] of each kind) and (+) the count of every issue by kind.
    /// Displays the first problem itself (a reload that keeps the last good store logs
    /// why), then how many more there were.
    #[error("nothing loadable: no trust anchor found{}", nothing_detail(.issues, .counts))]
    NothingLoadable {
        /// The issues kept (at most [`MAX_ISSUES_PER_KIND`] of each kind).
        issues: Vec<LoadIssue>,
        /// Every issue counted, by kind tag.
        counts: BTreeMap<&'static str, usize>,
    },
    /// No system trust store was found on this machine.
    #[error(
        "no system trust store found (checked SSL_CERT_FILE, SSL_CERT_DIR and the usual paths)"
    )]
    NoSystemStore,
    /// A snapshot file could not be used.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A file (a snapshot, a pruned certificate's backup) could not be written.
    #[error("cannot write {}: {}", path.display(), write_reason(source))]
    Write {
        /// The file.
        path: PathBuf,
        /// Why, as tlskit-io's writer reports it.
        source: tlskit_io::WriteError,
    },
    /// Prune was given a snapshot or the system store: it works on a file or a directory
    /// of certificate files.
    #[error(
        "cannot write {}: prune works on a file or a directory of certificate files",
        path.display()
    )]
    NotPrunable {
        /// The snapshot's path, or `system`.
        path: PathBuf,
    },
    /// Reloads on a signal or on source changes could not be set up (the signal
    /// handler, the watcher, a directory watch or the background thread).
    #[error("cannot watch: {}{source}", watch_prefix(dir.as_deref()))]
    Watch {
        /// The directory that could not be watched, when the failure was about one.
        dir: Option<PathBuf>,
        /// The underlying error: a `std::io::Error` (signal handler, thread) or the file
        /// watcher's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// More anchors or bytes than a store can index (what overflowed).
    #[error("store too large: {0}")]
    Capacity(&'static str),
}

/// The reason part of [`StoreError::Write`]: an I/O failure as the operating system
/// words it, any other refusal as tlskit-io words it.
fn write_reason(e: &tlskit_io::WriteError) -> String {
    match e {
        tlskit_io::WriteError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// "DIR: " before a directory watch's failure, nothing otherwise.
fn watch_prefix(dir: Option<&std::path::Path>) -> String {
    dir.map(|d| format!("{}: ", d.display()))
        .unwrap_or_default()
}

impl StoreError {
    /// [`StoreError::Watch`] for a failure not about one directory.
    pub(crate) fn watch(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Watch {
            dir: None,
            source: Box::new(e),
        }
    }
}

/// The error behind a [`SnapshotError::Io`], shared by the clones of the report that
/// carries it. It displays as that error does and gives it as its `source()` (or with
/// [`Cause::get`]); two causes are equal when their messages are.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    pub(crate) fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Cause(Arc::new(e))
    }
    /// The error itself, e.g. to `downcast_ref::<std::io::Error>()`.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.get())
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

impl SnapshotError {
    /// [`SnapshotError::Io`]: `reason` in words, `e` kept as the cause.
    pub(crate) fn io(
        reason: impl Into<String>,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SnapshotError::Io {
            reason: reason.into(),
            cause: Cause::new(e),
        }
    }
}
