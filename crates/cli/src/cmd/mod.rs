//! One module per command group.

pub(crate) mod acme;
pub(crate) mod ca_serve;
pub(crate) mod ctl;
pub(crate) mod doctor;
pub(crate) mod install;
pub(crate) mod net;
pub(crate) mod pkcs11;
pub(crate) mod pki;
pub(crate) mod probe;
pub(crate) mod store;
pub(crate) mod trust;
pub(crate) mod verify;

use std::path::PathBuf;
use std::time::Duration;

use tlskit_client::starttls::Starttls;
use tlskit_store::Source;

/// A value parser that offers `values` to shell completion (bash, zsh and fish complete
/// them as values, not file names) and otherwise parses as `inner`: the flag accepts and
/// refuses exactly what `inner` does, with its messages (the `serve` flags are checked by
/// tlskit_server, which names the flag or the config key and the values it takes).
#[derive(Clone)]
pub(crate) struct Offer<P> {
    values: Vec<&'static str>,
    inner: P,
}

/// `inner`, offering `values` to completion.
pub(crate) fn offer<P>(values: &[&'static str], inner: P) -> Offer<P> {
    Offer {
        values: values.to_vec(),
        inner,
    }
}

/// A free-form string that completes as one of `values` (the library checks it).
pub(crate) fn offer_str(values: &[&'static str]) -> Offer<clap::builder::StringValueParser> {
    offer(values, clap::builder::StringValueParser::new())
}

/// A flag's parser: the value, or why it is refused (clap reports it as a usage error).
pub(crate) type Parse<T> = fn(&str) -> Result<T, String>;

/// The names of the verification profiles (`--profile` and its kin).
pub(crate) const PROFILES: &[&str] = &["browser", "webpki", "rfc5280"];

/// Log levels of `--log-level`.
pub(crate) const LOG_LEVELS: &[&str] = &["off", "error", "warn", "info", "debug"];

/// TLS versions of `--tls-version`.
pub(crate) const TLS_VERSIONS: &[&str] = &["1.2", "1.3"];

/// `--reason` of `acme revoke` and `ca revoke`: an RFC 5280 reason, code or name.
pub(crate) fn reason_parser() -> Offer<Parse<tlskit_x509::RevocationReason>> {
    offer(
        &tlskit_x509::RevocationReason::CHOOSABLE_CODES,
        |s: &str| {
            s.parse::<tlskit_x509::RevocationReason>()
                .map_err(|e| e.to_string())
        },
    )
}

/// `--profile`, `--client-ca-profile`, ...: a verification profile, completed by name.
pub(crate) fn profile_parser() -> Offer<Parse<tlskit_verify::Profile>> {
    offer(PROFILES, verify::parse_profile)
}

/// `--allow RULE` and its kin: the codes of the rules that can be lifted, completed.
pub(crate) fn rule_parser() -> Offer<Parse<tlskit_verify::Rule>> {
    Offer {
        values: tlskit_verify::Rule::ALL
            .iter()
            .filter(|r| r.allowable())
            .map(|r| r.code())
            .collect(),
        inner: verify::parse_rule,
    }
}

impl<P> clap::builder::TypedValueParser for Offer<P>
where
    P: clap::builder::TypedValueParser,
{
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        self.inner.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.values
                .iter()
                .map(|v| clap::builder::PossibleValue::new(*v)),
        ))
    }
}

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
    #[arg(long, value_name = "VERSION", value_parser = offer_str(TLS_VERSIONS), hide_possible_values = true)]
    pub(crate) tls_version: Vec<String>,
    /// Seconds allowed for the TCP connect and for the handshake, each (more than 0, at
    /// most 86400).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_timeout)]
    timeout: Duration,
    /// Upgrade a mail protocol with STARTTLS first: smtp, imap or pop3.
    #[arg(long, value_name = "PROTO", value_parser = offer(&["smtp", "imap", "pop3"], parse_starttls as Parse<Starttls>), hide_possible_values = true)]
    starttls: Option<Starttls>,
    /// How the server's chain is verified: browser (default: refuses what browsers
    /// refuse, reports the rest as warnings), webpki (refuses every RFC 5280 and CA/B
    /// Forum BR rule) or rfc5280.
    #[arg(long, value_name = "PROFILE", default_value = "browser", value_parser = profile_parser(), hide_possible_values = true)]
    pub(crate) profile: tlskit_verify::Profile,
    /// Do not check this rule when verifying the server (its code, e.g. eku-in-root;
    /// repeatable).
    #[arg(long, value_name = "RULE", value_parser = rule_parser(), hide_possible_values = true)]
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

/// The ACME account and CA-trust flags `serve` and `acme issue|renew|revoke` share
/// (flattened into both), read into [`tlskit_acme::AcmeSettings`] by [`Self::onto`] (the
/// `acme` commands) or onto `serve`'s settings by [`Self::onto_serve`].
#[derive(clap::Args)]
pub(crate) struct AcmeArgs {
    /// ACME storage directory: the account and its key, certificates (created 0700).
    /// `acme` commands: default $HOME/.local/share/tlskit/acme. `serve`: not used, and not
    /// needed, with --shared-state (the fleet's ACME state is in Redis).
    #[arg(long, value_name = "DIR")]
    pub(crate) acme_storage: Option<PathBuf>,
    /// Contact address for the ACME account (when it is created).
    #[arg(long, value_name = "ADDR")]
    acme_email: Option<String>,
    /// Trust anchors for the CA's HTTPS (file, dir, snapshot, system) [default: system].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    acme_roots: Vec<String>,
    /// Rule set the CA's HTTPS certificate is checked against (as connect's --profile):
    /// browser (default), webpki or rfc5280.
    #[arg(long, value_name = "PROFILE", value_parser = profile_parser(), hide_possible_values = true)]
    acme_roots_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on the CA's HTTPS certificate (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = rule_parser(), hide_possible_values = true)]
    acme_roots_allow: Vec<tlskit_verify::Rule>,
    /// The CA's issuing roots (file, dir, snapshot): a new certificate that does not verify
    /// against them is refused (`acme` commands: exit 2) [default: not checked].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    acme_issuer_roots: Vec<String>,
    /// External account binding (RFC 8555 7.3.4): the key ID the CA gave, for a CA that
    /// requires one when the account is created (ZeroSSL, Google, private CAs).
    #[arg(long, value_name = "ID", requires = "acme_eab_hmac_key_file")]
    acme_eab_kid: Option<String>,
    /// The file holding the CA's EAB HMAC key, base64url as the CA gives it (never
    /// printed or logged).
    #[arg(long, value_name = "FILE", requires = "acme_eab_kid")]
    acme_eab_hmac_key_file: Option<PathBuf>,
}

impl AcmeArgs {
    /// The flags given onto `s` (storage aside: its default differs between commands).
    pub(crate) fn onto(&self, s: &mut tlskit_acme::AcmeSettings) -> anyhow::Result<()> {
        s.email.clone_from(&self.acme_email);
        s.roots = sources(&self.acme_roots);
        if let Some(p) = self.acme_roots_profile {
            s.roots_profile = p;
        }
        s.roots_allow.clone_from(&self.acme_roots_allow);
        s.issuer_roots = sources(&self.acme_issuer_roots);
        if let (Some(kid), Some(file)) = (&self.acme_eab_kid, &self.acme_eab_hmac_key_file) {
            s.eab = Some(
                tlskit_acme::Eab::from_file(kid, file)
                    .map_err(|e| anyhow::anyhow!("--acme-eab-hmac-key-file: {e}"))?,
            );
        }
        Ok(())
    }

    /// The flags given onto `serve`'s settings (a flag not given leaves the field `None`,
    /// so the config file's value counts).
    pub(crate) fn onto_serve(self, s: &mut tlskit_server::ServeSettings) {
        let given = |v: Vec<String>| (!v.is_empty()).then_some(v);
        s.acme_storage = self.acme_storage;
        s.acme_email = self.acme_email;
        s.acme_roots = given(self.acme_roots);
        s.acme_roots_profile = self.acme_roots_profile;
        s.acme_roots_allow = (!self.acme_roots_allow.is_empty()).then_some(self.acme_roots_allow);
        s.acme_issuer_roots = given(self.acme_issuer_roots);
        s.acme_eab_kid = self.acme_eab_kid;
        s.acme_eab_hmac_key_file = self.acme_eab_hmac_key_file;
    }
}

/// DNS-01's flags, shared by `serve --acme` and `acme issue|renew` (flattened into both):
/// who writes the `_acme-challenge` TXT records and where they are checked.
#[derive(clap::Args)]
pub(crate) struct AcmeDnsArgs {
    /// DNS-01: the server taking RFC 2136 updates of the TXT records (IP[:PORT], port 53
    /// when none).
    #[arg(long, value_name = "ADDR")]
    acme_dns_update: Option<String>,
    /// DNS-01: the BIND key file (as `tsig-keygen` writes it) whose TSIG key signs the
    /// updates.
    #[arg(long, value_name = "FILE")]
    acme_dns_tsig_key: Option<PathBuf>,
    /// DNS-01: where the records are checked before the CA validates (IP[:PORT])
    /// [default: each of the zone's name servers].
    #[arg(long, value_name = "ADDR")]
    acme_dns_resolver: Option<String>,
    /// DNS-01: a program run as `PROGRAM add|remove NAME VALUE` that writes the records
    /// (any DNS API; instead of --acme-dns-update).
    #[arg(long, value_name = "PROGRAM")]
    acme_dns_exec: Option<PathBuf>,
}

impl AcmeDnsArgs {
    /// Whether a writer (update server or hook) is given.
    pub(crate) fn writer_given(&self) -> bool {
        self.acme_dns_update.is_some() || self.acme_dns_exec.is_some()
    }

    /// The flags onto `s` (the `acme` commands).
    pub(crate) fn onto(&self, s: &mut tlskit_acme::AcmeSettings) -> anyhow::Result<()> {
        let server = |v: &Option<String>| v.as_deref().map(tlskit_acme::dns_server).transpose();
        s.dns.update = server(&self.acme_dns_update)?;
        s.dns.resolver = server(&self.acme_dns_resolver)?;
        s.dns.tsig_key.clone_from(&self.acme_dns_tsig_key);
        s.dns.exec.clone_from(&self.acme_dns_exec);
        Ok(())
    }

    /// The flags onto `serve`'s settings (not given: the config file's value counts).
    pub(crate) fn onto_serve(self, s: &mut tlskit_server::ServeSettings) {
        s.acme_dns_update = self.acme_dns_update;
        s.acme_dns_tsig_key = self.acme_dns_tsig_key;
        s.acme_dns_resolver = self.acme_dns_resolver;
        s.acme_dns_exec = self.acme_dns_exec;
    }
}

/// Trust store sources as given on the command line.
fn sources(list: &[String]) -> Vec<Source> {
    list.iter().map(|s| Source::from_arg(s)).collect()
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
