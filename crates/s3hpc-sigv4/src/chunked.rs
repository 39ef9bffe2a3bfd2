//! The aws-chunked body decoder (`STREAMING-*` payloads) and the SHA-256 payload check.
//!
//! The decoder is a push parser: [`Decoder::feed`] takes network reads split anywhere and
//! appends verified payload slices (zero-copy `Bytes` views of the input) to an output queue.
//! Signed chunks are held (as slices) until their signature has been checked, so no byte of a
//! chunk is released before its signature matched.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use s3hpc_core::{ByteStream, Error, ErrorCode};
use sha2::{Digest, Sha256};

use crate::signer::{chunk_signature, sig_eq, trailer_signature};
use crate::{ChunkContext, TrailerSink};

/// Longest chunk-size line (`hex;chunk-signature=<64 hex>` is under 100 bytes).
pub const MAX_CHUNK_LINE: usize = 1024;
/// Largest trailer section.
pub const MAX_TRAILER: usize = 16 * 1024;
/// Largest signed chunk (held in memory until its signature is checked).
pub const MAX_SIGNED_CHUNK: u64 = 64 * 1024 * 1024;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidRequest, msg)
}

/// A trailer section that is not well-formed or lacks the announced trailer: AWS answers
/// MalformedTrailerError with its fixed message for every such case.
fn malformed_trailer() -> Error {
    Error::code(ErrorCode::MalformedTrailerError)
}

fn bad_sig(msg: &str) -> Error {
    Error::new(ErrorCode::SignatureDoesNotMatch, msg)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a chunk-size line.
    Header,
    /// Reading `remaining` bytes of chunk data.
    Data {
        remaining: u64,
    },
    /// Expecting the `\r` then `\n` after chunk data; `last` after the zero chunk.
    Cr {
        last: bool,
    },
    Lf {
        last: bool,
    },
    /// Reading trailer lines up to the empty line.
    Trailer,
    Done,
    Failed,
}

struct Signer {
    ctx: ChunkContext,
    prev: String,
}

/// Incremental aws-chunked decoder.
pub struct Decoder {
    state: State,
    signer: Option<Signer>,
    trailer: bool,
    sink: Option<TrailerSink>,
    line: BytesMut,
    /// Slices of the current signed chunk, released once its signature matched.
    held: Vec<Bytes>,
    hasher: Sha256,
    claimed: String,
    decoded: u64,
    trailer_bytes: usize,
    trailers: Vec<(String, String)>,
    trailer_sig: Option<String>,
    /// The last trailer line ended in a bare LF: minio-go writes the trailers as they are
    /// signed (`name:value\n`) and then `\r\n` before `x-amz-trailer-signature`, so the empty
    /// line that follows belongs to that line's end (AWS accepts the form).
    lf_trailer: bool,
}

impl Decoder {
    /// `ctx` present: chunks are signed and verified. `trailer`: trailer lines follow the zero chunk.
    pub fn new(ctx: Option<ChunkContext>, trailer: bool, sink: Option<TrailerSink>) -> Self {
        Decoder {
            state: State::Header,
            signer: ctx.map(|ctx| Signer { prev: ctx.seed.clone(), ctx }),
            trailer,
            sink,
            line: BytesMut::new(),
            held: Vec::new(),
            hasher: Sha256::new(),
            claimed: String::new(),
            decoded: 0,
            trailer_bytes: 0,
            trailers: Vec::new(),
            trailer_sig: None,
            lf_trailer: false,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decoded payload bytes released so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Feed the next network read. Payload slices are pushed to `out`.
    pub fn feed(&mut self, input: Bytes, out: &mut VecDeque<Bytes>) -> Result<(), Error> {
        let r = self.feed_inner(input, out);
        if r.is_err() {
            self.state = State::Failed;
            self.held.clear();
        }
        r
    }

    fn feed_inner(&mut self, mut input: Bytes, out: &mut VecDeque<Bytes>) -> Result<(), Error> {
        while !input.is_empty() {
            match self.state {
                State::Failed => return Err(invalid("aws-chunked decoder used after an error")),
                State::Done => return Err(invalid("data after the end of the aws-chunked body")),
                State::Header => {
                    let Some(line) = self.take_line(&mut input, MAX_CHUNK_LINE, "chunk-size line")? else {
                        continue;
                    };
                    self.start_chunk(&line, out)?;
                }
                State::Data { remaining } => {
                    let n = (remaining.min(input.len() as u64)) as usize;
                    let piece = input.split_to(n);
                    let remaining = remaining - n as u64;
                    if self.signer.is_some() {
                        self.hasher.update(&piece);
                        self.held.push(piece);
                    } else {
                        self.decoded += n as u64;
                        out.push_back(piece);
                    }
                    self.state = State::Data { remaining };
                    if remaining == 0 {
                        self.end_chunk_data(out)?;
                        self.state = State::Cr { last: false };
                    }
                }
                State::Cr { last } => {
                    if input[0] != b'\r' {
                        return Err(invalid("aws-chunked chunk data is not followed by CRLF"));
                    }
                    input.advance_one();
                    self.state = State::Lf { last };
                }
                State::Lf { last } => {
                    if input[0] != b'\n' {
                        return Err(invalid("aws-chunked chunk data is not followed by CRLF"));
                    }
                    input.advance_one();
                    self.state = if last { State::Done } else { State::Header };
                    if last {
                        self.finish_body()?;
                    }
                }
                State::Trailer => {
                    let budget = MAX_TRAILER.saturating_sub(self.trailer_bytes);
                    let Some((line, crlf)) = self.take_any_line(&mut input, budget, "trailer")? else {
                        continue;
                    };
                    self.trailer_bytes += line.len() + 2;
                    let after_lf = std::mem::replace(&mut self.lf_trailer, !crlf);
                    if line.is_empty() && !crlf {
                        return Err(invalid("aws-chunked trailer does not end with CRLF"));
                    } else if line.is_empty() && !after_lf {
                        self.end_trailers()?;
                    } else if !line.is_empty() {
                        self.trailer_line(&line)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Take bytes up to and including `\r\n` into the line buffer; the line without CRLF once
    /// complete. Lines longer than `limit` are refused.
    fn take_line(&mut self, input: &mut Bytes, limit: usize, what: &str) -> Result<Option<BytesMut>, Error> {
        match self.take_any_line(input, limit, what)? {
            Some((_, false)) => Err(invalid(format!("aws-chunked {what} does not end with CRLF"))),
            Some((line, true)) => Ok(Some(line)),
            None => Ok(None),
        }
    }

    /// As `take_line`, for lines that may end in a bare LF: the line and whether it ended in CRLF.
    fn take_any_line(
        &mut self,
        input: &mut Bytes,
        limit: usize,
        what: &str,
    ) -> Result<Option<(BytesMut, bool)>, Error> {
        match memchr_nl(input) {
            Some(i) => {
                if self.line.len() + i > limit {
                    return Err(invalid(format!("aws-chunked {what} too long")));
                }
                self.line.extend_from_slice(&input[..i]);
                input.advance_by(i + 1);
                let mut line = std::mem::take(&mut self.line);
                let crlf = line.last() == Some(&b'\r');
                if crlf {
                    line.truncate(line.len() - 1);
                }
                Ok(Some((line, crlf)))
            }
            None => {
                if self.line.len() + input.len() > limit + 1 {
                    return Err(invalid(format!("aws-chunked {what} too long")));
                }
                self.line.extend_from_slice(input);
                input.clear();
                Ok(None)
            }
        }
    }

    fn start_chunk(&mut self, line: &[u8], out: &mut VecDeque<Bytes>) -> Result<(), Error> {
        let line = std::str::from_utf8(line).map_err(|_| invalid("aws-chunked chunk-size line is not text"))?;
        let mut fields = line.split(';');
        let size_s = fields.next().unwrap_or("").trim();
        if size_s.is_empty() || size_s.len() > 16 || !size_s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid("aws-chunked chunk size is not a hex number"));
        }
        let size =
            u64::from_str_radix(size_s, 16).map_err(|_| invalid("aws-chunked chunk size is not a hex number"))?;
        if self.signer.is_some() {
            let sig = fields
                .find_map(|f| f.trim().strip_prefix("chunk-signature="))
                .ok_or_else(|| bad_sig("aws-chunked chunk has no chunk-signature"))?;
            if sig.len() != 64 {
                return Err(bad_sig("aws-chunked chunk-signature is malformed"));
            }
            if size > MAX_SIGNED_CHUNK {
                return Err(invalid(format!("signed aws-chunked chunks are limited to {MAX_SIGNED_CHUNK} bytes")));
            }
            self.claimed.clear();
            self.claimed.push_str(sig);
        }
        if size == 0 {
            self.end_chunk_data(out)?;
            self.state = if self.trailer { State::Trailer } else { State::Cr { last: true } };
        } else {
            self.state = State::Data { remaining: size };
        }
        Ok(())
    }

    /// A chunk's data is complete: check its signature, then release it.
    fn end_chunk_data(&mut self, out: &mut VecDeque<Bytes>) -> Result<(), Error> {
        let Some(s) = &mut self.signer else {
            return Ok(());
        };
        let digest = std::mem::take(&mut self.hasher).finalize();
        let want = chunk_signature(&s.ctx.key, &s.ctx.amz_date, &s.ctx.scope, &s.prev, &digest);
        if !sig_eq(&want, &self.claimed) {
            return Err(bad_sig("aws-chunked chunk signature does not match"));
        }
        s.prev = want;
        for piece in self.held.drain(..) {
            self.decoded += piece.len() as u64;
            out.push_back(piece);
        }
        Ok(())
    }

    fn trailer_line(&mut self, line: &[u8]) -> Result<(), Error> {
        let line = std::str::from_utf8(line).map_err(|_| malformed_trailer())?;
        let (name, value) = line.split_once(':').ok_or_else(malformed_trailer)?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if name.is_empty() {
            return Err(malformed_trailer());
        }
        if name == "x-amz-trailer-signature" {
            if self.trailer_sig.replace(value).is_some() {
                return Err(invalid("aws-chunked trailer signature given twice"));
            }
        } else {
            if self.trailer_sig.is_some() {
                return Err(invalid("aws-chunked trailer after the trailer signature"));
            }
            self.trailers.push((name, value));
        }
        Ok(())
    }

    fn end_trailers(&mut self) -> Result<(), Error> {
        if let Some(s) = &self.signer {
            let claimed =
                self.trailer_sig.as_deref().ok_or_else(|| bad_sig("aws-chunked trailer signature is missing"))?;
            let mut canon = Vec::new();
            for (k, v) in &self.trailers {
                canon.extend_from_slice(k.as_bytes());
                canon.push(b':');
                canon.extend_from_slice(v.as_bytes());
                canon.push(b'\n');
            }
            let want = trailer_signature(&s.ctx.key, &s.ctx.amz_date, &s.ctx.scope, &s.prev, &canon);
            if !sig_eq(&want, claimed) {
                return Err(bad_sig("aws-chunked trailer signature does not match"));
            }
        }
        if let Some(sink) = &self.sink {
            let v = self
                .trailers
                .iter()
                .find(|(k, _)| *k == sink.name)
                .map(|(_, v)| v.clone())
                .ok_or_else(malformed_trailer)?;
            // A value set before (by an earlier attempt) is left alone; the backend compares.
            let _ = sink.value.set(v);
        }
        self.state = State::Done;
        self.finish_body()
    }

    fn finish_body(&mut self) -> Result<(), Error> {
        if let Some(s) = &self.signer
            && let Some(n) = s.ctx.decoded_len
            && n != self.decoded
        {
            return Err(Error::code(ErrorCode::IncompleteBody));
        }
        Ok(())
    }

    /// The input ended: `Ok` only if the body was complete.
    pub fn finish(&mut self) -> Result<(), Error> {
        match self.state {
            State::Done => Ok(()),
            // Tolerated: the final empty line after complete trailer lines is missing.
            State::Trailer if self.line.is_empty() && (self.signer.is_none() || self.trailer_sig.is_some()) => {
                let r = self.end_trailers();
                if r.is_err() {
                    self.state = State::Failed;
                }
                r
            }
            State::Failed => Err(invalid("aws-chunked body already failed")),
            _ => {
                self.state = State::Failed;
                Err(Error::code(ErrorCode::IncompleteBody))
            }
        }
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

trait BytesExt {
    fn advance_one(&mut self);
    fn advance_by(&mut self, n: usize);
}

impl BytesExt for Bytes {
    fn advance_one(&mut self) {
        bytes::Buf::advance(self, 1);
    }
    fn advance_by(&mut self, n: usize) {
        bytes::Buf::advance(self, n);
    }
}

/// The decoder over a byte stream.
pub struct DecodeStream {
    inner: ByteStream,
    dec: Decoder,
    out: VecDeque<Bytes>,
    ended: bool,
}

impl DecodeStream {
    pub fn new(inner: ByteStream, dec: Decoder) -> Self {
        DecodeStream { inner, dec, out: VecDeque::new(), ended: false }
    }
}

impl Stream for DecodeStream {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.out.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(b))) => {
                    if let Err(e) = this.dec.feed(b, &mut this.out) {
                        this.ended = true;
                        this.out.clear();
                        return Poll::Ready(Some(Err(e.into())));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.ended = true;
                    this.out.clear();
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    if let Err(e) = this.dec.finish() {
                        this.out.clear();
                        return Poll::Ready(Some(Err(e.into())));
                    }
                }
            }
        }
    }
}

/// A body whose SHA-256 must equal the promised hex digest; a mismatch is an `Err` in place of
/// the end of the stream.
pub struct Sha256Stream {
    inner: ByteStream,
    hasher: Sha256,
    want: String,
    ended: bool,
}

impl Sha256Stream {
    pub fn new(inner: ByteStream, want_hex: &str) -> Self {
        Sha256Stream { inner, hasher: Sha256::new(), want: want_hex.to_ascii_lowercase(), ended: false }
    }
}

impl Stream for Sha256Stream {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(b))) => {
                this.hasher.update(&b);
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.ended = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.ended = true;
                let got = hex::encode(std::mem::take(&mut this.hasher).finalize());
                if got == this.want {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Err(Error::code(ErrorCode::XAmzContentSHA256Mismatch).into())))
                }
            }
        }
    }
}

/// A stream that yields one error (signed chunks without a chunk context).
pub fn error_stream(e: Error) -> ByteStream {
    struct Once(Option<Error>);
    impl Stream for Once {
        type Item = std::io::Result<Bytes>;
        fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.take().map(|e| Err(e.into())))
        }
    }
    Box::pin(Once(Some(e)))
}
