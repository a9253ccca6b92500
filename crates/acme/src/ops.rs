//! The one-shot commands: `tlskit acme issue`, `renew` and `revoke` (blocking, each on a
//! runtime of its own).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use tlskit_tls::log::{self, Level};

use crate::dns01::Dns01;
use crate::error::{clean, AcmeError};
use crate::settings::{certified, leaf_info, unix, AcmeSettings, ChallengeKind};
use crate::storage::{self, AcmeStorage, FsStorage};
use crate::{challenge, check, client};

fn runtime() -> Result<tokio::runtime::Runtime, AcmeError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// `tlskit acme issue` / `renew`: where to answer the challenge and where to write.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IssueOptions {
    /// CA, names, storage, challenge type, profile.
    pub settings: AcmeSettings,
    /// The certificate's private key (PEM): used when it exists, else created 0600.
    pub key: PathBuf,
    /// Where the chain (PEM, leaf first) is written.
    pub out: PathBuf,
    /// Listener for the challenge: plain HTTP for HTTP-01, TLS for TLS-ALPN-01 (not used
    /// by DNS-01).
    pub listen: SocketAddr,
}

impl IssueOptions {
    /// Order a certificate under `settings` with the key at `key` (created when missing),
    /// write its chain to `out`, and answer the challenge on `listen`.
    pub fn new(settings: AcmeSettings, key: PathBuf, out: PathBuf, listen: SocketAddr) -> Self {
        Self {
            settings,
            key,
            out,
            listen,
        }
    }
}

/// What `issue` did.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct RenewReport {
    /// Whether a new certificate was issued.
    pub renewed: bool,
    /// Why: `forced`, `ari` (inside the CA's window), `lifetime` (past half of a lifetime
    /// under 10 days, two thirds of a longer one),
    /// `missing` (no certificate yet), `not_due`.
    pub reason: &'static str,
    /// When renewal is due (Unix seconds): by the CA's window or the lifetime rule for a
    /// certificate that was not renewed; the lifetime rule for a new one.
    pub due: u64,
    /// The issuance, when one happened.
    pub issued: Option<IssueReport>,
}

/// `tlskit acme revoke`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RevokeOptions {
    /// CA and storage (the account that ordered the certificate).
    pub settings: AcmeSettings,
    /// The certificate (PEM; the first one is revoked).
    pub cert: PathBuf,
    /// Why (tlskit-x509's RFC 5280 reason, shared with `ca revoke`).
    pub reason: Option<tlskit_x509::RevocationReason>,
}

impl RevokeOptions {
    /// Revoke the first certificate in `cert` with the account of `settings`, giving
    /// `reason` when set.
    pub fn new(
        settings: AcmeSettings,
        cert: PathBuf,
        reason: Option<tlskit_x509::RevocationReason>,
    ) -> Self {
        Self {
            settings,
            cert,
            reason,
        }
    }
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
        // Answered in DNS: `issue_async` starts no listener for it.
        ChallengeKind::Dns01 => tokio::spawn(async {}),
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
    // A bad TSIG key file is an error before the CA is contacted.
    if let (ChallengeKind::Dns01, Some(k)) = (s.challenge, &s.dns.tsig_key) {
        tlskit_dns::TsigKey::from_file(k)?;
    }
    let (account, storage, account_created) = match account {
        Some((a, st)) => (a, st, false),
        None => {
            let storage: Arc<dyn AcmeStorage> = Arc::new(FsStorage::open(&s.storage)?);
            let ep = client::Endpoint::of(s);
            let (a, created) = client::account(&ep, &storage, None).await?;
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
    let dns = Dns01::from_settings(s, storage.clone())?;
    let _responder = match s.challenge {
        ChallengeKind::Dns01 => None,
        _ => Some(start_responder(o.listen, s.challenge, &ch).await?),
    };
    // DNS-01 writes to a shared zone: one writer at a time on this storage, and the
    // records an earlier run left (a crash, a failed removal) removed first.
    let _lock = match &dns {
        Some(d) => {
            let st = storage.clone();
            let n = storage::cert_name(&s.domains);
            let lock = tokio::task::spawn_blocking(move || {
                st.lock(&n, std::time::Duration::from_secs(300))
            })
            .await
            .map_err(|e| AcmeError::Config(e.to_string()))??;
            d.remove_leftovers().await?;
            Some(lock)
        }
        None => None,
    };
    let req = client::OrderRequest {
        domains: &s.domains,
        kind: s.challenge,
        profile: s.profile.as_deref(),
        replaces,
        dns,
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
            ("serial", &tlskit_x509::text::serial_from_hex(&info.serial)),
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
/// half of a lifetime under 10 days, two thirds of a longer one), or now with `force`. A missing `out` is issued.
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
        let ep = client::Endpoint::of(s);
        let (account, _) = client::account(&ep, &storage, None).await?;
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
                    None => ("lifetime", check::lifetime_due(&info)),
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
            due: issued_due(&issued),
            issued: Some(issued),
        })
    })
}

/// When a certificate just issued is due by the lifetime rule (`check::lifetime_due`).
fn issued_due(r: &IssueReport) -> u64 {
    let t = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
    let info = crate::settings::LeafInfo {
        not_before: t(r.not_before),
        not_after: t(r.not_after),
        serial: String::new(),
        names: Vec::new(),
    };
    unix(check::lifetime_due(&info))
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
        let ep = client::Endpoint::of(s);
        let (account, _) = client::account(&ep, &storage, None).await?;
        let reason = o.reason.map(revocation_reason).transpose()?;
        account
            .revoke(&instant_acme::RevocationRequest {
                certificate: &leaf,
                reason,
            })
            .await
            .map_err(|e| {
                AcmeError::acme(
                    "revocation",
                    &tlskit_x509::text::serial_from_hex(&serial),
                    e,
                )
            })?;
        log::event(
            Level::Info,
            "acme_certificate_revoked",
            &[("serial", &tlskit_x509::text::serial_from_hex(&serial))],
        );
        Ok(serial)
    })
}

fn revocation_reason(
    reason: tlskit_x509::RevocationReason,
) -> Result<instant_acme::RevocationReason, AcmeError> {
    use instant_acme::RevocationReason as R;
    Ok(match reason.code() {
        0 => R::Unspecified,
        1 => R::KeyCompromise,
        2 => R::CaCompromise,
        3 => R::AffiliationChanged,
        4 => R::Superseded,
        5 => R::CessationOfOperation,
        9 => R::PrivilegeWithdrawn,
        10 => R::AaCompromise,
        other => {
            return Err(AcmeError::Config(format!(
                "revocation reason {other} ({reason}) has no ACME form"
            )))
        }
    })
}
