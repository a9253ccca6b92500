//! Certificate tooling: `key`, `csr`, `cert`, `ca`, `show`, `lint`, `p12`.

use crate::output::CmdResult;

/// `tlskit key` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum KeyCmd {}
/// `tlskit csr` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CsrCmd {}
/// `tlskit cert` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CertCmd {}
/// `tlskit ca` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum CaCmd {}
/// `tlskit p12` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum P12Cmd {}
/// Arguments of `tlskit show`.
#[derive(clap::Args)]
pub(crate) struct ShowArgs {}
/// Arguments of `tlskit lint`.
#[derive(clap::Args)]
pub(crate) struct LintArgs {}

pub(crate) fn key(c: KeyCmd) -> CmdResult {
    match c {}
}
pub(crate) fn csr(c: CsrCmd) -> CmdResult {
    match c {}
}
pub(crate) fn cert(c: CertCmd) -> CmdResult {
    match c {}
}
pub(crate) fn ca(c: CaCmd) -> CmdResult {
    match c {}
}
pub(crate) fn p12(c: P12Cmd) -> CmdResult {
    match c {}
}
pub(crate) fn show(_a: ShowArgs) -> CmdResult {
    anyhow::bail!("show: not written yet")
}
pub(crate) fn lint(_a: LintArgs) -> CmdResult {
    anyhow::bail!("lint: not written yet")
}
