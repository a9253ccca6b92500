//! What a client learns about the key exchange of its handshake: the group agreed, whether
//! the server asked for another key share (a HelloRetryRequest) and why, the sizes of the
//! key shares, and how long the server's certificate has left. Shared by `connect` and
//! `probe`.

use rustls::{ClientConnection, HandshakeKind, NamedGroup};

/// Key-share sizes in bytes for the agreed group, client's and server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct KeyShareBytes {
    /// The client's key share (for a hybrid: ML-KEM encapsulation key + classical share).
    pub client: usize,
    /// The server's key share (for a hybrid: ML-KEM ciphertext + classical share).
    pub server: usize,
}

/// The key exchange of one handshake, as reported by `connect` and `probe`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct KeyExchange {
    /// The group agreed (`X25519MLKEM768`, `X25519`, `secp256r1`, ...).
    pub key_exchange_group: Option<String>,
    /// Whether the server answered the first ClientHello with a HelloRetryRequest (an
    /// extra round trip).
    pub hello_retry_request: bool,
    /// Why, when it did.
    pub hello_retry_reason: Option<String>,
    /// Sizes of the key shares exchanged for the agreed group, as its specification fixes
    /// them; none for a group tlskit does not know.
    pub key_share_bytes: Option<KeyShareBytes>,
}

/// Key-share sizes fixed by each group's specification: RFC 8446 4.2.8.2 (uncompressed
/// points), RFC 7748 (X25519, X448), RFC 7919 (FFDHE: the prime's size), FIPS 203 and
/// draft-ietf-tls-ecdhe-mlkem (ML-KEM-768: 1,184-byte encapsulation key, 1,088-byte
/// ciphertext; hybrids add the classical share).
pub fn key_share_bytes(group: NamedGroup) -> Option<KeyShareBytes> {
    let (client, server) = match group {
        NamedGroup::X25519 => (32, 32),
        NamedGroup::X448 => (56, 56),
        NamedGroup::secp256r1 => (65, 65),
        NamedGroup::secp384r1 => (97, 97),
        NamedGroup::secp521r1 => (133, 133),
        NamedGroup::FFDHE2048 => (256, 256),
        NamedGroup::FFDHE3072 => (384, 384),
        NamedGroup::FFDHE4096 => (512, 512),
        NamedGroup::MLKEM768 => (1184, 1088),
        NamedGroup::X25519MLKEM768 => (1184 + 32, 1088 + 32),
        NamedGroup::secp256r1MLKEM768 => (65 + 1184, 65 + 1088),
        _ => return None,
    };
    Some(KeyShareBytes { client, server })
}

/// The group's name as tlskit prints it (the IANA registry's spelling).
pub fn group_name(group: NamedGroup) -> String {
    format!("{group:?}")
}

impl KeyExchange {
    /// Read off a finished client handshake.
    pub fn of(conn: &ClientConnection) -> Self {
        let group = conn.negotiated_key_exchange_group().map(|g| g.name());
        let hrr = conn.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest);
        Self {
            key_exchange_group: group.map(group_name),
            hello_retry_request: hrr,
            hello_retry_reason: hrr.then(|| match group {
                Some(g) => format!(
                    "the server chose {}, for which the first ClientHello carried no key share",
                    group_name(g)
                ),
                None => "the server asked for another key share".into(),
            }),
            key_share_bytes: group.and_then(key_share_bytes),
        }
    }
}

/// Whole days from `now` until the certificate's notAfter, rounded down (negative once
/// it has expired); `None` when the certificate cannot be read.
pub fn expires_in_days(der: &[u8], now: std::time::SystemTime) -> Option<i64> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let not_after = cert.validity().not_after.timestamp();
    let now = match now.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).ok()?,
        Err(e) => -i64::try_from(e.duration().as_secs()).ok()?,
    };
    Some((not_after - now).div_euclid(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_sizes() {
        assert_eq!(
            key_share_bytes(NamedGroup::X25519MLKEM768),
            Some(KeyShareBytes {
                client: 1216,
                server: 1120
            })
        );
        assert_eq!(
            key_share_bytes(NamedGroup::secp256r1).map(|k| k.client),
            Some(65)
        );
        assert_eq!(key_share_bytes(NamedGroup::Unknown(0x1234)), None);
        assert_eq!(group_name(NamedGroup::X25519MLKEM768), "X25519MLKEM768");
    }
}
