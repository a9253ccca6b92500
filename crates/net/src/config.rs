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
//! compress = "brotli,zlib"
//! metrics = "127.0.0.1:9100"
//! handshake_timeout = 10
//! header_timeout = 10
//! idle_timeout = 60
//! max_connections = 10000
//! max_client_hello = 16384
//! handshake_budget = 16777216
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
    /// `store` or `off`.
    pub ca_hints: Option<String>,
    /// `brotli,zlib`, `none`, ...
    pub compress: Option<String>,
    /// ALPN protocols.
    pub alpn: Option<Vec<String>>,
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
    /// Do not watch files for changes.
    pub no_watch: Option<bool>,
    /// `off|error|warn|info|debug`.
    pub log_level: Option<String>,
}

impl FileConfig {
    /// Read and parse `path`; relative paths inside are resolved against its directory.
    pub fn load(path: &Path) -> Result<Self, NetError> {
        let text = std::fs::read_to_string(path).map_err(|e| NetError::file(path, e))?;
        let mut c: Self =
            toml::from_str(&text).map_err(|e| NetError::file(path, e.message().to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [&mut c.cert, &mut c.key, &mut c.sni_dir]
            .into_iter()
            .flatten()
        {
            if p.is_relative() {
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
        std::fs::write(&p, "lisen = 1\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(FileConfig::load(&p).is_err());
    }
}
