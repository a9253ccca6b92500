//! Load generator of the terminator benchmark (bench/serve.py, bench/README.md).
//!
//! ```text
//! tls-load pki DIR                       write ca.pem, inter.pem, leaf.pem, chain.pem, leaf.key
//! tls-load run ADDR [options]            handshakes; JSON on stdout
//! tls-load hold ADDR --count N           N completed handshakes held open and idle
//! tls-load hold ADDR --count N --partial N handshakes stopped half way, held open
//! ```
//!
//! The client is rustls with aws-lc-rs (the same crypto as tlskit), TLS 1.3 only, one
//! cipher suite (TLS13_AES_128_GCM_SHA256) and one key-exchange group (X25519 by default,
//! `--group p256`), no certificate compression offered (nginx and s_server on OpenSSL 3.0
//! do not support it), so every server is asked for exactly the same handshake.
//!
//! Verification: `--verify sig` (default) checks the server's CertificateVerify
//! signature with the provider (the work TLS 1.3 requires for the handshake to be
//! authenticated by the presented key) but does not build a path to the root: the
//! servers are ours and the generator has to stay cheap so that it is not the
//! bottleneck. `--verify chain` verifies leaf ← intermediate ← root with rustls'
//! WebPkiServerVerifier against `--ca` as well.
//!
//! `run`: `--warmup W` handshakes, then it prints `warm` on stdout and waits for one line
//! on stdin (so the driver can read the server's CPU counters exactly around the measured
//! part), then `--count N` handshakes over `--conc C` threads. Every connection sends
//! `GET PATH HTTP/1.1` with `Connection: close` and reads the response to its end (which
//! also makes the client process the session tickets that precede it). `--resume`: every
//! connection after the first resumes with a ticket from the previous one (TLS 1.3
//! PSK-DHE); without it, tickets are counted and thrown away so every handshake is full.
//! Output: one JSON object (counts of full/resumed handshakes, failures, tickets received,
//! wall time, the generator's own CPU time from /proc/self/stat).
//!
//! `hold`: opens `--count` connections one after another and holds them open and silent
//! until a line (or EOF) on stdin; prints `ready N` once they are all in place. Each one
//! completes its handshake, or with `--partial` stops in the middle of it: the ClientHello
//! is sent and the server's whole first flight (ServerHello to Finished) read and
//! processed, then the client's Finished is never sent, so the server holds a handshake
//! in progress. `--limit-s S` (default 120) bounds the time spent opening them.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{
    ClientSessionMemoryCache, ClientSessionStore, Resumption, Tls12ClientSessionValue,
    Tls13ClientSessionValue, WebPkiServerVerifier,
};
use rustls::crypto::{aws_lc_rs, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind, NamedGroup};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("pki") if args.len() == 2 => pki(Path::new(&args[1])),
        Some("run") if args.len() >= 2 => Opts::parse(&args[1..]).and_then(|o| run(&o)),
        Some("hold") if args.len() >= 2 => Opts::parse(&args[1..]).and_then(|o| hold(&o)),
        _ => Err(anyhow!(
            "usage: tls-load pki DIR | run ADDR [--ca F] [--name N] [--count N] [--warmup N] \
             [--conc N] [--resume] [--group x25519|p256] [--verify sig|chain] [--path P] | \
             hold ADDR --count N [--partial] [--limit-s S] [...]"
        )),
    };
    if let Err(e) = r {
        eprintln!("tls-load: {e:#}");
        std::process::exit(2);
    }
}

struct Opts {
    addr: SocketAddr,
    ca: Option<String>,
    name: String,
    count: usize,
    warmup: usize,
    conc: usize,
    resume: bool,
    group: NamedGroup,
    verify_chain: bool,
    path: String,
    partial: bool,
    limit_s: u64,
}

impl Opts {
    fn parse(a: &[String]) -> Result<Self> {
        let mut o = Opts {
            addr: a[0].parse().with_context(|| format!("address {}", a[0]))?,
            ca: None,
            name: "bench.example".into(),
            count: 1000,
            warmup: 100,
            conc: 1,
            resume: false,
            group: NamedGroup::X25519,
            verify_chain: false,
            path: "/".into(),
            partial: false,
            limit_s: 120,
        };
        let mut it = a[1..].iter();
        while let Some(k) = it.next() {
            let mut v = || it.next().ok_or_else(|| anyhow!("{k} needs a value"));
            match k.as_str() {
                "--ca" => o.ca = Some(v()?.clone()),
                "--name" => o.name = v()?.clone(),
                "--count" => o.count = v()?.parse()?,
                "--warmup" => o.warmup = v()?.parse()?,
                "--conc" => o.conc = v()?.parse::<usize>()?.max(1),
                "--path" => o.path = v()?.clone(),
                "--resume" => o.resume = true,
                "--partial" => o.partial = true,
                "--limit-s" => o.limit_s = v()?.parse()?,
                "--group" => {
                    o.group = match v()?.as_str() {
                        "x25519" => NamedGroup::X25519,
                        "p256" => NamedGroup::secp256r1,
                        "x25519mlkem768" => NamedGroup::X25519MLKEM768,
                        g => bail!("unknown group {g}"),
                    }
                }
                "--verify" => {
                    o.verify_chain = match v()?.as_str() {
                        "sig" => false,
                        "chain" => true,
                        m => bail!("unknown --verify {m}"),
                    }
                }
                _ => bail!("unknown option {k}"),
            }
        }
        if o.verify_chain && o.ca.is_none() {
            bail!("--verify chain needs --ca");
        }
        Ok(o)
    }
}

/// Checks the handshake signature only (see the module comment).
#[derive(Debug)]
struct SigOnly(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for SigOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// Counts the TLS 1.3 tickets received; keeps them only when resuming.
#[derive(Debug)]
struct Tickets {
    inner: ClientSessionMemoryCache,
    keep: bool,
    /// While set, no ticket is handed out: the handshakes are full and fill the cache.
    filling: std::sync::atomic::AtomicBool,
    received: AtomicUsize,
}

impl ClientSessionStore for Tickets {
    fn set_kx_hint(&self, n: ServerName<'static>, g: NamedGroup) {
        self.inner.set_kx_hint(n, g)
    }
    fn kx_hint(&self, n: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(n)
    }
    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}
    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }
    fn remove_tls12_session(&self, _: &ServerName<'static>) {}
    fn insert_tls13_ticket(&self, n: ServerName<'static>, v: Tls13ClientSessionValue) {
        self.received.fetch_add(1, Ordering::Relaxed);
        if self.keep {
            self.inner.insert_tls13_ticket(n, v)
        }
    }
    fn take_tls13_ticket(&self, n: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        if self.filling.load(Ordering::Relaxed) {
            return None;
        }
        self.inner.take_tls13_ticket(n)
    }
}

fn config(o: &Opts, keep_tickets: bool) -> Result<(Arc<ClientConfig>, Arc<Tickets>)> {
    let base = aws_lc_rs::default_provider();
    let group = base
        .kx_groups
        .iter()
        .find(|g| g.name() == o.group)
        .copied()
        .ok_or_else(|| anyhow!("group {:?} not in the provider", o.group))?;
    let provider = Arc::new(CryptoProvider {
        cipher_suites: vec![aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256],
        kx_groups: vec![group],
        ..base
    });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let builder = if o.verify_chain {
        let mut roots = rustls::RootCertStore::empty();
        let ca = o.ca.as_deref().unwrap_or_default();
        let pem = std::fs::read(ca).with_context(|| ca.to_string())?;
        for c in CertificateDer::pem_slice_iter(&pem) {
            roots.add(c?)?;
        }
        let v = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()?;
        builder.with_webpki_verifier(v)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SigOnly(
                provider.signature_verification_algorithms,
            )))
    };
    let mut cfg = builder.with_no_client_auth();
    cfg.cert_decompressors = Vec::new();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tickets = Arc::new(Tickets {
        inner: ClientSessionMemoryCache::new(64),
        keep: keep_tickets,
        filling: std::sync::atomic::AtomicBool::new(false),
        received: AtomicUsize::new(0),
    });
    cfg.resumption = Resumption::store(tickets.clone());
    Ok((Arc::new(cfg), tickets))
}

fn connect(
    cfg: &Arc<ClientConfig>,
    o: &Opts,
) -> Result<rustls::StreamOwned<ClientConnection, TcpStream>> {
    let name = ServerName::try_from(o.name.clone())?;
    let tcp = TcpStream::connect(o.addr)?;
    tcp.set_nodelay(true)?;
    let conn = ClientConnection::new(cfg.clone(), name)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// One connection: handshake, one request, the whole response. Returns whether it resumed.
fn one(cfg: &Arc<ClientConfig>, o: &Opts, req: &[u8]) -> Result<bool> {
    let mut s = connect(cfg, o)?;
    let resumed = s.conn.handshake_kind() == Some(HandshakeKind::Resumed);
    s.write_all(req)?;
    s.flush()?;
    let mut resp = Vec::with_capacity(1024);
    match s.read_to_end(&mut resp) {
        Ok(_) => {}
        // s_server and some servers close without close_notify after the response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e.into()),
    }
    if !resp.starts_with(b"HTTP/1.") {
        bail!(
            "unexpected response: {:?}",
            String::from_utf8_lossy(&resp[..resp.len().min(80)])
        );
    }
    Ok(resumed)
}

/// utime + stime of this process in seconds (all threads).
fn self_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): state is field 3, utime 14.
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // rest starts at field 3; utime is field 14, stime 15. USER_HZ is 100 on Linux.
    (tick(14 - 3) + tick(15 - 3)) / 100.0
}

fn run(o: &Opts) -> Result<()> {
    let (cfg, tickets) = config(o, o.resume)?;
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        o.path, o.name
    )
    .into_bytes();
    if o.resume {
        // OpenSSL servers send one ticket after a resumption, so the client's pool never
        // grows past what the full handshakes left: fill it (rustls keeps 8 per server)
        // so that every concurrent connection finds a ticket.
        tickets.filling.store(true, Ordering::Relaxed);
        for _ in 0..4 {
            one(&cfg, o, &req)?;
        }
        tickets.filling.store(false, Ordering::Relaxed);
    }
    for _ in 0..o.warmup.max(1) {
        one(&cfg, o, &req)?;
    }
    println!("warm");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let tickets_before = tickets.received.load(Ordering::Relaxed);
    let resumed = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let first_error = std::sync::Mutex::new(None::<String>);
    let next = AtomicUsize::new(0);
    let cpu0 = self_cpu();
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..o.conc {
            sc.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < o.count {
                    match one(&cfg, o, &req) {
                        Ok(true) => {
                            resumed.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(false) => {}
                        Err(e) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                            let mut f = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            f.get_or_insert_with(|| format!("{e:#}"));
                        }
                    }
                }
            });
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu = self_cpu() - cpu0;
    let failed = failed.into_inner();
    let resumed = resumed.into_inner();
    let out = serde_json::json!({
        "count": o.count,
        "ok": o.count - failed,
        "failed": failed,
        "first_error": first_error.into_inner().unwrap_or_else(|p| p.into_inner()),
        "resumed": resumed,
        "full": o.count - failed - resumed,
        "tickets_received": tickets.received.load(Ordering::Relaxed) - tickets_before,
        "wall_s": wall,
        "client_cpu_s": cpu,
        "conc": o.conc,
        "group": format!("{:?}", o.group),
        "verify": if o.verify_chain { "chain" } else { "sig" },
    });
    println!("{out}");
    Ok(())
}

/// A handshake stopped half way: ClientHello sent, the server's first flight read and
/// processed (the client's Finished is ready and never sent). The socket is returned.
fn half_handshake(cfg: &Arc<ClientConfig>, o: &Opts) -> Result<TcpStream> {
    let name = ServerName::try_from(o.name.clone())?;
    let mut tcp = TcpStream::connect(o.addr)?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut conn = ClientConnection::new(cfg.clone(), name)?;
    while conn.wants_write() {
        conn.write_tls(&mut tcp)?;
    }
    // Until the client has its second flight to send: the server's flight is all in.
    while !conn.wants_write() {
        if conn.read_tls(&mut tcp)? == 0 {
            bail!("the server closed during the handshake");
        }
        conn.process_new_packets()?;
    }
    Ok(tcp)
}

fn hold(o: &Opts) -> Result<()> {
    let (cfg, _) = config(o, false)?;
    let until = Instant::now() + std::time::Duration::from_secs(o.limit_s);
    let mut full = Vec::new();
    let mut half = Vec::new();
    for i in 0..o.count {
        if Instant::now() > until {
            bail!("{i} of {} connections open after {} s", o.count, o.limit_s);
        }
        if o.partial {
            half.push(half_handshake(&cfg, o).with_context(|| format!("connection {i}"))?);
        } else {
            full.push(connect(&cfg, o).with_context(|| format!("connection {i}"))?);
        }
    }
    println!("ready {}", full.len() + half.len());
    std::io::stdout().flush()?;
    let mut sink = String::new();
    let _ = std::io::stdin().lock().read_line(&mut sink);
    drop(full);
    drop(half);
    Ok(())
}

/// A fresh PKI for the benchmark: P-256 root → intermediate → leaf (SAN bench.example,
/// 127.0.0.1), leaf key in PKCS#8 PEM; chain.pem = leaf + intermediate.
fn pki(dir: &Path) -> Result<()> {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, PKCS_ECDSA_P256_SHA256,
    };
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let ca = |cn: &str| {
        let mut p = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        p.distinguished_name = dn;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        p
    };
    let root_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let root_params = ca("tlskit serve bench root");
    let root = root_params.self_signed(&root_key)?;
    let root_issuer = Issuer::new(root_params, &root_key);
    let inter_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut inter_params = ca("tlskit serve bench intermediate");
    inter_params.use_authority_key_identifier_extension = true;
    let inter = inter_params.signed_by(&inter_key, &root_issuer)?;
    let inter_issuer = Issuer::new(inter_params, &inter_key);
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut lp = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "bench.example");
    lp.distinguished_name = dn;
    lp.subject_alt_names = vec![
        SanType::DnsName("bench.example".try_into()?),
        SanType::IpAddress([127, 0, 0, 1].into()),
    ];
    lp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    lp.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    lp.use_authority_key_identifier_extension = true;
    let leaf = lp.signed_by(&leaf_key, &inter_issuer)?;
    let w = |name: &str, text: String| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| p.display().to_string())
    };
    w("ca.pem", root.pem())?;
    w("inter.pem", inter.pem())?;
    w("leaf.pem", leaf.pem())?;
    w("chain.pem", format!("{}{}", leaf.pem(), inter.pem()))?;
    w("leaf.key", leaf_key.serialize_pem())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("leaf.key"), std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}
