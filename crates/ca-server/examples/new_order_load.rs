//! New-order requests per second on `ca serve` (issue 25's measurement): a CA in a temp
//! directory, the server in this process, one ES256 account, then N newOrder requests
//! (one identifier each) over C keep-alive TLS connections, each request signed with the
//! nonce the previous answer carried. Every order writes its order and authorization files
//! (fsync'd), so this is mostly the disk.
//!
//! `cargo run --release -p tlskit-ca-server --example new_order_load -- [N] [C]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Instant;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use serde_json::{json, Value};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect(addr: SocketAddr, cfg: &Arc<rustls::ClientConfig>) -> BufReader<Tls> {
    let tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let conn = rustls::ClientConnection::new(
        cfg.clone(),
        rustls::pki_types::ServerName::IpAddress(addr.ip().into()),
    )
    .expect("tls");
    BufReader::new(rustls::StreamOwned::new(conn, tcp))
}

/// One request on a keep-alive connection: (status, Replay-Nonce, Location, body).
fn send(
    s: &mut BufReader<Tls>,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String, String, Vec<u8>) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/jose+json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.get_mut().write_all(head.as_bytes()).expect("write");
    s.get_mut().write_all(body).expect("write");
    let mut line = String::new();
    s.read_line(&mut line).expect("status");
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    let (mut len, mut nonce, mut loc) = (0usize, String::new(), String::new());
    loop {
        line.clear();
        s.read_line(&mut line).expect("header");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().expect("length"),
                "replay-nonce" => nonce = v.trim().to_string(),
                "location" => loc = v.trim().to_string(),
                _ => {}
            }
        }
    }
    let mut b = vec![0; len];
    s.read_exact(&mut b).expect("body");
    (status, nonce, loc, b)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let c: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let t = tempfile::tempdir().expect("tempdir");
    let ca = t.path().join("ca");
    tlskit_pki::ca::init(&ca, &tlskit_pki::ca::InitOptions::new().days(3650)).expect("ca init");
    std::fs::write(
        ca.join("acme.toml"),
        // The most the server takes (1 to 1,000,000): never the limit of a run here.
        "[rate_limits]\nnew_orders_per_hour = 1000000\n",
    )
    .expect("acme.toml");
    let opts =
        tlskit_ca_server::ServeOptions::new(ca.clone(), "127.0.0.1:0".parse().expect("addr"));
    let addr = tlskit_testkit::serve_thread::serve_in_thread("ca serve", |ready| {
        tlskit_ca_server::serve(opts, ready)
    });
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca.join("ca.pem")).expect("ca.pem")
    {
        roots.add(cert.expect("cert")).expect("root");
    }
    let cfg = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    let key = Arc::new(
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).expect("key"),
    );
    let sign = move |key: &EcdsaKeyPair, header: Value, payload: &Value| {
        let p = B64.encode(header.to_string());
        let pl = B64.encode(payload.to_string());
        let sig = key
            .sign(&SystemRandom::new(), format!("{p}.{pl}").as_bytes())
            .expect("sign");
        json!({"protected": p, "payload": pl, "signature": B64.encode(sig.as_ref())})
            .to_string()
            .into_bytes()
    };
    let base = format!("https://{addr}");
    let pt = key.public_key().as_ref().to_vec();
    let jwk =
        json!({"crv":"P-256","kty":"EC","x":B64.encode(&pt[1..33]),"y":B64.encode(&pt[33..])});
    let mut s = connect(addr, &cfg);
    let (_, nonce, _, _) = send(&mut s, addr, "HEAD", "/acme/new-nonce", b"");
    let body = sign(
        &key,
        json!({"alg":"ES256","jwk":jwk,"nonce":nonce,"url":format!("{base}/acme/new-account")}),
        &json!({"termsOfServiceAgreed": true}),
    );
    let (st, _, kid, _) = send(&mut s, addr, "POST", "/acme/new-account", &body);
    assert_eq!(st, 201);
    let t0 = Instant::now();
    let per = n / c;
    let workers: Vec<_> = (0..c)
        .map(|w| {
            let (cfg, key, kid, base) = (cfg.clone(), key.clone(), kid.clone(), base.clone());
            std::thread::spawn(move || {
                let mut s = connect(addr, &cfg);
                let (_, mut nonce, _, _) = send(&mut s, addr, "HEAD", "/acme/new-nonce", b"");
                for i in 0..per {
                    let body = sign(
                        &key,
                        json!({"alg":"ES256","kid":kid,"nonce":nonce,"url":format!("{base}/acme/new-order")}),
                        &json!({"identifiers":[{"type":"dns","value":format!("w{w}-{i}.example.test")}]}),
                    );
                    let (st, next, _, b) = send(&mut s, addr, "POST", "/acme/new-order", &body);
                    assert_eq!(st, 201, "{}", String::from_utf8_lossy(&b));
                    nonce = next;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let secs = t0.elapsed().as_secs_f64();
    let done = per * c;
    println!(
        "{done} newOrder requests over {c} connections in {secs:.2} s: {:.0} per second",
        done as f64 / secs
    );
}
