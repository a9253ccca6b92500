//! Bounded memory before the handshake: the server reads the client's ClientHello itself,
//! record by record, before rustls sees a byte.
//!
//! rustls buffers a handshake message until it is complete, up to 64 KiB, and its
//! buffer grows by reallocation; a client that sends a 65,000-byte ClientHello minus its
//! last byte held about 70 KiB per connection, and glibc kept most of it after the
//! connections closed (fragmented heap). Here:
//!
//! - a connection buffers at most `max_client_hello` bytes (the ClientHello's records,
//!   headers included) before its ClientHello is complete; a ClientHello that declares a
//!   larger size is refused after its first 9 bytes, with an `illegal_parameter` alert;
//! - the buffers are slots of `max_client_hello` bytes in one allocation of
//!   `handshake_budget` bytes ([`Budget`]) (at least 33 MiB of address space, so that
//!   glibc maps it on its own), made when the first slot is needed and given back to the
//!   system once no slot has been in use for two seconds ([`Budget::trim`]): memory
//!   returns after a flood whatever the allocator keeps of its heaps, and only the pages
//!   written are resident;
//! - a connection takes a slot when its first handshake record arrives (and gives it
//!   back when its ClientHello is complete); when every slot is taken, it evicts the
//!   oldest connections still
//!   waiting for the rest of their ClientHello (`internal_error` alert, counted), so a
//!   flood of partial ClientHellos cannot lock out new clients; with nothing to evict,
//!   the newcomer is refused;
//! - the ClientHello is copied out of its slot (the slot is free at once) and handed to
//!   rustls whole ([`Prefixed`]), so rustls processes it in one go and never holds a
//!   partial one.
//!
//! Anything that is not a TLS handshake record (an HTTP request, an SSLv2 hello, an
//! alert) is handed to rustls as read so far, and rustls refuses it with its own alert.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::Notify;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

/// Default for [`crate::ServeConfig::max_client_hello`]: 16 KiB. Browsers' ClientHellos
/// with a post-quantum key share (X25519MLKEM768, 1,216 bytes) are about 1.8-2.5 KB;
/// with a resumption ticket and ECH under 4 KB.
pub const DEFAULT_MAX_CLIENT_HELLO: usize = 16 * 1024;

/// Default for [`crate::ServeConfig::handshake_budget`]: 16 MiB, 1,024 connections holding
/// a full 16 KiB partial ClientHello, or about 8,000 holding a typical 2 KB one.
pub const DEFAULT_HANDSHAKE_BUDGET: usize = 16 * 1024 * 1024;

const HANDSHAKE: u8 = 22;
const CLIENT_HELLO: u8 = 1;
const RECORD_HEADER: usize = 5;
/// rustls refuses records longer than this (RFC 8446 5.1: 2^14 bytes of plaintext).
const MAX_FRAGMENT: usize = 16 * 1024;

/// Smallest allocation made for the slots (address space; only written pages count).
const MIN_SLAB: usize = 33 * 1024 * 1024;

/// Evictions one connection may cause to make room for one record.
const EVICT_TRIES: usize = 4;
/// How long it waits for an evicted connection to let go of its bytes.
const EVICT_WAIT: Duration = Duration::from_millis(200);

/// The slots that hold partial ClientHellos, shared by all connections.
#[derive(Debug)]
pub(crate) struct Budget {
    /// Bytes per slot (`max_client_hello`).
    slot: usize,
    /// Slots in all (`handshake_budget / max_client_hello`).
    slots: usize,
    pool: Mutex<Pool>,
    /// Slots in use now.
    used: AtomicUsize,
    /// Connections still reading their ClientHello, by arrival (oldest first). Each
    /// removes itself when done ([`Waiter`]), so nothing outlives its connection.
    waiting: Mutex<BTreeMap<u64, Arc<Notify>>>,
    next_id: AtomicU64,
    /// Signalled whenever a slot is given back.
    released: Notify,
}

#[derive(Debug, Default)]
struct Pool {
    /// Free slots: views into one shared allocation, freed with the last view.
    free: Vec<BytesMut>,
    allocated: bool,
    /// Consecutive [`Budget::trim`] calls that found no slot in use.
    idle_ticks: u8,
}

/// A connection's place in [`Budget::waiting`]; leaves it on drop.
struct Waiter {
    budget: Arc<Budget>,
    id: u64,
    evict: Arc<Notify>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Ok(mut w) = self.budget.waiting.lock() {
            w.remove(&self.id);
        }
    }
}

impl Budget {
    /// `limit` bytes in slots of `slot` bytes.
    pub(crate) fn new(limit: usize, slot: usize) -> Arc<Self> {
        Arc::new(Self {
            slot,
            slots: limit / slot.max(1),
            pool: Mutex::new(Pool::default()),
            used: AtomicUsize::new(0),
            waiting: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
            released: Notify::new(),
        })
    }

    /// A connection starts reading its ClientHello.
    fn register(self: &Arc<Self>) -> Waiter {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(id, evict.clone());
        }
        Waiter {
            budget: self.clone(),
            id,
            evict,
        }
    }

    /// Tell the oldest connection still reading its ClientHello (not `me`) to give up.
    fn evict_oldest(&self, me: u64) -> bool {
        let Ok(mut w) = self.waiting.lock() else {
            return false;
        };
        let Some(id) = w.keys().copied().find(|id| *id != me) else {
            return false;
        };
        match w.remove(&id) {
            Some(victim) => {
                victim.notify_one();
                true
            }
            None => false,
        }
    }

    /// Bytes of slots in use now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed) * self.slot
    }

    fn take(self: &Arc<Self>) -> Option<Slot> {
        let mut p = self.pool.lock().ok()?;
        if !p.allocated && self.slots > 0 {
            // One allocation for every slot; pages are resident only once written. At
            // least MIN_SLAB: glibc serves larger requests with their own mapping (its
            // dynamic mmap threshold never exceeds 32 MiB), which free() unmaps; a smaller
            // one may come from a heap that keeps it.
            let mut all = BytesMut::with_capacity((self.slot * self.slots).max(MIN_SLAB));
            for _ in 1..self.slots {
                let rest = all.split_off(self.slot);
                p.free.push(all);
                all = rest;
            }
            p.free.push(all);
            p.allocated = true;
        }
        let buf = p.free.pop()?;
        p.idle_ticks = 0;
        self.used.fetch_add(1, Ordering::Relaxed);
        Some(Slot {
            budget: self.clone(),
            buf: Some(buf),
        })
    }

    /// Called about once a second: after two calls in a row that found no slot in use,
    /// the slots' allocation is freed (made again when next needed).
    pub(crate) fn trim(&self) {
        let Ok(mut p) = self.pool.lock() else {
            return;
        };
        if !p.allocated || self.used.load(Ordering::Relaxed) > 0 {
            p.idle_ticks = 0;
            return;
        }
        p.idle_ticks += 1;
        if p.idle_ticks >= 2 {
            p.free = Vec::new();
            p.allocated = false;
            p.idle_ticks = 0;
        }
    }
}

/// One connection's slot; back to the pool on drop.
pub(crate) struct Slot {
    budget: Arc<Budget>,
    buf: Option<BytesMut>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(mut buf) = self.buf.take() {
            buf.clear();
            if let Ok(mut p) = self.budget.pool.lock() {
                if p.allocated {
                    p.free.push(buf);
                }
            }
            self.budget.used.fetch_sub(1, Ordering::Relaxed);
            self.budget.released.notify_waiters();
        }
    }
}

/// Why a ClientHello was refused before rustls saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Declared or sent more than `max_client_hello` bytes.
    TooLarge,
    /// The budget across connections is spent and nothing could be evicted.
    Budget,
    /// Evicted (the oldest partial ClientHello) to make room for a newer connection.
    Evicted,
    /// The peer closed (or reset) before the ClientHello was complete.
    Eof,
    /// The peer closed (or reset) before sending a single byte: a TCP health check
    /// (HAProxy's `check` without `option httpchk`, a port probe), not a TLS client.
    NoClientHello,
}

impl Refused {
    /// The metrics label (also the log reason).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::TooLarge => "client_hello_too_large",
            Self::Budget => "handshake_budget",
            Self::Evicted => "evicted",
            Self::Eof => "eof",
            Self::NoClientHello => "no_client_hello",
        }
    }
}

/// Read the ClientHello (whole records) from `io`. Returns the bytes read, to be replayed
/// to rustls.
pub(crate) async fn read_client_hello<S: AsyncRead + AsyncWrite + Unpin>(
    io: &mut S,
    max: usize,
    budget: &Arc<Budget>,
) -> Result<Vec<u8>, Refused> {
    let me = budget.register();
    let mut slot: Option<Slot> = None;
    let result = collect(io, max, budget, &mut slot, &me).await;
    drop(me);
    match result {
        Ok(first) => {
            // Out of the slot, which is free again at once.
            let mut out = Vec::with_capacity(first.len() + slot.as_ref().map_or(0, |s| s.len()));
            out.extend_from_slice(&first);
            if let Some(s) = slot.as_ref().and_then(|s| s.buf.as_ref()) {
                out.extend_from_slice(s);
            }
            drop(slot);
            Ok(out)
        }
        Err(e) => {
            drop(slot);
            match e {
                Refused::TooLarge => refuse(io, ALERT_ILLEGAL_PARAMETER).await,
                Refused::Budget | Refused::Evicted => refuse(io, ALERT_INTERNAL_ERROR).await,
                Refused::Eof | Refused::NoClientHello => {}
            }
            Err(e)
        }
    }
}

impl Slot {
    fn len(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.len())
    }
}

/// Read records into the slot (taken at the first record). Returns bytes to put before
/// the slot's: a first record header that is not a handshake's (handed on to rustls).
async fn collect<S: AsyncRead + Unpin>(
    io: &mut S,
    max: usize,
    budget: &Arc<Budget>,
    slot: &mut Option<Slot>,
    me: &Waiter,
) -> Result<Vec<u8>, Refused> {
    // Handshake bytes received so far, and the ClientHello's total (header included)
    // once its 4-byte header is in.
    let mut hs_len = 0usize;
    let mut hs_total: Option<usize> = None;
    // Whether nothing has been read yet: a close now is a connect-and-close check.
    let mut first = true;
    loop {
        // The record header on the stack.
        let mut h = [0u8; RECORD_HEADER];
        let got = if first {
            first = false;
            read_first(io, &mut h, me).await?
        } else {
            0
        };
        read_exact(io, &mut h[got..], me).await?;
        let frag = usize::from(u16::from_be_bytes([h[3], h[4]]));
        if h[0] != HANDSHAKE || h[1] != 3 || frag == 0 || frag > MAX_FRAGMENT {
            // Not a handshake record rustls would accept: let rustls say so.
            if slot.is_none() {
                return Ok(h.to_vec());
            }
            let buf = room(slot, RECORD_HEADER, max)?;
            let at = buf.len();
            buf.resize(at + RECORD_HEADER, 0);
            buf[at..].copy_from_slice(&h);
            return Ok(Vec::new());
        }
        if slot.is_none() {
            *slot = Some(take_slot(budget, me).await?);
        }
        // Over the cap: a ClientHello too large, or one cut in pieces to cost more than
        // it says (record headers count).
        let buf = room(slot, RECORD_HEADER + frag, max)?;
        let at = buf.len();
        buf.resize(at + RECORD_HEADER + frag, 0);
        buf[at..at + RECORD_HEADER].copy_from_slice(&h);
        read_exact(io, &mut buf[at + RECORD_HEADER..], me).await?;
        // The ClientHello's header is the first 4 handshake bytes (it may straddle records).
        hs_len += frag;
        if hs_total.is_none() && hs_len >= 4 {
            let mut head = [0u8; 4];
            let mut have = 0;
            let mut pos = 0;
            // Walk the records read so far for the first 4 handshake bytes.
            while have < 4 {
                let len = usize::from(u16::from_be_bytes([buf[pos + 3], buf[pos + 4]]));
                let body = &buf[pos + RECORD_HEADER..pos + RECORD_HEADER + len];
                let n = body.len().min(4 - have);
                head[have..have + n].copy_from_slice(&body[..n]);
                have += n;
                pos += RECORD_HEADER + len;
            }
            if head[0] != CLIENT_HELLO {
                return Ok(Vec::new());
            }
            let total =
                4 + (usize::from(head[1]) << 16 | usize::from(head[2]) << 8) + usize::from(head[3]);
            // Headers of the records still to come are not counted: the cap is checked
            // again, exactly, as each record arrives.
            if total + RECORD_HEADER > max {
                return Err(Refused::TooLarge);
            }
            hs_total = Some(total);
        }
        if hs_total.is_some_and(|t| hs_len >= t) {
            return Ok(Vec::new());
        }
    }
}

/// The slot's buffer, if `n` more bytes fit under the cap.
fn room(slot: &mut Option<Slot>, n: usize, max: usize) -> Result<&mut BytesMut, Refused> {
    let buf = slot
        .as_mut()
        .and_then(|s| s.buf.as_mut())
        .ok_or(Refused::Budget)?;
    if buf.len() + n > max.min(buf.capacity()) {
        return Err(Refused::TooLarge);
    }
    Ok(buf)
}

/// A free slot; when there is none, evict the oldest partial ClientHellos (a few at most)
/// to free one.
async fn take_slot(budget: &Arc<Budget>, me: &Waiter) -> Result<Slot, Refused> {
    let mut tries = 0;
    loop {
        // Armed before the attempt, so a release between the attempt and the wait counts.
        let released = budget.released.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        if let Some(s) = budget.take() {
            return Ok(s);
        }
        tries += 1;
        if tries > EVICT_TRIES || !budget.evict_oldest(me.id) {
            return Err(Refused::Budget);
        }
        tokio::select! {
            _ = &mut released => {}
            _ = me.evict.notified() => return Err(Refused::Evicted),
            _ = tokio::time::sleep(EVICT_WAIT) => return Err(Refused::Budget),
        }
    }
}

async fn read_exact<S: AsyncRead + Unpin>(
    io: &mut S,
    into: &mut [u8],
    me: &Waiter,
) -> Result<(), Refused> {
    tokio::select! {
        r = io.read_exact(into) => r.map(|_| ()).map_err(|_| Refused::Eof),
        _ = me.evict.notified() => Err(Refused::Evicted),
    }
}

/// The connection's first read (into a non-empty `into`): how many bytes came, never 0.
/// A close or a reset before the first byte is [`Refused::NoClientHello`].
async fn read_first<S: AsyncRead + Unpin>(
    io: &mut S,
    into: &mut [u8],
    me: &Waiter,
) -> Result<usize, Refused> {
    use std::io::ErrorKind as K;
    tokio::select! {
        r = io.read(into) => match r {
            Ok(0) => Err(Refused::NoClientHello),
            Ok(n) => Ok(n),
            Err(e) if matches!(
                e.kind(),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
            ) => Err(Refused::NoClientHello),
            Err(_) => Err(Refused::Eof),
        },
        _ = me.evict.notified() => Err(Refused::Evicted),
    }
}

const ALERT_ILLEGAL_PARAMETER: u8 = 47;
const ALERT_INTERNAL_ERROR: u8 = 80;

/// Send a fatal alert (plaintext, as before any key exchange) and give up on the peer.
async fn refuse<S: AsyncWrite + Unpin>(io: &mut S, alert: u8) {
    let _ = io.write_all(&[21, 3, 3, 0, 2, 2, alert]).await;
    let _ = io.shutdown().await;
}

/// Most bytes the client may send after its ClientHello until the handshake is done
/// (rustls buffers a handshake message until it is whole, up to 64 KiB): without client
/// authentication its second flight is about 100-200 bytes; with it, a certificate chain.
pub(crate) const REST_OF_HANDSHAKE: usize = 16 * 1024;
/// The same with client authentication: rustls's largest handshake message and records.
pub(crate) const REST_OF_HANDSHAKE_CLIENT_AUTH: usize = 64 * 1024 + 8 * 1024;

/// The error a read returns once the client sent more than the handshake allows.
pub(crate) fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "handshake larger than allowed")
}

/// Whether `e` is [`too_large`].
pub(crate) fn is_too_large(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData && e.to_string() == "handshake larger than allowed"
}

/// A stream that first replays `prefix`, then reads from `inner`; writes go to `inner`.
/// Until [`Prefixed::unlimit`], at most `limit` bytes are read from `inner`.
pub(crate) struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
    limit: Option<usize>,
}

impl<S> Prefixed<S> {
    pub(crate) fn new(prefix: Vec<u8>, inner: S, limit: usize) -> Self {
        Self {
            prefix,
            pos: 0,
            inner,
            limit: Some(limit),
        }
    }

    /// The handshake is done: no more limit on reads.
    pub(crate) fn unlimit(&mut self) {
        self.limit = None;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.pos < this.prefix.len() {
            let n = (this.prefix.len() - this.pos).min(buf.remaining());
            buf.put_slice(&this.prefix[this.pos..this.pos + n]);
            this.pos += n;
            if this.pos == this.prefix.len() {
                // Replayed: the buffer is not needed for the rest of the connection.
                this.prefix = Vec::new();
                this.pos = 0;
            }
            return Poll::Ready(Ok(()));
        }
        let Some(limit) = this.limit else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        if limit == 0 {
            return Poll::Ready(Err(too_large()));
        }
        // During the handshake only: at most `limit` bytes, straight into the caller's
        // buffer (rustls's own, already initialised: nothing is zeroed or copied here).
        let want = limit.min(buf.remaining());
        let mut part = ReadBuf::new(buf.initialize_unfilled_to(want));
        let r = Pin::new(&mut this.inner).poll_read(cx, &mut part);
        let n = part.filled().len();
        if let Poll::Ready(Ok(())) = r {
            buf.advance(n);
            this.limit = Some(limit - n);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(body: &[u8]) -> Vec<u8> {
        let mut r = vec![22, 3, 1];
        r.extend_from_slice(&(body.len() as u16).to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn hello(len: usize) -> Vec<u8> {
        let mut h = vec![1, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        h.resize(4 + len, 7);
        h
    }

    async fn run(wire: Vec<u8>, max: usize, budget: &Arc<Budget>) -> Result<Vec<u8>, Refused> {
        let (mut a, mut b) = tokio::io::duplex(1 << 20);
        b.write_all(&wire).await.unwrap_or_else(|e| panic!("{e}"));
        drop(b);
        read_client_hello(&mut a, max, budget).await
    }

    #[tokio::test]
    async fn whole_hello_in_pieces_and_refusals() {
        let budget = Budget::new(1 << 20, 16 * 1024);
        let h = hello(3000);
        // Split over three records, the 4-byte header straddling the first two.
        let mut wire = record(&h[..2]);
        wire.extend(record(&h[2..1000]));
        wire.extend(record(&h[1000..]));
        wire.extend_from_slice(b"next flight");
        let got = run(wire.clone(), 16 * 1024, &budget).await;
        assert_eq!(got, Ok(wire[..wire.len() - 11].to_vec()));
        assert_eq!(budget.used(), 0, "reservation given back");
        // Declared over the cap: refused after its header.
        let big = hello(20_000);
        assert_eq!(
            run(record(&big[..4]), 16 * 1024, &budget).await,
            Err(Refused::TooLarge)
        );
        // Cut into 1-byte records: the headers count against the cap.
        let small = hello(4000);
        let wire: Vec<u8> = small.chunks(1).flat_map(record).collect();
        assert_eq!(run(wire, 16 * 1024, &budget).await, Err(Refused::TooLarge));
        // Not TLS: handed on as read.
        assert_eq!(
            run(b"GET / HTTP/1.1\r\n\r\n".to_vec(), 16 * 1024, &budget).await,
            Ok(b"GET /".to_vec())
        );
        // Truncated: EOF.
        let mut cut = record(&hello(100));
        cut.pop();
        assert_eq!(run(cut, 16 * 1024, &budget).await, Err(Refused::Eof));
        // One byte, then closed: EOF still (something was sent).
        assert_eq!(run(vec![22], 16 * 1024, &budget).await, Err(Refused::Eof));
        // Closed before a byte (a TCP health check): its own refusal, no alert.
        assert_eq!(
            run(Vec::new(), 16 * 1024, &budget).await,
            Err(Refused::NoClientHello)
        );
        // Over the budget, nobody to evict.
        let tight = Budget::new(64, 16 * 1024);
        assert_eq!(
            run(record(&hello(100)), 16 * 1024, &tight).await,
            Err(Refused::Budget)
        );
        assert_eq!(tight.used(), 0);
    }

    #[tokio::test]
    async fn oldest_partial_hello_evicted_for_a_new_one() {
        let budget = Budget::new(20_000, 16 * 1024);
        let h = hello(15_000);
        let mut partial = record(&h);
        partial.pop();
        // The old one: all but its last byte, then it waits.
        let (mut a, mut a_peer) = tokio::io::duplex(1 << 20);
        a_peer
            .write_all(&partial)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let b2 = budget.clone();
        let old = tokio::spawn(async move {
            let r = read_client_hello(&mut a, 16 * 1024, &b2).await.map(|_| ());
            drop(a_peer);
            r
        });
        while budget.used() == 0 {
            tokio::task::yield_now().await;
        }
        // A new one needs room: the old one is evicted, the new one completes.
        let whole = record(&h);
        let got = run(whole.clone(), 16 * 1024, &budget).await;
        assert_eq!(got, Ok(whole));
        assert_eq!(old.await.ok(), Some(Err(Refused::Evicted)));
        assert_eq!(budget.used(), 0);
        assert!(budget.waiting.lock().map(|w| w.is_empty()).unwrap_or(false));
        // The slots' allocation goes after two idle trims, and comes back when needed.
        budget.trim();
        assert!(budget.pool.lock().map(|p| p.allocated).unwrap_or(false));
        budget.trim();
        assert!(!budget.pool.lock().map(|p| p.allocated).unwrap_or(true));
        assert_eq!(
            run(whole_again(&h), 16 * 1024, &budget)
                .await
                .map(|v| v.len()),
            Ok(15_009)
        );
    }

    fn whole_again(h: &[u8]) -> Vec<u8> {
        record(h)
    }
}

/// TLS extension carrying the client's certificate-compression algorithms (RFC 8879).
const EXT_COMPRESS_CERTIFICATE: u16 = 27;

/// The certificate-compression algorithms a ClientHello offers (RFC 8879 codes: 1 zlib,
/// 2 brotli, 3 zstd), read off the records [`read_client_hello`] collected. Total: any
/// bytes give a (possibly empty) list, at most 127 entries; nothing is trusted (lengths are
/// checked against what is there).
pub(crate) fn offered_cert_compression(records: &[u8]) -> Vec<u16> {
    // Handshake-record payloads, joined (a ClientHello may span records); one record, the
    // usual case, is read where it is.
    let mut first: Option<&[u8]> = None;
    let mut joined = Vec::new();
    let mut rest = records;
    while rest.len() >= 5 && rest[0] == 22 {
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        let Some(body) = rest.get(5..5 + len) else {
            break;
        };
        match first {
            None => first = Some(body),
            Some(f) => {
                if joined.is_empty() {
                    joined.extend_from_slice(f);
                }
                joined.extend_from_slice(body);
            }
        }
        rest = &rest[5 + len..];
    }
    let msg = if joined.is_empty() {
        first.unwrap_or_default()
    } else {
        &joined
    };
    parse_compress_certificate(msg).unwrap_or_default()
}

fn parse_compress_certificate(msg: &[u8]) -> Option<Vec<u16>> {
    struct Reader<'a>(&'a [u8]);
    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            let (a, b) = (self.0.get(..n)?, self.0.get(n..)?);
            self.0 = b;
            Some(a)
        }
        fn u8(&mut self) -> Option<usize> {
            self.take(1).map(|b| usize::from(b[0]))
        }
        fn u16(&mut self) -> Option<usize> {
            self.take(2)
                .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        }
    }
    let mut r = Reader(msg);
    if r.u8()? != 1 {
        return None; // not a ClientHello
    }
    r.take(3)?; // handshake length: the fields below are checked one by one
    r.take(2 + 32)?; // legacy_version, random
    let n = r.u8()?;
    r.take(n)?; // legacy_session_id
    let n = r.u16()?;
    r.take(n)?; // cipher_suites
    let n = r.u8()?;
    r.take(n)?; // legacy_compression_methods
    let n = r.u16()?;
    let mut exts = Reader(r.take(n)?);
    while !exts.0.is_empty() {
        let kind = exts.u16()?;
        let len = exts.u16()?;
        let body = exts.take(len)?;
        if kind == usize::from(EXT_COMPRESS_CERTIFICATE) {
            let mut b = Reader(body);
            let n = b.u8()?;
            let list = b.take(n)?;
            return Some(
                list.chunks_exact(2)
                    .map(|c| u16::from_be_bytes([c[0], c[1]]))
                    .collect(),
            );
        }
    }
    Some(Vec::new())
}

#[cfg(test)]
mod compression_tests {
    use super::*;

    /// A real ClientHello from rustls (which offers brotli and zlib when built with them).
    #[test]
    fn reads_the_offer_of_a_rustls_client_hello() {
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| unreachable!("default versions"))
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        cfg.cert_decompressors = rustls::compress::default_cert_decompressors().to_vec();
        let name = rustls::pki_types::ServerName::try_from("a.test")
            .unwrap_or_else(|_| unreachable!("literal name"));
        let mut conn = rustls::ClientConnection::new(Arc::new(cfg.clone()), name.clone())
            .unwrap_or_else(|_| unreachable!("client"));
        let mut wire = Vec::new();
        conn.write_tls(&mut wire)
            .unwrap_or_else(|_| unreachable!("vec"));
        let want: Vec<u16> = cfg
            .cert_decompressors
            .iter()
            .map(|d| u16::from(d.algorithm()))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(offered_cert_compression(&wire), want);
        // Split across two records: the same.
        let body = &wire[5..];
        let (a, b) = body.split_at(40);
        let mut split = Vec::new();
        for part in [a, b] {
            split.extend_from_slice(&[22, 3, 1]);
            split.extend_from_slice(&u16::try_from(part.len()).unwrap_or(0).to_be_bytes());
            split.extend_from_slice(part);
        }
        assert_eq!(offered_cert_compression(&split), want);
        // None offered.
        cfg.cert_decompressors.clear();
        let mut conn = rustls::ClientConnection::new(Arc::new(cfg), name)
            .unwrap_or_else(|_| unreachable!("client"));
        let mut wire = Vec::new();
        conn.write_tls(&mut wire)
            .unwrap_or_else(|_| unreachable!("vec"));
        assert!(offered_cert_compression(&wire).is_empty());
        // Garbage and truncations: empty, never a panic.
        for n in 0..wire.len() {
            let _ = offered_cert_compression(&wire[..n]);
        }
        assert!(offered_cert_compression(&[22, 3, 1, 0, 1, 1]).is_empty());
    }
}
