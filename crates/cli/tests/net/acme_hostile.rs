//! Issue 27: the ACME CA is a peer to doubt. `tlskit acme issue|renew` and `serve --acme`
//! against the hostile CA of `hostile_ca.rs`: `Retry-After` and ARI windows anywhere in
//! time, certificates that are not yet valid, expired, in a 51-certificate chain, for
//! another key or other names. No panic, nothing bad written or served, the renewal task
//! never lost, renewals spaced.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hostile_ca::{Cert, HostileCa, Mode, Window, HUGE};
use crate::net_support::{self, tlskit, Serve};
use crate::BIN;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `tlskit acme SUB --directory ... ARGS` against the hostile CA: (exit code, stdout, stderr).
fn acme(ca: &HostileCa, storage: &Path, sub: &str, args: &[&str]) -> (i32, String, String) {
    let dir = ca.directory();
    let st = s(storage);
    let roots = s(&ca.roots);
    let mut all = vec![
        "acme",
        sub,
        "--directory",
        &dir,
        "--acme-storage",
        &st,
        "--acme-roots",
        &roots,
    ];
    all.extend(args);
    let o = tlskit(&all);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The flags of `issue`/`renew` for h.test and www.h.test, key and chain in `dir`.
fn names_key_out(dir: &Path, out: &str) -> Vec<String> {
    [
        "--domain",
        "h.test",
        "--domain",
        "www.h.test",
        "--key",
        &s(&dir.join("key.pem")),
        "-o",
        &s(&dir.join(out)),
        "--http-listen",
        "127.0.0.1:0",
        "--json",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

fn run(ca: &HostileCa, dir: &Path, sub: &str, out: &str, extra: &[&str]) -> (i32, String, String) {
    let mut a = names_key_out(dir, out);
    a.extend(extra.iter().map(|x| x.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    acme(ca, &dir.join("acme"), sub, &a)
}

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// Poll `f` every 20 ms until it holds or `limit` passes.
fn until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A `Retry-After` of 2^64-1 seconds, or an HTTP-date in year 9999, on every order
/// response: `acme issue` panicked ("overflow when adding duration to instant", exit 101)
/// on main; the value is clamped to a day and the issuance completes.
#[test]
fn acme_hostile_order_retry_after_overflow_does_not_panic() {
    let ca = HostileCa::start(Mode {
        order_retry_after: Some(HUGE.into()),
        ..Mode::default()
    });
    let t = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(&ca, t.path(), "issue", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(json(&out)["domains"].as_array().map(Vec::len), Some(2));
    assert!(t.path().join("chain.pem").exists());
    ca.set(|m| m.order_retry_after = Some("Fri, 31 Dec 9999 23:59:59 GMT".into()));
    let (code, _, err) = run(&ca, t.path(), "issue", "chain2.pem", &[]);
    assert_eq!(code, 0, "{err}");
}

/// `acme renew` meets renewal information with a `Retry-After` of 2^64-1 (exit 101 on
/// main) and windows in year 9999 (on main: due exactly at notAfter) and year 0001.
#[test]
fn acme_hostile_renewal_information_is_clamped_for_renew() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = run(&ca, t.path(), "issue", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    let issued = json(&out);
    let nb = issued["not_before"].as_u64().expect("not_before");
    let na = issued["not_after"].as_u64().expect("not_after");

    ca.set(|m| m.ari_retry_after = HUGE.into());
    let (code, out, err) = run(&ca, t.path(), "renew", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(
        (r["renewed"].clone(), r["reason"].clone()),
        (false.into(), "not_due".into()),
        "{out}"
    );

    // A window in year 9999: due when a tenth of the lifetime is left, not at notAfter.
    ca.set(|m| {
        m.ari_retry_after = "60".into();
        m.window = Window::Year9999;
    });
    let (code, out, err) = run(&ca, t.path(), "renew", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["renewed"], false, "{out}");
    assert_eq!(r["due"].as_u64(), Some(na - (na - nb) / 10), "{out}");

    // A window in year 0001 is clamped to notBefore: due now (one run, one order).
    ca.set(|m| m.window = Window::Year1);
    let before = ca.orders();
    let (code, out, err) = run(&ca, t.path(), "renew", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(
        (r["renewed"].clone(), r["reason"].clone()),
        (true.into(), "ari".into()),
        "{out}"
    );
    assert_eq!(ca.orders(), before + 1);
}

/// Every bad result is refused by `acme issue` with exit 2 and a sentence naming the
/// reason, and nothing is written; `acme renew --force` keeps a good certificate rather
/// than write an expired one. On main the not-yet-valid certificate, the 51-certificate
/// chain and the expired renewal were written (exit 0, `renewed`).
#[test]
fn acme_hostile_bad_results_are_refused_by_issue_and_renew() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    for (cert, label) in [
        (Cert::NotYetValid, "not_yet_valid"),
        (Cert::Expired, "expired"),
        (Cert::Chain51, "chain_too_long"),
        (Cert::WrongKey, "wrong_key"),
        (Cert::WrongNames, "wrong_names"),
    ] {
        ca.set(|m| m.cert = cert);
        let out = format!("{label}.pem");
        let (code, stdout, err) = run(&ca, t.path(), "issue", &out, &[]);
        assert_eq!(code, 2, "{label}: {stdout}{err}");
        assert!(
            err.contains(&format!("the CA's certificate was refused ({label})")),
            "{label}: {err}"
        );
        assert!(!err.contains("panicked") && !err.contains("Some("), "{err}");
        assert!(!t.path().join(&out).exists(), "{label}: written");
    }

    ca.set(|m| m.cert = Cert::Good);
    let (code, _, err) = run(&ca, t.path(), "issue", "chain.pem", &[]);
    assert_eq!(code, 0, "{err}");
    let good = std::fs::read(t.path().join("chain.pem")).expect("chain");
    ca.set(|m| m.cert = Cert::Expired);
    let (code, out, err) = run(&ca, t.path(), "renew", "chain.pem", &["--force"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("refused (expired)"), "{err}");
    assert!(!out.contains("renewed"), "{out}");
    assert_eq!(
        std::fs::read(t.path().join("chain.pem")).expect("chain"),
        good,
        "the good certificate was replaced"
    );
}

fn http_get(addr: &str) -> String {
    let mut c = TcpStream::connect(addr).expect("connect metrics");
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .expect("write");
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

/// Serial (hex) of the certificate `serve` presents for `name`, by openssl.
fn served_serial(port: u16, name: &str) -> Option<String> {
    let o = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            "-servername",
            name,
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("openssl");
    let out = String::from_utf8_lossy(&o.stdout);
    let begin = out.find("-----BEGIN CERTIFICATE-----")?;
    let end = out.find("-----END CERTIFICATE-----")? + "-----END CERTIFICATE-----".len();
    let tmp = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(tmp.path(), &out[begin..end]).expect("write");
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-in"])
        .arg(tmp.path())
        .output()
        .expect("openssl");
    let serial = String::from_utf8_lossy(&o.stdout)
        .trim()
        .trim_start_matches("serial=")
        .to_string();
    Some(serial).filter(|s| !s.is_empty())
}

fn serve(ca: &HostileCa, storage: &Path, env: &[(&str, &str)]) -> Serve {
    serve_with(ca, storage, env, &[])
}

/// [`serve`] with more flags.
fn serve_with(ca: &HostileCa, storage: &Path, env: &[(&str, &str)], extra: &[&str]) -> Serve {
    let dir = ca.directory();
    let st = s(storage);
    let roots = s(&ca.roots);
    let mut cmd = Command::new(BIN);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut args = vec![
        "--respond",
        "echo",
        "--acme",
        &dir,
        "--domain",
        "srv.test",
        "--acme-storage",
        &st,
        "--acme-roots",
        &roots,
        "--acme-issuer-roots",
        &roots,
        "--acme-recheck",
        "0.3",
        "--acme-retry",
        "0.05",
        "--metrics",
        "127.0.0.1:0",
    ];
    args.extend(extra);
    Serve::start_with(cmd, &args, 1)
}

fn metric(srv: &Serve, name: &str) -> f64 {
    net_support::metric(&http_get(&srv.metrics_addr()), name).unwrap_or(-1.0)
}

/// `serve --acme` (with the CA's issuing roots given) through every hostile mode in turn,
/// on one process: the certificate it serves is kept while the CA hands back bad ones
/// (each refused and counted by reason),
/// the renewal task survives every mode (renewal-information requests go on), a window
/// in year 0001 does not start an order loop, and a window in year 9999 is clamped to
/// leave a tenth of the lifetime. On main the not-yet-valid certificate was installed and
/// served, and the `Retry-After` overflow on renewal information killed the task.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn acme_hostile_serve_survives_every_mode_and_keeps_its_certificate() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    let srv = serve(&ca, &t.path().join("acme"), &[]);
    let limit = Duration::from_secs(20);
    assert!(
        srv.wait_log("event=acme_certificate_installed", limit),
        "{}",
        srv.stderr()
    );
    let first = served_serial(srv.port(), "srv.test").expect("a certificate served");
    // Renewal information is asked again and again (the task lives): `n` more requests.
    let ari_goes_on = |n: u64| {
        let at = ca.ari_requests();
        assert!(
            until(limit, || ca.ari_requests() >= at + n),
            "renewal information no longer asked ({} requests): {}",
            ca.ari_requests(),
            srv.stderr()
        );
    };
    ari_goes_on(2);

    // Each bad result, while the CA says the certificate is due: refused, counted, the
    // served certificate kept. Between modes the window moves ahead so that a success
    // resets the failure backoff.
    for (cert, label) in [
        (Cert::NotYetValid, "not_yet_valid"),
        (Cert::Expired, "expired"),
        (Cert::Chain51, "chain_too_long"),
        (Cert::WrongKey, "wrong_key"),
        (Cert::WrongNames, "wrong_names"),
        (Cert::OtherIssuer, "untrusted"),
    ] {
        ca.set(|m| {
            m.cert = cert;
            m.window = Window::Past;
        });
        let name = format!("tlskit_acme_results_refused_total{{reason=\"{label}\"}}");
        assert!(
            until(limit, || metric(&srv, &name) >= 1.0),
            "{label} not refused: {}",
            srv.stderr()
        );
        assert_eq!(
            served_serial(srv.port(), "srv.test").as_deref(),
            Some(first.as_str()),
            "{label}: the served certificate was replaced"
        );
        ca.set(|m| m.window = Window::Ahead);
        ari_goes_on(2);
    }
    assert_eq!(
        srv.stderr()
            .matches("event=acme_certificate_installed")
            .count(),
        1,
        "{}",
        srv.stderr()
    );
    assert!(metric(&srv, "tlskit_acme_errors_total") >= 6.0);

    // A good certificate while the order says Retry-After 2^64-1: renewed, no panic.
    let issued = ca.issued();
    ca.set(|m| {
        m.cert = Cert::Good;
        m.window = Window::Past;
        m.order_retry_after = Some(HUGE.into());
    });
    assert!(
        srv.wait_log_more("event=acme_certificate_installed", 1, limit),
        "{}",
        srv.stderr()
    );
    // The window stays in the past (then in year 0001): renewals are spaced, not looped.
    ca.set(|m| m.window = Window::Year1);
    assert!(
        srv.wait_log("event=acme_renewal_spaced", limit),
        "{}",
        srv.stderr()
    );
    ari_goes_on(3);
    assert_eq!(ca.issued(), issued + 1, "{}", srv.stderr());

    // Renewal information with Retry-After 2^64-1 and a window in year 9999: the task
    // lives, and renewal is due a tenth of the lifetime before notAfter.
    ca.set(|m| {
        m.window = Window::Year9999;
        m.ari_retry_after = HUGE.into();
    });
    ari_goes_on(3);
    let na = metric(&srv, "tlskit_acme_certificate_expiry_timestamp_seconds");
    let tenth = (90 * 86_400 / 10) as f64;
    assert!(
        until(limit, || metric(
            &srv,
            "tlskit_acme_renewal_due_timestamp_seconds"
        ) == na - tenth),
        "due {} for notAfter {na}",
        metric(&srv, "tlskit_acme_renewal_due_timestamp_seconds")
    );
    assert!(!srv.stderr().contains("panicked"), "{}", srv.stderr());
    assert_eq!(metric(&srv, "tlskit_acme_task_restarts_total"), 0.0);
}

/// A renewal task that dies is restarted, logged and counted, and goes on asking for
/// renewal information: `TLSKIT_TEST_ACME_PANICS=3` makes its first three passes panic
/// (on main the first panic ended renewals for good).
/// `tlskit ctl` against `serve --acme` with no external peer: `ctl status` in words names
/// the ACME certificate's expiry, renewal due time and next attempt; `ctl renew` returns
/// the new certificate's serial and expiry (exit 0) while the CA issues good ones, and the
/// reason (exit 1, the served certificate kept) once it hands back one for other names.
#[test]
fn acme_hostile_ctl_status_and_renew_say_what_happened() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    let control = t.path().join("control.sock");
    let control = control.to_str().expect("UTF-8 path");
    let srv = serve_with(&ca, &t.path().join("acme"), &[], &["--control", control]);
    let limit = Duration::from_secs(20);
    assert!(
        srv.wait_log("event=acme_certificate_installed", limit),
        "{}",
        srv.stderr()
    );
    let ctl = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["ctl", "--control", control])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run tlskit ctl");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // `ctl status` in words, once the renewal task has looked at the ARI window (30 days
    // ahead): "acme (acme): srv.test; expires T; renewal due T; next attempt T".
    let rfc3339 = |at: &str| {
        time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|e| panic!("{at}: {e}"))
    };
    let mut line = String::new();
    assert!(
        until(limit, || {
            let (code, out, err) = ctl(&["status"]);
            assert_eq!(code, 0, "{err}");
            line = out
                .lines()
                .find(|l| l.starts_with("acme (acme): "))
                .unwrap_or_else(|| panic!("no ACME line: {out}"))
                .to_string();
            line.contains("; next attempt ")
        }),
        "no next attempt: {line}"
    );
    let fields: Vec<&str> = line.split("; ").collect();
    assert_eq!(fields[0], "acme (acme): srv.test", "{line}");
    let field = |prefix: &str| {
        fields
            .iter()
            .find_map(|f| f.strip_prefix(prefix))
            .map(rfc3339)
            .unwrap_or_else(|| panic!("no {prefix:?}: {line}"))
    };
    let now = time::OffsetDateTime::now_utc();
    let (expires, due, next) = (
        field("expires "),
        field("renewal due "),
        field("next attempt "),
    );
    assert!(expires > now + time::Duration::days(80), "{line}");
    // The ARI window is 30 to 31 days ahead; no failure: the next attempt is the due time.
    assert!(due > now + time::Duration::days(29), "{line}");
    assert!(due < now + time::Duration::days(32), "{line}");
    assert_eq!(next, due, "{line}");
    let (code, out, _) = ctl(&["status"]);
    assert_eq!(code, 0);
    assert!(out.contains("\nticket keys: local (current key "), "{out}");
    assert!(out.contains("\nconnections open: "), "{out}");
    assert!(out.contains("\nno reload since start"), "{out}");

    // A good certificate: its serial and expiry, in JSON and in words.
    let issued = ca.issued();
    let (code, out, err) = ctl(&["renew", "srv.test", "--json"]);
    assert_eq!(code, 0, "{out}{err}\n{}", srv.stderr());
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    net_support::assert_matches_schema(&v);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(ca.issued(), issued + 1, "one new certificate");
    let serial = v["serial"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    assert!(
        srv.stderr()
            .contains(&format!("from=order serial={serial} ")),
        "the serial told is the one installed: {v}\n{}",
        srv.stderr()
    );
    assert_eq!(v["not_after"], v["certificate"]["not_after"], "{v}");
    let (code, out, err) = ctl(&["renew", "srv.test"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("renewed: serial "), "{out}");
    assert!(!out.contains(&serial), "a new serial again: {out}");
    assert!(out.contains("\nacme (acme): srv.test; expires "), "{out}");

    // The CA hands back a certificate for other names: refused, told, the old one stays.
    let (_, before, _) = ctl(&["certs", "--json"]);
    ca.set(|m| m.cert = Cert::WrongNames);
    let (code, out, err) = ctl(&["renew", "srv.test", "--json", "--timeout", "15"]);
    assert_eq!(code, 1, "{out}{err}\n{}", srv.stderr());
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    net_support::assert_matches_schema(&v);
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["serial"], serde_json::Value::Null, "{v}");
    let reason = v["reason"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(reason.contains("srv.test"), "{reason}");
    let before: serde_json::Value = serde_json::from_str(&before).expect("JSON");
    assert_eq!(
        v["certificate"]["not_after"], before["certificates"][0]["not_after"],
        "the served certificate stays: {v}"
    );
    let (code, out, _) = ctl(&["renew", "srv.test"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("renewal failed: "), "{out}");
    assert!(
        out.contains("\nstill served: acme (acme): srv.test; expires "),
        "{out}"
    );
}

/// `ctl renew --timeout 1` against a CA that accepts the connection and never answers:
/// no result within the deadline is an error (exit 2) that says the renewal goes on, after
/// about the deadline (not the client's 5 s margin, not the CA's own timeouts).
#[test]
fn acme_hostile_ctl_renew_with_no_result_in_time_exits_2() {
    let t = tempfile::tempdir().expect("tempdir");
    let control = t.path().join("control.sock");
    let control = control.to_str().expect("UTF-8 path");
    let storage = t.path().join("acme");
    let dir = format!("https://127.0.0.1:{}/dir", net_support::black_hole());
    let srv = Serve::start(&[
        "--respond",
        "echo",
        "--acme",
        &dir,
        "--domain",
        "srv.test",
        "--acme-storage",
        storage.to_str().expect("UTF-8 path"),
        "--control",
        control,
    ]);
    let t0 = Instant::now();
    let out = Command::new(BIN)
        .args([
            "ctl",
            "--control",
            control,
            "renew",
            "srv.test",
            "--timeout",
            "1",
        ])
        .args(["--json"])
        .stdin(Stdio::null())
        .output()
        .expect("run tlskit ctl");
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}\n{}", srv.stderr());
    assert!(
        err.contains("srv.test: the renewal did not end within 1 s; it goes on"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema"], "tlskit.error/1", "{v}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn acme_hostile_serve_renewal_task_is_restarted_after_panics() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    let srv = serve(
        &ca,
        &t.path().join("acme"),
        &[("TLSKIT_TEST_ACME_PANICS", "3")],
    );
    let limit = Duration::from_secs(20);
    assert!(
        srv.wait_log("event=acme_certificate_installed", limit),
        "{}",
        srv.stderr()
    );
    let log = srv.stderr();
    assert_eq!(log.matches("event=acme_task_restarted").count(), 3, "{log}");
    assert!(
        log.contains("reason=\"it panicked: TLSKIT_TEST_ACME_PANICS"),
        "{log}"
    );
    assert_eq!(metric(&srv, "tlskit_acme_task_restarts_total"), 3.0);
    assert!(metric(&srv, "tlskit_acme_errors_total") >= 3.0);
    let at = ca.ari_requests();
    assert!(
        until(limit, || ca.ari_requests() >= at + 3),
        "{}",
        srv.stderr()
    );
}

/// With `--acme-issuer-roots` (the CA's issuing roots), a certificate that does not chain
/// to them is refused (`untrusted`, exit 2, nothing written); one that does is accepted.
/// On main the flag did not exist.
#[test]
fn acme_hostile_result_must_chain_to_the_issuer_roots() {
    let ca = HostileCa::start(Mode::default());
    let t = tempfile::tempdir().expect("tempdir");
    let roots = s(&ca.roots);
    let (code, _, err) = run(
        &ca,
        t.path(),
        "issue",
        "good.pem",
        &["--acme-issuer-roots", &roots],
    );
    assert_eq!(code, 0, "{err}");
    ca.set(|m| m.cert = Cert::OtherIssuer);
    let (code, _, err) = run(
        &ca,
        t.path(),
        "issue",
        "other.pem",
        &["--acme-issuer-roots", &roots],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refused (untrusted)"), "{err}");
    assert!(!t.path().join("other.pem").exists());
    // Without the roots, the issuer is not checked.
    let (code, _, err) = run(&ca, t.path(), "issue", "other.pem", &[]);
    assert_eq!(code, 0, "{err}");
}
