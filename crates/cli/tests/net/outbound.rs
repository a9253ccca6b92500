//! Outbound verifications (issue 23): every certificate tlskit checks as a client (the
//! ACME CA's HTTPS, a `rediss://` Redis) has a profile and allowed rules of its own
//! (`--acme-roots-profile/-allow`, `--shared-state-ca-profile/-allow`, and config keys),
//! and the CAs people test with work with none of them given:
//!
//! - Pebble as shipped: the module `scripts/setup` installs, started as Pebble's README
//!   starts it (`pebble -config test/config/pebble-config.json` in the module directory,
//!   `PEBBLE_VA_NOSLEEP=1`, pebble-challtestsrv as its DNS), its own TLS certificate
//!   (`test/certs/localhost`) trusted through `test/certs/pebble.minica.pem`. Pebble's
//!   ports are fixed (14000, 15000, HTTP-01 on 5002, TLS-ALPN-01 on 5001; DNS 8053 and
//!   8055 for challtestsrv), so these tests take a lock ([`fixed_ports`]); the other ACME
//!   tests (acme.rs) run their Pebbles on random ports and never meet these.
//! - README.md's Pebble example, extracted from README.md and run as written.
//!
//! Also: the check that no log line a server writes is Rust `Debug` output
//! (`net_support::debug_shapes`, applied to every `Serve`'s stderr when it is dropped).

use crate::net_support::{
    self, assert_sentences, connect_json, debug_shapes, redis_server_tls, require, tlskit,
    wait_port, Pki, Serve,
};

use crate::BIN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME"))
}

/// `PEBBLE_VERSION=...` from scripts/setup: the one place the version is written.
fn pebble_version() -> String {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/setup");
    let text = std::fs::read_to_string(&setup).expect("scripts/setup");
    text.lines()
        .find_map(|l| l.strip_prefix("PEBBLE_VERSION="))
        .expect("PEBBLE_VERSION in scripts/setup")
        .trim()
        .to_string()
}

/// The Pebble module's source, which `scripts/setup` guarantees (go mod download).
fn pebble_module() -> PathBuf {
    let dir = home().join(format!(
        "go/pkg/mod/github.com/letsencrypt/pebble/v2@{}",
        pebble_version()
    ));
    assert!(
        dir.join("test/config/pebble-config.json").is_file(),
        "{}: no Pebble module source (scripts/setup installs it)",
        dir.display()
    );
    dir
}

fn go_bin(program: &str) -> PathBuf {
    let p = home().join("go/bin").join(program);
    assert!(
        p.is_file(),
        "{}: not installed (scripts/setup installs it)",
        p.display()
    );
    p
}

/// Held while a test uses Pebble's fixed ports: one test at a time in this process
/// (a mutex) and across processes (a lock on a file in the temp directory).
struct FixedPorts {
    _file: std::fs::File,
    _guard: MutexGuard<'static, ()>,
}

fn fixed_ports() -> FixedPorts {
    static IN_PROCESS: Mutex<()> = Mutex::new(());
    let guard = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    let path = std::env::temp_dir().join("tlskit-tests-pebble-fixed-ports.lock");
    let file = std::fs::File::create(&path).expect("lock file");
    let t0 = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                assert!(
                    t0.elapsed() < Duration::from_secs(600),
                    "{} held by another process for 10 minutes",
                    path.display()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(std::fs::TryLockError::Error(e)) => panic!("{}: {e}", path.display()),
        }
    }
    FixedPorts {
        _file: file,
        _guard: guard,
    }
}

/// Pebble and pebble-challtestsrv as Pebble's README starts them; killed on drop.
struct Shipped {
    children: Vec<Child>,
    module: PathBuf,
    logs: tempfile::TempDir,
    _ports: FixedPorts,
}

impl Drop for Shipped {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Shipped {
    fn start() -> Self {
        let ports = fixed_ports();
        let module = pebble_module();
        let logs = tempfile::tempdir().expect("tempdir");
        let dir = logs.path().to_path_buf();
        let log = |name: &str| std::fs::File::create(dir.join(name)).expect("log");
        let mut me = Self {
            children: Vec::new(),
            module,
            logs,
            _ports: ports,
        };
        // DNS on :8053 answering 127.0.0.1 for every name; its own challenge servers off.
        let chall = Command::new(go_bin("pebble-challtestsrv"))
            .args([
                "-defaultIPv6",
                "",
                "-http01",
                "",
                "-https01",
                "",
                "-tlsalpn01",
                "",
            ])
            .args(["-doh", ""])
            .stdout(Stdio::null())
            .stderr(log("dns.log"))
            .spawn()
            .expect("spawn pebble-challtestsrv");
        me.children.push(chall);
        let pebble = Command::new(go_bin("pebble"))
            .args(["-config", "test/config/pebble-config.json"])
            .args(["-dnsserver", "127.0.0.1:8053"])
            .current_dir(&me.module)
            .env("PEBBLE_VA_NOSLEEP", "1")
            .stdout(log("pebble.log"))
            .stderr(log("pebble.stderr.log"))
            .spawn()
            .expect("spawn pebble");
        me.children.push(pebble);
        for port in [8055, 14000, 15000] {
            assert!(
                wait_port(port, Duration::from_secs(20)),
                "port {port} not up: {}",
                me.log()
            );
        }
        me
    }

    fn log(&self) -> String {
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap_or_default();
        format!(
            "pebble: {}\nchalltestsrv: {}",
            read("pebble.log"),
            read("dns.log")
        )
    }

    /// Pebble's shipped root, which issued its HTTPS certificate (test/certs/localhost).
    fn minica(&self) -> String {
        s(&self.module.join("test/certs/pebble.minica.pem"))
    }

    /// Pebble's issuing root (made at each start), written to `out`.
    fn issuing_root(&self, out: &Path) {
        let o = Command::new("curl")
            .args(["-sS", "--fail", "--cacert", &self.minica()])
            .arg("https://localhost:15000/roots/0")
            .arg("-o")
            .arg(out)
            .output()
            .expect("curl");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

const DIRECTORY: &str = "https://localhost:14000/dir";

/// `tlskit acme issue` against the shipped Pebble, HTTP-01 on Pebble's port 5002.
fn issue(p: &Shipped, dir: &Path, domain: &str, extra: &[&str]) -> (i32, String, String) {
    let (key, out, storage) = (dir.join("key.pem"), dir.join("chain.pem"), dir.join("acme"));
    let minica = p.minica();
    let mut args = vec![
        "acme",
        "issue",
        "--directory",
        DIRECTORY,
        "--acme-roots",
        &minica,
    ];
    let (key, out, storage) = (s(&key), s(&out), s(&storage));
    args.extend([
        "--acme-storage",
        &storage,
        "--domain",
        domain,
        "--key",
        &key,
        "-o",
        &out,
        "--http-listen",
        "127.0.0.1:5002",
    ]);
    args.extend_from_slice(extra);
    let o = tlskit(&args);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_sentences("tlskit acme issue", &err);
    assert_sentences("tlskit acme issue", &out);
    (o.status.code().unwrap_or(-1), out, err)
}

/// `tlskit acme issue` (HTTP-01) against Pebble as shipped, trusting only Pebble's own
/// minica root, with no profile flag; the chain verifies, also with no flag.
#[test]
fn outbound_pebble_as_shipped_acme_issue_http01_with_no_profile_flag() {
    let p = Shipped::start();
    let t = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = issue(&p, t.path(), "shipped-http.test", &["--json"]);
    assert_eq!(code, 0, "{err}\n{}", p.log());
    let r: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    net_support::assert_matches_schema(&r);
    assert_eq!(r["challenge"], "http-01");
    let root = t.path().join("issuing-root.pem");
    p.issuing_root(&root);
    let v = tlskit(&[
        "verify",
        "--cert",
        &s(&t.path().join("chain.pem")),
        "--roots",
        &s(&root),
        "--host",
        "shipped-http.test",
    ]);
    assert!(v.status.success(), "{}", net_support::run::text(&v));
}

/// `tlskit serve --acme` (TLS-ALPN-01 on Pebble's port 5001) against Pebble as shipped,
/// no profile flag: the certificate is installed and `connect` verifies it.
#[test]
fn outbound_pebble_as_shipped_serve_acme_tls_alpn01_with_no_profile_flag() {
    let p = Shipped::start();
    let t = tempfile::tempdir().expect("tempdir");
    let storage = s(&t.path().join("acme"));
    let minica = p.minica();
    let srv = Serve::start(&[
        "--listen",
        "127.0.0.1:5001",
        "--respond",
        "http",
        "--acme",
        DIRECTORY,
        "--domain",
        "shipped-alpn.test",
        "--acme-storage",
        &storage,
        "--acme-roots",
        &minica,
    ]);
    assert!(
        srv.wait_log("event=acme_certificate_installed", Duration::from_secs(60)),
        "{}\n{}",
        srv.stderr(),
        p.log()
    );
    assert!(
        !srv.stderr().contains("event=acme_failed"),
        "{}",
        srv.stderr()
    );
    let root = t.path().join("issuing-root.pem");
    p.issuing_root(&root);
    let (code, v) = connect_json(&[
        "127.0.0.1:5001",
        "--servername",
        "shipped-alpn.test",
        "--roots",
        &s(&root),
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verified"], true, "{v}");
}

/// README.md's worked Pebble example, taken from README.md and run as written (bash, with
/// the built `tlskit` first on PATH): it issues, and `connect` verifies the certificate.
#[test]
fn outbound_readme_pebble_example_runs_as_written() {
    require("curl");
    let _p = fixed_ports();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let from = readme
        .find("Worked example on one machine")
        .expect("the Pebble example in README.md");
    let rest = &readme[from..];
    let start = rest.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let script = &rest[start..start + rest[start..].find("\n```").expect("block end")];
    // The example names the module version scripts/setup installs.
    assert!(
        script.contains(&format!("pebble/v2@{}", pebble_version())),
        "README's Pebble example and scripts/setup disagree on the version:\n{script}"
    );
    let t = tempfile::tempdir().expect("tempdir");
    let bin_dir = Path::new(BIN).parent().expect("bin dir");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let out = t.path().join("out.txt");
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", script])
        .current_dir(t.path())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(t.path().join("err.txt")).expect("err"));
    // Its own process group: the example's background servers are killed with it.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().expect("bash");
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(120) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(t.path().join("err.txt")).unwrap_or_default();
    let status = status.unwrap_or_else(|| panic!("the example ran 120 s:\n{stdout}\n{stderr}"));
    assert!(
        status.success(),
        "{status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("\"verified\": true"), "{stdout}");
    assert!(
        stdout.contains("event=acme_certificate_installed"),
        "{stdout}"
    );
    assert_sentences("README example", &stdout);
}

/// `--shared-state-ca-profile` and `--shared-state-ca-allow` (flags and config keys)
/// reach the check of a `rediss://` server's certificate: a Redis whose certificate's
/// commonName is not among its subjectAltNames is refused under `webpki`
/// (`cn-not-in-san`, in words), accepted when that rule is allowed, and accepted by the
/// default profile.
#[test]
fn outbound_shared_state_ca_profile_and_allow_reach_the_redis_verifier() {
    require("redis-server");
    use net_support::pki::{webpki_params, Extras, Role};
    let pki = Pki::new();
    let dir = pki.dir.path();
    // Redis's certificate: compliant but for its commonName, which no SAN repeats.
    let root_key = rcgen::KeyPair::generate().expect("key");
    let root = rcgen::CertifiedIssuer::self_signed(
        webpki_params("redis test root", Role::Ca, &[], Extras::default()),
        root_key,
    )
    .expect("root");
    let mut leaf = webpki_params(
        "not-a-san.example",
        Role::Server,
        &["127.0.0.1"],
        Extras::default(),
    );
    leaf.subject_alt_names = vec![rcgen::SanType::IpAddress([127, 0, 0, 1].into())];
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let leaf = leaf.signed_by(&leaf_key, &root).expect("leaf");
    std::fs::write(pki.path("redis.pem"), leaf.pem()).expect("write");
    std::fs::write(pki.path("redis.key"), leaf_key.serialize_pem()).expect("write");
    std::fs::write(pki.path("redis-ca.pem"), root.pem()).expect("write");
    let kek = pki.fleet_kek(0x23);
    let rport = net_support::free_port();
    let _redis = redis_server_tls(
        dir,
        rport,
        &pki.path("redis.pem"),
        &pki.path("redis.key"),
        &pki.path("redis-ca.pem"),
    );
    let url = format!("rediss://fleet:fleet-user-pw@127.0.0.1:{rport}/0");
    let (chain, key, ca, kek) = (
        s(&pki.path("chain.pem")),
        s(&pki.path("leaf.key")),
        s(&pki.path("redis-ca.pem")),
        kek,
    );
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--listen",
            "127.0.0.1:0",
            "--cert",
            &chain,
            "--key",
            &key,
            "--respond",
            "http",
            "--shared-state",
            &url,
            "--shared-state-key",
            &kek,
            "--shared-state-ca",
            &ca,
            "--shared-state-required",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let refused = |extra: &[&str]| {
        let a = args(extra);
        // Bounded: a server that wrongly starts is killed after 30 s.
        let o = Command::new("timeout")
            .args(["30", BIN, "serve"])
            .args(&a)
            .stdin(Stdio::null())
            .output()
            .expect("timeout tlskit serve");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert_sentences("tlskit serve", &err);
        assert!(!err.contains("fleet-user-pw"), "{err}");
        err
    };
    let starts = |extra: &[&str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let srv = Serve::start(&a);
        assert!(
            !srv.stderr().contains("shared_state_unavailable"),
            "{}",
            srv.stderr()
        );
    };
    let err = refused(&["--shared-state-ca-profile", "webpki"]);
    assert!(err.contains("rule cn-not-in-san"), "{err}");
    starts(&[
        "--shared-state-ca-profile",
        "webpki",
        "--shared-state-ca-allow",
        "cn-not-in-san",
    ]);
    // The same through the config file's keys.
    let conf = pki.path("serve.toml");
    std::fs::write(&conf, "shared_state_ca_profile = \"webpki\"\n").expect("write");
    let err = refused(&["--config", &s(&conf)]);
    assert!(err.contains("rule cn-not-in-san"), "{err}");
    std::fs::write(
        &conf,
        "shared_state_ca_profile = \"webpki\"\nshared_state_ca_allow = [\"cn-not-in-san\"]\n",
    )
    .expect("write");
    starts(&["--config", &s(&conf)]);
    // The default profile accepts it (cn-not-in-san is a warning there).
    starts(&[]);
    // The knobs need a rediss:// URL.
    let o = tlskit(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        &chain,
        "--key",
        &key,
        "--shared-state",
        &format!("redis://127.0.0.1:{rport}"),
        "--shared-state-key",
        &kek,
        "--shared-state-ca-profile",
        "webpki",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", net_support::run::text(&o));
}

/// The Debug-shape check catches each shape the issue names, and passes sentences.
#[test]
fn outbound_debug_shape_checker_catches_each_shape() {
    let cases = [
        (
            "reason=\"invalid peer certificate: Other(OtherError(Rule(Violation { rule: EkuInRoot, position: 1",
            vec!["Other(", "Name { field:"],
        ),
        ("error=Os { code: 2, kind: NotFound }", vec!["Name { field:"]),
        ("key=[12, 34, 56, 78]", vec!["[1, 2, 3"]),
        ("value=Some(\"x\")", vec!["Some("]),
        ("result=Err(Timeout)", vec!["Err("]),
    ];
    for (line, want) in cases {
        assert_eq!(debug_shapes(line), want, "{line}");
    }
    for fine in [
        "ts=2026-11-27T07:00:00Z level=warn event=acme_failed reason=\"the CA's certificate was refused: certificate 1 (trust anchor, CN=x): this root certificate carries an extendedKeyUsage extension (rule eku-in-root)\"",
        "listening on [::1]:443",
        "versions=[1.2, 1.3] alpn=[h2, http/1.1]",
        "Another(thing) in a name, TLS { not a struct",
    ] {
        assert_eq!(debug_shapes(fine), Vec::<&str>::new(), "{fine}");
    }
    let r = std::panic::catch_unwind(|| assert_sentences("x", "fine\nErr(e)"));
    assert!(r.is_err());
}

/// A default step-ca (`step ca init`, then `step ca provisioner add acme --type ACME`)
/// with pebble-challtestsrv as its DNS (`--resolver`: every name is 127.0.0.1), in a
/// network namespace of the test's own: step-ca validates on ports 80 and 443, which the
/// namespace's loopback gives every test without touching the host's. Killed and removed
/// on drop.
struct StepCa {
    ns: String,
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Drop for StepCa {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.ns])
            .stderr(Stdio::null())
            .status();
    }
}

const STEP_DIRECTORY: &str = "https://localhost:9000/acme/acme/directory";

impl StepCa {
    /// None (said on stderr) where this machine cannot run it (not root, no network
    /// namespaces), outside CI; under CI=true that fails the test. A missing step or
    /// step-ca fails it everywhere: scripts/setup installs them.
    fn start(test: &str) -> Option<Self> {
        let (step, step_ca) = (go_bin("step"), go_bin("step-ca"));
        let uid = Command::new("id").arg("-u").output().expect("id");
        if uid.stdout != b"0\n" {
            net_support::cannot_run(test, "not root (a network namespace is needed)");
            return None;
        }
        require("ip");
        require("curl");
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let ns = format!(
            "tkstep{}x{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let ok = |c: &mut Command| c.status().map(|s| s.success()).unwrap_or(false);
        if !ok(Command::new("ip").args(["netns", "add", &ns])) {
            net_support::cannot_run(test, "cannot create a network namespace");
            return None;
        }
        let mut me = Self {
            ns,
            dir: tempfile::tempdir().expect("tempdir"),
            children: Vec::new(),
        };
        assert!(ok(Command::new("ip").args([
            "netns", "exec", &me.ns, "ip", "link", "set", "lo", "up"
        ])));
        let d = me.dir.path().to_path_buf();
        std::fs::write(d.join("pw"), "tlskit-test-password\n").expect("pw");
        let steppath = d.join("step");
        let step_cmd = |args: &[&str]| {
            let o = Command::new(&step)
                .args(args)
                .env("STEPPATH", &steppath)
                .current_dir(&d)
                .stdin(Stdio::null())
                .output()
                .expect("step");
            assert!(
                o.status.success(),
                "step {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        step_cmd(&[
            "ca",
            "init",
            "--name",
            "tlskit test CA",
            "--dns",
            "localhost",
            "--address",
            "127.0.0.1:9000",
            "--provisioner",
            "admin",
            "--password-file",
            "pw",
            "--provisioner-password-file",
            "pw",
        ]);
        step_cmd(&["ca", "provisioner", "add", "acme", "--type", "ACME"]);
        let log = |name: &str| std::fs::File::create(d.join(name)).expect("log");
        let chall = Command::new("ip")
            .args(["netns", "exec", &me.ns])
            .arg(go_bin("pebble-challtestsrv"))
            .args([
                "-defaultIPv6",
                "",
                "-http01",
                "",
                "-https01",
                "",
                "-tlsalpn01",
                "",
            ])
            .args(["-doh", ""])
            .stdout(Stdio::null())
            .stderr(log("dns.log"))
            .spawn()
            .expect("spawn pebble-challtestsrv");
        me.children.push(chall);
        let ca = Command::new("ip")
            .args(["netns", "exec", &me.ns])
            .arg(&step_ca)
            .arg(steppath.join("config/ca.json"))
            .arg("--password-file")
            .arg(d.join("pw"))
            .args(["--resolver", "127.0.0.1:8053"])
            .stdout(Stdio::null())
            .stderr(log("step-ca.log"))
            .spawn()
            .expect("spawn step-ca");
        me.children.push(ca);
        let t0 = Instant::now();
        loop {
            let up = me
                .exec("curl")
                .args(["-s", "--fail", "-o", "/dev/null", "--cacert", &me.root()])
                .arg("https://localhost:9000/health")
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if up {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "step-ca not up: {}",
                me.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(me)
    }

    /// A command run inside the namespace.
    fn exec(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).arg(program);
        c
    }

    /// The root `step ca init` made (it issued step-ca's own HTTPS certificate too).
    fn root(&self) -> String {
        s(&self.dir.path().join("step/certs/root_ca.crt"))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("step-ca.log")).unwrap_or_default()
    }
}

/// `tlskit acme issue` (HTTP-01 on port 80) against a default step-ca with no profile
/// flag; under `--acme-roots-profile webpki` step-ca's own HTTPS certificate
/// (`CN=Step Online CA`, not a SAN) is refused with a sentence, as issue 23 found.
#[test]
fn outbound_step_ca_default_acme_issue_http01_with_no_profile_flag() {
    let test = "outbound_step_ca_default_acme_issue_http01_with_no_profile_flag";
    let Some(ca) = StepCa::start(test) else {
        return;
    };
    let t = tempfile::tempdir().expect("tempdir");
    let (key, chain, storage) = (
        s(&t.path().join("key.pem")),
        s(&t.path().join("chain.pem")),
        s(&t.path().join("acme")),
    );
    let root = ca.root();
    let run = |extra: &[&str]| {
        let o = ca
            .exec("timeout")
            .args(["60", BIN, "acme", "issue", "--directory", STEP_DIRECTORY])
            .args(["--acme-roots", &root, "--acme-storage", &storage])
            .args(["--domain", "step-http.test", "--key", &key, "-o", &chain])
            .args(["--http-listen", "127.0.0.1:80"])
            .args(extra)
            .output()
            .expect("tlskit acme issue");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_sentences("tlskit acme issue", &err);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            err,
        )
    };
    let (code, _, err) = run(&["--acme-roots-profile", "webpki"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rule cn-not-in-san"), "{err}");
    let (code, out, err) = run(&["--json"]);
    assert_eq!(code, Some(0), "{err}\nstep-ca: {}", ca.log());
    let r: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(r["challenge"], "http-01");
    let v = tlskit(&[
        "verify",
        "--cert",
        &chain,
        "--roots",
        &root,
        "--host",
        "step-http.test",
    ]);
    assert!(v.status.success(), "{}", net_support::run::text(&v));
}

/// `tlskit serve --acme` (TLS-ALPN-01 on port 443) against a default step-ca with no
/// profile flag: the certificate is installed and `connect` verifies it.
#[test]
fn outbound_step_ca_default_serve_acme_tls_alpn01_with_no_profile_flag() {
    let test = "outbound_step_ca_default_serve_acme_tls_alpn01_with_no_profile_flag";
    let Some(ca) = StepCa::start(test) else {
        return;
    };
    let t = tempfile::tempdir().expect("tempdir");
    let storage = s(&t.path().join("acme"));
    let root = ca.root();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ca.ns, BIN]);
    let srv = Serve::start_with(
        cmd,
        &[
            "--listen",
            "127.0.0.1:443",
            "--respond",
            "http",
            "--acme",
            STEP_DIRECTORY,
            "--domain",
            "step-alpn.test",
            "--acme-storage",
            &storage,
            "--acme-roots",
            &root,
        ],
        1,
    );
    assert!(
        srv.wait_log("event=acme_certificate_installed", Duration::from_secs(60)),
        "{}\nstep-ca: {}",
        srv.stderr(),
        ca.log()
    );
    let o = ca
        .exec(BIN)
        .args(["connect", "127.0.0.1:443", "--servername", "step-alpn.test"])
        .args(["--roots", &root, "--json"])
        .stdin(Stdio::null())
        .output()
        .expect("connect");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    assert_eq!(o.status.code(), Some(0), "{}", net_support::run::text(&o));
    assert_eq!(v["verified"], true, "{v}");
}

/// `--acme-roots-profile` and `--acme-roots-allow` reach the verifier of the CA's HTTPS,
/// for `acme issue` and for `serve --acme` (flags and config keys): under `webpki` a
/// default step-ca's own HTTPS certificate (`CN=Step Online CA`, not among its SANs) is
/// refused (`cn-not-in-san`), said as a sentence (before issue 23:
/// `Other(OtherError(Rule(Violation { ...`), and allowing that rule lifts the refusal.
#[test]
fn outbound_acme_roots_profile_and_allow_reach_the_ca_verifier() {
    let test = "outbound_acme_roots_profile_and_allow_reach_the_ca_verifier";
    let Some(ca) = StepCa::start(test) else {
        return;
    };
    let t = tempfile::tempdir().expect("tempdir");
    let (key, chain, storage) = (
        s(&t.path().join("key.pem")),
        s(&t.path().join("chain.pem")),
        s(&t.path().join("acme")),
    );
    let root = ca.root();
    let issue = |extra: &[&str]| {
        let o = ca
            .exec("timeout")
            .args(["60", BIN, "acme", "issue", "--directory", STEP_DIRECTORY])
            .args(["--acme-roots", &root, "--acme-storage", &storage])
            .args(["--domain", "knob.test", "--key", &key, "-o", &chain])
            .args(["--http-listen", "127.0.0.1:80"])
            .args(extra)
            .output()
            .expect("tlskit acme issue");
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_sentences("tlskit acme issue", &err);
        (o.status.code(), err)
    };
    let (code, err) = issue(&["--acme-roots-profile", "webpki"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("rule cn-not-in-san") && err.contains("refused"),
        "{err}"
    );
    let (code, err) = issue(&[
        "--acme-roots-profile",
        "webpki",
        "--acme-roots-allow",
        "cn-not-in-san",
    ]);
    assert_eq!(code, Some(0), "{err}\nstep-ca: {}", ca.log());

    // serve --acme: the flag, then the config keys.
    let storage = s(&t.path().join("serve-acme"));
    let base = [
        "--listen",
        "127.0.0.1:443",
        "--respond",
        "http",
        "--acme",
        STEP_DIRECTORY,
        "--domain",
        "knob-serve.test",
        "--acme-storage",
        &storage,
        "--acme-roots",
        &root,
    ];
    let in_ns = || {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ca.ns, BIN]);
        c
    };
    let mut args = base.to_vec();
    args.extend(["--acme-roots-profile", "webpki"]);
    let srv = Serve::start_with(in_ns(), &args, 1);
    assert!(
        srv.wait_log("event=acme_failed", Duration::from_secs(30)),
        "{}",
        srv.stderr()
    );
    let failed = srv
        .stderr()
        .lines()
        .find(|l| l.contains("event=acme_failed"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(failed.contains("rule cn-not-in-san"), "{failed}");
    drop(srv);
    let conf = t.path().join("serve.toml");
    std::fs::write(
        &conf,
        "acme_roots_profile = \"webpki\"\nacme_roots_allow = [\"cn-not-in-san\"]\n",
    )
    .expect("write");
    let mut args = base.to_vec();
    let conf = s(&conf);
    args.extend(["--config", &conf]);
    let srv = Serve::start_with(in_ns(), &args, 1);
    assert!(
        srv.wait_log("event=acme_certificate_installed", Duration::from_secs(60)),
        "{}\nstep-ca: {}",
        srv.stderr(),
        ca.log()
    );
    drop(srv);
    // A bad rule in the file is a configuration error.
    std::fs::write(&conf, "acme_roots_allow = [\"no-such-rule\"]\n").expect("write");
    let mut args = base.to_vec();
    args.extend(["--config", &conf]);
    let o = tlskit(&[&["serve"], &args[..]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", net_support::run::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("acme_roots_allow"),
        "{}",
        net_support::run::text(&o)
    );
}
