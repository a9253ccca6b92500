//! Session-ticket keys for `tlskit serve`: rotated every period, tickets expire after two.
//!
//! rustls' [`rustls::ticketer::TicketRotator`] replaces the ticket key every `period`
//! and still decrypts with the previous key, but it rotates lazily (only when a ticket is
//! made or opened: after a long idle time the "previous" key can be arbitrarily old), and
//! the rustls server does not check a ticket's age against the lifetime it announced.
//! [`ExpiringTickets`] therefore seals the issue time inside every ticket and refuses a
//! ticket older than two periods (the lifetime announced to clients) whatever the keys:
//! such a client gets a full handshake.

use std::sync::Arc;
use std::time::Duration;

use rustls::server::ProducesTickets;
use rustls::time_provider::{DefaultTimeProvider, TimeProvider};

use tlskit_tls::log::{self, Level};

/// A ticketer made by `Ticketer::new()` (itself rotating every 6 hours), replaced as a
/// whole by the outer [`rustls::ticketer::TicketRotator`] at the configured period.
#[derive(Debug)]
struct BoxedTicketer(Arc<dyn ProducesTickets>);

impl ProducesTickets for BoxedTicketer {
    fn enabled(&self) -> bool {
        self.0.enabled()
    }
    fn lifetime(&self) -> u32 {
        self.0.lifetime()
    }
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.0.encrypt(plain)
    }
    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        self.0.decrypt(cipher)
    }
}

/// The longest rotation period: each key is rustls's aws-lc-rs `Ticketer`, itself a
/// rotator that replaces its key every 6 hours and keeps one previous key, so with a
/// longer period tickets issued early in a key's life would stop decrypting before the
/// two periods announced to clients.
pub(crate) const MAX_ROTATION_SECS: u64 = 6 * 3600;

fn make_ticketer() -> Result<Box<dyn ProducesTickets>, rustls::crypto::GetRandomFailed> {
    // Called when the rotator is made, then once per rotation.
    log::event(Level::Debug, "ticket_key_generated", &[]);
    rustls::crypto::aws_lc_rs::Ticketer::new()
        .map(|t| Box::new(BoxedTicketer(t)) as Box<dyn ProducesTickets>)
        .map_err(|_| rustls::crypto::GetRandomFailed)
}

/// The server's ticketer: keys rotated every `period` (1 s to [`MAX_ROTATION_SECS`];
/// `Server::bind` refuses other values), tickets from the previous key accepted, no ticket
/// older than two periods accepted.
pub(crate) fn ticketer(period: Duration) -> Result<Arc<dyn ProducesTickets>, rustls::Error> {
    // In range after bind's check (MAX_ROTATION_SECS fits a u32).
    let secs = period.as_secs().clamp(1, MAX_ROTATION_SECS) as u32;
    let rotator = rustls::ticketer::TicketRotator::new(secs, make_ticketer)?;
    Ok(Arc::new(ExpiringTickets::new(
        Arc::new(rotator),
        u64::from(secs) * 2,
        Arc::new(DefaultTimeProvider),
    )))
}

/// Seals the issue time (Unix seconds) inside each ticket; refuses tickets older than
/// `max_age` seconds (or from the future by more than that: a clock jump).
#[derive(Debug)]
pub(crate) struct ExpiringTickets {
    inner: Arc<dyn ProducesTickets>,
    max_age: u64,
    time: Arc<dyn TimeProvider>,
}

impl ExpiringTickets {
    pub(crate) fn new(
        inner: Arc<dyn ProducesTickets>,
        max_age: u64,
        time: Arc<dyn TimeProvider>,
    ) -> Self {
        Self {
            inner,
            max_age,
            time,
        }
    }

    fn now(&self) -> Option<u64> {
        self.time.current_time().map(|t| t.as_secs())
    }
}

impl ProducesTickets for ExpiringTickets {
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }

    fn lifetime(&self) -> u32 {
        // What clients are told: the same bound as the age check.
        u32::try_from(self.max_age).unwrap_or(u32::MAX)
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let mut sealed = Vec::with_capacity(8 + plain.len());
        sealed.extend_from_slice(&self.now()?.to_be_bytes());
        sealed.extend_from_slice(plain);
        self.inner.encrypt(&sealed)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let plain = self.inner.decrypt(cipher)?;
        let (issued, rest) = plain.split_first_chunk::<8>()?;
        let issued = u64::from_be_bytes(*issued);
        (self.now()?.abs_diff(issued) <= self.max_age).then(|| rest.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::UnixTime;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug, Default)]
    struct Clock(AtomicU64);

    impl TimeProvider for Clock {
        fn current_time(&self) -> Option<UnixTime> {
            Some(UnixTime::since_unix_epoch(Duration::from_secs(
                self.0.load(Ordering::Relaxed),
            )))
        }
    }

    #[test]
    fn tickets_expire_after_max_age_whatever_the_keys() {
        let clock = Arc::new(Clock::default());
        clock.0.store(1_000_000, Ordering::Relaxed);
        let inner: Arc<dyn ProducesTickets> =
            rustls::crypto::aws_lc_rs::Ticketer::new().expect("ticketer");
        let t = ExpiringTickets::new(inner, 20, clock.clone());
        assert_eq!(t.lifetime(), 20);
        let ticket = t.encrypt(b"session").expect("encrypt");
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        clock.0.store(1_000_020, Ordering::Relaxed);
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        clock.0.store(1_000_021, Ordering::Relaxed);
        assert_eq!(t.decrypt(&ticket), None, "older than two periods");
        clock.0.store(999_900, Ordering::Relaxed);
        assert_eq!(
            t.decrypt(&ticket),
            None,
            "clock went back further than max_age"
        );
        assert_eq!(t.decrypt(b"garbage"), None);
    }

    #[test]
    fn period_is_at_least_one_second_and_lifetime_two_periods() {
        assert_eq!(ticketer(Duration::ZERO).expect("t").lifetime(), 2);
        assert_eq!(ticketer(Duration::from_secs(30)).expect("t").lifetime(), 60);
        assert_eq!(
            ticketer(Duration::from_secs(6 * 3600))
                .expect("t")
                .lifetime(),
            12 * 3600
        );
    }
}
