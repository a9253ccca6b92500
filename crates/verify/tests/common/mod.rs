//! Test PKI generated with rcgen, and stores built from it.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use time::OffsetDateTime;
use tlskit_store::{StoreBuilder, StoreHandle, TrustStore};
use tlskit_verify::{CertificateDer, UnixTime};

/// A certificate with its key and params (so it can issue).
pub struct Ca {
    pub params: CertificateParams,
    pub key: KeyPair,
    pub der: CertificateDer<'static>,
}

impl Ca {
    pub fn issuer(&self) -> Issuer<'_, &KeyPair> {
        Issuer::from_params(&self.params, &self.key)
    }
}

pub fn ymd(y: i32, m: u8, d: u8) -> OffsetDateTime {
    time::Date::from_calendar_date(y, time::Month::try_from(m).unwrap(), d)
        .unwrap()
        .midnight()
        .assume_utc()
}

pub fn at(t: OffsetDateTime) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(t.unix_timestamp() as u64))
}

/// A default verification time inside every default validity period.
pub fn now() -> UnixTime {
    at(ymd(2030, 1, 1))
}

pub fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // What the default (webpki) profile asks of a CA: keyUsage with keyCertSign and an
    // authorityKeyIdentifier (for a root, its own key identifier).
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.use_authority_key_identifier_extension = true;
    p.not_before = ymd(2020, 1, 1);
    p.not_after = ymd(2040, 1, 1);
    p
}

pub fn root(cn: &str) -> Ca {
    root_with(ca_params(cn))
}

pub fn root_with(params: CertificateParams) -> Ca {
    let key = KeyPair::generate().unwrap();
    let der = params.self_signed(&key).unwrap().der().clone();
    Ca { params, key, der }
}

pub fn intermediate(cn: &str, issuer: &Ca) -> Ca {
    intermediate_with(ca_params(cn), KeyPair::generate().unwrap(), issuer)
}

pub fn intermediate_with(params: CertificateParams, key: KeyPair, issuer: &Ca) -> Ca {
    let der = params
        .signed_by(&key, &issuer.issuer())
        .unwrap()
        .der()
        .clone();
    Ca { params, key, der }
}

pub fn leaf_params(names: &[&str]) -> CertificateParams {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, names.first().copied().unwrap_or("leaf"));
    p.distinguished_name = dn;
    // What the default (webpki) profile asks of a TLS leaf: an authorityKeyIdentifier and
    // an explicit EKU (both purposes, so one leaf serves server and client tests).
    p.use_authority_key_identifier_extension = true;
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.not_before = ymd(2025, 1, 1);
    p.not_after = ymd(2035, 1, 1);
    p
}

pub fn leaf(names: &[&str], issuer: &Ca) -> Ca {
    leaf_with(leaf_params(names), issuer)
}

pub fn leaf_with(params: CertificateParams, issuer: &Ca) -> Ca {
    let key = KeyPair::generate().unwrap();
    let der = params
        .signed_by(&key, &issuer.issuer())
        .unwrap()
        .der()
        .clone();
    Ca { params, key, der }
}

pub fn with_eku(mut p: CertificateParams, eku: &[ExtendedKeyUsagePurpose]) -> CertificateParams {
    p.extended_key_usages = eku.to_vec();
    p
}

pub fn with_ip(mut p: CertificateParams, ip: &str) -> CertificateParams {
    p.subject_alt_names
        .push(SanType::IpAddress(ip.parse().unwrap()));
    p
}

pub fn with_serial(mut p: CertificateParams, serial: u64) -> CertificateParams {
    p.serial_number = Some(SerialNumber::from(serial));
    p
}

pub fn store(anchors: &[&CertificateDer<'_>]) -> TrustStore {
    let mut b = StoreBuilder::new();
    for a in anchors {
        b.add_der(a, Path::new("test")).unwrap();
    }
    b.build()
}

pub fn handle(anchors: &[&CertificateDer<'_>]) -> Arc<StoreHandle> {
    Arc::new(StoreHandle::from_store(store(anchors)))
}

/// `n` unrelated self-signed roots (shares one key to keep the test fast).
pub fn filler_roots(n: usize) -> Vec<CertificateDer<'static>> {
    let key = KeyPair::generate().unwrap();
    (0..n)
        .map(|i| {
            let p = ca_params(&format!("Filler Root {i}"));
            p.self_signed(&key).unwrap().der().clone()
        })
        .collect()
}

/// A root and an intermediate under it ("Test Root", "Test Intermediate").
pub struct Pki {
    pub root: Ca,
    pub int: Ca,
}

pub fn pki() -> Pki {
    let root = root("Test Root");
    let int = intermediate("Test Intermediate", &root);
    Pki { root, int }
}

// ---- hand-written extensions (criticality and presence chosen freely) ----

pub fn ext(oid: &[u64], critical: bool, content: Vec<u8>) -> CustomExtension {
    let mut e = CustomExtension::from_oid_content(oid, content);
    e.set_criticality(critical);
    e
}

/// DER TLV with a short or long length.
pub fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    if body.len() < 128 {
        v.push(body.len() as u8);
    } else {
        v.push(0x81);
        v.push(body.len() as u8);
    }
    v.extend_from_slice(body);
    v
}

/// (header length, content length) of the DER TLV at the start of `d`.
pub fn tlv_at(d: &[u8]) -> (usize, usize) {
    match d[1] {
        n if n < 0x80 => (2, n as usize),
        0x81 => (3, d[2] as usize),
        0x82 => (4, (d[2] as usize) << 8 | d[3] as usize),
        n => panic!("length form {n:#x}"),
    }
}

/// DER TLV with any length up to 65,535.
pub fn tlv_long(tag: u8, body: &[u8]) -> Vec<u8> {
    if body.len() < 256 {
        return tlv(tag, body);
    }
    let mut v = vec![tag, 0x82, (body.len() >> 8) as u8, body.len() as u8];
    v.extend_from_slice(body);
    v
}

/// `der` with its serial number's first octet set to 0x81 (a negative INTEGER, which
/// rcgen cannot write), signed again by `issuer`.
pub fn with_negative_serial(der: &[u8], issuer: &Ca) -> CertificateDer<'static> {
    use rcgen::SigningKey;
    let (h, _) = tlv_at(der);
    let body = &der[h..];
    let (th, tl) = tlv_at(body);
    let mut tbs = body[..th + tl].to_vec();
    let rest = &body[th + tl..];
    let (ah, al) = tlv_at(rest);
    let alg = rest[..ah + al].to_vec();
    // TBSCertificate: header, version [0] (5 octets), then serialNumber.
    let serial_at = th + 5;
    assert_eq!(tbs[serial_at], 0x02, "serialNumber INTEGER");
    let (sh, _) = tlv_at(&tbs[serial_at..]);
    tbs[serial_at + sh] = 0x81;
    let mut bits = vec![0];
    bits.extend(issuer.key.sign(&tbs).unwrap());
    let body = [tbs, alg, tlv_long(0x03, &bits)].concat();
    CertificateDer::from(tlv_long(0x30, &body))
}

pub const BC: &[u64] = &[2, 5, 29, 19];
pub const KU: &[u64] = &[2, 5, 29, 15];
pub const SKI: &[u64] = &[2, 5, 29, 14];
pub const AKI: &[u64] = &[2, 5, 29, 35];
pub const EKU: &[u64] = &[2, 5, 29, 37];
pub const SAN: &[u64] = &[2, 5, 29, 17];
pub const NC: &[u64] = &[2, 5, 29, 30];
pub const PC: &[u64] = &[2, 5, 29, 36];
pub const AIA: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 1];

/// basicConstraints cA = TRUE.
pub fn bc_ca() -> Vec<u8> {
    vec![0x30, 0x03, 0x01, 0x01, 0xff]
}
/// keyUsage digitalSignature, keyCertSign, cRLSign.
pub fn ku_ca() -> Vec<u8> {
    vec![0x03, 0x02, 0x01, 0x86]
}

/// A CA whose basicConstraints / SKI / KU are written by hand (rcgen's is_ca = NoCa), so
/// criticality and presence can be chosen.
pub fn hand_ca(cn: &str, bc_critical: bool, ski: Option<bool>, ku: bool) -> CertificateParams {
    let mut p = ca_params(cn);
    p.is_ca = IsCa::NoCa;
    p.key_usages.clear();
    p.custom_extensions.push(ext(BC, bc_critical, bc_ca()));
    if ku {
        p.custom_extensions.push(ext(KU, true, ku_ca()));
    }
    if let Some(critical) = ski {
        p.custom_extensions
            .push(ext(SKI, critical, tlv(0x04, &[0x11; 20])));
    }
    p
}
