//! The terminator's clock, through the public API: a server bound with
//! `Server::bind_with_clock` rotates its session-ticket keys, ages its tickets and warns
//! about expiring certificates by that clock, so a test moves a `ManualClock` instead of
//! waiting.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};
use tlskit_server::{Mode, ServeConfig, Server};
use tlskit_tls::ManualClock;

/// A CA and a leaf for `test.example` under `dir` (`chain.pem`, `leaf.key`); the CA's
/// certificate.
fn pki(dir: &Path) -> CertificateDer<'static> {
    pki_valid(dir, None)
}

/// [`pki`] with the leaf valid over `validity` (rcgen's default otherwise).
fn pki_valid(
    dir: &Path,
    validity: Option<(time::OffsetDateTime, time::OffsetDateTime)>,
) -> CertificateDer<'static> {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let root = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().expect("key"))
        .expect("ca");
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(vec!["test.example".to_string()]).expect("params");
    if let Some((not_before, not_after)) = validity {
        params.not_before = not_before;
        params.not_after = not_after;
    }
    let leaf = params.signed_by(&key, &root).expect("leaf");
    std::fs::write(dir.join("chain.pem"), leaf.pem() + &root.pem()).expect("chain");
    std::fs::write(dir.join("leaf.key"), key.serialize_pem()).expect("key");
    CertificateDer::from(root.der().to_vec())
}

/// One HTTP request over TLS 1.3 (its response read, so the ticket sent after the
/// handshake reached the client); how the handshake went.
fn request(client: &Arc<ClientConfig>, addr: std::net::SocketAddr) -> HandshakeKind {
    let name = ServerName::try_from("test.example").expect("name");
    let conn = ClientConnection::new(client.clone(), name).expect("client");
    let sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut tls = StreamOwned::new(conn, sock);
    tls.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("write");
    let mut response = Vec::new();
    // The server may close without close_notify: what was read before counts.
    let _ = tls.read_to_end(&mut response);
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    tls.conn.handshake_kind().expect("handshake done")
}

/// `--ticket-rotation 2` on a manual clock: a ticket of the key that has since become
/// the previous one resumes; a ticket older than two periods gets a full handshake. On
/// the system clock this needs 6.4 s of waiting; here the clock is moved.
#[test]
fn ticket_keys_rotate_and_tickets_age_by_the_servers_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = pki(dir.path());
    let mut cfg = ServeConfig::new(
        vec!["127.0.0.1:0".parse().expect("addr")],
        dir.path().join("chain.pem"),
        dir.path().join("leaf.key"),
    );
    cfg.mode = Mode::Http;
    cfg.watch = false;
    cfg.ticket_rotation = Duration::from_secs(2);
    let clock = Arc::new(ManualClock::at_unix(1_800_000_000));
    let server = Server::bind_with_clock(cfg, clock.clone()).expect("bind");
    let addr = server.local_addrs()[0];
    // Runs until the test process ends (it stops on SIGTERM only).
    std::thread::spawn(move || server.run());

    let mut roots = rustls::RootCertStore::empty();
    roots.add(root).expect("root");
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let client = Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    assert_eq!(request(&client, addr), HandshakeKind::Full);
    assert_eq!(
        request(&client, addr),
        HandshakeKind::Resumed,
        "a fresh ticket resumes"
    );
    // Past one period: the next use rotates; the ticket's key is the previous one.
    clock.advance(Duration::from_millis(3200));
    assert_eq!(
        request(&client, addr),
        HandshakeKind::Resumed,
        "a ticket of the previous key resumes"
    );
    // The newest ticket (made at the last resumption) is now older than two periods.
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        request(&client, addr),
        HandshakeKind::Full,
        "a ticket older than two periods gets a full handshake"
    );
}

/// Events logged (tlskit's events are `tracing` events): their `event` field.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

struct EventName(Option<String>);

impl tracing_core::field::Visit for EventName {
    fn record_debug(&mut self, f: &tracing_core::Field, v: &dyn std::fmt::Debug) {
        if f.name() == "event" {
            self.0 = Some(format!("{v:?}"));
        }
    }
    fn record_str(&mut self, f: &tracing_core::Field, v: &str) {
        if f.name() == "event" {
            self.0 = Some(v.to_string());
        }
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
        let mut name = EventName(None);
        e.record(&mut name);
        if let (Some(n), Ok(mut seen)) = (name.0, self.0.lock()) {
            seen.push(n);
        }
    }
    fn enter(&self, _: &tracing_core::span::Id) {}
    fn exit(&self, _: &tracing_core::span::Id) {}
}

/// The certificate events `Server::bind_with_clock` logs for a leaf valid from
/// 2027-01-01 to 2027-03-01 (14 warning days) with the clock at `now`.
fn expiry_events_at(now: time::OffsetDateTime) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    pki_valid(
        dir.path(),
        Some((
            rcgen::date_time_ymd(2027, 1, 1),
            rcgen::date_time_ymd(2027, 3, 1),
        )),
    );
    let mut cfg = ServeConfig::new(
        vec!["127.0.0.1:0".parse().expect("addr")],
        dir.path().join("chain.pem"),
        dir.path().join("leaf.key"),
    );
    cfg.watch = false;
    cfg.expiry_warning_days = 14;
    let secs = u64::try_from(now.unix_timestamp()).expect("after 1970");
    let clock = Arc::new(ManualClock::at_unix(secs));
    let events = Events::default();
    tracing_core::dispatcher::with_default(&tracing_core::Dispatch::new(events.clone()), || {
        drop(Server::bind_with_clock(cfg, clock).expect("bind"))
    });
    let seen = events.0.lock().map(|s| s.clone()).unwrap_or_default();
    seen.into_iter()
        .filter(|e| e.starts_with("certificate_") && e != "certificates_loaded")
        .collect()
}

/// The expiry warnings at start read the server's clock: nothing 2 months before the
/// end, "expires soon" 9 days before, "expired" after it, "not yet valid" before the
/// start. (On the system clock the same certificate would have to be made for today.)
#[test]
fn expiry_warnings_at_start_follow_the_servers_clock() {
    let at = |y, m, d| expiry_events_at(rcgen::date_time_ymd(y, m, d));
    assert_eq!(at(2027, 1, 2), Vec::<String>::new());
    assert_eq!(at(2027, 2, 20), ["certificate_expires_soon"]);
    assert_eq!(at(2027, 3, 2), ["certificate_expired"]);
    assert_eq!(at(2026, 12, 31), ["certificate_not_yet_valid"]);
}
