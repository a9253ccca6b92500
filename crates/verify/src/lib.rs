//! Chain verification on the store's index, reference names (IDNA), rustls verifiers,
//! and a verification cache.
#![deny(missing_docs)]

pub mod names;
