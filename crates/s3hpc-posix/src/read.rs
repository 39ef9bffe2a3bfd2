//! GET and HEAD: opening an object beneath the root and describing it from its record.

use super::*;

/// A handle went stale (ESTALE) while an object was opened: look it up again.
struct Stale;

impl Inner {
    /// Open an object for reading: the file is opened first and then fstat'ed, so size, ETag
    /// and content belong to the same inode even if the key is replaced meanwhile.
    pub(crate) fn open_object(&self, bdir: &Path, bucket: &str, key: &str, kp: &KeyPath) -> Result<Opened> {
        let path = bdir.join(&kp.rel);
        if kp.dir {
            let md = match self.fs.metadata(&path) {
                Ok(m) if m.is_dir() => m,
                Ok(_) => return Err(Error::no_such_key(bucket, key)),
                Err(e) if is_missing(&e) => return Err(self.missing(bdir, bucket, key)),
                Err(e) => return Err(e.into()),
            };
            let rec = self.valid_record(Target::Path(&path), bdir, key, &md)?;
            let Some(rec) = rec else { return Err(Error::no_such_key(bucket, key)) };
            let info = self.info_from(key, &md, Some(&rec));
            return Ok(Opened {
                info,
                tags: rec.tags,
                content: Content::Inline(rec.inline.unwrap_or_default()),
                has_record: true,
            });
        }
        self.open_file(bucket, key, || bdir.to_path_buf())
    }

    /// Open the object of the file key `key` (not ending in '/'), which `check_key` accepted;
    /// `bdir()` (the bucket's path) is only needed off the common path.
    ///
    /// On a network file system another node may have replaced or removed the file this node's
    /// caches still name: the open succeeds on the stale entry and a later call on the handle
    /// fails with ESTALE. Then the path is looked up afresh ([`sys::revalidate`]) and the open
    /// repeated, a few times at most; a key that stays stale answers as missing, never 500.
    pub(crate) fn open_file(&self, bucket: &str, key: &str, bdir: impl Fn() -> PathBuf) -> Result<Opened> {
        let mut tries = 0;
        loop {
            match self.open_file_once(bucket, key, &bdir) {
                Err(Stale) if tries < 3 => {
                    tries += 1;
                    sys::revalidate(&self.root_fd, &format!("{bucket}/{key}"));
                }
                Err(Stale) => return Err(self.missing(&bdir(), bucket, key)),
                Ok(r) => return r,
            }
        }
    }

    fn open_file_once(&self, bucket: &str, key: &str, bdir: &impl Fn() -> PathBuf) -> Result<Result<Opened>, Stale> {
        let stale = |e: &io::Error| if sys::is_stale(e) { Err(Stale) } else { Ok(()) };
        let file = match sys::open_beneath2(&self.root_fd, bucket, key, || bdir().join(key)) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => return Ok(Err(self.missing(&bdir(), bucket, key))),
            Err(e) => {
                stale(&e)?;
                return Ok(Err(e.into()));
            }
        };
        let md = match file.metadata() {
            Ok(md) => md,
            Err(e) => {
                stale(&e)?;
                return Ok(Err(e.into()));
            }
        };
        let stale_xattr = std::cell::Cell::new(false);
        let r = self.open_file_from(bucket, key, bdir, file, md, &stale_xattr);
        if stale_xattr.get() {
            return Err(Stale);
        }
        Ok(r)
    }

    fn open_file_from(
        &self,
        bucket: &str,
        key: &str,
        bdir: &impl Fn() -> PathBuf,
        file: File,
        md: fs::Metadata,
        stale_xattr: &std::cell::Cell<bool>,
    ) -> Result<Opened> {
        if !md.is_file() {
            return Err(Error::no_such_key(bucket, key));
        }
        let stamp = rcache::Stamp { size: md.len(), mtime_ns: mtime_ns(&md), ctime_ns: ctime_ns(&md) };
        let found = self.file_object(
            key,
            md.dev(),
            md.ino(),
            stamp,
            || {
                sys::fget_xattr(&file).inspect_err(|e| {
                    if sys::is_stale(e) {
                        stale_xattr.set(true)
                    }
                })
            },
            || self.sidecar_path(&bdir(), key, md.ino()),
        )?;
        let has_record = found.is_some();
        let (info, tags) = found.unwrap_or_else(|| (self.info_from(key, &md, None), Tags::new()));
        Ok(Opened { info, tags, content: Content::File(file), has_record })
    }

    /// HEAD of a file key on the common path: one `fstatat` relative to the open root (no path
    /// is built) and the record from the cache (or one `getxattrat`). `None` when the general
    /// path must decide: missing key or bucket, not a regular file, no valid record (a POSIX
    /// tool wrote the file, or it was replaced between the calls), errors.
    pub(crate) fn head_file_fast(&self, bucket: &str, key: &str) -> Option<ObjectInfo> {
        // Resolved beneath the root (a key or bucket leading out through a symlink is refused);
        // the record read below by path is accepted only if it names this very inode.
        let st = sys::stat_beneath2(&self.root_fd, bucket, key).ok().filter(|s| s.is_file)?;
        let stamp = rcache::Stamp { size: st.size, mtime_ns: st.mtime_ns, ctime_ns: st.ctime_ns };
        let found = self
            .file_object(
                key,
                st.dev,
                st.ino,
                stamp,
                || sys::get_xattr_at2(&self.root_fd, bucket, key, || self.root.join(bucket).join(key)),
                || self.sidecar_path(&self.root.join(bucket), key, st.ino),
            )
            .ok()??;
        Some(found.0)
    }

    /// HeadObject, on the calling thread.
    pub(crate) fn head_object(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Result<ObjectInfo> {
        let dir = keys::check_key(key)?;
        names::check_bucket_name_for_access(bucket)?;
        let info = match if dir { None } else { self.head_file_fast(bucket, key) } {
            Some(info) => info,
            None => {
                let kp = keys::parse_key(key)?;
                let bdir = self.bucket_dir(bucket)?;
                self.head_info(&bdir, bucket, key, &kp)?
            }
        };
        req.conditions.check_read(Some((&info.etag, info.last_modified)))?;
        match (req.range, req.part_number) {
            (Some(_), Some(_)) => {
                return Err(Error::new(ErrorCode::InvalidRequest, "Cannot specify both Range header and partNumber"));
            }
            (Some(r), None) => {
                r.resolve(info.size)?;
            }
            (None, Some(n)) => {
                info.part_range(n)?;
            }
            (None, None) => {}
        }
        Ok(info)
    }

    /// GetObject, on the calling thread.
    pub(crate) fn get_object(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Result<GetObjectOutput> {
        let dir = keys::check_key(key)?;
        names::check_bucket_name_for_access(bucket)?;
        let o = if dir {
            let kp = keys::parse_key(key)?;
            let bdir = self.bucket_dir(bucket)?;
            self.open_object(&bdir, bucket, key, &kp)?
        } else {
            self.open_file(bucket, key, || self.root.join(bucket))?
        };
        serve_opened(o, req)
    }
}

/// The GetObject answer from an opened object (the current one or a version): conditions, then
/// the range or part asked for.
pub(crate) fn serve_opened(o: Opened, req: &GetObjectRequest) -> Result<GetObjectOutput> {
    req.conditions.check_read(Some((&o.info.etag, o.info.last_modified)))?;
    let range = match (req.range, req.part_number) {
        (Some(_), Some(_)) => {
            return Err(Error::new(ErrorCode::InvalidRequest, "Cannot specify both Range header and partNumber"));
        }
        (Some(r), None) => Some(r.resolve(o.info.size)?),
        (None, Some(n)) => Some(o.info.part_range(n)?),
        (None, None) => None,
    };
    let (off, len) = range.unwrap_or((0, o.info.size));
    let body = match o.content {
        _ if len == 0 => Body::Empty,
        Content::File(file) => Body::File { file, offset: off, len },
        Content::Inline(v) => Body::from(Bytes::from(v).slice(off as usize..(off + len) as usize)),
    };
    Ok(GetObjectOutput { info: o.info, range, body })
}

impl Inner {
    /// Info and tag count of an object without opening it: `stat` + one metadata read. If the
    /// record does not match the stat (the key was replaced in between, or a POSIX tool wrote
    /// the file), fall back to open + fstat so info always describes one inode.
    pub(crate) fn head_info(&self, bdir: &Path, bucket: &str, key: &str, kp: &KeyPath) -> Result<ObjectInfo> {
        if !kp.dir {
            let path = bdir.join(&kp.rel);
            match self.fs.metadata(&path) {
                Ok(md) if md.is_file() => {
                    if let Ok(Some(rec)) = self.valid_record(Target::Path(&path), bdir, key, &md) {
                        return Ok(self.info_from(key, &md, Some(&rec)));
                    }
                }
                Ok(_) => return Err(Error::no_such_key(bucket, key)),
                Err(e) if is_missing(&e) => return Err(self.missing(bdir, bucket, key)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.open_object(bdir, bucket, key, kp)?.info)
    }

    /// ETag and mtime of the current object at `kp` (in `bucket`, at `bdir`), for write
    /// conditions. The bucket's name matters: a file without a valid record is opened by
    /// `bucket/key` beneath the root (with "" that was `/key`, an absolute path: the host's
    /// file, `test_hostile.py::test_write_conditions_never_read_host_files`).
    pub(crate) fn current(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
    ) -> Result<Option<(String, SystemTime)>> {
        match self.head_info(bdir, bucket, key, kp) {
            Ok(o) => Ok(Some((o.etag, o.last_modified))),
            Err(e) if matches!(e.code, ErrorCode::NoSuchKey | ErrorCode::NoSuchBucket) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
