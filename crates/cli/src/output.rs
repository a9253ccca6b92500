//! Shared output conventions: exit codes, error printing, JSON, colour on a terminal only.
//!
//! A closed pipe is not an error: `tlskit store lint system | head -1` ends quietly with
//! exit 0 (ripgrep's convention), whether the write failed in `println!` (a panic caught by
//! [`quiet_broken_pipe`]) or returned an `io::Error` (see [`finish`]).
//!
//! Every `--json` document is one object whose first key is `schema` (`tlskit.show/1`:
//! the command and the version of its shape; docs/json.md, docs/schemas/). Floating-point
//! numbers are written with at most three decimals (a microsecond of a millisecond, a
//! nanosecond of a microsecond). A command that fails (exit 2) under `--json` before it
//! printed its document prints a `tlskit.error/1` document instead.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

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

/// Whether an error is a write to a closed pipe, anywhere in its chain.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// End the process quietly with exit 0 when `println!`/`eprintln!` find their pipe closed
/// (`tlskit ... | head -1`): the standard library reports that as a panic ("failed printing
/// to stdout: Broken pipe"). Every other panic keeps the default report.
pub(crate) fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        let printing = msg.starts_with("failed printing to stdout")
            || msg.starts_with("failed printing to stderr");
        if printing && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// The command being run (`store lint`), for the schema names and error documents; set
/// once by `main` with whether `--json` was given.
static COMMAND: OnceLock<(String, bool)> = OnceLock::new();
/// Set once a `--json` document went to stdout (an error then does not print a second).
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Record the command's name (`store lint`) and whether its output is JSON.
pub(crate) fn set_command(name: String, json: bool) {
    let _ = COMMAND.set((name, json));
}

/// The schema name of the running command's documents: `tlskit.store.lint/1`.
pub(crate) fn schema() -> String {
    let name = COMMAND.get().map_or("", |(n, _)| n.as_str());
    format!("tlskit.{}/{}", name.replace(' ', "."), SCHEMA_VERSION)
}

/// Version of every command's JSON shape: raised when a field changes meaning or type
/// (adding a field does not raise it).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Map a command's result to the process exit code, printing errors as `tlskit: error: ...`.
pub(crate) fn finish(result: CmdResult) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Negative) => ExitCode::from(1),
        Err(e) => {
            // A closed pipe (e.g. `tlskit show x | head`) is not an error.
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let text = error_text(&e);
            eprintln!("tlskit: error: {text}");
            if let Some((name, true)) = COMMAND.get() {
                if !PRINTED.load(Ordering::Relaxed) {
                    let doc = ErrorDoc {
                        schema: format!("tlskit.error/{SCHEMA_VERSION}"),
                        command: name,
                        error: text,
                        exit_code: 2,
                    };
                    let _ = write_json(&doc);
                }
            }
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

/// Text for a message line: controls escaped, secrets hidden (the one redaction,
/// `tlskit_store::text::redact`: PKCS#11 PINs, URL passwords), cut at
/// [`MAX_MESSAGE_BYTES`].
pub(crate) fn bounded(s: &str) -> String {
    let s = tlskit_store::text::redact(&escape(s)).into_owned();
    if s.len() <= MAX_MESSAGE_BYTES {
        return s;
    }
    let mut cut = MAX_MESSAGE_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes cut)", &s[..cut], s.len() - cut)
}

/// A usage error (clap's, exit 2) under `--json`: the `tlskit.error/1` document, naming
/// the subcommands given before the error.
pub(crate) fn usage_error_json(what: &str) {
    let mut cmd = crate::command();
    let mut command: Vec<String> = Vec::new();
    for a in std::env::args().skip(1) {
        let Some(sub) = cmd.find_subcommand(&a).cloned() else {
            break;
        };
        command.push(a);
        cmd = sub;
    }
    let doc = ErrorDoc {
        schema: format!("tlskit.error/{SCHEMA_VERSION}"),
        command: &command.join(" "),
        error: format!("usage: {what} (tlskit help for the usage)"),
        exit_code: 2,
    };
    let _ = write_json(&doc);
}

/// What a failed command prints on stdout under `--json` (schema `tlskit.error/1`).
#[derive(serde::Serialize)]
struct ErrorDoc<'a> {
    schema: String,
    command: &'a str,
    error: String,
    exit_code: u8,
}

/// A command's JSON document: `schema` first, then the body's fields.
#[derive(serde::Serialize)]
struct Doc<'a, T: ?Sized> {
    schema: String,
    #[serde(flatten)]
    body: &'a T,
}

/// Print a command's document as pretty JSON on stdout: one object, `schema` first, then
/// the fields of `value` (which must serialise as a map: a struct or an object).
pub(crate) fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    write_json(&Doc {
        schema: schema(),
        body: value,
    })?;
    PRINTED.store(true, Ordering::Relaxed);
    Ok(())
}

fn write_json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    // Serialise first, so that a closed pipe surfaces as an io::Error (not an error, see
    // `finish`) rather than as a serde error.
    let mut text = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(
        &mut text,
        Rounded(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut ser)?;
    text.push(b'\n');
    let mut out = std::io::stdout().lock();
    out.write_all(&text)?;
    out.flush()?;
    Ok(())
}

/// Decimals kept in a JSON float: milliseconds to the microsecond, microseconds to the
/// nanosecond, ratios to a thousandth.
const DECIMALS: i32 = 3;

/// Round `v` to [`DECIMALS`] decimals (`1.4114259999999998` becomes `1.411`).
pub(crate) fn round(v: f64) -> f64 {
    let scale = 10f64.powi(DECIMALS);
    let r = (v * scale).round() / scale;
    if r.is_finite() {
        r
    } else {
        v
    }
}

/// serde_json's pretty printer with floats rounded by [`round`], and DEL, C1 controls and
/// bidi controls inside strings written as `\uXXXX` too (serde_json escapes only C0
/// controls): the JSON decodes to exactly the same strings, and `--json` read on a terminal
/// cannot be reordered by a U+202E in a certificate name.
struct Rounded(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for Rounded {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        // `{:?}` is the shortest text that reads back as the same f64 (`1.411`, `2.0`).
        write!(w, "{:?}", round(v))
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(v))
    }
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
