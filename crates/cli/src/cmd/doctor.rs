//! `tlskit doctor`: a report on this machine's trust setup.

use crate::output::CmdResult;

/// Arguments of `tlskit doctor`.
#[derive(clap::Args)]
pub(crate) struct DoctorArgs {
    /// Print one JSON object instead of the report.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(_args: DoctorArgs) -> CmdResult {
    anyhow::bail!("doctor: not written yet")
}
