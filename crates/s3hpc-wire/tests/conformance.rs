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
        (
            Arc::new(MemoryStore::new()),
            Caps { etag_md5: true, file_and_dir_same_name: true, part_checksums: false, default_checksum: false },
        )
    } else {
        let opts = s3hpc_posix::PosixOptions { io, ..Default::default() };
        let posix = s3hpc_posix::PosixStore::open(dir.path(), opts).unwrap();
        (
            Arc::new(posix),
            Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: false, default_checksum: false },
        )
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
    assert!(!s3hpc_conformance::lacks_fs(&client).await, "s3hpc's file-system extension over the binary protocol");
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

/// The protocol carries no version ids: a request naming one (GET, HEAD, copies, object tagging)
/// is refused (NotImplemented), never answered from the current version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_naming_a_version_are_refused() {
    use s3hpc_core::{
        Body, CopyObjectRequest, CreateMultipartRequest, ErrorCode, GetObjectRequest, PartCopySource, PutObjectRequest,
    };
    let store: DynStore = Arc::new(MemoryStore::new());
    let r = common::start(store, true, ServerOptions::default()).await;
    let c = common::client(&r.server.url).await;
    use s3hpc_core::Store;
    c.create_bucket("vb1").await.unwrap();
    c.put_object("vb1", "k", PutObjectRequest::default(), Body::from(&b"current"[..])).await.unwrap();
    let v = Some("null".to_string());
    let get = GetObjectRequest { version_id: v.clone(), ..Default::default() };
    assert_eq!(c.get_object("vb1", "k", get.clone()).await.err().unwrap().code, ErrorCode::NotImplemented);
    assert_eq!(c.head_object("vb1", "k", get).await.err().unwrap().code, ErrorCode::NotImplemented);
    let copy = CopyObjectRequest { source_version_id: v.clone(), ..Default::default() };
    assert_eq!(c.copy_object("vb1", "k", "vb1", "c", copy).await.err().unwrap().code, ErrorCode::NotImplemented);
    let up = c.create_multipart_upload("vb1", "m", CreateMultipartRequest::default()).await.unwrap();
    let src = PartCopySource { bucket: "vb1".into(), key: "k".into(), version_id: v, ..Default::default() };
    assert_eq!(c.upload_part_copy("vb1", "m", &up, 1, src).await.err().unwrap().code, ErrorCode::NotImplemented);
    // Object tagging of a version: refused, and the current version's tags stay as they were.
    let tags = vec![("t".to_string(), "v".to_string())];
    let code = |e: Option<s3hpc_core::Error>| e.unwrap().code;
    assert_eq!(code(c.get_object_tagging("vb1", "k", Some("null")).await.err()), ErrorCode::NotImplemented);
    assert_eq!(code(c.put_object_tagging("vb1", "k", Some("null"), tags).await.err()), ErrorCode::NotImplemented);
    assert_eq!(code(c.delete_object_tagging("vb1", "k", Some("null")).await.err()), ErrorCode::NotImplemented);
    c.put_object_tagging("vb1", "k", None, vec![("cur".into(), "1".into())]).await.unwrap();
    assert_eq!(code(c.delete_object_tagging("vb1", "k", Some("null")).await.err()), ErrorCode::NotImplemented);
    assert_eq!(c.get_object_tagging("vb1", "k", None).await.unwrap().tags, vec![("cur".to_string(), "1".to_string())]);
    r.server.shutdown().await.unwrap();
}
