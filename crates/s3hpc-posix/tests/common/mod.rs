//! Helpers shared by the posix store's integration test files.
#![allow(dead_code)] // each test file uses some of them

use std::path::{Path, PathBuf};

use bytes::Bytes;
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

pub fn opts() -> PosixOptions {
    PosixOptions { durability: Durability::None, ..Default::default() }
}

pub async fn setup() -> (tempfile::TempDir, PathBuf, PosixStore) {
    setup_with(opts()).await
}

pub async fn setup_with(o: PosixOptions) -> (tempfile::TempDir, PathBuf, PosixStore) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = PosixStore::open(&root, o).unwrap();
    s.create_bucket("bkt").await.unwrap();
    (dir, root, s)
}

pub async fn put(s: &PosixStore, k: &str, data: impl Into<Bytes>) -> Result<PutObjectOutput> {
    s.put_object("bkt", k, PutObjectRequest::default(), Body::from(data.into())).await
}

pub async fn get(s: &PosixStore, k: &str) -> Result<(ObjectInfo, Bytes)> {
    let o = s.get_object("bkt", k, GetObjectRequest::default()).await?;
    Ok((o.info, o.body.collect().await?))
}

pub async fn keys(s: &PosixStore, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sa = None;
    loop {
        let p = s
            .list_objects(
                "bkt",
                ListObjectsRequest {
                    prefix: prefix.into(),
                    start_after: sa.clone(),
                    max_keys: 1000,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        out.extend(p.objects.into_iter().map(|o| o.key));
        if !p.is_truncated {
            return out;
        }
        sa = p.next_marker;
    }
}

pub fn tree(p: &Path) -> Vec<String> {
    let mut v = Vec::new();
    fn rec(base: &Path, p: &Path, v: &mut Vec<String>) {
        for e in std::fs::read_dir(p).unwrap().flatten() {
            v.push(e.path().strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if e.file_type().unwrap().is_dir() {
                rec(base, &e.path(), v);
            }
        }
    }
    rec(p, p, &mut v);
    v.sort();
    v
}
