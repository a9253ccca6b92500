//! `snapshot-repair IN OUT`: write IN with its snapshot checksums repaired, the form in
//! which `snapshot` regression inputs are saved (the replay test cannot compute xxh3).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(input), Some(output)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: snapshot-repair IN OUT");
        std::process::exit(2);
    };
    let data = std::fs::read(input).unwrap_or_else(|e| panic!("{input}: {e}"));
    let fixed = tlskit_fuzz::repair_snapshot(&data, tlskit_fuzz::xxh3).unwrap_or(data);
    std::fs::write(output, fixed).unwrap_or_else(|e| panic!("{output}: {e}"));
}
