//! The CLI contract (issue 14): what packages, scripts and service managers rely on.
//!
//! - `serve` tells systemd READY=1 / RELOADING=1 / STOPPING=1 through NOTIFY_SOCKET
//!   (a fake notify socket: a Unix datagram socket bound by the test);
//! - every reporting command ends quietly with exit 0 when its stdout pipe is closed
//!   (`ctl`, `trust`, `ca revoke`, `ca crl` and `ca eab` included; `acme` needs a CA:
//!   not here);
//! - every `--json` document matches its JSON Schema in docs/schemas/ for one input,
//!   several inputs and an error;
//! - `completions` and `man` produce what shells and man(1) read;
//! - an install test (`cargo install`, slow: see `installed_binary_runs`).

use crate::net_support;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::BIN;
use net_support::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Next datagram on the fake notify socket, as text (panics after 10 s).
fn recv(sock: &UnixDatagram, serve: &Serve) -> String {
    let mut buf = [0u8; 4096];
    match sock.recv(&mut buf) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Err(e) => panic!("no notification ({e}); serve said: {}", serve.stderr()),
    }
}

#[test]
fn serve_notifies_systemd_ready_reloading_stopping() {
    let pki = Pki::new();
    let sock_path = pki.path("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).expect("bind notify socket");
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut cmd = Command::new(BIN);
    cmd.env("NOTIFY_SOCKET", &sock_path);
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let mut serve = Serve::start_with(
        cmd,
        &["--cert", &c, "--key", &k, "--respond", "http", "--no-watch"],
        1,
    );
    // `listening on` came first (start_with waited for it); READY=1 follows once the
    // accept loops run.
    assert_eq!(recv(&sock, &serve), "READY=1\n");
    wait_port(serve.port(), Duration::from_secs(5));

    serve.signal("HUP");
    let reloading = recv(&sock, &serve);
    let lines: Vec<&str> = reloading.lines().collect();
    assert_eq!(lines.first(), Some(&"RELOADING=1"), "{reloading:?}");
    let usec = lines
        .iter()
        .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
        .unwrap_or_else(|| panic!("no MONOTONIC_USEC with RELOADING=1: {reloading:?}"));
    assert!(usec.parse::<u64>().is_ok_and(|u| u > 0), "{reloading:?}");
    assert_eq!(recv(&sock, &serve), "READY=1\n", "after the reload");
    // READY=1 may reach the socket before the log line reaches the test's stderr reader.
    assert!(
        serve.wait_log("event=reloaded", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );

    serve.signal("TERM");
    assert_eq!(recv(&sock, &serve), "STOPPING=1\n");
    assert_eq!(serve.wait_exit(Duration::from_secs(15)), Some(0));
}

#[test]
fn serve_without_notify_socket_sends_nothing_and_runs() {
    // NOTIFY_SOCKET unset: no notification code path may fail the server.
    let pki = Pki::new();
    let mut cmd = Command::new(BIN);
    cmd.env_remove("NOTIFY_SOCKET");
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let mut serve = Serve::start_with(cmd, &["--cert", &c, "--key", &k, "--no-watch"], 1);
    serve.reload();
    serve.signal("TERM");
    assert_eq!(serve.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(
        !serve.stderr().contains("notify_failed"),
        "{}",
        serve.stderr()
    );
}

/// Inputs made with tlskit itself: a CA (`ca/`), a leaf issued by it (`leaf.pem`, names
/// contract.example), the CA certificate alone (`roots/ca.pem`).
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = Self { dir };
        let p = |n: &str| s(&f.path(n));
        for args in [
            vec![
                "ca",
                "init",
                &p("ca"),
                "--subject",
                "CN=Contract Root,O=tlskit",
            ],
            vec!["key", "new", "-o", &p("leaf.key")],
            vec![
                "csr",
                "new",
                "--key",
                &p("leaf.key"),
                "--subject",
                "CN=contract.example",
                "--san",
                "dns:contract.example",
                "-o",
                &p("leaf.csr"),
            ],
            vec![
                "ca",
                "issue",
                &p("ca"),
                "--csr",
                &p("leaf.csr"),
                "-o",
                &p("leaf.pem"),
            ],
        ] {
            let out = tlskit(&args);
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::create_dir(f.path("roots")).expect("mkdir");
        std::fs::copy(f.path("ca/ca.pem"), f.path("roots/ca.pem")).expect("copy");
        f
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Run tlskit with stdout a pipe whose reader is already closed: the first write fails
/// with EPIPE, as under `| head -1` once head has exited.
fn run_into_closed_pipe(args: &[String]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tlskit");
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    Output {
        status,
        stdout: Vec::new(),
        stderr: stderr.into_bytes(),
    }
}

/// Every reporting command, human and --json, against a closed stdout: exit 0, no panic,
/// no "Broken pipe" message (the convention: a closed pipe ends the command quietly, as
/// in ripgrep).
#[test]
fn every_reporting_command_ends_quietly_on_a_closed_pipe() {
    let f = Fixture::new();
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let control = s(&pki.path("control.sock"));
    let serve = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--no-watch",
        "--control",
        &control,
    ]);
    let addr = serve.addr().to_string();
    let ca_pem = s(&pki.path("ca.pem"));
    let p = |n: &str| s(&f.path(n));
    // A root tree with a Fedora-like layout for `trust` (no external tool runs), and a
    // second certificate so that `ca revoke` revokes something new in each form.
    std::fs::create_dir_all(f.path("image/etc/pki/ca-trust/source/anchors")).expect("mkdir");
    let image = p("image");
    let issued = tlskit(&[
        "ca",
        "issue",
        &p("ca"),
        "--csr",
        &p("leaf.csr"),
        "-o",
        &p("leaf2.pem"),
    ]);
    assert!(issued.status.success(), "{issued:?}");
    let commands: Vec<Vec<String>> = [
        vec!["doctor"],
        vec!["store", "show", "system", "--list"],
        vec!["store", "show", &p("roots")],
        vec!["store", "lint", "system"],
        vec!["store", "build", &p("roots"), "-o", &p("roots.snap")],
        vec!["store", "prune", &p("roots"), "--backup", &p("backup")],
        vec![
            "verify",
            "--roots",
            &p("roots"),
            "--cert",
            &p("leaf.pem"),
            "--host",
            "contract.example",
        ],
        vec!["show", &p("leaf.pem")],
        vec!["lint", &p("leaf.pem")],
        vec!["ca", "list", &p("ca")],
        vec!["ca", "crl", &p("ca"), "-o", &p("pipe.crl")],
        vec!["trust", "list", "--root", &image],
        vec![
            "trust",
            "install",
            &p("ca/ca.pem"),
            "--root",
            &image,
            "--dry-run",
        ],
        vec!["ctl", "--control", &control, "status"],
        vec!["ctl", "--control", &control, "certs"],
        vec!["bench", "store", &p("roots"), "--runs", "1"],
        vec![
            "bench",
            "verify",
            "--roots",
            &p("roots"),
            "--cert",
            &p("leaf.pem"),
            "--host",
            "contract.example",
            "--runs",
            "1",
            "--run-ms",
            "10",
        ],
        vec![
            "connect",
            &addr,
            "--roots",
            &ca_pem,
            "--servername",
            "test.example",
        ],
        vec![
            "probe",
            &addr,
            "--roots",
            &ca_pem,
            "--servername",
            "test.example",
        ],
    ]
    .iter()
    .map(|v| v.iter().map(|a| a.to_string()).collect())
    .collect();
    let mut all = Vec::new();
    for c in &commands {
        all.push(c.clone());
        let mut j = c.clone();
        j.push("--json".into());
        all.push(j);
    }
    // `ca revoke` answers 1 for a certificate revoked already: one certificate a form.
    all.push(
        ["ca", "revoke", &p("ca"), "--cert", &p("leaf.pem")]
            .map(String::from)
            .to_vec(),
    );
    all.push(
        [
            "ca",
            "revoke",
            &p("ca"),
            "--cert",
            &p("leaf2.pem"),
            "--json",
        ]
        .map(String::from)
        .to_vec(),
    );
    // `ca eab add` refuses a key id it has: one id a form; then the list, in both.
    for (kid, json) in [("pipe-01", false), ("pipe-02", true)] {
        let mut add = ["ca", "eab", "add", &p("ca"), "--kid", kid]
            .map(String::from)
            .to_vec();
        if json {
            add.push("--json".into());
        }
        all.push(add);
    }
    for json in [false, true] {
        let mut list = ["ca", "eab", "list", &p("ca")].map(String::from).to_vec();
        if json {
            list.push("--json".into());
        }
        all.push(list);
    }
    all.push(vec!["completions".into(), "bash".into()]);
    all.push(vec!["man".into(), "--out-dir".into(), p("man")]);
    all.push(vec!["--help".into()]);
    // Commands that only say what they wrote.
    for extra in [
        vec!["key", "new", "-o", "K"],
        vec![
            "csr",
            "new",
            "--key",
            "K",
            "--subject",
            "CN=pipe.example",
            "-o",
            "R",
        ],
        vec![
            "cert",
            "self-sign",
            "--key",
            "K",
            "--subject",
            "CN=pipe.example",
            "-o",
            "C",
        ],
        vec!["ca", "init", "D"],
        vec!["--version"],
    ] {
        all.push(
            extra
                .iter()
                .map(|a| match *a {
                    "K" => p("pipe.key"),
                    "R" => p("pipe.csr"),
                    "C" => p("pipe.pem"),
                    "D" => p("pipe-ca"),
                    other => other.to_string(),
                })
                .collect(),
        );
    }
    let mut failures = Vec::new();
    for args in &all {
        let out = run_into_closed_pipe(args);
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) || err.contains("panicked") || err.contains("Broken pipe") {
            failures.push(format!(
                "tlskit {}: {:?}: {err}",
                args.join(" "),
                out.status.code()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// The case from the issue, through a real `head -1`.
#[test]
fn store_list_piped_into_head() {
    let out = Command::new("bash")
        .args([
            "-c",
            &format!(
                "'{BIN}' store show system --list | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"
            ),
        ])
        .output()
        .expect("bash");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
}

/// `tlskit ARGS`: (exit code, stdout parsed as JSON, stdout text).
fn json_of(args: &[String]) -> (i32, serde_json::Value, String) {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run tlskit");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "tlskit {}: stdout is not one JSON document ({e}): {text}\nstderr: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v, text)
}

/// docs/schemas/NAME.schema.json, parsed.
fn schema_json(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("schema is JSON")
}

fn schema_validator(name: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&schema_json(name))
        .unwrap_or_else(|e| panic!("{name}: bad schema: {e}"))
}

/// A JSON number written with more than three decimals (`1.4114259999999998`).
fn long_float(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| {
            let v = l.rsplit(": ").next().unwrap_or(l).trim_end_matches(',');
            v.parse::<f64>().is_ok() && v.split_once('.').is_some_and(|(_, d)| d.len() > 3)
        })
        .map(str::to_string)
}

/// One case: the command, the schema its document must match, the exit code.
struct Case {
    args: Vec<String>,
    schema: &'static str,
    code: i32,
}

fn case(schema: &'static str, code: i32, args: &[&str]) -> Case {
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push("--json".into());
    Case { args, schema, code }
}

/// Every command's `--json` against its JSON Schema (docs/schemas/) for one input, several
/// inputs and an error (exit 2 prints a `tlskit.error/1` document, or the command's own
/// document when it reports per-input errors inside it); `schema` names the document;
/// no float has more than three decimals.
#[test]
fn every_json_document_matches_its_schema() {
    let f = Fixture::new();
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let control = s(&pki.path("control.sock"));
    let serve = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--no-watch",
        "--control",
        &control,
    ]);
    let addr = serve.addr().to_string();
    let closed = format!("127.0.0.1:{}", free_port());
    let ca_pem = s(&pki.path("ca.pem"));
    let p = |n: &str| s(&f.path(n));
    let no_control = p("no-control.sock");
    std::fs::create_dir(f.path("empty")).expect("mkdir");
    std::fs::create_dir(f.path("mixed")).expect("mkdir");
    std::fs::copy(f.path("ca/ca.pem"), f.path("mixed/ca.pem")).expect("copy");
    std::fs::write(
        f.path("mixed/junk.pem"),
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
    )
    .expect("write");
    std::fs::create_dir_all(f.path("image/etc/pki/ca-trust/source/anchors")).expect("mkdir");
    let image = p("image");
    std::fs::create_dir(f.path("dups")).expect("mkdir");
    std::fs::copy(f.path("ca/ca.pem"), f.path("dups/a.pem")).expect("copy");
    std::fs::copy(f.path("ca/ca.pem"), f.path("dups/b.pem")).expect("copy");
    let (roots, leaf) = (p("roots"), p("leaf.pem"));
    let v1 = [
        "verify",
        "--roots",
        &roots,
        "--cert",
        &leaf,
        "--host",
        "contract.example",
    ];
    let v2 = [
        "verify",
        "--roots",
        &roots,
        "--cert",
        &leaf,
        "--host",
        "other.example",
    ];
    let missing = p("missing.pem");
    let v3 = [
        "verify",
        "--roots",
        &roots,
        "--cert",
        &missing,
        "--host",
        "contract.example",
    ];
    let cases = vec![
        // show: one, several (certificate, CA, key, request), one unreadable among several, error
        case("show", 0, &["show", &p("leaf.pem")]),
        case(
            "show",
            0,
            &[
                "show",
                &p("leaf.pem"),
                &p("ca/ca.pem"),
                &p("leaf.key"),
                &p("leaf.csr"),
            ],
        ),
        case("show", 0, &["show", &p("leaf.pem"), &p("missing.pem")]),
        case("error", 2, &["show", &p("missing.pem")]),
        case("lint", 0, &["lint", &p("leaf.pem")]),
        case("lint", 0, &["lint", &p("leaf.pem"), &p("ca/ca.pem")]),
        case("lint", 0, &["lint", &p("leaf.pem"), &p("missing.pem")]),
        case("error", 2, &["lint", &p("missing.pem")]),
        case("store.show", 0, &["store", "show", &p("roots")]),
        case(
            "store.show",
            0,
            &["store", "show", &p("roots"), &p("dups"), "system", "--list"],
        ),
        case("store.show", 0, &["store", "show", &p("mixed")]),
        case("error", 2, &["store", "show", &p("empty")]),
        case("store.lint", 0, &["store", "lint", &p("roots")]),
        case("store.lint", 0, &["store", "lint", &p("roots"), &p("dups")]),
        case("error", 2, &["store", "lint", &p("empty")]),
        case(
            "store.build",
            0,
            &["store", "build", &p("roots"), "-o", &p("one.snap")],
        ),
        case(
            "store.build",
            0,
            &[
                "store",
                "build",
                &p("roots"),
                &p("dups"),
                "-o",
                &p("two.snap"),
            ],
        ),
        case(
            "error",
            2,
            &["store", "build", &p("empty"), "-o", &p("none.snap")],
        ),
        case(
            "store.prune",
            0,
            &["store", "prune", &p("roots"), "--backup", &p("bak1")],
        ),
        case(
            "store.prune",
            0,
            &["store", "prune", &p("dups"), "--backup", &p("bak2")],
        ),
        case(
            "error",
            2,
            &["store", "prune", "system", "--backup", &p("bak3")],
        ),
        // Applied: results[] filled in (one copy of the duplicate moved, one kept).
        case(
            "store.prune",
            0,
            &[
                "store",
                "prune",
                &p("dups"),
                "--backup",
                &p("bak4"),
                "--apply",
            ],
        ),
        case("verify", 0, &v1),
        case("verify", 1, &v2),
        case("error", 2, &v3),
        case(
            "ca.issue",
            0,
            &[
                "ca",
                "issue",
                &p("ca"),
                "--csr",
                &p("leaf.csr"),
                "-o",
                &p("leaf2.pem"),
            ],
        ),
        case(
            "error",
            2,
            &[
                "ca",
                "issue",
                &p("ca"),
                "--csr",
                &p("missing.csr"),
                "-o",
                &p("leaf3.pem"),
            ],
        ),
        case("ca.list", 0, &["ca", "list", &p("ca")]),
        case("error", 2, &["ca", "list", &p("missing")]),
        // Issue 25: revoke (now, already, never issued) and the CRL (after ca.issue above).
        case(
            "ca.revoke",
            0,
            &["ca", "revoke", &p("ca"), "--cert", &p("leaf2.pem")],
        ),
        case(
            "ca.revoke",
            1,
            &[
                "ca",
                "revoke",
                &p("ca"),
                "--cert",
                &p("leaf2.pem"),
                "--reason",
                "1",
            ],
        ),
        case("error", 2, &["ca", "revoke", &p("ca"), "--serial", "01"]),
        case("ca.crl", 0, &["ca", "crl", &p("ca"), "-o", &p("ca.crl")]),
        // A CRL with an entry (leaf2 revoked above): show's crls[] and revoked[] objects.
        case("show", 0, &["show", &p("ca.crl")]),
        // EAB keys: enrolled (the key in the document), a repeated key id refused, listed.
        case(
            "ca.eab.add",
            0,
            &["ca", "eab", "add", &p("ca"), "--kid", "contract-01"],
        ),
        case(
            "error",
            2,
            &["ca", "eab", "add", &p("ca"), "--kid", "contract-01"],
        ),
        case("ca.eab.list", 0, &["ca", "eab", "list", &p("ca")]),
        case("error", 2, &["ca", "eab", "list", &p("missing")]),
        case(
            "error",
            2,
            &["ca", "crl", &p("missing"), "-o", &p("none.crl")],
        ),
        case(
            "bench.store",
            0,
            &["bench", "store", &p("roots"), "--runs", "1"],
        ),
        case(
            "bench.store",
            0,
            &["bench", "store", &p("roots"), &p("dups"), "--runs", "2"],
        ),
        case("error", 2, &["bench", "store", &p("empty"), "--runs", "1"]),
        case(
            "bench.verify",
            0,
            &[
                "bench",
                "verify",
                "--roots",
                &p("roots"),
                "--cert",
                &p("leaf.pem"),
                "--host",
                "contract.example",
                "--runs",
                "1",
                "--run-ms",
                "10",
            ],
        ),
        case(
            "error",
            2,
            &[
                "bench",
                "verify",
                "--roots",
                &p("roots"),
                "--cert",
                &p("leaf.pem"),
                "--host",
                "other.example",
                "--runs",
                "1",
                "--run-ms",
                "10",
            ],
        ),
        case(
            "connect",
            0,
            &[
                "connect",
                &addr,
                "--roots",
                &ca_pem,
                "--servername",
                "test.example",
            ],
        ),
        case(
            "connect",
            0,
            &[
                "connect",
                &addr,
                "--roots",
                &ca_pem,
                "--servername",
                "test.example",
                "--reconnect",
            ],
        ),
        case(
            "connect",
            1,
            &[
                "connect",
                &addr,
                "--roots",
                &p("roots"),
                "--servername",
                "test.example",
            ],
        ),
        case(
            "error",
            2,
            &["connect", &closed, "--roots", &ca_pem, "--timeout", "2"],
        ),
        case(
            "probe",
            0,
            &[
                "probe",
                &addr,
                "--roots",
                &ca_pem,
                "--servername",
                "test.example",
            ],
        ),
        case(
            "probe",
            0,
            &[
                "probe",
                &addr,
                "--roots",
                &ca_pem,
                "--servername",
                "test.example",
                "--repeat",
                "2",
            ],
        ),
        case(
            "error",
            2,
            &["probe", &closed, "--roots", &ca_pem, "--timeout", "2"],
        ),
        case("doctor", 0, &["doctor"]),
        case(
            "doctor",
            0,
            &[
                "doctor",
                &addr,
                "--servername",
                "test.example",
                "--roots",
                &ca_pem,
            ],
        ),
        case("doctor", 2, &["doctor", &closed]),
        case("ctl.status", 0, &["ctl", "--control", &control, "status"]),
        case("ctl.certs", 0, &["ctl", "--control", &control, "certs"]),
        case("ctl.reload", 0, &["ctl", "--control", &control, "reload"]),
        // After a reload: `last_reload` filled in.
        case("ctl.status", 0, &["ctl", "status", "--control", &control]),
        case("error", 2, &["ctl", "--control", &no_control, "status"]),
        // No ACME on this server: nothing to renew.
        case(
            "error",
            2,
            &["ctl", "--control", &control, "renew", "test.example"],
        ),
        case("error", 2, &["store", "show", "--no-such-flag"]),
        case("error", 2, &["verify", "--cert", &p("leaf.pem")]),
        // A root tree with a Fedora-like layout: no external tool runs.
        case(
            "trust.install",
            0,
            &[
                "trust",
                "install",
                &p("ca/ca.pem"),
                "--root",
                &image,
                "--dry-run",
            ],
        ),
        case("trust.list", 0, &["trust", "list", "--root", &image]),
        case(
            "trust.uninstall",
            1,
            &["trust", "uninstall", &p("ca/ca.pem"), "--root", &image],
        ),
        // Not a CA: refused.
        case(
            "error",
            2,
            &["trust", "install", &p("leaf.pem"), "--root", &image],
        ),
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let (code, v, text) = json_of(&c.args);
        let cmd = c.args.join(" ");
        if code != c.code {
            failures.push(format!("tlskit {cmd}: exit {code}, expected {}", c.code));
        }
        let validator = schema_validator(c.schema);
        // The first few errors say enough (a repeated key fails once per array item).
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .take(5)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        if !errors.is_empty() {
            failures.push(format!(
                "tlskit {cmd}: not a {} document: {}",
                c.schema,
                errors.join("; ")
            ));
        }
        if let Some(l) = long_float(&text) {
            failures.push(format!("tlskit {cmd}: unrounded number: {l}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The shapes the schema alone does not pin: one input or several, the same arrays.
    let (_, one, _) = json_of(&case("show", 0, &["show", &p("leaf.pem")]).args);
    assert_eq!(one["certificates"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        one["certificates"][0]["sans"][0]["value"],
        "contract.example"
    );
    let (_, many, _) = json_of(
        &case(
            "show",
            0,
            &["show", &p("leaf.pem"), &p("ca/ca.pem"), &p("leaf.key")],
        )
        .args,
    );
    assert_eq!(many["certificates"].as_array().map(Vec::len), Some(2));
    assert_eq!(many["private_keys"].as_array().map(Vec::len), Some(1));
    let (_, partial, _) =
        json_of(&case("show", 0, &["show", &p("leaf.pem"), &p("missing.pem")]).args);
    assert_eq!(partial["input_errors"][0]["path"], p("missing.pem"));
    // The optional objects the strict schemas check were really emitted above (the
    // applied prune moved the duplicate: a dry run now finds nothing to move).
    let (_, crl, _) = json_of(&case("show", 0, &["show", &p("ca.crl")]).args);
    assert_eq!(
        crl["crls"][0]["revoked"].as_array().map(Vec::len),
        Some(1),
        "{crl}"
    );
    let (_, pruned, _) = json_of(
        &case(
            "store.prune",
            0,
            &["store", "prune", &p("dups"), "--backup", &p("bak5")],
        )
        .args,
    );
    assert_eq!(
        pruned["moves"].as_array().map(Vec::len),
        Some(0),
        "{pruned}"
    );
    // doctor's copy of the probe report (its `probe` and `loopback` sections) lists the
    // probe document's keys, less `schema`.
    let keys = |s: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = s["properties"]
            .as_object()
            .map(|o| o.keys().filter(|k| *k != "schema").cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    let (probe, doctor) = (schema_json("probe"), schema_json("doctor"));
    assert!(!keys(&probe).is_empty());
    assert_eq!(keys(&probe), keys(&doctor["$defs"]["probe_report"]));
    let mut section = keys(&doctor["properties"]["sections"]["properties"]["probe"]["oneOf"][0]);
    section.retain(|k| k != "status");
    assert_eq!(keys(&probe), section);
    // The control socket's answers name what is served and the reload above.
    let (_, st, _) =
        json_of(&case("ctl.status", 0, &["ctl", "--control", &control, "status"]).args);
    assert_eq!(st["certificates"][0]["source"], "file", "{st}");
    assert_eq!(st["certificates"][0]["path"], c.as_str(), "{st}");
    assert!(
        st["certificates"][0]["not_after"].as_i64().is_some(),
        "{st}"
    );
    assert_eq!(st["last_reload"]["ok"], true, "{st}");
    assert_eq!(st["last_reload"]["cause"], "control", "{st}");
    let (_, err, _) = json_of(&case("error", 2, &["show", &p("missing.pem")]).args);
    assert_eq!(err["command"], "show");
    assert!(
        err["error"]
            .as_str()
            .is_some_and(|e| e.contains("missing.pem")),
        "{err}"
    );
}

/// Stock Debian's store holds each certificate in the bundle and in the directory: a
/// duplicate is `info` and alone never makes `store lint` exit 1 (doctor calls it normal).
#[test]
fn store_lint_duplicates_are_info_and_exit_0() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("dups")).expect("mkdir");
    std::fs::copy(f.path("ca/ca.pem"), f.path("dups/a.pem")).expect("copy");
    std::fs::copy(f.path("ca/ca.pem"), f.path("dups/b.pem")).expect("copy");
    let (code, v, _) =
        json_of(&case("store.lint", 0, &["store", "lint", &s(&f.path("dups"))]).args);
    let findings = v["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|x| x["code"] == "duplicate" && x["severity"] == "info"),
        "{v}"
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["warnings"], 0);
}

/// Flags spelled one way across commands: `--tls-version` in probe as in connect (the old
/// `--tls12` still works), versions written `TLSv1.2`/`TLSv1.3` in reports and logs,
/// `--roots` taking several sources in doctor too, port 443 when none is given.
#[test]
fn flags_are_consistent_across_commands() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let serve = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--respond",
        "http",
        "--no-watch",
        "--log-level",
        "debug",
    ]);
    let addr = serve.addr().to_string();
    let ca_pem = s(&pki.path("ca.pem"));
    let other = s(&pki.path("other-ca.pem"));
    let base = ["--roots", &ca_pem, "--servername", "test.example", "--json"];
    for (cmd, flags, want) in [
        ("probe", vec!["--tls-version", "1.2"], "TLSv1.2"),
        ("probe", vec!["--tls-version", "1.3"], "TLSv1.3"),
        ("probe", vec!["--tls12"], "TLSv1.2"),
        ("connect", vec!["--tls-version", "1.2"], "TLSv1.2"),
        ("connect", vec![], "TLSv1.3"),
    ] {
        let mut args: Vec<String> = vec![cmd.into(), addr.clone()];
        args.extend(base.iter().map(|a| a.to_string()));
        args.extend(flags.iter().map(|a| a.to_string()));
        let (code, v, _) = json_of(&args);
        assert_eq!(code, 0, "{args:?}: {v}");
        assert_eq!(v["tls_version"], want, "{args:?}");
    }
    assert!(
        serve.wait_log("event=handshake", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    let log = serve.stderr();
    assert!(
        log.contains("version=TLSv1.3") && !log.contains("TLSv1_3"),
        "{log}"
    );

    // doctor --roots takes several sources after one flag, as connect and probe do.
    let (code, v, _) = json_of(&[
        "doctor".into(),
        addr.clone(),
        "--servername".into(),
        "test.example".into(),
        "--roots".into(),
        other,
        ca_pem,
        "--json".into(),
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["sections"]["probe"]["verified"], true, "{v}");

    // HOST alone means port 443 (nothing listens there on the test machine's loopback, or
    // something else does: either way the report names port 443).
    for cmd in ["connect", "probe"] {
        let out = Command::new(BIN)
            .args([cmd, "127.0.0.1", "--timeout", "2", "--roots", "system"])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains("127.0.0.1:443"), "{cmd}: {all}");
        assert!(!all.contains("no port"), "{cmd}: {all}");
    }
}

/// `--timeout` of connect and probe (one parser): a value that is not a positive, finite
/// number of seconds up to a day is a usage error (exit 2) that names the flag, before any
/// connection, never a panic.
#[test]
fn timeout_out_of_range_is_a_usage_error() {
    for cmd in ["connect", "probe"] {
        for bad in ["1e30", "0", "-1", "inf", "NaN", "86401", "ten"] {
            let out = tlskit(&[cmd, "127.0.0.1:9", &format!("--timeout={bad}")]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} --timeout {bad}: {err}");
            assert!(
                err.contains("--timeout") && err.contains("seconds"),
                "{cmd} --timeout {bad}: {err}"
            );
            assert!(!err.contains("panicked"), "{cmd} --timeout {bad}: {err}");
        }
    }
}

/// Help texts: every command has examples, no default is printed twice.
#[test]
fn help_texts_have_examples_and_no_duplicated_defaults() {
    let commands: &[&[&str]] = &[
        &["doctor"],
        &["store", "show"],
        &["store", "build"],
        &["store", "lint"],
        &["store", "prune"],
        &["verify"],
        &["bench", "store"],
        &["bench", "verify"],
        &["key", "new"],
        &["csr", "new"],
        &["cert", "self-sign"],
        &["ca", "init"],
        &["ca", "issue"],
        &["ca", "list"],
        &["show"],
        &["lint"],
        &["p12", "export"],
        &["p12", "import"],
        &["serve"],
        &["connect"],
        &["probe"],
        &["completions"],
        &["man"],
        &["trust", "install"],
        &["trust", "uninstall"],
        &["trust", "list"],
    ];
    for c in commands {
        let mut args: Vec<&str> = c.to_vec();
        args.push("--help");
        let out = tlskit(&args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            text.contains("Examples:"),
            "{args:?} has no examples:\n{text}"
        );
        // One flag's help, joined across wrapped lines: one default at most.
        let flat = text.replace('\n', " ");
        for part in flat.split("  --").skip(1) {
            let defaults = part.matches("[default:").count()
                + part.matches("(default)").count()
                + part.matches("(default ").count();
            assert!(defaults <= 1, "{args:?}: default given twice in --{part}");
        }
    }
}

/// `completions` prints a script for each shell; `man` writes tlskit.1 and a page per
/// subcommand that man(1) formats.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: man")]
fn completions_and_man_pages() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = tlskit(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("tlskit") && text.contains("probe") && text.contains("--tls-version"),
            "{shell}: {text}"
        );
    }
    let out = tlskit(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let dir = tempfile::tempdir().expect("tempdir");
    let man = dir.path().join("man1");
    let out = tlskit(&["man", "--out-dir", &s(&man)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "tlskit.1",
        "tlskit-serve.1",
        "tlskit-store-show.1",
        "tlskit-ca-issue.1",
    ] {
        let text =
            std::fs::read_to_string(man.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH"),
            "{page}"
        );
    }
    let pages = std::fs::read_dir(&man).expect("read").count();
    assert!(pages >= 25, "{pages} pages");
    // The text after the options is in man-pages(7)'s sections, never clap_mangen's
    // "EXTRA": examples under EXAMPLES, the exit status under EXIT STATUS.
    for entry in std::fs::read_dir(&man).expect("read") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("page");
        assert!(!text.contains(".SH EXTRA"), "{}", path.display());
    }
    let ctl = std::fs::read_to_string(man.join("tlskit-ctl.1")).expect("tlskit-ctl.1");
    let at = |name: &str| {
        ctl.find(&format!("\n.SH {name}\n"))
            .unwrap_or_else(|| panic!("no {name} in tlskit-ctl.1:\n{ctl}"))
    };
    assert!(at("OPTIONS") < at("EXIT STATUS"), "{ctl}");
    assert!(at("EXIT STATUS") < at("NOTES"), "{ctl}");
    assert!(at("NOTES") < at("EXAMPLES"), "{ctl}");
    let examples = &ctl[at("EXAMPLES")..];
    assert!(
        examples.contains("tlskit ctl renew www.example.com"),
        "{examples}"
    );
    assert!(!examples.contains("Examples:"), "{examples}");
    assert!(have("man"), "man missing: scripts/setup installs man-db");
    {
        let out = Command::new("man")
            .args(["-l", &s(&man.join("tlskit-serve.1"))])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .expect("man");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("--shutdown-grace"), "{text}");
    }
}

/// The values a flag completes to in each shell's script (`None` where the shell would
/// complete file names): bash's `compgen -W "..."` after `--flag)`, zsh's `:(...)` at the
/// end of `'--flag=[...]`, fish's `-a "..."` after `-l flag`. One entry per occurrence
/// (a flag of several subcommands occurs once per subcommand).
fn completed_values(shell: &str, script: &str, flag: &str) -> Vec<Option<Vec<String>>> {
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_string).collect() };
    let lines: Vec<&str> = script.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        match shell {
            "bash" if t == format!("--{flag})") => {
                let next = lines.get(i + 1).copied().unwrap_or("");
                out.push(
                    next.split_once("compgen -W \"")
                        .and_then(|(_, r)| r.split_once('"'))
                        .map(|(v, _)| words(v)),
                );
            }
            // `'--flag=[`, `'*--flag=[` (repeatable), `'(--other)--flag=[` (exclusions).
            "zsh"
                if t.starts_with('\'')
                    && t.find(&format!("--{flag}=[")).is_some_and(|at| {
                        let prefix = &t[1..at];
                        prefix.is_empty() || prefix.ends_with(['*', ')'])
                    }) =>
            {
                out.push(
                    t.rsplit_once(":(")
                        .and_then(|(_, r)| r.strip_suffix(")' \\"))
                        .map(words),
                );
            }
            "fish" if t.contains(&format!(" -l {flag} ")) => {
                // The list runs to the closing quote, one value per line (`VALUE\t'HELP'`).
                let Some((_, first)) = t.split_once(" -a \"") else {
                    out.push(None);
                    continue;
                };
                let mut list = first.to_string();
                let mut j = i + 1;
                while !list.ends_with('"') && j < lines.len() {
                    list.push('\n');
                    list.push_str(lines[j]);
                    j += 1;
                }
                out.push(Some(
                    list.trim_end_matches('"')
                        .lines()
                        // fish escapes a comma (brace expansion): `brotli\,zlib`.
                        .map(|l| l.split("\\t").next().unwrap_or("").replace("\\,", ","))
                        .collect(),
                ));
            }
            _ => {}
        }
    }
    out
}

/// Issue 28: the enumerated values of `serve`, `connect`, `probe`, `key new` and the
/// global flags complete as values in bash, zsh and fish (not as file names).
#[test]
fn completions_offer_enumerated_values() {
    let profiles = ["browser", "webpki", "rfc5280"];
    let want: &[(&str, &[&str])] = &[
        ("respond", &["http", "echo"]),
        ("acme-challenge", &["tls-alpn-01", "http-01", "dns-01"]),
        ("client-auth", &["required", "optional"]),
        ("ca-hints", &["store", "off"]),
        ("starttls", &["smtp", "imap", "pop3"]),
        ("log-level", &["off", "error", "warn", "info", "debug"]),
        ("log-format", &["text", "json"]),
        ("tls-version", &["1.2", "1.3"]),
        (
            "compress",
            &["brotli,zlib", "zlib,brotli", "brotli", "zlib", "none"],
        ),
        ("reason", &["0", "1", "3", "4", "5"]),
        ("client-ca-profile", &profiles),
        ("acme-roots-profile", &profiles),
        ("shared-state-ca-profile", &profiles),
        (
            "type",
            &["p256", "p384", "ed25519", "rsa2048", "rsa3072", "rsa4096"],
        ),
    ];
    for shell in ["bash", "zsh", "fish"] {
        let out = tlskit(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for (flag, values) in want {
            let found = completed_values(shell, &script, flag);
            assert!(!found.is_empty(), "{shell}: --{flag} not in the script");
            for v in &found {
                // zsh lists a value with a description as `((text\:"..." ...))`: the
                // global --log-format (a ValueEnum with documented values).
                if shell == "zsh" && *flag == "log-format" {
                    continue;
                }
                let v = v
                    .as_ref()
                    .unwrap_or_else(|| panic!("{shell}: --{flag} completes file names"));
                assert_eq!(v, values, "{shell}: --{flag}");
            }
        }
        // --profile: the verification profiles (connect, probe, verify) and the
        // certificate profiles of `ca issue`; never file names.
        let lists = completed_values(shell, &script, "profile");
        assert!(lists.iter().all(Option::is_some), "{shell}: {lists:?}");
        assert!(
            lists.contains(&Some(profiles.iter().map(|p| p.to_string()).collect())),
            "{shell}: {lists:?}"
        );
        // --allow: the rule codes that can be lifted.
        let allow = completed_values(shell, &script, "allow");
        assert!(
            allow.iter().all(|v| v
                .as_ref()
                .is_some_and(|v| v.contains(&"cn-not-in-san".to_string()))),
            "{shell}: {allow:?}"
        );
    }
}

/// Issue 28: fish itself completes values, not file names, from `tlskit completions
/// fish`: `complete -C` in a folder holding a file, with the script sourced. A value flag
/// offers its values only; a path flag offers the file (so the check can see files);
/// subcommands and their flags complete too.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: fish")]
fn fish_completes_enumerated_values_not_files() {
    assert!(have("fish"), "fish missing: scripts/setup installs it");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("tlskit.fish");
    let out = tlskit(&["completions", "fish"]);
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).expect("write");
    std::fs::write(dir.path().join("decoy.pem"), "x").expect("write");
    let complete = |line: &str| -> Vec<String> {
        let out = Command::new("fish")
            .args(["--no-config", "-c"])
            .arg(format!(
                "source {}; complete -C {}",
                s(&script),
                shell_quote(line)
            ))
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .output()
            .expect("fish");
        assert!(out.status.success(), "{line}: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(complete("tlskit serve --respond "), ["echo", "http"]);
    assert_eq!(
        complete("tlskit serve --acme-challenge "),
        ["dns-01", "http-01", "tls-alpn-01"]
    );
    assert_eq!(
        complete("tlskit serve --compress "),
        ["brotli", "brotli,zlib", "none", "zlib", "zlib,brotli"]
    );
    assert_eq!(
        complete("tlskit connect example.com --starttls "),
        ["imap", "pop3", "smtp"]
    );
    let files = complete("tlskit serve --cert ");
    assert!(files.contains(&"decoy.pem".to_string()), "{files:?}");
    let subs = complete("tlskit ctl ");
    for want in ["certs", "reload", "renew", "status"] {
        assert!(subs.contains(&want.to_string()), "{subs:?}");
    }
    assert_eq!(complete("tlskit ctl renew --time"), ["--timeout"]);
}

/// `s` quoted for fish: in single quotes, `\` and `'` escaped.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Issue 28: a man page's SYNOPSIS names each option's argument (`[--listen <ADDR>...]`),
/// and the pages are plain ASCII (troff escapes for the rest).
#[test]
fn man_synopsis_names_option_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tlskit(&["man", "--out-dir", &s(dir.path())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(dir.path().join("tlskit-serve.1")).expect("page");
    let synopsis = page
        .split(".SH SYNOPSIS\n")
        .nth(1)
        .and_then(|r| r.split("\n.SH ").next())
        .unwrap_or_else(|| panic!("no SYNOPSIS: {page}"));
    for want in [
        r"[\fB\-\-listen\fR\ \fI<ADDR>\fR...]",
        r"[\fB\-\-respond\fR\ \fI<http|echo>\fR]",
        r"[\fB\-\-no\-watch\fR]",
        r"[\fB\-h\fR|\fB\-\-help\fR]",
    ] {
        assert!(synopsis.contains(want), "{want} not in {synopsis}");
    }
    for entry in std::fs::read_dir(dir.path()).expect("read") {
        let p = entry.expect("entry").path();
        let text = std::fs::read(&p).expect("read page");
        assert!(text.is_ascii(), "{}: not ASCII", p.display());
    }
    let verify = std::fs::read_to_string(dir.path().join("tlskit-verify.1")).expect("page");
    assert!(
        verify.contains(r"r\[u00E4]ksm\[u00F6]rg\[u00E5]s"),
        "{verify}"
    );
}

/// Issue 28: every generated page renders without a troff warning (`man --warnings -l`
/// as the issue says, and `groff -ww`, at 60, 80 and 120 columns); SYNOPSIS shows the
/// arguments; each row of tlskit-serve(1)'s deadlines table stays a line of its own.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: man, groff")]
fn man_pages_render_without_troff_warnings() {
    assert!(have("man"), "man missing: scripts/setup installs man-db");
    assert!(
        have("groff"),
        "groff missing: scripts/setup installs groff-base"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tlskit(&["man", "--out-dir", &s(dir.path())]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .expect("read")
        .map(|e| e.expect("entry").path())
        .collect();
    pages.sort();
    assert!(pages.len() >= 25, "{pages:?}");
    for page in &pages {
        for width in ["60", "80", "120"] {
            let man = Command::new("man")
                .args(["--warnings", "-l"])
                .arg(page)
                .env("MANPAGER", "cat")
                .env("MANWIDTH", width)
                .output()
                .expect("man");
            assert!(man.status.success(), "{}", page.display());
            let err = String::from_utf8_lossy(&man.stderr);
            assert!(
                err.trim().is_empty(),
                "{} at {width}: {err}",
                page.display()
            );
            let groff = Command::new("groff")
                .args(["-ww", "-man", "-Tutf8", &format!("-rLL={width}n")])
                .arg(page)
                .output()
                .expect("groff");
            let err = String::from_utf8_lossy(&groff.stderr);
            assert!(
                groff.status.success() && err.trim().is_empty(),
                "{} at {width}: {err}",
                page.display()
            );
        }
    }
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-P-cbou", "-rLL=80n"])
        .arg(dir.path().join("tlskit-serve.1"))
        .output()
        .expect("groff");
    // UTF-8 output writes `\-` as a minus sign and `-` as a hyphen.
    let text = String::from_utf8_lossy(&out.stdout).replace(['\u{2212}', '\u{2010}'], "-");
    assert!(text.contains("[--listen <ADDR>...]"), "{text}");
    assert!(
        text.contains("[--acme-challenge <tls-alpn-01|http-01|dns-01>]"),
        "{text}"
    );
    for row in [
        "TCP accept -> handshake done            --handshake-timeout  10 s",
        "nothing read or written, either side    --idle-timeout       60 s",
        "SIGTERM -> open connections closed      --shutdown-grace     10 s",
    ] {
        assert!(text.lines().any(|l| l.trim() == row), "{row}: {text}");
    }
}

/// Issue 28: with neither --backend nor --respond, `serve` answers HTTP/1.1 with 200 and
/// a small body, says so in --help and logs it at start (and does not with --respond).
#[test]
fn serve_says_what_it_does_without_backend_or_respond() {
    let help = tlskit(&["serve", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains(
            "With neither --backend nor --respond, serve answers every HTTP/1.1 request itself"
        ),
        "{help}"
    );
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let serve = Serve::start(&["--cert", &c, "--key", &k, "--no-watch"]);
    assert!(
        serve.wait_log(
            "event=default_responder respond=http",
            Duration::from_secs(10)
        ),
        "{}",
        serve.stderr()
    );
    let mut tls = tls_connect(serve.addr(), &pki.path("ca.pem"));
    std::io::Write::write_all(
        &mut tls,
        b"GET / HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n\r\n",
    )
    .expect("request");
    let (answer, _) = read_until_close(&mut tls, Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let echo = Serve::start(&["--cert", &c, "--key", &k, "--respond", "echo", "--no-watch"]);
    assert!(echo.wait_log("event=started", Duration::from_secs(10)));
    assert!(
        !echo.stderr().contains("default_responder"),
        "{}",
        echo.stderr()
    );
}

/// SLOW (a full build of tlskit in its own target directory, `target/install-test`: minutes
/// on the first run, seconds after): `scripts/install --root DIR`, the README's install
/// for a service (with `--debug`, which the README does not use, to keep the test's build
/// short; the script passes it on to `cargo install`), which ends by running `tlskit
/// doctor` from DIR; then `--version`, `completions` and `man` from the installed binary.
/// Its own target directory because the running `cargo test` holds the lock of the
/// workspace's.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: a cargo install")]
fn installed_binary_runs() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = ws.join("target/install-test");
    // The script runs `cargo` from PATH: the one running this test first.
    let mut path = std::env::var_os("CARGO")
        .and_then(|c| Path::new(&c).parent().map(Path::to_path_buf))
        .map(|d| vec![d])
        .unwrap_or_default();
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let out = Command::new("bash")
        .current_dir(&ws)
        .args(["scripts/install", "--debug", "--quiet", "--root"])
        .arg(root.path())
        .arg("--target-dir")
        .arg(&target)
        .env("PATH", std::env::join_paths(path).expect("PATH"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_INSTALL_ROOT")
        .output()
        .expect("run scripts/install");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scripts/install failed: {err}");
    let said = format!(
        "install: installed tlskit {} as {}",
        env!("CARGO_PKG_VERSION"),
        root.path().join("bin/tlskit").display()
    );
    assert!(err.contains(&said), "{said:?} not in: {err}");
    // What `tlskit doctor` prints, from the installed binary.
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("tlskit doctor: "),
        "no doctor report: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let bin = root.path().join("bin/tlskit");
    let run = |args: &[&str]| {
        let o = Command::new(&bin)
            .args(args)
            .output()
            .expect("run installed tlskit");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        run(&["--version"]).trim(),
        format!("tlskit {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(run(&["completions", "bash"]).contains("complete -F _tlskit"));
    let man = root.path().join("share/man/man1");
    run(&["man", "--out-dir", &s(&man)]);
    assert!(man.join("tlskit.1").is_file() && man.join("tlskit-doctor.1").is_file());
}

/// `scripts/install --root DIR` run by a user who cannot write DIR (README: "as yourself"):
/// cargo builds into a temporary root (never DIR: `--root` is given once), `sudo install`
/// copies `bin/tlskit` into DIR, the temporary root is removed and the script goes on to
/// `DIR/bin/tlskit doctor`. Where DIR is writable, cargo installs there and sudo is never
/// run. Stubs stand for cargo, rustc, sudo and `id` (a user, uid 1000), so nothing is
/// built; DIR is read-only in a private mount namespace (`unshare --mount`, root as the
/// netns tests of the slow tier) until the stub sudo remounts it writable.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: unshare")]
fn install_script_copies_with_sudo_where_root_is_not_writable() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let f = tempfile::tempdir().expect("tempdir");
    let stub = f.path().join("stub");
    let tmp = f.path().join("tmp");
    let ro = f.path().join("ro");
    for d in [&stub, &tmp, &ro] {
        std::fs::create_dir(d).expect("mkdir");
    }
    let log = f.path().join("log");
    let stubs = [
        ("rustc", "echo rustc 1.99.0\n".to_string()),
        (
            "id",
            "case \"$1\" in -u) echo 1000 ;; -un) echo tester ;; *) exec /usr/bin/id \"$@\" ;; esac\n"
                .to_string(),
        ),
        // Records its arguments, puts a stand-in tlskit into --root.
        (
            "cargo",
            format!(
                "echo \"cargo $*\" >> {log}\nr=; p=\nfor a in \"$@\"; do [ \"$p\" = --root ] && r=$a; p=$a; done\n\
                 mkdir -p \"$r/bin\"\nprintf '#!/bin/sh\\necho \"tlskit 9.9.9 $*\"\\n' > \"$r/bin/tlskit\"\n\
                 chmod 0755 \"$r/bin/tlskit\"\n",
                log = s(&log)
            ),
        ),
        // Gains the right to write DIR: remounts it read-write.
        (
            "sudo",
            format!(
                "echo \"sudo $*\" >> {log}\nmount -o remount,bind,rw {ro} && exec \"$@\"\n",
                log = s(&log),
                ro = s(&ro)
            ),
        ),
    ];
    for (name, body) in stubs {
        let p = stub.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}")).expect("write stub");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let root = ro.join("usr/local");
    let path = format!("{}:/usr/bin:/bin", s(&stub));
    let script = s(&ws.join("scripts/install"));
    let run = |prelude: &str, root: &Path| {
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "bash", "-c"])
            .arg(format!(
                "{prelude}exec bash \"$0\" --debug --root \"$1\" --target-dir /nowhere"
            ))
            .args([script.clone(), s(root)])
            .env_clear()
            .env("PATH", &path)
            .env("HOME", f.path())
            .env("TMPDIR", &tmp)
            .output()
            .expect("run scripts/install")
    };
    let ro_mount = format!(
        "mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && ",
        ro = s(&ro)
    );
    let out = run(&ro_mount, &root);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let calls = std::fs::read_to_string(&log).expect("log");
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 2, "{calls}");
    let stage = lines[0]
        .strip_prefix(
            "cargo install --locked --path crates/cli --debug --target-dir /nowhere --root ",
        )
        .unwrap_or_else(|| panic!("cargo's arguments: {calls}"));
    assert!(Path::new(stage).starts_with(&tmp), "{calls}");
    assert_eq!(
        lines[1],
        format!(
            "sudo install -D -m 0755 {stage}/bin/tlskit {}/bin/tlskit",
            s(&root)
        )
    );
    assert!(!Path::new(stage).exists(), "{stage} left behind");
    assert!(root.join("bin/tlskit").is_file());
    assert!(err.contains("copying tlskit there with sudo"), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "tlskit 9.9.9 doctor"
    );

    // Writable: cargo installs into DIR itself, no sudo.
    std::fs::remove_file(&log).expect("rm log");
    let w = f.path().join("w");
    let out = run("", &w);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        calls.trim(),
        format!(
            "cargo install --locked --path crates/cli --debug --root {} --target-dir /nowhere",
            s(&w)
        )
    );
}

/// dist/tlskit.service is a valid unit as shipped (`systemd-analyze verify` on the file
/// itself) of Type=notify with a SIGHUP reload of its own process only, the hardening
/// options and the directories it writes, whose binary is where `scripts/install --root
/// /usr/local` (README "Installing") puts it and outside what ProtectHome=yes hides; and
/// systemd rates its exposure "OK" (under 2.0 of 10).
///
/// `systemd-analyze verify` fails when ExecStart's binary does not exist, and this test must
/// not write the host's /usr/local: it lays out a temporary root as `cargo install --root`
/// does (`bin/tlskit`, the binary under test; `share/man/man1`, from `tlskit man`) and
/// verifies the unmodified unit in a private mount namespace where that root is bind-mounted
/// on /usr/local (`unshare --mount`, root as the netns tests of the slow tier), with
/// MANPATH naming its man pages for `Documentation=man:tlskit-serve(1)`. The same check
/// with an empty /usr/local must fail on ExecStart, so the check can fail.
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: systemd-analyze")]
fn systemd_unit_verifies_and_is_hardened() {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let unit_path = ws.join("dist/tlskit.service");
    let unit = std::fs::read_to_string(&unit_path).expect("dist/tlskit.service");
    for want in [
        "Type=notify",
        "ExecStart=/usr/local/bin/tlskit serve --config /etc/tlskit/serve.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE",
        "DynamicUser=yes",
        "ConfigurationDirectory=tlskit",
        "StateDirectory=tlskit",
        "RuntimeDirectory=tlskit",
    ] {
        assert!(unit.lines().any(|l| l == want), "{want} missing");
    }
    // ProtectSystem=strict leaves StateDirectory and RuntimeDirectory writable: no more.
    assert!(
        !unit.lines().any(|l| l.starts_with("ReadWritePaths=")),
        "ReadWritePaths= beyond the unit's directories"
    );
    // The documented service install is the root the unit's ExecStart lives under.
    let readme = std::fs::read_to_string(ws.join("README.md")).expect("README.md");
    let install = std::fs::read_to_string(ws.join("scripts/install")).expect("scripts/install");
    for (name, text) in [("README.md", &readme), ("scripts/install", &install)] {
        assert!(
            text.contains("scripts/install --root /usr/local"),
            "{name} does not document `scripts/install --root /usr/local`"
        );
    }
    assert!(
        !readme.contains("pidof"),
        "README.md signals by process name (every tlskit on the host)"
    );

    assert!(
        have("systemd-analyze"),
        "systemd-analyze missing: scripts/setup installs it"
    );
    assert!(have("unshare"), "unshare (util-linux) missing");
    let root = tempfile::tempdir().expect("tempdir");
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    std::fs::copy(BIN, bin.join("tlskit")).expect("copy tlskit");
    let man = root.path().join("share/man");
    let out = Command::new(BIN)
        .args(["man", "--out-dir", &s(&man.join("man1"))])
        .output()
        .expect("tlskit man");
    assert!(out.status.success(), "{out:?}");
    let empty = tempfile::tempdir().expect("tempdir");
    let verify_with = |usr_local: &Path| {
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$1" /usr/local && exec systemd-analyze verify "$2""#)
            .args(["sh", &s(usr_local), &s(&unit_path)])
            .env("MANPATH", &man)
            .output()
            .expect("unshare systemd-analyze verify")
    };
    let out = verify_with(root.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("tlskit.service"),
        "{err}"
    );
    let out = verify_with(empty.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/usr/local/bin/tlskit is not executable"),
        "verify passed without the binary: {err}"
    );

    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=yes", &s(&unit_path)])
        .env("SYSTEMD_COLORS", "0")
        .output()
        .expect("systemd-analyze security");
    let text = String::from_utf8_lossy(&out.stdout);
    let level: f64 = text
        .lines()
        .find_map(|l| l.split("exposure level for tlskit.service: ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level: {text}"));
    assert!(level < 2.0, "exposure {level}: {text}");
}

// ---- Log lines (issue 14, item 3) ----

/// `ts` of a log line: RFC 3339, UTC (`Z`), within a few minutes of now.
fn assert_log_time(ts: &str, line: &str) {
    let t = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("ts {ts:?} is not RFC 3339 ({e}): {line}"));
    assert!(ts.ends_with('Z'), "ts not in UTC: {line}");
    let age = (time::OffsetDateTime::now_utc() - t).whole_seconds().abs();
    assert!(age < 300, "ts {ts} is {age} s away from now: {line}");
}

/// A TLS record header announcing 64 KiB, then junk: the server's handshake fails.
fn garbage_handshake(addr: std::net::SocketAddr) {
    use std::io::{Read, Write};
    let mut g = std::net::TcpStream::connect(addr).expect("connect");
    g.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 0, 0, 0, 0])
        .expect("write");
    let mut sink = Vec::new();
    let _ = g.read_to_end(&mut sink);
}

/// The log lines of a serve (the plain `listening on`/`metrics on` lines left out).
fn log_lines(serve: &Serve) -> Vec<String> {
    serve
        .stderr()
        .lines()
        .filter(|l| !l.starts_with("listening on ") && !l.starts_with("metrics on "))
        .map(str::to_string)
        .collect()
}

/// A certificate whose SNI-directory file name holds ESC: its name reaches the log.
const EVIL_NAME: &str = "evil\u{1b}[31mname";

fn days(n: i64) -> time::Duration {
    time::Duration::days(n)
}

fn now_s() -> time::OffsetDateTime {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}

/// `--log-format json`: every log line is one JSON object with an RFC 3339 UTC `ts`,
/// `level`, `target` and `event`; serve start, a failed handshake and a reload carry
/// their fields; a certificate's text arrives exact (JSON escaping, nothing else).
#[test]
fn serve_json_log_lines_parse_with_rfc3339_timestamps() {
    let pki = Pki::new();
    std::fs::create_dir(pki.path("sni")).expect("mkdir");
    let now = now_s();
    pki.server_leaf_valid(
        &format!("sni/{EVIL_NAME}.crt"),
        &format!("sni/{EVIL_NAME}.key"),
        &["evil.test"],
        now - days(1),
        now + days(5),
    );
    let (c, k, sni) = (
        s(&pki.path("chain.pem")),
        s(&pki.path("leaf.key")),
        s(&pki.path("sni")),
    );
    let mut serve = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--sni-dir",
        &sni,
        "--respond",
        "http",
        "--no-watch",
        "--log-format",
        "json",
    ]);
    garbage_handshake(serve.addr());
    assert!(
        serve.wait_log("\"event\":\"handshake_failed\"", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    serve.signal("HUP");
    assert!(
        serve.wait_log("\"event\":\"reloaded\"", Duration::from_secs(10)),
        "{}",
        serve.stderr()
    );
    serve.signal("TERM");
    assert_eq!(serve.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(serve.wait_log("\"event\":\"stopped\"", Duration::from_secs(5)));

    let mut events = Vec::new();
    for line in log_lines(&serve) {
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line:?}"));
        assert_log_time(v["ts"].as_str().unwrap_or(""), &line);
        assert!(
            ["error", "warn", "info", "debug"].contains(&v["level"].as_str().unwrap_or("")),
            "{line}"
        );
        assert_eq!(v["target"], "tlskit_net", "{line}");
        assert!(v["event"].is_string(), "{line}");
        events.push(v);
    }
    let find = |name: &str| -> Vec<&serde_json::Value> {
        events.iter().filter(|v| v["event"] == name).collect()
    };
    let started = find("started");
    assert_eq!(started.len(), 1, "{events:?}");
    assert_eq!(started[0]["level"], "info");
    assert_eq!(started[0]["listen"], serve.addr().to_string());

    let failed = find("handshake_failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["level"], "warn");
    let peer: std::net::SocketAddr = failed[0]["peer"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("peer: {}", failed[0]));
    assert!(peer.ip().is_loopback());
    assert!(
        failed[0]["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{}",
        failed[0]
    );

    let reloaded = find("reloaded");
    assert_eq!(reloaded.len(), 1, "{events:?}");
    assert_eq!(reloaded[0]["ok"], "true");
    assert_eq!(reloaded[0]["cause"], "sighup");

    // At start and after the reload; the name exactly as the file has it.
    let soon = find("certificate_expires_soon");
    assert_eq!(soon.len(), 2, "{events:?}");
    assert_eq!(soon[0]["name"], EVIL_NAME);
    assert_eq!(soon[0]["sni"], "evil.test");
    assert_eq!(find("stopped").len(), 1);
}

/// Text lines: `ts=` RFC 3339 UTC first, `level=`, `event=`; a control character from a
/// certificate's file name never reaches the log raw; an expired certificate is an error
/// line at start.
#[test]
fn serve_text_log_lines_have_rfc3339_timestamps_and_escaped_values() {
    let pki = Pki::new();
    std::fs::create_dir(pki.path("sni")).expect("mkdir");
    let now = now_s();
    pki.server_leaf_valid(
        "expired.pem",
        "expired.key",
        &["test.example", "localhost"],
        now - days(30),
        now - days(2),
    );
    pki.server_leaf_valid(
        &format!("sni/{EVIL_NAME}.crt"),
        &format!("sni/{EVIL_NAME}.key"),
        &["evil.test"],
        now - days(1),
        now + days(5),
    );
    let (c, k, sni) = (
        s(&pki.path("expired.pem")),
        s(&pki.path("expired.key")),
        s(&pki.path("sni")),
    );
    let mut serve = Serve::start(&[
        "--cert",
        &c,
        "--key",
        &k,
        "--sni-dir",
        &sni,
        "--respond",
        "http",
        "--no-watch",
    ]);
    garbage_handshake(serve.addr());
    assert!(
        serve.wait_log("event=handshake_failed", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    serve.signal("TERM");
    assert_eq!(serve.wait_exit(Duration::from_secs(15)), Some(0));
    assert!(serve.wait_log("event=stopped", Duration::from_secs(5)));
    let lines = log_lines(&serve);
    assert!(lines.len() >= 5, "{lines:?}");
    for line in &lines {
        let rest = line
            .strip_prefix("ts=")
            .unwrap_or_else(|| panic!("no ts= first: {line:?}"));
        let (ts, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        assert_log_time(ts, line);
        assert!(rest.starts_with("level="), "{line}");
        assert!(rest.contains(" event="), "{line}");
        assert!(!line.contains('\u{1b}'), "raw ESC in a log line: {line:?}");
    }
    let expired: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("event=certificate_expired "))
        .collect();
    assert_eq!(expired.len(), 1, "{lines:?}");
    assert!(
        expired[0].contains("level=error") && expired[0].contains("name=default"),
        "{}",
        expired[0]
    );
    let soon: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("event=certificate_expires_soon"))
        .collect();
    assert_eq!(soon.len(), 1, "{lines:?}");
    assert!(
        soon[0].contains("level=warn")
            && soon[0].contains("name=\"evil")
            && soon[0].contains("sni=evil.test"),
        "{}",
        soon[0]
    );
}

/// TLSKIT_LOG filters (env-filter syntax); `--log-level` on the command line wins for
/// tlskit's events; a TLSKIT_LOG that does not parse is exit 2 naming the variable.
#[test]
fn serve_log_filter_from_tlskit_log() {
    let pki = Pki::new();
    let (c, k) = (s(&pki.path("chain.pem")), s(&pki.path("leaf.key")));
    let args = ["--cert", &c, "--key", &k, "--respond", "http", "--no-watch"];

    // warn: the failed handshake, not the start.
    let mut cmd = Command::new(BIN);
    cmd.env("TLSKIT_LOG", "warn").env_remove("RUST_LOG");
    let serve = Serve::start_with(cmd, &args, 1);
    garbage_handshake(serve.addr());
    assert!(
        serve.wait_log("event=handshake_failed", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    assert!(
        !serve.stderr().contains("event=started"),
        "{}",
        serve.stderr()
    );
    drop(serve);

    // tlskit=debug: one line per handshake.
    let mut cmd = Command::new(BIN);
    cmd.env("TLSKIT_LOG", "tlskit=debug").env_remove("RUST_LOG");
    let serve = Serve::start_with(cmd, &args, 1);
    let ca = s(&pki.path("ca.pem"));
    let (code, _) = connect_json(&[
        &serve.addr().to_string(),
        "--roots",
        &ca,
        "--servername",
        "test.example",
    ]);
    assert_eq!(code, 0);
    assert!(
        serve.wait_log("event=handshake ", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    assert!(serve.stderr().contains("event=started"));
    drop(serve);

    // The flag wins over the variable.
    let mut cmd = Command::new(BIN);
    cmd.env("TLSKIT_LOG", "error").env_remove("RUST_LOG");
    let mut with_flag: Vec<&str> = args.to_vec();
    with_flag.extend(["--log-level", "info"]);
    let serve = Serve::start_with(cmd, &with_flag, 1);
    assert!(
        serve.wait_log("event=started", Duration::from_secs(5)),
        "{}",
        serve.stderr()
    );
    drop(serve);

    let out = Command::new(BIN)
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("TLSKIT_LOG", "tlskit=loud")
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("TLSKIT_LOG") && !err.contains("listening on"),
        "{err}"
    );
}

/// The library crates never write to stderr themselves: their logs are `tracing` events
/// (tlskit_tls::log), and only the binary decides where lines go.
#[test]
fn library_crates_do_not_write_to_stderr() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    let mut found = Vec::new();
    for krate in [
        "crates/store",
        "crates/verify",
        "crates/pki",
        "crates/tls",
        "crates/client",
        "crates/acme",
        "crates/fleet",
        "crates/server",
        "crates/dns",
        "crates/trust",
        "crates/ca-server",
        "crates/x509",
        "crates/io",
        "crates/names",
        "crates/pkcs11",
        "bench/harness",
    ] {
        let src = root.join(krate).join("src");
        let mut dirs = vec![src];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    checked += 1;
                    let text = std::fs::read_to_string(&p).expect("read source");
                    for (i, line) in text.lines().enumerate() {
                        if ["eprintln!", "eprint!", "io::stderr", "dbg!"]
                            .iter()
                            .any(|w| line.contains(w))
                        {
                            found.push(format!("{}:{}: {line}", p.display(), i + 1));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 40, "only {checked} source files found");
    assert!(
        found.is_empty(),
        "direct stderr writes:\n{}",
        found.join("\n")
    );
}
