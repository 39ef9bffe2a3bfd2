//! The FUSE floor: a null file system mounted with the very options and kernel settings of
//! `s3hpc mount` (`fuse_config`, `configure_kernel`, the same FUSE threads), so `dd`/`cat`
//! through it measure what FUSE itself allows on a machine, with no S3 request behind it.
//!
//!   cargo build --release -p s3hpc-mount --example nullfs
//!   target/release/examples/nullfs /mnt/null [SIZE_GIB] &
//!   dd if=/mnt/null/zero of=/dev/null bs=1M         # reads: answered from a static zeroed buffer
//!   dd if=/dev/zero of=/mnt/null/sink bs=1M count=1024   # writes: discarded
//!   fusermount3 -u /mnt/null
//!
//! `bench/mount_floors.sh` runs these next to `s3hpc mount`. The root holds `zero` (SIZE_GIB,
//! default 16, of zeros) and `sink` (always empty); creating any other name gives a sink too.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, KernelConfig, LockOwner,
    OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
    WriteFlags,
};

const TTL: Duration = Duration::from_secs(60);
const ZERO: u64 = 2;
const SINK: u64 = 3;
/// Larger than any read the kernel sends (max_pages is 256 pages at most by default).
static ZEROS: [u8; 16 << 20] = [0; 16 << 20];

struct NullFs {
    size: u64,
    /// (requests, bytes) of reads and of writes, printed at unmount.
    reads: [AtomicU64; 2],
    writes: [AtomicU64; 2],
}

impl NullFs {
    fn attr(&self, ino: u64) -> FileAttr {
        let (kind, perm, size) = match ino {
            1 => (FileType::Directory, 0o755, 0),
            ZERO => (FileType::RegularFile, 0o644, self.size),
            _ => (FileType::RegularFile, 0o644, 0),
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            // SAFETY: getuid/getgid cannot fail.
            uid: unsafe { libc::getuid() },
            gid: unsafe { libc::getgid() },
            rdev: 0,
            blksize: 1 << 20,
            flags: 0,
        }
    }
}

impl Filesystem for NullFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        s3hpc_mount::configure_kernel(config);
        eprintln!("nullfs: kernel connection {config:?}");
        Ok(())
    }

    fn destroy(&mut self) {
        let n = |c: &[AtomicU64; 2]| (c[0].load(Ordering::Relaxed), c[1].load(Ordering::Relaxed));
        let ((r, rb), (w, wb)) = (n(&self.reads), n(&self.writes));
        eprintln!(
            "nullfs: {r} reads ({} KiB each on average), {w} writes ({} KiB)",
            (rb / r.max(1)) >> 10,
            (wb / w.max(1)) >> 10
        );
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match (parent.0, name.to_str()) {
            (1, Some("zero")) => reply.entry(&TTL, &self.attr(ZERO), Generation(0)),
            (1, Some(_)) => reply.entry(&TTL, &self.attr(SINK), Generation(0)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply.attr(&TTL, &self.attr(ino.0));
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.attr(&TTL, &self.attr(ino.0));
    }

    fn open(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.created(&TTL, &self.attr(SINK), Generation(0), FileHandle(0), FopenFlags::empty());
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let len = if ino.0 == ZERO { self.size.saturating_sub(offset).min(size as u64) as usize } else { 0 };
        self.reads[0].fetch_add(1, Ordering::Relaxed);
        self.reads[1].fetch_add(len as u64, Ordering::Relaxed);
        reply.data(&ZEROS[..len.min(ZEROS.len())]);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.writes[0].fetch_add(1, Ordering::Relaxed);
        self.writes[1].fetch_add(data.len() as u64, Ordering::Relaxed);
        reply.written(data.len() as u32);
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: nullfs MOUNTPOINT [SIZE_GIB]");
        std::process::exit(2);
    };
    let gib: u64 = args.next().and_then(|s| s.to_str()?.parse().ok()).unwrap_or(16);
    let mut opts = s3hpc_mount::MountOptions::new("null");
    opts.validate().map_err(std::io::Error::other)?;
    let cfg = s3hpc_mount::fuse_config(&opts);
    fuser::mount(NullFs { size: gib << 30, reads: Default::default(), writes: Default::default() }, &dir, &cfg)
}
