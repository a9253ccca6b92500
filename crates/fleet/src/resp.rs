//! The fleet's Redis as tlskit speaks to it (issue 27): RESP2 commands written as arrays
//! of bulk strings, and replies read by tlskit itself on a bounded buffer, so that no
//! reply can cost more memory than its key type allows, nor any operation more time than
//! its deadline.
//!
//! - **Size.** Every read names a cap (bytes of the whole reply, framing included). A bulk
//!   string or line that declares or brings more is refused as soon as its header is read:
//!   a `$1000000000` header costs nothing. Arrays hold at most [`MAX_ELEMENTS`] elements,
//!   nested at most [`MAX_DEPTH`] deep (the shapes tlskit uses: pub/sub messages and
//!   subscription confirmations), and a status or error line at most [`MAX_LINE`] bytes.
//! - **Time.** One deadline covers a whole operation: name resolution, TCP connect, TLS,
//!   `AUTH`, `SELECT`, the command and its reply. Every socket read and write gets only the
//!   time left, so a server that drips a byte now and then cannot stretch it.
//!
//! [`parse`] is the reader's whole logic on a byte slice (no I/O), which the fuzz target
//! `resp_reply` drives through [`crate::fuzzing::resp_reply`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most elements of an array reply.
pub(crate) const MAX_ELEMENTS: usize = 16;
/// Deepest nesting of arrays (an array of arrays, no more).
pub(crate) const MAX_DEPTH: usize = 2;
/// Longest status, error or header line (without its CRLF).
pub(crate) const MAX_LINE: usize = 1024;
/// Cap of replies that carry no stored value (`+OK`, integers, errors, the lease).
pub(crate) const SMALL_REPLY: usize = 4096;
/// Bytes of framing a bulk reply adds to its value (`$262144\r\n` ... `\r\n`).
#[cfg_attr(not(feature = "acme"), allow(dead_code))]
pub(crate) const FRAMING: usize = 32;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// A null bulk string or array (`$-1`, `*-1`): the key is absent.
    Nil,
    /// `+OK` and other status lines.
    Status(String),
    /// `-ERR ...`: Redis refused the command.
    Error(String),
    /// `:42`.
    Int(i64),
    /// `$3\r\nabc\r\n`.
    Bulk(Vec<u8>),
    /// `*2\r\n...`.
    Array(Vec<Value>),
}

/// Why bytes are not a reply tlskit accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplyError {
    /// Larger than the cap of its key type.
    #[error("{}", too_large(*cap, *declared))]
    TooLarge {
        /// The cap, bytes.
        cap: usize,
        /// What a bulk string's header declared, when that is how it was found.
        declared: Option<u64>,
    },
    /// Not RESP2, or a shape tlskit does not read.
    #[error("not a Redis reply tlskit reads ({0})")]
    Malformed(&'static str),
}

fn too_large(cap: usize, declared: Option<u64>) -> String {
    match declared {
        Some(n) => format!("the reply declares {n} bytes, more than the {cap} bytes allowed"),
        None => format!("the reply is longer than the {cap} bytes allowed"),
    }
}

/// What [`parse`] made of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A whole reply, and the bytes it took.
    Done(Value, usize),
    /// Not yet complete: no answer before the buffer holds at least this many bytes.
    Need(usize),
}

enum Step {
    Done(Value, usize),
    Need(usize),
}

/// Read one reply from the start of `buf`, refusing anything over `cap` bytes in all.
pub(crate) fn parse(buf: &[u8], cap: usize) -> Result<Parsed, ReplyError> {
    match value(buf, 0, cap, 0)? {
        Step::Done(v, end) => Ok(Parsed::Done(v, end)),
        Step::Need(n) if n > cap => Err(ReplyError::TooLarge {
            cap,
            declared: None,
        }),
        Step::Need(n) => Ok(Parsed::Need(n)),
    }
}

/// The line starting at `at` (after its type byte): its text and where the next item
/// starts.
fn line(buf: &[u8], at: usize, cap: usize) -> Result<Result<(&[u8], usize), usize>, ReplyError> {
    let start = at + 1;
    let window = buf.get(start..).unwrap_or(&[]);
    let limit = window.len().min(MAX_LINE + 2);
    match window[..limit].iter().position(|&b| b == b'\n') {
        Some(i) => {
            if i == 0 || window[i - 1] != b'\r' {
                return Err(ReplyError::Malformed("a line not ended by CRLF"));
            }
            let text = &window[..i - 1];
            if text.contains(&b'\r') {
                return Err(ReplyError::Malformed("a CR inside a line"));
            }
            let end = start + i + 1;
            if end > cap {
                return Err(ReplyError::TooLarge {
                    cap,
                    declared: None,
                });
            }
            Ok(Ok((text, end)))
        }
        None if window.len() >= MAX_LINE + 2 => {
            Err(ReplyError::Malformed("a line longer than 1,024 bytes"))
        }
        None => Ok(Err(buf.len() + 1)),
    }
}

fn int(text: &[u8]) -> Result<i64, ReplyError> {
    let bad = ReplyError::Malformed("not a decimal integer");
    let (neg, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad);
    }
    let mut n: i64 = 0;
    for d in digits {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(i64::from(d - b'0')))
            .ok_or(ReplyError::Malformed("an integer out of range"))?;
    }
    Ok(if neg { -n } else { n })
}

fn text(t: &[u8]) -> String {
    String::from_utf8_lossy(t).into_owned()
}

fn value(buf: &[u8], at: usize, cap: usize, depth: usize) -> Result<Step, ReplyError> {
    let Some(&kind) = buf.get(at) else {
        return Ok(Step::Need(at + 1));
    };
    let (t, next) = match line(buf, at, cap)? {
        Ok(x) => x,
        Err(need) => return Ok(Step::Need(need)),
    };
    match kind {
        b'+' => Ok(Step::Done(Value::Status(text(t)), next)),
        b'-' => Ok(Step::Done(Value::Error(text(t)), next)),
        b':' => Ok(Step::Done(Value::Int(int(t)?), next)),
        b'$' => {
            let n = int(t)?;
            if n == -1 {
                return Ok(Step::Done(Value::Nil, next));
            }
            let len = u64::try_from(n).map_err(|_| ReplyError::Malformed("a negative length"))?;
            let too_large = ReplyError::TooLarge {
                cap,
                declared: Some(len),
            };
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| next.checked_add(l))
                .and_then(|e| e.checked_add(2))
                .ok_or_else(|| too_large.clone())?;
            if end > cap {
                return Err(too_large);
            }
            if buf.len() < end {
                return Ok(Step::Need(end));
            }
            if &buf[end - 2..end] != b"\r\n" {
                return Err(ReplyError::Malformed("a bulk string not ended by CRLF"));
            }
            Ok(Step::Done(Value::Bulk(buf[next..end - 2].to_vec()), end))
        }
        b'*' => {
            let n = int(t)?;
            if n == -1 {
                return Ok(Step::Done(Value::Nil, next));
            }
            let n = usize::try_from(n).map_err(|_| ReplyError::Malformed("a negative length"))?;
            if n > MAX_ELEMENTS {
                return Err(ReplyError::Malformed("an array of more than 16 elements"));
            }
            if depth >= MAX_DEPTH {
                return Err(ReplyError::Malformed("arrays nested more than 2 deep"));
            }
            let mut items = Vec::with_capacity(n);
            let mut at = next;
            for _ in 0..n {
                match value(buf, at, cap, depth + 1)? {
                    Step::Done(v, end) => {
                        items.push(v);
                        at = end;
                    }
                    Step::Need(need) => return Ok(Step::Need(need)),
                }
            }
            Ok(Step::Done(Value::Array(items), at))
        }
        _ => Err(ReplyError::Malformed("an unknown type byte")),
    }
}

/// A command as RESP2 sends it: an array of bulk strings.
pub(crate) fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Why a Redis operation failed. Sentences; peer text escaped; no password.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RespError {
    /// The whole operation (connect, log-in, command, reply) did not end by its deadline.
    #[error("Redis did not answer within {} s (connect, log-in, command and reply together)", .0.as_secs_f64())]
    TimedOut(Duration),
    /// Could not connect or lost the connection.
    #[error("{what}: {source}")]
    Io {
        /// `cannot connect`, `lost the connection`.
        what: &'static str,
        /// The socket's or TLS's error.
        #[source]
        source: io::Error,
    },
    /// The server closed the connection.
    #[error("Redis closed the connection")]
    Closed,
    /// The reply for `key` is too large or not RESP.
    #[error("{key}: {reason}")]
    Reply {
        /// The Redis key (or command) the reply was for.
        key: String,
        /// What is wrong with it.
        #[source]
        reason: ReplyError,
    },
    /// Redis answered with an error (its text, escaped and cut at 200 characters).
    #[error("Redis refused {command}: {text}")]
    Refused {
        /// The command's name.
        command: String,
        /// Redis's error text.
        text: String,
    },
    /// A reply of another type than the command has.
    #[error("{key}: Redis answered with an unexpected reply type")]
    Unexpected {
        /// The Redis key (or command).
        key: String,
    },
}

impl RespError {
    /// The reply was refused for its size or shape: the key holds something tlskit never
    /// wrote (Redis itself is fine).
    pub(crate) fn is_bad_value(&self) -> bool {
        match self {
            Self::Reply { .. } | Self::Unexpected { .. } => true,
            // The key holds a list, a hash...: not a value tlskit wrote either.
            Self::Refused { text, .. } => text.starts_with("WRONGTYPE"),
            _ => false,
        }
    }
}

fn io_err(what: &'static str, e: io::Error, timeout: Duration) -> RespError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => RespError::TimedOut(timeout),
        _ => RespError::Io { what, source: e },
    }
}

/// A socket that never waits past its deadline: each read and write gets the time left.
struct Timed<S> {
    inner: S,
    deadline: Instant,
}

trait Timeouts {
    fn timeouts(&self, t: Duration) -> io::Result<()>;
}

impl Timeouts for TcpStream {
    fn timeouts(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

impl Timeouts for UnixStream {
    fn timeouts(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

impl<S: Timeouts> Timed<S> {
    fn arm(&self) -> io::Result<()> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::from(io::ErrorKind::TimedOut));
        }
        self.inner.timeouts(left)
    }
}

impl<S: Timeouts + Read> Read for Timed<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm()?;
        self.inner.read(buf)
    }
}

impl<S: Timeouts + Write> Write for Timed<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm()?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

enum Transport {
    Plain(Timed<TcpStream>),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, Timed<TcpStream>>>),
    Unix(Timed<UnixStream>),
}

impl Transport {
    fn set_deadline(&mut self, d: Instant) {
        match self {
            Self::Plain(t) => t.deadline = d,
            Self::Tls(s) => s.sock.deadline = d,
            Self::Unix(t) => t.deadline = d,
        }
    }
}

impl Read for Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(t) => t.read(buf),
            Self::Tls(s) => s.read(buf),
            Self::Unix(t) => t.read(buf),
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(t) => t.write(buf),
            Self::Tls(s) => s.write(buf),
            Self::Unix(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(t) => t.flush(),
            Self::Tls(s) => s.flush(),
            Self::Unix(t) => t.flush(),
        }
    }
}

/// Where the fleet's Redis is and how to log in (from the `--shared-state` URL).
pub(crate) enum Address {
    /// `redis://HOST:PORT`.
    Tcp(String, u16),
    /// `rediss://HOST:PORT`, verified with this configuration.
    Tls(String, u16, Arc<rustls::ClientConfig>),
    /// `redis+unix:///path`.
    Unix(PathBuf),
}

/// How to reach and log in to the fleet's Redis.
pub(crate) struct Endpoint {
    pub(crate) address: Address,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) db: i64,
}

/// Resolve `host:port` within the time left (a helper thread: the system resolver has no
/// deadline of its own).
fn resolve(
    host: &str,
    port: u16,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<SocketAddr>, RespError> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spec = (host.to_string(), port);
    std::thread::Builder::new()
        .name("tlskit-redis-resolve".into())
        .spawn(move || {
            let _ = tx.send(spec.to_socket_addrs().map(Iterator::collect::<Vec<_>>));
        })
        .map_err(|e| RespError::Io {
            what: "cannot connect",
            source: e,
        })?;
    match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(RespError::Io {
            what: "cannot resolve the host name",
            source: e,
        }),
        Err(_) => Err(RespError::TimedOut(timeout)),
    }
}

/// One connection, with what was read past the last reply.
pub(crate) struct Conn {
    io: Transport,
    buf: Vec<u8>,
    timeout: Duration,
}

impl Endpoint {
    fn connect(&self, deadline: Instant, timeout: Duration) -> Result<Conn, RespError> {
        let left = || {
            let l = deadline.saturating_duration_since(Instant::now());
            if l.is_zero() {
                Err(RespError::TimedOut(timeout))
            } else {
                Ok(l)
            }
        };
        let tcp = |host: &str, port: u16| -> Result<TcpStream, RespError> {
            let mut last = None;
            for a in resolve(host, port, deadline, timeout)? {
                match TcpStream::connect_timeout(&a, left()?) {
                    Ok(s) => {
                        let _ = s.set_nodelay(true);
                        return Ok(s);
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(match last {
                Some(e) => io_err("cannot connect", e, timeout),
                None => RespError::Io {
                    what: "cannot connect",
                    source: io::Error::new(io::ErrorKind::NotFound, "no address for the host"),
                },
            })
        };
        let io = match &self.address {
            Address::Tcp(host, port) => Transport::Plain(Timed {
                inner: tcp(host, *port)?,
                deadline,
            }),
            Address::Tls(host, port, config) => {
                let name = rustls::pki_types::ServerName::try_from(
                    host.trim_matches(['[', ']']).to_string(),
                )
                .map_err(|e| RespError::Io {
                    what: "cannot connect",
                    source: io::Error::new(io::ErrorKind::InvalidInput, e),
                })?;
                let c = rustls::ClientConnection::new(config.clone(), name).map_err(|e| {
                    RespError::Io {
                        what: "cannot connect",
                        source: io::Error::other(e),
                    }
                })?;
                let sock = Timed {
                    inner: tcp(host, *port)?,
                    deadline,
                };
                let mut s = rustls::StreamOwned::new(c, sock);
                while s.conn.is_handshaking() {
                    s.conn.complete_io(&mut s.sock).map_err(|e| {
                        // rustls writes a verifier's refusal with Debug inside its
                        // Display: said as tlskit's sentence instead.
                        let e = match tlskit_tls::tls_text::io_rustls(&e) {
                            Some(_) => {
                                io::Error::new(e.kind(), tlskit_tls::tls_text::io_tls_text(&e))
                            }
                            None => e,
                        };
                        io_err("TLS handshake failed", e, timeout)
                    })?;
                }
                Transport::Tls(Box::new(s))
            }
            Address::Unix(path) => Transport::Unix(Timed {
                inner: UnixStream::connect(path)
                    .map_err(|e| io_err("cannot connect", e, timeout))?,
                deadline,
            }),
        };
        let mut c = Conn {
            io,
            buf: Vec::new(),
            timeout,
        };
        if let Some(pw) = &self.password {
            let mut args: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(u) = &self.username {
                args.push(u.as_bytes());
            }
            args.push(pw.as_bytes());
            c.call(&args, SMALL_REPLY, "AUTH", deadline)?;
        }
        if self.db != 0 {
            let db = self.db.to_string();
            c.call(&[b"SELECT", db.as_bytes()], SMALL_REPLY, "SELECT", deadline)?;
        }
        Ok(c)
    }
}

/// Largest single read of a reply.
const CHUNK: usize = 16 * 1024;

impl Conn {
    /// Send one command and read its reply (at most `cap` bytes), all before `deadline`.
    /// An error reply is [`RespError::Refused`].
    pub(crate) fn call(
        &mut self,
        args: &[&[u8]],
        cap: usize,
        key: &str,
        deadline: Instant,
    ) -> Result<Value, RespError> {
        self.io.set_deadline(deadline);
        let t = self.timeout;
        self.io
            .write_all(&encode(args))
            .and_then(|()| self.io.flush())
            .map_err(|e| io_err("lost the connection", e, t))?;
        match self.reply(cap, key)? {
            Value::Error(e) => Err(RespError::Refused {
                command: String::from_utf8_lossy(args.first().copied().unwrap_or_default())
                    .into_owned(),
                text: tlskit_x509::text::escape(&e.chars().take(200).collect::<String>())
                    .into_owned(),
            }),
            v => Ok(v),
        }
    }

    /// Read one reply of at most `cap` bytes (the deadline already set).
    fn reply(&mut self, cap: usize, key: &str) -> Result<Value, RespError> {
        let t = self.timeout;
        read_reply(&mut self.io, &mut self.buf, cap).map_err(|e| match e {
            ReadError::Reply(reason) => RespError::Reply {
                key: key.to_string(),
                reason,
            },
            ReadError::Closed => RespError::Closed,
            ReadError::Io(e) => io_err("lost the connection", e, t),
        })
    }

    /// The next pub/sub message's payload (at most `cap` bytes in all), waiting for it
    /// without a deadline but in slices of `poll`, returning `None` as soon as `stop()`
    /// says so; once a message has begun, it must be whole within the operation timeout.
    pub(crate) fn next_message(
        &mut self,
        cap: usize,
        key: &str,
        poll: Duration,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<u8>>, RespError> {
        loop {
            if self.buf.is_empty() {
                if stop() {
                    return Ok(None);
                }
                self.io.set_deadline(Instant::now() + poll);
                let mut first = [0u8; 1];
                match self.io.read(&mut first) {
                    Ok(0) => return Err(RespError::Closed),
                    Ok(_) => self.buf.push(first[0]),
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        continue
                    }
                    Err(e) => return Err(io_err("lost the connection", e, self.timeout)),
                }
            }
            self.io.set_deadline(Instant::now() + self.timeout);
            if let Value::Array(v) = self.reply(cap, key)? {
                if let [Value::Bulk(kind), _, Value::Bulk(payload)] = v.as_slice() {
                    if kind == b"message" {
                        return Ok(Some(payload.clone()));
                    }
                }
            }
        }
    }
}

/// Why [`read_reply`] stopped.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Too large or not RESP.
    Reply(ReplyError),
    /// End of stream before a whole reply.
    Closed,
    /// The stream's error (a timeout among them).
    Io(io::Error),
}

/// Read one reply of at most `cap` bytes from `io`, `buf` holding what was read before
/// (a pub/sub connection may hold the start of the next one). Nothing is read past what
/// the reply is known to need, so `buf` never holds more than `cap` bytes (or what it
/// held before).
pub(crate) fn read_reply(
    io: &mut impl Read,
    buf: &mut Vec<u8>,
    cap: usize,
) -> Result<Value, ReadError> {
    loop {
        let need = match parse(buf, cap) {
            Ok(Parsed::Done(v, n)) => {
                buf.drain(..n);
                return Ok(v);
            }
            Ok(Parsed::Need(n)) => n,
            Err(reason) => return Err(ReadError::Reply(reason)),
        };
        let want = need.saturating_sub(buf.len()).clamp(1, CHUNK);
        let at = buf.len();
        buf.resize(at + want, 0);
        debug_assert!(buf.len() <= cap, "the reply buffer grew past its cap");
        match io.read(&mut buf[at..]) {
            Ok(0) => {
                buf.truncate(at);
                return Err(ReadError::Closed);
            }
            Ok(n) => buf.truncate(at + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(at),
            Err(e) => {
                buf.truncate(at);
                return Err(ReadError::Io(e));
            }
        }
    }
}

/// One lazily opened connection to the fleet's Redis, shared by callers one operation at
/// a time; after an error it is dropped and the next operation connects again.
pub(crate) struct Redis {
    endpoint: Endpoint,
    con: Mutex<Option<Conn>>,
    timeout: Duration,
}

impl Redis {
    /// `timeout`: the deadline of each whole operation.
    pub(crate) fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self {
            endpoint,
            con: Mutex::new(None),
            timeout,
        }
    }

    /// One command, its reply capped at `cap` bytes, within one deadline counted from now
    /// (waiting for the connection, connecting and logging in included). `key` names the
    /// reply in errors.
    pub(crate) fn call(&self, args: &[&[u8]], cap: usize, key: &str) -> Result<Value, RespError> {
        let deadline = Instant::now() + self.timeout;
        let mut guard = self.con.lock().unwrap_or_else(|p| p.into_inner());
        if Instant::now() >= deadline {
            return Err(RespError::TimedOut(self.timeout));
        }
        if guard.is_none() {
            *guard = Some(self.endpoint.connect(deadline, self.timeout)?);
        }
        let Some(c) = guard.as_mut() else {
            return Err(RespError::Closed);
        };
        let r = c.call(args, cap, key, deadline);
        if matches!(&r, Err(e) if !matches!(e, RespError::Refused { .. })) {
            // The connection's state is unknown (a reply half read): start afresh.
            *guard = None;
        }
        r
    }

    /// Forget the connection: the next call connects again. Never waits: a call in
    /// flight drops the connection itself when it fails.
    pub(crate) fn reset(&self) {
        if let Ok(mut g) = self.con.try_lock() {
            *g = None;
        }
    }

    /// A connection of its own subscribed to `channel` (connect, log-in, SUBSCRIBE and its
    /// confirmation within one deadline).
    pub(crate) fn subscribe(&self, channel: &str) -> Result<Conn, RespError> {
        let deadline = Instant::now() + self.timeout;
        let mut c = self.endpoint.connect(deadline, self.timeout)?;
        match c.call(
            &[b"SUBSCRIBE", channel.as_bytes()],
            SMALL_REPLY,
            channel,
            deadline,
        )? {
            Value::Array(v) if v.first() == Some(&Value::Bulk(b"subscribe".to_vec())) => Ok(c),
            _ => Err(RespError::Unexpected {
                key: channel.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(b: &[u8], cap: usize) -> Value {
        match parse(b, cap) {
            Ok(Parsed::Done(v, n)) => {
                assert_eq!(n, b.len());
                v
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_the_shapes_tlskit_uses() {
        assert_eq!(done(b"+OK\r\n", 64), Value::Status("OK".into()));
        assert_eq!(done(b"-ERR no\r\n", 64), Value::Error("ERR no".into()));
        assert_eq!(done(b":-12\r\n", 64), Value::Int(-12));
        assert_eq!(done(b"$-1\r\n", 64), Value::Nil);
        assert_eq!(done(b"$3\r\na\r\n\r\n", 64), Value::Bulk(b"a\r\n".to_vec()));
        assert_eq!(
            done(b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n", 64),
            Value::Array(vec![
                Value::Bulk(b"message".to_vec()),
                Value::Bulk(b"c".to_vec()),
                Value::Bulk(b"hi".to_vec())
            ])
        );
        assert_eq!(
            done(b"*1\r\n*0\r\n", 64),
            Value::Array(vec![Value::Array(vec![])])
        );
    }

    #[test]
    fn incomplete_replies_say_how_much_they_need() {
        assert_eq!(parse(b"", 64), Ok(Parsed::Need(1)));
        assert_eq!(parse(b"+O", 64), Ok(Parsed::Need(3)));
        assert_eq!(parse(b"$10\r\nab", 64), Ok(Parsed::Need(17)));
        assert_eq!(parse(b"*2\r\n:1\r\n", 64), Ok(Parsed::Need(9)));
    }

    #[test]
    fn a_huge_declared_length_is_refused_at_its_header() {
        let e = parse(b"$1000000000\r\n", 4096);
        assert_eq!(
            e,
            Err(ReplyError::TooLarge {
                cap: 4096,
                declared: Some(1_000_000_000)
            })
        );
        assert!(matches!(
            parse(b"$99999999999999999999\r\n", 4096),
            Err(ReplyError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"$9223372036854775807\r\n", 1 << 30),
            Err(ReplyError::TooLarge { .. })
        ));
        // A value that just fits, and one byte more.
        let mut ok = b"$4\r\nabcd\r\n".to_vec();
        assert!(matches!(parse(&ok, ok.len()), Ok(Parsed::Done(..))));
        ok.truncate(9);
        assert!(matches!(parse(&ok, 9), Err(ReplyError::TooLarge { .. })));
        // A line longer than the cap, arriving bit by bit.
        assert!(matches!(
            parse(&[b'+'; 100], 64),
            Err(ReplyError::TooLarge { .. })
        ));
    }

    #[test]
    fn bad_shapes_are_refused() {
        for bad in [
            &b"?x\r\n"[..],
            b"+a\nb\r\n",
            b":1x\r\n",
            b"$-2\r\n",
            b"*-5\r\n",
            b"*17\r\n",
            b"*1\r\n*1\r\n*0\r\n",
            b"$2\r\nabcd",
        ] {
            assert!(
                matches!(parse(bad, 4096), Err(ReplyError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = [b"+".as_slice(), &[b'a'; 2000], b"\r\n"].concat();
        assert!(matches!(
            parse(&long, 1 << 20),
            Err(ReplyError::Malformed(_))
        ));
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&[b"SET", b"k", b"a\r\nb"]),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n".to_vec()
        );
    }
}
