//! Store hygiene: lint findings and prune plans.
//!
//! Lint loads the sources with per-occurrence tracking and reports duplicates (the same
//! certificate through several files), expired and not-yet-valid anchors, non-CA
//! certificates, weak keys (RSA < 2048 bits), SHA-1 (and MD5) signatures, groups of anchors
//! sharing a subject, and every load issue (private keys, bad PEM, ...). Details come from
//! x509-parser; this is not the hot path.
//!
//! Prune moves whole files that hold only duplicates and/or expired certificates into a
//! backup directory (never deletes). It refuses, and reports, files that also hold good
//! certificates, files with unparseable content, and files reached through several paths
//! (hash links would be left dangling).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use x509_parser::prelude::FromDer;

use crate::builder::StoreBuilder;
use crate::error::{IssueKind, StoreError};
use crate::source::{LoadReport, Source};
use crate::store::{now_unix, TrustStore};
use tlskit_x509::certrules::CertRule;
use tlskit_x509::lintcode::{LintCode, Severity};

use tlskit_x509::dn;

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// `duplicate`, `same-subject`, a certificate rule ([`tlskit_x509::certrules::CertRule`]:
    /// `expired`, `not-yet-valid`, `weak-key`, `sha1-signature`, `md5-signature`,
    /// `md2-signature`), or a load issue (`private-key`, `bad-pem`, ...); serialized as
    /// its text.
    pub kind: LintCode,
    /// The file it is about (for `same-subject`, the file of the first anchor).
    pub path: PathBuf,
    /// The certificate's subject, RFC 4514-like (empty for a problem of the file itself).
    pub subject: String,
    /// What was found, in words.
    pub detail: String,
}

impl Finding {
    /// How serious this finding is ([`severity`] of its kind).
    pub fn severity(&self) -> Severity {
        severity(self.kind)
    }
}

/// The severity of a store-lint finding (or load issue) of kind `code`: the store's
/// policy, which `tlskit store lint`, `store show`, `store build` and `doctor` print.
///
/// * [`Severity::Error`] for what must not be in a trust store: a private key,
///   unparseable data (bad PEM, malformed DER), a damaged snapshot or snapshot anchor.
/// * [`Severity::Info`] for what stock system stores hold by design: the same certificate
///   in the bundle and the directory (`duplicate`), several CAs with one subject
///   (`same-subject`), SHA-1 self-signatures on old roots (`sha1-signature`).
/// * [`Severity::Warning`] for the rest: anchors that cannot or should not anchor
///   anything (expired, not yet valid, not a CA, weak key, MD5), and load issues
///   (unreadable files, files with no certificate, ...).
///
/// A lint exits 1 only for errors and warnings.
pub fn severity(code: LintCode) -> Severity {
    match code {
        LintCode::Duplicate | LintCode::SameSubject | LintCode::Rule(CertRule::Sha1Signature) => {
            Severity::Info
        }
        LintCode::PrivateKey
        | LintCode::BadPem
        | LintCode::MalformedDer
        | LintCode::CorruptAnchor
        | LintCode::BadSnapshot => Severity::Error,
        _ => Severity::Warning,
    }
}

/// Lint result: findings plus the load report of the tracked load.
pub struct LintReport {
    /// The findings, in the order found.
    pub findings: Vec<Finding>,
    /// The report of the load the lint ran on.
    pub report: LoadReport,
    /// The store that load built.
    pub store: TrustStore,
}

impl LintReport {
    /// How many findings have severity `level`.
    pub fn count(&self, level: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity() == level)
            .count()
    }

    /// Whether no finding is an error or a warning (info findings only, or none): a
    /// lint's exit status 0.
    pub fn is_clean(&self) -> bool {
        self.findings.iter().all(|f| f.severity() == Severity::Info)
    }
}

struct Tracked {
    store: TrustStore,
    report: LoadReport,
    tracker: crate::builder::Tracker,
}

fn load_tracked(sources: &[Source]) -> Tracked {
    let started = Instant::now();
    let mut b = StoreBuilder::new();
    b.track();
    let mut report = LoadReport::default();
    for s in sources {
        b.add_source(s, &mut report);
    }
    b.finish_report(&mut report, started);
    let tracker = b.tracker.take().unwrap_or_default();
    Tracked {
        store: b.build(),
        report,
        tracker,
    }
}

/// Lint the sources at time `now` (Unix seconds).
pub fn lint_at(sources: &[Source], now: i64) -> LintReport {
    let t = load_tracked(sources);
    let mut findings = Vec::new();
    let files = &t.tracker.files;
    let path_of = |f: u32| files.get(f as usize).cloned().unwrap_or_default();
    // First file of each anchor.
    let mut first_file: HashMap<u32, u32> = HashMap::new();
    for &(f, a, _, new) in &t.tracker.occurrences {
        if new {
            first_file.insert(a, f);
        }
    }
    for (f, issue) in &t.tracker.file_issues {
        let subject = match &issue.reason {
            IssueKind::NotCa { subject } => subject.clone(),
            _ => String::new(),
        };
        let detail = match issue.block {
            Some(b) => format!("block {b}: {}", issue.reason),
            None => issue.reason.to_string(),
        };
        findings.push(Finding {
            kind: issue.reason.code(),
            path: path_of(*f),
            subject,
            detail,
        });
    }
    // Issues not tied to a tracked file (unreadable paths, loops, bad snapshots). A set,
    // not a scan per issue: a directory of a million bad files made this quadratic.
    let tied: HashSet<(&Path, Option<u32>, &'static str)> = t
        .tracker
        .file_issues
        .iter()
        .map(|(_, i)| (i.path.as_path(), i.block, i.reason.tag()))
        .collect();
    for issue in &t.report.errors {
        if !tied.contains(&(issue.path.as_path(), issue.block, issue.reason.tag())) {
            findings.push(Finding {
                kind: issue.reason.code(),
                path: issue.path.clone(),
                subject: String::new(),
                detail: issue.reason.to_string(),
            });
        }
    }
    for &(f, a, block, new) in &t.tracker.occurrences {
        if new {
            continue;
        }
        let Some(anchor) = t.store.get(a) else {
            continue;
        };
        let first = first_file
            .get(&a)
            .map(|&ff| path_of(ff))
            .unwrap_or_default();
        let same = first_file.get(&a) == Some(&f);
        findings.push(Finding {
            kind: LintCode::Duplicate,
            path: path_of(f),
            subject: dn::display(anchor.subject()),
            detail: if same {
                format!(
                    "block {block}: repeats an earlier block of the same file (sha256 {})",
                    tlskit_x509::text::hex(anchor.sha256())
                )
            } else {
                format!(
                    "block {block}: same certificate as {} (sha256 {})",
                    first.display(),
                    tlskit_x509::text::hex(anchor.sha256())
                )
            },
        });
    }
    for a in t.store.anchors() {
        let path = first_file
            .get(&a.index())
            .map(|&f| path_of(f))
            .unwrap_or_default();
        let subject = dn::display(a.subject());
        // The certificate rules `tlskit lint` applies too (tlskit_x509::certrules).
        if let Ok((_, cert)) = x509_parser::certificate::X509Certificate::from_der(a.der()) {
            for f in tlskit_x509::certrules::check(&cert, now, None) {
                let detail = if f.rule.is_weak_signature() {
                    format!(
                        "{}; a root's self-signature is not what makes it trusted, but it marks an old CA",
                        f.detail
                    )
                } else {
                    f.detail
                };
                findings.push(Finding {
                    kind: LintCode::Rule(f.rule),
                    path: path.clone(),
                    subject: subject.clone(),
                    detail,
                });
            }
        }
    }
    for name in t.store.ca_names().iter() {
        let group: Vec<_> = t.store.by_subject(name).collect();
        if group.len() > 1 {
            let path = first_file
                .get(&group[0].index())
                .map(|&f| path_of(f))
                .unwrap_or_default();
            let list: Vec<String> = group
                .iter()
                .map(|a| {
                    let state = if a.not_after() < now {
                        "expired"
                    } else {
                        "valid"
                    };
                    format!(
                        "{} ({state} until {})",
                        &tlskit_x509::text::hex(a.sha256())[..16],
                        tlskit_x509::datetime::rfc3339(a.not_after())
                    )
                })
                .collect();
            findings.push(Finding {
                kind: LintCode::SameSubject,
                path,
                subject: dn::display(name),
                detail: format!(
                    "{} anchors share this subject: {}",
                    group.len(),
                    list.join(", ")
                ),
            });
        }
    }
    LintReport {
        findings,
        report: t.report,
        store: t.store,
    }
}

/// Lint the sources now.
pub fn lint(sources: &[Source]) -> LintReport {
    lint_at(sources, now_unix())
}

/// One file prune would move.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PruneMove {
    /// The file.
    pub path: PathBuf,
    /// Where it goes, inside the backup directory.
    pub to: PathBuf,
    /// Why, in words (`; `-separated when several).
    pub reason: String,
}

/// One file prune will not touch although it holds duplicates or expired certificates.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PruneRefusal {
    /// The file.
    pub path: PathBuf,
    /// Why it is left where it is, in words.
    pub reason: String,
}

/// What prune would do.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PrunePlan {
    /// The files to move into the backup.
    pub moves: Vec<PruneMove>,
    /// The files left alone, and why.
    pub refused: Vec<PruneRefusal>,
}

/// Plan a prune of one file or directory source, backing up into `backup`.
pub fn plan_prune(source: &Source, backup: &Path) -> Result<PrunePlan, StoreError> {
    plan_prune_at(source, backup, now_unix())
}

/// [`plan_prune`] at time `now`.
pub fn plan_prune_at(source: &Source, backup: &Path, now: i64) -> Result<PrunePlan, StoreError> {
    let root: PathBuf = match source {
        Source::Dir(p) => p.clone(),
        Source::File(p) => p.parent().map(Path::to_path_buf).unwrap_or_default(),
        Source::Snapshot(_) | Source::System => {
            return Err(StoreError::NotPrunable {
                path: source
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| "system".into()),
            })
        }
    };
    let t = load_tracked(std::slice::from_ref(source));
    let files = &t.tracker.files;
    let mut first_file: HashMap<u32, u32> = HashMap::new();
    for &(f, a, _, new) in &t.tracker.occurrences {
        if new {
            first_file.insert(a, f);
        }
    }
    let mut per_file: Vec<(usize, usize, usize, Vec<String>)> =
        vec![(0, 0, 0, Vec::new()); files.len()];
    for &(f, a, _, new) in &t.tracker.occurrences {
        let Some(entry) = per_file.get_mut(f as usize) else {
            continue;
        };
        let expired = t.store.get(a).is_some_and(|x| x.not_after() < now);
        if expired {
            entry.1 += 1;
            entry.3.push("expired".into());
        } else if !new && first_file.get(&a) != Some(&f) {
            entry.2 += 1;
            let other = first_file
                .get(&a)
                .and_then(|&ff| files.get(ff as usize))
                .cloned()
                .unwrap_or_default();
            entry.3.push(format!("duplicate of {}", other.display()));
        } else {
            entry.0 += 1;
        }
    }
    let mut plan = PrunePlan {
        moves: Vec::new(),
        refused: Vec::new(),
    };
    for (i, (good, expired, dups, reasons)) in per_file.into_iter().enumerate() {
        let path = files[i].clone();
        if expired + dups == 0 {
            continue;
        }
        let issues = t
            .tracker
            .file_issues
            .iter()
            .filter(|(f, _)| *f as usize == i)
            .count();
        let aliases: Vec<&PathBuf> = t
            .tracker
            .alias_of
            .iter()
            .filter(|(_, first)| *first == path)
            .map(|(a, _)| a)
            .collect();
        let refusal = if good > 0 {
            Some(format!(
                "holds {good} other good certificate(s); edit it by hand"
            ))
        } else if issues > 0 {
            Some(format!(
                "holds {issues} block(s) that did not load; inspect it by hand"
            ))
        } else if !aliases.is_empty() {
            Some(format!(
                "also reached through {} (links would dangle); remove the links and rehash",
                aliases
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        } else {
            None
        };
        match refusal {
            Some(reason) => plan.refused.push(PruneRefusal { path, reason }),
            None => {
                let rel = path
                    .strip_prefix(&root)
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|_| {
                        path.file_name()
                            .map(PathBuf::from)
                            .unwrap_or_else(|| path.clone())
                    });
                let mut r = reasons;
                r.dedup();
                plan.moves.push(PruneMove {
                    to: backup.join(rel),
                    path,
                    reason: r.join("; "),
                });
            }
        }
    }
    Ok(plan)
}

/// Carry out a plan: move each file into the backup (rename, or copy + remove across
/// filesystems; symlinks are moved as links). Never overwrites an existing backup file.
/// Returns one result per move: the operating system's error for a move that failed
/// (`AlreadyExists` for a backup file already there).
pub fn apply_prune(plan: &PrunePlan) -> Vec<(PathBuf, std::io::Result<()>)> {
    plan.moves
        .iter()
        .map(|m| (m.path.clone(), move_file(&m.path, &m.to)))
        .collect()
}

fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.symlink_metadata().is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} already exists in the backup; not overwritten",
                to.display()
            ),
        ));
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(18) => {
            // EXDEV: copy, sync, then remove the original.
            let md = from.symlink_metadata()?;
            if md.file_type().is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
            } else {
                std::fs::copy(from, to)?;
                std::fs::File::open(to)?.sync_all()?;
            }
            std::fs::remove_file(from)
        }
        Err(e) => Err(e),
    }
}
