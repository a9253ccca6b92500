//! The metrics listener's health endpoints and TCP health checks, through the public API:
//! a server bound on 127.0.0.1:0 with an rcgen pair, `run` on a thread, plain HTTP to
//! `--metrics`, SIGTERM raised in-process to drain it. The log events are read by a
//! process-wide `tracing` subscriber (the server logs from its runtime's threads).
//!
//! Every running server of the process hears a SIGTERM: tests that run one hold
//! [`RUNNING`].
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use tlskit_server::{Mode, NetError, ServeConfig, Server};

static RUNNING: Mutex<()> = Mutex::new(());

fn running() -> MutexGuard<'static, ()> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// One log event: its level and fields (`event` included).
#[derive(Debug, Clone)]
struct Logged {
    level: tracing_core::Level,
    fields: HashMap<String, String>,
}

impl Logged {
    fn get(&self, k: &str) -> &str {
        self.fields.get(k).map_or("", String::as_str)
    }
}

/// Every event logged in this process since [`Events::clear`].
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<Logged>>>);

impl Events {
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
    fn seen(&self) -> Vec<Logged> {
        self.0.lock().unwrap().clone()
    }
}

struct Fields(HashMap<String, String>);

impl tracing_core::field::Visit for Fields {
    fn record_debug(&mut self, f: &tracing_core::Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().to_string(), format!("{v:?}"));
    }
    fn record_str(&mut self, f: &tracing_core::Field, v: &str) {
        self.0.insert(f.name().to_string(), v.to_string());
    }
}

impl tracing_core::Subscriber for Events {
    fn enabled(&self, _: &tracing_core::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing_core::span::Attributes<'_>) -> tracing_core::span::Id {
        tracing_core::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing_core::span::Id, _: &tracing_core::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing_core::span::Id, _: &tracing_core::span::Id) {}
    fn event(&self, e: &tracing_core::Event<'_>) {
        let mut f = Fields(HashMap::new());
        e.record(&mut f);
        let level = *e.metadata().level();
        if let Ok(mut seen) = self.0.lock() {
            seen.push(Logged { level, fields: f.0 });
        }
    }
    fn enter(&self, _: &tracing_core::span::Id) {}
    fn exit(&self, _: &tracing_core::span::Id) {}
}

/// The process-wide subscriber (installed once).
fn events() -> &'static Events {
    static EVENTS: OnceLock<Events> = OnceLock::new();
    EVENTS.get_or_init(|| {
        let e = Events::default();
        tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(e.clone()))
            .expect("the only global subscriber");
        e
    })
}

/// A CA and a leaf for `test.example` under `dir` (`chain.pem`, `leaf.key`); the CA.
fn pki(dir: &Path) -> CertificateDer<'static> {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let root =
        rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["test.example".to_string()]).unwrap();
    let leaf = params.signed_by(&key, &root).unwrap();
    std::fs::write(dir.join("chain.pem"), leaf.pem() + &root.pem()).unwrap();
    std::fs::write(dir.join("leaf.key"), key.serialize_pem()).unwrap();
    CertificateDer::from(root.der().to_vec())
}

/// Echo on 127.0.0.1:0 with metrics on 127.0.0.1:0, no file watching.
fn config(dir: &Path) -> ServeConfig {
    let mut cfg = ServeConfig::new(
        vec!["127.0.0.1:0".parse().unwrap()],
        dir.join("chain.pem"),
        dir.join("leaf.key"),
    );
    cfg.mode = Mode::Echo;
    cfg.watch = false;
    cfg.metrics = Some("127.0.0.1:0".parse().unwrap());
    cfg.shutdown_grace = Duration::from_secs(2);
    cfg
}

struct Running {
    addr: SocketAddr,
    metrics: SocketAddr,
    done: mpsc::Receiver<Result<(), NetError>>,
}

fn start(cfg: ServeConfig) -> Running {
    // Installed before the server registers its events.
    events();
    let server = Server::bind(cfg).unwrap();
    let addr = server.local_addrs()[0];
    let metrics = server.metrics_addr().expect("a metrics listener");
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
    fn sigterm(&self) {
        // Server::bind installed the SIGTERM handler: the process is not killed.
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
    }
    fn wait(self) {
        let r = self
            .done
            .recv_timeout(Duration::from_secs(20))
            .expect("run returns after SIGTERM");
        assert!(r.is_ok(), "{r:?}");
    }
    fn stop(self) {
        self.sigterm();
        self.wait();
    }
}

/// What the metrics listener answered `request`: the status line, the head, the body.
fn ask(addr: SocketAddr, request: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    (status, head.to_string(), body.to_string())
}

fn get(addr: SocketAddr, path: &str) -> (String, String, String) {
    ask(addr, &format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n"))
}

/// The value of one series in a scrape (0 when absent).
fn series(scrape: &str, name: &str) -> u64 {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// Poll `check` every 10 ms until it holds, for at most 10 s (the server works on its own
/// threads); whether it held.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    check()
}

/// A TLS 1.3 connection that has echoed `ping`, left open.
fn echo_open(
    addr: SocketAddr,
    ca: &CertificateDer<'static>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let conn =
        rustls::ClientConnection::new(Arc::new(cfg), ServerName::try_from("test.example").unwrap())
            .unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    tls.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
    tls
}

/// /healthz and /readyz answer 200 in plain text once the certificates are loaded, HEAD
/// without a body; another method is 405; /metrics and any other request still get the
/// Prometheus text with the head they always had.
#[test]
fn healthz_and_readyz_answer_200_when_serving_and_metrics_are_unchanged() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    pki(d.path());
    let r = start(config(d.path()));
    let m = r.metrics;

    let (status, head, body) = get(m, "/healthz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{head}");
    assert!(
        head.contains("Content-Type: text/plain; charset=utf-8"),
        "{head}"
    );
    assert!(head.contains("Content-Length: 3"), "{head}");
    assert_eq!(body, "ok\n");

    let (status, head, body) = get(m, "/readyz");
    assert_eq!(status, "HTTP/1.1 200 OK", "{head}");
    assert_eq!(body, "ready\n");
    // HAProxy's `option httpchk` sends HTTP/1.0 (and a query string is ignored).
    let (status, _, body) = ask(m, "GET /readyz?verbose HTTP/1.0\r\n\r\n");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ready\n")
    );
    let (status, head, body) = ask(m, "HEAD /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(head.contains("Content-Length: 6"), "{head}");
    assert_eq!(body, "", "HEAD: no body");

    let (status, head, _) = ask(m, "POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(head.contains("Allow: GET, HEAD"), "{head}");

    // The metrics: for /metrics and for anything else, as before the health endpoints.
    for request in [
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET / HTTP/1.0\r\n\r\n",
        "GET /health HTTP/1.1\r\n\r\n",
    ] {
        let (status, head, body) = ask(m, request);
        assert_eq!(
            head,
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close",
                body.len()
            ),
            "{request}"
        );
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(
            body.contains("# TYPE tlskit_handshakes_total counter"),
            "{request}: {body}"
        );
    }
    // A request line that never ends: the metrics once the client stops sending.
    let mut s = TcpStream::connect(m).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /readyz").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.contains("# TYPE tlskit_handshakes_total counter"),
        "{out}"
    );
    r.stop();
}

/// After SIGTERM, while an open connection holds the drain, /readyz answers 503 (and
/// /healthz still 200: the process serves what it has); the server stops once the
/// connection closes.
#[test]
fn readyz_is_503_while_draining() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    let ca = pki(d.path());
    let mut cfg = config(d.path());
    // Long enough that the drain ends when the connection closes, not by itself.
    cfg.shutdown_grace = Duration::from_secs(60);
    let r = start(cfg);
    let m = r.metrics;
    let open = echo_open(r.addr, &ca);
    assert_eq!(get(m, "/readyz").2, "ready\n");

    r.sigterm();
    let mut last = (String::new(), String::new(), String::new());
    let drained = eventually(|| {
        last = get(m, "/readyz");
        last.0 == "HTTP/1.1 503 Service Unavailable"
    });
    assert!(drained, "/readyz during the drain: {last:?}");
    assert_eq!(last.2, "not ready: draining after SIGTERM or SIGINT\n");
    let (status, _, body) = get(m, "/healthz");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok\n")
    );
    assert!(
        matches!(r.done.try_recv(), Err(mpsc::TryRecvError::Empty)),
        "still draining: the connection is open"
    );
    drop(open);
    r.wait();
}

/// A TCP check that connects and closes (with a FIN, or a reset as HAProxy's checks do)
/// without a byte is counted as `no_client_hello` and logged at debug level only; a
/// client that sent one byte and left is still a warned `eof`.
#[test]
fn a_connect_and_close_counts_no_client_hello_and_warns_nothing() {
    let _g = running();
    let events = events();
    let d = tempfile::tempdir().unwrap();
    pki(d.path());
    let r = start(config(d.path()));
    events.clear();

    let fin = TcpStream::connect(r.addr).unwrap();
    let fin_port = fin.local_addr().unwrap().port();
    drop(fin);
    let rst = TcpStream::connect(r.addr).unwrap();
    let rst_port = rst.local_addr().unwrap().port();
    socket2::SockRef::from(&rst)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(rst);

    let debug_lines = |ev: &[Logged]| {
        ev.iter()
            .filter(|e| e.get("event") == "no_client_hello")
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut scrape = String::new();
    let counted = eventually(|| {
        scrape = get(r.metrics, "/metrics").2;
        series(
            &scrape,
            "tlskit_handshake_failures_total{reason=\"no_client_hello\"}",
        ) == 2
            && debug_lines(&events.seen()).len() == 2
    });
    assert!(counted, "{:?}\n{scrape}", events.seen());
    assert_eq!(
        series(&scrape, "tlskit_handshake_failures_total{reason=\"eof\"}"),
        0
    );
    let lines = debug_lines(&events.seen());
    assert!(lines.iter().all(|e| e.level == tracing_core::Level::DEBUG));
    let mut ports: Vec<String> = lines
        .iter()
        .map(|e| e.get("peer").rsplit(':').next().unwrap_or("").to_string())
        .collect();
    ports.sort();
    let mut want = vec![fin_port.to_string(), rst_port.to_string()];
    want.sort();
    assert_eq!(ports, want, "one line per check, naming its peer");
    let warned: Vec<Logged> = events
        .seen()
        .into_iter()
        .filter(|e| e.level <= tracing_core::Level::WARN)
        .collect();
    assert!(warned.is_empty(), "warnings for TCP checks: {warned:?}");

    // One byte, then gone: a client that broke off, warned as before.
    let mut one = TcpStream::connect(r.addr).unwrap();
    one.write_all(&[22]).unwrap();
    drop(one);
    let warned_eof = eventually(|| {
        events.seen().iter().any(|e| {
            e.level == tracing_core::Level::WARN
                && e.get("event") == "handshake_failed"
                && e.get("class") == "eof"
        })
    });
    assert!(warned_eof, "{:?}", events.seen());
    let scrape = get(r.metrics, "/metrics").2;
    assert_eq!(
        series(&scrape, "tlskit_handshake_failures_total{reason=\"eof\"}"),
        1
    );
    assert_eq!(
        series(
            &scrape,
            "tlskit_handshake_failures_total{reason=\"no_client_hello\"}"
        ),
        2
    );
    r.stop();
}

/// A server with `--acme` for `acme.test` on an ACME CA that cannot be reached (port 1
/// on loopback: refused), storage in `storage`.
#[cfg(feature = "acme")]
fn acme_config(storage: &Path) -> ServeConfig {
    let mut cfg = ServeConfig::new(
        vec!["127.0.0.1:0".parse().unwrap()],
        std::path::PathBuf::new(),
        std::path::PathBuf::new(),
    );
    cfg.watch = false;
    cfg.metrics = Some("127.0.0.1:0".parse().unwrap());
    cfg.shutdown_grace = Duration::from_secs(2);
    cfg.acme = Some(tlskit_server::AcmeSettings::new(
        "https://127.0.0.1:1/directory".into(),
        vec!["acme.test".into()],
        storage.to_path_buf(),
    ));
    cfg
}

/// With `--acme` and no certificate yet, the server serves (/healthz 200) but is not
/// ready (/readyz 503); with the certificate in its storage it is ready at once.
#[cfg(feature = "acme")]
#[test]
fn an_acme_server_is_ready_only_with_its_certificate() {
    let _g = running();
    let d = tempfile::tempdir().unwrap();
    let storage = d.path().join("acme");
    let r = start(acme_config(&storage));
    let (status, _, body) = get(r.metrics, "/healthz");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok\n")
    );
    let (status, _, body) = get(r.metrics, "/readyz");
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    assert_eq!(body, "not ready: no ACME certificate yet\n");
    r.stop();

    // The same server with a certificate for acme.test in its storage.
    use tlskit_acme::AcmeStorage;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(vec!["acme.test".to_string()]).unwrap();
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2090, 1, 1);
    p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = p.self_signed(&key).unwrap();
    tlskit_acme::FsStorage::open(&storage)
        .unwrap()
        .store_cert(
            "acme.test",
            &tlskit_acme::StoredCert::new(leaf.pem(), key.serialize_pem()),
        )
        .unwrap();
    let r = start(acme_config(&storage));
    let (status, _, body) = get(r.metrics, "/readyz");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ready\n")
    );
    r.stop();
}
