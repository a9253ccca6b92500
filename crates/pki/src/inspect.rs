//! `show`: what a file holds, PEM or DER detected automatically. Certificates (one or a
//! chain), requests, public keys (SPKI), private keys (only their public half is
//! described: type, size, fingerprint of the public key) and CRLs.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};
use x509_parser::objects::{oid2sn, oid_registry};
use x509_parser::oid_registry::Oid;
use x509_parser::prelude::*;

use crate::key::PemError;
use crate::{dn, fsx, key, PkiError, Result};

/// One object found in a file.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Item {
    /// An X.509 certificate.
    Certificate(Box<CertInfo>),
    /// A PKCS#10 request.
    Request(RequestInfo),
    /// A SubjectPublicKeyInfo.
    PublicKey(PublicKeyInfo),
    /// A private key: only the public half is described.
    PrivateKey(PrivateKeyInfo),
    /// A certificate revocation list.
    Crl(CrlInfo),
}

/// A subjectAltName entry.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SanInfo {
    /// `dns`, `ip`, `email`, `uri` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value as encoded (A-labels for DNS names).
    pub value: String,
    /// The Unicode form (U-labels) for DNS names and email domains; the value otherwise.
    pub unicode: String,
    /// Why the name is malformed (an invalid `xn--` label, ...), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A public key's type and size.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KeyInfo {
    /// `rsa`, `ec`, `ed25519`, `ed448`, `dsa` or the algorithm OID.
    #[serde(rename = "type")]
    pub kind: String,
    /// Size in bits (modulus for RSA, field size for EC).
    pub bits: usize,
    /// The named curve for EC keys (`P-256`, `P-384`, `P-521`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve: Option<String>,
}

/// An extension present in a certificate or request.
#[derive(Debug, Clone, Serialize)]
pub struct ExtInfo {
    /// Dotted OID.
    pub oid: String,
    /// Short name when known.
    pub name: String,
    /// Critical flag.
    pub critical: bool,
}

/// Name constraints of a CA certificate.
#[derive(Debug, Clone, Serialize, Default)]
pub struct NameConstraintsInfo {
    /// Permitted subtrees (`dns:example.com`, `ip:10.0.0.0/8`, ...).
    pub permitted: Vec<String>,
    /// Excluded subtrees.
    pub excluded: Vec<String>,
}

/// A certificate.
#[derive(Debug, Clone, Serialize)]
pub struct CertInfo {
    /// Always `certificate`.
    pub kind: &'static str,
    /// Subject DN, RFC 4514.
    pub subject: String,
    /// Issuer DN, RFC 4514.
    pub issuer: String,
    /// Serial number, lower-case hex.
    pub serial: String,
    /// Start of validity, RFC 3339.
    pub not_before: String,
    /// End of validity, RFC 3339.
    pub not_after: String,
    /// subjectAltNames.
    pub sans: Vec<SanInfo>,
    /// Public key.
    pub key: KeyInfo,
    /// SHA-256 of the DER certificate, lower-case hex.
    pub sha256: String,
    /// SHA-256 of the SubjectPublicKeyInfo (the key pin), lower-case hex.
    pub spki_sha256: String,
    /// Signature algorithm.
    pub signature_algorithm: String,
    /// X.509 version (1 or 3).
    pub version: u32,
    /// basicConstraints CA flag.
    pub is_ca: bool,
    /// pathLenConstraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_len: Option<u32>,
    /// Key usages.
    pub key_usage: Vec<String>,
    /// Extended key usages.
    pub extended_key_usage: Vec<String>,
    /// Name constraints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_constraints: Option<NameConstraintsInfo>,
    /// Subject key identifier, hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_key_id: Option<String>,
    /// Authority key identifier, hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authority_key_id: Option<String>,
    /// Subject and issuer are the same name.
    pub self_issued: bool,
    /// All extensions.
    pub extensions: Vec<ExtInfo>,
}

/// A certificate signing request.
#[derive(Debug, Clone, Serialize)]
pub struct RequestInfo {
    /// Always `request`.
    pub kind: &'static str,
    /// Subject DN.
    pub subject: String,
    /// Requested subjectAltNames.
    pub sans: Vec<SanInfo>,
    /// Public key.
    pub key: KeyInfo,
    /// Whether the self-signature verifies.
    pub signature_valid: bool,
    /// Signature algorithm.
    pub signature_algorithm: String,
    /// Requested extensions.
    pub extensions: Vec<ExtInfo>,
    /// SHA-256 of the DER request.
    pub sha256: String,
    /// SHA-256 of the SubjectPublicKeyInfo.
    pub spki_sha256: String,
}

/// A public key.
#[derive(Debug, Clone, Serialize)]
pub struct PublicKeyInfo {
    /// Always `public key`.
    pub kind: &'static str,
    /// Type and size.
    pub key: KeyInfo,
    /// SHA-256 of the SubjectPublicKeyInfo DER.
    pub sha256: String,
}

/// A private key: the public half only.
#[derive(Debug, Clone, Serialize)]
pub struct PrivateKeyInfo {
    /// Always `private key`.
    pub kind: &'static str,
    /// Type and size (absent for an encrypted key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyInfo>,
    /// SHA-256 of the public key's SubjectPublicKeyInfo DER.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key_sha256: Option<String>,
    /// Whether the key is encrypted (then nothing else is known without the password).
    pub encrypted: bool,
}

/// A revoked certificate in a CRL.
#[derive(Debug, Clone, Serialize)]
pub struct RevokedInfo {
    /// Serial, hex.
    pub serial: String,
    /// Revocation date, RFC 3339.
    pub revoked_at: String,
    /// Reason code, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A CRL.
#[derive(Debug, Clone, Serialize)]
pub struct CrlInfo {
    /// Always `crl`.
    pub kind: &'static str,
    /// Issuer DN.
    pub issuer: String,
    /// thisUpdate, RFC 3339.
    pub this_update: String,
    /// nextUpdate, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_update: Option<String>,
    /// cRLNumber, decimal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crl_number: Option<String>,
    /// Signature algorithm.
    pub signature_algorithm: String,
    /// Revoked certificates.
    pub revoked: Vec<RevokedInfo>,
    /// SHA-256 of the DER CRL.
    pub sha256: String,
}

pub(crate) fn sha256_hex(b: &[u8]) -> String {
    tlskit_x509::text::hex(&Sha256::digest(b))
}

pub(crate) fn rfc3339(t: ASN1Time) -> String {
    tlskit_x509::datetime::rfc3339(t.timestamp())
}

fn oid_name(oid: &Oid<'_>) -> String {
    oid2sn(oid, oid_registry())
        .map(str::to_string)
        .unwrap_or_else(|_| oid.to_id_string())
}

/// Describe a public key.
pub(crate) fn key_info(spki: &SubjectPublicKeyInfo<'_>) -> KeyInfo {
    use x509_parser::oid_registry as o;
    let alg = &spki.algorithm.algorithm;
    if *alg == o::OID_SIG_ED25519 {
        return KeyInfo {
            kind: "ed25519".into(),
            bits: 256,
            curve: None,
        };
    }
    if *alg == o::OID_SIG_ED448 {
        return KeyInfo {
            kind: "ed448".into(),
            bits: 456,
            curve: None,
        };
    }
    match spki.parsed() {
        Ok(x509_parser::public_key::PublicKey::RSA(r)) => KeyInfo {
            kind: "rsa".into(),
            bits: r.key_size(),
            curve: None,
        },
        Ok(x509_parser::public_key::PublicKey::EC(ec)) => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|c| {
                    if c == o::OID_EC_P256 {
                        "P-256".to_string()
                    } else if c == o::OID_NIST_EC_P384 {
                        "P-384".to_string()
                    } else if c == o::OID_NIST_EC_P521 {
                        "P-521".to_string()
                    } else {
                        oid_name(&c)
                    }
                });
            KeyInfo {
                kind: "ec".into(),
                bits: ec.key_size(),
                curve,
            }
        }
        Ok(x509_parser::public_key::PublicKey::DSA(d)) => KeyInfo {
            kind: "dsa".into(),
            bits: d.len() * 8,
            curve: None,
        },
        _ => KeyInfo {
            kind: oid_name(alg),
            bits: spki.subject_public_key.data.len() * 8,
            curve: None,
        },
    }
}

pub(crate) fn san_info(g: &GeneralName<'_>) -> SanInfo {
    let plain = |kind: &str, v: String| SanInfo {
        kind: kind.into(),
        unicode: v.clone(),
        value: v,
        problem: None,
    };
    match g {
        GeneralName::DNSName(d) => {
            let (unicode, problem) = match tlskit_names::check_presented_dns(d) {
                Ok(u) => (u, None),
                Err(e) => (d.to_string(), Some(e.to_string())),
            };
            SanInfo {
                kind: "dns".into(),
                value: d.to_string(),
                unicode,
                problem,
            }
        }
        GeneralName::IPAddress(b) => {
            let v =
                match b.len() {
                    4 => std::net::IpAddr::from(<[u8; 4]>::try_from(*b).unwrap_or_default())
                        .to_string(),
                    16 => std::net::IpAddr::from(<[u8; 16]>::try_from(*b).unwrap_or_default())
                        .to_string(),
                    _ => format!("#{}", tlskit_x509::text::hex(b)),
                };
            plain("ip", v)
        }
        GeneralName::RFC822Name(e) => {
            let (unicode, problem) = match e.rsplit_once('@') {
                Some((l, h)) => match tlskit_names::check_presented_dns(h) {
                    Ok(u) => (format!("{l}@{u}"), None),
                    Err(err) => (e.to_string(), Some(err.to_string())),
                },
                None => (e.to_string(), None),
            };
            SanInfo {
                kind: "email".into(),
                value: e.to_string(),
                unicode,
                problem,
            }
        }
        GeneralName::URI(u) => plain("uri", u.to_string()),
        other => plain("other", other.to_string()),
    }
}

fn subtree_string(g: &GeneralName<'_>) -> String {
    match g {
        GeneralName::DNSName(d) => format!("dns:{d}"),
        GeneralName::RFC822Name(e) => format!("email:{e}"),
        GeneralName::URI(u) => format!("uri:{u}"),
        GeneralName::IPAddress(b) if b.len() == 8 || b.len() == 32 => {
            let half = b.len() / 2;
            let prefix: u32 = b[half..].iter().map(|x| x.count_ones()).sum();
            let addr = if half == 4 {
                std::net::IpAddr::from(<[u8; 4]>::try_from(&b[..4]).unwrap_or_default())
            } else {
                std::net::IpAddr::from(<[u8; 16]>::try_from(&b[..16]).unwrap_or_default())
            };
            format!("ip:{addr}/{prefix}")
        }
        other => other.to_string(),
    }
}

fn ext_infos(exts: &[X509Extension<'_>]) -> Vec<ExtInfo> {
    exts.iter()
        .map(|e| ExtInfo {
            oid: e.oid.to_id_string(),
            name: oid_name(&e.oid),
            critical: e.critical,
        })
        .collect()
}

/// Describe a certificate.
pub fn cert_info(der: &[u8], c: &X509Certificate<'_>) -> CertInfo {
    let mut sans = Vec::new();
    if let Ok(Some(s)) = c.subject_alternative_name() {
        sans = s.value.general_names.iter().map(san_info).collect();
    }
    let bc = c
        .basic_constraints()
        .ok()
        .flatten()
        .map(|b| b.value.clone());
    let mut key_usage = Vec::new();
    if let Ok(Some(ku)) = c.key_usage() {
        let k = ku.value;
        for (on, name) in [
            (k.digital_signature(), "digitalSignature"),
            (k.non_repudiation(), "nonRepudiation"),
            (k.key_encipherment(), "keyEncipherment"),
            (k.data_encipherment(), "dataEncipherment"),
            (k.key_agreement(), "keyAgreement"),
            (k.key_cert_sign(), "keyCertSign"),
            (k.crl_sign(), "cRLSign"),
            (k.encipher_only(), "encipherOnly"),
            (k.decipher_only(), "decipherOnly"),
        ] {
            if on {
                key_usage.push(name.to_string());
            }
        }
    }
    let mut extended_key_usage = Vec::new();
    if let Ok(Some(eku)) = c.extended_key_usage() {
        let e = eku.value;
        for (on, name) in [
            (e.any, "any"),
            (e.server_auth, "serverAuth"),
            (e.client_auth, "clientAuth"),
            (e.code_signing, "codeSigning"),
            (e.email_protection, "emailProtection"),
            (e.time_stamping, "timeStamping"),
            (e.ocsp_signing, "OCSPSigning"),
        ] {
            if on {
                extended_key_usage.push(name.to_string());
            }
        }
        extended_key_usage.extend(e.other.iter().map(oid_name));
    }
    let name_constraints = c.name_constraints().ok().flatten().map(|nc| {
        let nc = nc.value;
        NameConstraintsInfo {
            permitted: nc
                .permitted_subtrees
                .iter()
                .flatten()
                .map(|s| subtree_string(&s.base))
                .collect(),
            excluded: nc
                .excluded_subtrees
                .iter()
                .flatten()
                .map(|s| subtree_string(&s.base))
                .collect(),
        }
    });
    let mut subject_key_id = None;
    let mut authority_key_id = None;
    for ext in c.extensions() {
        match ext.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(k) => {
                subject_key_id = Some(tlskit_x509::text::hex(k.0))
            }
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                authority_key_id = a
                    .key_identifier
                    .as_ref()
                    .map(|k| tlskit_x509::text::hex(k.0))
            }
            _ => {}
        }
    }
    CertInfo {
        kind: "certificate",
        subject: dn::display(c.subject()),
        issuer: dn::display(c.issuer()),
        serial: tlskit_x509::text::hex(c.raw_serial()),
        not_before: rfc3339(c.validity().not_before),
        not_after: rfc3339(c.validity().not_after),
        sans,
        key: key_info(c.public_key()),
        sha256: sha256_hex(der),
        spki_sha256: sha256_hex(c.public_key().raw),
        signature_algorithm: oid_name(&c.signature_algorithm.algorithm),
        version: c.version().0 + 1,
        is_ca: bc.as_ref().is_some_and(|b| b.ca),
        path_len: bc.and_then(|b| b.path_len_constraint),
        key_usage,
        extended_key_usage,
        name_constraints,
        subject_key_id,
        authority_key_id,
        self_issued: c.subject().as_raw() == c.issuer().as_raw(),
        extensions: ext_infos(c.extensions()),
    }
}

fn request_info(der: &[u8], r: &X509CertificationRequest<'_>) -> RequestInfo {
    let info = &r.certification_request_info;
    let mut sans = Vec::new();
    let mut exts = Vec::new();
    if let Some(req) = r.requested_extensions() {
        for e in req {
            if let ParsedExtension::SubjectAlternativeName(s) = e {
                sans.extend(s.general_names.iter().map(san_info));
            }
        }
    }
    for attr in r.certification_request_info.iter_attributes() {
        if let x509_parser::cri_attributes::ParsedCriAttribute::ExtensionRequest(er) =
            attr.parsed_attribute()
        {
            exts.extend(ext_infos(&er.extensions));
        }
    }
    RequestInfo {
        kind: "request",
        subject: dn::display(&info.subject),
        sans,
        key: key_info(&info.subject_pki),
        signature_valid: r.verify_signature().is_ok(),
        signature_algorithm: oid_name(&r.signature_algorithm.algorithm),
        extensions: exts,
        sha256: sha256_hex(der),
        spki_sha256: sha256_hex(info.subject_pki.raw),
    }
}

fn crl_info(der: &[u8], crl: &CertificateRevocationList<'_>) -> CrlInfo {
    CrlInfo {
        kind: "crl",
        issuer: dn::display(crl.issuer()),
        this_update: rfc3339(crl.last_update()),
        next_update: crl.next_update().map(rfc3339),
        crl_number: crl.crl_number().map(|n| n.to_string()),
        signature_algorithm: oid_name(&crl.signature_algorithm.algorithm),
        revoked: crl
            .iter_revoked_certificates()
            .map(|r| RevokedInfo {
                serial: tlskit_x509::text::hex(r.raw_serial()),
                revoked_at: rfc3339(r.revocation_date),
                reason: r.reason_code().map(|(_, c)| c.to_string()),
            })
            .collect(),
        sha256: sha256_hex(der),
    }
}

/// Bits of an RSA private key that aws-lc-rs refuses to load (under 2048 bits), read
/// from the PKCS#8 or PKCS#1 structure: only the modulus length is taken.
fn weak_rsa_bits(der: &[u8]) -> Option<usize> {
    use x509_parser::der_parser::ber::BerObjectContent;
    use x509_parser::der_parser::parse_der;
    let (_, obj) = parse_der(der).ok()?;
    let items = obj.as_sequence().ok()?;
    // PKCS#8: version, AlgorithmIdentifier, OCTET STRING(RSAPrivateKey).
    let rsa_der;
    let rsa_items = if let Some(BerObjectContent::Sequence(alg)) = items.get(1).map(|o| &o.content)
    {
        if alg.first()?.as_oid().ok()? != &x509_parser::oid_registry::OID_PKCS1_RSAENCRYPTION {
            return None;
        }
        rsa_der = items.get(2)?.as_slice().ok()?;
        let (_, inner) = parse_der(rsa_der).ok()?;
        inner.as_sequence().ok()?.clone()
    } else {
        items.clone()
    };
    // RSAPrivateKey: version, modulus, publicExponent, ...
    let n = rsa_items.get(1)?.as_slice().ok()?;
    let n = match n.iter().position(|b| *b != 0) {
        Some(i) => &n[i..],
        None => return None,
    };
    Some(n.len() * 8 - n[0].leading_zeros() as usize)
}

fn private_key_info(der: &[u8]) -> Option<PrivateKeyInfo> {
    let Ok(kp) = rcgen::KeyPair::try_from(der) else {
        return weak_rsa_bits(der).map(|bits| PrivateKeyInfo {
            kind: "private key",
            key: Some(KeyInfo {
                kind: "rsa".into(),
                bits,
                curve: None,
            }),
            public_key_sha256: None,
            encrypted: false,
        });
    };
    let spki_der = rcgen::PublicKeyData::subject_public_key_info(&kp);
    let (_, spki) = SubjectPublicKeyInfo::from_der(&spki_der).ok()?;
    Some(PrivateKeyInfo {
        kind: "private key",
        key: Some(key_info(&spki)),
        public_key_sha256: Some(sha256_hex(&spki_der)),
        encrypted: false,
    })
}

/// Describe one DER object whose kind is known from its PEM label (or guessed).
fn describe_der(label: Option<&str>, der: &[u8]) -> Result<Item, DescribeError> {
    let want = |l: &str| label.is_none() || label == Some(l);
    if want("CERTIFICATE")
        || label == Some("TRUSTED CERTIFICATE")
        || label == Some("X509 CERTIFICATE")
    {
        match X509Certificate::from_der(der) {
            Ok((_, c)) => {
                return Ok(Item::Certificate(Box::new(cert_info(
                    &der[..der.len()],
                    &c,
                ))))
            }
            Err(e) if label.is_some() => return Err(DescribeError::Certificate(e)),
            Err(_) => {}
        }
    }
    if want("CERTIFICATE REQUEST") || label == Some("NEW CERTIFICATE REQUEST") {
        match X509CertificationRequest::from_der(der) {
            Ok((_, r)) => return Ok(Item::Request(request_info(der, &r))),
            Err(e) if label.is_some() => return Err(DescribeError::Request(e)),
            Err(_) => {}
        }
    }
    if want("X509 CRL") {
        match CertificateRevocationList::from_der(der) {
            Ok((_, c)) => return Ok(Item::Crl(crl_info(der, &c))),
            Err(e) if label.is_some() => return Err(DescribeError::Crl(e)),
            Err(_) => {}
        }
    }
    if want("PUBLIC KEY") {
        match SubjectPublicKeyInfo::from_der(der) {
            Ok((&[], spki)) => {
                return Ok(Item::PublicKey(PublicKeyInfo {
                    kind: "public key",
                    key: key_info(&spki),
                    sha256: sha256_hex(der),
                }))
            }
            _ if label.is_some() => return Err(DescribeError::PublicKey),
            _ => {}
        }
    }
    if label == Some("ENCRYPTED PRIVATE KEY") {
        return Ok(Item::PrivateKey(PrivateKeyInfo {
            kind: "private key",
            key: None,
            public_key_sha256: None,
            encrypted: true,
        }));
    }
    if label.is_none_or(|l| l.ends_with("PRIVATE KEY")) {
        if let Some(p) = private_key_info(der) {
            return Ok(Item::PrivateKey(p));
        }
        if label.is_some() {
            return Err(DescribeError::PrivateKey);
        }
    }
    match label {
        // The label is quoted only when short and plain: in a key put on one line, the
        // "label" runs on into the key's base64.
        Some(l)
            if l.len() <= 40
                && l.bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b' ' || b.is_ascii_digit()) =>
        {
            Err(DescribeError::Label(l.to_string()))
        }
        Some(_) => Err(DescribeError::MalformedLabel),
        None if looks_like_pkcs12(der) => Err(DescribeError::Pkcs12),
        None => Err(DescribeError::Unknown),
    }
}

/// Why bytes (or one PEM block of them) could not be described.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DescribeError {
    /// The PEM text is malformed.
    #[error(transparent)]
    Pem(#[from] PemError),
    /// PEM with no block in it.
    #[error("no PEM blocks")]
    NoPemBlocks,
    /// A CERTIFICATE block that does not parse.
    #[error("malformed certificate: {0}")]
    Certificate(#[source] x509_parser::nom::Err<X509Error>),
    /// A CERTIFICATE REQUEST block that does not parse.
    #[error("malformed request: {0}")]
    Request(#[source] x509_parser::nom::Err<X509Error>),
    /// An X509 CRL block that does not parse.
    #[error("malformed CRL: {0}")]
    Crl(#[source] x509_parser::nom::Err<X509Error>),
    /// A PUBLIC KEY block that does not parse.
    #[error("malformed public key")]
    PublicKey,
    /// A PRIVATE KEY block that does not parse, or a key type not supported.
    #[error("malformed or unsupported private key")]
    PrivateKey,
    /// A PEM block of a kind `show` does not describe (its label).
    #[error("PEM block \"{0}\" is not something tlskit shows")]
    Label(String),
    /// A PEM label too long or not plain (a key put on one line).
    #[error("a PEM block with a malformed label (is the PEM on one line?)")]
    MalformedLabel,
    /// DER that is a PKCS#12 file.
    #[error("a PKCS#12 file: read it with `tlskit p12 import FILE --key-out K --cert-out C`")]
    Pkcs12,
    /// DER that is none of the things `show` describes.
    #[error("not PEM, and not a DER certificate, request, CRL, public or private key")]
    Unknown,
    /// Bytes after DER certificates that are not one.
    #[error("trailing data after the certificates")]
    TrailingData,
    /// Nothing was found.
    #[error("nothing to show")]
    Nothing,
}

/// PFX: SEQUENCE { INTEGER 3, ContentInfo ... }.
fn looks_like_pkcs12(der: &[u8]) -> bool {
    use x509_parser::der_parser::parse_der;
    parse_der(der)
        .ok()
        .and_then(|(_, o)| {
            let items = o.as_sequence().ok()?;
            Some(items.first()?.as_u32().ok()? == 3 && items.len() >= 2)
        })
        .unwrap_or(false)
}

/// What `describe` found: the items and the problems with individual PEM blocks.
#[derive(Debug, Clone, Default)]
pub struct Described {
    /// Items in file order.
    pub items: Vec<Item>,
    /// (block number, reason) for PEM blocks that could not be described.
    pub problems: Vec<(usize, DescribeError)>,
}

/// Describe bytes (PEM or DER).
pub fn describe_bytes(data: &[u8]) -> Result<Described, DescribeError> {
    let mut out = Described::default();
    match key::pem_blocks(data) {
        Some(Err(e)) => return Err(DescribeError::Pem(e)),
        Some(Ok(blocks)) => {
            if blocks.is_empty() {
                return Err(DescribeError::NoPemBlocks);
            }
            for (i, (label, der)) in blocks.iter().enumerate() {
                if label == "EC PARAMETERS" {
                    continue;
                }
                match describe_der(Some(label), der) {
                    Ok(item) => out.items.push(item),
                    Err(e) => out.problems.push((i + 1, e)),
                }
            }
        }
        None => {
            // DER: possibly several certificates back to back.
            let mut rest = data;
            while !rest.is_empty() {
                if let Ok((r, c)) = X509Certificate::from_der(rest) {
                    let used = rest.len() - r.len();
                    out.items
                        .push(Item::Certificate(Box::new(cert_info(&rest[..used], &c))));
                    rest = r;
                    continue;
                }
                if out.items.is_empty() {
                    out.items.push(describe_der(None, rest)?);
                } else {
                    out.problems
                        .push((out.items.len() + 1, DescribeError::TrailingData));
                }
                break;
            }
        }
    }
    if out.items.is_empty() {
        let why = out
            .problems
            .first()
            .map(|(_, e)| e.clone())
            .unwrap_or(DescribeError::Nothing);
        return Err(why);
    }
    Ok(out)
}

/// Describe a file.
pub fn describe(path: &Path) -> Result<Described> {
    let data = fsx::read(path)?;
    describe_bytes(&data).map_err(|e| PkiError::content(path, e))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shows_both_label_forms_and_never_private_material() {
        let key = rcgen::KeyPair::generate().unwrap();
        let names =
            crate::cert::names("CN=räksmörgås.com", &["dns:räksmörgås。com".into()]).unwrap();
        let pem = crate::cert::self_signed_pem(&key, &names, 30, false).unwrap();
        let d = describe_bytes(pem.as_bytes()).unwrap();
        let Item::Certificate(c) = &d.items[0] else {
            panic!()
        };
        assert_eq!(c.sans[0].value, "xn--rksmrgs-5wao1o.com");
        assert_eq!(c.sans[0].unicode, "räksmörgås.com");
        assert_eq!(
            c.key,
            KeyInfo {
                kind: "ec".into(),
                bits: 256,
                curve: Some("P-256".into())
            }
        );

        let kpem = key.serialize_pem();
        let d = describe_bytes(kpem.as_bytes()).unwrap();
        let json = serde_json::to_string(&d.items).unwrap();
        assert!(json.contains("private key"));
        let der_b64 = kpem.lines().nth(1).unwrap();
        assert!(!json.contains(&der_b64[..20]));
    }

    #[test]
    fn der_certificate_detected() {
        let key = rcgen::KeyPair::generate().unwrap();
        let names = crate::cert::names("CN=a.example", &[]).unwrap();
        let pem = crate::cert::self_signed_pem(&key, &names, 30, false).unwrap();
        let der = crate::key::pem_blocks(pem.as_bytes())
            .unwrap()
            .unwrap()
            .remove(0)
            .1;
        let d = describe_bytes(&der).unwrap();
        assert!(matches!(d.items[0], Item::Certificate(_)));
        assert!(describe_bytes(b"hello").is_err());
    }
}
