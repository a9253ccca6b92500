//! `tlskit serve` and `tlskit connect`.

use crate::output::CmdResult;

/// Arguments of `tlskit serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {}

/// Arguments of `tlskit connect`.
#[derive(clap::Args)]
pub(crate) struct ConnectArgs {}

pub(crate) fn serve(_args: ServeArgs) -> CmdResult {
    anyhow::bail!("serve: not written yet")
}

pub(crate) fn connect(_args: ConnectArgs) -> CmdResult {
    anyhow::bail!("connect: not written yet")
}
