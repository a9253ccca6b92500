//! Session-ticket keys shared by a fleet of `tlskit serve` nodes through Redis (issue 17).
//!
//! Every node of a fleet gets the same 32-byte key-encryption key (KEK) out of band
//! (`--shared-state-key FILE`). The ticket keys live in one Redis value
//! (`tlskit:ticket-keys`), sealed with the KEK (AES-256-GCM, random nonce, associated data
//! naming what is sealed): Redis, or anyone who reads it, cannot open a ticket. At most two
//! keys are kept: the current one (tickets are made with it) and the previous one (its
//! tickets still resume); a ticket older than two rotation periods never resumes
//! (`tickets::ExpiringTickets` wraps this ticketer, as it wraps the local one).
//!
//! When the current key is older than the rotation period, the node that wins a lease
//! (`SET tlskit:ticket-keys:lease NODE NX PX 10000`) makes a new key, writes the set and
//! announces it (`PUBLISH tlskit:ticket-keys:changed NODE`); the others, subscribed to
//! that channel, re-read at once (milliseconds), and every node also re-reads the value
//! every `--shared-state-reread` (default [`REREAD`], one GET) in case an announcement was
//! missed. So two keys are "current" on different nodes for at most one re-read interval,
//! usually for the time a PUBLISH takes (a ticket made meanwhile with the new key resumes
//! on a node that has not re-read yet only after it does; before that it gets a full
//! handshake). An empty Redis (a
//! restart without persistence) is re-seeded, under the same lease, by the first node that
//! sees it, with the keys it has, so tickets already issued keep resuming.
//!
//! Failure behaviour: Redis unreachable at start: the node starts on local keys and says so
//! (or refuses to start with `--shared-state-required`); Redis lost while running: the
//! node keeps the keys it has (tickets keep resuming across the fleet until the next
//! rotation), logs `shared_state_down`, `tlskit_shared_state_up` is 0, and it resynchronises
//! when Redis is back. Sealed keys that do not open with this node's KEK are refused
//! (`shared_state_key_refused`): the node keeps its own keys and never overwrites the
//! fleet's. Every Redis call has a deadline ([`OP_TIMEOUT`]); nothing waits on Redis in a
//! handshake, and no runtime worker thread waits on the ACME storage's blocking calls.
//!
//! The sync is written against the [`TicketStore`] trait (get, set, set-if-absent with a
//! TTL, publish, subscribe); [`RedisStore`] implements it. `rediss://` verifies the
//! server against the system's roots, or against `--shared-state-ca` ([`redis_client`]),
//! and with tlskit's verifier under `--shared-state-ca-profile` before each connection
//! (`shared_tls.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use rustls::pki_types::pem::PemObject;
use rustls::server::ProducesTickets;

use crate::error::NetError;
use crate::log::{self, Level};

/// How often every node re-reads the shared keys by default (besides the notifications).
pub const REREAD: Duration = Duration::from_secs(2);
/// Channel a node publishes on after it writes a new key set (a rotation or a re-seed):
/// the other nodes re-read at once instead of at their next periodic re-read.
const CHANGED: &str = "tlskit:ticket-keys:changed";
/// Deadline of one Redis connect or command.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// Lifetime of the rotation lease, or one rotation period when that is shorter: the lease
/// only has to cover one node's read, seal and write (each command under [`OP_TIMEOUT`]);
/// held longer than the period it would stretch the rotations to its own length, and a
/// ticket made early in a key's life would outlive the two periods announced to clients
/// before that key became the previous one.
const LEASE_MS: u64 = 10_000;
const KEYS: &str = "tlskit:ticket-keys";
const LEASE: &str = "tlskit:ticket-keys:lease";
/// Associated data of the sealed key set: a sealed value of another kind never opens as
/// one.
const SEAL_AAD: &[u8] = b"tlskit ticket keys v1";
const SEAL_VERSION: u8 = 1;
/// Largest sealed value accepted from Redis (two keys need 107 bytes).
const MAX_SEALED: usize = 4096;

/// `serve --shared-state URL --shared-state-key FILE [--shared-state-required]`.
/// Its `Debug` shows the URL with the password masked (a `ServeConfig` printed with
/// `{:?}` holds it).
#[derive(Clone, PartialEq, Eq)]
pub struct SharedSettings {
    /// `redis://[user:pass@]HOST:PORT[/db]` or `rediss://...` (TLS).
    pub url: String,
    /// The 32-byte key-encryption key, raw or as 64 hex digits; mode 0600.
    pub key_file: PathBuf,
    /// Refuse to start when Redis cannot be reached or its keys cannot be opened.
    pub required: bool,
    /// How often the keys are re-read besides the change notifications
    /// (`--shared-state-reread`, default [`REREAD`]).
    pub reread: Duration,
    /// `--shared-state-ca FILE`: the PEM certificates a `rediss://` server's certificate
    /// must chain to (a private CA), instead of the system's roots.
    pub ca: Option<PathBuf>,
    /// `--shared-state-ca-profile`: the rule set a `rediss://` server's certificate is
    /// checked against with tlskit's verifier (default: the verifier's default profile).
    pub ca_profile: tlskit_verify::Profile,
    /// `--shared-state-ca-allow`: rules not checked on it.
    pub ca_allow: Vec<tlskit_verify::Rule>,
}

impl std::fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSettings")
            .field("url", &redact(&self.url))
            .field("key_file", &self.key_file)
            .field("required", &self.required)
            .field("reread", &self.reread)
            .field("ca", &self.ca)
            .field("ca_profile", &self.ca_profile)
            .field("ca_allow", &self.ca_allow)
            .finish()
    }
}

/// Largest `--shared-state-ca` file read.
const MAX_CA_FILE: u64 = 1 << 20;

/// The Redis client for these settings: the URL checked, a `rediss://` server verified
/// against `--shared-state-ca` when given (else the system's roots). Errors name the URL
/// with its password masked.
pub fn redis_client(s: &SharedSettings) -> Result<redis::Client, NetError> {
    let shown = redact(&s.url);
    let bad = |e: redis::RedisError| {
        NetError::Config(format!(
            "--shared-state {shown}: {}",
            redact(&e.to_string())
        ))
    };
    let Some(ca) = &s.ca else {
        return redis::Client::open(s.url.as_str()).map_err(bad);
    };
    if !s.url.starts_with("rediss://") {
        return Err(NetError::Config(format!(
            "--shared-state-ca needs a rediss:// URL (TLS), not {shown}"
        )));
    }
    let pem = tlskit_io::read(ca, MAX_CA_FILE).map_err(|e| NetError::File {
        path: ca.clone(),
        reason: e.to_string(),
    })?;
    // Parsed as the rest of tlskit reads PEM (rustls-pki-types), so a damaged block is
    // refused here with its reason rather than by the TLS library at the first connect.
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| NetError::File {
            path: ca.clone(),
            reason: tlskit_x509::text::pem_error_reason(&e),
        })?;
    if certs.is_empty() {
        return Err(NetError::File {
            path: ca.clone(),
            reason: "no PEM certificate in it".into(),
        });
    }
    redis::Client::build_with_tls(
        s.url.as_str(),
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        },
    )
    .map_err(bad)
}

/// The URL with any password replaced by `***` (for logs and errors): the workspace's
/// one redaction, `tlskit_x509::text::redact`.
pub fn redact(url: &str) -> String {
    tlskit_x509::text::redact(url).into_owned()
}

/// Read the KEK: exactly 32 bytes, or 64 hex digits (whitespace around ignored); refused
/// when group or others may read the file.
pub fn read_kek(path: &Path) -> Result<[u8; 32], NetError> {
    let err = |reason: String| NetError::File {
        path: path.to_path_buf(),
        reason,
    };
    let (file, md) = tlskit_io::open_regular(path).map_err(|e| err(e.to_string()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        if md.permissions().mode() & 0o077 != 0 {
            return Err(err(format!(
                "key-encryption key readable by group or others (mode {:o}): chmod 600",
                md.permissions().mode() & 0o777
            )));
        }
    }
    let bytes = tlskit_io::read_open(file, &md, path, 1024).map_err(|e| err(e.to_string()))?;
    if bytes.len() == 32 {
        let mut k = [0u8; 32];
        k.copy_from_slice(&bytes);
        return Ok(k);
    }
    let text = std::str::from_utf8(&bytes).map(str::trim).unwrap_or("");
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut k = [0u8; 32];
        for (i, out) in k.iter_mut().enumerate() {
            *out = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| err("not 64 hex digits".into()))?;
        }
        return Ok(k);
    }
    Err(err(format!(
        "a key-encryption key is 32 bytes or 64 hex digits, not {} bytes (make one: head -c 32 /dev/urandom > FILE)",
        bytes.len()
    )))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn random<const N: usize>() -> Option<[u8; N]> {
    let mut b = [0u8; N];
    aws_lc_rs::rand::fill(&mut b).ok()?;
    Some(b)
}

/// One ticket key.
struct TicketKey {
    id: u32,
    created: u64,
    raw: [u8; 32],
    aead: LessSafeKey,
}

impl TicketKey {
    fn new(id: u32, created: u64, raw: [u8; 32]) -> Option<Self> {
        let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &raw).ok()?);
        Some(Self {
            id,
            created,
            raw,
            aead,
        })
    }
    fn fresh(id: u32) -> Option<Self> {
        Self::new(id, now_secs(), random()?)
    }
}

/// Newest first; at most two.
struct KeySet(Vec<TicketKey>);

impl KeySet {
    fn ids(&self) -> Vec<(u32, u64)> {
        self.0.iter().map(|k| (k.id, k.created)).collect()
    }
    fn plain(&self) -> Vec<u8> {
        let mut out = vec![u8::try_from(self.0.len()).unwrap_or(0)];
        for k in &self.0 {
            out.extend_from_slice(&k.id.to_be_bytes());
            out.extend_from_slice(&k.created.to_be_bytes());
            out.extend_from_slice(&k.raw);
        }
        out
    }
    fn from_plain(p: &[u8]) -> Option<Self> {
        let (&n, mut rest) = p.split_first()?;
        let mut keys = Vec::new();
        for _ in 0..n.min(2) {
            let (e, r) = (rest.get(..44)?, rest.get(44..)?);
            let id = u32::from_be_bytes(e[..4].try_into().ok()?);
            let created = u64::from_be_bytes(e[4..12].try_into().ok()?);
            let raw: [u8; 32] = e[12..44].try_into().ok()?;
            keys.push(TicketKey::new(id, created, raw)?);
            rest = r;
        }
        (!keys.is_empty()).then_some(Self(keys))
    }
}

/// Seal and open the key set with the KEK.
struct Kek(LessSafeKey);

impl Kek {
    fn new(raw: &[u8; 32]) -> Option<Self> {
        Some(Self(LessSafeKey::new(
            UnboundKey::new(&AES_256_GCM, raw).ok()?,
        )))
    }
    fn seal(&self, set: &KeySet) -> Option<Vec<u8>> {
        self.seal_bytes(&set.plain(), SEAL_AAD)
    }
    /// Seal any bytes: `version || nonce || AES-256-GCM(plain, aad)`.
    fn seal_bytes(&self, plain: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        let nonce: [u8; NONCE_LEN] = random()?;
        let mut body = plain.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut body,
            )
            .ok()?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + body.len());
        out.push(SEAL_VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Some(out)
    }
    fn open_bytes(&self, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        if sealed.first() != Some(&SEAL_VERSION) || sealed.len() > 1 << 20 {
            return None;
        }
        let nonce: [u8; NONCE_LEN] = sealed.get(1..1 + NONCE_LEN)?.try_into().ok()?;
        let mut body = sealed.get(1 + NONCE_LEN..)?.to_vec();
        let plain = self
            .0
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut body,
            )
            .ok()?;
        Some(plain.to_vec())
    }
    fn open(&self, sealed: &[u8]) -> Option<KeySet> {
        if sealed.len() > MAX_SEALED {
            return None;
        }
        KeySet::from_plain(&self.open_bytes(sealed, SEAL_AAD)?)
    }
}

/// The fleet's ticketer and the loop that keeps it in step with Redis.
pub(crate) struct SharedTickets {
    keys: ArcSwap<KeySet>,
    kek: Kek,
    store: Arc<dyn TicketStore>,
    url: String,
    period: Duration,
    reread: Duration,
    node: String,
    up: AtomicBool,
    /// The last state logged, so that each change is logged once.
    said: Mutex<String>,
}

impl std::fmt::Debug for SharedTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedTickets")
            .field("url", &self.url)
            .field("keys", &self.keys.load().ids())
            .finish()
    }
}

impl SharedTickets {
    /// Read the KEK, check the URL, make local keys, and try Redis once (with a deadline).
    pub(crate) fn start(s: &SharedSettings, period: Duration) -> Result<Arc<Self>, NetError> {
        let kek_raw = read_kek(&s.key_file)?;
        let url = redact(&s.url);
        let client = redis_client(s)?;
        let rand_err = || NetError::Config("no randomness from the OS".into());
        let kek = Kek::new(&kek_raw).ok_or_else(rand_err)?;
        let first = TicketKey::fresh(u32::from_be_bytes(random().ok_or_else(rand_err)?))
            .ok_or_else(rand_err)?;
        let node = format!(
            "{}-{:08x}",
            std::process::id(),
            u32::from_be_bytes(random().ok_or_else(rand_err)?)
        );
        let me = Arc::new(Self {
            keys: ArcSwap::from_pointee(KeySet(vec![first])),
            kek,
            store: Arc::new(RedisStore::checked(client, url.clone(), s)?),
            url: url.clone(),
            period,
            reread: s.reread,
            node,
            up: AtomicBool::new(false),
            said: Mutex::new(String::new()),
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let state = rt.block_on(me.tick());
        // That connection's driver lives on this short-lived runtime: the serving runtime
        // opens its own.
        me.store.reset();
        if let Err(why) = state {
            if s.required {
                return Err(NetError::Config(format!(
                    "--shared-state {url}: {why} (--shared-state-required)"
                )));
            }
            log::event(
                Level::Warn,
                "shared_state_unavailable",
                &[
                    ("url", &url),
                    ("reason", &why),
                    ("using", &"local ticket keys until it is back"),
                ],
            );
        }
        Ok(me)
    }

    /// Whether the keys in use are the fleet's (the last sync worked).
    pub(crate) fn up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// Re-read when another node announces new keys on [`CHANGED`], and every `reread`
    /// in any case, until `stop` changes.
    pub(crate) async fn run(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let changed = Arc::new(tokio::sync::Notify::new());
        let listener = tokio::spawn(listen(
            self.store.clone(),
            changed.clone(),
            self.node.clone(),
        ));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.reread) => {}
                _ = changed.notified() => {}
                _ = stop.changed() => {
                    listener.abort();
                    return;
                }
            }
            let _ = self.tick().await;
        }
    }

    /// Tell the other nodes that the key set changed (best effort: they re-read anyway).
    async fn announce(&self) {
        let _ = self.store.publish(CHANGED, &self.node).await;
    }

    fn report(&self, up: bool, event: &str, reason: &str) {
        self.up.store(up, Ordering::Relaxed);
        let state = format!("{event}:{reason}");
        let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        if *said != state {
            *said = state;
            let level = if up { Level::Info } else { Level::Warn };
            log::event(
                level,
                event,
                &[
                    ("url", &self.url),
                    ("node", &self.node),
                    ("reason", &reason),
                ],
            );
        }
    }

    /// One sync: read the fleet's keys, adopt them, seed or rotate under the lease.
    async fn tick(&self) -> Result<(), String> {
        let result = self.sync().await;
        match &result {
            Ok(()) => self.report(
                true,
                "shared_state_up",
                "ticket keys in step with the fleet",
            ),
            Err(why) if why.starts_with("the shared ticket keys") => {
                self.report(false, "shared_state_key_refused", why)
            }
            Err(why) => {
                self.store.reset();
                self.report(false, "shared_state_down", why)
            }
        }
        result
    }

    async fn sync(&self) -> Result<(), String> {
        let sealed = self.store.get(KEYS).await?;
        let Some(sealed) = sealed else {
            // Empty (first node of a fleet, or Redis restarted without its data): seed it
            // with the keys this node has, under the lease.
            if self.lease().await? {
                let set = self.keys.load();
                let sealed = self.kek.seal(&set).ok_or("cannot seal the keys")?;
                self.store.set(KEYS, &sealed).await?;
                self.announce().await;
                log::event(
                    Level::Info,
                    "shared_ticket_keys_seeded",
                    &[("node", &self.node), ("keys", &set.0.len())],
                );
            }
            return Ok(());
        };
        let set = self.kek.open(&sealed).ok_or_else(|| {
            "the shared ticket keys do not open with this --shared-state-key (another \
             key-encryption key than the fleet's, or not tlskit's value)"
                .to_string()
        })?;
        if set.ids() != self.keys.load().ids() {
            log::event(
                Level::Info,
                "shared_ticket_keys_adopted",
                &[("node", &self.node), ("current_key", &set.0[0].id)],
            );
            self.keys.store(Arc::new(set));
        }
        let newest = self.keys.load().0[0].created;
        if now_secs().saturating_sub(newest) >= self.period.as_secs() && self.lease().await? {
            self.rotate().await?;
        }
        Ok(())
    }

    async fn lease(&self) -> Result<bool, String> {
        self.store
            .set_if_absent(
                LEASE,
                self.node.as_bytes(),
                // At least a second: the shortest period serve allows, and Redis refuses
                // an expiry of 0.
                Duration::from_millis(LEASE_MS)
                    .min(self.period)
                    .max(Duration::from_secs(1)),
            )
            .await
    }

    async fn rotate(&self) -> Result<(), String> {
        let old = self.keys.load();
        let id = old.0[0].id.wrapping_add(1);
        let new = TicketKey::fresh(id).ok_or("no randomness from the OS")?;
        let prev = &old.0[0];
        let keep = TicketKey::new(prev.id, prev.created, prev.raw).ok_or("bad key")?;
        let set = KeySet(vec![new, keep]);
        let sealed = self.kek.seal(&set).ok_or("cannot seal the keys")?;
        self.store.set(KEYS, &sealed).await?;
        self.announce().await;
        log::event(
            Level::Info,
            "ticket_key_rotated",
            &[("node", &self.node), ("current_key", &id)],
        );
        self.keys.store(Arc::new(set));
        Ok(())
    }
}

/// Subscribe to [`CHANGED`] and wake the sync loop on each announcement by another node.
/// On any error (the store away, the subscription dropped), wait [`REREAD`] and subscribe
/// again; the periodic re-read covers the gap.
async fn listen(store: Arc<dyn TicketStore>, changed: Arc<tokio::sync::Notify>, me: String) {
    loop {
        let wake = changed.clone();
        let me = me.clone();
        let _ = store
            .subscribe(
                CHANGED,
                Box::new(move |from: String| {
                    if from != me {
                        wake.notify_one();
                    }
                }),
            )
            .await;
        tokio::time::sleep(REREAD).await;
    }
}

/// A boxed future of a [`TicketStore`] call.
pub type StoreFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send + 'a>>;

/// What the ticket-key sync needs of a shared store: a value read and written whole, a
/// set-if-absent with an expiry (the rotation lease), and a change channel. Redis
/// ([`RedisStore`]) is the one implementation; etcd (a transaction on a lease, watch) or
/// Consul (a session lock, blocking queries) would plug in here, and the sealing, the
/// rotation and the failure handling above it stay the same. Every call has its own
/// deadline; errors are text with any password masked.
pub trait TicketStore: Send + Sync {
    /// The value of `key`, None when absent.
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>>;
    /// Set `key` to `value`, no expiry.
    fn set<'a>(&'a self, key: &'a str, value: &'a [u8]) -> StoreFuture<'a, ()>;
    /// Set `key` to `value` for `ttl` only when it is absent: true when set.
    fn set_if_absent<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> StoreFuture<'a, bool>;
    /// Announce `message` on `channel` (best effort).
    fn publish<'a>(&'a self, channel: &'a str, message: &'a str) -> StoreFuture<'a, ()>;
    /// Hand each message on `channel` to `on_message` until the subscription breaks (its
    /// setup has a deadline; waiting for messages has none and blocks nothing).
    fn subscribe<'a>(
        &'a self,
        channel: &'a str,
        on_message: Box<dyn Fn(String) + Send + Sync + 'a>,
    ) -> StoreFuture<'a, ()>;
    /// Forget the connection after an error: the next call connects again.
    fn reset(&self);
}

/// [`TicketStore`] on Redis: one multiplexed connection for commands (opened lazily,
/// reopened after an error), one more for the subscription.
pub struct RedisStore {
    client: redis::Client,
    url: String,
    con: Mutex<Option<redis::aio::MultiplexedConnection>>,
    /// tlskit's check of a `rediss://` server's certificate, before each connection.
    tls: Option<Arc<crate::shared_tls::TlsCheck>>,
}

impl RedisStore {
    /// `url`: the URL with its password masked, for errors.
    pub fn new(client: redis::Client, url: String) -> Self {
        Self {
            client,
            url,
            con: Mutex::new(None),
            tls: None,
        }
    }

    /// The same, with the `rediss://` server's certificate checked by tlskit's verifier
    /// under the settings' profile before each connection.
    pub fn checked(
        client: redis::Client,
        url: String,
        s: &SharedSettings,
    ) -> Result<Self, NetError> {
        let tls = crate::shared_tls::TlsCheck::new(s, &client)?;
        Ok(Self {
            tls,
            ..Self::new(client, url)
        })
    }

    /// tlskit's verdict on the server's certificate (`Ok` for plain `redis://`).
    async fn check_tls(&self) -> Result<(), String> {
        match &self.tls {
            Some(c) => c
                .check(OP_TIMEOUT)
                .await
                .map_err(|e| format!("cannot connect: {e}")),
            None => Ok(()),
        }
    }

    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, String> {
        let cached = self.con.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(c) = cached {
            return Ok(c);
        }
        self.check_tls().await?;
        let c = tokio::time::timeout(OP_TIMEOUT, self.client.get_multiplexed_async_connection())
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| format!("cannot connect: {}", redact(&e.to_string())))?;
        *self.con.lock().unwrap_or_else(|p| p.into_inner()) = Some(c.clone());
        Ok(c)
    }

    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, String> {
        let mut c = self.connection().await?;
        op(&cmd, &mut c).await
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl TicketStore for RedisStore {
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(key);
            self.run(cmd).await
        })
    }
    fn set<'a>(&'a self, key: &'a str, value: &'a [u8]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(key).arg(value);
            self.run(cmd).await
        })
    }
    fn set_if_absent<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut cmd = redis::cmd("SET");
            cmd.arg(key).arg(value).arg("NX").arg("PX").arg(ms);
            let got: Option<String> = self.run(cmd).await?;
            Ok(got.is_some())
        })
    }
    fn publish<'a>(&'a self, channel: &'a str, message: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut cmd = redis::cmd("PUBLISH");
            cmd.arg(channel).arg(message);
            self.run::<i64>(cmd).await.map(drop)
        })
    }
    fn subscribe<'a>(
        &'a self,
        channel: &'a str,
        on_message: Box<dyn Fn(String) + Send + Sync + 'a>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            use futures_util::StreamExt;
            self.check_tls().await?;
            let mut ps = tokio::time::timeout(OP_TIMEOUT, self.client.get_async_pubsub())
                .await
                .map_err(|_| "connect timed out".to_string())?
                .map_err(|e| format!("cannot connect: {}", redact(&e.to_string())))?;
            tokio::time::timeout(OP_TIMEOUT, ps.subscribe(channel))
                .await
                .map_err(|_| "subscribe timed out".to_string())?
                .map_err(|e| format!("Redis: {}", redact(&e.to_string())))?;
            let mut messages = ps.on_message();
            while let Some(m) = messages.next().await {
                on_message(m.get_payload().unwrap_or_default());
            }
            Ok(())
        })
    }
    fn reset(&self) {
        *self.con.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

async fn op<T: redis::FromRedisValue>(
    cmd: &redis::Cmd,
    c: &mut redis::aio::MultiplexedConnection,
) -> Result<T, String> {
    tokio::time::timeout(OP_TIMEOUT, cmd.query_async::<T>(c))
        .await
        .map_err(|_| "Redis did not answer in time".to_string())?
        .map_err(|e| format!("Redis: {}", redact(&e.to_string())))
}

impl ProducesTickets for SharedTickets {
    fn enabled(&self) -> bool {
        true
    }
    fn lifetime(&self) -> u32 {
        u32::try_from(self.period.as_secs().saturating_mul(2)).unwrap_or(u32::MAX)
    }
    /// `key id (4) || nonce (12) || AES-256-GCM(plain, aad = key id)`.
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let set = self.keys.load();
        let k = set.0.first()?;
        let nonce: [u8; NONCE_LEN] = random()?;
        let mut body = plain.to_vec();
        k.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(k.id.to_be_bytes()),
                &mut body,
            )
            .ok()?;
        let mut out = Vec::with_capacity(4 + NONCE_LEN + body.len());
        out.extend_from_slice(&k.id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Some(out)
    }
    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let id = u32::from_be_bytes(cipher.get(..4)?.try_into().ok()?);
        let nonce: [u8; NONCE_LEN] = cipher.get(4..4 + NONCE_LEN)?.try_into().ok()?;
        let set = self.keys.load();
        let k = set.0.iter().find(|k| k.id == id)?;
        let mut body = cipher.get(4 + NONCE_LEN..)?.to_vec();
        let plain = k
            .aead
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(id.to_be_bytes()),
                &mut body,
            )
            .ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value and when it expires.
    type Stored = (Vec<u8>, Option<std::time::Instant>);

    /// A [`TicketStore`] in memory (what a second backend implements), recording what
    /// was published.
    #[derive(Default)]
    struct MemoryStore {
        values: Mutex<std::collections::HashMap<String, Stored>>,
        published: Mutex<Vec<String>>,
    }

    impl MemoryStore {
        fn remove(&self, key: &str) {
            self.values
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(key);
        }
    }

    impl TicketStore for MemoryStore {
        fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
            let m = self.values.lock().unwrap_or_else(|p| p.into_inner());
            let v = m
                .get(key)
                .filter(|(_, until)| until.is_none_or(|u| u > std::time::Instant::now()))
                .map(|(v, _)| v.clone());
            Box::pin(async move { Ok(v) })
        }
        fn set<'a>(&'a self, key: &'a str, value: &'a [u8]) -> StoreFuture<'a, ()> {
            self.values
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key.to_string(), (value.to_vec(), None));
            Box::pin(async { Ok(()) })
        }
        fn set_if_absent<'a>(
            &'a self,
            key: &'a str,
            value: &'a [u8],
            ttl: Duration,
        ) -> StoreFuture<'a, bool> {
            let now = std::time::Instant::now();
            let mut m = self.values.lock().unwrap_or_else(|p| p.into_inner());
            let live = m
                .get(key)
                .is_some_and(|(_, until)| until.is_none_or(|u| u > now));
            if !live {
                m.insert(key.to_string(), (value.to_vec(), Some(now + ttl)));
            }
            Box::pin(async move { Ok(!live) })
        }
        fn publish<'a>(&'a self, _: &'a str, message: &'a str) -> StoreFuture<'a, ()> {
            self.published
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(message.to_string());
            Box::pin(async { Ok(()) })
        }
        fn subscribe<'a>(
            &'a self,
            _: &'a str,
            _: Box<dyn Fn(String) + Send + Sync + 'a>,
        ) -> StoreFuture<'a, ()> {
            Box::pin(async { Ok(()) })
        }
        fn reset(&self) {}
    }

    fn node(store: &Arc<MemoryStore>, name: &str, period: Duration) -> SharedTickets {
        SharedTickets {
            keys: ArcSwap::from_pointee(set(&[u32::from(name.as_bytes()[0])])),
            kek: Kek::new(&[3; 32]).unwrap_or_else(|| unreachable!("key")),
            store: store.clone(),
            url: String::new(),
            period,
            reread: REREAD,
            node: name.into(),
            up: AtomicBool::new(false),
            said: Mutex::new(String::new()),
        }
    }

    /// The sync runs on any [`TicketStore`]: the first node seeds, the second adopts,
    /// a rotation happens under the lease (one node at a time), is announced, and the
    /// other node keeps opening tickets from the previous key.
    #[tokio::test]
    async fn sync_seeds_adopts_and_rotates_on_any_store() {
        let store = Arc::new(MemoryStore::default());
        let a = node(&store, "a", Duration::from_secs(3600));
        let b = node(&store, "b", Duration::from_secs(3600));
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(a.up());
        let ticket = a.encrypt(b"s").unwrap_or_else(|| unreachable!("encrypt"));
        assert_eq!(b.decrypt(&ticket), None, "b not yet in step");
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.keys.load().ids(), a.keys.load().ids());
        assert_eq!(b.decrypt(&ticket).as_deref(), Some(&b"s"[..]));
        // Due for rotation on both (period 0): only the lease holder rotates.
        let a0 = node(&store, "a", Duration::ZERO);
        a0.keys.store(Arc::new(
            KeySet::from_plain(&a.keys.load().plain()).unwrap_or_else(|| unreachable!()),
        ));
        let b0 = node(&store, "b", Duration::ZERO);
        store.remove(LEASE);
        a0.tick().await.unwrap_or_else(|e| panic!("{e}"));
        b0.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(a0.keys.load().0[0].id, a.keys.load().0[0].id, "a rotated");
        assert_eq!(
            b0.keys.load().ids(),
            a0.keys.load().ids(),
            "b adopted, did not rotate"
        );
        assert_eq!(
            b0.decrypt(&ticket).as_deref(),
            Some(&b"s"[..]),
            "previous key"
        );
        let published = store
            .published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        assert_eq!(published, ["a", "a"], "seed and rotation announced");
        // A node with another KEK refuses the set and writes nothing.
        let mut odd = node(&store, "o", Duration::ZERO);
        odd.kek = Kek::new(&[4; 32]).unwrap_or_else(|| unreachable!("key"));
        store.remove(LEASE);
        assert!(odd.tick().await.is_err());
        assert!(!odd.up());
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            b.keys.load().ids(),
            a0.keys.load().ids(),
            "fleet's keys kept"
        );
    }

    fn set(ids: &[u32]) -> KeySet {
        KeySet(
            ids.iter()
                .map(|&i| TicketKey::fresh(i).unwrap_or_else(|| unreachable!("OS randomness")))
                .collect(),
        )
    }

    #[test]
    fn sealed_set_opens_only_with_the_same_kek() {
        let a = Kek::new(&[7; 32]).unwrap_or_else(|| unreachable!("key"));
        let b = Kek::new(&[8; 32]).unwrap_or_else(|| unreachable!("key"));
        let s = set(&[1, 2]);
        let sealed = a.seal(&s).unwrap_or_else(|| unreachable!("seal"));
        assert_eq!(a.open(&sealed).map(|x| x.ids()), Some(s.ids()));
        assert!(b.open(&sealed).is_none(), "another KEK must not open it");
        let mut bad = sealed.clone();
        bad[20] ^= 1;
        assert!(a.open(&bad).is_none(), "tampered");
        assert!(a.open(&sealed[..10]).is_none());
        assert!(!sealed.windows(32).any(|w| w == s.0[0].raw), "key in clear");
    }

    #[test]
    fn tickets_from_previous_key_open_older_do_not() {
        let t = |ids: &[u32]| {
            let kek = Kek::new(&[1; 32]).unwrap_or_else(|| unreachable!("key"));
            SharedTickets {
                keys: ArcSwap::from_pointee(set(ids)),
                kek,
                store: Arc::new(MemoryStore::default()),
                url: String::new(),
                period: Duration::from_secs(60),
                reread: REREAD,
                node: "t".into(),
                up: AtomicBool::new(true),
                said: Mutex::new(String::new()),
            }
        };
        let node = t(&[5]);
        let ticket = node
            .encrypt(b"session")
            .unwrap_or_else(|| unreachable!("encrypt"));
        // Another node with the same set opens it; after one rotation too; after two, not.
        let other = t(&[5]);
        other.keys.store(Arc::new(KeySet(vec![TicketKey::new(
            5,
            0,
            node.keys.load().0[0].raw,
        )
        .unwrap_or_else(|| unreachable!())])));
        assert_eq!(other.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        let prev = node.keys.load().0[0].raw;
        other.keys.store(Arc::new(KeySet(vec![
            TicketKey::fresh(6).unwrap_or_else(|| unreachable!()),
            TicketKey::new(5, 0, prev).unwrap_or_else(|| unreachable!()),
        ])));
        assert_eq!(other.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        other.keys.store(Arc::new(set(&[7, 6])));
        assert_eq!(other.decrypt(&ticket), None);
        let mut bad = ticket.clone();
        bad[30] ^= 1;
        assert_eq!(node.decrypt(&bad), None);
        assert_eq!(node.decrypt(&ticket[..10]), None);
    }

    #[test]
    fn private_ca_needs_rediss_and_a_certificate_and_masks_the_password() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ca = t.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate").unwrap_or_else(|e| panic!("{e}"));
        let settings = |url: &str| SharedSettings {
            url: url.into(),
            key_file: PathBuf::new(),
            required: false,
            reread: REREAD,
            ca: Some(ca.clone()),
            ca_profile: tlskit_verify::Profile::default(),
            ca_allow: Vec::new(),
        };
        let e = redis_client(&settings("redis://u:s3cret@127.0.0.1:1/2"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("rediss://") && !e.contains("s3cret"), "{e}");
        let e = redis_client(&settings("rediss://u:s3cret@127.0.0.1:1/2"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("no PEM certificate"), "{e}");
        let mut none = settings("rediss://u:s3cret@127.0.0.1:1/2");
        none.ca = None;
        assert!(redis_client(&none).is_ok());
        let shown = format!("{none:?}");
        assert!(
            shown.contains("u:***@") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("redis://:s3cret@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(redact("rediss://user:pw@h:1"), "rediss://user:***@h:1");
        assert_eq!(redact("redis://token@h:1"), "redis://***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }
}

/// ACME state shared by the fleet in the same Redis (issue 17): the account, each
/// certificate with its key (both sealed with the KEK, the Redis key name bound into the
/// associated data so a value cannot be moved under another name), challenge answers (the
/// key authorizations the CA fetches: public by design, kept 10 minutes) so that any node
/// answers a validation, and an issuance lock (`SET NX PX`, 10 minutes, released only by
/// its holder) so that the fleet orders each name once.
///
/// Blocking calls on one connection, each with a deadline ([`OP_TIMEOUT`], the connect
/// included: it runs on a helper thread waited for at most that long); the manager calls
/// them from the blocking pool, as it does the filesystem storage, and the issuance lock
/// is released there too. A lost connection is reopened at the next call.
pub struct RedisAcmeStorage {
    inner: Arc<AcmeInner>,
}

struct AcmeInner {
    client: redis::Client,
    con: Mutex<Option<redis::Connection>>,
    /// tlskit's check of a `rediss://` server's certificate, before each connection.
    tls: Option<Arc<crate::shared_tls::TlsCheck>>,
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

use crate::acme::storage::{AcmeStorage, IssuanceLock, StoredCert};
use crate::acme::AcmeError;

impl AcmeInner {
    fn err(&self, reason: impl std::fmt::Display) -> AcmeError {
        AcmeError::Shared {
            url: self.url.clone(),
            reason: redact(&reason.to_string()),
        }
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, AcmeError> {
        let mut guard = self.con.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            // The redis crate's connect applies its timeout to the TCP connect and then
            // to each reply of its setup (AUTH, CLIENT SETINFO, SELECT): against a server
            // that never answers that is several deadlines. Connect on a helper thread and
            // wait for it at most OP_TIMEOUT (the thread ends within its own timeouts).
            let (tx, rx) = std::sync::mpsc::channel();
            let client = self.client.clone();
            let tls = self.tls.clone();
            std::thread::Builder::new()
                .name("tlskit-redis-connect".into())
                .spawn(move || {
                    let r = match tls.map(|c| c.check_blocking(OP_TIMEOUT)) {
                        Some(Err(why)) => Err(why),
                        _ => client
                            .get_connection_with_timeout(OP_TIMEOUT)
                            .map_err(|e| e.to_string()),
                    };
                    let _ = tx.send(r);
                })
                .map_err(|e| self.err(format!("cannot connect: {e}")))?;
            // A rediss:// server: the TLS check and the connect each have OP_TIMEOUT.
            let limit = if self.tls.is_some() {
                OP_TIMEOUT * 2
            } else {
                OP_TIMEOUT
            };
            let c = match rx.recv_timeout(limit) {
                Ok(r) => r.map_err(|e| self.err(format!("cannot connect: {e}")))?,
                Err(_) => return Err(self.err("cannot connect: timed out")),
            };
            c.set_read_timeout(Some(OP_TIMEOUT))
                .and_then(|()| c.set_write_timeout(Some(OP_TIMEOUT)))
                .map_err(|e| self.err(e))?;
            *guard = Some(c);
        }
        let Some(c) = guard.as_mut() else {
            return Err(self.err("not connected"));
        };
        f(c).map_err(|e| {
            *guard = None;
            self.err(e)
        })
    }

    fn aad(key: &str) -> Vec<u8> {
        [b"tlskit acme v1 ".as_slice(), key.as_bytes()].concat()
    }

    fn get_sealed(&self, key: &str) -> Result<Option<Vec<u8>>, AcmeError> {
        let v: Option<Vec<u8>> = self.with(|c| redis::cmd("GET").arg(key).query(c))?;
        match v {
            None => Ok(None),
            Some(v) => self.kek.open_bytes(&v, &Self::aad(key)).map(Some).ok_or_else(|| {
                self.err(format!(
                    "{key} does not open with this --shared-state-key (another key-encryption key than the fleet's?)"
                ))
            }),
        }
    }

    fn set_sealed(&self, key: &str, plain: &[u8]) -> Result<(), AcmeError> {
        let sealed = self
            .kek
            .seal_bytes(plain, &Self::aad(key))
            .ok_or_else(|| self.err("cannot seal"))?;
        self.with(|c| redis::cmd("SET").arg(key).arg(sealed).query::<()>(c))
    }
}

impl RedisAcmeStorage {
    /// Connects lazily; the KEK is read now (a bad file is an error at start).
    pub fn open(s: &SharedSettings) -> Result<Self, NetError> {
        let kek_raw = read_kek(&s.key_file)?;
        let url = redact(&s.url);
        let client = redis_client(s)?;
        let tls = crate::shared_tls::TlsCheck::new(s, &client)?;
        let kek = Kek::new(&kek_raw).ok_or_else(|| NetError::Config("bad key".into()))?;
        let node = format!(
            "{}-{:08x}",
            std::process::id(),
            u32::from_be_bytes(random().unwrap_or([0; 4]))
        );
        Ok(Self {
            inner: Arc::new(AcmeInner {
                client,
                con: Mutex::new(None),
                tls,
                kek,
                url,
                node,
            }),
        })
    }
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
            let _ = inner.with(|c| {
                redis::cmd("EVAL")
                    .arg(RELEASE)
                    .arg(1)
                    .arg(&key)
                    .arg(&token)
                    .query::<i64>(c)
            });
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
        let key = format!(
            "tlskit:acme:account:{}",
            crate::acme::storage::hex16(directory)
        );
        self.inner.get_sealed(&key)
    }

    fn store_account(&self, directory: &str, credentials: &[u8]) -> Result<(), AcmeError> {
        let key = format!(
            "tlskit:acme:account:{}",
            crate::acme::storage::hex16(directory)
        );
        if let Some(old) = self.inner.get_sealed(&key)? {
            // Never just overwritten: the old credentials stay beside the new ones.
            let backup = format!("{key}:backup:{}", now_secs());
            self.inner.set_sealed(&backup, &old)?;
        }
        self.inner.set_sealed(&key, credentials)
    }

    fn load_cert(&self, name: &str) -> Result<Option<StoredCert>, AcmeError> {
        let key = format!("tlskit:acme:cert:{name}");
        let Some(plain) = self.inner.get_sealed(&key)? else {
            return Ok(None);
        };
        let c: SealedCert = serde_json::from_slice(&plain)
            .map_err(|_| self.inner.err(format!("{key}: not a stored certificate")))?;
        Ok(Some(StoredCert {
            chain_pem: c.chain_pem,
            key_pem: c.key_pem,
        }))
    }

    fn store_cert(&self, name: &str, cert: &StoredCert) -> Result<(), AcmeError> {
        let key = format!("tlskit:acme:cert:{name}");
        let plain = serde_json::to_vec(&SealedCert {
            chain_pem: cert.chain_pem.clone(),
            key_pem: cert.key_pem.clone(),
        })
        .map_err(|e| self.inner.err(e))?;
        self.inner.set_sealed(&key, &plain)
    }

    fn put_challenge(&self, key: &str, answer: &str) -> Result<(), AcmeError> {
        let k = format!("tlskit:acme:challenge:{key}");
        self.inner.with(|c| {
            redis::cmd("SET")
                .arg(&k)
                .arg(answer)
                .arg("PX")
                .arg(CHALLENGE_TTL_MS)
                .query::<()>(c)
        })
    }

    fn challenge(&self, key: &str) -> Option<String> {
        let k = format!("tlskit:acme:challenge:{key}");
        self.inner
            .with(|c| redis::cmd("GET").arg(&k).query::<Option<String>>(c))
            .ok()
            .flatten()
    }

    fn remove_challenge(&self, key: &str) {
        let k = format!("tlskit:acme:challenge:{key}");
        let _ = self
            .inner
            .with(|c| redis::cmd("DEL").arg(&k).query::<i64>(c));
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
        loop {
            let got: Option<String> = self.inner.with(|c| {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ISSUANCE_LOCK_MS)
                    .query(c)
            })?;
            if got.is_some() {
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
}
