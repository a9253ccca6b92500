//! Test PKI generated with rcgen, and stores built from it.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
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
