#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// Modules are listed bottom layer first: each uses only those above it in this list.
mod client;
pub mod kx;
pub mod probe;
pub mod starttls;

pub use client::{connect, ConnectOptions, ConnectReport, Connected, PeerOptions};
pub use tlskit_tls::NetError;
