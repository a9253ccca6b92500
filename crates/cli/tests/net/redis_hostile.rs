//! Issue 27: the fleet's Redis is a peer to doubt too. A hostile RESP server (loopback,
//! a port of its own, a thread per connection) sends a 1 GB bulk header, or drips its
//! replies one byte every 1.5 s; a real redis-server holds garbage in the ticket-key key.
//! `serve --shared-state` stays small, starts within its promise, and keeps rotating.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::net_support::{free_port, redis_server, require, Pki, Serve};
use crate::BIN;

/// How the hostile server answers each command.
#[derive(Clone, Copy)]
enum Hostile {
    /// `$1000000000\r\n`, then zeros for as long as the client reads (at most 1 GB).
    Gigabyte,
    /// Every reply at once, except GET's: a 64-byte value dripped one byte every 1.5 s.
    DripGet,
}

/// The commands in `buf` (RESP arrays of bulk strings): each command's name, and the
/// bytes they took; an incomplete command is left.
fn commands(buf: &[u8]) -> (Vec<Vec<u8>>, usize) {
    let mut names = Vec::new();
    let mut at = 0;
    'outer: while at < buf.len() {
        let line = |from: usize| -> Option<(&[u8], usize)> {
            let end = buf[from..].windows(2).position(|w| w == b"\r\n")? + from;
            Some((&buf[from..end], end + 2))
        };
        let Some((head, mut next)) = line(at) else {
            break;
        };
        let n: usize = std::str::from_utf8(&head[1..])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut name = None;
        for _ in 0..n {
            let Some((len, start)) = line(next) else {
                break 'outer;
            };
            let len: usize = std::str::from_utf8(&len[1..])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if buf.len() < start + len + 2 {
                break 'outer;
            }
            name.get_or_insert_with(|| buf[start..start + len].to_ascii_uppercase());
            next = start + len + 2;
        }
        names.push(name.unwrap_or_default());
        at = next;
    }
    (names, at)
}

fn answer(name: &[u8]) -> &'static [u8] {
    match name {
        b"GET" => b"$-1\r\n",
        b"PUBLISH" | b"DEL" | b"EVAL" => b":0\r\n",
        b"SUBSCRIBE" => b"*3\r\n$9\r\nsubscribe\r\n$26\r\ntlskit:ticket-keys:changed\r\n:1\r\n",
        _ => b"+OK\r\n",
    }
}

/// Start the hostile server: its port. Its threads end when their client goes.
fn hostile(mode: Hostile) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for c in l.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = match c.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let (names, used) = commands(&buf);
                    buf.drain(..used);
                    for name in names {
                        let sent = match mode {
                            Hostile::Gigabyte => {
                                let zeros = vec![0u8; 1 << 20];
                                c.write_all(b"$1000000000\r\n")
                                    .and_then(|()| (0..1000).try_for_each(|_| c.write_all(&zeros)))
                            }
                            Hostile::DripGet if name == b"GET" => {
                                let reply = [b"$64\r\n".as_slice(), &[b'x'; 64], b"\r\n"].concat();
                                reply.iter().try_for_each(|b| {
                                    std::thread::sleep(Duration::from_millis(1500));
                                    c.write_all(&[*b])
                                })
                            }
                            Hostile::DripGet => c.write_all(answer(&name)),
                        };
                        if sent.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

fn p(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Peak resident memory of a process (VmHWM), KiB.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// The ACME flags of a fleet node whose CA is never reached (the storage is Redis).
const ACME: [&str; 4] = [
    "--acme",
    "https://127.0.0.1:1/directory",
    "--domain",
    "fleet.test",
];

/// A 1 GB bulk header on every reply, on the ticket sync (re-read every 0.2 s), the
/// subscription and the ACME storage: refused at its header, the key named; the server
/// stays up and its peak RSS small (before: 1.98 GB VmHWM, debug build).
#[test]
fn redis_hostile_gigabyte_reply_is_refused_at_its_header() {
    let pki = Pki::new();
    let port = hostile(Hostile::Gigabyte);
    let url = format!("redis://127.0.0.1:{port}/0");
    let key = pki.fleet_kek(0x27);
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let mut args = vec![
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &url,
        "--shared-state-key",
        &key,
        "--shared-state-reread",
        "0.2",
    ];
    args.extend(ACME);
    let mut srv = Serve::start(&args);
    assert!(
        srv.wait_log(
            "tlskit:ticket-keys: the reply declares 1000000000 bytes, more than the 4096 bytes allowed",
            Duration::from_secs(10)
        ),
        "{}",
        srv.stderr()
    );
    assert!(
        srv.stderr()
            .contains("tlskit:acme:cert:fleet.test: the reply declares 1000000000 bytes, more than the 262144 bytes allowed"),
        "{}",
        srv.stderr()
    );
    // Several syncs against it (every 0.2 s), then the peak.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(srv.wait_exit(Duration::ZERO), None, "serve died");
    let peak = peak_rss(srv.child.id());
    eprintln!("peak RSS under the 1 GB reply: {peak} KiB");
    assert!(peak < 100 * 1024, "peak RSS {peak} KiB: {}", srv.stderr());
}

/// Start `serve` with `args` and wait (at most `limit`) for its exit code; None when it
/// was still running (then killed).
fn exit_within(args: &[&str], limit: Duration) -> (Option<i32>, Duration, String) {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
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
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (code, took, err)
}

/// A Redis that answers GET one byte every 1.5 s: `listening on` within 5 s with and
/// without --acme on Redis storage (before: 107.5 s with --acme), and
/// `--shared-state-required` exits 2 within 5 s.
#[test]
fn redis_hostile_drip_at_start_holds_nothing_back() {
    let pki = Pki::new();
    let port = hostile(Hostile::DripGet);
    let url = format!("redis://127.0.0.1:{port}/0");
    let key = pki.fleet_kek(0x27);
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let base = vec![
        "--cert",
        c.as_str(),
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &url,
        "--shared-state-key",
        &key,
    ];
    let plain = Serve::start(&base);
    eprintln!("without --acme: listening after {:?}", plain.ready_after);
    assert!(
        plain.ready_after < Duration::from_secs(5),
        "{:?}: {}",
        plain.ready_after,
        plain.stderr()
    );
    drop(plain);
    let mut with_acme = base.clone();
    with_acme.extend(ACME);
    let acme = Serve::start(&with_acme);
    eprintln!("with --acme: listening after {:?}", acme.ready_after);
    assert!(
        acme.ready_after < Duration::from_secs(5),
        "{:?}: {}",
        acme.ready_after,
        acme.stderr()
    );
    assert!(acme.stderr().contains("Redis did not"), "{}", acme.stderr());
    drop(acme);
    let mut required = base.clone();
    required.push("--shared-state-required");
    let (code, took, err) = exit_within(&required, Duration::from_secs(20));
    eprintln!("--shared-state-required: exit {code:?} after {took:?}");
    assert_eq!(code, Some(2), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}: {err}");
}

fn redis_cli(port: u16, args: &[&[u8]]) -> Vec<u8> {
    let mut cmd = Command::new("redis-cli");
    cmd.args([
        "-p",
        &port.to_string(),
        "-a",
        "fleet-pw",
        "--no-auth-warning",
        "-x",
    ]);
    let (last, rest) = args.split_last().expect("args");
    for a in rest {
        cmd.arg(String::from_utf8_lossy(a).as_ref());
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    // The last argument through stdin (-x): binary-safe.
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(last)
        .expect("write");
    child.wait_with_output().expect("redis-cli").stdout
}

/// Garbage in `tlskit:ticket-keys` (not a sealed key set; then a value over the 4 KiB
/// cap; then a list): rotation goes on (a 2 s period; before: 0 rotations in 61 s with a 10 s one),
/// the node says so once and replaces the value with its sealed keys.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: redis-server")]
fn redis_hostile_garbage_in_ticket_keys_rotation_goes_on() {
    require("redis-server");
    require("redis-cli");
    let pki = Pki::new();
    let rport = free_port();
    let _redis = redis_server(pki.dir.path(), rport);
    assert_eq!(
        redis_cli(
            rport,
            &[b"SET", b"tlskit:ticket-keys", b"garbage, not a key set"]
        ),
        b"OK\n"
    );
    let url = format!("redis://:fleet-pw@127.0.0.1:{rport}/0");
    let key = pki.fleet_kek(0x27);
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &url,
        "--shared-state-key",
        &key,
        "--ticket-rotation",
        "2",
        "--shared-state-reread",
        "0.2",
    ]);
    assert!(
        srv.wait_log("event=shared_ticket_keys_replaced", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    // A sealed key set: 74 bytes with one key, 118 with two.
    let sealed = || {
        let n = redis_cli(rport, &[b"STRLEN", b"tlskit:ticket-keys"]);
        matches!(String::from_utf8_lossy(&n).trim(), "74" | "118")
    };
    assert!(sealed(), "{}", srv.stderr());
    // Over the cap: refused at its header, replaced as well.
    assert_eq!(
        redis_cli(rport, &[b"SET", b"tlskit:ticket-keys", &[b'x'; 5000]]),
        b"OK\n"
    );
    let rotated = srv.stderr().matches("event=ticket_key_rotated").count();
    assert!(
        srv.wait_log_more(
            "event=ticket_key_rotated",
            rotated + 1,
            Duration::from_secs(10)
        ),
        "rotation stopped: {}",
        srv.stderr()
    );
    let t0 = Instant::now();
    while !sealed() {
        assert!(t0.elapsed() < Duration::from_secs(5), "{}", srv.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Another type than a string (GET answers WRONGTYPE): replaced too.
    let made = redis_cli(
        rport,
        &[
            b"EVAL",
            b"redis.call('DEL', KEYS[1]); return redis.call('LPUSH', KEYS[1], ARGV[1])",
            b"1",
            b"tlskit:ticket-keys",
            b"a list",
        ],
    );
    assert_eq!(made, b"1\n");
    let t0 = Instant::now();
    while !sealed() {
        assert!(t0.elapsed() < Duration::from_secs(5), "{}", srv.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        srv.stderr().contains("event=shared_state_up"),
        "{}",
        srv.stderr()
    );
    // Said once (rate-limited: at most once a minute), never per sync.
    assert_eq!(
        srv.stderr()
            .matches("event=shared_ticket_keys_unreadable")
            .count(),
        1,
        "{}",
        srv.stderr()
    );
}
