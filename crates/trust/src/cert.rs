//! The certificate to install: read once, checked to be a CA, named.

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::error::{Result, TrustError};

/// Largest CA file read: a certificate is a few KiB; this leaves room for comments.
pub const MAX_CA_FILE_BYTES: u64 = 1 << 20;

/// A CA certificate accepted for installation.
#[derive(Debug, Clone)]
pub struct CaCert {
    /// Its DER bytes.
    pub der: Vec<u8>,
    /// Its PEM text, as tlskit writes it (one block, 64-column base64, final newline).
    pub pem: String,
    /// SHA-256 of the DER, lower-case hex.
    pub sha256: String,
    /// Subject, RFC 4514 (not escaped: printers escape it).
    pub subject: String,
    /// The names it may vouch for (`dns:example.com`), empty without name constraints.
    pub permitted: Vec<String>,
    /// The names it may not vouch for.
    pub excluded: Vec<String>,
    /// X.509 version (1 or 3).
    pub version: u32,
    /// End of validity, RFC 3339.
    pub not_after: String,
}

/// Something worth saying about a CA that is installed anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// No name constraints: once trusted, it can vouch for any name.
    NoNameConstraints,
    /// A version 1 certificate: no extensions, so no basicConstraints and no name
    /// constraints; trusted as a CA by the stores only because it is an anchor.
    Version1,
}

impl Warning {
    /// A short stable code for JSON.
    pub fn code(self) -> &'static str {
        match self {
            Warning::NoNameConstraints => "no-name-constraints",
            Warning::Version1 => "version-1",
        }
    }

    /// The sentence shown to the user.
    pub fn message(self) -> &'static str {
        match self {
            Warning::NoNameConstraints => {
                "this CA has no name constraints: once trusted it can vouch for any name, \
                 including your bank's; a CA made with `tlskit ca init DIR --permit-dns \
                 example.internal` can only vouch for names below example.internal"
            }
            Warning::Version1 => {
                "this is a version 1 certificate: it carries neither basicConstraints nor \
                 name constraints, and every store trusts it for any name"
            }
        }
    }
}

impl CaCert {
    /// Read `path` (PEM or DER, exactly one certificate) and check that it is a CA.
    pub fn from_file(path: &Path) -> Result<Self> {
        let bytes = tlskit_io::read(path, MAX_CA_FILE_BYTES)?;
        Self::from_bytes(&bytes, path)
    }

    /// Check `bytes` (PEM or DER, exactly one certificate); `path` names it in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |reason: String| TrustError::BadCertificate {
            path: path.to_path_buf(),
            reason,
        };
        let der: Vec<u8> = if bytes.starts_with(&[0x30]) {
            bytes.to_vec()
        } else {
            let mut certs = Vec::new();
            for c in CertificateDer::pem_slice_iter(bytes) {
                let c = c.map_err(|e| bad(tlskit_x509::text::pem_error_reason(&e)))?;
                certs.push(c.as_ref().to_vec());
            }
            match certs.len() {
                0 => return Err(bad("no CERTIFICATE block".into())),
                1 => certs.swap_remove(0),
                n => {
                    return Err(bad(format!(
                        "{n} certificates; give the one CA certificate to install"
                    )))
                }
            }
        };
        let (rest, c) = X509Certificate::from_der(&der)
            .map_err(|_| bad("not a DER X.509 certificate".into()))?;
        if !rest.is_empty() {
            return Err(bad("trailing bytes after the certificate".into()));
        }
        let info = tlskit_pki::inspect::cert_info(&der, &c);
        // Version 3 (or 2) certificates say whether they are CAs; a version 1 certificate
        // cannot, and is accepted as the stores accept it (with a warning).
        if info.version >= 2 {
            match c.basic_constraints() {
                Err(_) => {
                    return Err(TrustError::NotACa {
                        path: path.to_path_buf(),
                        reason: "its basicConstraints extension does not parse",
                    })
                }
                Ok(None) => {
                    return Err(TrustError::NotACa {
                        path: path.to_path_buf(),
                        reason: "it has no basicConstraints extension",
                    })
                }
                Ok(Some(bc)) if !bc.value.ca => {
                    return Err(TrustError::NotACa {
                        path: path.to_path_buf(),
                        reason: "its basicConstraints say cA=false",
                    })
                }
                Ok(Some(_)) => {}
            }
            if let Ok(Some(ku)) = c.key_usage() {
                if !ku.value.key_cert_sign() {
                    return Err(TrustError::NotACa {
                        path: path.to_path_buf(),
                        reason: "its keyUsage does not include keyCertSign",
                    });
                }
            }
        }
        let (permitted, excluded) = match info.name_constraints {
            Some(nc) => (nc.permitted, nc.excluded),
            None => (Vec::new(), Vec::new()),
        };
        Ok(CaCert {
            pem: pem_of(&der),
            sha256: info.sha256,
            subject: info.subject,
            permitted,
            excluded,
            version: info.version,
            not_after: info.not_after,
            der,
        })
    }

    /// The short identifier in every name tlskit gives the CA (files, NSS nicknames, Java
    /// aliases): the first 16 hex digits of its SHA-256.
    pub fn id(&self) -> &str {
        &self.sha256[..16.min(self.sha256.len())]
    }

    /// Whether it carries name constraints that limit it (a permitted subtree; excluded
    /// subtrees alone leave every other name open).
    pub fn is_constrained(&self) -> bool {
        !self.permitted.is_empty()
    }

    /// What to warn about before installing it.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = Vec::new();
        if self.version < 2 {
            w.push(Warning::Version1);
        }
        if !self.is_constrained() {
            w.push(Warning::NoNameConstraints);
        }
        w
    }
}

/// DER as one PEM CERTIFICATE block.
pub(crate) fn pem_of(der: &[u8]) -> String {
    tlskit_pki::key::pem_encode("CERTIFICATE", der)
}

/// The DER certificates of a PEM text (blocks that do not parse are skipped: a bundle is
/// searched, not validated).
pub(crate) fn pem_certs(text: &[u8]) -> Vec<Vec<u8>> {
    CertificateDer::pem_slice_iter(text)
        .filter_map(|c| c.ok())
        .map(|c| c.as_ref().to_vec())
        .collect()
}
