//! RenameObject of a prefix on the posix backend, as seen on the file system: one rename(2) of
//! the key directory (same inode, O(1)), records travel (sidecars are moved), symlinks inside
//! the tree move as links and are never followed out of the root, and a writer racing the
//! rename loses nothing.

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

fn plain() -> RenameObjectRequest {
    RenameObjectRequest::default()
}

async fn keys(s: &PosixStore, prefix: &str) -> Vec<String> {
    let req = ListObjectsRequest { prefix: prefix.into(), max_keys: 1000, ..Default::default() };
    s.list_objects("bkt", req).await.unwrap().objects.into_iter().map(|o| o.key).collect()
}

fn files_under(p: &Path) -> usize {
    std::fs::read_dir(p)
        .map_or(0, |rd| rd.flatten().map(|e| if e.path().is_dir() { files_under(&e.path()) } else { 1 }).sum())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_rename_moves_the_directory_inode() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    // 64 MiB: a copy would take far longer than the bound below.
    let big = s.put_object("bkt", "p/src/big", PutObjectRequest::default(), Body::from(vec![3u8; 64 << 20])).await;
    let big = big.unwrap();
    for i in 0..50 {
        s.put_object("bkt", &format!("p/src/d{}/f{i}", i % 5), PutObjectRequest::default(), Body::from("x"))
            .await
            .unwrap();
    }
    let ino = std::fs::metadata(dir.path().join("bkt/p/src")).unwrap().ino();
    let t = Instant::now();
    s.rename_object("bkt", "p/src/", "q/r/dst/", plain()).await.unwrap();
    let took = t.elapsed();
    assert_eq!(std::fs::metadata(dir.path().join("bkt/q/r/dst")).unwrap().ino(), ino, "not the same directory");
    assert!(took.as_millis() < 500, "prefix rename took {took:?}");
    assert!(!dir.path().join("bkt/p").exists(), "the emptied parent of the source must be pruned");
    assert_eq!(keys(&s, "q/r/dst/").await.len(), 51);
    assert!(keys(&s, "p/").await.is_empty());
    let info = s.head_object("bkt", "q/r/dst/big", GetObjectRequest::default()).await.unwrap();
    assert_eq!(info.etag, big.etag, "the record must travel with the file");
    // Replaced: an existing empty directory (no keys); refused: one holding a file.
    std::fs::create_dir_all(dir.path().join("bkt/emptydir")).unwrap();
    s.rename_object("bkt", "q/r/dst/d0/", "emptydir/", plain()).await.unwrap();
    assert_eq!(keys(&s, "emptydir/").await.len(), 10);
    std::fs::write(dir.path().join("bkt/q/r/dst/d1/posix-file"), b"p").unwrap();
    let e = s.rename_object("bkt", "q/r/dst/d2/", "q/r/dst/d1/", plain()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::PrefixNotEmpty);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_rename_moves_sidecar_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let req = PutObjectRequest { tags: vec![("t".into(), "v".into())], ..Default::default() };
    let a = s.put_object("bkt", "src/a", req, Body::from("abc")).await.unwrap();
    let b = s.put_object("bkt", "src/deep/b", PutObjectRequest::default(), Body::from("b")).await.unwrap();
    s.put_object("bkt", "src/", PutObjectRequest::default(), Body::from("")).await.unwrap();
    let meta_dir = dir.path().join("bkt/.s3hpc/meta");
    let before = files_under(&meta_dir);
    s.rename_object("bkt", "src/", "dst/", plain()).await.unwrap();
    assert_eq!(files_under(&meta_dir), before, "sidecars are moved, not copied or lost");
    assert_eq!(s.head_object("bkt", "dst/a", GetObjectRequest::default()).await.unwrap().etag, a.etag);
    assert_eq!(s.head_object("bkt", "dst/deep/b", GetObjectRequest::default()).await.unwrap().etag, b.etag);
    assert_eq!(
        s.get_object_tagging("bkt", "dst/a", None).await.unwrap().tags,
        vec![("t".to_string(), "v".to_string())]
    );
    assert_eq!(keys(&s, "").await, vec!["dst/", "dst/a", "dst/deep/b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_are_moved_never_followed_out_of_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("victim")).unwrap();
    std::fs::write(outside.path().join("victim/secret"), b"secret").unwrap();
    let s = PosixStore::open(dir.path(), opts()).unwrap();
    s.create_bucket("bkt").await.unwrap();
    let bkt = dir.path().join("bkt");
    s.put_object("bkt", "src/f", PutObjectRequest::default(), Body::from("f")).await.unwrap();
    // A symlinked directory inside the source, leading out of the root.
    std::os::unix::fs::symlink(outside.path().join("victim"), bkt.join("src/out")).unwrap();
    s.rename_object("bkt", "src/", "a/b/dst/", plain()).await.unwrap();
    assert_eq!(std::fs::read_link(bkt.join("a/b/dst/out")).unwrap(), outside.path().join("victim"), "link moved");
    assert_eq!(std::fs::read(outside.path().join("victim/secret")).unwrap(), b"secret", "target untouched");
    let e = s.get_object("bkt", "a/b/dst/out/secret", GetObjectRequest::default()).await.err().unwrap();
    assert!(matches!(e.code, ErrorCode::AccessDenied | ErrorCode::NoSuchKey), "{e}");
    // The moved link is a file system entry, not a key: renaming it as a prefix is refused.
    let e = s.rename_object("bkt", "a/b/dst/out/", "stolen/", plain()).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest, "{e}");
    assert!(outside.path().join("victim/secret").exists());
    // A source reached through a symlink out of the root, and a destination through one.
    std::os::unix::fs::symlink(outside.path(), bkt.join("esc")).unwrap();
    let e = s.rename_object("bkt", "esc/victim/", "got/", plain()).await.unwrap_err();
    assert!(matches!(e.code, ErrorCode::AccessDenied | ErrorCode::NoSuchKey), "{e}");
    assert!(outside.path().join("victim/secret").exists(), "a directory outside the root was moved");
    let e = s.rename_object("bkt", "a/b/dst/", "esc/planted/", plain()).await.unwrap_err();
    assert!(matches!(e.code, ErrorCode::AccessDenied | ErrorCode::InvalidRequest), "{e}");
    assert!(!outside.path().join("planted").exists(), "a directory was moved out of the root");
    assert_eq!(keys(&s, "a/b/dst/").await, vec!["a/b/dst/f"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_racing_the_rename_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(PosixStore::open(dir.path(), opts()).unwrap());
    s.create_bucket("bkt").await.unwrap();
    s.put_object("bkt", "w/first", PutObjectRequest::default(), Body::from("0")).await.unwrap();
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut ok = 0;
            for i in 0..200 {
                let k = format!("w/k{i:03}");
                if s.put_object("bkt", &k, PutObjectRequest::default(), Body::from(Bytes::from("v"))).await.is_ok() {
                    ok += 1;
                }
            }
            ok
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    s.rename_object("bkt", "w/", "moved/", plain()).await.unwrap();
    let ok = writer.await.unwrap();
    assert_eq!(ok, 200, "every PUT succeeds, before the rename (then moved) or after it");
    let n = keys(&s, "w/").await.len() + keys(&s, "moved/").await.len();
    assert_eq!(n, 201, "objects lost or duplicated");
}
