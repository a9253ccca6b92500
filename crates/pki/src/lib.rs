//! tlskit pki crate.
