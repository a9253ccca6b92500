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
//! (`shared_state_key_refused`): the node keeps its own keys, rotates them locally and
//! never overwrites the fleet's. A value that cannot be a sealed key set at all (garbage,
//! over its cap: (`looks_sealed`)) is replaced by the node that wins the rotation lease,
//! so rotation goes on. Every Redis operation has one deadline ([`OP_TIMEOUT`]: connect,
//! log-in, command and reply together) and every reply a cap by key type ([`caps`]),
//! read by tlskit's own RESP reader (`resp.rs`); nothing waits on Redis in a
//! handshake, and no runtime worker thread waits on Redis at all.
//!
//! The sync is written against the [`TicketStore`] trait (get, set, set-if-absent with a
//! TTL, publish, subscribe); [`RedisStore`] implements it. `rediss://` verifies the
//! server against the system's roots, or against `--shared-state-ca` (`endpoint`), with
//! tlskit's verifier under `--shared-state-ca-profile` / `--shared-state-ca-allow`
//! (`tls_config`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use rustls::server::ProducesTickets;

use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{StoreServerVerifier, VerifierConfig};

use tlskit_tls::log::{self, Level};
use tlskit_tls::{Clock, NetError};

/// How often every node re-reads the shared keys by default (besides the notifications).
pub const REREAD: Duration = Duration::from_secs(2);
/// Channel a node publishes on after it writes a new key set (a rotation or a re-seed):
/// the other nodes re-read at once instead of at their next periodic re-read.
const CHANGED: &str = "tlskit:ticket-keys:changed";
/// Deadline of one whole Redis operation: name resolution, connect, TLS, log-in, the
/// command and its reply together.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// Deadline of the first sync at start (read, seed or rotate under the lease, announce).
/// With the ACME storage's first read (one [`OP_TIMEOUT`]), start-up waits at most about
/// 4 s for an unresponsive Redis before `listening on`.
pub const START_SYNC: Duration = Duration::from_secs(2);
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
#[non_exhaustive]
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

impl SharedSettings {
    /// Redis at `url` with the key-encryption key in `key_file`, and the defaults: not
    /// required, re-read every [`REREAD`], the system's roots under the verifier's
    /// default profile.
    pub fn new(url: impl Into<String>, key_file: impl Into<PathBuf>) -> Self {
        Self {
            url: url.into(),
            key_file: key_file.into(),
            required: false,
            reread: REREAD,
            ca: None,
            ca_profile: tlskit_verify::Profile::default(),
            ca_allow: Vec::new(),
        }
    }
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

/// Caps on Redis replies, per key type: bytes of the whole reply (the sealed value and its
/// RESP framing). A reply over its cap is refused at its header, the error naming the key;
/// a value this node would write over the cap is refused before it is written.
pub mod caps {
    /// `tlskit:ticket-keys` (two sealed keys are 118 bytes), the rotation lease, and every
    /// other reply of the ticket-key sync.
    pub const TICKET_KEYS: usize = 4096;
    /// `tlskit:acme:account:*`: the ACME account's credentials (about 1 KiB).
    pub const ACME_ACCOUNT: usize = 64 * 1024;
    /// `tlskit:acme:cert:*`: a certificate chain with its key (a 16-certificate chain of
    /// 4 KiB certificates fits four times).
    pub const ACME_CERT: usize = 256 * 1024;
    /// `tlskit:acme:challenge:*`: a key authorization (about 90 bytes).
    pub const ACME_CHALLENGE: usize = 4096;
    /// `tlskit:acme:dns:*`: the DNS-01 records added and not yet removed for one
    /// certificate (about 130 bytes each).
    pub const ACME_DNS: usize = 256 * 1024;
    /// Replies that carry no stored value: `+OK`, integers, errors, pub/sub messages.
    pub const OTHER: usize = crate::resp::SMALL_REPLY;
}

/// The RESP endpoint for these settings: the URL checked (redis-rs's URL reader:
/// `redis://`, `rediss://`, `redis+unix://`), a `rediss://` server verified against
/// `--shared-state-ca` when given (else the system's roots). Errors name the URL with its
/// password masked.
pub(crate) fn endpoint(s: &SharedSettings) -> Result<crate::resp::Endpoint, NetError> {
    use crate::resp::{Address, Endpoint};
    let shown = redact(&s.url);
    let bad =
        |reason: &str| NetError::Config(format!("--shared-state {shown}: {}", redact(reason)));
    if s.ca.is_some() && !s.url.starts_with("rediss://") {
        return Err(NetError::Config(format!(
            "--shared-state-ca needs a rediss:// URL (TLS), not {shown}"
        )));
    }
    let client = redis::Client::open(s.url.as_str()).map_err(|e| bad(&e.to_string()))?;
    let info = client.get_connection_info();
    let address = match info.addr() {
        redis::ConnectionAddr::Tcp(host, port) => Address::Tcp(host.clone(), *port),
        redis::ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => {
            if *insecure {
                return Err(bad(
                    "certificate verification of the Redis server cannot be turned off",
                ));
            }
            Address::Tls(host.clone(), *port, Arc::new(tls_config(s)?))
        }
        redis::ConnectionAddr::Unix(path) => Address::Unix(path.clone()),
        _ => return Err(bad("an address kind tlskit does not connect to")),
    };
    let r = info.redis_settings();
    Ok(Endpoint {
        address,
        username: r.username().map(str::to_string),
        password: r.password().map(str::to_string),
        db: r.db(),
    })
}

/// The TLS client of a `rediss://` connection (tlskit speaks RESP itself, `resp.rs`):
/// [`tlskit_verify::StoreServerVerifier`] on `--shared-state-ca` when given, else on the
/// system's roots, under `--shared-state-ca-profile` / `--shared-state-ca-allow`, so the
/// server's chain is checked like every other chain tlskit verifies.
fn tls_config(s: &SharedSettings) -> Result<rustls::ClientConfig, NetError> {
    let sources = match &s.ca {
        Some(p) => vec![Source::File(p.clone())],
        None => vec![Source::System],
    };
    let (handle, report) = StoreHandle::new(sources).map_err(|source| NetError::StoreOf {
        what: "shared-state CA",
        source,
    })?;
    if handle.current().is_empty() {
        let why = report
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no certificates".into());
        return Err(NetError::StoreUnusable(format!(
            "shared-state CA: nothing loadable ({why})"
        )));
    }
    let verifier = StoreServerVerifier::new(
        Arc::new(handle),
        VerifierConfig {
            profile: s.ca_profile,
            allow: s.ca_allow.clone(),
            ..VerifierConfig::default()
        },
    );
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous() // not a bypass: tlskit's own verifier on the given anchors
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
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

pub(crate) fn random<const N: usize>() -> Option<[u8; N]> {
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
    /// A new random key, made at `created` (Unix seconds).
    fn fresh(id: u32, created: u64) -> Option<Self> {
        Self::new(id, created, random()?)
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
pub(crate) struct Kek(LessSafeKey);

impl Kek {
    pub(crate) fn new(raw: &[u8; 32]) -> Option<Self> {
        Some(Self(LessSafeKey::new(
            UnboundKey::new(&AES_256_GCM, raw).ok()?,
        )))
    }
    fn seal(&self, set: &KeySet) -> Option<Vec<u8>> {
        self.seal_bytes(&set.plain(), SEAL_AAD)
    }
    /// Seal any bytes: `version || nonce || AES-256-GCM(plain, aad)`.
    pub(crate) fn seal_bytes(&self, plain: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
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
    pub(crate) fn open_bytes(&self, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
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
pub struct SharedTickets {
    keys: ArcSwap<KeySet>,
    kek: Kek,
    store: Arc<dyn TicketStore>,
    url: String,
    period: Duration,
    reread: Duration,
    node: String,
    up: AtomicBool,
    /// When the last sync ended in step with the fleet, Unix seconds (0: never).
    last_sync: AtomicU64,
    /// Whether the keys in use are the fleet's (false until the first good sync, and
    /// after this node rotated its own keys because the fleet's did not open).
    from_fleet: AtomicBool,
    /// The last state logged, so that each change is logged once.
    said: Mutex<String>,
    /// What was last said about an unreadable shared value.
    unreadable: Mutex<Unreadable>,
    /// Where "now" comes from: key creation times and whether a rotation is due.
    clock: Arc<dyn Clock>,
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
    pub fn start(s: &SharedSettings, period: Duration) -> Result<Arc<Self>, NetError> {
        Self::start_with_clock(s, period, tlskit_tls::clock::system())
    }

    /// [`SharedTickets::start`] with key creation times and rotations read from `clock`.
    pub fn start_with_clock(
        s: &SharedSettings,
        period: Duration,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, NetError> {
        let kek_raw = read_kek(&s.key_file)?;
        let url = redact(&s.url);
        let endpoint = endpoint(s)?;
        let rand_err = || NetError::Config("no randomness from the OS".into());
        let kek = Kek::new(&kek_raw).ok_or_else(rand_err)?;
        let first = TicketKey::fresh(
            u32::from_be_bytes(random().ok_or_else(rand_err)?),
            clock.unix_secs(),
        )
        .ok_or_else(rand_err)?;
        let node = format!(
            "{}-{:08x}",
            std::process::id(),
            u32::from_be_bytes(random().ok_or_else(rand_err)?)
        );
        let me = Arc::new(Self {
            keys: ArcSwap::from_pointee(KeySet(vec![first])),
            kek,
            store: Arc::new(RedisStore::new(endpoint, url.clone())),
            url: url.clone(),
            period,
            reread: s.reread,
            node,
            up: AtomicBool::new(false),
            last_sync: AtomicU64::new(0),
            from_fleet: AtomicBool::new(false),
            said: Mutex::new(String::new()),
            unreadable: Mutex::default(),
            clock,
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // The first sync has one deadline in all, whatever it does (read, seed under the
        // lease, publish): start-up waits at most START_SYNC for Redis. A call still in
        // flight then ends by its own deadline on the blocking pool, left behind.
        let state = rt
            .block_on(async { tokio::time::timeout(START_SYNC, me.tick()).await })
            .unwrap_or(Err(Trouble::Late));
        rt.shutdown_background();
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
    pub fn up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// When a sync last ended in step with the fleet, seconds since the Unix epoch; None
    /// before the first.
    pub fn last_sync(&self) -> Option<u64> {
        Some(self.last_sync.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    /// Whether the current key came from the fleet (read from, or written to, the shared
    /// state); false for a key this node made on its own: before the first sync, or
    /// while the fleet's keys do not open with its KEK. Kept while Redis is down.
    pub fn key_from_fleet(&self) -> bool {
        self.from_fleet.load(Ordering::Relaxed)
    }

    /// The current key's id (the same on every node in step; one more at each rotation)
    /// and its age in seconds.
    pub fn current_key(&self) -> (u32, u64) {
        let keys = self.keys.load();
        let (id, created) = keys.ids().first().copied().unwrap_or((0, 0));
        (id, self.clock.unix_secs().saturating_sub(created))
    }

    /// Re-read when another node announces new keys on the change channel
    /// (`tlskit:ticket-keys:changed`), and every `reread` in any case, until `stop`
    /// changes.
    pub async fn run(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
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
    async fn tick(&self) -> Result<(), Trouble> {
        match self.sync().await {
            Ok(()) => {
                self.unreadable
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .last = None;
                self.last_sync
                    .store(self.clock.unix_secs().max(1), Ordering::Relaxed);
                self.from_fleet.store(true, Ordering::Relaxed);
                self.report(
                    true,
                    "shared_state_up",
                    "ticket keys in step with the fleet",
                );
                Ok(())
            }
            Err(Trouble::Sealed) => {
                self.report(false, "shared_state_key_refused", SEALED);
                Err(Trouble::Sealed)
            }
            Err(Trouble::Unreadable(why)) => {
                // Logged (rate-limited) where it was found; the next good sync is logged.
                self.up.store(false, Ordering::Relaxed);
                *self.said.lock().unwrap_or_else(|p| p.into_inner()) =
                    format!("shared_ticket_keys_unreadable:{why}");
                Err(Trouble::Unreadable(why))
            }
            Err(Trouble::Down(why)) => {
                self.store.reset();
                self.report(false, "shared_state_down", &why);
                Err(Trouble::Down(why))
            }
            // Only start-up's deadline says this, never a sync.
            Err(Trouble::Late) => Err(Trouble::Late),
        }
    }

    async fn sync(&self) -> Result<(), Trouble> {
        let sealed = match self.store.get(KEYS).await {
            Ok(v) => v,
            Err(StoreError::Unreadable(why)) => return self.replace_unreadable(why).await,
            Err(StoreError::Down(why)) => return Err(Trouble::Down(why)),
        };
        let Some(sealed) = sealed else {
            // Empty (first node of a fleet, or Redis restarted without its data): seed it
            // with the keys this node has, under the lease.
            if self.lease().await? {
                let set = self.keys.load();
                let sealed = self
                    .kek
                    .seal(&set)
                    .ok_or(Trouble::local("cannot seal the keys"))?;
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
        let Some(set) = self.kek.open(&sealed) else {
            if looks_sealed(&sealed) {
                // Perhaps the fleet's keys under another KEK (this node misconfigured):
                // never overwritten. This node's own keys still rotate, locally.
                self.rotate_locally_if_due()?;
                return Err(Trouble::Sealed);
            }
            return self
                .replace_unreadable(format!(
                    "{KEYS} holds {} bytes that are not a sealed key set",
                    sealed.len()
                ))
                .await;
        };
        if set.ids() != self.keys.load().ids() {
            log::event(
                Level::Info,
                "shared_ticket_keys_adopted",
                &[("node", &self.node), ("current_key", &set.0[0].id)],
            );
            self.keys.store(Arc::new(set));
        }
        if self.due() && self.lease().await? {
            self.rotate().await?;
        }
        Ok(())
    }

    /// Whether the current key is older than the rotation period.
    fn due(&self) -> bool {
        let newest = self.keys.load().0[0].created;
        self.clock.unix_secs().saturating_sub(newest) >= self.period.as_secs()
    }

    /// The fleet's key holds something tlskit never wrote (garbage, a value over the cap,
    /// another type): say so (rate-limited), and the node that wins the lease replaces it
    /// with its own keys, rotated when due, so that rotation goes on.
    async fn replace_unreadable(&self, why: String) -> Result<(), Trouble> {
        self.say_unreadable(&why);
        if !self.lease().await? {
            return Err(Trouble::Unreadable(why));
        }
        if self.due() {
            self.rotate().await?;
        } else {
            let set = self.keys.load();
            let sealed = self
                .kek
                .seal(&set)
                .ok_or(Trouble::local("cannot seal the keys"))?;
            self.store.set(KEYS, &sealed).await?;
            self.announce().await;
        }
        log::event(
            Level::Info,
            "shared_ticket_keys_replaced",
            &[
                ("node", &self.node),
                ("current_key", &self.keys.load().0[0].id),
                ("reason", &"the shared value was not a tlskit key set"),
            ],
        );
        Ok(())
    }

    /// `shared_ticket_keys_unreadable`, once per change of what is found, and at most once
    /// per [`UNREADABLE_LOG_EVERY`] (the lines held back are counted in the next).
    fn say_unreadable(&self, why: &str) {
        let mut u = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
        if u.last.as_deref() == Some(why) {
            return;
        }
        u.last = Some(why.to_string());
        let now = self.clock.instant();
        if u.at
            .is_some_and(|t| now.saturating_duration_since(t) < UNREADABLE_LOG_EVERY)
        {
            u.suppressed = u.suppressed.saturating_add(1);
            return;
        }
        u.at = Some(now);
        let suppressed = std::mem::take(&mut u.suppressed);
        log::event(
            Level::Warn,
            "shared_ticket_keys_unreadable",
            &[
                ("url", &self.url),
                ("node", &self.node),
                ("reason", &why),
                ("suppressed", &suppressed),
            ],
        );
    }

    async fn lease(&self) -> Result<bool, Trouble> {
        Ok(self
            .store
            .set_if_absent(
                LEASE,
                self.node.as_bytes(),
                // At least a second: the shortest period serve allows, and Redis refuses
                // an expiry of 0.
                Duration::from_millis(LEASE_MS)
                    .min(self.period)
                    .max(Duration::from_secs(1)),
            )
            .await?)
    }

    /// The current key and, as the previous one, the key it replaces.
    fn rotated(&self) -> Result<KeySet, Trouble> {
        let old = self.keys.load();
        let id = old.0[0].id.wrapping_add(1);
        let new = TicketKey::fresh(id, self.clock.unix_secs())
            .ok_or(Trouble::local("no randomness from the OS"))?;
        let prev = &old.0[0];
        let keep =
            TicketKey::new(prev.id, prev.created, prev.raw).ok_or(Trouble::local("bad key"))?;
        Ok(KeySet(vec![new, keep]))
    }

    async fn rotate(&self) -> Result<(), Trouble> {
        let set = self.rotated()?;
        let id = set.0[0].id;
        let sealed = self
            .kek
            .seal(&set)
            .ok_or(Trouble::local("cannot seal the keys"))?;
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

    /// Rotate this node's keys without writing them (the fleet's value is not ours to
    /// replace).
    fn rotate_locally_if_due(&self) -> Result<(), Trouble> {
        if !self.due() {
            return Ok(());
        }
        let set = self.rotated()?;
        self.from_fleet.store(false, Ordering::Relaxed);
        log::event(
            Level::Info,
            "ticket_key_rotated",
            &[
                ("node", &self.node),
                ("current_key", &set.0[0].id),
                ("shared", &false),
            ],
        );
        self.keys.store(Arc::new(set));
        Ok(())
    }
}

/// How often `shared_ticket_keys_unreadable` may be logged at most.
const UNREADABLE_LOG_EVERY: Duration = Duration::from_secs(60);

/// What was last said about an unreadable shared value.
#[derive(Default)]
struct Unreadable {
    last: Option<String>,
    at: Option<std::time::Instant>,
    suppressed: u64,
}

/// Why a sync did not end in step with the fleet, as start-up and the log say it.
#[derive(Debug, thiserror::Error)]
enum Trouble {
    /// Redis unreachable, too slow, broke the connection, or a local failure.
    #[error("{0}")]
    Down(String),
    /// A sealed key set that this node's KEK does not open: kept, never overwritten.
    #[error("{SEALED}")]
    Sealed,
    /// A value tlskit never wrote, found by a node that did not win the lease.
    #[error("{0}")]
    Unreadable(String),
    /// The first sync at start-up did not end within [`START_SYNC`].
    #[error(
        "Redis did not finish the first sync within {} s",
        START_SYNC.as_secs_f64()
    )]
    Late,
}

/// What a node says when the fleet's sealed keys do not open with its key-encryption key.
const SEALED: &str = "the shared ticket keys do not open with this --shared-state-key \
                      (another key-encryption key than the fleet's): they are kept, never \
                      overwritten, and this node rotates its own keys";

impl Trouble {
    fn local(why: &str) -> Self {
        Self::Down(why.to_string())
    }
}

impl From<StoreError> for Trouble {
    fn from(e: StoreError) -> Self {
        Self::Down(e.to_string())
    }
}

/// Whether `value` has the shape of a key set sealed by tlskit (its version byte, and a
/// length between one sealed key and [`MAX_SEALED`]): such a value that does not open is
/// taken for the fleet's keys under another key-encryption key and never overwritten.
/// Anything else in the key (another version byte, shorter, longer) cannot be a key set
/// any tlskit node wrote, and is replaced.
fn looks_sealed(value: &[u8]) -> bool {
    const ONE_KEY: usize = 1 + NONCE_LEN + 1 + 44 + 16;
    value.first() == Some(&SEAL_VERSION) && (ONE_KEY..=MAX_SEALED).contains(&value.len())
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
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a [`TicketStore`] call failed. Sentences, any password masked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store cannot be reached, did not answer in time, or broke the connection.
    #[error("{0}")]
    Down(String),
    /// The store answered, but the value is not one tlskit could have written (over its
    /// key type's cap, or not a string).
    #[error("{0}")]
    Unreadable(String),
}

impl From<crate::resp::RespError> for StoreError {
    fn from(e: crate::resp::RespError) -> Self {
        let text = redact(&e.to_string());
        if e.is_bad_value() {
            Self::Unreadable(text)
        } else {
            Self::Down(text)
        }
    }
}

/// What the ticket-key sync needs of a shared store: a value read and written whole, a
/// set-if-absent with an expiry (the rotation lease), and a change channel. Redis
/// ([`RedisStore`]) is the one implementation; etcd (a transaction on a lease, watch) or
/// Consul (a session lock, blocking queries) would plug in here, and the sealing, the
/// rotation and the failure handling above it stay the same. Every call has its own
/// deadline and a bounded reply.
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

/// [`TicketStore`] on Redis, through tlskit's own RESP reader (`resp.rs`): one
/// connection for commands (opened lazily, reopened after an error), one more for the
/// subscription. Each command runs on the blocking pool with one deadline
/// ([`OP_TIMEOUT`]) for connect, log-in, command and reply; each reply is capped at
/// [`caps::TICKET_KEYS`] bytes.
pub struct RedisStore {
    redis: Arc<crate::resp::Redis>,
    url: String,
}

/// How often a subscription's reader looks up from its socket to see whether it is
/// still wanted.
const SUBSCRIPTION_POLL: Duration = Duration::from_millis(500);

impl RedisStore {
    /// `url`: the URL with its password masked, for errors.
    pub(crate) fn new(endpoint: crate::resp::Endpoint, url: String) -> Self {
        Self {
            redis: Arc::new(crate::resp::Redis::new(endpoint, OP_TIMEOUT)),
            url,
        }
    }

    /// One command on the blocking pool (no runtime worker waits on Redis).
    async fn call(&self, args: Vec<Vec<u8>>, key: &str) -> Result<crate::resp::Value, StoreError> {
        let redis = self.redis.clone();
        let key = key.to_string();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            redis.call(&args, caps::TICKET_KEYS, &key)
        })
        .await
        .map_err(|_| StoreError::Down("the Redis call was cancelled".into()))?
        .map_err(StoreError::from)
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

fn unexpected(key: &str) -> StoreError {
    StoreError::Unreadable(format!(
        "{key}: Redis answered with an unexpected reply type"
    ))
}

impl TicketStore for RedisStore {
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            use crate::resp::Value;
            match self.call(vec![b"GET".to_vec(), key.into()], key).await? {
                Value::Nil => Ok(None),
                Value::Bulk(v) => Ok(Some(v)),
                _ => Err(unexpected(key)),
            }
        })
    }
    fn set<'a>(&'a self, key: &'a str, value: &'a [u8]) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.call(vec![b"SET".to_vec(), key.into(), value.to_vec()], key)
                .await
                .map(drop)
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
            let args = vec![
                b"SET".to_vec(),
                key.into(),
                value.to_vec(),
                b"NX".to_vec(),
                b"PX".to_vec(),
                ms.to_string().into_bytes(),
            ];
            match self.call(args, key).await? {
                crate::resp::Value::Nil => Ok(false),
                crate::resp::Value::Status(_) => Ok(true),
                _ => Err(unexpected(key)),
            }
        })
    }
    fn publish<'a>(&'a self, channel: &'a str, message: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.call(
                vec![b"PUBLISH".to_vec(), channel.into(), message.into()],
                channel,
            )
            .await
            .map(drop)
        })
    }
    fn subscribe<'a>(
        &'a self,
        channel: &'a str,
        on_message: Box<dyn Fn(String) + Send + Sync + 'a>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // The subscription's socket is read by a thread of its own (waiting for a
            // message has no deadline; a runtime worker never waits on it); it ends
            // within SUBSCRIPTION_POLL once this future is dropped.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, StoreError>>(16);
            let redis = self.redis.clone();
            let ch = channel.to_string();
            std::thread::Builder::new()
                .name("tlskit-redis-subscription".into())
                .spawn(move || {
                    let mut con = match redis.subscribe(&ch) {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = tx.blocking_send(Err(e.into()));
                            return;
                        }
                    };
                    loop {
                        let stop = || tx.is_closed();
                        match con.next_message(caps::OTHER, &ch, SUBSCRIPTION_POLL, &stop) {
                            Ok(Some(m)) => {
                                if tx.blocking_send(Ok(m)).is_err() {
                                    return;
                                }
                            }
                            Ok(None) => return,
                            Err(e) => {
                                let _ = tx.blocking_send(Err(e.into()));
                                return;
                            }
                        }
                    }
                })
                .map_err(|e| StoreError::Down(format!("cannot start a thread: {e}")))?;
            while let Some(m) = rx.recv().await {
                on_message(String::from_utf8_lossy(&m?).into_owned());
            }
            Ok(())
        })
    }
    fn reset(&self) {
        self.redis.reset();
    }
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
    /// was published; expiries (the lease) follow its clock.
    struct MemoryStore {
        values: Mutex<std::collections::HashMap<String, Stored>>,
        published: Mutex<Vec<String>>,
        clock: Arc<dyn Clock>,
    }

    impl Default for MemoryStore {
        fn default() -> Self {
            Self::with_clock(tlskit_tls::clock::system())
        }
    }

    impl MemoryStore {
        fn with_clock(clock: Arc<dyn Clock>) -> Self {
            Self {
                values: Mutex::default(),
                published: Mutex::default(),
                clock,
            }
        }

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
                .filter(|(_, until)| until.is_none_or(|u| u > self.clock.instant()))
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
            let now = self.clock.instant();
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
            last_sync: AtomicU64::new(0),
            from_fleet: AtomicBool::new(false),
            said: Mutex::new(String::new()),
            unreadable: Mutex::default(),
            clock: tlskit_tls::clock::system(),
        }
    }

    /// What `ctl status` tells of a node: no sync and its own key at start; after a sync,
    /// the time of it, a key from the fleet, the same id on every node, its age by the
    /// clock; the fleet's value sealed under another KEK: the node's own keys again, the
    /// last good sync kept.
    #[tokio::test]
    async fn a_node_tells_its_last_sync_and_where_its_key_came_from() {
        let clock = Arc::new(tlskit_tls::ManualClock::at_unix(1_800_000_000));
        let store = Arc::new(MemoryStore::with_clock(clock.clone()));
        let period = Duration::from_secs(60);
        let at = |name: &str| {
            let mut n = node(&store, name, period);
            n.clock = clock.clone();
            let id = u32::from(name.as_bytes()[0]);
            let k = TicketKey::fresh(id, clock.unix_secs()).unwrap_or_else(|| unreachable!());
            n.keys.store(Arc::new(KeySet(vec![k])));
            n
        };
        let (a, b) = (at("a"), at("b"));
        assert_eq!((a.last_sync(), a.key_from_fleet()), (None, false));
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        clock.advance(Duration::from_secs(5));
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.last_sync(), Some(1_800_000_000));
        assert_eq!(b.last_sync(), Some(1_800_000_005));
        assert!(a.key_from_fleet() && b.key_from_fleet());
        assert_eq!(a.current_key(), (u32::from(b'a'), 5), "a's seed, 5 s old");
        assert_eq!(b.current_key(), a.current_key(), "b adopted it");
        // Another KEK's value (a misconfigured fleet): once due, b rotates on its own.
        let mut other = at("c");
        other.kek = Kek::new(&[9; 32]).unwrap_or_else(|| unreachable!("key"));
        let sealed = other
            .kek
            .seal(&other.keys.load())
            .unwrap_or_else(|| unreachable!("seal"));
        store
            .set(KEYS, &sealed)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        clock.advance(period);
        assert!(b.tick().await.is_err(), "the fleet's value does not open");
        assert!(!b.key_from_fleet(), "b's own key now");
        assert_eq!(b.current_key(), (u32::from(b'a') + 1, 0));
        assert_eq!(b.last_sync(), Some(1_800_000_005), "the last good sync");
    }

    /// Rotation follows the clock (issue 24: no waiting): with a 60 s period, nothing
    /// rotates at 59 s; at 60 s the node that wins the lease rotates (the lease lasts
    /// the period, so the other node adopts), tickets of the previous key still open on
    /// both, and after a second rotation a ticket of the first key opens nowhere.
    #[tokio::test]
    async fn rotation_is_due_after_one_period_by_the_clock() {
        let clock = Arc::new(tlskit_tls::ManualClock::at_unix(1_800_000_000));
        let store = Arc::new(MemoryStore::with_clock(clock.clone()));
        let period = Duration::from_secs(60);
        let at = |name: &str| {
            let mut n = node(&store, name, period);
            n.clock = clock.clone();
            let id = u32::from(name.as_bytes()[0]);
            let k = TicketKey::fresh(id, clock.unix_secs()).unwrap_or_else(|| unreachable!());
            n.keys.store(Arc::new(KeySet(vec![k])));
            n
        };
        let (a, b) = (at("a"), at("b"));
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        let seeded = a.keys.load().ids();
        assert_eq!(b.keys.load().ids(), seeded, "b adopted a's seed");
        let ticket = a.encrypt(b"s").unwrap_or_else(|| unreachable!("encrypt"));
        // The seed's lease (10 s) has lapsed by the time a rotation is due.
        clock.advance(Duration::from_secs(59));
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.keys.load().ids(), seeded, "not due at 59 s");
        assert_eq!(b.keys.load().ids(), seeded, "not due at 59 s");
        clock.advance(Duration::from_secs(1));
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        let rotated = a.keys.load().ids();
        assert_eq!(rotated.len(), 2, "current and previous: {rotated:?}");
        assert_eq!(rotated[1], seeded[0], "the seed is now the previous key");
        assert_eq!(rotated[0].1, clock.unix_secs(), "made now, by the clock");
        assert_eq!(b.keys.load().ids(), rotated, "b adopted, did not rotate");
        for n in [&a, &b] {
            assert_eq!(
                n.decrypt(&ticket).as_deref(),
                Some(&b"s"[..]),
                "previous key"
            );
        }
        clock.advance(period);
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(a.keys.load().ids(), rotated, "rotated again");
        assert_eq!(b.keys.load().ids(), a.keys.load().ids());
        for n in [&a, &b] {
            assert_eq!(n.decrypt(&ticket), None, "two rotations later");
        }
        let published = store
            .published
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        assert_eq!(published, ["a", "a", "a"], "seed and two rotations, by a");
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

    /// Issue 27: garbage in the fleet's key (not tlskit's envelope) is replaced by the
    /// node that wins the lease, rotated when due, so rotation goes on; a node without the
    /// lease keeps its keys and says so. A sealed set under another KEK is never
    /// overwritten, and the node that cannot open it still rotates its own keys.
    #[tokio::test]
    async fn garbage_is_replaced_and_rotation_goes_on_but_a_foreign_seal_is_kept() {
        let store = Arc::new(MemoryStore::default());
        let a = node(&store, "a", Duration::ZERO);
        let b = node(&store, "b", Duration::ZERO);
        store
            .set(KEYS, b"not a key set at all")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let before = a.keys.load().0[0].id;
        a.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(a.up());
        assert_ne!(a.keys.load().0[0].id, before, "a rotated while replacing");
        // b did not hold the lease; it adopts what a wrote at its next sync.
        let written = store
            .get(KEYS)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_default();
        assert_eq!(
            a.kek.open(&written).map(|s| s.ids()),
            Some(a.keys.load().ids())
        );
        store
            .set(KEYS, &[1u8; 20])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(b.tick().await.is_err(), "lease still held by a");
        assert!(!b.up());
        store.remove(LEASE);
        b.tick().await.unwrap_or_else(|e| panic!("{e}"));
        assert!(b.up(), "b replaced the short value once the lease was free");
        // Sealed under another KEK: kept byte for byte, local keys still rotate.
        let foreign = Kek::new(&[9; 32])
            .unwrap_or_else(|| unreachable!("key"))
            .seal(&set(&[40, 41]))
            .unwrap_or_else(|| unreachable!("seal"));
        assert!(looks_sealed(&foreign));
        store
            .set(KEYS, &foreign)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.remove(LEASE);
        let before = a.keys.load().0[0].id;
        assert!(a.tick().await.is_err());
        assert_eq!(
            store.get(KEYS).await.unwrap_or_else(|e| panic!("{e}")),
            Some(foreign),
            "a foreign seal is never overwritten"
        );
        assert_ne!(a.keys.load().0[0].id, before, "rotated locally");
    }

    fn set(ids: &[u32]) -> KeySet {
        KeySet(
            ids.iter()
                .map(|&i| {
                    TicketKey::fresh(i, tlskit_tls::SystemClock.unix_secs())
                        .unwrap_or_else(|| unreachable!("OS randomness"))
                })
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
                last_sync: AtomicU64::new(0),
                from_fleet: AtomicBool::new(true),
                said: Mutex::new(String::new()),
                unreadable: Mutex::default(),
                clock: tlskit_tls::clock::system(),
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
            TicketKey::fresh(6, 0).unwrap_or_else(|| unreachable!()),
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
        let e = endpoint(&settings("redis://u:s3cret@127.0.0.1:1/2"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("rediss://") && !e.contains("s3cret"), "{e}");
        let Err(e) = endpoint(&settings("rediss://u:s3cret@127.0.0.1:1/2")) else {
            panic!("a CA file without a certificate was taken");
        };
        // The store's error is kept typed, under the text the CLI has always printed.
        assert!(
            matches!(
                &e,
                NetError::StoreOf {
                    what: "shared-state CA",
                    source: tlskit_store::StoreError::NothingLoadable { .. },
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.starts_with(
                "trust store: shared-state CA: nothing loadable: no trust anchor found ("
            ) && e.contains("no certificate found"),
            "{e}"
        );
        let mut none = settings("rediss://u:s3cret@127.0.0.1:1/2");
        none.ca = None;
        assert!(endpoint(&none).is_ok());
        let shown = format!("{none:?}");
        assert!(
            shown.contains("u:***@") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn new_settings_hold_the_defaults() {
        let s = SharedSettings::new("redis://127.0.0.1:6379", "/etc/tlskit/fleet.kek");
        assert_eq!(
            s,
            SharedSettings {
                url: "redis://127.0.0.1:6379".into(),
                key_file: PathBuf::from("/etc/tlskit/fleet.kek"),
                required: false,
                reread: REREAD,
                ca: None,
                ca_profile: tlskit_verify::Profile::default(),
                ca_allow: Vec::new(),
            }
        );
    }

    /// What a failed sync says at start-up and in the log: the same sentences as when
    /// they were strings.
    #[test]
    fn sync_troubles_say_what_happened() {
        assert_eq!(
            Trouble::Sealed.to_string(),
            "the shared ticket keys do not open with this --shared-state-key (another \
             key-encryption key than the fleet's): they are kept, never overwritten, and this \
             node rotates its own keys"
        );
        assert_eq!(
            Trouble::Late.to_string(),
            "Redis did not finish the first sync within 2 s"
        );
        assert_eq!(
            Trouble::Down("connection refused".into()).to_string(),
            "connection refused"
        );
        assert_eq!(
            Trouble::Unreadable("tlskit:ticket-keys holds 3 bytes".into()).to_string(),
            "tlskit:ticket-keys holds 3 bytes"
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
