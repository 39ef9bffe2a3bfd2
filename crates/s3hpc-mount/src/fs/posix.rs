//! `--posix-attrs`: the file system's own semantics where the store is an s3hpc gateway over
//! POSIX, through s3hpc's file-system extension (`Store::fs`, `s3hpc_core::fsattr`). Entries
//! carry the attributes the store reports (`Inode::fs`): mode, owner, times, size, link count
//! and kind (symlinks); chmod, chown, utimes and truncate change them there; symlink, readlink,
//! link and mkdir act there. What the store refuses comes back with the errno the file system
//! gave.

use std::time::Instant;

use std::sync::Mutex;

use fuser::{Errno, FileHandle, FileType, INodeNo, ReplyAttr, ReplyCreate, ReplyData, ReplyEntry, TimeOrNow};
use s3hpc_core::Error;
use s3hpc_core::fsattr::{FsAttr, FsKind, FsOp, FsTime, Owner, SetFsAttr, SetTime, errno_of};

use super::{Ctx, Handle, lock};
use crate::errors::errno;
use crate::inode::{Found, Inode, Kind, Local};
use crate::write::Writer;

pub(super) fn set_time(t: Option<TimeOrNow>) -> Option<SetTime> {
    t.map(|t| match t {
        TimeOrNow::Now => SetTime::Now,
        TimeOrNow::SpecificTime(at) => SetTime::At(FsTime::of(at)),
    })
}

pub(super) fn file_type(a: &FsAttr) -> FileType {
    match a.kind {
        FsKind::Dir => FileType::Directory,
        FsKind::Symlink => FileType::Symlink,
        FsKind::Fifo => FileType::NamedPipe,
        FsKind::Socket => FileType::Socket,
        FsKind::CharDevice => FileType::CharDevice,
        FsKind::BlockDevice => FileType::BlockDevice,
        FsKind::File => FileType::RegularFile,
    }
}

impl Ctx {
    pub(super) fn posix(&self) -> bool {
        self.opts.posix_attrs
    }

    /// Whether `i`'s attributes may be answered without asking the store: in `--posix-attrs`
    /// mode an entry of the store (directories too) needs the store's attributes, fetched
    /// within the TTL.
    pub(super) fn fresh(&self, i: &Inode, now: Instant) -> bool {
        if self.posix() && i.local == Local::No {
            return i.fs.is_some() && now < i.valid_until;
        }
        if self.opts.s3fs_metadata && i.local == Local::No && i.kind == Kind::File {
            // `--metadata s3fs`: the attributes need a HEAD within the TTL.
            return now < i.valid_until && i.meta_until.is_some_and(|u| now < u);
        }
        if self.opts.s3fs_metadata && i.local == Local::No && !i.name.is_empty() {
            // A directory (not the root): the attributes of its object `dir/`, read within
            // the TTL.
            return i.meta_until.is_some_and(|u| now < u);
        }
        i.fresh(now)
    }

    pub(super) async fn fs_op(&self, key: &str, op: FsOp) -> Result<FsAttr, Error> {
        self.store.fs(&self.opts.bucket, key, op).await
    }

    /// A lookup in `--posix-attrs` mode: the entry's attributes (one request) and, for a regular
    /// file, its object (the two LISTs of `remote_lookup`, for the ETag that reads check).
    pub(super) async fn posix_lookup(&self, key: &str) -> Result<(Found, Option<FsAttr>), Error> {
        if !is_object_key(key) {
            // A path longer than S3's keys: no object, only the entry (made through the
            // extension, which takes paths up to PATH_MAX).
            return match self.fs_op(key, FsOp::GetAttr).await {
                Ok(a) => Ok((found_of(&a), Some(a))),
                Err(e) if errno_of(&e) == Some(libc::ENOENT) => Ok((Found::Nothing, None)),
                Err(e) => Err(e),
            };
        }
        let (remote, attr) = tokio::join!(self.remote_lookup(key), self.fs_op(key, FsOp::GetAttr));
        match attr {
            Ok(a) => {
                let found = match a.kind {
                    FsKind::Dir => Found::Dir,
                    FsKind::File => match remote? {
                        f @ Found::File { .. } => f,
                        _ => Found::File { size: a.size, etag: String::new(), mtime: a.mtime.system_time() },
                    },
                    // Symlinks and special files: no object behind them.
                    _ => Found::File { size: a.size, etag: String::new(), mtime: a.mtime.system_time() },
                };
                Ok((found, Some(a)))
            }
            Err(e) if errno_of(&e) == Some(libc::ENOENT) => Ok((Found::Nothing, None)),
            Err(e) => Err(e),
        }
    }

    /// Record the store's attributes of inode `ino` in the table: [`Ctx::keep_attr`], and the
    /// store's inode number, so that the file's other names (hard links) find this inode.
    pub(super) fn keep(&self, t: &mut crate::inode::Table, ino: u64, a: FsAttr) {
        let store_ino = if a.kind == FsKind::Dir { 0 } else { a.ino };
        if let Some(i) = t.inodes.get_mut(&ino) {
            self.keep_attr(i, a);
            t.note_store_ino(ino, store_ino);
        }
    }

    /// The owner of an entry the request's caller makes: its user and group, or the group the
    /// parent directory hands down under its set-group-id bit (the store's kernel gives it).
    pub(super) fn owner_for(&self, parent: u64, uid: u32, gid: u32) -> Owner {
        let t = lock(&self.table);
        let sgid = t.inodes.get(&parent).and_then(|i| i.fs.as_ref()).is_some_and(|a| a.mode & libc::S_ISGID != 0);
        Owner { uid, gid: (!sgid).then_some(gid) }
    }

    /// Record the store's attributes of inode `ino`.
    pub(super) fn keep_attr(&self, i: &mut Inode, a: FsAttr) {
        if i.local == Local::No {
            i.size = a.size;
            i.mtime = a.mtime.system_time();
        }
        i.fs = Some(a);
        i.valid_until = self.until();
    }

    /// A new entry `name` in `parent` that now exists in the store with attributes `a`.
    fn install_made(&self, parent: u64, name: &str, a: FsAttr, reply: ReplyEntry) {
        let mut t = lock(&self.table);
        let kind = if a.kind == FsKind::Dir { Kind::Dir } else { Kind::File };
        let Some(ino) = t.insert_local(parent, name, kind, Local::No) else {
            return reply.error(Errno::ENOENT);
        };
        t.make_remote(ino);
        self.keep(&mut t, ino, a);
        self.reply_entry(&mut t, ino, reply);
    }

    /// The key of `name` in directory `parent`, or the errno.
    fn key_in(&self, parent: u64, name: &str) -> Result<String, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if self.too_long(name) {
            return Err(Errno::ENAMETOOLONG);
        }
        let t = lock(&self.table);
        let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
        Ok(format!("{pfx}{name}"))
    }

    /// open with `O_TRUNC` of a file of the store in `--posix-attrs` mode: truncated there at
    /// once (the file keeps its inode, mode, owner and links while nothing is written), then
    /// written as a new file would be.
    pub(super) async fn posix_open_trunc(&self, ino: u64, key: String, pid: u32) -> Result<super::io::Opened, Errno> {
        let set = SetFsAttr { size: Some(0), ..Default::default() };
        let a = self.fs_op(&key, FsOp::SetAttr(set)).await.map_err(|e| errno(&e, "open", &key))?;
        let mut t = lock(&self.table);
        let linked = a.nlink > 1;
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        if i.local != Local::No {
            // Another writer opened it meanwhile: one writer per file.
            return Err(Errno::EPERM);
        }
        i.etag = String::new();
        i.cached_etag = None;
        self.keep_attr(i, a);
        let writer = Writer::new(self.wctx.clone(), i.key.clone(), pid).made_empty();
        let fh = self.new_fh(Handle::Write { ino, writer: Mutex::new(writer) });
        i.local = Local::Writing(fh);
        i.opens += 1;
        let (parent, name) = (i.parent, i.name.clone());
        t.local_children.entry(parent).or_default().insert(name);
        if linked {
            expire_linked(&mut t);
        }
        Ok(super::io::Opened { fh, keep_cache: false })
    }
}

impl super::S3Fs {
    /// setattr of an entry of the store in `--posix-attrs` mode: chown, chmod, truncate, utimes
    /// as the store's file system does them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn posix_setattr(
        &self,
        ino: INodeNo,
        key: String,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        reply: ReplyAttr,
    ) {
        let ctx = self.ctx.clone();
        if ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        let set = SetFsAttr {
            mode: mode.map(|m| m & 0o7777),
            uid,
            gid,
            size,
            atime: set_time(atime),
            mtime: set_time(mtime),
        };
        self.spawn(async move {
            let r = ctx.fs_op(&key, FsOp::SetAttr(set)).await;
            let mut t = lock(&ctx.table);
            let Some(i) = t.inodes.get_mut(&ino.0) else {
                return reply.error(Errno::ENOENT);
            };
            match r {
                Ok(a) => {
                    if size.is_some() {
                        // The bytes changed: the page cache of the old ones is not theirs.
                        i.etag = String::new();
                        i.cached_etag = None;
                    }
                    let linked = a.nlink > 1;
                    ctx.keep_attr(i, a);
                    let attr = ctx.attr(ino.0, i);
                    if linked {
                        expire_linked(&mut t);
                    }
                    reply.attr(&ctx.ttl(), &attr)
                }
                Err(e) => reply.error(errno(&e, "setattr", &key)),
            }
        });
    }

    pub(super) fn posix_readlink(&self, ino: INodeNo, reply: ReplyData) {
        let ctx = self.ctx.clone();
        let key = {
            let t = lock(&ctx.table);
            let Some(i) = t.inodes.get(&ino.0) else {
                return reply.error(Errno::ENOENT);
            };
            if let Some(target) = i.fs.as_ref().and_then(|a| a.target.clone())
                && ctx.fresh(i, Instant::now())
            {
                return reply.data(target.as_bytes());
            }
            i.key.clone()
        };
        self.spawn(async move {
            match ctx.fs_op(&key, FsOp::GetAttr).await {
                Ok(a) => match a.target.clone() {
                    Some(target) => {
                        if let Some(i) = lock(&ctx.table).inodes.get_mut(&ino.0) {
                            ctx.keep_attr(i, a);
                        }
                        reply.data(target.as_bytes())
                    }
                    None => reply.error(Errno::EINVAL),
                },
                Err(e) => reply.error(errno(&e, "readlink", &key)),
            }
        });
    }

    pub(super) fn posix_symlink(&self, parent: INodeNo, name: &str, target: String, reply: ReplyEntry) {
        let ctx = self.ctx.clone();
        let key = match ctx.key_in(parent.0, name) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        let name = name.to_string();
        self.spawn(async move {
            match ctx.fs_op(&key, FsOp::Symlink(target)).await {
                Ok(a) => ctx.install_made(parent.0, &name, a, reply),
                Err(e) => reply.error(errno(&e, "symlink", &key)),
            }
        });
    }

    pub(super) fn posix_link(&self, ino: INodeNo, newparent: INodeNo, newname: &str, reply: ReplyEntry) {
        let ctx = self.ctx.clone();
        let key = match ctx.key_in(newparent.0, newname) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        let src = {
            let t = lock(&ctx.table);
            match t.inodes.get(&ino.0) {
                Some(i) if i.local == Local::No => i.key.clone(),
                Some(_) => return reply.error(Errno::EPERM),
                None => return reply.error(Errno::ENOENT),
            }
        };
        let newname = newname.to_string();
        self.spawn(async move {
            match ctx.fs_op(&key, FsOp::Link(src.clone())).await {
                Ok(a) => {
                    // The new name is one more name of the source's inode (one st_ino, one set
                    // of attributes); the link count (and ctime) changed for all its names.
                    let mut t = lock(&ctx.table);
                    expire_linked(&mut t);
                    if t.alias(newparent.0, &newname, ino.0) {
                        ctx.keep(&mut t, ino.0, a);
                        return ctx.reply_entry(&mut t, ino.0, reply);
                    }
                    drop(t);
                    ctx.install_made(newparent.0, &newname, a, reply)
                }
                Err(e) => reply.error(errno(&e, "link", &key)),
            }
        });
    }

    /// mknod in `--posix-attrs` mode: FIFOs, sockets, devices (as the store's file system
    /// allows the account) and empty regular files, made in the store.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn posix_mknod(
        &self,
        owner: (u32, u32),
        parent: INodeNo,
        name: &str,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let ctx = self.ctx.clone();
        let key = match ctx.key_in(parent.0, name) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        let kind = match mode & libc::S_IFMT {
            libc::S_IFREG | 0 => FsKind::File,
            libc::S_IFIFO => FsKind::Fifo,
            libc::S_IFSOCK => FsKind::Socket,
            libc::S_IFCHR => FsKind::CharDevice,
            libc::S_IFBLK => FsKind::BlockDevice,
            _ => return reply.error(Errno::EINVAL),
        };
        let owner = Some(ctx.owner_for(parent.0, owner.0, owner.1));
        let op = FsOp::Mknod { kind, mode: mode & !umask & 0o7777, rdev: u64::from(rdev), owner };
        let name = name.to_string();
        self.spawn(async move {
            match ctx.fs_op(&key, op).await {
                Ok(a) => ctx.install_made(parent.0, &name, a, reply),
                Err(e) => reply.error(errno(&e, "mknod", &key)),
            }
        });
    }

    /// mkdir in `--posix-attrs` mode: the directory is made in the store at once (`mkdirat`
    /// there), with the mode asked for and the caller as its owner.
    pub(super) fn posix_mkdir(
        &self,
        owner: (u32, u32),
        parent: INodeNo,
        name: &str,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let ctx = self.ctx.clone();
        let key = match ctx.key_in(parent.0, name) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        let name = name.to_string();
        let owner = Some(ctx.owner_for(parent.0, owner.0, owner.1));
        self.spawn(async move {
            match ctx.fs_op(&key, FsOp::Mkdir { mode: mode & !umask & 0o7777, owner }).await {
                Ok(a) => ctx.install_made(parent.0, &name, a, reply),
                Err(e) => reply.error(errno(&e, "mkdir", &key)),
            }
        });
    }

    /// create in `--posix-attrs` mode: the file is made in the store at once (an empty file,
    /// with the mode asked for and the caller as its owner: an `O_EXCL` create that loses to
    /// another is `EEXIST` there), and its bytes go up on close; a file closed with nothing
    /// written stays the empty file made here.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn posix_create(
        &self,
        owner: (u32, u32),
        parent: INodeNo,
        name: &str,
        mode: u32,
        umask: u32,
        pid: u32,
        reply: ReplyCreate,
    ) {
        let ctx = self.ctx.clone();
        let key = match ctx.key_in(parent.0, name) {
            Ok(k) => k,
            Err(e) => return reply.error(e),
        };
        let name = name.to_string();
        let owner = Some(ctx.owner_for(parent.0, owner.0, owner.1));
        self.spawn(async move {
            let op = FsOp::Mknod { kind: FsKind::File, mode: mode & !umask & 0o7777, rdev: 0, owner };
            match ctx.fs_op(&key, op).await {
                Ok(a) => {
                    ctx.reply_created(super::files::create_local(&ctx, parent.0, &name, key, pid, Some(a), None), reply)
                }
                Err(e) => reply.error(errno(&e, "create", &key)),
            }
        });
    }

    /// truncate, ftruncate or fallocate in `--posix-attrs` mode of a file being written here:
    /// done in the store when the file is there and nothing was written through the handle yet
    /// (a file just created, an appender that has not appended), else `EPERM` (bytes not
    /// uploaded cannot be cut or extended in the store). `done` gets the new attributes.
    pub(super) fn posix_resize_writing(
        &self,
        ino: INodeNo,
        fh: u64,
        key: String,
        set: SetFsAttr,
        done: impl FnOnce(Result<fuser::FileAttr, Errno>) + Send + 'static,
    ) {
        let ctx = self.ctx.clone();
        let Some(h) = ctx.handle(FileHandle(fh)) else {
            return done(Err(Errno::EBADF));
        };
        let Handle::Write { writer, .. } = &*h else {
            return done(Err(Errno::EBADF));
        };
        if !lock(writer).can_truncate() {
            tracing::info!(
                "s3hpc mount: resize of {key:?} refused: bytes were written through its handle and are not all in the store"
            );
            return done(Err(Errno::EPERM));
        }
        let size = set.size.unwrap_or(0);
        self.spawn(async move {
            let a = match ctx.fs_op(&key, FsOp::SetAttr(set)).await {
                Ok(a) => a,
                Err(e) => return done(Err(errno(&e, "truncate", &key))),
            };
            let Handle::Write { writer, .. } = &*h else { unreachable!("checked") };
            let appender = {
                let mut w = lock(writer);
                w.truncated(size);
                w.is_appender()
            };
            let mut t = lock(&ctx.table);
            if !appender && t.inodes.get(&ino.0).is_some_and(|i| i.local == Local::Writing(fh)) {
                // The new file is complete in the store as it is now.
                t.make_remote(ino.0);
            }
            let Some(i) = t.inodes.get_mut(&ino.0) else {
                return done(Err(Errno::ENOENT));
            };
            i.size = a.size;
            i.etag = String::new();
            i.cached_etag = None;
            ctx.keep_attr(i, a);
            let attr = ctx.attr(ino.0, i);
            done(Ok(attr))
        });
    }
}

/// Whether `key` can name an object (S3's 1,024 bytes; a directory's prefix adds a `/`).
pub(super) fn is_object_key(key: &str) -> bool {
    key.len() < s3hpc_core::MAX_KEY_LEN
}

/// What a lookup found, from the store's attributes alone.
fn found_of(a: &FsAttr) -> Found {
    match a.kind {
        FsKind::Dir => Found::Dir,
        _ => Found::File { size: a.size, etag: String::new(), mtime: a.mtime.system_time() },
    }
}

/// A file with several names changed through one of them: the attributes of every entry with
/// several links are asked again (the mount does not know which names share a file).
pub(super) fn expire_linked(t: &mut crate::inode::Table) {
    let now = Instant::now();
    for i in t.inodes.values_mut() {
        if i.fs.as_ref().is_some_and(|a| a.nlink > 1) {
            i.valid_until = now;
        }
    }
}

/// The attributes the kernel gets for `i` in `--posix-attrs` mode, from the store's.
pub(super) fn overlay(attr: &mut fuser::FileAttr, a: &FsAttr, writing: bool) {
    attr.kind = file_type(a);
    attr.perm = a.mode as u16;
    attr.uid = a.uid;
    attr.gid = a.gid;
    attr.nlink = a.nlink;
    attr.rdev = a.rdev as u32;
    if !writing {
        attr.size = a.size;
        attr.blocks = a.size.div_ceil(512);
        attr.mtime = a.mtime.system_time();
    }
    attr.atime = a.atime.system_time();
    attr.ctime = a.ctime.system_time();
    attr.crtime = attr.ctime;
}
