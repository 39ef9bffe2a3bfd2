//! Multipart upload staging: upload directories, part records and publishing parts.

use super::*;

impl Inner {
    pub(crate) fn uploads_dir(&self, bdir: &Path) -> PathBuf {
        bdir.join(INTERNAL).join("uploads")
    }

    /// The staging directory and record of an upload; `NoSuchUpload` unless it exists for this key.
    pub(crate) fn upload(&self, bdir: &Path, bucket: &str, key: &str, id: &str) -> Result<(PathBuf, Record)> {
        if !valid_upload_id(id) {
            self.require_bucket(bdir, bucket)?;
            return Err(Error::no_such_upload(id));
        }
        let dir = self.uploads_dir(bdir).join(id);
        match self.fs.read(&dir.join("info")) {
            Ok(b) => match Record::decode(&b) {
                Some(r) if r.key == key => Ok((dir, r)),
                _ => Err(Error::no_such_upload(id)),
            },
            Err(e) if is_missing(&e) => {
                self.require_bucket(bdir, bucket)?;
                Err(Error::no_such_upload(id))
            }
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn part_info(&self, updir: &Path, n: u32) -> Result<Option<PartInfo>> {
        let path = updir.join(part_name(n));
        let md = match self.fs.metadata(&path) {
            Ok(m) => m,
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let sidecar = updir.join(format!("m{n:05}.{:x}", md.ino()));
        let rec = self.get_record(Target::Path(&path), &sidecar)?;
        Ok(rec.filter(|r| r.ino == md.ino() && r.size == md.len() && r.mtime_ns == mtime_ns(&md)).map(|r| PartInfo {
            part_number: n,
            etag: r.etag,
            size: r.size,
            last_modified: to_time(r.mtime_ns),
            checksum: r.checksum,
        }))
    }

    pub(crate) fn publish_part(&self, updir: &Path, id: &str, n: u32, t: Temp, d: Digests) -> Result<PartInfo> {
        let mut t = t;
        let md = t.file.metadata()?;
        let rec = Record {
            size: md.len(),
            mtime_ns: mtime_ns(&md),
            ino: md.ino(),
            etag: d.etag,
            checksum: d.checksum,
            ..Default::default()
        };
        let sidecar = updir.join(format!("m{n:05}.{:x}", md.ino()));
        let r = self.set_record(Target::File(&t.file), &sidecar, &rec);
        if let Err(e) = r {
            return Err(if is_missing(&e) { Error::no_such_upload(id) } else { e.into() });
        }
        self.sync_file(&t.file)?;
        // The upload's directory, opened beneath the root: the part is renamed into it from the
        // temp file's directory, with no path looked up in between.
        let dir = match self.fs.open_dir(updir) {
            Ok(d) => d,
            Err(e) if is_missing(&e) => return Err(Error::no_such_upload(id)),
            Err(e) => return Err(e.into()),
        };
        if !sys::exists_at(&dir, "info") {
            return Err(Error::no_such_upload(id));
        }
        match sys::rename_between(&t.dir, &t.name, &dir, &part_name(n), false) {
            Ok(()) => t.armed = false,
            Err(e) if is_missing(&e) => return Err(Error::no_such_upload(id)),
            Err(e) => return Err(e.into()),
        }
        self.sync_dir(updir);
        Ok(PartInfo {
            part_number: n,
            etag: rec.etag,
            size: rec.size,
            last_modified: to_time(rec.mtime_ns),
            checksum: rec.checksum,
        })
    }
}
