//! tlskit-store: trust anchors loaded from any CA source in linear time, indexed by
//! subject, key identifier and fingerprint, compiled to a snapshot file that opens in a
//! few milliseconds, and reloaded live.
//!
//! * [`load`] / [`StoreBuilder`]: PEM bundles, DER files, directories (Debian and OpenSSL
//!   hashed layouts), the system default, snapshots. Bad input is reported per file
//!   ([`LoadIssue`]) and the load goes on. Non-CA certificates are reported and not loaded.
//! * [`TrustStore`]: immutable; O(1) expected lookups; [`CaNames`] kept incrementally.
//! * snapshots: [`TrustStore::open_snapshot`], [`build_snapshot`] (format and integrity
//!   rules in the `snapshot` module docs).
//! * [`StoreHandle`]: reload on demand, on SIGHUP, on source change; readers never block.
//! * [`lint()`] and [`plan_prune`]: hygiene; [`severity`] grades each finding.
//!
//! The X.509 vocabulary it reads with (DER reader, name rendering, text escaping, dates,
//! certificate rules, lint codes) is the foundation crate tlskit-x509's.
//!
//! No unsafe code: a snapshot is read into memory, never mapped (a mapped file truncated
//! or rewritten in place would crash the process with SIGBUS).
#![forbid(unsafe_code)]

mod arena;
mod builder;
mod error;
mod handle;
pub mod lint;
mod pem;
mod snapshot;
mod source;
mod store;

pub use builder::{Added, StoreBuilder};
pub use error::{
    AnchorDamage, IssueKind, LoadIssue, SnapshotError, StoreError, MAX_FILE_BYTES,
    MAX_ISSUES_PER_KIND,
};
pub use handle::{BackgroundReload, ReloadCallback, ReloadOutcome, StoreHandle};
pub use lint::{
    apply_prune, lint, lint_at, plan_prune, plan_prune_at, severity, Finding, LintReport, PrunePlan,
};
pub use snapshot::{
    atomic_write, build_snapshot, has_magic, SourceRecord, MAGIC, MAX_SNAPSHOT_BYTES, VERSION,
};
pub use source::{
    load, system_store, LoadReport, Source, SystemStore, SYSTEM_BUNDLES, SYSTEM_DIRS,
};
pub use store::{Anchor, CaNames, TrustStore};
