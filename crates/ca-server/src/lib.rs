#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod error;
mod config;
mod problem;
mod jws;
mod state;
mod validate;
mod service;
mod server;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tlskit_tls::clock::Clock;

// The public interface is:
pub use config::{AcmeConfig, AcmeProfile, ExtendedKeyUsage, RateLimits, Retention};
pub use error::ServerError;

/// What `tlskit ca serve` was asked for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The CA directory (`tlskit ca init`).
    pub dir: PathBuf,
    /// Where the ACME directory is served (HTTPS).
    pub listen: SocketAddr,
    /// The port http-01 validation connects to (80 by default).
    pub validation_http_port: u16,
    /// The port tls-alpn-01 validation connects to (443 by default).
    pub validation_tls_port: u16,
    /// A DNS server that resolves identifiers and answers dns-01 TXT queries (without it:
    /// the system resolver, and no dns-01 or wildcards).
    pub resolver: Option<SocketAddr>,
    /// Where Prometheus metrics are served (plain HTTP), if anywhere.
    pub metrics: Option<SocketAddr>,
    /// Names the server's own certificate carries besides 127.0.0.1 and localhost (the
    /// names other hosts reach it by).
    pub server_names: Vec<String>,
    /// Where "now" comes from (tests move a manual clock).
    pub clock: Arc<dyn Clock>,
    /// How often (real time) the server checks whether its own certificate is due for
    /// renewal on `clock` (10 minutes by default).
    pub renewal_check: std::time::Duration,
}

impl ServeOptions {
    /// Serve the CA in `dir` on `listen`, validating on ports 80 and 443.
    pub fn new(dir: PathBuf, listen: SocketAddr) -> Self {
        ServeOptions {
            dir,
            listen,
            validation_http_port: 80,
            validation_tls_port: 443,
            resolver: None,
            metrics: None,
            server_names: Vec::new(),
            clock: tlskit_tls::clock::system(),
            renewal_check: std::time::Duration::from_secs(600),
        }
    }
    /// The ports challenge validation connects to: http-01, then tls-alpn-01.
    pub fn validation_ports(mut self, http: u16, tls: u16) -> Self {
        self.validation_http_port = http;
        self.validation_tls_port = tls;
        self
    }
    /// Resolve identifiers through this DNS server and validate dns-01 against it.
    pub fn resolver(mut self, resolver: Option<SocketAddr>) -> Self {
        self.resolver = resolver;
        self
    }
    /// More names for the server's own certificate (DNS names or IP addresses).
    pub fn server_names(mut self, names: Vec<String>) -> Self {
        self.server_names = names;
        self
    }
    /// Check this often whether the server's own certificate is due (at least 10 ms).
    pub fn renewal_check(mut self, every: std::time::Duration) -> Self {
        self.renewal_check = every.max(std::time::Duration::from_millis(10));
        self
    }
    /// Serve metrics on this address.
    pub fn metrics(mut self, metrics: Option<SocketAddr>) -> Self {
        self.metrics = metrics;
        self
    }
}

/// The ACME server's own directory inside a CA directory.
pub fn acme_dir(ca_dir: &Path) -> PathBuf {
    ca_dir.join("acme")
}

/// The configuration file of the ACME server of a CA directory (`DIR/acme.toml`).
pub fn config_path(ca_dir: &Path) -> PathBuf {
    ca_dir.join("acme.toml")
}

/// Run the ACME server until SIGINT or SIGTERM. `ready` is called once, with the bound
/// address, when the server accepts connections.
pub fn serve(opts: ServeOptions, ready: impl FnOnce(SocketAddr)) -> Result<(), ServerError> {
    // Refuse a directory that is not a CA before anything is created in it.
    let ca = tlskit_pki::ca::Ca::open(&opts.dir)?;
    let ca_key_id = ca_key_id(&opts.dir)?;
    let config = AcmeConfig::load(&config_path(&opts.dir))?;
    let acme = acme_dir(&opts.dir);
    let state = state::State::open(&acme)?;
    let service = Arc::new(service::Service::new(
        Arc::new(ca),
        ca_key_id,
        opts.dir.clone(),
        acme.clone(),
        config,
        validate::Ports {
            http: opts.validation_http_port,
            tls: opts.validation_tls_port,
            resolver: opts.resolver,
        },
        opts.clock.clone(),
        state,
        opts.listen.to_string(),
    ));
    // Expired state goes before the first request (and then every interval).
    service.sweep_if_due();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    rt.block_on(server::run(
        server::Run {
            service,
            listen: opts.listen,
            metrics: opts.metrics,
            server_names: opts.server_names,
            acme_dir: acme,
            renewal_check: opts.renewal_check,
        },
        ready,
    ))
}

/// Enrol an external account binding key under `kid` in the CA directory: a new random
/// 256-bit HMAC key, stored 0600 in `DIR/acme/eab/KID.key`, returned base64url (the only
/// time it is shown). An existing key id is refused.
pub fn eab_add(dir: &Path, kid: &str) -> Result<String, ServerError> {
    if !dir.join("ca.pem").is_file() {
        return Err(ServerError::file(
            dir,
            "not a CA directory (no ca.pem); create one with `tlskit ca init`",
        ));
    }
    if !state::valid_kid(kid) {
        return Err(ServerError::Config {
            path: dir.to_path_buf(),
            reason: format!(
                "the key id {:?} must be 1 to 64 letters, digits, - or _",
                problem::show(kid)
            ),
        });
    }
    let acme = acme_dir(dir);
    state::create_private_dir(&acme)?;
    let eab = acme.join("eab");
    state::create_private_dir(&eab)?;
    let mut key = [0u8; 32];
    aws_lc_rs::rand::fill(&mut key)
        .map_err(|_| ServerError::file(&eab, "the random generator failed"))?;
    let text = jws::b64url(&key);
    let path = eab.join(format!("{kid}.key"));
    tlskit_io::write_atomic(&path, format!("{text}\n").as_bytes(), true, false)
        .map_err(|e| ServerError::file(&path, e))?;
    Ok(text)
}

/// One enrolled external account binding key, as `ca eab list` shows it (never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EabEntry {
    /// The key id.
    pub kid: String,
    /// When it was enrolled (its key file's modification time), Unix seconds.
    pub created: i64,
}

/// The external account binding keys enrolled in the CA directory, by key id (none when
/// nothing was ever enrolled).
pub fn eab_list(dir: &Path) -> Result<Vec<EabEntry>, ServerError> {
    if !dir.join("ca.pem").is_file() {
        return Err(ServerError::file(
            dir,
            "not a CA directory (no ca.pem); create one with `tlskit ca init`",
        ));
    }
    let eab = acme_dir(dir).join("eab");
    let rd = match std::fs::read_dir(&eab) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ServerError::file(&eab, e)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| ServerError::file(&eab, e))?;
        let name = entry.file_name();
        let Some(kid) = name.to_str().and_then(|n| n.strip_suffix(".key")) else {
            continue; // temporary files of an interrupted enrolment, and anything else
        };
        if !state::valid_kid(kid) {
            continue;
        }
        let meta = entry
            .metadata()
            .map_err(|e| ServerError::file(entry.path(), e))?;
        let created = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        out.push(EabEntry {
            kid: kid.to_string(),
            created,
        });
    }
    out.sort_by(|a, b| a.kid.cmp(&b.kid));
    Ok(out)
}

/// The CA certificate's subjectKeyIdentifier (empty when it has none).
fn ca_key_id(dir: &Path) -> Result<Vec<u8>, ServerError> {
    use rustls::pki_types::pem::PemObject;
    use x509_parser::prelude::*;
    let path = dir.join("ca.pem");
    let pem = tlskit_io::read(&path, 1 << 20).map_err(|e| ServerError::file(&path, e))?;
    let der = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| ServerError::file(&path, "no certificate"))?;
    let (_, x) =
        X509Certificate::from_der(der.as_ref()).map_err(|e| ServerError::file(&path, e))?;
    for ext in x.extensions() {
        if let ParsedExtension::SubjectKeyIdentifier(k) = ext.parsed_extension() {
            return Ok(k.0.to_vec());
        }
    }
    Ok(Vec::new())
}
