//! A `rediss://` server's certificate checked with tlskit's verifier, under the profile
//! and allowed rules of `--shared-state-ca-profile` / `--shared-state-ca-allow`.
//!
//! The redis crate makes its TLS connections itself and verifies them with rustls's own
//! webpki verifier, which takes no custom verifier. So before each new connection to a
//! `rediss://` server, the node makes one TLS handshake of its own to the same address with
//! [`tlskit_verify::StoreServerVerifier`] on the same anchors (`--shared-state-ca`, else the
//! system's roots), and connects only when tlskit accepts the server's chain. Connections
//! are long-lived (one multiplexed connection, one subscription, one for the ACME state),
//! so this costs one handshake per (re)connection. [`client_config`] is that client's
//! configuration: a Redis client that makes its own TLS connections uses it directly.

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{StoreServerVerifier, VerifierConfig};

use crate::error::NetError;
use crate::shared::SharedSettings;

/// The TLS client configuration for a `rediss://` server: tlskit's verifier on
/// `--shared-state-ca` (else the system's roots), under the settings' profile and allowed
/// rules.
pub(crate) fn client_config(s: &SharedSettings) -> Result<rustls::ClientConfig, NetError> {
    let sources = match &s.ca {
        Some(p) => vec![Source::File(p.clone())],
        None => vec![Source::System],
    };
    let (handle, report) =
        StoreHandle::new(sources).map_err(|e| NetError::Store(format!("shared-state CA: {e}")))?;
    if handle.current().is_empty() {
        let why = report
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no certificates".into());
        return Err(NetError::Store(format!(
            "shared-state CA: nothing loadable ({why})"
        )));
    }
    let verifier = StoreServerVerifier::new(
        Arc::new(handle),
        VerifierConfig {
            profile: s.ca_profile,
            allow: s.ca_allow.clone(),
            ..VerifierConfig::default()
        },
    );
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous() // not a bypass: tlskit's own verifier on the given anchors
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// The check of one `rediss://` server.
pub(crate) struct TlsCheck {
    host: String,
    port: u16,
    name: ServerName<'static>,
    config: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for TlsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsCheck")
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl TlsCheck {
    /// The check for the server `client` connects to; `None` for a plain `redis://` URL.
    pub(crate) fn new(
        s: &SharedSettings,
        client: &redis::Client,
    ) -> Result<Option<Arc<Self>>, NetError> {
        let redis::ConnectionAddr::TcpTls { host, port, .. } = client.get_connection_info().addr()
        else {
            return Ok(None);
        };
        let config = client_config(s)?;
        let name = ServerName::try_from(host.clone()).map_err(|_| {
            NetError::Config(format!(
                "--shared-state: {} is not a host name or an IP address",
                tlskit_x509::text::escape(host)
            ))
        })?;
        Ok(Some(Arc::new(Self {
            host: host.clone(),
            port: *port,
            name,
            config: Arc::new(config),
        })))
    }

    /// One handshake with the server within `limit`; `Err` says why in words (tlskit's
    /// refusal sentence when the certificate was refused). Blocking.
    pub(crate) fn check_blocking(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.host))?
            .next()
            .ok_or_else(|| format!("{} resolves to no address", self.host))?;
        let mut sock =
            TcpStream::connect_timeout(&addr, limit).map_err(|e| format!("TCP connect: {e}"))?;
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or("TLS handshake timed out")?;
        sock.set_read_timeout(Some(left))
            .and_then(|()| sock.set_write_timeout(Some(left)))
            .map_err(|e| format!("TCP connect: {e}"))?;
        let mut conn = rustls::ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| crate::error::tls_text(&e))?;
        while conn.is_handshaking() {
            if Instant::now() >= deadline {
                return Err("TLS handshake timed out".into());
            }
            conn.complete_io(&mut sock)
                .map_err(|e| format!("TLS handshake: {}", crate::error::io_tls_text(&e)))?;
        }
        conn.send_close_notify();
        let _ = conn.complete_io(&mut sock);
        Ok(())
    }

    /// [`Self::check_blocking`] on the blocking pool.
    pub(crate) async fn check(self: &Arc<Self>, limit: Duration) -> Result<(), String> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.check_blocking(limit))
            .await
            .map_err(|e| format!("TLS check did not finish: {e}"))?
    }
}
