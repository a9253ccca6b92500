//! ACME state on the fleet's Redis (feature `acme`): one account, one order per name and
//! any node answering a challenge, for the whole fleet.

use std::sync::Arc;
use std::time::Duration;

use tlskit_acme::storage::{AcmeStorage, DnsRecord, IssuanceLock, StoredCert};
use tlskit_acme::AcmeError;
use tlskit_tls::log::{self, Level};
use tlskit_tls::NetError;

use crate::resp::Value;
use aws_lc_rs::aead::NONCE_LEN;

use crate::shared::{caps, endpoint, random, read_kek, redact, Kek, SharedSettings, OP_TIMEOUT};

/// ACME state shared by the fleet in the same Redis (issue 17): the account, each
/// certificate with its key (both sealed with the KEK, the Redis key name bound into the
/// associated data so a value cannot be moved under another name), challenge answers (the
/// key authorizations the CA fetches: public by design, kept 10 minutes) so that any node
/// answers a validation, and an issuance lock (`SET NX PX`, 10 minutes, released only by
/// its holder) so that the fleet orders each name once.
///
/// Blocking calls on one connection through tlskit's RESP reader (`resp.rs`), each
/// with one deadline ([`OP_TIMEOUT`]) for connect, log-in, command and reply, and each
/// reply capped by its key type ([`caps`]); the manager calls them from the blocking
/// pool, as it does the filesystem storage, and the issuance lock is released there too.
/// A lost connection is reopened at the next call.
pub struct RedisAcmeStorage {
    inner: Arc<AcmeInner>,
}

struct AcmeInner {
    redis: crate::resp::Redis,
    kek: Kek,
    url: String,
    node: String,
}

impl std::fmt::Debug for RedisAcmeStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisAcmeStorage")
            .field("url", &self.inner.url)
            .finish_non_exhaustive()
    }
}

/// How long a challenge answer stays published.
const CHALLENGE_TTL_MS: u64 = 600_000;
/// How long an issuance lock lives when its holder dies.
const ISSUANCE_LOCK_MS: u64 = 600_000;
/// How long the backup of replaced account credentials is kept (a CA reset made a new
/// account): long enough to look at, never a pile of keys.
const ACCOUNT_BACKUP_MS: u64 = 30 * 86_400_000;
/// Bytes sealing adds to a value (version, nonce, tag).
const SEAL_OVERHEAD: usize = 1 + NONCE_LEN + 16;

impl AcmeInner {
    fn err(&self, reason: impl std::fmt::Display) -> AcmeError {
        AcmeError::Shared {
            url: self.url.clone(),
            reason: redact(&reason.to_string()),
        }
    }

    /// One command, its reply capped at `cap` bytes.
    fn call(&self, args: &[&[u8]], cap: usize, key: &str) -> Result<Value, AcmeError> {
        self.redis.call(args, cap, key).map_err(|e| self.err(e))
    }

    fn unexpected(&self, key: &str) -> AcmeError {
        self.err(format!(
            "{key}: Redis answered with an unexpected reply type"
        ))
    }

    fn aad(key: &str) -> Vec<u8> {
        [b"tlskit acme v1 ".as_slice(), key.as_bytes()].concat()
    }

    fn get_sealed(&self, key: &str, cap: usize) -> Result<Option<Vec<u8>>, AcmeError> {
        match self.call(&[b"GET", key.as_bytes()], cap, key)? {
            Value::Nil => Ok(None),
            Value::Bulk(v) => self.kek.open_bytes(&v, &Self::aad(key)).map(Some).ok_or_else(|| {
                self.err(format!(
                    "{key} does not open with this --shared-state-key (another key-encryption key than the fleet's?)"
                ))
            }),
            _ => Err(self.unexpected(key)),
        }
    }

    /// Seal and store `plain` under `key`, refused when the reply that reads it back
    /// would be over `cap` (no node could read it).
    fn set_sealed(&self, key: &str, plain: &[u8], cap: usize) -> Result<(), AcmeError> {
        self.set_sealed_px(key, plain, cap, None)
    }

    /// [`Self::set_sealed`], the key expiring after `px` milliseconds when given.
    fn set_sealed_px(
        &self,
        key: &str,
        plain: &[u8],
        cap: usize,
        px: Option<u64>,
    ) -> Result<(), AcmeError> {
        let size = plain
            .len()
            .saturating_add(SEAL_OVERHEAD)
            .saturating_add(crate::resp::FRAMING);
        if size > cap {
            return Err(self.err(format!(
                "{key}: {size} bytes sealed, more than the {cap} bytes allowed for it"
            )));
        }
        let sealed = self
            .kek
            .seal_bytes(plain, &Self::aad(key))
            .ok_or_else(|| self.err("cannot seal"))?;
        let px = px.map(|ms| ms.to_string());
        let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), &sealed];
        if let Some(ms) = &px {
            args.extend_from_slice(&[b"PX", ms.as_bytes()]);
        }
        match self.call(&args, caps::OTHER, key)? {
            Value::Status(_) => Ok(()),
            _ => Err(self.unexpected(key)),
        }
    }

    /// Delete `key` (absent is not an error).
    fn del(&self, key: &str) -> Result<(), AcmeError> {
        match self.call(&[b"DEL", key.as_bytes()], caps::OTHER, key)? {
            Value::Int(_) => Ok(()),
            _ => Err(self.unexpected(key)),
        }
    }
}

impl RedisAcmeStorage {
    /// Connects lazily; the KEK is read now (a bad file is an error at start).
    pub fn open(s: &SharedSettings) -> Result<Self, NetError> {
        let kek_raw = read_kek(&s.key_file)?;
        let url = redact(&s.url);
        let endpoint = endpoint(s)?;
        let kek = Kek::new(&kek_raw).ok_or_else(|| NetError::Config("bad key".into()))?;
        let node = format!(
            "{}-{:08x}",
            std::process::id(),
            u32::from_be_bytes(random().unwrap_or([0; 4]))
        );
        Ok(Self {
            inner: Arc::new(AcmeInner {
                redis: crate::resp::Redis::new(endpoint, OP_TIMEOUT),
                kek,
                url,
                node,
            }),
        })
    }
}

/// The Redis key of the account credentials for `directory`.
fn account_key(directory: &str) -> String {
    format!(
        "tlskit:acme:account:{}",
        tlskit_acme::storage::hex16(directory)
    )
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SealedCert {
    chain_pem: String,
    key_pem: String,
}

/// The issuance lock's holder: released on drop when still ours.
struct RedisLock {
    inner: Arc<AcmeInner>,
    key: String,
    token: String,
}

impl IssuanceLock for RedisLock {}

impl Drop for RedisLock {
    fn drop(&mut self) {
        // Delete only our own lock (it may have expired and been taken by another node).
        const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
                               return redis.call('DEL', KEYS[1]) else return 0 end";
        let inner = self.inner.clone();
        let key = std::mem::take(&mut self.key);
        let token = std::mem::take(&mut self.token);
        let release = move || {
            let _ = inner.call(
                &[
                    b"EVAL",
                    RELEASE.as_bytes(),
                    b"1",
                    key.as_bytes(),
                    token.as_bytes(),
                ],
                caps::OTHER,
                &key,
            );
        };
        // Dropped on a runtime worker thread (the manager's task): released on the
        // blocking pool, never waiting on Redis there. Elsewhere: here, with the deadline
        // of every call.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

impl AcmeStorage for RedisAcmeStorage {
    fn load_account(&self, directory: &str) -> Result<Option<Vec<u8>>, AcmeError> {
        self.inner
            .get_sealed(&account_key(directory), caps::ACME_ACCOUNT)
    }

    fn store_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        let key = account_key(directory);
        if let Some(old) = self.inner.get_sealed(&key, caps::ACME_ACCOUNT)? {
            // Never just overwritten: the old credentials stay beside the new ones, for
            // 30 days (account creation is single-writer, under `account_lock`: this is a
            // CA that forgot the account, not a race between nodes).
            let backup = format!(
                "{key}:backup:{}",
                tlskit_tls::Clock::unix_secs(&tlskit_tls::SystemClock)
            );
            self.inner
                .set_sealed_px(&backup, &old, caps::ACME_ACCOUNT, Some(ACCOUNT_BACKUP_MS))?;
        }
        self.inner.set_sealed(&key, credentials, caps::ACME_ACCOUNT)
    }

    fn account_location(&self, directory: &str) -> String {
        format!("{} key {}", self.inner.url, account_key(directory))
    }

    fn backup_account(&self, directory: &str, label: &str) -> Result<Option<String>, AcmeError> {
        if !tlskit_acme::storage::backup_label_ok(label) {
            return Err(self.inner.err("not a backup label"));
        }
        let key = account_key(directory);
        let Some(old) = self.inner.get_sealed(&key, caps::ACME_ACCOUNT)? else {
            return Ok(None);
        };
        let backup = format!("{key}:backup:{label}");
        self.inner.set_sealed(&backup, &old, caps::ACME_ACCOUNT)?;
        Ok(Some(format!("{} key {backup}", self.inner.url)))
    }

    fn remove_account_backup(&self, directory: &str, label: &str) -> Result<(), AcmeError> {
        if !tlskit_acme::storage::backup_label_ok(label) {
            return Ok(());
        }
        self.inner
            .del(&format!("{}:backup:{label}", account_key(directory)))
    }

    fn replace_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        self.inner
            .set_sealed(&account_key(directory), credentials, caps::ACME_ACCOUNT)
    }

    fn remove_account(&self, directory: &str) -> Result<(), AcmeError> {
        self.inner.del(&account_key(directory))
    }

    fn load_cert(&self, name: &str) -> Result<Option<StoredCert>, AcmeError> {
        let key = format!("tlskit:acme:cert:{name}");
        let Some(plain) = self.inner.get_sealed(&key, caps::ACME_CERT)? else {
            return Ok(None);
        };
        let c: SealedCert = serde_json::from_slice(&plain)
            .map_err(|_| self.inner.err(format!("{key}: not a stored certificate")))?;
        Ok(Some(StoredCert::new(c.chain_pem, c.key_pem)))
    }

    fn store_cert(&self, name: &str, cert: &StoredCert) -> Result<(), AcmeError> {
        let key = format!("tlskit:acme:cert:{name}");
        let plain = serde_json::to_vec(&SealedCert {
            chain_pem: cert.chain_pem.clone(),
            key_pem: cert.key_pem.clone(),
        })
        .map_err(|e| self.inner.err(e))?;
        self.inner.set_sealed(&key, &plain, caps::ACME_CERT)
    }

    fn put_challenge(&self, key: &str, answer: &str) -> Result<(), AcmeError> {
        let k = format!("tlskit:acme:challenge:{key}");
        if answer.len().saturating_add(crate::resp::FRAMING) > caps::ACME_CHALLENGE {
            return Err(self.inner.err(format!(
                "{k}: an answer of {} bytes, more than the {} bytes allowed",
                answer.len(),
                caps::ACME_CHALLENGE
            )));
        }
        let ttl = CHALLENGE_TTL_MS.to_string();
        match self.inner.call(
            &[
                b"SET",
                k.as_bytes(),
                answer.as_bytes(),
                b"PX",
                ttl.as_bytes(),
            ],
            caps::OTHER,
            &k,
        )? {
            Value::Status(_) => Ok(()),
            _ => Err(self.inner.unexpected(&k)),
        }
    }

    fn challenge(&self, key: &str) -> Option<String> {
        let k = format!("tlskit:acme:challenge:{key}");
        match self
            .inner
            .call(&[b"GET", k.as_bytes()], caps::ACME_CHALLENGE, &k)
            .ok()?
        {
            Value::Bulk(v) => String::from_utf8(v).ok(),
            _ => None,
        }
    }

    fn remove_challenge(&self, key: &str) {
        let k = format!("tlskit:acme:challenge:{key}");
        let _ = self.inner.call(&[b"DEL", k.as_bytes()], caps::OTHER, &k);
    }

    fn lock(&self, name: &str, wait: Duration) -> Result<Box<dyn IssuanceLock>, AcmeError> {
        let key = format!("tlskit:acme:lock:{name}");
        let token = format!(
            "{}-{:08x}",
            self.inner.node,
            u32::from_be_bytes(random().unwrap_or([0; 4]))
        );
        let t0 = std::time::Instant::now();
        let mut said = false;
        let ttl = ISSUANCE_LOCK_MS.to_string();
        loop {
            let got = self.inner.call(
                &[
                    b"SET",
                    key.as_bytes(),
                    token.as_bytes(),
                    b"NX",
                    b"PX",
                    ttl.as_bytes(),
                ],
                caps::OTHER,
                &key,
            )?;
            if matches!(got, Value::Status(_)) {
                return Ok(Box::new(RedisLock {
                    inner: self.inner.clone(),
                    key,
                    token,
                }));
            }
            if !said {
                said = true;
                log::event(
                    Level::Info,
                    "acme_waiting_for_fleet_lock",
                    &[("name", &name), ("node", &self.inner.node)],
                );
            }
            if t0.elapsed() >= wait {
                return Err(self.inner.err(format!(
                    "another node has held the issuance lock for {name} for {} s",
                    wait.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn dns_records(&self, name: &str) -> Result<Vec<DnsRecord>, AcmeError> {
        let key = format!("tlskit:acme:dns:{name}");
        match self.inner.get_sealed(&key, caps::ACME_DNS)? {
            None => Ok(Vec::new()),
            Some(plain) => tlskit_acme::storage::decode_dns_records(&plain)
                .ok_or_else(|| self.inner.err(format!("{key}: not a list of DNS records"))),
        }
    }

    fn set_dns_records(&self, name: &str, records: &[DnsRecord]) -> Result<(), AcmeError> {
        let key = format!("tlskit:acme:dns:{name}");
        if records.is_empty() {
            self.inner
                .call(&[b"DEL", key.as_bytes()], caps::OTHER, &key)?;
            return Ok(());
        }
        let plain = serde_json::to_vec(records).map_err(|e| self.inner.err(e))?;
        self.inner.set_sealed(&key, &plain, caps::ACME_DNS)
    }
}
