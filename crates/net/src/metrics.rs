//! Server counters and the Prometheus text exposition served on `--metrics ADDR`.
//! All counters are relaxed atomics: the hot path never takes a lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

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
    const ALL: [Self; 10] = [
        Self::ClientHelloTooLarge,
        Self::HandshakeBudget,
        Self::HandshakeTooLarge,
        Self::Timeout,
        Self::Eof,
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
    log_suppressed: AtomicU64,
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
            for (i, b) in BUCKETS.iter().enumerate() {
                if seconds <= *b {
                    self.buckets[i].fetch_add(1, Relaxed);
                }
            }
            self.duration_count.fetch_add(1, Relaxed);
            self.duration_sum_ns
                .fetch_add((seconds * 1e9) as u64, Relaxed);
        }
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
    pub(crate) fn log_suppressed(&self) {
        self.log_suppressed.fetch_add(1, Relaxed);
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
    /// Connections open now.
    pub fn active(&self) -> i64 {
        self.active.load(Relaxed)
    }

    /// The Prometheus text format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(2048);
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
            "# HELP tlskit_log_lines_suppressed_total Failed-handshake log lines left out by the per-source rate limit."
        );
        let _ = writeln!(s, "# TYPE tlskit_log_lines_suppressed_total counter");
        let _ = writeln!(
            s,
            "tlskit_log_lines_suppressed_total {}",
            self.log_suppressed.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP tlskit_handshake_duration_seconds Duration of successful handshakes."
        );
        let _ = writeln!(s, "# TYPE tlskit_handshake_duration_seconds histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                s,
                "tlskit_handshake_duration_seconds_bucket{{le=\"{b}\"}} {}",
                self.buckets[i].load(Relaxed)
            );
        }
        let count = self.duration_count.load(Relaxed);
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
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
