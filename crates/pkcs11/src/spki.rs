//! The little DER this crate writes and reads: a SubjectPublicKeyInfo from a token's
//! public attributes (EC parameters and point, RSA modulus and exponent), and the
//! conversion of a token's raw ECDSA signature (r || s) to the DER form TLS and X.509 use.

/// OID of id-ecPublicKey (1.2.840.10045.2.1), content bytes.
const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// OID of rsaEncryption (1.2.840.113549.1.1.1), content bytes.
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// CKA_EC_PARAMS (a DER OID) of P-256 (prime256v1).
pub(crate) const P256_PARAMS: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// CKA_EC_PARAMS of P-384 (secp384r1).
pub(crate) const P384_PARAMS: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];

pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(content);
    out
}

/// A DER INTEGER from unsigned big-endian bytes.
pub(crate) fn uint(be: &[u8]) -> Vec<u8> {
    let trimmed: &[u8] = {
        let start = be.iter().position(|b| *b != 0).unwrap_or(be.len());
        &be[start..]
    };
    let mut c = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.is_empty() || trimmed[0] & 0x80 != 0 {
        c.push(0);
    }
    c.extend_from_slice(trimmed);
    tlv(0x02, &c)
}

/// RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
pub(crate) fn rsa_public_key(modulus: &[u8], exponent: &[u8]) -> Vec<u8> {
    let mut c = uint(modulus);
    c.extend(uint(exponent));
    tlv(0x30, &c)
}

fn spki(alg: &[u8], key: &[u8]) -> Vec<u8> {
    let mut bits = vec![0u8];
    bits.extend_from_slice(key);
    let mut c = tlv(0x30, alg);
    c.extend(tlv(0x03, &bits));
    tlv(0x30, &c)
}

pub(crate) fn rsa_spki(rsa_public_key: &[u8]) -> Vec<u8> {
    let mut alg = tlv(0x06, RSA_ENCRYPTION);
    alg.extend([0x05, 0x00]);
    spki(&alg, rsa_public_key)
}

pub(crate) fn ec_spki(params: &[u8], point: &[u8]) -> Vec<u8> {
    let mut alg = tlv(0x06, EC_PUBLIC_KEY);
    alg.extend_from_slice(params);
    spki(&alg, point)
}

/// CKA_EC_POINT is a DER OCTET STRING holding the uncompressed point (PKCS#11 2.40); a
/// few tokens return the raw point. Returns the raw point.
pub(crate) fn ec_point(attr: &[u8], field_len: usize) -> Option<Vec<u8>> {
    let raw_len = 1 + 2 * field_len;
    if attr.len() == raw_len && attr[0] == 0x04 {
        return Some(attr.to_vec());
    }
    let (tag, content) = read_tlv(attr)?;
    (tag == 0x04 && content.len() == raw_len && content[0] == 0x04).then(|| content.to_vec())
}

/// One TLV at the start of `b` that covers all of it: (tag, content).
fn read_tlv(b: &[u8]) -> Option<(u8, &[u8])> {
    let tag = *b.first()?;
    let l0 = *b.get(1)?;
    let (len, off) = if l0 < 0x80 {
        (l0 as usize, 2)
    } else {
        let n = (l0 & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *b.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let content = b.get(off..off.checked_add(len)?)?;
    (off + len == b.len()).then_some((tag, content))
}

/// ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } from the token's r || s.
pub(crate) fn ecdsa_sig(raw: &[u8]) -> Option<Vec<u8>> {
    if raw.is_empty() || !raw.len().is_multiple_of(2) {
        return None;
    }
    let (r, s) = raw.split_at(raw.len() / 2);
    let mut c = uint(r);
    c.extend(uint(s));
    Some(tlv(0x30, &c))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_lengths() {
        assert_eq!(uint(&[0, 0, 1]), vec![2, 1, 1]);
        assert_eq!(uint(&[0x80]), vec![2, 2, 0, 0x80]);
        assert_eq!(uint(&[0]), vec![2, 1, 0]);
        let long = tlv(0x04, &[0u8; 300]);
        assert_eq!(&long[..4], &[0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(read_tlv(&long).unwrap().1.len(), 300);
    }

    #[test]
    fn ec_spki_matches_aws_lc() {
        use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
        let k = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
        let point = k.public_key().as_ref().to_vec();
        let wrapped = tlv(0x04, &point);
        assert_eq!(ec_point(&wrapped, 32).unwrap(), point);
        assert_eq!(ec_point(&point, 32).unwrap(), point);
        let spki = ec_spki(P256_PARAMS, &point);
        // The fixed 26-byte prefix of every P-256 SubjectPublicKeyInfo.
        assert_eq!(spki.len(), 91);
        assert_eq!(&spki[..4], &[0x30, 0x59, 0x30, 0x13]);
        assert_eq!(&spki[26..], &point[..]);
    }
}
