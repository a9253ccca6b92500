//! `tlskit trust` against the real tools, never on this machine's own trust: a temporary
//! root tree (`--root`) with a Debian store (the real update-ca-certificates, run on the
//! tree) and a Fedora store (laid out only: tlskit writes the extracted bundle itself),
//! curl through the generated bundles; a temporary NSS database read by headless Chromium
//! (HOME pointed at a temporary home); a copy of the JDK's cacerts listed by keytool.

use crate::net_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use net_support::*;
use tlskit_testkit::run::{command, text};
use tlskit_testkit::tree::{diff, snapshot};

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// `tlskit ARGS` in `dir` with HOME set to `home`; must exit 0.
#[track_caller]
fn tk(dir: &Path, home: &Path, args: &[&str]) -> Output {
    let o = command(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .output()
        .expect("run tlskit");
    assert_eq!(o.status.code(), Some(0), "tlskit {args:?}\n{}", text(&o));
    o
}

#[track_caller]
fn run(program: &str, args: &[&str]) -> Output {
    let o = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(o.status.success(), "{program} {args:?}\n{}", text(&o));
    o
}

/// A constrained CA (`lab/`, names below lab.test), `www.pem` issued by it for
/// www.lab.test, `outside.pem` for www.outside.test and `inside.pem` for www2.lab.test,
/// both signed with the CA's key by OpenSSL (`ca issue` refuses the first), an unrelated
/// CA (`other/`), and a home directory `home/`.
struct Lab {
    dir: tempfile::TempDir,
    id: String,
}

impl Lab {
    fn new() -> Self {
        require("openssl");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir(d.join("home")).expect("mkdir");
        let home = d.join("home");
        for args in [
            &[
                "ca",
                "init",
                "lab",
                "--subject",
                "CN=tlskit trust test CA",
                "--permit-dns",
                "lab.test",
            ][..],
            &[
                "ca",
                "init",
                "other",
                "--subject",
                "CN=Other Root",
                "--permit-dns",
                "other.test",
            ],
            &["key", "new", "-o", "www.key"],
            &[
                "csr",
                "new",
                "--key",
                "www.key",
                "--subject",
                "CN=www.lab.test",
                "-o",
                "www.csr",
            ],
            &["ca", "issue", "lab", "--csr", "www.csr", "-o", "www.pem"],
        ] {
            tk(d, &home, args);
        }
        for (name, host) in [("outside", "www.outside.test"), ("inside", "www2.lab.test")] {
            std::fs::write(
                d.join(format!("{name}.cnf")),
                format!(
                    "subjectAltName=DNS:{host}\nbasicConstraints=critical,CA:FALSE\n\
                     extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
                ),
            )
            .expect("write");
            let sh = format!(
                "cd {d} && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
                 -keyout {name}.key -subj /CN={host} -out {name}.csr 2>&1 && \
                 openssl x509 -req -in {name}.csr -CA lab/ca.pem -CAkey lab/ca.key -set_serial 0x{serial} \
                 -days 30 -extfile {name}.cnf -out {name}.pem 2>&1",
                d = p(d),
                serial = if name == "outside" { "7e57" } else { "7e58" },
            );
            run("sh", &["-c", &sh]);
        }
        let o = tk(d, &home, &["show", "lab/ca.pem", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("show JSON");
        let sha = v["certificates"][0]["sha256"]
            .as_str()
            .expect("sha256")
            .to_string();
        Lab {
            dir,
            id: sha[..16].to_string(),
        }
    }

    fn path(&self, n: &str) -> PathBuf {
        self.dir.path().join(n)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn tk(&self, args: &[&str]) -> Output {
        tk(self.dir.path(), &self.home(), args)
    }

    fn serve(&self, name: &str) -> Serve {
        Serve::start(&[
            "--cert",
            &p(&self.path(&format!("{name}.pem"))),
            "--key",
            &p(&self.path(&format!("{name}.key"))),
            "--respond",
            "http",
            "--no-watch",
        ])
    }
}

const UPDATE: &str = "/usr/sbin/update-ca-certificates";

/// update-ca-certificates on the tree `root`, as tlskit runs it (hooks off).
fn update_tree(root: &Path) {
    let r = |s: &str| p(&root.join(s));
    run(
        UPDATE,
        &[
            "--certsconf",
            &r("etc/ca-certificates.conf"),
            "--certsdir",
            &r("usr/share/ca-certificates"),
            "--localcertsdir",
            &r("usr/local/share/ca-certificates"),
            "--etccertsdir",
            &r("etc/ssl/certs"),
            "--hooksdir",
            "/dev/null",
        ],
    );
}

/// curl to `https://www.lab.test:PORT/` trusting only `bundle`: its exit code and body.
fn curl(bundle: &Path, port: u16) -> (i32, String) {
    let o = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "--cacert",
            &p(bundle),
            "--resolve",
            &format!("www.lab.test:{port}:127.0.0.1"),
            &format!("https://www.lab.test:{port}/"),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("curl");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

/// Debian and Fedora layouts in one temporary root tree: the files where each expects
/// them, `trust list` shows them, curl trusts the server through each generated bundle;
/// `uninstall` leaves the tree byte-identical and curl refuses the server again.
#[test]
fn trust_root_tree_debian_and_fedora_bundles_serve_curl() {
    assert!(
        Path::new(UPDATE).is_file(),
        "{UPDATE} is not installed: scripts/setup installs the test peers"
    );
    require("curl");
    let lab = Lab::new();
    let root = lab.path("root");
    for d in [
        "usr/share/ca-certificates/base",
        "usr/local/share/ca-certificates",
        "etc/ssl/certs",
        "etc/pki/ca-trust/source/anchors",
        "etc/pki/ca-trust/extracted/pem",
    ] {
        std::fs::create_dir_all(root.join(d)).expect("mkdir");
    }
    // A tree as an image has it: one CA from the distribution, its generated store.
    let other = std::fs::read(lab.path("other/ca.pem")).expect("read");
    std::fs::write(
        root.join("usr/share/ca-certificates/base/other.crt"),
        &other,
    )
    .expect("write");
    std::fs::write(root.join("etc/ca-certificates.conf"), "base/other.crt\n").expect("write");
    update_tree(&root);
    std::fs::write(
        root.join("etc/pki/ca-trust/source/anchors/other.pem"),
        &other,
    )
    .expect("write");
    std::fs::write(
        root.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"),
        &other,
    )
    .expect("write");
    let deb_bundle = root.join("etc/ssl/certs/ca-certificates.crt");
    let fed_bundle = root.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem");
    assert!(deb_bundle.is_file(), "the baseline run wrote no bundle");
    let before = snapshot(&root);

    let srv = lab.serve("www");
    for b in [&deb_bundle, &fed_bundle] {
        let (code, out) = curl(b, srv.port());
        assert_eq!(
            code, 60,
            "curl trusted the server before the install: {out}"
        );
    }

    let out = lab.tk(&[
        "trust",
        "install",
        "lab/ca.pem",
        "--root",
        "root",
        "--target",
        "system",
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("update-ca-trust cannot work on a root tree"),
        "{said}"
    );
    let id = &lab.id;
    // Debian: the anchor, its link and hash link in etc/ssl/certs, the bundle.
    let anchor = root.join(format!("usr/local/share/ca-certificates/tlskit-{id}.crt"));
    assert!(anchor.is_file());
    let link = root.join(format!("etc/ssl/certs/tlskit-{id}.pem"));
    assert_eq!(std::fs::read_link(&link).expect("link"), anchor);
    let hashed = std::fs::read_dir(root.join("etc/ssl/certs"))
        .expect("readdir")
        .filter_map(|e| std::fs::read_link(e.expect("entry").path()).ok())
        .any(|t| t == Path::new(&format!("tlskit-{id}.pem")));
    assert!(hashed, "no hash link to tlskit-{id}.pem (openssl rehash)");
    let ca = std::fs::read_to_string(lab.path("lab/ca.pem")).expect("read");
    let holds = |b: &Path| {
        std::fs::read_to_string(b)
            .expect("bundle")
            .contains(ca.trim())
    };
    assert!(holds(&deb_bundle));
    // Fedora: the anchor and the extracted PEM bundle.
    assert!(root
        .join(format!("etc/pki/ca-trust/source/anchors/tlskit-{id}.pem"))
        .is_file());
    assert!(holds(&fed_bundle));

    let o = lab.tk(&["trust", "list", "--root", "root", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("list JSON");
    let installed = v["installed"].as_array().expect("installed");
    assert_eq!(installed.len(), 2, "{v}");
    for (i, layout) in ["Debian", "Fedora"].iter().enumerate() {
        assert!(
            installed[i]["location"]
                .as_str()
                .expect("location")
                .starts_with(layout),
            "{v}"
        );
        assert_eq!(installed[i]["subject"], "CN=tlskit trust test CA", "{v}");
        assert_eq!(installed[i]["in_bundle"], true, "{v}");
    }

    for b in [&deb_bundle, &fed_bundle] {
        let (code, out) = curl(b, srv.port());
        assert_eq!(code, 0, "curl through {}: {out}", b.display());
        assert!(out.contains("hello from tlskit"), "{out}");
    }

    lab.tk(&["trust", "uninstall", "lab/ca.pem", "--root", "root"]);
    let after = snapshot(&root);
    assert_eq!(before, after, "{}", diff(&before, &after));
    for b in [&deb_bundle, &fed_bundle] {
        let (code, out) = curl(b, srv.port());
        assert_eq!(
            code, 60,
            "curl still trusts the server after the uninstall: {out}"
        );
    }
}

/// Headless Chromium with HOME at a temporary home: the page loads once `trust install
/// --target nss` put the CA into ~/.pki/nssdb; a certificate for a name outside the CA's
/// constraints is refused (one inside them, signed the same way, loads); after `trust
/// uninstall` the page is refused.
#[test]
fn trust_nss_chromium_trusts_the_ca_within_its_constraints_then_not() {
    require("chromium");
    require("certutil");
    let lab = Lab::new();
    let home = lab.home();
    let nssdb = home.join(".pki/nssdb");
    std::fs::create_dir_all(&nssdb).expect("mkdir");
    run(
        "certutil",
        &[
            "-N",
            "--empty-password",
            "-d",
            &format!("sql:{}", p(&nssdb)),
        ],
    );
    let www = lab.serve("www");
    let outside = lab.serve("outside");
    let inside = lab.serve("inside");
    let mut profile = 0;
    let mut chromium = |host: &str, port: u16| -> (String, String) {
        profile += 1;
        let o = Command::new("timeout")
            .args([
                "60",
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                &format!(
                    "--user-data-dir={}",
                    p(&lab.path(&format!("profile{profile}")))
                ),
                &format!("--host-resolver-rules=MAP {host} 127.0.0.1"),
                "--dump-dom",
                &format!("https://{host}:{port}/"),
            ])
            .env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .expect("chromium");
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (dom, err) = chromium("www.lab.test", www.port());
    assert!(
        !dom.contains("hello from tlskit"),
        "trusted before the install: {dom}"
    );
    assert!(err.contains("ERR_CERT_AUTHORITY_INVALID"), "{err}");

    lab.tk(&["trust", "install", "lab/ca.pem", "--target", "nss"]);
    let listing = run("certutil", &["-L", "-d", &format!("sql:{}", p(&nssdb))]);
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with(&format!("tlskit-{}", lab.id)) && l.trim_end().ends_with("C,,")),
        "{listing}"
    );
    let o = lab.tk(&["trust", "list", "--target", "nss", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("list JSON");
    assert_eq!(
        v["installed"][0]["name"],
        format!("tlskit-{}", lab.id),
        "{v}"
    );
    assert!(
        v["installed"][0]["location"]
            .as_str()
            .expect("location")
            .contains("(Chromium)"),
        "{v}"
    );

    let (dom, err) = chromium("www.lab.test", www.port());
    assert!(
        dom.contains("hello from tlskit"),
        "chromium got: {dom}\n{err}"
    );
    let (dom, err) = chromium("www2.lab.test", inside.port());
    assert!(
        dom.contains("hello from tlskit"),
        "inside the constraints: {dom}\n{err}"
    );
    let (dom, err) = chromium("www.outside.test", outside.port());
    assert!(
        !dom.contains("hello from tlskit"),
        "outside the constraints: {dom}"
    );
    assert!(err.contains("Page load failed: net::ERR_CERT"), "{err}");

    lab.tk(&["trust", "uninstall", "lab/ca.pem"]);
    let listing = run("certutil", &["-L", "-d", &format!("sql:{}", p(&nssdb))]);
    assert!(!String::from_utf8_lossy(&listing.stdout).contains("tlskit-"));
    assert!(
        !home.join(".local/state/tlskit").exists(),
        "the state directory stayed"
    );
    let (dom, err) = chromium("www.lab.test", www.port());
    assert!(
        !dom.contains("hello from tlskit"),
        "trusted after the uninstall: {dom}"
    );
    assert!(err.contains("ERR_CERT_AUTHORITY_INVALID"), "{err}");
}

/// Every target at once (no --target): the root tree's system store, an NSS database
/// given with --nssdb and a copy of the JDK's cacerts given with --java-cacerts; keytool
/// lists the CA, then not; the JDK's own cacerts is not touched.
#[test]
fn trust_every_target_at_once_with_keytool() {
    require("keytool");
    require("certutil");
    let lab = Lab::new();
    let jdk_cacerts = ["/etc/ssl/certs/java/cacerts"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("a JDK's cacerts (scripts/setup installs a JDK)");
    let jdk_before = std::fs::read(&jdk_cacerts).expect("read cacerts");
    let ks = lab.path("cacerts");
    std::fs::copy(&jdk_cacerts, &ks).expect("copy cacerts");
    let db = lab.path("nssdb");
    std::fs::create_dir(&db).expect("mkdir");
    run(
        "certutil",
        &["-N", "--empty-password", "-d", &format!("sql:{}", p(&db))],
    );
    let root = lab.path("root");
    std::fs::create_dir_all(root.join("etc/pki/ca-trust/source/anchors")).expect("mkdir");
    let before = snapshot(&root);
    let alias = format!("tlskit-{}", lab.id);
    let keytool_list = || {
        Command::new("keytool")
            .args([
                "-list",
                "-keystore",
                &p(&ks),
                "-storepass",
                "changeit",
                "-alias",
                &alias,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("keytool")
    };
    assert!(!keytool_list().status.success());

    let args = [
        "--root",
        "root",
        "--nssdb",
        "nssdb",
        "--java-cacerts",
        "cacerts",
    ];
    let mut install = vec!["trust", "install", "lab/ca.pem"];
    install.extend(args);
    lab.tk(&install);
    let o = keytool_list();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("trustedCertEntry"),
        "{}",
        text(&o)
    );
    let mut list = vec!["trust", "list", "--json"];
    list.extend(args);
    let o = lab.tk(&list);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("list JSON");
    let kinds: Vec<&str> = v["installed"]
        .as_array()
        .expect("installed")
        .iter()
        .map(|e| e["target"].as_str().expect("target"))
        .collect();
    assert_eq!(kinds, ["system", "nss", "java"], "{v}");

    lab.tk(&["trust", "uninstall", "lab/ca.pem", "--root", "root"]);
    let o = keytool_list();
    assert!(
        !o.status.success(),
        "the alias is still there: {}",
        text(&o)
    );
    let listing = run("certutil", &["-L", "-d", &format!("sql:{}", p(&db))]);
    assert!(!String::from_utf8_lossy(&listing.stdout).contains("tlskit-"));
    assert_eq!(before, snapshot(&root));
    assert!(
        std::fs::read(&jdk_cacerts).expect("read cacerts") == jdk_before,
        "the JDK's cacerts changed"
    );
}

/// The runner behind every external command: a command past its deadline is stopped with
/// the processes it started (here the shell's sleep, which holds the pipes); what a failed
/// command said is quoted escaped. Real time, so slow tier.
#[test]
fn trust_runner_deadline_and_escaped_output() {
    use std::time::{Duration, Instant};
    use tlskit_trust::{Cmd, Runner, SystemRunner};
    let r = SystemRunner {
        deadline: Duration::from_millis(300),
    };
    let start = Instant::now();
    let e = r
        .run(&Cmd::new("sh", ["-c", "sleep 30; echo late"]))
        .expect_err("past its deadline");
    assert!(e.to_string().contains("still running after"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let out = SystemRunner::default()
        .run(&Cmd::new(
            "sh",
            ["-c", "printf 'one\\ntwo \\033[31mred\\n' >&2; exit 3"],
        ))
        .expect("ran");
    assert_eq!(out.code, Some(3));
    assert_eq!(out.stderr, "one\ntwo \x1b[31mred\n");
}
