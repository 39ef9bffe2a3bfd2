//! The gateway in-process over the memory store, driven by raw HTTP/1.1 on 127.0.0.1:0 with
//! SigV4-signed requests: routing, error documents, keep-alive, disconnects, graceful shutdown.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use s3hpc_core::memory::MemoryStore;
use s3hpc_core::{CredentialSet, Credentials, DynStore, GetObjectRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const AK: &str = "testkey";
const SK: &str = "testsecret";

struct Srv {
    addr: std::net::SocketAddr,
    store: DynStore,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start() -> Srv {
    start_with(|_| {}).await
}

async fn start_with(tune: impl FnOnce(&mut s3hpc_http::Config)) -> Srv {
    let store: DynStore = Arc::new(MemoryStore::new());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = s3hpc_http::Config::new(store.clone(), CredentialSet::new([Credentials::new(AK, SK)]));
    cfg.body_idle_timeout = Duration::from_secs(2);
    cfg.shutdown_grace = Duration::from_secs(2);
    tune(&mut cfg);
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(s3hpc_http::serve(listener, cfg, async move {
        let _ = rx.await;
    }));
    Srv { addr, store, stop: Some(tx), task }
}

impl Srv {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.task).await.expect("server stops").unwrap().unwrap();
    }
}

/// Request head with SigV4 (UNSIGNED-PAYLOAD) headers.
fn head(addr: std::net::SocketAddr, method: &str, path: &str, len: usize, secret: &str) -> Vec<u8> {
    let uri: http::Uri = format!("http://{addr}{path}").parse().unwrap();
    let mut h = http::HeaderMap::new();
    h.insert(http::header::HOST, addr.to_string().parse().unwrap());
    s3hpc_sigv4::sign(
        &method.parse().unwrap(),
        &uri,
        &mut h,
        &Credentials::new(AK, secret),
        "us-east-1",
        "UNSIGNED-PAYLOAD",
        SystemTime::now(),
    );
    let mut s = format!("{method} {path} HTTP/1.1\r\ncontent-length: {len}\r\n");
    for (k, v) in &h {
        s.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap()));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// Read one response: (status, lower-cased head text, body).
async fn read_resp(c: &mut TcpStream, is_head: bool) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut tmp).await.unwrap();
        assert!(n > 0, "connection closed before the response head");
        buf.extend_from_slice(&tmp[..n]);
    };
    let headtxt = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status: u16 = headtxt[9..12].parse().unwrap();
    let len: usize = headtxt
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    let want = if is_head || status == 304 || status == 204 { 0 } else { len };
    let mut body = buf[end..].to_vec();
    while body.len() < want {
        let n = c.read(&mut tmp).await.unwrap();
        assert!(n > 0);
        body.extend_from_slice(&tmp[..n]);
    }
    (status, headtxt, body)
}

async fn req(srv: &Srv, c: &mut TcpStream, method: &str, path: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut out = head(srv.addr, method, path, body.len(), SK);
    out.extend_from_slice(body);
    c.write_all(&out).await.unwrap();
    read_resp(c, method == "HEAD").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_over_one_keep_alive_connection() {
    let srv = start().await;
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    let (st, h, _) = req(&srv, &mut c, "PUT", "/bkt1", b"").await;
    assert_eq!(st, 200, "{h}");
    assert!(h.contains("x-amz-request-id: ") && h.contains("x-amz-id-2: "), "{h}");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let (st, h, _) = req(&srv, &mut c, "PUT", "/bkt1/dir/a%20b", &data).await;
    assert_eq!(st, 200, "{h}");
    assert!(h.contains(&format!("etag: \"{}\"", s3hpc_core::checksum::md5_hex(&data))), "{h}");
    let (st, _, body) = req(&srv, &mut c, "GET", "/bkt1/dir/a%20b", b"").await;
    assert_eq!(st, 200);
    assert_eq!(body, data);
    let (st, h, _) = req(&srv, &mut c, "HEAD", "/bkt1/dir/a%20b", b"").await;
    assert_eq!(st, 200);
    assert!(h.contains("content-length: 3000000"), "{h}");
    let (st, h, body) = req(&srv, &mut c, "GET", "/bkt1?list-type=2&delimiter=%2F", b"").await;
    assert_eq!(st, 200, "{h}");
    let xml = String::from_utf8(body).unwrap();
    assert!(xml.contains("<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>"), "{xml}");
    let (st, _, body) = req(&srv, &mut c, "GET", "/bkt1/missing", b"").await;
    assert_eq!(st, 404);
    let xml = String::from_utf8(body).unwrap();
    assert!(xml.contains("<Code>NoSuchKey</Code>") && xml.contains("<RequestId>"), "{xml}");
    let (st, _, body) = req(&srv, &mut c, "HEAD", "/bkt1/missing", b"").await;
    assert_eq!((st, body.len()), (404, 0));
    let (st, _, _) = req(&srv, &mut c, "DELETE", "/bkt1", b"").await;
    assert_eq!(st, 409);
    let (st, _, body) = req(&srv, &mut c, "GET", "/bkt1/dir/a%20b?torrent", b"").await;
    assert_eq!(st, 501, "{}", String::from_utf8_lossy(&body));
    drop(c);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signature_is_rejected_before_the_body() {
    let srv = start().await;
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    let (st, _, _) = req(&srv, &mut c, "PUT", "/bkt2", b"").await;
    assert_eq!(st, 200);
    let mut out = head(srv.addr, "PUT", "/bkt2/k", 5, "wrong");
    out.extend_from_slice(b"hello");
    c.write_all(&out).await.unwrap();
    let (st, _, body) = read_resp(&mut c, false).await;
    assert_eq!(st, 403);
    assert!(String::from_utf8_lossy(&body).contains("SignatureDoesNotMatch"));
    assert!(srv.store.head_object("bkt2", "k", GetObjectRequest::default()).await.is_err());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_or_stall_mid_upload_publishes_nothing() {
    let srv = start().await;
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    assert_eq!(req(&srv, &mut c, "PUT", "/bkt3", b"").await.0, 200);
    // 1) The client vanishes after half the body.
    let mut out = head(srv.addr, "PUT", "/bkt3/gone", 1_000_000, SK);
    out.extend_from_slice(&vec![7u8; 500_000]);
    c.write_all(&out).await.unwrap();
    drop(c);
    // 2) The client stops sending but keeps the connection open (idle timeout is 2 s here).
    let mut c2 = TcpStream::connect(srv.addr).await.unwrap();
    let mut out = head(srv.addr, "PUT", "/bkt3/stalled", 1000, SK);
    out.extend_from_slice(&[1u8; 10]);
    c2.write_all(&out).await.unwrap();
    let (st, _, body) = tokio::time::timeout(Duration::from_secs(10), read_resp(&mut c2, false)).await.unwrap();
    assert_eq!(st, 400, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("RequestTimeout"));
    for k in ["gone", "stalled"] {
        let e = srv.store.head_object("bkt3", k, GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, s3hpc_core::ErrorCode::NoSuchKey, "{k}");
    }
    // The server still serves.
    let mut c3 = TcpStream::connect(srv.addr).await.unwrap();
    assert_eq!(req(&srv, &mut c3, "GET", "/", b"").await.0, 200);
    drop((c2, c3));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_limit_queues_large_bodies_and_small_ones_bypass_it() {
    let srv = start_with(|c| c.max_concurrent_uploads = 1).await;
    let mut c = TcpStream::connect(srv.addr).await.unwrap();
    assert_eq!(req(&srv, &mut c, "PUT", "/bkt4", b"").await.0, 200);
    // Upload A holds the only permit: half its body is sent, then it pauses.
    let big = vec![5u8; 1_000_000];
    let mut a = TcpStream::connect(srv.addr).await.unwrap();
    let mut out = head(srv.addr, "PUT", "/bkt4/a", big.len(), SK);
    out.extend_from_slice(&big[..500_000]);
    a.write_all(&out).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A small PUT does not need a permit and completes meanwhile.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    assert_eq!(req(&srv, &mut s, "PUT", "/bkt4/small", b"tiny").await.0, 200);
    // Upload B (large) waits for the permit; it completes once A has finished.
    let srv_addr = srv.addr;
    let big2 = big.clone();
    let b = tokio::spawn(async move {
        let mut b = TcpStream::connect(srv_addr).await.unwrap();
        let mut out = head(srv_addr, "PUT", "/bkt4/b", big2.len(), SK);
        out.extend_from_slice(&big2);
        b.write_all(&out).await.unwrap();
        read_resp(&mut b, false).await.0
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!b.is_finished(), "B must wait for A's permit");
    a.write_all(&big[500_000..]).await.unwrap();
    assert_eq!(read_resp(&mut a, false).await.0, 200);
    assert_eq!(tokio::time::timeout(Duration::from_secs(10), b).await.unwrap().unwrap(), 200);
    for k in ["a", "b", "small"] {
        assert!(srv.store.head_object("bkt4", k, GetObjectRequest::default()).await.is_ok(), "{k}");
    }
    drop((a, s, c));
    srv.stop().await;
}
