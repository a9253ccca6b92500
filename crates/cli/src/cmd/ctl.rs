//! `tlskit ctl`: ask a running `tlskit serve --control PATH` over its control socket.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Serialize;
use tlskit_server::{ControlCert, ControlRenewal, ControlReply, ControlStatus, ReloadResult};

use crate::output::{print_json, CmdResult, Escaped, Outcome};

/// Where `serve` puts its socket under the shipped systemd unit (RuntimeDirectory=tlskit).
const DEFAULT_CONTROL: &str = "/run/tlskit/control.sock";

/// `ctl renew`'s deadline when `--timeout` is not given, in seconds.
const RENEW_TIMEOUT: u64 = 300;

/// Largest reply read (a server with many SNI pairs lists each).
const MAX_REPLY: usize = 64 << 20;

/// `tlskit ctl`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit ctl --control /run/tlskit/control.sock status\n  tlskit ctl --control ./control.sock reload\n  tlskit ctl --control ./control.sock certs --json\n  tlskit ctl renew www.example.com --timeout 600\n\nThe socket: --control, else $RUNTIME_DIRECTORY/control.sock when RUNTIME_DIRECTORY is set\n(systemd, RuntimeDirectory=), else /run/tlskit/control.sock: where `serve` puts it under\nthe shipped unit.\n\nExit status: 0 done, 1 the reload or the renewal failed (what was serving stays; the\nreason is printed), 2 no answer from the server (no socket, not running, permission\ndenied) or none within the deadline. JSON: schema\ntlskit.ctl.status/1, tlskit.ctl.certs/1, tlskit.ctl.reload/1, tlskit.ctl.renew/1\n(docs/json.md)."
)]
pub(crate) struct CtlArgs {
    /// The server's control socket (`serve --control PATH`) [default:
    /// $RUNTIME_DIRECTORY/control.sock when RUNTIME_DIRECTORY is set, else
    /// /run/tlskit/control.sock].
    #[arg(long, value_name = "PATH", global = true)]
    control: Option<PathBuf>,
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
    /// Renew the ACME certificate for NAME now, and wait for the result: the new
    /// certificate's serial and expiry once it is served, or why the attempt failed.
    Renew {
        /// A name of the server's ACME certificate (`--domain`).
        #[arg(value_name = "NAME")]
        name: String,
        /// Seconds to wait for the result (1 to 3600); past them the renewal goes on, and
        /// ctl exits 2 [default: 300].
        #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: Option<u64>,
        /// Print JSON (schema tlskit.ctl.renew/1, docs/json.md).
        #[arg(long)]
        json: bool,
    },
}

/// `ctl renew --json`: `certificate` is the ACME certificate served now (the new one, or
/// the one that stays after a failure).
#[derive(Serialize)]
struct RenewJson<'a> {
    certificate: &'a ControlCert,
    ok: bool,
    serial: Option<&'a str>,
    not_after: Option<i64>,
    reason: Option<&'a str>,
}

/// `ctl certs --json`.
#[derive(Serialize)]
struct CertsJson<'a> {
    certificates: &'a [ControlCert],
}

/// The socket to ask: `--control`, else the runtime directory's, else the unit's.
fn control_path(given: Option<PathBuf>) -> PathBuf {
    given
        .or_else(|| {
            tlskit_server::runtime_control_path(std::env::var_os("RUNTIME_DIRECTORY").as_deref())
        })
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONTROL))
}

pub(crate) fn run(a: CtlArgs) -> CmdResult {
    let control = control_path(a.control);
    let wait = tlskit_server::RELOAD_WAIT + Duration::from_secs(5);
    match a.cmd {
        CtlCmd::Status { json } => {
            let status = checked(&control, ask(&control, "status", wait)?, "status")?
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
            let certs = checked(&control, ask(&control, "certs", wait)?, "certs")?
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
        CtlCmd::Renew {
            name,
            timeout,
            json,
        } => {
            if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                bail!("{}: not a DNS name", Escaped(&name));
            }
            let secs = timeout.unwrap_or(RENEW_TIMEOUT);
            let request = format!("renew {name} {secs}");
            let reply = ask(&control, &request, Duration::from_secs(secs + 5))?;
            // A failed renewal comes with its result (and an `error` for older clients).
            if let Some(r) = &reply.renewal {
                return print_renewal(&RenewJson::from(r), json);
            }
            // A server from before `renewal`: the new certificate alone.
            let c = checked(&control, reply, &request)?
                .renewed
                .context("the server's reply has no renewal result")?;
            print_renewal(
                &RenewJson {
                    certificate: &c,
                    ok: true,
                    serial: None,
                    not_after: c.not_after,
                    reason: None,
                },
                json,
            )
        }
        CtlCmd::Reload { json } => {
            let r = checked(&control, ask(&control, "reload", wait)?, "reload")?
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

impl<'a> From<&'a ControlRenewal> for RenewJson<'a> {
    fn from(r: &'a ControlRenewal) -> Self {
        Self {
            certificate: &r.certificate,
            ok: r.ok,
            serial: r.serial.as_deref(),
            not_after: r.not_after,
            reason: r.reason.as_deref(),
        }
    }
}

/// `ctl renew`'s report; exit 1 when the renewal failed.
fn print_renewal(r: &RenewJson<'_>, json: bool) -> CmdResult {
    if json {
        print_json(r)?;
    } else if r.ok {
        let expiry = r.not_after.map_or_else(
            || "expiry unknown".to_string(),
            |t| format!("expires {}", when(t)),
        );
        println!(
            "renewed: serial {}, {expiry}",
            Escaped(r.serial.unwrap_or("unknown"))
        );
        print_certs(std::slice::from_ref(r.certificate));
    } else {
        println!(
            "renewal failed: {}",
            Escaped(r.reason.unwrap_or("no reason given"))
        );
        print!("still served: ");
        print_certs(std::slice::from_ref(r.certificate));
    }
    Ok(if r.ok {
        Outcome::Success
    } else {
        Outcome::Negative
    })
}

/// The reply, or its `error` as an error (exit 2).
fn checked(path: &Path, reply: ControlReply, request: &str) -> anyhow::Result<ControlReply> {
    if let Some(e) = &reply.error {
        let shown = path.display().to_string();
        bail!(
            "{}: the server refused {}: {}",
            Escaped(&shown),
            Escaped(request),
            Escaped(e)
        );
    }
    Ok(reply)
}

/// Send one request, read the reply, waiting at most `wait` for all of it (the server
/// answers a reload or a renewal once it ends, within its own deadline).
fn ask(path: &Path, request: &str, wait: Duration) -> anyhow::Result<ControlReply> {
    let shown = path.display().to_string();
    let shown = Escaped(&shown);
    let mut s = std::os::unix::net::UnixStream::connect(path)
        .with_context(|| format!("{shown}: cannot connect to the control socket"))?;
    s.set_read_timeout(Some(wait))?;
    s.set_write_timeout(Some(tlskit_server::REQUEST_DEADLINE))?;
    s.write_all(format!("{request}\n").as_bytes())
        .with_context(|| format!("{shown}: cannot send the request"))?;
    // One deadline for the whole reply, not one per read: a server that sends a byte now
    // and then cannot hold the command past `wait`.
    let deadline = Instant::now() + wait;
    let mut text = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        let late = || {
            anyhow::anyhow!(
                "{shown}: no complete reply from the server within {}",
                seconds(wait)
            )
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        s.set_read_timeout(Some(left))?;
        let n = match s.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(late())
            }
            Err(e) => return Err(e).with_context(|| format!("{shown}: no reply from the server")),
        };
        if n == 0 {
            break;
        }
        if text.len() + n > MAX_REPLY {
            bail!(
                "{shown}: the server's reply is larger than {} MiB",
                MAX_REPLY >> 20
            );
        }
        text.extend_from_slice(&buf[..n]);
    }
    serde_json::from_slice(&text)
        .with_context(|| format!("{shown}: the reply is not a control reply"))
}

/// A wait as people say it: `6 s`, or `0.3 s` below a second.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 || d.as_secs() >= 10 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
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
        Some(up) => {
            let reach = if up { "reachable" } else { "unreachable" };
            let synced = s.fleet_last_sync.map_or_else(
                || "never in step".to_string(),
                |t| {
                    format!(
                        "last in step {}",
                        when(i64::try_from(t).unwrap_or(i64::MAX))
                    )
                },
            );
            let from = if s.ticket_key_source == "fleet" {
                "from the fleet"
            } else {
                "made here"
            };
            let key = match (s.ticket_key_id, s.ticket_key_age_s) {
                (Some(id), Some(age)) => format!("; current key {id} {from}, {age} s old"),
                _ => String::new(),
            };
            println!(
                "ticket keys: {} (shared state {reach}; {synced}{key})",
                s.ticket_keys
            );
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A control socket that answers one byte every 20 ms for ever: `ask` gives up at its
    /// one deadline for the whole reply (not one per read) and says so. The end-to-end
    /// form (`ctl renew --timeout 1`, 6 s) is in the slow tier (bounds_cli.rs).
    #[test]
    fn ask_gives_up_on_a_socket_that_trickles_at_its_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("control.sock");
        tlskit_testkit::hostile::trickling_unix_server(&sock, Duration::from_millis(20), 3000);
        let t0 = Instant::now();
        let e = ask(&sock, "renew x", Duration::from_millis(300)).expect_err("a reply");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let text = e.to_string();
        assert!(
            text.ends_with("control.sock: no complete reply from the server within 0.3 s"),
            "{text}"
        );
    }

    #[test]
    fn waits_read_as_people_say_them() {
        assert_eq!(seconds(Duration::from_secs(6)), "6 s");
        assert_eq!(seconds(Duration::from_millis(300)), "0.3 s");
        assert_eq!(seconds(Duration::from_millis(65_500)), "65 s");
    }
}
