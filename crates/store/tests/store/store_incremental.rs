//! One-by-one adding equals bulk loading; live reload under concurrent readers; lint and prune.
#![allow(clippy::unwrap_used)]

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use common::*;
use proptest::prelude::*;
use tlskit_store::{load, LoadReport, Source, StoreBuilder, StoreHandle, TrustStore};

/// A pool of certificates: 12 distinct names, some names shared by two certificates.
fn pool() -> &'static Vec<(String, Vec<u8>)> {
    static POOL: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    POOL.get_or_init(|| {
        let k1 = key();
        let k2 = key();
        let mut v = Vec::new();
        for i in 0..12 {
            v.push(ca_with(&k1, &format!("Pool {i}"), 2020, 2090, true));
        }
        for i in 0..4 {
            v.push(ca_with(&k2, &format!("Pool {i}"), 2001, 2011, true));
        }
        v
    })
}

type Summary = (Vec<Vec<u8>>, Vec<Vec<u8>>, usize, Vec<Vec<Vec<u8>>>);

fn summary(s: &TrustStore) -> Summary {
    let ders = s.anchors().map(|a| a.der().to_vec()).collect();
    let names: Vec<Vec<u8>> = s.ca_names().iter().map(<[u8]>::to_vec).collect();
    let groups = names
        .iter()
        .map(|n| s.by_subject(n).map(|a| a.der().to_vec()).collect())
        .collect();
    (ders, names, s.ca_names().encoded_len(), groups)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Files with random picks from the pool (with repeats), added one file at a time via
    /// add_source, give the same store, CA-name list and encoded size as one bulk load of
    /// the directory, and as add_der of every certificate.
    #[test]
    fn one_by_one_equals_bulk(files in proptest::collection::vec(proptest::collection::vec(0usize..16, 1..5), 1..10)) {
        let d = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for (i, picks) in files.iter().enumerate() {
            let text: String = picks.iter().map(|&p| pool()[p].0.clone()).collect();
            let p = d.path().join(format!("f{i:03}.pem"));
            fs::write(&p, text).unwrap();
            paths.push(p);
        }
        let (bulk, bulk_report) = load(&[Source::Dir(d.path().into())]).unwrap();

        let mut b = StoreBuilder::new();
        let mut report = LoadReport::default();
        for p in &paths {
            b.add_source(&Source::File(p.clone()), &mut report);
        }
        prop_assert_eq!(b.ca_names_len(), bulk.ca_names().len());
        prop_assert_eq!(b.ca_names_encoded_len(), bulk.ca_names().encoded_len());
        let one = b.build();

        let mut c = StoreBuilder::new();
        for picks in &files {
            for &p in picks {
                c.add_der(&pool()[p].1, std::path::Path::new("x")).unwrap();
            }
        }
        let by_der = c.build();

        prop_assert_eq!(summary(&bulk), summary(&one));
        prop_assert_eq!(summary(&bulk), summary(&by_der));
        prop_assert_eq!(report.duplicates, bulk_report.duplicates);
        let distinct: std::collections::HashSet<_> = files.iter().flatten().collect();
        prop_assert_eq!(bulk.len(), distinct.len());
    }
}

#[test]
fn many_single_file_additions_stay_correct() {
    // The "40-second pattern": 300 files added one add_source call at a time.
    let d = tempfile::tempdir().unwrap();
    let cas = many(300, "Single");
    let mut b = StoreBuilder::new();
    let mut report = LoadReport::default();
    for (i, (pem, _)) in cas.iter().enumerate() {
        let p = d.path().join(format!("{i}.pem"));
        fs::write(&p, pem).unwrap();
        b.add_source(&Source::File(p), &mut report);
        assert_eq!(b.len(), i + 1);
        assert_eq!(b.ca_names_len(), i + 1);
    }
    let s = b.build();
    for (_, der) in &cas {
        let a = s.anchors().find(|a| a.der() == der.as_slice()).unwrap();
        assert_eq!(
            s.by_subject(a.subject()).next().unwrap().der(),
            der.as_slice()
        );
    }
}

#[test]
fn readers_never_fail_during_many_reloads() {
    let d = tempfile::tempdir().unwrap();
    let cas = many(40, "Reload");
    let bundle = d.path().join("b.pem");
    let write = |n: usize| {
        let t: String = cas[..n].iter().map(|c| c.0.clone()).collect();
        // Atomic replace, as a package manager would.
        let tmp = d.path().join("b.tmp");
        fs::write(&tmp, t).unwrap();
        fs::rename(&tmp, &bundle).unwrap();
    };
    write(20);
    let (h, _) = StoreHandle::new(vec![Source::File(bundle.clone())]).unwrap();
    let probe: Vec<u8> = h.current().get(0).unwrap().subject().to_vec();
    let stop = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..3 {
            let (h, stop, lookups, probe) =
                (h.clone(), stop.clone(), lookups.clone(), probe.clone());
            s.spawn(move || {
                let mut last_gen = 0;
                while !stop.load(Ordering::Relaxed) {
                    let cur = h.current();
                    assert!(cur.generation() >= last_gen, "generation went backwards");
                    last_gen = cur.generation();
                    assert_eq!(
                        cur.by_subject(&probe).count(),
                        1,
                        "lookup failed in generation {last_gen}"
                    );
                    assert!(cur.len() >= 20);
                    lookups.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for i in 0..120 {
            write(20 + i % 21);
            let out = h.reload().unwrap();
            assert_eq!(out.generation, i as u64 + 2);
            assert_eq!(out.report.anchors, 20 + i % 21);
        }
        // A failed reload keeps the last good store.
        fs::write(&bundle, "nothing here").unwrap();
        let before = h.generation();
        assert!(h.reload().is_err());
        assert_eq!(h.generation(), before);
        assert!(h.last_error().unwrap().contains("nothing loadable"));
        assert!(h.current().by_subject(&probe).next().is_some());
        stop.store(true, Ordering::Relaxed);
    });
    assert!(lookups.load(Ordering::Relaxed) > 0);
    assert_eq!(h.generation(), 121);
}

#[test]
fn replace_and_from_store_number_generations() {
    let c = ca("Replace");
    let mut b = StoreBuilder::new();
    b.add_der(&c.der, std::path::Path::new("x")).unwrap();
    let h = StoreHandle::from_store(b.build());
    assert_eq!(h.generation(), 1);
    assert!(h.reload().is_err(), "no sources: keeps the store");
    assert_eq!(h.current().len(), 1);
    let g = h.replace(StoreBuilder::new().build());
    assert_eq!(g, 2);
    assert_eq!(h.current().generation(), 2);
}

#[test]
fn sighup_triggers_a_reload() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b.pem");
    fs::write(&bundle, ca("Hup").pem).unwrap();
    let (h, _) = StoreHandle::new(vec![Source::File(bundle)]).unwrap();
    let _guard = h.reload_on_sighup(None).unwrap();
    signal_hook::low_level::raise(signal_hook::consts::SIGHUP).unwrap();
    for _ in 0..500 {
        if h.generation() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(h.generation() >= 2);
}

#[test]
fn watched_source_change_triggers_a_reload() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b.pem");
    fs::write(&bundle, ca("Watch 1").pem).unwrap();
    let (h, _) = StoreHandle::new(vec![Source::File(bundle.clone())]).unwrap();
    let _guard = h
        .watch_sources(std::time::Duration::from_millis(50), None)
        .unwrap();
    let text = format!("{}{}", ca("Watch 1").pem, ca("Watch 2").pem);
    fs::write(&bundle, text).unwrap();
    for _ in 0..1000 {
        if h.current().len() == 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(h.current().len(), 2);
    assert!(h.generation() >= 2);
}

#[test]
fn lint_reports_each_kind() {
    let d = tempfile::tempdir().unwrap();
    let good = ca("Good Root");
    let (exp_pem, _) = ca_with(&key(), "Good Root", 2000, 2010, true);
    let (future, _) = ca_with(&key(), "Future Root", 2090, 2095, true);
    let (leaf_pem, _) = leaf("leaf.example");
    fs::write(d.path().join("a.pem"), &good.pem).unwrap();
    fs::write(d.path().join("b.pem"), &good.pem).unwrap(); // duplicate
    fs::write(d.path().join("c.pem"), &exp_pem).unwrap(); // expired, same subject as a
    fs::write(d.path().join("d.pem"), &future).unwrap();
    fs::write(d.path().join("e.pem"), &leaf_pem).unwrap();
    fs::write(d.path().join("f.pem"), FAKE_KEY).unwrap();
    let r = tlskit_store::lint_at(&[Source::Dir(d.path().into())], 1_800_000_000);
    let kinds: std::collections::BTreeSet<&str> =
        r.findings.iter().map(|f| f.kind.as_str()).collect();
    for k in [
        "duplicate",
        "expired",
        "not-yet-valid",
        "non-ca",
        "same-subject",
        "private-key",
    ] {
        assert!(kinds.contains(k), "missing {k}: {:?}", r.findings);
    }
    let dup = r
        .findings
        .iter()
        .find(|f| f.kind.as_str() == "duplicate")
        .unwrap();
    assert!(dup.path.ends_with("b.pem") && dup.detail.contains("a.pem"));
    assert!(dup.subject.contains("Good Root"));
    assert!(r.findings.iter().all(|f| !f.detail.contains(SECRET_MARKER)));
}

/// The store's severity policy (once decided by the CLI): errors for keys and unparseable
/// data, info for what system stores hold by design, warnings for the rest.
#[test]
fn lint_grades_each_kind_by_the_store_policy() {
    use tlskit_x509::certrules::CertRule;
    use tlskit_x509::{LintCode, Severity};
    for (code, want) in [
        (LintCode::PrivateKey, Severity::Error),
        (LintCode::BadPem, Severity::Error),
        (LintCode::MalformedDer, Severity::Error),
        (LintCode::CorruptAnchor, Severity::Error),
        (LintCode::BadSnapshot, Severity::Error),
        (LintCode::Duplicate, Severity::Info),
        (LintCode::SameSubject, Severity::Info),
        (LintCode::Rule(CertRule::Sha1Signature), Severity::Info),
        (LintCode::Rule(CertRule::Md5Signature), Severity::Warning),
        (LintCode::Rule(CertRule::Expired), Severity::Warning),
        (LintCode::Rule(CertRule::NotYetValid), Severity::Warning),
        (LintCode::Rule(CertRule::WeakKey), Severity::Warning),
        (LintCode::NonCa, Severity::Warning),
        (LintCode::Unreadable, Severity::Warning),
        (LintCode::StaleSnapshot, Severity::Warning),
    ] {
        assert_eq!(tlskit_store::severity(code), want, "{code}");
    }

    let d = tempfile::tempdir().unwrap();
    let good = ca("Graded Root");
    fs::write(d.path().join("a.pem"), &good.pem).unwrap();
    let only = |r: &tlskit_store::LintReport| {
        [Severity::Error, Severity::Warning, Severity::Info].map(|s| r.count(s))
    };
    let clean = tlskit_store::lint_at(&[Source::Dir(d.path().into())], 1_800_000_000);
    assert_eq!(only(&clean), [0, 0, 0], "{:?}", clean.findings);
    assert!(clean.is_clean());

    fs::write(d.path().join("b.pem"), &good.pem).unwrap(); // duplicate: info
    let info = tlskit_store::lint_at(&[Source::Dir(d.path().into())], 1_800_000_000);
    assert_eq!(only(&info), [0, 0, 1], "{:?}", info.findings);
    assert!(info.is_clean(), "info findings alone leave a store clean");

    let (leaf_pem, _) = leaf("leaf.example");
    fs::write(d.path().join("c.pem"), &leaf_pem).unwrap(); // non-ca: warning
    fs::write(d.path().join("d.pem"), FAKE_KEY).unwrap(); // private-key: error
    let r = tlskit_store::lint_at(&[Source::Dir(d.path().into())], 1_800_000_000);
    assert_eq!(only(&r), [1, 1, 1], "{:?}", r.findings);
    assert!(!r.is_clean());
    for f in &r.findings {
        assert_eq!(f.severity(), tlskit_store::severity(f.kind));
    }
}

#[test]
fn prune_moves_only_duplicate_and_expired_files() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("cas");
    let backup = d.path().join("backup");
    fs::create_dir_all(src.join("sub")).unwrap();
    let good = ca("Keep");
    let other = ca("Other");
    let (exp_pem, _) = expired("Old");
    fs::write(src.join("a.pem"), &good.pem).unwrap();
    fs::write(src.join("b.pem"), &good.pem).unwrap(); // pure duplicate -> moved
    fs::write(src.join("c.pem"), &exp_pem).unwrap(); // expired -> moved
    fs::write(src.join("d.pem"), format!("{}{}", good.pem, other.pem)).unwrap(); // dup + good -> refused
    let s = Source::Dir(src.clone());
    let plan = tlskit_store::plan_prune(&s, &backup).unwrap();
    let moved: Vec<PathBuf> = plan.moves.iter().map(|m| m.path.clone()).collect();
    assert_eq!(moved, vec![src.join("b.pem"), src.join("c.pem")]);
    assert_eq!(plan.refused.len(), 1);
    assert!(plan.refused[0].path.ends_with("d.pem"));
    // Dry run touched nothing.
    assert!(src.join("b.pem").exists());
    for (_, r) in tlskit_store::apply_prune(&plan) {
        r.unwrap();
    }
    assert!(!src.join("b.pem").exists() && backup.join("b.pem").exists());
    assert!(!src.join("c.pem").exists() && backup.join("c.pem").exists());
    assert!(src.join("a.pem").exists() && src.join("d.pem").exists());
    assert_eq!(fs::read_to_string(backup.join("b.pem")).unwrap(), good.pem);
}

#[test]
fn anchor_set_generation_moves_only_when_the_anchors_change() {
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("b.pem");
    let (a, b) = (ca("Set A"), ca("Set B"));
    fs::write(&bundle, format!("{}{}", a.pem, b.pem)).unwrap();
    let (h, _) = StoreHandle::new(vec![Source::File(bundle.clone())]).unwrap();
    assert_eq!(h.anchor_set_generation(), 1);
    // Same anchors in another order: a new generation, the same anchor set.
    fs::write(&bundle, format!("{}{}", b.pem, a.pem)).unwrap();
    let out = h.reload().unwrap();
    assert_eq!((out.generation, out.anchors_changed), (2, false));
    assert_eq!(h.anchor_set_generation(), 1);
    // One anchor removed: the set changed.
    fs::write(&bundle, &a.pem).unwrap();
    let out = h.reload().unwrap();
    assert_eq!((out.generation, out.anchors_changed), (3, true));
    assert_eq!(h.anchor_set_generation(), 2);
    // A different anchor with the same count: changed.
    fs::write(&bundle, &b.pem).unwrap();
    assert!(h.reload().unwrap().anchors_changed);
    assert_eq!(h.anchor_set_generation(), 3);
    // replace() follows the same rule.
    let mut same = StoreBuilder::new();
    same.add_der(&b.der, std::path::Path::new("x")).unwrap();
    h.replace(same.build());
    assert_eq!(h.anchor_set_generation(), 3);
}
