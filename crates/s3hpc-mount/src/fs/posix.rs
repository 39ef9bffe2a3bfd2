//! `--posix-attrs`: the file system's own semantics where the store is an s3hpc gateway over
//! POSIX, through s3hpc's file-system extension (`Store::fs`, `s3hpc_core::fsattr`). Entries
//! carry the attributes the store reports (`Inode::fs`): mode, owner, times, size, link count
//! and kind (symlinks); chmod, chown, utimes and truncate change them there; symlink, readlink,
//! link and mkdir act there. What the store refuses comes back with the errno the file system
//! gave.

use std::time::Instant;

use std::sync::{Arc, Mutex};

use fuser::{Errno, FileAttr, FileHandle, FileType, TimeOrNow};
use s3hpc_core::Error;
use s3hpc_core::fsattr::{FsAttr, FsKind, FsOp, FsTime, Owner, SetFsAttr, SetTime, errno_of};

use super::ops::Entry;
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

    /// A new entry `name` in `parent` that now exists in the store with attributes `a`: the
    /// lookup's answer for it (one kernel reference).
    fn install_made(&self, parent: u64, name: &str, a: FsAttr) -> Result<Entry, Errno> {
        let mut t = lock(&self.table);
        let kind = if a.kind == FsKind::Dir { Kind::Dir } else { Kind::File };
        let ino = t.insert_local(parent, name, kind, Local::No).ok_or(Errno::ENOENT)?;
        t.make_remote(ino);
        self.keep(&mut t, ino, a);
        self.entry(&mut t, ino)
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

impl Ctx {
    /// setattr of an entry of the store in `--posix-attrs` mode: chown, chmod, truncate, utimes
    /// as the store's file system does them.
    pub(super) async fn posix_setattr(&self, ino: u64, key: String, set: SetFsAttr) -> Result<FileAttr, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let resized = set.size.is_some();
        let r = self.fs_op(&key, FsOp::SetAttr(set)).await;
        let mut t = lock(&self.table);
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        let a = r.map_err(|e| errno(&e, "setattr", &key))?;
        if resized {
            // The bytes changed: the page cache of the old ones is not theirs.
            i.etag = String::new();
            i.cached_etag = None;
        }
        let linked = a.nlink > 1;
        self.keep_attr(i, a);
        let attr = self.attr(ino, i);
        if linked {
            expire_linked(&mut t);
        }
        Ok(attr)
    }

    /// readlink in `--posix-attrs` mode: the target the store reports (from the table while its
    /// attributes are fresh); `EINVAL` for anything but a symlink.
    pub(super) async fn posix_readlink(&self, ino: u64) -> Result<String, Errno> {
        let key = {
            let t = lock(&self.table);
            let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
            if let Some(target) = i.fs.as_ref().and_then(|a| a.target.clone())
                && self.fresh(i, Instant::now())
            {
                return Ok(target);
            }
            i.key.clone()
        };
        let a = self.fs_op(&key, FsOp::GetAttr).await.map_err(|e| errno(&e, "readlink", &key))?;
        let target = a.target.clone().ok_or(Errno::EINVAL)?;
        if let Some(i) = lock(&self.table).inodes.get_mut(&ino) {
            self.keep_attr(i, a);
        }
        Ok(target)
    }

    /// symlink in `--posix-attrs` mode: made in the store (`symlinkat` there).
    pub(super) async fn posix_symlink(&self, parent: u64, name: &str, target: String) -> Result<Entry, Errno> {
        let key = self.key_in(parent, name)?;
        let a = self.fs_op(&key, FsOp::Symlink(target)).await.map_err(|e| errno(&e, "symlink", &key))?;
        self.install_made(parent, name, a)
    }

    /// link in `--posix-attrs` mode: a hard link made in the store (`linkat` there) to the file
    /// `ino` (`EPERM` while it is being written here: its file is not the store's yet).
    pub(super) async fn posix_link(&self, ino: u64, newparent: u64, newname: &str) -> Result<Entry, Errno> {
        let key = self.key_in(newparent, newname)?;
        let src = {
            let t = lock(&self.table);
            match t.inodes.get(&ino) {
                Some(i) if i.local == Local::No => i.key.clone(),
                Some(_) => return Err(Errno::EPERM),
                None => return Err(Errno::ENOENT),
            }
        };
        let a = self.fs_op(&key, FsOp::Link(src)).await.map_err(|e| errno(&e, "link", &key))?;
        // The new name is one more name of the source's inode (one st_ino, one set of
        // attributes); the link count (and ctime) changed for all its names.
        let mut t = lock(&self.table);
        expire_linked(&mut t);
        if t.alias(newparent, newname, ino) {
            self.keep(&mut t, ino, a);
            return self.entry(&mut t, ino);
        }
        drop(t);
        self.install_made(newparent, newname, a)
    }

    /// mknod in `--posix-attrs` mode: FIFOs, sockets, devices (as the store's file system
    /// allows the account) and empty regular files, made in the store.
    pub(super) async fn posix_mknod(
        &self,
        owner: (u32, u32),
        parent: u64,
        name: &str,
        mode: u32,
        umask: u32,
        rdev: u32,
    ) -> Result<Entry, Errno> {
        let key = self.key_in(parent, name)?;
        let kind = match mode & libc::S_IFMT {
            libc::S_IFREG | 0 => FsKind::File,
            libc::S_IFIFO => FsKind::Fifo,
            libc::S_IFSOCK => FsKind::Socket,
            libc::S_IFCHR => FsKind::CharDevice,
            libc::S_IFBLK => FsKind::BlockDevice,
            _ => return Err(Errno::EINVAL),
        };
        let owner = Some(self.owner_for(parent, owner.0, owner.1));
        let op = FsOp::Mknod { kind, mode: mode & !umask & 0o7777, rdev: u64::from(rdev), owner };
        let a = self.fs_op(&key, op).await.map_err(|e| errno(&e, "mknod", &key))?;
        self.install_made(parent, name, a)
    }

    /// mkdir in `--posix-attrs` mode: the directory is made in the store at once (`mkdirat`
    /// there), with the mode asked for and the caller as its owner.
    pub(super) async fn posix_mkdir(
        &self,
        owner: (u32, u32),
        parent: u64,
        name: &str,
        mode: u32,
        umask: u32,
    ) -> Result<Entry, Errno> {
        let key = self.key_in(parent, name)?;
        let owner = Some(self.owner_for(parent, owner.0, owner.1));
        let a = self
            .fs_op(&key, FsOp::Mkdir { mode: mode & !umask & 0o7777, owner })
            .await
            .map_err(|e| errno(&e, "mkdir", &key))?;
        self.install_made(parent, name, a)
    }

    /// create in `--posix-attrs` mode: the file is made in the store at once (an empty file,
    /// with the mode asked for and the caller as its owner: an `O_EXCL` create that loses to
    /// another is `EEXIST` there), and its bytes go up on close; a file closed with nothing
    /// written stays the empty file made here.
    pub(super) async fn posix_create(
        self: &Arc<Self>,
        parent: u64,
        name: &str,
        c: super::io::Creator,
    ) -> Result<super::io::Created, Errno> {
        let key = self.key_in(parent, name)?;
        let owner = Some(self.owner_for(parent, c.uid, c.gid));
        let op = FsOp::Mknod { kind: FsKind::File, mode: c.mode & !c.umask & 0o7777, rdev: 0, owner };
        let a = self.fs_op(&key, op).await.map_err(|e| errno(&e, "create", &key))?;
        super::files::create_local(self, parent, name, key, c.pid, Some(a), None)
    }

    /// truncate, ftruncate or fallocate in `--posix-attrs` mode of a file being written here
    /// (through the handle `fh`): done in the store when the file is there and nothing was
    /// written through the handle yet (a file just created, an appender that has not appended),
    /// else `EPERM` (bytes not uploaded cannot be cut or extended in the store). Answers the
    /// new attributes.
    pub(super) async fn posix_resize_writing(
        &self,
        ino: u64,
        fh: u64,
        key: String,
        set: SetFsAttr,
    ) -> Result<FileAttr, Errno> {
        let h = self.handle(FileHandle(fh)).ok_or(Errno::EBADF)?;
        let Handle::Write { writer, .. } = &*h else {
            return Err(Errno::EBADF);
        };
        if !lock(writer).can_truncate() {
            tracing::info!(
                "s3hpc mount: resize of {key:?} refused: bytes were written through its handle and are not all in the store"
            );
            return Err(Errno::EPERM);
        }
        let size = set.size.unwrap_or(0);
        let a = self.fs_op(&key, FsOp::SetAttr(set)).await.map_err(|e| errno(&e, "truncate", &key))?;
        let appender = {
            let mut w = lock(writer);
            w.truncated(size);
            w.is_appender()
        };
        let mut t = lock(&self.table);
        if !appender && t.inodes.get(&ino).is_some_and(|i| i.local == Local::Writing(fh)) {
            // The new file is complete in the store as it is now.
            t.make_remote(ino);
        }
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        i.size = a.size;
        i.etag = String::new();
        i.cached_etag = None;
        self.keep_attr(i, a);
        Ok(self.attr(ino, i))
    }
}

/// A setattr's changes as the store's file system takes them.
pub(super) fn set_of(c: &super::ops::Change) -> SetFsAttr {
    SetFsAttr {
        mode: c.mode.map(|m| m & 0o7777),
        uid: c.uid,
        gid: c.gid,
        size: c.size,
        atime: set_time(c.atime),
        mtime: set_time(c.mtime),
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
