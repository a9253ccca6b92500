//! `tlskit trust install|uninstall|list`: parsing and output; tlskit-trust does the work.

use std::path::PathBuf;

use tlskit_trust::{
    CaCert, InstallReport, ListReport, Options, SystemRunner, TargetKind, TargetReport,
    UninstallReport,
};

use crate::cmd::{offer, Parse};
use crate::output::{bounded, print_json, CmdResult, Escaped, Outcome, Style};

/// `tlskit trust`.
#[derive(clap::Subcommand)]
pub(crate) enum TrustCmd {
    /// Install a CA certificate into this machine's trust: the system store, NSS databases
    /// (Chromium, Firefox), Java's cacerts. Every change is journaled for `uninstall`.
    #[command(after_help = INSTALL_HELP)]
    Install(InstallArgs),
    /// Undo an install exactly, from its journal (also an install that stopped half-way).
    #[command(after_help = UNINSTALL_HELP)]
    Uninstall(UninstallArgs),
    /// The CAs tlskit installed, per target, and the journals it keeps.
    #[command(after_help = LIST_HELP)]
    List(ListArgs),
}

const INSTALL_HELP: &str = "Examples:\n  tlskit ca init ./lab --permit-dns lab.example --subject 'CN=Lab CA'\n  sudo tlskit trust install ./lab/ca.pem --target system\n  tlskit trust install ./lab/ca.pem --target nss          # ~/.pki/nssdb, Firefox profiles\n  tlskit trust install ./lab/ca.pem --dry-run\n  tlskit trust install ca.pem --root ./image --target system   # an image's tree\n\nA CA without name constraints is installed with a warning: once trusted it can vouch for\nany name. The system store: Debian-like (usr/local/share/ca-certificates,\nupdate-ca-certificates) and Fedora-like (etc/pki/ca-trust/source/anchors, update-ca-trust),\nas found. Journals and backups: --state, default ROOT/var/lib/tlskit/trust with --root,\nelse ~/.local/state/tlskit/trust. Exit status: 0 installed (or nothing to do), 2 error\n(a certificate that is not a CA is refused). JSON: schema tlskit.trust.install/1.";

const UNINSTALL_HELP: &str = "Examples:\n  sudo tlskit trust uninstall ./lab/ca.pem\n  tlskit trust uninstall ca.pem --root ./image --dry-run\n\nThe same --root and --state as the install find its journal. Exit status: 0 undone, 1 no\njournal for this CA (nothing changed), 2 error (the journal is kept; run it again).\nJSON: schema tlskit.trust.uninstall/1.";

const LIST_HELP: &str = "Examples:\n  tlskit trust list\n  tlskit trust list --target nss --nssdb ~/.pki/nssdb --json\n  tlskit trust list --root ./image\n\nExit status: 0 listed, 2 a target could not be read (the others are listed).\nJSON: schema tlskit.trust.list/1.";

fn parse_target(s: &str) -> Result<TargetKind, String> {
    TargetKind::parse(s).ok_or_else(|| "use system, nss or java".into())
}

/// Where to look, shared by install and list.
#[derive(clap::Args)]
pub(crate) struct WhereArgs {
    /// Only these targets: system, nss, java (repeatable or comma-separated) [default:
    /// every target found].
    #[arg(long, value_name = "TARGET", value_delimiter = ',', value_parser = offer(&["system", "nss", "java"], parse_target as Parse<TargetKind>), hide_possible_values = true)]
    target: Vec<TargetKind>,
    /// A root tree: the system store under DIR (its update tool run on DIR), nothing
    /// outside DIR changed unless named by --nssdb, --java-cacerts or --state.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// An NSS database directory (sql: format) instead of ~/.pki/nssdb and the Firefox
    /// profiles (repeatable).
    #[arg(long, value_name = "DIR")]
    nssdb: Vec<PathBuf>,
    /// A Java keystore instead of the JDK's cacerts (password: TLSKIT_JAVA_STOREPASS,
    /// else changeit).
    #[arg(long, value_name = "FILE")]
    java_cacerts: Option<PathBuf>,
    /// Where journals and backups go.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
}

impl WhereArgs {
    fn options(self, dry_run: bool) -> Options {
        Options {
            targets: self.target,
            root: self.root,
            nssdbs: self.nssdb,
            java_cacerts: self.java_cacerts,
            state: self.state,
            home: None,
            dry_run,
        }
    }
}

/// `tlskit trust install`.
#[derive(clap::Args)]
pub(crate) struct InstallArgs {
    /// The CA certificate (PEM or DER, one certificate).
    #[arg(value_name = "CA.pem")]
    ca: PathBuf,
    #[command(flatten)]
    place: WhereArgs,
    /// Say what would change; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON (schema tlskit.trust.install/1, docs/json.md).
    #[arg(long)]
    json: bool,
}

/// `tlskit trust uninstall`.
#[derive(clap::Args)]
pub(crate) struct UninstallArgs {
    /// The CA certificate given to install.
    #[arg(value_name = "CA.pem")]
    ca: PathBuf,
    /// The root tree given to install (its journal is under it).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The state directory given to install.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Say what would be undone; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON (schema tlskit.trust.uninstall/1, docs/json.md).
    #[arg(long)]
    json: bool,
}

/// `tlskit trust list`.
#[derive(clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    place: WhereArgs,
    /// Print JSON (schema tlskit.trust.list/1, docs/json.md).
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(c: TrustCmd) -> CmdResult {
    let runner = SystemRunner::default();
    match c {
        TrustCmd::Install(a) => {
            let ca = CaCert::from_file(&a.ca)?;
            let opts = a.place.options(a.dry_run);
            let report = tlskit_trust::install(&ca, &opts, &runner)?;
            if a.json {
                print_json(&report)?;
            } else {
                print_install(&report, &a.ca);
            }
            Ok(Outcome::Success)
        }
        TrustCmd::Uninstall(a) => {
            let ca = CaCert::from_file(&a.ca)?;
            let opts = Options {
                root: a.root,
                state: a.state,
                dry_run: a.dry_run,
                ..Options::default()
            };
            let report = tlskit_trust::uninstall(&ca, &opts, &runner)?;
            if a.json {
                print_json(&report)?;
            } else {
                print_uninstall(&report);
            }
            Ok(if report.found {
                Outcome::Success
            } else {
                Outcome::Negative
            })
        }
        TrustCmd::List(a) => {
            let opts = a.place.options(false);
            let report = tlskit_trust::list(&opts, &runner)?;
            if a.json {
                print_json(&report)?;
            } else {
                print_list(&report);
            }
            for e in &report.errors {
                eprintln!("tlskit: {}", bounded(e));
            }
            if report.errors.is_empty() {
                Ok(Outcome::Success)
            } else {
                anyhow::bail!("{} target(s) could not be listed", report.errors.len())
            }
        }
    }
}

fn print_targets(targets: &[TargetReport], style: Style) {
    for t in targets {
        println!(
            "{} ({}):",
            style.bold(t.target.name()),
            Escaped(&t.location)
        );
        for a in &t.actions {
            println!("  {}", bounded(a));
        }
        for n in &t.notes {
            println!("  note: {}", bounded(n));
        }
    }
}

fn print_install(r: &InstallReport, ca_path: &std::path::Path) {
    let style = Style::stdout();
    println!(
        "CA: {} (sha256 {})",
        Escaped(&r.certificate.subject),
        r.certificate.sha256
    );
    if r.certificate.permitted.is_empty() {
        println!("name constraints: none");
    } else {
        println!(
            "name constraints: permitted {}",
            Escaped(&r.certificate.permitted.join(", "))
        );
    }
    for w in &r.warnings {
        eprintln!("tlskit: warning: {}", w.message);
    }
    if r.dry_run {
        println!(
            "{}",
            style.warn("dry run: nothing changed; an install would:")
        );
    }
    print_targets(&r.targets, style);
    match &r.journal {
        Some(j) => println!(
            "{}: journal {} (undo: tlskit trust uninstall {})",
            style.good("installed"),
            Escaped(&j.display().to_string()),
            Escaped(&ca_path.display().to_string())
        ),
        None if !r.dry_run => println!("nothing to change: already in every target"),
        None => {}
    }
}

fn print_uninstall(r: &UninstallReport) {
    let style = Style::stdout();
    let journal = r.journal.display().to_string();
    if !r.found {
        eprintln!(
            "tlskit: {} was not installed by tlskit here (no journal {}); nothing changed",
            Escaped(&r.certificate.subject),
            Escaped(&journal)
        );
        return;
    }
    if r.dry_run {
        println!(
            "{}",
            style.warn("dry run: nothing changed; an uninstall would:")
        );
    }
    print_targets(&r.targets, style);
    if !r.dry_run {
        println!(
            "{}: {} (journal {} removed)",
            style.good("uninstalled"),
            Escaped(&r.certificate.subject),
            Escaped(&journal)
        );
    }
}

fn print_list(r: &ListReport) {
    if r.targets.is_empty() {
        println!("no target found");
    }
    for t in &r.targets {
        let here: Vec<_> = r
            .installed
            .iter()
            .filter(|l| l.target == t.target && l.location == t.location)
            .collect();
        println!(
            "{} ({}): {} installed by tlskit",
            t.target.name(),
            Escaped(&t.location),
            here.len()
        );
        for l in here {
            let bundle = match l.in_bundle {
                Some(true) => ", in the bundle",
                Some(false) => ", NOT in the bundle (run the update tool)",
                None => "",
            };
            println!(
                "  {}: {}{bundle}",
                Escaped(&l.name),
                Escaped(l.subject.as_deref().unwrap_or("(unreadable)"))
            );
        }
    }
    for j in &r.journals {
        let state = if j.complete {
            "complete"
        } else {
            "INCOMPLETE: run uninstall to undo it"
        };
        println!(
            "journal {}: {} ({state})",
            Escaped(&j.path.display().to_string()),
            Escaped(j.subject.as_deref().or(j.error.as_deref()).unwrap_or(""))
        );
    }
}
