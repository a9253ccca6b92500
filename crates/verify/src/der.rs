//! A small, careful, linear DER reader for the few certificate fields chain building
//! needs before rustls-webpki runs: the raw issuer and subject names (for index
//! look-ups), the validity period (for the cache window) and the authority key
//! identifier. It checks structure and lengths only; it never judges signatures or
//! policy (rustls-webpki does that). Every read is bounds-checked; malformed input
//! yields `None`.

/// The fields of one certificate that chain building looks at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CertFields<'a> {
    /// Raw issuer Name, including its SEQUENCE tag and length.
    pub(crate) issuer: &'a [u8],
    /// Raw subject Name, including its SEQUENCE tag and length.
    pub(crate) subject: &'a [u8],
    /// notBefore, Unix seconds.
    pub(crate) not_before: i64,
    /// notAfter, Unix seconds.
    pub(crate) not_after: i64,
    /// authorityKeyIdentifier keyIdentifier, when present.
    pub(crate) aki: Option<&'a [u8]>,
}

/// One TLV: (tag, whole encoding, contents, rest after it).
struct Tlv<'a> {
    tag: u8,
    whole: &'a [u8],
    contents: &'a [u8],
}

/// Read one TLV from the front of `input`; returns it and the remaining input.
fn read_tlv(input: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let tag = *input.first()?;
    if tag & 0x1f == 0x1f {
        return None; // high tag numbers never occur in the fields we read
    }
    let first = *input.get(1)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None; // indefinite length or absurd size: not DER
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | usize::from(*input.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let end = header.checked_add(len)?;
    if end > input.len() {
        return None;
    }
    Some((
        Tlv {
            tag,
            whole: &input[..end],
            contents: &input[header..end],
        },
        &input[end..],
    ))
}

fn expect(input: &[u8], tag: u8) -> Option<(Tlv<'_>, &[u8])> {
    let (tlv, rest) = read_tlv(input)?;
    (tlv.tag == tag).then_some((tlv, rest))
}

const SEQUENCE: u8 = 0x30;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const BOOLEAN: u8 = 0x01;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// id-ce-authorityKeyIdentifier (2.5.29.35), contents of the OID.
const OID_AKI: &[u8] = &[0x55, 0x1d, 0x23];

const BIT_STRING: u8 = 0x03;

/// The parts of a signed structure (a certificate or a CRL) a signature check needs.
pub(crate) struct Signed<'a> {
    /// The whole to-be-signed TLV: the bytes the signature covers.
    pub(crate) tbs: &'a [u8],
    /// The signature AlgorithmIdentifier's contents (as rustls-pki-types spells
    /// algorithm identifiers).
    pub(crate) alg: &'a [u8],
    /// The signature value (a BIT STRING without unused bits).
    pub(crate) sig: &'a [u8],
}

/// Split `SEQUENCE { tbs, signatureAlgorithm, signatureValue }`; nothing may follow.
pub(crate) fn signed(der: &[u8]) -> Option<Signed<'_>> {
    let (outer, rest) = expect(der, SEQUENCE)?;
    if !rest.is_empty() {
        return None;
    }
    let (tbs, rest) = expect(outer.contents, SEQUENCE)?;
    let (alg, rest) = expect(rest, SEQUENCE)?;
    let (sig, rest) = expect(rest, BIT_STRING)?;
    let (&unused, sig) = sig.contents.split_first()?;
    (rest.is_empty() && unused == 0).then_some(Signed {
        tbs: tbs.whole,
        alg: alg.contents,
        sig,
    })
}

/// One TLV as the RFC 5280 validator reads it: tag, contents.
pub(crate) struct Part<'a> {
    pub(crate) tag: u8,
    pub(crate) contents: &'a [u8],
}

/// The TLV at the front of `input` (low tag numbers only), and what follows it.
pub(crate) fn next_part(input: &[u8]) -> Option<(Part<'_>, &[u8])> {
    let (tlv, rest) = read_tlv(input)?;
    Some((
        Part {
            tag: tlv.tag,
            contents: tlv.contents,
        },
        rest,
    ))
}

/// The contents of a SEQUENCE at the front of `der`, and what follows it.
pub(crate) fn sequence_contents(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (seq, rest) = expect(der, SEQUENCE)?;
    Some((seq.contents, rest))
}

/// Split a SubjectPublicKeyInfo into its AlgorithmIdentifier's contents and the key bits.
pub(crate) fn spki(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (outer, _) = expect(der, SEQUENCE)?;
    let (alg, rest) = expect(outer.contents, SEQUENCE)?;
    let (key, rest) = expect(rest, BIT_STRING)?;
    let (&unused, key) = key.contents.split_first()?;
    (rest.is_empty() && unused == 0).then_some((alg.contents, key))
}

/// Read the fields chain building needs from a DER certificate.
pub(crate) fn cert_fields(der: &[u8]) -> Option<CertFields<'_>> {
    let (cert, _) = expect(der, SEQUENCE)?;
    let (tbs, _) = expect(cert.contents, SEQUENCE)?;
    let mut rest = tbs.contents;
    // [0] EXPLICIT version, optional.
    if rest.first() == Some(&0xa0) {
        rest = read_tlv(rest)?.1;
    }
    let (_serial, r) = read_tlv(rest)?; // INTEGER serialNumber
    let (_alg, r) = expect(r, SEQUENCE)?; // signature AlgorithmIdentifier
    let (issuer, r) = expect(r, SEQUENCE)?;
    let (validity, r) = expect(r, SEQUENCE)?;
    let (subject, r) = expect(r, SEQUENCE)?;
    let (_spki, mut r) = expect(r, SEQUENCE)?;
    let (nb, vr) = read_tlv(validity.contents)?;
    let (na, _) = read_tlv(vr)?;
    let not_before = parse_time(nb.tag, nb.contents)?;
    let not_after = parse_time(na.tag, na.contents)?;
    let mut aki = None;
    while let Some((field, after)) = read_tlv(r) {
        r = after;
        if field.tag != 0xa3 {
            continue; // issuerUniqueID / subjectUniqueID
        }
        let (exts, _) = expect(field.contents, SEQUENCE)?;
        let mut e = exts.contents;
        while !e.is_empty() {
            let (ext, after) = expect(e, SEQUENCE)?;
            e = after;
            let (oid, mut x) = expect(ext.contents, OID)?;
            if oid.contents != OID_AKI {
                continue;
            }
            if x.first() == Some(&BOOLEAN) {
                x = read_tlv(x)?.1;
            }
            let (value, _) = expect(x, OCTET_STRING)?;
            let (seq, _) = expect(value.contents, SEQUENCE)?;
            // keyIdentifier [0] IMPLICIT OCTET STRING is the first, optional element.
            if let Some((kid, _)) = read_tlv(seq.contents) {
                if kid.tag == 0x80 {
                    aki = Some(kid.contents);
                }
            }
        }
    }
    Some(CertFields {
        issuer: issuer.whole,
        subject: subject.whole,
        not_before,
        not_after,
        aki,
    })
}

/// id-ce-basicConstraints (2.5.29.19), contents of the OID.
const OID_BC: &[u8] = &[0x55, 0x1d, 0x13];

/// Whether a DER certificate is a CA: basicConstraints cA = TRUE, or a v1/v2
/// self-issued certificate (a legacy root). Malformed input is not a CA. Used to keep a
/// pinned end-entity anchor from ever acting as an issuer.
pub(crate) fn cert_is_ca(der: &[u8]) -> bool {
    cert_is_ca_inner(der).unwrap_or(false)
}

fn cert_is_ca_inner(der: &[u8]) -> Option<bool> {
    let (cert, _) = expect(der, SEQUENCE)?;
    let (tbs, _) = expect(cert.contents, SEQUENCE)?;
    let mut rest = tbs.contents;
    let mut v3 = false;
    if rest.first() == Some(&0xa0) {
        let (ver, r) = read_tlv(rest)?;
        v3 = ver.contents == [0x02, 0x01, 0x02];
        rest = r;
    }
    let (_serial, r) = read_tlv(rest)?;
    let (_alg, r) = expect(r, SEQUENCE)?;
    let (issuer, r) = expect(r, SEQUENCE)?;
    let (_validity, r) = expect(r, SEQUENCE)?;
    let (subject, r) = expect(r, SEQUENCE)?;
    let (_spki, mut r) = expect(r, SEQUENCE)?;
    if !v3 {
        return Some(issuer.whole == subject.whole);
    }
    while let Some((field, after)) = read_tlv(r) {
        r = after;
        if field.tag != 0xa3 {
            continue;
        }
        let (exts, _) = expect(field.contents, SEQUENCE)?;
        let mut e = exts.contents;
        while !e.is_empty() {
            let (ext, after) = expect(e, SEQUENCE)?;
            e = after;
            let (oid, mut x) = expect(ext.contents, OID)?;
            if oid.contents != OID_BC {
                continue;
            }
            if x.first() == Some(&BOOLEAN) {
                x = read_tlv(x)?.1;
            }
            let (value, _) = expect(x, OCTET_STRING)?;
            let (seq, _) = expect(value.contents, SEQUENCE)?;
            return Some(matches!(
                read_tlv(seq.contents),
                Some((
                    Tlv {
                        tag: BOOLEAN,
                        contents: [0xff],
                        ..
                    },
                    _
                ))
            ));
        }
    }
    Some(false)
}

/// Read the nextUpdate of a DER CRL (Unix seconds), if it has one.
pub(crate) fn crl_next_update(der: &[u8]) -> Option<i64> {
    let (crl, _) = expect(der, SEQUENCE)?;
    let (tbs, _) = expect(crl.contents, SEQUENCE)?;
    let mut r = tbs.contents;
    if r.first() == Some(&0x02) {
        r = read_tlv(r)?.1; // version
    }
    let (_alg, r) = expect(r, SEQUENCE)?;
    let (_issuer, r) = expect(r, SEQUENCE)?;
    let (_this_update, r) = read_tlv(r)?;
    let (next, _) = read_tlv(r)?;
    parse_time(next.tag, next.contents)
}

fn digits(s: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(b - b'0');
    }
    Some(v)
}

/// UTCTime `YYMMDDHHMMSSZ` or GeneralizedTime `YYYYMMDDHHMMSSZ` to Unix seconds.
fn parse_time(tag: u8, s: &[u8]) -> Option<i64> {
    let (year, rest) = match (tag, s.len()) {
        (UTC_TIME, 13) => {
            let yy = digits(&s[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &s[2..])
        }
        (GENERALIZED_TIME, 15) => (digits(&s[..4])?, &s[4..]),
        _ => return None,
    };
    if rest[10] != b'Z' {
        return None;
    }
    let month = digits(&rest[0..2])?;
    let day = digits(&rest[2..4])?;
    let hour = digits(&rest[4..6])?;
    let min = digits(&rest[6..8])?;
    let sec = digits(&rest[8..10])?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + min * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(parse_time(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(
            parse_time(GENERALIZED_TIME, b"20380119031408Z"),
            Some(2_147_483_648)
        );
        assert_eq!(parse_time(UTC_TIME, b"701301000000Z"), None);
        assert_eq!(parse_time(UTC_TIME, b"7001010000Z"), None);
    }

    #[test]
    fn reads_rcgen_certificates_and_never_panics_on_prefixes() {
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.not_before = rcgen::date_time_ymd(2021, 3, 4);
        ca.not_after = rcgen::date_time_ymd(2051, 5, 6);
        let ca_cert = ca.self_signed(&ca_key).expect("self-signed");
        let leaf_key = rcgen::KeyPair::generate().expect("key");
        let mut lp = rcgen::CertificateParams::new(vec!["a.example".to_string()]).expect("params");
        lp.use_authority_key_identifier_extension = true;
        let leaf = lp
            .signed_by(&leaf_key, &rcgen::Issuer::from_params(&ca, &ca_key))
            .expect("signed");
        let ca_f = cert_fields(ca_cert.der()).expect("ca fields");
        let leaf_f = cert_fields(leaf.der()).expect("leaf fields");
        assert_eq!(ca_f.not_before, days_from_civil(2021, 3, 4) * 86_400);
        assert_eq!(ca_f.not_after, days_from_civil(2051, 5, 6) * 86_400);
        assert_eq!(leaf_f.issuer, ca_f.subject);
        let ski = x509_parser::parse_x509_certificate(ca_cert.der())
            .expect("parse")
            .1
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(k) => {
                    Some(k.0.to_vec())
                }
                _ => None,
            })
            .expect("ski");
        assert_eq!(leaf_f.aki, Some(&ski[..]));
        let der: &[u8] = leaf.der();
        // Every truncation is refused, without panicking.
        for cut in 0..der.len() {
            assert!(cert_fields(&der[..cut]).is_none(), "prefix of {cut} bytes");
        }
    }

    #[test]
    fn garbage_is_none() {
        assert!(cert_fields(b"").is_none());
        assert!(cert_fields(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_none());
        assert!(cert_fields(&[0x30, 0x03, 0x30, 0x01]).is_none());
    }
}
