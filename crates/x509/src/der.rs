//! The workspace's one DER reader: minimal, bounds-checked, linear.
//!
//! The store's load path reads what it indexes ([`parse_cert`]: the raw subject and
//! issuer Names, the key identifiers, the validity period and whether the certificate may
//! act as a CA: basicConstraints cA, or a legacy v1/v2 self-issued root); tlskit-verify
//! reads the same fields for chain building ([`cert_view`]), a CRL's nextUpdate, the parts
//! a signature check needs ([`signed`], [`spki`]) and distribution points
//! ([`next_part`], [`sequence_contents`]). It checks structure only (definite, minimal
//! lengths, every element inside its parent, nothing after the signature); it never judges
//! signatures or policy: rustls-webpki and aws-lc-rs do. Details beyond these fields are
//! read with x509-parser.
//!
//! Every read goes through one reader that never indexes out of bounds: malformed input
//! yields [`DerError`] (or `None`), never a panic.

/// Why a certificate's DER was rejected (a static description, safe to print).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DerError(pub &'static str);

impl std::fmt::Display for DerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DerError {}

type R<T> = Result<T, DerError>;

/// The fields read from one certificate, as (offset, length) ranges into its DER (the
/// store keeps these in its arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertFields {
    /// Subject Name including its SEQUENCE header.
    pub subject: (u32, u32),
    /// Issuer Name including its SEQUENCE header.
    pub issuer: (u32, u32),
    /// subjectKeyIdentifier contents, if present.
    pub ski: Option<(u32, u32)>,
    /// authorityKeyIdentifier keyIdentifier contents, if present.
    pub aki: Option<(u32, u32)>,
    /// notBefore, Unix seconds.
    pub not_before: i64,
    /// notAfter, Unix seconds.
    pub not_after: i64,
    /// basicConstraints cA = TRUE, or a v1/v2 certificate whose subject equals its issuer.
    pub is_ca: bool,
}

/// [`CertFields`] as slices of the certificate they were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertView<'a> {
    /// Raw subject Name, including its SEQUENCE header.
    pub subject: &'a [u8],
    /// Raw issuer Name, including its SEQUENCE header.
    pub issuer: &'a [u8],
    /// subjectKeyIdentifier contents.
    pub ski: Option<&'a [u8]>,
    /// authorityKeyIdentifier keyIdentifier contents.
    pub aki: Option<&'a [u8]>,
    /// notBefore, Unix seconds.
    pub not_before: i64,
    /// notAfter, Unix seconds.
    pub not_after: i64,
    /// As [`CertFields::is_ca`].
    pub is_ca: bool,
}

impl CertFields {
    /// The fields as slices of `der`, the certificate they were read from (ranges that do
    /// not fit `der` come out empty rather than panicking).
    pub fn view<'a>(&self, der: &'a [u8]) -> CertView<'a> {
        let at = |(o, l): (u32, u32)| {
            let (o, l) = (o as usize, l as usize);
            der.get(o..o.saturating_add(l)).unwrap_or(&[])
        };
        CertView {
            subject: at(self.subject),
            issuer: at(self.issuer),
            ski: self.ski.map(at),
            aki: self.aki.map(at),
            not_before: self.not_before,
            not_after: self.not_after,
            is_ca: self.is_ca,
        }
    }
}

/// Read a certificate's fields as slices of it; `None` when it is not well-formed.
pub fn cert_view(der: &[u8]) -> Option<CertView<'_>> {
    parse_cert(der).ok().map(|f| f.view(der))
}

/// Whether the certificate may act as a CA ([`CertFields::is_ca`]); false when it is not
/// well-formed.
pub fn cert_is_ca(der: &[u8]) -> bool {
    parse_cert(der).is_ok_and(|f| f.is_ca)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }
    fn peek_tag(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }
    /// Read one TLV; returns (tag, start of the whole TLV, start of content, end).
    /// Inlined: a certificate's parse is mostly these calls (issue 29's load profile).
    #[inline(always)]
    fn tlv(&mut self) -> R<(u8, usize, usize, usize)> {
        let start = self.pos;
        let tag = *self.buf.get(self.pos).ok_or(DerError("truncated (tag)"))?;
        if tag & 0x1f == 0x1f {
            return Err(DerError("multi-byte tag"));
        }
        let first = *self
            .buf
            .get(self.pos + 1)
            .ok_or(DerError("truncated (length)"))?;
        let mut p = self.pos + 2;
        let len = if first < 0x80 {
            first as usize
        } else {
            let n = (first & 0x7f) as usize;
            if n == 0 {
                return Err(DerError("indefinite length"));
            }
            if n > 4 {
                return Err(DerError("length too large"));
            }
            let bytes = self
                .buf
                .get(p..p + n)
                .ok_or(DerError("truncated (length)"))?;
            if bytes[0] == 0 {
                return Err(DerError("non-minimal length"));
            }
            let mut l = 0usize;
            for b in bytes {
                l = (l << 8) | *b as usize;
            }
            if l < 0x80 {
                return Err(DerError("non-minimal length"));
            }
            p += n;
            l
        };
        let end = p.checked_add(len).ok_or(DerError("length overflow"))?;
        if end > self.buf.len() {
            return Err(DerError("element runs past its parent"));
        }
        self.pos = end;
        Ok((tag, start, p, end))
    }
    #[inline(always)]
    fn expect(&mut self, want: u8, what: &'static str) -> R<(usize, usize, usize)> {
        let (tag, s, c, e) = self.tlv()?;
        if tag != want {
            return Err(DerError(what));
        }
        Ok((s, c, e))
    }
    #[inline(always)]
    fn sub(&self, c: usize, e: usize) -> Reader<'a> {
        // c..e was produced by tlv() and lies within buf.
        Reader {
            buf: &self.buf[..e],
            pos: c,
        }
    }
}

const OID_SKI: &[u8] = &[0x55, 0x1d, 0x0e];
const OID_AKI: &[u8] = &[0x55, 0x1d, 0x23];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];

/// Total length of the first DER element in `buf` (used to find where a certificate ends,
/// e.g. in a file that holds several concatenated DER certificates).
pub fn first_element_len(buf: &[u8]) -> R<usize> {
    let mut r = Reader::new(buf);
    let (_, _, _, e) = r.tlv()?;
    Ok(e)
}

/// Parse the fields the store needs from one certificate, which must span all of `der`.
pub fn parse_cert(der: &[u8]) -> R<CertFields> {
    if der.len() > u32::MAX as usize {
        return Err(DerError("certificate too large"));
    }
    let mut top = Reader::new(der);
    let (_, c, e) = top.expect(0x30, "not a SEQUENCE (not a certificate)")?;
    if !top.at_end() {
        return Err(DerError("trailing data after the certificate"));
    }
    let mut cert = top.sub(c, e);
    let (_, tc, te) = cert.expect(0x30, "tbsCertificate is not a SEQUENCE")?;
    cert.expect(0x30, "signatureAlgorithm is not a SEQUENCE")?;
    cert.expect(0x03, "signatureValue is not a BIT STRING")?;
    if !cert.at_end() {
        return Err(DerError("trailing data inside the certificate"));
    }
    let mut tbs = cert.sub(tc, te);
    let mut version = 0u8;
    if tbs.peek_tag() == Some(0xa0) {
        let (_, _, vc, ve) = tbs.tlv()?;
        let mut v = tbs.sub(vc, ve);
        let (_, ic, ie) = v.expect(0x02, "version is not an INTEGER")?;
        if ie - ic != 1 {
            return Err(DerError("bad version"));
        }
        version = der[ic];
        if version > 2 {
            return Err(DerError("unknown version"));
        }
    }
    tbs.expect(0x02, "serialNumber is not an INTEGER")?;
    tbs.expect(0x30, "signature algorithm is not a SEQUENCE")?;
    let (is_, _, ie) = tbs.expect(0x30, "issuer is not a SEQUENCE")?;
    let (_, vc, ve) = tbs.expect(0x30, "validity is not a SEQUENCE")?;
    let mut val = tbs.sub(vc, ve);
    let not_before = read_time(&mut val, der)?;
    let not_after = read_time(&mut val, der)?;
    if !val.at_end() {
        return Err(DerError("trailing data in validity"));
    }
    let (ss, _, se) = tbs.expect(0x30, "subject is not a SEQUENCE")?;
    tbs.expect(0x30, "subjectPublicKeyInfo is not a SEQUENCE")?;
    let mut ski = None;
    let mut aki = None;
    let mut bc_ca = false;
    let mut saw_ext = false;
    while !tbs.at_end() {
        let (tag, _, xc, xe) = tbs.tlv()?;
        match tag {
            0x81 | 0x82 => {}
            0xa3 => {
                if saw_ext {
                    return Err(DerError("two extensions fields"));
                }
                saw_ext = true;
                let mut wrap = tbs.sub(xc, xe);
                let (_, lc, le) = wrap.expect(0x30, "extensions is not a SEQUENCE")?;
                if !wrap.at_end() {
                    return Err(DerError("trailing data after extensions"));
                }
                let mut list = wrap.sub(lc, le);
                while !list.at_end() {
                    let (_, ec, ee) = list.expect(0x30, "extension is not a SEQUENCE")?;
                    let mut ext = list.sub(ec, ee);
                    let (_, oc, oe) = ext.expect(0x06, "extnID is not an OID")?;
                    if ext.peek_tag() == Some(0x01) {
                        ext.tlv()?;
                    }
                    let (_, pc, pe) = ext.expect(0x04, "extnValue is not an OCTET STRING")?;
                    let oid = &der[oc..oe];
                    if oid == OID_SKI {
                        let mut inner = ext.sub(pc, pe);
                        let (_, kc, ke) =
                            inner.expect(0x04, "subjectKeyIdentifier is not an OCTET STRING")?;
                        ski = Some((kc as u32, (ke - kc) as u32));
                    } else if oid == OID_AKI {
                        let mut inner = ext.sub(pc, pe);
                        let (_, ac, ae) =
                            inner.expect(0x30, "authorityKeyIdentifier is not a SEQUENCE")?;
                        let mut a = inner.sub(ac, ae);
                        if a.peek_tag() == Some(0x80) {
                            let (_, _, kc, ke) = a.tlv()?;
                            aki = Some((kc as u32, (ke - kc) as u32));
                        }
                    } else if oid == OID_BASIC_CONSTRAINTS {
                        let mut inner = ext.sub(pc, pe);
                        let (_, bc, be) =
                            inner.expect(0x30, "basicConstraints is not a SEQUENCE")?;
                        let mut b = inner.sub(bc, be);
                        if b.peek_tag() == Some(0x01) {
                            let (_, _, cc, ce) = b.tlv()?;
                            bc_ca = ce - cc == 1 && der[cc] != 0;
                        }
                    }
                }
            }
            _ => return Err(DerError("unexpected field in tbsCertificate")),
        }
    }
    let subject = &der[ss..se];
    let issuer = &der[is_..ie];
    let is_ca = bc_ca || (version < 2 && subject == issuer);
    Ok(CertFields {
        subject: (ss as u32, (se - ss) as u32),
        issuer: (is_ as u32, (ie - is_) as u32),
        ski,
        aki,
        not_before,
        not_after,
        is_ca,
    })
}

/// The nextUpdate of a DER CRL (Unix seconds), if it has one.
pub fn crl_next_update(der: &[u8]) -> Option<i64> {
    let mut top = Reader::new(der);
    let (_, c, e) = top.expect(0x30, "").ok()?;
    let mut crl = top.sub(c, e);
    let (_, tc, te) = crl.expect(0x30, "").ok()?;
    let mut tbs = crl.sub(tc, te);
    if tbs.peek_tag() == Some(0x02) {
        tbs.tlv().ok()?; // version
    }
    tbs.expect(0x30, "").ok()?; // signature
    tbs.expect(0x30, "").ok()?; // issuer
    read_time(&mut tbs, der).ok()?; // thisUpdate
    match tbs.peek_tag() {
        Some(0x17 | 0x18) => read_time(&mut tbs, der).ok(),
        _ => None,
    }
}

/// The parts of a signed structure (a certificate or a CRL) a signature check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signed<'a> {
    /// The whole to-be-signed TLV: the bytes the signature covers.
    pub tbs: &'a [u8],
    /// The signature AlgorithmIdentifier's contents (as rustls-pki-types spells
    /// algorithm identifiers).
    pub alg: &'a [u8],
    /// The signature value (a BIT STRING without unused bits).
    pub sig: &'a [u8],
}

/// Split `SEQUENCE { tbs, signatureAlgorithm, signatureValue }`; nothing may follow.
pub fn signed(der: &[u8]) -> Option<Signed<'_>> {
    let mut top = Reader::new(der);
    let (_, c, e) = top.expect(0x30, "").ok()?;
    if !top.at_end() {
        return None;
    }
    let mut outer = top.sub(c, e);
    let (ts, _, te) = outer.expect(0x30, "").ok()?;
    let (_, ac, ae) = outer.expect(0x30, "").ok()?;
    let (_, sc, se) = outer.expect(0x03, "").ok()?;
    let (&unused, sig) = der[sc..se].split_first()?;
    (outer.at_end() && unused == 0).then_some(Signed {
        tbs: &der[ts..te],
        alg: &der[ac..ae],
        sig,
    })
}

/// Split a SubjectPublicKeyInfo into its AlgorithmIdentifier's contents and the key bits.
pub fn spki(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut top = Reader::new(der);
    let (_, c, e) = top.expect(0x30, "").ok()?;
    let mut outer = top.sub(c, e);
    let (_, ac, ae) = outer.expect(0x30, "").ok()?;
    let (_, kc, ke) = outer.expect(0x03, "").ok()?;
    let (&unused, key) = der[kc..ke].split_first()?;
    (outer.at_end() && unused == 0).then_some((&der[ac..ae], key))
}

/// One TLV: its tag and contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part<'a> {
    /// The tag byte (low tag numbers only).
    pub tag: u8,
    /// The contents.
    pub contents: &'a [u8],
}

/// The TLV at the front of `input`, and what follows it.
pub fn next_part(input: &[u8]) -> Option<(Part<'_>, &[u8])> {
    let mut r = Reader::new(input);
    let (tag, _, c, e) = r.tlv().ok()?;
    Some((
        Part {
            tag,
            contents: &input[c..e],
        },
        &input[e..],
    ))
}

/// The contents of the SEQUENCE at the front of `der`, and what follows it.
pub fn sequence_contents(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let (p, rest) = next_part(der)?;
    (p.tag == 0x30).then_some((p.contents, rest))
}

/// Read a UTCTime or GeneralizedTime (`YYMMDDHHMMSSZ`, `YYYYMMDDHHMMSSZ`, UTC only) as
/// Unix seconds. Every character is checked, but without a branch per character: this
/// runs twice per certificate of every load (issue 29's profile had it at 8 % of the DER
/// walk), so the digits are validated together and combined in pairs.
#[inline]
fn read_time(r: &mut Reader<'_>, der: &[u8]) -> R<i64> {
    let (tag, _, c, e) = r.tlv()?;
    let s = &der[c..e];
    // The 12 characters after the century: YYMMDDHHMMSS, then 'Z'.
    let (century, t): (Option<[u8; 2]>, &[u8]) = match (tag, s.len()) {
        (0x17, 13) => (None, s),
        (0x18, 15) => (Some([s[0], s[1]]), &s[2..]),
        _ => return Err(DerError("bad time encoding")),
    };
    let Ok(t) = <&[u8; 13]>::try_from(t) else {
        return Err(DerError("bad time encoding"));
    };
    if t[12] != b'Z' {
        return Err(DerError("time is not UTC (Z)"));
    }
    // Each character minus '0' is a digit only when at most 9 (as a byte, wrapping).
    let mut d = [0u8; 12];
    let mut bad = 0u8;
    for (x, &ch) in d.iter_mut().zip(&t[..12]) {
        *x = ch.wrapping_sub(b'0');
        bad |= u8::from(*x > 9);
    }
    let mut cy = 0u32;
    if let Some([a, b]) = century {
        let (a, b) = (a.wrapping_sub(b'0'), b.wrapping_sub(b'0'));
        bad |= u8::from(a > 9) | u8::from(b > 9);
        cy = u32::from(a) * 10 + u32::from(b);
    }
    if bad != 0 {
        return Err(DerError("bad digit in time"));
    }
    let pair = |i: usize| u32::from(d[i]) * 10 + u32::from(d[i + 1]);
    let yy = pair(0);
    let year = match century {
        Some(_) => cy * 100 + yy,
        None if yy >= 50 => 1900 + yy,
        None => 2000 + yy,
    };
    let (month, day, hour, min, sec) = (pair(2), pair(4), pair(6), pair(8), pair(10));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return Err(DerError("time out of range"));
    }
    // year <= 9999: two-digit century and year.
    Ok(
        crate::datetime::days_from_civil_cert(year, month, day) * 86400
            + i64::from(hour * 3600 + min * 60 + sec),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datetime::days_from_civil;

    /// The reader before issue 29's rewrite (a branch per character), kept as the
    /// reference the branchless one must agree with on every input.
    fn read_time_reference(tag: u8, s: &[u8]) -> Option<i64> {
        fn digits(b: &[u8]) -> Option<i64> {
            let mut v = 0i64;
            for &c in b {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + i64::from(c - b'0');
            }
            Some(v)
        }
        let (year, rest) = match (tag, s.len()) {
            (0x17, 13) => {
                let yy = digits(&s[..2])?;
                (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &s[2..])
            }
            (0x18, 15) => (digits(&s[..4])?, &s[4..]),
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
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || min > 59
            || sec > 60
        {
            return None;
        }
        Some(days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec)
    }

    #[test]
    fn branchless_time_reader_agrees_with_the_reference() {
        let t = |tag: u8, s: &[u8]| {
            let mut v = vec![tag, s.len() as u8];
            v.extend_from_slice(s);
            read_time(&mut Reader::new(&v), &v).ok()
        };
        // Every character position of valid times, replaced by each byte value.
        let mut checked = 0usize;
        for (tag, base) in [
            (0x17u8, &b"491231235960Z"[..]),
            (0x17, b"500101000000Z"),
            (0x18, b"20380119031408Z"),
            (0x18, b"00000229235959Z"),
            (0x18, b"99991231235959Z"),
        ] {
            assert!(t(tag, base).is_some());
            for i in 0..base.len() {
                for b in 0..=255u8 {
                    let mut s = base.to_vec();
                    s[i] = b;
                    assert_eq!(t(tag, &s), read_time_reference(tag, &s), "{tag} {s:?}");
                    checked += 1;
                }
            }
        }
        // A deterministic sweep over dates and times, including out-of-range fields.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = |k: u32, m: u64| (x >> k) % m;
            let s = format!(
                "{:02}{:02}{:02}{:02}{:02}{:02}Z",
                f(0, 100),
                f(8, 14),
                f(16, 33),
                f(24, 25),
                f(32, 61),
                f(40, 62)
            );
            assert_eq!(
                t(0x17, s.as_bytes()),
                read_time_reference(0x17, s.as_bytes())
            );
            let g = format!("{:02}{s}", f(48, 100));
            assert_eq!(
                t(0x18, g.as_bytes()),
                read_time_reference(0x18, g.as_bytes())
            );
            checked += 2;
        }
        assert!(checked > 400_000);
    }

    #[test]
    fn times() {
        let t = |tag: u8, s: &[u8]| {
            let mut v = vec![tag, s.len() as u8];
            v.extend_from_slice(s);
            read_time(&mut Reader::new(&v), &v).ok()
        };
        assert_eq!(t(0x17, b"700101000000Z"), Some(0));
        assert_eq!(t(0x17, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(t(0x18, b"20380119031408Z"), Some(2_147_483_648));
        assert_eq!(
            t(0x17, b"500101000000Z"),
            Some(days_from_civil(1950, 1, 1) * 86_400)
        );
        assert_eq!(t(0x17, b"701301000000Z"), None);
        assert_eq!(t(0x17, b"7001010000Z"), None);
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
        let ca_f = cert_view(ca_cert.der()).expect("ca fields");
        let leaf_f = cert_view(leaf.der()).expect("leaf fields");
        assert_eq!(ca_f.not_before, days_from_civil(2021, 3, 4) * 86_400);
        assert_eq!(ca_f.not_after, days_from_civil(2051, 5, 6) * 86_400);
        assert_eq!(leaf_f.issuer, ca_f.subject);
        assert!(ca_f.is_ca && !leaf_f.is_ca);
        assert!(ca_f.ski.is_some());
        assert_eq!(leaf_f.aki, ca_f.ski);
        let der: &[u8] = leaf.der();
        // Every truncation is refused, without panicking.
        for cut in 0..der.len() {
            assert!(cert_view(&der[..cut]).is_none(), "prefix of {cut} bytes");
        }
        let s = signed(der).expect("signed parts");
        assert_eq!(s.tbs[0], 0x30);
        assert!(!s.sig.is_empty());
        assert!(signed(&der[..der.len() - 1]).is_none());
    }

    #[test]
    fn garbage_is_none() {
        assert!(cert_view(b"").is_none());
        assert!(cert_view(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_none());
        assert!(cert_view(&[0x30, 0x03, 0x30, 0x01]).is_none());
        assert!(signed(b"").is_none());
        assert!(spki(&[0x30, 0x00]).is_none());
        assert!(next_part(&[0x04]).is_none());
        assert_eq!(
            sequence_contents(&[0x30, 0x00, 0x01]),
            Some((&[][..], &[0x01][..]))
        );
        assert!(crl_next_update(&[0x30, 0x00]).is_none());
    }

    #[test]
    fn garbage_never_panics() {
        let mut x = 0x1234_5678u32;
        for len in 0..300 {
            let mut v = vec![0x30u8];
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                v.push(x as u8);
            }
            let _ = parse_cert(&v);
        }
    }
}
