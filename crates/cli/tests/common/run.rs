//! The command runner of the CLI tests: `tlskit` with arguments, in a directory, with no
//! colour and no password from the environment; the output as text for assertion
//! messages; `ok` for a command that must succeed.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Run `tlskit ARGS` in `dir` (no colour, no `TLSKIT_P12_PASSWORD`, stdin closed).
pub fn tlskit_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tlskit"))
        .args(args)
        .current_dir(dir)
        .env_remove("TLSKIT_P12_PASSWORD")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run tlskit")
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
