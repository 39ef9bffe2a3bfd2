//! Object metadata records: the `user.s3hpc` xattr (or a sidecar file under `.s3hpc/meta/`),
//! reading, validating against the file's stat, and the record cache.

use super::*;

impl Inner {
    pub(crate) fn sidecar_path(&self, bdir: &Path, key: &str, ino: u64) -> PathBuf {
        let h = format!("{:032x}", twox_hash::XxHash3_128::oneshot(key.as_bytes()));
        bdir.join(INTERNAL).join("meta").join(&h[..2]).join(format!("{h}.{ino:x}"))
    }

    pub(crate) fn write_sidecar(&self, path: &Path, rec: &Record) -> io::Result<()> {
        let dir = path.parent().expect("sidecar has a parent");
        let tmp = dir.join(format!(".{}.tmp", self.temp_name()));
        let write = |tmp: &Path| -> io::Result<()> {
            let mut f = self.fs.create(tmp, false)?;
            f.write_all(&rec.encode())?;
            match self.opts.durability {
                Durability::Strict => f.sync_all()?,
                Durability::Relaxed => f.sync_data()?,
                Durability::None => {}
            }
            Ok(())
        };
        if let Err(e) = write(&tmp) {
            if !is_missing(&e) {
                let _ = self.fs.remove_file(&tmp);
                return Err(e);
            }
            self.fs.create_dir_all(dir)?;
            write(&tmp).inspect_err(|_| {
                let _ = self.fs.remove_file(&tmp);
            })?;
        }
        self.fs.rename(&tmp, path).inspect_err(|_| {
            let _ = self.fs.remove_file(&tmp);
        })
    }

    pub(crate) fn read_sidecar(&self, path: &Path) -> io::Result<Option<Record>> {
        match self.fs.read(path) {
            Ok(b) => Ok(Record::decode(&b)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Store `rec` for the file/dir `t`, in its xattr or (fallback) the sidecar `sidecar`.
    pub(crate) fn set_record(&self, t: Target, sidecar: &Path, rec: &Record) -> io::Result<()> {
        self.set_record_with(t, || sidecar.to_path_buf(), rec).map(|_| ())
    }

    /// [`Self::set_record`] building the sidecar path only when it is used (puts in xattr mode
    /// never need it).
    /// Returns the encoding when the record went into the xattr (`None`: sidecar).
    pub(crate) fn set_record_with(
        &self,
        t: Target,
        sidecar: impl Fn() -> PathBuf,
        rec: &Record,
    ) -> io::Result<Option<Vec<u8>>> {
        if self.mode == MetaMode::Sidecar {
            return self.write_sidecar(&sidecar(), rec).map(|_| None);
        }
        let enc = rec.encode();
        let r = match t {
            Target::File(f) => sys::fset_xattr(f, &enc),
            Target::Path(p) => self.fs.set_xattr(p, &enc),
        };
        match r {
            Ok(()) => Ok(Some(enc)),
            Err(e) if sys::is_too_big(&e) => {
                self.write_sidecar(&sidecar(), rec)?;
                match t {
                    Target::File(f) => sys::fset_xattr(f, SIDECAR_POINTER),
                    Target::Path(p) => self.fs.set_xattr(p, SIDECAR_POINTER),
                }
                .map(|_| None)
            }
            Err(e) if sys::is_unsupported(&e) => self.write_sidecar(&sidecar(), rec).map(|_| None),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn get_record(&self, t: Target, sidecar: &Path) -> io::Result<Option<Record>> {
        self.get_record_with(t, || sidecar.to_path_buf())
    }

    /// Like `get_record`, computing the sidecar path only when it is needed.
    pub(crate) fn get_record_with(&self, t: Target, sidecar: impl FnOnce() -> PathBuf) -> io::Result<Option<Record>> {
        let r = match t {
            Target::File(f) => self.get_record_src(|| sys::fget_xattr(f), sidecar),
            Target::Path(p) => self.get_record_src(|| self.fs.get_xattr(p), sidecar),
        };
        r.map(|(rec, _)| rec)
    }

    /// The record, read with `xattr` (or from the sidecar), and its encoding when it came
    /// from the xattr itself (then its changes move the file's ctime, see `rcache`).
    pub(crate) fn get_record_src(
        &self,
        xattr: impl FnOnce() -> io::Result<Option<Vec<u8>>>,
        sidecar: impl FnOnce() -> PathBuf,
    ) -> io::Result<(Option<Record>, Option<Vec<u8>>)> {
        if self.mode == MetaMode::Sidecar {
            return Ok((self.read_sidecar(&sidecar())?, None));
        }
        match xattr() {
            Ok(Some(v)) if v == SIDECAR_POINTER => Ok((self.read_sidecar(&sidecar())?, None)),
            Ok(Some(v)) => Ok((Record::decode(&v), Some(v))),
            Ok(None) => Ok((None, None)),
            Err(e) if sys::is_unsupported(&e) => Ok((self.read_sidecar(&sidecar())?, None)),
            Err(e) => Err(e),
        }
    }

    /// May a record of a file with this ctime be cached? Only on the root's own local file
    /// system, and only once a later change would get a later ctime (see `walk::settled` for the
    /// window). Never on shared or network roots (SEMANTICS, "What holds across nodes"): another
    /// node's change need not move the ctime this node sees in time, and a GlusterFS client's
    /// ctime does not move on an xattr change at all, so a cached record would outlive a tagging
    /// or object-lock change, even this gateway's own (`test_tagging_of_a_settled_object`).
    pub(crate) fn settled(&self, dev: u64, ctime_ns: i64) -> bool {
        if dev != self.root_dev || !self.root_local {
            return false;
        }
        self.ctime_exact || walk::settled(ctime_ns, now_ns(), || true)
    }

    /// The valid record of a regular file from the cache, or read with `xattr` (cached when it
    /// came from the xattr and the file has settled).
    pub(crate) fn file_record(
        &self,
        dev: u64,
        ino: u64,
        stamp: rcache::Stamp,
        xattr: impl FnOnce() -> io::Result<Option<Vec<u8>>>,
        sidecar: impl FnOnce() -> PathBuf,
    ) -> io::Result<Option<Record>> {
        if self.mode == MetaMode::Xattr
            && let Some(r) = self.rcache.get(dev, ino, stamp)
        {
            return Ok(Some(r));
        }
        self.read_record(dev, ino, stamp, xattr, sidecar)
    }

    /// The uncached part of [`Self::file_record`]: read, check and (when settled) cache.
    pub(crate) fn read_record(
        &self,
        dev: u64,
        ino: u64,
        stamp: rcache::Stamp,
        xattr: impl FnOnce() -> io::Result<Option<Vec<u8>>>,
        sidecar: impl FnOnce() -> PathBuf,
    ) -> io::Result<Option<Record>> {
        let cacheable = self.mode == MetaMode::Xattr;
        let (rec, enc) = self.get_record_src(xattr, sidecar)?;
        let rec = rec.filter(|r| r.ino == ino && r.size == stamp.size && r.mtime_ns == stamp.mtime_ns);
        if let Some(r) = &rec
            && cacheable
            && let Some(enc) = enc
            && self.settled(dev, stamp.ctime_ns)
        {
            self.rcache.put(dev, ino, stamp, r, &enc);
        }
        Ok(rec)
    }

    /// What HEAD and GET need of the file `key` with this stamp: its info and tags from the
    /// record (cached or read as [`Self::file_record`] does); `None` when it has no valid record.
    /// A plain cached record answers from its ETag and the stamp, with no `Record` built.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn file_object(
        &self,
        key: &str,
        dev: u64,
        ino: u64,
        stamp: rcache::Stamp,
        xattr: impl FnOnce() -> io::Result<Option<Vec<u8>>>,
        sidecar: impl FnOnce() -> PathBuf,
    ) -> io::Result<Option<(ObjectInfo, Tags)>> {
        if self.mode == MetaMode::Xattr {
            match self.rcache.lookup(dev, ino, stamp) {
                Some(rcache::Hit::Plain(etag, checksum)) => {
                    let info = ObjectInfo {
                        version_id: None,
                        lock: Default::default(),
                        key: key.to_string(),
                        size: stamp.size,
                        etag,
                        last_modified: to_time(stamp.mtime_ns),
                        meta: ObjectMeta::default(),
                        checksum,
                        part_sizes: Vec::new(),
                        part_checksums: Vec::new(),
                        tag_count: 0,
                    };
                    return Ok(Some((info, Tags::new())));
                }
                Some(rcache::Hit::Record(r)) => return Ok(Some(file_info(key, stamp.size, *r))),
                None => {}
            }
        }
        Ok(self.read_record(dev, ino, stamp, xattr, sidecar)?.map(|r| file_info(key, stamp.size, r)))
    }

    /// The record of `md`'s file if it still describes it (a POSIX tool may have rewritten
    /// the file: then size/mtime/inode differ and the record is ignored).
    pub(crate) fn valid_record(
        &self,
        t: Target,
        bdir: &Path,
        key: &str,
        md: &fs::Metadata,
    ) -> io::Result<Option<Record>> {
        if md.is_file() {
            let stamp = rcache::Stamp { size: md.len(), mtime_ns: mtime_ns(md), ctime_ns: ctime_ns(md) };
            let sidecar = || self.sidecar_path(bdir, key, md.ino());
            return match t {
                Target::File(f) => self.file_record(md.dev(), md.ino(), stamp, || sys::fget_xattr(f), sidecar),
                Target::Path(p) => self.file_record(md.dev(), md.ino(), stamp, || self.fs.get_xattr(p), sidecar),
            };
        }
        let rec = self.get_record_with(t, || self.sidecar_path(bdir, key, md.ino()))?;
        Ok(rec.filter(|r| r.ino == md.ino() && (md.is_dir() || (r.size == md.len() && r.mtime_ns == mtime_ns(md)))))
    }

    pub(crate) fn info_from(&self, key: &str, md: &fs::Metadata, rec: Option<&Record>) -> ObjectInfo {
        match rec {
            Some(r) => ObjectInfo {
                key: key.to_string(),
                size: if md.is_dir() { r.inline.as_ref().map_or(0, |b| b.len() as u64) } else { md.len() },
                etag: r.etag.clone(),
                last_modified: to_time(r.mtime_ns),
                meta: r.meta.clone(),
                checksum: r.checksum.clone(),
                part_sizes: r.part_sizes.clone(),
                part_checksums: r.part_checksums.clone(),
                tag_count: r.tags.len(),
                version_id: r.version_id.clone(),
                lock: r.lock,
            },
            None => ObjectInfo {
                version_id: None,
                lock: Default::default(),
                key: key.to_string(),
                size: md.len(),
                etag: derived_etag(md),
                last_modified: to_time(mtime_ns(md)),
                meta: ObjectMeta { content_type: Some("binary/octet-stream".into()), ..Default::default() },
                checksum: None,
                part_sizes: Vec::new(),
                part_checksums: Vec::new(),
                tag_count: 0,
            },
        }
    }
}
