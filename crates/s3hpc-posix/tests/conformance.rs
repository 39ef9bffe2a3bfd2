//! The shared conformance suite and the memory-oracle property harness against PosixStore,
//! in xattr mode and in (forced) sidecar mode, with MD5 and fast ETags.

use std::sync::Arc;

use s3hpc_conformance::{Caps, oracle, run_all};
use s3hpc_core::EtagMode;
use s3hpc_posix::{Durability, IoMode, MetaMode, PosixOptions, PosixStore};

fn opts(etag_mode: EtagMode) -> PosixOptions {
    PosixOptions { durability: Durability::None, etag_mode, ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_xattr_md5() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), opts(EtagMode::Md5)).unwrap();
    assert_eq!(s.meta_mode(), MetaMode::Xattr, "this test needs a file system with user xattrs");
    run_all(
        Arc::new(s),
        Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_sidecar_md5() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), opts(EtagMode::Md5)).unwrap();
    assert_eq!(s.meta_mode(), MetaMode::Sidecar);
    run_all(
        Arc::new(s),
        Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_xattr_fast_strict() {
    let dir = tempfile::tempdir().unwrap();
    let o = PosixOptions { durability: Durability::Strict, etag_mode: EtagMode::Fast, ..Default::default() };
    let s = PosixStore::open(dir.path(), o).unwrap();
    run_all(
        Arc::new(s),
        Caps { etag_md5: false, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

/// Every call in place (`IoMode::InPlace`: `block_in_place` on this runtime).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_xattr_fast_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), PosixOptions { io: IoMode::InPlace, ..opts(EtagMode::Fast) }).unwrap();
    run_all(
        Arc::new(s),
        Caps { etag_md5: false, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

/// The embedded callers' mode: the same suite with every call run on the calling task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_xattr_md5_inline() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), PosixOptions { io: IoMode::Inline, ..opts(EtagMode::Md5) }).unwrap();
    run_all(
        Arc::new(s),
        Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn conformance_sidecar_fast_inline_current_thread() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), PosixOptions { io: IoMode::Inline, ..opts(EtagMode::Fast) })
        .unwrap();
    run_all(
        Arc::new(s),
        Caps { etag_md5: false, file_and_dir_same_name: false, part_checksums: true, default_checksum: true },
    )
    .await;
}

#[test]
fn oracle_xattr_inline() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), PosixOptions { io: IoMode::Inline, ..opts(EtagMode::Md5) }).unwrap();
    oracle::check(32, Caps::default(), move || Arc::new(s.clone()));
}

#[test]
fn oracle_xattr() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open(dir.path(), opts(EtagMode::Md5)).unwrap();
    oracle::check(48, Caps::default(), move || Arc::new(s.clone()));
}

#[test]
fn oracle_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let s = PosixStore::open_with_sidecars(dir.path(), opts(EtagMode::Md5)).unwrap();
    oracle::check(32, Caps::default(), move || Arc::new(s.clone()));
}

/// The rename and append cases pass over stores that lack the operations: posix must not.
#[tokio::test]
async fn posix_has_rename_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let s: s3hpc_core::DynStore = Arc::new(PosixStore::open(dir.path(), opts(EtagMode::Md5)).unwrap());
    assert!(!s3hpc_conformance::lacks_rename(&s).await);
    assert!(!s3hpc_conformance::lacks_append(&s).await);
}
