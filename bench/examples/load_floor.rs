//! Store loading against its floor and rustls, in one run (issue 29): for one PEM bundle,
//! `RUNS` rounds (env, default 11), each timing in a rotating order
//!
//! * `tlskit`: `tlskit_store::load` of the file;
//! * `rustls`: `RootCertStore::add` of every certificate, PEM decoding included (as
//!   `rustls_peer`);
//! * `floor1`: the least work any loader must do, on one thread: decode each certificate's
//!   base64 body (its lines gathered, then base64-simd, the decoder tlskit uses) and hash
//!   the DER with SHA-256 (sha2, as tlskit). The file is read, and the bodies found, once
//!   per process before any timing: the floor holds no I/O, no allocation per load, no
//!   parsing, no index;
//! * `floor2`: the same on two threads (the file's bodies in two halves), as tlskit's bulk
//!   loader uses both cores;
//! * `floor2io`: `floor2` plus the costs the floor leaves out but a loader that reads the
//!   file (a store must not map it: truncation under a mapping kills the process) and
//!   keeps the DER cannot avoid: `pread` of the file in windows on both threads, and the
//!   DER decoded into fresh memory. Still no parsing, no index, no checks.
//!   `FLOOR_OUT=reuse` (env) decodes into the same memory every load instead, so the
//!   difference is the price of fresh memory;
//!
//! and prints the medians and the ratios rustls / tlskit and tlskit / floor. `JOB=NAME`
//! (env) runs only that one, `RUNS` times (for instruction counts under callgrind), and
//! prints the first call's time (a one-shot command's load, in a fresh process) and the
//! median of the others.
//! `cargo run --release -p tlskit-bench --example load_floor -- BUNDLE.pem`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use sha2::Digest;

/// The base64 bodies of the CERTIFICATE blocks, line breaks included.
fn bodies(text: &[u8]) -> Vec<&[u8]> {
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(b) = memchr::memmem::find(&text[at..], BEGIN) {
        let start = at + b + BEGIN.len();
        let Some(e) = memchr::memmem::find(&text[start..], END) else {
            break;
        };
        out.push(&text[start..start + e]);
        at = start + e + END.len();
    }
    out
}

/// The lines of a body without their breaks, into `clean` (one copy per line, as a
/// decoder must gather them before one SIMD decode of the whole body).
fn gather(body: &[u8], clean: &mut Vec<u8>) {
    clean.clear();
    let mut from = 0;
    for nl in memchr::memchr_iter(b'\n', body).chain([body.len()]) {
        let line = &body[from..nl];
        clean.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        from = nl + 1;
    }
}

/// Decode and hash each body; returns a checksum of the hashes (so nothing is optimised
/// away) and the count.
fn decode_hash(bodies: &[&[u8]]) -> (u8, usize) {
    let mut clean = Vec::with_capacity(4096);
    let mut der = Vec::with_capacity(4096);
    let mut x = 0u8;
    for b in bodies {
        gather(b, &mut clean);
        der.clear();
        der.resize(clean.len() / 4 * 3, 0);
        let n = base64_simd::STANDARD
            .decode(&clean, base64_simd::Out::from_slice(&mut der))
            .unwrap()
            .len();
        der.truncate(n);
        x ^= sha2::Sha256::digest(&der)[0];
    }
    (x, bodies.len())
}

fn floor(b: &[&[u8]], threads: usize) -> usize {
    if threads == 1 {
        return std::hint::black_box(decode_hash(b)).1;
    }
    let (l, r) = b.split_at(b.len() / 2);
    std::thread::scope(|s| {
        let t = s.spawn(|| decode_hash(r));
        let a = decode_hash(l);
        std::hint::black_box(a.1 + t.join().unwrap().1)
    })
}

/// Read windows of the `floor2io` job, kept between loads (as tlskit keeps its scratch).
static WINDOWS: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// One thread's part of `floor2io`: the blocks of `[from, to)` of the file, read with
/// `pread` in windows of 512 KiB, decoded into `out` one after the other and hashed.
fn floor_io_part(f: &std::fs::File, from: usize, to: usize, out: &mut [u8]) -> (u8, usize) {
    use std::os::unix::fs::FileExt;
    const W: usize = 512 << 10;
    const BEGIN: &[u8] = b"-----BEGIN CERTIFICATE-----";
    const END: &[u8] = b"-----END CERTIFICATE-----";
    let mut buf = WINDOWS.lock().unwrap().pop().unwrap_or_default();
    let mut clean = Vec::with_capacity(4096);
    let (mut at, mut filled, mut o, mut count, mut x) = (from, 0usize, 0usize, 0usize, 0u8);
    loop {
        if buf.len() < filled + W {
            buf.resize(filled + W, 0);
        }
        let want = W.min(to - at - filled);
        let mut got = 0;
        while got < want {
            match f.read_at(
                &mut buf[filled + got..filled + want],
                (at + filled + got) as u64,
            ) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => panic!("{e}"),
            }
        }
        filled += got;
        let eof = at + filled >= to || got == 0;
        let mut p = 0;
        loop {
            let Some(b) = memchr::memmem::find(&buf[p..filled], BEGIN) else {
                p = filled.saturating_sub(BEGIN.len()).max(p);
                break;
            };
            let bs = p + b + BEGIN.len();
            let Some(e) = memchr::memmem::find(&buf[bs..filled], END) else {
                p += b;
                break;
            };
            gather(&buf[bs..bs + e], &mut clean);
            let n = base64_simd::STANDARD
                .decode(&clean, base64_simd::Out::from_slice(&mut out[o..]))
                .unwrap()
                .len();
            x ^= sha2::Sha256::digest(&out[o..o + n])[0];
            o += n;
            count += 1;
            p = bs + e + END.len();
        }
        if eof {
            break;
        }
        buf.copy_within(p..filled, 0);
        at += p;
        filled -= p;
    }
    WINDOWS.lock().unwrap().push(buf);
    (x, count)
}

/// `floor2io`: `floor2` plus what any loader that reads the file (rather than mapping it)
/// and keeps the DER must also pay: the file read with `pread` on both threads (each its
/// half, cut at a BEGIN line), and the DER written into fresh memory (one anonymous
/// mapping of 3/4 of the text, advised for huge pages, as tlskit's arena). No parsing,
/// no index, no checks.
fn floor_io(path: &str, _: &[&[u8]]) -> usize {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let mut probe = vec![0u8; 64 << 10];
    let n = f.read_at(&mut probe, (len / 2) as u64).unwrap();
    let cut = memchr::memmem::find(&probe[..n], b"-----BEGIN ").map_or(len, |i| len / 2 + i);
    static KEPT: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
    let mut map;
    let mut kept;
    let out: &mut [u8] = if std::env::var("FLOOR_OUT").as_deref() == Ok("reuse") {
        // The same memory every load: what the fresh memory costs, by difference.
        kept = KEPT.lock().unwrap();
        kept.resize(len * 3 / 4 + 64, 0);
        &mut kept
    } else {
        map = memmap2::MmapOptions::new()
            .len(len * 3 / 4 + 64)
            .map_anon()
            .unwrap();
        let _ = map.advise(memmap2::Advice::HugePage);
        &mut map
    };
    let (lo, hi) = out.split_at_mut(cut * 3 / 4);
    let f = &f;
    let (a, b) = std::thread::scope(|s| {
        let t = s.spawn(move || floor_io_part(f, cut, len, hi));
        let a = floor_io_part(f, 0, cut, lo);
        (a, t.join().unwrap())
    });
    std::hint::black_box(a.0 ^ b.0);
    a.1 + b.1
}

fn rustls(path: &str, _: &[&[u8]]) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let mut store = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&bytes) {
        store.add(c.unwrap()).unwrap();
    }
    store.len()
}

fn tlskit(path: &str, _: &[&[u8]]) -> usize {
    let (s, _) = tlskit_store::load(&[tlskit_store::Source::File(path.into())]).unwrap();
    s.len()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: load_floor BUNDLE.pem");
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let text = std::fs::read(&path).unwrap();
    let b = bodies(&text);
    type Job = fn(&str, &[&[u8]]) -> usize;
    let jobs: [(&str, Job); 5] = [
        ("tlskit", tlskit),
        ("rustls", rustls),
        ("floor1", |_, b| floor(b, 1)),
        ("floor2", |_, b| floor(b, 2)),
        ("floor2io", floor_io),
    ];
    if let Ok(only) = std::env::var("JOB") {
        let (_, f) = jobs
            .iter()
            .find(|(n, _)| *n == only)
            .expect("JOB: tlskit, rustls, floor1, floor2 or floor2io");
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            std::hint::black_box(f(&path, &b));
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        // The first call is a one-shot command's load (fresh memory, first-time setup).
        if let Some((first, rest)) = times.split_first() {
            let rest = if rest.is_empty() {
                "-".to_string()
            } else {
                format!("{:.3} ms", median(rest.to_vec()))
            };
            println!("{only:7} first {first:9.3} ms  median of the rest {rest}");
        }
        return;
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    let mut counts = vec![0usize; jobs.len()];
    for round in 0..runs {
        for k in 0..jobs.len() {
            let j = (round + k) % jobs.len();
            let t = Instant::now();
            counts[j] = jobs[j].1(&path, &b);
            times[j].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let m: Vec<f64> = times.into_iter().map(median).collect();
    for (k, (name, _)) in jobs.iter().enumerate() {
        println!("{name:7} {:9.3} ms  ({} certificates)", m[k], counts[k]);
    }
    println!(
        "rustls / tlskit {:.2}   tlskit / floor1 {:.2}   tlskit / floor2 {:.2}   tlskit / floor2io {:.2}   ({runs} rounds, rotating order)",
        m[1] / m[0],
        m[0] / m[2],
        m[0] / m[3],
        m[0] / m[4]
    );
}
