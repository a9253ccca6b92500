//! Atomic file writes: a temporary file created (mode 0600) in the target directory,
//! filled and synced, then renamed into place. Without `force` an existing file is never
//! replaced (the final rename refuses to clobber, so a file that appears meanwhile is safe
//! too); with `force` the old file is kept as `FILE.bak` first.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{PkiError, Result};

/// One file to write.
#[derive(Debug, Clone)]
pub struct Output<'a> {
    /// Where it goes.
    pub path: &'a Path,
    /// What it holds.
    pub bytes: &'a [u8],
    /// A private file (key, PKCS#12): stays 0600. Public files become 0644.
    pub private: bool,
}

/// Read a whole file, naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| PkiError::io(path, e))
}

/// Fail early when an output exists and `force` is off (the final rename checks again).
pub fn check_absent(path: &Path, force: bool) -> Result<()> {
    if !force && fs::symlink_metadata(path).is_ok() {
        return Err(PkiError::Exists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Fail early when `path` could not be written: the output must be absent (unless
/// `force`) and its directory must accept a new file. Used before work with side effects
/// (a CA's index entry) so that a bad output path does not waste it.
pub fn check_writable(path: &Path, force: bool) -> Result<()> {
    check_absent(path, force)?;
    let dir = parent_dir(path);
    tempfile::Builder::new()
        .prefix(".tlskit-probe-")
        .tempfile_in(&dir)
        .map(drop)
        .map_err(|e| PkiError::io(&dir, e))
}

/// Write one file atomically.
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool, force: bool) -> Result<()> {
    write_all_or_nothing(
        &[Output {
            path,
            bytes,
            private,
        }],
        force,
    )
}

/// Write several files so that either all appear or none does (as far as a file system
/// allows: each rename is atomic; when a later one fails the earlier new files are removed).
pub fn write_all_or_nothing(outputs: &[Output<'_>], force: bool) -> Result<()> {
    for o in outputs {
        check_absent(o.path, force)?;
    }
    let mut temps = Vec::with_capacity(outputs.len());
    for o in outputs {
        temps.push(prepare(o)?);
    }
    let mut done: Vec<&Path> = Vec::new();
    for (o, tmp) in outputs.iter().zip(temps) {
        let r = if force {
            backup(o.path).and_then(|()| {
                tmp.persist(o.path)
                    .map(|_| ())
                    .map_err(|e| PkiError::io(o.path, e.error))
            })
        } else {
            tmp.persist_noclobber(o.path).map(|_| ()).map_err(|e| {
                if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    PkiError::Exists {
                        path: o.path.to_path_buf(),
                    }
                } else {
                    PkiError::io(o.path, e.error)
                }
            })
        };
        if let Err(e) = r {
            for p in done {
                let _ = fs::remove_file(p);
            }
            return Err(e);
        }
        done.push(o.path);
    }
    Ok(())
}

/// Replace a small state file atomically, without keeping a backup (for state that is
/// rewritten on every operation, such as a CA's `serial`).
pub(crate) fn replace_state(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = prepare(&Output {
        path,
        bytes,
        private: false,
    })?;
    tmp.persist(path)
        .map(|_| ())
        .map_err(|e| PkiError::io(path, e.error))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn prepare(o: &Output<'_>) -> Result<tempfile::NamedTempFile> {
    let dir = parent_dir(o.path);
    // tempfile creates the file with mode 0600 on Unix.
    let mut tmp = tempfile::Builder::new()
        .prefix(".tlskit-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| PkiError::io(&dir, e))?;
    #[cfg(unix)]
    if !o.private {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o644))
            .map_err(|e| PkiError::io(tmp.path(), e))?;
    }
    tmp.write_all(o.bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| PkiError::io(o.path, e))?;
    Ok(tmp)
}

/// Keep the current content of `path` (if any) as `path.bak`, atomically replacing an
/// older backup.
fn backup(path: &Path) -> Result<()> {
    if fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let mut bak = path.as_os_str().to_owned();
    bak.push(".bak");
    let bak = PathBuf::from(bak);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".bak.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    fs::hard_link(path, &tmp).map_err(|e| PkiError::io(&tmp, e))?;
    fs::rename(&tmp, &bak).map_err(|e| PkiError::io(&bak, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn refuses_existing_and_keeps_backup_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.pem");
        write_atomic(&p, b"one", true, false).unwrap();
        assert!(matches!(
            write_atomic(&p, b"two", true, false),
            Err(PkiError::Exists { .. })
        ));
        assert_eq!(fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"two", true, true).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read(dir.path().join("k.pem.bak")).unwrap(), b"one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // No temporary files left behind.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn all_or_nothing_removes_earlier_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        fs::write(&b, b"old").unwrap();
        let r = write_all_or_nothing(
            &[
                Output {
                    path: &a,
                    bytes: b"x",
                    private: false,
                },
                Output {
                    path: &b,
                    bytes: b"y",
                    private: false,
                },
            ],
            false,
        );
        assert!(r.is_err());
        assert!(!a.exists());
        assert_eq!(fs::read(&b).unwrap(), b"old");
    }
}
