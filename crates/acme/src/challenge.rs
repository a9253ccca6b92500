//! Answering the CA's validation: HTTP-01 (RFC 8555 §8.3) on a plain listener and
//! TLS-ALPN-01 (RFC 8737) on a TLS listener. Answers are published through the storage
//! ([`AcmeStorage::put_challenge`]) so that a shared backend lets any node of a fleet
//! answer; the TLS-ALPN-01 validation certificates (self-signed, the `acmeIdentifier`
//! extension holding SHA-256 of the key authorization, made with rcgen) are cached here.
//!
//! Nothing here waits on the storage on a runtime worker thread, and no handshake waits on
//! it at all: the rustls certificate resolver (synchronous) reads memory only. Answers
//! published by another node are fetched (on the blocking pool, with a deadline) only for
//! names this node manages, when a validation connection or request for such a name
//! arrives and the answer in memory is older than [`FETCHED_FOR`]; one fetch at a time
//! (concurrent validations wait for it, at most [`FETCH_WAIT`]), and a miss is remembered
//! for as long, so a flood of `acme-tls/1` handshakes costs at most one lookup per name
//! per period, and a name this node does not manage costs none. An answer this node published
//! itself is used until it withdraws it. A fetched answer is used for at most
//! [`FETCHED_FOR`]: the next authorization (a new key authorization, ordered by whichever
//! node) is fetched again, never answered with a stale validation certificate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::error::AcmeError;
use crate::storage::AcmeStorage;
use tlskit_tls::clock::Clock;
use tlskit_tls::log::Level;

/// The ALPN protocol of TLS-ALPN-01.
pub(crate) const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// How long an answer (or a miss) fetched from the storage is used before it is fetched
/// again: long enough for the CA's concurrent validations of one authorization (several
/// vantage points within milliseconds, waiting for one fetch) to share one lookup, far
/// shorter than the time from one order's validation to the next order's (finalize,
/// download, store, then a new authorization whose key authorization differs: about a
/// second even with 12-second certificates). The TLS-ALPN-01 handshake does not name
/// the token, so memory's answer cannot be checked against it: its age is what bounds
/// staleness. A flood of validation handshakes for a managed name costs at most five
/// lookups a second, one at a time.
pub(crate) const FETCHED_FOR: Duration = Duration::from_millis(200);

/// The longest a validation connection or request waits for a fetch from the storage (the
/// Redis storage's own deadline is [`crate::shared::OP_TIMEOUT`] per connect and command).
const FETCH_WAIT: Duration = Duration::from_secs(3);

/// One answer in memory.
struct Cached {
    /// The key authorization; None: the storage had none (a remembered miss).
    answer: Option<String>,
    /// The TLS-ALPN-01 validation certificate made from `answer`.
    cert: Option<Arc<CertifiedKey>>,
    /// Published by this node: used until withdrawn.
    local: bool,
    /// When it was fetched (or a fetch started: concurrent lookups wait for none).
    at: Instant,
}

/// Published challenge answers and the validation certificates made from them.
pub struct Challenges {
    storage: Arc<dyn AcmeStorage>,
    provider: Arc<CryptoProvider>,
    /// The names this node manages (`*.` wildcards as in [`crate::settings::covers`]): only their
    /// answers are ever fetched from the storage.
    names: Vec<String>,
    fetched_for: Duration,
    /// Keyed by the storage key (`http-01/TOKEN`, `tls-alpn-01/DOMAIN`).
    cache: Mutex<HashMap<String, Cached>>,
    /// Held while fetching: lookups meanwhile (a CA validates from several places at
    /// once) wait for that fetch, at most [`FETCH_WAIT`], instead of asking again.
    fetching: tokio::sync::Mutex<()>,
    /// How long a lookup waits for the storage ([`FETCH_WAIT`]; tests shorten it).
    fetch_wait: Duration,
    /// How old a fetched answer is (monotonic).
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Challenges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Challenges").finish_non_exhaustive()
    }
}

impl Challenges {
    /// `names`: the names this node manages (the only ones looked up in the storage).
    pub(crate) fn new(
        storage: Arc<dyn AcmeStorage>,
        provider: Arc<CryptoProvider>,
        names: &[String],
    ) -> Self {
        Self {
            storage,
            provider,
            names: names.to_vec(),
            fetched_for: FETCHED_FOR,
            cache: Mutex::new(HashMap::new()),
            fetching: tokio::sync::Mutex::new(()),
            fetch_wait: FETCH_WAIT,
            clock: tlskit_tls::clock::system(),
        }
    }

    /// The same, waiting at most `wait` for the storage (tests that must not spend
    /// [`FETCH_WAIT`] of real time).
    #[cfg(test)]
    pub(crate) fn with_fetch_wait(mut self, wait: Duration) -> Self {
        self.fetch_wait = wait;
        self
    }

    /// The same, with the age of fetched answers read from `clock`.
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn manages(&self, name: &str) -> bool {
        crate::settings::covers(&self.names, name)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        // A panic while holding it leaves a map that is still consistent.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publish through the storage, on the blocking pool.
    async fn publish(&self, key: String, answer: String) -> Result<(), AcmeError> {
        let s = self.storage.clone();
        tokio::task::spawn_blocking(move || s.put_challenge(&key, &answer))
            .await
            .map_err(|e| AcmeError::Config(e.to_string()))?
    }

    /// Withdraw from memory and (on the blocking pool, best effort) from the storage.
    async fn withdraw(&self, key: String) {
        self.cache().remove(&key);
        let s = self.storage.clone();
        let _ = tokio::time::timeout(
            self.fetch_wait,
            tokio::task::spawn_blocking(move || s.remove_challenge(&key)),
        )
        .await;
    }

    pub(crate) async fn set_http(&self, token: &str, key_auth: &str) -> Result<(), AcmeError> {
        let key = format!("http-01/{token}");
        self.cache().insert(
            key.clone(),
            Cached {
                answer: Some(key_auth.to_string()),
                cert: None,
                local: true,
                at: self.clock.instant(),
            },
        );
        self.publish(key, key_auth.to_string()).await
    }

    pub(crate) async fn clear_http(&self, token: &str) {
        self.withdraw(format!("http-01/{token}")).await;
    }

    pub(crate) async fn set_tls_alpn(&self, domain: &str, key_auth: &str) -> Result<(), AcmeError> {
        let ck = validation_cert(domain, key_auth, &self.provider)?;
        let key = format!("tls-alpn-01/{}", domain.to_ascii_lowercase());
        self.cache().insert(
            key.clone(),
            Cached {
                answer: Some(key_auth.to_string()),
                cert: Some(ck),
                local: true,
                at: self.clock.instant(),
            },
        );
        self.publish(key, key_auth.to_string()).await
    }

    pub(crate) async fn clear_tls_alpn(&self, domain: &str) {
        self.withdraw(format!("tls-alpn-01/{}", domain.to_ascii_lowercase()))
            .await;
    }

    /// What memory holds for `key` when it may be used as is: Some(answer) when this node
    /// published it or it was fetched less than `fetched_for` ago.
    fn usable(&self, key: &str) -> Option<(Option<String>, Option<Arc<CertifiedKey>>)> {
        let m = self.cache();
        let c = m.get(key)?;
        let age = self.clock.instant().saturating_duration_since(c.at);
        (c.local || age < self.fetched_for).then(|| (c.answer.clone(), c.cert.clone()))
    }

    /// Fetch `key` from the storage (blocking pool, at most [`FETCH_WAIT`]) and remember
    /// the answer, or the miss, for `fetched_for`. `domain`: make the TLS-ALPN-01
    /// validation certificate for it. One fetch at a time: a lookup that waited for
    /// another's takes its result.
    async fn fetch(&self, key: &str, domain: Option<&str>) -> Option<String> {
        // One deadline for waiting on another fetch and for this one.
        let deadline = tokio::time::Instant::now() + self.fetch_wait;
        let Ok(_one) = tokio::time::timeout_at(deadline, self.fetching.lock()).await else {
            return self.usable(key).and_then(|(a, _)| a);
        };
        if let Some((answer, _)) = self.usable(key) {
            return answer;
        }
        let s = self.storage.clone();
        let k = key.to_string();
        let got = tokio::time::timeout_at(
            deadline,
            tokio::task::spawn_blocking(move || s.challenge(&k)),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
        let mut m = self.cache();
        let c = m.entry(key.to_string()).or_insert(Cached {
            answer: None,
            cert: None,
            local: false,
            at: self.clock.instant(),
        });
        if c.local {
            // Published by this node meanwhile: that one wins.
            return c.answer.clone();
        }
        if got != c.answer || c.cert.is_none() {
            c.cert = match (&got, domain) {
                (Some(ka), Some(d)) => validation_cert(d, ka, &self.provider).ok(),
                _ => None,
            };
        }
        c.answer = got.clone();
        c.at = self.clock.instant();
        got
    }

    /// The HTTP-01 answer for `token`, asked with `Host: host`: from memory, else fetched
    /// when `host` is a name this node manages.
    async fn http_answer(&self, token: &str, host: &str) -> Option<String> {
        let key = format!("http-01/{token}");
        if let Some((answer, _)) = self.usable(&key) {
            return answer;
        }
        // `name:port`, `[v6]:port`, `[v6]`, or a name alone.
        let name = host
            .rsplit_once(':')
            .filter(|(n, p)| {
                p.bytes().all(|b| b.is_ascii_digit()) && (!n.contains(':') || n.ends_with(']'))
            })
            .map_or(host, |(n, _)| n);
        let name = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        if !self.manages(name) {
            return None;
        }
        self.fetch(&key, None).await
    }

    /// Before a validation handshake whose SNI is `sni` (a name, or the reverse-DNS name
    /// of an IP address, RFC 8738 section 6): make sure memory holds the current answer
    /// (fetched when the identifier is managed here and memory's is older than
    /// `fetched_for`). Waits at most [`FETCH_WAIT`], on no worker thread.
    pub(crate) async fn refresh_alpn(&self, sni: &str) {
        let domain = &crate::settings::sni_identifier(sni);
        let key = format!("tls-alpn-01/{}", domain.to_ascii_lowercase());
        if self.usable(&key).is_some() || !self.manages(domain) {
            return;
        }
        self.fetch(&key, Some(domain)).await;
    }

    /// The validation certificate for the identifier `sni` names (a name, or an IP
    /// address by its reverse-DNS name), from memory only (the resolver is called inside
    /// the handshake).
    fn alpn_cert(&self, sni: &str) -> Option<Arc<CertifiedKey>> {
        let domain = crate::settings::sni_identifier(sni);
        let key = format!("tls-alpn-01/{}", domain.to_ascii_lowercase());
        self.usable(&key)?.1
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
/// extension holding SHA-256(key authorization); for an IP address, its one SAN is that
/// address (RFC 8738 section 6).
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
/// validation handshake that was answered and closed. There is no third outcome (so not
/// `#[non_exhaustive]`): the server matches both.
pub enum Accepted<IO> {
    /// A TLS connection for the application.
    Tls(Box<tokio_rustls::server::TlsStream<IO>>),
    /// A validation handshake (ALPN `acme-tls/1`), answered and closed.
    Validation,
}

/// Accept one TLS connection on `io` (the server hands a stream whose ClientHello it has
/// already read within bounds). Without `acme` this is the plain acceptor; with it the
/// ClientHello is looked at first and a validation connection (ALPN `acme-tls/1` only)
/// gets the validation configuration, then is closed (RFC 8737 §3: no data follows).
pub async fn accept<IO>(
    io: IO,
    main: &Arc<ServerConfig>,
    acme: Option<(&Arc<ServerConfig>, &Arc<Challenges>)>,
) -> std::io::Result<Accepted<IO>>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Some((acme, challenges)) = acme else {
        let tls = tokio_rustls::TlsAcceptor::from(main.clone())
            .accept(io)
            .await?;
        return Ok(Accepted::Tls(Box::new(tls)));
    };
    let start =
        tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), io).await?;
    let hello = start.client_hello();
    if is_validation(&hello) {
        let name = hello.server_name().map(str::to_string);
        let sni = name.as_deref().map(crate::error::clean).unwrap_or_default();
        if let Some(name) = &name {
            // Bounded, on no worker thread; nothing for a name this node does not manage.
            challenges.refresh_alpn(name).await;
        }
        let mut s = start.into_stream(acme.clone()).await?;
        let _ = s.shutdown().await;
        tlskit_tls::ratelimit::event(
            tlskit_tls::ratelimit::Noisy::AcmeChallenge,
            Level::Info,
            "acme_tlsalpn01_answered",
            &[("sni", &sni)],
        );
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
        match ch.http_answer(token, &host).await {
            Some(ka) if method == "GET" || method == "HEAD" => {
                tlskit_tls::ratelimit::event(
                    tlskit_tls::ratelimit::Noisy::AcmeChallenge,
                    Level::Info,
                    "acme_http01_answered",
                    &[("host", &host)],
                );
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
    use crate::storage::FsStorage;

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
        let names = crate::settings::leaf_info(der).map(|i| i.names);
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
            &["a.test".to_string()],
        ));
        ch.set_http("tok", "tok.thumb")
            .await
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

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    /// SHA-256 of the key authorization a validation certificate carries.
    fn carried(ck: &CertifiedKey) -> Vec<u8> {
        let der = ck.cert.first().unwrap_or_else(|| panic!("no cert"));
        let (_, c) = x509_parser::parse_x509_certificate(der).unwrap_or_else(|e| panic!("{e}"));
        let oid = x509_parser::der_parser::oid!(1.3.6 .1 .5 .5 .7 .1 .31);
        let ext = c
            .extensions()
            .iter()
            .find(|e| e.oid == oid)
            .unwrap_or_else(|| panic!("no acmeIdentifier"));
        ext.value[2..].to_vec()
    }

    fn sha(s: &str) -> Vec<u8> {
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, s.as_bytes())
            .as_ref()
            .to_vec()
    }

    #[tokio::test]
    async fn answers_published_and_withdrawn() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
        let ch = Challenges::new(storage, provider(), &["a.test".to_string()]);
        ch.set_http("tok", "tok.thumb")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ch.http_answer("tok", "a.test").await.as_deref(),
            Some("tok.thumb")
        );
        assert_eq!(ch.http_answer("other", "a.test").await, None);
        ch.clear_http("tok").await;
        assert_eq!(ch.http_answer("tok", "a.test").await, None);
        ch.set_tls_alpn("a.test", "x.y")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(ch.alpn_cert("a.test").is_some());
        assert!(ch.alpn_cert("b.test").is_none());
        ch.clear_tls_alpn("a.test").await;
        assert!(ch.alpn_cert("a.test").is_none());
    }

    /// Gap found in review of issue 17: a node that fetched another node's TLS-ALPN-01
    /// answer kept its validation certificate forever and served it at the next
    /// authorization (another key authorization, ordered by another node).
    #[tokio::test]
    async fn a_fetched_answer_is_not_served_at_the_next_authorization() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
        let names = ["a.test".to_string()];
        // Two nodes sharing the storage: `orderer` publishes, `other` answers the CA.
        let orderer = Challenges::new(storage.clone(), provider(), &names);
        let clock = Arc::new(tlskit_tls::ManualClock::at_unix(1_800_000_000));
        let mut other =
            Challenges::new(storage.clone(), provider(), &names).with_clock(clock.clone());
        other.fetched_for = Duration::from_millis(100);
        orderer
            .set_tls_alpn("a.test", "first.thumb")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(other.alpn_cert("a.test").is_none(), "memory only");
        other.refresh_alpn("a.test").await;
        let ck = other
            .alpn_cert("a.test")
            .unwrap_or_else(|| panic!("fetched"));
        assert_eq!(carried(&ck), sha("first.thumb"));
        orderer.clear_tls_alpn("a.test").await;
        // The next authorization, published (by whichever node) with another key
        // authorization.
        orderer
            .set_tls_alpn("a.test", "second.thumb")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(other.alpn_cert("a.test").is_some(), "fetched 0 ms ago");
        clock.advance(Duration::from_millis(99));
        assert!(other.alpn_cert("a.test").is_some(), "fetched 99 ms ago");
        clock.advance(Duration::from_millis(1));
        assert!(
            other.alpn_cert("a.test").is_none(),
            "an old fetched answer is not used"
        );
        // The CA validates from several places at once: every one of them is answered
        // (lookups during a fetch wait for it).
        let validate = || async {
            other.refresh_alpn("a.test").await;
            other.alpn_cert("a.test")
        };
        let (x, y, z) = tokio::join!(validate(), validate(), validate());
        assert!(x.is_some() && y.is_some() && z.is_some());
        let ck = other
            .alpn_cert("a.test")
            .unwrap_or_else(|| panic!("fetched again"));
        assert_eq!(carried(&ck), sha("second.thumb"), "stale validation cert");
        // Withdrawn everywhere: no answer once the fetched one is old.
        orderer.clear_tls_alpn("a.test").await;
        clock.advance(Duration::from_millis(100));
        other.refresh_alpn("a.test").await;
        assert!(other.alpn_cert("a.test").is_none());
        // A name this node does not manage is never looked up.
        storage
            .put_challenge("tls-alpn-01/b.test", "b.thumb")
            .unwrap_or_else(|e| panic!("{e}"));
        other.refresh_alpn("b.test").await;
        assert!(other.alpn_cert("b.test").is_none());
    }

    /// A storage that answers nothing (Redis dropping packets) until the test drops the
    /// sender of `release` (at its end, or when it panics), at most 20 s.
    struct BlackHole {
        asked: std::sync::atomic::AtomicUsize,
        release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    }
    impl AcmeStorage for BlackHole {
        fn load_account(&self, _: &str) -> Result<Option<Vec<u8>>, AcmeError> {
            Ok(None)
        }
        fn store_account(&self, _: &str, _: &[u8]) -> Result<(), AcmeError> {
            Ok(())
        }
        fn load_cert(&self, _: &str) -> Result<Option<crate::storage::StoredCert>, AcmeError> {
            Ok(None)
        }
        fn store_cert(&self, _: &str, _: &crate::storage::StoredCert) -> Result<(), AcmeError> {
            Ok(())
        }
        fn put_challenge(&self, _: &str, _: &str) -> Result<(), AcmeError> {
            Ok(())
        }
        fn challenge(&self, _: &str) -> Option<String> {
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = self
                .release
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .recv_timeout(Duration::from_secs(20));
            None
        }
        fn remove_challenge(&self, _: &str) {}
        fn lock(
            &self,
            _: &str,
            _: Duration,
        ) -> Result<Box<dyn crate::storage::IssuanceLock>, AcmeError> {
            Err(AcmeError::Config("no".into()))
        }
        fn dns_records(&self, _: &str) -> Result<Vec<crate::storage::DnsRecord>, AcmeError> {
            Ok(Vec::new())
        }
        fn set_dns_records(
            &self,
            _: &str,
            _: &[crate::storage::DnsRecord],
        ) -> Result<(), AcmeError> {
            Ok(())
        }
    }

    /// A storage that never answers: lookups for names not managed here cost nothing, a
    /// managed name waits at most the fetch wait once per period, and the runtime's
    /// (single) worker thread is never held. The wait is 500 ms here (3 s in service).
    #[tokio::test(flavor = "current_thread")]
    async fn a_silent_storage_holds_no_worker_thread() {
        let wait = Duration::from_millis(500);
        let (_release, silent) = std::sync::mpsc::channel();
        let hole = Arc::new(BlackHole {
            asked: std::sync::atomic::AtomicUsize::new(0),
            release: std::sync::Mutex::new(silent),
        });
        let storage: Arc<dyn AcmeStorage> = hole.clone();
        let ch = Arc::new(
            Challenges::new(storage, provider(), &["a.test".to_string()]).with_fetch_wait(wait),
        );
        let t0 = Instant::now();
        for i in 0..50 {
            ch.refresh_alpn(&format!("n{i}.other.test")).await;
            assert_eq!(ch.http_answer("t", &format!("n{i}.other.test")).await, None);
        }
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(hole.asked.load(std::sync::atomic::Ordering::Relaxed), 0);
        // A managed name: one bounded lookup; meanwhile the worker thread keeps running.
        let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        };
        let t0 = Instant::now();
        ch.refresh_alpn("a.test").await;
        let waited = t0.elapsed();
        assert!(
            waited >= wait && waited <= wait + Duration::from_millis(500),
            "{waited:?}"
        );
        // A held worker would tick at most once (after the wait); 50 ticks fit in it.
        assert!(
            ticks.load(std::sync::atomic::Ordering::Relaxed) > 10,
            "the worker thread was held"
        );
        // The miss is remembered: the next handshakes do not wait.
        let t0 = Instant::now();
        for _ in 0..20 {
            ch.refresh_alpn("a.test").await;
        }
        assert!(t0.elapsed() < Duration::from_millis(100));
        assert!(ch.alpn_cert("a.test").is_none());
        assert_eq!(hole.asked.load(std::sync::atomic::Ordering::Relaxed), 1);
        ticker.abort();
    }
}
