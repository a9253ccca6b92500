//! The house's promises about dependencies (issue 24): a program that embeds the client
//! compiles neither redis, hyper nor instant-acme, and the terminator gets them only
//! through its features `acme` and `fleet`.

use std::path::Path;
use std::process::Command;

/// The names of the packages `cargo tree` lists for `args` (normal dependencies only).
fn tree(args: &[&str]) -> Vec<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&workspace)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

const HEAVY: [&str; 4] = ["redis", "hyper", "hyper-util", "instant-acme"];

fn heavy_in(names: &[String]) -> Vec<&'static str> {
    HEAVY
        .iter()
        .copied()
        .filter(|h| names.iter().any(|n| n == h))
        .collect()
}

#[test]
fn the_client_compiles_no_redis_hyper_or_acme() {
    let names = tree(&["-p", "tlskit-client"]);
    assert!(names.iter().any(|n| n == "rustls"), "{names:?}");
    assert_eq!(heavy_in(&names), Vec::<&str>::new());
}

#[test]
fn the_terminator_gets_acme_and_redis_only_through_its_features() {
    let bare = tree(&["-p", "tlskit-server", "--no-default-features"]);
    assert!(bare.iter().any(|n| n == "tokio-rustls"), "{bare:?}");
    assert_eq!(heavy_in(&bare), Vec::<&str>::new());
    let full = tree(&["-p", "tlskit-server", "--features", "acme,fleet"]);
    assert_eq!(heavy_in(&full), HEAVY.to_vec());
}
