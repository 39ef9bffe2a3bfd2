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

// ---- cases ----

async fn buckets(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    // An HTTP gateway in us-east-1 answers the owner's second create 200, as S3 there does.
    if let Err(e) = s.create_bucket(&b).await {
        expect_one_of(
            Err::<(), _>(e),
            &[ErrorCode::BucketAlreadyOwnedByYou, ErrorCode::BucketAlreadyExists],
            "create twice",
        )?;
    }
    for bad in ["ab", "UPPER-case", "under_score", "-leading", "a..b", "192.168.0.1"] {
        expect_code(s.create_bucket(bad).await, ErrorCode::InvalidBucketName, bad)?;
    }
    ok(s.head_bucket(&b).await, "head")?;
    let list = ok(s.list_buckets().await, "list buckets")?;
    ensure!(list.iter().any(|x| x.name == b), "bucket not listed");
    ensure!(list.windows(2).all(|w| w[0].name < w[1].name), "buckets not sorted");
    let created = list.iter().find(|x| x.name == b).unwrap().created;
    ensure!(created <= SystemTime::now() + Duration::from_secs(5), "creation date in the future");
    put(&s, &b, "k", "v").await?;
    expect_code(s.delete_bucket(&b).await, ErrorCode::BucketNotEmpty, "delete non-empty")?;
    ok(s.delete_object(&b, "k").await, "delete object")?;
    ok(s.delete_bucket(&b).await, "delete bucket")?;
    expect_code(s.head_bucket(&b).await, ErrorCode::NoSuchBucket, "head deleted")?;
    expect_code(s.delete_bucket(&b).await, ErrorCode::NoSuchBucket, "delete deleted")?;
    Ok(())
}

async fn put_get_head_metadata(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(1, 10_000);
    let mut meta = ObjectMeta {
        content_type: Some("text/plain; charset=utf-8".into()),
        content_encoding: Some("identity".into()),
        content_disposition: Some("attachment; filename=\"x.txt\"".into()),
        content_language: Some("en".into()),
        cache_control: Some("no-cache".into()),
        expires: Some("Thu, 01 Dec 2033 16:00:00 GMT".into()),
        website_redirect_location: Some("/other/page.html".into()),
        ..Default::default()
    };
    meta.user.insert("color".into(), "blue".into());
    meta.user.insert("two-words".into(), "hello world".into());
    let req = PutObjectRequest { meta: meta.clone(), content_length: Some(data.len() as u64), ..Default::default() };
    let out = ok(s.put_object(&b, "obj", req, Body::from(data.clone())).await, "put")?;
    ensure_eq!(out.size, data.len() as u64);
    if c.etag_md5 {
        ensure_eq!(out.etag, md5_hex(&data));
    } else {
        ensure!(out.etag.contains('-'), "fast ETag {} looks like an MD5", out.etag);
    }
    let (info, got) = get(&s, &b, "obj").await?;
    ensure!(got == data, "body differs");
    ensure_eq!(info.etag, out.etag);
    ensure_eq!(info.size, data.len() as u64);
    ensure_eq!(info.meta, meta);
    let head = ok(s.head_object(&b, "obj", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(head.etag, out.etag);
    ensure_eq!(head.meta, meta);
    ensure_eq!(head.size, info.size);
    let age = SystemTime::now().duration_since(head.last_modified).unwrap_or_default();
    ensure!(age < Duration::from_secs(300), "last_modified is {age:?} old");
    // Empty objects are objects.
    let e = put(&s, &b, "empty", Bytes::new()).await?;
    ensure_eq!(e.size, 0);
    if c.etag_md5 {
        ensure_eq!(e.etag, "d41d8cd98f00b204e9800998ecf8427e");
    }
    let (einfo, edata) = get(&s, &b, "empty").await?;
    ensure!(edata.is_empty() && einfo.size == 0, "empty object not empty");
    Ok(())
}

async fn overwrite_replaces(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut m1 = ObjectMeta::default();
    m1.user.insert("v".into(), "1".into());
    ok(
        s.put_object(&b, "k", PutObjectRequest { meta: m1, ..Default::default() }, Body::from(pattern(2, 5000))).await,
        "put 1",
    )?;
    put(&s, &b, "k", pattern(3, 100)).await?;
    let (info, data) = get(&s, &b, "k").await?;
    ensure!(data == pattern(3, 100), "old content survived overwrite");
    ensure!(info.meta.user.is_empty(), "old metadata survived overwrite: {:?}", info.meta.user);
    Ok(())
}

async fn ranges(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(4, 1000);
    put(&s, &b, "r", data.clone()).await?;
    let cases = [
        (ByteRange::FromTo(0, 0), 0, 1),
        (ByteRange::FromTo(10, 19), 10, 10),
        (ByteRange::FromTo(990, 5000), 990, 10),
        (ByteRange::From(900), 900, 100),
        (ByteRange::Suffix(10), 990, 10),
        (ByteRange::Suffix(5000), 0, 1000),
    ];
    for (r, off, len) in cases {
        let (range, got) = ok(get_range(&s, &b, "r", r).await, &format!("range {r:?}"))?;
        ensure_eq!(range, Some((off as u64, len as u64)));
        ensure!(got == data.slice(off..off + len), "range {r:?} content differs");
    }
    expect_code(get_range(&s, &b, "r", ByteRange::From(1000)).await, ErrorCode::InvalidRange, "start at size")?;
    expect_code(get_range(&s, &b, "r", ByteRange::FromTo(2000, 3000)).await, ErrorCode::InvalidRange, "beyond")?;
    put(&s, &b, "empty", Bytes::new()).await?;
    expect_code(get_range(&s, &b, "empty", ByteRange::FromTo(0, 0)).await, ErrorCode::InvalidRange, "empty object")?;
    let h = s.head_object(&b, "r", GetObjectRequest { range: Some(ByteRange::From(5000)), ..Default::default() }).await;
    expect_code(h, ErrorCode::InvalidRange, "head with bad range")?;
    Ok(())
}

async fn read_conditions(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let out = put(&s, &b, "c", "conditional").await?;
    let etag = out.etag.clone();
    let cond = |c: Conditions| GetObjectRequest { conditions: c, ..Default::default() };
    let past = SystemTime::now() - Duration::from_secs(3600);
    let future = SystemTime::now() + Duration::from_secs(3600);
    ok(
        s.get_object(&b, "c", cond(Conditions { if_match: Some(format!("\"{etag}\"")), ..Default::default() })).await,
        "if-match quoted",
    )?;
    ok(
        s.head_object(&b, "c", cond(Conditions { if_match: Some("*".into()), ..Default::default() })).await,
        "if-match *",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_match: Some("\"0000\"".into()), ..Default::default() })).await,
        ErrorCode::PreconditionFailed,
        "if-match other",
    )?;
    expect_code(
        s.head_object(&b, "c", cond(Conditions { if_none_match: Some(etag.clone()), ..Default::default() })).await,
        ErrorCode::NotModified,
        "if-none-match same",
    )?;
    ok(
        s.get_object(&b, "c", cond(Conditions { if_none_match: Some("\"zzz\"".into()), ..Default::default() })).await,
        "if-none-match other",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_modified_since: Some(future), ..Default::default() })).await,
        ErrorCode::NotModified,
        "if-modified-since future",
    )?;
    ok(
        s.get_object(&b, "c", cond(Conditions { if_modified_since: Some(past), ..Default::default() })).await,
        "if-modified-since past",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_unmodified_since: Some(past), ..Default::default() })).await,
        ErrorCode::PreconditionFailed,
        "if-unmodified-since past",
    )?;
    // If-Match wins over If-Unmodified-Since (RFC 7232 and S3).
    ok(
        s.get_object(
            &b,
            "c",
            cond(Conditions { if_match: Some(etag.clone()), if_unmodified_since: Some(past), ..Default::default() }),
        )
        .await,
        "if-match + if-unmodified-since",
    )?;
    Ok(())
}

async fn write_conditions(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let create_only = || PutObjectRequest {
        conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
        ..Default::default()
    };
    ok(s.put_object(&b, "w", create_only(), Body::from("first")).await, "create-only on absent key")?;
    expect_code(
        s.put_object(&b, "w", create_only(), Body::from("second")).await,
        ErrorCode::PreconditionFailed,
        "create-only on existing key",
    )?;
    let (_, data) = get(&s, &b, "w").await?;
    ensure!(data == "first", "failed conditional put changed the object");
    let etag = ok(s.head_object(&b, "w", GetObjectRequest::default()).await, "head")?.etag;
    let if_match = |e: &str| PutObjectRequest {
        conditions: Conditions { if_match: Some(e.to_string()), ..Default::default() },
        ..Default::default()
    };
    ok(s.put_object(&b, "w", if_match(&etag), Body::from("third")).await, "if-match current")?;
    expect_code(
        s.put_object(&b, "w", if_match(&etag), Body::from("fourth")).await,
        ErrorCode::PreconditionFailed,
        "if-match stale",
    )?;
    expect_one_of(
        s.put_object(&b, "absent", if_match(&etag), Body::from("x")).await,
        &[ErrorCode::NoSuchKey, ErrorCode::PreconditionFailed],
        "if-match absent",
    )?;
    let (_, data) = get(&s, &b, "w").await?;
    ensure!(data == "third", "content after conditional puts");
    Ok(())
}

async fn delete_is_idempotent(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "d", "x").await?;
    ok(s.delete_object(&b, "d").await, "delete")?;
    expect_code(s.get_object(&b, "d", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "get deleted")?;
    ok(s.delete_object(&b, "d").await, "delete again")?;
    ok(s.delete_object(&b, "never/existed").await, "delete never existed")?;
    Ok(())
}

async fn missing_bucket_and_key(s: DynStore, _c: Caps, b: String) -> R {
    let nb = format!("{b}-missing");
    expect_code(
        s.get_object(&nb, "k", GetObjectRequest::default()).await,
        ErrorCode::NoSuchBucket,
        "get in missing bucket",
    )?;
    expect_code(
        s.put_object(&nb, "k", PutObjectRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchBucket,
        "put in missing bucket",
    )?;
    expect_code(
        s.list_objects(&nb, ListObjectsRequest { max_keys: 10, ..Default::default() }).await,
        ErrorCode::NoSuchBucket,
        "list missing bucket",
    )?;
    ok(s.create_bucket(&b).await, "create")?;
    expect_code(s.get_object(&b, "nope", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "get missing key")?;
    expect_code(
        s.head_object(&b, "nope", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "head missing key",
    )?;
    expect_code(s.get_object_tagging(&b, "nope", None).await, ErrorCode::NoSuchKey, "tagging missing key")?;
    Ok(())
}

async fn digests_and_lengths(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(5, 4096);
    let md5: [u8; 16] = {
        let h = md5_hex(&data);
        let v: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap()).collect();
        v.try_into().unwrap()
    };
    let good = PutObjectRequest { content_md5: Some(md5), ..Default::default() };
    ok(s.put_object(&b, "md5", good, Body::from(data.clone())).await, "good Content-MD5")?;
    let mut bad_md5 = md5;
    bad_md5[0] ^= 1;
    let bad = PutObjectRequest { content_md5: Some(bad_md5), ..Default::default() };
    expect_code(
        s.put_object(&b, "md5-bad", bad, Body::from(data.clone())).await,
        ErrorCode::BadDigest,
        "bad Content-MD5",
    )?;
    expect_code(
        s.head_object(&b, "md5-bad", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after BadDigest",
    )?;
    let short = PutObjectRequest { content_length: Some(5000), ..Default::default() };
    expect_code(
        s.put_object(&b, "short", short, Body::from(data.clone())).await,
        ErrorCode::IncompleteBody,
        "short body",
    )?;
    expect_code(
        s.head_object(&b, "short", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after short body",
    )?;
    // A bad digest on overwrite keeps the old object.
    let bad = PutObjectRequest { content_md5: Some(bad_md5), ..Default::default() };
    expect_code(
        s.put_object(&b, "md5", bad, Body::from(pattern(6, 10))).await,
        ErrorCode::BadDigest,
        "bad Content-MD5 overwrite",
    )?;
    let (_, got) = get(&s, &b, "md5").await?;
    ensure!(got == data, "failed overwrite damaged the object");
    Ok(())
}

async fn failed_body_publishes_nothing(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "keep", "old").await?;
    for key in ["keep", "new"] {
        let body = stream_body(vec![
            Ok(pattern(7, 100_000)),
            Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "client went away")),
        ]);
        let r = s.put_object(&b, key, PutObjectRequest::default(), body).await;
        ensure!(r.is_err(), "put with failing body succeeded");
    }
    let (_, got) = get(&s, &b, "keep").await?;
    ensure!(got == "old", "failed overwrite changed the object");
    expect_code(
        s.head_object(&b, "new", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "partial object visible",
    )?;
    let (keys, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(keys, vec!["keep".to_string()]);
    Ok(())
}

/// S3's default checksum: the parts of an upload created without an algorithm get the
/// `default_checksum` (CRC64NVME), and the complete the FULL_OBJECT CRC64NVME of the object,
/// combined from them; a copy of an object whose checksum does not carry over gets it too.
async fn default_checksum(s: DynStore, c: Caps, b: String) -> R {
    if !c.default_checksum {
        return Ok(());
    }
    use ChecksumAlgorithm as A;
    ok(s.create_bucket(&b).await, "create")?;
    let (p1, p2) = (pattern(31, 5 * MIB + 3), pattern(32, 1000));
    let whole = [&p1[..], &p2[..]].concat();
    let id = ok(s.create_multipart_upload(&b, "mp", CreateMultipartRequest::default()).await, "create upload")?;
    let mut parts = Vec::new();
    for (n, data) in [(1u32, &p1), (2, &p2)] {
        let req = UploadPartRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
        let p = ok(s.upload_part(&b, "mp", &id, n, req, Body::from(data.clone())).await, "part")?;
        ensure_eq!(p.checksum, Some(checksum_of(A::Crc64Nvme, data)));
        parts.push(CompletePart { part_number: n, etag: p.etag, checksum: None });
    }
    // The client's checksum wins over the default.
    let req = UploadPartRequest {
        checksum: Some(ChecksumRequest { algorithm: A::Crc32, expected: None }),
        default_checksum: Some(A::Crc64Nvme),
        ..Default::default()
    };
    let id2 = ok(s.create_multipart_upload(&b, "mp2", CreateMultipartRequest::default()).await, "create upload 2")?;
    let p = ok(s.upload_part(&b, "mp2", &id2, 1, req, Body::from(p2.clone())).await, "part with crc32")?;
    ensure_eq!(p.checksum, Some(checksum_of(A::Crc32, &p2)));
    ok(s.abort_multipart_upload(&b, "mp2", &id2).await, "abort")?;
    let out = ok(s.complete_multipart_upload(&b, "mp", &id, parts, Conditions::default()).await, "complete")?;
    let want = checksum_of(A::Crc64Nvme, &whole);
    ensure_eq!(out.checksum.as_ref(), Some(&want));
    ensure_eq!(want.checksum_type(), ChecksumType::FullObject);
    let head = ok(s.head_object(&b, "mp", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(head.checksum.as_ref(), Some(&want));
    // A copy of the multipart object (its checksum does not carry over) gets the default.
    let req = CopyObjectRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
    let out = ok(s.copy_object(&b, "mp", &b, "copy", req).await, "copy")?;
    ensure_eq!(out.checksum.as_ref(), Some(&want));
    // A copy of an object with a checksum keeps it; one asking for an algorithm gets that one.
    let req = PutObjectRequest {
        checksum: Some(ChecksumRequest { algorithm: A::Sha512, expected: None }),
        ..Default::default()
    };
    ok(s.put_object(&b, "sha", req, Body::from(p2.clone())).await, "put sha512")?;
    let req = CopyObjectRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
    let out = ok(s.copy_object(&b, "sha", &b, "sha-copy", req).await, "copy sha512")?;
    ensure_eq!(out.checksum, Some(checksum_of(A::Sha512, &p2)));
    let req = CopyObjectRequest {
        checksum_algorithm: Some(A::Xxhash3),
        default_checksum: Some(A::Crc64Nvme),
        ..Default::default()
    };
    let out = ok(s.copy_object(&b, "sha", &b, "xx-copy", req).await, "copy xxhash3")?;
    ensure_eq!(out.checksum, Some(checksum_of(A::Xxhash3, &p2)));
    Ok(())
}

async fn checksums_stored(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(8, 70_000);
    for alg in ChecksumAlgorithm::ALL {
        let want = checksum_of(alg, &data);
        let key = format!("ck-{}", alg.as_str());
        let req = PutObjectRequest {
            checksum: Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(want.value.clone())) }),
            ..Default::default()
        };
        let out = ok(s.put_object(&b, &key, req, Body::from(data.clone())).await, &key)?;
        ensure_eq!(out.checksum.as_ref(), Some(&want));
        let head = ok(s.head_object(&b, &key, GetObjectRequest::default()).await, "head")?;
        ensure_eq!(head.checksum.as_ref(), Some(&want));
        let wrong = checksum_of(alg, b"something else");
        let req = PutObjectRequest {
            checksum: Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(wrong.value)) }),
            ..Default::default()
        };
        expect_code(
            s.put_object(&b, &format!("{key}-bad"), req, Body::from(data.clone())).await,
            ErrorCode::BadDigest,
            "wrong checksum",
        )?;
        expect_code(
            s.head_object(&b, &format!("{key}-bad"), GetObjectRequest::default()).await,
            ErrorCode::NoSuchKey,
            "object after wrong checksum",
        )?;
    }
    // Computed without an expected value (the trailer case resolves before the body ends).
    let cell = Arc::new(std::sync::OnceLock::new());
    let want = checksum_of(ChecksumAlgorithm::Crc32c, &data);
    cell.set(want.value.clone()).unwrap();
    let req = PutObjectRequest {
        checksum: Some(ChecksumRequest {
            algorithm: ChecksumAlgorithm::Crc32c,
            expected: Some(Expected::Deferred(cell)),
        }),
        ..Default::default()
    };
    let out = ok(s.put_object(&b, "deferred", req, Body::from(data.clone())).await, "deferred checksum")?;
    ensure_eq!(out.checksum, Some(want));
    Ok(())
}

async fn streamed_large_object(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(9, 3 * 1024 * 1024 + 17);
    let chunks: Vec<std::io::Result<Bytes>> = data.chunks(65_531).map(|ch| Ok(Bytes::copy_from_slice(ch))).collect();
    let req = PutObjectRequest { content_length: Some(data.len() as u64), ..Default::default() };
    let out = ok(s.put_object(&b, "big", req, stream_body(chunks)).await, "streamed put")?;
    if c.etag_md5 {
        ensure_eq!(out.etag, md5_hex(&data));
    }
    let (_, got) = get(&s, &b, "big").await?;
    ensure!(got == data, "streamed object differs");
    Ok(())
}

async fn copy_object(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(10, 12_345);
    let mut meta = ObjectMeta { content_type: Some("image/png".into()), ..Default::default() };
    meta.user.insert("origin".into(), "src".into());
    let tags = vec![("t".to_string(), "1".to_string())];
    let req = PutObjectRequest { meta: meta.clone(), tags: tags.clone(), ..Default::default() };
    let src = ok(s.put_object(&b, "src", req, Body::from(data.clone())).await, "put src")?;

    let out = ok(s.copy_object(&b, "src", &b, "dst", CopyObjectRequest::default()).await, "copy")?;
    ensure_eq!(out.etag, src.etag);
    let (info, got) = get(&s, &b, "dst").await?;
    ensure!(got == data, "copy content differs");
    ensure_eq!(info.meta, meta);
    ensure_eq!(ok(s.get_object_tagging(&b, "dst", None).await, "tags of copy")?.tags, tags);

    let mut new_meta = ObjectMeta::default();
    new_meta.user.insert("fresh".into(), "yes".into());
    let req = CopyObjectRequest {
        metadata: Directive::Replace(new_meta.clone()),
        tagging: Directive::Replace(vec![]),
        ..Default::default()
    };
    ok(s.copy_object(&b, "src", &b, "dst2", req).await, "copy replace")?;
    let head = ok(s.head_object(&b, "dst2", GetObjectRequest::default()).await, "head dst2")?;
    ensure_eq!(head.meta, new_meta);
    ensure_eq!(head.tag_count, 0);

    expect_code(
        s.copy_object(&b, "src", &b, "src", CopyObjectRequest::default()).await,
        ErrorCode::InvalidRequest,
        "self copy without replace",
    )?;
    let req = CopyObjectRequest { metadata: Directive::Replace(new_meta.clone()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "src", req).await, "self copy with replace")?;
    let (info, got) = get(&s, &b, "src").await?;
    ensure!(got == data, "self copy changed content");
    ensure_eq!(info.meta, new_meta);

    let req = CopyObjectRequest {
        source_conditions: Conditions { if_match: Some("\"nope\"".into()), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.copy_object(&b, "src", &b, "dst3", req).await,
        ErrorCode::PreconditionFailed,
        "copy-source-if-match",
    )?;
    let req = CopyObjectRequest {
        source_conditions: Conditions { if_none_match: Some(src.etag.clone()), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.copy_object(&b, "src", &b, "dst3", req).await,
        ErrorCode::PreconditionFailed,
        "copy-source-if-none-match",
    )?;
    expect_code(
        s.copy_object(&b, "nope", &b, "dst3", CopyObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "copy missing source",
    )?;
    expect_code(
        s.head_object(&b, "dst3", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed copy created object",
    )?;
    Ok(())
}

/// S3 never copies the source's `x-amz-website-redirect-location`: the new object has the
/// request's, with either directive, and a new redirect makes a self copy legal.
async fn copy_website_redirect(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta {
        content_type: Some("text/html".into()),
        website_redirect_location: Some("/src-page.html".into()),
        ..Default::default()
    };
    meta.user.insert("origin".into(), "src".into());
    let req = PutObjectRequest { meta: meta.clone(), ..Default::default() };
    ok(s.put_object(&b, "src", req, Body::from("page")).await, "put src")?;
    let head = |k: &'static str| {
        let (s, b) = (s.clone(), b.clone());
        async move { ok(s.head_object(&b, k, GetObjectRequest::default()).await, &format!("head {k}")) }
    };
    ensure_eq!(head("src").await?.meta, meta);

    // COPY without a redirect: everything but the redirect.
    ok(s.copy_object(&b, "src", &b, "plain", CopyObjectRequest::default()).await, "copy")?;
    let want = ObjectMeta { website_redirect_location: None, ..meta.clone() };
    ensure_eq!(head("plain").await?.meta, want);

    // COPY with one: the source's metadata and the request's redirect.
    let req =
        CopyObjectRequest { website_redirect_location: Some("https://example.com/new".into()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "moved", req).await, "copy with redirect")?;
    let want = ObjectMeta { website_redirect_location: Some("https://example.com/new".into()), ..meta.clone() };
    ensure_eq!(head("moved").await?.meta, want);

    // REPLACE: the new metadata and the request's redirect (or none).
    let fresh = ObjectMeta { content_type: Some("text/plain".into()), ..Default::default() };
    let req = CopyObjectRequest {
        metadata: Directive::Replace(fresh.clone()),
        website_redirect_location: Some("/other.html".into()),
        ..Default::default()
    };
    ok(s.copy_object(&b, "src", &b, "replaced", req).await, "copy replace with redirect")?;
    let want = ObjectMeta { website_redirect_location: Some("/other.html".into()), ..fresh.clone() };
    ensure_eq!(head("replaced").await?.meta, want);
    let req = CopyObjectRequest { metadata: Directive::Replace(fresh.clone()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "replaced2", req).await, "copy replace")?;
    ensure_eq!(head("replaced2").await?.meta, fresh);

    // A self copy that only sets a redirect is legal and keeps the bytes and the rest.
    let req = CopyObjectRequest { website_redirect_location: Some("/self.html".into()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "src", req).await, "self copy with redirect")?;
    let (info, got) = get(&s, &b, "src").await?;
    ensure!(got == "page", "self copy changed content");
    ensure_eq!(info.meta, ObjectMeta { website_redirect_location: Some("/self.html".into()), ..meta.clone() });

    let req = CopyObjectRequest { website_redirect_location: Some("ftp://x".into()), ..Default::default() };
    expect_code(
        s.copy_object(&b, "src", &b, "bad", req).await,
        ErrorCode::InvalidRedirectLocation,
        "copy with a bad redirect",
    )?;
    expect_code(s.head_object(&b, "bad", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "bad copy stored")?;
    Ok(())
}

async fn object_tagging(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let tags = vec![("project".to_string(), "hpc".to_string()), ("tier".to_string(), "".to_string())];
    let req = PutObjectRequest { tags: tags.clone(), ..Default::default() };
    ok(s.put_object(&b, "t", req, Body::from("x")).await, "put with tags")?;
    ensure_eq!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags, tags);
    // S3 reports the tag count on GET (x-amz-tagging-count), not on HEAD.
    let got = ok(s.get_object(&b, "t", GetObjectRequest::default()).await, "get")?;
    ensure_eq!(got.info.tag_count, 2);
    let new = vec![("a".to_string(), "b".to_string())];
    ok(s.put_object_tagging(&b, "t", None, new.clone()).await, "put tags")?;
    ensure_eq!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags, new);
    ok(s.delete_object_tagging(&b, "t", None).await, "delete tags")?;
    ensure!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags.is_empty(), "tags after delete");
    let too_many: Tags = (0..11).map(|i| (format!("k{i}"), "v".to_string())).collect();
    expect_code(s.put_object_tagging(&b, "t", None, too_many).await, ErrorCode::InvalidTag, "11 tags")?;
    let dup = vec![("k".to_string(), "1".to_string()), ("k".to_string(), "2".to_string())];
    expect_code(s.put_object_tagging(&b, "t", None, dup).await, ErrorCode::InvalidTag, "duplicate tag keys")?;
    expect_code(s.put_object_tagging(&b, "none", None, new).await, ErrorCode::NoSuchKey, "tags on missing key")?;
    let (_, data) = get(&s, &b, "t").await?;
    ensure!(data == "x", "tagging changed content");
    Ok(())
}

async fn bucket_tagging(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    expect_code(s.get_bucket_tagging(&b).await, ErrorCode::NoSuchTagSet, "no tags yet")?;
    let tags = vec![("owner".to_string(), "team-a".to_string())];
    ok(s.put_bucket_tagging(&b, tags.clone()).await, "put")?;
    ensure_eq!(ok(s.get_bucket_tagging(&b).await, "get")?, tags);
    ok(s.delete_bucket_tagging(&b).await, "delete")?;
    expect_code(s.get_bucket_tagging(&b).await, ErrorCode::NoSuchTagSet, "after delete")?;
    expect_code(s.get_bucket_tagging(&format!("{b}-x")).await, ErrorCode::NoSuchBucket, "missing bucket")?;
    Ok(())
}

/// A key set with directories, names that sort around '/', and multi-byte UTF-8.
fn listing_keys() -> Vec<&'static str> {
    vec![
        "a-b",
        "a.txt",
        "a/1",
        "a/2/x",
        "a/2/y",
        "a/3",
        "a0",
        "b/c/d/e",
        "photos/2024/jan.jpg",
        "photos/2024/feb.jpg",
        "photos/2025/mar.jpg",
        "photos/index.html",
        "z",
        "zé",
        "zz/é/1",
        "Z-upper",
    ]
}

async fn listing_order_and_delimiters(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let keys = listing_keys();
    for k in &keys {
        put(&s, &b, k, k.as_bytes().to_vec()).await?;
    }
    let mut sorted: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    sorted.sort();
    let (all, cps) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(all, sorted);
    ensure!(cps.is_empty(), "common prefixes without delimiter");

    let (top, cps) = list_all(&s, &b, "", Some("/"), 1000).await?;
    ensure_eq!(top, vec!["Z-upper", "a-b", "a.txt", "a0", "z", "zé"]);
    ensure_eq!(cps, vec!["a/", "b/", "photos/", "zz/"]);

    let (ks, cps) = list_all(&s, &b, "photos/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["photos/index.html"]);
    ensure_eq!(cps, vec!["photos/2024/", "photos/2025/"]);

    let (ks, cps) = list_all(&s, &b, "photos/2024/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["photos/2024/feb.jpg", "photos/2024/jan.jpg"]);
    ensure!(cps.is_empty(), "unexpected prefixes");

    // A prefix that is not a directory boundary.
    let (ks, cps) = list_all(&s, &b, "a", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["a-b", "a.txt", "a0"]);
    ensure_eq!(cps, vec!["a/"]);
    let (ks, _) = list_all(&s, &b, "photos/20", None, 1000).await?;
    ensure_eq!(ks.len(), 3);
    // Delimiter other than '/'.
    let (ks, cps) = list_all(&s, &b, "", Some("."), 1000).await?;
    ensure!(cps.contains(&"a.".to_string()), "'.' delimiter prefixes: {cps:?}");
    ensure!(ks.contains(&"a-b".to_string()) && !ks.contains(&"a.txt".to_string()), "'.' delimiter keys: {ks:?}");
    // start_after in the middle, and after a common prefix.
    let p = ok(
        s.list_objects(&b, ListObjectsRequest { start_after: Some("a/2".into()), max_keys: 3, ..Default::default() })
            .await,
        "start_after",
    )?;
    let got: Vec<&str> = p.objects.iter().map(|o| o.key.as_str()).collect();
    ensure_eq!(got, vec!["a/2/x", "a/2/y", "a/3"]);
    ensure!(p.is_truncated, "should be truncated");
    let p = ok(
        s.list_objects(
            &b,
            ListObjectsRequest {
                start_after: Some("a/".into()),
                delimiter: Some("/".into()),
                max_keys: 1000,
                ..Default::default()
            },
        )
        .await,
        "start_after common prefix",
    )?;
    ensure!(!p.common_prefixes.contains(&"a/".to_string()), "common prefix repeated after marker");
    ensure_eq!(p.objects.first().map(|o| o.key.as_str()), Some("a0"));
    // Summaries carry size and etag.
    let p = ok(
        s.list_objects(&b, ListObjectsRequest { prefix: "a.txt".into(), max_keys: 10, ..Default::default() }).await,
        "list one",
    )?;
    ensure_eq!(p.objects.len(), 1);
    ensure_eq!(p.objects[0].size, 5);
    let head = ok(s.head_object(&b, "a.txt", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(p.objects[0].etag, head.etag);
    // max_keys 0.
    let p = ok(s.list_objects(&b, ListObjectsRequest { max_keys: 0, ..Default::default() }).await, "max_keys 0")?;
    ensure!(p.objects.is_empty() && p.common_prefixes.is_empty(), "max_keys 0 returned entries");
    Ok(())
}

async fn listing_pagination(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut expected = Vec::new();
    for d in 0..5 {
        for f in 0..7 {
            let k = format!("dir{d}/file{f:02}");
            put(&s, &b, &k, Bytes::new()).await?;
            expected.push(k);
        }
    }
    for f in 0..4 {
        let k = format!("top{f}");
        put(&s, &b, &k, Bytes::new()).await?;
        expected.push(k);
    }
    expected.sort();
    for page in [1, 2, 3, 7, 1000] {
        let (ks, _) = list_all(&s, &b, "", None, page).await?;
        ensure!(ks == expected, "page size {page}: {ks:?}");
        let (ks, cps) = list_all(&s, &b, "", Some("/"), page).await?;
        ensure!(ks == vec!["top0", "top1", "top2", "top3"], "page size {page} keys {ks:?}");
        ensure!(cps == vec!["dir0/", "dir1/", "dir2/", "dir3/", "dir4/"], "page size {page} prefixes {cps:?}");
        let (ks, _) = list_all(&s, &b, "dir3/", None, page).await?;
        ensure_eq!(ks.len(), 7);
    }
    // Capped at 1000.
    let p = ok(s.list_objects(&b, ListObjectsRequest { max_keys: 5000, ..Default::default() }).await, "max_keys 5000")?;
    ensure_eq!(p.objects.len(), expected.len());
    Ok(())
}

async fn special_keys(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let keys = [
        "with space",
        "plus+sign",
        "percent%20literal",
        "question?mark",
        "hash#tag",
        "amp&er=sand",
        "colon:semi;",
        "quote'\"",
        "unicode/日本語/ファイル",
        "emoji-🦀",
        "tilde~star*",
        "brackets[]{}",
        "comma,dollar$at@",
        "back\\slash",
        "trailing.dot.",
        "ends-with-space ",
    ];
    for k in keys {
        let (r, _) = (put(&s, &b, k, k.as_bytes().to_vec()).await, ());
        r.map_err(|e| format!("key {k:?}: {e}"))?;
    }
    for k in keys {
        let (_, got) = get(&s, &b, k).await?;
        ensure!(got == k.as_bytes(), "key {k:?} content differs");
    }
    let (listed, _) = list_all(&s, &b, "", None, 1000).await?;
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    ensure_eq!(listed, want);
    Ok(())
}

async fn key_length(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let long = format!("{}/{}", "d".repeat(200), "k".repeat(200));
    put(&s, &b, &long, "ok").await?;
    let too_long =
        format!("{}/{}/{}/{}/{}", "a".repeat(205), "b".repeat(205), "c".repeat(205), "d".repeat(205), "e".repeat(205));
    ensure!(too_long.len() > 1024, "test key too short");
    expect_code(
        s.put_object(&b, &too_long, PutObjectRequest::default(), Body::from("x")).await,
        ErrorCode::KeyTooLongError,
        "1025+ byte key",
    )?;
    Ok(())
}

async fn directory_objects(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta::default();
    meta.user.insert("kind".into(), "folder".into());
    let req = PutObjectRequest { meta: meta.clone(), ..Default::default() };
    ok(s.put_object(&b, "folder/", req, Body::Empty).await, "put folder/")?;
    put(&s, &b, "folder/inner", "in").await?;
    let head = ok(s.head_object(&b, "folder/", GetObjectRequest::default()).await, "head folder/")?;
    ensure_eq!(head.size, 0);
    ensure_eq!(head.meta, meta);
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(ks, vec!["folder/", "folder/inner"]);
    let (ks, cps) = list_all(&s, &b, "folder/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["folder/", "folder/inner"]);
    ensure!(cps.is_empty(), "prefixes {cps:?}");
    ok(s.delete_object(&b, "folder/inner").await, "delete inner")?;
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(ks, vec!["folder/"]);
    ok(s.delete_object(&b, "folder/").await, "delete folder/")?;
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(ks.is_empty(), "left {ks:?}");
    // Implicit directories are not objects.
    put(&s, &b, "p/q/r", "x").await?;
    expect_code(
        s.head_object(&b, "p/", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "implicit dir is no object",
    )?;
    expect_code(
        s.head_object(&b, "p/q", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "implicit dir without slash",
    )?;
    Ok(())
}

const MIB: usize = 1024 * 1024;

async fn multipart_happy_path(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta { content_type: Some("application/x-test".into()), ..Default::default() };
    meta.user.insert("mp".into(), "yes".into());
    let tags = vec![("mp".to_string(), "1".to_string())];
    let req = CreateMultipartRequest {
        meta: meta.clone(),
        tags: tags.clone(),
        checksum_algorithm: None,
        checksum_type: None,
        lock: ObjectLock::default(),
    };
    let id = ok(s.create_multipart_upload(&b, "mp", req).await, "create upload")?;
    let id2 = ok(s.create_multipart_upload(&b, "mp", CreateMultipartRequest::default()).await, "second upload")?;
    ensure!(id != id2 && id.len() >= 16, "upload ids not unique or too short: {id} {id2}");
    let p1 = pattern(11, 5 * MIB);
    let p2 = pattern(12, 5 * MIB + 3);
    let p3 = pattern(13, 1234);
    let i1 = ok(
        s.upload_part(&b, "mp", &id, 1, UploadPartRequest::default(), Body::from(pattern(99, 10))).await,
        "part 1 (to be replaced)",
    )?;
    let i1b =
        ok(s.upload_part(&b, "mp", &id, 1, UploadPartRequest::default(), Body::from(p1.clone())).await, "part 1")?;
    ensure!(i1.etag != i1b.etag, "replaced part has the same ETag");
    let i2 = ok(s.upload_part(&b, "mp", &id, 2, UploadPartRequest::default(), Body::from(p2.clone())).await, "part 2")?;
    let i3 = ok(s.upload_part(&b, "mp", &id, 4, UploadPartRequest::default(), Body::from(p3.clone())).await, "part 4")?;
    if c.etag_md5 {
        ensure_eq!(i1b.etag, md5_hex(&p1));
    }
    // Not visible before completion.
    expect_code(
        s.head_object(&b, "mp", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object before complete",
    )?;
    let lp = ok(s.list_parts(&b, "mp", &id, ListPartsRequest::default()).await, "list parts")?;
    let nums: Vec<u32> = lp.parts.iter().map(|p| p.part_number).collect();
    ensure_eq!(nums, vec![1, 2, 4]);
    ensure_eq!(lp.parts[0].size, p1.len() as u64);
    ensure_eq!(lp.parts[0].etag, i1b.etag);
    let lp = ok(
        s.list_parts(&b, "mp", &id, ListPartsRequest { part_number_marker: Some(1), max_parts: 1 }).await,
        "list parts page",
    )?;
    ensure_eq!(lp.parts.iter().map(|p| p.part_number).collect::<Vec<_>>(), vec![2]);
    ensure!(lp.is_truncated && lp.next_part_number_marker == Some(2), "parts page markers {lp:?}");

    let parts = vec![
        CompletePart { part_number: 1, etag: format!("\"{}\"", i1b.etag), checksum: None },
        CompletePart { part_number: 2, etag: i2.etag.clone(), checksum: None },
        CompletePart { part_number: 4, etag: i3.etag.clone(), checksum: None },
    ];
    let out = ok(s.complete_multipart_upload(&b, "mp", &id, parts, Conditions::default()).await, "complete")?;
    ensure!(out.etag.ends_with("-3"), "multipart etag {}", out.etag);
    if c.etag_md5 {
        let want = s3hpc_core::checksum::multipart_etag([i1b.etag.as_str(), i2.etag.as_str(), i3.etag.as_str()]);
        ensure_eq!(out.etag, want);
    }
    let (info, data) = get(&s, &b, "mp").await?;
    ensure_eq!(data.len(), p1.len() + p2.len() + p3.len());
    ensure!(
        data[..p1.len()] == p1[..]
            && data[p1.len()..p1.len() + p2.len()] == p2[..]
            && data[p1.len() + p2.len()..] == p3[..],
        "assembled content differs"
    );
    ensure_eq!(info.meta, meta);
    ensure_eq!(info.etag, out.etag);
    // S3 reports the part count when a part is asked for (x-amz-mp-parts-count).
    let head1 = ok(
        s.head_object(&b, "mp", GetObjectRequest { part_number: Some(1), ..Default::default() }).await,
        "head part 1",
    )?;
    ensure_eq!(head1.parts_count(), Some(3));
    ensure_eq!(ok(s.get_object_tagging(&b, "mp", None).await, "tags")?.tags, tags);
    let part2 = ok(
        s.get_object(&b, "mp", GetObjectRequest { part_number: Some(2), ..Default::default() }).await,
        "get part 2",
    )?;
    ensure_eq!(part2.range, Some((p1.len() as u64, p2.len() as u64)));
    let body = part2.body.collect().await.map_err(|e| e.to_string())?;
    ensure!(body == p2, "part 2 content differs");
    // The upload is gone, the other one is still there.
    expect_code(
        s.list_parts(&b, "mp", &id, ListPartsRequest::default()).await,
        ErrorCode::NoSuchUpload,
        "parts after complete",
    )?;
    ok(s.abort_multipart_upload(&b, "mp", &id2).await, "abort second")?;
    expect_code(s.abort_multipart_upload(&b, "mp", &id2).await, ErrorCode::NoSuchUpload, "abort twice")?;
    Ok(())
}

/// A retried CompleteMultipartUpload of a completed upload answers the first answer (SDKs retry a
/// complete whose answer they lost); one with another part list is NoSuchUpload; concurrent
/// completes of one upload all get the same answer and the object is made once.
async fn multipart_complete_retries(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let req = CreateMultipartRequest { checksum_algorithm: Some(ChecksumAlgorithm::Crc32), ..Default::default() };
    let id = ok(s.create_multipart_upload(&b, "r", req.clone()).await, "create upload")?;
    let (d1, d2) = (pattern(31, 5 * MIB), pattern(32, 1000));
    let p1 = ok(s.upload_part(&b, "r", &id, 1, UploadPartRequest::default(), Body::from(d1.clone())).await, "part 1")?;
    let p2 = ok(s.upload_part(&b, "r", &id, 2, UploadPartRequest::default(), Body::from(d2.clone())).await, "part 2")?;
    let cp = |n: u32, e: &str| CompletePart { part_number: n, etag: format!("\"{e}\""), checksum: None };
    let parts = vec![cp(1, &p1.etag), cp(2, &p2.etag)];
    let first = ok(s.complete_multipart_upload(&b, "r", &id, parts.clone(), Conditions::default()).await, "complete")?;
    ensure!(first.checksum.is_some(), "no checksum from a CRC32 upload");
    for i in 0..2 {
        let again = ok(
            s.complete_multipart_upload(&b, "r", &id, parts.clone(), Conditions::default()).await,
            &format!("retried complete {i}"),
        )?;
        ensure_eq!((again.etag, again.checksum, again.size), (first.etag.clone(), first.checksum.clone(), first.size));
    }
    // A create-only complete retried: the object it made is not a reason to fail it.
    let again = ok(
        s.complete_multipart_upload(
            &b,
            "r",
            &id,
            parts.clone(),
            Conditions { if_none_match: Some("*".into()), ..Default::default() },
        )
        .await,
        "retried create-only complete",
    )?;
    ensure_eq!(again.etag, first.etag);
    expect_code(
        s.complete_multipart_upload(&b, "r", &id, vec![cp(1, &p1.etag)], Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "retry with another part list",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "other", &id, parts.clone(), Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "retry naming another key",
    )?;
    expect_code(s.abort_multipart_upload(&b, "r", &id).await, ErrorCode::NoSuchUpload, "abort after complete")?;
    expect_code(
        s.list_parts(&b, "r", &id, ListPartsRequest::default()).await,
        ErrorCode::NoSuchUpload,
        "parts after complete",
    )?;
    let (info, data) = get(&s, &b, "r").await?;
    ensure_eq!(info.etag, first.etag);
    ensure!(data.len() == d1.len() + d2.len() && data[..d1.len()] == d1[..] && data[d1.len()..] == d2[..], "content");
    expect_code(
        s.complete_multipart_upload(&b, "other", "0123456789abcdef0123456789abcdef", parts, Conditions::default())
            .await,
        ErrorCode::NoSuchUpload,
        "complete of an upload that never existed",
    )?;

    // Five completes of one upload at once: every one gets the same 200.
    let id = ok(s.create_multipart_upload(&b, "c", req).await, "create upload c")?;
    let p1 =
        ok(s.upload_part(&b, "c", &id, 1, UploadPartRequest::default(), Body::from(d1.clone())).await, "c part 1")?;
    let p2 =
        ok(s.upload_part(&b, "c", &id, 2, UploadPartRequest::default(), Body::from(d2.clone())).await, "c part 2")?;
    let parts = vec![cp(1, &p1.etag), cp(2, &p2.etag)];
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let (s, b, id, parts) = (s.clone(), b.clone(), id.clone(), parts.clone());
            tokio::spawn(async move { s.complete_multipart_upload(&b, "c", &id, parts, Conditions::default()).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        let out = ok(t.await.map_err(|e| Error::internal(e.to_string())).and_then(|r| r), "concurrent complete")?;
        answers.push((out.etag, out.checksum, out.size));
    }
    ensure!(answers.windows(2).all(|w| w[0] == w[1]), "concurrent completes answered differently: {answers:?}");
    let (info, data) = get(&s, &b, "c").await?;
    ensure_eq!(info.etag, answers[0].0);
    ensure_eq!(data.len(), d1.len() + d2.len());
    Ok(())
}

async fn multipart_errors(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let id = ok(s.create_multipart_upload(&b, "e", CreateMultipartRequest::default()).await, "create upload")?;
    let small = ok(
        s.upload_part(&b, "e", &id, 1, UploadPartRequest::default(), Body::from(pattern(14, 100))).await,
        "small part",
    )?;
    let big = ok(
        s.upload_part(&b, "e", &id, 2, UploadPartRequest::default(), Body::from(pattern(15, 5 * MIB))).await,
        "big part",
    )?;
    let cp = |n: u32, e: &str| CompletePart { part_number: n, etag: e.to_string(), checksum: None };
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(2, &big.etag), cp(1, &small.etag)], Conditions::default())
            .await,
        ErrorCode::InvalidPartOrder,
        "descending",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag), cp(1, &small.etag)], Conditions::default())
            .await,
        ErrorCode::InvalidPartOrder,
        "duplicate",
    )?;
    expect_code(
        s.complete_multipart_upload(
            &b,
            "e",
            &id,
            vec![cp(1, "0123456789abcdef0123456789abcdef")],
            Conditions::default(),
        )
        .await,
        ErrorCode::InvalidPart,
        "wrong etag",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(3, &big.etag)], Conditions::default()).await,
        ErrorCode::InvalidPart,
        "missing part",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag), cp(2, &big.etag)], Conditions::default())
            .await,
        ErrorCode::EntityTooSmall,
        "small first part",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![], Conditions::default()).await,
        ErrorCode::MalformedXML,
        "no parts",
    )?;
    expect_code(
        s.head_object(&b, "e", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after failed completes",
    )?;
    expect_code(
        s.upload_part(&b, "e", &id, 0, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::InvalidArgument,
        "part 0",
    )?;
    expect_code(
        s.upload_part(&b, "e", &id, 10_001, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::InvalidArgument,
        "part 10001",
    )?;
    expect_code(
        s.upload_part(&b, "e", "no-such-upload", 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "unknown upload",
    )?;
    expect_code(
        s.upload_part(&b, "other-key", &id, 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "upload id of another key",
    )?;
    // A single part below 5 MiB is fine (it is the last part).
    let out = ok(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag)], Conditions::default()).await,
        "complete with one small part",
    )?;
    ensure!(out.etag.ends_with("-1"), "etag {}", out.etag);
    let (_, data) = get(&s, &b, "e").await?;
    ensure!(data == pattern(14, 100), "content of one-part upload");
    // Aborted uploads take no more parts.
    let id = ok(s.create_multipart_upload(&b, "e2", CreateMultipartRequest::default()).await, "create upload 2")?;
    ok(s.abort_multipart_upload(&b, "e2", &id).await, "abort")?;
    expect_code(
        s.upload_part(&b, "e2", &id, 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "part after abort",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e2", &id, vec![cp(1, &small.etag)], Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "complete after abort",
    )?;
    Ok(())
}

async fn multipart_listing(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut ids = Vec::new();
    for k in ["x/1", "x/2", "y", "y"] {
        ids.push((k, ok(s.create_multipart_upload(&b, k, CreateMultipartRequest::default()).await, "create")?));
    }
    let page = ok(s.list_multipart_uploads(&b, ListUploadsRequest::default()).await, "list uploads")?;
    let keys: Vec<&str> = page.uploads.iter().map(|u| u.key.as_str()).collect();
    ensure_eq!(keys, vec!["x/1", "x/2", "y", "y"]);
    ensure!(
        page.uploads.iter().all(|u| u.checksum_algorithm.is_none() && u.checksum_type.is_none()),
        "uploads without a checksum algorithm list one"
    );
    let page = ok(
        s.list_multipart_uploads(&b, ListUploadsRequest { delimiter: Some("/".into()), ..Default::default() }).await,
        "delimited",
    )?;
    ensure_eq!(page.common_prefixes, vec!["x/"]);
    ensure_eq!(page.uploads.len(), 2);
    let page = ok(
        s.list_multipart_uploads(&b, ListUploadsRequest { prefix: "x/".into(), ..Default::default() }).await,
        "prefixed",
    )?;
    ensure_eq!(page.uploads.len(), 2);
    let first =
        ok(s.list_multipart_uploads(&b, ListUploadsRequest { max_uploads: 2, ..Default::default() }).await, "page 1")?;
    ensure!(first.is_truncated && first.uploads.len() == 2, "page 1 {first:?}");
    let second = ok(
        s.list_multipart_uploads(
            &b,
            ListUploadsRequest {
                key_marker: first.next_key_marker.clone(),
                upload_id_marker: first.next_upload_id_marker.clone(),
                max_uploads: 2,
                ..Default::default()
            },
        )
        .await,
        "page 2",
    )?;
    ensure_eq!(second.uploads.iter().map(|u| u.key.as_str()).collect::<Vec<_>>(), vec!["y", "y"]);
    ensure!(!second.is_truncated, "page 2 truncated");
    // Uploads in progress are not objects.
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(ks.is_empty(), "uploads listed as objects: {ks:?}");
    for (k, id) in ids {
        ok(s.abort_multipart_upload(&b, k, &id).await, "abort")?;
    }
    Ok(())
}

/// Multipart checksum types: FULL_OBJECT uploads (CRC32, CRC32C; CRC64NVME always) end with the
/// CRC of the whole object, COMPOSITE ones with the checksum of the part checksums plus `-N`;
/// ListParts and HEAD report the type; the whole-object checksum a complete expects is verified
/// (`BadDigest`: nothing published, the upload stays); unsupported combinations are refused.
async fn multipart_checksum_types(s: DynStore, c: Caps, b: String) -> R {
    use ChecksumAlgorithm as A;
    use ChecksumType as T;
    ok(s.create_bucket(&b).await, "create")?;
    let (p1, p2) = (pattern(21, 5 * MIB + 1), pattern(22, 777));
    let whole = [&p1[..], &p2[..]].concat();
    let cases = [
        (A::Crc32, Some(T::FullObject), T::FullObject),
        (A::Crc32c, Some(T::FullObject), T::FullObject),
        (A::Crc64Nvme, None, T::FullObject),
        (A::Crc64Nvme, Some(T::FullObject), T::FullObject),
        (A::Crc32c, None, T::Composite),
        (A::Sha256, Some(T::Composite), T::Composite),
        (A::Sha512, None, T::Composite),
        (A::Xxhash128, Some(T::Composite), T::Composite),
    ];
    for (i, (alg, ty, want_type)) in cases.into_iter().enumerate() {
        let key = format!("ck{i}-{}", alg.as_str());
        let what = format!("{} {:?}", alg.as_str(), ty);
        let req = CreateMultipartRequest { checksum_algorithm: Some(alg), checksum_type: ty, ..Default::default() };
        let id = ok(s.create_multipart_upload(&b, &key, req).await, &format!("create {what}"))?;
        // Part 1 carries the client's value, part 2 only gets the upload's algorithm.
        let with_value =
            ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(checksum_of(alg, &p1).value)) };
        let r1 = UploadPartRequest { checksum: Some(with_value), ..Default::default() };
        let i1 = ok(s.upload_part(&b, &key, &id, 1, r1, Body::from(p1.clone())).await, &format!("part 1 {what}"))?;
        let i2 = ok(
            s.upload_part(&b, &key, &id, 2, UploadPartRequest::default(), Body::from(p2.clone())).await,
            &format!("part 2 {what}"),
        )?;
        ensure_eq!(i1.checksum, Some(checksum_of(alg, &p1)));
        ensure_eq!(i2.checksum, Some(checksum_of(alg, &p2)));
        // A part with another algorithm than the upload's: InvalidRequest, the part untouched.
        let other_part = if alg == A::Crc32 { A::Crc32c } else { A::Crc32 };
        let r3 = UploadPartRequest {
            checksum: Some(ChecksumRequest { algorithm: other_part, expected: None }),
            ..Default::default()
        };
        expect_code(
            s.upload_part(&b, &key, &id, 2, r3, Body::from(p2.clone())).await,
            ErrorCode::InvalidRequest,
            &format!("{what}: part with {}", other_part.as_str()),
        )?;
        let lp = ok(s.list_parts(&b, &key, &id, ListPartsRequest::default()).await, "list parts")?;
        ensure_eq!((lp.checksum_algorithm, lp.checksum_type), (Some(alg), Some(want_type)));
        // ListMultipartUploads names the upload's algorithm and type too.
        let ups = ok(
            s.list_multipart_uploads(&b, ListUploadsRequest { prefix: key.clone(), ..Default::default() }).await,
            "list uploads",
        )?;
        let listed: Vec<_> =
            ups.uploads.iter().map(|u| (u.upload_id.as_str(), u.checksum_algorithm, u.checksum_type)).collect();
        ensure_eq!(listed, vec![(id.as_str(), Some(alg), Some(want_type))]);
        let parts = vec![
            CompletePart { part_number: 1, etag: i1.etag.clone(), checksum: i1.checksum.clone() },
            CompletePart { part_number: 2, etag: i2.etag.clone(), checksum: None },
        ];
        let want = match want_type {
            T::FullObject => checksum_of(alg, &whole),
            T::Composite => checksum::composite_checksum(alg, [&checksum_of(alg, &p1), &checksum_of(alg, &p2)])
                .map_err(|e| e.to_string())?,
        };
        // A wrong expected value: BadDigest, nothing published, the upload still there.
        let wrong = CompleteMultipartRequest {
            parts: parts.clone(),
            checksum: Some(checksum_of(alg, b"not the object")),
            ..Default::default()
        };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, wrong).await, ErrorCode::BadDigest, &what)?;
        expect_code(s.head_object(&b, &key, GetObjectRequest::default()).await, ErrorCode::NoSuchKey, &what)?;
        // Another checksum mode than the upload's, or another algorithm: InvalidRequest.
        let other = if want_type == T::FullObject { T::Composite } else { T::FullObject };
        let mode = CompleteMultipartRequest { parts: parts.clone(), checksum_type: Some(other), ..Default::default() };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, mode).await, ErrorCode::InvalidRequest, &what)?;
        let other_alg = if alg == A::Sha1 { A::Crc32 } else { A::Sha1 };
        let alg_req = CompleteMultipartRequest {
            parts: parts.clone(),
            checksum: Some(checksum_of(other_alg, &whole)),
            ..Default::default()
        };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, alg_req).await, ErrorCode::InvalidRequest, &what)?;
        ensure_eq!(ok(s.list_parts(&b, &key, &id, ListPartsRequest::default()).await, "parts after")?.parts.len(), 2);
        let good = CompleteMultipartRequest {
            parts,
            checksum: Some(want.clone()),
            checksum_type: Some(want_type),
            ..Default::default()
        };
        let out = ok(s.complete_multipart_upload_with(&b, &key, &id, good).await, &format!("complete {what}"))?;
        ensure_eq!(out.checksum, Some(want.clone()));
        ensure_eq!(want.checksum_type(), want_type);
        let (info, data) = get(&s, &b, &key).await?;
        ensure!(data[..] == whole[..], "{what}: assembled content differs");
        ensure_eq!(info.checksum, Some(want));
        // A COMPOSITE object keeps its parts' checksums (GetObjectAttributes lists them).
        let want_parts = match want_type {
            T::Composite if c.part_checksums => vec![checksum_of(alg, &p1).value, checksum_of(alg, &p2).value],
            _ => vec![],
        };
        ensure_eq!(info.part_checksums, want_parts);
        if c.part_checksums && want_type == T::Composite {
            ensure_eq!(info.part_checksum(2), Some(checksum_of(alg, &p2)));
        }
    }
    // Combinations S3 refuses; nothing is created.
    for (alg, ty) in [
        (Some(A::Sha256), T::FullObject),
        (Some(A::Sha1), T::FullObject),
        (Some(A::Sha512), T::FullObject),
        (Some(A::Md5), T::FullObject),
        (Some(A::Xxhash64), T::FullObject),
        (Some(A::Xxhash3), T::FullObject),
        (Some(A::Xxhash128), T::FullObject),
        (Some(A::Crc64Nvme), T::Composite),
        (None, T::FullObject),
    ] {
        let req = CreateMultipartRequest { checksum_algorithm: alg, checksum_type: Some(ty), ..Default::default() };
        expect_code(
            s.create_multipart_upload(&b, "refused", req).await,
            ErrorCode::InvalidRequest,
            &format!("{alg:?} {ty:?}"),
        )?;
    }
    let ups = ok(s.list_multipart_uploads(&b, ListUploadsRequest::default()).await, "list uploads")?;
    ensure!(ups.uploads.is_empty(), "uploads left: {:?}", ups.uploads);
    Ok(())
}

/// The parts of a CompleteMultipartUpload, as uploaded (ETags only, no checksums).
fn as_completed(parts: &[PartInfo]) -> Vec<CompletePart> {
    parts.iter().map(|p| CompletePart { part_number: p.part_number, etag: p.etag.clone(), checksum: None }).collect()
}

fn part_src(bucket: &str, key: &str, range: Option<ByteRange>) -> PartCopySource {
    PartCopySource { bucket: bucket.into(), key: key.into(), range, ..Default::default() }
}

async fn upload_part_copy(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let src = pattern(16, 6 * MIB);
    put(&s, &b, "src", src.clone()).await?;
    let id = ok(s.create_multipart_upload(&b, "dst", CreateMultipartRequest::default()).await, "create upload")?;
    let p1 = ok(
        s.upload_part_copy(&b, "dst", &id, 1, part_src(&b, "src", Some(ByteRange::FromTo(0, 5 * MIB as u64 - 1))))
            .await,
        "part copy 1",
    )?;
    ensure_eq!(p1.size, 5 * MIB as u64);
    let p2 = ok(s.upload_part_copy(&b, "dst", &id, 2, part_src(&b, "src", None)).await, "part copy whole")?;
    ensure_eq!(p2.size, src.len() as u64);
    expect_code(
        s.upload_part_copy(
            &b,
            "dst",
            &id,
            3,
            part_src(&b, "src", Some(ByteRange::FromTo(7 * MIB as u64, 8 * MIB as u64))),
        )
        .await,
        ErrorCode::InvalidArgument,
        "range beyond source",
    )?;
    expect_code(
        s.upload_part_copy(
            &b,
            "dst",
            &id,
            3,
            PartCopySource {
                conditions: Conditions { if_match: Some("\"x\"".into()), ..Default::default() },
                ..part_src(&b, "src", None)
            },
        )
        .await,
        ErrorCode::PreconditionFailed,
        "source condition",
    )?;
    expect_code(
        s.upload_part_copy(&b, "dst", &id, 3, part_src(&b, "nope", None)).await,
        ErrorCode::NoSuchKey,
        "missing source",
    )?;
    ok(s.complete_multipart_upload(&b, "dst", &id, as_completed(&[p1, p2]), Conditions::default()).await, "complete")?;
    let (_, data) = get(&s, &b, "dst").await?;
    ensure!(
        data.len() == 11 * MIB && data[..5 * MIB] == src[..5 * MIB] && data[5 * MIB..] == src[..],
        "copied parts differ"
    );
    Ok(())
}

// ---- RenameObject and append (stores without them answer NotImplemented: the cases pass over
// them; the memory and posix test files check that those two implement both) ----

/// `true` when the store answers NotImplemented to RenameObject (checked on a missing key of a
/// missing bucket, which a store with the operation answers otherwise).
pub async fn lacks_rename(s: &DynStore) -> bool {
    let r = s.rename_object("conf-no-such-bucket-probe", "a", "b", RenameObjectRequest::default()).await;
    matches!(r, Err(e) if e.code == ErrorCode::NotImplemented)
}

/// `true` when the store answers NotImplemented to an append (checked as [`lacks_rename`]).
pub async fn lacks_append(s: &DynStore) -> bool {
    let r = s.append_object("conf-no-such-bucket-probe", "a", 0, PutObjectRequest::default(), Body::from("x")).await;
    matches!(r, Err(e) if e.code == ErrorCode::NotImplemented)
}

/// A rename retried with its client token answers success without renaming again (the source
/// is gone by then); the token reused for other keys is IdempotencyParameterMismatch.
async fn rename_client_token(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "src", Bytes::from_static(b"moved once")).await?;
    let with = |t: &str| RenameObjectRequest { client_token: Some(t.to_string()), ..Default::default() };
    ok(s.rename_object(&b, "src", "dst", with("tok-1")).await, "rename with a token")?;
    // The retry: 200, and nothing changes (a new "src" is not moved by it).
    put(&s, &b, "src", Bytes::from_static(b"newer")).await?;
    ok(s.rename_object(&b, "src", "dst", with("tok-1")).await, "retried rename")?;
    ensure!(get(&s, &b, "dst").await?.1 == "moved once", "the retry renamed again");
    ensure!(get(&s, &b, "src").await?.1 == "newer", "the retry moved the new source");
    expect_code(
        s.rename_object(&b, "src", "other", with("tok-1")).await,
        ErrorCode::IdempotencyParameterMismatch,
        "token reused for other keys",
    )?;
    expect_code(
        s.head_object(&b, "other", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "mismatch renamed",
    )?;
    // Another token renames; without a token a completed rename's retry is NoSuchKey.
    ok(s.rename_object(&b, "src", "dst2", with("tok-2")).await, "rename with another token")?;
    ok(s.rename_object(&b, "dst2", "dst3", RenameObjectRequest::default()).await, "rename without a token")?;
    expect_code(
        s.rename_object(&b, "dst2", "dst3", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "retry without a token",
    )?;
    // A failed rename leaves no record: the same token works once the source exists.
    expect_code(s.rename_object(&b, "none", "x", with("tok-3")).await, ErrorCode::NoSuchKey, "missing source")?;
    put(&s, &b, "none", Bytes::from_static(b"late")).await?;
    ok(s.rename_object(&b, "none", "x", with("tok-3")).await, "token of a failed rename")?;
    ensure!(get(&s, &b, "x").await?.1 == "late", "rename after a failed one with its token");
    Ok(())
}

fn rename_req(source: Conditions, dest: Conditions) -> RenameObjectRequest {
    RenameObjectRequest { source_conditions: source, conditions: dest, client_token: None }
}

async fn rename_object(s: DynStore, c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    expect_code(
        s.rename_object(&b, "a", "b", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchBucket,
        "rename in a missing bucket",
    )?;
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(31, 10_000);
    let meta = ObjectMeta {
        content_type: Some("text/x-rename".into()),
        user: [("k".to_string(), "v".to_string())].into_iter().collect(),
        ..Default::default()
    };
    let req = PutObjectRequest { meta: meta.clone(), tags: vec![("t".into(), "1".into())], ..Default::default() };
    let put_out = ok(s.put_object(&b, "src", req, Body::from(data.clone())).await, "put src")?;
    ok(s.rename_object(&b, "src", "dst", RenameObjectRequest::default()).await, "rename src -> dst")?;
    let (info, got) = get(&s, &b, "dst").await?;
    ensure!(got == data, "renamed object's bytes differ");
    ensure_eq!(info.etag, put_out.etag);
    ensure_eq!(info.meta, meta);
    ensure_eq!(ok(s.get_object_tagging(&b, "dst", None).await, "tags")?.tags, vec![("t".to_string(), "1".to_string())]);
    expect_code(
        s.head_object(&b, "src", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "source after rename",
    )?;
    expect_code(
        s.rename_object(&b, "src", "again", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "rename of a missing source",
    )?;
    expect_code(
        s.head_object(&b, "again", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed rename's dst",
    )?;

    // Onto an existing key: replaced, unless If-None-Match: *.
    put(&s, &b, "other", "other bytes").await?;
    let create_only = Conditions { if_none_match: Some("*".into()), ..Default::default() };
    expect_code(
        s.rename_object(&b, "dst", "other", rename_req(Conditions::default(), create_only.clone())).await,
        ErrorCode::PreconditionFailed,
        "rename onto an existing key with If-None-Match: *",
    )?;
    ensure!(get(&s, &b, "other").await?.1 == "other bytes", "refused rename changed the destination");
    ensure!(get(&s, &b, "dst").await?.1 == data, "refused rename changed the source");
    ok(s.rename_object(&b, "dst", "other", RenameObjectRequest::default()).await, "rename onto an existing key")?;
    ensure!(get(&s, &b, "other").await?.1 == data, "rename did not replace the destination");
    expect_code(s.head_object(&b, "dst", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "old name")?;
    ok(
        s.rename_object(&b, "other", "fresh", rename_req(Conditions::default(), create_only)).await,
        "If-None-Match: * onto an absent key",
    )?;

    // Into and out of "directories".
    ok(s.rename_object(&b, "fresh", "d1/d2/deep", RenameObjectRequest::default()).await, "rename into a/b/c")?;
    ensure!(get(&s, &b, "d1/d2/deep").await?.1 == data, "nested rename");
    ok(s.rename_object(&b, "d1/d2/deep", "top", RenameObjectRequest::default()).await, "rename out of a/b/c")?;
    let keys = list_all(&s, &b, "", None, 1000).await?.0;
    ensure_eq!(keys, vec!["top".to_string()]);
    if !c.file_and_dir_same_name {
        put(&s, &b, "file", "f").await?;
        expect_code(
            s.rename_object(&b, "top", "file/below", RenameObjectRequest::default()).await,
            ErrorCode::InvalidRequest,
            "rename below a file key",
        )?;
        ensure!(get(&s, &b, "top").await?.1 == data, "refused rename lost the source");
    }
    expect_code(
        s.rename_object(&b, "top", "dir/", RenameObjectRequest::default()).await,
        ErrorCode::InvalidRequest,
        "rename onto a directory-object key",
    )?;
    Ok(())
}

async fn rename_conditions(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    let etag = put(&s, &b, "s", "source").await?.etag;
    let dst_etag = put(&s, &b, "d", "dest").await?.etag;
    let past = SystemTime::now() - Duration::from_secs(86_400);
    let future = SystemTime::now() + Duration::from_secs(86_400);
    let src_fail = [
        Conditions { if_match: Some("\"0123456789abcdef0123456789abcdef\"".into()), ..Default::default() },
        Conditions { if_none_match: Some(format!("\"{etag}\"")), ..Default::default() },
        Conditions { if_unmodified_since: Some(past), ..Default::default() },
        Conditions { if_modified_since: Some(future), ..Default::default() },
    ];
    for (i, cond) in src_fail.into_iter().enumerate() {
        expect_code(
            s.rename_object(&b, "s", "t", rename_req(cond, Conditions::default())).await,
            ErrorCode::PreconditionFailed,
            &format!("failing source condition {i}"),
        )?;
    }
    let dst_fail = Conditions { if_match: Some("\"0123456789abcdef0123456789abcdef\"".into()), ..Default::default() };
    expect_code(
        s.rename_object(&b, "s", "d", rename_req(Conditions::default(), dst_fail)).await,
        ErrorCode::PreconditionFailed,
        "failing destination If-Match",
    )?;
    expect_one_of(
        s.rename_object(
            &b,
            "s",
            "absent",
            rename_req(Conditions::default(), Conditions { if_match: Some(etag.clone()), ..Default::default() }),
        )
        .await,
        &[ErrorCode::NoSuchKey, ErrorCode::PreconditionFailed],
        "destination If-Match on an absent key",
    )?;
    ensure!(get(&s, &b, "s").await?.1 == "source", "failed renames moved the source");
    ensure!(get(&s, &b, "d").await?.1 == "dest", "failed renames changed the destination");
    expect_code(
        s.head_object(&b, "t", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed renames' dst",
    )?;
    let src_ok =
        Conditions { if_match: Some(format!("\"{etag}\"")), if_unmodified_since: Some(future), ..Default::default() };
    let dst_ok = Conditions { if_match: Some(dst_etag), ..Default::default() };
    ok(s.rename_object(&b, "s", "d", rename_req(src_ok, dst_ok)).await, "rename with holding conditions")?;
    ensure!(get(&s, &b, "d").await?.1 == "source", "conditional rename");
    let src_ok =
        Conditions { if_none_match: Some("\"other\"".into()), if_modified_since: Some(past), ..Default::default() };
    ok(s.rename_object(&b, "d", "e", rename_req(src_ok, Conditions::default())).await, "If-None-Match other etag")?;
    Ok(())
}

async fn append_object(s: DynStore, c: Caps, b: String) -> R {
    if lacks_append(&s).await {
        return Ok(());
    }
    let app = |key: &'static str, off: u64, data: &'static str| {
        let s = s.clone();
        let b = b.clone();
        async move { s.append_object(&b, key, off, PutObjectRequest::default(), Body::from(data)).await }
    };
    expect_code(app("a", 0, "x").await, ErrorCode::NoSuchBucket, "append in a missing bucket")?;
    ok(s.create_bucket(&b).await, "create")?;
    let first = ok(app("a", 0, "hello").await, "append at 0 creates")?;
    ensure_eq!(first.size, 5);
    let out = ok(app("a", 5, " world").await, "append at the size")?;
    ensure_eq!(out.size, 11);
    ensure!(out.etag != first.etag, "append kept the ETag");
    let (info, data) = get(&s, &b, "a").await?;
    ensure!(data == "hello world", "appended bytes: {data:?}");
    ensure_eq!(info.etag, out.etag);
    ensure_eq!(info.size, 11);
    if c.etag_md5 {
        ensure_eq!(info.etag, md5_hex(b"hello world"));
    }
    for (off, what) in [(5u64, "stale offset"), (0, "offset 0 on an existing object"), (12, "offset past the end")] {
        expect_code(app("a", off, "zz").await, ErrorCode::InvalidWriteOffset, what)?;
    }
    expect_one_of(app("nothing", 3, "x").await, &[ErrorCode::InvalidWriteOffset, ErrorCode::NoSuchKey], "absent key")?;
    expect_code(app("a", 11, "").await, ErrorCode::InvalidRequest, "empty append")?;
    let with_meta = PutObjectRequest {
        meta: ObjectMeta { user: [("x".to_string(), "y".to_string())].into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.append_object(&b, "a", 11, with_meta, Body::from("m")).await,
        ErrorCode::InvalidRequest,
        "append with user metadata to an existing object",
    )?;
    ensure!(get(&s, &b, "a").await?.1 == "hello world", "refused appends changed the object");

    // Metadata and checksum of a PUT object carry on; the checksum covers the whole object.
    let base = pattern(41, 70_000);
    let meta = ObjectMeta { content_type: Some("text/x-log".into()), ..Default::default() };
    let req = PutObjectRequest {
        meta: meta.clone(),
        checksum: Some(ChecksumRequest { algorithm: ChecksumAlgorithm::Crc32c, expected: None }),
        ..Default::default()
    };
    ok(s.put_object(&b, "log", req, Body::from(base.clone())).await, "put log")?;
    let more = pattern(42, 5_000);
    let out = ok(
        s.append_object(&b, "log", base.len() as u64, PutObjectRequest::default(), Body::from(more.clone())).await,
        "append to a PUT object",
    )?;
    let whole: Bytes = [base, more].concat().into();
    ensure_eq!(out.size, whole.len() as u64);
    let (info, data) = get(&s, &b, "log").await?;
    ensure!(data == whole, "appended object bytes");
    ensure_eq!(info.meta, meta);
    ensure_eq!(info.checksum, Some(checksum_of(ChecksumAlgorithm::Crc32c, &whole)));
    ensure_eq!(out.checksum, info.checksum);
    Ok(())
}

async fn append_concurrent(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_append(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    // Racers at one offset, round after round: exactly one wins each, its bytes whole.
    let mut want = BytesMut::from(&b"base"[..]);
    put(&s, &b, "k", "base").await?;
    for round in 0..12u64 {
        let bodies: Vec<Bytes> = (0..8u64).map(|i| pattern(100 * round + i, 1000 + 4096 * i as usize)).collect();
        let offset = want.len() as u64;
        let tasks: Vec<_> = bodies
            .iter()
            .map(|body| {
                let (s, b, body) = (s.clone(), b.clone(), body.clone());
                tokio::spawn(async move {
                    s.append_object(&b, "k", offset, PutObjectRequest::default(), Body::from(body)).await
                })
            })
            .collect();
        let mut winners = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            match t.await.map_err(|e| format!("task: {e}"))? {
                Ok(_) => winners.push(i),
                Err(e) if e.code == ErrorCode::InvalidWriteOffset => {}
                Err(e) => return Err(format!("racer {i}: unexpected error {e}")),
            }
        }
        ensure!(winners.len() == 1, "round {round}: racers at one offset: winners {winners:?}");
        want.extend_from_slice(&bodies[winners[0]]);
        ensure!(get(&s, &b, "k").await?.1 == want, "round {round}: content after the race");
    }

    // Appenders that retry at the new size: every record lands whole, none lost.
    put(&s, &b, "log", "").await?;
    let writers = 6u64;
    let per = 20u64;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (s, b) = (s.clone(), b.clone());
            tokio::spawn(async move {
                for n in 0..per {
                    let rec = format!("<{w}:{n:03}:{}>", "x".repeat((w * 7 + n) as usize % 50));
                    loop {
                        let size = s.head_object(&b, "log", GetObjectRequest::default()).await?.size;
                        match s
                            .append_object(
                                &b,
                                "log",
                                size,
                                PutObjectRequest::default(),
                                Body::from(Bytes::from(rec.clone())),
                            )
                            .await
                        {
                            Ok(_) => break,
                            Err(e) if e.code == ErrorCode::InvalidWriteOffset => continue,
                            Err(e) => return Err(e),
                        }
                    }
                }
                Ok::<_, Error>(())
            })
        })
        .collect();
    for t in tasks {
        let r = t.await.map_err(|e| format!("appender task: {e}"))?;
        ok(r, "appender")?;
    }
    let (_, data) = get(&s, &b, "log").await?;
    let text = String::from_utf8(data.to_vec()).map_err(|_| "log is not text".to_string())?;
    let mut seen: Vec<String> = text.split_inclusive('>').map(str::to_string).collect();
    let mut want: Vec<String> = (0..writers)
        .flat_map(|w| (0..per).map(move |n| format!("<{w}:{n:03}:{}>", "x".repeat((w * 7 + n) as usize % 50))))
        .collect();
    seen.sort();
    want.sort();
    ensure!(seen == want, "appended records lost or interleaved ({} bytes): {:.300}", text.len(), text);
    Ok(())
}

// ---- versioning ----

/// Turn versioning on (`Enabled`) or suspend it; `Ok(false)` when the store under test does not
/// carry versions through (no configuration documents, or no version id on a PUT after enabling:
/// a front end that does not carry them yet), and the case is skipped.
async fn set_versioning(s: &DynStore, b: &str, state: VersioningState) -> Result<bool, String> {
    match s.put_bucket_config(b, s3hpc_core::versions::VERSIONING_CONFIG, Some(state.as_str().into())).await {
        Ok(()) => Ok(true),
        Err(e) if e.code == ErrorCode::NotImplemented => Ok(false),
        Err(e) => Err(format!("set versioning: {e}")),
    }
}

async fn versioned_bucket(s: &DynStore, b: &str) -> Result<bool, String> {
    ok(s.create_bucket(b).await, "create")?;
    if !set_versioning(s, b, VersioningState::Enabled).await? {
        return Ok(false);
    }
    let probe = put(s, b, "probe", "x").await?;
    let _ = s.delete_object_version(b, "probe", probe.version_id.as_deref()).await;
    Ok(probe.version_id.is_some())
}

async fn get_v(s: &DynStore, b: &str, k: &str, v: &str) -> Result<(ObjectInfo, Bytes)> {
    let out = s.get_object(b, k, GetObjectRequest { version_id: Some(v.into()), ..Default::default() }).await?;
    let info = out.info;
    Ok((info, out.body.collect().await?))
}

async fn all_versions(s: &DynStore, b: &str, prefix: &str, page: usize) -> Result<Vec<VersionEntry>, String> {
    let mut out = Vec::new();
    let (mut km, mut vm) = (None, None);
    for _ in 0..10_000 {
        let req = ListVersionsRequest {
            prefix: prefix.into(),
            key_marker: km.clone(),
            version_id_marker: vm.clone(),
            max_keys: page,
            ..Default::default()
        };
        let p = ok(s.list_object_versions(b, req).await, "list versions")?;
        ensure!(p.versions.len() <= page, "page holds more than max_keys");
        out.extend(p.versions);
        if !p.is_truncated {
            return Ok(out);
        }
        ensure!(p.next_key_marker.is_some(), "truncated page without a next key marker");
        km = p.next_key_marker;
        vm = p.next_version_id_marker;
    }
    Err("version listing never ended".into())
}

fn summary(v: &[VersionEntry]) -> Vec<(String, String, bool, bool)> {
    v.iter().map(|e| (e.key.clone(), e.version_id.clone(), e.is_latest, e.delete_marker)).collect()
}

async fn versioning_basics(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    match s.get_bucket_config(&b, s3hpc_core::versions::VERSIONING_CONFIG).await {
        Ok(None) => {}
        Ok(Some(d)) => return Err(format!("a new bucket has a versioning state: {d:?}")),
        Err(e) if e.code == ErrorCode::NotImplemented => return Ok(()),
        Err(e) => return Err(format!("get versioning: {e}")),
    }
    // Before versioning: the null version.
    let p1 = put(&s, &b, "k", "one").await?;
    ensure_eq!(p1.version_id, None);
    if !set_versioning(&s, &b, VersioningState::Enabled).await? {
        return Ok(());
    }
    let p2 = put(&s, &b, "k", "two").await?;
    let Some(v2) = p2.version_id.clone() else { return Ok(()) }; // front end without version ids
    ensure!(s3hpc_core::versions::is_valid_version_id(&v2) && v2 != "null", "bad version id {v2}");
    let v3 = put(&s, &b, "k", "three").await?.version_id.ok_or("no version id")?;
    ensure!(v3 != v2, "two PUTs gave one version id");
    let (info, data) = get(&s, &b, "k").await?;
    ensure_eq!(&data[..], b"three");
    ensure_eq!(info.version_id.as_deref(), Some(v3.as_str()));
    let (info, data) = ok(get_v(&s, &b, "k", &v2).await, "get v2")?;
    ensure_eq!(&data[..], b"two");
    ensure_eq!(info.version_id.as_deref(), Some(v2.as_str()));
    let (_, data) = ok(get_v(&s, &b, "k", "null").await, "get null")?;
    ensure_eq!(&data[..], b"one");
    let h = ok(
        s.head_object(&b, "k", GetObjectRequest { version_id: Some(v2.clone()), ..Default::default() }).await,
        "head v2",
    )?;
    ensure_eq!(h.size, 3);
    let k = |v: &str, latest: bool, marker: bool| ("k".to_string(), v.to_string(), latest, marker);
    ensure_eq!(
        summary(&all_versions(&s, &b, "", 1000).await?),
        vec![k(&v3, true, false), k(&v2, false, false), k("null", false, false)]
    );
    // Bad and missing version ids.
    expect_code(get_v(&s, &b, "k", "not-a-version").await, ErrorCode::InvalidArgument, "malformed id")?;
    let missing = s3hpc_core::versions::new_version_id();
    expect_code(get_v(&s, &b, "k", &missing).await, ErrorCode::NoSuchVersion, "missing id")?;
    // A delete makes a marker; the key is gone, its versions stay.
    let d = ok(s.delete_object_version(&b, "k", None).await, "delete")?;
    ensure!(d.delete_marker, "delete on a versioned bucket made no marker");
    let m = d.version_id.ok_or("no marker version id")?;
    match s.get_object(&b, "k", GetObjectRequest::default()).await {
        Err(e) if e.code == ErrorCode::NoSuchKey => {
            ensure_eq!(e.delete_marker.as_deref(), Some(m.as_str()));
        }
        other => return Err(format!("get after delete: expected NoSuchKey, got {:?}", other.map(|o| o.info))),
    }
    match get_v(&s, &b, "k", &m).await {
        Err(e) if e.code == ErrorCode::MethodNotAllowed => {
            ensure_eq!(e.delete_marker.as_deref(), Some(m.as_str()));
        }
        other => return Err(format!("get of a marker: expected MethodNotAllowed, got {:?}", other.map(|o| o.0))),
    }
    let (keys, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(!keys.contains(&"k".to_string()), "a deleted key is listed");
    ensure_eq!(
        summary(&all_versions(&s, &b, "", 1000).await?),
        vec![k(&m, true, true), k(&v3, false, false), k(&v2, false, false), k("null", false, false)]
    );
    expect_code(s.delete_bucket(&b).await, ErrorCode::BucketNotEmpty, "delete a bucket holding versions")?;
    // Copy from an old version.
    let cp = CopyObjectRequest { source_version_id: Some("null".into()), ..Default::default() };
    ok(s.copy_object(&b, "k", &b, "k2", cp).await, "copy null version")?;
    ensure_eq!(&get(&s, &b, "k2").await?.1[..], b"one");
    // Removing the marker brings the key back; removing the current version promotes the next.
    let d = ok(s.delete_object_version(&b, "k", Some(&m)).await, "delete marker")?;
    ensure!(d.delete_marker, "removing a marker does not say so");
    ensure_eq!(&get(&s, &b, "k").await?.1[..], b"three");
    ok(s.delete_object_version(&b, "k", Some(&v3)).await, "delete current version")?;
    let (info, data) = get(&s, &b, "k").await?;
    ensure_eq!(&data[..], b"two");
    ensure_eq!(info.version_id.as_deref(), Some(v2.as_str()));
    ok(s.delete_object_version(&b, "k", Some(&missing)).await, "delete a missing version")?;
    expect_code(s.delete_object_version(&b, "k", Some("zz")).await, ErrorCode::InvalidArgument, "delete bad id")?;
    ok(s.delete_object_version(&b, "k", Some("null")).await, "delete null")?;
    expect_code(get_v(&s, &b, "k", "null").await, ErrorCode::NoSuchVersion, "deleted null version")?;
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?)[..1], vec![k(&v2, true, false)]);
    Ok(())
}

async fn versioning_suspended(s: DynStore, _c: Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(());
    }
    let va = put(&s, &b, "k", "a").await?.version_id.ok_or("no version id")?;
    ensure!(set_versioning(&s, &b, VersioningState::Suspended).await?, "suspend");
    let doc = ok(s.get_bucket_config(&b, s3hpc_core::versions::VERSIONING_CONFIG).await, "get state")?;
    ensure_eq!(doc.as_deref().and_then(VersioningState::from_doc), Some(VersioningState::Suspended));
    ensure_eq!(put(&s, &b, "k", "b").await?.version_id, None);
    ensure_eq!(put(&s, &b, "k", "c").await?.version_id, None);
    let k = |v: &str, latest: bool, marker: bool| ("k".to_string(), v.to_string(), latest, marker);
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, false), k(&va, false, false)]);
    ensure_eq!(&ok(get_v(&s, &b, "k", "null").await, "get null")?.1[..], b"c");
    let d = ok(s.delete_object_version(&b, "k", None).await, "delete")?;
    ensure!(d.delete_marker && d.version_id.as_deref() == Some("null"), "suspended delete: {d:?}");
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, true), k(&va, false, false)]);
    ensure_eq!(put(&s, &b, "k", "d").await?.version_id, None);
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, false), k(&va, false, false)]);
    ensure_eq!(&ok(get_v(&s, &b, "k", &va).await, "get a")?.1[..], b"a");
    // Enabled again: the null version becomes noncurrent and stays readable.
    ensure!(set_versioning(&s, &b, VersioningState::Enabled).await?, "enable");
    let ve = put(&s, &b, "k", "e").await?.version_id.ok_or("no version id")?;
    ensure_eq!(
        summary(&all_versions(&s, &b, "k", 1000).await?),
        vec![k(&ve, true, false), k("null", false, false), k(&va, false, false)]
    );
    ensure_eq!(&ok(get_v(&s, &b, "k", "null").await, "get null")?.1[..], b"d");
    Ok(())
}

/// UploadPartCopy from a noncurrent version, the null version, and a delete marker (refused).
async fn versions_part_copy(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "src", "null-version").await?;
    if !set_versioning(&s, &b, VersioningState::Enabled).await? {
        return Ok(());
    }
    let first = pattern(3, 5 * MIB);
    let out1 = put(&s, &b, "src", first.clone()).await?;
    let Some(v1) = out1.version_id else { return Ok(()) };
    put(&s, &b, "src", "second").await?;
    let id = ok(s.create_multipart_upload(&b, "dst", CreateMultipartRequest::default()).await, "create upload")?;
    let from = |v: &str, range| PartCopySource { version_id: Some(v.into()), ..part_src(&b, "src", range) };
    let p1 = ok(s.upload_part_copy(&b, "dst", &id, 1, from(&v1, None)).await, "part copy of v1")?;
    ensure_eq!(p1.size, first.len() as u64);
    let p2 = ok(s.upload_part_copy(&b, "dst", &id, 2, from("null", Some(ByteRange::FromTo(0, 3)))).await, "null")?;
    ensure_eq!(p2.size, 4);
    // A condition is checked against the version named, not the current one.
    let cond = Conditions { if_match: Some(format!("\"{}\"", out1.etag)), ..Default::default() };
    let src = PartCopySource { conditions: cond, ..from(&v1, None) };
    ok(s.upload_part_copy(&b, "dst", &id, 3, src).await, "if-match of v1's etag")?;
    let missing = s3hpc_core::versions::new_version_id();
    expect_code(s.upload_part_copy(&b, "dst", &id, 4, from(&missing, None)).await, ErrorCode::NoSuchVersion, "gone")?;
    let marker = ok(s.delete_object_version(&b, "src", None).await, "delete")?;
    let mv = marker.version_id.ok_or("no delete marker version")?;
    expect_code(s.upload_part_copy(&b, "dst", &id, 4, from(&mv, None)).await, ErrorCode::InvalidRequest, "marker")?;
    let copy = CopyObjectRequest { source_version_id: Some(mv.clone()), ..Default::default() };
    expect_code(s.copy_object(&b, "src", &b, "c", copy).await, ErrorCode::InvalidRequest, "copy of a marker")?;
    expect_code(
        s.upload_part_copy(&b, "dst", &id, 4, part_src(&b, "src", None)).await,
        ErrorCode::NoSuchKey,
        "current",
    )?;
    ok(s.complete_multipart_upload(&b, "dst", &id, as_completed(&[p1, p2]), Conditions::default()).await, "complete")?;
    let (_, data) = get(&s, &b, "dst").await?;
    ensure!(data.len() == first.len() + 4 && data[..first.len()] == first[..], "part 1 is not version 1");
    ensure_eq!(&data[first.len()..], b"null");
    Ok(())
}

async fn versions_listing(s: DynStore, _c: Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(());
    }
    for k in ["a", "b/1", "b/2", "c"] {
        put(&s, &b, k, "x").await?;
        put(&s, &b, k, "y").await?;
    }
    ok(s.delete_object_version(&b, "c", None).await, "delete c")?;
    let full = all_versions(&s, &b, "", 1000).await?;
    let keys: Vec<&str> = full.iter().map(|v| v.key.as_str()).collect();
    ensure_eq!(keys, vec!["a", "a", "b/1", "b/1", "b/2", "b/2", "c", "c", "c"]);
    ensure!(full[6].delete_marker && full[6].is_latest && full[6].size == 0, "c's marker: {:?}", full[6]);
    ensure!(full.iter().filter(|v| v.is_latest).count() == 4, "one latest per key");
    for page in [1, 2, 3, 4] {
        ensure_eq!(summary(&all_versions(&s, &b, "", page).await?), summary(&full));
    }
    ensure_eq!(all_versions(&s, &b, "b/", 1000).await?.len(), 4);
    let req = ListVersionsRequest { delimiter: Some("/".into()), max_keys: 1000, ..Default::default() };
    let p = ok(s.list_object_versions(&b, req).await, "list with delimiter")?;
    ensure_eq!(p.common_prefixes, vec!["b/".to_string()]);
    ensure_eq!(p.versions.len(), 5);
    let req = ListVersionsRequest { delimiter: Some("/".into()), max_keys: 3, ..Default::default() };
    let p = ok(s.list_object_versions(&b, req).await, "list with delimiter, short page")?;
    ensure!(p.is_truncated, "3 of 6 entries, not truncated");
    ensure_eq!(p.common_prefixes, vec!["b/".to_string()]);
    ensure_eq!(p.next_key_marker.as_deref(), Some("b/"));
    ensure_eq!(p.next_version_id_marker, None);
    Ok(())
}
