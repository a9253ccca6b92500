//! Reading certificates and CRLs from files (PEM or DER), with errors that name the file
//! and the reason. Every certificate is checked to be a well-formed X.509 certificate
//! (x509-parser) so garbage is reported as unreadable input, not as an invalid chain.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::CertificateDer;

use crate::crl::Crl;
use tlskit_x509::text::pem_error_reason;

/// A file that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
    /// The error behind `reason`, where another layer reported it (the bounded reader,
    /// the PEM or X.509 parser, the CRL parser): what `Error::source` returns.
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

fn err(path: &Path, reason: impl Into<String>) -> InputError {
    InputError {
        path: path.to_path_buf(),
        reason: reason.into(),
        source: None,
    }
}

/// [`err`] that keeps the error behind the reason.
fn err_from(
    path: &Path,
    reason: impl Into<String>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> InputError {
    InputError {
        source: Some(Box::new(source)),
        ..err(path, reason)
    }
}

/// Largest certificate or CRL file read: 64 MiB (the store's per-file limit). A bigger
/// file (a 2 GB sparse file) is refused before reading; a FIFO or device (an endless
/// pipe, `/dev/zero`) is refused without reading at all (tlskit-io's bounded reader).
pub const MAX_INPUT_BYTES: u64 = tlskit_io::MAX_INPUT_BYTES;

fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    tlskit_io::read(path, MAX_INPUT_BYTES).map_err(|e| err_from(path, e.kind.to_string(), e))
}

fn is_pem(bytes: &[u8]) -> bool {
    bytes.windows(11).any(|w| w == b"-----BEGIN ")
}

/// Read every certificate in a PEM file (in order) or one DER certificate.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, InputError> {
    let bytes = read(path)?;
    let mut certs = Vec::new();
    if is_pem(&bytes) {
        for item in <(SectionKind, Vec<u8>)>::pem_slice_iter(&bytes) {
            let (kind, der) =
                // Not kept as the source: the PEM error's own text quotes the input
                // (a 55 MB line as decimal bytes); pem_error_reason says it in words.
                item.map_err(|e| err(path, format!("bad PEM: {}", pem_error_reason(&e))))?;
            if kind == SectionKind::Certificate {
                certs.push(CertificateDer::from(der));
            }
        }
        if certs.is_empty() {
            return Err(err(path, "no CERTIFICATE block in this PEM file"));
        }
    } else {
        certs.push(CertificateDer::from(bytes));
    }
    for (i, c) in certs.iter().enumerate() {
        match x509_parser::parse_x509_certificate(c) {
            Ok(([], _)) => {}
            Ok(_) => {
                return Err(err(
                    path,
                    format!("certificate {} has trailing data", i + 1),
                ))
            }
            Err(e) => {
                let what = if certs.len() == 1 && !is_pem(c) {
                    "not a PEM or DER certificate".to_string()
                } else {
                    format!("certificate {} is not a valid X.509 certificate", i + 1)
                };
                return Err(err_from(path, format!("{what} ({e})"), e));
            }
        }
    }
    Ok(certs)
}

/// Read a CRL (PEM `X509 CRL` or DER).
pub fn load_crl(path: &Path) -> Result<Crl, InputError> {
    let bytes = read(path)?;
    let der = if is_pem(&bytes) {
        let mut found = None;
        for item in <(SectionKind, Vec<u8>)>::pem_slice_iter(&bytes) {
            let (kind, der) =
                // Not kept as the source: the PEM error's own text quotes the input
                // (a 55 MB line as decimal bytes); pem_error_reason says it in words.
                item.map_err(|e| err(path, format!("bad PEM: {}", pem_error_reason(&e))))?;
            if kind == SectionKind::Crl {
                found = Some(der);
                break;
            }
        }
        found.ok_or_else(|| err(path, "no X509 CRL block in this PEM file"))?
    } else {
        bytes
    };
    Crl::from_der(&der).map_err(|e| err_from(path, e.to_string(), e))
}
