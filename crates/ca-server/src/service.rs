//! The ACME resources (RFC 8555 section 7): the directory, nonces, accounts, orders,
//! authorizations, challenges, finalization and certificate download. Every POST is a
//! JWS checked here before its handler runs: a bounded body, a single-use nonce, the
//! request's own URL, and a signature by the account key (`kid`) or, for newAccount and
//! revokeCert, by the key it carries (`jwk`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use http::{header, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{json, Value};
use tlskit_tls::clock::Clock;
use tlskit_tls::log::{self, Level};
use x509_parser::prelude::*;

use crate::config::AcmeConfig;
use crate::jws::{self, Jwk};
use crate::problem::{internal, malformed, not_found, unauthorized, Kind, Problem};
use crate::state::{self, Account, Authz, Cert, Challenge, Identifier, Order, State, Status};
use crate::validate::{self, Ports};

/// Largest request body read: a JWS around a CSR of a large RSA key fits many times.
pub(crate) const MAX_BODY: usize = 64 * 1024;
/// Nonces remembered; the oldest is forgotten first (its client gets badNonce and retries).
const MAX_NONCES: usize = 100_000;
/// Lifetime of orders and authorizations.
const ORDER_LIFETIME: u64 = 7 * 24 * 3600;
/// Identifiers in one order.
const MAX_IDENTIFIERS: usize = 100;
/// Accounts and addresses whose recent requests the rate limits remember, before the
/// idle ones are forgotten.
const MAX_LIMITED_KEYS: usize = 100_000;

pub(crate) type Body = Full<Bytes>;

/// Counters for the metrics page.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) problems: AtomicU64,
    pub(crate) accounts: AtomicU64,
    pub(crate) orders: AtomicU64,
    pub(crate) validations_ok: AtomicU64,
    pub(crate) validations_failed: AtomicU64,
    pub(crate) certificates: AtomicU64,
    pub(crate) revocations: AtomicU64,
    /// Completed checks of whether the server's own certificate is due (a renewal the
    /// check made included); counted with Release, so a reader that loads it with
    /// Acquire sees the certificate that check left in place.
    pub(crate) own_checks: AtomicU64,
    /// Renewals of the server's own certificate (after the first, at start).
    pub(crate) own_renewals: AtomicU64,
    /// Sweeps of expired state that ran (at start, from the timer or from requests),
    /// counted with Release once the sweep is done.
    pub(crate) sweeps: AtomicU64,
}

#[derive(Debug, Default)]
struct Nonces {
    live: HashSet<String>,
    order: VecDeque<String>,
}

/// What every request handler shares.
#[derive(Debug)]
pub(crate) struct Service {
    pub(crate) ca: Arc<tlskit_pki::ca::Ca>,
    /// The CA certificate's subjectKeyIdentifier (ARI certificate identifiers carry it).
    ca_key_id: Vec<u8>,
    pub(crate) ca_dir: PathBuf,
    pub(crate) acme_dir: PathBuf,
    pub(crate) config: AcmeConfig,
    pub(crate) ports: Ports,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) fallback_host: String,
    state: Mutex<State>,
    nonces: Mutex<Nonces>,
    /// Recent newOrder / newAccount times per account or client address.
    recent: Mutex<HashMap<String, VecDeque<u64>>>,
    pub(crate) counters: Counters,
    /// When (clock seconds) the next sweep of expired state is due.
    next_sweep: AtomicU64,
    /// The CA's revocations, for renewalInfo.
    revoked: Mutex<Revoked>,
}

/// The CA's revocations by serial, read again only when its index changed (its size or
/// modification time): renewalInfo asks once per certificate and client, and the index
/// grows with every certificate the CA issues, so reading it per request would make each
/// answer cost more as the CA ages.
#[derive(Debug, Default)]
struct Revoked {
    seen: Option<(u64, std::time::SystemTime)>,
    by_serial: HashMap<String, tlskit_pki::ca::RevokedEntry>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A handler that panicked while holding the lock left consistent data: each write to
    // a map happens after its file was written.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn random_id() -> String {
    let mut b = [0u8; 16];
    // aws-lc-rs's generator does not fail on Linux; a zero id would still be unique
    // enough to be caught by the maps' collision check below.
    let _ = aws_lc_rs::rand::fill(&mut b);
    jws::b64url(&b)
}

fn rfc3339(t: u64) -> String {
    tlskit_x509::datetime::rfc3339(i64::try_from(t).unwrap_or(i64::MAX))
}

/// The authenticated part of a POST.
struct Authed {
    payload: Vec<u8>,
    /// The account that signed (kid), if any.
    account: Option<Account>,
    /// The key that signed (jwk), if no account.
    jwk: Option<Jwk>,
}

impl Authed {
    fn account(&self) -> Result<&Account, Problem> {
        self.account
            .as_ref()
            .ok_or_else(|| malformed("this request must be signed by an account key (kid)"))
    }

    fn json(&self) -> Result<Value, Problem> {
        if self.payload.is_empty() {
            return Ok(Value::Null);
        }
        let v: Value = serde_json::from_slice(&self.payload)
            .map_err(|_| malformed("the JWS payload is not JSON"))?;
        if !v.is_object() {
            return Err(malformed("the JWS payload is not a JSON object"));
        }
        Ok(v)
    }
}

/// How a response is built: status, body, headers.
pub(crate) struct Reply {
    status: u16,
    body: Vec<u8>,
    content_type: &'static str,
    location: Option<String>,
    /// A `Link: <URL>;rel="up"` (a challenge's authorization).
    up: Option<String>,
    /// A `Retry-After` in seconds.
    retry_after: Option<u64>,
}

impl Reply {
    fn json(status: u16, v: &Value) -> Self {
        Reply {
            status,
            body: v.to_string().into_bytes(),
            content_type: "application/json",
            location: None,
            up: None,
            retry_after: None,
        }
    }
    fn at(mut self, location: String) -> Self {
        self.location = Some(location);
        self
    }
}

impl Service {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        ca: Arc<tlskit_pki::ca::Ca>,
        ca_key_id: Vec<u8>,
        ca_dir: PathBuf,
        acme_dir: PathBuf,
        config: AcmeConfig,
        ports: Ports,
        clock: Arc<dyn Clock>,
        state: State,
        fallback_host: String,
    ) -> Self {
        Service {
            ca,
            ca_key_id,
            ca_dir,
            acme_dir,
            config,
            ports,
            clock,
            fallback_host,
            state: Mutex::new(state),
            nonces: Mutex::new(Nonces::default()),
            recent: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            next_sweep: AtomicU64::new(0),
            revoked: Mutex::new(Revoked::default()),
        }
    }

    /// The revocation of the certificate with this serial (canonical hex), from the
    /// index read when it last changed (`ca revoke`, revokeCert and issuance append to it).
    fn revocation(
        &self,
        serial_hex: &str,
    ) -> Result<Option<tlskit_pki::ca::RevokedEntry>, tlskit_pki::PkiError> {
        let seen = std::fs::metadata(self.ca_dir.join("index.jsonl"))
            .ok()
            .map(|m| (m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
        let mut r = lock(&self.revoked);
        if seen.is_none() || r.seen != seen {
            r.by_serial = self
                .ca
                .revocations()?
                .into_iter()
                .map(|e| (e.serial.clone(), e))
                .collect();
            r.seen = seen;
        }
        Ok(r.by_serial.get(serial_hex).cloned())
    }

    /// Sweep expired orders, authorizations and certificate records from the state when
    /// the configured interval has passed on the clock (at start, then from the timer
    /// and from requests). One caller sweeps; the others go on.
    pub(crate) fn sweep_if_due(&self) {
        let now = self.now();
        let due = self.next_sweep.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let next = now.saturating_add(self.config.retention.sweep_interval_secs);
        if self
            .next_sweep
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let keep = u64::from(self.config.retention.valid_days) * 86_400;
        let result = lock(&self.state).sweep(now, keep);
        match result {
            Ok(s) => log::event(
                Level::Info,
                "acme_state_swept",
                &[
                    ("orders", &s.orders),
                    ("authorizations", &s.authzs),
                    ("certificates", &s.certs),
                ],
            ),
            Err(e) => log::event(Level::Warn, "acme_state_sweep_failed", &[("reason", &e)]),
        }
        self.counters.sweeps.fetch_add(1, Ordering::Release);
    }

    fn now(&self) -> u64 {
        self.clock.unix_secs()
    }

    pub(crate) fn new_nonce(&self) -> String {
        let n = random_id();
        let mut ns = lock(&self.nonces);
        if ns.order.len() >= MAX_NONCES {
            if let Some(old) = ns.order.pop_front() {
                ns.live.remove(&old);
            }
        }
        ns.live.insert(n.clone());
        ns.order.push_back(n.clone());
        n
    }

    /// Use a nonce up (its place in `order` stays until it is evicted: the eviction of a
    /// used nonce removes nothing, and no lookup scans the queue).
    fn take_nonce(&self, n: &str) -> bool {
        lock(&self.nonces).live.remove(n)
    }

    /// Whether `key` may act again under `limit` per hour (and record it if so).
    fn within_limit(&self, key: &str, limit: u32) -> bool {
        let now = self.now();
        let mut r = lock(&self.recent);
        if r.len() >= MAX_LIMITED_KEYS {
            // Forget the accounts and addresses that did nothing for an hour.
            r.retain(|_, q| q.back().is_some_and(|t| now.saturating_sub(*t) < 3600));
        }
        let q = r.entry(key.to_string()).or_default();
        while q.front().is_some_and(|t| now.saturating_sub(*t) >= 3600) {
            q.pop_front();
        }
        if q.len() >= limit as usize {
            return false;
        }
        q.push_back(now);
        true
    }

    /// The base URL of this request (`https://` + its Host), so that the URLs handed out
    /// are the ones the client reached.
    fn base(&self, req_host: Option<&str>) -> String {
        let host = req_host
            .filter(|h| {
                !h.is_empty()
                    && h.len() <= 255
                    && h.bytes().all(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                    })
            })
            .unwrap_or(&self.fallback_host);
        format!("https://{host}")
    }

    /// Answer one request.
    pub(crate) async fn handle(
        self: Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
    ) -> Response<Body> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.sweep_if_due();
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| req.uri().authority().map(|a| a.to_string()));
        let base = self.base(host.as_deref());
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        let result = match (method.clone(), path.as_str()) {
            (Method::GET, "/directory") => Ok(Reply::json(200, &self.directory(&base))),
            (Method::GET | Method::HEAD, "/acme/new-nonce") => Ok(Reply {
                status: if method == Method::HEAD { 200 } else { 204 },
                body: Vec::new(),
                content_type: "application/json",
                location: None,
                up: None,
                retry_after: None,
            }),
            (Method::GET, p) if p.starts_with("/acme/renewal-info/") => {
                self.renewal_info(&p["/acme/renewal-info/".len()..])
            }
            (Method::POST, _) => self.post(req, &base, &path, peer).await,
            _ => Err(malformed(format!(
                "{} is not a resource of this server for this method",
                crate::problem::show(&path)
            ))
            .with_status(if method == Method::GET { 404 } else { 405 })),
        };
        let (status, body, ctype, location, up, retry) = match result {
            Ok(r) => (
                r.status,
                r.body,
                r.content_type,
                r.location,
                r.up,
                r.retry_after,
            ),
            Err(p) => {
                self.counters.problems.fetch_add(1, Ordering::Relaxed);
                log::event(
                    Level::Info,
                    "acme_problem",
                    &[
                        ("peer", &peer),
                        ("path", &crate::problem::show(&path)),
                        ("type", &p.kind_name()),
                        ("detail", &p.detail),
                    ],
                );
                (
                    p.status(),
                    p.to_json().to_string().into_bytes(),
                    "application/problem+json",
                    None,
                    None,
                    None,
                )
            }
        };
        let mut b = Response::builder()
            .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
            .header(header::CONTENT_TYPE, ctype)
            .header(
                header::CACHE_CONTROL,
                if path == "/directory" {
                    "public, max-age=0"
                } else {
                    "no-store"
                },
            )
            .header("Replay-Nonce", self.new_nonce())
            .header(header::LINK, format!("<{base}/directory>;rel=\"index\""));
        if let Some(l) = location {
            b = b.header(header::LOCATION, l);
        }
        if let Some(r) = retry {
            b = b.header(header::RETRY_AFTER, r.to_string());
        }
        if let Some(u) = up {
            b = b.header(header::LINK, format!("<{u}>;rel=\"up\""));
        }
        b.body(Full::new(Bytes::from(body))).unwrap_or_else(|_| {
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        })
    }

    fn directory(&self, base: &str) -> Value {
        let profiles: serde_json::Map<String, Value> = self
            .config
            .profiles
            .iter()
            .map(|(k, p)| (k.clone(), Value::String(p.describe())))
            .collect();
        json!({
            "newNonce": format!("{base}/acme/new-nonce"),
            "newAccount": format!("{base}/acme/new-account"),
            "newOrder": format!("{base}/acme/new-order"),
            "revokeCert": format!("{base}/acme/revoke-cert"),
            "keyChange": format!("{base}/acme/key-change"),
            "renewalInfo": format!("{base}/acme/renewal-info"),
            "meta": {
                "profiles": profiles,
                "externalAccountRequired": self.config.eab_required,
            }
        })
    }

    async fn post(
        self: &Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        base: &str,
        path: &str,
        peer: SocketAddr,
    ) -> Result<Reply, Problem> {
        let ctype = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if ctype.split(';').next().map(str::trim) != Some("application/jose+json") {
            return Err(
                malformed("a POST must have Content-Type application/jose+json").with_status(415),
            );
        }
        if let Some(len) = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
        {
            if len > MAX_BODY as u64 {
                return Err(too_large());
            }
        }
        let body = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            Limited::new(req.into_body(), MAX_BODY).collect(),
        )
        .await
        .map_err(|_| malformed("the request body did not arrive within 10 s"))?
        .map_err(|_| too_large())?
        .to_bytes();
        let url = format!("{base}{path}");
        let jwk_allowed = matches!(path, "/acme/new-account" | "/acme/revoke-cert");
        let authed = self.authenticate(&body, &url, base, jwk_allowed)?;
        match path {
            "/acme/new-account" => self.new_account(authed, base, &url, peer),
            "/acme/new-order" => self.new_order(authed, base),
            "/acme/revoke-cert" => self.revoke(authed).await,
            "/acme/key-change" => self.key_change(authed, base, &url),
            _ => {
                let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
                match parts.as_slice() {
                    ["acme", "acct", id] => self.account(authed, base, id),
                    ["acme", "acct", id, "orders"] => self.account_orders(authed, base, id),
                    ["acme", "order", id] => self.order(authed, base, id),
                    ["acme", "order", id, "finalize"] => self.finalize(authed, base, id).await,
                    ["acme", "authz", id] => self.authz(authed, base, id),
                    ["acme", "chall", id, kind] => self.challenge(authed, base, id, kind),
                    ["acme", "cert", id] => self.certificate(authed, id),
                    _ => Err(not_found("resource")),
                }
            }
        }
    }

    fn authenticate(
        &self,
        body: &[u8],
        url: &str,
        base: &str,
        jwk_allowed: bool,
    ) -> Result<Authed, Problem> {
        let parsed = jws::parse(body)?;
        let h = &parsed.header;
        let nonce = h
            .nonce
            .as_deref()
            .ok_or_else(|| Problem::new(Kind::BadNonce, "the JWS protected header has no nonce"))?;
        if !self.take_nonce(nonce) {
            return Err(Problem::new(
                Kind::BadNonce,
                "the nonce was already used or was not issued by this server",
            ));
        }
        if h.url.as_deref() != Some(url) {
            return Err(unauthorized(format!(
                "the JWS url {:?} is not the URL this request was sent to",
                crate::problem::show(h.url.as_deref().unwrap_or(""))
            )));
        }
        match (&h.jwk, &h.kid) {
            (Some(_), Some(_)) => Err(malformed("the JWS header has both jwk and kid")),
            (None, None) => Err(malformed("the JWS header has neither jwk nor kid")),
            (Some(j), None) => {
                if !jwk_allowed {
                    return Err(malformed(
                        "this request must be signed by an account key named by kid, not jwk",
                    ));
                }
                let key = Jwk::from_json(j)?;
                key.verify(&parsed)?;
                Ok(Authed {
                    payload: parsed.payload,
                    account: None,
                    jwk: Some(key),
                })
            }
            (None, Some(kid)) => {
                let prefix = format!("{base}/acme/acct/");
                let id = kid.strip_prefix(&prefix).ok_or_else(|| {
                    Problem::new(
                        Kind::AccountDoesNotExist,
                        "the kid is not an account URL of this server",
                    )
                })?;
                let acct = lock(&self.state).accounts.get(id).cloned().ok_or_else(|| {
                    Problem::new(Kind::AccountDoesNotExist, "there is no account at this kid")
                })?;
                if acct.status != Status::Valid {
                    return Err(unauthorized("the account is deactivated"));
                }
                Jwk::from_json(&acct.jwk)?.verify(&parsed)?;
                Ok(Authed {
                    payload: parsed.payload,
                    account: Some(acct),
                    jwk: None,
                })
            }
        }
    }

    fn account_json(&self, a: &Account, base: &str) -> Value {
        let mut v = json!({
            "status": a.status,
            "contact": a.contact,
            "orders": format!("{base}/acme/acct/{}/orders", a.id),
        });
        if let Some(k) = &a.eab_kid {
            v["externalAccountBinding"] = json!({"kid": k});
        }
        v
    }

    fn new_account(
        &self,
        authed: Authed,
        base: &str,
        url: &str,
        peer: SocketAddr,
    ) -> Result<Reply, Problem> {
        let jwk = authed.jwk.clone().ok_or_else(|| {
            malformed("newAccount must be signed with the new key (jwk), not kid")
        })?;
        let payload = authed.json()?;
        let thumb = jwk.thumbprint();
        let existing = {
            let st = lock(&self.state);
            st.by_thumbprint
                .get(&thumb)
                .and_then(|id| st.accounts.get(id))
                .cloned()
        };
        if let Some(a) = existing {
            if a.status != Status::Valid {
                return Err(unauthorized("the account of this key is deactivated"));
            }
            let loc = format!("{base}/acme/acct/{}", a.id);
            return Ok(Reply::json(200, &self.account_json(&a, base)).at(loc));
        }
        if payload.get("onlyReturnExisting") == Some(&Value::Bool(true)) {
            return Err(Problem::new(
                Kind::AccountDoesNotExist,
                "no account exists for this key",
            ));
        }
        let eab_kid = match payload.get("externalAccountBinding") {
            Some(eab) => Some(jws::verify_eab(eab, &jwk, url, |kid| {
                state::eab_key(&self.acme_dir, kid)
            })?),
            None if self.config.eab_required => {
                return Err(Problem::new(
                    Kind::ExternalAccountRequired,
                    "this server requires an external account binding: ask the CA's operator for a key id and HMAC key",
                ))
            }
            None => None,
        };
        let contact = contacts(&payload)?;
        if !self.within_limit(
            &format!("ip {}", peer.ip()),
            self.config.rate_limits.new_accounts_per_hour,
        ) {
            return Err(Problem::new(
                Kind::RateLimited,
                format!(
                    "too many new accounts from {} in the last hour (limit {})",
                    peer.ip(),
                    self.config.rate_limits.new_accounts_per_hour
                ),
            ));
        }
        let a = Account {
            id: random_id(),
            status: Status::Valid,
            jwk: jwk.to_json(),
            thumbprint: thumb,
            contact,
            created: self.now(),
            eab_kid,
        };
        lock(&self.state)
            .save_account(&a)
            .map_err(|e| internal(format!("saving the account: {e}")))?;
        self.counters.accounts.fetch_add(1, Ordering::Relaxed);
        log::event(
            Level::Info,
            "acme_account_created",
            &[("account", &a.id), ("peer", &peer)],
        );
        let loc = format!("{base}/acme/acct/{}", a.id);
        Ok(Reply::json(201, &self.account_json(&a, base)).at(loc))
    }

    fn account(&self, authed: Authed, base: &str, id: &str) -> Result<Reply, Problem> {
        let mut a = authed.account()?.clone();
        if a.id != id {
            return Err(unauthorized(
                "an account can only be read or changed by its own key",
            ));
        }
        let payload = authed.json()?;
        let mut changed = false;
        if payload.get("contact").is_some() {
            a.contact = contacts(&payload)?;
            changed = true;
        }
        match payload.get("status").and_then(Value::as_str) {
            Some("deactivated") => {
                a.status = Status::Deactivated;
                changed = true;
            }
            Some(other) => {
                return Err(malformed(format!(
                    "an account's status can only be set to deactivated, not {:?}",
                    crate::problem::show(other)
                )))
            }
            None => {}
        }
        if changed {
            lock(&self.state)
                .save_account(&a)
                .map_err(|e| internal(format!("saving the account: {e}")))?;
            if a.status == Status::Deactivated {
                log::event(
                    Level::Info,
                    "acme_account_deactivated",
                    &[("account", &a.id)],
                );
            }
        }
        Ok(Reply::json(200, &self.account_json(&a, base)).at(format!("{base}/acme/acct/{}", a.id)))
    }

    fn account_orders(&self, authed: Authed, base: &str, id: &str) -> Result<Reply, Problem> {
        let a = authed.account()?;
        if a.id != id {
            return Err(unauthorized("only the account itself can list its orders"));
        }
        let now = self.now();
        let st = lock(&self.state);
        let orders: Vec<String> = st
            .orders
            .values()
            .filter(|o| o.account == a.id && st.order_status(o, now) != Status::Invalid)
            .map(|o| format!("{base}/acme/order/{}", o.id))
            .collect();
        Ok(Reply::json(200, &json!({ "orders": orders })))
    }

    fn key_change(&self, authed: Authed, base: &str, url: &str) -> Result<Reply, Problem> {
        let mut a = authed.account()?.clone();
        // The payload is a JWS signed by the new key (RFC 8555 7.3.5).
        let inner = jws::parse(&authed.payload)?;
        if inner.header.nonce.is_some() {
            return Err(malformed(
                "the inner JWS of a key change must not carry a nonce",
            ));
        }
        if inner.header.url.as_deref() != Some(url) {
            return Err(malformed("the inner JWS url differs from the outer one"));
        }
        let new_jwk = Jwk::from_json(
            inner
                .header
                .jwk
                .as_ref()
                .ok_or_else(|| malformed("the inner JWS must carry the new key as jwk"))?,
        )?;
        new_jwk.verify(&inner)?;
        let p: Value = serde_json::from_slice(&inner.payload)
            .map_err(|_| malformed("the inner JWS payload is not JSON"))?;
        if p.get("account").and_then(Value::as_str)
            != Some(format!("{base}/acme/acct/{}", a.id).as_str())
        {
            return Err(malformed("the key change names another account"));
        }
        let old = Jwk::from_json(p.get("oldKey").unwrap_or(&Value::Null))?;
        if old.thumbprint() != a.thumbprint {
            return Err(unauthorized("oldKey is not the account's current key"));
        }
        let thumb = new_jwk.thumbprint();
        let mut st = lock(&self.state);
        if st.by_thumbprint.contains_key(&thumb) {
            return Err(
                Problem::new(Kind::Malformed, "the new key already belongs to an account")
                    .with_status(409),
            );
        }
        st.by_thumbprint.remove(&a.thumbprint);
        a.jwk = new_jwk.to_json();
        a.thumbprint = thumb;
        st.save_account(&a)
            .map_err(|e| internal(format!("saving the account: {e}")))?;
        log::event(
            Level::Info,
            "acme_account_key_changed",
            &[("account", &a.id)],
        );
        Ok(Reply::json(200, &self.account_json(&a, base)).at(format!("{base}/acme/acct/{}", a.id)))
    }

    fn new_order(&self, authed: Authed, base: &str) -> Result<Reply, Problem> {
        let a = authed.account()?.clone();
        let p = authed.json()?;
        if p.get("notBefore").is_some() || p.get("notAfter").is_some() {
            return Err(malformed(
                "notBefore and notAfter are not supported: the profile sets the lifetime",
            ));
        }
        let profile = match p.get("profile") {
            None => self.config.default_profile.clone(),
            Some(Value::String(s)) if self.config.profiles.contains_key(s) => s.clone(),
            Some(other) => {
                let offered: Vec<&str> = self.config.profiles.keys().map(String::as_str).collect();
                return Err(Problem::new(
                    Kind::InvalidProfile,
                    format!(
                        "the profile {} is not offered by this server (offered: {})",
                        crate::problem::show(&other.to_string()),
                        offered.join(", ")
                    ),
                ));
            }
        };
        let list = p
            .get("identifiers")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("newOrder needs an identifiers array"))?;
        if list.is_empty() || list.len() > MAX_IDENTIFIERS {
            return Err(malformed(format!(
                "an order names 1 to {MAX_IDENTIFIERS} identifiers, not {}",
                list.len()
            )));
        }
        let mut idents: Vec<Identifier> = Vec::new();
        let mut sans = Vec::new();
        let dns01 = self.ports.resolver.is_some();
        for v in list {
            let (ident, san) = identifier(v, dns01)?;
            if !idents.contains(&ident) {
                idents.push(ident);
                sans.push(san);
            }
        }
        match self.ca.check_request_names(&sans) {
            Ok(()) => {}
            Err(tlskit_pki::PkiError::Refused(why)) => {
                return Err(Problem::new(
                    Kind::RejectedIdentifier,
                    format!("this CA may not issue for the order's names: {why}"),
                ))
            }
            Err(e) => return Err(internal(format!("reading the CA: {e}"))),
        }
        if !self.within_limit(
            &format!("orders {}", a.id),
            self.config.rate_limits.new_orders_per_hour,
        ) {
            return Err(Problem::new(
                Kind::RateLimited,
                format!(
                    "this account created {} orders in the last hour, the limit",
                    self.config.rate_limits.new_orders_per_hour
                ),
            ));
        }
        let replaces = p
            .get("replaces")
            .and_then(Value::as_str)
            .map(str::to_string);
        let now = self.now();
        let expires = now + ORDER_LIFETIME;
        let mut authz_ids = Vec::new();
        let mut st = lock(&self.state);
        for ident in &idents {
            let wildcard = ident.value.starts_with("*.");
            let kinds: &[&str] = match (wildcard, dns01, ident.kind.as_str()) {
                (true, _, _) => &["dns-01"],
                (false, true, "dns") => &["http-01", "tls-alpn-01", "dns-01"],
                _ => &["http-01", "tls-alpn-01"],
            };
            let token = random_id() + &random_id();
            let az = Authz {
                id: random_id(),
                account: a.id.clone(),
                identifier: Identifier {
                    kind: ident.kind.clone(),
                    value: ident.value.trim_start_matches("*.").to_string(),
                },
                status: Status::Pending,
                expires,
                wildcard,
                challenges: kinds
                    .iter()
                    .map(|k| Challenge {
                        kind: (*k).to_string(),
                        token: token.clone(),
                        status: Status::Pending,
                        validated: None,
                        error: None,
                    })
                    .collect(),
            };
            st.save_authz(&az)
                .map_err(|e| internal(format!("saving an authorization: {e}")))?;
            authz_ids.push(az.id);
        }
        let o = Order {
            id: random_id(),
            account: a.id.clone(),
            status: Status::Pending,
            expires,
            identifiers: idents,
            authzs: authz_ids,
            profile,
            cert: None,
            error: None,
            replaces,
        };
        st.save_order(&o)
            .map_err(|e| internal(format!("saving the order: {e}")))?;
        let body = self.order_json(&st, &o, base);
        drop(st);
        self.counters.orders.fetch_add(1, Ordering::Relaxed);
        Ok(Reply::json(201, &body).at(format!("{base}/acme/order/{}", o.id)))
    }

    fn order_json(&self, st: &State, o: &Order, base: &str) -> Value {
        let status = st.order_status(o, self.now());
        let mut v = json!({
            "status": status,
            "expires": rfc3339(o.expires),
            "identifiers": o.identifiers,
            "authorizations": o.authzs.iter().map(|a| format!("{base}/acme/authz/{a}")).collect::<Vec<_>>(),
            "finalize": format!("{base}/acme/order/{}/finalize", o.id),
            "profile": o.profile,
        });
        if let Some(c) = &o.cert {
            v["certificate"] = json!(format!("{base}/acme/cert/{c}"));
        }
        if let Some(e) = &o.error {
            v["error"] = e.clone();
        }
        if let Some(r) = &o.replaces {
            v["replaces"] = json!(r);
        }
        v
    }

    fn owned_order(&self, authed: &Authed, id: &str) -> Result<Order, Problem> {
        let a = authed.account()?;
        let st = lock(&self.state);
        let o = st.orders.get(id).ok_or_else(|| not_found("order"))?;
        if o.account != a.id {
            return Err(unauthorized("this order belongs to another account"));
        }
        Ok(o.clone())
    }

    fn order(&self, authed: Authed, base: &str, id: &str) -> Result<Reply, Problem> {
        let o = self.owned_order(&authed, id)?;
        let st = lock(&self.state);
        Ok(Reply::json(200, &self.order_json(&st, &o, base)).at(format!("{base}/acme/order/{id}")))
    }

    fn authz_json(&self, a: &Authz, base: &str) -> Value {
        let now = self.now();
        let mut v = json!({
            "status": state::authz_status(a, now),
            "expires": rfc3339(a.expires),
            "identifier": a.identifier,
            "challenges": a.challenges.iter().map(|c| self.challenge_json(a, c, base)).collect::<Vec<_>>(),
        });
        if a.wildcard {
            v["wildcard"] = json!(true);
        }
        v
    }

    fn challenge_json(&self, a: &Authz, c: &Challenge, base: &str) -> Value {
        let mut v = json!({
            "type": c.kind,
            "url": format!("{base}/acme/chall/{}/{}", a.id, c.kind),
            "token": c.token,
            "status": c.status,
        });
        if let Some(t) = c.validated {
            v["validated"] = json!(rfc3339(t));
        }
        if let Some(e) = &c.error {
            v["error"] = e.clone();
        }
        v
    }

    fn owned_authz(&self, authed: &Authed, id: &str) -> Result<Authz, Problem> {
        let acct = authed.account()?;
        let st = lock(&self.state);
        let a = st
            .authzs
            .get(id)
            .ok_or_else(|| not_found("authorization"))?;
        if a.account != acct.id {
            return Err(unauthorized(
                "this authorization belongs to another account",
            ));
        }
        Ok(a.clone())
    }

    fn authz(&self, authed: Authed, base: &str, id: &str) -> Result<Reply, Problem> {
        let mut a = self.owned_authz(&authed, id)?;
        let p = authed.json()?;
        match p.get("status").and_then(Value::as_str) {
            Some("deactivated") => {
                a.status = Status::Deactivated;
                lock(&self.state)
                    .save_authz(&a)
                    .map_err(|e| internal(format!("saving the authorization: {e}")))?;
            }
            Some(_) => {
                return Err(malformed(
                    "an authorization's status can only be set to deactivated",
                ))
            }
            None => {}
        }
        Ok(Reply::json(200, &self.authz_json(&a, base)).at(format!("{base}/acme/authz/{id}")))
    }

    fn challenge(
        self: &Arc<Self>,
        authed: Authed,
        base: &str,
        id: &str,
        kind: &str,
    ) -> Result<Reply, Problem> {
        let mut a = self.owned_authz(&authed, id)?;
        let account = authed.account()?.clone();
        let respond = authed.json()?.is_object();
        let idx = a
            .challenges
            .iter()
            .position(|c| c.kind == kind)
            .ok_or_else(|| not_found("challenge"))?;
        let now = self.now();
        if respond
            && a.challenges[idx].status == Status::Pending
            && state::authz_status(&a, now) == Status::Pending
        {
            a.challenges[idx].status = Status::Processing;
            lock(&self.state)
                .save_authz(&a)
                .map_err(|e| internal(format!("saving the authorization: {e}")))?;
            let ident = a.identifier.clone();
            let token = a.challenges[idx].token.clone();
            let key_auth = format!("{token}.{}", account.thumbprint);
            let kind = kind.to_string();
            let authz_id = a.id.clone();
            let ports = self.ports.clone();
            let me = Arc::clone(self);
            tokio::spawn(async move {
                let r = match kind.as_str() {
                    "http-01" => validate::http01(&ident, &ports, &token, &key_auth).await,
                    "tls-alpn-01" => validate::tls_alpn01(&ident, &ports, &key_auth).await,
                    "dns-01" => validate::dns01(&ident, ports.resolver, &key_auth).await,
                    _ => Err(malformed("this challenge type is not validated here")),
                };
                me.validated(&authz_id, &kind, r);
            });
        }
        let c = a.challenges[idx].clone();
        let mut r = Reply::json(200, &self.challenge_json(&a, &c, base));
        r.up = Some(format!("{base}/acme/authz/{id}"));
        Ok(r)
    }

    /// Record a validation's result on its challenge and authorization.
    fn validated(&self, authz_id: &str, kind: &str, r: Result<(), Problem>) {
        let now = self.now();
        let mut st = lock(&self.state);
        let Some(mut a) = st.authzs.get(authz_id).cloned() else {
            return;
        };
        let Some(c) = a.challenges.iter_mut().find(|c| c.kind == kind) else {
            return;
        };
        match &r {
            Ok(()) => {
                c.status = Status::Valid;
                c.validated = Some(now);
                a.status = Status::Valid;
                self.counters.validations_ok.fetch_add(1, Ordering::Relaxed);
            }
            Err(p) => {
                c.status = Status::Invalid;
                c.error = Some(p.to_json());
                a.status = Status::Invalid;
                self.counters
                    .validations_failed
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        let ident = a.identifier.value.clone();
        if let Err(e) = st.save_authz(&a) {
            log::event(Level::Error, "acme_state_write_failed", &[("reason", &e)]);
        }
        drop(st);
        match r {
            Ok(()) => log::event(
                Level::Info,
                "acme_validation_passed",
                &[
                    ("identifier", &crate::problem::show(&ident)),
                    ("challenge", &kind),
                ],
            ),
            Err(p) => log::event(
                Level::Info,
                "acme_validation_failed",
                &[
                    ("identifier", &crate::problem::show(&ident)),
                    ("challenge", &kind),
                    ("detail", &p.detail),
                ],
            ),
        }
    }

    async fn finalize(&self, authed: Authed, base: &str, id: &str) -> Result<Reply, Problem> {
        let mut o = self.owned_order(&authed, id)?;
        let status = lock(&self.state).order_status(&o, self.now());
        if status != Status::Ready {
            return Err(Problem::new(
                Kind::OrderNotReady,
                format!(
                    "the order is {}, not ready: {}",
                    serde_json::to_value(status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    if status == Status::Pending {
                        "its authorizations are not all valid yet"
                    } else {
                        "it can no longer be finalized"
                    }
                ),
            ));
        }
        let p = authed.json()?;
        let csr = p
            .get("csr")
            .and_then(Value::as_str)
            .and_then(jws::from_b64url)
            .ok_or_else(|| malformed("finalize needs a csr (base64url DER)"))?;
        check_csr(&csr, &o.identifiers)?;
        // RFC 8555 11.1: a certificate must not be issued for the account's own key.
        let (_, req) = X509CertificationRequest::from_der(&csr).map_err(|_| {
            Problem::new(Kind::BadCsr, "the csr is not a DER certification request")
        })?;
        let account_key = Jwk::from_json(&authed.account()?.jwk)?;
        if jwk_of_spki(&req.certification_request_info.subject_pki).as_ref() == Some(&account_key) {
            return Err(Problem::new(
                Kind::BadCsr,
                "the csr's key is the account key; use another key for the certificate",
            ));
        }
        let profile = self
            .config
            .profiles
            .get(&o.profile)
            .ok_or_else(|| internal("the order's profile is no longer configured"))?;
        // The ACME profile maps onto `ca issue`'s: server (a SAN is required) unless the
        // certificates are for clients only, with the profile's usages either way.
        let issue_opts = tlskit_pki::ca::IssueOptions::new()
            .days(Some(profile.days))
            .profile(match profile.server_auth() {
                true => tlskit_pki::ca::Profile::Server,
                false => tlskit_pki::ca::Profile::Client,
            })
            .extended_key_usage(Some(profile.extended_key_usage.clone()))
            .no_crl_url(!profile.crl_distribution_point);
        o.status = Status::Processing;
        lock(&self.state)
            .save_order(&o)
            .map_err(|e| internal(format!("saving the order: {e}")))?;
        let ca = self.ca.clone();
        let origin = PathBuf::from(format!("order {id}"));
        let issued = tokio::task::spawn_blocking(move || ca.issue_csr(&origin, &csr, &issue_opts))
            .await
            .map_err(|_| internal("the issuing task failed"))?;
        let (chain, entry) = match issued {
            Ok(x) => x,
            Err(e) => {
                let p = match &e {
                    tlskit_pki::PkiError::Refused(why) => {
                        Problem::new(Kind::BadCsr, format!("the CA refused to issue: {why}"))
                    }
                    other => Problem::new(Kind::BadCsr, format!("the CA could not issue: {other}")),
                };
                o.status = Status::Invalid;
                o.error = Some(p.to_json());
                let _ = lock(&self.state).save_order(&o);
                return Err(p);
            }
        };
        // A root CA's leaf comes alone from the CA; clients (certbot) expect an issuer
        // after it, so the root follows (a client that trusts it ignores the copy).
        let mut chain = chain;
        if chain.matches("-----BEGIN CERTIFICATE-----").count() == 1 {
            let ca_pem = self.ca_dir.join("ca.pem");
            let root = tlskit_io::read_to_string(&ca_pem, 1 << 20)
                .map_err(|e| internal(format!("reading the CA certificate: {e}")))?;
            chain.push_str(&root);
        }
        let cert = cert_record(&chain, &entry.serial, &authed.account()?.id, &o.identifiers)?;
        o.status = Status::Valid;
        o.cert = Some(cert.id.clone());
        let mut st = lock(&self.state);
        st.save_cert(&cert)
            .and_then(|()| st.save_order(&o))
            .map_err(|e| internal(format!("saving the certificate: {e}")))?;
        let body = self.order_json(&st, &o, base);
        drop(st);
        self.counters.certificates.fetch_add(1, Ordering::Relaxed);
        log::event(
            Level::Info,
            "acme_certificate_issued",
            &[
                ("serial", &entry.serial),
                ("names", &crate::problem::show(&entry.sans.join(","))),
                ("profile", &o.profile),
            ],
        );
        Ok(Reply::json(200, &body).at(format!("{base}/acme/order/{id}")))
    }

    fn certificate(&self, authed: Authed, id: &str) -> Result<Reply, Problem> {
        let a = authed.account()?;
        let st = lock(&self.state);
        let c = st.certs.get(id).ok_or_else(|| not_found("certificate"))?;
        if c.account != a.id {
            return Err(unauthorized("this certificate belongs to another account"));
        }
        Ok(Reply {
            status: 200,
            body: c.chain.clone().into_bytes(),
            content_type: "application/pem-certificate-chain",
            location: None,
            up: None,
            retry_after: None,
        })
    }

    /// revokeCert (RFC 8555 7.6): by the account that ordered the certificate (kid) or
    /// by the certificate's own key (jwk); recorded in the CA's index (the CRL lists it).
    async fn revoke(&self, authed: Authed) -> Result<Reply, Problem> {
        let p = authed.json()?;
        let der = p
            .get("certificate")
            .and_then(Value::as_str)
            .and_then(jws::from_b64url)
            .ok_or_else(|| malformed("revokeCert needs a certificate (base64url DER)"))?;
        let reason = match p.get("reason") {
            None => tlskit_pki::ca::RevocationReason::Unspecified,
            Some(v) => v
                .as_u64()
                .and_then(|c| u8::try_from(c).ok())
                .and_then(tlskit_pki::ca::RevocationReason::from_code)
                .filter(|r| r.code() != 7)
                .ok_or_else(|| {
                    Problem::new(
                        Kind::BadRevocationReason,
                        "the reason is not a revocation reason code (0 to 10, not 7)",
                    )
                })?,
        };
        let (_, x) = X509Certificate::from_der(&der)
            .map_err(|_| malformed("the certificate to revoke is not a DER certificate"))?;
        let serial = tlskit_x509::text::serial(x.raw_serial());
        match (&authed.account, &authed.jwk) {
            (Some(a), _) => {
                let st = lock(&self.state);
                let owned = st
                    .by_serial
                    .get(&serial)
                    .and_then(|id| st.certs.get(id))
                    .is_some_and(|c| c.account == a.id);
                if !owned {
                    return Err(unauthorized(
                        "this account did not order this certificate; revoke it with the certificate's key",
                    ));
                }
            }
            (None, Some(k)) => {
                if jwk_of_spki(x.public_key()).as_ref() != Some(k) {
                    return Err(unauthorized(
                        "the JWS key is neither an account's nor the certificate's key",
                    ));
                }
            }
            (None, None) => return Err(unauthorized("the request is not signed")),
        }
        let ca = self.ca.clone();
        let at = self.clock.now();
        let der2 = der.clone();
        let r = tokio::task::spawn_blocking(move || ca.revoke_certificate(&der2, reason, at))
            .await
            .map_err(|_| internal("the revoking task failed"))?;
        match r {
            Ok(e) => {
                self.counters.revocations.fetch_add(1, Ordering::Relaxed);
                log::event(
                    Level::Info,
                    "acme_certificate_revoked",
                    &[("serial", &e.serial), ("reason", &e.reason)],
                );
                Ok(Reply {
                    status: 200,
                    body: Vec::new(),
                    content_type: "application/json",
                    location: None,
                    up: None,
                    retry_after: None,
                })
            }
            Err(tlskit_pki::PkiError::AlreadyRevoked { .. }) => Err(Problem::new(
                Kind::AlreadyRevoked,
                format!("the certificate with serial {serial} is already revoked"),
            )),
            Err(tlskit_pki::PkiError::NotIssued { .. }) => {
                Err(unauthorized("this CA did not issue this certificate"))
            }
            Err(e) => Err(internal(format!("recording the revocation: {e}"))),
        }
    }

    /// renewalInfo (RFC 9773): the suggested window, from two thirds of the lifetime to
    /// three quarters; for a revoked certificate, a window that has already passed.
    fn renewal_info(&self, id: &str) -> Result<Reply, Problem> {
        let (aki, serial) = id
            .split_once('.')
            .and_then(|(a, s)| Some((jws::from_b64url(a)?, jws::from_b64url(s)?)))
            .filter(|(_, s)| !s.is_empty() && s.len() <= 21)
            .ok_or_else(|| {
                malformed("the certificate identifier is not base64url(AKI).base64url(serial)")
            })?;
        if !self.ca_key_id.is_empty() && aki != self.ca_key_id {
            return Err(not_found("certificate of this CA"));
        }
        let hex = tlskit_x509::text::serial(&serial);
        let (nb, na) = {
            let st = lock(&self.state);
            let c = st
                .by_serial
                .get(&hex)
                .and_then(|id| st.certs.get(id))
                .ok_or_else(|| not_found("certificate issued through ACME"))?;
            (c.not_before, c.not_after)
        };
        let revoked = self
            .revocation(&hex)
            .map_err(|e| internal(format!("reading the CA's revocations: {e}")))?;
        let (start, end) = match revoked {
            Some(r) => {
                let at = u64::try_from(r.revoked_at_unix).unwrap_or(0);
                (at.saturating_sub(2 * 3600), at.saturating_sub(3600))
            }
            None => {
                let life = na.saturating_sub(nb);
                (nb + life * 2 / 3, nb + life * 3 / 4)
            }
        };
        let mut r = Reply::json(
            200,
            &json!({"suggestedWindow": {"start": rfc3339(start), "end": rfc3339(end)}}),
        );
        r.retry_after = Some(RENEWAL_INFO_RETRY);
        Ok(r)
    }
}

/// Retry-After of renewalInfo answers, seconds (RFC 9773 suggests hours).
const RENEWAL_INFO_RETRY: u64 = 6 * 3600;

/// The JWK of a certificate's public key (ES256/ES384/RS256/EdDSA keys), to compare
/// with the key that signed a revokeCert.
fn jwk_of_spki(spki: &SubjectPublicKeyInfo<'_>) -> Option<Jwk> {
    let alg = spki.algorithm.algorithm.to_id_string();
    let data: &[u8] = &spki.subject_public_key.data;
    match alg.as_str() {
        "1.2.840.10045.2.1" => {
            let curve = spki
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok())
                .map(|o| o.to_id_string())?;
            match (curve.as_str(), data.len(), data.first()) {
                ("1.2.840.10045.3.1.7", 65, Some(4)) => Some(Jwk::P256 {
                    x: data[1..33].to_vec(),
                    y: data[33..].to_vec(),
                }),
                ("1.3.132.0.34", 97, Some(4)) => Some(Jwk::P384 {
                    x: data[1..49].to_vec(),
                    y: data[49..].to_vec(),
                }),
                _ => None,
            }
        }
        "1.3.101.112" if data.len() == 32 => Some(Jwk::Ed25519 { x: data.to_vec() }),
        "1.2.840.113549.1.1.1" => match spki.parsed().ok()? {
            x509_parser::public_key::PublicKey::RSA(r) => {
                let strip = |b: &[u8]| b.iter().skip_while(|x| **x == 0).copied().collect();
                Some(Jwk::Rsa {
                    n: strip(r.modulus),
                    e: strip(r.exponent),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

fn too_large() -> Problem {
    malformed(format!(
        "the request body is larger than {MAX_BODY} bytes or did not arrive whole"
    ))
    .with_status(413)
}

fn contacts(p: &Value) -> Result<Vec<String>, Problem> {
    let Some(v) = p.get("contact") else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or_else(|| malformed("contact must be an array of mailto: URLs"))?;
    if list.len() > 10 {
        return Err(malformed("at most 10 contacts per account"));
    }
    list.iter()
        .map(|c| {
            let s = c.as_str().unwrap_or("");
            if s.starts_with("mailto:")
                && s.len() <= 320
                && !s.contains(',')
                && s.chars().all(|ch| !ch.is_control() && !ch.is_whitespace())
            {
                Ok(s.to_string())
            } else {
                Err(Problem::new(
                    Kind::Malformed,
                    format!(
                        "the contact {:?} is not one mailto: URL",
                        crate::problem::show(s)
                    ),
                ))
            }
        })
        .collect()
}

/// Parse one order identifier; returns it (normalised) and the name the CA checks.
fn identifier(v: &Value, dns01: bool) -> Result<(Identifier, rcgen::SanType), Problem> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    let value = v
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("an identifier needs a type and a value"))?;
    match kind {
        "dns" => {
            let (wild, rest) = match value.strip_prefix("*.") {
                Some(r) => (true, r),
                None => (false, value),
            };
            let n = tlskit_names::DnsName::parse(rest).map_err(|e| {
                Problem::new(
                    Kind::RejectedIdentifier,
                    format!(
                        "{:?} is not a DNS name this CA issues for: {e}",
                        crate::problem::show(value)
                    ),
                )
            })?;
            if wild && !dns01 {
                return Err(Problem::new(
                    Kind::RejectedIdentifier,
                    format!(
                        "{:?} is a wildcard: wildcards need dns-01, which this server offers only with a resolver",
                        crate::problem::show(value)
                    ),
                ));
            }
            let ascii = if wild {
                format!("*.{}", n.ascii())
            } else {
                n.ascii().to_string()
            };
            let san = rcgen::string::Ia5String::try_from(ascii.as_str())
                .map(rcgen::SanType::DnsName)
                .map_err(|_| malformed("the DNS name is not ASCII after conversion"))?;
            Ok((
                Identifier {
                    kind: "dns".into(),
                    value: ascii,
                },
                san,
            ))
        }
        "ip" => {
            let ip: IpAddr = value.parse().map_err(|_| {
                malformed(format!(
                    "{:?} is not an IP address",
                    crate::problem::show(value)
                ))
            })?;
            Ok((
                Identifier {
                    kind: "ip".into(),
                    value: ip.to_string(),
                },
                rcgen::SanType::IpAddress(ip),
            ))
        }
        other => Err(Problem::new(
            Kind::UnsupportedIdentifier,
            format!(
                "identifiers of type {:?} are not supported (dns and ip are)",
                crate::problem::show(other)
            ),
        )),
    }
}

/// The CSR must name exactly the order's identifiers (its CN, if any, one of them).
fn check_csr(der: &[u8], idents: &[Identifier]) -> Result<(), Problem> {
    let (_, req) = X509CertificationRequest::from_der(der)
        .map_err(|_| Problem::new(Kind::BadCsr, "the csr is not a DER certification request"))?;
    let mut names: BTreeSet<(String, String)> = BTreeSet::new();
    if let Some(exts) = req.requested_extensions() {
        for ext in exts {
            if let ParsedExtension::SubjectAlternativeName(s) = ext {
                for g in &s.general_names {
                    match g {
                        GeneralName::DNSName(d) => {
                            names.insert(("dns".into(), d.to_ascii_lowercase()));
                        }
                        GeneralName::IPAddress(b) => {
                            let ip = match b.len() {
                                4 => <[u8; 4]>::try_from(*b).ok().map(IpAddr::from),
                                16 => <[u8; 16]>::try_from(*b).ok().map(IpAddr::from),
                                _ => None,
                            }
                            .ok_or_else(|| Problem::new(Kind::BadCsr, "the csr has a malformed IP address"))?;
                            names.insert(("ip".into(), ip.to_string()));
                        }
                        _ => {
                            return Err(Problem::new(
                                Kind::BadCsr,
                                "the csr asks for a subjectAltName that is neither a DNS name nor an IP address",
                            ))
                        }
                    }
                }
            }
        }
    }
    let want: BTreeSet<(String, String)> = idents
        .iter()
        .map(|i| (i.kind.clone(), i.value.to_ascii_lowercase()))
        .collect();
    if let Some(cn) = req
        .certification_request_info
        .subject
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok())
    {
        let cn = cn.to_ascii_lowercase();
        if !want.iter().any(|(_, v)| *v == cn) {
            return Err(Problem::new(
                Kind::BadCsr,
                format!(
                    "the csr's common name {:?} is not one of the order's identifiers",
                    crate::problem::show(&cn)
                ),
            ));
        }
        if names.is_empty() {
            names.insert((
                if cn.parse::<IpAddr>().is_ok() {
                    "ip"
                } else {
                    "dns"
                }
                .into(),
                cn,
            ));
        }
    }
    if names != want {
        let show = |s: &BTreeSet<(String, String)>| {
            s.iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Problem::new(
            Kind::BadCsr,
            format!(
                "the csr names {} but the order is for {}",
                crate::problem::show(&show(&names)),
                crate::problem::show(&show(&want))
            ),
        ));
    }
    Ok(())
}

/// The record kept for an issued certificate.
fn cert_record(
    chain: &str,
    serial: &str,
    account: &str,
    idents: &[Identifier],
) -> Result<Cert, Problem> {
    use rustls::pki_types::pem::PemObject;
    let der = rustls::pki_types::CertificateDer::pem_slice_iter(chain.as_bytes())
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| internal("the CA returned no certificate"))?;
    let (_, x) = X509Certificate::from_der(&der)
        .map_err(|_| internal("the CA returned an unparsable certificate"))?;
    let secs = |t: i64| u64::try_from(t).unwrap_or(0);
    Ok(Cert {
        id: random_id(),
        account: account.to_string(),
        serial: serial.to_string(),
        not_before: secs(x.validity().not_before.timestamp()),
        not_after: secs(x.validity().not_after.timestamp()),
        chain: chain.to_string(),
        spki: jws::b64url(x.public_key().raw),
        identifiers: idents.to_vec(),
    })
}
