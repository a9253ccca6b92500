//! TLS errors said in words: rustls's `Display` writes alerts and certificate errors
//! with Rust names (`received fatal alert: BadCertificate`, `Other(...)`); these helpers
//! give the RFC 8446 alert names, tlskit's refusal sentences and variant names in words.
//! A leaf: it imports nothing else of this crate, so errors, ACME and the clients all
//! reach it without a circle.

/// A TLS error for people. rustls's Display shows a received alert and its certificate
/// errors with Rust debug names (`received fatal alert: BadCertificate`,
/// `invalid peer certificate: UnknownIssuer`); these read as sentences with the alert's
/// RFC 8446 name and number, and tlskit's own refusal sentence.
pub fn tls_text(e: &rustls::Error) -> String {
    match e {
        rustls::Error::AlertReceived(a) => {
            let code = u8::from(*a);
            format!(
                "the server sent the fatal alert {} ({code}){}",
                alert_name(code),
                match code {
                    42 | 46 | 48 | 116 => ": it refused the client certificate (or its absence)",
                    40 => ": no parameters in common, or the server refused the client",
                    70 => ": no TLS version in common",
                    112 => ": the server has no certificate for this name",
                    _ => "",
                }
            )
        }
        // rustls's Display writes these with the Rust name of the variant
        // (`peer is incompatible: NoCipherSuitesInCommon`): said in words instead.
        rustls::Error::PeerIncompatible(why) => {
            format!("peer is incompatible: {}", words(&format!("{why:?}")))
        }
        rustls::Error::PeerMisbehaved(why) => {
            format!("peer misbehaved: {}", words(&format!("{why:?}")))
        }
        rustls::Error::InvalidMessage(why) => {
            format!("received a corrupt message: {}", words(&format!("{why:?}")))
        }
        rustls::Error::InconsistentKeys(why) => format!(
            "the private key does not belong to the certificate ({})",
            words(&format!("{why:?}"))
        ),
        rustls::Error::InappropriateHandshakeMessage { .. }
        | rustls::Error::InappropriateMessage { .. } => {
            "received a message the handshake did not expect at this point".to_string()
        }
        other => match tlskit_verify::CertificateRefusal::of(other) {
            Some(r) => format!("invalid peer certificate: {r}"),
            None => other.to_string(),
        },
    }
}

/// A Rust variant name in words: `NoCipherSuitesInCommon` -> `no cipher suites in
/// common`; anything after the name (fields) is dropped.
fn words(name: &str) -> String {
    let name = name
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .unwrap_or("");
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c == '_' {
            out.push(' ');
        } else if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with(' ') {
                out.push(' ');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The rustls error inside the I/O error of a handshake (tokio-rustls wraps it), if any.
pub fn io_rustls(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
}

/// [`tls_text`] for the I/O error of a handshake that may wrap a rustls error.
pub fn io_tls_text(e: &std::io::Error) -> String {
    match io_rustls(e) {
        Some(t) => tls_text(t),
        None => e.to_string(),
    }
}

/// The TLS alert's name in RFC 8446 6 (and RFC 5246 7.2 for the older ones).
fn alert_name(code: u8) -> &'static str {
    match code {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        22 => "record_overflow",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        113 => "bad_certificate_status_response",
        115 => "unknown_psk_identity",
        116 => "certificate_required",
        120 => "no_application_protocol",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_read_as_names_not_debug() {
        let t = tls_text(&rustls::Error::AlertReceived(
            rustls::AlertDescription::BadCertificate,
        ));
        assert!(t.contains("bad_certificate (42)"), "{t}");
        assert!(!t.contains("BadCertificate"), "{t}");
        let t = tls_text(&rustls::CertificateError::UnknownIssuer.into());
        assert!(t.contains("unknown issuer"), "{t}");
        assert!(!t.contains("UnknownIssuer"), "{t}");
    }

    #[test]
    fn rustls_variant_names_read_as_words() {
        let t = tls_text(&rustls::Error::PeerIncompatible(
            rustls::PeerIncompatible::NoCipherSuitesInCommon,
        ));
        assert_eq!(t, "peer is incompatible: no cipher suites in common");
        let t = tls_text(&rustls::Error::InvalidMessage(
            rustls::InvalidMessage::MessageTooLarge,
        ));
        assert_eq!(t, "received a corrupt message: message too large");
    }
}
