//! Containment: every file-system call by path that the store makes resolves beneath its root.
//!
//! The store names its files by absolute paths under the root (`ROOT/bucket/.s3hpc/uploads/ID`,
//! `ROOT/bucket/a/b`). A POSIX user with write access to a bucket can replace any directory on
//! such a path by a symlink, at any moment, and a plain `std::fs` call would then follow it out
//! of the root (deleting, creating or listing files elsewhere with the gateway's rights).
//! [`Beneath`] takes those same absolute paths, turns them into paths relative to the open root,
//! and runs each call through `cap_std::fs::Dir`, which resolves every component beneath the
//! root (`openat2(RESOLVE_BENEATH)` where the kernel has it, a checked component-by-component
//! walk elsewhere): `..`, absolute symlinks and symlinks leading out fail with
//! PermissionDenied (AccessDenied to S3 clients), in the same call that acts, so there is no
//! window between a check and the use. Symlinks that stay beneath the root are followed, as
//! reads follow them (see docs/SEMANTICS.md, Limits); the final name of a remove or rename is
//! never followed.
//!
//! The hot paths (GET, HEAD, PUT's temp file and publishing rename, DELETE of a file) use the
//! `*at` calls of [`crate::sys`] on directories opened the same way; everything else goes
//! through here.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::OpenOptionsExt;

use cap_std::fs::OpenOptionsExt as _;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::Dir;

/// The store root, open, and the calls the store makes by path beneath it.
#[derive(Debug)]
pub(crate) struct Beneath {
    root: PathBuf,
    fd: File,
    dir: Dir,
    /// Areas below the root that are resolved from a directory opened once instead of from the
    /// root (the gateway's state, `ROOT/.s3hpc`, and its staging area, see `state`): a path under
    /// `prefix` is looked up relative to that held descriptor, so a swap of a directory on the
    /// way there changes nothing, and a user acting through the store needs search permission
    /// only from that directory on. Deepest first.
    areas: Vec<Area>,
}

#[derive(Debug)]
struct Area {
    prefix: PathBuf,
    fd: File,
    dir: Dir,
}

/// One directory entry: its name and whether it is a directory, a regular file or a symlink
/// (from the entry itself: symlinks are not followed).
#[derive(Debug)]
pub(crate) struct DirEntry {
    pub name: OsString,
    pub is_dir: bool,
    pub is_file: bool,
    pub is_symlink: bool,
}

fn outside(p: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, format!("{} is not beneath the store root", p.display()))
}

impl Beneath {
    /// `root` must be canonical; `fd` is the open root directory (a read-only descriptor).
    pub fn new(root: PathBuf, fd: &File) -> io::Result<Beneath> {
        Ok(Beneath { root, fd: fd.try_clone()?, dir: Dir::from_std_file(fd.try_clone()?), areas: Vec::new() })
    }

    /// Resolve paths under `prefix` (below the root) from the open directory `fd` from now on.
    pub fn add_area(&mut self, prefix: PathBuf, fd: &File) -> io::Result<()> {
        self.areas.push(Area { prefix, fd: fd.try_clone()?, dir: Dir::from_std_file(fd.try_clone()?) });
        self.areas.sort_by_key(|a| std::cmp::Reverse(a.prefix.components().count()));
        Ok(())
    }

    /// The directory `p` is resolved from (the root or an area's), and `p` relative to it.
    /// `p` must be the root or a path under it without `..`.
    fn at<'a>(&self, p: &'a Path) -> io::Result<(&File, &Dir, &'a Path)> {
        let (fd, dir, r) = match self.areas.iter().find(|a| p.starts_with(&a.prefix)) {
            Some(a) => (&a.fd, &a.dir, p.strip_prefix(&a.prefix).map_err(|_| outside(p))?),
            None => (&self.fd, &self.dir, p.strip_prefix(&self.root).map_err(|_| outside(p))?),
        };
        if r.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(outside(p));
        }
        Ok((fd, dir, if r.as_os_str().is_empty() { Path::new(".") } else { r }))
    }

    fn rel<'a>(&self, p: &'a Path) -> io::Result<(&Dir, &'a Path)> {
        self.at(p).map(|(_, d, r)| (d, r))
    }

    pub fn read(&self, p: &Path) -> io::Result<Vec<u8>> {
        let (d, r) = self.rel(p)?;
        d.read(r)
    }

    pub fn read_to_string(&self, p: &Path) -> io::Result<String> {
        let (d, r) = self.rel(p)?;
        d.read_to_string(r)
    }

    /// Create or truncate `p` (mode 0644 before the umask) and write `data`.
    pub fn write(&self, p: &Path, data: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let mut f = self.create(p, false)?;
        f.write_all(data)
    }

    /// Open `p` for writing: create-only (`O_EXCL`) when `new`, else create or truncate.
    pub fn create(&self, p: &Path, new: bool) -> io::Result<File> {
        let mut o = cap_std::fs::OpenOptions::new();
        o.write(true).read(true).mode(0o644);
        if new {
            o.create_new(true);
        } else {
            o.create(true).truncate(true);
        }
        let (d, r) = self.rel(p)?;
        Ok(d.open_with(r, &o)?.into_std())
    }

    /// Open `p` (a file or a directory) read-only, following symlinks that stay beneath the
    /// root: for `f*xattr` calls and reads.
    pub fn open(&self, p: &Path) -> io::Result<File> {
        self.open_flags(p, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY)
    }

    /// `openat2(root, rel(p), flags | O_CLOEXEC, RESOLVE_BENEATH)`; where openat2 is unavailable
    /// (Linux < 5.6, seccomp filters), a plain open of `p` (see docs/SEMANTICS.md, Limits).
    fn open_flags(&self, p: &Path, flags: libc::c_int) -> io::Result<File> {
        let (fd, _, rel) = self.at(p)?;
        match crate::sys::open_beneath_flags(fd, rel, flags | libc::O_CLOEXEC) {
            Some(r) => r,
            None => {
                let mut o = std::fs::OpenOptions::new();
                o.read(true).custom_flags(flags & !libc::O_ACCMODE);
                o.open(p)
            }
        }
    }

    /// Open the existing file `p` for reading and writing (never created or truncated),
    /// following symlinks that stay beneath the root: appends write through it.
    pub fn open_rw(&self, p: &Path) -> io::Result<File> {
        let (fd, dir, rel) = self.at(p)?;
        let flags = libc::O_RDWR | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        match crate::sys::open_beneath_flags(fd, rel, flags) {
            Some(r) => r,
            None => {
                let mut o = cap_std::fs::OpenOptions::new();
                o.read(true).write(true);
                Ok(dir.open_with(rel, &o)?.into_std())
            }
        }
    }

    /// Open the directory `p` read-only (usable for `*at` calls).
    pub fn open_dir(&self, p: &Path) -> io::Result<File> {
        self.open_flags(p, libc::O_RDONLY | libc::O_DIRECTORY)
    }

    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let ((fd, fr), (td, tr)) = (self.rel(from)?, self.rel(to)?);
        fd.rename(fr, td, tr)
    }

    /// `link(2)`: a second name `to` for the file `from` (a final symlink is not followed).
    pub fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let ((fd, fr), (td, tr)) = (self.rel(from)?, self.rel(to)?);
        fd.hard_link(fr, td, tr)
    }

    pub fn remove_file(&self, p: &Path) -> io::Result<()> {
        let (d, r) = self.rel(p)?;
        d.remove_file(r)
    }

    pub fn remove_dir(&self, p: &Path) -> io::Result<()> {
        let (d, r) = self.rel(p)?;
        d.remove_dir(r)
    }

    /// Remove the directory `p` and everything in it; symlinks inside are removed, not followed.
    pub fn remove_dir_all(&self, p: &Path) -> io::Result<()> {
        let (d, r) = self.rel(p)?;
        d.remove_dir_all(r)
    }

    /// `chmod` of `p` (following symlinks that stay beneath the root).
    pub fn chmod(&self, p: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.open_flags(p, libc::O_RDONLY)?.set_permissions(std::fs::Permissions::from_mode(mode))
    }

    pub fn create_dir(&self, p: &Path) -> io::Result<()> {
        let (d, r) = self.rel(p)?;
        d.create_dir(r)
    }

    /// Create `p` and its missing parents. A component that exists as a symlink leading out
    /// of the root fails with PermissionDenied (as any resolution here does), not as
    /// "already exists".
    pub fn create_dir_all(&self, p: &Path) -> io::Result<()> {
        let (d, r) = self.rel(p)?;
        d.create_dir_all(r).map_err(|e| match self.metadata(p) {
            Err(m) if e.kind() == io::ErrorKind::AlreadyExists && m.kind() == io::ErrorKind::PermissionDenied => m,
            _ => e,
        })
    }

    /// `stat` of `p`, following symlinks that stay beneath the root.
    pub fn metadata(&self, p: &Path) -> io::Result<Metadata> {
        self.open_flags(p, libc::O_PATH)?.metadata()
    }

    /// `lstat` of `p`: a final symlink is described, not followed.
    pub fn symlink_metadata(&self, p: &Path) -> io::Result<Metadata> {
        self.open_flags(p, libc::O_PATH | libc::O_NOFOLLOW)?.metadata()
    }

    /// The entries of the directory `p` (without `.` and `..`), unsorted.
    pub fn read_dir(&self, p: &Path) -> io::Result<Vec<DirEntry>> {
        let (d, r) = self.rel(p)?;
        let d = d.open_dir(r)?;
        let mut out = Vec::new();
        for e in d.entries()? {
            let e = e?;
            let ft = e.file_type()?;
            out.push(DirEntry {
                name: e.file_name(),
                is_dir: ft.is_dir(),
                is_file: ft.is_file(),
                is_symlink: ft.is_symlink(),
            });
        }
        Ok(out)
    }

    /// The entries of the open directory `d` (without `.` and `..`), unsorted: nothing is
    /// resolved by path (the listing cache opens the directory once, as the requesting user,
    /// and reads that very directory).
    pub fn read_dir_of(&self, d: &File) -> io::Result<Vec<DirEntry>> {
        let d = Dir::from_std_file(d.try_clone()?);
        let mut out = Vec::new();
        for e in d.entries()? {
            let e = e?;
            let ft = e.file_type()?;
            out.push(DirEntry {
                name: e.file_name(),
                is_dir: ft.is_dir(),
                is_file: ft.is_file(),
                is_symlink: ft.is_symlink(),
            });
        }
        Ok(out)
    }

    /// Set `user.s3hpc` on `p` (a file or directory beneath the root).
    pub fn set_xattr(&self, p: &Path, val: &[u8]) -> io::Result<()> {
        crate::sys::fset_xattr(&self.open(p)?, val)
    }

    pub fn get_xattr(&self, p: &Path) -> io::Result<Option<Vec<u8>>> {
        crate::sys::fget_xattr(&self.open(p)?)
    }

    pub fn remove_xattr(&self, p: &Path) -> io::Result<()> {
        crate::sys::fremove_xattr(&self.open(p)?)
    }
}
