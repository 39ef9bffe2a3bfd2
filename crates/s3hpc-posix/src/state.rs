//! The gateway's own state, where no local user can reach it (docs/SECURITY.md, "Threat
//! model").
//!
//! Everything the store keeps for itself lives in one tree on the root's file system, owned by
//! the gateway's user and closed to everyone else (the "moat", `ROOT/.s3hpc`, mode 0700):
//!
//! ```text
//! ROOT/.s3hpc/                 0700, the gateway's        (credentials.toml, lifecycle/ beside)
//!   layout                     "2" once the one-time move from the old layout ran
//!   buckets/<bucket>/          0700: id (the bucket directory's device:inode), created, tags,
//!                              config/<name>, renames/
//!   locks/<bucket>/<stripe>    0700: the cross-process lock files
//!   credentials/<key>.json     0700 / 0600: self-service access keys and STS sessions
//!                              (kept by the `s3hpc` binary's key store, from the held descriptor
//!                              [`PosixStore::credentials_dir`] gives)
//!   staging/                   0711 (--identity posix) or 0700
//!     tmp/                     1777 / 0700: bodies being written (u<uid>/, 0700, the user's own)
//!     uploads/<bucket>/<id>/   1777 / 0700: multipart staging (<id>/ 0700, the initiator's)
//! ```
//!
//! No local user can open anything below `ROOT/.s3hpc` by path (the moat's mode stops the
//! lookup), so nothing there can be planted, swapped, read or locked by them. The store opens
//! the moat and the staging directory once, verified (a directory, not a symlink, owned by the
//! gateway; the mode forced on the descriptor), and resolves every path below them from those
//! held descriptors (`beneath::Beneath::add_area`): a user acting through the store needs
//! search permission from `staging/` on only, which is why that part is open to them, and a
//! swap of `ROOT/.s3hpc` itself (where the root is writable) changes nothing for a running
//! gateway. Gateway state is read and written as the gateway ([`Inner::as_gateway`]); user data
//! (temp files, parts) is written as the user, in directories the user made through the store.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;

use super::*;

/// The gateway's tree under the root.
pub(crate) const MOAT: &str = ".s3hpc";
/// The directory of the key store (`ROOT/.s3hpc/credentials`).
const CREDENTIALS: &str = "credentials";
/// The layout version written once the old per-bucket state was moved.
const LAYOUT: &str = "2";

/// The open, verified state tree.
pub(crate) struct State {
    /// `ROOT/.s3hpc`, `ROOT/.s3hpc/staging`.
    pub moat: PathBuf,
    pub staging: PathBuf,
    /// Held open: everything below is resolved from these (see the module doc).
    pub moat_fd: File,
    pub staging_fd: File,
    /// The gateway's own uid as the root's file system sees it (the owner every gateway
    /// directory must have; on NFS with root squash, nobody).
    pub uid: u32,
    /// Mode of the directories users create entries in through the store.
    pub shared_mode: u32,
    /// `staging/tmp`, held open; with `--identity posix` each user's own directory in it, once
    /// made and verified (a user cannot remove or replace it: they cannot reach it).
    pub tmp_fd: Arc<File>,
    user_tmp: Mutex<HashMap<u32, Arc<File>>>,
    /// `locks/<bucket>` directories, once made and verified.
    lock_dirs: Mutex<HashMap<String, Arc<File>>>,
    /// Buckets whose state directory was found to belong to the bucket directory of this
    /// inode and birth time (see [`Inner::bucket_state_dir`]).
    validated: Mutex<HashMap<String, (u64, i64)>>,
}

impl State {
    /// Open (making what is missing) and verify the tree. Runs as the process.
    pub(crate) fn open(root: &Path, root_fd: &File, posix_identity: bool) -> io::Result<State> {
        let uid = owner_as_seen(root)?;
        let moat_fd = sys::owned_dir(root_fd, MOAT, 0o700, uid)
            .map_err(|e| io::Error::new(e.kind(), format!("{}/{MOAT}: {e}", root.display())))?;
        let shared_mode = if posix_identity { 0o1777 } else { 0o700 };
        let staging_mode = if posix_identity { 0o711 } else { 0o700 };
        for d in ["buckets", "locks", CREDENTIALS] {
            sys::owned_dir(&moat_fd, d, 0o700, uid)?;
        }
        let staging_fd = sys::owned_dir(&moat_fd, "staging", staging_mode, uid)?;
        let tmp_fd = Arc::new(sys::owned_dir(&staging_fd, "tmp", shared_mode, uid)?);
        sys::owned_dir(&staging_fd, "uploads", staging_mode, uid)?;
        let moat = root.join(MOAT);
        Ok(State {
            staging: moat.join("staging"),
            moat,
            moat_fd,
            staging_fd,
            uid,
            shared_mode,
            validated: Mutex::new(HashMap::new()),
            tmp_fd,
            user_tmp: Mutex::new(HashMap::new()),
            lock_dirs: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.moat.join("buckets").join(bucket)
    }

    pub(crate) fn tmp_dir(&self) -> PathBuf {
        self.staging.join("tmp")
    }

    /// The staging directory of a bucket's multipart uploads.
    pub(crate) fn uploads_dir(&self, bucket: &str) -> PathBuf {
        self.staging.join("uploads").join(bucket)
    }
}

impl PosixStore {
    /// `ROOT/.s3hpc/credentials`, open and verified (a directory owned by the gateway, mode
    /// 0700; made if missing), resolved from the held moat descriptor: the key store's area,
    /// which no local user can reach. Opened as the gateway.
    pub fn credentials_dir(&self) -> io::Result<File> {
        let st = &self.inner.state;
        ident::as_process(|| sys::owned_dir(&st.moat_fd, CREDENTIALS, 0o700, st.uid))?
    }
}

/// The owner the root's file system gives files this process creates: its euid, or what the
/// file system maps it to (root squash on NFS: nobody). Read from a probe file.
fn owner_as_seen(root: &Path) -> io::Result<u32> {
    let probe = root.join(format!(".s3hpc-owner.{}.{}.{}", sys::hostname(), std::process::id(), rand_hex(8)));
    let f = fs::OpenOptions::new().write(true).create_new(true).open(&probe)?;
    let uid = f.metadata().map(|m| m.uid());
    drop(f);
    let _ = fs::remove_file(&probe);
    uid
}

fn to_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// The name of a bucket directory (`ROOT/NAME`).
pub(crate) fn bucket_name(bdir: &Path) -> &str {
    bdir.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

impl Inner {
    /// Run `f` as the gateway (the process's own identity) and return to the identity the
    /// thread acted as: the one way gateway work done inside a user's request reaches the
    /// gateway's state.
    pub(crate) fn as_gateway<T>(&self, f: impl FnOnce() -> T) -> io::Result<T> {
        if self.opts.posix_identity && ident::active_uid().is_some() { ident::as_process(f) } else { Ok(f()) }
    }

    /// The state directory of bucket `bdir` (`ROOT/.s3hpc/buckets/NAME`) if it belongs to the
    /// bucket directory there now. State left by a bucket directory that was removed by POSIX
    /// means (`rm -r`) and made again is stale (its owner, policy, configuration belonged to
    /// the old one): it is moved away and the new bucket starts without state. `create`: make
    /// it (with its `id`) when missing. `None`: the bucket has no state. Runs as the gateway.
    pub(crate) fn bucket_state_dir(&self, bdir: &Path, bucket: &str, create: bool) -> Result<Option<PathBuf>> {
        let (ino, born) = match self.fs.metadata(bdir) {
            // The birth time too, where the file system keeps one: inode numbers are reused at
            // once on ext4 and tmpfs after an `rm -r` + `mkdir`.
            Ok(md) if md.is_dir() => (md.ino(), md.created().ok().map(to_ns).unwrap_or(0)),
            Ok(_) => return Err(Error::no_such_bucket(bucket)),
            Err(e) if is_missing(&e) => return Err(Error::no_such_bucket(bucket)),
            Err(e) => return Err(e.into()),
        };
        let st = &self.state;
        let dir = st.bucket_dir(bucket);
        if !create && st.validated.lock().unwrap_or_else(|e| e.into_inner()).get(bucket) == Some(&(ino, born)) {
            return Ok(Some(dir));
        }
        // No device number: every node's mount of a network file system has its own, while
        // inode numbers and birth times are the file system's and the same on every node.
        let id = format!("{ino}:{born}");
        let found = self.as_gateway(|| -> Result<Option<PathBuf>> {
            // A directory without `id` is one being made (by another gateway, or left by a
            // crash in between): not used for reads, adopted by a write.
            match self.fs.read_to_string(&dir.join("id")) {
                Ok(s) if s.trim() == id => return Ok(Some(dir.clone())),
                Ok(_) => self.retire_state(&dir),
                Err(e) if is_missing(&e) => {}
                Err(e) => return Err(e.into()),
            }
            if !create {
                return Ok(None);
            }
            match self.fs.create_dir(&dir) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e.into()),
                _ => {}
            }
            self.write_state_file(&dir.join("id"), id.as_bytes())?;
            Ok(Some(dir.clone()))
        })??;
        if found.is_some() {
            let mut v = st.validated.lock().unwrap_or_else(|e| e.into_inner());
            if v.len() > 100_000 {
                v.clear();
            }
            v.insert(bucket.to_string(), (ino, born));
        }
        Ok(found)
    }

    /// Move stale bucket state out of the way and remove it.
    fn retire_state(&self, dir: &Path) {
        let aside = self.state.moat.join("buckets").join(format!(".stale-{}", rand_hex(8)));
        if self.fs.rename(dir, &aside).is_ok() {
            let _ = self.fs.remove_dir_all(&aside);
        }
    }

    /// Write a small state file atomically (temp file + rename beside it). As the caller's
    /// identity: callers run it as the gateway.
    pub(crate) fn write_state_file(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("f");
        let tmp = path.with_file_name(format!(".{name}.{}", self.temp_name()));
        let r = (|| {
            let mut f = self.fs.create(&tmp, true)?;
            f.write_all(data)?;
            self.sync_file(&f)?;
            self.fs.rename(&tmp, path)
        })();
        if r.is_err() {
            let _ = self.fs.remove_file(&tmp);
        }
        r
    }

    /// Read a state file of bucket `bdir` (`rel` below its state directory); `None`: absent.
    pub(crate) fn read_bucket_state(&self, bdir: &Path, bucket: &str, rel: &str) -> Result<Option<Vec<u8>>> {
        let Some(dir) = self.bucket_state_dir(bdir, bucket, false)? else { return Ok(None) };
        match self.as_gateway(|| self.fs.read(&dir.join(rel)))? {
            Ok(v) => Ok(Some(v)),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Write (`Some`) or remove (`None`) a state file of bucket `bdir`.
    pub(crate) fn write_bucket_state(&self, bdir: &Path, bucket: &str, rel: &str, data: Option<&[u8]>) -> Result<()> {
        let dir = self.bucket_state_dir(bdir, bucket, data.is_some())?;
        let Some(dir) = dir else { return Ok(()) };
        let path = dir.join(rel);
        self.as_gateway(|| -> io::Result<()> {
            match data {
                Some(d) => {
                    if let Some(p) = path.parent() {
                        self.fs.create_dir_all(p)?;
                    }
                    self.write_state_file(&path, d)
                }
                None => match self.fs.remove_file(&path) {
                    Err(e) if !is_missing(&e) => Err(e),
                    _ => Ok(()),
                },
            }
        })??;
        Ok(())
    }

    /// Remove the state of a bucket that is being deleted.
    pub(crate) fn remove_bucket_state(&self, bucket: &str) {
        let _ = self.as_gateway(|| {
            let aside = self.state.moat.join("buckets").join(format!(".stale-{}", rand_hex(8)));
            if self.fs.rename(&self.state.bucket_dir(bucket), &aside).is_ok() {
                let _ = self.fs.remove_dir_all(&aside);
            }
            let _ = self.fs.remove_dir_all(&self.state.uploads_dir(bucket));
            let _ = self.fs.remove_dir_all(&self.state.moat.join("locks").join(bucket));
        });
        self.state.validated.lock().unwrap_or_else(|e| e.into_inner()).remove(bucket);
        self.state.lock_dirs.lock().unwrap_or_else(|e| e.into_inner()).remove(bucket);
    }

    /// The staging directory of a bucket's uploads, made (by the gateway) if missing.
    pub(crate) fn ensure_uploads_dir(&self, bucket: &str) -> Result<PathBuf> {
        let st = &self.state;
        self.as_gateway(|| -> io::Result<()> {
            let up = sys::open_dir_nofollow(&st.staging_fd, "uploads")?;
            sys::owned_dir(&up, bucket, st.shared_mode, st.uid).map(drop)
        })??;
        Ok(st.uploads_dir(bucket))
    }

    /// The directory the temp files of this thread's identity go in, open: `staging/tmp`
    /// (acting as the gateway) or `staging/tmp/u<uid>`, made by the user through the store
    /// (mode 0700) and refused unless it is a directory that user owns.
    pub(crate) fn temp_dir(&self) -> Result<Arc<File>> {
        let st = &self.state;
        let Some(uid) = self.acting_uid() else { return Ok(st.tmp_fd.clone()) };
        if let Some(d) = st.user_tmp.lock().unwrap_or_else(|e| e.into_inner()).get(&uid) {
            return Ok(d.clone());
        }
        let d = Arc::new(sys::owned_dir(&st.tmp_fd, &format!("u{uid}"), 0o700, uid)?);
        let mut m = st.user_tmp.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() > 4096 {
            m.clear();
        }
        m.insert(uid, d.clone());
        Ok(d)
    }

    /// The lock file of one stripe of a bucket, opened as the gateway (`locks/<bucket>/` is
    /// made on first use).
    pub(crate) fn lock_file(&self, bdir: &Path, stripe: u64) -> Result<File> {
        let bucket = bucket_name(bdir);
        let st = &self.state;
        let cached = st.lock_dirs.lock().unwrap_or_else(|e| e.into_inner()).get(bucket).cloned();
        let f = self.as_gateway(|| -> io::Result<File> {
            let dir = match cached {
                Some(d) => d,
                None => {
                    let locks = sys::open_dir_nofollow(&st.moat_fd, "locks")?;
                    let d = Arc::new(sys::owned_dir(&locks, bucket, 0o700, st.uid)?);
                    let mut m = st.lock_dirs.lock().unwrap_or_else(|e| e.into_inner());
                    if m.len() > 100_000 {
                        m.clear();
                    }
                    m.insert(bucket.to_string(), d.clone());
                    d
                }
            };
            sys::open_or_create_at(&dir, &format!("{stripe:04x}"), 0o600)
        })??;
        Ok(f)
    }

    /// The one-time move of bucket state from the layout before the moat (`BUCKET/.s3hpc/`:
    /// `created`, `tags`, `config/*`, and multipart uploads in progress) into the moat. Runs at
    /// open, as the gateway, only while `ROOT/.s3hpc/layout` is missing (so files a user plants
    /// in a bucket later are never taken in). Symlinks are never followed; what cannot be moved
    /// is logged to standard error and left where it is.
    pub(crate) fn migrate_old_layout(&self) {
        let layout = self.state.moat.join("layout");
        if self.fs.read_to_string(&layout).is_ok_and(|s| s.trim() == LAYOUT) {
            return;
        }
        let Ok(rd) = self.fs.read_dir(&self.root) else { return };
        for b in rd {
            let Some(name) = b.name.to_str() else { continue };
            if !b.is_dir || names::check_bucket_name_for_access(name).is_err() {
                continue;
            }
            if let Err(e) = self.migrate_bucket(name) {
                tracing::warn!("moving the state of bucket {name} into {MOAT}/: {e} (left where it was)");
            }
        }
        let _ = self.write_state_file(&layout, LAYOUT.as_bytes());
    }

    fn migrate_bucket(&self, bucket: &str) -> Result<()> {
        let bdir = self.root.join(bucket);
        let Ok(bfd) = sys::open_dir_nofollow(&self.root_fd, bucket) else { return Ok(()) };
        let Ok(old) = sys::open_dir_nofollow(&bfd, INTERNAL) else { return Ok(()) };
        let read = |dir: &File, name: &str| -> Option<Vec<u8>> {
            use std::io::Read;
            let mut f = sys::open_at(dir, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0).ok()?;
            if !f.metadata().ok()?.is_file() {
                return None;
            }
            let mut v = Vec::new();
            f.read_to_end(&mut v).ok()?;
            Some(v)
        };
        let Some(dir) = self.bucket_state_dir(&bdir, bucket, true)? else { return Ok(()) };
        for f in ["created", "tags"] {
            if let Some(v) = read(&old, f) {
                self.write_state_file(&dir.join(f), &v)?;
            }
        }
        if let Ok(cfg) = sys::open_dir_nofollow(&old, "config") {
            let cdir = dir.join("config");
            self.fs.create_dir_all(&cdir)?;
            for e in self.fs.read_dir_of(&cfg)? {
                let Some(n) = e.name.to_str() else { continue };
                if !e.is_file || names::validate_config_name(n).is_err() {
                    continue;
                }
                if let Some(v) = read(&cfg, n) {
                    self.write_state_file(&cdir.join(n), &v)?;
                }
            }
        }
        if let Ok(ups) = sys::open_dir_nofollow(&old, "uploads") {
            let to = self.ensure_uploads_dir(bucket)?;
            let to_fd = self.fs.open_dir(&to)?;
            for e in self.fs.read_dir_of(&ups)? {
                let Some(n) = e.name.to_str() else { continue };
                if !e.is_dir || !valid_upload_id(n) {
                    continue;
                }
                if let Err(err) = sys::rename_between(&ups, n, &to_fd, n, true) {
                    tracing::warn!("multipart upload {n} of bucket {bucket} not moved into {MOAT}/: {err}");
                }
            }
        }
        Ok(())
    }
}
