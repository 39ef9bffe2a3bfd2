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
//! response carries `Connection: close`.
//!
//! Modules: `head` (reading and parsing request heads), `framing` (request bodies),
//! `response` (the response writer), `sendfile` (file bodies on a blocking-pool thread); here
//! the transport ([`Conn`]) and the connection loop ([`serve_conn`]).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, Version, header};
use rustix::net::SendFlags;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};

use crate::State;
use crate::body::RespBody;

mod framing;
mod head;
mod response;
mod sendfile;

pub use self::framing::ReqBody;
pub(crate) use self::sendfile::wait_writable;
use self::{framing::*, head::*, response::*, sendfile::*};

/// The error document of a request head S3 cannot parse.
const MALFORMED_REQUEST_DOC: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>BadRequest</Code>\
<Message>An error occurred when parsing the HTTP request.</Message></Error>";

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
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

    fn fd(&self) -> BorrowedFd<'_> {
        self.tcp.as_fd()
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
            HeadResult::Close => {
                // An idle connection closed by us (timeout, shutdown) or by the client: over TLS
                // the close is announced with close_notify, or clients that wait for the
                // server's close (`openssl s_client -ign_eof`) report a truncation error.
                if let Some(t) = &io.tls {
                    t.close_notify(io.fd());
                }
                return;
            }
            HeadResult::Bad(status) => {
                let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error");
                // A request S3 cannot parse gets its error document (AWS: 400 BadRequest "An error
                // occurred when parsing the HTTP request."); other refusals of the head, none.
                let doc = if status == 400 { MALFORMED_REQUEST_DOC } else { "" };
                let ctype = if doc.is_empty() { "" } else { "Content-Type: application/xml\r\n" };
                let msg = format!(
                    "HTTP/1.1 {status} {reason}\r\n{ctype}Content-Length: {}\r\nConnection: close\r\n\r\n{doc}",
                    doc.len()
                );
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
        t.close_notify(io.fd());
    }
    let _ = rustix::net::shutdown(io.fd(), rustix::net::Shutdown::Write);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_in_aws_case() {
        let name = |n: &str| {
            let mut v = Vec::new();
            response::push_name(&mut v, n);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(name("content-length"), "Content-Length");
        assert_eq!(name("last-modified"), "Last-Modified");
        assert_eq!(name("etag"), "ETag");
        assert_eq!(name("content-md5"), "Content-MD5");
        assert_eq!(name("access-control-allow-origin"), "Access-Control-Allow-Origin");
        assert_eq!(name("x-amz-request-id"), "x-amz-request-id");
        assert_eq!(name("x-amz-meta-mixedcase"), "x-amz-meta-mixedcase");
        assert_eq!(name("server"), "Server");
    }

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
        send_file(a.as_fd(), b"HEAD\r\n", &file, off, len, Duration::from_secs(10)).unwrap();
        drop(a);
        let got = reader.join().unwrap();
        assert_eq!(&got[..6], b"HEAD\r\n");
        assert!(got[6..] == content[off as usize..(off + len) as usize], "sent bytes differ");
        // A range past the end of the file is an error, not a short response.
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = send_file(a.as_fd(), b"", &file, (3 << 20) - 10, 100, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
