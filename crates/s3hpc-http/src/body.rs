//! Request and response bodies: the hyper request body as a [`ByteStream`] whose disconnects and
//! stalls end in an `Err` (so the store publishes nothing), and the response body type, which
//! sends files in large chunks read ahead on the blocking pool.

use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use s3hpc_core::{Body, ByteStream};
use tokio::sync::mpsc;

/// Size of one file read for GET bodies.
pub const READ_CHUNK: usize = 1 << 20;
/// Read buffers kept for reuse once a response has sent them (at most this many MiB stay).
const POOL_MAX: usize = 16;

/// Reusable GET read buffers. A fresh 1 MiB buffer per read cost a memset plus page faults (it
/// comes from mmap) and was about a fifth of the server's CPU in a 1 MiB GET profile; a buffer
/// from here is read into as it is and goes back when hyper has written the bytes.
static POOL: Mutex<Vec<Box<[u8]>>> = Mutex::new(Vec::new());

fn pool_take() -> Box<[u8]> {
    let b = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    b.unwrap_or_else(|| vec![0u8; READ_CHUNK].into_boxed_slice())
}

/// A pooled buffer holding `len` valid bytes; returns to the pool when the last `Bytes` view of it
/// is dropped.
struct Pooled {
    buf: Option<Box<[u8]>>,
    len: usize,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        self.buf.as_deref().map_or(&[], |b| &b[..self.len])
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(b) = self.buf.take() {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL_MAX {
                pool.push(b);
            }
        }
    }
}

/// `pread` of `want` (<= READ_CHUNK) bytes at `pos` into a pooled buffer.
fn read_chunk(file: &std::fs::File, pos: u64, want: usize) -> io::Result<Bytes> {
    let mut buf = pool_take();
    file.read_exact_at(&mut buf[..want], pos)?;
    Ok(Bytes::from_owner(Pooled { buf: Some(buf), len: want }))
}
/// File regions up to this size are read in one blocking call and sent as one buffer.
pub const SMALL_FILE: u64 = 256 * 1024;

/// The request body as a stream. A connection that closes early or a hyper error ends the stream
/// with an `Err` (`UnexpectedEof`, i.e. `IncompleteBody`); a body that stalls for `idle` ends with
/// `TimedOut` (`RequestTimeout`). Only a body that really ended ends the stream cleanly.
pub fn incoming_stream(body: Incoming, idle: Duration) -> ByteStream {
    Box::pin(futures::stream::unfold(Some(body), move |st| async move {
        let mut body = st?;
        loop {
            match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => {
                    let e = io::Error::new(io::ErrorKind::TimedOut, "request body stalled");
                    return Some((Err(e), None));
                }
                Ok(None) => return None,
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(d) if d.is_empty() => continue,
                    Ok(d) => return Some((Ok(d), Some(body))),
                    Err(_trailers) => continue,
                },
                Ok(Some(Err(e))) => {
                    let e = io::Error::new(io::ErrorKind::UnexpectedEof, format!("request body: {e}"));
                    return Some((Err(e), None));
                }
            }
        }
    }))
}

/// A response body.
pub enum RespBody {
    Empty,
    Full(Option<Bytes>),
    /// A stream of `len` bytes.
    Stream(ByteStream, u64),
    /// Chunks read ahead by a blocking reader; `len` bytes in total.
    Chan(mpsc::Receiver<io::Result<Bytes>>, u64),
}

impl RespBody {
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        if b.is_empty() { RespBody::Empty } else { RespBody::Full(Some(b)) }
    }

    /// The body of a GET: files are read off the async workers, small ones at once, large ones
    /// in [`READ_CHUNK`] pieces with two chunks of read-ahead.
    pub async fn from_store(body: Body) -> io::Result<Self> {
        Ok(match body {
            Body::Empty => RespBody::Empty,
            Body::Bytes(b) => RespBody::full(b),
            Body::Stream(s) => RespBody::Stream(s, u64::MAX),
            Body::File { len: 0, .. } => RespBody::Empty,
            Body::File { file, offset, len } if len <= SMALL_FILE => {
                let buf = tokio::task::spawn_blocking(move || -> io::Result<Bytes> {
                    let mut buf = BytesMut::zeroed(len as usize);
                    file.read_exact_at(&mut buf, offset)?;
                    Ok(buf.freeze())
                })
                .await
                .map_err(io::Error::other)??;
                RespBody::full(buf)
            }
            Body::File { file, offset, len } => {
                let (tx, rx) = mpsc::channel(2);
                tokio::task::spawn_blocking(move || {
                    let mut pos = offset;
                    let end = offset + len;
                    while pos < end {
                        let want = ((end - pos) as usize).min(READ_CHUNK);
                        let r = read_chunk(&file, pos, want);
                        let failed = r.is_err();
                        if tx.blocking_send(r).is_err() || failed {
                            return; // client gone, or error delivered
                        }
                        pos += want as u64;
                    }
                });
                RespBody::Chan(rx, len)
            }
        })
    }

    /// Attach the known length to a stream body.
    pub fn with_len(self, n: u64) -> Self {
        match self {
            RespBody::Stream(s, _) => RespBody::Stream(s, n),
            other => other,
        }
    }
}

impl http_body::Body for RespBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        match &mut *self {
            RespBody::Empty => Poll::Ready(None),
            RespBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            RespBody::Stream(s, _) => s.as_mut().poll_next(cx).map(|o| o.map(|r| r.map(Frame::data))),
            RespBody::Chan(rx, _) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            RespBody::Empty => true,
            RespBody::Full(b) => b.is_none(),
            _ => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RespBody::Empty => SizeHint::with_exact(0),
            RespBody::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            RespBody::Stream(_, n) | RespBody::Chan(_, n) if *n != u64::MAX => SizeHint::with_exact(*n),
            _ => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn pooled_chunks_read_the_right_bytes_and_are_reused() {
        let mut f = tempfile_in_tmp();
        let data: Vec<u8> = (0..(READ_CHUNK + 1000)).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let a = read_chunk(&f, 0, READ_CHUNK).unwrap();
        assert_eq!(&a[..], &data[..READ_CHUNK]);
        let ptr = a.as_ptr();
        drop(a);
        // The buffer went back to the pool (no other test here uses it); the next read reuses it
        // and shows only its own bytes.
        let b = read_chunk(&f, READ_CHUNK as u64, 1000).unwrap();
        assert_eq!(b.as_ptr(), ptr);
        assert_eq!(&b[..], &data[READ_CHUNK..]);
        let c = read_chunk(&f, 7, 10).unwrap();
        assert_eq!(&c[..], &data[7..17]);
        // A short file is an error, not stale pool bytes.
        assert!(read_chunk(&f, READ_CHUNK as u64 + 500, 1000).is_err());
    }

    fn tempfile_in_tmp() -> std::fs::File {
        let p = std::env::temp_dir().join(format!(
            "s3hpc-http-body-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }
}
