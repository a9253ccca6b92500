//! Distinguished names: parsing the strings users type and printing names found in
//! certificates.
//!
//! Input syntax is RFC 4514 (`CN=example.com,O=Example,C=SE`, most specific first, `\,`
//! and the other RFC 4514 escapes, `\XX` hex pairs), or OpenSSL's `-subj` form
//! (`/C=SE/O=Example/CN=example.com`). Values are written as UTF8String, except
//! countryName and serialNumber (PrintableString) and emailAddress/domainComponent
//! (IA5String), as RFC 5280 requires. Output uses the RFC 4514 order, so what `show`
//! prints can be given back to `--subject`.

use rcgen::{DistinguishedName, DnType, DnValue};
use x509_parser::x509::X509Name;

use crate::{PkiError, Result};

/// Known attribute types: (short names, OID, string kind).
const ATTRS: &[(&[&str], &[u64], Kind)] = &[
    (&["CN", "commonName"], &[2, 5, 4, 3], Kind::Utf8),
    (&["C", "countryName"], &[2, 5, 4, 6], Kind::Country),
    (&["L", "localityName"], &[2, 5, 4, 7], Kind::Utf8),
    (
        &["ST", "S", "stateOrProvinceName"],
        &[2, 5, 4, 8],
        Kind::Utf8,
    ),
    (&["street", "streetAddress"], &[2, 5, 4, 9], Kind::Utf8),
    (&["O", "organizationName"], &[2, 5, 4, 10], Kind::Utf8),
    (
        &["OU", "organizationalUnitName"],
        &[2, 5, 4, 11],
        Kind::Utf8,
    ),
    (&["title"], &[2, 5, 4, 12], Kind::Utf8),
    (&["SN", "surname"], &[2, 5, 4, 4], Kind::Utf8),
    (&["serialNumber"], &[2, 5, 4, 5], Kind::Printable),
    (&["postalCode"], &[2, 5, 4, 17], Kind::Utf8),
    (&["GN", "givenName"], &[2, 5, 4, 42], Kind::Utf8),
    (&["organizationIdentifier"], &[2, 5, 4, 97], Kind::Utf8),
    (
        &["DC", "domainComponent"],
        &[0, 9, 2342, 19200300, 100, 1, 25],
        Kind::Ia5,
    ),
    (
        &["UID", "userId"],
        &[0, 9, 2342, 19200300, 100, 1, 1],
        Kind::Utf8,
    ),
    (
        &["emailAddress", "E"],
        &[1, 2, 840, 113549, 1, 9, 1],
        Kind::Ia5,
    ),
];

#[derive(Clone, Copy)]
enum Kind {
    Utf8,
    Country,
    Printable,
    Ia5,
}

/// Why a distinguished name (typed by a user, or found in a request) was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DnProblem {
    /// Nothing was given.
    #[error("the DN is empty")]
    Empty,
    /// A `\` at the very end.
    #[error("it ends with a lone backslash")]
    LoneBackslash,
    /// An empty RDN between two separators.
    #[error("empty component #{position} (a stray or doubled '{separator}'?)")]
    EmptyComponent {
        /// Which component, from 1.
        position: usize,
        /// The separator (`,` or `/`).
        separator: char,
    },
    /// An RDN without `=` (as given, trimmed).
    #[error("{0:?} has no '=' (expected TYPE=value)")]
    NoEquals(String),
    /// An RDN with an unescaped `+` (as given, trimmed).
    #[error("{0:?}: multi-valued RDNs ('+') are not supported; escape a literal plus as \\+")]
    MultiValued(String),
    /// An attribute type tlskit does not know.
    #[error(
        "unknown attribute type {0:?} (known: CN, O, OU, C, ST, L, street, serialNumber, DC, \
         emailAddress, ...)"
    )]
    UnknownType(String),
    /// An attribute (its short name) with an empty value.
    #[error("{0} has an empty value")]
    EmptyValue(&'static str),
    /// An attribute (its short name) whose value holds a control character.
    #[error("{0} contains a control character")]
    ControlChar(&'static str),
    /// A CN over 64 characters.
    #[error("CN is longer than 64 characters (RFC 5280 ub-common-name)")]
    CnTooLong,
    /// A countryName that is not two letters.
    #[error("C must be a two-letter ISO 3166 country code, not {0:?}")]
    BadCountry(String),
    /// A countryName that is not a PrintableString.
    #[error("C is not printable")]
    CountryNotPrintable,
    /// A PrintableString attribute (its short name) with other characters.
    #[error("{0} allows only A-Z a-z 0-9 space and '()+,-./:=?")]
    NotPrintable(&'static str),
    /// An IA5String attribute (its short name) that is not ASCII.
    #[error("{0} must be ASCII")]
    NotAscii(&'static str),
    /// An attribute type (its short name) given twice.
    #[error("{0} appears twice (repeated attributes are not supported)")]
    Repeated(&'static str),
    /// `\` and one hex digit.
    #[error("bad escape \\{0}: expected two hex digits")]
    BadHexEscape(char),
    /// `\` and a character that needs no escape.
    #[error("bad escape \\{0}")]
    BadEscape(char),
    /// `\XX` escapes that are not UTF-8.
    #[error("hex escapes do not form valid UTF-8")]
    NotUtf8,
    /// A request's subject attribute type OID with an arc too large.
    #[error("attribute type OID too large")]
    OidTooLarge,
    /// A request's subject repeats an attribute type (its short name or OID).
    #[error("the subject repeats attribute {0} (not supported)")]
    RequestRepeats(String),
    /// A request's subject attribute (its short name or OID) that is not a string.
    #[error("subject attribute {0} is not a string")]
    NotAString(String),
    /// rcgen refused a request's subject string.
    #[error("{0}")]
    Rcgen(#[source] rcgen::Error),
}

/// Parse a DN string into rcgen's form.
pub fn parse(input: &str) -> Result<DistinguishedName> {
    let err = |reason: DnProblem| PkiError::Dn {
        input: input.to_string(),
        reason,
    };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(err(DnProblem::Empty));
    }
    let (rdns, reverse) = if let Some(rest) = trimmed.strip_prefix('/') {
        (split_unescaped(rest, '/').map_err(&err)?, false)
    } else {
        (split_unescaped(trimmed, ',').map_err(&err)?, true)
    };
    let mut entries = Vec::new();
    for rdn in &rdns {
        entries.push(parse_rdn(rdn).map_err(&err)?);
    }
    if reverse {
        entries.reverse();
    }
    let mut dn = DistinguishedName::new();
    let mut seen: Vec<&[u64]> = Vec::new();
    for (idx, value) in entries {
        let (names, oid, _) = ATTRS[idx];
        if seen.contains(&oid) {
            return Err(err(DnProblem::Repeated(names[0])));
        }
        seen.push(oid);
        dn.push(DnType::from_oid(oid), value);
    }
    Ok(dn)
}

/// Split on unescaped `sep`, keeping escapes for the next stage.
fn split_unescaped(s: &str, sep: char) -> Result<Vec<String>, DnProblem> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(n) = chars.next() else {
                return Err(DnProblem::LoneBackslash);
            };
            cur.push('\\');
            cur.push(n);
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    if let Some(pos) = out.iter().position(|p| p.trim().is_empty()) {
        return Err(DnProblem::EmptyComponent {
            position: pos + 1,
            separator: sep,
        });
    }
    Ok(out)
}

fn parse_rdn(rdn: &str) -> Result<(usize, DnValue), DnProblem> {
    let Some(eq) = find_unescaped(rdn, '=') else {
        return Err(DnProblem::NoEquals(rdn.trim().to_string()));
    };
    let ty = rdn[..eq].trim();
    let raw = &rdn[eq + 1..];
    if find_unescaped(rdn, '+').is_some() {
        return Err(DnProblem::MultiValued(rdn.trim().to_string()));
    }
    let idx = ATTRS
        .iter()
        .position(|(names, _, _)| names.iter().any(|n| n.eq_ignore_ascii_case(ty)))
        .ok_or_else(|| DnProblem::UnknownType(ty.to_string()))?;
    let value = unescape(raw)?;
    let value = value.trim().to_string();
    let name = ATTRS[idx].0[0];
    if value.is_empty() {
        return Err(DnProblem::EmptyValue(name));
    }
    if value.chars().any(char::is_control) {
        return Err(DnProblem::ControlChar(name));
    }
    let dv = match ATTRS[idx].2 {
        Kind::Utf8 => {
            if name == "CN" && value.chars().count() > 64 {
                return Err(DnProblem::CnTooLong);
            }
            DnValue::Utf8String(value)
        }
        Kind::Country => {
            if value.len() != 2 || !value.chars().all(|c| c.is_ascii_alphabetic()) {
                return Err(DnProblem::BadCountry(value));
            }
            let v = rcgen::string::PrintableString::try_from(value.to_ascii_uppercase())
                .map_err(|_| DnProblem::CountryNotPrintable)?;
            DnValue::PrintableString(v)
        }
        Kind::Printable => DnValue::PrintableString(
            rcgen::string::PrintableString::try_from(value.clone())
                .map_err(|_| DnProblem::NotPrintable(name))?,
        ),
        Kind::Ia5 => DnValue::Ia5String(
            rcgen::string::Ia5String::try_from(value.clone())
                .map_err(|_| DnProblem::NotAscii(name))?,
        ),
    };
    Ok((idx, dv))
}

fn find_unescaped(s: &str, c: char) -> Option<usize> {
    let mut esc = false;
    for (i, ch) in s.char_indices() {
        if esc {
            esc = false;
        } else if ch == '\\' {
            esc = true;
        } else if ch == c {
            return Some(i);
        }
    }
    None
}

/// Resolve RFC 4514 escapes: `\` + special character, or `\XX` hex bytes (UTF-8).
fn unescape(s: &str) -> Result<String, DnProblem> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(n) = chars.next() else {
            return Err(DnProblem::LoneBackslash);
        };
        if n.is_ascii_hexdigit() {
            let Some(m) = chars.next().filter(char::is_ascii_hexdigit) else {
                return Err(DnProblem::BadHexEscape(n));
            };
            let hex = format!("{n}{m}");
            // Two ASCII hex digits always parse as a byte.
            bytes.push(u8::from_str_radix(&hex, 16).unwrap_or_default());
        } else if ",+\"\\<>;=# /".contains(n) {
            bytes.push(n as u8);
        } else {
            return Err(DnProblem::BadEscape(n));
        }
    }
    String::from_utf8(bytes).map_err(|_| DnProblem::NotUtf8)
}

fn short_name(oid: &x509_parser::der_parser::oid::Oid<'_>) -> String {
    let comps: Option<Vec<u64>> = oid.iter().map(|i| i.collect());
    if let Some(comps) = comps {
        if let Some((names, _, _)) = ATTRS.iter().find(|(_, o, _)| *o == comps.as_slice()) {
            return names[0].to_string();
        }
    }
    oid.to_id_string()
}

/// Print a name from a certificate in RFC 4514 form (most specific first): the
/// workspace's one renderer, [`tlskit_x509::dn::rfc4514`].
pub fn display(name: &X509Name<'_>) -> String {
    tlskit_x509::dn::rfc4514(name)
}

/// The first commonName of a name, if any.
pub fn common_name(name: &X509Name<'_>) -> Option<String> {
    name.iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string)
}

/// Convert a name parsed from a request into rcgen's form, keeping the string types.
pub(crate) fn from_x509(name: &X509Name<'_>) -> Result<DistinguishedName, DnProblem> {
    use x509_parser::der_parser::asn1_rs::Tag;
    let mut dn = DistinguishedName::new();
    let mut seen = Vec::new();
    for atv in name.iter_attributes() {
        let comps: Vec<u64> = atv
            .attr_type()
            .iter()
            .ok_or(DnProblem::OidTooLarge)?
            .collect();
        if seen.contains(&comps) {
            return Err(DnProblem::RequestRepeats(short_name(atv.attr_type())));
        }
        let s = atv
            .as_str()
            .map_err(|_| DnProblem::NotAString(short_name(atv.attr_type())))?
            .to_string();
        let value = match atv.attr_value().tag() {
            Tag::PrintableString => DnValue::PrintableString(
                rcgen::string::PrintableString::try_from(s).map_err(DnProblem::Rcgen)?,
            ),
            Tag::Ia5String => {
                DnValue::Ia5String(rcgen::string::Ia5String::try_from(s).map_err(DnProblem::Rcgen)?)
            }
            _ => DnValue::Utf8String(s),
        };
        dn.push(DnType::from_oid(&comps), value);
        seen.push(comps);
    }
    Ok(dn)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pairs(dn: &DistinguishedName) -> Vec<(DnType, String)> {
        dn.iter()
            .map(|(t, v)| {
                let s = match v {
                    DnValue::Utf8String(s) => s.clone(),
                    DnValue::PrintableString(p) => p.as_str().to_string(),
                    DnValue::Ia5String(p) => p.as_str().to_string(),
                    other => format!("{other:?}"),
                };
                (t.clone(), s)
            })
            .collect()
    }

    #[test]
    fn rfc4514_order_and_escapes() {
        let dn = parse(r"CN=example.com,O=Example\, Inc.,C=se").unwrap();
        assert_eq!(
            pairs(&dn),
            vec![
                (DnType::CountryName, "SE".into()),
                (DnType::OrganizationName, "Example, Inc.".into()),
                (DnType::CommonName, "example.com".into()),
            ]
        );
        let dn = parse(r"CN=a\2Cb\c3\a5").unwrap();
        assert_eq!(pairs(&dn)[0].1, "a,bå");
    }

    #[test]
    fn openssl_form_and_utf8() {
        let dn = parse("/C=SE/O=Räksmörgås AB/CN=x").unwrap();
        assert!(matches!(
            dn.get(&DnType::OrganizationName),
            Some(DnValue::Utf8String(s)) if s == "Räksmörgås AB"
        ));
        assert_eq!(pairs(&dn)[0].0, DnType::CountryName);
    }

    #[test]
    fn malformed_dns_name_the_problem() {
        for (input, needle) in [
            ("", "empty"),
            ("CN", "no '='"),
            ("CN=a,,O=b", "empty component"),
            ("XX=a", "unknown attribute"),
            ("CN=", "empty value"),
            ("C=Sweden", "two-letter"),
            ("CN=a+O=b", "multi-valued"),
            ("CN=a\\", "backslash"),
            ("CN=a,CN=b", "twice"),
            ("CN=a\\zz", "bad escape"),
        ] {
            let e = parse(input).unwrap_err().to_string();
            assert!(e.contains(needle), "{input:?}: {e}");
        }
    }
}
