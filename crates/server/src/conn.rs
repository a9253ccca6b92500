//! An established TLS connection as the responders and the backend relay see it:
//! renegotiation refused at once, and the time of the last byte moved either way (the
//! backend relay's idle deadline).
//!
//! rustls answers a TLS 1.2 renegotiation attempt (a ClientHello after the handshake) with
//! a `no_renegotiation` warning alert that it only queues; tokio-rustls writes queued
//! records on the next write, so a client that renegotiated and then waited got the alert
//! only when the idle timeout closed the connection (59 s). [`Guarded`] notices that a
//! read made rustls queue a record (in TLS 1.2 nothing else does that), sends it at once
//! and ends the connection with [`renegotiation_refused`]. In TLS 1.3 the same happens for
//! a KeyUpdate request, which is answered and the connection goes on.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::ProtocolVersion;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// When bytes last moved on a connection (either way, either side).
#[derive(Debug)]
pub(crate) struct Activity {
    epoch: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            epoch: Instant::now(),
            last_ms: AtomicU64::new(0),
        })
    }
    fn touch(&self) {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }
    /// The instant `idle` after the last byte moved.
    pub(crate) fn deadline(&self, idle: Duration) -> Instant {
        self.epoch + Duration::from_millis(self.last_ms.load(Ordering::Relaxed)) + idle
    }
}

/// The error a read returns after a refused renegotiation.
pub(crate) fn renegotiation_refused() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, "renegotiation refused")
}

/// Whether `e` is [`renegotiation_refused`].
pub(crate) fn is_renegotiation(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::ConnectionAborted && e.to_string() == "renegotiation refused"
}

/// The server's TLS stream with renegotiation refused at once and activity recorded
/// (when there is an [`Activity`] to record it in: the backend relay's).
pub(crate) struct Guarded<S> {
    pub(crate) tls: tokio_rustls::server::TlsStream<S>,
    activity: Option<Arc<Activity>>,
}

impl<S> Guarded<S> {
    pub(crate) fn new(
        tls: tokio_rustls::server::TlsStream<S>,
        activity: Option<Arc<Activity>>,
    ) -> Self {
        Self { tls, activity }
    }

    fn touch(&self) {
        if let Some(a) = &self.activity {
            a.touch();
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let queued_before = this.tls.get_ref().1.wants_write();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.tls).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.touch();
        }
        let conn = this.tls.get_ref().1;
        if !queued_before && conn.wants_write() && !matches!(r, Poll::Ready(Err(_))) {
            // rustls answered something it read: send the answer now.
            let tls12 = conn.protocol_version() == Some(ProtocolVersion::TLSv1_2);
            if let Poll::Ready(Err(e)) = Pin::new(&mut this.tls).poll_flush(cx) {
                return Poll::Ready(Err(e));
            }
            if tls12 {
                // A ClientHello after the handshake: rustls sent no_renegotiation; the
                // connection ends here (the caller's shutdown sends close_notify).
                return Poll::Ready(Err(renegotiation_refused()));
            }
        }
        r
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tls).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tls).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tls).poll_shutdown(cx)
    }
}

/// A plain stream (the backend) with activity recorded.
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, activity: Arc<Activity>) -> Self {
        Self { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
