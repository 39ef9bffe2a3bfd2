//! The FUSE file system. Requests that the caches answer are answered on the FUSE thread; the
//! others become tasks on the Tokio runtime that answer when the S3 requests are done, so a
//! few FUSE threads keep many S3 requests in flight.
//!
//! Layout (as Mountpoint splits its file system from its fuser adapter):
//! - [`Ctx`] (here): the mount's state (the inode table, open handles, the store) and what the
//!   operations share (attributes, retries, the two-LIST lookup, completing a writer);
//! - the logic, plain async functions of `Ctx` that answer a value or an errno and know no FUSE
//!   request or reply: `ops` (lookup, getattr, mkdir, unlink, rmdir, rename, and setattr where
//!   nothing keeps attributes; directories' renames in `rename_dir`), `io` (create, open, read,
//!   write, flush, fsync, release), `attrs` (setattr and fallocate in every mode), `special`
//!   (mknod, symlink, link, readlink), `files` (handles, the copy rename), `dir` (listings:
//!   readdir and readdirplus into a [`DirSink`]), and the modes: `meta` (`--metadata s3fs`),
//!   `posix` (`--posix-attrs`); tested against the memory store without FUSE;
//! - `fuse`: the fuser adapter (`impl Filesystem`), which takes a request's arguments, runs the
//!   logic ([`S3Fs::run`]: at once when it is ready at the first poll, else on the runtime) and
//!   replies.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, KernelConfig, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use s3hpc_core::{DynStore, Error, ErrorCode, GetObjectRequest, ListObjectsPage, ListObjectsRequest};

use crate::MountOptions;
use crate::errors::errno;
use crate::inode::{Found, Inode, Kind, Local, Table};
use bytes::Bytes;

use crate::read::{Plan, Reader, assemble_ready, assemble_wait};
use crate::write::{Wait, WriteCtx, WriteError, Writer};

mod attrs;
mod dir;
mod files;
mod fuse;
mod io;
pub(crate) mod meta;
mod ops;
mod posix;
mod rename_dir;
mod special;

use dir::{DirEntry, DirSink, DirState};
use files::{copy_rename, create_local, open_appender, open_reader, opened};

const BLKSIZE: u32 = 1 << 20;

enum Handle {
    Read { ino: u64, reader: Mutex<Reader> },
    Write { ino: u64, writer: Mutex<Writer> },
    Dir(tokio::sync::Mutex<DirState>),
}

struct Ctx {
    store: DynStore,
    opts: MountOptions,
    rt: tokio::runtime::Handle,
    table: Mutex<Table>,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    next_fh: AtomicU64,
    wctx: Arc<WriteCtx>,
}

/// The mount's file system; see the crate documentation.
pub struct S3Fs {
    ctx: Arc<Ctx>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A name the bucket can hold as one path component.
fn valid_name(name: &OsStr) -> Option<&str> {
    let s = name.to_str()?;
    (!s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')).then_some(s)
}

impl Ctx {
    /// `name` is longer than the store keeps (`--name-max`: 255 on an s3hpc gateway over
    /// POSIX): refused with ENAMETOOLONG where it would be made, and not looked for.
    fn too_long(&self, name: &str) -> bool {
        name.len() > self.opts.name_max
    }

    /// How long the kernel may keep entries and attributes. With `--posix-attrs` it keeps none
    /// (every stat comes here and is answered from the table while it is fresh): a change made
    /// through one name (a link's ctime, a directory's times after an unlink) shows at once.
    fn ttl(&self) -> Duration {
        if self.posix() { Duration::ZERO } else { self.opts.metadata_ttl }
    }

    fn until(&self) -> Instant {
        Instant::now() + self.opts.metadata_ttl
    }

    /// The attributes of `i` as the kernel gets them (lookups, getattr, readdirplus, setattr).
    /// A file being written here has the size written so far, as Mountpoint reports it: the
    /// kernel replaces its own idea of the size (and drops cached pages beyond it) with what
    /// it is told, so a size of 0 while bytes are in the writer would make the next reader
    /// see an empty file until the attributes expire.
    fn attr(&self, ino: u64, i: &Inode) -> FileAttr {
        let size = match i.local {
            Local::Writing(fh) => self.written(fh).unwrap_or(i.size),
            _ => i.size,
        };
        let (kind, perm, nlink, size) = match i.kind {
            Kind::Dir => (FileType::Directory, self.opts.dir_mode, 2, 0),
            Kind::File => (FileType::RegularFile, self.opts.file_mode, 1, size),
        };
        let mut attr = FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: i.mtime,
            mtime: i.mtime,
            ctime: i.mtime,
            crtime: i.mtime,
            kind,
            perm,
            nlink,
            uid: self.opts.uid,
            gid: self.opts.gid,
            rdev: 0,
            blksize: BLKSIZE,
            flags: 0,
        };
        if let Some(a) = i.fs.as_ref().filter(|_| self.posix()) {
            posix::overlay(&mut attr, a, matches!(i.local, Local::Writing(_)));
        }
        if let Some(m) = i.meta.as_ref().filter(|_| self.opts.s3fs_metadata) {
            m.overlay(&mut attr);
        }
        attr
    }

    /// The size of the file the write handle `fh` is writing (the end of what it accepted).
    /// Lock order: the table (held by callers), then the handles, then the writer.
    fn written(&self, fh: u64) -> Option<u64> {
        let h = lock(&self.handles).get(&fh).cloned()?;
        match &*h {
            Handle::Write { writer, .. } => Some(lock(writer).offset),
            _ => None,
        }
    }

    fn negative_attr(&self) -> FileAttr {
        let mut a = self.attr(0, &dummy_inode());
        a.ino = INodeNo(0);
        a
    }

    fn new_fh(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(h));
        fh
    }

    fn handle(&self, fh: FileHandle) -> Option<Arc<Handle>> {
        lock(&self.handles).get(&fh.0).cloned()
    }

    /// Answer a lookup (or an entry made: mkdir) with what the logic found.
    fn reply_lookup(&self, r: Result<ops::Entry, Errno>, reply: ReplyEntry) {
        match r {
            Ok(ops::Entry::Found { attr, .. }) => reply.entry(&self.ttl(), &attr, Generation(0)),
            Ok(ops::Entry::Absent) => self.reply_negative(reply),
            Err(e) => reply.error(e),
        }
    }

    /// Answer a create with what the logic made.
    fn reply_created(&self, r: Result<io::Created, Errno>, reply: ReplyCreate) {
        match r {
            Ok(c) => reply.created(&self.ttl(), &c.attr, Generation(0), FileHandle(c.fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    /// Answer an open with what the logic opened.
    fn reply_opened(&self, r: Result<io::Opened, Errno>, reply: ReplyOpen) {
        match r {
            Ok(o) => {
                let flags = if o.keep_cache { FopenFlags::FOPEN_KEEP_CACHE } else { FopenFlags::empty() };
                reply.opened(FileHandle(o.fh), flags)
            }
            Err(e) => reply.error(e),
        }
    }

    fn reply_negative(&self, reply: ReplyEntry) {
        // Node id 0 with a timeout: the kernel keeps the negative entry for the TTL.
        reply.entry(&self.ttl(), &self.negative_attr(), Generation(0));
    }

    async fn retry<T, Fut: std::future::Future<Output = Result<T, Error>>>(
        &self,
        mut f: impl FnMut() -> Fut,
    ) -> Result<T, Error> {
        let mut attempt = 0u32;
        loop {
            match f().await {
                Err(e) if attempt < 4 && crate::errors::retryable(&e) => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
                r => return r,
            }
        }
    }

    async fn list(&self, prefix: &str, start_after: Option<String>, max_keys: usize) -> Result<ListObjectsPage, Error> {
        self.retry(|| {
            let req = ListObjectsRequest {
                prefix: prefix.to_string(),
                delimiter: Some("/".into()),
                start_after: start_after.clone(),
                max_keys,
            };
            self.store.list_objects(&self.opts.bucket, req)
        })
        .await
    }

    async fn head(&self, key: &str) -> Result<Option<s3hpc_core::ObjectInfo>, Error> {
        match self.retry(|| self.store.head_object(&self.opts.bucket, key, GetObjectRequest::default())).await {
            Ok(i) => Ok(Some(i)),
            Err(e) if matches!(e.code, ErrorCode::NoSuchKey) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What the bucket holds under `key`: a directory (any key below `key/`) wins over an
    /// object `key`, as a listing shows them. Two LISTs go out together: `key/` (is it a
    /// directory?) and `key` with one entry (an object `key` sorts first among the keys that
    /// start with `key`, and the listing carries its size, ETag and date), which spares the
    /// HEAD of a missing key (the common case of a lookup before a create).
    async fn remote_lookup(&self, key: &str) -> Result<Found, Error> {
        let dir_prefix = format!("{key}/");
        let (file, dir) = tokio::join!(self.list(key, None, 1), self.list(&dir_prefix, None, 1));
        let dir = dir?;
        if !dir.objects.is_empty() || !dir.common_prefixes.is_empty() {
            return Ok(Found::Dir);
        }
        Ok(match file?.objects.into_iter().next() {
            Some(o) if o.key == key => Found::File { size: o.size, etag: o.etag, mtime: o.last_modified },
            _ => Found::Nothing,
        })
    }

    /// Wait for a writer's object to be complete and record it in the table. An appender's
    /// file stays being written until its opener closes it (`closing`; an fsync is not a
    /// close); its object exists throughout, so a failed append leaves the name (with
    /// attributes to fetch again).
    async fn finish_write(&self, ino: u64, fh: u64, done: Done, closing: bool) -> Result<(), Errno> {
        let Done { completion, key, appender } = done;
        let r = completion.await;
        let restore = self.finish_write_locked(ino, fh, r, &key, appender, closing)?;
        if let Some(a) = restore {
            // `--posix-attrs`: the upload made a new file; it keeps the mode and owner the file
            // had (those asked for at create, or the replaced file's).
            let set = s3hpc_core::fsattr::SetFsAttr {
                mode: Some(a.mode),
                uid: Some(a.uid),
                gid: Some(a.gid),
                ..Default::default()
            };
            if let Err(e) = self.fs_op(&key, s3hpc_core::fsattr::FsOp::SetAttr(set)).await {
                tracing::warn!("s3hpc mount: the mode and owner of {key:?} after its upload: {e}");
            }
        }
        Ok(())
    }

    /// [`Ctx::finish_write`] once the writer is done: the table updated; the attributes to
    /// give the new file back (`--posix-attrs`) when an upload replaced it.
    fn finish_write_locked(
        &self,
        ino: u64,
        fh: u64,
        r: Result<s3hpc_core::PutObjectOutput, Arc<Error>>,
        key: &str,
        appender: bool,
        closing: bool,
    ) -> Result<Option<s3hpc_core::fsattr::FsAttr>, Errno> {
        let mut t = lock(&self.table);
        let Some(i) = t.inodes.get_mut(&ino).filter(|i| i.local == Local::Writing(fh)) else {
            return r.map(|_| None).map_err(|e| errno(&e, "upload", key));
        };
        match r {
            Ok(out) => {
                // An upload (not an append, not an empty file made in the store) makes a new file.
                let restore = if self.posix() && !appender && !out.etag.is_empty() { i.fs.clone() } else { None };
                i.size = out.size;
                i.etag = out.etag.clone();
                i.mtime = out.last_modified;
                i.valid_until = Instant::now() + self.opts.metadata_ttl;
                i.cached_etag = None;
                if self.posix() {
                    // A new file (or new bytes): its attributes are the store's, asked again.
                    i.fs = None;
                    i.valid_until = Instant::now();
                    let parent = i.parent;
                    if let Some(d) = t.inodes.get_mut(&parent) {
                        d.valid_until = Instant::now();
                    }
                }
                if closing || !appender {
                    t.make_remote(ino);
                }
                Ok(restore)
            }
            Err(e) => {
                let en = errno(&e, if appender { "append" } else { "upload" }, key);
                if appender {
                    i.valid_until = Instant::now();
                    i.cached_etag = None;
                    if closing {
                        t.make_remote(ino);
                    }
                } else {
                    let (parent, name) = (i.parent, i.name.clone());
                    t.remove_name(parent, &name, Instant::now());
                }
                Err(en)
            }
        }
    }
}

/// A writer's completion, taken under its lock (so later writes see it), awaited afterwards.
struct Done {
    completion: crate::write::Completion,
    key: String,
    appender: bool,
}

impl Done {
    fn of(w: &mut Writer) -> Done {
        Done { completion: w.complete(), key: w.key.clone(), appender: w.is_appender() }
    }
}

fn dummy_inode() -> Inode {
    Inode {
        parent: 0,
        name: String::new(),
        key: String::new(),
        kind: Kind::File,
        size: 0,
        etag: String::new(),
        mtime: SystemTime::UNIX_EPOCH,
        valid_until: Instant::now(),
        lookups: 0,
        opens: 0,
        local: Local::No,
        cached_etag: None,
        fs: None,
        links: Vec::new(),
        meta: None,
        meta_until: None,
    }
}

impl S3Fs {
    pub fn new(store: DynStore, opts: MountOptions, rt: tokio::runtime::Handle) -> S3Fs {
        let wctx = Arc::new(WriteCtx {
            store: store.clone(),
            bucket: opts.bucket.clone(),
            rt: rt.clone(),
            part_size: opts.part_size,
            slots: Arc::new(tokio::sync::Semaphore::new(opts.max_upload_parts)),
        });
        let table = Mutex::new(Table::new(&opts.prefix));
        S3Fs {
            ctx: Arc::new(Ctx {
                store,
                opts,
                rt,
                table,
                handles: Mutex::new(HashMap::new()),
                next_fh: AtomicU64::new(1),
                wctx,
            }),
        }
    }

    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        self.ctx.rt.spawn(f);
    }
}
