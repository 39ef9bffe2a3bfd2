//! The file system's logic for files' bytes: create, read, write, flush, fsync and release as
//! plain functions of the mount's state ([`Ctx`]) that answer a value or an errno (the fuser
//! adapter, `fuse.rs`, translates). Reads prefetch through the handle's [`Reader`]; writes go
//! into the handle's [`Writer`], whose upload completes at the opener's close.

use std::future::Future;
use std::pin::Pin;

use super::*;

/// The rest of a write once its bytes are taken: the wait for an upload slot or an append.
pub(super) type Written = Pin<Box<dyn Future<Output = Result<u32, Errno>> + Send>>;

/// What create gives the kernel: the new file's attributes and its write handle.
pub(super) struct Created {
    pub attr: FileAttr,
    pub fh: u64,
}

/// What open gives the kernel: the handle, and whether its page cache of the file may stay
/// (it holds this very ETag's bytes).
pub(super) struct Opened {
    pub fh: u64,
    pub keep_cache: bool,
}

/// Who creates a file and how: the caller's uid, gid and pid, the mode asked for and the umask.
pub(super) struct Creator {
    pub uid: u32,
    pub gid: u32,
    pub pid: u32,
    pub mode: u32,
    pub umask: u32,
}

impl Ctx {
    /// create: a new file of this mount, written through the handle made here and uploaded at
    /// its close; `EEXIST` for a name the table or the bucket holds (a file: replaced at close
    /// under `--allow-overwrite`). With `--posix-attrs` the file is made in the store first
    /// ([`Ctx::posix_create`]).
    pub(super) async fn create(self: &Arc<Self>, parent: u64, name: &str, c: Creator) -> Result<Created, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if self.too_long(name) {
            return Err(Errno::ENAMETOOLONG);
        }
        if self.posix() {
            return self.posix_create(parent, name, c).await;
        }
        let now_t = SystemTime::now();
        let new_meta = self.opts.s3fs_metadata.then(|| meta::S3fsAttr {
            mtime: Some(now_t),
            atime: Some(now_t),
            ctime: Some(now_t),
            ..meta::S3fsAttr::new(libc::S_IFREG, c.mode & !c.umask, (c.uid, c.gid))
        });
        let now = Instant::now();
        let key = {
            let t = lock(&self.table);
            if let Some(ino) = t.child(parent, name)
                && self.fresh(&t.inodes[&ino], now)
            {
                return Err(Errno::EEXIST);
            }
            let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
            let key = format!("{pfx}{name}");
            if t.negative.get(&(parent, name.to_string())).is_some_and(|u| *u > now) {
                drop(t);
                return create_local(self, parent, name, key, c.pid, None, new_meta);
            }
            key
        };
        match self.remote_lookup(&key).await {
            Ok(Found::Nothing) => create_local(self, parent, name, key, c.pid, None, new_meta),
            Ok(Found::File { .. }) if self.opts.allow_overwrite => {
                create_local(self, parent, name, key, c.pid, None, new_meta)
            }
            Ok(found) => {
                lock(&self.table).install(parent, name, found, self.until());
                Err(Errno::EEXIST)
            }
            Err(e) => Err(errno(&e, "create", &key)),
        }
    }

    /// open of the file `ino` by the process `pid` with the `open(2)` flags `flags`: a reader
    /// (`O_RDONLY`, and `O_RDWR` without `O_TRUNC` or `O_APPEND`: S3 cannot change an object in
    /// place), a writer of a new object (`O_TRUNC`, under `--allow-overwrite`), or an appender
    /// (writing without `O_TRUNC`, where the store appends). One writer per file, and no
    /// reader until its object exists (`EPERM`), after waiting up to 0.5 s for a previous
    /// writer's release (the kernel sends it after close() returned: `: > f; echo x > f`).
    pub(super) async fn open(self: &Arc<Self>, ino: u64, flags: i32, pid: u32) -> Result<Opened, Errno> {
        let trunc = flags & libc::O_TRUNC != 0;
        let append = flags & libc::O_APPEND != 0;
        let write = match flags & libc::O_ACCMODE {
            libc::O_RDONLY => false,
            libc::O_WRONLY => true,
            _ => trunc || append,
        };
        if write && self.opts.read_only {
            return Err(Errno::EROFS);
        }
        // What the table says: open at once, or ask the store (`trunc_in_store`: the store
        // truncates, `--posix-attrs`; else the object's attributes or the store's appending).
        let mut waited = false;
        let (key, trunc_in_store) = loop {
            let writing = {
                let mut t = lock(&self.table);
                let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
                if i.kind == Kind::Dir {
                    return Err(Errno::EISDIR);
                }
                if let Local::Writing(_) = i.local {
                    if waited {
                        // One writer, and no reader until the object exists.
                        return Err(Errno::EPERM);
                    }
                    true
                } else {
                    if write && !trunc {
                        break (i.key.clone(), false);
                    }
                    if write && self.posix() && self.opts.allow_overwrite {
                        break (i.key.clone(), true);
                    }
                    if write {
                        return self.open_trunc(&mut t, ino, pid);
                    }
                    if i.fresh(Instant::now()) {
                        let fh = open_reader(self, &mut t, ino);
                        return Ok(opened(&mut t, ino, fh));
                    }
                    break (i.key.clone(), false);
                }
            };
            if writing {
                self.released(ino).await;
                waited = true;
            }
        };
        if trunc_in_store {
            return self.posix_open_trunc(ino, key, pid).await;
        }
        if write {
            return open_appender(self, ino, key, append, pid).await;
        }
        let r = self.head(&key).await;
        let mut t = lock(&self.table);
        match r {
            Ok(_) if t.inodes.get(&ino).is_some_and(|i| i.key != key) => {
                // Renamed by this mount while the HEAD was out: open what the table knows (the
                // rename kept the object, ETag included).
                let fh = open_reader(self, &mut t, ino);
                Ok(opened(&mut t, ino, fh))
            }
            Ok(Some(info)) => {
                let until = self.until();
                let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
                i.take_head(info, until);
                let fh = open_reader(self, &mut t, ino);
                Ok(opened(&mut t, ino, fh))
            }
            Ok(None) => Err(Errno::ENOENT),
            Err(e) => Err(errno(&e, "open", &key)),
        }
    }

    /// open with `O_TRUNC` of a file of the bucket (not being written): a writer of a new
    /// object, which keeps the file's mode and owner under `--metadata s3fs`.
    fn open_trunc(&self, t: &mut Table, ino: u64, pid: u32) -> Result<Opened, Errno> {
        let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
        if !self.opts.allow_overwrite {
            tracing::info!("s3hpc mount: open {:?} with O_TRUNC refused: overwriting needs --allow-overwrite", i.key);
            return Err(Errno::EPERM);
        }
        let mut writer = Writer::new(self.wctx.clone(), i.key.clone(), pid);
        if self.opts.s3fs_metadata
            && let Some(m) = &i.meta
        {
            // The new object keeps the file's mode and owner.
            let now = SystemTime::now();
            writer.meta = meta::S3fsAttr { mtime: Some(now), ctime: Some(now), ..m.clone() }.object_meta();
        }
        let fh = self.new_fh(Handle::Write { ino, writer: Mutex::new(writer) });
        let (parent, name) = (i.parent, i.name.clone());
        let i = t.inodes.get_mut(&ino).expect("present");
        i.local = Local::Writing(fh);
        i.opens += 1;
        t.local_children.entry(parent).or_default().insert(name);
        Ok(Opened { fh, keep_cache: false })
    }

    /// Read `size` bytes at `offset` through the read handle `fh`: from the prefetched chunks
    /// when the reader goes forward, else one ranged GET.
    pub(super) async fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Bytes, Errno> {
        let h = self.handle(FileHandle(fh)).ok_or(Errno::EBADF)?;
        let Handle::Read { reader, .. } = &*h else {
            return Err(Errno::EBADF);
        };
        let (plan, key, etag) = {
            let mut r = lock(reader);
            let plan = r.plan(offset, size, &self.store, &self.opts.bucket, &self.rt);
            (plan, r.key.clone(), r.etag.clone())
        };
        match plan {
            Plan::Empty => Ok(Bytes::new()),
            Plan::Chunks { parts, offset, end } => {
                let r = match assemble_ready(&parts, offset, end) {
                    Some(r) => r,
                    None => assemble_wait(parts, offset, end).await,
                };
                r.map_err(|e| {
                    lock(reader).failed();
                    errno(&e, "read", &key)
                })
            }
            Plan::Direct { offset, end } => {
                let bucket = self.opts.bucket.clone();
                crate::read::get_range(self.store.clone(), bucket, key.clone(), etag, offset, end)
                    .await
                    .map_err(|e| errno(&e, "read", &key))
            }
        }
    }

    /// Take `data` written at `offset` through the write handle `fh`; the future answers when
    /// the write may be acknowledged (an upload slot is free, an appender's append is in).
    pub(super) fn write(&self, fh: u64, offset: u64, data: &[u8]) -> Written {
        let n = data.len() as u32;
        let Some(h) = self.handle(FileHandle(fh)) else {
            return Box::pin(std::future::ready(Err(Errno::EBADF)));
        };
        let Handle::Write { writer, .. } = &*h else {
            return Box::pin(std::future::ready(Err(Errno::EBADF)));
        };
        let mut w = lock(writer);
        let r = match w.write(offset, data) {
            Ok(Wait::Done) => Ok(None),
            Ok(Wait::Slot(rx)) => Ok(Some(Box::pin(async move {
                let _ = rx.await;
                Ok(n)
            }) as Written)),
            Ok(Wait::Append(append)) => {
                // The write that lost to another writer fails itself (EIO, the log names
                // InvalidWriteOffset), so that `echo >> log` reports it.
                let key = w.key.clone();
                let h = h.clone();
                Ok(Some(Box::pin(async move {
                    match append.await {
                        Ok(out) => {
                            if let Handle::Write { writer, .. } = &*h {
                                lock(writer).appended(out.size);
                            }
                            Ok(n)
                        }
                        Err(e) => Err(errno(&e, "append", &key)),
                    }
                }) as Written))
            }
            Err(e) => Err(match e {
                WriteError::NotSequential => {
                    tracing::info!(
                        "s3hpc mount: write to {:?} at {offset} refused: only sequential writes (next offset {})",
                        w.key,
                        w.offset
                    );
                    Errno::EINVAL
                }
                WriteError::Closed => Errno::EPERM,
                WriteError::Failed => Errno::EIO,
                WriteError::TooLarge => Errno::EFBIG,
            }),
        };
        drop(w);
        match r {
            Ok(None) => Box::pin(std::future::ready(Ok(n))),
            Ok(Some(wait)) => wait,
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }

    /// close() of a descriptor of `fh` by the process `pid`: the opener's close completes the
    /// object (another process closing an inherited descriptor does not: the opener may still
    /// write), and reports the upload's errors.
    pub(super) async fn flush(&self, fh: u64, pid: u32) -> Result<(), Errno> {
        let Some(h) = self.handle(FileHandle(fh)) else {
            return Ok(());
        };
        let Handle::Write { ino, writer } = &*h else {
            return Ok(());
        };
        let done = {
            let mut w = lock(writer);
            // Nothing written yet: a shell's `>` redirection opens, dup2s and closes the first
            // descriptor before writing through the copy, so wait for a later close. (An
            // appender has nothing to wait for: its object exists already.)
            if w.opener_pid != pid && !w.is_completing() || w.untouched() && !w.is_appender() {
                return Ok(());
            }
            Done::of(&mut w)
        };
        // The opener's close: the kernel sends the release later, after close() returned, so
        // the file stops being written here now (a next open may append at once).
        self.finish_write(*ino, fh, done, true).await
    }

    /// fsync of `fh`: a new file's object is completed (no writes after it), an appender's
    /// appends are all in.
    pub(super) async fn fsync(&self, fh: u64) -> Result<(), Errno> {
        let Some(h) = self.handle(FileHandle(fh)) else {
            return Ok(());
        };
        let Handle::Write { ino, writer } = &*h else {
            return Ok(());
        };
        let done = Done::of(&mut lock(writer));
        self.finish_write(*ino, fh, done, false).await
    }

    /// The last descriptor of `fh` is gone: a writer completes (if the opener's close did not),
    /// the inode loses an open.
    pub(super) async fn release(&self, fh: u64) -> Result<(), Errno> {
        let Some(h) = lock(&self.handles).remove(&fh) else {
            return Ok(());
        };
        let (ino, done) = match &*h {
            Handle::Read { ino, .. } => (*ino, None),
            Handle::Write { ino, writer } => (*ino, Some(Done::of(&mut lock(writer)))),
            Handle::Dir(_) => return Ok(()),
        };
        let r = match done {
            Some(done) => self.finish_write(ino, fh, done, true).await,
            None => Ok(()),
        };
        let mut t = lock(&self.table);
        if let Some(i) = t.inodes.get_mut(&ino) {
            i.opens = i.opens.saturating_sub(1);
        }
        t.drop_if_unused(ino);
        drop(t);
        drop(h);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inode::ROOT;
    use s3hpc_core::memory::MemoryStore;
    use s3hpc_core::{GetObjectRequest, Store};

    fn creator() -> Creator {
        Creator { uid: 1, gid: 2, pid: 42, mode: 0o644, umask: 0o022 }
    }

    #[tokio::test]
    async fn create_write_close_then_read() {
        let s = Arc::new(MemoryStore::new());
        s.create_bucket("bkt").await.unwrap();
        let mut o = MountOptions::new("bkt");
        o.validate().unwrap();
        let store: DynStore = s.clone();
        let ctx = S3Fs::new(store, o, tokio::runtime::Handle::current()).ctx;
        let Created { attr, fh } = ctx.create(ROOT, "f", creator()).await.unwrap();
        assert_eq!((attr.kind, attr.size), (FileType::RegularFile, 0));
        assert_eq!(ctx.write(fh, 0, b"hello ").await.unwrap(), 6);
        assert_eq!(ctx.write(fh, 6, b"world").await.unwrap(), 5);
        // Only sequential writes; a second create of the name is EEXIST meanwhile.
        assert_eq!(ctx.write(fh, 3, b"x").await.unwrap_err(), Errno::EINVAL);
        assert_eq!(ctx.create(ROOT, "f", creator()).await.err(), Some(Errno::EEXIST));
        // stat while writing: the size written so far.
        assert_eq!(ctx.getattr(attr.ino.0).await.unwrap().size, 11);
        // Another process closing an inherited descriptor does not complete the object.
        ctx.flush(fh, 7).await.unwrap();
        assert!(s.head_object("bkt", "f", GetObjectRequest::default()).await.is_err());
        ctx.flush(fh, 42).await.unwrap();
        ctx.release(fh).await.unwrap();
        let out = s.get_object("bkt", "f", GetObjectRequest::default()).await.unwrap();
        assert_eq!(&out.body.collect().await.unwrap()[..], b"hello world");
        // Read it back through a read handle.
        let rfh = {
            let mut t = lock(&ctx.table);
            files::open_reader(&ctx, &mut t, attr.ino.0)
        };
        assert_eq!(&ctx.read(rfh, 0, 5).await.unwrap()[..], b"hello");
        assert_eq!(&ctx.read(rfh, 6, 100).await.unwrap()[..], b"world");
        assert_eq!(ctx.read(fh, 0, 1).await.unwrap_err(), Errno::EBADF, "released");
        assert_eq!(ctx.write(rfh, 0, b"x").await.unwrap_err(), Errno::EBADF, "a read handle");
        ctx.release(rfh).await.unwrap();
        // open: a reader (the page cache kept the second time: the same ETag), O_TRUNC without
        // --allow-overwrite refused, a directory EISDIR.
        let ino = attr.ino.0;
        let first = ctx.open(ino, libc::O_RDONLY, 42).await.unwrap();
        assert!(!first.keep_cache);
        let again = ctx.open(ino, libc::O_RDONLY, 42).await.unwrap();
        assert!(again.keep_cache);
        assert_eq!(&ctx.read(again.fh, 0, 5).await.unwrap()[..], b"hello");
        assert_eq!(ctx.open(ino, libc::O_WRONLY | libc::O_TRUNC, 42).await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.open(ROOT, libc::O_RDONLY, 42).await.err(), Some(Errno::EISDIR));
        for fh in [first.fh, again.fh] {
            ctx.release(fh).await.unwrap();
        }
        // Writing without O_TRUNC where the store appends (the memory store does): at the end.
        let ap = ctx.open(ino, libc::O_WRONLY | libc::O_APPEND, 42).await.unwrap();
        assert_eq!(ctx.write(ap.fh, 0, b"!").await.unwrap(), 1);
        ctx.flush(ap.fh, 42).await.unwrap();
        ctx.release(ap.fh).await.unwrap();
        let out = s.get_object("bkt", "f", GetObjectRequest::default()).await.unwrap();
        assert_eq!(&out.body.collect().await.unwrap()[..], b"hello world!");
        // Under --read-only nothing is made.
        let mut o = MountOptions::new("bkt");
        o.read_only = true;
        let store: DynStore = s.clone();
        let ro = S3Fs::new(store, o, tokio::runtime::Handle::current()).ctx;
        assert_eq!(ro.create(ROOT, "g", creator()).await.err(), Some(Errno::EROFS));
    }
}
