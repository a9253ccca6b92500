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

/// `tlskit acme account show`: the stored account and what the CA says of it.
pub fn account_show(o: &AccountOptions) -> Result<AccountReport, AcmeError> {
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

pub(crate) fn rollover_with(o: &AccountOptions, pacing: &Pacing) -> Result<AccountReport, AcmeError> {
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
fn write_rescue(dirs: &[PathBuf], directory: &str, label: &str, json: &[u8]) -> Result<PathBuf, String> {
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
/// account. What was stored is backed up meanwhile; the file is removed once written.
pub fn account_restore(o: &AccountOptions, from: &Path) -> Result<AccountReport, AcmeError> {
    runtime()?.block_on(async {
        let storage = open_storage(o)?;
        let ep = Endpoint::of(&o.settings);
        let dir = o.settings.directory.clone();
        let bytes = read_bounded(from)
            .map_err(|e| AcmeError::Storage {
                path: from.to_path_buf(),
                reason: e,
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
                from.display(),
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
                        from.display(),
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
        let backup = {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.backup_account(&d, &l)).await?
        };
        {
            let (s, d, j) = (storage.clone(), dir.clone(), bytes.clone());
            blocking(move || s.replace_account(&d, &j)).await?;
        }
        // The CA confirmed the restored key before it was written: what it replaced is
        // not the account's key.
        if backup.is_some() {
            let (s, d, l) = (storage.clone(), dir.clone(), label.clone());
            blocking(move || s.remove_account_backup(&d, &l)).await?;
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
            backup: None,
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
