#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod error;
pub mod cert;
pub mod run;
pub mod step;
pub mod target;
pub mod journal;
pub mod system;
pub mod nss;
pub mod java;
mod ops;

// The public interface is:
pub use cert::{CaCert, Warning};
pub use error::{Result, TrustError};
pub use journal::{Journal, StateDir};
pub use ops::{
    detect, install, install_into, list, list_in, uninstall, CaSummary, FoundTarget, InstallReport,
    JournalSummary, ListReport, Options, TargetReport, UninstallReport, WarningReport,
};
pub use run::{Cmd, CmdOutput, Runner, SystemRunner};
pub use target::{Listed, Target, TargetKind};
