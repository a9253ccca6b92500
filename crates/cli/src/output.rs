//! Shared output conventions: exit codes, error printing, JSON, colour on a terminal only.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

pub(crate) use tlskit_store::text::{escape, Escaped};

/// What a command concluded. Errors (exit 2) travel as `anyhow::Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exit 0: the command did its job and the answer is positive.
    Success,
    /// Exit 1: a negative answer (invalid chain, lint findings).
    Negative,
}

/// Result type of every command.
pub(crate) type CmdResult = anyhow::Result<Outcome>;

/// Map a command's result to the process exit code, printing errors as `tlskit: error: ...`.
pub(crate) fn finish(result: CmdResult) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Negative) => ExitCode::from(1),
        Err(e) => {
            // A closed pipe (e.g. `tlskit show x | head`) is not an error.
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("tlskit: error: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

/// Longest error or warning line printed, in bytes. Every message is built to be short;
/// this bound is the last line of defence against one that quotes its input.
pub(crate) const MAX_MESSAGE_BYTES: usize = 4096;

/// An error and its sources as one line: a source whose text the message already holds
/// (an error that prints its source, as `io::Error` wrappers and `time`'s parse errors
/// do) is not repeated; controls escaped; at most [`MAX_MESSAGE_BYTES`].
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if s.is_empty() || msg.contains(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    bounded(&msg)
}

/// Text for a message line: controls escaped, cut at [`MAX_MESSAGE_BYTES`].
pub(crate) fn bounded(s: &str) -> String {
    let s = escape(s);
    if s.len() <= MAX_MESSAGE_BYTES {
        return s.into_owned();
    }
    let mut cut = MAX_MESSAGE_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes cut)", &s[..cut], s.len() - cut)
}

/// Print a value as pretty JSON on stdout, followed by a newline.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    // Serialise first, so that a closed pipe surfaces as an io::Error (not an error, see
    // `finish`) rather than as a serde error.
    let text = serde_json::to_string_pretty(value)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// Report one problem with one input (a file in a batch) on stderr; the batch goes on.
pub(crate) fn warn(path: &std::path::Path, reason: &dyn std::fmt::Display) {
    eprintln!(
        "tlskit: {}",
        bounded(&format!("{}: {reason}", path.display()))
    );
}

/// Colours for human output: enabled only when stdout is a terminal and NO_COLOR is unset.
#[derive(Clone, Copy)]
pub(crate) struct Style {
    on: bool,
}

impl Style {
    pub(crate) fn stdout() -> Self {
        let on = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Self { on }
    }
    fn paint(self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub(crate) fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }
    pub(crate) fn good(self, s: &str) -> String {
        self.paint("32", s)
    }
    pub(crate) fn warn(self, s: &str) -> String {
        self.paint("33", s)
    }
    pub(crate) fn bad(self, s: &str) -> String {
        self.paint("31", s)
    }
}
