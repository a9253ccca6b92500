//! `tlskit probe`: where a TLS handshake spends its round trips.

use crate::output::CmdResult;

/// Arguments of `tlskit probe`.
#[derive(clap::Args)]
pub(crate) struct ProbeArgs {}

pub(crate) fn run(_args: ProbeArgs) -> CmdResult {
    anyhow::bail!("probe: not written yet")
}
