//! TLS protocol versions as tlskit names them (flags, reports, logs).

use rustls::version::{TLS12, TLS13};
use rustls::SupportedProtocolVersion;

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

impl TlsVersion {
    /// rustls's protocol version.
    pub fn rustls(self) -> &'static SupportedProtocolVersion {
        match self {
            Self::Tls12 => &TLS12,
            Self::Tls13 => &TLS13,
        }
    }
}

/// A protocol version as tlskit spells it everywhere (reports, logs): `TLSv1.3`, `TLSv1.2`
/// (rustls's own names, `TLSv1_3`, are Rust identifiers); empty before a handshake.
pub fn version_name(v: Option<rustls::ProtocolVersion>) -> String {
    match v {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".into(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".into(),
        Some(rustls::ProtocolVersion::TLSv1_1) => "TLSv1.1".into(),
        Some(rustls::ProtocolVersion::TLSv1_0) => "TLSv1.0".into(),
        Some(v) => format!("0x{:04x}", u16::from(v)),
        None => String::new(),
    }
}
