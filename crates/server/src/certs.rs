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

use tlskit_tls::keys::load_certified_key;
use tlskit_tls::NetError;

/// What the leaf certificate of `ck` says about itself: its DNS names (SAN dNSName,
/// lower case) and its validity (seconds since the Unix epoch), when it parses.
pub(crate) fn leaf_info(ck: &CertifiedKey) -> (Vec<String>, Option<(i64, i64)>) {
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
#[non_exhaustive]
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
#[non_exhaustive]
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
    acme: Option<Arc<crate::optional::Managed>>,
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
    pub(crate) fn with_acme(index: CertIndex, acme: Arc<crate::optional::Managed>) -> Self {
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
