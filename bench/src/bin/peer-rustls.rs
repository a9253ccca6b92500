//! Peer program: rustls's RootCertStore and WebPkiServerVerifier, timed in-process.
//!
//! Same modes and JSON output as the C and Go peers (see bench/README.md):
//! - `load FILE R BUDGET_S`: read FILE, decode its PEM blocks with rustls-pki-types and
//!   `RootCertStore::add` each, into a fresh store; up to R runs (fewer once BUDGET_S is spent);
//! - `loaddir DIR R BUDGET_S`: the same, one file at a time over a directory listing;
//! - `verify ROOTS CHAIN ITERS BUDGET_S`: `WebPkiServerVerifier::verify_server_cert` of the
//!   chain (leaf, intermediate) for bench.example, verifier built once outside the timing;
//! - `version`.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("version") => {
            // The exact rustls version is read from Cargo.lock by the driver.
            println!(
                "{}",
                json!({"impl": "rustls", "version": "0.23 (aws-lc-rs)"})
            );
            Ok(())
        }
        Some("load") if a.len() == 5 => load(&a[2], a[3].parse()?, a[4].parse()?, false),
        Some("loaddir") if a.len() == 5 => load(&a[2], a[3].parse()?, a[4].parse()?, true),
        Some("verify") if a.len() == 6 => verify(&a[2], &a[3], a[4].parse()?, a[5].parse()?),
        _ => bail!(
            "usage: peer-rustls load FILE R BUDGET_S | loaddir DIR R BUDGET_S | \
             verify ROOTS CHAIN ITERS BUDGET_S | version"
        ),
    }
}

fn add_file(store: &mut RootCertStore, path: &Path) -> Result<()> {
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.with_context(|| format!("PEM in {}", path.display()))?;
        store
            .add(cert)
            .with_context(|| format!("adding a certificate from {}", path.display()))?;
    }
    Ok(())
}

fn load_once(src: &str, per_file: bool) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    if per_file {
        for entry in fs::read_dir(src).with_context(|| format!("listing {src}"))? {
            add_file(&mut store, &entry?.path())?;
        }
    } else {
        add_file(&mut store, Path::new(src))?;
    }
    Ok(store)
}

fn load(src: &str, reps: usize, budget_s: f64, per_file: bool) -> Result<()> {
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut anchors = 0;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let store = load_once(src, per_file)?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
        anchors = store.len();
        drop(store);
        if start.elapsed().as_secs_f64() > budget_s {
            break;
        }
    }
    println!(
        "{}",
        json!({
            "impl": "rustls", "op": if per_file { "loaddir" } else { "load" }, "src": src,
            "anchors": anchors, "median_ms": median(&mut samples.clone()), "samples_ms": samples,
        })
    );
    Ok(())
}

fn verify(roots: &str, chain: &str, iters: usize, budget_s: f64) -> Result<()> {
    let t = Instant::now();
    let store = load_once(roots, false)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let anchors = store.len();

    let chain_bytes = fs::read(chain).with_context(|| format!("reading {chain}"))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&chain_bytes)
        .collect::<Result<_, _>>()
        .with_context(|| format!("PEM in {chain}"))?;
    if certs.len() < 2 {
        bail!("{chain}: expected leaf then intermediate");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
        .build()
        .context("building the verifier")?;
    let name = ServerName::try_from("bench.example")?;

    let once = || {
        verifier
            .verify_server_cert(&certs[0], &certs[1..], &name, &[], UnixTime::now())
            .is_ok()
    };
    if !once() {
        bail!("rustls: the benchmark chain does not verify against {roots}");
    }
    for _ in 0..5 {
        once();
    }
    let start = Instant::now();
    let mut samples = Vec::with_capacity(iters);
    let mut valid = true;
    for _ in 0..iters.max(1) {
        let t = Instant::now();
        valid &= once();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        if start.elapsed().as_secs_f64() > budget_s && samples.len() >= 5 {
            break;
        }
    }
    println!(
        "{}",
        json!({
            "impl": "rustls", "op": "verify", "src": roots, "anchors": anchors,
            "load_ms": load_ms, "valid": valid, "iterations": samples.len(),
            "median_us": median(&mut samples.clone()), "samples_us": samples,
        })
    );
    Ok(())
}

/// tlskit's one median (NaN for no samples).
fn median(v: &mut [f64]) -> f64 {
    tlskit_x509::stats::median(v).unwrap_or(f64::NAN)
}
