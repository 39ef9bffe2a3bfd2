//! Writing an object: temp files, parent directories, conditional-write locks and the atomic
//! publishing rename (files and directory objects), and the identity checks writes need.

use super::*;

impl Inner {
    /// A new temp file holding the in-memory body `data`, and its digests. The MD5 of a body of
    /// `LANES_MIN` or more (other costly digests: of `OVERLAP_MIN` or more, on a helper) starts
    /// before the temp file is even created, so the hashing overlaps the file creation as well
    /// as the write.
    pub(crate) fn write_new(
        &self,
        bdir: &Path,
        bucket: &str,
        d: BodyDigester,
        data: &Bytes,
    ) -> Result<(Temp, Digests)> {
        if d.wants_md5() && data.len() as u64 >= LANES_MIN {
            // The MD5 goes to the shared multi-buffer service (in pieces, so concurrent bodies
            // share its SIMD lanes); other checksums, if any, are computed here.
            let mut rest = d;
            rest.detach_md5();
            let mut lane = md5lanes::Lane::new();
            // The whole body is queued at once (it is in memory already), so the hashing runs
            // beside the file creation and the whole write.
            let mut off = 0;
            while off < data.len() {
                let piece = data.slice(off..(off + HASH_PIECE).min(data.len()));
                off += piece.len();
                lane.feed_held(piece);
            }
            let mut t = self.create_temp(bdir, bucket)?;
            write_hashing(&mut t, &mut rest, data)?;
            let dg = finish_lane(rest, lane, &t)?;
            return Ok((t, dg));
        }
        if d.is_costly()
            && data.len() as u64 >= OVERLAP_MIN
            && let Some(ticket) = hashpool::ticket()
        {
            let body = data.clone();
            let done = ticket
                .run(move || {
                    let mut d = d;
                    d.update(&body);
                    d
                })
                .map_err(|e| Error::internal(format!("cannot start a hashing thread: {e}")))?;
            let mut t = self.create_temp(bdir, bucket)?;
            write_pieces(&mut t.file, data)?;
            let d = wait_hash(&done, &t)?;
            return Ok((t, d.finish()));
        }
        let mut t = self.create_temp(bdir, bucket)?;
        let d = write_bytes(&mut t, d, data)?;
        Ok((t, d))
    }

    /// PutObject of an in-memory body: write, verify and publish, on the calling thread.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_in_memory(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
        req: &PutObjectRequest,
        body: &Body,
        d: BodyDigester,
    ) -> Result<PutObjectOutput> {
        let (t, dg) = match body {
            Body::Bytes(data) => self.write_new(bdir, bucket, d, data)?,
            _ => (self.create_temp(bdir, bucket)?, d.finish()),
        };
        dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
        let r = put_record(req, &dg);
        self.publish(bdir, bucket, key, kp, t, r, &req.conditions)
    }

    /// A new temp file in the gateway's staging area (`ROOT/.s3hpc/staging/tmp`, see `state`;
    /// same file system as the objects, so the publishing rename is atomic). Acting as a user:
    /// in that user's own directory there (mode 0700, made by the user through the store), so
    /// no one else can read a body while it is written, and no local user can reach it at all.
    pub(crate) fn create_temp(&self, _bdir: &Path, _bucket: &str) -> Result<Temp> {
        let dir = self.temp_dir()?;
        let name = self.temp_name();
        let file = sys::create_at(&dir, &name)?;
        Ok(Temp { dir, name, file, armed: true })
    }

    /// May this thread's identity create `key` (write and search the key's directory, or the
    /// bucket's where that does not exist yet)? `faccessat2(AT_EACCESS)` checks with the fsuid,
    /// fsgid and groups the thread acts as.
    pub(crate) fn check_writable(&self, bdir: &Path, bucket: &str, key: &str) -> Result<()> {
        let dir = match self.key_parent(bdir, bucket, key)? {
            Some(d) => d,
            None => match self.key_parent(bdir, bucket, "")? {
                Some(d) => d,
                None => return Err(Error::no_such_bucket(bucket)),
            },
        };
        sys::access_dir(&dir, libc::W_OK | libc::X_OK).map_err(Error::from)
    }

    /// The uid this thread acts as, when it is not the process's (`posix_identity`).
    pub(crate) fn acting_uid(&self) -> Option<u32> {
        if !self.opts.posix_identity {
            return None;
        }
        ident::active_uid()
    }

    /// Create the internal directory `dir` (below a bucket's `.s3hpc/`: the versions area and
    /// its key directories) shared by every user of the bucket: each missing component is made
    /// by the gateway, none is followed if it is a symlink, and each must be a directory the
    /// gateway owns (else AccessDenied: a user put it there); with `posix_identity` its mode is
    /// set to 1777 (like /tmp) on the opened directory, never by path. The file system's error
    /// comes as it came (inner), for callers that retry a directory moved away meanwhile;
    /// [`internal_dir_error`] is what it answers.
    pub(crate) fn internal_dir_io(&self, dir: &Path) -> Result<io::Result<()>> {
        let rel = dir.strip_prefix(&self.root).map_err(|_| Error::internal("internal directory outside the root"))?;
        let mode = if self.opts.posix_identity { 0o1777 } else { 0o755 };
        let r = self.as_gateway(|| -> io::Result<()> {
            let mut comps = rel.components();
            let Some(std::path::Component::Normal(bucket)) = comps.next() else {
                return Err(io::Error::other("internal directory outside a bucket"));
            };
            let bucket = bucket.to_str().ok_or_else(|| io::Error::other("bucket name not UTF-8"))?;
            let mut cur = sys::open_dir_nofollow(&self.root_fd, bucket)?;
            let bucket_owner = cur.metadata()?.uid();
            let mut internal = false;
            for (i, c) in comps.enumerate() {
                let std::path::Component::Normal(name) = c else {
                    return Err(io::Error::other("bad internal path"));
                };
                let name = name.to_str().ok_or_else(|| io::Error::other("name not UTF-8"))?;
                internal |= name == INTERNAL;
                cur = if i == 0 && name == INTERNAL {
                    // `BUCKET/.s3hpc` itself may be the bucket owner's: gateways before the
                    // moat made it as the user under --identity posix. Everything below it must
                    // be the gateway's.
                    sys::owned_dir_by(&cur, name, mode, self.state.uid, bucket_owner)?
                } else if internal {
                    sys::owned_dir(&cur, name, mode, self.state.uid)?
                } else {
                    sys::open_dir_nofollow(&cur, name)?
                };
            }
            Ok(())
        })?;
        Ok(r)
    }

    /// Create the parent directories of an object path inside the bucket.
    ///
    /// A concurrent delete (here or in another process) may prune an empty ancestor while the
    /// chain is being created, which shows as ENOENT; that is retried while the bucket exists.
    pub(crate) fn make_parents(&self, bdir: &Path, bucket: &str, key: &str, parent: &Path) -> Result<()> {
        let mut attempts = 0;
        loop {
            match self.fs.create_dir_all(parent) {
                Ok(()) => return Ok(()),
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists
                        || e.raw_os_error() == Some(libc::ENOTDIR)
                        || e.raw_os_error() == Some(libc::EEXIST) =>
                {
                    return Err(conflict(key));
                }
                Err(e) if is_missing(&e) => {
                    attempts += 1;
                    if attempts < 16 && self.bucket_exists(bdir) {
                        continue;
                    }
                    return Err(self.missing(bdir, bucket, key));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// An exclusive lock that holds across processes and hosts (one of 4096 lock files per
    /// bucket, chosen by key, in the gateway's state: `ROOT/.s3hpc/locks/BUCKET/`), for the
    /// check-then-act of conditional writes, versioned writes, completes and renames. The lock
    /// primitive is `--lock-mode`'s (OFD byte-range locks by default: cluster-wide where the file
    /// system's POSIX locks are, see docs/DEPLOY.md); no local user can open these files.
    pub(crate) fn cross_process_lock(&self, bdir: &Path, key: &str) -> Result<Option<fs::File>> {
        let lock = self.lock_stripe(bdir, lock_stripe_of(key))?;
        self.refresh_key(bdir, key);
        Ok(lock)
    }

    /// What is decided under a key's lock must come from the file system, not from this node's
    /// caches of it: on a root shared by nodes (see `probe`), another node may just have replaced
    /// or removed the key, and this node's cached directory entry would still lead to the old
    /// inode (see [`sys::refresh_entry`]). Called with the key's lock held; nothing to do on a
    /// local file system, whose caches are the file system.
    pub(crate) fn refresh_key(&self, bdir: &Path, key: &str) {
        if self.root_local {
            return;
        }
        let bucket = state::bucket_name(bdir);
        let trimmed = key.strip_suffix('/').unwrap_or(key);
        let (dir, name) = match trimmed.rfind('/') {
            Some(i) => (format!("{bucket}/{}", &trimmed[..i]), &trimmed[i + 1..]),
            None => (bucket.to_string(), trimmed),
        };
        let r = self.as_gateway(|| sys::refresh_entry(&self.root_fd, &dir, name));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) | Err(e) => tracing::debug!(key, "directory entry not refreshed: {e}"),
        }
        // The attributes too (size, times, link count), past the client's attribute cache.
        sys::revalidate(&self.root_fd, &format!("{bucket}/{key}"));
    }

    /// The lock of one stripe (see [`Self::cross_process_lock`]). Two locks of one stripe taken
    /// by one thread wait for each other (the locks belong to the open file): callers that
    /// need several take each distinct stripe once, in ascending order. The wait is bounded
    /// (`lock_timeout`): past it the request answers 503 SlowDown, so waiters never pile up.
    /// `None` with `--lock-mode local` (this process's own locks only).
    pub(crate) fn lock_stripe(&self, bdir: &Path, stripe: u64) -> Result<Option<fs::File>> {
        let kind = match self.opts.lock_mode {
            LockMode::Local => return Ok(None),
            LockMode::None => {
                return Err(Error::not_implemented(
                    "conditional and versioned writes need a lock (--lock-mode none is set)",
                ));
            }
            LockMode::Fcntl => sys::LockKind::Fcntl,
            LockMode::Flock => sys::LockKind::Flock,
        };
        let f = self.lock_file(bdir, stripe)?;
        let deadline = std::time::Instant::now() + self.opts.lock_timeout;
        if !sys::lock_until(&f, kind, deadline)? {
            return Err(Error::new(ErrorCode::SlowDown, "Please reduce your request rate."));
        }
        Ok(Some(f))
    }

    /// Is `dir` a directory that is not a directory object? (Then it may be removed when empty.)
    pub(crate) fn removable_dir(&self, bdir: &Path, dir: &Path) -> bool {
        let Ok(md) = self.fs.metadata(dir) else { return false };
        if !md.is_dir() {
            return false;
        }
        let key = dir_key(bdir, dir);
        !matches!(self.valid_record(Target::Path(dir), bdir, &key, &md), Ok(Some(_)) | Err(_))
    }

    /// Is `dir` a directory object (a directory with a valid record)?
    pub(crate) fn is_dir_object(&self, bdir: &Path, dir: &Path) -> bool {
        let Ok(md) = self.fs.metadata(dir) else { return false };
        md.is_dir() && matches!(self.valid_record(Target::Path(dir), bdir, &dir_key(bdir, dir), &md), Ok(Some(_)))
    }

    /// Writes, deletes and tag changes of `key` act on paths inside the bucket, and a path
    /// resolves through whatever symlinks POSIX users placed there: refuse (AccessDenied) a key
    /// whose directory leads out of the root, by the rules reads follow (symlinks that stay
    /// inside the root are followed). For a file key the directory holding it is checked (its own
    /// name is replaced or removed, never followed); for a directory key (`a/b/`) the directory
    /// itself, whose xattr is written. Missing directories pass (they are created inside); a key
    /// directly in the bucket has nothing to check for a file. One `openat2`; the directory it
    /// opened is returned (`None`: missing, or nothing checked) so that a publish renames into it
    /// without a second lookup and without a window for a swap (see SEMANTICS, Limits, for what a
    /// concurrent swap can still do elsewhere).
    pub(crate) fn check_key_dir(&self, bucket: &str, key: &str) -> Result<Option<File>> {
        let dir = match key.strip_suffix('/') {
            Some(d) => d,
            None => match key.rfind('/') {
                Some(i) => &key[..i],
                None => return Ok(None),
            },
        };
        match sys::open_dir_beneath2(&self.root_fd, bucket, dir) {
            Ok(d) => Ok(d),
            Err(e) if is_missing(&e) || e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The directory a file key's name goes in, opened beneath the root (`O_PATH`): the one
    /// [`Self::check_key_dir`] opened, or the bucket itself for a key without '/'. `None`: it
    /// does not exist (yet).
    pub(crate) fn key_parent(&self, bdir: &Path, bucket: &str, key: &str) -> Result<Option<File>> {
        if key.contains('/') {
            return self.check_key_dir(bucket, key);
        }
        match sys::open_dir_beneath2(&self.root_fd, bucket, ".") {
            Ok(Some(d)) => Ok(Some(d)),
            Ok(None) => Ok(File::open(bdir).ok()),
            Err(e) if is_missing(&e) || e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Publish the temp file `t` as `key` (at `dst`) with one rename (create-only with
    /// RENAME_NOREPLACE), from its directory into the directory `parent` (see
    /// [`Self::key_parent`]): both are open descriptors, so no path is looked up again and no
    /// concurrent swap of a directory for a symlink can redirect it. Missing parents are created
    /// beneath the root first.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rename_into_place(
        &self,
        t: &Temp,
        dst: &Path,
        bdir: &Path,
        bucket: &str,
        key: &str,
        create_only: bool,
        mut parent: Option<File>,
    ) -> Result<()> {
        let name = key.rsplit('/').next().unwrap_or(key);
        for _ in 0..8 {
            let e = match &parent {
                Some(p) => match sys::rename_between(&t.dir, &t.name, p, name, create_only) {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                },
                None => io::Error::from_raw_os_error(libc::ENOENT),
            };
            match e.raw_os_error() {
                // ESTALE: the directory we held is one another node removed (it pruned the
                // prefix empty) while this node's cached entries still led to it. Looking its
                // path up afresh drops those entries (the kernel retries a path walk that meets
                // ESTALE from the root, see `sys::revalidate`); then it is made again below.
                Some(libc::ENOENT) | Some(libc::ESTALE) => {
                    if e.raw_os_error() == Some(libc::ESTALE)
                        && let Some(dir) = dst.parent().and_then(|p| p.strip_prefix(&self.root).ok())
                    {
                        sys::revalidate(&self.root_fd, &dir.to_string_lossy());
                    }
                    if !sys::exists_at(&t.dir, &t.name) {
                        return Err(Error::internal("temp file vanished before publish (removed as stale?)"));
                    }
                    // Temp files no longer live in the bucket: a missing bucket shows here.
                    self.require_bucket(bdir, bucket)?;
                    self.make_parents(bdir, bucket, key, dst.parent().expect("object path has a parent"))?;
                    // Created (or deleted and re-created by someone else): look it up afresh.
                    parent = self.key_parent(bdir, bucket, key)?;
                }
                Some(libc::EEXIST) | Some(libc::EISDIR) | Some(libc::ENOTEMPTY) => {
                    if self.fs.symlink_metadata(dst).is_ok_and(|m| m.is_dir()) {
                        if self.removable_dir(bdir, dst) && self.fs.remove_dir(dst).is_ok() {
                            continue;
                        }
                        return Err(conflict(key));
                    }
                    if create_only {
                        return Err(Error::code(ErrorCode::PreconditionFailed)
                            .with_resource(key.to_string())
                            .with("Condition", "If-None-Match"));
                    }
                    return Err(e.into());
                }
                Some(libc::ENOTDIR) => return Err(conflict(key)),
                _ => return Err(e.into()),
            }
        }
        Err(Error::internal("could not publish the object (directories kept changing)"))
    }

    /// Give the temp file its record, sync it, check the write conditions and rename it into
    /// place. The temp file is removed on any failure.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn publish(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
        mut t: Temp,
        mut rec: Record,
        conditions: &Conditions,
    ) -> Result<PutObjectOutput> {
        let parent = self.key_parent(bdir, bucket, key)?;
        if parent.is_none() {
            // Temp files no longer live in the bucket: a missing bucket shows here (before a
            // sidecar record could make directories in it).
            self.require_bucket(bdir, bucket)?;
        }
        // Versioning (checked once a second per bucket, see `versions`): the new version's id
        // goes into the record; the previous version is kept under the locks below.
        // Object lock (cached with it): the new version's retention and legal hold.
        let bstate = if kp.dir { Default::default() } else { self.bucket_state(bdir, bucket)? };
        let vstate = bstate.versioning;
        if bstate.lock.is_some() || !rec.lock.is_empty() {
            rec.lock = self.lock_for_publish(bstate.lock.as_ref(), rec.lock)?;
        }
        let md = self.written_metadata(&t.file)?;
        rec.size = md.len();
        rec.mtime_ns = mtime_ns(&md);
        rec.ino = md.ino();
        let sidecar = || self.sidecar_path(bdir, key, rec.ino);
        let mut enc = self.set_record_with(Target::File(&t.file), sidecar, &rec)?;
        self.sync_file(&t.file)?;
        let dst = join(bdir, &kp.rel);
        let leaf = key.rsplit('/').next().unwrap_or(key);
        let old_ino = if self.mode == MetaMode::Sidecar {
            parent.as_ref().and_then(|p| sys::open_path_at(p, leaf)).and_then(|f| f.metadata().ok()).map(|m| m.ino())
        } else {
            None
        };
        let create_only = conditions.if_none_match.as_deref().map(str::trim) == Some("*");
        let locked = !conditions.is_empty() || vstate.is_some();
        {
            let _g = locked.then(|| self.lock(&dst));
            let _flock = if locked { self.cross_process_lock(bdir, key)? } else { None };
            if !conditions.is_empty() {
                let cur = self.current(bdir, bucket, key, kp)?;
                conditions.check_write(cur.as_ref().map(|(e, t)| (e.as_str(), *t)))?;
            }
            if let Some(st) = vstate {
                rec.version_id = self.version_for_publish(bdir, key, st)?;
                if rec.version_id.is_some() {
                    enc = self.set_record_with(Target::File(&t.file), sidecar, &rec)?;
                }
            }
            // The object this PUT replaces: held open across the rename, so its last reference
            // (and the freeing of its blocks: ~0.5 ms for 1 MiB on ext4) goes to the reaper
            // instead of happening inside the rename.
            let old = (rec.size >= DEFER_FREE_MIN && !create_only)
                .then(|| parent.as_ref().and_then(|p| sys::open_path_at(p, leaf)))
                .flatten();
            let r = self.rename_into_place(&t, &dst, bdir, bucket, key, create_only, parent);
            if r.is_err() && self.mode == MetaMode::Sidecar {
                let _ = self.fs.remove_file(&sidecar());
            }
            self.cache.note_key(bdir, key);
            r?;
            if let Some(old) = old {
                reaper::release(old);
            }
        }
        t.armed = false;
        if let Some(enc) = enc {
            self.cache_published(&t.file, &rec, &enc);
        }
        if let Some(old) = old_ino.filter(|o| *o != rec.ino) {
            let _ = self.fs.remove_file(&self.sidecar_path(bdir, key, old));
        }
        if self.opts.durability == Durability::Strict
            && let Some(p) = dst.parent()
        {
            self.sync_dir(p);
        }
        Ok(PutObjectOutput {
            etag: rec.etag,
            checksum: rec.checksum,
            size: rec.size,
            last_modified: to_time(rec.mtime_ns),
            version_id: rec.version_id,
        })
    }

    /// Remember the record of a file just published, so a GET soon after needs no xattr read:
    /// only where ctimes are exact, with the stamp taken after the publishing rename and the
    /// xattr read back after that stamp (another process may have changed it in between; any
    /// change after the stamp moves the ctime, and the entry then simply misses).
    /// `enc`: the encoding the publish wrote into the xattr.
    pub(crate) fn cache_published(&self, f: &File, rec: &Record, enc: &[u8]) {
        if !self.ctime_exact {
            return;
        }
        let Ok(md) = f.metadata() else { return };
        if md.dev() != self.root_dev || md.ino() != rec.ino || md.len() != rec.size || mtime_ns(&md) != rec.mtime_ns {
            return;
        }
        if let Ok(Some(on_disk)) = sys::fget_xattr(f)
            && on_disk == enc
        {
            let stamp = rcache::Stamp { size: md.len(), mtime_ns: mtime_ns(&md), ctime_ns: ctime_ns(&md) };
            self.rcache.put(md.dev(), md.ino(), stamp, rec, enc);
        }
    }

    /// Publish a directory object (`key/`): the directory itself, with its record (and its
    /// small content) in the directory's xattr/sidecar.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn publish_dir(
        &self,
        bdir: &Path,
        bucket: &str,
        key: &str,
        kp: &KeyPath,
        data: Vec<u8>,
        mut rec: Record,
        conditions: &Conditions,
    ) -> Result<PutObjectOutput> {
        self.require_bucket(bdir, bucket)?;
        self.check_key_dir(bucket, key)?;
        if !rec.lock.is_empty() {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "object lock is not supported on directory objects (keys ending in '/') by s3hpc",
            ));
        }
        let path = bdir.join(&kp.rel);
        let _g = self.lock(&path);
        if !conditions.is_empty() {
            let cur = self.current(bdir, bucket, key, kp)?;
            conditions.check_write(cur.as_ref().map(|(e, t)| (e.as_str(), *t)))?;
        }
        match self.fs.create_dir_all(&path) {
            Ok(()) => {}
            Err(_) if self.fs.metadata(&path).is_ok_and(|m| m.is_dir()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Err(conflict(key));
            }
            Err(e) => return Err(e.into()),
        }
        let md = self.fs.metadata(&path)?;
        if !md.is_dir() {
            return Err(conflict(key));
        }
        rec.size = data.len() as u64;
        rec.mtime_ns = now_ns();
        rec.ino = md.ino();
        rec.inline = (!data.is_empty()).then_some(data);
        self.cache.note_key(bdir, key);
        self.set_record(Target::Path(&path), &self.sidecar_path(bdir, key, md.ino()), &rec)?;
        self.sync_dir(&path);
        if let Some(p) = path.parent() {
            self.sync_dir(p);
        }
        Ok(PutObjectOutput {
            version_id: None,
            etag: rec.etag,
            checksum: rec.checksum,
            size: rec.size,
            last_modified: to_time(rec.mtime_ns),
        })
    }
}

/// The lock stripe of `key` (see [`Inner::cross_process_lock`]).
pub(crate) fn lock_stripe_of(key: &str) -> u64 {
    twox_hash::XxHash3_64::oneshot(key.as_bytes()) % 4096
}

/// What a failure to make an internal directory answers: a symlink or a directory the gateway
/// may not enter on the way is AccessDenied.
pub(crate) fn internal_dir_error(e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::ELOOP) {
        Error::new(ErrorCode::AccessDenied, format!("Access Denied ({e})"))
    } else {
        e.into()
    }
}
