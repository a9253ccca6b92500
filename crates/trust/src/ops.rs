//! The three operations: install (plan every target, then run the steps under the
//! journal), uninstall (undo the journal in reverse) and list.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cert::{CaCert, Warning};
use crate::error::{Result, TrustError};
use crate::java::JavaKeystore;
use crate::journal::{Entry, Journal, State, StateDir};
use crate::nss::NssDb;
use crate::run::{find_program, Runner};
use crate::step::Ctx;
use crate::system::SystemStore;
use crate::target::{Backups, Listed, Target, TargetKind};

/// Where and what to install, as the caller chose.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The targets asked for; empty: every target found.
    pub targets: Vec<TargetKind>,
    /// A root tree for the system store (and the default state directory). With a root,
    /// nothing outside it changes unless named (`nssdbs`, `java_cacerts`, `state`).
    pub root: Option<PathBuf>,
    /// NSS databases to use instead of the ones found under `home`.
    pub nssdbs: Vec<PathBuf>,
    /// A Java keystore to use instead of the JDK's cacerts.
    pub java_cacerts: Option<PathBuf>,
    /// Where journals and backups go.
    pub state: Option<PathBuf>,
    /// The home directory whose NSS databases are found (default `$HOME`; never with a
    /// root tree).
    pub home: Option<PathBuf>,
    /// Say what would change, change nothing.
    pub dry_run: bool,
}

impl Options {
    /// The same options with every path absolute (journals hold absolute paths, so an
    /// uninstall run from another directory finds the same files; update-ca-certificates
    /// changes directory before it writes).
    pub fn absolute(&self) -> Result<Options> {
        let abs = |p: &PathBuf| {
            std::path::absolute(p)
                .map_err(|e| TrustError::io(p, "cannot make the path absolute", e))
        };
        let mut o = self.clone();
        o.root = self.root.as_ref().map(abs).transpose()?;
        o.state = self.state.as_ref().map(abs).transpose()?;
        o.home = self.home.as_ref().map(abs).transpose()?;
        o.java_cacerts = self.java_cacerts.as_ref().map(abs).transpose()?;
        o.nssdbs = self.nssdbs.iter().map(abs).collect::<Result<_>>()?;
        Ok(o)
    }

    fn wanted(&self, k: TargetKind) -> bool {
        self.targets.is_empty() || self.targets.contains(&k)
    }

    fn explicit(&self, k: TargetKind) -> bool {
        self.targets.contains(&k)
    }

    /// The state directory: `state`; else under the root tree `var/lib/tlskit/trust`;
    /// else `$XDG_STATE_HOME/tlskit/trust` or `~/.local/state/tlskit/trust`.
    pub fn state_dir(&self) -> Result<StateDir> {
        let dir = if let Some(s) = &self.state {
            s.clone()
        } else if let Some(r) = &self.root {
            r.join("var/lib/tlskit/trust")
        } else if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
            PathBuf::from(x).join("tlskit/trust")
        } else if let Some(h) = self.home() {
            h.join(".local/state/tlskit/trust")
        } else {
            return Err(TrustError::NoTarget(
                "no state directory: HOME is not set and none was given".into(),
            ));
        };
        Ok(StateDir { dir })
    }

    fn home(&self) -> Option<PathBuf> {
        self.home.clone().or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
        })
    }
}

/// The trust stores found for `opts` (a target asked for by name and not found is an
/// error; an empty list is not).
pub fn detect(opts: &Options) -> Result<Vec<Box<dyn Target>>> {
    let mut out: Vec<Box<dyn Target>> = Vec::new();
    let under = |what: &str| match &opts.root {
        Some(r) => format!("{what} under {}", r.display()),
        None => what.to_string(),
    };
    if opts.wanted(TargetKind::System) {
        let found = SystemStore::detect(opts.root.as_deref());
        if found.is_empty() && opts.explicit(TargetKind::System) {
            return Err(TrustError::TargetMissing {
                target: "system",
                reason: under(
                    "no Debian-like (usr/local/share/ca-certificates) or Fedora-like \
                     (etc/pki/ca-trust/source/anchors) store",
                ),
            });
        }
        out.extend(found.into_iter().map(|s| Box::new(s) as Box<dyn Target>));
    }
    if opts.wanted(TargetKind::Nss) {
        let must = opts.explicit(TargetKind::Nss) || !opts.nssdbs.is_empty();
        match find_program("certutil") {
            None if must => {
                return Err(TrustError::TargetMissing {
                    target: "nss",
                    reason: "certutil is not installed (package libnss3-tools or nss-tools)".into(),
                })
            }
            None => {}
            Some(certutil) => {
                let home = if opts.root.is_some() {
                    None
                } else {
                    opts.home()
                };
                let dbs = NssDb::detect(&opts.nssdbs, home.as_deref(), certutil)?;
                if dbs.is_empty() && must {
                    return Err(TrustError::TargetMissing {
                        target: "nss",
                        reason: "no NSS database found (~/.pki/nssdb, Firefox profiles)".into(),
                    });
                }
                out.extend(dbs.into_iter().map(|d| Box::new(d) as Box<dyn Target>));
            }
        }
    }
    if opts.wanted(TargetKind::Java) {
        let must = opts.explicit(TargetKind::Java) || opts.java_cacerts.is_some();
        match find_program("keytool") {
            None if must => {
                return Err(TrustError::TargetMissing {
                    target: "java",
                    reason: "keytool is not installed (no JDK)".into(),
                })
            }
            None => {}
            Some(keytool) => {
                match JavaKeystore::detect(
                    opts.java_cacerts.as_deref(),
                    opts.root.as_deref(),
                    keytool,
                )? {
                    Some(k) => out.push(Box::new(k)),
                    None if must => {
                        return Err(TrustError::TargetMissing {
                            target: "java",
                            reason: under("no cacerts keystore found"),
                        })
                    }
                    None => {}
                }
            }
        }
    }
    Ok(out)
}

/// The CA, as the reports show it.
#[derive(Debug, Clone, Serialize)]
pub struct CaSummary {
    /// Subject, RFC 4514.
    pub subject: String,
    /// SHA-256, hex.
    pub sha256: String,
    /// The short id in the names tlskit gives it.
    pub id: String,
    /// Permitted name subtrees (empty: unconstrained).
    pub permitted: Vec<String>,
    /// Excluded name subtrees.
    pub excluded: Vec<String>,
    /// End of validity, RFC 3339.
    pub not_after: String,
}

impl CaSummary {
    /// The summary of `ca`.
    pub fn of(ca: &CaCert) -> Self {
        CaSummary {
            subject: ca.subject.clone(),
            sha256: ca.sha256.clone(),
            id: ca.id().to_string(),
            permitted: ca.permitted.clone(),
            excluded: ca.excluded.clone(),
            not_after: ca.not_after.clone(),
        }
    }
}

/// What happened (or would happen) to one target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The target.
    pub target: TargetKind,
    /// Where.
    pub location: String,
    /// The steps, as sentences.
    pub actions: Vec<String>,
    /// Notes (what is generated rather than run, what was already there).
    pub notes: Vec<String>,
}

/// A warning in a report.
#[derive(Debug, Clone, Serialize)]
pub struct WarningReport {
    /// Stable code.
    pub code: &'static str,
    /// The sentence.
    pub message: &'static str,
}

/// The result of an install.
#[derive(Debug, Clone, Serialize)]
pub struct InstallReport {
    /// The CA.
    pub certificate: CaSummary,
    /// What is worth knowing about it.
    pub warnings: Vec<WarningReport>,
    /// Nothing was changed on purpose.
    pub dry_run: bool,
    /// Something was changed.
    pub changed: bool,
    /// The journal written (`None`: nothing changed).
    pub journal: Option<PathBuf>,
    /// One report per target.
    pub targets: Vec<TargetReport>,
}

/// The result of an uninstall.
#[derive(Debug, Clone, Serialize)]
pub struct UninstallReport {
    /// The CA.
    pub certificate: CaSummary,
    /// Whether a journal for it was found (without one nothing is changed).
    pub found: bool,
    /// Nothing was changed on purpose.
    pub dry_run: bool,
    /// The journal read.
    pub journal: PathBuf,
    /// One report per target, in undo order.
    pub targets: Vec<TargetReport>,
}

/// One journal in a list.
#[derive(Debug, Clone, Serialize)]
pub struct JournalSummary {
    /// The file.
    pub path: PathBuf,
    /// The CA's SHA-256 (`None`: unreadable journal).
    pub sha256: Option<String>,
    /// The CA's subject.
    pub subject: Option<String>,
    /// Every step done (`false`: an install stopped half-way; `uninstall` undoes it).
    pub complete: bool,
    /// Why it does not read, if it does not.
    pub error: Option<String>,
}

/// A target found, in a list.
#[derive(Debug, Clone, Serialize)]
pub struct FoundTarget {
    /// The target.
    pub target: TargetKind,
    /// Where.
    pub location: String,
}

/// The result of a list.
#[derive(Debug, Clone, Serialize)]
pub struct ListReport {
    /// The targets looked at.
    pub targets: Vec<FoundTarget>,
    /// The CAs tlskit installed, by target.
    pub installed: Vec<Listed>,
    /// The journals in the state directory.
    pub journals: Vec<JournalSummary>,
    /// Targets that could not be listed (one sentence each).
    pub errors: Vec<String>,
}

fn warnings(ca: &CaCert) -> Vec<WarningReport> {
    ca.warnings()
        .into_iter()
        .map(|w: Warning| WarningReport {
            code: w.code(),
            message: w.message(),
        })
        .collect()
}

/// Add the reports of `entries` (grouped by target and location, in order) to `out`,
/// with `sentence` of each step.
fn group(
    entries: &[&Entry],
    sentence: impl Fn(&Entry) -> Option<String>,
    out: &mut Vec<TargetReport>,
) {
    for e in entries {
        let Some(s) = sentence(e) else { continue };
        match out
            .iter_mut()
            .find(|r| r.target == e.target && r.location == e.location)
        {
            Some(r) => r.actions.push(s),
            None => out.push(TargetReport {
                target: e.target,
                location: e.location.clone(),
                actions: vec![s],
                notes: Vec::new(),
            }),
        }
    }
}

/// Install `ca` into the targets of `opts`. Every step is written to the journal before it
/// runs; when one fails, the steps before it are undone and the error says which.
pub fn install(ca: &CaCert, opts: &Options, runner: &dyn Runner) -> Result<InstallReport> {
    let opts = opts.absolute()?;
    install_into(&detect(&opts)?, ca, &opts, runner)
}

/// [`install`] into `targets` (found by [`detect`], or made by the caller); `opts` gives
/// the state directory and `dry_run`.
pub fn install_into(
    targets: &[Box<dyn Target>],
    ca: &CaCert,
    opts: &Options,
    runner: &dyn Runner,
) -> Result<InstallReport> {
    if targets.is_empty() {
        return Err(TrustError::NoTarget(match &opts.root {
            Some(r) => format!("nothing found under {}", r.display()),
            None => "no system store tool, NSS database or JDK found".into(),
        }));
    }
    let state = opts.state_dir()?;
    let journal_path = state.journal(ca);
    if journal_path.exists() {
        return Err(TrustError::AlreadyInstalled {
            journal: journal_path,
        });
    }
    let backup_dir = state.backups(ca);
    let mut backups = Backups::new(backup_dir.clone());
    let mut entries = Vec::new();
    let mut reports = Vec::new();
    for t in targets {
        let plan = t.plan(ca, runner, &mut backups)?;
        reports.push(TargetReport {
            target: t.kind(),
            location: t.location(),
            actions: plan.steps.iter().map(|s| s.describe()).collect(),
            notes: plan.notes,
        });
        entries.extend(plan.steps.into_iter().map(|step| Entry {
            target: t.kind(),
            location: t.location(),
            state: State::Planned,
            step,
        }));
    }
    let mut report = InstallReport {
        certificate: CaSummary::of(ca),
        warnings: warnings(ca),
        dry_run: opts.dry_run,
        changed: false,
        journal: None,
        targets: reports,
    };
    if opts.dry_run || entries.is_empty() {
        return Ok(report);
    }
    let made = state.create()?;
    let mut journal = Journal::new(ca, entries);
    journal.made_dirs = made;
    journal.write(&journal_path)?;
    let cx = Ctx {
        runner,
        ca,
        backups: &backup_dir,
    };
    for i in 0..journal.entries.len() {
        journal.entries[i].state = State::Started;
        journal.write(&journal_path)?;
        if let Err(e) = journal.entries[i].step.apply(&cx) {
            let step = journal.entries[i].step.describe();
            let (failures, _) = undo_all(&mut journal, &journal_path, &cx);
            if failures.is_empty() {
                cleanup(&journal, &journal_path, &backup_dir);
            }
            return Err(TrustError::Install {
                step,
                source: Box::new(e),
                rollback: failures,
            });
        }
        journal.entries[i].state = State::Done;
        journal.write(&journal_path)?;
    }
    journal.complete = true;
    journal.write(&journal_path)?;
    report.changed = true;
    report.journal = Some(journal_path);
    Ok(report)
}

/// Undo every step begun, last first; each undone step is marked in the journal so that a
/// second run does not repeat it. Returns the failures (sentences) and the notes.
fn undo_all(
    journal: &mut Journal,
    path: &Path,
    cx: &Ctx<'_>,
) -> (Vec<String>, Vec<(usize, String)>) {
    let mut failures = Vec::new();
    let mut notes = Vec::new();
    for i in (0..journal.entries.len()).rev() {
        if journal.entries[i].state == State::Planned {
            continue;
        }
        match journal.entries[i].step.undo(cx) {
            Ok(note) => {
                if let Some(n) = note {
                    notes.push((i, n));
                }
                journal.entries[i].state = State::Planned;
                journal.complete = false;
                if let Err(e) = journal.write(path) {
                    failures.push(format!("cannot update the journal: {e}"));
                    return (failures, notes);
                }
            }
            Err(e) => failures.push(format!(
                "{}: {e}",
                journal.entries[i]
                    .step
                    .describe_undo()
                    .unwrap_or_else(|| journal.entries[i].step.describe())
            )),
        }
    }
    (failures, notes)
}

/// After a full undo: the journal, its backups and the state directories it made go.
fn cleanup(journal: &Journal, path: &Path, backups: &Path) {
    let _ = std::fs::remove_file(path);
    // The copies the journal made, no longer needed once everything is restored; files
    // moved aside by the undo (changed since the install) stay, and so does the directory.
    for e in &journal.entries {
        if let crate::step::Step::Backup { copy, .. } = &e.step {
            let _ = std::fs::remove_file(copy);
        }
    }
    let _ = std::fs::remove_dir(backups);
    for d in journal.made_dirs.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

/// Undo the install of `ca` recorded in its journal (a complete one or one stopped
/// half-way). Without a journal nothing is changed (`found: false`).
pub fn uninstall(ca: &CaCert, opts: &Options, runner: &dyn Runner) -> Result<UninstallReport> {
    let opts = opts.absolute()?;
    let state = opts.state_dir()?;
    let path = state.journal(ca);
    let mut report = UninstallReport {
        certificate: CaSummary::of(ca),
        found: false,
        dry_run: opts.dry_run,
        journal: path.clone(),
        targets: Vec::new(),
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(report);
    }
    report.found = true;
    let mut journal = Journal::read(&path)?;
    if journal.sha256 != ca.sha256 {
        return Err(TrustError::Journal {
            path,
            reason: "it records another certificate".into(),
        });
    }
    let begun: Vec<&Entry> = journal
        .entries
        .iter()
        .rev()
        .filter(|e| e.state != State::Planned)
        .collect();
    group(&begun, |e| e.step.describe_undo(), &mut report.targets);
    if opts.dry_run {
        return Ok(report);
    }
    let backup_dir = state.backups(ca);
    let cx = Ctx {
        runner,
        ca,
        backups: &backup_dir,
    };
    let (failures, notes) = undo_all(&mut journal, &path, &cx);
    for (i, n) in notes {
        let e = &journal.entries[i];
        if let Some(r) = report
            .targets
            .iter_mut()
            .find(|r| r.target == e.target && r.location == e.location)
        {
            r.notes.push(n);
        }
    }
    if !failures.is_empty() {
        return Err(TrustError::Undo {
            journal: path,
            failures,
        });
    }
    cleanup(&journal, &path, &backup_dir);
    Ok(report)
}

/// The CAs tlskit installed in the targets of `opts`, and the journals it keeps.
pub fn list(opts: &Options, runner: &dyn Runner) -> Result<ListReport> {
    let opts = opts.absolute()?;
    list_in(&detect(&opts)?, &opts, runner)
}

/// [`list`] over `targets`.
pub fn list_in(
    targets: &[Box<dyn Target>],
    opts: &Options,
    runner: &dyn Runner,
) -> Result<ListReport> {
    let mut report = ListReport {
        targets: targets
            .iter()
            .map(|t| FoundTarget {
                target: t.kind(),
                location: t.location(),
            })
            .collect(),
        installed: Vec::new(),
        journals: Vec::new(),
        errors: Vec::new(),
    };
    for t in targets {
        match t.list(runner) {
            Ok(l) => report.installed.extend(l),
            Err(e) => report.errors.push(format!("{}: {e}", t.location())),
        }
    }
    if let Ok(state) = opts.state_dir() {
        for (path, j) in state.journals() {
            report.journals.push(match j {
                Ok(j) => JournalSummary {
                    path,
                    sha256: Some(j.sha256),
                    subject: Some(j.subject),
                    complete: j.complete,
                    error: None,
                },
                Err(e) => JournalSummary {
                    path,
                    sha256: None,
                    subject: None,
                    complete: false,
                    error: Some(e.to_string()),
                },
            });
        }
    }
    Ok(report)
}
