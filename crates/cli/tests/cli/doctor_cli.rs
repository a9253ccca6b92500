//! `tlskit doctor` end to end: the trust-store sections plus the built-in loopback
//! handshake (issue 6), and a probe of a given address.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

#[test]
fn doctor_probes_its_loopback_server_with_and_without_compression() {
    let out = Command::new(BIN)
        .args(["doctor", "--json"])
        .output()
        .expect("run tlskit doctor");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor JSON");
    let lb = &v["sections"]["loopback"];
    assert_eq!(lb["status"], "ok", "{lb}");
    let with = &lb["with_compression"];
    let without = &lb["without_compression"];
    assert_eq!(with["verified"], true);
    assert_eq!(with["compression"], "brotli");
    assert!(with["chain_bytes"].as_u64().unwrap_or(0) > 20_000, "{with}");
    assert!(with["chain_bytes_compressed"].as_u64().unwrap_or(u64::MAX) < 14_600);
    assert!(without["compression"].is_null(), "{without}");
    assert!(without["advice"].as_array().is_some_and(|a| a
        .iter()
        .any(|s| s.as_str().unwrap_or("").contains("compression"))));
    // The trust-store sections are still there.
    assert!(
        v["sections"]["trust_store"].is_object()
            || v["sections"]["system_store"]["status"] == "bad"
    );
}

/// Issue 28: the human report says what was measured of the chain: its size, and what
/// went on the wire (compressed, with which algorithm and to how much) or that it went
/// uncompressed with brotli's size as an estimate.
#[test]
fn doctor_says_what_was_measured_of_the_chain() {
    let out = Command::new(BIN)
        .args(["doctor"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run tlskit doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line: {text}"))
            .to_string()
    };
    let with = line("with compression ");
    assert!(
        with.contains(", chain of ") && with.contains(" B, sent compressed with brotli as "),
        "{with}"
    );
    let without = line("without compression ");
    assert!(
        without.contains(" B, sent uncompressed; brotli would make it "),
        "{without}"
    );
    assert!(!text.contains("uncompressed: brotli estimate"), "{text}");
}

#[test]
fn doctor_with_an_address_that_refuses_is_exit_2() {
    // Bind and drop a listener to get a port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let out = Command::new(BIN)
        .args(["doctor", &format!("127.0.0.1:{port}")])
        .output()
        .expect("run tlskit doctor");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not be probed"), "{err}");
}
