#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;
use std::net::IpAddr;

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

/// A reference name after validation: either a DNS name in A-label form or an IP address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReferenceName {
    /// A DNS name (possibly with a leading `*.` wildcard label), lower-case A-labels.
    Dns(DnsName),
    /// An IPv4 or IPv6 address.
    Ip(IpAddr),
}

impl ReferenceName {
    /// Parse a name a user typed: an IP address if it is one, a DNS name otherwise.
    pub fn parse(input: &str) -> Result<Self, NameError> {
        if let Some(ip) = parse_ip(input) {
            return Ok(Self::Ip(ip));
        }
        DnsName::parse(input).map(Self::Dns)
    }
}

impl ReferenceName {
    /// The name as rustls and rustls-webpki take it (DNS names in A-label form).
    ///
    /// Fails only for a wildcard reference name (`*.example.com`), which can be written
    /// into a certificate but never be matched against one.
    pub fn to_server_name(&self) -> Result<rustls_pki_types::ServerName<'static>, NameError> {
        match self {
            Self::Ip(ip) => Ok(rustls_pki_types::ServerName::IpAddress((*ip).into())),
            Self::Dns(d) => {
                let bad = || NameError {
                    input: d.ascii.clone(),
                    kind: NameErrorKind::BadWildcard,
                };
                if d.is_wildcard() {
                    return Err(bad());
                }
                rustls_pki_types::DnsName::try_from(d.ascii.clone())
                    .map(rustls_pki_types::ServerName::DnsName)
                    .map_err(|_| bad())
            }
        }
    }
}

impl fmt::Display for ReferenceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dns(d) => f.write_str(d.ascii()),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A validated DNS name in A-label form, with its Unicode form kept for display.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DnsName {
    ascii: String,
    unicode: String,
}

impl DnsName {
    /// Convert `input` (U-labels, A-labels or a mix) to A-labels by UTS #46.
    ///
    /// A leading `*.` wildcard label is kept as it is and the rest is converted.
    /// A single trailing dot (the DNS root) is removed.
    pub fn parse(input: &str) -> Result<Self, NameError> {
        let err = |kind| NameError {
            input: input.to_string(),
            kind,
        };
        if input.is_empty() {
            return Err(err(NameErrorKind::Empty));
        }
        if let Some(kind) = control_char(input) {
            return Err(err(kind));
        }
        if let Some(ch) = input.chars().find(|&c| is_hidden_dot(c)) {
            return Err(err(NameErrorKind::DotLookalike(ch)));
        }
        let (wildcard, rest) = match input.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, input),
        };
        let rest = strip_root_dot(rest);
        if rest.is_empty() {
            return Err(err(NameErrorKind::Empty));
        }
        let ascii = Uts46::new()
            .to_ascii(
                rest.as_bytes(),
                AsciiDenyList::STD3,
                Hyphens::Check,
                DnsLength::Verify,
            )
            .map_err(|_| err(diagnose(rest)))?
            .into_owned();
        if ascii.contains('*') {
            return Err(err(NameErrorKind::BadWildcard));
        }
        let (unicode, _) =
            Uts46::new().to_unicode(ascii.as_bytes(), AsciiDenyList::STD3, Hyphens::Check);
        let prefix = if wildcard { "*." } else { "" };
        Ok(Self {
            ascii: format!("{prefix}{ascii}"),
            unicode: format!("{prefix}{unicode}"),
        })
    }

    /// The A-label form, as it goes on the wire and into certificates.
    pub fn ascii(&self) -> &str {
        &self.ascii
    }

    /// The U-label form, for display.
    pub fn unicode(&self) -> &str {
        &self.unicode
    }

    /// Whether the first label is the wildcard `*`.
    pub fn is_wildcard(&self) -> bool {
        self.ascii.starts_with("*.")
    }
}

impl fmt::Display for DnsName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.ascii)
    }
}

/// Check a DNS name found in a certificate (already ASCII): every `xn--` label must
/// decode to valid U-labels and encode back to itself. Returns the Unicode form.
pub fn check_presented_dns(name: &str) -> Result<String, NameError> {
    let err = |kind| NameError {
        input: name.to_string(),
        kind,
    };
    if let Some(kind) = control_char(name) {
        return Err(err(kind));
    }
    if !name.is_ascii() {
        return Err(err(NameErrorKind::NotAscii));
    }
    let body = name.strip_prefix("*.").unwrap_or(name);
    let (unicode, result) =
        Uts46::new().to_unicode(body.as_bytes(), AsciiDenyList::STD3, Hyphens::Check);
    if result.is_err() {
        return Err(err(NameErrorKind::MalformedALabel));
    }
    // Round trip: the A-labels must be exactly what UTS #46 produces from the U-labels.
    let back = Uts46::new()
        .to_ascii(
            unicode.as_bytes(),
            AsciiDenyList::STD3,
            Hyphens::Check,
            DnsLength::Verify,
        )
        .map_err(|_| err(NameErrorKind::MalformedALabel))?;
    if !back.eq_ignore_ascii_case(body) {
        return Err(err(NameErrorKind::MalformedALabel));
    }
    let prefix = if body.len() != name.len() { "*." } else { "" };
    Ok(format!("{prefix}{unicode}"))
}

/// The first control character (C0, DEL, C1) of a name, with its byte offset: said as
/// such rather than as whatever UTS #46 makes of it ("not valid Punycode").
fn control_char(name: &str) -> Option<NameErrorKind> {
    name.char_indices()
        .find(|(_, c)| c.is_control())
        .map(|(at, ch)| NameErrorKind::ControlChar { ch, at })
}

/// Parse an IP address literal (IPv6 may be bracketed).
pub fn parse_ip(input: &str) -> Option<IpAddr> {
    let trimmed = input
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(input);
    trimmed.parse().ok()
}

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameError {
    /// The name as given.
    pub input: String,
    /// The reason.
    pub kind: NameErrorKind,
}

/// The reasons a name is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameErrorKind {
    /// The name is empty.
    Empty,
    /// A character that looks like (or maps to) a full stop but is not a label separator.
    DotLookalike(char),
    /// A character UTS #46 disallows (with STD3 rules: spaces, `_`, symbols, ...).
    Disallowed(char),
    /// An empty label (`a..b`) or a label/name over the DNS length limits.
    Length,
    /// A label starting or ending with a hyphen, or with `--` in positions 3-4 that is not `xn--`.
    Hyphen,
    /// A `*` anywhere but as the whole first label.
    BadWildcard,
    /// An `xn--` label that is not valid Punycode of a valid U-label.
    MalformedALabel,
    /// A name in a certificate that is not ASCII.
    NotAscii,
    /// UTS #46 processing failed for another reason (bidi or joiner rules, ...).
    Invalid,
    /// A control character (C0, DEL or C1), at byte offset `at` of the name.
    ControlChar {
        /// The character.
        ch: char,
        /// Its byte offset in the name.
        at: usize,
    },
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid name {:?}: ", self.input)?;
        match &self.kind {
            NameErrorKind::Empty => f.write_str("the name is empty"),
            NameErrorKind::DotLookalike(c) => write!(
                f,
                "it contains U+{:04X} {}, which looks like a full stop but is not a label \
                 separator: the name would be one label, not the labels it appears to have; \
                 use a real full stop (U+002E) if you meant separate labels",
                *c as u32,
                char_name(*c)
            ),
            NameErrorKind::Disallowed(c) => write!(
                f,
                "U+{:04X} {:?} is not allowed in a host name (UTS #46 with STD3 rules)",
                *c as u32, c
            ),
            NameErrorKind::Length => {
                f.write_str("empty label, or a label over 63 bytes, or a name over 253 bytes")
            }
            NameErrorKind::Hyphen => f.write_str(
                "a label starts or ends with a hyphen, or has \"--\" in positions 3 and 4",
            ),
            NameErrorKind::BadWildcard => {
                f.write_str("a wildcard may only be the whole first label (\"*.example.com\")")
            }
            NameErrorKind::MalformedALabel => {
                f.write_str("an xn-- label is not valid Punycode of a valid Unicode label")
            }
            NameErrorKind::NotAscii => f.write_str("names in certificates must be A-labels"),
            NameErrorKind::Invalid => f.write_str("rejected by UTS #46 processing"),
            NameErrorKind::ControlChar { ch, at } => write!(
                f,
                "contains control character U+{:04X} at byte {at}",
                *ch as u32
            ),
        }
    }
}

impl std::error::Error for NameError {}

/// The characters UTS #46 maps to (or treats as) a label separator.
fn is_separator(c: char) -> bool {
    matches!(c, '.' | '\u{3002}' | '\u{FF0E}' | '\u{FF61}')
}

/// Characters that look like a full stop (or carry one) but are not label separators.
/// UTS #46 disallows most of them; tlskit names them so the user learns *why*.
fn is_hidden_dot(c: char) -> bool {
    matches!(
        c,
        '\u{2024}' // ONE DOT LEADER
            | '\u{2025}' // TWO DOT LEADER
            | '\u{2026}' // HORIZONTAL ELLIPSIS
            | '\u{FE52}' // SMALL FULL STOP
            | '\u{FE12}' // PRESENTATION FORM FOR VERTICAL IDEOGRAPHIC FULL STOP
            | '\u{2488}'..='\u{249B}' // DIGIT ONE FULL STOP .. NUMBER TWENTY FULL STOP
            | '\u{1F100}'..='\u{1F10A}' // DIGIT ZERO FULL STOP ..
            | '\u{06D4}' // ARABIC FULL STOP
            | '\u{0701}' // SYRIAC SUPRALINEAR FULL STOP
            | '\u{0702}' // SYRIAC SUBLINEAR FULL STOP
            | '\u{A4FF}' // LISU PUNCTUATION FULL STOP
            | '\u{A60E}' // VAI FULL STOP
            | '\u{2E3C}' // STENOGRAPHIC FULL STOP
    )
}

fn strip_root_dot(s: &str) -> &str {
    for sep in ['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'] {
        if let Some(stripped) = s.strip_suffix(sep) {
            return stripped;
        }
    }
    s
}

/// Find the most useful reason for a UTS #46 failure.
fn diagnose(name: &str) -> NameErrorKind {
    let uts = Uts46::new();
    for c in name.chars() {
        if is_separator(c) {
            continue;
        }
        let mut buf = [0u8; 4];
        let s = c.encode_utf8(&mut buf);
        if c == '*' {
            return NameErrorKind::BadWildcard;
        }
        if uts
            .to_ascii(
                s.as_bytes(),
                AsciiDenyList::STD3,
                Hyphens::Allow,
                DnsLength::Ignore,
            )
            .is_err()
        {
            return NameErrorKind::Disallowed(c);
        }
    }
    let labels: Vec<&str> = name.split(is_separator).collect();
    if labels.iter().any(|l| l.is_empty() || l.len() > 63) || name.len() > 253 {
        return NameErrorKind::Length;
    }
    if labels.iter().any(|l| {
        l.starts_with('-')
            || l.ends_with('-')
            || (l.len() >= 4 && &l.as_bytes()[2..4] == b"--" && !l.starts_with("xn--"))
    }) {
        return NameErrorKind::Hyphen;
    }
    if labels.iter().any(|l| l.starts_with("xn--")) {
        return NameErrorKind::MalformedALabel;
    }
    // Labels may pass one by one and still fail together (for example, once converted
    // to A-labels the name exceeds 253 bytes).
    if uts
        .to_ascii(
            name.as_bytes(),
            AsciiDenyList::STD3,
            Hyphens::Check,
            DnsLength::Ignore,
        )
        .is_ok()
    {
        return NameErrorKind::Length;
    }
    NameErrorKind::Invalid
}

fn char_name(c: char) -> &'static str {
    match c {
        '\u{2024}' => "ONE DOT LEADER",
        '\u{FE52}' => "SMALL FULL STOP",
        '\u{2025}' => "TWO DOT LEADER",
        '\u{2026}' => "HORIZONTAL ELLIPSIS",
        '\u{FE12}' => "PRESENTATION FORM FOR VERTICAL IDEOGRAPHIC FULL STOP",
        '\u{2488}'..='\u{249B}' | '\u{1F100}'..='\u{1F10A}' => "NUMBER FULL STOP",
        '\u{06D4}' => "ARABIC FULL STOP",
        '\u{0701}' | '\u{0702}' => "SYRIAC FULL STOP",
        '\u{A4FF}' => "LISU PUNCTUATION FULL STOP",
        '\u{A60E}' => "VAI FULL STOP",
        '\u{2E3C}' => "STENOGRAPHIC FULL STOP",
        _ => "(a full-stop lookalike)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ascii(s: &str) -> String {
        DnsName::parse(s)
            .map(|n| n.ascii().to_string())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn ideographic_full_stop_separates_labels() {
        assert_eq!(ascii("räksmörgås\u{3002}com"), "xn--rksmrgs-5wao1o.com");
        assert_eq!(ascii("räksmörgås\u{FF0E}com"), "xn--rksmrgs-5wao1o.com");
        assert_eq!(ascii("räksmörgås\u{FF61}com"), "xn--rksmrgs-5wao1o.com");
        assert_eq!(
            DnsName::parse("räksmörgås.com").map(|n| n.unicode().to_string()),
            Ok("räksmörgås.com".into())
        );
    }

    #[test]
    fn one_dot_leader_is_refused_and_named() {
        let e = DnsName::parse("a\u{2024}com").expect_err("U+2024 must be refused");
        assert_eq!(e.kind, NameErrorKind::DotLookalike('\u{2024}'));
        let msg = e.to_string();
        assert!(
            msg.contains("U+2024") && msg.contains("ONE DOT LEADER"),
            "{msg}"
        );
        assert!(matches!(
            DnsName::parse("example\u{FE52}com").map_err(|e| e.kind),
            Err(NameErrorKind::DotLookalike('\u{FE52}'))
        ));
    }

    #[test]
    fn wildcards_and_case() {
        assert_eq!(ascii("*.Example.COM"), "*.example.com");
        assert_eq!(ascii("*.bücher.example"), "*.xn--bcher-kva.example");
        assert_eq!(ascii("example.com."), "example.com");
        assert!(DnsName::parse("a*.example.com").is_err());
        assert!(DnsName::parse("*.*.example.com").is_err());
        assert!(DnsName::parse("*").is_err());
    }

    #[test]
    fn bad_names() {
        assert!(matches!(
            DnsName::parse("").map_err(|e| e.kind),
            Err(NameErrorKind::Empty)
        ));
        assert!(matches!(
            DnsName::parse("a..b").map_err(|e| e.kind),
            Err(NameErrorKind::Length)
        ));
        assert!(matches!(
            DnsName::parse("-a.com").map_err(|e| e.kind),
            Err(NameErrorKind::Hyphen)
        ));
        assert!(matches!(
            DnsName::parse("a_b.com").map_err(|e| e.kind),
            Err(NameErrorKind::Disallowed('_'))
        ));
        assert!(matches!(
            DnsName::parse("a b.com").map_err(|e| e.kind),
            Err(NameErrorKind::Disallowed(' '))
        ));
        assert!(DnsName::parse(&"a".repeat(64)).is_err());
        assert!(matches!(
            DnsName::parse("xn--zz.com").map_err(|e| e.kind),
            Err(NameErrorKind::MalformedALabel)
        ));
    }

    #[test]
    fn ip_addresses() {
        assert_eq!(
            ReferenceName::parse("192.0.2.1"),
            Ok(ReferenceName::Ip("192.0.2.1".parse().expect("literal")))
        );
        assert_eq!(
            ReferenceName::parse("[::1]"),
            Ok(ReferenceName::Ip("::1".parse().expect("literal")))
        );
        assert!(matches!(
            ReferenceName::parse("example.com"),
            Ok(ReferenceName::Dns(_))
        ));
    }

    #[test]
    fn presented_a_labels() {
        assert_eq!(
            check_presented_dns("xn--rksmrgs-5wao1o.com"),
            Ok("räksmörgås.com".into())
        );
        assert_eq!(
            check_presented_dns("*.example.com"),
            Ok("*.example.com".into())
        );
        assert!(check_presented_dns("xn--zz.com").is_err());
        assert!(check_presented_dns("xn--Rksmrgs-5wao1o.com").is_ok());
    }

    #[test]
    fn control_characters_are_named_with_their_offset() {
        let e = check_presented_dns("a\x1bb.example").expect_err("ESC refused");
        assert_eq!(e.kind, NameErrorKind::ControlChar { ch: '\x1b', at: 1 });
        let msg = e.to_string();
        assert!(msg.contains("control character U+001B at byte 1"), "{msg}");
        assert!(!msg.contains("Punycode") && !msg.contains('\x1b'), "{msg}");
        let e = DnsName::parse("ok.\u{85}x").expect_err("NEL refused");
        assert_eq!(
            e.kind,
            NameErrorKind::ControlChar {
                ch: '\u{85}',
                at: 3
            }
        );
    }
}
