//! The ACME protocol through `instant-acme` (no JWS or ACME written here): the HTTP
//! client with tlskit's verifier, the account (created once, kept in storage), one
//! order from authorizations to the certificate, renewal information (RFC 9773).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, CertificateIdentifier, ChallengeType,
    Identifier, NewAccount, NewOrder, OrderStatus, RetryPolicy,
};
use rustls_pki_types::CertificateDer;
use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{StoreServerVerifier, VerifierConfig};

use crate::challenge::Challenges;
use crate::check;
use crate::dns01::Dns01;
use crate::error::{clean, problem_text, transport_error, AcmeError};
use crate::settings::{ChallengeKind, LeafInfo};
use crate::storage::AcmeStorage;
use crate::storage::DnsRecord;
use tlskit_tls::log::{self, Level};

/// How long one order may wait for validation and for the certificate.
const ORDER_TIMEOUT: Duration = Duration::from_secs(90);

/// The HTTPS client instant-acme talks through: hyper + rustls (aws-lc-rs) verifying the
/// ACME server against the endpoint's roots (empty: the system store) with tlskit's
/// verifier, under the endpoint's profile and allowed rules.
pub(crate) fn http_client(
    ep: &Endpoint<'_>,
) -> Result<Box<dyn instant_acme::HttpClient>, AcmeError> {
    let roots = if ep.roots.is_empty() {
        vec![Source::System]
    } else {
        ep.roots.to_vec()
    };
    let (handle, report) = StoreHandle::new(roots).map_err(|source| AcmeError::Store {
        what: "ACME roots",
        source,
    })?;
    if handle.current().is_empty() {
        let why = report
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no certificates".into());
        return Err(AcmeError::Config(format!(
            "ACME roots: nothing loadable ({why})"
        )));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = StoreServerVerifier::new(
        Arc::new(handle),
        VerifierConfig {
            profile: ep.roots_profile,
            allow: ep.roots_allow.to_vec(),
            ..VerifierConfig::default()
        },
    );
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(AcmeError::Tls)?
        .dangerous() // not a bypass: tlskit's own verifier on the given store
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(https);
    Ok(Box::new(Bounded(client)))
}

/// Longest a request to the CA may take, response body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response body accepted from the CA (a chain is a few KiB).
const MAX_BODY: usize = 1 << 20;

type Hyper = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    instant_acme::BodyWrapper<bytes::Bytes>,
>;

/// The hyper client with a deadline on every request and a bound on every response
/// body: what the CA sends is untrusted, and a CA that hangs must not hold the renewal
/// task forever.
struct Bounded(Hyper);

impl instant_acme::HttpClient for Bounded {
    fn request(
        &self,
        req: http::Request<instant_acme::BodyWrapper<bytes::Bytes>>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<instant_acme::BytesResponse, instant_acme::Error>,
                > + Send,
        >,
    > {
        let fut = self.0.request(req);
        Box::pin(async move {
            let rsp = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let rsp = fut
                    .await
                    .map_err(|e| instant_acme::Error::Other(transport_error(&e).into()))?;
                // Read the body here, under the same deadline and within the bound.
                let (mut parts, body) = rsp.into_parts();
                bound_retry_after(&mut parts.headers);
                let bytes =
                    http_body_util::BodyExt::collect(http_body_util::Limited::new(body, MAX_BODY))
                        .await
                        .map_err(instant_acme::Error::Other)?
                        .to_bytes();
                Ok::<_, instant_acme::Error>(http::Response::from_parts(
                    parts,
                    http_body_util::Full::new(bytes),
                ))
            })
            .await
            .map_err(|_| {
                instant_acme::Error::Other(
                    format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()).into(),
                )
            })??;
            Ok(instant_acme::BytesResponse::from(rsp))
        })
    }
}

/// Replace the CA's `Retry-After` by its value clamped to one day, in delay-seconds
/// (`check::retry_after`), before instant-acme reads it: it adds the value to the clock
/// unchecked, and `18446744073709551615` panicked the renewal task. A value that is
/// neither delay-seconds nor an HTTP-date is dropped, as if the CA had sent none.
fn bound_retry_after(headers: &mut http::HeaderMap) {
    let first = match headers.get(http::header::RETRY_AFTER) {
        Some(v) => v.as_bytes().to_vec(),
        None => return,
    };
    headers.remove(http::header::RETRY_AFTER);
    if let Some(d) = check::retry_after(&first, SystemTime::now()) {
        headers.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from(d.as_secs()),
        );
    }
}

/// Where the ACME server is and how to talk to it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint<'a> {
    pub(crate) directory: &'a str,
    pub(crate) roots: &'a [Source],
    /// The rule set the CA's HTTPS certificate is checked against.
    pub(crate) roots_profile: tlskit_verify::Profile,
    /// Rules not checked on it.
    pub(crate) roots_allow: &'a [tlskit_verify::Rule],
    pub(crate) email: Option<&'a str>,
    /// The external account binding a new account carries, if the CA requires one.
    pub(crate) eab: Option<&'a crate::settings::Eab>,
}

impl<'a> Endpoint<'a> {
    /// The CA, its HTTPS roots and the account's contact and binding, from `s`.
    pub(crate) fn of(s: &'a crate::settings::AcmeSettings) -> Self {
        Self {
            directory: &s.directory,
            roots: &s.roots,
            roots_profile: s.roots_profile,
            roots_allow: &s.roots_allow,
            email: s.email.as_deref(),
            eab: s.eab.as_ref(),
        }
    }
}

/// Whether the CA says the account does not exist (it was reset, or deactivated).
pub(crate) fn account_gone(e: &AcmeError) -> bool {
    matches!(e, AcmeError::Protocol { reason, .. } if reason.contains("accountDoesNotExist"))
}

/// How long a process waits for another (a node of the fleet) creating the account.
const ACCOUNT_LOCK_WAIT: Duration = Duration::from_secs(120);

/// The stored credentials for the endpoint's directory (blocking pool).
async fn load_stored(
    ep: &Endpoint<'_>,
    storage: &Arc<dyn AcmeStorage>,
) -> Result<Option<Vec<u8>>, AcmeError> {
    let s = storage.clone();
    let d = ep.directory.to_string();
    tokio::task::spawn_blocking(move || s.load_account(&d))
        .await
        .map_err(|e| AcmeError::Config(e.to_string()))?
}

/// Stored credentials as instant-acme reads them, with the account URL they name.
pub(crate) fn parse_credentials(bytes: &[u8]) -> Result<(AccountCredentials, String), AcmeError> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let bad = |e: serde_json::Error| {
        AcmeError::Config(format!("stored ACME account is not valid JSON: {e}"))
    };
    let id: Id = serde_json::from_slice(bytes).map_err(bad)?;
    let creds: AccountCredentials = serde_json::from_slice(bytes).map_err(bad)?;
    Ok((creds, id.id))
}

/// The account of stored credentials (the CA's directory is fetched; the account itself
/// is not asked for).
pub(crate) async fn load_account(
    ep: &Endpoint<'_>,
    creds: AccountCredentials,
) -> Result<Account, AcmeError> {
    Account::builder_with_http(http_client(ep)?)
        .from_credentials(creds)
        .await
        .map_err(|e| AcmeError::acme("loading the account", ep.directory, e))
}

/// The stored account for this directory, or a new one (stored before use). `gone`: the
/// account URL the CA said it does not know (a reset CA, a deactivated account), whose
/// stored credentials a new account replaces (kept as a backup by the storage).
///
/// Creation is single-writer across every process sharing the storage (the nodes of a
/// fleet that start together): under the storage's account lock, the credentials are
/// read again, and another process's new account is taken instead of making a second.
pub(crate) async fn account(
    ep: &Endpoint<'_>,
    storage: &Arc<dyn AcmeStorage>,
    gone: Option<&str>,
) -> Result<(Account, bool), AcmeError> {
    if gone.is_none() {
        if let Some(bytes) = load_stored(ep, storage).await? {
            let (creds, _) = parse_credentials(&bytes)?;
            return Ok((load_account(ep, creds).await?, false));
        }
    }
    let _lock = {
        let s = storage.clone();
        let d = ep.directory.to_string();
        tokio::task::spawn_blocking(move || s.account_lock(&d, ACCOUNT_LOCK_WAIT))
            .await
            .map_err(|e| AcmeError::Config(e.to_string()))??
    };
    if let Some(bytes) = load_stored(ep, storage).await? {
        let (creds, id) = parse_credentials(&bytes)?;
        if gone != Some(id.as_str()) {
            // Another process created (or replaced) it while this one waited.
            log::event(
                Level::Info,
                "acme_account_loaded",
                &[("directory", &clean(ep.directory)), ("id", &clean(&id))],
            );
            return Ok((load_account(ep, creds).await?, false));
        }
    }
    let http = http_client(ep)?;
    let contact: Vec<String> = ep.email.iter().map(|e| format!("mailto:{e}")).collect();
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let eab = ep.eab.map(crate::settings::Eab::key);
    let (acct, creds) = Account::builder_with_http(http)
        .create(
            &NewAccount {
                contact: &contact,
                terms_of_service_agreed: true,
                only_return_existing: false,
            },
            ep.directory.to_string(),
            eab.as_ref(),
        )
        .await
        .map_err(|e| account_error(ep, e))?;
    let json = serde_json::to_vec(&creds).map_err(|e| AcmeError::Config(e.to_string()))?;
    let s = storage.clone();
    let d = ep.directory.to_string();
    tokio::task::spawn_blocking(move || s.store_account(&d, &json))
        .await
        .map_err(|e| AcmeError::Config(e.to_string()))??;
    log::event(
        Level::Info,
        "acme_account_created",
        &[
            ("directory", &clean(ep.directory)),
            ("id", &clean(acct.id())),
        ],
    );
    Ok((acct, true))
}

/// A refused account creation in words: a CA that requires an external account binding
/// says so in its problem type, which is told first (with whether a binding was sent).
fn account_error(ep: &Endpoint<'_>, e: instant_acme::Error) -> AcmeError {
    let needs_eab = matches!(&e, instant_acme::Error::Api(p)
        if p.r#type.as_deref().is_some_and(|t| t.ends_with(":externalAccountRequired")));
    let unauthorized = matches!(&e, instant_acme::Error::Api(p)
        if p.r#type.as_deref().is_some_and(|t| t.ends_with(":unauthorized")));
    let mut err = AcmeError::acme("creating the account", ep.directory, e);
    if let AcmeError::Protocol { reason, .. } = &mut err {
        if needs_eab {
            *reason = format!(
                "the CA requires an external account binding (a key ID and an HMAC key \
                 from the CA) and none was given: {reason}"
            );
        } else if unauthorized {
            if let Some(eab) = ep.eab {
                *reason = format!(
                    "the CA refused the external account binding with key ID {} (a wrong \
                     key ID or HMAC key?): {reason}",
                    clean(eab.kid())
                );
            }
        }
    }
    err
}

/// What one order asks for.
pub(crate) struct OrderRequest<'a> {
    pub(crate) domains: &'a [String],
    pub(crate) kind: ChallengeKind,
    pub(crate) profile: Option<&'a str>,
    /// The certificate this one replaces (ARI `replaces`), when the CA supports ARI.
    pub(crate) replaces: Option<CertificateIdentifier<'static>>,
    /// DNS-01's writer, when `kind` is DNS-01.
    pub(crate) dns: Option<Arc<Dns01>>,
}

/// Order, answer the challenges, finalize with a CSR for `key`, download the chain (PEM).
pub(crate) async fn obtain(
    account: &Account,
    req: &OrderRequest<'_>,
    key: &rcgen::KeyPair,
    challenges: &Challenges,
) -> Result<String, AcmeError> {
    let what = req.domains.join(",");
    let ids: Vec<Identifier> = req
        .domains
        .iter()
        .map(|d| match crate::settings::ip_identifier(d) {
            Some(ip) => Identifier::Ip(ip),
            None => Identifier::Dns(d.clone()),
        })
        .collect();
    let mut new = NewOrder::new(&ids);
    if let Some(p) = req.profile {
        new = new.profile(p);
    }
    if let Some(r) = &req.replaces {
        new = new.replaces(r.clone());
    }
    let mut order = match account.new_order(&new).await {
        Ok(o) => o,
        // A CA may refuse `replaces` (the old certificate already replaced, unknown):
        // the renewal matters more than the hint.
        Err(e) if req.replaces.is_some() => {
            log::event(
                Level::Warn,
                "acme_replaces_refused",
                &[
                    ("domains", &clean(&what)),
                    ("reason", &clean(&e.to_string())),
                ],
            );
            let mut plain = NewOrder::new(&ids);
            if let Some(p) = req.profile {
                plain = plain.profile(p);
            }
            account
                .new_order(&plain)
                .await
                .map_err(|e| AcmeError::acme("new order", &what, e))?
        }
        Err(e) => return Err(AcmeError::acme("new order", &what, e)),
    };
    log::event(
        Level::Info,
        "acme_order_created",
        &[
            ("domains", &clean(&what)),
            ("url", &clean(order.url())),
            ("profile", &clean(req.profile.unwrap_or("-"))),
        ],
    );
    let kind = match req.kind {
        ChallengeKind::Http01 => ChallengeType::Http01,
        ChallengeKind::TlsAlpn01 => ChallengeType::TlsAlpn01,
        ChallengeKind::Dns01 => ChallengeType::Dns01,
    };
    if req.kind == ChallengeKind::Dns01 && req.dns.is_none() {
        return Err(AcmeError::Config("dns-01 without a DNS provider".into()));
    }
    // Published answers, withdrawn whatever happens.
    let mut published: Vec<(ChallengeKind, String)> = Vec::new();
    // DNS-01: all records are written and seen on the servers before any challenge is
    // declared ready (a wildcard and its base name share one record name).
    let mut dns_records: Vec<DnsRecord> = Vec::new();
    let result = async {
        let mut auths = order.authorizations();
        while let Some(a) = auths.next().await {
            let mut a = a.map_err(|e| AcmeError::acme("authorization", &what, e))?;
            let domain = a.identifier().to_string();
            match a.status {
                AuthorizationStatus::Valid => continue,
                AuthorizationStatus::Pending => {}
                other => {
                    return Err(AcmeError::Challenge {
                        domain: clean(&domain),
                        problem: format!("authorization is {}", authz_status(other)),
                    })
                }
            }
            let mut ch = a
                .challenge(kind.clone())
                .ok_or_else(|| AcmeError::Challenge {
                    domain: clean(&domain),
                    problem: format!("the CA offers no {} challenge", req.kind.name()),
                })?;
            let ka = ch.key_authorization();
            match req.kind {
                ChallengeKind::Http01 => {
                    challenges.set_http(&ch.token, ka.as_str()).await?;
                    published.push((ChallengeKind::Http01, ch.token.clone()));
                }
                ChallengeKind::TlsAlpn01 => {
                    challenges.set_tls_alpn(&domain, ka.as_str()).await?;
                    published.push((ChallengeKind::TlsAlpn01, domain.clone()));
                }
                ChallengeKind::Dns01 => {
                    dns_records.push(DnsRecord::new(
                        tlskit_dns::challenge_name(&domain),
                        ka.dns_value(),
                    ));
                    continue;
                }
            }
            ch.set_ready()
                .await
                .map_err(|e| AcmeError::acme("challenge ready", &domain, e))?;
        }
        if let (Some(dns), false) = (&req.dns, dns_records.is_empty()) {
            dns.present(&dns_records).await?;
            let mut auths = order.authorizations();
            while let Some(a) = auths.next().await {
                let mut a = a.map_err(|e| AcmeError::acme("authorization", &what, e))?;
                if a.status != AuthorizationStatus::Pending {
                    continue;
                }
                let domain = a.identifier().to_string();
                let mut ch =
                    a.challenge(ChallengeType::Dns01)
                        .ok_or_else(|| AcmeError::Challenge {
                            domain: clean(&domain),
                            problem: "the CA offers no dns-01 challenge".into(),
                        })?;
                ch.set_ready()
                    .await
                    .map_err(|e| AcmeError::acme("challenge ready", &domain, e))?;
            }
        }
        let retry = poll_policy();
        let status = match order.poll_ready(&retry).await {
            Ok(s) => s,
            Err(instant_acme::Error::Api(p)) => {
                // The order's own problem; the authorizations say which name failed.
                let detail = failed_challenges(&mut order).await;
                return Err(AcmeError::Challenge {
                    domain: clean(&what),
                    problem: if detail.is_empty() {
                        problem_text(&p)
                    } else {
                        detail
                    },
                });
            }
            Err(e) => return Err(AcmeError::acme("waiting for validation", &what, e)),
        };
        if status != OrderStatus::Ready {
            let detail = failed_challenges(&mut order).await;
            return Err(AcmeError::Challenge {
                domain: clean(&what),
                problem: if detail.is_empty() {
                    format!("order is {}", order_status(status))
                } else {
                    detail
                },
            });
        }
        Ok(())
    }
    .await;
    for (k, v) in &published {
        match k {
            ChallengeKind::Http01 => challenges.clear_http(v).await,
            ChallengeKind::TlsAlpn01 => challenges.clear_tls_alpn(v).await,
            ChallengeKind::Dns01 => {}
        }
    }
    if let (Some(dns), false) = (&req.dns, dns_records.is_empty()) {
        dns.cleanup(&dns_records).await;
    }
    result?;
    let mut params = rcgen::CertificateParams::new(req.domains.to_vec())
        .map_err(|e| AcmeError::Config(format!("{what}: {e}")))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    let csr = params
        .serialize_request(key)
        .map_err(|e| AcmeError::Config(format!("CSR for {what}: {e}")))?;
    order
        .finalize_csr(csr.der())
        .await
        .map_err(|e| AcmeError::acme("finalize", &what, e))?;
    let retry = RetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .timeout(ORDER_TIMEOUT);
    let chain = order
        .poll_certificate(&retry)
        .await
        .map_err(|e| AcmeError::acme("certificate download", &what, e))?;
    Ok(chain)
}

/// An authorization status as RFC 8555 7.1.6 names it.
fn authz_status(s: AuthorizationStatus) -> &'static str {
    match s {
        AuthorizationStatus::Pending => "pending",
        AuthorizationStatus::Valid => "valid",
        AuthorizationStatus::Invalid => "invalid",
        AuthorizationStatus::Revoked => "revoked",
        AuthorizationStatus::Expired => "expired",
        AuthorizationStatus::Deactivated => "deactivated",
    }
}

/// An order status as RFC 8555 7.1.6 names it.
fn order_status(s: OrderStatus) -> &'static str {
    match s {
        OrderStatus::Pending => "pending",
        OrderStatus::Ready => "ready",
        OrderStatus::Processing => "processing",
        OrderStatus::Valid => "valid",
        OrderStatus::Invalid => "invalid",
    }
}

/// Order polling: first look after 100 ms, then doubling (instant-acme honours the CA's
/// `Retry-After` when it sends one). A nearby CA is usually done at the first look; the
/// former 250 ms start cost about 0.3 s of the 0.7 s from start to first certificate.
fn poll_policy() -> RetryPolicy {
    RetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .backoff(2.0)
        .timeout(ORDER_TIMEOUT)
}

/// "DOMAIN: TYPE: DETAIL" for every failed challenge of the order (re-read from the CA).
async fn failed_challenges(order: &mut instant_acme::Order) -> String {
    let mut out = Vec::new();
    let mut auths = order.authorizations();
    while let Some(Ok(mut a)) = auths.next().await {
        let Ok(st) = a.refresh().await else { continue };
        let domain = st.identifier().to_string();
        for c in &st.challenges {
            if let Some(p) = &c.error {
                out.push(format!("{}: {}", clean(&domain), problem_text(p)));
            }
        }
    }
    out.join("; ")
}

/// When to renew: a uniformly random instant inside the CA's suggested window (ARI),
/// the window first clamped to the certificate's lifetime (`check::renewal_due`), with
/// the time to ask again (at least `check::ARI_RECHECK_MIN`); `None` when the CA has no
/// ARI or does not know the certificate.
pub(crate) async fn renewal_window(
    account: &Account,
    leaf: &CertificateDer<'_>,
    info: &LeafInfo,
    rand01: f64,
) -> Result<Option<(SystemTime, Duration)>, AcmeError> {
    let Ok(id) = CertificateIdentifier::try_from(leaf) else {
        return Ok(None);
    };
    match account.renewal_info(&id).await {
        Ok((info_ari, retry)) => {
            let (start, end) = window_times(&info_ari.suggested_window);
            let at = check::renewal_due(start, end, info, rand01);
            let retry = retry.clamp(check::ARI_RECHECK_MIN, check::RETRY_AFTER_MAX);
            log::event(
                Level::Info,
                "acme_renewal_info",
                &[
                    ("window_start", &crate::settings::unix(start)),
                    ("window_end", &crate::settings::unix(end)),
                    ("due", &crate::settings::unix(at)),
                    ("retry_after_s", &retry.as_secs()),
                ],
            );
            Ok(Some((at, retry)))
        }
        Err(instant_acme::Error::Unsupported(_)) => Ok(None),
        // A CA that does not know the certificate (another CA, a reset test CA): fall
        // back to the lifetime rule.
        Err(instant_acme::Error::Api(p)) => {
            log::event(
                Level::Warn,
                "acme_renewal_info_refused",
                &[("reason", &problem_text(&p))],
            );
            Ok(None)
        }
        Err(e) => Err(AcmeError::acme("renewal information", "", e)),
    }
}

/// An ARI window as clock times (any year `time` parses maps onto `SystemTime`).
pub(crate) fn window_times(w: &instant_acme::SuggestedWindow) -> (SystemTime, SystemTime) {
    (SystemTime::from(w.start), SystemTime::from(w.end))
}

/// The ARI identifier of a leaf (for `replaces`).
pub(crate) fn cert_id(leaf: &CertificateDer<'_>) -> Option<CertificateIdentifier<'static>> {
    CertificateIdentifier::try_from(leaf)
        .ok()
        .map(|c| c.into_owned())
}
