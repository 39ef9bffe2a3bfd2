//! Bad input over raw sockets: every case closes only the offending connection with a clear
//! error (GOAWAY), never publishes a partial object, and the server keeps serving others.

mod common;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::{
    Body, ChecksumAlgorithm, ChecksumRequest, Credentials, DynStore, ErrorCode, Expected, GetObjectRequest,
    PutObjectRequest, Store,
};
use s3hpc_wire::codec::{Dec, Enc, Request, UploadFields};
use s3hpc_wire::frame::{self, Header, flag, ty};
use s3hpc_wire::sys::auth_proof;
use s3hpc_wire::{ServerOptions, WireClient};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

trait Sock: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Sock for T {}

async fn raw_connect(url: &str) -> Box<dyn Sock> {
    if let Some(p) = url.strip_prefix("unix://") {
        Box::new(tokio::net::UnixStream::connect(p).await.unwrap())
    } else {
        Box::new(tokio::net::TcpStream::connect(url.strip_prefix("tcp://").unwrap()).await.unwrap())
    }
}

use common::{frame_bytes, read_frame};

/// Authenticate a raw socket; `proof` None = the correct HMAC.
async fn raw_session(url: &str, creds: &Credentials, proof: Option<Vec<u8>>) -> (Box<dyn Sock>, Header, Vec<u8>) {
    let mut s = raw_connect(url).await;
    s.write_all(&frame::client_preamble(0)).await.unwrap();
    let mut sp = [0u8; frame::SERVER_PREAMBLE_LEN];
    s.read_exact(&mut sp).await.unwrap();
    assert_eq!(&sp[..4], b"S3HW");
    assert_eq!(u16::from_le_bytes([sp[4], sp[5]]), 1);
    let nonce: [u8; 32] = sp[8..].try_into().unwrap();
    let mut e = Enc::new();
    e.str(&creds.access_key);
    e.bytes(&proof.unwrap_or_else(|| auth_proof(&creds.secret_key, &nonce, &creds.access_key).to_vec()));
    s.write_all(&frame_bytes(ty::AUTH, 0, 0, &e.finish())).await.unwrap();
    let (h, p) = read_frame(&mut s).await.expect("no answer to AUTH");
    (s, h, p)
}

async fn authed(url: &str) -> Box<dyn Sock> {
    let (s, h, _) = raw_session(url, &common::creds(), None).await;
    assert_eq!(h.ty, ty::AUTH_OK);
    s
}

/// Expect GOAWAY with an error mentioning `needle`, then EOF.
async fn expect_goaway(s: &mut Box<dyn Sock>, needle: &str) {
    loop {
        let (h, p) = read_frame(s).await.expect("connection closed without GOAWAY");
        if h.ty != ty::GOAWAY {
            continue; // e.g. a CREDIT frame sent before the violation was seen
        }
        let e = Dec::new(&p).error().unwrap();
        assert!(e.message.contains(needle), "GOAWAY says {e}, expected it to mention {needle:?}");
        break;
    }
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await.expect("not closed");
    assert!(n.is_ok());
}

async fn still_serving(url: &str) {
    let c = common::client(url).await;
    c.head_bucket("bkt").await.expect("server stopped serving after a bad connection");
}

fn put_request(key: &str, len: Option<u64>) -> Vec<u8> {
    put_request_in("bkt", key, len)
}

fn put_request_in(bucket: &str, key: &str, len: Option<u64>) -> Vec<u8> {
    let mut e = Enc::new();
    Request::PutObject {
        bucket: bucket.into(),
        key: key.into(),
        meta: Default::default(),
        tags: vec![],
        conditions: Default::default(),
        upload: UploadFields { content_length: len, ..Default::default() },
    }
    .encode(&mut e);
    e.finish().to_vec()
}

/// A server backed by the posix store (the store dir lives in the server's temp dir).
async fn setup(unix: bool) -> (common::Running, DynStore) {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());

    store.create_bucket("bkt").await.unwrap();
    let opts = ServerOptions {
        max_data_frame: 64 << 10,
        initial_window: 128 << 10,
        handshake_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let mut running = common::start(store.clone(), unix, opts).await;
    running.dirs.push(dir);
    (running, store)
}

async fn eventually_absent(store: &DynStore, key: &str, expect_old: Option<&[u8]>) {
    // The server processes the vanished connection asynchronously; give it a moment, then check
    // nothing new was published.
    tokio::time::sleep(Duration::from_millis(200)).await;
    match (store.get_object("bkt", key, GetObjectRequest::default()).await, expect_old) {
        (Err(e), None) => assert_eq!(e.code, ErrorCode::NoSuchKey),
        (Ok(o), Some(old)) => assert_eq!(&o.body.collect().await.unwrap()[..], old),
        (Ok(o), None) => panic!("partial object published: {} bytes", o.info.size),
        (Err(e), Some(_)) => panic!("old version lost: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_preamble_and_version() {
    let (r, _) = setup(true).await;
    let url = &r.server.url;
    for pre in [*b"HTTP/1.1", {
        let mut p = frame::client_preamble(0);
        p[4] = 9;
        p
    }] {
        let mut s = raw_connect(url).await;
        s.write_all(&pre).await.unwrap();
        let mut sp = [0u8; frame::SERVER_PREAMBLE_LEN];
        s.read_exact(&mut sp).await.unwrap();
        assert_eq!(u16::from_le_bytes([sp[4], sp[5]]), 0, "server must refuse the version");
        expect_goaway(&mut s, if pre[0] == b'H' { "bad magic" } else { "unsupported protocol version" }).await;
    }
    still_serving(url).await;
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_failures() {
    let (r, _) = setup(false).await;
    let url = &r.server.url;
    let bad = WireClient::connect(url, Credentials::new("WIRETESTKEY", "wrong")).await.err().unwrap();
    assert_eq!(bad.code, ErrorCode::SignatureDoesNotMatch);
    let unknown = WireClient::connect(url, Credentials::new("NOPE", "x")).await.err().unwrap();
    assert_eq!(unknown.code, ErrorCode::InvalidAccessKeyId);
    // An empty proof is not accepted from an untrusted peer.
    let (_, h, p) = raw_session(url, &common::creds(), Some(vec![])).await;
    assert_eq!(h.ty, ty::GOAWAY);
    assert_eq!(Dec::new(&p).error().unwrap().code, ErrorCode::SignatureDoesNotMatch);
    // Silence during the handshake: closed after the timeout.
    let mut s = raw_connect(url).await;
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await.unwrap().unwrap();
    still_serving(url).await;
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_credentials_on_unix_socket() {
    let store: DynStore = Arc::new(MemoryStore::new());
    store.create_bucket("bkt").await.unwrap();
    let uid = rustix::process::getuid().as_raw();
    let opts = ServerOptions { trusted_uids: Some(vec![uid]), ..Default::default() };
    let r = common::start(store.clone(), true, opts).await;
    let (_, h, _) = raw_session(&r.server.url, &common::creds(), Some(vec![])).await;
    assert_eq!(h.ty, ty::AUTH_OK, "a trusted uid authenticates without a proof");
    r.server.shutdown().await.unwrap();
    let opts = ServerOptions { trusted_uids: Some(vec![uid + 1]), require_trusted_uid: true, ..Default::default() };
    let r = common::start(store, true, opts).await;
    let (_, h, p) = raw_session(&r.server.url, &common::creds(), None).await;
    assert_eq!(h.ty, ty::GOAWAY);
    assert_eq!(Dec::new(&p).error().unwrap().code, ErrorCode::AccessDenied);
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_frames_close_only_that_connection() {
    for unix in [true, false] {
        let (r, _) = setup(unix).await;
        let url = r.server.url.clone();
        // A healthy client connected before and used after every bad one.
        let healthy = common::client(&url).await;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (frame_bytes(0x77, 0, 1, b""), "unknown frame type"),
            (frame_bytes(ty::REQUEST, 0, 1, &[200]), "unknown opcode"),
            (
                {
                    let mut h = Header { ty: ty::DATA, flags: 0, id: 1, len: 64 << 20 }.encode().to_vec();
                    h.push(0);
                    h
                },
                "exceeds the limit",
            ),
            (
                {
                    let mut e = Enc::new();
                    e.u8(1);
                    e.var(1000);
                    e.buf.extend_from_slice(b"short");
                    frame_bytes(ty::REQUEST, 0, 1, &e.finish())
                },
                "runs past the end",
            ),
            (
                {
                    let mut e = Enc::new();
                    e.u8(1);
                    e.var(1 << 20);
                    frame_bytes(ty::REQUEST, 0, 1, &e.finish())
                },
                "exceeds the limit",
            ),
            (
                {
                    let mut e = Enc::new();
                    e.u8(1);
                    e.str("bkt");
                    e.u8(0);
                    frame_bytes(ty::REQUEST, 0, 1, &e.finish())
                },
                "trailing bytes",
            ),
            (frame_bytes(ty::DATA, 0, 42, b"xx"), "no body open"),
            (
                frame_bytes(ty::REQUEST, flag::BODY_STREAM, 1, &{
                    let mut e = Enc::new();
                    e.u8(3);
                    e.str("bkt");
                    e.finish().to_vec()
                }),
                "carries no body",
            ),
            (
                {
                    let mut h = Header { ty: ty::CREDIT, flags: 0, id: 1, len: 4 }.encode();
                    h[2] = 1;
                    h.to_vec()
                },
                "reserved",
            ),
        ];
        for (bytes, needle) in cases {
            let mut s = authed(&url).await;
            s.write_all(&bytes).await.unwrap();
            expect_goaway(&mut s, needle).await;
            healthy.head_bucket("bkt").await.unwrap();
        }
        // Truncated frame, then the client vanishes.
        let mut s = authed(&url).await;
        let f = frame_bytes(ty::REQUEST, 0, 1, &put_request("t", None));
        s.write_all(&f[..f.len() - 3]).await.unwrap();
        drop(s);
        // Duplicate request id while the first is still open.
        let mut s = authed(&url).await;
        s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 5, &put_request("dup", None))).await.unwrap();
        s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 5, &put_request("dup", None))).await.unwrap();
        expect_goaway(&mut s, "still in use").await;
        healthy.head_bucket("bkt").await.unwrap();
        still_serving(&url).await;
        r.server.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_or_aborting_client_publishes_nothing() {
    for unix in [true, false] {
        let (r, store) = setup(unix).await;
        let url = r.server.url.clone();
        store.put_object("bkt", "keep", PutObjectRequest::default(), Body::from("old")).await.unwrap();
        // Vanish mid-body (no announced length: only the Err item prevents publication).
        for key in ["keep", "fresh"] {
            let mut s = authed(&url).await;
            s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 1, &put_request(key, None))).await.unwrap();
            s.write_all(&frame_bytes(ty::DATA, 0, 1, b"partial body")).await.unwrap();
            s.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(s);
            eventually_absent(&store, key, (key == "keep").then_some(&b"old"[..])).await;
        }
        // ABORT mid-body: the request fails with the error the client sent, nothing published.
        let mut s = authed(&url).await;
        s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 9, &put_request("aborted", None))).await.unwrap();
        s.write_all(&frame_bytes(ty::DATA, 0, 9, b"partial")).await.unwrap();
        let mut e = Enc::new();
        e.error(&s3hpc_core::Error::new(ErrorCode::BadDigest, "client-side checksum mismatch"));
        s.write_all(&frame_bytes(ty::ABORT, 0, 9, &e.finish())).await.unwrap();
        let (h, p) = read_frame(&mut s).await.unwrap();
        assert_eq!((h.ty, h.id, p[0]), (ty::RESPONSE, 9, 1));
        let err = Dec::new(&p[1..]).error().unwrap();
        assert_eq!(err.code, ErrorCode::BadDigest, "{err}");
        eventually_absent(&store, "aborted", None).await;
        // The connection is still usable after an aborted upload.
        s.write_all(&frame_bytes(ty::REQUEST, 0, 10, &{
            let mut e = Enc::new();
            e.u8(3);
            e.str("bkt");
            e.finish().to_vec()
        }))
        .await
        .unwrap();
        let (h, p) = read_frame(&mut s).await.unwrap();
        assert_eq!((h.ty, h.id, &p[..]), (ty::RESPONSE, 10, &[0u8][..]));
        still_serving(&url).await;
        r.server.shutdown().await.unwrap();
    }
}

/// A streamed body whose last step fills a deferred checksum (a trailer), as front ends do.
fn trailer_body(data: Bytes, cell: Arc<OnceLock<String>>, value: String) -> Body {
    let s = futures::stream::unfold(0u8, move |st| {
        let (data, cell, value) = (data.clone(), cell.clone(), value.clone());
        async move {
            match st {
                0 => Some((Ok(data), 1)),
                _ => {
                    let _ = cell.set(value);
                    None
                }
            }
        }
    });
    Body::Stream(Box::pin(s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_in_flight_and_trailers() {
    let (r, store) = setup(true).await;
    let url = r.server.url.clone();
    let c = Arc::new(
        WireClient::connect_with(
            &url,
            common::creds(),
            s3hpc_wire::ClientOptions { connections: 1, ..Default::default() },
        )
        .await
        .unwrap(),
    );
    // 64 concurrent uploads of multi-frame bodies and 64 small ones, on one connection.
    let mut tasks = Vec::new();
    for i in 0..128u64 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let len = if i % 2 == 0 { 300_000 + i as usize } else { 100 + i as usize };
            let data = s3hpc_conformance::pattern(i, len);
            c.put_object("bkt", &format!("k{i}"), PutObjectRequest::default(), Body::from(data.clone())).await.unwrap();
            let got = c.get_object("bkt", &format!("k{i}"), GetObjectRequest::default()).await.unwrap();
            assert_eq!(got.body.collect().await.unwrap(), data);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Dropping a large body half-way cancels it; the connection keeps working.
    let got = c.get_object("bkt", "k0", GetObjectRequest::default()).await.unwrap();
    let mut s = got.body.into_stream();
    use futures::StreamExt;
    let first = s.next().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(s);
    c.head_object("bkt", "k1", GetObjectRequest::default()).await.unwrap();
    // Deferred checksums travel in END.
    let data = Bytes::from_static(b"trailer checked body");
    let good = s3hpc_core::checksum::checksum_of(ChecksumAlgorithm::Crc32c, &data).value;
    for (value, ok) in [(good, true), ("AAAAAA==".to_string(), false)] {
        let cell = Arc::new(OnceLock::new());
        let req = PutObjectRequest {
            checksum: Some(ChecksumRequest {
                algorithm: ChecksumAlgorithm::Crc32c,
                expected: Some(Expected::Deferred(cell.clone())),
            }),
            ..Default::default()
        };
        let res = c.put_object("bkt", "trailer", req, trailer_body(data.clone(), cell, value)).await;
        match (res, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => assert_eq!(e.code, ErrorCode::BadDigest),
            (res, _) => panic!("trailer checksum not honoured: {res:?}"),
        }
    }
    let _ = store;
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reports_server_gone() {
    let (r, _) = setup(false).await;
    let c = common::client(&r.server.url).await;
    c.head_bucket("bkt").await.unwrap();
    r.server.shutdown().await.unwrap();
    let e = c.head_bucket("bkt").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InternalError, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_shutdown_mid_upload_publishes_nothing() {
    let (r, store) = setup(true).await;
    let mut s = authed(&r.server.url).await;
    s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 1, &put_request("cut", None))).await.unwrap();
    s.write_all(&frame_bytes(ty::DATA, 0, 1, b"half of a body")).await.unwrap();
    s.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    r.server.shutdown().await.unwrap();
    eventually_absent(&store, "cut", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_beyond_the_window_is_a_protocol_error() {
    // The memory store refuses a PUT into a missing bucket before reading the body, so nothing
    // consumes the body and no credit comes back.
    let store: DynStore = Arc::new(MemoryStore::new());
    store.create_bucket("bkt").await.unwrap();
    let opts = ServerOptions { max_data_frame: 64 << 10, initial_window: 128 << 10, ..Default::default() };
    let r = common::start(store, false, opts).await;
    let mut s = authed(&r.server.url).await;
    let req = put_request_in("no-such-bucket", "win", None);
    s.write_all(&frame_bytes(ty::REQUEST, flag::BODY_STREAM, 1, &req)).await.unwrap();
    let chunk = vec![7u8; 64 << 10];
    for _ in 0..3 {
        s.write_all(&frame_bytes(ty::DATA, 0, 1, &chunk)).await.unwrap();
    }
    expect_goaway(&mut s, "flow-control window").await;
    still_serving(&r.server.url).await;
    r.server.shutdown().await.unwrap();
}
