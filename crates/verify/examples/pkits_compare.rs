//! NIST PKITS through tlskit's `ChainVerifier` and `openssl verify -x509_strict`, side
//! by side: prints the Markdown table of crates/verify/README.md, "Conformance".
//!
//! `cargo run -p tlskit-verify --example pkits_compare` (needs `openssl` on PATH).
//! Both get the same inputs per case: the trust anchor, every PKITS CA certificate
//! reachable upward by issuer name as untrusted intermediates, the CRLs of their
//! issuers, CRL checks on every certificate (`-crl_check_all`), time 2024-01-01.
#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

#[path = "../tests/pkits/cases.rs"]
mod cases;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;

const T: u64 = cases::TIME;

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = b64(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(line).unwrap());
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

fn tlskit(c: &cases::PkitsCase) -> bool {
    cases::run_case(c).is_ok()
}

fn openssl(c: &cases::PkitsCase, dir: &std::path::Path) -> bool {
    let w = |name: &str, label: &str, files: &[std::path::PathBuf]| {
        let p = dir.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        for x in files {
            f.write_all(pem(label, &std::fs::read(x).unwrap()).as_bytes())
                .unwrap();
        }
        p
    };
    let ta = w("ta.pem", "CERTIFICATE", &[cases::anchor()]);
    let ee = w("ee.pem", "CERTIFICATE", std::slice::from_ref(&c.ee));
    let un = w("untrusted.pem", "CERTIFICATE", &c.intermediates);
    let crl = w("crls.pem", "X509 CRL", &c.crls);
    let mut cmd = Command::new("openssl");
    cmd.args([
        "verify",
        "-x509_strict",
        "-crl_check_all",
        "-attime",
        &T.to_string(),
    ])
    .arg("-CAfile")
    .arg(&ta)
    .arg("-untrusted")
    .arg(&un)
    .arg("-CRLfile")
    .arg(&crl)
    .arg(&ee);
    if c.intermediates.is_empty() {
        // An empty -untrusted file is an error for openssl.
        cmd = Command::new("openssl");
        cmd.args([
            "verify",
            "-x509_strict",
            "-crl_check_all",
            "-attime",
            &T.to_string(),
        ])
        .arg("-CAfile")
        .arg(&ta)
        .arg("-CRLfile")
        .arg(&crl)
        .arg(&ee);
    }
    cmd.output().expect("openssl").status.success()
}

fn main() {
    let dir = std::env::temp_dir().join(format!("pkits-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // section -> (cases, tlskit right, openssl right)
    let mut rows: BTreeMap<(u32, &str), (usize, usize, usize, bool)> = BTreeMap::new();
    let key = |s: &'static str| {
        let n = s[2..]
            .split(|ch: char| !ch.is_ascii_digit())
            .next()
            .unwrap();
        (n.parse::<u32>().unwrap(), s)
    };
    let mut differ = Vec::new();
    for c in cases::cases() {
        let Some(expected) = c.expect_valid else {
            let r = rows.entry(key(c.section)).or_default();
            r.3 = c.in_scope;
            continue;
        };
        let t = tlskit(&c) == expected;
        let o = openssl(&c, &dir) == expected;
        let r = rows.entry(key(c.section)).or_default();
        r.0 += 1;
        r.1 += usize::from(t);
        r.2 += usize::from(o);
        r.3 = c.in_scope;
        if t != o {
            differ.push(format!(
                "| {} | {} | {} | {} |",
                c.section,
                c.name,
                if t { "right" } else { "wrong" },
                if o { "right" } else { "wrong" }
            ));
        }
    }
    println!("| section | in scope | cases (Valid/Invalid named) | tlskit right | openssl -x509_strict right |");
    println!("|---|---|---|---|---|");
    let mut tot = (0, 0, 0);
    for ((_, s), (n, t, o, scope)) in &rows {
        println!(
            "| {s} | {} | {n} | {t} | {o} |",
            if *scope { "yes" } else { "no" }
        );
        if *scope {
            tot.0 += n;
            tot.1 += t;
            tot.2 += o;
        }
    }
    println!("| in scope, total | | {} | {} | {} |", tot.0, tot.1, tot.2);
    println!();
    println!("| section | case | tlskit | openssl -x509_strict |");
    println!("|---|---|---|---|");
    for d in differ {
        println!("{d}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
