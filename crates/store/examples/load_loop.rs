//! Profile helper: load the given sources `RUNS` times (env, default 20) and print the
//! median load time. `cargo run --release --example load_loop -- FILE...`
#![allow(clippy::unwrap_used)]

fn main() {
    let srcs: Vec<_> = std::env::args()
        .skip(1)
        .map(|a| tlskit_store::Source::from_arg(&a))
        .collect();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut t = Vec::new();
    let mut n = 0;
    for _ in 0..runs {
        let s = std::time::Instant::now();
        let (store, _) = tlskit_store::load(&srcs).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1e3);
        n = store.len();
    }
    t.sort_by(f64::total_cmp);
    println!(
        "{n} anchors: median {:.3} ms = {:.3} us/anchor (min {:.3} ms)",
        t[runs / 2],
        t[runs / 2] * 1e3 / n as f64,
        t[0]
    );
}
