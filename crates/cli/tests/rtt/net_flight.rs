//! The one-write property, checked with strace on the real binary: every TLS flight
//! reaches the kernel in one write/writev (with TCP_NODELAY and a large send buffer set
//! before the handshake), on the server and on the client side.

use crate::net_support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::BIN;
use net_support::*;

/// Return values of write-like syscalls on the fd returned by the first accept4/connect
/// (`accept`) or the first AF_INET connect (otherwise) returned, in order.
fn writes_on_conn(trace: &str, accept: bool) -> Vec<usize> {
    let mut fd: Option<String> = None;
    let mut out = Vec::new();
    // With several threads strace splits a call that another thread's call interrupts:
    // "PID accept4(3,  <unfinished ...>" then "PID <... accept4 resumed>...) = 14". The
    // halves are joined per thread before the call is read.
    let mut pending: std::collections::HashMap<String, String> = Default::default();
    let mut joined = Vec::new();
    for line in trace.lines() {
        // "PID call(...)" with several threads, "call(...)" with one.
        let (pid, call) = match line.split_once(' ') {
            Some((pid, rest)) if pid.chars().all(|c| c.is_ascii_digit()) => {
                (pid.to_string(), rest.trim_start())
            }
            _ => (String::new(), line),
        };
        if let Some(head) = call.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.to_string());
            continue;
        }
        if let Some(rest) = call.strip_prefix("<... ") {
            let tail = rest.split_once(" resumed>").map_or("", |(_, t)| t);
            if let Some(head) = pending.remove(&pid) {
                joined.push(format!("{head}{tail}"));
            }
            continue;
        }
        joined.push(call.to_string());
    }
    for call in &joined {
        let call = call.as_str();
        if fd.is_none() {
            if accept && call.starts_with("accept4(") {
                if let Some((_, r)) = call.rsplit_once(" = ") {
                    if r.trim().parse::<i32>().is_ok() {
                        fd = Some(r.trim().to_string());
                    }
                }
            }
            if !accept && call.starts_with("connect(") && call.contains("AF_INET") {
                fd = call
                    .strip_prefix("connect(")
                    .and_then(|r| r.split(',').next())
                    .map(str::to_string);
            }
            continue;
        }
        let Some(f) = &fd else { continue };
        for name in ["write(", "writev(", "sendmsg(", "sendto("] {
            if call.starts_with(&format!("{name}{f},")) {
                if let Some((_, r)) = call.rsplit_once(" = ") {
                    if let Ok(n) = r.trim().parse::<usize>() {
                        out.push(n);
                    }
                }
            }
        }
    }
    out
}

fn strace_ok() -> bool {
    require("strace");
    let ok = Command::new("strace")
        .args(["-o", "/dev/null", "true"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        cannot_run(
            "net_flight",
            "strace cannot trace here (ptrace not permitted)",
        );
    }
    ok
}

#[test]
fn net_flight_server_sends_long_chain_in_one_write() {
    if !strace_ok() {
        return;
    }
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 700);
    let chain_bytes = pki.der_bytes("long.pem");
    assert!(chain_bytes >= 20_000, "chain is {chain_bytes} bytes");
    for (tls, label) in [("-tls1_3", "TLS 1.3"), ("-tls1_2", "TLS 1.2")] {
        let trace = pki.path(&format!("server{tls}.strace"));
        let mut cmd = Command::new("strace");
        cmd.args([
            "-f",
            "-qq",
            "-s",
            "0",
            "-e",
            "trace=accept4,write,writev,sendmsg,sendto",
            "-o",
        ])
        .arg(&trace)
        .arg(BIN);
        let (c, k) = (
            pki.path("long.pem").display().to_string(),
            pki.path("long.key").display().to_string(),
        );
        let mut srv = Serve::start_with(cmd, &["--cert", &c, "--key", &k, "--respond", "http"], 1);
        // openssl s_client offers no certificate compression: the whole chain goes out.
        let mut cl = Command::new("openssl")
            .args([
                "s_client",
                tls,
                "-ign_eof",
                "-connect",
                &srv.addr().to_string(),
                "-servername",
                "test.example",
            ])
            .arg("-CAfile")
            .arg(pki.path("ca.pem"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl");
        cl.stdin
            .take()
            .expect("stdin")
            .write_all(b"GET / HTTP/1.0\r\n\r\n")
            .expect("w");
        let out = cl.wait_with_output().expect("wait");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("200 OK"),
            "{label}"
        );
        // SIGTERM to tlskit (strace's child): it stops, and strace exits after it, writing
        // out what it traced; a SIGKILL of both (the drop) could lose the end of the trace
        // still in strace's buffer.
        let st = Command::new("pkill")
            .args(["-TERM", "-P", &srv.pid().to_string()])
            .status()
            .expect("pkill");
        assert!(st.success(), "{label}: no tlskit under strace");
        assert!(
            srv.wait_exit(Duration::from_secs(20)).is_some(),
            "{label}: strace did not exit after tlskit"
        );
        drop(srv);
        let text = std::fs::read_to_string(&trace).expect("trace");
        let writes = writes_on_conn(&text, true);
        eprintln!(
            "{label}: server writes on the connection: {writes:?} (chain {chain_bytes} bytes)"
        );
        assert!(
            !writes.is_empty(),
            "{label}: no writes traced on the accepted connection:\n{}",
            text.chars().take(4000).collect::<String>()
        );
        assert!(
            writes[0] > chain_bytes,
            "{label}: the first flight went out in one write: {writes:?}"
        );
    }
}

#[test]
fn net_flight_client_flights_in_one_write_each() {
    if !strace_ok() {
        return;
    }
    let pki = Pki::new();
    pki.long_chain("long.pem", "long.key", 10);
    let (c, k) = (
        pki.path("chain.pem").display().to_string(),
        pki.path("leaf.key").display().to_string(),
    );
    let cca = pki.path("client-ca.pem").display().to_string();
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--client-ca",
        &cca,
    ]);
    let trace = pki.path("client.strace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-s",
            "0",
            "-e",
            "trace=connect,write,writev,sendmsg,sendto",
            "-o",
        ])
        .arg(&trace)
        .arg(BIN)
        .args([
            "connect",
            &srv.addr().to_string(),
            "--servername",
            "test.example",
            "--json",
        ])
        .arg("--roots")
        .arg(pki.path("ca.pem"))
        .arg("--cert")
        .arg(pki.path("client.pem"))
        .arg("--key")
        .arg(pki.path("client.key"))
        .stdin(Stdio::null())
        .output()
        .expect("strace connect");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).expect("trace");
    let writes = writes_on_conn(&text, false);
    if writes.is_empty() {
        eprintln!("TRACE:\n{text}");
    }
    eprintln!("client writes on the connection: {writes:?}");
    // ClientHello; CCS + Certificate + CertificateVerify + Finished; close_notify.
    assert_eq!(writes.len(), 3, "{writes:?}");
    let client_cert = pki.der_bytes("client.pem");
    assert!(
        writes[1] > client_cert,
        "the client's second flight went out whole: {writes:?}"
    );
}
