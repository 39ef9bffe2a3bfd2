//! Connection loss and reconnection of `WireClient`: a server restarted on the same Unix socket
//! path or TCP port is reconnected to by the next request; requests in flight when the server goes
//! away fail with a clear "connection lost" error (never a hang, never a wrong answer); with no
//! server at all a request fails within a bounded time.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;
use s3hpc_wire::{ServerOptions, WireClient};
use tokio::sync::Notify;

/// HEAD of the key `hang` never returns, so a request can be held "in flight" inside the server
/// (every other call goes through to the inner store).
struct Gate {
    entered: Notify,
    hung: AtomicBool,
}

#[async_trait]
impl Hook for Gate {
    async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
        if op == Op::HeadObject && key == "hang" {
            self.hung.store(true, Ordering::SeqCst);
            self.entered.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

const BOUND: Duration = Duration::from_secs(10);

async fn start_at(url: &str, store: DynStore) -> s3hpc_wire::ServerHandle {
    let set = Arc::new(CredentialSet::new([common::creds()]));
    s3hpc_wire::bind(url, store, set, ServerOptions::default()).await.unwrap().spawn()
}

async fn head_size(c: &WireClient, key: &str) -> Result<u64> {
    c.head_object("bkt", key, GetObjectRequest::default()).await.map(|i| i.size)
}

fn assert_conn_lost(r: &Result<impl std::fmt::Debug>) {
    match r {
        Err(e) => assert!(e.message.contains("connection lost"), "expected a connection-lost error, got {e}"),
        Ok(v) => panic!("expected a connection-lost error, got a success: {v:?}"),
    }
}

/// A body that sends one chunk and then never ends.
fn endless_body() -> Body {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 100_000])) });
    Body::Stream(Box::pin(futures::StreamExt::chain(first, futures::stream::pending())))
}

async fn restart(unix: bool) {
    let dir = tempfile::tempdir().unwrap();
    let url0 =
        if unix { format!("unix://{}", dir.path().join("wire.sock").display()) } else { "tcp://127.0.0.1:0".into() };
    let mem: DynStore = Arc::new(MemoryStore::new());
    let gate = Arc::new(HookedStore::new(mem.clone(), Gate { entered: Notify::new(), hung: AtomicBool::new(false) }));
    let server = start_at(&url0, gate.clone()).await;
    let url = server.url.clone();
    let c = Arc::new(common::client(&url).await);
    c.create_bucket("bkt").await.unwrap();
    c.put_object("bkt", "a", PutObjectRequest::default(), Body::from(vec![1u8; 1234])).await.unwrap();
    c.put_object("bkt", "big", PutObjectRequest::default(), Body::from(vec![2u8; 300_000])).await.unwrap();
    // A body in a slot lent by one connection (Unix socket only), used again after the restart.
    let lent = c.body_buffer(400_000).map(|mut b| {
        b.fill(9);
        b.freeze()
    });
    assert_eq!(lent.is_some(), unix);
    if let Some(l) = &lent {
        c.put_object("bkt", "lent", PutObjectRequest::default(), Body::from(l.clone())).await.unwrap();
    }

    // In flight when the server goes away: a HEAD stuck in the store, a streamed PUT whose body
    // is still open, and a GET whose response body has not been read.
    let stuck = tokio::spawn({
        let c = c.clone();
        async move { head_size(&c, "hang").await }
    });
    let upload = tokio::spawn({
        let c = c.clone();
        async move { c.put_object("bkt", "partial", PutObjectRequest::default(), endless_body()).await }
    });
    let get = c.get_object("bkt", "big", GetObjectRequest { ..Default::default() }).await.unwrap();
    tokio::time::timeout(BOUND, gate.hook().entered.notified()).await.expect("HEAD never reached the store");
    assert!(gate.hook().hung.load(Ordering::SeqCst));
    tokio::time::sleep(Duration::from_millis(50)).await; // let the upload's first DATA frame arrive

    let t = Instant::now();
    tokio::time::timeout(BOUND, server.shutdown()).await.expect("server shutdown hung").unwrap();
    let r = tokio::time::timeout(BOUND, stuck).await.expect("in-flight HEAD hung after the server went away");
    assert_conn_lost(&r.unwrap());
    let r = tokio::time::timeout(BOUND, upload).await.expect("in-flight PUT hung after the server went away");
    assert_conn_lost(&r.unwrap());
    let body = tokio::time::timeout(BOUND, collect(get.body)).await.expect("GET body hung");
    // The body is either complete (it was sent before the shutdown) or fails; never short.
    if let Ok(b) = &body {
        assert_eq!(b.len(), 300_000);
    }
    eprintln!("in-flight requests failed {:?} after the shutdown started", t.elapsed());

    // Same endpoint, new server over the same data.
    let server = start_at(&url, mem.clone()).await;
    assert_eq!(server.url, url);
    // The lent slot belongs to a lost connection (the first request after the restart goes to
    // it, and reconnects): its bytes now travel like any other body.
    if let Some(l) = lent {
        for k in 0..3 {
            let key = format!("lent-after-{k}");
            c.put_object("bkt", &key, PutObjectRequest::default(), Body::from(l.clone())).await.unwrap();
            let b = collect(c.get_object("bkt", &key, GetObjectRequest::default()).await.unwrap().body).await.unwrap();
            assert!(b == l, "{key}: wrong bytes");
        }
    }
    // Every request after the failure (round-robin over both pooled connections) succeeds.
    for _ in 0..4 {
        assert_eq!(head_size(&c, "a").await.unwrap(), 1234);
    }
    let o = c.put_object("bkt", "after", PutObjectRequest::default(), Body::from(vec![3u8; 200_000])).await.unwrap();
    assert_eq!(o.size, 200_000);
    let b = collect(c.get_object("bkt", "big", GetObjectRequest::default()).await.unwrap().body).await.unwrap();
    assert_eq!(b, vec![2u8; 300_000]);
    // The upload cut off by the restart was never published.
    let e = head_size(&c, "partial").await.unwrap_err();
    assert_eq!(e.code, ErrorCode::NoSuchKey);
    server.shutdown().await.unwrap();
}

async fn collect(b: Body) -> std::io::Result<Vec<u8>> {
    use futures::StreamExt;
    let mut s = b.into_stream();
    let mut v = Vec::new();
    while let Some(c) = s.next().await {
        v.extend_from_slice(&c?);
    }
    Ok(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_same_unix_path_reconnects() {
    restart(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_same_tcp_port_reconnects() {
    restart(false).await;
}

async fn gone(unix: bool) {
    let mem: DynStore = Arc::new(MemoryStore::new());
    let run = common::start(mem, unix, ServerOptions::default()).await;
    let url = run.server.url.clone();
    let c = common::client(&url).await;
    c.create_bucket("bkt").await.unwrap();
    run.server.shutdown().await.unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let r = tokio::time::timeout(BOUND, c.head_bucket("bkt")).await.expect("request hung with no server");
        let e = r.unwrap_err();
        assert!(e.message.contains("connection lost"), "unclear error: {e}");
        assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_gone_unix_fails_fast() {
    gone(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_gone_tcp_fails_fast() {
    gone(false).await;
}

/// A server that accepts but never answers the handshake: the connect timeout bounds the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.sock");
    let l = tokio::net::UnixListener::bind(&path).unwrap();
    let _keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let opts = s3hpc_wire::ClientOptions { connect_timeout: Duration::from_millis(300), ..Default::default() };
    let t = Instant::now();
    let r = WireClient::connect_with(&format!("unix://{}", path.display()), common::creds(), opts).await;
    let e = r.err().expect("connect to a silent server succeeded");
    assert!(e.message.contains("timed out"), "unclear error: {e}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

/// Restart the server again and again and send a request right away, before the client can
/// have noticed: reads and other replayable requests always succeed (a request written to the
/// dead connection is sent again on a new one); a non-replayable one (CreateBucket) either
/// succeeds or fails with the connection-lost error, never anything else.
async fn rapid_restarts(unix: bool) {
    let dir = tempfile::tempdir().unwrap();
    let url0 =
        if unix { format!("unix://{}", dir.path().join("wire.sock").display()) } else { "tcp://127.0.0.1:0".into() };
    let mem: DynStore = Arc::new(MemoryStore::new());
    let mut server = start_at(&url0, mem.clone()).await;
    let url = server.url.clone();
    let opts = s3hpc_wire::ClientOptions { connections: 1, ..Default::default() };
    let c = WireClient::connect_with(&url, common::creds(), opts).await.unwrap();
    c.create_bucket("bkt").await.unwrap();
    c.put_object("bkt", "a", PutObjectRequest::default(), Body::from(vec![1u8; 77])).await.unwrap();
    let mut lost = 0;
    for i in 0..20 {
        server.shutdown().await.unwrap();
        server = start_at(&url, mem.clone()).await;
        if i % 2 == 0 {
            let r = tokio::time::timeout(BOUND, head_size(&c, "a")).await.expect("HEAD hung");
            assert_eq!(r.unwrap(), 77, "restart {i}");
        } else {
            match tokio::time::timeout(BOUND, c.create_bucket(&format!("bkt{i}"))).await.expect("hung") {
                Ok(()) => {}
                Err(e) => {
                    assert_conn_lost(&Err::<(), _>(e));
                    lost += 1;
                }
            }
            // Whatever the previous call saw, the connection works now.
            assert_eq!(head_size(&c, "a").await.unwrap(), 77);
        }
    }
    eprintln!("non-replayable requests that met a dead connection: {lost} of 10");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_restarts_unix() {
    rapid_restarts(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_restarts_tcp() {
    rapid_restarts(false).await;
}

/// A server that completes the handshake and then reads requests without ever answering: the
/// request timeout bounds every wait, the silent connection is given up, and the next request
/// (on a new connection to the same silent server) times out the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mute_server_request_times_out() {
    use s3hpc_wire::frame;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mute.sock");
    let l = tokio::net::UnixListener::bind(&path).unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let acc = accepted.clone();
    let _srv = tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            acc.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut pre = [0u8; frame::CLIENT_PREAMBLE_LEN];
                s.read_exact(&mut pre).await.unwrap();
                let mut sp = frame::MAGIC.to_vec();
                sp.extend_from_slice(&frame::VERSION.to_le_bytes());
                sp.extend_from_slice(&[0u8; 2 + 32]);
                s.write_all(&sp).await.unwrap();
                let mut hdr = [0u8; frame::HEADER_LEN];
                s.read_exact(&mut hdr).await.unwrap();
                let h = frame::Header::decode(&hdr, frame::MAX_DATA_FRAME_HARD).unwrap();
                let mut p = vec![0u8; h.len as usize];
                s.read_exact(&mut p).await.unwrap();
                let limits = frame::Limits { max_data_frame: 1 << 20, initial_window: 4 << 20, max_inflight: 16 };
                let mut ok = bytes::BytesMut::new();
                frame::put_frame(&mut ok, frame::ty::AUTH_OK, 0, 0, &limits.encode());
                s.write_all(&ok).await.unwrap();
                // Swallow every request, answer none.
                let mut junk = vec![0u8; 64 << 10];
                while matches!(s.read(&mut junk).await, Ok(n) if n > 0) {}
            });
        }
    });
    let t = Duration::from_millis(400);
    let opts = s3hpc_wire::ClientOptions { connections: 1, request_timeout: Some(t), ..Default::default() };
    let c = WireClient::connect_with(&format!("unix://{}", path.display()), common::creds(), opts).await.unwrap();
    for round in 0..2 {
        let start = Instant::now();
        let r = tokio::time::timeout(BOUND, head_size(&c, "k")).await.expect("HEAD hung past the request timeout");
        let e = r.expect_err("a mute server answered");
        assert_eq!(e.code, ErrorCode::RequestTimeout, "round {round}: {e}");
        assert!(e.message.contains("within"), "unclear error: {e}");
        let took = start.elapsed();
        assert!(took >= t && took < t * 5, "round {round}: timed out after {took:?}");
    }
    // The silent connection was dropped after the first timeout: the second request reconnected.
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    // Streamed uploads: one that fits the first credit window then waits for the answer; one
    // larger than the window (4 MiB) waits for credit that never comes. Both are bounded.
    for (size, what) in [(200_000, "sent no response"), (5 << 20, "sent no upload credit")] {
        let start = Instant::now();
        let body = Body::from(vec![1u8; size]);
        let r = tokio::time::timeout(BOUND, c.put_object("bkt", "p", PutObjectRequest::default(), body))
            .await
            .expect("PUT hung past the request timeout");
        let e = r.expect_err("a mute server answered a PUT");
        assert_eq!(e.code, ErrorCode::RequestTimeout, "{e}");
        assert!(e.message.contains(what), "{size} bytes: {e}");
        assert!(start.elapsed() < t * 5);
    }
}

/// A request stuck inside the store of a live server times out; the connection was silent, so
/// it is replaced, and the next request succeeds. Without a timeout, it would wait for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_stuck_in_store_times_out_and_client_recovers() {
    let mem: DynStore = Arc::new(MemoryStore::new());
    mem.create_bucket("bkt").await.unwrap();
    mem.put_object("bkt", "k", PutObjectRequest::default(), Body::from(vec![5u8; 10])).await.unwrap();
    let gate = Arc::new(HookedStore::new(mem, Gate { entered: Notify::new(), hung: AtomicBool::new(false) }));
    let store: DynStore = gate.clone();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("unix://{}", dir.path().join("stuck.sock").display());
    let srv = start_at(&url, store).await;
    let t = Duration::from_millis(300);
    let opts = s3hpc_wire::ClientOptions { connections: 1, request_timeout: Some(t), ..Default::default() };
    let c = WireClient::connect_with(&url, common::creds(), opts).await.unwrap();
    assert_eq!(head_size(&c, "k").await.unwrap(), 10);
    let start = Instant::now();
    let e = tokio::time::timeout(BOUND, head_size(&c, "hang")).await.expect("hung").expect_err("answered");
    assert_eq!(e.code, ErrorCode::RequestTimeout, "{e}");
    assert!(gate.hook().hung.load(Ordering::SeqCst));
    assert!(start.elapsed() < t * 5);
    assert_eq!(head_size(&c, "k").await.unwrap(), 10);
    srv.shutdown().await.unwrap();
}
