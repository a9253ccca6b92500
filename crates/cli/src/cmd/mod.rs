//! One module per command group.

pub(crate) mod acme;
pub(crate) mod doctor;
pub(crate) mod install;
pub(crate) mod net;
pub(crate) mod pkcs11;
pub(crate) mod pki;
pub(crate) mod probe;
pub(crate) mod store;
pub(crate) mod verify;

/// `--starttls PROTO` of `connect` and `probe` (clap reports a bad value as a usage error,
/// exit 2).
pub(crate) fn parse_starttls(s: &str) -> Result<tlskit_net::starttls::Starttls, String> {
    tlskit_net::starttls::Starttls::parse(s).ok_or_else(|| "use smtp, imap or pop3".to_string())
}

/// HOST:PORT as given, or HOST with port 443 when no port is given (`example.com`,
/// `192.0.2.1`, `[2001:db8::1]` or a bare `2001:db8::1`), as browsers and s_client do.
pub(crate) fn with_default_port(target: &str) -> String {
    if target.parse::<std::net::SocketAddr>().is_ok() {
        return target.to_string();
    }
    if target.parse::<std::net::Ipv6Addr>().is_ok() {
        return format!("[{target}]:443");
    }
    if target.starts_with('[') {
        return if target.ends_with(']') {
            format!("{target}:443")
        } else {
            target.to_string()
        };
    }
    if target.contains(':') {
        target.to_string()
    } else {
        format!("{target}:443")
    }
}

#[cfg(test)]
mod tests {
    use super::with_default_port;

    #[test]
    fn port_443_when_none_is_given() {
        for (given, want) in [
            ("example.com", "example.com:443"),
            ("example.com:8443", "example.com:8443"),
            ("192.0.2.1", "192.0.2.1:443"),
            ("192.0.2.1:25", "192.0.2.1:25"),
            ("2001:db8::1", "[2001:db8::1]:443"),
            ("[2001:db8::1]", "[2001:db8::1]:443"),
            ("[2001:db8::1]:8443", "[2001:db8::1]:8443"),
        ] {
            assert_eq!(with_default_port(given), want, "{given}");
        }
    }
}
