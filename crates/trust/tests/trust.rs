//! tlskit-trust's fast tier: CA detection and refusals, warnings, the journal and its
//! undo (also after a failure and after a process killed half-way), dry runs. External
//! tools are replaced by a fake runner; every tree is a temporary root tree.

#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose,
    NameConstraints,
};
use tlskit_testkit::tree::{diff, snapshot};
use tlskit_trust::system::{Layout, SystemStore};
use tlskit_trust::{
    install_into, list_in, uninstall, CaCert, Cmd, CmdOutput, Journal, Options, Runner, Target,
    TrustError, Warning,
};

fn cert_pem(params: CertificateParams) -> String {
    let key = KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p
}

fn ca(params: CertificateParams) -> CaCert {
    CaCert::from_bytes(cert_pem(params).as_bytes(), Path::new("ca.pem")).unwrap()
}

fn constrained_ca() -> CaCert {
    let mut p = ca_params("Constrained Test CA");
    p.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("lab.test".into())],
        excluded_subtrees: vec![],
    });
    ca(p)
}

#[test]
fn a_ca_certificate_is_accepted_and_named_by_its_fingerprint() {
    let c = constrained_ca();
    assert_eq!(c.subject, "CN=Constrained Test CA");
    assert_eq!(c.sha256.len(), 64);
    assert_eq!(c.id(), &c.sha256[..16]);
    assert_eq!(c.permitted, vec!["dns:lab.test"]);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());
    // DER works as well as PEM, and names the same certificate.
    let again = CaCert::from_bytes(&c.der, Path::new("ca.der")).unwrap();
    assert_eq!(again.sha256, c.sha256);
    assert_eq!(again.pem, c.pem);
}

#[test]
fn a_ca_without_name_constraints_warns_and_names_permit_dns() {
    let c = ca(ca_params("Open Test CA"));
    assert_eq!(c.warnings(), vec![Warning::NoNameConstraints]);
    let m = Warning::NoNameConstraints.message();
    assert!(
        m.contains("tlskit ca init") && m.contains("--permit-dns"),
        "{m}"
    );
    // Excluded subtrees alone do not limit it.
    let mut p = ca_params("Excluding Test CA");
    p.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![],
        excluded_subtrees: vec![GeneralSubtree::DnsName("bank.test".into())],
    });
    assert_eq!(ca(p).warnings(), vec![Warning::NoNameConstraints]);
}

#[test]
fn a_certificate_that_is_not_a_ca_is_refused() {
    let not_ca = |is_ca: IsCa, ku: Vec<KeyUsagePurpose>| {
        let mut p = ca_params("leaf.test");
        p.is_ca = is_ca;
        p.key_usages = ku;
        let pem = cert_pem(p);
        CaCert::from_bytes(pem.as_bytes(), Path::new("x.pem")).unwrap_err()
    };
    for (e, why) in [
        (
            not_ca(IsCa::ExplicitNoCa, vec![]),
            "its basicConstraints say cA=false",
        ),
        (
            not_ca(IsCa::NoCa, vec![]),
            "it has no basicConstraints extension",
        ),
        (
            not_ca(
                IsCa::Ca(BasicConstraints::Unconstrained),
                vec![KeyUsagePurpose::DigitalSignature],
            ),
            "its keyUsage does not include keyCertSign",
        ),
    ] {
        match e {
            TrustError::NotACa { reason, .. } => assert_eq!(reason, why),
            other => panic!("{why}: got {other}"),
        }
    }
}

#[test]
fn files_with_no_or_several_certificates_are_refused() {
    let one = cert_pem(ca_params("A"));
    let two = format!("{one}{}", cert_pem(ca_params("B")));
    for (bytes, want) in [
        (two.as_str(), "2 certificates"),
        ("hello\n", "no CERTIFICATE block"),
    ] {
        let e = CaCert::from_bytes(bytes.as_bytes(), Path::new("x.pem")).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    }
}

/// Stands in for the external tools: records every command; update-ca-certificates
/// writes the bundle of the local anchors (as the script does, sorted); one program can
/// be made to fail.
#[derive(Default)]
struct Fake {
    ran: RefCell<Vec<String>>,
    fail: Option<&'static str>,
    /// Checked at each run of the tool: the journal says the step started.
    journal: Option<PathBuf>,
}

fn arg_after(cmd: &Cmd, flag: &str) -> PathBuf {
    let i = cmd.args.iter().position(|a| a == flag).unwrap();
    PathBuf::from(&cmd.args[i + 1])
}

impl Runner for Fake {
    fn run(&self, cmd: &Cmd) -> tlskit_trust::Result<CmdOutput> {
        self.ran.borrow_mut().push(cmd.display());
        let name = cmd
            .program
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // The failure is the install's run; the undo's (--fresh) succeeds.
        if self.fail == Some(name.as_str()) && !cmd.args.iter().any(|a| a == "--fresh") {
            return Ok(CmdOutput {
                success: false,
                code: Some(1),
                stderr: "E: simulated \x1b[31mfailure\n".into(),
                ..Default::default()
            });
        }
        if let Some(j) = &self.journal {
            let j = Journal::read(j).unwrap();
            let started: Vec<_> = j
                .entries
                .iter()
                .filter(|e| e.state == tlskit_trust::journal::State::Started)
                .collect();
            assert_eq!(started.len(), 1, "one step marked started: {j:?}");
        }
        if name == "update-ca-certificates" {
            let local = arg_after(cmd, "--localcertsdir");
            let etc = arg_after(cmd, "--etccertsdir");
            let mut files: Vec<PathBuf> = std::fs::read_dir(&local)
                .map(|rd| rd.map(|e| e.unwrap().path()).collect())
                .unwrap_or_default();
            files.retain(|p| p.extension().is_some_and(|x| x == "crt"));
            files.sort();
            let mut bundle = std::fs::read(etc.join("base.pem")).unwrap_or_default();
            for f in files {
                bundle.extend(std::fs::read(f).unwrap());
            }
            std::fs::write(etc.join("ca-certificates.crt"), bundle).unwrap();
        }
        Ok(CmdOutput {
            success: true,
            code: Some(0),
            ..Default::default()
        })
    }
}

/// A root tree with both layouts: a Debian store with one CA in its bundle, a Fedora
/// store with its extracted bundle, and what a real tree has besides.
fn root_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let base = cert_pem(ca_params("Base Root"));
    for d in [
        "usr/local/share/ca-certificates",
        "etc/ssl/certs",
        "etc/pki/ca-trust/source/anchors",
        "etc/pki/ca-trust/extracted/pem",
        "var/lib",
    ] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("etc/ssl/certs/base.pem"), &base).unwrap();
    std::fs::write(r.join("etc/ssl/certs/ca-certificates.crt"), &base).unwrap();
    std::fs::write(
        r.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"),
        &base,
    )
    .unwrap();
    dir
}

fn targets(root: &Path) -> Vec<Box<dyn Target>> {
    vec![
        Box::new(SystemStore {
            layout: Layout::Debian,
            root: Some(root.to_path_buf()),
            tool: Some(PathBuf::from("/fake/bin/update-ca-certificates")),
        }),
        Box::new(SystemStore {
            layout: Layout::Fedora,
            root: Some(root.to_path_buf()),
            tool: None,
        }),
    ]
}

fn opts(root: &Path) -> Options {
    Options {
        root: Some(root.to_path_buf()),
        ..Default::default()
    }
}

fn holds(path: &Path, ca: &CaCert) -> bool {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(&ca.pem)
}

#[test]
fn install_then_uninstall_leaves_the_tree_byte_identical() {
    let tree = root_tree();
    let r = tree.path();
    let before = snapshot(r);
    let ca = constrained_ca();
    let t = targets(r);
    let runner = Fake {
        journal: Some(r.join(format!("var/lib/tlskit/trust/{}.json", ca.id()))),
        ..Default::default()
    };
    let report = install_into(&t, &ca, &opts(r), &runner).unwrap();
    assert!(report.changed && !report.dry_run);
    assert!(report.warnings.is_empty());
    let deb = r.join(format!(
        "usr/local/share/ca-certificates/tlskit-{}.crt",
        ca.id()
    ));
    let fed = r.join(format!(
        "etc/pki/ca-trust/source/anchors/tlskit-{}.pem",
        ca.id()
    ));
    assert_eq!(std::fs::read_to_string(&deb).unwrap(), ca.pem);
    assert_eq!(std::fs::read_to_string(&fed).unwrap(), ca.pem);
    assert!(holds(&r.join("etc/ssl/certs/ca-certificates.crt"), &ca));
    assert!(holds(
        &r.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"),
        &ca
    ));
    // The Fedora bundle is written by tlskit, and the report says so.
    let fedora = &report.targets[1];
    assert!(fedora.notes[0].contains("update-ca-trust cannot work on a root tree"));
    // A complete journal, then list shows both anchors, each in its bundle.
    let j = Journal::read(report.journal.as_ref().unwrap()).unwrap();
    assert!(j.complete);
    let listed = list_in(&t, &opts(r), &runner).unwrap();
    assert_eq!(listed.installed.len(), 2, "{listed:?}");
    for l in &listed.installed {
        assert_eq!(l.sha256.as_deref(), Some(ca.sha256.as_str()));
        assert_eq!(l.in_bundle, Some(true), "{l:?}");
    }
    assert_eq!(listed.journals.len(), 1);
    // A second install is refused: the journal exists.
    assert!(matches!(
        install_into(&t, &ca, &opts(r), &runner),
        Err(TrustError::AlreadyInstalled { .. })
    ));

    let u = uninstall(&ca, &opts(r), &Fake::default()).unwrap();
    assert!(u.found);
    let after = snapshot(r);
    assert_eq!(before, after, "{}", diff(&before, &after));
    // Uninstalling again: nothing recorded, nothing changed.
    let again = uninstall(&ca, &opts(r), &Fake::default()).unwrap();
    assert!(!again.found);
}

#[test]
fn uninstall_reruns_the_tool_with_fresh_on_the_root_tree() {
    let tree = root_tree();
    let r = tree.path();
    let ca = constrained_ca();
    let runner = Fake::default();
    install_into(&targets(r), &ca, &opts(r), &runner).unwrap();
    let undo = Fake::default();
    uninstall(&ca, &opts(r), &undo).unwrap();
    let ran = runner.ran.borrow().join("\n");
    let unran = undo.ran.borrow().join("\n");
    let root = r.display().to_string();
    assert!(
        ran.contains(&format!(
            "--localcertsdir {root}/usr/local/share/ca-certificates"
        )) && ran.contains("--hooksdir /dev/null")
            && !ran.contains("--fresh"),
        "{ran}"
    );
    assert!(
        unran.contains("update-ca-certificates --fresh --certsconf"),
        "{unran}"
    );
}

#[test]
fn dry_run_changes_nothing_and_says_what_would() {
    let tree = root_tree();
    let r = tree.path();
    let before = snapshot(r);
    let ca = ca(ca_params("Open Test CA"));
    let mut o = opts(r);
    o.dry_run = true;
    let runner = Fake::default();
    let report = install_into(&targets(r), &ca, &o, &runner).unwrap();
    assert!(report.dry_run && !report.changed && report.journal.is_none());
    assert_eq!(report.warnings[0].code, "no-name-constraints");
    let actions = report.targets[0].actions.join("\n");
    assert!(
        actions.contains("write the CA to") && actions.contains("run "),
        "{actions}"
    );
    assert!(runner.ran.borrow().is_empty(), "{:?}", runner.ran.borrow());
    assert_eq!(before, snapshot(r));
    // Uninstall's dry run after a real install: says what it would undo, undoes nothing.
    install_into(&targets(r), &ca, &opts(r), &Fake::default()).unwrap();
    let installed = snapshot(r);
    let u = uninstall(&ca, &o, &Fake::default()).unwrap();
    assert!(u.found && u.dry_run);
    assert!(u
        .targets
        .iter()
        .any(|t| t.actions.iter().any(|a| a.starts_with("remove "))));
    assert_eq!(installed, snapshot(r));
}

#[test]
fn a_failed_step_undoes_the_steps_before_it() {
    let tree = root_tree();
    let r = tree.path();
    let before = snapshot(r);
    let ca = constrained_ca();
    let runner = Fake {
        fail: Some("update-ca-certificates"),
        ..Default::default()
    };
    let e = install_into(&targets(r), &ca, &opts(r), &runner).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, TrustError::Install { ref rollback, .. } if rollback.is_empty()),
        "{msg}"
    );
    // The tool's output is quoted escaped.
    assert!(msg.contains("simulated \\x1b[31mfailure"), "{msg}");
    let after = snapshot(r);
    assert_eq!(before, after, "{}", diff(&before, &after));
}

#[test]
fn uninstall_finishes_an_install_killed_half_way() {
    let tree = root_tree();
    let r = tree.path();
    let before = snapshot(r);
    let ca = constrained_ca();
    install_into(&targets(r), &ca, &opts(r), &Fake::default()).unwrap();
    // As a process killed while running the tool would leave it: the last Debian step
    // started, the Fedora steps never begun (their files put back by hand here).
    let jpath = r.join(format!("var/lib/tlskit/trust/{}.json", ca.id()));
    let mut j = Journal::read(&jpath).unwrap();
    j.complete = false;
    let run_at = j
        .entries
        .iter()
        .position(|e| matches!(e.step, tlskit_trust::step::Step::Run { .. }))
        .unwrap();
    j.entries[run_at].state = tlskit_trust::journal::State::Started;
    for e in &mut j.entries[run_at + 1..] {
        e.state = tlskit_trust::journal::State::Planned;
    }
    j.write(&jpath).unwrap();
    std::fs::remove_file(r.join(format!(
        "etc/pki/ca-trust/source/anchors/tlskit-{}.pem",
        ca.id()
    )))
    .unwrap();
    let base = std::fs::read(r.join("etc/ssl/certs/base.pem")).unwrap();
    std::fs::write(
        r.join("etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"),
        base,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(r.join(format!("var/lib/tlskit/trust/{}.bak", ca.id())));
    std::fs::create_dir(r.join(format!("var/lib/tlskit/trust/{}.bak", ca.id()))).unwrap();

    uninstall(&ca, &opts(r), &Fake::default()).unwrap();
    let after = snapshot(r);
    assert_eq!(before, after, "{}", diff(&before, &after));
}

#[test]
fn a_file_changed_since_the_install_is_moved_aside_not_deleted() {
    let tree = root_tree();
    let r = tree.path();
    let ca = constrained_ca();
    install_into(&targets(r), &ca, &opts(r), &Fake::default()).unwrap();
    let anchor = r.join(format!(
        "usr/local/share/ca-certificates/tlskit-{}.crt",
        ca.id()
    ));
    std::fs::write(&anchor, "edited by someone\n").unwrap();
    let u = uninstall(&ca, &opts(r), &Fake::default()).unwrap();
    assert!(!anchor.exists());
    let notes: Vec<&String> = u.targets.iter().flat_map(|t| &t.notes).collect();
    let note = notes
        .iter()
        .find(|n| n.contains("had changed since the install"))
        .unwrap_or_else(|| panic!("{notes:?}"));
    let kept = note.rsplit("moved to ").next().unwrap();
    assert_eq!(
        std::fs::read_to_string(kept).unwrap(),
        "edited by someone\n"
    );
}

#[test]
fn a_journal_for_another_certificate_is_refused() {
    let tree = root_tree();
    let r = tree.path();
    let ca = constrained_ca();
    install_into(&targets(r), &ca, &opts(r), &Fake::default()).unwrap();
    let jpath = r.join(format!("var/lib/tlskit/trust/{}.json", ca.id()));
    let mut j = Journal::read(&jpath).unwrap();
    j.sha256 = "00".repeat(32);
    j.write(&jpath).unwrap();
    let before = snapshot(r);
    let e = uninstall(&ca, &opts(r), &Fake::default()).unwrap_err();
    assert!(e.to_string().contains("records another certificate"), "{e}");
    assert_eq!(before, snapshot(r));
}

/// A bundle that is a FIFO (a hostile root tree): the backup refuses it at once, instead
/// of blocking on it for ever, and the install fails with the file named.
#[test]
fn a_fifo_in_the_root_tree_is_refused_not_waited_on() {
    let tree = root_tree();
    let root = tree.path().to_path_buf();
    let bundle = root.join("etc/ssl/certs/ca-certificates.crt");
    std::fs::remove_file(&bundle).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&bundle)
        .status()
        .unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ca = constrained_ca();
        let fake = Fake::default();
        let r = install_into(&targets(&root), &ca, &opts(&root), &fake)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the install blocked on the FIFO");
    let e = r.unwrap_err();
    assert!(e.contains("ca-certificates.crt"), "{e}");
}
