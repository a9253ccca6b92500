//! `tlskit probe` end to end on loopback, real sockets: the JSON contract against
//! `tlskit serve`, exit codes 0/1/2, and a proxy in front of `tlskit serve` that passes
//! the server's bytes on in 4 KB pieces with a pause (what OpenSSL's 4 KB handshake
//! buffer does to a long chain), whose cause the probe's advice must name. No wall-clock
//! assertions: loopback timing is noise; the delayed-link counts are in probe_rtt.rs.

use crate::hostile;
use crate::net_support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

use net_support::*;

fn probe(args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["probe"];
    all.extend_from_slice(args);
    let out = tlskit(&all);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn serve(pki: &Pki, chain: &str, key: &str, compress: &str) -> Serve {
    let (c, k) = (
        pki.path(chain).display().to_string(),
        pki.path(key).display().to_string(),
    );
    Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--compress",
        compress,
    ])
}

#[test]
fn probe_json_contract_against_tlskit_serve() {
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 700);
    let bytes = pki.der_bytes("long.pem");
    let srv = serve(&pki, "long.pem", "long.key", "brotli,zlib");
    let target = srv.addr().to_string();
    let roots = pki.path("ca.pem").display().to_string();
    let (code, v, err) = probe(&[
        &target,
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}\n{v}");
    for key in [
        "tcp_rtt_ms",
        "handshake_ms",
        "handshake_rtts",
        "server_flights",
        "chain_bytes",
        "chain_bytes_compressed",
        "compression",
        "tls_version",
        "resumed",
        "verified",
        "advice",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert!(v["tcp_rtt_ms"].as_f64().is_some());
    assert!(v["handshake_ms"].as_f64().is_some());
    assert!(v["handshake_rtts"].as_u64().is_some_and(|n| n >= 1));
    assert_eq!(v["tls_version"], "TLSv1.3");
    assert_eq!(v["verified"], true);
    assert_eq!(v["resumed"], false);
    assert_eq!(v["chain_bytes"].as_u64(), Some(bytes as u64));
    assert!(
        v["compression"] == "brotli" || v["compression"] == "zlib",
        "{v}"
    );
    assert_eq!(v["chain_bytes_compressed_source"], "server");
    let comp = v["chain_bytes_compressed"].as_u64().expect("compressed");
    assert!(comp > 0 && comp < bytes as u64 / 2, "{comp} vs {bytes}");
    let flights = v["server_flights"].as_array().expect("flights");
    // One write of < 2 KB is one segment on loopback: one burst, tickets not counted.
    assert_eq!(flights.len(), 1, "{v}");
    for f in flights {
        assert!(f["bytes"].as_u64().is_some_and(|b| b > 0));
        assert!(f["segments"].as_u64().is_some_and(|s| s >= 1));
    }
    // The whole server flight is smaller than the uncompressed chain: it was compressed.
    let first = flights[0]["bytes"].as_u64().expect("bytes");
    assert!(first < bytes as u64, "first flight {first}");
    let advice: Vec<&str> = v["advice"]
        .as_array()
        .expect("advice")
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    assert!(
        advice.iter().any(|a| a.contains("fits the 10-segment")),
        "{advice:?}"
    );
    eprintln!("probe tlskit serve (brotli,zlib), chain {bytes} B: {v}");

    // Human output: a readable report, no colour when not on a terminal.
    let out = tlskit(&[
        "probe",
        &target,
        "--servername",
        "test.example",
        "--roots",
        &roots,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(text.contains("round trip"), "{text}");
    assert!(text.contains("verified"), "{text}");
    assert!(!text.contains('\x1b'), "colour on a pipe: {text}");
}

#[test]
fn probe_uncompressed_long_chain_and_tls12() {
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 700);
    let bytes = pki.der_bytes("long.pem");
    let srv = serve(&pki, "long.pem", "long.key", "none");
    let target = srv.addr().to_string();
    let roots = pki.path("ca.pem").display().to_string();
    let base = [
        target.as_str(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--json",
    ];
    let (code, v, err) = probe(&base);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["compression"], serde_json::Value::Null);
    assert_eq!(v["chain_bytes_compressed_source"], "brotli estimate");
    assert!(v["chain_bytes_compressed"].as_u64().expect("c") < bytes as u64);
    let advice = v["advice"].to_string();
    assert!(
        advice.contains("enable certificate compression"),
        "{advice}"
    );
    // The 700-name leaf is the cause, named by subject; no root was sent (issue 28).
    assert!(
        advice.contains("shorten the leaf CN=test.example ("),
        "{advice}"
    );
    assert!(!advice.contains("root"), "{advice}");
    let mut t12 = base.to_vec();
    t12.push("--tls12");
    let (code, v, err) = probe(&t12);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["tls_version"], "TLSv1.2");
    assert!(v["advice"].to_string().contains("TLS 1.2"), "{v}");
}

#[test]
fn probe_exit_codes() {
    let pki = Pki::new();
    let srv = serve(&pki, "chain.pem", "leaf.key", "brotli,zlib");
    let target = srv.addr().to_string();
    let other = pki.path("other-ca.pem").display().to_string();
    let (code, v, err) = probe(&[
        &target,
        "--servername",
        "test.example",
        "--roots",
        &other,
        "--json",
    ]);
    assert_eq!(code, 1, "wrong roots: {err}");
    assert_eq!(v["verified"], false);
    assert!(v["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(v["advice"].to_string().contains("did not verify"));

    let roots = pki.path("ca.pem").display().to_string();
    let (code, v, _) = probe(&[
        &target,
        "--servername",
        "wrong.example",
        "--roots",
        &roots,
        "--json",
    ]);
    assert_eq!(code, 1, "wrong name");
    assert_eq!(v["verified"], false);

    let closed = format!("127.0.0.1:{}", free_port());
    let (code, _, err) = probe(&[&closed, "--roots", &roots, "--json"]);
    assert_eq!(code, 2, "closed port");
    assert!(err.contains("cannot connect"), "{err}");
    let (code, _, _) = probe(&["no-port", "--roots", &roots, "--json"]);
    assert_eq!(code, 2, "bad input");
    let missing = pki.path("missing.pem").display().to_string();
    let (code, _, _) = probe(&[&target, "--roots", &missing, "--json"]);
    assert_eq!(code, 2, "unloadable roots");
}

#[test]
fn probe_repeat_reports_medians_and_resumption() {
    let pki = Pki::new();
    let srv = serve(&pki, "chain.pem", "leaf.key", "brotli,zlib");
    let target = srv.addr().to_string();
    let roots = pki.path("ca.pem").display().to_string();
    let (code, v, err) = probe(&[
        &target,
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--repeat",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["runs"].as_array().map(|r| r.len()), Some(3));
    assert!(v["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .all(|r| r["resumed"] == false));
    assert_eq!(v["resumed"], false);
    assert_eq!(v["resumption"]["resumed"], true, "{v}");
    assert!(v["resumption"]["handshake_rtts"].as_u64().is_some());
}

/// A TCP proxy that forwards client bytes as they come and server bytes in 4096-byte
/// pieces with `pause` between them: a server whose first flight leaves in 4 KB writes.
fn chunking_proxy(upstream: std::net::SocketAddr, pause: Duration) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(client) = c else { break };
            let Ok(server) = TcpStream::connect(upstream) else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (mut c_r, mut s_w) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = c_r.read(&mut buf) {
                    if n == 0 || s_w.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = s_w.shutdown(Shutdown::Write);
            });
            let (mut s_r, mut c_w) = (server, client);
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = s_r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut first = true;
                    for piece in buf[..n].chunks(4096) {
                        if !first {
                            std::thread::sleep(pause);
                        }
                        first = false;
                        if c_w.write_all(piece).is_err() {
                            return;
                        }
                    }
                }
                let _ = c_w.shutdown(Shutdown::Write);
            });
        }
    });
    addr
}

#[test]
fn probe_names_a_flight_sent_in_4k_pieces() {
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 500);
    let bytes = pki.der_bytes("long.pem");
    let srv = serve(&pki, "long.pem", "long.key", "none");
    let proxy = chunking_proxy(srv.addr(), Duration::from_millis(40));
    let roots = pki.path("ca.pem").display().to_string();
    let (code, v, err) = probe(&[
        &proxy.to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let flights = v["server_flights"].as_array().expect("flights");
    // The first flight (> 16 KB) arrives as at least 4 bursts of at most 4096 bytes.
    let pieces: Vec<u64> = flights
        .iter()
        .take_while(|f| f["bytes"].as_u64().is_some())
        .map(|f| f["bytes"].as_u64().unwrap_or(0))
        .collect();
    assert!(pieces.len() >= 4, "chain {bytes} B, bursts {pieces:?}: {v}");
    assert!(pieces[0] <= 4096, "{pieces:?}");
    let advice = v["advice"].to_string();
    assert!(advice.contains("4 KB writes"), "{advice}");
    assert!(v["server_bursts"].as_u64().is_some_and(|n| n >= 4));
    eprintln!("probe through 4 KB proxy, chain {bytes} B: {v}");
}

/// Issue 12: a server whose certificate names hold ESC sequences, BEL, CR and bidi
/// overrides: `probe` (verified and not) prints them escaped; `--json` keeps them exact.
#[test]
fn escape_codes_in_a_server_certificate_are_escaped_by_probe() {
    let pki = Pki::new();
    hostile::evil_pki(pki.dir.path());
    let srv = serve(&pki, "evil-chain.pem", "evil.key", "none");
    let target = srv.addr().to_string();
    let roots = pki.path("evil-root.pem").display().to_string();
    for (name, want) in [("evil.test", 0), ("other.test", 1)] {
        let o = tlskit(&["probe", &target, "--roots", &roots, "--servername", name]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(want), "{name}: {out}");
        hostile::assert_no_raw_controls(&format!("probe {name}"), &o.stdout);
        hostile::assert_no_raw_controls(&format!("probe {name}"), &o.stderr);
        assert!(out.contains(hostile::EVIL_CN_DN), "{out}");
        let o = tlskit(&[
            "probe",
            &target,
            "--roots",
            &roots,
            "--servername",
            name,
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(want));
        hostile::assert_no_raw_controls(&format!("probe {name} --json"), &o.stdout);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let leaf = v["chain"][0].as_str().unwrap_or_default();
        assert!(
            leaf.contains(hostile::EVIL_CN_DN) && leaf.contains(hostile::EVIL_O_DN),
            "{v}"
        );
        // `doctor HOST:PORT` probes it too (its report names no certificate today; it
        // must stay free of raw controls if it ever does).
        let o = tlskit(&["doctor", &target, "--roots", &roots, "--servername", name]);
        hostile::assert_no_raw_controls(&format!("doctor {name}"), &o.stdout);
        hostile::assert_no_raw_controls(&format!("doctor {name}"), &o.stderr);
    }
}

/// `openssl s_server` on one key-exchange group, serving `chain.pem` (leaf, intermediate).
fn s_server_with_group(pki: &Pki, group: &str) -> (Guard, u16) {
    let chain = std::fs::read_to_string(pki.path("chain.pem")).expect("chain");
    let end = "-----END CERTIFICATE-----";
    let cut = chain.find(end).expect("a certificate") + end.len();
    std::fs::write(pki.path("leaf-only.pem"), &chain[..cut]).expect("write");
    std::fs::write(pki.path("inter-only.pem"), chain[cut..].trim_start()).expect("write");
    let port = free_port();
    let child = std::process::Command::new("openssl")
        .current_dir(pki.dir.path())
        .args([
            "s_server",
            "-accept",
            &format!("127.0.0.1:{port}"),
            "-cert",
            "leaf-only.pem",
            "-cert_chain",
            "inter-only.pem",
            "-key",
            "leaf.key",
            "-groups",
            group,
            "-www",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_server");
    let g = Guard(child);
    assert!(wait_port(port, Duration::from_secs(10)), "s_server not up");
    (g, port)
}

/// Issue 15: probe and connect report the key-exchange group, whether a HelloRetryRequest
/// happened and why, the key-share sizes and the days left on the certificate; against
/// OpenSSL 3 on one group at a time, and tlskit serve (rustls: X25519MLKEM768 first).
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: openssl")]
fn probe_and_connect_report_key_exchange_and_hello_retry() {
    require("openssl");
    let pki = Pki::new();
    let now = time::OffsetDateTime::now_utc();
    pki.server_leaf_valid(
        "chain.pem",
        "leaf.key",
        &["test.example"],
        now - time::Duration::days(1),
        now + time::Duration::days(30) + time::Duration::hours(1),
    );
    let roots = pki.path("ca.pem").display().to_string();
    for (group, want, hrr, shares) in [
        ("X25519", "X25519", false, (32, 32)),
        ("P-256", "secp256r1", true, (65, 65)),
    ] {
        let (_g, port) = s_server_with_group(&pki, group);
        let target = format!("127.0.0.1:{port}");
        let (code, v, err) = probe(&[
            &target,
            "--servername",
            "test.example",
            "--roots",
            &roots,
            "--json",
        ]);
        let (c2, cv) = connect_json(&[&target, "--servername", "test.example", "--roots", &roots]);
        for (code, v) in [(code, &v), (c2, &cv)] {
            assert_eq!(code, 0, "{group}: {v} {err}");
            assert_matches_schema(v);
            assert_eq!(v["key_exchange_group"], want, "{group}: {v}");
            assert_eq!(v["hello_retry_request"], hrr, "{group}: {v}");
            assert_eq!(v["key_share_bytes"]["client"], shares.0);
            assert_eq!(v["key_share_bytes"]["server"], shares.1);
            assert_eq!(v["expires_in_days"], 30, "{v}");
            if hrr {
                let why = v["hello_retry_reason"].as_str().unwrap_or("");
                assert!(
                    why.contains("secp256r1") && why.contains("no key share"),
                    "{why}"
                );
            } else {
                assert!(v["hello_retry_reason"].is_null());
            }
        }
        // The HRR costs a round trip, and the timeline shows it as its own flights.
        let whats: Vec<String> = v["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .map(|e| {
                format!(
                    "{}:{}",
                    e["from"].as_str().unwrap_or(""),
                    e["what"].as_str().unwrap_or("")
                )
            })
            .collect();
        let want_flights: &[&str] = if hrr {
            &[
                "client:ClientHello",
                "server:HelloRetryRequest",
                "client:ClientHello (after HelloRetryRequest)",
                "server:ServerHello .. Finished",
            ]
        } else {
            &["client:ClientHello", "server:ServerHello .. Finished"]
        };
        assert_eq!(&whats[..want_flights.len()], want_flights, "{whats:?}");
        let times: Vec<f64> = v["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .map(|e| e["at_ms"].as_f64().expect("at_ms"))
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    }

    // tlskit serve with rustls's defaults agrees on the post-quantum hybrid, no HRR.
    let srv = serve(&pki, "chain.pem", "leaf.key", "none");
    let (code, v, err) = probe(&[
        &srv.addr().to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--json",
    ]);
    let (c2, cv) = connect_json(&[
        &srv.addr().to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
    ]);
    for (code, v) in [(code, &v), (c2, &cv)] {
        assert_eq!(code, 0, "{err} {v}");
        assert_matches_schema(v);
        assert_eq!(v["hello_retry_request"], false, "{v}");
        assert!(v["hello_retry_reason"].is_null(), "{v}");
        // What browsers send, and rustls's default on both sides: the ML-KEM hybrid.
        assert_eq!(v["key_exchange_group"], "X25519MLKEM768", "{v}");
        assert_eq!(v["key_share_bytes"]["client"], 1216, "{v}");
        assert_eq!(v["key_share_bytes"]["server"], 1120, "{v}");
        assert_eq!(v["expires_in_days"], 30, "{v}");
    }
    drop(srv);

    // An expired certificate served by tlskit serve (it starts, with a warning): the
    // handshake is still reported, verification fails (exit 1, the contract for "did
    // not verify"), and expires_in_days is negative (rounded down: -2 d 23 h is -3).
    pki.server_leaf_valid(
        "expired.pem",
        "expired.key",
        &["test.example"],
        now - time::Duration::days(30),
        now - time::Duration::days(3) + time::Duration::hours(1),
    );
    let srv = serve(&pki, "expired.pem", "expired.key", "none");
    let (code, v, err) = probe(&[
        &srv.addr().to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--json",
    ]);
    let (c2, cv) = connect_json(&[
        &srv.addr().to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
    ]);
    for (code, v) in [(code, &v), (c2, &cv)] {
        assert_eq!(code, 1, "{err} {v}");
        assert_matches_schema(v);
        assert_eq!(v["verified"], false, "{v}");
        let why = v["reason"].as_str().unwrap_or("");
        assert!(why.to_ascii_lowercase().contains("expired"), "{v}");
        assert_eq!(v["expires_in_days"], -3, "{v}");
        assert_eq!(v["key_exchange_group"], "X25519MLKEM768", "{v}");
    }
    // The human output says so too.
    let out = tlskit(&[
        "probe",
        &srv.addr().to_string(),
        "--servername",
        "test.example",
        "--roots",
        &roots,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("certificate:  expired 3 day(s) ago"),
        "{text}"
    );
    drop(srv);

    // --timeline draws the waterfall: one line per flight, arrows both ways, an axis.
    let (_g, port) = s_server_with_group(&pki, "P-256");
    let out = tlskit(&[
        "probe",
        &format!("127.0.0.1:{port}"),
        "--servername",
        "test.example",
        "--roots",
        &roots,
        "--timeline",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("HelloRetryRequest (the server chose secp256r1"),
        "{text}"
    );
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("timeline"))
        .skip(1)
        .collect();
    assert!(lines.len() >= 4, "{text}");
    assert!(
        lines[0].contains("client -> |>") && lines[0].ends_with("ClientHello"),
        "{text}"
    );
    assert!(lines[1].contains("server <- |") && lines[1].ends_with("HelloRetryRequest"));
    assert!(lines.iter().all(|l| l.matches('|').count() == 2), "{text}");
}
