//! `tlskit probe --starttls smtp|imap|pop3` against a tiny fake mail server written here:
//! it speaks just enough of each protocol's STARTTLS dance, then splices the connection
//! to `tlskit serve`, so the handshake after the upgrade is a real one. A server that does
//! not offer STARTTLS is exit 2 with the server's words. (A real exim4/postfix test is
//! not written yet.)

mod net_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use net_support::*;

/// Serve one protocol's dance on each accepted connection, then splice to `tls`.
fn fake_mail(proto: &'static str, offer: bool, tls: SocketAddr) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { break };
            std::thread::spawn(move || {
                let mut r = BufReader::new(c.try_clone().expect("clone"));
                let mut line = String::new();
                let mut next = |r: &mut BufReader<TcpStream>| {
                    line.clear();
                    let _ = r.read_line(&mut line);
                    line.trim_end().to_string()
                };
                let upgrade = match proto {
                    "smtp" => {
                        let _ = c.write_all(b"220-fake.example ESMTP\r\n220 ready\r\n");
                        let ehlo = next(&mut r);
                        assert!(ehlo.starts_with("EHLO "), "{ehlo}");
                        let ext = if offer { "250-STARTTLS\r\n" } else { "" };
                        let _ = c.write_all(
                            format!("250-fake.example\r\n250-PIPELINING\r\n{ext}250 8BITMIME\r\n")
                                .as_bytes(),
                        );
                        if !offer {
                            return;
                        }
                        assert_eq!(next(&mut r), "STARTTLS");
                        let _ = c.write_all(b"220 2.0.0 go ahead\r\n");
                        true
                    }
                    "imap" => {
                        let _ = c.write_all(b"* OK [CAPABILITY IMAP4rev1 STARTTLS] fake\r\n");
                        let cmd = next(&mut r);
                        let tag = cmd.split(' ').next().unwrap_or("").to_string();
                        assert!(cmd.ends_with("STARTTLS"), "{cmd}");
                        let _ = c.write_all(format!("{tag} OK begin TLS\r\n").as_bytes());
                        true
                    }
                    _ => {
                        let _ = c.write_all(b"+OK fake POP3\r\n");
                        assert_eq!(next(&mut r), "STLS");
                        let _ = c.write_all(b"+OK begin TLS\r\n");
                        true
                    }
                };
                if !upgrade {
                    return;
                }
                // Nothing may be buffered: the client waits for our reply before TLS.
                assert!(r.buffer().is_empty(), "client sent TLS before the reply");
                let s = TcpStream::connect(tls).expect("backend");
                let (mut c2, mut s2) = (c.try_clone().expect("c"), s.try_clone().expect("s"));
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let mut s = s;
                let mut buf = [0u8; 16384];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = c.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

#[test]
fn probe_starttls_smtp_imap_pop3() {
    let pki = Pki::new();
    let (c, k) = (
        pki.path("chain.pem").display().to_string(),
        pki.path("leaf.key").display().to_string(),
    );
    let srv = Serve::start(&["--cert", &c, "--key", &k, "--respond", "echo"]);
    let roots = pki.path("ca.pem").display().to_string();
    for proto in ["smtp", "imap", "pop3"] {
        let addr = fake_mail(proto, true, srv.addr()).to_string();
        let out = tlskit(&[
            "probe",
            &addr,
            "--starttls",
            proto,
            "--servername",
            "test.example",
            "--roots",
            &roots,
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{proto}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["starttls"], proto);
        assert_eq!(v["verified"], true);
        assert_eq!(v["tls_version"], "TLSv1.3");
    }
    let addr = fake_mail("smtp", false, srv.addr()).to_string();
    let out = tlskit(&["probe", &addr, "--starttls", "smtp", "--roots", &roots]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("STARTTLS not offered"), "{err}");
    let out = tlskit(&["probe", &addr, "--starttls", "ftp", "--roots", &roots]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn connect_starttls_smtp_imap_pop3() {
    let pki = Pki::new();
    let (c, k) = (
        pki.path("chain.pem").display().to_string(),
        pki.path("leaf.key").display().to_string(),
    );
    let srv = Serve::start(&["--cert", &c, "--key", &k, "--respond", "echo"]);
    let roots = pki.path("ca.pem").display().to_string();
    for proto in ["smtp", "imap", "pop3"] {
        let addr = fake_mail(proto, true, srv.addr()).to_string();
        let (code, v) = connect_json(&[
            &addr,
            "--starttls",
            proto,
            "--servername",
            "test.example",
            "--roots",
            &roots,
        ]);
        assert_eq!(code, 0, "{proto}: {v}");
        assert_eq!(v["starttls"], proto);
        assert_eq!(v["verified"], true);
        assert_eq!(v["tls_version"], "TLSv1.3");
    }
    let addr = fake_mail("smtp", false, srv.addr()).to_string();
    let out = tlskit(&["connect", &addr, "--starttls", "smtp", "--roots", &roots]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("STARTTLS not offered") && err.contains("250 8BITMIME"),
        "{err}"
    );
    let out = tlskit(&["connect", &addr, "--starttls", "ftp", "--roots", &roots]);
    assert_eq!(out.status.code(), Some(2));
}
