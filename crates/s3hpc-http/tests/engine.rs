//! Edge cases of the HTTP/1.1 connection engine, driven over raw TCP (authentication off, so the
//! bytes on the wire are exactly the test's): pipelining, chunked request bodies, 100-continue,
//! short and long bodies, HEAD, disconnects, bad heads, graceful shutdown, and file bodies sent
//! with sendfile (whole, ranges, several MiB) from the posix store.

use std::sync::Arc;
use std::time::Duration;

use s3hpc_core::memory::MemoryStore;
use s3hpc_core::{CredentialSet, DynStore, GetObjectRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

struct Srv {
    addr: std::net::SocketAddr,
    store: DynStore,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(store: DynStore) -> Srv {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = s3hpc_http::Config::new(store.clone(), CredentialSet::new([]));
    cfg.auth = s3hpc_http::Auth::DisabledForTests;
    cfg.body_idle_timeout = Duration::from_secs(2);
    cfg.header_timeout = Duration::from_secs(2);
    cfg.shutdown_grace = Duration::from_secs(5);
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(s3hpc_http::serve(listener, cfg, async move {
        let _ = rx.await;
    }));
    Srv { addr, store, stop: Some(tx), task }
}

async fn memory() -> Srv {
    start(Arc::new(MemoryStore::new())).await
}

impl Srv {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.task).await.expect("server stops").unwrap().unwrap();
    }

    async fn conn(&self) -> Client {
        Client { c: TcpStream::connect(self.addr).await.unwrap(), buf: Vec::new() }
    }
}

/// A raw connection that keeps bytes read past one response for the next (pipelining).
struct Client {
    c: TcpStream,
    buf: Vec<u8>,
}

struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Client {
    async fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 65536];
        let n = tokio::time::timeout(Duration::from_secs(10), self.c.read(&mut tmp)).await.expect("read").unwrap_or(0);
        self.buf.extend_from_slice(&tmp[..n]);
        n > 0
    }

    async fn need(&mut self, n: usize) {
        while self.buf.len() < n {
            assert!(self.fill().await, "connection closed early");
        }
    }

    async fn line(&mut self) -> Vec<u8> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return l;
            }
            assert!(self.fill().await, "connection closed early");
        }
    }

    /// One response (`None`: the connection closed first).
    async fn try_resp(&mut self, is_head: bool) -> Option<Resp> {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
        self.buf.drain(..end);
        let status: u16 = head[9..12].parse().unwrap();
        let hdr = |name: &str| head.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
        let mut body = Vec::new();
        if !is_head && status != 304 && status != 204 && status >= 200 {
            if hdr("transfer-encoding:").is_some_and(|v| v == "chunked") {
                loop {
                    let size = usize::from_str_radix(std::str::from_utf8(&self.line().await).unwrap(), 16).unwrap();
                    if size == 0 {
                        assert!(self.line().await.is_empty());
                        break;
                    }
                    self.need(size + 2).await;
                    body.extend_from_slice(&self.buf[..size]);
                    assert_eq!(&self.buf[size..size + 2], b"\r\n");
                    self.buf.drain(..size + 2);
                }
            } else {
                let len: usize = hdr("content-length:").map(|v| v.parse().unwrap()).unwrap_or(0);
                self.need(len).await;
                body = self.buf.drain(..len).collect();
            }
        }
        Some(Resp { status, head, body })
    }

    async fn resp(&mut self, is_head: bool) -> Resp {
        self.try_resp(is_head).await.expect("a response")
    }

    async fn send(&mut self, b: &[u8]) {
        self.c.write_all(b).await.unwrap();
    }

    async fn req(&mut self, method: &str, path: &str, extra: &str, body: &[u8]) -> Resp {
        let mut out = format!("{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n{extra}\r\n", body.len())
            .into_bytes();
        out.extend_from_slice(body);
        self.send(&out).await;
        self.resp(method == "HEAD").await
    }

    /// True when the server closed the connection (EOF) within a few seconds.
    async fn closed(&mut self) -> bool {
        let mut tmp = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), self.c.read(&mut tmp)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31) % 251) as u8).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    let mut out = Vec::new();
    out.extend_from_slice(b"PUT /pipe HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n");
    for i in 0..3 {
        let body = format!("body number {i}");
        out.extend_from_slice(
            format!("PUT /pipe/k{i} HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}", body.len()).as_bytes(),
        );
    }
    out.extend_from_slice(b"GET /pipe/k1 HTTP/1.1\r\n\r\nHEAD /pipe/k2 HTTP/1.1\r\n\r\nGET /pipe/k0 HTTP/1.1\r\n\r\n");
    c.send(&out).await; // all in one write
    for _ in 0..4 {
        let r = c.resp(false).await;
        assert_eq!(r.status, 200, "{}", r.head);
    }
    assert_eq!(c.resp(false).await.body, b"body number 1");
    let r = c.resp(true).await;
    assert!(r.status == 200 && r.head.contains("content-length: 13"), "{}", r.head);
    assert_eq!(c.resp(false).await.body, b"body number 0");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_request_bodies_are_decoded() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    assert_eq!(c.req("PUT", "/chk", "", b"").await.status, 200);
    let payload = data(300_000);
    let mut body = Vec::new();
    for (i, piece) in payload.chunks(70_001).enumerate() {
        // Mixed case hex and a chunk extension on one of them.
        let size = if i == 1 { format!("{:X};ext=v\r\n", piece.len()) } else { format!("{:x}\r\n", piece.len()) };
        body.extend_from_slice(size.as_bytes());
        body.extend_from_slice(piece);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\nx-trailer: 1\r\n\r\n");
    // (Authentication is off, so the decoded length header is all the handler needs to take the
    // de-chunked bytes as the object.)
    let mut out = format!(
        "PUT /chk/obj HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nx-amz-content-sha256: STREAMING-TEST\r\nx-amz-decoded-content-length: {}\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    c.send(&out).await;
    let r = c.resp(false).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // Same connection: the chunked body was consumed exactly.
    let r = c.req("GET", "/chk/obj", "", b"").await;
    assert_eq!(r.body, payload);
    // A chunk whose data runs past its size is an error; nothing is published.
    c.send(b"PUT /chk/bad HTTP/1.1\r\ntransfer-encoding: chunked\r\nx-amz-content-sha256: STREAMING-TEST\r\nx-amz-decoded-content-length: 11\r\n\r\n5\r\nhello world\r\n0\r\n\r\n").await;
    let r = c.try_resp(false).await;
    assert!(r.is_none_or(|r| r.status == 400));
    let e = srv.store.head_object("chk", "bad", GetObjectRequest::default()).await.unwrap_err();
    assert_eq!(e.code, s3hpc_core::ErrorCode::NoSuchKey);
    // A chunked body cut off by a disconnect publishes nothing either.
    let mut c = srv.conn().await;
    c.send(b"PUT /chk/cut HTTP/1.1\r\ntransfer-encoding: chunked\r\nx-amz-content-sha256: STREAMING-TEST\r\nx-amz-decoded-content-length: 1048576\r\n\r\n100000\r\n").await;
    c.send(&data(5000)).await;
    drop(c);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(srv.store.head_object("chk", "cut", GetObjectRequest::default()).await.is_err());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_100_continue() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    assert_eq!(c.req("PUT", "/cont", "", b"").await.status, 200);
    c.send(b"PUT /cont/k HTTP/1.1\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n").await;
    let r = c.resp(false).await;
    assert_eq!(r.status, 100);
    c.send(b"hello").await;
    assert_eq!(c.resp(false).await.status, 200);
    assert_eq!(c.req("GET", "/cont/k", "", b"").await.body, b"hello");
    // A request answered without reading its body (too large) gets no 100 Continue; the
    // connection closes since the client may or may not send the body now.
    c.send(b"PUT /cont/huge HTTP/1.1\r\ncontent-length: 99999999999999\r\nexpect: 100-continue\r\n\r\n").await;
    let r = c.resp(false).await;
    assert_ne!(r.status, 100);
    assert!(c.closed().await);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_and_long_bodies() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    assert_eq!(c.req("PUT", "/shortlong", "", b"").await.status, 200);
    // Shorter than Content-Length, then EOF: 400 (or a close), no object.
    c.send(b"PUT /shortlong/short HTTP/1.1\r\ncontent-length: 1000\r\n\r\n0123456789").await;
    c.c.shutdown().await.unwrap();
    let r = c.try_resp(false).await;
    assert!(r.as_ref().is_none_or(|r| r.status == 400), "{:?}", r.map(|r| r.head));
    assert!(srv.store.head_object("shortlong", "short", GetObjectRequest::default()).await.is_err());
    // Longer than Content-Length: the extra bytes are the next request, which is garbage here.
    let mut c = srv.conn().await;
    c.send(b"PUT /shortlong/long HTTP/1.1\r\ncontent-length: 5\r\n\r\nhelloEXTRA BYTES\r\n\r\n").await;
    let r = c.resp(false).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(c.resp(false).await.status, 400);
    assert!(c.closed().await);
    let mut c = srv.conn().await;
    assert_eq!(c.req("GET", "/shortlong/long", "", b"").await.body, b"hello");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_has_no_body_and_unread_bodies_are_drained() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    assert_eq!(c.req("PUT", "/headb", "", b"").await.status, 200);
    assert_eq!(c.req("PUT", "/headb/k", "", &data(1000)).await.status, 200);
    let r = c.req("HEAD", "/headb/k", "", b"").await;
    assert!(r.status == 200 && r.head.contains("content-length: 1000") && r.body.is_empty(), "{}", r.head);
    // An error answered before the body is read: the small body is drained, the connection kept.
    let r = c.req("PUT", "/headb/k2", "content-md5: !!\r\n", &data(50_000)).await;
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    assert!(!r.head.contains("connection: close"), "{}", r.head);
    let r = c.req("GET", "/headb/k", "", b"").await;
    assert_eq!(r.body, data(1000));
    assert!(r.head.contains("date: ") && r.head.contains("x-amz-request-id: "), "{}", r.head);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_and_oversized_heads() {
    let srv = memory().await;
    let mut c = srv.conn().await;
    c.send(b"NOT A REQUEST\r\n\r\n").await;
    assert_eq!(c.resp(false).await.status, 400);
    assert!(c.closed().await);
    let mut c = srv.conn().await;
    let big = format!("GET / HTTP/1.1\r\nx-big: {}\r\n\r\n", "v".repeat(200_000));
    let _ = c.c.write_all(big.as_bytes()).await; // the server may close before all is sent
    let r = c.try_resp(false).await;
    assert!(r.is_none_or(|r| r.status == 431));
    // Both Content-Length and chunked: refused.
    let mut c = srv.conn().await;
    c.send(b"PUT /x/y HTTP/1.1\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n").await;
    assert_eq!(c.resp(false).await.status, 400);
    // A head that never completes is dropped after header_timeout (2 s here).
    let mut c = srv.conn().await;
    c.send(b"GET / HTTP/1.1\r\nhost: x\r\n").await;
    assert!(c.closed().await);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_the_request_in_flight() {
    let srv = memory().await;
    let mut idle = srv.conn().await;
    assert_eq!(idle.req("PUT", "/graceful", "", b"").await.status, 200);
    let mut busy = srv.conn().await;
    busy.send(b"PUT /graceful/k HTTP/1.1\r\ncontent-length: 10\r\n\r\n01234").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Srv { addr, store, mut stop, task } = srv;
    let _ = stop.take().unwrap().send(());
    // The idle connection is closed at once; the busy one is answered, then closed.
    assert!(idle.closed().await);
    busy.send(b"56789").await;
    let r = busy.resp(false).await;
    assert!(r.status == 200 && r.head.contains("connection: close"), "{}", r.head);
    assert!(busy.closed().await);
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
    let out = store.get_object("graceful", "k", GetObjectRequest::default()).await.unwrap();
    assert_eq!(out.info.size, 10);
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_bodies_go_out_whole_and_in_ranges() {
    let dir = std::env::temp_dir().join(format!("s3hpc-http-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store: DynStore = Arc::new(s3hpc_posix::PosixStore::open(&dir, Default::default()).unwrap());
    let srv = start(store).await;
    let mut c = srv.conn().await;
    assert_eq!(c.req("PUT", "/files", "", b"").await.status, 200);
    let big = data(9 << 20);
    assert_eq!(c.req("PUT", "/files/big", "", &big).await.status, 200);
    assert_eq!(c.req("PUT", "/files/small", "", b"tiny").await.status, 200);
    let r = c.req("GET", "/files/big", "", b"").await;
    assert_eq!(r.status, 200);
    assert!(r.body == big, "9 MiB body differs");
    let r = c.req("GET", "/files/big", "range: bytes=1000-3000999\r\n", b"").await;
    assert_eq!(r.status, 206, "{}", r.head);
    assert!(r.head.contains("content-range: bytes 1000-3000999/9437184"), "{}", r.head);
    assert!(r.body == big[1000..3_001_000], "range differs");
    let r = c.req("GET", "/files/big", "range: bytes=-7\r\n", b"").await;
    assert_eq!(r.body, &big[big.len() - 7..]);
    assert_eq!(c.req("GET", "/files/small", "", b"").await.body, b"tiny");
    let r = c.req("HEAD", "/files/big", "", b"").await;
    assert!(r.body.is_empty() && r.head.contains("content-length: 9437184"));
    // A client that reads slowly still gets every byte (sendfile hits EAGAIN and polls).
    let mut slow = srv.conn().await;
    slow.send(b"GET /files/big HTTP/1.1\r\n\r\n").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = slow.resp(false).await;
    assert!(r.body == big);
    // A client that goes away mid-GET does not disturb the server.
    let mut gone = srv.conn().await;
    gone.send(b"GET /files/big HTTP/1.1\r\n\r\n").await;
    gone.need(1000).await;
    drop(gone);
    assert_eq!(c.req("GET", "/files/small", "", b"").await.body, b"tiny");
    srv.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Above `max_connections`, connections that sent only part of a head and then nothing for a
/// second are shed like silent ones (issue 35: half-sent heads held descriptors until the header
/// timeout), and a new client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_heads_are_shed_above_the_connection_limit() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let store: DynStore = Arc::new(MemoryStore::new());
    let mut cfg = s3hpc_http::Config::new(store.clone(), CredentialSet::new([]));
    cfg.auth = s3hpc_http::Auth::DisabledForTests;
    cfg.header_timeout = Duration::from_secs(60); // never what closes them here
    cfg.max_connections = Some(8);
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(s3hpc_http::serve(listener, cfg, async move {
        let _ = rx.await;
    }));
    let srv = Srv { addr, store, stop: Some(tx), task };
    let mut half = Vec::new();
    for i in 0..8 {
        let mut c = srv.conn().await;
        c.send(format!("GET /b/k{i} HTTP/1.1\r\nhost: x\r\nx-half: ").as_bytes()).await;
        half.push(c);
    }
    tokio::time::sleep(Duration::from_millis(1300)).await;
    // Two more connections pass the limit: the server sheds what waited a second for its head.
    let mut fresh = srv.conn().await;
    let mut fresh2 = srv.conn().await;
    for c in &mut half {
        assert!(c.closed().await, "a partial head a second old was not shed");
    }
    assert_eq!(fresh.req("GET", "/", "", b"").await.status, 200);
    assert_eq!(fresh2.req("GET", "/", "", b"").await.status, 200);
    srv.stop().await;
}
