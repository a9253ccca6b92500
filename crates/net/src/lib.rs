//! tlskit net: the TLS terminator behind `tlskit serve` and the client behind
//! `tlskit connect`, on tokio + rustls with the aws-lc-rs provider. The only crate with
//! an async runtime; its public API is blocking (each entry point builds its runtime).
//!
//! Every TLS socket gets TCP_NODELAY and a send buffer that holds a whole flight before
//! the handshake starts, and rustls hands each flight to the kernel in one vectored
//! write, so a long certificate chain costs no extra round trip beyond TCP's window.

pub mod acme;
mod certs;
mod client;
pub mod compress;
mod config;
mod conn;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod hello;
mod http;
pub mod kx;
pub mod log;
mod metrics;
pub mod probe;
mod process;
mod proxy;
mod ratelimit;
mod resp;
mod server;
pub mod shared;
mod sock;
pub mod starttls;
mod systemd;
mod tickets;
mod tls_text;

pub use certs::{
    load_certified_key, load_signing_key, CertIndex, PairIssue, ServedCert, SniResolver,
};
pub use client::{connect, ConnectOptions, ConnectReport, Connected, PeerOptions};
pub use config::{ranges, FileConfig, Range};
pub use error::NetError;
pub use hello::{DEFAULT_HANDSHAKE_BUDGET, DEFAULT_MAX_CLIENT_HELLO};
pub use metrics::Metrics;
pub use server::{
    offered_alpn, AlpnOffer, CaHints, Compression, Mode, ServeConfig, Server, TlsVersion,
    RELOAD_DEADLINE,
};
pub use sock::SEND_BUFFER;
