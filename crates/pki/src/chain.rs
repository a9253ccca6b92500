//! A throwaway server PKI made in memory: root → intermediate → leaf, with fresh keys.
//!
//! For self-tests and demonstrations (`tlskit doctor` serves one on loopback), not for a
//! PKI that lives on: no CA directory, no index, no serial bookkeeping (serials are
//! random 128-bit values). The certificates are the ones `ca init` and `ca issue` make:
//! the root and the intermediate get the CA usages (keyCertSign, cRLSign,
//! digitalSignature; the intermediate pathlen 0), the leaf the server profile
//! (digitalSignature, EKU serverAuth); every certificate below the root carries an
//! authority key identifier, as the strict (webpki) verification profile asks.

use std::path::{Path, PathBuf};

use rcgen::{CertificateParams, Issuer, KeyPair, SerialNumber};

use crate::key::{self, KeyType};
use crate::{cert, dn, fsx, PkiError, Result};

/// What to make: three subjects, the leaf's subjectAltNames, a validity and a key type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerChainOptions {
    /// The root's subject DN (as `--subject` takes it, e.g. `CN=Test Root`).
    pub root_subject: String,
    /// The intermediate's subject DN.
    pub intermediate_subject: String,
    /// The leaf's subject DN.
    pub leaf_subject: String,
    /// The leaf's subjectAltNames, as `--san` takes them (`dns:NAME`, `ip:ADDR`, a bare
    /// name); none: the leaf's CN when it is a host name.
    pub sans: Vec<String>,
    /// Validity of all three, in days from a minute ago (at least 1).
    pub days: u32,
    /// Key type of all three keys.
    pub key_type: KeyType,
}

impl ServerChainOptions {
    /// Three subjects; no extra SAN, 1 day, P-256 keys.
    pub fn new(
        root_subject: impl Into<String>,
        intermediate_subject: impl Into<String>,
        leaf_subject: impl Into<String>,
    ) -> Self {
        Self {
            root_subject: root_subject.into(),
            intermediate_subject: intermediate_subject.into(),
            leaf_subject: leaf_subject.into(),
            sans: Vec::new(),
            days: 1,
            key_type: KeyType::default(),
        }
    }

    /// The leaf's subjectAltNames (`--san` syntax).
    pub fn sans(mut self, sans: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.sans = sans.into_iter().map(Into::into).collect();
        self
    }

    /// Validity in days.
    pub fn days(mut self, days: u32) -> Self {
        self.days = days;
        self
    }

    /// Key type of the three keys.
    pub fn key_type(mut self, key_type: KeyType) -> Self {
        self.key_type = key_type;
        self
    }
}

/// The chain made, PEM.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerChain {
    /// The root certificate: the trust anchor a client needs.
    pub root_pem: String,
    /// What a server sends: the leaf, then the intermediate.
    pub chain_pem: String,
    /// The leaf's private key (PKCS#8). Never printed: `Debug` leaves it out.
    pub key_pem: String,
}

impl std::fmt::Debug for ServerChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerChain")
            .field("root_pem", &self.root_pem)
            .field("chain_pem", &self.chain_pem)
            .finish_non_exhaustive()
    }
}

/// Where [`ServerChain::write`] put the files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerChainFiles {
    /// `root.pem`.
    pub root: PathBuf,
    /// `chain.pem` (leaf, intermediate).
    pub chain: PathBuf,
    /// `key.pem` (mode 0600).
    pub key: PathBuf,
}

/// A fresh key of type `kt`: the signer and its PKCS#8 DER.
fn fresh_key(kt: KeyType) -> Result<(KeyPair, Vec<u8>)> {
    let der = key::generate(kt)?;
    let pair = KeyPair::try_from(der.as_slice()).map_err(PkiError::rcgen("loading a new key"))?;
    Ok((pair, der))
}

/// CA parameters for `subject`: random serial, `days`, the CA usages.
fn ca_params(subject: &str, days: u32, path_len: Option<u8>) -> Result<CertificateParams> {
    let mut p = CertificateParams::default();
    p.distinguished_name = dn::parse(subject)?;
    p.serial_number = Some(SerialNumber::from_slice(&cert::random_serial()?));
    (p.not_before, p.not_after) = cert::validity(days)?;
    cert::set_ca_usages(&mut p, path_len);
    Ok(p)
}

/// Make root → intermediate → leaf as `opts` says.
pub fn server_chain(opts: &ServerChainOptions) -> Result<ServerChain> {
    let names = cert::names(&opts.leaf_subject, &opts.sans)?;

    let (root_key, _) = fresh_key(opts.key_type)?;
    let root = ca_params(&opts.root_subject, opts.days, None)?
        .self_signed(&root_key)
        .map_err(PkiError::rcgen("signing the root certificate"))?;
    let root_issuer = Issuer::from_ca_cert_der(root.der(), &root_key)
        .map_err(PkiError::rcgen("reading the root certificate"))?;

    let (inter_key, _) = fresh_key(opts.key_type)?;
    let mut p = ca_params(&opts.intermediate_subject, opts.days, Some(0))?;
    p.use_authority_key_identifier_extension = true;
    let inter = p
        .signed_by(&inter_key, &root_issuer)
        .map_err(PkiError::rcgen("signing the intermediate certificate"))?;
    let inter_issuer = Issuer::from_ca_cert_der(inter.der(), &inter_key)
        .map_err(PkiError::rcgen("reading the intermediate certificate"))?;

    let (leaf_key, leaf_der) = fresh_key(opts.key_type)?;
    let mut p = CertificateParams::default();
    p.distinguished_name = names.subject;
    p.subject_alt_names = names.sans;
    p.serial_number = Some(SerialNumber::from_slice(&cert::random_serial()?));
    (p.not_before, p.not_after) = cert::validity(opts.days)?;
    cert::set_leaf_usages(&mut p, cert::is_rsa(&leaf_key), true, false);
    p.use_authority_key_identifier_extension = true;
    let leaf = p
        .signed_by(&leaf_key, &inter_issuer)
        .map_err(PkiError::rcgen("signing the leaf certificate"))?;

    Ok(ServerChain {
        root_pem: root.pem(),
        chain_pem: format!("{}{}", leaf.pem(), inter.pem()),
        key_pem: key::pem_encode("PRIVATE KEY", &leaf_der),
    })
}

impl ServerChain {
    /// Write `root.pem`, `chain.pem` and `key.pem` (0600) into `dir`, each atomically;
    /// existing files are replaced.
    pub fn write(&self, dir: &Path) -> Result<ServerChainFiles> {
        let files = ServerChainFiles {
            root: dir.join("root.pem"),
            chain: dir.join("chain.pem"),
            key: dir.join("key.pem"),
        };
        fsx::write_atomic(&files.root, self.root_pem.as_bytes(), false, true)?;
        fsx::write_atomic(&files.chain, self.chain_pem.as_bytes(), false, true)?;
        fsx::write_atomic(&files.key, self.key_pem.as_bytes(), true, true)?;
        Ok(files)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use x509_parser::prelude::*;

    fn ders(pem: &str) -> Vec<Vec<u8>> {
        crate::key::pem_blocks(pem.as_bytes())
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|(_, d)| d)
            .collect()
    }

    #[test]
    fn chain_links_root_intermediate_and_leaf() {
        let opts = ServerChainOptions::new("CN=T Root", "CN=T Int", "CN=t.example")
            .sans(["dns:t.example", "dns:räksmörgås.example"])
            .days(2);
        let c = server_chain(&opts).unwrap();
        let root = ders(&c.root_pem);
        let chain = ders(&c.chain_pem);
        assert_eq!((root.len(), chain.len()), (1, 2));
        let (_, r) = X509Certificate::from_der(&root[0]).unwrap();
        let (_, leaf) = X509Certificate::from_der(&chain[0]).unwrap();
        let (_, int) = X509Certificate::from_der(&chain[1]).unwrap();
        r.verify_signature(None).unwrap();
        int.verify_signature(Some(r.public_key())).unwrap();
        leaf.verify_signature(Some(int.public_key())).unwrap();
        assert!(r.is_ca() && int.is_ca() && !leaf.is_ca());
        assert_eq!(
            int.basic_constraints()
                .unwrap()
                .unwrap()
                .value
                .path_len_constraint,
            Some(0)
        );
        assert!(
            leaf.extended_key_usage()
                .unwrap()
                .unwrap()
                .value
                .server_auth
        );
        let has_aki = |c: &X509Certificate<'_>| {
            c.extensions().iter().any(|e| {
                matches!(
                    e.parsed_extension(),
                    ParsedExtension::AuthorityKeyIdentifier(_)
                )
            })
        };
        assert!(has_aki(&int) && has_aki(&leaf));
        let dns: Vec<String> = leaf
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|g| g.to_string())
            .collect();
        assert_eq!(
            dns,
            ["DNSName(t.example)", "DNSName(xn--rksmrgs-5wao1o.example)"]
        );
        let days = leaf.validity().not_after.timestamp() - leaf.validity().not_before.timestamp();
        assert_eq!(days, 2 * 86_400 - 1);
        // The key is the leaf's.
        let k = KeyPair::from_pem(&c.key_pem).unwrap();
        assert_eq!(
            rcgen::PublicKeyData::subject_public_key_info(&k),
            leaf.public_key().raw
        );
        assert!(!format!("{c:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_signed() {
        let bad_san = ServerChainOptions::new("CN=R", "CN=I", "CN=l.example").sans(["dns:a..b"]);
        assert!(matches!(
            server_chain(&bad_san),
            Err(PkiError::SanRefused { .. })
        ));
        let zero = ServerChainOptions::new("CN=R", "CN=I", "CN=l.example").days(0);
        assert!(server_chain(&zero).is_err());
    }

    #[test]
    fn write_puts_the_key_in_a_private_file() {
        let d = tempfile::tempdir().unwrap();
        let c = server_chain(&ServerChainOptions::new("CN=R", "CN=I", "CN=w.example")).unwrap();
        let f = c.write(d.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&f.chain).unwrap(), c.chain_pem);
        assert_eq!(std::fs::read_to_string(&f.root).unwrap(), c.root_pem);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&f.key).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
