//! `s3hpc mount`: a FUSE file system over any S3 [`Store`](s3hpc_core::Store).
//!
//! The file system is written once over `Arc<dyn Store>`, so it mounts any S3 endpoint through
//! the HTTP client and an s3hpc gateway through the binary protocol alike. It follows the model
//! of a bucket as a file system that Mountpoint for Amazon S3 made familiar (see docs/MOUNT.md):
//!
//! - reads: sequential reads prefetch with ranged GETs in parallel over a window that grows
//!   while the reader keeps going forward (`read`); random reads fetch what is asked;
//! - writes: a new file (or an existing one opened with `O_TRUNC` under `--allow-overwrite`)
//!   streams as a multipart upload whose parts go out while the application writes, or one PUT
//!   when it stays under one part ([`write`]); the object appears when the file is closed;
//! - directories: ListObjectsV2 with `/` as delimiter, page by page; `mkdir` is local until a
//!   file is written below it;
//! - metadata (lookups and attributes, negative lookups too) is cached for `metadata_ttl`.
#![forbid(unsafe_code)]

pub mod errors;
mod fs;
mod inode;
mod read;
mod write;

use std::path::Path;
use std::time::Duration;

use s3hpc_core::DynStore;

pub use fs::S3Fs;

/// What the mount exposes and how.
#[derive(Debug, Clone)]
pub struct MountOptions {
    pub bucket: String,
    /// Key prefix the mount's root stands for: empty, or ending with `/`.
    pub prefix: String,
    pub read_only: bool,
    pub allow_delete: bool,
    pub allow_overwrite: bool,
    /// Rename by copy and delete where the store has no RenameObject (not atomic).
    pub allow_copy_rename: bool,
    pub uid: u32,
    pub gid: u32,
    pub file_mode: u16,
    pub dir_mode: u16,
    /// How long lookups and attributes (and negative lookups) are trusted.
    pub metadata_ttl: Duration,
    /// Size of every multipart-upload part but the last (at least 5 MiB).
    pub part_size: u64,
    /// Parts of all files being written that may be in flight (and in memory) at once.
    pub max_upload_parts: usize,
    /// Largest prefetch window of one sequential reader, in bytes.
    pub max_read_window: u64,
    /// Largest single ranged GET of the prefetcher.
    pub max_read_chunk: u64,
    /// FUSE threads reading requests from the kernel.
    pub fuse_threads: usize,
    /// `-o allow_other`.
    pub allow_other: bool,
    /// `-o allow_root`.
    pub allow_root: bool,
    /// `-o auto_unmount`.
    pub auto_unmount: bool,
    /// Longest name of one path component, in bytes (statfs's `f_namelen`); longer names are
    /// refused with `ENAMETOOLONG` at lookup, create, mkdir and rename. S3 allows 1,024 bytes
    /// (the whole key); an s3hpc gateway over POSIX stores every component as a file name,
    /// where the file system allows 255 (see [`probe_name_max`]).
    pub name_max: usize,
    /// Give files the file system's own mode, owner, times and size, and make symlinks and
    /// hard links, through s3hpc's file-system extension (`--posix-attrs`; the store must offer
    /// it, see [`probe_posix_attrs`]).
    pub posix_attrs: bool,
    /// Keep modes, owners and times of files in object metadata, with s3fs's keys
    /// (`--metadata s3fs`, see `fs::meta`).
    pub s3fs_metadata: bool,
}

impl MountOptions {
    pub fn new(bucket: impl Into<String>) -> MountOptions {
        let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
        MountOptions {
            bucket: bucket.into(),
            prefix: String::new(),
            read_only: false,
            allow_delete: false,
            allow_overwrite: false,
            allow_copy_rename: false,
            uid,
            gid,
            file_mode: 0o644,
            dir_mode: 0o755,
            metadata_ttl: Duration::from_secs(1),
            part_size: 8 << 20,
            max_upload_parts: 10,
            max_read_window: 64 << 20,
            max_read_chunk: 8 << 20,
            fuse_threads: 4,
            allow_other: false,
            allow_root: false,
            auto_unmount: false,
            name_max: S3_NAME_MAX,
            posix_attrs: false,
            s3fs_metadata: false,
        }
    }

    /// Normalise and check the options; an error names the offending option.
    pub fn validate(&mut self) -> Result<(), String> {
        if self.bucket.is_empty() {
            return Err("BUCKET must not be empty".into());
        }
        let p = self.prefix.trim_start_matches('/');
        if p.split('/').any(|c| c == "." || c == "..") {
            return Err(format!("--prefix {:?}: no '.' or '..' components", self.prefix));
        }
        self.prefix = if p.is_empty() || p.ends_with('/') { p.to_string() } else { format!("{p}/") };
        if self.part_size < s3hpc_core::MIN_PART_SIZE {
            return Err(format!("--part-size {}: at least 5 MiB (S3's smallest part)", self.part_size));
        }
        if self.part_size > 5 << 30 {
            return Err(format!("--part-size {}: at most 5 GiB (S3's largest part)", self.part_size));
        }
        if self.fuse_threads == 0 || self.fuse_threads > 256 {
            return Err(format!("--max-threads {}: expected 1..=256", self.fuse_threads));
        }
        if self.max_upload_parts == 0 {
            self.max_upload_parts = 1;
        }
        self.max_read_chunk = self.max_read_chunk.max(128 << 10);
        self.max_read_window = self.max_read_window.max(self.max_read_chunk);
        if self.name_max == 0 || self.name_max > S3_NAME_MAX {
            return Err(format!("--name-max {}: expected 1..={S3_NAME_MAX}", self.name_max));
        }
        if self.file_mode > 0o7777 || self.dir_mode > 0o7777 {
            return Err("--file-mode/--dir-mode: at most 0o7777".into());
        }
        Ok(())
    }
}

/// The longest name S3 allows (a whole key: 1,024 bytes).
pub const S3_NAME_MAX: usize = 1024;

/// The file-name limit of POSIX file systems (`NAME_MAX`).
pub const POSIX_NAME_MAX: usize = 255;

/// The longest path component the store keeps under `prefix` of `bucket`. An s3hpc gateway
/// over a POSIX file system stores every key component as a file or directory name, which the
/// file system limits to 255 bytes, and refuses a longer one with `KeyTooLongError` (a key of
/// up to 1,024 bytes otherwise); other stores (AWS, s3hpc's memory backend, other servers)
/// take any component of a key of up to 1,024 bytes and answer `NoSuchKey`. So the mount asks
/// once, with a GET of a key whose last component is 256 bytes (a read that changes nothing
/// and needs only read access): `KeyTooLongError` means [`POSIX_NAME_MAX`], anything else
/// (`NoSuchKey`, `AccessDenied`, a transport error) [`S3_NAME_MAX`]. `s3hpc mount --name-max`
/// skips the probe.
pub async fn probe_name_max(store: &dyn s3hpc_core::Store, bucket: &str, prefix: &str) -> usize {
    let key = format!("{prefix}{}", "n".repeat(POSIX_NAME_MAX + 1));
    if key.len() > S3_NAME_MAX {
        return S3_NAME_MAX;
    }
    // A GET, not a HEAD: over HTTP a HEAD's 400 arrives without the error code.
    match store.get_object(bucket, &key, s3hpc_core::GetObjectRequest::default()).await {
        Err(e) if e.code == s3hpc_core::ErrorCode::KeyTooLongError => POSIX_NAME_MAX,
        _ => S3_NAME_MAX,
    }
}

/// Whether the store offers s3hpc's file-system extension (`Store::fs`) in `bucket`: a
/// getattr of a name that need not exist, answered with anything but NotImplemented (an s3hpc
/// gateway over POSIX, over HTTP or the binary protocol; other stores and older gateways answer
/// NotImplemented).
pub async fn probe_posix_attrs(store: &dyn s3hpc_core::Store, bucket: &str, prefix: &str) -> bool {
    let key = format!("{prefix}.s3hpc-mount-probe");
    match store.fs(bucket, &key, s3hpc_core::fsattr::FsOp::GetAttr).await {
        Err(e) => e.code != s3hpc_core::ErrorCode::NotImplemented,
        Ok(_) => true,
    }
}

/// The FUSE configuration for `opts`.
pub fn fuse_config(opts: &MountOptions) -> fuser::Config {
    use fuser::MountOption as M;
    let mut cfg = fuser::Config::default();
    cfg.mount_options = vec![
        M::FSName(format!("s3hpc:{}/{}", opts.bucket, opts.prefix)),
        M::Subtype("s3hpc".into()),
        M::DefaultPermissions,
        M::NoDev,
        M::NoSuid,
        M::NoAtime,
        if opts.read_only { M::RO } else { M::RW },
    ];
    if opts.auto_unmount {
        cfg.mount_options.push(M::AutoUnmount);
    }
    cfg.acl = if opts.allow_other {
        fuser::SessionACL::All
    } else if opts.allow_root {
        fuser::SessionACL::RootAndOwner
    } else {
        fuser::SessionACL::Owner
    };
    cfg.n_threads = Some(opts.fuse_threads);
    cfg.clone_fd = opts.fuse_threads > 1;
    cfg
}

/// What the mount asks of the kernel connection at `init` (shared with the null file system of
/// `examples/nullfs.rs`, which measures what FUSE itself allows with these settings).
pub fn configure_kernel(config: &mut fuser::KernelConfig) {
    use fuser::InitFlags as F;
    for f in [F::FUSE_DO_READDIRPLUS, F::FUSE_ATOMIC_O_TRUNC, F::FUSE_PARALLEL_DIROPS] {
        let _ = config.add_capabilities(f);
    }
    let _ = config.set_max_readahead(1 << 20).or_else(|max| config.set_max_readahead(max));
    let _ = config.set_max_write(1 << 20);
    let _ = config.set_max_background(64);
}

/// Mount `store`'s bucket at `dir`: returns once the mount is live; the file system runs on
/// background threads until [`fuser::BackgroundSession::umount_and_join`] or an external
/// unmount. `rt` runs the S3 requests.
pub fn mount(
    store: DynStore,
    mut opts: MountOptions,
    dir: &Path,
    rt: tokio::runtime::Handle,
) -> std::io::Result<fuser::BackgroundSession> {
    opts.validate().map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let cfg = fuse_config(&opts);
    let fs = S3Fs::new(store, opts, rt);
    let session = fuser::Session::new(fs, dir, &cfg)?;
    session.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn name_max_probe_of_a_store_without_the_posix_limit() {
        let mem = s3hpc_core::memory::MemoryStore::new();
        s3hpc_core::Store::create_bucket(&mem, "bkt").await.unwrap();
        assert_eq!(probe_name_max(&mem, "bkt", "").await, S3_NAME_MAX);
        assert_eq!(probe_name_max(&mem, "bkt", "some/prefix/").await, S3_NAME_MAX);
        // A prefix too long for a 256-byte name below it: nothing to ask.
        assert_eq!(probe_name_max(&mem, "bkt", &"p/".repeat(400)).await, S3_NAME_MAX);
        let mut o = MountOptions::new("b");
        o.name_max = 0;
        assert!(o.validate().is_err());
        o.name_max = 1025;
        assert!(o.validate().is_err());
        o.name_max = POSIX_NAME_MAX;
        o.validate().unwrap();
    }

    #[test]
    fn validate_normalises_prefix() {
        let mut o = MountOptions::new("b");
        o.prefix = "/a/b".into();
        o.validate().unwrap();
        assert_eq!(o.prefix, "a/b/");
        o.prefix = "".into();
        o.validate().unwrap();
        assert_eq!(o.prefix, "");
        o.prefix = "a/../b".into();
        assert!(o.validate().is_err());
        let mut o = MountOptions::new("b");
        o.part_size = 1 << 20;
        assert!(o.validate().is_err());
        let mut o = MountOptions::new("");
        assert!(o.validate().is_err());
        o.bucket = "b".into();
        o.fuse_threads = 0;
        assert!(o.validate().is_err());
    }
}
