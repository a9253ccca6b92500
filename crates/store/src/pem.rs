//! A linear PEM scanner for the load hot path.
//!
//! It walks a file once, yielding each `-----BEGIN x-----` ... `-----END x-----` block;
//! text around blocks is ignored. Certificate bodies are base64-decoded (whitespace
//! stripped) straight into the caller's buffer. Other blocks are reported by label only:
//! the contents of a private-key block are never decoded, copied or echoed.

use memchr::memmem;

use crate::arena::ByteBuf;

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
    /// The last END found; reused while it lies ahead, so a run of unclosed BEGIN lines
    /// does not rescan to the same END again and again (keeps the scan linear).
    last_end: Option<usize>,
    begin: &'static memmem::Finder<'static>,
    end: &'static memmem::Finder<'static>,
}

/// The marker searchers, built once (building one per file showed in one-file-at-a-time
/// loads).
static BEGIN: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"-----BEGIN "));
static END: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"-----END "));

static DASHES: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"-----"));
static PRIVATE_KEY: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"PRIVATE KEY"));

/// Does this buffer contain a PEM BEGIN line at all?
pub(crate) fn looks_like_pem(buf: &[u8]) -> bool {
    BEGIN.find(buf).is_some()
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
            last_end: None,
            begin: &BEGIN,
            end: &END,
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
            // The usual layout: the next BEGIN line right after the last END line's break
            // (the first occurrence, as a search would find it).
            _ if rest.starts_with(b"-----BEGIN ") => self.pos,
            _ if rest.first() != Some(&b'-')
                && rest.get(1..).is_some_and(|r| r.starts_with(b"-----BEGIN ")) =>
            {
                self.pos + 1
            }
            _ => self.begin.find(rest)? + self.pos,
        };
        let label_start = b + 11;
        // The label ends at the next "-----" on the same line.
        let line_end =
            memchr::memchr(b'\n', &text[label_start..]).map_or(text.len(), |i| label_start + i);
        let line = &text[label_start..line_end];
        // The usual label first; a searcher built once otherwise (`memmem::find` builds
        // one per call, which cost more than the rest of the scan).
        let le = if line.starts_with(b"CERTIFICATE-----") {
            Some(11)
        } else {
            DASHES.find(line)
        };
        let Some(le) = le else {
            self.pos = line_end;
            return Some(Block::Bad("BEGIN line without closing dashes"));
        };
        let label = &line[..le];
        let body_start = (line_end + 1).min(text.len());
        // The usual block: base64 holds no '-', so the first '-' after the BEGIN line
        // starts this block's END line. Then no BEGIN lies before it (a BEGIN line starts
        // with '-' too), and one pass over the body finds both; the next BEGIN is searched
        // from after the END line (a BEGIN on the END line itself is skipped either way).
        // Anything else (headers with '-', an unclosed block) takes the full search below.
        let dash = memchr::memchr(b'-', &text[body_start..]).map(|i| i + body_start);
        if let Some(e) = dash.filter(|&d| text[d..].starts_with(b"-----END ")) {
            self.last_end = Some(e);
            self.next_begin = None;
            return Some(self.finish_block(label, body_start, e));
        }
        let found = match self.last_end {
            Some(e) if e >= body_start => Some(e),
            _ => self.end.find(&text[body_start..]).map(|i| i + body_start),
        };
        self.last_end = found;
        let Some(e) = found else {
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
        Some(self.finish_block(label, body_start, e))
    }
}

impl<'a> PemScanner<'a> {
    /// The block whose BEGIN label is `label`, body starts at `body_start` and END line
    /// at `e`: checks the END label and moves past the END line.
    fn finish_block(&mut self, label: &[u8], body_start: usize, e: usize) -> Block<'a> {
        let text = self.text;
        let end_label_start = e + 9;
        let ok_end = text.get(end_label_start..end_label_start + label.len()) == Some(label)
            && text.get(end_label_start + label.len()..end_label_start + label.len() + 5)
                == Some(b"-----");
        let after = memchr::memchr(b'\n', &text[e..]).map_or(text.len(), |i| e + i);
        self.pos = after;
        if !ok_end {
            return Block::Bad("END label does not match BEGIN label");
        }
        let body = &text[body_start..e];
        if label == b"CERTIFICATE" {
            Block::Certificate(body)
        } else {
            let private_key = PRIVATE_KEY.find(label).is_some();
            Block::Other {
                label: sanitize(label),
                private_key,
            }
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

/// `TABLE` with each 6-bit value pre-shifted to its place in a quad's 24 bits, so a quad
/// is four lookups OR-ed together; bytes outside the alphabet (whitespace and '=' too)
/// set bit 31.
const fn shifted(shift: u32) -> [u32; 256] {
    let mut t = [1u32 << 31; 256];
    let mut i = 0;
    while i < 256 {
        if TABLE[i] < 64 {
            t[i] = (TABLE[i] as u32) << shift;
        }
        i += 1;
    }
    t
}
static Q0: [u32; 256] = shifted(18);
static Q1: [u32; 256] = shifted(12);
static Q2: [u32; 256] = shifted(6);
static Q3: [u32; 256] = shifted(0);

/// Decode complete quads of alphabet characters (no whitespace, no padding) into `dst`
/// (3 bytes per quad). Branch-free per quad; false if any byte is outside the alphabet.
#[inline]
fn decode_quads(src: &[u8], dst: &mut [u8]) -> bool {
    let mut bad = 0u32;
    for (q, d) in src.chunks_exact(4).zip(dst.chunks_exact_mut(3)) {
        let x = Q0[q[0] as usize] | Q1[q[1] as usize] | Q2[q[2] as usize] | Q3[q[3] as usize];
        bad |= x;
        d[0] = (x >> 16) as u8;
        d[1] = (x >> 8) as u8;
        d[2] = x as u8;
    }
    bad >> 31 == 0
}

/// Decode a base64 body (standard alphabet, canonical padding, any ASCII whitespace
/// between characters) and append the bytes to `out`. The usual PEM layout takes a fast
/// path: the lines that are whole quads (all but the last line, which may be padded) are
/// gathered without their line breaks and decoded at once with SIMD (`base64-simd`,
/// no padding accepted, so it succeeds only on alphabet characters); the rest goes to the
/// per-character decoder. If the SIMD decoder refuses, the whole body is decoded again by
/// [`decode_lines`], which yields the exact result or error. Non-canonical trailing bits
/// are rejected, as the base64 crate does. On error `out` may hold partial output; the
/// caller truncates.
pub(crate) fn decode_body<B: ByteBuf + ?Sized>(
    body: &[u8],
    out: &mut B,
) -> Result<(), &'static str> {
    thread_local! {
        static GATHER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let start = out.len();
    let done = GATHER.with(|g| {
        let Ok(mut g) = g.try_borrow_mut() else {
            return None;
        };
        g.clear();
        let mut i = 0usize;
        while i < body.len() {
            let (line, next) = next_line(body, i);
            if line.len() % 4 != 0 {
                break;
            }
            if line.last() == Some(&b'=') {
                // All but the padded last quad; that one goes to the per-character decoder.
                let keep = line.len() - 4;
                g.extend_from_slice(&line[..keep]);
                i += keep;
                break;
            }
            match <&[u8; 64]>::try_from(line) {
                Ok(l) => g.extend_from_slice(l),
                Err(_) => g.extend_from_slice(line),
            }
            i = next;
        }
        out.append_base64(&g).then_some(i)
    });
    match done {
        Some(i) => decode_rest(body.get(i..).unwrap_or(&[]), out, start),
        None => decode_lines(body, out),
    }
}

/// The line starting at `i` (without its line break and a '\r' before it) and where the
/// next line starts.
#[inline]
fn next_line(body: &[u8], i: usize) -> (&[u8], usize) {
    // The usual line: 64 characters and '\n'.
    let nl = if body.get(i + 64) == Some(&b'\n') {
        i + 64
    } else {
        memchr::memchr(b'\n', &body[i..]).map_or(body.len(), |k| i + k)
    };
    let mut line = &body[i..nl];
    if let [head @ .., b'\r'] = line {
        line = head;
    }
    (line, nl + 1)
}

/// [`decode_body`] without SIMD: whole-quad lines a line at a time (table lookups), the
/// rest per character.
pub(crate) fn decode_lines<B: ByteBuf + ?Sized>(
    body: &[u8],
    out: &mut B,
) -> Result<(), &'static str> {
    let start = out.len();
    out.reserve(body.len() / 4 * 3 + 3);
    let mut i = 0usize;
    while i < body.len() {
        let (line, next) = next_line(body, i);
        if line.len() % 4 != 0 {
            break;
        }
        let o = out.len();
        out.resize_zeroed(o + line.len() / 4 * 3);
        if !decode_quads(line, &mut out[o..]) {
            out.truncate(o);
            break;
        }
        i = next;
    }
    decode_rest(body.get(i..).unwrap_or(&[]), out, start)
}

/// The per-character decoder: continues at a quad boundary, appending to `out`; `start`
/// is where this body's output began (for the empty check and truncation on error).
fn decode_rest<B: ByteBuf + ?Sized>(
    body: &[u8],
    out: &mut B,
    start: usize,
) -> Result<(), &'static str> {
    let mut o = out.len();
    out.resize_zeroed(o + body.len() / 4 * 3 + 3);
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

    /// Both decoders, which must agree (the SIMD path and its fallback).
    fn ours(s: &[u8]) -> Option<Vec<u8>> {
        let mut v = vec![7u8];
        let a = decode_body(s, &mut v).ok().map(|_| v[1..].to_vec());
        let mut w = vec![7u8];
        let b = decode_lines(s, &mut w).ok().map(|_| w[1..].to_vec());
        assert_eq!(
            a,
            b,
            "decoders disagree on {:?}",
            String::from_utf8_lossy(s)
        );
        a
    }

    #[test]
    fn matches_the_base64_crate() {
        let e = base64::engine::general_purpose::STANDARD;
        let mut x = 0x9e37_79b9u32;
        for len in 1..400usize {
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
            // Plain 64-column lines, LF and CRLF (the line-at-a-time fast path), with and
            // without a final line break, intact and with one byte corrupted (the crate
            // decodes the text with the line breaks removed).
            for eol in ["\n", "\r\n"] {
                for tail in ["", eol] {
                    let lines: Vec<&str> = enc
                        .as_bytes()
                        .chunks(64)
                        .map(|c| std::str::from_utf8(c).unwrap_or(""))
                        .collect();
                    let text = format!("{}{tail}", lines.join(eol));
                    assert_eq!(
                        ours(text.as_bytes()).as_deref(),
                        Some(&data[..]),
                        "lines len {len}"
                    );
                    let mut bad = text.clone().into_bytes();
                    let p = (x as usize >> 3) % bad.len();
                    if bad[p] != b'\n' && bad[p] != b'\r' {
                        bad[p] = b"!:=A-_ \t"[(x as usize >> 11) % 8];
                        let stripped: Vec<u8> = bad
                            .iter()
                            .copied()
                            .filter(|&b| b != b'\n' && b != b'\r' && b != b' ' && b != b'\t')
                            .collect();
                        assert_eq!(
                            ours(&bad),
                            e.decode(&stripped).ok(),
                            "corrupt lines {:?}",
                            String::from_utf8_lossy(&bad)
                        );
                    }
                }
            }
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

#[cfg(test)]
mod scan_tests {
    use super::*;

    fn scan(t: &str) -> Vec<String> {
        PemScanner::new(t.as_bytes())
            .map(|b| match b {
                Block::Certificate(body) => format!("cert {}", String::from_utf8_lossy(body)),
                Block::Other { label, private_key } => format!("other {label} {private_key}"),
                Block::Bad(why) => format!("bad {why}"),
            })
            .collect()
    }

    #[test]
    fn the_one_pass_path_and_the_full_search_agree_on_odd_layouts() {
        const B: &str = "-----BEGIN CERTIFICATE-----";
        const E: &str = "-----END CERTIFICATE-----";
        // The usual layout, LF and CRLF, text around and between blocks.
        assert_eq!(
            scan(&format!("x\n{B}\nQUJD\n{E}\n{B}\r\nREVG\r\n{E}\r\nend\n")),
            ["cert QUJD\n", "cert REVG\r\n"]
        );
        // A '-' in a header (full search), then a certificate.
        assert_eq!(
            scan(&format!(
                "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n\
                 -----END RSA PRIVATE KEY-----\n{B}\nQUJD\n{E}\n"
            )),
            ["other RSA PRIVATE KEY true", "cert QUJD\n"]
        );
        // A '-' inside a certificate body is kept for the decoder to refuse.
        assert_eq!(
            scan(&format!("{B}\nQU-D\n{E}\n{B}\nQUJD\n{E}\n")),
            ["cert QU-D\n", "cert QUJD\n"]
        );
        // A BEGIN on the END line is not a block start; nor is one on the BEGIN line.
        assert_eq!(
            scan(&format!("{B}\nQUJD\n{E}{B}\nREVG\n{E}\n")),
            ["cert QUJD\n"]
        );
        // An unclosed block, a mismatched END, a BEGIN line without closing dashes.
        assert_eq!(
            scan(&format!(
                "{B}\nQUJD\n{B}\nREVG\n{E}\n-----BEGIN X509 CRL-----\nAAAA\n{E}\n\
                 -----BEGIN CERTIFICATE\n{B}\nR0hJ\n{E}"
            )),
            [
                "bad BEGIN without matching END line",
                "cert REVG\n",
                "bad END label does not match BEGIN label",
                "bad BEGIN line without closing dashes",
                "cert R0hJ\n",
            ]
        );
        // A label with dashes of its own.
        assert_eq!(
            scan("-----BEGIN A-B-----\nAAAA\n-----END A-B-----\n"),
            ["other A-B false"]
        );
    }

    #[test]
    fn unclosed_blocks_are_reported_and_scanning_stays_linear() {
        // 20,000 BEGIN lines before a single END: each is reported once; with the END
        // position cached this takes milliseconds, not a rescan per block.
        let mut t = String::new();
        for _ in 0..20_000 {
            t.push_str("-----BEGIN CERTIFICATE-----\nAAAA\n");
        }
        t.push_str("-----END CERTIFICATE-----\n");
        let blocks: Vec<_> = PemScanner::new(t.as_bytes()).collect();
        assert_eq!(blocks.len(), 20_000);
        assert!(blocks[..19_999].iter().all(|b| matches!(b, Block::Bad(_))));
        assert!(matches!(blocks[19_999], Block::Certificate(_)));
    }
}
