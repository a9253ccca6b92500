//! Server counters and the Prometheus text exposition served on `--metrics ADDR`.
//! All counters are relaxed atomics: the hot path never takes a lock. What changes only at
//! start and on reload (the served certificates, the client-CA store) is read at scrape
//! time, as are the process metrics (crate::process, from /proc/self). Every name passes
//! `promtool check metrics` (tested on a real scrape).

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, RwLock};

use tlskit_store::StoreHandle;

use crate::certs::ServedCert;

/// Upper bounds (seconds) of the handshake duration histogram buckets.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// How a handshake ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Outcome {
    Full,
    Resumed,
    Failed,
    Timeout,
}

/// Why a handshake failed (`tlskit_handshake_failures_total{reason=...}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailReason {
    /// ClientHello over `max_client_hello`.
    ClientHelloTooLarge,
    /// The handshake budget across connections was spent.
    HandshakeBudget,
    /// After the ClientHello, the client sent more than the rest of a handshake needs.
    HandshakeTooLarge,
    /// Not finished within `handshake_timeout`.
    Timeout,
    /// The peer closed or reset before the handshake finished.
    Eof,
    /// The peer closed or reset before sending a byte: a TCP health check.
    NoClientHello,
    /// Bytes that are not TLS, or a message rustls could not decode.
    Protocol,
    /// No common version, cipher suite, group or ALPN protocol.
    Incompatible,
    /// The peer sent a fatal alert.
    Alert,
    /// The client certificate was missing or refused.
    Certificate,
    /// Anything else.
    Other,
}

impl FailReason {
    const ALL: [Self; 11] = [
        Self::ClientHelloTooLarge,
        Self::HandshakeBudget,
        Self::HandshakeTooLarge,
        Self::Timeout,
        Self::Eof,
        Self::NoClientHello,
        Self::Protocol,
        Self::Incompatible,
        Self::Alert,
        Self::Certificate,
        Self::Other,
    ];
    /// The metrics label and log reason class.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::ClientHelloTooLarge => "client_hello_too_large",
            Self::HandshakeBudget => "handshake_budget",
            Self::HandshakeTooLarge => "handshake_too_large",
            Self::Timeout => "timeout",
            Self::Eof => "eof",
            Self::NoClientHello => "no_client_hello",
            Self::Protocol => "protocol",
            Self::Incompatible => "incompatible",
            Self::Alert => "alert",
            Self::Certificate => "certificate",
            Self::Other => "other",
        }
    }

    /// Classify what tokio-rustls returned.
    pub(crate) fn of(e: &std::io::Error) -> Self {
        use rustls::Error as E;
        match e.get_ref().and_then(|i| i.downcast_ref::<E>()) {
            Some(
                E::InvalidMessage(_)
                | E::InappropriateMessage { .. }
                | E::InappropriateHandshakeMessage { .. }
                | E::DecryptError
                | E::PeerMisbehaved(_),
            ) => Self::Protocol,
            Some(E::PeerIncompatible(_) | E::NoApplicationProtocol) => Self::Incompatible,
            Some(E::AlertReceived(_)) => Self::Alert,
            Some(E::InvalidCertificate(_) | E::NoCertificatesPresented) => Self::Certificate,
            Some(_) => Self::Other,
            None => match e.kind() {
                std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe => Self::Eof,
                _ => Self::Other,
            },
        }
    }
}

/// Why the server ended an established connection itself
/// (`tlskit_connections_closed_total{reason=...}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// A request head (and body) not received within `header_timeout`.
    HeaderTimeout,
    /// Nothing moved either way for `idle_timeout`.
    IdleTimeout,
    /// A TLS 1.2 renegotiation attempt.
    Renegotiation,
    /// An HTTP request refused with 400 (ambiguous length, malformed head) or 431.
    BadRequest,
}

impl CloseReason {
    const ALL: [Self; 4] = [
        Self::HeaderTimeout,
        Self::IdleTimeout,
        Self::Renegotiation,
        Self::BadRequest,
    ];
    fn label(self) -> &'static str {
        match self {
            Self::HeaderTimeout => "header_timeout",
            Self::IdleTimeout => "idle_timeout",
            Self::Renegotiation => "renegotiation",
            Self::BadRequest => "bad_request",
        }
    }
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    failures: [AtomicU64; FailReason::ALL.len()],
    closed: [AtomicU64; CloseReason::ALL.len()],
    /// Bytes of handshake-budget slots in use (partial ClientHellos), when serving.
    pub(crate) budget: std::sync::OnceLock<std::sync::Arc<crate::hello::Budget>>,
    full: AtomicU64,
    resumed: AtomicU64,
    failed: AtomicU64,
    timeout: AtomicU64,
    rejected: AtomicU64,
    active: AtomicI64,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    backend_errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    duration_count: AtomicU64,
    duration_sum_ns: AtomicU64,
    acme: Acme,
    /// Full TLS 1.3 handshakes by certificate compression: none, zlib, brotli, zstd.
    cert_compression: [AtomicU64; 4],
    /// The served certificates, replaced at start and on each reload.
    certs: RwLock<Vec<ServedCert>>,
    /// The client-CA store, when there is one.
    store: StoreSlot,
    /// Ticket keys shared through Redis, when configured.
    shared: SharedSlot,
}

/// The shared-state ticketer whose health is exported (set once, in bind).
#[derive(Default)]
struct SharedSlot(OnceLock<Arc<crate::optional::SharedTickets>>);

impl std::fmt::Debug for SharedSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "SharedSlot(set)"
        } else {
            "SharedSlot(unset)"
        })
    }
}

/// ACME counters (rendered only when ACME is on).
#[derive(Debug, Default)]
struct Acme {
    enabled: std::sync::atomic::AtomicBool,
    orders_ok: AtomicU64,
    orders_failed: AtomicU64,
    errors: AtomicU64,
    not_after: AtomicU64,
    next_renewal: AtomicU64,
    /// By `Refusal::ALL` index.
    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    refused: [AtomicU64; 7],
    task_restarts: AtomicU64,
}

/// The client-CA store the metrics read (set once, in bind).
#[derive(Default)]
struct StoreSlot(OnceLock<Arc<StoreHandle>>);

impl std::fmt::Debug for StoreSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "StoreSlot(set)"
        } else {
            "StoreSlot(unset)"
        })
    }
}

impl Metrics {
    pub(crate) fn handshake(&self, outcome: Outcome, seconds: f64) {
        match outcome {
            Outcome::Full => &self.full,
            Outcome::Resumed => &self.resumed,
            Outcome::Failed => &self.failed,
            Outcome::Timeout => &self.timeout,
        }
        .fetch_add(1, Relaxed);
        if matches!(outcome, Outcome::Full | Outcome::Resumed) {
            // One bucket per handshake (the first bound it fits under; none past the
            // last, counted by +Inf alone): render() makes them cumulative.
            if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
                self.buckets[i].fetch_add(1, Relaxed);
            }
            self.duration_count.fetch_add(1, Relaxed);
            self.duration_sum_ns
                .fetch_add((seconds * 1e9) as u64, Relaxed);
        }
    }
    /// A full handshake sent its certificate compressed with this RFC 8879 algorithm
    /// (`None`: uncompressed).
    pub(crate) fn cert_compression(&self, alg: Option<tlskit_tls::Compression>) {
        use tlskit_tls::Compression;
        let i = match alg {
            None => 0,
            Some(Compression::Zlib) => 1,
            Some(Compression::Brotli) => 2,
        };
        self.cert_compression[i].fetch_add(1, Relaxed);
    }
    pub(crate) fn failure(&self, reason: FailReason) {
        if let Some(i) = FailReason::ALL.iter().position(|r| *r == reason) {
            self.failures[i].fetch_add(1, Relaxed);
        }
    }
    pub(crate) fn closed(&self, reason: CloseReason) {
        if let Some(i) = CloseReason::ALL.iter().position(|r| *r == reason) {
            self.closed[i].fetch_add(1, Relaxed);
        }
    }
    pub(crate) fn rejected(&self) {
        self.rejected.fetch_add(1, Relaxed);
    }
    pub(crate) fn backend_error(&self) {
        self.backend_errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn conn_open(&self) {
        self.active.fetch_add(1, Relaxed);
    }
    pub(crate) fn conn_close(&self) {
        self.active.fetch_sub(1, Relaxed);
    }
    pub(crate) fn reload(&self, ok: bool) {
        if ok {
            &self.reloads_ok
        } else {
            &self.reloads_failed
        }
        .fetch_add(1, Relaxed);
    }
    fn render_acme(&self, s: &mut String) {
        if !self.acme.enabled.load(Relaxed) {
            return;
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_acme_orders_total ACME certificate orders by result."
        );
        let _ = writeln!(s, "# TYPE tlskit_acme_orders_total counter");
        let _ = writeln!(
            s,
            "tlskit_acme_orders_total{{result=\"ok\"}} {}",
            self.acme.orders_ok.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "tlskit_acme_orders_total{{result=\"failed\"}} {}",
            self.acme.orders_failed.load(Relaxed)
        );
        let _ = writeln!(s, "# HELP tlskit_acme_errors_total ACME failures of any step (directory, account, renewal information, order, storage); each is retried.");
        let _ = writeln!(s, "# TYPE tlskit_acme_errors_total counter");
        let _ = writeln!(
            s,
            "tlskit_acme_errors_total {}",
            self.acme.errors.load(Relaxed)
        );
        let _ = writeln!(s, "# HELP tlskit_acme_certificate_expiry_timestamp_seconds notAfter of the ACME certificate served (0: none).");
        let _ = writeln!(
            s,
            "# TYPE tlskit_acme_certificate_expiry_timestamp_seconds gauge"
        );
        let _ = writeln!(
            s,
            "tlskit_acme_certificate_expiry_timestamp_seconds {}",
            self.acme.not_after.load(Relaxed)
        );
        let _ = writeln!(s, "# HELP tlskit_acme_renewal_due_timestamp_seconds When the ACME certificate is due for renewal (0: not known yet).");
        let _ = writeln!(s, "# TYPE tlskit_acme_renewal_due_timestamp_seconds gauge");
        let _ = writeln!(
            s,
            "tlskit_acme_renewal_due_timestamp_seconds {}",
            self.acme.next_renewal.load(Relaxed)
        );
        let _ = writeln!(s, "# HELP tlskit_acme_results_refused_total Certificates from the CA refused before being stored or served, by reason.");
        let _ = writeln!(s, "# TYPE tlskit_acme_results_refused_total counter");
        #[cfg(feature = "acme")]
        for (r, c) in tlskit_acme::Refusal::ALL.iter().zip(&self.acme.refused) {
            let _ = writeln!(
                s,
                "tlskit_acme_results_refused_total{{reason=\"{}\"}} {}",
                r.label(),
                c.load(Relaxed)
            );
        }
        let _ = writeln!(s, "# HELP tlskit_acme_task_restarts_total Times the ACME renewal task ended (a panic) and was restarted.");
        let _ = writeln!(s, "# TYPE tlskit_acme_task_restarts_total counter");
        let _ = writeln!(
            s,
            "tlskit_acme_task_restarts_total {}",
            self.acme.task_restarts.load(Relaxed)
        );
    }
    /// When ACME's certificate is due for renewal, seconds since the Unix epoch (none
    /// until the renewal task has decided).
    pub(crate) fn acme_renewal_due(&self) -> Option<u64> {
        Some(self.acme.next_renewal.load(Relaxed)).filter(|&t| t > 0)
    }

    /// Connections open now.
    pub fn active(&self) -> i64 {
        self.active.load(Relaxed)
    }

    /// Replace the served certificates (start, reload).
    pub(crate) fn set_certificates(&self, served: &[ServedCert]) {
        if let Ok(mut c) = self.certs.write() {
            *c = served.to_vec();
        }
    }
    /// The shared-state ticketer whose health is exported (`tlskit_shared_state_up`).
    pub(crate) fn set_shared_state(&self, s: Arc<crate::optional::SharedTickets>) {
        let _ = self.shared.0.set(s);
    }
    /// The client-CA store whose generation and size are exported.
    pub(crate) fn set_store(&self, store: Arc<StoreHandle>) {
        let _ = self.store.0.set(store);
    }

    /// The Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(2048);
        self.render_state(&mut s);
        let _ = writeln!(
            s,
            "# HELP tlskit_handshakes_total TLS handshakes by outcome."
        );
        let _ = writeln!(s, "# TYPE tlskit_handshakes_total counter");
        for (name, c) in [
            ("full", &self.full),
            ("resumed", &self.resumed),
            ("failed", &self.failed),
            ("timeout", &self.timeout),
        ] {
            let _ = writeln!(
                s,
                "tlskit_handshakes_total{{outcome=\"{name}\"}} {}",
                c.load(Relaxed)
            );
        }
        if let Some(t) = self.shared.0.get() {
            let _ = writeln!(
                s,
                "# HELP tlskit_shared_state_up 1 when the session-ticket keys are the fleet's (the last Redis sync worked), 0 when running on the keys it has. Ticket keys only: ACME storage failures count in tlskit_acme_errors_total."
            );
            let _ = writeln!(s, "# TYPE tlskit_shared_state_up gauge");
            let _ = writeln!(s, "tlskit_shared_state_up {}", u8::from(t.up()));
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_certificate_compression_total Full handshakes by how the server's certificate was sent (RFC 8879 algorithm, or none)."
        );
        let _ = writeln!(s, "# TYPE tlskit_certificate_compression_total counter");
        for (name, c) in ["none", "zlib", "brotli", "zstd"]
            .iter()
            .zip(&self.cert_compression)
        {
            let _ = writeln!(
                s,
                "tlskit_certificate_compression_total{{algorithm=\"{name}\"}} {}",
                c.load(Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_certificate_compression_waits_total Certificate messages compressed while a client waited (none ready: after start or a reload, or over the cache)."
        );
        let _ = writeln!(
            s,
            "# TYPE tlskit_certificate_compression_waits_total counter"
        );
        for (name, alg) in [
            ("zlib", tlskit_tls::Compression::Zlib),
            ("brotli", tlskit_tls::Compression::Brotli),
        ] {
            let _ = writeln!(
                s,
                "tlskit_certificate_compression_waits_total{{algorithm=\"{name}\"}} {}",
                tlskit_tls::compress::compressor(alg).handshake_misses()
            );
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_handshake_failures_total Failed handshakes (outcome failed or timeout) by reason."
        );
        let _ = writeln!(s, "# TYPE tlskit_handshake_failures_total counter");
        for (r, c) in FailReason::ALL.iter().zip(&self.failures) {
            let _ = writeln!(
                s,
                "tlskit_handshake_failures_total{{reason=\"{}\"}} {}",
                r.label(),
                c.load(Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_handshake_buffer_bytes Bytes of handshake-budget slots holding partial ClientHellos now."
        );
        let _ = writeln!(s, "# TYPE tlskit_handshake_buffer_bytes gauge");
        let _ = writeln!(
            s,
            "tlskit_handshake_buffer_bytes {}",
            self.budget.get().map(|b| b.used()).unwrap_or(0)
        );
        let _ = writeln!(
            s,
            "# HELP tlskit_connections_closed_total Established connections the server ended, by reason."
        );
        let _ = writeln!(s, "# TYPE tlskit_connections_closed_total counter");
        for (r, c) in CloseReason::ALL.iter().zip(&self.closed) {
            let _ = writeln!(
                s,
                "tlskit_connections_closed_total{{reason=\"{}\"}} {}",
                r.label(),
                c.load(Relaxed)
            );
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_log_lines_suppressed_total Log lines left out by the per-source or the global rate limit of each per-connection event."
        );
        let _ = writeln!(s, "# TYPE tlskit_log_lines_suppressed_total counter");
        for ev in tlskit_tls::ratelimit::Noisy::ALL {
            let _ = writeln!(
                s,
                "tlskit_log_lines_suppressed_total{{event=\"{}\"}} {}",
                ev.label(),
                tlskit_tls::ratelimit::GLOBAL.suppressed(ev)
            );
        }
        let _ = writeln!(
            s,
            "# HELP tlskit_handshake_duration_seconds Duration of successful handshakes."
        );
        let _ = writeln!(s, "# TYPE tlskit_handshake_duration_seconds histogram");
        // Each handshake counted in one bucket (handshake()); Prometheus wants cumulative.
        let mut cumulative = 0u64;
        for (i, b) in BUCKETS.iter().enumerate() {
            cumulative = cumulative.saturating_add(self.buckets[i].load(Relaxed));
            let _ = writeln!(
                s,
                "tlskit_handshake_duration_seconds_bucket{{le=\"{b}\"}} {cumulative}"
            );
        }
        // Loaded after the buckets: a handshake counted between the loads must not make
        // +Inf smaller than the last bucket.
        let count = self.duration_count.load(Relaxed).max(cumulative);
        let _ = writeln!(
            s,
            "tlskit_handshake_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            s,
            "tlskit_handshake_duration_seconds_sum {}",
            self.duration_sum_ns.load(Relaxed) as f64 / 1e9
        );
        let _ = writeln!(s, "tlskit_handshake_duration_seconds_count {count}");
        let _ = writeln!(s, "# HELP tlskit_active_connections Connections open now.");
        let _ = writeln!(s, "# TYPE tlskit_active_connections gauge");
        let _ = writeln!(s, "tlskit_active_connections {}", self.active.load(Relaxed));
        let _ = writeln!(
            s,
            "# HELP tlskit_connections_rejected_total Connections closed at the connection limit."
        );
        let _ = writeln!(s, "# TYPE tlskit_connections_rejected_total counter");
        let _ = writeln!(
            s,
            "tlskit_connections_rejected_total {}",
            self.rejected.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP tlskit_backend_errors_total Backend connections that failed."
        );
        let _ = writeln!(s, "# TYPE tlskit_backend_errors_total counter");
        let _ = writeln!(
            s,
            "tlskit_backend_errors_total {}",
            self.backend_errors.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP tlskit_reloads_total Certificate and trust store reloads by result."
        );
        let _ = writeln!(s, "# TYPE tlskit_reloads_total counter");
        let _ = writeln!(
            s,
            "tlskit_reloads_total{{result=\"ok\"}} {}",
            self.reloads_ok.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "tlskit_reloads_total{{result=\"failed\"}} {}",
            self.reloads_failed.load(Relaxed)
        );
        self.render_acme(&mut s);
        render_pkcs11(&mut s);
        s
    }
}

/// Most DNS names listed in one `sni` label; more are summarised as `,+N`.
const SNI_LABEL_NAMES: usize = 8;

/// A label value in the text format. Control and bidi characters (a file name or a
/// certificate may hold any: a U+202E in an SNI-directory file name reversed the text a
/// reader of the scrape saw) are first shown as the workspace's one escaping function
/// shows them in logs (`\u{202e}`, `\x1b`), then `\`, `"` and newline are escaped as the
/// Prometheus text format says, so the value read back is that visible escape.
fn label(v: &str) -> String {
    let v = tlskit_x509::text::escape(v);
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn sni_label(names: &[String]) -> String {
    let mut v = names
        .iter()
        .take(SNI_LABEL_NAMES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",");
    if names.len() > SNI_LABEL_NAMES {
        let _ = write!(v, ",+{}", names.len() - SNI_LABEL_NAMES);
    }
    label(&v)
}

/// `# HELP` and `# TYPE` lines.
fn head(s: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} {kind}");
}

impl Metrics {
    /// Build info, served certificates, the client-CA store, the process.
    fn render_state(&self, s: &mut String) {
        head(
            s,
            "tlskit_build_info",
            "gauge",
            "Always 1: the tlskit and rustls versions of this binary.",
        );
        let _ = writeln!(
            s,
            "tlskit_build_info{{version=\"{}\",rustls=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION"),
            env!("TLSKIT_RUSTLS_VERSION")
        );
        head(
            s,
            "tlskit_certificate_not_after_seconds",
            "gauge",
            "notAfter of each served leaf certificate, seconds since the Unix epoch.",
        );
        if let Ok(certs) = self.certs.read() {
            for c in certs.iter() {
                let _ = writeln!(
                    s,
                    "tlskit_certificate_not_after_seconds{{name=\"{}\",sni=\"{}\",path=\"{}\"}} {}",
                    label(&c.name),
                    sni_label(&c.dns_names),
                    label(&c.path.display().to_string()),
                    c.not_after
                );
            }
        }
        if let Some(store) = self.store.0.get() {
            head(
                s,
                "tlskit_trust_store_generation",
                "gauge",
                "Generation of the client-CA trust store in use: 1 at start, +1 per reload.",
            );
            let _ = writeln!(s, "tlskit_trust_store_generation {}", store.generation());
            head(
                s,
                "tlskit_trust_store_anchor_set_generation",
                "gauge",
                "Generation of the client-CA anchor set: +1 when a reload changes the anchors.",
            );
            let _ = writeln!(
                s,
                "tlskit_trust_store_anchor_set_generation {}",
                store.anchor_set_generation()
            );
            head(
                s,
                "tlskit_trust_store_anchors",
                "gauge",
                "Trust anchors in the client-CA store in use.",
            );
            let current = store.current();
            let _ = writeln!(s, "tlskit_trust_store_anchors {}", current.len());
            head(
                s,
                "tlskit_trust_store_damaged_anchors",
                "gauge",
                "Snapshot anchors of the client-CA store in use that failed their integrity check (at reload or first use); never trusted.",
            );
            let _ = writeln!(
                s,
                "tlskit_trust_store_damaged_anchors {}",
                current.damaged_seen()
            );
        }
        crate::process::render(s);
    }
}

/// The PKCS#11 login record of the process (`tlskit_pkcs11::login_stats`): tokens whose
/// PIN was refused (their keys stay disabled until the PIN source changes) and the logins
/// tried, refused and not tried.
fn render_pkcs11(s: &mut String) {
    let st = tlskit_pkcs11::login_stats();
    head(
        s,
        "tlskit_pkcs11_pin_refused_tokens",
        "gauge",
        "Tokens that refused their PIN: no login is tried with the same PIN again.",
    );
    let _ = writeln!(s, "tlskit_pkcs11_pin_refused_tokens {}", st.refused.len());
    if !st.refused.is_empty() {
        head(
            s,
            "tlskit_pkcs11_pin_refused",
            "gauge",
            "1 for each token whose PIN was refused (rv: what the token answered).",
        );
        for r in &st.refused {
            let _ = writeln!(
                s,
                "tlskit_pkcs11_pin_refused{{token=\"{}\",rv=\"{}\"}} 1",
                label(&r.token),
                r.rv
            );
        }
    }
    head(
        s,
        "tlskit_pkcs11_logins_total",
        "counter",
        "User logins on PKCS#11 tokens: ok, refused by the token (wrong or locked PIN), or skipped (the PIN is one the token refused).",
    );
    for (result, n) in [
        ("ok", st.ok),
        ("refused", st.refused_total),
        ("skipped", st.skipped),
    ] {
        let _ = writeln!(s, "tlskit_pkcs11_logins_total{{result=\"{result}\"}} {n}");
    }
}

/// The renewal manager's reports, counted as `tlskit_acme_*`.
#[cfg(feature = "acme")]
impl tlskit_acme::manager::AcmeEvents for Metrics {
    fn acme_enable(&self) {
        self.acme.enabled.store(true, Relaxed);
    }
    fn acme_order(&self, ok: bool) {
        if ok {
            &self.acme.orders_ok
        } else {
            &self.acme.orders_failed
        }
        .fetch_add(1, Relaxed);
    }
    fn acme_error(&self) {
        self.acme.errors.fetch_add(1, Relaxed);
    }
    fn acme_not_after(&self, unix: u64) {
        self.acme.not_after.store(unix, Relaxed);
    }
    fn acme_next_renewal(&self, unix: u64) {
        self.acme.next_renewal.store(unix, Relaxed);
    }
    fn acme_refused(&self, why: tlskit_acme::Refusal) {
        if let Some(i) = tlskit_acme::Refusal::ALL.iter().position(|r| *r == why) {
            if let Some(c) = self.acme.refused.get(i) {
                c.fetch_add(1, Relaxed);
            }
        }
    }
    fn acme_task_restart(&self) {
        self.acme.task_restarts.fetch_add(1, Relaxed);
    }
}

/// What the expiry check says of a served certificate at `now` (Unix seconds), warning
/// `horizon` seconds ahead: expired (error), not valid yet or expiring soon (warn), or
/// nothing.
fn expiry_event(
    c: &ServedCert,
    now: i64,
    horizon: i64,
) -> Option<(tlskit_tls::log::Level, &'static str)> {
    use tlskit_tls::log::Level;
    let left = c.not_after - now;
    if left <= 0 {
        Some((Level::Error, "certificate_expired"))
    } else if c.not_before > now {
        Some((Level::Warn, "certificate_not_yet_valid"))
    } else if left <= horizon {
        Some((Level::Warn, "certificate_expires_soon"))
    } else {
        None
    }
}

/// At start and after each reload: log every served certificate that has expired (error),
/// is not valid yet or expires within `warn_days` days (warn) by `clock`, and hand the set
/// to the metrics (`tlskit_certificate_not_after_seconds`).
pub(crate) fn certificates_loaded(
    metrics: &Metrics,
    index: &crate::certs::CertIndex,
    warn_days: u32,
    clock: &dyn tlskit_tls::Clock,
) {
    use tlskit_tls::log;
    let now = i64::try_from(clock.unix_secs()).unwrap_or(i64::MAX);
    let horizon = i64::from(warn_days) * 86_400;
    for c in index.served() {
        let Some((level, event)) = expiry_event(c, now, horizon) else {
            continue;
        };
        let left = c.not_after - now;
        log::event(
            level,
            event,
            &[
                ("name", &c.name),
                ("path", &c.path.display()),
                ("sni", &c.dns_names.join(",")),
                ("not_before", &tlskit_x509::datetime::rfc3339(c.not_before)),
                ("not_after", &tlskit_x509::datetime::rfc3339(c.not_after)),
                ("days_left", &format!("{:.1}", left as f64 / 86_400.0)),
            ],
        );
    }
    metrics.set_certificates(index.served());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expiry warnings follow the server's clock: a certificate good for 30 days is quiet
    /// today, "expires soon" once fewer than the warning days are left, "expired" after
    /// its notAfter, and "not yet valid" when the clock is before its notBefore.
    #[test]
    fn expiry_warnings_follow_the_clock() {
        use std::time::Duration;
        use tlskit_tls::log::Level;
        use tlskit_tls::{Clock, ManualClock};
        const DAY: u64 = 86_400;
        let start = 1_800_000_000u64;
        let clock = ManualClock::at_unix(start);
        let c = ServedCert {
            name: "a".into(),
            path: "/a.pem".into(),
            dns_names: vec!["a.example".into()],
            not_before: (start - DAY) as i64,
            not_after: (start + 30 * DAY) as i64,
        };
        let horizon = 14 * DAY as i64;
        let at = |clock: &ManualClock| expiry_event(&c, clock.unix_secs() as i64, horizon);
        assert_eq!(at(&clock), None, "30 days left");
        clock.advance(Duration::from_secs(16 * DAY - 1));
        assert_eq!(at(&clock), None, "a second more than 14 days left");
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            at(&clock),
            Some((Level::Warn, "certificate_expires_soon")),
            "14 days left"
        );
        clock.advance(Duration::from_secs(14 * DAY - 1));
        assert_eq!(at(&clock), Some((Level::Warn, "certificate_expires_soon")));
        clock.advance(Duration::from_secs(1));
        assert_eq!(at(&clock), Some((Level::Error, "certificate_expired")));
        clock.set_wall(std::time::UNIX_EPOCH + Duration::from_secs(start - 2 * DAY));
        assert_eq!(at(&clock), Some((Level::Warn, "certificate_not_yet_valid")));
    }

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::default();
        m.handshake(Outcome::Full, 0.003);
        m.handshake(Outcome::Failed, 0.0);
        m.failure(FailReason::Protocol);
        let text = m.render();
        assert!(text.contains("tlskit_handshake_failures_total{reason=\"protocol\"} 1"));
        assert!(text.contains("tlskit_handshake_failures_total{reason=\"eof\"} 0"));
        assert!(text.contains("tlskit_handshakes_total{outcome=\"full\"} 1"));
        assert!(text.contains("tlskit_handshakes_total{outcome=\"failed\"} 1"));
        assert!(text.contains("le=\"0.0025\"} 0"));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"+Inf\"} 1"));
        // Each handshake increments one bucket; the rendering is cumulative.
        m.handshake(Outcome::Resumed, 0.0004);
        m.handshake(Outcome::Full, 0.07);
        m.handshake(Outcome::Full, 9.0);
        assert_eq!(m.buckets.iter().map(|b| b.load(Relaxed)).sum::<u64>(), 3);
        let text = m.render();
        for (le, n) in [
            ("0.0005", 1),
            ("0.001", 1),
            ("0.005", 2),
            ("0.05", 2),
            ("0.1", 3),
            ("5", 3),
            ("+Inf", 4),
        ] {
            let line = format!("tlskit_handshake_duration_seconds_bucket{{le=\"{le}\"}} {n}\n");
            assert!(text.contains(&line), "{line}{text}");
        }
        assert!(text.contains("tlskit_handshake_duration_seconds_count 4\n"));
    }

    #[test]
    fn label_values_are_escaped_for_prometheus_and_people() {
        // A bidi override and an escape sequence from a file name, a quote, a backslash.
        let v = label("evil\u{202e}txt.crt \x1b[31m \"q\" back\\slash\nnl");
        assert!(!v.chars().any(tlskit_x509::text::needs_escape), "{v:?}");
        assert_eq!(
            v,
            "evil\\\\u{202e}txt.crt \\\\x1b[31m \\\"q\\\" back\\\\slash\\\\nnl"
        );
        let m = Metrics::default();
        m.set_certificates(&[ServedCert {
            name: "evil\u{202e}crt".into(),
            path: "/sni/evil\u{202e}crt.crt".into(),
            dns_names: vec!["a.example".into()],
            not_before: 0,
            not_after: 1,
        }]);
        let text = m.render();
        assert!(!text.contains('\u{202e}'), "{text}");
        assert!(
            text.contains("name=\"evil\\\\u{202e}crt\",sni=\"a.example\",path=\"/sni/evil\\\\u{202e}crt.crt\"} 1"),
            "{text}"
        );
    }
}
