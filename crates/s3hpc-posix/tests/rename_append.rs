//! RenameObject and append on the posix backend, as seen on the file system: a rename is one
//! rename(2) of the same inode (its record travels with it; a sidecar record moves), an append
//! writes into the existing file, and two stores on one root (two gateways) take turns.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

fn opts() -> PosixOptions {
    PosixOptions { durability: Durability::None, ..Default::default() }
}

fn files_under(p: &Path) -> usize {
    std::fs::read_dir(p)
        .map_or(0, |rd| rd.flatten().map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_moves_the_inode_with_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    // 64 MiB: a copy would take far longer than the bound below.
    let data = Bytes::from(vec![7u8; 64 << 20]);
    let req = PutObjectRequest { tags: vec![("t".into(), "v".into())], ..Default::default() };
    let put = s.put_object("bkt", "in/big", req, Body::from(data)).await.unwrap();
    let ino = std::fs::metadata(dir.path().join("bkt/in/big")).unwrap().ino();
    let t = Instant::now();
    s.rename_object("bkt", "in/big", "out/deep/big", RenameObjectRequest::default()).await.unwrap();
    let took = t.elapsed();
    let md = std::fs::metadata(dir.path().join("bkt/out/deep/big")).unwrap();
    assert_eq!(md.ino(), ino, "rename must move the same file");
    assert!(took.as_millis() < 500, "rename of 64 MiB took {took:?}");
    assert!(!dir.path().join("bkt/in").exists(), "empty source directory left behind");
    let info = s.head_object("bkt", "out/deep/big", GetObjectRequest::default()).await.unwrap();
    assert_eq!(info.etag, put.etag, "the record (not a derived ETag) must come along");
    assert_eq!(
        s.get_object_tagging("bkt", "out/deep/big", None).await.unwrap().tags,
        vec![("t".to_string(), "v".to_string())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_moves_a_sidecar_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let put = s.put_object("bkt", "a", PutObjectRequest::default(), Body::from("abc")).await.unwrap();
    let meta_dir = dir.path().join("bkt/.s3hpc/meta");
    let before = files_under(&meta_dir);
    s.rename_object("bkt", "a", "z", RenameObjectRequest::default()).await.unwrap();
    assert_eq!(files_under(&meta_dir), before, "the old sidecar must go when the new one is written");
    let info = s.head_object("bkt", "z", GetObjectRequest::default()).await.unwrap();
    assert_eq!(info.etag, put.etag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_to_a_file_written_by_posix_tools() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    std::fs::write(dir.path().join("bkt/plain"), b"from posix").unwrap();
    let out = s.append_object("bkt", "plain", 10, PutObjectRequest::default(), Body::from(" + s3")).await.unwrap();
    assert_eq!(out.etag, checksum::md5_hex(b"from posix + s3"));
    assert_eq!(std::fs::read(dir.path().join("bkt/plain")).unwrap(), b"from posix + s3");
    let info = s.head_object("bkt", "plain", GetObjectRequest::default()).await.unwrap();
    assert_eq!(info.etag, out.etag, "the append writes a record that matches the file");
}

/// Two stores on one root stand for two gateways: their appenders take turns through the
/// cross-process lock (flock), so no record is lost or torn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appenders_of_two_gateways_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    let a: DynStore = Arc::new(PosixStore::open(dir.path(), opts()).unwrap());
    let b: DynStore = Arc::new(PosixStore::open(dir.path(), opts()).unwrap());
    a.create_bucket("bkt").await.unwrap();
    a.put_object("bkt", "log", PutObjectRequest::default(), Body::from("")).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..6u32 {
        let s = if w % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            for n in 0..15u32 {
                let rec = Bytes::from(format!("[{w}.{n:02}]"));
                loop {
                    let size = s.head_object("bkt", "log", GetObjectRequest::default()).await.unwrap().size;
                    match s
                        .append_object("bkt", "log", size, PutObjectRequest::default(), Body::from(rec.clone()))
                        .await
                    {
                        Ok(_) => break,
                        Err(e) if e.code == ErrorCode::InvalidWriteOffset => continue,
                        Err(e) => panic!("append: {e}"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let text = String::from_utf8(std::fs::read(dir.path().join("bkt/log")).unwrap()).unwrap();
    let mut got: Vec<&str> = text.split_inclusive(']').collect();
    got.sort_unstable();
    let mut want: Vec<String> = (0..6).flat_map(|w| (0..15).map(move |n| format!("[{w}.{n:02}]"))).collect();
    want.sort_unstable();
    assert_eq!(got, want);
    let info = a.head_object("bkt", "log", GetObjectRequest::default()).await.unwrap();
    assert_eq!(info.etag, checksum::md5_hex(text.as_bytes()));
}
