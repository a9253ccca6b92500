//! Text that came from a file, a peer or a certificate, made safe to print: the one
//! escaping function every printer and log line of tlskit uses, and the one mapping of
//! PEM parse errors to messages that quote none of the input.
//!
//! Certificate names are chosen by whoever made the certificate (a remote server, for
//! `connect` and `probe`): a subject can hold ESC sequences that recolour or rewrite the
//! terminal, BEL, CR that returns to the start of the line, or a right-to-left override
//! that makes `moc.elpmaxe` read `example.com`. [`escape`] shows each such character as
//! an escape (`\x1b`, `\r`, `\u{202e}`) and leaves every other character, including
//! non-ASCII letters, as it is. It lives in the foundation crate (tlskit-x509) so that
//! every crate's printer and log line reaches the same function; `--json` output does not use it
//! (serde's JSON escaping keeps strings exact).

use std::borrow::Cow;
use std::fmt;

/// The one redaction of secrets (PKCS#11 PINs, URL passwords, `KEY=secret`), from the
/// leaf crate tlskit-io so that the PKCS#11 crate reaches it too: every message that can
/// carry user input or peer text goes through it next to [`escape`].
pub use tlskit_io::redact::{redact, redact_known, Redacted, MASK};

/// Whether `c` is shown escaped by [`escape`]: C0 controls (tab and newline included),
/// DEL, C1 controls, and the Unicode bidirectional controls (U+200E/U+200F marks,
/// U+202A-U+202E embeddings and overrides, U+2066-U+2069 isolates) and U+061C.
pub fn needs_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{061c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    match c {
        '\t' => out.write_str("\\t"),
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
        c => write!(out, "\\u{{{:x}}}", c as u32),
    }
}

/// `s` with every character of [`needs_escape`] replaced by a visible escape (`\x1b`,
/// `\r`, `\u{202e}`); borrowed unchanged when there is none (the common case).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            let _ = push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A `Display` wrapper that writes its string through [`escape`] (no allocation): for
/// `format!("{}", Escaped(&subject))`.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(needs_escape) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or('\0');
            push_escaped(f, c)?;
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// A PEM parse error of rustls-pki-types as a short message that quotes none of the
/// input. Their own `Display` prints the offending line as decimal bytes: for a key whose
/// PEM was put on one line (newlines turned into spaces or a literal `\n`, as happens in
/// environment variables), that line is the whole key.
pub fn pem_error_reason(e: &rustls_pki_types::pem::Error) -> String {
    use rustls_pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { .. } => "a PEM block has no matching END line (is the PEM on \
             one line, with its newlines replaced by spaces or a literal \\n?)"
            .into(),
        Error::IllegalSectionStart { .. } => {
            "a PEM BEGIN line is malformed (expected -----BEGIN LABEL----- on a line of its own)"
                .into()
        }
        Error::Base64Decode(_) => {
            "a PEM block's body is not valid base64 (stray characters, or a literal \\n or CR \
             inside the block?)"
                .into()
        }
        Error::Io(io) => format!("cannot read: {io}"),
        Error::NoItemsFound => "no PEM block of the expected kind".into(),
        Error::SectionTooLarge => "a PEM block is larger than 256 MB".into(),
        _ => "malformed PEM".into(),
    }
}

/// Bytes as lower-case hex without separators (fingerprints, key identifiers, serials):
/// the one hex renderer of tlskit.
pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// A certificate's serial number as text (logs, human output): lower-case hex of the
/// number, without the `00` byte DER puts before a positive value whose top bit is set
/// (`0085c2...` is `85c2...`). `der` is the content of the DER INTEGER. Leading zero
/// bytes go (one byte is always kept: a zero serial is `00`).
pub fn serial(der: &[u8]) -> String {
    let start = der
        .iter()
        .position(|&b| b != 0)
        .unwrap_or(der.len().saturating_sub(1));
    hex(&der[start..])
}

/// [`serial`] of a serial already in hex (as the JSON documents carry it: the INTEGER's
/// content, sign byte included, which their contract keeps): leading `00` pairs go, one
/// pair is always kept. Text that is not an even count of hex digits is returned as is,
/// lower-cased.
pub fn serial_from_hex(hex: &str) -> String {
    let h = hex.to_ascii_lowercase();
    if !h.len().is_multiple_of(2) || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
        return h;
    }
    let mut rest = h.as_str();
    while rest.len() > 2 && rest.starts_with("00") {
        rest = &rest[2..];
    }
    rest.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_lose_the_der_sign_byte_only() {
        // A positive value with its top bit set: DER prefixes 00, the text does not.
        assert_eq!(serial(&[0x00, 0x85, 0xc2, 0x01]), "85c201");
        assert_eq!(serial(&[0x04, 0xa1, 0xc6]), "04a1c6");
        assert_eq!(serial(&[0x7f]), "7f");
        assert_eq!(serial(&[0x00]), "00");
        assert_eq!(serial(&[0x00, 0x00, 0x80]), "80");
        assert_eq!(serial(&[]), "");
        // The same from hex, as the JSON documents carry it (sign byte included).
        assert_eq!(serial_from_hex("0085C201"), "85c201");
        assert_eq!(
            serial_from_hex("0085c201"),
            serial(&[0x00, 0x85, 0xc2, 0x01])
        );
        assert_eq!(serial_from_hex("04a1c6"), "04a1c6");
        assert_eq!(serial_from_hex("00"), "00");
        assert_eq!(serial_from_hex("0000"), "00");
        assert_eq!(serial_from_hex("00:85"), "00:85");
        assert_eq!(serial_from_hex("085"), "085");
    }

    #[test]
    fn escapes_controls_and_bidi_only() {
        let s = "a\x1b[31mb\x07\r\n\t\u{7f}\u{85}é\u{202e}z\u{2066}日本";
        let want = "a\\x1b[31mb\\x07\\r\\n\\t\\x7f\\u{85}é\\u{202e}z\\u{2066}日本";
        assert_eq!(escape(s), want);
        assert_eq!(Escaped(s).to_string(), want);
        assert!(matches!(escape("plain é"), Cow::Borrowed("plain é")));
        assert_eq!(Escaped("").to_string(), "");
        assert_eq!(Escaped("\u{1b}").to_string(), "\\x1b");
    }

    proptest::proptest! {
        /// Whatever the input: nothing that needs escaping is left, the `Display` form
        /// equals `escape`, and text without such characters is unchanged.
        #[test]
        fn escape_leaves_nothing_to_escape(s in "\\PC*|[\\x00-\\x7f\\u{80}-\\u{9f}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}a-z]*") {
            let e = escape(&s);
            proptest::prop_assert!(!e.chars().any(needs_escape));
            proptest::prop_assert_eq!(Escaped(&s).to_string(), e.as_ref());
            if !s.chars().any(needs_escape) {
                proptest::prop_assert_eq!(e.as_ref(), s.as_str());
            }
        }
    }

    #[test]
    fn pem_reasons_quote_nothing() {
        use rustls_pki_types::pem::PemObject;
        let one_line =
            "-----BEGIN PRIVATE KEY----- MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg \
                        -----END PRIVATE KEY-----";
        let e = rustls_pki_types::PrivateKeyDer::from_pem_slice(one_line.as_bytes())
            .expect_err("one-line PEM is refused");
        let r = pem_error_reason(&e);
        assert!(!r.contains("MIGHAgEA") && !r.contains("77, 73"), "{r}");
        assert!(r.contains("END line"), "{r}");
    }
}
