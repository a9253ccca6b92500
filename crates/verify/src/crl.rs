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

/// A certificate's entry on a CRL ([`Crl::entry_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CrlEntry {
    /// The certificate's serial (tlskit's text form: lower-case hex, no DER sign byte).
    pub serial: String,
    /// The entry's reasonCode (`None`: absent, which RFC 5280 reads as unspecified).
    pub reason_code: Option<u8>,
    /// revocationDate, Unix seconds.
    pub revoked_at: i64,
}

impl CrlEntry {
    /// The reason's RFC 5280 name (`keyCompromise`; `unspecified` when absent).
    pub fn reason_name(&self) -> &'static str {
        tlskit_x509::revocation::reason_name(self.reason_code.unwrap_or(0))
    }
}

impl Crl {
    /// The CRL's issuer, RFC 4514.
    pub fn issuer_name(&self) -> String {
        tlskit_x509::dn::display(&self.issuer)
    }

    /// The entry listing `cert_der` when this CRL is from the certificate's issuer (by
    /// name) and lists its serial; read by rustls-webpki (`find_serial`), or by x509-parser
    /// for a CRL whose scope rustls-webpki does not read. The CRL's signature is not
    /// checked here ([`Crl::signed_by`] does).
    pub fn entry_for(&self, cert_der: &[u8]) -> Option<CrlEntry> {
        use x509_parser::prelude::FromDer;
        let (_, c) = x509_parser::certificate::X509Certificate::from_der(cert_der).ok()?;
        if c.issuer().as_raw() != &*self.issuer {
            return None;
        }
        let serial = tlskit_x509::text::serial(c.raw_serial());
        if let Some(l) = &self.inner {
            let e = l.find_serial(c.raw_serial()).ok()??;
            return Some(CrlEntry {
                serial,
                reason_code: e.reason_code.map(|r| r as u8),
                revoked_at: i64::try_from(e.revocation_date.as_secs()).unwrap_or(i64::MAX),
            });
        }
        let (_, crl) =
            x509_parser::revocation_list::CertificateRevocationList::from_der(&self.der).ok()?;
        let e = crl
            .iter_revoked_certificates()
            .find(|r| r.raw_serial() == c.raw_serial())?;
        Some(CrlEntry {
            serial,
            reason_code: e.reason_code().map(|(_, r)| r.0),
            revoked_at: e.revocation_date.timestamp(),
        })
    }

    /// Whether `issuer_cert_der` is this CRL's issuer (its subject is the CRL's issuer
    /// name) and its public key verifies the CRL's signature (with the signature
    /// algorithms of rustls-webpki's aws-lc-rs provider).
    pub fn signed_by(&self, issuer_cert_der: &[u8]) -> bool {
        use x509_parser::prelude::FromDer;
        let Ok((_, c)) = x509_parser::certificate::X509Certificate::from_der(issuer_cert_der)
        else {
            return false;
        };
        if c.subject().as_raw() != &*self.issuer {
            return false;
        }
        let (Some(s), Some((key_alg, key))) = (
            tlskit_x509::der::signed(&self.der),
            tlskit_x509::der::spki(c.public_key().raw),
        ) else {
            return false;
        };
        crate::count::counted_algorithms()
            .iter()
            .filter(|a| a.public_key_alg_id().as_ref() == key_alg)
            .filter(|a| a.signature_alg_id().as_ref() == s.alg)
            .any(|a| a.verify_signature(key, s.tbs, s.sig).is_ok())
    }
}

/// Most anchors with a CRL issuer's name whose keys [`Crl::check_signer`] tries (as many
/// as the chain builder tries per certificate).
pub const MAX_CRL_SIGNERS: usize = 8;

/// Whether a CRL's issuer is among the certificates at hand, and signed it
/// ([`Crl::check_signer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrlSigner {
    /// A certificate named as the CRL's issuer verifies its signature.
    Verified,
    /// Certificates carry the CRL issuer's name, but none of their keys verifies it: the
    /// CRL was altered, or signed by another key with that name.
    BadSignature,
    /// No certificate at hand has the CRL issuer's name (a CRL of another CA).
    NoIssuer,
}

impl Crl {
    /// Check the CRL's signature against the certificates that carry its issuer's name,
    /// among `presented` (end entity and chain) and the store's anchors (at most
    /// [`MAX_CRL_SIGNERS`] of those).
    pub fn check_signer(&self, store: &tlskit_store::TrustStore, presented: &[&[u8]]) -> CrlSigner {
        let mut named = false;
        let anchors = store
            .by_subject(&self.issuer)
            .take(MAX_CRL_SIGNERS)
            .map(|a| a.der());
        for der in presented.iter().copied().chain(anchors) {
            let Some(v) = tlskit_x509::der::cert_view(der) else {
                continue;
            };
            if v.subject != &*self.issuer {
                continue;
            }
            named = true;
            if self.signed_by(der) {
                return CrlSigner::Verified;
            }
        }
        if named {
            CrlSigner::BadSignature
        } else {
            CrlSigner::NoIssuer
        }
    }
}
