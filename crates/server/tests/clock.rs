//! The terminator's clock, through the public API: a server bound with
//! `Server::bind_with_clock` rotates its session-ticket keys and ages its tickets by that
//! clock, so a test moves a `ManualClock` instead of waiting for the keys to turn.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};
use tlskit_server::{Mode, ServeConfig, Server};
use tlskit_tls::ManualClock;

/// A CA and a leaf for `test.example` under `dir` (`chain.pem`, `leaf.key`); the CA's
/// certificate.
fn pki(dir: &Path) -> CertificateDer<'static> {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let root = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().expect("key"))
        .expect("ca");
    let key = rcgen::KeyPair::generate().expect("key");
    let leaf = rcgen::CertificateParams::new(vec!["test.example".to_string()])
        .expect("params")
        .signed_by(&key, &root)
        .expect("leaf");
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
