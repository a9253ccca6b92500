//! Interop: other TLS implementations against `tlskit serve` (openssl s_client, gnutls-cli,
//! curl, Python's ssl, Go's crypto/tls; TLS 1.2 and 1.3; with and without client
//! certificates), and `tlskit connect` against openssl s_server, gnutls-serv and nginx.
//! A peer that is not installed fails the test (scripts/setup installs them all).

use crate::net_support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::BIN;
use net_support::*;

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// Run a shell pipeline that prints the peer's output.
fn sh(script: &str) -> Output {
    Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("sh")
}

fn servers(pki: &Pki) -> (Serve, Serve) {
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let plain = Serve::start(&["--cert", &c, "--key", &k, "--respond", "http"]);
    let mtls = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--client-ca",
        &p(&pki.path("client-ca.pem")),
    ]);
    (plain, mtls)
}

#[test]
fn net_interop_openssl_s_client() {
    require("openssl");
    let pki = Pki::new();
    let (plain, mtls) = servers(&pki);
    for v in ["-tls1_2", "-tls1_3"] {
        for (srv, client) in [(&plain, ""), (&mtls, "-cert client.pem -key client.key")] {
            let out = sh(&format!(
                "cd {dir} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client {v} -ign_eof -connect {addr} \
                 -servername test.example -CAfile ca.pem -verify_return_error {client} 2>&1",
                dir = p(pki.dir.path()),
                addr = srv.addr()
            ));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("HTTP/1.1 200 OK"), "{v} {client}: {text}");
            assert!(text.contains("Verify return code: 0"), "{v}: {text}");
            let want = if v == "-tls1_2" { "TLSv1.2" } else { "TLSv1.3" };
            assert!(text.contains(want), "{v}: {text}");
        }
    }
    // Without a client certificate the mTLS server answers nothing.
    let out = sh(&format!(
        "cd {} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client -ign_eof -connect {} -servername test.example -CAfile ca.pem 2>&1",
        p(pki.dir.path()),
        mtls.addr()
    ));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("200 OK"));
}

#[test]
fn net_interop_gnutls_cli() {
    require("gnutls-cli");
    let pki = Pki::new();
    let (plain, mtls) = servers(&pki);
    for v in ["VERS-TLS1.2", "VERS-TLS1.3"] {
        for (srv, client) in [
            (&plain, ""),
            (&mtls, "--x509certfile client.pem --x509keyfile client.key"),
        ] {
            let out = sh(&format!(
                "cd {dir} && (printf 'GET / HTTP/1.0\\r\\n\\r\\n'; sleep 1) | gnutls-cli --x509cafile ca.pem \
                 --priority 'NORMAL:-VERS-ALL:+{v}' -p {port} localhost {client} 2>&1",
                dir = p(pki.dir.path()),
                port = srv.port()
            ));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("HTTP/1.1 200 OK"), "{v} {client}: {text}");
            let want = if v == "VERS-TLS1.2" {
                "(TLS1.2"
            } else {
                "(TLS1.3"
            };
            assert!(text.contains(want), "{v}: {text}");
        }
    }
}

#[test]
fn net_interop_curl() {
    require("curl");
    let pki = Pki::new();
    let (plain, mtls) = servers(&pki);
    for v in ["--tlsv1.2 --tls-max 1.2", "--tlsv1.3"] {
        for (srv, client) in [(&plain, ""), (&mtls, "--cert client.pem --key client.key")] {
            let out = sh(&format!(
                "cd {dir} && curl -sS --cacert ca.pem {v} {client} --resolve test.example:{port}:127.0.0.1 \
                 -w '%{{http_version}} %{{http_code}}\\n' https://test.example:{port}/ 2>&1",
                dir = p(pki.dir.path()),
                port = srv.port()
            ));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("hello from tlskit") && text.contains("1.1 200"),
                "{v} {client}: {text}"
            );
        }
    }
}

#[test]
fn net_interop_python_ssl() {
    require("python3");
    let pki = Pki::new();
    let (plain, mtls) = servers(&pki);
    let script = r#"
import socket, ssl, sys
port, ver, cert = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile="ca.pem")
v = ssl.TLSVersion.TLSv1_2 if ver == "1.2" else ssl.TLSVersion.TLSv1_3
ctx.minimum_version = ctx.maximum_version = v
ctx.set_alpn_protocols(["http/1.1"])
if cert == "yes":
    ctx.load_cert_chain("client.pem", "client.key")
with socket.create_connection(("127.0.0.1", port)) as s:
    with ctx.wrap_socket(s, server_hostname="test.example") as t:
        t.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            d = t.recv(4096)
            if not d:
                break
            data += d
        print(t.version(), t.selected_alpn_protocol(), data.split(b"\r\n")[0].decode())
"#;
    std::fs::write(pki.path("client.py"), script).expect("write");
    for v in ["1.2", "1.3"] {
        for (srv, cert) in [(&plain, "no"), (&mtls, "yes")] {
            let out = Command::new("python3")
                .current_dir(pki.dir.path())
                .args(["client.py", &srv.port().to_string(), v, cert])
                .output()
                .expect("python3");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                text.trim(),
                format!("TLSv{v} http/1.1 HTTP/1.1 200 OK"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn net_interop_go_crypto_tls() {
    require("go");
    let pki = Pki::new();
    let (plain, mtls) = servers(&pki);
    let dir = pki.path("goclient");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("go.mod"), "module goclient\n\ngo 1.21\n").expect("write");
    std::fs::write(
        dir.join("main.go"),
        r#"package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
)

func main() {
	addr, ver, cert := os.Args[1], os.Args[2], os.Args[3]
	pem, err := os.ReadFile(os.Args[4])
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	v := uint16(tls.VersionTLS13)
	if ver == "1.2" {
		v = tls.VersionTLS12
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "test.example", MinVersion: v, MaxVersion: v, NextProtos: []string{"http/1.1"}}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, os.Args[5])
		if err != nil {
			panic(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	body, _ := io.ReadAll(c)
	st := c.ConnectionState()
	fmt.Printf("%s %s %s\n", tls.VersionName(st.Version), st.NegotiatedProtocol, string(body[:15]))
}
"#,
    )
    .expect("write");
    let build = Command::new("go")
        .current_dir(&dir)
        .env("GOFLAGS", "-mod=mod")
        .env("GOTOOLCHAIN", "local")
        .args(["build", "-o", "goclient", "."])
        .output()
        .expect("go build");
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    for v in ["1.2", "1.3"] {
        for (srv, cert) in [(&plain, false), (&mtls, true)] {
            let mut cmd = Command::new(dir.join("goclient"));
            cmd.args([&srv.addr().to_string(), v]);
            if cert {
                cmd.arg(pki.path("client.pem"))
                    .arg(pki.path("ca.pem"))
                    .arg(pki.path("client.key"));
            } else {
                cmd.arg("").arg(pki.path("ca.pem"));
            }
            let out = cmd.output().expect("goclient");
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                text.trim(),
                format!("TLS {v} http/1.1 HTTP/1.1 200 OK"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Leaf and intermediate in separate files (for peers that want them apart).
fn split_chain(pki: &Pki) {
    let text = std::fs::read_to_string(pki.path("chain.pem")).expect("chain");
    let blocks: Vec<String> = text
        .split_inclusive("-----END CERTIFICATE-----\n")
        .map(str::to_string)
        .collect();
    std::fs::write(pki.path("leaf-only.pem"), &blocks[0]).expect("write");
    std::fs::write(pki.path("inter-only.pem"), &blocks[1]).expect("write");
}

fn connect_ok(pki: &Pki, port: u16, extra: &[&str]) -> serde_json::Value {
    let target = format!("127.0.0.1:{port}");
    let ca = p(&pki.path("ca.pem"));
    let mut args = vec![
        target.as_str(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ];
    args.extend_from_slice(extra);
    let (code, v) = connect_json(&args);
    assert_eq!(code, 0, "{extra:?}: {v}");
    assert_eq!(v["verified"], true);
    assert_eq!(v["chain"][2], "CN=tlskit test root", "{v}");
    v
}

#[test]
fn net_interop_connect_to_openssl_s_server() {
    require("openssl");
    let pki = Pki::new();
    split_chain(&pki);
    for (client_auth, extra) in [
        (false, vec![]),
        (true, vec!["-Verify", "1", "-CAfile", "client-ca.pem"]),
    ] {
        let port = free_port();
        let child = Command::new("openssl")
            .current_dir(pki.dir.path())
            .args([
                "s_server",
                "-accept",
                &port.to_string(),
                "-cert",
                "leaf-only.pem",
                "-key",
                "leaf.key",
            ])
            .args(["-cert_chain", "inter-only.pem", "-www"])
            .args(&extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s_server");
        let _g = Guard(child);
        assert!(wait_port(port, Duration::from_secs(10)));
        let (cert, key) = (p(&pki.path("client.pem")), p(&pki.path("client.key")));
        let cert_args: Vec<&str> = if client_auth {
            vec!["--cert", &cert, "--key", &key]
        } else {
            vec![]
        };
        for v in ["1.2", "1.3"] {
            let mut args = vec!["--tls-version", v];
            args.extend_from_slice(&cert_args);
            let j = connect_ok(&pki, port, &args);
            assert_eq!(j["tls_version"], format!("TLSv{v}"));
        }
    }
}

#[test]
fn net_interop_connect_to_gnutls_serv() {
    require("gnutls-serv");
    let pki = Pki::new();
    for client_auth in [false, true] {
        let port = free_port();
        let mut cmd = Command::new("gnutls-serv");
        cmd.current_dir(pki.dir.path()).args([
            "--x509certfile",
            "chain.pem",
            "--x509keyfile",
            "leaf.key",
            "--http",
            "-p",
            &port.to_string(),
        ]);
        if client_auth {
            cmd.args([
                "--require-client-cert",
                "--verify-client-cert",
                "--x509cafile",
                "client-ca.pem",
            ]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnutls-serv");
        let _g = Guard(child);
        assert!(wait_port(port, Duration::from_secs(10)));
        let (cert, key) = (p(&pki.path("client.pem")), p(&pki.path("client.key")));
        for v in ["1.2", "1.3"] {
            let mut args = vec!["--tls-version", v];
            if client_auth {
                args.extend_from_slice(&["--cert", &cert, "--key", &key]);
            }
            let j = connect_ok(&pki, port, &args);
            assert_eq!(j["tls_version"], format!("TLSv{v}"));
        }
    }
}

#[test]
fn net_interop_connect_to_nginx() {
    // /usr/sbin is not on every user's PATH: nginx is found there too, else it is missing.
    assert!(
        have("nginx") || Path::new("/usr/sbin/nginx").is_file(),
        "nginx is not installed (scripts/setup installs it)"
    );
    let nginx = if have("nginx") {
        "nginx".to_string()
    } else {
        "/usr/sbin/nginx".to_string()
    };
    let pki = Pki::new();
    let port = free_port();
    let mport = free_port();
    let d = p(pki.dir.path());
    let user = if Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false)
    {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        "{user}\ndaemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n access_log {d}/access.log;\n client_body_temp_path {d}/cb;\n proxy_temp_path {d}/px;\n\
         fastcgi_temp_path {d}/fc;\n uwsgi_temp_path {d}/uw;\n scgi_temp_path {d}/sc;\n\
         server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {d}/chain.pem; ssl_certificate_key {d}/leaf.key;\n\
           ssl_protocols TLSv1.2 TLSv1.3; location / {{ return 200 \"nginx\\n\"; }} }}\n\
         server {{ listen 127.0.0.1:{mport} ssl; ssl_certificate {d}/chain.pem; ssl_certificate_key {d}/leaf.key;\n\
           ssl_client_certificate {d}/client-ca.pem; ssl_verify_client on;\n\
           ssl_protocols TLSv1.2 TLSv1.3; location / {{ return 200 \"nginx\\n\"; }} }}\n}}\n"
    );
    std::fs::write(pki.path("nginx.conf"), conf).expect("write");
    let child = Command::new(&nginx)
        .args([
            "-p",
            &d,
            "-c",
            &format!("{d}/nginx.conf"),
            "-e",
            &format!("{d}/error.log"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nginx");
    let _g = Guard(child);
    assert!(
        wait_port(port, Duration::from_secs(10)),
        "{}",
        std::fs::read_to_string(pki.path("error.log")).unwrap_or_default()
    );
    let (cert, key) = (p(&pki.path("client.pem")), p(&pki.path("client.key")));
    for v in ["1.2", "1.3"] {
        let j = connect_ok(&pki, port, &["--tls-version", v, "--alpn", "http/1.1"]);
        assert_eq!(j["tls_version"], format!("TLSv{v}"));
        connect_ok(
            &pki,
            mport,
            &["--tls-version", v, "--cert", &cert, "--key", &key],
        );
    }
    // Relay: an HTTP request through `tlskit connect` to nginx.
    let mut child = Command::new(BIN)
        .args([
            "connect",
            &format!("127.0.0.1:{port}"),
            "--servername",
            "test.example",
            "--roots",
            &p(&pki.path("ca.pem")),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("connect");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"GET / HTTP/1.0\r\nHost: test.example\r\n\r\n")
        .expect("w");
    let out = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("HTTP/1.1 200 OK") && text.ends_with("nginx\n"),
        "{text}"
    );
}

/// A backend started by a test, killed when dropped.
fn backend(cmd: &mut Command, port: u16) -> Guard {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn backend");
    let g = Guard(child);
    assert!(
        wait_port(port, Duration::from_secs(15)),
        "backend on {port} not up"
    );
    g
}

fn curl_h2(pki: &Pki, port: u16) -> String {
    let out = sh(&format!(
        "cd {dir} && curl -sS --http2 --cacert ca.pem --max-time 10 \
         --resolve test.example:{port}:127.0.0.1 \
         -w '\\nversion=%{{http_version}} code=%{{http_code}}\\n' https://test.example:{port}/index.html 2>&1",
        dir = p(pki.dir.path()),
    ));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 15: the server offers in ALPN only what the backend speaks. curl --http2 in
/// front of an HTTP/1.1 backend gets http/1.1 (before: h2 was agreed, the backend read
/// `PRI * HTTP/2.0` and curl got "Empty reply from server"), h2 end to end from nghttpd,
/// and an h2-only client in front of the HTTP/1.1 backend gets no_application_protocol.
#[test]
fn net_interop_alpn_chosen_by_backend() {
    require("curl");
    require("python3");
    require("nghttpd");
    require("openssl");
    let pki = Pki::new();
    std::fs::write(pki.path("index.html"), "hello from the backend\n").expect("write");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));

    // An HTTP/1.x backend (Python's http.server).
    let h1 = free_port();
    let _h1 = backend(
        Command::new("python3").args([
            "-c",
            "import functools, http.server as h, sys\n\
                 h.SimpleHTTPRequestHandler.protocol_version = 'HTTP/1.1'\n\
                 handler = functools.partial(h.SimpleHTTPRequestHandler, directory=sys.argv[2])\n\
                 h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), handler).serve_forever()",
            &h1.to_string(),
            &p(pki.dir.path()),
        ]),
        h1,
    );
    let h1_addr = format!("127.0.0.1:{h1}");
    // The issue's exact command: --alpn h2,http/1.1 in front of it, no --backend-alpn. The
    // backend declares nothing, so nothing is offered (with a warning naming
    // --backend-alpn) and curl --http2 falls back to HTTP/1.1 (before: h2 agreed, "Empty
    // reply from server").
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &h1_addr,
        "--alpn",
        "h2,http/1.1",
    ]);
    let text = curl_h2(&pki, srv.port());
    assert!(
        text.contains("hello from the backend") && text.contains("version=1.1 code=200"),
        "{text}"
    );
    assert!(!text.contains("Empty reply"), "{text}");
    assert!(
        srv.wait_log("event=alpn_not_offered", Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
    let err = srv.stderr();
    assert!(
        err.contains("protocols=h2,http/1.1") && err.contains("--backend-alpn"),
        "{err}"
    );
    // Nothing agreed, seen by openssl s_client offering both.
    let out = sh(&format!(
        "cd {dir} && openssl s_client -alpn h2,http/1.1 -connect 127.0.0.1:{port} \
         -servername test.example -CAfile ca.pem </dev/null 2>&1",
        dir = p(pki.dir.path()),
        port = srv.port()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No ALPN negotiated"), "{text}");
    drop(srv);
    // Declared: --alpn h2,http/1.1 with --backend-alpn http/1.1. h2 is dropped (warning).
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &h1_addr,
        "--alpn",
        "h2",
        "--alpn",
        "http/1.1",
        "--backend-alpn",
        "http/1.1",
    ]);
    let text = curl_h2(&pki, srv.port());
    assert!(
        text.contains("hello from the backend") && text.contains("version=1.1 code=200"),
        "{text}"
    );
    assert!(
        srv.wait_log("event=alpn_not_offered", Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
    assert!(srv.stderr().contains("protocols=h2"), "{}", srv.stderr());
    // Declared with --backend-alpn alone.
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &h1_addr,
        "--backend-alpn",
        "http/1.1",
    ]);
    let text = curl_h2(&pki, srv.port());
    assert!(text.contains("version=1.1 code=200"), "{text}");
    // An h2-only client: the no_application_protocol alert (120), not a broken stream.
    let out = sh(&format!(
        "cd {dir} && openssl s_client -alpn h2 -connect 127.0.0.1:{port} -servername test.example \
         -CAfile ca.pem </dev/null 2>&1",
        dir = p(pki.dir.path()),
        port = srv.port()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no application protocol"), "{text}");

    // An h2 backend (nghttpd, cleartext HTTP/2 with prior knowledge).
    let h2 = free_port();
    let _h2 = backend(
        Command::new("nghttpd").args([
            "--no-tls",
            "--address=127.0.0.1",
            "-d",
            &p(pki.dir.path()),
            &h2.to_string(),
        ]),
        h2,
    );
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &format!("127.0.0.1:{h2}"),
        "--backend-alpn",
        "h2",
    ]);
    let text = curl_h2(&pki, srv.port());
    assert!(
        text.contains("hello from the backend") && text.contains("version=2 code=200"),
        "{text}"
    );

    // Refused at start: nothing left to offer, and --backend-alpn without a backend.
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--alpn",
        "h2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--alpn h2") && err.contains("speaks only http/1.1"),
        "{err}"
    );
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--backend-alpn",
        "h2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend-alpn needs --backend"));
}

/// Parse a PROXY v2 header's TLVs: (type, value) pairs.
fn proxy_tlvs(header: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let addr_len = if header[13] == 0x11 { 12 } else { 36 };
    let mut rest = &header[16 + addr_len..];
    let mut out = Vec::new();
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        out.push((rest[0], rest[3..3 + len].to_vec()));
        rest = &rest[3 + len..];
    }
    assert!(rest.is_empty(), "trailing bytes in the TLVs");
    out
}

/// Issue 15: PROXY v2 carries ALPN, AUTHORITY (SNI) and SSL (version, cipher, client
/// certificate verified and its CN). Read off the wire by a backend written here, and
/// consumed by a real one: HAProxy with accept-proxy answers with the authority it got.
#[test]
fn net_interop_proxy_v2_tlvs() {
    require("curl");
    require("haproxy");
    let pki = Pki::new();
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));

    // A backend that records the header and answers one HTTP request.
    let (port, rx) = proxy_recording_backend(2);
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &format!("127.0.0.1:{port}"),
        "--backend-alpn",
        "http/1.1",
        "--proxy-protocol",
        "--client-ca",
        &p(&pki.path("client-ca.pem")),
        "--client-auth",
        "optional",
    ]);
    for client in ["--cert client.pem --key client.key", ""] {
        let out = sh(&format!(
            "cd {dir} && curl -sS --cacert ca.pem --tlsv1.3 --max-time 10 {client} \
             --resolve test.example:{port}:127.0.0.1 https://test.example:{port}/ 2>&1",
            dir = p(pki.dir.path()),
            port = srv.port()
        ));
        assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
        let header = rx.recv_timeout(Duration::from_secs(10)).expect("header");
        assert_eq!(&header[..13], b"\r\n\r\n\0\r\nQUIT\n\x21");
        let tlvs = proxy_tlvs(&header);
        let get = |t: u8| tlvs.iter().find(|(k, _)| *k == t).map(|(_, v)| v.clone());
        assert_eq!(get(0x01).as_deref(), Some(&b"http/1.1"[..]), "{tlvs:?}");
        assert_eq!(get(0x02).as_deref(), Some(&b"test.example"[..]));
        let ssl = get(0x20).expect("SSL TLV");
        let subs = proxy_tlvs(&[&[0u8; 13][..], &[0x11, 0, 0], &[0u8; 12], &ssl[5..]].concat());
        let sub = |t: u8| subs.iter().find(|(k, _)| *k == t).map(|(_, v)| v.clone());
        assert_eq!(sub(0x21).as_deref(), Some(&b"TLSv1.3"[..]));
        assert!(
            sub(0x23).is_some_and(|c| c.starts_with(b"TLS_AES_")),
            "{subs:?}"
        );
        if client.is_empty() {
            assert_eq!(ssl[0], 0x01, "no certificate: only PP2_CLIENT_SSL");
            assert_ne!(
                &ssl[1..5],
                &[0, 0, 0, 0],
                "verify non-zero without a certificate"
            );
            assert_eq!(sub(0x22), None);
        } else {
            assert_eq!(ssl[0], 0x07, "SSL, CERT_CONN, CERT_SESS");
            assert_eq!(&ssl[1..5], &[0, 0, 0, 0], "verified");
            assert_eq!(sub(0x22).as_deref(), Some(&b"tlskit test client"[..]));
        }
    }

    // HAProxy as the consumer: it parses the header, the SSL TLV with a client
    // certificate's CN included (a malformed TLV is refused), and answers with the
    // authority and source address it learned. Debian's HAProxy 2.6 keeps no other TLV
    // it received (fc_pp_tlv() came in 2.9), so the SSL TLV's contents are checked
    // against HAProxy's own encoder below.
    let hp = free_port();
    let cfg = pki.path("haproxy.cfg");
    std::fs::write(
        &cfg,
        format!(
            "global\n  maxconn 64\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\n\
             frontend fe\n  bind 127.0.0.1:{hp} accept-proxy\n  \
             http-request return status 200 content-type text/plain lf-string \"authority=%[fc_pp_authority] src=%[src]\\n\"\n"
        ),
    )
    .expect("write");
    let _hp = backend(Command::new("haproxy").args(["-db", "-f", &p(&cfg)]), hp);
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &format!("127.0.0.1:{hp}"),
        "--backend-alpn",
        "http/1.1",
        "--proxy-protocol",
        "--client-ca",
        &p(&pki.path("client-ca.pem")),
        "--client-auth",
        "optional",
    ]);
    for client in ["--cert client.pem --key client.key", ""] {
        let out = sh(&format!(
            "cd {dir} && curl -sS --cacert ca.pem --max-time 10 {client} \
             --resolve test.example:{port}:127.0.0.1 https://test.example:{port}/ 2>&1",
            dir = p(pki.dir.path()),
            port = srv.port()
        ));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("authority=test.example src=127.0.0.1"),
            "{client}: {text}"
        );
    }

    // HAProxy as the reference encoder: it terminates TLS for the same client
    // certificate and sends PROXY v2 with `proxy-v2-options ssl,cert-cn,ssl-cipher` to a
    // recording backend; tlskit's SSL TLV must say what HAProxy's says (client flags,
    // verify result, version, CN, cipher), with and without a client certificate.
    std::fs::write(
        pki.path("haproxy-tls.pem"),
        [
            std::fs::read(pki.path("chain.pem")).expect("chain"),
            std::fs::read(pki.path("leaf.key")).expect("key"),
        ]
        .concat(),
    )
    .expect("write");
    let (rec_port, rrx) = proxy_recording_backend(4);
    let hp2 = free_port();
    let cfg2 = pki.path("haproxy-tls.cfg");
    std::fs::write(
        &cfg2,
        format!(
            "global\n  maxconn 64\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\n\
             frontend fe\n  bind 127.0.0.1:{hp2} ssl crt {dir}/haproxy-tls.pem ca-file {dir}/client-ca.pem verify optional\n  \
             default_backend be\nbackend be\n  server s 127.0.0.1:{rec_port} send-proxy-v2 proxy-v2-options ssl,cert-cn,ssl-cipher\n",
            dir = p(pki.dir.path()),
        ),
    )
    .expect("write");
    let _hp2 = backend(Command::new("haproxy").args(["-db", "-f", &p(&cfg2)]), hp2);
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--backend",
        &format!("127.0.0.1:{rec_port}"),
        "--backend-alpn",
        "http/1.1",
        "--proxy-protocol",
        "--client-ca",
        &p(&pki.path("client-ca.pem")),
        "--client-auth",
        "optional",
    ]);
    // (client flags, verify, sub-TLVs 0x21 version, 0x22 CN, 0x23 cipher) of one header.
    type Ssl = (
        u8,
        [u8; 4],
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Option<Vec<u8>>,
    );
    let ssl_of = |header: &[u8]| -> Ssl {
        let tlvs = proxy_tlvs(header);
        let ssl = tlvs
            .iter()
            .find(|(t, _)| *t == 0x20)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no SSL TLV: {tlvs:?}"));
        let subs = proxy_tlvs(&[&[0u8; 13][..], &[0x11, 0, 0], &[0u8; 12], &ssl[5..]].concat());
        let sub = |t: u8| subs.iter().find(|(k, _)| *k == t).map(|(_, v)| v.clone());
        (
            ssl[0],
            [ssl[1], ssl[2], ssl[3], ssl[4]],
            sub(0x21),
            sub(0x22),
            sub(0x23),
        )
    };
    for client in ["--cert client.pem --key client.key", ""] {
        let mut got = Vec::new();
        for port in [hp2, srv.port()] {
            let out = sh(&format!(
                "cd {dir} && curl -sS --cacert ca.pem --tlsv1.3 --tls13-ciphers TLS_AES_128_GCM_SHA256 \
                 --max-time 10 {client} --resolve test.example:{port}:127.0.0.1 \
                 https://test.example:{port}/ 2>&1",
                dir = p(pki.dir.path()),
            ));
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("ok"),
                "{port}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            got.push(ssl_of(
                &rrx.recv_timeout(Duration::from_secs(10)).expect("header"),
            ));
        }
        let (haproxy, tlskit) = (&got[0], &got[1]);
        eprintln!("SSL TLV ({client:?}): haproxy {haproxy:?}, tlskit {tlskit:?}");
        assert_eq!(tlskit.0, haproxy.0, "client flags");
        assert_eq!(tlskit.2, haproxy.2, "version");
        assert_eq!(tlskit.4, haproxy.4, "cipher");
        assert_eq!(tlskit.3, haproxy.3, "CN");
        if client.is_empty() {
            assert_eq!(tlskit.3, None);
            // doc/proxy-protocol.txt: verify is zero only if the client presented a
            // certificate and it verified. HAProxy 2.6 sends 0 here (OpenSSL's
            // X509_V_OK with no certificate); a consumer that reads the client flags
            // (no CERT_CONN, no CERT_SESS) reaches the same answer from both.
            assert_ne!(tlskit.1, [0; 4], "verify non-zero without a certificate");
        } else {
            assert_eq!(tlskit.1, haproxy.1, "verify result");
            assert_eq!(tlskit.1, [0; 4], "verified");
            assert_eq!(tlskit.3.as_deref(), Some(&b"tlskit test client"[..]));
        }
    }
}

/// Issue 15: certificate compression confirmed by a peer this project did not write.
/// Headless Chromium fetches a page from `tlskit serve`; Chromium's own net log shows the
/// CompressedCertificate message (handshake type 25) it received and its algorithm, and the
/// server's metric and handshake log line say the same.
#[test]
fn net_interop_chromium_receives_a_compressed_certificate() {
    use base64::Engine;
    require("chromium");
    require("openssl");
    let pki = Pki::new();
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    // The leaf's SPKI pin: Chromium trusts exactly this key, nothing else is relaxed.
    let pin = sh(&format!(
        "openssl x509 -in {c} -pubkey -noout | openssl pkey -pubin -outform der | \
         openssl dgst -sha256 -binary | base64"
    ));
    let pin = String::from_utf8_lossy(&pin.stdout).trim().to_string();
    assert_eq!(pin.len(), 44, "{pin}");
    let srv = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--metrics",
        "127.0.0.1:0",
        "--log-level",
        "debug",
    ]);
    let netlog = pki.path("netlog.json");
    let out = Command::new("timeout")
        .args([
            "60",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", p(&pki.path("chromium-profile"))),
            &format!("--ignore-certificate-errors-spki-list={pin}"),
            "--host-resolver-rules=MAP test.example 127.0.0.1",
            &format!("--log-net-log={}", p(&netlog)),
            "--net-log-capture-mode=Everything",
            "--dump-dom",
            &format!("https://test.example:{}/", srv.port()),
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("hello from tlskit"), "chromium got: {dom}");

    // What Chromium received: CompressedCertificate messages and their algorithms.
    let log: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&netlog).expect("net log")).expect("net log JSON");
    let received = log["constants"]["logEventTypes"]["SSL_HANDSHAKE_MESSAGE_RECEIVED"]
        .as_u64()
        .expect("event type");
    let algorithms: Vec<u16> = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"].as_u64() == Some(received) && e["params"]["type"] == 25)
        .map(|e| {
            let b = base64::engine::general_purpose::STANDARD
                .decode(e["params"]["bytes"].as_str().expect("bytes"))
                .expect("base64");
            // Handshake header (type, 3-byte length), then the algorithm (RFC 8879).
            u16::from_be_bytes([b[4], b[5]])
        })
        .collect();
    assert!(
        !algorithms.is_empty(),
        "Chromium received no CompressedCertificate"
    );
    assert!(
        algorithms.iter().all(|a| *a == 2),
        "brotli expected: {algorithms:?}"
    );

    // The server counted the same handshakes as brotli, and logged it.
    let text = scrape(&srv.metrics_addr());
    let brotli = metric(
        &text,
        "tlskit_certificate_compression_total{algorithm=\"brotli\"}",
    );
    assert_eq!(brotli, Some(algorithms.len() as f64), "{text}");
    assert!(
        srv.wait_log("cert_compression=brotli", Duration::from_secs(5)),
        "{}",
        srv.stderr()
    );
    // A client that offers no compression (openssl 3.0) is counted as none.
    let out = sh(&format!(
        "cd {dir} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | openssl s_client -tls1_3 -ign_eof \
         -connect 127.0.0.1:{port} -servername test.example -CAfile ca.pem 2>&1",
        dir = p(pki.dir.path()),
        port = srv.port()
    ));
    assert!(String::from_utf8_lossy(&out.stdout).contains("200 OK"));
    let text = scrape(&srv.metrics_addr());
    assert_eq!(
        metric(
            &text,
            "tlskit_certificate_compression_total{algorithm=\"none\"}"
        ),
        Some(1.0),
        "{text}"
    );
}

/// A rustls client configuration trusting the test PKI, TLS 1.3 (it keeps tickets per
/// server name, so a ticket from one node is offered to the next).
fn fleet_client(pki: &Pki) -> std::sync::Arc<tlskit_verify::rustls::ClientConfig> {
    use tlskit_verify::rustls;
    let mut roots = rustls::RootCertStore::empty();
    for cert in tlskit_verify::load_certs(&pki.path("ca.pem")).expect("ca.pem") {
        roots.add(cert).expect("root");
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    std::sync::Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// One request to `addr` as test.example: the handshake kind, None when anything failed.
fn fleet_exchange(
    cfg: &std::sync::Arc<tlskit_verify::rustls::ClientConfig>,
    addr: std::net::SocketAddr,
) -> Option<tlskit_verify::rustls::HandshakeKind> {
    use std::io::Read;
    use tlskit_verify::rustls;
    let name = rustls::pki_types::ServerName::try_from("test.example").ok()?;
    let mut conn = rustls::ClientConnection::new(cfg.clone(), name).ok()?;
    let mut sock = std::net::TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    tls.write_all(b"GET / HTTP/1.0\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut body = Vec::new();
    let _ = tls.read_to_end(&mut body);
    String::from_utf8_lossy(&body)
        .contains("200 OK")
        .then_some(())?;
    conn.handshake_kind()
}

/// One openssl s_client TLS 1.3 exchange: (answered, resumed). `sess` is written (`out`)
/// or read (`in`).
fn s_client_session(pki: &Pki, port: u16, sess: &str, mode: &str) -> (bool, bool) {
    let out = sh(&format!(
        "cd {dir} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 10 openssl s_client -tls1_3 -ign_eof \
         -connect 127.0.0.1:{port} -servername test.example -CAfile ca.pem -sess_{mode} {sess} 2>&1",
        dir = p(pki.dir.path()),
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    (text.contains("200 OK"), text.contains("Reused, TLSv1.3"))
}

fn wait_metric(srv: &Serve, name: &str, want: f64, limit: Duration) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if metric(&scrape(&srv.metrics_addr()), name) == Some(want) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// A rotation reaches the other nodes through Redis pub/sub, not only through the
/// periodic re-read: node B re-reads only every 120 s (`--shared-state-reread 120`), yet it
/// adopts the key node A rotated to within a few seconds of A's rotation.
#[test]
fn net_interop_fleet_key_changes_announced_through_pubsub() {
    require("redis-server");
    let pki = Pki::new();
    let dir = pki.dir.path();
    let kek = net_support::kek_file(dir, &[0x24u8; 32]);
    let rport = free_port();
    let _redis = redis_server(dir, rport);
    let url = format!("redis://:fleet-pw@127.0.0.1:{rport}/0");
    let (c, k, key) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")), p(&kek));
    let node = |reread: &str| {
        Serve::start(&[
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
            "5",
            "--shared-state-reread",
            reread,
        ])
    };
    // A zero interval would hammer Redis: refused before anything starts.
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
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
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shared_state_reread must be 0.1 to"));
    let a = node("1");
    let b = node("120");
    let last = |n: &Serve, event: &str| {
        n.stderr().lines().rev().find_map(|l| {
            l.contains(&format!("event={event}"))
                .then(|| l.split("current_key=").nth(1))
                .flatten()
                .map(|v| v.split(' ').next().unwrap_or("").to_string())
        })
    };
    // A rotates once its key is 5 s old (it re-reads every second).
    let t0 = std::time::Instant::now();
    let rotated = loop {
        if let Some(k) = last(&a, "ticket_key_rotated") {
            break k;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "A never rotated: {}",
            a.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let at = std::time::Instant::now();
    loop {
        if last(&b, "shared_ticket_keys_adopted").as_deref() == Some(rotated.as_str()) {
            break;
        }
        assert!(
            at.elapsed() < Duration::from_secs(5),
            "B did not adopt key {rotated} within 5 s of A's rotation (its re-read is 120 s): {}",
            b.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "node B adopted key {rotated} {} ms after node A's rotation was seen",
        at.elapsed().as_millis()
    );
}

/// `tlskit ctl status` on fleet nodes (a real redis-server): each says the shared state
/// is reachable, when it was last in step with it, and that its current key came from the
/// fleet, with the same id on both nodes; a node with another key-encryption key has made
/// its own and was never in step; Redis gone: unreachable, the last good sync kept. In
/// JSON (schema-checked) and in words.
#[test]
fn net_interop_fleet_state_in_ctl_status() {
    use std::os::unix::fs::PermissionsExt;
    require("redis-server");
    let pki = Pki::new();
    let dir = pki.dir.path();
    let kek = net_support::kek_file(dir, &[0x42u8; 32]);
    let wrong = pki.path("wrong.kek");
    std::fs::write(&wrong, [0x11u8; 32]).expect("kek");
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let rport = free_port();
    let redis = redis_server(dir, rport);
    let url = format!("redis://:fleet-pw@127.0.0.1:{rport}/0");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let node = |key: &Path, control: &str| {
        let control = p(&pki.path(control));
        let key = p(key);
        let srv = Serve::start(&[
            "--cert",
            &c,
            "--key",
            &k,
            "--respond",
            "http",
            "--metrics",
            "127.0.0.1:0",
            "--shared-state",
            &url,
            "--shared-state-key",
            &key,
            "--shared-state-reread",
            "0.2",
            "--control",
            &control,
        ]);
        (srv, control)
    };
    let status = |control: &str| {
        let out = Command::new(BIN)
            .args(["ctl", "--control", control, "status", "--json"])
            .stdin(Stdio::null())
            .output()
            .expect("tlskit ctl");
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_matches_schema(&v);
        v
    };
    let words = |control: &str| {
        let out = Command::new(BIN)
            .args(["ctl", "--control", control, "status"])
            .stdin(Stdio::null())
            .output()
            .expect("tlskit ctl");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.starts_with("ticket keys: "))
            .unwrap_or_else(|| panic!("no ticket keys line: {out:?}"))
            .to_string()
    };
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
    };
    let (a, a_ctl) = node(&kek, "a.sock");
    let (b, b_ctl) = node(&kek, "b.sock");
    for n in [&a, &b] {
        assert!(
            wait_metric(n, "tlskit_shared_state_up", 1.0, Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
    }
    let (va, vb) = (status(&a_ctl), status(&b_ctl));
    for v in [&va, &vb] {
        assert_eq!(v["ticket_keys"], "fleet", "{v}");
        assert_eq!(v["fleet_up"], true, "{v}");
        assert_eq!(v["ticket_key_source"], "fleet", "{v}");
        let synced = v["fleet_last_sync"]
            .as_u64()
            .unwrap_or_else(|| panic!("{v}"));
        assert!(synced + 5 >= now() && synced <= now(), "{v}");
        assert!(v["ticket_key_age_s"].as_u64().is_some(), "{v}");
    }
    let id = va["ticket_key_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("{va}"));
    assert_eq!(
        vb["ticket_key_id"].as_u64(),
        Some(id),
        "one key: {va}\n{vb}"
    );
    let line = words(&a_ctl);
    assert!(
        line.starts_with("ticket keys: fleet (shared state reachable; last in step 20")
            && line.contains(&format!("; current key {id} from the fleet, ")),
        "{line}"
    );

    // Another key-encryption key: its own key, never in step.
    let (odd, odd_ctl) = node(&wrong, "odd.sock");
    assert!(
        odd.wait_log("event=shared_state_key_refused", Duration::from_secs(5)),
        "{}",
        odd.stderr()
    );
    let v = status(&odd_ctl);
    assert_eq!(v["fleet_up"], false, "{v}");
    assert_eq!(v["ticket_key_source"], "local", "{v}");
    assert_eq!(v["fleet_last_sync"], serde_json::Value::Null, "{v}");
    let line = words(&odd_ctl);
    assert!(
        line.starts_with(
            "ticket keys: fleet (shared state unreachable; never in step; current key "
        ) && line.contains(" made here, "),
        "{line}"
    );
    drop(odd);

    // Redis gone: unreachable; the last sync stays what it was; the key is still the fleet's.
    drop(redis);
    assert!(
        wait_metric(&a, "tlskit_shared_state_up", 0.0, Duration::from_secs(10)),
        "{}",
        a.stderr()
    );
    let down = status(&a_ctl);
    let last = down["fleet_last_sync"]
        .as_u64()
        .unwrap_or_else(|| panic!("{down}"));
    std::thread::sleep(Duration::from_millis(1500));
    let later = status(&a_ctl);
    assert_eq!(later["fleet_up"], false, "{later}");
    assert_eq!(later["fleet_last_sync"].as_u64(), Some(last), "{later}");
    assert_eq!(later["ticket_key_source"], "fleet", "{later}");
    assert_eq!(later["ticket_key_id"].as_u64(), Some(id), "{later}");
    let line = words(&a_ctl);
    assert!(
        line.starts_with("ticket keys: fleet (shared state unreachable; last in step 20"),
        "{line}"
    );
}

/// Issue 17: three `serve` nodes share session-ticket keys through a real redis-server
/// (password, random port): a session made on A resumes on B and C; keys rotate under a
/// lease and every node follows; Redis killed (nodes keep resuming, metric 0) and
/// restarted empty (one node re-seeds); a node with another key-encryption key refuses the
/// fleet's keys; Redis down at start.
#[test]
fn net_interop_fleet_shares_ticket_keys_through_redis() {
    use std::os::unix::fs::PermissionsExt;
    require("redis-server");
    require("openssl");
    let pki = Pki::new();
    let dir = pki.dir.path();
    let kek = net_support::kek_file(dir, &[0x42u8; 32]);
    let wrong = pki.path("wrong.kek");
    std::fs::write(&wrong, "11".repeat(32)).expect("kek");
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let rport = free_port();
    let mut redis = redis_server(dir, rport);
    let url = format!("redis://:fleet-pw@127.0.0.1:{rport}/0");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let node = |key: &Path, extra: &[&str]| {
        let mut args = vec![
            "--cert",
            &c,
            "--key",
            &k,
            "--respond",
            "http",
            "--metrics",
            "127.0.0.1:0",
            "--shared-state",
            &url,
            "--ticket-rotation",
            "8",
        ];
        let key = p(key);
        args.extend_from_slice(&["--shared-state-key", &key]);
        args.extend_from_slice(extra);
        Serve::start(&args)
    };
    let nodes = [node(&kek, &[]), node(&kek, &[]), node(&kek, &[])];
    for n in &nodes {
        assert!(
            wait_metric(n, "tlskit_shared_state_up", 1.0, Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
        assert!(
            !n.stderr().contains("fleet-pw"),
            "password in the log: {}",
            n.stderr()
        );
    }
    assert!(nodes
        .iter()
        .any(|n| n.stderr().contains("event=shared_ticket_keys_seeded")));

    // A session from A resumes on B and C (and A).
    let (ok, _) = s_client_session(&pki, nodes[0].port(), "a.sess", "out");
    assert!(ok);
    for n in &nodes {
        let (ok, reused) = s_client_session(&pki, n.port(), "a.sess", "in");
        assert!(ok && reused, "not resumed on {}: {}", n.port(), n.stderr());
    }

    // A rustls client (the ticket store rustls keeps per server name): a session from A
    // resumes on B and C.
    {
        use tlskit_verify::rustls::HandshakeKind::{Full, Resumed};
        let cfg = fleet_client(&pki);
        let kinds: Vec<_> = nodes
            .iter()
            .map(|n| fleet_exchange(&cfg, n.addr()))
            .collect();
        assert_eq!(
            kinds,
            [Some(Full), Some(Resumed), Some(Resumed)],
            "rustls client"
        );
    }

    // Another key-encryption key: the fleet's keys are refused, nothing overwritten.
    let odd = node(&wrong, &[]);
    assert!(
        odd.wait_log("event=shared_state_key_refused", Duration::from_secs(5)),
        "{}",
        odd.stderr()
    );
    assert!(odd
        .stderr()
        .contains("do not open with this --shared-state-key"));
    assert_eq!(
        metric(&scrape(&odd.metrics_addr()), "tlskit_shared_state_up"),
        Some(0.0)
    );
    let (ok, reused) = s_client_session(&pki, odd.port(), "a.sess", "in");
    assert!(
        ok && !reused,
        "a node with another KEK must not resume the fleet's tickets"
    );
    let (ok, reused) = s_client_session(&pki, nodes[1].port(), "a.sess", "in");
    assert!(ok && reused, "the fleet's keys were overwritten");
    drop(odd);
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &url,
        "--shared-state-key",
        &p(&wrong),
        "--shared-state-required",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("do not open"));

    // Rotation: one node rotates under the lease (period 8 s), every node adopts the key.
    let rotated = |n: &Serve| {
        n.stderr().lines().rev().find_map(|l| {
            (l.contains("event=ticket_key_rotated")
                || l.contains("event=shared_ticket_keys_adopted"))
            .then(|| {
                l.split("current_key=")
                    .nth(1)
                    .map(|v| v.split(' ').next().unwrap_or("").to_string())
            })
            .flatten()
        })
    };
    let t0 = std::time::Instant::now();
    let key = loop {
        let keys: Vec<Option<String>> = nodes.iter().map(rotated).collect();
        if keys[0].is_some() && keys.iter().all(|k| k == &keys[0]) {
            break keys[0].clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "rotation not seen by all: {keys:?}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let rotations: usize = nodes
        .iter()
        .map(|n| n.stderr().matches("event=ticket_key_rotated").count())
        .sum();
    assert!(rotations >= 1, "{key:?}");
    eprintln!("rotated to key {key:?} ({rotations} rotation(s) across the fleet)");

    // Redis killed: every node keeps its keys; tickets keep resuming across nodes.
    let rate = |label: &str| {
        let (ok, _) = s_client_session(&pki, nodes[0].port(), "b.sess", "out");
        assert!(ok, "{label}: full handshake failed");
        let (mut tried, mut resumed) = (0, 0);
        for n in &nodes {
            for _ in 0..3 {
                let (ok, reused) = s_client_session(&pki, n.port(), "b.sess", "in");
                assert!(ok, "{label}: a handshake failed");
                tried += 1;
                resumed += usize::from(reused);
            }
        }
        eprintln!("{label}: {resumed}/{tried} resumed across the fleet");
        (resumed, tried)
    };
    // Under load: four client threads (each a rustls client with its own ticket store)
    // make connections round-robin over the nodes (resuming whatever ticket they hold)
    // from before Redis is killed until after it is back.
    const CLIENTS: usize = 4;
    let phase = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let load: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let cfg = fleet_client(&pki);
            let addrs: Vec<std::net::SocketAddr> = nodes.iter().map(|n| n.addr()).collect();
            let phase = phase.clone();
            std::thread::spawn(move || {
                use std::sync::atomic::Ordering::Relaxed;
                // [phase] = (connections, failed, resumed)
                let mut counts = [(0usize, 0usize, 0usize); 3];
                let mut i = t;
                loop {
                    let ph = phase.load(Relaxed);
                    if ph >= 3 {
                        return counts;
                    }
                    let kind = fleet_exchange(&cfg, addrs[i % addrs.len()]);
                    i += 1;
                    let c = &mut counts[ph];
                    c.0 += 1;
                    match kind {
                        None => c.1 += 1,
                        Some(tlskit_verify::rustls::HandshakeKind::Resumed) => c.2 += 1,
                        Some(_) => {}
                    }
                }
            })
        })
        .collect();
    let seeds = || -> usize {
        nodes
            .iter()
            .map(|n| {
                n.stderr()
                    .matches("event=shared_ticket_keys_seeded")
                    .count()
            })
            .sum()
    };
    std::thread::sleep(Duration::from_secs(2));
    let before = rate("before the Redis restart");
    phase.store(1, std::sync::atomic::Ordering::Relaxed);
    drop(redis);
    for n in &nodes {
        assert!(
            wait_metric(n, "tlskit_shared_state_up", 0.0, Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
        assert!(n.stderr().contains("event=shared_state_down"));
    }
    let during = rate("Redis down");
    let seeds_before = seeds();
    // Restarted empty: one node re-seeds with the keys it has; all are up again.
    redis = redis_server(dir, rport);
    for n in &nodes {
        assert!(
            wait_metric(n, "tlskit_shared_state_up", 1.0, Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
    }
    // Exactly one node re-seeded the empty Redis (the lease); give a slow node's
    // periodic re-read time to (wrongly) seed too before counting.
    std::thread::sleep(Duration::from_secs(3));
    let reseeds = seeds() - seeds_before;
    assert_eq!(reseeds, 1, "re-seeds after the empty restart");
    phase.store(2, std::sync::atomic::Ordering::Relaxed);
    let after = rate("after the Redis restart");
    std::thread::sleep(Duration::from_secs(2));
    phase.store(3, std::sync::atomic::Ordering::Relaxed);
    let mut counts = [(0usize, 0usize, 0usize); 3];
    for h in load {
        for (sum, c) in counts.iter_mut().zip(h.join().expect("load thread")) {
            sum.0 += c.0;
            sum.1 += c.1;
            sum.2 += c.2;
        }
    }
    // One line to quote: per phase, handshakes, failed, resumption rate.
    let figures: Vec<String> = ["before", "during", "after"]
        .iter()
        .zip(counts)
        .map(|(label, (n, failed, resumed))| {
            format!(
                "{label} n={n} failed={failed} resumed={:.1}%",
                100.0 * resumed as f64 / n.max(1) as f64
            )
        })
        .collect();
    eprintln!(
        "fleet-restart: {} (clients={CLIENTS}, nodes=3, re-seeds={reseeds})",
        figures.join(" ")
    );
    for (label, (n, failed, _)) in ["before", "during", "after"].iter().zip(counts) {
        assert!(n > 0, "{label}: no connection made");
        assert_eq!(failed, 0, "{label}: failed handshakes under load");
    }
    assert_eq!(before.0, before.1);
    assert_eq!(
        during.0, during.1,
        "resumption must survive Redis being down"
    );
    assert_eq!(after.0, after.1);
    drop(redis);

    // Redis down at start: the node starts on local keys and says so, or refuses.
    let dead = format!("redis://:fleet-pw@127.0.0.1:{}/0", free_port());
    let lone = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &dead,
        "--shared-state-key",
        &p(&kek),
    ]);
    assert!(
        lone.stderr().contains("event=shared_state_unavailable"),
        "{}",
        lone.stderr()
    );
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &dead,
        "--shared-state-key",
        &p(&kek),
        "--shared-state-required",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--shared-state-required") && !err.contains("fleet-pw"),
        "{err}"
    );
    // A key file others may read is refused.
    std::fs::set_permissions(&kek, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &dead,
        "--shared-state-key",
        &p(&kek),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"));
}

/// Redis that accepts connections and never answers (packets dropped): a node starts on
/// local keys within a bounded time and says so, `--shared-state-required` refuses within
/// a bounded time, and `acme-tls/1` handshakes (which answer from the shared ACME state)
/// do not stall: a name the node does not manage costs no Redis lookup, and other
/// handshakes go on meanwhile.
#[test]
fn net_interop_fleet_redis_black_hole_stalls_nothing() {
    require("openssl");
    let pki = Pki::new();
    let key = pki.fleet_kek(0x31);
    let hole = black_hole();
    let url = format!("redis://:hole-pw@127.0.0.1:{hole}/0");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let base = [
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
    // (a) Starts on local keys, says so, serves and resumes its own tickets.
    let node = Serve::start(&base);
    eprintln!("ready after {:?} with Redis silent", node.ready_after);
    assert!(
        node.ready_after < Duration::from_secs(5),
        "{:?}",
        node.ready_after
    );
    assert!(
        node.stderr().contains("event=shared_state_unavailable"),
        "{}",
        node.stderr()
    );
    assert!(!node.stderr().contains("hole-pw"), "{}", node.stderr());
    {
        use tlskit_verify::rustls::HandshakeKind::{Full, Resumed};
        let cfg = fleet_client(&pki);
        assert_eq!(fleet_exchange(&cfg, node.addr()), Some(Full));
        assert_eq!(fleet_exchange(&cfg, node.addr()), Some(Resumed));
    }
    drop(node);
    // (b) Refuses within a bounded time.
    let t0 = std::time::Instant::now();
    let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(&base);
    args.push("--shared-state-required");
    let out = tlskit(&args);
    let took = t0.elapsed();
    eprintln!("--shared-state-required refused after {took:?}");
    assert_eq!(out.status.code(), Some(2));
    assert!(took < Duration::from_secs(5), "{took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--shared-state-required") && !err.contains("hole-pw"),
        "{err}"
    );
    // (c) ACME over TLS-ALPN-01 with its state in the silent Redis (the CA is down too).
    let dead_ca = format!("https://127.0.0.1:{}/dir", free_port());
    let mut args = base.to_vec();
    args.extend_from_slice(&[
        "--acme",
        &dead_ca,
        "--domain",
        "test.example",
        "--acme-challenge",
        "tls-alpn-01",
    ]);
    let node = Serve::start(&args);
    eprintln!(
        "ACME node ready after {:?} with Redis silent",
        node.ready_after
    );
    assert!(
        node.ready_after < Duration::from_secs(5),
        "{:?}",
        node.ready_after
    );
    let port = node.port();
    let alpn = move |name: String| {
        let t0 = std::time::Instant::now();
        let _ = Command::new("timeout")
            .args(["20", "openssl", "s_client", "-alpn", "acme-tls/1"])
            .args(["-servername", &name, "-connect"])
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        t0.elapsed()
    };
    // Warm up openssl (its first start may be slow on a busy machine).
    let _ = alpn("warm.other.test".into());
    let t0 = std::time::Instant::now();
    let floods: Vec<_> = (0..16)
        .map(|i| std::thread::spawn(move || alpn(format!("n{i}.other.test"))))
        .collect();
    // A managed name: one bounded lookup (the silent Redis), not one per handshake.
    let managed: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || alpn("test.example".into())))
        .collect();
    // Meanwhile ordinary handshakes go on.
    let cfg = fleet_client(&pki);
    let mut ok = 0;
    while t0.elapsed() < Duration::from_secs(2) {
        ok += usize::from(fleet_exchange(&cfg, node.addr()).is_some());
    }
    let flood: Vec<Duration> = floods
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let managed: Vec<Duration> = managed
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let all = t0.elapsed();
    eprintln!(
        "acme-tls/1 with Redis silent: 16 unmanaged names, slowest {:?}; managed name, slowest {:?}; \
         {ok} ordinary handshakes meanwhile; all done in {all:?}",
        flood.iter().max(),
        managed.iter().max()
    );
    assert!(ok > 0, "no ordinary handshake completed: {}", node.stderr());
    // Before the fix each of them waited for a Redis lookup (at least 2 s) behind one
    // shared connection: 16 in a row. 5 s leaves room for a loaded machine.
    assert!(
        flood.iter().all(|d| *d < Duration::from_secs(5)),
        "acme-tls/1 handshakes stalled: {flood:?}"
    );
    assert!(
        managed.iter().all(|d| *d < Duration::from_secs(6)),
        "a managed name waited more than one bounded lookup: {managed:?}"
    );
    assert!(!node.stderr().contains("hole-pw"), "{}", node.stderr());
}

/// `rediss://` with a private CA (`--shared-state-ca`), an ACL user (`user:pass@`) and a
/// non-zero database: a TLS-only redis-server (`--port 0`); two nodes share keys through
/// it; the keys are in database 3, not 0; a node without the private CA (system roots) or
/// with another CA cannot sync, and no log shows the password.
#[test]
fn net_interop_fleet_over_rediss_with_private_ca_acl_user_and_db() {
    require("redis-server");
    require("redis-cli");
    require("openssl");
    let pki = Pki::new();
    let dir = pki.dir.path();
    let key = pki.fleet_kek(0x77);
    let rport = free_port();
    let _redis = redis_server_tls(
        dir,
        rport,
        &pki.path("chain.pem"),
        &pki.path("leaf.key"),
        &pki.path("ca.pem"),
    );
    let url = format!("rediss://fleet:fleet-user-pw@127.0.0.1:{rport}/3");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let (ca, other_ca) = (p(&pki.path("ca.pem")), p(&pki.path("other-ca.pem")));
    let node = |extra: &[&str]| {
        let mut args = vec![
            "--cert",
            c.as_str(),
            "--key",
            &k,
            "--respond",
            "http",
            "--metrics",
            "127.0.0.1:0",
            "--shared-state",
            &url,
            "--shared-state-key",
            &key,
        ];
        args.extend_from_slice(extra);
        Serve::start(&args)
    };
    let a = node(&["--shared-state-ca", &ca]);
    let b = node(&["--shared-state-ca", &ca]);
    for n in [&a, &b] {
        assert!(
            wait_metric(n, "tlskit_shared_state_up", 1.0, Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
    }
    {
        use tlskit_verify::rustls::HandshakeKind::{Full, Resumed};
        let cfg = fleet_client(&pki);
        assert_eq!(fleet_exchange(&cfg, a.addr()), Some(Full));
        assert_eq!(
            fleet_exchange(&cfg, b.addr()),
            Some(Resumed),
            "{}",
            b.stderr()
        );
    }
    // The keys are in database 3 (sealed), not in 0.
    let exists = |db: &str| {
        let out = Command::new("redis-cli")
            .args(["--tls", "--cacert", &ca, "-h", "127.0.0.1", "-p"])
            .arg(rport.to_string())
            .args([
                "--user",
                "fleet",
                "--pass",
                "fleet-user-pw",
                "--no-auth-warning",
            ])
            .args(["-n", db, "EXISTS", "tlskit:ticket-keys"])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(exists("3"), "1");
    assert_eq!(exists("0"), "0");
    // Without the private CA (the system's roots) or with another CA: no sync.
    let lone = node(&[]);
    let odd = node(&["--shared-state-ca", &other_ca]);
    for n in [&lone, &odd] {
        assert!(
            n.wait_log("event=shared_state_unavailable", Duration::from_secs(10)),
            "{}",
            n.stderr()
        );
        assert_eq!(
            metric(&scrape(&n.metrics_addr()), "tlskit_shared_state_up"),
            Some(0.0)
        );
    }
    // A CA file on a redis:// URL is a configuration error.
    let out = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--shared-state",
        &format!("redis://fleet:fleet-user-pw@127.0.0.1:{rport}/3"),
        "--shared-state-key",
        &key,
        "--shared-state-ca",
        &ca,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rediss://") && !err.contains("fleet-user-pw"),
        "{err}"
    );
    for n in [&a, &b, &lone, &odd] {
        assert!(!n.stderr().contains("fleet-user-pw"), "{}", n.stderr());
    }
}

/// After a fleet rotation a ticket made with the previous shared key still resumes on
/// another node; one made two rotations ago does not (`--ticket-rotation 5`).
#[test]
fn net_interop_fleet_previous_key_resumes_older_does_not() {
    require("redis-server");
    require("openssl");
    let pki = Pki::new();
    let dir = pki.dir.path();
    let key = pki.fleet_kek(0x5c);
    let rport = free_port();
    let _redis = redis_server(dir, rport);
    let url = format!("redis://:fleet-pw@127.0.0.1:{rport}/0");
    let (c, k) = (p(&pki.path("chain.pem")), p(&pki.path("leaf.key")));
    let node = || {
        Serve::start(&[
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
            "5",
            "--shared-state-reread",
            "0.5",
        ])
    };
    let nodes = [node(), node()];
    // The key a node uses now, as its log says (a rotation it made or a set it adopted).
    let current = |n: &Serve| {
        n.stderr().lines().rev().find_map(|l| {
            (l.contains("event=ticket_key_rotated")
                || l.contains("event=shared_ticket_keys_adopted"))
            .then(|| {
                l.split("current_key=")
                    .nth(1)
                    .map(|v| v.split(' ').next().unwrap_or("").to_string())
            })
            .flatten()
        })
    };
    // Wait until both nodes use one key other than `not`.
    let common = |not: Option<&str>| {
        let t0 = std::time::Instant::now();
        loop {
            let keys: Vec<Option<String>> = nodes.iter().map(current).collect();
            if let Some(k0) = &keys[0] {
                if Some(k0.as_str()) != not && keys.iter().all(|k| k == &keys[0]) {
                    return k0.clone();
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no common key: {keys:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let k1 = common(None);
    // A ticket made by node A with k1.
    let (ok, _) = s_client_session(&pki, nodes[0].port(), "k1.sess", "out");
    assert!(ok);
    let k2 = common(Some(&k1));
    let (ok, reused) = s_client_session(&pki, nodes[1].port(), "k1.sess", "in");
    assert!(
        ok && reused,
        "a ticket from the previous key ({k1}, now {k2}) must resume on node B: {}",
        nodes[1].stderr()
    );
    let k3 = common(Some(&k2));
    let (ok, reused) = s_client_session(&pki, nodes[1].port(), "k1.sess", "in");
    assert!(
        ok && !reused,
        "a ticket two rotations old ({k1}, now {k3}) must not resume"
    );
    eprintln!("keys {k1} -> {k2} -> {k3}: previous key resumed on B, older refused");
}

/// A backend for `accepts` connections that reads a PROXY v2 header (the 16 fixed bytes,
/// then the length they give), answers one small HTTP response, and sends each header it
/// read on the returned channel; its port.
fn proxy_recording_backend(accepts: usize) -> (u16, std::sync::mpsc::Receiver<Vec<u8>>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(accepts) {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            let mut head = [0u8; 16];
            if s.read_exact(&mut head).is_err() {
                continue;
            }
            let len = usize::from(u16::from_be_bytes([head[14], head[15]]));
            let mut rest = vec![0u8; len];
            if s.read_exact(&mut rest).is_err() {
                continue;
            }
            let mut header = head.to_vec();
            header.extend_from_slice(&rest);
            let mut req = [0u8; 4096];
            let _ = s.read(&mut req);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            );
            let _ = tx.send(header);
        }
    });
    (port, rx)
}
