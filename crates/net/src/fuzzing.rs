//! Entry points for the fuzz harnesses (`fuzz/src/harness.rs`) into parsers that are
//! crate-internal: the server's own ClientHello reader ([`crate::hello`]), the HTTP
//! responder's request-head parser ([`crate::http`]) and the RESP reply reader of the
//! fleet's Redis connections (`resp.rs`). Not API: hidden from the docs, may
//! change at any time. They call the same code the server runs, unchanged.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::hello::{read_client_hello, Budget, Refused};

/// One connection's run through the ClientHello reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloRun {
    /// The bytes to be replayed to rustls, or the refusal's label (`client_hello_too_large`,
    /// `handshake_budget`, `evicted`, `eof`).
    pub result: Result<Vec<u8>, &'static str>,
    /// Bytes the reader took from the client.
    pub read: usize,
    /// Bytes the reader wrote to the client (an alert when it refused).
    pub written: Vec<u8>,
}

/// Opened when the other connection is done: a stalled client then reads end of file.
#[derive(Default)]
struct Gate {
    open: bool,
    waker: Option<Waker>,
}

/// A client that sends `data` in reads of at most `chunk` bytes, then either closes
/// (end of file) or, when `stall` is set, goes quiet until the gate opens.
struct Client<'a> {
    data: &'a [u8],
    at: usize,
    chunk: usize,
    stall: Option<Arc<Mutex<Gate>>>,
    written: Vec<u8>,
}

impl AsyncRead for Client<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let rest = &self.data[self.at..];
        if !rest.is_empty() {
            let n = rest.len().min(self.chunk.max(1)).min(buf.remaining());
            buf.put_slice(&rest[..n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        if let Some(g) = &self.stall {
            if let Ok(mut g) = g.lock() {
                if !g.open {
                    g.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Client<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // Bounded: the reader only ever writes one alert.
        let n = buf.len().min(1024usize.saturating_sub(self.written.len()));
        self.written.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn label(r: Result<Vec<u8>, Refused>) -> Result<Vec<u8>, &'static str> {
    r.map_err(Refused::label)
}

/// Run the server's ClientHello reader (`max` bytes per connection, `budget` bytes of
/// slots shared, as `ServeConfig::max_client_hello` and `handshake_budget`) over `first`,
/// delivered in reads of at most `chunk` bytes. With `second`, a second connection on
/// the same budget starts once the first is waiting for more; the first then stalls
/// (instead of closing) at the end of its bytes, so the second may evict it, and closes
/// once the second is done. Returns each run and the budget's bytes in use afterwards.
pub fn client_hello(
    first: &[u8],
    second: Option<&[u8]>,
    chunk: usize,
    max: usize,
    budget: usize,
) -> Option<(HelloRun, Option<HelloRun>, usize)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok()?;
    let budget = Budget::new(budget, max);
    let gate = second.map(|_| Arc::new(Mutex::new(Gate::default())));
    let mut a = Client {
        data: first,
        at: 0,
        chunk,
        stall: gate.clone(),
        written: Vec::new(),
    };
    let (ra, rb) = rt.block_on(async {
        let one = read_client_hello(&mut a, max, &budget);
        match second {
            None => (one.await, None),
            Some(data) => {
                let mut b = Client {
                    data,
                    at: 0,
                    chunk,
                    stall: None,
                    written: Vec::new(),
                };
                let two = async {
                    // The first connection goes first, as far as its bytes take it.
                    tokio::task::yield_now().await;
                    let r = read_client_hello(&mut b, max, &budget).await;
                    if let Some(g) = &gate {
                        if let Ok(mut g) = g.lock() {
                            g.open = true;
                            if let Some(w) = g.waker.take() {
                                w.wake();
                            }
                        }
                    }
                    r
                };
                let (ra, rb) = tokio::join!(one, two);
                let b = HelloRun {
                    result: label(rb),
                    read: b.at,
                    written: b.written,
                };
                (ra, Some(b))
            }
        }
    });
    let a = HelloRun {
        result: label(ra),
        read: a.at,
        written: a.written,
    };
    Some((a, rb, budget.used()))
}

/// What the HTTP responder takes from a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpHead {
    /// The connection closes after the answer.
    pub close: bool,
    /// A body of this many bytes follows (never `Some(0)`).
    pub length: Option<u64>,
    /// A chunked body follows.
    pub chunked: bool,
}

/// The end of the request head in `buf` (index after CRLF CRLF), as the responder finds it.
pub fn http_head_end(buf: &[u8]) -> Option<usize> {
    crate::http::head_end(buf)
}

/// Parse a request head as the responder does; an error is the 400's reason.
pub fn http_head(head: &[u8]) -> Result<HttpHead, &'static str> {
    use crate::http::Body;
    let h = crate::http::parse(head).map_err(|e| e.reason())?;
    Ok(HttpHead {
        close: h.close,
        length: match h.body {
            Body::Length(n) => Some(n),
            _ => None,
        },
        chunked: h.body == Body::Chunked,
    })
}

/// What the RESP reader made of a stream of bytes from "Redis".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespRun {
    /// Each reply read, in order: `nil`, `status`, `error`, `int`, `bulk N`, `array N`.
    pub replies: Vec<String>,
    /// How the stream ended: `closed` (no further whole reply), `too_large`, `malformed`.
    pub end: &'static str,
    /// The most bytes the reader's buffer held between replies (never more than the cap:
    /// nothing is read past what a reply is known to need).
    pub buffered_max: usize,
}

/// A stream that hands out `data` in reads of at most `chunk` bytes.
struct Dribble<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl io::Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.data.len().min(self.chunk).min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Read replies from `data` as tlskit reads Redis's answers, each capped at `cap` bytes,
/// the bytes arriving in reads of at most `chunk` bytes (1 for a drip), until the stream
/// ends or a reply is refused.
pub fn resp_replies(data: &[u8], cap: usize, chunk: usize) -> RespRun {
    use crate::resp::{read_reply, ReadError, ReplyError, Value};
    let mut io = Dribble {
        data,
        chunk: chunk.max(1),
    };
    let mut buf = Vec::new();
    let mut run = RespRun {
        replies: Vec::new(),
        end: "closed",
        buffered_max: 0,
    };
    loop {
        let r = read_reply(&mut io, &mut buf, cap);
        run.buffered_max = run.buffered_max.max(buf.len());
        match r {
            Ok(v) => run.replies.push(match v {
                Value::Nil => "nil".into(),
                Value::Status(_) => "status".into(),
                Value::Error(_) => "error".into(),
                Value::Int(_) => "int".into(),
                Value::Bulk(b) => format!("bulk {}", b.len()),
                Value::Array(a) => format!("array {}", a.len()),
            }),
            Err(ReadError::Reply(ReplyError::TooLarge { .. })) => {
                run.end = "too_large";
                return run;
            }
            Err(ReadError::Reply(ReplyError::Malformed(_))) => {
                run.end = "malformed";
                return run;
            }
            Err(ReadError::Closed | ReadError::Io(_)) => return run,
        }
    }
}

/// The certificate lifetime the ACME entry points clamp renewal windows into: notBefore
/// 2026-01-01T00:00:00Z, 90 days (Unix seconds).
pub const ACME_LEAF: (u64, u64) = (1_767_225_600, 1_767_225_600 + 90 * 86_400);

/// The fixed "now" of the ACME entry points (2026-01-02T00:00:00Z).
pub const ACME_NOW: u64 = 1_767_312_000;

fn acme_leaf(names: Vec<String>) -> crate::acme::LeafInfo {
    let t = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
    crate::acme::LeafInfo {
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
    use crate::acme::{check, client};
    match kind {
        0 => {
            let o: instant_acme::OrderState = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Order {
                authorizations: o.authorizations.len(),
                certificate: o.certificate.is_some(),
                problem: o.error.as_ref().map(client::problem_text),
            })
        }
        1 => {
            let a: instant_acme::AuthorizationState = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Authorization {
                identifier: crate::acme::clean(&a.identifier().to_string()),
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
                due: crate::acme::unix(due),
            })
        }
        3 => {
            let p: instant_acme::Problem = serde_json::from_slice(data).ok()?;
            Some(AcmeDoc::Problem(client::problem_text(&p)))
        }
        _ => None,
    }
}

/// A `Retry-After` value as tlskit reads it at [`ACME_NOW`]: milliseconds to wait
/// (at most one day), `None` when it is neither form.
pub fn acme_retry_after(value: &[u8]) -> Option<u64> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(ACME_NOW);
    crate::acme::check::retry_after(value, now)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
    let (s, e) = crate::acme::client::window_times(&w);
    let due = crate::acme::check::renewal_due(s, e, &acme_leaf(Vec::new()), rand01);
    Some(crate::acme::unix(due))
}

/// A chain from the CA (PEM) checked as tlskit checks a new certificate for `names`, at
/// [`ACME_NOW`], without a key: the number of certificates, or the refusal's label.
pub fn acme_result(chain_pem: &[u8], names: &[String]) -> Result<usize, &'static str> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(ACME_NOW);
    let text = std::str::from_utf8(chain_pem).map_err(|_| "unparsable")?;
    crate::acme::check::check_result(text, None, names, now, true)
        .map(|c| c.len())
        .map_err(|r| r.reason.label())
}

/// Most certificates [`acme_result`] accepts in a chain.
pub const ACME_MAX_CHAIN: usize = crate::acme::check::MAX_CHAIN;
