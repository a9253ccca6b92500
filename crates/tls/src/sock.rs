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

/// The flight options for a socket accepted on a [`listener`]: on Linux it inherits
/// TCP_NODELAY and the send buffer from the listening socket, so nothing is done (two
/// system calls per connection saved; `accepted_sockets_inherit_the_flight_options`
/// checks the inheritance); elsewhere [`tune`].
pub fn tune_accepted(sock: SockRef<'_>) -> std::io::Result<()> {
    if cfg!(target_os = "linux") {
        Ok(())
    } else {
        tune(sock)
    }
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
    // Accepted sockets inherit both on Linux (see `tune_accepted`).
    sock.set_tcp_nodelay(true).map_err(err)?;
    sock.set_send_buffer_size(SEND_BUFFER).map_err(err)?;
    sock.bind(&addr.into()).map_err(err)?;
    sock.listen(backlog).map_err(err)?;
    sock.set_nonblocking(true).map_err(err)?;
    Ok(sock.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `tune_accepted` relies on: a socket accepted on `listener` has TCP_NODELAY and
    /// at least the requested send buffer without being set itself.
    #[test]
    fn accepted_sockets_inherit_the_flight_options() {
        let l = listener("127.0.0.1:0".parse().expect("address"), 8).expect("listener");
        let addr = l.local_addr().expect("address");
        l.set_nonblocking(false).expect("blocking");
        let _client = std::net::TcpStream::connect(addr).expect("connect");
        let (accepted, _) = l.accept().expect("accept");
        tune_accepted(SockRef::from(&accepted)).expect("tune");
        let s = SockRef::from(&accepted);
        assert!(
            s.tcp_nodelay().expect("nodelay"),
            "TCP_NODELAY on the accepted socket"
        );
        assert!(
            s.send_buffer_size().expect("sndbuf") >= SEND_BUFFER,
            "send buffer {} under {SEND_BUFFER}",
            s.send_buffer_size().unwrap_or(0)
        );
    }
}
