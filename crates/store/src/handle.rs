//! [`StoreHandle`]: live reload without blocking readers.
//!
//! Readers call [`StoreHandle::current`], an `arc-swap` load: no lock, never blocked by a
//! reload. A reload builds a complete new store off to the side (on the caller's thread,
//! the SIGHUP thread or the watcher thread) and swaps it in with one atomic pointer store,
//! so readers see either the old or the new store, never a half-built one. A reload that
//! loads nothing keeps the last good store and returns the reason. Reloads are serialised
//! by a mutex that readers never touch; each successful swap increments the generation.
//!
//! Besides the generation (every swap), the handle numbers distinct *anchor sets*
//! ([`StoreHandle::anchor_set_generation`]): a swap whose new store holds exactly the
//! anchors of the one it replaces (same SHA-256 fingerprints, in any order) keeps that
//! number. Resumption is bound to it (tlskit_verify's `Generation*` wrappers), so a reload
//! that changes nothing the verifier could decide on does not end every saved session.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::error::{IssueKind, LoadIssue, StoreError};
use crate::source::{load, system_store, LoadReport, Source};
use crate::store::TrustStore;

/// What a successful reload did.
#[derive(Debug, Clone)]
pub struct ReloadOutcome {
    /// Generation of the store now installed.
    pub generation: u64,
    /// The load report of the reload.
    pub report: LoadReport,
    /// Whether the new store's anchor set differs from the one it replaced (false: same
    /// anchors, [`StoreHandle::anchor_set_generation`] kept).
    pub anchors_changed: bool,
}

struct Inner {
    sources: Vec<Source>,
    current: ArcSwap<TrustStore>,
    generation: AtomicU64,
    anchor_set_generation: AtomicU64,
    reload_lock: Mutex<()>,
    last_error: Mutex<Option<String>>,
}

/// Live reload. Readers never block: `current()` is an arc-swap load. Cheap to clone.
#[derive(Clone)]
pub struct StoreHandle {
    inner: Arc<Inner>,
}

/// Called after each background reload (SIGHUP or file change) with its result.
pub type ReloadCallback = Arc<dyn Fn(&Result<ReloadOutcome, StoreError>) + Send + Sync>;

impl StoreHandle {
    /// Load `sources` (generation 1) and return a handle that can reload them.
    pub fn new(sources: Vec<Source>) -> Result<(Self, LoadReport), StoreError> {
        let (store, report) = load(&sources)?;
        Ok((Self::with(store, sources), report))
    }

    fn with(mut store: TrustStore, sources: Vec<Source>) -> Self {
        store.set_generation(1);
        StoreHandle {
            inner: Arc::new(Inner {
                sources,
                current: ArcSwap::from_pointee(store),
                generation: AtomicU64::new(1),
                anchor_set_generation: AtomicU64::new(1),
                reload_lock: Mutex::new(()),
                last_error: Mutex::new(None),
            }),
        }
    }

    /// A handle around a store built elsewhere (reload() then has no sources and fails,
    /// keeping this store; use `replace`).
    pub fn from_store(store: TrustStore) -> Self {
        Self::with(store, Vec::new())
    }

    /// The store now in use. Never blocks.
    pub fn current(&self) -> Arc<TrustStore> {
        self.inner.current.load_full()
    }

    /// Generation of the store now in use.
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    /// Number of the anchor set now in use: 1 at first, +1 for each reload or replace that
    /// installs a store whose anchors (compared by SHA-256 fingerprint, order ignored)
    /// differ from the previous store's. A reload of unchanged sources keeps it.
    pub fn anchor_set_generation(&self) -> u64 {
        self.inner.anchor_set_generation.load(Ordering::Acquire)
    }

    /// Why the last reload failed, if it did (cleared by a successful one).
    pub fn last_error(&self) -> Option<String> {
        self.inner.last_error.lock().map_or(None, |g| g.clone())
    }

    /// Reload from the sources. On failure the last good store stays in use.
    pub fn reload(&self) -> Result<ReloadOutcome, StoreError> {
        let _serial = self
            .inner
            .reload_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let result = if self.inner.sources.is_empty() {
            Err(StoreError::NothingLoadable {
                issues: Vec::new(),
                counts: Default::default(),
            })
        } else {
            load(&self.inner.sources)
        };
        match result {
            Ok((store, mut report)) => {
                // A snapshot's anchors are otherwise checked at first use: a reload checks
                // them all, so a damaged one is reported now (by index and reason), not
                // only refused when a chain needs it.
                let path = store.snapshot_info().map(|(p, _)| p.to_path_buf());
                if let Some(path) = path {
                    for (index, reason) in store.damaged_anchors() {
                        report.push_issue(LoadIssue::at(
                            &path,
                            index.saturating_add(1),
                            IssueKind::CorruptAnchor { index, reason },
                        ));
                    }
                }
                let (generation, anchors_changed) = self.install(store);
                if let Ok(mut g) = self.inner.last_error.lock() {
                    *g = None;
                }
                Ok(ReloadOutcome {
                    generation,
                    report,
                    anchors_changed,
                })
            }
            Err(e) => {
                if let Ok(mut g) = self.inner.last_error.lock() {
                    *g = Some(e.to_string());
                }
                Err(e)
            }
        }
    }

    /// Swap `store` in (callers hold `reload_lock`). Returns the new generation and
    /// whether the anchor set changed.
    fn install(&self, mut store: TrustStore) -> (u64, bool) {
        let g = self.inner.generation.load(Ordering::Acquire) + 1;
        store.set_generation(g);
        let changed = !same_anchors(&self.inner.current.load(), &store);
        self.inner.current.store(Arc::new(store));
        self.inner.generation.store(g, Ordering::Release);
        if changed {
            self.inner
                .anchor_set_generation
                .fetch_add(1, Ordering::AcqRel);
        }
        (g, changed)
    }

    /// Install a store built elsewhere; returns its (new) generation. The anchor-set
    /// generation moves only if the anchors differ.
    pub fn replace(&self, store: TrustStore) -> u64 {
        let _serial = self
            .inner
            .reload_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.install(store).0
    }

    /// Reload on every SIGHUP, on a background thread, until the guard is dropped.
    pub fn reload_on_sighup(
        &self,
        on_reload: Option<ReloadCallback>,
    ) -> Result<BackgroundReload, StoreError> {
        use signal_hook::consts::SIGHUP;
        use signal_hook::iterator::Signals;
        let mut signals = Signals::new([SIGHUP]).map_err(StoreError::watch)?;
        let closer = signals.handle();
        let me = self.clone();
        let thread = std::thread::Builder::new()
            .name("tlskit-sighup".into())
            .spawn(move || {
                for _ in signals.forever() {
                    let r = me.reload();
                    if let Some(cb) = &on_reload {
                        cb(&r);
                    }
                }
            })
            .map_err(StoreError::watch)?;
        Ok(BackgroundReload {
            stop: Some(Box::new(move || closer.close())),
            keep: None,
            thread: Some(thread),
        })
    }

    /// Reload when a watched source changes, once changes have been quiet for `debounce`.
    /// Watches each directory source and each file source's parent directory (so atomic
    /// replacement by rename is seen).
    pub fn watch_sources(
        &self,
        debounce: Duration,
        on_reload: Option<ReloadCallback>,
    ) -> Result<BackgroundReload, StoreError> {
        use notify::{RecursiveMode, Watcher};
        let (tx, rx) = mpsc::channel::<()>();
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if ev.is_ok_and(|e| !e.kind.is_access()) {
                let _ = tx.send(());
            }
        })
        .map_err(StoreError::watch)?;
        let mut dirs: Vec<PathBuf> = Vec::new();
        for s in &self.inner.sources {
            let expanded = match s {
                Source::System => system_store().map(|s| s.sources).unwrap_or_default(),
                other => vec![other.clone()],
            };
            for s in expanded {
                match s {
                    Source::Dir(p) => dirs.push(p),
                    Source::File(p) | Source::Snapshot(p) => {
                        let abs = std::path::absolute(&p).unwrap_or(p);
                        if let Some(parent) = abs.parent() {
                            dirs.push(parent.to_path_buf());
                        }
                    }
                    Source::System => {}
                }
            }
        }
        dirs.sort();
        dirs.dedup();
        for d in &dirs {
            watcher
                .watch(d, RecursiveMode::NonRecursive)
                .map_err(|e| StoreError::Watch {
                    dir: Some(d.clone()),
                    source: Box::new(e),
                })?;
        }
        let me = self.clone();
        let thread = std::thread::Builder::new()
            .name("tlskit-watch".into())
            .spawn(move || {
                while rx.recv().is_ok() {
                    // Debounce: wait until no event arrives for `debounce`.
                    loop {
                        match rx.recv_timeout(debounce) {
                            Ok(()) => continue,
                            Err(mpsc::RecvTimeoutError::Timeout) => break,
                            Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    let r = me.reload();
                    if let Some(cb) = &on_reload {
                        cb(&r);
                    }
                }
            })
            .map_err(StoreError::watch)?;
        Ok(BackgroundReload {
            stop: None,
            keep: Some(Box::new(watcher)),
            thread: Some(thread),
        })
    }
}

/// Whether two stores hold the same anchors (by SHA-256 fingerprint; fingerprints are
/// unique within a store, so equal counts and inclusion mean equal sets). O(N) hash
/// lookups, on the reloading thread only.
fn same_anchors(old: &TrustStore, new: &TrustStore) -> bool {
    if old.len() != new.len() {
        // Different sizes: changed, without touching (or integrity-checking) any anchor.
        return false;
    }
    // Recorded fingerprints only: a snapshot store reads no anchor's DER for this (the
    // reload checked every anchor of `new` just before; `old` is about to be replaced).
    let (o, n) = (old.core(), new.core());
    let mut count = 0usize;
    for sha in n.fingerprints() {
        if !o.has_fingerprint(&sha) {
            return false;
        }
        count += 1;
    }
    count == o.fingerprints().count()
}

/// A background reloader (SIGHUP listener or source watcher). Dropping it stops it and
/// waits for its thread (after any reload in progress).
pub struct BackgroundReload {
    stop: Option<Box<dyn FnOnce() + Send>>,
    /// The file watcher; dropping it closes the event channel, which ends the thread.
    keep: Option<Box<dyn Send>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for BackgroundReload {
    fn drop(&mut self) {
        drop(self.keep.take());
        if let Some(stop) = self.stop.take() {
            stop();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
