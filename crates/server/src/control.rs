//! The control socket (`serve --control PATH`): a Unix socket, mode 0600, on which the
//! owner asks a running server what it serves and tells it to reload.
//!
//! One request line per connection (`status`, `certs`, `reload`, `renew NAME [SECS]`), read up
//! to [`MAX_REQUEST`] bytes within [`REQUEST_DEADLINE`]; one JSON object in reply
//! ([`ControlReply`]), then the connection closes.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlskit_tls::log::{self, Level};
use tlskit_tls::NetError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, watch};

use crate::reload::RELOAD_DEADLINE;
use crate::state::{ReloadResult, Shared};

/// Longest request line accepted, newline included.
pub const MAX_REQUEST: usize = 1024;

/// How long a client has to send its request line, and then to take the reply.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long a `reload` request waits for its result: the reload's own deadline, plus
/// time for one already running to end first.
pub const RELOAD_WAIT: Duration = Duration::from_secs(2 * RELOAD_DEADLINE.as_secs() + 5);

/// How long a `renew NAME` request waits for the renewal's outcome when it names no
/// deadline of its own (`renew NAME SECS`).
pub const RENEW_WAIT: Duration = Duration::from_secs(120);

/// The longest deadline a `renew NAME SECS` request may ask for.
pub const MAX_RENEW_WAIT: Duration = Duration::from_secs(3600);

/// The control socket's file name in the service's runtime directory.
pub const CONTROL_SOCKET_NAME: &str = "control.sock";

/// Where the control socket goes when none is named: `control.sock` in the first
/// absolute directory of `runtime_directory`, the value of `RUNTIME_DIRECTORY` that
/// systemd sets for a unit with `RuntimeDirectory=` (a `:`-separated list; the shipped
/// units' is `/run/tlskit`). None when it is unset, empty, or names no absolute directory.
pub fn runtime_control_path(runtime_directory: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    runtime_directory?
        .as_bytes()
        .split(|&b| b == b':')
        .map(|d| Path::new(std::ffi::OsStr::from_bytes(d)))
        .find(|d| d.is_absolute())
        .map(|d| d.join(CONTROL_SOCKET_NAME))
}

/// Connections served at once; more wait in the kernel's queue.
const MAX_CONNECTIONS: usize = 16;

/// The reply to one request: `error` alone when it failed, else the one field the
/// request asks for. A renewal that failed has both `error` (what a client that does not
/// know `renewal` shows) and `renewal`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ControlReply {
    /// Why the request was not done (an unknown command, a reload that did not end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ControlStatus>,
    /// `certs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificates: Option<Vec<ControlCert>>,
    /// `reload`: its result (failed parts named in `errors`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload: Option<ReloadResult>,
    /// `renew NAME`: the new ACME certificate, once served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewed: Option<ControlCert>,
    /// `renew NAME`: what the renewal came to, success or failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal: Option<ControlRenewal>,
}

/// What a `renew NAME` came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ControlRenewal {
    /// Whether a new certificate was issued and is served now.
    pub ok: bool,
    /// The new certificate's serial number, lowercase hex without a sign byte (none when
    /// the renewal failed).
    pub serial: Option<String>,
    /// The new certificate's notAfter, seconds since the Unix epoch (none when the renewal
    /// failed).
    pub not_after: Option<i64>,
    /// Why the renewal failed, one sentence (none when it worked).
    pub reason: Option<String>,
    /// The ACME certificate served now: the new one, or after a failure the one that
    /// stays.
    pub certificate: ControlCert,
}

/// What `status` reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ControlStatus {
    /// The certificates served.
    pub certificates: Vec<ControlCert>,
    /// The client-CA trust store, when client certificates are asked for.
    pub client_ca: Option<ControlStore>,
    /// Where session-ticket keys come from: `local` (rotated by this process) or `fleet`.
    pub ticket_keys: String,
    /// With `fleet`: whether the shared state is reachable now.
    pub fleet_up: Option<bool>,
    /// Seconds since the current ticket key was made (with `fleet` keys, by whichever
    /// node rotated; before issue 28's fleet state, null with `fleet`).
    pub ticket_key_age_s: Option<u64>,
    /// With `fleet`: the current key's id, the same on every node in step, one more at
    /// each rotation (null with `local`).
    #[serde(default)]
    pub ticket_key_id: Option<u32>,
    /// Where the current ticket key came from: `fleet` (the shared state's) or `local`
    /// (made by this process: local keys, or a fleet node before its first sync or while
    /// the shared keys do not open with its KEK).
    #[serde(default)]
    pub ticket_key_source: String,
    /// With `fleet`: when this node was last in step with the shared state, seconds since
    /// the Unix epoch (null before the first sync, and with `local`).
    #[serde(default)]
    pub fleet_last_sync: Option<u64>,
    /// Client connections open now.
    pub connections_open: u64,
    /// The last reload's result (none since start: absent).
    pub last_reload: Option<ReloadResult>,
}

/// One certificate served.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ControlCert {
    /// `default` for the `--cert` pair, `NAME` for an SNI directory pair, `acme`.
    pub name: String,
    /// `file`, `sni_dir` or `acme`.
    pub source: String,
    /// The chain file (none for ACME).
    pub path: Option<String>,
    /// The leaf's DNS names.
    pub dns_names: Vec<String>,
    /// The leaf's notAfter, seconds since the Unix epoch (none: ACME has no
    /// certificate yet).
    pub not_after: Option<i64>,
    /// ACME only: when the certificate is due for renewal (ARI's window, else half of a
    /// lifetime under 10 days, two thirds of a longer one), seconds since the Unix epoch; none until the renewal task has
    /// looked, and for other sources.
    pub renewal_due: Option<u64>,
    /// ACME only: when the renewal task will next try to order (after a failure, the
    /// retry; otherwise the due time), seconds since the Unix epoch; none until the
    /// task has looked, and for other sources.
    pub next_attempt: Option<u64>,
}

/// The client-CA trust store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ControlStore {
    /// The anchor set's generation (changes when a reload changes the anchors).
    pub generation: u64,
    /// Trust anchors loaded.
    pub anchors: u64,
}

/// The bound control socket; dropping it removes the socket file.
pub(crate) struct Bound {
    listener: Option<std::os::unix::net::UnixListener>,
    path: PathBuf,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn config_error(path: &Path, reason: impl std::fmt::Display) -> NetError {
    NetError::Config(format!("--control {}: {reason}", path.display()))
}

/// Bind the control socket at `path`, mode 0600 from the start. A socket file left by a
/// process that is gone is replaced; one a live server answers on, or any other file,
/// is refused.
pub(crate) fn bind(path: &Path) -> Result<Bound, NetError> {
    use std::os::unix::net::{UnixListener, UnixStream};
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => {
            return Err(config_error(
                path,
                "exists and is not a socket; not replacing it",
            ));
        }
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => {
                return Err(config_error(
                    path,
                    "a running server answers on this socket; not replacing it",
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(|e| config_error(path, e))?;
            }
            Err(e) => return Err(config_error(path, e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(config_error(path, e)),
    }
    // Bound under a temporary name, restricted, then renamed: the socket is never
    // reachable at `path` with wider permissions.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(".tlskit-control-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp).map_err(|e| config_error(path, e))?;
    let placed = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(&tmp, path))
        .and_then(|()| listener.set_nonblocking(true));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(config_error(path, e));
    }
    Ok(Bound {
        listener: Some(listener),
        path: path.to_path_buf(),
    })
}

/// Serve the control socket until the server stops. `reload` asks the signal loop for a
/// reload. Returns the socket (removed when the server drops it).
pub(crate) fn start(
    mut bound: Bound,
    s: Arc<Shared>,
    reload: mpsc::Sender<()>,
    stop: watch::Receiver<bool>,
) -> Result<Bound, NetError> {
    if let Some(l) = bound.listener.take() {
        let l = tokio::net::UnixListener::from_std(l)?;
        tokio::spawn(accept_loop(l, s, reload, stop));
    }
    Ok(bound)
}

async fn accept_loop(
    l: tokio::net::UnixListener,
    s: Arc<Shared>,
    reload: mpsc::Sender<()>,
    mut stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            r = l.accept() => r,
            _ = stop.changed() => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                log::event(Level::Warn, "control_accept_failed", &[("reason", &e)]);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let s = s.clone();
        let reload = reload.clone();
        tokio::spawn(async move {
            handle(stream, &s, &reload).await;
            drop(permit);
        });
    }
}

/// Why a request got an `error` reply instead of its answer.
#[derive(Debug, thiserror::Error)]
enum Refused {
    #[error("cannot read the request: {0}")]
    Read(#[source] std::io::Error),
    #[error("request longer than {MAX_REQUEST} bytes")]
    TooLong,
    #[error("no request line within {} s", REQUEST_DEADLINE.as_secs())]
    NoRequest,
    #[error("the request is not UTF-8 text")]
    NotText,
    #[error("the server is stopping")]
    Stopping,
    #[error("the reload did not report within {} s", RELOAD_WAIT.as_secs())]
    ReloadSilent,
    #[error("{0}: this server has no ACME certificate (serve --acme); nothing to renew")]
    NoAcme(String),
    #[error("{0} is not a name of this server's ACME certificate")]
    NotManaged(String),
    #[error(
        "{0}: the renewal did not end within {1} s; it goes on (`tlskit ctl status` shows \
         the ACME certificate, event=acme_failed in the log a failure)"
    )]
    RenewSilent(String, u64),
    #[error("{0}: the renewal failed: {1}")]
    RenewFailed(String, String),
    #[error("renew NAME SECS: SECS must be a whole number of seconds from 1 to {max}", max = MAX_RENEW_WAIT.as_secs())]
    RenewDeadline,
    #[error("the ACME certificate is no longer listed")]
    NotListed,
}

/// Read one request line: at most [`MAX_REQUEST`] bytes, within [`REQUEST_DEADLINE`].
async fn read_request(stream: &mut UnixStream) -> Result<String, Refused> {
    let mut buf = Vec::with_capacity(64);
    let read = async {
        let mut chunk = [0u8; 256];
        loop {
            let n = stream.read(&mut chunk).await.map_err(Refused::Read)?;
            let got = chunk.get(..n).unwrap_or_default();
            buf.extend_from_slice(got);
            if n == 0 || got.contains(&b'\n') {
                return Ok(());
            }
            if buf.len() > MAX_REQUEST {
                return Err(Refused::TooLong);
            }
        }
    };
    tokio::time::timeout(REQUEST_DEADLINE, read)
        .await
        .map_err(|_| Refused::NoRequest)??;
    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
    if line.len() > MAX_REQUEST {
        return Err(Refused::TooLong);
    }
    String::from_utf8(line.to_vec())
        .map(|l| l.trim().to_string())
        .map_err(|_| Refused::NotText)
}

async fn handle(mut stream: UnixStream, s: &Arc<Shared>, reload: &mpsc::Sender<()>) {
    let reply = match read_request(&mut stream).await {
        Ok(line) => answer(&line, s, reload).await,
        Err(e) => error(e),
    };
    let mut text = serde_json::to_vec(&reply).unwrap_or_else(|_| b"{}".to_vec());
    text.push(b'\n');
    let write = async {
        stream.write_all(&text).await?;
        stream.shutdown().await
    };
    if let Err(e) = tokio::time::timeout(REQUEST_DEADLINE, write)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
    {
        log::event(Level::Debug, "control_reply_failed", &[("reason", &e)]);
    }
}

fn error(reason: impl std::fmt::Display) -> ControlReply {
    ControlReply {
        error: Some(reason.to_string()),
        ..ControlReply::default()
    }
}

async fn answer(line: &str, s: &Arc<Shared>, reload: &mpsc::Sender<()>) -> ControlReply {
    let mut words = line.split_whitespace();
    let cmd = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    match (cmd, args.as_slice()) {
        ("status", []) => ControlReply {
            status: Some(status(s)),
            ..ControlReply::default()
        },
        ("certs", []) => ControlReply {
            certificates: Some(certificates(s)),
            ..ControlReply::default()
        },
        ("reload", []) => match do_reload(s, reload).await {
            Ok(r) => ControlReply {
                reload: Some(r),
                ..ControlReply::default()
            },
            Err(e) => error(e),
        },
        ("renew", [name, rest @ ..]) if rest.len() <= 1 => {
            let wait = match rest.first() {
                None => RENEW_WAIT,
                Some(secs) => match secs.parse::<u64>() {
                    Ok(n) if (1..=MAX_RENEW_WAIT.as_secs()).contains(&n) => Duration::from_secs(n),
                    _ => return error(Refused::RenewDeadline),
                },
            };
            match renew(s, name, wait).await {
                Ok(r) if r.ok => ControlReply {
                    renewed: Some(r.certificate.clone()),
                    renewal: Some(r),
                    ..ControlReply::default()
                },
                Ok(r) => {
                    let why = Refused::RenewFailed(
                        tlskit_x509::text::escape(name).into_owned(),
                        r.reason.clone().unwrap_or_default(),
                    );
                    ControlReply {
                        renewal: Some(r),
                        ..error(why)
                    }
                }
                Err(e) => error(e),
            }
        }
        ("status" | "certs" | "reload" | "renew", _) => error(format!("wrong arguments for {cmd}")),
        _ => error(format!(
            "unknown command {}; expected status, certs, reload or renew NAME",
            tlskit_x509::text::escape(cmd)
        )),
    }
}

/// Ask for a reload and wait for the result of one that started after the request.
async fn do_reload(s: &Arc<Shared>, reload: &mpsc::Sender<()>) -> Result<ReloadResult, Refused> {
    let mut results = s.reloaded.subscribe();
    let asked = Instant::now();
    // A full queue already holds a request: the reload it starts serves this one too.
    if let Err(mpsc::error::TrySendError::Closed(())) = reload.try_send(()) {
        return Err(Refused::Stopping);
    }
    let wait = async {
        loop {
            if let Some(f) = results.borrow_and_update().as_ref() {
                if f.started >= asked {
                    return Ok(f.result.clone());
                }
            }
            if results.changed().await.is_err() {
                return Err(Refused::Stopping);
            }
        }
    };
    tokio::time::timeout(RELOAD_WAIT, wait)
        .await
        .unwrap_or(Err(Refused::ReloadSilent))
}

/// Force an ACME renewal of the certificate for `name` and wait, at most `wait`, for what
/// it came to: the new certificate served, or why the attempt failed.
async fn renew(s: &Shared, name: &str, wait: Duration) -> Result<ControlRenewal, Refused> {
    use crate::optional::RenewalOutcome;
    let shown = tlskit_x509::text::escape(name);
    let Some(a) = &s.acme else {
        return Err(Refused::NoAcme(shown.into_owned()));
    };
    let managed = crate::services::managed(a);
    if !managed.manages(Some(&name.to_ascii_lowercase())) {
        return Err(Refused::NotManaged(shown.into_owned()));
    }
    let request = managed.request_renewal();
    let outcome = match tokio::time::timeout(wait, request.outcome()).await {
        Err(_) => return Err(Refused::RenewSilent(shown.into_owned(), wait.as_secs())),
        Ok(None) => return Err(Refused::Stopping),
        Ok(Some(o)) => o,
    };
    let certificate = certificates(s)
        .into_iter()
        .find(|c| c.source == "acme")
        .ok_or(Refused::NotListed)?;
    #[allow(unreachable_patterns)] // tlskit_acme's outcome is non_exhaustive; the stub's is not
    Ok(match outcome {
        RenewalOutcome::Served { serial, not_after } => ControlRenewal {
            ok: true,
            serial: Some(serial),
            not_after: i64::try_from(not_after).ok(),
            reason: None,
            certificate,
        },
        RenewalOutcome::Failed { reason } => ControlRenewal {
            ok: false,
            serial: None,
            not_after: None,
            reason: Some(reason),
            certificate,
        },
        _ => ControlRenewal {
            ok: false,
            serial: None,
            not_after: None,
            reason: Some("the renewal ended in a way this server cannot tell".to_string()),
            certificate,
        },
    })
}

fn certificates(s: &Shared) -> Vec<ControlCert> {
    let index = s.resolver.current();
    let mut out: Vec<ControlCert> = index
        .served()
        .iter()
        .map(|c| ControlCert {
            source: if c.name == "default" {
                "file"
            } else {
                "sni_dir"
            }
            .to_string(),
            name: c.name.clone(),
            path: Some(c.path.display().to_string()),
            dns_names: c.dns_names.clone(),
            not_after: Some(c.not_after),
            renewal_due: None,
            next_attempt: None,
        })
        .collect();
    if let Some(a) = &s.acme {
        let managed = crate::services::managed(a);
        let current = managed.current();
        let (names, validity) = match &current {
            Some(ck) => crate::certs::leaf_info(ck),
            None => (Vec::new(), None),
        };
        out.push(ControlCert {
            name: "acme".to_string(),
            source: "acme".to_string(),
            path: None,
            dns_names: names,
            not_after: validity.map(|v| v.1),
            renewal_due: s.metrics.acme_renewal_due(),
            next_attempt: managed.next_attempt(),
        });
    }
    out
}

fn status(s: &Shared) -> ControlStatus {
    let client_ca = s.store.as_ref().map(|h| ControlStore {
        generation: h.generation(),
        anchors: u64::try_from(h.current().len()).unwrap_or(u64::MAX),
    });
    let (ticket_keys, fleet_up) = match &s.shared_tickets {
        Some(t) => ("fleet", Some(t.up())),
        None => ("local", None),
    };
    let (ticket_key_age_s, ticket_key_id, ticket_key_source, fleet_last_sync) =
        match &s.shared_tickets {
            Some(t) => {
                let (id, age) = t.current_key();
                let source = if t.key_from_fleet() { "fleet" } else { "local" };
                (Some(age), Some(id), source, t.last_sync())
            }
            None => (
                s.ticket_rotator.as_ref().and_then(|r| r.key_age()),
                None,
                "local",
                None,
            ),
        };
    ControlStatus {
        certificates: certificates(s),
        client_ca,
        ticket_keys: ticket_keys.to_string(),
        fleet_up,
        ticket_key_age_s,
        ticket_key_id,
        ticket_key_source: ticket_key_source.to_string(),
        fleet_last_sync,
        connections_open: u64::try_from(s.metrics.active()).unwrap_or(0),
        last_reload: s.reloaded.borrow().as_ref().map(|f| f.result.clone()),
    }
}
