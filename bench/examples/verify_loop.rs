//! Profiling aid: `verify_loop ours|rustls ROOTS CHAIN ITERS [UNIX_TIME]` runs one verifier
//! in a loop and counts refusals (a time past the chain's notAfter measures the refusal
//! path).
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
    let now = match a.get(5) {
        Some(t) => UnixTime::since_unix_epoch(std::time::Duration::from_secs(t.parse().unwrap())),
        None => UnixTime::now(),
    };
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
    let mut refused = 0;
    for _ in 0..n {
        if v.verify_server_cert(&leaf, &inter, &name, &[], now)
            .is_err()
        {
            refused += 1;
        }
    }
    println!(
        "{} {:.2} us, {refused} of {n} refused",
        a[1],
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
