//! Session-ticket keys for `tlskit serve`: rotated every period, tickets expire after two.
//!
//! [`Rotator`] replaces the ticket key every `period` and still decrypts with the previous
//! key, as rustls' [`rustls::ticketer::TicketRotator`] does (same rule, same laziness),
//! but reads the time from the server's [`Clock`] instead of the system's, so rotation is
//! tested by moving a clock. It rotates lazily (only when a ticket is made or opened:
//! after a long idle time the "previous" key can be arbitrarily old), and the rustls
//! server does not check a ticket's age against the lifetime it announced.
//! [`ExpiringTickets`] therefore seals the issue time inside every ticket and refuses a
//! ticket older than two periods (the lifetime announced to clients) whatever the keys:
//! such a client gets a full handshake.

use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use rustls::server::ProducesTickets;
use rustls::time_provider::TimeProvider;

use tlskit_tls::clock::{Clock, ClockTime};
use tlskit_tls::log::{self, Level};

/// A ticketer made by `Ticketer::new()` (itself rotating every 6 hours), replaced as a
/// whole by the outer [`Rotator`] at the configured period.
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

fn make_ticketer() -> Option<Box<dyn ProducesTickets>> {
    // Called when the rotator is made, then once per rotation.
    log::event(Level::Debug, "ticket_key_generated", &[]);
    rustls::crypto::aws_lc_rs::Ticketer::new()
        .ok()
        .map(|t| Box::new(BoxedTicketer(t)) as Box<dyn ProducesTickets>)
}

/// The server's ticketer: keys rotated every `period` (1 s to [`MAX_ROTATION_SECS`];
/// `Server::bind` refuses other values) by `clock`, tickets from the previous key
/// accepted, no ticket older than two periods accepted. (The server uses
/// [`ticketer_with_rotator`]; the tests this.)
#[cfg(test)]
pub(crate) fn ticketer(
    period: Duration,
    clock: Arc<dyn Clock>,
) -> Result<Arc<dyn ProducesTickets>, rustls::Error> {
    ticketer_with_rotator(period, clock).map(|(t, _)| t)
}

/// [`ticketer`], with its [`Rotator`] (for the key's age in the control socket's status).
pub(crate) fn ticketer_with_rotator(
    period: Duration,
    clock: Arc<dyn Clock>,
) -> Result<(Arc<dyn ProducesTickets>, Arc<Rotator>), rustls::Error> {
    // In range after bind's check (MAX_ROTATION_SECS fits a u32).
    let secs = period.as_secs().clamp(1, MAX_ROTATION_SECS);
    let rotator =
        Arc::new(Rotator::new(secs, clock.clone()).ok_or(rustls::Error::FailedToGetRandomBytes)?);
    let t = Arc::new(ExpiringTickets::new(
        rotator.clone(),
        secs * 2,
        Arc::new(ClockTime(clock)),
    ));
    Ok((t, rotator))
}

/// A current ticket key and the previous one; the current one is replaced once the clock
/// is past its switch time (`period` seconds after it became current), at the next ticket
/// made or opened. rustls's `TicketRotator`, on a [`Clock`].
#[derive(Debug)]
pub(crate) struct Rotator {
    period: u64,
    clock: Arc<dyn Clock>,
    state: RwLock<RotatorState>,
}

#[derive(Debug)]
struct RotatorState {
    current: Box<dyn ProducesTickets>,
    previous: Option<Box<dyn ProducesTickets>>,
    /// Unix seconds after which `current` is replaced.
    switch_at: u64,
}

impl Rotator {
    /// A rotator with a fresh key (None: no randomness from the OS).
    pub(crate) fn new(period: u64, clock: Arc<dyn Clock>) -> Option<Self> {
        let switch_at = clock.unix_secs().saturating_add(period);
        Some(Self {
            period,
            clock,
            state: RwLock::new(RotatorState {
                current: make_ticketer()?,
                previous: None,
                switch_at,
            }),
        })
    }

    /// Seconds since the current key was made (keys are replaced when a ticket is made
    /// or opened after the switch time, so an idle server's key may be older than the
    /// period). None when the lock is poisoned.
    pub(crate) fn key_age(&self) -> Option<u64> {
        let made = self
            .state
            .read()
            .ok()?
            .switch_at
            .saturating_sub(self.period);
        Some(self.clock.unix_secs().saturating_sub(made))
    }

    /// The keys, rotated first when the switch time has passed. None when a lock is
    /// poisoned or no new key could be made (the ticket is then neither made nor opened:
    /// a full handshake).
    fn keys(&self) -> Option<RwLockReadGuard<'_, RotatorState>> {
        let now = self.clock.unix_secs();
        {
            let read = self.state.read().ok()?;
            if now <= read.switch_at {
                return Some(read);
            }
        }
        // Made outside the lock; another thread may rotate first (then this key is unused).
        let next = make_ticketer()?;
        let mut write = self.state.write().ok()?;
        if now > write.switch_at {
            write.previous = Some(std::mem::replace(&mut write.current, next));
            write.switch_at = now.saturating_add(self.period);
        }
        drop(write);
        self.state.read().ok()
    }
}

impl ProducesTickets for Rotator {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        u32::try_from(self.period.saturating_mul(2)).unwrap_or(u32::MAX)
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.keys()?.current.encrypt(plain)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        let keys = self.keys()?;
        keys.current.decrypt(cipher).or_else(|| {
            keys.previous
                .as_ref()
                .and_then(|previous| previous.decrypt(cipher))
        })
    }
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
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    use rustls::{ClientConfig, ClientConnection, HandshakeKind, ServerConfig, ServerConnection};
    use tlskit_tls::ManualClock;

    const START: u64 = 1_800_000_000;

    fn clock() -> Arc<ManualClock> {
        Arc::new(ManualClock::at_unix(START))
    }

    #[test]
    fn tickets_expire_after_max_age_whatever_the_keys() {
        let clock = clock();
        let inner: Arc<dyn ProducesTickets> =
            rustls::crypto::aws_lc_rs::Ticketer::new().expect("ticketer");
        let t = ExpiringTickets::new(inner, 20, Arc::new(ClockTime(clock.clone())));
        assert_eq!(t.lifetime(), 20);
        let ticket = t.encrypt(b"session").expect("encrypt");
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        clock.advance(Duration::from_secs(20));
        assert_eq!(t.decrypt(&ticket).as_deref(), Some(&b"session"[..]));
        clock.advance(Duration::from_secs(1));
        assert_eq!(t.decrypt(&ticket), None, "older than two periods");
        clock.set_wall(std::time::UNIX_EPOCH + Duration::from_secs(START - 100));
        assert_eq!(
            t.decrypt(&ticket),
            None,
            "clock went back further than max_age"
        );
        assert_eq!(t.decrypt(b"garbage"), None);
    }

    /// Counts `ticket_key_generated` events (tlskit's events are `tracing` events).
    #[derive(Clone, Default)]
    struct KeysMade(Arc<std::sync::atomic::AtomicUsize>);

    impl KeysMade {
        fn get(&self) -> usize {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    struct IsKeyEvent(bool);

    impl tracing_core::field::Visit for IsKeyEvent {
        fn record_debug(&mut self, f: &tracing_core::Field, v: &dyn std::fmt::Debug) {
            self.record_str(f, &format!("{v:?}"));
        }
        fn record_str(&mut self, f: &tracing_core::Field, v: &str) {
            self.0 |= f.name() == "event" && v == "ticket_key_generated";
        }
    }

    impl tracing_core::Subscriber for KeysMade {
        fn enabled(&self, _: &tracing_core::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing_core::span::Attributes<'_>) -> tracing_core::span::Id {
            tracing_core::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing_core::span::Id, _: &tracing_core::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing_core::span::Id, _: &tracing_core::span::Id) {}
        fn event(&self, e: &tracing_core::Event<'_>) {
            let mut is = IsKeyEvent(false);
            e.record(&mut is);
            if is.0 {
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        fn enter(&self, _: &tracing_core::span::Id) {}
        fn exit(&self, _: &tracing_core::span::Id) {}
    }

    /// The key is replaced once the clock is past one period (not at it), at the next
    /// ticket made or opened, and each new key is logged (`ticket_key_generated`); a
    /// ticket of the previous key still opens, one of the key before it does not,
    /// whatever its age (the keys alone, without the age limit).
    #[test]
    fn keys_rotate_by_the_clock_and_one_previous_key_is_kept() {
        let made = KeysMade::default();
        let dispatch = tracing_core::Dispatch::new(made.clone());
        tracing_core::dispatcher::with_default(&dispatch, || {
            let clock = clock();
            let r = Rotator::new(2, clock.clone()).expect("rotator");
            assert_eq!(r.lifetime(), 4);
            assert_eq!(made.get(), 1, "the first key");
            let first = r.encrypt(b"one").expect("encrypt");
            clock.advance(Duration::from_secs(2));
            let same_key = r.encrypt(b"two").expect("encrypt");
            assert_eq!(r.decrypt(&first).as_deref(), Some(&b"one"[..]));
            assert_eq!(made.get(), 1, "not rotated at the switch time");
            clock.advance(Duration::from_secs(1));
            // Past the switch time: this call rotates; `first` and `same_key` are the
            // previous key's now.
            let second = r.encrypt(b"three").expect("encrypt");
            assert_eq!(made.get(), 2, "rotated past the switch time");
            assert_eq!(r.decrypt(&first).as_deref(), Some(&b"one"[..]));
            assert_eq!(r.decrypt(&same_key).as_deref(), Some(&b"two"[..]));
            clock.advance(Duration::from_secs(3));
            assert_eq!(r.decrypt(&first), None, "two rotations later");
            assert_eq!(r.decrypt(&same_key), None, "two rotations later");
            assert_eq!(r.decrypt(&second).as_deref(), Some(&b"three"[..]));
            assert_eq!(made.get(), 3);
            // Idle for an hour: one rotation at the next use (lazy), so `second`'s key
            // is now two keys back.
            clock.advance(Duration::from_secs(3600));
            assert_eq!(r.decrypt(&second), None, "made two keys ago");
            assert_eq!(made.get(), 4, "one rotation after the idle hour");
        });
    }

    #[test]
    fn period_is_at_least_one_second_and_lifetime_two_periods() {
        let c = || tlskit_tls::clock::system();
        assert_eq!(ticketer(Duration::ZERO, c()).expect("t").lifetime(), 2);
        assert_eq!(
            ticketer(Duration::from_secs(30), c())
                .expect("t")
                .lifetime(),
            60
        );
        assert_eq!(
            ticketer(Duration::from_secs(6 * 3600), c())
                .expect("t")
                .lifetime(),
            12 * 3600
        );
    }

    /// A server config with the terminator's ticketer on `clock` (period 2 s, as
    /// `--ticket-rotation 2`), and a client that trusts it.
    fn configs(clock: Arc<ManualClock>) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let root =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().expect("key"))
                .expect("ca");
        let leaf_key = rcgen::KeyPair::generate().expect("key");
        let leaf = rcgen::CertificateParams::new(vec!["test.example".to_string()])
            .expect("params")
            .signed_by(&leaf_key, &root)
            .expect("leaf");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .expect("server config");
        server.ticketer = ticketer(Duration::from_secs(2), clock).expect("ticketer");
        server.send_tls13_tickets = 1;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(root.der().to_vec()))
            .expect("root");
        let client = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        (Arc::new(server), Arc::new(client))
    }

    /// One TLS 1.3 handshake in memory, until the server's ticket reached the client.
    fn handshake(server: &Arc<ServerConfig>, client: &Arc<ClientConfig>) -> HandshakeKind {
        let name = ServerName::try_from("test.example").expect("name");
        let mut c = ClientConnection::new(client.clone(), name).expect("client");
        let mut s = ServerConnection::new(server.clone()).expect("server");
        let mut buf = Vec::new();
        // The ticket follows the handshake: a few rounds after it completes.
        for _ in 0..10 {
            buf.clear();
            while c.wants_write() {
                c.write_tls(&mut buf).expect("client write");
            }
            s.read_tls(&mut buf.as_slice()).expect("server read");
            s.process_new_packets().expect("server process");
            buf.clear();
            while s.wants_write() {
                s.write_tls(&mut buf).expect("server write");
            }
            c.read_tls(&mut buf.as_slice()).expect("client read");
            c.process_new_packets().expect("client process");
        }
        assert!(!c.is_handshaking() && !s.is_handshaking());
        s.handshake_kind().expect("handshake kind")
    }

    /// What the CLI test `net_serve_ticket_rotation_previous_key_resumes_older_does_not`
    /// checked by sleeping 6.4 s, on the server's clock: with keys rotated every 2 s, a
    /// ticket made under the key that has since become the previous one resumes; after
    /// another rotation (the ticket is then older than two periods) it does not.
    #[test]
    fn resumption_previous_key_resumes_older_does_not() {
        let clock = clock();
        let (server, client) = configs(clock.clone());
        assert_eq!(handshake(&server, &client), HandshakeKind::Full);
        // 3.2 s is more than one 2 s period in any alignment of whole seconds.
        clock.advance(Duration::from_millis(3200));
        assert_eq!(
            handshake(&server, &client),
            HandshakeKind::Resumed,
            "a ticket of the previous key resumes"
        );
        // The resumption used up the first ticket (TLS 1.3 tickets are single-use) and
        // made a new one at 3 s (whole seconds), under the key made then: 5 s later that
        // key is only the previous one, but the ticket is older than two periods.
        clock.advance(Duration::from_secs(5));
        assert_eq!(
            handshake(&server, &client),
            HandshakeKind::Full,
            "a ticket older than two periods gets a full handshake"
        );
    }
}
