//! Issue 27 item 10: every duration and size of `serve`, from a flag or the config file, is
//! checked against its range before any arithmetic. Before, `1e19` seconds of
//! handshake_timeout/header_timeout made every connection's task panic, `shutdown_grace =
//! 1e19` panicked on SIGTERM, `max_connections = u64::MAX` panicked at start and a 32 GiB
//! handshake_budget aborted at the first connection. Now each is refused at start, exit 2,
//! naming the flag (or the file and key) and the range.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::net_support::Pki;
use crate::BIN;

/// `tlskit serve` with these arguments: its exit code and stderr, or None when it was still
/// running after 10 s (then killed): a value that should have been refused was accepted.
fn serve(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t0 = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st.code();
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (code, err)
}

/// (config key, value, what the range says, extra arguments the setting needs).
const CASES: &[(&str, &str, &str, &[&str])] = &[
    (
        "handshake_timeout",
        "1e19",
        "must be 0.001 to 86400 seconds",
        &[],
    ),
    (
        "header_timeout",
        "1e19",
        "must be 0.001 to 86400 seconds",
        &[],
    ),
    (
        "idle_timeout",
        "1e19",
        "must be 0.001 to 604800 seconds",
        &[],
    ),
    ("shutdown_grace", "1e19", "must be 0 to 86400 seconds", &[]),
    (
        "max_connections",
        "9223372036854775807",
        "must be 1 to 1048576 connections",
        &[],
    ),
    (
        "handshake_budget",
        "34359738368",
        "must be 1024 to 1073741824 bytes",
        &[],
    ),
    (
        "max_client_hello",
        "100",
        "must be 1024 to 65556 bytes",
        &[],
    ),
    (
        "ticket_rotation",
        "21601",
        "must be 1 to 21600 seconds",
        &[],
    ),
    (
        "expiry_warning_days",
        "4294967295",
        "must be 0 to 3650 days",
        &[],
    ),
    (
        "shared_state_reread",
        "1e19",
        "must be 0.1 to 3600 seconds",
        &[
            "--shared-state",
            "redis://127.0.0.1:1/0",
            "--shared-state-key",
            "fleet.kek",
        ],
    ),
    (
        "acme_recheck",
        "1e19",
        "must be 0.1 to 604800 seconds",
        &[
            "--acme",
            "https://127.0.0.1:1/directory",
            "--domain",
            "a.test",
            "--acme-storage",
            "acme",
        ],
    ),
    (
        "acme_retry",
        "1e19",
        "must be 0.01 to 3600 seconds",
        &[
            "--acme",
            "https://127.0.0.1:1/directory",
            "--domain",
            "a.test",
            "--acme-storage",
            "acme",
        ],
    ),
];

fn setup() -> (Pki, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let pki = Pki::new();
    let kek = pki.path("fleet.kek");
    std::fs::write(&kek, [7u8; 32]).expect("kek");
    std::fs::set_permissions(&kek, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let c = pki.path("chain.pem").to_string_lossy().into_owned();
    let k = pki.path("leaf.key").to_string_lossy().into_owned();
    (pki, c, k)
}

#[test]
fn serve_refuses_out_of_range_flags_naming_the_flag_and_range() {
    let (pki, c, k) = setup();
    for (key, value, range, extra) in CASES {
        let flag = format!("--{}", key.replace('_', "-"));
        let mut args = vec!["--listen", "127.0.0.1:0", "--cert", &c, "--key", &k];
        args.extend_from_slice(extra);
        args.extend([flag.as_str(), value]);
        let (code, err) = serve(pki.dir.path(), &args);
        assert_eq!(code, Some(2), "{flag} {value}: {err}");
        assert!(
            err.contains(&format!("{flag} ")) && err.contains(&format!("{key} {range}")),
            "{flag} {value}: {err}"
        );
        assert!(!err.contains("listening on"), "{err}");
    }
    // The flag form of the u64::MAX from the issue (TOML integers stop at i64::MAX).
    let (code, err) = serve(
        pki.dir.path(),
        &[
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &c,
            "--key",
            &k,
            "--max-connections",
            "18446744073709551615",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("max_connections must be 1 to 1048576"),
        "{err}"
    );
}

#[test]
fn serve_refuses_out_of_range_config_keys_naming_the_file_key_and_range() {
    let (pki, c, k) = setup();
    let file = pki.path("serve.toml");
    for (key, value, range, extra) in CASES {
        std::fs::write(&file, format!("{key} = {value}\n")).expect("config");
        let mut args = vec![
            "--config",
            "serve.toml",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &c,
            "--key",
            &k,
        ];
        args.extend_from_slice(extra);
        let (code, err) = serve(pki.dir.path(), &args);
        assert_eq!(code, Some(2), "{key} = {value}: {err}");
        assert!(
            err.contains(&format!("serve.toml: {key} = "))
                && err.contains(&format!("{key} {range}")),
            "{key} = {value}: {err}"
        );
    }
}

/// The edges of each range are accepted (a refusal is not a blanket one): the server
/// starts with every setting at its largest accepted value.
#[test]
fn serve_accepts_the_largest_value_of_every_range() {
    let (pki, c, k) = setup();
    let (kek, storage) = (
        pki.path("fleet.kek").to_string_lossy().into_owned(),
        pki.path("acme").to_string_lossy().into_owned(),
    );
    // Every range of CASES: the fleet's and ACME's take their feature's flags (Redis and
    // the CA unreachable: the server starts all the same, on --cert).
    let mut srv = crate::net_support::Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--handshake-timeout",
        "86400",
        "--header-timeout",
        "86400",
        "--idle-timeout",
        "604800",
        "--shutdown-grace",
        "86400",
        "--max-connections",
        "1048576",
        "--max-client-hello",
        "65556",
        "--handshake-budget",
        "1073741824",
        "--ticket-rotation",
        "21600",
        "--expiry-warning-days",
        "3650",
        "--shared-state",
        "redis://127.0.0.1:1/0",
        "--shared-state-key",
        &kek,
        "--shared-state-reread",
        "3600",
        "--acme",
        "https://127.0.0.1:1/directory",
        "--domain",
        "a.test",
        "--acme-storage",
        &storage,
        "--acme-recheck",
        "604800",
        "--acme-retry",
        "3600",
    ]);
    // A connection is served (the budget's one allocation is made on it).
    use std::io::Write;
    let mut tls = crate::net_support::tls_connect(srv.addr(), &pki.path("ca.pem"));
    tls.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("write");
    let (body, _) = crate::net_support::read_until_close(&mut tls, Duration::from_secs(10));
    assert!(
        String::from_utf8_lossy(&body).contains("200 OK"),
        "{}",
        srv.stderr()
    );
    assert_eq!(srv.wait_exit(Duration::ZERO), None, "{}", srv.stderr());
}
