//! The one distinguished-name renderer of the workspace: RFC 4514 strings, most specific
//! RDN first (`CN=www.example.com,O=Example,C=SE`), multi-valued RDNs joined by `+`.
//!
//! Every crate prints names through [`rfc4514`] (store lint, `tlskit show`, verified chains,
//! `connect`/`probe` chains), so a name reads the same in every command. Values come from
//! certificates and are hostile: besides RFC 4514's special characters, control
//! characters (C0, DEL, C1) are written as `\XX` hex escapes, so a name never carries
//! ESC or BEL to a terminal or a log line. A value that is not a string is `#` and the hex
//! of its content octets.

use x509_parser::der_parser::oid::Oid;
use x509_parser::prelude::FromDer;
use x509_parser::x509::X509Name;

/// Short names (RFC 4514 section 3, then other registered descriptors); other attribute
/// types are printed as dotted OIDs.
const SHORT: &[(&[u64], &str)] = &[
    (&[2, 5, 4, 3], "CN"),
    (&[2, 5, 4, 7], "L"),
    (&[2, 5, 4, 8], "ST"),
    (&[2, 5, 4, 10], "O"),
    (&[2, 5, 4, 11], "OU"),
    (&[2, 5, 4, 6], "C"),
    (&[2, 5, 4, 9], "STREET"),
    (&[0, 9, 2342, 19200300, 100, 1, 25], "DC"),
    (&[0, 9, 2342, 19200300, 100, 1, 1], "UID"),
    (&[2, 5, 4, 4], "SN"),
    (&[2, 5, 4, 5], "serialNumber"),
    (&[2, 5, 4, 12], "title"),
    (&[2, 5, 4, 17], "postalCode"),
    (&[2, 5, 4, 42], "GN"),
    (&[2, 5, 4, 97], "organizationIdentifier"),
    (&[1, 2, 840, 113549, 1, 9, 1], "emailAddress"),
];

fn attribute_type(oid: &Oid<'_>) -> String {
    let comps: Option<Vec<u64>> = oid.iter().map(|i| i.collect());
    if let Some(c) = comps {
        if let Some((_, name)) = SHORT.iter().find(|(o, _)| *o == c.as_slice()) {
            return (*name).to_string();
        }
    }
    oid.to_id_string()
}

/// Escape one attribute value for an RFC 4514 string.
fn escape_value(s: &str, out: &mut String) {
    let n = s.chars().count();
    for (i, c) in s.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == n && c == ' ');
        // Controls and bidi overrides as RFC 4514 hex pairs (the one set `text::escape`
        // shows escaped too), so that a rendered name is safe on any terminal.
        if c.is_control() || crate::text::needs_escape(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\{b:02X}"));
            }
        } else {
            if special {
                out.push('\\');
            }
            out.push(c);
        }
    }
}

/// A parsed name as an RFC 4514 string (empty for an empty name).
pub fn rfc4514(name: &X509Name<'_>) -> String {
    let mut rdns: Vec<String> = Vec::new();
    for rdn in name.iter() {
        let mut text = String::new();
        for (i, atv) in rdn.iter().enumerate() {
            if i > 0 {
                text.push('+');
            }
            text.push_str(&attribute_type(atv.attr_type()));
            text.push('=');
            match atv.as_str() {
                Ok(s) => escape_value(s, &mut text),
                Err(_) => {
                    text.push('#');
                    text.push_str(&crate::text::hex(atv.attr_value().data));
                }
            }
        }
        rdns.push(text);
    }
    rdns.reverse();
    rdns.join(",")
}

/// A DER-encoded name for people: RFC 4514 (`CN=...,O=...`), `(empty name)` for an empty
/// name, `(unparsable name)` when it does not parse. The one public name of the one name
/// renderer every crate prints through.
pub fn display(name_der: &[u8]) -> String {
    match rfc4514_der(name_der) {
        Some(s) if s.is_empty() => "(empty name)".into(),
        Some(s) => s,
        None => "(unparsable name)".into(),
    }
}

/// A DER-encoded name as an RFC 4514 string; `None` when it does not parse.
pub fn rfc4514_der(name_der: &[u8]) -> Option<String> {
    X509Name::from_der(name_der).ok().map(|(_, n)| rfc4514(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(dn: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        let mut d = rcgen::DistinguishedName::new();
        for (t, v) in dn {
            d.push(t.clone(), *v);
        }
        p.distinguished_name = d;
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = p.self_signed(&key).expect("cert");
        let (_, c) = x509_parser::parse_x509_certificate(cert.der()).expect("parse");
        c.subject().as_raw().to_vec()
    }

    #[test]
    fn most_specific_first_no_spaces() {
        use rcgen::DnType::*;
        let der = name(&[
            (CountryName, "SE"),
            (OrganizationName, "Example"),
            (CommonName, "www.example.com"),
        ]);
        assert_eq!(
            rfc4514_der(&der).as_deref(),
            Some("CN=www.example.com,O=Example,C=SE")
        );
    }

    #[test]
    fn specials_and_control_characters_are_escaped() {
        use rcgen::DnType::*;
        let der = name(&[
            (OrganizationName, "A, B+C"),
            (CommonName, " x\u{1b}[31m\u{7}=y "),
        ]);
        assert_eq!(
            rfc4514_der(&der).as_deref(),
            Some("CN=\\ x\\1B[31m\\07\\=y\\ ,O=A\\, B\\+C")
        );
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(rfc4514_der(b"\x30\x05\x31"), None);
    }
}
