//! `tlskit verify` and `tlskit bench verify`: argument parsing and output only; the
//! work is done by `tlskit_verify` (and the benchmark by `tlskit_bench_harness`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use tlskit_bench_harness::{BenchError, VerifyOptions};
use tlskit_store::{Source, TrustStore};
use tlskit_verify::names::ReferenceName;
use tlskit_verify::{
    CertificateDer, ChainVerifier, Profile, Purpose, Rule, ServerName, UnixTime, VerifierConfig,
};

use crate::output::{escape, print_json, warn, CmdResult, Escaped, Outcome, Style};

const VERIFY_EXAMPLES: &str = "\
Examples:
  # Is this server chain valid for www.example.com under the system roots?
  tlskit verify --roots system --cert chain.pem --host www.example.com

  # A client certificate against a private CA, checked against a CRL, as JSON
  tlskit verify --roots ca.pem --cert client.pem --purpose client --crl ca.crl --json

  # As it was (or will be) at a given time, with an extra intermediate file
  tlskit verify --roots roots/ --intermediates int.pem --cert leaf.pem \\
      --host xn--rksmrgs-5wao1o.com --at 2025-06-01T12:00:00Z

  # Internationalised names are converted to A-labels (UTS #46); U+3002 separates labels
  tlskit verify --roots store.snap --cert leaf.pem --host 'räksmörgås。com'

  # A private PKI: RFC 5280 rules only, and certificates without key identifiers accepted
  tlskit verify --roots ca.pem --cert leaf.pem --profile rfc5280 --allow aki-missing

--cert holds the end-entity certificate first, optionally followed by the chain a peer
would send (in any order: paths are built from the pieces present). --roots takes PEM or
DER files, directories, tlskit snapshots, or the word `system`.

Profiles: `browser` (default) refuses what browsers and rustls refuse and reports every
other RFC 5280 / CA/Browser Forum rule the path breaks as a warning (printed, exit 0);
`webpki` refuses every one of those rules; `rfc5280` refuses the RFC 5280 rules only
(no key sizes, explicit TLS EKU, wildcard and commonName rules). Trust anchors are
never held to how a certificate is formed (RFC 5280 6.1.1 (d)). --allow RULE lifts one
rule by its code (the `rule` of a refusal or a warning).

Exit status: 0 valid (with or without warnings: verify answers \"would this chain be
trusted\"; `tlskit lint` answers \"is it clean\"), 1 invalid (the reason is printed), 2
usage error or unreadable input. JSON fields: valid, reason (when invalid), rule (stable
code of the reason, when invalid), certificate and certificate_subject (position 0 = end
entity and subject of the certificate at fault, when known), chain (subjects, leaf to
anchor, when valid), warnings (always; rule, section, position, role, subject, message),
host (A-label) or ip, purpose, at, profile.";

/// Arguments of `tlskit verify`.
#[derive(clap::Args)]
#[command(after_long_help = VERIFY_EXAMPLES)]
pub(crate) struct VerifyArgs {
    /// Trust anchors: PEM/DER file, directory, snapshot, or `system` (repeatable).
    #[arg(long, value_name = "SRC", required = true, num_args = 1..)]
    roots: Vec<String>,
    /// Extra intermediate certificates (PEM or DER; repeatable).
    #[arg(long, value_name = "FILE")]
    intermediates: Vec<PathBuf>,
    /// The end-entity certificate, optionally followed by the chain (PEM or DER).
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// Host name the certificate must be valid for (U-labels are converted to A-labels).
    #[arg(long, value_name = "NAME", conflicts_with = "ip")]
    host: Option<String>,
    /// IP address the certificate must be valid for.
    #[arg(long, value_name = "ADDR")]
    ip: Option<String>,
    /// What the certificate must be good for.
    #[arg(long, value_enum, default_value_t = PurposeArg::Server)]
    purpose: PurposeArg,
    /// Verification time: RFC 3339 (2025-06-01T12:00:00Z) or Unix seconds. Default: now.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    at: Option<String>,
    /// Certificate revocation lists (PEM or DER; repeatable). A CRL whose issuer is in the
    /// chain or the roots but whose signature its key does not verify is an error.
    #[arg(long, value_name = "FILE")]
    crl: Vec<PathBuf>,
    /// Most certificates in a path, end entity and anchor included (2..=16).
    #[arg(long, value_name = "N", default_value_t = 8)]
    max_depth: usize,
    /// Rule set on top of rustls-webpki: browser (default: refuse what browsers refuse,
    /// warn about the rest), webpki (refuse every RFC 5280 + CA/B Forum BR rule) or rfc5280.
    #[arg(long, value_name = "PROFILE", default_value = "browser", value_parser = super::profile_parser(), hide_possible_values = true)]
    profile: Profile,
    /// Do not check this rule (its code, e.g. aki-missing; repeatable).
    #[arg(long, value_name = "RULE", value_parser = super::rule_parser(), hide_possible_values = true)]
    allow: Vec<Rule>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// `--profile` values (also used by `serve --client-ca-profile`).
pub(crate) fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse::<Profile>().map_err(|e| e.to_string())
}

/// `--allow` values: a rule code that can be lifted.
pub(crate) fn parse_rule(s: &str) -> Result<Rule, String> {
    let r = Rule::from_code(s).map_err(|e| e.to_string())?;
    if !r.allowable() {
        return Err(format!(
            "{s} is enforced by rustls-webpki itself and cannot be allowed"
        ));
    }
    Ok(r)
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PurposeArg {
    Server,
    Client,
}

impl From<PurposeArg> for Purpose {
    fn from(p: PurposeArg) -> Self {
        match p {
            PurposeArg::Server => Purpose::Server,
            PurposeArg::Client => Purpose::Client,
        }
    }
}

const BENCH_EXAMPLES: &str = "\
Examples:
  tlskit bench verify --roots system --cert chain.pem --host www.example.com
  tlskit bench verify --roots big.snap --cert chain.pem --host bench.example --json

Reports medians over --runs runs: verify_us (one verification, no cache), cached_verify_us
(a cache hit), two_thread_speedup (uncached verifications per second on two threads
divided by the rate on one).";

/// Arguments of `tlskit bench verify`.
#[derive(clap::Args)]
#[command(after_long_help = BENCH_EXAMPLES)]
pub(crate) struct BenchVerifyArgs {
    /// Trust anchors: PEM/DER file, directory, snapshot, or `system` (repeatable).
    #[arg(long, value_name = "SRC", required = true, num_args = 1..)]
    roots: Vec<String>,
    /// The end-entity certificate, optionally followed by the chain.
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// Host name to verify for.
    #[arg(long, value_name = "NAME")]
    host: String,
    /// Runs per measurement (the median is reported).
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Minimum time per run, in milliseconds.
    #[arg(long, default_value_t = 200)]
    run_ms: u64,
    /// Also time rustls's own WebPkiServerVerifier on the same anchors and chain
    /// (`rustls_webpki_us`), for comparison.
    #[arg(long)]
    compare_rustls: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn load_store(roots: &[String]) -> anyhow::Result<TrustStore> {
    let sources: Vec<Source> = roots.iter().map(|r| Source::from_arg(r)).collect();
    let (store, report) = tlskit_store::load(&sources).map_err(|e| {
        if let tlskit_store::StoreError::NothingLoadable { issues, counts } = &e {
            super::store::warn_issues(issues, counts);
        }
        anyhow!("--roots {}: {e}", roots.join(" "))
    })?;
    super::store::warn_issues(&report.errors, &report.error_counts);
    if store.is_empty() {
        bail!("--roots {}: no trust anchor loaded", roots.join(" "));
    }
    Ok(store)
}

fn parse_time(s: &str) -> anyhow::Result<UnixTime> {
    let secs: i64 = if let Ok(n) = s.parse::<i64>() {
        n
    } else {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .with_context(|| {
                format!("--at {s:?}: expected RFC 3339 (2025-06-01T12:00:00Z) or Unix seconds")
            })?
            .unix_timestamp()
    };
    let secs = u64::try_from(secs).map_err(|_| anyhow!("--at {s:?}: before 1970"))?;
    Ok(UnixTime::since_unix_epoch(Duration::from_secs(secs)))
}

/// Parse --host / --ip into the JSON label and the rustls name.
fn reference(
    host: Option<&str>,
    ip: Option<&str>,
) -> anyhow::Result<Option<(ReferenceName, ServerName<'static>)>> {
    let parsed = match (host, ip) {
        (Some(h), _) => {
            if let Some(addr) = tlskit_verify::names::parse_ip(h) {
                ReferenceName::Ip(addr)
            } else {
                let d =
                    tlskit_verify::names::DnsName::parse(h).map_err(|e| anyhow!("--host: {e}"))?;
                if d.is_wildcard() {
                    bail!("--host {h:?}: a reference name cannot be a wildcard; give the host name a client would use");
                }
                ReferenceName::Dns(d)
            }
        }
        (None, Some(i)) => ReferenceName::Ip(
            tlskit_verify::names::parse_ip(i)
                .ok_or_else(|| anyhow!("--ip {i:?}: not an IPv4 or IPv6 address"))?,
        ),
        (None, None) => return Ok(None),
    };
    let sn = parsed.to_server_name().map_err(|e| anyhow!("{e}"))?;
    Ok(Some((parsed, sn)))
}

#[derive(serde::Serialize)]
struct VerifyJson {
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate_subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chain: Option<Vec<String>>,
    /// Always present: empty when the chain is refused or breaks no reported rule.
    warnings: Vec<tlskit_verify::Violation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_unicode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ip: Option<String>,
    purpose: Purpose,
    at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    anchor_sha256: Option<String>,
    profile: Profile,
    /// When a certificate is revoked: its entry on the CRL that lists it.
    #[serde(skip_serializing_if = "Option::is_none")]
    revocation: Option<RevocationJson>,
}

/// `revocation` of `verify --json`: the CRL entry of the revoked certificate.
#[derive(serde::Serialize)]
struct RevocationJson {
    /// Position in the chain as presented (0: the end entity).
    certificate: usize,
    serial: String,
    reason: &'static str,
    reason_code: u8,
    revoked_at: String,
    /// The `--crl` file that lists it.
    crl: String,
}

/// The CRL entry of the first presented certificate a given CRL lists (`position` first,
/// when the verifier said which).
fn revocation(
    position: Option<usize>,
    presented: &[&[u8]],
    crls: &[tlskit_verify::Crl],
    paths: &[PathBuf],
) -> Option<RevocationJson> {
    let order = position
        .into_iter()
        .chain(0..presented.len())
        .filter(|&i| i < presented.len());
    for i in order {
        for (crl, path) in crls.iter().zip(paths) {
            if let Some(e) = crl.entry_for(presented[i]) {
                return Some(RevocationJson {
                    certificate: i,
                    serial: e.serial.clone(),
                    reason: e.reason_name(),
                    reason_code: e.reason_code.unwrap_or(0),
                    revoked_at: tlskit_x509::datetime::rfc3339(e.revoked_at),
                    crl: path.display().to_string(),
                });
            }
        }
    }
    None
}

pub(crate) fn run(args: VerifyArgs) -> CmdResult {
    // Inputs first: every usage or input problem exits 2 before any verification.
    let name = reference(args.host.as_deref(), args.ip.as_deref())?;
    let at = match &args.at {
        Some(s) => parse_time(s)?,
        None => UnixTime::now(),
    };
    if !(2..=tlskit_verify::MAX_SUPPORTED_DEPTH).contains(&args.max_depth) {
        bail!(
            "--max-depth {}: must be between 2 and {}",
            args.max_depth,
            tlskit_verify::MAX_SUPPORTED_DEPTH
        );
    }
    let mut certs = tlskit_verify::load_certs(&args.cert)?;
    let mut intermediates: Vec<CertificateDer<'static>> = certs.split_off(1);
    let leaf = certs
        .pop()
        .ok_or_else(|| anyhow!("{}: no certificate", args.cert.display()))?;
    for f in &args.intermediates {
        intermediates.extend(tlskit_verify::load_certs(f)?);
    }
    let crls = args
        .crl
        .iter()
        .map(|p| tlskit_verify::load_crl(p))
        .collect::<Result<Vec<_>, _>>()?;
    let store = load_store(&args.roots)?;
    // A CRL whose issuer is at hand but whose signature its key does not verify is an
    // input error (rustls-webpki would only find it on the path it checks; the RFC 5280
    // validator would leave it out). A CRL of another CA is said and left out.
    let presented: Vec<&[u8]> = std::iter::once(leaf.as_ref())
        .chain(intermediates.iter().map(|c| c.as_ref()))
        .collect();
    for (crl, path) in crls.iter().zip(&args.crl) {
        match crl.check_signer(&store, &presented) {
            tlskit_verify::CrlSigner::BadSignature => bail!(
                "{}: the CRL's signature does not verify with the key of its issuer {} (the \
                 CRL was altered, or signed by another key with that name)",
                path.display(),
                escape(&crl.issuer_name())
            ),
            tlskit_verify::CrlSigner::NoIssuer => warn(
                path,
                &format!(
                    "no certificate of the chain or the roots is this CRL's issuer ({}); it \
                     applies to none of them",
                    escape(&crl.issuer_name())
                ),
            ),
            _ => {}
        }
    }

    let verifier = ChainVerifier::new(VerifierConfig {
        max_depth: args.max_depth,
        crls: crls.clone(),
        cache: None,
        profile: args.profile,
        allow: args.allow.clone(),
        ..VerifierConfig::default()
    });
    let purpose = Purpose::from(args.purpose);
    let result = verifier.verify(
        &store,
        &leaf,
        &intermediates,
        name.as_ref().map(|(_, sn)| sn),
        purpose,
        at,
    );

    let (host, host_unicode, ip) = match &name {
        Some((ReferenceName::Dns(d), _)) => (
            Some(d.ascii().to_string()),
            (d.unicode() != d.ascii()).then(|| d.unicode().to_string()),
            None,
        ),
        Some((ReferenceName::Ip(a), _)) => (None, None, Some(a.to_string())),
        _ => (None, None, None),
    };
    let report = VerifyJson {
        valid: result.is_ok(),
        reason: result.as_ref().err().map(|e| e.to_string()),
        rule: result.as_ref().err().map(|e| e.rule()),
        certificate: result
            .as_ref()
            .err()
            .and_then(|e| e.violation())
            .map(|v| v.position),
        certificate_subject: result
            .as_ref()
            .err()
            .and_then(|e| e.violation())
            .map(|v| v.subject.clone()),
        chain: result.as_ref().ok().map(|v| v.chain.subjects()),
        warnings: result
            .as_ref()
            .map(|v| v.chain.warnings.clone())
            .unwrap_or_default(),
        host,
        host_unicode,
        ip,
        purpose,
        at: tlskit_x509::datetime::rfc3339(i64::try_from(at.as_secs()).unwrap_or(i64::MAX)),
        anchor_sha256: result
            .as_ref()
            .ok()
            .map(|v| tlskit_x509::text::hex(&v.chain.anchor_sha256)),
        profile: args.profile,
        revocation: match &result {
            Err(tlskit_verify::VerifyError::Revoked { which }) => {
                revocation(which.as_ref().map(|w| w.0), &presented, &crls, &args.crl)
            }
            _ => None,
        },
    };
    if args.json {
        print_json(&report)?;
    } else {
        print_human(&report);
    }
    Ok(if report.valid {
        Outcome::Success
    } else {
        Outcome::Negative
    })
}

fn print_human(r: &VerifyJson) {
    let st = Style::stdout();
    // The names are the user's, but U-labels may hold bidi controls: escaped like the rest.
    let target = match (&r.host, &r.host_unicode, &r.ip) {
        (Some(h), Some(u), _) => format!(" for {h} ({u})"),
        (Some(h), None, _) => format!(" for {h}"),
        (_, _, Some(ip)) => format!(" for {ip}"),
        _ => String::new(),
    };
    let target = escape(&target);
    let purpose = r.purpose.as_str();
    if r.valid {
        println!(
            "{} {purpose} certificate{target} at {}",
            st.good(&st.bold("valid:")),
            r.at
        );
        if let Some(chain) = &r.chain {
            let last = chain.len().saturating_sub(1);
            for (i, s) in chain.iter().enumerate() {
                let role = match i {
                    0 => "end entity",
                    i if i == last => "trust anchor",
                    _ => "intermediate",
                };
                println!("  {i}  {}  [{role}]", Escaped(s));
            }
        }
        if let Some(sha) = &r.anchor_sha256 {
            println!("  anchor sha256 {sha}");
        }
        print_warnings(&st, &r.warnings, r.profile);
    } else {
        println!(
            "{} {purpose} certificate{target} at {}",
            st.bad(&st.bold("invalid:")),
            r.at
        );
        if let Some(reason) = &r.reason {
            println!("  reason: {}", st.warn(&escape(reason)));
        }
        if let Some(rule) = r.rule {
            println!("  rule:   {rule} (profile {})", r.profile);
        }
        if let Some(v) = &r.revocation {
            println!(
                "  revoked: serial {} ({}, code {}) at {}, listed in {}",
                v.serial,
                v.reason,
                v.reason_code,
                v.revoked_at,
                escape(&v.crl)
            );
        }
    }
}

/// The verified path's warnings, one sentence each (escaped: subjects come from
/// certificates). Shared with `connect` and `probe`.
pub(crate) fn print_warnings(st: &Style, warnings: &[tlskit_verify::Violation], profile: Profile) {
    if warnings.is_empty() {
        return;
    }
    println!(
        "  {} {} (profile {profile}: reported, not refused)",
        st.warn("warnings:"),
        warnings.len()
    );
    for w in warnings {
        println!("    - {}", escape(&w.to_string()));
    }
}

/// `tlskit bench verify`: the measuring is tlskit-bench-harness's; this reads the inputs
/// and prints.
pub(crate) fn bench(args: BenchVerifyArgs) -> CmdResult {
    let Some((_, name)) = reference(Some(&args.host), None)? else {
        bail!("--host is required");
    };
    let mut certs = tlskit_verify::load_certs(&args.cert)?;
    let intermediates = certs.split_off(1);
    let leaf = certs
        .pop()
        .ok_or_else(|| anyhow!("{}: no certificate", args.cert.display()))?;
    let store = load_store(&args.roots)?;
    let opts = VerifyOptions::new(args.runs, args.run_ms).compare_rustls(args.compare_rustls);
    let report = match tlskit_bench_harness::verify::run(store, &leaf, &intermediates, &name, &opts)
    {
        Ok(r) => r,
        Err(e @ BenchError::ChainInvalid(_)) => bail!("{}: {e}", args.cert.display()),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        print_json(&report)?;
    } else {
        let st = Style::stdout();
        println!(
            "{} {} anchors, host {}, median of {} runs",
            st.bold("bench verify:"),
            report.anchors,
            report.host,
            report.runs
        );
        println!("  verify (no cache)   {:>10.2} µs", report.verify_us);
        println!("  verify (cache hit)  {:>10.3} µs", report.cached_verify_us);
        println!(
            "  two threads         {:>10.2}x the one-thread rate ({:.0}/s vs {:.0}/s)",
            report.two_thread_speedup, report.two_thread_per_s, report.one_thread_per_s
        );
        println!(
            "  two threads, cached {:>10.2}x",
            report.cached_two_thread_speedup
        );
        if let Some(r) = report.rustls_webpki_us {
            println!("  rustls WebPkiServerVerifier {r:>10.2} µs (same anchors, same chain)");
        }
    }
    Ok(Outcome::Success)
}
