//! A `rediss://` server's certificate checked with tlskit's verifier, under the profile
//! and allowed rules of `--shared-state-ca-profile` / `--shared-state-ca-allow`.
//!
//! tlskit speaks RESP itself (`resp.rs`) and makes its own TLS connections to a
//! `rediss://` server with [`client_config`]: [`tlskit_verify::StoreServerVerifier`] on
//! `--shared-state-ca` (else the system's roots), so the server's chain is checked like
//! every other chain tlskit verifies.

use std::sync::Arc;

use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{StoreServerVerifier, VerifierConfig};

use crate::error::NetError;
use crate::shared::SharedSettings;

/// The TLS client configuration for a `rediss://` server: tlskit's verifier on
/// `--shared-state-ca` (else the system's roots), under the settings' profile and allowed
/// rules.
pub(crate) fn client_config(s: &SharedSettings) -> Result<rustls::ClientConfig, NetError> {
    let sources = match &s.ca {
        Some(p) => vec![Source::File(p.clone())],
        None => vec![Source::System],
    };
    let (handle, report) =
        StoreHandle::new(sources).map_err(|e| NetError::Store(format!("shared-state CA: {e}")))?;
    if handle.current().is_empty() {
        let why = report
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no certificates".into());
        return Err(NetError::Store(format!(
            "shared-state CA: nothing loadable ({why})"
        )));
    }
    let verifier = StoreServerVerifier::new(
        Arc::new(handle),
        VerifierConfig {
            profile: s.ca_profile,
            allow: s.ca_allow.clone(),
            ..VerifierConfig::default()
        },
    );
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous() // not a bypass: tlskit's own verifier on the given anchors
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}
