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
//! Settings: [`ServeSettings`] reads `serve`'s TOML file with every value typed, merges it
//! with the caller's settings (a command line's flags win) and makes the [`ServeConfig`]
//! for [`Server::bind`], checking every range and every setting that needs another.
//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

mod certs;
mod config;
mod conn;
#[doc(hidden)]
pub mod fuzzing;
mod hello;
mod http;
mod metrics;
mod optional;
mod process;
mod proxy;
mod server;
mod services;
mod settings;
mod systemd;
mod tickets;

pub use certs::{CertIndex, PairIssue, ServedCert, SniResolver};
pub use config::{ranges, Range};
pub use hello::{DEFAULT_HANDSHAKE_BUDGET, DEFAULT_MAX_CLIENT_HELLO};
pub use metrics::Metrics;
pub use optional::{AcmeSettings, SharedSettings};
pub use server::{offered_alpn, AlpnOffer, CaHints, Mode, ServeConfig, Server, RELOAD_DEADLINE};
pub use settings::{
    parse_compression, parse_tls_versions, AcmeChallenge, ClientAuth, LogFormat, LogSettings,
    Respond, ServeSettings, SettingsError, ValueError,
};
pub use tlskit_tls::{
    load_certified_key, load_signing_key, Compression, NetError, TlsVersion, SEND_BUFFER,
};
