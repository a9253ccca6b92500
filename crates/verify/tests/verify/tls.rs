//! rustls integration over real loopback TCP handshakes: client certificates verified on
//! the live store, resumption bound to the store generation, CA hints.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cloned_ref_to_slice_refs
)]

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use common::*;
use rcgen::ExtendedKeyUsagePurpose;
use rustls::client::danger::ServerCertVerifier;
use rustls::client::Resumption;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::{ClientConfig, HandshakeKind, ServerConfig};
use tlskit_store::StoreHandle;
use tlskit_verify::{
    GenerationClientSessions, GenerationSessionCache, GenerationTickets, HintOverflow, RootHints,
    ServerName, StoreClientVerifier, StoreServerVerifier, UnixTime, VerifierConfig, MAX_HINT_BYTES,
};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn key_der(c: &Ca) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key.serialize_der()))
}

struct World {
    root: Ca,
    other_root: Ca,
    server: Ca,
    client: Ca,
}

fn world() -> World {
    let root = root("Handshake Root");
    let other_root = root_fn("Unrelated Root");
    let server = leaf_with(
        with_eku(
            leaf_params(&["server.test"]),
            &[ExtendedKeyUsagePurpose::ServerAuth],
        ),
        &root,
    );
    let client = leaf_with(
        with_eku(
            leaf_params(&["client.test"]),
            &[ExtendedKeyUsagePurpose::ClientAuth],
        ),
        &root,
    );
    World {
        root,
        other_root,
        server,
        client,
    }
}

fn root_fn(cn: &str) -> Ca {
    common::root(cn)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Resume {
    Tickets,
    Stateful,
}

fn server_config(w: &World, handle: &Arc<StoreHandle>, mode: Resume) -> Arc<ServerConfig> {
    server_config_v(w, handle, mode, &rustls::version::TLS13)
}

fn server_config_v(
    w: &World,
    handle: &Arc<StoreHandle>,
    mode: Resume,
    version: &'static rustls::SupportedProtocolVersion,
) -> Arc<ServerConfig> {
    let verifier = Arc::new(StoreClientVerifier::new(
        handle.clone(),
        VerifierConfig::default(),
        RootHints::default(),
    ));
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[version])
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![w.server.der.clone()], key_der(&w.server))
        .unwrap();
    cfg.session_storage = Arc::new(GenerationSessionCache::new(
        rustls::server::ServerSessionMemoryCache::new(64),
        handle.clone(),
    ));
    if mode == Resume::Tickets {
        cfg.ticketer = Arc::new(GenerationTickets::new(
            rustls::crypto::aws_lc_rs::Ticketer::new().unwrap(),
            handle.clone(),
        ));
    }
    Arc::new(cfg)
}

fn client_config(w: &World, client_handle: &Arc<StoreHandle>, bound: bool) -> Arc<ClientConfig> {
    let verifier = Arc::new(StoreServerVerifier::new(
        client_handle.clone(),
        VerifierConfig::default(),
    ));
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(vec![w.client.der.clone()], key_der(&w.client))
        .unwrap();
    if bound {
        let h = client_handle.clone();
        cfg.resumption = Resumption::store(Arc::new(GenerationClientSessions::new(h, || {
            Arc::new(rustls::client::ClientSessionMemoryCache::new(32))
        })));
    }
    Arc::new(cfg)
}

/// One connection over loopback TCP. Returns (server result, client result), each the
/// handshake kind or the error text.
fn handshake(
    server: &Arc<ServerConfig>,
    client: &Arc<ClientConfig>,
) -> (Result<HandshakeKind, String>, Result<HandshakeKind, String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = server.clone();
    let t = std::thread::spawn(move || -> Result<HandshakeKind, String> {
        let (sock, _) = listener.accept().map_err(|e| e.to_string())?;
        let conn = rustls::ServerConnection::new(server).map_err(|e| e.to_string())?;
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(b"hello").map_err(|e| e.to_string())?;
        tls.flush().map_err(|e| e.to_string())?;
        // Drive the handshake to its end (client certificate) by reading.
        let mut buf = [0u8; 5];
        tls.read_exact(&mut buf).map_err(|e| e.to_string())?;
        let kind = tls.conn.handshake_kind().ok_or("no handshake kind")?;
        tls.conn.send_close_notify();
        let _ = tls.flush();
        Ok(kind)
    });
    let client_result = (|| -> Result<HandshakeKind, String> {
        let sock = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        let conn = rustls::ClientConnection::new(
            client.clone(),
            ServerName::try_from("server.test").unwrap(),
        )
        .map_err(|e| e.to_string())?;
        let mut tls = rustls::StreamOwned::new(conn, sock);
        let mut buf = [0u8; 5];
        tls.read_exact(&mut buf).map_err(|e| e.to_string())?;
        tls.write_all(b"world").map_err(|e| e.to_string())?;
        tls.flush().map_err(|e| e.to_string())?;
        let kind = tls.conn.handshake_kind().ok_or("no handshake kind")?;
        // Read the close_notify (and any tickets) so they are processed.
        let mut rest = Vec::new();
        let _ = tls.read_to_end(&mut rest);
        Ok(kind)
    })();
    let server_result = t.join().unwrap();
    (server_result, client_result)
}

fn resumption_after_reload(mode: Resume) {
    resumption_after_reload_v(mode, &rustls::version::TLS13);
}

fn resumption_after_reload_v(mode: Resume, version: &'static rustls::SupportedProtocolVersion) {
    let w = world();
    let server_handle = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let client_handle = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let scfg = server_config_v(&w, &server_handle, mode, version);
    let ccfg = client_config(&w, &client_handle, false);

    // Full handshake, client certificate accepted.
    let (s, c) = handshake(&scfg, &ccfg);
    assert_eq!(s, Ok(HandshakeKind::Full));
    assert_eq!(c, Ok(HandshakeKind::Full));
    // Same generation: resumed.
    let (s, c) = handshake(&scfg, &ccfg);
    assert_eq!(s, Ok(HandshakeKind::Resumed));
    assert_eq!(c, Ok(HandshakeKind::Resumed));

    // Reload with exactly the same anchors: the session is still resumed.
    server_handle.replace(store(&[&w.root.der]));
    let (s, c) = handshake(&scfg, &ccfg);
    assert_eq!(s, Ok(HandshakeKind::Resumed));
    assert_eq!(c, Ok(HandshakeKind::Resumed));

    // Reload that keeps the client's CA but adds another: the anchor set changed, the
    // session is not resumed, the full handshake succeeds.
    server_handle.replace(store(&[&w.root.der, &w.other_root.der]));
    let (s, c) = handshake(&scfg, &ccfg);
    assert_eq!(s, Ok(HandshakeKind::Full));
    assert_eq!(c, Ok(HandshakeKind::Full));
    let (s, _) = handshake(&scfg, &ccfg);
    assert_eq!(s, Ok(HandshakeKind::Resumed));

    // Reload that removes the client's CA: no resumption, and the full handshake fails
    // on the client certificate.
    server_handle.replace(store(&[&w.other_root.der]));
    let (s, _c) = handshake(&scfg, &ccfg);
    let err = s.expect_err("the client's CA is gone: the handshake must fail");
    assert!(
        err.contains("UnknownIssuer") || err.contains("unknown"),
        "{err}"
    );
}

#[test]
fn resumption_with_tickets_does_not_survive_reload() {
    resumption_after_reload(Resume::Tickets);
}

#[test]
fn resumption_with_session_cache_does_not_survive_reload() {
    resumption_after_reload(Resume::Stateful);
}

#[test]
fn tls12_resumption_with_tickets_does_not_survive_reload() {
    resumption_after_reload_v(Resume::Tickets, &rustls::version::TLS12);
}

#[test]
fn tls12_resumption_with_session_ids_does_not_survive_reload() {
    resumption_after_reload_v(Resume::Stateful, &rustls::version::TLS12);
}

#[test]
fn client_session_store_is_bound_to_client_store_generation() {
    let w = world();
    let server_handle = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let client_handle = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let scfg = server_config(&w, &server_handle, Resume::Tickets);
    let ccfg = client_config(&w, &client_handle, true);
    assert_eq!(handshake(&scfg, &ccfg).1, Ok(HandshakeKind::Full));
    assert_eq!(handshake(&scfg, &ccfg).1, Ok(HandshakeKind::Resumed));
    // The client's store reloads with the same anchors: its sessions are kept.
    client_handle.replace(store(&[&w.root.der]));
    assert_eq!(handshake(&scfg, &ccfg).1, Ok(HandshakeKind::Resumed));
    // A reload that changes the anchors (one added): its sessions are forgotten.
    client_handle.replace(store(&[&w.root.der, &w.other_root.der]));
    assert_eq!(handshake(&scfg, &ccfg).1, Ok(HandshakeKind::Full));
    // The client's store drops the server's CA: the full handshake fails on the client.
    client_handle.replace(store(&[&w.other_root.der]));
    let (_, c) = handshake(&scfg, &ccfg);
    assert!(c.is_err(), "{c:?}");
}

#[test]
fn server_verifier_follows_reloads() {
    let w = world();
    let h = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let v = StoreServerVerifier::new(h.clone(), VerifierConfig::default());
    let name = ServerName::try_from("server.test").unwrap();
    let now = UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        ymd(2030, 1, 1).unix_timestamp() as u64,
    ));
    assert!(v
        .verify_server_cert(&w.server.der, &[], &name, &[], now)
        .is_ok());
    assert!(v
        .verify_server_cert(&w.server.der, &[], &name, &[], now)
        .is_ok()); // cached
    h.replace(store(&[&w.other_root.der]));
    let e = v
        .verify_server_cert(&w.server.der, &[], &name, &[], now)
        .unwrap_err();
    assert_eq!(
        e,
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
    );
    // A wrong name maps to rustls's name error.
    h.replace(store(&[&w.root.der]));
    let other = ServerName::try_from("other.test").unwrap();
    let e = v
        .verify_server_cert(&w.server.der, &[], &other, &[], now)
        .unwrap_err();
    assert_eq!(
        e,
        rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)
    );
    assert!(!v.supported_verify_schemes().is_empty());
}

fn hint_bytes(h: &[rustls::DistinguishedName]) -> usize {
    h.iter().map(|d| 2 + d.as_ref().len()).sum()
}

#[test]
fn client_auth_hints_are_capped_follow_reloads_and_can_be_off() {
    let w = world();
    let many = filler_roots(3000); // ~3000 * 30 bytes: more than 65,535 bytes of names
    let mut refs: Vec<_> = many.iter().collect();
    refs.push(&w.root.der);
    let h = Arc::new(StoreHandle::from_store(store(&[&w.root.der])));
    let mk = |hints| StoreClientVerifier::new(h.clone(), VerifierConfig::default(), hints);

    let default = mk(RootHints::default());
    let one = default.root_hint_subjects();
    assert_eq!(one.len(), 1);
    // The hint is the DER Name with its SEQUENCE header, as rustls sends it.
    use x509_parser::prelude::FromDer;
    let (_, dn) = x509_parser::x509::X509Name::from_der(one[0].as_ref()).unwrap();
    assert_eq!(dn.to_string(), "CN=Handshake Root");
    assert!(default.client_auth_mandatory());

    let off = mk(RootHints::Off);
    assert!(off.root_hint_subjects().is_empty());

    let huge = RootHints::FromStore {
        max_names: usize::MAX,
        max_bytes: usize::MAX,
        overflow: HintOverflow::Truncate,
    };
    let trunc = mk(huge);
    let omit = mk(RootHints::FromStore {
        max_names: usize::MAX,
        max_bytes: usize::MAX,
        overflow: HintOverflow::Omit,
    });
    let capped = mk(RootHints::FromStore {
        max_names: 10,
        max_bytes: 1 << 20,
        overflow: HintOverflow::Truncate,
    });
    // Reload to the big store: every verifier follows it.
    h.replace(store(&refs));
    assert!(h.current().ca_names().encoded_len() > MAX_HINT_BYTES);
    let t = trunc.root_hint_subjects();
    assert!(
        !t.is_empty() && hint_bytes(t) <= MAX_HINT_BYTES,
        "{}",
        hint_bytes(t)
    );
    assert!(
        omit.root_hint_subjects().is_empty(),
        "over the limit: omitted"
    );
    assert_eq!(capped.root_hint_subjects().len(), 10);
    assert!(
        default.root_hint_subjects().is_empty(),
        "default caps at 16 KiB, Omit"
    );
    // And back.
    h.replace(store(&[&w.root.der]));
    assert_eq!(trunc.root_hint_subjects().len(), 1);
}

/// Issue 13: the refusal behind a rustls error from tlskit's verifiers reads back as the
/// sentence and rule code, never rustls's debug output (`Other(OtherError(..))`).
#[test]
fn certificate_refusal_reads_back_sentence_and_rule() {
    use tlskit_verify::{CertificateRefusal, VerifyError};
    let e: rustls::Error = VerifyError::ChainTooDeep { limit: 4 }.into();
    assert!(
        e.to_string().contains("OtherError("),
        "rustls shows debug: {e}"
    );
    let r = CertificateRefusal::of(&e).expect("a certificate error");
    assert_eq!(r.rule, "chain-too-deep");
    assert_eq!(
        r.sentence,
        VerifyError::ChainTooDeep { limit: 4 }.to_string()
    );
    let e: rustls::Error = VerifyError::UnknownIssuer {
        issuer: "CN=x".into(),
    }
    .into();
    let r = CertificateRefusal::of(&e).expect("a certificate error");
    assert_eq!(r.rule, "unknown-issuer");
    assert!(!r.sentence.contains("UnknownIssuer"), "{r}");
    assert!(CertificateRefusal::of(&rustls::Error::DecryptError).is_none());
}
