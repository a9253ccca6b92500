//! The binary's log subscriber: the libraries emit `tracing` events and never write
//! themselves; this module turns them into one line per event on stderr.
//!
//! - `--log-format text` (default): `ts=2026-11-23T21:41:37.123Z level=info
//!   event=started listen=127.0.0.1:8443`, every value through
//!   [`tlskit_tls::log::push_field`] (quoted when it holds a space, `"` or `=`, control
//!   characters escaped: values often come from certificates and peers).
//! - `--log-format json`: `{"ts":"...","level":"info","target":"tlskit_net",
//!   "event":"started","listen":"127.0.0.1:8443"}`, one object per line, every field
//!   value a JSON string (docs/json.md, "Log lines").
//!
//! Timestamps are RFC 3339 in UTC with milliseconds. Which events are written is an
//! env-filter (`tracing-subscriber`'s `EnvFilter` syntax: `warn`, `tlskit=debug`,
//! `rustls=debug,tlskit=info`): `--log-level L` (a flag) adds `tlskit=L` to the filter of
//! `TLSKIT_LOG` (or else `RUST_LOG`); without either variable the filter is `tlskit=L`
//! with L from the flag, the config file's `log_level`, or `info`. Events of other crates
//! (rustls logs through the `log` crate, bridged) are off unless the filter names them.

use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Context as _;
use tracing_core::field::{Field, Visit};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// `ts=... level=... event=... key=value ...`
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Where the log level comes from.
#[derive(Debug, Default)]
pub(crate) struct LevelChoice<'a> {
    /// `--log-level` on the command line: wins over the environment for tlskit's events.
    pub(crate) flag: Option<&'a str>,
    /// `log_level` in a config file: used when neither variable is set.
    pub(crate) file: Option<&'a str>,
    /// Why the config file's `log_level` was refused (reported after the flag's check).
    pub(crate) file_refused: Option<&'a tlskit_server::ValueError>,
}

fn level_name(what: &str, l: &str) -> anyhow::Result<&'static str> {
    tlskit_tls::log::Level::parse(l)
        .map(tlskit_tls::log::Level::name)
        .with_context(|| format!("{what} {l}: use off, error, warn, info or debug"))
}

/// The filter: see the module documentation for the order.
fn filter(level: &LevelChoice<'_>) -> anyhow::Result<EnvFilter> {
    let flag = level
        .flag
        .map(|l| level_name("--log-level", l))
        .transpose()?;
    if let Some(e) = level.file_refused {
        return Err(e.clone().into());
    }
    let file = level.file.map(|l| level_name("log_level", l)).transpose()?;
    let var = |name: &'static str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name, v))
    };
    let env = var("TLSKIT_LOG").or_else(|| var("RUST_LOG"));
    let mut f = match &env {
        // Ours is strict (a typo is reported); RUST_LOG may be meant for other programs.
        Some(("TLSKIT_LOG", spec)) => EnvFilter::builder().parse(spec).map_err(|e| {
            anyhow::anyhow!(
                "TLSKIT_LOG={spec:?}: not a log filter ({e}); examples: warn, tlskit=debug, \
                 rustls=debug,tlskit=info"
            )
        })?,
        Some((_, spec)) => EnvFilter::builder().parse_lossy(spec),
        None => {
            EnvFilter::builder().parse_lossy(format!("tlskit={}", flag.or(file).unwrap_or("info")))
        }
    };
    if let (Some(_), Some(l)) = (&env, flag) {
        f = f.add_directive(format!("tlskit={l}").parse()?);
    }
    Ok(f)
}

/// Install the subscriber for the whole process (once; `serve` after reading its config
/// file, every other command at start).
pub(crate) fn init(format: LogFormat, level: &LevelChoice<'_>) -> anyhow::Result<()> {
    let filter = filter(level)?;
    tracing_subscriber::registry()
        .with(filter)
        .with(Lines { format })
        .try_init()
        .context("cannot install the log subscriber")
}

/// The layer that writes each event as one line on stderr.
struct Lines {
    format: LogFormat,
}

/// An event's fields in order, as text (`log.*` fields of bridged `log` records dropped;
/// their `log.target` replaces the bridge's own target).
#[derive(Default)]
struct Fields {
    pairs: Vec<(&'static str, String)>,
    log_target: Option<String>,
}

impl Fields {
    fn push(&mut self, name: &'static str, value: String) {
        // Every value of every event (tlskit's and its libraries') through the one
        // redaction: no PIN, password or secret reaches a log line.
        let value = match tlskit_x509::text::redact(&value) {
            std::borrow::Cow::Borrowed(_) => value,
            std::borrow::Cow::Owned(v) => v,
        };
        if name == "log.target" {
            self.log_target = Some(value);
        } else if !name.starts_with("log.") {
            self.pairs.push((name, value));
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field.name(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.push(field.name(), format!("{value:?}"));
    }
}

/// Keys every line has; an event field of the same name gets a `_` prefix (in JSON).
const RESERVED: [&str; 3] = ["ts", "level", "target"];

/// Now, RFC 3339 in UTC with milliseconds: `2026-11-23T21:41:37.123Z`.
fn timestamp() -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".into())
}

/// `ERROR` → `error`.
fn level_str(level: &tracing_core::Level) -> &'static str {
    match *level {
        tracing_core::Level::ERROR => "error",
        tracing_core::Level::WARN => "warn",
        tracing_core::Level::INFO => "info",
        tracing_core::Level::DEBUG => "debug",
        tracing_core::Level::TRACE => "trace",
    }
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Lines {
    fn line(
        &self,
        ts: &str,
        level: &str,
        target: &str,
        fields: &[(&'static str, String)],
    ) -> String {
        let mut line = String::with_capacity(128);
        match self.format {
            LogFormat::Text => {
                let _ = write!(line, "ts={ts} level={level}");
                // tlskit's events start with `event=NAME`; others say where they come from.
                if fields.first().is_none_or(|(k, _)| *k != "event") {
                    tlskit_tls::log::push_field(&mut line, "target", target);
                }
                for (k, v) in fields {
                    tlskit_tls::log::push_field(&mut line, k, v);
                }
            }
            LogFormat::Json => {
                let _ = write!(
                    line,
                    "{{\"ts\":\"{ts}\",\"level\":\"{level}\",\"target\":{}",
                    json_str(target)
                );
                for (k, v) in fields {
                    let key = if RESERVED.contains(k) {
                        format!("_{k}")
                    } else {
                        (*k).to_string()
                    };
                    let _ = write!(line, ",{}:{}", json_str(&key), json_str(v));
                }
                line.push('}');
            }
        }
        line.push('\n');
        line
    }
}

impl<S: Subscriber> Layer<S> for Lines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let target = fields.log_target.as_deref().unwrap_or(meta.target());
        let line = self.line(&timestamp(), level_str(meta.level()), target, &fields.pairs);
        // One write per line, so that lines from several threads never interleave; a
        // closed stderr loses the line and nothing else.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        p.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    #[test]
    fn text_lines_escape_and_quote_values() {
        let l = Lines {
            format: LogFormat::Text,
        };
        let line = l.line(
            "2026-01-02T03:04:05.006Z",
            "warn",
            "tlskit_net",
            &pairs(&[("event", "handshake_failed"), ("reason", "bad \"x\"\n")]),
        );
        assert_eq!(
            line,
            "ts=2026-01-02T03:04:05.006Z level=warn event=handshake_failed reason=\"bad \\\"x\\\"\\n\"\n"
        );
        let line = l.line("T", "warn", "rustls::server", &pairs(&[("message", "m")]));
        assert_eq!(line, "ts=T level=warn target=rustls::server message=m\n");
    }

    #[test]
    fn json_lines_parse_and_keep_reserved_keys_apart() {
        let l = Lines {
            format: LogFormat::Json,
        };
        let line = l.line(
            "2026-01-02T03:04:05.006Z",
            "info",
            "tlskit_net",
            &pairs(&[("event", "e"), ("level", "x"), ("peer", "a\u{1b}b")]),
        );
        assert!(line.ends_with("}\n") && line.matches('\n').count() == 1);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(v["level"], "info");
        assert_eq!(v["_level"], "x");
        assert_eq!(v["peer"], "a\u{1b}b");
        assert_eq!(v["event"], "e");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let ts = timestamp();
        let parsed =
            time::OffsetDateTime::parse(&ts, &time::format_description::well_known::Rfc3339);
        assert!(parsed.is_ok_and(|t| t.offset().is_utc()), "{ts}");
        assert_eq!(ts.len(), "2026-01-02T03:04:05.006Z".len(), "{ts}");
    }
}
