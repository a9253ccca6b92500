//! The `tlskit` binary: argument parsing and output only. Each command group lives in
//! its own module under `cmd/`; the libraries do the work.

mod cmd;
mod logging;
mod output;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A TLS toolkit: trust store, verifier, certificate tooling, server, client, probe.
///
/// Exit codes: 0 success, 1 a negative answer (invalid chain, lint findings),
/// 2 an error (bad usage, nothing loadable, unreadable input).
#[derive(Parser)]
#[command(name = "tlskit", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log lines on stderr: `text` (ts=... level=... event=... key=value) or `json` (one
    /// object per line). Which events: --log-level (serve), TLSKIT_LOG or RUST_LOG.
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    log_format: Option<logging::LogFormat>,
    /// PKCS#11 module for `pkcs11:` key URIs that carry no module-path= (default:
    /// TLSKIT_PKCS11_MODULE).
    #[arg(long, global = true, value_name = "PATH")]
    pkcs11_module: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Report on this machine's trust setup (system store, load time, lint findings).
    Doctor(cmd::doctor::DoctorArgs),
    /// Load, compile, lint and prune trust stores.
    #[command(
        subcommand,
        after_help = "Examples:\n  tlskit store show system\n  tlskit store show /etc/ssl/certs --json\n  tlskit store build system -o roots.tks && tlskit store show roots.tks\n  tlskit store lint /etc/ssl/certs\n  tlskit store prune ./cas --backup ./cas.bak --apply"
    )]
    Store(cmd::store::StoreCmd),
    /// Verify a certificate chain against a trust store.
    Verify(cmd::verify::VerifyArgs),
    /// In-process benchmarks.
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Private keys.
    #[command(subcommand)]
    Key(cmd::pki::KeyCmd),
    /// Certificate signing requests.
    #[command(subcommand)]
    Csr(cmd::pki::CsrCmd),
    /// Certificates.
    #[command(subcommand)]
    Cert(cmd::pki::CertCmd),
    /// A small certificate authority.
    #[command(subcommand)]
    Ca(cmd::pki::CaCmd),
    /// Show certificates, chains, requests, public keys and CRLs.
    Show(cmd::pki::ShowArgs),
    /// Lint a certificate or chain.
    Lint(cmd::pki::LintArgs),
    /// PKCS#12 files.
    #[command(subcommand)]
    P12(cmd::pki::P12Cmd),
    /// Run a TLS terminator.
    Serve(cmd::net::ServeArgs),
    /// Connect to a TLS server, print what was negotiated, relay stdin/stdout.
    Connect(cmd::net::ConnectArgs),
    /// Measure where a TLS handshake spends its round trips, for any server.
    Probe(cmd::probe::ProbeArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::install::CompletionsArgs),
    /// Write manual pages: tlskit.1 and one page per subcommand.
    Man(cmd::install::ManArgs),
    /// Certificates from an ACME CA (Let's Encrypt): issue, renew, revoke.
    #[command(subcommand)]
    Acme(cmd::acme::AcmeCmd),
    /// PKCS#11 tokens: list slots, tokens and keys.
    #[command(subcommand)]
    Pkcs11(cmd::pkcs11::Pkcs11Cmd),
    /// Ask a running `serve --control` what it serves; reload it.
    Ctl(cmd::ctl::CtlArgs),
    /// Make this machine trust a CA (system store, NSS, Java), reversibly.
    #[command(
        subcommand,
        after_help = "Examples:\n  tlskit trust install ./lab/ca.pem --dry-run\n  tlskit trust list --json\n  tlskit trust uninstall ./lab/ca.pem"
    )]
    Trust(cmd::trust::TrustCmd),
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Time loading a store from its sources and from a snapshot, and one lookup.
    Store(cmd::store::BenchStoreArgs),
    /// Time verifying one chain, with and without the cache, on one and two threads.
    Verify(cmd::verify::BenchVerifyArgs),
}

/// The clap definition every help text, completion script and man page comes from.
pub(crate) fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Print a clap error and exit with its code. A usage error quotes the argument it
/// refused (a `pkcs11:` URI given without `--key`, a Redis URL): it goes through the one
/// redaction first. Help and version text are clap's own.
fn usage_exit(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit()
    }
    let text = e.render().to_string();
    eprint!("{}", tlskit_x509::text::redact(&text));
    std::process::exit(e.exit_code())
}

fn main() -> ExitCode {
    output::quiet_broken_pipe();
    let matches = match command().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            // A usage error under --json still gives scripts one document on stdout.
            if e.use_stderr() && std::env::args_os().any(|a| a == "--json") {
                output::usage_error_json(&e.kind().to_string());
            }
            usage_exit(e)
        }
    };
    // The subcommand path (`store lint`) and the leaf's --json flag, for schema names and
    // for error documents under --json.
    let mut name = Vec::new();
    let mut leaf = &matches;
    while let Some((n, m)) = leaf.subcommand() {
        name.push(n.to_string());
        leaf = m;
    }
    let json = matches!(leaf.try_get_one::<bool>("json"), Ok(Some(true)));
    output::set_command(name.join(" "), json);
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => usage_exit(e),
    };
    // `serve` installs the log subscriber itself, once its config file is read.
    if !matches!(cli.command, Command::Serve(_)) {
        let level = logging::LevelChoice::default();
        if let Err(e) = logging::init(cli.log_format.unwrap_or_default(), &level) {
            return output::finish(Err(e));
        }
    }
    if let Some(m) = &cli.pkcs11_module {
        tlskit_pkcs11::set_default_module(m.clone());
    }
    let result = match cli.command {
        Command::Doctor(a) => cmd::doctor::run(a),
        Command::Store(c) => cmd::store::run(c),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Bench(BenchCmd::Store(a)) => cmd::store::bench(a),
        Command::Bench(BenchCmd::Verify(a)) => cmd::verify::bench(a),
        Command::Key(c) => cmd::pki::key(c),
        Command::Csr(c) => cmd::pki::csr(c),
        Command::Cert(c) => cmd::pki::cert(c),
        Command::Ca(c) => cmd::pki::ca(c),
        Command::Show(a) => cmd::pki::show(a),
        Command::Lint(a) => cmd::pki::lint(a),
        Command::P12(c) => cmd::pki::p12(c),
        Command::Serve(a) => cmd::net::serve(a, cli.log_format),
        Command::Connect(a) => cmd::net::connect(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Completions(a) => cmd::install::completions(a),
        Command::Man(a) => cmd::install::man(a),
        Command::Acme(c) => cmd::acme::run(c),
        Command::Pkcs11(c) => cmd::pkcs11::run(c, cli.pkcs11_module),
        Command::Ctl(a) => cmd::ctl::run(a),
        Command::Trust(c) => cmd::trust::run(c),
    };
    output::finish(result)
}
