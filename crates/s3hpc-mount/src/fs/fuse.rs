//! The fuser adapter: each kernel request of [`fuser::Filesystem`] becomes a call of the file
//! system's logic (`Ctx`'s operations, the modules next to this one), and its answer the reply.

use super::*;

impl Filesystem for S3Fs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        crate::configure_kernel(config);
        tracing::info!("s3hpc mount: kernel connection {config:?}");
        Ok(())
    }

    fn destroy(&mut self) {
        // Files still open for writing are never completed: their uploads are aborted as the
        // handles drop.
        lock(&self.ctx.handles).clear();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::ENOENT);
        };
        let (ctx, name) = (self.ctx.clone(), name.to_string());
        let c = ctx.clone();
        self.run(async move { c.lookup(parent.0, &name).await }, move |r| ctx.reply_lookup(r, reply));
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        lock(&self.ctx.table).forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let ctx = self.ctx.clone();
        let c = ctx.clone();
        self.run(async move { c.getattr(ino.0).await }, move |r| match r {
            Ok(attr) => reply.attr(&ctx.ttl(), &attr),
            Err(e) => reply.error(e),
        });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // `--posix-attrs` and `--metadata s3fs` keep the changes (in the store, in the objects'
        // metadata); else see `Ctx::setattr_unkept`.
        let ctx = &self.ctx;
        let t = lock(&ctx.table);
        let Some(i) = t.inodes.get(&ino.0) else {
            reply.error(Errno::ENOENT);
            return;
        };
        if ctx.posix() && i.local == Local::No {
            let key = i.key.clone();
            drop(t);
            return self.posix_setattr(ino, key, mode, uid, gid, size, atime, mtime, reply);
        }
        if ctx.posix()
            && let Local::Writing(fh) = i.local
            && size.is_some()
        {
            // ftruncate of a file being written: in the store when it is there (see
            // posix_resize_writing); the other changes go with it.
            let key = i.key.clone();
            drop(t);
            let set = s3hpc_core::fsattr::SetFsAttr {
                mode: mode.map(|m| m & 0o7777),
                uid,
                gid,
                size,
                atime: posix::set_time(atime),
                mtime: posix::set_time(mtime),
            };
            let ttl = self.ctx.ttl();
            return self.posix_resize_writing(ino, fh, key, set, move |r| match r {
                Ok(attr) => reply.attr(&ttl, &attr),
                Err(e) => reply.error(e),
            });
        }
        if ctx.opts.s3fs_metadata && ino.0 != crate::inode::ROOT && (i.kind == Kind::File || size.is_none()) {
            // `--metadata s3fs`: modes, owners, times and sizes are kept in the objects.
            let key = i.key.clone();
            drop(t);
            let change = meta::Change { mode, uid, gid, atime, mtime };
            return meta::setattr(self, ino, key, change, size, reply);
        }
        drop(t);
        let change = ops::Change { mode, uid, gid, size, atime, mtime };
        match ctx.setattr_unkept(ino.0, &change) {
            Ok(attr) => reply.attr(&ctx.ttl(), &attr),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let ctx = self.ctx.clone();
        if ctx.opts.read_only {
            reply.error(Errno::EROFS);
            return;
        }
        let Some(name) = valid_name(name) else {
            reply.error(Errno::EINVAL);
            return;
        };
        if ctx.posix() {
            return self.posix_mkdir((req.uid(), req.gid()), parent, name, mode, umask, reply);
        }
        if ctx.opts.s3fs_metadata {
            return meta::mkdir(self, (req.uid(), req.gid()), parent.0, name, mode & !umask, reply);
        }
        let (c, name) = (ctx.clone(), name.to_string());
        self.run(async move { c.mkdir(parent.0, &name).await }, move |r| ctx.reply_lookup(r, reply));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::ENOENT);
        };
        let (ctx, name) = (self.ctx.clone(), name.to_string());
        self.run(async move { ctx.unlink(parent.0, &name).await }, move |r| reply_empty(r, reply));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if self.ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            return reply.error(Errno::EINVAL);
        }
        let (Some(name), Some(newname)) = (valid_name(name), valid_name(newname)) else {
            return reply.error(Errno::ENOENT);
        };
        let how = ops::RenameHow { noreplace: flags.contains(RenameFlags::RENAME_NOREPLACE), exchange: false };
        let (ctx, name, newname) = (self.ctx.clone(), name.to_string(), newname.to_string());
        self.run(async move { ctx.rename((parent.0, &name), (newparent.0, &newname), how).await }, move |r| {
            reply_empty(r, reply)
        });
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::ENOENT);
        };
        let (ctx, name) = (self.ctx.clone(), name.to_string());
        self.run(async move { ctx.rmdir(parent.0, &name).await }, move |r| reply_empty(r, reply));
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let (ctx, pid) = (self.ctx.clone(), req.pid());
        let c = ctx.clone();
        self.run(async move { c.open(ino.0, flags.0, pid).await }, move |r| ctx.reply_opened(r, reply));
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let ctx = self.ctx.clone();
        self.run(async move { ctx.read(fh.0, offset, size).await }, move |r| match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        });
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.run(self.ctx.write(fh.0, offset, data), move |r| match r {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        });
    }

    fn flush(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        let (ctx, pid) = (self.ctx.clone(), req.pid());
        self.run(async move { ctx.flush(fh.0, pid).await }, move |r| reply_empty(r, reply));
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let ctx = self.ctx.clone();
        self.run(async move { ctx.fsync(fh.0).await }, move |r| reply_empty(r, reply));
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let ctx = self.ctx.clone();
        self.run(async move { ctx.release(fh.0).await }, move |r| reply_empty(r, reply));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let ctx = &self.ctx;
        let t = lock(&ctx.table);
        let Some(i) = t.inodes.get(&ino.0) else {
            reply.error(Errno::ENOENT);
            return;
        };
        let Some(prefix) = t.dir_prefix(ino.0) else {
            reply.error(Errno::ENOTDIR);
            return;
        };
        let parent = i.parent;
        drop(t);
        let fh = ctx.new_fh(Handle::Dir(tokio::sync::Mutex::new(DirState::new(ino.0, parent, prefix))));
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectory) {
        self.read_dir(fh, offset, reply, |reply, ctx, t, ino, next, name, found| {
            // `--metadata s3fs`: a symlink or special file known here shows its type.
            let kind = t
                .inodes
                .get(&ino)
                .and_then(|i| i.meta.as_ref().filter(|_| ctx.opts.s3fs_metadata && i.kind == Kind::File))
                .map_or_else(|| kind_of(found), |m| m.file_type());
            reply.add(INodeNo(ino), next, kind, name)
        });
    }

    fn readdirplus(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectoryPlus) {
        self.read_dir(fh, offset, reply, |reply, ctx, t, ino, next, name, _| {
            let Some(i) = t.inodes.get(&ino) else {
                return false;
            };
            let attr = ctx.attr(ino, i);
            // `--metadata s3fs`: a listing carries no metadata; the kernel asks (getattr, a
            // HEAD) unless it was read lately.
            let ttl = if ctx.opts.s3fs_metadata && !ctx.fresh(i, Instant::now()) { Duration::ZERO } else { ctx.ttl() };
            if reply.add(INodeNo(ino), next, name, &ttl, &attr, Generation(0)) {
                return true;
            }
            // Every entry but "." and ".." counts as a lookup the kernel will forget.
            if name != "." && name != ".." {
                t.inodes.get_mut(&ino).expect("present").lookups += 1;
            }
            false
        });
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        lock(&self.ctx.handles).remove(&fh.0);
        reply.ok();
    }

    /// Special files exist only where the store keeps them (`--posix-attrs`): else `ENOSYS`.
    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::EINVAL);
        };
        if self.ctx.opts.s3fs_metadata {
            return meta::mknod(self, (req.uid(), req.gid()), parent.0, name, mode & !umask, rdev, reply);
        }
        if !self.ctx.posix() {
            return reply.error(Errno::ENOSYS);
        }
        self.posix_mknod((req.uid(), req.gid()), parent, name, mode, umask, rdev, reply)
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        if self.ctx.opts.s3fs_metadata {
            return meta::readlink(self, ino.0, reply);
        }
        if !self.ctx.posix() {
            return reply.error(Errno::EINVAL);
        }
        self.posix_readlink(ino, reply)
    }

    /// Symlinks and hard links exist only where the store keeps them (`--posix-attrs`): else
    /// `EPERM`, as Mountpoint answers.
    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &std::path::Path, reply: ReplyEntry) {
        let Some(name) = valid_name(link_name) else {
            return reply.error(Errno::EINVAL);
        };
        let Some(target) = target.to_str() else {
            return reply.error(Errno::EINVAL);
        };
        if self.ctx.opts.s3fs_metadata {
            return meta::symlink(self, (req.uid(), req.gid()), parent.0, name, target, reply);
        }
        if !self.ctx.posix() {
            return reply.error(Errno::EPERM);
        }
        self.posix_symlink(parent, name, target.to_string(), reply)
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let Some(name) = valid_name(newname) else {
            return reply.error(Errno::EINVAL);
        };
        if !self.ctx.posix() {
            return reply.error(Errno::EPERM);
        }
        self.posix_link(ino, newparent, name, reply)
    }

    /// posix_fallocate (mode 0) in `--posix-attrs` mode: a file shorter than `offset + length`
    /// is extended to it in the store (with zeros; the blocks are the file system's to
    /// allocate); else nothing changes. Other modes (punching holes, ...) and other mounts:
    /// `EOPNOTSUPP`.
    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let ctx = self.ctx.clone();
        if !ctx.posix() || mode != 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        if ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        let Some(end) = offset.checked_add(length) else {
            return reply.error(Errno::EFBIG);
        };
        let t = lock(&ctx.table);
        let Some(i) = t.inodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let size = match i.local {
            Local::Writing(fh) => ctx.written(fh).unwrap_or(i.size),
            _ => i.fs.as_ref().map_or(i.size, |a| a.size),
        };
        if end <= size || i.kind == Kind::Dir {
            return if i.kind == Kind::Dir { reply.error(Errno::EISDIR) } else { reply.ok() };
        }
        let key = i.key.clone();
        let set = s3hpc_core::fsattr::SetFsAttr { size: Some(end), ..Default::default() };
        if let Local::Writing(fh) = i.local {
            drop(t);
            return self.posix_resize_writing(ino, fh, key, set, move |r| match r {
                Ok(_) => reply.ok(),
                Err(e) => reply.error(e),
            });
        }
        drop(t);
        self.spawn(async move {
            match ctx.fs_op(&key, s3hpc_core::fsattr::FsOp::SetAttr(set)).await {
                Ok(a) => {
                    if let Some(i) = lock(&ctx.table).inodes.get_mut(&ino.0) {
                        i.etag = String::new();
                        i.cached_etag = None;
                        ctx.keep_attr(i, a);
                    }
                    reply.ok()
                }
                Err(e) => reply.error(errno(&e, "fallocate", &key)),
            }
        });
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // An object store has no fixed size: report plenty, so tools that check space go on.
        let blocks = 1u64 << 40;
        reply.statfs(blocks, blocks, blocks, 1 << 32, 1 << 32, 4096, self.ctx.opts.name_max as u32, 4096);
    }

    /// The mount keeps no extended attributes: ENOSYS tells the kernel so once, and it then
    /// answers every later getxattr itself (EOPNOTSUPP) instead of sending each here. `ls -l`
    /// asks two per file: with ENODATA that was 10,000 FUSE round trips for 5,000 files.
    fn getxattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, reply: fuser::ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: fuser::ReplyXattr) {
        if size == 0 { reply.size(0) } else { reply.data(&[]) }
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        reply.error(Errno::ENOTTY);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let ctx = self.ctx.clone();
        if ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::EINVAL);
        };
        if ctx.too_long(name) {
            return reply.error(Errno::ENAMETOOLONG);
        }
        let pid = req.pid();
        if ctx.posix() {
            return self.posix_create((req.uid(), req.gid()), parent, name, mode, umask, pid, reply);
        }
        let c = io::Creator { uid: req.uid(), gid: req.gid(), pid, mode, umask };
        let (op, name) = (ctx.clone(), name.to_string());
        self.run(async move { op.create(parent.0, &name, c).await }, move |r| ctx.reply_created(r, reply));
    }
}

fn reply_empty(r: Result<(), Errno>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}
