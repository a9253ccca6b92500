//! The PKI of the `tlskit verify` tests: a root, an intermediate and a leaf (IDN, wildcard
//! and IP names) with rcgen, written as PEM in a temporary directory.

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SerialNumber,
};

/// Midnight UTC of the date `y`-`m`-`d`.
pub fn ymd(y: i32, m: u8, d: u8) -> time::OffsetDateTime {
    time::Date::from_calendar_date(y, time::Month::try_from(m).unwrap(), d)
        .unwrap()
        .midnight()
        .assume_utc()
}

/// Parameters of a CA with CN `cn` that the default (webpki) profile accepts: keyCertSign
/// and cRLSign, key identifiers, valid 2020 to 2040.
pub fn ca(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // What the default (webpki) profile asks of a CA: keyUsage and key identifiers.
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p.use_authority_key_identifier_extension = true;
    p.not_before = ymd(2020, 1, 1);
    p.not_after = ymd(2040, 1, 1);
    p
}

/// The verify tests' chain, made by [`pki`]: root `CLI Root` → intermediate
/// `CLI Intermediate` → leaf (serial 77, serverAuth and clientAuth, valid 2025 to 2035).
pub struct Pki {
    /// The temporary directory the tests write their files into (removed on drop).
    pub dir: tempfile::TempDir,
    /// The root as PEM.
    pub root_pem: String,
    /// The intermediate as PEM.
    pub int_pem: String,
    /// The leaf as PEM: CN and SAN `xn--rksmrgs-5wao1o.com`, SANs `*.example.com` and
    /// `192.0.2.1`.
    pub leaf_pem: String,
    /// The intermediate's parameters, to sign more leaves with.
    pub int_params: CertificateParams,
    /// The intermediate's key.
    pub int_key: KeyPair,
}

impl Pki {
    /// The path of `name` in [`Pki::dir`].
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// Write `body` to `name` in [`Pki::dir`]; returns its path.
    pub fn write(&self, name: &str, body: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, body).unwrap();
        p
    }
}

/// Make the chain of [`Pki`] in a new temporary directory (nothing written to it yet).
pub fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let root_key = KeyPair::generate().unwrap();
    let root_params = ca("CLI Root");
    let root = root_params.self_signed(&root_key).unwrap();
    let root_issuer = Issuer::from_params(&root_params, &root_key);
    let int_key = KeyPair::generate().unwrap();
    let int_params = ca("CLI Intermediate");
    let int = int_params.signed_by(&int_key, &root_issuer).unwrap();
    let mut lp = CertificateParams::new(vec![
        "xn--rksmrgs-5wao1o.com".to_string(),
        "*.example.com".to_string(),
        "192.0.2.1".to_string(),
    ])
    .unwrap();
    lp.serial_number = Some(SerialNumber::from(77u64));
    lp.distinguished_name = DistinguishedName::new();
    lp.distinguished_name
        .push(DnType::CommonName, "xn--rksmrgs-5wao1o.com");
    lp.use_authority_key_identifier_extension = true;
    lp.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    lp.not_before = ymd(2025, 1, 1);
    lp.not_after = ymd(2035, 1, 1);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = lp
        .signed_by(&leaf_key, &Issuer::from_params(&int_params, &int_key))
        .unwrap();
    Pki {
        dir,
        root_pem: root.pem(),
        int_pem: int.pem(),
        leaf_pem: leaf.pem(),
        int_params,
        int_key,
    }
}
