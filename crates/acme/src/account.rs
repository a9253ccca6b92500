//! `tlskit acme account show|rollover|deactivate`: the stored ACME account, its key
//! rolled over (RFC 8555 7.3.5) and its deactivation (7.3.6), on a directory storage or
//! a fleet's (any [`AcmeStorage`]). Blocking, each on a runtime of its own.
//!
//! Every change runs under the storage's account lock (the one account creation takes),
//! so a fleet's nodes never create or change the account meanwhile. A rollover first
//! writes a backup of the old credentials (0600, atomically, as the credentials are),
//! then asks the CA, then replaces the credentials atomically, then asks the CA for the
//! account with the new key: only once the CA confirmed it is the backup removed. A
//! deactivation keeps the credentials as a backup and removes them from their place, so
//! that the next order creates a new account.

use std::sync::Arc;

use instant_acme::{Account, Key};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tlskit_tls::log::{self, Level};

use crate::client::{self, Endpoint};
use crate::error::{clean, AcmeError};
use crate::settings::{unix, AcmeSettings};
use crate::storage::{AcmeStorage, FsStorage};

/// What `account show|rollover|deactivate` work on: the CA, and the storage.
#[derive(Clone)]
#[non_exhaustive]
pub struct AccountOptions {
    /// The CA (directory URL, the roots of its HTTPS) and the storage directory.
    pub settings: AcmeSettings,
    /// The storage to use instead of the directory of `settings` (a fleet's Redis).
    pub storage: Option<Arc<dyn AcmeStorage>>,
}

impl std::fmt::Debug for AccountOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountOptions")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AccountOptions {
    /// The account of `settings`' CA in `storage` (None: the directory of `settings`).
    pub fn new(settings: AcmeSettings, storage: Option<Arc<dyn AcmeStorage>>) -> Self {
        Self { settings, storage }
    }
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

/// `tlskit acme account rollover`: a new account key (RFC 8555 7.3.5). The old
/// credentials are backed up first, the new ones written atomically once the CA took the
/// key, and the backup removed once the CA answers for the account with the new key.
pub fn account_rollover(o: &AccountOptions) -> Result<AccountReport, AcmeError> {
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
        {
            let (s, d, j) = (storage.clone(), dir.clone(), json.clone());
            blocking(move || s.replace_account(&d, &j)).await?;
        }
        log::event(
            Level::Info,
            "acme_account_key_rolled_over",
            &[
                ("id", &clean(&id)),
                ("previous_thumbprint", &previous),
                ("thumbprint", &account.key_thumbprint()),
            ],
        );
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
