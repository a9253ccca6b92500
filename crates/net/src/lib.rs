//! tlskit net crate.
