//! One exchange with one server: a message out, the answer with the same ID back, over
//! UDP, again over TCP when the answer is truncated. Every wait has the caller's
//! deadline; every answer is bounded (a UDP datagram, or a TCP message's 16-bit length)
//! and checked (ID, response bit) before it is decoded by hickory-proto.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::error::DnsError;

/// Stray datagrams (wrong ID, not a response) ignored before giving up on one exchange.
const MAX_STRAY: usize = 32;
/// Receive buffer: the largest UDP payload.
const UDP_BUF: usize = 65_535;

/// What is left until `deadline`, or a timeout error.
fn remaining(deadline: Instant, server: SocketAddr, what: &str) -> Result<Duration, DnsError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(1) {
        return Err(DnsError::Timeout {
            server,
            what: what.to_string(),
        });
    }
    Ok(left)
}

fn io_err(server: SocketAddr, what: &str, e: std::io::Error) -> DnsError {
    use std::io::ErrorKind;
    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
        DnsError::Timeout {
            server,
            what: what.to_string(),
        }
    } else {
        DnsError::Io { server, source: e }
    }
}

/// Send `msg` (an encoded message whose ID is `id`) and return the raw answer.
pub(crate) fn exchange(
    server: SocketAddr,
    msg: &[u8],
    id: u16,
    deadline: Instant,
    what: &str,
) -> Result<Vec<u8>, DnsError> {
    let answer = udp(server, msg, id, deadline, what)?;
    // TC bit: byte 2, 0x02.
    if answer[2] & 0x02 != 0 {
        return tcp(server, msg, id, deadline, what);
    }
    Ok(answer)
}

fn udp(
    server: SocketAddr,
    msg: &[u8],
    id: u16,
    deadline: Instant,
    what: &str,
) -> Result<Vec<u8>, DnsError> {
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let sock = UdpSocket::bind(bind).map_err(|e| io_err(server, what, e))?;
    // Connected: the kernel drops datagrams from any other address.
    sock.connect(server).map_err(|e| io_err(server, what, e))?;
    sock.send(msg).map_err(|e| io_err(server, what, e))?;
    let mut buf = vec![0u8; UDP_BUF];
    for _ in 0..MAX_STRAY {
        sock.set_read_timeout(Some(remaining(deadline, server, what)?))
            .map_err(|e| io_err(server, what, e))?;
        let n = sock.recv(&mut buf).map_err(|e| io_err(server, what, e))?;
        if n >= 12 && u16::from_be_bytes([buf[0], buf[1]]) == id && buf[2] & 0x80 != 0 {
            buf.truncate(n);
            return Ok(buf);
        }
    }
    Err(DnsError::Malformed {
        server,
        what: what.to_string(),
        reason: format!("{MAX_STRAY} datagrams that do not answer it"),
    })
}

fn tcp(
    server: SocketAddr,
    msg: &[u8],
    id: u16,
    deadline: Instant,
    what: &str,
) -> Result<Vec<u8>, DnsError> {
    let len = u16::try_from(msg.len()).map_err(|_| DnsError::Malformed {
        server,
        what: what.to_string(),
        reason: "the request is too large for TCP".into(),
    })?;
    let mut s = TcpStream::connect_timeout(&server, remaining(deadline, server, what)?)
        .map_err(|e| io_err(server, what, e))?;
    s.set_write_timeout(Some(remaining(deadline, server, what)?))
        .map_err(|e| io_err(server, what, e))?;
    let mut out = Vec::with_capacity(msg.len() + 2);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(msg);
    s.write_all(&out).map_err(|e| io_err(server, what, e))?;
    let mut read_exact = |buf: &mut [u8]| -> Result<(), DnsError> {
        let mut got = 0;
        while got < buf.len() {
            s.set_read_timeout(Some(remaining(deadline, server, what)?))
                .map_err(|e| io_err(server, what, e))?;
            let n = s
                .read(&mut buf[got..])
                .map_err(|e| io_err(server, what, e))?;
            if n == 0 {
                return Err(DnsError::Malformed {
                    server,
                    what: what.to_string(),
                    reason: "the connection closed mid-answer".into(),
                });
            }
            got += n;
        }
        Ok(())
    };
    let mut lenb = [0u8; 2];
    read_exact(&mut lenb)?;
    // At most 65,535 bytes: the length field bounds the allocation.
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(lenb))];
    read_exact(&mut buf)?;
    if buf.len() < 12 || u16::from_be_bytes([buf[0], buf[1]]) != id || buf[2] & 0x80 == 0 {
        return Err(DnsError::Malformed {
            server,
            what: what.to_string(),
            reason: "the TCP answer does not answer it".into(),
        });
    }
    Ok(buf)
}
