//! The reference for `tlskit serve`'s cost (issue 15): a bare rustls server with the same
//! features and nothing else. tokio (multi-thread runtime, as serve) + tokio-rustls, the
//! aws-lc-rs provider's default groups (X25519MLKEM768, X25519, secp256r1, secp384r1),
//! TLS 1.3 and 1.2, rustls's rotating ticketer sending 2 TLS 1.3 tickets, its default
//! session cache. Each connection: handshake, read one request head, write a fixed small
//! HTTP response with `Connection: close`, close.
//!
//! ```sh
//! bare-rustls CHAIN.pem KEY.pem     # prints `listening on 127.0.0.1:PORT` on stderr
//! ```
//! Before that line it prints `connection future N bytes`, the size of the future each
//! connection's task holds (bench/README.md, "Memory at scale").
//! No bounds, deadlines, logging or metrics: that is what it measures the absence of.

use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 23\r\nConnection: close\r\n\r\nhello from bare rustls\n";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [chain, key] = args.as_slice() else {
        return Err(anyhow!("usage: bare-rustls CHAIN.pem KEY.pem"));
    };
    let certs = CertificateDer::pem_file_iter(chain)
        .with_context(|| chain.clone())?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| chain.clone())?;
    let key = PrivateKeyDer::from_pem_file(key).with_context(|| key.clone())?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    cfg.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()?;
    cfg.send_tls13_tickets = 2;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        // What each connection's task holds at least (bench/README.md, memory at scale).
        eprintln!("connection future {} bytes", future_size(connection));
        eprintln!("listening on {}", listener.local_addr()?);
        loop {
            let (tcp, _) = listener.accept().await?;
            tokio::spawn(connection(acceptor.clone(), tcp));
        }
    })
}

/// One connection (the task spawned for it).
async fn connection(acceptor: tokio_rustls::TlsAcceptor, tcp: tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
    let Ok(mut tls) = acceptor.accept(tcp).await else {
        return;
    };
    let mut buf = [0u8; 4096];
    let mut seen = 0;
    while seen < buf.len() {
        match tls.read(&mut buf[seen..]).await {
            Ok(0) | Err(_) => return,
            Ok(n) => seen += n,
        }
        if buf[..seen].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    if tls.write_all(RESPONSE).await.is_ok() {
        let _ = tls.shutdown().await;
    }
}

/// Bytes of the future an async fn of two arguments returns (a task's state).
fn future_size<A, B, F: std::future::Future>(_: fn(A, B) -> F) -> usize {
    std::mem::size_of::<F>()
}
