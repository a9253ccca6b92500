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

pub fn leaf(cn: &str) -> String {
    cert(&KeyPair::generate().unwrap(), cn, 2020, 2090, false)
}

pub fn private_key_pem() -> String {
    KeyPair::generate().unwrap().serialize_pem()
}
