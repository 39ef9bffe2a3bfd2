//! Connections on threads of their own (`ServerOptions::dedicated_threads`): at most that many,
//! further connections share the server's runtime, every thread ends with its connection, and
//! server shutdown ends them all.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::*;
use s3hpc_wire::{ClientOptions, ServerOptions, WireClient};

/// Threads of this process serving a connection (the name the server gives them).
fn connection_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "s3hpc-wire-conn")
        .count()
}

async fn until(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A HEAD of the key `slow` holds its thread for a while.
struct Slow;

#[async_trait]
impl Hook for Slow {
    async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
        if op == Op::HeadObject && key == "slow" {
            std::thread::sleep(SLOW);
        }
        Ok(())
    }
}

const SLOW: Duration = Duration::from_millis(400);

/// A client with one connection.
async fn client(url: &str) -> WireClient {
    WireClient::connect_with(url, common::creds(), ClientOptions { connections: 1, ..Default::default() })
        .await
        .unwrap()
}

async fn round_trip(c: &dyn Store, key: &str) {
    let body = Body::from(Bytes::from(format!("body of {key}")));
    c.put_object("bkt", key, PutObjectRequest::default(), body).await.unwrap();
    let o = c.get_object("bkt", key, GetObjectRequest::default()).await.unwrap();
    assert_eq!(&o.body.collect().await.unwrap()[..], format!("body of {key}").as_bytes());
    assert_eq!(c.head_object("bkt", key, GetObjectRequest::default()).await.unwrap().size, 8 + key.len() as u64);
}

// One test touches the thread count (tests of one binary run in parallel).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedicated_threads_are_capped_end_with_their_connection_and_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let posix = s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap();
    let store: DynStore = Arc::new(HookedStore::new(Arc::new(posix), Slow).offloading_io());
    store.create_bucket("bkt").await.unwrap();
    assert_eq!(connection_threads(), 0);
    let r = common::start(store.clone(), true, ServerOptions { dedicated_threads: 2, ..Default::default() }).await;

    // Four connections (a client with one connection each): two get threads, two share the
    // runtime; all serve.
    let mut clients = Vec::new();
    for i in 0..4 {
        let c = client(&r.server.url).await;
        round_trip(&c, &format!("k{i}")).await;
        c.put_object("bkt", "slow", PutObjectRequest::default(), Body::Empty).await.unwrap();
        clients.push(c);
    }
    assert_eq!(connection_threads(), 2, "the cap is two threads");
    for (i, c) in clients.iter().enumerate() {
        round_trip(c, &format!("again{i}")).await;
    }

    // A thread ends with its connection, and a new connection may take its place.
    drop(clients.remove(0));
    until("the first connection's thread ended", || connection_threads() == 1).await;
    let c = client(&r.server.url).await;
    round_trip(&c, "late").await;
    assert_eq!(connection_threads(), 2);
    clients.push(c);

    // Shutdown ends the threads of connections that are open: idle ones at once, and one busy
    // in a request (the first client's connection has a thread) when that request is done.
    let busy = Arc::new(clients.remove(0));
    let head = tokio::spawn({
        let busy = busy.clone();
        async move { busy.head_object("bkt", "slow", GetObjectRequest::default()).await }
    });
    tokio::time::sleep(SLOW / 4).await;
    let t = Instant::now();
    r.server.shutdown().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "shutdown took {:?}", t.elapsed());
    assert_eq!(connection_threads(), 0, "shutdown returned before the connection threads ended");
    // Whether its answer went out before the socket was shut down is a race; it must not hang.
    let _ = tokio::time::timeout(Duration::from_secs(5), head).await.expect("the HEAD hung after shutdown");
    clients.push(Arc::into_inner(busy).unwrap());
    for c in &clients {
        let e = c.head_bucket("bkt").await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InternalError, "{e}");
    }
}
