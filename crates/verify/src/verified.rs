//! The answer of a successful verification: [`VerifiedChain`] (what the cache keeps) and
//! [`Verified`] (the path and whether the cache gave it).

use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use tlskit_x509::{der, dn};

use crate::profile::Violation;

/// A successfully verified path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedChain {
    /// DER certificates from the end entity to the trust anchor (anchor last).
    pub certs: Vec<CertificateDer<'static>>,
    /// SHA-256 of the anchor, as the store indexes it.
    pub anchor_sha256: [u8; 32],
    /// Latest notBefore on the path (Unix seconds): no answer is valid before it.
    pub valid_from: i64,
    /// Earliest notAfter on the path (and CRL nextUpdate, when enforced): no answer is
    /// valid after it.
    pub valid_until: i64,
    /// Rules this path breaks that the profile reports instead of refusing (the
    /// `browser` profile's warnings), in path order: rule, position (0 = end entity),
    /// role, subject and the sentence. Empty under `webpki` and `rfc5280`, which refuse
    /// every rule they check. A cached answer keeps them.
    pub warnings: Vec<Violation>,
}

impl VerifiedChain {
    /// Subjects from the end entity to the anchor, RFC 4514-like.
    pub fn subjects(&self) -> Vec<String> {
        self.certs
            .iter()
            .map(|c| {
                der::cert_view(c).map_or_else(|| "(unparsable)".into(), |f| dn::display(f.subject))
            })
            .collect()
    }
}

/// The result of a successful verification.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The path.
    pub chain: Arc<VerifiedChain>,
    /// Whether the answer came from the cache.
    pub cached: bool,
}
