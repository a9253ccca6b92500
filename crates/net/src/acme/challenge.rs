//! Answering the CA's validation: HTTP-01 (RFC 8555 §8.3) on a plain listener and
//! TLS-ALPN-01 (RFC 8737) on a TLS listener. Answers are published through the storage
//! ([`AcmeStorage::put_challenge`]) so that a shared backend lets any node of a fleet
//! answer; the TLS-ALPN-01 validation certificates (self-signed, the `acmeIdentifier`
//! extension holding SHA-256 of the key authorization, made with rcgen) are cached here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::storage::AcmeStorage;
use super::AcmeError;
use crate::log::{self, Level};

/// The ALPN protocol of TLS-ALPN-01.
pub(crate) const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Published challenge answers and the validation certificates made from them.
pub(crate) struct Challenges {
    storage: Arc<dyn AcmeStorage>,
    provider: Arc<CryptoProvider>,
    alpn_certs: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for Challenges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Challenges").finish_non_exhaustive()
    }
}

impl Challenges {
    pub(crate) fn new(storage: Arc<dyn AcmeStorage>, provider: Arc<CryptoProvider>) -> Self {
        Self {
            storage,
            provider,
            alpn_certs: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn set_http(&self, token: &str, key_auth: &str) -> Result<(), AcmeError> {
        self.storage
            .put_challenge(&format!("http-01/{token}"), key_auth)
    }

    pub(crate) fn clear_http(&self, token: &str) {
        self.storage.remove_challenge(&format!("http-01/{token}"));
    }

    pub(crate) fn set_tls_alpn(&self, domain: &str, key_auth: &str) -> Result<(), AcmeError> {
        let ck = validation_cert(domain, key_auth, &self.provider)?;
        self.storage
            .put_challenge(&format!("tls-alpn-01/{domain}"), key_auth)?;
        if let Ok(mut m) = self.alpn_certs.lock() {
            m.insert(domain.to_string(), ck);
        }
        Ok(())
    }

    pub(crate) fn clear_tls_alpn(&self, domain: &str) {
        self.storage
            .remove_challenge(&format!("tls-alpn-01/{domain}"));
        if let Ok(mut m) = self.alpn_certs.lock() {
            m.remove(domain);
        }
    }

    fn http_answer(&self, token: &str) -> Option<String> {
        self.storage.challenge(&format!("http-01/{token}"))
    }

    fn alpn_cert(&self, domain: &str) -> Option<Arc<CertifiedKey>> {
        if let Some(ck) = self.alpn_certs.lock().ok()?.get(domain) {
            return Some(ck.clone());
        }
        // Published by another node sharing the storage.
        let ka = self.storage.challenge(&format!("tls-alpn-01/{domain}"))?;
        let ck = validation_cert(domain, &ka, &self.provider).ok()?;
        if let Ok(mut m) = self.alpn_certs.lock() {
            m.insert(domain.to_string(), ck.clone());
        }
        Some(ck)
    }

    /// The rustls configuration that answers TLS-ALPN-01: only `acme-tls/1`, only
    /// validation certificates.
    pub(crate) fn tls_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>, AcmeError> {
        let mut cfg = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(AcmeError::Tls)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(ChallengeResolver(self.clone())));
        cfg.alpn_protocols = vec![ACME_TLS_ALPN.to_vec()];
        Ok(Arc::new(cfg))
    }
}

/// RFC 8737 §3: a self-signed certificate for `domain` with the critical acmeIdentifier
/// extension holding SHA-256(key authorization).
fn validation_cert(
    domain: &str,
    key_auth: &str,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, AcmeError> {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, key_auth.as_bytes());
    let mut params = rcgen::CertificateParams::new(vec![domain.to_string()])
        .map_err(|e| AcmeError::Config(format!("{domain}: {e}")))?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest.as_ref())];
    let key = rcgen::KeyPair::generate().map_err(|e| AcmeError::Config(e.to_string()))?;
    let cert = params
        .self_signed(&key)
        .map_err(|e| AcmeError::Config(e.to_string()))?;
    let der = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(AcmeError::Tls)?;
    Ok(Arc::new(CertifiedKey::new(
        vec![cert.der().clone()],
        signing,
    )))
}

#[derive(Debug)]
struct ChallengeResolver(Arc<Challenges>);

impl ResolvesServerCert for ChallengeResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.alpn_cert(hello.server_name()?)
    }
}

/// True when the ClientHello offers exactly `acme-tls/1` (a validation connection).
pub(crate) fn is_validation(hello: &ClientHello<'_>) -> bool {
    let Some(mut alpn) = hello.alpn() else {
        return false;
    };
    alpn.next() == Some(ACME_TLS_ALPN) && alpn.next().is_none()
}

/// What the server's TLS accept returns: a connection to serve, or a TLS-ALPN-01
/// validation handshake that was answered and closed.
pub(crate) enum Accepted<IO> {
    Tls(Box<tokio_rustls::server::TlsStream<IO>>),
    Validation,
}

/// Accept one TLS connection on `io` (the server hands a stream whose ClientHello it has
/// already read within bounds). Without `acme` this is the plain acceptor; with it the
/// ClientHello is looked at first and a validation connection (ALPN `acme-tls/1` only)
/// gets the validation configuration, then is closed (RFC 8737 §3: no data follows).
pub(crate) async fn accept<IO>(
    io: IO,
    main: &Arc<ServerConfig>,
    acme: Option<&Arc<ServerConfig>>,
) -> std::io::Result<Accepted<IO>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Some(acme) = acme else {
        let tls = tokio_rustls::TlsAcceptor::from(main.clone())
            .accept(io)
            .await?;
        return Ok(Accepted::Tls(Box::new(tls)));
    };
    let start =
        tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), io).await?;
    let hello = start.client_hello();
    if is_validation(&hello) {
        let sni = hello.server_name().map(super::clean).unwrap_or_default();
        let mut s = start.into_stream(acme.clone()).await?;
        let _ = s.shutdown().await;
        log::event(Level::Info, "acme_tlsalpn01_answered", &[("sni", &sni)]);
        return Ok(Accepted::Validation);
    }
    Ok(Accepted::Tls(Box::new(
        start.into_stream(main.clone()).await?,
    )))
}

/// Serve TLS-ALPN-01 validations only (`tlskit acme issue --tls-listen`).
pub(crate) async fn tls_alpn_loop(l: TcpListener, cfg: Arc<ServerConfig>) {
    loop {
        let Ok((tcp, _)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let cfg = cfg.clone();
        tokio::spawn(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
            if let Ok(Ok(mut s)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
            {
                let _ = s.shutdown().await;
            }
        });
    }
}

/// Where the plain HTTP listener sends what is not a challenge.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HttpOther {
    /// 404.
    NotFound,
    /// 301 to `https://HOST[:port]/path` (the port left out when 443).
    Redirect(u16),
}

const CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// Plain HTTP: challenge answers, everything else redirected (or 404).
pub(crate) async fn http_loop(
    l: TcpListener,
    ch: Arc<Challenges>,
    other: HttpOther,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            r = l.accept() => r,
            _ = stop.changed() => return,
        };
        let Ok((c, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let ch = ch.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), http_one(c, &ch, other)).await;
        });
    }
}

async fn http_one(mut c: TcpStream, ch: &Challenges, other: HttpOther) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    // One bounded request head.
    loop {
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        if buf.len() > 8192 {
            c.write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await?;
            return c.shutdown().await;
        }
        let n = c.read_buf(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut lines = head.split("\r\n");
    let request = lines.next().unwrap_or("");
    let mut parts = request.split(' ');
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("/");
    let host = lines
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("host").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let resp = if let Some(token) = path.strip_prefix(CHALLENGE_PREFIX) {
        match ch.http_answer(token) {
            Some(ka) if method == "GET" || method == "HEAD" => {
                log::event(Level::Info, "acme_http01_answered", &[("host", &host)]);
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                    ka.len(),
                    if method == "GET" { ka.as_str() } else { "" }
                )
            }
            _ => not_found(),
        }
    } else {
        match other {
            HttpOther::NotFound => not_found(),
            HttpOther::Redirect(port) => {
                // Host: the name only (a port, if any, is the plain listener's).
                let name = host
                    .rsplit_once(':')
                    .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(']'))
                    .map_or(host.as_str(), |(n, _)| n);
                let ok = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-.[]:".contains(&b));
                let safe_path = path.starts_with('/') && path.bytes().all(|b| b.is_ascii_graphic());
                if ok && safe_path {
                    let port = if port == 443 {
                        String::new()
                    } else {
                        format!(":{port}")
                    };
                    format!(
                        "HTTP/1.1 301 Moved Permanently\r\nLocation: https://{name}{port}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                } else {
                    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_string()
                }
            }
        }
    };
    c.write_all(resp.as_bytes()).await?;
    c.shutdown().await
}

fn not_found() -> String {
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acme::storage::FsStorage;

    #[test]
    fn validation_certificate_carries_the_critical_acme_identifier() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let ck =
            validation_cert("a.test", "token.thumb", &provider).unwrap_or_else(|e| panic!("{e}"));
        let der = ck.cert.first().unwrap_or_else(|| panic!("no cert"));
        let (_, c) = x509_parser::parse_x509_certificate(der).unwrap_or_else(|e| panic!("{e}"));
        let oid = x509_parser::der_parser::oid!(1.3.6 .1 .5 .5 .7 .1 .31);
        let ext = c
            .extensions()
            .iter()
            .find(|e| e.oid == oid)
            .unwrap_or_else(|| panic!("no acmeIdentifier"));
        assert!(ext.critical);
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b"token.thumb");
        // OCTET STRING (0x04, 32) holding the digest.
        assert_eq!(&ext.value[..2], &[0x04, 0x20]);
        assert_eq!(&ext.value[2..], digest.as_ref());
        let names = crate::acme::leaf_info(der).map(|i| i.names);
        assert_eq!(names, Some(vec!["a.test".to_string()]));
    }

    async fn ask(addr: std::net::SocketAddr, req: &[u8]) -> String {
        let mut c = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = c.write_all(req).await;
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn http01_answers_redirects_and_bounds() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
        let ch = Arc::new(Challenges::new(
            storage,
            Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        ));
        ch.set_http("tok", "tok.thumb")
            .unwrap_or_else(|e| panic!("{e}"));
        let l = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = l.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (_tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(http_loop(l, ch, HttpOther::Redirect(8443), rx));
        let r = ask(
            addr,
            b"GET /.well-known/acme-challenge/tok HTTP/1.1\r\nHost: a.test\r\n\r\n",
        )
        .await;
        assert!(
            r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\ntok.thumb"),
            "{r}"
        );
        let r = ask(
            addr,
            b"GET /.well-known/acme-challenge/other HTTP/1.1\r\nHost: a.test\r\n\r\n",
        )
        .await;
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
        let r = ask(addr, b"GET /p?q HTTP/1.1\r\nhost: A.test:80\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 301"), "{r}");
        assert!(
            r.contains("\r\nLocation: https://A.test:8443/p?q\r\n"),
            "{r}"
        );
        // Hostile Host headers and paths are refused, never echoed.
        let r = ask(addr, b"GET / HTTP/1.1\r\nHost: a.test\x1b[2J\r\n\r\n").await;
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = ask(addr, b"GET /a\rLocation:x HTTP/1.1\r\nHost: a.test\r\n\r\n").await;
        assert!(
            r.starts_with("HTTP/1.1 400") || r.starts_with("HTTP/1.1 301"),
            "{r}"
        );
        assert!(!r.contains("Location:x"), "{r}");
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', 9000));
        let r = ask(addr, &long).await;
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    }

    #[test]
    fn answers_published_and_withdrawn() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
        let ch = Challenges::new(
            storage,
            Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        );
        ch.set_http("tok", "tok.thumb")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ch.http_answer("tok").as_deref(), Some("tok.thumb"));
        assert_eq!(ch.http_answer("other"), None);
        ch.clear_http("tok");
        assert_eq!(ch.http_answer("tok"), None);
        ch.set_tls_alpn("a.test", "x.y")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(ch.alpn_cert("a.test").is_some());
        assert!(ch.alpn_cert("b.test").is_none());
        ch.clear_tls_alpn("a.test");
        assert!(ch.alpn_cert("a.test").is_none());
    }
}
