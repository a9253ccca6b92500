//! File access for the pki crate, through tlskit-io (the workspace's one bounded reader
//! and one atomic writer): reads refuse FIFOs and devices and stop at
//! [`tlskit_io::MAX_INPUT_BYTES`]; writes go to a temporary file (0600) in the target
//! directory, synced, then renamed into place. Without `force` an existing file is never
//! replaced (the final rename refuses to clobber, so a file that appears meanwhile is
//! safe too); with `force` the old file is kept as `FILE.bak` first.

use std::path::Path;

use crate::Result;

/// One file to write.
pub use tlskit_io::Output;

/// Read a whole input file (a regular file of at most [`tlskit_io::MAX_INPUT_BYTES`]),
/// naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    Ok(tlskit_io::read(path, tlskit_io::MAX_INPUT_BYTES)?)
}

/// [`read`] for a text file.
pub fn read_to_string(path: &Path) -> Result<String> {
    Ok(tlskit_io::read_to_string(path, tlskit_io::MAX_INPUT_BYTES)?)
}

/// Fail early when an output exists and `force` is off (the final rename checks again).
pub fn check_absent(path: &Path, force: bool) -> Result<()> {
    Ok(tlskit_io::check_absent(path, force)?)
}

/// Fail early when `path` could not be written: the output must be absent (unless
/// `force`) and its directory must accept a new file. Used before work with side effects
/// (a CA's index entry) so that a bad output path does not waste it.
pub fn check_writable(path: &Path, force: bool) -> Result<()> {
    Ok(tlskit_io::check_writable(path, force)?)
}

/// Write one file atomically.
pub fn write_atomic(path: &Path, bytes: &[u8], private: bool, force: bool) -> Result<()> {
    Ok(tlskit_io::write_atomic(path, bytes, private, force)?)
}

/// Write several files so that either all appear or none does (as far as a file system
/// allows: each rename is atomic; when a later one fails the earlier new files are removed).
pub fn write_all_or_nothing(outputs: &[Output<'_>], force: bool) -> Result<()> {
    Ok(tlskit_io::write_all_or_nothing(outputs, force)?)
}

/// Replace a small state file atomically, without keeping a backup (for state that is
/// rewritten on every operation, such as a CA's `serial`).
pub(crate) fn replace_state(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(tlskit_io::replace(path, &[bytes], false)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::PkiError;

    /// The messages the CLI shows: "already exists (use --force ...)" and the limit.
    #[test]
    fn errors_map_to_pki_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.pem");
        write_atomic(&p, b"one", true, false).unwrap();
        let e = write_atomic(&p, b"two", true, false).unwrap_err();
        assert!(matches!(e, PkiError::Exists { .. }), "{e}");
        assert!(e.to_string().contains("use --force"), "{e}");
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
