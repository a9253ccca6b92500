//! ACME for the short-lived era against a real Pebble (issue 26): certificates that live
//! a minute renewed under a steady handshake load, and IP-address identifiers (RFC 8738).
//! Pebble and its helpers are `acme.rs`'s.
