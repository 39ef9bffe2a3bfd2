//! DeleteObject, pruning emptied directories, and stale temp/upload cleanup.

use super::*;

impl Inner {
    /// Remove empty directories from `dir` up to (not including) the bucket, stopping at a
    /// directory object.
    pub(crate) fn prune(&self, bdir: &Path, mut dir: PathBuf) {
        while dir != bdir && dir.starts_with(bdir) {
            if !self.removable_dir(bdir, &dir) || self.fs.remove_dir(&dir).is_err() {
                return;
            }
            match dir.parent() {
                Some(p) => dir = p.to_path_buf(),
                None => return,
            }
        }
    }

    pub(crate) fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let r = self.delete_object_now(bucket, key);
        self.note_changed(bucket, key);
        r
    }

    /// This store changed the names along `key` in `bucket` (see `DirCache::note_key`); the
    /// bucket's path is built only where own changes are noted (roots shared by nodes), so
    /// local roots pay nothing per request.
    pub(crate) fn note_changed(&self, bucket: &str, key: &str) {
        if self.cache.journaling() {
            self.cache.note_key(&self.root.join(bucket), key);
        }
    }

    fn delete_object_now(&self, bucket: &str, key: &str) -> Result<()> {
        let dir = keys::check_key(key)?;
        names::check_bucket_name_for_access(bucket)?;
        // A file key below the bucket is read and removed relative to the directory the check
        // opened (no second path walk, no window to swap it for a symlink).
        let parent = if dir { None } else { self.key_parent(&self.root.join(bucket), bucket, key)? };
        let name = key.rsplit('/').next().unwrap_or(key);
        if let Some(p) = parent.as_ref().filter(|_| self.mode == MetaMode::Xattr) {
            // Common case: a file whose record is in its xattr, so there is no sidecar to
            // remove: getxattrat + unlinkat relative to an open directory, no stat, no path
            // built. Anything else (missing, no record, sidecar, errors) takes the general path.
            let full = || self.root.join(bucket).join(key);
            if let Ok(Some(v)) = sys::get_xattr_at(p, name, full)
                && v != SIDECAR_POINTER
            {
                match sys::unlink_at(p, name) {
                    Ok(()) => {
                        if key.contains('/') {
                            let path = full();
                            if let Some(p) = path.parent() {
                                self.prune(&self.root.join(bucket), p.to_path_buf());
                            }
                        }
                        return Ok(());
                    }
                    // A directory named by a key without '/': not an object, nothing to delete.
                    Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Ok(()),
                    Err(_) => {}
                }
            }
        }
        let kp = keys::parse_key(key)?;
        let bdir = self.bucket_dir(bucket)?;
        let path = bdir.join(&kp.rel);
        let md = match self.fs.symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if is_missing(&e) => return self.require_bucket(&bdir, bucket),
            Err(e) => return Err(e.into()),
        };
        if kp.dir {
            if !md.is_dir() {
                return Ok(());
            }
            let _g = self.lock(&path);
            match self.mode {
                MetaMode::Xattr => match self.fs.remove_xattr(&path) {
                    Err(e) if sys::is_unsupported(&e) => {}
                    r => r?,
                },
                MetaMode::Sidecar => {}
            }
            let _ = self.fs.remove_file(&self.sidecar_path(&bdir, key, md.ino()));
            self.prune(&bdir, path);
            return Ok(());
        }
        if md.is_dir() {
            return Ok(());
        }
        let sidecar = match self.mode {
            MetaMode::Sidecar => true,
            MetaMode::Xattr => !matches!(self.fs.get_xattr(&path), Ok(Some(v)) if v != SIDECAR_POINTER),
        };
        let removed = match &parent {
            Some(p) => sys::unlink_at(p, name),
            None => self.fs.remove_file(&path),
        };
        match removed {
            Ok(()) => {}
            Err(e) if is_missing(&e) => {}
            Err(e) => return Err(e.into()),
        }
        if sidecar {
            let _ = self.fs.remove_file(&self.sidecar_path(&bdir, key, md.ino()));
        }
        if let Some(p) = path.parent() {
            self.prune(&bdir, p.to_path_buf());
        }
        Ok(())
    }

    /// Remove temp files and claimed upload directories older than `stale_temp_age` from the
    /// gateway's staging area (see `state`; nothing in bucket directories is touched). A user's
    /// own temp directory (`tmp/u<uid>`) is swept acting as that user (with `posix_identity`),
    /// so the gateway needs no rights over it.
    pub(crate) fn cleanup_stale(&self) -> usize {
        let age = self.opts.stale_temp_age;
        let old = |p: &Path| {
            self.fs
                .symlink_metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| SystemTime::now().duration_since(t).is_ok_and(|d| d > age))
        };
        let mut n = 0;
        let sweep_files = |dir: &Path| {
            let mut n = 0;
            for t in self.fs.read_dir(dir).unwrap_or_default() {
                let p = dir.join(&t.name);
                if !t.is_dir && old(&p) && self.fs.remove_file(&p).is_ok() {
                    n += 1;
                }
            }
            n
        };
        let tmp = self.state.tmp_dir();
        for t in self.fs.read_dir(&tmp).unwrap_or_default() {
            let p = tmp.join(&t.name);
            if !t.is_dir {
                if old(&p) && self.fs.remove_file(&p).is_ok() {
                    n += 1;
                }
                continue;
            }
            let owner = t.name.to_str().and_then(|s| s.strip_prefix('u')).and_then(|u| u.parse::<u32>().ok());
            let Ok(md) = self.fs.symlink_metadata(&p) else { continue };
            match owner {
                Some(uid) if self.opts.posix_identity && md.uid() == uid && uid != self.state.uid => {
                    let id = s3hpc_core::identity::Identity { uid, gid: md.gid(), groups: vec![] };
                    if let Ok(_g) = ident::enter(Some(&id)) {
                        n += sweep_files(&p);
                    }
                }
                _ => n += sweep_files(&p),
            }
        }
        let ups = self.state.staging.join("uploads");
        for b in self.fs.read_dir(&ups).unwrap_or_default() {
            let Some(bucket) = b.name.to_str() else { continue };
            if !b.is_dir {
                continue;
            }
            n += self.sweep_completed(&self.root.join(bucket), true);
            let uploads = ups.join(bucket);
            for u in self.fs.read_dir(&uploads).unwrap_or_default() {
                let claimed =
                    u.name.to_str().is_some_and(|s| s.starts_with(".claimed-") || s.starts_with(".completing-"));
                let p = uploads.join(&u.name);
                if claimed && old(&p) && self.fs.remove_dir_all(&p).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }
}
