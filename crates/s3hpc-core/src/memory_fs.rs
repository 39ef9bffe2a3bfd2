//! The memory oracle's file-system attributes ([`Store::fs`](crate::Store::fs), see
//! [`crate::fsattr`]): what a POSIX file system does, kept beside the objects. A file's
//! attributes travel with its object (a rename keeps them, a PutObject or CopyObject makes a new
//! file with fresh ones, as the posix backend's publishing rename makes a new inode); hard links
//! share one set of attributes and have their own copies of the bytes, changed together.
//! Symlinks and the attributes of directories are kept per bucket. The oracle decides no
//! permissions (it acts as the file system would for root).

use std::sync::{Arc, Mutex};

use bytes::BytesMut;

use super::{Bucket, State};
use crate::error::Result;
use crate::fsattr::{FsAttr, FsKind, FsOp, FsTime, SetFsAttr, SetTime, entry_path, fs_error};

/// The attributes of one file (shared by its hard links), directory or symlink.
#[derive(Debug, Clone)]
pub(super) struct MemAttr {
    mode: u32,
    uid: u32,
    gid: u32,
    atime: FsTime,
    /// `None`: the object's Last-Modified.
    mtime: Option<FsTime>,
    ctime: FsTime,
    /// A directory made by [`FsOp::Mkdir`]: it exists with nothing below it.
    made: bool,
}

pub(super) type SharedAttr = Arc<Mutex<MemAttr>>;

/// A symlink (its target: data, never followed) or a special file made by mknod, and its
/// attributes.
#[derive(Debug, Clone)]
pub(super) struct MemLink {
    kind: FsKind,
    target: String,
    rdev: u64,
    attr: MemAttr,
}

fn fresh(mode: u32, at: FsTime) -> MemAttr {
    let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
    MemAttr { mode, uid, gid, atime: at, mtime: None, ctime: at, made: false }
}

fn owned(mut a: MemAttr, owner: Option<crate::fsattr::Owner>) -> MemAttr {
    if let Some(o) = owner {
        a.uid = o.uid;
        if let Some(g) = o.gid {
            a.gid = g;
        }
    }
    a
}

/// Whether anything is below the directory `p` (`""`: the bucket's).
fn has_children(b: &Bucket, p: &str) -> bool {
    let dir = if p.is_empty() { String::new() } else { format!("{p}/") };
    let below = |k: Option<&String>| k.is_some_and(|k| k.starts_with(&dir));
    below(b.objects.range(dir.clone()..).next().map(|(k, _)| k))
        || below(b.symlinks.range(dir.clone()..).next().map(|(k, _)| k))
        || b.fs_dirs.range(dir.clone()..).take_while(|(k, _)| k.starts_with(&dir)).any(|(_, a)| a.made)
}

fn lock(a: &SharedAttr) -> std::sync::MutexGuard<'_, MemAttr> {
    a.lock().unwrap_or_else(|p| p.into_inner())
}

enum Entry {
    Root,
    File,
    Dir,
    Symlink,
}

/// What `p` (an entry path) is in `b`: its parents must be directories (a file on the way is
/// ENOTDIR, a symlink ELOOP: the store never follows one), and it must exist (ENOENT).
fn entry(b: &Bucket, p: &str) -> Result<Entry> {
    if p.is_empty() {
        return Ok(Entry::Root);
    }
    let mut at = 0;
    while let Some(i) = p[at..].find('/') {
        let parent = &p[..at + i];
        if b.symlinks.contains_key(parent) {
            return Err(fs_error(libc::ELOOP, &format!("{parent} is a symlink")));
        }
        if b.objects.contains_key(parent) {
            return Err(fs_error(libc::ENOTDIR, &format!("{parent} is a file")));
        }
        at += i + 1;
    }
    if b.symlinks.contains_key(p) {
        return Ok(Entry::Symlink);
    }
    if b.objects.contains_key(p) {
        return Ok(Entry::File);
    }
    let dir = format!("{p}/");
    let first_object = b.objects.range(dir.clone()..).next().map(|(k, _)| k);
    let first_link = b.symlinks.range(dir.clone()..).next().map(|(k, _)| k);
    if first_object.is_some_and(|k| k.starts_with(&dir))
        || first_link.is_some_and(|k| k.starts_with(&dir))
        || b.fs_dirs.get(p).is_some_and(|a| a.made)
    {
        return Ok(Entry::Dir);
    }
    Err(fs_error(libc::ENOENT, &format!("no entry {p}")))
}

/// A new name `p` may be made: it does not exist and its parent is a directory.
fn check_new(b: &Bucket, p: &str) -> Result<()> {
    match entry(b, p) {
        Ok(_) => Err(fs_error(libc::EEXIST, &format!("{p} exists"))),
        Err(e) if crate::fsattr::errno_of(&e) == Some(libc::ENOENT) => {
            let parent = p.rsplit_once('/').map(|(a, _)| a).unwrap_or("");
            match entry(b, parent)? {
                Entry::Root | Entry::Dir => Ok(()),
                _ => Err(fs_error(libc::ENOTDIR, &format!("{parent} is not a directory"))),
            }
        }
        Err(e) => Err(e),
    }
}

/// The file `p`'s shared attributes, made on first use (from its object's Last-Modified).
fn file_attr(b: &mut Bucket, p: &str) -> SharedAttr {
    let o = b.objects.get_mut(p).expect("checked by the caller");
    o.fs.get_or_insert_with(|| Arc::new(Mutex::new(fresh(0o644, FsTime::of(o.info.last_modified))))).clone()
}

/// The keys of `b` whose objects share `a` (the hard links of one file).
fn links_of(b: &Bucket, a: &SharedAttr) -> Vec<String> {
    b.objects.iter().filter(|(_, o)| o.fs.as_ref().is_some_and(|f| Arc::ptr_eq(f, a))).map(|(k, _)| k.clone()).collect()
}

fn attr_of(b: &mut Bucket, p: &str) -> Result<FsAttr> {
    let bucket_time = FsTime::of(b.created);
    Ok(match entry(b, p)? {
        Entry::Root | Entry::Dir => {
            let a = b.fs_dirs.get(p).cloned().unwrap_or_else(|| fresh(0o755, bucket_time));
            let mtime = a.mtime.unwrap_or(bucket_time);
            make(FsKind::Dir, &a, mtime, 0, 2, None, 0)
        }
        Entry::Symlink => {
            let l = &b.symlinks[p];
            let mtime = l.attr.mtime.unwrap_or(l.attr.ctime);
            if l.kind == FsKind::Symlink {
                make(FsKind::Symlink, &l.attr, mtime, l.target.len() as u64, 1, Some(l.target.clone()), 0)
            } else {
                let mut a = make(l.kind, &l.attr, mtime, 0, 1, None, 0);
                a.rdev = l.rdev;
                a
            }
        }
        Entry::File => {
            let shared = file_attr(b, p);
            let nlink = links_of(b, &shared).len() as u32;
            let o = &b.objects[p];
            let a = lock(&shared).clone();
            let mtime = a.mtime.unwrap_or(FsTime::of(o.info.last_modified));
            // The hard links of one file share their attributes: that is its identity.
            let ino = Arc::as_ptr(&shared) as usize as u64;
            make(FsKind::File, &a, mtime, o.data.len() as u64, nlink, None, ino)
        }
    })
}

fn make(kind: FsKind, a: &MemAttr, mtime: FsTime, size: u64, nlink: u32, target: Option<String>, ino: u64) -> FsAttr {
    FsAttr {
        kind,
        mode: a.mode,
        uid: a.uid,
        gid: a.gid,
        size,
        nlink,
        atime: a.atime,
        mtime,
        ctime: a.ctime,
        rdev: 0,
        target,
        ino,
    }
}

fn apply(a: &mut MemAttr, s: &SetFsAttr, now: FsTime) {
    if let Some(u) = s.uid {
        a.uid = u;
    }
    if let Some(g) = s.gid {
        a.gid = g;
    }
    if let Some(m) = s.mode {
        a.mode = m;
    }
    let t = |t: &SetTime| match t {
        SetTime::Now => now,
        SetTime::At(t) => *t,
    };
    if let Some(at) = &s.atime {
        a.atime = t(at);
    }
    if let Some(mt) = &s.mtime {
        a.mtime = Some(t(mt));
    }
    a.ctime = now;
}

fn set_attr(b: &mut Bucket, p: &str, s: &SetFsAttr) -> Result<()> {
    let now = FsTime::now();
    match entry(b, p)? {
        Entry::Root | Entry::Dir => {
            if s.size.is_some() {
                return Err(fs_error(libc::EISDIR, &format!("truncate of the directory {p:?}")));
            }
            let created = FsTime::of(b.created);
            let a = b.fs_dirs.entry(p.to_string()).or_insert_with(|| fresh(0o755, created));
            apply(a, s, now);
        }
        Entry::Symlink if b.symlinks[p].kind != FsKind::Symlink => {
            if s.size.is_some() {
                return Err(fs_error(libc::EINVAL, &format!("truncate of the special file {p}")));
            }
            apply(&mut b.symlinks.get_mut(p).expect("found").attr, s, now);
        }
        Entry::Symlink => {
            if s.mode.is_some() {
                return Err(fs_error(libc::EOPNOTSUPP, &format!("chmod of the symlink {p}")));
            }
            if s.size.is_some() {
                return Err(fs_error(libc::ELOOP, &format!("truncate of the symlink {p}")));
            }
            apply(&mut b.symlinks.get_mut(p).expect("found").attr, s, now);
        }
        Entry::File => {
            let shared = file_attr(b, p);
            let keys = links_of(b, &shared);
            if let Some(size) = s.size {
                for k in &keys {
                    let o = b.objects.get_mut(k).expect("listed");
                    let mut d = BytesMut::from(&o.data[..]);
                    d.resize(size as usize, 0);
                    o.data = d.freeze();
                    o.info.size = size;
                    o.info.etag = crate::checksum::md5_hex(&o.data);
                    o.info.checksum = None;
                    o.info.part_sizes = Vec::new();
                    o.info.part_checksums = Vec::new();
                    o.info.last_modified = now.system_time();
                }
                let mut a = lock(&shared);
                a.mtime = Some(now);
            }
            let mut a = lock(&shared);
            apply(&mut a, s, now);
            if let Some(mt) = a.mtime {
                for k in &keys {
                    b.objects.get_mut(k).expect("listed").info.last_modified = mt.system_time();
                }
            }
        }
    }
    Ok(())
}

impl State {
    /// `Store::fs` of the memory oracle.
    pub(super) fn fs(&mut self, bucket: &str, key: &str, op: FsOp) -> Result<FsAttr> {
        let p = entry_path(key)?;
        let b = self.bucket_mut(bucket)?;
        match op {
            FsOp::GetAttr => {}
            FsOp::SetAttr(s) => set_attr(b, p, &s)?,
            FsOp::Symlink(target) => {
                if p.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                if target.is_empty() {
                    return Err(fs_error(libc::ENOENT, "a symlink to an empty target"));
                }
                if target.len() >= libc::PATH_MAX as usize {
                    return Err(fs_error(libc::ENAMETOOLONG, "the symlink's target"));
                }
                check_new(b, p)?;
                let now = FsTime::now();
                let link = MemLink { kind: FsKind::Symlink, target, rdev: 0, attr: fresh(0o777, now) };
                b.symlinks.insert(p.to_string(), link);
            }
            FsOp::Mknod { kind, mode, rdev, owner } => {
                if p.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                check_new(b, p)?;
                let now = FsTime::now();
                if kind == FsKind::File {
                    let info = crate::types::ObjectInfo {
                        key: p.to_string(),
                        size: 0,
                        etag: crate::checksum::md5_hex(b""),
                        last_modified: now.system_time(),
                        meta: Default::default(),
                        checksum: None,
                        part_sizes: Vec::new(),
                        part_checksums: Vec::new(),
                        tag_count: 0,
                        version_id: None,
                        lock: Default::default(),
                    };
                    let attr = Arc::new(Mutex::new(owned(fresh(mode, now), owner)));
                    let o = super::Object { data: bytes::Bytes::new(), info, tags: Vec::new(), fs: Some(attr) };
                    b.objects.insert(p.to_string(), o);
                } else {
                    let rdev = if matches!(kind, FsKind::CharDevice | FsKind::BlockDevice) { rdev } else { 0 };
                    let node = MemLink { kind, target: String::new(), rdev, attr: owned(fresh(mode, now), owner) };
                    b.symlinks.insert(p.to_string(), node);
                }
            }
            FsOp::Mkdir { mode, owner } => {
                if p.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                check_new(b, p)?;
                let mut a = owned(fresh(mode, FsTime::now()), owner);
                a.made = true;
                b.fs_dirs.insert(p.to_string(), a);
            }
            FsOp::Unlink => match entry(b, p)? {
                Entry::Symlink => {
                    let mut a = attr_of(b, p)?;
                    b.symlinks.remove(p);
                    a.nlink -= 1;
                    return Ok(a);
                }
                // Objects go through DeleteObject (as on the posix backend).
                Entry::File => {
                    return Err(fs_error(libc::EOPNOTSUPP, &format!("unlink of the object {p:?} (DeleteObject)")));
                }
                Entry::Root | Entry::Dir => {
                    return Err(fs_error(libc::EISDIR, &format!("unlink of the directory {p:?}")));
                }
            },
            FsOp::Rmdir => match entry(b, p)? {
                Entry::Root => return Err(fs_error(libc::EBUSY, "rmdir of the bucket's directory")),
                Entry::Dir => {
                    if has_children(b, p) {
                        return Err(fs_error(libc::ENOTEMPTY, &format!("rmdir of {p:?}")));
                    }
                    let a = attr_of(b, p)?;
                    b.fs_dirs.remove(p);
                    return Ok(a);
                }
                _ => return Err(fs_error(libc::ENOTDIR, &format!("rmdir of {p:?}"))),
            },
            FsOp::Rename { source, noreplace } => {
                let sp = entry_path(&source)?;
                if p.is_empty() || sp.is_empty() {
                    return Err(fs_error(libc::EBUSY, "a rename of the bucket's directory"));
                }
                let kind = entry(b, sp)?;
                if matches!(kind, Entry::File) {
                    // Objects move with RenameObject (as on the posix backend).
                    return Err(fs_error(libc::EOPNOTSUPP, &format!("rename of the object {sp:?} (RenameObject)")));
                }
                if sp == p {
                    return attr_of(b, p);
                }
                match entry(b, p) {
                    Ok(_) if noreplace => return Err(fs_error(libc::EEXIST, &format!("{p:?} exists"))),
                    Ok(Entry::Dir) => return Err(fs_error(libc::EISDIR, &format!("{p:?} is a directory"))),
                    Ok(_) => {
                        b.objects.remove(p);
                        b.symlinks.remove(p);
                    }
                    Err(_) => check_new(b, p)?,
                }
                match kind {
                    Entry::Symlink => {
                        let l = b.symlinks.remove(sp).expect("found");
                        b.symlinks.insert(p.to_string(), l);
                    }
                    Entry::File => unreachable!("refused above"),
                    // The oracle renames directories as RenameObject of a prefix does.
                    Entry::Root | Entry::Dir => {
                        return Err(fs_error(libc::EOPNOTSUPP, "the memory oracle renames directories by prefix"));
                    }
                }
            }
            FsOp::Link(src) => {
                let sp = entry_path(&src)?;
                match entry(b, sp)? {
                    Entry::File => {}
                    Entry::Symlink => {
                        check_new(b, p)?;
                        let l = b.symlinks[sp].clone();
                        b.symlinks.insert(p.to_string(), l);
                        return attr_of(b, p);
                    }
                    _ => return Err(fs_error(libc::EPERM, &format!("a hard link to the directory {sp:?}"))),
                }
                if p.is_empty() {
                    return Err(fs_error(libc::EEXIST, "the bucket's directory"));
                }
                check_new(b, p)?;
                let shared = file_attr(b, sp);
                lock(&shared).ctime = FsTime::now();
                let o = &b.objects[sp];
                let mut info = o.info.clone();
                info.key = p.to_string();
                let copy = super::Object { data: o.data.clone(), info, tags: o.tags.clone(), fs: Some(shared) };
                b.objects.insert(p.to_string(), copy);
            }
        }
        attr_of(b, p)
    }
}
