//! Reading certificates and CRLs: errors name the file and the reason, and keep the error
//! behind the reason as their `source()`.
#![allow(clippy::unwrap_used)]

use std::error::Error as _;
use std::fs;

use tlskit_verify::{load_certs, load_crl, VerifyError};

#[test]
fn a_missing_file_keeps_the_readers_error() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("absent.pem");
    let e = load_certs(&path).unwrap_err();
    assert_eq!(e.path, path);
    let source = e
        .source()
        .and_then(|s| s.downcast_ref::<tlskit_io::ReadError>())
        .expect("the bounded reader's error is the source");
    assert_eq!(e.reason, source.kind.to_string());
    assert_eq!(e.to_string(), format!("{}: {}", path.display(), e.reason));
}

#[test]
fn a_crl_that_does_not_parse_keeps_the_crl_error() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("junk.crl");
    fs::write(&path, [0x30, 0x03, 0x02, 0x01, 0x00]).unwrap();
    let e = load_crl(&path).unwrap_err();
    let source = e
        .source()
        .and_then(|s| s.downcast_ref::<VerifyError>())
        .expect("the CRL parser's error is the source");
    assert!(matches!(source, VerifyError::BadCrl(_)), "{source}");
    assert_eq!(e.reason, source.to_string());
}

#[test]
fn a_reason_of_its_own_has_no_source() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("empty.pem");
    fs::write(&path, "-----BEGIN X509 CRL-----\n-----END X509 CRL-----\n").unwrap();
    let e = load_certs(&path).unwrap_err();
    assert_eq!(e.reason, "no CERTIFICATE block in this PEM file");
    assert!(e.source().is_none());
}

/// A malformed PEM line is said in words and never chained: the PEM parser's own error
/// quotes the input (issue 12: a 55 MB line printed as decimal bytes).
#[test]
fn a_bad_pem_line_is_not_quoted_through_a_source() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("big.pem");
    let mut body = b"-----BEGIN CERTIFICATE----- ".to_vec();
    body.resize(100_000, b'A');
    fs::write(&path, &body).unwrap();
    let e = load_certs(&path).unwrap_err();
    assert!(e.reason.starts_with("bad PEM: "), "{}", e.reason);
    assert!(e.source().is_none());
    assert!(e.to_string().len() < 512, "{} bytes", e.to_string().len());
}
