//! A minimal, bounds-checked DER walker for the load hot path.
//!
//! It extracts only what the store indexes: the raw subject Name, the subject key
//! identifier, the validity period and whether the certificate may act as a CA
//! (basicConstraints cA, or a legacy v1/v2 self-issued root). It checks that the
//! certificate's outer structure is well formed (definite lengths, every element inside
//! its parent, nothing after the signature) but it does not check signatures or policy:
//! that is rustls-webpki's job in the verify crate. Lint uses x509-parser for details.
//!
//! Every read goes through [`Reader`], which never indexes out of bounds: malformed
//! input yields [`DerError`], never a panic.

/// Why a certificate's DER was rejected (a static description, safe to print).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DerError(pub(crate) &'static str);

type R<T> = Result<T, DerError>;

/// The fields the store keeps for one certificate, as offsets into its DER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CertFields {
    /// Subject Name including its SEQUENCE header: (offset, length) in the DER.
    pub(crate) subject: (u32, u32),
    /// Issuer Name including its SEQUENCE header.
    pub(crate) issuer: (u32, u32),
    /// subjectKeyIdentifier contents, if present.
    pub(crate) ski: Option<(u32, u32)>,
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
    /// basicConstraints cA = TRUE, or a v1/v2 certificate whose subject equals its issuer.
    pub(crate) is_ca: bool,
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
    fn expect(&mut self, want: u8, what: &'static str) -> R<(usize, usize, usize)> {
        let (tag, s, c, e) = self.tlv()?;
        if tag != want {
            return Err(DerError(what));
        }
        Ok((s, c, e))
    }
    fn sub(&self, c: usize, e: usize) -> Reader<'a> {
        // c..e was produced by tlv() and lies within buf.
        Reader {
            buf: &self.buf[..e],
            pos: c,
        }
    }
}

const OID_SKI: &[u8] = &[0x55, 0x1d, 0x0e];
const OID_BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];

/// Total length of the first DER element in `buf` (used to find where a certificate ends,
/// e.g. in a file that holds several concatenated DER certificates).
pub(crate) fn first_element_len(buf: &[u8]) -> R<usize> {
    let mut r = Reader::new(buf);
    let (_, _, _, e) = r.tlv()?;
    Ok(e)
}

/// Parse the fields the store needs from one certificate, which must span all of `der`.
pub(crate) fn parse_cert(der: &[u8]) -> R<CertFields> {
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
        not_before,
        not_after,
        is_ca,
    })
}

fn digits(b: &[u8]) -> R<i64> {
    let mut v = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return Err(DerError("bad digit in time"));
        }
        v = v * 10 + (c - b'0') as i64;
    }
    Ok(v)
}

fn read_time(r: &mut Reader<'_>, der: &[u8]) -> R<i64> {
    let (tag, _, c, e) = r.tlv()?;
    let s = &der[c..e];
    let (year, rest) = match (tag, s.len()) {
        (0x17, 13) => {
            let yy = digits(&s[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &s[2..])
        }
        (0x18, 15) => (digits(&s[..4])?, &s[4..]),
        _ => return Err(DerError("bad time encoding")),
    };
    if rest[10] != b'Z' {
        return Err(DerError("time is not UTC (Z)"));
    }
    let month = digits(&rest[0..2])?;
    let day = digits(&rest[2..4])?;
    let hour = digits(&rest[4..6])?;
    let min = digits(&rest[6..8])?;
    let sec = digits(&rest[8..10])?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return Err(DerError("time out of range"));
    }
    Ok(days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
        assert_eq!(days_from_civil(9999, 12, 31) * 86400 + 86399, 253402300799);
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
