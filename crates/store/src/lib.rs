//! tlskit store crate.
