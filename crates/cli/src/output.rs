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
    let mut buf = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, TerminalSafeJson::default());
    value.serialize(&mut ser)?;
    let text = String::from_utf8(buf)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// serde_json's pretty output, except that DEL, C1 controls and bidi controls inside
/// strings are written as `\uXXXX` too (serde_json escapes only C0 controls): the JSON
/// decodes to exactly the same strings, and `--json` read on a terminal cannot be
/// reordered by a U+202E in a certificate name.
#[derive(Default)]
struct TerminalSafeJson(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for TerminalSafeJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(i) = rest.find(tlskit_store::text::needs_escape) {
            w.write_all(&rest.as_bytes()[..i])?;
            let c = rest[i..].chars().next().unwrap_or('\0');
            // Every character needs_escape selects is in the Basic Multilingual Plane.
            write!(w, "\\u{:04x}", c as u32)?;
            rest = &rest[i + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
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
