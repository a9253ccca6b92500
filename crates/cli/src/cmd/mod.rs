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

use std::time::Duration;

use tlskit_client::starttls::Starttls;
use tlskit_store::Source;

/// The peer flags `connect` and `probe` share (flattened into both), read once into
/// [`tlskit_client::PeerOptions`].
#[derive(clap::Args)]
pub(crate) struct PeerArgs {
    /// HOST:PORT of the server (HOST alone: port 443; [v6]:PORT for IPv6 literals).
    target: String,
    /// Trust store sources to verify the server against [default: system].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    roots: Vec<String>,
    /// Name to send (SNI) and verify; U-labels are converted by UTS #46 [default: HOST].
    #[arg(long, value_name = "NAME")]
    servername: Option<String>,
    /// TLS versions to offer (repeatable, or comma-separated): 1.2, 1.3. Default both.
    #[arg(long, value_name = "VERSION")]
    pub(crate) tls_version: Vec<String>,
    /// Seconds allowed for the TCP connect and for the handshake, each (more than 0, at
    /// most 86400).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_timeout)]
    timeout: Duration,
    /// Upgrade a mail protocol with STARTTLS first: smtp, imap or pop3.
    #[arg(long, value_name = "PROTO", value_parser = parse_starttls)]
    starttls: Option<Starttls>,
    /// How the server's chain is verified: browser (default: refuses what browsers
    /// refuse, reports the rest as warnings), webpki (refuses every RFC 5280 and CA/B
    /// Forum BR rule) or rfc5280.
    #[arg(long, value_name = "PROFILE", default_value = "browser", value_parser = verify::parse_profile)]
    pub(crate) profile: tlskit_verify::Profile,
    /// Do not check this rule when verifying the server (its code, e.g. eku-in-root;
    /// repeatable).
    #[arg(long, value_name = "RULE", value_parser = verify::parse_rule)]
    allow: Vec<tlskit_verify::Rule>,
}

impl PeerArgs {
    /// The options of the connection, offering `versions` (the caller reads
    /// `--tls-version` and its aliases).
    pub(crate) fn options(
        self,
        versions: Vec<tlskit_tls::TlsVersion>,
    ) -> tlskit_client::PeerOptions {
        let mut peer = tlskit_client::PeerOptions::new(with_default_port(&self.target));
        peer.starttls = self.starttls;
        peer.server_name = self.servername;
        peer.roots = self.roots.iter().map(|s| Source::from_arg(s)).collect();
        peer.versions = versions;
        peer.timeout = self.timeout;
        peer.profile = self.profile;
        peer.allow = self.allow;
        peer
    }
}

/// Longest `--timeout` of `connect` and `probe`: one day (a larger one would overflow the
/// runtime's clock arithmetic long before it is useful).
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// `--timeout SECS` of `connect` and `probe`: a finite number of seconds, at least 1 ms and
/// at most a day (clap reports a bad value as a usage error, exit 2).
pub(crate) fn parse_timeout(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| "not a number of seconds".to_string())?;
    if !(v.is_finite() && (0.001..=MAX_TIMEOUT_SECS).contains(&v)) {
        return Err(format!(
            "must be a number of seconds from 0.001 to {MAX_TIMEOUT_SECS}"
        ));
    }
    Duration::try_from_secs_f64(v).map_err(|e| e.to_string())
}

/// `--starttls PROTO` of `connect` and `probe` (clap reports a bad value as a usage error,
/// exit 2).
pub(crate) fn parse_starttls(s: &str) -> Result<Starttls, String> {
    Starttls::parse(s).ok_or_else(|| "use smtp, imap or pop3".to_string())
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
    use super::{parse_timeout, with_default_port};

    #[test]
    fn timeout_is_finite_positive_and_bounded() {
        assert_eq!(parse_timeout("10"), Ok(std::time::Duration::from_secs(10)));
        assert_eq!(
            parse_timeout("0.5"),
            Ok(std::time::Duration::from_millis(500))
        );
        for bad in [
            "0", "-1", "1e30", "inf", "NaN", "86401", "0.0001", "ten", "",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

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
