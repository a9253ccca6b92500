//! PROXY protocol version 2 header (binary), sent to the backend before the client's
//! bytes so it learns the client's address and what the TLS handshake agreed: the ALPN
//! protocol, the server name (SNI) the client asked for, and the TLS facts (version,
//! cipher, client certificate and its verification result).
//!
//! Layout and type codes follow HAProxy's specification (doc/proxy-protocol.txt, 2.2):
//! PP2_TYPE_ALPN (0x01), PP2_TYPE_AUTHORITY (0x02), PP2_TYPE_SSL (0x20) with the sub-TLVs
//! PP2_SUBTYPE_SSL_VERSION (0x21), PP2_SUBTYPE_SSL_CN (0x22) and PP2_SUBTYPE_SSL_CIPHER
//! (0x23). SSL_SIG_ALG and SSL_KEY_ALG are not sent.

use std::net::SocketAddr;

const SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";

const PP2_TYPE_ALPN: u8 = 0x01;
const PP2_TYPE_AUTHORITY: u8 = 0x02;
const PP2_TYPE_SSL: u8 = 0x20;
const PP2_SUBTYPE_SSL_VERSION: u8 = 0x21;
const PP2_SUBTYPE_SSL_CN: u8 = 0x22;
const PP2_SUBTYPE_SSL_CIPHER: u8 = 0x23;

/// The connection is over TLS.
const PP2_CLIENT_SSL: u8 = 0x01;
/// The client presented a certificate on this connection.
const PP2_CLIENT_CERT_CONN: u8 = 0x02;
/// The client presented a certificate at least once in this TLS session (a resumed
/// session carries the certificate of the handshake that created it).
const PP2_CLIENT_CERT_SESS: u8 = 0x04;

/// Longest common name sent; a longer one (a hostile certificate) is left out rather than
/// cut inside a character.
const MAX_CN: usize = 1024;

/// What the client certificate was, as the backend learns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientCert {
    /// No client certificate.
    None,
    /// A certificate verified during this connection's full handshake.
    Verified {
        /// Subject common name, when the certificate has one.
        cn: Option<String>,
        /// Presented in an earlier handshake of a resumed session, not on this connection.
        resumed: bool,
    },
}

/// What the TLS handshake agreed, for the PROXY v2 TLVs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsFacts {
    /// The ALPN protocol agreed, if any.
    pub(crate) alpn: Option<Vec<u8>>,
    /// The server name the client sent (SNI), if any.
    pub(crate) authority: Option<String>,
    /// `TLSv1.3`, `TLSv1.2`.
    pub(crate) version: String,
    /// OpenSSL's name of the cipher suite (what HAProxy sends, e.g.
    /// `ECDHE-RSA-AES128-GCM-SHA256`; TLS 1.3 suites keep their IANA names).
    pub(crate) cipher: String,
    /// The client certificate.
    pub(crate) client_cert: ClientCert,
}

impl TlsFacts {
    /// The facts of an established server connection.
    pub(crate) fn of(conn: &rustls::ServerConnection) -> Self {
        let client_cert = match conn.peer_certificates().and_then(|c| c.first()) {
            None => ClientCert::None,
            Some(leaf) => ClientCert::Verified {
                cn: common_name(leaf.as_ref()),
                resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            },
        };
        Self {
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            authority: conn.server_name().map(str::to_string),
            version: tlskit_tls::version_name(conn.protocol_version()),
            cipher: conn
                .negotiated_cipher_suite()
                .map(|s| openssl_cipher_name(s.suite()))
                .unwrap_or_default(),
            client_cert,
        }
    }
}

/// The first common name of a certificate's subject, when it is a string of bounded size.
fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert.subject().iter_common_name().next()?.as_str().ok()?;
    (cn.len() <= MAX_CN).then(|| cn.to_string())
}

/// OpenSSL's spelling of a cipher suite (what HAProxy and nginx pass on); TLS 1.3 suites
/// are spelled the same by both.
fn openssl_cipher_name(suite: rustls::CipherSuite) -> String {
    use rustls::CipherSuite as C;
    let name = match suite {
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => return other.as_str().unwrap_or("").to_string(),
    };
    name.to_string()
}

/// Append one TLV. Every value here is bounded far below 65,535 bytes (ALPN and SNI at
/// 255 by TLS, the CN at [`MAX_CN`], version and cipher names are short), so the length
/// always fits.
fn tlv(out: &mut Vec<u8>, kind: u8, value: &[u8]) {
    let len = u16::try_from(value.len()).unwrap_or(u16::MAX);
    out.push(kind);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&value[..usize::from(len)]);
}

/// The TLVs for `facts`.
fn tlvs(facts: &TlsFacts) -> Vec<u8> {
    let mut out = Vec::with_capacity(96);
    if let Some(alpn) = &facts.alpn {
        tlv(&mut out, PP2_TYPE_ALPN, alpn);
    }
    if let Some(sni) = &facts.authority {
        tlv(&mut out, PP2_TYPE_AUTHORITY, sni.as_bytes());
    }
    let (client, verify, cn) = match &facts.client_cert {
        ClientCert::None => (PP2_CLIENT_SSL, 1u32, None),
        ClientCert::Verified { cn, resumed: false } => (
            PP2_CLIENT_SSL | PP2_CLIENT_CERT_CONN | PP2_CLIENT_CERT_SESS,
            0,
            cn.as_deref(),
        ),
        ClientCert::Verified { cn, resumed: true } => {
            (PP2_CLIENT_SSL | PP2_CLIENT_CERT_SESS, 0, cn.as_deref())
        }
    };
    let mut ssl = Vec::with_capacity(64);
    ssl.push(client);
    ssl.extend_from_slice(&verify.to_be_bytes());
    tlv(&mut ssl, PP2_SUBTYPE_SSL_VERSION, facts.version.as_bytes());
    if let Some(cn) = cn {
        tlv(&mut ssl, PP2_SUBTYPE_SSL_CN, cn.as_bytes());
    }
    tlv(&mut ssl, PP2_SUBTYPE_SSL_CIPHER, facts.cipher.as_bytes());
    tlv(&mut out, PP2_TYPE_SSL, &ssl);
    out
}

/// The v2 header for a proxied TCP connection from `src` to `dst`, with the TLS facts as
/// TLVs when given.
pub(crate) fn v2_header(src: SocketAddr, dst: SocketAddr, facts: Option<&TlsFacts>) -> Vec<u8> {
    let extra = facts.map(tlvs).unwrap_or_default();
    let mut h = Vec::with_capacity(52 + extra.len());
    h.extend_from_slice(&SIGNATURE);
    h.push(0x21); // version 2, command PROXY
    let addr_len = match (src, dst) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) => 12,
        _ => 36,
    };
    // Bounded: addresses (at most 36) + TLVs (ALPN 258, SNI 258, SSL at most 1,100).
    let len = u16::try_from(addr_len + extra.len()).unwrap_or(u16::MAX);
    match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            h.push(0x11); // AF_INET, STREAM
            h.extend_from_slice(&len.to_be_bytes());
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
            h.extend_from_slice(&len.to_be_bytes());
            h.extend_from_slice(&v6(s).octets());
            h.extend_from_slice(&v6(d).octets());
            h.extend_from_slice(&s.port().to_be_bytes());
            h.extend_from_slice(&d.port().to_be_bytes());
        }
    }
    h.extend_from_slice(&extra);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse()
            .unwrap_or_else(|_| unreachable!("literal address"))
    }

    #[test]
    fn v4_header_layout() {
        let h = v2_header(addr("192.0.2.1:1234"), addr("198.51.100.2:443"), None);
        assert_eq!(h.len(), 28);
        assert_eq!(&h[..12], &SIGNATURE);
        assert_eq!(h[12], 0x21);
        assert_eq!(h[13], 0x11);
        assert_eq!(&h[14..16], &[0, 12]);
        assert_eq!(&h[16..20], &[192, 0, 2, 1]);
        assert_eq!(&h[24..26], &1234u16.to_be_bytes());
        assert_eq!(&h[26..28], &443u16.to_be_bytes());
    }

    /// Byte for byte, written out by hand from the specification.
    #[test]
    fn tlvs_byte_exact_with_verified_client_certificate() {
        let facts = TlsFacts {
            alpn: Some(b"h2".to_vec()),
            authority: Some("www.example".into()),
            version: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            client_cert: ClientCert::Verified {
                cn: Some("alice".into()),
                resumed: false,
            },
        };
        let h = v2_header(
            addr("192.0.2.1:1234"),
            addr("198.51.100.2:443"),
            Some(&facts),
        );
        let mut want: Vec<u8> = Vec::new();
        want.extend_from_slice(b"\r\n\r\n\0\r\nQUIT\n");
        want.extend_from_slice(&[0x21, 0x11]);
        // 12 address bytes + ALPN 5 + AUTHORITY 14 + SSL (3 + 5 + 10 + 8 + 25) = 82
        want.extend_from_slice(&[0x00, 82]);
        want.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 2, 0x04, 0xd2, 0x01, 0xbb]);
        want.extend_from_slice(&[0x01, 0x00, 0x02]);
        want.extend_from_slice(b"h2");
        want.extend_from_slice(&[0x02, 0x00, 0x0b]);
        want.extend_from_slice(b"www.example");
        want.extend_from_slice(&[0x20, 0x00, 48]);
        want.extend_from_slice(&[0x07, 0x00, 0x00, 0x00, 0x00]);
        want.extend_from_slice(&[0x21, 0x00, 0x07]);
        want.extend_from_slice(b"TLSv1.3");
        want.extend_from_slice(&[0x22, 0x00, 0x05]);
        want.extend_from_slice(b"alice");
        want.extend_from_slice(&[0x23, 0x00, 0x16]);
        want.extend_from_slice(b"TLS_AES_128_GCM_SHA256");
        assert_eq!(h, want);
    }

    #[test]
    fn no_client_certificate_means_verify_nonzero_and_no_cn() {
        let facts = TlsFacts {
            alpn: None,
            authority: None,
            version: "TLSv1.2".into(),
            cipher: "ECDHE-ECDSA-AES128-GCM-SHA256".into(),
            client_cert: ClientCert::None,
        };
        let t = tlvs(&facts);
        assert_eq!(t[0], PP2_TYPE_SSL);
        assert_eq!(usize::from(u16::from_be_bytes([t[1], t[2]])), t.len() - 3);
        assert_eq!(t[3], PP2_CLIENT_SSL);
        assert_eq!(&t[4..8], &1u32.to_be_bytes());
        let mut kinds = Vec::new();
        let mut rest = &t[8..];
        while rest.len() >= 3 {
            let len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
            kinds.push(rest[0]);
            rest = &rest[3 + len..];
        }
        assert!(rest.is_empty());
        assert_eq!(kinds, [PP2_SUBTYPE_SSL_VERSION, PP2_SUBTYPE_SSL_CIPHER]);
    }

    #[test]
    fn resumed_session_sets_only_cert_sess() {
        let facts = TlsFacts {
            alpn: None,
            authority: None,
            version: "TLSv1.3".into(),
            cipher: "TLS_AES_256_GCM_SHA384".into(),
            client_cert: ClientCert::Verified {
                cn: None,
                resumed: true,
            },
        };
        let t = tlvs(&facts);
        assert_eq!(t[3], PP2_CLIENT_SSL | PP2_CLIENT_CERT_SESS);
        assert_eq!(&t[4..8], &[0, 0, 0, 0]);
    }

    #[test]
    fn v6_and_mixed_families_use_inet6_with_tlv_length() {
        let facts = TlsFacts {
            alpn: Some(b"http/1.1".to_vec()),
            authority: Some("a".repeat(253)),
            version: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            client_cert: ClientCert::None,
        };
        let h = v2_header(addr("[2001:db8::1]:5"), addr("192.0.2.9:443"), Some(&facts));
        assert_eq!(h[13], 0x21);
        let len = usize::from(u16::from_be_bytes([h[14], h[15]]));
        assert_eq!(h.len(), 16 + len);
        assert_eq!(&h[16 + 36..16 + 36 + 3], &[0x01, 0x00, 0x08]);
    }

    #[test]
    fn cipher_names_are_openssl_spellings() {
        assert_eq!(
            openssl_cipher_name(rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
            "ECDHE-RSA-AES128-GCM-SHA256"
        );
        assert_eq!(
            openssl_cipher_name(rustls::CipherSuite::TLS13_AES_256_GCM_SHA384),
            "TLS_AES_256_GCM_SHA384"
        );
    }
}
