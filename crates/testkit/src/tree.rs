//! A directory tree as comparable text: one line per entry (relative path, kind, mode,
//! SHA-256 of a file's bytes, a link's target), sorted. Two snapshots are equal exactly
//! when the trees are byte-identical (timestamps aside); a difference reads as a diff.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sha2::Digest;

/// Every entry under `root` (not `root` itself), sorted by path.
pub fn snapshot(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let rd = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in rd {
        let p = e.expect("dir entry").path();
        let rel = p
            .strip_prefix(root)
            .expect("under root")
            .display()
            .to_string();
        let md = std::fs::symlink_metadata(&p).expect("metadata");
        let mode = md.permissions().mode() & 0o7777;
        if md.file_type().is_symlink() {
            let t = std::fs::read_link(&p).expect("readlink");
            out.push(format!("{rel} link -> {}", t.display()));
        } else if md.is_dir() {
            out.push(format!("{rel} dir {mode:o}"));
            walk(root, &p, out);
        } else {
            let bytes = std::fs::read(&p).expect("read");
            let h = sha2::Sha256::digest(&bytes);
            let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
            out.push(format!("{rel} file {mode:o} {hex}"));
        }
    }
}

/// The lines of `after` that differ from `before` (`-` gone, `+` new), for messages.
pub fn diff(before: &[String], after: &[String]) -> String {
    let mut d = Vec::new();
    for l in before {
        if !after.contains(l) {
            d.push(format!("- {l}"));
        }
    }
    for l in after {
        if !before.contains(l) {
            d.push(format!("+ {l}"));
        }
    }
    d.join("\n")
}
