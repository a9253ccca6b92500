#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
mod conn;
mod hello;
mod http;
mod process;
mod systemd;
mod tickets;
mod proxy;
mod optional;
mod config;
mod certs;
mod metrics;
mod services;
mod state;
mod health;
mod reload;
mod control;
mod connection;
mod server;
mod settings;
#[doc(hidden)]
pub mod fuzzing;

pub use certs::{CertIndex, PairIssue, ServedCert, SniResolver};
pub use config::{offered_alpn, ranges, AlpnOffer, CaHints, Mode, Range, ServeConfig};
pub use control::{
    runtime_control_path, ControlCert, ControlRenewal, ControlReply, ControlStatus, ControlStore,
    CONTROL_SOCKET_NAME, MAX_RENEW_WAIT, MAX_REQUEST, RELOAD_WAIT, RENEW_WAIT, REQUEST_DEADLINE,
};
pub use hello::{DEFAULT_HANDSHAKE_BUDGET, DEFAULT_MAX_CLIENT_HELLO};
pub use metrics::Metrics;
pub use optional::{AcmeSettings, SharedSettings};
pub use reload::RELOAD_DEADLINE;
pub use server::Server;
pub use settings::{
    parse_compression, parse_tls_versions, AcmeChallenge, ClientAuth, LogFormat, LogSettings,
    Respond, ServeSettings, SettingsError, ValueError,
};
pub use state::{ReloadError, ReloadResult};
pub use tlskit_tls::{
    load_certified_key, load_signing_key, Compression, NetError, TlsVersion, SEND_BUFFER,
};
