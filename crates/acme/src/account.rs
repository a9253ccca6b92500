//! `tlskit acme account show|rollover|deactivate|restore`: the stored ACME account, its
//! key rolled over (RFC 8555 7.3.5) and its deactivation (7.3.6), on a directory storage
//! or a fleet's (any [`AcmeStorage`]). Blocking, each on a runtime of its own.
//!
//! Every change runs under the storage's account lock (the one account creation takes),
//! so a fleet's nodes never create or change the account meanwhile. A rollover first
//! writes a backup of the old credentials (0600, atomically, as the credentials are),
//! then asks the CA, then replaces the credentials atomically, then asks the CA for the
//! account with the new key: only once the CA confirmed it is the backup removed. A
//! deactivation keeps the credentials as a backup and removes them from their place, so
//! that the next order creates a new account.
//!
//! Once the CA took a new key, the old one is worthless and the new credentials exist
//! only in memory until the storage has them: a storage that refuses them is tried again
//! (5 tries within 5 seconds), then the credentials go to a rescue file outside it
//! ([`AccountOptions::rescue_dirs`]), which the error names and `restore` puts back.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use instant_acme::{Account, Key};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tlskit_tls::clock::Clock;
use tlskit_tls::log::{self, Level};

use crate::client::{self, Endpoint};
use crate::error::{clean, AcmeError};
use crate::settings::{unix, AcmeSettings};
use crate::storage::{hex16, read_bounded, write_private_atomic, AcmeStorage, FsStorage};

/// What `account show|rollover|deactivate` work on: the CA, and the storage.
#[derive(Clone)]
#[non_exhaustive]
pub struct AccountOptions {
    /// The CA (directory URL, the roots of its HTTPS) and the storage directory.
    pub settings: AcmeSettings,
    /// The storage to use instead of the directory of `settings` (a fleet's Redis).
    pub storage: Option<Arc<dyn AcmeStorage>>,
    /// Where a rollover writes the new credentials when the storage does not take them
    /// (tried in order, each created 0700 when missing): by default
    /// [`default_rescue_dirs`] of the storage directory of `settings`.
    pub rescue_dirs: Vec<PathBuf>,
}

impl std::fmt::Debug for AccountOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountOptions")
            .field("settings", &self.settings)
            .field("rescue_dirs", &self.rescue_dirs)
            .finish_non_exhaustive()
    }
}

impl AccountOptions {
    /// The account of `settings`' CA in `storage` (None: the directory of `settings`).
    pub fn new(settings: AcmeSettings, storage: Option<Arc<dyn AcmeStorage>>) -> Self {
        let rescue_dirs = default_rescue_dirs(&settings.storage);
        Self {
            settings,
            storage,
            rescue_dirs,
        }
    }
}

/// Where rescued credentials go, in order: `DIR/rescue` (`DIR`: the local storage
/// directory, `--acme-storage`, also when the account is kept in a fleet's Redis), then
/// `$XDG_STATE_HOME/tlskit/acme-rescue` (or `~/.local/state/tlskit/acme-rescue`), on
/// another file system when the home directory is.
pub fn default_rescue_dirs(storage_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![storage_dir.join("rescue")];
    let var = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let state = var("XDG_STATE_HOME")
        .map(|s| s.join("tlskit/acme-rescue"))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/tlskit/acme-rescue")));
    if let Some(s) = state.filter(|s| !dirs.contains(s)) {
        dirs.push(s);
    }
    dirs
}

/// The CA's view of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AccountStatus {
    /// The CA knows the account by its key and it is usable.
    Valid,
    /// The CA says the account was deactivated.
    Deactivated,
    /// The CA does not know an account for the key (a reset CA, another CA).
    Unknown,
}

impl AccountStatus {
    /// `valid`, `deactivated`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Valid => "valid",
            Self::Deactivated => "deactivated",
            Self::Unknown => "unknown",
        }
    }
}

/// What an `account` command found or did.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct AccountReport {
    /// The CA's directory URL.
    pub directory: String,
    /// The account URL.
    pub id: String,
    /// The CA's answer for the account (after the command).
    pub status: AccountStatus,
    /// RFC 7638 thumbprint of the account key (after the command).
    pub key_thumbprint: String,
    /// The thumbprint of the key a rollover replaced.
    pub previous_key_thumbprint: Option<String>,
    /// Where the credentials are kept (a path, a Redis key).
    pub storage: String,
    /// A backup of the credentials left in place: a deactivated account's; a rollover
    /// the CA did not confirm (none once it did).
    pub backup: Option<String>,
    /// When the command ran, Unix seconds.
    pub at: u64,
}

fn runtime() -> Result<tokio::runtime::Runtime, AcmeError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn open_storage(o: &AccountOptions) -> Result<Arc<dyn AcmeStorage>, AcmeError> {
    Ok(match &o.storage {
        Some(s) => s.clone(),
        None => Arc::new(FsStorage::open(&o.settings.storage)?),
    })
}

/// Run a blocking storage call on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AcmeError> + Send + 'static,
) -> Result<T, AcmeError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AcmeError::Config(format!("an account storage task ended: {e}")))?
}

/// The stored credentials, or an error naming where they were looked for.
async fn stored(
    o: &AccountOptions,
    storage: &Arc<dyn AcmeStorage>,
) -> Result<(Vec<u8>, String), AcmeError> {
    let (s, d) = (storage.clone(), o.settings.directory.clone());
    let bytes = blocking(move || s.load_account(&d)).await?;
    let bytes = bytes.ok_or_else(|| {
        AcmeError::Config(format!(
            "no ACME account for {} in {}",
            clean(&o.settings.directory),
            clean(&storage.account_location(&o.settings.directory))
        ))
    })?;
    let (_, id) = client::parse_credentials(&bytes)?;
    Ok((bytes, id))
}

/// Ask the CA for the account of the key in `bytes` (newAccount with
/// `onlyReturnExisting`, RFC 8555 7.3.1): its status and URL; the key's thumbprint.
async fn ask_ca(
    ep: &Endpoint<'_>,
    bytes: &[u8],
) -> Result<(AccountStatus, Option<String>, String), AcmeError> {
    let (creds, _) = client::parse_credentials(bytes)?;
    let der = creds.private_key().secret_pkcs8_der().to_vec();
    let key = Key::from_pkcs8_der(PrivatePkcs8KeyDer::from(der.as_slice()))
        .map_err(|e| AcmeError::acme("reading the account key", ep.directory, e))?;
    let thumb = client::load_account(ep, creds)
        .await?
        .key_thumbprint()
        .to_string();
    let pair = (key, PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)));
    match Account::builder_with_http(client::http_client(ep)?)
        .from_key(pair, ep.directory.to_string())
        .await
    {
        Ok((a, _)) => Ok((AccountStatus::Valid, Some(a.id().to_string()), thumb)),
        Err(instant_acme::Error::Api(p)) => {
            let t = p.r#type.as_deref().unwrap_or("");
            if t.ends_with(":accountDoesNotExist") {
                Ok((AccountStatus::Unknown, None, thumb))
            } else if t.ends_with(":unauthorized") {
                Ok((AccountStatus::Deactivated, None, thumb))
            } else {
                Err(AcmeError::acme(
                    "looking up the account",
                    ep.directory,
                    instant_acme::Error::Api(p),
                ))
            }
        }
        Err(e) => Err(AcmeError::acme("looking up the account", ep.directory, e)),
    }
}

/// Rescue files a rollover left for this directory URL and not yet restored (at most
/// 100 entries of each rescue directory looked at): each is logged as a warning.
fn warn_rescued(o: &AccountOptions) {
    let prefix = format!("{}.", hex16(&o.settings.directory));
    for d in &o.rescue_dirs {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        for e in entries.flatten().take(100) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".json") {
                log::event(
                    Level::Warn,
                    "acme_account_rescue_found",
                    &[
                        ("file", &clean(&e.path().display().to_string())),
                        ("restore_with", &"tlskit acme account restore --from FILE"),
                    ],
                );
            }
        }
    }
}

/// `tlskit acme account show`: the stored account and what the CA says of it.
pub fn account_show(o: &AccountOptions) -> Result<AccountReport, AcmeError> {
    warn_rescued(o);
    runtime()?.block_on(async {
        let storage = open_storage(o)?;
        let ep = Endpoint::of(&o.settings);
        let (bytes, id) = stored(o, &storage).await?;
        let (status, _, thumb) = ask_ca(&ep, &bytes).await?;
        Ok(AccountReport {
            directory: o.settings.directory.clone(),
            id,
            status,
            key_thumbprint: thumb,
            previous_key_thumbprint: None,
            storage: storage.account_location(&o.settings.directory),
            backup: None,
            at: unix(std::time::SystemTime::now()),
        })
    })
}

/// The account lock of the storage (blocking pool, at most two minutes).
async fn lock(
    o: &AccountOptions,
    storage: &Arc<dyn AcmeStorage>,
) -> Result<Box<dyn crate::storage::IssuanceLock>, AcmeError> {
    let (s, d) = (storage.clone(), o.settings.directory.clone());
    blocking(move || s.account_lock(&d, std::time::Duration::from_secs(120))).await
}

/// The pauses between tries of writing the credentials of a key the CA took: at most 5
/// tries.
const REPLACE_BACKOFF: [Duration; 4] = [
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

/// No new try starts once the next pause would end this long after the first try (a
/// storage's own timeouts, such as Redis's, bound each try).
const REPLACE_DEADLINE: Duration = Duration::from_secs(5);

/// A pause of the rollover's retries.
type PauseFn = dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync;

/// How a rollover waits between tries of the storage: the clock its deadline is read on
/// and the pause itself (tokio's timer; a test's moves a manual clock instead).
pub(crate) struct Pacing {
    clock: Arc<dyn Clock>,
    pause: Box<PauseFn>,
}

impl Pacing {
    fn real() -> Self {
        Self {
            clock: tlskit_tls::clock::system(),
            pause: Box::new(|d| Box::pin(tokio::time::sleep(d))),
        }
    }
}

/// `tlskit acme account rollover`: a new account key (RFC 8555 7.3.5). The old
/// credentials are backed up first, the new ones written atomically once the CA took the
/// key, and the backup removed once the CA answers for the account with the new key.
///
/// A storage that does not take the new credentials is tried again (5 tries within 5
/// seconds); then they are written to a rescue file (0600, atomically) in the first of
/// [`AccountOptions::rescue_dirs`] that takes it, and the error
/// ([`AcmeError::RolloverUnstored`]) names it: [`account_restore`] puts it in place.
pub fn account_rollover(o: &AccountOptions) -> Result<AccountReport, AcmeError> {
    rollover_with(o, &Pacing::real())
}

pub(crate) fn rollover_with(
    o: &AccountOptions,
    pacing: &Pacing,
) -> Result<AccountReport, AcmeError> {
    warn_rescued(o);
    runtime()?.block_on(async {
        let storage = open_storage(o)?;
        let ep = Endpoint::of(&o.settings);
        let dir = o.settings.directory.clone();
        let _lock = lock(o, &storage).await?;
        let (bytes, id) = stored(o, &storage).await?;
        let (creds, _) = client::parse_credentials(&bytes)?;
        let mut account = client::load_account(&ep, creds).await?;
        let previous = account.key_thumbprint().to_string();
        let now = unix(std::time::SystemTime::now());
        let label = format!("rollover-{now}");
        let backup = {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.backup_account(&d, &l)).await?
        };
        let new = match account.update_key().await {
            Ok(c) => c,
            Err(e) => {
                // The CA refused: the old key is still the account's, the backup a copy
                // of what is in place. A transport failure leaves the backup (the CA may
                // have taken the new key before the answer was lost).
                if matches!(e, instant_acme::Error::Api(_)) {
                    let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
                    let _ = blocking(move || s.remove_account_backup(&d, &l)).await;
                }
                return Err(AcmeError::acme("key rollover", &id, e));
            }
        };
        let json = serde_json::to_vec(&new).map_err(|e| {
            AcmeError::Config(format!(
                "the CA took the new account key, but its credentials cannot be encoded: {e}"
            ))
        })?;
        log::event(
            Level::Info,
            "acme_account_key_rolled_over",
            &[
                ("id", &clean(&id)),
                ("previous_thumbprint", &previous),
                ("thumbprint", &account.key_thumbprint()),
            ],
        );
        // From here on the new credentials are the only usable ones: never dropped.
        store_new(o, &storage, &id, &label, &json, pacing).await?;
        // The CA answers for the account with the new key: the old one can go.
        let (status, found, thumb) = ask_ca(&ep, &json).await?;
        let confirmed = status == AccountStatus::Valid && found.as_deref() == Some(id.as_str());
        let backup = if confirmed {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.remove_account_backup(&d, &l)).await?;
            None
        } else {
            backup
        };
        Ok(AccountReport {
            directory: dir.clone(),
            id,
            status,
            key_thumbprint: thumb,
            previous_key_thumbprint: Some(previous),
            storage: storage.account_location(&dir),
            backup,
            at: now,
        })
    })
}

/// Write the credentials of a key the CA took: into the storage, tried again after each
/// of [`REPLACE_BACKOFF`] within [`REPLACE_DEADLINE`]; failing that, into a rescue file,
/// which the error names.
async fn store_new(
    o: &AccountOptions,
    storage: &Arc<dyn AcmeStorage>,
    id: &str,
    label: &str,
    json: &[u8],
    pacing: &Pacing,
) -> Result<(), AcmeError> {
    let dir = &o.settings.directory;
    let start = pacing.clock.instant();
    let mut tries: u32 = 0;
    let last = loop {
        tries += 1;
        let (s, d, j) = (storage.clone(), dir.clone(), json.to_vec());
        let err = match blocking(move || s.replace_account(&d, &j)).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let elapsed = pacing.clock.instant().saturating_duration_since(start);
        let pause = REPLACE_BACKOFF
            .get(tries as usize - 1)
            .copied()
            .filter(|p| elapsed.saturating_add(*p) <= REPLACE_DEADLINE);
        let Some(pause) = pause else { break err };
        log::event(
            Level::Warn,
            "acme_account_store_retry",
            &[
                ("id", &clean(id)),
                ("attempt", &tries.to_string()),
                ("retry_in_ms", &pause.as_millis().to_string()),
                ("reason", &clean(&err.to_string())),
            ],
        );
        (pacing.pause)(pause).await;
    };
    let location = storage.account_location(dir);
    let (dirs, d, l, j) = (
        o.rescue_dirs.clone(),
        dir.clone(),
        label.to_string(),
        json.to_vec(),
    );
    let rescued = blocking(move || Ok(write_rescue(&dirs, &d, &l, &j))).await?;
    match rescued {
        Ok(path) => {
            log::event(
                Level::Error,
                "acme_account_rescued",
                &[
                    ("id", &clean(id)),
                    ("storage", &clean(&location)),
                    ("rescue", &clean(&path.display().to_string())),
                ],
            );
            Err(AcmeError::RolloverUnstored {
                id: clean(id),
                location: clean(&location),
                tries,
                reason: clean(&last.to_string()),
                rescue: path,
            })
        }
        Err(why) => Err(AcmeError::RolloverLost {
            id: clean(id),
            location: clean(&location),
            tries,
            reason: clean(&last.to_string()),
            rescue: clean(&why),
        }),
    }
}

/// Write `json` (credentials) to `<16 hex of the directory URL>.<label>.json` in the
/// first of `dirs` that takes it (created 0700 when missing, tightened to 0700; the file
/// 0600, atomically, never over another): its path, or why each directory failed.
fn write_rescue(
    dirs: &[PathBuf],
    directory: &str,
    label: &str,
    json: &[u8],
) -> Result<PathBuf, String> {
    let mut why = Vec::new();
    for d in dirs {
        match rescue_in(d, directory, label, json) {
            Ok(p) => return Ok(p),
            Err(e) => why.push(format!("{}: {e}", d.display())),
        }
    }
    if why.is_empty() {
        why.push("no rescue directory is configured".into());
    }
    Err(why.join("; "))
}

fn rescue_in(dir: &Path, directory: &str, label: &str, json: &[u8]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let m = std::fs::metadata(dir)?;
    if m.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let base = format!("{}.{label}", hex16(directory));
    for n in 0..100u32 {
        let name = if n == 0 {
            format!("{base}.json")
        } else {
            format!("{base}-{n}.json")
        };
        let p = dir.join(name);
        if std::fs::symlink_metadata(&p).is_err() {
            write_private_atomic(&p, json)?;
            return Ok(p);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "100 rescue files of this name exist",
    ))
}

/// `tlskit acme account restore --from FILE`: put credentials back in the storage (a
/// rescue file a rollover wrote when the storage failed), under the account lock, once
/// the CA confirmed that their key is the account's and that the storage holds no other
/// account. What was stored is backed up meanwhile (and kept, named in the report, when
/// it could not be read as credentials); the file is removed once written.
pub fn account_restore(o: &AccountOptions, from: &Path) -> Result<AccountReport, AcmeError> {
    runtime()?.block_on(async {
        let storage = open_storage(o)?;
        let ep = Endpoint::of(&o.settings);
        let dir = o.settings.directory.clone();
        let bytes = read_bounded(from)
            .map_err(|e| AcmeError::File {
                path: from.to_path_buf(),
                reason: clean(&e.to_string()),
            })?
            .ok_or_else(|| AcmeError::File {
                path: from.to_path_buf(),
                reason: "no such file".into(),
            })?;
        let not_creds = || AcmeError::File {
            path: from.to_path_buf(),
            reason: "not ACME account credentials (JSON with an id and a key)".into(),
        };
        let (_, id) = client::parse_credentials(&bytes).map_err(|_| not_creds())?;
        let _lock = lock(o, &storage).await?;
        let (status, found, thumb) = ask_ca(&ep, &bytes).await?;
        if status != AccountStatus::Valid || found.as_deref() != Some(id.as_str()) {
            return Err(AcmeError::Config(format!(
                "{}: the CA at {} does not answer for the account {} with this key (it says \
                 {}): nothing was changed",
                clean(&from.display().to_string()),
                clean(&dir),
                clean(&id),
                status.name()
            )));
        }
        let location = storage.account_location(&dir);
        let current = {
            let (s, d) = (storage.clone(), dir.clone());
            blocking(move || s.load_account(&d)).await?
        };
        let mut previous = None;
        if let Some(cur) = &current {
            if let Ok((creds, cur_id)) = client::parse_credentials(cur) {
                if cur_id != id {
                    return Err(AcmeError::Config(format!(
                        "{} holds another account ({}) than {} ({}): nothing was changed",
                        clean(&location),
                        clean(&cur_id),
                        clean(&from.display().to_string()),
                        clean(&id)
                    )));
                }
                previous = client::load_account(&ep, creds)
                    .await
                    .ok()
                    .map(|a| a.key_thumbprint().to_string());
            }
        }
        let now = unix(std::time::SystemTime::now());
        let label = format!("restore-{now}");
        let mut backup = {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.backup_account(&d, &l)).await?
        };
        {
            let (s, d, j) = (storage.clone(), dir.clone(), bytes.clone());
            blocking(move || s.replace_account(&d, &j)).await?;
        }
        // The CA confirmed the restored key before it was written: the same account's
        // credentials it replaced hold a key that is not the account's any more. What
        // could not be read stays as a backup.
        if backup.is_some() && previous.is_some() {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.remove_account_backup(&d, &l)).await?;
            backup = None;
        }
        if let Err(e) = std::fs::remove_file(from) {
            log::event(
                Level::Warn,
                "acme_account_rescue_left",
                &[
                    ("file", &clean(&from.display().to_string())),
                    ("reason", &clean(&e.to_string())),
                ],
            );
        }
        log::event(
            Level::Info,
            "acme_account_restored",
            &[
                ("id", &clean(&id)),
                ("thumbprint", &thumb),
                ("from", &clean(&from.display().to_string())),
            ],
        );
        Ok(AccountReport {
            directory: dir.clone(),
            id,
            status,
            key_thumbprint: thumb,
            previous_key_thumbprint: previous,
            storage: location,
            backup,
            at: now,
        })
    })
}

/// `tlskit acme account deactivate`: the CA deactivates the account (RFC 8555 7.3.6; it
/// cannot be undone); the credentials are kept as a backup and removed from their place,
/// so the next order creates a new account.
pub fn account_deactivate(o: &AccountOptions) -> Result<AccountReport, AcmeError> {
    runtime()?.block_on(async {
        let storage = open_storage(o)?;
        let ep = Endpoint::of(&o.settings);
        let dir = o.settings.directory.clone();
        let _lock = lock(o, &storage).await?;
        let (bytes, id) = stored(o, &storage).await?;
        let (creds, _) = client::parse_credentials(&bytes)?;
        let account = client::load_account(&ep, creds).await?;
        let thumb = account.key_thumbprint().to_string();
        let now = unix(std::time::SystemTime::now());
        let label = format!("deactivated-{now}");
        let backup = {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.backup_account(&d, &l)).await?
        };
        if let Err(e) = account.deactivate().await {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            let _ = blocking(move || s.remove_account_backup(&d, &l)).await;
            return Err(AcmeError::acme("deactivation", &id, e));
        }
        {
            let (s, d) = (storage.clone(), dir.clone());
            blocking(move || s.remove_account(&d)).await?;
        }
        log::event(
            Level::Info,
            "acme_account_deactivated",
            &[("id", &clean(&id)), ("thumbprint", &thumb)],
        );
        let (status, _, _) = ask_ca(&ep, &bytes).await?;
        Ok(AccountReport {
            directory: dir.clone(),
            id,
            status,
            key_thumbprint: thumb,
            previous_key_thumbprint: None,
            storage: storage.account_location(&dir),
            backup,
            at: now,
        })
    })
}

#[cfg(test)]
mod tests {
    //! Rollover against the in-process ACME server of tlskit-ca-server (keyChange), with
    //! a storage whose `replace_account` fails: no external peer, no real sleep (the
    //! retries' pauses move a manual clock).

    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    use tlskit_tls::clock::ManualClock;

    use crate::storage::{DnsRecord, IssuanceLock, StoredCert};

    /// An [`FsStorage`] whose `replace_account` fails its first `fail` calls (as a full
    /// disk or a Redis that went away would).
    struct Failing {
        fs: FsStorage,
        fail: u32,
        calls: AtomicU32,
    }

    impl AcmeStorage for Failing {
        fn load_account(&self, d: &str) -> Result<Option<Vec<u8>>, AcmeError> {
            self.fs.load_account(d)
        }
        fn store_account(&self, d: &str, c: &[u8]) -> Result<(), AcmeError> {
            self.fs.store_account(d, c)
        }
        fn load_cert(&self, n: &str) -> Result<Option<StoredCert>, AcmeError> {
            self.fs.load_cert(n)
        }
        fn store_cert(&self, n: &str, c: &StoredCert) -> Result<(), AcmeError> {
            self.fs.store_cert(n, c)
        }
        fn put_challenge(&self, k: &str, a: &str) -> Result<(), AcmeError> {
            self.fs.put_challenge(k, a)
        }
        fn challenge(&self, k: &str) -> Option<String> {
            self.fs.challenge(k)
        }
        fn remove_challenge(&self, k: &str) {
            self.fs.remove_challenge(k)
        }
        fn lock(&self, n: &str, w: Duration) -> Result<Box<dyn IssuanceLock>, AcmeError> {
            self.fs.lock(n, w)
        }
        fn dns_records(&self, n: &str) -> Result<Vec<DnsRecord>, AcmeError> {
            self.fs.dns_records(n)
        }
        fn set_dns_records(&self, n: &str, r: &[DnsRecord]) -> Result<(), AcmeError> {
            self.fs.set_dns_records(n, r)
        }
        fn account_location(&self, d: &str) -> String {
            self.fs.account_location(d)
        }
        fn backup_account(&self, d: &str, l: &str) -> Result<Option<String>, AcmeError> {
            self.fs.backup_account(d, l)
        }
        fn remove_account_backup(&self, d: &str, l: &str) -> Result<(), AcmeError> {
            self.fs.remove_account_backup(d, l)
        }
        fn replace_account(&self, d: &str, c: &[u8]) -> Result<(), AcmeError> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < self.fail {
                return Err(AcmeError::Storage {
                    path: self.fs.dir().join("accounts"),
                    reason: std::io::Error::other("no space left on device (test)"),
                });
            }
            self.fs.replace_account(d, c)
        }
    }

    /// A CA directory with its ACME server on a loopback port, and the settings of a
    /// client that trusts it, storing in `TMP/acme`.
    struct Ca {
        t: tempfile::TempDir,
        settings: AcmeSettings,
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("free port: {e}"))
    }

    fn start_ca() -> Ca {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ca = t.path().join("ca");
        tlskit_pki::ca::init(
            &ca,
            &tlskit_pki::ca::InitOptions::new()
                .days(3650)
                .permit_dns(vec!["localhost".into()]),
        )
        .unwrap_or_else(|e| panic!("ca init: {e}"));
        std::fs::write(ca.join("acme.toml"), "").unwrap_or_else(|e| panic!("{e}"));
        let listen = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
        let opts = tlskit_ca_server::ServeOptions::new(ca.clone(), listen)
            .validation_ports(free_port(), free_port());
        let addr = tlskit_testkit::serve_thread::serve_in_thread("the ACME server", |ready| {
            tlskit_ca_server::serve(opts, ready)
        });
        let mut settings = AcmeSettings::new(
            format!("https://{addr}/directory"),
            Vec::new(),
            t.path().join("acme"),
        );
        settings.roots = vec![tlskit_store::Source::File(ca.join("ca.pem"))];
        Ca { t, settings }
    }

    impl Ca {
        /// A new account in `storage`; its id.
        fn account(&self, storage: &Arc<dyn AcmeStorage>) -> String {
            let rt = runtime().unwrap_or_else(|e| panic!("{e}"));
            let ep = Endpoint::of(&self.settings);
            let (a, created) = rt
                .block_on(client::account(&ep, storage, None))
                .unwrap_or_else(|e| panic!("new account: {e}"));
            assert!(created);
            a.id().to_string()
        }

        fn options(&self, storage: Arc<dyn AcmeStorage>) -> AccountOptions {
            let mut o = AccountOptions::new(self.settings.clone(), Some(storage));
            o.rescue_dirs = vec![self.t.path().join("rescue")];
            o
        }

        /// What the CA says of the key in `bytes`: status and account URL.
        fn ask(&self, bytes: &[u8]) -> (AccountStatus, Option<String>, String) {
            let rt = runtime().unwrap_or_else(|e| panic!("{e}"));
            rt.block_on(ask_ca(&Endpoint::of(&self.settings), bytes))
                .unwrap_or_else(|e| panic!("asking the CA: {e}"))
        }
    }

    /// Pauses that move a manual clock and are recorded, instead of sleeping.
    fn manual_pacing() -> (Pacing, Arc<Mutex<Vec<Duration>>>) {
        let clock = Arc::new(ManualClock::at_unix(1_800_000_000));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (c, s) = (clock.clone(), seen.clone());
        let pacing = Pacing {
            clock,
            pause: Box::new(move |d| {
                c.advance(d);
                s.lock().unwrap_or_else(|p| p.into_inner()).push(d);
                Box::pin(async {})
            }),
        };
        (pacing, seen)
    }

    fn failing(ca: &Ca, fail: u32) -> Arc<Failing> {
        let fs = FsStorage::open(&ca.settings.storage).unwrap_or_else(|e| panic!("{e}"));
        Arc::new(Failing {
            fs,
            fail,
            calls: AtomicU32::new(0),
        })
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    }

    /// The storage refuses the new credentials after the CA took the key: five tries
    /// with the pauses of the schedule, then a 0600 rescue file that the error names,
    /// holding the key the CA now knows the account by (the stored one it no longer
    /// does); `account_restore` puts it back and the account is usable again.
    #[test]
    fn a_refused_write_leaves_the_new_key_in_a_rescue_file() {
        let ca = start_ca();
        let storage = failing(&ca, u32::MAX);
        let dynamic: Arc<dyn AcmeStorage> = storage.clone();
        let id = ca.account(&dynamic);
        let o = ca.options(dynamic.clone());
        let old = dynamic
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("stored account"));
        let (pacing, pauses) = manual_pacing();

        let err = rollover_with(&o, &pacing)
            .err()
            .unwrap_or_else(|| panic!("a rollover whose storage fails must fail"));
        let text = err.to_string();
        let AcmeError::RolloverUnstored {
            rescue,
            tries,
            id: eid,
            ..
        } = err
        else {
            panic!("not a rescued rollover: {text}");
        };
        assert_eq!(tries, 5, "{text}");
        assert_eq!(storage.calls.load(Ordering::SeqCst), 5);
        assert_eq!(
            *pauses.lock().unwrap_or_else(|p| p.into_inner()),
            REPLACE_BACKOFF.to_vec()
        );
        assert_eq!(eid, id);
        assert!(rescue.starts_with(ca.t.path().join("rescue")), "{text}");
        assert!(text.contains(&rescue.display().to_string()), "{text}");
        assert!(
            text.contains("tlskit acme account restore --from"),
            "{text}"
        );
        assert!(text.contains("no space left on device (test)"), "{text}");
        assert_eq!(mode(&rescue), 0o600);
        assert_eq!(
            mode(rescue.parent().unwrap_or_else(|| panic!("parent"))),
            0o700
        );

        // The rescue file holds the account's key now; the stored one is not it any more.
        let rescued = std::fs::read(&rescue).unwrap_or_else(|e| panic!("{e}"));
        let key: serde_json::Value =
            serde_json::from_slice(&rescued).unwrap_or_else(|e| panic!("{e}"));
        let key = key["key_pkcs8"].as_str().unwrap_or_default().to_string();
        assert!(key.len() > 40, "a key in the rescue file");
        assert!(!text.contains(&key), "the error must not print the key");
        let (status, found, new_thumb) = ca.ask(&rescued);
        assert_eq!(
            (status, found.as_deref()),
            (AccountStatus::Valid, Some(id.as_str()))
        );
        let stored = dynamic
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("stored account"));
        assert_eq!(stored, old, "the failing storage kept the old credentials");
        assert_ne!(ca.ask(&old).0, AccountStatus::Valid);

        // Restored through a storage that works: in place, confirmed, file removed.
        let plain: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(&ca.settings.storage).unwrap_or_else(|e| panic!("{e}")));
        let r = account_restore(&ca.options(plain.clone()), &rescue)
            .unwrap_or_else(|e| panic!("restore: {e}"));
        assert_eq!(r.status, AccountStatus::Valid);
        assert_eq!(r.id, id);
        assert_eq!(r.key_thumbprint, new_thumb);
        assert!(!rescue.exists(), "the rescue file is removed once restored");
        let back = plain
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.as_deref(), Some(rescued.as_slice()));
        let shown = account_show(&ca.options(plain)).unwrap_or_else(|e| panic!("show: {e}"));
        assert_eq!(shown.status, AccountStatus::Valid);
        assert_eq!(shown.key_thumbprint, new_thumb);
    }

    /// A storage that fails twice takes the third try: the rollover succeeds after the
    /// first two pauses, with no rescue file.
    #[test]
    fn a_storage_that_recovers_takes_the_key_on_a_later_try() {
        let ca = start_ca();
        let storage = failing(&ca, 2);
        let dynamic: Arc<dyn AcmeStorage> = storage.clone();
        let id = ca.account(&dynamic);
        let (pacing, pauses) = manual_pacing();
        let r = rollover_with(&ca.options(dynamic.clone()), &pacing)
            .unwrap_or_else(|e| panic!("rollover: {e}"));
        assert_eq!(
            (r.status, r.id.as_str()),
            (AccountStatus::Valid, id.as_str())
        );
        assert_eq!(r.backup, None);
        assert_eq!(storage.calls.load(Ordering::SeqCst), 3);
        assert_eq!(
            *pauses.lock().unwrap_or_else(|p| p.into_inner()),
            REPLACE_BACKOFF[..2].to_vec()
        );
        assert!(!ca.t.path().join("rescue").exists());
        let stored = dynamic
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("stored account"));
        assert_eq!(ca.ask(&stored).2, r.key_thumbprint);
    }

    /// Nowhere to write: the error says the key is lost and why each place failed, and
    /// a restore of a file that is not credentials, or whose key the CA does not take,
    /// changes nothing.
    #[test]
    fn no_rescue_directory_is_told_and_restore_checks_the_file() {
        let ca = start_ca();
        let dynamic: Arc<dyn AcmeStorage> = failing(&ca, u32::MAX);
        ca.account(&dynamic);
        let blocker = ca.t.path().join("not-a-dir");
        std::fs::write(&blocker, b"x").unwrap_or_else(|e| panic!("{e}"));
        let mut o = ca.options(dynamic.clone());
        o.rescue_dirs = vec![blocker.join("rescue")];
        let (pacing, _) = manual_pacing();
        let err = rollover_with(&o, &pacing)
            .err()
            .unwrap_or_else(|| panic!("must fail"));
        let text = err.to_string();
        assert!(matches!(err, AcmeError::RolloverLost { .. }), "{text}");
        assert!(text.contains("the new key is lost"), "{text}");
        assert!(text.contains(&blocker.display().to_string()), "{text}");

        let before = dynamic
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"));
        let junk = ca.t.path().join("junk.json");
        std::fs::write(&junk, b"{\"id\": 1}").unwrap_or_else(|e| panic!("{e}"));
        let e = account_restore(&o, &junk).err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("not ACME account credentials")),
            "{e:?}"
        );
        // The stored credentials hold a key the CA no longer takes (rolled over above).
        let stale = ca.t.path().join("stale.json");
        std::fs::write(&stale, before.clone().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        let e = account_restore(&o, &stale).err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("nothing was changed")),
            "{e:?}"
        );
        assert!(stale.exists());
        let after = dynamic
            .load_account(&ca.settings.directory)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(before, after);
    }
}
