//! Object lock on the file system: a version's retention and legal hold are in its record, so
//! they survive a restart, are seen by a second store on the same root, and travel with the
//! version when it becomes noncurrent; the bucket's configuration is found again too.

use std::path::Path;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use s3hpc_core::lock::{BucketLock, LockMode, OBJECT_LOCK_CONFIG, Period, is_protected};
use s3hpc_core::versions::VERSIONING_CONFIG;
use s3hpc_core::*;
use s3hpc_posix::{Durability, PosixOptions, PosixStore};

fn open(root: &Path) -> PosixStore {
    PosixStore::open(root, PosixOptions { durability: Durability::None, ..Default::default() }).unwrap()
}

async fn put(s: &PosixStore, lock: ObjectLock) -> Result<PutObjectOutput> {
    let req = PutObjectRequest { lock, content_md5: Some(s3hpc_core::checksum::md5(b"v")), ..Default::default() };
    s.put_object("bkt", "k", req, Body::from(Bytes::from_static(b"v"))).await
}

#[tokio::test]
async fn locks_survive_restarts_and_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let a = open(&root);
    a.create_bucket("bkt").await.unwrap();
    let cfg = BucketLock { default: Some((LockMode::Compliance, Period::Years(1))) };
    // Object lock needs versioning Enabled first.
    let e = a.put_bucket_config("bkt", OBJECT_LOCK_CONFIG, Some(cfg.to_doc())).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidBucketState);
    a.put_bucket_config("bkt", VERSIONING_CONFIG, Some(b"Enabled".to_vec())).await.unwrap();
    a.put_bucket_config("bkt", OBJECT_LOCK_CONFIG, Some(cfg.to_doc())).await.unwrap();
    let until = SystemTime::UNIX_EPOCH + Duration::from_millis(4_000_000_000_123);
    let gov = ObjectLock { retention: Some(Retention { mode: LockMode::Governance, until }), legal_hold: Some(true) };
    let v1 = put(&a, gov).await.unwrap().version_id.unwrap();
    // The next write takes the bucket's default (COMPLIANCE, a year) and makes v1 noncurrent.
    let v2 = put(&a, ObjectLock::default()).await.unwrap().version_id.unwrap();
    drop(a);

    let b = open(&root);
    assert_eq!(b.get_bucket_config("bkt", OBJECT_LOCK_CONFIG).await.unwrap(), Some(cfg.to_doc()));
    assert_eq!(b.get_object_retention("bkt", "k", Some(&v1)).await.unwrap(), gov.retention);
    assert_eq!(b.get_object_legal_hold("bkt", "k", Some(&v1)).await.unwrap(), Some(true));
    let r2 = b.get_object_retention("bkt", "k", None).await.unwrap().unwrap();
    assert_eq!(r2.mode, LockMode::Compliance);
    assert!(r2.until > SystemTime::now() + Duration::from_secs(364 * 86_400));
    for v in [&v1, &v2] {
        let e = b.delete_object_version("bkt", "k", Some(v)).await.unwrap_err();
        assert!(is_protected(&e), "{e}");
    }
    // Refused without the integrity header (the default retention applies to every write).
    let e = b.put_object("bkt", "x", PutObjectRequest::default(), Body::from(Bytes::from_static(b"x"))).await;
    assert_eq!(e.unwrap_err().code, ErrorCode::InvalidRequest);
    // Versioning cannot be suspended any more, through either store.
    let e = b.put_bucket_config("bkt", VERSIONING_CONFIG, Some(b"Suspended".to_vec())).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidBucketState);
    // A change of the legal hold through one store is seen by another at once (the record).
    b.put_object_legal_hold("bkt", "k", Some(&v1), false).await.unwrap();
    let c = open(&root);
    assert_eq!(c.get_object_legal_hold("bkt", "k", Some(&v1)).await.unwrap(), Some(false));
    let e = c.delete_object_version("bkt", "k", Some(&v1)).await.unwrap_err();
    assert!(is_protected(&e), "GOVERNANCE still protects it: {e}");
    // A delete marker is allowed; the current file goes, the locked versions stay.
    assert!(c.delete_object_version("bkt", "k", None).await.unwrap().delete_marker);
    assert!(!root.join("bkt/k").exists());
    assert_eq!(c.get_object_retention("bkt", "k", Some(&v2)).await.unwrap(), Some(r2));
}
