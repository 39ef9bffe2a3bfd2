//! Multipart upload staging: upload directories, part records and publishing parts; the
//! records of completed uploads that answer retried completes.

use super::*;
use s3hpc_core::multipart::{COMPLETED_RETRY_WINDOW, CompletedUpload};

/// Completion records (`.done-<id>`) are swept at most this often per bucket (the sweep is
/// marked by the mtime of `uploads/.done-sweep`, so every process on the root shares it).
const DONE_SWEEP_EVERY: Duration = Duration::from_secs(600);

impl Inner {
    /// How long ago `p` was last modified (`None`: missing, or in the future).
    pub(crate) fn age(&self, p: &Path) -> Option<Duration> {
        self.fs
            .symlink_metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
    }

    /// The staging directory of the bucket's multipart uploads, in the gateway's state (see
    /// `state`); it may not exist yet (made by the first CreateMultipartUpload).
    pub(crate) fn uploads_dir(&self, bdir: &Path) -> PathBuf {
        self.state.uploads_dir(state::bucket_name(bdir))
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
        let md = self.written_metadata(&t.file)?;
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

    /// The lock every complete of upload `id` holds from its first look until it has answered:
    /// one of 4096 stripes chosen by upload id, kept apart from the conditional-write stripes
    /// of keys (names `1000`..`1fff` beside their `000`..`fff`), so a complete may take its
    /// key's stripe while it holds this one. Concurrent completes of one upload (in this process
    /// or another sharing the root) thus run one after the other, and the later ones find the
    /// first one's record.
    pub(crate) fn completion_lock(&self, bdir: &Path, id: &str) -> Result<Option<fs::File>> {
        self.lock_stripe(bdir, 0x1000 | publish::lock_stripe_of(id))
    }

    /// Where a complete moves the upload's staging directory while it assembles the object. A
    /// complete that finds it (holding the completion lock, so its owner is gone: killed during
    /// the complete) takes the upload over from there.
    pub(crate) fn completing_dir(&self, bdir: &Path, id: &str) -> PathBuf {
        self.uploads_dir(bdir).join(format!(".completing-{id}"))
    }

    fn done_path(&self, bdir: &Path, id: &str) -> PathBuf {
        self.uploads_dir(bdir).join(format!(".done-{id}"))
    }

    /// The record a complete of upload `id` left, if still within [`COMPLETED_RETRY_WINDOW`]
    /// (an expired one is removed).
    pub(crate) fn completed_upload(&self, bdir: &Path, id: &str) -> Result<Option<CompletedUpload>> {
        let path = self.done_path(bdir, id);
        let b = match self.fs.read(&path) {
            Ok(b) => b,
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match CompletedUpload::decode(&b) {
            Some(r) if !r.expired(SystemTime::now()) => Ok(Some(r)),
            _ => {
                let _ = self.fs.remove_file(&path);
                Ok(None)
            }
        }
    }

    /// Keep the record of a completed upload (temp file + rename, so a reader sees all of it or
    /// nothing), and now and then remove the bucket's expired records.
    pub(crate) fn record_completed(&self, bdir: &Path, id: &str, rec: &CompletedUpload) -> Result<()> {
        let uploads = self.uploads_dir(bdir);
        let tmp = uploads.join(format!(".done-{id}.{}", rand_hex(8)));
        let write = || -> io::Result<()> {
            let mut f = self.fs.create(&tmp, true)?;
            f.write_all(&rec.encode())?;
            self.sync_file(&f)?;
            self.fs.rename(&tmp, &self.done_path(bdir, id))
        };
        if let Err(e) = write() {
            let _ = self.fs.remove_file(&tmp);
            return Err(e.into());
        }
        self.sync_dir(&uploads);
        self.sweep_completed(bdir, false);
        Ok(())
    }

    /// Remove the bucket's completion records older than [`COMPLETED_RETRY_WINDOW`] (and
    /// their temp files), unless a sweep ran within [`DONE_SWEEP_EVERY`] (or `always`).
    /// Returns how many were removed.
    pub(crate) fn sweep_completed(&self, bdir: &Path, always: bool) -> usize {
        let uploads = self.uploads_dir(bdir);
        let marker = uploads.join(".done-sweep");
        if !always && self.age(&marker).is_some_and(|a| a < DONE_SWEEP_EVERY) {
            return 0;
        }
        if self.fs.write(&marker, b"").is_err() {
            return 0;
        }
        let mut n = 0;
        for e in self.fs.read_dir(&uploads).unwrap_or_default() {
            let Some(name) = e.name.to_str() else { continue };
            if !name.starts_with(".done-") || name == ".done-sweep" {
                continue;
            }
            let p = uploads.join(name);
            if self.age(&p).is_some_and(|a| a > COMPLETED_RETRY_WINDOW) && self.fs.remove_file(&p).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Called with the completion lock held: a claimed directory of `id` left behind means the
    /// complete that made it was killed (a live one would hold the lock). Put the upload back as
    /// it was, so this complete runs it again.
    pub(crate) fn resume_completion(&self, bdir: &Path, id: &str) -> Result<()> {
        let claimed = self.completing_dir(bdir, id);
        match self.fs.rename(&claimed, &self.uploads_dir(bdir).join(id)) {
            Ok(()) => Ok(()),
            Err(e) if is_missing(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Multipart uploads in progress under `root`, in every bucket: the upload directories in the
/// gateway's staging area (`ROOT/.s3hpc/staging/uploads/BUCKET/`; one `readdir` per bucket
/// there; the metrics endpoint calls this at each scrape). Reads the gateway's own state: call it
/// as the gateway (`ident::as_gateway`). Unreadable directories count nothing.
pub fn uploads_in_progress(root: &Path) -> u64 {
    let Ok(buckets) = std::fs::read_dir(root.join(state::MOAT).join("staging").join("uploads")) else { return 0 };
    let mut n = 0;
    for b in buckets.flatten() {
        let Ok(rd) = std::fs::read_dir(b.path()) else { continue };
        n += rd.flatten().filter(|e| e.file_name().to_str().is_some_and(valid_upload_id)).count() as u64;
    }
    n
}
