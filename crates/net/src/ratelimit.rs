//! Per-source rate limit of the failed-handshake log lines: one client that fails
//! handshakes as fast as it can (33,321 lines, 4.5 MB in 5 s before this) gets at most
//! [`BURST`] lines at once and then one every [`REFILL`]; what is left out is counted and
//! reported in one summary line per source (`event=handshake_failures_suppressed
//! peer=IP count=N`), at the source's next allowed line or by the periodic sweep.
//!
//! The map holds at most [`MAX_SOURCES`] addresses; when it is full, new addresses share
//! one bucket (logged as `peer=other`), so a spoofing flood costs bounded memory and still
//! bounded lines. Metrics count every failure whatever is logged.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines a source may log at once.
pub(crate) const BURST: u32 = 5;
/// One more line allowed per this much time.
pub(crate) const REFILL: Duration = Duration::from_secs(10);
/// Sources tracked one by one.
pub(crate) const MAX_SOURCES: usize = 4096;

#[derive(Debug)]
struct Bucket {
    tokens: u32,
    last: Instant,
    suppressed: u64,
}

/// What to do with one failure line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Log it; `suppressed` lines were left out before it.
    Log { suppressed: u64 },
    /// Leave it out (counted).
    Drop,
}

/// The limiter: a token bucket per source address in a bounded map.
#[derive(Debug, Default)]
pub(crate) struct LogLimiter {
    map: Mutex<HashMap<Option<IpAddr>, Bucket>>,
}

impl LogLimiter {
    /// One failure from `ip` at `now`.
    pub(crate) fn check(&self, ip: IpAddr, now: Instant) -> Verdict {
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
            b.suppressed += 1;
            return Verdict::Drop;
        }
        b.tokens -= 1;
        let suppressed = std::mem::take(&mut b.suppressed);
        Verdict::Log { suppressed }
    }

    /// Forget sources whose bucket is full again, returning the suppressed counts not yet
    /// reported (source `None`: the shared bucket of sources over [`MAX_SOURCES`]).
    pub(crate) fn sweep(&self, now: Instant) -> Vec<(Option<IpAddr>, u64)> {
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
}
