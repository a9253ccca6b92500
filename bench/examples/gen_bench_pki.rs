//! Generate benchmark data for `tlskit bench verify`: a chain for `bench.example`
//! (leaf <- intermediate <- root, P-256) and stores of N anchors (the root plus N-1
//! unrelated roots, each with its own key and subject).
//!
//! `cargo run --release -p tlskit-bench --example gen_bench_pki -- OUT_DIR 150 2103 10000 100000`
//! writes OUT_DIR/chain.pem and OUT_DIR/roots_N.pem.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

fn ca(cn: &str, org: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CountryName, "US");
    dn.push(DnType::OrganizationName, org);
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: OUT_DIR N..."));
    let sizes: Vec<usize> = args.map(|a| a.parse().expect("N")).collect();
    std::fs::create_dir_all(&out).unwrap();

    let root_key = KeyPair::generate().unwrap();
    let root_params = ca("Bench Root CA", "tlskit bench");
    let root = root_params.self_signed(&root_key).unwrap();
    let int_key = KeyPair::generate().unwrap();
    let mut int_params = ca("Bench Intermediate CA", "tlskit bench");
    int_params.use_authority_key_identifier_extension = true;
    let int = int_params
        .signed_by(&int_key, &Issuer::from_params(&root_params, &root_key))
        .unwrap();
    let mut lp = CertificateParams::new(vec!["bench.example".to_string()]).unwrap();
    lp.distinguished_name = DistinguishedName::new();
    lp.distinguished_name
        .push(DnType::CommonName, "bench.example");
    // A chain the default (webpki) profile accepts: key identifiers, explicit EKU.
    lp.use_authority_key_identifier_extension = true;
    lp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    lp.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = lp
        .signed_by(&leaf_key, &Issuer::from_params(&int_params, &int_key))
        .unwrap();
    std::fs::write(
        out.join("chain.pem"),
        format!("{}{}", leaf.pem(), int.pem()),
    )
    .unwrap();
    std::fs::write(out.join("root.pem"), root.pem()).unwrap();

    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut fillers = Vec::with_capacity(max);
    for i in 0..max.saturating_sub(1) {
        let key = KeyPair::generate().unwrap();
        let p = ca(
            &format!("Filler Root CA {i}"),
            &format!("Filler Org {}", i % 997),
        );
        fillers.push(p.self_signed(&key).unwrap().pem());
    }
    for n in sizes {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(out.join(format!("roots_{n}.pem"))).unwrap(),
        );
        // The real root in the middle, so no list position is favoured.
        let half = (n - 1) / 2;
        for p in &fillers[..half] {
            f.write_all(p.as_bytes()).unwrap();
        }
        f.write_all(root.pem().as_bytes()).unwrap();
        for p in &fillers[half..n - 1] {
            f.write_all(p.as_bytes()).unwrap();
        }
    }
}
