//! A long CompleteMultipartUpload answers 200 at once, keeps the connection alive with
//! whitespace, and puts its result or error in the body (as AWS does); a quick one answers as
//! usual. In-process server over the memory store whose complete is made slow.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const AK: &str = "testkey";
const SK: &str = "testsecret";

/// Makes CompleteMultipartUpload slow (everything else goes straight to the inner store).
struct SlowComplete(Duration);

#[async_trait::async_trait]
impl Hook for SlowComplete {
    async fn before(&self, op: Op, _bucket: &str, _key: &str) -> Result<()> {
        if op == Op::CompleteMultipartUpload {
            tokio::time::sleep(self.0).await;
        }
        Ok(())
    }
}

async fn start(delay: Duration, keepalive_after: Duration) -> std::net::SocketAddr {
    let store: DynStore = Arc::new(HookedStore::new(Arc::new(MemoryStore::new()), SlowComplete(delay)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = s3hpc_http::Config::new(store, CredentialSet::new([Credentials::new(AK, SK)]));
    cfg.complete_keepalive_after = keepalive_after;
    tokio::spawn(s3hpc_http::serve(listener, cfg, std::future::pending()));
    addr
}

fn request(addr: std::net::SocketAddr, method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let uri: http::Uri = format!("http://{addr}{path}").parse().unwrap();
    let mut h = http::HeaderMap::new();
    h.insert(http::header::HOST, addr.to_string().parse().unwrap());
    let m = method.parse().unwrap();
    s3hpc_sigv4::sign(&m, &uri, &mut h, &Credentials::new(AK, SK), "us-east-1", "UNSIGNED-PAYLOAD", SystemTime::now());
    let mut s = format!("{method} {path} HTTP/1.1\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in &h {
        s.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap()));
    }
    s.push_str("\r\n");
    let mut out = s.into_bytes();
    out.extend_from_slice(body);
    out
}

/// One response: status, lower-cased head, de-chunked body, and when the head arrived.
async fn exchange(c: &mut TcpStream, req: &[u8]) -> (u16, String, Vec<u8>, Duration) {
    let t0 = Instant::now();
    c.write_all(req).await.unwrap();
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut tmp).await.unwrap();
        assert!(n > 0, "closed before the head");
        buf.extend_from_slice(&tmp[..n]);
    };
    let head_at = t0.elapsed();
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status: u16 = head[9..12].parse().unwrap();
    let mut rest = buf[end..].to_vec();
    let body = if head.contains("transfer-encoding: chunked") {
        let mut body = Vec::new();
        loop {
            // Parse as many complete chunks as are buffered; read more otherwise.
            let Some(i) = rest.windows(2).position(|w| w == b"\r\n") else {
                let n = c.read(&mut tmp).await.unwrap();
                assert!(n > 0, "closed inside the chunked body");
                rest.extend_from_slice(&tmp[..n]);
                continue;
            };
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..i]).unwrap().trim(), 16).unwrap();
            if rest.len() < i + 2 + size + 2 {
                let n = c.read(&mut tmp).await.unwrap();
                assert!(n > 0, "closed inside a chunk");
                rest.extend_from_slice(&tmp[..n]);
                continue;
            }
            body.extend_from_slice(&rest[i + 2..i + 2 + size]);
            rest.drain(..i + 2 + size + 2);
            if size == 0 {
                break body;
            }
        }
    } else {
        let len: usize =
            head.lines().find_map(|l| l.strip_prefix("content-length: ")).map_or(0, |v| v.trim().parse().unwrap());
        while rest.len() < len {
            let n = c.read(&mut tmp).await.unwrap();
            assert!(n > 0);
            rest.extend_from_slice(&tmp[..n]);
        }
        rest
    };
    (status, head, body, head_at)
}

fn between<'a>(s: &'a str, a: &str, b: &str) -> &'a str {
    let i = s.find(a).unwrap_or_else(|| panic!("{a} in {s}")) + a.len();
    &s[i..i + s[i..].find(b).unwrap()]
}

/// Bucket, upload and one part; returns (upload id, part etag).
async fn prepare(addr: std::net::SocketAddr, c: &mut TcpStream, key: &str) -> (String, String) {
    let (st, _, _, _) = exchange(c, &request(addr, "PUT", "/kabkt", b"")).await;
    assert!(st == 200 || st == 409);
    let (st, _, body, _) = exchange(c, &request(addr, "POST", &format!("/kabkt/{key}?uploads"), b"")).await;
    assert_eq!(st, 200);
    let id = between(&String::from_utf8(body).unwrap(), "<UploadId>", "</UploadId>").to_string();
    let path = format!("/kabkt/{key}?partNumber=1&uploadId={id}");
    let (st, head, _, _) = exchange(c, &request(addr, "PUT", &path, b"hello part one")).await;
    assert_eq!(st, 200, "{head}");
    let etag = between(&head, "etag: \"", "\"").to_string();
    (id, etag)
}

fn complete_doc(etag: &str) -> Vec<u8> {
    format!("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"{etag}\"</ETag></Part></CompleteMultipartUpload>")
        .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_complete_sends_200_whitespace_then_the_result_or_the_error() {
    let addr = start(Duration::from_millis(2500), Duration::from_millis(200)).await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    let (id, etag) = prepare(addr, &mut c, "obj").await;

    let t0 = Instant::now();
    let req = request(addr, "POST", &format!("/kabkt/obj?uploadId={id}"), &complete_doc(&etag));
    let (st, head, body, head_at) = exchange(&mut c, &req).await;
    let body = String::from_utf8(body).unwrap();
    assert_eq!(st, 200, "{head}");
    assert!(head_at < Duration::from_millis(1500), "head only after {head_at:?}");
    assert!(t0.elapsed() >= Duration::from_millis(2500));
    assert!(body.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n  "), "{body:?}");
    let doc = body.trim_start_matches(s3hpc_http::xml::DECL).trim_start_matches(' ');
    assert!(doc.starts_with("<CompleteMultipartUploadResult"), "{body:?}");
    assert!(doc.contains("-1&quot;</ETag>") || doc.contains("-1\"</ETag>"), "{doc}");

    // The object is there, and the connection is still usable.
    let (st, _, got, _) = exchange(&mut c, &request(addr, "GET", "/kabkt/obj", b"")).await;
    assert_eq!((st, got.as_slice()), (200, &b"hello part one"[..]));

    // A failing long complete: 200, whitespace, then an S3 <Error> document.
    let (id, _) = prepare(addr, &mut c, "obj2").await;
    let req =
        request(addr, "POST", &format!("/kabkt/obj2?uploadId={id}"), &complete_doc("00000000000000000000000000000000"));
    let (st, _, body, _) = exchange(&mut c, &req).await;
    let body = String::from_utf8(body).unwrap();
    assert_eq!(st, 200);
    let doc = body.trim_start_matches(s3hpc_http::xml::DECL).trim_start_matches(' ');
    assert!(doc.starts_with("<Error><Code>InvalidPart</Code>"), "{body:?}");
    assert!(doc.contains("<RequestId>"), "{doc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_complete_answers_with_its_own_status() {
    let addr = start(Duration::from_millis(10), Duration::from_secs(10)).await;
    let mut c = TcpStream::connect(addr).await.unwrap();
    let (id, etag) = prepare(addr, &mut c, "q").await;
    let req =
        request(addr, "POST", &format!("/kabkt/q?uploadId={id}"), &complete_doc("00000000000000000000000000000000"));
    let (st, head, body, _) = exchange(&mut c, &req).await;
    assert_eq!(st, 400, "{head}");
    assert!(String::from_utf8(body).unwrap().contains("<Code>InvalidPart</Code>"));
    let req = request(addr, "POST", &format!("/kabkt/q?uploadId={id}"), &complete_doc(&etag));
    let (st, head, body, _) = exchange(&mut c, &req).await;
    assert_eq!(st, 200, "{head}");
    assert!(head.contains("content-length: "), "{head}");
    assert!(
        String::from_utf8(body)
            .unwrap()
            .starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult")
    );
}
