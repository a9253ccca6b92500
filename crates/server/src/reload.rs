//! Reloads: the certificates, the SNI directory and the client-CA store read again on
//! SIGHUP or a file change, on one long-lived reload thread, one at a time, under a
//! deadline; what is serving stays until a new set is complete.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tlskit_store::Source;
use tlskit_tls::log::{self, Level};

use crate::certs::CertIndex;
use crate::config::ServeConfig;
use crate::state::{default_pair, ReloadError, Shared};

/// Quiet time after the last file change before reloading.
pub(crate) const WATCH_DEBOUNCE: Duration = Duration::from_millis(250);

/// How long one reload may take before it is given up (logged as failed, what is serving
/// kept; the next request starts a fresh one). Files are opened non-blocking and only
/// regular files are read, so only a file system that stops answering (a dead NFS
/// server) can make a reload this slow.
pub const RELOAD_DEADLINE: Duration = Duration::from_secs(30);

/// Most `client_ca_skipped` lines one reload logs (the rest are only counted in the
/// store's report).
const MAX_SKIPPED_LOGGED: usize = 20;

/// Most reloads alive at once, counting ones given up after [`RELOAD_DEADLINE`] whose
/// thread is still blocked; further requests are refused (logged) until one ends.
const MAX_RELOAD_THREADS: usize = 4;

/// Decrements the count of live reload threads when dropped.
struct AliveGuard(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A reload's work, run on the reload thread.
type ReloadJob = Box<dyn FnOnce() + Send>;

/// The thread reloads run on: one long-lived thread, not the blocking pool. glibc gives
/// each thread an allocator arena and keeps freed memory in it; reloads spread over
/// the blocking pool's threads left a freed SNI index in each of their arenas (RSS 65 ->
/// 169 MB over 55 reloads of 20,000 pairs). On one thread every reload reuses the memory
/// the previous one freed (crates/server/README.md, "Memory over reloads").
pub(crate) fn reload_thread() -> Option<std::sync::mpsc::Sender<ReloadJob>> {
    let (tx, rx) = std::sync::mpsc::channel::<ReloadJob>();
    // Inside the runtime, as a blocking-pool thread is (for code that asks for it).
    let rt = tokio::runtime::Handle::try_current().ok();
    std::thread::Builder::new()
        .name("tlskit-reload".into())
        .spawn(move || {
            let _rt = rt.as_ref().map(|h| h.enter());
            // Ends when the server drops the sender (a reload given up on, or shutdown).
            while let Ok(job) = rx.recv() {
                job();
            }
        })
        .ok()?;
    Some(tx)
}

/// Reloads in flight, seen from the signal loop: at most one running, requests meanwhile
/// merged into one pending, a deadline per reload, a bound on threads left blocked.
pub(crate) struct Reloads {
    /// The reload running now (its end signalled by the channel: a value, or the sender
    /// dropped by a panic) and when it is overdue.
    pub(crate) running: Option<(tokio::sync::oneshot::Receiver<()>, tokio::time::Instant)>,
    /// The reload thread, while it is not held by a reload given up on.
    pub(crate) thread: Option<std::sync::mpsc::Sender<ReloadJob>>,
    /// A request that came while one was running: started when it ends.
    pub(crate) pending: Option<&'static str>,
    /// Reload threads alive (the running one and any given up but still blocked).
    pub(crate) alive: Arc<std::sync::atomic::AtomicUsize>,
    pub(crate) deadline: Duration,
}

/// What [`Reloads::request`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Requested {
    Started,
    /// Merged into the request that runs when the current reload ends.
    Queued,
    /// This many reload threads are alive (blocked): none started.
    Refused(usize),
}

impl Reloads {
    pub(crate) fn new(deadline: Duration) -> Self {
        Reloads {
            running: None,
            thread: None,
            pending: None,
            alive: Arc::default(),
            deadline,
        }
    }

    /// Start a reload (`work` on the reload thread) unless one is running or too many
    /// threads are blocked.
    pub(crate) fn request(
        &mut self,
        cause: &'static str,
        work: impl FnOnce(&'static str) + Send + 'static,
    ) -> Requested {
        if self.running.is_some() {
            self.pending = Some(cause);
            return Requested::Queued;
        }
        let alive = self.alive.load(Ordering::Acquire);
        if alive >= MAX_RELOAD_THREADS {
            return Requested::Refused(alive);
        }
        self.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(self.alive.clone());
        let (done, finished) = tokio::sync::oneshot::channel();
        let mut job: ReloadJob = Box::new(move || {
            // Counted down however the reload ends (a panic included).
            let _alive = guard;
            work(cause);
            let _ = done.send(());
        });
        // The reload thread, or a new one when there is none (first use, the last one
        // held by a reload given up on, or ended by a panic).
        for _ in 0..2 {
            let Some(tx) = self.thread.take().or_else(reload_thread) else {
                break;
            };
            match tx.send(job) {
                Ok(()) => {
                    self.thread = Some(tx);
                    self.running = Some((finished, tokio::time::Instant::now() + self.deadline));
                    return Requested::Started;
                }
                Err(std::sync::mpsc::SendError(back)) => job = back,
            }
        }
        // No thread could be started: the job is dropped (its guard counts it down).
        drop(job);
        Requested::Refused(self.alive.load(Ordering::Acquire))
    }

    /// Resolves when the running reload ends (never when none runs).
    pub(crate) async fn finished(&mut self) {
        match &mut self.running {
            Some((finished, _)) => {
                let _ = finished.await;
            }
            None => std::future::pending().await,
        }
    }

    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.running.as_ref().map(|r| r.1)
    }

    /// The running reload ended: the pending request to start now, if any.
    pub(crate) fn done(&mut self) -> Option<&'static str> {
        self.running = None;
        self.pending.take()
    }

    /// The running reload passed its deadline: detached, not stopped (a thread blocked in
    /// the kernel cannot be). Returns the pending request to start now, if any.
    pub(crate) fn overdue(&mut self) -> Option<&'static str> {
        self.running = None;
        // That thread is held by the reload given up on; the next one gets a new thread
        // (the old one ends when its reload does: its sender is dropped here).
        self.thread = None;
        self.pending.take()
    }
}

/// Start a reload for `cause` (or queue it), logging a refusal.
pub(crate) fn start_reload(reloads: &mut Reloads, s: &Arc<Shared>, cause: &'static str) {
    let s2 = s.clone();
    let r = reloads.request(cause, move |cause| {
        let seq = s2.reload_seq.fetch_add(1, Ordering::AcqRel) + 1;
        reload(&s2, cause, seq)
    });
    if let Requested::Refused(alive) = r {
        s.metrics.reload(false);
        let reason = format!("{alive} earlier reloads are still blocked; not starting another");
        log::event(
            Level::Error,
            "reload_failed",
            &[("what", &"all"), ("cause", &cause), ("reason", &reason)],
        );
        s.reload_finished(
            Instant::now(),
            cause,
            vec![ReloadError::new("all", None, reason)],
        );
    }
}

/// The running reload passed [`RELOAD_DEADLINE`]: log it, make sure its late result is
/// discarded, and start what was pending.
pub(crate) fn reload_overdue(reloads: &mut Reloads, s: &Arc<Shared>) {
    // When the reload given up on started (a control request made after it waits on).
    let started = reloads
        .deadline()
        .and_then(|d| d.into_std().checked_sub(reloads.deadline))
        .unwrap_or_else(Instant::now);
    let pending = reloads.overdue();
    // A late result must not be installed: a reload installs only while `reload_seq` is
    // still its own number.
    s.reload_seq.fetch_add(1, Ordering::AcqRel);
    s.metrics.reload(false);
    let reason = format!(
        "did not finish within {} s; given up, serving what was loaded before",
        reloads.deadline.as_secs()
    );
    log::event(
        Level::Error,
        "reload_failed",
        &[("what", &"all"), ("reason", &reason)],
    );
    s.reload_finished(started, "", vec![ReloadError::new("all", None, reason)]);
    if let Some(cause) = pending {
        start_reload(reloads, s, cause);
    }
}

/// Watch the directories holding the configured files (so atomic replacement by rename
/// is seen) and report changes to the files themselves, the SNI directory and client-CA
/// directories.
pub(crate) fn watch_files(
    cfg: &ServeConfig,
    tx: tokio::sync::mpsc::UnboundedSender<()>,
) -> Result<notify::RecommendedWatcher, notify::Error> {
    use notify::{RecursiveMode, Watcher};
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut files: Vec<PathBuf> = match default_pair(cfg) {
        Some((c, k)) => {
            let mut v = vec![abs(c)];
            // A pkcs11: URI is no file to watch (SIGHUP re-opens the token).
            if !k.to_str().is_some_and(tlskit_pkcs11::is_uri) {
                v.push(abs(k));
            }
            v
        }
        None => Vec::new(),
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = &cfg.sni_dir {
        dirs.push(abs(d));
    }
    for s in &cfg.client_ca {
        match s {
            Source::Dir(p) => dirs.push(abs(p)),
            Source::File(p) | Source::Snapshot(p) => files.push(abs(p)),
            Source::System => {}
        }
    }
    let mut watch_dirs: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(|p| p.to_path_buf()))
        .collect();
    watch_dirs.extend(dirs.iter().cloned());
    watch_dirs.sort();
    watch_dirs.dedup();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        let Ok(ev) = ev else { return };
        if ev.kind.is_access() {
            return;
        }
        let relevant = ev
            .paths
            .iter()
            .any(|p| files.iter().any(|f| f == p) || dirs.iter().any(|d| p.starts_with(d)));
        if relevant {
            let _ = tx.send(());
        }
    })?;
    for d in &watch_dirs {
        watcher.watch(d, RecursiveMode::NonRecursive)?;
    }
    Ok(watcher)
}

/// Reload certificates (and the client-CA store). A failure keeps what was serving.
/// `seq`: this reload's number; its certificates are installed only if no later reload
/// started meanwhile (one given up after [`RELOAD_DEADLINE`] must not win late).
fn reload(s: &Shared, cause: &str, seq: u64) {
    let t = Instant::now();
    let certs =
        CertIndex::load_optional(default_pair(&s.cfg), s.cfg.sni_dir.as_deref(), &s.provider);
    let mut errors = Vec::new();
    match certs {
        Ok((index, issues)) => {
            for i in &issues {
                log::event(
                    Level::Warn,
                    "sni_pair_skipped",
                    &[("path", &i.path.display()), ("reason", &i.reason)],
                );
            }
            log::event(
                Level::Info,
                "certificates_loaded",
                &[("pairs", &index.pairs()), ("names", &index.names())],
            );
            if s.reload_seq.load(Ordering::Acquire) == seq {
                crate::metrics::certificates_loaded(
                    &s.metrics,
                    &index,
                    s.cfg.expiry_warning_days,
                    &*s.clock,
                );
                // Compressed before the new chains are served (this runs off the
                // handshake path, under the reload deadline). The ACME certificate is
                // served too: listed, so its compressed messages are kept.
                let mut chains = index.chains();
                chains.extend(
                    s.acme
                        .as_ref()
                        .and_then(|a| crate::services::managed(a).current()),
                );
                tlskit_tls::compress::warm_now(&chains, &s.cfg.compress);
                s.resolver.replace(index);
            }
        }
        Err(e) => {
            log::event(
                Level::Error,
                "reload_failed",
                &[("what", &"certificates"), ("reason", &e)],
            );
            let (path, reason) = match &e {
                tlskit_tls::NetError::File { path, reason } => {
                    (Some(path.display().to_string()), reason.clone())
                }
                tlskit_tls::NetError::KeyMismatch { key, .. } => {
                    (Some(key.display().to_string()), e.to_string())
                }
                _ => (None, e.to_string()),
            };
            errors.push(ReloadError::new("certificates", path, reason));
        }
    }
    let mut anchors_changed = false;
    let mut anchors_damaged = 0usize;
    if let Some(store) = &s.store {
        match store.reload() {
            // A reload that finds exactly the same anchors keeps the anchor-set generation
            // that resumption is bound to: saved sessions stay valid.
            Ok(out) => {
                // What was skipped, as at start (a damaged file among good ones).
                for e in out.report.errors.iter().take(MAX_SKIPPED_LOGGED) {
                    log::event(
                        Level::Warn,
                        "client_ca_skipped",
                        &[("path", &e.path.display()), ("reason", &e.reason)],
                    );
                }
                anchors_changed = out.anchors_changed;
                anchors_damaged = out
                    .report
                    .error_counts
                    .get(tlskit_x509::LintCode::CorruptAnchor.as_str())
                    .copied()
                    .unwrap_or(0);
            }
            Err(e) => {
                log::event(
                    Level::Error,
                    "reload_failed",
                    &[("what", &"client_ca"), ("reason", &e)],
                );
                errors.push(ReloadError::new("client_ca", None, e.to_string()));
            }
        }
    }
    let ok = errors.is_empty();
    s.metrics.reload(ok);
    let generation = s.store.as_ref().map(|h| h.generation()).unwrap_or(0);
    let ms = format!("{:.1}", t.elapsed().as_secs_f64() * 1e3);
    let mut fields: Vec<(&str, &dyn std::fmt::Display)> = vec![
        ("ok", &ok),
        ("cause", &cause),
        ("store_generation", &generation),
        ("anchors_changed", &anchors_changed),
    ];
    // Damaged snapshot anchors (each named in a client_ca_skipped line above): the
    // reload succeeded, but not with every anchor.
    if anchors_damaged > 0 {
        fields.push(("anchors_damaged", &anchors_damaged));
    }
    fields.push(("ms", &ms));
    log::event(Level::Info, "reloaded", &fields);
    // Recorded only while still the latest reload (one given up on was answered then).
    if s.reload_seq.load(Ordering::Acquire) == seq {
        s.reload_finished(t, cause, errors);
    }
}

#[cfg(test)]
mod reload_tests {
    use super::*;

    /// One reload at a time, requests meanwhile merged into one, a deadline after which a
    /// blocked reload is left behind, and a bound on how many are left behind.
    #[test]
    fn reloads_coalesce_time_out_and_are_bounded() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(async {
            let mut r = Reloads::new(Duration::from_millis(50));
            // Each reload blocks until released (a stuck file system).
            let (release, gate) = std::sync::mpsc::channel::<()>();
            let gate = Arc::new(std::sync::Mutex::new(gate));
            let stuck = |gate: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>| {
                move |_: &'static str| {
                    let _ = gate.lock().map(|g| g.recv());
                }
            };
            assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Started);
            assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Queued);
            assert_eq!(
                r.request("file_change", stuck(gate.clone())),
                Requested::Queued
            );
            // Not finished before its deadline; the deadline fires.
            let at = r.deadline().unwrap_or_else(|| panic!("no deadline"));
            tokio::select! {
                _ = r.finished() => panic!("a blocked reload finished"),
                _ = tokio::time::sleep_until(at) => {}
            }
            assert_eq!(r.overdue(), Some("file_change"));
            assert!(r.deadline().is_none());
            // Left-behind reloads count against the bound.
            for _ in 1..MAX_RELOAD_THREADS {
                assert_eq!(r.request("sighup", stuck(gate.clone())), Requested::Started);
                assert_eq!(r.overdue(), None);
            }
            assert_eq!(
                r.request("sighup", stuck(gate.clone())),
                Requested::Refused(MAX_RELOAD_THREADS)
            );
            // Once they end, reloads start again and finish.
            for _ in 0..MAX_RELOAD_THREADS {
                let _ = release.send(());
            }
            let t = Instant::now();
            while r.alive.load(Ordering::Acquire) > 0 {
                assert!(t.elapsed() < Duration::from_secs(10));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(r.request("sighup", |_| {}), Requested::Started);
            tokio::time::timeout(Duration::from_secs(10), r.finished())
                .await
                .unwrap_or_else(|_| panic!("a quick reload did not finish"));
            assert_eq!(r.done(), None);
        });
    }
}
