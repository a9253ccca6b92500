#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
pub mod starttls;
pub mod kx;
mod client;
pub mod probe;

pub use client::{connect, ConnectOptions, ConnectReport, Connected, PeerOptions};
pub use tlskit_tls::NetError;
