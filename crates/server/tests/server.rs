//! tlskit-server through its public API, as a program embedding the terminator would use
//! it: `ServeConfig::new` + `Server::bind` on 127.0.0.1:0 with rcgen-made pairs, `run` on
//! a thread, clients (tlskit-client's `connect`, or rustls directly) on loopback, the
//! metrics endpoint read over plain HTTP, and the certificate index on its own.
//!
//! `Server::run` returns on SIGTERM or SIGINT only (there is no stop handle), and every
//! running server of the process hears the signal: tests that run a server hold
//! [`RUNNING`] so that one test's SIGTERM stops its own server only.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use tlskit_client::{connect, ConnectOptions, PeerOptions};
use tlskit_server::{offered_alpn, CertIndex, Mode, NetError, ServeConfig, Server};
use tlskit_store::Source;

/// Held by every test that runs a server (see the module documentation).
static RUNNING: Mutex<()> = Mutex::new(());

fn running() -> MutexGuard<'static, ()> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// notAfter of every leaf here: 2090-01-01T00:00:00Z.
const NOT_AFTER: i64 = 3_786_912_000;

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem: PathBuf,
}

fn ca(dir: &Path) -> Ca {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name
        .push(DnType::CommonName, "Server Test CA");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let issuer = CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap();
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, issuer.pem()).unwrap();
    Ca { issuer, pem }
}

/// A server leaf for `names` (CN the first) written as `dir/STEM.EXT` + `dir/STEM.key`.
fn leaf(ca: &Ca, dir: &Path, stem: &str, ext: &str, names: &[&str]) -> (PathBuf, PathBuf) {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, names[0]);
    p.use_authority_key_identifier_extension = true;
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2090, 1, 1);
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca.issuer).unwrap();
    let chain = dir.join(format!("{stem}.{ext}"));
    let key_path = dir.join(format!("{stem}.key"));
    std::fs::write(&chain, format!("{}{}", cert.pem(), ca.issuer.pem())).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (chain, key_path)
}

fn loopback() -> Vec<SocketAddr> {
    vec!["127.0.0.1:0".parse().unwrap()]
}

/// A configuration for `cert`/`key` on 127.0.0.1:0 that does not watch files.
fn config(cert: PathBuf, key: PathBuf) -> ServeConfig {
    let mut cfg = ServeConfig::new(loopback(), cert, key);
    cfg.watch = false;
    cfg.shutdown_grace = Duration::from_secs(2);
    cfg
}

/// A bound server running on its own thread; [`Running::stop`] sends SIGTERM and waits
/// for `run` to return.
struct Running {
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    done: mpsc::Receiver<Result<(), NetError>>,
}

fn start(cfg: ServeConfig) -> Running {
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    assert_ne!(addr.port(), 0, "port 0 is resolved at bind");
    let metrics = server.metrics_addr();
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.run());
    });
    Running {
        addr,
        metrics,
        done,
    }
}

impl Running {
    fn stop(self) {
        // Server::bind installed the SIGTERM handler: the process is not killed.
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        let r = self
            .done
            .recv_timeout(Duration::from_secs(20))
            .expect("run returns after SIGTERM");
        assert!(r.is_ok(), "{r:?}");
    }
}

fn connect_to(addr: SocketAddr, name: &str, ca: &Path, alpn: &[&str]) -> tlskit_client::Connected {
    let mut peer = PeerOptions::new(addr.to_string());
    peer.server_name = Some(name.into());
    peer.roots = vec![Source::File(ca.to_path_buf())];
    peer.timeout = Duration::from_secs(10);
    let mut o = ConnectOptions::new(peer);
    o.alpn = alpn.iter().map(|s| s.to_string()).collect();
    match connect(&o) {
        Ok(c) => c,
        Err(e) => panic!("connect {name}: {e}"),
    }
}

/// GET /metrics on the metrics endpoint: the body.
fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    body.to_string()
}

/// One TLS 1.3 connection with rustls itself: handshake, `ping` echoed back.
fn echo_once(addr: SocketAddr, name: &str, ca: &CertificateDer<'static>) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.cert_decompressors = vec![rustls::compress::BROTLI_DECOMPRESSOR];
    let mut conn = rustls::ClientConnection::new(
        Arc::new(cfg),
        ServerName::try_from(name.to_string()).unwrap(),
    )
    .unwrap();
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::Stream::new(&mut conn, &mut tcp);
    tls.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    tls.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

#[test]
fn a_bound_server_serves_its_pair_to_tlskit_connect_and_stops_on_sigterm() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    let ca = ca(d.path());
    let (cert, key) = leaf(&ca, d.path(), "site", "pem", &["site.test"]);
    let r = start(config(cert, key));
    let c = connect_to(r.addr, "site.test", &ca.pem, &["h2", "http/1.1"]);
    assert!(c.report.verified, "{:?}", c.report.reason);
    assert_eq!(c.report.presented_certs, 2, "leaf and CA as in the file");
    assert!(
        c.report.chain[0].contains("site.test"),
        "{:?}",
        c.report.chain
    );
    assert_eq!(c.report.tls_version, "TLSv1.3");
    assert_eq!(
        c.report.alpn.as_deref(),
        Some("http/1.1"),
        "the HTTP responder speaks http/1.1 only"
    );
    c.close();
    r.stop();
}

#[test]
fn the_metrics_endpoint_counts_handshakes_and_names_the_served_certificate() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    let ca = ca(d.path());
    let (cert, key) = leaf(&ca, d.path(), "metrics", "pem", &["metrics.test"]);
    let mut cfg = config(cert.clone(), key);
    cfg.mode = Mode::Echo;
    cfg.metrics = Some("127.0.0.1:0".parse().unwrap());
    let r = start(cfg);
    let m = r.metrics.unwrap();
    assert_ne!(m.port(), 0);
    let before = scrape(m);
    assert!(
        before.contains("tlskit_handshakes_total{outcome=\"full\"} 0"),
        "{before}"
    );
    // The echo round trip ends after the server finished its handshake: counted.
    echo_once(r.addr, "metrics.test", ca.issuer.der());
    let after = scrape(m);
    for series in [
        "tlskit_handshakes_total{outcome=\"full\"} 1",
        "tlskit_handshakes_total{outcome=\"failed\"} 0",
        "tlskit_certificate_compression_total{algorithm=\"brotli\"} 1",
        "tlskit_handshake_duration_seconds_count 1",
        "# TYPE tlskit_handshakes_total counter",
        "# TYPE tlskit_active_connections gauge",
    ] {
        assert!(after.contains(series), "{series} in:\n{after}");
    }
    let not_after = format!(
        "tlskit_certificate_not_after_seconds{{name=\"default\",sni=\"metrics.test\",path=\"{}\"}} {NOT_AFTER}",
        cert.display()
    );
    assert!(after.contains(&not_after), "{not_after} in:\n{after}");
    r.stop();
}

#[test]
fn an_sni_directory_chooses_the_pair_by_name() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    let ca = ca(d.path());
    let (cert, key) = leaf(&ca, d.path(), "default", "pem", &["default.test"]);
    let sni = d.path().join("sni");
    std::fs::create_dir(&sni).unwrap();
    leaf(&ca, &sni, "a", "crt", &["a.test"]);
    leaf(&ca, &sni, "b", "pem", &["b.test", "*.wild.test"]);
    let mut cfg = config(cert, key);
    cfg.sni_dir = Some(sni);
    let r = start(cfg);
    for (name, expect) in [
        ("a.test", "a.test"),
        ("b.test", "b.test"),
        ("x.wild.test", "b.test"),
        ("default.test", "default.test"),
    ] {
        let c = connect_to(r.addr, name, &ca.pem, &[]);
        assert!(c.report.verified, "{name}: {:?}", c.report.reason);
        assert!(
            c.report.chain[0].contains(expect),
            "{name}: {:?}",
            c.report.chain
        );
        c.close();
    }
    // A name nobody serves gets the default pair, which does not cover it.
    let c = connect_to(r.addr, "unknown.test", &ca.pem, &[]);
    assert!(!c.report.verified);
    assert_eq!(c.report.rule, Some("name-mismatch"));
    assert!(c.report.chain[0].contains("default.test"));
    c.close();
    r.stop();
}

#[test]
fn the_certificate_index_loads_pairs_and_reports_the_rest() {
    let d = tempfile::tempdir().unwrap();
    let ca = ca(d.path());
    let (cert, key) = leaf(&ca, d.path(), "default", "pem", &["default.test"]);
    let sni = d.path().join("sni");
    std::fs::create_dir(&sni).unwrap();
    leaf(&ca, &sni, "a", "crt", &["a.test"]);
    leaf(&ca, &sni, "b", "pem", &["b.test", "*.wild.test"]);
    // A chain without its key, and a file that is neither .crt nor .pem (ignored).
    let (lonely, lonely_key) = leaf(&ca, &sni, "lonely", "crt", &["lonely.test"]);
    std::fs::remove_file(lonely_key).unwrap();
    std::fs::write(sni.join("notes.txt"), "not a pair").unwrap();

    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let (index, issues) = CertIndex::load(&cert, &key, Some(&sni), &provider).unwrap();
    assert_eq!(index.pairs(), 3, "default, a, b");
    assert_eq!(
        index.names(),
        4,
        "default.test, a.test, b.test, *.wild.test"
    );
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0].path, lonely);
    assert!(issues[0].reason.starts_with("no key file"), "{issues:?}");

    let leaf_of = |sni: Option<&str>| index.lookup(sni).unwrap().cert[0].clone();
    let default = leaf_of(None);
    assert_eq!(leaf_of(Some("unknown.test")), default);
    assert_eq!(leaf_of(Some("default.test")), default);
    assert_ne!(leaf_of(Some("a.test")), default);
    assert_eq!(leaf_of(Some("deep.wild.test")), leaf_of(Some("b.test")));
    assert_eq!(
        leaf_of(Some("a.b.wild.test")),
        default,
        "a wildcard covers one label"
    );
    let served: Vec<&str> = index.served().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(served, ["default", "a", "b"]);
    assert!(index.served().iter().all(|s| s.not_after == NOT_AFTER));
    assert_eq!(index.chains().len(), 3);
}

#[test]
fn bind_refuses_what_cannot_serve() {
    let d = tempfile::tempdir().unwrap();
    let ca = ca(d.path());
    let (cert, key) = leaf(&ca, d.path(), "one", "pem", &["one.test"]);
    let (_, other_key) = leaf(&ca, d.path(), "two", "pem", &["two.test"]);
    let bind_err = |cfg: ServeConfig| match Server::bind(cfg) {
        Ok(_) => panic!("bound"),
        Err(e) => e,
    };

    let mut cfg = config(cert.clone(), key.clone());
    cfg.listen.clear();
    let e = bind_err(cfg);
    assert!(matches!(e, NetError::Config(_)), "{e}");
    assert!(e.to_string().contains("no --listen address"), "{e}");

    let e = bind_err(config(cert.clone(), other_key.clone()));
    assert!(matches!(e, NetError::KeyMismatch { .. }), "{e}");

    let mut cfg = config(cert.clone(), key.clone());
    cfg.handshake_budget = cfg.max_client_hello - 1;
    let e = bind_err(cfg);
    assert!(
        e.to_string().contains("must be at least max_client_hello"),
        "{e}"
    );

    let mut cfg = config(cert.clone(), key.clone());
    cfg.mode = Mode::Backend("127.0.0.1:not-a-port".into());
    let e = bind_err(cfg);
    assert!(
        e.to_string().contains("--backend 127.0.0.1:not-a-port"),
        "{e}"
    );

    // An address in use is a listen error naming it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let mut cfg = config(cert, key);
    cfg.listen = vec![addr];
    let e = bind_err(cfg);
    assert!(matches!(e, NetError::Listen { .. }), "{e}");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
}

#[test]
fn alpn_is_offered_only_for_what_the_application_speaks() {
    let mut cfg = ServeConfig::new(loopback(), PathBuf::new(), PathBuf::new());
    assert_eq!(offered_alpn(&cfg).offered, ["http/1.1"]);
    cfg.alpn = vec!["h2".into(), "http/1.1".into()];
    let o = offered_alpn(&cfg);
    assert_eq!(
        (o.offered, o.dropped),
        (vec!["http/1.1".to_string()], vec!["h2".to_string()])
    );
    cfg.mode = Mode::Echo;
    cfg.alpn.clear();
    assert!(offered_alpn(&cfg).offered.is_empty(), "echo speaks nothing");
    cfg.mode = Mode::Backend("127.0.0.1:1".into());
    cfg.backend_alpn = Some(vec!["h2".into()]);
    assert_eq!(offered_alpn(&cfg).offered, ["h2"]);
}
