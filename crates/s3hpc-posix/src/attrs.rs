//! `Store::fs` on the posix backend: the file system's own attributes of the entry a key names
//! (mode, owner, times, size, symlinks, hard links; see `s3hpc_core::fsattr`).
//!
//! Containment: the entry is reached from the bucket's directory one component at a time, each
//! opened `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the one before, so no symlink is ever
//! followed on the way (a symlink there is `ELOOP`, as `RESOLVE_NO_SYMLINKS` answers) and `..`
//! or `.s3hpc` never appear (the key is checked first). The final name is acted on with the
//! `*at` calls that do not follow it (`fstatat` and `fchownat` with `AT_SYMLINK_NOFOLLOW`,
//! `utimensat` likewise, `linkat` without `AT_SYMLINK_FOLLOW`, `open(O_NOFOLLOW)` for truncate;
//! chmod goes through an `O_PATH | O_NOFOLLOW` descriptor checked not to be a symlink). A
//! symlink's target is data: stored and read back, never resolved here.
//!
//! Permissions are the kernel's: the work runs as the request's identity under `--identity
//! posix` (`PosixStore::run`), so chown is honoured only as far as the kernel allows that
//! account. Without `--identity posix` the gateway would act with its own rights for every
//! client: there owners cannot be changed, set-id bits cannot be set, and symlinks cannot be made
//! (reads follow symlinks that stay beneath the root, so one made through S3 could read another
//! bucket's files), each refused with `EPERM`.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;

use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;

use s3hpc_core::fsattr::{
    FsAttr, FsKind, FsOp, FsTime, Owner, SetFsAttr, SetTime, entry_path, fs_error, validate_fs_key,
};
use s3hpc_core::{Error, Result, names};

use crate::Inner;

fn cstr(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| fs_error(libc::EINVAL, "a name with a NUL byte"))
}

/// The errno of a failed call.
fn errno(e: Errno) -> i32 {
    e.raw_os_error()
}

/// `AT_EMPTY_PATH` when `name` is empty (the call is then about `dir` itself).
fn empty_path(name: &str) -> AtFlags {
    if name.is_empty() { AtFlags::EMPTY_PATH } else { AtFlags::empty() }
}

/// `openat(dir, name, flags)`.
fn open_at(dir: &File, name: &str, flags: libc::c_int) -> std::result::Result<File, i32> {
    let c = CString::new(name).map_err(|_| libc::EINVAL)?;
    let flags = OFlags::from_bits_retain(flags as u32) | OFlags::CLOEXEC;
    rustix::fs::openat(dir, &c, flags, Mode::empty()).map(File::from).map_err(errno)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` (`name` empty: `dir` itself).
fn lstat_at(dir: &File, name: &str) -> std::result::Result<Stat, i32> {
    let c = CString::new(name).map_err(|_| libc::EINVAL)?;
    rustix::fs::statat(dir, &c, AtFlags::SYMLINK_NOFOLLOW | empty_path(name)).map_err(errno)
}

/// The directory `name` in `dir`, as an `O_PATH` handle, never through a symlink.
fn open_dir(dir: &File, name: &str) -> std::result::Result<File, i32> {
    match open_at(dir, name, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW) {
        // O_NOFOLLOW with O_DIRECTORY reports a symlink as "not a directory": say ELOOP, as a
        // resolution that refuses symlinks does.
        Err(libc::ENOTDIR) if lstat_at(dir, name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK) => {
            Err(libc::ELOOP)
        }
        r => r,
    }
}

/// An entry reached without following symlinks: its directory and its name in it (empty for
/// the bucket's own directory, which `dir` then is).
struct At {
    dir: File,
    name: String,
}

fn time_of(sec: i64, nsec: i64) -> FsTime {
    FsTime { sec, nsec: nsec.clamp(0, 999_999_999) as u32 }
}

fn attr_of(at: &At) -> std::result::Result<FsAttr, i32> {
    let st = lstat_at(&at.dir, &at.name)?;
    let kind = FsKind::of_mode(st.st_mode);
    let target = if kind == FsKind::Symlink { Some(read_link(at)?) } else { None };
    Ok(FsAttr {
        kind,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        size: st.st_size as u64,
        nlink: st.st_nlink as u32,
        atime: time_of(st.st_atime, st.st_atime_nsec as i64),
        mtime: time_of(st.st_mtime, st.st_mtime_nsec as i64),
        ctime: time_of(st.st_ctime, st.st_ctime_nsec as i64),
        rdev: st.st_rdev,
        target,
        ino: st.st_ino,
    })
}

/// The owner and mode a new entry gets (after `mknodat`/`mkdirat`): the owner first, then the
/// mode (a chown clears set-id bits), whatever the gateway's umask took away.
/// The owner is as far as the account may give it away (under `--identity posix`; an account
/// that is not root keeps its files, as on the file system), never failing the creation.
fn settle_new(at: &At, mode: u32, owner: Option<Owner>, identity: bool, what: &str) -> Result<()> {
    if let Some(o) = owner.filter(|_| identity) {
        let set = SetFsAttr { uid: Some(o.uid), gid: o.gid, ..Default::default() };
        if let Err(e) = set_attr(at, &set, identity, what) {
            tracing::debug!("the owner of the new entry {what}: {e}");
        }
    }
    set_attr(at, &SetFsAttr { mode: Some(mode), ..Default::default() }, identity, what)
}

/// `unlinkat(dir, name, flags)`.
fn unlink_at(at: &At, flags: AtFlags) -> std::result::Result<(), i32> {
    let n = CString::new(at.name.as_str()).map_err(|_| libc::EINVAL)?;
    rustix::fs::unlinkat(&at.dir, &n, flags).map_err(errno)
}

fn read_link(at: &At) -> std::result::Result<String, i32> {
    let c = CString::new(at.name.as_str()).map_err(|_| libc::EINVAL)?;
    let buf = Vec::with_capacity(libc::PATH_MAX as usize + 1);
    let buf = rustix::fs::readlinkat(&at.dir, &c, buf).map_err(errno)?.into_bytes();
    // A target that is not UTF-8 (made by a POSIX user) is shown lossily.
    Ok(String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

fn timespec(t: &Option<SetTime>) -> rustix::fs::Timespec {
    use rustix::fs::{Timespec, UTIME_NOW, UTIME_OMIT};
    match t {
        None => Timespec { tv_sec: 0, tv_nsec: UTIME_OMIT },
        Some(SetTime::Now) => Timespec { tv_sec: 0, tv_nsec: UTIME_NOW },
        Some(SetTime::At(t)) => Timespec { tv_sec: t.sec, tv_nsec: t.nsec as _ },
    }
}

fn set_attr(at: &At, s: &SetFsAttr, identity: bool, what: &str) -> Result<()> {
    let err = |e: i32, op: &str| fs_error(e, &format!("{op} of {what}"));
    let name = cstr(&at.name)?;
    let empty = empty_path(&at.name);
    let st = lstat_at(&at.dir, &at.name).map_err(|e| err(e, "stat"))?;
    if s.uid.is_some() || s.gid.is_some() {
        let uid = s.uid.filter(|u| *u != st.st_uid);
        let gid = s.gid.filter(|g| *g != st.st_gid);
        if !identity && (uid.is_some() || gid.is_some()) {
            return Err(err(libc::EPERM, "chown (owners are kept only under --identity posix)"));
        }
        // None (-1) leaves an id as it is.
        let u = s.uid.map(rustix::fs::Uid::from_raw_unchecked);
        let g = s.gid.map(rustix::fs::Gid::from_raw_unchecked);
        rustix::fs::chownat(&at.dir, &name, u, g, AtFlags::SYMLINK_NOFOLLOW | empty)
            .map_err(|e| err(errno(e), "chown"))?;
    }
    if let Some(mode) = s.mode {
        if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(err(libc::EOPNOTSUPP, "chmod of a symlink"));
        }
        if !identity && mode & (libc::S_ISUID | libc::S_ISGID) != 0 && st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return Err(err(libc::EPERM, "chmod with set-id bits (only under --identity posix)"));
        }
        // The entry itself, not following a symlink swapped in since the stat: an O_PATH
        // descriptor, checked, then chmod through its /proc link (as glibc's lchmod does).
        let f = if at.name.is_empty() {
            open_at(&at.dir, ".", libc::O_PATH | libc::O_NOFOLLOW)
        } else {
            open_at(&at.dir, &at.name, libc::O_PATH | libc::O_NOFOLLOW)
        }
        .map_err(|e| err(e, "chmod"))?;
        let fst = rustix::fs::fstat(&f).map_err(|e| err(errno(e), "chmod"))?;
        if fst.st_mode & libc::S_IFMT == libc::S_IFLNK {
            return Err(err(libc::EOPNOTSUPP, "chmod of a symlink"));
        }
        let proc = cstr(&format!("/proc/self/fd/{}", f.as_raw_fd()))?;
        rustix::fs::chmod(&proc, Mode::from_raw_mode(mode)).map_err(|e| err(errno(e), "chmod"))?;
    }
    if let Some(size) = s.size {
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => return Err(err(libc::EISDIR, "truncate")),
            libc::S_IFLNK => return Err(err(libc::ELOOP, "truncate")),
            libc::S_IFREG => {}
            _ => return Err(err(libc::EINVAL, "truncate")),
        }
        let f = open_at(&at.dir, &at.name, libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .map_err(|e| err(e, "truncate"))?;
        f.set_len(size).map_err(|e| err(e.raw_os_error().unwrap_or(libc::EIO), "truncate"))?;
    }
    if s.atime.is_some() || s.mtime.is_some() {
        let times = rustix::fs::Timestamps { last_access: timespec(&s.atime), last_modification: timespec(&s.mtime) };
        rustix::fs::utimensat(&at.dir, &name, &times, AtFlags::SYMLINK_NOFOLLOW | empty)
            .map_err(|e| err(errno(e), "utimensat"))?;
    }
    Ok(())
}

impl Inner {
    /// The entry `p` (an entry path, see `fsattr::entry_path`) of `bucket`, reached without
    /// following symlinks.
    fn fs_entry(&self, bucket: &str, key: &str, p: &str) -> Result<At> {
        names::check_bucket_name_for_access(bucket)?;
        let bdir = open_dir(&self.root_fd, bucket).map_err(|e| match e {
            libc::ENOENT | libc::ENOTDIR | libc::ELOOP => Error::no_such_bucket(bucket),
            e => fs_error(e, &format!("the bucket {bucket}")),
        })?;
        if p.is_empty() {
            return Ok(At { dir: bdir, name: String::new() });
        }
        // A file system's paths, not S3's keys: up to PATH_MAX (longer than the 1,024 bytes of
        // a key), each component up to NAME_MAX, never the internal directory.
        if validate_fs_key(p).is_err() {
            return Err(fs_error(libc::ENAMETOOLONG, &format!("the key of {} bytes", p.len())));
        }
        for c in p.split('/') {
            if c == crate::keys::INTERNAL {
                return Err(fs_error(libc::EINVAL, &format!("the key {key:?} (the segment '.s3hpc' is reserved)")));
            }
            if c.len() > crate::keys::NAME_MAX {
                return Err(fs_error(libc::ENAMETOOLONG, &format!("a component of {} bytes", c.len())));
            }
        }
        let (parents, name) = p.rsplit_once('/').unwrap_or(("", p));
        let mut dir = bdir;
        for c in parents.split('/').filter(|c| !c.is_empty()) {
            dir = open_dir(&dir, c).map_err(|e| fs_error(e, &format!("the directory {c:?} of {key:?}")))?;
        }
        Ok(At { dir, name: name.to_string() })
    }

    /// `Store::fs` (runs as the request's identity, see `PosixStore::run`).
    pub(crate) fn fs_op(&self, bucket: &str, key: &str, op: FsOp) -> Result<FsAttr> {
        let p = entry_path(key)?;
        let at = self.fs_entry(bucket, key, p)?;
        let identity = self.opts.posix_identity;
        let what = format!("{key:?}");
        let exists = |at: &At| match lstat_at(&at.dir, &at.name) {
            Ok(_) => Err(fs_error(libc::EEXIST, &format!("{what} exists"))),
            Err(_) => Ok(()),
        };
        match &op {
            FsOp::GetAttr => {}
            FsOp::SetAttr(s) => set_attr(&at, s, identity, &what)?,
            FsOp::Symlink(target) => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                if !identity {
                    return Err(fs_error(
                        libc::EPERM,
                        &format!("symlink {what} (symlinks are made only under --identity posix: reads follow them)"),
                    ));
                }
                exists(&at)?;
                let (t, n) = (cstr(target)?, cstr(&at.name)?);
                if target.is_empty() {
                    return Err(fs_error(libc::ENOENT, "a symlink to an empty target"));
                }
                rustix::fs::symlinkat(&t, &at.dir, &n).map_err(|e| fs_error(errno(e), &format!("symlink {what}")))?;
            }
            FsOp::Mknod { kind, mode, rdev, owner } => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                let fmt = match kind {
                    FsKind::File => libc::S_IFREG,
                    FsKind::Fifo => libc::S_IFIFO,
                    FsKind::Socket => libc::S_IFSOCK,
                    FsKind::CharDevice => libc::S_IFCHR,
                    FsKind::BlockDevice => libc::S_IFBLK,
                    FsKind::Dir | FsKind::Symlink => {
                        return Err(fs_error(libc::EINVAL, "mknod of a directory or symlink"));
                    }
                };
                if !identity && *kind != FsKind::File {
                    return Err(fs_error(
                        libc::EPERM,
                        &format!("mknod {what} (special files are made only under --identity posix)"),
                    ));
                }
                exists(&at)?;
                let n = cstr(&at.name)?;
                let (kind, perm) = (rustix::fs::FileType::from_raw_mode(fmt), Mode::from_raw_mode(mode & 0o777));
                rustix::fs::mknodat(&at.dir, &n, kind, perm, *rdev as libc::dev_t)
                    .map_err(|e| fs_error(errno(e), &format!("mknod {what}")))?;
                self.note_changed(bucket, p);
                // The owner and mode asked for, whatever the gateway's umask took away.
                settle_new(&at, *mode, *owner, identity, &what)?;
            }
            FsOp::Mkdir { mode, owner } => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                let n = cstr(&at.name)?;
                rustix::fs::mkdirat(&at.dir, &n, Mode::from_raw_mode(mode & 0o777))
                    .map_err(|e| fs_error(errno(e), &format!("mkdir {what}")))?;
                // A directory object (`key/`, as a PutObject of it makes): it stays when the
                // last object below it goes (DeleteObject and RenameObject prune emptied
                // directories that are not objects). A path longer than keys stays plain.
                let dkey = format!("{p}/");
                if dkey.len() <= s3hpc_core::MAX_KEY_LEN {
                    let bdir = self.bucket_dir(bucket)?;
                    let kp = crate::keys::parse_key(&dkey)?;
                    let rec = crate::meta::Record { etag: s3hpc_core::checksum::md5_hex(b""), ..Default::default() };
                    self.publish_dir(&bdir, bucket, &dkey, &kp, Vec::new(), rec, &Default::default())?;
                }
                self.note_changed(bucket, p);
                settle_new(&at, *mode, *owner, identity, &what)?;
            }
            FsOp::Rename { source, noreplace } => {
                let sp = entry_path(source)?;
                let from = self.fs_entry(bucket, source, sp)?;
                if from.name.is_empty() || at.name.is_empty() {
                    return Err(fs_error(libc::EBUSY, "a rename of the bucket's directory"));
                }
                let st = lstat_at(&from.dir, &from.name).map_err(|e| fs_error(e, &format!("rename of {source:?}")))?;
                if st.st_mode & libc::S_IFMT == libc::S_IFREG {
                    // An object's record may live beside it (a sidecar named by key): RenameObject
                    // moves it, a bare rename would not.
                    return Err(fs_error(
                        libc::EOPNOTSUPP,
                        &format!("rename of the regular file {source:?} (RenameObject renames objects)"),
                    ));
                }
                let (s, n) = (cstr(&from.name)?, cstr(&at.name)?);
                use rustix::fs::RenameFlags;
                let flags = if *noreplace { RenameFlags::NOREPLACE } else { RenameFlags::empty() };
                // renameat2 follows no final symlink (it moves the name).
                rustix::fs::renameat_with(&from.dir, &s, &at.dir, &n, flags)
                    .map_err(|e| fs_error(errno(e), &format!("rename {source:?} to {what}")))?;
                self.note_changed(bucket, sp);
                self.note_changed(bucket, p);
            }
            FsOp::Unlink => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EISDIR, "the bucket's directory"));
                }
                let mut a = attr_of(&at).map_err(|e| fs_error(e, &format!("unlink {what}")))?;
                match a.kind {
                    FsKind::Dir => return Err(fs_error(libc::EISDIR, &format!("unlink {what}"))),
                    // Objects go through DeleteObject (versions, records); only a file that no
                    // object key can name (a path longer than S3's keys) is removed here.
                    FsKind::File if p.len() <= s3hpc_core::types::MAX_KEY_LEN => {
                        return Err(fs_error(
                            libc::EOPNOTSUPP,
                            &format!("unlink of the regular file {what} (DeleteObject deletes objects)"),
                        ));
                    }
                    _ => {}
                }
                unlink_at(&at, AtFlags::empty()).map_err(|e| fs_error(e, &format!("unlink {what}")))?;
                self.note_changed(bucket, p);
                a.nlink = a.nlink.saturating_sub(1);
                return Ok(a);
            }
            FsOp::Rmdir => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EBUSY, "rmdir of the bucket's directory"));
                }
                let a = attr_of(&at).map_err(|e| fs_error(e, &format!("rmdir {what}")))?;
                if a.kind != FsKind::Dir {
                    return Err(fs_error(libc::ENOTDIR, &format!("rmdir {what}")));
                }
                unlink_at(&at, AtFlags::REMOVEDIR).map_err(|e| fs_error(e, &format!("rmdir {what}")))?;
                self.note_changed(bucket, p);
                return Ok(a);
            }
            FsOp::Link(src) => {
                if at.name.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                let sp = entry_path(src)?;
                let from = self.fs_entry(bucket, src, sp)?;
                if from.name.is_empty() {
                    return Err(fs_error(libc::EPERM, "a hard link to the bucket's directory"));
                }
                let (s, n) = (cstr(&from.name)?, cstr(&at.name)?);
                // No flags: a final symlink is linked itself, not followed.
                rustix::fs::linkat(&from.dir, &s, &at.dir, &n, AtFlags::empty())
                    .map_err(|e| fs_error(errno(e), &format!("link {what} to {src:?}")))?;
                self.note_changed(bucket, p);
            }
        }
        attr_of(&at).map_err(|e| fs_error(e, &format!("stat of {what}")))
    }
}
