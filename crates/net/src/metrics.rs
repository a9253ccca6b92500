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

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
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
    pub(crate) fn acme_enable(&self) {
        self.acme.enabled.store(true, Relaxed);
    }
    pub(crate) fn acme_order(&self, ok: bool) {
        if ok {
            &self.acme.orders_ok
        } else {
            &self.acme.orders_failed
        }
        .fetch_add(1, Relaxed);
    }
    pub(crate) fn acme_error(&self) {
        self.acme.errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn acme_not_after(&self, unix: u64) {
        self.acme.not_after.store(unix, Relaxed);
    }
    pub(crate) fn acme_next_renewal(&self, unix: u64) {
        self.acme.next_renewal.store(unix, Relaxed);
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
        self.render_acme(&mut s);
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
        let text = m.render();
        assert!(text.contains("tlskit_handshakes_total{outcome=\"full\"} 1"));
        assert!(text.contains("tlskit_handshakes_total{outcome=\"failed\"} 1"));
        assert!(text.contains("le=\"0.0025\"} 0"));
        assert!(text.contains("le=\"0.005\"} 1"));
        assert!(text.contains("le=\"+Inf\"} 1"));
    }
}
