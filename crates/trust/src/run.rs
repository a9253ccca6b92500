//! External commands (update-ca-certificates, certutil, keytool): run with a deadline,
//! their output read bounded and escaped before it reaches a message.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Result, TrustError};

/// How long one command may run: update-ca-certificates rehashes a directory of a few
/// hundred links, keytool starts a JVM; both take seconds, never a minute.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// Most bytes kept of a command's stdout or stderr (the rest is read and dropped, so the
/// command never blocks on a full pipe).
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// One command to run. `Debug` shows the environment's names only: a value may be a
/// secret (keytool's store password).
#[derive(Clone, PartialEq, Eq)]
pub struct Cmd {
    /// The program (a path, or a name looked up on PATH).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cmd")
            .field("program", &self.program)
            .field("args", &self.args)
            .field(
                "env",
                &self
                    .env
                    .iter()
                    .map(|(k, _)| (k.as_str(), tlskit_io::redact::MASK))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Cmd {
    /// `program` with `args`.
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Cmd {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// The command line for people: program and arguments, escaped.
    pub fn display(&self) -> String {
        let mut s = self.program.display().to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        tlskit_x509::text::escape(&s).into_owned()
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default)]
pub struct CmdOutput {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit status (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded, at most [`MAX_OUTPUT_BYTES`].
    pub stdout: String,
    /// Standard error, the same.
    pub stderr: String,
}

/// Runs commands. The system runner spawns processes; tests substitute their own.
pub trait Runner {
    /// Run `cmd` to its end (or its deadline). An exit status other than 0 is not an error
    /// here: callers decide (certutil -L answers 255 for "no such nickname").
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput>;
}

/// Spawns the command, stdin closed, and kills it at the deadline.
#[derive(Debug, Clone)]
pub struct SystemRunner {
    /// How long one command may run.
    pub deadline: Duration,
}

impl Default for SystemRunner {
    fn default() -> Self {
        SystemRunner {
            deadline: DEFAULT_DEADLINE,
        }
    }
}

impl Runner for SystemRunner {
    fn run(&self, cmd: &Cmd) -> Result<CmdOutput> {
        let program = cmd.program.display().to_string();
        let fail = |reason: String| TrustError::Command {
            program: tlskit_x509::text::escape(&program).into_owned(),
            reason,
        };
        let mut c = Command::new(&cmd.program);
        c.args(&cmd.args).stdout(Stdio::piped());
        for (k, v) in &cmd.env {
            c.env(k, v);
        }
        // tlskit-io runs it in its own process group, so that the deadline stops what it
        // started too (update-ca-certificates runs openssl and the hooks), and reads its
        // output bounded; a grandchild that outlives it and holds the pipes open is
        // waited for no longer than the deadline.
        let deadline = Instant::now() + self.deadline;
        match tlskit_io::child::run(&mut c, deadline, MAX_OUTPUT_BYTES) {
            Ok(f) => Ok(CmdOutput {
                success: f.status.success(),
                code: f.status.code(),
                stdout: String::from_utf8_lossy(&f.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&f.stderr).into_owned(),
            }),
            Err(tlskit_io::child::ChildError::Deadline { .. }) => Err(fail(format!(
                "still running after {} s: stopped",
                self.deadline.as_secs()
            ))),
            Err(e) => Err(fail(e.to_string())),
        }
    }
}

/// Run `cmd` and require exit status 0; otherwise an error quoting the end of its output
/// (escaped, at most 3 lines of 200 characters).
pub(crate) fn run_ok(runner: &dyn Runner, cmd: &Cmd) -> Result<CmdOutput> {
    let out = runner.run(cmd)?;
    if out.success {
        return Ok(out);
    }
    let status = out.code.map_or("killed by a signal".to_string(), |c| {
        format!("exit status {c}")
    });
    let said = tail(&out.stderr, &out.stdout);
    Err(TrustError::Command {
        program: tlskit_x509::text::escape(&cmd.program.display().to_string()).into_owned(),
        reason: if said.is_empty() {
            status
        } else {
            format!("{status}; it said: {said}")
        },
    })
}

/// The last lines of what a command said (stderr, else stdout), escaped and bounded.
fn tail(stderr: &str, stdout: &str) -> String {
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    lines[start..]
        .iter()
        .map(|l| {
            let l: String = l.trim().chars().take(200).collect();
            tlskit_x509::text::escape(&l).into_owned()
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

/// `name` on PATH, else in the system directories a non-root PATH often lacks
/// (update-ca-certificates lives in /usr/sbin).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    for d in dirs {
        let p = d.join(name);
        if is_executable(&p) {
            return Some(p);
        }
    }
    None
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::Cmd;

    #[test]
    fn debug_hides_environment_values() {
        let mut c = Cmd::new("keytool", ["-list", "-storepass:env", "PASS"]);
        c.env.push(("PASS".into(), "s3cret-store-pass".into()));
        let d = format!("{c:?}");
        assert!(!d.contains("s3cret-store-pass"), "{d}");
        assert!(d.contains("PASS") && d.contains("-list"), "{d}");
    }
}
