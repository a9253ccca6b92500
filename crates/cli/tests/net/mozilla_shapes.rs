//! Issue 23, the real-world corpus: for every root Debian ships from Mozilla's set, a
//! synthetic root of the same shape (serial, subject, extensions with their criticality,
//! key-identifier forms, self-signature hash; a fresh key) with a compliant intermediate
//! under it (tests/data/mozilla-shapes/, made by its generate.py, README.md there). Each
//! test makes a compliant leaf under every intermediate and checks that tlskit accepts
//! the chain, the way users meet it: `verify`, `connect` to `openssl s_server`, and
//! `serve --client-ca` with every synthetic root as a client-CA anchor. A failure names
//! every refused root with its rule.
//!
//! When the host's /usr/share/ca-certificates/mozilla differs from the committed
//! manifest, shapes of the host's set are generated once per test run (python3 and the
//! openssl CLI, into CARGO_TARGET_TMPDIR) and checked too; under `CI=true` a host set
//! that cannot be read is a failure. `TLSKIT_TEST_MOZILLA_SET=DIR` checks another set.

use crate::net_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use net_support::pki::{webpki_params, Extras, Role};
use net_support::*;
use rcgen::{ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// Where Debian's ca-certificates package puts Mozilla's roots; `TLSKIT_TEST_MOZILLA_SET`
/// names another directory of `*.crt` (to try the generation path, or another distribution's
/// set).
fn host_set() -> String {
    std::env::var("TLSKIT_TEST_MOZILLA_SET")
        .unwrap_or_else(|_| "/usr/share/ca-certificates/mozilla".to_string())
}

fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mozilla-shapes")
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// One root shape: the synthetic root, its intermediate and that one's key.
struct Shape {
    slug: String,
    original: String,
    anomalies: String,
    root: PathBuf,
    inter: PathBuf,
    inter_key: PathBuf,
}

impl Shape {
    /// How a failure names the root: the synthetic file and the original it copies.
    fn name(&self) -> String {
        format!(
            "{} (Mozilla root {}; shape: {})",
            self.slug, self.original, self.anomalies
        )
    }
}

/// A corpus directory: roots/, intermediates/, manifest.tsv.
struct Corpus {
    what: String,
    dir: PathBuf,
    shapes: Vec<Shape>,
    fingerprints: BTreeSet<String>,
}

impl Corpus {
    fn roots_dir(&self) -> PathBuf {
        self.dir.join("roots")
    }

    fn load(dir: &Path, what: &str) -> Self {
        let manifest = dir.join("manifest.tsv");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let mut shapes = Vec::new();
        let mut fingerprints = BTreeSet::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 7, "{}: malformed line {line}", manifest.display());
            let slug = f[0].to_string();
            let shape = Shape {
                root: dir.join("roots").join(format!("{slug}.pem")),
                inter: dir.join("intermediates").join(format!("{slug}.pem")),
                inter_key: dir.join("intermediates").join(format!("{slug}.key")),
                original: f[1].to_string(),
                anomalies: f[6].to_string(),
                slug,
            };
            for p in [&shape.root, &shape.inter, &shape.inter_key] {
                assert!(p.is_file(), "{}: missing {}", what, p.display());
            }
            fingerprints.insert(f[2].to_string());
            shapes.push(shape);
        }
        let on_disk = std::fs::read_dir(dir.join("roots"))
            .expect("roots directory")
            .count();
        assert_eq!(
            on_disk,
            shapes.len(),
            "{what}: roots/ holds other files than the manifest's"
        );
        Self {
            what: what.to_string(),
            dir: dir.to_path_buf(),
            shapes,
            fingerprints,
        }
    }
}

/// The SHA-256 fingerprints (lowercase hex) of the host's Mozilla roots by file name, or
/// why they cannot be read.
fn host_fingerprints() -> Result<BTreeMap<String, String>, String> {
    use base64::Engine;
    use sha2::Digest;
    let set = host_set();
    let entries = std::fs::read_dir(&set).map_err(|e| format!("{set}: {e}"))?;
    let mut out = BTreeMap::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{set}: {e}"))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("crt") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let b64: String = text
            .split("-----BEGIN CERTIFICATE-----")
            .nth(1)
            .and_then(|t| t.split("-----END CERTIFICATE-----").next())
            .ok_or_else(|| format!("{}: no certificate", path.display()))?
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let fp: String = sha2::Sha256::digest(&der)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        out.insert(name.unwrap_or_default(), fp);
    }
    if out.is_empty() {
        return Err(format!("{set} holds no *.crt"));
    }
    Ok(out)
}

/// The corpora to check: the committed one, and the host's set when it differs (made
/// once per test binary run, shared by the tests).
fn corpora() -> Vec<&'static Corpus> {
    static COMMITTED: OnceLock<Corpus> = OnceLock::new();
    static HOST: OnceLock<Option<Corpus>> = OnceLock::new();
    let committed = COMMITTED.get_or_init(|| Corpus::load(&committed_dir(), "committed corpus"));
    assert!(
        !committed.shapes.is_empty(),
        "the committed corpus is empty: {}",
        committed.dir.display()
    );
    let host = HOST.get_or_init(|| host_corpus(committed));
    let mut all = vec![committed];
    all.extend(host.as_ref());
    all
}

fn host_corpus(committed: &Corpus) -> Option<Corpus> {
    let set = host_set();
    let host = match host_fingerprints() {
        Ok(h) => h,
        Err(why) => {
            // A failure under CI=true; elsewhere a note, and the committed corpus alone.
            cannot_run("mozilla_shapes (the host's set)", &why);
            return None;
        }
    };
    let host_fps: BTreeSet<String> = host.values().cloned().collect();
    if host_fps == committed.fingerprints {
        eprintln!(
            "mozilla shapes: the host's {set} ({} roots) is the set the committed corpus \
             was made from; no other shapes to check",
            host.len()
        );
        return None;
    }
    let new: Vec<&str> = host
        .iter()
        .filter(|(_, fp)| !committed.fingerprints.contains(*fp))
        .map(|(n, _)| n.as_str())
        .collect();
    let gone = committed.fingerprints.difference(&host_fps).count();
    let tag: String = host_fps
        .iter()
        .flat_map(|fp| fp.bytes())
        .fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        })
        .to_string();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mozilla-shapes-host-{tag}"));
    eprintln!(
        "mozilla shapes: the host's {set} ({} roots) differs from the committed corpus \
         ({} roots): {} not in it{}{}, {gone} of it gone; checking the host's set too, \
         shapes in {}",
        host.len(),
        committed.shapes.len(),
        new.len(),
        if new.is_empty() { "" } else { ": " },
        new.join(", "),
        out.display()
    );
    if !out.join("manifest.tsv").is_file() {
        let partial = out.with_extension("partial");
        let _ = std::fs::remove_dir_all(&partial);
        let t = Instant::now();
        let o = Command::new("python3")
            .arg(committed_dir().join("generate.py"))
            .args(["--src", &set, "--out"])
            .arg(&partial)
            .stdin(Stdio::null())
            .output()
            .expect("python3 (scripts/setup installs it) to run generate.py");
        assert!(
            o.status.success(),
            "generate.py on the host's set failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::rename(&partial, &out).expect("host shapes in place");
        eprintln!("mozilla shapes: host shapes made in {:?}", t.elapsed());
    }
    Some(Corpus::load(&out, "host's set"))
}

/// A compliant leaf under each intermediate of `corpus`, in a directory of the test's
/// own: `N.chain.pem` (leaf, intermediate), `N.leaf.pem`, `N.key`; host
/// `shape-N.corpus.tlskit.example` (also its CN); serverAuth and clientAuth; valid from
/// an hour ago for 90 days.
struct Leaves {
    dir: tempfile::TempDir,
}

impl Leaves {
    fn make(corpus: &Corpus) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let now = time::OffsetDateTime::now_utc();
        for (i, shape) in corpus.shapes.iter().enumerate() {
            let inter_pem = std::fs::read_to_string(&shape.inter).expect("intermediate");
            let key_pem = std::fs::read_to_string(&shape.inter_key).expect("intermediate key");
            let key = KeyPair::from_pem(&key_pem).expect("intermediate key");
            let issuer = Issuer::from_ca_cert_pem(&inter_pem, key).expect("intermediate");
            let host = Self::host(i);
            let mut p = webpki_params(&host, Role::Server, &[], Extras::default());
            p.extended_key_usages = vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ];
            p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            p.is_ca = IsCa::ExplicitNoCa;
            p.not_before = now - time::Duration::hours(1);
            p.not_after = now + time::Duration::days(90);
            let k = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("keygen");
            let leaf = p.signed_by(&k, &issuer).expect("leaf");
            let write = |name: String, text: &str| {
                std::fs::write(dir.path().join(name), text).expect("write leaf");
            };
            write(format!("{i}.leaf.pem"), &leaf.pem());
            write(
                format!("{i}.chain.pem"),
                &format!("{}{inter_pem}", leaf.pem()),
            );
            write(format!("{i}.key"), &k.serialize_pem());
        }
        Self { dir }
    }

    fn host(i: usize) -> String {
        format!("shape-{i:03}.corpus.tlskit.example")
    }

    fn path(&self, i: usize, what: &str) -> String {
        s(&self.dir.path().join(format!("{i}.{what}")))
    }
}

/// Run `check` on every shape, a few at a time; returns the failures (shape index and
/// what went wrong), in corpus order.
fn each_shape(
    corpus: &Corpus,
    workers: usize,
    check: impl Fn(usize, &Shape) -> Option<String> + Sync,
) -> Vec<(usize, String)> {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(shape) = corpus.shapes.get(i) else {
                    break;
                };
                if let Some(why) = check(i, shape) {
                    failures.lock().expect("failures").push((i, why));
                }
            });
        }
    });
    let mut f = failures.into_inner().expect("failures");
    f.sort();
    f
}

/// Every refused root by name and rule, and the counts by rule (None: all accepted).
fn report(what: &str, corpus: &Corpus, failures: &[(usize, String, String)]) -> Option<String> {
    if failures.is_empty() {
        eprintln!(
            "{what}: all {} root shapes of the {} accepted",
            corpus.shapes.len(),
            corpus.what
        );
        return None;
    }
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, rule, _) in failures {
        *by_rule.entry(rule.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r}: {n}")).collect();
    let lines: Vec<String> = failures
        .iter()
        .map(|(i, rule, why)| format!("  {} refused, rule {rule}: {why}", corpus.shapes[*i].name()))
        .collect();
    Some(format!(
        "{what}: {} of {} root shapes of the {} refused ({})\n{}",
        failures.len(),
        corpus.shapes.len(),
        corpus.what,
        counts.join(", "),
        lines.join("\n")
    ))
}

/// Fail with the reports of every corpus that had a refusal.
#[track_caller]
fn assert_no_refusals(test: &str, reports: Vec<Option<String>>, t0: Instant) {
    eprintln!("{test}: {:?}", t0.elapsed());
    let refused: Vec<String> = reports.into_iter().flatten().collect();
    assert!(refused.is_empty(), "{}", refused.join("\n"));
}

/// Workers for the checks: the machine's parallelism, at least 2, at most 4 (each check
/// is one or two processes).
fn workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 4)
}

/// The rule and reason of a refusal from `verify`/`connect --json`.
fn rule_and_reason(code: i32, v: &serde_json::Value, stderr: &str) -> (String, String) {
    let rule = v["rule"].as_str().unwrap_or("(none)").to_string();
    let reason = v["reason"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("exit {code}: {}", stderr.trim()));
    (rule, reason)
}

/// `tlskit verify --roots ROOT --intermediates INT --cert LEAF --host NAME` accepts the
/// chain of every root shape (exit 0, a path of three certificates).
#[test]
fn mozilla_shapes_verify_accepts_every_root() {
    let t0 = Instant::now();
    let mut reports = Vec::new();
    for corpus in corpora() {
        let leaves = Leaves::make(corpus);
        let warned: Mutex<BTreeMap<String, usize>> = Mutex::default();
        let failures = each_shape(corpus, workers(), |i, shape| {
            let host = Leaves::host(i);
            let out = tlskit(&[
                "verify",
                "--roots",
                &s(&shape.root),
                "--intermediates",
                &s(&shape.inter),
                "--cert",
                &leaves.path(i, "leaf.pem"),
                "--host",
                &host,
                "--json",
            ]);
            let code = out.status.code().unwrap_or(-1);
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
            if code == 0 && v["valid"] == true && v["chain"].as_array().map(Vec::len) == Some(3) {
                // Accepted; what it warned about (the `browser` profile's hygiene rules)
                // is counted for the output, not judged.
                for w in v["warnings"].as_array().into_iter().flatten() {
                    let key = format!(
                        "{} on certificate {}",
                        w["rule"].as_str().unwrap_or("?"),
                        w["position"]
                    );
                    *warned.lock().expect("warnings").entry(key).or_default() += 1;
                }
                return None;
            }
            let (rule, reason) = rule_and_reason(code, &v, &String::from_utf8_lossy(&out.stderr));
            Some(format!("{rule}\t{reason}"))
        });
        let warned = warned.into_inner().expect("warnings");
        if !warned.is_empty() {
            let counts: Vec<String> = warned.iter().map(|(w, n)| format!("{w}: {n}")).collect();
            eprintln!(
                "tlskit verify: warnings on the {}'s accepted chains: {}",
                corpus.what,
                counts.join(", ")
            );
        }
        reports.push(report("tlskit verify", corpus, &split(failures)));
    }
    assert_no_refusals("mozilla_shapes_verify_accepts_every_root", reports, t0);
}

/// (index, "rule\treason") -> (index, rule, reason).
fn split(f: Vec<(usize, String)>) -> Vec<(usize, String, String)> {
    f.into_iter()
        .map(|(i, t)| {
            let (r, why) = t.split_once('\t').unwrap_or(("(none)", &t));
            (i, r.to_string(), why.to_string())
        })
        .collect()
}

/// `openssl s_server -www` on a port the kernel picks (no race with other servers for a
/// port once free): the child, killed on drop, and the port from its `ACCEPT` line.
fn s_server(cert: &str, key: &str, chain: &Path) -> Result<(Guard, u16), String> {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new("openssl")
        .args([
            "s_server",
            "-accept",
            "127.0.0.1:0",
            "-www",
            "-cert",
            cert,
            "-key",
            key,
        ])
        .arg("-cert_chain")
        .arg(chain)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("openssl s_server: {e}"))?;
    let out = child.stdout.take().ok_or("openssl s_server: no stdout")?;
    let guard = Guard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(port) = line
                .strip_prefix("ACCEPT ")
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse::<u16>().ok())
            {
                let _ = tx.send(port);
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(10))
        .map_err(|_| "openssl s_server did not report its port".to_string())?;
    Ok((guard, port))
}

/// `tlskit connect --roots ROOT` to an `openssl s_server` presenting leaf and
/// intermediate accepts every root shape (exit 0, verified).
#[test]
fn mozilla_shapes_connect_to_openssl_s_server_accepts_every_root() {
    require("openssl");
    let t0 = Instant::now();
    let mut reports = Vec::new();
    for corpus in corpora() {
        let leaves = Leaves::make(corpus);
        let failures = each_shape(corpus, workers(), |i, shape| {
            let (_server, port) = match s_server(
                &leaves.path(i, "leaf.pem"),
                &leaves.path(i, "key"),
                &shape.inter,
            ) {
                Ok(started) => started,
                Err(why) => return Some(format!("(setup)\t{why}")),
            };
            let target = format!("127.0.0.1:{port}");
            let (code, v) = connect_json(&[
                &target,
                "--roots",
                &s(&shape.root),
                "--servername",
                &Leaves::host(i),
            ]);
            if code == 0 && v["verified"] == true {
                return None;
            }
            let (rule, reason) = rule_and_reason(code, &v, "");
            Some(format!("{rule}\t{reason}"))
        });
        reports.push(report("tlskit connect", corpus, &split(failures)));
    }
    assert_no_refusals(
        "mozilla_shapes_connect_to_openssl_s_server_accepts_every_root",
        reports,
        t0,
    );
}

/// `tlskit serve --client-ca DIR`, DIR holding every synthetic root, accepts a client
/// (`tlskit connect --cert`) presenting each leaf and its intermediate. A refused client
/// is tried again against a server of its own, whose one log line gives the rule.
#[test]
fn mozilla_shapes_serve_client_ca_accepts_every_root() {
    let t0 = Instant::now();
    let pki = Pki::new();
    let (chain, key, ca) = (
        s(&pki.path("chain.pem")),
        s(&pki.path("leaf.key")),
        s(&pki.path("ca.pem")),
    );
    let serve = |client_ca: &str| {
        Serve::start(&[
            "--cert",
            &chain,
            "--key",
            &key,
            "--respond",
            "http",
            "--client-ca",
            client_ca,
        ])
    };
    let mut reports = Vec::new();
    for corpus in corpora() {
        let leaves = Leaves::make(corpus);
        let srv = serve(&s(&corpus.roots_dir()));
        let target = srv.addr().to_string();
        let client = |i: usize, target: &str| {
            connect_json(&[
                target,
                "--roots",
                &ca,
                "--servername",
                "test.example",
                "--cert",
                &leaves.path(i, "chain.pem"),
                "--key",
                &leaves.path(i, "key"),
            ])
        };
        let refused = each_shape(corpus, workers(), |i, _| {
            let (code, v) = client(i, &target);
            (code != 0 || v["verified"] != true).then(|| format!("exit {code}"))
        });
        // Each refused client alone against a server trusting its root alone: the
        // server's handshake_failed line has the rule and the reason.
        let failures: Vec<(usize, String, String)> = refused
            .into_iter()
            .map(|(i, exit)| {
                let one = serve(&s(&corpus.shapes[i].root));
                let (code, _) = client(i, &one.addr().to_string());
                let logged = one.wait_log("event=handshake_failed", Duration::from_secs(5));
                let log = one.stderr();
                let line = log
                    .lines()
                    .find(|l| l.contains("event=handshake_failed"))
                    .unwrap_or("");
                let rule = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("rule="))
                    .unwrap_or(if logged { "(none)" } else { "(not logged)" });
                (
                    i,
                    rule.to_string(),
                    format!("{exit} with all roots, exit {code} alone; server: {line}"),
                )
            })
            .collect();
        // A refusal the client did not see would still be in the server's log.
        let log = srv.stderr();
        if failures.is_empty() && log.contains("event=handshake_failed") {
            reports.push(Some(format!(
                "serve --client-ca with the {} logged a refused handshake: {log}",
                corpus.what
            )));
        }
        reports.push(report("tlskit serve --client-ca", corpus, &failures));
    }
    assert_no_refusals(
        "mozilla_shapes_serve_client_ca_accepts_every_root",
        reports,
        t0,
    );
}

/// The corpus keeps its originals' shapes: `generate.py --check` compares every synthetic
/// root whose original is in the host's set (by fingerprint) field by field (serial,
/// names, signature algorithm, extensions and criticality, key-identifier forms, key
/// type), and finds none with its original's key.
#[test]
fn mozilla_shapes_corpus_keeps_the_originals_shapes() {
    let all = corpora();
    let set = host_set();
    if let Err(why) = host_fingerprints() {
        cannot_run("mozilla_shapes_corpus_keeps_the_originals_shapes", &why);
        return;
    }
    for corpus in all {
        let o = Command::new("python3")
            .arg(committed_dir().join("generate.py"))
            .args(["--check", "--src", &set, "--out"])
            .arg(&corpus.dir)
            .stdin(Stdio::null())
            .output()
            .expect("python3 (scripts/setup installs it) to run generate.py");
        let text = String::from_utf8_lossy(&o.stdout);
        eprint!("{}: {text}", corpus.what);
        assert!(
            o.status.success(),
            "the {} differs from its originals in {set}:\n{text}{}",
            corpus.what,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
