//! Secrets never printed, and a wrong PIN never retried (issue 27, items 1 and 6), against
//! SoftHSM2 with the token's PIN set to 11112222:
//!
//! * every spelling of the PIN attribute (`pin-value=`, `PIN-VALUE=`, `pin_value=`,
//!   `pinvalue=`, `pin-value=12;PIN&bogus=1`, %-encoded names and values) and a Redis
//!   password go through every command and log path that can print them (`serve --key`
//!   with a certificate that does not match, a reload that meets it, an SNI directory's
//!   key file, `connect --key`, `csr new --key`, the configuration file, a usage error,
//!   `pkcs11 list --json`, `--shared-state` with a bad URL and with an unreachable Redis),
//!   in text and JSON logs and `--json` documents; none shows the secret;
//! * a token whose PIN was changed: the server's key with the old PIN is refused once,
//!   then 20 reloads make no login at all (counted by OpenSC's pkcs11-spy, which logs
//!   every C_Login the server makes, and by the server's metrics), `tlskit doctor
//!   --metrics` reports the disabled key; a corrected PIN file and one reload bring the
//!   key back.
//!
//! A child of `pkcs11` (its `Token` helper).

use super::*;

/// The token's PIN in these tests.
const SECRET_PIN: &str = "11112222";
/// A Redis password.
const REDIS_PW: &str = "s3cretRedisPw";

/// Text that must show none of the secrets.
fn assert_clean(what: &str, text: &str) {
    for secret in [
        SECRET_PIN,
        "%31%31%31%31",
        "12;PIN",
        ";PIN&",
        "bogus=1",
        REDIS_PW,
    ] {
        assert!(
            !text.contains(secret),
            "{what}: {secret:?} printed:\n{text}"
        );
    }
}

/// stdout and stderr of a finished command, for [`assert_clean`].
fn both(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A token whose user PIN is [`SECRET_PIN`], with the key `tls` and a certificate for it.
fn token_with_secret_pin(label: &str) -> (Token, PathBuf) {
    let t = Token::new(label);
    t.keygen("tls", "p256");
    let cert = t.self_signed("tls", "tls.pem");
    change_pin(&t, PIN, SECRET_PIN);
    (t, cert)
}

fn change_pin(t: &Token, old: &str, new: &str) {
    need("pkcs11-tool", "opensc");
    let out = t
        .cmd("pkcs11-tool")
        .args([
            "--module",
            &s(&t.module),
            "--token-label",
            &t.label,
            "--change-pin",
            "--pin",
            old,
            "--new-pin",
            new,
        ])
        .output()
        .expect("pkcs11-tool");
    assert!(out.status.success(), "{}", both(&out));
}

/// The PIN attribute as users misspell it: each with the URI of `t`'s key.
fn pin_variants(t: &Token) -> Vec<String> {
    let base = t.uri("tls");
    [
        "pin-value=11112222",
        "PIN-VALUE=11112222",
        "Pin-Value=11112222",
        "pin_value=11112222",
        "pinvalue=11112222",
        "pin=11112222",
        "pin-value=12;PIN&bogus=1",
        "pin-value%3D11112222",
        "pin%2Dvalue=11112222",
        "pin-value=%31%31%31%31%32%32%32%32",
        "pin-value:11112222",
        "pin11112222",
    ]
    .iter()
    .map(|q| format!("{base}&{q}"))
    .collect()
}

#[test]
fn pkcs11_pin_and_redis_password_are_never_printed() {
    let (t, tok_cert) = token_with_secret_pin("redact");
    let pki = Pki::new();
    pki.server_leaf("other.pem", "other.key", "other", &["other.example"]);
    let other = pki.path("other.pem");
    let tlskit = |args: &[&str]| {
        let mut c = t.cmd(BIN);
        c.args(args);
        c.output().expect("tlskit")
    };
    // 1. serve --key with a certificate that does not match (the right PIN: the key
    // opens, then the pair is refused), and every misspelling (refused by the parser).
    for key in pin_variants(&t) {
        let out = tlskit(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &s(&other),
            "--key",
            &key,
        ]);
        let text = both(&out);
        run::assert_code(&out, 2);
        assert_clean(&format!("serve --key {key}"), &text);
        assert!(text.contains("pkcs11:token=redact;object=tls"), "{text}");
    }
    let right = format!("{}&pin-value={SECRET_PIN}", t.uri("tls"));
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &s(&other),
        "--key",
        &right,
    ]);
    let e = err2(&out);
    assert!(
        e.contains("pin-value=***: private key does not match"),
        "{e}"
    );
    // 2. connect --key (a client key) and csr new --key, with --json: the error document.
    let srv = Serve::start(&["--cert", &s(&other), "--key", &s(&pki.path("other.key"))]);
    for key in pin_variants(&t) {
        let out = tlskit(&[
            "connect",
            &format!("127.0.0.1:{}", srv.port()),
            "--cert",
            &s(&other),
            "--key",
            &key,
            "--json",
        ]);
        assert_clean(&format!("connect --key {key}"), &both(&out));
        let out = tlskit(&[
            "csr",
            "new",
            "--key",
            &key,
            "--subject",
            "CN=x",
            "-o",
            &s(&t.path("x.csr")),
        ]);
        assert_clean(&format!("csr new --key {key}"), &both(&out));
    }
    // 3. The configuration file: the key in it, and a line that does not parse.
    for key in pin_variants(&t) {
        let conf = t.path("serve.toml");
        std::fs::write(
            &conf,
            format!(
                "listen = [\"127.0.0.1:0\"]\ncert = \"{}\"\nkey = \"{key}\"\n",
                s(&other)
            ),
        )
        .expect("write");
        let out = tlskit(&["serve", "--config", &s(&conf)]);
        run::assert_code(&out, 2);
        assert_clean(&format!("config key {key}"), &both(&out));
        std::fs::write(&conf, format!("key = \"{key}\" bad\n")).expect("write");
        let out = tlskit(&["serve", "--config", &s(&conf)]);
        run::assert_code(&out, 2);
        assert_clean(&format!("config line {key}"), &both(&out));
    }
    // 4. pkcs11 list --json, with a module path holding a PIN-like attribute and with a
    // wrong PIN in the environment.
    let out = tlskit(&[
        "pkcs11",
        "list",
        "--module",
        &format!("/nonexistent/mod.so?pin-value={SECRET_PIN}"),
        "--json",
    ]);
    run::assert_code(&out, 2);
    assert_clean("pkcs11 list --module", &both(&out));
    let out = t
        .cmd(BIN)
        .env("TLSKIT_PKCS11_PIN", "00000000")
        .args(["pkcs11", "list", "--module", &s(&t.module), "--json"])
        .output()
        .expect("tlskit");
    assert_clean("pkcs11 list", &both(&out));
    // 5. --shared-state: a URL that does not parse, and a Redis nobody listens on.
    let kek = t.path("fleet.kek");
    std::fs::write(&kek, [7u8; 32]).expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kek, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    for url in [
        format!("redis://tlskit:{REDIS_PW}@127.0.0.1:notaport/0"),
        format!("redis://tlskit:{REDIS_PW}@127.0.0.1:1/0"),
        format!("rediss://{REDIS_PW}@127.0.0.1:1/0"),
        format!("redis://:{REDIS_PW}@127.0.0.1:1/x"),
    ] {
        let out = tlskit(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &s(&other),
            "--key",
            &s(&pki.path("other.key")),
            "--shared-state",
            &url,
            "--shared-state-key",
            &s(&kek),
            "--shared-state-required",
        ]);
        run::assert_code(&out, 2);
        assert_clean(&format!("--shared-state {url}"), &both(&out));
    }
    // 6. A usage error quotes the argument it refused (a URI given without --key).
    for key in pin_variants(&t) {
        let out = tlskit(&["serve", &key]);
        run::assert_code(&out, 2);
        let text = both(&out);
        assert!(text.contains("unexpected argument"), "{text}");
        assert_clean(&format!("usage error {key}"), &text);
    }
    // 7. A running server: an SNI directory whose key files misspell the PIN
    // (sni_pair_skipped), a reload that meets a certificate that no longer matches
    // (reload_failed), text and JSON logs.
    for format in ["text", "json"] {
        let sni = t.path(&format!("sni-{format}"));
        std::fs::create_dir(&sni).expect("mkdir");
        for (i, key) in pin_variants(&t).iter().enumerate() {
            std::fs::copy(&tok_cert, sni.join(format!("v{i}.crt"))).expect("copy");
            std::fs::write(sni.join(format!("v{i}.key")), format!("{key}\n")).expect("write");
        }
        let cert = t.path(&format!("served-{format}.pem"));
        std::fs::copy(&tok_cert, &cert).expect("copy");
        let mut c = t.cmd(BIN);
        c.env_remove("TLSKIT_PKCS11_PIN");
        let srv = Serve::start_with(
            c,
            &[
                "--cert",
                &s(&cert),
                "--key",
                &right,
                "--sni-dir",
                &s(&sni),
                "--log-format",
                format,
            ],
            1,
        );
        assert!(
            srv.wait_log("sni_pair_skipped", Duration::from_secs(10)),
            "{}",
            srv.stderr()
        );
        std::fs::copy(&other, &cert).expect("copy");
        srv.signal("HUP");
        assert!(
            srv.wait_log("reload_failed", Duration::from_secs(10)),
            "{}",
            srv.stderr()
        );
        let log = srv.stderr();
        assert!(log.contains("private key does not match"), "{log}");
        assert_clean(&format!("serve log ({format})"), &log);
    }
}

/// pkcs11-spy from OpenSC: a PKCS#11 module that logs every call and passes it on to
/// the module named by PKCS11SPY.
fn pkcs11_spy() -> PathBuf {
    for c in [
        "/usr/lib/x86_64-linux-gnu/pkcs11/pkcs11-spy.so",
        "/usr/lib/x86_64-linux-gnu/pkcs11-spy.so",
        "/usr/lib/aarch64-linux-gnu/pkcs11/pkcs11-spy.so",
        "/usr/lib64/pkcs11/pkcs11-spy.so",
        "/usr/lib/pkcs11/pkcs11-spy.so",
    ] {
        if Path::new(c).is_file() {
            return PathBuf::from(c);
        }
    }
    panic!("pkcs11-spy.so (OpenSC) is not installed: run scripts/setup (Debian: opensc-pkcs11)");
}

/// C_Login calls in a pkcs11-spy log, by what the token answered.
fn logins(spy_log: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(spy_log).unwrap_or_default();
    let mut calls = 0;
    let mut incorrect = 0;
    let mut in_login = false;
    for l in text.lines() {
        if l.contains(": C_") {
            in_login = l.contains(": C_Login");
            calls += usize::from(in_login);
        } else if in_login && l.starts_with("Returned:") {
            incorrect += usize::from(l.contains("CKR_PIN_INCORRECT"));
            in_login = false;
        }
    }
    (calls, incorrect)
}

#[test]
fn pkcs11_wrong_pin_is_not_retried_on_reload_until_the_pin_source_changes() {
    need("curl", "curl");
    let (t, tok_cert) = token_with_secret_pin("rotated");
    let pki = Pki::new();
    pki.server_leaf("other.pem", "other.key", "other", &["other.example"]);
    // The operator changed the token's PIN; the PIN file still holds the old one.
    change_pin(&t, SECRET_PIN, "55556666");
    let pin_file = t.path("pin.txt");
    std::fs::write(&pin_file, format!("{SECRET_PIN}\n")).expect("write");
    let spy = pkcs11_spy();
    let spy_log = t.path("spy.log");
    let sni = t.path("sni");
    std::fs::create_dir(&sni).expect("mkdir");
    std::fs::copy(&tok_cert, sni.join("localhost.crt")).expect("copy");
    std::fs::write(
        sni.join("localhost.key"),
        format!(
            "pkcs11:token=rotated;object=tls?module-path={}&pin-source=file:{}\n",
            s(&spy),
            s(&pin_file)
        ),
    )
    .expect("write");
    let mut c = t.cmd(BIN);
    c.env("PKCS11SPY", &t.module)
        .env("PKCS11SPY_OUTPUT", &spy_log);
    let srv = Serve::start_with(
        c,
        &[
            "--cert",
            &s(&pki.path("other.pem")),
            "--key",
            &s(&pki.path("other.key")),
            "--sni-dir",
            &s(&sni),
            "--respond",
            "http",
            "--metrics",
            "127.0.0.1:0",
        ],
        1,
    );
    // At start: one login, refused; the pair is skipped.
    assert_eq!(logins(&spy_log), (1, 1), "{}", srv.stderr());
    assert!(
        srv.stderr().contains("CKR_PIN_INCORRECT"),
        "{}",
        srv.stderr()
    );
    // 20 reloads with the same PIN file: no login at all, each says why.
    for _ in 0..20 {
        srv.reload();
    }
    let (calls, incorrect) = logins(&spy_log);
    eprintln!("C_Login with the wrong PIN over 20 reloads: {}", calls - 1);
    assert_eq!((calls, incorrect), (1, 1), "{}", srv.stderr());
    let log = srv.stderr();
    assert_eq!(
        log.matches("refused this PIN before (CKR_PIN_INCORRECT)")
            .count(),
        20,
        "{log}"
    );
    assert!(log.contains("correct the PIN where it comes from"), "{log}");
    assert!(
        !log.contains(SECRET_PIN) && !log.contains("55556666"),
        "{log}"
    );
    let metrics = net_support::scrape(&srv.metrics_addr());
    assert_eq!(
        net_support::metric(&metrics, "tlskit_pkcs11_pin_refused_tokens"),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        net_support::metric(
            &metrics,
            "tlskit_pkcs11_pin_refused{token=\"rotated\",rv=\"CKR_PIN_INCORRECT\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        net_support::metric(&metrics, "tlskit_pkcs11_logins_total{result=\"skipped\"}"),
        Some(20.0),
        "{metrics}"
    );
    assert!(!curl(&tok_cert, srv.port()).status.success());
    // `tlskit doctor --metrics` tells the operator.
    let doctor = |want_status: &str| -> serde_json::Value {
        let out = t
            .cmd(BIN)
            .args(["doctor", "--metrics", &srv.metrics_addr(), "--json"])
            .output()
            .expect("tlskit doctor");
        ok(&out);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        net_support::assert_matches_schema(&v);
        let m = v["sections"]["serve_metrics"].clone();
        assert_eq!(m["status"], want_status, "{m}");
        m
    };
    let m = doctor("warn");
    assert_eq!(m["pkcs11_pin_refused"][0]["token"], "rotated", "{m}");
    assert_eq!(m["pkcs11_pin_refused"][0]["rv"], "CKR_PIN_INCORRECT", "{m}");
    assert_eq!(m["pkcs11_logins_skipped"], 20.0, "{m}");
    // The operator corrects the PIN file: one reload, one login, the key is back.
    std::fs::write(&pin_file, "55556666\n").expect("write");
    srv.reload();
    let (calls, incorrect) = logins(&spy_log);
    assert_eq!((calls, incorrect), (2, 1), "{}", srv.stderr());
    let out = curl(&tok_cert, srv.port());
    ok(&out);
    let metrics = net_support::scrape(&srv.metrics_addr());
    assert_eq!(
        net_support::metric(&metrics, "tlskit_pkcs11_pin_refused_tokens"),
        Some(0.0),
        "{metrics}"
    );
    let m = doctor("ok");
    assert_eq!(m["pkcs11_pin_refused"], serde_json::json!([]), "{m}");
}
