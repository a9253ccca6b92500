//! Socket options that make a TLS flight leave in one piece: TCP_NODELAY before the
//! handshake (no Nagle stall between flights) and a send buffer that holds a whole
//! flight, so the single vectored write rustls makes is accepted entirely by the kernel.

use std::net::SocketAddr;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

use crate::error::NetError;

/// Send buffer requested for every TLS socket (the kernel doubles it for bookkeeping).
/// Linux starts sockets at 16 KiB (`tcp_wmem`), less than a 20 KB certificate flight.
pub const SEND_BUFFER: usize = 256 * 1024;

/// Apply the flight options to a connected (or about to connect) socket.
pub fn tune(sock: SockRef<'_>) -> std::io::Result<()> {
    sock.set_tcp_nodelay(true)?;
    sock.set_send_buffer_size(SEND_BUFFER)?;
    Ok(())
}

/// A non-blocking listening socket with SO_REUSEADDR (not SO_REUSEPORT: a second
/// server on the same port is a configuration error, reported as such).
pub fn listener(addr: SocketAddr, backlog: i32) -> Result<std::net::TcpListener, NetError> {
    let err = |reason| NetError::Listen { addr, reason };
    let sock =
        Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(err)?;
    sock.set_reuse_address(true).map_err(err)?;
    if addr.is_ipv6() {
        sock.set_only_v6(true).map_err(err)?;
    }
    // Accepted sockets inherit these on Linux; they are set again per connection anyway.
    sock.set_send_buffer_size(SEND_BUFFER).map_err(err)?;
    sock.bind(&addr.into()).map_err(err)?;
    sock.listen(backlog).map_err(err)?;
    sock.set_nonblocking(true).map_err(err)?;
    Ok(sock.into())
}
