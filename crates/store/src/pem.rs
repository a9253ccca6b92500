//! A linear PEM scanner for the load hot path.
//!
//! It walks a file once, yielding each `-----BEGIN x-----` ... `-----END x-----` block;
//! text around blocks is ignored. Certificate bodies are base64-decoded (whitespace
//! stripped) straight into the caller's buffer. Other blocks are reported by label only:
//! the contents of a private-key block are never decoded, copied or echoed.

use base64::Engine;
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
        let b = self.begin.find(rest)? + self.pos;
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
        // A second BEGIN before this END means the first block was never closed.
        if let Some(nb) = self.begin.find(&text[body_start..e]) {
            self.pos = body_start + nb;
            return Some(Block::Bad("BEGIN without matching END line"));
        }
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

/// Decode a base64 body (with any ASCII whitespace) and append the bytes to `out`.
/// `scratch` is reused between calls to hold the body without whitespace.
pub(crate) fn decode_body(
    body: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), &'static str> {
    scratch.clear();
    scratch.reserve(body.len());
    let mut rest = body;
    while !rest.is_empty() {
        let nl = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let mut line = &rest[..nl];
        while let [first, tail @ ..] = line {
            if first.is_ascii_whitespace() {
                line = tail;
            } else {
                break;
            }
        }
        while let [head @ .., last] = line {
            if last.is_ascii_whitespace() {
                line = head;
            } else {
                break;
            }
        }
        if line.contains(&b':') {
            return Err("PEM headers are not allowed in a CERTIFICATE block");
        }
        scratch.extend_from_slice(line);
        rest = rest.get(nl + 1..).unwrap_or(&[]);
    }
    if scratch.iter().any(|b| b.is_ascii_whitespace()) {
        scratch.retain(|b| !b.is_ascii_whitespace());
    }
    if scratch.is_empty() {
        return Err("empty CERTIFICATE block");
    }
    base64::engine::general_purpose::STANDARD
        .decode_vec(&scratch[..], out)
        .map_err(|_| "invalid base64 in CERTIFICATE block")
}
