//! The control socket (`ServeConfig::control`) through the public API: a server bound on
//! 127.0.0.1:0 with an rcgen pair and a control socket in a temporary directory, `run` on
//! a thread, requests written to the socket, SIGTERM raised in-process to stop it.
//!
//! Every running server of the process hears a SIGTERM: tests that run one hold
//! [`RUNNING`].
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{mpsc, Mutex, MutexGuard};
use std::time::Duration;

use tlskit_server::{ControlReply, Mode, NetError, ServeConfig, Server};

static RUNNING: Mutex<()> = Mutex::new(());

fn running() -> MutexGuard<'static, ()> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// A CA and a leaf for `test.example` under `dir` (`chain.pem`, `leaf.key`).
fn pki(dir: &Path) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let root =
        rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["test.example".to_string()]).unwrap();
    let leaf = params.signed_by(&key, &root).unwrap();
    std::fs::write(dir.join("chain.pem"), leaf.pem() + &root.pem()).unwrap();
    std::fs::write(dir.join("leaf.key"), key.serialize_pem()).unwrap();
}

fn config(dir: &Path) -> ServeConfig {
    let mut cfg = ServeConfig::new(
        vec!["127.0.0.1:0".parse().unwrap()],
        dir.join("chain.pem"),
        dir.join("leaf.key"),
    );
    cfg.mode = Mode::Echo;
    cfg.watch = false;
    cfg.shutdown_grace = Duration::from_secs(2);
    cfg.control = Some(dir.join("control.sock"));
    cfg
}

/// Send one request line, parse the reply.
fn ask(path: &Path, request: &str) -> ControlReply {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{request:?}: {e}: {out}"))
}

fn run(server: Server) -> mpsc::Receiver<Result<(), NetError>> {
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.run());
    });
    done
}

fn stop(done: mpsc::Receiver<Result<(), NetError>>) {
    // Server::bind installed the SIGTERM handler: the process is not killed.
    signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
    let r = done
        .recv_timeout(Duration::from_secs(20))
        .expect("run returns after SIGTERM");
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn control_socket_reports_reloads_and_is_owner_only() {
    let _one = running();
    let dir = tempfile::tempdir().unwrap();
    pki(dir.path());
    let sock = dir.path().join("control.sock");
    // A socket file left by a process that is gone: replaced.
    drop(UnixListener::bind(&sock).unwrap());
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());

    let server = Server::bind(config(dir.path())).unwrap();
    let meta = std::fs::symlink_metadata(&sock).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "owner only");

    // A second server on the same path, while the first answers: refused.
    let done = run(server);
    let second = Server::bind(config(dir.path()));
    match second {
        Err(NetError::Config(m)) => assert!(m.contains("running server"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a second server took over a live control socket"),
    }

    let status = ask(&sock, "status\n").status.expect("a status");
    assert_eq!(status.certificates.len(), 1, "{status:?}");
    let c = &status.certificates[0];
    assert_eq!(
        (c.name.as_str(), c.source.as_str()),
        ("default", "file"),
        "{c:?}"
    );
    assert_eq!(c.dns_names, ["test.example"]);
    assert!(c.not_after.is_some_and(|t| t > 0), "{c:?}");
    assert_eq!(status.last_reload, None);
    assert_eq!(status.ticket_keys, "local");
    // The key made at bind, seconds ago (rotation is 6 h by default).
    assert!(
        status.ticket_key_age_s.is_some_and(|a| a < 600),
        "{status:?}"
    );
    assert_eq!(status.fleet_up, None);
    assert_eq!(status.client_ca, None);

    let certs = ask(&sock, "certs\n").certificates.expect("a list");
    assert_eq!(certs, status.certificates);

    // A good reload, then one with a broken certificate file: its file and reason.
    let ok = ask(&sock, "reload\n").reload.expect("a reload result");
    assert!(ok.ok && ok.errors.is_empty(), "{ok:?}");
    assert_eq!(ok.cause, "control");
    let chain = dir.path().join("chain.pem");
    std::fs::write(&chain, "not a certificate\n").unwrap();
    let bad = ask(&sock, "reload\n").reload.expect("a reload result");
    assert!(!bad.ok, "{bad:?}");
    assert_eq!(bad.errors.len(), 1, "{bad:?}");
    let e = &bad.errors[0];
    assert_eq!(e.what, "certificates");
    assert_eq!(
        e.path.as_deref(),
        Some(chain.display().to_string().as_str())
    );
    assert!(e.reason.contains("CERTIFICATE"), "{e:?}");
    // What was serving stays; status has the failed reload.
    let status = ask(&sock, "status\n").status.expect("a status");
    assert_eq!(status.certificates, certs);
    assert_eq!(status.last_reload.as_ref(), Some(&bad));

    // Requests that are not understood: an error, no field.
    let unknown = ask(&sock, "shutdown\n");
    assert!(
        unknown
            .error
            .as_deref()
            .is_some_and(|e| e.contains("unknown command")),
        "{unknown:?}"
    );
    assert_eq!(unknown.status, None);
    let long = ask(&sock, &"x".repeat(tlskit_server::MAX_REQUEST + 10));
    assert!(
        long.error
            .as_deref()
            .is_some_and(|e| e.contains("longer than")),
        "{long:?}"
    );
    // No ACME here: nothing to renew, said so.
    let renew = ask(&sock, "renew test.example\n");
    assert!(
        renew
            .error
            .as_deref()
            .is_some_and(|e| e.contains("no ACME certificate")),
        "{renew:?}"
    );
    assert_eq!(renew.renewed, None);
    assert_eq!(renew.renewal, None);
    // A deadline of its own: whole seconds from 1 to an hour.
    for bad in ["0", "3601", "1.5", "-1", "soon"] {
        let r = ask(&sock, &format!("renew test.example {bad}\n"));
        assert!(
            r.error.as_deref().is_some_and(
                |e| e.contains("SECS must be a whole number of seconds from 1 to 3600")
            ),
            "{bad}: {r:?}"
        );
    }
    let r = ask(&sock, "renew test.example 30\n");
    assert!(
        r.error
            .as_deref()
            .is_some_and(|e| e.contains("no ACME certificate")),
        "{r:?}"
    );
    let r = ask(&sock, "renew test.example 30 more\n");
    assert_eq!(
        r.error.as_deref(),
        Some("wrong arguments for renew"),
        "{r:?}"
    );

    stop(done);
    assert!(
        std::fs::symlink_metadata(&sock).is_err(),
        "the socket is removed on exit"
    );
}

/// The socket's place under systemd: `control.sock` in the first absolute directory of
/// RUNTIME_DIRECTORY (a `:`-separated list), none without one.
#[test]
fn control_socket_defaults_to_the_runtime_directory() {
    use std::ffi::OsStr;
    use std::path::PathBuf;
    use tlskit_server::runtime_control_path as at;
    assert_eq!(
        at(Some(OsStr::new("/run/tlskit"))),
        Some(PathBuf::from("/run/tlskit/control.sock"))
    );
    assert_eq!(
        at(Some(OsStr::new("/run/tlskit:/run/other"))),
        Some(PathBuf::from("/run/tlskit/control.sock"))
    );
    assert_eq!(
        at(Some(OsStr::new("relative:/run/b"))),
        Some(PathBuf::from("/run/b/control.sock"))
    );
    for none in ["", "relative", ":"] {
        assert_eq!(at(Some(OsStr::new(none))), None, "{none:?}");
    }
    assert_eq!(at(None), None);
}

#[test]
fn control_path_that_is_not_a_socket_is_refused() {
    let _one = running();
    let dir = tempfile::tempdir().unwrap();
    pki(dir.path());
    std::fs::write(dir.path().join("control.sock"), "data").unwrap();
    match Server::bind(config(dir.path())) {
        Err(NetError::Config(m)) => assert!(m.contains("not a socket"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a regular file was replaced by the control socket"),
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("control.sock")).unwrap(),
        "data"
    );
}
