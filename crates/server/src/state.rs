//! The state a running server shares between its accept loop, its connections and its
//! reloads.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::ServerConfig;
use tlskit_store::StoreHandle;
use tlskit_tls::Clock;
use tokio::sync::{watch, Semaphore};

use crate::certs::SniResolver;
use crate::config::ServeConfig;
use crate::metrics::Metrics;

/// Shared state of a running server.
pub(crate) struct Shared {
    pub(crate) cfg: ServeConfig,
    pub(crate) provider: Arc<CryptoProvider>,
    pub(crate) resolver: Arc<SniResolver>,
    pub(crate) store: Option<Arc<StoreHandle>>,
    pub(crate) tls: Arc<ServerConfig>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) limit: Arc<Semaphore>,
    /// Slots for partial ClientHellos across connections.
    pub(crate) budget: Arc<crate::hello::Budget>,
    /// Per-source limit on failed-handshake log lines.
    pub(crate) log_limit: tlskit_tls::ratelimit::LogLimiter,
    /// Per-source limit on connection-limit log lines.
    pub(crate) limit_log_limit: tlskit_tls::ratelimit::LogLimiter,
    pub(crate) stopping: AtomicBool,
    /// Number of the latest reload started (see [`reload`]).
    pub(crate) reload_seq: std::sync::atomic::AtomicU64,
    /// Set to true on SIGTERM/SIGINT; idle keep-alive connections close at once.
    pub(crate) stop: watch::Sender<bool>,
    /// ACME certificate management (`--acme`).
    pub(crate) acme: Option<crate::optional::ServerAcme>,
    /// Ticket keys shared through Redis (`--shared-state`).
    pub(crate) shared_tickets: Option<Arc<crate::optional::SharedTickets>>,
    /// Where "now" comes from (ticket keys, expiry warnings, ACME renewals).
    pub(crate) clock: Arc<dyn Clock>,
}

/// The `--cert`/`--key` pair, absent with `--acme` and no `--cert`.
pub(crate) fn default_pair(cfg: &ServeConfig) -> Option<(&std::path::Path, &std::path::Path)> {
    if cfg.acme.is_some() && cfg.cert.as_os_str().is_empty() {
        None
    } else {
        Some((&cfg.cert, &cfg.key))
    }
}
