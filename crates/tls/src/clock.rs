//! The time the terminator, the fleet and the ACME manager read: a [`Clock`] they are
//! given, so that what depends on time passing (ticket-key rotation and the two-period
//! ticket age limit, certificate expiry warnings, renewal due times, backoff and spacing)
//! is tested by moving a [`ManualClock`] instead of waiting.
//!
//! [`SystemClock`] is the default everywhere. Waits on tokio timers are not the clock's:
//! tests drive those with tokio's paused time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::pki_types::UnixTime;

/// Where "now" comes from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The wall-clock time (certificate validity, ticket issue times, renewal due times).
    fn now(&self) -> SystemTime;
    /// A monotonic instant (how long since something happened in this process).
    fn instant(&self) -> Instant;

    /// [`Clock::now`] in whole seconds since the Unix epoch (0 before it).
    fn unix_secs(&self) -> u64 {
        self.now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// The operating system's clocks: [`SystemTime::now`] and [`Instant::now`].
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
    fn instant(&self) -> Instant {
        Instant::now()
    }
}

/// The default clock, shared: [`SystemClock`].
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that moves only when told: [`ManualClock::advance`] moves both the wall clock
/// and the monotonic one; [`ManualClock::set_wall`] makes the wall clock jump (forwards
/// or backwards) and leaves the monotonic one where it is.
#[derive(Debug)]
pub struct ManualClock {
    state: Mutex<ManualState>,
}

#[derive(Debug, Clone, Copy)]
struct ManualState {
    wall: SystemTime,
    /// The monotonic instant is `base + elapsed`; `base` is taken at creation.
    base: Instant,
    elapsed: Duration,
}

impl ManualClock {
    /// A clock stopped at `wall`.
    pub fn new(wall: SystemTime) -> Self {
        Self {
            state: Mutex::new(ManualState {
                wall,
                base: Instant::now(),
                elapsed: Duration::ZERO,
            }),
        }
    }

    /// A clock stopped at `secs` seconds after the Unix epoch.
    pub fn at_unix(secs: u64) -> Self {
        Self::new(UNIX_EPOCH + Duration::from_secs(secs))
    }

    /// Let `d` pass, on both clocks.
    pub fn advance(&self, d: Duration) {
        let mut s = self.lock();
        s.wall += d;
        s.elapsed += d;
    }

    /// Set the wall clock to `wall` (a clock jump); the monotonic clock does not move.
    pub fn set_wall(&self, wall: SystemTime) {
        self.lock().wall = wall;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        // The state is two plain values, always consistent: a panic elsewhere while the
        // lock was held cannot have left it half-written.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.lock().wall
    }
    fn instant(&self) -> Instant {
        let s = *self.lock();
        s.base + s.elapsed
    }
}

/// A [`Clock`] as rustls's [`rustls::time_provider::TimeProvider`].
#[derive(Debug, Clone)]
pub struct ClockTime(pub Arc<dyn Clock>);

impl rustls::time_provider::TimeProvider for ClockTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(
            self.0.now().duration_since(UNIX_EPOCH).ok()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::time_provider::TimeProvider;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::at_unix(1_000);
        let i0 = c.instant();
        assert_eq!(c.unix_secs(), 1_000);
        assert_eq!(c.instant(), i0, "stopped");
        c.advance(Duration::from_secs(90));
        assert_eq!(c.unix_secs(), 1_090);
        assert_eq!(c.instant() - i0, Duration::from_secs(90));
        // A wall-clock jump back leaves the monotonic clock alone.
        c.set_wall(UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(c.unix_secs(), 10);
        assert_eq!(c.instant() - i0, Duration::from_secs(90));
        let t = ClockTime(Arc::new(c));
        assert_eq!(t.current_time().map(|u| u.as_secs()), Some(10));
    }

    #[test]
    fn system_clock_is_the_operating_systems() {
        let before = SystemTime::now();
        let now = SystemClock.now();
        assert!(now >= before && now <= SystemTime::now());
        assert!(system().unix_secs() > 1_700_000_000);
    }
}
