//! The functions over the terminator's optional services (types in `optional`):
//! ACME (feature `acme`, crate `tlskit-acme`) and the fleet's shared state on Redis
//! (feature `fleet`, crate `tlskit-fleet`). Without a feature its types are empty enums:
//! a configuration cannot hold them (`ServeConfig::acme` and `shared_state` are always
//! `None`), so the code that uses them compiles to nothing.

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::ServerConfig;
use tlskit_tls::{Clock, NetError};

use crate::metrics::Metrics;
use crate::optional::{AcmeSettings, Managed, ServerAcme, SharedSettings, SharedTickets};

/// The ranges of the services' own numbers (issue 27): `shared_state_reread`,
/// `acme_recheck`, `acme_retry`.
pub(crate) fn check_ranges(
    acme: Option<&AcmeSettings>,
    shared: Option<&SharedSettings>,
) -> Result<(), NetError> {
    #[cfg(feature = "fleet")]
    if let Some(s) = shared {
        crate::config::ranges::SHARED_STATE_REREAD.duration(s.reread)?;
    }
    #[cfg(not(feature = "fleet"))]
    if let Some(s) = shared {
        match *s {}
    }
    #[cfg(feature = "acme")]
    if let Some(a) = acme {
        crate::config::ranges::ACME_RECHECK.duration(a.recheck)?;
        crate::config::ranges::ACME_RETRY.duration(a.retry_base)?;
    }
    #[cfg(not(feature = "acme"))]
    if let Some(a) = acme {
        match *a {}
    }
    Ok(())
}

/// Start the fleet's ticket-key sync when `--shared-state` is on.
pub(crate) fn shared_tickets(
    s: Option<&SharedSettings>,
    rotation: Duration,
    clock: &Arc<dyn Clock>,
) -> Result<Option<Arc<SharedTickets>>, NetError> {
    match s {
        #[cfg(feature = "fleet")]
        Some(s) => Ok(Some(SharedTickets::start_with_clock(
            s,
            rotation,
            clock.clone(),
        )?)),
        #[cfg(not(feature = "fleet"))]
        Some(s) => {
            let _ = (rotation, clock);
            match *s {}
        }
        None => Ok(None),
    }
}

/// Run the fleet's ticket-key sync until `stop` changes.
pub(crate) fn spawn_shared(t: &Arc<SharedTickets>, stop: tokio::sync::watch::Receiver<bool>) {
    #[cfg(feature = "fleet")]
    tokio::spawn(t.clone().run(stop));
    #[cfg(not(feature = "fleet"))]
    {
        let _ = stop;
        match **t {}
    }
}

/// `serve`'s ACME part, when `--acme` is on: the plain HTTP listener bound, the storage
/// opened (the fleet's Redis with `--shared-state`), a stored certificate loaded.
pub(crate) fn acme_for_config(
    acme: Option<&AcmeSettings>,
    http_listen: Option<std::net::SocketAddr>,
    shared_state: Option<&SharedSettings>,
    compress: &[tlskit_tls::Compression],
    provider: &Arc<CryptoProvider>,
    metrics: &Arc<Metrics>,
    clock: &Arc<dyn Clock>,
) -> Result<Option<ServerAcme>, NetError> {
    let Some(settings) = acme else {
        if http_listen.is_some() {
            return Err(NetError::Config(
                "a plain HTTP listener is only used with ACME".into(),
            ));
        }
        return Ok(None);
    };
    #[cfg(feature = "acme")]
    {
        let http = match http_listen {
            Some(a) => Some(tlskit_tls::sock::listener(a, 1024)?),
            None => None,
        };
        let storage: Option<Arc<dyn tlskit_acme::AcmeStorage>> = match shared_state {
            #[cfg(feature = "fleet")]
            Some(s) => Some(Arc::new(
                tlskit_fleet::RedisAcmeStorage::open(s)
                    .map_err(|e| tlskit_acme::AcmeError::Config(e.to_string()))?,
            )),
            #[cfg(not(feature = "fleet"))]
            Some(s) => match *s {},
            None => None,
        };
        let events: Arc<dyn tlskit_acme::manager::AcmeEvents> = metrics.clone();
        Ok(Some(ServerAcme::prepare_with_clock(
            settings.clone(),
            http,
            provider.clone(),
            events,
            compress.to_vec(),
            storage,
            clock.clone(),
        )?))
    }
    #[cfg(not(feature = "acme"))]
    {
        let _ = (shared_state, compress, provider, metrics, clock);
        match *settings {}
    }
}

/// The certificate ACME serves for its names, when ACME is on.
pub(crate) fn managed(a: &ServerAcme) -> Arc<Managed> {
    #[cfg(feature = "acme")]
    return a.managed.clone();
    #[cfg(not(feature = "acme"))]
    match *a {}
}

/// Start ACME's renewal task and its plain HTTP listener (redirecting to `https_port`).
pub(crate) fn start_acme(
    a: &ServerAcme,
    stop: tokio::sync::watch::Receiver<bool>,
    https_port: u16,
) -> std::io::Result<()> {
    #[cfg(feature = "acme")]
    return a.start(stop, https_port);
    #[cfg(not(feature = "acme"))]
    {
        let _ = (stop, https_port);
        match *a {}
    }
}

/// What [`accept`] made of a connection.
pub(crate) enum Accepted<IO> {
    /// A TLS connection for the application.
    Tls(Box<tokio_rustls::server::TlsStream<IO>>),
    /// An ACME TLS-ALPN-01 validation handshake, answered and closed.
    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    Validation,
}

/// Accept one TLS connection on `io`; with ACME's TLS-ALPN-01 on, a validation handshake
/// (ALPN `acme-tls/1` only) is answered with the validation certificate and closed.
pub(crate) async fn accept<IO>(
    io: IO,
    main: &Arc<ServerConfig>,
    acme: Option<&ServerAcme>,
) -> std::io::Result<Accepted<IO>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    #[cfg(feature = "acme")]
    {
        let alpn = acme.and_then(|a| Some((a.alpn_config.as_ref()?, &a.challenges)));
        Ok(match tlskit_acme::accept(io, main, alpn).await? {
            tlskit_acme::Accepted::Tls(t) => Accepted::Tls(t),
            tlskit_acme::Accepted::Validation => Accepted::Validation,
        })
    }
    #[cfg(not(feature = "acme"))]
    {
        if let Some(a) = acme {
            match *a {}
        }
        let tls = tokio_rustls::TlsAcceptor::from(main.clone())
            .accept(io)
            .await?;
        Ok(Accepted::Tls(Box::new(tls)))
    }
}
