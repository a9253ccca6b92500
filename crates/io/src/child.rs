//! Running a helper program (a DNS hook, `update-ca-certificates`, `certutil`, `keytool`)
//! without trusting it to behave: in its own process group, with standard input empty,
//! its standard output and error read on threads and kept up to a limit (the rest is read
//! and dropped, so it never blocks on a full pipe), and a deadline after which the whole
//! group is killed, grandchildren included. A grandchild that outlives the program and
//! keeps its pipes open cannot hold the caller either: the output is awaited only until
//! the deadline. A program file that is busy being written ("Text file busy", typically a
//! hook saved a moment ago) is started again until the deadline.
//!
//! No unsafe code: the group is killed with `kill -KILL -- -PID`.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long to wait before trying again to start a program that is busy being written.
const BUSY_RETRY: Duration = Duration::from_millis(20);

/// How often the program is checked for having exited.
const POLL: Duration = Duration::from_millis(10);

/// After the deadline has killed the group, how long its output is still awaited.
const AFTER_KILL: Duration = Duration::from_millis(200);

/// A program that ran to its end.
#[derive(Debug)]
pub struct Finished {
    /// How it ended.
    pub status: ExitStatus,
    /// Its standard output (at most the limit; empty unless the caller piped it).
    pub stdout: Vec<u8>,
    /// Its standard error (at most the limit).
    pub stderr: Vec<u8>,
}

/// Why a program gave no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// It could not be started.
    #[error("cannot start it: {0}")]
    Start(#[source] std::io::Error),
    /// Waiting for it failed.
    #[error("cannot wait for it: {0}")]
    Wait(#[source] std::io::Error),
    /// It was still running at the deadline: it and its process group were killed.
    #[error("it did not finish in time and was killed")]
    Deadline {
        /// What it wrote on standard error until then (at most the limit).
        stderr: Vec<u8>,
    },
}

/// Run `cmd` to its end or until `deadline`, keeping at most `max_output` bytes of each
/// output. Standard input is set to empty and standard error is piped; standard output is
/// read when the caller piped it (`cmd.stdout(Stdio::piped())`), and left as the caller
/// set it otherwise. The program runs in a process group of its own.
pub fn run(
    cmd: &mut Command,
    deadline: Instant,
    max_output: usize,
) -> Result<Finished, ChildError> {
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    let mut child = loop {
        match cmd.spawn() {
            Ok(child) => break child,
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && Instant::now() + BUSY_RETRY < deadline =>
            {
                std::thread::sleep(BUSY_RETRY);
            }
            Err(e) => return Err(ChildError::Start(e)),
        }
    };
    let out = child.stdout.take().map(|o| reader(o, max_output));
    let err = child.stderr.take().map(|o| reader(o, max_output));
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                let until = Instant::now() + AFTER_KILL;
                return Err(ChildError::Deadline {
                    stderr: collect(err, until),
                });
            }
            Ok(None) => std::thread::sleep(POLL),
            Err(e) => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Err(ChildError::Wait(e));
            }
        }
    };
    // Output still held open by a grandchild is awaited until the deadline (and briefly
    // past it, for a program that ended just before).
    let until = deadline.max(Instant::now() + AFTER_KILL);
    Ok(Finished {
        status,
        stdout: collect(out, until),
        stderr: collect(err, until),
    })
}

/// Read `r` to its end on a thread, keeping the first `max` bytes.
fn reader(mut r: impl Read + Send + 'static, max: usize) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = max.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// What a reader kept, if it finished by `until`; empty otherwise.
fn collect(rx: Option<mpsc::Receiver<Vec<u8>>>, until: Instant) -> Vec<u8> {
    rx.and_then(|rx| {
        rx.recv_timeout(until.saturating_duration_since(Instant::now()))
            .ok()
    })
    .unwrap_or_default()
}

/// Stop the process group `pid` leads (`kill -KILL -- -PID`: no unsafe code for a signal).
fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(script);
        c
    }

    #[test]
    fn output_is_kept_up_to_the_limit_and_the_status_reported() {
        let mut c = sh("head -c 100000 /dev/zero; echo oops >&2; exit 3");
        c.stdout(Stdio::piped());
        let f = run(&mut c, Instant::now() + Duration::from_secs(20), 1000).unwrap();
        assert_eq!(f.status.code(), Some(3));
        assert_eq!(f.stdout.len(), 1000);
        assert_eq!(f.stderr, b"oops\n");
    }

    #[test]
    fn standard_output_left_alone_unless_piped() {
        let mut c = sh("echo visible-to-nobody; echo err >&2");
        c.stdout(Stdio::null());
        let f = run(&mut c, Instant::now() + Duration::from_secs(20), 100).unwrap();
        assert!(f.status.success());
        assert!(f.stdout.is_empty());
        assert_eq!(f.stderr, b"err\n");
    }

    /// A program past its deadline is killed with what it started: the grandchild
    /// (holding the pipes) is gone too, and the call returns soon after the deadline.
    #[test]
    fn the_deadline_kills_the_whole_group() {
        let d = tempfile::tempdir().unwrap();
        let pidfile = d.path().join("pid");
        let mut c = sh(&format!(
            "echo started >&2; sleep 30 & echo $! > {}; wait",
            pidfile.display()
        ));
        let t0 = Instant::now();
        let e = run(&mut c, t0 + Duration::from_millis(500), 100).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let ChildError::Deadline { stderr } = e else {
            panic!("{e}");
        };
        assert_eq!(stderr, b"started\n");
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        // SIGKILL takes effect when the grandchild next runs, and it may then linger as a
        // zombie until init reaps it: it must be gone or a zombie within a few seconds
        // (the `sleep 30` it runs would still be running if the group were not killed).
        let gone_by = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
            let Ok(state) = state else { break };
            if state.contains(") Z") {
                break;
            }
            assert!(Instant::now() < gone_by, "grandchild still runs: {state}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A grandchild that outlives the program and keeps standard error open does not
    /// hold the caller past the deadline; the program's own status is returned.
    #[test]
    fn a_grandchild_holding_the_pipe_is_not_waited_for_past_the_deadline() {
        // The grandchild holds the pipe for longer than the bound below (with a shorter
        // hold, a call that waits for the pipe to close would return inside it too).
        let d = tempfile::tempdir().unwrap();
        let pidfile = d.path().join("pid");
        let mut c = sh(&format!(
            "(sleep 30 & echo $! > {}) ; echo done >&2; exit 0",
            pidfile.display()
        ));
        let t0 = Instant::now();
        let f = run(&mut c, t0 + Duration::from_millis(600), 100).unwrap();
        let took = t0.elapsed();
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let _ = Command::new("kill").arg(pid.trim()).status();
        assert!(f.status.success());
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_missing_program_cannot_start() {
        let mut c = Command::new("/nonexistent/tlskit-child-test");
        let e = run(&mut c, Instant::now() + Duration::from_secs(5), 100).unwrap_err();
        assert!(matches!(e, ChildError::Start(_)), "{e}");
        assert!(e.to_string().starts_with("cannot start it: "), "{e}");
    }
}
