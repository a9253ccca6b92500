//! `tlskit probe` end to end on loopback, real sockets: the JSON contract against
//! `tlskit serve`, exit codes 0/1/2, and a proxy in front of `tlskit serve` that passes
//! the server's bytes on in 4 KB pieces with a pause (what OpenSSL's 4 KB handshake
//! buffer does to a long chain), whose cause the probe's advice must name. No wall-clock
//! assertions: loopback timing is noise; the delayed-link counts are in probe_rtt.rs.

#[path = "common/hostile.rs"]
mod hostile;
mod net_support;

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
