//! tlskit-io through its public API, as an embedding program would use it: bounded reads
//! that refuse what is too large or not a regular file (naming the file, never blocking),
//! atomic writes that replace by rename and leave no temp file, private files 0600, and
//! the redaction of secrets in printable text.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tlskit_io::{
    read, read_stream, read_to_string, redact, redact_known, replace, write_all_or_nothing,
    write_atomic, Output, ReadErrorKind, Redacted, WriteError,
};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_file_within_the_limit_is_read_whole_and_one_over_it_is_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bundle.pem");
    std::fs::write(&p, b"0123456789").unwrap();
    assert_eq!(read(&p, 10).unwrap(), b"0123456789");
    assert_eq!(read_to_string(&p, 10).unwrap(), "0123456789");

    let e = read(&p, 9).unwrap_err();
    assert_eq!(e.path, p);
    assert!(
        matches!(e.kind, ReadErrorKind::TooLarge { size: 10, limit: 9 }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        format!("{}: file too large (10 bytes; limit 9 bytes)", p.display())
    );
}

#[test]
fn a_huge_file_is_refused_by_its_size_before_any_read() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("big.pem");
    // Sparse: 1 GiB by its size, nothing on disk.
    std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap();
    let e = read(&p, 1 << 20).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ReadErrorKind::TooLarge {
                size: 1_073_741_824,
                limit: 1_048_576
            }
        ),
        "the size from fstat, not how far a read got: {e}"
    );
}

#[test]
fn devices_directories_and_sockets_are_refused_without_reading() {
    // /dev/zero never ends: a read that started would fill memory, not return.
    let e = read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
    assert!(
        matches!(e.kind, ReadErrorKind::NotRegular("character device")),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "/dev/zero: not a regular file (character device): refused without reading it"
    );
    let e = read(Path::new("/dev/null"), 1).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::NotRegular(_)), "{e}");

    let d = tempfile::tempdir().unwrap();
    let e = read(d.path(), 1 << 20).unwrap_err();
    assert!(
        matches!(e.kind, ReadErrorKind::NotRegular("directory")),
        "{e}"
    );
    assert_eq!(e.path, d.path());

    // A Unix socket (made without an external program): opening one fails with ENXIO,
    // which is said as what it is.
    let sock = d.path().join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let e = read(&sock, 1 << 20).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::NotRegular("socket")), "{e}");
    assert!(
        e.to_string().starts_with(&format!("{}: ", sock.display())),
        "{e}"
    );
}

#[test]
fn missing_files_and_non_utf8_text_are_errors_that_name_the_file() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("absent.pem");
    let e = read(&missing, 100).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::Io(_)), "{e}");
    assert!(e
        .to_string()
        .starts_with(&format!("{}: cannot read: ", missing.display())));

    let bin = d.path().join("config.toml");
    std::fs::write(&bin, [0xff, 0xfe, b'a']).unwrap();
    assert_eq!(read(&bin, 100).unwrap(), [0xff, 0xfe, b'a']);
    let e = read_to_string(&bin, 100).unwrap_err();
    assert!(matches!(e.kind, ReadErrorKind::NotUtf8), "{e}");
    assert_eq!(e.to_string(), format!("{}: not UTF-8 text", bin.display()));
}

#[test]
fn a_stream_is_capped_at_its_limit() {
    let name = Path::new("(standard input)");
    assert_eq!(read_stream(&b"abc"[..], name, 3).unwrap(), b"abc");
    // An endless stream stops one byte past the limit.
    let e = read_stream(std::io::repeat(b'x'), name, 1000).unwrap_err();
    assert!(
        matches!(
            e.kind,
            ReadErrorKind::TooLarge {
                size: 1001,
                limit: 1000
            }
        ),
        "{e}"
    );
    assert_eq!(e.path, name);
}

#[test]
fn atomic_write_never_clobbers_without_force_and_keeps_a_backup_with_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cert.pem");
    write_atomic(&p, b"first", false, false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"first");
    assert_eq!(mode(&p), 0o644, "public files are 0644");
    assert_eq!(names(d.path()), ["cert.pem"], "no temp file left behind");

    let e = write_atomic(&p, b"second", false, false).unwrap_err();
    assert!(matches!(e, WriteError::Exists { .. }), "{e}");
    assert_eq!(e.to_string(), format!("{}: already exists", p.display()));
    assert_eq!(std::fs::read(&p).unwrap(), b"first", "left as it was");
    assert_eq!(names(d.path()), ["cert.pem"]);

    write_atomic(&p, b"second", false, true).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"second");
    assert_eq!(
        std::fs::read(d.path().join("cert.pem.bak")).unwrap(),
        b"first"
    );
    assert_eq!(names(d.path()), ["cert.pem", "cert.pem.bak"]);
}

#[test]
fn private_files_are_0600_from_the_start() {
    let d = tempfile::tempdir().unwrap();
    let key = d.path().join("key.pem");
    write_atomic(&key, b"secret", true, false).unwrap();
    assert_eq!(mode(&key), 0o600);
    let state = d.path().join("serial");
    replace(&state, &[b"01", b"\n"], true).unwrap();
    assert_eq!(mode(&state), 0o600);
}

#[test]
fn replace_swaps_the_inode_so_an_open_reader_keeps_the_old_content() {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("snapshot");
    replace(&p, &[b"old ", b"state"], false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"old state");
    let ino = std::fs::metadata(&p).unwrap().ino();
    let mut held = std::fs::File::open(&p).unwrap();

    replace(&p, &[b"new"], false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert_ne!(
        std::fs::metadata(&p).unwrap().ino(),
        ino,
        "replaced by rename"
    );
    let mut old = String::new();
    held.read_to_string(&mut old).unwrap();
    assert_eq!(old, "old state", "the old inode is intact");
    assert_eq!(names(d.path()), ["snapshot"], "no backup, no temp file");
}

#[test]
fn several_outputs_appear_all_or_none() {
    let d = tempfile::tempdir().unwrap();
    let (cert, key) = (d.path().join("a.pem"), d.path().join("a.key"));
    std::fs::write(&key, b"already here").unwrap();
    let outs = [
        Output {
            path: &cert,
            bytes: b"cert",
            private: false,
        },
        Output {
            path: &key,
            bytes: b"key",
            private: true,
        },
    ];
    let e = write_all_or_nothing(&outs, false).unwrap_err();
    assert!(
        matches!(e, WriteError::Exists { ref path } if *path == key),
        "{e}"
    );
    assert!(!cert.exists(), "the first output was not written either");
    assert_eq!(names(d.path()), ["a.key"]);

    std::fs::remove_file(&key).unwrap();
    write_all_or_nothing(&outs, false).unwrap();
    assert_eq!(std::fs::read(&cert).unwrap(), b"cert");
    assert_eq!(std::fs::read(&key).unwrap(), b"key");
    assert_eq!((mode(&cert), mode(&key)), (0o644, 0o600));
    assert_eq!(names(d.path()), ["a.key", "a.pem"]);
}

#[test]
fn when_a_later_output_fails_the_earlier_new_ones_are_removed() {
    let d = tempfile::tempdir().unwrap();
    let cert = d.path().join("b.pem");
    // With `force` the second output's old content is kept as a backup first, which a
    // non-empty directory cannot be: its rename fails after the first one happened.
    let dir = d.path().join("b.key");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("inside"), b"x").unwrap();
    let outs = [
        Output {
            path: &cert,
            bytes: b"cert",
            private: false,
        },
        Output {
            path: &dir,
            bytes: b"key",
            private: true,
        },
    ];
    let e = write_all_or_nothing(&outs, true).unwrap_err();
    assert!(matches!(e, WriteError::Io { .. }), "{e}");
    assert!(!cert.exists(), "the first output was removed again");
    assert_eq!(names(d.path()), ["b.key"], "no temp file left behind");
}

#[test]
fn pins_and_passwords_are_hidden_in_uris_and_key_value_text() {
    assert_eq!(
        redact("pkcs11:token=HSM;object=k1?pin-value=123456"),
        "pkcs11:token=HSM;object=k1?pin-value=***"
    );
    let r = redact("pkcs11:token=a;PIN-VALUE=987654&bogus=1");
    assert!(!r.contains("987654"), "{r}");
    assert!(r.contains("token=a"), "{r}");
    assert_eq!(
        redact("TLSKIT_PKCS11_PIN=4321 other=1"),
        "TLSKIT_PKCS11_PIN=*** other=1"
    );
    assert_eq!(redact("password = hunter2"), "password = ***");
    assert_eq!(redact("eab-hmac-key:c2VjcmV0"), "eab-hmac-key:***");
    // A space after `:` is prose, not a value.
    assert_eq!(
        redact("needs a PIN: see pin-source"),
        "needs a PIN: see pin-source"
    );
    assert_eq!(
        redact("cannot connect to redis://:s3cret@db:6379/0"),
        "cannot connect to redis://:***@db:6379/0"
    );
    assert_eq!(
        redact("https://user:pw@host/path"),
        "https://user:***@host/path"
    );
    // Nothing secret: borrowed unchanged; redacting twice changes nothing.
    assert!(matches!(
        redact("token=HSM id=1"),
        std::borrow::Cow::Borrowed(_)
    ));
    let once = redact("pin=1234 password=x").into_owned();
    assert_eq!(redact(&once), once);
    assert_eq!(
        format!("{}", Redacted("tsig-secret:abcd")),
        "tsig-secret:***"
    );
}

#[test]
fn known_secrets_are_hidden_wherever_they_appear() {
    let text = "server said: bad key c2VjcmV0a2V5 (c2VjcmV0a2V5)";
    assert_eq!(
        redact_known(text, &["c2VjcmV0a2V5"]),
        "server said: bad key *** (***)"
    );
    // Shorter than 4 bytes: not searched for (it would hide ordinary words).
    assert_eq!(redact_known("a key", &["key"]), "a key");
}
