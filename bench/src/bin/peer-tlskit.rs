//! Peer program for tlskit's library API (tlskit-store), timed in-process like the other
//! peers, for the one-file-at-a-time pattern the CLI cannot express:
//! - `loaddir DIR R BUDGET_S`: a fresh `StoreBuilder`, then `add_source(Source::File)` once per
//!   file of DIR (listing inside the timing), then `build()`;
//! - `load FILE R BUDGET_S`: `tlskit_store::load(&[Source::File(FILE)])`.
//!
//! Built only with the `tlskit-store-api` feature (bench/run.sh tries it), so the bench crate
//! still builds against a store crate that lacks the builder.

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde_json::json;
use tlskit_store::{LoadReport, Source, StoreBuilder};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let per_file = match a.get(1).map(String::as_str) {
        Some("load") if a.len() == 5 => false,
        Some("loaddir") if a.len() == 5 => true,
        _ => bail!("usage: peer-tlskit load FILE R BUDGET_S | loaddir DIR R BUDGET_S"),
    };
    let src = &a[2];
    let reps: usize = a[3].parse()?;
    let budget: f64 = a[4].parse()?;
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut anchors = 0;
    let mut errors = 0;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let (store, report) = if per_file {
            let mut builder = StoreBuilder::new();
            let mut report = LoadReport::default();
            for entry in fs::read_dir(src).with_context(|| format!("listing {src}"))? {
                builder.add_source(&Source::File(entry?.path()), &mut report);
            }
            (builder.build(), report)
        } else {
            tlskit_store::load(&[Source::File(PathBuf::from(src))])?
        };
        samples.push(t.elapsed().as_secs_f64() * 1e3);
        anchors = store.len();
        errors = report.errors.len();
        drop(store);
        if start.elapsed().as_secs_f64() > budget {
            break;
        }
    }
    let median = tlskit_x509::stats::median(&mut samples.clone()).unwrap_or(f64::NAN);
    println!(
        "{}",
        json!({
            "impl": "tlskit-lib", "op": if per_file { "loaddir" } else { "load" }, "src": src,
            "anchors": anchors, "errors": errors, "median_ms": median, "samples_ms": samples,
        })
    );
    Ok(())
}
