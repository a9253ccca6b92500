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
    /// The last reload's result, with when it started (the control socket waits on it).
    pub(crate) reloaded: watch::Sender<Option<Arc<Finished>>>,
    /// The local ticket keys (none with the fleet's keys).
    pub(crate) ticket_rotator: Option<Arc<crate::tickets::Rotator>>,
}

/// A reload that ended (or was given up or refused), and when it started.
pub(crate) struct Finished {
    /// When the reload started: a control request waits for one that started after it.
    pub(crate) started: std::time::Instant,
    pub(crate) result: ReloadResult,
}

/// What a reload did: whether everything loaded, and what did not.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ReloadResult {
    /// When it ended, seconds since the Unix epoch.
    pub at: u64,
    /// What asked for it: `sighup`, `file_change` or `control`.
    pub cause: String,
    /// True when every certificate and the client-CA store were loaded again.
    pub ok: bool,
    /// What failed (empty when `ok`): what was serving before stays.
    pub errors: Vec<ReloadError>,
}

/// One part of a reload that failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ReloadError {
    /// `certificates`, `client_ca` or `all` (the reload as a whole: refused, too slow).
    pub what: String,
    /// The file that failed, when one is known.
    pub path: Option<String>,
    /// Why, as a sentence.
    pub reason: String,
}

impl ReloadError {
    pub(crate) fn new(what: &str, path: Option<String>, reason: String) -> Self {
        Self {
            what: what.to_string(),
            path,
            reason,
        }
    }
}

impl Shared {
    /// Record a reload's end for the control socket.
    pub(crate) fn reload_finished(
        &self,
        started: std::time::Instant,
        cause: &str,
        errors: Vec<ReloadError>,
    ) {
        let result = ReloadResult {
            at: self.clock.unix_secs(),
            cause: cause.to_string(),
            ok: errors.is_empty(),
            errors,
        };
        self.reloaded
            .send_replace(Some(Arc::new(Finished { started, result })));
    }
}

/// The `--cert`/`--key` pair, absent with `--acme` and no `--cert`.
pub(crate) fn default_pair(cfg: &ServeConfig) -> Option<(&std::path::Path, &std::path::Path)> {
    if cfg.acme.is_some() && cfg.cert.as_os_str().is_empty() {
        None
    } else {
        Some((&cfg.cert, &cfg.key))
    }
}
