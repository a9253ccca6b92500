//! Test PKI generated with rcgen (no committed blobs).

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// A self-signed CA certificate with its key.
pub struct Ca {
    /// The certificate as PEM.
    pub pem: String,
    /// The certificate as DER.
    pub der: Vec<u8>,
    /// Its key pair, to sign others with.
    pub key: KeyPair,
}

/// A new key pair (rcgen's default algorithm, ECDSA P-256).
pub fn key() -> KeyPair {
    KeyPair::generate().unwrap()
}

/// A self-signed CA with common name `cn`, valid `from`..`to` (years).
pub fn ca_with(key: &KeyPair, cn: &str, from: i32, to: i32, is_ca: bool) -> (String, Vec<u8>) {
    self_signed_with(key, cn, Some(ORG), from, to, is_ca)
}

/// The organization these tests put in their names.
pub const ORG: &str = "tlskit tests";

/// A self-signed certificate: CN `cn` (and O `org`), valid `from`..`to` (years), a CA or
/// not. The one self-signed builder of the store and CLI tests (the CLI tests include
/// these through [`crate::store_pki`]).
pub fn self_signed_with(
    key: &KeyPair,
    cn: &str,
    org: Option<&str>,
    from: i32,
    to: i32,
    is_ca: bool,
) -> (String, Vec<u8>) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    if let Some(o) = org {
        p.distinguished_name.push(DnType::OrganizationName, o);
    }
    p.is_ca = if is_ca {
        IsCa::Ca(BasicConstraints::Unconstrained)
    } else {
        IsCa::ExplicitNoCa
    };
    p.not_before = rcgen::date_time_ymd(from, 1, 1);
    p.not_after = rcgen::date_time_ymd(to, 1, 1);
    let c = p.self_signed(key).unwrap();
    (c.pem(), c.der().to_vec())
}

/// A self-signed CA with CN `cn` and O [`ORG`], valid 2020 to 2090, and a key of its own.
pub fn ca(cn: &str) -> Ca {
    let key = key();
    let (pem, der) = ca_with(&key, cn, 2020, 2090, true);
    Ca { pem, der, key }
}

/// `n` CAs sharing one key (fast), distinct names.
pub fn many(n: usize, prefix: &str) -> Vec<(String, Vec<u8>)> {
    let k = key();
    (0..n)
        .map(|i| ca_with(&k, &format!("{prefix} {i}"), 2020, 2090, true))
        .collect()
}

/// A self-signed CA with CN `cn` and O [`ORG`] that expired in 2010 (valid 2000 to 2010):
/// its PEM and DER.
pub fn expired(cn: &str) -> (String, Vec<u8>) {
    ca_with(&key(), cn, 2000, 2010, true)
}

/// An end-entity certificate issued by another (throw-away) CA: not self-issued, so it
/// cannot be pinned and is reported as not a CA.
pub fn leaf(cn: &str) -> (String, Vec<u8>) {
    leaf_with(cn, Some(ORG))
}

/// [`leaf`] with O `org` (or none) in its subject.
pub fn leaf_with(cn: &str, org: Option<&str>) -> (String, Vec<u8>) {
    let issuer_key = key();
    let mut ip = CertificateParams::new(Vec::<String>::new()).unwrap();
    ip.distinguished_name
        .push(DnType::CommonName, "Leaf Issuer");
    ip.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = rcgen::Issuer::from_params(&ip, &issuer_key);
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    if let Some(o) = org {
        p.distinguished_name.push(DnType::OrganizationName, o);
    }
    p.is_ca = IsCa::ExplicitNoCa;
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2090, 1, 1);
    let c = p.signed_by(&key(), &issuer).unwrap();
    (c.pem(), c.der().to_vec())
}

/// A self-signed end-entity certificate (a pinned certificate when given as a source).
pub fn self_signed_leaf(cn: &str) -> (String, Vec<u8>) {
    ca_with(&key(), cn, 2020, 2090, false)
}

/// A PEM `PRIVATE KEY` block whose body is not a key: the base64 of
/// `MIISECRETKEYMATERIALDONOTECHO`, which no message may quote ([`SECRET_MARKER`]).
pub const FAKE_KEY: &str = "-----BEGIN PRIVATE KEY-----\nTUlJU0VDUkVUS0VZTUFURVJJQUxET05PVEVDSE8=\n-----END PRIVATE KEY-----\n";
/// The body of [`FAKE_KEY`]: a test asserts that no finding or message contains it.
pub const SECRET_MARKER: &str = "TUlJU0VDUkVUS0VZTUFURVJJQUxET05PVEVDSE8";

/// Replace the contents of `path` and give it a modification time one second after the
/// old one: a change that a staleness check sees even within one tick of the file
/// system's clock (no sleeping).
pub fn rewrite_later(path: &std::path::Path, contents: impl AsRef<[u8]>) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, contents).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before + std::time::Duration::from_secs(1))
        .unwrap();
}
