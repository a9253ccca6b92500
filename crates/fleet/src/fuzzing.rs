//! Entry points for the fuzz harnesses (`fuzz/src/harness.rs`) into the RESP reply reader
//! of the fleet's Redis connections (`resp.rs`). Not API: hidden from the docs, may
//! change at any time. They call the same code the fleet runs, unchanged.

use std::io;

/// What the RESP reader made of a stream of bytes from "Redis".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespRun {
    /// Each reply read, in order: `nil`, `status`, `error`, `int`, `bulk N`, `array N`.
    pub replies: Vec<String>,
    /// How the stream ended: `closed` (no further whole reply), `too_large`, `malformed`.
    pub end: &'static str,
    /// The most bytes the reader's buffer held between replies (never more than the cap:
    /// nothing is read past what a reply is known to need).
    pub buffered_max: usize,
}

/// A stream that hands out `data` in reads of at most `chunk` bytes.
struct Dribble<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl io::Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.data.len().min(self.chunk).min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Read replies from `data` as tlskit reads Redis's answers, each capped at `cap` bytes,
/// the bytes arriving in reads of at most `chunk` bytes (1 for a drip), until the stream
/// ends or a reply is refused.
pub fn resp_replies(data: &[u8], cap: usize, chunk: usize) -> RespRun {
    use crate::resp::{read_reply, ReadError, ReplyError, Value};
    let mut io = Dribble {
        data,
        chunk: chunk.max(1),
    };
    let mut buf = Vec::new();
    let mut run = RespRun {
        replies: Vec::new(),
        end: "closed",
        buffered_max: 0,
    };
    loop {
        let r = read_reply(&mut io, &mut buf, cap);
        run.buffered_max = run.buffered_max.max(buf.len());
        match r {
            Ok(v) => run.replies.push(match v {
                Value::Nil => "nil".into(),
                Value::Status(_) => "status".into(),
                Value::Error(_) => "error".into(),
                Value::Int(_) => "int".into(),
                Value::Bulk(b) => format!("bulk {}", b.len()),
                Value::Array(a) => format!("array {}", a.len()),
            }),
            Err(ReadError::Reply(ReplyError::TooLarge { .. })) => {
                run.end = "too_large";
                return run;
            }
            Err(ReadError::Reply(ReplyError::Malformed(_))) => {
                run.end = "malformed";
                return run;
            }
            Err(ReadError::Closed | ReadError::Io(_)) => return run,
        }
    }
}
