//! Certificate sources: PEM bundles, DER files, directories, the system default, and
//! snapshot files; and `load`, which turns a list of sources into a store.
//!
//! A file reached through several paths (Debian's `/etc/ssl/certs` symlinks, OpenSSL hash
//! links `abcd1234.0`) is read once: files are keyed by (device, inode) after following
//! links. A certificate present in several different files is one anchor (keyed by
//! SHA-256); the repeats are counted as duplicates. Directories are read flat, like
//! OpenSSL's CApath: subdirectories are not descended. Entries are read in byte order of
//! their names, so results are deterministic.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use crate::builder::{prepare, Added, Prepared, StoreBuilder};
use crate::error::{
    AnchorDamage, IssueKind, LoadIssue, StoreError, MAX_FILE_BYTES, MAX_ISSUES_PER_KIND,
};
use crate::origin::SourceRecord;
use crate::pem::{self, Block, PemScanner};
use crate::snapshot;
use crate::store::{now_unix, TrustStore};
use tlskit_x509::der;

/// Where certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A PEM bundle (any number of certificates, text around blocks ignored) or a DER file.
    File(PathBuf),
    /// A directory of certificate files (flat; symlinks and hash links followed).
    Dir(PathBuf),
    /// A snapshot built by `tlskit store build`.
    Snapshot(PathBuf),
    /// This machine's default store (see [`system_store`]).
    System,
}

impl Source {
    /// A command-line SRC: "system" → System; a snapshot file (detected by magic) →
    /// Snapshot; a directory → Dir; otherwise File.
    pub fn from_arg(arg: &str) -> Source {
        if arg == "system" {
            return Source::System;
        }
        let p = PathBuf::from(arg);
        if p.is_dir() {
            return Source::Dir(p);
        }
        if snapshot::has_magic(&p) {
            return Source::Snapshot(p);
        }
        Source::File(p)
    }

    /// The path, if the source has one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::File(p) | Source::Dir(p) | Source::Snapshot(p) => Some(p),
            Source::System => None,
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::System => f.write_str("system"),
            Source::File(p) | Source::Dir(p) | Source::Snapshot(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Where this machine's default trust store was found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemStore {
    /// The sources to load: the bundle file or the directory found.
    pub sources: Vec<Source>,
    /// How it was chosen: "SSL_CERT_FILE", "SSL_CERT_DIR", or "default path".
    pub chosen_by: String,
    /// Every candidate checked, with whether it exists.
    pub candidates: Vec<(PathBuf, bool)>,
}

/// The usual Linux bundle locations, in the order they are tried.
pub const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];
/// The usual directories, tried when no bundle exists.
pub const SYSTEM_DIRS: &[&str] = &[
    "/etc/ssl/certs",
    "/etc/pki/tls/certs",
    "/system/etc/security/cacerts",
];

/// Find this machine's default store: `SSL_CERT_FILE` and/or `SSL_CERT_DIR` (colon
/// separated) if set, else the first existing bundle of [`SYSTEM_BUNDLES`], else the first
/// existing directory of [`SYSTEM_DIRS`].
pub fn system_store() -> Result<SystemStore, StoreError> {
    let mut sources = Vec::new();
    let mut chosen = Vec::new();
    let mut candidates = Vec::new();
    if let Some(f) = std::env::var_os("SSL_CERT_FILE").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(f);
        candidates.push((p.clone(), p.exists()));
        sources.push(Source::File(p));
        chosen.push("SSL_CERT_FILE");
    }
    if let Some(d) = std::env::var_os("SSL_CERT_DIR").filter(|v| !v.is_empty()) {
        for p in std::env::split_paths(&d) {
            candidates.push((p.clone(), p.exists()));
            sources.push(Source::Dir(p));
        }
        chosen.push("SSL_CERT_DIR");
    }
    if !sources.is_empty() {
        return Ok(SystemStore {
            sources,
            chosen_by: chosen.join(" + "),
            candidates,
        });
    }
    // The first default bundle file, else the first default directory.
    let defaults = SYSTEM_BUNDLES
        .iter()
        .map(|b| (PathBuf::from(b), true))
        .chain(SYSTEM_DIRS.iter().map(|d| (PathBuf::from(d), false)));
    for (p, bundle) in defaults {
        let ok = if bundle { p.is_file() } else { p.is_dir() };
        candidates.push((p.clone(), ok));
        if ok {
            return Ok(SystemStore {
                sources: vec![if bundle {
                    Source::File(p)
                } else {
                    Source::Dir(p)
                }],
                chosen_by: "default path".into(),
                candidates,
            });
        }
    }
    Err(StoreError::NoSystemStore)
}

/// What a load did: counts and every per-file problem.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Distinct files read (a file reached via several paths counts once).
    pub files: usize,
    /// Unique certificates loaded.
    pub anchors: usize,
    /// Certificates seen again after their first copy (same SHA-256).
    pub duplicates: usize,
    /// Anchors past their notAfter at load time (they stay loaded: lookups return every
    /// anchor with a subject, and validity is the verifier's decision).
    pub expired: usize,
    /// Paths skipped because they lead to a file already read (symlinks, hash links).
    pub aliases: usize,
    /// Per-file problems, at most [`MAX_ISSUES_PER_KIND`] of each kind (in the order
    /// met); the rest are only counted, so a directory of a million bad files or a bundle
    /// of a million bad blocks costs bounded memory.
    pub errors: Vec<LoadIssue>,
    /// Wall time of the load, in milliseconds.
    pub load_ms: f64,
    /// (+) Every problem met, by kind tag ([`IssueKind::tag`]), including those not
    /// kept in `errors`.
    pub error_counts: BTreeMap<&'static str, usize>,
    /// (+) Problems counted but not kept in `errors` (over [`MAX_ISSUES_PER_KIND`]).
    pub errors_omitted: usize,
}

impl LoadReport {
    /// Record one problem: counted always, kept in `errors` while its kind has fewer than
    /// [`MAX_ISSUES_PER_KIND`] entries.
    pub fn push_issue(&mut self, issue: LoadIssue) {
        let n = self.error_counts.entry(issue.reason.tag()).or_insert(0);
        *n += 1;
        if *n <= MAX_ISSUES_PER_KIND {
            self.errors.push(issue);
        } else {
            self.errors_omitted += 1;
        }
    }

    /// The error for a load that found no anchor: its issues and counts.
    pub(crate) fn into_nothing_loadable(self) -> StoreError {
        StoreError::NothingLoadable {
            issues: self.errors,
            counts: self.error_counts,
        }
    }

    /// Every problem met (kept in `errors` or only counted).
    pub fn errors_total(&self) -> usize {
        self.errors.len() + self.errors_omitted
    }
}

/// Files larger than this are read and processed in rounds (see `add_stream`).
const STREAM_MIN_BYTES: usize = 1 << 20;

/// How a large file is cut into rounds: round `k` covers the text from the first BEGIN
/// line at or after `k * size` (0 for the first round) to the first BEGIN line at or after
/// `(k + 1) * size` (the end of the file for the last round). Each round is found and read
/// on its own (`pread`), so rounds can be prepared in any order on any thread; a block
/// larger than a round makes the rounds it covers empty. Every byte is scanned by one
/// round only, plus at most one round's worth of look-ahead per round: linear.
struct RoundPlan {
    size: u64,
    rounds: usize,
}

/// CPUs this process may use, asked once: `available_parallelism` reads the cgroup's
/// quota and the affinity mask on every call (13 µs here, 0.4 % of a 10,000-anchor load).
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// Chunks the worker thread of `add_stream` may have in flight.
const WORKER_CHUNKS: usize = 3;

/// Length of "-----BEGIN " minus one: how far a marker can reach past a round's end.
const MARK_TAIL: u64 = 10;

impl RoundPlan {
    /// About 1/32 of the file per round (so two threads balance well and the last round
    /// is short), between 64 KiB and 512 KiB (so a round's text and its decoded DER stay
    /// in cache until indexed).
    fn new(file_len: u64) -> Self {
        let size = (file_len / 32).clamp(64 << 10, 512 << 10);
        RoundPlan {
            size,
            rounds: file_len.div_ceil(size).max(1) as usize,
        }
    }

    /// Read and prepare round `k`, using `win` as the read buffer (it is left holding the
    /// bytes read from the round's nominal start).
    fn prepare(
        &self,
        f: &fs::File,
        k: usize,
        win: &mut Window,
        spare: Chunk,
    ) -> Result<Chunk, IssueKind> {
        let base = k as u64 * self.size;
        let last = k + 1 >= self.rounds;
        win.filled = 0;
        let mut eof = win.read_at_most(f, base, self.size + MARK_TAIL)?;
        let start = if k == 0 {
            0
        } else {
            // A marker must start inside this round's nominal range to begin it.
            let b = win.bytes();
            let window = &b[..b.len().min(self.size as usize + MARK_TAIL as usize)];
            match memchr::memmem::find(window, b"-----BEGIN ") {
                Some(i) if (i as u64) < self.size => i,
                _ => return Ok(prepare_pem_into(&[], spare)),
            }
        };
        // The end: the first marker at or after the next round's start, or EOF.
        let size = self.size as usize;
        let mut searched = size;
        let end = loop {
            let b = win.bytes();
            if !last && b.len() > searched {
                if let Some(i) = memchr::memmem::find(&b[searched..], b"-----BEGIN ") {
                    break searched + i;
                }
                // Search only the new bytes (plus a marker's length) next time.
                searched = b.len().saturating_sub(MARK_TAIL as usize).max(size);
            }
            if eof {
                break b.len();
            }
            eof = win.read_at_most(f, base + b.len() as u64, self.size)?;
        };
        Ok(prepare_pem_into(&win.bytes()[start..end.max(start)], spare))
    }
}

/// A reusable read buffer: `data[..filled]` holds the bytes read. The buffer only grows,
/// and is zeroed only when it grows (`pread` needs initialised memory), not per read.
#[derive(Default)]
struct Window {
    data: Vec<u8>,
    filled: usize,
}

impl Window {
    fn bytes(&self) -> &[u8] {
        &self.data[..self.filled]
    }

    /// Append up to `want` bytes read at `off`; true at end of file. Reading past
    /// [`MAX_FILE_BYTES`] (the file grew while being read) is reported as too large.
    fn read_at_most(&mut self, f: &fs::File, off: u64, want: u64) -> Result<bool, IssueKind> {
        use std::os::unix::fs::FileExt;
        let end = self.filled + want as usize;
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        let mut eof = false;
        let first = self.filled;
        while self.filled < end {
            let at = off + (self.filled - first) as u64;
            match f.read_at(&mut self.data[self.filled..end], at) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(k) => self.filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(if e.raw_os_error() == Some(ELOOP) {
                        IssueKind::SymlinkLoop
                    } else {
                        IssueKind::Unreadable(e.to_string())
                    });
                }
            }
        }
        let reached = off + (self.filled - first) as u64;
        if reached > MAX_FILE_BYTES {
            return Err(IssueKind::TooLarge {
                size: reached,
                limit: MAX_FILE_BYTES,
            });
        }
        Ok(eof)
    }
}

fn block_issue(b: Block<'_>) -> IssueKind {
    match b {
        Block::Other {
            label,
            private_key: true,
        } => IssueKind::PrivateKey { label },
        Block::Other {
            label,
            private_key: false,
        } => IssueKind::NotCertificate { label },
        Block::Bad(why) => IssueKind::BadPem(why),
        // Certificates are handled by the callers.
        Block::Certificate(_) => IssueKind::BadPem("unexpected certificate block"),
    }
}

/// What a worker thread produced from one slice of a PEM file.
#[derive(Default)]
struct Chunk {
    arena: Vec<u8>,
    items: Vec<Item>,
    blocks: u32,
}

enum Item {
    Cert {
        off: usize,
        len: usize,
        prep: Prepared,
        block: u32,
    },
    Issue {
        block: u32,
        kind: IssueKind,
    },
}

/// Scratch buffers of finished bulk loads (read windows and prepared chunks), kept for the
/// next one. They are dead once a load ends, so unlike a store's own memory they are free
/// when the next load (a reload) starts; reusing them spares that load faulting in fresh
/// pages for every round buffer. Bounded: [`SCRATCH_KEEP`] of each kind, none over
/// [`SCRATCH_MAX_BYTES`].
mod scratch {
    use super::Chunk;
    use std::sync::Mutex;

    pub(super) const SCRATCH_KEEP: usize = 6;
    pub(super) const SCRATCH_MAX_BYTES: usize = 4 << 20;

    static WINDOWS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    static CHUNKS: Mutex<Vec<Chunk>> = Mutex::new(Vec::new());

    pub(super) fn window() -> Vec<u8> {
        WINDOWS
            .lock()
            .ok()
            .and_then(|mut w| w.pop())
            .unwrap_or_default()
    }
    pub(super) fn chunk() -> Chunk {
        CHUNKS
            .lock()
            .ok()
            .and_then(|mut c| c.pop())
            .unwrap_or_default()
    }
    pub(super) fn give_window(w: Vec<u8>) {
        if w.capacity() == 0 || w.capacity() > SCRATCH_MAX_BYTES {
            return;
        }
        if let Ok(mut pool) = WINDOWS.lock() {
            if pool.len() < SCRATCH_KEEP {
                pool.push(w);
            }
        }
    }
    pub(super) fn give_chunk(mut c: Chunk) {
        let bytes = c.arena.capacity() + c.items.capacity() * size_of::<super::Item>();
        if bytes == 0 || bytes > SCRATCH_MAX_BYTES {
            return;
        }
        // Drop the contents (issue texts) now; keep the allocations.
        c.arena.clear();
        c.items.clear();
        c.blocks = 0;
        if let Ok(mut pool) = CHUNKS.lock() {
            if pool.len() < SCRATCH_KEEP {
                pool.push(c);
            }
        }
    }
}

/// Scan, decode, parse and hash one round's PEM text into `c` (a chunk whose buffers are
/// reused).
fn prepare_pem_into(text: &[u8], mut c: Chunk) -> Chunk {
    c.arena.clear();
    c.items.clear();
    c.blocks = 0;
    c.arena.reserve(text.len() * 3 / 4);
    // A CA certificate takes at least ~600 PEM bytes (P-256; RSA roots ~2 KB): one
    // allocation instead of doubling (and copying) the items as they come.
    c.items.reserve(text.len() / 600 + 1);
    for b in PemScanner::new(text) {
        c.blocks += 1;
        let block = c.blocks;
        match b {
            Block::Certificate(body) => {
                let start = c.arena.len();
                if let Err(why) = pem::decode_body(body, &mut c.arena) {
                    c.arena.truncate(start);
                    c.items.push(Item::Issue {
                        block,
                        kind: IssueKind::BadPem(why),
                    });
                    continue;
                }
                match prepare(&c.arena[start..]) {
                    Ok(prep) => c.items.push(Item::Cert {
                        off: start,
                        len: c.arena.len() - start,
                        prep,
                        block,
                    }),
                    Err(kind) => {
                        c.arena.truncate(start);
                        c.items.push(Item::Issue { block, kind });
                    }
                }
            }
            other => c.items.push(Item::Issue {
                block,
                kind: block_issue(other),
            }),
        }
    }
    c
}

#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;

/// The issue for a file tlskit-io refused or could not read.
/// Whether a file of `len` bytes is over the limit: then it is reported, and the caller
/// skips it (checked on the path's metadata and again on the opened file's).
fn too_large(path: &Path, len: u64, report: &mut LoadReport) -> bool {
    if len <= MAX_FILE_BYTES {
        return false;
    }
    report.push_issue(LoadIssue::new(
        path,
        IssueKind::TooLarge {
            size: len,
            limit: MAX_FILE_BYTES,
        },
    ));
    true
}

fn read_issue(path: &Path, e: tlskit_io::ReadError) -> LoadIssue {
    match e.kind {
        tlskit_io::ReadErrorKind::Io(e) => io_issue(path, &e),
        tlskit_io::ReadErrorKind::NotRegular(_) => LoadIssue::new(path, IssueKind::NotRegular),
        tlskit_io::ReadErrorKind::TooLarge { size, limit } => {
            LoadIssue::new(path, IssueKind::TooLarge { size, limit })
        }
        other => LoadIssue::new(path, IssueKind::Unreadable(other.to_string())),
    }
}

fn io_issue(path: &Path, e: &std::io::Error) -> LoadIssue {
    if e.raw_os_error() == Some(ELOOP) {
        LoadIssue::new(path, IssueKind::SymlinkLoop)
    } else {
        LoadIssue::new(path, IssueKind::Unreadable(e.to_string()))
    }
}

impl StoreBuilder {
    /// Add everything a source yields, recording problems in `report` (never stops on one).
    pub fn add_source(&mut self, source: &Source, report: &mut LoadReport) {
        match source {
            Source::File(p) => self.add_file(p, report),
            Source::Dir(p) => self.add_dir(p, report),
            Source::Snapshot(p) => self.add_snapshot(p, report),
            Source::System => match system_store() {
                Ok(s) => {
                    for src in &s.sources {
                        self.add_source(src, report);
                    }
                }
                Err(e) => report.push_issue(LoadIssue::new(
                    "system",
                    IssueKind::Unreadable(e.to_string()),
                )),
            },
        }
        report.files = self.files;
        report.duplicates = self.duplicates;
        report.aliases = self.aliases;
        report.anchors = self.len();
    }

    fn add_snapshot(&mut self, path: &Path, report: &mut LoadReport) {
        let store = match TrustStore::open_snapshot(path) {
            Ok(s) => s,
            Err(e) => {
                report.push_issue(LoadIssue::new(path, IssueKind::Snapshot(e)));
                return;
            }
        };
        self.files += 1;
        for issue in store.stale_sources() {
            report.push_issue(issue);
        }
        let file_idx = self.tracker.as_mut().map(|t| {
            t.files.push(path.to_path_buf());
            (t.files.len() - 1) as u32
        });
        let n = store.len() as u32;
        self.reserve(n as usize, store.der_bytes());
        for i in 0..n {
            match store.get(i) {
                Some(a) => {
                    let start = self.der.len();
                    self.der.extend_from_slice(a.der());
                    self.commit_occurrence(start, path, file_idx, i + 1, report);
                }
                None => self.push_issue(
                    report,
                    file_idx,
                    LoadIssue::at(
                        path,
                        i + 1,
                        IssueKind::CorruptAnchor {
                            index: i,
                            reason: store.core().damage(i).unwrap_or(AnchorDamage::Record),
                        },
                    ),
                ),
            }
        }
        if let (Some(meta), true) = (&store.snapshot, self.record_sources) {
            self.snapshot_sources.extend(meta.sources.iter().cloned());
        }
    }

    fn add_dir(&mut self, dir: &Path, report: &mut LoadReport) {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                report.push_issue(io_issue(dir, &e));
                return;
            }
        };
        if let (Ok(md), true) = (fs::metadata(dir), self.record_sources) {
            self.snapshot_sources
                .push(SourceRecord::from_meta(dir, &md, true));
        }
        // The directory's absolute path, once: each entry's source record joins its name
        // to it instead of asking for the working directory again (one syscall per file).
        let abs_dir = std::path::absolute(dir).ok();
        let mut entries: Vec<PathBuf> = Vec::new();
        for e in rd {
            match e {
                Ok(e) => entries.push(e.path()),
                Err(e) => report.push_issue(io_issue(dir, &e)),
            }
        }
        entries.sort_unstable();
        for p in entries {
            match fs::metadata(&p) {
                Ok(md) if md.is_dir() => {} // flat, like OpenSSL's CApath
                Ok(md) => {
                    let abs = abs_dir.as_ref().zip(p.file_name()).map(|(d, n)| d.join(n));
                    self.add_file_meta(&p, abs, md, report)
                }
                Err(e) => report.push_issue(io_issue(&p, &e)),
            }
        }
    }

    fn push_issue(&mut self, report: &mut LoadReport, file: Option<u32>, issue: LoadIssue) {
        if let (Some(t), Some(f)) = (self.tracker.as_mut(), file) {
            t.file_issues.push((f, issue.clone()));
        }
        report.push_issue(issue);
    }

    /// Read one file (PEM bundle or DER) and add its certificates.
    pub(crate) fn add_file(&mut self, path: &Path, report: &mut LoadReport) {
        match fs::metadata(path) {
            Ok(md) => self.add_file_meta(path, None, md, report),
            Err(e) => report.push_issue(io_issue(path, &e)),
        }
    }

    /// [`Self::add_file`] with the file's (link-following) metadata already in hand, and
    /// its absolute path if known.
    fn add_file_meta(
        &mut self,
        path: &Path,
        abs: Option<PathBuf>,
        md: fs::Metadata,
        report: &mut LoadReport,
    ) {
        if !md.is_file() {
            report.push_issue(LoadIssue::new(path, IssueKind::NotRegular));
            return;
        }
        let key = (md.dev(), md.ino());
        if !self.seen_inodes.insert(key) {
            self.aliases += 1;
            if let Some(t) = self.tracker.as_mut() {
                let first = t.inode_path.get(&key).cloned().unwrap_or_default();
                t.alias_of.push((path.to_path_buf(), first));
            }
            return;
        }
        if too_large(path, md.len(), report) {
            return;
        }
        // Open without blocking and check the opened file: the path may have been replaced
        // (by a FIFO, a device, another file) since the `stat` above. Anything but the
        // regular file that was checked is refused before a byte is read.
        let (file, md, key) = match tlskit_io::open_regular(path) {
            Ok((f, now)) if (now.dev(), now.ino()) == key => (f, now, key),
            // Replaced by another regular file meanwhile (an atomic rename by whoever
            // updates it): read the new one, unless that one was read already.
            Ok((f, now)) if self.seen_inodes.insert((now.dev(), now.ino())) => {
                let key = (now.dev(), now.ino());
                (f, now, key)
            }
            Ok(_) => {
                report.push_issue(LoadIssue::new(
                    path,
                    IssueKind::Unreadable("replaced while being read".into()),
                ));
                return;
            }
            Err(e) => {
                report.push_issue(read_issue(path, e));
                return;
            }
        };
        if too_large(path, md.len(), report) {
            return;
        }
        if md.len() > STREAM_MIN_BYTES as u64 {
            self.add_stream(file, &md, key, path, abs, report);
            return;
        }
        let mut buf = std::mem::take(&mut self.read_buf);
        buf.clear();
        // Bounded even if the file grew after the fstat.
        if let Err(e) = tlskit_io::read_open_into(file, &md, path, MAX_FILE_BYTES, &mut buf) {
            report.push_issue(read_issue(path, e));
            self.read_buf = buf;
            return;
        }
        let file_idx = self.register_file(path, abs, &md, key);
        self.add_bytes(&buf, path, file_idx, report);
        self.read_buf = buf;
    }

    fn register_file(
        &mut self,
        path: &Path,
        abs: Option<PathBuf>,
        md: &fs::Metadata,
        key: (u64, u64),
    ) -> Option<u32> {
        self.files += 1;
        if self.record_sources {
            self.snapshot_sources.push(match abs {
                Some(a) => SourceRecord::from_absolute(a, md, false),
                None => SourceRecord::from_meta(path, md, false),
            });
        }
        self.tracker.as_mut().map(|t| {
            t.files.push(path.to_path_buf());
            t.inode_path.insert(key, path.to_path_buf());
            (t.files.len() - 1) as u32
        })
    }

    /// Large files are split into rounds of about 1/32 of the file, each cut at BEGIN
    /// lines, and prepared (read with `pread`, PEM-scanned, decoded, parsed, hashed) by
    /// this thread and one worker thread that take rounds from a shared counter, so both
    /// cores stay busy whatever the balance between preparing and indexing. This thread
    /// indexes the prepared rounds in file order whenever the next one is ready and
    /// prepares a round otherwise. The worker starts on the second round while this thread
    /// reads the first, which decides whether the file is PEM at all (if not, the worker
    /// is stopped and the file takes the DER path). Block numbers continue across rounds;
    /// the result equals reading the file whole (tested).
    fn add_stream(
        &mut self,
        f: fs::File,
        md: &fs::Metadata,
        key: (u64, u64),
        path: &Path,
        abs: Option<PathBuf>,
        report: &mut LoadReport,
    ) {
        let file_idx = self.register_file(path, abs, md, key);
        let plan = RoundPlan::new(md.len());
        let mut win = Window {
            data: scratch::window(),
            filled: 0,
        };
        let n = plan.rounds;
        let next_round = AtomicUsize::new(1);
        let stop = AtomicBool::new(false);
        let parallel = cpus() > 1 && n > 1;
        let mut blocks = 0u32;
        // What the first round said when the file turned out not to be PEM text, or
        // unreadable (then no round was indexed).
        let mut first_failed: Option<IssueKind> = None;
        let mut not_pem = false;
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Chunk, IssueKind>)>();
            // Absorbed chunks go back to the worker, so its buffers are reused rather than
            // allocated (and page-faulted) round after round.
            let (spare_tx, spare_rx) = std::sync::mpsc::channel::<Chunk>();
            let mut spare: Option<Chunk> = None;
            if parallel {
                let (f, plan, next_round, stop) = (&f, &plan, &next_round, &stop);
                // Without a worker (spawn failed) this thread prepares every round itself.
                let _ = std::thread::Builder::new()
                    .name("tlskit-store-load".into())
                    .spawn_scoped(s, move || {
                        let mut wbuf = Window {
                            data: scratch::window(),
                            filled: 0,
                        };
                        // A small pool of chunks: the worker takes a round only with a
                        // chunk in hand, and gets chunks back as they are indexed, so at
                        // most WORKER_CHUNKS rounds wait for indexing (bounded memory, no
                        // allocation per round). Taking the chunk before the round keeps
                        // this deadlock-free: a round taken is always being prepared.
                        let mut fresh = WORKER_CHUNKS;
                        while !stop.load(Ordering::Relaxed) {
                            let reuse = if fresh > 0 {
                                fresh -= 1;
                                scratch::chunk()
                            } else {
                                match spare_rx.recv() {
                                    Ok(c) => c,
                                    Err(_) => break,
                                }
                            };
                            let k = next_round.fetch_add(1, Ordering::Relaxed);
                            if k >= n {
                                scratch::give_chunk(reuse);
                                break;
                            }
                            if tx.send((k, plan.prepare(f, k, &mut wbuf, reuse))).is_err() {
                                break;
                            }
                        }
                        // Chunks sent back but not taken, and the window, serve the next load.
                        while let Ok(c) = spare_rx.try_recv() {
                            scratch::give_chunk(c);
                        }
                        scratch::give_window(wbuf.data);
                    });
            } else {
                drop(tx);
            }
            // The first round, here while the worker starts on the second, decides PEM or
            // not (as for a file read whole). If not, the worker is stopped and what it
            // prepared is dropped with the channels at the end of this closure.
            let first = match plan.prepare(&f, 0, &mut win, scratch::chunk()) {
                Ok(c) => c,
                Err(kind) => {
                    stop.store(true, Ordering::Relaxed);
                    first_failed = Some(kind);
                    return;
                }
            };
            if first.blocks == 0 && !pem::looks_like_pem(win.bytes()) {
                stop.store(true, Ordering::Relaxed);
                scratch::give_chunk(first);
                not_pem = true;
                return;
            }
            self.reserve_for_pem(md.len() as usize);
            let mut ready: Vec<Option<Result<Chunk, IssueKind>>> = Vec::new();
            ready.resize_with(n, || None);
            ready[0] = Some(Ok(first));
            let mut next = 0usize;
            while next < n {
                while let Ok((k, r)) = rx.try_recv() {
                    ready[k] = Some(r);
                }
                if let Some(r) = ready[next].take() {
                    next += 1;
                    match r {
                        Ok(c) => {
                            blocks += self.absorb_chunk(&c, blocks, path, file_idx, report);
                            if spare.is_none() {
                                spare = Some(c);
                            } else {
                                // The worker may have stopped: then the chunk is dropped.
                                let _ = spare_tx.send(c);
                            }
                        }
                        Err(kind) => {
                            // Rounds before this one stay loaded; say why the rest is missing.
                            stop.store(true, Ordering::Relaxed);
                            self.push_issue(report, file_idx, LoadIssue::new(path, kind));
                            break;
                        }
                    }
                    continue;
                }
                let k = next_round.fetch_add(1, Ordering::Relaxed);
                if k < n {
                    let reuse = spare.take().unwrap_or_else(scratch::chunk);
                    ready[k] = Some(plan.prepare(&f, k, &mut win, reuse));
                    continue;
                }
                // Every round is taken: wait for the worker's. If it is gone (it only
                // stops early on a bug), prepare the missing round here.
                match rx.recv() {
                    Ok((k, r)) => ready[k] = Some(r),
                    Err(_) => {
                        let reuse = spare.take().unwrap_or_else(scratch::chunk);
                        ready[next] = Some(plan.prepare(&f, next, &mut win, reuse));
                    }
                }
            }
            stop.store(true, Ordering::Relaxed);
            if let Some(c) = spare.take() {
                scratch::give_chunk(c);
            }
        });
        if let Some(kind) = first_failed {
            self.push_issue(report, file_idx, LoadIssue::new(path, kind));
            scratch::give_window(win.data);
            return;
        }
        if not_pem {
            let mut buf = win.data;
            // Not PEM: read it whole and take the whole-buffer (DER) path.
            buf.clear();
            let rest = (&f).take(MAX_FILE_BYTES + 1).read_to_end(&mut buf);
            match rest {
                Err(e) => report.push_issue(io_issue(path, &e)),
                Ok(_) if buf.len() as u64 > MAX_FILE_BYTES => report.push_issue(LoadIssue::new(
                    path,
                    IssueKind::TooLarge {
                        size: buf.len() as u64,
                        limit: MAX_FILE_BYTES,
                    },
                )),
                Ok(_) => self.add_bytes(&buf, path, file_idx, report),
            }
            scratch::give_window(buf);
            return;
        }
        if blocks == 0 {
            self.push_issue(
                report,
                file_idx,
                LoadIssue::new(path, IssueKind::NoCertificates),
            );
        }
        scratch::give_window(win.data);
    }

    /// Pre-size for a large PEM text: its base64 holds at most 3/4 as many DER bytes, and
    /// a typical CA (P-256) takes about 560 PEM bytes. Growing the indexes once instead of
    /// doubling avoids rehashing every entry several times; an overestimate (RSA roots are
    /// ~2 KB) costs a few bytes of index per DER kilobyte.
    fn reserve_for_pem(&mut self, len: usize) {
        if len >= 1 << 20 {
            self.reserve(len / 560, len * 3 / 4);
        }
    }

    /// Add the certificates in one file's bytes (PEM or DER).
    pub(crate) fn add_bytes(
        &mut self,
        buf: &[u8],
        path: &Path,
        file: Option<u32>,
        report: &mut LoadReport,
    ) {
        if pem::looks_like_pem(buf) {
            // Files over 1 MiB take the two-core rounds of `add_stream`; this is the
            // whole-buffer path. Base64 is 4/3 of the DER: reserving avoids regrowing.
            self.reserve_for_pem(buf.len());
            self.der.reserve(buf.len() * 3 / 4);
            let blocks = self.add_pem(buf, path, file, report);
            if blocks == 0 {
                self.push_issue(
                    report,
                    file,
                    LoadIssue::new(path, IssueKind::NoCertificates),
                );
            }
        } else if buf.first() == Some(&0x30) {
            // One or more concatenated DER certificates.
            let mut rest = buf;
            let mut block = 0u32;
            while !rest.is_empty() {
                block += 1;
                let len = match der::first_element_len(rest) {
                    Ok(l) => l,
                    Err(e) => {
                        self.push_issue(
                            report,
                            file,
                            LoadIssue::at(path, block, IssueKind::MalformedDer(e.0)),
                        );
                        break;
                    }
                };
                let start = self.der.len();
                self.der.extend_from_slice(&rest[..len]);
                self.commit_occurrence(start, path, file, block, report);
                rest = &rest[len..];
            }
        } else {
            self.push_issue(
                report,
                file,
                LoadIssue::new(path, IssueKind::NoCertificates),
            );
        }
    }

    /// Sequential PEM path: decode straight into the arena. Returns the number of blocks.
    fn add_pem(
        &mut self,
        buf: &[u8],
        path: &Path,
        file: Option<u32>,
        report: &mut LoadReport,
    ) -> u32 {
        let mut block = 0;
        for b in PemScanner::new(buf) {
            block += 1;
            match b {
                Block::Certificate(body) => {
                    let start = self.der.len();
                    if let Err(why) = pem::decode_body(body, &mut self.der) {
                        self.der.truncate(start);
                        self.push_issue(
                            report,
                            file,
                            LoadIssue::at(path, block, IssueKind::BadPem(why)),
                        );
                        continue;
                    }
                    self.commit_occurrence(start, path, file, block, report);
                }
                other => {
                    let kind = block_issue(other);
                    self.push_issue(report, file, LoadIssue::at(path, block, kind));
                }
            }
        }
        block
    }

    /// Index one prepared chunk; block numbers continue from `base_block`. Returns its
    /// blocks.
    fn absorb_chunk(
        &mut self,
        c: &Chunk,
        base_block: u32,
        path: &Path,
        file: Option<u32>,
        report: &mut LoadReport,
    ) -> u32 {
        const BATCH: usize = 64;
        // The chunk's certificates lie back to back in its arena: copied in one piece (one
        // large copy streams into the arena; a copy per certificate stalled on every cache
        // line it wrote). Each kept certificate then sits at `base + off`, or is moved down
        // to `kept` once an earlier one was dropped (a duplicate, an error); `kept` never
        // passes the next certificate's bytes, so none is overwritten before it is moved.
        let base = self.der.len();
        self.der.extend_from_slice(&c.arena);
        let mut kept = base;
        for (n, item) in c.items.iter().enumerate() {
            if n % BATCH == 0 {
                // Warm the table slots of the next batch (small enough to stay in cache).
                let end = (n + BATCH).min(c.items.len());
                self.touch_slots(c.items[n..end].iter().filter_map(|it| match it {
                    Item::Cert { prep, .. } => Some(prep),
                    Item::Issue { .. } => None,
                }));
            }
            match item {
                Item::Cert {
                    off,
                    len,
                    prep,
                    block,
                } => {
                    let block = base_block + block;
                    if let Some(i) = self.find_sha(&prep.sha) {
                        self.duplicates += 1;
                        self.track_occurrence(file, i, block, false);
                        continue;
                    }
                    let (at, len) = (base + off, *len);
                    if at != kept {
                        self.der.copy_within(at..at + len, kept);
                    }
                    match self.insert_new(kept, len, prep) {
                        Ok(i) => {
                            kept += len;
                            self.track_occurrence(file, i, block, true);
                        }
                        Err(kind) => {
                            self.push_issue(report, file, LoadIssue::at(path, block, kind));
                        }
                    }
                }
                Item::Issue { block, kind } => {
                    self.push_issue(
                        report,
                        file,
                        LoadIssue::at(path, base_block + block, kind.clone()),
                    );
                }
            }
        }
        self.der.truncate(kept);
        c.blocks
    }

    fn track_occurrence(&mut self, file: Option<u32>, idx: u32, block: u32, new: bool) {
        if let (Some(t), Some(f)) = (self.tracker.as_mut(), file) {
            t.occurrences.push((f, idx, block, new));
        }
    }

    fn commit_occurrence(
        &mut self,
        start: usize,
        path: &Path,
        file: Option<u32>,
        block: u32,
        report: &mut LoadReport,
    ) {
        match self.commit_tail(start) {
            Ok((added, idx)) => self.track_occurrence(file, idx, block, added == Added::New),
            Err(kind) => self.push_issue(report, file, LoadIssue::at(path, block, kind)),
        }
    }

    /// Finish a load: counts, expired, timing.
    pub(crate) fn finish_report(&self, report: &mut LoadReport, started: Instant) {
        let now = now_unix();
        report.files = self.files;
        report.anchors = self.len();
        report.duplicates = self.duplicates;
        report.aliases = self.aliases;
        report.expired = self.recs.iter().filter(|r| r.not_after < now).count();
        report.load_ms = started.elapsed().as_secs_f64() * 1e3;
    }
}

/// Load sources into a new store (generation 1). A single snapshot source is used as it
/// is (read into memory once, not rebuilt). Fails with [`StoreError::NothingLoadable`]
/// (carrying every issue) when no source yields an anchor.
pub fn load(sources: &[Source]) -> Result<(TrustStore, LoadReport), StoreError> {
    let started = Instant::now();
    if let [Source::Snapshot(p)] = sources {
        let store = TrustStore::open_snapshot(p).map_err(|e| {
            let mut r = LoadReport::default();
            r.push_issue(LoadIssue::new(p, IssueKind::Snapshot(e)));
            r.into_nothing_loadable()
        })?;
        let mut report = LoadReport {
            files: 1,
            anchors: store.len(),
            expired: store.count_expired(now_unix()),
            ..LoadReport::default()
        };
        for issue in store.stale_sources() {
            report.push_issue(issue);
        }
        report.load_ms = started.elapsed().as_secs_f64() * 1e3;
        if store.is_empty() {
            return Err(report.into_nothing_loadable());
        }
        return Ok((store, report));
    }
    let mut b = StoreBuilder::new();
    let mut report = LoadReport::default();
    for s in sources {
        b.add_source(s, &mut report);
    }
    b.finish_report(&mut report, started);
    if b.is_empty() {
        return Err(report.into_nothing_loadable());
    }
    let store = b.build();
    report.load_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok((store, report))
}

impl TrustStore {
    /// Write this store as a snapshot at `out` (atomically: temp file + rename), recording
    /// `sources` for staleness checks. A store read from a snapshot is rebuilt in memory
    /// from its intact anchors first.
    pub fn write_snapshot(&self, out: &Path, sources: &[SourceRecord]) -> Result<(), StoreError> {
        if !self.is_snapshot() {
            return self.write_built(out, sources);
        }
        let mut b = StoreBuilder::new();
        for a in self.anchors() {
            // Each was accepted by a builder once and passed its check: it passes again.
            let _ = b.add_der(a.der(), out);
        }
        b.build().write_built(out, sources)
    }
}

/// Load `sources` and write them as a snapshot at `out`. Returns the load report.
pub fn build_snapshot(sources: &[Source], out: &Path) -> Result<LoadReport, StoreError> {
    let started = std::time::Instant::now();
    let mut b = StoreBuilder::new();
    b.record_sources = true;
    let mut report = LoadReport::default();
    for s in sources {
        b.add_source(s, &mut report);
    }
    b.finish_report(&mut report, started);
    if b.is_empty() {
        return Err(report.into_nothing_loadable());
    }
    let recs = std::mem::take(&mut b.snapshot_sources);
    let store = b.build();
    store.write_snapshot(out, &recs)?;
    report.load_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(report)
}
