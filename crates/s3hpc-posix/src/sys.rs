//! Thin wrappers over the Linux system calls std does not expose: extended attributes,
//! `renameat2(RENAME_NOREPLACE)`, `copy_file_range`, `gethostname`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The one extended attribute that carries an object's metadata.
pub const XATTR_NAME: &[u8] = b"user.s3hpc\0";

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
}

fn name() -> *const libc::c_char {
    XATTR_NAME.as_ptr().cast()
}

/// The file system refuses extended attributes (or user.* ones) here.
pub fn is_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::EPERM))
}

/// The value is too large for this file system's xattr space.
pub fn is_too_big(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::E2BIG) | Some(libc::ENOSPC) | Some(libc::ERANGE))
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

pub fn fset_xattr(f: &File, val: &[u8]) -> io::Result<()> {
    // SAFETY: valid fd, NUL-terminated name, buffer of the given length.
    check(unsafe { libc::fsetxattr(f.as_raw_fd(), name(), val.as_ptr().cast(), val.len(), 0) })
}

pub fn set_xattr(p: &Path, val: &[u8]) -> io::Result<()> {
    let c = cpath(p)?;
    // SAFETY: NUL-terminated path and name, buffer of the given length.
    check(unsafe { libc::setxattr(c.as_ptr(), name(), val.as_ptr().cast(), val.len(), 0) })
}

pub fn remove_xattr(p: &Path) -> io::Result<()> {
    let c = cpath(p)?;
    // SAFETY: NUL-terminated path and name.
    match check(unsafe { libc::removexattr(c.as_ptr(), name()) }) {
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(()),
        r => r,
    }
}

fn get_with(mut call: impl FnMut(*mut libc::c_void, usize) -> isize) -> io::Result<Option<Vec<u8>>> {
    let mut buf = vec![0u8; 512];
    for _ in 0..4 {
        let n = call(buf.as_mut_ptr().cast(), buf.len());
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(Some(buf));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODATA) => return Ok(None),
            Some(libc::ERANGE) => {
                let need = call(std::ptr::null_mut(), 0);
                if need < 0 {
                    return Err(io::Error::last_os_error());
                }
                buf.resize(need as usize + 64, 0);
            }
            _ => return Err(e),
        }
    }
    Err(io::Error::other("extended attribute keeps growing"))
}

/// `Ok(None)` when the attribute is absent.
pub fn fget_xattr(f: &File) -> io::Result<Option<Vec<u8>>> {
    let fd = f.as_raw_fd();
    // SAFETY: valid fd; the buffer pointer/length pair comes from get_with.
    get_with(|b, n| unsafe { libc::fgetxattr(fd, name(), b, n) })
}

pub fn get_xattr(p: &Path) -> io::Result<Option<Vec<u8>>> {
    let c = cpath(p)?;
    // SAFETY: NUL-terminated path; the buffer pointer/length pair comes from get_with.
    get_with(|b, n| unsafe { libc::getxattr(c.as_ptr(), name(), b, n) })
}

/// Rename that fails with `AlreadyExists` instead of replacing `to`.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (cpath(from)?, cpath(to)?);
    // SAFETY: NUL-terminated paths, AT_FDCWD.
    let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // File systems without renameat2 flags (NFS, some FUSE): link() is atomic create-only.
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::ENOTSUP) => {
            std::fs::hard_link(from, to)?;
            let _ = std::fs::remove_file(from);
            Ok(())
        }
        _ => Err(e),
    }
}

/// Copy `len` bytes from `src` at `src_off` to `dst` at `dst_off`, in the kernel
/// (`copy_file_range`: reflink or server-side copy where the file system can) with a
/// read/write fallback.
pub fn copy_range(src: &File, mut src_off: u64, dst: &File, mut dst_off: u64, len: u64) -> io::Result<()> {
    let mut left = len;
    while left > 0 {
        let mut so = src_off as libc::loff_t;
        let mut d = dst_off as libc::loff_t;
        let chunk = left.min(1 << 30) as usize;
        // SAFETY: valid fds and offset pointers to locals.
        let n = unsafe { libc::copy_file_range(src.as_raw_fd(), &mut so, dst.as_raw_fd(), &mut d, chunk, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EXDEV) | Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => {
                    copy_range_rw(src, src_off, dst, dst_off, left)
                }
                _ => Err(e),
            };
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "source shorter than expected"));
        }
        src_off += n as u64;
        dst_off += n as u64;
        left -= n as u64;
    }
    Ok(())
}

fn copy_range_rw(src: &File, mut src_off: u64, dst: &File, mut dst_off: u64, mut left: u64) -> io::Result<()> {
    let mut buf = vec![0u8; (1 << 20).min(left as usize).max(1)];
    while left > 0 {
        let want = (left as usize).min(buf.len());
        let n = src.read_at(&mut buf[..want], src_off)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "source shorter than expected"));
        }
        dst.write_all_at(&buf[..n], dst_off)?;
        src_off += n as u64;
        dst_off += n as u64;
        left -= n as u64;
    }
    Ok(())
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buffer and its length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let h: String = String::from_utf8_lossy(&buf[..end])
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if h.is_empty() { "host".into() } else { h }
}

/// Open `rel` for reading beneath the directory `dir` with `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_MAGICLINKS)`: `..`, absolute symlinks and symlinks leading outside `dir` fail
/// (mapped to PermissionDenied). Where openat2 is unavailable (Linux < 5.6, seccomp filters)
/// falls back to a plain open of `full`.
pub fn open_beneath(dir: &File, rel: &Path, full: &Path) -> io::Result<File> {
    use std::os::fd::FromRawFd;
    let c = cpath(rel)?;
    // SAFETY: open_how is plain data; all-zero is its documented default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid dir fd, NUL-terminated path, pointer and size of a live open_how.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd >= 0 {
        // SAFETY: a fresh fd we own.
        return Ok(unsafe { File::from_raw_fd(fd as i32) });
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::E2BIG) => {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(full)
        }
        Some(libc::EXDEV) | Some(libc::ELOOP) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the key resolves through a symlink that leaves the store root",
        )),
        _ => Err(e),
    }
}
