//! `tlskit trust` end to end on a root tree with a Fedora-like layout, where no external
//! tool runs (tlskit writes the extracted bundle itself): install, list, uninstall back to
//! a byte-identical tree, refusals, warnings, dry runs. The real tools (update-ca-certificates,
//! certutil, keytool, curl, Chromium) are in the slow tier (tests/net/trust_interop.rs).

use std::path::Path;

use crate::run::{assert_code, ok, text, tlskit_in};
use tlskit_testkit::tree::{diff, snapshot};

/// A directory with a constrained CA (`lab/`), an unconstrained one (`open/`), a leaf
/// issued by the first (`leaf.pem`) and a root tree `image/` holding a Fedora store.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for args in [
        &[
            "ca",
            "init",
            "lab",
            "--subject",
            "CN=Lab CA",
            "--permit-dns",
            "lab.test",
        ][..],
        &["ca", "init", "open", "--subject", "CN=Open CA"],
        &["key", "new", "-o", "leaf.key"],
        &[
            "csr",
            "new",
            "--key",
            "leaf.key",
            "--subject",
            "CN=www.lab.test",
            "-o",
            "leaf.csr",
        ],
        &["ca", "issue", "lab", "--csr", "leaf.csr", "-o", "leaf.pem"],
    ] {
        ok(d, args);
    }
    let anchors = d.join("image/etc/pki/ca-trust/source/anchors");
    std::fs::create_dir_all(&anchors).expect("mkdir");
    std::fs::write(
        anchors.join("site.pem"),
        std::fs::read(d.join("open/ca.pem")).expect("test input"),
    )
    .expect("write");
    dir
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn trust_install_list_uninstall_on_a_root_tree() {
    let f = fixture();
    let d = f.path();
    let image = d.join("image");
    let before = snapshot(&image);
    let out = ok(
        d,
        &[
            "trust",
            "install",
            "lab/ca.pem",
            "--root",
            "image",
            "--target",
            "system",
        ],
    );
    assert!(
        out.contains("name constraints: permitted dns:lab.test"),
        "{out}"
    );
    let bundle = image.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem");
    let ca = std::fs::read_to_string(d.join("lab/ca.pem")).expect("test input");
    assert!(std::fs::read_to_string(&bundle)
        .expect("test input")
        .contains(ca.trim()));
    let anchors: Vec<String> = std::fs::read_dir(image.join("etc/pki/ca-trust/source/anchors"))
        .expect("test input")
        .map(|e| {
            e.expect("test input")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        anchors
            .iter()
            .any(|n| n.starts_with("tlskit-") && n.ends_with(".pem")),
        "{anchors:?}"
    );

    // list, from another directory, with an absolute root.
    let listed = ok(
        Path::new("/"),
        &[
            "trust",
            "list",
            "--root",
            &image.display().to_string(),
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&listed).expect("test input");
    assert_eq!(v["installed"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["installed"][0]["subject"], "CN=Lab CA");
    assert_eq!(v["installed"][0]["in_bundle"], true);
    assert_eq!(v["journals"][0]["complete"], true);

    // Uninstall from another directory: the journal holds absolute paths.
    let out = ok(
        Path::new("/"),
        &[
            "trust",
            "uninstall",
            &d.join("lab/ca.pem").display().to_string(),
            "--root",
            &image.display().to_string(),
        ],
    );
    assert!(out.contains("uninstalled: CN=Lab CA"), "{out}");
    let after = snapshot(&image);
    assert_eq!(before, after, "{}", diff(&before, &after));
    // Nothing left to undo: a negative answer.
    let o = tlskit_in(d, &["trust", "uninstall", "lab/ca.pem", "--root", "image"]);
    assert_code(&o, 1);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("was not installed by tlskit"),
        "{}",
        text(&o)
    );
}

#[test]
fn trust_install_refuses_a_certificate_that_is_not_a_ca() {
    let f = fixture();
    let d = f.path();
    let before = snapshot(&d.join("image"));
    let o = tlskit_in(d, &["trust", "install", "leaf.pem", "--root", "image"]);
    assert_code(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a CA certificate (its basicConstraints say cA=false); refused"),
        "{err}"
    );
    assert_eq!(before, snapshot(&d.join("image")));
}

#[test]
fn trust_install_warns_about_a_ca_without_name_constraints() {
    let f = fixture();
    let d = f.path();
    let o = tlskit_in(
        d,
        &[
            "trust",
            "install",
            "open/ca.pem",
            "--root",
            "image",
            "--dry-run",
        ],
    );
    assert_code(&o, 0);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: this CA has no name constraints") && err.contains("--permit-dns"),
        "{}",
        text(&o)
    );
    // The constrained CA installs without it.
    let o = tlskit_in(
        d,
        &[
            "trust",
            "install",
            "lab/ca.pem",
            "--root",
            "image",
            "--dry-run",
        ],
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("warning"),
        "{}",
        text(&o)
    );
}

#[test]
fn trust_install_dry_run_changes_nothing() {
    let f = fixture();
    let d = f.path();
    let before = snapshot(d);
    let o = tlskit_in(
        d,
        &[
            "trust",
            "install",
            "lab/ca.pem",
            "--root",
            "image",
            "--dry-run",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("test input");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["changed"], false);
    let actions = v["targets"][0]["actions"].to_string();
    assert!(actions.contains("append the CA to the bundle"), "{actions}");
    assert_eq!(before, snapshot(d), "{}", stdout(&o));
}

#[test]
fn trust_install_without_any_store_is_an_error() {
    let f = fixture();
    let d = f.path();
    std::fs::create_dir(d.join("empty")).expect("test input");
    let o = tlskit_in(
        d,
        &[
            "trust",
            "install",
            "lab/ca.pem",
            "--root",
            "empty",
            "--target",
            "system",
        ],
    );
    assert_code(&o, 2);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no Debian-like"),
        "{}",
        text(&o)
    );
}
