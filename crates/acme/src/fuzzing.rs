//! Entry points for the fuzz harnesses (`fuzz/src/harness.rs`) into what tlskit does with
//! an ACME CA's documents: JSON parsed through instant-acme's types, Retry-After and ARI
//! windows clamped, a returned chain checked. Not API: hidden from the docs, may change at
//! any time. They call the same code the renewal manager runs, unchanged.

/// The certificate lifetime the ACME entry points clamp renewal windows into: notBefore
/// 2026-01-01T00:00:00Z, 90 days (Unix seconds).
pub const ACME_LEAF: (u64, u64) = (1_767_225_600, 1_767_225_600 + 90 * 86_400);

/// The fixed "now" of the ACME entry points (2026-01-02T00:00:00Z).
pub const ACME_NOW: u64 = 1_767_312_000;

fn acme_leaf(names: Vec<String>) -> crate::settings::LeafInfo {
    let t = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
    crate::settings::LeafInfo {
        not_before: t(ACME_LEAF.0),
        not_after: t(ACME_LEAF.1),
        serial: String::new(),
        names,
    }
}

/// Signed seconds from the Unix epoch (saturating), for windows before 1970.
fn signed_unix(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

/// What tlskit takes from one ACME JSON document (see [`acme_json`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcmeDoc {
    /// An order (RFC 8555 §7.1.3): its authorizations, whether it names a certificate,
    /// and its problem as tlskit prints it.
    Order {
        /// Authorization URLs.
        authorizations: usize,
        /// A certificate URL is given.
        certificate: bool,
        /// The order's problem document, as one escaped line.
        problem: Option<String>,
    },
    /// An authorization (§7.1.4): its identifier as printed and its challenges.
    Authorization {
        /// The identifier, escaped.
        identifier: String,
        /// Challenges offered.
        challenges: usize,
    },
    /// Renewal information (RFC 9773): the window as sent (signed Unix seconds) and when
    /// renewal is due once the window is clamped into [`ACME_LEAF`] (Unix seconds).
    RenewalInfo {
        /// Window start as sent.
        start: i64,
        /// Window end as sent.
        end: i64,
        /// Due, clamped.
        due: u64,
    },
    /// A problem document (RFC 7807) as one escaped line.
    Problem(String),
}

/// Parse `data` as the ACME document `kind` names (0 order, 1 authorization, 2 renewal
/// information, 3 problem; others: none) with the types tlskit reads it through
/// (instant-acme's), then do with it what tlskit does: print the problem, clamp the
/// renewal window. `None` when it does not parse.
pub fn acme_json(kind: u8, data: &[u8], rand01: f64) -> Option<AcmeDoc> {
    use crate::{check, client};
    match kind {
        0 => {
            let o: instant_acme::OrderState = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Order {
                authorizations: o.authorizations.len(),
                certificate: o.certificate.is_some(),
                problem: o.error.as_ref().map(crate::error::problem_text),
            })
        }
        1 => {
            let a: instant_acme::AuthorizationState = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Authorization {
                identifier: crate::error::clean(&a.identifier().to_string()),
                challenges: a.challenges.len(),
            })
        }
        2 => {
            let r: instant_acme::RenewalInfo = serde_json::from_slice(data).ok()?;
            let (start, end) = client::window_times(&r.suggested_window);
            let due = check::renewal_due(start, end, &acme_leaf(Vec::new()), rand01);
            Some(AcmeDoc::RenewalInfo {
                start: signed_unix(start),
                end: signed_unix(end),
                due: crate::settings::unix(due),
            })
        }
        3 => {
            let p: instant_acme::Problem = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Problem(crate::error::problem_text(&p)))
        }
        _ => None,
    }
}

/// A `Retry-After` value as tlskit reads it at [`ACME_NOW`]: milliseconds to wait
/// (at most one day), `None` when it is neither form.
pub fn acme_retry_after(value: &[u8]) -> Option<u64> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(ACME_NOW);
    crate::check::retry_after(value, now).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An ARI window given as two RFC 3339 times (`START\nEND`, as in the JSON), clamped into
/// [`ACME_LEAF`]: the due time (Unix seconds). `None` when either does not parse.
pub fn acme_window(text: &[u8], rand01: f64) -> Option<u64> {
    use time::format_description::well_known::Rfc3339;
    let text = std::str::from_utf8(text).ok()?;
    let (a, b) = text.split_once('\n')?;
    let start = time::OffsetDateTime::parse(a, &Rfc3339).ok()?;
    let end = time::OffsetDateTime::parse(b, &Rfc3339).ok()?;
    let w = instant_acme::SuggestedWindow { start, end };
    let (s, e) = crate::client::window_times(&w);
    let due = crate::check::renewal_due(s, e, &acme_leaf(Vec::new()), rand01);
    Some(crate::settings::unix(due))
}

/// A chain from the CA (PEM) checked as tlskit checks a new certificate for `names`, at
/// [`ACME_NOW`], without a key: the number of certificates, or the refusal's label.
pub fn acme_result(chain_pem: &[u8], names: &[String]) -> Result<usize, &'static str> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(ACME_NOW);
    let text = std::str::from_utf8(chain_pem).map_err(|_| "unparsable")?;
    crate::check::check_result(text, None, names, now, true)
        .map(|c| c.len())
        .map_err(|r| r.reason.label())
}

/// Most certificates [`acme_result`] accepts in a chain.
pub const ACME_MAX_CHAIN: usize = crate::check::MAX_CHAIN;
