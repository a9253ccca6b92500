//! The one command runner of the CLI tests: `tlskit` with arguments, in a directory, with
//! no colour and no password from the environment; the output as text for assertion
//! messages; `ok` for a command that must succeed, `assert_code` for an exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The `tlskit` binary under test, found beside the running test binary: Cargo builds a
/// package's binaries for its integration tests into the directory above the test
/// binaries' (`target/debug/deps/cli-HASH` -> `target/debug/tlskit`). A library cannot
/// read `env!("CARGO_BIN_EXE_tlskit")` (Cargo sets it for the test crate only); the CLI's
/// test binaries check that both name the same file (`testkit_finds_the_binary`).
pub fn bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lies in target/PROFILE/deps");
        let bin = dir.join(format!("tlskit{}", std::env::consts::EXE_SUFFIX));
        assert!(
            bin.is_file(),
            "{}: no tlskit binary (run the tests of the tlskit package)",
            bin.display()
        );
        bin
    })
}

/// `tlskit ARGS` to adjust before running (environment of a token, a directory): no
/// colour, no `TLSKIT_P12_PASSWORD`, stdin closed.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .env_remove("TLSKIT_P12_PASSWORD")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    c
}

/// Run `tlskit ARGS` in `dir` (no colour, no `TLSKIT_P12_PASSWORD`, stdin closed).
pub fn tlskit_in(dir: &Path, args: &[&str]) -> Output {
    command(args).current_dir(dir).output().expect("run tlskit")
}

/// Run `tlskit ARGS` in the current directory.
pub fn tlskit(args: &[&str]) -> Output {
    tlskit_in(Path::new("."), args)
}

/// Exit status and both streams, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run a command in `dir` that must exit 0; returns stdout.
#[track_caller]
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let o = tlskit_in(dir, args);
    assert_eq!(o.status.code(), Some(0), "tlskit {args:?}\n{}", text(&o));
    String::from_utf8(o.stdout).expect("UTF-8 stdout")
}

/// Assert the exit status `code`, with both streams in the message.
#[track_caller]
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
}

/// Run `tlskit ARGS` in the current directory: the exit code (-1 for a signal), stdout and
/// stderr as text.
pub fn tlskit_streams(args: &[&str]) -> (i32, String, String) {
    let o = tlskit(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
