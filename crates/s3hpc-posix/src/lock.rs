//! S3 object lock on the file system (docs/SEMANTICS.md, "Object lock").
//!
//! A version's retention and legal hold live in its record (the `user.s3hpc` xattr of the
//! current file or of the version file, which is the same inode once the version becomes
//! noncurrent), so they travel with the version and are found again after a restart and by
//! every gateway on the root. The bucket's configuration (`BUCKET/.s3hpc/config/objectLock`) is
//! cached with the versioning state ([`versions::BucketState`]): a write or delete in a bucket
//! without object lock looks at nothing more than before. The file system's immutable flag is
//! not used (see SEMANTICS.md for why): POSIX users with write access are not stopped.

use std::time::SystemTime;

use s3hpc_core::lock::{self as ol, BucketLock, ObjectLock, Retention};
use s3hpc_core::versions::check_version_id;

use super::*;

/// Forgets a bucket's cached state when dropped (after its configuration changed).
pub(crate) struct ForgetState<'a>(pub &'a versions::StateCache, pub &'a str);

impl Drop for ForgetState<'_> {
    fn drop(&mut self) {
        self.0.forget(self.1)
    }
}

impl Inner {
    /// PutObject's lock checks, before the body is read: lock parameters on a bucket without
    /// object lock, and S3's rule that a locked write carries Content-MD5 or a checksum.
    pub(crate) fn check_put_lock(&self, bdir: &Path, bucket: &str, asked: ObjectLock, integrity: bool) -> Result<()> {
        let st = self.bucket_state(bdir, bucket)?;
        ol::lock_for_put(st.lock.as_ref(), asked, Some(integrity), SystemTime::now()).map(|_| ())
    }

    /// The lock a version published now gets: the one asked for, or the bucket's default.
    pub(crate) fn lock_for_publish(&self, lock: Option<&BucketLock>, asked: ObjectLock) -> Result<ObjectLock> {
        ol::lock_for_put(lock, asked, None, SystemTime::now())
    }

    /// The bucket directory of a lock call, which needs object lock on the bucket.
    fn lock_bucket(&self, bucket: &str, key: &str, vid: Option<&str>) -> Result<PathBuf> {
        let kp = keys::parse_key(key)?;
        if let Some(v) = vid {
            check_version_id(v)?;
        }
        let bdir = self.bucket_dir(bucket)?;
        self.require_bucket(&bdir, bucket)?;
        if kp.dir || self.bucket_state(&bdir, bucket)?.lock.is_none() {
            return Err(ol::missing_bucket_lock());
        }
        Ok(bdir)
    }

    /// The lock of a version (empty for a file without a valid record: a POSIX write).
    pub(crate) fn object_lock(&self, bucket: &str, key: &str, vid: Option<&str>) -> Result<ObjectLock> {
        let bdir = self.lock_bucket(bucket, key, vid)?;
        let p = self.version_path(&bdir, bucket, key, vid)?;
        let md = self.fs.symlink_metadata(&p)?;
        Ok(self.valid_record(Target::Path(&p), &bdir, key, &md)?.map(|r| r.lock).unwrap_or_default())
    }

    /// Change the lock of a version under the key's locks; a file without a record gets one.
    pub(crate) fn update_lock(
        &self,
        bucket: &str,
        key: &str,
        vid: Option<&str>,
        f: impl FnOnce(&mut ObjectLock) -> Result<()>,
    ) -> Result<()> {
        let bdir = self.lock_bucket(bucket, key, vid)?;
        let _g = self.lock(&bdir.join(key));
        let _flock = self.cross_process_lock(&bdir, key)?;
        self.update_version_record(&bdir, bucket, key, vid, |rec| f(&mut rec.lock))
    }

    /// Before a version file (or the current file) at `p` is removed, with the key's locks
    /// held: AccessDenied while its retention or legal hold protects it.
    pub(crate) fn check_version_delete(&self, p: &Path, bdir: &Path, key: &str, bypass: bool) -> Result<()> {
        let md = match self.fs.symlink_metadata(p) {
            Ok(md) if md.is_file() => md,
            Ok(_) => return Ok(()),
            Err(e) if is_missing(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let lock = self.valid_record(Target::Path(p), bdir, key, &md)?.map(|r| r.lock).unwrap_or_default();
        lock.check_delete(bypass, SystemTime::now())
    }
}

impl PosixStore {
    /// GetObjectRetention / GetObjectLegalHold.
    pub(crate) async fn lock_of(&self, bucket: &str, key: &str, vid: Option<&str>) -> Result<ObjectLock> {
        let (b, k, v) = (bucket.to_string(), key.to_string(), vid.map(str::to_string));
        self.run(move |s| s.object_lock(&b, &k, v.as_deref())).await
    }

    /// PutObjectRetention (`Some(retention)`, or `None` to remove it) or PutObjectLegalHold
    /// (`hold`).
    pub(crate) async fn set_lock(
        &self,
        bucket: &str,
        key: &str,
        vid: Option<&str>,
        retention: Option<Option<Retention>>,
        hold: Option<bool>,
    ) -> Result<()> {
        let bypass = ol::bypass_requested();
        let (b, k, v) = (bucket.to_string(), key.to_string(), vid.map(str::to_string));
        self.run(move |s| {
            s.update_lock(&b, &k, v.as_deref(), |l| {
                if let Some(r) = retention {
                    ol::check_retention_change(l.retention, r, bypass, SystemTime::now())?;
                    l.retention = r.map(|r| Retention { until: ol::round_ms(r.until), ..r });
                }
                if hold.is_some() {
                    l.legal_hold = hold;
                }
                Ok(())
            })
        })
        .await
    }
}
