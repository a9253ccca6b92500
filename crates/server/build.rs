//! Records the rustls version this build links, for the `tlskit_build_info` metric: read
//! from the Cargo.lock of the workspace being built (above this package, or above the
//! build directory when tlskit-server is a dependency of another workspace). Without one
//! (a build from a registry without a lock file) the label says `unknown`.

use std::path::Path;

/// The version of package `name` whose version starts with `major` in a Cargo.lock.
fn locked_version(lock: &str, name: &str, major: &str) -> Option<String> {
    lock.split("[[package]]").find_map(|block| {
        let mut n = None;
        let mut v = None;
        for line in block.lines() {
            if let Some(x) = line.strip_prefix("name = ") {
                n = Some(x.trim().trim_matches('"'));
            } else if let Some(x) = line.strip_prefix("version = ") {
                v = Some(x.trim().trim_matches('"'));
            }
        }
        match (n, v) {
            (Some(n), Some(v)) if n == name && v.starts_with(major) => Some(v.to_string()),
            _ => None,
        }
    })
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut version = None;
    for var in ["CARGO_MANIFEST_DIR", "OUT_DIR"] {
        let Some(start) = std::env::var_os(var) else {
            continue;
        };
        let found = Path::new(&start)
            .ancestors()
            .map(|d| d.join("Cargo.lock"))
            .find(|p| p.is_file());
        if let Some(lock) = found {
            println!("cargo:rerun-if-changed={}", lock.display());
            if let Ok(text) = std::fs::read_to_string(&lock) {
                version = locked_version(&text, "rustls", "0.23.");
            }
            if version.is_some() {
                break;
            }
        }
    }
    let version = version.unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TLSKIT_RUSTLS_VERSION={version}");
}
