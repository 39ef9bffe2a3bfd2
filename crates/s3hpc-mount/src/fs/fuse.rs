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
        let ctx = self.ctx.clone();
        let c = ctx.clone();
        let change = ops::Change { mode, uid, gid, size, atime, mtime };
        self.run(async move { c.setattr(ino.0, change).await }, move |r| match r {
            Ok(attr) => reply.attr(&ctx.ttl(), &attr),
            Err(e) => reply.error(e),
        });
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        if self.ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::EINVAL);
        };
        let (ctx, name, owner) = (self.ctx.clone(), name.to_string(), (req.uid(), req.gid()));
        let c = ctx.clone();
        self.run(async move { c.mkdir(owner, parent.0, &name, mode, umask).await }, move |r| {
            ctx.reply_lookup(r, reply)
        });
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
        match self.ctx.opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectory) {
        let ctx = self.ctx.clone();
        let list = async move {
            let mut out = Entries(reply);
            let r = ctx.readdir(fh.0, offset, false, &mut out).await;
            (r, out.0)
        };
        self.run(list, |(r, reply)| match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        });
    }

    fn readdirplus(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, reply: ReplyDirectoryPlus) {
        let ctx = self.ctx.clone();
        let list = async move {
            let mut out = EntriesPlus(reply);
            let r = ctx.readdir(fh.0, offset, true, &mut out).await;
            (r, out.0)
        };
        self.run(list, |(r, reply)| match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        });
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.ctx.releasedir(fh.0);
        reply.ok();
    }

    /// Special files exist only where a mode keeps them (see `special.rs`).
    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::EINVAL);
        };
        let (ctx, name, owner) = (self.ctx.clone(), name.to_string(), (req.uid(), req.gid()));
        let c = ctx.clone();
        self.run(async move { c.mknod(owner, parent.0, &name, mode, umask, rdev).await }, move |r| {
            ctx.reply_lookup(r, reply)
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let ctx = self.ctx.clone();
        self.run(async move { ctx.readlink(ino.0).await }, move |r| match r {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(e),
        });
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &std::path::Path, reply: ReplyEntry) {
        let Some(name) = valid_name(link_name) else {
            return reply.error(Errno::EINVAL);
        };
        let Some(target) = target.to_str() else {
            return reply.error(Errno::EINVAL);
        };
        let (ctx, name, target, owner) =
            (self.ctx.clone(), name.to_string(), target.to_string(), (req.uid(), req.gid()));
        let c = ctx.clone();
        self.run(async move { c.symlink(owner, parent.0, &name, &target).await }, move |r| ctx.reply_lookup(r, reply));
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let Some(name) = valid_name(newname) else {
            return reply.error(Errno::EINVAL);
        };
        let (ctx, name) = (self.ctx.clone(), name.to_string());
        let c = ctx.clone();
        self.run(async move { c.link(ino.0, newparent.0, &name).await }, move |r| ctx.reply_lookup(r, reply));
    }

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
        self.run(async move { ctx.fallocate(ino.0, offset, length, mode).await }, move |r| reply_empty(r, reply));
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
        if self.ctx.opts.read_only {
            return reply.error(Errno::EROFS);
        }
        let Some(name) = valid_name(name) else {
            return reply.error(Errno::EINVAL);
        };
        let c = io::Creator { uid: req.uid(), gid: req.gid(), pid: req.pid(), mode, umask };
        let (ctx, name) = (self.ctx.clone(), name.to_string());
        let op = ctx.clone();
        self.run(async move { op.create(parent.0, &name, c).await }, move |r| ctx.reply_created(r, reply));
    }
}

fn reply_empty(r: Result<(), Errno>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(e),
    }
}

/// readdir's reply as the listing fills it.
struct Entries(ReplyDirectory);

impl DirSink for Entries {
    fn add(&mut self, e: DirEntry<'_>) -> bool {
        self.0.add(INodeNo(e.ino), e.next, e.kind, e.name)
    }
}

/// readdirplus's reply as the listing fills it.
struct EntriesPlus(ReplyDirectoryPlus);

impl DirSink for EntriesPlus {
    fn add(&mut self, e: DirEntry<'_>) -> bool {
        let (attr, ttl) = e.attr.expect("readdirplus entries carry attributes");
        self.0.add(INodeNo(e.ino), e.next, e.name, &ttl, &attr, Generation(0))
    }
}
