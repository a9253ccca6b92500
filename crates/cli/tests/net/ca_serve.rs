//! `tlskit ca serve` (issue 25) against independent ACME clients: tlskit's own `acme
//! issue`, certbot (http-01, `--standalone`) and lego (tls-alpn-01), each with a renewal,
//! each certificate checked by `openssl verify` against the CA; and the refusals each
//! client meets: a name outside the CA's name constraints, a missing external account
//! binding where `DIR/acme.toml` requires one. Each test runs its own CA and server on
//! random loopback ports. certbot and lego come from scripts/setup; a missing one fails
//! the test (this module is in the slow tier only).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::net_support::{free_port, tlskit, wait_port};

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME"))
}

/// A client that scripts/setup installs at a fixed place: missing is a failure.
#[track_caller]
fn tool(rel: &str) -> PathBuf {
    let p = home().join(rel);
    assert!(
        p.is_file(),
        "{} is not installed: scripts/setup installs it",
        p.display()
    );
    p
}

fn certbot() -> PathBuf {
    tool(".local/share/tlskit-tools/certbot-5.8.0/bin/certbot")
}

fn lego() -> PathBuf {
    tool("go/bin/lego")
}

/// A CA and `tlskit ca serve` on it, killed on drop.
struct CaServe {
    t: tempfile::TempDir,
    child: Option<Child>,
    port: u16,
    http: u16,
    tls: u16,
    started: Instant,
    /// More `ca serve` arguments.
    extra: Vec<String>,
    /// More environment for `ca serve`.
    env: Vec<(String, String)>,
}

impl Drop for CaServe {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl CaServe {
    /// `ca init` (with these --permit-dns constraints) and `DIR/acme.toml`, then serve.
    fn start(permit: &[&str], acme_toml: Option<&str>) -> Self {
        Self::start_with(permit, acme_toml, &[])
    }

    fn start_with(permit: &[&str], acme_toml: Option<&str>, extra: &[&str]) -> Self {
        Self::start_env(permit, acme_toml, extra, &[])
    }

    fn start_env(
        permit: &[&str],
        acme_toml: Option<&str>,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let t = tempfile::tempdir().expect("tempdir");
        let ca = t.path().join("ca");
        let mut args = vec!["ca".to_string(), "init".into(), s(&ca)];
        for p in permit {
            args.extend(["--permit-dns".to_string(), p.to_string()]);
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tlskit(&a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if let Some(toml) = acme_toml {
            std::fs::write(ca.join("acme.toml"), toml).expect("acme.toml");
        }
        let mut me = CaServe {
            t,
            child: None,
            port: 0,
            http: free_port(),
            tls: free_port(),
            started: Instant::now(),
            extra: extra.iter().map(|a| a.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        for _ in 0..4 {
            me.port = free_port();
            if me.spawn() {
                return me;
            }
        }
        panic!("ca serve did not start: {}", me.log());
    }

    /// Start the server on `self.port` (kept across a restart: clients store their
    /// accounts per directory URL).
    fn spawn(&mut self) -> bool {
        let log = std::fs::File::create(self.t.path().join("serve.log")).expect("log");
        self.started = Instant::now();
        let child = Command::new(crate::BIN)
            .args(["ca", "serve"])
            .arg(self.ca())
            .args(["--listen", &format!("127.0.0.1:{}", self.port)])
            .args(["--validation-http-port", &self.http.to_string()])
            .args(["--validation-tls-port", &self.tls.to_string()])
            .args(&self.extra)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn ca serve");
        self.child = Some(child);
        let up = wait_port(self.port, Duration::from_secs(20));
        let running = self
            .child
            .as_mut()
            .is_some_and(|c| c.try_wait().is_ok_and(|st| st.is_none()));
        up && running
    }

    fn ca(&self) -> PathBuf {
        self.t.path().join("ca")
    }

    fn ca_pem(&self) -> String {
        s(&self.ca().join("ca.pem"))
    }

    fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/directory", self.port)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.t.path().join(name)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.t.path().join("serve.log")).unwrap_or_default()
    }

    /// `tlskit acme issue` for `domain` over http-01.
    fn tlskit_issue(&self, domain: &str, out: &Path) -> Output {
        self.tlskit_issue_with(domain, out, &[])
    }

    /// `tlskit acme issue` for `domain` over http-01, with more arguments.
    fn tlskit_issue_with(&self, domain: &str, out: &Path, extra: &[&str]) -> Output {
        let storage = s(&self.path("tlskit-acme"));
        let key = s(&self.path(&format!("{domain}.key")));
        let http = format!("127.0.0.1:{}", self.http);
        let dir = self.directory();
        let ca = self.ca_pem();
        let out = s(out);
        let mut args = vec![
            "acme",
            "issue",
            "--directory",
            &dir,
            "--acme-storage",
            &storage,
            "--acme-roots",
            &ca,
            "--domain",
            domain,
            "--key",
            &key,
            "-o",
            &out,
            "--http-listen",
            &http,
        ];
        args.extend(extra);
        tlskit(&args)
    }

    /// certbot with its directories in the test's temp dir.
    fn certbot_run(&self, args: &[&str]) -> Output {
        let base = self.path("certbot");
        Command::new(certbot())
            .args(args)
            .args(["--config-dir", &s(&base.join("config"))])
            .args(["--work-dir", &s(&base.join("work"))])
            .args(["--logs-dir", &s(&base.join("logs"))])
            .arg("--non-interactive")
            .env("REQUESTS_CA_BUNDLE", self.ca_pem())
            .stdin(Stdio::null())
            .output()
            .expect("run certbot")
    }

    fn certbot_certonly(&self, domain: &str, extra: &[&str]) -> Output {
        let port = self.http.to_string();
        let dir = self.directory();
        let mut a = vec![
            "certonly",
            "--standalone",
            "--http-01-port",
            &port,
            "--http-01-address",
            "127.0.0.1",
            "--server",
            &dir,
            "--agree-tos",
            "--register-unsafely-without-email",
            "-d",
            domain,
        ];
        a.extend(extra);
        self.certbot_run(&a)
    }

    /// lego (v5: the flags follow `run`) over tls-alpn-01.
    fn lego(&self, domain: &str, extra: &[&str]) -> Output {
        Command::new(lego())
            .arg("run")
            .args(["--server", &self.directory()])
            .args(["--accept-tos", "--email", "ops@example.test"])
            .args(["--domains", domain])
            .args(["--tls", "--tls.address", &format!("127.0.0.1:{}", self.tls)])
            .args(["--path", &s(&self.path("lego"))])
            .args(extra)
            .env("LEGO_CA_CERTIFICATES", self.ca_pem())
            .stdin(Stdio::null())
            .output()
            .expect("run lego")
    }

    /// `openssl verify -CAfile ca.pem` of the first certificate in `pem`.
    #[track_caller]
    fn assert_verifies(&self, pem: &Path) {
        let o = Command::new("openssl")
            .args(["verify", "-CAfile", &self.ca_pem()])
            .arg(pem)
            .output()
            .expect("openssl");
        assert!(
            o.status.success(),
            "openssl verify {}: {}{}",
            pem.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn serial(pem: &Path) -> String {
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-in"])
        .arg(pem)
        .output()
        .expect("openssl");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn ca_serve_tlskit_acme_issue_http01_and_refusal_outside_constraints() {
    let metrics = format!("127.0.0.1:{}", free_port());
    let srv = CaServe::start_with(&["localhost"], None, &["--metrics", &metrics]);
    // curl trusts the CA for the server's own certificate (127.0.0.1 and localhost).
    for host in ["127.0.0.1", "localhost"] {
        let o = Command::new("curl")
            .args(["-sS", "--fail", "--cacert", &srv.ca_pem()])
            .arg(format!("https://{host}:{}/directory", srv.port))
            .output()
            .expect("curl");
        assert!(o.status.success(), "{}", text(&o));
        let d: serde_json::Value = serde_json::from_slice(&o.stdout).expect("directory JSON");
        assert!(
            d["newOrder"].as_str().is_some_and(|u| u.contains(host)),
            "{d}"
        );
        assert_eq!(
            d["meta"]["profiles"]["shortlived"], "6 days, serverAuth",
            "{d}"
        );
    }
    let chain = srv.path("chain.pem");
    let o = srv.tlskit_issue("localhost", &chain);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    eprintln!(
        "time from ca serve start to the first certificate, tlskit acme issue: {} ms",
        srv.started.elapsed().as_millis()
    );
    srv.assert_verifies(&chain);
    // The CA's index holds it: issued through the same path as `ca issue`.
    let o = tlskit(&["ca", "list", &s(&srv.ca()), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let sans: Vec<String> = v["issued"]
        .as_array()
        .expect("issued")
        .iter()
        .map(|e| e["sans"].to_string())
        .collect();
    assert!(sans.iter().any(|s| s.contains("dns:localhost")), "{sans:?}");
    // A second certificate: the account is reused, the serial differs.
    let again = srv.path("chain2.pem");
    let o = srv.tlskit_issue("localhost", &again);
    assert!(o.status.success(), "{}", text(&o));
    assert_ne!(serial(&chain), serial(&again));

    // Outside the constraints: refused at order time, saying why.
    let o = srv.tlskit_issue("www.example.com", &srv.path("no.pem"));
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("rejectedIdentifier"), "{t}");
    assert!(t.contains("www.example.com"), "{t}");
    assert!(!srv.path("no.pem").exists());
    // Prometheus text on --metrics.
    let m = crate::net_support::scrape(&metrics);
    let value = |name: &str| crate::net_support::metric(&m, name);
    assert_eq!(
        value("tlskit_acme_certificates_issued_total"),
        Some(2.0),
        "{m}"
    );
    assert_eq!(
        value("tlskit_acme_accounts_created_total"),
        Some(1.0),
        "{m}"
    );
    assert!(
        value("tlskit_acme_problems_total").is_some_and(|v| v >= 1.0),
        "{m}"
    );
    assert!(srv.log().contains("event=acme_problem"), "{}", srv.log());
}

/// The reason this server exists: public CAs stopped clientAuth, so an internal one
/// issues it per profile. `openssl x509 -text` reads the usages tlskit's client got.
#[test]
fn ca_serve_client_profile_issues_tls_web_client_authentication() {
    let srv = CaServe::start(
        &["localhost"],
        Some(
            "[acme_profile.default]\ndays = 90\n\
             [acme_profile.client]\ndays = 30\nextended_key_usage = [\"clientAuth\"]\n\
             crl_distribution_point = false\n",
        ),
    );
    let usages = |pem: &Path| {
        let o = Command::new("openssl")
            .args(["x509", "-noout", "-text", "-in"])
            .arg(pem)
            .output()
            .expect("openssl");
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let client = srv.path("client.pem");
    let o = srv.tlskit_issue_with("localhost", &client, &["--acme-profile", "client"]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&client);
    let t = usages(&client);
    assert!(t.contains("TLS Web Client Authentication"), "{t}");
    assert!(!t.contains("TLS Web Server Authentication"), "{t}");
    assert!(srv.log().contains("profile=client"), "{}", srv.log());
    // The default profile stays a server certificate.
    let server = srv.path("server.pem");
    let o = srv.tlskit_issue("localhost", &server);
    assert!(o.status.success(), "{}", text(&o));
    let t = usages(&server);
    assert!(t.contains("TLS Web Server Authentication"), "{t}");
    assert!(!t.contains("TLS Web Client Authentication"), "{t}");
}

#[test]
fn ca_serve_certbot_http01_renewal_and_refusal_outside_constraints() {
    let srv = CaServe::start(&["localhost"], None);
    let o = srv.certbot_certonly("localhost", &[]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    eprintln!(
        "time from ca serve start to the first certificate, certbot: {} ms",
        srv.started.elapsed().as_millis()
    );
    let live = srv.path("certbot/config/live/localhost");
    let cert = live.join("cert.pem");
    srv.assert_verifies(&cert);
    srv.assert_verifies(&live.join("fullchain.pem"));
    let first = serial(&cert);
    // A renewal: certonly again with --force-renewal (`certbot renew` without a
    // terminal first sleeps a random delay of up to 8 minutes).
    let o = srv.certbot_certonly("localhost", &["--force-renewal"]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&cert);
    assert_ne!(serial(&cert), first, "renewal gave the same certificate");

    let o = srv.certbot_certonly("outside.example.com", &[]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("outside.example.com"), "{t}");
    assert!(t.contains("may not issue"), "{t}");
}

#[test]
fn ca_serve_lego_tls_alpn01_renewal_and_refusal_outside_constraints() {
    let srv = CaServe::start(&["localhost"], None);
    let o = srv.lego("localhost", &[]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    eprintln!(
        "time from ca serve start to the first certificate, lego: {} ms",
        srv.started.elapsed().as_millis()
    );
    let cert = srv.path("lego/certificates/localhost.crt");
    srv.assert_verifies(&cert);
    let first = serial(&cert);
    assert!(srv.log().contains("challenge=tls-alpn-01"), "{}", srv.log());
    let o = srv.lego("localhost", &["--renew-force", "--no-random-sleep"]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&cert);
    assert_ne!(serial(&cert), first, "renewal gave the same certificate");

    let o = srv.lego("outside.example.com", &[]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("rejectedIdentifier"), "{t}");

    // The shortlived profile (advertised in the directory): a 6-day certificate.
    std::fs::remove_dir_all(srv.path("lego")).expect("rm");
    let o = srv.lego("localhost", &["--profile", "shortlived"]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    let o = Command::new("openssl")
        .args([
            "x509",
            "-noout",
            "-checkend",
            &(7 * 86_400).to_string(),
            "-in",
        ])
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(
        !o.status.success(),
        "a shortlived certificate outlives 7 days"
    );
    assert!(srv.log().contains("profile=shortlived"), "{}", srv.log());
    let o = srv.lego("localhost", &["--profile", "forever"]);
    assert!(text(&o).contains("invalidProfile"), "{}", text(&o));
}

#[test]
fn ca_serve_eab_required_refuses_each_client_without_one() {
    let srv = CaServe::start(&[], Some("eab_required = true\n"));
    // Without a binding: every client meets externalAccountRequired.
    let o = srv.tlskit_issue("localhost", &srv.path("t.pem"));
    assert!(!o.status.success());
    assert!(text(&o).contains("externalAccountRequired"), "{}", text(&o));
    let o = srv.certbot_certonly("localhost", &[]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("external account binding"),
        "{}",
        text(&o)
    );
    // lego reads meta.externalAccountRequired from the directory and stops first.
    let o = srv.lego("localhost", &[]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("External Account Binding"),
        "{}",
        text(&o)
    );

    // Enrolled: the HMAC key is printed once, stored 0600, and works for certbot and lego.
    let o = tlskit(&["ca", "eab", "add", &s(&srv.ca()), "--kid", "web-01"]);
    assert!(o.status.success(), "{}", text(&o));
    let hmac = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(hmac.len(), 43, "{hmac}");
    let stored = srv.ca().join("acme/eab/web-01.key");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&stored)
        .expect("stored")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let o = tlskit(&["ca", "eab", "add", &s(&srv.ca()), "--kid", "web-01"]);
    assert!(!o.status.success(), "a second key under one id");
    let o = srv.certbot_certonly(
        "localhost",
        &["--eab-kid", "web-01", "--eab-hmac-key", &hmac],
    );
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&srv.path("certbot/config/live/localhost/cert.pem"));
    let o = srv.lego(
        "localhost",
        &["--eab", "--eab.kid", "web-01", "--eab.hmac", &hmac],
    );
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&srv.path("lego/certificates/localhost.crt"));
    // tlskit's own client with the binding (the HMAC key from a file).
    let hmac_file = srv.path("eab.hmac");
    std::fs::write(&hmac_file, format!("{hmac}\n")).expect("hmac file");
    let dir = srv.directory();
    let o = tlskit(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-storage",
        &s(&srv.path("tlskit-eab")),
        "--acme-roots",
        &srv.ca_pem(),
        "--domain",
        "localhost",
        "--key",
        &s(&srv.path("eab.key")),
        "-o",
        &s(&srv.path("eab.pem")),
        "--http-listen",
        &format!("127.0.0.1:{}", srv.http),
        "--acme-eab-kid",
        "web-01",
        "--acme-eab-hmac-key-file",
        &s(&hmac_file),
    ]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    srv.assert_verifies(&srv.path("eab.pem"));
    // A wrong key is refused.
    let o = tlskit(&["ca", "eab", "add", &s(&srv.ca()), "--kid", "web-02"]);
    assert!(o.status.success());
    std::fs::remove_dir_all(srv.path("lego")).expect("rm");
    let o = srv.lego(
        "localhost",
        &["--eab", "--eab.kid", "web-02", "--eab.hmac", &hmac],
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("MAC does not verify"), "{}", text(&o));
    assert!(!srv.log().contains(&hmac), "the HMAC key reached the log");
}

#[test]
fn ca_serve_second_server_on_one_directory_refuses_and_restart_keeps_accounts() {
    let mut srv = CaServe::start(&[], None);
    let ca = s(&srv.ca());
    let o = tlskit(&[
        "ca",
        "serve",
        &ca,
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("another `tlskit ca serve`"),
        "{}",
        text(&o)
    );
    let o = srv.tlskit_issue("localhost", &srv.path("a.pem"));
    assert!(o.status.success(), "{}", text(&o));
    // Restart on the same state: the stored account is found again.
    if let Some(c) = &mut srv.child {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert!(srv.spawn(), "{}", srv.log());
    let o = srv.tlskit_issue("localhost", &srv.path("b.pem"));
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    assert!(!srv.log().contains("acme_account_created"), "{}", srv.log());
    srv.assert_verifies(&srv.path("b.pem"));
}

/// Serial (as openssl prints it) of the certificate served on 127.0.0.1:port for `name`.
fn served_serial(port: u16, name: &str) -> Option<String> {
    let o = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", name])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("openssl");
    let out = String::from_utf8_lossy(&o.stdout);
    let begin = out.find("-----BEGIN CERTIFICATE-----")?;
    let end = out.find("-----END CERTIFICATE-----")? + "-----END CERTIFICATE-----".len();
    let tmp = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(tmp.path(), &out[begin..end]).expect("write");
    Some(serial(tmp.path())).filter(|s| !s.is_empty())
}

fn until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn ca_serve_tlskit_serve_acme_replaces_a_revoked_certificate_within_one_ari_recheck() {
    let srv = CaServe::start(&[], None);
    let storage = s(&srv.path("serve-acme"));
    let listen = format!("127.0.0.1:{}", srv.tls);
    let dir = srv.directory();
    let ca = srv.ca_pem();
    // tls-alpn-01 on serve's own listener; ARI asked again every second (the server's
    // Retry-After is hours: --acme-recheck caps it).
    let node = crate::net_support::Serve::start(&[
        "--listen",
        &listen,
        "--respond",
        "echo",
        "--acme",
        &dir,
        "--domain",
        "localhost",
        "--acme-storage",
        &storage,
        "--acme-roots",
        &ca,
        "--acme-recheck",
        "1",
    ]);
    let first = until(Duration::from_secs(60), || {
        served_serial(srv.tls, "localhost")
    })
    .unwrap_or_else(|| panic!("nothing served: {}\nca serve: {}", node.stderr(), srv.log()));
    eprintln!(
        "time from ca serve start to the first certificate, tlskit serve --acme: {} ms",
        srv.started.elapsed().as_millis()
    );
    let stored = srv.path("serve-acme/certs/localhost.pem");
    srv.assert_verifies(&stored);
    let o = tlskit(&[
        "acme",
        "revoke",
        "--directory",
        &dir,
        "--acme-storage",
        &storage,
        "--acme-roots",
        &ca,
        "--cert",
        &s(&stored),
    ]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    assert!(
        srv.log().contains("event=acme_certificate_revoked"),
        "{}",
        srv.log()
    );
    // The CA's index records it (so its CRL lists it).
    let o = tlskit(&["ca", "list", &s(&srv.ca())]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("REVOKED"),
        "{}",
        text(&o)
    );
    let t0 = Instant::now();
    let second = until(Duration::from_secs(30), || {
        served_serial(srv.tls, "localhost").filter(|s| *s != first)
    })
    .unwrap_or_else(|| {
        panic!(
            "revoked certificate not replaced: {}\n{}",
            node.stderr(),
            srv.log()
        )
    });
    eprintln!(
        "revoked certificate replaced after {} ms (ARI recheck every 1 s)",
        t0.elapsed().as_millis()
    );
    assert!(node.stderr().contains("ari"), "{}", node.stderr());
    assert_ne!(second, first);
    srv.assert_verifies(&stored);
}

#[test]
fn ca_serve_revocation_by_certificate_key_and_ari_window() {
    let srv = CaServe::start(&[], None);
    let chain = srv.path("c.pem");
    let o = srv.tlskit_issue("localhost", &chain);
    assert!(o.status.success(), "{}", text(&o));
    // ARI: renewal at two thirds of the 90-day lifetime: `acme renew` says not due.
    let storage = s(&srv.path("tlskit-acme"));
    let dir = srv.directory();
    let ca = srv.ca_pem();
    let http = format!("127.0.0.1:{}", srv.http);
    let key = s(&srv.path("localhost.key"));
    let renew = || {
        tlskit(&[
            "acme",
            "renew",
            "--directory",
            &dir,
            "--acme-storage",
            &storage,
            "--acme-roots",
            &ca,
            "--domain",
            "localhost",
            "--key",
            &key,
            "-o",
            &s(&chain),
            "--http-listen",
            &http,
            "--json",
        ])
    };
    let o = renew();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["reason"], "not_due", "{v}");
    let due = v["due"].as_u64().expect("due");
    let o = Command::new("openssl")
        .args([
            "x509",
            "-noout",
            "-startdate",
            "-enddate",
            "-dateopt",
            "iso_8601",
            "-in",
        ])
        .arg(&chain)
        .output()
        .expect("openssl");
    let dates = String::from_utf8_lossy(&o.stdout).to_string();
    let unix = |line: &str| -> u64 {
        let v = line.split('=').nth(1).expect("date").trim();
        let t = time::OffsetDateTime::parse(
            &v.replace(' ', "T"),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("rfc3339");
        u64::try_from(t.unix_timestamp()).expect("positive")
    };
    let mut lines = dates.lines();
    let nb = unix(lines.next().expect("start"));
    let na = unix(lines.next().expect("end"));
    let life = na - nb;
    assert!(
        due >= nb + life * 2 / 3 && due <= nb + life * 3 / 4,
        "due {due} outside the window of {nb}..{na}"
    );
    // Revoked by certbot with the certificate's own key (a jwk JWS, no account).
    let o = srv.certbot_run(&[
        "revoke",
        "--server",
        &dir,
        "--cert-path",
        &s(&chain),
        "--key-path",
        &key,
        "--reason",
        "keycompromise",
        "--no-delete-after-revoke",
    ]);
    assert!(o.status.success(), "{}\nserver: {}", text(&o), srv.log());
    assert!(
        srv.log().contains("event=acme_certificate_revoked"),
        "{}",
        srv.log()
    );
    let o = tlskit(&["ca", "list", &s(&srv.ca())]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("keyCompromise"),
        "{}",
        text(&o)
    );
    // Now due at once by ARI.
    let o = renew();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["renewed"], true, "{v}");
    assert_eq!(v["reason"], "ari", "{v}");
}

#[test]
fn ca_serve_resolver_resolves_http01_and_validates_dns01_wildcards_with_named() {
    let named = crate::acme_dns::Named::start();
    let ns = named.addr();
    let srv = CaServe::start_with(&["example.test"], None, &["--resolver", &ns]);
    // www.example.test is 127.0.0.1 only in named's zone: resolved through --resolver.
    let www = srv.path("www.pem");
    let o = srv.tlskit_issue("www.example.test", &www);
    assert!(
        o.status.success(),
        "{}\nserver: {}\nnamed: {}",
        text(&o),
        srv.log(),
        named.log()
    );
    srv.assert_verifies(&www);
    // A wildcard over dns-01: tlskit writes the TXT record into named (RFC 2136), the
    // server reads it back through --resolver.
    let wild = srv.path("wild.pem");
    let dir = srv.directory();
    let ca = srv.ca_pem();
    let o = tlskit(&[
        "acme",
        "issue",
        "--directory",
        &dir,
        "--acme-storage",
        &s(&srv.path("tlskit-acme")),
        "--acme-roots",
        &ca,
        "--domain",
        "*.example.test",
        "--acme-challenge",
        "dns-01",
        "--acme-dns-update",
        &ns,
        "--acme-dns-tsig-key",
        &s(&named.key),
        "--key",
        &s(&srv.path("wild.key")),
        "-o",
        &s(&wild),
    ]);
    assert!(
        o.status.success(),
        "{}\nserver: {}\nnamed: {}",
        text(&o),
        srv.log(),
        named.log()
    );
    assert!(srv.log().contains("challenge=dns-01"), "{}", srv.log());
    srv.assert_verifies(&wild);
    let o = Command::new("openssl")
        .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
        .arg(&wild)
        .output()
        .expect("openssl");
    assert!(String::from_utf8_lossy(&o.stdout).contains("DNS:*.example.test"));
}

/// libfaketime's multi-threaded library (the `faketime` package of scripts/setup).
fn libfaketime() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/faketime/libfaketimeMT.so.1",
        "/usr/local/lib/faketime/libfaketimeMT.so.1",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("libfaketimeMT.so.1 not found in {candidates:?}: run scripts/setup")
        })
}

/// The server's own certificate at the process level: `ca serve` runs under libfaketime
/// with its offset in a file; moved five days on (two of the certificate's seven left),
/// the process renews it and serves the new one without a restart, issued by the CA.
#[test]
fn ca_serve_renews_its_own_certificate_when_its_clock_moves_on() {
    let t = tempfile::tempdir().expect("tempdir");
    let offset = t.path().join("faketime");
    std::fs::write(&offset, "+0\n").expect("offset");
    let lib = libfaketime();
    let srv = CaServe::start_env(
        &["localhost"],
        None,
        &[],
        &[
            ("LD_PRELOAD", &s(&lib)),
            ("FAKETIME_TIMESTAMP_FILE", &s(&offset)),
            ("FAKETIME_NO_CACHE", "1"),
        ],
    );
    let first = served_serial(srv.port, "localhost").expect("a served certificate");
    std::fs::write(&offset, "+5d\n").expect("offset");
    // The renewal timer fires when the process next wakes (a connection wakes it).
    let renewed = until(Duration::from_secs(30), || {
        served_serial(srv.port, "localhost").filter(|s| *s != first)
    });
    assert!(
        renewed.is_some(),
        "still {first} after the clock moved 5 days\n{}",
        srv.log()
    );
    let log = srv.log();
    assert_eq!(
        log.matches("event=acme_server_certificate_issued").count(),
        2,
        "{log}"
    );
    // Issued by the CA, into its index, as any certificate.
    let pem = srv.ca().join("acme/https.pem");
    let o = Command::new("openssl")
        .args(["verify", "-CAfile", &srv.ca_pem(), "-attime"])
        .arg((time::OffsetDateTime::now_utc().unix_timestamp() + 6 * 86_400).to_string())
        .arg(&pem)
        .output()
        .expect("openssl");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        Some(serial(&pem)),
        renewed,
        "https.pem holds the served certificate"
    );
}
