//! Object bodies. A body is streamed, never required to be held whole; backends and front ends
//! may specialise on the cheaper variants (a buffer in memory, a region of an open file for
//! zero-copy `sendfile`/`splice`).

use std::io::{Seek, SeekFrom};
use std::pin::Pin;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};

/// A stream of body chunks. An `Err` item aborts the transfer; an `io::Error` that wraps a
/// [`crate::Error`] (for example a checksum mismatch detected by the front end) is reported to the
/// client as that S3 error.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// Chunk size used when a file region is turned into a stream.
pub const FILE_CHUNK: usize = 1 << 20;

/// An object body.
pub enum Body {
    /// No bytes.
    Empty,
    /// Bytes already in memory.
    Bytes(Bytes),
    /// `len` bytes of `file` starting at `offset`. Consumers that can (the binary protocol
    /// server, the HTTP server on plain sockets) may send it with zero copies.
    File { file: std::fs::File, offset: u64, len: u64 },
    /// Anything else, chunk by chunk.
    Stream(ByteStream),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Empty => f.write_str("Body::Empty"),
            Body::Bytes(b) => write!(f, "Body::Bytes({} bytes)", b.len()),
            Body::File { offset, len, .. } => write!(f, "Body::File(offset={offset}, len={len})"),
            Body::Stream(_) => f.write_str("Body::Stream"),
        }
    }
}

impl From<Bytes> for Body {
    fn from(b: Bytes) -> Self {
        if b.is_empty() { Body::Empty } else { Body::Bytes(b) }
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Self {
        Body::from(Bytes::from(v))
    }
}

impl From<&'static [u8]> for Body {
    fn from(v: &'static [u8]) -> Self {
        Body::from(Bytes::from_static(v))
    }
}

impl From<&'static str> for Body {
    fn from(v: &'static str) -> Self {
        Body::from(Bytes::from_static(v.as_bytes()))
    }
}

impl From<ByteStream> for Body {
    fn from(s: ByteStream) -> Self {
        Body::Stream(s)
    }
}

impl Body {
    /// The exact length when it is known without consuming the body.
    pub fn known_len(&self) -> Option<u64> {
        match self {
            Body::Empty => Some(0),
            Body::Bytes(b) => Some(b.len() as u64),
            Body::File { len, .. } => Some(*len),
            Body::Stream(_) => None,
        }
    }

    /// Turn any body into a chunk stream. File regions are read on the blocking pool in
    /// [`FILE_CHUNK`] pieces.
    pub fn into_stream(self) -> ByteStream {
        match self {
            Body::Empty => Box::pin(futures::stream::empty()),
            Body::Bytes(b) => Box::pin(futures::stream::once(async move { Ok(b) })),
            Body::Stream(s) => s,
            Body::File { file, offset, len } => file_stream(file, offset, len),
        }
    }

    /// Read the whole body into memory. For tests, small XML payloads and the memory backend.
    pub async fn collect(self) -> std::io::Result<Bytes> {
        match self {
            Body::Empty => Ok(Bytes::new()),
            Body::Bytes(b) => Ok(b),
            other => {
                let mut s = other.into_stream();
                let mut buf = BytesMut::new();
                while let Some(chunk) = s.next().await {
                    buf.extend_from_slice(&chunk?);
                }
                Ok(buf.freeze())
            }
        }
    }

    /// Read the whole body, refusing more than `limit` bytes (for request bodies that are parsed
    /// whole, e.g. XML documents). Exceeding the limit yields `MaxMessageLengthExceeded`.
    pub async fn collect_limited(self, limit: usize) -> crate::Result<Bytes> {
        if let Some(n) = self.known_len()
            && n > limit as u64
        {
            return Err(crate::Error::code(crate::ErrorCode::MaxMessageLengthExceeded));
        }
        let mut s = self.into_stream();
        let mut buf = BytesMut::new();
        while let Some(chunk) = s.next().await {
            let chunk = chunk?;
            if buf.len() + chunk.len() > limit {
                return Err(crate::Error::code(crate::ErrorCode::MaxMessageLengthExceeded));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    }
}

#[allow(unsafe_code)] // reads into a buffer's spare capacity (no zeroing per chunk)
fn file_stream(file: std::fs::File, offset: u64, len: u64) -> ByteStream {
    struct State {
        file: std::fs::File,
        pos: u64,
        end: u64,
        seeked: bool,
    }
    let state = State { file, pos: offset, end: offset + len, seeked: false };
    Box::pin(futures::stream::try_unfold(state, |mut st| async move {
        if st.pos >= st.end {
            return Ok(None);
        }
        let want = ((st.end - st.pos) as usize).min(FILE_CHUNK);
        let (st, chunk) = tokio::task::spawn_blocking(move || -> std::io::Result<(State, Bytes)> {
            if !st.seeked {
                st.file.seek(SeekFrom::Start(st.pos))?;
                st.seeked = true;
            }
            let mut buf = BytesMut::with_capacity(want);
            while buf.len() < want {
                let left = want - buf.len();
                let room = &mut buf.spare_capacity_mut()[..left];
                let n = read_uninit(&st.file, room)?;
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "object file shorter than its recorded size",
                    ));
                }
                // SAFETY: `read(2)` initialised the first `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
            }
            st.pos += want as u64;
            Ok((st, buf.freeze()))
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(Some((chunk, st)))
    }))
}

/// `read(2)` into memory that need not be initialised (no zeroing of each chunk's buffer first:
/// a fifth of a large GET's CPU time in the embedded store's profile).
fn read_uninit(file: &std::fs::File, buf: &mut [std::mem::MaybeUninit<u8>]) -> std::io::Result<usize> {
    loop {
        match rustix::io::read(file, &mut *buf) {
            Ok((filled, _)) => return Ok(filled.len()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Memory behind a [`BodyBuffer`]: what a store hands out for bodies it can take without a copy.
pub trait BufferMemory: AsRef<[u8]> + AsMut<[u8]> + Send + Sync + 'static {
    /// The filled buffer as the `Bytes` of a body. A store that recognises its own buffers in
    /// the bodies it is given (by address) registers the buffer here.
    fn into_bytes(self: Box<Self>) -> Bytes;
}

/// A buffer for a PUT or UploadPart body from [`Store::body_buffer`](crate::Store::body_buffer):
/// the caller writes the body into it, then [`freeze`](BodyBuffer::freeze)s it into the
/// `Bytes` of a [`Body`]. A body that is such `Bytes` (whole, or a prefix of them) reaches that
/// store without being copied; any other store, or any other body, works as usual.
pub struct BodyBuffer(Box<dyn BufferMemory>);

impl BodyBuffer {
    pub fn new(mem: impl BufferMemory) -> BodyBuffer {
        BodyBuffer(Box::new(mem))
    }

    /// The filled buffer, immutable from now on. The `Bytes` may be cloned and sent as the body
    /// of any number of requests, also at once.
    pub fn freeze(self) -> Bytes {
        self.0.into_bytes()
    }
}

impl std::ops::Deref for BodyBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl std::ops::DerefMut for BodyBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        (*self.0).as_mut()
    }
}

impl std::fmt::Debug for BodyBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BodyBuffer({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(data: &[u8]) -> std::fs::File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(data).unwrap();
        f
    }

    #[tokio::test]
    async fn a_file_region_streams_in_chunks_and_a_short_file_is_an_error() {
        let data: Vec<u8> = (0..FILE_CHUNK * 2 + 12345).map(|i| (i % 251) as u8).collect();
        let (offset, len) = (7u64, (FILE_CHUNK + 999) as u64);
        let body = Body::File { file: file_with(&data), offset, len };
        let mut s = body.into_stream();
        let mut got = Vec::new();
        let mut chunks = 0;
        while let Some(c) = s.next().await {
            got.extend_from_slice(&c.unwrap());
            chunks += 1;
        }
        assert_eq!(chunks, 2);
        assert!(got == data[offset as usize..(offset + len) as usize]);
        // The file ends before the region does.
        let body = Body::File { file: file_with(&data[..100]), offset: 10, len: 200 };
        let e = body.collect().await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
