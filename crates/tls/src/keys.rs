//! Loading a served certificate chain and its private key (a PEM file or a PKCS#11
//! token URI) and checking that they belong together: what the terminator, the client's
//! `--client-cert` and ACME's stored pairs all use.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::NetError;
use tlskit_x509::text::pem_error_reason;

/// Why a key file gave no key, quoting none of it (the file holds a secret).
fn key_pem_reason(e: &rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            "no private key found (expected a PEM block PRIVATE KEY, EC PRIVATE KEY or \
             RSA PRIVATE KEY)"
                .into()
        }
        e => format!("no usable private key: {}", pem_error_reason(e)),
    }
}

/// Why an id-RSASSA-PSS private key is refused (rustls would only say it is not RSA,
/// ECDSA or EdDSA).
const RSA_PSS_KEY_REASON: &str = "unsupported private key: it is an RSASSA-PSS-only key \
    (algorithm id-RSASSA-PSS, 1.2.840.113549.1.1.10), which tlskit does not support (nor \
    do browsers for certificates); use an RSA key (rsaEncryption, which can still sign \
    with RSASSA-PSS), ECDSA or Ed25519";

/// Whether a PKCS#8 key's algorithm is id-RSASSA-PSS: its AlgorithmIdentifier, right
/// after the version, starts with that OID (`openssl genpkey -algorithm RSA-PSS`).
fn is_rsa_pss_only_key(der: &PrivateKeyDer<'_>) -> bool {
    /// OBJECT IDENTIFIER 1.2.840.113549.1.1.10, DER-encoded.
    const ID_RSASSA_PSS: &[u8] = &[
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
    ];
    let PrivateKeyDer::Pkcs8(k) = der else {
        return false;
    };
    // SEQUENCE (2-4 length octets) { INTEGER 0 (3 octets), SEQUENCE { OID ... } }: the
    // OID lies within the first 16 octets.
    let head = &k.secret_pkcs8_der()[..k.secret_pkcs8_der().len().min(24)];
    head.windows(ID_RSASSA_PSS.len())
        .any(|w| w == ID_RSASSA_PSS)
}

/// Largest certificate chain or key file read: tlskit-io's input limit (64 MiB).
pub const MAX_PEM_BYTES: u64 = tlskit_io::MAX_INPUT_BYTES;

/// Read a certificate or key file: a regular file (a FIFO or device is refused without
/// blocking on it: a reload must never wait on a file) of at most [`MAX_PEM_BYTES`].
fn read_pem(path: &Path) -> Result<Vec<u8>, NetError> {
    tlskit_io::read(path, MAX_PEM_BYTES).map_err(|e| NetError::file(path, e.kind))
}

/// Read a PEM file holding the leaf certificate followed by its chain.
pub(crate) fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let data = read_pem(path)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<_, _>>()
        .map_err(|e| NetError::file(path, format!("bad PEM: {}", pem_error_reason(&e))))?;
    if certs.is_empty() {
        return Err(NetError::file(path, "no CERTIFICATE block found"));
    }
    Ok(certs)
}

/// Turn a key spec into a rustls signing key: a PEM key file, a `pkcs11:` URI (RFC 7512),
/// or a file holding such a URI (an SNI directory's `NAME.key`). A token key is opened
/// afresh each call (new sessions, new login), so a reload re-opens tokens.
pub fn load_signing_key(
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<dyn rustls::sign::SigningKey>, NetError> {
    let uri = match key.to_str().filter(|s| tlskit_pkcs11::is_uri(s)) {
        Some(s) => s.to_string(),
        None => {
            let data = read_pem(key)?;
            match std::str::from_utf8(&data).map(str::trim) {
                Ok(text) if tlskit_pkcs11::is_uri(text) => text.to_string(),
                _ => {
                    let der = PrivateKeyDer::from_pem_slice(&data)
                        .map_err(|e| NetError::file(key, key_pem_reason(&e)))?;
                    let rsa_pss_only = is_rsa_pss_only_key(&der);
                    return provider.key_provider.load_private_key(der).map_err(|e| {
                        if rsa_pss_only {
                            NetError::file(key, RSA_PSS_KEY_REASON)
                        } else {
                            NetError::file(key, format!("unsupported private key: {e}"))
                        }
                    });
                }
            }
        }
    };
    let parsed = tlskit_pkcs11::Pkcs11Uri::parse(&uri)?;
    let k = tlskit_pkcs11::TokenKey::open(&parsed, None)?;
    Ok(Arc::new(CheckedTokenKey(tlskit_pkcs11::RustlsKey::new(k)?)))
}

/// A token key that is checked before each handshake uses it: when the token is gone
/// (and re-opening it failed) the handshake ends with a handshake_failure alert and a
/// `pkcs11_unavailable` log line, instead of a connection dropped mid-handshake.
#[derive(Debug)]
struct CheckedTokenKey(tlskit_pkcs11::RustlsKey);

impl rustls::sign::SigningKey for CheckedTokenKey {
    fn choose_scheme(
        &self,
        offered: &[rustls::SignatureScheme],
    ) -> Option<Box<dyn rustls::sign::Signer>> {
        if let Err(e) = self.0.check() {
            // Once per handshake while the token is gone: within the global bucket.
            crate::ratelimit::event(
                crate::ratelimit::Noisy::Pkcs11Unavailable,
                crate::log::Level::Error,
                "pkcs11_unavailable",
                &[("reason", &e)],
            );
            return None;
        }
        self.0.choose_scheme(offered)
    }
    fn public_key(&self) -> Option<rustls_pki_types::SubjectPublicKeyInfoDer<'_>> {
        self.0.public_key()
    }
    fn algorithm(&self) -> rustls::SignatureAlgorithm {
        self.0.algorithm()
    }
}

/// Load a chain and its key and check that the key belongs to the leaf.
pub fn load_certified_key(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, NetError> {
    let chain = load_chain(cert)?;
    let signing = load_signing_key(key, provider)?;
    let ck = CertifiedKey::new(chain, signing);
    match ck.keys_match() {
        Ok(()) => Ok(Arc::new(ck)),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(NetError::KeyMismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            })
        }
        Err(e) => Err(NetError::file(
            cert,
            format!("cannot check key against certificate: {e}"),
        )),
    }
}
