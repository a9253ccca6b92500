//! The settings of `tlskit serve`, typed and owned here: one [`ServeSettings`] per source
//! (the command line's flags, the TOML file of `--config`), [`ServeSettings::merge`] of
//! the two (flags win), and [`ServeSettings::into_config`], which checks every range and
//! every setting that needs or excludes another, and makes the [`ServeConfig`].
//!
//! Every setting is one field of [`ServeSettings`], declared once in the list below: its
//! name is the TOML key, and its flag is the same with dashes (`handshake_timeout`,
//! `--handshake-timeout`). A value is typed when it is read (a file's when the file is
//! loaded, a flag's when the caller maps it); one that is not one of its words (`respond
//! = "x"`) is kept aside ([`ValueError`], [`ServeSettings::set_invalid`]) and refused by
//! `into_config` where `serve` has always checked that setting, naming it the way `serve`
//! always has (`--respond x: use http or echo`), unless the merge replaced it. Ranges are
//! checked on the value that wins the merge, naming where it came from: the flag, or
//! `FILE: key =`.
//!
//! ```toml
//! listen = ["0.0.0.0:443", "[::]:443"]
//! cert = "/etc/tlskit/chain.pem"
//! key = "/etc/tlskit/key.pem"
//! sni_dir = "/etc/tlskit/sni"
//! backend = "127.0.0.1:8080"
//! client_ca = ["/etc/tlskit/clients.pem"]
//! client_ca_profile = "rfc5280"       # default "browser"
//! client_ca_allow = ["aki-missing"]   # rules not checked on client certificates
//! compress = "brotli,zlib"
//! metrics = "127.0.0.1:9100"
//! control = "/run/tlskit/control.sock"   # for `tlskit ctl` (a Unix socket, mode 0600)
//! handshake_timeout = 10
//! header_timeout = 10
//! idle_timeout = 60
//! max_connections = 10000
//! max_client_hello = 16384
//! handshake_budget = 16777216
//! # Certificates from an ACME CA instead of cert/key:
//! # acme = "https://acme-v02.api.letsencrypt.org/directory"
//! # domain = ["www.example.com"]
//! # acme_storage = "/var/lib/tlskit/acme"
//! # http_listen = "[::]:80"
//! # acme_roots = ["/etc/tlskit/acme-ca.pem"]  # anchors for the CA's HTTPS (default system)
//! # acme_roots_profile = "rfc5280"           # how the CA's HTTPS certificate is checked
//! # acme_roots_allow = ["aki-missing"]
//! # acme_issuer_roots = ["/etc/tlskit/acme-ca-roots.pem"]   # new certificates must chain to them
//! # DNS-01 (wildcards): RFC 2136 updates signed with a TSIG key, or a hook program
//! # acme_challenge = "dns-01"
//! # acme_dns_update = "192.0.2.53:53"
//! # acme_dns_tsig_key = "/etc/tlskit/acme-update.key"   # as tsig-keygen writes it
//! # acme_dns_resolver = "192.0.2.53"   # where propagation is checked (default: the zone's NS)
//! # acme_dns_exec = "/usr/local/bin/dns-hook"   # run as: dns-hook add|remove NAME VALUE
//! # acme_eab_kid = "KEY-ID"                                   # external account binding, when the
//! # acme_eab_hmac_key_file = "/etc/tlskit/acme-eab.key"      # CA requires one (key: base64url)
//! # A fleet (ticket keys and ACME state in Redis; acme_storage then not needed):
//! # shared_state = "rediss://tlskit:PASSWORD@redis.internal:6380/2"
//! # shared_state_key = "/etc/tlskit/fleet.kek"
//! # shared_state_ca = "/etc/tlskit/redis-ca.pem"
//! # shared_state_ca_profile = "rfc5280"   # how the Redis server's certificate is checked
//! # shared_state_ca_allow = ["aki-missing"]
//! log_format = "json"
//! expiry_warning_days = 21
//! ```

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tlskit_store::Source;
use tlskit_tls::log::Level;
use tlskit_tls::{Compression, NetError, TlsVersion};
use tlskit_verify::{Profile, Rule};
use tlskit_x509::text::Escaped;

use crate::config::{ranges, Range};
use crate::config::{CaHints, Mode, ServeConfig};

/// Why the settings of `serve` cannot make a configuration. Every message names the flag
/// or the config key (and its file) it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The config file could not be read, is not TOML, or holds an unknown key or a value
    /// of the wrong type (`FILE: reason`).
    #[error(transparent)]
    File(NetError),
    /// A duration or size outside its range (`configuration: --flag V is out of range: key
    /// must be MIN to MAX UNIT`, or `FILE: key =` for a value from the file).
    #[error(transparent)]
    OutOfRange(NetError),
    /// A value that is not one of the accepted ones.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// An address that does not parse or resolve.
    #[error("{setting} {value}: not an address (expected HOST:PORT)")]
    Address {
        /// The flag.
        setting: &'static str,
        /// The address as given.
        value: String,
        /// The resolver's reason.
        #[source]
        source: std::io::Error,
    },
    /// An address that resolves to nothing.
    #[error("{setting} {value}: resolves to no address")]
    NoAddress {
        /// The flag.
        setting: &'static str,
        /// The address as given.
        value: String,
    },
    /// A setting that needs another one, or excludes one that is given.
    #[error("{0}")]
    Inconsistent(&'static str),
    /// `shared_state_ca_profile` or `_allow` with a Redis URL that is not `rediss://`.
    #[error(
        "--shared-state-ca-profile and --shared-state-ca-allow need a rediss:// URL (TLS), \
         not {}",
        tlskit_x509::text::redact(.0)
    )]
    NotTls(String),
    /// An ACME domain name that is not a DNS name.
    #[cfg(feature = "acme")]
    #[error(transparent)]
    Acme(tlskit_acme::AcmeError),
    /// A setting of an optional part this build was compiled without (feature `acme` or
    /// `fleet`).
    #[error("{0}: this build of tlskit-server has no support for it (feature {1})")]
    NotBuilt(&'static str, &'static str),
}

/// A value of one setting that is not one of the accepted ones. A config file's is kept
/// by [`ServeSettings::load`] and refused by [`ServeSettings::into_config`] unless
/// [`ServeSettings::merge`] replaced it by the caller's (a flag wins over the file, even
/// over a file value that does not parse).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A value that is not one of the accepted words (`--respond x: use http or echo`).
    #[error("{setting} {value}: use {expected}")]
    Choice {
        /// The flag (or key) as messages name it.
        setting: String,
        /// The value, as given (messages escape it).
        value: String,
        /// The accepted words.
        expected: &'static str,
    },
    /// A TLS version that is neither 1.2 nor 1.3.
    #[error("unknown TLS version {0:?} (use 1.2 or 1.3)")]
    TlsVersion(String),
    /// A verification profile or rule code from the config file that is not one (the key
    /// and value, then the verifier's reason).
    #[error("{setting} {value}: {reason}")]
    Verification {
        /// The key (`client_ca_profile`, `acme_roots_allow`).
        setting: String,
        /// The value as the message shows it.
        value: String,
        /// Why it is refused.
        reason: String,
    },
}

/// The log settings of `serve` ([`ServeSettings::take_log`]): the caller's logging's.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogSettings {
    /// `log_level`: off, error, warn, info or debug.
    pub level: Result<Option<Level>, ValueError>,
    /// `log_format`: text or json.
    pub format: Result<Option<LogFormat>, ValueError>,
}

/// What the server does with the plaintext when it has no backend (`respond`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Respond {
    /// Answer HTTP/1.1 requests with 200 and a small body (the default).
    Http,
    /// Send every byte back.
    Echo,
}

/// Whether client certificates are required or only verified when sent (`client_auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A client without a certificate is refused (the default).
    #[default]
    Required,
    /// A certificate is verified when sent.
    Optional,
}

/// How the ACME CA validates control of a name (`acme_challenge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AcmeChallenge {
    /// TLS-ALPN-01 on the TLS listener (the default).
    #[default]
    TlsAlpn01,
    /// HTTP-01 on `http_listen`.
    Http01,
    /// DNS-01 through `acme_dns_update` (RFC 2136) or `acme_dns_exec`.
    Dns01,
}

/// How `serve` writes its log lines (`log_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LogFormat {
    /// `ts=... level=... event=... key=value ...` (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for Respond {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "http" => Ok(Self::Http),
            "echo" => Ok(Self::Echo),
            _ => Err(choice("--respond", s, "http or echo")),
        }
    }
}

impl std::str::FromStr for ClientAuth {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "required" => Ok(Self::Required),
            "optional" => Ok(Self::Optional),
            _ => Err(choice("--client-auth", s, "required or optional")),
        }
    }
}

impl std::str::FromStr for CaHints {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "store" => Ok(Self::Store),
            "off" => Ok(Self::Off),
            _ => Err(choice("--ca-hints", s, "store or off")),
        }
    }
}

impl std::str::FromStr for AcmeChallenge {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "tls-alpn-01" => Ok(Self::TlsAlpn01),
            "http-01" => Ok(Self::Http01),
            "dns-01" => Ok(Self::Dns01),
            _ => Err(choice(
                "--acme-challenge",
                s,
                "tls-alpn-01, http-01 or dns-01",
            )),
        }
    }
}

impl std::str::FromStr for LogFormat {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            _ => Err(choice("log_format", &format!("{s:?}"), "text or json")),
        }
    }
}

fn choice(setting: &str, value: &str, expected: &'static str) -> ValueError {
    ValueError::Choice {
        setting: setting.to_string(),
        value: value.to_string(),
        expected,
    }
}

/// A `compress` list (`brotli,zlib`, `none`, empty entries ignored), in preference order.
pub fn parse_compression(list: &str) -> Result<Vec<Compression>, ValueError> {
    let mut out = Vec::new();
    for c in list.split(',').map(str::trim) {
        match c {
            "brotli" => out.push(Compression::Brotli),
            "zlib" => out.push(Compression::Zlib),
            "none" | "" => {}
            o => return Err(choice("--compress", o, "brotli, zlib or none")),
        }
    }
    Ok(out)
}

/// `tls_version` values (each may be a comma list): 1.2, 1.3 (also TLSv1.2, tls1.2).
pub fn parse_tls_versions(list: &[String]) -> Result<Vec<TlsVersion>, ValueError> {
    list.iter()
        .flat_map(|s| s.split(','))
        .map(|v| match v.trim() {
            "1.2" | "tls1.2" | "TLSv1.2" => Ok(TlsVersion::Tls12),
            "1.3" | "tls1.3" | "TLSv1.3" => Ok(TlsVersion::Tls13),
            other => Err(ValueError::TlsVersion(other.to_string())),
        })
        .collect()
}

/// How a value of one setting is read from the config file: its TOML form (`Raw`) and
/// the conversion to the typed value, given the key and the file's directory.
trait FileValue: Sized {
    type Raw: serde::de::DeserializeOwned;
    fn from_file(raw: Self::Raw, key: &'static str, base: &Path) -> Result<Self, ValueError>;
}

macro_rules! as_is {
    ($($t:ty),*) => {$(
        impl FileValue for $t {
            type Raw = $t;
            fn from_file(raw: $t, _: &'static str, _: &Path) -> Result<Self, ValueError> {
                Ok(raw)
            }
        }
    )*};
}
as_is!(String, Vec<String>, bool, f64, u64, u32, usize);

macro_rules! words {
    ($($t:ty),*) => {$(
        impl FileValue for $t {
            type Raw = String;
            fn from_file(raw: String, _: &'static str, _: &Path) -> Result<Self, ValueError> {
                raw.parse()
            }
        }
    )*};
}
words!(Respond, ClientAuth, CaHints, AcmeChallenge, LogFormat);

impl FileValue for PathBuf {
    type Raw = PathBuf;
    /// Relative to the file's directory; a `pkcs11:` URI (a token key) is no path.
    fn from_file(raw: PathBuf, _: &'static str, base: &Path) -> Result<Self, ValueError> {
        Ok(
            if raw.is_relative() && !raw.to_str().is_some_and(tlskit_pkcs11::is_uri) {
                base.join(raw)
            } else {
                raw
            },
        )
    }
}

impl FileValue for Vec<Compression> {
    type Raw = String;
    fn from_file(raw: String, _: &'static str, _: &Path) -> Result<Self, ValueError> {
        parse_compression(&raw)
    }
}

impl FileValue for Vec<TlsVersion> {
    type Raw = Vec<String>;
    fn from_file(raw: Vec<String>, _: &'static str, _: &Path) -> Result<Self, ValueError> {
        parse_tls_versions(&raw)
    }
}

impl FileValue for Level {
    type Raw = String;
    fn from_file(raw: String, key: &'static str, _: &Path) -> Result<Self, ValueError> {
        Level::parse(&raw).ok_or_else(|| choice(key, &raw, "off, error, warn, info or debug"))
    }
}

impl FileValue for Profile {
    type Raw = String;
    fn from_file(raw: String, key: &'static str, _: &Path) -> Result<Self, ValueError> {
        raw.parse()
            .map_err(|e: tlskit_verify::UnknownName| verification(key, &raw, e.to_string()))
    }
}

impl FileValue for Vec<Rule> {
    type Raw = Vec<String>;
    fn from_file(raw: Vec<String>, key: &'static str, _: &Path) -> Result<Self, ValueError> {
        raw.iter()
            .map(|s| allowable_rule(s).map_err(|e| verification(key, s, e.to_string())))
            .collect()
    }
}

/// A profile or rule of the file refused: `client_ca_*` quote the value (as `serve`
/// always has), the others show it as it is.
fn verification(key: &'static str, value: &str, reason: String) -> ValueError {
    let value = if key.starts_with("client_ca") {
        format!("{value:?}")
    } else {
        Escaped(value).to_string()
    };
    ValueError::Verification {
        setting: key.to_string(),
        value,
        reason,
    }
}

/// Why a rule code cannot be lifted.
#[derive(Debug, thiserror::Error)]
enum NotAllowable {
    /// No such rule.
    #[error(transparent)]
    Unknown(#[from] tlskit_verify::UnknownName),
    /// rustls-webpki enforces it whatever tlskit's profile says.
    #[error("{0} is enforced by rustls-webpki itself and cannot be allowed")]
    Enforced(String),
}

/// A rule code that may be lifted (as the CLI's `--allow`).
fn allowable_rule(code: &str) -> Result<Rule, NotAllowable> {
    let r = Rule::from_code(code)?;
    if !r.allowable() {
        return Err(NotAllowable::Enforced(code.to_string()));
    }
    Ok(r)
}

/// Where the values of a [`ServeSettings`] came from: the keys taken from a config file,
/// and that file (for range refusals that name `FILE: key =`); and the file's values that
/// did not parse, refused by `into_config` where `serve` has always checked that key.
#[derive(Debug, Clone, Default, PartialEq)]
struct Origin {
    file: Option<PathBuf>,
    keys: Vec<&'static str>,
    pending: Vec<(&'static str, ValueError)>,
}

/// Declares every setting once: the field of [`ServeSettings`] (its name is the TOML key),
/// the field of the file's TOML schema (the same order: serde lists the keys in it when
/// one is unknown), the conversion and the merge.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $name:ident: $ty:ty, )*) => {
        /// The settings of `serve` from one source, or merged from two: every field is
        /// `None` when not given (then [`ServeSettings::into_config`] uses the default).
        /// A field's name is its TOML key; its flag is the same with dashes.
        #[derive(Debug, Clone, Default, PartialEq)]
        #[non_exhaustive]
        pub struct ServeSettings {
            $( $(#[doc = $doc])* pub $name: Option<$ty>, )*
            origin: Origin,
        }

        /// The TOML schema of the config file: each key in its file form.
        #[derive(Default, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FileFields {
            $( $name: Option<<$ty as FileValue>::Raw>, )*
        }

        impl ServeSettings {
            fn from_fields(fields: FileFields, file: &Path) -> Self {
                let base = file.parent().unwrap_or(Path::new("."));
                let mut s = Self::default();
                s.origin.file = Some(file.to_path_buf());
                $(
                    if let Some(raw) = fields.$name {
                        let key = stringify!($name);
                        match FileValue::from_file(raw, key, base) {
                            Ok(v) => {
                                s.$name = Some(v);
                                s.origin.keys.push(key);
                            }
                            Err(e) => s.origin.pending.push((key, e)),
                        }
                    }
                )*
                s
            }

            fn merge_fields(&mut self, other: Self) {
                $(
                    let key = stringify!($name);
                    if self.$name.is_none() && self.pending(key).is_none() {
                        if other.$name.is_some() {
                            self.$name = other.$name;
                            if other.origin.keys.contains(&key) {
                                self.origin.keys.push(key);
                            }
                        }
                        self.origin.pending.extend(
                            other.origin.pending.iter().filter(|(k, _)| *k == key).cloned(),
                        );
                    }
                )*
            }
        }
    };
}

settings! {
    /// Addresses to listen on (`HOST:PORT`, `:PORT` for every IPv4 address).
    listen: Vec<String>,
    /// PEM file: leaf certificate followed by its chain.
    cert: PathBuf,
    /// PEM private key of the leaf, or a `pkcs11:` URI.
    key: PathBuf,
    /// Directory of NAME.crt (or NAME.pem) + NAME.key pairs, chosen by SNI.
    sni_dir: PathBuf,
    /// Forward the plaintext to this `HOST:PORT`.
    backend: String,
    /// Answer by itself instead of forwarding.
    respond: Respond,
    /// Client-CA trust store sources (`system`, a file, a directory or a snapshot: which
    /// one is decided by the file system when the configuration is made).
    client_ca: Vec<String>,
    /// Client certificates required or optional.
    client_auth: ClientAuth,
    /// Rule set client certificates are checked against (default browser).
    client_ca_profile: Profile,
    /// Rules not checked on client certificates.
    client_ca_allow: Vec<Rule>,
    /// CA names hinted in CertificateRequest.
    ca_hints: CaHints,
    /// Certificate compression, in preference order (empty: none).
    compress: Vec<Compression>,
    /// ALPN protocols to offer.
    alpn: Vec<String>,
    /// ALPN protocols the backend speaks.
    backend_alpn: Vec<String>,
    /// TLS versions to enable (empty: both).
    tls_version: Vec<TlsVersion>,
    /// Prometheus metrics address.
    metrics: String,
    /// Control socket path (`tlskit ctl`), a Unix socket, mode 0600.
    control: PathBuf,
    /// Seconds to finish the handshake.
    handshake_timeout: f64,
    /// Seconds a connection may stay silent.
    idle_timeout: f64,
    /// Seconds for one HTTP request head.
    header_timeout: f64,
    /// Bytes one ClientHello may buffer.
    max_client_hello: usize,
    /// Bytes of all partial ClientHellos together.
    handshake_budget: usize,
    /// Open connections at most.
    max_connections: usize,
    /// Seconds SIGTERM waits for open connections.
    shutdown_grace: f64,
    /// Seconds between session ticket key rotations.
    ticket_rotation: u64,
    /// Send a PROXY protocol v2 header to the backend.
    proxy_protocol: bool,
    /// Redis URL of the fleet's shared state.
    shared_state: String,
    /// The fleet's key-encryption key file.
    shared_state_key: PathBuf,
    /// Refuse to start without Redis.
    shared_state_required: bool,
    /// Seconds between re-reads of the shared keys.
    shared_state_reread: f64,
    /// PEM CA file for a `rediss://` Redis.
    shared_state_ca: PathBuf,
    /// Rule set the Redis server's certificate is checked against.
    shared_state_ca_profile: Profile,
    /// Rules not checked on the Redis server's certificate.
    shared_state_ca_allow: Vec<Rule>,
    /// Do not reload when the files change.
    no_watch: bool,
    /// Log level (the caller's logging; not part of [`ServeConfig`]).
    log_level: Level,
    /// ACME directory URL.
    acme: String,
    /// ACME certificate names.
    domain: Vec<String>,
    /// ACME storage directory.
    acme_storage: PathBuf,
    /// ACME account contact.
    acme_email: String,
    /// Trust anchors for the ACME CA's HTTPS (sources, as `client_ca`).
    acme_roots: Vec<String>,
    /// Rule set the ACME CA's HTTPS certificate is checked against.
    acme_roots_profile: Profile,
    /// Rules not checked on the ACME CA's HTTPS certificate.
    acme_roots_allow: Vec<Rule>,
    /// ACME challenge.
    acme_challenge: AcmeChallenge,
    /// ACME certificate profile to ask for.
    acme_profile: String,
    /// Most seconds between two ACME renewal checks.
    acme_recheck: f64,
    /// Seconds before the first retry after an ACME failure.
    acme_retry: f64,
    /// Plain HTTP listener address.
    http_listen: String,
    /// Log line format (the caller's logging; not part of [`ServeConfig`]).
    log_format: LogFormat,
    /// Days before a served certificate's notAfter from which start and reloads warn.
    expiry_warning_days: u32,
    /// The ACME CA's issuing roots (sources, as `client_ca`): new certificates must
    /// verify against them.
    acme_issuer_roots: Vec<String>,
    /// The RFC 2136 server taking DNS-01's updates (`IP[:PORT]`).
    acme_dns_update: String,
    /// The BIND key file (TSIG) signing DNS-01's updates.
    acme_dns_tsig_key: PathBuf,
    /// Where DNS-01's records are checked before validation (`IP[:PORT]`).
    acme_dns_resolver: String,
    /// The program run as `PROGRAM add|remove NAME VALUE` for DNS-01's records.
    acme_dns_exec: PathBuf,
    /// ACME external account binding: the key ID.
    acme_eab_kid: String,
    /// ACME external account binding: the file holding the HMAC key (base64url).
    acme_eab_hmac_key_file: PathBuf,
}

impl ServeSettings {
    /// No setting given: every default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read the config file at `path` (at most 1 MiB; a FIFO is refused, not waited on):
    /// every value typed, relative paths resolved against the file's directory. A file
    /// that cannot be read, is not TOML, or holds an unknown key or a value of the wrong
    /// TOML type is refused here; a value that is not one of its words (`respond =
    /// "x"`) is kept aside and refused by [`Self::into_config`], unless [`Self::merge`]
    /// replaced it (see [`ValueError`]).
    pub fn load(path: &Path) -> Result<Self, SettingsError> {
        let text = tlskit_io::read_to_string(path, 1 << 20)
            .map_err(|e| SettingsError::File(NetError::file(path, e.kind)))?;
        let fields: FileFields = toml::from_str(&text)
            .map_err(|e| SettingsError::File(NetError::file(path, e.message())))?;
        Ok(Self::from_fields(fields, path))
    }

    /// These settings (the flags), completed by `file`'s where these have none. A
    /// `backend` from the file is dropped when these say `respond`.
    pub fn merge(mut self, mut file: Self) -> Self {
        if self.respond.is_some() {
            file.backend = None;
        }
        self.origin.file = file.origin.file.clone();
        self.merge_fields(file);
        self
    }

    /// The log settings, taken out (they are the caller's logging's, not the server's):
    /// each the value that won the merge, or the file's value that did not parse.
    pub fn take_log(&mut self) -> LogSettings {
        let level = match self.pending("log_level") {
            Some(e) => Err(e.clone()),
            None => Ok(self.log_level.take()),
        };
        let format = match self.pending("log_format") {
            Some(e) => Err(e.clone()),
            None => Ok(self.log_format.take()),
        };
        self.origin
            .pending
            .retain(|(k, _)| *k != "log_level" && *k != "log_format");
        LogSettings { level, format }
    }

    /// Records that `key` (a field's name) was given a value that is not one of its
    /// words: [`Self::into_config`] refuses it where `serve` has always checked that
    /// setting, so that the first problem reported is the same whichever source gave
    /// it. Such a value wins the merge like any other.
    pub fn set_invalid(&mut self, key: &'static str, error: ValueError) {
        self.origin.pending.retain(|(k, _)| *k != key);
        self.origin.pending.push((key, error));
    }

    /// The value of `key` that did not parse, if it still counts.
    fn pending(&self, key: &str) -> Option<&ValueError> {
        self.origin
            .pending
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, e)| e)
    }

    /// Refuses the file's value of `key` that did not parse.
    fn check(&self, key: &str) -> Result<(), SettingsError> {
        match self.pending(key) {
            Some(e) => Err(SettingsError::Value(e.clone())),
            None => Ok(()),
        }
    }

    /// Whether `key` was given, parsed or not.
    fn given(&self, key: &str) -> bool {
        self.origin.keys.contains(&key) || self.origin.pending.iter().any(|(k, _)| *k == key)
    }

    /// Whether `key` was given here (not taken from a config file by [`Self::merge`]).
    fn given_here(&self, key: &str) -> bool {
        !self.origin.keys.contains(&key)
    }

    /// How a refusal names `key`: its flag, or `FILE: key =` when the file gave it.
    fn name_of(&self, range: &Range) -> String {
        if self.given_here(range.key) {
            range.flag()
        } else {
            format!(
                "{}: {} =",
                self.origin
                    .file
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                range.key
            )
        }
    }

    fn secs(&self, v: Option<f64>, range: &Range) -> Result<Option<Duration>, SettingsError> {
        v.map(|v| range.secs(v, &self.name_of(range)))
            .transpose()
            .map_err(SettingsError::OutOfRange)
    }

    fn count(&self, v: Option<u64>, range: &Range) -> Result<Option<usize>, SettingsError> {
        v.map(|v| range.count(v, &self.name_of(range)))
            .transpose()
            .map_err(SettingsError::OutOfRange)
    }

    /// The configuration these settings make, with every default filled in: ranges
    /// checked (a refusal names the flag, or `FILE: key =`), addresses resolved, the
    /// settings that need or exclude each other checked, and the file's values that did
    /// not parse refused, each where `serve` has always checked that setting (the first
    /// problem is the one reported). `log_level` and `log_format` are not part of the
    /// configuration: the caller's logging takes them out with [`Self::take_log`].
    pub fn into_config(self) -> Result<ServeConfig, SettingsError> {
        let s = self;
        let listen = s.listen.clone().unwrap_or_default();
        if listen.is_empty() {
            return Err(SettingsError::Inconsistent(
                "no address to listen on (--listen ADDR)",
            ));
        }
        let (cert, key) = match (s.cert.clone(), s.key.clone(), &s.acme) {
            (Some(c), Some(k), _) => (c, k),
            (None, None, Some(_)) => (PathBuf::new(), PathBuf::new()),
            (None, _, _) => return Err(SettingsError::Inconsistent("--cert FILE is required")),
            (Some(_), None, _) => {
                return Err(SettingsError::Inconsistent("--key FILE is required"))
            }
        };
        let mut cfg = ServeConfig::new(addrs(&listen, "--listen")?, cert, key);
        if s.acme.is_some() {
            cfg.acme = Some(s.acme_settings()?);
        } else if (s.domain.is_some() && s.given_here("domain"))
            || (s.acme_storage.is_some() && s.given_here("acme_storage"))
        {
            return Err(SettingsError::Inconsistent(
                "--domain and --acme-storage need --acme DIRECTORY_URL",
            ));
        } else if (s.acme_roots_profile.is_some() && s.given_here("acme_roots_profile"))
            || (s.acme_roots_allow.is_some() && s.given_here("acme_roots_allow"))
        {
            return Err(SettingsError::Inconsistent(
                "--acme-roots-profile and --acme-roots-allow need --acme DIRECTORY_URL",
            ));
        } else if [
            ("acme_dns_update", s.acme_dns_update.is_some()),
            ("acme_dns_tsig_key", s.acme_dns_tsig_key.is_some()),
            ("acme_dns_resolver", s.acme_dns_resolver.is_some()),
            ("acme_dns_exec", s.acme_dns_exec.is_some()),
        ]
        .iter()
        .any(|(k, set)| *set && s.given_here(k))
        {
            return Err(SettingsError::Inconsistent(
                "--acme-dns-update, --acme-dns-tsig-key, --acme-dns-resolver and \
                 --acme-dns-exec need --acme DIRECTORY_URL",
            ));
        }
        if let Some(h) = &s.http_listen {
            cfg.http_listen = addrs(std::slice::from_ref(h), "--http-listen")?
                .first()
                .copied();
        }
        cfg.sni_dir = s.sni_dir.clone();
        if s.backend.is_some() && s.given("respond") {
            return Err(SettingsError::Inconsistent(
                "--backend and --respond exclude each other",
            ));
        }
        s.check("respond")?;
        cfg.mode = match (s.backend.clone(), s.respond) {
            (Some(b), _) => Mode::Backend(b),
            (None, None | Some(Respond::Http)) => Mode::Http,
            (None, Some(Respond::Echo)) => Mode::Echo,
        };
        cfg.client_ca = sources(s.client_ca.as_deref());
        s.check("client_ca_profile")?;
        cfg.client_ca_profile = s.client_ca_profile.unwrap_or(Profile::Browser);
        s.check("client_ca_allow")?;
        cfg.client_ca_allow = s.client_ca_allow.clone().unwrap_or_default();
        s.check("client_auth")?;
        cfg.client_auth_optional = s.client_auth == Some(ClientAuth::Optional);
        s.check("ca_hints")?;
        cfg.ca_hints = s.ca_hints.unwrap_or(CaHints::Store);
        s.check("compress")?;
        if let Some(c) = &s.compress {
            cfg.compress.clone_from(c);
        }
        cfg.alpn = s.alpn.clone().unwrap_or_default();
        cfg.backend_alpn = s.backend_alpn.clone();
        s.check("tls_version")?;
        if let Some(v) = s.tls_version.clone().filter(|v| !v.is_empty()) {
            cfg.versions = v;
        }
        if let Some(m) = &s.metrics {
            cfg.metrics = addrs(std::slice::from_ref(m), "--metrics")?
                .first()
                .copied();
        }
        if let Some(v) = s.secs(s.handshake_timeout, &ranges::HANDSHAKE_TIMEOUT)? {
            cfg.handshake_timeout = v;
        }
        if let Some(v) = s.secs(s.idle_timeout, &ranges::IDLE_TIMEOUT)? {
            cfg.idle_timeout = v;
        }
        if let Some(v) = s.secs(s.header_timeout, &ranges::HEADER_TIMEOUT)? {
            cfg.header_timeout = v;
        }
        let as_u64 = |v: Option<usize>| v.map(|n| u64::try_from(n).unwrap_or(u64::MAX));
        if let Some(v) = s.count(as_u64(s.max_client_hello), &ranges::MAX_CLIENT_HELLO)? {
            cfg.max_client_hello = v;
        }
        if let Some(v) = s.count(as_u64(s.handshake_budget), &ranges::HANDSHAKE_BUDGET)? {
            cfg.handshake_budget = v;
        }
        if let Some(v) = s.secs(s.shutdown_grace, &ranges::SHUTDOWN_GRACE)? {
            cfg.shutdown_grace = v;
        }
        if let Some(v) = s.count(as_u64(s.max_connections), &ranges::MAX_CONNECTIONS)? {
            cfg.max_connections = v;
        }
        if let Some(v) = s.count(s.ticket_rotation, &ranges::TICKET_ROTATION)? {
            cfg.ticket_rotation = Duration::from_secs(u64::try_from(v).unwrap_or(u64::MAX));
        }
        cfg.proxy_protocol = s.proxy_protocol.unwrap_or(false);
        s.check("shared_state_ca_profile")?;
        s.check("shared_state_ca_allow")?;
        cfg.shared_state = s.shared_settings()?;
        cfg.watch = !s.no_watch.unwrap_or(false);
        cfg.control = s.control.clone();
        if let Some(v) = s.count(
            s.expiry_warning_days.map(u64::from),
            &ranges::EXPIRY_WARNING_DAYS,
        )? {
            cfg.expiry_warning_days = u32::try_from(v).unwrap_or(u32::MAX);
        }
        if cfg.proxy_protocol && !matches!(cfg.mode, Mode::Backend(_)) {
            return Err(SettingsError::Inconsistent(
                "--proxy-protocol needs --backend",
            ));
        }
        Ok(cfg)
    }

    /// The ACME settings (`acme` is given).
    #[cfg(feature = "acme")]
    fn acme_settings(&self) -> Result<crate::optional::AcmeSettings, SettingsError> {
        let url = self.acme.clone().unwrap_or_default();
        let domains = self.domain.clone().unwrap_or_default();
        if domains.is_empty() {
            return Err(SettingsError::Inconsistent(
                "--acme needs at least one --domain NAME",
            ));
        }
        // With shared state the ACME state lives in Redis: no directory is used.
        let storage = match (&self.acme_storage, &self.shared_state) {
            (Some(d), _) => d.clone(),
            (None, Some(_)) => PathBuf::new(),
            (None, None) => {
                return Err(SettingsError::Inconsistent(
                    "--acme needs --acme-storage DIR (or --shared-state URL)",
                ))
            }
        };
        let domains = domains
            .iter()
            .map(|d| tlskit_acme::domain(d))
            .collect::<Result<_, _>>()
            .map_err(SettingsError::Acme)?;
        let mut a = tlskit_acme::AcmeSettings::new(url, domains, storage);
        a.email.clone_from(&self.acme_email);
        a.roots = sources(self.acme_roots.as_deref());
        self.check("acme_roots_profile")?;
        self.check("acme_roots_allow")?;
        a.roots_profile = self.acme_roots_profile.unwrap_or_default();
        a.roots_allow = self.acme_roots_allow.clone().unwrap_or_default();
        self.check("acme_challenge")?;
        if let Some(c) = self.acme_challenge {
            a.challenge = match c {
                AcmeChallenge::TlsAlpn01 => tlskit_acme::ChallengeKind::TlsAlpn01,
                AcmeChallenge::Http01 => tlskit_acme::ChallengeKind::Http01,
                AcmeChallenge::Dns01 => tlskit_acme::ChallengeKind::Dns01,
            };
        }
        let server = |v: &Option<String>| {
            v.as_deref()
                .map(tlskit_acme::dns_server)
                .transpose()
                .map_err(SettingsError::Acme)
        };
        a.dns.update = server(&self.acme_dns_update)?;
        a.dns.resolver = server(&self.acme_dns_resolver)?;
        a.dns.tsig_key.clone_from(&self.acme_dns_tsig_key);
        a.dns.exec.clone_from(&self.acme_dns_exec);
        a.profile.clone_from(&self.acme_profile);
        if let Some(v) = self.secs(self.acme_recheck, &ranges::ACME_RECHECK)? {
            a.recheck = v;
        }
        if let Some(v) = self.secs(self.acme_retry, &ranges::ACME_RETRY)? {
            a.retry_base = v;
        }
        a.issuer_roots = sources(self.acme_issuer_roots.as_deref());
        match (&self.acme_eab_kid, &self.acme_eab_hmac_key_file) {
            (Some(kid), Some(file)) => {
                a.eab = Some(tlskit_acme::Eab::from_file(kid, file).map_err(SettingsError::Acme)?)
            }
            (None, None) => {}
            _ => {
                return Err(SettingsError::Inconsistent(
                    "--acme-eab-kid and --acme-eab-hmac-key-file go together",
                ))
            }
        }
        Ok(a)
    }

    /// A build without ACME refuses `acme`.
    #[cfg(not(feature = "acme"))]
    fn acme_settings(&self) -> Result<crate::optional::AcmeSettings, SettingsError> {
        Err(SettingsError::NotBuilt("--acme", "acme"))
    }

    /// The fleet's settings: `None` without `shared_state`; the CA knobs need a
    /// `rediss://` URL, the URL needs the key file and the key file the URL.
    fn shared_settings(&self) -> Result<Option<crate::optional::SharedSettings>, SettingsError> {
        let ca_check_given =
            self.shared_state_ca_profile.is_some() || self.shared_state_ca_allow.is_some();
        match (&self.shared_state, &self.shared_state_key) {
            (Some(url), _) if ca_check_given && !url.starts_with("rediss://") => {
                Err(SettingsError::NotTls(url.clone()))
            }
            (Some(url), Some(key_file)) => self.fleet(url, key_file).map(Some),
            (Some(_), None) => Err(SettingsError::Inconsistent(
                "--shared-state needs --shared-state-key FILE (32 bytes, mode 0600)",
            )),
            (None, Some(_)) => Err(SettingsError::Inconsistent(
                "--shared-state-key needs --shared-state URL",
            )),
            (None, None) if self.shared_state_ca.is_some() || ca_check_given => {
                Err(SettingsError::Inconsistent(
                    "--shared-state-ca, --shared-state-ca-profile and --shared-state-ca-allow \
                     need --shared-state rediss://URL",
                ))
            }
            (None, None) => Ok(None),
        }
    }

    #[cfg(feature = "fleet")]
    fn fleet(
        &self,
        url: &str,
        key_file: &Path,
    ) -> Result<crate::optional::SharedSettings, SettingsError> {
        let mut s = tlskit_fleet::SharedSettings::new(url, key_file);
        s.required = self.shared_state_required.unwrap_or(false);
        // At least 0.1 s: a zero interval would hammer Redis.
        s.reread = self
            .secs(self.shared_state_reread, &ranges::SHARED_STATE_REREAD)?
            .unwrap_or(tlskit_fleet::shared::REREAD);
        s.ca = self.shared_state_ca.clone();
        s.ca_profile = self.shared_state_ca_profile.unwrap_or_default();
        s.ca_allow = self.shared_state_ca_allow.clone().unwrap_or_default();
        Ok(s)
    }

    /// A build without the fleet refuses `shared_state`.
    #[cfg(not(feature = "fleet"))]
    fn fleet(&self, _: &str, _: &Path) -> Result<crate::optional::SharedSettings, SettingsError> {
        Err(SettingsError::NotBuilt("--shared-state", "fleet"))
    }
}

/// Trust store sources from their specs (the file system says which kind each is).
fn sources(specs: Option<&[String]>) -> Vec<Source> {
    specs
        .unwrap_or_default()
        .iter()
        .map(|s| Source::from_arg(s))
        .collect()
}

/// `HOST:PORT` specs resolved (`:PORT` is every IPv4 address); `what` names the flag.
fn addrs(list: &[String], what: &'static str) -> Result<Vec<SocketAddr>, SettingsError> {
    let mut out = Vec::new();
    for a in list {
        let spec = if a.starts_with(':') {
            format!("0.0.0.0{a}")
        } else {
            a.clone()
        };
        let resolved: Vec<SocketAddr> = spec
            .to_socket_addrs()
            .map_err(|source| SettingsError::Address {
                setting: what,
                value: a.clone(),
                source,
            })?
            .collect();
        if resolved.is_empty() {
            return Err(SettingsError::NoAddress {
                setting: what,
                value: a.clone(),
            });
        }
        out.extend(resolved);
    }
    Ok(out)
}
