//! Signatures per second on one token key from T threads, for the session pool size in
//! TLSKIT_PKCS11_SESSIONS: how parallel signing scales with the pool (runs in
//! bench/RESULTS.md; crates/tls/README.md, "PKCS#11 token keys").
//!
//!     TLSKIT_PKCS11_PIN=... TLSKIT_PKCS11_SESSIONS=4 \
//!         cargo run --release -p tlskit-bench --example pkcs11_pool -- 'pkcs11:...' [THREADS] [SECONDS]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::sign::SigningKey;
use rustls::SignatureScheme;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let uri = args
        .next()
        .ok_or("usage: pkcs11_pool URI [THREADS] [SECONDS]")?;
    let threads: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(4);
    let secs: f64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(2.0);
    let key = tlskit_pkcs11::TokenKey::open(&tlskit_pkcs11::Pkcs11Uri::parse(&uri)?, None)?;
    let pool = key.pool_size();
    let signer = Arc::new(tlskit_pkcs11::RustlsKey::new(key)?);
    let offered = [
        SignatureScheme::ECDSA_NISTP256_SHA256,
        SignatureScheme::ECDSA_NISTP384_SHA384,
        SignatureScheme::RSA_PSS_SHA256,
    ];
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let t0 = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let signer = signer.clone();
            std::thread::spawn(move || {
                let s = signer.choose_scheme(&offered).ok_or("no scheme")?;
                let mut n = 0u64;
                while Instant::now() < until {
                    s.sign(b"a TLS 1.3 CertificateVerify message, give or take")?;
                    n += 1;
                }
                Ok::<u64, Box<dyn std::error::Error + Send + Sync>>(n)
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h
            .join()
            .map_err(|_| "thread panicked")?
            .map_err(|e| e.to_string())?;
    }
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{{\"sessions\":{pool},\"threads\":{threads},\"signatures\":{total},\"per_s\":{:.0}}}",
        total as f64 / wall
    );
    Ok(())
}
