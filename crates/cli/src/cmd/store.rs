//! `tlskit store ...` and `tlskit bench store`.

use crate::output::CmdResult;

/// `tlskit store` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum StoreCmd {}

/// Arguments of `tlskit bench store`.
#[derive(clap::Args)]
pub(crate) struct BenchStoreArgs {}

pub(crate) fn run(cmd: StoreCmd) -> CmdResult {
    match cmd {}
}

pub(crate) fn bench(_args: BenchStoreArgs) -> CmdResult {
    anyhow::bail!("bench store: not written yet")
}
