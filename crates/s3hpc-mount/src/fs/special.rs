//! Entries other than files and directories: symlinks, hard links and special files (FIFOs,
//! sockets, devices). They exist only where a mode keeps them: in the store with
//! `--posix-attrs` (`posix`), as objects with s3fs's metadata with `--metadata s3fs` (`meta`:
//! symlinks and special files, no hard links). Elsewhere they are refused with the errno
//! Mountpoint answers.

use super::*;

impl Ctx {
    /// mknod of `name` in `parent` by `owner` with `mode` (its type bits say what to make),
    /// `umask` and the device number `rdev`; `ENOSYS` where no mode keeps special files.
    pub(super) async fn mknod(
        &self,
        owner: (u32, u32),
        parent: u64,
        name: &str,
        mode: u32,
        umask: u32,
        rdev: u32,
    ) -> Result<ops::Entry, Errno> {
        if self.opts.s3fs_metadata {
            return meta::mknod(self, owner, parent, name, mode & !umask, rdev).await;
        }
        if !self.posix() {
            return Err(Errno::ENOSYS);
        }
        self.posix_mknod(owner, parent, name, mode, umask, rdev).await
    }

    /// symlink `name` in `parent` to `target`, made by `owner`; `EPERM` where no mode keeps
    /// symlinks, as Mountpoint answers.
    pub(super) async fn symlink(
        &self,
        owner: (u32, u32),
        parent: u64,
        name: &str,
        target: &str,
    ) -> Result<ops::Entry, Errno> {
        if self.opts.s3fs_metadata {
            return meta::symlink(self, owner, parent, name, target).await;
        }
        if !self.posix() {
            return Err(Errno::EPERM);
        }
        self.posix_symlink(parent, name, target.to_string()).await
    }

    /// A hard link `newname` in `newparent` to the file `ino`: only with `--posix-attrs`, else
    /// `EPERM`, as Mountpoint answers.
    pub(super) async fn link(&self, ino: u64, newparent: u64, newname: &str) -> Result<ops::Entry, Errno> {
        if !self.posix() {
            return Err(Errno::EPERM);
        }
        self.posix_link(ino, newparent, newname).await
    }

    /// The target of the symlink `ino`; `EINVAL` for anything else (and everywhere no mode
    /// keeps symlinks).
    pub(super) async fn readlink(&self, ino: u64) -> Result<Bytes, Errno> {
        if self.opts.s3fs_metadata {
            return meta::readlink(self, ino).await;
        }
        if !self.posix() {
            return Err(Errno::EINVAL);
        }
        self.posix_readlink(ino).await.map(Bytes::from)
    }
}

#[cfg(test)]
mod tests {
    use super::ops::tests::{OWNER, found, fs_over, put, store};
    use super::*;
    use crate::inode::ROOT;
    use s3hpc_core::Store;

    #[tokio::test]
    async fn posix_attrs_symlinks_links_and_special_files_in_the_store() {
        let s = store().await;
        put(&s, "f", b"data").await;
        let ctx = fs_over(&s, |o| o.posix_attrs = true).await;
        let (sl, attr) = found(ctx.symlink(OWNER, ROOT, "sl", "f").await.unwrap());
        assert_eq!(attr.kind, FileType::Symlink);
        assert_eq!(&ctx.readlink(sl).await.unwrap()[..], b"f");
        // From the table while fresh, else asked again.
        lock(&ctx.table).inodes.get_mut(&sl).unwrap().valid_until = Instant::now();
        assert_eq!(&ctx.readlink(sl).await.unwrap()[..], b"f");
        assert_eq!(ctx.symlink(OWNER, ROOT, "sl", "g").await.err(), Some(Errno::EEXIST));
        // A hard link is one more name of the same inode, whose link count both names show.
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        let (l, attr) = found(ctx.link(f, ROOT, "hard").await.unwrap());
        assert_eq!((l, attr.nlink), (f, 2));
        assert_eq!(ctx.getattr(f).await.unwrap().nlink, 2);
        assert_eq!(ctx.readlink(f).await.err(), Some(Errno::EINVAL), "not a symlink");
        // A FIFO and a character device, with the mode asked for less the umask.
        let (_, attr) = found(ctx.mknod(OWNER, ROOT, "fifo", libc::S_IFIFO | 0o666, 0o022, 0).await.unwrap());
        assert_eq!((attr.kind, attr.perm, attr.uid), (FileType::NamedPipe, 0o644, OWNER.0));
        let (_, attr) = found(ctx.mknod(OWNER, ROOT, "tty", libc::S_IFCHR | 0o600, 0, 0x0501).await.unwrap());
        assert_eq!((attr.kind, attr.rdev), (FileType::CharDevice, 0x0501));
        assert_eq!(ctx.mknod(OWNER, ROOT, "dir", libc::S_IFDIR | 0o755, 0, 0).await.err(), Some(Errno::EINVAL));
        // mkdir through the same dispatch: in the store, with its mode and owner.
        let (_, attr) = found(ctx.mkdir(OWNER, ROOT, "d", 0o777, 0o027).await.unwrap());
        assert_eq!((attr.kind, attr.perm, attr.gid), (FileType::Directory, 0o750, OWNER.1));
        // A file being written here is not the store's yet: no hard link to it.
        let c = io::Creator { uid: 1, gid: 2, pid: 42, mode: 0o644, umask: 0 };
        let io::Created { attr, fh } = ctx.create(ROOT, "w", c).await.unwrap();
        assert_eq!(ctx.write(fh, 0, b"x").await.unwrap(), 1);
        assert_eq!(ctx.link(attr.ino.0, ROOT, "w2").await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.link(999, ROOT, "x").await.err(), Some(Errno::ENOENT));
        assert_eq!(ctx.readlink(999).await.err(), Some(Errno::ENOENT));
        assert_eq!(ctx.symlink(OWNER, f, "x", "y").await.err(), Some(Errno::ENOTDIR));
        let ro = fs_over(&s, |o| (o.posix_attrs, o.read_only) = (true, true)).await;
        assert_eq!(ro.symlink(OWNER, ROOT, "x", "y").await.err(), Some(Errno::EROFS));
        assert_eq!(ro.mknod(OWNER, ROOT, "x", libc::S_IFIFO, 0, 0).await.err(), Some(Errno::EROFS));
    }

    #[tokio::test]
    async fn s3fs_metadata_symlinks_and_special_files_as_objects() {
        let s = store().await;
        put(&s, "f", b"data").await;
        let ctx = fs_over(&s, |o| o.s3fs_metadata = true).await;
        let (sl, attr) = found(ctx.symlink(OWNER, ROOT, "sl", "some/target").await.unwrap());
        assert_eq!(attr.kind, FileType::Symlink);
        // The object's body is the target; its mode is S_IFLNK | 0777, as s3fs writes it.
        let out = s.get_object("bkt", "sl", Default::default()).await.unwrap();
        assert_eq!(out.info.meta.user["mode"], (libc::S_IFLNK | 0o777).to_string());
        assert_eq!(&out.body.collect().await.unwrap()[..], b"some/target");
        assert_eq!(&ctx.readlink(sl).await.unwrap()[..], b"some/target");
        let (_, attr) = found(ctx.mknod(OWNER, ROOT, "fifo", libc::S_IFIFO | 0o640, 0o022, 0).await.unwrap());
        assert_eq!((attr.kind, attr.perm), (FileType::NamedPipe, 0o640));
        let user = s.head_object("bkt", "fifo", Default::default()).await.unwrap().meta.user;
        assert_eq!(user["mode"], (libc::S_IFIFO | 0o640).to_string());
        assert_eq!(ctx.mknod(OWNER, ROOT, "fifo", libc::S_IFIFO, 0, 0).await.err(), Some(Errno::EEXIST));
        assert_eq!(ctx.symlink(OWNER, ROOT, "f", "x").await.err(), Some(Errno::EEXIST), "the bucket holds f");
        // mkdir: the directory's object `d/`.
        let (_, attr) = found(ctx.mkdir(OWNER, ROOT, "d", 0o700, 0).await.unwrap());
        assert_eq!((attr.kind, attr.perm), (FileType::Directory, 0o700));
        let user = s.head_object("bkt", "d/", Default::default()).await.unwrap().meta.user;
        assert_eq!(user["mode"], (libc::S_IFDIR | 0o700).to_string());
        // No hard links; readlink of a regular file is EINVAL.
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        assert_eq!(ctx.link(f, ROOT, "hard").await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.readlink(f).await.err(), Some(Errno::EINVAL));
    }

    #[tokio::test]
    async fn refused_where_no_mode_keeps_them() {
        let s = store().await;
        put(&s, "f", b"data").await;
        let ctx = fs_over(&s, |_| {}).await;
        let (f, _) = found(ctx.lookup(ROOT, "f").await.unwrap());
        assert_eq!(ctx.mknod(OWNER, ROOT, "p", libc::S_IFIFO | 0o644, 0, 0).await.err(), Some(Errno::ENOSYS));
        assert_eq!(ctx.symlink(OWNER, ROOT, "l", "f").await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.link(f, ROOT, "h").await.err(), Some(Errno::EPERM));
        assert_eq!(ctx.readlink(f).await.err(), Some(Errno::EINVAL));
        // Nothing reached the bucket.
        for k in ["p", "l", "h"] {
            assert!(s.head_object("bkt", k, Default::default()).await.is_err());
        }
    }
}
