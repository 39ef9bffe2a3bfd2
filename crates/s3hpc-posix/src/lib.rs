//! The posix backend: S3 semantics over a POSIX file system.
//!
//! A root directory holds one directory per bucket; an object is a plain file at the path its
//! key names, so files written by POSIX tools are objects and objects are ordinary files. Each
//! object's S3 metadata lives in one extended attribute (`user.s3hpc`), or in a sidecar file
//! under the bucket's hidden `.s3hpc/` directory where the file system refuses xattrs. Writes
//! go to a uniquely named temp file in the gateway's staging area (`ROOT/.s3hpc/staging/tmp/`,
//! out of local users' reach, see `state`) and are published with one `rename`, so no reader
//! ever sees a partial object. See `docs/SEMANTICS.md` for the full mapping.
#![deny(clippy::undocumented_unsafe_blocks)]

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
mod dispatch;
mod hashpool;
pub mod ident;
pub mod keys;
mod lock;
mod meta;
mod options;
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
mod store;
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

pub use options::{Durability, IoMode, LockMode, MetaMode, PosixOptions};

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
/// Largest `write(2)` of an in-memory body (`write::write_pieces`). The whole body in one call
/// (an 8 MiB part from the mount's upload slot, the binary protocol's zero-copy path) cost the
/// kernel's copy into ext4's page cache 2 to 8 times as much CPU per byte as 1 MiB calls once
/// several bodies were written at once (16 parts in flight on 2 cores: 1.4-1.9 CPU-s per GiB
/// for the copies against 0.25; `bench/write_size_floor.c`, docs/MOUNT.md "The unix socket's
/// write, fixed"), whatever the source memory.
const WRITE_PIECE: usize = 1 << 20;
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

    /// The metadata of the file just written (`f`), for its record's stamp, with the mtime the
    /// stamp names made the file system's own on a shared root. A MooseFS 3.0 client shows a
    /// write's mtime to its own node at once but tells the master up to ~0.5 s later (after
    /// close or fsync even), so meanwhile other nodes see the file's older mtime and the record
    /// as stale: another ETag, If-Match failing, a part missing from ListParts
    /// (`test_multinode.py::test_slow_write_is_one_object_on_every_node`). Setting that mtime
    /// explicitly is a synchronous setattr. Local roots skip it (their stat is the file's).
    pub(crate) fn written_metadata(&self, f: &File) -> io::Result<fs::Metadata> {
        let md = f.metadata()?;
        if self.root_local {
            return Ok(md);
        }
        use rustix::fs::{Timespec, Timestamps, UTIME_OMIT};
        let times = Timestamps {
            last_access: Timespec { tv_sec: 0, tv_nsec: UTIME_OMIT },
            last_modification: Timespec { tv_sec: md.mtime(), tv_nsec: md.mtime_nsec() as _ },
        };
        // Explicit times need the file's owner (or CAP_FOWNER): an append to another account's
        // file may be refused, and then keeps the file system's own mtime, as before.
        match rustix::fs::futimens(f, &times) {
            Ok(()) => f.metadata(),
            Err(rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => Ok(md),
            Err(e) => Err(e.into()),
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
            rustix::process::umask(rustix::fs::Mode::from_raw_mode(opts.umask as libc::mode_t));
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
