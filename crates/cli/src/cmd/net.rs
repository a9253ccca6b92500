//! `tlskit serve` and `tlskit connect`: flags (and the config file) in, tlskit_server / tlskit_client out.

use std::path::PathBuf;
use std::time::Duration;

use tlskit_client::ConnectOptions;
use tlskit_server::{
    parse_compression, parse_tls_versions, ServeConfig, ServeSettings, Server, TlsVersion,
    ValueError,
};

use crate::logging::{self, LevelChoice, LogFormat};
use crate::output::{escape, print_json, CmdResult, Escaped, Outcome, Style};

const SERVE_EXAMPLES: &str = "\
Examples:
  # Terminate TLS in front of a local backend
  tlskit serve --listen 0.0.0.0:443 --listen [::]:443 \\
      --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 --metrics 127.0.0.1:9100
  # Built-in HTTP responder, certificates by SNI, client certificates
  # required
  tlskit serve --listen 127.0.0.1:8443 --cert chain.pem --key key.pem \\
      --sni-dir certs/ --respond http --client-ca clients.pem
  # In front of an HTTP/2 and HTTP/1.1 backend: h2 end to end for
  # clients that offer it
  tlskit serve --listen [::]:443 --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 --backend-alpn h2,http/1.1
  # One node of a fleet: session tickets resume on every node (keys
  # sealed in Redis)
  tlskit serve --listen [::]:443 --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 \\
      --shared-state redis://:PASSWORD@10.0.0.5:6379/0 \\
      --shared-state-key /etc/tlskit/fleet.kek
  # Everything from a file (flags override it)
  tlskit serve --config /etc/tlskit/serve.toml
  # Certificate from Let's Encrypt, got and renewed by the server
  # (TLS-ALPN-01 on :443)
  tlskit serve --listen [::]:443 --backend 127.0.0.1:8080 \\
      --acme https://acme-v02.api.letsencrypt.org/directory \\
      --domain www.example.com --acme-storage /var/lib/tlskit/acme \\
      --acme-email hostmaster@example.com --http-listen [::]:80

With neither --backend nor --respond, serve answers every HTTP/1.1 request itself with
200 and a small body (as --respond http) and logs event=default_responder at start.

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
  TCP accept -> handshake done            --handshake-timeout  10 s
    (total; also the backend connect)
  handshake done -> first request head    --header-timeout     10 s
    (total, however it trickles)
  first byte of a request -> head + body  --header-timeout     10 s
    (total; 408, then close)
  nothing read or written, either side    --idle-timeout       60 s
    (keep-alive, echo, backend relay both ways, writes)
  TLS 1.2 renegotiation attempt           -                    none
    (refused and closed at once)
  answer sent, unread body dropped        -                    1 s
    (then close)
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
    /// Forward the plaintext to this TCP address. With neither --backend nor --respond the
    /// server answers by itself as with `--respond http`.
    #[arg(long, value_name = "ADDR", conflicts_with = "respond")]
    backend: Option<String>,
    /// Answer by itself: `http` (every HTTP/1.1 request gets 200 with a small body; the
    /// default with neither --backend nor --respond) or `echo` (every byte sent back).
    #[arg(long, value_name = "http|echo", value_parser = super::offer_str(&["http", "echo"]), hide_possible_values = true)]
    respond: Option<String>,
    /// Require client certificates verified against these sources (file, dir, snapshot, system).
    #[arg(long, num_args = 1.., value_name = "SRC")]
    client_ca: Vec<String>,
    /// `required` (default) or `optional` client certificates.
    #[arg(long, value_name = "required|optional", value_parser = super::offer_str(&["required", "optional"]), hide_possible_values = true)]
    client_auth: Option<String>,
    /// Rule set client certificates are checked against: browser (default), webpki or
    /// rfc5280.
    #[arg(long, value_name = "PROFILE", value_parser = super::profile_parser(), hide_possible_values = true)]
    client_ca_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on client certificates (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::rule_parser(), hide_possible_values = true)]
    client_ca_allow: Vec<tlskit_verify::Rule>,
    /// CA names hinted in CertificateRequest: `store` (capped) or `off`.
    #[arg(long, value_name = "store|off", value_parser = super::offer_str(&["store", "off"]), hide_possible_values = true)]
    ca_hints: Option<String>,
    /// Certificate compression (RFC 8879): `brotli,zlib` (default) or `none`.
    #[arg(long, value_name = "LIST", value_parser = super::offer_str(&["brotli,zlib", "zlib,brotli", "brotli", "zlib", "none"]), hide_possible_values = true)]
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
    #[arg(long, value_name = "VERSION", value_parser = super::offer_str(super::TLS_VERSIONS), hide_possible_values = true)]
    tls_version: Vec<String>,
    /// Serve Prometheus metrics (plain HTTP) on this address.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Control socket (a Unix socket, mode 0600, removed on exit) for `tlskit ctl`
    /// [default: none; $RUNTIME_DIRECTORY/control.sock when systemd sets RUNTIME_DIRECTORY,
    /// as the shipped unit's RuntimeDirectory=tlskit does: /run/tlskit/control.sock].
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
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
    #[arg(long, value_name = "PROFILE", value_parser = super::profile_parser(), hide_possible_values = true)]
    shared_state_ca_profile: Option<tlskit_verify::Profile>,
    /// Do not check this rule on the rediss:// server's certificate (its code; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::rule_parser(), hide_possible_values = true)]
    shared_state_ca_allow: Vec<tlskit_verify::Rule>,
    /// Do not reload when the certificate, key, SNI or client-CA files change (SIGHUP still works).
    #[arg(long)]
    no_watch: bool,
    /// Log level: off, error, warn, info (default), debug (one line per connection).
    #[arg(long, value_name = "LEVEL", value_parser = super::offer_str(super::LOG_LEVELS), hide_possible_values = true)]
    log_level: Option<String>,
    /// Get and renew the certificate from this ACME directory URL (--cert/--key optional).
    #[arg(long, value_name = "DIRECTORY_URL")]
    acme: Option<String>,
    /// DNS name of the ACME certificate (repeatable).
    #[arg(long, value_name = "NAME")]
    domain: Vec<String>,
    #[command(flatten)]
    acme_account: super::AcmeArgs,
    /// ACME challenge: tls-alpn-01 (on the TLS listener, default), http-01 (on
    /// --http-listen) or dns-01 (TXT records through --acme-dns-update or --acme-dns-exec;
    /// wildcards).
    #[arg(long, value_name = "tls-alpn-01|http-01|dns-01", value_parser = super::offer_str(&["tls-alpn-01", "http-01", "dns-01"]), hide_possible_values = true)]
    acme_challenge: Option<String>,
    #[command(flatten)]
    acme_dns: super::AcmeDnsArgs,
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
    Ok(parse_tls_versions(list)?)
}

/// A repeatable flag: `None` when not given (then the config file's value counts).
fn given<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// A flag's value typed, or set aside for the library to refuse where it checks `key`
/// (so that the first problem reported is the one `serve` has always reported first).
fn typed<V, T>(
    s: &mut ServeSettings,
    key: &'static str,
    flag: Option<V>,
    parse: impl FnOnce(V) -> Result<T, ValueError>,
) -> Option<T> {
    match flag.map(parse)? {
        Ok(v) => Some(v),
        Err(e) => {
            s.set_invalid(key, e);
            None
        }
    }
}

/// The flags of `serve` as settings (each flag onto its field: the library merges them
/// with the config file, checks them and makes the configuration).
fn flag_settings(a: ServeFlags) -> ServeSettings {
    let mut s = ServeSettings::new();
    s.listen = given(a.listen);
    s.cert = a.cert;
    s.key = a.key;
    s.sni_dir = a.sni_dir;
    s.backend = a.backend;
    s.respond = typed(&mut s, "respond", a.respond.as_deref(), str::parse);
    s.client_ca = given(a.client_ca);
    s.client_auth = typed(&mut s, "client_auth", a.client_auth.as_deref(), str::parse);
    s.client_ca_profile = a.client_ca_profile;
    s.client_ca_allow = given(a.client_ca_allow);
    s.ca_hints = typed(&mut s, "ca_hints", a.ca_hints.as_deref(), str::parse);
    s.compress = typed(&mut s, "compress", a.compress.as_deref(), parse_compression);
    s.alpn = given(a.alpn);
    s.backend_alpn = given(a.backend_alpn);
    s.tls_version = typed(&mut s, "tls_version", given(a.tls_version), |v| {
        parse_tls_versions(&v)
    });
    s.metrics = a.metrics;
    s.control = a.control;
    s.handshake_timeout = a.handshake_timeout;
    s.idle_timeout = a.idle_timeout;
    s.header_timeout = a.header_timeout;
    s.max_client_hello = a.max_client_hello;
    s.handshake_budget = a.handshake_budget;
    s.max_connections = a.max_connections;
    s.shutdown_grace = a.shutdown_grace;
    s.ticket_rotation = a.ticket_rotation;
    s.proxy_protocol = a.proxy_protocol.then_some(true);
    s.shared_state = a.shared_state;
    s.shared_state_key = a.shared_state_key;
    s.shared_state_required = a.shared_state_required.then_some(true);
    s.shared_state_reread = a.shared_state_reread;
    s.shared_state_ca = a.shared_state_ca;
    s.shared_state_ca_profile = a.shared_state_ca_profile;
    s.shared_state_ca_allow = given(a.shared_state_ca_allow);
    s.no_watch = a.no_watch.then_some(true);
    s.acme = a.acme;
    s.domain = given(a.domain);
    a.acme_account.onto_serve(&mut s);
    a.acme_dns.onto_serve(&mut s);
    s.acme_challenge = typed(
        &mut s,
        "acme_challenge",
        a.acme_challenge.as_deref(),
        str::parse,
    );
    s.acme_profile = a.acme_profile;
    s.acme_recheck = a.acme_recheck;
    s.acme_retry = a.acme_retry;
    s.http_listen = a.http_listen;
    s.expiry_warning_days = a.expiry_warning_days;
    s
}

/// The log settings of `serve`: flag and config file kept apart (the flag wins over
/// TLSKIT_LOG, the file does not).
struct ServeLog {
    flag_level: Option<String>,
    /// The file's level, or why it was refused (reported after the flag's).
    file_level: Result<Option<&'static str>, tlskit_server::ValueError>,
    format: LogFormat,
    /// Neither `backend` nor `respond` given (flag or file): the built-in HTTP responder.
    default_responder: bool,
}

/// The configuration of `serve` and its log settings: the flags onto settings, merged
/// with the config file's (flags win) and checked by the library. `--log-format` (a
/// global flag) wins over the file's `log_format`.
fn build_serve_config(
    a: ServeArgs,
    log_format: Option<LogFormat>,
) -> anyhow::Result<(ServeConfig, ServeLog)> {
    let mut a = *a.inner;
    let file = match &a.config {
        Some(p) => ServeSettings::load(p)?,
        None => ServeSettings::new(),
    };
    let flag_level = a.log_level.take();
    let mut s = flag_settings(a);
    s.log_format = log_format.map(|f| match f {
        LogFormat::Text => tlskit_server::LogFormat::Text,
        LogFormat::Json => tlskit_server::LogFormat::Json,
    });
    let mut s = s.merge(file);
    let default_responder = s.backend.is_none() && s.respond.is_none();
    let log = s.take_log();
    let mut cfg = s.into_config()?;
    // Under systemd (RuntimeDirectory=tlskit): the socket `tlskit ctl` looks for.
    if cfg.control.is_none() {
        cfg.control =
            tlskit_server::runtime_control_path(std::env::var_os("RUNTIME_DIRECTORY").as_deref());
    }
    let log = ServeLog {
        flag_level,
        file_level: log.level.map(|l| l.map(tlskit_tls::log::Level::name)),
        format: match log.format? {
            Some(tlskit_server::LogFormat::Json) => LogFormat::Json,
            _ => LogFormat::Text,
        },
        default_responder,
    };
    Ok((cfg, log))
}

pub(crate) fn serve(args: ServeArgs, log_format: Option<LogFormat>) -> CmdResult {
    let (cfg, log) = build_serve_config(args, log_format)?;
    logging::init(
        log.format,
        &LevelChoice {
            flag: log.flag_level.as_deref(),
            file: log.file_level.as_ref().ok().copied().flatten(),
            file_refused: log.file_level.as_ref().err(),
        },
    )?;
    let server_control = cfg.control.clone();
    let server = Server::bind(cfg)?;
    if log.default_responder {
        tlskit_tls::log::event(
            tlskit_tls::log::Level::Info,
            "default_responder",
            &[
                ("respond", &"http"),
                (
                    "detail",
                    &"neither --backend nor --respond is given: every HTTP/1.1 request is \
                      answered with 200 and a small body",
                ),
            ],
        );
    }
    for a in server.local_addrs() {
        eprintln!("listening on {a}");
    }
    if let Some(m) = server.metrics_addr() {
        eprintln!("metrics on http://{m}/metrics");
    }
    if let Some(c) = &server_control {
        eprintln!("control socket {}", c.display());
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
