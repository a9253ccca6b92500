//! What every trust store offers: a plan of steps to install a CA, and a list of the CAs
//! tlskit installed there.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cert::{pem_certs, CaCert};
use crate::error::Result;
use crate::run::Runner;
use crate::step::Step;

/// The prefix of every name tlskit gives an installed CA (file names, NSS nicknames, Java
/// aliases), followed by [`CaCert::id`].
pub const NAME_PREFIX: &str = "tlskit-";

/// The kinds of trust store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// The operating system's store (Debian-like or Fedora-like).
    System,
    /// NSS databases (Chromium's ~/.pki/nssdb, Firefox profiles).
    Nss,
    /// A Java keystore (cacerts).
    Java,
}

impl TargetKind {
    /// Every kind, in install order.
    pub const ALL: [TargetKind; 3] = [TargetKind::System, TargetKind::Nss, TargetKind::Java];

    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::System => "system",
            TargetKind::Nss => "nss",
            TargetKind::Java => "java",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A CA tlskit installed in a store (found by its name there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// The target.
    pub target: TargetKind,
    /// The store (`Debian layout under /`, a database path).
    pub location: String,
    /// The file, nickname or alias.
    pub name: String,
    /// Its subject (`None` when it could not be read back).
    pub subject: Option<String>,
    /// Its SHA-256 (`None` when it could not be read back).
    pub sha256: Option<String>,
    /// For a system store: whether the generated bundle holds it (`None` elsewhere).
    pub in_bundle: Option<bool>,
}

/// Names backup copies in a journal's backup directory: `NN-NAME`.
#[derive(Debug)]
pub struct Backups {
    dir: PathBuf,
    next: usize,
}

impl Backups {
    /// Copies go to `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Backups { dir, next: 1 }
    }

    /// A path for the copy of `original`.
    pub fn copy_of(&mut self, original: &Path) -> PathBuf {
        let name = original
            .file_name()
            .map_or("file".into(), |n| n.to_string_lossy().into_owned());
        let p = self.dir.join(format!("{:02}-{name}", self.next));
        self.next += 1;
        p
    }

    /// A backup step for `path` if it exists, and the copy's path.
    pub fn step(&mut self, path: &Path) -> Option<(Step, PathBuf)> {
        if std::fs::symlink_metadata(path).is_err() {
            return None;
        }
        let copy = self.copy_of(path);
        Some((
            Step::Backup {
                path: path.to_path_buf(),
                copy: copy.clone(),
            },
            copy,
        ))
    }
}

/// What a target would do to install a CA.
#[derive(Debug, Default)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Sentences worth showing (what is generated rather than run, what is already there).
    pub notes: Vec<String>,
}

/// One trust store.
pub trait Target {
    /// Which kind.
    fn kind(&self) -> TargetKind;
    /// Where, in words.
    fn location(&self) -> String;
    /// The steps that install `ca` (nothing is changed yet). An empty plan with a note:
    /// already there.
    fn plan(&self, ca: &CaCert, runner: &dyn Runner, backups: &mut Backups) -> Result<Plan>;
    /// The CAs tlskit installed here.
    fn list(&self, runner: &dyn Runner) -> Result<Vec<Listed>>;
}

/// Create `dir` and its missing parents as [`Step::MakeDir`] steps, outermost first.
pub(crate) fn make_dirs(dir: &Path) -> Vec<Step> {
    let mut missing = Vec::new();
    let mut p = dir;
    while std::fs::symlink_metadata(p).is_err() {
        missing.push(Step::MakeDir {
            path: p.to_path_buf(),
        });
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => break,
        }
    }
    missing.reverse();
    missing
}

/// Subject and SHA-256 of a DER certificate.
pub(crate) fn facts(der: &[u8]) -> (Option<String>, Option<String>) {
    match CaCert::from_bytes(der, Path::new("-")) {
        Ok(c) => (Some(c.subject), Some(c.sha256)),
        Err(_) => (None, None),
    }
}

/// The entries of a database's listing (`names`, an NSS nickname or a keystore alias
/// each) that tlskit installed (named [`NAME_PREFIX`]...), each with the subject and
/// hash of the certificate `fetch` reads for it (none when unreadable).
pub(crate) fn listed_by_name(
    target: TargetKind,
    location: &str,
    names: Vec<String>,
    mut fetch: impl FnMut(&str) -> Result<Option<Vec<u8>>>,
) -> Result<Vec<Listed>> {
    let mut found = Vec::new();
    for name in names {
        if !name.starts_with(NAME_PREFIX) {
            continue;
        }
        let der = fetch(&name)?;
        let (subject, sha256) = der.as_deref().map_or((None, None), facts);
        found.push(Listed {
            target,
            location: location.to_string(),
            name,
            subject,
            sha256,
            in_bundle: None,
        });
    }
    Ok(found)
}

/// Whether a PEM file holds `der`.
pub(crate) fn file_holds(path: &Path, der: &[u8]) -> bool {
    tlskit_io::read(path, crate::step::MAX_STORE_FILE_BYTES)
        .is_ok_and(|b| pem_certs(&b).iter().any(|c| c == der))
}
