//! RFC 7512 `pkcs11:` URIs: the path attributes that name a token and an object, the
//! query attributes that say where the module and the PIN are. Parsing is strict: an
//! unknown path attribute, a bad percent escape, a repeated attribute or an empty URI is
//! one clear error. The PIN never appears in `Display` or `Debug`.

use std::fmt;
use std::path::PathBuf;

use crate::Pkcs11Error;

/// The object class named by `type=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjectType {
    /// `type=private`
    Private,
    /// `type=public`
    Public,
    /// `type=cert`
    Cert,
    /// `type=secret-key`
    SecretKey,
    /// `type=data`
    Data,
}

impl ObjectType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "private" => Self::Private,
            "public" => Self::Public,
            "cert" => Self::Cert,
            "secret-key" => Self::SecretKey,
            "data" => Self::Data,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Public => "public",
            Self::Cert => "cert",
            Self::SecretKey => "secret-key",
            Self::Data => "data",
        }
    }
}

/// A parsed `pkcs11:` URI.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Pkcs11Uri {
    /// `token=`: the token label.
    pub token: Option<String>,
    /// `manufacturer=`: the token manufacturer.
    pub manufacturer: Option<String>,
    /// `serial=`: the token serial number.
    pub serial: Option<String>,
    /// `model=`: the token model.
    pub model: Option<String>,
    /// `slot-id=`: the slot number.
    pub slot_id: Option<u64>,
    /// `object=`: the object label (CKA_LABEL).
    pub object: Option<String>,
    /// `id=`: the object id (CKA_ID), raw bytes.
    pub id: Option<Vec<u8>>,
    /// `type=`.
    pub object_type: Option<ObjectType>,
    /// `module-path=`: the PKCS#11 module (shared library) to load.
    pub module_path: Option<PathBuf>,
    /// `pin-source=file:PATH` (or a plain path).
    pub pin_source: Option<PathBuf>,
    /// `pin-value=`: the PIN itself (kept out of `Display`/`Debug`).
    pub(crate) pin_value: Option<String>,
}

impl fmt::Debug for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pkcs11Uri({self})")
    }
}

/// Whether `s` is meant as a `pkcs11:` URI (scheme compared case-insensitively).
pub fn is_uri(s: &str) -> bool {
    s.len() >= 7 && s.as_bytes()[..7].eq_ignore_ascii_case(b"pkcs11:")
}

fn bad(input: &str, reason: impl Into<String>) -> Pkcs11Error {
    Pkcs11Error::BadUri {
        uri: redact(input),
        reason: tlskit_io::redact(&reason.into()).into_owned(),
    }
}

/// The URI text (as typed: a key spec, a line of a key file) safe to put in a message or
/// a log line: spaces %-encoded (so that the URI is one word and the redaction sees its
/// end), control and non-ASCII characters escaped, then every secret hidden by the
/// workspace's one redaction (`tlskit_io::redact`): `pin-value` in any spelling, any
/// attribute that does not name a thing.
pub fn redact(input: &str) -> String {
    let one_word: String = input
        .replace(' ', "%20")
        .chars()
        .flat_map(char::escape_default)
        .collect();
    tlskit_io::redact(&one_word).into_owned()
}

/// An attribute as a message may quote it (`"token=a"`, `"***"` for one without `=`).
fn shown_attr(attr: &str) -> String {
    let r = redact(&format!("pkcs11:?{attr}"));
    format!("\"{}\"", r.get(8..).unwrap_or(""))
}

fn decode(input: &str, value: &str) -> Result<Vec<u8>, Pkcs11Error> {
    let b = value.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        bad(
                            input,
                            "a '%' must be followed by two hexadecimal digits".to_string(),
                        )
                    })?;
                out.push(hex);
                i += 3;
            }
            c if c.is_ascii_control() || c == b' ' => {
                return Err(bad(
                    input,
                    "spaces and control characters must be %-encoded",
                ))
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn decode_str(input: &str, attr: &str, value: &str) -> Result<String, Pkcs11Error> {
    String::from_utf8(decode(input, value)?)
        .map_err(|_| bad(input, format!("{attr} is not UTF-8 after %-decoding")))
}

fn set<T>(input: &str, slot: &mut Option<T>, attr: &str, v: T) -> Result<(), Pkcs11Error> {
    if slot.is_some() {
        return Err(bad(input, format!("{attr} appears twice")));
    }
    *slot = Some(v);
    Ok(())
}

impl std::str::FromStr for Pkcs11Uri {
    type Err = Pkcs11Error;
    fn from_str(input: &str) -> Result<Self, Pkcs11Error> {
        Self::parse(input)
    }
}

impl Pkcs11Uri {
    /// Parse a `pkcs11:` URI.
    pub fn parse(input: &str) -> Result<Self, Pkcs11Error> {
        if input.len() > 4096 {
            // The first 64 bytes or a little less: never a cut inside a character.
            let cut = (0..=64)
                .rev()
                .find(|&i| input.is_char_boundary(i))
                .unwrap_or(0);
            return Err(bad(&input[..cut], "longer than 4096 bytes"));
        }
        if !is_uri(input) {
            return Err(bad(input, "does not start with pkcs11:"));
        }
        let body = &input[7..];
        let (path, query) = match body.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (body, None),
        };
        let mut u = Pkcs11Uri::default();
        for attr in path.split(';').filter(|a| !a.is_empty()) {
            let (k, v) = attr.split_once('=').ok_or_else(|| {
                bad(
                    input,
                    format!("path attribute {} has no '='", shown_attr(attr)),
                )
            })?;
            match k {
                "token" => set(input, &mut u.token, k, decode_str(input, k, v)?)?,
                "manufacturer" => set(input, &mut u.manufacturer, k, decode_str(input, k, v)?)?,
                "serial" => set(input, &mut u.serial, k, decode_str(input, k, v)?)?,
                "model" => set(input, &mut u.model, k, decode_str(input, k, v)?)?,
                "object" => set(input, &mut u.object, k, decode_str(input, k, v)?)?,
                "id" => set(input, &mut u.id, k, decode(input, v)?)?,
                "slot-id" => {
                    let n = decode_str(input, k, v)?
                        .parse::<u64>()
                        .map_err(|_| bad(input, "slot-id must be a decimal number"))?;
                    set(input, &mut u.slot_id, k, n)?
                }
                "type" => {
                    let t = ObjectType::parse(&decode_str(input, k, v)?).ok_or_else(|| {
                        bad(
                            input,
                            "type must be one of private, public, cert, secret-key, data",
                        )
                    })?;
                    set(input, &mut u.object_type, k, t)?
                }
                // Known RFC 7512 attributes this tool has no use for.
                "library-description"
                | "library-manufacturer"
                | "library-version"
                | "slot-description"
                | "slot-manufacturer" => {}
                _ if k.starts_with("x-") => {}
                _ => {
                    return Err(bad(
                        input,
                        format!(
                            "unknown path attribute {:?}",
                            k.escape_default().to_string()
                        ),
                    ))
                }
            }
        }
        if let Some(q) = query {
            for attr in q.split('&').filter(|a| !a.is_empty()) {
                let (k, v) = attr.split_once('=').ok_or_else(|| {
                    bad(
                        input,
                        format!("query attribute {} has no '='", shown_attr(attr)),
                    )
                })?;
                match k {
                    "module-path" => set(
                        input,
                        &mut u.module_path,
                        k,
                        PathBuf::from(decode_str(input, k, v)?),
                    )?,
                    "pin-source" => {
                        let s = decode_str(input, k, v)?;
                        let p = match s.strip_prefix("file:") {
                            // file:///abs/path and file:/abs/path
                            Some(rest) => rest.strip_prefix("//").unwrap_or(rest).to_string(),
                            None if s.contains(':') => {
                                return Err(bad(input, "pin-source must be file:PATH or a path"))
                            }
                            None => s,
                        };
                        set(input, &mut u.pin_source, k, PathBuf::from(p))?
                    }
                    "pin-value" => set(input, &mut u.pin_value, k, decode_str(input, k, v)?)?,
                    "module-name" => {}
                    _ if k.starts_with("x-") => {}
                    _ => {
                        return Err(bad(
                            input,
                            format!(
                                "unknown query attribute {:?}",
                                k.escape_default().to_string()
                            ),
                        ))
                    }
                }
            }
        }
        if u.pin_value.is_some() && u.pin_source.is_some() {
            return Err(bad(input, "give pin-value or pin-source, not both"));
        }
        if u.token.is_none()
            && u.serial.is_none()
            && u.slot_id.is_none()
            && u.object.is_none()
            && u.id.is_none()
        {
            return Err(bad(
                input,
                "names no token and no object (add token=LABEL;object=LABEL or id=%XX)",
            ));
        }
        Ok(u)
    }

    /// Whether the URI carries the PIN itself (`pin-value=`).
    pub fn has_pin_value(&self) -> bool {
        self.pin_value.is_some()
    }

    /// The same URI without `pin-value=` (what may be stored or shown).
    pub fn without_pin_value(&self) -> Self {
        Self {
            pin_value: None,
            ..self.clone()
        }
    }
}

/// Percent-encode a value for a URI: RFC 3986 unreserved characters stay as they are.
pub fn encode(v: &[u8]) -> String {
    let mut s = String::new();
    for &b in v {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

impl fmt::Display for Pkcs11Uri {
    /// The URI, normalised; `pin-value` is shown as `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut path = Vec::new();
        let mut text = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                path.push(format!("{k}={}", encode(v.as_bytes())));
            }
        };
        text("token", &self.token);
        text("manufacturer", &self.manufacturer);
        text("serial", &self.serial);
        text("model", &self.model);
        text("object", &self.object);
        if let Some(n) = self.slot_id {
            path.push(format!("slot-id={n}"));
        }
        if let Some(id) = &self.id {
            let hex: String = id.iter().map(|b| format!("%{b:02X}")).collect();
            path.push(format!("id={hex}"));
        }
        if let Some(t) = self.object_type {
            path.push(format!("type={}", t.name()));
        }
        write!(f, "pkcs11:{}", path.join(";"))?;
        let mut query = Vec::new();
        if let Some(m) = &self.module_path {
            query.push(format!(
                "module-path={}",
                encode(m.to_string_lossy().as_bytes()).replace("%2F", "/")
            ));
        }
        if let Some(p) = &self.pin_source {
            let p = encode(p.to_string_lossy().as_bytes()).replace("%2F", "/");
            // `file://` is read as an empty authority: a path that itself starts with
            // `//` keeps it only behind one.
            let authority = if p.starts_with("//") { "//" } else { "" };
            query.push(format!("pin-source=file:{authority}{p}"));
        }
        if self.pin_value.is_some() {
            query.push("pin-value=***".into());
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc7512_examples() {
        let u = Pkcs11Uri::parse(
            "pkcs11:token=The%20Software%20PKCS%2311%20Softtoken;object=my-key;id=%01%02;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin",
        )
        .unwrap();
        assert_eq!(u.token.as_deref(), Some("The Software PKCS#11 Softtoken"));
        assert_eq!(u.object.as_deref(), Some("my-key"));
        assert_eq!(u.id.as_deref(), Some(&[1u8, 2][..]));
        assert_eq!(u.object_type, Some(ObjectType::Private));
        assert_eq!(
            u.module_path.as_deref(),
            Some(std::path::Path::new("/usr/lib/softhsm/libsofthsm2.so"))
        );
        assert_eq!(
            u.pin_source.as_deref(),
            Some(std::path::Path::new("/run/pin"))
        );
        // Round trip through Display.
        assert_eq!(Pkcs11Uri::parse(&u.to_string()).unwrap(), u);
        let u = Pkcs11Uri::parse("PKCS11:object=a?pin-value=1234").unwrap();
        assert_eq!(u.pin_value.as_deref(), Some("1234"));
        assert!(!u.to_string().contains("1234"));
        assert!(!format!("{u:?}").contains("1234"));
    }

    #[test]
    fn malformed_uris_are_one_clear_error() {
        for (uri, why) in [
            ("pkcs11:", "names no token"),
            ("file:/x", "does not start with pkcs11:"),
            ("pkcs11:token=a%2", "two hexadecimal digits"),
            ("pkcs11:token=a%zz", "two hexadecimal digits"),
            ("pkcs11:token=a;token=b", "token appears twice"),
            ("pkcs11:tokn=a", "unknown path attribute"),
            ("pkcs11:token", "has no '='"),
            ("pkcs11:token=a?pin=1", "unknown query attribute"),
            ("pkcs11:token=a;type=secret", "type must be"),
            ("pkcs11:token=a?pin-source=http://x", "file:PATH"),
            ("pkcs11:token=a b", "%-encoded"),
        ] {
            let e = Pkcs11Uri::parse(uri).unwrap_err().to_string();
            assert!(e.contains(why), "{uri}: {e}");
        }
        // Over the length limit with a multi-byte character across byte 64: an error,
        // not a panic on a cut inside the character.
        let long = format!("pkcs11:token={}{}", "a".repeat(50), "é".repeat(3000));
        let e = Pkcs11Uri::parse(&long).unwrap_err().to_string();
        assert!(e.contains("longer than 4096"), "{e}");
        // A pin-source path starting with `//` survives Display and parse.
        let u = Pkcs11Uri::parse("pkcs11:token=a?pin-source=file:////run/pin").unwrap();
        assert_eq!(
            u.pin_source.as_deref(),
            Some(std::path::Path::new("//run/pin"))
        );
        assert_eq!(Pkcs11Uri::parse(&u.to_string()).unwrap(), u);
        let e = Pkcs11Uri::parse("pkcs11:tokn=a?pin-value=secret")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
