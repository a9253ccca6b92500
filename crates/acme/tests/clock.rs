//! The ACME manager's clock, through the public API: whether the certificate in the
//! storage is still served at start is decided at the clock given to
//! `ServerAcme::prepare_with_clock`, so expiry is tested by setting a `ManualClock`.

use std::sync::{Arc, Mutex};

use tlskit_acme::manager::AcmeEvents;
use tlskit_acme::storage::cert_name;
use tlskit_acme::{AcmeSettings, AcmeStorage, FsStorage, ServerAcme, StoredCert};
use tlskit_tls::ManualClock;

/// The notAfter the manager reported, if any.
#[derive(Debug, Default)]
struct NotAfter(Mutex<Option<u64>>);

impl AcmeEvents for NotAfter {
    fn acme_enable(&self) {}
    fn acme_not_after(&self, unix: u64) {
        if let Ok(mut n) = self.0.lock() {
            *n = Some(unix);
        }
    }
    fn acme_error(&self) {}
    fn acme_task_restart(&self) {}
    fn acme_next_renewal(&self, _: u64) {}
    fn acme_order(&self, _: bool) {}
    fn acme_refused(&self, _: tlskit_acme::Refusal) {}
}

/// Prepare ACME for `a.test` over a storage holding a certificate valid from 2027-01-01
/// to 2027-03-01, the clock at `(y, m, d)`: whether it is served, and the notAfter
/// reported.
fn served_at(y: i32, m: u8, d: u8) -> (bool, Option<u64>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let domains = vec!["a.test".to_string()];
    let settings = AcmeSettings::new(
        "https://ca.test/dir".into(),
        domains.clone(),
        dir.path().join("acme"),
    );
    let mut params = rcgen::CertificateParams::new(domains.clone()).expect("params");
    params.not_before = rcgen::date_time_ymd(2027, 1, 1);
    params.not_after = rcgen::date_time_ymd(2027, 3, 1);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("cert");
    FsStorage::open(&settings.storage)
        .expect("storage")
        .store_cert(
            &cert_name(&domains),
            &StoredCert::new(cert.pem(), key.serialize_pem()),
        )
        .expect("store");
    let now = rcgen::date_time_ymd(y, m, d).unix_timestamp();
    let clock = Arc::new(ManualClock::at_unix(
        u64::try_from(now).expect("after 1970"),
    ));
    let events = Arc::new(NotAfter::default());
    let acme = ServerAcme::prepare_with_clock(
        settings,
        None,
        Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        events.clone(),
        Vec::new(),
        None,
        clock,
    )
    .expect("prepare");
    let reported = events.0.lock().ok().and_then(|n| *n);
    (acme.managed.current().is_some(), reported)
}

/// Valid at the clock: served at once, its notAfter reported. Expired at the clock (or
/// not yet valid): not served, an order is needed. On the system clock the test would
/// have to make its certificate for today, or wait for it to expire.
#[test]
fn a_stored_certificate_is_served_while_valid_at_the_managers_clock() {
    let not_after = u64::try_from(rcgen::date_time_ymd(2027, 3, 1).unix_timestamp()).ok();
    assert_eq!(served_at(2027, 2, 28), (true, not_after));
    assert_eq!(served_at(2027, 3, 2), (false, None), "expired");
    assert_eq!(served_at(2026, 12, 31), (false, None), "not yet valid");
}
