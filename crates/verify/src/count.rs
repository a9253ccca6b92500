//! Signature verifications made by chain building, counted.
//!
//! Every signature check a [`crate::ChainVerifier`] asks for (rustls-webpki's and the
//! RFC 5280 validator's) goes through a thin wrapper of the aws-lc-rs algorithm objects
//! that adds one to a per-thread counter (a verification runs on the calling thread, so
//! tests and benchmarks can count the work one call did without timing it). No
//! process-wide counter: nothing reads one, and it would be a cache line every core
//! writes on the handshake path. The counters are the unit in which path-building
//! cost is bounded (see the crate README, "Limits").

use std::cell::Cell;
use std::sync::OnceLock;

use rustls_pki_types::{AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm};

thread_local! {
    static ON_THREAD: Cell<u64> = const { Cell::new(0) };
}

/// Signature verifications made by chain verifiers on the calling thread so far: the
/// difference around one `verify` call is that call's signature work.
pub fn signature_checks_on_thread() -> u64 {
    ON_THREAD.with(Cell::get)
}

#[derive(Debug)]
struct Counted(&'static dyn SignatureVerificationAlgorithm);

impl SignatureVerificationAlgorithm for Counted {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        ON_THREAD.with(|c| c.set(c.get().saturating_add(1)));
        self.0.verify_signature(public_key, message, signature)
    }
    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.0.public_key_alg_id()
    }
    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.0.signature_alg_id()
    }
    fn fips(&self) -> bool {
        self.0.fips()
    }
}

/// The aws-lc-rs provider's certificate signature algorithms, each counted. Built once
/// per process (a few dozen bytes kept for the process's lifetime, on purpose: webpki
/// wants `'static` algorithm objects).
pub(crate) fn counted_algorithms() -> &'static [&'static dyn SignatureVerificationAlgorithm] {
    static ALGS: OnceLock<&'static [&'static dyn SignatureVerificationAlgorithm]> = OnceLock::new();
    ALGS.get_or_init(|| {
        let all = rustls::crypto::aws_lc_rs::default_provider()
            .signature_verification_algorithms
            .all;
        let wrapped: Vec<&'static dyn SignatureVerificationAlgorithm> = all
            .iter()
            .map(|a| {
                let w: &'static Counted = Box::leak(Box::new(Counted(*a)));
                w as &'static dyn SignatureVerificationAlgorithm
            })
            .collect();
        Box::leak(wrapped.into_boxed_slice())
    })
}
