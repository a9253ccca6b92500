//! The one redaction of secrets in text that can be printed: every error, log line and
//! JSON field that may carry something a user typed or a peer sent goes through
//! [`redact`] before it reaches a terminal, a log or a document.
//!
//! It lives here, in the leaf crate under every other one (the PKCS#11 crate included,
//! which depends on no other tlskit crate), so that the URI parser, the server's log
//! lines, the Redis client's errors and the CLI's printer all reach the same function;
//! `tlskit_x509::text` re-exports it next to `escape`.
//!
//! What is hidden (each secret becomes `***`):
//!
//! * **PKCS#11 URIs (RFC 7512)**: in a `pkcs11:` URI, every attribute's value except
//!   those that name things (`token`, `object`, `id`, `module-path`, `pin-source`, ...)
//!   is hidden, and an attribute without `=` is hidden whole. So `pin-value=`,
//!   `PIN-VALUE=`, `pin_value=`, `pinvalue=`, `pin-value%3D1234` and any misspelling are
//!   covered, and `pin-value=12;PIN&bogus=1` shows no digit of the PIN. The URI runs to
//!   the next white space: a message's `: reason` after it is hidden with it, so callers
//!   that know where the URI ends redact it alone first (a second pass keeps `***`).
//! * **PIN, password and secret keys outside a URI**: `KEY=VALUE`, `KEY = VALUE`,
//!   `KEY%3DVALUE` and `KEY:VALUE` where KEY (case, `-`, `_`, `.` and %-escapes ignored)
//!   starts or ends with `pin` (but is not `pin-source`), is `pass`, or ends with
//!   `password`, `passwd`, `requirepass`, `secret`, `hmac` or `hmackey`: `TLSKIT_PKCS11_PIN=...`,
//!   `eab_hmac_key=...`, `tsig-secret: ...`. The value runs to `&` or white space, or to
//!   its closing quote when quoted.
//! * **URL passwords**: `SCHEME://user:password@host` shows `user:***@host`; for
//!   `redis://` and `rediss://`, where a lone user part is the password
//!   (`redis://secret@host`), that part is hidden too.
//!
//! Secrets the caller knows (an EAB HMAC key, a TSIG secret as it was read) are hidden
//! wherever they appear, even in a library's message that quotes them, by
//! [`redact_known`].

use std::borrow::Cow;
use std::fmt;

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// `text` with every secret described in the module documentation replaced by `***`;
/// borrowed unchanged when there is none. Idempotent: redacting twice changes nothing.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut spans = Vec::new();
    pkcs11_uris(text, &mut spans);
    secret_keys(text, &mut spans);
    url_passwords(text, &mut spans);
    apply(text, spans)
}

/// [`redact`], after hiding every occurrence of each of `secrets` (values the caller
/// knows are secret: an EAB HMAC key, a TSIG secret). Secrets shorter than 4 bytes are
/// not searched for (they would hide ordinary words).
pub fn redact_known<'a>(text: &'a str, secrets: &[&str]) -> Cow<'a, str> {
    let mut spans = Vec::new();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        let mut from = 0;
        while let Some(i) = text[from..].find(*s) {
            spans.push((from + i, from + i + s.len()));
            from += i + s.len();
        }
    }
    pkcs11_uris(text, &mut spans);
    secret_keys(text, &mut spans);
    url_passwords(text, &mut spans);
    apply(text, spans)
}

/// A `Display` wrapper that writes its string through [`redact`].
#[derive(Debug, Clone, Copy)]
pub struct Redacted<'a>(pub &'a str);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.0))
    }
}

/// Replace each byte range of `spans` (merged where they overlap) by [`MASK`].
fn apply(text: &str, mut spans: Vec<(usize, usize)>) -> Cow<'_, str> {
    spans.retain(|&(a, b)| a < b && &text[a..b] != MASK);
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (a, b) in spans {
        if b <= at {
            continue;
        }
        if a >= at {
            out.push_str(&text[at..a]);
            out.push_str(MASK);
        }
        at = b;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Index of the next white space at or after `from`, or the end.
fn token_end(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| is_space(c))
        .map_or(b.len(), |i| from + i)
}

/// A value that is already the mask (a second pass): `***`, or `***` before a `:` that
/// ends the token (`pin-value=***: private key ...`).
fn already_masked(v: &str) -> bool {
    v == MASK || v == "***:"
}

/// The key with %-escapes decoded, lower case, without `-`, `_` and `.`.
fn normalise_key(k: &str) -> String {
    let b = k.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = if b[i] == b'%' {
            match b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(v) => {
                    i += 3;
                    v
                }
                None => {
                    i += 1;
                    b'%'
                }
            }
        } else {
            i += 1;
            b[i - 1]
        };
        if !matches!(c, b'-' | b'_' | b'.' | b' ') {
            out.push(c.to_ascii_lowercase() as char);
        }
    }
    out
}

/// Whether a key (as [`normalise_key`] gives it) names a secret.
fn secret_key(n: &str) -> bool {
    (n.starts_with("pin") && !n.starts_with("pinsource"))
        || n.ends_with("pin")
        // `x-pin-value=`, `aHpin-value=`: a PIN attribute glued to other text (the
        // pkcs11_uri fuzz target found `...oken=aHpin-value=kcs1` shown whole).
        || n.ends_with("pinvalue")
        || n.ends_with("password")
        || n.ends_with("passwd")
        || n.ends_with("requirepass")
        || n == "pass"
        || n.ends_with("secret")
        || n.ends_with("hmac")
        || n.ends_with("hmackey")
}

/// PKCS#11 path and query attributes whose values name things and are shown.
const SHOWN_ATTRS: &[&str] = &[
    "token",
    "manufacturer",
    "serial",
    "model",
    "object",
    "id",
    "slot-id",
    "type",
    "library-description",
    "library-manufacturer",
    "library-version",
    "slot-description",
    "slot-manufacturer",
    "module-path",
    "module-name",
    "pin-source",
];

/// In each `pkcs11:` URI (to the next white space), every attribute value but those of
/// [`SHOWN_ATTRS`], and every attribute without `=`.
fn pkcs11_uris(text: &str, spans: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i + 7 <= b.len() {
        if !b[i..i + 7].eq_ignore_ascii_case(b"pkcs11:")
            || (i > 0 && b[i - 1].is_ascii_alphanumeric())
        {
            i += 1;
            continue;
        }
        let start = i + 7;
        let end = token_end(b, start);
        let mut a = start;
        while a < end {
            let e = b[a..end]
                .iter()
                .position(|&c| matches!(c, b';' | b'&' | b'?'))
                .map_or(end, |j| a + j);
            attribute(text, a, e, spans);
            a = e + 1;
        }
        i = end;
    }
}

/// One PKCS#11 attribute at `text[a..e]`.
fn attribute(text: &str, a: usize, e: usize, spans: &mut Vec<(usize, usize)>) {
    let attr = &text[a..e];
    if attr.is_empty() || already_masked(attr) {
        return;
    }
    let Some(k) = attr.find('=') else {
        spans.push((a, e));
        return;
    };
    let (key, value) = (&attr[..k], &attr[k + 1..]);
    let lower = key.to_ascii_lowercase();
    let plain_value = !value.contains('=') && !value.to_ascii_lowercase().contains("%3d");
    if SHOWN_ATTRS.contains(&lower.as_str()) && plain_value {
        return;
    }
    let readable_key = !key.is_empty()
        && key.len() <= 40
        && key
            .bytes()
            .all(|c| c.is_ascii_alphabetic() || c == b'-' || c == b'_');
    if !readable_key {
        spans.push((a, e));
    } else if !value.is_empty() && !already_masked(value) {
        spans.push((a + k + 1, e));
    }
}

/// Longest key looked at before a separator, in bytes.
const MAX_KEY: usize = 64;

/// `KEY=VALUE` (spaces around `=` allowed), `KEY%3DVALUE` and `KEY:VALUE` where KEY
/// names a secret ([`secret_key`]).
fn secret_keys(text: &str, spans: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let (sep_len, colon) = match b[i] {
            b'=' => (1, false),
            b':' => (1, true),
            b'%' if b
                .get(i + 1..i + 3)
                .is_some_and(|h| h.eq_ignore_ascii_case(b"3d")) =>
            {
                (3, false)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        // The key: the run of key characters before the separator (spaces before `=`
        // skipped).
        let mut k_end = i;
        if !colon {
            while k_end > 0 && matches!(b[k_end - 1], b' ' | b'\t') {
                k_end -= 1;
            }
        }
        let mut k_start = k_end;
        // At most MAX_KEY bytes back: a long run of `%3D` is no key, and the scan stays
        // linear in the text.
        while k_start > 0
            && k_end - k_start < MAX_KEY
            && (b[k_start - 1].is_ascii_alphanumeric()
                || matches!(b[k_start - 1], b'-' | b'_' | b'.' | b'%'))
        {
            k_start -= 1;
        }
        let mut v = i + sep_len;
        if k_start == k_end || !secret_key(&normalise_key(&text[k_start..k_end])) {
            i = v;
            continue;
        }
        if !colon {
            while v < b.len() && matches!(b[v], b' ' | b'\t') {
                v += 1;
            }
        }
        let v_end = match b.get(v) {
            Some(&q @ (b'"' | b'\'')) => b[v + 1..]
                .iter()
                .position(|&c| c == q)
                .map_or(b.len(), |j| v + 1 + j),
            _ => b[v..]
                .iter()
                .position(|&c| c == b'&' || is_space(c))
                .map_or(b.len(), |j| v + j),
        };
        let value_start = if matches!(b.get(v), Some(b'"' | b'\'')) {
            v + 1
        } else {
            v
        };
        if value_start < v_end && !already_masked(&text[value_start..v_end]) {
            spans.push((value_start, v_end));
        }
        i = v_end.max(i + sep_len);
    }
}

/// `SCHEME://user:password@` (to the last `@` before white space): the password; for
/// `redis` and `rediss`, a lone user part too.
fn url_passwords(text: &str, spans: &mut Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(j) = text[from..].find("://") {
        let sep = from + j;
        from = sep + 3;
        let mut s = sep;
        while s > 0 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'+' | b'.' | b'-'))
        {
            s -= 1;
        }
        if s == sep {
            continue;
        }
        let scheme = text[s..sep].to_ascii_lowercase();
        let start = sep + 3;
        let end = token_end(b, start);
        // One look per white-space-delimited token: a later `://` in it has no other `@`.
        from = end.max(from);
        let Some(at) = text[start..end].rfind('@').map(|k| start + k) else {
            continue;
        };
        let userinfo = &text[start..at];
        let redis = scheme == "redis" || scheme == "rediss";
        match userinfo.find(':') {
            Some(c) if !already_masked(&userinfo[c + 1..]) => spans.push((start + c + 1, at)),
            None if redis && !userinfo.is_empty() && !already_masked(userinfo) => {
                spans.push((start, at))
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input must lose every `1111` / `2222` / `s3cret` it holds.
    fn hidden(input: &str) -> String {
        let out = redact(input).into_owned();
        for secret in ["1111", "2222", "s3cret", "12;PIN", "PIN&"] {
            assert!(!out.contains(secret), "{input:?} -> {out:?}");
        }
        assert_eq!(redact(&out), out, "idempotent: {input:?}");
        out
    }

    #[test]
    fn pkcs11_pin_in_every_spelling() {
        let base = "pkcs11:token=web;object=tls";
        for q in [
            "pin-value=11112222",
            "PIN-VALUE=11112222",
            "Pin-Value=11112222",
            "pin_value=11112222",
            "pinvalue=11112222",
            "pin=11112222",
            "pin-valeu=11112222",
            "pni-value=11112222",
            "pin%2Dvalue=11112222",
            "%70%69%6E-value=11112222",
            "pin-value%3D11112222",
            "pin-value%3d11112222",
            "pin-value:11112222",
            "pin11112222",
            "pin-value=%31%31%31%31%32%32%32%32",
            "module-path=/x.so&pin-value=11112222&x-a=b",
        ] {
            let out = hidden(&format!("{base}?{q}"));
            assert!(out.starts_with("pkcs11:token=web;object=tls?"), "{out}");
        }
        // The value runs to `&`: `;` inside it hides the rest of the value too.
        let out = hidden("pkcs11:token=web?pin-value=12;PIN&bogus=1");
        assert_eq!(out, "pkcs11:token=web?pin-value=***&bogus=***");
        // A PIN put in the path, or after `&` in the path.
        hidden("pkcs11:token=web;pin-value=1111;object=k");
        hidden("pkcs11:token=web;object=k&pin-value=1111");
        // What names things stays readable.
        let u = "pkcs11:token=web;object=tls;id=%01?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin";
        assert_eq!(redact(u), u);
        // A message after the URI: hidden with it, unless redacted alone first.
        let key = "pkcs11:token=web?pin-value=11112222";
        let msg = format!("{}: private key does not match", redact(key));
        assert_eq!(
            msg,
            "pkcs11:token=web?pin-value=***: private key does not match"
        );
        assert_eq!(redact(&msg), msg);
        // Upper-case scheme; inside quotes (a Debug string).
        hidden("PKCS11:token=web?PIN-VALUE=11112222");
        hidden("attribute \"pin-value%3D11112222\" has no '='");
    }

    #[test]
    fn secret_keys_outside_uris() {
        for s in [
            "TLSKIT_PKCS11_PIN=11112222",
            "pin_value = 11112222",
            "pin-value=\"1111 2222\" rest",
            "eab_hmac_key=s3cret",
            "EAB-HMAC-KEY:s3cret",
            "tsig-secret:s3cret",
            "requirepass=s3cret",
            "PASSWORD=s3cret",
            "p7oken=aHpin-value=s3cret",
            "x_pin_value=s3cret",
        ] {
            hidden(s);
        }
        // A space after `:` is prose (`needs a PIN: add ...`), not a value.
        assert_eq!(redact("a PIN: add pin-source"), "a PIN: add pin-source");
        for kept in [
            "CKR_PIN_INCORRECT: wrong",
            "pin-source=file:/run/pin",
            "mapping=1111",
            "shipping=ok",
            "(CKF_USER_PIN_LOCKED); unlock it",
            "set TLSKIT_PKCS11_PIN or pin-source",
        ] {
            assert_eq!(redact(kept), kept);
        }
    }

    #[test]
    fn url_passwords_are_hidden() {
        assert_eq!(
            redact("redis://:s3cret@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(redact("rediss://user:pw@h:1"), "rediss://user:***@h:1");
        assert_eq!(redact("redis://token@h:1"), "redis://***@h:1");
        assert_eq!(redact("REDIS://token@h:1"), "REDIS://***@h:1");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        assert_eq!(redact("https://user@h/x"), "https://user@h/x");
        // A password holding `@`, `/` or `:`.
        hidden("--shared-state redis://u:s3/cr@et@h:1/0: cannot connect");
        hidden("redis://u:a:s3cret@h");
        // Twice, in one message.
        let out = hidden("redis://a:1111@h and rediss://b:2222@g");
        assert_eq!(out, "redis://a:***@h and rediss://b:***@g");
    }

    #[test]
    fn known_secrets_anywhere() {
        let out = redact_known("invalid base64 in \"s3cretKEY\" at 3", &["s3cretKEY", "ab"]);
        assert_eq!(out, "invalid base64 in \"***\" at 3");
        assert_eq!(redact_known("ab cd", &["ab"]), "ab cd");
        assert_eq!(format!("{}", Redacted("pin=1111")), "pin=***");
    }

    #[test]
    fn long_hostile_text_is_linear() {
        // 300 KB of separators that are also key characters, and of short pairs: each
        // would cost a scan back over all before it without the key bound.
        for unit in ["%3D", "a=", "pin=", "x://", "pkcs11:", "a:"] {
            let text = unit.repeat(300_000 / unit.len());
            let t = std::time::Instant::now();
            let _ = redact(&text);
            assert!(t.elapsed() < std::time::Duration::from_secs(5), "{unit}");
        }
    }

    #[test]
    fn no_panic_on_any_byte_position() {
        // Multi-byte characters around separators and at the ends.
        for s in [
            "é=",
            "=é",
            "pin=é",
            "pkcs11:é;=é?é",
            "é://é@é",
            "%3",
            "%",
            "pin%3",
            "pkcs11:",
        ] {
            let _ = redact(s);
        }
    }
}
