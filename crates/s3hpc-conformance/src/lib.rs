//! The Store conformance suite.
//!
//! One set of S3-semantics checks, run against every implementation of the seam: the memory
//! oracle, the posix backend, and (through real servers) the HTTP client and the binary-protocol
//! client. Each case makes its own uniquely named bucket and removes it again, so the suite can
//! run against a shared or remote store.
//!
//! ```ignore
//! #[tokio::test(flavor = "multi_thread")]
//! async fn conformance() {
//!     s3hpc_conformance::run_all(std::sync::Arc::new(MyStore::new()), Caps::default()).await;
//! }
//! ```
//!
//! [`oracle`] holds the property-test harness that replays random operation sequences on a store
//! and on the memory oracle and compares every answer.
#![forbid(unsafe_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use s3hpc_core::checksum::{checksum_of, md5_hex};
use s3hpc_core::*;

pub mod access;
pub mod oracle;

/// What the store under test is expected to do where implementations may legitimately differ.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// ETags of single PUTs are the hex MD5 of the body (false in the fast ETag mode).
    pub etag_md5: bool,
    /// The store keeps keys `a` and `a/b` at once (S3 and memory do; a POSIX tree cannot).
    pub file_and_dir_same_name: bool,
    /// HEAD answers the part checksums of COMPOSITE multipart objects (the stores do; the HTTP
    /// and binary clients do not carry them).
    pub part_checksums: bool,
    /// The store computes the `default_checksum` of UploadPart and CopyObject requests (the
    /// stores do; the binary protocol does not carry it; the gateway applies its own default).
    pub default_checksum: bool,
}

impl Default for Caps {
    fn default() -> Self {
        Caps { etag_md5: true, file_and_dir_same_name: false, part_checksums: false, default_checksum: false }
    }
}

type CaseFn = fn(DynStore, Caps, String) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        /// Every case, by name.
        pub const CASES: &[(&str, CaseFn)] = &[
            $( (stringify!($name), |s, c, b| Box::pin($name(s, c, b))), )*
        ];
    };
}

cases!(
    buckets,
    put_get_head_metadata,
    overwrite_replaces,
    ranges,
    read_conditions,
    write_conditions,
    delete_is_idempotent,
    missing_bucket_and_key,
    digests_and_lengths,
    failed_body_publishes_nothing,
    checksums_stored,
    default_checksum,
    streamed_large_object,
    copy_object,
    copy_website_redirect,
    object_tagging,
    bucket_tagging,
    listing_order_and_delimiters,
    listing_pagination,
    special_keys,
    key_length,
    directory_objects,
    multipart_happy_path,
    multipart_errors,
    multipart_complete_retries,
    multipart_listing,
    multipart_checksum_types,
    upload_part_copy,
    rename_object,
    rename_conditions,
    rename_client_token,
    rename_prefix,
    append_object,
    append_concurrent,
    versioning_basics,
    versioning_suspended,
    versions_listing,
    versions_part_copy,
    version_tagging,
    object_lock,
    fs_attributes,
);

/// Run every case; panic with the list of failures.
pub async fn run_all(store: DynStore, caps: Caps) {
    run_selected(store, caps, |_| true).await
}

/// Run the cases whose name passes `filter`.
pub async fn run_selected(store: DynStore, caps: Caps, filter: impl Fn(&str) -> bool) {
    let mut failures = Vec::new();
    let tag = unique_tag();
    for (i, (name, case)) in CASES.iter().enumerate() {
        if !filter(name) {
            continue;
        }
        let bucket = format!("conf-{tag}-{i}");
        let res = tokio::time::timeout(Duration::from_secs(120), case(store.clone(), caps, bucket.clone())).await;
        let res = match res {
            Ok(r) => r,
            Err(_) => Err("timed out after 120 s".to_string()),
        };
        cleanup(&store, &bucket).await;
        if let Err(e) = res {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{} conformance case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

fn unique_tag() -> String {
    use rand::Rng;
    let n: u32 = rand::rng().random();
    format!("{n:08x}")
}

/// Remove everything a case left behind (objects, uploads, the bucket); errors are ignored.
pub async fn cleanup(store: &DynStore, bucket: &str) {
    if store.head_bucket(bucket).await.is_err() {
        return;
    }
    for _ in 0..100 {
        let Ok(page) = store.list_objects(bucket, ListObjectsRequest { max_keys: 1000, ..Default::default() }).await
        else {
            break;
        };
        for o in &page.objects {
            let _ = store.delete_object(bucket, &o.key).await;
        }
        if !page.is_truncated || page.objects.is_empty() {
            break;
        }
    }
    // Versions and delete markers (buckets that were versioned).
    for _ in 0..100 {
        let req = ListVersionsRequest { max_keys: 1000, ..Default::default() };
        let Ok(page) = store.list_object_versions(bucket, req).await else { break };
        for v in &page.versions {
            let _ = store.delete_object_version(bucket, &v.key, Some(&v.version_id)).await;
        }
        if !page.is_truncated || page.versions.is_empty() {
            break;
        }
    }
    if let Ok(ups) = store.list_multipart_uploads(bucket, ListUploadsRequest::default()).await {
        for u in ups.uploads {
            let _ = store.abort_multipart_upload(bucket, &u.key, &u.upload_id).await;
        }
    }
    let _ = store.delete_bucket(bucket).await;
}

// ---- helpers ----

type R = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!("{} (line {})", format!($($fmt)+), line!()));
        }
    };
}

macro_rules! ensure_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err(format!("{} != {}: {:?} vs {:?} (line {})", stringify!($a), stringify!($b), a, b, line!()));
        }
    }};
}

mod lock;
use lock::object_lock;

fn ok<T>(r: Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: unexpected error {e}"))
}

fn expect_code<T: std::fmt::Debug>(r: Result<T>, code: ErrorCode, what: &str) -> R {
    match r {
        Ok(v) => Err(format!("{what}: expected {code}, got Ok({v:?})")),
        Err(e) if e.code == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got {e}")),
    }
}

fn expect_one_of<T: std::fmt::Debug>(r: Result<T>, codes: &[ErrorCode], what: &str) -> R {
    match r {
        Ok(v) => Err(format!("{what}: expected one of {codes:?}, got Ok({v:?})")),
        Err(e) if codes.contains(&e.code) => Ok(()),
        Err(e) => Err(format!("{what}: expected one of {codes:?}, got {e}")),
    }
}

/// Deterministic test content.
pub fn pattern(seed: u64, len: usize) -> Bytes {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

async fn put(s: &DynStore, b: &str, k: &str, data: impl Into<Bytes>) -> Result<PutObjectOutput, String> {
    ok(s.put_object(b, k, PutObjectRequest::default(), Body::from(data.into())).await, &format!("put {k}"))
}

async fn get(s: &DynStore, b: &str, k: &str) -> Result<(ObjectInfo, Bytes), String> {
    let out = ok(s.get_object(b, k, GetObjectRequest::default()).await, &format!("get {k}"))?;
    let data = out.body.collect().await.map_err(|e| format!("get {k} body: {e}"))?;
    Ok((out.info, data))
}

async fn get_range(s: &DynStore, b: &str, k: &str, r: ByteRange) -> Result<(Option<(u64, u64)>, Bytes)> {
    let out = s.get_object(b, k, GetObjectRequest { range: Some(r), ..Default::default() }).await?;
    let range = out.range;
    Ok((range, out.body.collect().await?))
}

async fn list_all(
    s: &DynStore,
    b: &str,
    prefix: &str,
    delim: Option<&str>,
    page: usize,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut keys = Vec::new();
    let mut prefixes = Vec::new();
    let mut start_after = None;
    for _ in 0..10_000 {
        let req = ListObjectsRequest {
            prefix: prefix.to_string(),
            delimiter: delim.map(str::to_string),
            start_after: start_after.clone(),
            max_keys: page,
        };
        let p = ok(s.list_objects(b, req).await, "list")?;
        ensure!(p.objects.len() + p.common_prefixes.len() <= page, "page holds more than max_keys");
        keys.extend(p.objects.iter().map(|o| o.key.clone()));
        prefixes.extend(p.common_prefixes.iter().cloned());
        if !p.is_truncated {
            return Ok((keys, prefixes));
        }
        let next = p.next_marker.clone().ok_or("truncated page without next marker")?;
        ensure!(Some(&next) != start_after.as_ref(), "listing does not advance");
        start_after = Some(next);
    }
    Err("listing never ended".into())
}

mod prefix;
use prefix::rename_prefix;
mod fs;
use fs::fs_attributes;
pub use fs::lacks_fs;
mod version_tags;
use version_tags::version_tagging;

fn stream_body(chunks: Vec<std::io::Result<Bytes>>) -> Body {
    Body::Stream(Box::pin(futures::stream::iter(chunks)))
}

const MIB: usize = 1024 * 1024;

// ---- the cases, one module per family ----

mod append;
mod copy;
mod listing;
mod multipart;
mod objects;
mod rename;
mod tagging;
mod versioning;
pub use append::lacks_append;
pub use rename::lacks_rename;
use {append::*, copy::*, listing::*, multipart::*, objects::*, rename::*, tagging::*, versioning::*};
