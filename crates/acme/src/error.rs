//! The ACME error, the refusal of a CA's result, and the text helpers that make a CA's
//! or a transport's words safe to print: the bottom of the ACME crate.

use std::net::SocketAddr;
use std::path::PathBuf;

/// What can go wrong getting a certificate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcmeError {
    /// The storage directory or one of its files.
    #[error("ACME storage {path}: {reason}")]
    Storage {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// The CA refused a request or could not be reached.
    #[error("ACME {what} for {subject}: {reason}")]
    Protocol {
        /// The step (`new order`, `creating the account`, ...).
        what: &'static str,
        /// The names or the directory URL concerned.
        subject: String,
        /// The CA's problem document or the transport error (escaped, one line).
        reason: String,
    },
    /// Validation of a name failed: the CA's problem document.
    #[error("ACME validation of {domain} failed: {problem}")]
    Challenge {
        /// The name(s).
        domain: String,
        /// The problem document (type, status, detail), escaped.
        problem: String,
    },
    /// A certificate or key file.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Cannot listen for the challenge.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        reason: std::io::Error,
    },
    /// Inconsistent settings or unusable data.
    #[error("ACME: {0}")]
    Config(String),
    /// A trust store (the roots the CA's HTTPS is verified on, the CA's issuing roots)
    /// could not load.
    #[error("ACME: {what}: {source}")]
    Store {
        /// Which store: `ACME roots`, `ACME issuer roots`.
        what: &'static str,
        /// Why it did not load.
        #[source]
        source: tlskit_store::StoreError,
    },
    /// The shared state (Redis) of a fleet could not be read or written.
    #[error("ACME shared state {url}: {reason}")]
    Shared {
        /// The Redis URL, password redacted.
        url: String,
        /// Why.
        reason: String,
    },
    /// The CA's certificate failed a check: not written, not served.
    #[error("{0}")]
    Refused(#[from] Refused),
    /// rustls refused a key or configuration.
    /// (Said through `tls_text`, not chained as a source: rustls's Display may be Debug.)
    #[error("TLS: {}", tlskit_tls::tls_text::tls_text(.0))]
    Tls(rustls::Error),
    /// Runtime start.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// DNS-01: a TXT record could not be written, removed or seen in time.
    #[error("DNS-01: {0}")]
    Dns(#[from] tlskit_dns::DnsError),
    /// The CA took a rolled-over account key, but the storage did not take the new
    /// credentials (every try failed): they were written to a rescue file instead, which
    /// `tlskit acme account restore --from FILE` puts in place.
    #[error(
        "the CA took the new key of the ACME account {id}, but the storage {location} could \
         not be written ({tries} tries; last: {reason}); the new credentials (the key the \
         account now needs) are saved in {} (mode 0600): once the storage works again, put \
         them back with `tlskit acme account restore --from {}` and the same --directory \
         and storage flags",
        .rescue.display(),
        .rescue.display()
    )]
    RolloverUnstored {
        /// The account URL (escaped).
        id: String,
        /// Where the credentials should have gone (a path, a Redis key).
        location: String,
        /// How many times the storage was tried.
        tries: u32,
        /// The storage's last error.
        reason: String,
        /// The rescue file holding the new credentials.
        rescue: PathBuf,
    },
    /// The CA took a rolled-over account key, and neither the storage nor any rescue
    /// directory took the new credentials: the account's key is lost.
    #[error(
        "the CA took the new key of the ACME account {id}, but neither the storage \
         {location} ({tries} tries; last: {reason}) nor a rescue file ({rescue}) could be \
         written: the new key is lost, and the stored key is no longer the account's"
    )]
    RolloverLost {
        /// The account URL (escaped).
        id: String,
        /// Where the credentials should have gone.
        location: String,
        /// How many times the storage was tried.
        tries: u32,
        /// The storage's last error.
        reason: String,
        /// Each rescue file tried and why it failed.
        rescue: String,
    },
}

impl AcmeError {
    pub(crate) fn acme(what: &'static str, subject: &str, e: instant_acme::Error) -> Self {
        let reason = match &e {
            instant_acme::Error::Api(p) => problem_text(p),
            // hyper hides the cause ("connection refused") in the source chain; a TLS
            // error in it is told as tlskit's sentence, never rustls's Debug text.
            other => clean(&transport_error(other)),
        };
        Self::Protocol {
            what,
            subject: clean(subject),
            reason,
        }
    }
}

/// Text from the CA or a certificate, safe for a terminal or a log line: control
/// characters as `\xNN`, at most 1,000 characters.
pub(crate) fn clean(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i >= 1000 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", c as u32 & 0xff));
        } else {
            out.push(c);
        }
    }
    out
}

/// Why a certificate from the CA was refused; [`Refusal::label`] names the metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No certificate, or one that cannot be parsed.
    Unparsable,
    /// notBefore ahead of now.
    NotYetValid,
    /// Expired, or less than half of its lifetime left.
    Expired,
    /// Not the public key of the key we generated.
    WrongKey,
    /// Names other than those ordered.
    WrongNames,
    /// More certificates than the verifier accepts.
    ChainTooLong,
    /// Does not verify against the CA's issuing roots (when they are given).
    Untrusted,
}

impl Refusal {
    /// Every reason, in label order (for metrics).
    pub const ALL: [Refusal; 7] = [
        Self::ChainTooLong,
        Self::Expired,
        Self::NotYetValid,
        Self::Unparsable,
        Self::Untrusted,
        Self::WrongKey,
        Self::WrongNames,
    ];

    /// `unparsable`, `not_yet_valid`, `expired`, `wrong_key`, `wrong_names`,
    /// `chain_too_long`, `untrusted`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Unparsable => "unparsable",
            Self::NotYetValid => "not_yet_valid",
            Self::Expired => "expired",
            Self::WrongKey => "wrong_key",
            Self::WrongNames => "wrong_names",
            Self::ChainTooLong => "chain_too_long",
            Self::Untrusted => "untrusted",
        }
    }
}

/// A refused result: the reason and a sentence saying what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CA's certificate was refused ({}): {detail}", reason.label())]
#[non_exhaustive]
pub struct Refused {
    /// The class, for metrics.
    pub reason: Refusal,
    /// What was wrong (escaped text).
    pub detail: String,
}

/// A transport error in words: the chain of causes, each said once, with a TLS error told
/// as tlskit's sentence (rustls writes a certificate refusal with `Debug` inside
/// `invalid peer certificate: Other(...)`, and an alert by its Rust name).
pub(crate) fn transport_error(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(tls) = find_rustls(err) {
            let text = match tlskit_verify::CertificateRefusal::of(tls) {
                Some(r) => format!("the CA's certificate was refused: {r}"),
                None => tlskit_tls::tls_text::tls_text(tls),
            };
            parts.push(text);
            break;
        }
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// The rustls error `e` is or wraps. tokio-rustls hands it over inside an `io::Error`
/// (and a connector may wrap that in another one), whose `source` skips it: look inside.
fn find_rustls<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    // A few levels at most; each step goes one wrapper deeper.
    for _ in 0..8 {
        if let Some(t) = cur.downcast_ref::<rustls::Error>() {
            return Some(t);
        }
        cur = cur.downcast_ref::<std::io::Error>()?.get_ref()?;
    }
    None
}

/// An RFC 7807 problem document as one line: type, detail, status (escaped).
pub(crate) fn problem_text(p: &instant_acme::Problem) -> String {
    let mut s = String::from("problem");
    if let Some(t) = &p.r#type {
        s.push_str(&format!(" type={}", clean(t)));
    }
    if let Some(st) = p.status {
        s.push_str(&format!(" status={st}"));
    }
    if let Some(d) = &p.detail {
        s.push_str(&format!(" detail=\"{}\"", clean(d)));
    }
    for sp in &p.subproblems {
        s.push_str(&format!(" subproblem=\"{}\"", clean(&sp.to_string())));
    }
    s
}

impl From<AcmeError> for tlskit_tls::NetError {
    fn from(e: AcmeError) -> Self {
        Self::Acme(Box::new(e))
    }
}
