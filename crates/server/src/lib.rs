#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
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
