//! The layer check (tlskit_testkit::layers) on every library crate of the workspace, and on
//! small crafted crates that show it can fail.

use std::path::{Path, PathBuf};

use tlskit_testkit::layers::{check_crate, library_crates, Finding};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn all_findings() -> Vec<Finding> {
    let crates = library_crates(&workspace());
    assert!(
        crates.len() >= 14,
        "too few library crates found: {crates:?}"
    );
    crates.iter().flat_map(|c| check_crate(c)).collect()
}

/// No library crate has an import loop or an upward import.
#[test]
fn library_crates_are_layered() {
    let found: Vec<String> = all_findings().iter().map(|f| f.to_string()).collect();
    assert!(
        found.is_empty(),
        "a module refers to one declared after it in its parent (lib.rs or mod.rs: the \
         order of the `mod` lines is the layering, bottom first), or modules refer to each \
         other in a loop:\n{}",
        found.join("\n")
    );
}

/// A crate in a temporary directory: (path under src/, text) pairs.
fn fixture(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("demo");
    for (path, text) in files {
        let p = root.join("src").join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
    dir
}

fn check(dir: &tempfile::TempDir) -> Vec<String> {
    check_crate(&dir.path().join("demo"))
        .iter()
        .map(Finding::key)
        .collect()
}

#[test]
fn a_clean_tree_passes() {
    let d = fixture(&[
        (
            "lib.rs",
            "mod error;\npub mod parse;\npub mod net;\npub use error::Error;\n\
             pub fn top() { parse::go(); net::go(); }\n",
        ),
        ("error.rs", "pub struct Error;\n"),
        (
            "parse.rs",
            "use crate::error::Error;\nuse crate::Error as E2;\n\
             // crate::net is named in a comment only\n\
             pub fn go() { let _ = \"crate::net::go\"; }\n\
             #[cfg(test)]\nmod tests { use crate::net; }\n",
        ),
        (
            "net/mod.rs",
            "mod sock;\nmod conn;\nuse crate::{error::Error, parse};\npub fn go() {}\n",
        ),
        ("net/sock.rs", "pub fn s() {}\n"),
        (
            "net/conn.rs",
            "use super::sock;\nuse crate::net::sock::s;\n",
        ),
    ]);
    assert_eq!(check(&d), Vec::<String>::new());
}

#[test]
fn an_upward_import_fails() {
    let d = fixture(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() {\n    crate::b::g();\n}\n"),
        ("b.rs", "pub fn g() {}\nmod inner {\n    use super::g;\n}\n"),
    ]);
    let found = check_crate(&d.path().join("demo"));
    assert_eq!(
        found.iter().map(Finding::key).collect::<Vec<_>>(),
        ["demo: a -> b"]
    );
    // The message names the file, the line and the import.
    let text = found[0].to_string();
    assert!(text.contains("demo/src/a.rs:2: crate::b::g"), "{text}");
}

#[test]
fn an_upward_import_in_a_use_group_and_through_a_reexport_fails() {
    let d = fixture(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Thing;\n"),
        ("a.rs", "use crate::{\n    b::G,\n};\n"),
        ("b.rs", "use crate::Thing;\npub struct G;\n"),
        ("c.rs", "pub struct Thing;\n"),
    ]);
    assert_eq!(check(&d), ["demo: a -> b", "demo: b -> c"]);
}

#[test]
fn an_item_of_lib_rs_is_the_top() {
    let d = fixture(&[
        ("lib.rs", "mod a;\npub fn helper() {}\n"),
        ("a.rs", "use crate::helper;\n"),
    ]);
    assert_eq!(check(&d), ["demo: a -> lib.rs"]);
}

#[test]
fn a_loop_fails() {
    let d = fixture(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::c::C;\npub struct A;\n"),
        ("b.rs", "use crate::a::A;\npub struct B;\n"),
        ("c.rs", "use crate::b::B;\npub struct C;\n"),
    ]);
    let keys = check(&d);
    assert!(keys.contains(&"demo: loop a, b, c".to_string()), "{keys:?}");
    assert!(keys.contains(&"demo: a -> c".to_string()), "{keys:?}");
}

#[test]
fn submodules_are_layered_within_their_parent() {
    let d = fixture(&[
        ("lib.rs", "pub mod acme;\n"),
        ("acme/mod.rs", "mod storage;\nmod client;\n"),
        ("acme/storage.rs", "use super::client::Client;\n"),
        (
            "acme/client.rs",
            "pub struct Client;\nuse super::storage;\n",
        ),
    ]);
    let keys = check(&d);
    assert_eq!(
        keys,
        [
            "demo: acme::storage -> acme::client",
            "demo: loop acme::client, acme::storage"
        ]
    );
}
