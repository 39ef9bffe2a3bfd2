//! The backend's options: durability, I/O mode, identity, locking, listing staleness.

use std::time::Duration;

use s3hpc_core::EtagMode;

/// When a write is acknowledged relative to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// fsync the file and the parent directory before acknowledging: the object survives a
    /// power loss once acknowledged.
    Strict,
    /// fdatasync the file before the rename: a visible name never has torn content, even after
    /// a power loss; the name itself (the last renames) may be lost.
    #[default]
    Relaxed,
    /// No syncs: survives a process crash (the page cache has it), not a power loss.
    None,
}

impl Durability {
    /// "strict", "relaxed" or "none".
    pub fn parse(s: &str) -> Option<Durability> {
        match s.trim().to_ascii_lowercase().as_str() {
            "strict" => Some(Durability::Strict),
            "relaxed" => Some(Durability::Relaxed),
            "none" => Some(Durability::None),
            _ => None,
        }
    }
}

/// Where the store runs its blocking file-system work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// On Tokio's blocking pool (`spawn_blocking`), so async workers never wait for the disk;
    /// costs one thread hand-off each way per call. For servers (HTTP gateway, wire server),
    /// where one slow disk must not stall other connections.
    #[default]
    Offload,
    /// Like `Offload`, one slow disk never stalls other connections, but on a multi-thread Tokio
    /// runtime the call runs at once on the calling thread inside `block_in_place` (the worker's
    /// other tasks move to another thread first); elsewhere it goes to the blocking pool. Saves
    /// the request the pool's two hand-offs, which on an idle machine are most of a small
    /// request's latency (a HEAD: ~30 us against 0.6 us of file-system work), but moving the
    /// worker's tasks away costs CPU of its own: for servers with few requests in flight (a
    /// node-local gateway for a few processes), not for busy ones.
    InPlace,
    /// Directly on the calling task: no hand-off, but the calling thread blocks in the file
    /// system while the store's future is polled. For embedded callers that wait for each call
    /// anyway (the libs3 library, benchmarks, a current-thread runtime per caller thread).
    /// Streamed bodies are written batch by batch as they arrive, on the polling thread.
    Inline,
}

impl IoMode {
    /// "offload", "inplace" or "inline".
    pub fn parse(s: &str) -> Option<IoMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "offload" => Some(IoMode::Offload),
            "inplace" => Some(IoMode::InPlace),
            "inline" => Some(IoMode::Inline),
            _ => None,
        }
    }
}

/// Options of [`PosixStore::open`](crate::PosixStore::open).
#[derive(Clone, Debug)]
pub struct PosixOptions {
    pub durability: Durability,
    pub etag_mode: EtagMode,
    /// Offload (default, for servers) or Inline (embedded callers).
    pub io: IoMode,
    /// Temp files and claimed upload directories older than this are removed by
    /// [`PosixStore::cleanup_stale`](crate::PosixStore::cleanup_stale) (run at open). Only age decides, so a live writer of
    /// another process is never disturbed unless it stalls for this long.
    pub stale_temp_age: Duration,
    /// Act as the request's POSIX identity (`s3hpc_core::identity::current`): each call's
    /// file-system work runs with that user's fsuid, fsgid and groups, so the kernel enforces
    /// permissions (needs CAP_SETUID and CAP_SETGID; see `ident`). Off: act as the process.
    pub posix_identity: bool,
    /// The process umask set at open with `posix_identity` (default 077: S3's "private" is
    /// private on the file system too).
    pub umask: u32,
    /// The cross-process lock primitive (`--lock-mode`).
    pub lock_mode: LockMode,
    /// The longest a request waits for a cross-process lock before it answers 503 SlowDown.
    pub lock_timeout: Duration,
    /// On a root shared by nodes: how long after a full read a large directory's listing is
    /// served with this store's own changes applied (`--listing-staleness`; see `dircache`).
    /// Zero: read again after every change. Unused on local roots (inotify keeps them exact).
    pub listing_staleness: Duration,
}

/// How conditional writes, versioned writes, completes and renames exclude each other across
/// processes and hosts sharing the root (`--lock-mode`; docs/DEPLOY.md has the table per file
/// system).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockMode {
    /// POSIX byte-range locks on open file descriptions (`F_OFD_SETLK`): cluster-wide on NFS,
    /// GPFS, Lustre (`-o flock`), BeeGFS (global locks), CephFS, GlusterFS.
    #[default]
    Fcntl,
    /// `flock(2)` (node-local on GPFS).
    Flock,
    /// Only within this process: one gateway on the root.
    Local,
    /// No locking: conditional and versioned writes answer NotImplemented.
    None,
}

impl LockMode {
    /// "fcntl", "flock", "local" or "none".
    pub fn parse(s: &str) -> Option<LockMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fcntl" => Some(LockMode::Fcntl),
            "flock" => Some(LockMode::Flock),
            "local" => Some(LockMode::Local),
            "none" => Some(LockMode::None),
            _ => None,
        }
    }
}

impl Default for PosixOptions {
    fn default() -> Self {
        PosixOptions {
            durability: Durability::default(),
            etag_mode: EtagMode::default(),
            io: IoMode::default(),
            stale_temp_age: Duration::from_secs(24 * 3600),
            posix_identity: false,
            umask: 0o077,
            lock_mode: LockMode::default(),
            lock_timeout: Duration::from_secs(10),
            listing_staleness: Duration::from_secs(1),
        }
    }
}

/// Where object metadata records are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaMode {
    /// One `user.s3hpc` extended attribute per object (sidecar only for oversized records).
    Xattr,
    /// Sidecar files under `<bucket>/.s3hpc/meta/`.
    Sidecar,
}
