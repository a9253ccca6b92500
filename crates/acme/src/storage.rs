//! Where ACME state lives: the account (its credentials hold the account key), each
//! certificate with its key, challenge answers, and an issuance lock. Behind the small
//! [`AcmeStorage`] trait so that a shared backend (Redis, for a fleet) can replace the
//! filesystem one; [`FsStorage`] is the only implementation today.
//!
//! Filesystem layout (directory 0700, every file 0600, each written as a temporary file
//! in the same directory, synced, then renamed over the old one):
//!
//! ```text
//! DIR/accounts/<first 16 hex of SHA-256(directory URL)>.json   account credentials (key included)
//! DIR/certs/<name>.pem                                          chain, then the PRIVATE KEY
//! DIR/locks/<name>.lock                                         advisory lock held while ordering
//! DIR/dns/<name>.json                                           DNS-01 TXT records added, not yet removed
//! ```
//!
//! The chain and its key sit in one file so a reader never sees a new chain with an old
//! key. `<name>` is the first domain, lower case, with `*` written as `_`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::AcmeError;

/// Largest file the storage reads (a chain with its key is a few KiB).
const MAX_FILE: u64 = 1 << 20;

/// A certificate chain (PEM, leaf first) with its private key (PEM).
#[derive(Clone)]
#[non_exhaustive]
pub struct StoredCert {
    /// PEM: leaf, then the chain the CA sent.
    pub chain_pem: String,
    /// PEM: the leaf's private key.
    pub key_pem: String,
}

impl StoredCert {
    /// A chain (PEM, leaf first) and its private key (PEM), as a storage read them back.
    pub fn new(chain_pem: String, key_pem: String) -> Self {
        Self { chain_pem, key_pem }
    }
}

impl std::fmt::Debug for StoredCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("StoredCert").finish_non_exhaustive()
    }
}

/// A TXT record DNS-01 added (`_acme-challenge.NAME.` and its value), remembered until it
/// is removed so that one left by a failure or a crash is removed later.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct DnsRecord {
    /// The record's absolute name.
    pub name: String,
    /// Its value (public: the CA reads it).
    pub value: String,
}

impl DnsRecord {
    /// The record `name` = `value`.
    pub fn new(name: String, value: String) -> Self {
        Self { name, value }
    }
}

/// Most records a storage keeps for one certificate (an order has at most a few hundred
/// names; more is a corrupt or hostile file).
pub const MAX_DNS_RECORDS: usize = 1000;

/// The DNS records list as stored (JSON), checked: at most [`MAX_DNS_RECORDS`], names and
/// values of sane length.
pub fn decode_dns_records(bytes: &[u8]) -> Option<Vec<DnsRecord>> {
    let v: Vec<DnsRecord> = serde_json::from_slice(bytes).ok()?;
    let sane = v.len() <= MAX_DNS_RECORDS
        && v.iter()
            .all(|r| (1..=255).contains(&r.name.len()) && (1..=255).contains(&r.value.len()));
    sane.then_some(v)
}

/// Held while one process orders a certificate; dropping it releases the lock.
pub trait IssuanceLock: Send {}

/// ACME state storage. Blocking calls: callers on the async runtime use
/// `spawn_blocking` (the filesystem implementation only touches small files).
pub trait AcmeStorage: Send + Sync {
    /// The stored account credentials (JSON) for this directory URL, if any.
    fn load_account(&self, directory: &str) -> Result<Option<Vec<u8>>, AcmeError>;
    /// Store the account credentials (JSON; they hold the account key). Credentials
    /// already stored are kept as a backup, never just overwritten.
    fn store_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError>;
    /// The stored certificate for `name`, if any.
    fn load_cert(&self, name: &str) -> Result<Option<StoredCert>, AcmeError>;
    /// Store (replace) the certificate for `name`.
    fn store_cert(&self, name: &str, cert: &StoredCert) -> Result<(), AcmeError>;
    /// Publish a challenge answer (`http-01/TOKEN` or `tls-alpn-01/DOMAIN` → key authorization).
    fn put_challenge(&self, key: &str, answer: &str) -> Result<(), AcmeError>;
    /// A published challenge answer.
    fn challenge(&self, key: &str) -> Option<String>;
    /// Withdraw a challenge answer.
    fn remove_challenge(&self, key: &str);
    /// Take the issuance lock for `name`, waiting at most `wait`.
    fn lock(&self, name: &str, wait: Duration) -> Result<Box<dyn IssuanceLock>, AcmeError>;
    /// The DNS-01 records added for the certificate `name` and not yet removed.
    fn dns_records(&self, name: &str) -> Result<Vec<DnsRecord>, AcmeError>;
    /// Replace that list (empty: nothing left to remove).
    fn set_dns_records(&self, name: &str, records: &[DnsRecord]) -> Result<(), AcmeError>;

    /// Take the lock under which one process (one node of a fleet) at a time creates or
    /// changes the account for `directory`, waiting at most `wait`: the issuance lock of a
    /// name no certificate can have (`_account.<hash of the URL>`).
    fn account_lock(
        &self,
        directory: &str,
        wait: Duration,
    ) -> Result<Box<dyn IssuanceLock>, AcmeError> {
        self.lock(&format!("_account.{}", hex16(directory)), wait)
    }

    /// Where the account credentials for `directory` are kept, in words (a path, a Redis
    /// key), for reports.
    fn account_location(&self, directory: &str) -> String {
        format!("account {}", hex16(directory))
    }

    /// Copy the stored credentials for `directory` aside as the backup `label` (written
    /// as the credentials are: 0600, atomically); where it is, or `None` when there are no
    /// credentials.
    fn backup_account(&self, directory: &str, label: &str) -> Result<Option<String>, AcmeError> {
        let _ = (directory, label);
        Err(AcmeError::Config(
            "this ACME storage keeps no account backups".into(),
        ))
    }

    /// Remove the backup `label` of the credentials for `directory` (made by
    /// [`AcmeStorage::backup_account`]); none is not an error.
    fn remove_account_backup(&self, directory: &str, label: &str) -> Result<(), AcmeError> {
        let _ = (directory, label);
        Err(AcmeError::Config(
            "this ACME storage keeps no account backups".into(),
        ))
    }

    /// Replace the stored credentials for `directory` without a backup (the caller made
    /// one: a key rollover). A rollover tries again when this fails, then writes the
    /// credentials to a local rescue file: an error here never loses the new key.
    fn replace_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        let _ = (directory, credentials);
        Err(AcmeError::Config(
            "this ACME storage cannot replace an account".into(),
        ))
    }

    /// Remove the stored credentials for `directory` (a deactivated account; the caller
    /// made a backup), so that the next order creates a new account.
    fn remove_account(&self, directory: &str) -> Result<(), AcmeError> {
        let _ = directory;
        Err(AcmeError::Config(
            "this ACME storage cannot remove an account".into(),
        ))
    }
}

/// A backup label as a file name or key part: letters, digits, `-` and `.` only.
pub fn backup_label_ok(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !label.starts_with('.')
}

/// The storage file name of a certificate for these domains.
pub fn cert_name(domains: &[String]) -> String {
    domains
        .first()
        .map(|d| d.to_ascii_lowercase().replace('*', "_"))
        .unwrap_or_default()
}

/// [`AcmeStorage`] in a local directory.
#[derive(Debug)]
pub struct FsStorage {
    dir: PathBuf,
    /// Challenge answers: only this process answers them, so memory is enough.
    challenges: Mutex<HashMap<String, String>>,
}

impl FsStorage {
    /// Open (creating it 0700 when missing) and check that it can be written: an
    /// unwritable directory is an error now, not at the first renewal.
    pub fn open(dir: &Path) -> Result<Self, AcmeError> {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let err = |p: &Path, e: std::io::Error| AcmeError::Storage {
            path: p.to_path_buf(),
            reason: e,
        };
        for d in [
            dir.to_path_buf(),
            dir.join("accounts"),
            dir.join("certs"),
            dir.join("locks"),
        ] {
            match std::fs::metadata(&d) {
                Ok(m) if m.is_dir() => {
                    if m.permissions().mode() & 0o077 != 0 {
                        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))
                            .map_err(|e| err(&d, e))?;
                    }
                }
                Ok(_) => {
                    return Err(err(
                        &d,
                        std::io::Error::new(
                            std::io::ErrorKind::NotADirectory,
                            "exists and is not a directory",
                        ),
                    ))
                }
                Err(_) => std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&d)
                    .map_err(|e| err(&d, e))?,
            }
        }
        // Writable? (Permissions alone do not say: read-only mounts, root, ACLs.)
        let probe = dir.join("certs");
        tempfile::Builder::new()
            .prefix(".probe")
            .tempfile_in(&probe)
            .map_err(|e| err(&probe, e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            challenges: Mutex::new(HashMap::new()),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn account_path(&self, directory: &str) -> PathBuf {
        self.dir
            .join("accounts")
            .join(format!("{}.json", hex16(directory)))
    }

    /// Where the DNS-01 records added for `name` are remembered.
    pub fn dns_path(&self, name: &str) -> PathBuf {
        self.dir.join("dns").join(format!("{name}.json"))
    }

    /// Where the certificate for `name` is kept.
    pub fn cert_path(&self, name: &str) -> PathBuf {
        self.dir.join("certs").join(format!("{name}.pem"))
    }
}

/// The first 16 hex digits of SHA-256(`s`): how storage keys name a directory URL.
pub fn hex16(s: &str) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, s.as_bytes());
    d.as_ref()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Replace `path` with `bytes` through tlskit-io's atomic writer (temporary file 0600 in
/// the same directory, synced, renamed over `path`, directory synced).
pub(crate) fn write_private_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    tlskit_io::replace(path, &[bytes], true).map_err(io_error)
}

/// The same writer for a public file (a certificate chain): mode 0644.
pub(crate) fn write_public_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    tlskit_io::replace(path, &[bytes], false).map_err(io_error)
}

fn io_error(e: tlskit_io::WriteError) -> std::io::Error {
    match e {
        tlskit_io::WriteError::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    }
}

/// Read through tlskit-io's bounded reader (regular files only, at most [`MAX_FILE`]
/// bytes, opened without blocking on a FIFO): `None` when the file does not exist.
pub(crate) fn read_bounded(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match tlskit_io::read(path, MAX_FILE) {
        Ok(b) => Ok(Some(b)),
        Err(e) => match e.kind {
            tlskit_io::ReadErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            tlskit_io::ReadErrorKind::Io(io) => Err(io),
            other => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                other.to_string(),
            )),
        },
    }
}

struct FileLock(#[allow(dead_code)] File);
impl IssuanceLock for FileLock {}

impl AcmeStorage for FsStorage {
    fn load_account(&self, directory: &str) -> Result<Option<Vec<u8>>, AcmeError> {
        let p = self.account_path(directory);
        read_bounded(&p).map_err(|e| AcmeError::Storage { path: p, reason: e })
    }

    fn store_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        let p = self.account_path(directory);
        if p.exists() {
            // The CA forgot the account (a reset staging or test CA): keep the old
            // credentials beside the new ones.
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let backup = p.with_extension(format!("json.{secs}.bak"));
            std::fs::hard_link(&p, &backup).map_err(|e| AcmeError::Storage {
                path: backup.clone(),
                reason: e,
            })?;
        }
        write_private_atomic(&p, credentials).map_err(|e| AcmeError::Storage { path: p, reason: e })
    }

    fn account_location(&self, directory: &str) -> String {
        self.account_path(directory).display().to_string()
    }

    fn backup_account(&self, directory: &str, label: &str) -> Result<Option<String>, AcmeError> {
        if !backup_label_ok(label) {
            return Err(AcmeError::Config(format!(
                "{}: not a backup label",
                crate::error::clean(label)
            )));
        }
        let Some(creds) = self.load_account(directory)? else {
            return Ok(None);
        };
        let p = self.account_path(directory);
        let backup = p.with_extension(format!("json.{label}.bak"));
        write_private_atomic(&backup, &creds).map_err(|e| AcmeError::Storage {
            path: backup.clone(),
            reason: e,
        })?;
        Ok(Some(backup.display().to_string()))
    }

    fn remove_account_backup(&self, directory: &str, label: &str) -> Result<(), AcmeError> {
        if !backup_label_ok(label) {
            return Ok(());
        }
        let backup = self
            .account_path(directory)
            .with_extension(format!("json.{label}.bak"));
        match std::fs::remove_file(&backup) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(AcmeError::Storage {
                path: backup,
                reason: e,
            }),
            _ => Ok(()),
        }
    }

    fn replace_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        let p = self.account_path(directory);
        write_private_atomic(&p, credentials).map_err(|e| AcmeError::Storage { path: p, reason: e })
    }

    fn remove_account(&self, directory: &str) -> Result<(), AcmeError> {
        let p = self.account_path(directory);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(AcmeError::Storage { path: p, reason: e })
            }
            _ => Ok(()),
        }
    }

    fn load_cert(&self, name: &str) -> Result<Option<StoredCert>, AcmeError> {
        let p = self.cert_path(name);
        let Some(bytes) = read_bounded(&p).map_err(|e| AcmeError::Storage {
            path: p.clone(),
            reason: e,
        })?
        else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes).map_err(|_| AcmeError::Storage {
            path: p.clone(),
            reason: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 PEM"),
        })?;
        // The key block starts at the first "-----BEGIN" that is not a certificate.
        let split = text
            .match_indices("-----BEGIN ")
            .map(|(i, _)| i)
            .find(|&i| !text[i..].starts_with("-----BEGIN CERTIFICATE-----"));
        let Some(at) = split else {
            return Err(AcmeError::Storage {
                path: p,
                reason: std::io::Error::new(std::io::ErrorKind::InvalidData, "no private key"),
            });
        };
        Ok(Some(StoredCert {
            chain_pem: text[..at].to_string(),
            key_pem: text[at..].to_string(),
        }))
    }

    fn store_cert(&self, name: &str, cert: &StoredCert) -> Result<(), AcmeError> {
        let p = self.cert_path(name);
        let mut all = cert.chain_pem.clone();
        if !all.ends_with('\n') {
            all.push('\n');
        }
        all.push_str(&cert.key_pem);
        write_private_atomic(&p, all.as_bytes())
            .map_err(|e| AcmeError::Storage { path: p, reason: e })
    }

    fn put_challenge(&self, key: &str, answer: &str) -> Result<(), AcmeError> {
        if let Ok(mut m) = self.challenges.lock() {
            m.insert(key.to_string(), answer.to_string());
        }
        Ok(())
    }

    fn challenge(&self, key: &str) -> Option<String> {
        self.challenges.lock().ok()?.get(key).cloned()
    }

    fn remove_challenge(&self, key: &str) {
        if let Ok(mut m) = self.challenges.lock() {
            m.remove(key);
        }
    }

    fn lock(&self, name: &str, wait: Duration) -> Result<Box<dyn IssuanceLock>, AcmeError> {
        let p = self.dir.join("locks").join(format!("{name}.lock"));
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&p)
            .map_err(|e| AcmeError::Storage {
                path: p.clone(),
                reason: e,
            })?;
        let deadline = Instant::now() + wait;
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(Box::new(FileLock(f))),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(AcmeError::Storage {
                        path: p,
                        reason: std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "another process holds the issuance lock",
                        ),
                    })
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(AcmeError::Storage { path: p, reason: e })
                }
            }
        }
    }

    fn dns_records(&self, name: &str) -> Result<Vec<DnsRecord>, AcmeError> {
        let p = self.dns_path(name);
        match read_bounded(&p).map_err(|e| AcmeError::Storage {
            path: p.clone(),
            reason: e,
        })? {
            None => Ok(Vec::new()),
            Some(b) => decode_dns_records(&b).ok_or_else(|| AcmeError::Storage {
                path: p,
                reason: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a list of DNS records",
                ),
            }),
        }
    }

    fn set_dns_records(&self, name: &str, records: &[DnsRecord]) -> Result<(), AcmeError> {
        use std::os::unix::fs::DirBuilderExt;
        let p = self.dns_path(name);
        if records.is_empty() {
            return match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(AcmeError::Storage { path: p, reason: e })
                }
                _ => Ok(()),
            };
        }
        let dir = self.dir.join("dns");
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .or_else(|e| if dir.is_dir() { Ok(()) } else { Err(e) })
                .map_err(|e| AcmeError::Storage {
                    path: dir.clone(),
                    reason: e,
                })?;
        }
        let json = serde_json::to_vec_pretty(records).map_err(|e| AcmeError::Storage {
            path: p.clone(),
            reason: std::io::Error::other(e.to_string()),
        })?;
        write_private_atomic(&p, &json).map_err(|e| AcmeError::Storage { path: p, reason: e })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn layout_modes_and_round_trip() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = t.path().join("acme");
        let s = FsStorage::open(&dir).unwrap_or_else(|e| panic!("{e}"));
        let mode = |p: &Path| {
            std::fs::metadata(p)
                .unwrap_or_else(|e| panic!("{e}"))
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&dir), 0o700);
        let c = StoredCert {
            chain_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
            key_pem: "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n".into(),
        };
        s.store_cert("a.test", &c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode(&s.cert_path("a.test")), 0o600);
        let back = s
            .load_cert("a.test")
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("stored"));
        assert_eq!(back.chain_pem, c.chain_pem);
        assert_eq!(back.key_pem, c.key_pem);
        s.store_account("https://x/dir", b"{}")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s.load_account("https://x/dir")
                .unwrap_or_else(|e| panic!("{e}")),
            Some(b"{}".to_vec())
        );
        assert_eq!(mode(&s.account_path("https://x/dir")), 0o600);
        let held = s
            .lock("a.test", Duration::ZERO)
            .unwrap_or_else(|e| panic!("{e}"));
        // A second open file description of the same lock file is refused while held.
        assert!(s.lock("a.test", Duration::from_millis(150)).is_err());
        drop(held);
        assert!(s.lock("a.test", Duration::ZERO).is_ok());
    }

    /// The reader is tlskit-io's: a FIFO where a certificate should be is refused at
    /// once, not waited on (a blocking open would hang here).
    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = FsStorage::open(t.path()).unwrap_or_else(|e| panic!("{e}"));
        let fifo = s.cert_path("a.test");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap_or_else(|e| panic!("mkfifo: {e}"));
        assert!(made.success());
        let t0 = Instant::now();
        let e = s.load_cert("a.test").err();
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(e.is_some_and(|e| e.to_string().contains("FIFO") || e.to_string().contains("fifo")));
        assert_eq!(s.load_cert("b.test").ok().flatten().map(|_| ()), None);
    }

    #[test]
    fn unwritable_directory_is_an_error_at_open() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = t.path().join("f");
        std::fs::write(&file, b"x").unwrap_or_else(|e| panic!("{e}"));
        let e = FsStorage::open(&file.join("acme")).err();
        assert!(e.is_some_and(|e| e.to_string().contains("acme")));
    }
}
