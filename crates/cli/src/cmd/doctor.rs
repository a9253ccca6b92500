//! `tlskit doctor`: a report on this machine's trust setup.
//!
//! The report is a list of sections, each with a status, human lines and a JSON object,
//! so later issues can add sections (e.g. probing a server) without reshaping the rest.
//! Exit: 0 when the system store loads (findings are reported as warnings), 2 when no
//! usable system store exists.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::cmd::store::{issue_json, load_or_explain};
use crate::output::{print_json, CmdResult, Outcome, Style};

/// Arguments of `tlskit doctor`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit doctor\n  tlskit doctor --json | jq .sections.trust_store\n  SSL_CERT_FILE=/etc/myapp/cas.pem tlskit doctor\n\nExit: 0 the system trust store loads (findings are warnings), 2 none usable."
)]
pub(crate) struct DoctorArgs {
    /// Print one JSON object instead of the report.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Clone, Copy, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Warn,
    Bad,
}

/// One section of the report.
struct Section {
    id: &'static str,
    title: &'static str,
    status: Status,
    lines: Vec<String>,
    json: Value,
}

fn system_section() -> (Section, Option<Vec<tlskit_store::Source>>) {
    let env = |k: &str| std::env::var(k).ok();
    match tlskit_store::system_store() {
        Ok(s) => {
            let mut lines = vec![format!("chosen by   {}", s.chosen_by)];
            for src in &s.sources {
                lines.push(format!("source      {src}"));
            }
            for (p, exists) in &s.candidates {
                lines.push(format!(
                    "checked     {} ({})",
                    p.display(),
                    if *exists { "exists" } else { "absent" }
                ));
            }
            let json = json!({
                "chosen_by": s.chosen_by,
                "sources": s.sources.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
                "candidates": s.candidates.iter().map(|(p, e)| json!({"path": p.display().to_string(), "exists": e})).collect::<Vec<_>>(),
                "SSL_CERT_FILE": env("SSL_CERT_FILE"),
                "SSL_CERT_DIR": env("SSL_CERT_DIR"),
            });
            let sec = Section {
                id: "system_store",
                title: "System trust store",
                status: Status::Ok,
                lines,
                json,
            };
            (sec, Some(s.sources))
        }
        Err(e) => (
            Section {
                id: "system_store",
                title: "System trust store",
                status: Status::Bad,
                lines: vec![e.to_string()],
                json: json!({"error": e.to_string(), "SSL_CERT_FILE": env("SSL_CERT_FILE"), "SSL_CERT_DIR": env("SSL_CERT_DIR")}),
            },
            None,
        ),
    }
}

fn load_section(srcs: &[tlskit_store::Source]) -> Section {
    // Time a few loads (median), reporting the first load's counts.
    match load_or_explain(srcs, true) {
        Ok((store, report)) => {
            let mut times = vec![report.load_ms];
            for _ in 0..4 {
                if let Ok((_, r)) = tlskit_store::load(srcs) {
                    times.push(r.load_ms);
                }
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let names = store.ca_names();
            let mut status = Status::Ok;
            if report.expired > 0 || !report.errors.is_empty() {
                status = Status::Warn;
            }
            if !names.fits_tls() {
                status = Status::Warn;
            }
            let mut lines = vec![
                format!("anchors     {}", store.len()),
                format!(
                    "files       {} (+{} alias paths)",
                    report.files, report.aliases
                ),
                format!("duplicates  {}", report.duplicates),
                format!("expired     {}", report.expired),
                format!("problems    {}", report.errors.len()),
                format!("load time   {median:.2} ms (median of {})", times.len()),
                format!(
                    "CA names    {} subjects, {} bytes in a CertificateRequest{}",
                    names.len(),
                    names.encoded_len(),
                    if names.fits_tls() {
                        ""
                    } else {
                        " (over 65,535: a server sending them all breaks handshakes)"
                    }
                ),
            ];
            for e in report.errors.iter().take(10) {
                lines.push(format!("problem     {e}"));
            }
            Section {
                id: "trust_store",
                title: "Loading it",
                status,
                lines,
                json: json!({
                    "anchors": store.len(),
                    "files": report.files,
                    "aliases": report.aliases,
                    "duplicates": report.duplicates,
                    "expired": report.expired,
                    "errors": report.errors.iter().map(issue_json).collect::<Vec<_>>(),
                    "load_ms": median,
                    "ca_names": names.len(),
                    "ca_names_encoded_len": names.encoded_len(),
                    "ca_names_fit_tls": names.fits_tls(),
                    "memory_bytes": store.memory_bytes(),
                    "der_bytes": store.der_bytes(),
                }),
            }
        }
        Err(e) => Section {
            id: "trust_store",
            title: "Loading it",
            status: Status::Bad,
            lines: vec![format!("{e:#}")],
            json: json!({"error": format!("{e:#}")}),
        },
    }
}

fn lint_section(srcs: &[tlskit_store::Source]) -> Section {
    let r = tlskit_store::lint(srcs);
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for f in &r.findings {
        *by_kind.entry(f.kind.clone()).or_default() += 1;
    }
    let mut lines: Vec<String> = by_kind.iter().map(|(k, v)| format!("{k:<16}{v}")).collect();
    if lines.is_empty() {
        lines.push("no findings".into());
    } else {
        lines.push("details: tlskit store lint system".into());
    }
    let serious = [
        "expired",
        "non-ca",
        "weak-key",
        "private-key",
        "bad-pem",
        "malformed-der",
    ];
    let status = if by_kind.keys().any(|k| serious.contains(&k.as_str())) {
        Status::Warn
    } else {
        Status::Ok
    };
    Section {
        id: "lint",
        title: "Hygiene (lint)",
        status,
        lines,
        json: json!({"findings": r.findings.len(), "by_kind": by_kind}),
    }
}

pub(crate) fn run(args: DoctorArgs) -> CmdResult {
    let mut sections = Vec::new();
    let (sys, srcs) = system_section();
    sections.push(sys);
    if let Some(srcs) = &srcs {
        sections.push(load_section(srcs));
        if sections.last().is_some_and(|s| s.status != Status::Bad) {
            sections.push(lint_section(srcs));
        }
    }
    let worst = sections
        .iter()
        .map(|s| s.status)
        .max()
        .unwrap_or(Status::Ok);
    if args.json {
        let mut map = serde_json::Map::new();
        for s in &sections {
            let mut obj = s.json.clone();
            if let Value::Object(o) = &mut obj {
                o.insert("status".into(), json!(s.status));
            }
            map.insert(s.id.into(), obj);
        }
        print_json(&json!({"status": worst, "sections": map}))?;
    } else {
        let st = Style::stdout();
        println!("{}", st.bold("tlskit doctor: this machine's trust setup"));
        for s in &sections {
            let tag = match s.status {
                Status::Ok => st.good("[ok]  "),
                Status::Warn => st.warn("[warn]"),
                Status::Bad => st.bad("[bad] "),
            };
            println!("\n{tag} {}", st.bold(s.title));
            for l in &s.lines {
                println!("       {l}");
            }
        }
    }
    if worst == Status::Bad {
        anyhow::bail!("no usable system trust store");
    }
    Ok(Outcome::Success)
}
