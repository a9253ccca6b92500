//! Generate benchmark data quickly: one rcgen self-signed P-256 CA as a template, then N
//! variants with distinct subject names and key identifiers (signatures are not re-made:
//! the store does not check signatures, and every variant is a distinct, well-formed CA
//! certificate of the same size). For peer comparisons use the bench/ generator.
//!
//! Usage: gen_store_data N OUT.pem [OUT_DIR]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyIdMethod, KeyPair};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .expect("usage: gen_store_data N OUT.pem [OUT_DIR]");
    let out = args.get(2).expect("output file");
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name
        .push(DnType::CommonName, "tlskit bench CA 0000000");
    p.distinguished_name
        .push(DnType::OrganizationName, "tlskit bench");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_identifier_method = KeyIdMethod::PreSpecified(vec![0xab; 20]);
    p.not_before = rcgen::date_time_ymd(2024, 1, 1);
    p.not_after = rcgen::date_time_ymd(2044, 1, 1);
    let template = p.self_signed(&key).unwrap().der().to_vec();
    let marker = b"0000000";
    let name_pos: Vec<usize> = template
        .windows(7)
        .enumerate()
        .filter(|(_, w)| w == marker)
        .map(|(i, _)| i)
        .collect();
    let ski_pos: Vec<usize> = template
        .windows(20)
        .enumerate()
        .filter(|(_, w)| w.iter().all(|b| *b == 0xab))
        .map(|(i, _)| i)
        .collect();
    let mut bundle = String::with_capacity(n * 700);
    let dir = args.get(3);
    if let Some(d) = dir {
        std::fs::create_dir_all(d).unwrap();
    }
    for i in 0..n {
        let mut der = template.clone();
        let digits = format!("{i:07}");
        for &p in &name_pos {
            der[p..p + 7].copy_from_slice(digits.as_bytes());
        }
        let h = xxhash_rust::xxh3::xxh3_128(digits.as_bytes()).to_le_bytes();
        for &p in &ski_pos {
            der[p..p + 16].copy_from_slice(&h);
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(chunk).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
        if let Some(d) = dir {
            std::fs::write(format!("{d}/ca{i:07}.pem"), &pem).unwrap();
        }
        bundle.push_str(&pem);
    }
    std::fs::write(out, bundle).unwrap();
    eprintln!("{n} certificates of {} bytes DER", template.len());
}
