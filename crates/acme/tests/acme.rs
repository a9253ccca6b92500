//! tlskit-acme through its public API, without a CA: the filesystem storage (account,
//! certificates, challenge answers, the issuance lock), domain names and settings, and
//! what `ServerAcme::prepare` does with a stored certificate (served when it is for the
//! managed names, refused otherwise). The last tests go through the crate's doc-hidden
//! `fuzzing` entry points, the only public way to the Retry-After and ARI clamps and to
//! the check of a CA's chain without a CA.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::pem::PemObject;
use tlskit_acme::storage::{cert_name, hex16};
use tlskit_acme::{
    domain, AcmeError, AcmeEvents, AcmeSettings, AcmeStorage, ChallengeKind, FsStorage, Refusal,
    ServerAcme, StoredCert,
};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A self-signed certificate for `names`, valid `from`..`to` (years), with its key, as
/// a storage reads it back: written in the documented layout (`certs/NAME.pem`, the chain
/// then the key) of a scratch `FsStorage` and loaded (no struct literal: `StoredCert`
/// may become `#[non_exhaustive]`).
fn stored(names: &[&str], from: i32, to: i32) -> StoredCert {
    let mut p =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.not_before = rcgen::date_time_ymd(from, 1, 1);
    p.not_after = rcgen::date_time_ymd(to, 1, 1);
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let s = FsStorage::open(scratch.path()).unwrap();
    let text = format!("{}{}", cert.pem(), key.serialize_pem());
    std::fs::write(s.cert_path("scratch"), text).unwrap();
    let c = s.load_cert("scratch").unwrap().unwrap();
    assert_eq!(
        c.chain_pem,
        cert.pem(),
        "the chain is what precedes the key"
    );
    assert_eq!(c.key_pem, key.serialize_pem());
    c
}

#[test]
fn fs_storage_keeps_accounts_and_certificates_private() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("acme");
    let s = FsStorage::open(&dir).unwrap();
    assert_eq!(s.dir(), dir);
    for sub in ["", "accounts", "certs", "locks"] {
        assert_eq!(mode(&dir.join(sub)), 0o700, "{sub}");
    }

    let url = "https://ca.test/directory";
    assert_eq!(s.load_account(url).unwrap(), None);
    s.store_account(url, b"{\"first\":1}").unwrap();
    assert_eq!(s.load_account(url).unwrap().unwrap(), b"{\"first\":1}");
    let account = dir.join("accounts").join(format!("{}.json", hex16(url)));
    assert_eq!(mode(&account), 0o600);
    // New credentials replace the old ones, which are kept beside them.
    s.store_account(url, b"{\"second\":2}").unwrap();
    assert_eq!(s.load_account(url).unwrap().unwrap(), b"{\"second\":2}");
    let backups = std::fs::read_dir(dir.join("accounts"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".bak")
        })
        .count();
    assert_eq!(backups, 1);
    assert_eq!(s.load_account("https://other.test/dir").unwrap(), None);

    let name = cert_name(&["*.Example.test".to_string(), "example.test".to_string()]);
    assert_eq!(name, "_.example.test");
    assert_eq!(s.load_cert(&name).unwrap().map(|_| ()), None);
    let cert = stored(&["*.example.test", "example.test"], 2020, 2090);
    s.store_cert(&name, &cert).unwrap();
    let path = s.cert_path(&name);
    assert_eq!(path, dir.join("certs").join("_.example.test.pem"));
    assert_eq!(mode(&path), 0o600, "the file holds the key");
    let back = s.load_cert(&name).unwrap().unwrap();
    assert_eq!(back.chain_pem, cert.chain_pem);
    assert_eq!(back.key_pem, cert.key_pem);
    assert!(
        !format!("{back:?}").contains("PRIVATE KEY"),
        "Debug hides the key"
    );

    // A certificate file without its key is a storage error naming the file.
    std::fs::write(&path, cert.chain_pem.as_bytes()).unwrap();
    let e = s.load_cert(&name).unwrap_err();
    assert!(matches!(e, AcmeError::Storage { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&path.display().to_string()) && text.contains("no private key"),
        "{text}"
    );
}

#[test]
fn fs_storage_refuses_a_file_where_its_directory_should_be() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("acme");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("certs"), "a file").unwrap();
    let e = FsStorage::open(&dir).unwrap_err();
    assert!(matches!(e, AcmeError::Storage { .. }), "{e}");
    assert!(e.to_string().contains("not a directory"), "{e}");
}

#[test]
fn the_issuance_lock_is_held_until_dropped() {
    let t = tempfile::tempdir().unwrap();
    let s = FsStorage::open(t.path()).unwrap();
    let held = s.lock("example.test", Duration::ZERO).unwrap();
    let e = match s.lock("example.test", Duration::ZERO) {
        Ok(_) => panic!("locked twice"),
        Err(e) => e,
    };
    assert!(
        e.to_string()
            .contains("another process holds the issuance lock"),
        "{e}"
    );
    // Another name has a lock of its own.
    let other = s.lock("other.test", Duration::ZERO).unwrap();
    drop(held);
    let again = s.lock("example.test", Duration::ZERO).unwrap();
    drop((other, again));
}

#[test]
fn challenge_answers_are_published_and_withdrawn() {
    let t = tempfile::tempdir().unwrap();
    let s = FsStorage::open(t.path()).unwrap();
    assert_eq!(s.challenge("http-01/tok"), None);
    s.put_challenge("http-01/tok", "tok.thumb").unwrap();
    assert_eq!(s.challenge("http-01/tok").as_deref(), Some("tok.thumb"));
    s.remove_challenge("http-01/tok");
    assert_eq!(s.challenge("http-01/tok"), None);
}

#[test]
fn domains_are_a_labels_in_lower_case() {
    assert_eq!(domain("Bücher.Example").unwrap(), "xn--bcher-kva.example");
    assert_eq!(domain("*.Example.TEST.").unwrap(), "*.example.test");
    for bad in ["a..b", "", "exa mple.test"] {
        let e = domain(bad).unwrap_err();
        assert!(matches!(e, AcmeError::Config(_)), "{bad}: {e}");
    }
    assert_eq!(hex16("https://ca.test/directory").len(), 16);
    assert_ne!(hex16("a"), hex16("b"));
    assert_eq!(ChallengeKind::parse("http-01"), Some(ChallengeKind::Http01));
    assert_eq!(ChallengeKind::TlsAlpn01.name(), "tls-alpn-01");
    assert_eq!(ChallengeKind::parse("dns-01"), Some(ChallengeKind::Dns01));
    assert_eq!(ChallengeKind::parse("dns-persist-01"), None);
}

#[test]
fn settings_check_names_and_the_directory_url() {
    let mut ok = AcmeSettings::new(
        "https://ca.test/directory".into(),
        vec!["example.test".into(), "*.example.test".into()],
        "/nonexistent".into(),
    );
    // A wildcard is validated through DNS only.
    let e = ok.check().unwrap_err().to_string();
    assert!(e.contains("needs --acme-challenge dns-01"), "{e}");
    ok.challenge = ChallengeKind::Dns01;
    ok.dns.update = Some("127.0.0.1:53".parse().unwrap());
    ok.check().unwrap();
    let with = |directory: &str, domains: &[&str]| {
        let mut s = ok.clone();
        s.directory = directory.into();
        s.domains = domains.iter().map(|d| d.to_string()).collect();
        s.check().unwrap_err().to_string()
    };
    let e = with("http://ca.test/directory", &["example.test"]);
    assert!(e.contains("must be an https:// URL"), "{e}");
    let e = with("https://ca.test/directory", &[]);
    assert!(e.contains("no domain name"), "{e}");
    let e = with("https://ca.test/directory", &["Example.test"]);
    assert!(
        e.contains("Example.test: not a DNS name in A-label form"),
        "{e}"
    );
}

/// The events `ServerAcme` reports, in order.
#[derive(Debug, Default)]
struct Events(Mutex<Vec<String>>);

impl Events {
    fn said(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
}

impl AcmeEvents for Events {
    fn acme_enable(&self) {
        self.push("enable".into());
    }
    fn acme_not_after(&self, unix: u64) {
        self.push(format!("not_after {unix}"));
    }
    fn acme_error(&self) {
        self.push("error".into());
    }
    fn acme_task_restart(&self) {
        self.push("restart".into());
    }
    fn acme_next_renewal(&self, unix: u64) {
        self.push(format!("next {unix}"));
    }
    fn acme_order(&self, ok: bool) {
        self.push(format!("order {ok}"));
    }
    fn acme_refused(&self, why: Refusal) {
        self.push(format!("refused {}", why.label()));
    }
}

/// `ServerAcme::prepare` for `names` over a storage directory holding `cert` (if any).
fn prepare(
    dir: &Path,
    names: &[&str],
    cert: Option<&StoredCert>,
) -> (Result<ServerAcme, AcmeError>, Arc<Events>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    if let Some(c) = cert {
        FsStorage::open(dir)
            .unwrap()
            .store_cert(&cert_name(&names), c)
            .unwrap();
    }
    let settings = AcmeSettings::new("https://ca.test/directory".into(), names, dir.into());
    let events = Arc::new(Events::default());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let r = ServerAcme::prepare(settings, None, provider, events.clone(), Vec::new(), None);
    (r, events)
}

#[test]
fn a_stored_certificate_for_the_managed_names_is_served_at_once() {
    let t = tempfile::tempdir().unwrap();
    let cert = stored(&["www.example.test", "example.test"], 2020, 2090);
    let (acme, events) = prepare(t.path(), &["www.example.test", "example.test"], Some(&cert));
    let acme = acme.unwrap();
    let ck = acme
        .managed
        .current()
        .expect("the stored certificate is served");
    let der = rustls::pki_types::CertificateDer::from_pem_slice(cert.chain_pem.as_bytes());
    assert_eq!(ck.cert[0], der.unwrap());
    assert!(acme.managed.manages(Some("example.test")));
    assert!(acme.managed.manages(Some("WWW.example.test")));
    assert!(!acme.managed.manages(Some("other.test")));
    assert!(!acme.managed.manages(None));
    assert!(
        acme.alpn_config.is_some(),
        "tls-alpn-01 (the default) has its own TLS configuration"
    );
    // 2090-01-01T00:00:00Z
    assert_eq!(events.said(), ["enable", "not_after 3786912000"]);
}

#[test]
fn a_stored_certificate_that_does_not_fit_is_not_served() {
    for (why, cert) in [
        ("other names", stored(&["other.example.test"], 2020, 2090)),
        ("expired", stored(&["www.example.test"], 2000, 2010)),
    ] {
        let t = tempfile::tempdir().unwrap();
        let (acme, events) = prepare(t.path(), &["www.example.test"], Some(&cert));
        let acme = acme.unwrap();
        assert!(acme.managed.current().is_none(), "{why}");
        assert!(acme.managed.manages(Some("www.example.test")), "{why}");
        assert_eq!(events.said(), ["enable"], "{why}");
    }
    // No certificate yet: nothing served, nothing wrong.
    let t = tempfile::tempdir().unwrap();
    let (acme, _) = prepare(t.path(), &["www.example.test"], None);
    assert!(acme.unwrap().managed.current().is_none());
}

#[test]
fn prepare_refuses_bad_settings_before_touching_storage() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("never");
    let (r, events) = prepare(&dir, &["Not A Name"], None);
    assert!(matches!(r, Err(AcmeError::Config(_))));
    assert!(!dir.exists());
    assert!(events.said().is_empty());

    let mut settings = AcmeSettings::new(
        "https://ca.test/directory".into(),
        vec!["example.test".into()],
        dir.clone(),
    );
    settings.challenge = ChallengeKind::Http01;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let e = ServerAcme::prepare(
        settings,
        None,
        provider,
        Arc::new(Events::default()),
        Vec::new(),
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("http-01 challenge needs a plain HTTP listener"),
        "{e}"
    );
}

mod hidden_entry_points {
    //! Through `tlskit_acme::fuzzing` (doc-hidden, "not API"): the code the renewal
    //! manager runs, at the fixed time `ACME_NOW` (2026-01-02T00:00:00Z).
    use super::*;
    use tlskit_acme::fuzzing::{
        acme_result, acme_retry_after, acme_window, ACME_LEAF, ACME_MAX_CHAIN, ACME_NOW,
    };

    #[test]
    fn retry_after_takes_seconds_or_a_date_and_is_clamped_to_a_day() {
        assert_eq!(acme_retry_after(b"120"), Some(120_000));
        assert_eq!(acme_retry_after(b" 0 "), Some(0));
        assert_eq!(
            acme_retry_after(b"99999999999999999999999"),
            Some(86_400_000)
        );
        // ACME_NOW + 1 h as an HTTP-date; a past date waits not at all.
        assert_eq!(
            acme_retry_after(b"Fri, 02 Jan 2026 01:00:00 GMT"),
            Some(3_600_000)
        );
        assert_eq!(acme_retry_after(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            acme_retry_after(b"Sat, 02 Jan 2027 00:00:00 GMT"),
            Some(86_400_000)
        );
        assert_eq!(acme_retry_after(b"soon"), None);
        assert_eq!(acme_retry_after(b"-5"), None);
        assert_eq!(acme_retry_after(b""), None);
    }

    #[test]
    fn an_ari_window_is_clamped_into_the_certificate_lifetime() {
        let (nb, na) = ACME_LEAF;
        // A window inside the lifetime: the point `rand01` of the way through it.
        let window = b"2026-02-01T00:00:00Z\n2026-02-02T00:00:00Z";
        assert_eq!(acme_window(window, 0.0), Some(1_769_904_000));
        assert_eq!(acme_window(window, 0.5), Some(1_769_947_200));
        assert_eq!(
            acme_window(window, 7.0),
            Some(1_769_990_400),
            "rand01 is clamped"
        );
        // A window after notAfter is pulled back to notAfter less a tenth of the lifetime.
        let late = acme_window(b"2030-01-01T00:00:00Z\n2030-01-02T00:00:00Z", 0.5);
        assert_eq!(late, Some(na - (na - nb) / 10));
        // Before notBefore: not earlier than the certificate itself.
        let early = acme_window(b"1999-01-01T00:00:00Z\n1999-01-02T00:00:00Z", 0.0);
        assert_eq!(early, Some(nb));
        assert_eq!(acme_window(b"not a time\n2026-02-02T00:00:00Z", 0.5), None);
        assert_eq!(acme_window(b"2026-02-01T00:00:00Z", 0.5), None);
        assert!(ACME_NOW > nb && ACME_NOW < na);
    }

    /// A chain valid at ACME_NOW (2026-01-01 to 2026-04-01) for `names`.
    fn fresh_chain(names: &[&str]) -> String {
        let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
        p.not_before = rcgen::date_time_ymd(2026, 1, 1);
        p.not_after = rcgen::date_time_ymd(2026, 4, 1);
        p.self_signed(&KeyPair::generate().unwrap()).unwrap().pem()
    }

    #[test]
    fn a_chain_from_the_ca_is_checked_for_names_validity_and_length() {
        let names = vec!["a.example.test".to_string(), "b.example.test".to_string()];
        let good = fresh_chain(&["a.example.test", "b.example.test"]);
        assert_eq!(acme_result(good.as_bytes(), &names), Ok(1));
        // Names are compared as sets, case aside.
        let upper = vec!["B.example.test".to_string(), "A.example.test".to_string()];
        assert_eq!(acme_result(good.as_bytes(), &upper), Ok(1));
        let fewer = fresh_chain(&["a.example.test"]);
        assert_eq!(
            acme_result(fewer.as_bytes(), &names),
            Err(Refusal::WrongNames.label())
        );
        let more = fresh_chain(&["a.example.test", "b.example.test", "c.example.test"]);
        assert_eq!(acme_result(more.as_bytes(), &names), Err("wrong_names"));
        let swapped = fresh_chain(&["a.example.test", "c.example.test"]);
        assert_eq!(acme_result(swapped.as_bytes(), &names), Err("wrong_names"));
        let old = stored(&["a.example.test", "b.example.test"], 2020, 2025).chain_pem;
        assert_eq!(acme_result(old.as_bytes(), &names), Err("expired"));
        let late = stored(&["a.example.test", "b.example.test"], 2027, 2028).chain_pem;
        assert_eq!(acme_result(late.as_bytes(), &names), Err("not_yet_valid"));
        assert_eq!(acme_result(b"", &names), Err("unparsable"));
        let long = good.repeat(ACME_MAX_CHAIN + 1);
        assert_eq!(acme_result(long.as_bytes(), &names), Err("chain_too_long"));
    }
}
