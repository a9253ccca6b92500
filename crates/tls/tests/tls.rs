//! tlskit-tls through its public API, as the client, the terminator and ACME embed it:
//! certified-key loading and its refusals, certificate compression, version names, log
//! field rendering and TLS errors said in words. Test PKI is made here with rcgen.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::compress::{CertCompressor, CompressionLevel};
use rustls::crypto::CryptoProvider;
use tlskit_tls::compress::{certificate_message, compressor, warm_one};
use tlskit_tls::log::{push_field, Level};
use tlskit_tls::tls_text::tls_text;
use tlskit_tls::{load_certified_key, load_signing_key, version_name, Compression, NetError};

fn provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// A CA and a leaf for `names` issued by it, written as `dir/chain.pem` (leaf, then CA)
/// and `dir/key.pem`. Returns (chain path, key path, leaf DER, CA DER).
fn pair(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, Vec<u8>, Vec<u8>) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let leaf = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let chain = dir.join("chain.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&chain, format!("{}{}", leaf.pem(), ca.pem())).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    (chain, key_path, leaf.der().to_vec(), ca.der().to_vec())
}

#[test]
fn a_pem_pair_loads_as_a_certified_key_with_its_chain() {
    let d = tempfile::tempdir().unwrap();
    let (chain, key, leaf, ca) = pair(d.path(), &["a.example"]);
    let ck = load_certified_key(&chain, &key, &provider()).unwrap();
    assert_eq!(ck.cert.len(), 2, "leaf and CA, in file order");
    assert_eq!(ck.cert[0].as_ref(), leaf.as_slice());
    assert_eq!(ck.cert[1].as_ref(), ca.as_slice());
    assert!(ck.keys_match().is_ok());
    // The signing key alone loads too, and signs with an ECDSA scheme.
    let sk = load_signing_key(&key, &provider()).unwrap();
    assert_eq!(sk.algorithm(), rustls::SignatureAlgorithm::ECDSA);
}

#[test]
fn a_key_of_another_certificate_is_a_mismatch_naming_both_files() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    let b = d.path().join("b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (chain_a, _, _, _) = pair(&a, &["a.example"]);
    let (_, key_b, _, _) = pair(&b, &["b.example"]);
    let e = load_certified_key(&chain_a, &key_b, &provider()).unwrap_err();
    assert!(matches!(e, NetError::KeyMismatch { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&key_b.display().to_string())
            && text.contains(&chain_a.display().to_string())
            && text.contains("does not match the certificate"),
        "{text}"
    );
}

/// A PKCS#8 key whose algorithm is id-RSASSA-PSS (what `openssl genpkey -algorithm
/// RSA-PSS` writes): SEQUENCE { INTEGER 0, SEQUENCE { OID 1.2.840.113549.1.1.10 },
/// OCTET STRING { ... } }. The body does not matter: the provider refuses the algorithm.
fn rsa_pss_only_key_pem() -> String {
    use base64::Engine;
    let mut body = vec![0x02, 0x01, 0x00]; // version 0
    body.extend_from_slice(&[
        0x30, 0x0b, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
    ]);
    body.extend_from_slice(&[0x04, 0x04, 0x30, 0x02, 0x02, 0x00]);
    let mut der = vec![0x30, u8::try_from(body.len()).unwrap()];
    der.extend_from_slice(&body);
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n")
}

#[test]
fn an_rsa_pss_only_key_is_refused_for_what_it_is() {
    let d = tempfile::tempdir().unwrap();
    let (chain, _, _, _) = pair(d.path(), &["a.example"]);
    let key = d.path().join("pss.key");
    std::fs::write(&key, rsa_pss_only_key_pem()).unwrap();
    let e = load_certified_key(&chain, &key, &provider()).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with(&key.display().to_string()), "{text}");
    assert!(
        text.contains("RSASSA-PSS-only key") && text.contains("1.2.840.113549.1.1.10"),
        "{text}"
    );
}

#[test]
fn files_without_what_they_should_hold_are_named_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let (chain, key, _, _) = pair(d.path(), &["a.example"]);
    let empty = d.path().join("empty.pem");
    std::fs::write(&empty, "no pem here\n").unwrap();
    let e = load_certified_key(&empty, &key, &provider()).unwrap_err();
    assert!(matches!(e, NetError::File { .. }), "{e}");
    assert!(e.to_string().contains("no CERTIFICATE block found"), "{e}");

    // A key file holding only a certificate: no key, and its content is not quoted.
    let e = load_certified_key(&chain, &chain, &provider()).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("no private key found"), "{text}");
    assert!(!text.contains("BEGIN CERTIFICATE"), "{text}");

    let missing = d.path().join("missing.pem");
    let e = load_certified_key(&missing, &key, &provider()).unwrap_err();
    assert!(
        e.to_string().starts_with(&missing.display().to_string()),
        "{e}"
    );
}

#[test]
fn a_token_key_spec_is_refused_without_showing_its_pin() {
    let d = tempfile::tempdir().unwrap();
    let module = d.path().join("no-such-module.so");
    let spec = format!(
        "pkcs11:token=t;object=k?module-path={}&pin-value=s3cr3t-pin",
        module.display()
    );
    let e = load_signing_key(Path::new(&spec), &provider()).unwrap_err();
    assert!(matches!(e, NetError::Pkcs11(_)), "{e}");
    let text = e.to_string();
    assert!(text.contains("cannot load the PKCS#11 module"), "{text}");
    assert!(!text.contains("s3cr3t-pin"), "{text}");
}

/// The process-wide compressors count hits and misses; only this test uses them in this
/// binary, so the counts move by exactly what it does.
#[test]
fn a_warmed_chain_is_compressed_once_and_served_from_the_cache() {
    let d = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("h{i}.compress.test")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (chain, key, _, _) = pair(d.path(), &names);
    let ck = load_certified_key(&chain, &key, &provider()).unwrap();
    let msg = certificate_message(&ck);
    // RFC 8446 4.4.2: empty context, a 3-byte list length, each certificate with a
    // 3-byte length and no extensions.
    let list: usize = ck.cert.iter().map(|c| 3 + c.len() + 2).sum();
    assert_eq!(msg.len(), 1 + 3 + list);
    assert_eq!(msg[0], 0);

    for alg in [Compression::Zlib, Compression::Brotli] {
        let c = compressor(alg);
        assert_eq!(u16::from(c.algorithm()), alg.code());
        let (hits, misses, waits) = (c.hits(), c.misses(), c.handshake_misses());
        warm_one(&ck, &[alg]);
        assert_eq!(
            (c.hits(), c.misses(), c.handshake_misses()),
            (hits, misses + 1, waits),
            "{}: warming compresses ahead of any handshake",
            alg.name()
        );
        let out = c
            .compress(msg.clone(), CompressionLevel::Interactive)
            .unwrap();
        assert_eq!(
            (c.hits(), c.misses(), c.handshake_misses()),
            (hits + 1, misses + 1, waits),
            "{}: the handshake found the warmed message",
            alg.name()
        );
        assert!(out.len() < msg.len(), "{}: compressed", alg.name());
        // A message never warmed is compressed while the handshake waits.
        let mut other = msg.clone();
        other.push(0);
        c.compress(other, CompressionLevel::Interactive).unwrap();
        assert_eq!(
            (c.misses(), c.handshake_misses()),
            (misses + 2, waits + 1),
            "{}",
            alg.name()
        );
    }
    let zlib_out = compressor(Compression::Zlib)
        .compress(msg.clone(), CompressionLevel::Interactive)
        .unwrap();
    let mut back = vec![0u8; msg.len()];
    rustls::compress::ZLIB_DECOMPRESSOR
        .decompress(&zlib_out, &mut back)
        .unwrap();
    assert_eq!(back, msg, "the cached bytes decompress to the message");
}

#[test]
fn versions_are_named_as_reports_spell_them() {
    use rustls::ProtocolVersion;
    assert_eq!(version_name(Some(ProtocolVersion::TLSv1_3)), "TLSv1.3");
    assert_eq!(version_name(Some(ProtocolVersion::TLSv1_2)), "TLSv1.2");
    assert_eq!(version_name(Some(ProtocolVersion::TLSv1_0)), "TLSv1.0");
    assert_eq!(
        version_name(Some(ProtocolVersion::Unknown(0x7f1c))),
        "0x7f1c"
    );
    assert_eq!(version_name(None), "");
    assert_eq!(
        tlskit_tls::TlsVersion::Tls13.rustls().version,
        ProtocolVersion::TLSv1_3
    );
    assert_eq!(Compression::Brotli.code(), 2);
    assert_eq!(Compression::Zlib.name(), "zlib");
}

#[test]
fn log_fields_are_quoted_and_escaped() {
    let field = |v: &str| {
        let mut line = String::from("event=x");
        push_field(&mut line, "k", v);
        line
    };
    assert_eq!(field("plain"), "event=x k=plain");
    assert_eq!(field(""), "event=x k=\"\"");
    assert_eq!(field("two words"), "event=x k=\"two words\"");
    assert_eq!(field("a=b"), "event=x k=\"a=b\"");
    assert_eq!(field("say \"hi\""), "event=x k=\"say \\\"hi\\\"\"");
    // A forged second log line and a terminal escape stay on this line, visible.
    assert_eq!(
        field("CN=x\nevent=forged\u{1b}[2J"),
        "event=x k=\"CN=x\\nevent=forged\\x1b[2J\""
    );
    assert_eq!(field("evil\u{202e}txt"), "event=x k=\"evil\\u{202e}txt\"");
    let long = "a".repeat(tlskit_tls::log::MAX_VALUE_CHARS + 10);
    let line = field(&long);
    assert!(line.ends_with("...\""), "{line}");
    assert_eq!(line.matches('a').count(), tlskit_tls::log::MAX_VALUE_CHARS);

    assert_eq!(Level::parse("warn"), Some(Level::Warn));
    assert_eq!(Level::parse("loud"), None);
    assert_eq!(Level::Debug.name(), "debug");
}

#[test]
fn tls_errors_read_as_sentences() {
    let e = rustls::Error::AlertReceived(rustls::AlertDescription::BadCertificate);
    assert_eq!(
        tls_text(&e),
        "the server sent the fatal alert bad_certificate (42): it refused the client \
         certificate (or its absence)"
    );
    let e = rustls::Error::PeerIncompatible(rustls::PeerIncompatible::NoCipherSuitesInCommon);
    assert_eq!(
        tls_text(&e),
        "peer is incompatible: no cipher suites in common"
    );
    // Inside a NetError the same sentence, never the Rust variant name.
    let text = NetError::from(rustls::Error::AlertReceived(
        rustls::AlertDescription::ProtocolVersion,
    ))
    .to_string();
    assert!(text.contains("protocol_version (70)"), "{text}");
    assert!(!text.contains("ProtocolVersion"), "{text}");
}

#[test]
fn a_listener_binds_loopback_port_zero() {
    let addr = "127.0.0.1:0".parse().unwrap();
    let l = tlskit_tls::sock::listener(addr, 16).unwrap();
    let bound = l.local_addr().unwrap();
    assert_ne!(bound.port(), 0);
    // The address is taken: binding it again is a Listen error naming it.
    let e = tlskit_tls::sock::listener(bound, 16).unwrap_err();
    assert!(matches!(e, NetError::Listen { .. }), "{e}");
    assert!(e.to_string().contains(&bound.to_string()), "{e}");
}
