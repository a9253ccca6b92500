#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// Layers, bottom first: a module uses only those above it.
mod error;
mod key;
mod wire;
mod query;
mod update;
mod propagate;
mod provider;

// The public interface is:
pub use error::DnsError;
pub use key::{KeyFileError, TsigAlg, TsigKey};
pub use propagate::wait_for_txt;
pub use provider::{propagation_servers, DnsProvider, Exec, Rfc2136};
pub use query::{query_addrs, query_txt};

/// The owner name of the TXT record DNS-01 (RFC 8555 8.4) reads for `domain`:
/// `_acme-challenge.DOMAIN.`, a wildcard's `*.` removed (`*.example.com` and
/// `example.com` share `_acme-challenge.example.com.`).
pub fn challenge_name(domain: &str) -> String {
    let base = domain
        .strip_prefix("*.")
        .unwrap_or(domain)
        .trim_end_matches('.');
    format!("_acme-challenge.{}.", base.to_ascii_lowercase())
}
