//! `tlskit ca serve` (the ACME server on a file CA, tlskit-ca-server) and
//! `tlskit ca eab add|list`: argument parsing and output only.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::output::{print_json, CmdResult, Outcome};

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
    #[arg(long, value_name = "N", default_value_t = 80,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) validation_http_port: u16,
    /// The port tls-alpn-01 validation connects to on the identifier's address.
    #[arg(long, value_name = "N", default_value_t = 443,
          value_parser = clap::value_parser!(u16).range(1..))]
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
        after_help = "Examples:\n  tlskit ca eab add ./myca --kid web-01\n  tlskit ca eab add ./myca --kid web-02 --json | jq -r .hmac_key\n\nGive the key id and the HMAC key to the machine's ACME client (certbot --eab-kid ID\n--eab-hmac-key KEY, lego --eab --eab.kid ID --eab.hmac KEY). Set eab_required = true in\nDIR/acme.toml to refuse accounts without one. The key is shown this once, on stdout\n(in the JSON document under --json); an existing key id is refused."
    )]
    Add {
        /// The CA directory.
        dir: PathBuf,
        /// The key id (1 to 64 letters, digits, - or _).
        #[arg(long, value_name = "ID")]
        kid: String,
        /// Print one JSON object (schema tlskit.ca.eab.add/1), the HMAC key included.
        #[arg(long)]
        json: bool,
    },
    /// List the enrolled key ids and when each was enrolled (never the keys).
    #[command(
        after_help = "Examples:\n  tlskit ca eab list ./myca\n  tlskit ca eab list ./myca --json | jq -r '.keys[].kid'"
    )]
    List {
        /// The CA directory.
        dir: PathBuf,
        /// Print one JSON object (schema tlskit.ca.eab.list/1).
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn serve(a: ServeArgs) -> CmdResult {
    // The same parsing and checks as the ACME client's DNS flags (no port 0, no 0.0.0.0).
    let resolver = match &a.resolver {
        None => None,
        Some(r) => Some(tlskit_acme::dns_server(r).map_err(|e| match e {
            tlskit_acme::AcmeError::Config(why) => anyhow::anyhow!("--resolver {why}"),
            e => anyhow::anyhow!("--resolver: {e}"),
        })?),
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
        EabCmd::Add { dir, kid, json } => {
            let key = tlskit_ca_server::eab_add(&dir, &kid)?;
            if json {
                let created = tlskit_ca_server::eab_list(&dir)?
                    .into_iter()
                    .find(|e| e.kid == kid)
                    .map(|e| e.created)
                    .unwrap_or_default();
                print_json(&serde_json::json!({
                    "ca": dir.display().to_string(),
                    "kid": kid,
                    "hmac_key": key,
                    "created": tlskit_x509::datetime::rfc3339(created),
                }))?;
            } else {
                eprintln!(
                    "enrolled EAB key id {kid}; its HMAC key follows (shown only this once):"
                );
                println!("{key}");
            }
            Ok(Outcome::Success)
        }
        EabCmd::List { dir, json } => {
            let keys = tlskit_ca_server::eab_list(&dir)?;
            if json {
                let keys: Vec<serde_json::Value> = keys
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "kid": e.kid,
                            "created": tlskit_x509::datetime::rfc3339(e.created),
                        })
                    })
                    .collect();
                print_json(&serde_json::json!({
                    "ca": dir.display().to_string(),
                    "count": keys.len(),
                    "keys": keys,
                }))?;
            } else {
                // Key ids are 1 to 64 letters, digits, - or _: nothing to escape.
                for e in &keys {
                    println!("{}  {}", e.kid, tlskit_x509::datetime::rfc3339(e.created));
                }
            }
            Ok(Outcome::Success)
        }
    }
}
