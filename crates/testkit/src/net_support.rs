//! Shared helpers of the net tests: a test PKI made with rcgen, a `tlskit serve` child
//! process that is killed on drop, and small utilities. Every test uses its own temp dir
//! and port 0 (the server reports the port it got in its `listening on` line). The
//! command runner is [`crate::run`], the one every test binary uses.

pub use crate::run;
pub use crate::run::tlskit;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::pki;
use pki::{webpki_params, Extras, Role};

use rcgen::{CertificateParams, CertifiedIssuer, KeyPair};

/// The net PKI's additions to the webpki profile: digitalSignature on every certificate,
/// basicConstraints cA=FALSE on a leaf, rcgen's validity (1975 to 4096).
const NET: Extras = Extras {
    years: None,
    digital_signature: true,
    explicit_no_ca: true,
};

fn ca_params(cn: &str) -> CertificateParams {
    webpki_params(cn, Role::Ca, &[], NET)
}

/// A server leaf (its CN a SAN too) or, with `client`, a client leaf.
fn leaf_params(cn: &str, names: &[String], client: bool) -> CertificateParams {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let role = if client { Role::Client } else { Role::Server };
    webpki_params(cn, role, &names, NET)
}

fn p256() -> KeyPair {
    KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("keygen")
}

fn write(path: &Path, data: &str) {
    std::fs::write(path, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A test PKI on disk.
pub struct Pki {
    /// The directory the files are written to (removed on drop).
    pub dir: tempfile::TempDir,
    root: CertifiedIssuer<'static, KeyPair>,
    inter: CertifiedIssuer<'static, KeyPair>,
    client_root: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    /// Root → intermediate → server leaf (`chain.pem`/`leaf.key`, names test.example,
    /// localhost, 127.0.0.1); a separate client root (`client-ca.pem`) with a client
    /// certificate (`client.pem`/`client.key`); an unrelated root (`other-ca.pem`).
    #[allow(clippy::new_without_default)] // a PKI on disk, made anew each time: no default
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root =
            CertifiedIssuer::self_signed(ca_params("tlskit test root"), p256()).expect("root");
        let inter =
            CertifiedIssuer::signed_by(ca_params("tlskit test intermediate"), p256(), &root)
                .expect("inter");
        let client_root =
            CertifiedIssuer::self_signed(ca_params("tlskit client root"), p256()).expect("croot");
        let other =
            CertifiedIssuer::self_signed(ca_params("unrelated root"), p256()).expect("other");
        let pki = Self {
            dir,
            root,
            inter,
            client_root,
        };
        write(&pki.path("ca.pem"), &pki.root.pem());
        write(&pki.path("client-ca.pem"), &pki.client_root.pem());
        write(&pki.path("other-ca.pem"), &other.pem());
        pki.server_leaf(
            "chain.pem",
            "leaf.key",
            "test.example",
            &["test.example", "localhost", "127.0.0.1"],
        );
        let ck = p256();
        let cp = leaf_params("tlskit test client", &[], true);
        let c = cp.signed_by(&ck, &pki.client_root).expect("client");
        write(&pki.path("client.pem"), &c.pem());
        write(&pki.path("client.key"), &ck.serialize_pem());
        pki
    }

    /// The path of `name` in [`Pki::dir`].
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A fleet's key-encryption key file `fleet.kek` (32 bytes of `byte`, mode 0600, as
    /// `--shared-state-key` requires); its path as text.
    pub fn fleet_kek(&self, byte: u8) -> String {
        kek_file(self.dir.path(), &[byte; 32])
            .to_string_lossy()
            .into_owned()
    }

    /// Write a server leaf (signed by the intermediate) + intermediate as `chain`, key as `key`.
    pub fn server_leaf(&self, chain: &str, key: &str, cn: &str, names: &[&str]) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        self.server_leaf_owned(chain, key, cn, &names)
    }

    /// [`Pki::server_leaf`] with the names as owned strings.
    pub fn server_leaf_owned(&self, chain: &str, key: &str, cn: &str, names: &[String]) {
        let k = p256();
        let c = leaf_params(cn, names, false)
            .signed_by(&k, &self.inter)
            .expect("leaf");
        write(
            &self.path(chain),
            &format!("{}{}", c.pem(), self.inter.pem()),
        );
        write(&self.path(key), &k.serialize_pem());
    }

    /// Another client certificate from the client root, as `NAME.pem`/`NAME.key` (a chain
    /// the server has not verified before: its verification must consult the store).
    pub fn client_cert(&self, name: &str) {
        let k = p256();
        let c = leaf_params(name, &[], true)
            .signed_by(&k, &self.client_root)
            .expect("client");
        write(&self.path(&format!("{name}.pem")), &c.pem());
        write(&self.path(&format!("{name}.key")), &k.serialize_pem());
    }

    /// Like [`Pki::server_leaf`], valid from `not_before` to `not_after` (whole seconds).
    pub fn server_leaf_valid(
        &self,
        chain: &str,
        key: &str,
        names: &[&str],
        not_before: time::OffsetDateTime,
        not_after: time::OffsetDateTime,
    ) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let k = p256();
        let mut p = leaf_params(&names[0], &names, false);
        p.not_before = not_before;
        p.not_after = not_after;
        let c = p.signed_by(&k, &self.inter).expect("leaf");
        write(
            &self.path(chain),
            &format!("{}{}", c.pem(), self.inter.pem()),
        );
        write(&self.path(key), &k.serialize_pem());
    }

    /// A leaf with `n` extra DNS names (about 31 bytes each): a long, compressible chain.
    pub fn long_chain(&self, chain: &str, key: &str, n: usize) {
        let mut names: Vec<String> = vec![
            "test.example".into(),
            "localhost".into(),
            "127.0.0.1".into(),
        ];
        names.extend((0..n).map(|i| format!("host-{i:05}.long-chain.tlskit.example")));
        self.server_leaf_owned(chain, key, "test.example", &names);
    }

    /// Total DER bytes of the certificates in a PEM file.
    pub fn der_bytes(&self, chain: &str) -> usize {
        let text = std::fs::read_to_string(self.path(chain)).expect("read chain");
        let mut total = 0;
        for block in text.split("-----BEGIN CERTIFICATE-----").skip(1) {
            let b64: String = block
                .split("-----END CERTIFICATE-----")
                .next()
                .unwrap_or("")
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            total += b64.len() / 4 * 3 - b64.chars().rev().take_while(|c| *c == '=').count();
        }
        total
    }
}

/// A running `tlskit serve`, killed on drop.
pub struct Serve {
    /// The child process (its own process group).
    pub child: Child,
    /// The addresses of its `listening on` lines, in the order logged.
    pub addrs: Vec<SocketAddr>,
    /// How long it took from spawn to the last awaited `listening on` line.
    pub ready_after: Duration,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    /// Start `tlskit serve ARGS` (with `--listen 127.0.0.1:0` unless ARGS has --listen or
    /// --config) and wait for every `listening on` line.
    pub fn start(args: &[&str]) -> Self {
        Self::start_with(Command::new(run::bin()), args, 1)
    }

    /// [`Serve::start`] from `cmd` (a `tlskit` binary, or a wrapper such as `ip netns exec`
    /// whose arguments end in one), waiting for `listens` `listening on` lines.
    pub fn start_with(mut cmd: Command, args: &[&str], listens: usize) -> Self {
        cmd.arg("serve");
        if !args.iter().any(|a| *a == "--listen" || *a == "--config") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Its own process group: when wrapped (strace, ip netns exec), drop kills the
        // wrapper and tlskit together.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let t0 = Instant::now();
        let mut child = cmd.spawn().expect("spawn tlskit serve");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let keep = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("listening on ") {
                    let _ = tx.send(a.parse::<SocketAddr>().expect("address in ready line"));
                }
                keep.lock().expect("lines").push(line);
            }
        });
        let mut addrs = Vec::new();
        while addrs.len() < listens {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(a) => addrs.push(a),
                Err(_) => {
                    let _ = child.kill();
                    let out = lines.lock().expect("lines").join("\n");
                    panic!("tlskit serve did not become ready: {out}");
                }
            }
        }
        let ready_after = t0.elapsed();
        Self {
            child,
            addrs,
            ready_after,
            lines,
        }
    }

    /// The first listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// The first listening address's port.
    pub fn port(&self) -> u16 {
        self.addr().port()
    }

    /// Its stderr so far (the lines the reader thread has collected), joined by newlines.
    pub fn stderr(&self) -> String {
        self.lines.lock().expect("lines").join("\n")
    }

    /// The process id of what was started (a wrapper such as strace when there is one).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send signal `sig` (`HUP`, `TERM`, ...) with `kill`; panics when `kill` fails.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(st.success());
    }

    /// HOST:PORT of the metrics endpoint (its line follows the `listening on` lines).
    pub fn metrics_addr(&self) -> String {
        assert!(
            self.wait_log("metrics on http://", Duration::from_secs(10)),
            "{}",
            self.stderr()
        );
        self.stderr()
            .lines()
            .find_map(|l| l.strip_prefix("metrics on http://"))
            .map(|a| a.trim_end_matches("/metrics").to_string())
            .expect("metrics line")
    }

    /// SIGHUP and wait until the reload it caused is logged.
    pub fn reload(&self) {
        let before = self.stderr().matches("event=reloaded").count();
        self.signal("HUP");
        let t = Instant::now();
        while self.stderr().matches("event=reloaded").count() <= before {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "no reload logged: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for the process to exit (up to `limit`), returning its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let t = Instant::now();
        while t.elapsed() < limit {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Wait until stderr contains `needle` more than `seen` times (the log is read by a
    /// thread of its own: a line the server wrote may not be in `stderr()` yet).
    pub fn wait_log_more(&self, needle: &str, seen: usize, limit: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if self.stderr().matches(needle).count() > seen {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Wait until stderr contains `needle`.
    pub fn wait_log(&self, needle: &str, limit: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Every line the server logged is a sentence: no Rust Debug output (checked when
        // the test has not failed already, so a failure is not hidden by a second panic).
        if !std::thread::panicking() {
            assert_sentences("tlskit serve", &self.stderr());
        }
    }
}

/// `tlskit connect ... --json` → (exit code, JSON).
pub fn connect_json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["connect"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = tlskit(&all);
    let code = out.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    if code == 2 {
        eprintln!("connect stderr: {}", String::from_utf8_lossy(&out.stderr));
    }
    (code, v)
}

/// A port that was free a moment ago (for peers that cannot report theirs).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Wait until something accepts TCP on 127.0.0.1:port.
pub fn wait_port(port: u16, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

/// Fail the test unless `program` is installed: `scripts/test` installs every peer the
/// tests use (scripts/setup), so a missing one is a broken set-up, never a reason to pass.
#[track_caller]
pub fn require(program: &str) {
    assert!(
        have(program),
        "{program} is not installed: scripts/setup installs the test peers"
    );
}

/// A test that cannot run on this machine (`why`: not root, no /dev/net/tun, ...): a
/// failure under `CI=true`, where the machine is set up for it; elsewhere (a developer
/// without root) it says so on stderr and the caller returns early.
#[track_caller]
pub fn cannot_run(test: &str, why: &str) {
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "{test} cannot run under CI=true: {why}"
    );
    eprintln!("{test}: not run on this machine: {why}");
}

/// Whether `program` is on PATH (`command -v`).
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null 2>&1")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A child process killed on drop.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// VmRSS of a process in KiB.
pub fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The value of the metric line starting with `name` (labels included) in a Prometheus text.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// GET /metrics from `addr` (HOST:PORT).
pub fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).expect("connect metrics");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .expect("write");
    let mut out = String::new();
    c.read_to_string(&mut out).expect("read");
    out
}

/// A ClientHello handshake message of `size` bytes (a valid start, zero padding), in
/// records of at most 16,384 bytes, with its last byte cut off: the server waits for it.
pub fn partial_client_hello(size: usize) -> Vec<u8> {
    let mut body = vec![3, 3];
    body.extend_from_slice(&[0x5a; 32]);
    body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    body.resize(size - 4, 0);
    let mut hs = vec![1u8];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(&body);
    let mut wire = Vec::new();
    for frag in hs.chunks(16 * 1024) {
        wire.extend_from_slice(&[22, 3, 1]);
        wire.extend_from_slice(&(frag.len() as u16).to_be_bytes());
        wire.extend_from_slice(frag);
    }
    wire.pop();
    wire
}

/// A blocking rustls client connection to the test server (`test.example`, roots `ca`).
pub fn tls_connect(
    addr: SocketAddr,
    ca: &Path,
) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).expect("ca.pem") {
        roots
            .add(c.expect("a certificate in ca.pem"))
            .expect("root");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("test.example").expect("name");
    let mut conn = rustls::ClientConnection::new(Arc::new(cfg), name).expect("client");
    let mut sock = std::net::TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    conn.complete_io(&mut sock).expect("handshake");
    rustls::StreamOwned::new(conn, sock)
}

/// Read until the peer closes (EOF, close_notify, reset) or `limit` passes; returns the
/// bytes and whether it closed.
pub fn read_until_close<R: std::io::Read>(r: &mut R, limit: Duration) -> (Vec<u8>, bool) {
    let t = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while t.elapsed() < limit {
        match r.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

/// Check a `--json` document against the JSON Schema its `schema` field names
/// (`tlskit.acme.issue/1` -> docs/schemas/acme.issue.schema.json), failing the test with
/// every violation.
#[track_caller]
pub fn assert_matches_schema(v: &serde_json::Value) {
    let name = v["schema"]
        .as_str()
        .and_then(|s| s.strip_prefix("tlskit."))
        .and_then(|s| s.strip_suffix("/1"))
        .unwrap_or_else(|| panic!("no schema field: {v}"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{v}");
}

/// Start `redis-server` with `args` plus what every test server has (loopback only, no
/// persistence: a restart comes back empty, the worst case; files in `dir`) and wait until
/// `port` accepts.
fn spawn_redis(dir: &Path, port: u16, args: &mut Command, what: &str) -> Guard {
    let g = Guard(
        args.args([
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server"),
    );
    assert!(wait_port(port, Duration::from_secs(10)), "{what} not up");
    g
}

/// A fleet's key-encryption key file `fleet.kek` in `dir` holding `contents` (32 bytes, or
/// their 64 hex digits), mode 0600 as `--shared-state-key` requires; its path.
pub fn kek_file(dir: &std::path::Path, contents: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let kek = dir.join("fleet.kek");
    std::fs::write(&kek, contents).expect("kek");
    std::fs::set_permissions(&kek, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    kek
}

/// What a fleet of `serve --shared-state` nodes shares in a test: a redis-server of the
/// test's own ([`redis_server`]: password `fleet-pw`, its files in `dir`), the URL the
/// nodes are given and a key-encryption key file ([`kek_file`]), that is what
/// `--shared-state URL --shared-state-key FILE` take. Redis is killed on drop, before
/// `dir` is removed.
pub struct FleetState {
    /// The redis-server (declared first: dropped before `dir`).
    _redis: Guard,
    /// Redis's port on 127.0.0.1.
    pub port: u16,
    /// `redis://:fleet-pw@127.0.0.1:PORT/0`.
    pub url: String,
    /// The key-encryption key file, `dir/fleet.kek` (mode 0600).
    pub kek: PathBuf,
    /// The test's temporary directory (Redis's and the key file's; free for the test's
    /// own files).
    pub dir: tempfile::TempDir,
}

impl FleetState {
    /// Start Redis on a free port with a key file holding `kek` (32 bytes or 64 hex
    /// digits); fails the test when redis-server is not installed.
    #[track_caller]
    pub fn start(kek: &[u8]) -> FleetState {
        require("redis-server");
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let redis = redis_server(dir.path(), port);
        let kek = kek_file(dir.path(), kek);
        FleetState {
            _redis: redis,
            port,
            url: format!("redis://:fleet-pw@127.0.0.1:{port}/0"),
            kek,
            dir,
        }
    }
}

/// A redis-server of the test's own: loopback, random port, a password, no persistence.
pub fn redis_server(dir: &std::path::Path, port: u16) -> Guard {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--requirepass", "fleet-pw"]);
    spawn_redis(dir, port, &mut cmd, "redis-server")
}

/// A redis-server of the test's own speaking TLS only (`--port 0`, `--tls-port PORT`),
/// its certificate `chain`/`key` (test PKI), clients not asked for certificates, an ACL
/// user `fleet` with password `fleet-user-pw`, no persistence.
pub fn redis_server_tls(
    dir: &std::path::Path,
    port: u16,
    chain: &Path,
    key: &Path,
    ca: &Path,
) -> Guard {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", "0", "--tls-port", &port.to_string()])
        .arg("--tls-cert-file")
        .arg(chain)
        .arg("--tls-key-file")
        .arg(key)
        .arg("--tls-ca-cert-file")
        .arg(ca)
        .args([
            "--tls-auth-clients",
            "no",
            // One word per argument: redis-server quotes an argument with spaces.
            "--user",
            "fleet",
            "on",
            ">fleet-user-pw",
            "~*",
            "&*",
            "+@all",
            "--user",
            "default",
            "off",
        ]);
    spawn_redis(dir, port, &mut cmd, "redis-server (TLS)")
}

/// A "Redis" that accepts connections and never answers (packets dropped): returns its
/// port. The listener thread lives until the test process ends.
pub fn black_hole() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().map_while(Result::ok) {
            held.push(c);
        }
    });
    port
}

/// The Rust `Debug` shapes that must never reach a log line, an error message or a JSON
/// field (issue 23): `Name { field: ...`, `Other(`, `Some(`, `Err(`, `Ok(`, and byte
/// arrays `[12, 34, 56`. Returns the shapes found in `line`.
pub fn debug_shapes(line: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for (token, shape) in [
        ("Other(", "Other("),
        ("Some(", "Some("),
        ("Err(", "Err("),
        ("Ok(", "Ok("),
    ] {
        // A whole word: `Other(` but not `nOther(`.
        let hit = line.match_indices(token).any(|(i, _)| {
            !line[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if hit {
            found.push(shape);
        }
    }
    if struct_shape(line) {
        found.push("Name { field:");
    }
    if byte_array(line) {
        found.push("[1, 2, 3");
    }
    found
}

/// `Ident { ident:` — a struct printed with `{:?}`.
fn struct_shape(line: &str) -> bool {
    line.match_indices(" { ").any(|(i, _)| {
        let before = line[..i]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        let after = &line[i + 3..];
        let field: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        before.starts_with(|c: char| c.is_ascii_uppercase())
            && !field.is_empty()
            && after[field.len()..].starts_with(": ")
    })
}

/// `[12, 34, 56` — three or more small integers in brackets (a byte array printed with
/// `{:?}`).
fn byte_array(line: &str) -> bool {
    line.match_indices('[').any(|(i, _)| {
        let mut n = 0;
        for part in line[i + 1..].split(", ") {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() || digits.len() > 3 {
                break;
            }
            n += 1;
            if n >= 3 {
                return true;
            }
            if digits.len() != part.len() {
                break;
            }
        }
        false
    })
}

/// Fail when any line of `text` (what `who` logged or printed) has a Debug shape.
#[track_caller]
pub fn assert_sentences(who: &str, text: &str) {
    let bad: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let s = debug_shapes(l);
            (!s.is_empty()).then(|| format!("{s:?} in: {l}"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{who} wrote Rust Debug output instead of sentences:\n{}",
        bad.join("\n")
    );
}
