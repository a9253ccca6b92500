//! tlskit-bench: the peer benchmark's Rust programs live in `src/bin/` (`bench-gen` writes the
//! data, `peer-rustls` times rustls); `bench/run.sh` builds and runs everything.

fn main() {
    eprintln!("tlskit-bench: run `bench/run.sh [--quick]` (see bench/README.md)");
}
