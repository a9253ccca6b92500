//! ACME for the short-lived era against a real Pebble (issue 26): certificates that live
//! a minute renewed under a steady handshake load, and IP-address identifiers (RFC 8738).
//! Pebble and its helpers are `acme.rs`'s.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::acme::{acme, json, s, serve_acme, until, Pebble};

/// Pebble with a one-minute profile and a 90-day one: an order that names no profile
/// gets either at random, so a renewal that dropped `--acme-profile minute` shows as a
/// certificate that lives 90 days.
fn pebble_minute() -> Pebble {
    Pebble::start_with(serde_json::json!({
        "minute": {"description": "one minute", "validityPeriod": 60},
        "long": {"description": "90 days", "validityPeriod": 7776000}
    }))
}

/// (notBefore, notAfter) of a DER certificate, Unix seconds.
fn validity(der: &[u8]) -> (i64, i64) {
    let (_, c) = x509_parser::parse_x509_certificate(der).expect("a certificate");
    (
        c.validity().not_before.timestamp(),
        c.validity().not_after.timestamp(),
    )
}

fn validity_of_file(pem: &Path) -> (i64, i64) {
    let der = CertificateDer::pem_file_iter(pem)
        .expect("pem")
        .next()
        .expect("one certificate")
        .expect("certificate");
    validity(&der)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// What one client handshake saw.
struct Seen {
    /// When the handshake finished (Unix seconds).
    at: f64,
    /// The leaf served, or the handshake's error.
    leaf: Result<Vec<u8>, String>,
}

/// One verified TLS handshake with `srv.test` on `port` (rustls, Pebble's issuing root
/// as the only anchor, the clock of the machine): the leaf served, or why it failed.
fn handshake(cfg: &Arc<rustls::ClientConfig>, port: u16) -> Result<Vec<u8>, String> {
    let name = ServerName::try_from("srv.test").map_err(|e| e.to_string())?;
    let mut conn = rustls::ClientConnection::new(cfg.clone(), name).map_err(|e| e.to_string())?;
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(|e| e.to_string())?;
    }
    conn.peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .ok_or_else(|| "no certificate".to_string())
}

/// Issue 26: certificates that live one minute, served by `serve --acme --acme-profile
/// minute` under a steady handshake load for more than three lifetimes. Every handshake
/// verifies (0 failures), no client is ever served an expired (or not yet valid)
/// certificate, each certificate is replaced before it expires, and every certificate
/// lives one minute (the profile was sent on every renewal). `acme issue` and `acme
/// renew` keep the profile too.
#[test]
fn acme_minute_certificates_renewed_under_load_with_the_profile_kept() {
    let p = pebble_minute();
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("pebble-root.pem");
    p.issuing_root(&root);

    // `acme issue` then `acme renew` (due at once: Pebble's ARI window opens at
    // issuance), both with the profile.
    let storage = t.path().join("acme-cli");
    let http = format!("127.0.0.1:{}", p.http_port);
    let key = s(&t.path().join("cli.key"));
    let chain = t.path().join("cli.pem");
    let args = |sub: &'static str| {
        vec![
            sub,
            "--domain",
            "cli.test",
            "--key",
            key.as_str(),
            "-o",
            chain.to_str().expect("utf-8"),
            "--http-listen",
            http.as_str(),
            "--acme-profile",
            "minute",
            "--json",
            "--log-level",
            "info",
        ]
    };
    let (code, _, err) = acme(&p, &storage, &args("issue"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("profile=minute"), "{err}");
    let (nb, na) = validity_of_file(&chain);
    assert!((55..=61).contains(&(na - nb)), "lifetime {} s", na - nb);
    for _ in 0..3 {
        let (code, out, err) = acme(&p, &storage, &args("renew"));
        assert_eq!(code, 0, "{err}");
        let r = json(&out);
        assert_eq!(r["renewed"], true, "{out}");
        assert!(err.contains("profile=minute"), "{err}");
        let (nb2, na2) = validity_of_file(&chain);
        assert!(na2 >= na, "a newer certificate");
        assert!(
            (55..=61).contains(&(na2 - nb2)),
            "renewed lifetime {} s",
            na2 - nb2
        );
    }

    // `serve --acme` under load.
    let storage = t.path().join("acme");
    let srv = serve_acme(&p, &storage, &["--acme-profile", "minute"]);
    let port = p.tls_port;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&root).expect("root") {
        roots.add(c.expect("certificate")).expect("root");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    // The first certificate, then the load.
    until(Duration::from_secs(60), || handshake(&cfg, port).ok())
        .unwrap_or_else(|| panic!("no certificate served: {}\n{}", srv.stderr(), p.log()));
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let run_for = Duration::from_secs(200);
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (cfg, seen, stop) = (cfg.clone(), seen.clone(), stop.clone());
            std::thread::spawn(move || {
                let t0 = Instant::now();
                // Bounded: the run's length, and at most 20,000 handshakes a client.
                for _ in 0..20_000 {
                    if stop.load(Ordering::Relaxed) || t0.elapsed() > run_for {
                        break;
                    }
                    let leaf = handshake(&cfg, port);
                    let at = unix_now();
                    seen.lock().expect("seen").push(Seen { at, leaf });
                    std::thread::sleep(Duration::from_millis(25));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    stop.store(true, Ordering::Relaxed);
    let seen = std::mem::take(&mut *seen.lock().expect("seen"));
    let log = srv.stderr();

    let failed: Vec<&String> = seen.iter().filter_map(|s| s.leaf.as_ref().err()).collect();
    // Each certificate served: when clients first and last saw it, and its validity.
    let mut certs: Vec<(Vec<u8>, f64, f64)> = Vec::new();
    let mut expired_served = 0usize;
    for s in &seen {
        let Ok(leaf) = &s.leaf else { continue };
        let (nb, na) = validity(leaf);
        if (na as f64) < s.at || (nb as f64) > s.at + 1.0 {
            expired_served += 1;
        }
        match certs.iter_mut().find(|(d, _, _)| d == leaf) {
            Some(c) => c.2 = s.at,
            None => certs.push((leaf.clone(), s.at, s.at)),
        }
    }
    let renewals = log.matches("event=acme_certificate_installed").count();
    eprintln!(
        "minute certificates under load: {} handshakes over {} s, {} failed, {} expired \
         served, {} certificates served, {} installed by serve, {} acme_failed lines",
        seen.len(),
        run_for.as_secs(),
        failed.len(),
        expired_served,
        certs.len(),
        renewals,
        log.matches("event=acme_failed").count()
    );
    assert!(
        seen.len() > 1000,
        "a steady load: {} handshakes",
        seen.len()
    );
    assert!(
        failed.is_empty(),
        "failed handshakes: {:?}\n{log}",
        &failed[..failed.len().min(5)]
    );
    assert_eq!(expired_served, 0, "expired certificates served\n{log}");
    // More than three lifetimes: at least four certificates, each one minute long (the
    // profile kept), each replaced before it expired (its successor was served first).
    assert!(
        certs.len() >= 4,
        "{} certificates in {} s\n{log}",
        certs.len(),
        run_for.as_secs()
    );
    for (i, (der, first, last)) in certs.iter().enumerate() {
        let (nb, na) = validity(der);
        assert!(
            (55..=61).contains(&(na - nb)),
            "certificate {i} lives {} s: the profile was dropped\n{log}",
            na - nb
        );
        assert!(
            *last <= na as f64,
            "certificate {i} served after it expired"
        );
        if let Some((_, next_first, _)) = certs.get(i + 1) {
            assert!(
                *next_first < na as f64,
                "certificate {i} not replaced before it expired (first seen {first})"
            );
        }
    }
    let orders = log.matches("event=acme_order_created").count();
    assert_eq!(
        log.matches("profile=minute").count(),
        orders,
        "every order asks for the profile\n{log}"
    );
}

/// The IP-address SANs of a DER certificate, as text.
fn ip_sans(der: &[u8]) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let (_, c) = x509_parser::parse_x509_certificate(der).expect("a certificate");
    let mut out = Vec::new();
    if let Ok(Some(san)) = c.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::IPAddress(b) => match <[u8; 4]>::try_from(*b) {
                    Ok(v4) => out.push(std::net::IpAddr::from(v4).to_string()),
                    Err(_) => out.push(format!("{b:02x?}")),
                },
                GeneralName::DNSName(d) => out.push(format!("dns:{d}")),
                _ => {}
            }
        }
    }
    out
}

/// Issue 26: an IP address as `--domain` is an `ip` identifier (RFC 8738), validated over
/// HTTP-01 and over TLS-ALPN-01 (Pebble's SNI is the reverse-DNS name,
/// 1.0.0.127.in-addr.arpa), with `--acme-profile shortlived`; the certificate's one SAN
/// is the address, and `serve --acme` with it answers a client that connects by IP
/// (no SNI), verified by rustls against Pebble's root for the IP address.
#[test]
fn acme_ip_identifier_over_http01_and_tls_alpn01_served_by_ip() {
    let p = Pebble::start_with(serde_json::json!({
        "shortlived": {"description": "6 days", "validityPeriod": 518400},
        "long": {"description": "90 days", "validityPeriod": 7776000}
    }));
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path().join("pebble-root.pem");
    p.issuing_root(&root);
    let key = s(&t.path().join("ip.key"));
    let http = format!("127.0.0.1:{}", p.http_port);
    let tls = format!("127.0.0.1:{}", p.tls_port);
    for (listen_flag, listen, challenge) in [
        ("--http-listen", &http, "http-01"),
        ("--tls-listen", &tls, "tls-alpn-01"),
    ] {
        let chain = t.path().join(format!("{challenge}.pem"));
        // An account per challenge: Pebble hands back a valid authorization of the same
        // account one order in a hundred even at PEBBLE_AUTHZREUSE=0, and then the second
        // order would be validated by no challenge at all.
        let storage = t.path().join(format!("acme-{challenge}"));
        let (code, out, err) = acme(
            &p,
            &storage,
            &[
                "issue",
                "--domain",
                "127.0.0.1",
                "--key",
                &key,
                "-o",
                &s(&chain),
                listen_flag,
                listen,
                "--acme-profile",
                "shortlived",
                "--json",
            ],
        );
        assert_eq!(code, 0, "{challenge}: {err}\n{}", p.log());
        let r = json(&out);
        assert_eq!(r["challenge"], challenge);
        assert_eq!(r["domains"], serde_json::json!(["127.0.0.1"]), "{out}");
        let der = CertificateDer::pem_file_iter(&chain)
            .expect("pem")
            .next()
            .expect("one")
            .expect("certificate");
        assert_eq!(ip_sans(&der), ["127.0.0.1"], "{challenge}");
        let (nb, na) = validity(&der);
        assert!(
            (518_390..=518_400).contains(&(na - nb)),
            "{challenge}: the shortlived profile (6 days), not {} s",
            na - nb
        );
    }

    // serve --acme for the IP address alone; a client connecting by IP sends no SNI.
    let listen = format!("127.0.0.1:{}", p.tls_port);
    let dir = p.directory();
    let roots = s(&p.roots);
    let st = s(&t.path().join("serve"));
    let srv = crate::net_support::Serve::start(&[
        "--listen",
        &listen,
        "--respond",
        "echo",
        "--acme",
        &dir,
        "--domain",
        "127.0.0.1",
        "--acme-storage",
        &st,
        "--acme-roots",
        &roots,
        "--acme-profile",
        "shortlived",
    ]);
    let mut anchors = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&root).expect("root") {
        anchors.add(c.expect("certificate")).expect("root");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(anchors)
            .with_no_client_auth(),
    );
    let by_ip = || {
        let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
        let mut conn = rustls::ClientConnection::new(cfg.clone(), name).ok()?;
        let mut sock = std::net::TcpStream::connect(("127.0.0.1", p.tls_port)).ok()?;
        sock.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).ok()?;
        }
        conn.peer_certificates()?
            .first()
            .map(|c| c.as_ref().to_vec())
    };
    let leaf = until(Duration::from_secs(60), by_ip)
        .unwrap_or_else(|| panic!("no certificate served by IP: {}\n{}", srv.stderr(), p.log()));
    assert_eq!(ip_sans(&leaf), ["127.0.0.1"]);
    let log = srv.stderr();
    assert!(
        log.contains("event=acme_tlsalpn01_answered sni=1.0.0.127.in-addr.arpa"),
        "{log}"
    );
    assert!(log.contains("profile=shortlived"), "{log}");
}
