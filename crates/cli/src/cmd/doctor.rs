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

use tlskit_client::probe::{ProbeOptions, ProbeReport};
use tlskit_server::{Compression, ServeConfig, Server};

use crate::cmd::store::{issue_json, load_or_explain};
use crate::output::{print_json, CmdResult, Escaped, Outcome, Style};

/// Arguments of `tlskit doctor`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit doctor\n  tlskit doctor example.com:443\n  tlskit doctor 10.0.0.5:8443 --servername web.internal --roots ca.pem\n  tlskit doctor --json | jq .sections.trust_store\n  tlskit doctor --metrics 127.0.0.1:9100   # a running serve: keys disabled by a refused PIN\n  SSL_CERT_FILE=/etc/myapp/cas.pem tlskit doctor\n\nExit: 0 the system trust store loads (findings are warnings), 2 none usable or the server could not be probed."
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
    /// Also read a running `tlskit serve`'s metrics endpoint (HOST:PORT of its
    /// --metrics): token keys disabled by a refused PIN, failed reloads.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
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
    // One severity policy with `store lint` (the store's): only errors and warnings make
    // this a warning.
    let serious = r
        .findings
        .iter()
        .filter(|f| f.severity() != tlskit_x509::Severity::Info)
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
    let mut peer = tlskit_client::PeerOptions::new(target);
    peer.server_name = name;
    peer.roots = roots;
    ProbeOptions::new(peer)
}

/// What was measured of the chain: its DER size and what went on the wire (`chain of 3
/// certificates, 28055 B, sent compressed with brotli as 1465 B`, or `..., sent
/// uncompressed; brotli would make it 1465 B`: an estimate, not a measurement).
fn chain_phrase(r: &ProbeReport) -> String {
    let size = format!(
        "chain of {} certificate{}, {} B",
        r.chain_certs,
        if r.chain_certs == 1 { "" } else { "s" },
        r.chain_bytes
    );
    match &r.compression {
        Some(alg) => format!(
            "{size}, sent compressed with {alg} as {} B",
            r.chain_bytes_compressed
        ),
        None => format!(
            "{size}, sent uncompressed; brotli would make it {} B",
            r.chain_bytes_compressed
        ),
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
        "{label:<22}{} round trip(s) [{}], {:.1} ms, {}, {}, flights [{}]{}",
        r.handshake_rtts,
        r.handshake_rtts_method,
        r.handshake_ms,
        r.tls_version,
        chain_phrase(r),
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
    match tlskit_client::probe::probe(&probe_options(target, args.servername.clone(), roots)) {
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
    tlskit_tls::log::set_level(tlskit_tls::log::Level::Off);
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
        let r = tlskit_client::probe::probe(&opts)?;
        out.insert(label.replace(' ', "_"), probe_lines(label, &r, &mut lines));
    }
    lines.push(
        "on loopback the count is of server bursts; over a real link, `tlskit probe` times them"
            .to_string(),
    );
    Ok((lines, Value::Object(out)))
}

/// Root → intermediate → leaf with 800 extra DNS names (about 27 KB of DER), made by
/// tlskit-pki and written to `dir`: returns (root.pem, chain.pem, key.pem).
fn long_chain(
    dir: &std::path::Path,
) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    let mut names = vec!["dns:doctor.tlskit.test".to_string()];
    names.extend((0..800).map(|i| format!("dns:host-{i:04}.long-chain.tlskit.test")));
    let opts = tlskit_pki::chain::ServerChainOptions::new(
        "CN=tlskit doctor root",
        "CN=tlskit doctor intermediate",
        "CN=doctor.tlskit.test",
    )
    .sans(names);
    let files = tlskit_pki::chain::server_chain(&opts)?.write(dir)?;
    Ok((files.root, files.chain, files.key))
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
    if let Some(addr) = &args.metrics {
        sections.push(serve_metrics_section(addr));
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
        if sections
            .iter()
            .any(|s| s.id == "serve_metrics" && s.status == Status::Bad)
        {
            anyhow::bail!("the server's metrics could not be read");
        }
        anyhow::bail!("no usable system trust store");
    }
    Ok(Outcome::Success)
}

/// Largest metrics page read from a server.
const MAX_METRICS_BYTES: u64 = 4 << 20;

/// GET /metrics from a running `tlskit serve` (HTTP/1.0, 5 s deadlines, bounded read).
fn fetch_metrics(addr: &str) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;
    let wait = std::time::Duration::from_secs(5);
    let sa = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow::anyhow!("no address for {addr}"))?;
    let mut c = std::net::TcpStream::connect_timeout(&sa, wait)?;
    c.set_read_timeout(Some(wait))?;
    c.set_write_timeout(Some(wait))?;
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
    let mut body = Vec::new();
    c.take(MAX_METRICS_BYTES).read_to_end(&mut body)?;
    let text = String::from_utf8_lossy(&body).into_owned();
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP answer"))?;
    if !head.starts_with("HTTP/1.") || head.split(' ').nth(1).is_none_or(|c| c != "200") {
        anyhow::bail!("the answer is not 200 OK");
    }
    Ok(rest.to_string())
}

/// The labels of one metric line (`name{k="v",...} value`), unescaped.
fn metric_labels(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(open) = line.find('{') else {
        return out;
    };
    let mut rest = &line[open + 1..];
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim_start_matches(',').to_string();
        let mut value = String::new();
        let mut chars = rest[eq + 2..].char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => break,
                },
                '"' => {
                    end = Some(eq + 2 + i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((key, value));
        match end {
            Some(e) => rest = &rest[e..],
            None => break,
        }
    }
    out
}

/// The value of the unlabelled metric `name`.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// `--metrics ADDR`: what a running server says about itself that the operator must act
/// on: token keys disabled because the token refused their PIN (no login is tried again
/// with the same PIN; the key comes back when the PIN source changes and the server
/// reloads), and failed reloads.
fn serve_metrics_section(addr: &str) -> Section {
    let title = "A running server (its metrics)";
    let text = match fetch_metrics(addr) {
        Ok(t) => t,
        Err(e) => {
            return Section {
                id: "serve_metrics",
                title,
                status: Status::Bad,
                lines: vec![format!("{addr}: cannot read the metrics: {e:#}")],
                json: json!({"address": addr, "error": format!("{e:#}")}),
            }
        }
    };
    let refused: Vec<Value> = text
        .lines()
        .filter(|l| l.starts_with("tlskit_pkcs11_pin_refused{"))
        .map(|l| {
            let labels: BTreeMap<String, String> = metric_labels(l).into_iter().collect();
            json!({
                "token": labels.get("token").cloned().unwrap_or_default(),
                "rv": labels.get("rv").cloned().unwrap_or_default(),
            })
        })
        .collect();
    let reloads_failed = text.lines().find_map(|l| {
        l.strip_prefix("tlskit_reloads_total{result=\"failed\"} ")
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    let mut lines = Vec::new();
    for r in &refused {
        lines.push(format!(
            "token \"{}\" refused the PIN ({}): its key is disabled and no login is tried with the same PIN; correct the PIN (the URI's pin-value, the pin-source file or TLSKIT_PKCS11_PIN), then reload",
            r["token"].as_str().unwrap_or(""),
            r["rv"].as_str().unwrap_or("")
        ));
    }
    if refused.is_empty() {
        lines.push("no token refused its PIN".into());
    }
    if let Some(n) = reloads_failed.filter(|n| *n > 0.0) {
        lines.push(format!(
            "{n} reloads failed since the start (see reload_failed in the log)"
        ));
    }
    let status = if refused.is_empty() {
        Status::Ok
    } else {
        Status::Warn
    };
    Section {
        id: "serve_metrics",
        title,
        status,
        lines,
        json: json!({
            "address": addr,
            "pkcs11_pin_refused": refused,
            "pkcs11_logins_skipped": metric_value(&text, "tlskit_pkcs11_logins_total{result=\"skipped\"}"),
            "reloads_failed": reloads_failed,
        }),
    }
}

#[cfg(test)]
mod serve_metrics_tests {
    use super::*;

    #[test]
    fn labels_are_unescaped() {
        let l = metric_labels(
            r#"tlskit_pkcs11_pin_refused{token="we\"b\\x",rv="CKR_PIN_INCORRECT"} 1"#,
        );
        assert_eq!(
            l,
            vec![
                ("token".to_string(), "we\"b\\x".to_string()),
                ("rv".to_string(), "CKR_PIN_INCORRECT".to_string())
            ]
        );
        assert!(metric_labels("x 1").is_empty());
        assert_eq!(metric_value("a 1\nb{c=\"d\"} 2\nb 3\n", "b"), Some(3.0));
    }
}
