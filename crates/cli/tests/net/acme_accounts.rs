//! ACME accounts against a real Pebble (issue 26): external account binding (Pebble's
//! `externalAccountBindingRequired`), `tlskit acme account show|rollover|deactivate` on
//! a directory and on a fleet's Redis, and one account for a fleet whose nodes start
//! together. Pebble and its helpers are `acme.rs`'s.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::acme::{acme, json, mode, s, serve_acme, served_serial, until, Pebble};

/// An EAB HMAC key as a CA hands it out: base64url of 32 bytes, no padding.
const EAB_KEY: &str = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
/// Another valid key of the same shape, which the CA does not know.
const WRONG_KEY: &str = "hJD7D7DrBNQ4zGoqCMZtmQo2PTZM1mXNfq9XEbYW9mrCkzN0WqhzH4PqqmAQMq6X";

/// Pebble requiring an external account binding, with key ID `kid-1` bound to
/// [`EAB_KEY`].
fn pebble_with_eab() -> Option<Pebble> {
    Pebble::start_config(
        serde_json::json!({
            "default": {"description": "90 days", "validityPeriod": 7776000}
        }),
        serde_json::json!({
            "externalAccountBindingRequired": true,
            "externalAccountMACKeys": {"kid-1": EAB_KEY}
        }),
    )
}

fn key_file(dir: &Path, name: &str, key: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("{key}\n")).expect("write key");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    s(&p)
}

#[test]
fn acme_eab_binds_the_account_and_refuses_without_or_with_a_wrong_key() {
    let Some(p) = pebble_with_eab() else { return };
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    let good = key_file(t.path(), "eab.key", EAB_KEY);
    let wrong = key_file(t.path(), "wrong.key", WRONG_KEY);
    let http = format!("127.0.0.1:{}", p.http_port);
    let key = s(&t.path().join("key.pem"));
    let chain = s(&t.path().join("chain.pem"));
    let issue = |extra: &[&str]| {
        let mut a = vec![
            "issue",
            "--domain",
            "eab.test",
            "--key",
            &key,
            "-o",
            &chain,
            "--http-listen",
            &http,
            "--log-level",
            "debug",
        ];
        a.extend(extra);
        acme(&p, &storage, &a)
    };
    let secret_shown = |text: &str| text.contains(EAB_KEY) || text.contains(WRONG_KEY);

    // Without a binding: the CA's refusal, said as what is missing.
    let (code, out, err) = issue(&[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("the CA requires an external account binding")
            && err.contains("externalAccountRequired"),
        "{err}"
    );
    // A key the CA does not know for this key ID: refused, naming the key ID only.
    let (code, out, err) = issue(&[
        "--acme-eab-kid",
        "kid-1",
        "--acme-eab-hmac-key-file",
        &wrong,
    ]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("refused the external account binding with key ID kid-1"),
        "{err}"
    );
    assert!(!secret_shown(&err) && !secret_shown(&out), "{err}");
    // A key file that is not base64url: refused before any request, the file named, its
    // content not quoted.
    let bad = key_file(t.path(), "bad.key", "not*base64url*at*all*");
    let (code, _, err) = issue(&["--acme-eab-kid", "kid-1", "--acme-eab-hmac-key-file", &bad]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.key") && err.contains("not base64url"),
        "{err}"
    );
    assert!(!err.contains("not*base64url"), "{err}");
    // The kid without the key file is a usage error.
    let (code, _, _) = issue(&["--acme-eab-kid", "kid-1"]);
    assert_eq!(code, 2);
    assert!(
        !storage.join("accounts").exists()
            || std::fs::read_dir(storage.join("accounts"))
                .expect("dir")
                .next()
                .is_none()
    );

    // The right key: the account is created, bound, and the certificate issued.
    let (code, out, err) = issue(&[
        "--acme-eab-kid",
        "kid-1",
        "--acme-eab-hmac-key-file",
        &good,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}\n{}", p.log());
    let r = json(&out);
    assert_eq!(r["account_created"], true);
    assert!(!secret_shown(&err) && !secret_shown(&out), "{err}");
    assert!(
        p.log()
            .contains("Successful newAccount Binding with CA using kid \"kid-1\""),
        "{}",
        p.log()
    );

    // `serve --acme` with the binding given as config keys: a new account (its own
    // storage), bound, and a certificate served.
    let storage2 = t.path().join("acme2");
    let cfg = t.path().join("serve.toml");
    std::fs::write(
        &cfg,
        format!("acme_eab_kid = \"kid-1\"\nacme_eab_hmac_key_file = \"{good}\"\n"),
    )
    .expect("config");
    let srv = serve_acme(&p, &storage2, &["--config", &s(&cfg)]);
    until(Duration::from_secs(60), || {
        served_serial(p.tls_port, "srv.test")
    })
    .unwrap_or_else(|| panic!("no certificate served: {}\n{}", srv.stderr(), p.log()));
    let log = srv.stderr();
    assert!(log.contains("event=acme_account_created"), "{log}");
    assert!(!secret_shown(&log), "{log}");
    drop(srv);
    // And as flags, with the wrong key: the failure is logged and retried, the key not shown.
    let storage3 = t.path().join("acme3");
    let srv = serve_acme(
        &p,
        &storage3,
        &[
            "--acme-eab-kid",
            "kid-1",
            "--acme-eab-hmac-key-file",
            &wrong,
            "--acme-retry",
            "0.2",
        ],
    );
    assert!(
        srv.wait_log("attempt=2", Duration::from_secs(20)),
        "{}",
        srv.stderr()
    );
    let log = srv.stderr();
    assert!(
        log.contains("refused the external account binding with key ID kid-1"),
        "{log}"
    );
    assert!(!secret_shown(&log), "{log}");
    let _ = mode;
}
