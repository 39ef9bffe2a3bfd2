//! The posix backend: S3 semantics over a POSIX file system.
//!
//! A root directory holds one directory per bucket; an object is a plain file at the path its
//! key names, so files written by POSIX tools are objects and objects are ordinary files. Each
//! object's S3 metadata lives in one extended attribute (`user.s3hpc`), or in a sidecar file
//! under the bucket's hidden `.s3hpc/` directory where the file system refuses xattrs. Writes
//! go to a uniquely named temp file in the gateway's staging area (`ROOT/.s3hpc/staging/tmp/`,
//! out of local users' reach, see `state`) and are published with one `rename`, so no reader
//! ever sees a partial object. See `docs/SEMANTICS.md` for the full mapping.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use s3hpc_core::checksum::{self, BodyDigester, Digests, EtagMode};
use s3hpc_core::lock::{Retention, bypass_requested as lock_bypass};
use s3hpc_core::multipart::{check_part_number, completion_checksum, resolve_checksum_type, validate_completion};
use s3hpc_core::{Body, Capabilities, Error, ErrorCode, Result, Store, md5lanes, names};
use s3hpc_core::{
    BucketInfo, CompleteMultipartRequest, Conditions, CopyObjectRequest, CreateMultipartRequest, Directive,
    GetObjectOutput, GetObjectRequest, ListObjectsPage, ListObjectsRequest, ListPartsPage, ListPartsRequest,
    ListUploadsPage, ListUploadsRequest, ObjectInfo, ObjectMeta, ObjectSummary, ObjectTagging, PartCopySource,
    PartInfo, PutObjectOutput, PutObjectRequest, RenameObjectRequest, Tags, UploadInfo, UploadPartRequest,
};
use s3hpc_core::{DeleteObjectOutput, ListVersionsPage, ListVersionsRequest, MAX_KEYS};

mod acl;
mod attrs;
mod beneath;
mod delete;
mod dircache;
mod hashpool;
pub mod ident;
pub mod keys;
mod lock;
mod meta;
mod probe;
pub use probe::RootReport;
mod publish;
mod rcache;
mod read;
mod reaper;
mod records;
mod rename;
mod rename_prefix;
mod rename_tokens;
mod state;
mod sys;
mod tagging;
mod uploads;
pub use uploads::uploads_in_progress;
mod versions;
mod walk;
mod write;

use keys::{INTERNAL, KeyPath};
use meta::{Record, SIDECAR_POINTER};
use write::*;

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

/// Options of [`PosixStore::open`].
#[derive(Clone, Debug)]
pub struct PosixOptions {
    pub durability: Durability,
    pub etag_mode: EtagMode,
    /// Offload (default, for servers) or Inline (embedded callers).
    pub io: IoMode,
    /// Temp files and claimed upload directories older than this are removed by
    /// [`PosixStore::cleanup_stale`] (run at open). Only age decides, so a live writer of
    /// another process is never disturbed unless it stalls for this long.
    pub stale_temp_age: Duration,
    /// Act as the request's POSIX identity (`s3hpc_core::identity::current`): each call's
    /// file-system work runs with that user's fsuid, fsgid and groups, so the kernel enforces
    /// permissions (needs CAP_SETUID and CAP_SETGID; see [`ident`]). Off: act as the process.
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

/// Largest content of a directory object (`key/`); it is kept inside the metadata record.
pub const MAX_DIR_OBJECT_SIZE: usize = 1024;
/// Streamed bodies are written in batches of about this size (small stream chunks are
/// coalesced; chunks at least this large pass through unchanged).
const WRITE_BATCH: usize = 128 << 10;
/// Batches queued between an async body and its blocking writer (Offload mode). With the
/// batch being filled and the one being written, a streamed PUT buffers at most about
/// `(WRITE_QUEUE + 2) * WRITE_BATCH` (384 KiB), plus one chunk larger than a batch if the
/// producer sends such.
const WRITE_QUEUE: usize = 1;
/// Bodies (and streams, once announced or grown this large) whose digests are costly (MD5, an
/// additional checksum) are hashed on a pooled helper thread while the writer writes, if one
/// is free (see `hashpool`); smaller ones hash on the writing thread.
const OVERLAP_MIN: u64 = 512 << 10;
/// Streamed bodies announced at least this large are written by a blocking writer thread even
/// in `IoMode::Inline`, so the producer (e.g. a libs3 data callback copying from the program's
/// buffer) fills the next piece while the previous one is written.
const PIPELINE_MIN: u64 = 4 << 20;
/// Pieces queued for the helper hasher.
const HELPER_QUEUE: usize = 2;
/// In-memory bodies are hashed and written in pieces of this size: a piece is still in the
/// CPU cache when it is written, and a helper hasher (costly digests) works beside the writes.
const HASH_PIECE: usize = 256 << 10;
/// Bodies announced at least this large (and MD5 wanted) have their MD5 computed by the shared
/// multi-buffer service (`s3hpc_core::md5lanes`), which hashes concurrent bodies together.
const LANES_MIN: u64 = 128 << 10;
const LOCK_STRIPES: usize = 64;
/// A PUT of at least this size that replaces an object leaves the freeing of the old file to a
/// background thread (see `reaper`).
const DEFER_FREE_MIN: u64 = 256 << 10;

/// The posix backend. Cheap to clone (shared state).
#[derive(Clone)]
pub struct PosixStore {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    /// The root directory, open: object reads resolve beneath it (`openat2`).
    root_fd: File,
    /// Calls by path, each resolved beneath the root (see `beneath`).
    fs: beneath::Beneath,
    opts: PosixOptions,
    mode: MetaMode,
    /// `host.pid.`: the start of this process's temp names (unique across processes and hosts
    /// sharing a root; a random part follows).
    temp_prefix: String,
    cache: dircache::DirCache,
    /// Records read from xattrs, by (device, inode), see `rcache`.
    rcache: rcache::RecordCache,
    /// Device of the root, and whether it is a local file system with fine timestamps.
    root_dev: u64,
    root_local: bool,
    /// The root is local and its file system gives a changed file a new ctime even within one
    /// clock tick once the old ctime was read (Linux multigrain timestamps, 6.13+; probed at
    /// open): a record read after a `stat` is current as long as that stat's ctime is.
    ctime_exact: bool,
    locks: Vec<Mutex<()>>,
    /// Versioning state per bucket, read at most once a second (see `versions`).
    vstate: versions::StateCache,
    /// The gateway's own state, out of users' reach (see `state`).
    state: state::State,
}

// ---------- small helpers ----------

/// `a.join(b)` in one allocation (`Path::join` copies `a`, then grows the copy for `b`).
fn join(a: &Path, b: &Path) -> PathBuf {
    let mut p = PathBuf::with_capacity(a.as_os_str().len() + 1 + b.as_os_str().len());
    p.push(a);
    p.push(b);
    p
}

fn mtime_ns(md: &fs::Metadata) -> i64 {
    md.mtime().saturating_mul(1_000_000_000).saturating_add(md.mtime_nsec())
}

/// Does every change of `f` get a new ctime once the previous one was read, even within one
/// clock tick (multigrain timestamps)? 32 stat / change / stat rounds, each much shorter than
/// a tick: with coarse ctimes some round sees the same ctime twice.
fn ctime_moves_after_query(f: &File) -> bool {
    (0..32u8).all(|i| {
        let before = f.metadata().map(|m| ctime_ns(&m));
        let changed = sys::fset_xattr(f, &[b'p', i]);
        let after = f.metadata().map(|m| ctime_ns(&m));
        matches!((before, changed, after), (Ok(b), Ok(()), Ok(a)) if a > b)
    })
}

fn ctime_ns(md: &fs::Metadata) -> i64 {
    md.ctime().saturating_mul(1_000_000_000).saturating_add(md.ctime_nsec())
}

fn to_time(ns: i64) -> SystemTime {
    if ns >= 0 { UNIX_EPOCH + Duration::from_nanos(ns as u64) } else { UNIX_EPOCH }
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

fn rand_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// ETag of a file that has no (valid) s3hpc record: stable while inode, size and mtime stay,
/// and with a '-' so no client mistakes it for an MD5.
fn derived_etag(md: &fs::Metadata) -> String {
    derived_etag_of(md.ino(), md.len(), mtime_ns(md))
}

fn derived_etag_of(ino: u64, len: u64, mtime_ns: i64) -> String {
    let mut b = [0u8; 24];
    b[..8].copy_from_slice(&ino.to_le_bytes());
    b[8..16].copy_from_slice(&len.to_le_bytes());
    b[16..].copy_from_slice(&mtime_ns.to_le_bytes());
    format!("{:032x}-1", twox_hash::XxHash3_128::oneshot(&b))
}

/// Info and tags of the file object `key` of `size` bytes from its valid record (moved, not
/// copied).
fn file_info(key: &str, size: u64, r: Record) -> (ObjectInfo, Tags) {
    let info = ObjectInfo {
        key: key.to_string(),
        size,
        etag: r.etag,
        last_modified: to_time(r.mtime_ns),
        meta: r.meta,
        checksum: r.checksum,
        part_sizes: r.part_sizes,
        part_checksums: r.part_checksums,
        tag_count: r.tags.len(),
        version_id: r.version_id,
        lock: r.lock,
    };
    (info, r.tags)
}

/// The record a PUT stores: the request's metadata and tags, the body's digests.
fn put_record(req: &PutObjectRequest, d: &Digests) -> Record {
    Record {
        etag: d.etag.clone(),
        checksum: d.checksum.clone(),
        meta: req.meta.clone(),
        tags: req.tags.clone(),
        lock: req.lock,
        ..Default::default()
    }
}

fn conflict(key: &str) -> Error {
    Error::new(
        ErrorCode::InvalidRequest,
        format!(
            "Object key {key:?} conflicts with an existing object: on a POSIX file system a name cannot be both an \
             object and a directory of other keys (e.g. 'a' and 'a/b')"
        ),
    )
    .with_resource(key.to_string())
}

/// A store call with `posix_identity` and no identity in scope.
fn no_identity() -> Error {
    Error::new(
        ErrorCode::AccessDenied,
        "Access Denied (no POSIX identity in scope for this call under --identity posix: refused rather than \
         acting as the gateway)",
    )
}

fn valid_upload_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn part_name(n: u32) -> String {
    format!("p{n:05}")
}

/// A temp file that is removed unless it was published.
struct Temp {
    /// The directory holding it (opened beneath the root) and its name there: it is renamed
    /// and removed relative to that directory, never by path.
    dir: Arc<File>,
    name: String,
    file: File,
    armed: bool,
}

impl Drop for Temp {
    fn drop(&mut self) {
        if self.armed {
            let _ = sys::unlink_at(&self.dir, &self.name);
        }
    }
}

/// Object content as it was opened for reading.
enum Content {
    File(File),
    Inline(Vec<u8>),
}

/// An opened object: info, tags, content, and whether it had a valid s3hpc record.
struct Opened {
    info: ObjectInfo,
    tags: Tags,
    content: Content,
    has_record: bool,
}

enum Target<'a> {
    File(&'a File),
    Path(&'a Path),
}

impl Inner {
    fn bucket_dir(&self, bucket: &str) -> Result<PathBuf> {
        names::check_bucket_name_for_access(bucket)?;
        Ok(join(&self.root, bucket.as_ref()))
    }

    fn bucket_exists(&self, bdir: &Path) -> bool {
        self.fs.metadata(bdir).is_ok_and(|m| m.is_dir())
    }

    fn require_bucket(&self, bdir: &Path, bucket: &str) -> Result<()> {
        if self.bucket_exists(bdir) { Ok(()) } else { Err(Error::no_such_bucket(bucket)) }
    }

    /// The error for a path that does not exist: the bucket or the key is missing.
    fn missing(&self, bdir: &Path, bucket: &str, key: &str) -> Error {
        if self.bucket_exists(bdir) { Error::no_such_key(bucket, key) } else { Error::no_such_bucket(bucket) }
    }

    fn lock(&self, p: &Path) -> MutexGuard<'_, ()> {
        let h = twox_hash::XxHash3_64::oneshot(p.as_os_str().as_encoded_bytes()) as usize % LOCK_STRIPES;
        self.locks[h].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn temp_name(&self) -> String {
        let mut name = String::with_capacity(self.temp_prefix.len() + 16);
        name.push_str(&self.temp_prefix);
        checksum::push_hex(&mut name, &rand::random::<u64>().to_be_bytes());
        name
    }

    fn sync_file(&self, f: &File) -> io::Result<()> {
        match self.opts.durability {
            Durability::Strict => f.sync_all(),
            Durability::Relaxed => f.sync_data(),
            Durability::None => Ok(()),
        }
    }

    fn sync_dir(&self, dir: &Path) {
        if self.opts.durability == Durability::Strict
            && let Ok(d) = self.fs.open(dir)
        {
            let _ = d.sync_all();
        }
    }
}
impl PosixStore {
    /// Open (creating it if needed) a store rooted at `root`. Probes whether the file system
    /// takes `user.*` extended attributes (else sidecar files are used) and removes stale
    /// temp files older than `opts.stale_temp_age`.
    pub fn open(root: impl AsRef<Path>, opts: PosixOptions) -> Result<PosixStore> {
        Self::open_inner(root.as_ref(), opts, None)
    }

    /// Like [`open`](Self::open), but always keeps metadata in sidecar files (as on file
    /// systems without xattrs). For tests and for file systems whose xattrs are slow.
    pub fn open_with_sidecars(root: impl AsRef<Path>, opts: PosixOptions) -> Result<PosixStore> {
        Self::open_inner(root.as_ref(), opts, Some(MetaMode::Sidecar))
    }

    fn open_inner(root: &Path, opts: PosixOptions, mode: Option<MetaMode>) -> Result<PosixStore> {
        if opts.posix_identity {
            ident::init();
            // New files and directories get the mode bits of a login with this umask (a
            // directory's default ACL, where set, decides instead, as for the user's own tools).
            // SAFETY: plain system call.
            unsafe { libc::umask(opts.umask as libc::mode_t) };
        }
        fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let host = sys::hostname();
        let pid = std::process::id();
        let mut mgtime = false;
        let mode = match mode {
            Some(m) => m,
            None => {
                let probe = root.join(format!(".s3hpc-probe.{host}.{pid}.{}", rand_hex(8)));
                let f = File::create(&probe)?;
                let r = sys::fset_xattr(&f, b"probe");
                let exact = r.is_ok() && ctime_moves_after_query(&f);
                drop(f);
                let _ = fs::remove_file(&probe);
                match r {
                    Ok(()) => {
                        mgtime = exact;
                        MetaMode::Xattr
                    }
                    Err(e) if sys::is_unsupported(&e) => MetaMode::Sidecar,
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let root_fd = File::open(&root)?;
        let root_dev = root_fd.metadata()?.dev();
        let root_local = sys::local_fine_timestamps(&root);
        let state = state::State::open(&root, &root_fd, opts.posix_identity)?;
        let mut fs = beneath::Beneath::new(root.clone(), &root_fd)?;
        fs.add_area(state.moat.clone(), &state.moat_fd)?;
        fs.add_area(state.staging.clone(), &state.staging_fd)?;
        let inner = Inner {
            fs,
            state,
            rcache: rcache::RecordCache::default(),
            root_dev,
            root_local,
            ctime_exact: root_local && mgtime,
            root_fd,
            root,
            opts,
            mode,
            temp_prefix: format!("{host}.{pid}."),
            cache: dircache::DirCache::new(root_local.then_some(root_dev)),
            locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            vstate: Default::default(),
        };
        if !root_local {
            inner.cache.set_window(inner.opts.listing_staleness);
        }
        inner.migrate_old_layout();
        inner.cleanup_stale();
        Ok(PosixStore { inner: Arc::new(inner) })
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Does the kernel resolve every path of this store beneath its root with `openat2`? (Else
    /// calls fall back to following paths; `--identity posix` refuses to run then.)
    pub fn resolves_beneath(&self) -> bool {
        sys::beneath_supported(&self.inner.root_fd)
    }

    pub fn meta_mode(&self) -> MetaMode {
        self.inner.mode
    }

    pub fn options(&self) -> &PosixOptions {
        &self.inner.opts
    }

    /// Remove temp files and claimed upload directories older than `stale_temp_age`; returns
    /// how many were removed.
    pub fn cleanup_stale(&self) -> usize {
        self.inner.cleanup_stale()
    }

    /// Number of directory listings currently cached (for tests and diagnostics).
    pub fn cached_dirs(&self) -> usize {
        self.inner.cache.len()
    }

    /// (directory reads served from the listing cache, directories read): for tests and
    /// benchmarks.
    #[doc(hidden)]
    pub fn listing_cache_stats(&self) -> (u64, u64) {
        self.inner.cache.stats()
    }

    /// Keep cached listings of local directories current by inotify (the default) or, when
    /// off, by directory stamps only, as on network file systems (for tests of that rule).
    #[doc(hidden)]
    pub fn set_listing_watch(&self, on: bool) {
        self.inner.cache.set_watch(on);
    }

    /// The listing window of stamped directories (`--listing-staleness`, set at open on roots
    /// shared by nodes): for tests and benchmarks of that rule on a local root.
    #[doc(hidden)]
    pub fn set_listing_window(&self, window: Duration) {
        self.inner.cache.set_window(window);
    }

    /// Run blocking file-system work: on the blocking pool (Offload) or right here (Inline).
    /// PutObject of a directory key (`a/b/`): the body (small, bounded) goes into the record.
    #[allow(clippy::too_many_arguments)]
    async fn put_dir(
        &self,
        bdir: PathBuf,
        bucket: &str,
        key: &str,
        kp: KeyPath,
        req: PutObjectRequest,
        body: Body,
        mut d: BodyDigester,
    ) -> Result<PutObjectOutput> {
        let data = body.collect_limited(MAX_DIR_OBJECT_SIZE).await.map_err(|e| {
            if e.code == ErrorCode::MaxMessageLengthExceeded {
                Error::new(
                    ErrorCode::EntityTooLarge,
                    format!("directory objects (keys ending in '/') hold at most {MAX_DIR_OBJECT_SIZE} bytes here"),
                )
            } else {
                e
            }
        })?;
        d.update(&data);
        let dg = d.finish();
        dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
        let (b, k, r, c) = (bucket.to_string(), key.to_string(), put_record(&req, &dg), req.conditions.clone());
        self.run(move |s| s.publish_dir(&bdir, &b, &k, &kp, data.to_vec(), r, &c)).await
    }

    /// Operations that replace an object in place are not offered on versioned buckets.
    fn refuse_versioned(&self, bucket: &str, what: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        match self.inner.versioning(&bdir, bucket)? {
            Some(_) => Err(s3hpc_core::versions::unversioned_only(what)),
            None => Ok(()),
        }
    }

    /// The identity this call acts as (`None`: the process; always `None` unless
    /// `posix_identity` is on).
    fn identity(&self) -> Option<s3hpc_core::identity::Identity> {
        if self.inner.opts.posix_identity { s3hpc_core::identity::current() } else { None }
    }

    /// Act as the call's identity for file-system work done outside `run`, until the guard
    /// drops.
    fn assume_here(&self) -> Result<Option<ident::Guard>> {
        if !self.inner.opts.posix_identity {
            return Ok(None);
        }
        let Some(id) = self.identity() else { return Err(no_identity()) };
        Ok(Some(ident::enter(Some(&id))?))
    }

    /// File-system work runs on the calling thread: `IoMode::Inline`, or a thread that a server
    /// marked as one that may block (`s3hpc_core::io::blocking_here`).
    fn inline_io(&self) -> bool {
        self.inner.opts.io == IoMode::Inline || s3hpc_core::io::may_block()
    }

    async fn run<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(&self, f: F) -> Result<T> {
        if self.inner.opts.posix_identity && s3hpc_core::identity::current().is_none() {
            // Never root by default: every request of a front end carries its account's identity
            // (anonymous ones nobody's), and the gateway's own work says so (`run_gateway`).
            return Err(no_identity());
        }
        self.run_any(f).await
    }

    /// Run the gateway's own work on its state (bucket configuration, tags, the bucket list):
    /// as the request's identity when there is one (the state itself is read and written as the
    /// gateway, see `state`), else explicitly as the gateway (the lifecycle runner, CORS).
    async fn run_gateway<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(&self, f: F) -> Result<T> {
        self.run_any(f).await
    }

    async fn run_any<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(&self, f: F) -> Result<T> {
        let id = self.identity();
        // On the caller's thread the identity is switched back when the call ends; on the
        // blocking pool it stays until a call with another identity comes (see `ident`).
        let here = |s: &Inner, f: F| {
            let _as = if s.opts.posix_identity { Some(ident::enter(id.as_ref())?) } else { None };
            f(s)
        };
        if self.inline_io() {
            return here(&self.inner, f);
        }
        match self.inner.opts.io {
            IoMode::InPlace
                if tokio::runtime::Handle::try_current()
                    .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) =>
            {
                return tokio::task::block_in_place(|| here(&self.inner, f));
            }
            _ => {}
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            if inner.opts.posix_identity {
                ident::assume(id.as_ref())?;
            }
            f(&inner)
        })
        .await
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
    }

    /// Receive a body into a new temp file of bucket `bdir`, hashing it on the way.
    /// `hint`: the announced body size, if any (it only decides where hashing runs).
    async fn receive(
        &self,
        bdir: PathBuf,
        bucket: String,
        body: Body,
        d: BodyDigester,
        hint: Option<u64>,
    ) -> Result<(Temp, Digests)> {
        match body {
            Body::Empty => self.run(move |s| Ok((s.create_temp(&bdir, &bucket)?, d.finish()))).await,
            Body::Bytes(b) => self.run(move |s| s.write_new(&bdir, &bucket, d, &b)).await,
            Body::File { file, offset, len } => {
                self.run(move |s| {
                    let mut d = d;
                    let mut t = s.create_temp(&bdir, &bucket)?;
                    copy_hashing(&file, offset, len, &mut t, &mut d)?;
                    Ok((t, d.finish()))
                })
                .await
            }
            Body::Stream(mut stream) if self.inline_io() && hint.is_none_or(|n| n < PIPELINE_MIN) => {
                // Write each batch on this thread as it arrives: no channel, no writer thread.
                let t = {
                    let _as = self.assume_here()?;
                    self.inner.create_temp(&bdir, &bucket)?
                };
                let mut t = t;
                let mut batcher = Batcher::new(d.wants_md5());
                let mut h = Hashing::new(d, hint);
                while let Some(item) = stream.next().await {
                    if let Some(b) = batcher.push(item?) {
                        hash_and_write(&mut h, &mut t, &b)?;
                    }
                }
                if let Some(b) = batcher.rest() {
                    hash_and_write(&mut h, &mut t, &b)?;
                }
                let dg = h.finish(&t)?;
                Ok((t, dg))
            }
            Body::Stream(mut stream) => {
                // One blocking writer per body, fed batches through a short channel.
                let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(WRITE_QUEUE);
                let mut batcher = Batcher::new(d.wants_md5());
                let inner = self.inner.clone();
                let id = self.identity();
                if inner.opts.posix_identity && id.is_none() {
                    return Err(no_identity());
                }
                let writer = tokio::task::spawn_blocking(move || -> Result<(Temp, Digests)> {
                    if inner.opts.posix_identity {
                        ident::assume(id.as_ref())?;
                    }
                    let mut t = inner.create_temp(&bdir, &bucket)?;
                    let mut h = Hashing::new(d, hint);
                    while let Some(b) = rx.blocking_recv() {
                        hash_and_write(&mut h, &mut t, &b)?;
                    }
                    let d = h.finish(&t)?;
                    Ok((t, d))
                });
                let mut failed: Option<io::Error> = None;
                while let Some(item) = stream.next().await {
                    match item {
                        Ok(c) => {
                            if let Some(b) = batcher.push(c)
                                && tx.send(b).await.is_err()
                            {
                                break; // the writer failed; its error is reported below
                            }
                        }
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                if let Some(e) = failed {
                    drop(tx);
                    let _ = writer.await; // the temp file is removed when dropped
                    return Err(e.into());
                }
                if let Some(b) = batcher.rest() {
                    let _ = tx.send(b).await;
                }
                drop(tx);
                writer.await.map_err(|e| Error::internal(format!("writer failed: {e}")))?
            }
        }
    }
}

#[async_trait]
impl Store for PosixStore {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        names::validate_bucket_name(bucket)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            match s.fs.create_dir(&bdir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(Error::code(ErrorCode::BucketAlreadyOwnedByYou).with_bucket(&b));
                }
                Err(e) => return Err(e.into()),
            }
            // The bucket's state (a stale one, left by a directory removed behind the gateway's
            // back, is replaced): its creation date, then configuration as it comes.
            let st = s.bucket_state_dir(&bdir, &b, true)?.expect("made");
            s.as_gateway(|| s.write_state_file(&st.join("created"), now_ns().to_string().as_bytes()))??;
            s.sync_dir(&s.root);
            Ok(())
        })
        .await
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            let req = ListObjectsRequest { max_keys: 1, ..Default::default() };
            let page = walk::walk(
                &s.cache,
                &s.fs,
                &bdir,
                &req,
                |at, k| {
                    Some(ObjectSummary { key: k.into(), size: 0, etag: String::new(), last_modified: UNIX_EPOCH })
                        .filter(|_| match at.fd {
                            Some(d) => sys::exists_at(d, at.name),
                            None => s.fs.symlink_metadata(&at.path()).is_ok(),
                        })
                },
                |p, k| {
                    s.is_dir_object(&bdir, p).then(|| ObjectSummary {
                        key: k.into(),
                        size: 0,
                        etag: String::new(),
                        last_modified: UNIX_EPOCH,
                    })
                },
            )?;
            if !page.objects.is_empty() || page.is_truncated || s.has_versions(&bdir)? {
                return Err(Error::code(ErrorCode::BucketNotEmpty).with_bucket(&b));
            }
            // Only empty directories (no objects) and the internal dir remain.
            let _ = s.fs.remove_dir_all(&bdir.join(INTERNAL));
            s.remove_bucket_state(&b);
            fn rm_empty(fs: &beneath::Beneath, d: &Path) {
                if let Ok(rd) = fs.read_dir(d) {
                    for e in rd.into_iter().filter(|e| e.is_dir) {
                        let p = d.join(&e.name);
                        rm_empty(fs, &p);
                        let _ = fs.remove_dir(&p);
                    }
                }
            }
            rm_empty(&s.fs, &bdir);
            match s.fs.remove_dir(&bdir) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) || e.raw_os_error() == Some(libc::EEXIST) => {
                    return Err(Error::new(
                        ErrorCode::BucketNotEmpty,
                        "The bucket holds files that are not objects (or an object arrived meanwhile)",
                    )
                    .with_bucket(&b));
                }
                Err(e) if is_missing(&e) => return Err(Error::no_such_bucket(&b)),
                Err(e) => return Err(e.into()),
            }
            s.sync_dir(&s.root);
            Ok(())
        })
        .await
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| s.require_bucket(&bdir, &b)).await
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.run_gateway(|s| {
            let mut out = Vec::new();
            for e in s.fs.read_dir(&s.root)? {
                let Some(name) = e.name.to_str().map(str::to_string) else { continue };
                if names::check_bucket_name_for_access(&name).is_err() {
                    continue;
                }
                // Beneath the root: a symlink leading out is not a bucket.
                let path = s.root.join(&name);
                let Ok(md) = s.fs.metadata(&path) else { continue };
                if !md.is_dir() {
                    continue;
                }
                let created = s
                    .read_bucket_state(&path, &name, "created")
                    .ok()
                    .flatten()
                    .and_then(|v| String::from_utf8(v).ok())
                    .and_then(|s| s.trim().parse::<i64>().ok())
                    .map(to_time)
                    .unwrap_or_else(|| to_time(mtime_ns(&md)));
                out.push(BucketInfo { name, created });
            }
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
        .await
    }

    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        names::validate_config_name(name)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, name) = (bucket.to_string(), name.to_string());
        self.run_gateway(move |s| s.read_bucket_state(&bdir, &b, &format!("config/{name}"))).await
    }

    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        names::validate_config_name(name)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, name) = (bucket.to_string(), name.to_string());
        self.run_gateway(move |s| {
            s.require_bucket(&bdir, &b)?;
            if name == s3hpc_core::versions::VERSIONING_CONFIG || name == s3hpc_core::lock::OBJECT_LOCK_CONFIG {
                if s.mode == MetaMode::Sidecar {
                    return Err(Error::not_implemented(
                        "versioning needs extended attributes (user.* xattrs), which this file system does not offer",
                    ));
                }
                s.vstate.forget(&b);
                let st = s.bucket_state(&bdir, &b)?;
                s3hpc_core::lock::check_config_change(&name, doc.as_deref(), st.versioning, st.lock.as_ref())?;
            }
            let _forget = lock::ForgetState(&s.vstate, &b);
            s.write_bucket_state(&bdir, &b, &format!("config/{name}"), doc.as_deref())
        })
        .await
    }

    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        use std::os::unix::fs::MetadataExt;
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| match s.fs.metadata(&bdir) {
            Ok(md) if md.is_dir() => Ok(Some(md.uid())),
            Ok(_) => Err(Error::no_such_bucket(&b)),
            Err(e) if is_missing(&e) => Err(Error::no_such_bucket(&b)),
            Err(e) => Err(e.into()),
        })
        .await
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| match s.read_bucket_state(&bdir, &b, "tags")? {
            Some(v) => Record::decode(&v).map(|r| r.tags).ok_or_else(|| Error::internal("corrupt bucket tag file")),
            None => Err(Error::code(ErrorCode::NoSuchTagSet).with_bucket(&b)),
        })
        .await
    }

    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        names::validate_tags(&tags, names::MAX_BUCKET_TAGS)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| {
            s.write_bucket_state(&bdir, &b, "tags", Some(&Record { tags, ..Default::default() }.encode()))
        })
        .await
    }

    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run_gateway(move |s| s.write_bucket_state(&bdir, &b, "tags", None)).await
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        let kp = keys::parse_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let d = BodyDigester::new(
            self.inner.opts.etag_mode,
            req.content_md5.is_some(),
            req.checksum.as_ref().map(|c| c.algorithm),
        );
        if req.content_md5.is_none() && req.checksum.as_ref().is_none_or(|c| c.expected.is_none()) {
            // Object lock's integrity rule (a cached state lookup; PUTs with a digest skip it).
            self.inner.check_put_lock(&bdir, bucket, req.lock, false)?;
        }
        // The slower paths run in futures of their own (boxed): kept inline, their states made
        // every PUT's future 2.6 KB, an allocation past the allocator's per-thread cache.
        if kp.dir {
            return Box::pin(self.put_dir(bdir, bucket, key, kp, req, body, d)).await;
        }
        if let Body::Bytes(_) | Body::Empty = &body {
            // In-memory body: write, verify and publish in one blocking call (see `run`).
            if self.inline_io() {
                let _as = self.assume_here()?;
                return self.inner.put_in_memory(&bdir, bucket, key, &kp, &req, &body, d);
            }
            let (b, k) = (bucket.to_string(), key.to_string());
            return Box::pin(self.run(move |s| s.put_in_memory(&bdir, &b, &k, &kp, &req, &body, d))).await;
        }
        Box::pin(async move {
            let (t, dg) = self.receive(bdir.clone(), bucket.to_string(), body, d, req.content_length).await?;
            dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
            let (b, k, r, c) = (bucket.to_string(), key.to_string(), put_record(&req, &dg), req.conditions.clone());
            self.run(move |s| s.publish(&bdir, &b, &k, &kp, t, r, &c)).await
        })
        .await
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.get_object_v(bucket, key, &req);
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.get_object_v(&b, &k, &req)).await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            offloads_io: self.inner.opts.io != IoMode::Inline,
            offloads_in_place: self.inner.opts.io == IoMode::InPlace,
            keeps_body_bytes: false,
        }
    }

    fn get_object_inline(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        self.inline_io().then(|| self.assume_here().and_then(|_as| self.inner.get_object_v(bucket, key, req)))
    }

    fn head_object_inline(&self, bucket: &str, key: &str, req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        self.inline_io().then(|| self.assume_here().and_then(|_as| self.inner.head_object_v(bucket, key, req)))
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.head_object_v(bucket, key, &req);
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.head_object_v(&b, &k, &req)).await
    }

    /// s3hpc's file-system extension: see `attrs`.
    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.fs_op(&b, &k, op)).await
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        if self.inline_io() {
            let _as = self.assume_here()?;
            return self.inner.delete_object_any(bucket, key, lock_bypass());
        }
        let (b, k, by) = (bucket.to_string(), key.to_string(), lock_bypass());
        self.run(move |s| s.delete_object_any(&b, &k, by)).await
    }

    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        let (b, k, v, by) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string), lock_bypass());
        self.run(move |s| s.delete_version(&b, &k, v.as_deref(), by)).await
    }

    async fn get_object_retention(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<Retention>> {
        self.lock_of(bucket, key, v).await.map(|l| l.retention)
    }

    async fn get_object_legal_hold(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<bool>> {
        self.lock_of(bucket, key, v).await.map(|l| l.legal_hold)
    }

    async fn put_object_retention(&self, b: &str, k: &str, v: Option<&str>, r: Option<Retention>) -> Result<()> {
        self.set_lock(b, k, v, Some(r), None).await
    }

    async fn put_object_legal_hold(&self, bucket: &str, key: &str, v: Option<&str>, on: bool) -> Result<()> {
        self.set_lock(bucket, key, v, None, Some(on)).await
    }

    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        // Every current key under the prefix (see SEMANTICS, Versioning: a page reads them all).
        let mut current = Vec::new();
        let mut lreq = ListObjectsRequest { prefix: req.prefix.clone(), max_keys: MAX_KEYS, ..Default::default() };
        loop {
            let page = self.list_objects(bucket, lreq.clone()).await?;
            current.extend(page.objects.into_iter().map(|o| o.key));
            if !page.is_truncated {
                break;
            }
            lreq.start_after = page.next_marker;
        }
        let b = bucket.to_string();
        self.run(move |s| s.list_versions(&b, current, &req)).await
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        let skp = keys::parse_key(src_key)?;
        let dkp = keys::parse_key(dst_key)?;
        req.validate()?;
        let sb = self.inner.bucket_dir(src_bucket)?;
        let db = self.inner.bucket_dir(dst_bucket)?;
        let (sbn, skn, dbn, dkn) =
            (src_bucket.to_string(), src_key.to_string(), dst_bucket.to_string(), dst_key.to_string());
        self.run(move |s| {
            let o = match &req.source_version_id {
                Some(v) => s.open_version(&sbn, &skn, v).map_err(s3hpc_core::versions::copy_source_error)?,
                None => s.open_object(&sb, &sbn, &skn, &skp).map_err(|e| s.mark_deleted(e, &sbn, &skn))?,
            };
            req.source_conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
            if sbn == dbn && skn == dkn && req.changes_nothing() {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
                ));
            }
            s.require_bucket(&db, &dbn)?;
            let meta = req.destination_meta(&o.info.meta);
            let tags = match req.tagging {
                Directive::Copy => o.tags.clone(),
                Directive::Replace(t) => t,
            };
            // The ETag (and checksum) carry over for single-part objects with a record, so the
            // bytes can move in the kernel (copy_file_range / reflink); otherwise hash them.
            // Without an algorithm the new object gets the default checksum when the source's
            // does not carry over (none, or a multipart object's).
            let carried = o.info.checksum.is_some() && o.info.part_sizes.is_empty() && o.has_record;
            let alg = req.checksum_algorithm.or(req.default_checksum.filter(|_| !carried));
            let rehash = alg.is_some() || !o.info.part_sizes.is_empty() || !o.has_record;
            let mut d = BodyDigester::new(s.opts.etag_mode, false, alg);
            let size = o.info.size;
            if dkp.dir {
                let data = match o.content {
                    Content::Inline(v) => v,
                    Content::File(f) => {
                        if size > MAX_DIR_OBJECT_SIZE as u64 {
                            return Err(Error::new(
                                ErrorCode::EntityTooLarge,
                                format!("directory objects hold at most {MAX_DIR_OBJECT_SIZE} bytes here"),
                            ));
                        }
                        let mut v = vec![0u8; size as usize];
                        f.read_exact_at(&mut v, 0)?;
                        v
                    }
                };
                d.update(&data);
                let dg = d.finish();
                let (etag, checksum) = if rehash { (dg.etag, dg.checksum) } else { (o.info.etag, o.info.checksum) };
                let rec = Record { etag, checksum, meta, tags, lock: req.lock, ..Default::default() };
                return s.publish_dir(&db, &dbn, &dkn, &dkp, data, rec, &req.conditions);
            }
            let mut t = s.create_temp(&db, &dbn)?;
            let (etag, checksum) = match o.content {
                Content::Inline(v) => {
                    write_hashing(&mut t, &mut d, &v)?;
                    let dg = d.finish();
                    if rehash { (dg.etag, dg.checksum) } else { (o.info.etag, o.info.checksum) }
                }
                Content::File(f) if rehash => {
                    copy_hashing(&f, 0, size, &mut t, &mut d)?;
                    let dg = d.finish();
                    (dg.etag, dg.checksum)
                }
                Content::File(f) => {
                    sys::copy_range(&f, 0, &t.file, 0, size)?;
                    (o.info.etag, o.info.checksum)
                }
            };
            let rec = Record { etag, checksum, meta, tags, lock: req.lock, ..Default::default() };
            s.publish(&db, &dbn, &dkn, &dkp, t, rec, &req.conditions)
        })
        .await
    }

    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        self.refuse_versioned(bucket, "RenameObject")?;
        self.rename(bucket, src_key, dst_key, req).await
    }

    async fn appends(&self, _bucket: &str) -> bool {
        true
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        self.refuse_versioned(bucket, "PutObject with a write offset")?;
        Box::pin(self.append(bucket, key, offset, req, body)).await
    }

    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.object_acl(&bdir, &b, &k, &kp)).await
    }

    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| s.set_object_acl(&bdir, &b, &k, &kp, doc.as_deref())).await
    }

    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        let (b, k, v) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string));
        self.run(move |s| s.object_tags(&b, &k, v.as_deref())).await
    }

    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        let kp = keys::parse_key(key)?;
        names::validate_tags(&tags, names::MAX_OBJECT_TAGS)?;
        let (b, k, v) = (bucket.to_string(), key.to_string(), version_id.map(str::to_string));
        self.run(move |s| s.set_object_tags(&b, &k, &kp, v.as_deref(), tags)).await
    }

    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.put_object_tagging(bucket, key, version_id, Vec::new()).await
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            let file_summary = |at: walk::At, key: &str| {
                let Some(fd) = at.fd else {
                    // The directory could not be opened: by path.
                    let p = at.path();
                    let md = s.fs.metadata(&p).ok().filter(|m| m.is_file())?;
                    let rec = s.valid_record(Target::Path(&p), &bdir, key, &md).ok().flatten();
                    return Some(ObjectSummary {
                        key: key.to_string(),
                        size: md.len(),
                        etag: rec.map(|r| r.etag).unwrap_or_else(|| derived_etag(&md)),
                        last_modified: to_time(mtime_ns(&md)),
                    });
                };
                // One fstatat and (unless cached) one getxattrat, relative to the open directory.
                let st = sys::stat_at(fd, at.name).ok()?;
                if st.is_symlink {
                    // A symlink to a file is listed only if it resolves beneath the root (as a
                    // GET would serve it), with its target's size and time; never followed out.
                    let p = at.path();
                    let md = s.fs.metadata(&p).ok().filter(|m| m.is_file())?;
                    let rec = s.valid_record(Target::Path(&p), &bdir, key, &md).ok().flatten();
                    return Some(ObjectSummary {
                        key: key.to_string(),
                        size: md.len(),
                        etag: rec.map(|r| r.etag).unwrap_or_else(|| derived_etag(&md)),
                        last_modified: to_time(mtime_ns(&md)),
                    });
                }
                if !st.is_file {
                    return None;
                }
                let stamp = rcache::Stamp { size: st.size, mtime_ns: st.mtime_ns, ctime_ns: st.ctime_ns };
                // A cached record: decode only its ETag.
                let cached = match s.mode {
                    MetaMode::Xattr => s.rcache.get_etag(st.dev, st.ino, stamp),
                    MetaMode::Sidecar => None,
                };
                let etag = cached.or_else(|| {
                    let rec = s.file_record(
                        st.dev,
                        st.ino,
                        stamp,
                        || sys::get_xattr_at(fd, at.name, || at.path()),
                        || s.sidecar_path(&bdir, key, st.ino),
                    );
                    rec.ok().flatten().map(|r| r.etag)
                });
                Some(ObjectSummary {
                    key: key.to_string(),
                    size: st.size,
                    etag: etag.unwrap_or_else(|| derived_etag_of(st.ino, st.size, st.mtime_ns)),
                    last_modified: to_time(st.mtime_ns),
                })
            };
            let dir_object = |p: &Path, key: &str| {
                let md = s.fs.metadata(p).ok()?;
                let rec = s.valid_record(Target::Path(p), &bdir, key, &md).ok().flatten()?;
                Some(ObjectSummary {
                    key: key.to_string(),
                    size: rec.inline.as_ref().map_or(0, |v| v.len() as u64),
                    etag: rec.etag,
                    last_modified: to_time(rec.mtime_ns),
                })
            };
            match walk::walk(&s.cache, &s.fs, &bdir, &req, file_summary, dir_object) {
                Ok(p) => Ok(p),
                Err(e) if is_missing(&e) => Err(Error::no_such_bucket(&b)),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        keys::parse_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let checksum_type = resolve_checksum_type(req.checksum_algorithm, req.checksum_type)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            s.lock_for_publish(s.bucket_state(&bdir, &b)?.lock.as_ref(), req.lock)?;
            let id = rand_hex(16);
            let dir = s.uploads_dir(&bdir).join(&id);
            if s.acting_uid().is_some() {
                // The parts go to the shared uploads area, so ask the kernel now whether this
                // user may write where the object will be published (else AccessDenied at once,
                // not at CompleteMultipartUpload).
                s.check_writable(&bdir, &b, &k)?;
            }
            s.ensure_uploads_dir(&b)?;
            s.fs.create_dir(&dir)?;
            if s.opts.posix_identity {
                // The parts are the user's data: theirs alone until published.
                s.fs.chmod(&dir, 0o700)?;
            }
            let rec = Record {
                key: k,
                mtime_ns: now_ns(),
                meta: req.meta,
                tags: req.tags,
                algorithm: req.checksum_algorithm,
                checksum_type,
                lock: req.lock,
                ..Default::default()
            };
            let tmp = dir.join("info.tmp");
            let mut f = s.fs.create(&tmp, false)?;
            f.write_all(&rec.encode())?;
            s.sync_file(&f)?;
            s.fs.rename(&tmp, &dir.join("info"))?;
            s.sync_dir(&dir);
            Ok(id)
        })
        .await
    }

    async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo> {
        check_part_number(part_number)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        let (updir, urec) = {
            let (bdir, b, k, id) = (bdir.clone(), b.clone(), k.clone(), id.clone());
            self.run(move |s| s.upload(&bdir, &b, &k, &id)).await?
        };
        s3hpc_core::multipart::check_part_checksum(urec.algorithm, req.checksum.as_ref())?;
        let alg = req.checksum.as_ref().map(|c| c.algorithm).or(urec.algorithm).or(req.default_checksum);
        let d = BodyDigester::new(self.inner.opts.etag_mode, req.content_md5.is_some(), alg);
        let (t, dg) = self.receive(bdir, b, body, d, req.content_length).await?;
        dg.verify(req.content_length, req.content_md5, req.checksum.as_ref())?;
        self.run(move |s| s.publish_part(&updir, &id, part_number, t, dg)).await
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        check_part_number(part_number)?;
        let skp = keys::parse_key(&src.key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let sb = self.inner.bucket_dir(&src.bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let o = match &src.version_id {
                Some(v) => s.open_version(&src.bucket, &src.key, v).map_err(s3hpc_core::versions::copy_source_error)?,
                None => s
                    .open_object(&sb, &src.bucket, &src.key, &skp)
                    .map_err(|e| s.mark_deleted(e, &src.bucket, &src.key))?,
            };
            src.conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
            let (off, len) = s3hpc_core::multipart::copy_source_range(src.range, o.info.size)?;
            let mut d = BodyDigester::new(s.opts.etag_mode, false, urec.algorithm);
            let mut t = s.create_temp(&bdir, &b)?;
            match &o.content {
                Content::File(f) => copy_hashing(f, off, len, &mut t, &mut d)?,
                Content::Inline(v) => write_hashing(&mut t, &mut d, &v[off as usize..(off + len) as usize])?,
            }
            s.publish_part(&updir, &id, part_number, t, d.finish())
        })
        .await
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let mut nums: Vec<u32> =
                s.fs.read_dir(&updir)?
                    .into_iter()
                    .filter_map(|e| {
                        let n = e.name.to_str()?.strip_prefix('p')?;
                        (n.len() == 5).then(|| n.parse::<u32>().ok()).flatten()
                    })
                    .collect();
            nums.sort_unstable();
            let max = if req.max_parts == 0 { 1000 } else { req.max_parts.min(1000) };
            let after = req.part_number_marker.unwrap_or(0);
            let mut parts = Vec::new();
            for n in nums.into_iter().filter(|n| *n > after) {
                if parts.len() > max {
                    break;
                }
                if let Some(p) = s.part_info(&updir, n)? {
                    parts.push(p);
                }
            }
            let is_truncated = parts.len() > max;
            parts.truncate(max);
            let next = if is_truncated { parts.last().map(|p| p.part_number) } else { None };
            Ok(ListPartsPage {
                parts,
                is_truncated,
                next_part_number_marker: next,
                checksum_algorithm: urec.algorithm,
                checksum_type: urec.checksum_type,
            })
        })
        .await
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let b = bucket.to_string();
        self.run(move |s| {
            s.require_bucket(&bdir, &b)?;
            let mut all: Vec<UploadInfo> = Vec::new();
            let uploads = s.uploads_dir(&bdir);
            if let Ok(rd) = s.fs.read_dir(&uploads) {
                for e in rd {
                    let Some(id) = e.name.to_str().map(str::to_string) else { continue };
                    if !valid_upload_id(&id) {
                        continue;
                    }
                    let Ok(v) = s.fs.read(&uploads.join(&id).join("info")) else { continue };
                    let Some(r) = Record::decode(&v) else { continue };
                    if r.key.starts_with(req.prefix.as_str()) {
                        all.push(UploadInfo {
                            key: r.key,
                            upload_id: id,
                            initiated: to_time(r.mtime_ns),
                            checksum_algorithm: r.algorithm,
                            checksum_type: r.checksum_type,
                        });
                    }
                }
            }
            Ok(s3hpc_core::listing::page_uploads(&req, all))
        })
        .await
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let kp = keys::parse_key(key)?;
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (parts, conditions) = (&req.parts, &req.conditions);
            // Completes of one upload run one at a time (across processes); a later one answers
            // from the first one's record, or takes over the upload of one that was killed.
            let _lock = if valid_upload_id(&id) {
                s.require_bucket(&bdir, &b)?;
                let lock = s.completion_lock(&bdir, &id)?;
                if let Some(done) = s.completed_upload(&bdir, &id)? {
                    let _ = s.fs.remove_dir_all(&s.completing_dir(&bdir, &id));
                    return done.answer(&k, &id, &req);
                }
                s.resume_completion(&bdir, &id)?;
                Some(lock)
            } else {
                None
            };
            let (updir, urec) = s.upload(&bdir, &b, &k, &id)?;
            let read_infos = |dir: &Path| -> Result<HashMap<u32, PartInfo>> {
                let mut m = HashMap::new();
                for p in parts {
                    if let Some(i) = s.part_info(dir, p.part_number)? {
                        m.insert(p.part_number, i);
                    }
                }
                Ok(m)
            };
            // A concurrent complete or abort may claim the staging directory while we read it;
            // then the parts look missing, and the answer is NoSuchUpload, not InvalidPart.
            let gone = || s.fs.symlink_metadata(&updir).is_err();
            let infos = read_infos(&updir).map_err(|e| if gone() { Error::no_such_upload(&id) } else { e })?;
            let chosen = validate_completion(parts, |n| infos.get(&n))
                .map_err(|e| if gone() { Error::no_such_upload(&id) } else { e })?;
            // A checksum the client expects but the parts do not give (BadDigest) fails here,
            // before the upload is claimed; it is computed again from the claimed parts below.
            completion_checksum(urec.algorithm, urec.checksum_type, &chosen, &req)?;
            // Claim the upload: a concurrent abort, upload or listing now finds NoSuchUpload.
            let claimed = s.completing_dir(&bdir, &id);
            match s.fs.rename(&updir, &claimed) {
                Ok(()) => {}
                Err(e) if is_missing(&e) => return Err(Error::no_such_upload(&id)),
                Err(e) => return Err(e.into()),
            }
            let mut chosen_parts = Vec::new();
            let result = (|| -> Result<PutObjectOutput> {
                let infos = read_infos(&claimed)?;
                let chosen = validate_completion(parts, |n| infos.get(&n))?;
                chosen_parts.clone_from(&chosen);
                let etag = checksum::multipart_etag(chosen.iter().map(|p| p.etag.as_str()));
                let cks = completion_checksum(urec.algorithm, urec.checksum_type, &chosen, &req)?;
                let rec = Record {
                    etag,
                    part_checksums: s3hpc_core::multipart::kept_part_checksums(cks.as_ref(), &chosen),
                    checksum: cks,
                    part_sizes: chosen.iter().map(|p| p.size).collect(),
                    meta: urec.meta.clone(),
                    tags: urec.tags.clone(),
                    lock: urec.lock,
                    ..Default::default()
                };
                if kp.dir {
                    let total: u64 = chosen.iter().map(|p| p.size).sum();
                    if total > MAX_DIR_OBJECT_SIZE as u64 {
                        return Err(Error::new(
                            ErrorCode::EntityTooLarge,
                            format!("directory objects hold at most {MAX_DIR_OBJECT_SIZE} bytes here"),
                        ));
                    }
                    let mut data = Vec::new();
                    for p in &chosen {
                        data.extend(s.fs.read(&claimed.join(part_name(p.part_number)))?);
                    }
                    return s.publish_dir(&bdir, &b, &k, &kp, data, rec, conditions);
                }
                let t = s.create_temp(&bdir, &b)?;
                let mut off = 0;
                for p in &chosen {
                    let f = s.fs.open(&claimed.join(part_name(p.part_number)))?;
                    sys::copy_range(&f, 0, &t.file, off, p.size)?;
                    off += p.size;
                }
                s.publish(&bdir, &b, &k, &kp, t, rec, conditions)
            })();
            match &result {
                Ok(out) => {
                    // The object is published; the record answers retries from here on. A
                    // complete killed before the record is written leaves the claimed directory,
                    // and the retry publishes the same parts again (same bytes and ETag).
                    let done = s3hpc_core::multipart::CompletedUpload::new(&k, &chosen_parts, out);
                    if s.record_completed(&bdir, &id, &done).is_err() {
                        return result;
                    }
                    let _ = s.fs.remove_dir_all(&claimed);
                }
                Err(_) => {
                    // Failed completions leave the upload as it was.
                    let _ = s.fs.rename(&claimed, &updir);
                }
            }
            result
        })
        .await
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        let bdir = self.inner.bucket_dir(bucket)?;
        let (b, k, id) = (bucket.to_string(), key.to_string(), upload_id.to_string());
        self.run(move |s| {
            let (updir, _) = s.upload(&bdir, &b, &k, &id)?;
            let claimed = s.uploads_dir(&bdir).join(format!(".claimed-{id}-{}", rand_hex(8)));
            match s.fs.rename(&updir, &claimed) {
                Ok(()) => {}
                Err(e) if is_missing(&e) => return Err(Error::no_such_upload(&id)),
                Err(e) => return Err(e.into()),
            }
            s.fs.remove_dir_all(&claimed)?;
            Ok(())
        })
        .await
    }
}
