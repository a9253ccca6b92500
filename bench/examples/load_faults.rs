//! Page faults and time of repeated loads of one source in one process (the benchmark's
//! pattern): `cargo run --release -p tlskit-bench --example load_faults -- bundle.pem`.
#![allow(clippy::unwrap_used)]
use std::time::Instant;
fn minflt() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(7).unwrap().parse().unwrap()
}
/// utime + stime of the process (all threads), in clock ticks (1/100 s).
fn cpu_ticks() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let src = [tlskit_store::Source::File(path.into())];
    // KEEP=1: keep a first store alive during the timed loads (as `tlskit bench store` does).
    let _kept = std::env::var_os("KEEP").map(|_| tlskit_store::load(&src).unwrap());
    let (mut ts, mut fs) = (Vec::new(), Vec::new());
    let mut c0 = 0;
    let mut n = 0;
    for i in 0..runs + 1 {
        if i == 1 {
            c0 = cpu_ticks();
        }
        let f0 = minflt();
        let t = Instant::now();
        let (store, _) = tlskit_store::load(&src).unwrap();
        let el = t.elapsed().as_secs_f64() * 1e3;
        let f1 = minflt();
        n = store.len();
        drop(store);
        if i > 0 {
            ts.push(el);
            fs.push(f1 - f0);
        }
    }
    let cpu_ms = (cpu_ticks() - c0) as f64 * 10.0 / runs as f64;
    let wall: f64 = ts.iter().sum::<f64>() / runs as f64;
    ts.sort_by(f64::total_cmp);
    fs.sort();
    println!(
        "median {:.2} ms (min {:.2}), median {} faults per load; CPU {:.1} ms/load = {:.3} us/anchor, {:.2} cores busy",
        ts[ts.len() / 2],
        ts[0],
        fs[fs.len() / 2],
        cpu_ms,
        cpu_ms * 1e3 / n as f64,
        cpu_ms / wall
    );
}
