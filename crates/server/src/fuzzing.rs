//! Entry points for the fuzz harnesses (`fuzz/src/harness.rs`) into parsers that are
//! crate-internal: the server's own ClientHello reader (`hello.rs`), the HTTP
//! responder's request-head parser (`http.rs`). Not API: hidden from the docs, may
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
