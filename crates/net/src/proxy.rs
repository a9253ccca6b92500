//! PROXY protocol version 2 header (binary), sent to the backend before the client's
//! bytes so it learns the client's address.

use std::net::SocketAddr;

const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

/// The v2 header for a proxied TCP connection from `src` to `dst`.
pub(crate) fn v2_header(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let mut h = Vec::with_capacity(52);
    h.extend_from_slice(&SIGNATURE);
    h.push(0x21); // version 2, command PROXY
    match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            h.push(0x11); // AF_INET, STREAM
            h.extend_from_slice(&12u16.to_be_bytes());
            h.extend_from_slice(&s.ip().octets());
            h.extend_from_slice(&d.ip().octets());
            h.extend_from_slice(&s.port().to_be_bytes());
            h.extend_from_slice(&d.port().to_be_bytes());
        }
        (s, d) => {
            let v6 = |a: SocketAddr| match a {
                SocketAddr::V4(v) => v.ip().to_ipv6_mapped(),
                SocketAddr::V6(v) => *v.ip(),
            };
            h.push(0x21); // AF_INET6, STREAM
            h.extend_from_slice(&36u16.to_be_bytes());
            h.extend_from_slice(&v6(s).octets());
            h.extend_from_slice(&v6(d).octets());
            h.extend_from_slice(&s.port().to_be_bytes());
            h.extend_from_slice(&d.port().to_be_bytes());
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_header_layout() {
        let h = v2_header(
            "192.0.2.1:1234".parse().unwrap_or_else(|_| unreachable!()),
            "198.51.100.2:443"
                .parse()
                .unwrap_or_else(|_| unreachable!()),
        );
        assert_eq!(h.len(), 28);
        assert_eq!(&h[..12], &SIGNATURE);
        assert_eq!(h[12], 0x21);
        assert_eq!(h[13], 0x11);
        assert_eq!(&h[14..16], &[0, 12]);
        assert_eq!(&h[16..20], &[192, 0, 2, 1]);
        assert_eq!(&h[24..26], &1234u16.to_be_bytes());
        assert_eq!(&h[26..28], &443u16.to_be_bytes());
    }
}
