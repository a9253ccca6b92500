//! Private keys: generation with aws-lc-rs (PKCS#8 v1), loading (PKCS#8, SEC1 and PKCS#1
//! PEM or DER) into an rcgen signing key, and PEM encoding. Key material is only ever
//! written to files created 0600 by [`crate::fsx`]; nothing here prints it.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use aws_lc_rs::encoding::AsDer;

use crate::{fsx, PkiError, Result};

/// The key types `tlskit key new --type` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyType {
    /// ECDSA on P-256 (the default).
    #[default]
    P256,
    /// ECDSA on P-384.
    P384,
    /// Ed25519.
    Ed25519,
    /// RSA, 2048 bits.
    Rsa2048,
    /// RSA, 3072 bits.
    Rsa3072,
    /// RSA, 4096 bits.
    Rsa4096,
}

impl KeyType {
    /// Every key type, in the order `--help` lists them.
    pub const ALL: [KeyType; 6] = [
        KeyType::P256,
        KeyType::P384,
        KeyType::Ed25519,
        KeyType::Rsa2048,
        KeyType::Rsa3072,
        KeyType::Rsa4096,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::P256 => "p256",
            KeyType::P384 => "p384",
            KeyType::Ed25519 => "ed25519",
            KeyType::Rsa2048 => "rsa2048",
            KeyType::Rsa3072 => "rsa3072",
            KeyType::Rsa4096 => "rsa4096",
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KeyType {
    type Err = UnknownKeyType;
    fn from_str(s: &str) -> Result<Self, UnknownKeyType> {
        let l = s.to_ascii_lowercase();
        KeyType::ALL
            .into_iter()
            .find(|k| k.name() == l)
            .ok_or_else(|| UnknownKeyType {
                input: s.to_string(),
            })
    }
}

/// A key type name that [`KeyType`] does not know. Displays as `unknown key type "X"
/// (one of: p256, ...)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown key type {input:?} (one of: {})", KeyType::ALL.map(KeyType::name).join(", "))]
pub struct UnknownKeyType {
    /// The name as given.
    pub input: String,
}

/// Generate a new private key; returns its PKCS#8 v1 DER.
pub fn generate(kt: KeyType) -> Result<Vec<u8>> {
    use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
    use aws_lc_rs::signature::{
        EcdsaKeyPair, Ed25519KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING,
        ECDSA_P384_SHA384_ASN1_SIGNING,
    };
    let fail = |_| PkiError::Other(format!("generating a {kt} key failed"));
    let der = match kt {
        KeyType::P256 => EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING)
            .and_then(|k| k.to_pkcs8v1())
            .map_err(fail)?
            .as_ref()
            .to_vec(),
        KeyType::P384 => EcdsaKeyPair::generate(&ECDSA_P384_SHA384_ASN1_SIGNING)
            .and_then(|k| k.to_pkcs8v1())
            .map_err(fail)?
            .as_ref()
            .to_vec(),
        KeyType::Ed25519 => Ed25519KeyPair::generate()
            .and_then(|k| k.to_pkcs8v1())
            .map_err(fail)?
            .as_ref()
            .to_vec(),
        KeyType::Rsa2048 | KeyType::Rsa3072 | KeyType::Rsa4096 => {
            let size = match kt {
                KeyType::Rsa2048 => KeySize::Rsa2048,
                KeyType::Rsa3072 => KeySize::Rsa3072,
                _ => KeySize::Rsa4096,
            };
            let k = RsaKeyPair::generate(size).map_err(fail)?;
            let der: aws_lc_rs::encoding::Pkcs8V1Der<'_> = k.as_der().map_err(fail)?;
            der.as_ref().to_vec()
        }
    };
    Ok(der)
}

/// Generate a key and write it as PKCS#8 PEM to `path` (atomically, mode 0600).
pub fn generate_to_file(kt: KeyType, path: &Path, force: bool) -> Result<()> {
    fsx::check_absent(path, force)?;
    let der = generate(kt)?;
    let pem = pem_encode("PRIVATE KEY", &der);
    fsx::write_atomic(path, pem.as_bytes(), true, force)
}

/// PEM-encode DER under `label`, 64 characters a line.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// PEM blocks as (label, DER).
pub(crate) type Blocks = Vec<(String, Vec<u8>)>;

/// PEM blocks of a buffer. `None` when the buffer is not PEM at all.
pub(crate) fn pem_blocks(data: &[u8]) -> Option<Result<Blocks, PemError>> {
    let start = data.iter().position(|b| !b.is_ascii_whitespace())?;
    if !data[start..].starts_with(b"-----BEGIN ") && !contains(data, b"-----BEGIN ") {
        return None;
    }
    let mut out = Vec::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(data) {
        match pem {
            Ok(p) => out.push((p.label, p.contents)),
            Err(x509_parser::error::PEMError::MissingHeader) => break,
            Err(e) => return Some(Err(PemError::from(e))),
        }
    }
    Some(Ok(out))
}

/// Why PEM text could not be read: x509-parser's PEM errors, as messages that quote none
/// of the input (the buffer may be a private key) and say what usually causes them.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PemError {
    /// A block has no END line.
    #[error(
        "malformed PEM: a block has no matching END line (is the PEM on one line, with its \
         newlines replaced by spaces or a literal \\n?)"
    )]
    Incomplete,
    /// A BEGIN line is malformed.
    #[error(
        "malformed PEM: a BEGIN line is malformed (expected -----BEGIN LABEL----- on a line \
         of its own)"
    )]
    InvalidHeader,
    /// A block's body is not base64.
    #[error(
        "malformed PEM: a block's body is not valid base64 (stray characters, or a literal \\n \
         inside the block?)"
    )]
    Base64,
    /// No BEGIN line.
    #[error("malformed PEM: no BEGIN line")]
    MissingHeader,
    /// Reading failed.
    #[error("cannot read: {0}")]
    Io(#[source] std::sync::Arc<std::io::Error>),
}

impl From<x509_parser::error::PEMError> for PemError {
    fn from(e: x509_parser::error::PEMError) -> Self {
        use x509_parser::error::PEMError;
        match e {
            PEMError::IncompletePEM => PemError::Incomplete,
            PEMError::InvalidHeader => PemError::InvalidHeader,
            PEMError::Base64DecodeError => PemError::Base64,
            PEMError::MissingHeader => PemError::MissingHeader,
            PEMError::IOError(e) => PemError::Io(std::sync::Arc::new(e)),
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Load a private key (PKCS#8, SEC1 or PKCS#1; PEM or DER) for signing.
pub fn load(path: &Path) -> Result<rcgen::KeyPair> {
    let data = fsx::read(path)?;
    let der = match pem_blocks(&data) {
        None => data,
        Some(Err(e)) => return Err(PkiError::content(path, e)),
        Some(Ok(blocks)) => {
            let found = blocks.into_iter().find(|(l, _)| l.ends_with("PRIVATE KEY"));
            match found {
                Some((l, _)) if l == "ENCRYPTED PRIVATE KEY" => {
                    return Err(PkiError::bad(
                        path,
                        "encrypted private keys are not supported (decrypt it first, e.g. `openssl pkey -in KEY -out PLAIN`)",
                    ))
                }
                Some((_, der)) => der,
                None => return Err(PkiError::bad(path, "no PRIVATE KEY block in this PEM file")),
            }
        }
    };
    rcgen::KeyPair::try_from(der.as_slice())
        .map_err(PkiError::parse(path, "not a usable private key"))
}

/// A key that signs requests and certificates: a key file, or a key on a PKCS#11 token.
#[derive(Debug)]
#[non_exhaustive]
pub enum SignKey {
    /// Read from a file.
    File(rcgen::KeyPair),
    /// On a token; the private half never leaves it.
    Token(tlskit_pkcs11::RcgenKey),
}

impl SignKey {
    /// Replace rcgen's bare "remote key error" by the token's reason.
    pub fn explain(&self, e: PkiError) -> PkiError {
        match (self, e) {
            (
                SignKey::Token(k),
                PkiError::Rcgen {
                    source: rcgen::Error::RemoteKeyError,
                    context,
                },
            ) => match k.take_error() {
                Some(t) => PkiError::Pkcs11(t),
                None => PkiError::Other(format!("{context}: the token refused to sign")),
            },
            (_, e) => e,
        }
    }

    /// The token URI (no PIN) when the key is on a token.
    pub fn token_uri(&self) -> Option<&tlskit_pkcs11::Pkcs11Uri> {
        match self {
            SignKey::File(_) => None,
            SignKey::Token(k) => Some(k.token_key().uri()),
        }
    }
}

impl rcgen::PublicKeyData for SignKey {
    fn der_bytes(&self) -> &[u8] {
        match self {
            SignKey::File(k) => k.der_bytes(),
            SignKey::Token(k) => k.der_bytes(),
        }
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        match self {
            SignKey::File(k) => rcgen::PublicKeyData::algorithm(k),
            SignKey::Token(k) => k.algorithm(),
        }
    }
}

impl rcgen::SigningKey for SignKey {
    fn sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, rcgen::Error> {
        match self {
            SignKey::File(k) => k.sign(msg),
            SignKey::Token(k) => k.sign(msg),
        }
    }
}

/// Open a key on a token by its `pkcs11:` URI. `module` is the `--pkcs11-module` the
/// URI's `module-path=` overrides.
pub fn open_token(uri: &str, module: Option<&Path>) -> Result<SignKey> {
    let u = tlskit_pkcs11::Pkcs11Uri::parse(uri)?;
    let k = tlskit_pkcs11::TokenKey::open(&u, module)?;
    Ok(SignKey::Token(tlskit_pkcs11::RcgenKey::new(k)?))
}

/// Load a signing key from a spec: a `pkcs11:` URI, a file holding one, or a key file
/// (PKCS#8, SEC1 or PKCS#1; PEM or DER).
pub fn load_signing(spec: &Path) -> Result<SignKey> {
    if let Some(s) = spec.to_str().filter(|s| tlskit_pkcs11::is_uri(s)) {
        return open_token(s, None);
    }
    let data = fsx::read(spec)?;
    if let Some(uri) = std::str::from_utf8(&data)
        .ok()
        .map(str::trim)
        .filter(|t| tlskit_pkcs11::is_uri(t))
    {
        return open_token(uri, None);
    }
    load(spec).map(SignKey::File)
}

/// The PKCS#8 DER of a loaded key (for PKCS#12 export).
pub fn pkcs8_der(key: &rcgen::KeyPair) -> Vec<u8> {
    key.serialize_der()
}

/// Load a private key and return it together with its PKCS#8 v1 DER (SEC1 and PKCS#1
/// keys are converted by aws-lc-rs).
pub fn load_with_pkcs8(path: &Path) -> Result<(rcgen::KeyPair, Vec<u8>)> {
    let kp = load(path)?;
    let der = kp.serialized_der().to_vec();
    if p12_keystore::PrivateKey::from_der(&der).is_ok() {
        return Ok((kp, der));
    }
    use aws_lc_rs::signature::{
        EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING,
    };
    for alg in [
        &ECDSA_P256_SHA256_ASN1_SIGNING,
        &ECDSA_P384_SHA384_ASN1_SIGNING,
    ] {
        if let Ok(k) = EcdsaKeyPair::from_private_key_der(alg, &der) {
            if let Ok(doc) = k.to_pkcs8v1() {
                return Ok((kp, doc.as_ref().to_vec()));
            }
        }
    }
    if let Ok(k) = aws_lc_rs::rsa::KeyPair::from_der(&der) {
        let p8: std::result::Result<aws_lc_rs::encoding::Pkcs8V1Der<'_>, _> = k.as_der();
        if let Ok(p8) = p8 {
            return Ok((kp, p8.as_ref().to_vec()));
        }
    }
    Err(PkiError::bad(path, "could not convert the key to PKCS#8"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rcgen::PublicKeyData;

    #[test]
    fn every_type_generates_a_loadable_key() {
        for kt in KeyType::ALL {
            if matches!(kt, KeyType::Rsa3072 | KeyType::Rsa4096) {
                continue; // slow; covered by the CLI tests for one size
            }
            let der = generate(kt).unwrap();
            let kp = rcgen::KeyPair::try_from(der.as_slice()).unwrap();
            assert!(!kp.subject_public_key_info().is_empty(), "{kt}");
        }
    }

    #[test]
    fn key_type_names_round_trip() {
        for kt in KeyType::ALL {
            assert_eq!(kt.name().parse::<KeyType>().unwrap(), kt);
        }
        assert_eq!(
            "dsa".parse::<KeyType>().unwrap_err().to_string(),
            "unknown key type \"dsa\" (one of: p256, p384, ed25519, rsa2048, rsa3072, rsa4096)"
        );
    }

    #[test]
    fn pem_is_wrapped_at_64() {
        let pem = pem_encode("X", &[0u8; 100]);
        assert!(pem.lines().all(|l| l.len() <= 64));
        let blocks = pem_blocks(pem.as_bytes()).unwrap().unwrap();
        assert_eq!(blocks[0].1, vec![0u8; 100]);
    }
}
