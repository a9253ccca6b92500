//! `tlskit doctor`: a report on this machine's trust setup.
//!
//! The report is a list of sections, each with a status, human lines and a JSON object,
//! so later issues can add sections (e.g. probing a server) without reshaping the rest.
//! With an address it also probes that server; with none it starts a built-in loopback
//! server with a generated long chain and probes it twice (certificate compression on and
//! off), so a new user sees in one command what the project measures.
//! Exit: 0 when the system store loads (findings are reported as warnings), 2 when no
//! usable system store exists or the given server cannot be probed.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use tlskit_net::probe::{ProbeOptions, ProbeReport};
use tlskit_net::{Compression, ServeConfig, Server};

use crate::cmd::store::{issue_json, load_or_explain, store_severity};
use crate::output::{print_json, CmdResult, Escaped, Outcome, Style};

/// Arguments of `tlskit doctor`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit doctor\n  tlskit doctor example.com:443\n  tlskit doctor 10.0.0.5:8443 --servername web.internal --roots ca.pem\n  tlskit doctor --json | jq .sections.trust_store\n  SSL_CERT_FILE=/etc/myapp/cas.pem tlskit doctor\n\nExit: 0 the system trust store loads (findings are warnings), 2 none usable or the server could not be probed."
)]
pub(crate) struct DoctorArgs {
    /// A server to probe (HOST:PORT, HOST alone: port 443); without one, a built-in
    /// loopback server is probed.
    pub(crate) target: Option<String>,
    /// Name to send as SNI and verify [default: HOST].
    #[arg(long, requires = "target")]
    pub(crate) servername: Option<String>,
    /// Trust store sources for the probe (repeatable, or several after one flag)
    /// [default: system].
    #[arg(long = "roots", value_name = "SRC", num_args = 1.., requires = "target")]
    pub(crate) roots: Vec<String>,
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
                format!(
                    "duplicates  {}{}",
                    report.duplicates,
                    if report.duplicates > 0 && bundle_and_dir(srcs) {
                        " (the bundle and the directory hold the same certificates: \
                         normal where update-ca-certificates writes both)"
                    } else {
                        ""
                    }
                ),
                format!("expired     {}", report.expired),
                format!("problems    {}", report.errors_total()),
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
                    "error_counts": report.error_counts,
                    "errors_total": report.errors_total(),
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

/// Whether the sources are a bundle file and a directory (Debian's layout holds every
/// certificate in both).
fn bundle_and_dir(srcs: &[tlskit_store::Source]) -> bool {
    use tlskit_store::Source;
    srcs.iter().any(|s| matches!(s, Source::File(_)))
        && srcs.iter().any(|s| matches!(s, Source::Dir(_)))
}

fn lint_section(srcs: &[tlskit_store::Source]) -> Section {
    let r = tlskit_store::lint(srcs);
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for f in &r.findings {
        *by_kind.entry(f.kind.to_string()).or_default() += 1;
    }
    let mut lines: Vec<String> = by_kind.iter().map(|(k, v)| format!("{k:<16}{v}")).collect();
    if lines.is_empty() {
        lines.push("no findings".into());
    } else {
        lines.push("details: tlskit store lint system".into());
    }
    // One severity policy with `store lint`: only errors and warnings make this a warning.
    let serious = r
        .findings
        .iter()
        .filter(|f| store_severity(f.kind) != "info")
        .count();
    let status = if serious > 0 {
        Status::Warn
    } else {
        Status::Ok
    };
    Section {
        id: "lint",
        title: "Hygiene (lint)",
        status,
        lines,
        json: json!({"findings": r.findings.len(), "by_kind": by_kind, "errors_and_warnings": serious}),
    }
}

/// Probe options for `target` with the doctor's defaults (one handshake, 10 s limits).
fn probe_options(
    target: &str,
    name: Option<String>,
    roots: Vec<tlskit_store::Source>,
) -> ProbeOptions {
    ProbeOptions {
        peer: tlskit_net::PeerOptions {
            server_name: name,
            roots,
            ..tlskit_net::PeerOptions::new(target)
        },
        repeat: 1,
    }
}

/// One probe as report lines and JSON.
fn probe_lines(label: &str, r: &ProbeReport, lines: &mut Vec<String>) -> Value {
    let flights: Vec<String> = r
        .server_flights
        .iter()
        .map(|f| format!("{} B/{} seg", f.bytes, f.segments))
        .collect();
    lines.push(format!(
        "{label:<22}{} round trip(s) [{}], {:.1} ms, {}, chain {} B ({} B {}), flights [{}]{}",
        r.handshake_rtts,
        r.handshake_rtts_method,
        r.handshake_ms,
        r.tls_version,
        r.chain_bytes,
        r.chain_bytes_compressed,
        r.compression
            .as_deref()
            .unwrap_or("uncompressed: brotli estimate"),
        flights.join(", "),
        if r.verified { "" } else { ", NOT verified" }
    ));
    for a in &r.advice {
        lines.push(format!("{:<22}{a}", ""));
    }
    serde_json::to_value(r).unwrap_or(Value::Null)
}

/// Probe a given server.
fn server_section(args: &DoctorArgs, target: &str) -> Section {
    let roots = args
        .roots
        .iter()
        .map(|s| tlskit_store::Source::from_arg(s))
        .collect();
    let mut lines = Vec::new();
    match tlskit_net::probe::probe(&probe_options(target, args.servername.clone(), roots)) {
        Ok(r) => {
            let status = if r.verified { Status::Ok } else { Status::Warn };
            let json = probe_lines("handshake", &r, &mut lines);
            Section {
                id: "probe",
                title: "The server's handshake",
                status,
                lines,
                json,
            }
        }
        Err(e) => Section {
            id: "probe",
            title: "The server's handshake",
            status: Status::Bad,
            lines: vec![format!("{target}: {e}")],
            json: json!({"target": target, "error": e.to_string()}),
        },
    }
}

/// Start a loopback `tlskit serve` with a generated ~27 KB chain and probe it with
/// certificate compression on and off: the round trip that compression saves.
fn loopback_section() -> Section {
    let title = "Built-in loopback server (27 KB chain)";
    match loopback_probes() {
        Ok((lines, json)) => Section {
            id: "loopback",
            title,
            status: Status::Ok,
            lines,
            json,
        },
        Err(e) => Section {
            id: "loopback",
            title,
            status: Status::Warn,
            lines: vec![format!("could not run: {e:#}")],
            json: json!({"error": format!("{e:#}")}),
        },
    }
}

fn loopback_probes() -> anyhow::Result<(Vec<String>, Value)> {
    let dir = tempfile::tempdir()?;
    let (root, chain, key) = long_chain(dir.path())?;
    tlskit_net::log::set_level(tlskit_net::log::Level::Off);
    let mut lines = vec![
        "a server on 127.0.0.1 with a leaf + intermediate chain over TCP's 14,600-byte".to_string(),
        "initial window, probed with certificate compression on and off:".to_string(),
    ];
    let mut out = serde_json::Map::new();
    for (label, compress) in [
        (
            "with compression",
            vec![Compression::Brotli, Compression::Zlib],
        ),
        ("without compression", Vec::new()),
    ] {
        let mut cfg = ServeConfig::new(
            vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0))],
            chain.clone(),
            key.clone(),
        );
        cfg.compress = compress;
        cfg.watch = false;
        let server = Server::bind(cfg)?;
        let addr = *server
            .local_addrs()
            .first()
            .ok_or_else(|| anyhow::anyhow!("the loopback server has no address"))?;
        // The server thread ends with the process; doctor exits when its report is done.
        std::thread::spawn(move || server.run());
        let opts = probe_options(
            &addr.to_string(),
            Some("doctor.tlskit.test".into()),
            vec![tlskit_store::Source::File(root.clone())],
        );
        let r = tlskit_net::probe::probe(&opts)?;
        out.insert(label.replace(' ', "_"), probe_lines(label, &r, &mut lines));
    }
    lines.push(
        "on loopback the count is of server bursts; over a real link, `tlskit probe` times them"
            .to_string(),
    );
    Ok((lines, Value::Object(out)))
}

/// Root → intermediate → leaf with 800 extra DNS names (about 27 KB of DER), written to
/// `dir`: returns (root.pem, chain.pem, key.pem).
fn long_chain(
    dir: &std::path::Path,
) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_params = |cn: &str| -> anyhow::Result<CertificateParams> {
        let mut p = CertificateParams::new(Vec::<String>::new())?;
        p.distinguished_name.push(DnType::CommonName, cn);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // What the strict (webpki) verification profile asks of a CA.
        p.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        p.use_authority_key_identifier_extension = true;
        Ok(p)
    };
    let root_key = KeyPair::generate()?;
    let root = ca_params("tlskit doctor root")?.self_signed(&root_key)?;
    let inter_key = KeyPair::generate()?;
    let inter_issuer = rcgen::Issuer::new(ca_params("tlskit doctor root")?, &root_key);
    let inter = ca_params("tlskit doctor intermediate")?.signed_by(&inter_key, &inter_issuer)?;
    let mut names = vec!["doctor.tlskit.test".to_string()];
    names.extend((0..800).map(|i| format!("host-{i:04}.long-chain.tlskit.test")));
    let leaf_key = KeyPair::generate()?;
    let mut leaf_params = CertificateParams::new(names)?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "doctor.tlskit.test");
    leaf_params.use_authority_key_identifier_extension = true;
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_issuer = rcgen::Issuer::new(ca_params("tlskit doctor intermediate")?, &inter_key);
    let leaf = leaf_params.signed_by(&leaf_key, &leaf_issuer)?;
    let (root_p, chain_p, key_p) = (
        dir.join("root.pem"),
        dir.join("chain.pem"),
        dir.join("key.pem"),
    );
    // Through the one writer (temporary file + rename; the key 0600), like every file
    // tlskit writes.
    tlskit_io::write_atomic(&root_p, root.pem().as_bytes(), false, false)?;
    let chain = format!("{}{}", leaf.pem(), inter.pem());
    tlskit_io::write_atomic(&chain_p, chain.as_bytes(), false, false)?;
    tlskit_io::write_atomic(&key_p, leaf_key.serialize_pem().as_bytes(), true, false)?;
    Ok((root_p, chain_p, key_p))
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
    match &args.target {
        Some(t) => sections.push(server_section(&args, &crate::cmd::with_default_port(t))),
        None => sections.push(loopback_section()),
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
        println!(
            "{}",
            st.bold("tlskit doctor: this machine's trust setup and a handshake")
        );
        for s in &sections {
            let tag = match s.status {
                Status::Ok => st.good("[ok]  "),
                Status::Warn => st.warn("[warn]"),
                Status::Bad => st.bad("[bad] "),
            };
            println!("\n{tag} {}", st.bold(s.title));
            // Lines quote certificate names and a server's answers: escaped.
            for l in &s.lines {
                println!("       {}", Escaped(l));
            }
        }
    }
    if worst == Status::Bad {
        if sections
            .iter()
            .any(|s| s.id == "probe" && s.status == Status::Bad)
        {
            anyhow::bail!("the server could not be probed");
        }
        anyhow::bail!("no usable system trust store");
    }
    Ok(Outcome::Success)
}
