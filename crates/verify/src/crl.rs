//! [`Crl`]: a parsed certificate revocation list, as the profile, the RFC 5280 validator
//! and the chain builder read it. It is parsed by [`Crl::from_der`], which lives with the
//! chain builder (its refusal is a `VerifyError`, the top layer's error).

use std::sync::Arc;

use webpki::CertRevocationList;

/// A parsed certificate revocation list.
#[derive(Debug, Clone)]
pub struct Crl {
    /// `None`: a CRL rustls-webpki cannot use (its scope is a distribution point, indirect
    /// or by reasons), read by the RFC 5280 validator only.
    pub(crate) inner: Option<Arc<CertRevocationList<'static>>>,
    pub(crate) next_update: Option<i64>,
    /// Raw issuer Name (for the profile's CRL rules).
    pub(crate) issuer: Arc<[u8]>,
    /// The DER, for RFC 5280 path validation when rustls-webpki refuses a path.
    pub(crate) der: Arc<[u8]>,
    pub(crate) has_number: bool,
    pub(crate) number_critical: bool,
    /// authorityKeyIdentifier keyIdentifier: which key signed it.
    pub(crate) aki: Option<Vec<u8>>,
}

impl Crl {
    /// The raw DER issuer Name.
    pub(crate) fn issuer(&self) -> &[u8] {
        &self.issuer
    }

    /// The DER encoding.
    pub(crate) fn der(&self) -> &[u8] {
        &self.der
    }
}
