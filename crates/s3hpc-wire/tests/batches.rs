//! Quick requests of stores that offload blocking work run in batches (one batch per read of the
//! connection) on blocking-pool threads, or on the connection's own thread when it has one. A
//! request that fails or panics there fails alone; responses too large to send inline continue
//! as streams within the client's credit.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::join_all;
use s3hpc_core::hooked::{Hook, HookedStore, Op};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;
use s3hpc_wire::ServerOptions;

const BOUND: Duration = Duration::from_secs(20);

/// HEAD of the key `boom` panics inside the store call.
struct Boom;

#[async_trait]
impl Hook for Boom {
    async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
        if op == Op::HeadObject && key == "boom" {
            panic!("a store call panicked (on purpose)");
        }
        Ok(())
    }
}

async fn panicking_request_fails_alone(unix: bool) {
    let mem = Arc::new(MemoryStore::new());
    let store = Arc::new(HookedStore::new(mem, Boom).offloading_io());
    assert!(store.capabilities().offloads_io);
    // Over TCP the connection shares the server's runtime and batches go to the blocking pool;
    // over the Unix socket it has a thread of its own and batches run there.
    let dedicated_threads = if unix { 1 } else { 0 };
    let r = common::start(store, unix, ServerOptions { dedicated_threads, ..Default::default() }).await;
    let c = Arc::new(common::client(&r.server.url).await);
    c.create_bucket("bkt").await.unwrap();
    for i in 0..8 {
        let body = Body::from(Bytes::from(vec![i as u8; 100 + i]));
        c.put_object("bkt", &format!("k{i}"), PutObjectRequest::default(), body).await.unwrap();
    }
    c.put_object("bkt", "boom", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x"))).await.unwrap();
    for round in 0..5 {
        // Many HEADs at once, so that most reads of the server carry several of them.
        let heads = (0..24).map(|i| {
            let c = c.clone();
            let key = if i == 11 { "boom".to_string() } else { format!("k{}", i % 8) };
            async move { (key.clone(), c.head_object("bkt", &key, GetObjectRequest::default()).await) }
        });
        let results = tokio::time::timeout(BOUND, join_all(heads)).await.expect("a HEAD hung after a panic");
        for (key, res) in results {
            if key == "boom" {
                let e = res.expect_err("the panicking HEAD must fail");
                assert_eq!(e.code, ErrorCode::InternalError, "round {round}: {e}");
            } else {
                let n: usize = key[1..].parse().unwrap();
                assert_eq!(res.unwrap_or_else(|e| panic!("round {round}, {key}: {e}")).size, 100 + n as u64);
            }
        }
    }
    // The connection still serves.
    assert_eq!(c.head_object("bkt", "k3", GetObjectRequest::default()).await.unwrap().size, 103);
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_request_fails_alone_over_unix() {
    panicking_request_fails_alone(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_request_fails_alone_over_tcp() {
    panicking_request_fails_alone(false).await;
}

/// Over TCP (no descriptor passing) GETs of objects larger than an inline response stream in DATA
/// frames within a small window, while small HEADs, GETs and PUTs share the batches; the
/// connection on a thread of its own (batches run there, streams continue on its runtime).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_responses_of_batched_gets_stream_within_credit() {
    large_responses_stream_within_credit(1).await;
}

/// The same with the connection on the server's shared runtime (batches on the blocking pool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_responses_of_batched_gets_stream_within_credit_on_the_shared_runtime() {
    large_responses_stream_within_credit(0).await;
}

async fn large_responses_stream_within_credit(dedicated_threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let posix = s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap();
    assert!(posix.capabilities().offloads_io);
    let opts =
        ServerOptions { max_data_frame: 16 << 10, initial_window: 64 << 10, dedicated_threads, ..Default::default() };
    let r = common::start(Arc::new(posix), false, opts).await;
    let c = Arc::new(common::client(&r.server.url).await);
    c.create_bucket("bkt").await.unwrap();
    let big = |i: usize| -> Vec<u8> { (0..(1 << 20) + 17 * i).map(|j| (j * 31 + i) as u8).collect() };
    for i in 0..4 {
        c.put_object("bkt", &format!("big{i}"), PutObjectRequest::default(), Body::from(Bytes::from(big(i))))
            .await
            .unwrap();
    }
    let calls = (0..32).map(|i| {
        let c = c.clone();
        async move {
            match i % 4 {
                0 => {
                    let o = c.get_object("bkt", &format!("big{}", i / 4 % 4), GetObjectRequest::default()).await?;
                    let got = o.body.collect().await.map_err(Error::from)?;
                    assert!(got[..] == big(i / 4 % 4)[..], "GET {i}: wrong bytes");
                }
                1 => {
                    let body = Body::from(Bytes::from(format!("small {i}")));
                    c.put_object("bkt", &format!("s{i}"), PutObjectRequest::default(), body).await?;
                }
                2 => {
                    let info = c.head_object("bkt", &format!("big{}", i % 4), GetObjectRequest::default()).await?;
                    assert_eq!(info.size, ((1 << 20) + 17 * (i % 4)) as u64);
                }
                _ => {
                    let e = c.get_object("bkt", "missing", GetObjectRequest::default()).await.unwrap_err();
                    assert_eq!(e.code, ErrorCode::NoSuchKey);
                }
            }
            Ok::<_, Error>(())
        }
    });
    for (i, res) in tokio::time::timeout(BOUND, join_all(calls)).await.expect("requests hung").into_iter().enumerate() {
        res.unwrap_or_else(|e| panic!("call {i}: {e}"));
    }
    for i in (1..32).step_by(4) {
        let o = c.get_object("bkt", &format!("s{i}"), GetObjectRequest::default()).await.unwrap();
        assert_eq!(&o.body.collect().await.unwrap()[..], format!("small {i}").as_bytes());
    }
    r.server.shutdown().await.unwrap();
}
