//! The HTTP/1.1 connection engine: one task per connection reads request heads (httparse),
//! hands the S3 layer a body reader that reads straight from the socket, and writes responses
//! itself, so that file bodies go out with `sendfile(2)` instead of through user space.
//!
//! Per connection, strictly one request at a time (pipelined requests wait in the read buffer):
//!
//! 1. Read the head (limit: `read_buffer_max`, at least 8 KiB; deadline: `header_timeout`,
//!    which also bounds how long an idle keep-alive connection is kept). A bad head gets a bare
//!    400 (431 when too large) and the connection closes. Under descriptor pressure the
//!    server sheds connections that have been waiting for a head for a second or more, silent
//!    keep-alive ones and ones that sent only part of a head alike ([`State::shed_idle`]).
//! 2. The body reader ([`ReqBody`]) decodes `Content-Length` or `Transfer-Encoding: chunked`
//!    bodies and sends `100 Continue` when the S3 layer first asks for body bytes. A body cut
//!    short (EOF, reset, malformed chunking) ends in an `Err`, so nothing is published.
//! 3. The response is written with an explicit length, or chunked when the length is unknown
//!    (streamed bodies such as the CompleteMultipartUpload keep-alive). File bodies are sent by
//!    a blocking-pool thread: head with `MSG_MORE`, then `sendfile(2)` until done, waiting for
//!    `POLLOUT` with poll(2) on `EAGAIN`; a cold file therefore never stalls a Tokio worker.
//! 4. The body reader comes back to the connection. A body the S3 layer did not read (an early
//!    error) is drained when small (up to 1 MiB; a chunked body of unknown length is drained
//!    until it passes that), else the connection closes after the response
//!    (write side shut down first, unread input discarded for a moment, so the client sees the
//!    response rather than a reset).
//!
//! Graceful shutdown: idle connections close at once; a request in flight finishes and its
//! response carries `connection: close`.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version, header};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};

use crate::State;
use crate::body::RespBody;

/// Most request headers accepted.
const MAX_HEADERS: usize = 200;
/// Unread request bodies up to this size are drained to keep the connection.
const DRAIN_MAX: u64 = 1 << 20;
/// How long a body read waits for more bytes to fill a piece once it has some.
const FILL_WAIT: Duration = Duration::from_millis(20);
/// Longest chunk-size or trailer line of a chunked request body.
const LINE_MAX: usize = 4096;
/// Most trailer lines after the last chunk.
const MAX_TRAILERS: usize = 64;
/// Full bodies up to this size are copied behind the head and sent with one `send`.
const COPY_BODY_MAX: usize = 32 * 1024;
/// Largest `sendfile` call (Linux moves at most 0x7ffff000 bytes per call). Unit tests use a
/// small one so that a few MiB take many calls.
const SENDFILE_MAX: u64 = if cfg!(test) { 64 * 1024 } else { 1 << 30 };
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked(Chunk),
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty line.
    Trailers,
}

/// The connection's read side while a request body is being read.
pub(crate) struct BodyReader {
    io: Arc<Conn>,
    buf: BytesMut,
    framing: Framing,
    expect_continue: bool,
    read_max: usize,
    broken: bool,
    /// Body bytes read so far (for the metrics).
    received: u64,
    /// The upload slot this body streams under, if it took one ([`ReqBody::upload_slot`]).
    slot: Option<SlotLease>,
    /// `Config::slot_idle`: a body with a slot that delivers nothing for this long lends it out.
    slot_idle: Duration,
    /// `Config::body_idle_timeout`: bounds each wait of the body for the client.
    body_idle: Duration,
}

/// A body's claim on an upload slot. The slot itself is the permit the S3 layer holds until the
/// request ends; while the body is stalled for longer than `slot_idle` the slot is *lent*: one
/// permit is added to the semaphore so that another upload can stream, and taken back (waiting
/// in line like any upload) before this body reads again. A lease dropped while lent repays the
/// added permit, so the number of slots stays `max_concurrent_uploads`.
struct SlotLease {
    sem: Arc<Semaphore>,
    lent: bool,
}

impl SlotLease {
    fn lend(&mut self) {
        if !self.lent {
            self.lent = true;
            self.sem.add_permits(1);
            tracing::debug!("request body stalled: upload slot lent out");
        }
    }

    /// Take the lent slot back (waits for a free one). Cancel-safe: stays lent until a permit
    /// has really been taken.
    async fn retake(&mut self) {
        if self.lent {
            if let Ok(p) = self.sem.acquire().await {
                p.forget();
            }
            self.lent = false;
        }
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        if self.lent && self.sem.forget_permits(1) == 0 {
            // Every slot is in use right now: take the next one that frees up.
            let sem = self.sem.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    if let Ok(p) = sem.acquire_owned().await {
                        p.forget();
                    }
                });
            }
        }
    }
}

/// A request body, read from the connection on demand. Dropping it hands the connection's read
/// side back to the engine.
pub struct ReqBody {
    r: Option<BodyReader>,
    ret: Option<oneshot::Sender<BodyReader>>,
}

impl ReqBody {
    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Option<io::Result<Bytes>> {
        self.r.as_mut()?.next().await
    }

    /// Mark the body as failed (e.g. stalled): the connection will not be reused.
    pub fn poison(&mut self) {
        if let Some(r) = &mut self.r {
            r.broken = true;
        }
    }

    /// Take one of the `slots` for streaming this (large) body, and return its permit, to be
    /// held until the request ends.
    ///
    /// A slot is taken only once the client has sent body bytes (after `100 Continue` when it
    /// asked for one): a client that sends headers and then nothing never occupies a slot, and
    /// after `body_idle_timeout` gets `RequestTimeout`. A body that stalls later, while holding
    /// the slot, lends it to the other uploads after `slot_idle` and waits for a slot again
    /// when its bytes arrive. Waiting for a slot is bounded by `body_idle_timeout` too
    /// (`503 ServiceUnavailable`, which clients retry).
    pub async fn upload_slot(mut self, slots: &Arc<Semaphore>) -> s3hpc_core::Result<(ReqBody, OwnedSemaphorePermit)> {
        use s3hpc_core::{Error, ErrorCode};
        let Some(r) = self.r.as_mut() else {
            return Err(Error::new(ErrorCode::IncompleteBody, "the request body was already consumed"));
        };
        if let Err(e) = r.wait_for_bytes().await {
            r.broken = true;
            return Err(e.into());
        }
        match tokio::time::timeout(r.body_idle, slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => {
                r.slot = Some(SlotLease { sem: slots.clone(), lent: false });
                Ok((self, p))
            }
            Ok(Err(_)) => Err(Error::code(ErrorCode::ServiceUnavailable)),
            Err(_) => {
                r.broken = true;
                Err(Error::new(ErrorCode::ServiceUnavailable, "Too many uploads in progress; please retry."))
            }
        }
    }
}

impl Drop for ReqBody {
    fn drop(&mut self) {
        if let (Some(r), Some(tx)) = (self.r.take(), self.ret.take()) {
            let _ = tx.send(r);
        }
    }
}

impl BodyReader {
    /// Send `100 Continue` if the client waits for it.
    async fn send_continue(&mut self) -> io::Result<()> {
        if self.expect_continue {
            self.expect_continue = false;
            if let Err(e) = write_all(&self.io, CONTINUE, self.body_idle).await {
                self.broken = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Wait (at most `body_idle`) until body bytes are buffered: a real read, since a socket's
    /// readiness can be left over from the read that brought the head.
    async fn wait_for_bytes(&mut self) -> io::Result<()> {
        self.send_continue().await?;
        if !self.buf.is_empty() || matches!(self.framing, Framing::Done | Framing::Length(0)) {
            return Ok(());
        }
        match tokio::time::timeout(self.body_idle, read_more(&self.io, &mut self.buf, 8192)).await {
            Ok(Ok(0)) => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside the request body")),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "request body stalled")),
        }
    }

    async fn next(&mut self) -> Option<io::Result<Bytes>> {
        if self.broken {
            return Some(Err(io::Error::new(io::ErrorKind::UnexpectedEof, "request body failed earlier")));
        }
        if let Err(e) = self.send_continue().await {
            return Some(Err(e));
        }
        let r = self.next_inner().await;
        match &r {
            Some(Err(_)) => self.broken = true,
            None => self.slot = None, // the body is complete: nothing left to lend
            Some(Ok(b)) => self.received += b.len() as u64,
        }
        r
    }

    /// One read from the socket into `buf` (0 at EOF). With an upload slot: a stall longer than
    /// `slot_idle` lends the slot out, and it is taken back before the bytes are read.
    async fn read_body(&mut self, want: usize) -> io::Result<usize> {
        let Some(lease) = self.slot.as_mut() else {
            return read_more(&self.io, &mut self.buf, want).await;
        };
        loop {
            if !lease.lent {
                // read_more is cancel-safe: bytes are either in `buf` or still in the socket.
                match tokio::time::timeout(self.slot_idle, read_more(&self.io, &mut self.buf, want)).await {
                    Ok(r) => return r,
                    Err(_) => lease.lend(),
                }
            }
            // Stalled: wait for bytes without a slot, then queue for one before reading on.
            self.io.readable().await?;
            lease.retake().await;
        }
    }

    async fn next_inner(&mut self) -> Option<io::Result<Bytes>> {
        loop {
            match self.framing {
                Framing::Done => return None,
                Framing::Length(0) => {
                    self.framing = Framing::Done;
                    return None;
                }
                Framing::Length(rem) => {
                    return Some(
                        self.data(rem).await.inspect(|b| self.framing = Framing::Length(rem - b.len() as u64)),
                    );
                }
                Framing::Chunked(Chunk::Data(0)) => self.framing = Framing::Chunked(Chunk::DataEnd),
                Framing::Chunked(Chunk::Data(rem)) => {
                    return Some(
                        self.data(rem)
                            .await
                            .inspect(|b| self.framing = Framing::Chunked(Chunk::Data(rem - b.len() as u64))),
                    );
                }
                Framing::Chunked(Chunk::Size) => {
                    let n = match self.line().await.and_then(|l| parse_chunk_size(&l)) {
                        Ok(n) => n,
                        Err(e) => return Some(Err(e)),
                    };
                    self.framing = Framing::Chunked(if n == 0 { Chunk::Trailers } else { Chunk::Data(n) });
                }
                Framing::Chunked(Chunk::DataEnd) => match self.line().await {
                    Ok(l) if l.is_empty() => self.framing = Framing::Chunked(Chunk::Size),
                    Ok(_) => return Some(Err(invalid("chunk data longer than its size"))),
                    Err(e) => return Some(Err(e)),
                },
                Framing::Chunked(Chunk::Trailers) => {
                    for _ in 0..MAX_TRAILERS {
                        match self.line().await {
                            Ok(l) if l.is_empty() => {
                                self.framing = Framing::Done;
                                return None;
                            }
                            Ok(_) => {}
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    return Some(Err(invalid("too many trailer lines")));
                }
            }
        }
    }

    /// Up to `rem` body bytes, in pieces of `read_max` (default 128 KiB) where the client sends
    /// fast enough: the buffer is filled by further reads (waiting at most [`FILL_WAIT`] once
    /// some bytes are in) so that a piece goes to the store as it is (the posix store passes
    /// pieces of at least its 128 KiB write batch to the file without copying them again).
    async fn data(&mut self, rem: u64) -> io::Result<Bytes> {
        let want = rem.min(self.read_max as u64) as usize;
        let deadline = tokio::time::Instant::now() + FILL_WAIT;
        while self.buf.len() < want {
            let need = want - self.buf.len();
            let n = if self.buf.is_empty() {
                self.read_body(need).await?
            } else {
                match tokio::time::timeout_at(deadline, read_more(&self.io, &mut self.buf, need)).await {
                    Ok(r) => r?,
                    Err(_) => break,
                }
            };
            if n == 0 {
                if self.buf.is_empty() {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "connection closed inside the request body",
                    ));
                }
                break; // hand out what came; the next call reports the EOF
            }
        }
        let n = (self.buf.len() as u64).min(rem) as usize;
        Ok(self.buf.split_to(n).freeze())
    }

    /// One CRLF- (or LF-) terminated line, without its terminator.
    async fn line(&mut self) -> io::Result<BytesMut> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let mut l = self.buf.split_to(i + 1);
                l.truncate(i);
                if l.last() == Some(&b'\r') {
                    l.truncate(i - 1);
                }
                return Ok(l);
            }
            if self.buf.len() > LINE_MAX {
                return Err(invalid("chunk line too long"));
            }
            if self.read_body(4096).await? == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside the request body"));
            }
        }
    }

    /// How the connection may continue after the response: (keep it, drain the rest first).
    fn reusable(&self) -> (bool, bool) {
        if self.broken {
            return (false, false);
        }
        match self.framing {
            Framing::Done | Framing::Length(0) => (true, false),
            // The client waits for 100 Continue that never came: it may or may not send the body.
            _ if self.expect_continue => (false, false),
            Framing::Length(n) if n <= DRAIN_MAX => (true, true),
            Framing::Chunked(_) => (true, true),
            Framing::Length(_) => (false, false),
        }
    }

    /// Read and discard the rest of the body (at most [`DRAIN_MAX`] plus framing, for a second).
    async fn drain(&mut self) -> bool {
        let work = async {
            let mut total = 0u64;
            while let Some(c) = self.next().await {
                match c {
                    Ok(b) => total += b.len() as u64,
                    Err(_) => return false,
                }
                if total > DRAIN_MAX {
                    return false;
                }
            }
            true
        };
        tokio::time::timeout(Duration::from_secs(1), work).await.unwrap_or(false)
    }
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn parse_chunk_size(line: &[u8]) -> io::Result<u64> {
    let size = line.split(|&b| b == b';').next().unwrap_or_default();
    let size = size.trim_ascii();
    if size.is_empty() || size.len() > 15 || !size.iter().all(u8::is_ascii_hexdigit) {
        return Err(invalid("invalid chunk size"));
    }
    let s = std::str::from_utf8(size).map_err(|_| invalid("invalid chunk size"))?;
    u64::from_str_radix(s, 16).map_err(|_| invalid("invalid chunk size"))
}

/// A connection's transport: the socket, with TLS over it when the server has a certificate.
pub(crate) struct Conn {
    tcp: TcpStream,
    tls: Option<crate::tls::TlsIo>,
}

impl Conn {
    /// Wait until a read would find bytes (decrypted ones already buffered count).
    async fn readable(&self) -> io::Result<()> {
        match &self.tls {
            Some(t) if t.has_plaintext() => Ok(()),
            _ => self.tcp.readable().await,
        }
    }

    fn raw_fd(&self) -> RawFd {
        self.tcp.as_raw_fd()
    }
}

/// One read into `buf`'s spare capacity (at least `want` bytes of it); 0 at EOF.
async fn read_more(io: &Conn, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
    match &io.tls {
        Some(t) => t.read(&io.tcp, buf, want).await,
        None => read_raw(&io.tcp, buf, want).await,
    }
}

/// One read of the socket's own bytes (encrypted ones under TLS).
async fn read_raw(io: &TcpStream, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
    if buf.capacity() - buf.len() < want {
        buf.reserve(want);
    }
    loop {
        match io.try_read_buf(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => io.readable().await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Wait until `io` is writable, at most `idle` (a client that reads nothing for that long is
/// given up: `TimedOut`).
async fn writable(io: &TcpStream, idle: Duration) -> io::Result<()> {
    match tokio::time::timeout(idle, io.writable()).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading the response")),
    }
}

async fn write_all(io: &Conn, mut b: &[u8], idle: Duration) -> io::Result<()> {
    if let Some(t) = &io.tls {
        return t.write_all(&io.tcp, &[b], idle).await;
    }
    let io = &io.tcp;
    while !b.is_empty() {
        match io.try_write(b) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => b = &b[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => writable(io, idle).await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn write_all_vec(io: &Conn, mut bufs: &mut [IoSlice<'_>], idle: Duration) -> io::Result<()> {
    if let Some(t) = &io.tls {
        let parts: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
        return t.write_all(&io.tcp, &parts, idle).await;
    }
    let io = &io.tcp;
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match io.try_write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => writable(io, idle).await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A parsed request head.
struct Head {
    parts: Parts,
    framing: Framing,
    keep_alive: bool,
    expect_continue: bool,
}

/// Parse a complete head at the start of `buf` (and consume it). `None`: incomplete;
/// `Some(Err(status))`: malformed.
fn parse_head(buf: &mut BytesMut) -> Option<Result<Head, u16>> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let n = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return None,
        Err(httparse::Error::TooManyHeaders) => return Some(Err(431)),
        Err(_) => return Some(Err(400)),
    };
    let head = build_head(&req);
    buf.advance(n);
    Some(head)
}

fn build_head(req: &httparse::Request<'_, '_>) -> Result<Head, u16> {
    let method = Method::from_bytes(req.method.unwrap_or_default().as_bytes()).map_err(|_| 400u16)?;
    let uri: Uri = req.path.unwrap_or_default().parse().map_err(|_| 400u16)?;
    let version = if req.version == Some(1) { Version::HTTP_11 } else { Version::HTTP_10 };
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| 400u16)?;
        let value = HeaderValue::from_bytes(h.value).map_err(|_| 400u16)?;
        headers.append(name, value);
    }
    let mut chunked = false;
    let mut te_seen = false;
    for v in headers.get_all(header::TRANSFER_ENCODING) {
        te_seen = true;
        let s = v.to_str().map_err(|_| 400u16)?;
        // Only the last coding may be (and must be) chunked; other codings are not supported.
        chunked =
            s.split(',').map(str::trim).rfind(|t| !t.is_empty()).is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    }
    let mut length: Option<u64> = None;
    for v in headers.get_all(header::CONTENT_LENGTH) {
        for part in v.to_str().map_err(|_| 400u16)?.split(',') {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(400);
            }
            let n: u64 = part.parse().map_err(|_| 400u16)?;
            if length.is_some_and(|l| l != n) {
                return Err(400);
            }
            length = Some(n);
        }
    }
    let framing = match (te_seen, chunked, length) {
        (true, false, _) => return Err(501),
        // Both framings at once is a request-smuggling pattern: refuse it.
        (true, true, Some(_)) => return Err(400),
        (true, true, None) if version == Version::HTTP_10 => return Err(400),
        (true, true, None) => Framing::Chunked(Chunk::Size),
        (false, _, Some(n)) => Framing::Length(n),
        (false, _, None) => Framing::Length(0),
    };
    let (mut close, mut ka) = (false, false);
    for v in headers.get_all(header::CONNECTION) {
        for t in v.to_str().unwrap_or_default().split(',') {
            let t = t.trim();
            close |= t.eq_ignore_ascii_case("close");
            ka |= t.eq_ignore_ascii_case("keep-alive");
        }
    }
    let keep_alive = if version == Version::HTTP_11 { !close } else { ka && !close };
    let expect_continue = version == Version::HTTP_11
        && framing != Framing::Length(0)
        && headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = version;
    parts.headers = headers;
    Ok(Head { parts, framing, keep_alive, expect_continue })
}

enum HeadResult {
    Head(Box<Head>),
    /// Malformed or too large: answer with this status and close.
    Bad(u16),
    /// EOF, timeout, shutdown or an I/O error: close.
    Close,
}

async fn read_head(
    st: &State,
    io: &Conn,
    buf: &mut BytesMut,
    stop: &mut watch::Receiver<bool>,
    shed: &mut watch::Receiver<u64>,
) -> HeadResult {
    let deadline = tokio::time::Instant::now() + st.cfg.header_timeout;
    let max = st.cfg.read_buffer_max.max(8192);
    let idle_since = st.now_ms();
    loop {
        // Empty lines before a request line are ignored (RFC 9112 section 2.2).
        let skip = buf.iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
        buf.advance(skip);
        if !buf.is_empty() {
            match parse_head(buf) {
                Some(Ok(h)) => return HeadResult::Head(Box::new(h)),
                Some(Err(status)) => return HeadResult::Bad(status),
                None if buf.len() >= max => return HeadResult::Bad(431),
                None => {}
            }
        }
        if buf.is_empty() && *stop.borrow() {
            return HeadResult::Close;
        }
        let idle = buf.is_empty();
        let r = tokio::select! {
            r = read_more(io, buf, 8192) => r,
            _ = tokio::time::sleep_until(deadline) => return HeadResult::Close,
            _ = stop.changed(), if idle => return HeadResult::Close,
            // Too many connections: the server sheds those waiting for a head since before the
            // cutoff, silent or with part of a head sent (a client sends its head at once, so
            // one still incomplete after a second is as idle as a silent one, and dribbling
            // bytes does not keep it).
            _ = shed.changed() => {
                if idle_since < *shed.borrow_and_update() {
                    return HeadResult::Close;
                }
                continue;
            }
        };
        match r {
            Ok(0) | Err(_) => return HeadResult::Close,
            Ok(_) => {}
        }
    }
}

/// The client's address, in a request's extensions (`aws:SourceIp` of bucket policies).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PeerIp(pub std::net::IpAddr);

/// Serve one connection until it closes.
/// The caller counted the connection in `st.conns`; it is uncounted when this returns.
pub(crate) async fn serve_conn(st: Arc<State>, stream: TcpStream, mut stop: watch::Receiver<bool>) {
    struct Open<'a>(&'a State);
    impl Drop for Open<'_> {
        fn drop(&mut self) {
            self.0.conns.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let _open = Open(&st);
    let mut shed = st.shed.subscribe();
    let tls = match st.cfg.tls.as_ref().map(crate::tls::TlsIo::new).transpose() {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("TLS connection refused: {e}");
            return;
        }
    };
    let peer = stream.peer_addr().ok().map(|a| PeerIp(a.ip()));
    let io = Arc::new(Conn { tcp: stream, tls });
    let mut buf = BytesMut::with_capacity(8192);
    let read_max = st.cfg.read_buffer_max.max(8192);
    loop {
        let head = match read_head(&st, &io, &mut buf, &mut stop, &mut shed).await {
            HeadResult::Head(h) => h,
            HeadResult::Close => return,
            HeadResult::Bad(status) => {
                let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error");
                let msg = format!("HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                if write_all(&io, msg.as_bytes(), st.cfg.body_idle_timeout).await.is_ok() {
                    linger_close(&io).await;
                }
                return;
            }
        };
        let Head { mut parts, framing, keep_alive, expect_continue } = *head;
        if let Some(p) = peer {
            parts.extensions.insert(p);
        }
        let (tx, mut rx) = oneshot::channel();
        let reader = BodyReader {
            io: io.clone(),
            buf: std::mem::take(&mut buf),
            framing,
            expect_continue,
            read_max,
            broken: false,
            slot: None,
            slot_idle: st.cfg.slot_idle,
            body_idle: st.cfg.body_idle_timeout,
            received: 0,
        };
        let body = ReqBody { r: Some(reader), ret: Some(tx) };
        let is_head = parts.method == Method::HEAD;
        let version = parts.version;
        let rid = st.request_id();
        // Every log line of the request carries its id (as the x-amz-request-id header shows it).
        let ((keep, back), done) = crate::REQUEST_ID
            .scope(rid, async {
                let mut req = crate::RequestRecord::begin(&st, rid);
                let resp = crate::handle(&st, parts, body, &mut req).await;
                // The S3 layer has normally dropped the body by now; one that is still held somewhere
                // (it should not be) costs the connection, never correctness.
                let mut back = rx.try_recv().ok();
                if let Some(r) = back.as_mut() {
                    r.slot = None;
                    req.bytes_in = r.received;
                }
                let (reusable, drain) = back.as_ref().map_or((false, false), BodyReader::reusable);
                let keep = keep_alive && reusable && !*stop.borrow();
                req.status = resp.status().as_u16();
                let written = write_response(&st, &io, resp, is_head, version, keep).await;
                let keep = match written {
                    Ok((k, n)) => {
                        req.bytes_out = n;
                        Some(k)
                    }
                    Err(e) => {
                        tracing::debug!("response not delivered: {e}");
                        None
                    }
                };
                ((keep, back.map(|b| (b, drain))), req)
            })
            .await;
        drop(done); // records the request's metrics
        let Some(keep) = keep else { return };
        let Some((mut r, drain)) = back.filter(|_| keep) else {
            linger_close(&io).await;
            return;
        };
        if drain && !r.drain().await {
            // The rest was too long (a chunked body past `DRAIN_MAX`) or too slow: close without
            // turning unread input into a reset that could destroy the response in flight.
            linger_close(&io).await;
            return;
        }
        buf = r.buf;
    }
}

/// Close after a response while the client may still be sending: shut the write side (the
/// client sees the response and EOF), then discard input for a moment so the close does not
/// turn into a reset that could destroy the response in flight.
async fn linger_close(io: &Conn) {
    if let Some(t) = &io.tls {
        t.close_notify(io.raw_fd());
    }
    // SAFETY: shutdown(2) on a socket descriptor we own; no memory is involved.
    unsafe { libc::shutdown(io.raw_fd(), libc::SHUT_WR) };
    let io = &io.tcp;
    let mut scratch = BytesMut::with_capacity(64 * 1024);
    let work = async {
        let mut total = 0usize;
        loop {
            scratch.clear();
            match read_raw(io, &mut scratch, 64 * 1024).await {
                Ok(0) | Err(_) => return,
                Ok(n) => total += n,
            }
            if total > 16 << 20 {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), work).await;
}

/// The `date` header value, formatted once per second per thread.
fn push_date(out: &mut Vec<u8>) {
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            *d = (secs, httpdate::fmt_http_date(now));
        }
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(d.1.as_bytes());
        out.extend_from_slice(b"\r\n");
    });
}

/// Write `resp`. Returns whether the connection may be kept (false when the body had to be
/// delimited by closing) and the body bytes sent; an error means the connection is unusable.
async fn write_response(
    st: &State,
    io: &Arc<Conn>,
    resp: Response<RespBody>,
    is_head: bool,
    version: Version,
    mut keep: bool,
) -> io::Result<(bool, u64)> {
    let idle = st.cfg.body_idle_timeout;
    let (parts, body) = resp.into_parts();
    let status = parts.status;
    let no_body = status.is_informational() || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let mut declared: Option<u64> = None;
    let mut has_date = false;
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (k, v) in &parts.headers {
        if k == header::TRANSFER_ENCODING || k == header::CONNECTION {
            continue; // framing is ours
        }
        if k == header::CONTENT_LENGTH {
            if no_body {
                continue;
            }
            declared =
                Some(v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or_else(|| invalid("bad content-length"))?);
        }
        has_date |= k == header::DATE;
        head.extend_from_slice(k.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if !has_date {
        push_date(&mut head);
    }
    let len = declared.or_else(|| body.known_len());
    if let (Some(d), Some(b)) = (declared, body.known_len())
        && !is_head
        && !no_body
        && d != b
        && !matches!(body, RespBody::Empty)
    {
        return Err(invalid("response content-length does not match its body"));
    }
    let chunked = !no_body && len.is_none() && version == Version::HTTP_11;
    if !no_body && len.is_none() && version != Version::HTTP_11 && !is_head {
        keep = false; // delimited by closing
    }
    if !no_body && declared.is_none() {
        match len {
            Some(n) => {
                head.extend_from_slice(b"content-length: ");
                head.extend_from_slice(n.to_string().as_bytes());
                head.extend_from_slice(b"\r\n");
            }
            None if chunked => head.extend_from_slice(b"transfer-encoding: chunked\r\n"),
            None => {}
        }
    }
    if !keep {
        head.extend_from_slice(b"connection: close\r\n");
    } else if version == Version::HTTP_10 {
        head.extend_from_slice(b"connection: keep-alive\r\n");
    }
    head.extend_from_slice(b"\r\n");
    if is_head || no_body {
        write_all(io, &head, idle).await?;
        return Ok((keep, 0));
    }
    let body_len = len.unwrap_or(0);
    match body {
        RespBody::Empty => {
            if len.unwrap_or(0) != 0 {
                return Err(invalid("empty response body with a non-zero content-length"));
            }
            write_all(io, &head, idle).await?;
        }
        RespBody::Full(b) if b.len() <= COPY_BODY_MAX => {
            head.extend_from_slice(&b);
            write_all(io, &head, idle).await?;
        }
        RespBody::Full(b) => write_all_vec(io, &mut [IoSlice::new(&head), IoSlice::new(&b)], idle).await?,
        RespBody::Stream(mut s, _) => {
            write_all(io, &head, idle).await?;
            let mut sent = 0u64;
            while let Some(c) = s.next().await {
                let c = c?;
                if c.is_empty() {
                    continue;
                }
                sent += c.len() as u64;
                if len.is_some_and(|l| sent > l) {
                    return Err(invalid("response body longer than its content-length"));
                }
                if chunked {
                    let size = format!("{:x}\r\n", c.len());
                    let mut parts = [IoSlice::new(size.as_bytes()), IoSlice::new(&c), IoSlice::new(b"\r\n")];
                    write_all_vec(io, &mut parts, idle).await?;
                } else {
                    write_all(io, &c, idle).await?;
                }
            }
            if len.is_some_and(|l| sent != l) {
                return Err(invalid("response body shorter than its content-length"));
            }
            if chunked {
                write_all(io, b"0\r\n\r\n", idle).await?;
            }
            return Ok((keep, sent));
        }
        RespBody::File { file, offset, len } => {
            let sock = io.clone();
            tokio::task::spawn_blocking(move || match &sock.tls {
                Some(t) => send_file_tls(t, sock.raw_fd(), &head, &file, offset, len, idle),
                None => send_file(sock.raw_fd(), &head, &file, offset, len, idle),
            })
            .await
            .map_err(io::Error::other)??;
        }
    }
    Ok((keep, body_len))
}

/// Wait (blocking) until `fd` is writable, for at most `idle`.
pub(crate) fn wait_writable(fd: RawFd, idle: Duration) -> io::Result<()> {
    let ms = idle.as_millis().min(i32::MAX as u128) as i32;
    loop {
        let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading the response"));
        }
        if p.revents & libc::POLLOUT != 0 {
            return Ok(());
        }
        return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"));
    }
}

/// Send `head` and then `len` bytes of `file` from `offset` on the non-blocking socket `fd`,
/// blocking this (blocking-pool) thread: `sendfile(2)` until done, poll(2) on `EAGAIN`. Falls
/// back to pread/send where the file system cannot sendfile.
pub(crate) fn send_file(fd: RawFd, head: &[u8], file: &File, offset: u64, len: u64, idle: Duration) -> io::Result<()> {
    send_bytes(fd, head, libc::MSG_MORE, idle)?;
    let end = offset.checked_add(len).ok_or_else(|| invalid("file range overflows"))?;
    let mut off = offset as libc::off_t;
    while (off as u64) < end {
        let want = (end - off as u64).min(SENDFILE_MAX) as usize;
        // SAFETY: both descriptors are open for the call; `off` is a valid off_t the kernel updates.
        let n = unsafe { libc::sendfile(fd, file.as_raw_fd(), &mut off, want) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => wait_writable(fd, idle)?,
                io::ErrorKind::Interrupted => {}
                _ if (e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOSYS))
                    && off as u64 == offset =>
                {
                    return send_file_copy(fd, file, offset, len, idle);
                }
                _ => return Err(e),
            }
        } else if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shorter than the response"));
        }
    }
    Ok(())
}

/// [`send_file`] under TLS: the file is read in pieces on this (blocking-pool) thread and each
/// piece encrypted and sent.
fn send_file_tls(
    t: &crate::tls::TlsIo,
    fd: RawFd,
    head: &[u8],
    file: &File,
    offset: u64,
    len: u64,
    idle: Duration,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    t.write_all_blocking(fd, head, idle)?;
    let mut buf = vec![0u8; (len.min(256 * 1024)) as usize];
    let mut pos = offset;
    let end = offset.checked_add(len).ok_or_else(|| invalid("file range overflows"))?;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..want], pos).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(e.kind(), "file shorter than the response"),
            _ => e,
        })?;
        t.write_all_blocking(fd, &buf[..want], idle)?;
        pos += want as u64;
    }
    Ok(())
}

fn send_file_copy(fd: RawFd, file: &File, offset: u64, len: u64, idle: Duration) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; (len.min(256 * 1024)) as usize];
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..want], pos)?;
        send_bytes(fd, &buf[..want], 0, idle)?;
        pos += want as u64;
    }
    Ok(())
}

fn send_bytes(fd: RawFd, mut b: &[u8], flags: libc::c_int, idle: Duration) -> io::Result<()> {
    while !b.is_empty() {
        // SAFETY: `b` is valid for reads of its length for the duration of the call.
        let n = unsafe { libc::send(fd, b.as_ptr().cast(), b.len(), flags | libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => wait_writable(fd, idle)?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        } else {
            b = &b[n as usize..];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"3e8").unwrap(), 1000);
        assert_eq!(parse_chunk_size(b"A;ext=1").unwrap(), 10);
        assert_eq!(parse_chunk_size(b" 0 ").unwrap(), 0);
        for bad in [&b""[..], b"zz", b"-1", b"1 2", b"ffffffffffffffff0"] {
            assert!(parse_chunk_size(bad).is_err(), "{bad:?}");
        }
    }

    fn head_of(s: &str) -> Option<Result<Head, u16>> {
        parse_head(&mut BytesMut::from(s.as_bytes()))
    }

    #[test]
    fn head_framing() {
        let h = head_of("PUT /b/k HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n").unwrap().unwrap();
        assert_eq!(h.framing, Framing::Length(5));
        assert!(h.keep_alive && h.expect_continue);
        let h =
            head_of("PUT /b/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n").unwrap().unwrap();
        assert_eq!(h.framing, Framing::Chunked(Chunk::Size));
        assert!(!h.keep_alive);
        let h = head_of("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive && h.framing == Framing::Length(0));
        assert!(head_of("GET / HTTP/1.1\r\nHost: x\r\n").is_none());
        assert_eq!(
            head_of("PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n").unwrap().err(),
            Some(400)
        );
        assert_eq!(head_of("PUT / HTTP/1.1\r\nContent-Length: -5\r\n\r\n").unwrap().err(), Some(400));
        assert_eq!(
            head_of("PUT / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap().err(),
            Some(400)
        );
        assert_eq!(head_of("PUT / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").unwrap().err(), Some(501));
        assert_eq!(head_of("GARBAGE\r\n\r\n").unwrap().err(), Some(400));
    }

    #[test]
    fn send_file_sends_a_range_over_many_calls_to_a_slow_reader() {
        use std::io::{Read, Write};
        let path = std::env::temp_dir().join(format!("s3hpc-sendfile-{}", std::process::id()));
        let content: Vec<u8> = (0..(3usize << 20)).map(|i| (i % 253) as u8).collect();
        std::fs::File::create(&path).unwrap().write_all(&content).unwrap();
        let file = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut tmp = [0u8; 16384];
            loop {
                std::thread::sleep(Duration::from_micros(200));
                match b.read(&mut tmp) {
                    Ok(0) => return got,
                    Ok(n) => got.extend_from_slice(&tmp[..n]),
                    Err(e) => panic!("{e}"),
                }
            }
        });
        let (off, len) = (12_345u64, 2u64 << 20);
        send_file(a.as_raw_fd(), b"HEAD\r\n", &file, off, len, Duration::from_secs(10)).unwrap();
        drop(a);
        let got = reader.join().unwrap();
        assert_eq!(&got[..6], b"HEAD\r\n");
        assert!(got[6..] == content[off as usize..(off + len) as usize], "sent bytes differ");
        // A range past the end of the file is an error, not a short response.
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = send_file(a.as_raw_fd(), b"", &file, (3 << 20) - 10, 100, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
