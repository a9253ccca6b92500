//! Reference point on the same machine: rustls `RootCertStore::add` of every certificate
//! of a PEM bundle, PEM decode included (rustls-pki-types), median of RUNS (default 11).
//! The real peer comparison lives in bench/; this is for quick same-machine ratios.
#![allow(clippy::unwrap_used)]

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let mut t = Vec::new();
    let mut n = 0;
    for _ in 0..runs {
        let s = std::time::Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let mut store = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&bytes) {
            store.add(c.unwrap()).unwrap();
        }
        t.push(s.elapsed().as_secs_f64() * 1e3);
        n = store.len();
    }
    t.sort_by(f64::total_cmp);
    println!(
        "rustls: {n} anchors: median {:.3} ms = {:.3} us/anchor",
        t[runs / 2],
        t[runs / 2] * 1e3 / n as f64
    );
}
