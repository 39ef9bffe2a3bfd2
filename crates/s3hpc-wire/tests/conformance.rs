//! The lead's conformance suite through WireClient, over a Unix socket and over TCP, against a
//! server backed by the posix backend (and the memory oracle over a Unix socket).

mod common;

use std::sync::Arc;

use s3hpc_conformance::{Caps, run_all};
use s3hpc_core::DynStore;
use s3hpc_core::memory::MemoryStore;
use s3hpc_wire::ServerOptions;

async fn run(unix: bool, memory: bool) {
    run_io(unix, memory, s3hpc_posix::IoMode::Offload).await
}

async fn run_io(unix: bool, memory: bool, io: s3hpc_posix::IoMode) {
    let dir = tempfile::tempdir().unwrap();
    let (store, caps): (DynStore, Caps) = if memory {
        (Arc::new(MemoryStore::new()), Caps { etag_md5: true, file_and_dir_same_name: true, part_checksums: false })
    } else {
        let opts = s3hpc_posix::PosixOptions { io, ..Default::default() };
        let posix = s3hpc_posix::PosixStore::open(dir.path(), opts).unwrap();
        (Arc::new(posix), Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: false })
    };
    // Small frames and windows so that multi-frame bodies and credit updates are exercised.
    // Over TCP every connection shares the server's runtime (no dedicated threads), so both ways
    // of serving a connection run the whole suite.
    let dedicated_threads = if unix { ServerOptions::default().dedicated_threads } else { 0 };
    let opts =
        ServerOptions { max_data_frame: 64 << 10, initial_window: 256 << 10, dedicated_threads, ..Default::default() };
    let r = common::start(store, unix, opts).await;
    let client: DynStore = Arc::new(common::client(&r.server.url).await);
    // The rename and append cases pass over stores without them: these must run here.
    assert!(!s3hpc_conformance::lacks_rename(&client).await, "RenameObject over the binary protocol");
    assert!(!s3hpc_conformance::lacks_append(&client).await, "append over the binary protocol");
    run_all(client, caps).await;
    r.server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_unix_socket_posix() {
    run(true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_tcp_posix() {
    run(false, false).await;
}

/// The server's batches then run inside `block_in_place` on its workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_unix_socket_posix_in_place() {
    run_io(true, false, s3hpc_posix::IoMode::InPlace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_over_unix_socket_memory() {
    run(true, true).await;
}
