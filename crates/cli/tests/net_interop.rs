//! Interop: other TLS implementations against `tlskit serve` (openssl s_client, gnutls-cli,
//! curl, Python's ssl, Go's crypto/tls; TLS 1.2 and 1.3; with and without client
//! certificates), and `tlskit connect` against openssl s_server, gnutls-serv and nginx.
//! A peer that is not installed is skipped with a message.

mod net_support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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
    if !have("nginx") && !Path::new("/usr/sbin/nginx").exists() {
        cannot_run(
            "net_interop_connect_to_nginx",
            "nginx is not installed (scripts/setup installs it)",
        );
        return;
    }
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
