//! The [`Store`] implementation: each S3 operation, run through [`PosixStore`]'s thread
//! dispatch (`dispatch.rs`) on the file-system work of the other modules.

use super::*;

#[async_trait]
impl Store for PosixStore {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        names::validate_bucket_name(bucket)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            match s.fs.create_dir(&bdir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(Error::code(ErrorCode::BucketAlreadyOwnedByYou).with_bucket(&b));
                }
                Err(e) => return Err(e.into()),
            }
            // The bucket's state (a stale one, left by a directory removed behind the gateway's
            // back, is replaced): its creation date, then configuration as it comes.
            let st = s.bucket_state_dir(&bdir, &b, true)?.expect("made");
            s.as_gateway(|| s.write_state_file(&st.join("created"), now_ns().to_string().as_bytes()))??;
            s.sync_dir(&s.root);
            Ok(())
        })
        .await
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            let req = ListObjectsRequest { max_keys: 1, ..Default::default() };
            let page = walk::walk(
                &s.cache,
                &s.fs,
                &bdir,
                &req,
                |at, k| {
                    Some(ObjectSummary { key: k.into(), size: 0, etag: String::new(), last_modified: UNIX_EPOCH })
                        .filter(|_| match at.fd {
                            Some(d) => sys::exists_at(d, at.name),
                            None => s.fs.symlink_metadata(&at.path()).is_ok(),
                        })
                },
                |p, k| {
                    s.is_dir_object(&bdir, p).then(|| ObjectSummary {
                        key: k.into(),
                        size: 0,
                        etag: String::new(),
                        last_modified: UNIX_EPOCH,
                    })
                },
            )?;
            if !page.objects.is_empty() || page.is_truncated || s.has_versions(&bdir)? {
                return Err(Error::code(ErrorCode::BucketNotEmpty).with_bucket(&b));
            }
            // Only empty directories (no objects) and the internal dir remain.
            let _ = s.fs.remove_dir_all(&bdir.join(INTERNAL));
            s.remove_bucket_state(&b);
            fn rm_empty(fs: &beneath::Beneath, d: &Path) {
                if let Ok(rd) = fs.read_dir(d) {
                    for e in rd.into_iter().filter(|e| e.is_dir) {
                        let p = d.join(&e.name);
                        rm_empty(fs, &p);
                        let _ = fs.remove_dir(&p);
                    }
                }
            }
            rm_empty(&s.fs, &bdir);
            match s.fs.remove_dir(&bdir) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) || e.raw_os_error() == Some(libc::EEXIST) => {
                    return Err(Error::new(
                        ErrorCode::BucketNotEmpty,
                        "The bucket holds files that are not objects (or an object arrived meanwhile)",
                    )
                    .with_bucket(&b));
                }
                Err(e) if is_missing(&e) => return Err(Error::no_such_bucket(&b)),
                Err(e) => return Err(e.into()),
            }
            s.sync_dir(&s.root);
            Ok(())
        })
        .await
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| s.require_bucket(&bdir, &b)).await
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.run_gateway(|s| {
            let mut out = Vec::new();
            for e in s.fs.read_dir(&s.root)? {
                let Some(name) = e.name.to_str().map(str::to_string) else { continue };
                if names::check_bucket_name_for_access(&name).is_err() {
                    continue;
                }
                // Beneath the root: a symlink leading out is not a bucket.
                let path = s.root.join(&name);
                let Ok(md) = s.fs.metadata(&path) else { continue };
                if !md.is_dir() {
                    continue;
                }
                let created = s
                    .read_bucket_state(&path, &name, "created")
                    .ok()
                    .flatten()
                    .and_then(|v| String::from_utf8(v).ok())
                    .and_then(|s| s.trim().parse::<i64>().ok())
                    .map(to_time)
                    .unwrap_or_else(|| to_time(mtime_ns(&md)));
                out.push(BucketInfo { name, created });
            }
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
        .await
    }

    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        names::validate_config_name(name)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, name) = (bucket.to_string(), name.to_string());
        self.run_gateway(move |s| s.read_bucket_state(&bdir, &b, &format!("config/{name}"))).await
    }

    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        names::validate_config_name(name)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, name) = (bucket.to_string(), name.to_string());
        self.run_gateway(move |s| {
            s.require_bucket(&bdir, &b)?;
            if name == s3hpc_core::versions::VERSIONING_CONFIG || name == s3hpc_core::lock::OBJECT_LOCK_CONFIG {
                if s.mode == MetaMode::Sidecar {
                    return Err(Error::not_implemented(
                        "versioning needs extended attributes (user.* xattrs), which this file system does not offer",
                    ));
                }
                s.vstate.forget(&b);
                let st = s.bucket_state(&bdir, &b)?;
                s3hpc_core::lock::check_config_change(&name, doc.as_deref(), st.versioning, st.lock.as_ref())?;
            }
            let _forget = lock::ForgetState(&s.vstate, &b);
            s.write_bucket_state(&bdir, &b, &format!("config/{name}"), doc.as_deref())
        })
        .await
    }

    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        use std::os::unix::fs::MetadataExt;
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| match s.fs.metadata(&bdir) {
            Ok(md) if md.is_dir() => Ok(Some(md.uid())),
            Ok(_) => Err(Error::no_such_bucket(&b)),
            Err(e) if is_missing(&e) => Err(Error::no_such_bucket(&b)),
            Err(e) => Err(e.into()),
        })
        .await
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| match s.read_bucket_state(&bdir, &b, "tags")? {
            Some(v) => Record::decode(&v).map(|r| r.tags).ok_or_else(|| Error::internal("corrupt bucket tag file")),
            None => Err(Error::code(ErrorCode::NoSuchTagSet).with_bucket(&b)),
        })
        .await
    }

    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        names::validate_tags(&tags, names::MAX_BUCKET_TAGS)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| {
            s.write_bucket_state(&bdir, &b, "tags", Some(&Record { tags, ..Default::default() }.encode()))
        })
        .await
    }

    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| s.write_bucket_state(&bdir, &b, "tags", None)).await
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        let kp = keys::parse_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let d = BodyDigester::new(
            self.inner.opts.etag_mode,
            req.content_md5.is_some(),
            req.checksum.as_ref().map(|c| c.algorithm),
        );
        if req.content_md5.is_none() && req.checksum.as_ref().is_none_or(|c| c.expected.is_none()) {
            // Object lock's integrity rule (a cached state lookup; PUTs with a digest skip it).
            self.inner.check_put_lock(&bdir, bucket, req.lock, false)?;
        }
        // The slower paths run in futures of their own (boxed): kept inline, their states made
        // every PUT's future 2.6 KB, an allocation past the allocator's per-thread cache.
        if kp.dir {
            return Box::pin(self.put_dir(bdir, bucket, key, kp, req, body, d)).await;
        }
        if let Body::Bytes(_) | Body::Empty = &body {
            // In-memory body: write, verify and publish in one blocking call (see `run`).
            if self.inline_io() {
                let _as = self.assume_here()?;
                return self.inner.put_in_memory(&bdir, bucket, key, &kp, &req, &body, d);
            }
            let (b, k) = (bucket.to_string(), key.to_string());
            return Box::pin(self.run(move |s| s.put_in_memory(&bdir, &b, &k, &kp, &req, &body, d))).await;
        }
        Box::pin(async move {
            let (t, dg) = self.receive(bdir.clone(), bucket.to_string(), body, d, req.content_length).await?;
            dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
            let (b, k, r, c) = (bucket.to_string(), key.to_string(), put_record(&req, &dg), req.conditions.clone());
            self.run(move |s| s.publish(&bdir, &b, &k, &kp, t, r, &c)).await
        })
        .await
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.get_object_v(bucket, key, &req);
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.get_object_v(&b, &k, &req)).await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            offloads_io: self.inner.opts.io != IoMode::Inline,
            offloads_in_place: self.inner.opts.io == IoMode::InPlace,
            keeps_body_bytes: false,
        }
    }

    fn get_object_inline(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        self.inline_io().then(|| self.assume_here().and_then(|_as| self.inner.get_object_v(bucket, key, req)))
    }

    fn head_object_inline(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        self.inline_io().then(|| self.assume_here().and_then(|_as| self.inner.head_object_v(bucket, key, req)))
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.head_object_v(bucket, key, &req);
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.head_object_v(&b, &k, &req)).await
    }

    /// s3hpc's file-system extension: see `attrs`.
    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.fs_op(&b, &k, op)).await
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.delete_object_any(bucket, key, lock_bypass());
        }
        let (b, k, by) = (bucket.to_string(), key.to_string(), lock_bypass());
        self.run(move |s| s.delete_object_any(&b, &k, by)).await
    }

    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        let (b, k, v, by) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string), lock_bypass());
        self.run(move |s| s.delete_version(&b, &k, v.as_deref(), by)).await
    }

    async fn get_object_retention(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<Retention>> {
        self.lock_of(bucket, key, v).await.map(|l| l.retention)
    }

    async fn get_object_legal_hold(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<bool>> {
        self.lock_of(bucket, key, v).await.map(|l| l.legal_hold)
    }

    async fn put_object_retention(&self, b: &str, k: &str, v: Option<&str>, r: Option<Retention>) -> Result<()> {
        self.set_lock(b, k, v, Some(r), None).await
    }

    async fn put_object_legal_hold(&self, bucket: &str, key: &str, v: Option<&str>, on: bool) -> Result<()> {
        self.set_lock(bucket, key, v, None, Some(on)).await
    }

    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        // Every current key under the prefix (see SEMANTICS, Versioning: a page reads them all).
        let mut current = Vec::new();
        let mut lreq = ListObjectsRequest { prefix: req.prefix.clone(), max_keys: MAX_KEYS, ..Default::default() };
        loop {
            let page = self.list_objects(bucket, lreq.clone()).await?;
            current.extend(page.objects.into_iter().map(|o| o.key));
            if !page.is_truncated {
                break;
            }
            lreq.start_after = page.next_marker;
        }
        let b = bucket.to_string();
        self.run(move |s| s.list_versions(&b, current, &req)).await
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        let skp = keys::parse_key(src_key)?;
        let dkp = keys::parse_key(dst_key)?;
        req.validate()?;
        let sb = self.inner.bucket_dir(src_bucket)?;
        let db = self.inner.bucket_dir(dst_bucket)?;
        let (sbn, skn, dbn, dkn) =
            (src_bucket.to_string(), src_key.to_string(), dst_bucket.to_string(), dst_key.to_string());
        self.run(move |s| {
            let o = match &req.source_version_id {
                Some(v) => s.open_version(&sbn, &skn, v).map_err(s3hpc_core::versions::copy_source_error)?,
                None => s.open_object(&sb, &sbn, &skn, &skp).map_err(|e| s.mark_deleted(e, &sbn, &skn))?,
            };
            req.source_conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
            if sbn == dbn && skn == dkn && req.changes_nothing() {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
                ));
            }
            s.require_bucket(&db, &dbn)?;
            let meta = req.destination_meta(&o.info.meta);
            let tags = match req.tagging {
                Directive::Copy => o.tags.clone(),
                Directive::Replace(t) => t,
            };
            // The ETag (and checksum) carry over for single-part objects with a record, so the
            // bytes can move in the kernel (copy_file_range / reflink); otherwise hash them.
            // Without an algorithm the new object gets the default checksum when the source's
            // does not carry over (none, or a multipart object's).
            let carried = o.info.checksum.is_some() && o.info.part_sizes.is_empty() && o.has_record;
            let alg = req.checksum_algorithm.or(req.default_checksum.filter(|_| !carried));
            let rehash = alg.is_some() || !o.info.part_sizes.is_empty() || !o.has_record;
            let mut d = BodyDigester::new(s.opts.etag_mode, false, alg);
            let size = o.info.size;
            if dkp.dir {
                let data = match o.content {
                    Content::Inline(v) => v,
                    Content::File(f) => {
                        if size > MAX_DIR_OBJECT_SIZE as u64 {
                            return Err(Error::new(
                                ErrorCode::EntityTooLarge,
                                format!("directory objects hold at most {MAX_DIR_OBJECT_SIZE} bytes here"),
                            ));
                        }
                        let mut v = vec![0u8; size as usize];
                        f.read_exact_at(&mut v, 0)?;
                        v
                    }
                };
                d.update(&data);
                let dg = d.finish();
                let (etag, checksum) = if rehash { (dg.etag, dg.checksum) } else { (o.info.etag, o.info.checksum) };
                let rec = Record { etag, checksum, meta, tags, lock: req.lock, ..Default::default() };
                return s.publish_dir(&db, &dbn, &dkn, &dkp, data, rec, &req.conditions);
            }
            let mut t = s.create_temp(&db, &dbn)?;
            let (etag, checksum) = match o.content {
                Content::Inline(v) => {
                    write_hashing(&mut t, &mut d, &v)?;
                    let dg = d.finish();
                    if rehash { (dg.etag, dg.checksum) } else { (o.info.etag, o.info.checksum) }
                }
                Content::File(f) if rehash => {
                    copy_hashing(&f, 0, size, &mut t, &mut d)?;
                    let dg = d.finish();
                    (dg.etag, dg.checksum)
                }
                Content::File(f) => {
                    sys::copy_range(&f, 0, &t.file, 0, size)?;
                    (o.info.etag, o.info.checksum)
                }
            };
            let rec = Record { etag, checksum, meta, tags, lock: req.lock, ..Default::default() };
            s.publish(&db, &dbn, &dkn, &dkp, t, rec, &req.conditions)
        })
        .await
    }

    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        self.refuse_versioned(bucket, "RenameObject")?;
        self.rename(bucket, src_key, dst_key, req).await
    }

    async fn appends(&self, _bucket: &str) -> bool {
        true
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        self.refuse_versioned(bucket, "PutObject with a write offset")?;
        Box::pin(self.append(bucket, key, offset, req, body)).await
    }

    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.object_acl(&bdir, &b, &k, &kp)).await
    }

    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.set_object_acl(&bdir, &b, &k, &kp, doc.as_deref())).await
    }

    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        let (b, k, v) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string));
        self.run(move |s| s.object_tags(&b, &k, v.as_deref())).await
    }

    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        let kp = keys::parse_key(key)?;
        names::validate_tags(&tags, names::MAX_OBJECT_TAGS)?;
        let (b, k, v) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string));
        self.run(move |s| s.set_object_tags(&b, &k, &kp, v.as_deref(), tags)).await
    }

    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.put_object_tagging(bucket, key, version_id, Vec::new()).await
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            let file_summary = |at: walk::At, key: &str| {
                let Some(fd) = at.fd else {
                    // The directory could not be opened: by path.
                    let p = at.path();
                    let md = s.fs.metadata(&p).ok().filter(|m| m.is_file())?;
                    let rec = s.valid_record(Target::Path(&p), &bdir, key, &md).ok().flatten();
                    return Some(ObjectSummary {
                        key: key.to_string(),
                        size: md.len(),
                        etag: rec.map(|r| r.etag).unwrap_or_else(|| derived_etag(&md)),
                        last_modified: to_time(mtime_ns(&md)),
                    });
                };
                // One fstatat and (unless cached) one getxattrat, relative to the open directory.
                let st = sys::stat_at(fd, at.name).ok()?;
                if st.is_symlink {
                    // A symlink to a file is listed only if it resolves beneath the root (as a
                    // GET would serve it), with its target's size and time; never followed out.
                    let p = at.path();
                    let md = s.fs.metadata(&p).ok().filter(|m| m.is_file())?;
                    let rec = s.valid_record(Target::Path(&p), &bdir, key, &md).ok().flatten();
                    return Some(ObjectSummary {
                        key: key.to_string(),
                        size: md.len(),
                        etag: rec.map(|r| r.etag).unwrap_or_else(|| derived_etag(&md)),
                        last_modified: to_time(mtime_ns(&md)),
                    });
                }
                if !st.is_file {
                    return None;
                }
                let stamp = rcache::Stamp { size: st.size, mtime_ns: st.mtime_ns, ctime_ns: st.ctime_ns };
                // A cached record: decode only its ETag.
                let cached = match s.mode {
                    MetaMode::Xattr => s.rcache.get_etag(st.dev, st.ino, stamp),
                    MetaMode::Sidecar => None,
                };
                let etag = cached.or_else(|| {
                    let rec = s.file_record(
                        st.dev,
                        st.ino,
                        stamp,
                        || sys::get_xattr_at(fd, at.name, || at.path()),
                        || s.sidecar_path(&bdir, key, st.ino),
                    );
                    rec.ok().flatten().map(|r| r.etag)
                });
                Some(ObjectSummary {
                    key: key.to_string(),
                    size: st.size,
                    etag: etag.unwrap_or_else(|| derived_etag_of(st.ino, st.size, st.mtime_ns)),
                    last_modified: to_time(st.mtime_ns),
                })
            };
            let dir_object = |p: &Path, key: &str| {
                let md = s.fs.metadata(p).ok()?;
                let rec = s.valid_record(Target::Path(p), &bdir, key, &md).ok().flatten()?;
                Some(ObjectSummary {
                    key: key.to_string(),
                    size: rec.inline.as_ref().map_or(0, |v| v.len() as u64),
                    etag: rec.etag,
                    last_modified: to_time(rec.mtime_ns),
                })
            };
            match walk::walk(&s.cache, &s.fs, &bdir, &req, file_summary, dir_object) {
                Ok(p) => Ok(p),
                Err(e) if is_missing(&e) => Err(Error::no_such_bucket(&b)),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        keys::parse_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let checksum_type = resolve_checksum_type(req.checksum_algorithm, req.checksum_type)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            s.lock_for_publish(s.bucket_state(&bdir, &b)?.lock.as_ref(), req.lock)?;
            let id = rand_hex(16);
            let dir = s.uploads_dir(&bdir).join(&id);
            if s.acting_uid().is_some() {
                // The parts go to the shared uploads area, so ask the kernel now whether this
                // user may write where the object will be published (else AccessDenied at once,
                // not at CompleteMultipartUpload).
                s.check_writable(&bdir, &b, &k)?;
            }
            s.ensure_uploads_dir(&b)?;
            s.fs.create_dir(&dir)?;
            if s.opts.posix_identity {
                // The parts are the user's data: theirs alone until published.
                s.fs.chmod(&dir, 0o700)?;
            }
            let rec = Record {
                key: k,
                mtime_ns: now_ns(),
                meta: req.meta,
                tags: req.tags,
                algorithm: req.checksum_algorithm,
                checksum_type,
                lock: req.lock,
                ..Default::default()
            };
            let tmp = dir.join("info.tmp");
            let mut f = s.fs.create(&tmp, false)?;
            f.write_all(&rec.encode())?;
            s.sync_file(&f)?;
            s.fs.rename(&tmp, &dir.join("info"))?;
            s.sync_dir(&dir);
            Ok(id)
        })
        .await
    }

    async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo> {
        check_part_number(part_number)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        let (updir, urec) = {
            let (bdir, b, k, id) = (bdir.clone(), b.clone(), k.clone(), id.clone());
            self.run(move |s| s.upload(&bdir, &b, &k, &id)).await?
        };
        s3hpc_core::multipart::check_part_checksum(urec.algorithm, req.checksum.as_ref())?;
        let alg = req.checksum.as_ref().map(|c| c.algorithm).or(urec.algorithm).or(req.default_checksum);
        let d = BodyDigester::new(self.inner.opts.etag_mode, req.content_md5.is_some(), alg);
        let (t, dg) = self.receive(bdir, b, body, d, req.content_length).await?;
        dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
        self.run(move |s| s.publish_part(&updir, &id, part_number, t, dg)).await
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        check_part_number(part_number)?;
        let skp = keys::parse_key(&src.key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let sb = self.inner.bucket_dir(&src.bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let o = match &src.version_id {
                Some(v) => s.open_version(&src.bucket, &src.key, v).map_err(s3hpc_core::versions::copy_source_error)?,
                None => s
                    .open_object(&sb, &src.bucket, &src.key, &skp)
                    .map_err(|e| s.mark_deleted(e, &src.bucket, &src.key))?,
            };
            src.conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
            let (off, len) = s3hpc_core::multipart::copy_source_range(src.range, o.info.size)?;
            let mut d = BodyDigester::new(s.opts.etag_mode, false, urec.algorithm);
            let mut t = s.create_temp(&bdir, &b)?;
            match &o.content {
                Content::File(f) => copy_hashing(f, off, len, &mut t, &mut d)?,
                Content::Inline(v) => write_hashing(&mut t, &mut d, &v[off as usize..(off + len) as usize])?,
            }
            s.publish_part(&updir, &id, part_number, t, d.finish())
        })
        .await
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let mut nums: Vec<u32> =
                s.fs.read_dir(&updir)?
                    .into_iter()
                    .filter_map(|e| {
                        let n = e.name.to_str()?.strip_prefix('p')?;
                        (n.len() == 5).then(|| n.parse::<u32>().ok()).flatten()
                    })
                    .collect();
            nums.sort_unstable();
            let max = if req.max_parts == 0 { 1000 } else { req.max_parts.min(1000) };
            let after = req.part_number_marker.unwrap_or(0);
            let mut parts = Vec::new();
            for n in nums.into_iter().filter(|n| *n > after) {
                if parts.len() > max {
                    break;
                }
                if let Some(p) = s.part_info(&updir, n)? {
                    parts.push(p);
                }
            }
            let is_truncated = parts.len() > max;
            parts.truncate(max);
            let next = if is_truncated { parts.last().map(|p| p.part_number) } else { None };
            Ok(ListPartsPage {
                parts,
                is_truncated,
                next_part_number_marker: next,
                checksum_algorithm: urec.algorithm,
                checksum_type: urec.checksum_type,
            })
        })
        .await
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            let mut all: Vec<UploadInfo> = Vec::new();
            let uploads = s.uploads_dir(&bdir);
            if let Ok(rd) = s.fs.read_dir(&uploads) {
                for e in rd {
                    let Some(id) = e.name.to_str().map(str::to_string) else { continue };
                    if !valid_upload_id(&id) {
                        continue;
                    }
                    let Ok(v) = s.fs.read(&uploads.join(&id).join("info")) else { continue };
                    let Some(r) = Record::decode(&v) else { continue };
                    if r.key.starts_with(req.prefix.as_str()) {
                        all.push(UploadInfo {
                            key: r.key,
                            upload_id: id,
                            initiated: to_time(r.mtime_ns),
                            checksum_algorithm: r.algorithm,
                            checksum_type: r.checksum_type,
                        });
                    }
                }
            }
            Ok(s3hpc_core::listing::page_uploads(&req, all))
        })
        .await
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (parts, conditions) = (&req.parts, &req.conditions);
            // Completes of one upload run one at a time (across processes); a later one answers
            // from the first one's record, or takes over the upload of one that was killed.
            let _lock = if valid_upload_id(&id) {
                s.require_bucket(&bdir, &b)?;
                let lock = s.completion_lock(&bdir, &id)?;
                if let Some(done) = s.completed_upload(&bdir, &id)? {
                    let _ = s.fs.remove_dir_all(&s.completing_dir(&bdir, &id));
                    return done.answer(&k, &id, &req);
                }
                s.resume_completion(&bdir, &id)?;
                Some(lock)
            } else {
                None
            };
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let read_infos = |dir: &Path| -> Result<HashMap<u32, PartInfo>> {
                let mut m = HashMap::new();
                for p in parts {
                    if let Some(i) = s.part_info(dir, p.part_number)? {
                        m.insert(p.part_number, i);
                    }
                }
                Ok(m)
            };
            // A concurrent complete or abort may claim the staging directory while we read it;
            // then the parts look missing, and the answer is NoSuchUpload, not InvalidPart.
            let gone = || s.fs.symlink_metadata(&updir).is_err();
            let infos = read_infos(&updir).map_err(|e| if gone() { Error::no_such_upload(&id) } else { e })?;
            let chosen = validate_completion(parts, |n| infos.get(&n))
                .map_err(|e| if gone() { Error::no_such_upload(&id) } else { e })?;
            // A checksum the client expects but the parts do not give (BadDigest) fails here,
            // before the upload is claimed; it is computed again from the claimed parts below.
            completion_checksum(urec.algorithm, urec.checksum_type, &chosen, &req)?;
            // Claim the upload: a concurrent abort, upload or listing now finds NoSuchUpload.
            let claimed = s.completing_dir(&bdir, &id);
            match s.fs.rename(&updir, &claimed) {
                Ok(()) => {}
                Err(e) if is_missing(&e) => return Err(Error::no_such_upload(&id)),
                Err(e) => return Err(e.into()),
            }
            let mut chosen_parts = Vec::new();
            let result = (|| -> Result<PutObjectOutput> {
                let infos = read_infos(&claimed)?;
                let chosen = validate_completion(parts, |n| infos.get(&n))?;
                chosen_parts.clone_from(&chosen);
                let etag = checksum::multipart_etag(chosen.iter().map(|p| p.etag.as_str()));
                let cks = completion_checksum(urec.algorithm, urec.checksum_type, &chosen, &req)?;
                let rec = Record {
                    etag,
                    part_checksums: s3hpc_core::multipart::kept_part_checksums(cks.as_ref(), &chosen),
                    checksum: cks,
                    part_sizes: chosen.iter().map(|p| p.size).collect(),
                    meta: urec.meta.clone(),
                    tags: urec.tags.clone(),
                    lock: urec.lock,
                    ..Default::default()
                };
                if kp.dir {
                    let total: u64 = chosen.iter().map(|p| p.size).sum();
                    if total > MAX_DIR_OBJECT_SIZE as u64 {
                        return Err(Error::new(
                            ErrorCode::EntityTooLarge,
                            format!("directory objects hold at most {MAX_DIR_OBJECT_SIZE} bytes here"),
                        ));
                    }
                    let mut data = Vec::new();
                    for p in &chosen {
                        data.extend(s.fs.read(&claimed.join(part_name(p.part_number)))?);
                    }
                    return s.publish_dir(&bdir, &b, &k, &kp, data, rec, conditions);
                }
                let t = s.create_temp(&bdir, &b)?;
                let mut off = 0;
                for p in &chosen {
                    let f = s.fs.open(&claimed.join(part_name(p.part_number)))?;
                    sys::copy_range(&f, 0, &t.file, off, p.size)?;
                    off += p.size;
                }
                s.publish(&bdir, &b, &k, &kp, t, rec, conditions)
            })();
            match &result {
                Ok(out) => {
                    // The object is published; the record answers retries from here on. A
                    // complete killed before the record is written leaves the claimed directory,
                    // and the retry publishes the same parts again (same bytes and ETag).
                    let done = s3hpc_core::multipart::CompletedUpload::new(&k, &chosen_parts, out);
                    if s.record_completed(&bdir, &id, &done).is_err() {
                        return result;
                    }
                    let _ = s.fs.remove_dir_all(&claimed);
                }
                Err(_) => {
                    // Failed completions leave the upload as it was.
                    let _ = s.fs.rename(&claimed, &updir);
                }
            }
            result
        })
        .await
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, _) = s.upload(&bdir, &b, &k, &id)?;
            let claimed = s.uploads_dir(&bdir).join(format!(".claimed-{id}-{}", rand_hex(8)));
            match s.fs.rename(&updir, &claimed) {
                Ok(()) => {}
                Err(e) if is_missing(&e) => return Err(Error::no_such_upload(&id)),
                Err(e) => return Err(e.into()),
            }
            s.fs.remove_dir_all(&claimed)?;
            Ok(())
        })
        .await
    }
}
