//! Chain building on the store's index.
//!
//! For the end-entity certificate and every certificate the peer sent (plus any extra
//! intermediates the caller supplies), the store is asked for anchors whose subject is
//! that certificate's issuer name and anchors whose subjectKeyIdentifier is its
//! authorityKeyIdentifier, best key-identifier match first and at most
//! [`MAX_ISSUER_CANDIDATES`] per certificate. Only those candidates, parsed with
//! `webpki::anchor_from_trusted_cert`, are handed to rustls-webpki together with the
//! intermediates; rustls-webpki does every signature, path-policy, EKU, name and CRL
//! check and explores alternative paths (cross-signed intermediates, several anchors with
//! one subject). The work per verification depends on the chain, never on the number of
//! anchors in the store: each look-up is a hash probe.
//!
//! Anchor validity: rustls-webpki does not look at a trust anchor's own validity period.
//! tlskit does, like OpenSSL: an anchor outside its validity period at the verification
//! time is skipped (another candidate with the same subject, a re-issued root, is still
//! tried). `VerifierConfig::accept_expired_anchors` turns that off.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::Arc;

use rustls_pki_types::{CertificateDer, ServerName, SignatureVerificationAlgorithm, UnixTime};
use tlskit_store::{Anchor, StoreHandle, TrustStore};
use webpki::{
    CertRevocationList, EndEntityCert, ExpirationPolicy, OwnedCertRevocationList,
    RevocationCheckDepth, RevocationOptionsBuilder, UnknownStatusPolicy, VerifiedPath,
};

use crate::cache::{CacheLimits, VerifyCache};
use crate::crl::Crl;
use crate::profile::{self, CertRole, PathCert, Profile, Rule, RuleSet, Violation};
use crate::purpose::Purpose;
use crate::rfc5280;
use crate::verified::{Verified, VerifiedChain};
use tlskit_x509::{der, dn};

/// The longest path tlskit validates, end entity and anchor included. rustls-webpki builds
/// paths of up to [`WEBPKI_MAX_DEPTH`] certificates; when `max_depth` allows longer ones,
/// tlskit's RFC 5280 validator builds them.
pub const MAX_SUPPORTED_DEPTH: usize = 16;

/// The longest path rustls-webpki builds: the end entity, six intermediates, the anchor.
/// Also the default `max_depth`.
pub const WEBPKI_MAX_DEPTH: usize = 8;

/// Most trust anchors tried as the issuer of one certificate. The store's candidates are
/// ordered by key identifier, as Go's `crypto/x509` and Chromium's path builder order
/// them: anchors whose subjectKeyIdentifier is the certificate's authorityKeyIdentifier
/// first, then those where one side has no key identifier, then those whose key
/// identifier contradicts it; the first this many are handed on. A genuine chain names
/// its issuer's key, so its anchor comes first however many anchors share the name; a
/// forged one costs at most this many signature checks per certificate, however many
/// anchors share the name (see the crate README, "Limits").
pub const MAX_ISSUER_CANDIDATES: usize = 8;

// `Crl` is defined in the crl module, below the profile that reads it; its parser is
// here because its refusal is a `VerifyError`.
impl Crl {
    /// Parse a DER CRL. rustls-webpki reads it; a CRL whose scope it does not support
    /// (an issuingDistributionPoint with a distribution point or onlyContains..., an
    /// indirect CRL, onlySomeReasons) is kept for tlskit's RFC 5280 validator, which
    /// then checks every chain (see the crate README, "Revocation"). Delta CRLs and
    /// CRLs with unknown critical extensions are refused.
    pub fn from_der(der: &[u8]) -> Result<Self, VerifyError> {
        use webpki::Error as E;
        let inner = match OwnedCertRevocationList::from_der(der) {
            Ok(owned) => Some(Arc::new(CertRevocationList::Owned(owned))),
            Err(
                E::UnsupportedCrlIssuingDistributionPoint
                | E::UnsupportedIndirectCrl
                | E::UnsupportedRevocationReasonsPartitioning,
            ) if <x509_parser::revocation_list::CertificateRevocationList<'_> as x509_parser::prelude::FromDer<'_, x509_parser::error::X509Error>>::from_der(der).is_ok() => {
                None
            }
            Err(e) => return Err(VerifyError::BadCrl(webpki_sentence(&e))),
        };
        let info = profile::crl_info(der);
        Ok(Self {
            issuer: Arc::from(info.issuer),
            aki: info.aki,
            der: Arc::from(der),
            inner,
            next_update: der::crl_next_update(der),
            has_number: info.has_number,
            number_critical: info.number_critical,
        })
    }
}

/// How a [`ChainVerifier`] checks chains.
#[derive(Debug, Clone)]
pub struct VerifierConfig {
    /// Most certificates in a path, end entity and anchor included, honoured exactly
    /// from 2 to [`MAX_SUPPORTED_DEPTH`] (16; values outside are clamped to that range,
    /// and `tlskit verify --max-depth` refuses them). Default 8 ([`WEBPKI_MAX_DEPTH`]);
    /// paths longer than 8 are built by the RFC 5280 validator.
    pub max_depth: usize,
    /// Most certificates a peer may present (end entity + chain). Longer chains are
    /// refused before any work. Default 16.
    pub max_presented: usize,
    /// Use trust anchors outside their own validity period (rustls's behaviour). Default
    /// false: such anchors are skipped.
    pub accept_expired_anchors: bool,
    /// CRLs to check every certificate of the path against.
    pub crls: Vec<Crl>,
    /// When CRLs are given: treat a certificate whose issuer has no CRL as unrevoked
    /// (true, default) or as an error (false).
    pub allow_unknown_revocation: bool,
    /// When CRLs are given: refuse CRLs past their nextUpdate (default true).
    pub enforce_crl_expiry: bool,
    /// Verification cache limits; `None` disables the cache.
    pub cache: Option<CacheLimits>,
    /// The rule set checked on every candidate path on top of rustls-webpki (default
    /// [`Profile::Browser`]: refusals where relying parties refuse, warnings for the
    /// rest). See the crate README, "Profiles".
    pub profile: Profile,
    /// Rules not checked, on purpose (e.g. [`Rule::AkiMissing`] for a private PKI
    /// without key identifiers). Rules rustls-webpki enforces itself cannot be lifted.
    pub allow: Vec<Rule>,
}

impl Default for VerifierConfig {
    fn default() -> Self {
        Self {
            max_depth: WEBPKI_MAX_DEPTH,
            max_presented: 16,
            accept_expired_anchors: false,
            crls: Vec::new(),
            allow_unknown_revocation: true,
            enforce_crl_expiry: true,
            cache: Some(CacheLimits::default()),
            profile: Profile::Browser,
            allow: Vec::new(),
        }
    }
}

/// Why a chain was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyError {
    /// The end-entity certificate (or a presented certificate) is not a parsable certificate.
    BadEncoding(String),
    /// A CRL could not be parsed.
    BadCrl(String),
    /// The peer sent more certificates than allowed.
    TooManyCertificates {
        /// Certificates sent (end entity included).
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// Every path would be longer than the configured depth.
    ChainTooDeep {
        /// The limit (certificates in a path, end entity and anchor included).
        limit: usize,
    },
    /// No anchor in the store issued the chain.
    UnknownIssuer {
        /// The issuer name of the topmost certificate that found no issuer (RFC 4514 form).
        issuer: String,
    },
    /// Anchors with the right name exist but all are outside their validity period.
    AnchorNotValid {
        /// The anchor subject.
        subject: String,
        /// The verification time, Unix seconds.
        time: i64,
    },
    /// A certificate on the path had expired.
    Expired {
        /// The verification time, Unix seconds.
        time: i64,
        /// The certificate's notAfter, Unix seconds.
        not_after: i64,
        /// Which certificate, when it could be told: its position in the chain as
        /// presented (0 = end entity) and its subject.
        which: Option<(usize, String)>,
    },
    /// A certificate on the path is not valid yet.
    NotYetValid {
        /// The verification time, Unix seconds.
        time: i64,
        /// The certificate's notBefore, Unix seconds.
        not_before: i64,
        /// Which certificate, as for `Expired`.
        which: Option<(usize, String)>,
    },
    /// The certificate does not carry the reference name.
    NameMismatch {
        /// The reference name.
        expected: String,
        /// The names the certificate has (may be empty if unknown).
        presented: Vec<String>,
    },
    /// The certificate's extended key usage does not allow the purpose.
    WrongPurpose {
        /// The purpose asked for.
        purpose: Purpose,
    },
    /// A certificate on the path is revoked by a CRL.
    Revoked {
        /// Which certificate, as for `Expired`: the first presented one a configured CRL
        /// lists (`None` when it could not be told).
        which: Option<(usize, String)>,
    },
    /// A certificate's signature did not verify with its issuer's key.
    BadSignature,
    /// The end-entity position holds a CA certificate (a chain given in the wrong order).
    CaAsEndEntity,
    /// Path building stopped at one of rustls-webpki's per-verification budgets before
    /// a path was found: the chain offers too many candidate paths (for example many
    /// certificates with one subject name). See the crate README, "Limits".
    PathBuildingBudget {
        /// Which budget ran out, e.g. "100 signature checks".
        limit: &'static str,
    },
    /// A certificate on the only path(s) found breaks a rule of the profile, or a
    /// refusal by rustls-webpki traced to one certificate and rule.
    Rule(Violation),
    /// Any other refusal by rustls-webpki, in words.
    Other(String),
}

impl VerifyError {
    /// A stable code for the reason (`unknown-issuer`, `expired`, or the profile
    /// rule's code such as `aki-missing`), for JSON output and scripts.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::BadEncoding(_) => "bad-encoding",
            Self::BadCrl(_) => "bad-crl",
            Self::TooManyCertificates { .. } => "too-many-certificates",
            Self::ChainTooDeep { .. } => "chain-too-deep",
            Self::UnknownIssuer { .. } => "unknown-issuer",
            Self::AnchorNotValid { .. } => "anchor-not-valid",
            Self::Expired { .. } => "expired",
            Self::NotYetValid { .. } => "not-yet-valid",
            Self::NameMismatch { .. } => "name-mismatch",
            Self::WrongPurpose { .. } => "wrong-purpose",
            Self::Revoked { .. } => "revoked",
            Self::BadSignature => "bad-signature",
            Self::CaAsEndEntity => "ca-as-end-entity",
            Self::PathBuildingBudget { .. } => "path-building-budget",
            Self::Rule(v) => v.rule.code(),
            Self::Other(_) => "rejected",
        }
    }

    /// The profile violation behind this error, if it is one.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Self::Rule(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadEncoding(w) => write!(f, "not a valid certificate: {w}"),
            Self::BadCrl(w) => write!(f, "not a valid CRL: {w}"),
            Self::TooManyCertificates { count, limit } => write!(
                f,
                "the chain has {count} certificates; at most {limit} are accepted"
            ),
            Self::ChainTooDeep { limit } => write!(
                f,
                "every path to a trust anchor is longer than the maximum chain depth \
                 ({limit} certificates including the end entity and the anchor)"
            ),
            Self::UnknownIssuer { issuer } => write!(
                f,
                "no trust anchor in the store issued this chain (unknown issuer {issuer}): \
                 the topmost certificate sent names {issuer} as its issuer, and no trust \
                 anchor or certificate sent has that name and a key that signed it \
                 (RFC 5280 6.1); trust that CA's certificate, or have the peer send the \
                 missing intermediate"
            ),
            Self::AnchorNotValid { subject, time } => write!(
                f,
                "the only trust anchors named {subject} are outside their validity period at {}",
                tlskit_x509::datetime::rfc3339(*time)
            ),
            Self::Expired {
                time,
                not_after,
                which,
            } => write!(
                f,
                "{} expired at {} (checked at {}); renew it",
                WhichCert(which),
                tlskit_x509::datetime::rfc3339(*not_after),
                tlskit_x509::datetime::rfc3339(*time)
            ),
            Self::NotYetValid {
                time,
                not_before,
                which,
            } => write!(
                f,
                "{} is not valid before {} (checked at {}); check the clock, or wait",
                WhichCert(which),
                tlskit_x509::datetime::rfc3339(*not_before),
                tlskit_x509::datetime::rfc3339(*time)
            ),
            Self::NameMismatch {
                expected,
                presented,
            } => {
                write!(f, "the certificate is not valid for {expected}")?;
                if !presented.is_empty() {
                    write!(f, " (it names {})", presented.join(", "))?;
                }
                Ok(())
            }
            Self::WrongPurpose { purpose } => write!(
                f,
                "certificate 0 (the end entity): its extended key usage does not allow TLS \
                 {p} authentication (id-kp-{p}Auth, RFC 5280 4.2.1.12); issue it with that \
                 purpose",
                p = purpose.as_str()
            ),
            Self::Revoked { which } => write!(
                f,
                "{} is revoked by a CRL given (RFC 5280 6.3); it must be replaced, and \
                 its key no longer trusted",
                WhichCert(which)
            ),
            Self::BadSignature => f.write_str(
                "a signature on the chain does not verify with its issuer's public key \
                 (RFC 5280 6.1.3 (a)(1)): a certificate was altered, or its issuer is \
                 another key with the same name; send the chain its issuer really signed",
            ),
            Self::CaAsEndEntity => f.write_str(
                "the end-entity certificate is a CA certificate; the end-entity certificate \
                 must come first (is the chain in the wrong order?); to verify a CA \
                 certificate as the end entity on purpose, use --allow ca-as-end-entity",
            ),
            Self::PathBuildingBudget { limit } => write!(
                f,
                "path building stopped at its limit of {limit} per verification: the \
                 chain offers too many candidate paths (many certificates with one name?)"
            ),
            Self::Rule(v) => write!(f, "{v}"),
            Self::Other(w) => write!(f, "rejected by path validation (RFC 5280 6.1): {w}"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// "the end-entity certificate (CN=...)", "certificate 2 of the chain (CN=...)", or "a
/// certificate" when it could not be told.
struct WhichCert<'a>(&'a Option<(usize, String)>);

impl fmt::Display for WhichCert<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some((0, subject)) => write!(f, "the end-entity certificate ({subject})"),
            Some((n, subject)) => write!(f, "certificate {n} of the chain ({subject})"),
            None => f.write_str("a certificate"),
        }
    }
}

/// The first presented certificate (end entity = 0, then the intermediates in the order
/// sent) for which `hit` holds, with its subject.
fn locate(
    leaf: &der::CertView<'_>,
    presented: &[Option<der::CertView<'_>>],
    hit: impl Fn(&der::CertView<'_>) -> bool,
) -> Option<(usize, String)> {
    std::iter::once(Some(leaf))
        .chain(presented.iter().map(Option::as_ref))
        .enumerate()
        .find_map(|(i, f)| f.filter(|f| hit(f)).map(|f| (i, dn::display(f.subject))))
}

/// Verifies chains against a [`TrustStore`], with an optional cache.
#[derive(Debug)]
pub struct ChainVerifier {
    config: VerifierConfig,
    algs: &'static [&'static dyn SignatureVerificationAlgorithm],
    cache: Option<VerifyCache>,
    crl_deadline: Option<i64>,
    /// A configured CRL only the RFC 5280 validator can read: it then decides alone
    /// (rustls-webpki's answer would leave that CRL out).
    crls_beyond_webpki: bool,
    rules: RuleSet,
}

impl ChainVerifier {
    /// A verifier using the aws-lc-rs provider's signature algorithms.
    pub fn new(mut config: VerifierConfig) -> Self {
        config.max_depth = config.max_depth.clamp(2, MAX_SUPPORTED_DEPTH);
        config.max_presented = config.max_presented.max(1);
        let cache = config.cache.map(VerifyCache::new);
        let crl_deadline = if config.enforce_crl_expiry {
            config.crls.iter().filter_map(|c| c.next_update).min()
        } else {
            None
        };
        let crls_beyond_webpki = config.crls.iter().any(|c| c.inner.is_none());
        Self {
            rules: RuleSet::new(config.profile, &config.allow),
            algs: crate::count::counted_algorithms(),
            config,
            cache,
            crl_deadline,
            crls_beyond_webpki,
        }
    }

    /// The configuration in use (after clamping).
    pub fn config(&self) -> &VerifierConfig {
        &self.config
    }

    /// Drop every cached answer.
    pub fn clear_cache(&self) {
        if let Some(c) = &self.cache {
            c.clear();
        }
    }

    /// Bytes of chains and names held by the cache.
    pub fn cache_bytes(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| c.bytes())
    }

    /// Number of cached answers.
    pub fn cache_len(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| c.len())
    }

    /// Verify `end_entity` (+ `intermediates`, as sent by the peer, in any order) against
    /// `store` at time `now`, for `purpose` and (when given) the reference name. Uses the
    /// cache when configured.
    pub fn verify(
        &self,
        store: &TrustStore,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: Option<&ServerName<'_>>,
        purpose: Purpose,
        now: UnixTime,
    ) -> Result<Verified, VerifyError> {
        self.check_count(intermediates)?;
        let Some(cache) = &self.cache else {
            return self.verify_uncached(store, end_entity, intermediates, name, purpose, now);
        };
        let gen = store.generation();
        let secs = unix_secs(now);
        let key = cache.key(gen, end_entity, intermediates, name, purpose);
        if let Some(chain) = cache.get_with(
            &key,
            gen,
            end_entity,
            intermediates,
            purpose,
            secs,
            Arc::clone,
        ) {
            return Ok(Verified {
                chain,
                cached: true,
            });
        }
        let v = self.verify_uncached(store, end_entity, intermediates, name, purpose, now)?;
        cache.insert(
            key,
            gen,
            end_entity,
            intermediates,
            purpose,
            v.chain.clone(),
        );
        Ok(v)
    }

    /// Verify on the store `handle` holds now, answering only valid/invalid. A cache hit
    /// needs only the handle's generation (an atomic load): no reference count is touched
    /// and nothing shared is written, so concurrent hits scale. A miss takes
    /// `handle.current()` once and finishes on that store.
    pub fn verify_on_handle(
        &self,
        handle: &StoreHandle,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: Option<&ServerName<'_>>,
        purpose: Purpose,
        now: UnixTime,
    ) -> Result<(), VerifyError> {
        self.check_count(intermediates)?;
        if let Some(cache) = &self.cache {
            // The handle's generation names the store it serves; an answer cached for
            // that generation was computed on that store.
            let gen = handle.generation();
            let key = cache.key(gen, end_entity, intermediates, name, purpose);
            let secs = unix_secs(now);
            if cache
                .get_with(&key, gen, end_entity, intermediates, purpose, secs, |_| ())
                .is_some()
            {
                return Ok(());
            }
        }
        let store = handle.current();
        self.verify(&store, end_entity, intermediates, name, purpose, now)
            .map(|_| ())
    }

    fn check_count(&self, intermediates: &[CertificateDer<'_>]) -> Result<(), VerifyError> {
        let count = intermediates.len() + 1;
        if count > self.config.max_presented {
            return Err(VerifyError::TooManyCertificates {
                count,
                limit: self.config.max_presented,
            });
        }
        Ok(())
    }

    /// Verify without consulting or filling the cache.
    pub fn verify_uncached(
        &self,
        store: &TrustStore,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: Option<&ServerName<'_>>,
        purpose: Purpose,
        now: UnixTime,
    ) -> Result<Verified, VerifyError> {
        self.check_count(intermediates)?;
        let secs = unix_secs(now);
        // rustls-webpki cannot read some certificates RFC 5280 accepts (unique
        // identifiers, times before 1970); without a reference name to match, the RFC 5280
        // validator below still gets a chance.
        let mut ee_error = None;
        let ee = match EndEntityCert::try_from(end_entity) {
            Ok(ee) => Some(ee),
            Err(e) => {
                let err = match profile::diagnose(&e, &[end_entity.as_ref()], &[]) {
                    Some(v) => VerifyError::Rule(v),
                    None => VerifyError::BadEncoding(format!(
                        "end-entity certificate: {}",
                        webpki_sentence(&e)
                    )),
                };
                if name.is_some() {
                    return Err(err);
                }
                ee_error = Some(err);
                None
            }
        };
        let leaf = der::cert_view(end_entity).ok_or_else(|| {
            VerifyError::BadEncoding("end-entity certificate: malformed TBSCertificate".into())
        })?;

        // 1. Candidate anchors from the index: issuer name, then key identifier.
        let mut candidates: Vec<Anchor<'_>> = Vec::with_capacity(4);
        add_candidates(store, &leaf, &mut candidates);
        // Read once, used here and for the path filter below. A presented certificate we
        // cannot read (None) is left to rustls-webpki to judge.
        let presented: Vec<Option<der::CertView<'_>>> =
            intermediates.iter().map(|c| der::cert_view(c)).collect();
        for f in presented.iter().flatten() {
            add_candidates(store, f, &mut candidates);
        }

        // 2. Skip anchors outside their own validity period (see the module docs).
        let mut skipped: Option<&[u8]> = None;
        let mut usable: Vec<Anchor<'_>> = Vec::with_capacity(candidates.len());
        let leaf_der: &[u8] = end_entity.as_ref();
        for a in candidates {
            // A pinned end-entity certificate (a non-CA anchor) is trusted for exactly
            // itself, never as an issuer.
            if a.der() != leaf_der && !der::cert_is_ca(a.der()) {
                continue;
            }
            if self.config.accept_expired_anchors
                || (a.not_before() <= secs && secs <= a.not_after())
            {
                usable.push(a);
            } else {
                skipped = Some(a.subject());
            }
        }
        let ders: Vec<CertificateDer<'_>> = usable
            .iter()
            .map(|a| CertificateDer::from(a.der()))
            .collect();
        let mut anchors = Vec::with_capacity(ders.len());
        let mut anchor_of = Vec::with_capacity(ders.len());
        for (i, d) in ders.iter().enumerate() {
            // An anchor rustls-webpki cannot parse cannot anchor a path; skip it.
            if let Ok(ta) = webpki::anchor_from_trusted_cert(d) {
                anchors.push(ta);
                anchor_of.push(i);
            }
        }

        // 3. rustls-webpki: signatures, path policy, EKU, CRLs, path exploration.
        let crl_refs: Vec<&CertRevocationList<'_>> = self
            .config
            .crls
            .iter()
            .filter_map(|c| c.inner.as_deref())
            .collect();
        let revocation = match RevocationOptionsBuilder::new(&crl_refs) {
            Ok(b) => Some(
                b.with_depth(RevocationCheckDepth::Chain)
                    .with_status_policy(if self.config.allow_unknown_revocation {
                        UnknownStatusPolicy::Allow
                    } else {
                        UnknownStatusPolicy::Deny
                    })
                    .with_expiration_policy(if self.config.enforce_crl_expiry {
                        ExpirationPolicy::Enforce
                    } else {
                        ExpirationPolicy::Ignore
                    })
                    .build(),
            ),
            Err(_) => None, // no CRLs configured
        };
        let too_deep = Cell::new(false);
        let broken: RefCell<Option<Violation>> = RefCell::new(None);
        // The warnings of the last candidate path the profile passed: rustls-webpki
        // returns the first path whose callback says Ok, so that path's.
        let passed: RefCell<Vec<Violation>> = RefCell::new(Vec::new());
        let max_depth = self.config.max_depth;
        let rules = self.rules;
        let crls = &self.config.crls[..];
        let depth_check = |p: &VerifiedPath<'_>| -> Result<(), webpki::Error> {
            if p.intermediate_certificates().count() + 2 > max_depth {
                too_deep.set(true);
                return Err(webpki::Error::MaximumPathDepthExceeded);
            }
            // The profile layer: every certificate of this candidate path.
            let Some(ai) = anchors.iter().position(|a| std::ptr::eq(a, p.anchor())) else {
                return Ok(()); // invariant: the anchor is one of ours
            };
            let Some(inter) = p
                .intermediate_certificates()
                .map(|c| same_bytes(intermediates, &c.der()))
                .collect::<Option<Vec<&[u8]>>>()
            else {
                return Err(webpki::Error::UnknownIssuer); // invariant: they are ours
            };
            match profile_check(
                leaf_der,
                &inter,
                usable[anchor_of[ai]].der(),
                rules,
                purpose,
                crls,
            ) {
                Ok(w) => {
                    *passed.borrow_mut() = w;
                    Ok(())
                }
                Err(v) => {
                    let mut b = broken.borrow_mut();
                    if b.is_none() {
                        *b = Some(v);
                    }
                    Err(webpki::Error::UnknownIssuer)
                }
            }
        };
        // Only presented certificates that can lie on a path to a candidate anchor go to
        // rustls-webpki: a hostile set of same-name certificates that leads to no anchor
        // would otherwise cost it up to 200,000 path-building steps (seconds of CPU).
        let names: Vec<&[u8]> = anchor_of.iter().map(|&i| usable[i].subject()).collect();
        let explore = toward_anchors(&names, intermediates, &presented);
        let explain = |e: webpki::Error| -> VerifyError {
            if let Some(v) = broken.borrow_mut().take() {
                return VerifyError::Rule(v);
            }
            if too_deep.get() && matches!(e, webpki::Error::MaximumPathDepthExceeded) {
                return VerifyError::ChainTooDeep { limit: max_depth };
            }
            if matches!(e, webpki::Error::UnknownIssuer) {
                if let Some(subject) = skipped {
                    return VerifyError::AnchorNotValid {
                        subject: dn::display(subject),
                        time: secs,
                    };
                }
                return VerifyError::UnknownIssuer {
                    issuer: dn::display(top_issuer(&leaf, intermediates)),
                };
            }
            let mut all: Vec<&[u8]> = Vec::with_capacity(1 + intermediates.len());
            all.push(leaf_der);
            all.extend(intermediates.iter().map(|c| c.as_ref()));
            let anchor_ders: Vec<&[u8]> = usable.iter().map(|a| a.der()).collect();
            if let Some(v) = profile::diagnose(&e, &all, &anchor_ders) {
                return VerifyError::Rule(v);
            }
            let mut e = map_webpki(e, purpose);
            match &mut e {
                VerifyError::Expired {
                    not_after, which, ..
                } => *which = locate(&leaf, &presented, |f| f.not_after == *not_after),
                VerifyError::NotYetValid {
                    not_before, which, ..
                } => *which = locate(&leaf, &presented, |f| f.not_before == *not_before),
                VerifyError::Revoked { which } => {
                    *which = revoked_one(&self.config.crls, leaf_der, intermediates)
                }
                _ => {}
            }
            e
        };
        let crls_beyond_webpki = self.crls_beyond_webpki;
        let webpki_answer = match &ee {
            Some(_) if crls_beyond_webpki => Err((
                VerifyError::Other(
                    "no valid path (checked by RFC 5280 path validation with the given CRLs)"
                        .into(),
                ),
                false,
            )),
            Some(ee) => ee
                .verify_for_usage(
                    self.algs,
                    &anchors,
                    &explore,
                    now,
                    purpose.usage(),
                    revocation,
                    Some(&depth_check),
                )
                .map(|path| {
                    // Invariant: rustls-webpki returns a reference into the anchors
                    // slice we gave it.
                    let idx = anchors
                        .iter()
                        .position(|a| std::ptr::eq(a, path.anchor()))
                        .map(|i| anchor_of[i]);
                    let inter = path
                        .intermediate_certificates()
                        .map(|c| same_bytes(intermediates, &c.der()))
                        .collect::<Option<Vec<&[u8]>>>();
                    idx.zip(inter)
                })
                .map_err(|e| {
                    // Refusals tlskit itself decided (its profile, its depth limit, a
                    // budget) stand; the rest may be a limitation of rustls-webpki.
                    let final_ = broken.borrow().is_some()
                        || matches!(
                            e,
                            webpki::Error::MaximumSignatureChecksExceeded
                                | webpki::Error::MaximumPathBuildCallsExceeded
                                | webpki::Error::MaximumNameConstraintComparisonsExceeded
                        );
                    (explain(e), final_)
                }),
            None => Err((
                ee_error
                    .take()
                    .unwrap_or_else(|| VerifyError::Other("unreadable end entity".into())),
                false,
            )),
        };
        let (idx, inter, warnings) = match webpki_answer {
            Ok(Some((idx, inter))) => (Some(idx), inter, passed.take()),
            Ok(None) => (None, Vec::new(), Vec::new()),
            Err((e, true)) => return Err(e),
            Err((e, false)) => {
                // RFC 5280 6.1 for what rustls-webpki cannot do (see rfc5280.rs).
                let presented_ders: Vec<&[u8]> = intermediates.iter().map(|c| c.as_ref()).collect();
                let anchor_ders: Vec<&[u8]> = usable.iter().map(|a| a.der()).collect();
                let found = rfc5280::validate(&rfc5280::Input {
                    leaf: leaf_der,
                    presented: &presented_ders,
                    anchors: &anchor_ders,
                    now: secs,
                    max_depth,
                    purpose,
                    crls,
                    allow_unknown_revocation: self.config.allow_unknown_revocation,
                    enforce_crl_expiry: self.config.enforce_crl_expiry,
                    allow_ca_leaf: !rules.has(Rule::CaAsEndEntity),
                    algs: self.algs,
                });
                let found = match found {
                    Ok(found) => found,
                    // rustls-webpki's own words where it judged the chain; the RFC 5280
                    // validator's where it could not (an unreadable end entity, CRLs
                    // beyond it).
                    Err(refusal)
                        if ee.is_none()
                            || crls_beyond_webpki
                            || (matches!(e, VerifyError::CaAsEndEntity)
                                && !rules.has(Rule::CaAsEndEntity))
                            || (matches!(e, VerifyError::ChainTooDeep { .. })
                                && max_depth > WEBPKI_MAX_DEPTH) =>
                    {
                        return Err(match refusal {
                            Some(r) => refusal_error(r, secs, purpose, max_depth),
                            None if ee.is_none() && !matches!(e, VerifyError::CaAsEndEntity) => e,
                            None => VerifyError::UnknownIssuer {
                                issuer: dn::display(top_issuer(&leaf, intermediates)),
                            },
                        })
                    }
                    Err(_) => return Err(e),
                };
                let inter: Vec<&[u8]> = found
                    .intermediates
                    .iter()
                    .filter_map(|&i| presented_ders.get(i).copied())
                    .collect();
                let anchor_der = usable[found.anchor].der();
                let warnings = profile_check(leaf_der, &inter, anchor_der, rules, purpose, crls)
                    .map_err(VerifyError::Rule)?;
                (Some(found.anchor), inter, warnings)
            }
        };

        // 4. The reference name (webpki matches DNS names, wildcards and IP addresses).
        if let Some(name) = name {
            // Invariant: with a name, an unreadable end entity returned early above.
            let Some(ee) = &ee else {
                return Err(VerifyError::Other("end entity not readable".into()));
            };
            ee.verify_is_valid_for_subject_name(name)
                .map_err(|e| map_name_error(e, name))?;
        }

        // 5. The answer, with the window in which it may be reused.
        let Some(idx) = idx else {
            return Err(VerifyError::Other(
                "path anchor not among candidates".into(),
            ));
        };
        let anchor = usable[idx];
        let mut certs = Vec::with_capacity(2 + inter.len());
        certs.push(end_entity.clone().into_owned());
        let mut valid_from = leaf.not_before;
        let mut valid_until = leaf.not_after;
        for d in inter {
            if let Some(f) = der::cert_view(d) {
                valid_from = valid_from.max(f.not_before);
                valid_until = valid_until.min(f.not_after);
            }
            certs.push(CertificateDer::from(d.to_vec()));
        }
        if !self.config.accept_expired_anchors {
            valid_from = valid_from.max(anchor.not_before());
            valid_until = valid_until.min(anchor.not_after());
        }
        if let Some(d) = self.crl_deadline {
            valid_until = valid_until.min(d);
        }
        certs.push(CertificateDer::from(anchor.der().to_vec()));
        Ok(Verified {
            chain: Arc::new(VerifiedChain {
                certs,
                anchor_sha256: *anchor.sha256(),
                valid_from,
                valid_until,
                warnings,
            }),
            cached: false,
        })
    }
}

/// The profile layer on one candidate path: end entity, intermediates (issuer of the end
/// entity first), anchor. A pinned certificate (the end entity is its own anchor) is one
/// entry checked with RFC 5280 rules only (the CA/B Forum rules are about
/// publicly-trusted issuance).
fn profile_check(
    leaf_der: &[u8],
    inter: &[&[u8]],
    anchor_der: &[u8],
    rules: RuleSet,
    purpose: Purpose,
    crls: &[Crl],
) -> Result<Vec<Violation>, Violation> {
    let mut path = Vec::with_capacity(inter.len() + 2);
    path.push(PathCert {
        der: leaf_der,
        role: CertRole::EndEntity,
    });
    for d in inter {
        path.push(PathCert {
            der: d,
            role: CertRole::Intermediate,
        });
    }
    let pinned = inter.is_empty() && anchor_der == leaf_der;
    let set = if pinned { rules.without_cabf() } else { rules };
    if !pinned {
        path.push(PathCert {
            der: anchor_der,
            role: CertRole::Anchor,
        });
    }
    profile::check_path(&path, set, purpose, crls)
}

/// The first presented certificate (end entity = 0) that one of `crls` lists, with its
/// subject: which one a revocation refusal is about. Only read on that refusal.
fn revoked_one(
    crls: &[Crl],
    leaf: &[u8],
    intermediates: &[CertificateDer<'_>],
) -> Option<(usize, String)> {
    use x509_parser::prelude::FromDer;
    std::iter::once(leaf)
        .chain(intermediates.iter().map(|c| c.as_ref()))
        .enumerate()
        .find_map(|(i, d)| {
            let (_, c) = x509_parser::certificate::X509Certificate::from_der(d).ok()?;
            let listed = crls.iter().any(|crl| {
                crl.issuer() == c.issuer().as_raw()
                    && crl
                        .inner
                        .as_ref()
                        .is_some_and(|l| matches!(l.find_serial(c.raw_serial()), Ok(Some(_))))
            });
            listed.then(|| (i, dn::display(c.subject().as_raw())))
        })
}

/// The RFC 5280 validator's refusal as a [`VerifyError`].
fn refusal_error(
    r: rfc5280::Refusal,
    secs: i64,
    purpose: Purpose,
    max_depth: usize,
) -> VerifyError {
    use rfc5280::Why;
    if r == rfc5280::Refusal::TooDeep {
        return VerifyError::ChainTooDeep { limit: max_depth };
    }
    let rfc5280::Refusal::At {
        position,
        role,
        subject,
        why,
    } = r
    else {
        let rfc5280::Refusal::Other(w) = r else {
            return VerifyError::Other("no valid path".into());
        };
        return VerifyError::Other(w.into());
    };
    let subject = dn::display(&subject);
    let rule = |rule: Rule, detail: &str| {
        VerifyError::Rule(Violation {
            rule,
            position,
            role,
            subject: subject.clone(),
            detail: detail.into(),
        })
    };
    let which = Some((position, subject.clone()));
    match why {
        Why::NotYetValid(not_before) => VerifyError::NotYetValid {
            time: secs,
            not_before,
            which,
        },
        Why::Expired(not_after) => VerifyError::Expired {
            time: secs,
            not_after,
            which,
        },
        Why::CaAsEndEntity => VerifyError::CaAsEndEntity,
        Why::Purpose => VerifyError::WrongPurpose { purpose },
        Why::Revoked => VerifyError::Revoked { which },
        Why::UnknownCriticalExtension(oid) => rule(
            Rule::UnknownCriticalExtension,
            &format!("it has a critical extension {oid} that is not processed"),
        ),
        Why::NameConstraints => rule(
            Rule::NameConstraintViolated,
            "a name in it is outside an issuing CA's name constraints",
        ),
        Why::NotCa => rule(
            Rule::IssuerNotCa,
            "it issued the certificate below it but basicConstraints cA is not set",
        ),
        Why::PathLen => rule(
            Rule::PathLenExceeded,
            "more intermediates (not counting self-issued ones) follow it than its pathLenConstraint allows",
        ),
        Why::NoKeyCertSign => rule(
            Rule::CaKeyUsage,
            "it issued the certificate below it but its keyUsage lacks keyCertSign",
        ),
        Why::Policy => VerifyError::Other(format!(
            "certificate {position} ({subject}) carries policyConstraints, policyMappings or \
             inhibitAnyPolicy, and tlskit does not process certificate policies"
        )),
        Why::Malformed => VerifyError::BadEncoding(format!(
            "certificate {position} ({subject}): an extension cannot be read"
        )),
        Why::RevocationUnknown => VerifyError::Other(format!(
            "no CRL given covers certificate {position} ({subject}), and a revocation status \
             is required"
        )),
        Why::CrlExpired => VerifyError::Other(format!(
            "the CRL that covers certificate {position} ({subject}) is past its nextUpdate"
        )),
        Why::NameChaining => VerifyError::Other(format!(
            "certificate {position} ({subject}): its issuer name is not its issuer's subject"
        )),
    }
}

/// The presented certificate whose bytes rustls-webpki handed back (it borrows them from
/// `intermediates`, so a pointer comparison finds it).
fn same_bytes<'i>(intermediates: &'i [CertificateDer<'_>], d: &[u8]) -> Option<&'i [u8]> {
    let all = || intermediates.iter().map(|c| c.as_ref());
    all()
        .find(|c| std::ptr::eq(c.as_ptr(), d.as_ptr()) && c.len() == d.len())
        .or_else(|| all().find(|c| *c == d))
}

/// Add the anchors that may have issued `cert`, at most [`MAX_ISSUER_CANDIDATES`] of
/// them, best first: those whose subjectKeyIdentifier is `cert`'s authorityKeyIdentifier
/// (looked up by key identifier, whatever their name: rustls-webpki skips a name that does
/// not chain before any signature check), then anchors with `cert`'s issuer name where one
/// side has no key identifier, then (only when no anchor with that name holds the named
/// key) those whose key identifier contradicts it. Anchors already in `out` (candidates of another certificate of the chain) are not repeated.
fn add_candidates<'s>(store: &'s TrustStore, cert: &der::CertView<'_>, out: &mut Vec<Anchor<'s>>) {
    let start = out.len();
    let room = |out: &Vec<Anchor<'s>>| out.len() - start < MAX_ISSUER_CANDIDATES;
    let push = |out: &mut Vec<Anchor<'s>>, a: Anchor<'s>| {
        if !out.iter().any(|b| b.sha256() == a.sha256()) {
            out.push(a);
        }
    };
    let mut exact = false;
    if let Some(kid) = cert.aki {
        for a in store.by_key_id(kid) {
            if !room(out) {
                return;
            }
            exact |= a.subject() == cert.issuer;
            push(out, a);
        }
    }
    // One walk of the name's chain; it stops once enough anchors without a key
    // identifier to compare are found (a mismatch can then no longer be reached).
    let mut mismatched: Vec<Anchor<'s>> = Vec::new();
    for a in store.by_subject(cert.issuer) {
        if !room(out) {
            return;
        }
        match (cert.aki, a.key_id()) {
            (Some(aki), Some(ski)) if aki == ski => {} // added above
            // The named key is in the store: an anchor with another key could only
            // verify a certificate whose own AKI is wrong. Not tried.
            (Some(_), Some(_)) if exact => {}
            (Some(_), Some(_)) => {
                if mismatched.len() < MAX_ISSUER_CANDIDATES {
                    mismatched.push(a);
                }
            }
            _ => push(out, a),
        }
    }
    for a in mismatched {
        if !room(out) {
            return;
        }
        push(out, a);
    }
}

/// The presented certificates that can lie on a path ending at an anchor named in
/// `anchor_names`: those whose issuer is such an anchor, or (transitively) the subject of
/// a certificate already kept. rustls-webpki matches issuers by exact name bytes too, so
/// every path it could build survives this filter; the rest could only end in
/// `UnknownIssuer` after a search. Certificates we cannot parse are kept (rustls-webpki
/// judges them). `fields[i]` is `intermediates[i]` read by `der::cert_view`. Cost: at
/// most n² name comparisons per pass, n passes (n <= max_presented).
fn toward_anchors<'c>(
    anchor_names: &[&[u8]],
    intermediates: &'c [CertificateDer<'c>],
    fields: &[Option<der::CertView<'_>>],
) -> Vec<CertificateDer<'c>> {
    let mut keep: Vec<bool> = fields.iter().map(Option::is_none).collect();
    loop {
        let mut changed = false;
        for i in 0..fields.len() {
            let Some(f) = &fields[i] else { continue };
            if keep[i] {
                continue;
            }
            let reaches = anchor_names.contains(&f.issuer)
                || fields
                    .iter()
                    .zip(&keep)
                    .any(|(g, &k)| k && g.as_ref().is_some_and(|g| g.subject == f.issuer));
            if reaches {
                keep[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    intermediates
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(c, _)| CertificateDer::from(c.as_ref()))
        .collect()
}

pub(crate) fn unix_secs(t: UnixTime) -> i64 {
    i64::try_from(t.as_secs()).unwrap_or(i64::MAX)
}

/// The issuer name of the highest certificate the peer sent that chains from the leaf
/// by name (for the unknown-issuer message).
fn top_issuer<'a>(leaf: &der::CertView<'a>, intermediates: &'a [CertificateDer<'_>]) -> &'a [u8] {
    let mut issuer = leaf.issuer;
    for _ in 0..intermediates.len() {
        let next = intermediates
            .iter()
            .filter_map(|c| der::cert_view(c))
            .find(|f| f.subject == issuer && f.issuer != f.subject);
        match next {
            Some(f) => issuer = f.issuer,
            None => break,
        }
    }
    issuer
}

fn map_webpki(e: webpki::Error, purpose: Purpose) -> VerifyError {
    use webpki::Error as E;
    match e {
        E::CertExpired { time, not_after } => VerifyError::Expired {
            time: unix_secs(time),
            not_after: unix_secs(not_after),
            which: None,
        },
        E::CertNotValidYet { time, not_before } => VerifyError::NotYetValid {
            time: unix_secs(time),
            not_before: unix_secs(not_before),
            which: None,
        },
        E::CertRevoked => VerifyError::Revoked { which: None },
        E::InvalidSignatureForPublicKey => VerifyError::BadSignature,
        E::CaUsedAsEndEntity => VerifyError::CaAsEndEntity,
        E::RequiredEkuNotFoundContext(_) => VerifyError::WrongPurpose { purpose },
        #[allow(deprecated)]
        E::RequiredEkuNotFound => VerifyError::WrongPurpose { purpose },
        E::MaximumPathDepthExceeded => VerifyError::ChainTooDeep {
            limit: WEBPKI_MAX_DEPTH,
        },
        E::MaximumSignatureChecksExceeded => VerifyError::PathBuildingBudget {
            limit: "100 signature checks",
        },
        E::MaximumPathBuildCallsExceeded => VerifyError::PathBuildingBudget {
            limit: "200,000 path-building steps",
        },
        E::MaximumNameConstraintComparisonsExceeded => VerifyError::PathBuildingBudget {
            limit: "250,000 name-constraint comparisons",
        },
        E::BadDer | E::BadDerTime | E::TrailingData(_) => {
            VerifyError::BadEncoding(webpki_sentence(&e))
        }
        other => VerifyError::Other(webpki_sentence(&other)),
    }
}

/// rustls-webpki's error in words (its Debug form can carry kilobytes of input bytes).
#[allow(deprecated)]
pub(crate) fn webpki_sentence(e: &webpki::Error) -> String {
    use webpki::Error as E;
    let s = match e {
        E::BadDer => "a certificate is not well-formed DER",
        E::BadDerTime => "a certificate has a malformed time",
        E::TrailingData(_) => "a certificate has trailing data after its encoding",
        E::CaUsedAsEndEntity => "a CA certificate is used as the end entity",
        E::EndEntityUsedAsCa => "a certificate that is not a CA is used as an issuer",
        E::CertNotValidForName(_) => "the certificate is not valid for the name",
        E::ExtensionValueInvalid => "a certificate extension has an invalid value",
        E::InvalidCertValidity => "a certificate's notBefore is after its notAfter",
        E::InvalidNetworkMaskConstraint => "a name constraint has an invalid IP network mask",
        E::InvalidSerialNumber => "a certificate has an invalid serial number",
        E::NameConstraintViolation => "a name is outside an issuing CA's name constraints",
        E::PathLenConstraintViolated => "a CA's pathLenConstraint is exceeded",
        E::SignatureAlgorithmMismatch => {
            "a certificate's two signature algorithm fields differ"
        }
        E::UnsupportedCriticalExtension => "a certificate has an unsupported critical extension",
        E::UnsupportedSignatureAlgorithm
        | E::UnsupportedSignatureAlgorithmContext(_)
        | E::UnsupportedSignatureAlgorithmForPublicKey
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext(_) => {
            "a certificate is signed with an algorithm that is not accepted (SHA-1, MD5 and DSA are refused)"
        }
        E::UnsupportedCertVersion => "a certificate has an unsupported version (only X.509 v3)",
        E::EmptyEkuExtension => "a certificate has an empty extendedKeyUsage extension",
        E::MalformedExtensions => "malformed extensions (in a certificate or CRL)",
        E::UnsupportedNameType => "a certificate has a name of an unsupported type",
        E::UnsupportedCrlVersion => "a CRL has an unsupported version",
        E::UnsupportedCrlSignatureAlgorithm
        | E::UnsupportedCrlSignatureAlgorithmContext(_) => {
            "a CRL is signed with an algorithm that is not accepted"
        }
        E::UnsupportedRevocationReason => "a CRL entry has an unsupported revocation reason",
        E::UnsupportedDeltaCrl => "delta CRLs are not supported",
        E::UnsupportedIndirectCrl => "indirect CRLs are not supported",
        E::UnsupportedCrlIssuingDistributionPoint => {
            "a CRL's issuingDistributionPoint is not supported"
        }
        E::InvalidCrlNumber => "a CRL has an invalid CRLNumber",
        E::IssuerNotCrlSigner => "the CRL's issuer may not sign CRLs (keyUsage lacks cRLSign)",
        E::UnknownRevocationStatus => "no CRL covers a certificate on the path",
        E::CrlExpired { .. } => "a CRL is past its nextUpdate",
        E::InvalidCrlSignatureForPublicKey => "a CRL's signature does not verify",
        E::InvalidSignatureForPublicKey => "a signature does not verify",
        E::CertDistrusted => "a certificate on the path is distrusted",
        E::CertRevoked => "a certificate on the path is revoked",
        E::UnknownIssuer => "no path to a trust anchor",
        _ => "the chain was refused by path validation",
    };
    s.to_string()
}

/// rustls-webpki reports presented names in debug form (`DnsName("a.example")`); show
/// the name itself.
fn unwrap_debug(p: &str) -> String {
    match (p.find('('), p.rfind(')')) {
        (Some(a), Some(b)) if a < b => p[a + 1..b].trim_matches('"').to_string(),
        _ => p.to_string(),
    }
}

fn map_name_error(e: webpki::Error, name: &ServerName<'_>) -> VerifyError {
    match e {
        webpki::Error::CertNotValidForName(ctx) => VerifyError::NameMismatch {
            expected: name.to_str().into_owned(),
            presented: ctx.presented.iter().map(|p| unwrap_debug(p)).collect(),
        },
        _ => VerifyError::NameMismatch {
            expected: name.to_str().into_owned(),
            presented: Vec::new(),
        },
    }
}

impl From<VerifyError> for rustls::Error {
    fn from(e: VerifyError) -> Self {
        use rustls::{CertRevocationListError, CertificateError, OtherError};
        let ts =
            |s: i64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(s.max(0) as u64));
        match e {
            VerifyError::BadEncoding(_) => CertificateError::BadEncoding.into(),
            VerifyError::BadCrl(_) => CertRevocationListError::ParseError.into(),
            VerifyError::UnknownIssuer { .. } => CertificateError::UnknownIssuer.into(),
            VerifyError::Expired {
                time, not_after, ..
            } => CertificateError::ExpiredContext {
                time: ts(time),
                not_after: ts(not_after),
            }
            .into(),
            VerifyError::NotYetValid {
                time, not_before, ..
            } => CertificateError::NotValidYetContext {
                time: ts(time),
                not_before: ts(not_before),
            }
            .into(),
            VerifyError::NameMismatch { .. } => CertificateError::NotValidForName.into(),
            VerifyError::WrongPurpose { .. } => CertificateError::InvalidPurpose.into(),
            VerifyError::Revoked { .. } => CertificateError::Revoked.into(),
            VerifyError::BadSignature => CertificateError::BadSignature.into(),
            other => CertificateError::Other(OtherError(Arc::new(other))).into(),
        }
    }
}
