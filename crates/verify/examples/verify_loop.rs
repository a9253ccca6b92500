//! Profiling aid: `verify_loop ours|rustls ROOTS CHAIN ITERS` runs one verifier in a loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use tlskit_store::{Source, StoreHandle};
use tlskit_verify::{ServerName, StoreServerVerifier, UnixTime, VerifierConfig};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (store, _) = tlskit_store::load(&[Source::from_arg(&a[2])]).unwrap();
    let mut certs = tlskit_verify::load_certs(std::path::Path::new(&a[3])).unwrap();
    let inter = certs.split_off(1);
    let leaf = certs.pop().unwrap();
    let n: usize = a[4].parse().unwrap();
    let name = ServerName::try_from("bench.example").unwrap();
    let now = UnixTime::now();
    let v: Arc<dyn ServerCertVerifier> = if a[1] == "ours" {
        Arc::new(StoreServerVerifier::new(
            Arc::new(StoreHandle::from_store(store)),
            VerifierConfig {
                cache: None,
                ..Default::default()
            },
        ))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for x in store.anchors() {
            let _ = roots.add(x.der().to_vec().into());
        }
        rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        )
        .build()
        .unwrap()
    };
    let t = std::time::Instant::now();
    for _ in 0..n {
        v.verify_server_cert(&leaf, &inter, &name, &[], now)
            .unwrap();
    }
    println!(
        "{} {:.2} us",
        a[1],
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
