//! The file system's logic for the namespace: lookup, getattr, mkdir, unlink and rmdir as plain
//! async functions of the mount's state ([`Ctx`]) that answer a value or an errno, with no FUSE
//! request or reply in sight (the fuser adapter, `fuse.rs`, translates). What the caches answer
//! is ready at the first poll, so the adapter answers it on the FUSE thread; the rest waits for
//! the store on the runtime ([`S3Fs::run`]). Tested against the memory store below, as
//! Mountpoint tests its file system against its mock client.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::*;

/// What a lookup found.
#[derive(Debug)]
pub(super) enum Entry {
    /// The attributes of the inode (`attr.ino`; one more reference the kernel holds).
    Found { attr: FileAttr },
    /// Nothing under the name (the kernel keeps the absence for the TTL).
    Absent,
}

impl Ctx {
    /// The entry `ino` of the table for a lookup: one more kernel reference.
    pub(super) fn entry(&self, t: &mut Table, ino: u64) -> Result<Entry, Errno> {
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        i.lookups += 1;
        Ok(Entry::Found { attr: self.attr(ino, i) })
    }

    /// Look `name` up in directory `parent`: from the table while it is fresh (and known
    /// absences), else in the store (see [`Ctx::remote_lookup`]).
    pub(super) async fn lookup(&self, parent: u64, name: &str) -> Result<Entry, Errno> {
        if self.too_long(name) {
            return Err(Errno::ENAMETOOLONG);
        }
        let now = Instant::now();
        let (key, epoch) = {
            let mut t = lock(&self.table);
            if let Some(ino) = t.child(parent, name)
                && self.fresh(&t.inodes[&ino], now)
            {
                return self.entry(&mut t, ino);
            }
            if t.negative.get(&(parent, name.to_string())).is_some_and(|until| *until > now) {
                return Ok(Entry::Absent);
            }
            let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
            (format!("{pfx}{name}"), t.epoch())
        };
        let looked = if self.posix() {
            self.posix_lookup(&key).await
        } else {
            self.remote_lookup(&key).await.map(|f| (f, None))
        };
        // `--metadata s3fs`: a file's mode, owner and times are in its metadata (a HEAD).
        let s3fs = match &looked {
            Ok((Found::File { .. }, _)) if self.opts.s3fs_metadata => {
                self.head(&key).await.ok().flatten().map(|info| meta::S3fsAttr::of(&info.meta.user))
            }
            // A directory's attributes are on its object `dir/`, where it has one.
            Ok((Found::Dir, _)) if self.opts.s3fs_metadata => meta::dir_attr(self, &key).await.ok(),
            _ => None,
        };
        let (found, fsattr) = looked.map_err(|e| errno(&e, "lookup", &key))?;
        let mut t = lock(&self.table);
        t.prune_negative(Instant::now());
        if t.changed_since(parent, name, epoch) {
            // This mount created, removed or renamed the name while the LISTs were out (a
            // lookup that revalidates a name does not hold the directory's lock): what the
            // table knows is newer than what they found.
            return match t.child(parent, name) {
                Some(ino) => self.entry(&mut t, ino),
                None => Ok(Entry::Absent),
            };
        }
        // A hard link of a file this mount knows under another name: the same inode.
        if let Some(a) = &fsattr
            && a.kind != s3hpc_core::fsattr::FsKind::Dir
            && a.nlink > 1
            && t.child(parent, name).is_none()
            && let Some(ino) = t.by_store_ino(a.ino)
            && t.alias(parent, name, ino)
        {
            self.keep(&mut t, ino, a.clone());
            return self.entry(&mut t, ino);
        }
        let Some(ino) = t.install(parent, name, found, self.until()) else {
            return Ok(Entry::Absent);
        };
        if let Some(a) = fsattr {
            self.keep(&mut t, ino, a);
        }
        if let Some(m) = s3fs
            && let Some(i) = t.inodes.get_mut(&ino)
            && i.local == Local::No
        {
            i.meta = m;
            i.meta_until = Some(self.until());
        }
        self.entry(&mut t, ino)
    }

    /// The attributes of inode `ino`: from the table while fresh, else from the store (a HEAD;
    /// a directory's `dir/` object with `--metadata s3fs`; the extension's getattr with
    /// `--posix-attrs`).
    pub(super) async fn getattr(&self, ino: u64) -> Result<FileAttr, Errno> {
        let (key, kind) = {
            let t = lock(&self.table);
            let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
            if self.fresh(i, Instant::now()) {
                return Ok(self.attr(ino, i));
            }
            (i.key.clone(), i.kind)
        };
        if self.posix() {
            let r = self.fs_op(&key, s3hpc_core::fsattr::FsOp::GetAttr).await;
            let mut t = lock(&self.table);
            let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
            if i.key != key {
                return Ok(self.attr(ino, i));
            }
            let a = r.map_err(|e| errno(&e, "stat", &key))?;
            self.keep_attr(i, a);
            return Ok(self.attr(ino, i));
        }
        if kind == Kind::Dir {
            // `--metadata s3fs`: a directory's attributes are on its object `dir/`, if any.
            let r = meta::dir_attr(self, &key).await;
            let mut t = lock(&self.table);
            let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
            let m = r.map_err(|e| errno(&e, "stat", &key))?;
            if i.key == key && i.local == Local::No {
                i.meta = m;
                i.meta_until = Some(self.until());
            }
            return Ok(self.attr(ino, i));
        }
        let r = self.head(&key).await;
        let mut t = lock(&self.table);
        let until = self.until();
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        if i.key != key {
            // Renamed by this mount while the HEAD was out: the answer is about the old name
            // (NoSuchKey, or another object that took it); the rename kept the object.
            return Ok(self.attr(ino, i));
        }
        match r {
            Ok(Some(info)) => {
                if i.local == Local::No {
                    i.take_head(info, until);
                }
                Ok(self.attr(ino, i))
            }
            Ok(None) => Err(Errno::ENOENT),
            Err(e) => Err(errno(&e, "stat", &key)),
        }
    }

    /// mkdir of `name` in `parent` by `owner` with `mode` and `umask`: made in the store with
    /// `--posix-attrs`, as its object `dir/` with `--metadata s3fs`, else a directory of this
    /// mount alone ([`Ctx::mkdir_local`]).
    pub(super) async fn mkdir(
        &self,
        owner: (u32, u32),
        parent: u64,
        name: &str,
        mode: u32,
        umask: u32,
    ) -> Result<Entry, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if self.posix() {
            return self.posix_mkdir(owner, parent, name, mode, umask).await;
        }
        if self.opts.s3fs_metadata {
            return meta::mkdir(self, owner, parent, name, mode & !umask).await;
        }
        self.mkdir_local(parent, name).await
    }

    /// mkdir without `--posix-attrs` or `--metadata s3fs`: a directory of this mount alone
    /// until a file is written below it (S3 has no empty directories), after a lookup that
    /// finds nothing under the name.
    pub(super) async fn mkdir_local(&self, parent: u64, name: &str) -> Result<Entry, Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if self.too_long(name) {
            return Err(Errno::ENAMETOOLONG);
        }
        let key = {
            let t = lock(&self.table);
            if t.child(parent, name).is_some_and(|ino| t.inodes[&ino].fresh(Instant::now())) {
                return Err(Errno::EEXIST);
            }
            let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
            format!("{pfx}{name}")
        };
        match self.remote_lookup(&key).await {
            Ok(Found::Nothing) => {
                let mut t = lock(&self.table);
                let ino = t.insert_local(parent, name, Kind::Dir, Local::Dir).ok_or(Errno::ENOENT)?;
                self.entry(&mut t, ino)
            }
            Ok(found) => {
                lock(&self.table).install(parent, name, found, self.until());
                Err(Errno::EEXIST)
            }
            Err(e) => Err(errno(&e, "mkdir", &key)),
        }
    }

    /// unlink of `name` in `parent`: DeleteObject (needs `--allow-delete`); with
    /// `--posix-attrs` what is no object goes through the extension. A file still being written
    /// here is waited for up to 0.5 s (the kernel sends its writer's RELEASE after close()
    /// returned, so `touch f; rm f` may find it open), then is `EBUSY`.
    pub(super) async fn unlink(&self, parent: u64, name: &str) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if !self.opts.allow_delete {
            return Err(Errno::EPERM);
        }
        let mut waited = false;
        let (key, no_object) = loop {
            let writing = {
                let t = lock(&self.table);
                let mut no_object = false;
                let mut writing = None;
                if let Some(ino) = t.child(parent, name) {
                    let i = &t.inodes[&ino];
                    if i.kind == Kind::Dir {
                        return Err(Errno::EISDIR);
                    }
                    if let Local::Writing(_) = i.local {
                        if waited {
                            // The object does not exist until the writer closes it.
                            return Err(Errno::EBUSY);
                        }
                        writing = Some(ino);
                    }
                    no_object = i.fs.as_ref().is_some_and(|a| a.kind != s3hpc_core::fsattr::FsKind::File);
                }
                if writing.is_none() {
                    let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
                    break (format!("{pfx}{name}"), no_object);
                }
                writing
            };
            if let Some(ino) = writing {
                self.released(ino).await;
                waited = true;
            }
        };
        let through_fs = self.posix() && (no_object || !posix::is_object_key(&key));
        let r = if through_fs {
            // `--posix-attrs`: a symlink, a special file, a path longer than S3's keys (the
            // store's unlink(2)).
            self.fs_op(&key, s3hpc_core::fsattr::FsOp::Unlink).await.map(|_| ())
        } else {
            self.store.delete_object(&self.opts.bucket, &key).await
        };
        r.map_err(|e| errno(&e, "unlink", &key))?;
        let mut t = lock(&self.table);
        t.remove_name(parent, name, self.until());
        if self.posix() {
            posix::expire_linked(&mut t);
        }
        Ok(())
    }

    /// Wait up to 0.5 s for inode `ino` to stop being written here.
    pub(super) async fn released(&self, ino: u64) {
        for _ in 0..100 {
            let writing = lock(&self.table).inodes.get(&ino).is_some_and(|i| matches!(i.local, Local::Writing(_)));
            if !writing {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// rmdir of `name` in `parent`: only when nothing is below it; a marker object `dir/` is
    /// deleted with `--allow-delete` (with `--metadata s3fs` without: it is the directory);
    /// with `--posix-attrs` the store's rmdir(2) (which sees symlinks and special files too).
    pub(super) async fn rmdir(&self, parent: u64, name: &str) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let (prefix, posix_key) = {
            let t = lock(&self.table);
            let ino = t.child(parent, name).ok_or(Errno::ENOENT)?;
            let i = &t.inodes[&ino];
            if i.kind != Kind::Dir {
                return Err(Errno::ENOTDIR);
            }
            if t.has_local_children(ino) {
                return Err(Errno::ENOTEMPTY);
            }
            let posix_key = (self.posix() && i.local == Local::No).then(|| i.key.clone());
            (format!("{}/", i.key), posix_key)
        };
        if let Some(key) = posix_key {
            self.fs_op(&key, s3hpc_core::fsattr::FsOp::Rmdir).await.map_err(|e| errno(&e, "rmdir", &key))?;
            lock(&self.table).remove_name(parent, name, self.until());
            return Ok(());
        }
        let page = self.list(&prefix, None, 2).await.map_err(|e| errno(&e, "rmdir", &prefix))?;
        let empty = page.objects.is_empty() && page.common_prefixes.is_empty();
        let marker_only = !empty && page.common_prefixes.is_empty() && page.objects.iter().all(|o| o.key == prefix);
        if !empty && !marker_only {
            return Err(Errno::ENOTEMPTY);
        }
        if marker_only {
            // `--metadata s3fs`: the object is the directory (made by mkdir, as in s3fs).
            if !self.opts.allow_delete && !self.opts.s3fs_metadata {
                return Err(Errno::EPERM);
            }
            self.store.delete_object(&self.opts.bucket, &prefix).await.map_err(|e| errno(&e, "rmdir", &prefix))?;
        }
        lock(&self.table).remove_name(parent, name, self.until());
        Ok(())
    }
}

/// The changes of one setattr: chmod, chown, truncate, utimes.
#[derive(Debug, Clone, Default)]
pub(super) struct Change {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<TimeOrNow>,
    pub mtime: Option<TimeOrNow>,
}

impl Ctx {
    /// setattr where nothing keeps modes, owners and times (neither `--posix-attrs` nor
    /// `--metadata s3fs`): they are the mount's (`--uid`, `--file-mode`, ...) and the object's
    /// (Last-Modified), so a change is refused with EPERM, as Mountpoint does, rather than
    /// accepted and lost. What changes nothing is accepted: the mode, owner or time an entry
    /// already has, a time of "now" on a file being written here (its object gets the time of
    /// its close) or a directory made here, and a size equal to the current one (S3 objects
    /// cannot be truncated in place).
    pub(super) fn setattr_unkept(&self, ino: u64, c: &Change) -> Result<FileAttr, Errno> {
        let t = lock(&self.table);
        let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
        let perm = if i.kind == Kind::Dir { self.opts.dir_mode } else { self.opts.file_mode };
        let local = i.local != Local::No;
        let same_time = |t: &Option<TimeOrNow>| match t {
            None => true,
            Some(TimeOrNow::Now) => local,
            Some(TimeOrNow::SpecificTime(at)) => *at == i.mtime,
        };
        let refused = if c.mode.is_some_and(|m| m & 0o7777 != u32::from(perm)) {
            Some("mode")
        } else if c.uid.is_some_and(|u| u != self.opts.uid) || c.gid.is_some_and(|g| g != self.opts.gid) {
            Some("owner")
        } else if !same_time(&c.atime) || !same_time(&c.mtime) {
            Some("times")
        } else {
            None
        };
        if let Some(what) = refused {
            tracing::info!(
                "s3hpc mount: setattr of {:?} refused: the {what} cannot be kept (modes and owners come from the mount's options, times from the object)",
                i.key
            );
            return Err(Errno::EPERM);
        }
        if let Some(size) = c.size {
            let current = match i.local {
                Local::Writing(fh) => self.written(fh).unwrap_or(i.size),
                _ => i.size,
            };
            if i.kind == Kind::Dir {
                return Err(Errno::EISDIR);
            }
            if size != current {
                return Err(Errno::EPERM);
            }
        }
        Ok(self.attr(ino, i))
    }
}

/// How a rename may treat its destination (`renameat2(2)`'s flags).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RenameHow {
    /// `RENAME_NOREPLACE`: an existing destination is `EEXIST`.
    pub noreplace: bool,
    /// `RENAME_EXCHANGE`: not supported (`EINVAL`).
    pub exchange: bool,
}

impl Ctx {
    /// Rename a file with one RenameObject (atomic on an s3hpc gateway: one rename(2) there).
    /// Stores without RenameObject answer ENOSYS, as Mountpoint does, or with
    /// `--allow-copy-rename` copy the object and delete the source (not atomic); directories
    /// are renamed as a prefix (see `rename_dir`). Replacing an existing object needs
    /// `--allow-overwrite`, as overwriting it by writing does.
    pub(super) async fn rename(
        &self,
        (parent, name): (u64, &str),
        (newparent, newname): (u64, &str),
        how: RenameHow,
    ) -> Result<(), Errno> {
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        if how.exchange {
            return Err(Errno::EINVAL);
        }
        if self.too_long(name) || self.too_long(newname) {
            return Err(Errno::ENAMETOOLONG);
        }
        let is_dir = {
            let t = lock(&self.table);
            t.child(parent, name).is_some_and(|i| t.inodes[&i].kind == Kind::Dir)
        };
        if is_dir {
            return rename_dir::rename_dir(self, (parent, name), (newparent, newname), how.noreplace).await;
        }
        let (src, dst, no_object) = {
            let t = lock(&self.table);
            for (p, n) in [(parent, name), (newparent, newname)] {
                if let Some(ino) = t.child(p, n) {
                    let i = &t.inodes[&ino];
                    if i.kind == Kind::Dir {
                        // The source is a file (checked above), so this is the destination: a
                        // file does not replace a directory (rename(2): EISDIR).
                        return Err(Errno::EISDIR);
                    }
                    if let Local::Writing(_) = i.local {
                        return Err(Errno::EBUSY);
                    }
                }
            }
            let (Some(a), Some(b)) = (t.dir_prefix(parent), t.dir_prefix(newparent)) else {
                return Err(Errno::ENOTDIR);
            };
            let (src, dst) = (format!("{a}{name}"), format!("{b}{newname}"));
            // `--posix-attrs`: what is no object (a symlink, a special file, a path longer than
            // S3's keys) is renamed by the store's rename(2), through the extension.
            let special = t
                .child(parent, name)
                .and_then(|i| t.inodes[&i].fs.as_ref())
                .is_some_and(|a| a.kind != s3hpc_core::fsattr::FsKind::File);
            let no_object = self.posix() && (special || !posix::is_object_key(&src) || !posix::is_object_key(&dst));
            (src, dst, no_object)
        };
        let noreplace = how.noreplace || !self.opts.allow_overwrite;
        let mut r = if no_object {
            let op = s3hpc_core::fsattr::FsOp::Rename { source: src.clone(), noreplace };
            match self.fs_op(&dst, op).await {
                Ok(_) => Ok(()),
                Err(e) if !how.noreplace && s3hpc_core::fsattr::errno_of(&e) == Some(libc::EEXIST) => {
                    // Replacing needs --allow-overwrite, as for objects.
                    return Err(Errno::EPERM);
                }
                Err(e) => return Err(errno(&e, "rename", &src)),
            }
        } else {
            let req = s3hpc_core::RenameObjectRequest {
                conditions: s3hpc_core::Conditions {
                    if_none_match: noreplace.then(|| "*".to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            self.store.rename_object(&self.opts.bucket, &src, &dst, req).await
        };
        if self.opts.allow_copy_rename && r.as_ref().is_err_and(|e| e.code == ErrorCode::NotImplemented) {
            r = copy_rename(self, &src, &dst, noreplace).await;
        }
        match r {
            Ok(()) => {
                let mut t = lock(&self.table);
                t.rename(parent, name, newparent, newname, dst.clone(), self.until());
                if self.posix() {
                    // A rename changes the file's ctime, and a replaced file's link count.
                    posix::expire_linked(&mut t);
                    if let Some(ino) = t.child(newparent, newname)
                        && let Some(i) = t.inodes.get_mut(&ino)
                    {
                        i.valid_until = Instant::now();
                    }
                }
                drop(t);
                // Open readers of the file read it under its new name (as an open file survives
                // a rename in POSIX).
                rename_dir::rekey_readers(self, &src, &dst, false);
                Ok(())
            }
            Err(e) if e.code == ErrorCode::NotImplemented => Err(Errno::ENOSYS),
            Err(e) if e.code == ErrorCode::PreconditionFailed => {
                Err(if how.noreplace { Errno::EEXIST } else { Errno::EPERM })
            }
            // A key in the way on the gateway's file system, met where this mount (and the
            // kernel) did not know the destination yet: a directory there is EISDIR, a file
            // among its parents ENOTDIR, as rename(2) says.
            Err(e) if e.code == ErrorCode::InvalidRequest => {
                let below = format!("{dst}/");
                Err(match self.list(&below, None, 1).await {
                    Ok(p) if !p.objects.is_empty() || !p.common_prefixes.is_empty() => Errno::EISDIR,
                    Ok(_) => Errno::ENOTDIR,
                    Err(_) => errno(&e, "rename", &src),
                })
            }
            Err(e) => Err(errno(&e, "rename", &src)),
        }
    }
}

impl S3Fs {
    /// Run an operation of the logic and hand its answer to `done` (which replies): at once on
    /// this (FUSE) thread when the operation needs nothing from the store (its first poll is
    /// ready: a cached answer, a refusal), else on the runtime when the store has answered.
    pub(super) fn run<T: Send + 'static>(
        &self,
        op: impl Future<Output = T> + Send + 'static,
        done: impl FnOnce(T) + Send + 'static,
    ) {
        let mut op: Pin<Box<dyn Future<Output = T> + Send>> = Box::pin(op);
        let _rt = self.ctx.rt.enter();
        // The task that takes the operation over polls it again at once, with its own waker.
        match op.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => done(v),
            Poll::Pending => self.spawn(async move { done(op.await) }),
        }
    }
}

/// What the logic's tests share: a mount's state over the memory store.
#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::inode::ROOT;
    use s3hpc_core::memory::MemoryStore;
    use s3hpc_core::{Body, PutObjectRequest, Store};

    /// The caller of the tests' mkdir, mknod, symlink: its uid and gid.
    pub(in crate::fs) const OWNER: (u32, u32) = (1, 2);

    /// A mount of the bucket `bkt` of `store` (deletes allowed), with `opts` changed.
    pub(in crate::fs) async fn fs_over(store: &Arc<MemoryStore>, opts: impl FnOnce(&mut MountOptions)) -> Arc<Ctx> {
        let mut o = MountOptions::new("bkt");
        o.allow_delete = true;
        opts(&mut o);
        o.validate().unwrap();
        let dynstore: DynStore = store.clone();
        S3Fs::new(dynstore, o, tokio::runtime::Handle::current()).ctx
    }

    pub(in crate::fs) async fn put(store: &MemoryStore, key: &str, body: &'static [u8]) {
        let req = PutObjectRequest { content_length: Some(body.len() as u64), ..Default::default() };
        store.put_object("bkt", key, req, Body::from(bytes::Bytes::from_static(body))).await.unwrap();
    }

    /// A memory store with the bucket `bkt`.
    pub(in crate::fs) async fn store() -> Arc<MemoryStore> {
        let s = Arc::new(MemoryStore::new());
        s.create_bucket("bkt").await.unwrap();
        s
    }

    /// The inode and attributes of what a lookup found.
    pub(in crate::fs) fn found(e: Entry) -> (u64, FileAttr) {
        match e {
            Entry::Found { attr } => (attr.ino.0, attr),
            Entry::Absent => panic!("absent"),
        }
    }

    #[tokio::test]
    async fn lookup_getattr_and_absence() {
        let s = store().await;
        put(&s, "a.txt", b"hello").await;
        put(&s, "d/inner", b"x").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (a, attr) = found(ctx.lookup(ROOT, "a.txt").await.unwrap());
        assert_eq!((attr.kind, attr.size, attr.perm), (FileType::RegularFile, 5, 0o644));
        assert_eq!(lock(&ctx.table).inodes[&a].lookups, 1);
        // A second lookup comes from the table: the same inode, one more reference.
        assert_eq!(found(ctx.lookup(ROOT, "a.txt").await.unwrap()).0, a);
        assert_eq!(lock(&ctx.table).inodes[&a].lookups, 2);
        let (d, attr) = found(ctx.lookup(ROOT, "d").await.unwrap());
        assert_eq!((attr.kind, attr.perm), (FileType::Directory, 0o755));
        assert_eq!(found(ctx.lookup(d, "inner").await.unwrap()).1.size, 1);
        assert!(matches!(ctx.lookup(ROOT, "missing").await.unwrap(), Entry::Absent));
        assert!(lock(&ctx.table).negative.contains_key(&(ROOT, "missing".to_string())));
        assert_eq!(ctx.lookup(a, "x").await.unwrap_err(), Errno::ENOTDIR);
        assert_eq!(ctx.lookup(ROOT, &"n".repeat(1025)).await.unwrap_err(), Errno::ENAMETOOLONG);
        assert_eq!(ctx.getattr(a).await.unwrap().size, 5);
        assert_eq!(ctx.getattr(999).await.unwrap_err(), Errno::ENOENT);
        // Stale attributes are asked again (a HEAD): a replaced object shows its new size.
        put(&s, "a.txt", b"hello, world").await;
        lock(&ctx.table).inodes.get_mut(&a).unwrap().valid_until = Instant::now();
        assert_eq!(ctx.getattr(a).await.unwrap().size, 12);
        lock(&ctx.table).forget(a, 2);
        assert!(!lock(&ctx.table).inodes.contains_key(&a));
    }

    #[tokio::test]
    async fn mkdir_rmdir_unlink() {
        let s = store().await;
        put(&s, "f", b"data").await;
        put(&s, "full/x", b"x").await;
        put(&s, "marker/", b"").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (d, attr) = found(ctx.mkdir(OWNER, ROOT, "new", 0o777, 0o022).await.unwrap());
        assert_eq!(attr.kind, FileType::Directory);
        assert_eq!(lock(&ctx.table).inodes[&d].local, Local::Dir, "local until a file is written below it");
        assert_eq!(ctx.mkdir(OWNER, ROOT, "new", 0o777, 0o022).await.unwrap_err(), Errno::EEXIST);
        assert_eq!(ctx.mkdir(OWNER, ROOT, "f", 0o777, 0o022).await.unwrap_err(), Errno::EEXIST);
        ctx.rmdir(ROOT, "new").await.unwrap();
        assert!(matches!(ctx.lookup(ROOT, "new").await.unwrap(), Entry::Absent));
        found(ctx.lookup(ROOT, "full").await.unwrap());
        assert_eq!(ctx.rmdir(ROOT, "full").await.unwrap_err(), Errno::ENOTEMPTY);
        found(ctx.lookup(ROOT, "f").await.unwrap());
        assert_eq!(ctx.rmdir(ROOT, "f").await.unwrap_err(), Errno::ENOTDIR);
        assert_eq!(ctx.unlink(ROOT, "full").await.unwrap_err(), Errno::EISDIR);
        // A directory whose only object is its marker: rmdir deletes it (deletes allowed).
        found(ctx.lookup(ROOT, "marker").await.unwrap());
        ctx.rmdir(ROOT, "marker").await.unwrap();
        assert!(s.head_object("bkt", "marker/", Default::default()).await.is_err());
        ctx.unlink(ROOT, "f").await.unwrap();
        assert!(s.head_object("bkt", "f", Default::default()).await.is_err());
        assert!(matches!(ctx.lookup(ROOT, "f").await.unwrap(), Entry::Absent));
        // Without --allow-delete: EPERM, and the object stays.
        let ro = fs_over(&s, |o| o.allow_delete = false).await;
        found(ro.lookup(ROOT, "full").await.unwrap());
        assert_eq!(ro.unlink(ROOT, "x").await.unwrap_err(), Errno::EPERM);
        let read_only = fs_over(&s, |o| o.read_only = true).await;
        assert_eq!(read_only.mkdir(OWNER, ROOT, "z", 0o777, 0o022).await.unwrap_err(), Errno::EROFS);
    }

    #[tokio::test]
    async fn renames_of_files_and_directories() {
        let s = store().await;
        put(&s, "a", b"aaa").await;
        put(&s, "b", b"bbb").await;
        put(&s, "dir/x", b"x").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (a, _) = found(ctx.lookup(ROOT, "a").await.unwrap());
        found(ctx.lookup(ROOT, "b").await.unwrap());
        let (dir, _) = found(ctx.lookup(ROOT, "dir").await.unwrap());
        let (x, _) = found(ctx.lookup(dir, "x").await.unwrap());
        let plain = RenameHow::default();
        // Replacing an object needs --allow-overwrite; RENAME_NOREPLACE says EEXIST.
        assert_eq!(ctx.rename((ROOT, "a"), (ROOT, "b"), plain).await, Err(Errno::EPERM));
        let noreplace = RenameHow { noreplace: true, ..plain };
        assert_eq!(ctx.rename((ROOT, "a"), (ROOT, "b"), noreplace).await, Err(Errno::EEXIST));
        let exchange = RenameHow { exchange: true, ..plain };
        assert_eq!(ctx.rename((ROOT, "a"), (ROOT, "b"), exchange).await, Err(Errno::EINVAL));
        assert_eq!(ctx.rename((ROOT, "a"), (ROOT, "dir"), plain).await, Err(Errno::EISDIR));
        // A file: one RenameObject; the inode keeps its number under the new name.
        ctx.rename((ROOT, "a"), (ROOT, "c"), plain).await.unwrap();
        assert_eq!(found(ctx.lookup(ROOT, "c").await.unwrap()).0, a);
        assert!(matches!(ctx.lookup(ROOT, "a").await.unwrap(), Entry::Absent));
        assert!(s.head_object("bkt", "a", Default::default()).await.is_err());
        assert_eq!(s.head_object("bkt", "c", Default::default()).await.unwrap().size, 3);
        // A directory: one RenameObject of the prefix; what is below keeps its inode numbers.
        ctx.rename((ROOT, "dir"), (ROOT, "moved"), plain).await.unwrap();
        assert_eq!(found(ctx.lookup(ROOT, "moved").await.unwrap()).0, dir);
        assert_eq!(lock(&ctx.table).inodes[&x].key, "moved/x");
        assert_eq!(s.head_object("bkt", "moved/x", Default::default()).await.unwrap().size, 1);
        // With --allow-overwrite a file replaces another.
        let over = fs_over(&s, |o| o.allow_overwrite = true).await;
        found(over.lookup(ROOT, "c").await.unwrap());
        over.rename((ROOT, "c"), (ROOT, "b"), plain).await.unwrap();
        let out = s.get_object("bkt", "b", Default::default()).await.unwrap();
        assert_eq!(&out.body.collect().await.unwrap()[..], b"aaa");
    }

    #[tokio::test]
    async fn setattr_refuses_what_cannot_be_kept() {
        let s = store().await;
        put(&s, "f", b"four").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (f, attr) = found(ctx.lookup(ROOT, "f").await.unwrap());
        let set = |c: Change| ctx.setattr_unkept(f, &c);
        assert_eq!(set(Change { mode: Some(0o600), ..Default::default() }).err(), Some(Errno::EPERM));
        assert_eq!(set(Change { uid: Some(12345), ..Default::default() }).err(), Some(Errno::EPERM));
        assert_eq!(set(Change { size: Some(1), ..Default::default() }).err(), Some(Errno::EPERM));
        assert_eq!(set(Change { mtime: Some(TimeOrNow::Now), ..Default::default() }).err(), Some(Errno::EPERM));
        // What changes nothing is accepted: the mode it has, the size it has, its own time.
        let same = Change {
            mode: Some(0o100644),
            size: Some(4),
            mtime: Some(TimeOrNow::SpecificTime(attr.mtime)),
            ..Default::default()
        };
        assert_eq!(set(same).unwrap().size, 4);
        assert_eq!(
            ctx.setattr_unkept(ROOT, &Change { size: Some(0), ..Default::default() }).err(),
            Some(Errno::EISDIR)
        );
        assert_eq!(ctx.setattr_unkept(999, &Change::default()).err(), Some(Errno::ENOENT));
    }

    #[tokio::test]
    async fn cached_answers_are_ready_at_once() {
        // What the table answers needs no store: the adapter replies on the FUSE thread.
        let s = store().await;
        put(&s, "a", b"1").await;
        let ctx = fs_over(&s, |_| {}).await;
        found(ctx.lookup(ROOT, "a").await.unwrap());
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut op = Box::pin(ctx.lookup(ROOT, "a"));
        assert!(matches!(op.as_mut().poll(&mut cx), Poll::Ready(Ok(Entry::Found { .. }))));
        let mut op = Box::pin(ctx.unlink(ROOT, "a"));
        assert!(matches!(op.as_mut().poll(&mut cx), Poll::Ready(Err(Errno::EPERM))) || ctx.opts.allow_delete);
    }
}
