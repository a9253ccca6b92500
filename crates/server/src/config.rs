//! The TOML configuration file of `tlskit serve`: every flag has a key of the same name
//! (dashes become underscores). Flags given on the command line win over the file.
//!
//! ```toml
//! listen = ["0.0.0.0:443", "[::]:443"]
//! cert = "/etc/tlskit/chain.pem"
//! key = "/etc/tlskit/key.pem"
//! sni_dir = "/etc/tlskit/sni"
//! backend = "127.0.0.1:8080"
//! client_ca = ["/etc/tlskit/clients.pem"]
//! client_ca_profile = "rfc5280"       # default "browser"
//! client_ca_allow = ["aki-missing"]   # rules not checked on client certificates
//! compress = "brotli,zlib"
//! metrics = "127.0.0.1:9100"
//! handshake_timeout = 10
//! header_timeout = 10
//! idle_timeout = 60
//! max_connections = 10000
//! max_client_hello = 16384
//! handshake_budget = 16777216
//! # Certificates from an ACME CA instead of cert/key:
//! # acme = "https://acme-v02.api.letsencrypt.org/directory"
//! # domain = ["www.example.com"]
//! # acme_storage = "/var/lib/tlskit/acme"
//! # http_listen = "[::]:80"
//! # acme_roots = ["/etc/tlskit/acme-ca.pem"]  # anchors for the CA's HTTPS (default system)
//! # acme_roots_profile = "rfc5280"           # how the CA's HTTPS certificate is checked
//! # acme_roots_allow = ["aki-missing"]
//! # acme_issuer_roots = ["/etc/tlskit/acme-ca-roots.pem"]   # new certificates must chain to them
//! # A fleet (ticket keys and ACME state in Redis; acme_storage then not needed):
//! # shared_state = "rediss://tlskit:PASSWORD@redis.internal:6380/2"
//! # shared_state_key = "/etc/tlskit/fleet.kek"
//! # shared_state_ca = "/etc/tlskit/redis-ca.pem"
//! # shared_state_ca_profile = "rfc5280"   # how the Redis server's certificate is checked
//! # shared_state_ca_allow = ["aki-missing"]
//! log_format = "json"
//! expiry_warning_days = 21
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use tlskit_tls::NetError;

/// The accepted range of one numeric setting of `serve` (issue 27): every duration and
/// size from the command line or the config file is checked against its range before any
/// arithmetic, and refused at start (exit 2) with the flag or key and the range named.
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// What a config file may hold. Relative paths are relative to the file's directory.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Addresses.
    pub listen: Option<Vec<String>>,
    /// Leaf + chain PEM.
    pub cert: Option<PathBuf>,
    /// Key PEM.
    pub key: Option<PathBuf>,
    /// SNI directory.
    pub sni_dir: Option<PathBuf>,
    /// Backend HOST:PORT.
    pub backend: Option<String>,
    /// `http` or `echo`.
    pub respond: Option<String>,
    /// Client-CA sources.
    pub client_ca: Option<Vec<String>>,
    /// `optional` or `required`.
    pub client_auth: Option<String>,
    /// `browser` (default), `webpki` or `rfc5280`: the rule set client certificates are
    /// checked against.
    pub client_ca_profile: Option<String>,
    /// Rule codes not checked on client certificates (e.g. `aki-missing`).
    pub client_ca_allow: Option<Vec<String>>,
    /// `store` or `off`.
    pub ca_hints: Option<String>,
    /// `brotli,zlib`, `none`, ...
    pub compress: Option<String>,
    /// ALPN protocols.
    pub alpn: Option<Vec<String>>,
    /// ALPN protocols the backend speaks.
    pub backend_alpn: Option<Vec<String>>,
    /// `1.2`, `1.3`.
    pub tls_version: Option<Vec<String>>,
    /// Metrics address.
    pub metrics: Option<String>,
    /// Seconds.
    pub handshake_timeout: Option<f64>,
    /// Seconds.
    pub idle_timeout: Option<f64>,
    /// Seconds.
    pub header_timeout: Option<f64>,
    /// Bytes.
    pub max_client_hello: Option<usize>,
    /// Bytes.
    pub handshake_budget: Option<usize>,
    /// Count.
    pub max_connections: Option<usize>,
    /// Seconds.
    pub shutdown_grace: Option<f64>,
    /// Seconds.
    pub ticket_rotation: Option<u64>,
    /// PROXY v2 to the backend.
    pub proxy_protocol: Option<bool>,
    /// Redis URL for fleet state.
    pub shared_state: Option<String>,
    /// The fleet's key-encryption key file.
    pub shared_state_key: Option<std::path::PathBuf>,
    /// Refuse to start without Redis.
    pub shared_state_required: Option<bool>,
    /// Seconds between re-reads of the shared keys (besides change notifications).
    pub shared_state_reread: Option<f64>,
    /// PEM CA file for a `rediss://` Redis (a private CA).
    pub shared_state_ca: Option<std::path::PathBuf>,
    /// The rule set a `rediss://` Redis server's certificate is checked against.
    pub shared_state_ca_profile: Option<String>,
    /// Rule codes not checked on the Redis server's certificate.
    pub shared_state_ca_allow: Option<Vec<String>>,
    /// Do not watch files for changes.
    pub no_watch: Option<bool>,
    /// `off|error|warn|info|debug`.
    pub log_level: Option<String>,
    /// ACME directory URL.
    pub acme: Option<String>,
    /// ACME certificate names.
    pub domain: Option<Vec<String>>,
    /// ACME storage directory.
    pub acme_storage: Option<PathBuf>,
    /// ACME account contact.
    pub acme_email: Option<String>,
    /// Trust anchors for the CA's HTTPS.
    pub acme_roots: Option<Vec<String>>,
    /// The rule set the ACME CA's HTTPS certificate is checked against.
    pub acme_roots_profile: Option<String>,
    /// Rule codes not checked on the ACME CA's HTTPS certificate.
    pub acme_roots_allow: Option<Vec<String>>,
    /// `tls-alpn-01` or `http-01`.
    pub acme_challenge: Option<String>,
    /// ACME certificate profile.
    pub acme_profile: Option<String>,
    /// Seconds.
    pub acme_recheck: Option<f64>,
    /// Seconds.
    pub acme_retry: Option<f64>,
    /// Plain HTTP listener address.
    pub http_listen: Option<String>,
    /// `text|json`.
    pub log_format: Option<String>,
    /// Days before a served certificate's notAfter from which start and reloads warn.
    pub expiry_warning_days: Option<u32>,
    /// The ACME CA's issuing roots: new certificates must verify against them.
    pub acme_issuer_roots: Option<Vec<String>>,
}

impl FileConfig {
    /// Read and parse `path`; relative paths inside are resolved against its directory.
    pub fn load(path: &Path) -> Result<Self, NetError> {
        // A configuration file is small: 1 MiB bounds it; a FIFO is refused, not waited on.
        let text =
            tlskit_io::read_to_string(path, 1 << 20).map_err(|e| NetError::file(path, e.kind))?;
        let mut c: Self =
            toml::from_str(&text).map_err(|e| NetError::file(path, e.message().to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [
            &mut c.cert,
            &mut c.key,
            &mut c.sni_dir,
            &mut c.acme_storage,
            &mut c.shared_state_key,
            &mut c.shared_state_ca,
        ]
        .into_iter()
        .flatten()
        {
            // A `pkcs11:` URI (a token key) is no path.
            if p.is_relative() && !p.to_str().is_some_and(tlskit_pkcs11::is_uri) {
                *p = base.join(&*p);
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_resolves_paths() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join("serve.toml");
        std::fs::write(
            &p,
            "listen = [\"127.0.0.1:0\"]\ncert = \"c.pem\"\nkey = \"/k.pem\"\nmax_connections = 5\n\
             header_timeout = 2.5\nmax_client_hello = 8192\nhandshake_budget = 65536\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = FileConfig::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.cert, Some(dir.path().join("c.pem")));
        assert_eq!(c.key, Some(PathBuf::from("/k.pem")));
        assert_eq!(c.max_connections, Some(5));
        assert_eq!(c.header_timeout, Some(2.5));
        assert_eq!(c.max_client_hello, Some(8192));
        assert_eq!(c.handshake_budget, Some(65536));
        std::fs::write(
            &p,
            "acme = \"https://ca.test/dir\"\ndomain = [\"a.test\"]\nacme_storage = \"st\"\nacme_challenge = \"http-01\"\nhttp_listen = \"127.0.0.1:80\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = FileConfig::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.acme.as_deref(), Some("https://ca.test/dir"));
        assert_eq!(c.domain, Some(vec!["a.test".to_string()]));
        assert_eq!(c.acme_storage, Some(dir.path().join("st")));
        assert_eq!(c.http_listen.as_deref(), Some("127.0.0.1:80"));
        std::fs::write(
            &p,
            "shared_state = \"rediss://u:p@r:6380/2\"\nshared_state_key = \"fleet.kek\"\n\
             shared_state_ca = \"redis-ca.pem\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let c = FileConfig::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.shared_state.as_deref(), Some("rediss://u:p@r:6380/2"));
        assert_eq!(c.shared_state_key, Some(dir.path().join("fleet.kek")));
        assert_eq!(c.shared_state_ca, Some(dir.path().join("redis-ca.pem")));
        std::fs::write(&p, "lisen = 1\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(FileConfig::load(&p).is_err());
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
