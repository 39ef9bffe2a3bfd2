//! `--metadata s3fs`: on stores without s3hpc's file-system extension, the mode, owner and times
//! of a file are kept in its object's user metadata under the keys s3fs (and rclone's
//! `--vfs` metadata) use: `x-amz-meta-mode` (the whole `st_mode` in decimal, `S_IFREG` included),
//! `x-amz-meta-uid`, `x-amz-meta-gid`, `x-amz-meta-mtime`, `x-amz-meta-atime` and
//! `x-amz-meta-ctime` (seconds since the epoch, decimal, optionally with a fraction). A file
//! that carries none is shown as before (the options' mode and owner, Last-Modified).
//!
//! They are read with a HEAD (lookups and attribute refreshes of files: listings do not carry
//! metadata), written with the object at upload, and changed by chmod, chown and utimes as s3fs
//! does: a CopyObject of the object onto itself with the new metadata (conditional on the ETag
//! seen, so a replacement meanwhile is not overwritten: `EIO`, to be tried again).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr};
use s3hpc_core::{CopyObjectRequest, Directive, Error, GetObjectRequest, PutObjectOutput, PutObjectRequest};

use super::ops::Entry;
use super::{Ctx, Handle, lock};
use crate::errors::errno;
use crate::inode::{Found, Kind, Local};

/// A file's attributes as s3fs keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3fsAttr {
    /// The whole `st_mode`: the type bits (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, `S_IFIFO`,
    /// `S_IFSOCK`, `S_IFCHR`, `S_IFBLK`; none: a regular file) and the permission bits.
    pub mode: u32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mtime: Option<SystemTime>,
    pub atime: Option<SystemTime>,
    pub ctime: Option<SystemTime>,
    /// A device's number (`x-amz-meta-rdev`, which s3fs 1.90 neither writes nor reads: its
    /// devices show 0).
    pub rdev: Option<u32>,
}

fn time(v: &str) -> Option<SystemTime> {
    let (s, frac) = v.trim().split_once('.').unwrap_or((v.trim(), ""));
    let secs: u64 = s.parse().ok()?;
    let nanos = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().take(9).collect();
        let n: u32 = digits.parse().ok()?;
        n * 10u32.pow(9 - digits.len() as u32)
    };
    Some(UNIX_EPOCH + Duration::new(secs, nanos))
}

fn time_text(t: SystemTime) -> String {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs().to_string()
}

impl S3fsAttr {
    /// The attributes in an object's user metadata (names without `x-amz-meta-`); `None` when
    /// it has no mode (not written by s3fs, rclone or this mount).
    pub fn of(user: &BTreeMap<String, String>) -> Option<S3fsAttr> {
        let mode: u32 = user.get("mode")?.trim().parse().ok()?;
        let num = |k: &str| user.get(k).and_then(|v| v.trim().parse().ok());
        Some(S3fsAttr {
            mode,
            uid: num("uid"),
            gid: num("gid"),
            mtime: user.get("mtime").and_then(|v| time(v)),
            atime: user.get("atime").and_then(|v| time(v)),
            ctime: user.get("ctime").and_then(|v| time(v)),
            rdev: num("rdev"),
        })
    }

    /// The type bits (`S_IFREG` where the mode has none).
    pub fn kind(&self) -> u32 {
        match self.mode & libc::S_IFMT {
            0 => libc::S_IFREG,
            k => k,
        }
    }

    /// What the entry is, as the kernel gets it.
    pub fn file_type(&self) -> fuser::FileType {
        use fuser::FileType as F;
        match self.kind() {
            libc::S_IFDIR => F::Directory,
            libc::S_IFLNK => F::Symlink,
            libc::S_IFIFO => F::NamedPipe,
            libc::S_IFSOCK => F::Socket,
            libc::S_IFCHR => F::CharDevice,
            libc::S_IFBLK => F::BlockDevice,
            _ => F::RegularFile,
        }
    }

    /// Attributes of a new entry of type `kind` (`S_IFREG`, `S_IFDIR`, ...) made by `owner`
    /// now with the permission bits `perm`.
    pub fn new(kind: u32, perm: u32, owner: (u32, u32)) -> S3fsAttr {
        let now = SystemTime::now();
        S3fsAttr {
            mode: kind | (perm & 0o7777),
            uid: Some(owner.0),
            gid: Some(owner.1),
            mtime: Some(now),
            atime: Some(now),
            ctime: Some(now),
            rdev: None,
        }
    }

    /// Write the attributes into user metadata (other entries are kept).
    pub fn put(&self, user: &mut BTreeMap<String, String>) {
        user.insert("mode".into(), (self.kind() | (self.mode & 0o7777)).to_string());
        for (k, v) in [("uid", self.uid), ("gid", self.gid), ("rdev", self.rdev)] {
            match v {
                Some(v) => user.insert(k.into(), v.to_string()),
                None => user.remove(k),
            };
        }
        for (k, v) in [("mtime", self.mtime), ("atime", self.atime), ("ctime", self.ctime)] {
            match v {
                Some(t) => user.insert(k.into(), time_text(t)),
                None => user.remove(k),
            };
        }
    }

    /// The metadata of a new object with these attributes.
    pub fn object_meta(&self) -> s3hpc_core::ObjectMeta {
        let mut m = s3hpc_core::ObjectMeta::default();
        self.put(&mut m.user);
        m
    }

    /// Show them in `attr` (the kernel's view of the file).
    pub fn overlay(&self, attr: &mut fuser::FileAttr) {
        attr.perm = (self.mode & 0o7777) as u16;
        if attr.kind != fuser::FileType::Directory && self.kind() != libc::S_IFDIR {
            // A directory object's type stays a directory and a file's is never one.
            attr.kind = self.file_type();
        }
        if let Some(r) = self.rdev {
            attr.rdev = r;
        }
        if let Some(u) = self.uid {
            attr.uid = u;
        }
        if let Some(g) = self.gid {
            attr.gid = g;
        }
        if let Some(t) = self.mtime {
            attr.mtime = t;
            attr.atime = t;
            attr.ctime = t;
        }
        if let Some(t) = self.atime {
            attr.atime = t;
        }
        if let Some(t) = self.ctime {
            attr.ctime = t;
        }
    }
}

/// The changes of one setattr (chmod, chown, utimes).
pub(super) struct Change {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub atime: Option<fuser::TimeOrNow>,
    pub mtime: Option<fuser::TimeOrNow>,
}

impl Change {
    fn apply(&self, a: &mut S3fsAttr) {
        let at = |t: &fuser::TimeOrNow| match t {
            fuser::TimeOrNow::Now => SystemTime::now(),
            fuser::TimeOrNow::SpecificTime(t) => *t,
        };
        if let Some(m) = self.mode {
            a.mode = (a.mode & libc::S_IFMT) | (m & 0o7777);
        }
        if let Some(u) = self.uid {
            a.uid = Some(u);
        }
        if let Some(g) = self.gid {
            a.gid = Some(g);
        }
        if let Some(t) = &self.atime {
            a.atime = Some(at(t));
        }
        if let Some(t) = &self.mtime {
            a.mtime = Some(at(t));
        }
        a.ctime = Some(SystemTime::now());
    }
}

/// The object that holds an entry's attributes: the file's own, or a directory's `dir/`
/// (s3fs's directory object).
fn object_key(key: &str, kind: Kind) -> String {
    if kind == Kind::Dir { format!("{key}/") } else { key.to_string() }
}

/// The attributes an entry shows when its object carries none (or a directory has no object).
fn defaults(ctx: &Ctx, kind: Kind, mtime: SystemTime) -> S3fsAttr {
    let (k, perm) = match kind {
        Kind::Dir => (libc::S_IFDIR, ctx.opts.dir_mode),
        Kind::File => (libc::S_IFREG, ctx.opts.file_mode),
    };
    S3fsAttr {
        mode: k | u32::from(perm),
        uid: Some(ctx.opts.uid),
        gid: Some(ctx.opts.gid),
        mtime: Some(mtime),
        atime: None,
        ctime: None,
        rdev: None,
    }
}

/// The metadata of an entry's object: s3fs's keys, and s3fs's content type for a directory.
fn entry_meta(a: &S3fsAttr) -> s3hpc_core::ObjectMeta {
    let mut m = a.object_meta();
    m.content_type =
        Some(if a.kind() == libc::S_IFDIR { "application/x-directory" } else { "application/octet-stream" }.into());
    m
}

/// Upload an entry's object (`body`: a symlink's target, else empty) with its attributes.
async fn put_entry(ctx: &Ctx, key: &str, a: &S3fsAttr, body: Vec<u8>) -> Result<PutObjectOutput, Error> {
    let len = body.len() as u64;
    let body = bytes::Bytes::from(body);
    ctx.retry(|| {
        let req = PutObjectRequest { content_length: Some(len), meta: entry_meta(a), ..Default::default() };
        ctx.store.put_object(&ctx.opts.bucket, key, req, s3hpc_core::Body::from(body.clone()))
    })
    .await
}

/// Read the attributes of a directory from its `dir/` object (`None`: no such object, the
/// directory is only a prefix, or it carries no mode).
pub(super) async fn dir_attr(ctx: &Ctx, key: &str) -> Result<Option<S3fsAttr>, Error> {
    Ok(ctx.head(&format!("{key}/")).await?.and_then(|info| S3fsAttr::of(&info.meta.user)))
}

/// The largest file `--metadata s3fs` truncates (or extends) in place: its bytes are read,
/// cut or padded, and uploaded again (as s3fs does through its cache), so the object passes
/// through memory.
pub(super) const TRUNCATE_MAX: u64 = 64 << 20;

/// setattr of an entry with `--metadata s3fs`: a file being written here takes the change into
/// the metadata it is uploaded with (and a new size: zeros written at its end, or what was
/// written cut while it is all in the part buffer); an entry of the bucket gets its object's metadata rewritten (a CopyObject onto itself,
/// conditional on the ETag the HEAD saw; a new size: the object read, cut or padded with zeros
/// and uploaded again, up to [`TRUNCATE_MAX`]); a directory without a `dir/` object gets one,
/// as s3fs makes it.
pub(super) async fn setattr(
    ctx: &Ctx,
    ino: u64,
    key: String,
    change: Change,
    size: Option<u64>,
) -> Result<FileAttr, Errno> {
    let kind = {
        let mut t = lock(&ctx.table);
        let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
        if let Local::Writing(fh) = i.local {
            let mut a = i.meta.clone().unwrap_or_else(|| defaults(ctx, i.kind, i.mtime));
            change.apply(&mut a);
            if let Some(h) = ctx.handle(fuser::FileHandle(fh))
                && let Handle::Write { writer, .. } = &*h
            {
                let mut w = lock(writer);
                if !w.is_completing() && !w.is_appender() {
                    if let Some(s) = size.filter(|s| *s != w.offset) {
                        // Extending a file being written writes zeros at its end; shrinking it
                        // cuts the part buffer, unless a part of it is uploaded already.
                        if s > TRUNCATE_MAX || s < w.offset && !w.shrink(s) {
                            return Err(Errno::EPERM);
                        }
                        if s > w.offset {
                            let at = w.offset;
                            match w.write(at, &vec![0u8; (s - at) as usize]) {
                                Ok(crate::write::Wait::Done) | Ok(crate::write::Wait::Slot(_)) => {}
                                Ok(crate::write::Wait::Append(_)) | Err(_) => return Err(Errno::EIO),
                            }
                        }
                        a.mtime = Some(SystemTime::now());
                    }
                    w.meta = a.object_meta();
                    drop(w);
                    i.meta = Some(a);
                    return Ok(ctx.attr(ino, i));
                }
            }
            // The object is being completed (or appended to): its metadata is set.
            return Err(Errno::EBUSY);
        }
        if size.is_some() && (!ctx.opts.allow_overwrite || ctx.opts.read_only) {
            tracing::info!("s3hpc mount: truncate of {key:?} refused: rewriting an object needs --allow-overwrite");
            return Err(if ctx.opts.read_only { Errno::EROFS } else { Errno::EPERM });
        }
        i.kind
    };
    let okey = object_key(&key, kind);
    let info = ctx.head(&okey).await.map_err(|e| errno(&e, "setattr", &key))?;
    let r = match info {
        Some(info) => {
            let mut a = S3fsAttr::of(&info.meta.user).unwrap_or_else(|| defaults(ctx, kind, info.last_modified));
            change.apply(&mut a);
            let mut m = info.meta.clone();
            if let Some(s) = size.filter(|s| *s != info.size && kind == Kind::File) {
                if s.max(info.size) > TRUNCATE_MAX {
                    tracing::info!("s3hpc mount: truncate of {key:?} to {s} refused: larger than {TRUNCATE_MAX}");
                    return Err(Errno::EPERM);
                }
                a.mtime = Some(SystemTime::now());
                let out = resize(ctx, &okey, &info, s, &a).await.map_err(|e| errno(&e, "truncate", &key))?;
                return done(ctx, ino, &key, kind, out, a);
            }
            a.put(&mut m.user);
            let req = CopyObjectRequest {
                metadata: Directive::Replace(m),
                source_conditions: s3hpc_core::Conditions { if_match: Some(info.etag.clone()), ..Default::default() },
                ..Default::default()
            };
            let bucket = &ctx.opts.bucket;
            ctx.store.copy_object(bucket, &okey, bucket, &okey, req).await.map(|out| (out, a))
        }
        None if kind == Kind::Dir => {
            // A directory that is only a prefix: its object, as s3fs makes one.
            let mtime = lock(&ctx.table).inodes.get(&ino).map_or_else(SystemTime::now, |i| i.mtime);
            let mut a = defaults(ctx, kind, mtime);
            change.apply(&mut a);
            put_entry(ctx, &okey, &a, Vec::new()).await.map(|out| (out, a))
        }
        None => return Err(Errno::ENOENT),
    };
    let (out, a) = r.map_err(|e| errno(&e, "setattr", &key))?;
    done(ctx, ino, &key, kind, out, a)
}

/// A setattr's object is written: the table gets its new state, the kernel the attributes.
fn done(ctx: &Ctx, ino: u64, key: &str, kind: Kind, out: PutObjectOutput, a: S3fsAttr) -> Result<FileAttr, Errno> {
    let mut t = lock(&ctx.table);
    let i = t.inodes.get_mut(&ino).ok_or(Errno::ENOENT)?;
    if i.key == key && i.local == Local::No {
        if kind == Kind::File {
            i.etag = out.etag;
            i.size = out.size;
            i.mtime = out.last_modified;
            i.valid_until = ctx.until();
            i.cached_etag = None;
        }
        i.meta = Some(a);
        i.meta_until = Some(ctx.until());
    }
    Ok(ctx.attr(ino, i))
}

/// The object `key` (as `info` describes it) cut or padded with zeros to `size` and uploaded
/// again with the attributes `a`.
async fn resize(
    ctx: &Ctx,
    key: &str,
    info: &s3hpc_core::ObjectInfo,
    size: u64,
    a: &S3fsAttr,
) -> Result<PutObjectOutput, Error> {
    let keep = size.min(info.size);
    let mut body = if keep == 0 {
        Vec::new()
    } else {
        let b = crate::read::get_range(
            ctx.store.clone(),
            ctx.opts.bucket.clone(),
            key.to_string(),
            info.etag.clone(),
            0,
            keep,
        )
        .await?;
        b.to_vec()
    };
    body.resize(size as usize, 0);
    let mut m = info.meta.clone();
    a.put(&mut m.user);
    let len = body.len() as u64;
    let body = bytes::Bytes::from(body);
    ctx.retry(|| {
        let req = PutObjectRequest { content_length: Some(len), meta: m.clone(), ..Default::default() };
        ctx.store.put_object(&ctx.opts.bucket, key, req, s3hpc_core::Body::from(body.clone()))
    })
    .await
}

/// A new entry `name` in `parent` made as s3fs makes it: an object holding its attributes
/// (`body`: a symlink's target), after a lookup that finds nothing there (`EEXIST` else).
async fn make(ctx: &Ctx, parent: u64, name: &str, a: S3fsAttr, body: Vec<u8>) -> Result<Entry, Errno> {
    if ctx.opts.read_only {
        return Err(Errno::EROFS);
    }
    if ctx.too_long(name) {
        return Err(Errno::ENAMETOOLONG);
    }
    let key = {
        let t = lock(&ctx.table);
        if t.child(parent, name).is_some_and(|ino| ctx.fresh(&t.inodes[&ino], Instant::now())) {
            return Err(Errno::EEXIST);
        }
        let pfx = t.dir_prefix(parent).ok_or(Errno::ENOTDIR)?;
        format!("{pfx}{name}")
    };
    match ctx.remote_lookup(&key).await {
        Ok(Found::Nothing) => {}
        Ok(found) => {
            lock(&ctx.table).install(parent, name, found, ctx.until());
            return Err(Errno::EEXIST);
        }
        Err(e) => return Err(errno(&e, "create", &key)),
    }
    let dir = a.kind() == libc::S_IFDIR;
    let okey = if dir { format!("{key}/") } else { key.clone() };
    let out = put_entry(ctx, &okey, &a, body).await.map_err(|e| errno(&e, "create", &key))?;
    let mut t = lock(&ctx.table);
    let kind = if dir { Kind::Dir } else { Kind::File };
    let ino = t.insert_local(parent, name, kind, Local::No).ok_or(Errno::ENOENT)?;
    t.make_remote(ino);
    let until = ctx.until();
    let i = t.inodes.get_mut(&ino).expect("just inserted");
    if !dir {
        i.size = out.size;
        i.etag = out.etag;
    }
    i.mtime = out.last_modified;
    i.valid_until = until;
    i.meta = Some(a);
    i.meta_until = Some(until);
    ctx.entry(&mut t, ino)
}

/// mkdir with `--metadata s3fs`: the directory's object `dir/` with its mode and owner, at once
/// (so the directory stays, as in s3fs, and keeps its attributes).
pub(super) async fn mkdir(ctx: &Ctx, owner: (u32, u32), parent: u64, name: &str, perm: u32) -> Result<Entry, Errno> {
    make(ctx, parent, name, S3fsAttr::new(libc::S_IFDIR, perm, owner), Vec::new()).await
}

/// symlink with `--metadata s3fs`: an object whose body is the target, mode `S_IFLNK | 0777`.
pub(super) async fn symlink(
    ctx: &Ctx,
    owner: (u32, u32),
    parent: u64,
    name: &str,
    target: &str,
) -> Result<Entry, Errno> {
    let a = S3fsAttr::new(libc::S_IFLNK, 0o777, owner);
    make(ctx, parent, name, a, target.as_bytes().to_vec()).await
}

/// mknod with `--metadata s3fs`: an empty object with the mode (FIFOs, sockets, devices,
/// regular files) and the device number (`x-amz-meta-rdev`, which s3fs ignores).
pub(super) async fn mknod(
    ctx: &Ctx,
    owner: (u32, u32),
    parent: u64,
    name: &str,
    mode: u32,
    rdev: u32,
) -> Result<Entry, Errno> {
    let kind = match mode & libc::S_IFMT {
        0 => libc::S_IFREG,
        k @ (libc::S_IFREG | libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR | libc::S_IFBLK) => k,
        _ => return Err(Errno::EINVAL),
    };
    let mut a = S3fsAttr::new(kind, mode, owner);
    if matches!(kind, libc::S_IFCHR | libc::S_IFBLK) {
        a.rdev = Some(rdev);
    }
    make(ctx, parent, name, a, Vec::new()).await
}

/// readlink with `--metadata s3fs`: the body of the symlink's object (`EINVAL` for anything
/// but a symlink).
pub(super) async fn readlink(ctx: &Ctx, ino: u64) -> Result<bytes::Bytes, Errno> {
    let key = {
        let t = lock(&ctx.table);
        let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
        if i.meta.as_ref().is_none_or(|m| m.kind() != libc::S_IFLNK) {
            return Err(Errno::EINVAL);
        }
        i.key.clone()
    };
    let r = ctx.retry(|| ctx.store.get_object(&ctx.opts.bucket, &key, GetObjectRequest::default())).await;
    let out = r.map_err(|e| errno(&e, "readlink", &key))?;
    out.body.collect_limited(libc::PATH_MAX as usize).await.map_err(|e| errno(&e, "readlink", &key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3fs_keys_round_trip() {
        let mut user = BTreeMap::new();
        user.insert("mode".to_string(), "33188".to_string()); // 0100644, as s3fs writes it
        user.insert("uid".to_string(), "1000".to_string());
        user.insert("gid".to_string(), "100".to_string());
        user.insert("mtime".to_string(), "1700000000".to_string());
        user.insert("other".to_string(), "kept".to_string());
        let a = S3fsAttr::of(&user).unwrap();
        assert_eq!((a.mode, a.uid, a.gid), (0o100644, Some(1000), Some(100)));
        assert_eq!((a.kind(), a.file_type()), (libc::S_IFREG, fuser::FileType::RegularFile));
        assert_eq!(a.mtime, Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        assert_eq!(time("12.5"), Some(UNIX_EPOCH + Duration::from_millis(12_500)));
        let mut out = BTreeMap::new();
        out.insert("other".to_string(), "kept".to_string());
        S3fsAttr { mode: 0o4750, ..a.clone() }.put(&mut out);
        assert_eq!(out["mode"], (0o104750).to_string());
        assert_eq!((out["uid"].as_str(), out["gid"].as_str(), out["mtime"].as_str()), ("1000", "100", "1700000000"));
        assert_eq!(out["other"], "kept");
        assert_eq!(S3fsAttr::of(&BTreeMap::new()), None);
        // The type bits as s3fs writes them: a symlink, a FIFO, a directory, a device; a mode
        // without them is a regular file's.
        for (mode, ft) in [
            (0o120777, fuser::FileType::Symlink),
            (0o010644, fuser::FileType::NamedPipe),
            (0o040750, fuser::FileType::Directory),
            (0o020600, fuser::FileType::CharDevice),
            (0o140755, fuser::FileType::Socket),
            (0o060600, fuser::FileType::BlockDevice),
            (0o644, fuser::FileType::RegularFile),
        ] {
            let mut user = BTreeMap::new();
            user.insert("mode".to_string(), mode.to_string());
            let a = S3fsAttr::of(&user).unwrap();
            assert_eq!(a.file_type(), ft, "{mode:o}");
            let mut back = BTreeMap::new();
            a.put(&mut back);
            let want = if mode & libc::S_IFMT == 0 { mode | libc::S_IFREG } else { mode };
            assert_eq!(back["mode"], want.to_string());
        }
        // chmod keeps the type; a device keeps its number.
        let mut fifo = S3fsAttr::new(libc::S_IFIFO, 0o644, (1, 2));
        Change { mode: Some(0o600), uid: None, gid: None, atime: None, mtime: None }.apply(&mut fifo);
        assert_eq!(fifo.mode, libc::S_IFIFO | 0o600);
        let mut dev = S3fsAttr::new(libc::S_IFCHR, 0o600, (0, 0));
        dev.rdev = Some(0x0103);
        let mut m = BTreeMap::new();
        dev.put(&mut m);
        assert_eq!(S3fsAttr::of(&m).unwrap().rdev, Some(0x0103));
    }
}
