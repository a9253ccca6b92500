//! `tlskit serve` and `tlskit connect`: flags (and the config file) in, tlskit_net out.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use tlskit_net::starttls::Starttls;
use tlskit_net::{
    CaHints, Compression, ConnectOptions, FileConfig, Mode, ServeConfig, Server, TlsVersion,
};
use tlskit_store::Source;

use crate::output::{print_json, CmdResult, Outcome, Style};

const SERVE_EXAMPLES: &str = "\
Examples:
  # Terminate TLS in front of a local backend
  tlskit serve --listen 0.0.0.0:443 --listen [::]:443 --cert chain.pem --key key.pem \\
      --backend 127.0.0.1:8080 --metrics 127.0.0.1:9100
  # Built-in HTTP responder, certificates by SNI, client certificates required
  tlskit serve --listen 127.0.0.1:8443 --cert chain.pem --key key.pem --sni-dir certs/ \\
      --respond http --client-ca clients.pem
  # Everything from a file (flags override it)
  tlskit serve --config /etc/tlskit/serve.toml

--cert holds the leaf certificate followed by its chain. Prints `listening on ADDR` on stderr
for each address once ready. SIGHUP, or a change to any of those files (unless --no-watch), reloads certificates and the
client-CA store without dropping connections; SIGTERM stops
accepting and lets open connections finish (up to --shutdown-grace). Exit 2 on bad configuration.

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

Memory before the handshake: a ClientHello may buffer at most --max-client-hello bytes
(16384, records included; larger: refused with illegal_parameter), and all partial
ClientHellos together at most --handshake-budget bytes (16 MiB; when spent, a newcomer evicts
the oldest partial ClientHello); the rest of the client's handshake at most 16 KiB (72 KiB with --client-ca). All
counted in tlskit_handshake_failures_total{reason=...}.";

const CONNECT_EXAMPLES: &str = "\
Examples:
  tlskit connect example.com:443
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
    /// PEM private key of the leaf.
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
    /// CA names hinted in CertificateRequest: `store` (capped) or `off`.
    #[arg(long, value_name = "store|off")]
    ca_hints: Option<String>,
    /// Certificate compression (RFC 8879): `brotli,zlib` (default) or `none`.
    #[arg(long, value_name = "LIST")]
    compress: Option<String>,
    /// ALPN protocol to offer (repeatable). Default: http/1.1 with --respond http, none otherwise.
    #[arg(long, value_name = "PROTO")]
    alpn: Vec<String>,
    /// TLS versions to enable (repeatable): 1.2, 1.3. Default both.
    #[arg(long, value_name = "VERSION")]
    tls_version: Vec<String>,
    /// Serve Prometheus metrics (plain HTTP) on this address.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// TOML file with any of these settings (keys as the flags, `_` for `-`).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Seconds a client has to finish the handshake [default: 10].
    #[arg(long, value_name = "SECS")]
    handshake_timeout: Option<f64>,
    /// Seconds a connection may stay silent, nothing read or written either side (keep-alive,
    /// echo, backend relay both ways) [default: 60].
    #[arg(long, value_name = "SECS")]
    idle_timeout: Option<f64>,
    /// Seconds for one whole HTTP request head (and a small body), from its first byte
    /// (the first request: from the handshake), however slowly it arrives [default: 10].
    #[arg(long, value_name = "SECS")]
    header_timeout: Option<f64>,
    /// Most bytes a connection may buffer before its ClientHello is complete (1024 to 65556)
    /// [default: 16384].
    #[arg(long, value_name = "BYTES")]
    max_client_hello: Option<usize>,
    /// Most bytes of ClientHellos across all connections; when spent, a new connection
    /// evicts the oldest partial ClientHello [default: 16777216].
    #[arg(long, value_name = "BYTES")]
    handshake_budget: Option<usize>,
    /// Most open connections; more are closed at once [default: 10000].
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Seconds SIGTERM waits for open connections [default: 10].
    #[arg(long, value_name = "SECS")]
    shutdown_grace: Option<f64>,
    /// Session ticket key rotation period in seconds (1 to 21600): tickets from the
    /// previous key still resume, tickets older than two periods never [default: 21600].
    #[arg(long, value_name = "SECS")]
    ticket_rotation: Option<u64>,
    /// Send a PROXY protocol v2 header to the backend.
    #[arg(long)]
    proxy_protocol: bool,
    /// Do not reload when the certificate, key, SNI or client-CA files change (SIGHUP still works).
    #[arg(long)]
    no_watch: bool,
    /// Log level: off, error, warn, info (default), debug (one line per connection).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

/// Arguments of `tlskit connect`.
#[derive(clap::Args)]
#[command(after_help = CONNECT_EXAMPLES)]
pub(crate) struct ConnectArgs {
    /// HOST:PORT ([v6]:PORT for IPv6 literals).
    target: String,
    /// Trust store sources to verify the server against [default: system].
    #[arg(long, num_args = 1.., value_name = "SRC")]
    roots: Vec<String>,
    /// Name to send (SNI) and verify; U-labels are converted by UTS #46 [default: HOST].
    #[arg(long, value_name = "NAME")]
    servername: Option<String>,
    /// ALPN protocol to offer (repeatable).
    #[arg(long, value_name = "PROTO")]
    alpn: Vec<String>,
    /// Client certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// Client private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// TLS versions to offer (repeatable): 1.2, 1.3. Default both.
    #[arg(long, value_name = "VERSION")]
    tls_version: Vec<String>,
    /// Seconds allowed for the TCP connect and for the handshake [default: 10].
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Connect twice and report the second connection, which offers the first session.
    #[arg(long)]
    reconnect: bool,
    /// Upgrade a mail protocol with STARTTLS first: smtp, imap or pop3.
    #[arg(long, value_name = "PROTO", value_parser = super::parse_starttls)]
    starttls: Option<Starttls>,
    /// Print one JSON object and do not relay.
    #[arg(long)]
    json: bool,
}

fn versions(list: &[String]) -> anyhow::Result<Vec<TlsVersion>> {
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

fn secs(v: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{what}: {v} is not a number of seconds"))
}

fn build_serve_config(a: ServeArgs) -> anyhow::Result<(ServeConfig, Option<String>)> {
    let a = *a.inner;
    let f = match &a.config {
        Some(p) => FileConfig::load(p)?,
        None => FileConfig::default(),
    };
    let listen = if a.listen.is_empty() {
        f.listen.clone().unwrap_or_default()
    } else {
        a.listen
    };
    if listen.is_empty() {
        bail!("no address to listen on (--listen ADDR)");
    }
    let cert = a.cert.or(f.cert).context("--cert FILE is required")?;
    let key = a.key.or(f.key).context("--key FILE is required")?;
    let mut cfg = ServeConfig::new(addrs(&listen, "--listen")?, cert, key);
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
    if let Some(v) = a.handshake_timeout.or(f.handshake_timeout) {
        cfg.handshake_timeout = secs(v, "--handshake-timeout")?;
    }
    if let Some(v) = a.idle_timeout.or(f.idle_timeout) {
        cfg.idle_timeout = secs(v, "--idle-timeout")?;
    }
    if let Some(v) = a.header_timeout.or(f.header_timeout) {
        cfg.header_timeout = secs(v, "--header-timeout")?;
    }
    if let Some(v) = a.max_client_hello.or(f.max_client_hello) {
        cfg.max_client_hello = v;
    }
    if let Some(v) = a.handshake_budget.or(f.handshake_budget) {
        cfg.handshake_budget = v;
    }
    if let Some(v) = a.shutdown_grace.or(f.shutdown_grace) {
        cfg.shutdown_grace = secs(v, "--shutdown-grace")?;
    }
    if let Some(v) = a.max_connections.or(f.max_connections) {
        cfg.max_connections = v;
    }
    if let Some(v) = a.ticket_rotation.or(f.ticket_rotation) {
        cfg.ticket_rotation = Duration::from_secs(v);
    }
    cfg.proxy_protocol = a.proxy_protocol || f.proxy_protocol.unwrap_or(false);
    cfg.watch = !(a.no_watch || f.no_watch.unwrap_or(false));
    if cfg.proxy_protocol && !matches!(cfg.mode, Mode::Backend(_)) {
        bail!("--proxy-protocol needs --backend");
    }
    Ok((cfg, a.log_level.or(f.log_level)))
}

pub(crate) fn serve(args: ServeArgs) -> CmdResult {
    let (cfg, level) = build_serve_config(args)?;
    if let Some(l) = level {
        let l = tlskit_net::log::Level::parse(&l)
            .with_context(|| format!("--log-level {l}: use off, error, warn, info or debug"))?;
        tlskit_net::log::set_level(l);
    }
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
    let starttls = a.starttls;
    let opts = ConnectOptions {
        starttls,
        target: a.target,
        server_name: a.servername,
        roots: a.roots.iter().map(|s| Source::from_arg(s)).collect(),
        alpn: a.alpn,
        client_cert: a.cert.zip(a.key),
        versions: versions(&a.tls_version)?,
        timeout: secs(a.timeout, "--timeout")?,
        reconnect: a.reconnect,
    };
    let mut conn = tlskit_net::connect(&opts)?;
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
    if let Some(k) = &r.key_exchange {
        println!("  key exchange: {k}");
    }
    println!("  alpn:         {}", r.alpn.as_deref().unwrap_or("(none)"));
    println!("  resumed:      {}", if r.resumed { "yes" } else { "no" });
    println!(
        "  tcp connect:  {:.1} ms, handshake: {:.1} ms",
        r.tcp_connect_ms, r.handshake_ms
    );
    match &r.reason {
        None => println!("  verified:     {}", st.good("yes")),
        Some(why) => println!("  verified:     {} ({})", st.bad("NO"), st.warn(why)),
    }
    println!("  chain:");
    for (i, s) in r.chain.iter().enumerate() {
        println!("    {i}: {s}");
    }
    println!("---");
    if !r.verified {
        conn.close();
        return Ok(Outcome::Negative);
    }
    conn.relay_stdio()?;
    Ok(outcome)
}
