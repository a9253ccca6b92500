//! STARTTLS: the plain-text dance of SMTP (RFC 3207), IMAP (RFC 3501) and POP3
//! (RFC 2595) before a TLS handshake, as `openssl s_client -starttls` speaks it. Shared
//! by `tlskit connect` and `tlskit probe`.
//!
//! The reply readers take any [`Read`] and read one byte at a time, so nothing after the
//! server's final line is consumed: the next byte on the socket belongs to TLS. They are
//! public so the fuzz target `probe_wire` can feed them arbitrary bytes.
//!
//! Everything read here comes from an untrusted server, so it is bounded: a line longer
//! than [`MAX_LINE`] bytes, or a reply (SMTP) or a run of untagged responses (IMAP)
//! longer than [`MAX_LINES`] lines, is an error rather than more memory or more waiting;
//! [`upgrade_tcp`] also bounds the whole dance by one deadline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Longest reply line accepted, in bytes, CRLF included (RFC 5321 allows 512 for SMTP;
/// IMAP capability greetings run longer). A longer line is [`ReplyError::LineTooLong`].
pub const MAX_LINE: usize = 4096;

/// Most lines in one SMTP multi-line reply, and most untagged IMAP responses before the
/// tagged one. More is [`ReplyError::TooManyLines`].
pub const MAX_LINES: usize = 128;

/// The tag `upgrade` uses for IMAP's STARTTLS command.
pub const IMAP_TAG: &str = "a1";

/// Mail protocols whose STARTTLS dance tlskit speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Starttls {
    /// SMTP (RFC 3207): greeting, EHLO, STARTTLS, 220.
    Smtp,
    /// IMAP (RFC 3501): greeting, `a1 STARTTLS`, `a1 OK`.
    Imap,
    /// POP3 (RFC 2595): greeting, STLS, +OK.
    Pop3,
}

impl Starttls {
    /// Parse `smtp`, `imap` or `pop3` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "smtp" => Some(Self::Smtp),
            "imap" => Some(Self::Imap),
            "pop3" => Some(Self::Pop3),
            _ => None,
        }
    }

    /// `smtp`, `imap` or `pop3`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smtp => "smtp",
            Self::Imap => "imap",
            Self::Pop3 => "pop3",
        }
    }
}

impl std::fmt::Display for Starttls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a reply could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The connection ended before the end of the line.
    #[error("server closed the connection")]
    Closed,
    /// A line ran past [`MAX_LINE`] bytes without a line feed.
    #[error("reply line longer than {limit} bytes")]
    LineTooLong {
        /// [`MAX_LINE`].
        limit: usize,
    },
    /// A reply ran past [`MAX_LINES`] lines.
    #[error("reply longer than {limit} lines")]
    TooManyLines {
        /// [`MAX_LINES`].
        limit: usize,
    },
    /// The server did not answer in time.
    #[error("timed out waiting for the server")]
    TimedOut,
    /// Any other socket error.
    #[error("{0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ReplyError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Self::TimedOut,
            std::io::ErrorKind::UnexpectedEof => Self::Closed,
            _ => Self::Io(e),
        }
    }
}

/// A failed STARTTLS upgrade.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StarttlsError {
    /// The server's reply could not be read (or was too long).
    #[error("STARTTLS ({proto}): {reason}")]
    Reply {
        /// The protocol.
        proto: Starttls,
        /// Why (in the message, not chained as a source, so it is printed once).
        reason: ReplyError,
    },
    /// The server answered, but not with what the dance needs.
    #[error("STARTTLS ({proto}): {step}: server said \"{}\"", tlskit_x509::text::Escaped(.said))]
    Refused {
        /// The protocol.
        proto: Starttls,
        /// What went wrong: `bad greeting`, `EHLO refused`, `STARTTLS not offered`,
        /// `STARTTLS refused`, `STLS refused`.
        step: &'static str,
        /// The server's words (an SMTP reply's lines joined with ` / `).
        said: String,
    },
}

/// One line without its CRLF (or bare LF), read a byte at a time so that nothing after
/// it is consumed. Invalid UTF-8 is replaced (U+FFFD). Errors: [`ReplyError::Closed`] at
/// end of input before a line feed, [`ReplyError::LineTooLong`] after [`MAX_LINE`] bytes
/// without one (no more than `MAX_LINE` bytes are read).
pub fn read_line<R: Read + ?Sized>(r: &mut R) -> Result<String, ReplyError> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        if line.len() >= MAX_LINE {
            return Err(ReplyError::LineTooLong { limit: MAX_LINE });
        }
        let n = loop {
            match r.read(&mut b) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n == 0 {
            return Err(ReplyError::Closed);
        }
        if b[0] == b'\n' {
            break;
        }
        line.push(b[0]);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// An SMTP reply (RFC 5321 §4.2): one or more lines; every line but the last has `-`
/// after the code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmtpReply {
    /// The first three characters of the last line (`220`, `250`, ...; not checked to
    /// be digits).
    pub code: String,
    /// The lines as sent, code included.
    pub lines: Vec<String>,
}

impl SmtpReply {
    /// Whether an EHLO reply lists `keyword` (any case) as an extension.
    pub fn offers(&self, keyword: &str) -> bool {
        self.lines.iter().skip(1).any(|l| {
            l.get(4..)
                .and_then(|k| k.split_whitespace().next())
                .is_some_and(|k| k.eq_ignore_ascii_case(keyword))
        })
    }

    /// The lines joined with ` / `, for error messages.
    pub fn text(&self) -> String {
        self.lines.join(" / ")
    }
}

/// Read one SMTP reply: lines until one whose fourth byte is not `-` (at most
/// [`MAX_LINES`]).
pub fn smtp_reply<R: Read + ?Sized>(r: &mut R) -> Result<SmtpReply, ReplyError> {
    let mut lines = Vec::new();
    loop {
        if lines.len() >= MAX_LINES {
            return Err(ReplyError::TooManyLines { limit: MAX_LINES });
        }
        let l = read_line(r)?;
        let last = l.as_bytes().get(3) != Some(&b'-');
        lines.push(l);
        if last {
            let code = lines
                .last()
                .map(|l| l.chars().take(3).collect())
                .unwrap_or_default();
            return Ok(SmtpReply { code, lines });
        }
    }
}

/// An IMAP tagged response's status (RFC 3501 §7.1).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImapStatus {
    /// `TAG OK ...`
    Ok,
    /// `TAG NO ...`
    No,
    /// `TAG BAD ...`, or anything else after the tag.
    Bad,
}

/// Read IMAP responses until the one tagged `tag`, skipping untagged (`* ...`) and
/// continuation lines (at most [`MAX_LINES`] of them). Returns the status and the line.
pub fn imap_tagged<R: Read + ?Sized>(
    r: &mut R,
    tag: &str,
) -> Result<(ImapStatus, String), ReplyError> {
    for _ in 0..=MAX_LINES {
        let l = read_line(r)?;
        let Some(rest) = l.strip_prefix(tag).and_then(|x| x.strip_prefix(' ')) else {
            continue;
        };
        let word = rest.split(' ').next().unwrap_or("");
        let status = if word.eq_ignore_ascii_case("OK") {
            ImapStatus::Ok
        } else if word.eq_ignore_ascii_case("NO") {
            ImapStatus::No
        } else {
            ImapStatus::Bad
        };
        return Ok((status, l));
    }
    Err(ReplyError::TooManyLines { limit: MAX_LINES })
}

/// Read one POP3 status line: (`true` for `+OK`, the line).
pub fn pop3_status<R: Read + ?Sized>(r: &mut R) -> Result<(bool, String), ReplyError> {
    let l = read_line(r)?;
    Ok((l.starts_with("+OK"), l))
}

/// Run the plain-text dance on `stream`; on success the next bytes belong to TLS.
/// Errors name the step and quote the server's reply.
pub fn upgrade<S: Read + Write + ?Sized>(
    stream: &mut S,
    proto: Starttls,
) -> Result<(), StarttlsError> {
    let rd = |source: ReplyError| StarttlsError::Reply {
        proto,
        reason: source,
    };
    let wr = |e: std::io::Error| StarttlsError::Reply {
        proto,
        reason: e.into(),
    };
    let refuse = |step: &'static str, said: String| StarttlsError::Refused { proto, step, said };
    match proto {
        Starttls::Smtp => {
            let g = smtp_reply(stream).map_err(rd)?;
            if g.code != "220" {
                return Err(refuse("bad greeting", g.text()));
            }
            stream.write_all(b"EHLO tlskit.invalid\r\n").map_err(wr)?;
            let e = smtp_reply(stream).map_err(rd)?;
            if e.code != "250" {
                return Err(refuse("EHLO refused", e.text()));
            }
            if !e.offers("STARTTLS") {
                return Err(refuse("STARTTLS not offered", e.text()));
            }
            stream.write_all(b"STARTTLS\r\n").map_err(wr)?;
            let s = smtp_reply(stream).map_err(rd)?;
            if s.code != "220" {
                return Err(refuse("STARTTLS refused", s.text()));
            }
        }
        Starttls::Imap => {
            let g = read_line(stream).map_err(rd)?;
            if !g.starts_with("* OK") {
                return Err(refuse("bad greeting", g));
            }
            stream
                .write_all(format!("{IMAP_TAG} STARTTLS\r\n").as_bytes())
                .map_err(wr)?;
            let (status, l) = imap_tagged(stream, IMAP_TAG).map_err(rd)?;
            if status != ImapStatus::Ok {
                return Err(refuse("STARTTLS refused", l));
            }
        }
        Starttls::Pop3 => {
            let (ok, g) = pop3_status(stream).map_err(rd)?;
            if !ok {
                return Err(refuse("bad greeting", g));
            }
            stream.write_all(b"STLS\r\n").map_err(wr)?;
            let (ok, l) = pop3_status(stream).map_err(rd)?;
            if !ok {
                return Err(refuse("STLS refused", l));
            }
        }
    }
    Ok(())
}

/// A socket whose reads and writes all end by one deadline.
struct Deadline<'a> {
    sock: &'a mut TcpStream,
    end: Instant,
}

impl Deadline<'_> {
    fn left(&self) -> std::io::Result<Duration> {
        let d = self.end.saturating_duration_since(Instant::now());
        if d.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(d)
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.sock.set_read_timeout(Some(left))?;
        self.sock.read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.sock.set_write_timeout(Some(left))?;
        self.sock.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
}

/// [`upgrade`] on a blocking TCP socket, all of it within `timeout`. The socket's read
/// and write timeouts are cleared afterwards.
pub fn upgrade_tcp(
    sock: &mut TcpStream,
    proto: Starttls,
    timeout: Duration,
) -> Result<(), StarttlsError> {
    let result = upgrade(
        &mut Deadline {
            end: Instant::now() + timeout,
            sock: &mut *sock,
        },
        proto,
    );
    let clear = sock
        .set_read_timeout(None)
        .and_then(|()| sock.set_write_timeout(None));
    result?;
    clear.map_err(|e| StarttlsError::Reply {
        proto,
        reason: ReplyError::Io(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads from `input`, records what is written.
    struct Peer<'a> {
        input: &'a [u8],
        sent: Vec<u8>,
    }
    impl Read for Peer<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Peer<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn run(proto: Starttls, input: &[u8]) -> (Result<(), StarttlsError>, Vec<u8>, usize) {
        let mut p = Peer {
            input,
            sent: Vec::new(),
        };
        let r = upgrade(&mut p, proto);
        (r, p.sent, p.input.len())
    }

    #[test]
    fn smtp_dance_stops_at_the_last_line() {
        let wire = b"220-mx.example ESMTP\r\n220 ready\r\n250-mx.example\r\n250-PIPELINING\r\n250-STARTTLS\r\n250 8BITMIME\r\n220 2.0.0 go ahead\r\n\x16\x03\x01";
        let (r, sent, left) = run(Starttls::Smtp, wire);
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(sent, b"EHLO tlskit.invalid\r\nSTARTTLS\r\n");
        assert_eq!(left, 3, "the TLS bytes after the reply are not consumed");
    }

    #[test]
    fn smtp_without_starttls_quotes_the_server() {
        let (r, _, _) = run(
            Starttls::Smtp,
            b"220 hi\r\n250-mx.example\r\n250 SIZE 1000\r\n",
        );
        let e = r.expect_err("no STARTTLS").to_string();
        assert!(e.contains("STARTTLS not offered"), "{e}");
        assert!(e.contains("250 SIZE 1000"), "{e}");
    }

    #[test]
    fn imap_and_pop3() {
        let (r, sent, _) = run(
            Starttls::Imap,
            b"* OK [CAPABILITY IMAP4rev1 STARTTLS] hi\r\n* BYE no\r\na1 OK go\r\n",
        );
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(sent, b"a1 STARTTLS\r\n");
        let (r, _, _) = run(Starttls::Imap, b"* OK hi\r\na1 NO not now\r\n");
        assert!(r.expect_err("NO").to_string().contains("a1 NO not now"));
        let (r, sent, _) = run(Starttls::Pop3, b"+OK pop\r\n+OK go\r\n");
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(sent, b"STLS\r\n");
        let (r, _, _) = run(Starttls::Pop3, b"+OK pop\r\n-ERR no\r\n");
        assert!(r.expect_err("ERR").to_string().contains("STLS refused"));
    }

    #[test]
    fn a_line_without_end_stops_at_the_limit() {
        // An endless line: read_line gives up after MAX_LINE bytes, not at end of input.
        let mut endless = std::io::repeat(b'x');
        assert!(matches!(
            read_line(&mut endless),
            Err(ReplyError::LineTooLong { limit: MAX_LINE })
        ));
        let mut ok = vec![b'y'; MAX_LINE - 1];
        ok.push(b'\n');
        assert_eq!(
            read_line(&mut ok.as_slice()).map(|l| l.len()).ok(),
            Some(MAX_LINE - 1)
        );
        let mut over = vec![b'y'; MAX_LINE];
        over.push(b'\n');
        assert!(read_line(&mut over.as_slice()).is_err());
    }

    #[test]
    fn endless_replies_stop_at_the_limit() {
        // A reply that goes on and on ends after MAX_LINES lines.
        let many: Vec<u8> = b"250-x\r\n".repeat(MAX_LINES + 5);
        assert!(matches!(
            smtp_reply(&mut many.as_slice()),
            Err(ReplyError::TooManyLines { limit: MAX_LINES })
        ));
        let untagged: Vec<u8> = b"* x\r\n".repeat(MAX_LINES + 5);
        assert!(matches!(
            imap_tagged(&mut untagged.as_slice(), IMAP_TAG),
            Err(ReplyError::TooManyLines { .. })
        ));
        let mut fine = b"250-x\r\n".repeat(MAX_LINES - 1);
        fine.extend_from_slice(b"250 end\r\n");
        assert_eq!(
            smtp_reply(&mut fine.as_slice()).map(|r| r.lines.len()).ok(),
            Some(MAX_LINES)
        );
    }

    #[test]
    fn a_silent_server_times_out_by_the_deadline() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (_held, _) = l.accept().expect("accept");
        let t = Instant::now();
        let r = upgrade_tcp(&mut c, Starttls::Smtp, Duration::from_millis(200));
        assert!(
            matches!(
                r,
                Err(StarttlsError::Reply {
                    reason: ReplyError::TimedOut,
                    ..
                })
            ),
            "{r:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(c.read_timeout().ok(), Some(None), "timeouts are cleared");
    }

    #[test]
    fn names() {
        assert_eq!(Starttls::parse("SMTP"), Some(Starttls::Smtp));
        assert_eq!(Starttls::parse("ftp"), None);
        assert_eq!(Starttls::Pop3.to_string(), "pop3");
    }
}
