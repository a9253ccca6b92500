//! `tlskit probe`: where a TLS handshake spends its round trips.

use tlskit_client::probe::{probe, ProbeOptions, ProbeReport};
use tlskit_tls::TlsVersion;

use crate::output::{escape, print_json, CmdResult, Escaped, Outcome, Style};

const AFTER_HELP: &str = "\
Examples:
  tlskit probe example.com
  tlskit probe 127.0.0.1:8443 --tls-version 1.2
  tlskit probe 127.0.0.1:8443 --servername test.example --roots ca.pem --json
  tlskit probe example.com:443 --repeat 5
  tlskit probe mail.example.com:25 --starttls smtp

Measures the TCP connect time (the RTT estimate), the handshake time and its round trips,
the bytes and TCP segments of each server burst, the certificate chain's size plain and
compressed against TCP's 10-segment initial window (14,600 bytes), whether compression,
resumption and TLS 1.3 were used, and says what costs a round trip.
Exit 0 completed and verified, 1 completed but verification failed, 2 could not connect.";

/// Arguments of `tlskit probe`.
#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct ProbeArgs {
    #[command(flatten)]
    peer: super::PeerArgs,
    /// Offer TLS 1.2 only (the same as --tls-version 1.2; kept for old scripts).
    #[arg(long, hide = true, conflicts_with_all = ["tls13", "tls_version"])]
    tls12: bool,
    /// Offer TLS 1.3 only (the same as --tls-version 1.3; kept for old scripts).
    #[arg(long, hide = true, conflicts_with = "tls_version")]
    tls13: bool,
    /// Run N full handshakes (medians reported) and a resumption attempt.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// Draw the handshake as a text waterfall: client and server flights against time.
    #[arg(long)]
    timeline: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: ProbeArgs) -> CmdResult {
    if a.repeat == 0 || a.repeat > 1000 {
        anyhow::bail!("--repeat {}: must be between 1 and 1000", a.repeat);
    }
    let versions = if a.tls12 {
        vec![TlsVersion::Tls12]
    } else if a.tls13 {
        vec![TlsVersion::Tls13]
    } else {
        super::net::versions(&a.peer.tls_version)?
    };
    let profile = a.peer.profile;
    let mut opts = ProbeOptions::new(a.peer.options(versions));
    opts.repeat = a.repeat;
    let r = probe(&opts)?;
    for w in &r.roots_warnings {
        eprintln!("tlskit: warning: {w}");
    }
    if a.json {
        print_json(&r)?;
    } else {
        human(&r, profile);
        if a.timeline {
            timeline(&r);
        }
    }
    Ok(if r.verified {
        Outcome::Success
    } else {
        Outcome::Negative
    })
}

fn human(r: &ProbeReport, profile: tlskit_verify::Profile) {
    let st = Style::stdout();
    println!(
        "{} {} ({}, name {})",
        st.bold("probe"),
        r.target,
        r.peer,
        r.server_name
    );
    if let Some(p) = &r.starttls {
        println!("  STARTTLS:     {p} (the plain-text dance is not counted in the handshake)");
    }
    println!(
        "  TCP connect:  {:.1} ms (RTT estimate){}",
        r.tcp_rtt_ms,
        r.tcp_info
            .as_ref()
            .and_then(|i| i.rtt_ms)
            .map(|x| format!(", TCP_INFO rtt {x:.1} ms"))
            .unwrap_or_default()
    );
    println!(
        "  handshake:    {:.1} ms = {} round trip(s) [{}], {} {}{}",
        r.handshake_ms,
        r.handshake_rtts,
        r.handshake_rtts_method,
        r.tls_version,
        r.cipher_suite,
        if r.resumed { ", resumed" } else { "" }
    );
    for (i, f) in r.server_flights.iter().enumerate() {
        println!(
            "  server burst {}: {:>6} bytes, {:>3} segments, at {:.1} ms{}",
            i + 1,
            f.bytes,
            f.segments,
            f.at_ms,
            if f.after_client_write {
                ""
            } else {
                "  (continues the previous burst after a pause)"
            }
        );
    }
    if r.kx.key_exchange_group.is_some() {
        println!("  key exchange: {}", super::net::key_exchange_line(&r.kx));
    }
    if let Some(d) = r.expires_in_days {
        println!("  certificate:  {}", super::net::expiry_phrase(d));
    }
    let comp = match &r.compression {
        Some(c) => format!(
            "sent compressed with {c}: {} bytes",
            r.chain_bytes_compressed
        ),
        None => format!(
            "not compressed (brotli would make {} bytes)",
            r.chain_bytes_compressed
        ),
    };
    println!(
        "  chain sent:   {} certificate{}, {} bytes, {comp}",
        r.chain_certs,
        if r.chain_certs == 1 { "" } else { "s" },
        r.chain_bytes
    );
    // The verified path ends at the trust anchor (which servers need not send); without
    // verification it is what the server sent.
    println!(
        "  {}",
        if r.verified {
            "verified path:"
        } else {
            "as sent:"
        }
    );
    // Names come from the server's certificates: escaped.
    for (i, s) in r.chain.iter().enumerate() {
        println!("    {i}: {}", Escaped(s));
    }
    let verdict = if r.verified {
        st.good("verified")
    } else {
        st.bad(&format!(
            "NOT verified: {}",
            escape(r.reason.as_deref().unwrap_or("unknown"))
        ))
    };
    println!("  verification: {verdict}");
    super::verify::print_warnings(&st, &r.warnings, profile);
    if !r.runs.is_empty() {
        println!(
            "  {} runs: median TCP {:.1} ms, handshake {:.1} ms",
            r.runs.len(),
            r.tcp_rtt_ms,
            r.handshake_ms
        );
    }
    if let Some(x) = &r.resumption {
        println!(
            "  resumption:   {} ({:.1} ms, {} round trip(s))",
            if x.resumed {
                st.good("resumed")
            } else {
                st.warn("not resumed")
            },
            x.handshake_ms,
            x.handshake_rtts
        );
    }
    if !r.advice.is_empty() {
        println!("{}", st.bold("advice"));
        for a in &r.advice {
            println!("  - {}", Escaped(a));
        }
    }
}

/// Columns of the waterfall's time axis.
const TIMELINE_WIDTH: usize = 40;

/// The reported handshake as a waterfall: one line per flight, `->` client to server,
/// `<-` server to client, a mark at its time on an axis scaled to the last flight.
fn timeline(r: &ProbeReport) {
    let st = Style::stdout();
    let end = r
        .timeline
        .iter()
        .map(|e| e.at_ms)
        .fold(r.handshake_ms, f64::max)
        .max(0.001);
    println!(
        "{} (0 to {end:.1} ms; RTT {:.1} ms)",
        st.bold("timeline"),
        r.tcp_rtt_ms
    );
    for e in &r.timeline {
        // Truncation intended: the column of a time on a 40-column axis.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let col = ((e.at_ms / end) * TIMELINE_WIDTH as f64).round() as usize;
        let col = col.min(TIMELINE_WIDTH);
        let (arrow, mark) = if e.from == "client" {
            ("->", '>')
        } else {
            ("<-", '<')
        };
        let mut axis = ['.'; TIMELINE_WIDTH + 1];
        axis[col] = mark;
        println!(
            "  {:>8.2} ms  {:<6} {arrow} |{}| {:>7} B  {}",
            e.at_ms,
            e.from,
            axis.iter().collect::<String>(),
            e.bytes,
            e.what
        );
    }
}
