//! The request heads of the built-in HTTP responder (`--respond http`), read as RFC 9112
//! asks of a server that must not be fooled about where a request ends: a body announced
//! by Content-Length is skipped, a chunked body ends the connection after the answer,
//! and anything ambiguous (Content-Length with Transfer-Encoding, differing or malformed
//! lengths, a coding other than chunked last, obsolete line folding, space before a colon)
//! is a 400 and the connection closes. Before this, a POST whose body was
//! `GET /smuggled HTTP/1.1 ...` got two responses.

/// How the body of a request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding (answered, then the connection closes).
    Chunked,
}

/// What the responder needs from a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// The client asked to close (or HTTP/1.0 without keep-alive).
    pub(crate) close: bool,
    /// The body that follows the head.
    pub(crate) body: Body,
}

/// Why a head is refused with 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadRequest {
    /// Request line not `METHOD TARGET HTTP/1.x`.
    RequestLine,
    /// A header line without a colon, with whitespace before it, or folded.
    HeaderLine,
    /// Content-Length not digits, or several that differ.
    ContentLength,
    /// Both Content-Length and Transfer-Encoding.
    Conflict,
    /// Transfer-Encoding whose last coding is not chunked.
    TransferEncoding,
}

impl BadRequest {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::RequestLine => "malformed request line",
            Self::HeaderLine => "malformed header line",
            Self::ContentLength => "invalid Content-Length",
            Self::Conflict => "both Content-Length and Transfer-Encoding",
            Self::TransferEncoding => "Transfer-Encoding not ending in chunked",
        }
    }
}

/// The end of the head (index after the blank line), if `buf` holds one.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Parse a head (ending in CRLF CRLF).
pub(crate) fn parse(head: &[u8]) -> Result<Head, BadRequest> {
    let text = head.strip_suffix(b"\r\n\r\n").unwrap_or(head);
    let mut lines = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request = lines.next().ok_or(BadRequest::RequestLine)?;
    let mut parts = request.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadRequest::RequestLine);
    };
    if method.is_empty() || target.is_empty() || !version.starts_with(b"HTTP/1.") {
        return Err(BadRequest::RequestLine);
    }
    let http10 = version == b"HTTP/1.0";
    let mut length: Option<u64> = None;
    let mut te: Option<Vec<u8>> = None;
    let mut connection_close = false;
    let mut keep_alive = false;
    for line in lines {
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            return Err(BadRequest::HeaderLine);
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(BadRequest::HeaderLine)?;
        let name = &line[..colon];
        if name.is_empty()
            || name
                .iter()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(BadRequest::HeaderLine);
        }
        let value = line[colon + 1..].trim_ascii();
        if name.eq_ignore_ascii_case(b"content-length") {
            for v in value.split(|&b| b == b',') {
                let v = v.trim_ascii();
                if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
                    return Err(BadRequest::ContentLength);
                }
                let n: u64 = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or(BadRequest::ContentLength)?;
                if length.is_some_and(|l| l != n) {
                    return Err(BadRequest::ContentLength);
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let all = te.get_or_insert_with(Vec::new);
            if !all.is_empty() {
                all.push(b',');
            }
            all.extend_from_slice(value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                connection_close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        }
    }
    let body = match (length, te) {
        (Some(_), Some(_)) => return Err(BadRequest::Conflict),
        (None, Some(te)) => {
            let last = te.rsplit(|&b| b == b',').next().unwrap_or(&[]).trim_ascii();
            if http10 || !last.eq_ignore_ascii_case(b"chunked") {
                return Err(BadRequest::TransferEncoding);
            }
            Body::Chunked
        }
        (Some(0), None) | (None, None) => Body::None,
        (Some(n), None) => Body::Length(n),
    };
    Ok(Head {
        close: connection_close || (http10 && !keep_alive),
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Head, BadRequest> {
        parse(s.as_bytes())
    }

    #[test]
    fn bodies_and_refusals() {
        let get = p("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            get,
            Ok(Head {
                close: false,
                body: Body::None
            })
        );
        assert_eq!(
            p("POST / HTTP/1.1\r\nContent-Length: 42\r\n\r\n").map(|h| h.body),
            Ok(Body::Length(42))
        );
        assert_eq!(
            p("POST / HTTP/1.1\r\ncontent-length: 5, 5\r\n\r\n").map(|h| h.body),
            Ok(Body::Length(5))
        );
        assert_eq!(
            p("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").map(|h| h.body),
            Ok(Body::Chunked)
        );
        assert_eq!(p("GET / HTTP/1.0\r\n\r\n").map(|h| h.close), Ok(true));
        assert_eq!(
            p("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n").map(|h| h.close),
            Ok(true)
        );
        for (bad, why) in [
            (
                "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
                BadRequest::Conflict,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                BadRequest::ContentLength,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                BadRequest::ContentLength,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
                BadRequest::ContentLength,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
                BadRequest::ContentLength,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
                BadRequest::ContentLength,
            ),
            (
                "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
                BadRequest::TransferEncoding,
            ),
            (
                "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                BadRequest::TransferEncoding,
            ),
            (
                "POST / HTTP/1.1\r\nContent-Length : 5\r\n\r\n",
                BadRequest::HeaderLine,
            ),
            (
                "POST / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
                BadRequest::HeaderLine,
            ),
            ("POST / HTTP/1.1\r\nnocolon\r\n\r\n", BadRequest::HeaderLine),
            ("GET /\r\n\r\n", BadRequest::RequestLine),
            ("GET / HTTP/2.0\r\n\r\n", BadRequest::RequestLine),
        ] {
            assert_eq!(p(bad), Err(why), "{bad:?}");
        }
    }
}
