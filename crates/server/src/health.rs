//! The metrics listener (`--metrics ADDR`): `GET /healthz` and `GET /readyz` for load
//! balancers and probes, and the Prometheus text for every other request, as the listener
//! answered before the health endpoints. One request per connection: its request line is
//! read within [`MAX_REQUEST`] bytes and [`REQUEST_DEADLINE`], the answer is plain text
//! and the connection closes. The listener keeps answering while the server drains after
//! SIGTERM (`/readyz` says 503 then), until the process exits.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::state::Shared;

/// Most bytes of a request read on the metrics listener.
const MAX_REQUEST: usize = 2048;

/// Time a client has to send its request line; past it the metrics are answered (as
/// they always were).
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// Time an answer has to be taken by the client.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

/// What a request on the metrics listener asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// `/healthz`: whether the process serves.
    Health { head: bool },
    /// `/readyz`: whether it should be sent traffic.
    Ready { head: bool },
    /// `/healthz` or `/readyz` with a method other than GET or HEAD.
    NotAllowed,
    /// Anything else (`/metrics`, any other path, no request line in time): the metrics.
    Metrics,
}

/// Route on the request line in `buf` (which may hold more of the request, or less than a
/// line: then the metrics, as before).
fn route(buf: &[u8]) -> Route {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        return Route::Metrics;
    };
    let line = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Route::Metrics;
    };
    let path = target.split(|&b| b == b'?').next().unwrap_or(target);
    let head = method == b"HEAD";
    let allowed = head || method == b"GET";
    match path {
        b"/healthz" if allowed => Route::Health { head },
        b"/readyz" if allowed => Route::Ready { head },
        b"/healthz" | b"/readyz" => Route::NotAllowed,
        _ => Route::Metrics,
    }
}

/// Why the server is not ready, in words; `Ok` when it is.
pub(crate) fn readiness(s: &Shared) -> Result<(), &'static str> {
    if s.stopping.load(Ordering::Acquire) {
        return Err("draining after SIGTERM or SIGINT");
    }
    // Every file certificate is loaded before bind returns (or bind fails); ACME's may
    // come later.
    if let Some(a) = &s.acme {
        if crate::services::managed(a).current().is_none() {
            return Err("no ACME certificate yet");
        }
    }
    Ok(())
}

/// A plain-text answer that closes the connection (`head`: without its body).
fn plain(status: &str, extra: &str, body: &str, head: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// The answer to `route`.
fn answer(route: Route, s: &Shared) -> Vec<u8> {
    match route {
        Route::Health { head } => plain("200 OK", "", "ok\n", head),
        Route::Ready { head } => match readiness(s) {
            Ok(()) => plain("200 OK", "", "ready\n", head),
            Err(why) => plain(
                "503 Service Unavailable",
                "",
                &format!("not ready: {why}\n"),
                head,
            ),
        },
        Route::NotAllowed => plain(
            "405 Method Not Allowed",
            "Allow: GET, HEAD\r\n",
            "only GET and HEAD\n",
            false,
        ),
        Route::Metrics => {
            let body = s.metrics.render();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        }
    }
}

/// Read until the request line is in, [`MAX_REQUEST`] bytes, the end of the stream, an
/// error or [`REQUEST_DEADLINE`], whichever comes first; what was read.
async fn read_request(c: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::with_capacity(MAX_REQUEST);
    let due = tokio::time::Instant::now() + REQUEST_DEADLINE;
    while buf.len() < MAX_REQUEST && !buf.contains(&b'\n') {
        let mut chunk = [0u8; MAX_REQUEST];
        let room = MAX_REQUEST - buf.len();
        match tokio::time::timeout_at(due, c.read(&mut chunk[..room])).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    buf
}

/// Serve the metrics listener until the runtime ends (after the drain).
pub(crate) async fn serve(l: TcpListener, s: Arc<Shared>) {
    loop {
        let mut c = match l.accept().await {
            Ok((c, _)) => c,
            Err(_) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let s = s.clone();
        tokio::spawn(async move {
            let request = read_request(&mut c).await;
            let resp = answer(route(&request), &s);
            let _ = tokio::time::timeout(WRITE_DEADLINE, async {
                c.write_all(&resp).await?;
                c.shutdown().await
            })
            .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_routed_by_their_request_line() {
        let h = |head| Route::Health { head };
        let r = |head| Route::Ready { head };
        for (req, want) in [
            (&b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"[..], h(false)),
            (b"HEAD /healthz HTTP/1.0\r\n\r\n", h(true)),
            (b"GET /readyz HTTP/1.0\n\n", r(false)),
            (b"GET /readyz?verbose HTTP/1.1\r\n", r(false)),
            (b"HEAD /readyz HTTP/1.1\r\n", r(true)),
            (b"POST /readyz HTTP/1.1\r\n", Route::NotAllowed),
            (b"OPTIONS /healthz HTTP/1.0\r\n", Route::NotAllowed),
            (b"GET /metrics HTTP/1.1\r\n\r\n", Route::Metrics),
            (b"GET / HTTP/1.1\r\n\r\n", Route::Metrics),
            (b"OPTIONS / HTTP/1.0\r\n\r\n", Route::Metrics),
            (b"GET /healthzz HTTP/1.1\r\n", Route::Metrics),
            (b"GET /readyz/x HTTP/1.1\r\n", Route::Metrics),
            // No complete request line: the metrics, as the listener always answered.
            (b"GET /readyz", Route::Metrics),
            (b"", Route::Metrics),
            (b"\r\n", Route::Metrics),
        ] {
            assert_eq!(route(req), want, "{}", String::from_utf8_lossy(req));
        }
    }

    #[test]
    fn answers_are_plain_text_with_their_length() {
        let a = String::from_utf8(plain(
            "503 Service Unavailable",
            "",
            "not ready: x\n",
            false,
        ))
        .unwrap_or_default();
        assert_eq!(
            a,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 13\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n\
             not ready: x\n"
        );
        let head = String::from_utf8(plain("200 OK", "", "ok\n", true)).unwrap_or_default();
        assert!(
            head.ends_with(
                "Content-Length: 3\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
            ),
            "{head}"
        );
    }
}
