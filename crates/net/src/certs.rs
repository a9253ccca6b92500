//! Server certificates: loading a chain and its key, checking that they belong together,
//! and the SNI index (exact names in one hash map, wildcards in another keyed by the
//! parent domain) that a handshake consults with at most two lookups, however many
//! certificates are loaded. The index lives behind an `ArcSwap`, so a reload replaces it
//! without touching handshakes in flight.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::NetError;

/// Read a PEM file holding the leaf certificate followed by its chain.
pub(crate) fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let data = std::fs::read(path).map_err(|e| NetError::file(path, e))?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<_, _>>()
        .map_err(|e| NetError::file(path, format!("bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(NetError::file(path, "no CERTIFICATE block found"));
    }
    Ok(certs)
}

/// Turn a key spec into a rustls signing key: a PEM key file, a `pkcs11:` URI (RFC 7512),
/// or a file holding such a URI (an SNI directory's `NAME.key`). A token key is opened
/// afresh each call (new sessions, new login), so a reload re-opens tokens.
pub fn load_signing_key(
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<dyn rustls::sign::SigningKey>, NetError> {
    let uri = match key.to_str().filter(|s| tlskit_pkcs11::is_uri(s)) {
        Some(s) => s.to_string(),
        None => {
            let data = std::fs::read(key).map_err(|e| NetError::file(key, e))?;
            match std::str::from_utf8(&data).map(str::trim) {
                Ok(text) if tlskit_pkcs11::is_uri(text) => text.to_string(),
                _ => {
                    let der = PrivateKeyDer::from_pem_slice(&data)
                        .map_err(|e| NetError::file(key, format!("no usable private key: {e}")))?;
                    return provider
                        .key_provider
                        .load_private_key(der)
                        .map_err(|e| NetError::file(key, format!("unsupported private key: {e}")));
                }
            }
        }
    };
    let parsed = tlskit_pkcs11::Pkcs11Uri::parse(&uri)?;
    let k = tlskit_pkcs11::TokenKey::open(&parsed, None)?;
    Ok(Arc::new(CheckedTokenKey(tlskit_pkcs11::RustlsKey::new(k)?)))
}

/// A token key that is checked before each handshake uses it: when the token is gone
/// (and re-opening it failed) the handshake ends with a handshake_failure alert and a
/// `pkcs11_unavailable` log line, instead of a connection dropped mid-handshake.
#[derive(Debug)]
struct CheckedTokenKey(tlskit_pkcs11::RustlsKey);

impl rustls::sign::SigningKey for CheckedTokenKey {
    fn choose_scheme(
        &self,
        offered: &[rustls::SignatureScheme],
    ) -> Option<Box<dyn rustls::sign::Signer>> {
        if let Err(e) = self.0.check() {
            crate::log::event(
                crate::log::Level::Error,
                "pkcs11_unavailable",
                &[("reason", &e)],
            );
            return None;
        }
        self.0.choose_scheme(offered)
    }
    fn public_key(&self) -> Option<rustls_pki_types::SubjectPublicKeyInfoDer<'_>> {
        self.0.public_key()
    }
    fn algorithm(&self) -> rustls::SignatureAlgorithm {
        self.0.algorithm()
    }
}

/// Load a chain and its key and check that the key belongs to the leaf.
pub fn load_certified_key(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, NetError> {
    let chain = load_chain(cert)?;
    let signing = load_signing_key(key, provider)?;
    let ck = CertifiedKey::new(chain, signing);
    match ck.keys_match() {
        Ok(()) => Ok(Arc::new(ck)),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(NetError::KeyMismatch {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            })
        }
        Err(e) => Err(NetError::file(
            cert,
            format!("cannot check key against certificate: {e}"),
        )),
    }
}

/// DNS names (SAN dNSName, lower case) the leaf certificate of `ck` is valid for.
fn leaf_dns_names(ck: &CertifiedKey) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Some(leaf) = ck.cert.first() else {
        return Vec::new();
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            if let GeneralName::DNSName(d) = n {
                names.push(d.trim_end_matches('.').to_ascii_lowercase());
            }
        }
    }
    names
}

/// One certificate set: a default and the SNI index.
pub struct CertIndex {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// `*.example.com` is stored under `example.com`.
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    /// Certificate/key pairs loaded (the default one included).
    pairs: usize,
}

impl std::fmt::Debug for CertIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertIndex")
            .field("exact", &self.exact.len())
            .field("wildcard", &self.wildcard.len())
            .finish()
    }
}

/// A problem with one pair in an SNI directory (the rest is still loaded).
#[derive(Debug, Clone)]
pub struct PairIssue {
    /// The chain or key file.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

impl CertIndex {
    /// Build the index: the default pair (`cert`, `key`) must load; each `NAME.crt` or
    /// `NAME.pem` in `sni_dir` with a `NAME.key` beside it is indexed under the DNS names
    /// of its leaf. The first pair to claim a name keeps it (pairs are read in name order).
    pub fn load(
        cert: &Path,
        key: &Path,
        sni_dir: Option<&Path>,
        provider: &CryptoProvider,
    ) -> Result<(Self, Vec<PairIssue>), NetError> {
        let default = load_certified_key(cert, key, provider)?;
        let mut idx = Self {
            default: default.clone(),
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            pairs: 1,
        };
        let mut issues = Vec::new();
        if let Some(dir) = sni_dir {
            let rd = std::fs::read_dir(dir).map_err(|e| NetError::file(dir, e))?;
            let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for chain in paths {
                let ext = chain.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ext != "crt" && ext != "pem" {
                    continue;
                }
                let key = chain.with_extension("key");
                if !key.exists() {
                    issues.push(PairIssue {
                        path: chain.clone(),
                        reason: format!("no key file {}", key.display()),
                    });
                    continue;
                }
                match load_certified_key(&chain, &key, provider) {
                    Ok(ck) => {
                        idx.pairs += 1;
                        let names = leaf_dns_names(&ck);
                        if names.is_empty() {
                            issues.push(PairIssue {
                                path: chain.clone(),
                                reason: "leaf has no DNS names in subjectAltName".into(),
                            });
                        }
                        for n in names {
                            idx.insert(&n, ck.clone());
                        }
                    }
                    Err(e) => issues.push(PairIssue {
                        path: chain.clone(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        // The default certificate also answers for its own names.
        for n in leaf_dns_names(&default) {
            idx.insert(&n, default.clone());
        }
        Ok((idx, issues))
    }

    fn insert(&mut self, name: &str, ck: Arc<CertifiedKey>) {
        if let Some(parent) = name.strip_prefix("*.") {
            self.wildcard.entry(parent.to_string()).or_insert(ck);
        } else {
            self.exact.entry(name.to_string()).or_insert(ck);
        }
    }

    /// How many certificate/key pairs are loaded.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// Every distinct chain: the default first, then the SNI pairs (one entry per pair,
    /// whatever the number of names it serves).
    pub fn chains(&self) -> Vec<Arc<CertifiedKey>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        let all = std::iter::once(&self.default)
            .chain(self.exact.values())
            .chain(self.wildcard.values());
        for ck in all {
            if seen.insert(Arc::as_ptr(ck)) {
                out.push(ck.clone());
            }
        }
        out
    }

    /// How many names are indexed.
    pub fn names(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }

    /// The certificate for an SNI name (already lower case from rustls), or the default.
    pub fn lookup(&self, sni: Option<&str>) -> Arc<CertifiedKey> {
        if let Some(name) = sni {
            if let Some(ck) = self.exact.get(name) {
                return ck.clone();
            }
            if let Some((_, parent)) = name.split_once('.') {
                if let Some(ck) = self.wildcard.get(parent) {
                    return ck.clone();
                }
            }
        }
        self.default.clone()
    }
}

/// rustls certificate resolver over a replaceable [`CertIndex`].
#[derive(Debug)]
pub struct SniResolver {
    index: ArcSwap<CertIndex>,
}

impl SniResolver {
    /// Serve from `index`.
    pub fn new(index: CertIndex) -> Self {
        Self {
            index: ArcSwap::from_pointee(index),
        }
    }
    /// Replace the index; handshakes in flight keep the one they started with.
    pub fn replace(&self, index: CertIndex) {
        self.index.store(Arc::new(index));
    }
    /// The index now in use.
    pub fn current(&self) -> Arc<CertIndex> {
        self.index.load_full()
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.index.load().lookup(hello.server_name()))
    }
}
