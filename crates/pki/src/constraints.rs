//! RFC 5280 name constraints (dNSName, iPAddress, rfc822Name subtrees) as the CA and
//! lint need them: does a name fall inside what an issuer permits?

use std::net::IpAddr;

use x509_parser::prelude::*;

/// The name constraints of one CA certificate.
#[derive(Debug, Clone, Default)]
pub(crate) struct Constraints {
    /// Subject of the CA that imposes them, for messages.
    pub(crate) ca: String,
    permitted_dns: Option<Vec<String>>,
    excluded_dns: Vec<String>,
    permitted_ip: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    excluded_ip: Vec<(Vec<u8>, Vec<u8>)>,
    permitted_email: Option<Vec<String>>,
    excluded_email: Vec<String>,
}

/// A name to check.
#[derive(Debug, Clone)]
pub(crate) enum Name<'a> {
    Dns(&'a str),
    Ip(IpAddr),
    Email(&'a str),
}

impl Constraints {
    /// The constraints of `cert`, if it carries the extension.
    pub(crate) fn of(cert: &X509Certificate<'_>) -> Option<Self> {
        let nc = cert.name_constraints().ok().flatten()?.value;
        let mut c = Constraints {
            ca: crate::dn::display(cert.subject()),
            ..Default::default()
        };
        if let Some(p) = &nc.permitted_subtrees {
            for s in p {
                match &s.base {
                    GeneralName::DNSName(d) => c
                        .permitted_dns
                        .get_or_insert_with(Vec::new)
                        .push(d.to_ascii_lowercase()),
                    GeneralName::IPAddress(b) => c
                        .permitted_ip
                        .get_or_insert_with(Vec::new)
                        .push(split_ip(b)),
                    GeneralName::RFC822Name(e) => c
                        .permitted_email
                        .get_or_insert_with(Vec::new)
                        .push(e.to_ascii_lowercase()),
                    _ => {}
                }
            }
        }
        if let Some(x) = &nc.excluded_subtrees {
            for s in x {
                match &s.base {
                    GeneralName::DNSName(d) => c.excluded_dns.push(d.to_ascii_lowercase()),
                    GeneralName::IPAddress(b) => c.excluded_ip.push(split_ip(b)),
                    GeneralName::RFC822Name(e) => c.excluded_email.push(e.to_ascii_lowercase()),
                    _ => {}
                }
            }
        }
        Some(c)
    }

    /// `Err(why)` when `name` is outside these constraints.
    pub(crate) fn check(&self, name: &Name<'_>) -> Result<(), Violation> {
        let ca = || self.ca.clone();
        match name {
            Name::Dns(d) => {
                let d = d.to_ascii_lowercase();
                if let Some(x) = self.excluded_dns.iter().find(|c| dns_within(&d, c)) {
                    return Err(Violation::DnsExcluded {
                        name: d,
                        ca: ca(),
                        subtree: x.clone(),
                    });
                }
                if let Some(p) = &self.permitted_dns {
                    if !p.iter().any(|c| dns_within(&d, c)) {
                        return Err(Violation::DnsOutside {
                            name: d,
                            ca: ca(),
                            permitted: p.join(", "),
                        });
                    }
                }
            }
            Name::Ip(ip) => {
                let b = ip_bytes(ip);
                if self.excluded_ip.iter().any(|(a, m)| ip_within(&b, a, m)) {
                    return Err(Violation::IpExcluded { ip: *ip, ca: ca() });
                }
                if let Some(p) = &self.permitted_ip {
                    if !p.iter().any(|(a, m)| ip_within(&b, a, m)) {
                        return Err(Violation::IpOutside { ip: *ip, ca: ca() });
                    }
                }
            }
            Name::Email(e) => {
                let e = e.to_ascii_lowercase();
                if let Some(x) = self.excluded_email.iter().find(|c| email_within(&e, c)) {
                    return Err(Violation::EmailExcluded {
                        email: e,
                        ca: ca(),
                        subtree: x.clone(),
                    });
                }
                if let Some(p) = &self.permitted_email {
                    if !p.iter().any(|c| email_within(&e, c)) {
                        return Err(Violation::EmailOutside {
                            email: e,
                            ca: ca(),
                            permitted: p.join(", "),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// A name outside the name constraints of a CA (`ca`: its subject).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Violation {
    #[error("DNS name {name} is in a subtree excluded by {ca} ({subtree})")]
    DnsExcluded {
        name: String,
        ca: String,
        subtree: String,
    },
    #[error("DNS name {name} is outside the name constraints of {ca} (permitted: {permitted})")]
    DnsOutside {
        name: String,
        ca: String,
        permitted: String,
    },
    #[error("IP address {ip} is excluded by {ca}")]
    IpExcluded { ip: IpAddr, ca: String },
    #[error("IP address {ip} is outside the name constraints of {ca}")]
    IpOutside { ip: IpAddr, ca: String },
    #[error("email {email} is excluded by {ca} ({subtree})")]
    EmailExcluded {
        email: String,
        ca: String,
        subtree: String,
    },
    #[error("email {email} is outside the name constraints of {ca} (permitted: {permitted})")]
    EmailOutside {
        email: String,
        ca: String,
        permitted: String,
    },
}

fn split_ip(b: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let half = b.len() / 2;
    (b[..half].to_vec(), b[half..].to_vec())
}

fn ip_bytes(ip: &IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

fn ip_within(ip: &[u8], addr: &[u8], mask: &[u8]) -> bool {
    ip.len() == addr.len()
        && ip.len() == mask.len()
        && ip
            .iter()
            .zip(addr)
            .zip(mask)
            .all(|((i, a), m)| i & m == a & m)
}

/// RFC 5280 4.2.1.10: "example.com" matches example.com and every name below it;
/// ".example.com" only names below it; an empty constraint matches everything.
pub(crate) fn dns_within(name: &str, constraint: &str) -> bool {
    let c = constraint.trim_end_matches('.');
    let n = name.trim_end_matches('.');
    if c.is_empty() {
        return true;
    }
    if let Some(sub) = c.strip_prefix('.') {
        return n.len() > sub.len() && n.ends_with(c);
    }
    n == c || (n.len() > c.len() && n.ends_with(c) && n.as_bytes()[n.len() - c.len() - 1] == b'.')
}

fn email_within(email: &str, constraint: &str) -> bool {
    if constraint.contains('@') {
        return email == constraint;
    }
    let host = email.rsplit_once('@').map(|(_, h)| h).unwrap_or(email);
    if constraint.starts_with('.') {
        return host.ends_with(constraint);
    }
    host == constraint
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn dns_subtrees() {
        assert!(dns_within("example.com", "example.com"));
        assert!(dns_within("a.b.example.com", "example.com"));
        assert!(dns_within("*.example.com", "example.com"));
        assert!(!dns_within("badexample.com", "example.com"));
        assert!(!dns_within("example.com", ".example.com"));
        assert!(dns_within("www.example.com", ".example.com"));
        assert!(dns_within("anything", ""));
    }

    #[test]
    fn ip_subtrees() {
        assert!(ip_within(&[10, 1, 2, 3], &[10, 0, 0, 0], &[255, 0, 0, 0]));
        assert!(!ip_within(&[11, 1, 2, 3], &[10, 0, 0, 0], &[255, 0, 0, 0]));
        assert!(!ip_within(&[0; 16], &[10, 0, 0, 0], &[255, 0, 0, 0]));
    }
}
