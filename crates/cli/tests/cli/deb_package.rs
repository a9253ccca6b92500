//! The Debian package (issue 28, item 3): `scripts/deb` builds it with cargo-deb from the
//! binary under test, `dpkg-deb` shows what it holds, lintian finds no error in it and,
//! on the CI machine (`CI=true`, as root), it installs, runs and removes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::net_support::have;
use crate::BIN;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// PATH with the directory of the `cargo` running this test first (scripts/deb runs
/// `cargo deb`, installed beside it by scripts/setup).
fn path_with_cargo() -> std::ffi::OsString {
    let mut path = std::env::var_os("CARGO")
        .and_then(|c| Path::new(&c).parent().map(Path::to_path_buf))
        .map(|d| vec![d])
        .unwrap_or_default();
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(path).expect("PATH")
}

fn ok(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// Removes the package on drop (a failed check on the installed package must not leave
/// it installed on the CI machine).
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = run("dpkg", &["--purge", "tlskit"]);
    }
}

/// SLOW (cargo-deb, lintian, dpkg): `scripts/deb --profile dev --binary BIN` packages the
/// binary under test (the debug build: the release build scripts/deb makes by default
/// would add minutes to the test run; the package's contents are the same) in a target
/// directory of its own. The package holds /usr/bin/tlskit, its unit
/// (dist/deb/tlskit.service: dist/tlskit.service's settings, ExecStart on /usr/bin/tlskit)
/// and its maintainer scripts (stopped on removal, never started), the man pages `tlskit man`
/// writes (gzipped), the bash, zsh and fish completions in Debian's folders, and
/// /etc/tlskit/serve.toml as a conffile whose keys `serve --config` accepts; lintian
/// reports no error (`E:`; its lines are printed). Under CI=true, as root: `dpkg -i`, `tlskit --version`,
/// `systemd-analyze verify` on the installed unit, `man -w tlskit`, `dpkg -r` (the
/// binary goes, the edited conffile stays), then `dpkg --purge`.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "slow tier: cargo-deb, lintian, dpkg"
)]
fn deb_package_builds_holds_the_service_and_passes_lintian() {
    for tool in ["dpkg-deb", "lintian", "systemd-analyze", "man"] {
        assert!(have(tool), "{tool} missing: scripts/setup installs it");
    }
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("out");

    let started = Instant::now();
    let out = Command::new("bash")
        .current_dir(&ws)
        .args([
            "scripts/deb",
            "--profile",
            "dev",
            "--binary",
            BIN,
            "--out-dir",
        ])
        .arg(&out_dir)
        .env("PATH", path_with_cargo())
        .env("CARGO_TARGET_DIR", tmp.path().join("target"))
        .output()
        .expect("run scripts/deb");
    let took = started.elapsed();
    let printed = ok("scripts/deb", out);
    eprintln!("scripts/deb (debug build, binary given) took {took:.1?}");
    let deb = PathBuf::from(printed.lines().last().unwrap_or_default());
    assert_eq!(
        deb.file_name().and_then(|n| n.to_str()),
        Some(format!("tlskit_{}-1_amd64.deb", env!("CARGO_PKG_VERSION")).as_str()),
        "printed: {printed}"
    );
    assert!(deb.starts_with(&out_dir) && deb.is_file(), "{}", s(&deb));
    let deb_s = s(&deb);

    // What it holds: `dpkg-deb -c` lines end in `./PATH`.
    let listing = ok("dpkg-deb -c", run("dpkg-deb", &["-c", &deb_s]));
    let entry = |path: &str| {
        listing
            .lines()
            .find(|l| l.ends_with(&format!(" .{path}")))
            .map(str::to_string)
    };
    for path in [
        "/usr/bin/tlskit",
        "/usr/lib/systemd/system/tlskit.service",
        "/etc/tlskit/serve.toml",
        "/usr/share/man/man1/tlskit.1.gz",
        "/usr/share/man/man1/tlskit-serve.1.gz",
        "/usr/share/bash-completion/completions/tlskit",
        "/usr/share/zsh/vendor-completions/_tlskit",
        "/usr/share/fish/vendor_completions.d/tlskit.fish",
        "/usr/share/doc/tlskit/copyright",
    ] {
        assert!(
            entry(path).is_some(),
            "{path} not in the package:\n{listing}"
        );
    }
    let bin_entry = entry("/usr/bin/tlskit").unwrap_or_default();
    assert!(bin_entry.starts_with("-rwxr-xr-x 0/0 "), "{bin_entry}");
    // Every page `tlskit man` writes, and nothing uncompressed.
    let pages = tempfile::tempdir().expect("tempdir");
    ok(
        "tlskit man",
        run(BIN, &["man", "--out-dir", &s(pages.path())]),
    );
    let mut want: Vec<String> = std::fs::read_dir(pages.path())
        .expect("pages")
        .map(|e| format!("{}.gz", e.expect("entry").file_name().to_string_lossy()))
        .collect();
    want.sort();
    let mut have_pages: Vec<String> = listing
        .lines()
        .filter_map(|l| l.split(" ./usr/share/man/man1/").nth(1))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    have_pages.sort();
    assert!(want.len() > 10, "tlskit man wrote {want:?}");
    assert_eq!(have_pages, want);

    // Control: the conffile, the dependencies dpkg-shlibdeps found, the unit's scripts.
    let conffiles = ok(
        "dpkg-deb -I conffiles",
        run("dpkg-deb", &["-I", &deb_s, "conffiles"]),
    );
    assert_eq!(conffiles.trim(), "/etc/tlskit/serve.toml");
    let control = ok("dpkg-deb -I", run("dpkg-deb", &["-I", &deb_s]));
    for want in [
        "Package: tlskit".to_string(),
        format!("Version: {}-1", env!("CARGO_PKG_VERSION")),
        "Architecture: amd64".to_string(),
        "Section: net".to_string(),
    ] {
        assert!(
            control.lines().any(|l| l.trim() == want),
            "{want}:\n{control}"
        );
    }
    assert!(
        control
            .lines()
            .any(|l| l.trim().starts_with("Depends:") && l.contains("libc6")),
        "no Depends on libc6:\n{control}"
    );
    // The maintainer is the workspace's authors with an address that is not a placeholder
    // (a reserved name: .invalid, .example, .test, .localhost, example.com).
    let manifest = std::fs::read_to_string(ws.join("Cargo.toml")).expect("Cargo.toml");
    let authors = manifest
        .lines()
        .find_map(|l| l.strip_prefix("authors = [\""))
        .and_then(|r| r.split('"').next())
        .expect("workspace authors");
    let maintainer = control
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maintainer: "))
        .unwrap_or_else(|| panic!("no Maintainer:\n{control}"));
    let (name, address) = maintainer
        .strip_suffix('>')
        .and_then(|m| m.split_once(" <"))
        .unwrap_or_else(|| panic!("Maintainer is not NAME <ADDRESS>: {maintainer}"));
    assert_eq!(name, authors, "{maintainer}");
    let domain = address
        .rsplit_once('@')
        .map(|(_, d)| d.to_ascii_lowercase())
        .unwrap_or_else(|| panic!("no address: {maintainer}"));
    for placeholder in [".invalid", ".example", ".test", ".localhost", ".local"] {
        assert!(!domain.ends_with(placeholder), "{maintainer}");
    }
    assert!(
        !["example.com", "example.org", "example.net"]
            .iter()
            .any(|e| domain == *e || domain.ends_with(&format!(".{e}"))),
        "{maintainer}"
    );
    // The unit's maintainer scripts: systemd reloads its units on install and removal, and
    // a running service stops on removal; nothing enables or starts it.
    let scripts = ok(
        "dpkg-deb -I postinst prerm postrm",
        run("dpkg-deb", &["-I", &deb_s, "postinst", "prerm", "postrm"]),
    );
    for want in [
        "systemctl --system daemon-reload",
        "deb-systemd-invoke stop tlskit.service",
        "deb-systemd-helper purge tlskit.service",
    ] {
        assert!(scripts.contains(want), "{want} not in:\n{scripts}");
    }
    assert!(
        !scripts.contains("deb-systemd-invoke start") && !scripts.contains("--now"),
        "the package starts the service:\n{scripts}"
    );

    // The files themselves.
    let root = tmp.path().join("root");
    ok("dpkg-deb -x", run("dpkg-deb", &["-x", &deb_s, &s(&root)]));
    let read = |rel: &str| std::fs::read(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(
        read("usr/lib/systemd/system/tlskit.service"),
        std::fs::read(ws.join("dist/deb/tlskit.service")).expect("dist/deb/tlskit.service")
    );
    let unit = String::from_utf8(read("usr/lib/systemd/system/tlskit.service")).expect("utf-8");
    for want in [
        "Type=notify",
        "ExecStart=/usr/bin/tlskit serve --config /etc/tlskit/serve.toml",
        "DynamicUser=yes",
        "StateDirectory=tlskit",
        "RuntimeDirectory=tlskit",
        "ConfigurationDirectory=tlskit",
    ] {
        assert!(unit.lines().any(|l| l == want), "{want} not in the unit");
    }
    // The same service as dist/tlskit.service (systemd-analyze verified and hardened in
    // contract.rs), but for the package's binary: the settings differ in ExecStart only.
    let settings = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| l.replace("/usr/local/bin/tlskit", "/usr/bin/tlskit"))
            .collect()
    };
    let local = std::fs::read_to_string(ws.join("dist/tlskit.service")).expect("the unit");
    assert_eq!(settings(&unit), settings(&local));
    assert_eq!(
        read("etc/tlskit/serve.toml"),
        std::fs::read(ws.join("dist/deb/serve.toml")).expect("dist/deb/serve.toml")
    );
    for (shell, rel) in [
        ("bash", "usr/share/bash-completion/completions/tlskit"),
        ("zsh", "usr/share/zsh/vendor-completions/_tlskit"),
        ("fish", "usr/share/fish/vendor_completions.d/tlskit.fish"),
    ] {
        let generated = run(BIN, &["completions", shell]);
        assert_eq!(read(rel), generated.stdout, "{shell} completions");
    }
    // The example's keys are all serve's: loading it gets as far as reading the (absent)
    // certificate, where an unknown key would have stopped it first.
    let out = run(
        BIN,
        &["serve", "--config", &s(&root.join("etc/tlskit/serve.toml"))],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("/etc/tlskit/chain.pem: cannot read"),
        "serve.toml: {err}"
    );

    // lintian: no error (warnings and notes are allowed; no override is shipped).
    let out = run("lintian", &["--tag-display-limit", "0", &deb_s]);
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("lintian:\n{report}");
    assert!(
        !report.lines().any(|l| l.starts_with("E: ")),
        "lintian errors:\n{report}"
    );
    assert!(
        !listing.contains("lintian/overrides"),
        "the package ships lintian overrides"
    );

    if std::env::var("CI").as_deref() != Ok("true") {
        eprintln!("dpkg -i not run: only on the CI machine (CI=true)");
        return;
    }
    let uid = ok("id -u", run("id", &["-u"]));
    assert_eq!(
        uid.trim(),
        "0",
        "CI=true: the package test installs as root"
    );
    assert!(
        !run("dpkg", &["-s", "tlskit"]).status.success(),
        "a tlskit package is already installed: the test would replace and remove it"
    );
    let installed = Installed;
    ok("dpkg -i", run("dpkg", &["-i", &deb_s]));
    let version = ok("tlskit --version", run("/usr/bin/tlskit", &["--version"]));
    assert_eq!(
        version.trim(),
        format!("tlskit {}", env!("CARGO_PKG_VERSION"))
    );
    let out = run(
        "systemd-analyze",
        &["verify", "/usr/lib/systemd/system/tlskit.service"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !err.contains("tlskit.service"),
        "systemd-analyze verify: {err}"
    );
    let page = ok("man -w tlskit", run("man", &["-w", "tlskit"]));
    assert_eq!(page.trim(), "/usr/share/man/man1/tlskit.1.gz");
    // An operator's edit of the conffile survives `dpkg -r`; the binary does not.
    let conf = Path::new("/etc/tlskit/serve.toml");
    let mut edited = std::fs::read_to_string(conf).expect("installed serve.toml");
    edited.push_str("# edited by the package test\n");
    std::fs::write(conf, &edited).expect("edit serve.toml");
    ok("dpkg -r", run("dpkg", &["-r", "tlskit"]));
    assert!(
        !Path::new("/usr/bin/tlskit").exists(),
        "dpkg -r left the binary"
    );
    assert_eq!(
        std::fs::read_to_string(conf).expect("serve.toml after dpkg -r"),
        edited
    );
    ok("dpkg --purge", run("dpkg", &["--purge", "tlskit"]));
    assert!(!conf.exists(), "dpkg --purge left {}", s(conf));
    drop(installed);
}
