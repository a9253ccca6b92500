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

use crate::error::NetError;

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
