//! `tlskit ca serve` (the ACME server on a file CA, tlskit-ca-server) and
//! `tlskit ca eab add`: argument parsing and output only.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::output::{CmdResult, Outcome};

/// `tlskit ca serve` arguments.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The CA directory (`tlskit ca init`); the server keeps its state in DIR/acme/ and
    /// reads DIR/acme.toml (profiles, EAB, limits).
    pub(crate) dir: PathBuf,
    /// Where to serve the ACME directory (HTTPS; the CA issues the server's certificate).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: SocketAddr,
    /// The port http-01 validation connects to on the identifier's address (not a listen
    /// address).
    #[arg(long, value_name = "N", default_value_t = 80)]
    pub(crate) validation_http_port: u16,
    /// The port tls-alpn-01 validation connects to on the identifier's address.
    #[arg(long, value_name = "N", default_value_t = 443)]
    pub(crate) validation_tls_port: u16,
    /// Resolve identifiers through this DNS server (IP or IP:PORT, port 53 by default)
    /// instead of the system resolver; it also answers dns-01 (and so wildcards).
    #[arg(long, value_name = "ADDR")]
    pub(crate) resolver: Option<String>,
    /// Serve Prometheus metrics (plain HTTP) on this address.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<SocketAddr>,
    /// Another name for the server's own certificate, besides 127.0.0.1 and localhost:
    /// the name other hosts reach the ACME server by (repeatable).
    #[arg(long = "server-name", value_name = "NAME")]
    pub(crate) server_names: Vec<String>,
}

/// `tlskit ca eab` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum EabCmd {
    /// Enrol an external account binding key; prints its HMAC key once (stored 0600 in
    /// DIR/acme/eab/).
    #[command(
        after_help = "Examples:\n  tlskit ca eab add ./myca --kid web-01\n\nGive the key id and the HMAC key to the machine's ACME client (certbot --eab-kid ID\n--eab-hmac-key KEY, lego --eab --kid ID --hmac KEY). Set eab_required = true in\nDIR/acme.toml to refuse accounts without one."
    )]
    Add {
        /// The CA directory.
        dir: PathBuf,
        /// The key id (1 to 64 letters, digits, - or _).
        #[arg(long, value_name = "ID")]
        kid: String,
    },
}

pub(crate) fn serve(a: ServeArgs) -> CmdResult {
    let resolver = match &a.resolver {
        None => None,
        Some(r) => Some(
            r.parse::<SocketAddr>()
                .or_else(|_| {
                    r.parse::<std::net::IpAddr>()
                        .map(|ip| SocketAddr::new(ip, 53))
                })
                .map_err(|_| anyhow::anyhow!("--resolver {r:?}: not an IP address or IP:PORT"))?,
        ),
    };
    let opts = tlskit_ca_server::ServeOptions::new(a.dir, a.listen)
        .validation_ports(a.validation_http_port, a.validation_tls_port)
        .resolver(resolver)
        .metrics(a.metrics)
        .server_names(a.server_names);
    let metrics = opts.metrics;
    tlskit_ca_server::serve(opts, |bound| {
        eprintln!("ACME directory at https://{bound}/directory");
        if let Some(m) = metrics {
            eprintln!("metrics on http://{m}/metrics");
        }
    })?;
    Ok(Outcome::Success)
}

pub(crate) fn eab(c: EabCmd) -> CmdResult {
    match c {
        EabCmd::Add { dir, kid } => {
            let key = tlskit_ca_server::eab_add(&dir, &kid)?;
            eprintln!("enrolled EAB key id {kid}; its HMAC key follows (shown only this once):");
            println!("{key}");
            Ok(Outcome::Success)
        }
    }
}
