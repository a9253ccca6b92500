#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod child;
pub mod redact;
pub use redact::{redact, redact_known, Redacted};

use std::fs::{self, File, Metadata};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Default limit for one input file (certificates, keys, requests, bundles, PKCS#12,
/// configuration): 64 MiB, far above any real one (the largest public CA bundles are
/// under 1 MiB) and small enough that reading one can never exhaust memory.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// A file could not be read. Displays as `PATH: reason`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct ReadError {
    /// The file as named by the caller.
    pub path: PathBuf,
    /// Why.
    pub kind: ReadErrorKind,
}

/// Why a file could not be read (displays without the path).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The operating system refused to open or read it.
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    /// A FIFO, device, socket or directory: refused without reading (reading one could
    /// block for ever or never end).
    #[error("not a regular file ({0}): refused without reading it")]
    NotRegular(&'static str),
    /// Larger than the caller's limit (checked before reading, and again while reading
    /// in case the file grows).
    #[error("file too large ({size} bytes; limit {limit} bytes)")]
    TooLarge {
        /// Bytes found (the size from `fstat`, or how far the read got).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Text was expected (a configuration file) and the bytes are not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
}

impl ReadError {
    fn new(path: &Path, kind: ReadErrorKind) -> Self {
        ReadError {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// What kind of file `t` is, in words, for messages.
fn type_name(t: fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// Open `path` for reading without blocking and check that the opened file is a regular
/// file. Returns the file and its metadata (from `fstat` on the handle).
pub fn open_regular(path: &Path) -> Result<(File, Metadata), ReadError> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            // Opening a Unix socket fails with ENXIO: say what it is.
            if e.raw_os_error() == Some(libc::ENXIO) {
                ReadError::new(path, ReadErrorKind::NotRegular("socket"))
            } else {
                ReadError::new(path, ReadErrorKind::Io(e))
            }
        })?;
    let md = file
        .metadata()
        .map_err(|e| ReadError::new(path, ReadErrorKind::Io(e)))?;
    if !md.is_file() {
        return Err(ReadError::new(
            path,
            ReadErrorKind::NotRegular(type_name(md.file_type())),
        ));
    }
    Ok((file, md))
}

/// Read a file opened by [`open_regular`], at most `limit` bytes: its size is checked
/// first, and the read stops one byte past the limit if the file grew meanwhile.
pub fn read_open(file: File, md: &Metadata, path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    read_open_into(file, md, path, limit, &mut buf)?;
    Ok(buf)
}

/// [`read_open`] appending to `buf` (so a caller can reuse one buffer for many files).
pub fn read_open_into(
    file: File,
    md: &Metadata,
    path: &Path,
    limit: u64,
    buf: &mut Vec<u8>,
) -> Result<(), ReadError> {
    if md.len() > limit {
        return Err(ReadError::new(
            path,
            ReadErrorKind::TooLarge {
                size: md.len(),
                limit,
            },
        ));
    }
    let start = buf.len();
    // `md.len() <= limit`: the reservation is bounded too.
    buf.reserve(md.len() as usize + 1);
    file.take(limit.saturating_add(1))
        .read_to_end(buf)
        .map_err(|e| ReadError::new(path, ReadErrorKind::Io(e)))?;
    let got = (buf.len() - start) as u64;
    if got > limit {
        buf.truncate(start);
        return Err(ReadError::new(
            path,
            ReadErrorKind::TooLarge { size: got, limit },
        ));
    }
    Ok(())
}

/// Read a whole regular file of at most `limit` bytes (see the crate docs).
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let (file, md) = open_regular(path)?;
    read_open(file, &md, path, limit)
}

/// [`read`] for a text file (UTF-8).
pub fn read_to_string(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read(path, limit)?).map_err(|_| ReadError::new(path, ReadErrorKind::NotUtf8))
}

/// Read at most `limit` bytes from a stream (standard input), named `name` in errors.
pub fn read_stream(r: impl Read, name: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| ReadError::new(name, ReadErrorKind::Io(e)))?;
    if buf.len() as u64 > limit {
        return Err(ReadError::new(
            name,
            ReadErrorKind::TooLarge {
                size: buf.len() as u64,
                limit,
            },
        ));
    }
    Ok(buf)
}

/// A file could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The output exists and replacing it was not asked for.
    #[error("{}: already exists", path.display())]
    Exists {
        /// The output.
        path: PathBuf,
    },
    /// The operating system refused (the path is the file or directory concerned).
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

fn werr(path: &Path, source: std::io::Error) -> WriteError {
    WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

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

/// Fail early when an output exists and `force` is off (the final rename checks again).
pub fn check_absent(path: &Path, force: bool) -> Result<(), WriteError> {
    if !force && fs::symlink_metadata(path).is_ok() {
        return Err(WriteError::Exists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Fail early when `path` could not be written: the output must be absent (unless
/// `force`) and its directory must accept a new file.
pub fn check_writable(path: &Path, force: bool) -> Result<(), WriteError> {
    check_absent(path, force)?;
    let dir = parent_dir(path);
    tempfile::Builder::new()
        .prefix(".tlskit-probe-")
        .tempfile_in(&dir)
        .map(drop)
        .map_err(|e| werr(&dir, e))
}

/// Write one file atomically. Without `force` an existing file is never replaced (the
/// final rename refuses to clobber, so a file that appears meanwhile is safe too); with
/// `force` the old file is kept as `FILE.bak` first.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    private: bool,
    force: bool,
) -> Result<(), WriteError> {
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
/// allows: each rename is atomic; when a later one fails the earlier new files are
/// removed). `force`: as in [`write_atomic`].
pub fn write_all_or_nothing(outputs: &[Output<'_>], force: bool) -> Result<(), WriteError> {
    for o in outputs {
        check_absent(o.path, force)?;
    }
    let mut temps = Vec::with_capacity(outputs.len());
    for o in outputs {
        temps.push(prepare(o.path, &[o.bytes], o.private)?);
    }
    let mut done: Vec<&Path> = Vec::new();
    for (o, tmp) in outputs.iter().zip(temps) {
        let r = if force {
            backup(o.path).and_then(|()| {
                tmp.persist(o.path)
                    .map(drop)
                    .map_err(|e| werr(o.path, e.error))
            })
        } else {
            tmp.persist_noclobber(o.path).map(drop).map_err(|e| {
                if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    WriteError::Exists {
                        path: o.path.to_path_buf(),
                    }
                } else {
                    werr(o.path, e.error)
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
        sync_dir(o.path);
    }
    Ok(())
}

/// Replace `path` atomically with the concatenation of `parts`, without a backup (for
/// state rewritten on every operation, such as a CA's `serial`, and for snapshots, whose
/// previous version a running server may still hold open).
pub fn replace(path: &Path, parts: &[&[u8]], private: bool) -> Result<(), WriteError> {
    let tmp = prepare(path, parts, private)?;
    tmp.persist(path).map_err(|e| werr(path, e.error))?;
    sync_dir(path);
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Best effort: make the rename itself durable.
fn sync_dir(path: &Path) {
    if let Ok(d) = File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
}

fn prepare(
    path: &Path,
    parts: &[&[u8]],
    private: bool,
) -> Result<tempfile::NamedTempFile, WriteError> {
    let dir = parent_dir(path);
    // tempfile creates the file with mode 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(".tlskit-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| werr(&dir, e))?;
    if !private {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o644))
            .map_err(|e| werr(tmp.path(), e))?;
    }
    for p in parts {
        tmp.write_all(p).map_err(|e| werr(path, e))?;
    }
    tmp.as_file().sync_all().map_err(|e| werr(path, e))?;
    Ok(tmp)
}

/// Keep the current content of `path` (if any) as `path.bak`, atomically replacing an
/// older backup.
fn backup(path: &Path) -> Result<(), WriteError> {
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
    fs::hard_link(path, &tmp).map_err(|e| werr(&tmp, e))?;
    fs::rename(&tmp, &bak).map_err(|e| werr(&bak, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn refuses_non_regular_files_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(ok.success());
        let t = Instant::now();
        let e = read(&fifo, 100).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(matches!(e.kind, ReadErrorKind::NotRegular("FIFO")), "{e}");
        assert!(e.to_string().contains("not a regular file (FIFO)"), "{e}");
        let e = read(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(matches!(
            e.kind,
            ReadErrorKind::NotRegular("character device")
        ));
        let e = read(dir.path(), 100).unwrap_err();
        assert!(matches!(e.kind, ReadErrorKind::NotRegular("directory")));
        let sock = dir.path().join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = read(&sock, 100).unwrap_err();
        assert!(matches!(e.kind, ReadErrorKind::NotRegular("socket")), "{e}");
    }

    #[test]
    fn size_is_checked_before_reading_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        // Sparse: 1 GiB of size, no data blocks.
        File::create(&p).unwrap().set_len(1 << 30).unwrap();
        let t = Instant::now();
        let e = read(&p, MAX_INPUT_BYTES).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(
            e.to_string()
                .contains(&format!("1073741824 bytes; limit {MAX_INPUT_BYTES} bytes")),
            "{e}"
        );
        fs::write(&p, b"12345").unwrap();
        assert_eq!(read(&p, 5).unwrap(), b"12345");
        assert!(matches!(
            read(&p, 4).unwrap_err().kind,
            ReadErrorKind::TooLarge { size: 5, limit: 4 }
        ));
        let e = read_stream(&b"abcdef"[..], Path::new("-"), 3).unwrap_err();
        assert!(matches!(
            e.kind,
            ReadErrorKind::TooLarge { size: 4, limit: 3 }
        ));
        fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_to_string(&p, 10).unwrap_err().kind,
            ReadErrorKind::NotUtf8
        ));
    }

    #[test]
    fn refuses_existing_and_keeps_backup_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.pem");
        write_atomic(&p, b"one", true, false).unwrap();
        assert!(matches!(
            write_atomic(&p, b"two", true, false),
            Err(WriteError::Exists { .. })
        ));
        assert_eq!(fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"two", true, true).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read(dir.path().join("k.pem.bak")).unwrap(), b"one");
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    /// A reader holding the old file keeps its content: replacement is by rename.
    #[test]
    fn replace_never_writes_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.snap");
        replace(&p, &[b"old ", b"content"], false).unwrap();
        let held = File::open(&p).unwrap();
        replace(&p, &[b"new"], false).unwrap();
        let mut s = String::new();
        (&held).read_to_string(&mut s).unwrap();
        assert_eq!(s, "old content");
        assert_eq!(fs::read(&p).unwrap(), b"new");
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
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
