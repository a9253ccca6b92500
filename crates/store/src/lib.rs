#![doc = include_str!("../README.md")]
//!
//! ## The items at a glance
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
//! No unsafe code: a snapshot is read with positioned reads as it is used, never mapped (a
//! mapped file truncated or rewritten in place would crash the process with SIGBUS).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// Modules in layer order, bottom first: each uses only modules declared above it
// (rustfmt keeps the order because every module is a group of its own).

// Errors and load issues: the vocabulary every layer reports with.
mod error;

// Growable arrays (Vec or huge-page mapping) and the stored bytes they become.
mod arena;

// The linear PEM scanner and base64 decoder.
mod pem;

// Where a store came from: recorded sources, the snapshot file.
mod origin;

// Positioned reads of a snapshot file: checked pages, a grow-only item cache.
mod paged;

// The immutable trust store: one layout, one lookup path.
mod store;

// Snapshot files: write and open a store.
mod snapshot;

// Building a store in memory, one certificate at a time.
mod builder;

// Loading sources (files, directories, system, snapshot) through the builder.
mod source;

// Live reload.
mod handle;

// Hygiene: lint and prune.
pub mod lint;

pub use builder::{Added, StoreBuilder};
pub use error::{
    AnchorDamage, Cause, IssueKind, LoadIssue, SnapshotError, StoreError, MAX_FILE_BYTES,
    MAX_ISSUES_PER_KIND,
};
pub use handle::{BackgroundReload, ReloadCallback, ReloadOutcome, StoreHandle};
pub use lint::{
    apply_prune, lint, lint_at, plan_prune, plan_prune_at, severity, Finding, LintReport, PrunePlan,
};
pub use origin::SourceRecord;
pub use snapshot::{atomic_write, has_magic, MAGIC, MAX_SNAPSHOT_BYTES, VERSION};
pub use source::{
    build_snapshot, load, system_store, LoadReport, Source, SystemStore, SYSTEM_BUNDLES,
    SYSTEM_DIRS,
};
pub use store::{Anchor, CaNames, TrustStore};
