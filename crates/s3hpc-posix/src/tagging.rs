//! Object tagging of any version (docs/SEMANTICS.md, "Versioning").
//!
//! A version's tags live in its record, as its retention and legal hold do (`lock.rs`): the
//! current version's in the record of the plain file, a noncurrent version's in the record of
//! its file in the key's versions area, written through [`Inner::update_version_record`] (the
//! path object lock takes), beneath the root.

use s3hpc_core::ObjectTagging;
use s3hpc_core::versions::{NULL_VERSION, check_version_id};

use super::*;

impl Inner {
    /// GetObjectTagging: the tags of version `vid` (`None`: the current version).
    pub(crate) fn object_tags(&self, bucket: &str, key: &str, vid: Option<&str>) -> Result<ObjectTagging> {
        let o = match vid {
            Some(v) => self.open_version(bucket, key, v)?,
            None => {
                let kp = keys::parse_key(key)?;
                let bdir = self.bucket_dir(bucket)?;
                self.open_object(&bdir, bucket, key, &kp).map_err(|e| self.mark_deleted(e, bucket, key))?
            }
        };
        Ok(ObjectTagging { tags: o.tags, version_id: o.info.version_id })
    }

    /// PutObjectTagging / DeleteObjectTagging (empty `tags`) of version `vid` (`None`: the
    /// current version); returns the version's id.
    pub(crate) fn set_object_tags(
        &self,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
        vid: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        if let Some(v) = vid {
            check_version_id(v)?;
        }
        let bdir = self.bucket_dir(bucket)?;
        // A file is opened beneath the root below (open_object); a directory key's xattr is
        // written by path, so its directory is checked first.
        if kp.dir {
            self.check_key_dir(bucket, key)?;
        }
        let path = bdir.join(&kp.rel);
        let _g = self.lock(&path);
        let Some(v) = vid else {
            let o = self.open_object(&bdir, bucket, key, kp).map_err(|e| self.mark_deleted(e, bucket, key))?;
            return self.tag_current(&bdir, key, &path, o, tags);
        };
        // A named version: the current one (under the key's locks, so it cannot become
        // noncurrent meanwhile) or one in the versions area.
        let _flock = self.cross_process_lock(&bdir, key)?;
        match self.open_object(&bdir, bucket, key, kp) {
            Ok(o) if o.info.version_id.as_deref().unwrap_or(NULL_VERSION) == v => {
                return self.tag_current(&bdir, key, &path, o, tags);
            }
            Ok(_) => {}
            Err(e) if e.code == ErrorCode::NoSuchKey => {}
            Err(e) => return Err(e),
        }
        self.update_version_record(&bdir, bucket, key, Some(v), |rec| {
            rec.tags = tags;
            Ok(())
        })?;
        Ok((v != NULL_VERSION).then(|| v.to_string()))
    }

    /// Replace the tags in the record of the current version `o` (opened at `path`, the key's
    /// lock held).
    fn tag_current(&self, bdir: &Path, key: &str, path: &Path, o: Opened, tags: Tags) -> Result<Option<String>> {
        let (md, target_file) = match &o.content {
            Content::File(f) => (f.metadata()?, Some(f)),
            Content::Inline(_) => (self.fs.metadata(path)?, None),
        };
        let mut rec = match &target_file {
            Some(f) => self.valid_record(Target::File(f), bdir, key, &md)?,
            None => self.valid_record(Target::Path(path), bdir, key, &md)?,
        }
        .unwrap_or_else(|| Record {
            // A file written by a POSIX tool gets a record now; its derived ETag is kept.
            size: md.len(),
            mtime_ns: mtime_ns(&md),
            ino: md.ino(),
            etag: o.info.etag.clone(),
            meta: o.info.meta.clone(),
            ..Default::default()
        });
        rec.tags = tags;
        let sidecar = self.sidecar_path(bdir, key, md.ino());
        match target_file {
            Some(f) => self.set_record(Target::File(f), &sidecar, &rec)?,
            None => self.set_record(Target::Path(path), &sidecar, &rec)?,
        }
        Ok(o.info.version_id.clone())
    }
}
