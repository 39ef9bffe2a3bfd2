//! The suite against the memory oracle itself (it must pass its own rules), and the harness
//! against a second oracle instance.

use std::sync::Arc;

use s3hpc_conformance::{Caps, oracle, run_all};
use s3hpc_core::memory::MemoryStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_passes_conformance() {
    run_all(
        Arc::new(MemoryStore::new()),
        Caps { etag_md5: true, file_and_dir_same_name: true, part_checksums: true, default_checksum: true },
    )
    .await;
}

/// The rename and append cases pass over stores that lack the operations: the oracle must not.
#[tokio::test]
async fn memory_has_rename_and_append() {
    let s: s3hpc_core::DynStore = Arc::new(MemoryStore::new());
    assert!(!s3hpc_conformance::lacks_rename(&s).await);
    assert!(!s3hpc_conformance::lacks_append(&s).await);
    assert!(!s3hpc_conformance::lacks_fs(&s).await);
}

/// Only s3hpc's file-system extension, for a quick run.
#[tokio::test]
async fn memory_fs_attributes() {
    s3hpc_conformance::run_selected(Arc::new(MemoryStore::new()), Caps::default(), |n| n == "fs_attributes").await;
}

#[test]
fn memory_agrees_with_itself() {
    oracle::check(64, Caps::default(), || Arc::new(MemoryStore::new()));
}

/// The suite must be able to fail: the noop store keeps nothing, so nearly every case fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "conformance case(s) failed")]
async fn noop_store_fails_conformance() {
    run_all(Arc::new(s3hpc_core::noop::NoopStore::default()), Caps::default()).await;
}

/// The oracle comparison must be able to fail: the noop store answers reads from a fixed object.
#[test]
#[should_panic(expected = "diverges from the memory oracle")]
fn noop_store_is_caught_by_the_oracle() {
    oracle::check(16, Caps::default(), || Arc::new(s3hpc_core::noop::NoopStore::default()));
}
