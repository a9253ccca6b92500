//! ACME accounts against a real Pebble (issue 26): external account binding (Pebble's
//! `externalAccountBindingRequired`), `tlskit acme account show|rollover|deactivate` on
//! a directory and on a fleet's Redis, `restore` of a rescued key (also after a real Redis
//! refused the rolled-over key), and one account for a fleet whose nodes start together.
//! Pebble and its helpers are `acme.rs`'s.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::acme::{account_file, acme, json, mode, s, serve_acme, served_serial, until, Pebble};
use crate::net_support::{self, Serve};

/// An EAB HMAC key as a CA hands it out: base64url of 32 bytes, no padding.
const EAB_KEY: &str = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
/// Another valid key of the same shape, which the CA does not know.
const WRONG_KEY: &str = "hJD7D7DrBNQ4zGoqCMZtmQo2PTZM1mXNfq9XEbYW9mrCkzN0WqhzH4PqqmAQMq6X";

/// Pebble requiring an external account binding, with key ID `kid-1` bound to
/// [`EAB_KEY`].
fn pebble_with_eab() -> Pebble {
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
    let p = pebble_with_eab();
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
}

/// `tlskit acme account SUB ARGS` with the CA flags filled in.
fn account_cmd(p: &Pebble, storage: &Path, sub: &str, args: &[&str]) -> (i32, String, String) {
    let mut a = vec!["account", sub];
    a.extend(args);
    let (dir, st, roots) = (p.directory(), s(storage), s(&p.roots));
    a.extend([
        "--directory",
        &dir,
        "--acme-storage",
        &st,
        "--acme-roots",
        &roots,
    ]);
    let o = net_support::tlskit(&[&["acme"][..], &a].concat());
    net_support::assert_sentences("tlskit acme account", &String::from_utf8_lossy(&o.stderr));
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The files of the storage's accounts directory, sorted.
fn account_files(storage: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(storage.join("accounts"))
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Issue 26: `tlskit acme account show|rollover|deactivate` on a directory storage,
/// against Pebble: the key rolled over (the new key written 0600, the backup gone once the
/// CA confirmed, the old key no longer the account's, orders go on with the new one), and
/// the account deactivated only with --yes (its credentials kept as a backup, the next
/// order making a new account).
#[test]
fn acme_account_show_rollover_deactivate() {
    let p = Pebble::start();
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    let http = format!("127.0.0.1:{}", p.http_port);
    let key = s(&t.path().join("key.pem"));
    let chain = s(&t.path().join("chain.pem"));
    let order = |sub: &str| {
        acme(
            &p,
            &storage,
            &[
                sub,
                "--domain",
                "acct.test",
                "--key",
                &key,
                "-o",
                &chain,
                "--http-listen",
                &http,
                "--force",
                "--json",
            ]
            .iter()
            .copied()
            .filter(|a| sub == "renew" || *a != "--force")
            .collect::<Vec<_>>(),
        )
    };
    // No account yet: show is an error naming where it looked.
    let (code, _, err) = account_cmd(&p, &storage, "show", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no ACME account"), "{err}");
    let (code, _, err) = order("issue");
    assert_eq!(code, 0, "{err}");
    let file = account_file(&storage);
    let creds: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("account")).expect("json");
    let id = creds["id"].as_str().expect("id").to_string();

    let (code, out, err) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(code, 0, "{err}");
    let shown = json(&out);
    assert_eq!(shown["status"], "valid");
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["storage"], s(&file));
    let old_thumb = shown["key_thumbprint"].as_str().expect("thumb").to_string();
    let (code, out, _) = account_cmd(&p, &storage, "show", &[]);
    assert_eq!(code, 0);
    assert!(out.contains(&id) && out.contains("valid"), "{out}");

    // Rollover: a new key, the same account.
    let old_creds = std::fs::read(&file).expect("account");
    let (code, out, err) =
        account_cmd(&p, &storage, "rollover", &["--json", "--log-level", "info"]);
    assert_eq!(code, 0, "{err}\n{}", p.log());
    let r = json(&out);
    assert_eq!(r["status"], "valid");
    assert_eq!(r["id"], id.as_str());
    assert_eq!(r["previous_key_thumbprint"], old_thumb.as_str());
    assert_ne!(r["key_thumbprint"], old_thumb.as_str());
    assert_eq!(
        r["backup"],
        serde_json::Value::Null,
        "confirmed: no backup left"
    );
    assert!(err.contains("event=acme_account_key_rolled_over"), "{err}");
    assert!(
        !err.contains("PRIVATE KEY") && !out.contains("key_pkcs8"),
        "{err}"
    );
    assert_eq!(mode(&file), 0o600);
    assert_ne!(std::fs::read(&file).expect("account"), old_creds);
    assert_eq!(
        account_files(&storage).len(),
        1,
        "{:?}",
        account_files(&storage)
    );
    let (code, out, _) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["key_thumbprint"], r["key_thumbprint"]);
    // Orders go on with the new key, with the same account.
    let (code, out, err) = order("renew");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["issued"]["account_created"], false);
    // The old key is no longer the account's: the CA knows no account for it (exit 1).
    let old = t.path().join("old");
    std::fs::create_dir_all(old.join("accounts")).expect("dir");
    std::fs::write(
        old.join("accounts").join(file.file_name().expect("name")),
        &old_creds,
    )
    .expect("write");
    let (code, out, err) = account_cmd(&p, &old, "show", &["--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(json(&out)["status"], "unknown");

    // Deactivate: refused without --yes when nobody can be asked.
    let (code, _, err) = account_cmd(&p, &storage, "deactivate", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--yes"), "{err}");
    let (code, _, _) = account_cmd(&p, &storage, "show", &[]);
    assert_eq!(code, 0, "still valid");
    let (code, out, err) = account_cmd(&p, &storage, "deactivate", &["--yes", "--json"]);
    assert_eq!(code, 0, "{err}");
    let d = json(&out);
    assert_eq!(d["status"], "deactivated");
    let backup = std::path::PathBuf::from(d["backup"].as_str().expect("backup"));
    assert_eq!(mode(&backup), 0o600);
    assert!(!file.exists(), "the credentials left their place");
    // The backup in place again: the CA says deactivated (exit 1).
    std::fs::copy(&backup, &file).expect("copy");
    let (code, out, _) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(code, 1);
    assert_eq!(json(&out)["status"], "deactivated");
    std::fs::remove_file(&file).expect("rm");
    // The next order makes a new account.
    let (code, out, err) = order("issue");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["account_created"], true);
    let (code, out, _) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(code, 0);
    assert_ne!(json(&out)["id"], id.as_str());
}

/// `tlskit acme account restore --from FILE` puts a rollover's rescued credentials back:
/// the storage is left holding the old credentials after a rollover (as when it refused
/// the new ones, which went to a rescue file), so the CA no longer knows the stored key
/// (exit 1); a file whose key the CA does not take changes nothing (exit 2); the rescue
/// file is restored (0600, the CA answers for the account with its key) and removed.
#[test]
fn acme_account_restore_puts_rescued_credentials_back() {
    let p = Pebble::start();
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    let http = format!("127.0.0.1:{}", p.http_port);
    let (key, chain) = (s(&t.path().join("key.pem")), s(&t.path().join("chain.pem")));
    let (code, _, err) = acme(
        &p,
        &storage,
        &[
            "issue",
            "--domain",
            "restore.test",
            "--key",
            &key,
            "-o",
            &chain,
            "--http-listen",
            &http,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let file = account_file(&storage);
    let old_creds = std::fs::read(&file).expect("account");
    let (code, out, err) = account_cmd(&p, &storage, "rollover", &["--json"]);
    assert_eq!(code, 0, "{err}");
    let rolled = json(&out);
    let new_creds = std::fs::read(&file).expect("account");
    // What a refusing storage leaves: the old credentials in place, the new ones rescued.
    // (Where a rollover writes it: DIR/rescue/<hash>.rollover-<time>.json.)
    let rescue_dir = storage.join("rescue");
    std::fs::create_dir_all(&rescue_dir).expect("dir");
    let hash = file
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let rescue = rescue_dir.join(format!("{hash}.rollover-1.json"));
    std::fs::write(&rescue, &new_creds).expect("rescue");
    std::fs::write(&file, &old_creds).expect("old back");
    let (code, out, err) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(
        (code, json(&out)["status"].clone()),
        (1, "unknown".into()),
        "{err}"
    );
    // The rescue file waiting to be restored is pointed at.
    assert!(err.contains("event=acme_account_rescue_found"), "{err}");
    assert!(err.contains(&s(&rescue)), "{err}");

    // A file with the stale key: refused, nothing changed.
    let stale = t.path().join("stale.json");
    std::fs::write(&stale, &old_creds).expect("stale");
    let (code, _, err) = account_cmd(&p, &storage, "restore", &["--from", &s(&stale)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read(&file).expect("account"), old_creds);

    let (code, out, err) = account_cmd(
        &p,
        &storage,
        "restore",
        &["--from", &s(&rescue), "--json", "--log-level", "info"],
    );
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["schema"], "tlskit.acme.account.restore/1");
    assert_eq!(r["status"], "valid");
    assert_eq!(r["id"], rolled["id"]);
    assert_eq!(r["key_thumbprint"], rolled["key_thumbprint"]);
    assert_eq!(
        r["previous_key_thumbprint"],
        rolled["previous_key_thumbprint"]
    );
    assert!(err.contains("event=acme_account_restored"), "{err}");
    assert!(
        !out.contains("key_pkcs8") && !err.contains("key_pkcs8"),
        "{err}"
    );
    assert!(!rescue.exists(), "the rescue file is removed once restored");
    assert_eq!(std::fs::read(&file).expect("account"), new_creds);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(
        account_files(&storage).len(),
        1,
        "{:?}",
        account_files(&storage)
    );
    let (code, out, _) = account_cmd(&p, &storage, "show", &["--json"]);
    assert_eq!(code, 0);
    assert_eq!(json(&out)["key_thumbprint"], rolled["key_thumbprint"]);
}

/// The fleet tests' set-up: Pebble, then a Redis of the test's own and a key file
/// (`kek`); redis-cli, which the tests use to look into Redis, must be installed
/// (`FleetState::start` requires redis-server).
fn pebble_and_fleet(kek: &[u8]) -> (Pebble, net_support::FleetState) {
    net_support::require("redis-cli");
    let p = Pebble::start();
    (p, net_support::FleetState::start(kek))
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args([
            "-p",
            &port.to_string(),
            "-a",
            "fleet-pw",
            "--no-auth-warning",
        ])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 26: three `serve --acme --shared-state` nodes started at once against one Redis
/// make exactly one ACME account (account creation is single-writer under a Redis lock,
/// the credentials read again once it is held): one `acme_account_created` line, one
/// account key in Redis and no backup key; all three serve the certificate. Then the
/// fleet's account through `tlskit acme account show|rollover --shared-state`.
#[test]
fn acme_fleet_nodes_started_together_make_one_account() {
    let (p, fleet) = pebble_and_fleet(&[0x5au8; 32]);
    let (rport, url, kek) = (fleet.port, fleet.url.clone(), s(&fleet.kek));
    let dir = p.directory();
    let roots = s(&p.roots);
    // Node A listens where Pebble validates; B and C anywhere. All three at once.
    let listens = [
        format!("127.0.0.1:{}", p.tls_port),
        "127.0.0.1:0".to_string(),
        "127.0.0.1:0".to_string(),
    ];
    let nodes: Vec<Serve> = std::thread::scope(|scope| {
        let handles: Vec<_> = listens
            .iter()
            .map(|listen| {
                let (dir, roots, url, kek) = (&dir, &roots, &url, &kek);
                scope.spawn(move || {
                    Serve::start(&[
                        "--listen",
                        listen,
                        "--respond",
                        "echo",
                        "--acme",
                        dir,
                        "--domain",
                        "srv.test",
                        "--acme-roots",
                        roots,
                        "--shared-state",
                        url,
                        "--shared-state-key",
                        kek,
                    ])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("node"))
            .collect()
    });
    let serials: Vec<String> = nodes
        .iter()
        .map(|n| {
            until(Duration::from_secs(90), || {
                served_serial(n.port(), "srv.test")
            })
            .unwrap_or_else(|| panic!("no certificate served: {}\n{}", n.stderr(), p.log()))
        })
        .collect();
    assert!(serials.iter().all(|x| *x == serials[0]), "{serials:?}");
    let created: usize = nodes
        .iter()
        .map(|n| n.stderr().matches("event=acme_account_created").count())
        .sum();
    let mut account_keys: Vec<String> =
        redis_cli(rport, &["--scan", "--pattern", "tlskit:acme:account:*"])
            .lines()
            .map(str::to_string)
            .collect();
    account_keys.sort();
    eprintln!(
        "three nodes started together: {created} acme_account_created lines, Redis \
         account keys {account_keys:?}"
    );
    let logs: Vec<String> = nodes.iter().map(Serve::stderr).collect();
    assert_eq!(
        created,
        1,
        "exactly one account for the fleet\n{}",
        logs.join("\n---\n")
    );
    assert_eq!(
        account_keys.len(),
        1,
        "one account key, no backup: {account_keys:?}"
    );
    assert!(!account_keys[0].contains(":backup:"), "{account_keys:?}");

    // The fleet's account through `acme account --shared-state`.
    let account = |sub: &str| {
        let o = net_support::tlskit(&[
            "acme",
            "account",
            sub,
            "--directory",
            &dir,
            "--acme-roots",
            &roots,
            "--shared-state",
            &url,
            "--shared-state-key",
            &kek,
            "--json",
        ]);
        net_support::assert_sentences("tlskit acme account", &String::from_utf8_lossy(&o.stderr));
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = account("show");
    assert_eq!(code, 0, "{err}");
    let shown = json(&out);
    assert_eq!(shown["status"], "valid");
    let storage_text = shown["storage"].as_str().expect("storage");
    assert!(storage_text.contains(&account_keys[0]), "{storage_text}");
    assert!(
        !storage_text.contains("fleet-pw") && !out.contains("fleet-pw"),
        "{out}"
    );
    let before = redis_cli(rport, &["GET", &account_keys[0]]);
    let (code, out, err) = account("rollover");
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["id"], shown["id"]);
    assert_ne!(r["key_thumbprint"], shown["key_thumbprint"]);
    assert_eq!(r["backup"], serde_json::Value::Null);
    assert_ne!(redis_cli(rport, &["GET", &account_keys[0]]), before);
    let keys = redis_cli(rport, &["--scan", "--pattern", "tlskit:acme:account:*"]);
    assert_eq!(
        keys.lines().count(),
        1,
        "the rollover backup removed once confirmed: {keys}"
    );
    let (code, out, _) = account("show");
    assert_eq!(code, 0);
    assert_eq!(json(&out)["key_thumbprint"], r["key_thumbprint"]);
}

/// A rollover on a fleet's Redis that refuses the new credentials after the CA took the
/// key: the rollover's user (an ACL of its own) may take the account lock and write the
/// backup but only read the account key, so every `SET` of the new credentials meets
/// NOPERM. Exit 2, an error naming the rescue file (0600, under --acme-storage/rescue,
/// the key printed nowhere), the Redis key unchanged and no longer the account's; once
/// the user may write again, `restore --from` puts the rescued credentials in Redis, the
/// CA answers for the account with them, and a node orders with that account.
#[test]
fn acme_fleet_rollover_refused_by_redis_is_rescued_and_restored() {
    let (p, fleet) = pebble_and_fleet(&[0x3cu8; 32]);
    let (t, rport, full, kek) = (&fleet.dir, fleet.port, fleet.url.clone(), s(&fleet.kek));
    let (dir, roots) = (p.directory(), s(&p.roots));
    let tls = format!("127.0.0.1:{}", p.tls_port);
    // A node of the fleet makes the account (and a certificate), then stops.
    let node = |domain: &str, url: &str| {
        Serve::start(&[
            "--listen",
            &tls,
            "--respond",
            "echo",
            "--acme",
            &dir,
            "--domain",
            domain,
            "--acme-roots",
            &roots,
            "--shared-state",
            url,
            "--shared-state-key",
            &kek,
        ])
    };
    {
        let first = node("roll.test", &full);
        until(Duration::from_secs(60), || {
            served_serial(p.tls_port, "roll.test")
        })
        .unwrap_or_else(|| panic!("no certificate served: {}\n{}", first.stderr(), p.log()));
        assert!(
            first.stderr().contains("event=acme_account_created"),
            "{}",
            first.stderr()
        );
    }
    let keys = redis_cli(rport, &["--scan", "--pattern", "tlskit:acme:account:*"]);
    let account_key = keys.trim().to_string();
    assert!(
        account_key.starts_with("tlskit:acme:account:") && !account_key.contains('\n'),
        "one account key: {keys}"
    );
    let stored_before = redis_cli(rport, &["GET", &account_key]);

    // The rollover's user: the account lock and backups read-write, the account itself
    // read-only.
    let ok = redis_cli(
        rport,
        &[
            "ACL",
            "SETUSER",
            "roller",
            "on",
            ">roller-pw",
            "+@all",
            "~tlskit:acme:lock:*",
            "~tlskit:acme:account:*:backup:*",
            "%R~tlskit:acme:account:*",
        ],
    );
    assert_eq!(ok.trim(), "OK", "{ok}");
    let as_roller = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-p", &rport.to_string(), "--user", "roller", "--pass"])
            .args(["roller-pw", "--no-auth-warning"])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The premise: that user reads the account key and may not write it.
    assert_eq!(as_roller(&["GET", &account_key]), stored_before);
    let refused = as_roller(&["SET", &account_key, "x"]);
    assert!(refused.contains("NOPERM"), "{refused}");
    let roller = format!("redis://roller:roller-pw@127.0.0.1:{rport}/0");
    let local = t.path().join("local");
    let account = |sub: &str, extra: &[&str]| {
        let local = s(&local);
        let mut args = vec![
            "acme",
            "account",
            sub,
            "--directory",
            &dir,
            "--acme-roots",
            &roots,
            "--acme-storage",
            &local,
            "--shared-state",
            &roller,
            "--shared-state-key",
            &kek,
        ];
        args.extend_from_slice(extra);
        let o = net_support::tlskit(&args);
        net_support::assert_sentences("tlskit acme account", &String::from_utf8_lossy(&o.stderr));
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = account("show", &["--json"]);
    assert_eq!(code, 0, "{err}");
    let shown = json(&out);
    let old_thumb = shown["key_thumbprint"].as_str().expect("thumb").to_string();

    let (code, out, err) = account("rollover", &["--json", "--log-level", "info"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("event=acme_account_key_rolled_over"), "{err}");
    assert!(err.contains("event=acme_account_store_retry"), "{err}");
    assert!(
        err.contains("(5 tries; last: ") && err.contains("NOPERM"),
        "every try, and Redis's refusal as the reason: {err}"
    );
    assert!(!err.contains("roller-pw"), "{err}");
    assert!(err.contains("event=acme_account_rescued"), "{err}");
    // The error sentence names the rescue file and how to put it back.
    let rescue = err
        .split("are saved in ")
        .nth(1)
        .and_then(|r| r.split(" (mode 0600)").next())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("no rescue file named: {err}"));
    assert!(
        err.contains(&format!(
            "tlskit acme account restore --from {}",
            s(&rescue)
        )),
        "{err}"
    );
    assert!(rescue.starts_with(local.join("rescue")), "{err}");
    assert_eq!(mode(&rescue), 0o600);
    assert_eq!(mode(&local.join("rescue")), 0o700);
    let rescued: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&rescue).expect("rescue")).expect("json");
    let secret = rescued["key_pkcs8"]
        .as_str()
        .unwrap_or_else(|| panic!("no key in the rescue file: {rescued}"));
    assert!(secret.len() > 40, "a key in the rescue file");
    for text in [&out, &err] {
        assert!(
            !text.contains(secret) && !text.contains("key_pkcs8") && !text.contains("PRIVATE KEY"),
            "{text}"
        );
    }
    // Redis still holds the old credentials, whose key the CA no longer takes.
    assert_eq!(redis_cli(rport, &["GET", &account_key]), stored_before);
    let (code, out, err) = account("show", &["--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(json(&out)["status"], "unknown");

    // Redis takes the user's writes again: the rescued credentials go back.
    let ok = redis_cli(rport, &["ACL", "SETUSER", "roller", "allkeys"]);
    assert_eq!(ok.trim(), "OK", "{ok}");
    let (code, out, err) = account(
        "restore",
        &["--from", &s(&rescue), "--json", "--log-level", "info"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let r = json(&out);
    assert_eq!(r["status"], "valid");
    assert_eq!(r["id"], shown["id"]);
    assert_ne!(r["key_thumbprint"], old_thumb.as_str());
    assert!(err.contains("event=acme_account_restored"), "{err}");
    assert!(!out.contains(secret) && !err.contains(secret), "{err}");
    assert!(!rescue.exists(), "the rescue file is removed once restored");
    assert_ne!(redis_cli(rport, &["GET", &account_key]), stored_before);
    let (code, out, err) = account("show", &["--json"]);
    assert_eq!(code, 0, "{err}");
    let now = json(&out);
    assert_eq!(now["status"], "valid");
    assert_eq!(now["id"], shown["id"]);
    assert_eq!(now["key_thumbprint"], r["key_thumbprint"]);

    // A node orders with the restored account (a new name: no stored certificate).
    let second = node("roll2.test", &roller);
    until(Duration::from_secs(60), || {
        served_serial(p.tls_port, "roll2.test")
    })
    .unwrap_or_else(|| panic!("no certificate served: {}\n{}", second.stderr(), p.log()));
    let log = second.stderr();
    assert!(log.contains("from=order"), "{log}");
    assert!(!log.contains("event=acme_account_created"), "{log}");
    assert!(!log.contains(secret), "{log}");
}
