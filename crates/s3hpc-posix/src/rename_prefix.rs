//! RenameObject of a prefix (source and destination keys ending in '/', an s3hpc extension; see
//! `s3hpc_core::prefix_rename`): one rename(2) of the key directory between two parent
//! directories opened beneath the root, so the whole subtree moves atomically and in O(1).
//! Records in xattrs travel with their inodes; records kept in sidecar files (named by key and
//! inode) are moved after the rename by a walk of the moved tree, done only when the bucket has
//! any sidecar at all.

use s3hpc_core::prefix_rename::prefix_not_empty;

use super::*;

impl Inner {
    /// RenameObject of the prefix `src` to `dst` (both end in '/') within `bucket`, on the
    /// calling thread. The caller checked the keys' form ([`s3hpc_core::prefix_rename`]).
    pub(crate) fn rename_prefix(&self, bucket: &str, src: &str, dst: &str) -> Result<()> {
        let skp = keys::parse_key(src)?;
        let dkp = keys::parse_key(dst)?;
        let (skey, dkey) = (&src[..src.len() - 1], &dst[..dst.len() - 1]);
        let bdir = self.bucket_dir(bucket)?;
        self.require_bucket(&bdir, bucket)?;
        // Renames, appends and conditional writes of the two directory objects take turns.
        let _locks = self.lock_keys(&bdir, &[src, dst])?;
        let Some(sparent) = self.key_parent(&bdir, bucket, skey)? else {
            return Err(Error::no_such_key(bucket, src));
        };
        let sname = skey.rsplit('/').next().unwrap_or(skey);
        // The name must be a directory itself, not a symlink to one (renaming the link would
        // move the link, and its target would stay where it is).
        match sys::open_path_at(&sparent, sname).map(|f| f.metadata()) {
            Some(Ok(m)) if m.is_dir() => {}
            Some(Ok(m)) if m.file_type().is_symlink() => {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "RenameObject does not rename a prefix whose directory is a symbolic link on the file system",
                ));
            }
            _ => return Err(Error::no_such_key(bucket, src)),
        }
        if src == dst {
            return Ok(());
        }
        let spath = join(&bdir, &skp.rel);
        let dpath = join(&bdir, &dkp.rel);
        let dname = dkey.rsplit('/').next().unwrap_or(dkey);
        let mut dparent = self.key_parent(&bdir, bucket, dkey)?;
        let mut moved = false;
        for _ in 0..8 {
            let e = match &dparent {
                // Onto an empty directory (a lone directory object included) rename(2)
                // replaces it; onto one with entries it fails.
                Some(p) => match sys::rename_between(&sparent, sname, p, dname, false) {
                    Ok(()) => {
                        moved = true;
                        break;
                    }
                    Err(e) => e,
                },
                None => io::Error::from_raw_os_error(libc::ENOENT),
            };
            match e.raw_os_error() {
                Some(libc::ENOENT) => {
                    if !sys::exists_at(&sparent, sname) {
                        return Err(Error::no_such_key(bucket, src));
                    }
                    self.make_parents(&bdir, bucket, dst, dpath.parent().expect("a key path has a parent"))?;
                    dparent = self.key_parent(&bdir, bucket, dkey)?;
                }
                Some(libc::ENOTEMPTY) | Some(libc::EEXIST) => return Err(prefix_not_empty(bucket, dst)),
                // The destination (or a directory on its way) is a file: an object key.
                Some(libc::ENOTDIR) => return Err(conflict(dst)),
                Some(libc::EINVAL) => {
                    return Err(Error::invalid_argument(
                        "the destination prefix of a RenameObject is inside its source prefix",
                    ));
                }
                _ => return Err(e.into()),
            }
        }
        if !moved {
            return Err(Error::internal("could not rename the prefix (directories kept changing)"));
        }
        if self.has_sidecars(&bdir) {
            self.move_sidecars(&bdir, src, dst, &dpath);
        }
        if let Some(p) = spath.parent().filter(|_| skey.contains('/')) {
            self.prune(&bdir, p.to_path_buf());
        }
        if let Some(p) = spath.parent() {
            self.sync_dir(p);
        }
        if let Some(p) = dpath.parent() {
            self.sync_dir(p);
        }
        Ok(())
    }

    /// Whether any record of the bucket lives in a sidecar file (`.s3hpc/meta/XX/...`).
    fn has_sidecars(&self, bdir: &Path) -> bool {
        let meta = bdir.join(INTERNAL).join("meta");
        let Ok(subdirs) = self.fs.read_dir(&meta) else { return false };
        subdirs.iter().filter(|d| d.is_dir).any(|d| self.fs.read_dir(&meta.join(&d.name)).is_ok_and(|e| !e.is_empty()))
    }

    /// After the rename of prefix `src` to `dst` (now the directory `dpath`): give every sidecar
    /// record of the moved tree (named by key and inode) its new key. Symlinks are not
    /// followed. A reader of a moved key meanwhile sees the object without its record (an
    /// ETag derived from the file, no user metadata) until its sidecar is moved.
    fn move_sidecars(&self, bdir: &Path, src: &str, dst: &str, dpath: &Path) {
        let mut todo = vec![(dpath.to_path_buf(), String::new())];
        while let Some((dir, rel)) = todo.pop() {
            // The directory itself: the directory object `prefix/` (its record, if any).
            self.move_sidecar(bdir, &dir, &format!("{src}{rel}"), &format!("{dst}{rel}"));
            let Ok(entries) = self.fs.read_dir(&dir) else { continue };
            for e in entries {
                let Some(name) = e.name.to_str() else { continue };
                let path = dir.join(name);
                if e.is_dir {
                    todo.push((path, format!("{rel}{name}/")));
                } else if e.is_file {
                    self.move_sidecar(bdir, &path, &format!("{src}{rel}{name}"), &format!("{dst}{rel}{name}"));
                }
            }
        }
    }

    fn move_sidecar(&self, bdir: &Path, path: &Path, old_key: &str, new_key: &str) {
        let Ok(md) = self.fs.symlink_metadata(path) else { return };
        let old = self.sidecar_path(bdir, old_key, md.ino());
        if self.fs.symlink_metadata(&old).is_err() {
            return;
        }
        let new = self.sidecar_path(bdir, new_key, md.ino());
        // A sidecar that cannot be moved leaves that object without its record (served with
        // a derived ETag), as a sidecar lost otherwise would: the rename itself has happened.
        let _ = self.fs.rename(&old, &new).or_else(|e| {
            if !is_missing(&e) {
                return Err(e);
            }
            self.fs.create_dir_all(new.parent().expect("a sidecar has a parent"))?;
            self.fs.rename(&old, &new)
        });
    }
}
