//! `tlskit bench store` without the CLI: `store::run` on the given sources, printed as
//! JSON (the figures of a `tlskit.bench.store/1` document). For same-machine before/after
//! runs where building the whole `tlskit` binary twice is too slow.
//! `cargo run --release -p tlskit-bench-harness --example bench_store -- FILE... [--runs N]`
#![allow(clippy::unwrap_used)]

fn main() {
    let mut runs = 5;
    let mut srcs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = args.next().and_then(|v| v.parse().ok()).unwrap();
        } else {
            srcs.push(tlskit_store::Source::from_arg(&a));
        }
    }
    let (store, report) = tlskit_store::load(&srcs).unwrap();
    let r = tlskit_bench_harness::store::run(&srcs, &store, &report, runs).unwrap();
    println!("{}", serde_json::to_string(&r).unwrap());
}
