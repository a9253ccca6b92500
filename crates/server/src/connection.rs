//! One connection: the ClientHello read within bounds, the handshake under its deadline,
//! then the responder (HTTP or echo) or the relay to the backend, each state with its own
//! deadline.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::HandshakeKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use tlskit_tls::log::{self, Level};
use tlskit_tls::Compression;

use crate::config::Mode;
use crate::metrics::{CloseReason, FailReason, Outcome};
use crate::state::Shared;

/// The TLS stream every connection state works on.
type Tls = crate::conn::Guarded<crate::hello::Prefixed<TcpStream>>;

/// Count a failed handshake and log it within the per-source rate limit (a connection
/// closed before its first byte, a TCP health check, at debug level only).
fn handshake_failed(
    s: &Shared,
    peer: SocketAddr,
    reason: FailReason,
    detail: &dyn std::fmt::Display,
) {
    handshake_failed_rule(s, peer, reason, detail, None);
}

/// [`handshake_failed`] with the rule code of a refused client certificate, logged as
/// `rule=...` after the reason.
fn handshake_failed_rule(
    s: &Shared,
    peer: SocketAddr,
    reason: FailReason,
    detail: &dyn std::fmt::Display,
    rule: Option<&'static str>,
) {
    s.metrics.handshake(
        if reason == FailReason::Timeout {
            Outcome::Timeout
        } else {
            Outcome::Failed
        },
        0.0,
    );
    s.metrics.failure(reason);
    if reason == FailReason::NoClientHello {
        // A TCP health check (connect, close): counted, never a warning.
        log::event(Level::Debug, "no_client_hello", &[("peer", &peer)]);
        return;
    }
    if !log::enabled(Level::Warn) {
        return;
    }
    use tlskit_tls::ratelimit::{Noisy, Verdict, GLOBAL};
    let now = Instant::now();
    match s.log_limit.check(peer.ip(), now) {
        Verdict::Drop => GLOBAL.count_suppressed(Noisy::HandshakeFailed),
        // Within its source's limit, but not within every source's together.
        Verdict::Log { suppressed } if !GLOBAL.allow(Noisy::HandshakeFailed, now, suppressed) => {}
        Verdict::Log { suppressed } => {
            let event = if reason == FailReason::Timeout {
                "handshake_timeout"
            } else {
                "handshake_failed"
            };
            let class = reason.label();
            let mut fields: Vec<(&str, &dyn std::fmt::Display)> =
                vec![("peer", &peer), ("class", &class), ("reason", detail)];
            if let Some(rule) = &rule {
                fields.push(("rule", rule));
            }
            if suppressed > 0 {
                fields.push(("suppressed", &suppressed));
            }
            log::event(Level::Warn, event, &fields);
        }
    }
}

pub(crate) async fn handle(mut tcp: TcpStream, peer: SocketAddr, s: &Shared) {
    if let Err(e) = tlskit_tls::sock::tune_accepted(socket2::SockRef::from(&tcp)) {
        tlskit_tls::ratelimit::event(
            tlskit_tls::ratelimit::Noisy::Socket,
            Level::Warn,
            "socket_options",
            &[("peer", &peer), ("reason", &e)],
        );
    }
    // Our own address goes only into a PROXY header (one system call saved otherwise).
    let local = if s.cfg.proxy_protocol && matches!(s.cfg.mode, Mode::Backend(_)) {
        tcp.local_addr().unwrap_or(peer)
    } else {
        peer
    };
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start + s.cfg.handshake_timeout);
    // The ClientHello first, read by us within bounds (crate::hello); rustls gets it whole.
    let hello = tokio::time::timeout_at(
        deadline,
        Box::pin(crate::hello::read_client_hello(
            &mut tcp,
            s.cfg.max_client_hello,
            &s.budget,
        )),
    )
    .await;
    let prefix = match hello {
        Ok(Ok(x)) => x,
        Ok(Err(refused)) => {
            let reason = match refused {
                crate::hello::Refused::TooLarge => FailReason::ClientHelloTooLarge,
                crate::hello::Refused::Budget | crate::hello::Refused::Evicted => {
                    FailReason::HandshakeBudget
                }
                crate::hello::Refused::Eof => FailReason::Eof,
                crate::hello::Refused::NoClientHello => FailReason::NoClientHello,
            };
            handshake_failed(s, peer, reason, &refused.label());
            return;
        }
        Err(_) => {
            handshake_failed(s, peer, FailReason::Timeout, &"no ClientHello in time");
            return;
        }
    };
    let rest = if s.store.is_some() {
        crate::hello::REST_OF_HANDSHAKE_CLIENT_AUTH
    } else {
        crate::hello::REST_OF_HANDSHAKE
    };
    let offered_compression = if s.cfg.compress.is_empty() {
        Vec::new()
    } else {
        crate::hello::offered_cert_compression(&prefix)
    };
    let io = crate::hello::Prefixed::new(prefix, tcp, rest);
    // With ACME TLS-ALPN-01, validation handshakes (ALPN acme-tls/1 only) are answered
    // with the validation certificate and closed here.
    let alpn_cfg = s.acme.as_ref();
    // Each phase boxed: the task of a connection holds only the state of the phase it is
    // in, not the largest state of any phase.
    let accepted = tokio::time::timeout_at(
        deadline,
        Box::pin(crate::services::accept(io, &s.tls, alpn_cfg)),
    )
    .await;
    // Kept boxed: the task's own state holds a pointer, not the TLS connection.
    let mut tls = match accepted {
        Ok(Ok(crate::services::Accepted::Tls(t))) => t,
        Ok(Ok(crate::services::Accepted::Validation)) => return,
        Ok(Err(e)) if crate::hello::is_too_large(&e) => {
            handshake_failed(s, peer, FailReason::HandshakeTooLarge, &e);
            return;
        }
        Ok(Err(e)) => {
            // A refused client certificate: tlskit's sentence and rule code, never the
            // Rust debug output rustls's Display gives its certificate errors.
            let refusal =
                tlskit_tls::tls_text::io_rustls(&e).and_then(tlskit_verify::CertificateRefusal::of);
            match refusal {
                Some(r) => handshake_failed_rule(
                    s,
                    peer,
                    FailReason::of(&e),
                    &format_args!("invalid peer certificate: {r}"),
                    Some(r.rule),
                ),
                // rustls's Display names its errors with Rust identifiers: in words.
                None => handshake_failed(
                    s,
                    peer,
                    FailReason::of(&e),
                    &tlskit_tls::tls_text::io_tls_text(&e),
                ),
            }
            return;
        }
        Err(_) => {
            handshake_failed(
                s,
                peer,
                FailReason::Timeout,
                &"handshake not finished in time",
            );
            return;
        }
    };
    tls.get_mut().0.unlimit();
    let secs = start.elapsed().as_secs_f64();
    let (_, conn) = tls.get_ref();
    let resumed = conn.handshake_kind() == Some(HandshakeKind::Resumed);
    s.metrics.handshake(
        if resumed {
            Outcome::Resumed
        } else {
            Outcome::Full
        },
        secs,
    );
    // Which compression the certificate went out with: rustls takes the server's first
    // configured algorithm the client offered (TLS 1.3 full handshakes only).
    let compression = (!resumed
        && conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3))
    .then(|| {
        s.cfg
            .compress
            .iter()
            .copied()
            .find(|c| offered_compression.contains(&c.code()))
    })
    .flatten();
    if !resumed {
        s.metrics.cert_compression(compression);
    }
    if log::enabled(Level::Debug) {
        let version = tlskit_tls::version_name(conn.protocol_version());
        let sni = conn.server_name().unwrap_or("").to_string();
        log::event(
            Level::Debug,
            "handshake",
            &[
                ("peer", &peer),
                ("sni", &sni),
                ("version", &version),
                ("resumed", &resumed),
                (
                    "cert_compression",
                    &compression.map_or("none", Compression::name),
                ),
                ("ms", &format!("{:.2}", secs * 1e3)),
            ],
        );
    }
    let facts = (s.cfg.proxy_protocol && matches!(s.cfg.mode, Mode::Backend(_)))
        .then(|| crate::proxy::TlsFacts::of(conn));
    let result = match &s.cfg.mode {
        Mode::Http => Box::pin(respond_http(crate::conn::Guarded::new(*tls, None), s)).await,
        Mode::Echo => Box::pin(echo(crate::conn::Guarded::new(*tls, None), s)).await,
        Mode::Backend(addr) => {
            // Only the relay's idle deadline reads the time of the last byte.
            let activity = crate::conn::Activity::new();
            let tls = crate::conn::Guarded::new(*tls, Some(activity.clone()));
            let ends = (peer, local, facts);
            Box::pin(forward(tls, activity, addr, ends, s)).await
        }
    };
    if let Err(e) = result {
        if crate::conn::is_renegotiation(&e) {
            s.metrics.closed(CloseReason::Renegotiation);
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::Renegotiation,
                Level::Warn,
                "renegotiation_refused",
                &[("peer", &peer)],
            );
        } else {
            log::event(
                Level::Debug,
                "connection_error",
                &[("peer", &peer), ("reason", &e)],
            );
        }
    }
}

const BODY: &[u8] = b"hello from tlskit\n";

/// Request bodies up to this size are read and dropped (keep-alive goes on); a larger
/// body, or a chunked one, gets its answer and the connection closes.
const MAX_SKIPPED_BODY: u64 = 64 * 1024;

/// After answering a request whose body is not read, the server keeps reading (and
/// dropping) for this long, at most [`MAX_SKIPPED_BODY`] bytes, before closing, so that
/// the client's unread bytes do not turn the close into a reset that loses the answer.
const LINGER: Duration = Duration::from_secs(1);

/// Read more of a request into `buf`. While `buf` is empty (a connection waiting for its
/// next request) the read goes through a buffer on the stack, made only when bytes are
/// there to take, so an idle connection holds no read buffer.
async fn read_more(tls: &mut Tls, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    use std::task::Poll;
    use tokio::io::{AsyncRead, ReadBuf};
    if !buf.is_empty() {
        buf.reserve(2048);
        return tls.read_buf(buf).await;
    }
    std::future::poll_fn(|cx| {
        let mut first = [0u8; 2048];
        let mut part = ReadBuf::new(&mut first);
        match std::pin::Pin::new(&mut *tls).poll_read(cx, &mut part) {
            Poll::Ready(Ok(())) => {
                buf.extend_from_slice(part.filled());
                Poll::Ready(Ok(part.filled().len()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Write with the idle deadline (a client that reads nothing cannot hold a writer).
async fn send(tls: &mut Tls, bytes: &[u8], s: &Shared) -> std::io::Result<()> {
    match tokio::time::timeout(s.cfg.idle_timeout, async {
        tls.write_all(bytes).await?;
        tls.flush().await
    })
    .await
    {
        Ok(r) => r,
        Err(_) => {
            s.metrics.closed(CloseReason::IdleTimeout);
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "client did not read within idle_timeout",
            ))
        }
    }
}

/// Send close_notify (bounded by the idle deadline), then read and drop what the client
/// still sends for up to [`LINGER`]. Boxed: the closing state is allocated when a
/// connection closes instead of being part of every open connection's responder state.
fn close(
    tls: Tls,
    s: &Shared,
    linger: bool,
) -> std::pin::Pin<Box<impl std::future::Future<Output = std::io::Result<()>> + '_>> {
    Box::pin(closing(tls, s, linger))
}

async fn closing(mut tls: Tls, s: &Shared, linger: bool) -> std::io::Result<()> {
    let _ = tokio::time::timeout(s.cfg.idle_timeout, tls.shutdown()).await;
    if linger {
        let mut left = MAX_SKIPPED_BODY as usize;
        let mut sink = vec![0u8; 4096];
        let until = tokio::time::Instant::now() + LINGER;
        while left > 0 {
            match tokio::time::timeout_at(until, tls.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
    }
    Ok(())
}

async fn respond_http(mut tls: Tls, s: &Shared) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    // The first request's head is due `header_timeout` after the handshake.
    let mut due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
    // No per-connection read array: bytes land in `buf` (`read_more`), which holds no
    // memory while a connection waits for a request (an idle keep-alive connection gives
    // it back: see the end of the loop).
    loop {
        // Read one request head: within `header_timeout` of its first byte in total.
        let end = loop {
            if let Some(p) = crate::http::head_end(&buf) {
                break p;
            }
            if buf.len() > 16 * 1024 {
                s.metrics.closed(CloseReason::BadRequest);
                send(&mut tls, b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await?;
                return close(tls, s, true).await;
            }
            let n = match due {
                Some(due) => {
                    match tokio::time::timeout_at(due, read_more(&mut tls, &mut buf)).await {
                        Ok(r) => r?,
                        Err(_) => {
                            s.metrics.closed(CloseReason::HeaderTimeout);
                            let _ = send(&mut tls, b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await;
                            return close(tls, s, false).await;
                        }
                    }
                }
                None => {
                    // Between requests: idle, and a shutdown closes the connection now.
                    let mut stop = s.stop.subscribe();
                    if *stop.borrow_and_update() {
                        return close(tls, s, false).await;
                    }
                    let read =
                        tokio::time::timeout(s.cfg.idle_timeout, read_more(&mut tls, &mut buf));
                    let r = tokio::select! {
                        r = read => r,
                        _ = stop.changed() => return close(tls, s, false).await,
                    };
                    match r {
                        Ok(r) => {
                            due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
                            r?
                        }
                        Err(_) => {
                            s.metrics.closed(CloseReason::IdleTimeout);
                            return close(tls, s, false).await;
                        }
                    }
                }
            };
            if n == 0 {
                return Ok(());
            }
        };
        let head = match crate::http::parse(&buf[..end]) {
            Ok(h) => h,
            Err(bad) => {
                s.metrics.closed(CloseReason::BadRequest);
                let reason = bad.reason();
                let resp = format!(
                    "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{reason}\n",
                    reason.len() + 1
                );
                send(&mut tls, resp.as_bytes(), s).await?;
                return close(tls, s, true).await;
            }
        };
        buf.drain(..end);
        // The body: skipped when small, else answered and closed.
        let mut close_after = s.stopping.load(Ordering::Acquire) || head.close;
        let mut linger = false;
        match head.body {
            crate::http::Body::None => {}
            crate::http::Body::Length(n) if n <= MAX_SKIPPED_BODY => {
                let mut left = n as usize;
                loop {
                    let take = left.min(buf.len());
                    buf.drain(..take);
                    left -= take;
                    if left == 0 {
                        break;
                    }
                    buf.reserve(left.min(16 * 1024));
                    let due = due.unwrap_or_else(tokio::time::Instant::now);
                    match tokio::time::timeout_at(due, tls.read_buf(&mut buf)).await {
                        Ok(Ok(0)) => return Ok(()),
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => return Err(e),
                        Err(_) => {
                            s.metrics.closed(CloseReason::HeaderTimeout);
                            let _ = send(&mut tls, b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", s).await;
                            return close(tls, s, false).await;
                        }
                    }
                }
            }
            crate::http::Body::Length(_) | crate::http::Body::Chunked => {
                // Not read: whatever follows is body, never another request.
                close_after = true;
                linger = true;
                buf.clear();
            }
        }
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
            BODY.len(),
            if close_after {
                "Connection: close\r\n"
            } else {
                ""
            }
        )
        .into_bytes();
        resp.extend_from_slice(BODY);
        send(&mut tls, &resp, s).await?;
        if close_after {
            return close(tls, s, linger).await;
        }
        if buf.is_empty() {
            // Between requests an idle connection holds no read buffer.
            buf = Vec::new();
            due = None;
        } else {
            // Pipelined: the next request's bytes are here already.
            due = Some(tokio::time::Instant::now() + s.cfg.header_timeout);
        }
    }
}

async fn echo(mut tls: Tls, s: &Shared) -> std::io::Result<()> {
    let mut buf = vec![0u8; 4096];
    loop {
        let n = match tokio::time::timeout(s.cfg.idle_timeout, tls.read(&mut buf)).await {
            Ok(n) => n?,
            Err(_) => {
                s.metrics.closed(CloseReason::IdleTimeout);
                break;
            }
        };
        if n == 0 {
            break;
        }
        send(&mut tls, &buf[..n], s).await?;
    }
    close(tls, s, false).await
}

async fn forward(
    mut tls: Tls,
    activity: Arc<crate::conn::Activity>,
    addr: &str,
    (peer, local, facts): (SocketAddr, SocketAddr, Option<crate::proxy::TlsFacts>),
    s: &Shared,
) -> std::io::Result<()> {
    let connect = tokio::time::timeout(s.cfg.handshake_timeout, TcpStream::connect(addr));
    let backend = match connect.await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => {
            s.metrics.backend_error();
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::BackendUnreachable,
                Level::Error,
                "backend_unreachable",
                &[("backend", &addr), ("reason", &e)],
            );
            return close(tls, s, false).await;
        }
        Err(_) => {
            s.metrics.backend_error();
            tlskit_tls::ratelimit::event(
                tlskit_tls::ratelimit::Noisy::BackendUnreachable,
                Level::Error,
                "backend_unreachable",
                &[("backend", &addr), ("reason", &"connect timed out")],
            );
            return close(tls, s, false).await;
        }
    };
    backend.set_nodelay(true)?;
    let mut backend = crate::conn::Tracked::new(backend, activity.clone());
    if s.cfg.proxy_protocol {
        let header = crate::proxy::v2_header(peer, local, facts.as_ref());
        match tokio::time::timeout(s.cfg.idle_timeout, backend.write_all(&header)).await {
            Ok(r) => r?,
            Err(_) => return close(tls, s, false).await,
        }
    }
    // Both ways at once; the connection ends when nothing has moved either way for
    // `idle_timeout` (a silent backend, or a silent client, cannot hold it).
    {
        let copy = tokio::io::copy_bidirectional(&mut tls, &mut backend);
        tokio::pin!(copy);
        loop {
            let due = tokio::time::Instant::from_std(activity.deadline(s.cfg.idle_timeout));
            tokio::select! {
                r = &mut copy => return r.map(|_| ()),
                _ = tokio::time::sleep_until(due) => {
                    if activity.deadline(s.cfg.idle_timeout) <= Instant::now() {
                        break;
                    }
                }
            }
        }
    }
    s.metrics.closed(CloseReason::IdleTimeout);
    log::event(
        Level::Debug,
        "idle_timeout",
        &[("peer", &peer), ("backend", &addr)],
    );
    drop(backend);
    close(tls, s, false).await
}
