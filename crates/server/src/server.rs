//! `tlskit serve`: a TLS terminator on tokio + rustls (aws-lc-rs).
//!
//! [`Server::bind`] does everything that can fail because of the configuration (reading
//! certificates and keys, checking they match, loading the client-CA store, binding every
//! address) before anything is accepted; [`Server::run`] then serves until SIGTERM/SIGINT.
//! SIGHUP reloads certificates and the client-CA store without touching open connections.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::{HandshakeKind, ServerConfig};
use tlskit_store::{Source, StoreHandle};
use tlskit_tls::{Clock, Compression, TlsVersion};
use tlskit_verify::{
    GenerationSessionCache, GenerationTickets, RootHints, StoreClientVerifier, VerifierConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::certs::{CertIndex, SniResolver};
use crate::metrics::{CloseReason, FailReason, Metrics, Outcome};
use tlskit_tls::log::{self, Level};
use tlskit_tls::NetError;

/// What the server does with the plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Answer every HTTP/1.1 request with 200 and a small body.
    Http,
    /// Send every byte back.
    Echo,
    /// Forward to this TCP address (HOST:PORT).
    Backend(String),
}

/// Which CA names the server hints in its CertificateRequest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaHints {
    /// The store's names, within tlskit_verify's caps (never above 65,535 bytes).
    Store,
    /// No names.
    Off,
}

/// Everything `serve` needs: [`ServeConfig::new`] then its fields, or
/// [`crate::ServeSettings::into_config`] from flags and a TOML file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Addresses to listen on.
    pub listen: Vec<SocketAddr>,
    /// PEM: leaf, then its chain.
    pub cert: PathBuf,
    /// PEM private key of the leaf.
    pub key: PathBuf,
    /// Directory of NAME.crt|NAME.pem + NAME.key pairs chosen by SNI.
    pub sni_dir: Option<PathBuf>,
    /// Responder or backend.
    pub mode: Mode,
    /// Client-certificate trust store sources; empty: no client authentication.
    pub client_ca: Vec<Source>,
    /// Client certificates optional (verified when sent) instead of required.
    pub client_auth_optional: bool,
    /// Rule set client certificates are checked against (default `browser`).
    pub client_ca_profile: tlskit_verify::Profile,
    /// Rules not checked on client certificates.
    pub client_ca_allow: Vec<tlskit_verify::Rule>,
    /// CA hints in CertificateRequest.
    pub ca_hints: CaHints,
    /// Certificate compression algorithms, in preference order; empty: none.
    pub compress: Vec<Compression>,
    /// ALPN protocols offered, in preference order. Default: what the application behind
    /// the server speaks (see [`offered_alpn`]); when given, only those the application
    /// speaks are offered.
    pub alpn: Vec<String>,
    /// ALPN protocols the backend speaks (`h2`, `http/1.1`, ...), in preference order.
    /// `None`: a raw TCP backend that speaks none, unless `alpn` says otherwise.
    pub backend_alpn: Option<Vec<String>>,
    /// TLS versions (1.2, 1.3).
    pub versions: Vec<TlsVersion>,
    /// Prometheus endpoint address.
    pub metrics: Option<SocketAddr>,
    /// Time a client has, from TCP accept, to complete the handshake (total); also bounds
    /// the backend connect.
    pub handshake_timeout: Duration,
    /// Time an established connection may stay silent: nothing read or written, either
    /// side (HTTP responder between requests, echo, backend relay both ways).
    pub idle_timeout: Duration,
    /// Total time for one HTTP request head (and a body of up to 64 KiB) from its first
    /// byte (the first request: from the end of the handshake), however it trickles in.
    pub header_timeout: Duration,
    /// Most bytes a connection may buffer before its ClientHello is complete (records,
    /// headers included); a larger ClientHello is refused.
    pub max_client_hello: usize,
    /// Most bytes of partial ClientHellos across all connections, in slots of
    /// `max_client_hello` bytes; when all are taken, a new connection evicts the oldest
    /// partial ClientHello (counted).
    pub handshake_budget: usize,
    /// Most connections open at once; more are accepted and closed at once.
    pub max_connections: usize,
    /// How long SIGTERM waits for open connections before closing them.
    pub shutdown_grace: Duration,
    /// Session ticket key lifetime (keys rotate; tickets from the previous key still work).
    pub ticket_rotation: Duration,
    /// Send a PROXY protocol v2 header to the backend.
    pub proxy_protocol: bool,
    /// Reload when the certificate, key, SNI directory or client-CA files change.
    pub watch: bool,
    /// Get and renew the certificate from an ACME CA (`cert`/`key` may then be empty
    /// paths: the ACME certificate is the default).
    pub acme: Option<crate::optional::AcmeSettings>,
    /// Plain HTTP listener: ACME HTTP-01 answers, everything else redirected to https.
    pub http_listen: Option<SocketAddr>,
    /// Start and reloads warn about served certificates expiring within this many days.
    pub expiry_warning_days: u32,
    /// Session-ticket keys shared with a fleet through Redis (`--shared-state`).
    pub shared_state: Option<crate::optional::SharedSettings>,
}

impl ServeConfig {
    /// Defaults for everything but the listen addresses and the certificate pair.
    pub fn new(listen: Vec<SocketAddr>, cert: PathBuf, key: PathBuf) -> Self {
        Self {
            listen,
            cert,
            key,
            sni_dir: None,
            mode: Mode::Http,
            client_ca: Vec::new(),
            client_auth_optional: false,
            client_ca_profile: tlskit_verify::Profile::Browser,
            client_ca_allow: Vec::new(),
            ca_hints: CaHints::Store,
            compress: vec![Compression::Brotli, Compression::Zlib],
            alpn: Vec::new(),
            backend_alpn: None,
            versions: vec![TlsVersion::Tls13, TlsVersion::Tls12],
            metrics: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(10),
            max_client_hello: crate::hello::DEFAULT_MAX_CLIENT_HELLO,
            handshake_budget: crate::hello::DEFAULT_HANDSHAKE_BUDGET,
            max_connections: 10_000,
            shutdown_grace: Duration::from_secs(10),
            ticket_rotation: Duration::from_secs(6 * 3600),
            proxy_protocol: false,
            watch: true,
            acme: None,
            http_listen: None,
            expiry_warning_days: 14,
            shared_state: None,
        }
    }
}

/// Shared state of a running server.
struct Shared {
    cfg: ServeConfig,
    provider: Arc<CryptoProvider>,
    resolver: Arc<SniResolver>,
    store: Option<Arc<StoreHandle>>,
    tls: Arc<ServerConfig>,
    metrics: Arc<Metrics>,
    limit: Arc<Semaphore>,
    /// Slots for partial ClientHellos across connections.
    budget: Arc<crate::hello::Budget>,
    /// Per-source limit on failed-handshake log lines.
    log_limit: tlskit_tls::ratelimit::LogLimiter,
    /// Per-source limit on connection-limit log lines.
    limit_log_limit: tlskit_tls::ratelimit::LogLimiter,
    stopping: AtomicBool,
    /// Number of the latest reload started (see [`reload`]).
    reload_seq: std::sync::atomic::AtomicU64,
    /// Set to true on SIGTERM/SIGINT; idle keep-alive connections close at once.
    stop: watch::Sender<bool>,
    /// ACME certificate management (`--acme`).
    acme: Option<crate::optional::ServerAcme>,
    /// Ticket keys shared through Redis (`--shared-state`).
    shared_tickets: Option<Arc<crate::optional::SharedTickets>>,
    /// Where "now" comes from (ticket keys, expiry warnings, ACME renewals).
    clock: Arc<dyn Clock>,
}

/// The `--cert`/`--key` pair, absent with `--acme` and no `--cert`.
fn default_pair(cfg: &ServeConfig) -> Option<(&std::path::Path, &std::path::Path)> {
    if cfg.acme.is_some() && cfg.cert.as_os_str().is_empty() {
        None
    } else {
        Some((&cfg.cert, &cfg.key))
    }
}

/// A configured, bound server that has not started accepting yet.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<std::net::TcpListener>,
    metrics_listener: Option<std::net::TcpListener>,
    addrs: Vec<SocketAddr>,
    rt: tokio::runtime::Runtime,
    signals: Signals,
    watch: Watch,
}

/// The file watcher (dropping it stops watching) and the changes it reports. Set up in
/// [`Server::bind`], so changes made right after "ready" is announced are seen.
struct Watch {
    watcher: Option<notify::RecommendedWatcher>,
    changes: tokio::sync::mpsc::UnboundedReceiver<()>,
}

/// Signal handlers, installed in [`Server::bind`] so that a SIGHUP or SIGTERM arriving
/// right after "ready" is announced is handled, not fatal.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

fn build_tls(
    cfg: &ServeConfig,
    provider: &Arc<CryptoProvider>,
    resolver: Arc<SniResolver>,
    store: Option<&Arc<StoreHandle>>,
    shared: Option<&Arc<crate::optional::SharedTickets>>,
    clock: &Arc<dyn Clock>,
) -> Result<ServerConfig, NetError> {
    let versions: Vec<_> = cfg.versions.iter().map(|v| v.rustls()).collect();
    if versions.is_empty() {
        return Err(NetError::Config("no TLS version enabled".into()));
    }
    let builder =
        ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(&versions)?;
    let builder = match store {
        Some(handle) => {
            let hints = match cfg.ca_hints {
                CaHints::Store => RootHints::default(),
                CaHints::Off => RootHints::Off,
            };
            let vc = VerifierConfig {
                profile: cfg.client_ca_profile,
                allow: cfg.client_ca_allow.clone(),
                ..VerifierConfig::default()
            };
            let v = StoreClientVerifier::new(handle.clone(), vc, hints);
            let v = if cfg.client_auth_optional {
                v.optional()
            } else {
                v
            };
            builder.with_client_cert_verifier(Arc::new(v))
        }
        None => builder.with_no_client_auth(),
    };
    let mut tls = builder.with_cert_resolver(resolver);
    // Keys rotate every `ticket_rotation` (1 s to 6 h, checked in bind); a ticket older than two
    // periods never resumes (crate::tickets).
    let ticketer = match shared {
        // The fleet's keys (crate::shared), with the same two-period age limit.
        Some(s) => Arc::new(crate::tickets::ExpiringTickets::new(
            s.clone(),
            cfg.ticket_rotation.as_secs().saturating_mul(2),
            Arc::new(tlskit_tls::clock::ClockTime(clock.clone())),
        )) as Arc<dyn rustls::server::ProducesTickets>,
        None => crate::tickets::ticketer(cfg.ticket_rotation, clock.clone())?,
    };
    let sessions: Arc<dyn StoresServerSessions> = ServerSessionMemoryCache::new(4096);
    match store {
        // Resumption bound to the client-CA store's anchor set: a reload that changes the
        // anchors makes every earlier ticket and session id useless; a reload that finds
        // the same anchors keeps them.
        Some(handle) => {
            tls.ticketer = Arc::new(GenerationTickets::new(ticketer, handle.clone()));
            tls.session_storage = Arc::new(GenerationSessionCache::new(sessions, handle.clone()));
        }
        None => {
            tls.ticketer = ticketer;
            tls.session_storage = sessions;
        }
    }
    // Compressed certificate messages come from tlskit's own cache, filled ahead of time
    // (crate::compress); rustls's 4-entry cache would only hold copies.
    tls.cert_compressors = cfg
        .compress
        .iter()
        .map(|&c| {
            tlskit_tls::compress::compressor(c) as &'static dyn rustls::compress::CertCompressor
        })
        .collect();
    tls.cert_compression_cache = Arc::new(rustls::compress::CompressionCache::Disabled);
    tls.alpn_protocols = offered_alpn(cfg)
        .offered
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
    tls.ignore_client_order = true;
    Ok(tls)
}

/// What the server offers in ALPN, and what it leaves out of `--alpn`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AlpnOffer {
    /// Offered, in preference order (the server picks by its own order).
    pub offered: Vec<String>,
    /// Listed in `alpn` but not spoken by the application behind the server: not offered,
    /// so a client that wants one of them gets no_application_protocol instead of a
    /// backend that cannot understand it.
    pub dropped: Vec<String>,
}

/// The ALPN protocols to offer: those the application behind the server speaks.
///
/// The HTTP responder speaks `http/1.1`; a backend speaks its `backend_alpn`, and nothing
/// without it (a raw TCP backend); the echo responder speaks nothing. `alpn` never adds to
/// that: when set, it restricts and orders the offer, and protocols the application does
/// not speak are dropped. So `--alpn h2,http/1.1` in front of a backend without
/// `--backend-alpn` offers nothing (no ALPN agreed, HTTP clients fall back to HTTP/1.1)
/// rather than h2 to a backend that may not read it.
pub fn offered_alpn(cfg: &ServeConfig) -> AlpnOffer {
    let speaks = declared_alpn(cfg);
    if cfg.alpn.is_empty() {
        return AlpnOffer {
            offered: speaks,
            dropped: Vec::new(),
        };
    }
    let (offered, dropped) = cfg.alpn.iter().cloned().partition(|p| speaks.contains(p));
    AlpnOffer { offered, dropped }
}

/// What the application behind the server declares it speaks, in preference order.
fn declared_alpn(cfg: &ServeConfig) -> Vec<String> {
    match &cfg.mode {
        Mode::Http => vec!["http/1.1".to_string()],
        Mode::Echo => Vec::new(),
        Mode::Backend(_) => cfg.backend_alpn.clone().unwrap_or_default(),
    }
}

/// Why `--alpn` entries were dropped, for `event=alpn_not_offered`.
fn alpn_drop_reason(cfg: &ServeConfig) -> &'static str {
    match &cfg.mode {
        Mode::Backend(_) if cfg.backend_alpn.is_none() => {
            "the backend declares no ALPN protocol (a raw TCP backend): \
             add --backend-alpn with what it speaks to offer them"
        }
        Mode::Echo => "the echo responder speaks no application protocol",
        _ => "the application behind the server does not speak them",
    }
}

/// ALPN settings that cannot work: refused at start rather than met by clients.
fn check_alpn(cfg: &ServeConfig) -> Result<(), NetError> {
    let all = cfg.alpn.iter().chain(cfg.backend_alpn.iter().flatten());
    for p in all {
        if p.is_empty() || p.len() > 255 || !p.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(NetError::Config(format!(
                "ALPN protocol '{}': must be 1 to 255 printable ASCII characters",
                tlskit_x509::text::escape(p)
            )));
        }
    }
    if cfg.backend_alpn.is_some() && !matches!(cfg.mode, Mode::Backend(_)) {
        return Err(NetError::Config(
            "--backend-alpn needs --backend (the HTTP responder speaks http/1.1)".into(),
        ));
    }
    // Refused only when the application declared protocols and --alpn keeps none of them:
    // a contradiction in the configuration. An application that declares nothing (a
    // backend without --backend-alpn, echo) starts with no ALPN and a warning (in bind).
    let offer = offered_alpn(cfg);
    let speaks = declared_alpn(cfg);
    if offer.offered.is_empty() && !offer.dropped.is_empty() && !speaks.is_empty() {
        return Err(NetError::Config(format!(
            "--alpn {}: the application behind the server speaks only {}; \
             nothing would be offered",
            offer.dropped.join(","),
            speaks.join(",")
        )));
    }
    Ok(())
}

impl Server {
    /// Load and check everything, bind every address. Nothing is accepted yet, but the
    /// kernel queues connections from now on, so "ready" may be announced after this.
    pub fn bind(cfg: ServeConfig) -> Result<Self, NetError> {
        Self::bind_with_clock(cfg, tlskit_tls::clock::system())
    }

    /// [`Server::bind`] with the time read from `clock` instead of the system's clocks:
    /// session-ticket key rotation and the ticket age limit, certificate expiry warnings,
    /// the fleet's key rotation and ACME's renewal schedule. Timeouts and other waits stay
    /// on tokio's timers.
    pub fn bind_with_clock(cfg: ServeConfig, clock: Arc<dyn Clock>) -> Result<Self, NetError> {
        if cfg.listen.is_empty() {
            return Err(NetError::Config("no --listen address".into()));
        }
        if let Mode::Backend(addr) = &cfg.mode {
            use std::net::ToSocketAddrs;
            let resolved = addr
                .to_socket_addrs()
                .map_err(|e| NetError::Config(format!("--backend {addr}: {e}")))?;
            if resolved.count() == 0 {
                return Err(NetError::Config(format!(
                    "--backend {addr}: resolves to no address"
                )));
            }
        }
        check_alpn(&cfg)?;
        let offer = offered_alpn(&cfg);
        if !offer.dropped.is_empty() {
            log::event(
                Level::Warn,
                "alpn_not_offered",
                &[
                    ("protocols", &offer.dropped.join(",")),
                    ("offered", &offer.offered.join(",")),
                    ("reason", &alpn_drop_reason(&cfg)),
                ],
            );
        }
        // Every number in range before any arithmetic on it (issue 27); the CLI checked
        // them already, naming the flag or the file; library callers get the key.
        {
            use crate::config::ranges as r;
            let count = |range: &crate::config::Range, v: usize| {
                range
                    .count(u64::try_from(v).unwrap_or(u64::MAX), range.key)
                    .map(drop)
            };
            r::HANDSHAKE_TIMEOUT.duration(cfg.handshake_timeout)?;
            r::HEADER_TIMEOUT.duration(cfg.header_timeout)?;
            r::IDLE_TIMEOUT.duration(cfg.idle_timeout)?;
            r::SHUTDOWN_GRACE.duration(cfg.shutdown_grace)?;
            r::TICKET_ROTATION.duration(cfg.ticket_rotation)?;
            count(&r::MAX_CLIENT_HELLO, cfg.max_client_hello)?;
            count(&r::HANDSHAKE_BUDGET, cfg.handshake_budget)?;
            count(&r::MAX_CONNECTIONS, cfg.max_connections)?;
            r::EXPIRY_WARNING_DAYS.count(
                u64::from(cfg.expiry_warning_days),
                r::EXPIRY_WARNING_DAYS.key,
            )?;
            crate::services::check_ranges(cfg.acme.as_ref(), cfg.shared_state.as_ref())?;
        }
        if cfg.handshake_budget < cfg.max_client_hello {
            return Err(NetError::Config(format!(
                "handshake_budget ({} bytes) must be at least max_client_hello ({} bytes)",
                cfg.handshake_budget, cfg.max_client_hello
            )));
        }
        let rotation = cfg.ticket_rotation.as_secs();
        if !(1..=crate::tickets::MAX_ROTATION_SECS).contains(&rotation) {
            return Err(NetError::Config(format!(
                "ticket_rotation must be 1 to {} seconds (each key is rustls's ticketer, which \
                 replaces its own key every 6 hours), not {rotation}",
                crate::tickets::MAX_ROTATION_SECS
            )));
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let (index, issues) =
            CertIndex::load_optional(default_pair(&cfg), cfg.sni_dir.as_deref(), &provider)?;
        for i in &issues {
            log::event(
                Level::Warn,
                "sni_pair_skipped",
                &[("path", &i.path.display()), ("reason", &i.reason)],
            );
        }
        let names = index.names();
        let pairs = index.pairs();
        let metrics = Arc::new(Metrics::default());
        crate::metrics::certificates_loaded(&metrics, &index, cfg.expiry_warning_days, &*clock);
        // Compress the chains now, before anything is accepted: "ready" means the first
        // client gets a compressed certificate message ready, as the hundredth does.
        tlskit_tls::compress::warm_now(&index.chains(), &cfg.compress);
        let acme = crate::services::acme_for_config(
            cfg.acme.as_ref(),
            cfg.http_listen,
            cfg.shared_state.as_ref(),
            &cfg.compress,
            &provider,
            &metrics,
            &clock,
        )?;
        let resolver = Arc::new(match &acme {
            Some(a) => SniResolver::with_acme(index, crate::services::managed(a)),
            None => SniResolver::new(index),
        });
        let store = if cfg.client_ca.is_empty() {
            None
        } else {
            let (handle, report) =
                StoreHandle::new(cfg.client_ca.clone()).map_err(NetError::Store)?;
            for e in &report.errors {
                log::event(
                    Level::Warn,
                    "client_ca_skipped",
                    &[("path", &e.path.display()), ("reason", &e.reason)],
                );
            }
            if handle.current().is_empty() {
                return Err(NetError::StoreUnusable(
                    "--client-ca: no CA certificate could be loaded".into(),
                ));
            }
            let handle = Arc::new(handle);
            metrics.set_store(handle.clone());
            Some(handle)
        };
        let shared_tickets = crate::services::shared_tickets(
            cfg.shared_state.as_ref(),
            cfg.ticket_rotation,
            &clock,
        )?;
        if let Some(s) = &shared_tickets {
            metrics.set_shared_state(s.clone());
        }
        let tls = Arc::new(build_tls(
            &cfg,
            &provider,
            resolver.clone(),
            store.as_ref(),
            shared_tickets.as_ref(),
            &clock,
        )?);
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for a in &cfg.listen {
            let l = tlskit_tls::sock::listener(*a, 4096)?;
            addrs.push(l.local_addr()?);
            listeners.push(l);
        }
        let metrics_listener = match cfg.metrics {
            Some(a) => Some(tlskit_tls::sock::listener(a, 64)?),
            None => None,
        };
        log::event(
            Level::Info,
            "configured",
            &[
                ("pairs", &pairs),
                ("names", &names),
                ("client_auth", &store.is_some()),
            ],
        );
        let limit = Arc::new(Semaphore::new(cfg.max_connections));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let signals = {
            use tokio::signal::unix::{signal, SignalKind};
            let _guard = rt.enter();
            Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
                hup: signal(SignalKind::hangup())?,
            }
        };
        let (change_tx, changes) = tokio::sync::mpsc::unbounded_channel::<()>();
        let watcher = if cfg.watch {
            match watch_files(&cfg, change_tx) {
                Ok(w) => Some(w),
                Err(e) => {
                    log::event(Level::Warn, "watch_unavailable", &[("reason", &e)]);
                    None
                }
            }
        } else {
            None
        };
        let budget = crate::hello::Budget::new(cfg.handshake_budget, cfg.max_client_hello);
        let _ = metrics.budget.set(budget.clone());
        Ok(Self {
            rt,
            signals,
            watch: Watch { watcher, changes },
            shared: Arc::new(Shared {
                cfg,
                provider,
                resolver,
                store,
                tls,
                metrics,
                limit,
                budget,
                log_limit: tlskit_tls::ratelimit::LogLimiter::default(),
                limit_log_limit: tlskit_tls::ratelimit::LogLimiter::default(),
                stopping: AtomicBool::new(false),
                reload_seq: std::sync::atomic::AtomicU64::new(0),
                stop: watch::channel(false).0,
                acme,
                shared_tickets,
                clock,
            }),
            listeners,
            metrics_listener,
            addrs,
        })
    }

    /// The bound addresses (port 0 resolved), in `--listen` order.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The bound metrics address.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Serve until SIGTERM or SIGINT, then drain for up to the shutdown grace period.
    pub fn run(self) -> Result<(), NetError> {
        let Server {
            shared,
            listeners,
            metrics_listener,
            addrs,
            rt,
            signals,
            watch,
        } = self;
        let result = rt.block_on(run_async(
            shared,
            listeners,
            metrics_listener,
            addrs,
            signals,
            watch,
        ));
        rt.shutdown_timeout(Duration::from_millis(200));
        result
    }
}

async fn run_async(
    shared: Arc<Shared>,
    listeners: Vec<std::net::TcpListener>,
    metrics_listener: Option<std::net::TcpListener>,
    addrs: Vec<SocketAddr>,
    signals: Signals,
    watched: Watch,
) -> Result<(), NetError> {
    let mut change_rx = watched.changes;
    let _watcher = watched.watcher;
    let Signals {
        mut term,
        mut int,
        mut hup,
    } = signals;
    let stop_rx = shared.stop.subscribe();
    for l in listeners {
        let l = TcpListener::from_std(l)?;
        tokio::spawn(accept_loop(l, shared.clone(), stop_rx.clone()));
    }
    if let Some(l) = metrics_listener {
        let l = TcpListener::from_std(l)?;
        tokio::spawn(metrics_loop(l, shared.metrics.clone(), stop_rx.clone()));
    }
    if let Some(a) = &shared.acme {
        // Redirects name the port actually bound (`--listen` may say :0).
        crate::services::start_acme(a, stop_rx.clone(), addrs.first().map_or(443, |a| a.port()))?;
    }
    tokio::spawn(sweep_log_limit(shared.clone(), stop_rx.clone()));
    tokio::spawn(trim_budget(shared.clone(), stop_rx.clone()));
    if let Some(t) = &shared.shared_tickets {
        crate::services::spawn_shared(t, stop_rx.clone());
    }
    log::event(Level::Info, "started", &[("listen", &DisplayAddrs(&addrs))]);
    // The signal loop never waits on a reload: reloads run on the blocking pool, at most
    // one at a time (requests meanwhile are coalesced into one more), each with a
    // deadline. SIGTERM/SIGINT are handled whatever a reload is doing.
    let mut reloads = Reloads::new(RELOAD_DEADLINE);
    crate::systemd::ready();
    // When the file changes have been quiet long enough to reload.
    let mut settle: Option<tokio::time::Instant> = None;
    // Whether a reload was running after the last event (for systemd's RELOADING/READY).
    let mut reloading = false;
    loop {
        let overdue_at = reloads.deadline();
        let ev = tokio::select! {
            _ = term.recv() => LoopEvent::Stop,
            _ = int.recv() => LoopEvent::Stop,
            _ = hup.recv() => LoopEvent::Reload("sighup"),
            Some(()) = change_rx.recv() => LoopEvent::Changed,
            // Let a burst of changes (a key and a chain replaced one after the other)
            // settle, then reload once.
            _ = sleep_until_opt(settle) => LoopEvent::Reload("file_change"),
            _ = reloads.finished() => LoopEvent::ReloadDone,
            _ = sleep_until_opt(overdue_at) => LoopEvent::ReloadOverdue,
        };
        match ev {
            LoopEvent::Stop => break,
            LoopEvent::Changed => {
                settle = Some(tokio::time::Instant::now() + WATCH_DEBOUNCE);
            }
            LoopEvent::Reload(cause) => {
                if cause == "file_change" {
                    settle = None;
                }
                start_reload(&mut reloads, &shared, cause);
            }
            LoopEvent::ReloadDone => {
                if let Some(cause) = reloads.done() {
                    start_reload(&mut reloads, &shared, cause);
                }
            }
            LoopEvent::ReloadOverdue => reload_overdue(&mut reloads, &shared),
        }
        // systemd hears RELOADING=1 when a reload starts and READY=1 once none runs.
        match (reloading, reloads.running.is_some()) {
            (false, true) => crate::systemd::reloading(),
            (true, false) => crate::systemd::ready(),
            _ => {}
        }
        reloading = reloads.running.is_some();
    }
    crate::systemd::stopping();
    if reloads.running.is_some() {
        // Not waited for: the process exits after the drain below, the reload with it.
        log::event(Level::Warn, "reload_abandoned", &[("reason", &"stopping")]);
    }
    shared.stopping.store(true, Ordering::Release);
    shared.stop.send_replace(true);
    let active = shared.metrics.active();
    log::event(Level::Info, "stopping", &[("active", &active)]);
    let deadline = Instant::now() + shared.cfg.shutdown_grace;
    while shared.metrics.active() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = shared.metrics.active();
    log::event(Level::Info, "stopped", &[("closed_unfinished", &left)]);
    Ok(())
}

struct DisplayAddrs<'a>(&'a [SocketAddr]);

impl std::fmt::Display for DisplayAddrs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

/// Quiet time after the last file change before reloading.
const WATCH_DEBOUNCE: Duration = Duration::from_millis(250);

/// How long one reload may take before it is given up (logged as failed, what is serving
/// kept; the next request starts a fresh one). Files are opened non-blocking and only
/// regular files are read, so only a file system that stops answering (a dead NFS
/// server) can make a reload this slow.
pub const RELOAD_DEADLINE: Duration = Duration::from_secs(30);

/// Most `client_ca_skipped` lines one reload logs (the rest are only counted in the
/// store's report).
const MAX_SKIPPED_LOGGED: usize = 20;

/// Most reloads alive at once, counting ones given up after [`RELOAD_DEADLINE`] whose
/// thread is still blocked; further requests are refused (logged) until one ends.
const MAX_RELOAD_THREADS: usize = 4;

/// What woke the signal loop.
enum LoopEvent {
    Stop,
    Changed,
    Reload(&'static str),
    ReloadDone,
    ReloadOverdue,
}

/// Sleep until `at`, or for ever when `None` (a `select!` branch that never fires).
async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Decrements the count of live reload threads when dropped.
struct AliveGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A reload's work, run on the reload thread.
type ReloadJob = Box<dyn FnOnce() + Send>;

/// The thread reloads run on: one long-lived thread, not the blocking pool. glibc gives
/// each thread an allocator arena and keeps freed memory in it; reloads spread over
/// the blocking pool's threads left a freed SNI index in each of their arenas (RSS 65 ->
/// 169 MB over 55 reloads of 20,000 pairs). On one thread every reload reuses the memory
/// the previous one freed (crates/server/README.md, "Memory over reloads").
fn reload_thread() -> Option<std::sync::mpsc::Sender<ReloadJob>> {
    let (tx, rx) = std::sync::mpsc::channel::<ReloadJob>();
    // Inside the runtime, as a blocking-pool thread is (for code that asks for it).
    let rt = tokio::runtime::Handle::try_current().ok();
    std::thread::Builder::new()
        .name("tlskit-reload".into())
        .spawn(move || {
            let _rt = rt.as_ref().map(|h| h.enter());
            // Ends when the server drops the sender (a reload given up on, or shutdown).
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .ok()?;
    Some(tx)
}

/// Reloads in flight, seen from the signal loop: at most one running, requests meanwhile
/// merged into one pending, a deadline per reload, a bound on threads left blocked.
struct Reloads {
    /// The reload running now (its end signalled by the channel: a value, or the sender
    /// dropped by a panic) and when it is overdue.
    running: Option<(tokio::sync::oneshot::Receiver<()>, tokio::time::Instant)>,
    /// The reload thread, while it is not held by a reload given up on.
    thread: Option<std::sync::mpsc::Sender<ReloadJob>>,
    /// A request that came while one was running: started when it ends.
    pending: Option<&'static str>,
    /// Reload threads alive (the running one and any given up but still blocked).
    alive: Arc<std::sync::atomic::AtomicUsize>,
    deadline: Duration,
}

/// What [`Reloads::request`] did.
#[derive(Debug, PartialEq, Eq)]
enum Requested {
    Started,
    /// Merged into the request that runs when the current reload ends.
    Queued,
    /// This many reload threads are alive (blocked): none started.
    Refused(usize),
}

impl Reloads {
    fn new(deadline: Duration) -> Self {
        Reloads {
            running: None,
            thread: None,
            pending: None,
            alive: Arc::default(),
            deadline,
        }
    }

    /// Start a reload (`work` on the reload thread) unless one is running or too many
    /// threads are blocked.
    fn request(
        &mut self,
        cause: &'static str,
        work: impl FnOnce(&'static str) + Send + 'static,
    ) -> Requested {
        if self.running.is_some() {
            self.pending = Some(cause);
            return Requested::Queued;
        }
        let alive = self.alive.load(Ordering::Acquire);
        if alive >= MAX_RELOAD_THREADS {
            return Requested::Refused(alive);
        }
        self.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(self.alive.clone());
        let (done, finished) = tokio::sync::oneshot::channel();
        let mut job: ReloadJob = Box::new(move || {
            // Counted down however the reload ends (a panic included).
            let _alive = guard;
            work(cause);
            let _ = done.send(());
        });
        // The reload thread, or a new one when there is none (first use, the last one
        // held by a reload given up on, or ended by a panic).
        for _ in 0..2 {
            let Some(tx) = self.thread.take().or_else(reload_thread) else {
                break;
            };
            match tx.send(job) {
                Ok(()) => {
                    self.thread = Some(tx);
                    self.running = Some((finished, tokio::time::Instant::now() + self.deadline));
                    return Requested::Started;
                }
                Err(std::sync::mpsc::SendError(back)) => job = back,
            }
        }
        // No thread could be started: the job is dropped (its guard counts it down).
        drop(job);
        Requested::Refused(self.alive.load(Ordering::Acquire))
    }

    /// Resolves when the running reload ends (never when none runs).
    async fn finished(&mut self) {
        match &mut self.running {
            Some((finished, _)) => {
                let _ = finished.await;
            }
            None => std::future::pending().await,
        }
    }

    fn deadline(&self) -> Option<tokio::time::Instant> {
        self.running.as_ref().map(|r| r.1)
    }

    /// The running reload ended: the pending request to start now, if any.
    fn done(&mut self) -> Option<&'static str> {
        self.running = None;
        self.pending.take()
    }

    /// The running reload passed its deadline: detached, not stopped (a thread blocked in
    /// the kernel cannot be). Returns the pending request to start now, if any.
    fn overdue(&mut self) -> Option<&'static str> {
        self.running = None;
        // That thread is held by the reload given up on; the next one gets a new thread
        // (the old one ends when its reload does: its sender is dropped here).
        self.thread = None;
        self.pending.take()
    }
}

/// Start a reload for `cause` (or queue it), logging a refusal.
fn start_reload(reloads: &mut Reloads, s: &Arc<Shared>, cause: &'static str) {
    let s2 = s.clone();
    let r = reloads.request(cause, move |cause| {
        let seq = s2.reload_seq.fetch_add(1, Ordering::AcqRel) + 1;
        reload(&s2, cause, seq)
    });
    if let Requested::Refused(alive) = r {
        s.metrics.reload(false);
        log::event(
            Level::Error,
            "reload_failed",
            &[
                ("what", &"all"),
                ("cause", &cause),
                (
                    "reason",
                    &format!("{alive} earlier reloads are still blocked; not starting another"),
                ),
            ],
        );
    }
}

/// The running reload passed [`RELOAD_DEADLINE`]: log it, make sure its late result is
/// discarded, and start what was pending.
fn reload_overdue(reloads: &mut Reloads, s: &Arc<Shared>) {
    let pending = reloads.overdue();
    // A late result must not be installed: a reload installs only while `reload_seq` is
    // still its own number.
    s.reload_seq.fetch_add(1, Ordering::AcqRel);
    s.metrics.reload(false);
    log::event(
        Level::Error,
        "reload_failed",
        &[
            ("what", &"all"),
            (
                "reason",
                &format!(
                    "did not finish within {} s; given up, serving what was loaded before",
                    reloads.deadline.as_secs()
                ),
            ),
        ],
    );
    if let Some(cause) = pending {
        start_reload(reloads, s, cause);
    }
}

/// Watch the directories holding the configured files (so atomic replacement by rename
/// is seen) and report changes to the files themselves, the SNI directory and client-CA
/// directories.
fn watch_files(
    cfg: &ServeConfig,
    tx: tokio::sync::mpsc::UnboundedSender<()>,
) -> Result<notify::RecommendedWatcher, notify::Error> {
    use notify::{RecursiveMode, Watcher};
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut files: Vec<PathBuf> = match default_pair(cfg) {
        Some((c, k)) => {
            let mut v = vec![abs(c)];
            // A pkcs11: URI is no file to watch (SIGHUP re-opens the token).
            if !k.to_str().is_some_and(tlskit_pkcs11::is_uri) {
                v.push(abs(k));
            }
            v
        }
        None => Vec::new(),
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = &cfg.sni_dir {
        dirs.push(abs(d));
    }
    for s in &cfg.client_ca {
        match s {
            Source::Dir(p) => dirs.push(abs(p)),
            Source::File(p) | Source::Snapshot(p) => files.push(abs(p)),
            Source::System => {}
        }
    }
    let mut watch_dirs: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(|p| p.to_path_buf()))
        .collect();
    watch_dirs.extend(dirs.iter().cloned());
    watch_dirs.sort();
    watch_dirs.dedup();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let Ok(ev) = ev else { return };
        if ev.kind.is_access() {
            return;
        }
        let relevant = ev
            .paths
            .iter()
            .any(|p| files.iter().any(|f| f == p) || dirs.iter().any(|d| p.starts_with(d)));
        if relevant {
            let _ = tx.send(());
        }
    })?;
    for d in &watch_dirs {
        watcher.watch(d, RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}

/// Reload certificates (and the client-CA store). A failure keeps what was serving.
/// `seq`: this reload's number; its certificates are installed only if no later reload
/// started meanwhile (one given up after [`RELOAD_DEADLINE`] must not win late).
fn reload(s: &Shared, cause: &str, seq: u64) {
    let t = Instant::now();
    let certs =
        CertIndex::load_optional(default_pair(&s.cfg), s.cfg.sni_dir.as_deref(), &s.provider);
    let mut ok = true;
    match certs {
        Ok((index, issues)) => {
            for i in &issues {
                log::event(
                    Level::Warn,
                    "sni_pair_skipped",
                    &[("path", &i.path.display()), ("reason", &i.reason)],
                );
            }
            log::event(
                Level::Info,
                "certificates_loaded",
                &[("pairs", &index.pairs()), ("names", &index.names())],
            );
            if s.reload_seq.load(Ordering::Acquire) == seq {
                crate::metrics::certificates_loaded(
                    &s.metrics,
                    &index,
                    s.cfg.expiry_warning_days,
                    &*s.clock,
                );
                // Compressed before the new chains are served (this runs off the
                // handshake path, under the reload deadline). The ACME certificate is
                // served too: listed, so its compressed messages are kept.
                let mut chains = index.chains();
                chains.extend(
                    s.acme
                        .as_ref()
                        .and_then(|a| crate::services::managed(a).current()),
                );
                tlskit_tls::compress::warm_now(&chains, &s.cfg.compress);
                s.resolver.replace(index);
            }
        }
        Err(e) => {
            ok = false;
            log::event(
                Level::Error,
                "reload_failed",
                &[("what", &"certificates"), ("reason", &e)],
            );
        }
    }
    let mut anchors_changed = false;
    let mut anchors_damaged = 0usize;
    if let Some(store) = &s.store {
        match store.reload() {
            // A reload that finds exactly the same anchors keeps the anchor-set generation
            // that resumption is bound to: saved sessions stay valid.
            Ok(out) => {
                // What was skipped, as at start (a damaged file among good ones).
                for e in out.report.errors.iter().take(MAX_SKIPPED_LOGGED) {
                    log::event(
                        Level::Warn,
                        "client_ca_skipped",
                        &[("path", &e.path.display()), ("reason", &e.reason)],
                    );
                }
                anchors_changed = out.anchors_changed;
                anchors_damaged = out
                    .report
                    .error_counts
                    .get(tlskit_x509::LintCode::CorruptAnchor.as_str())
                    .copied()
                    .unwrap_or(0);
            }
            Err(e) => {
                ok = false;
                log::event(
                    Level::Error,
                    "reload_failed",
                    &[("what", &"client_ca"), ("reason", &e)],
                );
            }
        }
    }
    s.metrics.reload(ok);
    let generation = s.store.as_ref().map(|h| h.generation()).unwrap_or(0);
    let ms = format!("{:.1}", t.elapsed().as_secs_f64() * 1e3);
    let mut fields: Vec<(&str, &dyn std::fmt::Display)> = vec![
        ("ok", &ok),
        ("cause", &cause),
        ("store_generation", &generation),
        ("anchors_changed", &anchors_changed),
    ];
    // Damaged snapshot anchors (each named in a client_ca_skipped line above): the
    // reload succeeded, but not with every anchor.
    if anchors_damaged > 0 {
        fields.push(("anchors_damaged", &anchors_damaged));
    }
    fields.push(("ms", &ms));
    log::event(Level::Info, "reloaded", &fields);
}

async fn accept_loop(l: TcpListener, s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            r = l.accept() => r,
            _ = stop.changed() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tlskit_tls::ratelimit::event(
                    tlskit_tls::ratelimit::Noisy::Socket,
                    Level::Error,
                    "accept_failed",
                    &[("reason", &e)],
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = s.limit.clone().try_acquire_owned() else {
            s.metrics.rejected();
            // Rate-limited per source like failed handshakes (a flood at the limit
            // would otherwise log one line per connection).
            // And globally: many sources at the limit are as many buckets.
            use tlskit_tls::ratelimit::{Noisy, Verdict, GLOBAL};
            let now = Instant::now();
            match s.limit_log_limit.check(peer.ip(), now) {
                Verdict::Log { suppressed }
                    if !GLOBAL.allow(Noisy::ConnectionLimit, now, suppressed) => {}
                Verdict::Log { suppressed: 0 } => {
                    log::event(Level::Warn, "connection_limit", &[("peer", &peer)]);
                }
                Verdict::Log { suppressed } => log::event(
                    Level::Warn,
                    "connection_limit",
                    &[("peer", &peer), ("suppressed", &suppressed)],
                ),
                Verdict::Drop => GLOBAL.count_suppressed(Noisy::ConnectionLimit),
            }
            drop(tcp);
            continue;
        };
        let s = s.clone();
        tokio::spawn(async move {
            s.metrics.conn_open();
            handle(tcp, peer, &s).await;
            s.metrics.conn_close();
            drop(permit);
        });
    }
}

/// The TLS stream every connection state works on.
type Tls = crate::conn::Guarded<crate::hello::Prefixed<TcpStream>>;

/// Every [`tlskit_tls::ratelimit::REFILL`], report the failed-handshake lines left out.
async fn sweep_log_limit(s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tlskit_tls::ratelimit::REFILL) => {}
            _ = stop.changed() => return,
        }
        let _ = s.limit_log_limit.sweep(Instant::now());
        // At most MAX_SOURCE_SUMMARIES lines per source, the rest folded into one.
        let (each, rest) = tlskit_tls::ratelimit::fold_summaries(s.log_limit.sweep(Instant::now()));
        for (ip, count) in each {
            let peer: &dyn std::fmt::Display = match &ip {
                Some(ip) => ip,
                None => &"other",
            };
            log::event(
                Level::Warn,
                "handshake_failures_suppressed",
                &[("peer", peer), ("count", &count)],
            );
        }
        if let Some((sources, count)) = rest {
            log::event(
                Level::Warn,
                "handshake_failures_suppressed",
                &[("peer", &"other"), ("sources", &sources), ("count", &count)],
            );
        }
        // One line per event for what the global limit left out.
        for (ev, count) in tlskit_tls::ratelimit::GLOBAL.take_unreported() {
            log::event(
                Level::Warn,
                "log_lines_suppressed",
                &[("for", &ev.label()), ("count", &count)],
            );
        }
    }
}

/// Every second, let the handshake budget give its slots back when none is in use.
async fn trim_budget(s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => s.budget.trim(),
            _ = stop.changed() => return,
        }
    }
}

/// Count a failed handshake and log it within the per-source rate limit.
fn handshake_failed(
    s: &Shared,
    peer: SocketAddr,
    reason: FailReason,
    detail: &dyn std::fmt::Display,
) {
    handshake_failed_rule(s, peer, reason, detail, None);
}

/// [`handshake_failed`] with the rule code of a refused client certificate, logged as
/// `rule=...` after the reason.
fn handshake_failed_rule(
    s: &Shared,
    peer: SocketAddr,
    reason: FailReason,
    detail: &dyn std::fmt::Display,
    rule: Option<&'static str>,
) {
    s.metrics.handshake(
        if reason == FailReason::Timeout {
            Outcome::Timeout
        } else {
            Outcome::Failed
        },
        0.0,
    );
    s.metrics.failure(reason);
    if !log::enabled(Level::Warn) {
        return;
    }
    use tlskit_tls::ratelimit::{Noisy, Verdict, GLOBAL};
    let now = Instant::now();
    match s.log_limit.check(peer.ip(), now) {
        Verdict::Drop => GLOBAL.count_suppressed(Noisy::HandshakeFailed),
        // Within its source's limit, but not within every source's together.
        Verdict::Log { suppressed } if !GLOBAL.allow(Noisy::HandshakeFailed, now, suppressed) => {}
        Verdict::Log { suppressed } => {
            let event = if reason == FailReason::Timeout {
                "handshake_timeout"
            } else {
                "handshake_failed"
            };
            let class = reason.label();
            let mut fields: Vec<(&str, &dyn std::fmt::Display)> =
                vec![("peer", &peer), ("class", &class), ("reason", detail)];
            if let Some(rule) = &rule {
                fields.push(("rule", rule));
            }
            if suppressed > 0 {
                fields.push(("suppressed", &suppressed));
            }
            log::event(Level::Warn, event, &fields);
        }
    }
}

async fn handle(mut tcp: TcpStream, peer: SocketAddr, s: &Shared) {
    if let Err(e) = tlskit_tls::sock::tune(socket2::SockRef::from(&tcp)) {
        tlskit_tls::ratelimit::event(
            tlskit_tls::ratelimit::Noisy::Socket,
            Level::Warn,
            "socket_options",
            &[("peer", &peer), ("reason", &e)],
        );
    }
    let local = tcp.local_addr().unwrap_or(peer);
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start + s.cfg.handshake_timeout);
    // The ClientHello first, read by us within bounds (crate::hello); rustls gets it whole.
    let hello = tokio::time::timeout_at(
        deadline,
        Box::pin(crate::hello::read_client_hello(
            &mut tcp,
            s.cfg.max_client_hello,
            &s.budget,
        )),
    )
    .await;
    let prefix = match hello {
        Ok(Ok(x)) => x,
        Ok(Err(refused)) => {
            let reason = match refused {
                crate::hello::Refused::TooLarge => FailReason::ClientHelloTooLarge,
                crate::hello::Refused::Budget | crate::hello::Refused::Evicted => {
                    FailReason::HandshakeBudget
                }
                crate::hello::Refused::Eof => FailReason::Eof,
            };
            handshake_failed(s, peer, reason, &refused.label());
            return;
        }
        Err(_) => {
            handshake_failed(s, peer, FailReason::Timeout, &"no ClientHello in time");
            return;
        }
    };
    let rest = if s.store.is_some() {
        crate::hello::REST_OF_HANDSHAKE_CLIENT_AUTH
    } else {
        crate::hello::REST_OF_HANDSHAKE
    };
    let offered_compression = if s.cfg.compress.is_empty() {
        Vec::new()
    } else {
        crate::hello::offered_cert_compression(&prefix)
    };
    let io = crate::hello::Prefixed::new(prefix, tcp, rest);
    // With ACME TLS-ALPN-01, validation handshakes (ALPN acme-tls/1 only) are answered
    // with the validation certificate and closed here.
    let alpn_cfg = s.acme.as_ref();
    // Each phase boxed: the task of a connection holds only the state of the phase it is
    // in, not the largest state of any phase.
    let accepted = tokio::time::timeout_at(
        deadline,
        Box::pin(crate::services::accept(io, &s.tls, alpn_cfg)),
    )
    .await;
    let mut tls = match accepted {
        Ok(Ok(crate::services::Accepted::Tls(t))) => *t,
        Ok(Ok(crate::services::Accepted::Validation)) => return,
        Ok(Err(e)) if crate::hello::is_too_large(&e) => {
            handshake_failed(s, peer, FailReason::HandshakeTooLarge, &e);
            return;
        }
        Ok(Err(e)) => {
            // A refused client certificate: tlskit's sentence and rule code, never the
            // Rust debug output rustls's Display gives its certificate errors.
            let refusal =
                tlskit_tls::tls_text::io_rustls(&e).and_then(tlskit_verify::CertificateRefusal::of);
            match refusal {
                Some(r) => handshake_failed_rule(
                    s,
                    peer,
                    FailReason::of(&e),
                    &format_args!("invalid peer certificate: {r}"),
                    Some(r.rule),
                ),
                // rustls's Display names its errors with Rust identifiers: in words.
                None => handshake_failed(
                    s,
                    peer,
                    FailReason::of(&e),
                    &tlskit_tls::tls_text::io_tls_text(&e),
                ),
            }
            return;
        }
        Err(_) => {
            handshake_failed(
                s,
                peer,
                FailReason::Timeout,
                &"handshake not finished in time",
            );
            return;
        }
    };
    tls.get_mut().0.unlimit();
    let secs = start.elapsed().as_secs_f64();
    let (_, conn) = tls.get_ref();
    let resumed = conn.handshake_kind() == Some(HandshakeKind::Resumed);
    s.metrics.handshake(
        if resumed {
            Outcome::Resumed
        } else {
            Outcome::Full
        },
        secs,
    );
    // Which compression the certificate went out with: rustls takes the server's first
    // configured algorithm the client offered (TLS 1.3 full handshakes only).
    let compression = (!resumed
        && conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3))
    .then(|| {
        s.cfg
            .compress
            .iter()
            .copied()
            .find(|c| offered_compression.contains(&c.code()))
    })
    .flatten();
    if !resumed {
        s.metrics.cert_compression(compression);
    }
    if log::enabled(Level::Debug) {
        let version = tlskit_tls::version_name(conn.protocol_version());
        let sni = conn.server_name().unwrap_or("").to_string();
        log::event(
            Level::Debug,
            "handshake",
            &[
                ("peer", &peer),
                ("sni", &sni),
                ("version", &version),
                ("resumed", &resumed),
                (
                    "cert_compression",
                    &compression.map_or("none", Compression::name),
                ),
                ("ms", &format!("{:.2}", secs * 1e3)),
            ],
        );
    }
    let facts = (s.cfg.proxy_protocol && matches!(s.cfg.mode, Mode::Backend(_)))
        .then(|| crate::proxy::TlsFacts::of(conn));
    let activity = crate::conn::Activity::new();
    let tls = crate::conn::Guarded::new(tls, activity.clone());
    let result = match &s.cfg.mode {
        Mode::Http => Box::pin(respond_http(tls, s)).await,
        Mode::Echo => Box::pin(echo(tls, s)).await,
        Mode::Backend(addr) => {
            let ends = (peer, local, facts);
            Box::pin(forward(tls, activity, addr, ends, s)).await
        }
    };
    if let Err(e) = result {
        if crate::conn::is_renegotiation(&e) {
            s.metrics.closed(CloseReason::Renegotiation);
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::Renegotiation,
                Level::Warn,
                "renegotiation_refused",
                &[("peer", &peer)],
            );
        } else {
            log::event(
                Level::Debug,
                "connection_error",
                &[("peer", &peer), ("reason", &e)],
            );
        }
    }
}

const BODY: &[u8] = b"hello from tlskit\n";

/// Request bodies up to this size are read and dropped (keep-alive goes on); a larger
/// body, or a chunked one, gets its answer and the connection closes.
const MAX_SKIPPED_BODY: u64 = 64 * 1024;

/// After answering a request whose body is not read, the server keeps reading (and
/// dropping) for this long, at most [`MAX_SKIPPED_BODY`] bytes, before closing, so that
/// the client's unread bytes do not turn the close into a reset that loses the answer.
const LINGER: Duration = Duration::from_secs(1);

/// Write with the idle deadline (a client that reads nothing cannot hold a writer).
async fn send(tls: &mut Tls, bytes: &[u8], s: &Shared) -> std::io::Result<()> {
    match tokio::time::timeout(s.cfg.idle_timeout, async {
        tls.write_all(bytes).await?;
        tls.flush().await
    })
    .await
    {
        Ok(r) => r,
        Err(_) => {
            s.metrics.closed(CloseReason::IdleTimeout);
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "client did not read within idle_timeout",
            ))
        }
    }
}

/// Send close_notify (bounded by the idle deadline), then read and drop what the client
/// still sends for up to [`LINGER`].
async fn close(mut tls: Tls, s: &Shared, linger: bool) -> std::io::Result<()> {
    let _ = tokio::time::timeout(s.cfg.idle_timeout, tls.shutdown()).await;
    if linger {
        let mut left = MAX_SKIPPED_BODY as usize;
        let mut sink = vec![0u8; 4096];
        let until = tokio::time::Instant::now() + LINGER;
        while left > 0 {
            match tokio::time::timeout_at(until, tls.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
    }
    Ok(())
}

async fn respond_http(mut tls: Tls, s: &Shared) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    // The first request's head is due `header_timeout` after the handshake.
    let mut due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
    // No per-connection read array: bytes land in `buf`'s spare capacity, which an idle
    // keep-alive connection gives back (see the end of the loop).
    loop {
        // Read one request head: within `header_timeout` of its first byte in total.
        let end = loop {
            if let Some(p) = crate::http::head_end(&buf) {
                break p;
            }
            if buf.len() > 16 * 1024 {
                s.metrics.closed(CloseReason::BadRequest);
                send(&mut tls, b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await?;
                return close(tls, s, true).await;
            }
            buf.reserve(2048);
            let n = match due {
                Some(due) => match tokio::time::timeout_at(due, tls.read_buf(&mut buf)).await {
                    Ok(r) => r?,
                    Err(_) => {
                        s.metrics.closed(CloseReason::HeaderTimeout);
                        let _ = send(&mut tls, b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await;
                        return close(tls, s, false).await;
                    }
                },
                None => {
                    // Between requests: idle, and a shutdown closes the connection now.
                    let mut stop = s.stop.subscribe();
                    if *stop.borrow_and_update() {
                        return close(tls, s, false).await;
                    }
                    let read = tokio::time::timeout(s.cfg.idle_timeout, tls.read_buf(&mut buf));
                    let r = tokio::select! {
                        r = read => r,
                        _ = stop.changed() => return close(tls, s, false).await,
                    };
                    match r {
                        Ok(r) => {
                            due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
                            r?
                        }
                        Err(_) => {
                            s.metrics.closed(CloseReason::IdleTimeout);
                            return close(tls, s, false).await;
                        }
                    }
                }
            };
            if n == 0 {
                return Ok(());
            }
        };
        let head = match crate::http::parse(&buf[..end]) {
            Ok(h) => h,
            Err(bad) => {
                s.metrics.closed(CloseReason::BadRequest);
                let reason = bad.reason();
                let resp = format!(
                    "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{reason}\n",
                    reason.len() + 1
                );
                send(&mut tls, resp.as_bytes(), s).await?;
                return close(tls, s, true).await;
            }
        };
        buf.drain(..end);
        // The body: skipped when small, else answered and closed.
        let mut close_after = s.stopping.load(Ordering::Acquire) || head.close;
        let mut linger = false;
        match head.body {
            crate::http::Body::None => {}
            crate::http::Body::Length(n) if n <= MAX_SKIPPED_BODY => {
                let mut left = n as usize;
                loop {
                    let take = left.min(buf.len());
                    buf.drain(..take);
                    left -= take;
                    if left == 0 {
                        break;
                    }
                    buf.reserve(left.min(16 * 1024));
                    let due = due.unwrap_or_else(tokio::time::Instant::now);
                    match tokio::time::timeout_at(due, tls.read_buf(&mut buf)).await {
                        Ok(Ok(0)) => return Ok(()),
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Err(e),
                        Err(_) => {
                            s.metrics.closed(CloseReason::HeaderTimeout);
                            let _ = send(&mut tls, b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await;
                            return close(tls, s, false).await;
                        }
                    }
                }
            }
            crate::http::Body::Length(_) | crate::http::Body::Chunked => {
                // Not read: whatever follows is body, never another request.
                close_after = true;
                linger = true;
                buf.clear();
            }
        }
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
            BODY.len(),
            if close_after {
                "Connection: close\r\n"
            } else {
                ""
            }
        )
        .into_bytes();
        resp.extend_from_slice(BODY);
        send(&mut tls, &resp, s).await?;
        if close_after {
            return close(tls, s, linger).await;
        }
        if buf.is_empty() {
            // Between requests an idle connection holds no read buffer.
            buf = Vec::new();
            due = None;
        } else {
            // Pipelined: the next request's bytes are here already.
            due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
        }
    }
}

async fn echo(mut tls: Tls, s: &Shared) -> std::io::Result<()> {
    let mut buf = vec![0u8; 4096];
    loop {
        let n = match tokio::time::timeout(s.cfg.idle_timeout, tls.read(&mut buf)).await {
            Ok(n) => n?,
            Err(_) => {
                s.metrics.closed(CloseReason::IdleTimeout);
                break;
            }
        };
        if n == 0 {
            break;
        }
        send(&mut tls, &buf[..n], s).await?;
    }
    close(tls, s, false).await
}

async fn forward(
    mut tls: Tls,
    activity: Arc<crate::conn::Activity>,
    addr: &str,
    (peer, local, facts): (SocketAddr, SocketAddr, Option<crate::proxy::TlsFacts>),
    s: &Shared,
) -> std::io::Result<()> {
    let connect = tokio::time::timeout(s.cfg.handshake_timeout, TcpStream::connect(addr));
    let backend = match connect.await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            s.metrics.backend_error();
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::BackendUnreachable,
                Level::Error,
                "backend_unreachable",
                &[("backend", &addr), ("reason", &e)],
            );
            return close(tls, s, false).await;
        }
        Err(_) => {
            s.metrics.backend_error();
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::BackendUnreachable,
                Level::Error,
                "backend_unreachable",
                &[("backend", &addr), ("reason", &"connect timed out")],
            );
            return close(tls, s, false).await;
        }
    };
    backend.set_nodelay(true)?;
    let mut backend = crate::conn::Tracked::new(backend, activity.clone());
    if s.cfg.proxy_protocol {
        let header = crate::proxy::v2_header(peer, local, facts.as_ref());
        match tokio::time::timeout(s.cfg.idle_timeout, backend.write_all(&header)).await {
            Ok(r) => r?,
            Err(_) => return close(tls, s, false).await,
        }
    }
    // Both ways at once; the connection ends when nothing has moved either way for
    // `idle_timeout` (a silent backend, or a silent client, cannot hold it).
    {
        let copy = tokio::io::copy_bidirectional(&mut tls, &mut backend);
        tokio::pin!(copy);
        loop {
            let due = tokio::time::Instant::from_std(activity.deadline(s.cfg.idle_timeout));
            tokio::select! {
                r = &mut copy => return r.map(|_| ()),
                _ = tokio::time::sleep_until(due) => {
                    if activity.deadline(s.cfg.idle_timeout) <= Instant::now() {
                        break;
                    }
                }
            }
        }
    }
    s.metrics.closed(CloseReason::IdleTimeout);
    log::event(
        Level::Debug,
        "idle_timeout",
        &[("peer", &peer), ("backend", &addr)],
    );
    drop(backend);
    close(tls, s, false).await
}

async fn metrics_loop(l: TcpListener, m: Arc<Metrics>, mut stop: watch::Receiver<bool>) {
    loop {
        let (mut c, _) = tokio::select! {
            r = l.accept() => match r { Ok(x) => x, Err(_) => continue },
            _ = stop.changed() => return,
        };
        let m = m.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let _ = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf)).await;
            let body = m.render();
            let resp = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = c.write_all(resp.as_bytes()).await;
            let _ = c.shutdown().await;
        });
    }
}

#[cfg(test)]
mod reload_tests {
    use super::*;

    /// One reload at a time, requests meanwhile merged into one, a deadline after which a
    /// blocked reload is left behind, and a bound on how many are left behind.
    #[test]
    fn reloads_coalesce_time_out_and_are_bounded() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(async {
            let mut r = Reloads::new(Duration::from_millis(50));
            // Each reload blocks until released (a stuck file system).
            let (release, gate) = std::sync::mpsc::channel::<()>();
            let gate = Arc::new(std::sync::Mutex::new(gate));
            let stuck = |gate: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>| {
                move |_: &'static str| {
                    let _ = gate.lock().map(|g| g.recv());
                }
            };
            assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Started);
            assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Queued);
            assert_eq!(
                r.request("file_change", stuck(gate.clone())),
                Requested::Queued
            );
            // Not finished before its deadline; the deadline fires.
            let at = r.deadline().unwrap_or_else(|| panic!("no deadline"));
            tokio::select! {
                _ = r.finished() => panic!("a blocked reload finished"),
                _ = tokio::time::sleep_until(at) => {}
            }
            assert_eq!(r.overdue(), Some("file_change"));
            assert!(r.deadline().is_none());
            // Left-behind reloads count against the bound.
            for _ in 1..MAX_RELOAD_THREADS {
                assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Started);
                assert_eq!(r.overdue(), None);
            }
            assert_eq!(
                r.request("sighup", stuck(gate.clone())),
                Requested::Refused(MAX_RELOAD_THREADS)
            );
            // Once they end, reloads start again and finish.
            for _ in 0..MAX_RELOAD_THREADS {
                let _ = release.send(());
            }
            let t = Instant::now();
            while r.alive.load(Ordering::Acquire) > 0 {
                assert!(t.elapsed() < Duration::from_secs(10));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(r.request("sighup", |_| {}), Requested::Started);
            tokio::time::timeout(Duration::from_secs(10), r.finished())
                .await
                .unwrap_or_else(|_| panic!("a quick reload did not finish"));
            assert_eq!(r.done(), None);
        });
    }
}
