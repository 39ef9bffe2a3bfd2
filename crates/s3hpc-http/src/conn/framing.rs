//! Request body framing: `Content-Length` and chunked bodies read from the connection on
//! demand ([`ReqBody`], [`BodyReader`]), `100 Continue`, upload slots, draining what the S3 layer
//! did not read.

use super::*;

/// Unread request bodies up to this size are drained to keep the connection.
pub(super) const DRAIN_MAX: u64 = 1 << 20;

/// How long a body read waits for more bytes to fill a piece once it has some.
pub(super) const FILL_WAIT: Duration = Duration::from_millis(20);

/// Longest chunk-size or trailer line of a chunked request body.
pub(super) const LINE_MAX: usize = 4096;

/// Most trailer lines after the last chunk.
pub(super) const MAX_TRAILERS: usize = 64;

pub(super) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    Length(u64),
    Chunked(Chunk),
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chunk {
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
    pub(super) io: Arc<Conn>,
    pub(super) buf: BytesMut,
    pub(super) framing: Framing,
    pub(super) expect_continue: bool,
    pub(super) read_max: usize,
    pub(super) broken: bool,
    /// Body bytes read so far (for the metrics).
    pub(super) received: u64,
    /// The upload slot this body streams under, if it took one ([`ReqBody::upload_slot`]).
    pub(super) slot: Option<SlotLease>,
    /// `Config::slot_idle`: a body with a slot that delivers nothing for this long lends it out.
    pub(super) slot_idle: Duration,
    /// `Config::body_idle_timeout`: bounds each wait of the body for the client.
    pub(super) body_idle: Duration,
}

/// A body's claim on an upload slot. The slot itself is the permit the S3 layer holds until the
/// request ends; while the body is stalled for longer than `slot_idle` the slot is *lent*: one
/// permit is added to the semaphore so that another upload can stream, and taken back (waiting
/// in line like any upload) before this body reads again. A lease dropped while lent repays the
/// added permit, so the number of slots stays `max_concurrent_uploads`.
pub(super) struct SlotLease {
    pub(super) sem: Arc<Semaphore>,
    pub(super) lent: bool,
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
    pub(super) r: Option<BodyReader>,
    pub(super) ret: Option<oneshot::Sender<BodyReader>>,
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
    pub(super) fn reusable(&self) -> (bool, bool) {
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
    pub(super) async fn drain(&mut self) -> bool {
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

pub(super) fn parse_chunk_size(line: &[u8]) -> io::Result<u64> {
    let size = line.split(|&b| b == b';').next().unwrap_or_default();
    let size = size.trim_ascii();
    if size.is_empty() || size.len() > 15 || !size.iter().all(u8::is_ascii_hexdigit) {
        return Err(invalid("invalid chunk size"));
    }
    let s = std::str::from_utf8(size).map_err(|_| invalid("invalid chunk size"))?;
    u64::from_str_radix(s, 16).map_err(|_| invalid("invalid chunk size"))
}
