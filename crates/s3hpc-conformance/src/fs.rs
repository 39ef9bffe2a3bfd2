//! `Store::fs`, s3hpc's file-system extension (s3hpc_core::fsattr): stores that keep objects as
//! files (the memory oracle, the posix backend, and the clients of an s3hpc gateway over them)
//! answer the file system's attributes and change them; the others answer NotImplemented, and
//! the case is skipped for them.

use super::*;
use s3hpc_core::fsattr::{FsAttr, FsKind, FsOp, FsTime, SetFsAttr, SetTime, errno_of};

/// `true` when the store answers NotImplemented to [`Store::fs`] (checked on a missing bucket,
/// as [`lacks_rename`]).
pub async fn lacks_fs(s: &DynStore) -> bool {
    let r = s.fs("conf-no-such-bucket-probe", "a", FsOp::GetAttr).await;
    matches!(r, Err(e) if e.code == ErrorCode::NotImplemented)
}

fn set(f: impl FnOnce(&mut SetFsAttr)) -> FsOp {
    let mut a = SetFsAttr::default();
    f(&mut a);
    FsOp::SetAttr(a)
}

async fn fs(s: &DynStore, b: &str, k: &str, op: FsOp) -> Result<FsAttr, String> {
    let what = format!("fs {} of {k:?}", op.encode());
    ok(s.fs(b, k, op).await, &what)
}

/// The call fails with the POSIX error `errno` (carried in the message) and the S3 `code`.
fn expect_errno<T: std::fmt::Debug>(r: Result<T>, errno: i32, code: ErrorCode, what: &str) -> R {
    match r {
        Ok(v) => Err(format!("{what}: expected errno {errno}, got Ok({v:?})")),
        Err(e) if errno_of(&e) == Some(errno) && e.code == code => Ok(()),
        Err(e) => Err(format!("{what}: expected errno {errno} and {code}, got {e} (errno {:?})", errno_of(&e))),
    }
}

pub(crate) async fn fs_attributes(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_fs(&s).await {
        return Ok(());
    }
    expect_code(s.fs(&b, "a", FsOp::GetAttr).await, ErrorCode::NoSuchBucket, "fs in a missing bucket")?;
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "d/f", Bytes::from_static(b"hello world")).await?;

    // What there is: a file, its directory (with or without the slash), the bucket's directory.
    let f = fs(&s, &b, "d/f", FsOp::GetAttr).await?;
    ensure_eq!((f.kind, f.size, f.nlink, f.target.clone()), (FsKind::File, 11, 1, None));
    for k in ["d", "d/", ""] {
        ensure_eq!(fs(&s, &b, k, FsOp::GetAttr).await?.kind, FsKind::Dir);
    }
    expect_errno(s.fs(&b, "d/nope", FsOp::GetAttr).await, libc::ENOENT, ErrorCode::NoSuchKey, "missing entry")?;
    expect_errno(s.fs(&b, "d/f/x", FsOp::GetAttr).await, libc::ENOTDIR, ErrorCode::InvalidArgument, "below a file")?;
    expect_errno(s.fs(&b, "d/../f", FsOp::GetAttr).await, libc::EINVAL, ErrorCode::InvalidArgument, "a .. key")?;

    // chmod of a file and of a directory; chown to the owner it has (allowed to anyone who owns).
    let a = fs(&s, &b, "d/f", set(|a| a.mode = Some(0o640))).await?;
    ensure_eq!(a.mode, 0o640);
    ensure_eq!(fs(&s, &b, "d/f", FsOp::GetAttr).await?.mode, 0o640);
    ensure_eq!(fs(&s, &b, "d", set(|a| a.mode = Some(0o711))).await?.mode, 0o711);
    ensure_eq!(fs(&s, &b, "d", FsOp::GetAttr).await?.mode, 0o711);
    let same = fs(&s, &b, "d/f", set(|a| (a.uid, a.gid) = (Some(f.uid), Some(f.gid)))).await?;
    ensure_eq!((same.uid, same.gid), (f.uid, f.gid));

    // Times, to the nanosecond; the object's Last-Modified is the file's mtime.
    let t1 = FsTime { sec: 1_600_000_000, nsec: 123_456_789 };
    let t2 = FsTime { sec: 1_500_000_000, nsec: 5 };
    let a = fs(&s, &b, "d/f", set(|a| (a.atime, a.mtime) = (Some(SetTime::At(t1)), Some(SetTime::At(t2))))).await?;
    ensure_eq!((a.atime, a.mtime), (t1, t2));
    let head = ok(s.head_object(&b, "d/f", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(FsTime::of(head.last_modified).sec, t2.sec);
    let before = FsTime::now();
    let a = fs(&s, &b, "d/f", set(|a| a.mtime = Some(SetTime::Now))).await?;
    ensure!(a.mtime.sec >= before.sec - 1 && a.atime == t1, "mtime=now: {a:?}");

    // Truncate: shorter, then longer (zeros).
    ensure_eq!(fs(&s, &b, "d/f", set(|a| a.size = Some(5))).await?.size, 5);
    ensure_eq!(get(&s, &b, "d/f").await?.1, Bytes::from_static(b"hello"));
    ensure_eq!(fs(&s, &b, "d/f", set(|a| a.size = Some(8))).await?.size, 8);
    ensure_eq!(get(&s, &b, "d/f").await?.1, Bytes::from_static(b"hello\0\0\0"));
    expect_errno(
        s.fs(&b, "d", set(|a| a.size = Some(0))).await,
        libc::EISDIR,
        ErrorCode::InvalidArgument,
        "truncate of a dir",
    )?;

    // Symlinks: the target is data, kept as given (never resolved), and the link is not followed.
    // A store may refuse to make them with EPERM (the posix backend without --identity posix,
    // whose reads would follow them with the gateway's rights).
    let made = match s.fs(&b, "d/l", FsOp::Symlink("../elsewhere/x y".into())).await {
        Ok(l) => Some(l),
        Err(e) if errno_of(&e) == Some(libc::EPERM) && e.code == ErrorCode::AccessDenied => None,
        Err(e) => return Err(format!("symlink: unexpected error {e}")),
    };
    if let Some(l) = made {
        ensure_eq!((l.kind, l.size, l.target.clone()), (FsKind::Symlink, 16, Some("../elsewhere/x y".to_string())));
        ensure_eq!(fs(&s, &b, "d/l", FsOp::GetAttr).await?.target, Some("../elsewhere/x y".to_string()));
        expect_errno(
            s.fs(&b, "d/l", FsOp::Symlink("f".into())).await,
            libc::EEXIST,
            ErrorCode::InvalidRequest,
            "symlink over a symlink",
        )?;
        expect_errno(
            s.fs(&b, "d/f", FsOp::Symlink("f".into())).await,
            libc::EEXIST,
            ErrorCode::InvalidRequest,
            "symlink over a file",
        )?;
        expect_errno(
            s.fs(&b, "d/f/x", FsOp::Symlink("f".into())).await,
            libc::ENOTDIR,
            ErrorCode::InvalidArgument,
            "symlink below a file",
        )?;
        expect_errno(
            s.fs(&b, "e/x", FsOp::Symlink("f".into())).await,
            libc::ENOENT,
            ErrorCode::NoSuchKey,
            "symlink in a missing dir",
        )?;
        expect_errno(
            s.fs(&b, "d/l/x", FsOp::GetAttr).await,
            libc::ELOOP,
            ErrorCode::InvalidArgument,
            "through a symlink",
        )?;
        expect_errno(
            s.fs(&b, "d/l", set(|a| a.mode = Some(0o600))).await,
            libc::EOPNOTSUPP,
            ErrorCode::NotImplemented,
            "chmod of a symlink",
        )?;
        let lt = fs(&s, &b, "d/l", set(|a| a.mtime = Some(SetTime::At(t1)))).await?;
        ensure_eq!((lt.kind, lt.mtime), (FsKind::Symlink, t1));
        // DeleteObject removes a symlink as unlink does (not what it points to).
        ok(s.delete_object(&b, "d/l").await, "delete the symlink")?;
        expect_errno(s.fs(&b, "d/l", FsOp::GetAttr).await, libc::ENOENT, ErrorCode::NoSuchKey, "deleted symlink")?;
        ensure_eq!(get(&s, &b, "d/f").await?.1.len(), 8);
    } else {
        expect_errno(s.fs(&b, "d/l", FsOp::GetAttr).await, libc::ENOENT, ErrorCode::NoSuchKey, "refused symlink")?;
    }

    // Hard links: one file under two names, attributes shared.
    let h = fs(&s, &b, "d/h", FsOp::Link("d/f".into())).await?;
    ensure_eq!((h.kind, h.size, h.nlink, h.mode), (FsKind::File, 8, 2, 0o640));
    ensure_eq!(fs(&s, &b, "d/f", FsOp::GetAttr).await?.nlink, 2);
    ensure_eq!(get(&s, &b, "d/h").await?.1, Bytes::from_static(b"hello\0\0\0"));
    ensure_eq!(fs(&s, &b, "d/h", set(|a| a.mode = Some(0o600))).await?.mode, 0o600);
    ensure_eq!(fs(&s, &b, "d/f", FsOp::GetAttr).await?.mode, 0o600);
    expect_errno(
        s.fs(&b, "d/h", FsOp::Link("d/f".into())).await,
        libc::EEXIST,
        ErrorCode::InvalidRequest,
        "link over a file",
    )?;
    expect_errno(
        s.fs(&b, "d2", FsOp::Link("d".into())).await,
        libc::EPERM,
        ErrorCode::AccessDenied,
        "link to a directory",
    )?;
    expect_errno(
        s.fs(&b, "d/x", FsOp::Link("d/nope".into())).await,
        libc::ENOENT,
        ErrorCode::NoSuchKey,
        "link to nothing",
    )?;
    ok(s.delete_object(&b, "d/h").await, "delete a link")?;
    ensure_eq!(fs(&s, &b, "d/f", FsOp::GetAttr).await?.nlink, 1);

    // mknod: an empty regular file with the mode asked for; special files where the store
    // makes them (the posix backend without --identity posix refuses, EPERM).
    let m = fs(&s, &b, "d/m", FsOp::Mknod { kind: FsKind::File, mode: 0o604, rdev: 0, owner: None }).await?;
    ensure_eq!((m.kind, m.size, m.mode), (FsKind::File, 0, 0o604));
    ensure_eq!(get(&s, &b, "d/m").await?.1.len(), 0);
    expect_errno(
        s.fs(&b, "d/m", FsOp::Mknod { kind: FsKind::File, mode: 0o600, rdev: 0, owner: None }).await,
        libc::EEXIST,
        ErrorCode::InvalidRequest,
        "mknod over a file",
    )?;
    match s.fs(&b, "d/p", FsOp::Mknod { kind: FsKind::Fifo, mode: 0o600, rdev: 0, owner: None }).await {
        Ok(p) => {
            ensure_eq!((p.kind, p.mode, p.size), (FsKind::Fifo, 0o600, 0));
            ensure_eq!(fs(&s, &b, "d/p", set(|a| a.mode = Some(0o640))).await?.mode, 0o640);
            ok(s.delete_object(&b, "d/p").await, "delete the fifo")?;
            expect_errno(s.fs(&b, "d/p", FsOp::GetAttr).await, libc::ENOENT, ErrorCode::NoSuchKey, "deleted fifo")?;
        }
        Err(e) if errno_of(&e) == Some(libc::EPERM) && e.code == ErrorCode::AccessDenied => {}
        Err(e) => return Err(format!("mknod of a fifo: unexpected error {e}")),
    }

    // mkdir, rmdir: a directory with the mode asked for, removed when empty; objects are
    // renamed and deleted as objects (RenameObject, DeleteObject), not by the extension.
    let e = fs(&s, &b, "e", FsOp::Mkdir { mode: 0o751, owner: None }).await?;
    ensure_eq!((e.kind, e.mode), (FsKind::Dir, 0o751));
    expect_errno(
        s.fs(&b, "e", FsOp::Mkdir { mode: 0o700, owner: None }).await,
        libc::EEXIST,
        ErrorCode::InvalidRequest,
        "mkdir over a directory",
    )?;
    fs(&s, &b, "e/sub", FsOp::Mkdir { mode: 0o700, owner: None }).await?;
    expect_errno(s.fs(&b, "e", FsOp::Rmdir).await, libc::ENOTEMPTY, ErrorCode::InvalidRequest, "rmdir of a full one")?;
    expect_errno(s.fs(&b, "d/f", FsOp::Rmdir).await, libc::ENOTDIR, ErrorCode::InvalidArgument, "rmdir of a file")?;
    let f = fs(&s, &b, "d/f", FsOp::GetAttr).await?;
    ensure!(f.ino != 0, "a file's inode number is reported");
    expect_errno(
        s.fs(&b, "d/f2", FsOp::Rename { source: "d/f".into(), noreplace: false }).await,
        libc::EOPNOTSUPP,
        ErrorCode::NotImplemented,
        "rename of an object",
    )?;
    expect_errno(
        s.fs(&b, "d/f", FsOp::Unlink).await,
        libc::EOPNOTSUPP,
        ErrorCode::NotImplemented,
        "unlink of an object",
    )?;
    fs(&s, &b, "e/sub", FsOp::Rmdir).await?;
    fs(&s, &b, "e", FsOp::Rmdir).await?;
    expect_errno(s.fs(&b, "e", FsOp::GetAttr).await, libc::ENOENT, ErrorCode::NoSuchKey, "removed directory")?;
    Ok(())
}
