//! rcgen test PKI for the store CLI tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

pub fn cert(key: &KeyPair, cn: &str, from: i32, to: i32, is_ca: bool) -> String {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = if is_ca {
        IsCa::Ca(BasicConstraints::Unconstrained)
    } else {
        IsCa::ExplicitNoCa
    };
    p.not_before = rcgen::date_time_ymd(from, 1, 1);
    p.not_after = rcgen::date_time_ymd(to, 1, 1);
    p.self_signed(key).unwrap().pem()
}

pub fn ca(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2020, 2090, true)
}

pub fn expired_ca(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2000, 2010, true)
}

/// An end-entity certificate issued by another CA (not self-issued: not pinnable).
pub fn leaf(cn: &str) -> String {
    let issuer_key = KeyPair::generate().unwrap();
    let mut ip = CertificateParams::new(Vec::<String>::new()).unwrap();
    ip.distinguished_name
        .push(DnType::CommonName, "Leaf Issuer");
    ip.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let issuer = rcgen::Issuer::from_params(&ip, &issuer_key);
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::ExplicitNoCa;
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2090, 1, 1);
    p.signed_by(&KeyPair::generate().unwrap(), &issuer)
        .unwrap()
        .pem()
}

/// A self-signed end-entity certificate (pinned when given as a trust source).
pub fn self_signed_leaf(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2020, 2090, false)
}

pub fn private_key_pem() -> String {
    KeyPair::generate().unwrap().serialize_pem()
}
