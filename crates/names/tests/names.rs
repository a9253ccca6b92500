//! tlskit-names through its public API, as an embedding program would use it: a name a
//! user typed becomes A-labels by UTS #46 (or an IP address), look-alikes of the full
//! stop and control characters are refused with the reason named, wildcards are kept as
//! the first label but never become a name to connect to, and names read from
//! certificates are checked as presented A-labels.
#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use rustls_pki_types::ServerName;
use tlskit_names::{check_presented_dns, parse_ip, DnsName, NameErrorKind, ReferenceName};

fn kind(input: &str) -> NameErrorKind {
    DnsName::parse(input).unwrap_err().kind
}

#[test]
fn typed_u_labels_become_lower_case_a_labels_and_keep_their_unicode_form() {
    let n = DnsName::parse("Bücher.Example").unwrap();
    assert_eq!(n.ascii(), "xn--bcher-kva.example");
    assert_eq!(n.unicode(), "bücher.example");
    assert_eq!(
        n.to_string(),
        "xn--bcher-kva.example",
        "Display is the A-label form"
    );
    assert!(!n.is_wildcard());

    // A-labels typed as such, upper case, a mix, the root dot and the ideographic full
    // stop (a real separator by UTS #46) all come out the same.
    for same in [
        "xn--bcher-kva.example",
        "XN--BCHER-KVA.EXAMPLE",
        "bücher.example.",
        "bücher\u{3002}example",
    ] {
        assert_eq!(DnsName::parse(same).unwrap(), n, "{same}");
    }
    assert_eq!(
        DnsName::parse("mañana.com").unwrap().ascii(),
        "xn--maana-pta.com"
    );
}

#[test]
fn full_stop_look_alikes_are_refused_and_named() {
    let e = DnsName::parse("example\u{2024}com").unwrap_err();
    assert_eq!(e.kind, NameErrorKind::DotLookalike('\u{2024}'));
    assert_eq!(e.input, "example\u{2024}com");
    let msg = e.to_string();
    assert!(msg.contains("U+2024 ONE DOT LEADER"), "{msg}");
    assert!(msg.contains("not a label separator"), "{msg}");

    for (c, name) in [
        ('\u{FE52}', "SMALL FULL STOP"),
        ('\u{2025}', "TWO DOT LEADER"),
        ('\u{06D4}', "ARABIC FULL STOP"),
        ('\u{2488}', "NUMBER FULL STOP"),
    ] {
        let e = DnsName::parse(&format!("www{c}example.com")).unwrap_err();
        assert_eq!(e.kind, NameErrorKind::DotLookalike(c));
        assert!(e.to_string().contains(name), "{e}");
    }
    // Through the entry point for typed names too.
    assert_eq!(
        ReferenceName::parse("a\u{2024}b").unwrap_err().kind,
        NameErrorKind::DotLookalike('\u{2024}')
    );
}

#[test]
fn other_bad_names_are_refused_with_their_reason() {
    assert_eq!(kind(""), NameErrorKind::Empty);
    assert_eq!(kind("."), NameErrorKind::Empty);
    assert_eq!(kind("a..b"), NameErrorKind::Length);
    assert_eq!(
        kind(&format!("{}.com", "a".repeat(64))),
        NameErrorKind::Length
    );
    assert_eq!(kind("-a.com"), NameErrorKind::Hyphen);
    assert_eq!(kind("ab--c.com"), NameErrorKind::Hyphen);
    assert_eq!(kind("a_b.com"), NameErrorKind::Disallowed('_'));
    assert_eq!(kind("a b.com"), NameErrorKind::Disallowed(' '));
    assert_eq!(kind("xn--zz.com"), NameErrorKind::MalformedALabel);
    assert_eq!(
        kind("exa\u{1b}[31mmple.com"),
        NameErrorKind::ControlChar {
            ch: '\u{1b}',
            at: 3
        }
    );
    let e = DnsName::parse("a\u{7}b").unwrap_err();
    assert!(
        e.to_string().contains("control character U+0007 at byte 1"),
        "{e}"
    );
}

#[test]
fn a_wildcard_is_only_the_whole_first_label_and_is_never_a_server_name() {
    let w = DnsName::parse("*.Bücher.example").unwrap();
    assert!(w.is_wildcard());
    assert_eq!(w.ascii(), "*.xn--bcher-kva.example");
    assert_eq!(w.unicode(), "*.bücher.example");

    for bad in ["a.*.example.com", "w*.example.com", "*"] {
        assert_eq!(kind(bad), NameErrorKind::BadWildcard, "{bad}");
    }
    let e = DnsName::parse("a.*.example.com").unwrap_err();
    assert!(e.to_string().contains("whole first label"), "{e}");

    // A wildcard can go into a certificate but never be matched against one.
    let r = ReferenceName::parse("*.example.com").unwrap();
    assert_eq!(
        r.to_server_name().unwrap_err().kind,
        NameErrorKind::BadWildcard
    );
}

#[test]
fn ip_literals_are_addresses_not_dns_names() {
    assert_eq!(
        parse_ip("192.0.2.1"),
        Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)))
    );
    assert_eq!(parse_ip("[::1]"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    assert_eq!(parse_ip("::1"), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    assert_eq!(parse_ip("example.com"), None);
    assert_eq!(parse_ip("[192.0.2.1"), None);

    let r = ReferenceName::parse("[2001:db8::1]").unwrap();
    assert!(matches!(r, ReferenceName::Ip(IpAddr::V6(_))));
    assert_eq!(r.to_string(), "2001:db8::1");
    assert!(matches!(
        r.to_server_name().unwrap(),
        ServerName::IpAddress(_)
    ));

    let d = ReferenceName::parse("Bücher.example").unwrap();
    assert_eq!(d.to_string(), "xn--bcher-kva.example");
    match d.to_server_name().unwrap() {
        ServerName::DnsName(n) => assert_eq!(n.as_ref(), "xn--bcher-kva.example"),
        other => panic!("a DNS name, not {other:?}"),
    }
}

#[test]
fn presented_names_must_be_a_labels_that_round_trip() {
    assert_eq!(
        check_presented_dns("xn--bcher-kva.example").unwrap(),
        "bücher.example"
    );
    assert_eq!(
        check_presented_dns("*.xn--bcher-kva.example").unwrap(),
        "*.bücher.example"
    );
    assert_eq!(
        check_presented_dns("www.example.com").unwrap(),
        "www.example.com"
    );
    assert_eq!(
        check_presented_dns("bücher.example").unwrap_err().kind,
        NameErrorKind::NotAscii
    );
    // Not Punycode, and Punycode of a plain ASCII label: both malformed.
    for bad in ["xn--zz.example", "xn--abc-.example"] {
        assert_eq!(
            check_presented_dns(bad).unwrap_err().kind,
            NameErrorKind::MalformedALabel,
            "{bad}"
        );
    }
    assert!(matches!(
        check_presented_dns("a\u{0}.example").unwrap_err().kind,
        NameErrorKind::ControlChar { ch: '\u{0}', at: 1 }
    ));
}
