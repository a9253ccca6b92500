//! Log volume bounds, per source and across all sources.
//!
//! Per source: the failed-handshake log lines. One client that fails handshakes as fast
//! as it can (33,321 lines, 4.5 MB in 5 s before this) gets at most [`BURST`] lines at
//! once and then one every [`REFILL`]; what is left out is counted and reported in a
//! summary line per source (`event=handshake_failures_suppressed peer=IP count=N`), at the
//! source's next allowed line or by the periodic sweep, which writes at most
//! [`MAX_SOURCE_SUMMARIES`] such lines and folds the other sources into one
//! (`peer=other sources=N`).
//!
//! The map holds at most [`MAX_SOURCES`] addresses; when it is full, new addresses share
//! one bucket (logged as `peer=other`), so a spoofing flood costs bounded memory and still
//! bounded lines.
//!
//! Across all sources (issue #27: 5,000 sources made 820 lines/s and 4,097-line summary
//! bursts every 10 s; a token that went away logged once per handshake): every
//! per-connection event ([`Noisy`]) has one token bucket for the whole process,
//! [`GLOBAL_BURST`] lines at once and one more every [`GLOBAL_REFILL`]. A line left out
//! is counted in `tlskit_log_lines_suppressed_total{event=...}` and in one summary line
//! per event and sweep (`event=log_lines_suppressed for=EVENT count=N`). Metrics count
//! every failure whatever is logged.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines a source may log at once.
pub const BURST: u32 = 5;
/// One more line allowed per this much time.
pub const REFILL: Duration = Duration::from_secs(10);
/// Sources tracked one by one.
pub const MAX_SOURCES: usize = 4096;

/// Per-source summary lines written by one sweep; the other sources are folded into one.
pub const MAX_SOURCE_SUMMARIES: usize = 8;
/// Lines of one event the whole process may log at once.
pub const GLOBAL_BURST: u32 = 20;
/// One more line of that event allowed per this much time (5 lines/s sustained).
pub const GLOBAL_REFILL: Duration = Duration::from_millis(200);

/// The per-connection events whose volume a peer (or a failing token) controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Noisy {
    /// `handshake_failed` and `handshake_timeout`.
    HandshakeFailed,
    /// `connection_limit`.
    ConnectionLimit,
    /// `pkcs11_unavailable` (once per handshake while the token is gone).
    Pkcs11Unavailable,
    /// `renegotiation_refused`.
    Renegotiation,
    /// `backend_unreachable`.
    BackendUnreachable,
    /// `socket_options` and `accept_failed`.
    Socket,
    /// `acme_tlsalpn01_answered` and `acme_http01_answered`.
    AcmeChallenge,
}

impl Noisy {
    /// Every event, in the order of the metric's lines.
    pub const ALL: [Self; 7] = [
        Self::HandshakeFailed,
        Self::ConnectionLimit,
        Self::Pkcs11Unavailable,
        Self::Renegotiation,
        Self::BackendUnreachable,
        Self::Socket,
        Self::AcmeChallenge,
    ];
    /// The `event` label of `tlskit_log_lines_suppressed_total` and the `for=` of the
    /// summary line.
    pub fn label(self) -> &'static str {
        match self {
            Self::HandshakeFailed => "handshake_failed",
            Self::ConnectionLimit => "connection_limit",
            Self::Pkcs11Unavailable => "pkcs11_unavailable",
            Self::Renegotiation => "renegotiation_refused",
            Self::BackendUnreachable => "backend_unreachable",
            Self::Socket => "socket",
            Self::AcmeChallenge => "acme_challenge_answered",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// One event's bucket across all sources.
#[derive(Debug)]
struct Global {
    tokens: u32,
    /// When the bucket last earned a token (or was full); `None` before first use.
    last: Option<Instant>,
    /// Left out since the last summary line.
    unreported: u64,
}

/// The process-wide buckets and suppressed counts, one per [`Noisy`] event.
#[derive(Debug)]
pub struct GlobalLimiter {
    buckets: [Mutex<Global>; Noisy::ALL.len()],
    suppressed: [AtomicU64; Noisy::ALL.len()],
}

impl Default for GlobalLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl GlobalLimiter {
    /// Full buckets and no line suppressed (a `const fn`, for [`GLOBAL`]).
    #[allow(clippy::declare_interior_mutable_const)]
    pub(crate) const fn new() -> Self {
        const G: Mutex<Global> = Mutex::new(Global {
            tokens: GLOBAL_BURST,
            last: None,
            unreported: 0,
        });
        const Z: AtomicU64 = AtomicU64::new(0);
        Self {
            buckets: [G; Noisy::ALL.len()],
            suppressed: [Z; Noisy::ALL.len()],
        }
    }

    /// Whether one more line of `ev` may be logged at `now`. A line refused is counted
    /// once in the metric; the summary line reports it with the `carried` lines it would
    /// have reported (a per-source `suppressed=N`, already counted in the metric).
    pub fn allow(&self, ev: Noisy, now: Instant, carried: u64) -> bool {
        let Ok(mut g) = self.buckets[ev.index()].lock() else {
            return true;
        };
        let last = *g.last.get_or_insert(now);
        let step = GLOBAL_REFILL.as_nanos();
        let earned = now.saturating_duration_since(last).as_nanos() / step;
        if earned > 0 {
            let earned = u32::try_from(earned).unwrap_or(u32::MAX);
            g.tokens = g.tokens.saturating_add(earned).min(GLOBAL_BURST);
            // Keep the fraction of a token already earned, unless the bucket is full.
            g.last = Some(if g.tokens == GLOBAL_BURST {
                now
            } else {
                last + GLOBAL_REFILL * earned
            });
        }
        if g.tokens == 0 {
            g.unreported = g.unreported.saturating_add(carried.saturating_add(1));
            self.suppressed[ev.index()].fetch_add(1, Relaxed);
            return false;
        }
        g.tokens -= 1;
        true
    }

    /// A line of `ev` left out by a per-source limit (counted, not summarised again:
    /// the per-source summary reports it).
    pub fn count_suppressed(&self, ev: Noisy) {
        self.suppressed[ev.index()].fetch_add(1, Relaxed);
    }

    /// Lines of `ev` left out so far, by either limit.
    pub fn suppressed(&self, ev: Noisy) -> u64 {
        self.suppressed[ev.index()].load(Relaxed)
    }

    /// The events with lines left out by the global limit since the last call, and how
    /// many (for the summary lines).
    pub fn take_unreported(&self) -> Vec<(Noisy, u64)> {
        Noisy::ALL
            .iter()
            .filter_map(|&ev| {
                let mut g = self.buckets[ev.index()].lock().ok()?;
                let n = std::mem::take(&mut g.unreported);
                (n > 0).then_some((ev, n))
            })
            .collect()
    }
}

/// The process's global limiter (the token-key check that logs `pkcs11_unavailable`
/// has no server at hand, so the buckets are the process's, like the log itself).
pub static GLOBAL: GlobalLimiter = GlobalLimiter::new();

/// Log `name` as [`crate::log::event`] does, within `ev`'s global bucket.
pub fn event(
    ev: Noisy,
    level: crate::log::Level,
    name: &str,
    fields: &[(&str, &dyn std::fmt::Display)],
) {
    if !crate::log::enabled(level) {
        return;
    }
    if GLOBAL.allow(ev, Instant::now(), 0) {
        crate::log::event(level, name, fields);
    }
}

/// Lines a source's bucket left out (`None`: the shared bucket past [`MAX_SOURCES`]).
pub type SourceCount = (Option<IpAddr>, u64);

/// Per-source summaries: the [`MAX_SOURCE_SUMMARIES`] largest counts, and the rest
/// folded into one `(sources, count)`.
pub fn fold_summaries(mut all: Vec<SourceCount>) -> (Vec<SourceCount>, Option<(usize, u64)>) {
    all.sort_by_key(|b| std::cmp::Reverse(b.1));
    if all.len() <= MAX_SOURCE_SUMMARIES {
        return (all, None);
    }
    let rest = all.split_off(MAX_SOURCE_SUMMARIES);
    let count = rest.iter().fold(0u64, |n, (_, c)| n.saturating_add(*c));
    (all, Some((rest.len(), count)))
}

#[derive(Debug)]
struct Bucket {
    tokens: u32,
    last: Instant,
    suppressed: u64,
}

/// What to do with one failure line: log it or leave it out, and nothing else (so not
/// `#[non_exhaustive]`).
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Log it; `suppressed` lines were left out before it.
    Log {
        /// Lines of this source left out since the last one logged.
        suppressed: u64,
    },
    /// Leave it out (counted).
    Drop,
}

/// The limiter: a token bucket per source address in a bounded map.
#[derive(Debug, Default)]
pub struct LogLimiter {
    map: Mutex<HashMap<Option<IpAddr>, Bucket>>,
}

impl LogLimiter {
    /// One failure from `ip` at `now`.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Verdict {
        let Ok(mut map) = self.map.lock() else {
            return Verdict::Log { suppressed: 0 };
        };
        let key = if map.contains_key(&Some(ip)) || map.len() < MAX_SOURCES {
            Some(ip)
        } else {
            None
        };
        let b = map.entry(key).or_insert(Bucket {
            tokens: BURST,
            last: now,
            suppressed: 0,
        });
        let earned = now.saturating_duration_since(b.last).as_nanos() / REFILL.as_nanos();
        if earned > 0 {
            b.tokens = b
                .tokens
                .saturating_add(earned.min(u128::from(BURST)) as u32)
                .min(BURST);
            b.last = now;
        }
        if b.tokens == 0 {
            b.suppressed = b.suppressed.saturating_add(1);
            return Verdict::Drop;
        }
        b.tokens -= 1;
        let suppressed = std::mem::take(&mut b.suppressed);
        Verdict::Log { suppressed }
    }

    /// Forget sources whose bucket is full again, returning the suppressed counts not yet
    /// reported (source `None`: the shared bucket of sources over [`MAX_SOURCES`]).
    pub fn sweep(&self, now: Instant) -> Vec<(Option<IpAddr>, u64)> {
        let Ok(mut map) = self.map.lock() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        map.retain(|ip, b| {
            if b.suppressed > 0 {
                out.push((*ip, std::mem::take(&mut b.suppressed)));
            }
            // Idle long enough to have refilled: nothing to remember.
            now.saturating_duration_since(b.last) < REFILL * BURST
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill_and_summary() {
        let l = LogLimiter::default();
        let ip: IpAddr = [192, 0, 2, 1].into();
        let t = Instant::now();
        for _ in 0..BURST {
            assert_eq!(l.check(ip, t), Verdict::Log { suppressed: 0 });
        }
        for _ in 0..1000 {
            assert_eq!(l.check(ip, t), Verdict::Drop);
        }
        // Another source is not affected.
        assert_eq!(
            l.check([192, 0, 2, 2].into(), t),
            Verdict::Log { suppressed: 0 }
        );
        assert_eq!(l.check(ip, t + REFILL), Verdict::Log { suppressed: 1000 });
        assert_eq!(l.check(ip, t + REFILL), Verdict::Drop);
        assert_eq!(l.sweep(t + REFILL), vec![(Some(ip), 1)]);
        assert!(l.sweep(t + REFILL * (BURST + 2)).is_empty());
        assert!(l.map.lock().map(|m| m.is_empty()).unwrap_or(false));
    }

    #[test]
    fn bounded_map() {
        let l = LogLimiter::default();
        let t = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 100) {
            let _ = l.check(IpAddr::from(i.to_be_bytes()), t);
        }
        assert_eq!(l.map.lock().map(|m| m.len()).unwrap_or(0), MAX_SOURCES + 1);
    }

    #[test]
    fn global_bucket_bounds_every_source_together() {
        let g = GlobalLimiter::new();
        let t = Instant::now();
        // 5,000 sources, each within its own per-source burst, all at once.
        let logged = (0..5000)
            .filter(|_| g.allow(Noisy::HandshakeFailed, t, 0))
            .count();
        assert_eq!(logged, GLOBAL_BURST as usize);
        assert_eq!(
            g.suppressed(Noisy::HandshakeFailed),
            5000 - u64::from(GLOBAL_BURST)
        );
        // Another event has its own bucket.
        assert!(g.allow(Noisy::Pkcs11Unavailable, t, 0));
        // Ten seconds of flood: one line per GLOBAL_REFILL, whatever the attempts.
        let mut logged = 0;
        for ms in 1..=10_000u64 {
            let now = t + Duration::from_millis(ms);
            logged += (0..10)
                .filter(|_| g.allow(Noisy::HandshakeFailed, now, 0))
                .count();
        }
        assert_eq!(logged, 50, "5 lines/s over 10 s");
        let summary = g.take_unreported();
        assert_eq!(summary.len(), 1, "{summary:?}");
        assert_eq!(summary[0].0, Noisy::HandshakeFailed);
        assert_eq!(summary[0].1, 5000 - 20 + 100_000 - 50);
        assert!(g.take_unreported().is_empty());
        // A per-source summary the global limit refuses is reported in its summary.
        assert!(!g.allow(Noisy::HandshakeFailed, t + Duration::from_millis(10_000), 7));
        assert_eq!(g.take_unreported(), vec![(Noisy::HandshakeFailed, 8)]);
        // Idle: the bucket fills up to the burst, no more.
        let later = t + Duration::from_secs(3600);
        let logged = (0..100)
            .filter(|_| g.allow(Noisy::HandshakeFailed, later, 0))
            .count();
        assert_eq!(logged, GLOBAL_BURST as usize);
    }

    #[test]
    fn source_summaries_are_folded() {
        let all: Vec<(Option<IpAddr>, u64)> = (0..5000u32)
            .map(|i| {
                (
                    Some(IpAddr::from((0x7f00_0000 | i).to_be_bytes())),
                    u64::from(i % 7),
                )
            })
            .collect();
        let total: u64 = all.iter().map(|(_, c)| c).sum();
        let (each, rest) = fold_summaries(all);
        assert_eq!(each.len(), MAX_SOURCE_SUMMARIES);
        assert!(each.iter().all(|(_, c)| *c == 6));
        let Some((sources, count)) = rest else {
            panic!("the rest is folded");
        };
        assert_eq!(sources, 5000 - MAX_SOURCE_SUMMARIES);
        assert_eq!(count + 6 * MAX_SOURCE_SUMMARIES as u64, total);
        let few = vec![(None, 3)];
        assert_eq!(fold_summaries(few.clone()), (few, None));
    }
}
