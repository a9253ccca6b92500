//! Resource bounds of hostile inputs through the real binary (issue #7): a directory of
//! very many files, a 2 GB file, FIFOs and devices, a bundle of a million tiny PEM
//! blocks, symlink loops and over-deep symlink chains, a 100-certificate peer chain and a
//! chain built to maximise path-building work. Each run must finish, report the problem
//! clearly (errors summarised per kind, not one line per bad input) and stay within a
//! generous memory bound: the child's peak RSS (VmHWM, sampled from /proc until it exits).
//! Timings are printed, never asserted tightly (CI is a noisy 2-core VM).
#![allow(clippy::unwrap_used)]

use crate::store_pki;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tlskit");

/// A finished run: output, peak RSS of the child in KiB (when a sample was read), wall time.
struct Run {
    out: Output,
    peak: Option<u64>,
    wall: Duration,
    args: Vec<String>,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.out.stdout).unwrap_or_else(|e| {
            panic!(
                "bad JSON ({e}): {}\nstderr: {}",
                String::from_utf8_lossy(&self.out.stdout),
                self.stderr()
            )
        })
    }
    /// The child's peak RSS in KiB. A run of which no VmHWM sample was read fails here
    /// rather than reporting 0 (which every `peak < N` bound would accept).
    fn peak_kib(&self) -> u64 {
        self.peak.unwrap_or_else(|| {
            panic!(
                "tlskit {:?}: no VmHWM sample was read from /proc before it exited, so its \
                 peak RSS is unknown and no memory bound can be checked",
                self.args
            )
        })
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs of a command that exited with 2 before any sample was read, tried again.
const UNSAMPLED_RETRIES: usize = 3;

/// Run `tlskit ARGS` with stdout/stderr in files (no pipe can fill up), sampling the
/// child's VmHWM right after the spawn (the child has exec'd by then), then as often as
/// it can for 200 ms and every 5 ms after that until it exits; killed after `limit` (a
/// hang is a failure, reported as such). A child can still exit before the first read (a refusal takes a millisecond or
/// two; the test thread may be descheduled): such a run is made again when it exited 2,
/// which by the CLI's contract wrote nothing; otherwise, or after [`UNSAMPLED_RETRIES`]
/// tries, [`Run::peak_kib`] fails.
fn run_measured(args: &[&str], limit: Duration) -> Run {
    let mut tries = 1;
    loop {
        let r = run_sampled(args, limit);
        if r.peak.is_some() || r.code() != Some(2) || tries > UNSAMPLED_RETRIES {
            return r;
        }
        eprintln!("tlskit {args:?} exited before its VmHWM was read (try {tries}); again");
        tries += 1;
    }
}

fn run_sampled(args: &[&str], limit: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (o, e) = (dir.path().join("out"), dir.path().join("err"));
    let t0 = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(fs::File::create(&o).unwrap())
        .stderr(fs::File::create(&e).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak: Option<u64> = None;
    let status = loop {
        if let Some(h) = vm_hwm_kib(pid) {
            peak = Some(peak.map_or(h, |p| p.max(h)));
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "tlskit {args:?} still running after {limit:?} (killed): {}",
                fs::read_to_string(&e).unwrap_or_default()
            );
        }
        // Densely at first (a refusal is over in a few milliseconds), then every 5 ms.
        if t0.elapsed() < Duration::from_millis(200) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let wall = t0.elapsed();
    Run {
        out: Output {
            status,
            stdout: fs::read(&o).unwrap(),
            stderr: fs::read(&e).unwrap(),
        },
        peak,
        wall,
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

/// A run of which no VmHWM sample was read has no peak: asking for it fails (it used to
/// be 0, under every bound).
#[test]
#[should_panic(expected = "no VmHWM sample was read")]
fn bounds_runner_fails_without_a_sample() {
    use std::os::unix::process::ExitStatusExt;
    let r = Run {
        out: Output {
            status: std::process::ExitStatus::from_raw(0),
            stdout: Vec::new(),
            stderr: Vec::new(),
        },
        peak: None,
        wall: Duration::ZERO,
        args: vec!["show".into()],
    };
    assert!(r.peak_kib() < 64 * 1024);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A temp dir for the many-files tests: in /dev/shm (tmpfs) where there is one, since
/// creating 100,000 files on a busy disk took 5-80 s here (the journal, other jobs) and
/// the test is about tlskit's bounds, not the disk; else the default temp dir.
fn many_files_tempdir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("tlskit-bounds-")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

/// Create `n` empty files `f0000000`... in `dir`, on every core.
fn many_empty_files(dir: &Path, n: usize) {
    let threads = std::thread::available_parallelism()
        .map_or(2, |c| c.get())
        .min(8);
    std::thread::scope(|sc| {
        for t in 0..threads {
            sc.spawn(move || {
                for i in (t..n).step_by(threads) {
                    fs::File::create(dir.join(format!("f{i:07}"))).unwrap();
                }
            });
        }
    });
}

/// One good CA (`ca.pem`) among `n` empty files: the load finishes, the CA is loaded,
/// every empty file is counted as `no-certificates`, stderr holds a bounded number of
/// lines (20 per kind plus a count), the JSON keeps at most 1,000 issues per kind and the
/// counts of all, and peak memory stays under `max_mib`.
fn dir_of_many_files(n: usize, max_mib: u64, limit: Duration, text_too: bool) {
    let d = many_files_tempdir();
    let t = Instant::now();
    many_empty_files(d.path(), n);
    fs::write(d.path().join("ca.pem"), store_pki::ca("Bounds Root")).unwrap();
    let made = t.elapsed();
    let r = run_measured(&["store", "show", s(d.path()), "--json"], limit);
    eprintln!(
        "{n} files: created in {:.1} s; `store show --json` {:.2} s, peak RSS {} MiB, \
         {} stderr lines",
        made.as_secs_f64(),
        r.wall.as_secs_f64(),
        r.peak_kib() / 1024,
        r.stderr().lines().count()
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["anchors"], 1);
    assert_eq!(j["files"], n + 1);
    assert_eq!(
        j["error_counts"]["no-certificates"], n,
        "{}",
        j["error_counts"]
    );
    assert_eq!(j["errors_total"], n);
    let kept = n.min(tlskit_store::MAX_ISSUES_PER_KIND);
    assert_eq!(j["errors"].as_array().unwrap().len(), kept);
    assert_eq!(j["errors_omitted"], n - kept);
    assert!(j["errors"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("f0000000"));
    let err = r.stderr();
    assert!(err.lines().count() <= 25, "stderr not summarised: {err}");
    assert!(
        err.contains(&format!(
            "{} more no-certificates problem(s) not shown ({n} in all",
            n - 20
        )),
        "{err}"
    );
    assert!(
        r.peak_kib() < max_mib * 1024,
        "peak RSS {} KiB over {max_mib} MiB",
        r.peak_kib()
    );
    if !text_too {
        return;
    }
    // Text mode: the total, and the same summary.
    let r = run_measured(&["store", "show", s(d.path())], limit);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let text = String::from_utf8_lossy(&r.out.stdout).into_owned();
    assert!(
        text.contains(&format!("problems     {n}  (listed on stderr)")),
        "{text}"
    );
    assert!(r.stderr().lines().count() <= 25);
}

#[test]
fn bounds_store_dir_100k_files() {
    dir_of_many_files(100_000, 256, Duration::from_secs(300), true);
}

/// The issue's full size, in the normal suite: creating a million files took 6-17 s on
/// tmpfs (/dev/shm, used when present) and the load 7.5-19 s in a debug build (160 MiB
/// peak); the text-mode pass is left to the 100,000-file test.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: a million-file directory"
)]
fn bounds_store_dir_1m_files() {
    dir_of_many_files(1_000_000, 1024, Duration::from_secs(900), false);
}

/// All-junk directory: nothing loadable (exit 2), the summary and counts still given.
#[test]
fn bounds_store_dir_only_junk_is_summarised() {
    let d = many_files_tempdir();
    many_empty_files(d.path(), 5_000);
    let r = run_measured(
        &["store", "show", s(d.path()), "--json"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
    let err = r.stderr();
    assert!(err.lines().count() <= 25, "{err}");
    assert!(
        err.contains("4980 more no-certificates problem(s) not shown (5000 in all"),
        "{err}"
    );
    assert!(err.contains("nothing loadable"), "{err}");
}

/// A 2 GB sparse file is refused by its size before any read, naming the file and the
/// limit; a FIFO (no writer) and /dev/zero are refused as not regular files without
/// being opened for reading, so no endless source is ever read (regular files are
/// read through a 64 MiB + 1 byte bound even if they grow).
#[test]
fn bounds_store_2gb_file_fifo_and_device() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.pem");
    fs::File::create(&big).unwrap().set_len(2 << 30).unwrap();
    fs::write(d.path().join("ca.pem"), store_pki::ca("Bounds Root")).unwrap();
    let limit = Duration::from_secs(60);
    let r = run_measured(&["store", "show", s(&big)], limit);
    eprintln!(
        "2 GiB sparse file: {:.3} s, peak RSS {} MiB",
        r.wall.as_secs_f64(),
        r.peak_kib() / 1024
    );
    assert_eq!(r.code(), Some(2));
    assert!(
        r.stderr().contains(&format!(
            "{}: file too large (2147483648 bytes; limit 67108864 bytes)",
            big.display()
        )),
        "{}",
        r.stderr()
    );
    assert!(r.peak_kib() < 64 * 1024, "{} KiB", r.peak_kib());
    // In a directory with a good CA: the CA loads, the big file is one JSON error.
    let r = run_measured(&["store", "show", s(d.path()), "--json"], limit);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["anchors"], 1);
    assert_eq!(j["errors"][0]["kind"], "too-large", "{j}");
    assert_eq!(j["errors"][0]["path"], s(&big));
    assert!(r.peak_kib() < 64 * 1024, "{} KiB", r.peak_kib());

    // A FIFO nobody writes to: refused at once (opening it would block forever).
    let fifo = d.path().join("fifo.pem");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    for src in [s(&fifo), "/dev/zero"] {
        let r = run_measured(&["store", "show", src], limit);
        assert_eq!(r.code(), Some(2), "{src}: {}", r.stderr());
        assert!(
            r.stderr().contains(&format!("{src}: not a regular file")),
            "{}",
            r.stderr()
        );
    }
    // And inside a directory, next to the CA.
    let r = run_measured(&["store", "show", s(d.path()), "--json"], limit);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let j = r.json();
    let kinds: Vec<(String, String)> = j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("not-regular".into(), s(&fifo).into())),
        "{kinds:?}"
    );
}

/// ~59 MB of `-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n` (a million
/// blocks, each a 1-byte "certificate"), then one real CA: the CA is found, the million
/// bad blocks are counted (1,000 kept with block numbers), stderr stays short.
#[test]
fn bounds_store_million_tiny_pem_blocks() {
    const N: usize = 1_000_000;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("tiny.pem");
    {
        let block = b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n";
        let mut buf = Vec::with_capacity(block.len() * N + 1024);
        for _ in 0..N {
            buf.extend_from_slice(block);
        }
        buf.extend_from_slice(store_pki::ca("Bounds Root").as_bytes());
        fs::write(&p, &buf).unwrap();
    }
    let r = run_measured(
        &["store", "show", s(&p), "--json"],
        Duration::from_secs(300),
    );
    eprintln!(
        "{N} tiny PEM blocks (59 MB): {:.2} s, peak RSS {} MiB",
        r.wall.as_secs_f64(),
        r.peak_kib() / 1024
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["anchors"], 1);
    assert_eq!(
        j["error_counts"]["malformed-der"], N,
        "{}",
        j["error_counts"]
    );
    assert_eq!(j["errors"].as_array().unwrap().len(), 1000);
    assert_eq!(j["errors"][999]["block"], 1000);
    let err = r.stderr();
    assert!(err.lines().count() <= 25, "{err}");
    assert!(
        err.contains("999980 more malformed-der problem(s) not shown (1000000 in all"),
        "{err}"
    );
    assert!(r.peak_kib() < 512 * 1024, "{} KiB", r.peak_kib());
}

#[cfg(unix)]
fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Symlink loops (a -> b -> a, x -> x), a chain of 60 links (deeper than the kernel's 40),
/// a directory link to its parent and to itself: the load finishes, every loop and
/// over-deep chain is reported as `symlink-loop` with its path, links within the limit
/// are aliases of the CA, directory links are not descended (directories are flat).
#[test]
fn bounds_store_symlink_loops_and_deep_chains() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("cas");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("ca.pem"), store_pki::ca("Bounds Root")).unwrap();
    symlink("b", &dir.join("a"));
    symlink("a", &dir.join("b"));
    symlink("x", &dir.join("x"));
    symlink("..", &dir.join("up"));
    symlink(".", &dir.join("self"));
    // l00 -> l01 -> ... -> l59 -> ca.pem: l00..l19 need more than 40 links.
    for i in 0..60 {
        let target = if i == 59 {
            "ca.pem".to_string()
        } else {
            format!("l{:02}", i + 1)
        };
        symlink(&target, &dir.join(format!("l{i:02}")));
    }
    // A directory nested 200 deep with a CA at the bottom, and a link cycle inside it.
    let mut deep = dir.join("nest");
    for _ in 0..200 {
        deep = deep.join("n");
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("ca.pem"), store_pki::ca("Deep Root")).unwrap();
    symlink(s(&dir), &deep.join("back"));

    let limit = Duration::from_secs(60);
    let r = run_measured(&["store", "show", s(&dir), "--json"], limit);
    eprintln!(
        "symlink tree: {:.3} s, peak RSS {} MiB",
        r.wall.as_secs_f64(),
        r.peak_kib() / 1024
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["anchors"], 1, "flat: the nested CA is not read");
    assert_eq!(j["files"], 1);
    assert_eq!(j["aliases"], 40, "l20..l59 resolve to ca.pem");
    let mut loops: Vec<String> = j["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "symlink-loop")
        .map(|e| {
            Path::new(e["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    loops.sort();
    let mut want: Vec<String> = ["a", "b", "x"].iter().map(|x| x.to_string()).collect();
    want.extend((0..20).map(|i| format!("l{i:02}")));
    want.sort();
    assert_eq!(loops, want);
    assert_eq!(j["errors_total"], 23, "{j}");
    assert!(r
        .stderr()
        .contains(&format!("{}: symlink loop", dir.join("a").display())));
    // A source that is itself a loop, or an over-deep chain: exit 2, named.
    for src in [dir.join("a"), dir.join("l00")] {
        let r = run_measured(&["store", "show", s(&src)], limit);
        assert_eq!(r.code(), Some(2));
        assert!(
            r.stderr()
                .contains(&format!("{}: symlink loop", src.display())),
            "{}",
            r.stderr()
        );
    }
    // The 200-deep tree given directly: only its top level is read (flat).
    let r = run_measured(&["store", "show", s(&dir.join("nest"))], limit);
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
}

// ---- peer chains: `tlskit verify` ----

fn verify_json(roots: &Path, cert: &Path) -> Run {
    run_measured(
        &[
            "verify",
            "--roots",
            s(roots),
            "--cert",
            s(cert),
            "--host",
            "leaf.example",
            "--json",
        ],
        Duration::from_secs(60),
    )
}

/// A 100-certificate chain is refused before any path building (exit 1, the count and
/// the limit in the reason).
#[test]
fn bounds_verify_hundred_certificate_chain() {
    let d = tempfile::tempdir().unwrap();
    let root = store_pki::root("Bounds Root");
    let mut cas = vec![store_pki::signed("Bounds I0", true, &root)];
    for i in 1..98 {
        let next = store_pki::signed(&format!("Bounds I{i}"), true, cas.last().unwrap());
        cas.push(next);
    }
    let leaf = store_pki::signed("leaf.example", false, cas.last().unwrap());
    let mut pem = leaf.pem.clone();
    for c in cas.iter().rev() {
        pem.push_str(&c.pem);
    }
    pem.push_str(&root.pem);
    let (roots, cert) = (d.path().join("root.pem"), d.path().join("chain.pem"));
    fs::write(&roots, &root.pem).unwrap();
    fs::write(&cert, pem).unwrap();
    let r = verify_json(&roots, &cert);
    assert_eq!(r.code(), Some(1), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["valid"], false);
    assert_eq!(
        j["reason"], "the chain has 100 certificates; at most 16 are accepted",
        "{j}"
    );
}

/// 15 intermediates with one subject name, each signed by the previous, under an anchor
/// of that name: rustls-webpki's budget of 100 signature checks stops the search, and
/// the reason says so (exit 1).
#[test]
fn bounds_verify_path_building_budget() {
    let d = tempfile::tempdir().unwrap();
    let root = store_pki::root("Bogus Subject");
    let mut cas = vec![store_pki::signed("Bogus Subject", true, &root)];
    for _ in 1..15 {
        let next = store_pki::signed("Bogus Subject", true, cas.last().unwrap());
        cas.push(next);
    }
    let leaf = store_pki::signed("leaf.example", false, cas.last().unwrap());
    let mut pem = leaf.pem.clone();
    for c in cas.iter().rev() {
        pem.push_str(&c.pem);
    }
    let (roots, cert) = (d.path().join("root.pem"), d.path().join("chain.pem"));
    fs::write(&roots, &root.pem).unwrap();
    fs::write(&cert, pem).unwrap();
    let r = verify_json(&roots, &cert);
    eprintln!(
        "same-subject chain of 16: `tlskit verify` {:.3} s",
        r.wall.as_secs_f64()
    );
    assert_eq!(r.code(), Some(1), "{}", r.stderr());
    let j = r.json();
    assert_eq!(j["valid"], false);
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.contains("path building stopped at its limit of 100 signature checks"),
        "{reason}"
    );
}

/// A 2 GB sparse file as --cert is refused by its size (exit 2), without reading it;
/// /dev/zero is read only up to the 64 MiB limit.
#[test]
fn bounds_verify_2gb_cert_file() {
    let d = tempfile::tempdir().unwrap();
    let root = store_pki::root("Bounds Root");
    let roots = d.path().join("root.pem");
    fs::write(&roots, &root.pem).unwrap();
    let big = d.path().join("big.pem");
    fs::File::create(&big).unwrap().set_len(2 << 30).unwrap();
    let r = verify_json(&roots, &big);
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr().contains(&format!(
            "{}: file too large (2147483648 bytes; limit 67108864 bytes)",
            big.display()
        )),
        "{}",
        r.stderr()
    );
    assert!(r.peak_kib() < 64 * 1024, "{} KiB", r.peak_kib());
    // An endless source (a character device): refused before a byte is read.
    let r = verify_json(&roots, Path::new("/dev/zero"));
    eprintln!(
        "--cert /dev/zero: {:.2} s, peak RSS {} MiB",
        r.wall.as_secs_f64(),
        r.peak_kib() / 1024
    );
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr()
            .contains("/dev/zero: not a regular file (character device)"),
        "{}",
        r.stderr()
    );
    assert!(r.peak_kib() < 64 * 1024, "{} KiB", r.peak_kib());
}

/// Every command that reads a user-named file goes through the one bounded reader
/// (tlskit-io): `/dev/zero` and a FIFO are refused before anything is read or waited on,
/// a 1 GiB sparse file by its size before reading; exit 2, the file and the limit named,
/// small peak RSS, well inside the kill limit. (Before: `show /dev/zero` grew until memory
/// ran out, a 1 GB file cost 1-2 GB of RSS, a FIFO hung.)
#[test]
fn bounds_every_reader_refuses_devices_fifos_and_huge_files() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.pem");
    fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
    let fifo = d.path().join("fifo.pem");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let ca = d.path().join("ca");
    let r = run_measured(
        &["ca", "init", s(&ca), "--subject", "CN=Bounds CA"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let roots = d.path().join("root.pem");
    fs::write(&roots, store_pki::ca("Bounds Root")).unwrap();
    let out = d.path().join("out");
    let (key_out, cert_out) = (d.path().join("k.pem"), d.path().join("c.pem"));
    let pw = d.path().join("pw");
    fs::write(&pw, "secret\n").unwrap();
    for input in [Path::new("/dev/zero"), &fifo, &big] {
        let f = s(input);
        let commands: Vec<Vec<&str>> = vec![
            vec!["show", f],
            vec!["lint", f],
            vec!["verify", "--cert", f, "--roots", s(&roots)],
            vec![
                "p12",
                "import",
                f,
                "--key-out",
                s(&key_out),
                "--cert-out",
                s(&cert_out),
                "--password-file",
                s(&pw),
            ],
            vec![
                "csr",
                "new",
                "--key",
                f,
                "--subject",
                "CN=x",
                "--out",
                s(&out),
            ],
            vec!["ca", "issue", s(&ca), "--csr", f, "--out", s(&out)],
        ];
        for args in commands {
            let r = run_measured(&args, Duration::from_secs(60));
            eprintln!(
                "{args:?}: {:.3} s, peak RSS {} MiB",
                r.wall.as_secs_f64(),
                r.peak_kib() / 1024
            );
            assert_eq!(r.code(), Some(2), "{args:?}: {}", r.stderr());
            let want = if input == big.as_path() {
                format!("{f}: file too large (1073741824 bytes; limit 67108864 bytes)")
            } else if input == fifo.as_path() {
                format!("{f}: not a regular file (FIFO)")
            } else {
                format!("{f}: not a regular file (character device)")
            };
            assert!(r.stderr().contains(&want), "{args:?}: {}", r.stderr());
            assert!(r.peak_kib() < 64 * 1024, "{args:?}: {} KiB", r.peak_kib());
            assert!(r.wall < Duration::from_secs(20), "{args:?}: {:?}", r.wall);
        }
    }
    // The password file too.
    let r = run_measured(
        &[
            "p12",
            "import",
            s(&roots),
            "--key-out",
            s(&key_out),
            "--cert-out",
            s(&cert_out),
            "--password-file",
            s(&fifo),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(r.code(), Some(2), "{}", r.stderr());
    assert!(
        r.stderr().contains("not a regular file (FIFO)"),
        "{}",
        r.stderr()
    );
}

/// A control socket that answers one byte now and then, for ever: `ctl renew --timeout 1`
/// gives up at its deadline (the timeout plus 5 s) instead of waiting for each byte in
/// turn, and says so (exit 2). Slow tier: 6 s of real time (the fast tier has the same
/// check on `ask` with a 0.3 s deadline, crates/cli/src/cmd/ctl.rs).
#[test]
#[cfg_attr(not(feature = "slow-tests"), ignore = "slow tier: 6 s of real time")]
fn ctl_gives_up_on_a_control_socket_that_trickles() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("control.sock");
    // One byte every 100 ms for a minute, unless the client goes away first.
    tlskit_testkit::hostile::trickling_unix_server(&sock, Duration::from_millis(100), 600);
    let r = run_measured(
        &[
            "ctl",
            "--control",
            s(&sock),
            "renew",
            "www.example.test",
            "--timeout",
            "1",
        ],
        Duration::from_secs(40),
    );
    let err = String::from_utf8_lossy(&r.out.stderr);
    assert_eq!(r.code(), Some(2), "{err}");
    assert!(
        err.contains("no complete reply from the server within 6 s"),
        "{err}"
    );
    assert!(r.wall < Duration::from_secs(20), "{:?}", r.wall);
}
