//! `tlskit serve`: a TLS terminator on tokio + rustls (aws-lc-rs).
//!
//! [`Server::bind`] does everything that can fail because of the configuration (reading
//! certificates and keys, checking they match, loading the client-CA store, binding every
//! address) before anything is accepted; [`Server::run`] then serves until SIGTERM/SIGINT.
//! SIGHUP reloads certificates and the client-CA store without touching open connections.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::ServerConfig;
use tlskit_store::StoreHandle;
use tlskit_tls::Clock;
use tlskit_verify::{
    GenerationSessionCache, GenerationTickets, RootHints, StoreClientVerifier, VerifierConfig,
};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::certs::{CertIndex, SniResolver};
use crate::config::{alpn_drop_reason, check_alpn, offered_alpn, CaHints, Mode, ServeConfig};
use crate::connection::handle;
use crate::metrics::Metrics;
use crate::reload::{
    reload_overdue, start_reload, watch_files, Reloads, RELOAD_DEADLINE, WATCH_DEBOUNCE,
};
use crate::state::{default_pair, Shared};
use tlskit_tls::log::{self, Level};
use tlskit_tls::NetError;

/// A configured, bound server that has not started accepting yet.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<std::net::TcpListener>,
    metrics_listener: Option<std::net::TcpListener>,
    addrs: Vec<SocketAddr>,
    rt: tokio::runtime::Runtime,
    signals: Signals,
    watch: Watch,
    control: Option<crate::control::Bound>,
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
) -> Result<(ServerConfig, Option<Arc<crate::tickets::Rotator>>), NetError> {
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
    let mut rotator = None;
    let ticketer = match shared {
        // The fleet's keys (crate::shared), with the same two-period age limit.
        Some(s) => Arc::new(crate::tickets::ExpiringTickets::new(
            s.clone(),
            cfg.ticket_rotation.as_secs().saturating_mul(2),
            Arc::new(tlskit_tls::clock::ClockTime(clock.clone())),
        )) as Arc<dyn rustls::server::ProducesTickets>,
        None => {
            let (t, r) = crate::tickets::ticketer_with_rotator(cfg.ticket_rotation, clock.clone())?;
            rotator = Some(r);
            t
        }
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
    Ok((tls, rotator))
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
        let (tls, ticket_rotator) = build_tls(
            &cfg,
            &provider,
            resolver.clone(),
            store.as_ref(),
            shared_tickets.as_ref(),
            &clock,
        )?;
        let tls = Arc::new(tls);
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
        let control = match &cfg.control {
            Some(p) => Some(crate::control::bind(p)?),
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
                reloaded: watch::channel(None).0,
                ticket_rotator,
            }),
            control,
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
            control,
        } = self;
        let result = rt.block_on(run_async(
            shared,
            listeners,
            metrics_listener,
            addrs,
            signals,
            watch,
            control,
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
    control: Option<crate::control::Bound>,
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
        // Not stopped by SIGTERM: /readyz answers 503 while the connections drain.
        tokio::spawn(crate::health::serve(l, shared.clone()));
    }
    if let Some(a) = &shared.acme {
        // Redirects name the port actually bound (`--listen` may say :0).
        crate::services::start_acme(a, stop_rx.clone(), addrs.first().map_or(443, |a| a.port()))?;
    }
    // Requests for a reload from the control socket (closed without one).
    let (control_tx, mut control_rx) = tokio::sync::mpsc::channel::<()>(1);
    // Removed when this returns (dropped).
    let _control = match control {
        Some(b) => Some(crate::control::start(
            b,
            shared.clone(),
            control_tx,
            stop_rx.clone(),
        )?),
        None => None,
    };
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
            Some(()) = control_rx.recv() => LoopEvent::Reload("control"),
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

async fn accept_loop(l: TcpListener, s: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    // One wait on the stop signal for the whole loop, not a new one per connection.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        let accepted = tokio::select! {
            r = l.accept() => r,
            _ = &mut stopped => return,
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
        tokio::spawn(connection_task(tcp, peer, s.clone(), permit));
    }
}

/// One connection's task: counted while open, its permit held until it ends.
async fn connection_task(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    s: Arc<Shared>,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    s.metrics.conn_open();
    handle(tcp, peer, &s).await;
    s.metrics.conn_close();
    drop(permit);
}

/// Bytes of a connection task's future (what each connection's task holds besides the
/// boxed state of the phase it is in; bench/README.md, "Memory at scale").
#[cfg(test)]
fn connection_task_size() -> usize {
    fn size<A, B, C, D, F: std::future::Future>(_: fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }
    size(connection_task)
}

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

#[cfg(test)]
mod tests {
    /// Each phase of a connection is boxed (`connection::handle`), so the task a connection
    /// keeps for its whole life holds little more than the addresses, the deadline and the
    /// pointer to the phase it is in. The size is printed for bench/README.md (run with
    /// `--nocapture`).
    #[test]
    fn connection_task_future_stays_small() {
        let n = super::connection_task_size();
        println!("connection task future: {n} bytes");
        assert!(n <= 1024, "connection task future of {n} bytes");
    }
}
