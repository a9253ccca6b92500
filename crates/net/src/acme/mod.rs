//! ACME (RFC 8555): certificates that get and renew themselves, for `tlskit serve --acme`
//! and for `tlskit acme issue|renew|revoke`. The protocol is `instant-acme`'s; this module
//! keeps the state ([`storage`]), answers the challenges (HTTP-01, TLS-ALPN-01), and
//! schedules renewals (ARI, RFC 9773, else two thirds of the lifetime) with backoff.
//!
//! The public API is blocking, like the rest of the crate: [`issue`], [`renew`],
//! [`revoke`]; the server side is wired by `Server::bind` from [`AcmeSettings`].

mod challenge;
pub(crate) mod check;
pub(crate) mod client;
pub(crate) mod manager;
pub mod storage;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tlskit_store::Source;

pub(crate) use challenge::{accept, Accepted};
pub use check::{Refusal, Refused};
pub use manager::Managed;
pub use storage::{AcmeStorage, FsStorage, IssuanceLock, StoredCert};

use crate::log::{self, Level};

/// How the CA checks that we control a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeKind {
    /// A token served over plain HTTP on port 80 (RFC 8555 §8.3).
    Http01,
    /// A validation certificate served over TLS on port 443 with ALPN `acme-tls/1`
    /// (RFC 8737).
    TlsAlpn01,
}

impl ChallengeKind {
    /// Parse `http-01` or `tls-alpn-01`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "http-01" => Some(Self::Http01),
            "tls-alpn-01" => Some(Self::TlsAlpn01),
            _ => None,
        }
    }
    /// The RFC name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http01 => "http-01",
            Self::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

/// What the server (or a command) needs to get certificates from an ACME CA.
#[derive(Debug, Clone)]
pub struct AcmeSettings {
    /// The CA's directory URL (`https://acme-v02.api.letsencrypt.org/directory`).
    pub directory: String,
    /// DNS names of the certificate (the first names the storage entry).
    pub domains: Vec<String>,
    /// The storage directory (account, certificates, locks).
    pub storage: PathBuf,
    /// Contact address for the account.
    pub email: Option<String>,
    /// Trust anchors for the CA's HTTPS; empty: the system store.
    pub roots: Vec<Source>,
    /// The rule set the CA's HTTPS certificate is checked against (`--acme-roots-profile`;
    /// default: the verifier's default profile).
    pub roots_profile: tlskit_verify::Profile,
    /// Rules not checked on the CA's HTTPS certificate (`--acme-roots-allow`).
    pub roots_allow: Vec<tlskit_verify::Rule>,
    /// Trust anchors the CA's certificates must chain to (its issuing roots); empty: not
    /// checked (an ACME directory does not publish them).
    pub issuer_roots: Vec<Source>,
    /// Challenge type.
    pub challenge: ChallengeKind,
    /// Certificate profile to ask for (draft-ietf-acme-profiles), if any.
    pub profile: Option<String>,
    /// Most time between two renewal checks (the CA's ARI `Retry-After` is used when
    /// shorter). Default 6 h.
    pub recheck: Duration,
    /// First delay after a failure; it doubles at each failure up to one hour, with
    /// jitter. Default 5 s.
    pub retry_base: Duration,
}

impl AcmeSettings {
    /// Defaults for everything but the CA, the names and the storage directory.
    pub fn new(directory: String, domains: Vec<String>, storage: PathBuf) -> Self {
        Self {
            directory,
            domains,
            storage,
            email: None,
            roots: Vec::new(),
            roots_profile: tlskit_verify::Profile::default(),
            roots_allow: Vec::new(),
            issuer_roots: Vec::new(),
            challenge: ChallengeKind::TlsAlpn01,
            profile: None,
            recheck: Duration::from_secs(6 * 3600),
            retry_base: Duration::from_secs(5),
        }
    }

    /// Check names and URL: lower-case DNS names (a leading `*.` allowed), an https URL.
    pub fn check(&self) -> Result<(), AcmeError> {
        if self.domains.is_empty() {
            return Err(AcmeError::Config(
                "no domain name to get a certificate for".into(),
            ));
        }
        for d in &self.domains {
            if domain(d).ok().as_deref() != Some(d.as_str()) {
                return Err(AcmeError::Config(format!(
                    "{}: not a DNS name in A-label form",
                    clean(d)
                )));
            }
            let body = d.strip_prefix("*.").unwrap_or(d);
            let ok = !body.is_empty()
                && body.len() <= 253
                && body.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                });
            if !ok {
                return Err(AcmeError::Config(format!(
                    "{}: not a DNS name (use the A-label form for internationalised names)",
                    clean(d)
                )));
            }
        }
        if !self.directory.starts_with("https://") {
            return Err(AcmeError::Config(format!(
                "{}: the ACME directory must be an https:// URL",
                clean(&self.directory)
            )));
        }
        Ok(())
    }
}

/// A domain name as ACME wants it: A-labels by UTS #46 (`tlskit_verify::names`, the
/// one place names are converted), lower case, no trailing dot; a leading `*.` kept.
pub fn domain(input: &str) -> Result<String, AcmeError> {
    tlskit_verify::names::DnsName::parse(input)
        .map(|d| d.ascii().to_string())
        .map_err(|e| AcmeError::Config(clean(&e.to_string())))
}

/// What can go wrong getting a certificate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcmeError {
    /// The storage directory or one of its files.
    #[error("ACME storage {path}: {reason}")]
    Storage {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The CA refused a request or could not be reached.
    #[error("ACME {what} for {subject}: {reason}")]
    Protocol {
        /// The step (`new order`, `creating the account`, ...).
        what: &'static str,
        /// The names or the directory URL concerned.
        subject: String,
        /// The CA's problem document or the transport error (escaped, one line).
        reason: String,
    },
    /// Validation of a name failed: the CA's problem document.
    #[error("ACME validation of {domain} failed: {problem}")]
    Challenge {
        /// The name(s).
        domain: String,
        /// The problem document (type, status, detail), escaped.
        problem: String,
    },
    /// A certificate or key file.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Cannot listen for the challenge.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// Inconsistent settings or unusable data.
    #[error("ACME: {0}")]
    Config(String),
    /// The shared state (Redis) of a fleet could not be read or written.
    #[error("ACME shared state {url}: {reason}")]
    Shared {
        /// The Redis URL, password redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// The CA's certificate failed a check: not written, not served.
    #[error("{0}")]
    Refused(#[from] Refused),
    /// rustls refused a key or configuration.
    /// (Said through `tls_text`, not chained as a source: rustls's Display may be Debug.)
    #[error("TLS: {}", crate::tls_text::tls_text(.0))]
    Tls(rustls::Error),
    /// Runtime start.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl AcmeError {
    pub(crate) fn acme(what: &'static str, subject: &str, e: instant_acme::Error) -> Self {
        let reason = match &e {
            instant_acme::Error::Api(p) => client::problem_text(p),
            // hyper hides the cause ("connection refused") in the source chain; a TLS
            // error in it is told as tlskit's sentence, never rustls's Debug text.
            other => clean(&client::transport_error(other)),
        };
        Self::Protocol {
            what,
            subject: clean(subject),
            reason,
        }
    }
}

/// Whether `name` is one of `names`, or one label under one of its `*.` wildcards (ASCII
/// case ignored): the one test of "a name this server manages" for serving and for
/// fetching challenge answers.
pub(crate) fn covers(names: &[String], name: &str) -> bool {
    names.iter().any(|m| match m.strip_prefix("*.") {
        Some(parent) => name
            .split_once('.')
            .is_some_and(|(_, p)| p.eq_ignore_ascii_case(parent)),
        None => m.eq_ignore_ascii_case(name),
    })
}

/// Text from the CA or a certificate, safe for a terminal or a log line: control
/// characters as `\xNN`, at most 1,000 characters.
pub(crate) fn clean(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i >= 1000 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", c as u32 & 0xff));
        } else {
            out.push(c);
        }
    }
    out
}

/// Validity and names of a leaf certificate.
#[derive(Debug, Clone)]
pub(crate) struct LeafInfo {
    pub(crate) not_before: SystemTime,
    pub(crate) not_after: SystemTime,
    pub(crate) serial: String,
    pub(crate) names: Vec<String>,
}

pub(crate) fn leaf_info(der: &[u8]) -> Option<LeafInfo> {
    use x509_parser::extensions::GeneralName;
    let (_, c) = x509_parser::parse_x509_certificate(der).ok()?;
    let v = c.validity();
    // Before 1970 reads as 1970; X.509 times end in 9999, well inside SystemTime, and
    // anything past it would read as 1970 too (expired: refused, never trusted longer).
    let t = |ts: i64| {
        u64::try_from(ts)
            .ok()
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)))
            .unwrap_or(UNIX_EPOCH)
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = c.subject_alternative_name() {
        for n in &san.value.general_names {
            if let GeneralName::DNSName(d) = n {
                names.push(d.to_ascii_lowercase());
            }
        }
    }
    Some(LeafInfo {
        not_before: t(v.not_before.timestamp()),
        not_after: t(v.not_after.timestamp()),
        serial: c.tbs_certificate.raw_serial_as_string().replace(':', ""),
        names,
    })
}

pub(crate) fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A chain (PEM) and key (PEM) as a rustls certified key, checked to belong together.
pub(crate) fn certified(
    chain_pem: &str,
    key_pem: &str,
    provider: &rustls::crypto::CryptoProvider,
) -> Result<Arc<CertifiedKey>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad certificate PEM: {e}"))?;
    if chain.is_empty() {
        return Err("no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| format!("no usable private key: {e}"))?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("unsupported private key: {e}"))?;
    let ck = CertifiedKey::new(chain, signing);
    ck.keys_match()
        .map_err(|e| format!("key does not match the certificate: {e}"))?;
    Ok(Arc::new(ck))
}

fn runtime() -> Result<tokio::runtime::Runtime, AcmeError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// `tlskit acme issue` / `renew`: where to answer the challenge and where to write.
#[derive(Debug, Clone)]
pub struct IssueOptions {
    /// CA, names, storage, challenge type, profile.
    pub settings: AcmeSettings,
    /// The certificate's private key (PEM): used when it exists, else created 0600.
    pub key: PathBuf,
    /// Where the chain (PEM, leaf first) is written.
    pub out: PathBuf,
    /// Listener for the challenge: plain HTTP for HTTP-01, TLS for TLS-ALPN-01.
    pub listen: SocketAddr,
}

/// What `issue` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IssueReport {
    /// Names in the certificate.
    pub domains: Vec<String>,
    /// Serial number (hex).
    pub serial: String,
    /// notBefore, Unix seconds.
    pub not_before: u64,
    /// notAfter, Unix seconds.
    pub not_after: u64,
    /// The chain file written.
    pub chain: PathBuf,
    /// The key file used.
    pub key: PathBuf,
    /// Whether the key file was created now.
    pub key_created: bool,
    /// Whether the ACME account was created now (else it came from storage).
    pub account_created: bool,
    /// Challenge type used.
    pub challenge: &'static str,
    /// Milliseconds from start to the certificate written.
    pub ms: f64,
}

/// What `renew` decided.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RenewReport {
    /// Whether a new certificate was issued.
    pub renewed: bool,
    /// Why: `forced`, `ari` (inside the CA's window), `lifetime` (past two thirds),
    /// `missing` (no certificate yet), `not_due`.
    pub reason: &'static str,
    /// When renewal is due (Unix seconds): by the CA's window or the lifetime rule for a
    /// certificate that was not renewed; two thirds of the lifetime of a new one.
    pub due: u64,
    /// The issuance, when one happened.
    pub issued: Option<IssueReport>,
}

/// `tlskit acme revoke`.
#[derive(Debug, Clone)]
pub struct RevokeOptions {
    /// CA and storage (the account that ordered the certificate).
    pub settings: AcmeSettings,
    /// The certificate (PEM; the first one is revoked).
    pub cert: PathBuf,
    /// RFC 5280 reason code.
    pub reason: Option<u8>,
}

fn load_or_create_key(path: &Path) -> Result<(rcgen::KeyPair, bool), AcmeError> {
    let file_err = |reason: String| AcmeError::File {
        path: path.to_path_buf(),
        reason,
    };
    match storage::read_bounded(path).map_err(|e| file_err(e.to_string()))? {
        Some(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| file_err("not PEM text".into()))?;
            let key = rcgen::KeyPair::from_pem(&text)
                .map_err(|e| file_err(format!("no usable PKCS#8 private key: {e}")))?;
            Ok((key, false))
        }
        None => {
            let key = rcgen::KeyPair::generate().map_err(|e| file_err(e.to_string()))?;
            storage::write_private_atomic(path, key.serialize_pem().as_bytes())
                .map_err(|e| file_err(e.to_string()))?;
            Ok((key, true))
        }
    }
}

/// A challenge responder running until dropped.
struct Responder(tokio::task::JoinHandle<()>);
impl Drop for Responder {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn start_responder(
    listen: SocketAddr,
    kind: ChallengeKind,
    ch: &Arc<challenge::Challenges>,
) -> Result<Responder, AcmeError> {
    let l = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| AcmeError::Listen {
            addr: listen,
            reason: e,
        })?;
    let task = match kind {
        ChallengeKind::Http01 => {
            // Never stopped by the flag: the task is aborted when the responder drops.
            let (tx, rx) = tokio::sync::watch::channel(false);
            let ch = ch.clone();
            tokio::spawn(async move {
                challenge::http_loop(l, ch, challenge::HttpOther::NotFound, rx).await;
                drop(tx);
            })
        }
        ChallengeKind::TlsAlpn01 => {
            let cfg = ch.tls_config()?;
            tokio::spawn(challenge::tls_alpn_loop(l, cfg))
        }
    };
    Ok(Responder(task))
}

async fn issue_async(
    o: &IssueOptions,
    replaces: Option<instant_acme::CertificateIdentifier<'static>>,
    account: Option<(instant_acme::Account, Arc<dyn AcmeStorage>)>,
) -> Result<IssueReport, AcmeError> {
    let t0 = Instant::now();
    let s = &o.settings;
    s.check()?;
    let (account, storage, account_created) = match account {
        Some((a, st)) => (a, st, false),
        None => {
            let storage: Arc<dyn AcmeStorage> = Arc::new(FsStorage::open(&s.storage)?);
            let ep = client::Endpoint {
                directory: &s.directory,
                roots: &s.roots,
                roots_profile: s.roots_profile,
                roots_allow: &s.roots_allow,
                email: s.email.as_deref(),
            };
            let (a, created) = client::account(&ep, &storage, false).await?;
            (a, storage, created)
        }
    };
    let (key, key_created) = load_or_create_key(&o.key)?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let ch = Arc::new(challenge::Challenges::new(
        storage.clone(),
        provider.clone(),
        &s.domains,
    ));
    let _responder = start_responder(o.listen, s.challenge, &ch).await?;
    let req = client::OrderRequest {
        domains: &s.domains,
        kind: s.challenge,
        profile: s.profile.as_deref(),
        replaces,
    };
    let chain = client::obtain(&account, &req, &key, &ch).await?;
    // Checked before anything is written: a refused certificate leaves `out` as it was.
    let checked = check::check_result(
        &chain,
        Some(&rcgen::PublicKeyData::subject_public_key_info(&key)),
        &s.domains,
        SystemTime::now(),
        true,
    )
    .map_err(AcmeError::from)
    .and_then(|c| {
        if s.issuer_roots.is_empty() {
            return Ok(());
        }
        check::check_issuer(&c, &s.domains, &s.issuer_roots, SystemTime::now())
    });
    if let Err(AcmeError::Refused(r)) = &checked {
        log::event(
            Level::Error,
            "acme_result_refused",
            &[
                ("domains", &clean(&s.domains.join(","))),
                ("reason", &r.reason.label()),
                ("detail", &r.detail),
            ],
        );
    }
    checked?;
    let ck = certified(&chain, &key.serialize_pem(), &provider).map_err(|r| AcmeError::File {
        path: o.out.clone(),
        reason: format!("certificate from the CA: {r}"),
    })?;
    let info = ck
        .cert
        .first()
        .and_then(|c| leaf_info(c))
        .ok_or_else(|| AcmeError::Config("the CA's certificate cannot be parsed".into()))?;
    storage::write_public_atomic(&o.out, chain.as_bytes()).map_err(|e| AcmeError::File {
        path: o.out.clone(),
        reason: e.to_string(),
    })?;
    log::event(
        Level::Info,
        "acme_certificate_issued",
        &[
            ("domains", &clean(&s.domains.join(","))),
            ("serial", &info.serial),
            ("not_after", &unix(info.not_after)),
        ],
    );
    Ok(IssueReport {
        domains: info.names,
        serial: info.serial,
        not_before: unix(info.not_before),
        not_after: unix(info.not_after),
        chain: o.out.clone(),
        key: o.key.clone(),
        key_created,
        account_created,
        challenge: s.challenge.name(),
        ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}

/// Get a certificate: account from storage (created once), order, answer the challenge
/// on `listen`, write the chain to `out` (the key to `key` when it did not exist).
pub fn issue(o: &IssueOptions) -> Result<IssueReport, AcmeError> {
    runtime()?.block_on(issue_async(o, None, None))
}

/// Renew the certificate in `out` when it is due (inside the CA's ARI window, else past
/// two thirds of its lifetime), or now with `force`. A missing `out` is issued.
pub fn renew(o: &IssueOptions, force: bool) -> Result<RenewReport, AcmeError> {
    runtime()?.block_on(async {
        let s = &o.settings;
        s.check()?;
        let current = match storage::read_bounded(&o.out) {
            Ok(Some(b)) => Some(b),
            Ok(None) => None,
            Err(e) => {
                return Err(AcmeError::File {
                    path: o.out.clone(),
                    reason: e.to_string(),
                })
            }
        };
        let leaf = match &current {
            Some(b) => Some(
                CertificateDer::pem_slice_iter(b)
                    .next()
                    .and_then(Result::ok)
                    .ok_or_else(|| AcmeError::File {
                        path: o.out.clone(),
                        reason: "no certificate in the file".into(),
                    })?,
            ),
            None => None,
        };
        let storage: Arc<dyn AcmeStorage> = Arc::new(FsStorage::open(&s.storage)?);
        let ep = client::Endpoint {
            directory: &s.directory,
            roots: &s.roots,
            roots_profile: s.roots_profile,
            roots_allow: &s.roots_allow,
            email: s.email.as_deref(),
        };
        let (account, _) = client::account(&ep, &storage, false).await?;
        let mut replaces = None;
        let (reason, due) = match &leaf {
            None => ("missing", SystemTime::now()),
            Some(l) => {
                let info = leaf_info(l).ok_or_else(|| AcmeError::File {
                    path: o.out.clone(),
                    reason: "the certificate cannot be parsed".into(),
                })?;
                let ari = client::renewal_window(&account, l, &info, 0.0).await?;
                if ari.is_some() {
                    replaces = client::cert_id(l);
                }
                match ari {
                    Some((at, _)) => ("ari", at),
                    None => ("lifetime", check::two_thirds(&info)),
                }
            }
        };
        if !force && due > SystemTime::now() {
            return Ok(RenewReport {
                renewed: false,
                reason: "not_due",
                due: unix(due),
                issued: None,
            });
        }
        let issued = issue_async(o, replaces, Some((account, storage))).await?;
        Ok(RenewReport {
            renewed: true,
            reason: if force && due > SystemTime::now() {
                "forced"
            } else {
                reason
            },
            due: issued
                .not_before
                .saturating_add(issued.not_after.saturating_sub(issued.not_before) / 3 * 2),
            issued: Some(issued),
        })
    })
}

/// Revoke the first certificate of `cert` with the stored account.
pub fn revoke(o: &RevokeOptions) -> Result<String, AcmeError> {
    runtime()?.block_on(async {
        let s = &o.settings;
        let bytes = storage::read_bounded(&o.cert)
            .map_err(|e| AcmeError::File {
                path: o.cert.clone(),
                reason: e.to_string(),
            })?
            .ok_or_else(|| AcmeError::File {
                path: o.cert.clone(),
                reason: "no such file".into(),
            })?;
        let leaf = CertificateDer::pem_slice_iter(&bytes)
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| AcmeError::File {
                path: o.cert.clone(),
                reason: "no certificate in the file".into(),
            })?;
        let serial = leaf_info(&leaf).map(|i| i.serial).unwrap_or_default();
        let storage: Arc<dyn AcmeStorage> = Arc::new(FsStorage::open(&s.storage)?);
        if storage.load_account(&s.directory)?.is_none() {
            return Err(AcmeError::Config(format!(
                "no ACME account for {} in {}",
                clean(&s.directory),
                s.storage.display()
            )));
        }
        let ep = client::Endpoint {
            directory: &s.directory,
            roots: &s.roots,
            roots_profile: s.roots_profile,
            roots_allow: &s.roots_allow,
            email: s.email.as_deref(),
        };
        let (account, _) = client::account(&ep, &storage, false).await?;
        let reason = o.reason.map(revocation_reason).transpose()?;
        account
            .revoke(&instant_acme::RevocationRequest {
                certificate: &leaf,
                reason,
            })
            .await
            .map_err(|e| AcmeError::acme("revocation", &serial, e))?;
        log::event(
            Level::Info,
            "acme_certificate_revoked",
            &[("serial", &serial)],
        );
        Ok(serial)
    })
}

fn revocation_reason(code: u8) -> Result<instant_acme::RevocationReason, AcmeError> {
    use instant_acme::RevocationReason as R;
    Ok(match code {
        0 => R::Unspecified,
        1 => R::KeyCompromise,
        3 => R::AffiliationChanged,
        4 => R::Superseded,
        5 => R::CessationOfOperation,
        other => {
            return Err(AcmeError::Config(format!(
                "revocation reason {other}: use 0 (unspecified), 1 (keyCompromise), 3 \
                 (affiliationChanged), 4 (superseded) or 5 (cessationOfOperation)"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_exact_names_and_one_label_under_a_wildcard() {
        let names = [
            "www.example.test".to_string(),
            "*.api.example.test".to_string(),
        ];
        assert!(covers(&names, "www.example.test"));
        assert!(covers(&names, "WWW.Example.TEST"));
        assert!(covers(&names, "v1.api.example.test"));
        assert!(!covers(&names, "api.example.test"));
        assert!(!covers(&names, "a.v1.api.example.test"));
        assert!(!covers(&names, "example.test"));
        assert!(!covers(&[], "www.example.test"));
    }

    #[test]
    fn clean_escapes_controls_and_bounds_length() {
        assert_eq!(clean("a\x1b[2Jb\x07"), "a\\x1b[2Jb\\x07");
        assert!(clean(&"x".repeat(5000)).chars().count() <= 1001);
    }

    #[test]
    fn settings_check_names() {
        let mut s = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["a.test".into(), "*.b.test".into()],
            PathBuf::from("/tmp/x"),
        );
        assert!(s.check().is_ok());
        s.domains.push("bad name".into());
        assert!(s.check().is_err());
        s.domains.pop();
        assert_eq!(
            domain("Bücher.Test.").ok().as_deref(),
            Some("xn--bcher-kva.test")
        );
        assert!(domain("a\u{2024}test").is_err());
        s.domains.push("Bücher.test".into());
        assert!(s.check().is_err());
        s.domains.pop();
        s.directory = "http://ca.test/dir".into();
        assert!(s.check().is_err());
    }
}
