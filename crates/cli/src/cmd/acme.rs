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
  # From cron, daily: renews only when due (ARI, else half or two thirds of the lifetime)
  tlskit acme renew --directory URL --domain www.example.com --key key.pem -o chain.pem \\
      --http-listen 0.0.0.0:80 --json | grep -q '\"renewed\": *true' && systemctl reload nginx
  tlskit acme revoke --directory URL --cert chain.pem
  # DNS-01 (wildcards): TXT records by RFC 2136 UPDATE signed with a tsig-keygen key
  tlskit acme issue --directory URL --domain '*.example.com' --domain example.com \\
      --acme-challenge dns-01 --acme-dns-update 192.0.2.53 \\
      --acme-dns-tsig-key /etc/tlskit/acme-update.key -o chain.pem --key key.pem
  # ... or by any DNS API: the hook is run as `dns-hook add|remove NAME VALUE`
  tlskit acme issue ... --acme-challenge dns-01 --acme-dns-exec /usr/local/bin/dns-hook

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
    /// The stored ACME account: show it, roll its key over, deactivate it.
    #[command(subcommand)]
    Account(AccountCmd),
}

const ACCOUNT_EXAMPLES: &str = "\
Examples:
  tlskit acme account show --directory URL --acme-storage /var/lib/tlskit/acme
  # A new account key (RFC 8555 7.3.5); the old credentials are kept as a backup
  # until the CA has confirmed the new key
  tlskit acme account rollover --directory URL --acme-storage /var/lib/tlskit/acme
  # If the storage refused the new key after the CA took it, the error names a rescue
  # file (0600, DIR/rescue/...): put it back once the storage works again
  tlskit acme account restore --directory URL --acme-storage /var/lib/tlskit/acme \\
      --from /var/lib/tlskit/acme/rescue/0f1e2d3c4b5a6978.rollover-1795000000.json
  # A fleet's account, kept in its Redis
  tlskit acme account show --directory URL --shared-state rediss://redis:6380/0 \\
      --shared-state-key /etc/tlskit/fleet.kek --json
  # Cannot be undone; the credentials are kept as a backup, the next order makes a
  # new account
  tlskit acme account deactivate --directory URL --acme-storage DIR --yes

Exit 0 done (show: the CA says the account is valid), 1 show: the CA says the account
is deactivated or does not know it, 2 error. JSON: schema tlskit.acme.account.show/1,
tlskit.acme.account.rollover/1, tlskit.acme.account.deactivate/1,
tlskit.acme.account.restore/1 (docs/json.md).";

/// `tlskit acme account ...`.
#[derive(clap::Subcommand)]
pub(crate) enum AccountCmd {
    /// The stored account: its URL, its key's thumbprint, and what the CA says of it.
    #[command(after_help = ACCOUNT_EXAMPLES)]
    Show(AccountArgs),
    /// Replace the account key (RFC 8555 7.3.5); the new key is written 0600, atomically.
    #[command(after_help = ACCOUNT_EXAMPLES)]
    Rollover(AccountArgs),
    /// Deactivate the account at the CA (RFC 8555 7.3.6; cannot be undone).
    #[command(after_help = ACCOUNT_EXAMPLES)]
    Deactivate(DeactivateArgs),
    /// Put credentials from a file (a rollover's rescue file) in the storage, once the CA
    /// confirmed their key is the account's; the file is removed then.
    #[command(after_help = ACCOUNT_EXAMPLES)]
    Restore(RestoreArgs),
}

#[derive(clap::Args)]
pub(crate) struct AccountArgs {
    #[command(flatten)]
    ca: CaArgs,
    /// The fleet's shared state (Redis URL) that holds the account, instead of
    /// --acme-storage (as `serve --shared-state`).
    #[arg(long, value_name = "URL", requires = "shared_state_key")]
    shared_state: Option<String>,
    /// The fleet's key-encryption key file (with --shared-state).
    #[arg(long, value_name = "FILE", requires = "shared_state")]
    shared_state_key: Option<PathBuf>,
    /// PEM CA file for a rediss:// Redis (with --shared-state).
    #[arg(long, value_name = "FILE", requires = "shared_state")]
    shared_state_ca: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct DeactivateArgs {
    #[command(flatten)]
    account: AccountArgs,
    /// Deactivate without asking (otherwise asked on a terminal, refused elsewhere).
    #[arg(long)]
    yes: bool,
}

#[derive(clap::Args)]
pub(crate) struct RestoreArgs {
    #[command(flatten)]
    account: AccountArgs,
    /// The credentials file (JSON, as a failed rollover's error names it).
    #[arg(long, value_name = "FILE")]
    from: PathBuf,
}

/// CA and account flags shared by every subcommand.
#[derive(clap::Args)]
pub(crate) struct CaArgs {
    /// The CA's ACME directory URL.
    #[arg(long, value_name = "URL")]
    directory: String,
    #[command(flatten)]
    account: super::AcmeArgs,
    /// Print JSON (schema tlskit.acme.COMMAND/1, e.g. tlskit.acme.account.show/1;
    /// docs/json.md).
    #[arg(long)]
    json: bool,
    /// Log level on stderr: off, error, warn (default), info (each ACME step), debug.
    #[arg(long, value_name = "LEVEL", default_value = "warn", value_parser = super::offer_str(super::LOG_LEVELS), hide_possible_values = true)]
    log_level: String,
}

#[derive(clap::Args)]
pub(crate) struct IssueArgs {
    #[command(flatten)]
    // Boxed (as the DNS-01 flags): keeps `Command`'s variants of similar size.
    ca: Box<CaArgs>,
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
    /// The challenge: tls-alpn-01 (--tls-listen), http-01 (--http-listen) or dns-01
    /// (--acme-dns-update or --acme-dns-exec; the only one for wildcards) [default: from
    /// the listener or DNS flag given].
    #[arg(long, value_name = "tls-alpn-01|http-01|dns-01", value_parser = super::offer_str(&["tls-alpn-01", "http-01", "dns-01"]), hide_possible_values = true)]
    acme_challenge: Option<String>,
    // Boxed: keeps `Command`'s variants of similar size.
    #[command(flatten)]
    dns: Box<super::AcmeDnsArgs>,
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
    ca.account.onto(&mut s)?;
    Ok(s)
}

fn issue_options(a: &IssueArgs) -> anyhow::Result<IssueOptions> {
    let mut s = settings(&a.ca, a.domain.clone())?;
    a.dns.onto(&mut s)?;
    let asked = a.acme_challenge.as_deref().and_then(ChallengeKind::parse);
    let listen = match (asked, a.http_listen, a.tls_listen) {
        (None | Some(ChallengeKind::Http01), Some(h), None) => {
            s.challenge = ChallengeKind::Http01;
            h
        }
        (None | Some(ChallengeKind::TlsAlpn01), None, Some(t)) => {
            s.challenge = ChallengeKind::TlsAlpn01;
            t
        }
        (Some(ChallengeKind::Dns01), None, None) => {
            s.challenge = ChallengeKind::Dns01;
            // Not used: DNS-01 listens nowhere.
            SocketAddr::from(([127, 0, 0, 1], 0))
        }
        (None, None, None) if a.dns.writer_given() => {
            s.challenge = ChallengeKind::Dns01;
            SocketAddr::from(([127, 0, 0, 1], 0))
        }
        (Some(ChallengeKind::Dns01), _, _) => {
            bail!("--acme-challenge dns-01 answers in DNS: drop --http-listen and --tls-listen")
        }
        (Some(ChallengeKind::Http01), _, _) => {
            bail!("--acme-challenge http-01 needs --http-listen ADDR (and no --tls-listen)")
        }
        (Some(ChallengeKind::TlsAlpn01), _, _) => {
            bail!("--acme-challenge tls-alpn-01 needs --tls-listen ADDR (and no --http-listen)")
        }
        _ => bail!(
            "give --http-listen ADDR (HTTP-01), --tls-listen ADDR (TLS-ALPN-01) or \
             --acme-challenge dns-01 with --acme-dns-update ADDR or --acme-dns-exec PROGRAM"
        ),
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

fn account_options(a: &AccountArgs) -> anyhow::Result<tlskit_acme::AccountOptions> {
    let s = settings(&a.ca, Vec::new())?;
    let storage: Option<std::sync::Arc<dyn tlskit_acme::AcmeStorage>> = match &a.shared_state {
        Some(url) => {
            let key = a
                .shared_state_key
                .clone()
                .context("--shared-state needs --shared-state-key FILE")?;
            let mut shared = tlskit_fleet::SharedSettings::new(url.clone(), key);
            shared.ca.clone_from(&a.shared_state_ca);
            Some(std::sync::Arc::new(tlskit_fleet::RedisAcmeStorage::open(
                &shared,
            )?))
        }
        None => None,
    };
    Ok(tlskit_acme::AccountOptions::new(s, storage))
}

fn print_account(what: &str, r: &tlskit_acme::AccountReport) {
    let st = Style::stdout();
    let status = match r.status {
        tlskit_acme::AccountStatus::Valid => st.good("valid"),
        other => st.bad(other.name()),
    };
    println!("{what} {}", tlskit_x509::text::escape(&r.id));
    println!("  status:     {status}");
    println!("  directory:  {}", tlskit_x509::text::escape(&r.directory));
    println!("  key:        {} (RFC 7638 thumbprint)", r.key_thumbprint);
    if let Some(p) = &r.previous_key_thumbprint {
        println!("  previous:   {p}");
    }
    println!("  stored in:  {}", tlskit_x509::text::escape(&r.storage));
    if let Some(b) = &r.backup {
        println!("  backup:     {}", tlskit_x509::text::escape(b));
    }
}

/// Whether the user confirms deactivating the account: asked on a terminal; refused
/// (an error) when stdin is not one.
fn confirm_deactivation(o: &tlskit_acme::AccountOptions) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Read, Write};
    if !std::io::stdin().is_terminal() {
        bail!("deactivating an account cannot be undone: give --yes to confirm");
    }
    let shown = tlskit_acme::account_show(o)?;
    eprint!(
        "Deactivate the ACME account {} at {}? It cannot be undone. Type yes: ",
        tlskit_x509::text::escape(&shown.id),
        tlskit_x509::text::escape(&shown.directory)
    );
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().take(64).read_line(&mut line)?;
    Ok(line.trim() == "yes")
}

fn run_account(cmd: AccountCmd) -> CmdResult {
    let (args, what) = match &cmd {
        AccountCmd::Show(a) => (a, "account"),
        AccountCmd::Rollover(a) => (a, "rolled over"),
        AccountCmd::Deactivate(d) => (&d.account, "deactivated"),
        AccountCmd::Restore(r) => (&r.account, "restored"),
    };
    let o = account_options(args)?;
    let r = match &cmd {
        AccountCmd::Show(_) => tlskit_acme::account_show(&o)?,
        AccountCmd::Rollover(_) => tlskit_acme::account_rollover(&o)?,
        AccountCmd::Deactivate(d) => {
            if !d.yes && !confirm_deactivation(&o)? {
                bail!("not confirmed: the account was left as it is");
            }
            tlskit_acme::account_deactivate(&o)?
        }
        AccountCmd::Restore(r) => tlskit_acme::account_restore(&o, &r.from)?,
    };
    if args.ca.json {
        print_json(&r)?;
    } else {
        print_account(what, &r);
    }
    Ok(match (&cmd, r.status) {
        (AccountCmd::Show(_), s) if s != tlskit_acme::AccountStatus::Valid => Outcome::Negative,
        _ => Outcome::Success,
    })
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
        AcmeCmd::Account(AccountCmd::Show(a) | AccountCmd::Rollover(a)) => &a.ca,
        AcmeCmd::Account(AccountCmd::Deactivate(d)) => &d.account.ca,
        AcmeCmd::Account(AccountCmd::Restore(r)) => &r.account.ca,
    })?;
    match cmd {
        AcmeCmd::Account(c) => return run_account(c),
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
