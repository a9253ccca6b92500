//! `tlskit connect`: an s_client-like client. It verifies the server against a trust
//! store with tlskit's verifier, but through a *recording* wrapper: a verification
//! failure is remembered instead of aborting the handshake, so the report can say what
//! the server sent and why it was refused. The caller must not send application data
//! on such a connection; [`Connected::relay_stdio`] refuses to.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, HandshakeKind, SignatureScheme};
use tlskit_store::{Source, StoreHandle};
use tlskit_verify::names::ReferenceName;
use tlskit_verify::{Profile, Rule, StoreServerVerifier, VerifierConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::starttls::Starttls;
use tlskit_tls::NetError;
use tlskit_tls::{version_name, TlsVersion};

/// What to connect to and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The server and how it is verified (shared with `probe`).
    pub peer: PeerOptions,
    /// ALPN protocols to offer.
    pub alpn: Vec<String>,
    /// Client certificate chain and key.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Connect twice, offering the first session for resumption on the second; the
    /// report describes the second connection.
    pub reconnect: bool,
}

impl ConnectOptions {
    /// A connection to `peer`: no ALPN, no client certificate, one connection.
    pub fn new(peer: PeerOptions) -> Self {
        Self {
            peer,
            alpn: Vec::new(),
            client_cert: None,
            reconnect: false,
        }
    }
}

/// What `connect` and `probe` share: the server to reach, the name to verify against
/// which trust store and rules, the versions to offer and how long to wait.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PeerOptions {
    /// HOST:PORT (`[v6]:PORT` for IPv6 literals).
    pub target: String,
    /// Name to send as SNI and verify; default: HOST.
    pub server_name: Option<String>,
    /// Trust store sources (default: the system store).
    pub roots: Vec<Source>,
    /// Versions to offer (empty: 1.3 and 1.2).
    pub versions: Vec<TlsVersion>,
    /// Limit for the TCP connect and for the handshake, each.
    pub timeout: Duration,
    /// Plain-text protocol to upgrade with STARTTLS before the handshake (each
    /// connection); the dance has `timeout` of its own.
    pub starttls: Option<Starttls>,
    /// How the server's chain is verified: the profile (default `browser`).
    pub profile: Profile,
    /// Rules lifted by name (`--allow`).
    pub allow: Vec<Rule>,
}

impl PeerOptions {
    /// `target` with the defaults: system store, TLS 1.3 and 1.2, 10 s, no STARTTLS,
    /// profile `browser`.
    pub fn new(target: impl Into<String>) -> Self {
        Self {
            target: target.into(),
            server_name: None,
            roots: Vec::new(),
            versions: Vec::new(),
            timeout: Duration::from_secs(10),
            starttls: None,
            profile: Profile::default(),
            allow: Vec::new(),
        }
    }
}

/// Negotiated parameters, as printed by `tlskit connect`.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct ConnectReport {
    /// HOST:PORT as given.
    pub target: String,
    /// The address connected to.
    pub peer: String,
    /// The reference name (A-labels) sent as SNI and verified.
    pub server_name: String,
    /// Protocol upgraded with STARTTLS before the handshake (`smtp`, `imap`, `pop3`), if any.
    pub starttls: Option<String>,
    /// `TLSv1.3` / `TLSv1.2`.
    pub tls_version: String,
    /// IANA name of the cipher suite.
    pub cipher_suite: String,
    /// Key exchange group (kept for scripts; `key_exchange_group` says the same).
    pub key_exchange: Option<String>,
    /// Group, HelloRetryRequest and key-share sizes of the handshake.
    #[serde(flatten)]
    pub kx: crate::kx::KeyExchange,
    /// Whole days until the server certificate's notAfter (negative once expired).
    pub expires_in_days: Option<i64>,
    /// Negotiated ALPN protocol.
    pub alpn: Option<String>,
    /// Whether the session was resumed.
    pub resumed: bool,
    /// Whether the server's chain verified for `server_name`.
    pub verified: bool,
    /// Why verification failed.
    pub reason: Option<String>,
    /// The stable code of `reason` (`aki-missing`, `unknown-issuer`, ...), as in `verify`.
    pub rule: Option<&'static str>,
    /// Subjects from leaf to trust anchor when verified; otherwise the chain as sent.
    pub chain: Vec<String>,
    /// Rules the verified chain breaks that the profile reports rather than refuses
    /// (the `browser` profile's warnings); empty when none, when refused, and on a
    /// resumed session (the verifier did not run).
    pub warnings: Vec<tlskit_verify::Violation>,
    /// Number of certificates the server sent.
    pub presented_certs: usize,
    /// DER bytes of the certificates the server sent (uncompressed).
    pub presented_bytes: usize,
    /// Time for the TCP connect (SYN to SYN-ACK), milliseconds.
    pub tcp_connect_ms: f64,
    /// Time from the first ClientHello byte to the end of the handshake, milliseconds.
    pub handshake_ms: f64,
}

/// Most trust-source problems named one by one (the rest are counted).
const MAX_ROOTS_WARNINGS: usize = 5;

/// The `rule` when the server sent no certificate.
pub(crate) const NO_CERTIFICATE: &str = "no-certificate";

/// What the recording verifier saw: the verified chain or the reason, and what was sent.
#[derive(Debug, Default)]
pub(crate) struct Record {
    pub(crate) verified: Option<Vec<CertificateDer<'static>>>,
    pub(crate) error: Option<String>,
    /// The stable code of `error` (`VerifyError::rule`).
    pub(crate) rule: Option<&'static str>,
    pub(crate) presented: Vec<CertificateDer<'static>>,
    /// The verified chain's warnings.
    pub(crate) warnings: Vec<tlskit_verify::Violation>,
}

/// Verifies with tlskit's store verifier and records the result instead of failing.
/// Handshake signatures are still checked (a forged CertificateVerify aborts).
/// (Shared by `connect` and `probe`.)
#[derive(Debug)]
pub(crate) struct RecordingVerifier {
    pub(crate) inner: StoreServerVerifier,
    pub(crate) record: Mutex<Record>,
    /// Problems of the trust sources given (see [`Connected::roots_warnings`]).
    pub(crate) roots_warnings: Vec<String>,
}

impl RecordingVerifier {
    pub(crate) fn take(&self) -> Record {
        std::mem::take(&mut *self.record.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl ServerCertVerifier for RecordingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let result = self
            .inner
            .verify(end_entity, intermediates, server_name, now);
        let mut r = self.record.lock().unwrap_or_else(|p| p.into_inner());
        r.presented = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|c| c.clone().into_owned())
            .collect();
        match result {
            Ok(v) => {
                r.verified = Some(v.chain.certs.clone());
                r.warnings = v.chain.warnings.clone();
            }
            Err(e) => {
                r.error = Some(e.to_string());
                r.rule = Some(e.rule());
            }
        }
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// An established connection and its report.
#[non_exhaustive]
pub struct Connected {
    /// What was negotiated.
    pub report: ConnectReport,
    /// What the trust sources given (`--roots`) could not load, one sentence each, when
    /// the store as a whole still loaded: a source that yields nothing must not pass
    /// unnoticed. Empty with the default (system) store.
    pub roots_warnings: Vec<String>,
    rt: tokio::runtime::Runtime,
    stream: tokio_rustls::client::TlsStream<TcpStream>,
}

/// A certificate's subject for people (RFC 4514), shared with `probe`.
pub(crate) fn subject(der: &[u8]) -> String {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, c)) => tlskit_x509::dn::display(c.subject().as_raw()),
        Err(_) => "(unparsable certificate)".into(),
    }
}

/// `HOST:PORT` or `[v6]:PORT` into (host, port).
pub(crate) fn split_target(target: &str) -> Result<(String, u16), NetError> {
    let bad = |why: &str| NetError::Config(format!("{target}: {why} (expected HOST:PORT)"));
    let (host, port) = if let Some(rest) = target.strip_prefix('[') {
        let (h, p) = rest
            .split_once("]:")
            .ok_or_else(|| bad("bad IPv6 literal"))?;
        (h, p)
    } else {
        target.rsplit_once(':').ok_or_else(|| bad("no port"))?
    };
    let port = port.parse().map_err(|_| bad("bad port"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok((host.to_string(), port))
}

/// What `connect` and `probe` prepare before they dial: the target, the reference name
/// (UTS #46), the trust store (default: the system store; nothing loadable is an error),
/// a warmed-up crypto provider and the recording verifier.
pub(crate) struct ClientSetup {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) reference: ReferenceName,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) provider: Arc<rustls::crypto::CryptoProvider>,
    pub(crate) verifier: Arc<RecordingVerifier>,
    /// The versions to offer (TLS 1.3 and 1.2 unless the options name some).
    pub(crate) versions: Vec<&'static rustls::SupportedProtocolVersion>,
}

impl ClientSetup {
    pub(crate) fn new(peer: &PeerOptions) -> Result<Self, NetError> {
        let (target, server_name, roots, profile, allow) = (
            peer.target.as_str(),
            peer.server_name.as_deref(),
            &peer.roots[..],
            peer.profile,
            &peer.allow[..],
        );
        let (host, port) = split_target(target)?;
        let name_text = server_name.map_or_else(|| host.clone(), str::to_string);
        let reference = ReferenceName::parse(&name_text).map_err(NetError::Name)?;
        let server_name: ServerName<'static> = match &reference {
            ReferenceName::Ip(ip) => ServerName::IpAddress((*ip).into()),
            ReferenceName::Dns(d) => ServerName::try_from(d.ascii().to_string())
                .map_err(|e| NetError::Config(format!("{name_text}: {e}")))?,
            _ => return Err(NetError::Config(format!("{name_text}: not a host name"))),
        };
        let roots = if roots.is_empty() {
            vec![Source::System]
        } else {
            roots.to_vec()
        };
        let (handle, report) = StoreHandle::new(roots).map_err(|e| {
            // Name the problems: "nothing loadable" alone does not say what to fix.
            match &e {
                tlskit_store::StoreError::NothingLoadable { issues, .. } if !issues.is_empty() => {
                    NetError::StoreUnusable(format!(
                        "roots: nothing loadable ({})",
                        issues
                            .iter()
                            .take(3)
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ))
                }
                _ => NetError::Store(e),
            }
        })?;
        if handle.current().is_empty() {
            let why = report
                .errors
                .first()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "no certificates".into());
            return Err(NetError::StoreUnusable(format!(
                "roots: nothing loadable ({why})"
            )));
        }
        // The store loaded, but a source given may still have yielded nothing (a file of
        // one unusable certificate next to a good one): name each problem.
        let roots_warnings = if peer.roots.is_empty() {
            Vec::new()
        } else {
            let mut w: Vec<String> = report
                .errors
                .iter()
                .take(MAX_ROOTS_WARNINGS)
                .map(|e| format!("roots: {e}"))
                .collect();
            let total = report.errors_total();
            if total > w.len() {
                w.push(format!(
                    "roots: {} more problem(s) not shown",
                    total - w.len()
                ));
            }
            w
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        // The crypto library initialises itself (DRBG seeding, CPU feature probing) on
        // first use; do that now so it is not counted in the handshake time.
        let mut warm = [0u8; 16];
        provider
            .secure_random
            .fill(&mut warm)
            .map_err(|_| rustls::Error::FailedToGetRandomBytes)?;
        let verifier = Arc::new(RecordingVerifier {
            inner: StoreServerVerifier::new(
                Arc::new(handle),
                VerifierConfig {
                    profile,
                    allow: allow.to_vec(),
                    ..VerifierConfig::default()
                },
            ),
            record: Mutex::new(Record::default()),
            roots_warnings,
        });
        Ok(Self {
            host,
            port,
            reference,
            server_name,
            provider,
            verifier,
            versions: if peer.versions.is_empty() {
                vec![TlsVersion::Tls13.rustls(), TlsVersion::Tls12.rustls()]
            } else {
                peer.versions.iter().map(|v| v.rustls()).collect()
            },
        })
    }
}

/// Connect, handshake, verify. Errors: could not connect or handshake (exit 2 in the CLI).
/// A verification failure is not an error: see [`ConnectReport::verified`].
pub fn connect(opts: &ConnectOptions) -> Result<Connected, NetError> {
    let ClientSetup {
        host,
        port,
        reference,
        server_name,
        provider,
        verifier,
        versions,
    } = ClientSetup::new(&opts.peer)?;
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone());
    let mut config = match &opts.client_cert {
        Some((cert, key)) => {
            // Checks that the key matches the leaf, with a clear error if not.
            let ck = tlskit_tls::load_certified_key(cert, key, &provider)?;
            // A resolver rather than with_client_auth_cert: the key may be on a token.
            builder.with_client_cert_resolver(Arc::new(OneClientCert(ck)))
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = opts.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    let config = Arc::new(config);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let target = opts.peer.target.clone();
    let attempt = |rt: &tokio::runtime::Runtime| {
        rt.block_on(handshake(
            &target,
            &host,
            port,
            server_name.clone(),
            config.clone(),
            opts.peer.timeout,
            opts.peer.starttls,
        ))
    };
    let (mut stream, peer, tcp_ms, hs_ms) = attempt(&rt)?;
    if opts.reconnect {
        rt.block_on(async {
            // Read what the server sent after the handshake (TLS 1.3 tickets) before closing.
            let mut buf = [0u8; 1];
            let _ = tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await;
            let _ = stream.shutdown().await;
        });
        verifier.take();
        let second = attempt(&rt)?;
        stream = second.0;
        let (tcp2, hs2) = (second.2, second.3);
        return Ok(finish(
            rt, stream, second.1, tcp2, hs2, opts, &reference, &verifier,
        ));
    }
    Ok(finish(
        rt, stream, peer, tcp_ms, hs_ms, opts, &reference, &verifier,
    ))
}

#[allow(clippy::too_many_arguments)]
fn finish(
    rt: tokio::runtime::Runtime,
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    peer: SocketAddr,
    tcp_ms: f64,
    hs_ms: f64,
    opts: &ConnectOptions,
    reference: &ReferenceName,
    verifier: &RecordingVerifier,
) -> Connected {
    let (_, conn) = stream.get_ref();
    let resumed = conn.handshake_kind() == Some(HandshakeKind::Resumed);
    let record = verifier.take();
    let presented: Vec<CertificateDer<'static>> = if record.presented.is_empty() {
        conn.peer_certificates()
            .map(|c| c.to_vec())
            .unwrap_or_default()
    } else {
        record.presented
    };
    // On resumption the verifier does not run: the chain is the one rustls remembers, and
    // it was verified (against the same store generation) when the session was made.
    let rule = record.rule;
    let warnings = record.warnings;
    let (verified, reason, rule, chain_certs) = match (record.verified, record.error) {
        (Some(chain), _) => (true, None, None, chain),
        (None, Some(e)) => (false, Some(e), rule, presented.clone()),
        (None, None) if resumed => (true, None, None, presented.clone()),
        (None, None) => (
            false,
            Some("server sent no certificate".into()),
            Some(NO_CERTIFICATE),
            presented.clone(),
        ),
    };
    let report = ConnectReport {
        target: opts.peer.target.clone(),
        peer: peer.to_string(),
        server_name: reference.to_string(),
        starttls: opts.peer.starttls.map(|p| p.name().to_string()),
        tls_version: version_name(conn.protocol_version()),
        cipher_suite: conn
            .negotiated_cipher_suite()
            .and_then(|s| s.suite().as_str())
            .unwrap_or("")
            .to_string(),
        key_exchange: conn
            .negotiated_key_exchange_group()
            .map(|g| format!("{:?}", g.name())),
        kx: crate::kx::KeyExchange::of(conn),
        expires_in_days: presented
            .first()
            .and_then(|c| crate::kx::expires_in_days(c, std::time::SystemTime::now())),
        alpn: conn
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        resumed,
        verified,
        reason,
        rule,
        chain: chain_certs.iter().map(|c| subject(c)).collect(),
        warnings,
        presented_certs: presented.len(),
        presented_bytes: presented.iter().map(|c| c.len()).sum(),
        tcp_connect_ms: tcp_ms,
        handshake_ms: hs_ms,
    };
    Connected {
        report,
        rt,
        stream,
        roots_warnings: verifier.roots_warnings.clone(),
    }
}

async fn handshake(
    target: &str,
    host: &str,
    port: u16,
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
    timeout: Duration,
    starttls: Option<Starttls>,
) -> Result<
    (
        tokio_rustls::client::TlsStream<TcpStream>,
        SocketAddr,
        f64,
        f64,
    ),
    NetError,
> {
    let cerr = |reason: String| NetError::Connect {
        target: target.to_string(),
        reason,
    };
    let addrs: Vec<SocketAddr> =
        tokio::time::timeout(timeout, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| cerr("name resolution timed out".into()))?
            .map_err(|e| cerr(format!("cannot resolve {host}: {e}")))?
            .collect();
    let mut last = String::from("no address");
    for addr in addrs {
        let sock = match if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        } {
            Ok(s) => s,
            Err(e) => {
                last = e.to_string();
                continue;
            }
        };
        // Before connect: the ClientHello and the client's second flight then leave whole.
        if let Err(e) = tlskit_tls::sock::tune(socket2::SockRef::from(&sock)) {
            last = e.to_string();
            continue;
        }
        let t0 = Instant::now();
        let tcp = match tokio::time::timeout(timeout, sock.connect(addr)).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                last = format!("{addr}: {e}");
                continue;
            }
            Err(_) => {
                last = format!("{addr}: timed out");
                continue;
            }
        };
        let tcp_ms = t0.elapsed().as_secs_f64() * 1e3;
        let tcp = match starttls {
            Some(proto) => {
                upgrade(tcp, proto, timeout)
                    .await
                    .map_err(|reason| NetError::Starttls {
                        target: target.to_string(),
                        reason: Box::new(reason),
                    })?
            }
            None => tcp,
        };
        let t1 = Instant::now();
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        let tls = match tokio::time::timeout(timeout, connector.connect(name.clone(), tcp)).await {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                return Err(NetError::Handshake {
                    target: target.to_string(),
                    reason: tlskit_tls::tls_text::io_tls_text(&e),
                })
            }
            Err(_) => {
                return Err(NetError::Handshake {
                    target: target.to_string(),
                    reason: "timed out".into(),
                })
            }
        };
        let hs_ms = t1.elapsed().as_secs_f64() * 1e3;
        return Ok((tls, addr, tcp_ms, hs_ms));
    }
    Err(cerr(last))
}

/// The STARTTLS dance (blocking, shared with the probe: [`crate::starttls`]) on the
/// blocking pool, then the socket back to tokio for the handshake.
async fn upgrade(
    tcp: TcpStream,
    proto: Starttls,
    timeout: Duration,
) -> Result<TcpStream, crate::starttls::StarttlsError> {
    let io = |e: std::io::Error| crate::starttls::StarttlsError::Reply {
        proto,
        reason: crate::starttls::ReplyError::Io(e),
    };
    let mut std_sock = tcp.into_std().map_err(io)?;
    std_sock.set_nonblocking(false).map_err(io)?;
    let std_sock = tokio::task::spawn_blocking(move || {
        crate::starttls::upgrade_tcp(&mut std_sock, proto, timeout).map(|()| std_sock)
    })
    .await
    .map_err(|e| io(std::io::Error::other(e.to_string())))??;
    std_sock.set_nonblocking(true).map_err(io)?;
    TcpStream::from_std(std_sock).map_err(io)
}

impl Connected {
    /// Wait up to `limit` for the server's first word after the handshake. In TLS 1.3 a
    /// server that refuses the client (no or a bad client certificate) says so with an
    /// alert *after* the client has finished its handshake; this turns such an alert into
    /// a handshake error. Data the server sends first (a banner) is discarded.
    pub fn await_server_verdict(&mut self, limit: Duration) -> Result<(), NetError> {
        let stream = &mut self.stream;
        let target = self.report.target.clone();
        self.rt.block_on(async {
            let mut buf = [0u8; 512];
            match tokio::time::timeout(limit, stream.read(&mut buf)).await {
                Ok(Err(e)) if e.kind() != std::io::ErrorKind::UnexpectedEof => {
                    Err(NetError::Handshake {
                        target,
                        reason: format!(
                            "server refused the connection after the handshake: {}",
                            tlskit_tls::tls_text::io_tls_text(&e)
                        ),
                    })
                }
                _ => Ok(()),
            }
        })
    }

    /// Send close_notify and close.
    pub fn close(mut self) {
        let stream = &mut self.stream;
        self.rt.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(2), stream.shutdown()).await;
        });
        self.rt.shutdown_timeout(Duration::from_millis(100));
    }

    /// Copy stdin to the server and the server's data to stdout until the server closes.
    /// At the end of stdin, close_notify is sent and reading goes on. Refused when the
    /// server's certificate did not verify.
    pub fn relay_stdio(self) -> Result<(), NetError> {
        if !self.report.verified {
            return Err(NetError::Config(
                "refusing to send data: server certificate not verified".into(),
            ));
        }
        let Connected { rt, stream, .. } = self;
        let result = rt.block_on(async move {
            let (mut r, mut w) = tokio::io::split(stream);
            let up = async {
                let mut stdin = tokio::io::stdin();
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = stdin.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    w.write_all(&buf[..n]).await?;
                    w.flush().await?;
                }
                w.shutdown().await
            };
            let down = async {
                let mut stdout = tokio::io::stdout();
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match r.read(&mut buf).await {
                        Ok(n) => n,
                        // A server that closes without close_notify: the data so far stands.
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                        Err(e) => return Err(e),
                    };
                    if n == 0 {
                        break;
                    }
                    stdout.write_all(&buf[..n]).await?;
                    stdout.flush().await?;
                }
                Ok::<(), std::io::Error>(())
            };
            tokio::pin!(up);
            tokio::pin!(down);
            // The server closing ends the session even if stdin is still open.
            tokio::select! {
                r = &mut down => r,
                r = &mut up => { r?; down.await }
            }
        });
        rt.shutdown_timeout(Duration::from_millis(100));
        result.map_err(NetError::Io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert!(matches!(split_target("example.com:443"), Ok((h, 443)) if h == "example.com"));
        assert!(matches!(split_target("[::1]:8443"), Ok((h, 8443)) if h == "::1"));
        assert!(split_target("example.com").is_err());
        assert!(split_target(":443").is_err());
    }

    /// A name that is not one is refused before any connection, with the names crate's
    /// error kept typed under the text `connect` has always printed.
    #[test]
    fn a_bad_server_name_keeps_its_name_error() {
        let mut peer = PeerOptions::new("127.0.0.1:9");
        peer.server_name = Some("a\u{2024}test".into());
        let Err(e) = connect(&ConnectOptions::new(peer)) else {
            panic!("a name with U+2024 was accepted");
        };
        let NetError::Name(name) = &e else {
            panic!("not a name error: {e:?}");
        };
        assert_eq!(e.to_string(), format!("configuration: {name}"));
        assert!(std::error::Error::source(&e).is_some());
    }
}

/// The one client certificate (and key, file or token) of `connect --cert/--key`.
#[derive(Debug)]
struct OneClientCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for OneClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}
