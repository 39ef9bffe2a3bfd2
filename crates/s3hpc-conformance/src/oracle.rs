//! Property-test harness: replay a random sequence of operations on the store under test and on
//! the memory oracle, and compare every answer (error codes, contents, listings, pagination).
//!
//! Keys are drawn so that no key is also a directory of another key (`d*` names only ever
//! appear as directories, `f*` names only as leaves), because a POSIX tree cannot hold both `a`
//! and `a/b`; everything else (ordering around `-`, `.`, `/`, directory objects, overwrite,
//! delete, copy, multipart) is fair game.

use std::sync::Arc;

use proptest::prelude::*;
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;

use crate::{Caps, pattern};

/// One step of a generated sequence: a call (a few for `Multipart`) on the store under test
/// and on the oracle. Not an S3 operation ([`s3hpc_core::S3Op`]) nor a store method
/// ([`s3hpc_core::StoreOp`]): a step of the model.
#[derive(Debug, Clone)]
pub enum Step {
    Put {
        key: String,
        len: usize,
        seed: u64,
    },
    Get {
        key: String,
    },
    GetRange {
        key: String,
        range: ByteRange,
    },
    Head {
        key: String,
    },
    Delete {
        key: String,
    },
    Copy {
        src: String,
        dst: String,
    },
    List {
        prefix: String,
        delimiter: bool,
        max_keys: usize,
        start_after: Option<String>,
    },
    /// Create, upload the given small parts (only the last may be small, so sizes are 1 part or
    /// the completion must fail with EntityTooSmall), complete.
    Multipart {
        key: String,
        parts: Vec<usize>,
        seed: u64,
    },
    Tag {
        key: String,
        value: String,
    },
}

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![Just("f0"), Just("f1"), Just("f-2"), Just("f.3"), Just("fé"), Just("f0-"), Just("F")]
        .prop_map(String::from)
}

fn dir() -> impl Strategy<Value = String> {
    prop_oneof![Just("d0"), Just("d1"), Just("d-2"), Just("dé")].prop_map(String::from)
}

/// A key: up to two directory levels, then a leaf, or a directory object (`d0/`).
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (proptest::collection::vec(dir(), 0..3), leaf()).prop_map(|(ds, l)| {
            let mut k = ds.join("/");
            if !k.is_empty() { k.push('/'); }
            k.push_str(&l);
            k
        }),
        1 => proptest::collection::vec(dir(), 1..3).prop_map(|ds| format!("{}/", ds.join("/"))),
    ]
}

fn prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("d0/".to_string()),
        Just("d".to_string()),
        Just("f".to_string()),
        Just("d0/d1/".to_string()),
        key()
    ]
}

fn range() -> impl Strategy<Value = ByteRange> {
    prop_oneof![
        (0u64..300, 0u64..300).prop_map(|(a, n)| ByteRange::FromTo(a, a + n)),
        (0u64..300).prop_map(ByteRange::From),
        (0u64..300).prop_map(ByteRange::Suffix),
    ]
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (key(), 0usize..300, any::<u64>()).prop_map(|(key, len, seed)| Step::Put { key, len, seed }),
        2 => key().prop_map(|key| Step::Get { key }),
        2 => (key(), range()).prop_map(|(key, range)| Step::GetRange { key, range }),
        1 => key().prop_map(|key| Step::Head { key }),
        3 => key().prop_map(|key| Step::Delete { key }),
        1 => (key(), key()).prop_map(|(src, dst)| Step::Copy { src, dst }),
        4 => (prefix(), any::<bool>(), 0usize..6, proptest::option::of(key()))
            .prop_map(|(prefix, delimiter, max_keys, start_after)| Step::List { prefix, delimiter, max_keys, start_after }),
        1 => (key(), proptest::collection::vec(1usize..200, 1..3), any::<u64>()).prop_map(|(key, parts, seed)| Step::Multipart { key, parts, seed }),
        1 => (key(), "[a-z]{0,3}").prop_map(|(key, value)| Step::Tag { key, value }),
    ]
}

pub fn steps(max: usize) -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(step(), 1..max)
}

/// What is compared: errors by code, successes by a normalised description.
fn outcome<T>(r: Result<T>, f: impl FnOnce(T) -> String) -> String {
    match r {
        Ok(v) => format!("ok {}", f(v)),
        Err(e) => format!("err {}", e.code),
    }
}

async fn apply(s: &DynStore, bucket: &str, step: &Step, caps: Caps) -> String {
    let etag = |e: &str| if caps.etag_md5 { e.to_string() } else { "-".to_string() };
    match step {
        Step::Put { key, len, seed } => {
            let r = s.put_object(bucket, key, PutObjectRequest::default(), Body::from(pattern(*seed, *len))).await;
            outcome(r, |o| format!("{} {}", o.size, etag(&o.etag)))
        }
        Step::Get { key } => {
            let r = match s.get_object(bucket, key, GetObjectRequest::default()).await {
                Ok(o) => o.body.collect().await.map_err(Error::from).map(|b| (o.info, b)),
                Err(e) => Err(e),
            };
            outcome(r, |(i, b)| format!("{} {} {:?} {}", i.size, etag(&i.etag), b, i.tag_count))
        }
        Step::GetRange { key, range } => {
            let req = GetObjectRequest { range: Some(*range), ..Default::default() };
            let r = match s.get_object(bucket, key, req).await {
                Ok(o) => o.body.collect().await.map_err(Error::from).map(|b| (o.range, b)),
                Err(e) => Err(e),
            };
            outcome(r, |(rg, b)| format!("{rg:?} {b:?}"))
        }
        Step::Head { key } => outcome(s.head_object(bucket, key, GetObjectRequest::default()).await, |i| {
            format!("{} {} {:?}", i.size, etag(&i.etag), i.meta)
        }),
        Step::Delete { key } => outcome(s.delete_object(bucket, key).await, |_| String::new()),
        Step::Copy { src, dst } => {
            let req = CopyObjectRequest { metadata: Directive::Replace(ObjectMeta::default()), ..Default::default() };
            outcome(s.copy_object(bucket, src, bucket, dst, req).await, |o| format!("{} {}", o.size, etag(&o.etag)))
        }
        Step::List { prefix, delimiter, max_keys, start_after } => {
            let req = ListObjectsRequest {
                prefix: prefix.clone(),
                delimiter: delimiter.then(|| "/".to_string()),
                start_after: start_after.clone(),
                max_keys: *max_keys,
            };
            outcome(s.list_objects(bucket, req).await, |p| {
                let objs: Vec<String> =
                    p.objects.iter().map(|o| format!("{}:{}:{}", o.key, o.size, etag(&o.etag))).collect();
                format!("{objs:?} {:?} {} {:?}", p.common_prefixes, p.is_truncated, p.next_marker)
            })
        }
        Step::Multipart { key, parts, seed } => {
            let id = match s.create_multipart_upload(bucket, key, CreateMultipartRequest::default()).await {
                Ok(id) => id,
                Err(e) => return format!("err create {}", e.code),
            };
            let mut done = Vec::new();
            for (i, len) in parts.iter().enumerate() {
                let n = i as u32 + 1;
                match s
                    .upload_part(
                        bucket,
                        key,
                        &id,
                        n,
                        UploadPartRequest::default(),
                        Body::from(pattern(seed ^ n as u64, *len)),
                    )
                    .await
                {
                    Ok(p) => done.push(CompletePart { part_number: n, etag: p.etag, checksum: None }),
                    Err(e) => return format!("err part {}", e.code),
                }
            }
            let r = s.complete_multipart_upload(bucket, key, &id, done, Conditions::default()).await;
            if r.is_err() {
                let _ = s.abort_multipart_upload(bucket, key, &id).await;
            }
            outcome(r, |o| format!("{} {}", o.size, etag(&o.etag)))
        }
        Step::Tag { key, value } => {
            let tags = if value.is_empty() { vec![] } else { vec![("k".to_string(), value.clone())] };
            let r = s.put_object_tagging(bucket, key, None, tags).await;
            let r2 = s.get_object_tagging(bucket, key, None).await;
            format!("{} / {}", outcome(r, |_| String::new()), outcome(r2, |t| format!("{t:?}")))
        }
    }
}

/// Replay `steps` on `store` (in a fresh bucket) and on a fresh memory oracle; `Err` describes the
/// first divergence. The bucket is removed afterwards.
pub async fn compare_with_oracle(store: DynStore, caps: Caps, steps: &[Step]) -> Result<(), String> {
    let oracle: DynStore = Arc::new(MemoryStore::new());
    let bucket = format!("prop-{:016x}", rand::random::<u64>());
    oracle.create_bucket(&bucket).await.map_err(|e| e.to_string())?;
    store.create_bucket(&bucket).await.map_err(|e| e.to_string())?;
    let mut result = Ok(());
    for (i, step) in steps.iter().enumerate() {
        let want = apply(&oracle, &bucket, step, caps).await;
        let got = apply(&store, &bucket, step, caps).await;
        if want != got {
            result = Err(format!("step {i}: {step:?}\n  oracle: {want}\n  store:  {got}"));
            break;
        }
    }
    if result.is_ok() {
        // The whole bucket must agree at the end, page by page.
        for page in [1usize, 3, 1000] {
            let a = crate::list_all(&oracle, &bucket, "", None, page).await;
            let b = crate::list_all(&store, &bucket, "", None, page).await;
            if a != b {
                result = Err(format!("final listing (page {page}) differs:\n  oracle: {a:?}\n  store:  {b:?}"));
                break;
            }
        }
    }
    crate::cleanup(&store, &bucket).await;
    result
}

/// Run `cases` random sequences against stores made by `make`, failing with a minimal
/// counterexample. Call from a plain `#[test]` (it drives its own runtime).
pub fn check<F>(cases: u32, caps: Caps, make: F)
where
    F: Fn() -> DynStore,
{
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..Default::default()
    });
    let result = runner.run(&steps(40), |steps| {
        let store = make();
        rt.block_on(compare_with_oracle(store, caps, &steps)).map_err(proptest::test_runner::TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("store diverges from the memory oracle: {e}");
    }
}
