//! rustls verifiers on a live [`StoreHandle`].
//!
//! [`StoreServerVerifier`] (for clients) and [`StoreClientVerifier`] (for servers) take
//! `handle.current()` once at the start of each verification and finish on that store:
//! a reload during a verification never mixes two stores, and the next verification sees
//! the new one. Handshake signatures are checked by the aws-lc-rs provider's
//! `verify_tls12_signature` / `verify_tls13_signature` with its supported algorithms.
//!
//! CA hints (`certificate_authorities` in CertificateRequest) come from the store's
//! name list. They can be switched off or capped by count and bytes, and never exceed
//! 65,535 bytes, the most the TLS encoding can carry. rustls asks for the hints by
//! reference, so each distinct hint list this verifier has served is kept for its
//! lifetime (up to [`MAX_HINT_SETS`] lists, at most 64 KiB each); after that, a new list
//! is not sent (no hints), which clients handle by offering any certificate.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tlskit_store::{StoreHandle, TrustStore};

use crate::chain::{ChainVerifier, VerifierConfig, VerifyError};
use crate::purpose::Purpose;
use crate::verified::Verified;

/// The most bytes the certificate_authorities list can take on the wire.
pub const MAX_HINT_BYTES: usize = 65_535;
/// How many distinct hint lists one [`StoreClientVerifier`] keeps (see the module docs).
pub const MAX_HINT_SETS: usize = 64;

/// Which CA names a server sends in its CertificateRequest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootHints {
    /// Send no names (clients offer whatever certificate they have).
    Off,
    /// The store's names, within caps.
    FromStore {
        /// Most names.
        max_names: usize,
        /// Most bytes, counting 2 length bytes per name (capped at 65,535).
        max_bytes: usize,
        /// What to do when the store has more than the caps allow.
        overflow: HintOverflow,
    },
}

impl Default for RootHints {
    fn default() -> Self {
        Self::FromStore {
            max_names: 4096,
            max_bytes: 16 * 1024,
            overflow: HintOverflow::Omit,
        }
    }
}

/// What to do when the store's names do not fit the hint caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HintOverflow {
    /// Send no names at all (a partial list could steer clients away from a valid cert).
    Omit,
    /// Send the names that fit, in store order.
    Truncate,
}

/// Compute the hint list for a store under a policy.
pub fn hint_names(store: &TrustStore, policy: RootHints) -> Vec<DistinguishedName> {
    let RootHints::FromStore {
        max_names,
        max_bytes,
        overflow,
    } = policy
    else {
        return Vec::new();
    };
    let max_bytes = max_bytes.min(MAX_HINT_BYTES);
    let names = store.ca_names();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for dn in names.iter() {
        let add = 2 + dn.len();
        if out.len() >= max_names || bytes + add > max_bytes {
            return match overflow {
                HintOverflow::Omit => Vec::new(),
                HintOverflow::Truncate => out,
            };
        }
        bytes += add;
        out.push(DistinguishedName::from(dn.to_vec()));
    }
    out
}

fn same_names(a: &[DistinguishedName], b: &[DistinguishedName]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.as_ref() == y.as_ref())
}

fn algorithms() -> WebPkiSupportedAlgorithms {
    rustls::crypto::aws_lc_rs::default_provider().signature_verification_algorithms
}

/// A rustls [`ServerCertVerifier`] (used by clients) on a live store.
pub struct StoreServerVerifier {
    handle: Arc<StoreHandle>,
    verifier: ChainVerifier,
    algs: WebPkiSupportedAlgorithms,
}

impl fmt::Debug for StoreServerVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreServerVerifier")
            .field("generation", &self.handle.generation())
            .finish_non_exhaustive()
    }
}

impl StoreServerVerifier {
    /// Verify server certificates against `handle`'s current store.
    pub fn new(handle: Arc<StoreHandle>, config: VerifierConfig) -> Self {
        Self {
            handle,
            verifier: ChainVerifier::new(config),
            algs: algorithms(),
        }
    }

    /// The chain verifier (cache statistics, direct use).
    pub fn chain_verifier(&self) -> &ChainVerifier {
        &self.verifier
    }

    /// Verify as rustls would, but return tlskit's result and error.
    pub fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<Verified, VerifyError> {
        let store = self.handle.current();
        self.verifier.verify(
            &store,
            end_entity,
            intermediates,
            Some(server_name),
            Purpose::Server,
            now,
        )
    }
}

impl ServerCertVerifier for StoreServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier.verify_on_handle(
            &self.handle,
            end_entity,
            intermediates,
            Some(server_name),
            Purpose::Server,
            now,
        )?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// A rustls [`ClientCertVerifier`] (used by servers) on a live store.
pub struct StoreClientVerifier {
    handle: Arc<StoreHandle>,
    verifier: ChainVerifier,
    algs: WebPkiSupportedAlgorithms,
    mandatory: bool,
    hints: RootHints,
    /// Distinct hint lists served so far (append-only, see the module docs).
    hint_sets: Box<[OnceLock<Vec<DistinguishedName>>]>,
    /// (generation << 8) | slot of the list for the newest generation seen, or u64::MAX.
    hint_current: AtomicU64,
    hint_lock: Mutex<()>,
}

impl fmt::Debug for StoreClientVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreClientVerifier")
            .field("generation", &self.handle.generation())
            .field("mandatory", &self.mandatory)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

const NO_HINTS: &[DistinguishedName] = &[];

impl StoreClientVerifier {
    /// Verify client certificates against `handle`'s current store. Client certificates
    /// are required; see [`Self::optional`].
    pub fn new(handle: Arc<StoreHandle>, config: VerifierConfig, hints: RootHints) -> Self {
        Self {
            handle,
            verifier: ChainVerifier::new(config),
            algs: algorithms(),
            mandatory: true,
            hints,
            hint_sets: (0..MAX_HINT_SETS).map(|_| OnceLock::new()).collect(),
            hint_current: AtomicU64::new(u64::MAX),
            hint_lock: Mutex::new(()),
        }
    }

    /// Make client certificates optional (still verified when sent).
    pub fn optional(mut self) -> Self {
        self.mandatory = false;
        self
    }

    /// The chain verifier (cache statistics, direct use).
    pub fn chain_verifier(&self) -> &ChainVerifier {
        &self.verifier
    }

    /// Verify as rustls would, but return tlskit's result and error.
    pub fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<Verified, VerifyError> {
        let store = self.handle.current();
        self.verifier.verify(
            &store,
            end_entity,
            intermediates,
            None,
            Purpose::Client,
            now,
        )
    }

    fn hints_for_current(&self) -> &[DistinguishedName] {
        if self.hints == RootHints::Off {
            return NO_HINTS;
        }
        let gen = self.handle.generation() & (u64::MAX >> 8);
        let packed = self.hint_current.load(Ordering::Acquire);
        if packed != u64::MAX && packed >> 8 == gen {
            let slot = (packed & 0xff) as usize;
            return self.hint_sets[slot]
                .get()
                .map_or(NO_HINTS, |v| v.as_slice());
        }
        let _guard = self.hint_lock.lock().unwrap_or_else(|p| p.into_inner());
        let store = self.handle.current();
        let gen = store.generation() & (u64::MAX >> 8);
        let names = hint_names(&store, self.hints);
        // Reuse an identical list; otherwise take the first free slot.
        let mut chosen = None;
        for (i, slot) in self.hint_sets.iter().enumerate() {
            match slot.get() {
                Some(v) if same_names(v, &names) => {
                    chosen = Some(i);
                    break;
                }
                Some(_) => continue,
                None => {
                    let _ = slot.set(names);
                    chosen = Some(i);
                    break;
                }
            }
        }
        let Some(i) = chosen else {
            return NO_HINTS; // every slot used: no hints rather than unbounded memory
        };
        self.hint_current
            .store((gen << 8) | i as u64, Ordering::Release);
        self.hint_sets[i].get().map_or(NO_HINTS, |v| v.as_slice())
    }
}

impl ClientCertVerifier for StoreClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.hints_for_current()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.verifier.verify_on_handle(
            &self.handle,
            end_entity,
            intermediates,
            None,
            Purpose::Client,
            now,
        )?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// Why a certificate was refused, read back from the [`rustls::Error`] one of tlskit's
/// verifiers returned: the sentence for people and the stable rule code. rustls shows
/// its own certificate errors with Rust debug output (`Other(OtherError(..))`,
/// `UnknownIssuer`); a server logs this instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateRefusal {
    /// The reason in words ([`VerifyError`]'s sentence when rustls kept it).
    pub sentence: String,
    /// The stable code, as [`VerifyError::rule`].
    pub rule: &'static str,
}

impl fmt::Display for CertificateRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sentence)
    }
}

impl CertificateRefusal {
    /// The refusal behind `e`, or `None` when `e` is no certificate error. Errors that
    /// tlskit maps onto rustls's own variants (so that the right TLS alert is sent) keep
    /// only their kind; the others carry the whole [`VerifyError`].
    pub fn of(e: &rustls::Error) -> Option<Self> {
        use rustls::CertificateError as C;
        let rustls::Error::InvalidCertificate(c) = e else {
            return None;
        };
        let (sentence, rule): (&str, &'static str) = match c {
            C::Other(o) => {
                let inner: &(dyn std::error::Error + 'static) = &*o.0;
                return Some(match inner.downcast_ref::<VerifyError>() {
                    Some(v) => Self::from(v),
                    // Not one of tlskit's errors: its Display, never its Debug.
                    None => Self {
                        sentence: format!("certificate refused: {inner}"),
                        rule: "rejected",
                    },
                });
            }
            C::UnknownIssuer => (
                "no trust anchor in the store issued the certificate's chain (unknown issuer, \
                 RFC 5280 6.1); trust its root, or have the peer send its intermediates",
                "unknown-issuer",
            ),
            // The same kinds as tlskit's own errors: their sentences and codes.
            C::BadSignature => return Some(Self::from(&VerifyError::BadSignature)),
            C::Revoked => return Some(Self::from(&VerifyError::Revoked { which: None })),
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => (
                "the end-entity certificate's extended key usage does not allow this use \
                 (RFC 5280 4.2.1.12); issue one with the right purpose",
                "wrong-purpose",
            ),
            C::BadEncoding => (
                "the certificate is not a valid DER X.509 certificate",
                "bad-encoding",
            ),
            C::NotValidForName | C::NotValidForNameContext { .. } => (
                "the certificate is not valid for the name asked for (RFC 6125)",
                "name-mismatch",
            ),
            C::Expired | C::ExpiredContext { .. } => (
                "a certificate on the chain has expired; renew it",
                "expired",
            ),
            C::NotValidYet | C::NotValidYetContext { .. } => (
                "a certificate on the chain is not valid yet; check the clock, or wait",
                "not-yet-valid",
            ),
            _ => return None,
        };
        Some(Self {
            sentence: sentence.to_string(),
            rule,
        })
    }
}

impl From<&VerifyError> for CertificateRefusal {
    fn from(v: &VerifyError) -> Self {
        Self {
            sentence: v.to_string(),
            rule: v.rule(),
        }
    }
}
