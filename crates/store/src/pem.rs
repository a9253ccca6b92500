//! A linear PEM scanner for the load hot path.
//!
//! It walks a file once, yielding each `-----BEGIN x-----` ... `-----END x-----` block;
//! text around blocks is ignored. Certificate bodies are base64-decoded (whitespace
//! stripped) straight into the caller's buffer. Other blocks are reported by label only:
//! the contents of a private-key block are never decoded, copied or echoed.

use memchr::memmem;

/// One block found in a PEM text.
pub(crate) enum Block<'a> {
    /// A `CERTIFICATE` block: its base64 body (with line breaks).
    Certificate(&'a [u8]),
    /// Any other well-formed block (label sanitised for printing).
    Other { label: String, private_key: bool },
    /// A malformed block; the scanner continues after it where it can.
    Bad(&'static str),
}

pub(crate) struct PemScanner<'a> {
    text: &'a [u8],
    pos: usize,
    /// Where the next BEGIN is, found while checking the previous block (None: unknown,
    /// Some(None): there is none).
    next_begin: Option<Option<usize>>,
    begin: memmem::Finder<'static>,
    end: memmem::Finder<'static>,
}

/// Does this buffer contain a PEM BEGIN line at all?
pub(crate) fn looks_like_pem(buf: &[u8]) -> bool {
    memmem::find(buf, b"-----BEGIN ").is_some()
}

fn sanitize(label: &[u8]) -> String {
    label
        .iter()
        .take(64)
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}

impl<'a> PemScanner<'a> {
    pub(crate) fn new(text: &'a [u8]) -> Self {
        PemScanner {
            text,
            pos: 0,
            next_begin: None,
            begin: memmem::Finder::new(b"-----BEGIN "),
            end: memmem::Finder::new(b"-----END "),
        }
    }
}

impl<'a> Iterator for PemScanner<'a> {
    type Item = Block<'a>;

    fn next(&mut self) -> Option<Block<'a>> {
        let text = self.text;
        let rest = text.get(self.pos..)?;
        let b = match self.next_begin.take() {
            Some(Some(at)) if at >= self.pos => at,
            Some(None) => return None,
            _ => self.begin.find(rest)? + self.pos,
        };
        let label_start = b + 11;
        // The label ends at the next "-----" on the same line.
        let line_end =
            memchr::memchr(b'\n', &text[label_start..]).map_or(text.len(), |i| label_start + i);
        let line = &text[label_start..line_end];
        let Some(le) = memmem::find(line, b"-----") else {
            self.pos = line_end;
            return Some(Block::Bad("BEGIN line without closing dashes"));
        };
        let label = &line[..le];
        let body_start = (line_end + 1).min(text.len());
        let Some(e) = self.end.find(&text[body_start..]).map(|i| i + body_start) else {
            self.pos = text.len();
            return Some(Block::Bad("BEGIN without matching END line"));
        };
        // A second BEGIN before this END means the first block was never closed. The
        // search runs on past END, so it also finds the next block's BEGIN.
        let nb = self.begin.find(&text[body_start..]).map(|i| i + body_start);
        if let Some(nb) = nb.filter(|&nb| nb < e) {
            self.pos = nb;
            self.next_begin = Some(Some(nb));
            return Some(Block::Bad("BEGIN without matching END line"));
        }
        self.next_begin = Some(nb);
        let end_label_start = e + 9;
        let ok_end = text.get(end_label_start..end_label_start + label.len()) == Some(label)
            && text.get(end_label_start + label.len()..end_label_start + label.len() + 5)
                == Some(b"-----");
        let after = memchr::memchr(b'\n', &text[e..]).map_or(text.len(), |i| e + i);
        self.pos = after;
        if !ok_end {
            return Some(Block::Bad("END label does not match BEGIN label"));
        }
        let body = &text[body_start..e];
        if label == b"CERTIFICATE" {
            Some(Block::Certificate(body))
        } else {
            let private_key = memmem::find(label, b"PRIVATE KEY").is_some();
            Some(Block::Other {
                label: sanitize(label),
                private_key,
            })
        }
    }
}

const INVALID: u8 = 0xff;
const SPACE: u8 = 0xfe;
const PAD: u8 = 0xfd;

/// Standard base64 alphabet to 6-bit values; whitespace, '=' and invalid bytes marked.
const TABLE: [u8; 256] = {
    let mut t = [INVALID; 256];
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut i = 0;
    while i < 64 {
        t[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    t[b' ' as usize] = SPACE;
    t[b'\t' as usize] = SPACE;
    t[b'\r' as usize] = SPACE;
    t[b'\n' as usize] = SPACE;
    t[0x0b] = SPACE;
    t[0x0c] = SPACE;
    t[b'=' as usize] = PAD;
    t
};

/// Decode a base64 body (standard alphabet, canonical padding, any ASCII whitespace
/// between characters) and append the bytes to `out`. One pass, no intermediate copy:
/// whole quads of alphabet characters take a fast path; whitespace, padding and errors
/// take a per-character path. Non-canonical trailing bits are rejected, as the base64
/// crate does. On error `out` may hold partial output; the caller truncates.
pub(crate) fn decode_body(body: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let start = out.len();
    out.resize(start + body.len() / 4 * 3 + 3, 0);
    let mut o = start;
    let mut quad = [0u8; 4];
    let mut q = 0usize;
    let mut i = 0usize;
    let n = body.len();
    let mut padded = false;
    while i < n {
        if q == 0 && !padded {
            while i + 4 <= n {
                let (a, b, c, d) = (
                    TABLE[body[i] as usize],
                    TABLE[body[i + 1] as usize],
                    TABLE[body[i + 2] as usize],
                    TABLE[body[i + 3] as usize],
                );
                if (a | b | c | d) & 0xc0 != 0 {
                    break;
                }
                let v = (u32::from(a) << 18)
                    | (u32::from(b) << 12)
                    | (u32::from(c) << 6)
                    | u32::from(d);
                out[o] = (v >> 16) as u8;
                out[o + 1] = (v >> 8) as u8;
                out[o + 2] = v as u8;
                o += 3;
                i += 4;
            }
            if i >= n {
                break;
            }
        }
        let t = TABLE[body[i] as usize];
        i += 1;
        match t {
            SPACE => {}
            INVALID => {
                out.truncate(start);
                return Err("invalid character in CERTIFICATE block (base64 expected)");
            }
            PAD => {
                if padded {
                    // Second '=' of "xx==".
                    if q != 3 {
                        out.truncate(start);
                        return Err("invalid base64 padding");
                    }
                    q = 4;
                    continue;
                }
                match q {
                    2 => {
                        if quad[1] & 0x0f != 0 {
                            out.truncate(start);
                            return Err("non-canonical base64 padding");
                        }
                        out[o] = (quad[0] << 2) | (quad[1] >> 4);
                        o += 1;
                        padded = true;
                        q = 3; // expect a second '='
                    }
                    3 => {
                        if quad[2] & 0x03 != 0 {
                            out.truncate(start);
                            return Err("non-canonical base64 padding");
                        }
                        out[o] = (quad[0] << 2) | (quad[1] >> 4);
                        out[o + 1] = (quad[1] << 4) | (quad[2] >> 2);
                        o += 2;
                        padded = true;
                        q = 4;
                    }
                    _ => {
                        out.truncate(start);
                        return Err("invalid base64 padding");
                    }
                }
            }
            v => {
                if padded {
                    out.truncate(start);
                    return Err("base64 data after padding");
                }
                quad[q] = v;
                q += 1;
                if q == 4 {
                    let x = (u32::from(quad[0]) << 18)
                        | (u32::from(quad[1]) << 12)
                        | (u32::from(quad[2]) << 6)
                        | u32::from(quad[3]);
                    out[o] = (x >> 16) as u8;
                    out[o + 1] = (x >> 8) as u8;
                    out[o + 2] = x as u8;
                    o += 3;
                    q = 0;
                }
            }
        }
    }
    let complete = if padded { q == 4 } else { q == 0 };
    if !complete {
        out.truncate(start);
        return Err("truncated base64");
    }
    if o == start {
        out.truncate(start);
        return Err("empty CERTIFICATE block");
    }
    out.truncate(o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn ours(s: &[u8]) -> Option<Vec<u8>> {
        let mut v = vec![7u8];
        decode_body(s, &mut v).ok().map(|_| v[1..].to_vec())
    }

    #[test]
    fn matches_the_base64_crate() {
        let e = base64::engine::general_purpose::STANDARD;
        let mut x = 0x9e37_79b9u32;
        for len in 1..200usize {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x as u8
                })
                .collect();
            let enc = e.encode(&data);
            assert_eq!(
                ours(enc.as_bytes()).as_deref(),
                Some(&data[..]),
                "len {len}"
            );
            // Line-wrapped at 64 with CRLF and indentation.
            let wrapped: String = enc
                .as_bytes()
                .chunks(64)
                .map(|c| format!("  {}\r\n", std::str::from_utf8(c).unwrap_or("")))
                .collect();
            assert_eq!(
                ours(wrapped.as_bytes()).as_deref(),
                Some(&data[..]),
                "wrapped len {len}"
            );
            // Any single corruption the crate rejects, we reject.
            let mut bad = enc.clone().into_bytes();
            let p = (x as usize) % bad.len();
            bad[p] = b"!:=A-_"[(x as usize >> 8) % 6];
            let theirs = e.decode(&bad).ok();
            assert_eq!(
                ours(&bad),
                theirs,
                "corrupt {:?}",
                String::from_utf8_lossy(&bad)
            );
        }
        for bad in [
            &b"QQ"[..],
            b"QQ=",
            b"QR==",
            b"QUJ=",
            b"Q===",
            b"QUJD=",
            b"QQ==QQ==",
            b"",
        ] {
            assert_eq!(ours(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
