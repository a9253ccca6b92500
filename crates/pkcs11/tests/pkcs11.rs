//! tlskit-pkcs11 through its public API, without a token: RFC 7512 URIs (parsing,
//! normalised display, the PIN never shown, one clear error per malformed URI) and what
//! opening a key, listing or generating says when there is no usable module. The token
//! tests proper (SoftHSM2) are the CLI's slow tier.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use tlskit_pkcs11::{
    generate, is_uri, list, redact_uri, uri_encode, GenType, ObjectType, Pkcs11Error, Pkcs11Uri,
    TokenKey, MODULE_ENV,
};

const PIN: &str = "s3cr3t-4711";

fn bad(input: &str) -> String {
    match Pkcs11Uri::parse(input) {
        Ok(u) => panic!("{input}: parsed as {u}"),
        Err(e) => {
            assert!(matches!(e, Pkcs11Error::BadUri { .. }), "{input}: {e}");
            e.to_string()
        }
    }
}

/// How a module that cannot be used is reported, whichever variant carries it (a missing
/// file's I/O error may become a typed source of its own).
fn cannot_load(module: &Path) -> String {
    format!("{}: cannot load the PKCS#11 module: ", module.display())
}

fn open_err(uri: &str) -> Pkcs11Error {
    match TokenKey::open(&Pkcs11Uri::parse(uri).unwrap(), None) {
        Ok(k) => panic!("opened {k:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_uri_parses_into_its_attributes_and_shows_without_its_pin() {
    let input = format!(
        "pkcs11:token=My%20Token;object=web%20key;id=%01%AB;type=private;slot-id=3;x-vendor=1\
         ?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value={PIN}"
    );
    let u = Pkcs11Uri::parse(&input).unwrap();
    assert_eq!(u.token.as_deref(), Some("My Token"));
    assert_eq!(u.object.as_deref(), Some("web key"));
    assert_eq!(u.id.as_deref(), Some(&[0x01, 0xab][..]));
    assert_eq!(u.object_type, Some(ObjectType::Private));
    assert_eq!(u.slot_id, Some(3));
    assert_eq!(
        u.module_path.as_deref(),
        Some(Path::new("/usr/lib/softhsm/libsofthsm2.so"))
    );
    assert!(u.has_pin_value());
    let shown = u.to_string();
    assert_eq!(
        shown,
        "pkcs11:token=My%20Token;object=web%20key;slot-id=3;id=%01%AB;type=private\
         ?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=***"
    );
    assert!(!format!("{u:?}").contains(PIN));

    let stored = u.without_pin_value();
    assert!(!stored.has_pin_value());
    assert!(!stored.to_string().contains("pin-value"));
    // What is shown (without a PIN) parses back to the same URI.
    assert_eq!(Pkcs11Uri::parse(&stored.to_string()).unwrap(), stored);
    assert_eq!(input.parse::<Pkcs11Uri>().unwrap(), u);
}

#[test]
fn a_pin_source_is_a_file() {
    for (input, path) in [
        ("pkcs11:token=t?pin-source=file:/run/pin", "/run/pin"),
        ("pkcs11:token=t?pin-source=file:///run/pin", "/run/pin"),
        ("pkcs11:token=t?pin-source=/run/pin", "/run/pin"),
    ] {
        let u = Pkcs11Uri::parse(input).unwrap();
        assert_eq!(u.pin_source, Some(PathBuf::from(path)), "{input}");
        assert!(!u.has_pin_value());
    }
    let e = bad("pkcs11:token=t?pin-source=https://pin.test/");
    assert!(e.contains("pin-source must be file:PATH or a path"), "{e}");
    let e = bad(&format!(
        "pkcs11:token=t?pin-source=file:/run/pin&pin-value={PIN}"
    ));
    assert!(e.contains("not both"), "{e}");
    assert!(!e.contains(PIN), "{e}");
}

#[test]
fn a_malformed_uri_is_one_clear_error_that_never_shows_the_pin() {
    for (input, why) in [
        ("token=t", "does not start with pkcs11:"),
        ("pkcs11:", "names no token and no object"),
        ("pkcs11:token=a;token=b", "token appears twice"),
        (
            "pkcs11:token=a%zz",
            "'%' must be followed by two hexadecimal digits",
        ),
        ("pkcs11:token=a b", "must be %-encoded"),
        ("pkcs11:token=a;colour=red", "unknown path attribute"),
        (
            "pkcs11:token=a;slot-id=x",
            "slot-id must be a decimal number",
        ),
        ("pkcs11:token=a;type=key", "type must be one of"),
        ("pkcs11:token=a;object", "has no '='"),
        ("pkcs11:token=a?colour=red", "unknown query attribute"),
    ] {
        let with_pin = if input.contains('?') {
            format!("{input}&pin-value={PIN}")
        } else {
            format!("{input}?pin-value={PIN}")
        };
        let e = bad(&with_pin);
        assert!(e.contains(why), "{input}: {e}");
        assert!(!e.contains(PIN), "{input}: {e}");
    }
    let long = format!("pkcs11:token={}", "a".repeat(5000));
    let e = bad(&long);
    assert!(e.contains("longer than 4096 bytes"), "{e}");
    assert!(
        e.len() < 300,
        "the URI is not quoted whole: {} bytes",
        e.len()
    );
}

#[test]
fn uri_text_is_recognised_redacted_and_encoded() {
    assert!(is_uri("pkcs11:token=t"));
    assert!(is_uri("PKCS11:token=t"));
    assert!(!is_uri("/etc/tlskit/key.pem"));
    assert!(!is_uri("pkcs1"));

    let shown = redact_uri(&format!("pkcs11:token=t;object=k?pin-value={PIN}"));
    assert!(!shown.contains(PIN), "{shown}");
    assert!(shown.starts_with("pkcs11:token=t;object=k"), "{shown}");
    // Even when the text does not parse (a space, a control character).
    let shown = redact_uri(&format!("pkcs11:token=my token\u{1b}?pin-value={PIN}"));
    assert!(!shown.contains(PIN), "{shown}");
    assert!(!shown.contains('\u{1b}'), "{shown}");

    assert_eq!(uri_encode(b"a b/c~"), "a%20b%2Fc~");
    assert_eq!(uri_encode(&[0x00, 0xff]), "%00%FF");
}

#[test]
fn a_missing_or_unloadable_module_is_named_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("no-such-module.so");
    let e = open_err(&format!(
        "pkcs11:token=t;object=k?module-path={}&pin-value={PIN}",
        missing.display()
    ));
    let text = e.to_string();
    assert!(text.starts_with(&cannot_load(&missing)), "{text}");
    assert!(!text.contains(PIN), "{text}");

    let not_a_library = d.path().join("text.so");
    std::fs::write(&not_a_library, "not ELF").unwrap();
    let e = open_err(&format!(
        "pkcs11:token=t;object=k?module-path={}",
        not_a_library.display()
    ));
    assert!(
        e.to_string().contains("not a loadable shared library"),
        "{e}"
    );

    let e = open_err(&format!(
        "pkcs11:token=t;object=k?module-path={}",
        d.path().display()
    ));
    assert!(e.to_string().contains("not a regular file"), "{e}");

    // The module given to `open` (the CLI's --pkcs11-module) is used without module-path=.
    let uri = Pkcs11Uri::parse("pkcs11:token=t;object=k").unwrap();
    let e = TokenKey::open(&uri, Some(&missing)).unwrap_err();
    assert!(e.to_string().starts_with(&cannot_load(&missing)), "{e}");

    let e = list(&missing, None).unwrap_err();
    assert!(e.to_string().starts_with(&cannot_load(&missing)), "{e}");
}

#[test]
fn without_any_module_the_error_says_where_to_name_one() {
    assert!(
        std::env::var_os(MODULE_ENV).is_none(),
        "this test checks the error without {MODULE_ENV}: unset it"
    );
    let e = open_err(&format!("pkcs11:token=t;object=k?pin-value={PIN}"));
    assert!(matches!(e, Pkcs11Error::NoModule { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("module-path=") && text.contains(MODULE_ENV),
        "{text}"
    );
    assert!(text.starts_with("pkcs11:token=t;object=k"), "{text}");
    assert!(!text.contains(PIN), "{text}");
}

#[test]
fn generating_a_key_needs_a_name_for_it() {
    let uri = Pkcs11Uri::parse("pkcs11:token=t?module-path=/nonexistent.so").unwrap();
    let e = generate(&uri, None, GenType::P256).unwrap_err();
    assert!(matches!(e, Pkcs11Error::BadUri { .. }), "{e}");
    assert!(
        e.to_string().contains("name the new key with object=LABEL"),
        "{e}"
    );
    let named = Pkcs11Uri::parse("pkcs11:token=t;object=new?module-path=/nonexistent.so").unwrap();
    let e = generate(&named, None, GenType::P256).unwrap_err();
    let module = Path::new("/nonexistent.so");
    assert!(e.to_string().starts_with(&cannot_load(module)), "{e}");
}
