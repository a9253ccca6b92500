//! rcgen test PKI of the CLI tests (store, bounds, fuzz replays); the net tests' PKI with
//! files is net_support's `Pki`.

use rcgen::{CertificateParams, Issuer, KeyPair};

use crate::pki::{webpki_params, Extras, Role};

/// A certificate with its parameters and key, to sign others with.
pub struct Ca {
    /// The parameters it was made from (an issuer needs them).
    pub params: CertificateParams,
    /// Its key pair.
    pub key: KeyPair,
    /// The certificate as PEM.
    pub pem: String,
}

/// The chain's parameters: a CA without SANs, or a leaf with its CN as its SAN (2020 to
/// 2090).
fn chain_params(cn: &str, ca: bool) -> CertificateParams {
    let role = if ca { Role::Ca } else { Role::Server };
    webpki_params(cn, role, &[], Extras::valid(2020, 2090))
}

/// A self-signed root.
pub fn root(cn: &str) -> Ca {
    let params = chain_params(cn, true);
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    Ca { params, key, pem }
}

/// A CA or a leaf signed by `by`.
pub fn signed(cn: &str, ca: bool, by: &Ca) -> Ca {
    let params = chain_params(cn, ca);
    let key = KeyPair::generate().unwrap();
    let pem = params
        .signed_by(&key, &Issuer::from_params(&by.params, &by.key))
        .unwrap()
        .pem();
    Ca { params, key, pem }
}

// The store tests' certificate builders (one copy for both crates), without their O.
use crate::store_certs as store_common;

/// A self-signed certificate with CN `cn` (no O) and key `key`, valid `from`..`to`
/// (years), a CA or not: its PEM.
pub fn cert(key: &KeyPair, cn: &str, from: i32, to: i32, is_ca: bool) -> String {
    store_common::self_signed_with(key, cn, None, from, to, is_ca).0
}

/// A self-signed CA with CN `cn` and a new key, valid 2020 to 2090: its PEM.
pub fn ca(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2020, 2090, true)
}

/// A self-signed CA with CN `cn` that expired in 2010 (valid 2000 to 2010): its PEM.
pub fn expired_ca(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2000, 2010, true)
}

/// An end-entity certificate issued by another CA (not self-issued: not pinnable).
pub fn leaf(cn: &str) -> String {
    store_common::leaf_with(cn, None).0
}

/// A self-signed end-entity certificate (pinned when given as a trust source).
pub fn self_signed_leaf(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2020, 2090, false)
}

/// A new key pair as a PKCS#8 PEM `PRIVATE KEY` block.
pub fn private_key_pem() -> String {
    KeyPair::generate().unwrap().serialize_pem()
}
