#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![allow(clippy::unwrap_used)]

// Bottom first: a module uses only those above it (the layer check holds this crate too).
pub mod hostile;
pub mod layers;
pub mod pki;
pub mod run;
pub mod show;
pub mod store_certs;
pub mod verify_pki;
pub mod net_support;
pub mod store_pki;
pub mod tree;
pub mod serve_thread;
