//! S3 versioning on the file system (docs/SEMANTICS.md, "Versioning").
//!
//! The current version of a key stays the plain file at its path; its version id is in its
//! record (no id: the null version, as is any file a POSIX tool wrote). Noncurrent versions and
//! delete markers of key `K` live in `BUCKET/.s3hpc/versions/K/.s3hpc/` (`.s3hpc` is never a
//! key segment, so this cannot collide with the versions of `K/x`), one file each, named
//! `ID` (a version), `ID.m` (a delete marker), `ID.n` / `ID.nm` (the null version / a null
//! marker). IDs are [`s3hpc_core::versions::new_version_id`]s, so names sort newest first.
//! A version file is the old object's inode itself: a PUT links the current file there
//! (`link(2)`, no copy) and then renames the new one over the path, so readers of the path see
//! the old or the new object, never nothing. A crash between the two leaves the current file
//! with a second name in the versions area; listings skip such a name (same inode as the
//! current file) and the next write of the key removes it.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::Instant;

use s3hpc_core::versions::{
    DeleteObjectOutput, ListVersionsPage, ListVersionsRequest, NULL_VERSION, VERSIONING_CONFIG, VersionEntry,
    VersioningState, check_version_id, marker_not_allowed, new_version_id, no_such_version,
};

use s3hpc_core::lock::{BucketLock, OBJECT_LOCK_CONFIG};

use super::*;

/// How long a gateway trusts the versioning state it read (the same delay as bucket policies:
/// a change through another gateway on the root is seen within it).
pub(crate) const STATE_TTL: Duration = Duration::from_secs(1);

/// What a write or delete needs to know of its bucket: the versioning state and the object
/// lock configuration (only read when versioning was ever set: object lock needs it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BucketState {
    pub versioning: Option<VersioningState>,
    pub lock: Option<BucketLock>,
}

#[derive(Default)]
pub(crate) struct StateCache(RwLock<HashMap<String, (Instant, BucketState)>>);

impl StateCache {
    fn get(&self, bucket: &str) -> Option<BucketState> {
        let m = self.0.read().unwrap_or_else(|e| e.into_inner());
        m.get(bucket).filter(|(t, _)| t.elapsed() < STATE_TTL).map(|(_, s)| *s)
    }

    fn put(&self, bucket: &str, st: BucketState) {
        let mut m = self.0.write().unwrap_or_else(|e| e.into_inner());
        if m.len() > 10_000 {
            m.retain(|_, (t, _)| t.elapsed() < STATE_TTL);
        }
        m.insert(bucket.to_string(), (Instant::now(), st));
    }

    /// Read the state again on next use (this gateway changed it).
    pub(crate) fn forget(&self, bucket: &str) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).remove(bucket);
    }
}

/// One file of a key's versions directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VName {
    pub name: String,
    pub id: String,
    pub null: bool,
    pub marker: bool,
}

impl VName {
    fn parse(name: &str) -> Option<VName> {
        let (id, suffix) = name.split_at_checked(32)?;
        if !s3hpc_core::versions::is_valid_version_id(id) || id == NULL_VERSION {
            return None;
        }
        let (null, marker) = match suffix {
            "" => (false, false),
            ".m" => (false, true),
            ".n" => (true, false),
            ".nm" => (true, true),
            _ => return None,
        };
        Some(VName { name: name.to_string(), id: id.to_string(), null, marker })
    }

    pub fn vid(&self) -> &str {
        if self.null { NULL_VERSION } else { &self.id }
    }
}

/// The current file of a key: its stat and version id (`None`: null).
struct Current {
    md: fs::Metadata,
    vid: Option<String>,
}

impl Inner {
    /// The bucket's versioning state, from the cache (at most [`STATE_TTL`] old) or its
    /// configuration document. A document that cannot be read (other than missing) is an
    /// error: a write must not drop the previous version because the state was unknown.
    pub(crate) fn versioning(&self, bdir: &Path, bucket: &str) -> Result<Option<VersioningState>> {
        self.bucket_state(bdir, bucket).map(|s| s.versioning)
    }

    /// The bucket's versioning state and object lock configuration, cached together (see
    /// [`Self::versioning`]): a bucket that never had versioning costs no more than before.
    pub(crate) fn bucket_state(&self, bdir: &Path, bucket: &str) -> Result<BucketState> {
        if let Some(s) = self.vstate.get(bucket) {
            return Ok(s);
        }
        let read = |name: &str| self.read_bucket_state(bdir, bucket, &format!("config/{name}"));
        let versioning = match read(VERSIONING_CONFIG) {
            // No bucket (yet, or any more): no state, and nothing cached.
            Err(e) if e.code == ErrorCode::NoSuchBucket => return Ok(BucketState::default()),
            r => r?,
        };
        let versioning = versioning.and_then(|d| VersioningState::from_doc(&d));
        let lock = match versioning {
            Some(_) => read(OBJECT_LOCK_CONFIG)?.and_then(|d| BucketLock::from_doc(&d)),
            None => None,
        };
        let st = BucketState { versioning, lock };
        self.vstate.put(bucket, st);
        Ok(st)
    }

    /// The directory of `key`'s noncurrent versions and delete markers.
    pub(crate) fn vdir(&self, bdir: &Path, key: &str) -> PathBuf {
        bdir.join(INTERNAL).join("versions").join(key).join(INTERNAL)
    }

    /// The files of a versions directory, newest first (none when it does not exist).
    pub(crate) fn version_names(&self, vdir: &Path) -> Result<Vec<VName>> {
        let entries = match self.fs.read_dir(vdir) {
            Ok(e) => e,
            Err(e) if is_missing(&e) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out: Vec<VName> =
            entries.iter().filter(|e| e.is_file).filter_map(|e| e.name.to_str().and_then(VName::parse)).collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The regular file at `key`'s path and its version id.
    fn current_file(&self, bdir: &Path, key: &str) -> Result<Option<Current>> {
        let path = bdir.join(key);
        let md = match self.fs.symlink_metadata(&path) {
            Ok(md) if md.is_file() => md,
            Ok(_) => return Ok(None),
            Err(e) if is_missing(&e) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let rec = self.valid_record(Target::Path(&path), bdir, key, &md)?;
        Ok(Some(Current { md, vid: rec.and_then(|r| r.version_id) }))
    }

    /// Make the current file of `key` noncurrent (the caller holds the key's locks): a second
    /// name for it in the versions directory (named by its version id, or `NEW_ID.n` for the
    /// null version, so it sorts right after the version `new_id` that replaces it). With
    /// `null_next` (the next current version is a null one) every noncurrent null version goes,
    /// and a null current file is simply replaced.
    fn retire_current(&self, bdir: &Path, key: &str, null_next: bool, new_id: &str) -> Result<()> {
        let vdir = self.vdir(bdir, key);
        let names = self.version_names(&vdir)?;
        let cur = self.current_file(bdir, key)?;
        for n in &names {
            // Null versions go when a new null version comes; names the current file still has
            // (a crash between link and rename) go too: it is linked again below.
            let p = vdir.join(&n.name);
            let leftover = n.null
                && !n.marker
                && cur.as_ref().is_some_and(|c| self.fs.symlink_metadata(&p).is_ok_and(|m| m.ino() == c.md.ino()));
            if (n.null && null_next) || leftover {
                let _ = self.fs.remove_file(&p);
            }
        }
        let Some(cur) = cur else { return Ok(()) };
        if null_next && cur.vid.is_none() {
            return Ok(());
        }
        let name = match &cur.vid {
            Some(v) => v.clone(),
            None => format!("{new_id}.n"),
        };
        let r = self.in_versions_dir(&vdir, || self.fs.hard_link(&bdir.join(key), &vdir.join(&name)))?;
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            // The key's own directory went meanwhile (moved by a user of the bucket): there is
            // no current version left to retire.
            Err(e) if is_missing(&e) && self.current_file(bdir, key)?.is_none() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// `op` in the versions directory `vdir` of a key, made first (as the gateway, see
    /// `internal_dir_io`). A bucket's users can move its directories at any moment (their own
    /// bucket: `test_hostile.py::test_racing_flips_of_every_area_never_reach_another_tenant`
    /// moves `.s3hpc`, its versions area and the key's directory away and back in a loop): when
    /// `op` finds a directory gone, the directory is made again and `op` repeated, a few times,
    /// so such moves cost the request a retry instead of a 500. Making the directory can fail
    /// (the outer error); `op`'s last answer is the inner one.
    fn in_versions_dir(&self, vdir: &Path, op: impl Fn() -> io::Result<()>) -> Result<io::Result<()>> {
        let mut tries = 0;
        loop {
            let r = match self.internal_dir_io(vdir)? {
                Ok(()) => op(),
                Err(e) if is_missing(&e) => Err(e),
                Err(e) => return Err(publish::internal_dir_error(e)),
            };
            match r {
                Err(e) if is_missing(&e) && tries < 5 => tries += 1,
                r => return Ok(r),
            }
        }
    }

    /// Before a publish of file key `key`: the new current version's id (`None`: null) and
    /// the previous current version made noncurrent, under the bucket's versioning state. The
    /// caller holds the key's locks.
    pub(crate) fn version_for_publish(&self, bdir: &Path, key: &str, st: VersioningState) -> Result<Option<String>> {
        let vid = (st == VersioningState::Enabled).then(new_version_id);
        let id = vid.clone().unwrap_or_else(new_version_id);
        self.retire_current(bdir, key, vid.is_none(), &id)?;
        Ok(vid)
    }

    /// DeleteObject on a bucket with a versioning state, or with a version id.
    /// `bypass`: the request bypasses GOVERNANCE retention (object lock, see `lock`).
    pub(crate) fn delete_version(
        &self,
        bucket: &str,
        key: &str,
        vid: Option<&str>,
        bypass: bool,
    ) -> Result<DeleteObjectOutput> {
        let r = self.delete_version_now(bucket, key, vid, bypass);
        self.note_changed(bucket, key);
        r
    }

    fn delete_version_now(
        &self,
        bucket: &str,
        key: &str,
        vid: Option<&str>,
        bypass: bool,
    ) -> Result<DeleteObjectOutput> {
        let kp = keys::parse_key(key)?;
        let bdir = self.bucket_dir(bucket)?;
        if let Some(v) = vid {
            check_version_id(v)?;
        }
        let BucketState { versioning: st, lock } = self.bucket_state(&bdir, bucket)?;
        if bypass && lock.is_none() {
            return Err(s3hpc_core::lock::bypass_without_lock());
        }
        if kp.dir || (st.is_none() && vid.is_none_or(|v| v == NULL_VERSION)) {
            // Directory objects are not versioned; nor is anything in a bucket that never was.
            if vid.is_none_or(|v| v == NULL_VERSION) {
                self.delete_object(bucket, key)?;
            }
            return Ok(DeleteObjectOutput { version_id: vid.map(str::to_string), delete_marker: false });
        }
        self.require_bucket(&bdir, bucket)?;
        let path = bdir.join(&kp.rel);
        let _g = self.lock(&path);
        let _flock = self.cross_process_lock(&bdir, key)?;
        let vdir = self.vdir(&bdir, key);
        let Some(vid) = vid else {
            let st = st.expect("checked above");
            let id = new_version_id();
            let null = st == VersioningState::Suspended;
            self.retire_current(&bdir, key, null, &id)?;
            let name = if null { format!("{id}.nm") } else { format!("{id}.m") };
            self.in_versions_dir(&vdir, || self.fs.create(&vdir.join(&name), true).map(drop))??;
            self.sync_dir(&vdir);
            match self.fs.remove_file(&path) {
                Ok(()) => {
                    if let Some(p) = path.parent() {
                        self.prune(&bdir, p.to_path_buf());
                    }
                }
                Err(e) if is_missing(&e) => {}
                Err(e) => return Err(e.into()),
            }
            return Ok(DeleteObjectOutput {
                version_id: Some(if null { NULL_VERSION.to_string() } else { id }),
                delete_marker: true,
            });
        };
        let out = |marker| Ok(DeleteObjectOutput { version_id: Some(vid.to_string()), delete_marker: marker });
        let cur = self.current_file(&bdir, key)?;
        let names = self.version_names(&vdir)?;
        let is_current = cur.as_ref().is_some_and(|c| c.vid.as_deref().unwrap_or(NULL_VERSION) == vid);
        if lock.is_some() {
            // Object lock: the version's own record says whether it may go.
            let p = match names.iter().find(|n| n.vid() == vid) {
                _ if is_current => Some(path.clone()),
                Some(n) if !n.marker => Some(vdir.join(&n.name)),
                _ => None,
            };
            if let Some(p) = p {
                self.check_version_delete(&p, &bdir, key, bypass)?;
            }
        }
        if let Some(c) = &cur
            && is_current
        {
            // The current version goes: the newest noncurrent one becomes current (a version
            // file is renamed over the path in one step), or, if that is a marker or there is
            // none, the path goes.
            for n in &names {
                let p = vdir.join(&n.name);
                if self.fs.symlink_metadata(&p).is_ok_and(|m| m.ino() == c.md.ino()) {
                    let _ = self.fs.remove_file(&p); // a second name of the file being deleted
                    continue;
                }
                if !n.marker {
                    self.fs.rename(&p, &path)?;
                    return out(false);
                }
                break;
            }
            match self.fs.remove_file(&path) {
                Ok(()) => {
                    if let Some(p) = path.parent() {
                        self.prune(&bdir, p.to_path_buf());
                    }
                }
                Err(e) if is_missing(&e) => {}
                Err(e) => return Err(e.into()),
            }
            return out(false);
        }
        let Some(i) = names.iter().position(|n| n.vid() == vid) else { return out(false) };
        let marker = names[i].marker;
        match self.fs.remove_file(&vdir.join(&names[i].name)) {
            Ok(()) => {}
            Err(e) if is_missing(&e) => {}
            Err(e) => return Err(e.into()),
        }
        // A marker that was the current version went: the next version, if an object, is
        // current again.
        if i == 0
            && cur.is_none()
            && let Some(next) = names.get(1).filter(|n| !n.marker)
        {
            let parent = path.parent().expect("object path has a parent");
            self.make_parents(&bdir, bucket, key, parent)?;
            self.fs.rename(&vdir.join(&next.name), &path)?;
        }
        out(marker)
    }

    /// Does the bucket keep any noncurrent version or delete marker?
    pub(crate) fn has_versions(&self, bdir: &Path) -> Result<bool> {
        Ok(!self.noncurrent_under(bdir, "")?.is_empty())
    }

    /// DeleteObject without a version id: a delete marker on a versioned bucket.
    pub(crate) fn delete_object_any(&self, bucket: &str, key: &str, bypass: bool) -> Result<()> {
        let bdir = self.bucket_dir(bucket)?;
        if !bypass && (key.ends_with('/') || self.versioning(&bdir, bucket)?.is_none()) {
            return self.delete_object(bucket, key);
        }
        self.delete_version(bucket, key, None, bypass).map(|_| ())
    }

    /// The error for a missing current object: marked when the key's current version is a
    /// delete marker.
    pub(crate) fn mark_deleted(&self, e: Error, bucket: &str, key: &str) -> Error {
        if e.code != ErrorCode::NoSuchKey || key.ends_with('/') {
            return e;
        }
        let Ok(bdir) = self.bucket_dir(bucket) else { return e };
        if self.versioning(&bdir, bucket).ok().flatten().is_none()
            && self.fs.metadata(&bdir.join(INTERNAL).join("versions")).is_err()
        {
            return e;
        }
        match self.version_names(&self.vdir(&bdir, key)) {
            Ok(names) => match names.first() {
                Some(n) if n.marker => e.with_delete_marker(n.vid()),
                _ => e,
            },
            Err(_) => e,
        }
    }

    /// The file of version `vid` of `key` (`None`: the current version): the current file when
    /// its record names `vid`, else the version's file in the key's versions area. A delete
    /// marker's id is `MethodNotAllowed`, an unknown one `NoSuchVersion`. Every look-up goes
    /// through the store's `fs`, beneath the root.
    pub(crate) fn version_path(&self, bdir: &Path, bucket: &str, key: &str, vid: Option<&str>) -> Result<PathBuf> {
        let path = bdir.join(key);
        if let Ok(md) = self.fs.symlink_metadata(&path)
            && md.is_file()
        {
            let Some(vid) = vid else { return Ok(path) };
            let rec = self.valid_record(Target::Path(&path), bdir, key, &md)?;
            if rec.and_then(|r| r.version_id).as_deref().unwrap_or(NULL_VERSION) == vid {
                return Ok(path);
            }
        }
        let vdir = self.vdir(bdir, key);
        let names = self.version_names(&vdir)?;
        let Some(vid) = vid else {
            let e = Error::no_such_key(bucket, key);
            return Err(match names.first() {
                Some(n) if n.marker => e.with_delete_marker(n.vid()),
                _ => e,
            });
        };
        match names.iter().find(|n| n.vid() == vid) {
            Some(n) if n.marker => Err(marker_not_allowed(n.vid())),
            Some(n) => Ok(vdir.join(&n.name)),
            None => Err(no_such_version(bucket, key, vid)),
        }
    }

    /// Change the record of version `vid` of `key` (`None`: the current version; a file without
    /// a record, a POSIX write, gets one), with the key's locks held by the caller (the
    /// in-process stripe of `bdir/key`, then [`Self::cross_process_lock`]). The record is
    /// written through the store's `fs` (xattr, or the sidecar), which moves the file's ctime,
    /// so no cached record of the version outlives the change (see `rcache`). Shared by object
    /// lock (retention, legal hold) and object tagging.
    pub(crate) fn update_version_record(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        vid: Option<&str>,
        f: impl FnOnce(&mut Record) -> Result<()>,
    ) -> Result<()> {
        let p = self.version_path(bdir, bucket, key, vid)?;
        let md = self.fs.symlink_metadata(&p)?;
        let mut rec = self.valid_record(Target::Path(&p), bdir, key, &md)?.unwrap_or_else(|| Record {
            size: md.len(),
            mtime_ns: mtime_ns(&md),
            ino: md.ino(),
            etag: derived_etag(&md),
            ..Default::default()
        });
        f(&mut rec)?;
        self.set_record_with(Target::Path(&p), || self.sidecar_path(bdir, key, md.ino()), &rec)?;
        Ok(())
    }

    /// Open version `vid` of `key` (the current file if it is that version).
    pub(crate) fn open_version(&self, bucket: &str, key: &str, vid: &str) -> Result<Opened> {
        check_version_id(vid)?;
        let kp = keys::parse_key(key)?;
        let bdir = self.bucket_dir(bucket)?;
        match self.open_object(&bdir, bucket, key, &kp) {
            Ok(o) if o.info.version_id.as_deref().unwrap_or(NULL_VERSION) == vid => return Ok(o),
            Ok(_) => {}
            Err(e) if e.code == ErrorCode::NoSuchKey => {}
            Err(e) => return Err(e),
        }
        let vdir = self.vdir(&bdir, key);
        let names = self.version_names(&vdir)?;
        let Some(n) = names.iter().find(|n| n.vid() == vid) else {
            return Err(no_such_version(bucket, key, vid));
        };
        if n.marker {
            return Err(marker_not_allowed(n.vid()));
        }
        let file = match self.fs.open(&vdir.join(&n.name)) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => return Err(no_such_version(bucket, key, vid)),
            Err(e) => return Err(e.into()),
        };
        let md = file.metadata()?;
        let stamp = rcache::Stamp { size: md.len(), mtime_ns: mtime_ns(&md), ctime_ns: ctime_ns(&md) };
        let found = self.file_object(
            key,
            md.dev(),
            md.ino(),
            stamp,
            || sys::fget_xattr(&file),
            || self.sidecar_path(&bdir, key, md.ino()),
        )?;
        let has_record = found.is_some();
        let (mut info, tags) = found.unwrap_or_else(|| (self.info_from(key, &md, None), Tags::new()));
        info.version_id = (!n.null).then(|| n.id.clone());
        Ok(Opened { info, tags, content: Content::File(file), has_record })
    }

    /// GetObject of a version (`req.version_id`), or of the current object with a missing key
    /// told apart from one whose current version is a delete marker.
    pub(crate) fn get_object_v(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Result<GetObjectOutput> {
        let Some(vid) = req.version_id.as_deref() else {
            return self.get_object(bucket, key, req).map_err(|e| self.mark_deleted(e, bucket, key));
        };
        super::read::serve_opened(self.open_version(bucket, key, vid)?, req)
    }

    /// HeadObject, as [`Self::get_object_v`].
    pub(crate) fn head_object_v(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Result<ObjectInfo> {
        if req.version_id.is_none() {
            return self.head_object(bucket, key, req).map_err(|e| self.mark_deleted(e, bucket, key));
        }
        self.get_object_v(bucket, key, req).map(|o| o.info)
    }

    /// Every version and delete marker of the keys under `prefix` that have noncurrent ones:
    /// key -> names (newest first).
    fn noncurrent_under(&self, bdir: &Path, prefix: &str) -> Result<BTreeMap<String, Vec<VName>>> {
        let mut out = BTreeMap::new();
        let base = bdir.join(INTERNAL).join("versions");
        // Start at the deepest directory the prefix names entirely.
        let start = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let mut stack = vec![start.to_string()];
        while let Some(k) = stack.pop() {
            let dir = if k.is_empty() { base.clone() } else { base.join(&k) };
            let entries = match self.fs.read_dir(&dir) {
                Ok(e) => e,
                Err(e) if is_missing(&e) || e.raw_os_error() == Some(libc::ENOTDIR) => continue,
                Err(e) => return Err(e.into()),
            };
            for e in entries.iter().filter(|e| e.is_dir) {
                let Some(name) = e.name.to_str() else { continue };
                if name == INTERNAL {
                    if k.starts_with(prefix) {
                        let names = self.version_names(&dir.join(INTERNAL))?;
                        if !names.is_empty() {
                            out.insert(k.clone(), names);
                        }
                    }
                    continue;
                }
                let child = if k.is_empty() { name.to_string() } else { format!("{k}/{name}") };
                // Descend only where keys under the prefix can be.
                if child.starts_with(prefix) || prefix.starts_with(&format!("{child}/")) || prefix.starts_with(&child) {
                    stack.push(child);
                }
            }
        }
        Ok(out)
    }

    /// One page of ListObjectVersions, given every current file key under the prefix.
    pub(crate) fn list_versions(
        &self,
        bucket: &str,
        current: Vec<String>,
        req: &ListVersionsRequest,
    ) -> Result<ListVersionsPage> {
        let bdir = self.bucket_dir(bucket)?;
        self.require_bucket(&bdir, bucket)?;
        let mut noncurrent = self.noncurrent_under(&bdir, &req.prefix)?;
        let mut keys: Vec<String> = current;
        keys.extend(noncurrent.keys().cloned());
        keys.sort();
        keys.dedup();
        let mut all = Vec::new();
        for key in keys {
            let names = noncurrent.remove(&key).unwrap_or_default();
            let mut cur_ino = None;
            let path = bdir.join(&key);
            if let Ok(md) = self.fs.symlink_metadata(&path) {
                let is_obj = md.is_file() || (md.is_dir() && key.ends_with('/'));
                let rec = if is_obj { self.valid_record(Target::Path(&path), &bdir, &key, &md)? } else { None };
                if md.is_file() || rec.is_some() {
                    let info = self.info_from(&key, &md, rec.as_ref());
                    cur_ino = Some(md.ino());
                    all.push(VersionEntry {
                        key: key.clone(),
                        version_id: rec.and_then(|r| r.version_id).unwrap_or(NULL_VERSION.to_string()),
                        is_latest: true,
                        delete_marker: false,
                        size: info.size,
                        etag: info.etag,
                        last_modified: info.last_modified,
                    });
                }
            }
            let vdir = self.vdir(&bdir, &key);
            let mut first = true;
            for n in names {
                let p = vdir.join(&n.name);
                let Ok(md) = self.fs.symlink_metadata(&p) else { continue };
                if Some(md.ino()) == cur_ino {
                    continue; // a second name of the current file (see the module comment)
                }
                let latest = first && cur_ino.is_none() && n.marker;
                first = false;
                if n.marker {
                    all.push(VersionEntry {
                        key: key.clone(),
                        version_id: n.vid().to_string(),
                        is_latest: latest,
                        delete_marker: true,
                        size: 0,
                        etag: String::new(),
                        last_modified: to_time(mtime_ns(&md)),
                    });
                    continue;
                }
                let rec = self.valid_record(Target::Path(&p), &bdir, &key, &md)?;
                let info = self.info_from(&key, &md, rec.as_ref());
                all.push(VersionEntry {
                    key: key.clone(),
                    version_id: n.vid().to_string(),
                    is_latest: false,
                    delete_marker: false,
                    size: info.size,
                    etag: info.etag,
                    last_modified: info.last_modified,
                });
            }
        }
        Ok(s3hpc_core::versions::page_versions(all, req))
    }
}
