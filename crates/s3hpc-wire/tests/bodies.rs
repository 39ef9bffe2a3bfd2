//! How bodies travel: inline, streamed DATA frames (sendfile on the server), or a passed file
//! descriptor on Unix sockets; every way must deliver the same bytes, ranges included.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use s3hpc_core::{Body, ByteRange, DynStore, GetObjectRequest, PutObjectRequest, Store};
use s3hpc_wire::{ClientOptions, ServerOptions, WireClient};

fn kind(b: &Body) -> &'static str {
    match b {
        Body::Empty => "empty",
        Body::Bytes(_) => "bytes",
        Body::File { .. } => "file",
        Body::Stream(_) => "stream",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_by_inline_stream_and_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let store: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());
    store.create_bucket("bkt").await.unwrap();
    let big = s3hpc_conformance::pattern(7, 3 << 20 | 12345);
    let small = s3hpc_conformance::pattern(8, 5000);
    for unix in [true, false] {
        let opts = ServerOptions { max_data_frame: 256 << 10, initial_window: 1 << 20, ..Default::default() };
        let r = common::start(store.clone(), unix, opts).await;
        for fd_passing in [true, false] {
            let copts = ClientOptions { connections: 1, fd_passing, ..Default::default() };
            let c = WireClient::connect_with(&r.server.url, common::creds(), copts).await.unwrap();
            c.put_object("bkt", "big", PutObjectRequest::default(), Body::from(big.clone())).await.unwrap();
            c.put_object("bkt", "small", PutObjectRequest::default(), Body::from(small.clone())).await.unwrap();
            let expect_big = if unix && fd_passing { "file" } else { "stream" };
            let o = c.get_object("bkt", "big", GetObjectRequest::default()).await.unwrap();
            assert_eq!((unix, fd_passing, kind(&o.body)), (unix, fd_passing, expect_big));
            assert_eq!(o.body.collect().await.unwrap(), big);
            let o = c.get_object("bkt", "small", GetObjectRequest::default()).await.unwrap();
            assert_eq!(kind(&o.body), "bytes");
            assert_eq!(o.body.collect().await.unwrap(), small);
            let req = GetObjectRequest { range: Some(ByteRange::FromTo(100_000, 2_500_000)), ..Default::default() };
            let o = c.get_object("bkt", "big", req).await.unwrap();
            assert_eq!(o.range, Some((100_000, 2_400_001)));
            assert_eq!(kind(&o.body), expect_big);
            assert_eq!(o.body.collect().await.unwrap(), big.slice(100_000..=2_500_000));
        }
        r.server.shutdown().await.unwrap();
    }
}

/// Large DATA frames are received into pooled buffers that are reused once the store is done
/// with them: concurrent uploads of different contents, again and again (so buffers that held
/// another upload's bytes come back), into a store that keeps the received chunks (memory) and
/// one that writes them out (posix), must each store exactly their own bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_receive_buffers_never_mix_uploads() {
    let dir = tempfile::tempdir().unwrap();
    let posix: DynStore =
        Arc::new(s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap());
    let memory: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
    for store in [posix, memory] {
        store.create_bucket("bkt").await.unwrap();
        for unix in [true, false] {
            let r = common::start(store.clone(), unix, ServerOptions::default()).await;
            let c = Arc::new(common::client(&r.server.url).await);
            for round in 0..3u64 {
                let mut tasks = Vec::new();
                for k in 0..4u64 {
                    let c = c.clone();
                    // Sizes around the frame size and the pooled-buffer threshold.
                    let size = [(1 << 20) + 1, (2 << 20) + 777, 130_000, 3 << 20][k as usize];
                    let data = s3hpc_conformance::pattern(round * 10 + k, size);
                    tasks.push(tokio::spawn(async move {
                        let key = format!("k{k}");
                        c.put_object("bkt", &key, PutObjectRequest::default(), Body::from(data.clone())).await.unwrap();
                        let o = c.get_object("bkt", &key, GetObjectRequest::default()).await.unwrap();
                        assert_eq!(o.body.collect().await.unwrap(), data, "round {round} key {key}");
                    }));
                }
                for t in tasks {
                    t.await.unwrap();
                }
            }
            r.server.shutdown().await.unwrap();
        }
    }
}

/// More streamed uploads at once on one connection with a thread of its own than its runtime has
/// blocking threads (each posix upload writes on one): the rest wait for a thread, and all land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_streamed_uploads_than_a_connections_blocking_threads_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let posix = s3hpc_posix::PosixStore::open(dir.path(), s3hpc_posix::PosixOptions::default()).unwrap();
    let store: DynStore = Arc::new(posix);
    store.create_bucket("bkt").await.unwrap();
    let r = common::start(store.clone(), true, ServerOptions { dedicated_threads: 1, ..Default::default() }).await;
    let opts = ClientOptions { connections: 1, ..Default::default() };
    let c = Arc::new(WireClient::connect_with(&r.server.url, common::creds(), opts).await.unwrap());
    let body = |i: usize| -> Vec<u8> { (0..300_000 + i).map(|j| (j * 7 + i) as u8).collect() };
    let puts = (0..80).map(|i| {
        let c = c.clone();
        async move {
            let data = body(i);
            let chunks: Vec<std::io::Result<Bytes>> =
                data.chunks(64 << 10).map(|p| Ok(Bytes::copy_from_slice(p))).collect();
            let b = Body::Stream(Box::pin(futures::stream::iter(chunks)));
            c.put_object("bkt", &format!("s{i}"), PutObjectRequest::default(), b).await
        }
    });
    let done = tokio::time::timeout(Duration::from_secs(60), futures::future::join_all(puts)).await;
    for (i, res) in done.expect("streamed uploads hung").into_iter().enumerate() {
        res.unwrap_or_else(|e| panic!("upload {i}: {e}"));
    }
    for i in (0..80).step_by(7) {
        let o = store.get_object("bkt", &format!("s{i}"), GetObjectRequest::default()).await.unwrap();
        assert!(o.body.collect().await.unwrap()[..] == body(i)[..], "object s{i}");
    }
    r.server.shutdown().await.unwrap();
}
