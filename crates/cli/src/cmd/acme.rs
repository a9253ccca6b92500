//! `tlskit acme issue|renew|revoke`: certificates from an ACME CA (Let's Encrypt and
//! others) for servers other than `tlskit serve` (Exim, nginx), cron-style.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use tlskit_acme::{AcmeSettings, ChallengeKind, IssueOptions, IssueReport, RevokeOptions};

use crate::output::{print_json, CmdResult, Outcome, Style};

const ACME_EXAMPLES: &str = "\
Examples:
  # Port 80 answers HTTP-01; the key is created (0600) when missing
  tlskit acme issue --directory https://acme-v02.api.letsencrypt.org/directory \\
      --domain mail.example.com --key /etc/exim4/tls.key -o /etc/exim4/tls.crt \\
      --http-listen 0.0.0.0:80 --acme-email hostmaster@example.com
  # TLS-ALPN-01 on port 443 (nothing else may hold it meanwhile)
  tlskit acme issue --directory URL --domain www.example.com --key key.pem -o chain.pem \\
      --tls-listen 0.0.0.0:443
  # From cron, daily: renews only when due (the CA's ARI window, else 2/3 of the lifetime)
  tlskit acme renew --directory URL --domain www.example.com --key key.pem -o chain.pem \\
      --http-listen 0.0.0.0:80 --json | grep -q '\"renewed\": *true' && systemctl reload nginx
  tlskit acme revoke --directory URL --cert chain.pem

Progress is logged on stderr with --log-level info (default: warnings only); renew -q
prints nothing when not due. The account is created once and kept (with its key, 0600)
in --acme-storage [default: $HOME/.local/share/tlskit/acme]. Exit 0 done (renew: also
when not due), 2 error (the CA's problem document is quoted).";

/// `tlskit acme ...`.
#[derive(clap::Subcommand)]
pub(crate) enum AcmeCmd {
    /// Get a certificate now.
    #[command(after_help = ACME_EXAMPLES)]
    Issue(IssueArgs),
    /// Renew the certificate in -o when it is due (or now with --force).
    #[command(after_help = ACME_EXAMPLES)]
    Renew(RenewArgs),
    /// Revoke a certificate with the stored account.
    #[command(after_help = ACME_EXAMPLES)]
    Revoke(RevokeArgs),
}

/// CA and account flags shared by every subcommand.
#[derive(clap::Args)]
pub(crate) struct CaArgs {
    /// The CA's ACME directory URL.
    #[arg(long, value_name = "URL")]
    directory: String,
    #[command(flatten)]
    account: super::AcmeArgs,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Log level on stderr: off, error, warn (default), info (each ACME step), debug.
    #[arg(long, value_name = "LEVEL", default_value = "warn", value_parser = super::offer_str(super::LOG_LEVELS), hide_possible_values = true)]
    log_level: String,
}

#[derive(clap::Args)]
pub(crate) struct IssueArgs {
    #[command(flatten)]
    ca: CaArgs,
    /// DNS name of the certificate (repeatable; the first names the storage entry).
    #[arg(long, required = true, value_name = "NAME")]
    domain: Vec<String>,
    /// The certificate's private key (PEM, PKCS#8): used when it exists, else created 0600.
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Where to write the chain (PEM, leaf first).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: PathBuf,
    /// Answer HTTP-01 on this plain HTTP address (the CA connects to port 80).
    #[arg(long, value_name = "ADDR", conflicts_with = "tls_listen")]
    http_listen: Option<SocketAddr>,
    /// Answer TLS-ALPN-01 on this address (the CA connects to port 443).
    #[arg(long, value_name = "ADDR")]
    tls_listen: Option<SocketAddr>,
    /// Certificate profile to ask for (e.g. Let's Encrypt's `shortlived`).
    #[arg(long, value_name = "NAME")]
    acme_profile: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct RenewArgs {
    #[command(flatten)]
    issue: IssueArgs,
    /// Renew now, whatever the schedule says.
    #[arg(long)]
    force: bool,
    /// Print nothing when the certificate is not due (for cron, which mails any output).
    #[arg(short, long)]
    quiet: bool,
}

#[derive(clap::Args)]
pub(crate) struct RevokeArgs {
    #[command(flatten)]
    ca: CaArgs,
    /// The certificate to revoke (PEM; the first certificate of the file).
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// RFC 5280 reason, code or name: 0 unspecified, 1 keyCompromise, 3
    /// affiliationChanged, 4 superseded, 5 cessationOfOperation (as `ca revoke --reason`).
    #[arg(long, value_name = "CODE", value_parser = super::reason_parser(), hide_possible_values = true)]
    reason: Option<tlskit_x509::RevocationReason>,
}

/// `$HOME/.local/share/tlskit/acme` (or `$XDG_DATA_HOME/tlskit/acme`).
fn default_storage() -> anyhow::Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("tlskit/acme"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .context("no --acme-storage DIR and no $HOME")?;
    Ok(PathBuf::from(home).join(".local/share/tlskit/acme"))
}

fn settings(ca: &CaArgs, domains: Vec<String>) -> anyhow::Result<AcmeSettings> {
    let storage = match &ca.account.acme_storage {
        Some(d) => d.clone(),
        None => default_storage()?,
    };
    let mut s = AcmeSettings::new(
        ca.directory.clone(),
        domains
            .into_iter()
            .map(|d| tlskit_acme::domain(&d))
            .collect::<Result<_, _>>()?,
        storage,
    );
    ca.account.onto(&mut s);
    Ok(s)
}

fn issue_options(a: &IssueArgs) -> anyhow::Result<IssueOptions> {
    let mut s = settings(&a.ca, a.domain.clone())?;
    let listen = match (a.http_listen, a.tls_listen) {
        (Some(h), None) => {
            s.challenge = ChallengeKind::Http01;
            h
        }
        (None, Some(t)) => {
            s.challenge = ChallengeKind::TlsAlpn01;
            t
        }
        _ => bail!("give --http-listen ADDR (HTTP-01) or --tls-listen ADDR (TLS-ALPN-01)"),
    };
    s.profile = a.acme_profile.clone();
    Ok(IssueOptions::new(s, a.key.clone(), a.out.clone(), listen))
}

fn print_issued(r: &IssueReport) {
    let st = Style::stdout();
    println!(
        "{} {} (serial {})",
        st.good("issued"),
        r.domains.join(", "),
        tlskit_x509::text::serial_from_hex(&r.serial)
    );
    println!("  chain:     {}", r.chain.display());
    println!(
        "  key:       {}{}",
        r.key.display(),
        if r.key_created { " (created)" } else { "" }
    );
    println!("  expires:   {}", unix_date(r.not_after));
    println!("  challenge: {}, {:.0} ms", r.challenge, r.ms);
}

/// Unix seconds as RFC 3339 (`2026-11-23T21:41:37Z`).
fn unix_date(secs: u64) -> String {
    tlskit_x509::datetime::rfc3339(i64::try_from(secs).unwrap_or(i64::MAX))
}

fn set_log_level(ca: &CaArgs) -> anyhow::Result<()> {
    let l = tlskit_tls::log::Level::parse(&ca.log_level).with_context(|| {
        format!(
            "--log-level {}: use off, error, warn, info or debug",
            ca.log_level
        )
    })?;
    tlskit_tls::log::set_level(l);
    Ok(())
}

pub(crate) fn run(cmd: AcmeCmd) -> CmdResult {
    set_log_level(match &cmd {
        AcmeCmd::Issue(a) => &a.ca,
        AcmeCmd::Renew(a) => &a.issue.ca,
        AcmeCmd::Revoke(a) => &a.ca,
    })?;
    match cmd {
        AcmeCmd::Issue(a) => {
            let o = issue_options(&a)?;
            let r = tlskit_acme::issue(&o)?;
            if a.ca.json {
                print_json(&r)?;
            } else {
                print_issued(&r);
            }
        }
        AcmeCmd::Renew(a) => {
            let o = issue_options(&a.issue)?;
            let r = tlskit_acme::renew(&o, a.force)?;
            if a.issue.ca.json {
                print_json(&r)?;
            } else if let Some(i) = &r.issued {
                println!("renewed ({})", r.reason);
                print_issued(i);
            } else if !a.quiet {
                println!("not due: renewal at {}", unix_date(r.due));
            }
        }
        AcmeCmd::Revoke(a) => {
            let s = settings(&a.ca, Vec::new())?;
            let serial = tlskit_acme::revoke(&RevokeOptions::new(s, a.cert.clone(), a.reason))?;
            if a.ca.json {
                print_json(&serde_json::json!({ "revoked": true, "serial": serial }))?;
            } else {
                println!(
                    "revoked serial {}",
                    tlskit_x509::text::serial_from_hex(&serial)
                );
            }
        }
    }
    Ok(Outcome::Success)
}
