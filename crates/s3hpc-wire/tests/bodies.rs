//! How bodies travel: inline, streamed DATA frames (sendfile on the server), or a passed file
//! descriptor on Unix sockets; every way must deliver the same bytes, ranges included.

mod common;

use std::sync::Arc;

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
