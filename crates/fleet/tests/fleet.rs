//! tlskit-fleet through its public API, without a Redis server: the key-encryption key
//! file and its refusals, URL redaction, and `SharedTickets` when Redis is unreachable or
//! refuses the log-in (a fake RESP peer on a loopback socket): a required fleet refuses
//! to start, naming the URL without its password; an optional one runs on local ticket
//! keys that seal and open tickets.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rustls::server::ProducesTickets;
use tlskit_fleet::shared::{read_kek, redact};
use tlskit_fleet::{SharedSettings, SharedTickets};
use tlskit_tls::NetError;

fn write_mode(path: &Path, bytes: &[u8], mode: u32) {
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A KEK file (32 raw bytes, mode 0600) in `dir`.
fn kek(dir: &Path) -> PathBuf {
    let p = dir.join("kek");
    write_mode(&p, &[7u8; 32], 0o600);
    p
}

fn settings(url: String, key_file: PathBuf, required: bool) -> SharedSettings {
    let mut s = SharedSettings::new(url, key_file);
    s.required = required;
    s
}

fn start_err(s: &SharedSettings) -> NetError {
    match SharedTickets::start(s, Duration::from_secs(3600)) {
        Ok(t) => panic!("started: {t:?}"),
        Err(e) => e,
    }
}

/// An address nothing listens on (a port that was just free).
fn closed_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

#[test]
fn a_kek_is_32_bytes_or_64_hex_digits_readable_by_its_owner_only() {
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let key: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap());
    write_mode(&raw, &key, 0o600);
    assert_eq!(read_kek(&raw).unwrap(), key);

    let hex = d.path().join("hex");
    let text: String = key.iter().map(|b| format!("{b:02x}")).collect();
    write_mode(&hex, format!("  {text}\n").as_bytes(), 0o400);
    assert_eq!(read_kek(&hex).unwrap(), key, "whitespace around is ignored");

    let open = d.path().join("open");
    write_mode(&open, &key, 0o644);
    let e = read_kek(&open).unwrap_err();
    assert!(matches!(e, NetError::File { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("readable by group or others (mode 644): chmod 600"),
        "{e}"
    );

    let short = d.path().join("short");
    write_mode(&short, b"0123456789", 0o600);
    let e = read_kek(&short).unwrap_err().to_string();
    assert!(e.starts_with(&short.display().to_string()), "{e}");
    assert!(e.contains("32 bytes or 64 hex digits, not 10 bytes"), "{e}");

    let not_hex = d.path().join("not-hex");
    write_mode(&not_hex, "g".repeat(64).as_bytes(), 0o600);
    assert!(read_kek(&not_hex).is_err());

    let missing = d.path().join("missing");
    let e = read_kek(&missing).unwrap_err().to_string();
    assert!(e.starts_with(&missing.display().to_string()), "{e}");
}

#[test]
fn redis_urls_are_shown_without_their_password() {
    let shown = redact("redis://tlskit:hunter2-secret@redis.test:6379/2");
    assert!(!shown.contains("hunter2-secret"), "{shown}");
    assert!(
        shown.contains("***") && shown.contains("redis.test:6379"),
        "{shown}"
    );
    let shown = redact("rediss://:only-a-password@redis.test/0");
    assert!(!shown.contains("only-a-password"), "{shown}");
    assert_eq!(redact("redis://redis.test:6379"), "redis://redis.test:6379");

    let d = tempfile::tempdir().unwrap();
    let s = settings(
        "redis://u:hunter2-secret@redis.test:6379".into(),
        kek(d.path()),
        true,
    );
    let debug = format!("{s:?}");
    assert!(!debug.contains("hunter2-secret"), "{debug}");
    assert!(debug.contains("redis.test"), "{debug}");
}

#[test]
fn settings_that_cannot_work_are_refused_before_any_connection() {
    let d = tempfile::tempdir().unwrap();
    let key = kek(d.path());

    let mut s = settings("redis://127.0.0.1:1".into(), key.clone(), true);
    s.ca = Some(d.path().join("ca.pem"));
    let e = start_err(&s).to_string();
    assert!(e.contains("--shared-state-ca needs a rediss:// URL"), "{e}");

    let s = settings("http://u:pw-in-url@redis.test".into(), key, true);
    let e = start_err(&s);
    assert!(matches!(e, NetError::Config(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("--shared-state http://"), "{text}");
    assert!(!text.contains("pw-in-url"), "{text}");

    // The KEK is read first: a bad one stops everything.
    let open = d.path().join("open-kek");
    write_mode(&open, &[1u8; 32], 0o640);
    let e = start_err(&settings("redis://127.0.0.1:1".into(), open, false));
    assert!(matches!(e, NetError::File { .. }), "{e}");
}

#[test]
fn a_required_fleet_does_not_start_without_redis() {
    let d = tempfile::tempdir().unwrap();
    let url = format!("redis://tlskit:hunter2-secret@{}", closed_port());
    let e = start_err(&settings(url, kek(d.path()), true));
    assert!(matches!(e, NetError::Config(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("(--shared-state-required)"), "{text}");
    assert!(text.contains("cannot connect"), "{text}");
    assert!(!text.contains("hunter2-secret"), "{text}");
}

/// A fake Redis that answers every AUTH with WRONGPASS; sends each AUTH's arguments.
fn refusing_redis() -> (SocketAddr, mpsc::Receiver<Vec<String>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut w = c.try_clone().unwrap();
            let mut r = BufReader::new(c);
            // A RESP array of bulk strings: *N, then N times $LEN and the bytes.
            let mut line = String::new();
            if r.read_line(&mut line).is_err() {
                continue;
            }
            let n: usize = line.trim_start_matches('*').trim().parse().unwrap_or(0);
            let mut args = Vec::new();
            for _ in 0..n {
                line.clear();
                r.read_line(&mut line).unwrap();
                let len: usize = line.trim_start_matches('$').trim().parse().unwrap();
                let mut b = vec![0u8; len + 2];
                r.read_exact(&mut b).unwrap();
                args.push(String::from_utf8_lossy(&b[..len]).into_owned());
            }
            let _ = tx.send(args);
            let _ = w.write_all(b"-WRONGPASS invalid username-password pair\r\n");
        }
    });
    (addr, rx)
}

#[test]
fn a_refused_log_in_stops_a_required_fleet_without_showing_the_password() {
    let d = tempfile::tempdir().unwrap();
    let (addr, auths) = refusing_redis();
    let url = format!("redis://tlskit:hunter2-secret@{addr}");
    let e = start_err(&settings(url, kek(d.path()), true));
    let text = e.to_string();
    assert!(
        text.contains("WRONGPASS"),
        "the server's refusal is told: {text}"
    );
    assert!(!text.contains("hunter2-secret"), "{text}");
    let first = auths.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        first,
        ["AUTH", "tlskit", "hunter2-secret"],
        "the password went to Redis"
    );
}

#[test]
fn without_redis_an_optional_fleet_seals_tickets_with_local_keys() {
    let d = tempfile::tempdir().unwrap();
    let url = format!("redis://{}", closed_port());
    let period = Duration::from_secs(3600);
    let t = SharedTickets::start(&settings(url, kek(d.path()), false), period).unwrap();
    assert!(!t.up(), "the keys in use are not the fleet's");
    assert!(t.enabled());
    assert_eq!(t.lifetime(), 7200, "two rotation periods");

    let plain = b"a TLS session to resume".to_vec();
    let sealed = t.encrypt(&plain).unwrap();
    assert_ne!(sealed, plain);
    assert!(sealed.len() > plain.len());
    assert_eq!(t.decrypt(&sealed).unwrap(), plain);
    // Two seals of the same plaintext differ (fresh nonces) and both open.
    let again = t.encrypt(&plain).unwrap();
    assert_ne!(again, sealed);
    assert_eq!(t.decrypt(&again).unwrap(), plain);
    // Tampered, truncated or made under another key: refused.
    let mut bad = sealed.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(t.decrypt(&bad), None);
    assert_eq!(t.decrypt(&sealed[..10]), None);
    let other = SharedTickets::start(
        &settings(format!("redis://{}", closed_port()), kek(d.path()), false),
        period,
    )
    .unwrap();
    assert_eq!(other.decrypt(&sealed), None, "another node's local key");
}
