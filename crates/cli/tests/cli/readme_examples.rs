//! README.md's examples as a reader meets them. Blocks fenced as ```` ```sh offline ````
//! run verbatim, in order, in ONE empty directory (`bash -euo pipefail`, the built
//! `tlskit` first on PATH, no network): a broken command, or two blocks writing the same
//! file name (tlskit refuses to overwrite without `--force`), fails the test. The other
//! ```` ```sh ```` blocks (Let's Encrypt, port 443, systemctl, installs; the Pebble block,
//! which the slow tier runs in `tests/net/outbound.rs`) are checked for syntax (`bash -n`).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::BIN;

/// A fenced block of README.md: its info string, the line its first command is on, its text.
struct Block {
    info: String,
    line: usize,
    text: String,
}

impl Block {
    fn first_line(&self) -> &str {
        self.text.lines().next().unwrap_or("")
    }
}

/// Every ```` ``` ```` fenced block of `md`, in order.
fn fenced_blocks(md: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in md.lines().enumerate() {
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some(Block {
                        info: info.trim().to_string(),
                        line: i + 2,
                        text: String::new(),
                    });
                }
            }
            Some(mut b) => {
                if line.trim_end() == "```" {
                    blocks.push(b);
                } else {
                    b.text.push_str(line);
                    b.text.push('\n');
                    open = Some(b);
                }
            }
        }
    }
    assert!(open.is_none(), "README.md ends inside a fenced block");
    blocks
}

fn readme_blocks() -> Vec<Block> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let md = std::fs::read_to_string(&path).expect("README.md");
    let blocks = fenced_blocks(&md);
    // Shell blocks are either runnable offline or syntax-checked: no third spelling that
    // neither check would see.
    for b in &blocks {
        let lang = b.info.split_whitespace().next().unwrap_or("");
        if ["sh", "bash", "shell", "console"].contains(&lang) {
            assert!(
                b.info == "sh" || b.info == "sh offline",
                "README.md line {}: shell block fenced as ```{}: use ```sh or ```sh offline",
                b.line - 1,
                b.info
            );
        }
    }
    blocks
}

#[test]
fn readme_offline_examples_run_verbatim_in_one_directory() {
    let blocks = readme_blocks();
    let offline: Vec<&Block> = blocks.iter().filter(|b| b.info == "sh offline").collect();
    // The short way (ca, key, csr, issue, verify, lint) and self-sign/p12/store at least.
    assert!(
        offline.len() >= 2,
        "README.md has {} ```sh offline blocks; expected the certificate examples",
        offline.len()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let bin_dir = Path::new(BIN).parent().expect("bin dir");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    for b in offline {
        // `timeout`: a hanging example fails the test instead of the suite.
        let out = Command::new("timeout")
            .args(["60", "bash", "-euo", "pipefail", "-c", &b.text])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env_remove("TLSKIT_P12_PASSWORD")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "README.md block at line {} (`{}`) failed: {}\nstdout:\n{}\nstderr:\n{}",
            b.line,
            b.first_line(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn readme_other_shell_examples_parse() {
    let blocks = readme_blocks();
    let others: Vec<&Block> = blocks.iter().filter(|b| b.info == "sh").collect();
    // Install, tests, service, serve on 443, Pebble: a check over nothing proves nothing.
    assert!(
        others.len() >= 4,
        "README.md has {} plain ```sh blocks",
        others.len()
    );
    for b in others {
        let out = Command::new("bash")
            .args(["-n", "-c", &b.text])
            .stdin(Stdio::null())
            .output()
            .expect("run bash -n");
        assert!(
            out.status.success(),
            "README.md block at line {} (`{}`) is not valid shell: {}",
            b.line,
            b.first_line(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The fence parser itself: info strings, order, and text without the fences.
#[test]
fn readme_fence_parser_reads_info_and_text() {
    let md = "a\n```sh offline\necho 1\n```\n\n```sh\necho 2\necho 3\n```\n```toml\nx = 1\n```\n";
    let b = fenced_blocks(md);
    assert_eq!(b.len(), 3);
    assert_eq!((b[0].info.as_str(), b[0].line), ("sh offline", 3));
    assert_eq!(b[0].text, "echo 1\n");
    assert_eq!(b[1].info, "sh");
    assert_eq!(b[1].text, "echo 2\necho 3\n");
    assert_eq!(b[1].first_line(), "echo 2");
    assert_eq!(b[2].info, "toml");
}
