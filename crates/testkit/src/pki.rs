//! The rcgen parameters of the CLI tests' certificates: the one builder for the store and
//! fuzz tests' PKI ([`crate::store_pki`]) and the net tests' (net_support's `Pki`), so the
//! choices of the default (webpki) verification profile live in one place (also reachable
//! as `net_support::pki`).

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose,
};

/// What a certificate is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A CA: basicConstraints cA=TRUE, keyCertSign and cRLSign.
    Ca,
    /// A server leaf: extendedKeyUsage serverAuth, its CN among its SANs.
    Server,
    /// A client leaf: extendedKeyUsage clientAuth.
    Client,
}

/// What the test PKIs choose beyond the profile. The default: rcgen's validity (1975 to
/// 4096), no digitalSignature, no basicConstraints on a leaf.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extras {
    /// Valid from January 1 of `.0` to January 1 of `.1`.
    pub years: Option<(i32, i32)>,
    /// keyUsage digitalSignature too (after keyCertSign and cRLSign on a CA).
    pub digital_signature: bool,
    /// A leaf says basicConstraints cA=FALSE rather than leaving the extension out.
    pub explicit_no_ca: bool,
}

impl Extras {
    /// Valid from January 1 of `from` to January 1 of `to`, and nothing else.
    pub const fn valid(from: i32, to: i32) -> Self {
        Self {
            years: Some((from, to)),
            digital_signature: false,
            explicit_no_ca: false,
        }
    }
}

/// Parameters the default (webpki) verification profile accepts: the CN as the subject,
/// key identifiers, keyCertSign and cRLSign on a CA, serverAuth or clientAuth on a leaf.
/// `sans` that parse as IP addresses are iPAddress SANs, the others dNSNames; a server
/// leaf gets its CN as a SAN too when `sans` lacks it (the profile asks that a server
/// certificate's CN be one of its SANs, CA/B Forum BR 7.1.4.3).
pub fn webpki_params(cn: &str, role: Role, sans: &[&str], extras: Extras) -> CertificateParams {
    let mut names: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    if role == Role::Server && !names.iter().any(|n| n == cn) {
        names.push(cn.to_string());
    }
    let mut p = CertificateParams::new(names).expect("webpki params");
    p.distinguished_name.push(DnType::CommonName, cn);
    if let Some((from, to)) = extras.years {
        p.not_before = rcgen::date_time_ymd(from, 1, 1);
        p.not_after = rcgen::date_time_ymd(to, 1, 1);
    }
    p.use_authority_key_identifier_extension = true;
    match role {
        Role::Ca => {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        }
        Role::Server | Role::Client => {
            if extras.explicit_no_ca {
                p.is_ca = IsCa::ExplicitNoCa;
            }
            p.extended_key_usages = vec![if role == Role::Server {
                ExtendedKeyUsagePurpose::ServerAuth
            } else {
                ExtendedKeyUsagePurpose::ClientAuth
            }];
        }
    }
    if extras.digital_signature {
        p.key_usages.push(KeyUsagePurpose::DigitalSignature);
    }
    p
}
