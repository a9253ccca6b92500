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
use tlskit_store::text::pem_error_reason;

/// Why a key file gave no key, quoting none of it (the file holds a secret).
fn key_pem_reason(e: &rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            "no private key found (expected a PEM block PRIVATE KEY, EC PRIVATE KEY or \
             RSA PRIVATE KEY)"
                .into()
        }
        e => format!("no usable private key: {}", pem_error_reason(e)),
    }
}

/// Why an id-RSASSA-PSS private key is refused (rustls would only say it is not RSA,
/// ECDSA or EdDSA).
const RSA_PSS_KEY_REASON: &str = "unsupported private key: it is an RSASSA-PSS-only key \
    (algorithm id-RSASSA-PSS, 1.2.840.113549.1.1.10), which tlskit does not support (nor \
    do browsers for certificates); use an RSA key (rsaEncryption, which can still sign \
    with RSASSA-PSS), ECDSA or Ed25519";

/// Whether a PKCS#8 key's algorithm is id-RSASSA-PSS: its AlgorithmIdentifier, right
/// after the version, starts with that OID (`openssl genpkey -algorithm RSA-PSS`).
fn is_rsa_pss_only_key(der: &PrivateKeyDer<'_>) -> bool {
    /// OBJECT IDENTIFIER 1.2.840.113549.1.1.10, DER-encoded.
    const ID_RSASSA_PSS: &[u8] = &[
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
    ];
    let PrivateKeyDer::Pkcs8(k) = der else {
        return false;
    };
    // SEQUENCE (2-4 length octets) { INTEGER 0 (3 octets), SEQUENCE { OID ... } }: the
    // OID lies within the first 16 octets.
    let head = &k.secret_pkcs8_der()[..k.secret_pkcs8_der().len().min(24)];
    head.windows(ID_RSASSA_PSS.len())
        .any(|w| w == ID_RSASSA_PSS)
}

/// Largest certificate chain or key file read: tlskit-io's input limit (64 MiB).
pub(crate) const MAX_PEM_BYTES: u64 = tlskit_io::MAX_INPUT_BYTES;

/// Read a certificate or key file: a regular file (a FIFO or device is refused without
/// blocking on it: a reload must never wait on a file) of at most [`MAX_PEM_BYTES`].
fn read_pem(path: &Path) -> Result<Vec<u8>, NetError> {
    tlskit_io::read(path, MAX_PEM_BYTES).map_err(|e| NetError::file(path, e.kind))
}

/// Read a PEM file holding the leaf certificate followed by its chain.
pub(crate) fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, NetError> {
    let data = read_pem(path)?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<_, _>>()
        .map_err(|e| NetError::file(path, format!("bad PEM: {}", pem_error_reason(&e))))?;
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
            let data = read_pem(key)?;
            match std::str::from_utf8(&data).map(str::trim) {
                Ok(text) if tlskit_pkcs11::is_uri(text) => text.to_string(),
                _ => {
                    let der = PrivateKeyDer::from_pem_slice(&data)
                        .map_err(|e| NetError::file(key, key_pem_reason(&e)))?;
                    let rsa_pss_only = is_rsa_pss_only_key(&der);
                    return provider.key_provider.load_private_key(der).map_err(|e| {
                        if rsa_pss_only {
                            NetError::file(key, RSA_PSS_KEY_REASON)
                        } else {
                            NetError::file(key, format!("unsupported private key: {e}"))
                        }
                    });
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
            // Once per handshake while the token is gone: within the global bucket.
            crate::ratelimit::event(
                crate::ratelimit::Noisy::Pkcs11Unavailable,
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

/// What the leaf certificate of `ck` says about itself: its DNS names (SAN dNSName,
/// lower case) and its validity (seconds since the Unix epoch), when it parses.
fn leaf_info(ck: &CertifiedKey) -> (Vec<String>, Option<(i64, i64)>) {
    use x509_parser::extensions::GeneralName;
    let Some(leaf) = ck.cert.first() else {
        return (Vec::new(), None);
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf) else {
        return (Vec::new(), None);
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            if let GeneralName::DNSName(d) = n {
                names.push(d.trim_end_matches('.').to_ascii_lowercase());
            }
        }
    }
    let v = cert.validity();
    (
        names,
        Some((v.not_before.timestamp(), v.not_after.timestamp())),
    )
}

/// A loaded certificate/key pair as metrics and expiry warnings see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedCert {
    /// `default` for the `--cert` pair, `NAME` for `NAME.crt` (or `.pem`) in the SNI
    /// directory.
    pub name: String,
    /// The chain file.
    pub path: PathBuf,
    /// The leaf's DNS names (SAN), lower case, in certificate order.
    pub dns_names: Vec<String>,
    /// The leaf's notBefore, seconds since the Unix epoch.
    pub not_before: i64,
    /// The leaf's notAfter, seconds since the Unix epoch.
    pub not_after: i64,
}

impl ServedCert {
    /// The pair `name` from `path`, whose leaf has `dns_names` and `validity`.
    fn new(
        name: String,
        path: &Path,
        dns_names: &[String],
        validity: Option<(i64, i64)>,
    ) -> Option<Self> {
        let (not_before, not_after) = validity?;
        Some(Self {
            name,
            path: path.to_path_buf(),
            dns_names: dns_names.to_vec(),
            not_before,
            not_after,
        })
    }
}

/// Seconds since the Unix epoch, now.
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// At start and after each reload: log every served certificate that has expired (error),
/// is not valid yet or expires within `warn_days` days (warn), and hand the set to the
/// metrics (`tlskit_certificate_not_after_seconds`).
pub(crate) fn loaded(metrics: &crate::metrics::Metrics, index: &CertIndex, warn_days: u32) {
    use crate::log::{self, Level};
    let now = unix_now();
    let horizon = i64::from(warn_days) * 86_400;
    for c in index.served() {
        let left = c.not_after - now;
        let (level, event) = if left <= 0 {
            (Level::Error, "certificate_expired")
        } else if c.not_before > now {
            (Level::Warn, "certificate_not_yet_valid")
        } else if left <= horizon {
            (Level::Warn, "certificate_expires_soon")
        } else {
            continue;
        };
        log::event(
            level,
            event,
            &[
                ("name", &c.name),
                ("path", &c.path.display()),
                ("sni", &c.dns_names.join(",")),
                ("not_before", &tlskit_store::datetime::rfc3339(c.not_before)),
                ("not_after", &tlskit_store::datetime::rfc3339(c.not_after)),
                ("days_left", &format!("{:.1}", left as f64 / 86_400.0)),
            ],
        );
    }
    metrics.set_certificates(index.served());
}

/// One certificate set: a default (absent when ACME provides it) and the SNI index.
pub struct CertIndex {
    default: Option<Arc<CertifiedKey>>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// `*.example.com` is stored under `example.com`.
    wildcard: HashMap<String, Arc<CertifiedKey>>,
    /// Certificate/key pairs loaded (the default one included).
    pairs: usize,
    /// The same pairs, for metrics and expiry warnings: the default first.
    served: Vec<ServedCert>,
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
        Self::load_optional(Some((cert, key)), sni_dir, provider)
    }

    /// As [`CertIndex::load`], with the default pair optional (`serve --acme` without
    /// `--cert`: the ACME certificate is the default).
    pub fn load_optional(
        pair: Option<(&Path, &Path)>,
        sni_dir: Option<&Path>,
        provider: &CryptoProvider,
    ) -> Result<(Self, Vec<PairIssue>), NetError> {
        let default = match pair {
            Some((cert, key)) => Some(load_certified_key(cert, key, provider)?),
            None => None,
        };
        let (default_names, validity) = match &default {
            Some(ck) => leaf_info(ck),
            None => (Vec::new(), None),
        };
        let mut idx = Self {
            default: default.clone(),
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            pairs: usize::from(pair.is_some()),
            served: match pair {
                Some((cert, _)) => {
                    ServedCert::new("default".into(), cert, &default_names, validity)
                        .into_iter()
                        .collect()
                }
                None => Vec::new(),
            },
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
                        let (names, validity) = leaf_info(&ck);
                        let stem = chain.file_stem().unwrap_or_default().to_string_lossy();
                        idx.served.extend(ServedCert::new(
                            stem.into_owned(),
                            &chain,
                            &names,
                            validity,
                        ));
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
        if let Some(default) = default {
            for n in default_names {
                idx.insert(&n, default.clone());
            }
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
        let all = self
            .default
            .iter()
            .chain(self.exact.values())
            .chain(self.wildcard.values());
        for ck in all {
            if seen.insert(Arc::as_ptr(ck)) {
                out.push(ck.clone());
            }
        }
        out
    }

    /// The loaded pairs (the default first, then the SNI directory's in name order).
    pub fn served(&self) -> &[ServedCert] {
        &self.served
    }

    /// How many names are indexed.
    pub fn names(&self) -> usize {
        self.exact.len() + self.wildcard.len()
    }

    /// The certificate for an SNI name (already lower case from rustls), or the default
    /// (none only when there is no default pair).
    pub fn lookup(&self, sni: Option<&str>) -> Option<Arc<CertifiedKey>> {
        if let Some(name) = sni {
            if let Some(ck) = self.exact.get(name) {
                return Some(ck.clone());
            }
            if let Some((_, parent)) = name.split_once('.') {
                if let Some(ck) = self.wildcard.get(parent) {
                    return Some(ck.clone());
                }
            }
        }
        self.default.clone()
    }
}

/// rustls certificate resolver over a replaceable [`CertIndex`], and the ACME
/// certificate when `serve --acme` manages one.
#[derive(Debug)]
pub struct SniResolver {
    index: ArcSwap<CertIndex>,
    acme: Option<Arc<crate::acme::Managed>>,
}

impl SniResolver {
    /// Serve from `index`.
    pub fn new(index: CertIndex) -> Self {
        Self {
            index: ArcSwap::from_pointee(index),
            acme: None,
        }
    }
    /// Serve the ACME certificate for its names (and as the default when `index` has
    /// none), `index` for the rest.
    pub fn with_acme(index: CertIndex, acme: Arc<crate::acme::Managed>) -> Self {
        Self {
            index: ArcSwap::from_pointee(index),
            acme: Some(acme),
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
        let sni = hello.server_name();
        if let Some(m) = &self.acme {
            if m.manages(sni) {
                if let Some(ck) = m.current() {
                    return Some(ck);
                }
            }
        }
        self.index
            .load()
            .lookup(sni)
            .or_else(|| self.acme.as_ref()?.current())
    }
}
