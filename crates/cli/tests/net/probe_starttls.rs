//! `--starttls smtp|imap|pop3` on `tlskit probe` and `tlskit connect`.
//!
//! - Against a tiny fake mail server written here: it speaks just enough of each
//!   protocol's STARTTLS dance, then splices the connection to `tlskit serve`, so the
//!   handshake after the upgrade is a real one (all three protocols, both commands).
//! - Against a real one, Debian's exim4 (`starttls_against_exim4`; a missing exim4 fails
//!   it, `scripts/setup` installs exim4-daemon-light): probe and
//!   connect --json verify the handshake, connect relays EHLO/QUIT over TLS and sees
//!   exim's 250 and 221.
//!
//! A server that does not offer STARTTLS is exit 2 with the server's words.

use crate::net_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::BIN;
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

/// Where Debian's exim4 lives (not always on a non-root PATH).
fn exim_binary() -> Option<std::path::PathBuf> {
    ["/usr/sbin/exim4", "/usr/sbin/exim"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
}

/// Processes whose command line mentions `needle` (read from /proc).
fn processes_with(needle: &str) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(needle))
        .collect()
}

/// A real mail server: Debian's exim4 in the foreground (`-bdf`) with a configuration
/// written here, listening on two loopback ports: STARTTLS is advertised on the first
/// (certificate from the test PKI), not on the second. Spool, logs and pid file live in
/// the temp dir; nothing is delivered (every RCPT is refused). As root exim keeps its
/// privileges; as another user it drops them for `-C` and runs as that user, which the
/// configuration allows (`exim_user`, `admin_groups` = the caller). Killed on drop.
struct Exim {
    _guard: Guard,
    ports: (u16, u16),
    conf: String,
}

impl Exim {
    fn start(pki: &Pki, exim: &std::path::Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let dir = pki.path("exim");
        std::fs::create_dir_all(dir.join("spool")).expect("spool dir");
        let meta = std::fs::metadata(&dir).expect("stat");
        let (uid, gid) = (meta.uid(), meta.gid());
        let ports = (free_port(), free_port());
        let d = dir.display();
        let conf = format!(
            "primary_hostname = mail.test.example
keep_environment =
spool_directory = {d}/spool
log_file_path = {d}/spool/%slog
pid_file_path = {d}/exim.pid
exim_user = {uid}
exim_group = {gid}
admin_groups = {gid}
never_users =
local_interfaces = 127.0.0.1
daemon_smtp_ports = {p1} : {p2}
tls_certificate = {chain}
tls_privatekey = {key}
tls_advertise_hosts = ${{if eq{{$received_port}}{{{p1}}}{{*}}{{}}}}
acl_smtp_rcpt = refuse_all
queue_only
begin acl
refuse_all:
  deny message = this test server delivers nothing
",
            p1 = ports.0,
            p2 = ports.1,
            chain = pki.path("mail.pem").display(),
            key = pki.path("mail.key").display(),
        );
        let conf_path = dir.join("exim.conf");
        std::fs::write(&conf_path, conf).expect("write exim.conf");
        let conf = conf_path.display().to_string();
        let child = Command::new(exim)
            .args(["-bdf", "-C", &conf])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start exim4");
        let mut guard = Guard(child);
        if !(wait_port(ports.0, Duration::from_secs(10))
            && wait_port(ports.1, Duration::from_secs(10)))
        {
            let _ = guard.0.kill();
            let mut err = String::new();
            if let Some(mut e) = guard.0.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let log = std::fs::read_to_string(dir.join("spool/paniclog")).unwrap_or_default();
            panic!("exim4 did not listen on {ports:?}: {err} {log}");
        }
        Exim {
            _guard: guard,
            ports,
            conf,
        }
    }
}

#[test]
fn starttls_against_exim4() {
    let Some(exim) = exim_binary() else {
        panic!("exim4 is not installed: scripts/setup installs exim4-daemon-light");
    };
    let pki = Pki::new();
    pki.server_leaf(
        "mail.pem",
        "mail.key",
        "mail.test.example",
        &["mail.test.example"],
    );
    let roots = pki.path("ca.pem").display().to_string();
    let server = Exim::start(&pki, &exim);
    let with_tls = format!("127.0.0.1:{}", server.ports.0);
    let without = format!("127.0.0.1:{}", server.ports.1);
    let name = "mail.test.example";

    // probe: a verified handshake after exim's STARTTLS.
    let out = tlskit(&[
        "probe",
        &with_tls,
        "--starttls",
        "smtp",
        "--servername",
        name,
        "--roots",
        &roots,
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "probe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("probe json");
    assert_eq!(v["starttls"], "smtp");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["server_name"], name);
    assert!(
        v["tls_version"]
            .as_str()
            .is_some_and(|t| t.starts_with("TLSv1.")),
        "{v}"
    );
    assert!(v["chain_bytes"].as_u64().is_some_and(|n| n > 0), "{v}");
    assert!(v["handshake_rtts"].as_u64().is_some_and(|n| n >= 1), "{v}");

    // connect --json: the same object as without STARTTLS, plus `starttls`.
    let (code, v) = connect_json(&[
        &with_tls,
        "--starttls",
        "smtp",
        "--servername",
        name,
        "--roots",
        &roots,
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["starttls"], "smtp");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["presented_certs"], 2, "{v}");

    // A wrong name: the handshake completes, verification fails (exit 1).
    let (code, v) = connect_json(&[
        &with_tls,
        "--starttls",
        "smtp",
        "--servername",
        "other.example",
        "--roots",
        &roots,
    ]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["verified"], false);

    // connect without --json relays: EHLO over TLS gets exim's 250, QUIT its 221.
    let mut child = Command::new(BIN)
        .args([
            "connect",
            &with_tls,
            "--starttls",
            "smtp",
            "--servername",
            name,
            "--roots",
            &roots,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("connect");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let guard = Guard(child);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |prefix: &str, seen: &mut Vec<String>| {
        let limit = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = limit.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.starts_with(prefix);
                    seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no {prefix:?} from exim through connect; got {seen:?}"),
            }
        }
    };
    wait_for("---", &mut seen);
    stdin.write_all(b"EHLO x\r\n").expect("EHLO");
    wait_for("250 ", &mut seen);
    assert!(
        seen.iter()
            .any(|l| l.starts_with("250-mail.test.example Hello x")),
        "{seen:?}"
    );
    // After STARTTLS exim no longer offers it.
    assert!(!seen.iter().any(|l| l.contains("STARTTLS")), "{seen:?}");
    stdin.write_all(b"QUIT\r\n").expect("QUIT");
    wait_for("221 ", &mut seen);
    drop(stdin);
    let mut guard = guard;
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().expect("wait") {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "connect did not exit after QUIT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{seen:?}");

    // The second port does not advertise STARTTLS: exit 2 with exim's own words.
    for cmd in ["probe", "connect"] {
        let out = tlskit(&[
            cmd,
            &without,
            "--starttls",
            "smtp",
            "--servername",
            name,
            "--roots",
            &roots,
        ]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("STARTTLS not offered") && err.contains("250-mail.test.example Hello"),
            "{cmd}: {err}"
        );
    }

    // Nothing of exim is left running once the daemon is gone.
    let conf = server.conf.clone();
    drop(server);
    let t = std::time::Instant::now();
    while !processes_with(&conf).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "exim processes left: {:?}",
            processes_with(&conf)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
