//! One module per command group.

pub(crate) mod doctor;
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
