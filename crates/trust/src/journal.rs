//! The journal: every step of an install, written atomically before the step runs and
//! again after it, so that `uninstall` can undo exactly what was done, also after a
//! failure or a killed process half-way.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cert::CaCert;
use crate::error::{Result, TrustError};
use crate::step::Step;
use crate::target::TargetKind;

/// The journal format's name and version.
pub const JOURNAL_FORMAT: &str = "tlskit.trust.journal/1";

/// Largest journal read back.
const MAX_JOURNAL_BYTES: u64 = 4 << 20;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Not begun.
    Planned,
    /// Begun: it may or may not have taken effect.
    Started,
    /// Done.
    Done,
}

/// One step and the target it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The target.
    pub target: TargetKind,
    /// The target's location, in words (`Debian layout under /`, an NSS database path).
    pub location: String,
    /// Where the step stands.
    pub state: State,
    /// The step.
    #[serde(flatten)]
    pub step: Step,
}

/// The record of one CA's install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// [`JOURNAL_FORMAT`].
    pub format: String,
    /// The CA's SHA-256.
    pub sha256: String,
    /// Its subject.
    pub subject: String,
    /// State directories the install created (removed, if empty, after the uninstall).
    pub made_dirs: Vec<PathBuf>,
    /// Every step, in the order they run.
    pub entries: Vec<Entry>,
    /// Every step done.
    pub complete: bool,
}

impl Journal {
    /// A journal for `ca` with `entries` planned.
    pub fn new(ca: &CaCert, entries: Vec<Entry>) -> Self {
        Journal {
            format: JOURNAL_FORMAT.into(),
            sha256: ca.sha256.clone(),
            subject: ca.subject.clone(),
            made_dirs: Vec::new(),
            entries,
            complete: false,
        }
    }

    /// Read a journal file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = tlskit_io::read(path, MAX_JOURNAL_BYTES)?;
        let j: Journal = serde_json::from_slice(&text).map_err(|e| TrustError::Journal {
            path: path.to_path_buf(),
            reason: format!("line {}, column {}", e.line(), e.column()),
        })?;
        if j.format != JOURNAL_FORMAT {
            return Err(TrustError::Journal {
                path: path.to_path_buf(),
                reason: "another format version".into(),
            });
        }
        Ok(j)
    }

    /// Write it atomically (temporary file, renamed over the old journal, directory
    /// synced), so that a crash leaves the previous or the new journal, never half of one.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(self).map_err(|e| TrustError::Journal {
            path: path.to_path_buf(),
            reason: format!("cannot serialise: {e}"),
        })?;
        text.push(b'\n');
        tlskit_io::replace(path, &[&text], true)?;
        Ok(())
    }
}

/// Where the journals of one state directory live: `DIR/ID.json` and its backups in
/// `DIR/ID.bak/`.
#[derive(Debug, Clone)]
pub struct StateDir {
    /// The directory.
    pub dir: PathBuf,
}

impl StateDir {
    /// The journal of `ca`.
    pub fn journal(&self, ca: &CaCert) -> PathBuf {
        self.dir.join(format!("{}.json", ca.id()))
    }

    /// The backup directory of `ca`'s journal.
    pub fn backups(&self, ca: &CaCert) -> PathBuf {
        self.dir.join(format!("{}.bak", ca.id()))
    }

    /// Create the directory and its missing parents (0700), returning those created,
    /// outermost first.
    pub fn create(&self) -> Result<Vec<PathBuf>> {
        use std::os::unix::fs::DirBuilderExt;
        let mut missing = Vec::new();
        let mut p = self.dir.as_path();
        while !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err() {
            missing.push(p.to_path_buf());
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
        missing.reverse();
        for d in &missing {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(d)
                .map_err(|e| TrustError::io(d, "cannot create the state directory", e))?;
        }
        Ok(missing)
    }

    /// Every journal here (name `*.json`), sorted by name; files that do not read as a
    /// journal are reported as errors in the list.
    pub fn journals(&self) -> Vec<(PathBuf, Result<Journal>)> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| {
                let j = Journal::read(&p);
                (p, j)
            })
            .collect()
    }
}
