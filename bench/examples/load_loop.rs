//! Profile helper: load the given sources `RUNS` times (env, default 20) and print the
//! median load time. `cargo run --release -p tlskit-bench --example load_loop -- FILE...`
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
    let mut cpu = Vec::new();
    let mut n = 0;
    for _ in 0..runs {
        let c0 = thread_cpu_ns();
        let s = std::time::Instant::now();
        let (store, _) = tlskit_store::load(&srcs).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1e3);
        cpu.push((thread_cpu_ns() - c0) as f64 / 1e6);
        n = store.len();
        drop(store);
    }
    cpu.sort_by(f64::total_cmp);
    println!(
        "CPU time of this thread (excludes waiting for the CPU on a busy machine; single-threaded loads only): median {:.3} ms = {:.3} us/anchor",
        cpu[runs / 2],
        cpu[runs / 2] * 1e3 / n.max(1) as f64
    );
    t.sort_by(f64::total_cmp);
    println!(
        "{n} anchors: median {:.3} ms = {:.3} us/anchor (min {:.3} ms)",
        t[runs / 2],
        t[runs / 2] * 1e3 / n as f64,
        t[0]
    );
}

/// CPU time consumed by this thread so far, in ns (Linux /proc/thread-self/schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}
