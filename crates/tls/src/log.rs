//! Structured logs: one event per line, `key=value` pairs (in text form), values quoted when
//! they contain spaces, quotes, `=`, a backslash or a character that is escaped. Values
//! often carry a peer's or a certificate's text (client certificate subjects, reasons
//! that quote names): control and bidi characters are escaped by the workspace's one
//! escaping function (`tlskit_x509::text`), and each value is cut at
//! [`MAX_VALUE_CHARS`]. Nothing secret is ever passed here.
//!
//! Events go out as `tracing` events (through `tracing-core`): target `tlskit_net` (the name of the crate it came from, kept: log pipelines filter on it), the
//! event's name in the field `event`, then one field per key, each value as its `Display`
//! text. This crate never writes to stderr itself: whoever embeds it installs a
//! subscriber (the `tlskit` binary installs one that writes text or JSON lines; without
//! one, nothing is logged). [`push_field`] is the one text rendering of a value (quoting
//! and escaping) for subscribers that write `key=value` lines.
//!
//! The call sites name their fields at run time (`&[("peer", &peer)]`), which `tracing`'s
//! macros cannot express, so each distinct (level, event, keys) gets its own callsite,
//! made once and kept for the life of the process (at most [`MAX_CALLSITES`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{OnceLock, RwLock};

use tracing_core::callsite::Callsite;
use tracing_core::field::{self, Field, FieldSet, Value};
use tracing_core::metadata::{Kind, LevelFilter};
use tracing_core::subscriber::Interest;
use tracing_core::{dispatcher, Event, Metadata};

/// How much the server logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Level {
    /// Nothing.
    Off = 0,
    /// Errors (failed reloads, backend unreachable).
    Error = 1,
    /// Failed handshakes, limits hit.
    Warn = 2,
    /// Start, reload, shutdown (the default of `tlskit serve --log-level`).
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
    /// The name [`Level::parse`] reads (also a `tracing` level name: `info`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Debug as u8);

/// Set the most verbose level this crate emits, process-wide (default: `Debug`, every
/// event; the subscriber's filter then decides). `Off` silences the crate whatever the
/// subscriber wants (`tlskit doctor` does this around its in-process server).
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// Whether an event at `level` can be logged at all: under the cap of [`set_level`] and
/// the most verbose level any subscriber wants (a cheap check before building fields).
pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
        && tracing_level(level).is_some_and(|l| l <= LevelFilter::current())
}

fn tracing_level(level: Level) -> Option<tracing_core::Level> {
    Some(match level {
        Level::Off => return None,
        Level::Error => tracing_core::Level::ERROR,
        Level::Warn => tracing_core::Level::WARN,
        Level::Info => tracing_core::Level::INFO,
        Level::Debug => tracing_core::Level::DEBUG,
    })
}

/// Longest value written, in characters; a longer one ends in `...`.
pub const MAX_VALUE_CHARS: usize = 1024;

fn push_value(line: &mut String, v: &str) {
    use std::fmt::Write;
    use tlskit_x509::text::{needs_escape, Escaped};
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

/// Append ` key=value` to a text log line: the value is quoted when it is empty or holds
/// a space, `"`, `=` or a control character, and escaped inside the quotes. Every text
/// log line of tlskit renders its values through this.
pub fn push_field(line: &mut String, key: &str, value: &str) {
    line.push(' ');
    line.push_str(key);
    line.push('=');
    push_value(line, value);
}

/// The `tracing` target of every event of this crate.
pub const TARGET: &str = "tlskit_net";

/// Most distinct (level, event, keys) callsites made; events beyond are dropped. The call
/// sites pass literals, so the real number is the number of `log::event` calls (~40).
pub const MAX_CALLSITES: usize = 1024;

/// Most fields per event (the event name included); further keys are not logged.
pub const MAX_FIELDS: usize = 16;

/// A callsite made at run time for one (level, event, keys): leaked once, registered with
/// `tracing-core`, which tells it whether the subscriber is interested.
struct EventCallsite {
    level: Level,
    /// `event`, then the keys.
    names: &'static [&'static str],
    meta: OnceLock<Metadata<'static>>,
    /// 0 never, 1 sometimes, 2 always.
    interest: AtomicU8,
}

/// Answers `metadata()` for a callsite whose own metadata is not set yet (never the case
/// once registered: the metadata is set before registration).
struct Placeholder;
static PLACEHOLDER: Placeholder = Placeholder;
static PLACEHOLDER_META: Metadata<'static> = Metadata::new(
    "tlskit_net event",
    TARGET,
    tracing_core::Level::INFO,
    None,
    None,
    None,
    FieldSet::new(&[], tracing_core::identify_callsite!(&PLACEHOLDER)),
    Kind::EVENT,
);

impl Callsite for Placeholder {
    fn set_interest(&self, _: Interest) {}
    fn metadata(&self) -> &Metadata<'_> {
        &PLACEHOLDER_META
    }
}

impl Callsite for EventCallsite {
    fn set_interest(&self, interest: Interest) {
        let v = if interest.is_never() {
            0
        } else if interest.is_always() {
            2
        } else {
            1
        };
        self.interest.store(v, Ordering::Relaxed);
    }
    fn metadata(&self) -> &Metadata<'_> {
        self.meta.get().unwrap_or(&PLACEHOLDER_META)
    }
}

type Callsites = HashMap<String, Vec<&'static EventCallsite>>;

fn callsites() -> &'static RwLock<Callsites> {
    static MAP: OnceLock<RwLock<Callsites>> = OnceLock::new();
    MAP.get_or_init(Default::default)
}

fn find(
    list: &[&'static EventCallsite],
    level: Level,
    keys: &[&str],
) -> Option<&'static EventCallsite> {
    list.iter()
        .find(|c| c.level == level && c.names[1..].iter().copied().eq(keys.iter().copied()))
        .copied()
}

/// The callsite of (level, event, keys), made and registered on first use.
fn callsite(level: Level, event: &str, keys: &[&str]) -> Option<&'static EventCallsite> {
    let keys = &keys[..keys.len().min(MAX_FIELDS - 1)];
    if let Ok(map) = callsites().read() {
        if let Some(c) = map.get(event).and_then(|l| find(l, level, keys)) {
            return Some(c);
        }
    }
    let mut map = callsites().write().ok()?;
    if let Some(c) = map.get(event).and_then(|l| find(l, level, keys)) {
        return Some(c);
    }
    if map.values().map(Vec::len).sum::<usize>() >= MAX_CALLSITES {
        return None;
    }
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let name = leak(event);
    let names: Vec<&'static str> = std::iter::once("event")
        .chain(keys.iter().map(|k| leak(k)))
        .collect();
    let cs: &'static EventCallsite = Box::leak(Box::new(EventCallsite {
        level,
        names: Box::leak(names.into_boxed_slice()),
        meta: OnceLock::new(),
        interest: AtomicU8::new(1),
    }));
    let _ = cs.meta.set(Metadata::new(
        name,
        TARGET,
        tracing_level(level)?,
        None,
        None,
        Some(TARGET),
        FieldSet::new(cs.names, tracing_core::identify_callsite!(cs)),
        Kind::EVENT,
    ));
    tracing_core::callsite::register(cs);
    map.entry(name.to_string()).or_default().push(cs);
    Some(cs)
}

/// Log one event with its fields (as a `tracing` event: see the module documentation).
pub fn event(level: Level, event: &str, fields: &[(&str, &dyn std::fmt::Display)]) {
    if !enabled(level) {
        return;
    }
    let mut keys = [""; MAX_FIELDS - 1];
    let n = fields.len().min(MAX_FIELDS - 1);
    for (k, (name, _)) in keys.iter_mut().zip(fields) {
        *k = name;
    }
    let Some(cs) = callsite(level, event, &keys[..n]) else {
        return;
    };
    if cs.interest.load(Ordering::Relaxed) == 0 {
        return;
    }
    let meta: &'static Metadata<'static> = cs.metadata();
    let set = meta.fields();
    let handles: Vec<Field> = set.iter().collect();
    let Some(first) = handles.first() else {
        return;
    };
    // Every value through the one redaction: a reason may quote a key spec, a URL or a
    // configuration line.
    let shown: Vec<Redacted<'_>> = fields[..n].iter().map(|(_, v)| Redacted(*v)).collect();
    let values: Vec<field::DisplayValue<&dyn std::fmt::Display>> = shown
        .iter()
        .map(|v| field::display(v as &dyn std::fmt::Display))
        .collect();
    let name: &str = event;
    let mut entries: [(&Field, Option<&dyn Value>); MAX_FIELDS] = [(first, None); MAX_FIELDS];
    entries[0] = (first, Some(&name as &dyn Value));
    for ((slot, handle), value) in entries[1..].iter_mut().zip(&handles[1..]).zip(&values) {
        *slot = (handle, Some(value as &dyn Value));
    }
    let values = set.value_set(&entries);
    dispatcher::get_default(|d| {
        if d.enabled(meta) {
            d.event(&Event::new(meta, &values));
        }
    });
}

/// A log value written through `tlskit_x509::text::redact`.
struct Redacted<'a>(&'a dyn std::fmt::Display);

impl std::fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&tlskit_x509::text::redact(&self.0.to_string()))
    }
}

/// The tracing side of [`event`]: fields arrive structured, one callsite per shape.
#[cfg(test)]
mod tracing_tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_core::span::{Attributes, Id, Record};
    use tracing_core::{Dispatch, Subscriber};

    type Seen = Vec<(tracing_core::Level, String, Vec<(String, String)>)>;

    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Seen>>);

    struct Visitor(Vec<(String, String)>);
    impl field::Visit for Visitor {
        fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
            self.0.push((f.name().to_string(), format!("{v:?}")));
        }
        fn record_str(&mut self, f: &Field, v: &str) {
            self.0.push((f.name().to_string(), v.to_string()));
        }
    }

    impl Subscriber for Recorder {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let mut v = Visitor(Vec::new());
            e.record(&mut v);
            if let Ok(mut seen) = self.0.lock() {
                seen.push((*e.metadata().level(), e.metadata().target().into(), v.0));
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn events_reach_the_subscriber_with_their_fields() {
        let rec = Recorder::default();
        let peer = "127.0.0.1:4433";
        dispatcher::with_default(&Dispatch::new(rec.clone()), || {
            event(Level::Warn, "test_failed", &[("peer", &peer), ("n", &3)]);
            event(Level::Warn, "test_failed", &[("peer", &peer), ("n", &4)]);
            event(Level::Debug, "test_other", &[]);
        });
        let seen = rec.0.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0].0, tracing_core::Level::WARN);
        assert_eq!(seen[0].1, TARGET);
        let f = |i: usize| -> Vec<(&str, &str)> {
            seen[i]
                .2
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect()
        };
        assert_eq!(f(0), [("event", "test_failed"), ("peer", peer), ("n", "3")]);
        assert_eq!(f(1)[2], ("n", "4"));
        assert_eq!(f(2), [("event", "test_other")]);
        let made = callsites()
            .read()
            .map(|m| m.get("test_failed").map_or(0, Vec::len))
            .unwrap_or(0);
        assert_eq!(made, 1, "one callsite for one (level, event, keys)");
    }
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
