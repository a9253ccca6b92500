//! TSIG keys (RFC 8945) from BIND key files, as `tsig-keygen` and `ddns-confgen` write
//! them:
//!
//! ```text
//! key "acme-update" {
//!     algorithm hmac-sha256;
//!     secret "base64...";
//! };
//! ```
//!
//! The file is read bounded (64 KiB) and must hold exactly one `key` statement with an
//! `algorithm` (hmac-sha256, hmac-sha384 or hmac-sha512) and a `secret`. Comments (`#`,
//! `//`, `/* */`) are allowed. The secret is never printed: `Debug` shows `***`, and no
//! error quotes it.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use base64::Engine as _;
use hickory_proto::rr::rdata::tsig::TsigAlgorithm;
use hickory_proto::rr::{Name, TSigner};

use crate::error::DnsError;

/// Largest key file read: a key file is a few hundred bytes.
const MAX_KEY_FILE: u64 = 64 << 10;
/// Largest secret accepted (bytes, decoded): HMAC keys longer than the block size are
/// hashed anyway; 1 KiB is far above any real one.
const MAX_SECRET: usize = 1024;
/// Most tokens read from a key file.
const MAX_TOKENS: usize = 4096;
/// Clock skew allowed between us and the server (RFC 8945 suggests 300 s).
const FUDGE_SECONDS: u16 = 300;

/// A TSIG algorithm tlskit signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TsigAlg {
    /// `hmac-sha256`.
    HmacSha256,
    /// `hmac-sha384`.
    HmacSha384,
    /// `hmac-sha512`.
    HmacSha512,
}

impl TsigAlg {
    /// The name as BIND writes it.
    pub fn name(self) -> &'static str {
        match self {
            TsigAlg::HmacSha256 => "hmac-sha256",
            TsigAlg::HmacSha384 => "hmac-sha384",
            TsigAlg::HmacSha512 => "hmac-sha512",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "hmac-sha256" => Some(TsigAlg::HmacSha256),
            "hmac-sha384" => Some(TsigAlg::HmacSha384),
            "hmac-sha512" => Some(TsigAlg::HmacSha512),
            _ => None,
        }
    }

    fn hickory(self) -> TsigAlgorithm {
        match self {
            TsigAlg::HmacSha256 => TsigAlgorithm::HmacSha256,
            TsigAlg::HmacSha384 => TsigAlgorithm::HmacSha384,
            TsigAlg::HmacSha512 => TsigAlgorithm::HmacSha512,
        }
    }
}

impl fmt::Display for TsigAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A TSIG key: its name, algorithm and secret. `Debug` and every message show the secret
/// as `***`.
#[derive(Clone)]
pub struct TsigKey {
    name: String,
    algorithm: TsigAlg,
    secret: Vec<u8>,
    /// The secret as written in the file, to hide it from any text that might quote it.
    secret_text: String,
}

impl fmt::Debug for TsigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TsigKey")
            .field("name", &self.name)
            .field("algorithm", &self.algorithm.name())
            .field("secret", &tlskit_io::redact::MASK)
            .finish()
    }
}

impl TsigKey {
    /// Read a BIND key file (see the module docs).
    pub fn from_file(path: &Path) -> Result<Self, DnsError> {
        let text = tlskit_io::read_to_string(path, MAX_KEY_FILE).map_err(DnsError::KeyRead)?;
        Self::parse(&text).map_err(|reason| DnsError::KeyFile {
            path: path.to_path_buf(),
            reason: reason.0,
        })
    }

    /// Parse the text of a BIND key file. The error is a reason in words, without the
    /// path (and never quoting the secret).
    pub fn parse(text: &str) -> Result<Self, KeyFileError> {
        let tokens = tokens(text)?;
        let mut keys = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                Tok::Word(w) if w.eq_ignore_ascii_case("key") => {
                    let (key, next) = key_statement(&tokens, i + 1)?;
                    keys.push(key);
                    i = next;
                }
                t => {
                    return Err(KeyFileError(format!(
                        "expected a `key` statement, found {}",
                        t.describe()
                    )))
                }
            }
        }
        match keys.len() {
            0 => Err(KeyFileError("no `key` statement".into())),
            1 => Ok(keys.remove(0)),
            n => Err(KeyFileError(format!(
                "{n} `key` statements; give a file with exactly one"
            ))),
        }
    }

    /// Build a key from its parts (the secret as raw bytes).
    pub fn new(name: &str, algorithm: TsigAlg, secret: Vec<u8>) -> Result<Self, KeyFileError> {
        check_name(name)?;
        if secret.is_empty() || secret.len() > MAX_SECRET {
            return Err(KeyFileError(format!(
                "the secret must be 1 to {MAX_SECRET} bytes"
            )));
        }
        let secret_text = base64::engine::general_purpose::STANDARD.encode(&secret);
        Ok(TsigKey {
            name: name.to_string(),
            algorithm,
            secret,
            secret_text,
        })
    }

    /// The key's name, as the server knows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key's algorithm.
    pub fn algorithm(&self) -> TsigAlg {
        self.algorithm
    }

    /// `text` with the secret (in its base64 form) and any `secret=...` hidden: for
    /// messages that quote something a library or a peer wrote.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        tlskit_io::redact_known(text, &[self.secret_text.as_str()])
    }

    /// hickory-proto's signer for this key; its refusal in words (escaped, the secret
    /// hidden).
    pub(crate) fn signer(&self) -> Result<TSigner, KeyFileError> {
        let said = |e: &dyn std::fmt::Display| {
            KeyFileError(tlskit_x509::text::escape(&self.redact(&e.to_string())).into_owned())
        };
        let name = Name::from_ascii(&self.name).map_err(|e| said(&e))?;
        TSigner::new(
            self.secret.clone(),
            self.algorithm.hickory(),
            name,
            FUDGE_SECONDS,
        )
        .map_err(|e| said(&e))
    }
}

/// Why a key file's text was refused (never quoting the secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyFileError(String);

fn check_name(name: &str) -> Result<(), KeyFileError> {
    if name.is_empty() || name.len() > 253 {
        return Err(KeyFileError(
            "the key name must be 1 to 253 characters".into(),
        ));
    }
    Name::from_ascii(name).map_err(|_| {
        KeyFileError(format!(
            "the key name \"{}\" is not a DNS name",
            tlskit_x509::text::escape(name)
        ))
    })?;
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Semi,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{}`", tlskit_x509::text::escape(&shorten(w))),
            Tok::Quoted(_) => "a quoted string".into(),
            Tok::Open => "`{`".into(),
            Tok::Close => "`}`".into(),
            Tok::Semi => "`;`".into(),
        }
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(64).collect()
}

fn tokens(text: &str) -> Result<Vec<Tok>, KeyFileError> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if out.len() > MAX_TOKENS {
            return Err(KeyFileError(format!("more than {MAX_TOKENS} tokens")));
        }
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => i = line_end(b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => i = line_end(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => match text[i + 2..].find("*/") {
                Some(j) => i = i + 2 + j + 2,
                None => return Err(KeyFileError("a `/*` comment is not closed".into())),
            },
            b'{' => {
                out.push(Tok::Open);
                i += 1;
            }
            b'}' => {
                out.push(Tok::Close);
                i += 1;
            }
            b';' => {
                out.push(Tok::Semi);
                i += 1;
            }
            b'"' => match text[i + 1..].find('"') {
                Some(j) => {
                    let s = &text[i + 1..i + 1 + j];
                    if s.contains('\n') {
                        return Err(KeyFileError("a quoted string spans lines".into()));
                    }
                    out.push(Tok::Quoted(s.to_string()));
                    i = i + 1 + j + 1;
                }
                None => return Err(KeyFileError("a quoted string is not closed".into())),
            },
            _ if c.is_ascii_alphanumeric() || b"-_.+/=".contains(&c) => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b"-_.+/=".contains(&b[i])) {
                    i += 1;
                }
                out.push(Tok::Word(text[start..i].to_string()));
            }
            _ => {
                // Report the character, escaped; the offending line is not quoted (it
                // could be the secret's).
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(KeyFileError(format!(
                    "unexpected character \"{}\" at byte {i}",
                    tlskit_x509::text::escape(&ch.to_string())
                )));
            }
        }
    }
    Ok(out)
}

fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |j| i + j + 1)
}

/// `key NAME { algorithm ALG; secret "B64"; };` from just after `key`; returns the key and
/// the index after the final `;`.
fn key_statement(t: &[Tok], mut i: usize) -> Result<(TsigKey, usize), KeyFileError> {
    let name = match t.get(i) {
        Some(Tok::Quoted(s)) | Some(Tok::Word(s)) => s.trim_end_matches('.').to_string(),
        Some(other) => {
            return Err(KeyFileError(format!(
                "expected the key's name after `key`, found {}",
                other.describe()
            )))
        }
        None => return Err(KeyFileError("the file ends after `key`".into())),
    };
    i += 1;
    if t.get(i) != Some(&Tok::Open) {
        return Err(KeyFileError("expected `{` after the key's name".into()));
    }
    i += 1;
    let mut algorithm = None;
    let mut secret = None;
    loop {
        match t.get(i) {
            Some(Tok::Close) => {
                i += 1;
                break;
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("algorithm") => {
                let v = match t.get(i + 1) {
                    Some(Tok::Word(v)) | Some(Tok::Quoted(v)) => v,
                    _ => return Err(KeyFileError("`algorithm` needs a value".into())),
                };
                let alg = TsigAlg::parse(v).ok_or_else(|| {
                    KeyFileError(format!(
                        "unsupported algorithm `{}` (hmac-sha256, hmac-sha384 or hmac-sha512)",
                        tlskit_x509::text::escape(&shorten(v))
                    ))
                })?;
                if algorithm.replace(alg).is_some() {
                    return Err(KeyFileError("`algorithm` is given twice".into()));
                }
                i += 2;
            }
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("secret") => {
                let v = match t.get(i + 1) {
                    Some(Tok::Quoted(v)) | Some(Tok::Word(v)) => v,
                    _ => return Err(KeyFileError("`secret` needs a quoted value".into())),
                };
                let compact: String = v.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(compact.as_bytes())
                    .map_err(|_| KeyFileError("the secret is not valid base64".into()))?;
                if secret.replace(bytes).is_some() {
                    return Err(KeyFileError("`secret` is given twice".into()));
                }
                i += 2;
            }
            Some(Tok::Word(w)) => {
                return Err(KeyFileError(format!(
                    "unknown key option `{}`",
                    tlskit_x509::text::escape(&shorten(w))
                )))
            }
            Some(other) => {
                return Err(KeyFileError(format!(
                    "expected `algorithm`, `secret` or `}}`, found {}",
                    other.describe()
                )))
            }
            None => return Err(KeyFileError("the `key` block is not closed".into())),
        }
        if t.get(i) != Some(&Tok::Semi) {
            return Err(KeyFileError("expected `;` after a key option".into()));
        }
        i += 1;
    }
    if t.get(i) != Some(&Tok::Semi) {
        return Err(KeyFileError("expected `;` after the key's `}`".into()));
    }
    i += 1;
    let algorithm = algorithm.ok_or_else(|| KeyFileError("the key has no `algorithm`".into()))?;
    let secret = secret.ok_or_else(|| KeyFileError("the key has no `secret`".into()))?;
    Ok((TsigKey::new(&name, algorithm, secret)?, i))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const GOOD: &str = "key \"acme-update\" {\n\talgorithm hmac-sha256;\n\tsecret \"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ==\";\n};\n";

    #[test]
    fn parses_tsig_keygen_output() {
        let k = TsigKey::parse(GOOD).unwrap();
        assert_eq!(k.name(), "acme-update");
        assert_eq!(k.algorithm(), TsigAlg::HmacSha256);
        assert_eq!(k.secret, b"secret-secret-secret-secret!");
        let k = TsigKey::parse(
            "# made by hand\nkey tsig.example. { // the name\n algorithm HMAC-SHA512; /* big */ secret \"AAAA\"; };",
        )
        .unwrap();
        assert_eq!(k.name(), "tsig.example");
        assert_eq!(k.algorithm(), TsigAlg::HmacSha512);
        assert_eq!(k.secret, [0, 0, 0]);
        let k = TsigKey::parse(&GOOD.replace("sha256", "sha384")).unwrap();
        assert_eq!(k.algorithm(), TsigAlg::HmacSha384);
        assert!(k.signer().is_ok());
    }

    #[test]
    fn debug_and_errors_never_show_the_secret() {
        let k = TsigKey::parse(GOOD).unwrap();
        let d = format!("{k:?}");
        assert!(d.contains("***") && d.contains("acme-update"), "{d}");
        assert!(!d.contains("c2VjcmV0"), "{d}");
        assert!(!d.contains("115, 101"), "{d}");
        let e = TsigKey::parse(&GOOD.replace("secret \"", "secret \"!")).unwrap_err();
        assert_eq!(e.to_string(), "the secret is not valid base64");
        let e = TsigKey::parse(&GOOD.replace("secret", "sekret")).unwrap_err();
        assert_eq!(e.to_string(), "unknown key option `sekret`");
        assert!(!e.to_string().contains("c2Vj"));
        let text = "update failed: secret c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ== rejected";
        assert!(!k.redact(text).contains("c2VjcmV0"), "{}", k.redact(text));
    }

    #[test]
    fn refuses_bad_files() {
        let cases: &[(&str, &str)] = &[
            ("", "no `key` statement"),
            (
                "options { };",
                "expected a `key` statement, found `options`",
            ),
            (
                "key \"k\" { algorithm hmac-md5; secret \"AAAA\"; };",
                "unsupported algorithm `hmac-md5`",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; };",
                "the key has no `secret`",
            ),
            (
                "key \"k\" { secret \"AAAA\"; };",
                "the key has no `algorithm`",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; secret \"AAAA\" };",
                "expected `;` after a key option",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; secret \"AAAA\"; }",
                "expected `;` after the key's `}`",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; secret \"AAAA\";",
                "the `key` block is not closed",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; secret \"\"; };",
                "the secret must be 1 to 1024 bytes",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; algorithm hmac-sha256; secret \"AAAA\"; };",
                "`algorithm` is given twice",
            ),
            (
                "key \"k\" { algorithm hmac-sha256; secret \"AAAA; };",
                "a quoted string is not closed",
            ),
            (
                "key \"a..b\" { algorithm hmac-sha256; secret \"AAAA\"; };",
                "not a DNS name",
            ),
            ("/* open", "a `/*` comment is not closed"),
        ];
        for (text, want) in cases {
            let e = TsigKey::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let two = format!("{GOOD}{GOOD}");
        assert!(TsigKey::parse(&two)
            .unwrap_err()
            .to_string()
            .contains("2 `key` statements"));
    }

    #[test]
    fn hostile_files_are_bounded() {
        // Control characters are escaped, never printed raw.
        let e = TsigKey::parse("key \"k\" {\x1b[31m")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\x1b'), "{e}");
        // Many tokens: refused, not parsed for ever.
        let many = "{".repeat(MAX_TOKENS + 10);
        assert!(TsigKey::parse(&many)
            .unwrap_err()
            .to_string()
            .contains("more than"));
        // A huge secret.
        let big = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 5000]);
        let e = TsigKey::parse(&format!(
            "key k {{ algorithm hmac-sha256; secret \"{big}\"; }};"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("1 to 1024 bytes"));
        // Files: size-capped, regular only.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.key");
        std::fs::File::create(&p)
            .unwrap()
            .set_len(MAX_KEY_FILE + 1)
            .unwrap();
        assert!(matches!(TsigKey::from_file(&p), Err(DnsError::KeyRead(_))));
        assert!(matches!(
            TsigKey::from_file(Path::new("/dev/zero")),
            Err(DnsError::KeyRead(_))
        ));
        let p = dir.path().join("bad.key");
        std::fs::write(&p, "key k { };").unwrap();
        let e = TsigKey::from_file(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&p.display().to_string()) && e.contains("no `algorithm`"),
            "{e}"
        );
    }
}
