//! setattr and fallocate: which mode keeps what. With `--posix-attrs` the store's file system
//! does them (`posix`); with `--metadata s3fs` the objects' metadata keeps modes, owners and
//! times (`meta`); else nothing keeps them and a change is refused (`ops`, `setattr_unkept`).

use super::*;

impl Ctx {
    /// setattr of inode `ino` (chmod, chown, truncate, utimes): in the store with
    /// `--posix-attrs` (a file being written here: only a truncate goes there, see
    /// [`Ctx::posix_resize_writing`]), in the object's metadata with `--metadata s3fs`, else
    /// only what changes nothing is accepted ([`Ctx::setattr_unkept`]).
    pub(super) async fn setattr(&self, ino: u64, c: ops::Change) -> Result<FileAttr, Errno> {
        enum Way {
            Posix(String),
            ResizeWriting(u64, String),
            S3fs(String),
            Unkept,
        }
        let way = {
            let t = lock(&self.table);
            let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
            match i.local {
                Local::No if self.posix() => Way::Posix(i.key.clone()),
                // ftruncate of a file being written: in the store when it is there; the other
                // changes go with it.
                Local::Writing(fh) if self.posix() && c.size.is_some() => Way::ResizeWriting(fh, i.key.clone()),
                _ if self.opts.s3fs_metadata
                    && ino != crate::inode::ROOT
                    && (i.kind == Kind::File || c.size.is_none()) =>
                {
                    Way::S3fs(i.key.clone())
                }
                _ => Way::Unkept,
            }
        };
        match way {
            Way::Posix(key) => self.posix_setattr(ino, key, posix::set_of(&c)).await,
            Way::ResizeWriting(fh, key) => self.posix_resize_writing(ino, fh, key, posix::set_of(&c)).await,
            Way::S3fs(key) => {
                let change = meta::Change { mode: c.mode, uid: c.uid, gid: c.gid, atime: c.atime, mtime: c.mtime };
                meta::setattr(self, ino, key, change, c.size).await
            }
            Way::Unkept => self.setattr_unkept(ino, &c),
        }
    }

    /// posix_fallocate (mode 0) of `length` bytes at `offset` in `--posix-attrs` mode: a file
    /// shorter than `offset + length` is extended to it in the store (with zeros; the blocks
    /// are the file system's to allocate); else nothing changes. Other modes (punching holes,
    /// ...) and other mounts: `EOPNOTSUPP`.
    pub(super) async fn fallocate(&self, ino: u64, offset: u64, length: u64, mode: i32) -> Result<(), Errno> {
        if !self.posix() || mode != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        if self.opts.read_only {
            return Err(Errno::EROFS);
        }
        let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
        let (key, writing) = {
            let t = lock(&self.table);
            let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
            let size = match i.local {
                Local::Writing(fh) => self.written(fh).unwrap_or(i.size),
                _ => i.fs.as_ref().map_or(i.size, |a| a.size),
            };
            if i.kind == Kind::Dir {
                return Err(Errno::EISDIR);
            }
            if end <= size {
                return Ok(());
            }
            let writing = match i.local {
                Local::Writing(fh) => Some(fh),
                _ => None,
            };
            (i.key.clone(), writing)
        };
        let set = s3hpc_core::fsattr::SetFsAttr { size: Some(end), ..Default::default() };
        if let Some(fh) = writing {
            return self.posix_resize_writing(ino, fh, key, set).await.map(|_| ());
        }
        let a =
            self.fs_op(&key, s3hpc_core::fsattr::FsOp::SetAttr(set)).await.map_err(|e| errno(&e, "fallocate", &key))?;
        if let Some(i) = lock(&self.table).inodes.get_mut(&ino) {
            i.etag = String::new();
            i.cached_etag = None;
            self.keep_attr(i, a);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ops::tests::{found, fs_over, put, store};
    use super::*;
    use crate::inode::ROOT;
    use s3hpc_core::Store;
    use s3hpc_core::fsattr::FsOp;

    fn change(f: impl FnOnce(&mut ops::Change)) -> ops::Change {
        let mut c = ops::Change::default();
        f(&mut c);
        c
    }

    async fn body(s: &s3hpc_core::memory::MemoryStore, key: &str) -> Vec<u8> {
        let out = s.get_object("bkt", key, Default::default()).await.unwrap();
        out.body.collect().await.unwrap().to_vec()
    }

    #[tokio::test]
    async fn posix_attrs_setattr_and_fallocate_in_the_store() {
        let s = store().await;
        put(&s, "f", b"hello").await;
        let ctx = fs_over(&s, |o| o.posix_attrs = true).await;
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        // chmod, chown, utimes: the store's file system keeps them, the kernel gets them back.
        let attr = ctx.setattr(f, change(|c| c.mode = Some(0o100600))).await.unwrap();
        assert_eq!(attr.perm, 0o600);
        assert_eq!(ctx.fs_op("f", FsOp::GetAttr).await.unwrap().mode & 0o7777, 0o600);
        let attr = ctx.setattr(f, change(|c| (c.uid, c.gid) = (Some(4242), Some(77)))).await.unwrap();
        assert_eq!((attr.uid, attr.gid), (4242, 77));
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let attr = ctx.setattr(f, change(|c| c.mtime = Some(TimeOrNow::SpecificTime(at)))).await.unwrap();
        assert_eq!(attr.mtime, at);
        // truncate: the object is cut in the store; the page cache is not this file's any more.
        lock(&ctx.table).inodes.get_mut(&f).unwrap().cached_etag = Some("old".into());
        assert_eq!(ctx.setattr(f, change(|c| c.size = Some(2))).await.unwrap().size, 2);
        assert_eq!(body(&s, "f").await, b"he");
        assert_eq!(lock(&ctx.table).inodes[&f].cached_etag, None);
        // fallocate extends with zeros, never shrinks; other modes and directories are refused.
        ctx.fallocate(f, 0, 4, 0).await.unwrap();
        assert_eq!(body(&s, "f").await, b"he\0\0");
        ctx.fallocate(f, 0, 1, 0).await.unwrap();
        assert_eq!(body(&s, "f").await.len(), 4);
        assert_eq!(ctx.getattr(f).await.unwrap().size, 4);
        assert_eq!(ctx.fallocate(f, 0, 8, libc::FALLOC_FL_PUNCH_HOLE).await, Err(Errno::EOPNOTSUPP));
        assert_eq!(ctx.fallocate(f, u64::MAX, 2, 0).await, Err(Errno::EFBIG));
        assert_eq!(ctx.fallocate(ROOT, 0, 8, 0).await, Err(Errno::EISDIR));
        assert_eq!(ctx.fallocate(999, 0, 8, 0).await, Err(Errno::ENOENT));
        assert_eq!(ctx.setattr(999, change(|c| c.mode = Some(0o600))).await.err(), Some(Errno::ENOENT));
        // The store's errno comes back: a directory is not truncated.
        assert_eq!(ctx.setattr(ROOT, change(|c| c.size = Some(0))).await.err(), Some(Errno::EISDIR));
        let ro = fs_over(&s, |o| (o.posix_attrs, o.read_only) = (true, true)).await;
        let (rf, _) = found(ro.lookup(ROOT, "f").await.unwrap());
        assert_eq!(ro.setattr(rf, change(|c| c.mode = Some(0o644))).await.err(), Some(Errno::EROFS));
        assert_eq!(ro.fallocate(rf, 0, 100, 0).await, Err(Errno::EROFS));
    }

    #[tokio::test]
    async fn posix_attrs_resize_of_a_file_being_written() {
        let s = store().await;
        let ctx = fs_over(&s, |o| o.posix_attrs = true).await;
        let c = io::Creator { uid: 1, gid: 2, pid: 42, mode: 0o640, umask: 0o022 };
        let io::Created { attr, fh } = ctx.create(ROOT, "new", c).await.unwrap();
        let ino = attr.ino.0;
        assert_eq!(attr.perm, 0o640);
        // Made in the store at once, empty; a truncate before any write goes there, and the
        // file is then complete (the store's, no longer being written here).
        assert_eq!(ctx.fs_op("new", FsOp::GetAttr).await.unwrap().size, 0);
        assert_eq!(ctx.setattr(ino, change(|c| c.size = Some(3))).await.unwrap().size, 3);
        assert_eq!(body(&s, "new").await, b"\0\0\0");
        assert_eq!(lock(&ctx.table).inodes[&ino].local, Local::No);
        ctx.release(fh).await.unwrap();
        // Bytes written through the handle and not in the store: neither cut nor extended.
        let io::Created { attr, fh } = ctx.create(ROOT, "w", c_of()).await.unwrap();
        assert_eq!(ctx.write(fh, 0, b"abc").await.unwrap(), 3);
        assert_eq!(ctx.setattr(attr.ino.0, change(|c| c.size = Some(1))).await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.fallocate(attr.ino.0, 0, 10, 0).await, Err(Errno::EPERM));
        // fallocate within what was written changes nothing.
        ctx.fallocate(attr.ino.0, 0, 2, 0).await.unwrap();
        ctx.flush(fh, 42).await.unwrap();
        ctx.release(fh).await.unwrap();
        assert_eq!(body(&s, "w").await, b"abc");
    }

    fn c_of() -> io::Creator {
        io::Creator { uid: 1, gid: 2, pid: 42, mode: 0o644, umask: 0o022 }
    }

    #[tokio::test]
    async fn s3fs_metadata_setattr_in_the_objects() {
        let s = store().await;
        put(&s, "f", b"hello").await;
        put(&s, "d/x", b"x").await;
        let ctx = fs_over(&s, |o| o.s3fs_metadata = true).await;
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        let attr = ctx.setattr(f, change(|c| (c.mode, c.uid) = (Some(0o100600), Some(1000)))).await.unwrap();
        assert_eq!((attr.perm, attr.uid), (0o600, 1000));
        let user = s.head_object("bkt", "f", Default::default()).await.unwrap().meta.user;
        assert_eq!((user["mode"].as_str(), user["uid"].as_str()), ("33152", "1000"));
        assert_eq!(body(&s, "f").await, b"hello", "a CopyObject onto itself keeps the bytes");
        // A truncate rewrites the object: only with --allow-overwrite.
        assert_eq!(ctx.setattr(f, change(|c| c.size = Some(2))).await.err(), Some(Errno::EPERM));
        let over = fs_over(&s, |o| (o.s3fs_metadata, o.allow_overwrite) = (true, true)).await;
        let (of, _) = found(over.lookup(ROOT, "f").await.unwrap());
        assert_eq!(over.setattr(of, change(|c| c.size = Some(2))).await.unwrap().size, 2);
        assert_eq!(body(&s, "f").await, b"he");
        let user = s.head_object("bkt", "f", Default::default()).await.unwrap().meta.user;
        assert_eq!(user["mode"], "33152", "the mode stays through the rewrite");
        // A directory that is only a prefix gets its object `d/`, as s3fs makes it.
        let (d, _) = found(ctx.lookup(ROOT, "d").await.unwrap());
        assert_eq!(ctx.setattr(d, change(|c| c.mode = Some(0o750))).await.unwrap().perm, 0o750);
        let user = s.head_object("bkt", "d/", Default::default()).await.unwrap().meta.user;
        assert_eq!(user["mode"], (libc::S_IFDIR | 0o750).to_string());
        // fallocate is --posix-attrs's alone.
        assert_eq!(ctx.fallocate(f, 0, 100, 0).await, Err(Errno::EOPNOTSUPP));
        // The root keeps nothing: unkept, so a change is refused.
        assert_eq!(ctx.setattr(ROOT, change(|c| c.mode = Some(0o700))).await.err(), Some(Errno::EPERM));
    }

    #[tokio::test]
    async fn s3fs_metadata_setattr_of_a_file_being_written() {
        let s = store().await;
        let ctx = fs_over(&s, |o| o.s3fs_metadata = true).await;
        let io::Created { attr, fh } = ctx.create(ROOT, "w", c_of()).await.unwrap();
        let ino = attr.ino.0;
        assert_eq!(ctx.write(fh, 0, b"abc").await.unwrap(), 3);
        // The change goes into the metadata of the upload; a new size pads or cuts the buffer.
        assert_eq!(ctx.setattr(ino, change(|c| c.mode = Some(0o600))).await.unwrap().perm, 0o600);
        assert_eq!(ctx.setattr(ino, change(|c| c.size = Some(5))).await.unwrap().size, 5);
        assert_eq!(ctx.setattr(ino, change(|c| c.size = Some(1))).await.unwrap().size, 1);
        ctx.flush(fh, 42).await.unwrap();
        ctx.release(fh).await.unwrap();
        assert_eq!(body(&s, "w").await, b"a");
        let user = s.head_object("bkt", "w", Default::default()).await.unwrap().meta.user;
        assert_eq!(user["mode"], (libc::S_IFREG | 0o600).to_string());
    }

    #[tokio::test]
    async fn unkept_attributes_are_refused_by_the_dispatch() {
        let s = store().await;
        put(&s, "f", b"x").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        assert_eq!(ctx.setattr(f, change(|c| c.mode = Some(0o600))).await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.setattr(f, change(|c| c.mode = Some(0o644))).await.unwrap().perm, 0o644);
        assert_eq!(ctx.fallocate(f, 0, 100, 0).await, Err(Errno::EOPNOTSUPP));
    }
}
