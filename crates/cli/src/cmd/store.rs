//! `tlskit store ...` and `tlskit bench store` (measured by tlskit-bench-harness).
//!
//! Parsing and output only: the work is in tlskit-store. Every command that takes SRC
//! accepts files (PEM bundles, DER), directories, snapshot files and the word `system`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use tlskit_store::{LoadIssue, LoadReport, Source, StoreError, TrustStore};
use tlskit_x509::{LintCode, Severity};

use crate::output::{print_json, warn, CmdResult, Escaped, Outcome, Style};

const SRC_HELP: &str = "Certificate sources: PEM bundle or DER file, directory (flat, symlinks and hash links followed), snapshot file, or `system`";

/// `tlskit store` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum StoreCmd {
    /// Load sources and report what they hold.
    #[command(
        after_help = "Examples:\n  tlskit store show /etc/ssl/certs\n  tlskit store show system --json\n  tlskit store show roots.snap --list\n\nExit: 0 loaded (per-file problems go to stderr), 2 nothing loadable."
    )]
    Show(ShowArgs),
    /// Compile sources into a snapshot file that processes map without re-parsing.
    #[command(
        after_help = "Examples:\n  tlskit store build /etc/ssl/certs/ca-certificates.crt -o roots.snap\n  tlskit store build system extra-cas/ -o /var/lib/myapp/roots.snap\n\nThe file is written atomically (temporary file + rename). It records its sources;\n`tlskit store show FILE` reports it as stale when they change.\n\nExit: 0 written, 2 nothing loadable or write failed."
    )]
    Build(BuildArgs),
    /// Report hygiene problems: duplicates, expired, non-CA, weak keys, SHA-1, same subject.
    #[command(
        after_help = "Examples:\n  tlskit store lint /etc/ssl/certs\n  tlskit store lint my-cas/ --json | jq '.findings[] | select(.severity != \"info\")'\n\nSeverity: error (a private key, unparseable data), warning (expired, not yet valid, not a\nCA, weak key, MD5), info (duplicates, CAs sharing a subject, SHA-1 self-signatures: what\nsystem stores hold by design).\n\nExit: 0 no error or warning (info findings only), 1 errors or warnings, 2 nothing loadable."
    )]
    Lint(LintArgs),
    /// Move duplicate-only and expired-only files into a backup folder (only with --apply).
    #[command(
        after_help = "Examples:\n  tlskit store prune my-cas/ --backup /root/cas-backup          # dry run: prints the plan\n  tlskit store prune my-cas/ --backup /root/cas-backup --apply  # moves the files\n\nNothing is ever deleted: files are moved, keeping their path relative to SRC. A file\nthat also holds good certificates, unparseable blocks, or is reached through hash links\nis reported and left alone.\n\nExit: 0 done (or planned), 2 error."
    )]
    Prune(PruneArgs),
}

/// Arguments of `tlskit store show`.
#[derive(clap::Args)]
pub(crate) struct ShowArgs {
    #[arg(required = true, value_name = "SRC", help = SRC_HELP)]
    sources: Vec<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// List every anchor (subject, validity, SHA-256).
    #[arg(long)]
    list: bool,
}

/// Arguments of `tlskit store build`.
#[derive(clap::Args)]
pub(crate) struct BuildArgs {
    #[arg(required = true, value_name = "SRC", help = SRC_HELP)]
    sources: Vec<String>,
    /// Snapshot file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Arguments of `tlskit store lint`.
#[derive(clap::Args)]
pub(crate) struct LintArgs {
    #[arg(required = true, value_name = "SRC", help = SRC_HELP)]
    sources: Vec<String>,
    /// Print one JSON object with a `findings` array.
    #[arg(long)]
    json: bool,
}

/// Arguments of `tlskit store prune`.
#[derive(clap::Args)]
pub(crate) struct PruneArgs {
    /// A directory or file of certificates.
    #[arg(value_name = "SRC")]
    source: String,
    /// Folder the pruned files are moved into (created if needed).
    #[arg(long, value_name = "DIR")]
    backup: PathBuf,
    /// Move the files. Without it, only print what would be moved.
    #[arg(long)]
    apply: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Arguments of `tlskit bench store`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit bench store bundle-10000.pem\n  tlskit bench store system --json --runs 15\n\nReports medians: load_ms (from the sources), snapshot_load_ms (opening a snapshot\nbuilt from them in a temporary directory: header and page-sum checks, no anchor read), lookup_ns (one subject lookup), plus anchors, der_bytes, memory_bytes."
)]
pub(crate) struct BenchStoreArgs {
    #[arg(required = true, value_name = "SRC", help = SRC_HELP)]
    sources: Vec<String>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Number of timed loads (the median is reported).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
}

pub(crate) fn run(cmd: StoreCmd) -> CmdResult {
    match cmd {
        StoreCmd::Show(a) => show(a),
        StoreCmd::Build(a) => build(a),
        StoreCmd::Lint(a) => lint(a),
        StoreCmd::Prune(a) => prune(a),
    }
}

pub(crate) fn sources(args: &[String]) -> Vec<Source> {
    args.iter().map(|a| Source::from_arg(a)).collect()
}

/// A load problem in `--json` (`store show`, `store build`, `doctor`): its own fields
/// (path, reason, kind, block) and the finding record every lint uses (severity, code,
/// message, subject, path, index: the PEM block, from 1).
#[derive(Serialize)]
pub(crate) struct IssueJson {
    pub(crate) path: String,
    pub(crate) reason: String,
    pub(crate) kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) block: Option<u32>,
    pub(crate) severity: Severity,
    pub(crate) code: &'static str,
    pub(crate) message: String,
    /// Not known for a block that did not load (always empty).
    pub(crate) subject: &'static str,
    pub(crate) index: Option<u32>,
}

pub(crate) fn issue_json(i: &LoadIssue) -> IssueJson {
    let kind = i.reason.tag();
    IssueJson {
        severity: tlskit_store::severity(i.reason.code()),
        path: i.path.display().to_string(),
        reason: i.reason.to_string(),
        kind,
        block: i.block,
        code: kind,
        message: i.reason.to_string(),
        subject: "",
        index: i.block,
    }
}

/// Problems of one kind printed on stderr; the rest are summarised in one line with their
/// count (`--json` lists up to `MAX_ISSUES_PER_KIND` of each kind).
pub(crate) const STDERR_ISSUES_PER_KIND: usize = 20;

/// Print problems on stderr, at most [`STDERR_ISSUES_PER_KIND`] of each kind, then one
/// line per kind with more: how many were not shown and how many there were in all.
pub(crate) fn warn_issues(issues: &[LoadIssue], counts: &BTreeMap<&'static str, usize>) {
    let mut shown: BTreeMap<&'static str, usize> = BTreeMap::new();
    for i in issues {
        let n = shown.entry(i.reason.tag()).or_insert(0);
        *n += 1;
        if *n <= STDERR_ISSUES_PER_KIND {
            warn_issue(i);
        }
    }
    for (kind, &total) in counts {
        let n = shown
            .get(kind)
            .copied()
            .unwrap_or(0)
            .min(STDERR_ISSUES_PER_KIND);
        if total > n {
            eprintln!(
                "tlskit: {} more {kind} problem(s) not shown ({total} in all; --json lists up to {} of each kind)",
                total - n,
                tlskit_store::MAX_ISSUES_PER_KIND
            );
        }
    }
}

pub(crate) fn warn_issue(i: &LoadIssue) {
    match i.block {
        Some(b) => warn(&i.path, &format_args!("block {b}: {}", i.reason)),
        None => warn(&i.path, &i.reason),
    }
}

/// Load, printing per-file problems on stderr; "nothing loadable" becomes an error (exit 2).
pub(crate) fn load_or_explain(
    srcs: &[Source],
    quiet: bool,
) -> anyhow::Result<(TrustStore, LoadReport)> {
    match tlskit_store::load(srcs) {
        Ok((store, mut report)) => {
            if store.is_snapshot() {
                // Every anchor checked now: each damaged one is an issue naming its index
                // and what is wrong (`corrupt-anchor`).
                let p = store
                    .snapshot_info()
                    .map(|(p, _)| p.to_path_buf())
                    .unwrap_or_default();
                for (index, reason) in store.damaged_anchors() {
                    report.push_issue(LoadIssue {
                        path: p.clone(),
                        block: Some(index.saturating_add(1)),
                        reason: tlskit_store::IssueKind::CorruptAnchor { index, reason },
                    });
                }
            }
            if !quiet {
                warn_issues(&report.errors, &report.error_counts);
            }
            Ok((store, report))
        }
        Err(StoreError::NothingLoadable { issues, counts }) => {
            warn_issues(&issues, &counts);
            anyhow::bail!(
                "nothing loadable from {}: no trust anchor found",
                describe(srcs)
            )
        }
        Err(e) => Err(e.into()),
    }
}

fn describe(srcs: &[Source]) -> String {
    srcs.iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Serialize)]
struct AnchorJson {
    subject: String,
    sha256: String,
    not_before: String,
    not_after: String,
    expired: bool,
    /// A self-signed end-entity certificate trusted for exactly itself, never as an issuer.
    pinned: bool,
}

#[derive(Serialize)]
struct ShowJson {
    anchors: usize,
    /// Anchors that are pinned end-entity certificates (counted in `anchors`).
    pinned: usize,
    files: usize,
    duplicates: usize,
    expired: usize,
    aliases: usize,
    errors: Vec<IssueJson>,
    /// Every problem, by kind (`errors` keeps at most MAX_ISSUES_PER_KIND of each).
    error_counts: BTreeMap<&'static str, usize>,
    errors_total: usize,
    errors_omitted: usize,
    generation: u64,
    load_ms: f64,
    ca_names: usize,
    ca_names_encoded_len: usize,
    ca_names_fit_tls: bool,
    der_bytes: usize,
    memory_bytes: usize,
    snapshot: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    list: Option<Vec<AnchorJson>>,
}

fn show(a: ShowArgs) -> CmdResult {
    let srcs = sources(&a.sources);
    let (store, report) = load_or_explain(&srcs, false)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let list = a.list.then(|| {
        store
            .anchors()
            .map(|x| AnchorJson {
                subject: tlskit_x509::dn::display(x.subject()),
                sha256: tlskit_x509::text::hex(x.sha256()),
                not_before: rfc3339(x.not_before()),
                not_after: rfc3339(x.not_after()),
                expired: x.not_after() < now,
                pinned: x.is_pinned(),
            })
            .collect::<Vec<_>>()
    });
    let names = store.ca_names();
    let j = ShowJson {
        anchors: store.len(),
        pinned: store.anchors().filter(|x| x.is_pinned()).count(),
        files: report.files,
        duplicates: report.duplicates,
        expired: report.expired,
        aliases: report.aliases,
        errors: report.errors.iter().map(issue_json).collect(),
        error_counts: report.error_counts.clone(),
        errors_total: report.errors_total(),
        errors_omitted: report.errors_omitted,
        generation: store.generation(),
        load_ms: report.load_ms,
        ca_names: names.len(),
        ca_names_encoded_len: names.encoded_len(),
        ca_names_fit_tls: names.fits_tls(),
        der_bytes: store.der_bytes(),
        memory_bytes: store.memory_bytes(),
        snapshot: store.is_snapshot(),
        list,
    };
    if a.json {
        print_json(&j)?;
        return Ok(Outcome::Success);
    }
    let st = Style::stdout();
    println!(
        "{}",
        st.bold(&format!("Trust store from {}", describe(&srcs)))
    );
    println!("  anchors      {}", j.anchors);
    if j.pinned > 0 {
        println!(
            "  pinned       {} (self-signed end-entity certificates: each trusted for exactly itself, never as an issuer)",
            j.pinned
        );
    }
    println!(
        "  files read   {}  (+{} alias paths to files already read)",
        j.files, j.aliases
    );
    println!("  duplicates   {}", j.duplicates);
    let exp = format!("{}", j.expired);
    println!(
        "  expired      {}",
        if j.expired > 0 { st.warn(&exp) } else { exp }
    );
    let errs = format!("{}", j.errors_total);
    println!(
        "  problems     {}{}",
        if j.errors_total == 0 {
            errs
        } else {
            st.bad(&errs)
        },
        if j.errors.is_empty() {
            ""
        } else {
            "  (listed on stderr)"
        }
    );
    println!(
        "  CA names     {} distinct subjects, {} bytes in a CertificateRequest{}",
        j.ca_names,
        j.ca_names_encoded_len,
        if j.ca_names_fit_tls {
            String::new()
        } else {
            st.bad(" (over the 65,535-byte TLS limit)")
        }
    );
    println!(
        "  memory       {} bytes ({} bytes of DER)",
        j.memory_bytes, j.der_bytes
    );
    println!(
        "  loaded in    {:.2} ms{}",
        j.load_ms,
        if j.snapshot { " (snapshot)" } else { "" }
    );
    if let Some(list) = &j.list {
        println!();
        for x in list {
            let until = format!("until {}", x.not_after);
            println!(
                "  {}  {}  {}{}",
                &x.sha256[..16],
                if x.expired { st.warn(&until) } else { until },
                Escaped(&x.subject),
                if x.pinned { "  [pinned]" } else { "" }
            );
        }
    }
    Ok(Outcome::Success)
}

fn build(a: BuildArgs) -> CmdResult {
    let srcs = sources(&a.sources);
    let report = match tlskit_store::build_snapshot(&srcs, &a.output) {
        Ok(r) => r,
        Err(StoreError::NothingLoadable { issues, counts }) => {
            warn_issues(&issues, &counts);
            anyhow::bail!(
                "nothing loadable from {}: snapshot not written",
                describe(&srcs)
            )
        }
        Err(e) => return Err(e.into()),
    };
    warn_issues(&report.errors, &report.error_counts);
    let size = std::fs::metadata(&a.output).map(|m| m.len()).unwrap_or(0);
    if a.json {
        print_json(&serde_json::json!({
            "output": a.output.display().to_string(),
            "bytes": size,
            "anchors": report.anchors,
            "files": report.files,
            "duplicates": report.duplicates,
            "expired": report.expired,
            "errors": report.errors.iter().map(issue_json).collect::<Vec<_>>(),
            "error_counts": report.error_counts,
            "errors_total": report.errors_total(),
            "errors_omitted": report.errors_omitted,
            "load_ms": report.load_ms,
        }))?;
    } else {
        println!(
            "wrote {}: {} anchors from {} files ({} bytes, {} problems) in {:.1} ms",
            a.output.display(),
            report.anchors,
            report.files,
            size,
            report.errors_total(),
            report.load_ms
        );
    }
    Ok(Outcome::Success)
}

/// One finding of `store lint --json`: the store's fields (kind, path, subject, detail) and
/// the record every lint uses (severity, code, message, subject, path, index).
#[derive(Serialize)]
struct StoreFindingJson<'a> {
    severity: Severity,
    code: LintCode,
    message: &'a str,
    /// Position in the file: not tracked by the store lint (always null).
    index: Option<usize>,
    #[serde(flatten)]
    finding: &'a tlskit_store::Finding,
}

fn lint(a: LintArgs) -> CmdResult {
    let srcs = sources(&a.sources);
    let r = tlskit_store::lint(&srcs);
    if r.store.is_empty() {
        warn_issues(&r.report.errors, &r.report.error_counts);
        anyhow::bail!(
            "nothing loadable from {}: no trust anchor found",
            describe(&srcs)
        );
    }
    // The severities are the store's (`tlskit_store::severity`); this only prints them.
    let (errors, warnings, infos) = (
        r.count(Severity::Error),
        r.count(Severity::Warning),
        r.count(Severity::Info),
    );
    if a.json {
        let findings: Vec<StoreFindingJson> = r
            .findings
            .iter()
            .map(|f| StoreFindingJson {
                severity: f.severity(),
                code: f.kind,
                message: &f.detail,
                index: None,
                finding: f,
            })
            .collect();
        print_json(&serde_json::json!({
            "findings": findings,
            "anchors": r.store.len(),
            "files": r.report.files,
            "errors": errors,
            "warnings": warnings,
            "infos": infos,
        }))?;
    } else {
        let st = Style::stdout();
        for f in &r.findings {
            let subj = if f.subject.is_empty() {
                String::new()
            } else {
                format!(" [{}]", Escaped(&f.subject))
            };
            let kind = match f.severity() {
                Severity::Error => st.bad(f.kind.as_str()),
                Severity::Warning => st.warn(f.kind.as_str()),
                Severity::Info => f.kind.to_string(),
            };
            println!(
                "{kind}: {}{}: {}",
                Escaped(&f.path.display().to_string()),
                subj,
                Escaped(&f.detail)
            );
        }
        println!(
            "{} finding(s) ({errors} error(s), {warnings} warning(s), {infos} info) in {} anchors from {} files",
            r.findings.len(),
            r.store.len(),
            r.report.files
        );
    }
    Ok(if r.is_clean() {
        Outcome::Success
    } else {
        Outcome::Negative
    })
}

fn prune(a: PruneArgs) -> CmdResult {
    let src = Source::from_arg(&a.source);
    if matches!(src, Source::Snapshot(_) | Source::System) {
        anyhow::bail!(
            "prune works on a file or directory of certificates, not {}",
            a.source
        );
    }
    let plan = tlskit_store::plan_prune(&src, &a.backup)?;
    let results = if a.apply {
        tlskit_store::apply_prune(&plan)
    } else {
        Vec::new()
    };
    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    if a.json {
        let moved: Vec<_> = results
            .iter()
            .map(|(p, r)| serde_json::json!({"path": p.display().to_string(), "ok": r.is_ok(), "error": r.as_ref().err().map(ToString::to_string)}))
            .collect();
        print_json(&serde_json::json!({
            "applied": a.apply,
            "moves": plan.moves,
            "refused": plan.refused,
            "results": moved,
        }))?;
    } else {
        let verb = if a.apply { "moved" } else { "would move" };
        for m in &plan.moves {
            let err = results
                .iter()
                .find(|(p, _)| p == &m.path)
                .and_then(|(_, r)| r.as_ref().err());
            match err {
                Some(e) => println!("FAILED to move {}: {e}", m.path.display()),
                None => println!(
                    "{verb} {} -> {} ({})",
                    m.path.display(),
                    m.to.display(),
                    Escaped(&m.reason.to_string())
                ),
            }
        }
        for r in &plan.refused {
            println!(
                "not pruned: {}: {}",
                r.path.display(),
                Escaped(&r.reason.to_string())
            );
        }
        if plan.moves.is_empty() {
            println!("nothing to prune");
        } else if !a.apply {
            println!(
                "dry run: add --apply to move {} file(s) into {}",
                plan.moves.len(),
                a.backup.display()
            );
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} file(s) could not be moved");
    }
    Ok(Outcome::Success)
}

pub(crate) use tlskit_x509::datetime::rfc3339;

/// `tlskit bench store`: the measuring is tlskit-bench-harness's; this loads (saying why
/// nothing loaded) and prints.
pub(crate) fn bench(a: BenchStoreArgs) -> CmdResult {
    let srcs = sources(&a.sources);
    let (store, report) = load_or_explain(&srcs, true)?;
    let j = tlskit_bench_harness::store::run(&srcs, &store, &report, a.runs as usize)?;
    if a.json {
        print_json(&j)?;
    } else {
        println!("anchors           {} (from {} files)", j.anchors, j.files);
        println!(
            "load_ms           {:.3}  ({:.3} µs per anchor, median of {})",
            j.load_ms, j.us_per_cert, j.runs
        );
        println!("snapshot_load_ms  {:.4}", j.snapshot_load_ms);
        println!("lookup_ns         {:.1}", j.lookup_ns);
        println!(
            "memory_bytes      {} ({:.3}x the {} DER bytes)",
            j.memory_bytes, j.memory_ratio, j.der_bytes
        );
    }
    Ok(Outcome::Success)
}
