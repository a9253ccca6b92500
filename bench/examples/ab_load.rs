//! Interleaved A/B on a busy machine: alternately load a PEM bundle with tlskit
//! (`tlskit_store::load`) and with rustls (`fs::read` + `pem_slice_iter` +
//! `RootCertStore::add`, as bench/src/bin/peer-rustls.rs does), RUNS pairs (default 31), and
//! print both medians, the median of the per-pair ratios (rustls / tlskit) and the minimums.
//! Pairs share the machine's momentary load, so the ratio is steadier than separate runs.
//! `cargo run --release -p tlskit-bench --example ab_load -- bundle.pem`
#![allow(clippy::unwrap_used)]

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use std::time::Instant;

/// tlskit's one median (the mean of the middle two for an even count).
fn median(v: &mut [f64]) -> f64 {
    tlskit_x509::stats::median(v).unwrap_or(f64::NAN)
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(31);
    let src = [tlskit_store::Source::File(path.clone().into())];
    let (mut t, mut r, mut q) = (Vec::new(), Vec::new(), Vec::new());
    let mut n = (0, 0);
    for i in 0..runs + 1 {
        let s = Instant::now();
        let (store, _) = tlskit_store::load(&src).unwrap();
        let tt = s.elapsed().as_secs_f64() * 1e3;
        n.0 = store.len();
        drop(store);
        let s = Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let mut store = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&bytes) {
            store.add(c.unwrap()).unwrap();
        }
        let rr = s.elapsed().as_secs_f64() * 1e3;
        n.1 = store.len();
        drop(store);
        if i > 0 {
            // The first pair warms the page cache and the allocator.
            t.push(tt);
            r.push(rr);
            q.push(rr / tt);
        }
    }
    assert_eq!(n.0, n.1);
    let (tmin, rmin) = (
        t.iter().copied().fold(f64::MAX, f64::min),
        r.iter().copied().fold(f64::MAX, f64::min),
    );
    println!(
        "{} anchors, {runs} pairs: tlskit median {:.2} ms (min {tmin:.2}), rustls median {:.2} ms (min {rmin:.2}); ratio of medians {:.2}, median pair ratio {:.2}, ratio of minimums {:.2}",
        n.0,
        median(&mut t.clone()),
        median(&mut r.clone()),
        median(&mut r.clone()) / median(&mut t.clone()),
        median(&mut q),
        rmin / tmin
    );
}
