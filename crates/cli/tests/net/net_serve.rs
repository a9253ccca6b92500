//! `tlskit serve` and `tlskit connect` end to end: the real binary, real sockets on
//! 127.0.0.1, PKI made with rcgen. Interop with other implementations is in net_interop.rs,
//! the round-trip test between network namespaces in net_rtt.rs.

use crate::hostile;
use crate::net_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::BIN;
use net_support::*;

fn s(p: &std::path::Path) -> String {
    p.display().to_string()
}

fn http_server(pki: &Pki, extra: &[&str]) -> Serve {
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let mut args = vec!["--cert", &c, "--key", &k, "--respond", "http"];
    args.extend_from_slice(extra);
    Serve::start(&args)
}

#[test]
fn net_serve_connect_json_reports_verified_chain() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    eprintln!("process start to ready: {:?}", srv.ready_after);
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &ca,
        "--servername",
        "test.example",
        "--alpn",
        "http/1.1",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verified"], true);
    assert_eq!(v["tls_version"], "TLSv1.3");
    assert_eq!(v["alpn"], "http/1.1");
    assert_eq!(v["resumed"], false);
    assert!(v["cipher_suite"]
        .as_str()
        .unwrap_or("")
        .starts_with("TLS13_"));
    let chain: Vec<&str> = v["chain"]
        .as_array()
        .expect("chain")
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    assert_eq!(
        chain,
        [
            "CN=test.example",
            "CN=tlskit test intermediate",
            "CN=tlskit test root"
        ]
    );
    assert!(v["tcp_connect_ms"].as_f64().is_some() && v["handshake_ms"].as_f64().is_some());

    // TLS 1.2 too.
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &ca,
        "--servername",
        "test.example",
        "--tls-version",
        "1.2",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["tls_version"], "TLSv1.2");
    assert!(v["cipher_suite"]
        .as_str()
        .unwrap_or("")
        .starts_with("TLS_ECDHE_ECDSA_"));

    // An IP address is verified against the iPAddress SAN.
    let (code, v) = connect_json(&[&target, "--roots", &ca]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["server_name"], "127.0.0.1");
}

#[test]
fn net_serve_connect_verification_failure_is_exit_1_with_reason() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    let target = srv.addr().to_string();
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &s(&pki.path("other-ca.pem")),
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["verified"], false);
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    assert_eq!(v["rule"], "unknown-issuer", "{v}");
    assert_eq!(
        v["chain"][0], "CN=test.example",
        "the presented chain is still reported"
    );
    // Wrong name.
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "other.example",
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["rule"], "name-mismatch", "{v}");
    // Human mode: exit 1 and nothing relayed.
    let out = tlskit(&[
        "connect",
        &target,
        "--roots",
        &s(&pki.path("other-ca.pem")),
        "--servername",
        "test.example",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("verified:     NO"));
}

#[test]
fn net_connect_cannot_connect_is_exit_2() {
    let port = free_port();
    let pki = Pki::new();
    let (code, _) = connect_json(&[
        &format!("127.0.0.1:{port}"),
        "--roots",
        &s(&pki.path("ca.pem")),
    ]);
    assert_eq!(code, 2);
    let out = tlskit(&["connect", "no-port-here", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    // A U+2024 name is refused by name, not silently changed.
    let out = tlskit(&[
        "connect",
        &format!("127.0.0.1:{port}"),
        "--servername",
        "example\u{2024}com",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2024"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn net_connect_relays_stdin_and_stdout() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let srv = Serve::start(&["--cert", &c, "--key", &k, "--respond", "echo"]);
    let mut child = Command::new(BIN)
        .args([
            "connect",
            &srv.addr().to_string(),
            "--roots",
            &s(&pki.path("ca.pem")),
            "--servername",
            "test.example",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"ping through tls\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("version:      TLSv1.3"), "{text}");
    assert!(text.ends_with("---\nping through tls\n"), "{text:?}");
}

#[test]
fn net_serve_bad_configuration_exits_2_before_listening() {
    let pki = Pki::new();
    let c = s(&pki.path("chain.pem"));
    let run = |args: &[&str]| {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let out = tlskit(&all);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("listening on"), "{err}");
        err
    };
    let err = run(&["--cert", &c, "--key", &s(&pki.path("missing.key"))]);
    assert!(
        err.contains("missing.key") && err.contains("No such file"),
        "{err}"
    );
    let k = s(&pki.path("leaf.key"));
    let err = run(&["--cert", &c, "--key", &k, "--ticket-rotation", "21601"]);
    assert!(err.contains("ticket_rotation must be 1 to 21600"), "{err}");
    // Memory bounds and deadlines out of range.
    let err = run(&["--cert", &c, "--key", &k, "--max-client-hello", "100"]);
    assert!(err.contains("max_client_hello must be 1024 to"), "{err}");
    let err = run(&["--cert", &c, "--key", &k, "--handshake-budget", "4096"]);
    assert!(
        err.contains("handshake_budget (4096 bytes) must be at least"),
        "{err}"
    );
    let err = run(&["--cert", &c, "--key", &k, "--header-timeout", "0"]);
    assert!(err.contains("header_timeout must be 0.001 to"), "{err}");
    // A key that belongs to another certificate.
    let err = run(&["--cert", &c, "--key", &s(&pki.path("client.key"))]);
    assert!(err.contains("does not match"), "{err}");
    // A certificate file with no certificate.
    let err = run(&[
        "--cert",
        &s(&pki.path("leaf.key")),
        "--key",
        &s(&pki.path("leaf.key")),
    ]);
    assert!(err.contains("no CERTIFICATE"), "{err}");
    // A garbage key.
    std::fs::write(pki.path("garbage.key"), "not a key").expect("write");
    let err = run(&["--cert", &c, "--key", &s(&pki.path("garbage.key"))]);
    assert!(err.contains("garbage.key"), "{err}");
    // Port in use.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = busy.local_addr().expect("addr").to_string();
    let out = tlskit(&[
        "serve",
        "--listen",
        &addr,
        "--cert",
        &c,
        "--key",
        &s(&pki.path("leaf.key")),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&addr) && err.contains("in use"), "{err}");
    // Empty client-CA source.
    std::fs::write(pki.path("empty.pem"), "").expect("write");
    let err = run(&[
        "--cert",
        &c,
        "--key",
        &s(&pki.path("leaf.key")),
        "--client-ca",
        &s(&pki.path("empty.pem")),
    ]);
    assert!(
        err.contains("client-ca") || err.contains("trust store"),
        "{err}"
    );
    // Unknown option values.
    run(&[
        "--cert",
        &c,
        "--key",
        &s(&pki.path("leaf.key")),
        "--respond",
        "gopher",
    ]);
    run(&[
        "--cert",
        &c,
        "--key",
        &s(&pki.path("leaf.key")),
        "--compress",
        "lz4",
    ]);
    // A backend that does not resolve.
    let err = run(&[
        "--cert",
        &c,
        "--key",
        &s(&pki.path("leaf.key")),
        "--backend",
        "no-such-host.invalid:80",
    ]);
    assert!(err.contains("--backend no-such-host.invalid:80"), "{err}");
}

#[test]
fn net_serve_sni_directory_exact_and_wildcard() {
    let pki = Pki::new();
    let sni = pki.path("sni");
    std::fs::create_dir(&sni).expect("mkdir");
    pki.server_leaf("sni/a.crt", "sni/a.key", "a.example", &["a.example"]);
    pki.server_leaf("sni/wild.pem", "sni/wild.key", "wildcard", &["*.b.example"]);
    pki.server_leaf(
        "sni/orphan.crt",
        "sni/nokey.key",
        "orphan",
        &["orphan.example"],
    );
    std::fs::remove_file(pki.path("sni/nokey.key")).expect("rm");
    let srv = http_server(&pki, &["--sni-dir", &s(&sni)]);
    assert!(
        srv.stderr().contains("orphan.crt"),
        "a bad pair is reported: {}",
        srv.stderr()
    );
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    for (name, cn) in [
        ("a.example", "CN=a.example"),
        ("x.b.example", "CN=wildcard"),
        ("test.example", "CN=test.example"),
    ] {
        let (code, v) = connect_json(&[&target, "--roots", &ca, "--servername", name]);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(v["chain"][0], cn, "{name}");
    }
    // No match: the default certificate, which does not verify for that name.
    let (code, v) = connect_json(&[&target, "--roots", &ca, "--servername", "y.x.b.example"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["chain"][0], "CN=test.example");
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_client_certificates_required() {
    let pki = Pki::new();
    let srv = http_server(&pki, &["--client-ca", &s(&pki.path("client-ca.pem"))]);
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &ca,
        "--servername",
        "test.example",
        "--cert",
        &s(&pki.path("client.pem")),
        "--key",
        &s(&pki.path("client.key")),
    ]);
    assert_eq!(code, 0, "{v}");
    // Resumption with the client certificate's session.
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &ca,
        "--servername",
        "test.example",
        "--cert",
        &s(&pki.path("client.pem")),
        "--key",
        &s(&pki.path("client.key")),
        "--reconnect",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["resumed"], true, "{v}");
    // `tlskit connect` without a certificate: exit 2 with the server's reason, in TLS 1.3
    // (alert after the client's Finished) as in TLS 1.2.
    for v in ["1.3", "1.2"] {
        let out = tlskit(&[
            "connect",
            &target,
            "--roots",
            &ca,
            "--servername",
            "test.example",
            "--tls-version",
            v,
            "--json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "TLS {v}: {err}");
        assert!(err.contains("certificate_required (116)"), "TLS {v}: {err}");
    }
    // Without a certificate the server refuses. In TLS 1.3 the client learns it after
    // its Finished, so read: the request must not be answered.
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &target,
            "-servername",
            "test.example",
            "-CAfile",
            &ca,
            "-quiet",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .expect("stdin")
                .write_all(b"GET / HTTP/1.0\r\n\r\n")?;
            c.wait_with_output()
        })
        .expect("openssl");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("200 OK"));
    assert!(
        srv.wait_log("handshake_failed", Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
    // CA hints: the store's names by default, none with --ca-hints off.
    let hints = |target: &str| {
        let script = format!(
            "openssl s_client -connect {target} -servername test.example -CAfile {ca} </dev/null 2>&1"
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("openssl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = hints(&target);
    assert!(
        text.contains("Acceptable client certificate CA names\nCN = tlskit client root"),
        "{text}"
    );
    let off = http_server(
        &pki,
        &[
            "--client-ca",
            &s(&pki.path("client-ca.pem")),
            "--ca-hints",
            "off",
        ],
    );
    let text = hints(&off.addr().to_string());
    assert!(
        text.contains("No client certificate CA names sent"),
        "{text}"
    );
}

#[test]
fn net_serve_resumption_with_tickets() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    let ca = s(&pki.path("ca.pem"));
    for v in ["1.3", "1.2"] {
        let (code, j) = connect_json(&[
            &srv.addr().to_string(),
            "--roots",
            &ca,
            "--servername",
            "test.example",
            "--reconnect",
            "--tls-version",
            v,
        ]);
        assert_eq!(code, 0, "{j}");
        assert_eq!(j["resumed"], true, "TLS {v}: {j}");
        assert_eq!(j["verified"], true);
    }
}

/// Certificates and the client-CA store are replaced 100 times while clients (with client
/// certificates) keep connecting: zero failed handshakes, a connection open throughout keeps
/// working, and afterwards the new certificate is served.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_sighup_reload_under_connections() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let client_ca = std::fs::read_to_string(pki.path("client-ca.pem")).expect("read");
    let other_ca = std::fs::read_to_string(pki.path("other-ca.pem")).expect("read");
    std::fs::write(pki.path("live-ca.pem"), &client_ca).expect("write");
    let live = s(&pki.path("live-ca.pem"));
    let (cc, ck) = (s(&pki.path("client.pem")), s(&pki.path("client.key")));
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--client-ca",
        &live,
        "--respond",
        "echo",
        "--metrics",
        "127.0.0.1:0",
        "--no-watch",
    ]);
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    // A long-lived connection (openssl s_client in quiet mode, echo responder).
    let mut long = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &target,
            "-servername",
            "test.example",
            "-CAfile",
            &ca,
            "-quiet",
            "-verify_return_error",
            "-cert",
            &cc,
            "-key",
            &ck,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl");
    let mut lin = long.stdin.take().expect("stdin");
    let mut lout = BufReader::new(long.stdout.take().expect("stdout"));
    let mut line = String::new();
    lin.write_all(b"before\n").expect("w");
    lout.read_line(&mut line).expect("r");
    assert_eq!(line, "before\n");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients = {
        let (stop, target, ca) = (stop.clone(), target.clone(), ca.clone());
        let (cc, ck) = (cc.clone(), ck.clone());
        std::thread::spawn(move || {
            let (mut ok, mut failed) = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (code, _) = connect_json(&[
                    &target,
                    "--roots",
                    &ca,
                    "--servername",
                    "test.example",
                    "--cert",
                    &cc,
                    "--key",
                    &ck,
                ]);
                if code == 0 {
                    ok += 1
                } else {
                    failed += 1
                }
            }
            (ok, failed)
        })
    };
    for i in 0..100 {
        // Alternate between two leaves; the files are replaced atomically (rename).
        let cn = if i % 2 == 0 {
            "test.example"
        } else {
            "reloaded.example"
        };
        pki.server_leaf("next.pem", "next.key", cn, &["test.example"]);
        std::fs::rename(pki.path("next.key"), pki.path("leaf.key")).expect("mv");
        std::fs::rename(pki.path("next.pem"), pki.path("chain.pem")).expect("mv");
        // The client-CA store changes too (the client's CA stays in it).
        let bundle = if i % 2 == 0 {
            format!("{client_ca}{other_ca}")
        } else {
            client_ca.clone()
        };
        std::fs::write(pki.path("live-ca.next"), bundle).expect("write");
        std::fs::rename(pki.path("live-ca.next"), pki.path("live-ca.pem")).expect("mv");
        srv.signal("HUP");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Reloads race the key/cert renames above; the last one happens after both.
    std::thread::sleep(Duration::from_millis(200));
    srv.signal("HUP");
    assert!(srv.wait_log("event=reloaded", Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = clients.join().expect("join");
    eprintln!("handshakes during reloads: ok={ok} failed={failed}");
    assert_eq!(failed, 0);
    assert!(ok > 0);
    line.clear();
    lin.write_all(b"after\n").expect("w");
    lout.read_line(&mut line).expect("r");
    assert_eq!(line, "after\n", "the open connection survived the reloads");
    drop(lin);
    let _ = long.kill(); // -quiet implies -ign_eof
    let _ = long.wait();
    let (code, v) = connect_json(&[
        &target,
        "--roots",
        &ca,
        "--servername",
        "test.example",
        "--cert",
        &cc,
        "--key",
        &ck,
    ]);
    assert_eq!(code, 0);
    assert_eq!(v["chain"][0], "CN=reloaded.example", "{v}");
    // Reloads are counted (signals that arrive during a reload coalesce, as Unix signals
    // do; a reload that caught the key renamed but not yet the chain kept the old set).
    let maddr = srv.metrics_addr();
    let text = http_get(&maddr);
    let n = |label: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("tlskit_reloads_total{{result=\"{label}\"}} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let total = n("ok") + n("failed");
    assert!((50..=101).contains(&total) && n("ok") > 0, "{text}");
}

fn http_get(addr: &str) -> String {
    let mut c = TcpStream::connect(addr).expect("connect metrics");
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .expect("write");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("read");
    out
}

#[test]
fn net_serve_metrics_endpoint() {
    let pki = Pki::new();
    let srv = http_server(&pki, &["--metrics", "127.0.0.1:0"]);
    let ca = s(&pki.path("ca.pem"));
    for _ in 0..2 {
        let (code, _) = connect_json(&[
            &srv.addr().to_string(),
            "--roots",
            &ca,
            "--servername",
            "test.example",
        ]);
        assert_eq!(code, 0);
    }
    let maddr = srv.metrics_addr();
    // Garbage instead of a ClientHello: a failed handshake.
    let mut g = TcpStream::connect(srv.addr()).expect("connect");
    g.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 0, 0, 0, 0])
        .expect("w");
    let mut sink = Vec::new();
    let _ = g.read_to_end(&mut sink);
    std::thread::sleep(Duration::from_millis(100));
    let text = http_get(&maddr);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("tlskit_handshakes_total{outcome=\"full\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("tlskit_handshakes_total{outcome=\"failed\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("tlskit_handshake_duration_seconds_count 2"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE tlskit_active_connections gauge"),
        "{text}"
    );
    assert!(
        text.contains("tlskit_reloads_total{result=\"ok\"} 0"),
        "{text}"
    );
}

/// The body of an HTTP response.
fn body_of(resp: &str) -> String {
    resp.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// The body of a scrape, as (series, value) in order; `# ` lines left out.
fn samples(body: &str) -> Vec<(String, f64)> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("sample line {l:?}"));
            (
                k.to_string(),
                v.parse().unwrap_or_else(|e| panic!("value of {l:?}: {e}")),
            )
        })
        .collect()
}

fn sample(all: &[(String, f64)], series: &str) -> f64 {
    all.iter()
        .find(|(k, _)| k == series)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {series} in {all:?}"))
}

/// `promtool check metrics` (Prometheus's own linter) accepts a real scrape; the build,
/// certificate, trust store and process metrics are there with the values they should
/// have; the expiry warning comes for the certificate expiring in 5 days, at start and on
/// each reload, and not for the one expiring in 60 days (until the warning window, set
/// in the config file, is 90 days).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: openssl, promtool, python3"
)]
fn net_serve_metrics_promtool_certificates_expiry() {
    let pki = Pki::new();
    std::fs::create_dir(pki.path("sni")).expect("mkdir");
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    let (soon, later) = (
        now + time::Duration::days(5),
        now + time::Duration::days(60),
    );
    let from = now - time::Duration::days(1);
    pki.server_leaf_valid("sni/soon.crt", "sni/soon.key", &["soon.test"], from, soon);
    pki.server_leaf_valid(
        "sni/later.crt",
        "sni/later.key",
        &["later.test", "*.later.test"],
        from,
        later,
    );
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let srv = http_server(
        &pki,
        &[
            "--sni-dir",
            &s(&pki.path("sni")),
            "--client-ca",
            &s(&pki.path("client-ca.pem")),
            "--client-auth",
            "optional",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let maddr = srv.metrics_addr();
    let resp = http_get(&maddr);
    let body = body_of(&resp);
    assert!(body.contains("# TYPE"), "{resp}");

    assert!(
        have("promtool"),
        "promtool missing: scripts/setup installs the Debian package prometheus"
    );
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    lint.stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write to promtool");
    let out = lint.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let all = samples(&body);
    let build = all
        .iter()
        .find(|(k, _)| k.starts_with("tlskit_build_info{"))
        .unwrap_or_else(|| panic!("no build info: {body}"));
    assert_eq!(build.1, 1.0);
    assert!(
        build
            .0
            .contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION")))
            && build.0.contains("rustls=\"0.23."),
        "{}",
        build.0
    );
    let not_after = |name: &str, sni: &str, file: &str| {
        sample(
            &all,
            &format!(
                "tlskit_certificate_not_after_seconds{{name=\"{name}\",sni=\"{sni}\",path=\"{}\"}}",
                pki.path(file).display()
            ),
        )
    };
    assert_eq!(
        not_after("soon", "soon.test", "sni/soon.crt"),
        soon.unix_timestamp() as f64
    );
    assert_eq!(
        not_after("later", "later.test,*.later.test", "sni/later.crt"),
        later.unix_timestamp() as f64
    );
    // rcgen's default notAfter: 4096-01-01.
    let default_not_after = time::macros::datetime!(4096-01-01 0:00 UTC).unix_timestamp();
    assert_eq!(
        not_after("default", "test.example,localhost", "chain.pem"),
        default_not_after as f64
    );
    assert_eq!(sample(&all, "tlskit_trust_store_anchors"), 1.0);
    assert_eq!(sample(&all, "tlskit_trust_store_generation"), 1.0);
    assert_eq!(
        sample(&all, "tlskit_trust_store_anchor_set_generation"),
        1.0
    );
    let rss = sample(&all, "process_resident_memory_bytes");
    assert!((1e6..2e9).contains(&rss), "rss {rss}");
    let fds = sample(&all, "process_open_fds");
    // stdio, two listeners, the runtime's epoll and wakers, the metrics connection.
    assert!((5.0..1000.0).contains(&fds), "fds {fds}");
    assert!(sample(&all, "process_max_fds") >= fds);
    let start = sample(&all, "process_start_time_seconds");
    // /proc/stat's boot time has whole seconds.
    assert!(
        start > t0 - 2.0 && start < t0 + 30.0,
        "start {start}, spawned at {t0}"
    );
    assert!(sample(&all, "process_cpu_seconds_total") >= 0.0);

    let warned = |name: &str| warned_in(&srv, name);
    assert_eq!(warned("soon"), 1, "{}", srv.stderr());
    assert_eq!(warned("later"), 0, "{}", srv.stderr());
    assert!(srv.stderr().contains("days_left=5.0") || srv.stderr().contains("days_left=4.9"));
    srv.reload();
    assert_eq!(warned("soon"), 2, "{}", srv.stderr());
    assert_eq!(warned("later"), 0, "{}", srv.stderr());
    let reloaded = samples(&body_of(&http_get(&maddr)));
    assert_eq!(sample(&reloaded, "tlskit_trust_store_generation"), 2.0);
    assert_eq!(
        sample(&reloaded, "tlskit_trust_store_anchor_set_generation"),
        1.0
    );
    drop(srv);

    // expiry_warning_days from the config file.
    let cfg = pki.path("serve.toml");
    std::fs::write(
        &cfg,
        "listen = [\"127.0.0.1:0\"]\ncert = \"chain.pem\"\nkey = \"leaf.key\"\n\
         sni_dir = \"sni\"\nrespond = \"http\"\nno_watch = true\nexpiry_warning_days = 90\n",
    )
    .expect("write config");
    let srv = Serve::start(&["--config", &s(&cfg)]);
    assert!(srv.wait_log("event=started", Duration::from_secs(5)));
    assert_eq!(warned_in(&srv, "later"), 1, "{}", srv.stderr());
    assert_eq!(warned_in(&srv, "default"), 0, "{}", srv.stderr());
}

fn warned_in(srv: &Serve, name: &str) -> usize {
    srv.stderr()
        .lines()
        .filter(|l| {
            l.contains("event=certificate_expires_soon") && l.contains(&format!(" name={name} "))
        })
        .count()
}

#[test]
fn net_serve_bad_traffic_timeout_limit_garbage() {
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &[
            // Long enough that a loaded CI machine finishes the steps below (a client
            // process, three metric polls) before the stuck clients time out.
            "--handshake-timeout",
            "6",
            "--max-connections",
            "3",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let maddr = srv.metrics_addr();
    let wait_active = |n: u64| {
        let t = Instant::now();
        loop {
            let text = http_get(&maddr);
            let active = text
                .lines()
                .find_map(|l| l.strip_prefix("tlskit_active_connections "))
                .and_then(|v| v.trim().parse::<u64>().ok());
            if active == Some(n) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "active never {n}: {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let ca = s(&pki.path("ca.pem"));
    // A client that sends nothing and one that sends half a ClientHello: both closed at the timeout.
    let silent = TcpStream::connect(srv.addr()).expect("connect");
    let mut half = TcpStream::connect(srv.addr()).expect("connect");
    half.write_all(&[
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ])
    .expect("w");
    // While two are stuck, another client is served.
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0);
    // At the limit (3): one more idle connection fills it, the next is closed at once.
    wait_active(2);
    let third = TcpStream::connect(srv.addr()).expect("connect");
    wait_active(3);
    let mut fourth = TcpStream::connect(srv.addr()).expect("connect");
    fourth
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let t = Instant::now();
    let mut b = [0u8; 16];
    assert!(
        matches!(fourth.read(&mut b), Ok(0) | Err(_)),
        "over the limit: closed"
    );
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "closed at once, not at the 6 s timeout"
    );
    for mut c in [silent, half, third] {
        c.set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        let r = c.read(&mut b);
        assert!(
            matches!(r, Ok(0))
                || matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
            "{r:?}"
        );
    }
    // Garbage bytes: an alert or a close, and the server goes on.
    let mut g = TcpStream::connect(srv.addr()).expect("connect");
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("w");
    g.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut sink = Vec::new();
    let _ = g.read_to_end(&mut sink);
    assert!(sink.len() < 64, "at most an alert");
    // An oversized record header (length 2^15 > 2^14 + 256).
    let mut o = TcpStream::connect(srv.addr()).expect("connect");
    o.write_all(&[0x16, 0x03, 0x01, 0x80, 0x00]).expect("w");
    o.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = o.read_to_end(&mut sink);
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0);
    assert!(
        srv.stderr().contains("event=handshake_timeout"),
        "{}",
        srv.stderr()
    );
    assert!(
        srv.stderr().contains("event=connection_limit"),
        "{}",
        srv.stderr()
    );
}

#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_sigterm_graceful_shutdown() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let mut srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "echo",
        "--shutdown-grace",
        "5",
    ]);
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    let mut open = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &target,
            "-servername",
            "test.example",
            "-CAfile",
            &ca,
            "-quiet",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl");
    let mut oin = open.stdin.take().expect("stdin");
    let mut oout = BufReader::new(open.stdout.take().expect("stdout"));
    let mut line = String::new();
    oin.write_all(b"one\n").expect("w");
    oout.read_line(&mut line).expect("r");
    srv.signal("TERM");
    assert!(srv.wait_log("event=stopping", Duration::from_secs(5)));
    // New connections are refused, the open one still works.
    std::thread::sleep(Duration::from_millis(100));
    assert!(TcpStream::connect(srv.addr()).is_err(), "listener closed");
    line.clear();
    oin.write_all(b"two\n").expect("w");
    oout.read_line(&mut line).expect("r");
    assert_eq!(line, "two\n");
    // (-quiet implies -ign_eof: the client leaves when killed, which ends the connection.)
    drop(oin);
    let _ = open.kill();
    let _ = open.wait();
    assert_eq!(
        srv.wait_exit(Duration::from_secs(5)),
        Some(0),
        "{}",
        srv.stderr()
    );
    assert!(
        srv.wait_log("closed_unfinished=0", Duration::from_secs(2)),
        "{}",
        srv.stderr()
    );
}

#[test]
fn net_serve_config_file() {
    let pki = Pki::new();
    let conf = pki.path("serve.toml");
    std::fs::write(
        &conf,
        "listen = [\"127.0.0.1:0\"]\ncert = \"chain.pem\"\nkey = \"leaf.key\"\nrespond = \"http\"\ncompress = \"zlib\"\nalpn = [\"http/1.1\"]\nlog_level = \"debug\"\n",
    )
    .expect("write");
    let srv = Serve::start(&["--config", &s(&conf)]);
    let (code, v) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "test.example",
        "--alpn",
        "http/1.1",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["alpn"], "http/1.1");
    assert!(
        srv.wait_log("event=handshake ", Duration::from_secs(5)),
        "debug log level from the file"
    );
    // An unknown key is a configuration error.
    std::fs::write(&conf, "lissen = 1\n").expect("write");
    let out = tlskit(&["serve", "--config", &s(&conf)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lissen"));
}

#[test]
fn net_serve_backend_with_proxy_protocol() {
    let pki = Pki::new();
    let backend = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let baddr = backend.local_addr().expect("addr").to_string();
    let srv = http_server(&pki, &[]);
    drop(srv);
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &baddr,
        "--proxy-protocol",
    ]);
    let handle = std::thread::spawn(move || {
        let (mut conn, _) = backend.accept().expect("accept");
        let mut head = [0u8; 16];
        conn.read_exact(&mut head).expect("proxy header");
        // The address block and the TLVs follow; their length is in bytes 14..16.
        let mut rest = vec![0u8; usize::from(u16::from_be_bytes([head[14], head[15]]))];
        conn.read_exact(&mut rest)
            .expect("proxy addresses and TLVs");
        let mut head = head.to_vec();
        head.extend_from_slice(&rest);
        let mut req = [0u8; 5];
        conn.read_exact(&mut req).expect("data");
        conn.write_all(b"pong\n").expect("reply");
        (head, req)
    });
    let mut child = Command::new(BIN)
        .args([
            "connect",
            &srv.addr().to_string(),
            "--roots",
            &s(&pki.path("ca.pem")),
            "--servername",
            "test.example",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"ping\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    let (head, req) = handle.join().expect("backend");
    assert_eq!(&head[..12], b"\r\n\r\n\0\r\nQUIT\n");
    assert_eq!(head[13], 0x11, "TCP over IPv4");
    assert_eq!(&head[16..20], &[127, 0, 0, 1]);
    assert_eq!(
        u16::from_be_bytes([head[26], head[27]]),
        srv.port(),
        "destination port"
    );
    // The SNI travels as the AUTHORITY TLV (type 0x02) after the 12 address bytes.
    let tlvs = &head[28..];
    assert!(
        tlvs.windows(15).any(|w| w == b"\x02\x00\x0ctest.example"),
        "AUTHORITY TLV carries the SNI"
    );
    assert_eq!(&req, b"ping\n");
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("pong\n"));
}

/// Resumption is bound to the client-CA store's anchor set: a SIGHUP reload that finds the
/// same anchors keeps the client's saved session resumable; after the CA that issued a
/// client's certificate is removed and the store reloaded, the saved session (a TLS 1.3
/// ticket, or a TLS 1.2 ticket) is not resumed and its certificate is refused.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_removed_client_ca_ends_resumption() {
    require("openssl");
    let pki = Pki::new();
    std::fs::copy(pki.path("client-ca.pem"), pki.path("live-ca.pem")).expect("copy");
    // SIGHUP only: a debounced file-change reload landing between the two connections
    // below would (correctly) end the session too early for the positive check.
    let srv = http_server(
        &pki,
        &["--client-ca", &s(&pki.path("live-ca.pem")), "--no-watch"],
    );
    let run = |tls: &str, sess: &str| -> String {
        let script = format!(
            "cd {} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client {tls} -ign_eof -connect {} \
             -servername test.example -CAfile ca.pem -cert client.pem -key client.key {sess} 2>&1",
            s(pki.dir.path()),
            srv.addr()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("openssl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for tls in ["-tls1_3", "-tls1_2"] {
        std::fs::copy(pki.path("client-ca.pem"), pki.path("live-ca.pem")).expect("restore");
        srv.reload();
        let first = run(tls, "-sess_out sess.pem");
        assert!(
            first.contains("200 OK") && first.contains("New,"),
            "{tls}: {first}"
        );
        let again = run(tls, "-sess_in sess.pem");
        assert!(
            again.contains("200 OK") && again.contains("Reused,"),
            "{tls}: resumption works: {again}"
        );
        // SIGHUP with the same client CA (file rewritten, same anchors): resumption
        // survives the reload.
        std::fs::copy(pki.path("client-ca.pem"), pki.path("live-ca.pem")).expect("rewrite");
        srv.reload();
        assert!(
            srv.stderr().contains("anchors_changed=false"),
            "{}",
            srv.stderr()
        );
        let same = run(tls, "-sess_in sess.pem");
        assert!(
            same.contains("200 OK") && same.contains("Reused,"),
            "{tls}: resumed after a reload with the same anchors: {same}"
        );
        // Remove the client CA (the store keeps another, unrelated anchor) and reload.
        std::fs::copy(pki.path("other-ca.pem"), pki.path("live-ca.pem")).expect("replace");
        srv.reload();
        let after = run(tls, "-sess_in sess.pem");
        assert!(
            !after.contains("Reused,"),
            "{tls}: not resumed after the CA was removed: {after}"
        );
        assert!(
            !after.contains("200 OK"),
            "{tls}: certificate refused: {after}"
        );
    }
}

/// `--ticket-rotation` reaches the server's ticketer: each TLS 1.3 ticket announces a
/// lifetime of two periods, a ticket resumes, and the first key is logged
/// (`ticket_key_generated`, debug). That the keys rotate every period, that a ticket of
/// the previous key still resumes and that one older than two periods gets a full
/// handshake is tested on the server's clock, without waiting, by tlskit-server's
/// `tests/clock.rs` (a server bound with a `ManualClock`, a rustls client) and its
/// `tickets` unit tests; this test slept 6.4 s for it.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_ticket_rotation_sets_the_ticket_lifetime_and_resumes() {
    require("openssl");
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &[
            "--ticket-rotation",
            "2",
            "--log-level",
            "debug",
            "--no-watch",
        ],
    );
    let run = |sess: &str| -> String {
        let script = format!(
            "cd {} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client -tls1_3 -ign_eof \
             -connect {} -servername test.example -CAfile ca.pem {sess} 2>&1",
            s(pki.dir.path()),
            srv.addr()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("openssl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let first = run("-sess_out sess.pem");
    assert!(
        first.contains("200 OK") && first.contains("New,"),
        "{first}"
    );
    assert!(
        first.contains("lifetime hint: 4 (seconds)"),
        "two periods of --ticket-rotation 2 announced: {first}"
    );
    let again = run("-sess_in sess.pem");
    assert!(
        again.contains("200 OK") && again.contains("Reused,"),
        "the ticket resumes: {again}"
    );
    assert!(
        srv.wait_log("event=ticket_key_generated", Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
}

/// Without any signal, replacing the certificate files is noticed and served.
#[test]
fn net_serve_reloads_on_file_change() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    let target = srv.addr().to_string();
    let ca = s(&pki.path("ca.pem"));
    pki.server_leaf("next.pem", "next.key", "changed.example", &["test.example"]);
    std::fs::rename(pki.path("next.key"), pki.path("leaf.key")).expect("mv");
    std::fs::rename(pki.path("next.pem"), pki.path("chain.pem")).expect("mv");
    assert!(
        srv.wait_log("cause=file_change", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let (code, v) = connect_json(&[&target, "--roots", &ca, "--servername", "test.example"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["chain"][0], "CN=changed.example", "{v}");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// 10,000 idle connections before the handshake and 500 after it: others are still served and
/// server RSS grows by a bounded amount per connection (printed): under the 32 KiB budget
/// per idle TLS connection.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: python3")]
fn net_serve_many_idle_connections_bounded_memory() {
    require("python3");
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &[
            "--handshake-timeout",
            "60",
            "--idle-timeout",
            "60",
            "--max-connections",
            "20000",
        ],
    );
    let pid = srv.child.id();
    let ca = s(&pki.path("ca.pem"));
    // Warm up (first handshake allocates caches), then measure.
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0);
    let base = rss_kib(pid);
    // Idle TLS connections: Python opens them, completes the handshakes and holds them.
    const TLS: usize = 500;
    let script = format!(
        r#"
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile="ca.pem")
conns = []
for _ in range({TLS}):
    s = socket.create_connection(("127.0.0.1", {port}))
    conns.append(ctx.wrap_socket(s, server_hostname="test.example"))
print("ready", flush=True)
sys.stdin.read()
"#,
        port = srv.port()
    );
    let mut py = Command::new("python3")
        .current_dir(pki.dir.path())
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    BufReader::new(py.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim(), "ready");
    std::thread::sleep(Duration::from_millis(500));
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "served while {TLS} TLS connections sit idle");
    let with_tls = rss_kib(pid);
    drop(py.stdin.take());
    let _ = py.wait();
    const RAW: usize = 10_000;
    let raw: Vec<TcpStream> = (0..RAW)
        .map(|_| TcpStream::connect(srv.addr()).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "served while {RAW} connections sit idle");
    let with_raw = rss_kib(pid);
    drop(raw);
    // (Memory freed by the closed TLS connections is reused for these.)
    let per_raw = (with_raw.saturating_sub(with_tls)) as f64 / RAW as f64;
    let per_tls = (with_tls.saturating_sub(base)) as f64 / TLS as f64;
    eprintln!(
        "server RSS: base {base} KiB; {RAW} idle TCP (pre-handshake): +{per_raw:.1} KiB each beyond the TLS peak \
         (freed TLS memory reused); \
         {TLS} idle TLS: +{per_tls:.1} KiB each"
    );
    assert!(per_raw < 64.0, "{per_raw} KiB per pre-handshake connection");
    assert!(
        per_tls < 32.0,
        "{per_tls} KiB per idle TLS connection (budget 32 KiB)"
    );
}

/// SIGTERM closes idle HTTP keep-alive connections at once instead of waiting out the
/// grace period.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_sigterm_closes_idle_keepalive() {
    let pki = Pki::new();
    let mut srv = http_server(&pki, &["--shutdown-grace", "20"]);
    let mut client = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &srv.addr().to_string()])
        .args([
            "-servername",
            "test.example",
            "-CAfile",
            &s(&pki.path("ca.pem")),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl");
    let mut cin = client.stdin.take().expect("stdin");
    let mut cout = BufReader::new(client.stdout.take().expect("stdout"));
    cin.write_all(b"GET / HTTP/1.1\r\nHost: test.example\r\n\r\n")
        .expect("w");
    let mut line = String::new();
    cout.read_line(&mut line).expect("r");
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    let t = Instant::now();
    srv.signal("TERM");
    assert_eq!(srv.wait_exit(Duration::from_secs(10)), Some(0));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "did not wait for the 20 s grace: {:?}",
        t.elapsed()
    );
    assert!(srv.wait_log("closed_unfinished=0", Duration::from_secs(2)));
    drop(cin);
    let _ = client.kill();
    let _ = client.wait();
}

/// Thousands of SNI pairs: loaded once into the index, the right one served for a name
/// near the end of the directory (no per-handshake scan; start-up time printed).
#[test]
fn net_serve_sni_thousands_of_pairs() {
    let pki = Pki::new();
    let sni = pki.path("sni");
    std::fs::create_dir(&sni).expect("mkdir");
    const N: usize = 2000;
    for i in 0..N {
        let name = format!("site{i:04}.example");
        pki.server_leaf(
            &format!("sni/{name}.crt"),
            &format!("sni/{name}.key"),
            &name,
            &[name.as_str()],
        );
    }
    let srv = http_server(&pki, &["--sni-dir", &s(&sni)]);
    eprintln!(
        "{N} SNI pairs: process start to ready {:?}",
        srv.ready_after
    );
    assert!(
        srv.wait_log(&format!("pairs={}", N + 1), Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
    let ca = s(&pki.path("ca.pem"));
    for name in ["site1999.example", "site0000.example", "site1234.example"] {
        let (code, v) = connect_json(&[
            &srv.addr().to_string(),
            "--roots",
            &ca,
            "--servername",
            name,
        ]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["chain"][0], format!("CN={name}"));
    }
}

/// Run `tlskit ARGS`, killing it after `limit` (a key that wrongly loads must not leave a
/// server running for ever).
fn run_limited(args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

/// Issue 12: malformed private keys (one line with spaces or a literal `\n`, CRLF,
/// truncated, wrong label, stray character, binary; PKCS#8, SEC1, PKCS#1, Ed25519) are
/// never quoted by `serve --key`, `connect --key`, nor by the `reload_failed` and
/// `sni_pair_skipped` log lines after a key is swapped under a running server. Each
/// message names the file and a reason. (Before: the key as decimal bytes.)
#[test]
fn malformed_keys_never_reach_errors_or_logs() {
    let pki = Pki::new();
    let corpus = hostile::key_corpus();
    let chain = s(&pki.path("chain.pem"));
    let closed = format!("127.0.0.1:{}", free_port());
    let mut largest = 0;
    for key in &corpus {
        let file = pki.path(&format!("{}.key", key.name));
        std::fs::write(&file, &key.bytes).expect("test file");
        let f = s(&file);
        for args in [
            vec![
                "serve",
                "--cert",
                &chain,
                "--key",
                &f,
                "--listen",
                "127.0.0.1:0",
            ],
            vec!["connect", &closed, "--cert", &chain, "--key", &f],
        ] {
            let o = run_limited(&args, Duration::from_secs(10));
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            let all = format!("{}{err}", String::from_utf8_lossy(&o.stdout));
            hostile::assert_no_key_material(&format!("{args:?}"), key, &all);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {all}");
            assert!(
                err.contains(&format!("{}.key: ", key.name)) && err.len() < 1024,
                "{args:?}: must name the key file and be short: {err}"
            );
            largest = largest.max(err.len());
        }
    }

    // An SNI directory holding every bad key, each beside a good certificate: each pair
    // is skipped at start with its own log line.
    let bad_sni = pki.path("bad-sni");
    std::fs::create_dir(&bad_sni).expect("test file");
    let chain_pem = std::fs::read(pki.path("chain.pem")).expect("test file");
    for key in &corpus {
        std::fs::write(bad_sni.join(format!("{}.pem", key.name)), &chain_pem).expect("test file");
        std::fs::write(bad_sni.join(format!("{}.key", key.name)), &key.bytes).expect("test file");
    }
    let srv = Serve::start(&[
        "--cert",
        &chain,
        "--key",
        &s(&pki.path("leaf.key")),
        "--sni-dir",
        &s(&bad_sni),
    ]);
    let log = srv.stderr();
    assert_eq!(
        log.matches("event=sni_pair_skipped").count(),
        corpus.len(),
        "{log}"
    );
    for key in &corpus {
        hostile::assert_no_key_material("sni_pair_skipped at start", key, &log);
        let line = log
            .lines()
            .find(|l| l.contains(&format!("/{}.pem", key.name)))
            .unwrap_or_else(|| panic!("no line for {}: {log}", key.name));
        assert!(
            line.contains(&format!("{}.key: ", key.name)) && line.len() < 1024,
            "{line}"
        );
    }
    drop(srv);

    // Under a running server: the default key, then an SNI pair's key, swapped for each
    // bad key and reloaded.
    let good = std::fs::read(pki.path("leaf.key")).expect("test file");
    std::fs::write(pki.path("live.key"), &good).expect("test file");
    let sni = pki.path("sni");
    std::fs::create_dir(&sni).expect("test file");
    pki.server_leaf(
        "sni/other.pem",
        "sni/other.key",
        "other.example",
        &["other.example"],
    );
    let sni_good = std::fs::read(sni.join("other.key")).expect("test file");
    let srv = Serve::start(&[
        "--cert",
        &chain,
        "--key",
        &s(&pki.path("live.key")),
        "--sni-dir",
        &s(&sni),
        "--no-watch",
    ]);
    for key in &corpus {
        std::fs::write(pki.path("live.key"), &key.bytes).expect("test file");
        let failed = srv.stderr().matches("event=reload_failed").count();
        srv.reload();
        assert_eq!(
            srv.stderr().matches("event=reload_failed").count(),
            failed + 1,
            "{}: {}",
            key.name,
            srv.stderr()
        );
        std::fs::write(pki.path("live.key"), &good).expect("test file");
        std::fs::write(sni.join("other.key"), &key.bytes).expect("test file");
        let skipped = srv.stderr().matches("event=sni_pair_skipped").count();
        srv.reload();
        assert_eq!(
            srv.stderr().matches("event=sni_pair_skipped").count(),
            skipped + 1,
            "{}: {}",
            key.name,
            srv.stderr()
        );
        std::fs::write(sni.join("other.key"), &sni_good).expect("test file");
    }
    let log = srv.stderr();
    for key in &corpus {
        hostile::assert_no_key_material("server log", key, &log);
    }
    for line in log.lines().filter(|l| l.contains("event=reload_failed")) {
        assert!(line.contains("live.key:") && line.len() < 1024, "{line}");
        largest = largest.max(line.len());
    }
    for line in log.lines().filter(|l| l.contains("event=sni_pair_skipped")) {
        assert!(line.contains("other.key:") && line.len() < 1024, "{line}");
        largest = largest.max(line.len());
    }
    eprintln!("largest key error message or log line: {largest} bytes");
}

/// Issue 12: a server whose certificate names hold ESC sequences, BEL, CR and bidi
/// overrides: `connect` (verified and not) prints them escaped; `--json` keeps them
/// exact.
#[test]
fn escape_codes_in_a_server_certificate_are_escaped_by_connect() {
    let pki = Pki::new();
    hostile::evil_pki(pki.dir.path());
    let srv = Serve::start(&[
        "--cert",
        &s(&pki.path("evil-chain.pem")),
        "--key",
        &s(&pki.path("evil.key")),
        "--respond",
        "http",
    ]);
    let target = srv.addr().to_string();
    let roots = s(&pki.path("evil-root.pem"));
    for (name, want) in [("evil.test", 0), ("other.test", 1)] {
        let o = tlskit(&["connect", &target, "--roots", &roots, "--servername", name]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(want), "{name}: {out}");
        hostile::assert_no_raw_controls(&format!("connect {name}"), &o.stdout);
        hostile::assert_no_raw_controls(&format!("connect {name}"), &o.stderr);
        assert!(out.contains(hostile::EVIL_CN_DN), "{out}");
        let o = tlskit(&[
            "connect",
            &target,
            "--roots",
            &roots,
            "--servername",
            name,
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(want));
        hostile::assert_no_raw_controls(&format!("connect {name} --json"), &o.stdout);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let leaf = v["chain"][0].as_str().unwrap_or_default();
        assert!(
            leaf.contains(hostile::EVIL_CN_DN) && leaf.contains(hostile::EVIL_O_DN),
            "{v}"
        );
    }
}

/// Issue 12: a client certificate whose names hold ESC sequences, BEL, CR and bidi
/// overrides, refused by a server that asks for client certificates (its issuer has the
/// name of the trusted root but another key):
/// no raw control reaches the server's log lines (today the reason names no
/// certificate; this keeps it so if one ever does, with log.rs escaping every value).
#[test]
fn escape_codes_in_a_refused_client_certificate_are_escaped_in_the_log() {
    let pki = Pki::new();
    hostile::evil_pki(pki.dir.path());
    let srv = http_server(
        &pki,
        &[
            "--client-ca",
            &s(&pki.path("evil-root.pem")),
            "--log-level",
            "debug",
        ],
    );
    let target = srv.addr().to_string();
    // The client presents an evil leaf signed by another root of the same evil name.
    let other = tempfile::tempdir().expect("tempdir");
    hostile::evil_pki(other.path());
    let o = tlskit(&[
        "connect",
        &target,
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "test.example",
        "--cert",
        &s(&other.path().join("evil-chain.pem")),
        "--key",
        &s(&other.path().join("evil.key")),
    ]);
    assert_ne!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    hostile::assert_no_raw_controls("connect stderr", &o.stderr);
    assert!(
        srv.wait_log("event=handshake_failed", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let log = srv.stderr();
    assert!(log.contains("rule=bad-signature"), "{log}");
    assert!(!log.contains("BadSignature"), "no Rust debug output: {log}");
    hostile::assert_no_raw_controls("server log", log.as_bytes());
}

// ---------- files that change under a running server (issue 12, items 1 and 2) ----------

/// `tlskit connect` with client certificate NAME (`NAME.pem`/`NAME.key`): exit code.
fn client_auth_connect(pki: &Pki, target: &str, name: &str) -> (i32, serde_json::Value) {
    connect_json(&[
        target,
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "test.example",
        "--cert",
        &s(&pki.path(&format!("{name}.pem"))),
        "--key",
        &s(&pki.path(&format!("{name}.key"))),
    ])
}

/// The client-CA snapshot truncated, then overwritten in place (`cp new.snap s.snap`),
/// under a live server with the file watch on while client-auth handshakes run: the
/// server stays up, keeps the last good store when the file is damaged (logging why),
/// takes the new one when it is whole, and each handshake after a change uses a client
/// certificate never seen before, so its verification looks the issuer up in the store.
/// (A mapped snapshot died here with SIGBUS.)
#[test]
fn net_serve_snapshot_truncated_and_overwritten_in_place() {
    let pki = Pki::new();
    let snap = pki.path("s.snap");
    let next = pki.path("new.snap");
    let built = tlskit(&[
        "store",
        "build",
        &s(&pki.path("client-ca.pem")),
        "-o",
        &s(&snap),
    ]);
    assert!(built.status.success(), "{built:?}");
    // A different file that still holds the client root.
    let built = tlskit(&[
        "store",
        "build",
        &s(&pki.path("client-ca.pem")),
        &s(&pki.path("other-ca.pem")),
        "-o",
        &s(&next),
    ]);
    assert!(built.status.success(), "{built:?}");
    let mut srv = http_server(&pki, &["--client-ca", &s(&snap)]);
    let target = srv.addr().to_string();
    for n in 0..4 {
        pki.client_cert(&format!("client{n}"));
    }
    assert_eq!(client_auth_connect(&pki, &target, "client0").0, 0);

    // Handshakes keep running in the background throughout.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bg = {
        let (stop, target) = (stop.clone(), target.clone());
        let (ca, cert, key) = (
            s(&pki.path("ca.pem")),
            s(&pki.path("client.pem")),
            s(&pki.path("client.key")),
        );
        std::thread::spawn(move || {
            let mut results = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (code, _) = connect_json(&[
                    &target,
                    "--roots",
                    &ca,
                    "--servername",
                    "test.example",
                    "--cert",
                    &cert,
                    "--key",
                    &key,
                ]);
                results.push(code);
            }
            results
        })
    };

    // 1. Truncated to nothing.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&snap)
        .and_then(|f| f.set_len(0))
        .expect("truncate");
    assert!(
        srv.wait_log("what=client_ca", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let log = srv.stderr();
    let failed = log
        .lines()
        .find(|l| l.contains("what=client_ca"))
        .expect("reload_failed line");
    // The reason itself, not only a count of problems.
    assert!(
        failed.contains("event=reload_failed")
            && failed.contains("shorter than the 128-byte header"),
        "{failed}"
    );
    let (code, v) = client_auth_connect(&pki, &target, "client1");
    assert_eq!(code, 0, "{v}\n{}", srv.stderr());
    assert!(
        srv.child.try_wait().expect("try_wait").is_none(),
        "{}",
        srv.stderr()
    );

    // 2. Overwritten in place (`cp new.snap s.snap`: O_TRUNC, then written).
    let reloads_before = srv.stderr().matches("ok=true").count();
    std::fs::copy(&next, &snap).expect("cp");
    let t = Instant::now();
    while srv.stderr().matches("ok=true").count() <= reloads_before {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no good reload after the copy: {}",
            srv.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, v) = client_auth_connect(&pki, &target, "client2");
    assert_eq!(code, 0, "{v}\n{}", srv.stderr());

    // 3. Truncated in the middle of a section, then handshakes again.
    let len = std::fs::metadata(&snap).expect("stat").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&snap)
        .and_then(|f| f.set_len(len / 2))
        .expect("truncate");
    assert!(
        srv.wait_log("header says", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let (code, v) = client_auth_connect(&pki, &target, "client3");
    assert_eq!(code, 0, "{v}\n{}", srv.stderr());

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let results = bg.join().expect("handshake thread");
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|&c| c == 0),
        "{results:?}\n{}",
        srv.stderr()
    );
    assert!(
        srv.child.try_wait().expect("try_wait").is_none(),
        "{}",
        srv.stderr()
    );
}

fn mkfifo(p: &std::path::Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(st.success());
}

/// The certificate file replaced by a FIFO, then SIGHUP: the reload fails at once (a FIFO
/// is refused without being opened for a blocking read) and logs why; SIGTERM then stops
/// the server promptly (no connections are open, so the grace period is not used).
/// Before, the reload blocked in open() for good and SIGTERM was ignored.
#[test]
fn net_serve_fifo_certificate_reload_then_sigterm() {
    let pki = Pki::new();
    let live = pki.path("live.pem");
    std::fs::copy(pki.path("chain.pem"), &live).expect("copy");
    let mut srv = Serve::start(&[
        "--cert",
        &s(&live),
        "--key",
        &s(&pki.path("leaf.key")),
        "--respond",
        "http",
        "--no-watch",
    ]);
    std::fs::remove_file(&live).expect("rm");
    mkfifo(&live);
    srv.signal("HUP");
    assert!(
        srv.wait_log("event=reload_failed", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    assert!(
        srv.stderr().contains("not a regular file (FIFO)"),
        "{}",
        srv.stderr()
    );
    // Still serving the certificate it had.
    let (code, v) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "{v}");
    // A second SIGHUP while nothing is stuck, then SIGTERM at once.
    srv.signal("HUP");
    let t = Instant::now();
    srv.signal("TERM");
    let code = srv.wait_exit(Duration::from_secs(10));
    eprintln!("stopped {:.3} s after SIGTERM", t.elapsed().as_secs_f64());
    assert_eq!(code, Some(0), "{}", srv.stderr());
}

/// A FIFO (and a FIFO key) in --sni-dir: skipped with a reason; the server becomes ready.
#[test]
fn net_serve_fifo_in_sni_dir_still_ready() {
    let pki = Pki::new();
    let dir = pki.path("sni");
    std::fs::create_dir(&dir).expect("mkdir");
    mkfifo(&dir.join("a.pem"));
    std::fs::copy(pki.path("leaf.key"), dir.join("a.key")).expect("copy");
    pki.server_leaf("sni/b.pem", "sni/b.key", "b.example", &["b.example"]);
    std::fs::remove_file(dir.join("b.key")).expect("rm");
    mkfifo(&dir.join("b.key"));
    pki.server_leaf("sni/c.pem", "sni/c.key", "c.example", &["c.example"]);
    let srv = http_server(&pki, &["--sni-dir", &s(&dir)]);
    let log = srv.stderr();
    assert!(
        log.matches("event=sni_pair_skipped").count() == 2
            && log.matches("not a regular file (FIFO)").count() == 2,
        "{log}"
    );
    let (code, v) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "c.example",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["chain"][0], "CN=c.example", "{v}");
}

/// A FIFO as the config file, the client-CA source or the key: `serve` exits 2 at once,
/// naming the file, instead of waiting for a writer.
#[test]
fn net_serve_fifo_config_client_ca_or_key_refused_at_start() {
    let pki = Pki::new();
    let fifo = pki.path("fifo");
    mkfifo(&fifo);
    let (c, k, f) = (
        s(&pki.path("chain.pem")),
        s(&pki.path("leaf.key")),
        s(&fifo),
    );
    let cases: [Vec<&str>; 3] = [
        vec!["serve", "--config", &f],
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &c,
            "--key",
            &k,
            "--client-ca",
            &f,
        ],
        vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &c,
            "--key",
            &f,
        ],
    ];
    for args in cases {
        let mut child = Command::new(BIN)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let t = Instant::now();
        let code = loop {
            if let Some(st) = child.try_wait().expect("try_wait") {
                break st.code();
            }
            if t.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{args:?}: still running after 20 s (blocked on the FIFO?)");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("read");
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{f}: not a regular file")),
            "{args:?}: {err}"
        );
    }
}

/// `serve --client-ca-profile` / `--client-ca-allow` (issue 13): a client certificate
/// without an authority key identifier is refused under the webpki profile and
/// accepted when the rule is allowed on purpose (a private PKI without key identifiers).
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_client_ca_profile_and_allow() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let pki = Pki::new();
    let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("test setup");
    let mut cap = CertificateParams::new(Vec::<String>::new()).expect("test setup");
    cap.distinguished_name
        .push(DnType::CommonName, "private client CA");
    cap.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    cap.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = cap.self_signed(&ca_key).expect("test setup");
    let ck = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("test setup");
    let mut cp = CertificateParams::new(Vec::<String>::new()).expect("test setup");
    cp.distinguished_name
        .push(DnType::CommonName, "no-aki client");
    cp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client = cp
        .signed_by(&ck, &Issuer::from_params(&cap, &ca_key))
        .expect("test setup");
    let dir = tempfile::tempdir().expect("test setup");
    let (ca_pem, c_pem, k_pem) = (
        dir.path().join("ca.pem"),
        dir.path().join("c.pem"),
        dir.path().join("c.key"),
    );
    std::fs::write(&ca_pem, ca.pem()).expect("test setup");
    std::fs::write(&c_pem, client.pem()).expect("test setup");
    std::fs::write(&k_pem, ck.serialize_pem()).expect("test setup");
    let roots = s(&pki.path("ca.pem"));
    let try_connect = |srv: &Serve| {
        connect_json(&[
            &srv.addr().to_string(),
            "--roots",
            &roots,
            "--servername",
            "test.example",
            "--tls-version",
            "1.2",
            "--cert",
            &s(&c_pem),
            "--key",
            &s(&k_pem),
        ])
        .0
    };
    // The strict profile, where aki-missing is refused (a warning under the default).
    let strict = http_server(
        &pki,
        &["--client-ca", &s(&ca_pem), "--client-ca-profile", "webpki"],
    );
    assert_eq!(try_connect(&strict), 2, "{}", strict.stderr());
    // The refusal is logged as tlskit's sentence with its rule code, never as the Rust
    // debug output rustls's Display gives it (`Other(OtherError(Rule(Violation {..`).
    assert!(
        strict.wait_log("event=handshake_failed", Duration::from_secs(10)),
        "{}",
        strict.stderr()
    );
    let log = strict.stderr();
    let line = log
        .lines()
        .find(|l| l.contains("event=handshake_failed"))
        .expect("logged");
    assert!(line.contains("rule=aki-missing"), "{line}");
    assert!(line.contains("RFC 5280 4.2.1.1"), "{line}");
    assert!(line.contains("CN=no-aki client"), "{line}");
    for debug in ["Violation {", "OtherError(", "Rule(", "Other("] {
        assert!(!line.contains(debug), "{debug}: {line}");
    }
    // The client side: the alert the server sent, by its RFC 8446 name, not rustls's
    // debug name (`received fatal alert: BadCertificate`).
    let out = tlskit(&[
        "connect",
        &strict.addr().to_string(),
        "--roots",
        &roots,
        "--servername",
        "test.example",
        "--tls-version",
        "1.2",
        "--cert",
        &s(&c_pem),
        "--key",
        &s(&k_pem),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the server sent the fatal alert"), "{err}");
    assert!(!err.contains("fatal alert: "), "{err}");
    let allowed = http_server(
        &pki,
        &[
            "--client-ca",
            &s(&ca_pem),
            "--client-ca-profile",
            "webpki",
            "--client-ca-allow",
            "aki-missing",
        ],
    );
    assert_eq!(try_connect(&allowed), 0, "{}", allowed.stderr());
    // A name that is no rule, or no profile: a usage error, before serving.
    for bad in [
        &["--client-ca-allow", "nope"][..],
        &["--client-ca-profile", "strict"][..],
    ] {
        let out = tlskit(&[&["serve", "--listen", "127.0.0.1:0"][..], bad].concat());
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// Issue 13, the profile's wiring into `serve`: `--client-ca-profile rfc5280` lifts a
/// CA/B-only rule (a client certificate without an extended key usage is refused under
/// webpki, accepted under rfc5280), the config-file keys `client_ca_profile` and
/// `client_ca_allow` do the same as the flags, and a pinned self-signed client
/// certificate is accepted through `--client-ca`, as a file and from a directory.
#[test]
fn net_serve_client_ca_profile_wiring_config_and_pinned() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let pki = Pki::new();
    let dir = tempfile::tempdir().expect("test setup");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("test setup");
        s(&p)
    };
    let p256 = || KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("test setup");
    let ca_key = p256();
    let mut cap = CertificateParams::new(Vec::<String>::new()).expect("test setup");
    cap.distinguished_name.push(DnType::CommonName, "wiring CA");
    cap.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    cap.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = cap.self_signed(&ca_key).expect("test setup");
    let ca_pem = write("ca.pem", &ca.pem());
    let issuer = Issuer::from_params(&cap, &ca_key);
    // (name, EKU clientAuth, AKI): a client certificate signed by the CA.
    let client = |name: &str, eku: bool, aki: bool| {
        let key = p256();
        let mut cp = CertificateParams::new(Vec::<String>::new()).expect("test setup");
        cp.distinguished_name.push(DnType::CommonName, name);
        if eku {
            cp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
        cp.use_authority_key_identifier_extension = aki;
        let c = cp.signed_by(&key, &issuer).expect("test setup");
        (
            write(&format!("{name}.pem"), &c.pem()),
            write(&format!("{name}.key"), &key.serialize_pem()),
        )
    };
    let no_eku = client("no-eku", false, true);
    let no_aki = client("no-aki", true, false);
    // A self-signed client certificate (no CA bit), and another one for the same name.
    let self_signed = |stem: &str| {
        let key = p256();
        let mut cp = CertificateParams::new(Vec::<String>::new()).expect("test setup");
        cp.distinguished_name
            .push(DnType::CommonName, "pinned client");
        cp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let c = cp.self_signed(&key).expect("test setup");
        (
            write(&format!("{stem}.pem"), &c.pem()),
            write(&format!("{stem}.key"), &key.serialize_pem()),
        )
    };
    let pinned = self_signed("pinned");
    let stranger = self_signed("stranger");
    let pin_dir = dir.path().join("pins");
    std::fs::create_dir(&pin_dir).expect("test setup");
    std::fs::copy(&pinned.0, pin_dir.join("pinned.pem")).expect("test setup");

    let roots = s(&pki.path("ca.pem"));
    // Exit code of a TLS 1.2 connect (the refusal comes in the handshake) with `who`.
    let try_connect = |srv: &Serve, who: &(String, String)| {
        connect_json(&[
            &srv.addr().to_string(),
            "--roots",
            &roots,
            "--servername",
            "test.example",
            "--tls-version",
            "1.2",
            "--cert",
            &who.0,
            "--key",
            &who.1,
        ])
        .0
    };

    // Issue 23: the default (browser) profile takes a client certificate without EKU
    // (no relying party refuses it; it is a warning).
    let browser = http_server(&pki, &["--client-ca", &ca_pem]);
    assert_eq!(try_connect(&browser, &no_eku), 0, "{}", browser.stderr());
    drop(browser);
    // Flags: webpki refuses the client certificate without EKU, rfc5280 takes it.
    let webpki = http_server(
        &pki,
        &["--client-ca", &ca_pem, "--client-ca-profile", "webpki"],
    );
    assert_eq!(try_connect(&webpki, &no_eku), 2, "{}", webpki.stderr());
    assert!(
        webpki.wait_log("rule=eku-client-auth-missing", Duration::from_secs(10)),
        "{}",
        webpki.stderr()
    );
    drop(webpki);
    let rfc = http_server(
        &pki,
        &["--client-ca", &ca_pem, "--client-ca-profile", "rfc5280"],
    );
    assert_eq!(try_connect(&rfc, &no_eku), 0, "{}", rfc.stderr());
    // A missing AKI is an RFC 5280 rule: still refused under rfc5280.
    assert_eq!(try_connect(&rfc, &no_aki), 2, "{}", rfc.stderr());
    drop(rfc);

    // The same through the config file.
    let (chain, key) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let conf = |extra: &str| {
        write(
            "serve.toml",
            &format!(
                "listen = [\"127.0.0.1:0\"]\ncert = {chain:?}\nkey = {key:?}\n\
                 respond = \"http\"\nclient_ca = [{ca_pem:?}]\n{extra}"
            ),
        )
    };
    let f = Serve::start(&["--config", &conf("client_ca_profile = \"rfc5280\"\n")]);
    assert_eq!(try_connect(&f, &no_eku), 0, "{}", f.stderr());
    assert_eq!(try_connect(&f, &no_aki), 2, "{}", f.stderr());
    drop(f);
    let f = Serve::start(&[
        "--config",
        &conf("client_ca_profile = \"webpki\"\nclient_ca_allow = [\"aki-missing\"]\n"),
    ]);
    assert_eq!(try_connect(&f, &no_aki), 0, "{}", f.stderr());
    assert_eq!(try_connect(&f, &no_eku), 2, "webpki still: {}", f.stderr());
    drop(f);
    // A rule name the file gets wrong is a configuration error (exit 2).
    let out = tlskit(&[
        "serve",
        "--config",
        &conf("client_ca_allow = [\"no-such-rule\"]\n"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-rule"));

    // Pinned: the self-signed client certificate itself as the client CA, as a file and
    // in a directory; another self-signed certificate with the same name is refused.
    for source in [pinned.0.clone(), s(&pin_dir)] {
        let srv = http_server(&pki, &["--client-ca", &source]);
        assert_eq!(try_connect(&srv, &pinned), 0, "{source}: {}", srv.stderr());
        assert_eq!(
            try_connect(&srv, &stranger),
            2,
            "{source}: {}",
            srv.stderr()
        );
    }
}

/// Issue 13: `connect --json` and `probe --json` carry the refusal's stable `rule` code
/// next to its sentence: here a server certificate without an authority key identifier
/// (RFC 5280 4.2.1.1), which the webpki profile refuses; issue 23: the default (browser)
/// profile verifies it and reports the rule in `warnings`.
#[test]
fn net_connect_and_probe_json_carry_the_rule_code() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("test setup");
    let mut cap = CertificateParams::new(Vec::<String>::new()).expect("test setup");
    cap.distinguished_name.push(DnType::CommonName, "no-aki CA");
    cap.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    cap.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = cap.self_signed(&ca_key).expect("test setup");
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("test setup");
    let mut lp = CertificateParams::new(vec!["test.example".to_string()]).expect("test setup");
    lp.distinguished_name
        .push(DnType::CommonName, "test.example");
    lp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    // rcgen leaves the authority key identifier out unless asked.
    let leaf = lp
        .signed_by(&key, &Issuer::from_params(&cap, &ca_key))
        .expect("test setup");
    let dir = tempfile::tempdir().expect("test setup");
    let (ca_pem, c_pem, k_pem) = (
        dir.path().join("ca.pem"),
        dir.path().join("c.pem"),
        dir.path().join("c.key"),
    );
    std::fs::write(&ca_pem, ca.pem()).expect("test setup");
    std::fs::write(&c_pem, leaf.pem()).expect("test setup");
    std::fs::write(&k_pem, key.serialize_pem()).expect("test setup");
    let srv = Serve::start(&[
        "--cert",
        &s(&c_pem),
        "--key",
        &s(&k_pem),
        "--respond",
        "http",
    ]);
    let target = srv.addr().to_string();
    // Issue 23: under the default (browser) profile the missing AKI is a warning: verified,
    // exit 0, and `warnings` names the rule and the certificate.
    let (code, v) = connect_json(&[
        target.as_str(),
        "--roots",
        &s(&ca_pem),
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["warnings"][0]["rule"], "aki-missing", "{v}");
    assert_eq!(v["warnings"][0]["position"], 0, "{v}");
    assert_eq!(v["warnings"][0]["subject"], "CN=test.example", "{v}");
    let args = [
        target.as_str(),
        "--roots",
        &s(&ca_pem),
        "--servername",
        "test.example",
        "--profile",
        "webpki",
    ];
    let (code, v) = connect_json(&args);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["warnings"], serde_json::json!([]), "{v}");
    assert_eq!(v["verified"], false, "{v}");
    assert_eq!(v["rule"], "aki-missing", "{v}");
    let reason = v["reason"].as_str().expect("reason");
    assert!(reason.contains("RFC 5280 4.2.1.1"), "{reason}");
    let out = tlskit(&[&["probe"][..], &args[..], &["--json"][..]].concat());
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(p["verified"], false, "{p}");
    assert_eq!(p["rule"], "aki-missing", "{p}");
    assert_eq!(p["warnings"], serde_json::json!([]), "{p}");
    // probe under the default: verified, the warning in its JSON too.
    let out = tlskit(&[&["probe"][..], &args[..5], &["--json"][..]].concat());
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(p["verified"], true, "{p}");
    assert_eq!(p["warnings"][0]["rule"], "aki-missing", "{p}");
    // Verified: the rule is null.
    let pki = Pki::new();
    let ok = http_server(&pki, &[]);
    let (code, v) = connect_json(&[
        &ok.addr().to_string(),
        "--roots",
        &s(&pki.path("ca.pem")),
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "{v}");
    assert!(v["rule"].is_null(), "{v}");
}

/// `connect` and `probe` name the problem when the trust source yields nothing (it was
/// "nothing loadable" alone), and a pinned self-signed certificate loads.
#[test]
fn net_connect_roots_nothing_loadable_names_the_problem() {
    let pki = Pki::new();
    // client.pem is issued by the client root: not a CA, not self-issued: not loadable.
    let bad = s(&pki.path("client.pem"));
    for cmd in ["connect", "probe"] {
        let out = tlskit(&[
            cmd,
            "127.0.0.1:9",
            "--roots",
            &bad,
            "--servername",
            "x.example",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("not a CA certificate"), "{cmd}: {err}");
        assert!(err.contains("client.pem"), "{cmd}: {err}");
    }
}

/// Issue 13: with several `--roots` sources, one that yields nothing (here a file whose
/// only certificate is neither a CA nor self-signed) is named on stderr as a warning,
/// though the other source loads and the handshake verifies.
#[test]
fn net_connect_and_probe_warn_about_a_roots_source_that_yields_nothing() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    let target = srv.addr().to_string();
    let (good, bad) = (s(&pki.path("ca.pem")), s(&pki.path("client.pem")));
    for cmd in ["connect", "probe"] {
        let out = tlskit(&[
            cmd,
            &target,
            "--roots",
            &good,
            "--roots",
            &bad,
            "--servername",
            "test.example",
            "--json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["verified"], true, "{cmd}: {v}");
        assert!(err.contains("warning: roots:"), "{cmd}: {err}");
        assert!(err.contains("client.pem"), "{cmd}: {err}");
        assert!(err.contains("not a CA certificate"), "{cmd}: {err}");
        // Both sources good: no warning.
        let out = tlskit(&[
            cmd,
            &target,
            "--roots",
            &good,
            "--servername",
            "test.example",
            "--json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {err}");
        assert!(!err.contains("warning"), "{cmd}: {err}");
    }
}

/// Issue 13: a server using a self-signed end-entity certificate (a development
/// certificate such as Debian's snakeoil: no CA bit, no key identifiers) is verified by
/// `connect` when that certificate is given as `--roots`: it is pinned, trusted for
/// exactly itself. Another self-signed certificate for the same name is not.
#[test]
fn net_connect_pinned_self_signed_server_certificate() {
    let dir = tempfile::tempdir().expect("test setup");
    let make = |stem: &str| {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let mut p =
            rcgen::CertificateParams::new(vec!["test.example".to_string()]).expect("params");
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "test.example");
        let cert = p.self_signed(&key).expect("self-signed");
        let (c, k) = (
            dir.path().join(format!("{stem}.pem")),
            dir.path().join(format!("{stem}.key")),
        );
        std::fs::write(&c, cert.pem()).expect("write");
        std::fs::write(&k, key.serialize_pem()).expect("write");
        (s(&c), s(&k))
    };
    let (snake, snake_key) = make("snakeoil");
    let (other, _) = make("other");
    let srv = Serve::start(&["--cert", &snake, "--key", &snake_key, "--respond", "http"]);
    let target = srv.addr().to_string();
    let (code, v) = connect_json(&[&target, "--roots", &snake, "--servername", "test.example"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    let (code, v) = connect_json(&[&target, "--roots", &other, "--servername", "test.example"]);
    assert_eq!(code, 1, "another pinned certificate is no issuer: {v}");
    assert_eq!(v["verified"], false, "{v}");
}

// ---- Issue 12, connection side: bounded memory and a deadline in every state. ----

/// The partial-ClientHello flood: 500 connections that each send a 65,000-byte
/// ClientHello minus its last byte (refused after 9 bytes: over --max-client-hello), then
/// 2,000 that send a 16,000-byte one minus its last byte (within the cap; a 4 MiB
/// --handshake-budget holds about 260 of them: each newcomer evicts the oldest). Server RSS is
/// read before, during and 10 s after (printed): the growth during the flood stays under
/// the budget plus 6 KiB per connection, and 10 s after the last connection closed RSS is
/// within 20% of the value before. Before this, each such connection held about 70 KiB
/// and most of it stayed after they closed.
///
/// The server runs with `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096`, the setting
/// crates/server/README.md recommends: glibc otherwise keeps freed heap memory (fragmented)
/// instead of giving it back.
#[test]
fn net_serve_partial_client_hello_flood_bounded_memory() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let mut cmd = Command::new(BIN);
    cmd.env("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4096");
    const BUDGET: u64 = 4 * 1024 * 1024;
    let budget = BUDGET.to_string();
    let srv = Serve::start_with(
        cmd,
        &[
            "--cert",
            &c,
            "--key",
            &k,
            "--respond",
            "http",
            "--handshake-timeout",
            "60",
            "--max-connections",
            "20000",
            "--handshake-budget",
            &budget,
            "--metrics",
            "127.0.0.1:0",
            "--log-level",
            "error",
        ],
        1,
    );
    let pid = srv.child.id();
    let maddr = srv.metrics_addr();
    let ca = pki.path("ca.pem");
    let served = || {
        let mut t = tls_connect(srv.addr(), &ca);
        t.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("write");
        let (out, _) = read_until_close(&mut t, Duration::from_secs(10));
        assert!(out.starts_with(b"HTTP/1.1 200"), "{out:?}");
    };
    // Warm up, so that the base is a server that has seen traffic (every runtime thread
    // has its malloc arena, the runtime's tables have grown): concurrent handshakes and
    // 200 partial ClientHellos, closed.
    std::thread::scope(|sc| {
        for _ in 0..4 {
            sc.spawn(|| {
                for _ in 0..5 {
                    served();
                }
            });
        }
    });
    let warm: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut t = TcpStream::connect(srv.addr()).expect("connect");
            let _ = t.write_all(&partial_client_hello(16_000));
            t
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    drop(warm);
    // (The handshake slots' allocation is given back after two idle seconds.)
    std::thread::sleep(Duration::from_millis(3000));
    let base = rss_of(pid);

    // 65,000 bytes declared: refused as soon as the size is read, with an alert.
    let big = partial_client_hello(65_000);
    let mut refused = 0;
    let mut conns = Vec::new();
    for _ in 0..500 {
        let mut t = TcpStream::connect(srv.addr()).expect("connect");
        let _ = t.write_all(&big);
        conns.push(t);
    }
    for t in &mut conns {
        t.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut b = [0u8; 16];
        if matches!(t.read(&mut b), Ok(7) if b[0] == 21) {
            refused += 1;
        }
    }
    drop(conns);
    assert!(refused >= 495, "{refused} of 500 got the alert");

    // At the cap: buffered until the budget is spent, then refused.
    let at_cap = partial_client_hello(16_000);
    let mut held = Vec::new();
    for _ in 0..2000 {
        let mut t = TcpStream::connect(srv.addr()).expect("connect");
        t.set_write_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let _ = t.write_all(&at_cap);
        held.push(t);
    }
    std::thread::sleep(Duration::from_millis(1500));
    let during = rss_of(pid);
    let text = scrape(&maddr);
    let buffered = metric(&text, "tlskit_handshake_buffer_bytes").unwrap_or(0.0);
    let over_budget = metric(
        &text,
        "tlskit_handshake_failures_total{reason=\"handshake_budget\"}",
    )
    .unwrap_or(0.0);
    let too_large = metric(
        &text,
        "tlskit_handshake_failures_total{reason=\"client_hello_too_large\"}",
    )
    .unwrap_or(0.0);
    drop(held);
    let closed_at = Instant::now();
    // Everything closed on the server side too.
    let t = Instant::now();
    while metric(&scrape(&maddr), "tlskit_active_connections") != Some(0.0) {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "connections never closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(10).saturating_sub(closed_at.elapsed()));
    let after = rss_of(pid);
    let growth = during.saturating_sub(base);
    eprintln!(
        "partial-ClientHello flood: RSS base {base} KiB, during {during} KiB (+{growth} KiB for \
         2,000 held, {:.1} KiB each; {buffered} bytes buffered), 10 s after {after} KiB; \
         refused: {too_large} too large, {over_budget} over budget (evicted or refused)",
        growth as f64 / 2000.0
    );
    assert!(too_large >= 495.0, "{text}");
    assert!(buffered as u64 <= BUDGET && buffered > 0.0, "{text}");
    assert!(over_budget > 1000.0, "{text}");
    assert!(
        growth <= BUDGET / 1024 + 2000 * 6,
        "RSS grew {growth} KiB during the flood (budget {} KiB + 6 KiB per connection)",
        BUDGET / 1024
    );
    assert!(
        after as f64 <= base as f64 * 1.2,
        "RSS {after} KiB 10 s after the flood, {base} KiB before"
    );
    served();
}

/// A silent backend cannot hold clients: with --idle-timeout 2 the relay closes when
/// nothing moved either way for 2 s (before: held until the backend died, 124 s seen),
/// so five clients at --max-connections 5 do not lock out the next.
#[test]
fn net_serve_silent_backend_idle_timeout() {
    let pki = Pki::new();
    let backend = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let baddr = backend.local_addr().expect("addr").to_string();
    // Accept and hold every connection, never answering.
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let held = held.clone();
        std::thread::spawn(move || {
            for c in backend.incoming().map_while(Result::ok) {
                held.lock().expect("held").push(c);
            }
        });
    }
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &baddr,
        "--idle-timeout",
        "2",
        "--max-connections",
        "5",
        "--metrics",
        "127.0.0.1:0",
    ]);
    let maddr = srv.metrics_addr();
    let ca = pki.path("ca.pem");
    let t0 = Instant::now();
    let mut clients: Vec<_> = (0..5)
        .map(|_| {
            let mut t = tls_connect(srv.addr(), &ca);
            t.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("write");
            t.flush().expect("flush");
            t.sock
                .set_read_timeout(Some(Duration::from_millis(200)))
                .expect("timeout");
            t
        })
        .collect();
    for t in &mut clients {
        let (_, closed) = read_until_close(t, Duration::from_secs(15));
        assert!(closed, "still open after {:?}", t0.elapsed());
    }
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(8), "closed after {took:?}");
    assert!(took >= Duration::from_millis(1900), "closed after {took:?}");
    // The slots are free again.
    let mut t = tls_connect(srv.addr(), &ca);
    t.write_all(b"x").expect("write");
    let text = scrape(&maddr);
    assert!(
        metric(
            &text,
            "tlskit_connections_closed_total{reason=\"idle_timeout\"}"
        )
        .is_some_and(|v| v >= 5.0),
        "{text}"
    );
}

/// A client dripping its request head one byte every 300 ms is cut at --header-timeout
/// (total, not per byte: before, each byte restarted the 60 s idle timeout), with a 408;
/// five such clients at --max-connections 5 do not lock out the next client for long.
#[test]
fn net_serve_dripping_client_header_timeout() {
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &[
            "--header-timeout",
            "2",
            "--idle-timeout",
            "30",
            "--max-connections",
            "5",
        ],
    );
    let ca = pki.path("ca.pem");
    let t0 = Instant::now();
    let mut drippers: Vec<_> = (0..5)
        .map(|_| {
            let t = tls_connect(srv.addr(), &ca);
            t.sock
                .set_read_timeout(Some(Duration::from_millis(50)))
                .expect("timeout");
            t
        })
        .collect();
    let head = b"GET / HTTP/1.1\r\nHost: test.example\r\nX-Drip: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut closed_at = vec![None; drippers.len()];
    let mut answers = vec![Vec::new(); drippers.len()];
    'drip: for b in head.iter() {
        for (i, t) in drippers.iter_mut().enumerate() {
            if closed_at[i].is_some() {
                continue;
            }
            let _ = t.write_all(std::slice::from_ref(b));
            let (out, closed) = read_until_close(t, Duration::from_millis(50));
            answers[i].extend_from_slice(&out);
            if closed {
                closed_at[i] = Some(t0.elapsed());
            }
        }
        if closed_at.iter().all(Option::is_some) || t0.elapsed() > Duration::from_secs(20) {
            break 'drip;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    for (i, at) in closed_at.iter().enumerate() {
        let at = at.unwrap_or_else(|| panic!("dripper {i} still open after {:?}", t0.elapsed()));
        assert!(
            at < Duration::from_secs(6),
            "dripper {i} closed after {at:?}"
        );
        assert!(
            answers[i].starts_with(b"HTTP/1.1 408"),
            "{:?}",
            String::from_utf8_lossy(&answers[i])
        );
    }
    let (code, _) = connect_json(&[
        &srv.addr().to_string(),
        "--roots",
        &s(&ca),
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0, "served after the drippers were cut");
}

/// TLS 1.2 renegotiation (openssl s_client's `R`) is refused and the connection closed at
/// once: before, rustls's no_renegotiation warning was only queued and sent when the idle
/// timeout closed the connection (59 s seen).
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn net_serve_tls12_renegotiation_refused_at_once() {
    assert!(
        have("openssl"),
        "openssl is required (scripts/setup installs it)"
    );
    let pki = Pki::new();
    let srv = http_server(&pki, &["--idle-timeout", "30"]);
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-tls1_2",
            "-connect",
            &srv.addr().to_string(),
            "-servername",
            "test.example",
            "-CAfile",
            &s(&pki.path("ca.pem")),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl s_client");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let guard = Guard(child);
    // Wait for the end of the handshake report.
    let t = Instant::now();
    loop {
        let l = rx
            .recv_timeout(Duration::from_secs(15))
            .expect("s_client handshake output");
        if l.contains("Verify return code") {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(15));
    }
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    stdin.write_all(b"R\n").expect("R");
    stdin.flush().expect("flush");
    assert!(
        srv.wait_log("event=renegotiation_refused", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let mut guard = guard;
    let mut exited = false;
    while t.elapsed() < Duration::from_secs(10) {
        if guard.0.try_wait().expect("try_wait").is_some() {
            exited = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = t.elapsed();
    assert!(exited, "s_client still connected after {took:?}");
    assert!(took < Duration::from_secs(5), "closed after {took:?}");
    drop(stdin);
}

/// Request smuggling: a POST whose Content-Length body is `GET /smuggled ...` gets one
/// answer, not two; Content-Length with Transfer-Encoding, two different lengths or a
/// malformed one get 400 and a close; a chunked body gets its answer and a close.
#[test]
fn net_serve_http_body_not_taken_as_a_request() {
    let pki = Pki::new();
    let srv = http_server(&pki, &[]);
    let ca = pki.path("ca.pem");
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let exchange = |head: &str| -> (String, bool) {
        let mut t = tls_connect(srv.addr(), &ca);
        t.sock
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let req = format!(
            "{}{smuggled}",
            head.replace("LEN", &smuggled.len().to_string())
        );
        t.write_all(req.as_bytes()).expect("write");
        let (out, closed) = read_until_close(&mut t, Duration::from_secs(3));
        (String::from_utf8_lossy(&out).into_owned(), closed)
    };
    let (out, closed) = exchange("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: LEN\r\n\r\n");
    assert_eq!(out.matches("HTTP/1.1 ").count(), 1, "{out}");
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(!closed, "keep-alive goes on after a skipped body");
    let (out, closed) =
        exchange("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(out.matches("HTTP/1.1 ").count(), 1, "{out}");
    assert!(closed && out.contains("Connection: close"), "{out}");
    for bad in [
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: LEN\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: LEN\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: LEN\r\nContent-Length: 3\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +LEN\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length : LEN\r\n\r\n",
    ] {
        let (out, closed) = exchange(bad);
        assert_eq!(out.matches("HTTP/1.1 ").count(), 1, "{bad:?}: {out}");
        assert!(out.starts_with("HTTP/1.1 400"), "{bad:?}: {out}");
        assert!(closed, "{bad:?}: closed after the 400");
    }
}

/// One client failing handshakes as fast as it can for 3 s: the failures are all counted
/// by reason in the metrics, but the log gets a handful of lines (5 at once, then one per
/// 10 s per source), not one per failure (33,321 lines in 5 s before).
#[test]
fn net_serve_failed_handshake_log_rate_limited() {
    let pki = Pki::new();
    let srv = http_server(&pki, &["--metrics", "127.0.0.1:0"]);
    let maddr = srv.metrics_addr();
    let t = Instant::now();
    let mut sent = 0u64;
    while t.elapsed() < Duration::from_secs(3) {
        let Ok(mut g) = TcpStream::connect(srv.addr()) else {
            continue;
        };
        let _ = g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let _ = g.set_read_timeout(Some(Duration::from_secs(5)));
        let mut sink = Vec::new();
        let _ = g.read_to_end(&mut sink);
        sent += 1;
    }
    std::thread::sleep(Duration::from_millis(200));
    let text = scrape(&maddr);
    let protocol = metric(
        &text,
        "tlskit_handshake_failures_total{reason=\"protocol\"}",
    )
    .unwrap_or(0.0);
    let suppressed = metric(
        &text,
        "tlskit_log_lines_suppressed_total{event=\"handshake_failed\"}",
    )
    .unwrap_or(0.0);
    let lines = srv.stderr().matches("event=handshake_failed").count();
    eprintln!("{sent} failed handshakes in 3 s: {lines} log lines, {suppressed} suppressed");
    assert!(sent > 50, "only {sent} attempts");
    assert_eq!(protocol as u64, sent, "{text}");
    assert!(lines <= 6, "{lines} lines: {}", srv.stderr());
    assert!(lines >= 1);
    assert_eq!(suppressed as u64 + lines as u64, sent, "{text}");
}

/// After a valid ClientHello, the rest of the client's handshake is bounded too: a TLS 1.2
/// client that answers the server's flight with a handshake message declared 65,000 bytes
/// long (sent but its last byte) is cut after 16 KiB, not held (with rustls buffering it)
/// until the handshake timeout.
#[test]
fn net_serve_rest_of_handshake_bounded() {
    use tlskit_verify::rustls;
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &["--handshake-timeout", "30", "--metrics", "127.0.0.1:0"],
    );
    let maddr = srv.metrics_addr();
    let mut roots = rustls::RootCertStore::empty();
    for c in tlskit_verify::load_certs(&pki.path("ca.pem")).expect("ca.pem") {
        roots.add(c).expect("root");
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("test.example").expect("name");
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).expect("client");
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).expect("write_tls");
    }
    let mut sock = TcpStream::connect(srv.addr()).expect("connect");
    sock.write_all(&hello).expect("hello");
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let (flight, closed) = read_until_close(&mut sock, Duration::from_millis(500));
    assert!(!flight.is_empty() && !closed, "server flight");
    // A ClientKeyExchange (type 16) declared 65,000 bytes long, cut by one byte.
    let mut big = partial_client_hello(65_000);
    big[5] = 16;
    let t = Instant::now();
    let _ = sock.write_all(&big);
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let (_, closed) = read_until_close(&mut sock, Duration::from_secs(10));
    assert!(closed, "held for {:?}", t.elapsed());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let text = scrape(&maddr);
    assert_eq!(
        metric(
            &text,
            "tlskit_handshake_failures_total{reason=\"handshake_too_large\"}"
        ),
        Some(1.0),
        "{text}"
    );
}

/// When the handshake budget is spent by partial ClientHellos, a new client evicts the
/// oldest of them and is served (they get an internal_error alert): a flood that fills
/// the budget does not lock real clients out.
#[test]
fn net_serve_handshake_budget_evicts_oldest_partial_hello() {
    let pki = Pki::new();
    let srv = http_server(
        &pki,
        &[
            "--handshake-timeout",
            "60",
            "--handshake-budget",
            "65536",
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    let maddr = srv.metrics_addr();
    let ca = pki.path("ca.pem");
    // 4 fit in 64 KiB; each of the next 16 evicts the oldest.
    let partial = partial_client_hello(16_000);
    let mut held: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut t = TcpStream::connect(srv.addr()).expect("connect");
            t.write_all(&partial).expect("write");
            std::thread::sleep(Duration::from_millis(20));
            t
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let text = scrape(&maddr);
    assert!(
        metric(&text, "tlskit_handshake_buffer_bytes")
            .is_some_and(|b| b > 48_000.0 && b <= 65_536.0),
        "{text}"
    );
    // A real client is served while the flood holds the budget.
    let mut t = tls_connect(srv.addr(), &ca);
    t.write_all(b"GET / HTTP/1.0\r\n\r\n").expect("write");
    let (out, _) = read_until_close(&mut t, Duration::from_secs(10));
    assert!(out.starts_with(b"HTTP/1.1 200"), "{out:?}");
    // The oldest were evicted with an alert; the newest still wait.
    let mut alerted = 0;
    for c in &mut held {
        c.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut b = [0u8; 7];
        if matches!(c.read(&mut b), Ok(7) if b[0] == 21 && b[6] == 80) {
            alerted += 1;
        }
    }
    assert!((16..=20).contains(&alerted), "{alerted} evicted");
    let text = scrape(&maddr);
    assert!(
        metric(
            &text,
            "tlskit_handshake_failures_total{reason=\"handshake_budget\"}"
        )
        .is_some_and(|v| v >= 16.0),
        "{text}"
    );
    drop(held);
}

/// Issue 15, ready means ready: `listening on` comes only after the certificate messages
/// are compressed, so the first client (which offers brotli) waits for no compression,
/// and its handshake costs what later ones cost. Before, the warm-up ran in the
/// background and raced readiness: the first handshake compressed a long chain itself
/// (about 150 ms with brotli, debug build, against a few ms for the others).
///
/// 100 handshakes, each offering brotli and zlib (rustls's client); the server's own time
/// for each (`ms=` of the debug `event=handshake` line: accept to handshake done) is
/// compared: the first must not cost more than 3x the median of the others plus 25 ms
/// (slack for a shared 2-core machine; a brotli compression of the long chain is several
/// times that). Checked: with the warm-up removed from `Server::bind`, the first took
/// 241 ms against a median of 1.35 ms and this test failed; with it, 3.9 ms against 1.4.
#[test]
fn net_serve_first_handshake_finds_everything_ready() {
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 900);
    let srv = Serve::start(&[
        "--cert",
        &pki.path("long.pem").display().to_string(),
        "--key",
        &pki.path("long.key").display().to_string(),
        "--respond",
        "http",
        "--metrics",
        "127.0.0.1:0",
        "--log-level",
        "debug",
    ]);
    const N: usize = 100;
    for _ in 0..N {
        // The handshake is complete when tls_connect returns; the server logs it then.
        drop(tls_connect(srv.addr(), &pki.path("ca.pem")));
    }
    assert!(
        srv.wait_log_more("event=handshake ", N - 1, Duration::from_secs(20)),
        "{}",
        srv.stderr()
    );
    let ms: Vec<f64> = srv
        .stderr()
        .lines()
        .filter(|l| l.contains("event=handshake "))
        .map(|l| {
            assert!(l.contains("cert_compression=brotli"), "{l}");
            l.split(' ')
                .find_map(|f| f.strip_prefix("ms="))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no ms= in {l}"))
        })
        .collect();
    assert_eq!(ms.len(), N, "{ms:?}");
    let mut rest = ms[1..].to_vec();
    rest.sort_by(f64::total_cmp);
    let median = rest[rest.len() / 2];
    eprintln!(
        "server handshake ms: first {:.2}, rest median {median:.2}, max {:.2}",
        ms[0],
        rest[rest.len() - 1]
    );
    assert!(
        ms[0] <= 3.0 * median + 25.0,
        "the first handshake cost {:.2} ms against a median of {median:.2} ms: \
         something it needs was not ready at `listening on`; all: {ms:?}",
        ms[0]
    );
    let text = scrape(&srv.metrics_addr());
    assert_eq!(
        metric(
            &text,
            "tlskit_certificate_compression_waits_total{algorithm=\"brotli\"}"
        ),
        Some(0.0),
        "a handshake waited for a compression; handshake ms: {ms:?}\n{text}"
    );
    assert_eq!(
        metric(
            &text,
            "tlskit_certificate_compression_total{algorithm=\"brotli\"}"
        ),
        Some(N as f64),
        "{text}"
    );
}

/// Under systemd (RUNTIME_DIRECTORY set, as RuntimeDirectory=tlskit does): `serve` with
/// no `--control` puts its socket at $RUNTIME_DIRECTORY/control.sock, mode 0600, and
/// `tlskit ctl` with no `--control` finds it there; `--control` still wins on both sides,
/// and without the variable `serve` opens no socket and `ctl` looks in /run/tlskit.
#[test]
fn net_serve_control_socket_in_the_runtime_directory() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let pki = Pki::new();
    let run = tempfile::tempdir().expect("tempdir");
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let args = ["--cert", &c, "--key", &k, "--respond", "http"];
    let mut cmd = Command::new(BIN);
    cmd.env("RUNTIME_DIRECTORY", run.path());
    let mut srv = Serve::start_with(cmd, &args, 1);
    let sock = run.path().join("control.sock");
    let meta = std::fs::symlink_metadata(&sock).expect("the socket in RUNTIME_DIRECTORY");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(
        srv.wait_log(
            &format!("control socket {}", s(&sock)),
            Duration::from_secs(10)
        ),
        "{}",
        srv.stderr()
    );
    let ctl = |env: Option<&std::path::Path>, args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.env_remove("RUNTIME_DIRECTORY");
        if let Some(d) = env {
            cmd.env("RUNTIME_DIRECTORY", d);
        }
        let out = cmd
            .arg("ctl")
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
    let (code, out, err) = ctl(Some(run.path()), &["certs"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("default (file): test.example, localhost; expires "),
        "{out}"
    );
    // --control wins over the variable.
    let elsewhere = pki.path("nowhere.sock");
    let (code, _, err) = ctl(Some(run.path()), &["--control", &s(&elsewhere), "certs"]);
    assert_eq!(code, 2);
    assert!(err.contains(&s(&elsewhere)), "{err}");
    // Without the variable: the shipped unit's place.
    let (code, _, err) = ctl(None, &["status"]);
    assert_eq!(code, 2);
    assert!(err.contains("/run/tlskit/control.sock"), "{err}");
    srv.signal("TERM");
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(std::fs::symlink_metadata(&sock).is_err(), "removed on exit");

    // `--control` wins over RUNTIME_DIRECTORY for serve too.
    let mine = pki.path("mine.sock");
    let mut cmd = Command::new(BIN);
    cmd.env("RUNTIME_DIRECTORY", run.path());
    let mine_s = s(&mine);
    let mut with_flag = args.to_vec();
    with_flag.extend(["--control", &mine_s]);
    let mut srv = Serve::start_with(cmd, &with_flag, 1);
    assert!(std::fs::symlink_metadata(&mine).is_ok());
    assert!(std::fs::symlink_metadata(&sock).is_err());
    srv.signal("TERM");
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0));
    // No variable, no flag: no socket.
    let mut cmd = Command::new(BIN);
    cmd.env_remove("RUNTIME_DIRECTORY");
    let mut srv = Serve::start_with(cmd, &args, 1);
    srv.signal("TERM");
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0));
    let log = srv.stderr();
    assert!(
        log.contains("listening on ") && !log.contains("control socket"),
        "{log}"
    );
}

/// `tlskit ctl` against `tlskit serve --control`: status and certs name every pair with
/// its source, a reload of a broken chain exits 1 naming the file, no socket exits 2,
/// and the socket goes away with the server.
#[test]
fn net_serve_control_socket_with_ctl() {
    let pki = Pki::new();
    let sni = pki.path("sni");
    std::fs::create_dir(&sni).expect("mkdir");
    pki.server_leaf("sni/a.crt", "sni/a.key", "a.example", &["a.example"]);
    let control = s(&pki.path("control.sock"));
    let mut srv = http_server(
        &pki,
        &["--sni-dir", &s(&sni), "--control", &control, "--no-watch"],
    );
    let ctl = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["ctl", "--control", &control])
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
    let (code, out, err) = ctl(&["status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["schema"], "tlskit.ctl.status/1");
    let certs: Vec<(String, String)> = v["certificates"]
        .as_array()
        .expect("certificates")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["source"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        certs,
        [
            ("default".to_string(), "file".to_string()),
            ("a".to_string(), "sni_dir".to_string())
        ],
        "{v}"
    );
    assert_eq!(v["certificates"][1]["dns_names"][0], "a.example");

    let (code, out, err) = ctl(&["certs"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("a (sni_dir): a.example; expires "), "{out}");

    let (code, out, err) = ctl(&["reload"]);
    assert_eq!(
        (code, out.trim_end().ends_with(": ok")),
        (0, true),
        "{out}{err}"
    );
    std::fs::write(pki.path("chain.pem"), "garbage\n").expect("write");
    let (code, out, err) = ctl(&["reload"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("failed; what was serving stays"), "{out}");
    assert!(
        out.contains(&format!("certificates: {}: ", s(&pki.path("chain.pem")))),
        "{out}"
    );

    srv.signal("TERM");
    assert_eq!(srv.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(!pki.path("control.sock").exists(), "removed on exit");
    let (code, _, err) = ctl(&["status"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot connect to the control socket"),
        "{err}"
    );
}
