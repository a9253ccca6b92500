//! `tlskit ctl`: ask a running `tlskit serve --control PATH` over its control socket.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use tlskit_server::{ControlCert, ControlReply, ControlStatus, ReloadResult};

use crate::output::{print_json, CmdResult, Escaped, Outcome};

/// Where `serve --control` puts its socket under the shipped systemd unit.
const DEFAULT_CONTROL: &str = "/run/tlskit/control.sock";

/// Largest reply read (a server with many SNI pairs lists each).
const MAX_REPLY: u64 = 64 << 20;

/// `tlskit ctl`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit ctl --control /run/tlskit/control.sock status\n  tlskit ctl --control ./control.sock reload\n  tlskit ctl --control ./control.sock certs --json\n  tlskit ctl renew www.example.com\n\nExit status: 0 done, 1 the reload failed (what was serving stays), 2 no answer from\nthe server (no socket, not running, permission denied). JSON: schema\ntlskit.ctl.status/1, tlskit.ctl.certs/1, tlskit.ctl.reload/1, tlskit.ctl.renew/1\n(docs/json.md)."
)]
pub(crate) struct CtlArgs {
    /// The server's control socket (`serve --control PATH`).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_CONTROL, global = true)]
    control: PathBuf,
    #[command(subcommand)]
    cmd: CtlCmd,
}

/// What to ask.
#[derive(clap::Subcommand)]
enum CtlCmd {
    /// Certificates and their expiry, trust store, ticket keys, connections, last reload.
    Status {
        /// Print JSON (schema tlskit.ctl.status/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
    /// The certificates served.
    Certs {
        /// Print JSON (schema tlskit.ctl.certs/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Reload certificates and the client-CA store, and wait for the result.
    Reload {
        /// Print JSON (schema tlskit.ctl.reload/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Renew the ACME certificate for NAME now, and wait until the new one is served.
    Renew {
        /// A name of the server's ACME certificate (`--domain`).
        #[arg(value_name = "NAME")]
        name: String,
        /// Print JSON (schema tlskit.ctl.renew/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
}

/// `ctl renew --json`.
#[derive(Serialize)]
struct RenewJson<'a> {
    certificate: &'a ControlCert,
}

/// `ctl certs --json`.
#[derive(Serialize)]
struct CertsJson<'a> {
    certificates: &'a [ControlCert],
}

pub(crate) fn run(a: CtlArgs) -> CmdResult {
    match a.cmd {
        CtlCmd::Status { json } => {
            let status = ask(&a.control, "status")?
                .status
                .context("the server's reply has no status")?;
            if json {
                print_json(&status)?;
            } else {
                print_status(&status);
            }
            Ok(Outcome::Success)
        }
        CtlCmd::Certs { json } => {
            let certs = ask(&a.control, "certs")?
                .certificates
                .context("the server's reply has no certificate list")?;
            if json {
                print_json(&CertsJson {
                    certificates: &certs,
                })?;
            } else {
                print_certs(&certs);
            }
            Ok(Outcome::Success)
        }
        CtlCmd::Renew { name, json } => {
            if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                bail!("{}: not a DNS name", Escaped(&name));
            }
            let c = ask(&a.control, &format!("renew {name}"))?
                .renewed
                .context("the server's reply has no certificate")?;
            if json {
                print_json(&RenewJson { certificate: &c })?;
            } else {
                print!("renewed: ");
                print_certs(std::slice::from_ref(&c));
            }
            Ok(Outcome::Success)
        }
        CtlCmd::Reload { json } => {
            let r = ask(&a.control, "reload")?
                .reload
                .context("the server's reply has no reload result")?;
            if json {
                print_json(&r)?;
            } else {
                print_reload(&r);
            }
            Ok(if r.ok {
                Outcome::Success
            } else {
                Outcome::Negative
            })
        }
    }
}

/// Send one request, read the reply; an error reply is an error (exit 2).
fn ask(path: &Path, request: &str) -> anyhow::Result<ControlReply> {
    let shown = path.display().to_string();
    let shown = Escaped(&shown);
    let mut s = std::os::unix::net::UnixStream::connect(path)
        .with_context(|| format!("{shown}: cannot connect to the control socket"))?;
    // The server answers a reload once it ends (within its own deadline).
    let wait = tlskit_server::RELOAD_WAIT + Duration::from_secs(5);
    let wait = wait.max(tlskit_server::RENEW_WAIT + Duration::from_secs(5));
    s.set_read_timeout(Some(wait))?;
    s.set_write_timeout(Some(tlskit_server::REQUEST_DEADLINE))?;
    s.write_all(format!("{request}\n").as_bytes())
        .with_context(|| format!("{shown}: cannot send the request"))?;
    let mut text = Vec::new();
    s.take(MAX_REPLY)
        .read_to_end(&mut text)
        .with_context(|| format!("{shown}: no reply from the server"))?;
    let reply: ControlReply = serde_json::from_slice(&text)
        .with_context(|| format!("{shown}: the reply is not a control reply"))?;
    if let Some(e) = &reply.error {
        bail!("{shown}: the server refused {request}: {}", Escaped(e));
    }
    Ok(reply)
}

/// Seconds since the epoch as RFC 3339 (UTC).
fn when(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| format!("{secs} s after the epoch"))
}

fn print_certs(certs: &[ControlCert]) {
    if certs.is_empty() {
        println!("no certificate served");
    }
    for c in certs {
        let expiry = match c.not_after {
            Some(t) => format!("expires {}", when(t)),
            None => "no certificate yet".to_string(),
        };
        let names = if c.dns_names.is_empty() {
            "no DNS name".to_string()
        } else {
            c.dns_names.join(", ")
        };
        print!(
            "{} ({}): {}; {}",
            Escaped(&c.name),
            c.source,
            Escaped(&names),
            expiry
        );
        if let Some(due) = c.renewal_due {
            print!(
                "; renewal due {}",
                when(i64::try_from(due).unwrap_or(i64::MAX))
            );
        }
        if let Some(next) = c.next_attempt {
            print!(
                "; next attempt {}",
                when(i64::try_from(next).unwrap_or(i64::MAX))
            );
        }
        match &c.path {
            Some(p) => println!("; {}", Escaped(p)),
            None => println!(),
        }
    }
}

fn print_reload(r: &ReloadResult) {
    let at = when(i64::try_from(r.at).unwrap_or(i64::MAX));
    if r.ok {
        println!("reload at {at}: ok");
        return;
    }
    println!("reload at {at}: failed; what was serving stays");
    for e in &r.errors {
        match &e.path {
            Some(p) => println!("  {}: {}: {}", e.what, Escaped(p), Escaped(&e.reason)),
            None => println!("  {}: {}", e.what, Escaped(&e.reason)),
        }
    }
}

fn print_status(s: &ControlStatus) {
    print_certs(&s.certificates);
    match &s.client_ca {
        Some(c) => println!(
            "client CA: {} anchors, generation {}",
            c.anchors, c.generation
        ),
        None => println!("client CA: none (no client certificates asked for)"),
    }
    match s.fleet_up {
        Some(true) => println!("ticket keys: {} (shared state reachable)", s.ticket_keys),
        Some(false) => println!("ticket keys: {} (shared state unreachable)", s.ticket_keys),
        None => match s.ticket_key_age_s {
            Some(age) => println!("ticket keys: {} (current key {age} s old)", s.ticket_keys),
            None => println!("ticket keys: {}", s.ticket_keys),
        },
    }
    println!("connections open: {}", s.connections_open);
    match &s.last_reload {
        Some(r) => print_reload(r),
        None => println!("no reload since start"),
    }
}
