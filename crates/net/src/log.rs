//! Structured logs: one line per event on stderr, `key=value` pairs, values quoted when
//! they contain spaces, quotes, `=`, a backslash or a character that is escaped. Values
//! often carry a peer's or a certificate's text (client certificate subjects, reasons
//! that quote names): control and bidi characters are escaped by the workspace's one
//! escaping function (`tlskit_store::text`), and each value is cut at
//! [`MAX_VALUE_CHARS`]. Nothing secret is ever passed here.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How much the server logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing.
    Off = 0,
    /// Errors (failed reloads, backend unreachable).
    Error = 1,
    /// Failed handshakes, limits hit.
    Warn = 2,
    /// Start, reload, shutdown (default).
    Info = 3,
    /// Every connection.
    Debug = 4,
}

impl Level {
    /// Parse `off|error|warn|info|debug`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => Self::Off,
            "error" => Self::Error,
            "warn" => Self::Warn,
            "info" => Self::Info,
            "debug" => Self::Debug,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

/// Set the process-wide log level.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub(crate) fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Longest value written, in characters; a longer one ends in `...`.
pub(crate) const MAX_VALUE_CHARS: usize = 1024;

fn push_value(line: &mut String, v: &str) {
    use std::fmt::Write;
    use tlskit_store::text::{needs_escape, Escaped};
    let plain = |c: char| !matches!(c, ' ' | '"' | '=' | '\\') && !needs_escape(c);
    if !v.is_empty() && v.len() <= MAX_VALUE_CHARS && v.chars().all(plain) {
        line.push_str(v);
        return;
    }
    line.push('"');
    for (n, c) in v.chars().enumerate() {
        if n == MAX_VALUE_CHARS {
            line.push_str("...");
            break;
        }
        match c {
            '"' => line.push_str("\\\""),
            '\\' => line.push_str("\\\\"),
            c if needs_escape(c) => {
                let _ = write!(line, "{}", Escaped(c.encode_utf8(&mut [0; 4])));
            }
            c => line.push(c),
        }
    }
    line.push('"');
}

/// Log one event with its fields.
pub(crate) fn event(level: Level, event: &str, fields: &[(&str, &dyn std::fmt::Display)]) {
    if !enabled(level) {
        return;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut line = format!(
        "ts={}.{:03} level={} event={}",
        now.as_secs(),
        now.subsec_millis(),
        level.name(),
        event
    );
    for (k, v) in fields {
        line.push(' ');
        line.push_str(k);
        line.push('=');
        push_value(&mut line, &v.to_string());
    }
    line.push('\n');
    // One write per line so concurrent events do not interleave.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let mut s = String::new();
        push_value(&mut s, "plain");
        push_value(&mut s, " ");
        push_value(&mut s, "a=\"b\"");
        push_value(&mut s, "");
        assert_eq!(s, "plain\" \"\"a=\\\"b\\\"\"\"\"");
    }

    #[test]
    fn controls_are_escaped_and_values_bounded() {
        let mut s = String::new();
        push_value(&mut s, "CN=a\x1b[31mb\x07\r\u{202e}");
        assert_eq!(s, "\"CN=a\\x1b[31mb\\x07\\r\\u{202e}\"");
        let mut s = String::new();
        push_value(&mut s, &"x".repeat(10 * MAX_VALUE_CHARS));
        assert_eq!(s.len(), MAX_VALUE_CHARS + 5);
    }
}
