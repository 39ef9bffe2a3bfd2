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
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A file's attributes as s3fs keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3fsAttr {
    /// Permission bits (and set-id, sticky).
    pub mode: u32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mtime: Option<SystemTime>,
    pub atime: Option<SystemTime>,
    pub ctime: Option<SystemTime>,
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
            mode: mode & 0o7777,
            uid: num("uid"),
            gid: num("gid"),
            mtime: user.get("mtime").and_then(|v| time(v)),
            atime: user.get("atime").and_then(|v| time(v)),
            ctime: user.get("ctime").and_then(|v| time(v)),
        })
    }

    /// Write the attributes into user metadata (other entries are kept).
    pub fn put(&self, user: &mut BTreeMap<String, String>) {
        user.insert("mode".into(), (libc::S_IFREG | self.mode).to_string());
        for (k, v) in [("uid", self.uid), ("gid", self.gid)] {
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
        attr.perm = self.mode as u16;
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
            a.mode = m & 0o7777;
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

/// setattr of a file with `--metadata s3fs`: a file being written here takes the change into
/// the metadata it is uploaded with; a file of the bucket gets its object's metadata rewritten
/// (a CopyObject onto itself, conditional on the ETag the HEAD saw).
pub(super) fn setattr(fs: &super::S3Fs, ino: fuser::INodeNo, key: String, change: Change, reply: fuser::ReplyAttr) {
    use super::{Handle, lock};
    use crate::inode::Local;
    use fuser::Errno;
    use s3hpc_core::{CopyObjectRequest, Directive};

    let ctx = fs.ctx.clone();
    let defaults = |i: &crate::inode::Inode| S3fsAttr {
        mode: u32::from(ctx.opts.file_mode),
        uid: Some(ctx.opts.uid),
        gid: Some(ctx.opts.gid),
        mtime: Some(i.mtime),
        atime: None,
        ctime: None,
    };
    {
        let mut t = lock(&ctx.table);
        let Some(i) = t.inodes.get_mut(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        if let Local::Writing(fh) = i.local {
            let mut a = i.meta.clone().unwrap_or_else(|| defaults(i));
            change.apply(&mut a);
            if let Some(h) = ctx.handle(fuser::FileHandle(fh))
                && let Handle::Write { writer, .. } = &*h
            {
                let mut w = lock(writer);
                if !w.is_completing() && !w.is_appender() {
                    w.meta = a.object_meta();
                    drop(w);
                    i.meta = Some(a);
                    return reply.attr(&ctx.ttl(), &ctx.attr(ino.0, i));
                }
            }
            // The object is being completed (or appended to): its metadata is set.
            return reply.error(Errno::EBUSY);
        }
    }
    fs.spawn(async move {
        let info = match ctx.head(&key).await {
            Ok(Some(info)) => info,
            Ok(None) => return reply.error(Errno::ENOENT),
            Err(e) => return reply.error(crate::errors::errno(&e, "setattr", &key)),
        };
        let mut a = S3fsAttr::of(&info.meta.user).unwrap_or_else(|| S3fsAttr {
            mode: u32::from(ctx.opts.file_mode),
            uid: Some(ctx.opts.uid),
            gid: Some(ctx.opts.gid),
            mtime: Some(info.last_modified),
            atime: None,
            ctime: None,
        });
        change.apply(&mut a);
        let mut m = info.meta.clone();
        a.put(&mut m.user);
        let req = CopyObjectRequest {
            metadata: Directive::Replace(m),
            source_conditions: s3hpc_core::Conditions { if_match: Some(info.etag.clone()), ..Default::default() },
            ..Default::default()
        };
        let bucket = &ctx.opts.bucket;
        match ctx.store.copy_object(bucket, &key, bucket, &key, req).await {
            Ok(out) => {
                let mut t = lock(&ctx.table);
                let Some(i) = t.inodes.get_mut(&ino.0) else {
                    return reply.error(Errno::ENOENT);
                };
                if i.key == key && i.local == Local::No {
                    i.etag = out.etag;
                    i.size = out.size;
                    i.mtime = out.last_modified;
                    i.meta = Some(a);
                    i.meta_until = Some(ctx.until());
                    i.valid_until = ctx.until();
                }
                reply.attr(&ctx.ttl(), &ctx.attr(ino.0, i))
            }
            Err(e) => reply.error(crate::errors::errno(&e, "setattr", &key)),
        }
    });
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
        assert_eq!((a.mode, a.uid, a.gid), (0o644, Some(1000), Some(100)));
        assert_eq!(a.mtime, Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        assert_eq!(time("12.5"), Some(UNIX_EPOCH + Duration::from_millis(12_500)));
        let mut out = BTreeMap::new();
        out.insert("other".to_string(), "kept".to_string());
        S3fsAttr { mode: 0o4750, ..a.clone() }.put(&mut out);
        assert_eq!(out["mode"], (0o104750).to_string());
        assert_eq!((out["uid"].as_str(), out["gid"].as_str(), out["mtime"].as_str()), ("1000", "100", "1700000000"));
        assert_eq!(out["other"], "kept");
        assert_eq!(S3fsAttr::of(&BTreeMap::new()), None);
    }
}
