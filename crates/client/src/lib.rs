//! tlskit client: the client side of tlskit, on tokio + rustls (aws-lc-rs). Its public
//! API is blocking: each entry point builds its own runtime.
//!
//! - [`connect`]: a TLS connection checked by tlskit's verifier (the store's index, a
//!   profile), with a report of what was negotiated.
//! - [`probe`]: a handshake timed from the outside, flight by flight, that says why a
//!   handshake was slow (an extra round trip, a HelloRetryRequest, a chain that did not
//!   fit the congestion window).
//! - [`starttls`]: the plain-text upgrade of SMTP, IMAP, POP3, FTP, XMPP, LDAP and
//!   PostgreSQL before the handshake.
//!
//! This crate does not compile redis, hyper or instant-acme: those belong to
//! `tlskit-acme` and `tlskit-fleet`, which only the terminator uses.
//!
//! Modules are listed bottom layer first: each uses only those above it in this list.

pub mod starttls;
pub mod kx;
mod client;
pub mod probe;

pub use client::{connect, ConnectOptions, ConnectReport, Connected, PeerOptions};
pub use tlskit_tls::NetError;
