//! tlskit-client through its public API, as a program embedding `connect` and `probe`
//! would use it: against a rustls server this test runs on 127.0.0.1 (one thread per
//! connection), verified against a trust-store file; STARTTLS against a fake SMTP server
//! on a loopback socket. Test PKI is made here with rcgen; no external peer.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tlskit_client::probe::{probe, ProbeOptions};
use tlskit_client::starttls::{smtp_reply, ReplyError, Starttls, StarttlsError};
use tlskit_client::{connect, ConnectOptions, NetError, PeerOptions};
use tlskit_store::Source;

/// A CA (its PEM in `dir/ca.pem`) and a server leaf for `name` issued by it.
struct Pki {
    ca_pem: PathBuf,
    chain: Vec<CertificateDer<'static>>,
    key: PrivatePkcs8KeyDer<'static>,
    /// The CA itself, to issue more.
    ca: CertifiedIssuer<'static, KeyPair>,
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p
}

fn leaf_params(cn: &str, eku: ExtendedKeyUsagePurpose) -> CertificateParams {
    let mut p = CertificateParams::new(vec![cn.to_string()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.use_authority_key_identifier_extension = true;
    p.extended_key_usages = vec![eku];
    p
}

fn pki(dir: &Path, ca_name: &str, server: &str) -> Pki {
    let ca =
        CertifiedIssuer::self_signed(ca_params(ca_name), KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = leaf_params(server, ExtendedKeyUsagePurpose::ServerAuth)
        .signed_by(&key, &ca)
        .unwrap();
    let ca_pem = dir.join(format!("{ca_name}.pem"));
    std::fs::write(&ca_pem, ca.pem()).unwrap();
    Pki {
        ca_pem,
        chain: vec![leaf.der().clone(), ca.der().clone()],
        key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        ca,
    }
}

/// What the server saw of one connection.
#[derive(Debug)]
struct Seen {
    sni: Option<String>,
    client_cert: bool,
}

fn server_config(p: &Pki, client_ca: Option<&Pki>) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.ca.der().clone()).unwrap();
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(v)
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder
        .with_single_cert(p.chain.clone(), PrivateKeyDer::Pkcs8(p.key.clone_key()))
        .unwrap();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(cfg)
}

/// Handshake on `tcp`, report what was seen, then read until the client goes.
fn serve_tls(cfg: Arc<rustls::ServerConfig>, mut tcp: TcpStream, seen: &mpsc::Sender<Seen>) {
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut conn = rustls::ServerConnection::new(cfg).unwrap();
    while conn.is_handshaking() {
        if conn.complete_io(&mut tcp).is_err() {
            return;
        }
    }
    let _ = seen.send(Seen {
        sni: conn.server_name().map(str::to_string),
        client_cert: conn.peer_certificates().is_some_and(|c| !c.is_empty()),
    });
    let mut s = rustls::Stream::new(&mut conn, &mut tcp);
    let mut buf = [0u8; 1024];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

/// A TLS server on 127.0.0.1: every connection on its own thread, for the rest of the
/// test binary's life.
fn tls_server(cfg: Arc<rustls::ServerConfig>) -> (SocketAddr, mpsc::Receiver<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for tcp in l.incoming().flatten() {
            let (cfg, tx) = (cfg.clone(), tx.clone());
            std::thread::spawn(move || serve_tls(cfg, tcp, &tx));
        }
    });
    (addr, rx)
}

fn peer(addr: SocketAddr, name: &str, roots: &Path) -> PeerOptions {
    let mut p = PeerOptions::new(addr.to_string());
    p.server_name = Some(name.into());
    p.roots = vec![Source::File(roots.to_path_buf())];
    p.timeout = Duration::from_secs(10);
    p
}

fn options(peer: PeerOptions) -> ConnectOptions {
    ConnectOptions::new(peer)
}

/// The error of a connection that must fail (`Connected` has no `Debug`).
fn connect_err(o: &ConnectOptions) -> NetError {
    match connect(o) {
        Ok(c) => panic!("connected: {:?}", c.report),
        Err(e) => e,
    }
}

#[test]
fn connect_verifies_a_local_server_against_a_store_file() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Client Test CA", "server.test");
    let (addr, seen) = tls_server(server_config(&p, None));
    let mut o = options(peer(addr, "server.test", &p.ca_pem));
    o.alpn = vec!["h2".into()];
    let c = connect(&o).unwrap();
    let r = &c.report;
    assert!(r.verified, "{:?} {:?}", r.rule, r.reason);
    assert_eq!((r.rule, r.reason.as_deref()), (None, None));
    assert_eq!(r.peer, addr.to_string());
    assert_eq!(r.server_name, "server.test");
    assert_eq!(r.tls_version, "TLSv1.3");
    assert!(r.cipher_suite.starts_with("TLS13_"), "{}", r.cipher_suite);
    assert_eq!(r.alpn.as_deref(), Some("h2"));
    assert_eq!(r.presented_certs, 2);
    assert_eq!(
        r.presented_bytes,
        p.chain.iter().map(|c| c.len()).sum::<usize>()
    );
    assert_eq!(r.chain.len(), 2, "{:?}", r.chain);
    assert!(r.chain[0].contains("server.test"), "{:?}", r.chain);
    assert!(r.chain[1].contains("Client Test CA"), "{:?}", r.chain);
    assert!(!r.resumed);
    assert!(r.expires_in_days.is_some_and(|d| d > 365));
    assert!(r.kx.key_exchange_group.is_some());
    c.close();
    let s = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        s.sni.as_deref(),
        Some("server.test"),
        "the name is sent as SNI"
    );
    assert!(!s.client_cert);
}

#[test]
fn tls12_is_offered_alone_when_asked() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "TLS12 CA", "server.test");
    let (addr, _seen) = tls_server(server_config(&p, None));
    let mut peer = peer(addr, "server.test", &p.ca_pem);
    peer.versions = vec![tlskit_tls::TlsVersion::Tls12];
    let c = connect(&options(peer)).unwrap();
    assert_eq!(c.report.tls_version, "TLSv1.2");
    assert!(c.report.verified);
    c.close();
}

#[test]
fn a_second_connection_resumes_the_first_session() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Resume CA", "server.test");
    let (addr, _seen) = tls_server(server_config(&p, None));
    let mut o = options(peer(addr, "server.test", &p.ca_pem));
    o.reconnect = true;
    let c = connect(&o).unwrap();
    assert!(
        c.report.resumed,
        "the report describes the resumed second connection"
    );
    assert!(c.report.verified);
    c.close();
}

#[test]
fn a_refused_chain_is_reported_with_its_rule_not_an_error() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Served CA", "server.test");
    let other = pki(d.path(), "Other CA", "unused.test");
    let (addr, _seen) = tls_server(server_config(&p, None));

    // Trusting another CA: the issuer is unknown.
    let c = connect(&options(peer(addr, "server.test", &other.ca_pem))).unwrap();
    let r = &c.report;
    assert!(!r.verified);
    assert_eq!(r.rule, Some("unknown-issuer"), "{:?}", r.reason);
    assert!(r.reason.as_deref().is_some_and(|s| !s.is_empty()));
    // The chain as sent, leaf first.
    assert_eq!(r.chain.len(), 2);
    assert!(r.chain[0].contains("server.test"), "{:?}", r.chain);
    c.close();

    // The right CA, the wrong name.
    let c = connect(&options(peer(addr, "elsewhere.test", &p.ca_pem))).unwrap();
    assert!(!c.report.verified);
    assert_eq!(
        c.report.rule,
        Some("name-mismatch"),
        "{:?}",
        c.report.reason
    );
    assert!(
        c.report
            .reason
            .as_deref()
            .is_some_and(|s| s.contains("elsewhere.test")),
        "{:?}",
        c.report.reason
    );
    c.close();
}

#[test]
fn a_client_certificate_is_presented_when_given() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Mutual CA", "server.test");
    let client_key = KeyPair::generate().unwrap();
    let client = leaf_params("client.test", ExtendedKeyUsagePurpose::ClientAuth)
        .signed_by(&client_key, &p.ca)
        .unwrap();
    let cert = d.path().join("client.pem");
    let key = d.path().join("client.key");
    std::fs::write(&cert, client.pem()).unwrap();
    std::fs::write(&key, client_key.serialize_pem()).unwrap();
    let (addr, seen) = tls_server(server_config(&p, Some(&p)));
    let mut o = options(peer(addr, "server.test", &p.ca_pem));
    o.client_cert = Some((cert.clone(), key));
    let c = connect(&o).unwrap();
    assert!(c.report.verified);
    c.close();
    assert!(
        seen.recv_timeout(Duration::from_secs(10))
            .unwrap()
            .client_cert
    );

    // A key that is not the certificate's stops before connecting, naming both files.
    let wrong = d.path().join("wrong.key");
    std::fs::write(&wrong, KeyPair::generate().unwrap().serialize_pem()).unwrap();
    o.client_cert = Some((cert.clone(), wrong.clone()));
    let e = connect_err(&o);
    assert!(matches!(e, NetError::KeyMismatch { .. }), "{e}");
    assert!(e.to_string().contains(&wrong.display().to_string()), "{e}");
}

#[test]
fn an_unreachable_target_is_a_connect_error_naming_it() {
    // A port that was just free: nothing listens there.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Unused CA", "server.test");
    let e = connect_err(&options(peer(addr, "server.test", &p.ca_pem)));
    assert!(matches!(e, NetError::Connect { .. }), "{e}");
    assert!(e.to_string().starts_with("cannot connect to"), "{e}");
    assert!(e.to_string().contains(&addr.to_string()), "{e}");
    let bad = options(PeerOptions::new("no-port-here"));
    assert!(connect(&bad).is_err());
}

/// A fake SMTP server: greeting, EHLO reply (`offer` STARTTLS or not), then a 220 to
/// STARTTLS and a TLS handshake. Returns its address.
fn smtp_server(cfg: Arc<rustls::ServerConfig>, offer: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut tcp, _) = l.accept().unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.write_all(b"220 mx.test ESMTP ready\r\n").unwrap();
        let mut rd = BufReader::new(tcp.try_clone().unwrap());
        let mut line = String::new();
        rd.read_line(&mut line).unwrap();
        assert!(line.to_ascii_uppercase().starts_with("EHLO "), "{line}");
        if offer {
            tcp.write_all(b"250-mx.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n")
                .unwrap();
        } else {
            tcp.write_all(b"250-mx.test\r\n250 PIPELINING\r\n").unwrap();
            return;
        }
        line.clear();
        rd.read_line(&mut line).unwrap();
        assert_eq!(line.trim_end(), "STARTTLS");
        tcp.write_all(b"220 go ahead\r\n").unwrap();
        let (tx, _rx) = mpsc::channel();
        serve_tls(cfg, tcp, &tx);
    });
    addr
}

#[test]
fn smtp_starttls_upgrades_then_verifies() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "SMTP CA", "mx.test");
    let addr = smtp_server(server_config(&p, None), true);
    let mut peer = peer(addr, "mx.test", &p.ca_pem);
    peer.starttls = Some(Starttls::Smtp);
    let c = connect(&options(peer)).unwrap();
    assert_eq!(c.report.starttls.as_deref(), Some("smtp"));
    assert!(c.report.verified, "{:?}", c.report.reason);
    c.close();
}

#[test]
fn smtp_without_starttls_is_refused_quoting_the_server() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "SMTP CA 2", "mx.test");
    let addr = smtp_server(server_config(&p, None), false);
    let mut peer = peer(addr, "mx.test", &p.ca_pem);
    peer.starttls = Some(Starttls::Smtp);
    let e = connect_err(&options(peer));
    let NetError::Starttls { reason, .. } = &e else {
        panic!("not a STARTTLS error: {e}");
    };
    let why = reason.downcast_ref::<StarttlsError>().unwrap();
    assert!(
        matches!(
            why,
            StarttlsError::Refused {
                proto: Starttls::Smtp,
                step: "STARTTLS not offered",
                ..
            }
        ),
        "{why}"
    );
    let text = e.to_string();
    assert!(
        text.contains("250-mx.test / 250 PIPELINING"),
        "the server's words are quoted: {text}"
    );
}

#[test]
fn smtp_replies_parse_line_by_line() {
    let mut input: &[u8] = b"250-mx.test\r\n250-SIZE 10\r\n250 starttls\r\n220 next\r\n";
    let r = smtp_reply(&mut input).unwrap();
    assert_eq!(r.code, "250");
    assert_eq!(r.lines.len(), 3);
    assert!(r.offers("STARTTLS"), "keywords match in any case");
    assert!(!r.offers("AUTH"));
    assert_eq!(r.text(), "250-mx.test / 250-SIZE 10 / 250 starttls");
    // Nothing after the reply was consumed.
    assert_eq!(input, b"220 next\r\n");

    let mut cut: &[u8] = b"250-mx.test\r\n250-SIZE";
    assert!(matches!(smtp_reply(&mut cut), Err(ReplyError::Closed)));
    let long = vec![b'2'; tlskit_client::starttls::MAX_LINE + 10];
    assert!(matches!(
        smtp_reply(&mut long.as_slice()),
        Err(ReplyError::LineTooLong { .. })
    ));
    assert_eq!(Starttls::parse("IMAP"), Some(Starttls::Imap));
    assert_eq!(Starttls::parse("ftp"), None);
}

#[test]
fn probe_times_a_local_handshake_flight_by_flight() {
    let d = tempfile::tempdir().unwrap();
    let p = pki(d.path(), "Probe CA", "server.test");
    let (addr, _seen) = tls_server(server_config(&p, None));
    let mut po = ProbeOptions::new(peer(addr, "server.test", &p.ca_pem));
    po.repeat = 2;
    let r = probe(&po).unwrap();
    assert!(r.verified, "{:?}", r.reason);
    assert_eq!(r.tls_version, "TLSv1.3");
    assert_eq!(r.chain_certs, 2);
    assert_eq!(
        r.chain_bytes,
        p.chain.iter().map(|c| c.len()).sum::<usize>()
    );
    assert_eq!(
        r.handshake_rtts, 1,
        "a full TLS 1.3 handshake is one round trip"
    );
    assert!(!r.server_flights.is_empty());
    assert!(r.server_flights.iter().all(|f| f.bytes > 0));
    assert_eq!(r.runs.len(), 2, "one run per repeat");
    let resumed = r.resumption.as_ref().unwrap();
    assert!(resumed.resumed, "the resumption attempt resumed");
    assert!(!r.timeline.is_empty());
}
