//! Issue 26, DNS-01 end to end with real components: BIND's `named` (its own
//! configuration, zone and `tsig-keygen` key in a temporary directory, an unprivileged
//! high port, dynamic updates allowed for the key) as the authoritative server, and Pebble
//! started with `-dnsserver` pointing at it, so Pebble's DNS-01 validation reads the TXT
//! records tlskit wrote. Slow tier; under CI=true a missing named, Pebble, dig, nsupdate,
//! curl or redis-server fails the tests.

use crate::net_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::acme::Pebble;
use net_support::{free_port, require, tlskit, Serve};

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `named` serving `example.test` (SOA, NS ns.example.test = 127.0.0.1) on a free port,
/// accepting TSIG-signed updates of TXT records from the key in `key`; killed on drop.
pub(crate) struct Named {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
    pub(crate) key: PathBuf,
}

impl Drop for Named {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Named {
    pub(crate) fn start() -> Self {
        require("named");
        require("tsig-keygen");
        require("dig");
        for _ in 0..4 {
            if let Some(n) = Self::try_start() {
                return n;
            }
        }
        panic!("named did not start in 4 tries (ports taken?)");
    }

    /// A temporary directory named may read and write: where AppArmor confines named
    /// (Debian's profile), under /var/lib/bind, which the profile opens to it; else /tmp.
    fn work_dir() -> tempfile::TempDir {
        let confined = std::fs::read_to_string("/sys/module/apparmor/parameters/enabled")
            .is_ok_and(|s| s.trim() == "Y")
            && Path::new("/etc/apparmor.d/usr.sbin.named").exists();
        if confined {
            if let Ok(d) = tempfile::Builder::new()
                .prefix("tlskit-test-")
                .tempdir_in("/var/lib/bind")
            {
                return d;
            }
        }
        tempfile::tempdir().expect("tempdir")
    }

    fn try_start() -> Option<Self> {
        let dir = Self::work_dir();
        let d = dir.path();
        let key = d.join("acme-update.key");
        let out = Command::new("tsig-keygen")
            .args(["-a", "hmac-sha256", "acme-update"])
            .output()
            .expect("tsig-keygen");
        assert!(out.status.success(), "tsig-keygen failed");
        std::fs::write(&key, &out.stdout).expect("write key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::write(
            d.join("example.test.zone"),
            "$TTL 60\n\
             @ IN SOA ns.example.test. hostmaster.example.test. 1 60 60 600 60\n\
             @ IN NS ns.example.test.\n\
             ns IN A 127.0.0.1\n\
             www IN A 127.0.0.1\n",
        )
        .expect("zone");
        let port = free_port();
        let conf = format!(
            "include \"{dir}/acme-update.key\";\n\
             options {{ directory \"{dir}\"; pid-file \"{dir}/named.pid\";\n\
               listen-on port {port} {{ 127.0.0.1; }}; listen-on-v6 {{ none; }};\n\
               recursion no; dnssec-validation no; }};\n\
             controls {{ }};\n\
             zone \"example.test\" {{ type primary; file \"{dir}/example.test.zone\";\n\
               update-policy {{ grant acme-update zonesub TXT; }}; }};\n",
            dir = d.display()
        );
        std::fs::write(d.join("named.conf"), conf).expect("conf");
        let log = std::fs::File::create(d.join("named.log")).expect("log");
        let child = Command::new("named")
            .args(["-g", "-c"])
            .arg(d.join("named.conf"))
            .args(["-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn named");
        let mut n = Self {
            dir,
            child,
            port,
            key,
        };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if n.child.try_wait().ok().flatten().is_some() {
                eprintln!("named exited: {}", n.log());
                return None;
            }
            if n.dig("example.test", "SOA").contains("hostmaster") {
                return Some(n);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("named did not answer: {}", n.log());
    }

    pub(crate) fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("named.log")).unwrap_or_default()
    }

    /// `dig +short` at this server.
    fn dig(&self, name: &str, rtype: &str) -> String {
        let o = Command::new("dig")
            .args([
                "+short",
                "+time=2",
                "+tries=1",
                "-p",
                &self.port.to_string(),
            ])
            .arg("@127.0.0.1")
            .args([name, rtype])
            .output()
            .expect("dig");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The TXT values at `_acme-challenge.example.test` (empty when none).
    fn challenge_txt(&self) -> String {
        self.dig("_acme-challenge.example.test", "TXT")
    }

    /// Add a TXT record with nsupdate and this server's key (a record another run left).
    fn nsupdate_add(&self, name: &str, value: &str) {
        require("nsupdate");
        let script = format!(
            "server 127.0.0.1 {}\nzone example.test\nupdate add {name} 60 TXT \"{value}\"\nsend\n",
            self.port
        );
        let mut c = Command::new("nsupdate")
            .arg("-k")
            .arg(&self.key)
            .stdin(Stdio::piped())
            .spawn()
            .expect("nsupdate");
        use std::io::Write;
        c.stdin
            .take()
            .expect("stdin")
            .write_all(script.as_bytes())
            .expect("write");
        assert!(c.wait().expect("wait").success());
    }
}

/// `tlskit ARGS` → (exit code, stdout, stderr), stderr checked to be sentences.
fn run(args: &[&str]) -> (i32, String, String) {
    let o = tlskit(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    net_support::assert_sentences("tlskit acme", &err);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        err,
    )
}

/// The DNS names in a certificate file's SAN, sorted.
fn sans(pem: &Path) -> Vec<String> {
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
        .arg(pem)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut v: Vec<String> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|w| w.strip_prefix("DNS:"))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// The contract form of issue 26, verbatim, then a wildcard + apex order in one renewal;
/// the records are gone from the zone afterwards, and the bookkeeping is empty.
#[test]
fn acme_dns01_wildcard_via_rfc2136_exact_form() {
    let named = Named::start();
    let p = Pebble::start_dns(&named.addr());
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    let cert = t.path().join("cert.pem");
    let key = t.path().join("key.pem");
    let (dir, roots, st, ns, k, c, kf) = (
        p.directory(),
        s(&p.roots),
        s(&storage),
        named.addr(),
        s(&named.key),
        s(&cert),
        s(&key),
    );
    let t0 = Instant::now();
    let (code, out, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st,
        "--domain",
        "*.example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &k,
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    let first = t0.elapsed();
    assert_eq!(
        code,
        0,
        "{out}\n{err}\npebble: {}\nnamed: {}",
        p.log(),
        named.log()
    );
    assert!(out.contains("challenge: dns-01"), "{out}");
    eprintln!("time to first certificate with DNS-01 (Pebble + named): {first:?}");
    assert_eq!(sans(&cert), vec!["*.example.test".to_string()]);
    assert_eq!(named.challenge_txt(), "", "records left in the zone");
    let secret = std::fs::read_to_string(&named.key).expect("key");
    let secret = secret.split('"').nth(3).expect("secret in key file");
    assert!(!err.contains(secret) && !out.contains(secret));

    // The same form with the apex too, into new files: one order, two names.
    let (c2, k2) = (s(&t.path().join("both.pem")), s(&t.path().join("both.key")));
    let (code, out, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &k,
        "-o",
        &c2,
        "--key",
        &k2,
    ]);
    assert_eq!(code, 0, "{out}\n{err}\npebble: {}", p.log());
    assert_eq!(
        sans(Path::new(&c2)),
        vec!["*.example.test".to_string(), "example.test".to_string()]
    );
    assert_eq!(named.challenge_txt(), "", "records left in the zone");

    // Wildcard and apex in one renewal: two records at one name, both checked and removed.
    // A new account, so that neither authorization can be one Pebble hands back from the
    // orders above (one in a hundred even at PEBBLE_AUTHZREUSE=0): two records for sure.
    let renew_storage = t.path().join("acme-renew");
    let st_renew = s(&renew_storage);
    let (code, out, err) = run(&[
        "acme",
        "renew",
        "--force",
        "--json",
        "--log-level",
        "info",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st_renew,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &k,
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 0, "{out}\n{err}\npebble: {}", p.log());
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    net_support::assert_matches_schema(&v);
    assert_eq!(v["renewed"], true, "{out}");
    assert_eq!(v["issued"]["challenge"], "dns-01", "{out}");
    eprintln!("wildcard + apex renewal: {} ms", v["issued"]["ms"]);
    assert_eq!(
        sans(&cert),
        vec!["*.example.test".to_string(), "example.test".to_string()]
    );
    assert_eq!(
        err.matches("event=acme_dns_record_added").count(),
        2,
        "{err}"
    );
    assert_eq!(
        err.matches("event=acme_dns_record_removed").count(),
        2,
        "{err}"
    );
    assert!(err.contains("event=acme_dns_propagated"), "{err}");
    assert!(!err.contains(secret));
    assert_eq!(named.challenge_txt(), "", "records left in the zone");
    assert!(!renew_storage.join("dns/_.example.test.json").exists());

    // A wildcard without DNS-01: a clear error, exit 2.
    let (code, _, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st,
        "--domain",
        "*.example.test",
        "--http-listen",
        "127.0.0.1:0",
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a wildcard name needs --acme-challenge dns-01"),
        "{err}"
    );
    // A wrong TSIG key: the server's refusal, in words, and the secret not shown. A new
    // account (storage), so that Pebble cannot hand back the valid authorization of the
    // first order: even with PEBBLE_AUTHZREUSE=0, Pebble 2.10 reuses one in a hundred
    // (`rand.Intn(100) > percent`), and then no record is written and the issue succeeds.
    let bad = t.path().join("bad.key");
    std::fs::write(
        &bad,
        "key \"acme-update\" { algorithm hmac-sha256; secret \"c2VjcmV0LXNlY3JldC1zZWNyZXQhIQ==\"; };\n",
    )
    .expect("write");
    let st_bad = s(&t.path().join("acme-bad-key"));
    let (code, _, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st_bad,
        "--domain",
        "*.example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &s(&bad),
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("TSIG error BADSIG"), "{err}");
    assert!(!err.contains("c2VjcmV0LXNlY3JldC1zZWNyZXQhIQ=="), "{err}");
    assert_eq!(named.challenge_txt(), "");
}

/// Pebble asks a DNS server that is not there: validation fails after the records were
/// written and seen on named; they are removed all the same. A record a crashed run left
/// (written to named and remembered in the storage) is removed at the next run.
#[test]
fn acme_dns01_failed_validation_and_leftovers_are_cleaned_up() {
    let named = Named::start();
    // Nothing listens there: Pebble's DNS queries fail.
    let p = Pebble::start_dns(&format!("127.0.0.1:{}", free_port()));
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    std::fs::create_dir_all(storage.join("dns")).expect("mkdir");
    std::fs::set_permissions(&storage, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    // A crashed run's record: in the zone and in the bookkeeping.
    named.nsupdate_add("_acme-challenge.example.test.", "left-by-a-crash");
    assert!(named.challenge_txt().contains("left-by-a-crash"));
    std::fs::write(
        storage.join("dns/_.example.test.json"),
        r#"[{"name":"_acme-challenge.example.test.","value":"left-by-a-crash"}]"#,
    )
    .expect("write");
    let (dir, roots, st, ns, k) = (
        p.directory(),
        s(&p.roots),
        s(&storage),
        named.addr(),
        s(&named.key),
    );
    let (c, kf) = (s(&t.path().join("c.pem")), s(&t.path().join("k.pem")));
    let (code, out, err) = run(&[
        "acme",
        "issue",
        "--log-level",
        "info",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &k,
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("event=acme_dns_leftover_removed"), "{err}");
    assert!(err.contains("ACME validation of"), "{err}");
    assert_eq!(
        err.matches("event=acme_dns_record_added").count(),
        2,
        "{err}"
    );
    assert_eq!(
        err.matches("event=acme_dns_record_removed").count(),
        2,
        "{err}"
    );
    assert_eq!(named.challenge_txt(), "", "records left in the zone");
    assert!(!storage.join("dns/_.example.test.json").exists());
    assert!(!Path::new(&c).exists());
}

/// The exec provider: a script that writes the records with nsupdate (as a DNS API hook
/// would), propagation checked at --acme-dns-resolver; called with add, then remove.
#[test]
fn acme_dns01_exec_hook_with_nsupdate() {
    require("nsupdate");
    let named = Named::start();
    let p = Pebble::start_dns(&named.addr());
    let t = tempfile::tempdir().expect("tempdir");
    let calls = t.path().join("calls.log");
    let hook = t.path().join("dns-hook");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n\
             echo \"$1 $2 $3\" >> {calls}\n\
             case \"$1\" in add) op=add;; remove) op=delete;; *) echo \"bad action $1\" >&2; exit 2;; esac\n\
             printf 'server 127.0.0.1 {port}\\nzone example.test\\nupdate %s %s 60 TXT \"%s\"\\nsend\\n' \"$op\" \"$2\" \"$3\" \
               | nsupdate -k {key}\n",
            calls = s(&calls),
            port = named.port,
            key = s(&named.key)
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (dir, roots, st, ns) = (
        p.directory(),
        s(&p.roots),
        s(&t.path().join("acme")),
        named.addr(),
    );
    let (c, kf) = (s(&t.path().join("c.pem")), s(&t.path().join("k.pem")));
    let (code, out, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-exec",
        &s(&hook),
        "--acme-dns-resolver",
        &ns,
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 0, "{out}\n{err}\npebble: {}", p.log());
    assert_eq!(
        sans(Path::new(&c)),
        vec!["*.example.test".to_string(), "example.test".to_string()]
    );
    let log = std::fs::read_to_string(&calls).expect("calls");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert!(
        lines[..2]
            .iter()
            .all(|l| l.starts_with("add _acme-challenge.example.test. ")),
        "{log}"
    );
    assert!(
        lines[2..]
            .iter()
            .all(|l| l.starts_with("remove _acme-challenge.example.test. ")),
        "{log}"
    );
    assert_eq!(named.challenge_txt(), "", "records left in the zone");

    // A failing hook: its standard error, escaped, in the error; exit 2.
    let bad = t.path().join("bad-hook");
    std::fs::write(
        &bad,
        "#!/bin/sh\nprintf 'zone not found\\033[2J\\n' >&2\nexit 1\n",
    )
    .expect("hook");
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // A new account: an authorization Pebble hands back from the order above (one in a
    // hundred even at PEBBLE_AUTHZREUSE=0) would need no record, and no hook would run.
    let st_bad = s(&t.path().join("acme-bad-hook"));
    let (code, _, err) = run(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-roots",
        &roots,
        "--acme-storage",
        &st_bad,
        "--domain",
        "*.example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-exec",
        &s(&bad),
        "--acme-dns-resolver",
        &ns,
        "-o",
        &c,
        "--key",
        &kf,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zone not found\\x1b[2J"), "{err}");
    assert!(!err.contains('\x1b'), "{err}");
}

/// `serve --acme` gets a wildcard certificate through DNS-01 and serves it: curl verifies
/// it for a name under the wildcard against Pebble's issuing root.
#[test]
fn acme_dns01_serve_wildcard_verified_by_curl() {
    require("curl");
    let named = Named::start();
    let p = Pebble::start_dns(&named.addr());
    let t = tempfile::tempdir().expect("tempdir");
    let storage = t.path().join("acme");
    // A record a crashed run left: in the zone and remembered; removed at start.
    std::fs::create_dir_all(storage.join("dns")).expect("mkdir");
    for d in [&storage, &storage.join("dns")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    named.nsupdate_add("_acme-challenge.example.test.", "left-by-a-crash");
    std::fs::write(
        storage.join("dns/_.example.test.json"),
        r#"[{"name":"_acme-challenge.example.test.","value":"left-by-a-crash"}]"#,
    )
    .expect("write");
    let (dir, roots, st, ns, k) = (
        p.directory(),
        s(&p.roots),
        s(&storage),
        named.addr(),
        s(&named.key),
    );
    let t0 = Instant::now();
    let srv = Serve::start(&[
        "--respond",
        "http",
        "--acme",
        &dir,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-storage",
        &st,
        "--acme-roots",
        &roots,
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &k,
    ]);
    assert!(
        srv.wait_log("event=acme_certificate_installed", Duration::from_secs(60)),
        "{}\npebble: {}",
        srv.stderr(),
        p.log()
    );
    eprintln!(
        "serve --acme, start to first certificate with DNS-01: {:?}",
        t0.elapsed()
    );
    let root = t.path().join("pebble-root.pem");
    p.issuing_root(&root);
    for name in ["www.example.test", "example.test"] {
        let o = Command::new("curl")
            .args(["-sS", "--fail", "--max-time", "10", "--cacert"])
            .arg(&root)
            .args(["--resolve", &format!("{name}:{}:127.0.0.1", srv.port())])
            .arg(format!("https://{name}:{}/", srv.port()))
            .output()
            .expect("curl");
        assert!(
            o.status.success(),
            "{name}: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            srv.stderr()
        );
    }
    assert!(
        srv.stderr().contains("event=acme_dns_record_removed"),
        "{}",
        srv.stderr()
    );
    assert_eq!(named.challenge_txt(), "", "records left in the zone");
    let secret = std::fs::read_to_string(&named.key).expect("key");
    let secret = secret.split('"').nth(3).expect("secret");
    assert!(!srv.stderr().contains(secret));
}

/// A fleet of two nodes started together on one Redis with DNS-01 through a hook: one
/// node writes the records (the issuance lock), the other takes the stored certificate.
#[test]
fn acme_dns01_fleet_one_writer() {
    require("redis-server");
    require("nsupdate");
    let named = Named::start();
    let p = Pebble::start_dns(&named.addr());
    let fleet = net_support::FleetState::start(&[0x5au8; 32]);
    let (t, url, kek) = (&fleet.dir, fleet.url.clone(), fleet.kek.clone());
    let calls = t.path().join("calls.log");
    let hook = t.path().join("dns-hook");
    // $PPID: the tlskit node that ran the hook.
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n\
             echo \"$PPID $1 $2\" >> {calls}\n\
             case \"$1\" in add) op=add;; *) op=delete;; esac\n\
             printf 'server 127.0.0.1 {port}\\nzone example.test\\nupdate %s %s 60 TXT \"%s\"\\nsend\\n' \"$op\" \"$2\" \"$3\" \
               | nsupdate -k {key}\n",
            calls = s(&calls),
            port = named.port,
            key = s(&named.key)
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let (dir, roots, ns, k, h) = (p.directory(), s(&p.roots), named.addr(), s(&kek), s(&hook));
    let args = [
        "--respond",
        "echo",
        "--acme",
        &dir,
        "--domain",
        "*.example.test",
        "--domain",
        "example.test",
        "--acme-roots",
        &roots,
        "--acme-challenge",
        "dns-01",
        "--acme-dns-exec",
        &h,
        "--acme-dns-resolver",
        &ns,
        "--shared-state",
        &url,
        "--shared-state-key",
        &k,
        "--acme-recheck",
        "1",
    ];
    let a = std::thread::spawn({
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        move || Serve::start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let b = Serve::start(&args);
    let a = a.join().expect("node a");
    for n in [&a, &b] {
        assert!(
            n.wait_log("event=acme_certificate_installed", Duration::from_secs(60)),
            "{}\npebble: {}",
            n.stderr(),
            p.log()
        );
    }
    let log = std::fs::read_to_string(&calls).expect("calls");
    let adds: Vec<&str> = log.lines().filter(|l| l.contains(" add ")).collect();
    assert_eq!(adds.len(), 2, "one order, two records: {log}");
    let writers: std::collections::BTreeSet<&str> =
        log.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(writers.len(), 1, "one node writes: {log}");
    assert_eq!(
        log.lines().filter(|l| l.contains(" remove ")).count(),
        2,
        "{log}"
    );
    assert_eq!(named.challenge_txt(), "", "records left in the zone");
}
