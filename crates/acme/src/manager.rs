//! `tlskit serve --acme`: the managed certificate (behind an `ArcSwapOption`, swapped in
//! without touching connections, as the SNI index is on reload) and the task that gets
//! and renews it.
//!
//! Schedule: a stored certificate that is valid and covers the names is served at once.
//! Renewal is due at a uniformly random instant of the CA's ARI window (RFC 9773), asked
//! again after the CA's `Retry-After` (at most `recheck`); without ARI, at half of the
//! lifetime for a certificate that lives less than 10 days, else at two thirds of
//! the lifetime. A failure (CA down, validation refused) is retried after `retry_base`,
//! doubled at each failure up to one hour, with equal jitter (half fixed, half random);
//! the certificate being served is only replaced by a new one that was issued, checked
//! (`check::check_result`: valid now, our key, the names ordered, a chain the verifier
//! accepts) and stored; a refused one is counted in
//! `tlskit_acme_results_refused_total{reason}` and retried like any failure.
//!
//! Renewals of a served certificate are at least a twentieth of its lifetime apart, even
//! after a success (`check::min_spacing`): a CA whose renewal window is always in the past
//! gets one order per twentieth of the lifetime, not an order loop. The first renewal
//! after start (or after a certificate was first obtained) is not delayed, so a
//! certificate the CA revoked is replaced at once. `tlskit acme renew --force` (a
//! separate process on the same storage) is never spaced.
//!
//! The task is supervised: when it ends for any reason but shutdown (a panic), it is
//! logged (`acme_task_restarted`), counted (`tlskit_acme_errors_total`,
//! `tlskit_acme_task_restarts_total`) and restarted with the same backoff as failures.
//! `TLSKIT_TEST_ACME_PANICS=N` (tests only) makes the first N passes panic.
//!
//! Time: due times, the spacing and the supervisor's "ran an hour" are read from the
//! [`Clock`] given to [`ServerAcme::prepare_with_clock`] (the system's by default); the
//! waits between passes are tokio timers, which tests pause and advance.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwapOption;
use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;

use crate::challenge::{self, Challenges, HttpOther};
use crate::check::{self, lifetime_due};
use crate::client::{self, Endpoint, OrderRequest};
use crate::dns01::Dns01;
use crate::error::{clean, AcmeError, Refused};
use crate::settings::{certified, leaf_info, unix, AcmeSettings, PairError};
use crate::storage::{cert_name, AcmeStorage, FsStorage, StoredCert};
use tlskit_tls::clock::Clock;
use tlskit_tls::log::{self, Level};

/// What the renewal manager reports as it goes: the terminator's metrics implement it
/// (`tlskit_acme_*`); [`NoEvents`] drops everything.
pub trait AcmeEvents: Send + Sync + std::fmt::Debug {
    /// ACME is on for this process.
    fn acme_enable(&self);
    /// The served certificate's notAfter (seconds since the Unix epoch).
    fn acme_not_after(&self, unix: u64);
    /// An ACME error (a failed order, a restarted task).
    fn acme_error(&self);
    /// The renewal task was restarted after it ended.
    fn acme_task_restart(&self);
    /// When the next renewal is due (seconds since the Unix epoch).
    fn acme_next_renewal(&self, unix: u64);
    /// An order ended: `ok` when a certificate was issued, checked and stored.
    fn acme_order(&self, ok: bool);
    /// A certificate the CA returned was refused, and why.
    fn acme_refused(&self, why: crate::error::Refusal);
}

/// Events nobody listens to.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl AcmeEvents for NoEvents {
    fn acme_enable(&self) {}
    fn acme_not_after(&self, _: u64) {}
    fn acme_error(&self) {}
    fn acme_task_restart(&self) {}
    fn acme_next_renewal(&self, _: u64) {}
    fn acme_order(&self, _: bool) {}
    fn acme_refused(&self, _: crate::error::Refusal) {}
}

/// Longest wait between retries after failures.
const RETRY_MAX: Duration = Duration::from_secs(3600);

/// The certificate ACME keeps for a set of names, read by the server's resolver.
#[derive(Debug)]
pub struct Managed {
    cert: ArcSwapOption<CertifiedKey>,
    names: Vec<String>,
    /// Renewals asked for ([`Managed::request_renewal`]), counted: the renewal task's next
    /// pass orders whatever the schedule says when this is above `force_taken`.
    force_asked: std::sync::atomic::AtomicU64,
    /// The count of renewals asked for that the renewal task has taken up (only the task
    /// writes it).
    force_taken: std::sync::atomic::AtomicU64,
    /// The outcome of the last forced pass, with the count of requests it answers.
    outcome: tokio::sync::watch::Sender<Option<(u64, RenewalOutcome)>>,
    /// Wakes the renewal task from its wait (a permit is kept when it is not waiting).
    wake: tokio::sync::Notify,
    /// When the renewal task will next try to order, seconds since the Unix epoch (0:
    /// not known yet).
    next_attempt: std::sync::atomic::AtomicU64,
}

impl Managed {
    /// The certificate now served, if any.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.cert.load_full()
    }

    /// Whether `sni` is one of the managed names (exact, or under a managed wildcard).
    pub fn manages(&self, sni: Option<&str>) -> bool {
        sni.is_some_and(|n| crate::settings::covers(&self.names, n))
    }

    /// Renew now: the renewal task wakes and orders a new certificate whatever the
    /// schedule and the spacing between renewals say (a served certificate is replaced
    /// once the new one is issued and checked; a failure is retried as usual).
    pub fn renew_now(&self) {
        drop(self.request_renewal());
    }

    /// [`Managed::renew_now`], with a handle that waits for what the renewal came to: the
    /// outcome of the first pass of the renewal task that takes this request up.
    pub fn request_renewal(&self) -> RenewalRequest {
        // Subscribed first: an outcome published right after the request is not missed.
        let outcomes = self.outcome.subscribe();
        let asked = self
            .force_asked
            .fetch_add(1, Ordering::AcqRel)
            .saturating_add(1);
        self.wake.notify_one();
        RenewalRequest { asked, outcomes }
    }

    /// The renewal task takes up every request made so far: Some(count) when there is
    /// one it had not taken up yet.
    fn take_force(&self) -> Option<u64> {
        let asked = self.force_asked.load(Ordering::Acquire);
        let before = self.force_taken.swap(asked, Ordering::AcqRel);
        (asked > before).then_some(asked)
    }

    fn tell_outcome(&self, answers: u64, outcome: RenewalOutcome) {
        self.outcome.send_replace(Some((answers, outcome)));
    }

    /// When the renewal task will next try to order a certificate, seconds since the
    /// Unix epoch: after a failure, the retry; otherwise the renewal's due time (or the
    /// end of the spacing between renewals). None until the task has looked.
    pub fn next_attempt(&self) -> Option<u64> {
        Some(self.next_attempt.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    fn set_next_attempt(&self, at: SystemTime) {
        self.next_attempt.store(unix(at), Ordering::Relaxed);
    }

    fn install(&self, ck: Arc<CertifiedKey>) {
        self.cert.store(Some(ck));
    }
}

/// What a renewal asked for with [`Managed::request_renewal`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RenewalOutcome {
    /// A new certificate was issued, checked, stored, and is served now.
    Served {
        /// Its serial number, lowercase hex without a sign byte (as the log says it).
        serial: String,
        /// Its notAfter, seconds since the Unix epoch.
        not_after: u64,
    },
    /// The attempt failed (the certificate served, if any, stays; the renewal task
    /// retries after its backoff).
    Failed {
        /// Why, as one sentence (the CA's problem document, escaped, when it sent one).
        reason: String,
    },
}

/// A renewal asked for: [`RenewalRequest::outcome`] waits for what it came to.
#[derive(Debug)]
pub struct RenewalRequest {
    asked: u64,
    outcomes: tokio::sync::watch::Receiver<Option<(u64, RenewalOutcome)>>,
}

impl RenewalRequest {
    /// Wait for the outcome of the first pass that took this request up. There is no
    /// deadline here (an order may take minutes, and a renewal task that stopped answers
    /// nothing): put one around it. None once the [`Managed`] itself is gone.
    pub async fn outcome(mut self) -> Option<RenewalOutcome> {
        loop {
            if let Some((answers, o)) = self.outcomes.borrow_and_update().as_ref() {
                if *answers >= self.asked {
                    return Some(o.clone());
                }
            }
            self.outcomes.changed().await.ok()?;
        }
    }
}

/// Everything `serve` holds for ACME.
pub struct ServerAcme {
    /// The certificate the resolver serves for the managed names.
    pub managed: Arc<Managed>,
    /// The TLS-ALPN-01 configuration (ALPN `acme-tls/1`, validation certificates).
    pub alpn_config: Option<Arc<ServerConfig>>,
    http: Mutex<Option<std::net::TcpListener>>,
    task: Mutex<Option<Manager>>,
    /// The challenges being answered.
    pub challenges: Arc<Challenges>,
}

impl std::fmt::Debug for ServerAcme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAcme").finish_non_exhaustive()
    }
}

impl ServerAcme {
    /// Open the storage (an unwritable directory is an error now; `shared`, a fleet's
    /// storage, replaces the directory when given), load a stored certificate when it is
    /// usable, keep the plain HTTP listener.
    pub fn prepare(
        settings: AcmeSettings,
        http_listen: Option<std::net::TcpListener>,
        provider: Arc<CryptoProvider>,
        metrics: Arc<dyn AcmeEvents>,
        compress: Vec<tlskit_tls::Compression>,
        shared: Option<Arc<dyn AcmeStorage>>,
    ) -> Result<Self, AcmeError> {
        Self::prepare_with_clock(
            settings,
            http_listen,
            provider,
            metrics,
            compress,
            shared,
            tlskit_tls::clock::system(),
        )
    }

    /// [`ServerAcme::prepare`] with the time read from `clock`: whether a stored
    /// certificate is still valid, when renewal is due, the spacing between renewals.
    pub fn prepare_with_clock(
        settings: AcmeSettings,
        http_listen: Option<std::net::TcpListener>,
        provider: Arc<CryptoProvider>,
        metrics: Arc<dyn AcmeEvents>,
        compress: Vec<tlskit_tls::Compression>,
        shared: Option<Arc<dyn AcmeStorage>>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, AcmeError> {
        settings.check()?;
        if settings.challenge == crate::settings::ChallengeKind::Http01 && http_listen.is_none() {
            return Err(AcmeError::Config(
                "the http-01 challenge needs a plain HTTP listener (port 80)".into(),
            ));
        }
        // A fleet (`--shared-state`) keeps its ACME state in Redis: one order per name for
        // all nodes, any node answers a challenge, a renewal reaches every node.
        let storage: Arc<dyn AcmeStorage> = match shared {
            Some(s) => s,
            None => Arc::new(FsStorage::open(&settings.storage)?),
        };
        let names: Vec<String> = settings
            .domains
            .iter()
            .map(|d| d.to_ascii_lowercase())
            .collect();
        let managed = Arc::new(Managed {
            cert: ArcSwapOption::empty(),
            names,
            force_asked: std::sync::atomic::AtomicU64::new(0),
            force_taken: std::sync::atomic::AtomicU64::new(0),
            outcome: tokio::sync::watch::Sender::new(None),
            wake: tokio::sync::Notify::new(),
            next_attempt: std::sync::atomic::AtomicU64::new(0),
        });
        let name = cert_name(&settings.domains);
        metrics.acme_enable();
        match storage.load_cert(&name) {
            Ok(Some(stored)) => match usable(&stored, &managed.names, &provider, clock.now()) {
                Ok(ck) => {
                    let info = ck.cert.first().and_then(|c| leaf_info(c));
                    let not_after = info.as_ref().map(|i| unix(i.not_after)).unwrap_or(0);
                    metrics.acme_not_after(not_after);
                    log::event(
                        Level::Info,
                        "acme_certificate_loaded",
                        &[
                            ("name", &clean(&name)),
                            (
                                "serial",
                                &info
                                    .map(|i| tlskit_x509::text::serial_from_hex(&i.serial))
                                    .unwrap_or_default(),
                            ),
                            ("not_after", &not_after),
                        ],
                    );
                    // Compressed before the server says it is ready, like --cert chains.
                    tlskit_tls::compress::warm_one(&ck, &compress);
                    managed.install(ck);
                }
                Err(why) => log::event(
                    Level::Warn,
                    "acme_stored_certificate_unusable",
                    &[("name", &clean(&name)), ("reason", &why)],
                ),
            },
            Ok(None) => log::event(
                Level::Info,
                "acme_no_certificate",
                &[("name", &clean(&name))],
            ),
            Err(e) => log::event(
                Level::Warn,
                "acme_stored_certificate_unusable",
                &[("name", &clean(&name)), ("reason", &e)],
            ),
        }
        let challenges = Arc::new(
            Challenges::new(storage.clone(), provider.clone(), &managed.names)
                .with_clock(clock.clone()),
        );
        let alpn_config = match settings.challenge {
            crate::settings::ChallengeKind::TlsAlpn01 => Some(challenges.tls_config()?),
            crate::settings::ChallengeKind::Http01 | crate::settings::ChallengeKind::Dns01 => None,
        };
        let dns = Dns01::from_settings(&settings, storage.clone())?;
        let task = Manager {
            dns,
            settings,
            storage,
            challenges: challenges.clone(),
            managed: managed.clone(),
            metrics,
            provider,
            name,
            compress,
            last_renewal: Mutex::new(None),
            clock,
            test_panics: AtomicU32::new(
                std::env::var("TLSKIT_TEST_ACME_PANICS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            ),
        };
        Ok(Self {
            managed,
            alpn_config,
            http: Mutex::new(http_listen),
            task: Mutex::new(Some(task)),
            challenges,
        })
    }

    /// Start the renewal task and the plain HTTP listener (on the running runtime), which
    /// redirects to `https_port`.
    pub fn start(
        &self,
        stop: tokio::sync::watch::Receiver<bool>,
        https_port: u16,
    ) -> std::io::Result<()> {
        if let Some(l) = self.http.lock().ok().and_then(|mut h| h.take()) {
            let l = tokio::net::TcpListener::from_std(l)?;
            tokio::spawn(challenge::http_loop(
                l,
                self.challenges.clone(),
                HttpOther::Redirect(https_port),
                stop.clone(),
            ));
        }
        if let Some(m) = self.task.lock().ok().and_then(|mut t| t.take()) {
            if let Some(d) = m.dns.clone() {
                // DNS-01 records a crash left behind, removed now by whoever holds the
                // issuance lock (in a fleet, the node ordering removes them itself).
                let st = m.storage.clone();
                let n = m.name.clone();
                tokio::spawn(async move {
                    let lock =
                        tokio::task::spawn_blocking(move || st.lock(&n, Duration::ZERO)).await;
                    if let Ok(Ok(held)) = lock {
                        let _ = d.remove_leftovers().await;
                        drop(held);
                    }
                });
            }
            tokio::spawn(supervise(Arc::new(m), stop));
        }
        Ok(())
    }
}

/// A stored pair that can be served: a chain the verifier accepts, valid at `now`, exactly
/// the managed names (`check::check_result`), and the key matches.
fn usable(
    stored: &StoredCert,
    names: &[String],
    provider: &CryptoProvider,
    now: SystemTime,
) -> Result<Arc<CertifiedKey>, Unusable> {
    check::check_result(&stored.chain_pem, None, names, now, false).map_err(Unusable::Refused)?;
    Ok(certified(&stored.chain_pem, &stored.key_pem, provider)?)
}

/// Why a stored pair is not served, as the log line's `reason` says it.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// The chain fails the checks of a CA's answer: said by its detail alone.
    #[error("{}", .0.detail)]
    Refused(Refused),
    /// The chain and key are not a pair.
    #[error(transparent)]
    Pair(#[from] PairError),
}

/// Run the renewal task, and run it again whenever it ends before shutdown (a panic):
/// logged, counted, after the failure backoff. A task that ran an hour starts the
/// backoff over.
async fn supervise(m: Arc<Manager>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let mut restarts: u32 = 0;
    loop {
        let started = m.clock.instant();
        let ended = tokio::spawn(m.clone().run(stop.clone())).await;
        if *stop.borrow() {
            return;
        }
        if m.clock.instant().saturating_duration_since(started) >= RETRY_MAX {
            restarts = 0;
        }
        restarts = restarts.saturating_add(1);
        let why = match ended {
            Ok(()) => "it ended".to_string(),
            Err(e) if e.is_panic() => {
                let p = e.into_panic();
                let text = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                format!("it panicked: {}", clean(&text))
            }
            Err(_) => "it was cancelled".to_string(),
        };
        m.metrics.acme_error();
        m.metrics.acme_task_restart();
        let d = m.retry_delay(restarts);
        log::event(
            Level::Error,
            "acme_task_restarted",
            &[
                ("name", &clean(&m.name)),
                ("restarts", &restarts),
                ("restart_in_s", &format!("{:.1}", d.as_secs_f64())),
                ("reason", &why),
            ],
        );
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stop.changed() => return,
        }
    }
}

/// The renewal task.
struct Manager {
    /// DNS-01's writer, when the challenge is DNS-01.
    dns: Option<Arc<Dns01>>,
    settings: AcmeSettings,
    storage: Arc<dyn AcmeStorage>,
    challenges: Arc<Challenges>,
    managed: Arc<Managed>,
    metrics: Arc<dyn AcmeEvents>,
    provider: Arc<CryptoProvider>,
    name: String,
    compress: Vec<tlskit_tls::Compression>,
    /// When this process last renewed a served certificate (for the spacing rule); kept
    /// across restarts of the task.
    last_renewal: Mutex<Option<Instant>>,
    /// Where "now" comes from.
    clock: Arc<dyn Clock>,
    /// Passes left that panic (`TLSKIT_TEST_ACME_PANICS`, tests only).
    test_panics: AtomicU32,
}

impl Manager {
    fn rand01(&self) -> f64 {
        let mut b = [0u8; 8];
        if self.provider.secure_random.fill(&mut b).is_err() {
            return 0.5;
        }
        (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Delay before retry number `failures` (1, 2, ...): base × 2^(n-1), at most one
    /// hour, half of it fixed and half random.
    fn retry_delay(&self, failures: u32) -> Duration {
        let d = self
            .settings
            .retry_base
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20))
            .min(RETRY_MAX);
        d / 2 + (d / 2).mul_f64(self.rand01())
    }

    async fn run(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut account: Option<instant_acme::Account> = None;
        let mut failures: u32 = 0;
        // The account URL the CA said it does not know, until a pass succeeds.
        let mut gone: Option<String> = None;
        loop {
            // Renewals asked for (the control socket) are taken up at the start of a pass,
            // and told what the pass came to, success or failure.
            let forced = self.managed.take_force();
            let result = self
                .step(&mut account, gone.as_deref(), forced.is_some())
                .await;
            // Told once the pass is logged and its next attempt set.
            let told = forced.map(|answers| (answers, self.outcome_of(&result)));
            let wait = match result {
                Ok(d) => {
                    failures = 0;
                    gone = None;
                    d
                }
                Err(e) => {
                    // The CA no longer knows the account: a new one at the next attempt
                    // (unless another process of the storage made one meanwhile).
                    if client::account_gone(&e) {
                        if let Some(a) = &account {
                            gone = Some(a.id().to_string());
                        }
                    }
                    // Read from the storage again at the next attempt: another process
                    // may have changed it (`tlskit acme account rollover`).
                    account = None;
                    failures = failures.saturating_add(1);
                    self.metrics.acme_error();
                    let d = self.retry_delay(failures);
                    self.managed.set_next_attempt(self.clock.now() + d);
                    // How long the certificate being served still has.
                    let left = self
                        .managed
                        .current()
                        .and_then(|ck| ck.cert.first().and_then(|c| leaf_info(c)))
                        .map(|i| {
                            i.not_after
                                .duration_since(self.clock.now())
                                .map_or(0, |d| d.as_secs())
                        });
                    log::event(
                        Level::Error,
                        "acme_failed",
                        &[
                            ("name", &clean(&self.name)),
                            ("attempt", &failures),
                            ("retry_in_s", &format!("{:.1}", d.as_secs_f64())),
                            ("serving", &left.is_some()),
                            (
                                "expires_in_s",
                                &left.map_or_else(|| "-".to_string(), |l| l.to_string()),
                            ),
                            ("reason", &e),
                        ],
                    );
                    d
                }
            };
            if let Some((answers, outcome)) = told {
                self.managed.tell_outcome(answers, outcome);
            }
            if wait.is_zero() {
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                // `renew_now`: a pass at once.
                _ = self.managed.wake.notified() => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// What a forced pass came to: a forced pass that ends well has installed a new
    /// certificate (ordered, or a newer one found in the storage).
    fn outcome_of(&self, result: &Result<Duration, AcmeError>) -> RenewalOutcome {
        match result {
            Ok(_) => {
                let info = self
                    .managed
                    .current()
                    .and_then(|ck| ck.cert.first().and_then(|c| leaf_info(c)));
                match info {
                    Some(i) => RenewalOutcome::Served {
                        serial: tlskit_x509::text::serial_from_hex(&i.serial),
                        not_after: unix(i.not_after),
                    },
                    // Not reached: a pass that ends well has installed a parsable leaf.
                    None => RenewalOutcome::Failed {
                        reason: "no certificate is served after the renewal".to_string(),
                    },
                }
            }
            Err(e) => RenewalOutcome::Failed {
                reason: e.to_string(),
            },
        }
    }

    /// One pass: Ok(time to sleep) or the failure to retry. `forced`: order whatever the
    /// schedule says (asked for by [`Managed::request_renewal`]).
    async fn step(
        &self,
        account: &mut Option<instant_acme::Account>,
        gone: Option<&str>,
        forced: bool,
    ) -> Result<Duration, AcmeError> {
        let injected = self
            .test_panics
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        if injected.is_ok() {
            panic!("TLSKIT_TEST_ACME_PANICS: the renewal task panics on purpose");
        }
        let acct = match account {
            Some(a) => a.clone(),
            None => {
                let ep = Endpoint::of(&self.settings);
                let (a, _) = client::account(&ep, &self.storage, gone).await?;
                *account = Some(a.clone());
                a
            }
        };
        let mut replaces = None;
        let mut reason = "missing";
        // Another node of the fleet (or another process on the same storage) may have
        // renewed: serve its certificate without waiting for this one's turn.
        if self.managed.current().is_some() {
            if let Some(ck) = self.newer_stored().await {
                self.install(ck, "storage").await;
            }
        }
        // Asked for by `renew_now` (the control socket): order whatever the schedule says.
        if forced {
            reason = "forced";
        }
        if let Some(ck) = self.managed.current().filter(|_| !forced) {
            let leaf = ck
                .cert
                .first()
                .ok_or_else(|| AcmeError::Config("empty chain".into()))?;
            let info =
                leaf_info(leaf).ok_or_else(|| AcmeError::Config("unparsable leaf".into()))?;
            let (due, recheck, why) =
                match client::renewal_window(&acct, leaf, &info, self.rand01()).await? {
                    Some((at, retry)) => {
                        replaces = client::cert_id(leaf);
                        (at, retry.min(self.settings.recheck), "ari")
                    }
                    None => (lifetime_due(&info), self.settings.recheck, "lifetime"),
                };
            self.metrics.acme_next_renewal(unix(due));
            let last = self.last_renewal.lock().ok().and_then(|l| *l);
            let spacing = check::min_spacing(&info);
            match plan(due, recheck, spacing, last, &*self.clock) {
                Plan::Wait(sleep) => {
                    self.managed.set_next_attempt(due);
                    log::event(
                        Level::Debug,
                        "acme_renewal_scheduled",
                        &[
                            ("name", &clean(&self.name)),
                            ("due", &unix(due)),
                            ("by", &why),
                            ("check_in_s", &format!("{:.1}", sleep.as_secs_f64())),
                        ],
                    );
                    return Ok(sleep);
                }
                Plan::Spaced(sleep) => {
                    self.managed.set_next_attempt(self.clock.now() + sleep);
                    log::event(
                        Level::Info,
                        "acme_renewal_spaced",
                        &[
                            ("name", &clean(&self.name)),
                            ("by", &why),
                            ("spacing_s", &format!("{:.1}", spacing.as_secs_f64())),
                            ("check_in_s", &format!("{:.1}", sleep.as_secs_f64())),
                        ],
                    );
                    return Ok(sleep);
                }
                Plan::Order => {}
            }
            reason = why;
        }
        log::event(
            Level::Info,
            "acme_order_start",
            &[("name", &clean(&self.name)), ("reason", &reason)],
        );
        let lock = {
            let s = self.storage.clone();
            let n = self.name.clone();
            tokio::task::spawn_blocking(move || s.lock(&n, Duration::from_secs(300)))
                .await
                .map_err(|e| AcmeError::Config(e.to_string()))??
        };
        let key = rcgen::KeyPair::generate().map_err(|e| AcmeError::Config(e.to_string()))?;
        let req = OrderRequest {
            domains: &self.settings.domains,
            kind: self.settings.challenge,
            profile: self.settings.profile.as_deref(),
            replaces,
            dns: self.dns.clone(),
        };
        if let Some(d) = &self.dns {
            d.remove_leftovers().await?;
        }
        // Another process sharing the storage may have renewed while this one waited for
        // the lock: take its certificate instead of ordering again.
        if let Some(ck) = self.newer_stored().await {
            drop(lock);
            self.install(ck, "storage").await;
            return Ok(Duration::ZERO);
        }
        let chain = match client::obtain(&acct, &req, &key, &self.challenges).await {
            Ok(c) => c,
            Err(e) => {
                self.metrics.acme_order(false);
                return Err(e);
            }
        };
        // Checked before it is stored or served; the served certificate stays.
        let checked = check::check_result(
            &chain,
            Some(&rcgen::PublicKeyData::subject_public_key_info(&key)),
            &self.managed.names,
            self.clock.now(),
            true,
        )
        .map_err(AcmeError::from)
        .and_then(|c| {
            if self.settings.issuer_roots.is_empty() {
                return Ok(());
            }
            check::check_issuer(
                &c,
                &self.managed.names,
                &self.settings.issuer_roots,
                self.clock.now(),
            )
        });
        if let Err(e) = checked {
            self.metrics.acme_order(false);
            if let AcmeError::Refused(r) = &e {
                self.metrics.acme_refused(r.reason);
            }
            return Err(e);
        }
        let stored = StoredCert {
            chain_pem: chain,
            key_pem: key.serialize_pem(),
        };
        let ck = certified(&stored.chain_pem, &stored.key_pem, &self.provider).map_err(|why| {
            AcmeError::Config(format!("the CA's certificate is not usable: {why}"))
        })?;
        {
            let s = self.storage.clone();
            let n = self.name.clone();
            let st = stored.clone();
            tokio::task::spawn_blocking(move || s.store_cert(&n, &st))
                .await
                .map_err(|e| AcmeError::Config(e.to_string()))??;
        }
        drop(lock);
        self.metrics.acme_order(true);
        if reason != "missing" {
            if let Ok(mut l) = self.last_renewal.lock() {
                *l = Some(self.clock.instant());
            }
        }
        self.install(ck, "order").await;
        Ok(Duration::ZERO)
    }

    /// A stored certificate other than the one served, usable and issued later.
    async fn newer_stored(&self) -> Option<Arc<CertifiedKey>> {
        let s = self.storage.clone();
        let n = self.name.clone();
        let stored = tokio::task::spawn_blocking(move || s.load_cert(&n))
            .await
            .ok()?
            .ok()??;
        let ck = usable(
            &stored,
            &self.managed.names,
            &self.provider,
            self.clock.now(),
        )
        .ok()?;
        let new = leaf_info(ck.cert.first()?)?;
        match self.managed.current() {
            None => Some(ck),
            Some(cur) => {
                let cur = leaf_info(cur.cert.first()?)?;
                (new.serial != cur.serial && new.not_before > cur.not_before).then_some(ck)
            }
        }
    }

    /// Serve `ck` from now on: compressed first (off the runtime's threads), so the first
    /// handshake with it finds its certificate messages ready.
    async fn install(&self, ck: Arc<CertifiedKey>, from: &str) {
        let info = ck.cert.first().and_then(|c| leaf_info(c));
        let not_after = info.as_ref().map(|i| unix(i.not_after)).unwrap_or(0);
        let (warm, algs) = (ck.clone(), self.compress.clone());
        // A failed warm-up (a panicking compressor) costs only time: a handshake compresses.
        let _ =
            tokio::task::spawn_blocking(move || tlskit_tls::compress::warm_one(&warm, &algs)).await;
        self.managed.install(ck);
        self.metrics.acme_not_after(not_after);
        log::event(
            Level::Info,
            "acme_certificate_installed",
            &[
                ("name", &clean(&self.name)),
                ("from", &from),
                (
                    "serial",
                    &info
                        .map(|i| tlskit_x509::text::serial_from_hex(&i.serial))
                        .unwrap_or_default(),
                ),
                ("not_after", &not_after),
            ],
        );
    }
}

/// What a pass does about the certificate served, renewal being due at `due`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Not due yet: look again after this long (until `due`, at most `recheck`, at least
    /// 200 ms).
    Wait(Duration),
    /// Due, but this process renewed less than `spacing` ago: look again after this long
    /// (the rest of the spacing, at most `recheck`, at least 200 ms).
    Spaced(Duration),
    /// Order a new certificate now.
    Order,
}

/// The renewal schedule at `clock`'s now: `last` is when this process last renewed (for
/// the spacing rule; the first renewal after start is never spaced).
fn plan(
    due: SystemTime,
    recheck: Duration,
    spacing: Duration,
    last: Option<Instant>,
    clock: &dyn Clock,
) -> Plan {
    const LEAST: Duration = Duration::from_millis(200);
    if let Ok(left) = due.duration_since(clock.now()) {
        if !left.is_zero() {
            return Plan::Wait(left.min(recheck).max(LEAST));
        }
    }
    if let Some(last) = last {
        let since = clock.instant().saturating_duration_since(last);
        if since < spacing {
            return Plan::Spaced((spacing - since).min(recheck).max(LEAST));
        }
    }
    Plan::Order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored pair the checks refuse is logged with the refusal's detail alone (the
    /// `reason` of `acme_stored_certificate_unusable`), not the CA-result sentence.
    #[test]
    fn an_unusable_stored_pair_is_told_by_its_detail() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let names = vec!["a.test".to_string()];
        let stored = StoredCert::new("no certificate here".into(), String::new());
        let refused =
            check::check_result(&stored.chain_pem, None, &names, SystemTime::now(), false)
                .err()
                .unwrap_or_else(|| panic!("an empty chain was accepted"));
        let e = usable(&stored, &names, &provider, SystemTime::now()).err();
        assert!(matches!(e, Some(Unusable::Refused(_))), "{e:?}");
        assert_eq!(e.map(|e| e.to_string()), Some(refused.detail));
    }

    #[test]
    fn managed_names_exact_and_wildcard() {
        let m = Managed {
            cert: ArcSwapOption::empty(),
            names: vec!["a.test".into(), "*.w.test".into()],
            force_asked: Default::default(),
            force_taken: Default::default(),
            outcome: tokio::sync::watch::Sender::new(None),
            wake: Default::default(),
            next_attempt: Default::default(),
        };
        assert!(m.manages(Some("a.test")));
        assert!(m.manages(Some("x.w.test")));
        assert!(!m.manages(Some("w.test")));
        assert!(!m.manages(Some("y.x.w.test")));
        assert!(!m.manages(Some("b.test")));
        assert!(!m.manages(None));
        assert!(m.current().is_none());
    }

    /// Renewal follows the clock: not due, the pass looks again at the due time (at most
    /// `recheck` later, at least 200 ms); due, it orders; due again soon after a
    /// renewal, it waits out the spacing (a twentieth of a 90-day lifetime), then orders.
    #[test]
    fn renewal_is_scheduled_and_spaced_by_the_clock() {
        use tlskit_tls::ManualClock;
        let clock = ManualClock::at_unix(1_800_000_000);
        let hour = Duration::from_secs(3600);
        let spacing = Duration::from_secs(90 * 86_400 / 20);
        let due = clock.now() + Duration::from_secs(10 * 86_400);
        let at = |last| plan(due, hour, spacing, last, &clock);
        assert_eq!(
            at(None),
            Plan::Wait(hour),
            "ten days ahead: recheck in an hour"
        );
        clock.advance(Duration::from_secs(10 * 86_400 - 90));
        assert_eq!(at(None), Plan::Wait(Duration::from_secs(90)));
        clock.advance(Duration::from_millis(89_950));
        assert_eq!(at(None), Plan::Wait(Duration::from_millis(200)), "at least");
        clock.advance(Duration::from_millis(50));
        assert_eq!(at(None), Plan::Order, "due now");
        // This process renewed a moment ago, and the window is still in the past (a CA
        // whose window never moves): spaced, not an order loop.
        let renewed = clock.instant();
        clock.advance(Duration::from_secs(1));
        assert_eq!(at(Some(renewed)), Plan::Spaced(hour));
        clock.advance(spacing - Duration::from_secs(1) - Duration::from_secs(30));
        assert_eq!(
            at(Some(renewed)),
            Plan::Spaced(Duration::from_secs(30)),
            "the rest of the spacing"
        );
        clock.advance(Duration::from_secs(30));
        assert_eq!(at(Some(renewed)), Plan::Order, "spacing over");
        // The spacing is monotonic time: a wall-clock jump does not end it.
        let renewed = clock.instant();
        clock.set_wall(clock.now() + Duration::from_secs(365 * 86_400));
        assert_eq!(at(Some(renewed)), Plan::Spaced(hour));
    }

    /// Without ARI, renewal is due at half of the lifetime under 10 days and at two
    /// thirds from 10 days on, on the injected clock: a certificate issued now is waited
    /// on until then (rechecked every `recheck`), and ordered at that moment, not before.
    #[test]
    fn lifetime_rule_half_under_ten_days_two_thirds_above_on_the_clock() {
        use tlskit_tls::ManualClock;
        let day = 86_400u64;
        for (life, due_after) in [
            (60, 30),                     // a one-minute certificate: 30 s
            (6 * day, 3 * day),           // Let's Encrypt's shortlived: 3 days
            (10 * day - 2, 5 * day - 1),  // just under 10 days: half
            (10 * day, 10 * day * 2 / 3), // 10 days: two thirds
            (90 * day, 60 * day),         // 90 days: 60 days
        ] {
            let clock = ManualClock::at_unix(1_800_000_000);
            let info = crate::settings::LeafInfo {
                not_before: clock.now(),
                not_after: clock.now() + Duration::from_secs(life),
                serial: "01".into(),
                names: vec!["a.test".into()],
            };
            let due = lifetime_due(&info);
            assert_eq!(
                due.duration_since(info.not_before).ok(),
                Some(Duration::from_secs(due_after)),
                "lifetime {life} s"
            );
            let recheck = Duration::from_secs(6 * 3600);
            let spacing = check::min_spacing(&info);
            let first = Duration::from_secs(due_after).min(recheck);
            assert_eq!(
                plan(due, recheck, spacing, None, &clock),
                Plan::Wait(first.max(Duration::from_millis(200))),
                "lifetime {life} s"
            );
            clock.advance(Duration::from_secs(due_after - 1));
            assert!(
                matches!(plan(due, recheck, spacing, None, &clock), Plan::Wait(_)),
                "lifetime {life} s: a second early"
            );
            clock.advance(Duration::from_secs(1));
            assert_eq!(
                plan(due, recheck, spacing, None, &clock),
                Plan::Order,
                "lifetime {life} s: due"
            );
        }
    }

    /// A manager for `a.test` with failures retried after `retry_base`, reporting to
    /// `metrics`, whose CA roots are a file that does not exist: every pass fails at
    /// once, without touching the network.
    fn failing(
        dir: &std::path::Path,
        retry_base: Duration,
        metrics: Arc<dyn AcmeEvents>,
    ) -> Manager {
        let mut settings = AcmeSettings::new(
            "https://ca.test/dir".into(),
            vec!["a.test".into()],
            dir.join("s"),
        );
        settings.retry_base = retry_base;
        settings.roots = vec![tlskit_store::Source::File(dir.join("missing-roots.pem"))];
        let storage: Arc<dyn AcmeStorage> =
            Arc::new(FsStorage::open(&settings.storage).unwrap_or_else(|e| panic!("{e}")));
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        Manager {
            dns: None,
            settings,
            challenges: Arc::new(Challenges::new(storage.clone(), provider.clone(), &[])),
            storage,
            managed: Arc::new(Managed {
                cert: ArcSwapOption::empty(),
                names: Vec::new(),
                force_asked: Default::default(),
                force_taken: Default::default(),
                outcome: tokio::sync::watch::Sender::new(None),
                wake: Default::default(),
                next_attempt: Default::default(),
            }),
            metrics,
            provider,
            name: "a.test".into(),
            compress: Vec::new(),
            last_renewal: Mutex::new(None),
            clock: tlskit_tls::clock::system(),
            test_panics: AtomicU32::new(0),
        }
    }

    /// When each error was reported, on tokio's (paused) clock.
    #[derive(Debug, Default)]
    struct ErrorTimes(Mutex<Vec<tokio::time::Instant>>);

    impl AcmeEvents for ErrorTimes {
        fn acme_enable(&self) {}
        fn acme_not_after(&self, _: u64) {}
        fn acme_error(&self) {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(tokio::time::Instant::now());
        }
        fn acme_task_restart(&self) {}
        fn acme_next_renewal(&self, _: u64) {}
        fn acme_order(&self, _: bool) {}
        fn acme_refused(&self, _: crate::error::Refusal) {}
    }

    /// The renewal task itself backs off (on tokio's paused time, so hours pass in
    /// milliseconds): after failure n it waits between half and all of
    /// 4 s × 2^(n-1), at most an hour, and it stops when told.
    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_with_doubling_backoff_up_to_an_hour() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let times = Arc::new(ErrorTimes::default());
        let m = Arc::new(failing(dir.path(), Duration::from_secs(4), times.clone()));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(m.run(stopped));
        let count = || times.0.lock().unwrap_or_else(|p| p.into_inner()).len();
        while count() < 13 {
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
        let _ = stop.send(true);
        task.await.unwrap_or_else(|e| panic!("{e}"));
        let t = times.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (n, pair) in t.windows(2).take(12).enumerate() {
            let gap = pair[1] - pair[0];
            let full = Duration::from_secs(4 << n).min(RETRY_MAX);
            assert!(
                gap >= full / 2 && gap <= full,
                "after failure {}: waited {gap:?}, not within {full:?}",
                n + 1
            );
        }
        let after = count();
        tokio::time::sleep(RETRY_MAX * 2).await;
        assert_eq!(count(), after, "no pass after the stop");
    }

    /// After a failure, the next attempt told to `ctl status` is the retry time: between
    /// half and all of the backoff from now (wall clock), not the due time.
    #[tokio::test(start_paused = true)]
    async fn next_attempt_after_a_failure_is_the_retry_time() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let times = Arc::new(ErrorTimes::default());
        let m = Arc::new(failing(dir.path(), Duration::from_secs(600), times.clone()));
        assert_eq!(m.managed.next_attempt(), None, "not known before a pass");
        let managed = m.managed.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let before = unix(SystemTime::now());
        let task = tokio::spawn(m.run(stopped));
        while times.0.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let after = unix(SystemTime::now());
        let next = managed
            .next_attempt()
            .unwrap_or_else(|| panic!("no next attempt after a failure"));
        assert!(
            next >= before + 300 && next <= after + 600,
            "next attempt {next} not 300..600 s after {before}..{after}"
        );
        let _ = stop.send(true);
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }

    /// A renewal asked for (`ctl renew`) wakes the task out of its backoff and is told the
    /// reason the forced pass failed, at once rather than at the retry time; each request
    /// gets the outcome of a pass that started after it.
    #[tokio::test(start_paused = true)]
    async fn a_requested_renewal_is_told_why_it_failed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let times = Arc::new(ErrorTimes::default());
        let m = Arc::new(failing(dir.path(), Duration::from_secs(600), times.clone()));
        let managed = m.managed.clone();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(m.run(stopped));
        let errors = || times.0.lock().unwrap_or_else(|p| p.into_inner()).len();
        while errors() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The task now waits 300..600 s before its retry; the request does not.
        for round in 1..=2 {
            let asked = tokio::time::Instant::now();
            let request = managed.request_renewal();
            let outcome = tokio::time::timeout(Duration::from_secs(200), request.outcome())
                .await
                .unwrap_or_else(|_| panic!("round {round}: no outcome within 200 s"));
            match outcome {
                Some(RenewalOutcome::Failed { reason }) => assert!(
                    reason.contains("missing-roots.pem"),
                    "round {round}: {reason}"
                ),
                other => panic!("round {round}: {other:?}"),
            }
            assert!(asked.elapsed() < Duration::from_secs(200));
            assert_eq!(errors(), 1 + round, "one forced pass per request");
        }
        let _ = stop.send(true);
        task.await.unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn retry_delay_doubles_with_jitter_up_to_an_hour() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let m = failing(dir.path(), Duration::from_secs(4), Arc::new(NoEvents));
        for (n, full) in [(1u32, 4u64), (2, 8), (3, 16), (20, 3600), (u32::MAX, 3600)] {
            let mut seen = std::collections::HashSet::new();
            for _ in 0..20 {
                let d = m.retry_delay(n);
                assert!(d >= Duration::from_secs(full) / 2, "{n}: {d:?}");
                assert!(d <= Duration::from_secs(full), "{n}: {d:?}");
                seen.insert(d);
            }
            // Jittered: not the same delay every time.
            assert!(seen.len() > 1, "{n}");
        }
    }
}
