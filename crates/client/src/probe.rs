//! `tlskit probe`: where a TLS handshake spends its round trips, against any server.
//!
//! The handshake runs on a blocking rustls `ClientConnection` over a std `TcpStream`.
//! A dedicated reader thread sits in `read()` on the socket and timestamps every chunk
//! the moment it arrives (independent of the time the client spends on crypto), and
//! every client write is timestamped too. Server bytes are grouped into *bursts*: a new
//! burst starts after each client write and after a gap of at least max(RTT/2, 1 ms).
//! On a real path each burst is one round trip of waiting; a flight split into several
//! bursts with no client write in between means the server (or TCP) held part of it back.
//!
//! TCP_INFO (rtt, MSS, segments in/out) is read without unsafe code through `ss -ti`
//! (iproute2, which queries the kernel's inet_diag); when `ss` is missing the segment
//! counts are estimated from bytes and a 1460-byte MSS, and the JSON says which.

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::compress::{CertDecompressor, CompressionLevel, DecompressionFailed};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateCompressionAlgorithm, ClientConfig, ClientConnection, HandshakeKind};

use crate::client::subject;
use crate::client::{ClientSetup, Record, RecordingVerifier};
use tlskit_tls::NetError;

pub use crate::starttls::Starttls;

/// Bytes in TCP's initial window on a 1,500-byte-MTU path (10 segments of 1460, RFC 6928).
pub const INITIAL_WINDOW: usize = 14_600;
const DEFAULT_MSS: usize = 1460;

/// What to probe and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProbeOptions {
    /// The server and how it is verified (shared with `connect`).
    pub peer: crate::client::PeerOptions,
    /// Number of full handshakes (medians are reported); above 1, a resumption attempt too.
    pub repeat: usize,
}

impl ProbeOptions {
    /// One handshake with `peer`.
    pub fn new(peer: crate::client::PeerOptions) -> Self {
        Self { peer, repeat: 1 }
    }
}

/// One burst of server bytes.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct Flight {
    /// Bytes (TLS records, as on the wire above TCP).
    pub bytes: usize,
    /// TCP segments: estimated as ceil(bytes / MSS); see `segments_source`.
    pub segments: usize,
    /// Arrival of the first byte, milliseconds after the ClientHello was written.
    pub at_ms: f64,
    /// Whether the client wrote something just before (a reply to the client) or the
    /// burst continues the previous one after a pause.
    pub after_client_write: bool,
}

/// TCP_INFO of the probe's socket after the handshake (read via `ss -ti`).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[non_exhaustive]
pub struct TcpInfo {
    /// Smoothed RTT (tcpi_rtt), milliseconds.
    pub rtt_ms: Option<f64>,
    /// Receive MSS seen from the server (tcpi_rcv_mss).
    pub rcv_mss: Option<usize>,
    /// Segments received (tcpi_segs_in), SYN-ACK included.
    pub segs_in: Option<u64>,
    /// Segments sent (tcpi_segs_out), SYN included.
    pub segs_out: Option<u64>,
}

/// Timing of one handshake.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct Run {
    /// TCP connect time, milliseconds (the RTT estimate).
    pub tcp_rtt_ms: f64,
    /// First ClientHello byte to handshake complete, milliseconds.
    pub handshake_ms: f64,
    /// Round trips the handshake took (see `handshake_rtts_method`).
    pub handshake_rtts: u32,
    /// Whether the session was resumed.
    pub resumed: bool,
}

/// The resumption attempt of `--repeat`.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct Resumed {
    /// Whether the server resumed the session.
    pub resumed: bool,
    /// The resumed handshake's timing.
    pub handshake_ms: f64,
    /// The resumed handshake's round trips.
    pub handshake_rtts: u32,
}

/// Everything `tlskit probe` reports.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct ProbeReport {
    /// HOST:PORT as given.
    pub target: String,
    /// Address connected to.
    pub peer: String,
    /// Reference name sent as SNI and verified.
    pub server_name: String,
    /// Protocol upgraded with STARTTLS before the handshake, if any.
    pub starttls: Option<String>,
    /// TCP connect time, milliseconds (median with --repeat).
    pub tcp_rtt_ms: f64,
    /// Handshake time, milliseconds (median with --repeat).
    pub handshake_ms: f64,
    /// Round trips of the handshake.
    pub handshake_rtts: u32,
    /// `timing` (handshake_ms / tcp_rtt_ms, rounded, when the RTT is ≥ 1 ms) or `bursts`
    /// (the count of server bursts, on links too short to time against, e.g. loopback).
    pub handshake_rtts_method: String,
    /// Count of server bursts during the handshake (waits on the network).
    pub server_bursts: usize,
    /// Server bursts during the handshake.
    pub server_flights: Vec<Flight>,
    /// How `segments` was obtained.
    pub segments_source: String,
    /// Total segments received during the whole connection, from TCP_INFO when available.
    pub tcp_info: Option<TcpInfo>,
    /// DER bytes of the certificates the server sent.
    pub chain_bytes: usize,
    /// The compressed size: what the server sent when it compressed, else what brotli makes of it.
    pub chain_bytes_compressed: usize,
    /// `server` or `brotli estimate`.
    pub chain_bytes_compressed_source: String,
    /// Algorithm the server used to compress its certificate message, if any.
    pub compression: Option<String>,
    /// Certificates the server sent.
    pub chain_certs: usize,
    /// Subjects, leaf first (as verified, else as sent).
    pub chain: Vec<String>,
    /// `TLSv1.3` / `TLSv1.2`.
    pub tls_version: String,
    /// IANA cipher suite name.
    pub cipher_suite: String,
    /// Whether the reported handshake was resumed.
    pub resumed: bool,
    /// Whether the chain verified for `server_name`.
    pub verified: bool,
    /// Why verification failed.
    pub reason: Option<String>,
    /// The stable code of `reason`, as in `connect`.
    pub rule: Option<&'static str>,
    /// Rules the verified chain breaks that the profile reports rather than refuses,
    /// as in `connect` (empty when none).
    pub warnings: Vec<tlskit_verify::Violation>,
    /// With --repeat: each full handshake.
    pub runs: Vec<Run>,
    /// With --repeat: the resumption attempt.
    pub resumption: Option<Resumed>,
    /// Group, HelloRetryRequest and key-share sizes of the reported handshake.
    #[serde(flatten)]
    pub kx: crate::kx::KeyExchange,
    /// Whole days until the server certificate's notAfter (negative once expired).
    pub expires_in_days: Option<i64>,
    /// The reported handshake's flights against time (`probe --timeline` draws it).
    pub timeline: Vec<TimelineEntry>,
    /// As [`crate::Connected::roots_warnings`] (printed on stderr, not in the JSON).
    #[serde(skip)]
    pub roots_warnings: Vec<String>,
    /// The certificates as sent, leaf first: what the advice names as the cause of a
    /// large chain (not in the JSON: `chain_bytes` and `chain` carry the totals).
    #[serde(skip)]
    pub presented: Vec<SentCert>,
    /// Plain-English findings.
    pub advice: Vec<String>,
}

/// One certificate of the chain the server sent, as the advice sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SentCert {
    /// The subject, as in [`ProbeReport::chain`].
    pub subject: String,
    /// DER bytes.
    pub bytes: usize,
    /// Subject equals issuer: a root the client already has.
    pub self_signed: bool,
}

impl SentCert {
    /// What the advice needs of one DER certificate.
    pub fn from_der(der: &[u8]) -> SentCert {
        SentCert {
            subject: subject(der),
            bytes: der.len(),
            self_signed: self_signed(der),
        }
    }
}

thread_local! {
    /// (algorithm, compressed bytes) of the last compressed certificate message this
    /// thread's handshake decompressed: the probe drives rustls's `ClientConnection` on the
    /// calling thread, so concurrent probes on other threads do not mix their records.
    static SEEN: Cell<Option<(CertificateCompressionAlgorithm, usize)>> = const { Cell::new(None) };
}

/// Wraps one of rustls's decompressors and records what the server sent (in [`SEEN`]).
#[derive(Debug)]
struct RecordingDecompressor {
    inner: &'static dyn CertDecompressor,
}

impl CertDecompressor for RecordingDecompressor {
    fn decompress(&self, input: &[u8], output: &mut [u8]) -> Result<(), DecompressionFailed> {
        SEEN.with(|s| s.set(Some((self.inner.algorithm(), input.len()))));
        self.inner.decompress(input, output)
    }
    fn algorithm(&self) -> CertificateCompressionAlgorithm {
        self.inner.algorithm()
    }
}

/// rustls wants `&'static` decompressors: the recording wrappers are made once per
/// process (they used to be leaked once per probe).
static RECORDING: std::sync::LazyLock<Vec<RecordingDecompressor>> =
    std::sync::LazyLock::new(|| {
        rustls::compress::default_cert_decompressors()
            .iter()
            .map(|d| RecordingDecompressor { inner: *d })
            .collect()
    });

/// What the probe's recorder saw on its socket during a handshake: a write or a read,
/// nothing else (so not `#[non_exhaustive]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireEvent {
    /// The client wrote (a lone TLS 1.3 ChangeCipherSpec is not recorded).
    Write,
    /// One `read()` returned this many server bytes.
    Read(usize),
}

use WireEvent as Ev;

/// A lone TLS 1.3 middlebox-compatibility ChangeCipherSpec record: the client sends it
/// in the middle of the server's flight; it asks nothing of the server, so it does not
/// start a new burst.
const CCS: &[u8] = &[0x14, 0x03, 0x03, 0x00, 0x01, 0x01];

type Log = Arc<Mutex<Vec<(Instant, Ev)>>>;

fn push(log: &Log, ev: Ev) {
    push_at(log, Instant::now(), ev);
}

fn push_at(log: &Log, t: Instant, ev: Ev) {
    log.lock().unwrap_or_else(|p| p.into_inner()).push((t, ev));
}

/// Client side of the recording adapter: writes go straight to the socket (and are
/// logged), reads come from the reader thread's channel.
struct Recorder {
    sock: TcpStream,
    rx: Receiver<Vec<u8>>,
    pending: Vec<u8>,
    log: Log,
    deadline: Instant,
    /// Every client write but a lone ChangeCipherSpec: when, and how many bytes.
    sent: Vec<(Instant, usize)>,
}

impl Read for Recorder {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pending.is_empty() {
            let wait = self.deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(data) => self.pending = data,
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "timed out waiting for the server",
                    ))
                }
            }
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

impl Write for Recorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Stamped before the syscall: a reply cannot be logged as arriving before it.
        let t = Instant::now();
        let n = self.sock.write(buf)?;
        if buf != CCS {
            push_at(&self.log, t, Ev::Write);
            self.sent.push((t, n));
        }
        Ok(n)
    }
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let t = Instant::now();
        let n = self.sock.write_vectored(bufs)?;
        let lone_ccs = bufs.iter().map(|b| b.len()).sum::<usize>() == CCS.len()
            && bufs
                .iter()
                .flat_map(|b| b.iter())
                .copied()
                .eq(CCS.iter().copied());
        if !lone_ccs {
            push_at(&self.log, t, Ev::Write);
            self.sent.push((t, n));
        }
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
}

fn self_signed(der: &[u8]) -> bool {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, c)) => c.subject().as_raw() == c.issuer().as_raw(),
        Err(_) => false,
    }
}

/// Parse `ss -tinH` output for one socket: the `rtt:`, `rcvmss:`, `segs_in:` and
/// `segs_out:` fields (other tokens and unparsable values are ignored; a field seen twice
/// keeps the last value). Total: any text gives a (possibly empty) [`TcpInfo`].
pub fn parse_ss(text: &str) -> TcpInfo {
    let mut info = TcpInfo::default();
    for tok in text.split_whitespace() {
        if let Some(v) = tok.strip_prefix("rtt:") {
            info.rtt_ms = v.split('/').next().and_then(|x| x.parse().ok());
        } else if let Some(v) = tok.strip_prefix("rcvmss:") {
            info.rcv_mss = v.parse().ok();
        } else if let Some(v) = tok.strip_prefix("segs_in:") {
            info.segs_in = v.parse().ok();
        } else if let Some(v) = tok.strip_prefix("segs_out:") {
            info.segs_out = v.parse().ok();
        }
    }
    info
}

fn tcp_info(local: SocketAddr, peer: SocketAddr) -> Option<TcpInfo> {
    let out = std::process::Command::new("ss")
        .args(["-tinH", "src", &local.to_string(), "dst", &peer.to_string()])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.trim().is_empty() {
        return None;
    }
    let info = parse_ss(&text);
    info.segs_in.map(|_| info)
}

struct Shot {
    kx: crate::kx::KeyExchange,
    timeline: Vec<TimelineEntry>,
    peer: SocketAddr,
    tcp_ms: f64,
    hs_ms: f64,
    bursts: Vec<Flight>,
    tcp: Option<TcpInfo>,
    resumed: bool,
    version: String,
    suite: String,
    certs: Record,
    peer_certs: Vec<CertificateDer<'static>>,
}

/// One flight of the handshake, for `probe --timeline`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct TimelineEntry {
    /// Milliseconds from the first ClientHello byte.
    pub at_ms: f64,
    /// `client` or `server`.
    pub from: String,
    /// What it carries (by its place in the handshake).
    pub what: String,
    /// Bytes on the wire (TLS records).
    pub bytes: usize,
}

/// The handshake as flights against time: the client's writes and the server's bursts,
/// named by their place (a lone ChangeCipherSpec is left out; post-handshake bytes, such
/// as TLS 1.3 session tickets, are one entry at the end).
fn timeline(
    sent: &[(Duration, usize)],
    bursts: &[Flight],
    after: usize,
    hrr: bool,
    tls12: bool,
    hs_ms: f64,
) -> Vec<TimelineEntry> {
    let mut out = Vec::with_capacity(sent.len() + bursts.len() + 1);
    for (i, &(t, n)) in sent.iter().enumerate() {
        let what = match i {
            0 => "ClientHello",
            1 if hrr => "ClientHello (after HelloRetryRequest)",
            _ if i + 1 == sent.len() => "Finished (and client certificate, if any)",
            _ => "handshake records",
        };
        out.push(TimelineEntry {
            at_ms: t.as_secs_f64() * 1e3,
            from: "client".into(),
            what: what.into(),
            bytes: n,
        });
    }
    let mut answers = 0;
    for (i, f) in bursts.iter().enumerate() {
        let what = if i == 0 && hrr {
            "HelloRetryRequest"
        } else if f.after_client_write {
            answers += 1;
            match (tls12, answers) {
                (false, _) => "ServerHello .. Finished",
                (true, 1) => "ServerHello .. ServerHelloDone",
                (true, _) => "ChangeCipherSpec, Finished",
            }
        } else {
            "continued (the flight did not fit: waited for ACKs)"
        };
        out.push(TimelineEntry {
            at_ms: f.at_ms,
            from: "server".into(),
            what: what.into(),
            bytes: f.bytes,
        });
    }
    if after > 0 {
        out.push(TimelineEntry {
            at_ms: hs_ms,
            from: "server".into(),
            what: "after the handshake (session tickets)".into(),
            bytes: after,
        });
    }
    out.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    out
}

fn rtts(tcp_ms: f64, hs_ms: f64, bursts: usize) -> (u32, &'static str) {
    if tcp_ms >= 1.0 {
        ((hs_ms / tcp_ms).round().max(1.0) as u32, "timing")
    } else {
        (bursts.max(1) as u32, "bursts")
    }
}

/// Group server reads into bursts (see the module documentation). `events` are (time
/// since the first ClientHello byte, event), in time order; reads after `end` are left
/// out (post-handshake data). A new burst starts at the first read, after every client
/// write, and after a pause of at least `gap` between reads. `segments` is
/// ceil(bytes / `mss`) (an `mss` of 0 counts as 1). The events come from the network
/// (sizes and timing are the server's), so this is total: any input gives bursts whose
/// bytes add up to the reads up to `end`.
pub fn group_bursts(
    events: &[(Duration, WireEvent)],
    end: Duration,
    gap: Duration,
    mss: usize,
) -> Vec<Flight> {
    let mut flights: Vec<Flight> = Vec::new();
    let mut wrote = true;
    let mut last_read: Option<Duration> = None;
    for &(t, ev) in events {
        if t > end {
            break;
        }
        match ev {
            Ev::Write => wrote = true,
            Ev::Read(n) => {
                let new = wrote || last_read.is_none_or(|l| t.saturating_sub(l) >= gap);
                if new || flights.is_empty() {
                    flights.push(Flight {
                        bytes: 0,
                        segments: 0,
                        at_ms: t.as_secs_f64() * 1e3,
                        after_client_write: wrote,
                    });
                }
                if let Some(f) = flights.last_mut() {
                    f.bytes = f.bytes.saturating_add(n);
                }
                wrote = false;
                last_read = Some(t);
            }
        }
    }
    let mss = mss.max(1);
    for f in &mut flights {
        f.segments = f.bytes.div_ceil(mss);
    }
    flights
}

fn one(
    addrs: &[SocketAddr],
    opts: &ProbeOptions,
    name: ServerName<'static>,
    config: Arc<ClientConfig>,
    verifier: &RecordingVerifier,
    want_ticket: bool,
) -> Result<Shot, NetError> {
    let (target, timeout, proto) = (
        opts.peer.target.as_str(),
        opts.peer.timeout,
        opts.peer.starttls,
    );
    let mut last = String::from("no address");
    let mut found = None;
    for addr in addrs {
        let t0 = Instant::now();
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                found = Some((s, *addr, t0.elapsed().as_secs_f64() * 1e3));
                break;
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    let (sock, peer, tcp_ms) = found.ok_or_else(|| NetError::Connect {
        target: target.to_string(),
        reason: last,
    })?;
    tlskit_tls::sock::tune(socket2::SockRef::from(&sock))?;
    let mut sock = sock;
    if let Some(p) = proto {
        crate::starttls::upgrade_tcp(&mut sock, p, timeout).map_err(|reason| {
            NetError::Starttls {
                target: target.to_string(),
                reason: Box::new(reason),
            }
        })?;
    }
    let local = sock.local_addr()?;
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let mut rsock = sock.try_clone()?;
    let rlog = log.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match rsock.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    push(&rlog, Ev::Read(n));
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let herr = |reason: String| NetError::Handshake {
        target: target.to_string(),
        reason,
    };
    let mut conn = ClientConnection::new(config, name)?;
    let mut io = Recorder {
        sock,
        rx,
        pending: Vec::new(),
        log: log.clone(),
        deadline: Instant::now() + timeout,
        sent: Vec::new(),
    };
    let t_hs = Instant::now();
    let mut last_consumed = t_hs;
    let result = (|| -> Result<(), NetError> {
        loop {
            while conn.wants_write() {
                conn.write_tls(&mut io)?;
            }
            if !conn.is_handshaking() {
                return Ok(());
            }
            if conn.read_tls(&mut io)? == 0 {
                return Err(herr("server closed the connection".into()));
            }
            last_consumed = Instant::now();
            if let Err(e) = conn.process_new_packets() {
                while conn.wants_write() {
                    if conn.write_tls(&mut io).is_err() {
                        break;
                    }
                }
                return Err(herr(tlskit_tls::tls_text::tls_text(&e)));
            }
        }
    })();
    let t_end = Instant::now();
    let hs_ms = t_end.duration_since(t_hs).as_secs_f64() * 1e3;
    if let Err(e) = result {
        let _ = io.sock.shutdown(Shutdown::Both);
        let _ = reader.join();
        return Err(match e {
            NetError::Io(io) => herr(tlskit_tls::tls_text::io_tls_text(&io)),
            other => other,
        });
    }
    let tcp = tcp_info(local, peer);
    if want_ticket && conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3) {
        // TLS 1.3 tickets follow the handshake: take what arrives within two RTTs.
        io.deadline = Instant::now() + Duration::from_secs_f64((tcp_ms * 2.0).max(50.0) / 1e3);
        while let Ok(n) = conn.read_tls(&mut io) {
            if n == 0 || conn.process_new_packets().is_err() {
                break;
            }
        }
    }
    conn.send_close_notify();
    while conn.wants_write() {
        if conn.write_tls(&mut io).is_err() {
            break;
        }
    }
    let _ = io.sock.shutdown(Shutdown::Both);
    let _ = reader.join();
    let rtt = Duration::from_secs_f64(tcp_ms / 1e3);
    let gap = (rtt / 2).max(Duration::from_millis(1));
    let mut events = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
    events.sort_by_key(|e| e.0);
    // Bytes that arrive after the client's last handshake write (its Finished in TLS 1.3)
    // are post-handshake (tickets), even when they beat `t_end` on a fast link.
    let cutoff = events
        .iter()
        .find(|(t, ev)| matches!(ev, Ev::Write) && *t >= last_consumed)
        .map(|(t, _)| (*t).min(t_end))
        .unwrap_or(t_end);
    let mss = tcp
        .as_ref()
        .and_then(|i| i.rcv_mss)
        .filter(|m| *m >= 536)
        .unwrap_or(DEFAULT_MSS);
    let since: Vec<(Duration, WireEvent)> = events
        .iter()
        .map(|&(t, ev)| (t.saturating_duration_since(t_hs), ev))
        .collect();
    let cut = cutoff.saturating_duration_since(t_hs);
    let bursts = group_bursts(&since, cut, gap, mss);
    let kx = crate::kx::KeyExchange::of(&conn);
    let sent: Vec<(Duration, usize)> = io
        .sent
        .iter()
        .filter(|(t, _)| *t <= t_end)
        .map(|&(t, n)| (t.saturating_duration_since(t_hs), n))
        .collect();
    let after: usize = since
        .iter()
        .filter_map(|&(t, ev)| match ev {
            Ev::Read(n) if t > cut => Some(n),
            _ => None,
        })
        .sum();
    let tls12 = conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_2);
    let timeline = timeline(&sent, &bursts, after, kx.hello_retry_request, tls12, hs_ms);
    Ok(Shot {
        kx,
        timeline,
        peer,
        tcp_ms,
        hs_ms,
        bursts,
        tcp,
        resumed: conn.handshake_kind() == Some(HandshakeKind::Resumed),
        version: tlskit_tls::version_name(conn.protocol_version()),
        suite: conn
            .negotiated_cipher_suite()
            .and_then(|s| s.suite().as_str())
            .unwrap_or("")
            .to_string(),
        certs: verifier.take(),
        peer_certs: conn
            .peer_certificates()
            .map(|c| c.to_vec())
            .unwrap_or_default(),
    })
}

/// tlskit_store's median of these values, 0 when there are none.
fn median_of(v: impl Iterator<Item = f64>) -> f64 {
    tlskit_x509::stats::median(&mut v.collect::<Vec<_>>()).unwrap_or(0.0)
}

fn kb(n: usize) -> String {
    format!("{:.1} KB", n as f64 / 1000.0)
}

fn advise(r: &ProbeReport) -> Vec<String> {
    let mut out = Vec::new();
    if !r.verified {
        out.push(format!(
            "the chain did not verify for {}: {}",
            r.server_name,
            r.reason.as_deref().unwrap_or("unknown reason")
        ));
    }
    // Runs of bursts with no client write in between: one flight that arrived in pieces.
    let mut i = 0;
    let f = &r.server_flights;
    while i < f.len() {
        let mut j = i + 1;
        while j < f.len() && !f[j].after_client_write {
            j += 1;
        }
        if j - i >= 2 {
            let parts = &f[i..j];
            let total: usize = parts.iter().map(|p| p.bytes).sum();
            let pause = (parts[1].at_ms - parts[0].at_ms).max(0.0);
            let sizes: Vec<String> = parts.iter().map(|p| p.bytes.to_string()).collect();
            let small = parts[..parts.len() - 1]
                .iter()
                .all(|p| (3500..=4200).contains(&p.bytes));
            if small {
                out.push(format!(
                    "the server sends its {} flight in 4 KB writes ({} bytes, {pause:.0} ms apart): the second part waits for an ACK or a timer. Send the whole flight in one write (OpenSSL's 4 KB handshake buffer, nginx ticket #413)",
                    kb(total),
                    sizes.join(" + ")
                ));
            } else if parts[0].bytes + 1500 >= INITIAL_WINDOW {
                out.push(format!(
                    "the server's {} flight overflows TCP's 10-segment initial window ({} bytes): {} bytes waited {pause:.0} ms for ACKs, an extra round trip",
                    kb(total),
                    fmt_thousands(INITIAL_WINDOW),
                    total - parts[0].bytes
                ));
            } else {
                out.push(format!(
                    "the server's {} flight arrived in {} parts ({} bytes) with a {pause:.0} ms pause although the first part was under the initial window: the server paused between writes (Nagle, a small send buffer or a small handshake buffer)",
                    kb(total),
                    parts.len(),
                    sizes.join(" + ")
                ));
            }
        }
        i = j;
    }
    let sent = if r.compression.is_some() {
        r.chain_bytes_compressed
    } else {
        r.chain_bytes
    };
    if r.resumed {
        out.push("the session was resumed: no certificate chain was sent".into());
    } else if r.compression.is_none() && r.chain_bytes + 1000 > INITIAL_WINDOW {
        // TLS 1.2 has no certificate compression (RFC 8879 is TLS 1.3 only).
        let enable = if r.tls_version == "TLSv1.2" {
            "enable TLS 1.3 and certificate compression"
        } else {
            "enable certificate compression"
        };
        out.push(format!(
            "chain is {} in {} sent uncompressed: with the rest of the flight it exceeds TCP's 10-segment initial window ({} bytes); {enable} (RFC 8879: brotli would make it {}){}",
            kb(r.chain_bytes),
            plural(r.chain_certs, "certificate"),
            fmt_thousands(INITIAL_WINDOW),
            kb(r.chain_bytes_compressed),
            largest_cause(r)
        ));
    } else if let Some(first) = r.server_flights.first() {
        if first.bytes <= INITIAL_WINDOW {
            let how = match &r.compression {
                Some(c) => format!(
                    "; chain {} compressed with {c} to {}",
                    kb(r.chain_bytes),
                    kb(sent)
                ),
                None => String::new(),
            };
            out.push(format!(
                "the first flight ({} bytes{how}) fits the 10-segment initial window ({} bytes)",
                fmt_thousands(first.bytes),
                fmt_thousands(INITIAL_WINDOW)
            ));
        }
    }
    if r.tls_version == "TLSv1.2" && !r.resumed {
        out.push(
            "TLS 1.2: a full handshake costs two round trips and cannot use certificate compression; enabling TLS 1.3 saves a round trip".into(),
        );
    }
    if r.tls_version == "TLSv1.3"
        && r.compression.is_none()
        && !r.resumed
        && r.chain_bytes_compressed + 500 < r.chain_bytes
    {
        out.push(format!(
            "the server did not compress its certificates (offered brotli and zlib): brotli would save {} bytes",
            fmt_thousands(r.chain_bytes - r.chain_bytes_compressed)
        ));
    }
    if !r.resumed {
        out.extend(root_advice(r));
    }
    out
}

/// What makes the sent chain large: the one certificate that is most of it (by subject
/// and size), else the sizes of all of them. A self-signed root sent at all also gets
/// its own line ([`root_advice`]).
fn largest_cause(r: &ProbeReport) -> String {
    let total: usize = r.presented.iter().map(|c| c.bytes).sum();
    let Some((i, big)) = r
        .presented
        .iter()
        .enumerate()
        .max_by_key(|(i, c)| (c.bytes, std::cmp::Reverse(*i)))
    else {
        return String::new();
    };
    if r.presented.len() == 1 || big.bytes * 2 > total {
        let share = format!("{} of the {} chain", kb(big.bytes), kb(total));
        if i == 0 {
            format!(
                " or shorten the leaf {} ({share}; fewer names)",
                big.subject
            )
        } else if big.self_signed {
            format!(
                " or drop the self-signed root {} ({share}): clients already have it",
                big.subject
            )
        } else {
            format!(
                " or replace the intermediate {} ({share}): ask the CA for a smaller one",
                big.subject
            )
        }
    } else {
        let sizes: Vec<String> = r
            .presented
            .iter()
            .map(|c| format!("{} {}", c.subject, kb(c.bytes)))
            .collect();
        format!(
            "; no one certificate dominates ({}), so compression is the fix",
            sizes.join(", ")
        )
    }
}

/// The chain ends with a self-signed root: clients already have it.
fn root_advice(r: &ProbeReport) -> Option<String> {
    let root = r.presented.last().filter(|c| c.self_signed)?;
    if r.presented.len() < 2 {
        return None;
    }
    Some(format!(
        "the chain ends with the self-signed root {} ({} bytes of the {}-byte chain): clients already have it; drop it",
        root.subject,
        fmt_thousands(root.bytes),
        fmt_thousands(r.chain_bytes)
    ))
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn fmt_thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Probe a server. Errors: bad input, could not connect or handshake (exit 2 in the CLI);
/// a verification failure is not an error (see [`ProbeReport::verified`]).
pub fn probe(opts: &ProbeOptions) -> Result<ProbeReport, NetError> {
    let ClientSetup {
        host,
        port,
        reference,
        server_name,
        provider,
        verifier,
        versions,
    } = ClientSetup::new(&opts.peer)?;
    let decompressors: Vec<&'static dyn CertDecompressor> = RECORDING
        .iter()
        .map(|d| d as &'static dyn CertDecompressor)
        .collect();
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    config.cert_decompressors = decompressors;
    let resume_config = Arc::new(config.clone());
    config.resumption = Resumption::disabled();
    let full_config = Arc::new(config);

    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| NetError::Connect {
            target: opts.peer.target.clone(),
            reason: format!("cannot resolve {host}: {e}"),
        })?
        .collect();
    let repeat = opts.repeat.max(1);
    let mut shots = Vec::new();
    for i in 0..repeat {
        let cfg = if i == 0 && repeat > 1 {
            resume_config.clone()
        } else {
            full_config.clone()
        };
        SEEN.with(|s| s.set(None));
        let shot = one(
            &addrs,
            opts,
            server_name.clone(),
            cfg,
            &verifier,
            i == 0 && repeat > 1,
        )?;
        let comp = SEEN.with(Cell::take);
        shots.push((shot, comp));
    }
    let resumption = if repeat > 1 {
        let s = one(
            &addrs,
            opts,
            server_name.clone(),
            resume_config,
            &verifier,
            false,
        )?;
        let (n, _) = rtts(s.tcp_ms, s.hs_ms, s.bursts.len());
        Some(Resumed {
            resumed: s.resumed,
            handshake_ms: s.hs_ms,
            handshake_rtts: n,
        })
    } else {
        None
    };
    let runs: Vec<Run> = shots
        .iter()
        .map(|(s, _)| Run {
            tcp_rtt_ms: s.tcp_ms,
            handshake_ms: s.hs_ms,
            handshake_rtts: rtts(s.tcp_ms, s.hs_ms, s.bursts.len()).0,
            resumed: s.resumed,
        })
        .collect();
    let tcp_med = median_of(runs.iter().map(|r| r.tcp_rtt_ms));
    let hs_med = median_of(runs.iter().map(|r| r.handshake_ms));
    // The detailed report describes the last full handshake (the first one may have been
    // slowed by a ticket wait on a shared machine; they are all full handshakes).
    let (shot, comp) = shots
        .pop()
        .ok_or_else(|| NetError::Config("no probe ran".into()))?;
    let presented = if shot.certs.presented.is_empty() {
        shot.peer_certs.clone()
    } else {
        shot.certs.presented.clone()
    };
    let rule = shot.certs.rule;
    let warnings = shot.certs.warnings;
    let (verified, reason, rule, chain_certs) = match (shot.certs.verified, shot.certs.error) {
        (Some(chain), _) => (true, None, None, chain),
        (None, Some(e)) => (false, Some(e), rule, presented.clone()),
        (None, None) if shot.resumed => (true, None, None, presented.clone()),
        (None, None) => (
            false,
            Some("server sent no certificate".into()),
            Some(crate::client::NO_CERTIFICATE),
            presented.clone(),
        ),
    };
    let chain_bytes: usize = presented.iter().map(|c| c.len()).sum();
    let (compressed, source, compression) = match comp {
        Some((alg, n)) => (
            n,
            "server".to_string(),
            Some(
                match alg {
                    CertificateCompressionAlgorithm::Brotli => "brotli",
                    CertificateCompressionAlgorithm::Zlib => "zlib",
                    CertificateCompressionAlgorithm::Zstd => "zstd",
                    _ => "unknown",
                }
                .to_string(),
            ),
        ),
        None => {
            // Approximates the Certificate message body: the DER certificates in order.
            let all: Vec<u8> = presented.iter().flat_map(|c| c.iter().copied()).collect();
            let n = rustls::compress::default_cert_compressors()
                .iter()
                .find(|c| c.algorithm() == CertificateCompressionAlgorithm::Brotli)
                .and_then(|c| c.compress(all, CompressionLevel::Amortized).ok())
                .map(|v| v.len())
                .unwrap_or(chain_bytes);
            (n, "brotli estimate".to_string(), None)
        }
    };
    let (n_rtts, method) = rtts(tcp_med, hs_med, shot.bursts.len());
    let segments_source = match &shot.tcp {
        Some(i) => format!(
            "estimate: ceil(bytes / {} MSS from TCP_INFO); tcp_info.segs_in counts the whole connection",
            i.rcv_mss.filter(|m| *m >= 536).unwrap_or(DEFAULT_MSS)
        ),
        None => format!("estimate: ceil(bytes / {DEFAULT_MSS}) (no TCP_INFO: `ss` unavailable)"),
    };
    let mut report = ProbeReport {
        target: opts.peer.target.clone(),
        peer: shot.peer.to_string(),
        server_name: reference.to_string(),
        starttls: opts.peer.starttls.map(|p| p.name().to_string()),
        tcp_rtt_ms: tcp_med,
        handshake_ms: hs_med,
        handshake_rtts: n_rtts,
        handshake_rtts_method: method.into(),
        server_bursts: shot.bursts.len(),
        server_flights: shot.bursts,
        segments_source,
        tcp_info: shot.tcp,
        chain_bytes,
        chain_bytes_compressed: compressed,
        chain_bytes_compressed_source: source,
        compression,
        chain_certs: presented.len(),
        chain: chain_certs.iter().map(|c| subject(c)).collect(),
        tls_version: shot.version,
        cipher_suite: shot.suite,
        resumed: shot.resumed,
        verified,
        reason,
        rule,
        warnings,
        runs: if repeat > 1 { runs } else { Vec::new() },
        resumption,
        kx: shot.kx,
        expires_in_days: presented
            .first()
            .and_then(|c| crate::kx::expires_in_days(c, std::time::SystemTime::now())),
        timeline: shot.timeline,
        presented: presented.iter().map(|c| SentCert::from_der(c)).collect(),
        advice: Vec::new(),
        roots_warnings: verifier.roots_warnings.clone(),
    };
    let mut advice = advise(&report);
    if let Some(r) = &report.resumption {
        advice.push(if r.resumed {
            format!(
                "resumption works: a resumed handshake took {} round trip(s)",
                r.handshake_rtts
            )
        } else {
            "the server did not resume the session (no tickets or session cache)".into()
        });
    }
    report.advice = advice;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ss_line() {
        let i = parse_ss("ESTAB 0 0 127.0.0.1:1 127.0.0.1:2\n\t cubic rtt:50.2/25 mss:1448 rcvmss:1448 segs_out:5 segs_in:17 x");
        assert_eq!(i.rtt_ms, Some(50.2));
        assert_eq!(i.rcv_mss, Some(1448));
        assert_eq!((i.segs_in, i.segs_out), (Some(17), Some(5)));
    }

    #[test]
    fn bursts_split_on_writes_and_gaps() {
        let ms = Duration::from_millis;
        let log = vec![
            (ms(0), Ev::Write),
            (ms(50), Ev::Read(4096)),
            (ms(51), Ev::Read(100)),
            (ms(90), Ev::Read(4096)),
            (ms(91), Ev::Write),
            (ms(140), Ev::Read(50)),
        ];
        let f = group_bursts(&log, ms(200), Duration::from_millis(25), 1448);
        let b: Vec<_> = f
            .iter()
            .map(|f| (f.bytes, f.segments, f.after_client_write))
            .collect();
        assert_eq!(b, vec![(4196, 3, true), (4096, 3, false), (50, 1, true)]);
        // Reads after `end` are left out.
        assert_eq!(group_bursts(&log, ms(100), ms(25), 1448).len(), 2);
    }

    fn cert(subject: &str, bytes: usize, self_signed: bool) -> SentCert {
        SentCert {
            subject: subject.into(),
            bytes,
            self_signed,
        }
    }

    /// A verified TLS 1.3 full handshake that sent `certs`; `compression`: what the
    /// server compressed with and to how many bytes, else brotli's estimate is a tenth.
    fn report(certs: Vec<SentCert>, compression: Option<(&str, usize)>) -> ProbeReport {
        let chain_bytes = certs.iter().map(|c| c.bytes).sum();
        ProbeReport {
            target: "www.example:443".into(),
            peer: "192.0.2.1:443".into(),
            server_name: "www.example".into(),
            starttls: None,
            tcp_rtt_ms: 50.0,
            handshake_ms: 100.0,
            handshake_rtts: 1,
            handshake_rtts_method: "timing".into(),
            server_bursts: 0,
            server_flights: Vec::new(),
            segments_source: "estimate".into(),
            tcp_info: None,
            chain_bytes,
            chain_bytes_compressed: compression.map_or(chain_bytes / 10, |c| c.1),
            chain_bytes_compressed_source: if compression.is_some() {
                "server".into()
            } else {
                "brotli estimate".into()
            },
            compression: compression.map(|c| c.0.to_string()),
            chain_certs: certs.len(),
            chain: certs.iter().map(|c| c.subject.clone()).collect(),
            tls_version: "TLSv1.3".into(),
            cipher_suite: "TLS13_AES_128_GCM_SHA256".into(),
            resumed: false,
            verified: true,
            reason: None,
            rule: None,
            warnings: Vec::new(),
            runs: Vec::new(),
            resumption: None,
            kx: crate::kx::KeyExchange {
                key_exchange_group: Some("X25519".into()),
                hello_retry_request: false,
                hello_retry_reason: None,
                key_share_bytes: None,
            },
            expires_in_days: Some(60),
            timeline: Vec::new(),
            roots_warnings: Vec::new(),
            presented: certs,
            advice: Vec::new(),
        }
    }

    /// Issue 28: an uncompressed 14.5 KB leaf + 3 intermediates and no root was told to
    /// "drop the cross-signed root"; the advice names the leaf by subject and size.
    #[test]
    fn large_leaf_is_named_not_a_root() {
        let r = report(
            vec![
                cert("CN=big.example", 14_500, false),
                cert("CN=Issuing CA", 1_400, false),
                cert("CN=Policy CA", 1_300, false),
                cert("CN=Cross CA", 1_300, false),
            ],
            None,
        );
        let advice = advise(&r);
        let chain = advice
            .iter()
            .find(|a| a.starts_with("chain is"))
            .unwrap_or_else(|| panic!("no chain advice in {advice:?}"));
        assert!(
            chain.contains("shorten the leaf CN=big.example (14.5 KB of the 18.5 KB chain"),
            "{chain}"
        );
        assert!(
            chain.contains("enable certificate compression (RFC 8879"),
            "{chain}"
        );
        assert!(
            !advice.iter().any(|a| a.contains("root")),
            "no root was sent: {advice:?}"
        );
    }

    /// Only a self-signed certificate actually at the end of the chain is advised away.
    #[test]
    fn self_signed_root_present_is_advised_away() {
        let mut r = report(
            vec![
                cert("CN=www.example", 1_200, false),
                cert("CN=Issuing CA", 1_100, false),
                cert("CN=Example Root", 1_400, true),
            ],
            None,
        );
        let advice = advise(&r);
        assert!(
            advice.iter().any(|a| a
                == "the chain ends with the self-signed root CN=Example Root (1,400 bytes of the 3,700-byte chain): clients already have it; drop it"),
            "{advice:?}"
        );
        // The same chain ending with an intermediate: nothing about a root.
        r.presented[2].self_signed = false;
        assert!(
            !advise(&r).iter().any(|a| a.contains("root")),
            "{:?}",
            advise(&r)
        );
        // A large leaf + root chain where the root is most of the bytes: the root is
        // blamed, not the leaf (the old advice said "shorten the leaf" for 2 certificates).
        let r = report(
            vec![
                cert("CN=www.example", 2_000, false),
                cert("CN=Big Root", 14_000, true),
            ],
            None,
        );
        let advice = advise(&r);
        let chain = advice
            .iter()
            .find(|a| a.starts_with("chain is"))
            .unwrap_or_else(|| panic!("no chain advice in {advice:?}"));
        assert!(
            chain.contains("drop the self-signed root CN=Big Root (14.0 KB of the 16.0 KB chain)"),
            "{chain}"
        );
        assert!(!chain.contains("shorten"), "{chain}");
    }

    /// A large chain the server did not compress: compression is the fix, and with no
    /// certificate dominating and no root, nothing else (no root, no leaf) is blamed.
    #[test]
    fn uncompressed_large_chain_advises_compression() {
        let certs = vec![
            cert("CN=www.example", 5_600, false),
            cert("CN=Issuing CA", 5_500, false),
            cert("CN=Policy CA", 5_400, false),
        ];
        let advice = advise(&report(certs.clone(), None));
        let chain = advice
            .iter()
            .find(|a| a.starts_with("chain is"))
            .unwrap_or_else(|| panic!("no chain advice in {advice:?}"));
        assert!(
            chain.starts_with("chain is 16.5 KB in 3 certificates sent uncompressed"),
            "{chain}"
        );
        assert!(
            chain
                .contains("enable certificate compression (RFC 8879: brotli would make it 1.6 KB)"),
            "{chain}"
        );
        assert!(chain.contains("no one certificate dominates"), "{chain}");
        assert!(
            !chain.contains("root") && !chain.contains("shorten"),
            "{chain}"
        );
        // Compressed by the server: no advice to enable it.
        let done = advise(&report(certs, Some(("brotli", 1_300))));
        assert!(
            !done
                .iter()
                .any(|a| a.contains("enable certificate compression")),
            "{done:?}"
        );
    }

    #[test]
    fn sent_cert_from_der_sees_self_signed() {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(vec!["a.example".into()]).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "a.example");
        let c = params.self_signed(&key).expect("cert");
        let s = SentCert::from_der(c.der());
        assert!(s.self_signed);
        assert_eq!(s.bytes, c.der().len());
        assert_eq!(s.subject, "CN=a.example");
    }

    #[test]
    fn thousands() {
        assert_eq!(fmt_thousands(14600), "14,600");
        assert_eq!(fmt_thousands(999), "999");
    }
}
