//! tlskit server: the TLS terminator behind `tlskit serve`, on tokio + rustls with the
//! aws-lc-rs provider. Its public API is blocking: [`Server::bind`] then
//! [`Server::run`] build and run their own runtime.
//!
//! Every TLS socket gets TCP_NODELAY and a send buffer that holds a whole flight before
//! the handshake starts, and rustls hands each flight to the kernel in one vectored
//! write, so a long certificate chain costs no extra round trip beyond TCP's window.
//!
//! Features: `acme` (certificates from an ACME CA, `tlskit-acme`) and `fleet` (session
//! ticket keys and ACME state shared through Redis, `tlskit-fleet`); the `tlskit` binary
//! turns both on. Without them the terminator compiles neither instant-acme, hyper nor
//! a Redis client.
//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

mod config;
mod conn;
mod hello;
mod http;
mod process;
mod systemd;
mod tickets;
mod proxy;
mod optional;
mod certs;
mod metrics;
mod services;
mod server;
#[doc(hidden)]
pub mod fuzzing;

pub use certs::{CertIndex, PairIssue, ServedCert, SniResolver};
pub use config::{ranges, FileConfig, Range};
pub use hello::{DEFAULT_HANDSHAKE_BUDGET, DEFAULT_MAX_CLIENT_HELLO};
pub use metrics::Metrics;
pub use optional::{AcmeSettings, SharedSettings};
pub use server::{offered_alpn, AlpnOffer, CaHints, Mode, ServeConfig, Server, RELOAD_DEADLINE};
pub use tlskit_tls::{
    load_certified_key, load_signing_key, Compression, NetError, TlsVersion, SEND_BUFFER,
};
