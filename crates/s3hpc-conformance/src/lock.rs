//! Object lock cases: the bucket configuration, default retention, retention and legal hold of
//! versions, deletes refused while a version is protected, and the GOVERNANCE bypass (the
//! caller's `x-amz-bypass-governance-retention`, see `s3hpc_core::lock::bypass_requested`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use s3hpc_core::caller::{self, Caller};
use s3hpc_core::checksum::md5;
use s3hpc_core::lock::{BucketLock, LockMode, OBJECT_LOCK_CONFIG, Period, is_protected};
use s3hpc_core::*;

use super::{R, expect_code, ok, versioned_bucket};

/// Run `f` as the current caller asking to bypass GOVERNANCE retention.
async fn bypassing<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut c = caller::current().map(|c| (*c).clone()).unwrap_or_else(Caller::anonymous);
    c.headers.bypass_governance_retention = true;
    caller::scope(Some(Arc::new(c)), f).await
}

async fn put_locked(s: &DynStore, b: &str, k: &str, lock: ObjectLock) -> Result<PutObjectOutput> {
    let req = PutObjectRequest { lock, content_md5: Some(md5(b"locked")), ..Default::default() };
    s.put_object(b, k, req, Body::from(bytes::Bytes::from_static(b"locked"))).await
}

fn expect_protected<T: std::fmt::Debug>(r: Result<T>, what: &str) -> R {
    match r {
        Err(e) if is_protected(&e) => Ok(()),
        other => Err(format!("{what}: expected the object lock AccessDenied, got {other:?}")),
    }
}

/// Whole seconds (what every front end carries exactly).
fn secs_from_now(n: u64) -> SystemTime {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    SystemTime::UNIX_EPOCH + Duration::from_secs(now + n)
}

pub(crate) async fn object_lock(s: DynStore, _c: super::Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(());
    }
    let hold = ObjectLock { legal_hold: Some(true), ..Default::default() };
    match put_locked(&s, &b, "k", hold).await {
        Err(e) if e.code == ErrorCode::NotImplemented => return Ok(()), // a store without object lock
        r => expect_code(r, ErrorCode::InvalidRequest, "lock on a bucket without object lock")?,
    }
    expect_code(s.get_object_retention(&b, "k", None).await, ErrorCode::InvalidRequest, "retention without lock")?;
    let cfg = BucketLock { default: Some((LockMode::Governance, Period::Days(1))) };
    ok(s.put_bucket_config(&b, OBJECT_LOCK_CONFIG, Some(cfg.to_doc())).await, "enable object lock")?;
    let doc = ok(s.get_bucket_config(&b, OBJECT_LOCK_CONFIG).await, "get lock config")?;
    ensure_eq!(doc.as_deref().and_then(BucketLock::from_doc), Some(cfg));
    let suspend = s.put_bucket_config(&b, versions::VERSIONING_CONFIG, Some(b"Suspended".to_vec())).await;
    expect_code(suspend, ErrorCode::InvalidBucketState, "suspend versioning on a lock bucket")?;

    // The default retention: GOVERNANCE, a day from now.
    let v1 = ok(put_locked(&s, &b, "k", ObjectLock::default()).await, "put with the default")?.version_id.unwrap();
    let r1 = ok(s.get_object_retention(&b, "k", Some(&v1)).await, "get retention")?.ok_or("no default retention")?;
    ensure!(r1.mode == LockMode::Governance, "default mode {:?}", r1.mode);
    let day = SystemTime::now() + Duration::from_secs(86_400);
    ensure!(r1.until <= day && r1.until + Duration::from_secs(120) > day, "default until {:?}", r1.until);
    ensure_eq!(ok(s.get_object_legal_hold(&b, "k", Some(&v1)).await, "get hold")?, None);

    // Explicit COMPLIANCE for a few seconds, with a legal hold; HEAD shows both.
    let until = secs_from_now(3);
    let comp = ObjectLock { retention: Some(Retention { mode: LockMode::Compliance, until }), legal_hold: Some(true) };
    let v2 = ok(put_locked(&s, &b, "k", comp).await, "put compliance")?.version_id.unwrap();
    let head = ok(s.head_object(&b, "k", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(head.lock, comp);
    ensure_eq!(ok(s.get_object_legal_hold(&b, "k", Some(&v2)).await, "get hold")?, Some(true));

    // Versions under retention or a legal hold stay; GOVERNANCE goes with the bypass only.
    expect_protected(s.delete_object_version(&b, "k", Some(&v2)).await, "delete compliance")?;
    expect_protected(bypassing(s.delete_object_version(&b, "k", Some(&v2))).await, "bypass compliance")?;
    expect_protected(s.delete_object_version(&b, "k", Some(&v1)).await, "delete governance")?;
    let shorter = Retention { mode: LockMode::Governance, until: secs_from_now(60) };
    let longer = Retention { mode: LockMode::Governance, until: secs_from_now(200_000) };
    ok(s.put_object_retention(&b, "k", Some(&v1), Some(longer)).await, "extend governance")?;
    expect_protected(s.put_object_retention(&b, "k", Some(&v1), Some(shorter)).await, "shorten governance")?;
    ok(bypassing(s.put_object_retention(&b, "k", Some(&v1), Some(shorter))).await, "shorten with bypass")?;
    ensure_eq!(ok(s.get_object_retention(&b, "k", Some(&v1)).await, "get")?, Some(shorter));
    expect_protected(bypassing(s.put_object_retention(&b, "k", Some(&v2), None)).await, "remove compliance")?;

    // A delete without a version id makes a marker; the locked versions stay readable.
    let m = ok(s.delete_object_version(&b, "k", None).await, "delete marker")?;
    ensure!(m.delete_marker, "no delete marker");
    let got = s.get_object(&b, "k", GetObjectRequest { version_id: Some(v2.clone()), ..Default::default() }).await;
    ensure_eq!(ok(got, "get locked version")?.info.lock, comp);
    ok(bypassing(s.delete_object_version(&b, "k", Some(&v1))).await, "delete governance with bypass")?;

    // Released and expired, the COMPLIANCE version goes too.
    ok(s.put_object_legal_hold(&b, "k", Some(&v2), false).await, "release hold")?;
    expect_protected(s.delete_object_version(&b, "k", Some(&v2)).await, "delete before expiry")?;
    while SystemTime::now() <= until + Duration::from_millis(50) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ok(s.delete_object_version(&b, "k", Some(&v2)).await, "delete after expiry")?;
    let missing = s.get_object_retention(&b, "k", Some(&v2)).await;
    expect_code(missing, ErrorCode::NoSuchVersion, "retention of a removed version")
}
