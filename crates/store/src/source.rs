//! Certificate sources: PEM bundles, DER files, directories, the system default, and
//! snapshot files; and `load`, which turns a list of sources into a store.
//!
//! A file reached through several paths (Debian's `/etc/ssl/certs` symlinks, OpenSSL hash
//! links `abcd1234.0`) is read once: files are keyed by (device, inode) after following
//! links. A certificate present in several different files is one anchor (keyed by
//! SHA-256); the repeats are counted as duplicates. Directories are read flat, like
//! OpenSSL's CApath: subdirectories are not descended. Entries are read in byte order of
//! their names, so results are deterministic.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::builder::{Added, StoreBuilder};
use crate::der;
use crate::error::{IssueKind, LoadIssue, StoreError, MAX_FILE_BYTES};
use crate::pem::{self, Block, PemScanner};
use crate::snapshot::{self, SourceRecord};
use crate::store::{now_unix, TrustStore};

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
    for b in SYSTEM_BUNDLES {
        let p = PathBuf::from(b);
        let ok = p.is_file();
        candidates.push((p.clone(), ok));
        if ok {
            return Ok(SystemStore {
                sources: vec![Source::File(p)],
                chosen_by: "default path".into(),
                candidates,
            });
        }
    }
    for d in SYSTEM_DIRS {
        let p = PathBuf::from(d);
        let ok = p.is_dir();
        candidates.push((p.clone(), ok));
        if ok {
            return Ok(SystemStore {
                sources: vec![Source::Dir(p)],
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
    pub errors: Vec<LoadIssue>,
    pub load_ms: f64,
}

#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;

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
                Err(e) => report.errors.push(LoadIssue::new(
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
                report
                    .errors
                    .push(LoadIssue::new(path, IssueKind::Snapshot(e)));
                return;
            }
        };
        self.files += 1;
        for issue in store.stale_sources() {
            report.errors.push(issue);
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
                    LoadIssue::at(path, i + 1, IssueKind::CorruptAnchor { index: i }),
                ),
            }
        }
        if let Some(meta) = &store.snapshot {
            self.snapshot_sources.extend(meta.sources.iter().cloned());
        }
    }

    fn add_dir(&mut self, dir: &Path, report: &mut LoadReport) {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                report.errors.push(io_issue(dir, &e));
                return;
            }
        };
        if let Ok(md) = fs::metadata(dir) {
            self.snapshot_sources
                .push(SourceRecord::from_meta(dir, &md, true));
        }
        let mut entries: Vec<PathBuf> = Vec::new();
        for e in rd {
            match e {
                Ok(e) => entries.push(e.path()),
                Err(e) => report.errors.push(io_issue(dir, &e)),
            }
        }
        entries.sort_unstable();
        for p in entries {
            match fs::metadata(&p) {
                Ok(md) if md.is_dir() => {} // flat, like OpenSSL's CApath
                Ok(_) => self.add_file(&p, report),
                Err(e) => report.errors.push(io_issue(&p, &e)),
            }
        }
    }

    fn push_issue(&mut self, report: &mut LoadReport, file: Option<u32>, issue: LoadIssue) {
        if let (Some(t), Some(f)) = (self.tracker.as_mut(), file) {
            t.file_issues.push((f, issue.clone()));
        }
        report.errors.push(issue);
    }

    /// Read one file (PEM bundle or DER) and add its certificates.
    pub(crate) fn add_file(&mut self, path: &Path, report: &mut LoadReport) {
        let md = match fs::metadata(path) {
            Ok(md) => md,
            Err(e) => {
                report.errors.push(io_issue(path, &e));
                return;
            }
        };
        if !md.is_file() {
            report
                .errors
                .push(LoadIssue::new(path, IssueKind::NotRegular));
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
        if md.len() > MAX_FILE_BYTES {
            report.errors.push(LoadIssue::new(
                path,
                IssueKind::TooLarge {
                    size: md.len(),
                    limit: MAX_FILE_BYTES,
                },
            ));
            return;
        }
        let mut buf = std::mem::take(&mut self.read_buf);
        buf.clear();
        let read = fs::File::open(path).and_then(|f| {
            // Bound the read even if the file grew after the metadata call.
            f.take(MAX_FILE_BYTES + 1).read_to_end(&mut buf)
        });
        if let Err(e) = read {
            report.errors.push(io_issue(path, &e));
            self.read_buf = buf;
            return;
        }
        if buf.len() as u64 > MAX_FILE_BYTES {
            report.errors.push(LoadIssue::new(
                path,
                IssueKind::TooLarge {
                    size: buf.len() as u64,
                    limit: MAX_FILE_BYTES,
                },
            ));
            self.read_buf = buf;
            return;
        }
        self.files += 1;
        self.snapshot_sources
            .push(SourceRecord::from_meta(path, &md, false));
        let file_idx = self.tracker.as_mut().map(|t| {
            t.files.push(path.to_path_buf());
            t.inode_path.insert(key, path.to_path_buf());
            (t.files.len() - 1) as u32
        });
        self.add_bytes(&buf, path, file_idx, report);
        self.read_buf = buf;
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
            let mut block = 0u32;
            let mut scratch = std::mem::take(&mut self.scratch);
            for b in PemScanner::new(buf) {
                block += 1;
                match b {
                    Block::Certificate(body) => {
                        let start = self.der.len();
                        if let Err(why) = pem::decode_body(body, &mut scratch, &mut self.der) {
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
                    Block::Other { label, private_key } => {
                        let kind = if private_key {
                            IssueKind::PrivateKey { label }
                        } else {
                            IssueKind::NotCertificate { label }
                        };
                        self.push_issue(report, file, LoadIssue::at(path, block, kind));
                    }
                    Block::Bad(why) => self.push_issue(
                        report,
                        file,
                        LoadIssue::at(path, block, IssueKind::BadPem(why)),
                    ),
                }
            }
            self.scratch = scratch;
            if block == 0 {
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

    fn commit_occurrence(
        &mut self,
        start: usize,
        path: &Path,
        file: Option<u32>,
        block: u32,
        report: &mut LoadReport,
    ) {
        let sha_if_tracking = self.tracker.as_ref().map(|_| {
            use sha2::Digest;
            let s: [u8; 32] = sha2::Sha256::digest(&self.der[start..]).into();
            s
        });
        match self.commit_tail(start) {
            Ok(added) => {
                if let (Some(f), Some(sha)) = (file, sha_if_tracking) {
                    let idx = self.find_sha(&sha);
                    if let (Some(t), Some(idx)) = (self.tracker.as_mut(), idx) {
                        t.occurrences.push((f, idx, block, added == Added::New));
                    }
                }
            }
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

/// Load sources into a new store (generation 1). A single snapshot source is mapped, not
/// copied. Fails with [`StoreError::NothingLoadable`] (carrying every issue) when no
/// source yields an anchor.
pub fn load(sources: &[Source]) -> Result<(TrustStore, LoadReport), StoreError> {
    let started = Instant::now();
    if let [Source::Snapshot(p)] = sources {
        let store = TrustStore::open_snapshot(p).map_err(|e| StoreError::NothingLoadable {
            issues: vec![LoadIssue::new(p, IssueKind::Snapshot(e))],
        })?;
        let mut report = LoadReport {
            files: 1,
            anchors: store.len(),
            expired: store.count_expired(now_unix()),
            ..LoadReport::default()
        };
        report.errors.extend(store.stale_sources());
        report.load_ms = started.elapsed().as_secs_f64() * 1e3;
        if store.is_empty() {
            return Err(StoreError::NothingLoadable {
                issues: report.errors,
            });
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
        return Err(StoreError::NothingLoadable {
            issues: report.errors,
        });
    }
    let store = b.build();
    report.load_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok((store, report))
}
