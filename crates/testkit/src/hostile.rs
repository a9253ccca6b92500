//! Hostile inputs shared by the CLI tests (issue 12): a certificate whose names carry
//! terminal escape sequences, BEL, CR and bidi overrides, and a corpus of malformed
//! private keys with the check that no message quotes them.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

/// A CN that recolours the terminal, rings the bell, returns to the start of the line and
/// reverses the rest of it.
pub const EVIL_CN: &str = "evil\x1b[31mred\x07\rcn\u{202e}gnp.exe";
/// [`EVIL_CN`] as a distinguished name shows it (RFC 4514: controls and bidi overrides as
/// hex pairs of their UTF-8 bytes).
pub const EVIL_CN_DN: &str = "evil\\1B[31mred\\07\\0Dcn\\E2\\80\\AEgnp.exe";

/// An O that hides text (SGR 8), holds a C1 CSI and DEL, and opens a bidi isolate (no
/// RFC 4514 specials, so a DN string keeps it as it is).
pub const EVIL_O: &str = "O\x1b[8mhidden\u{9b}2J\x7f\u{2066}org";
/// [`EVIL_O`] as a distinguished name shows it.
pub const EVIL_O_DN: &str = "O\\1B[8mhidden\\C2\\9B2J\\7F\\E2\\81\\A6org";

/// Whether `s` holds [`EVIL_CN`] exactly or as a distinguished name renders it.
pub fn has_evil_cn(s: &str) -> bool {
    s.contains(EVIL_CN) || s.contains(EVIL_CN_DN)
}

/// A DNS SAN with an ESC (clear screen) inside.
pub const EVIL_SAN: &str = "a\x1b[2Jb.evil.test";
/// The SAN that makes the certificate usable.
pub const GOOD_SAN: &str = "evil.test";

/// Characters that must never reach a terminal raw: C0 controls but tab and newline,
/// DEL, C1 controls, bidi embeddings, overrides and isolates.
pub fn is_raw_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Panics when `out` holds a raw control character.
#[track_caller]
pub fn assert_no_raw_controls(what: &str, out: &[u8]) {
    let s = String::from_utf8_lossy(out);
    if let Some(c) = s.chars().find(|&c| is_raw_control(c)) {
        panic!(
            "{what}: raw U+{:04X} reached the output:\n{}",
            c as u32,
            s.escape_debug()
        );
    }
}

fn evil_dn() -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, EVIL_CN);
    dn.push(DnType::OrganizationName, EVIL_O);
    dn
}

/// The leaves' subject: the hostile text as organizationalUnitName and organizationName,
/// and a commonName that repeats a subjectAltName (the webpki profile requires it, rule
/// cn-not-in-san).
fn evil_leaf_dn() -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, GOOD_SAN);
    dn.push(DnType::OrganizationalUnitName, EVIL_CN);
    dn.push(DnType::OrganizationName, EVIL_O);
    dn
}

/// Write `evil-root.pem` (a CA named with [`EVIL_CN`] and [`EVIL_O`]), `evil-chain.pem`
/// (a server and client leaf with [`EVIL_CN`] as its OU and [`EVIL_O`], the SANs
/// [`GOOD_SAN`], [`EVIL_SAN`] and 127.0.0.1, valid for one day from now) and `evil.key`
/// into `dir`. Both pass the default (webpki) profile.
pub fn evil_pki(dir: &Path) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.distinguished_name = evil_dn();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let root = CertifiedIssuer::self_signed(ca, p256()).expect("root");
    let mut leaf = CertificateParams::new(Vec::<String>::new()).expect("params");
    leaf.distinguished_name = evil_leaf_dn();
    leaf.use_authority_key_identifier_extension = true;
    leaf.subject_alt_names = vec![
        SanType::DnsName(GOOD_SAN.try_into().expect("ia5")),
        SanType::DnsName(EVIL_SAN.try_into().expect("ia5")),
        SanType::IpAddress("127.0.0.1".parse().expect("ip")),
    ];
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let now = time::OffsetDateTime::now_utc();
    leaf.not_before = now - time::Duration::hours(1);
    leaf.not_after = now + time::Duration::days(1);
    let key = p256();
    let cert = leaf.signed_by(&key, &root).expect("leaf");
    std::fs::write(dir.join("evil-root.pem"), root.pem()).expect("write");
    std::fs::write(dir.join("evil-chain.pem"), cert.pem()).expect("write");
    std::fs::write(dir.join("evil.key"), key.serialize_pem()).expect("write");
}

fn p256() -> KeyPair {
    KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("keygen")
}

/// One malformed private key file of the corpus.
pub struct BadKey {
    /// What is wrong with it (used as the file name).
    pub name: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The key's base64 body (one line), to look for in output.
    pub b64: String,
    /// The key's DER, to look for (in hex) in output.
    pub der: Vec<u8>,
}

/// The privateKey OCTET STRING of a PKCS#8 PrivateKeyInfo: the SEC1 ECPrivateKey of an
/// EC key, the PKCS#1 RSAPrivateKey of an RSA key.
fn pkcs8_inner(p8: &[u8]) -> Vec<u8> {
    fn tlv(b: &[u8]) -> (usize, usize) {
        // (header length, content length)
        let l = b[1] as usize;
        if l < 0x80 {
            return (2, l);
        }
        let n = l & 0x7f;
        let len = b[2..2 + n].iter().fold(0usize, |a, &x| a << 8 | x as usize);
        (2 + n, len)
    }
    let (h, _) = tlv(p8);
    let mut rest = &p8[h..];
    for _ in 0..2 {
        // version INTEGER, privateKeyAlgorithm SEQUENCE
        let (h, l) = tlv(rest);
        rest = &rest[h + l..];
    }
    assert_eq!(rest[0], 0x04, "privateKey OCTET STRING");
    let (h, l) = tlv(rest);
    rest[h..h + l].to_vec()
}

fn b64(der: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(der)
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = b64(der);
    let mut s = format!("-----BEGIN {label}-----\n");
    for c in body.as_bytes().chunks(64) {
        s.push_str(std::str::from_utf8(c).expect("base64"));
        s.push('\n');
    }
    s.push_str(&format!("-----END {label}-----\n"));
    s
}

/// Malformed keys of each form (PKCS#8 EC, SEC1, PKCS#1 RSA, PKCS#8 Ed25519): the PEM on
/// one line with spaces or with a literal `\n` (as environment variables carry it), CRLF
/// with a line missing, cut in half, under a wrong END label, with a stray character in
/// the base64, and DER with garbage after it.
pub fn key_corpus() -> Vec<BadKey> {
    let ec = p256().serialize_der();
    let rsa = KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256)
        .expect("rsa keygen")
        .serialize_der();
    let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519)
        .expect("ed25519 keygen")
        .serialize_der();
    let forms = [
        ("pkcs8-ec", "PRIVATE KEY", ec.clone()),
        ("sec1", "EC PRIVATE KEY", pkcs8_inner(&ec)),
        ("pkcs1", "RSA PRIVATE KEY", pkcs8_inner(&rsa)),
        ("pkcs8-ed25519", "PRIVATE KEY", ed),
    ];
    let mut out = Vec::new();
    for (form, label, der) in forms {
        let good = pem(label, &der);
        let lines: Vec<&str> = good.lines().collect();
        let mut push = |what: &str, bytes: Vec<u8>| {
            out.push(BadKey {
                name: format!("{form}-{what}"),
                bytes,
                b64: b64(&der),
                der: der.clone(),
            })
        };
        push("spaces", format!("{}\n", lines.join(" ")).into_bytes());
        push("spaces-no-newline", lines.join(" ").into_bytes());
        push("literal-n", format!("{}\n", lines.join("\\n")).into_bytes());
        let mut crlf = lines.clone();
        if crlf.len() > 3 {
            crlf.remove(2);
        } else {
            crlf.remove(1);
        }
        push("crlf-line-missing", crlf.join("\r\n").into_bytes());
        push("truncated", good.as_bytes()[..good.len() / 2].to_vec());
        push(
            "wrong-end-label",
            good.replace(&format!("END {label}"), "END CERTIFICATE")
                .into_bytes(),
        );
        let mut stray = lines.clone();
        let l1 = format!("{}*{}", &stray[1][..10], &stray[1][10..]);
        stray[1] = &l1;
        push("stray-char", format!("{}\n", stray.join("\n")).into_bytes());
        let mut bin = der.clone();
        bin.truncate(der.len() - 5);
        bin.extend_from_slice(b"\x00\xff\x1b[2J garbage \x07");
        push("binary", bin);
    }
    out
}

/// Panics when `out` quotes `key`: a 16-character piece of its base64, the same bytes
/// as a decimal list (how rustls-pki-types' PEM errors print a line), or 16 bytes of its
/// DER in hex.
#[track_caller]
pub fn assert_no_key_material(what: &str, key: &BadKey, out: &str) {
    let b = key.b64.as_bytes();
    for start in (0..b.len().saturating_sub(16)).step_by(4) {
        let piece = &key.b64[start..start + 16];
        assert!(
            !out.contains(piece),
            "{what} ({}): the key's base64 {piece:?} is in the output:\n{out}",
            key.name
        );
        let dec: Vec<String> = b[start..start + 8].iter().map(|x| x.to_string()).collect();
        let dec = dec.join(", ");
        assert!(
            !out.contains(&dec),
            "{what} ({}): the key's base64 as decimal bytes [{dec}] is in the output:\n{out}",
            key.name
        );
    }
    let hex: String = key.der.iter().map(|x| format!("{x:02x}")).collect();
    let lower = out.to_ascii_lowercase();
    for start in (0..key.der.len().saturating_sub(16)).step_by(4) {
        let piece = &hex[start * 2..start * 2 + 32];
        assert!(
            !lower.contains(piece),
            "{what} ({}): 16 bytes of the key's DER in hex are in the output:\n{out}",
            key.name
        );
    }
}

/// A Unix-socket server at `path` that takes one connection, reads one request line, then
/// answers one space every `every`, `count` times, and never a complete reply: a peer
/// that trickles, to check that a client's deadline covers the whole reply. Runs on a
/// thread of its own; stops when the client goes away.
pub fn trickling_unix_server(
    path: &Path,
    every: std::time::Duration,
    count: usize,
) -> std::thread::JoinHandle<()> {
    use std::io::{BufRead, Write};
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let Ok((conn, _)) = listener.accept() else {
            return;
        };
        let mut line = String::new();
        let _ = std::io::BufReader::new(&conn).read_line(&mut line);
        let mut conn = conn;
        for _ in 0..count {
            if conn.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(every);
        }
    })
}
