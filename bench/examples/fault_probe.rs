//! What faulting in a fresh 45 MB buffer costs, in 4 KiB pages (a `Vec`, or MAP_POPULATE)
//! and in transparent huge pages (the numbers quoted in src/arena.rs):
//! `cargo run --release -p tlskit-bench --example fault_probe -- vec|populate|huge|hugepop`
#![allow(clippy::unwrap_used)]
use std::time::Instant;
fn minflt() -> u64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(7).unwrap().parse().unwrap()
}
fn fill(buf: &mut [u8], src: &[u8]) {
    let mut o = 0;
    while o + src.len() <= buf.len() {
        buf[o..o + src.len()].copy_from_slice(src);
        o += src.len();
    }
}
fn main() {
    let size: usize = 45 << 20;
    let src = vec![7u8; 440];
    let mode = std::env::args().nth(1).unwrap();
    for _ in 0..7 {
        let f0 = minflt();
        let t = Instant::now();
        match mode.as_str() {
            "vec" => {
                let mut v: Vec<u8> = Vec::with_capacity(size);
                let mut o = 0;
                while o + 440 <= size {
                    v.extend_from_slice(&src);
                    o += 440;
                }
                std::hint::black_box(&v);
            }
            "populate" => {
                let mut m = memmap2::MmapOptions::new()
                    .len(size)
                    .populate()
                    .map_anon()
                    .unwrap();
                fill(&mut m, &src);
                std::hint::black_box(&m);
            }
            "huge" => {
                let mut m = memmap2::MmapOptions::new().len(size).map_anon().unwrap();
                m.advise(memmap2::Advice::HugePage).unwrap();
                fill(&mut m, &src);
                std::hint::black_box(&m);
            }
            "hugepop" => {
                let mut m = memmap2::MmapOptions::new().len(size).map_anon().unwrap();
                m.advise(memmap2::Advice::HugePage).unwrap();
                m.advise(memmap2::Advice::PopulateWrite).unwrap();
                fill(&mut m, &src);
                std::hint::black_box(&m);
            }
            _ => panic!(),
        }
        let el = t.elapsed().as_secs_f64() * 1e3;
        println!("{mode}: {el:.2} ms, {} faults", minflt() - f0);
    }
}
