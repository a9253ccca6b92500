//! `tlskit serve` and `tlskit connect`: flags (and the config file) in, tlskit_server / tlskit_client out.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use tlskit_acme::{AcmeSettings, ChallengeKind};
use tlskit_client::ConnectOptions;
use tlskit_server::{
    ranges, CaHints, Compression, FileConfig, Mode, Range, ServeConfig, Server, TlsVersion,
};
use tlskit_store::Source;

use crate::logging::{self, LevelChoice, LogFormat};
use crate::output::{escape, print_json, CmdResult, Escaped, Outcome, Style};

const SERVE_EXAMPLES: &str = "\
Examples:
  # Terminate TLS in front of a local backend
  tlskit serve --listen 0.0.0.0:443 --listen [::]:443 --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 --metrics 127.0.0.1:9100
  # Built-in HTTP responder, certificates by SNI, client certificates required
  tlskit serve --listen 127.0.0.1:8443 --cert chain.pem --key key.pem --sni-dir certs/ \\
      --respond http --client-ca clients.pem
  # In front of an HTTP/2 and HTTP/1.1 backend: h2 end to end for clients that offer it
  tlskit serve --listen [::]:443 --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 --backend-alpn h2,http/1.1
  # One node of a fleet: session tickets resume on every node (keys sealed in Redis)
  tlskit serve --listen [::]:443 --cert chain.pem --key key.pem --backend 127.0.0.1:8080 \\
      --shared-state redis://:PASSWORD@10.0.0.5:6379/0 --shared-state-key /etc/tlskit/fleet.kek
  # Everything from a file (flags override it)
  tlskit serve --config /etc/tlskit/serve.toml
  # Certificate from Let's Encrypt, got and renewed by the server (TLS-ALPN-01 on :443)
  tlskit serve --listen [::]:443 --backend 127.0.0.1:8080 \
      --acme https://acme-v02.api.letsencrypt.org/directory --domain www.example.com \
      --acme-storage /var/lib/tlskit/acme --acme-email hostmaster@example.com \
      --http-listen [::]:80

--cert holds the leaf certificate followed by its chain. Once ready, `listening on ADDR` is
printed on stderr for each address (and READY=1 sent to systemd when NOTIFY_SOCKET is set:
dist/tlskit.service). SIGHUP, or a change to the certificate, key, SNI or client-CA files
(unless --no-watch), reloads certificates and the client-CA store without dropping
connections; a failed reload keeps what is serving and logs why, and a reload is given up
after 30 s. SIGTERM stops accepting and lets open connections finish, for up to
--shutdown-grace seconds, whatever a reload is doing. Files that are not regular files
(FIFOs, devices) are refused, never waited on. Exit 2 on bad configuration.

Threading: one tokio multi-thread runtime, a worker per CPU the process may use (taskset
and cgroup limits honoured), one task per connection on whichever worker polls it; blocking
work (reloads, file reads, PKCS#11) on tokio's blocking pool.

Logs: one line per event on stderr, `ts=2026-11-23T21:50:37.266Z level=info event=started
...` or JSON with --log-format json; which events: --log-level, or an env filter in
TLSKIT_LOG (`TLSKIT_LOG=tlskit=debug`). Start and every reload warn about served
certificates that expired or expire within --expiry-warning-days.

Deadlines (every connection state has one; flag, or the same key in --config):
  state                                   setting              default
  TCP accept -> handshake done (total)    --handshake-timeout  10 s  (also the backend connect)
  handshake done -> first request head    --header-timeout     10 s  (total, however it trickles)
  first byte of a request -> head + body  --header-timeout     10 s  (total; 408, then close)
  nothing read or written, either side    --idle-timeout       60 s  (keep-alive, echo, backend
                                                                      relay both ways, writes)
  TLS 1.2 renegotiation attempt           -                    none: refused and closed at once
  answer sent, unread body dropped        -                    1 s   (then close)
  SIGTERM -> open connections closed      --shutdown-grace     10 s
Every duration and size is checked against its range at start (shown in each flag's help):
out of range, serve exits 2 naming the flag (or the file and key) and the range.

Memory before the handshake: a ClientHello may buffer at most --max-client-hello bytes
(16384, records included; larger: refused with illegal_parameter), and all partial
ClientHellos together at most --handshake-budget bytes (16 MiB; when spent, a newcomer evicts
the oldest partial ClientHello); the rest of the client's handshake at most 16 KiB (72 KiB with --client-ca). All
counted in tlskit_handshake_failures_total{reason=...}.";

const CONNECT_EXAMPLES: &str = "\
Examples:
  tlskit connect example.com                  # port 443
  tlskit connect 127.0.0.1:8443 --roots ca.pem --servername test.example --alpn http/1.1
  tlskit connect 127.0.0.1:8443 --roots ca.pem --servername test.example --json
  printf 'GET / HTTP/1.0\\r\\n\\r\\n' | tlskit connect example.com:443
  tlskit connect mail.example.com:587 --starttls smtp

Prints the negotiated version, cipher suite, ALPN, resumption and the verified chain, then
relays stdin to the server and the server's data to stdout. With --json it prints one JSON
object and does not relay. --starttls smtp|imap|pop3 upgrades a mail protocol first (as
openssl s_client -starttls); a server that does not offer it is exit 2, quoting its reply.
Exit 0 verified, 1 verification failed, 2 could not connect.";

/// Arguments of `tlskit serve` (boxed: the flag set is large).
#[derive(clap::Args)]
#[command(after_help = SERVE_EXAMPLES)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    inner: Box<ServeFlags>,
}

#[derive(clap::Args)]
struct ServeFlags {
    /// Address to listen on (repeatable, or several after one flag): 127.0.0.1:8443, [::]:443.
    #[arg(long, num_args = 1.., value_name = "ADDR")]
    listen: Vec<String>,
    /// PEM file: leaf certificate followed by its chain.
    #[arg(long, value_name = "FILE")]
    cert: Option<PathBuf>,
    /// PEM private key of the leaf, or a pkcs11: URI naming a key on a token (RFC 7512).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Directory of NAME.crt (or NAME.pem) + NAME.key pairs, chosen by SNI (exact and wildcard names).
    #[arg(long, value_name = "DIR")]
    sni_dir: Option<PathBuf>,
    /// Forward the plaintext to this TCP address.
    #[arg(long, value_name = "ADDR", conflicts_with = "respond")]
    backend: Option<String>,
    /// Answer by itself: `http` (200 with a small body) or `echo`.
    #[arg(long, value_name = "http|echo")]
    respond: Option<String>,
    /// Require client certificates verified against these sources (file, dir, snapshot, system).
    #[arg(long, num_args = 1.., value_name = "SRC")]
    client_ca: Vec<String>,
    /// `required` (default) or `optional` client certificates.
    #[arg(long, value_name = "required|optional")]
    client_auth: Option<String>,
    /// Rule set client certificates are checked against: browser (default), webpki or
    /// rfc5280.
    #[arg(long, value_name = "PROFILE", value_parser = super::verify::parse_profile)]
    client_ca_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on client certificates (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::verify::parse_rule)]
    client_ca_allow: Vec<tlskit_verify::Rule>,
    /// CA names hinted in CertificateRequest: `store` (capped) or `off`.
    #[arg(long, value_name = "store|off")]
    ca_hints: Option<String>,
    /// Certificate compression (RFC 8879): `brotli,zlib` (default) or `none`.
    #[arg(long, value_name = "LIST")]
    compress: Option<String>,
    /// ALPN protocols to offer (repeatable, or comma-separated). Default: what the application speaks
    /// (http/1.1 with --respond http, --backend-alpn with --backend, none with echo).
    /// Never adds to that: protocols the application does not speak are dropped with a
    /// warning (event=alpn_not_offered). A backend without --backend-alpn speaks none, so
    /// `--backend ADDR --alpn h2,http/1.1` alone offers nothing (clients use HTTP/1.1);
    /// refused at start (exit 2) if the application declares protocols and none is left.
    #[arg(long, value_name = "PROTO", value_delimiter = ',')]
    alpn: Vec<String>,
    /// ALPN protocols the backend speaks, in preference order (`h2,http/1.1`); the server
    /// offers only these, so a client never gets a protocol the backend cannot read.
    /// Default: none (a raw TCP backend: no ALPN agreed, whatever --alpn says).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    backend_alpn: Vec<String>,
    /// TLS versions to enable (repeatable): 1.2, 1.3. Default both.
    #[arg(long, value_name = "VERSION")]
    tls_version: Vec<String>,
    /// Serve Prometheus metrics (plain HTTP) on this address.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// TOML file with any of these settings (keys as the flags, `_` for `-`).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Seconds a client has to finish the handshake (0.001 to 86400) [default: 10].
    #[arg(long, value_name = "SECS")]
    handshake_timeout: Option<f64>,
    /// Seconds a connection may stay silent, nothing read or written either side (keep-alive,
    /// echo, backend relay both ways; 0.001 to 604800) [default: 60].
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Seconds for one whole HTTP request head (and a small body), from its first byte
    /// (the first request: from the handshake), however slowly it arrives (0.001 to 86400)
    /// [default: 10].
    #[arg(long, value_name = "SECS")]
    header_timeout: Option<f64>,
    /// Most bytes a connection may buffer before its ClientHello is complete (1024 to 65556)
    /// [default: 16384].
    #[arg(long, value_name = "BYTES")]
    max_client_hello: Option<usize>,
    /// Most bytes of ClientHellos across all connections; when spent, a new connection
    /// evicts the oldest partial ClientHello (at least --max-client-hello, at most 1 GiB)
    /// [default: 16777216].
    #[arg(long, value_name = "BYTES")]
    handshake_budget: Option<usize>,
    /// Most open connections; more are closed at once (1 to 1048576) [default: 10000].
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Seconds SIGTERM waits for open connections (0 to 86400) [default: 10].
    #[arg(long, value_name = "SECS")]
    shutdown_grace: Option<f64>,
    /// Session ticket key rotation period in seconds (1 to 21600): tickets from the
    /// previous key still resume, tickets older than two periods never [default: 21600].
    #[arg(long, value_name = "SECS")]
    ticket_rotation: Option<u64>,
    /// Send a PROXY protocol v2 header to the backend (with ALPN, SNI and TLS TLVs).
    #[arg(long)]
    proxy_protocol: bool,
    /// Share session-ticket keys with a fleet through Redis:
    /// redis://[user:pass@]HOST:PORT[/db] (rediss:// for TLS); needs --shared-state-key.
    #[arg(long, value_name = "URL")]
    shared_state: Option<String>,
    /// The fleet's 32-byte key-encryption key (raw or 64 hex digits, mode 0600): the
    /// ticket keys are sealed with it in Redis.
    #[arg(long, value_name = "FILE")]
    shared_state_key: Option<PathBuf>,
    /// Refuse to start when Redis cannot be reached or its keys do not open (default:
    /// start on local keys and join when Redis is back).
    #[arg(long)]
    shared_state_required: bool,
    /// Seconds between re-reads of the shared ticket keys; nodes also re-read at once when
    /// another node announces new keys (Redis pub/sub); 0.1 to 3600. Default 2.
    #[arg(long, value_name = "SECS")]
    shared_state_reread: Option<f64>,
    /// PEM file of the CA that a rediss:// Redis server's certificate must chain to (a
    /// private CA; default: the system's roots).
    #[arg(long, value_name = "FILE")]
    shared_state_ca: Option<PathBuf>,
    /// Rule set a rediss:// server's certificate is checked against (as connect's
    /// --profile): browser (default), webpki or rfc5280.
    #[arg(long, value_name = "PROFILE", value_parser = super::verify::parse_profile)]
    shared_state_ca_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on the rediss:// server's certificate (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::verify::parse_rule)]
    shared_state_ca_allow: Vec<tlskit_verify::Rule>,
    /// Do not reload when the certificate, key, SNI or client-CA files change (SIGHUP still works).
    #[arg(long)]
    no_watch: bool,
    /// Log level: off, error, warn, info (default), debug (one line per connection).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Get and renew the certificate from this ACME directory URL (--cert/--key optional).
    #[arg(long, value_name = "DIRECTORY_URL")]
    acme: Option<String>,
    /// DNS name of the ACME certificate (repeatable).
    #[arg(long, value_name = "NAME")]
    domain: Vec<String>,
    /// ACME storage directory: account, certificates (created 0700). Not used, and not
    /// needed, with --shared-state: the fleet's ACME state is in Redis.
    #[arg(long, value_name = "DIR")]
    acme_storage: Option<PathBuf>,
    /// Contact address for the ACME account.
    #[arg(long, value_name = "ADDR")]
    acme_email: Option<String>,
    /// Trust anchors for the CA's HTTPS (file, dir, snapshot, system) [default: system].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    acme_roots: Vec<String>,
    /// Rule set the CA's HTTPS certificate is checked against (as connect's --profile):
    /// browser (default), webpki or rfc5280.
    #[arg(long, value_name = "PROFILE", value_parser = super::verify::parse_profile)]
    acme_roots_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on the CA's HTTPS certificate (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::verify::parse_rule)]
    acme_roots_allow: Vec<tlskit_verify::Rule>,
    /// ACME challenge: tls-alpn-01 (on the TLS listener, default) or http-01 (on --http-listen).
    #[arg(long, value_name = "tls-alpn-01|http-01")]
    acme_challenge: Option<String>,
    /// ACME certificate profile to ask for (e.g. `shortlived`).
    #[arg(long, value_name = "NAME")]
    acme_profile: Option<String>,
    /// Most seconds between two renewal checks (the CA's Retry-After when shorter; 1 to
    /// 604800) [default: 21600].
    #[arg(long, value_name = "SECS")]
    acme_recheck: Option<f64>,
    /// Seconds before the first retry after an ACME failure; doubles up to 1 h, jittered
    /// (0.1 to 3600) [default: 5].
    #[arg(long, value_name = "SECS")]
    acme_retry: Option<f64>,
    /// The CA's issuing roots (file, dir, snapshot): a new certificate that does not verify
    /// against them is refused [default: not checked].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    acme_issuer_roots: Vec<String>,
    /// Plain HTTP listener: ACME HTTP-01 answers, everything else redirected to https.
    #[arg(long, value_name = "ADDR")]
    http_listen: Option<String>,
    /// Warn (log event) at start and on every reload about served certificates that
    /// expire within N days or have expired (0 to 3650) [default: 14].
    #[arg(long, value_name = "N")]
    expiry_warning_days: Option<u32>,
}

/// Arguments of `tlskit connect`.
#[derive(clap::Args)]
#[command(after_help = CONNECT_EXAMPLES)]
pub(crate) struct ConnectArgs {
    #[command(flatten)]
    peer: super::PeerArgs,
    /// ALPN protocol to offer (repeatable).
    #[arg(long, value_name = "PROTO")]
    alpn: Vec<String>,
    /// Client certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// Client private key (PEM), or a pkcs11: URI naming a key on a token.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Connect twice and report the second connection, which offers the first session.
    #[arg(long)]
    reconnect: bool,
    /// Print one JSON object and do not relay.
    #[arg(long)]
    json: bool,
}

/// `--tls-version` values (repeatable, comma-separated): 1.2, 1.3 (also TLSv1.2, tls1.2).
pub(crate) fn versions(list: &[String]) -> anyhow::Result<Vec<TlsVersion>> {
    list.iter()
        .flat_map(|s| s.split(','))
        .map(|v| match v.trim() {
            "1.2" | "tls1.2" | "TLSv1.2" => Ok(TlsVersion::Tls12),
            "1.3" | "tls1.3" | "TLSv1.3" => Ok(TlsVersion::Tls13),
            other => bail!("unknown TLS version {other:?} (use 1.2 or 1.3)"),
        })
        .collect()
}

fn addrs(list: &[String], what: &str) -> anyhow::Result<Vec<SocketAddr>> {
    let mut out = Vec::new();
    for a in list {
        let spec = if a.starts_with(':') {
            format!("0.0.0.0{a}")
        } else {
            a.clone()
        };
        let resolved: Vec<SocketAddr> = spec
            .to_socket_addrs()
            .with_context(|| format!("{what} {a}: not an address (expected HOST:PORT)"))?
            .collect();
        if resolved.is_empty() {
            bail!("{what} {a}: resolves to no address");
        }
        out.extend(resolved);
    }
    Ok(out)
}

/// A numeric setting from its flag, else from the config file, with the name to refuse it
/// under: the flag, or the key and the file. Checked against its range before any use
/// (issue 27: `1e19` seconds or `u64::MAX` connections crashed the server).
fn setting<T>(
    flag: Option<T>,
    file: Option<T>,
    config: Option<&std::path::Path>,
    range: &Range,
) -> Option<(T, String)> {
    match (flag, file) {
        (Some(v), _) => Some((v, range.flag())),
        (None, Some(v)) => Some((
            v,
            format!(
                "{}: {} =",
                config.map(|p| p.display().to_string()).unwrap_or_default(),
                range.key
            ),
        )),
        (None, None) => None,
    }
}

/// A duration setting, checked.
fn secs_setting(
    flag: Option<f64>,
    file: Option<f64>,
    config: Option<&std::path::Path>,
    range: &Range,
) -> anyhow::Result<Option<Duration>> {
    Ok(match setting(flag, file, config, range) {
        Some((v, name)) => Some(range.secs(v, &name)?),
        None => None,
    })
}

/// A count or size setting, checked.
fn count_setting<T: Into<u64>>(
    flag: Option<T>,
    file: Option<T>,
    config: Option<&std::path::Path>,
    range: &Range,
) -> anyhow::Result<Option<usize>> {
    Ok(match setting(flag, file, config, range) {
        Some((v, name)) => Some(range.count(v.into(), &name)?),
        None => None,
    })
}

/// An outbound verification's profile and allowed rules: the flags when given, else the
/// config file's `KEY_profile` / `KEY_allow`, else the verifier's defaults.
fn profile_and_allow(
    key: &str,
    flags: (Option<tlskit_verify::Profile>, &[tlskit_verify::Rule]),
    file: (Option<&str>, Option<&[String]>),
) -> anyhow::Result<(tlskit_verify::Profile, Vec<tlskit_verify::Rule>)> {
    let profile = match (flags.0, file.0) {
        (Some(p), _) => p,
        (None, Some(s)) => super::verify::parse_profile(s)
            .map_err(|e| anyhow::anyhow!("{key}_profile {}: {e}", escape(s)))?,
        (None, None) => tlskit_verify::Profile::default(),
    };
    let allow = if flags.1.is_empty() {
        file.1
            .unwrap_or_default()
            .iter()
            .map(|s| {
                super::verify::parse_rule(s)
                    .map_err(|e| anyhow::anyhow!("{key}_allow {}: {e}", escape(s)))
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    } else {
        flags.1.to_vec()
    };
    Ok((profile, allow))
}

/// The log settings of `serve`: flag and config file kept apart (the flag wins over
/// TLSKIT_LOG, the file does not).
struct ServeLog {
    flag_level: Option<String>,
    file_level: Option<String>,
    file_format: Option<String>,
}

fn build_serve_config(a: ServeArgs) -> anyhow::Result<(ServeConfig, ServeLog)> {
    let a = *a.inner;
    let f = match &a.config {
        Some(p) => FileConfig::load(p)?,
        None => FileConfig::default(),
    };
    let file = a.config.as_deref();
    let listen = if a.listen.is_empty() {
        f.listen.clone().unwrap_or_default()
    } else {
        a.listen
    };
    if listen.is_empty() {
        bail!("no address to listen on (--listen ADDR)");
    }
    let acme_url = a.acme.clone().or(f.acme.clone());
    let (cert, key) = match (a.cert.or(f.cert), a.key.or(f.key), &acme_url) {
        (Some(c), Some(k), _) => (c, k),
        (None, None, Some(_)) => (PathBuf::new(), PathBuf::new()),
        (None, _, _) => bail!("--cert FILE is required"),
        (Some(_), None, _) => bail!("--key FILE is required"),
    };
    let mut cfg = ServeConfig::new(addrs(&listen, "--listen")?, cert, key);
    if let Some(url) = acme_url {
        let domains = if a.domain.is_empty() {
            f.domain.clone().unwrap_or_default()
        } else {
            a.domain.clone()
        };
        if domains.is_empty() {
            bail!("--acme needs at least one --domain NAME");
        }
        // With --shared-state the ACME state lives in Redis: no directory is used.
        let shared = a.shared_state.is_some() || f.shared_state.is_some();
        let storage = match a.acme_storage.clone().or(f.acme_storage.clone()) {
            Some(d) => d,
            None if shared => PathBuf::new(),
            None => bail!("--acme needs --acme-storage DIR (or --shared-state URL)"),
        };
        let mut s = AcmeSettings::new(
            url,
            domains
                .iter()
                .map(|d| tlskit_acme::domain(d))
                .collect::<Result<_, _>>()?,
            storage,
        );
        s.email = a.acme_email.clone().or(f.acme_email.clone());
        let roots = if a.acme_roots.is_empty() {
            f.acme_roots.clone().unwrap_or_default()
        } else {
            a.acme_roots.clone()
        };
        s.roots = roots.iter().map(|r| Source::from_arg(r)).collect();
        (s.roots_profile, s.roots_allow) = profile_and_allow(
            "acme_roots",
            (a.acme_roots_profile, &a.acme_roots_allow),
            (
                f.acme_roots_profile.as_deref(),
                f.acme_roots_allow.as_deref(),
            ),
        )?;
        if let Some(c) = a.acme_challenge.clone().or(f.acme_challenge.clone()) {
            s.challenge = ChallengeKind::parse(&c)
                .with_context(|| format!("--acme-challenge {c}: use tls-alpn-01 or http-01"))?;
        }
        s.profile = a.acme_profile.clone().or(f.acme_profile.clone());
        if let Some(v) = secs_setting(a.acme_recheck, f.acme_recheck, file, &ranges::ACME_RECHECK)?
        {
            s.recheck = v;
        }
        if let Some(v) = secs_setting(a.acme_retry, f.acme_retry, file, &ranges::ACME_RETRY)? {
            s.retry_base = v;
        }
        let issuer_roots = if a.acme_issuer_roots.is_empty() {
            f.acme_issuer_roots.clone().unwrap_or_default()
        } else {
            a.acme_issuer_roots.clone()
        };
        s.issuer_roots = issuer_roots.iter().map(|r| Source::from_arg(r)).collect();
        cfg.acme = Some(s);
    } else if !a.domain.is_empty() || a.acme_storage.is_some() {
        bail!("--domain and --acme-storage need --acme DIRECTORY_URL");
    } else if a.acme_roots_profile.is_some() || !a.acme_roots_allow.is_empty() {
        bail!("--acme-roots-profile and --acme-roots-allow need --acme DIRECTORY_URL");
    }
    if let Some(h) = a.http_listen.clone().or(f.http_listen.clone()) {
        cfg.http_listen = Some(
            *addrs(&[h], "--http-listen")?
                .first()
                .context("--http-listen: no address")?,
        );
    }
    cfg.sni_dir = a.sni_dir.or(f.sni_dir);
    let backend = a
        .backend
        .or(if a.respond.is_none() { f.backend } else { None });
    cfg.mode = match (backend, a.respond.or(f.respond).as_deref()) {
        (Some(b), None) => Mode::Backend(b),
        (Some(_), Some(_)) => bail!("--backend and --respond exclude each other"),
        (None, None) | (None, Some("http")) => Mode::Http,
        (None, Some("echo")) => Mode::Echo,
        (None, Some(other)) => bail!("--respond {other}: use http or echo"),
    };
    let ca = if a.client_ca.is_empty() {
        f.client_ca.unwrap_or_default()
    } else {
        a.client_ca
    };
    cfg.client_ca = ca.iter().map(|s| Source::from_arg(s)).collect();
    cfg.client_ca_profile = match (a.client_ca_profile, f.client_ca_profile.as_deref()) {
        (Some(p), _) => p,
        (None, Some(s)) => super::verify::parse_profile(s)
            .map_err(|e| anyhow::anyhow!("client_ca_profile {s:?}: {e}"))?,
        (None, None) => tlskit_verify::Profile::Browser,
    };
    cfg.client_ca_allow = if a.client_ca_allow.is_empty() {
        f.client_ca_allow
            .unwrap_or_default()
            .iter()
            .map(|s| {
                super::verify::parse_rule(s)
                    .map_err(|e| anyhow::anyhow!("client_ca_allow {s:?}: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    } else {
        a.client_ca_allow
    };
    cfg.client_auth_optional = match a.client_auth.or(f.client_auth).as_deref() {
        None | Some("required") => false,
        Some("optional") => true,
        Some(o) => bail!("--client-auth {o}: use required or optional"),
    };
    cfg.ca_hints = match a.ca_hints.or(f.ca_hints).as_deref() {
        None | Some("store") => CaHints::Store,
        Some("off") => CaHints::Off,
        Some(o) => bail!("--ca-hints {o}: use store or off"),
    };
    if let Some(list) = a.compress.or(f.compress) {
        cfg.compress = Vec::new();
        for c in list.split(',').map(str::trim) {
            match c {
                "brotli" => cfg.compress.push(Compression::Brotli),
                "zlib" => cfg.compress.push(Compression::Zlib),
                "none" | "" => {}
                o => bail!("--compress {o}: use brotli, zlib or none"),
            }
        }
    }
    cfg.alpn = if a.alpn.is_empty() {
        f.alpn.unwrap_or_default()
    } else {
        a.alpn
    };
    cfg.backend_alpn = if a.backend_alpn.is_empty() {
        f.backend_alpn
    } else {
        Some(a.backend_alpn)
    };
    let tv = if a.tls_version.is_empty() {
        f.tls_version.unwrap_or_default()
    } else {
        a.tls_version
    };
    if !tv.is_empty() {
        cfg.versions = versions(&tv)?;
    }
    if let Some(m) = a.metrics.or(f.metrics) {
        cfg.metrics = Some(
            *addrs(&[m], "--metrics")?
                .first()
                .context("--metrics: no address")?,
        );
    }
    if let Some(v) = secs_setting(
        a.handshake_timeout,
        f.handshake_timeout,
        file,
        &ranges::HANDSHAKE_TIMEOUT,
    )? {
        cfg.handshake_timeout = v;
    }
    if let Some(v) = secs_setting(a.idle_timeout, f.idle_timeout, file, &ranges::IDLE_TIMEOUT)? {
        cfg.idle_timeout = v;
    }
    if let Some(v) = secs_setting(
        a.header_timeout,
        f.header_timeout,
        file,
        &ranges::HEADER_TIMEOUT,
    )? {
        cfg.header_timeout = v;
    }
    let as_u64 = |v: Option<usize>| v.map(|n| u64::try_from(n).unwrap_or(u64::MAX));
    if let Some(v) = count_setting(
        as_u64(a.max_client_hello),
        as_u64(f.max_client_hello),
        file,
        &ranges::MAX_CLIENT_HELLO,
    )? {
        cfg.max_client_hello = v;
    }
    if let Some(v) = count_setting(
        as_u64(a.handshake_budget),
        as_u64(f.handshake_budget),
        file,
        &ranges::HANDSHAKE_BUDGET,
    )? {
        cfg.handshake_budget = v;
    }
    if let Some(v) = secs_setting(
        a.shutdown_grace,
        f.shutdown_grace,
        file,
        &ranges::SHUTDOWN_GRACE,
    )? {
        cfg.shutdown_grace = v;
    }
    if let Some(v) = count_setting(
        as_u64(a.max_connections),
        as_u64(f.max_connections),
        file,
        &ranges::MAX_CONNECTIONS,
    )? {
        cfg.max_connections = v;
    }
    if let Some(v) = count_setting(
        a.ticket_rotation,
        f.ticket_rotation,
        file,
        &ranges::TICKET_ROTATION,
    )? {
        cfg.ticket_rotation = Duration::from_secs(u64::try_from(v).unwrap_or(u64::MAX));
    }
    cfg.proxy_protocol = a.proxy_protocol || f.proxy_protocol.unwrap_or(false);
    let (ca_profile, ca_allow) = profile_and_allow(
        "shared_state_ca",
        (a.shared_state_ca_profile, &a.shared_state_ca_allow),
        (
            f.shared_state_ca_profile.as_deref(),
            f.shared_state_ca_allow.as_deref(),
        ),
    )?;
    let ca_check_given = a.shared_state_ca_profile.is_some()
        || !a.shared_state_ca_allow.is_empty()
        || f.shared_state_ca_profile.is_some()
        || f.shared_state_ca_allow.is_some();
    match (
        a.shared_state.or(f.shared_state),
        a.shared_state_key.or(f.shared_state_key),
    ) {
        (Some(url), _) if ca_check_given && !url.starts_with("rediss://") => {
            bail!(
                "--shared-state-ca-profile and --shared-state-ca-allow need a rediss:// URL (TLS), not {}",
                tlskit_fleet::shared::redact(&url)
            )
        }
        (Some(url), Some(key_file)) => {
            let mut s = tlskit_fleet::shared::SharedSettings::new(url, key_file);
            s.required = a.shared_state_required || f.shared_state_required.unwrap_or(false);
            // At least 0.1 s: a zero interval would hammer Redis.
            s.reread = secs_setting(
                a.shared_state_reread,
                f.shared_state_reread,
                file,
                &ranges::SHARED_STATE_REREAD,
            )?
            .unwrap_or(tlskit_fleet::shared::REREAD);
            s.ca = a.shared_state_ca.or(f.shared_state_ca);
            s.ca_profile = ca_profile;
            s.ca_allow = ca_allow;
            cfg.shared_state = Some(s);
        }
        (Some(_), None) => {
            bail!("--shared-state needs --shared-state-key FILE (32 bytes, mode 0600)")
        }
        (None, Some(_)) => bail!("--shared-state-key needs --shared-state URL"),
        (None, None) => {
            if a.shared_state_ca.is_some() || f.shared_state_ca.is_some() || ca_check_given {
                bail!("--shared-state-ca, --shared-state-ca-profile and --shared-state-ca-allow need --shared-state rediss://URL");
            }
        }
    }
    cfg.watch = !(a.no_watch || f.no_watch.unwrap_or(false));
    if let Some(v) = count_setting(
        a.expiry_warning_days,
        f.expiry_warning_days,
        file,
        &ranges::EXPIRY_WARNING_DAYS,
    )? {
        cfg.expiry_warning_days = u32::try_from(v).unwrap_or(u32::MAX);
    }
    if cfg.proxy_protocol && !matches!(cfg.mode, Mode::Backend(_)) {
        bail!("--proxy-protocol needs --backend");
    }
    let log = ServeLog {
        flag_level: a.log_level,
        file_level: f.log_level,
        file_format: f.log_format,
    };
    Ok((cfg, log))
}

pub(crate) fn serve(args: ServeArgs, log_format: Option<LogFormat>) -> CmdResult {
    let (cfg, log) = build_serve_config(args)?;
    let format = match (log_format, &log.file_format) {
        (Some(f), _) => f,
        (None, Some(f)) => LogFormat::parse(f)?,
        (None, None) => LogFormat::Text,
    };
    logging::init(
        format,
        &LevelChoice {
            flag: log.flag_level.as_deref(),
            file: log.file_level.as_deref(),
        },
    )?;
    let server = Server::bind(cfg)?;
    for a in server.local_addrs() {
        eprintln!("listening on {a}");
    }
    if let Some(m) = server.metrics_addr() {
        eprintln!("metrics on http://{m}/metrics");
    }
    server.run()?;
    Ok(Outcome::Success)
}

pub(crate) fn connect(a: ConnectArgs) -> CmdResult {
    let versions = versions(&a.peer.tls_version)?;
    let profile = a.peer.profile;
    let mut opts = ConnectOptions::new(a.peer.options(versions));
    opts.alpn = a.alpn;
    opts.client_cert = a.cert.zip(a.key);
    opts.reconnect = a.reconnect;
    let mut conn = tlskit_client::connect(&opts)?;
    for w in &conn.roots_warnings {
        eprintln!("tlskit: warning: {w}");
    }
    if a.json && conn.report.verified {
        // Catch a TLS 1.3 server's post-handshake refusal (client certificate missing or
        // not accepted): two TCP round trips, at least 100 ms, at most 1 s.
        let wait = (conn.report.tcp_connect_ms * 2.0).clamp(100.0, 1000.0);
        conn.await_server_verdict(Duration::from_secs_f64(wait / 1e3))?;
    }
    let r = &conn.report;
    let outcome = if r.verified {
        Outcome::Success
    } else {
        Outcome::Negative
    };
    if a.json {
        print_json(r)?;
        conn.close();
        return Ok(outcome);
    }
    let st = Style::stdout();
    println!("{} {} ({})", st.bold("connected to"), r.target, r.peer);
    println!("  server name:  {}", r.server_name);
    if let Some(p) = &r.starttls {
        println!("  starttls:     {p}");
    }
    println!("  version:      {}", r.tls_version);
    println!("  cipher suite: {}", r.cipher_suite);
    if r.kx.key_exchange_group.is_some() {
        println!("  key exchange: {}", key_exchange_line(&r.kx));
    }
    if let Some(d) = r.expires_in_days {
        println!("  certificate:  {}", expiry_phrase(d));
    }
    // What the server sent (ALPN, names, the verifier's reason naming them) is escaped.
    println!(
        "  alpn:         {}",
        Escaped(r.alpn.as_deref().unwrap_or("(none)"))
    );
    println!("  resumed:      {}", if r.resumed { "yes" } else { "no" });
    println!(
        "  tcp connect:  {:.1} ms, handshake: {:.1} ms",
        r.tcp_connect_ms, r.handshake_ms
    );
    match &r.reason {
        None => println!("  verified:     {}", st.good("yes")),
        Some(why) => println!(
            "  verified:     {} ({})",
            st.bad("NO"),
            st.warn(&escape(why))
        ),
    }
    println!("  chain:");
    for (i, s) in r.chain.iter().enumerate() {
        println!("    {i}: {}", Escaped(s));
    }
    super::verify::print_warnings(&st, &r.warnings, profile);
    println!("---");
    if !r.verified {
        conn.close();
        return Ok(Outcome::Negative);
    }
    conn.relay_stdio()?;
    Ok(outcome)
}

/// `X25519MLKEM768, key shares 1,216 + 1,120 bytes, no HelloRetryRequest` (connect, probe).
pub(crate) fn key_exchange_line(kx: &tlskit_client::kx::KeyExchange) -> String {
    let group = kx.key_exchange_group.as_deref().unwrap_or("(none)");
    let shares = kx
        .key_share_bytes
        .map(|k| format!(", key shares {} + {} bytes", k.client, k.server))
        .unwrap_or_default();
    let hrr = match &kx.hello_retry_reason {
        Some(why) => format!(", HelloRetryRequest ({why}): one more round trip"),
        None => ", no HelloRetryRequest".to_string(),
    };
    format!("{group}{shares}{hrr}")
}

/// `expires in 89 days`, `expired 3 days ago`.
pub(crate) fn expiry_phrase(days: i64) -> String {
    match days {
        d if d < 0 => format!("expired {} day(s) ago", -d),
        d => format!("expires in {d} day(s)"),
    }
}
