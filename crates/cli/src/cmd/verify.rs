//! `tlskit verify` and `tlskit bench verify`.

use crate::output::CmdResult;

/// Arguments of `tlskit verify`.
#[derive(clap::Args)]
pub(crate) struct VerifyArgs {}

/// Arguments of `tlskit bench verify`.
#[derive(clap::Args)]
pub(crate) struct BenchVerifyArgs {}

pub(crate) fn run(_args: VerifyArgs) -> CmdResult {
    anyhow::bail!("verify: not written yet")
}

pub(crate) fn bench(_args: BenchVerifyArgs) -> CmdResult {
    anyhow::bail!("bench verify: not written yet")
}
