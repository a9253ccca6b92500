//! The accepted ranges of `serve`'s numeric settings ([`Range`], [`ranges`]): the
//! settings model (`crate::settings`) checks every duration and size against them, and
//! the server checks a configuration built by hand again at bind.

use std::time::Duration;

use std::net::SocketAddr;
use std::path::PathBuf;

use tlskit_store::Source;
use tlskit_tls::{Compression, NetError, TlsVersion};

/// The accepted range of one numeric setting of `serve` (issue 27): every duration and
/// size from the command line or the config file is checked against its range before any
/// arithmetic, and refused at start (exit 2) with the flag or key and the range named.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Range {
    /// The config key (`handshake_timeout`); the flag is the same with dashes.
    pub key: &'static str,
    /// Smallest value accepted.
    pub min: f64,
    /// Largest value accepted.
    pub max: f64,
    /// `seconds`, `bytes`, `connections`, `days`.
    pub unit: &'static str,
}

/// The ranges of `serve`'s numeric settings (the same for the flag and the config key).
pub mod ranges {
    use super::Range;

    const fn r(key: &'static str, min: f64, max: f64, unit: &'static str) -> Range {
        Range {
            key,
            min,
            max,
            unit,
        }
    }
    /// One day: the longest handshake or request-head deadline.
    const DAY: f64 = 86_400.0;
    /// Accept to handshake done, also the backend connect.
    pub const HANDSHAKE_TIMEOUT: Range = r("handshake_timeout", 0.001, DAY, "seconds");
    /// One request head (and small body).
    pub const HEADER_TIMEOUT: Range = r("header_timeout", 0.001, DAY, "seconds");
    /// Silence on an established connection: up to a week.
    pub const IDLE_TIMEOUT: Range = r("idle_timeout", 0.001, 7.0 * DAY, "seconds");
    /// SIGTERM's wait for open connections.
    pub const SHUTDOWN_GRACE: Range = r("shutdown_grace", 0.0, DAY, "seconds");
    /// Open connections: at most the kernel's default ceiling of open files
    /// (`fs.nr_open`), which every connection needs one of.
    pub const MAX_CONNECTIONS: Range = r("max_connections", 1.0, 1_048_576.0, "connections");
    /// One connection's ClientHello buffer (a 64 KiB message in 16 KiB records).
    pub const MAX_CLIENT_HELLO: Range = r("max_client_hello", 1024.0, 65_556.0, "bytes");
    /// All partial ClientHellos: one allocation, made at the first connection; at most
    /// 1 GiB (65,536 connections at the default 16 KiB).
    pub const HANDSHAKE_BUDGET: Range = r("handshake_budget", 1024.0, 1_073_741_824.0, "bytes");
    /// Ticket key period (rustls's ticketer replaces its own key every 6 hours).
    pub const TICKET_ROTATION: Range = r("ticket_rotation", 1.0, 21_600.0, "seconds");
    /// Periodic re-read of the fleet's ticket keys.
    pub const SHARED_STATE_REREAD: Range = r("shared_state_reread", 0.1, 3600.0, "seconds");
    /// Most time between two ACME renewal checks.
    pub const ACME_RECHECK: Range = r("acme_recheck", 0.1, 7.0 * DAY, "seconds");
    /// First retry after an ACME failure (doubles up to an hour).
    pub const ACME_RETRY: Range = r("acme_retry", 0.01, 3600.0, "seconds");
    /// Expiry warning horizon: ten years.
    pub const EXPIRY_WARNING_DAYS: Range = r("expiry_warning_days", 0.0, 3650.0, "days");
}

impl Range {
    /// The flag of this setting (`--handshake-timeout`).
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    /// `value` checked against the range; `name` says where it came from (the flag, or the
    /// key and its file).
    pub fn check(&self, value: f64, name: &str) -> Result<f64, NetError> {
        if value.is_finite() && value >= self.min && value <= self.max {
            Ok(value)
        } else {
            Err(self.refusal(&value.to_string(), name))
        }
    }

    /// A duration in seconds, checked.
    pub fn secs(&self, value: f64, name: &str) -> Result<Duration, NetError> {
        Ok(Duration::from_secs_f64(self.check(value, name)?))
    }

    /// A count or size, checked (as it arrives: an unsigned integer).
    pub fn count(&self, value: u64, name: &str) -> Result<usize, NetError> {
        // Every maximum is far below 2^53: the conversion to f64 is exact in range, and a
        // larger value stays larger.
        #[allow(clippy::cast_precision_loss)]
        let v = value as f64;
        if !(v >= self.min && v <= self.max) {
            return Err(self.refusal(&value.to_string(), name));
        }
        usize::try_from(value).map_err(|_| self.refusal(&v.to_string(), name))
    }

    fn refusal(&self, value: &str, name: &str) -> NetError {
        NetError::Config(format!(
            "{name} {value} is out of range: {} must be {} to {} {}",
            self.key, self.min, self.max, self.unit
        ))
    }

    /// A duration already made (library callers), checked under the key's name.
    pub(crate) fn duration(&self, d: Duration) -> Result<(), NetError> {
        self.check(d.as_secs_f64(), self.key).map(drop)
    }
}

#[cfg(test)]
mod range_tests {
    use super::ranges;

    #[test]
    fn values_outside_a_range_are_refused_before_arithmetic() {
        let r = ranges::SHUTDOWN_GRACE;
        for bad in [1e19, -1.0, f64::NAN, f64::INFINITY, 86_400.001] {
            let e = r.secs(bad, "--shutdown-grace").err().map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.contains("shutdown_grace must be 0 to 86400 seconds")),
                "{bad}: {e:?}"
            );
        }
        assert_eq!(r.secs(0.0, "x").ok(), Some(std::time::Duration::ZERO));
        let c = ranges::MAX_CONNECTIONS;
        assert!(c.count(u64::MAX, "--max-connections").is_err());
        assert!(c.count(0, "--max-connections").is_err());
        assert_eq!(c.count(1_048_576, "x").ok(), Some(1_048_576));
        assert_eq!(c.flag(), "--max-connections");
    }
}

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
    /// The control socket's path (`--control`): a Unix socket, mode 0600.
    pub control: Option<PathBuf>,
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
            control: None,
        }
    }
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
pub(crate) fn alpn_drop_reason(cfg: &ServeConfig) -> &'static str {
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
pub(crate) fn check_alpn(cfg: &ServeConfig) -> Result<(), NetError> {
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
