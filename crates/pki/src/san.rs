//! subjectAltName values given on the command line: `dns:NAME`, `ip:ADDR`,
//! `email:ADDR` (or a bare name/address). DNS names go through
//! [`tlskit_names::DnsName::parse`], so U-labels become A-labels by UTS #46 and
//! dot lookalikes such as U+2024 are refused by name.

use rcgen::string::Ia5String;
use rcgen::SanType;
use tlskit_names::DnsName;

use crate::{PkiError, Result};

/// Parse one `--san` value.
pub fn parse(input: &str) -> Result<SanType> {
    let err = |reason: String| PkiError::San {
        input: input.to_string(),
        reason,
    };
    let (kind, value) = match input.split_once(':') {
        Some((k, v)) if ["dns", "ip", "email"].contains(&k.to_ascii_lowercase().as_str()) => {
            (k.to_ascii_lowercase(), v)
        }
        // A bare value: an IP address if it is one, a DNS name otherwise.
        _ if tlskit_names::parse_ip(input).is_some() => ("ip".to_string(), input),
        Some((k, _)) if !k.contains('.') && !k.contains('[') => {
            return Err(err(format!(
                "unknown SAN type {k:?} (use dns:NAME, ip:ADDR or email:ADDR)"
            )))
        }
        _ => ("dns".to_string(), input),
    };
    match kind.as_str() {
        "dns" => {
            let name = DnsName::parse(value).map_err(PkiError::san_refused(input))?;
            Ia5String::try_from(name.ascii())
                .map(SanType::DnsName)
                .map_err(PkiError::san_refused(input))
        }
        "ip" => tlskit_names::parse_ip(value)
            .map(SanType::IpAddress)
            .ok_or_else(|| err(format!("{value:?} is not an IP address"))),
        _ => {
            let Some((local, domain)) = value.rsplit_once('@') else {
                return Err(err("an email address needs a '@'".into()));
            };
            if local.is_empty()
                || !local.is_ascii()
                || local.chars().any(|c| c.is_ascii_control() || c == ' ')
            {
                return Err(err(
                    "the local part must be non-empty printable ASCII (SmtpUTF8Mailbox is not supported)".into(),
                ));
            }
            let domain = DnsName::parse(domain).map_err(PkiError::san_refused(input))?;
            if domain.is_wildcard() {
                return Err(err("an email domain cannot be a wildcard".into()));
            }
            Ia5String::try_from(format!("{local}@{}", domain.ascii()))
                .map(SanType::Rfc822Name)
                .map_err(PkiError::san_refused(input))
        }
    }
}

/// Parse all `--san` values.
pub fn parse_all<S: AsRef<str>>(inputs: &[S]) -> Result<Vec<SanType>> {
    let mut out: Vec<SanType> = Vec::new();
    for i in inputs {
        let s = parse(i.as_ref())?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// When no SAN was given and the CN is a DNS name, use it as the one SAN (browsers
/// ignore the CN). Returns the SAN added, if any.
pub fn default_from_cn(dn: &rcgen::DistinguishedName) -> Option<SanType> {
    let cn = match dn.get(&rcgen::DnType::CommonName)? {
        rcgen::DnValue::Utf8String(s) => s.clone(),
        rcgen::DnValue::PrintableString(s) => s.as_str().to_string(),
        _ => return None,
    };
    if let Some(ip) = tlskit_names::parse_ip(&cn) {
        return Some(SanType::IpAddress(ip));
    }
    let has_separator = cn.contains(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}']);
    if !has_separator || cn.contains(' ') {
        return None;
    }
    let name = DnsName::parse(&cn).ok()?;
    Ia5String::try_from(name.ascii()).ok().map(SanType::DnsName)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dns(s: &str) -> String {
        match parse(s).unwrap() {
            SanType::DnsName(n) => n.as_str().to_string(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn idn_becomes_a_labels() {
        assert_eq!(dns("dns:räksmörgås。com"), "xn--rksmrgs-5wao1o.com");
        assert_eq!(dns("*.Example.COM"), "*.example.com");
    }

    #[test]
    fn one_dot_leader_is_refused_by_name() {
        let e = parse("dns:example\u{2024}com").unwrap_err().to_string();
        assert!(e.contains("U+2024"), "{e}");
    }

    #[test]
    fn ip_and_email() {
        assert!(matches!(
            parse("ip:192.0.2.1").unwrap(),
            SanType::IpAddress(_)
        ));
        assert!(matches!(parse("::1").unwrap(), SanType::IpAddress(_)));
        match parse("email:a@räksmörgås.com").unwrap() {
            SanType::Rfc822Name(n) => assert_eq!(n.as_str(), "a@xn--rksmrgs-5wao1o.com"),
            other => panic!("{other:?}"),
        }
        assert!(parse("ip:300.1.1.1").is_err());
        assert!(parse("email:nobody").is_err());
        assert!(parse("uri:https://x")
            .unwrap_err()
            .to_string()
            .contains("unknown SAN type"));
    }
}
