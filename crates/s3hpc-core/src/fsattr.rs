//! File-system attributes of objects: s3hpc's extension for stores that keep objects as files
//! (the posix backend), so that a mount can give its files the file system's own semantics:
//! mode, owner, times, size (truncate), symlinks and hard links ([`Store::fs`]).
//!
//! One call, [`Store::fs`], carries every operation ([`FsOp`]) and answers the attributes of the
//! entry afterwards ([`FsAttr`]). A key names one entry of the bucket's tree: `a/b` is the file,
//! directory or symlink `b` in directory `a` (a trailing `/` is ignored, `""` is the bucket's own
//! directory). Operations act on the entry itself and never follow a final symlink: a symlink's
//! target is data (what [`FsAttr::target`] reports), never resolved by the store.
//!
//! Errors carry the POSIX error in their message (`"[EPERM] ..."`, see [`fs_error`] and
//! [`errno_of`]), so that a mount answers the same errno the file system did, over any
//! transport (the message travels with the error over HTTP and the binary protocol), and an S3
//! code that says the same to other clients (ENOENT: NoSuchKey, EACCES/EPERM: AccessDenied, ...).
//!
//! Both protocols carry an operation and its answer as one line of text ([`FsOp::encode`],
//! [`FsAttr::encode`]): over HTTP in the `x-s3hpc-fs` header of `POST /bucket/key?s3hpc-fs` and
//! in the `x-s3hpc-fs-attr` header of the answer (docs/PROTOCOL.md).
//!
//! [`Store::fs`]: crate::Store::fs

use crate::error::{Error, ErrorCode, Result};

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl FsKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FsKind::File => "file",
            FsKind::Dir => "dir",
            FsKind::Symlink => "symlink",
            FsKind::Fifo => "fifo",
            FsKind::Socket => "socket",
            FsKind::CharDevice => "char",
            FsKind::BlockDevice => "block",
        }
    }

    pub fn parse(s: &str) -> Option<FsKind> {
        Some(match s {
            "file" => FsKind::File,
            "dir" => FsKind::Dir,
            "symlink" => FsKind::Symlink,
            "fifo" => FsKind::Fifo,
            "socket" => FsKind::Socket,
            "char" => FsKind::CharDevice,
            "block" => FsKind::BlockDevice,
            _ => return None,
        })
    }

    /// The kind of a `st_mode`.
    pub fn of_mode(mode: u32) -> FsKind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => FsKind::Dir,
            libc::S_IFLNK => FsKind::Symlink,
            libc::S_IFIFO => FsKind::Fifo,
            libc::S_IFSOCK => FsKind::Socket,
            libc::S_IFCHR => FsKind::CharDevice,
            libc::S_IFBLK => FsKind::BlockDevice,
            _ => FsKind::File,
        }
    }
}

/// A point in time: seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct FsTime {
    pub sec: i64,
    pub nsec: u32,
}

impl FsTime {
    pub fn now() -> FsTime {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        FsTime { sec: d.as_secs() as i64, nsec: d.subsec_nanos() }
    }

    pub fn of(t: std::time::SystemTime) -> FsTime {
        match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => FsTime { sec: d.as_secs() as i64, nsec: d.subsec_nanos() },
            Err(e) => {
                let d = e.duration();
                let (s, n) = (d.as_secs() as i64, d.subsec_nanos());
                if n == 0 { FsTime { sec: -s, nsec: 0 } } else { FsTime { sec: -s - 1, nsec: 1_000_000_000 - n } }
            }
        }
    }

    pub fn system_time(self) -> std::time::SystemTime {
        let base = std::time::UNIX_EPOCH;
        if self.sec >= 0 {
            base + std::time::Duration::new(self.sec as u64, self.nsec)
        } else {
            base - std::time::Duration::from_secs(self.sec.unsigned_abs())
                + std::time::Duration::from_nanos(self.nsec as u64)
        }
    }

    fn encode(self) -> String {
        format!("{}.{:09}", self.sec, self.nsec)
    }

    fn parse(s: &str) -> Option<FsTime> {
        let (a, b) = s.split_once('.')?;
        let nsec: u32 = b.parse().ok().filter(|n| *n < 1_000_000_000 && b.len() == 9)?;
        Some(FsTime { sec: a.parse().ok()?, nsec })
    }
}

/// A time to set: the store's clock now, or a given time (utimensat's `UTIME_NOW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    Now,
    At(FsTime),
}

/// The attributes of one entry, as `lstat` reports them (and, for a symlink, its target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsAttr {
    pub kind: FsKind,
    /// Permission bits and set-id/sticky bits (`st_mode & 07777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub nlink: u32,
    pub atime: FsTime,
    pub mtime: FsTime,
    pub ctime: FsTime,
    /// A device's number (`st_rdev`), 0 otherwise.
    pub rdev: u64,
    /// A symlink's target, as stored (never resolved).
    pub target: Option<String>,
    /// The entry's inode number in the store's file system (`st_ino`), so that a mount shows
    /// the hard links of one file as one inode; 0 where the store does not say (an older
    /// gateway, the memory oracle's directories).
    pub ino: u64,
}

/// Changes of [`FsOp::SetAttr`]; `None` leaves an attribute as it is. They are applied in the
/// order owner, mode, size, times (as `chown`, `chmod`, `truncate`, `utimensat` would be).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetFsAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Truncate or extend (with zeros) a regular file to this size.
    pub size: Option<u64>,
    pub atime: Option<SetTime>,
    pub mtime: Option<SetTime>,
}

/// One file-system operation on the entry a key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// The entry's attributes (`lstat`; a symlink's target with them).
    GetAttr,
    /// Change attributes (`fchownat`, `chmod`, `truncate`, `utimensat`, none following a final
    /// symlink; the mode of a symlink cannot be changed: `EOPNOTSUPP`).
    SetAttr(SetFsAttr),
    /// Make the entry a symlink to `target` (`symlinkat`; `EEXIST` when the name is taken).
    Symlink(String),
    /// Make the entry a hard link to the file `source` (a key of the same bucket; `linkat`
    /// without following a final symlink).
    Link(String),
    /// Make the entry a special file (or an empty regular file) with `mode` (permission bits)
    /// and, for a device, `rdev` (`mknodat`; EEXIST when the name is taken). Not a directory or
    /// a symlink (EINVAL). `owner`: the new entry's owner and group (a `chown` right after, as
    /// the request's identity may; `None`: whoever made it, the kernel's choice).
    Mknod { kind: FsKind, mode: u32, rdev: u64, owner: Option<Owner> },
    /// Make the entry a directory with `mode` (`mkdirat`, then `chmod` so that the gateway's
    /// umask does not take bits away) and `owner` as for [`FsOp::Mknod`].
    Mkdir { mode: u32, owner: Option<Owner> },
    /// Move the entry `source` (a key of the same bucket: a symlink, a special file, a
    /// directory; regular files go through RenameObject, whose record travels with them) to
    /// the entry the key names (`renameat2`, never following a final symlink; `noreplace`:
    /// `RENAME_NOREPLACE`, EEXIST when the name is taken). The answer is the moved entry's.
    Rename { source: String, noreplace: bool },
    /// Remove the entry, not a directory (`unlinkat`): a symlink or special file (regular files
    /// go through DeleteObject). The answer is the entry as it was, its link count less one.
    Unlink,
    /// Remove the directory the key names when it is empty (`unlinkat(AT_REMOVEDIR)`: ENOTEMPTY
    /// when anything is in it, special files included). The answer is the directory as it was.
    Rmdir,
}

/// The owner and group of an entry being made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    /// `None`: the group the kernel gives (the parent directory's under its set-group-id bit).
    pub gid: Option<u32>,
}

fn encode_owner(out: &mut String, owner: &Option<Owner>) {
    if let Some(o) = owner {
        *out += &format!(" uid={}", o.uid);
        if let Some(g) = o.gid {
            *out += &format!(" gid={g}");
        }
    }
}

/// `uid=U[ gid=G]` after an operation's fixed fields (none: `None`).
fn parse_owner<'a>(mut it: impl Iterator<Item = &'a str>) -> Option<Option<Owner>> {
    let Some(u) = it.next() else { return Some(None) };
    let uid = u.strip_prefix("uid=")?.parse().ok()?;
    let gid = match it.next() {
        None => None,
        Some(g) => Some(g.strip_prefix("gid=")?.parse().ok()?),
    };
    if it.next().is_some() {
        return None;
    }
    Some(Some(Owner { uid, gid }))
}

impl FsOp {
    /// The operation as one line: `getattr`, `setattr mode=420 uid=0 gid=0 size=0
    /// atime=now mtime=1700000000.000000000`, `symlink TARGET`, `link SOURCE-KEY`, `mknod KIND
    /// MODE RDEV[ uid=U[ gid=G]]`, `mkdir MODE[ uid=U[ gid=G]]`, `rename SOURCE-KEY[ noreplace]`,
    /// `unlink`, `rmdir` (a target or key is percent-encoded, see [`encode_text`]).
    pub fn encode(&self) -> String {
        match self {
            FsOp::GetAttr => "getattr".into(),
            FsOp::SetAttr(s) => {
                let mut out = String::from("setattr");
                let t = |t: &SetTime| match t {
                    SetTime::Now => "now".to_string(),
                    SetTime::At(t) => t.encode(),
                };
                if let Some(m) = s.mode {
                    out += &format!(" mode={m}");
                }
                if let Some(u) = s.uid {
                    out += &format!(" uid={u}");
                }
                if let Some(g) = s.gid {
                    out += &format!(" gid={g}");
                }
                if let Some(z) = s.size {
                    out += &format!(" size={z}");
                }
                if let Some(a) = &s.atime {
                    out += &format!(" atime={}", t(a));
                }
                if let Some(m) = &s.mtime {
                    out += &format!(" mtime={}", t(m));
                }
                out
            }
            FsOp::Symlink(target) => format!("symlink {}", encode_text(target)),
            FsOp::Link(src) => format!("link {}", encode_text(src)),
            FsOp::Mknod { kind, mode, rdev, owner } => {
                let mut out = format!("mknod {} {mode} {rdev}", kind.as_str());
                encode_owner(&mut out, owner);
                out
            }
            FsOp::Mkdir { mode, owner } => {
                let mut out = format!("mkdir {mode}");
                encode_owner(&mut out, owner);
                out
            }
            FsOp::Rename { source, noreplace } => {
                format!("rename {}{}", encode_text(source), if *noreplace { " noreplace" } else { "" })
            }
            FsOp::Unlink => "unlink".into(),
            FsOp::Rmdir => "rmdir".into(),
        }
    }

    /// The inverse of [`encode`](Self::encode); InvalidArgument for anything else.
    pub fn parse(s: &str) -> Result<FsOp> {
        let bad = || Error::invalid_arg("malformed s3hpc file-system operation", "x-s3hpc-fs", s);
        let (verb, rest) = s.split_once(' ').unwrap_or((s, ""));
        Ok(match verb {
            "getattr" if rest.is_empty() => FsOp::GetAttr,
            "symlink" => FsOp::Symlink(decode_text(rest).ok_or_else(bad)?),
            "link" => FsOp::Link(decode_text(rest).ok_or_else(bad)?),
            "mknod" => {
                let mut it = rest.split(' ');
                let kind = it.next().and_then(FsKind::parse).ok_or_else(bad)?;
                let mode = it.next().and_then(|m| m.parse().ok()).filter(|m| *m <= 0o7777).ok_or_else(bad)?;
                let rdev = it.next().and_then(|r| r.parse().ok()).ok_or_else(bad)?;
                let owner = parse_owner(it).ok_or_else(bad)?;
                if matches!(kind, FsKind::Dir | FsKind::Symlink) {
                    return Err(bad());
                }
                FsOp::Mknod { kind, mode, rdev, owner }
            }
            "mkdir" => {
                let mut it = rest.split(' ');
                let mode = it.next().and_then(|m| m.parse().ok()).filter(|m| *m <= 0o7777).ok_or_else(bad)?;
                FsOp::Mkdir { mode, owner: parse_owner(it).ok_or_else(bad)? }
            }
            "rename" => {
                let (src, flag) = rest.split_once(' ').unwrap_or((rest, ""));
                let noreplace = match flag {
                    "" => false,
                    "noreplace" => true,
                    _ => return Err(bad()),
                };
                FsOp::Rename { source: decode_text(src).filter(|s| !s.is_empty()).ok_or_else(bad)?, noreplace }
            }
            "unlink" if rest.is_empty() => FsOp::Unlink,
            "rmdir" if rest.is_empty() => FsOp::Rmdir,
            "setattr" => {
                let mut a = SetFsAttr::default();
                let time = |v: &str| if v == "now" { Some(SetTime::Now) } else { FsTime::parse(v).map(SetTime::At) };
                for kv in rest.split(' ').filter(|p| !p.is_empty()) {
                    let (k, v) = kv.split_once('=').ok_or_else(bad)?;
                    match k {
                        "mode" => a.mode = Some(v.parse().ok().filter(|m| *m <= 0o7777).ok_or_else(bad)?),
                        "uid" => a.uid = Some(v.parse().map_err(|_| bad())?),
                        "gid" => a.gid = Some(v.parse().map_err(|_| bad())?),
                        "size" => a.size = Some(v.parse().map_err(|_| bad())?),
                        "atime" => a.atime = Some(time(v).ok_or_else(bad)?),
                        "mtime" => a.mtime = Some(time(v).ok_or_else(bad)?),
                        _ => return Err(bad()),
                    }
                }
                FsOp::SetAttr(a)
            }
            _ => return Err(bad()),
        })
    }

    /// Whether the operation changes anything (authorization: PutObject, else GetObject).
    pub fn writes(&self) -> bool {
        !matches!(self, FsOp::GetAttr)
    }

    /// Whether the operation removes the entry the key names (authorization: DeleteObject).
    pub fn removes(&self) -> bool {
        matches!(self, FsOp::Unlink | FsOp::Rmdir)
    }
}

impl FsAttr {
    /// The attributes as one line: `kind=file mode=420 uid=0 gid=0 size=5 nlink=1
    /// atime=S.N mtime=S.N ctime=S.N rdev=0[ ino=N][ target=T]` (the target percent-encoded;
    /// `ino` when known).
    pub fn encode(&self) -> String {
        let mut s = format!(
            "kind={} mode={} uid={} gid={} size={} nlink={} atime={} mtime={} ctime={} rdev={}",
            self.kind.as_str(),
            self.mode,
            self.uid,
            self.gid,
            self.size,
            self.nlink,
            self.atime.encode(),
            self.mtime.encode(),
            self.ctime.encode(),
            self.rdev
        );
        if self.ino != 0 {
            s += &format!(" ino={}", self.ino);
        }
        if let Some(t) = &self.target {
            s += &format!(" target={}", encode_text(t));
        }
        s
    }

    /// The inverse of [`encode`](Self::encode) (unknown fields are ignored, for later
    /// additions); InternalError when a field is missing or malformed.
    pub fn parse(s: &str) -> Result<FsAttr> {
        let bad = || Error::internal(format!("malformed s3hpc file-system attributes: {s:?}"));
        let mut a = FsAttr {
            kind: FsKind::File,
            mode: 0,
            uid: 0,
            gid: 0,
            size: 0,
            nlink: 1,
            atime: FsTime::default(),
            mtime: FsTime::default(),
            ctime: FsTime::default(),
            rdev: 0,
            target: None,
            ino: 0,
        };
        let mut seen_kind = false;
        for kv in s.split(' ').filter(|p| !p.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(bad)?;
            let num = |v: &str| v.parse::<u64>().map_err(|_| bad());
            match k {
                "kind" => {
                    a.kind = FsKind::parse(v).ok_or_else(bad)?;
                    seen_kind = true;
                }
                "mode" => a.mode = num(v)? as u32,
                "uid" => a.uid = num(v)? as u32,
                "gid" => a.gid = num(v)? as u32,
                "size" => a.size = num(v)?,
                "nlink" => a.nlink = num(v)? as u32,
                "rdev" => a.rdev = num(v)?,
                "ino" => a.ino = num(v)?,
                "atime" => a.atime = FsTime::parse(v).ok_or_else(bad)?,
                "mtime" => a.mtime = FsTime::parse(v).ok_or_else(bad)?,
                "ctime" => a.ctime = FsTime::parse(v).ok_or_else(bad)?,
                "target" => a.target = Some(decode_text(v).ok_or_else(bad)?),
                _ => {}
            }
        }
        if !seen_kind {
            return Err(bad());
        }
        Ok(a)
    }
}

/// Percent-encode everything but unreserved ASCII (so a text is one space-free token, and
/// valid in an HTTP header).
pub fn encode_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

/// The inverse of [`encode_text`]; `None` for a malformed escape or bytes that are not UTF-8.
pub fn decode_text(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else if b[i] == b' ' {
            return None;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The symbolic name of the errors the file-system operations report.
fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EACCES => "EACCES",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETXTBSY => "ETXTBSY",
        libc::EDQUOT => "EDQUOT",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::EBUSY => "EBUSY",
        _ => return None,
    })
}

/// An error of a file-system operation: the S3 code that says the same to S3 clients, and the
/// POSIX error first in the message (`[EPERM] chmod of a/b: Operation not permitted`) for
/// [`errno_of`].
pub fn fs_error(errno: i32, what: &str) -> Error {
    let code = match errno {
        libc::ENOENT => ErrorCode::NoSuchKey,
        libc::EPERM | libc::EACCES | libc::EROFS => ErrorCode::AccessDenied,
        libc::ENAMETOOLONG => ErrorCode::KeyTooLongError,
        libc::EOPNOTSUPP => ErrorCode::NotImplemented,
        libc::EEXIST | libc::ENOTEMPTY | libc::EBUSY | libc::ETXTBSY => ErrorCode::InvalidRequest,
        libc::EIO | libc::ENOSPC | libc::EDQUOT => ErrorCode::InternalError,
        _ => ErrorCode::InvalidArgument,
    };
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    match errno_name(errno) {
        Some(n) => Error::new(code, format!("[{n}] {what}: {text}")),
        None => Error::new(code, format!("[errno {errno}] {what}: {text}")),
    }
}

/// The POSIX error an error of [`fs_error`] carries (`None` for other errors).
pub fn errno_of(e: &Error) -> Option<i32> {
    let rest = e.message.strip_prefix('[')?;
    let (name, _) = rest.split_once(']')?;
    if let Some(n) = name.strip_prefix("errno ") {
        return n.parse().ok();
    }
    (1..200).find(|n| errno_name(*n) == Some(name))
}

/// The longest key a file-system operation takes: a path the file system can resolve
/// (`PATH_MAX` less its NUL), longer than S3's 1,024-byte keys, so that a mount reaches entries
/// that objects cannot name (each component stays within the store's `NAME_MAX`).
pub const MAX_FS_KEY_LEN: usize = libc::PATH_MAX as usize - 1;

/// The rules every store applies to the key of a file-system operation, in place of S3's
/// key rules: at most [`MAX_FS_KEY_LEN`] bytes (`KeyTooLongError`), non-empty or the bucket's
/// own directory.
pub fn validate_fs_key(key: &str) -> Result<()> {
    if key.len() > MAX_FS_KEY_LEN {
        return Err(Error::new(
            ErrorCode::KeyTooLongError,
            format!("Your key is too long: a file-system operation takes at most {MAX_FS_KEY_LEN} bytes"),
        ));
    }
    Ok(())
}

/// The key of a file-system operation as the path of an entry below the bucket: a trailing `/`
/// dropped; empty, `.` and `..` components refused (`EINVAL`), as are NUL bytes.
pub fn entry_path(key: &str) -> Result<&str> {
    let k = key.strip_suffix('/').unwrap_or(key);
    if k.is_empty() {
        return Ok(k);
    }
    if k.contains('\0') || k.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(fs_error(libc::EINVAL, &format!("the key {key:?} does not name an entry")));
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip() {
        let ops = [
            FsOp::GetAttr,
            FsOp::SetAttr(SetFsAttr::default()),
            FsOp::SetAttr(SetFsAttr {
                mode: Some(0o4755),
                uid: Some(65534),
                gid: Some(0),
                size: Some(1 << 40),
                atime: Some(SetTime::Now),
                mtime: Some(SetTime::At(FsTime { sec: -5, nsec: 999_999_999 })),
            }),
            FsOp::Symlink("../a b/%c\u{e9}".into()),
            FsOp::Link("dir/file name".into()),
            FsOp::Mknod { kind: FsKind::Fifo, mode: 0o644, rdev: 0, owner: None },
            FsOp::Mknod { kind: FsKind::BlockDevice, mode: 0o600, rdev: (8 << 8) | 1, owner: None },
            FsOp::Mknod { kind: FsKind::File, mode: 0o4755, rdev: 0, owner: Some(Owner { uid: 5, gid: Some(6) }) },
            FsOp::Mknod { kind: FsKind::Socket, mode: 0o755, rdev: 0, owner: Some(Owner { uid: 5, gid: None }) },
            FsOp::Mkdir { mode: 0o1777, owner: None },
            FsOp::Mkdir { mode: 0o700, owner: Some(Owner { uid: 65534, gid: Some(65533) }) },
            FsOp::Rename { source: "a b/c".into(), noreplace: false },
            FsOp::Rename { source: "x".into(), noreplace: true },
            FsOp::Unlink,
            FsOp::Rmdir,
        ];
        for op in ops {
            let line = op.encode();
            assert!(!line.contains("  ") && line.is_ascii(), "{line}");
            assert_eq!(FsOp::parse(&line).unwrap(), op, "{line}");
        }
        for bad in [
            "",
            "getattr x",
            "mknod dir 493 0",
            "mknod fifo 493",
            "mknod fifo 8192 0",
            "setattr mode=8192",
            "setattr mode",
            "setattr atime=1.5",
            "chmod 1",
            "link a%2",
            "symlink a b",
            "mknod fifo 420 0 gid=1",
            "mknod fifo 420 0 uid=1 gid=2 x",
            "mkdir",
            "mkdir 8192",
            "mkdir 493 uid=x",
            "rename",
            "rename a replace",
            "unlink a",
            "rmdir x",
        ] {
            assert_eq!(FsOp::parse(bad).unwrap_err().code, ErrorCode::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn attrs_round_trip() {
        let a = FsAttr {
            kind: FsKind::Symlink,
            mode: 0o777,
            uid: 1,
            gid: 2,
            size: 3,
            nlink: 1,
            atime: FsTime { sec: 1, nsec: 2 },
            mtime: FsTime { sec: 3, nsec: 4 },
            ctime: FsTime { sec: 5, nsec: 6 },
            rdev: 0,
            target: Some("x y".into()),
            ino: 77,
        };
        assert_eq!(FsAttr::parse(&a.encode()).unwrap(), a);
        // An older store's line (no ino) still parses, as unknown.
        let old = a.encode().replace(" ino=77", "");
        assert_eq!(FsAttr::parse(&old).unwrap().ino, 0);
        assert_eq!(FsAttr::parse(&format!("{} later=1", a.encode())).unwrap(), a);
        assert!(FsAttr::parse("mode=1").is_err());
    }

    #[test]
    fn errors_carry_the_errno() {
        for n in [libc::EPERM, libc::ENOENT, libc::ELOOP, libc::EOPNOTSUPP, libc::ENOTEMPTY, 1234] {
            assert_eq!(errno_of(&fs_error(n, "x")), Some(n));
        }
        assert_eq!(fs_error(libc::ENOENT, "x").code, ErrorCode::NoSuchKey);
        assert_eq!(errno_of(&Error::internal("[x] y")), None);
        assert_eq!(entry_path("a/b/").unwrap(), "a/b");
        assert_eq!(entry_path("").unwrap(), "");
        assert!(entry_path("a/../b").is_err() && entry_path("a//b").is_err());
    }

    #[test]
    fn times() {
        for t in [FsTime { sec: 0, nsec: 0 }, FsTime { sec: -1, nsec: 5 }, FsTime { sec: 1 << 33, nsec: 7 }] {
            assert_eq!(FsTime::of(t.system_time()), t);
        }
    }
}
