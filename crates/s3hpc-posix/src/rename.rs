//! RenameObject (one rename(2) of the object's file: its xattr record travels with the inode)
//! and append (PutObject with a write offset: a write at the end of the existing file, under
//! the cross-process lock conditional writes take).

use s3hpc_core::memory::{check_append_body, check_append_meta, check_rename_keys, check_write_offset};

use super::publish::lock_stripe_of;
use super::*;

/// Bytes hashed per read when an append recomputes the whole object's digests.
const REHASH_CHUNK: usize = 1 << 20;

impl Inner {
    /// Take the locks of the keys' stripes, each distinct stripe once, in ascending order.
    pub(crate) fn lock_keys(&self, bdir: &Path, keys: &[&str]) -> Result<Vec<Option<File>>> {
        let mut stripes: Vec<u64> = keys.iter().map(|k| lock_stripe_of(k)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let locks = stripes.into_iter().map(|s| self.lock_stripe(bdir, s)).collect::<Result<Vec<_>>>()?;
        for k in keys {
            self.refresh_key(bdir, k);
        }
        Ok(locks)
    }

    /// RenameObject within `bucket`, on the calling thread.
    pub(crate) fn rename_object(&self, bucket: &str, src: &str, dst: &str, req: &RenameObjectRequest) -> Result<()> {
        let r = self.rename_object_now(bucket, src, dst, req);
        self.note_changed(bucket, src);
        self.note_changed(bucket, dst);
        r
    }

    fn rename_object_now(&self, bucket: &str, src: &str, dst: &str, req: &RenameObjectRequest) -> Result<()> {
        let _skp = keys::parse_key(src)?;
        let dkp = keys::parse_key(dst)?;
        check_rename_keys(src, dst)?;
        let bdir = self.bucket_dir(bucket)?;
        self.require_bucket(&bdir, bucket)?;
        // Conditional writes of either key (and other renames and appends) wait for this one.
        let _locks = self.lock_keys(&bdir, &[src, dst])?;
        let o = self.open_file(bucket, src, || bdir.clone())?;
        req.source_conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
        let cur = self.current(&bdir, bucket, dst, &dkp)?;
        req.conditions.check_write(cur.as_ref().map(|(e, t)| (e.as_str(), *t)))?;
        if src == dst {
            return Ok(());
        }
        let Content::File(file) = &o.content else { return Err(Error::internal("file object without a file")) };
        let ino = file.metadata()?.ino();
        let Some(sparent) = self.key_parent(&bdir, bucket, src)? else {
            return Err(Error::no_such_key(bucket, src));
        };
        let sname = src.rsplit('/').next().unwrap_or(src);
        // The name must still be that file, and not a symlink to it (renaming a link would move
        // the link, not the object, and could break a relative target).
        match sys::open_path_at(&sparent, sname).map(|f| f.metadata()) {
            Some(Ok(m)) if m.is_file() && m.ino() == ino => {}
            Some(Ok(m)) if m.file_type().is_symlink() => {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "RenameObject does not rename objects that are symbolic links on the file system",
                ));
            }
            _ => return Err(Error::code(ErrorCode::ConditionalRequestConflict)),
        }
        // A record kept in a sidecar is named by key and inode: it goes to the new name first
        // (a reader of the new key then finds it at once), the old one is removed after.
        let old_sidecar = self.sidecar_path(&bdir, src, ino);
        let new_sidecar = self.sidecar_path(&bdir, dst, ino);
        let moved_sidecar = match self.read_sidecar(&old_sidecar)? {
            Some(rec) => {
                self.write_sidecar(&new_sidecar, &rec)?;
                true
            }
            None => false,
        };
        let create_only = req.conditions.if_none_match.as_deref().map(str::trim) == Some("*");
        let r = self.rename_file(&bdir, bucket, dst, &dkp, &sparent, sname, create_only);
        if let Err(e) = r {
            if moved_sidecar {
                let _ = self.fs.remove_file(&new_sidecar);
            }
            return Err(e);
        }
        if moved_sidecar {
            let _ = self.fs.remove_file(&old_sidecar);
        }
        let src_path = join(&bdir, Path::new(src));
        if src.contains('/')
            && let Some(p) = src_path.parent()
        {
            self.prune(&bdir, p.to_path_buf());
        }
        if self.opts.durability == Durability::Strict {
            if let Some(p) = src_path.parent() {
                self.sync_dir(p);
            }
            if let Some(p) = join(&bdir, &dkp.rel).parent() {
                self.sync_dir(p);
            }
        }
        Ok(())
    }

    /// Rename `sname` in the open directory `sparent` to the key `dst`, creating its missing
    /// parents, with the key-conflict rules of a PUT (see [`Self::rename_into_place`]).
    #[allow(clippy::too_many_arguments)]
    fn rename_file(
        &self,
        bdir: &Path,
        bucket: &str,
        dst: &str,
        dkp: &KeyPath,
        sparent: &File,
        sname: &str,
        create_only: bool,
    ) -> Result<()> {
        let dpath = join(bdir, &dkp.rel);
        let dname = dst.rsplit('/').next().unwrap_or(dst);
        let mut parent = self.key_parent(bdir, bucket, dst)?;
        for _ in 0..8 {
            let e = match &parent {
                Some(p) => match sys::rename_between(sparent, sname, p, dname, create_only) {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                },
                None => io::Error::from_raw_os_error(libc::ENOENT),
            };
            match e.raw_os_error() {
                Some(libc::ENOENT) => {
                    if !sys::exists_at(sparent, sname) {
                        return Err(Error::no_such_key(bucket, dst));
                    }
                    self.make_parents(bdir, bucket, dst, dpath.parent().expect("object path has a parent"))?;
                    parent = self.key_parent(bdir, bucket, dst)?;
                }
                Some(libc::EEXIST) | Some(libc::EISDIR) | Some(libc::ENOTEMPTY) => {
                    if self.fs.symlink_metadata(&dpath).is_ok_and(|m| m.is_dir()) {
                        if self.removable_dir(bdir, &dpath) && self.fs.remove_dir(&dpath).is_ok() {
                            continue;
                        }
                        return Err(conflict(dst));
                    }
                    if create_only {
                        return Err(Error::code(ErrorCode::PreconditionFailed)
                            .with_resource(dst.to_string())
                            .with("Condition", "If-None-Match"));
                    }
                    return Err(e.into());
                }
                Some(libc::ENOTDIR) => return Err(conflict(dst)),
                _ => return Err(e.into()),
            }
        }
        Err(Error::internal("could not rename the object (directories kept changing)"))
    }

    /// Append the received body `t` (digests `dg`) to the existing object `key` at `offset`,
    /// on the calling thread. `Ok(None)`: there is no object (the caller creates it).
    pub(crate) fn append_existing(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: &PutObjectRequest,
        t: &Temp,
        dg: &Digests,
    ) -> Result<Option<PutObjectOutput>> {
        let bdir = self.bucket_dir(bucket)?;
        let path = join(&bdir, Path::new(key));
        // Appenders (and conditional writes, renames) of this key take turns.
        let _lock = self.cross_process_lock(&bdir, key)?;
        let f = match self.fs.open_rw(&path) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => {
                self.require_bucket(&bdir, bucket)?;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let md = f.metadata()?;
        if !md.is_file() {
            return Ok(None);
        }
        let rec = self.valid_record(Target::File(&f), &bdir, key, &md)?;
        let info = self.info_from(key, &md, rec.as_ref());
        req.conditions.check_write(Some((&info.etag, info.last_modified)))?;
        check_write_offset(offset, md.len())?;
        check_append_meta(req)?;
        sys::copy_range(&t.file, 0, &f, offset, dg.size)?;
        // The whole object's digests, read back: O(size) per append (see docs/SEMANTICS.md).
        let alg = info.checksum.as_ref().map(|c| c.algorithm).or(req.checksum.as_ref().map(|c| c.algorithm));
        let mut d = BodyDigester::new(self.opts.etag_mode, false, alg);
        let size = offset + dg.size;
        let mut buf = vec![0u8; REHASH_CHUNK.min(size as usize).max(1)];
        let mut off = 0u64;
        while off < size {
            let n = (size - off).min(buf.len() as u64) as usize;
            f.read_exact_at(&mut buf[..n], off)?;
            d.update(&buf[..n]);
            off += n as u64;
        }
        let whole = d.finish();
        self.sync_file(&f)?;
        let md = self.written_metadata(&f)?;
        let (meta, tags) = match rec {
            Some(r) => (r.meta, r.tags),
            None => (info.meta, Tags::new()),
        };
        let rec = Record {
            size: md.len(),
            mtime_ns: mtime_ns(&md),
            ino: md.ino(),
            etag: whole.etag,
            checksum: whole.checksum,
            meta,
            tags,
            ..Default::default()
        };
        self.set_record(Target::File(&f), &self.sidecar_path(&bdir, key, md.ino()), &rec)?;
        Ok(Some(PutObjectOutput {
            version_id: None,
            etag: rec.etag,
            checksum: rec.checksum,
            size: rec.size,
            last_modified: to_time(rec.mtime_ns),
        }))
    }
}

impl PosixStore {
    pub(crate) async fn rename(&self, bucket: &str, src: &str, dst: &str, req: RenameObjectRequest) -> Result<()> {
        let prefix = s3hpc_core::prefix_rename::is_prefix_rename(src, dst, &req)?;
        let (b, s, d) = (bucket.to_string(), src.to_string(), dst.to_string());
        self.run(move |i| {
            i.rename_idempotent(&b, &s, &d, req.client_token.as_deref(), || {
                if prefix { i.rename_prefix(&b, &s, &d) } else { i.rename_object(&b, &s, &d, &req) }
            })
        })
        .await
    }

    pub(crate) async fn append(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        let kp = keys::parse_key(key)?;
        if kp.dir {
            return Err(Error::new(ErrorCode::InvalidRequest, "appends to directory objects are not supported"));
        }
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        {
            let (b, bd) = (bucket.to_string(), bdir.clone());
            self.run(move |s| s.require_bucket(&bd, &b)).await?;
        }
        let d = BodyDigester::new(
            self.inner.opts.etag_mode,
            req.content_md5.is_some(),
            req.checksum.as_ref().map(|c| c.algorithm),
        );
        let (t, dg) = self.receive(bdir.clone(), bucket.to_string(), body, d, req.content_length).await?;
        dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
        check_append_body(dg.size)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| {
            if let Some(out) = s.append_existing(&b, &k, offset, &req, &t, &dg)? {
                return Ok(out);
            }
            // No object: offset 0 creates it (create-only, so a racing creator wins or loses
            // whole); any other offset is wrong.
            check_write_offset(offset, 0)?;
            let mut conditions = req.conditions.clone();
            if conditions.if_match.is_some() {
                return Err(Error::no_such_key(&b, &k));
            }
            conditions.if_none_match = Some("*".into());
            match s.publish(&bdir, &b, &k, &kp, t, put_record(&req, &dg), &conditions) {
                Err(e) if e.code == ErrorCode::PreconditionFailed => Err(Error::code(ErrorCode::InvalidWriteOffset)),
                r => r,
            }
        })
        .await
    }
}
