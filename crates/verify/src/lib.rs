//! tlskit verify crate.
