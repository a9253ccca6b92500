//! The signers: [`RustlsKey`] implements rustls's `SigningKey` (handshakes, server and
//! client), [`RcgenKey`] implements rcgen's `SigningKey` (requests, certificates).
//!
//! ECDSA is hashed here and signed with CKM_ECDSA (every token has it), then the raw
//! r || s is DER-encoded. RSA uses the token's combined hash-and-sign mechanisms
//! (CKM_SHA256_RSA_PKCS_PSS, CKM_SHA256_RSA_PKCS, ...) and offers only the schemes the
//! token lists.

use std::sync::{Arc, Mutex};

use aws_lc_rs::digest;
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsPssParams};
use cryptoki::mechanism::{Mechanism, MechanismType};
use rustls::sign::{Signer, SigningKey};
use rustls::{SignatureAlgorithm, SignatureScheme};
use rustls_pki_types::SubjectPublicKeyInfoDer;

use crate::token::{KeyKind, TokenKey};
use crate::{spki, Pkcs11Error};

#[derive(Debug, Clone, Copy)]
enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    fn digest(self, data: &[u8]) -> Vec<u8> {
        let alg = match self {
            Hash::Sha256 => &digest::SHA256,
            Hash::Sha384 => &digest::SHA384,
            Hash::Sha512 => &digest::SHA512,
        };
        digest::digest(alg, data).as_ref().to_vec()
    }
    fn len(self) -> u64 {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
            Hash::Sha512 => 64,
        }
    }
    fn pss(self) -> PkcsPssParams {
        let (hash_alg, mgf) = match self {
            Hash::Sha256 => (MechanismType::SHA256, PkcsMgfType::MGF1_SHA256),
            Hash::Sha384 => (MechanismType::SHA384, PkcsMgfType::MGF1_SHA384),
            Hash::Sha512 => (MechanismType::SHA512, PkcsMgfType::MGF1_SHA512),
        };
        PkcsPssParams {
            hash_alg,
            mgf,
            s_len: self.len().into(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum How {
    Ecdsa(Hash),
    Pss(Hash),
    Pkcs1(Hash),
}

impl How {
    fn mechanism_type(self) -> MechanismType {
        match self {
            How::Ecdsa(_) => MechanismType::ECDSA,
            How::Pss(Hash::Sha256) => MechanismType::SHA256_RSA_PKCS_PSS,
            How::Pss(Hash::Sha384) => MechanismType::SHA384_RSA_PKCS_PSS,
            How::Pss(Hash::Sha512) => MechanismType::SHA512_RSA_PKCS_PSS,
            How::Pkcs1(Hash::Sha256) => MechanismType::SHA256_RSA_PKCS,
            How::Pkcs1(Hash::Sha384) => MechanismType::SHA384_RSA_PKCS,
            How::Pkcs1(Hash::Sha512) => MechanismType::SHA512_RSA_PKCS,
        }
    }
}

/// Sign `msg` the way `how` says; the result is in the form TLS and X.509 use.
fn sign(key: &TokenKey, how: How, msg: &[u8]) -> Result<Vec<u8>, Pkcs11Error> {
    match how {
        How::Ecdsa(h) => {
            let raw = key.sign_raw(&Mechanism::Ecdsa, &h.digest(msg))?;
            spki::ecdsa_sig(&raw).ok_or_else(|| Pkcs11Error::Unsupported {
                uri: key.shown().to_string(),
                reason: "the token returned a malformed ECDSA signature".into(),
            })
        }
        How::Pss(h) => {
            let p = h.pss();
            let m = match h {
                Hash::Sha256 => Mechanism::Sha256RsaPkcsPss(p),
                Hash::Sha384 => Mechanism::Sha384RsaPkcsPss(p),
                Hash::Sha512 => Mechanism::Sha512RsaPkcsPss(p),
            };
            key.sign_raw(&m, msg)
        }
        How::Pkcs1(h) => {
            let m = match h {
                Hash::Sha256 => Mechanism::Sha256RsaPkcs,
                Hash::Sha384 => Mechanism::Sha384RsaPkcs,
                Hash::Sha512 => Mechanism::Sha512RsaPkcs,
            };
            key.sign_raw(&m, msg)
        }
    }
}

/// The TLS schemes this key can sign, in preference order.
fn schemes(key: &TokenKey) -> Vec<(SignatureScheme, How)> {
    let all: Vec<(SignatureScheme, How)> = match key.kind() {
        KeyKind::EcP256 => vec![(
            SignatureScheme::ECDSA_NISTP256_SHA256,
            How::Ecdsa(Hash::Sha256),
        )],
        KeyKind::EcP384 => vec![(
            SignatureScheme::ECDSA_NISTP384_SHA384,
            How::Ecdsa(Hash::Sha384),
        )],
        KeyKind::Rsa(_) => vec![
            (SignatureScheme::RSA_PSS_SHA256, How::Pss(Hash::Sha256)),
            (SignatureScheme::RSA_PSS_SHA384, How::Pss(Hash::Sha384)),
            (SignatureScheme::RSA_PSS_SHA512, How::Pss(Hash::Sha512)),
            (SignatureScheme::RSA_PKCS1_SHA256, How::Pkcs1(Hash::Sha256)),
            (SignatureScheme::RSA_PKCS1_SHA384, How::Pkcs1(Hash::Sha384)),
            (SignatureScheme::RSA_PKCS1_SHA512, How::Pkcs1(Hash::Sha512)),
        ],
    };
    all.into_iter()
        .filter(|(_, how)| key.supports(how.mechanism_type()))
        .collect()
}

/// A token key as a rustls `SigningKey`.
#[derive(Debug, Clone)]
pub struct RustlsKey {
    key: Arc<TokenKey>,
    schemes: Vec<(SignatureScheme, How)>,
}

impl RustlsKey {
    /// Wrap an opened token key. Fails when the token offers no mechanism for any TLS
    /// signature scheme of this key.
    pub fn new(key: Arc<TokenKey>) -> Result<Self, Pkcs11Error> {
        let schemes = schemes(&key);
        if schemes.is_empty() {
            return Err(Pkcs11Error::Unsupported {
                uri: key.shown().to_string(),
                reason: format!(
                    "the token offers no signing mechanism usable in TLS for this {} key",
                    key.kind()
                ),
            });
        }
        Ok(Self { key, schemes })
    }
}

impl RustlsKey {
    /// Whether the token can sign now (see [`TokenKey::check`]).
    pub fn check(&self) -> Result<(), Pkcs11Error> {
        self.key.check()
    }
}

impl SigningKey for RustlsKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        self.schemes
            .iter()
            .find(|(s, _)| offered.contains(s))
            .map(|(scheme, how)| {
                Box::new(TlsSigner {
                    key: self.key.clone(),
                    scheme: *scheme,
                    how: *how,
                }) as Box<dyn Signer>
            })
    }

    fn public_key(&self) -> Option<SubjectPublicKeyInfoDer<'_>> {
        Some(SubjectPublicKeyInfoDer::from(self.key.spki()))
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        match self.key.kind() {
            KeyKind::EcP256 | KeyKind::EcP384 => SignatureAlgorithm::ECDSA,
            KeyKind::Rsa(_) => SignatureAlgorithm::RSA,
        }
    }
}

#[derive(Debug)]
struct TlsSigner {
    key: Arc<TokenKey>,
    scheme: SignatureScheme,
    how: How,
}

impl Signer for TlsSigner {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rustls::Error> {
        sign(&self.key, self.how, message)
            .map_err(|e| rustls::Error::General(format!("PKCS#11 signature failed: {e}")))
    }
    fn scheme(&self) -> SignatureScheme {
        self.scheme
    }
}

/// A token key as an rcgen `SigningKey`: ECDSA with the curve's hash, RSA with PKCS#1 v1.5
/// SHA-256 (what rcgen writes for RSA).
#[derive(Debug)]
pub struct RcgenKey {
    key: Arc<TokenKey>,
    how: How,
    alg: &'static rcgen::SignatureAlgorithm,
    /// rcgen only carries `RemoteKeyError`; the real reason waits here.
    last_error: Mutex<Option<Pkcs11Error>>,
}

impl RcgenKey {
    /// Wrap an opened token key.
    pub fn new(key: Arc<TokenKey>) -> Result<Self, Pkcs11Error> {
        let (how, alg) = match key.kind() {
            KeyKind::EcP256 => (How::Ecdsa(Hash::Sha256), &rcgen::PKCS_ECDSA_P256_SHA256),
            KeyKind::EcP384 => (How::Ecdsa(Hash::Sha384), &rcgen::PKCS_ECDSA_P384_SHA384),
            KeyKind::Rsa(_) => (How::Pkcs1(Hash::Sha256), &rcgen::PKCS_RSA_SHA256),
        };
        if !key.supports(how.mechanism_type()) {
            return Err(Pkcs11Error::Unsupported {
                uri: key.shown().to_string(),
                reason: format!(
                    "the token does not offer the mechanism needed to sign certificates with this {} key",
                    key.kind()
                ),
            });
        }
        Ok(Self {
            key,
            how,
            alg,
            last_error: Mutex::new(None),
        })
    }

    /// The token key.
    pub fn token_key(&self) -> &Arc<TokenKey> {
        &self.key
    }

    /// The reason of the last failed signature (rcgen reports only `RemoteKeyError`).
    pub fn take_error(&self) -> Option<Pkcs11Error> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl rcgen::PublicKeyData for RcgenKey {
    fn der_bytes(&self) -> &[u8] {
        self.key.public_raw()
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        self.alg
    }
}

impl rcgen::SigningKey for RcgenKey {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        sign(&self.key, self.how, msg).map_err(|e| {
            *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            rcgen::Error::RemoteKeyError
        })
    }
}
