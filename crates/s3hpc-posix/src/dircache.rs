//! Sorted entry lists of large directories, kept between listings, so that paging through a
//! 100k-entry directory, or IOR's delete phase (delete a key, list with that key as prefix, in
//! one flat directory), reads and sorts the directory once instead of once per call. The rule is
//! in docs/SEMANTICS.md ("Listing cache"); in short, a cached list is kept current one of two
//! ways:
//!
//! * **Watched** (a directory on the root's device, when that is a local file system: ext4, xfs,
//!   btrfs, tmpfs). An inotify watch is added *before* the directory is read. Every change of
//!   the directory's names by any process of this host (this store's own creates, deletes and
//!   renames, another gateway on the same root, POSIX users) queues an event naming the entry
//!   before the call that made it returns. Before a cached list is served, the queue is drained
//!   and every name it mentions is looked up again (`fstatat` relative to the directory just
//!   opened) and put in or taken out of the list as it is *now*, so event kinds and their order
//!   (renames, `RENAME_EXCHANGE`) need no interpretation. A listing thus reflects every change
//!   that completed before it started, whatever the timestamps say, and a listing after the
//!   store's own delete costs an `openat2`, an `fstat`, a `read` of the queue and one
//!   `fstatat`, not a `getdents64` of the whole directory. The directory going away or being
//!   moved, another directory at its path (other inode), a lookup that fails other than with
//!   ENOENT, or lost events (queue overflow) drop the entry.
//! * **Stamped** (anything else: network and parallel file systems, whose other clients'
//!   changes raise no local event; or no inotify). Valid while (device, inode, mtime, ctime,
//!   size, nlink) is unchanged, and only cached once its ctime and mtime have settled (see
//!   [`crate::walk::settled`]), so that a later change in the same timestamp tick cannot hide
//!   behind an unchanged stamp. Each change means one more read, except with a **listing
//!   window** (`--listing-staleness`, on roots shared by nodes): for that long after a full
//!   read, a stamped list is served with this store's own changes applied (the names along
//!   each written, deleted or renamed key's path, noted by [`DirCache::note_key`] when the
//!   call returns, and looked up again like inotify's), so IOR's delete phase costs one read
//!   of the directory per window instead of one per delete. Other nodes' changes show at the
//!   next full read, at most the window later (their own client caches are no fresher).
//!
//! Before either is served, the directory is opened (`O_RDONLY|O_DIRECTORY`, beneath the root)
//! as the calling thread's identity: under `--identity posix` a user who may not read the
//! directory gets the kernel's EACCES, not names another user's listing put in the cache.
//!
//! Bounded: directories with fewer than [`CACHE_MIN_ENTRIES`] entries are not kept; at most
//! [`CACHE_MAX_DIRS`] directories and [`CACHE_MAX_NAMES`] names, least recently used first out.

use std::collections::{HashMap, HashSet};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtOrd};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::beneath::Beneath;
use crate::keys::INTERNAL;
use crate::walk::{Entry, settled, sort_key};

/// Directories smaller than this are not worth caching.
pub(crate) const CACHE_MIN_ENTRIES: usize = 256;
/// At most this many directories are cached...
const CACHE_MAX_DIRS: usize = 64;
/// ...holding at most this many names in total.
const CACHE_MAX_NAMES: usize = 2_000_000;
/// A directory whose size is above this is watched before its first read (it likely holds
/// [`CACHE_MIN_ENTRIES`] names: tmpfs counts 20 bytes an entry, btrfs twice the name lengths,
/// ext4 and xfs whole blocks); a smaller one that turns out large is watched from its next read.
const WATCH_MIN_SIZE: u64 = 4096;
/// More changed names than this (plus the list's length) waiting for one directory: reading
/// it again is cheaper than looking each up.
const MAX_PENDING: usize = 4096;

/// Names of a directory that changed (raw bytes, as events and notes carry them).
type Names = Vec<Box<[u8]>>;

/// What a stamped entry must still match (a watched one: device and inode only).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    size: u64,
    nlink: u64,
}

impl Stamp {
    fn of(md: &Metadata) -> Stamp {
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        Stamp {
            dev: md.dev(),
            ino: md.ino(),
            mtime_ns: ns(md.mtime(), md.mtime_nsec()),
            ctime_ns: ns(md.ctime(), md.ctime_nsec()),
            size: md.size(),
            nlink: md.nlink(),
        }
    }
}

struct Cached {
    stamp: Stamp,
    /// The inotify watch keeping the list current (`None`: stamped).
    wd: Option<i32>,
    entries: Arc<Vec<Entry>>,
    used: u64,
    /// When the directory was last read whole (before the read began).
    read_ns: i64,
    /// Stamped only: names this store changed since (see [`DirCache::note_key`]); `None`:
    /// too many, read again.
    noted: Option<Vec<Box<[u8]>>>,
}

/// An inotify watch: the names its directory's events mentioned since they were last looked
/// up (`None`: the directory went away, or events were lost; the list cannot be kept current).
struct Slot {
    /// The cached directory (`None` while it is being read).
    path: Option<PathBuf>,
    changed: Option<Vec<Box<[u8]>>>,
}

#[derive(Default)]
struct State {
    map: HashMap<PathBuf, Cached>,
    wds: HashMap<i32, Slot>,
    names: usize,
    tick: u64,
    /// Large directories read without a watch: watched from their next read on.
    hints: HashSet<PathBuf>,
    /// Stamped directories being read whole right now: (readers, names noted meanwhile).
    reading: HashMap<PathBuf, (usize, Names)>,
}

/// Bounded LRU of sorted directory listings (see the module documentation).
pub struct DirCache {
    state: Mutex<State>,
    /// The root's device when it is a local file system with fine timestamps.
    local_dev: Option<u64>,
    /// Watch directories on `local_dev` (tests turn it off to exercise the stamped rule).
    watch: AtomicBool,
    /// The inotify instance, made on first use (`None` inside: unavailable).
    notify: OnceLock<Option<OwnedFd>>,
    hits: AtomicU64,
    scans: AtomicU64,
    /// The listing window in nanoseconds (0: none; see the module documentation).
    window_ns: AtomicU64,
}

fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

const IN_CHANGES: u32 = libc::IN_CREATE | libc::IN_DELETE | libc::IN_MOVED_FROM | libc::IN_MOVED_TO;
/// The watched directory itself is gone, moved, unmounted, or the watch was removed.
const IN_GONE: u32 = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_UNMOUNT | libc::IN_IGNORED;

/// What the name `name` of the open directory `d` (path `dir`) is now, as a read of the
/// directory would list it: `Some(Some(is_dir))` listed, `Some(None)` not listed, `None`
/// unknown (the lookup failed other than with ENOENT).
fn lookup(fs: &Beneath, d: &File, dir: &Path, name: &str) -> Option<Option<bool>> {
    if name.is_empty() || name == INTERNAL || name.contains('/') {
        return Some(None);
    }
    let c = std::ffi::CString::new(name).ok()?;
    let st = match rustix::fs::statat(d, &c, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(e) => return (e == rustix::io::Errno::NOENT).then_some(None),
    };
    Some(match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Some(true),
        libc::S_IFREG => Some(false),
        // As a read lists it: a file if it resolves to one beneath the root.
        libc::S_IFLNK => fs.metadata(&dir.join(name)).is_ok_and(|m| m.is_file()).then_some(false),
        _ => None,
    })
}

/// Put `name` in the sorted list `v` as `now` says (`Some(is_dir)`: listed; `None`: not).
fn set(v: &mut Vec<Entry>, name: &str, now: Option<bool>) {
    for dir in [false, true] {
        let probe = Entry { name: name.into(), dir };
        if let Ok(i) = v.binary_search_by(|x| sort_key(x).cmp(sort_key(&probe))) {
            v.remove(i);
        }
    }
    if let Some(dir) = now {
        let new = Entry { name: name.into(), dir };
        let i = v.partition_point(|x| sort_key(x).lt(sort_key(&new)));
        v.insert(i, new);
    }
}

/// Look up every name in `changed` (once each) and set it in `v`; false if one is unknown.
fn refresh(v: &mut Vec<Entry>, changed: &[Box<[u8]>], fs: &Beneath, d: &File, dir: &Path) -> bool {
    let mut seen = HashSet::new();
    for n in changed {
        let Ok(name) = std::str::from_utf8(n) else { continue };
        if !seen.insert(name.to_string()) {
            continue;
        }
        match lookup(fs, d, dir, name) {
            Some(now) => set(v, name, now),
            None => return false,
        }
    }
    true
}

impl DirCache {
    /// `local_dev`: the device of the root when it is a local file system (its directories are
    /// watched; others are stamped).
    pub fn new(local_dev: Option<u64>) -> DirCache {
        DirCache {
            state: Mutex::default(),
            local_dev,
            watch: AtomicBool::new(true),
            notify: OnceLock::new(),
            hits: AtomicU64::new(0),
            scans: AtomicU64::new(0),
            window_ns: AtomicU64::new(0),
        }
    }

    /// Serve stamped lists with this store's own changes applied for `window` after each full
    /// read (zero: read again after every change; see the module documentation).
    pub fn set_window(&self, window: std::time::Duration) {
        self.window_ns.store(window.as_nanos().min(i64::MAX as u128) as u64, AtOrd::Relaxed);
    }

    /// Whether own changes are noted (a listing window is set: roots shared by nodes).
    pub fn journaling(&self) -> bool {
        self.window_ns.load(AtOrd::Relaxed) != 0
    }

    /// This store changed the names along `key`'s path in the bucket directory `bdir` (created,
    /// replaced, deleted or renamed the key, and made or pruned the directories above it).
    /// Called after the change, before the call that made it returns. Only stamped lists need
    /// it (watched ones hear of every change from inotify), and only with a window.
    pub fn note_key(&self, bdir: &Path, key: &str) {
        if !self.journaling() {
            return;
        }
        let mut st = self.lock();
        if st.map.is_empty() && st.reading.is_empty() {
            return;
        }
        let mut dir = bdir.to_path_buf();
        for name in key.split('/').filter(|c| !c.is_empty()) {
            if let Some((_, v)) = st.reading.get_mut(&dir) {
                v.push(name.as_bytes().into());
            }
            if let Some(c) = st.map.get_mut(&dir)
                && c.wd.is_none()
            {
                let limit = c.entries.len() + MAX_PENDING;
                if let Some(v) = &mut c.noted {
                    v.push(name.as_bytes().into());
                    if v.len() > limit {
                        c.noted = None;
                    }
                }
            }
            dir.push(name);
        }
    }

    /// Keep lists current by inotify where possible (the default), or only by stamps.
    pub fn set_watch(&self, on: bool) {
        self.watch.store(on, AtOrd::Relaxed);
        if !on {
            let mut st = self.lock();
            let watched: Vec<PathBuf> = st.map.iter().filter(|(_, c)| c.wd.is_some()).map(|(p, _)| p.clone()).collect();
            for p in watched {
                self.evict(&mut st, &p);
            }
            for s in st.wds.values_mut() {
                s.changed = None;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The inotify descriptor, if one was made.
    fn notify_fd(&self) -> Option<&OwnedFd> {
        self.notify.get().and_then(Option::as_ref)
    }

    /// The entries of `dir` in key order, without the internal directory and without names
    /// that are not UTF-8 or not regular files/directories (symlinks count as files when they
    /// resolve to one beneath the root).
    pub fn read_sorted(&self, fs: &Beneath, dir: &Path) -> io::Result<Arc<Vec<Entry>>> {
        // Taken before the stamp: a conservative age for the settle rule.
        let now = now_ns();
        // As the thread's identity: the kernel decides whether this user may read the names.
        let d = fs.open_dir(dir)?;
        let stamp = Stamp::of(&d.metadata()?);
        let watchable = self.local_dev == Some(stamp.dev) && self.watch.load(AtOrd::Relaxed);
        let wd = {
            let mut st = self.lock();
            self.drain(&mut st);
            st.tick += 1;
            let tick = st.tick;
            let mut was_large = false;
            if let Some(c) = st.map.get(dir) {
                // Stamped, within the listing window of its last full read: current as far as
                // this store's own changes go (others' show at the next full read).
                let in_window = c.wd.is_none()
                    && (c.stamp.dev, c.stamp.ino) == (stamp.dev, stamp.ino)
                    && c.noted.is_some()
                    && now.saturating_sub(c.read_ns) < self.window_ns.load(AtOrd::Relaxed) as i64;
                // Past it, a journaled list (kept unsettled) is current only if nothing changed
                // since its read and its stamp had settled when it was read. Its stamp stays the
                // one of its read: a change by another node within the window shows then.
                let local = || self.local_dev == Some(stamp.dev);
                let journaled_ok =
                    settled(c.stamp.ctime_ns, c.read_ns, local) && settled(c.stamp.mtime_ns, c.read_ns, local);
                let (wd, fresh) = match c.wd {
                    Some(wd) => (Some(wd), (c.stamp.dev, c.stamp.ino) == (stamp.dev, stamp.ino)),
                    None => (None, (c.stamp == stamp && journaled_ok) || in_window),
                };
                let changed = match wd {
                    Some(wd) if fresh => st.wds.get_mut(&wd).and_then(|s| s.changed.as_mut().map(std::mem::take)),
                    None if fresh => {
                        let c = st.map.get_mut(dir).expect("looked up above");
                        Some(c.noted.as_mut().map(std::mem::take).unwrap_or_default())
                    }
                    _ => None,
                };
                if let Some(changed) = changed {
                    let c = st.map.get_mut(dir).expect("looked up above");
                    let before = c.entries.len();
                    let ok = changed.is_empty() || refresh(Arc::make_mut(&mut c.entries), &changed, fs, &d, dir);
                    let (after, entries) = (c.entries.len(), c.entries.clone());
                    c.used = tick;
                    st.names = st.names - before + after;
                    if ok {
                        self.hits.fetch_add(1, AtOrd::Relaxed);
                        return Ok(entries);
                    }
                }
                was_large = true;
                self.evict(&mut st, dir);
            }
            let hinted = st.hints.remove(dir);
            let wd = if watchable && (was_large || hinted || stamp.size > WATCH_MIN_SIZE) {
                self.add_watch(&mut st, &d)
            } else {
                None
            };
            if wd.is_none() && self.window_ns.load(AtOrd::Relaxed) > 0 {
                // Own changes made while the directory is read are looked up after it.
                st.reading.entry(dir.to_path_buf()).or_default().0 += 1;
            }
            wd
        };
        let journaled = wd.is_none() && self.window_ns.load(AtOrd::Relaxed) > 0;
        // Names this store changed while the directory was read (`None`: not journaled).
        let during = |st: &mut State| -> Option<Vec<Box<[u8]>>> {
            if !journaled {
                return None;
            }
            let (n, v) = st.reading.get_mut(dir)?;
            *n -= 1;
            let names = if *n == 0 { std::mem::take(v) } else { v.clone() };
            if *n == 0 {
                st.reading.remove(dir);
            }
            Some(names)
        };
        self.scans.fetch_add(1, AtOrd::Relaxed);
        let listed = match fs.read_dir_of(&d) {
            Ok(l) => l,
            Err(e) => {
                let mut st = self.lock();
                during(&mut st);
                if let Some(wd) = wd {
                    self.unwatch(&mut st, wd);
                }
                return Err(e);
            }
        };
        let mut v = Vec::with_capacity(listed.len());
        for de in listed {
            let Some(name) = de.name.to_str() else { continue };
            if name == INTERNAL {
                continue;
            }
            let is_dir = if de.is_dir {
                true
            } else if de.is_file {
                false
            } else if de.is_symlink {
                // Symlinks to files are objects if they resolve beneath the root; symlinked
                // directories are not followed (no loops, no escaping the bucket by the walk).
                match fs.metadata(&dir.join(name)) {
                    Ok(m) if m.is_file() => false,
                    _ => continue,
                }
            } else {
                continue;
            };
            v.push(Entry { name: name.into(), dir: is_dir });
        }
        v.sort_unstable_by(|a, b| sort_key(a).cmp(sort_key(b)));
        let large = v.len() >= CACHE_MIN_ENTRIES;

        let mut st = self.lock();
        self.drain(&mut st);
        let noted = during(&mut st);
        let keep = match wd {
            Some(wd) => {
                // Names changed while the directory was read (some may be in `v` already).
                let changed = st.wds.get_mut(&wd).and_then(|s| s.changed.take());
                match changed {
                    Some(changed) if large && refresh(&mut v, &changed, fs, &d, dir) => {
                        let s = st.wds.get_mut(&wd).expect("registered by add_watch");
                        s.path = Some(dir.to_path_buf());
                        s.changed = Some(Vec::new());
                        true
                    }
                    _ => {
                        self.unwatch(&mut st, wd);
                        false
                    }
                }
            }
            // Both times: the ctime is always the time of the last change, a whole-second mtime
            // tells of coarse timestamps (the ctime then is coarse too, except after utimes).
            // With a listing window: kept at once (it is read again within the window anyway),
            // with the own changes made during the read looked up.
            None if noted.is_some() => large && refresh(&mut v, noted.as_deref().unwrap_or_default(), fs, &d, dir),
            None => {
                let local = || self.local_dev == Some(stamp.dev);
                large && settled(stamp.ctime_ns, now, local) && settled(stamp.mtime_ns, now, local)
            }
        };
        let v = Arc::new(v);
        if large && watchable && wd.is_none() {
            // It looked small: watched from its next read on (kept stamped until then if it
            // has settled).
            if st.hints.len() >= CACHE_MAX_DIRS {
                st.hints.clear();
            }
            st.hints.insert(dir.to_path_buf());
        }
        if !keep {
            return Ok(v);
        }
        st.tick += 1;
        let tick = st.tick;
        self.evict(&mut st, dir);
        st.names += v.len();
        let noted = wd.is_none().then(Vec::new);
        st.map.insert(dir.to_path_buf(), Cached { stamp, wd, entries: v.clone(), used: tick, read_ns: now, noted });
        while st.map.len() > CACHE_MAX_DIRS || st.names > CACHE_MAX_NAMES {
            let Some(oldest) = st.map.iter().min_by_key(|(_, c)| c.used).map(|(k, _)| k.clone()) else { break };
            self.evict(&mut st, &oldest);
        }
        Ok(v)
    }
    /// Add an inotify watch on the open directory `d`, registered as being read.
    fn add_watch(&self, st: &mut State, d: &File) -> Option<i32> {
        let fd = self
            .notify
            .get_or_init(|| {
                use rustix::fs::inotify::{CreateFlags, init};
                init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()
            })
            .as_ref()?;
        // inotify takes a path: the open directory's own, through /proc (no walk from the root,
        // nothing to swap in between).
        let path = std::ffi::CString::new(format!("/proc/self/fd/{}", d.as_raw_fd())).ok()?;
        let mask = IN_CHANGES | libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_ONLYDIR;
        let wd = rustix::fs::inotify::add_watch(fd, &path, rustix::fs::inotify::WatchFlags::from_bits_retain(mask))
            .unwrap_or(-1);
        if wd < 0 || st.wds.contains_key(&wd) {
            // No watch, or this directory is watched already (under another path, or being
            // read by another thread right now): leave it to that one.
            return None;
        }
        st.wds.insert(wd, Slot { path: None, changed: Some(Vec::new()) });
        Some(wd)
    }

    fn unwatch(&self, st: &mut State, wd: i32) {
        st.wds.remove(&wd);
        if let Some(fd) = self.notify_fd() {
            // A watch already gone is EINVAL, harmless.
            let _ = rustix::fs::inotify::remove_watch(fd, wd);
        }
    }

    /// Drop the cached entry of `path` (and its watch).
    fn evict(&self, st: &mut State, path: &Path) {
        if let Some(c) = st.map.remove(path) {
            st.names -= c.entries.len();
            if let Some(wd) = c.wd {
                self.unwatch(st, wd);
            }
        }
    }

    /// Move every queued inotify event to its watch: the names to look up again.
    fn drain(&self, st: &mut State) {
        let Some(fd) = self.notify_fd() else { return };
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match rustix::io::read(fd, &mut buf) {
                Ok(n) if n > 0 => n,
                _ => return, // EAGAIN: nothing more queued
            };
            let mut b = &buf[..n];
            // struct inotify_event: wd, mask, cookie, len, then `len` bytes of NUL-padded name.
            while b.len() >= 16 {
                let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
                let (wd, mask, len) = (word(0) as i32, word(4), word(12) as usize);
                let raw = &b[16..(16 + len).min(b.len())];
                let name = &raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())];
                self.event(st, wd, mask, name);
                b = &b[(16 + len).min(b.len())..];
            }
            if n as usize + 16 + 256 <= buf.len() {
                return; // room for another event was left: the queue was empty
            }
        }
    }

    fn event(&self, st: &mut State, wd: i32, mask: u32, name: &[u8]) {
        if mask & libc::IN_Q_OVERFLOW != 0 {
            // Events were lost: no watched list can be trusted.
            for s in st.wds.values_mut() {
                s.changed = None;
            }
            return;
        }
        let Some(s) = st.wds.get_mut(&wd) else { return };
        let limit = s.path.as_ref().and_then(|p| st.map.get(p)).map_or(0, |c| c.entries.len()) + MAX_PENDING;
        let s = st.wds.get_mut(&wd).expect("looked up above");
        match &mut s.changed {
            Some(_) if mask & IN_GONE != 0 => s.changed = None,
            Some(v) if mask & IN_CHANGES != 0 => {
                v.push(name.into());
                if v.len() > limit {
                    s.changed = None;
                }
            }
            _ => {}
        }
    }

    /// Number of cached directories (for tests).
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// (listings served from the cache, directories read): for tests and benchmarks.
    pub fn stats(&self) -> (u64, u64) {
        (self.hits.load(AtOrd::Relaxed), self.scans.load(AtOrd::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A root with a bucket directory `b` of `n` files; the cache's view of it.
    fn setup(n: usize) -> (tempfile::TempDir, PathBuf, Beneath, u64) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let d = root.join("b");
        std::fs::create_dir(&d).unwrap();
        for i in 0..n {
            std::fs::write(d.join(format!("f{i:05}")), b"").unwrap();
        }
        let fd = File::open(&root).unwrap();
        let dev = fd.metadata().unwrap().dev();
        (t, d.clone(), Beneath::new(root, &fd).unwrap(), dev)
    }

    fn names(v: &[Entry]) -> Vec<String> {
        v.iter().map(|e| if e.dir { format!("{}/", e.name) } else { e.name.to_string() }).collect()
    }

    /// A fresh read of `d` in key order (directories as `name/`).
    fn fresh(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| {
                let n = e.file_name().into_string().unwrap();
                if e.file_type().unwrap().is_dir() { format!("{n}/") } else { n }
            })
            .collect();
        v.sort();
        v
    }

    /// Outside changes of every kind: create, unlink, mkdir, rename, a file replaced by a
    /// directory of the same name.
    fn change(d: &Path, round: usize) {
        std::fs::write(d.join(format!("new{round}")), b"").unwrap();
        std::fs::remove_file(d.join(format!("f{:05}", 10 + round))).unwrap();
        std::fs::create_dir(d.join(format!("sub{round}"))).unwrap();
        std::fs::rename(d.join(format!("f{:05}", 100 + round)), d.join(format!("g{round}"))).unwrap();
        std::fs::remove_file(d.join(format!("f{:05}", 200 + round))).unwrap();
        std::fs::create_dir(d.join(format!("f{:05}", 200 + round))).unwrap();
    }

    #[test]
    fn watched_list_follows_outside_changes_without_reading_again() {
        let (_t, d, fs, dev) = setup(300);
        let c = DirCache::new(Some(dev));
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!((c.len(), c.stats()), (1, (0, 1)), "300 entries: cached (and watched) at the first read");
        for round in 0..3 {
            change(&d, round);
            assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d), "round {round}");
        }
        assert_eq!(c.stats(), (3, 1), "the changes were applied, not read again");
        // The directory replaced by another under the same path: not the cached one.
        std::fs::rename(&d, d.with_extension("old")).unwrap();
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("only"), b"").unwrap();
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), ["only"]);
    }

    #[test]
    fn stamped_list_is_invalidated_by_outside_changes() {
        let (_t, d, fs, dev) = setup(300);
        let c = DirCache::new(Some(dev));
        c.set_watch(false);
        // Just changed: not cached (a change in the same timestamp tick could hide).
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.len(), 0);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.len(), 1, "settled: cached");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats(), (1, 2));
        for round in 0..3 {
            change(&d, round);
            assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d), "round {round}");
        }
        assert_eq!(c.stats(), (1, 5), "each change: read again");
    }

    /// With a listing window (roots shared by nodes): the store's own changes, noted, are
    /// applied to the stamped list without reading the directory again; a change nobody noted
    /// (another node's) shows once the window has passed, never later.
    #[test]
    fn window_applies_own_changes_and_bounds_others() {
        let (_t, d, fs, dev) = setup(300);
        let c = DirCache::new(Some(dev));
        c.set_watch(false);
        c.set_window(Duration::from_millis(600));
        let bdir = d.parent().unwrap().to_path_buf();
        // Kept at once, though just changed (it is read again within the window anyway).
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!((c.len(), c.stats()), (1, (0, 1)));
        for i in 0..20 {
            // IOR's delete phase: delete one, list.
            std::fs::remove_file(d.join(format!("f{i:05}"))).unwrap();
            c.note_key(&bdir, &format!("b/f{i:05}"));
            assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d), "delete {i}");
        }
        // A new subdirectory made for a deeper key: noted along the key's path.
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/x"), b"").unwrap();
        c.note_key(&bdir, "b/sub/x");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats(), (21, 1), "own changes applied, the directory read once");
        // Another node's change (not noted): may be missed within the window...
        std::fs::write(d.join("other-node"), b"").unwrap();
        let within = names(&c.read_sorted(&fs, &d).unwrap());
        assert!(!within.contains(&"other-node".to_string()), "served from the list within the window");
        // ...and shows once it has passed.
        std::thread::sleep(Duration::from_millis(650));
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats().1, 2, "read again after the window");
        // Past the window with no change since the read: served (the stamp was settled)...
        std::thread::sleep(Duration::from_millis(700));
        c.read_sorted(&fs, &d).unwrap();
        // ...but a change after the read, even a noted one, means one more read.
        std::thread::sleep(Duration::from_millis(700));
        std::fs::write(d.join("late"), b"").unwrap();
        c.note_key(&bdir, "b/late");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        // Without a window: every change is one more read (the stamped rule as before).
        c.set_window(Duration::ZERO);
        let reads = c.stats().1;
        std::thread::sleep(Duration::from_millis(250));
        c.read_sorted(&fs, &d).unwrap();
        std::fs::remove_file(d.join("late")).unwrap();
        c.note_key(&bdir, "b/late");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert!(c.stats().1 > reads, "read again");
    }

    #[test]
    fn lost_events_drop_watched_lists() {
        let (_t, d, fs, dev) = setup(300);
        let c = DirCache::new(Some(dev));
        c.read_sorted(&fs, &d).unwrap();
        std::fs::write(d.join("new"), b"").unwrap();
        c.event(&mut c.lock(), -1, libc::IN_Q_OVERFLOW, b"");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats(), (0, 2), "read again");
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats(), (1, 2), "and watched again");
    }

    /// `renameat2(RENAME_EXCHANGE)` of a file and a directory queues "moved to" before "moved
    /// from" for the same name: names are looked up, not inferred from the events.
    #[test]
    fn exchange_is_followed() {
        let (_t, d, fs, dev) = setup(300);
        let c = DirCache::new(Some(dev));
        std::fs::create_dir(d.join("zdir")).unwrap();
        c.read_sorted(&fs, &d).unwrap();
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        if let Err(e) = renameat_with(CWD, d.join("f00001"), CWD, d.join("zdir"), RenameFlags::EXCHANGE) {
            eprintln!("skipped: no RENAME_EXCHANGE here: {}", io::Error::from(e));
            return;
        }
        assert_eq!(names(&c.read_sorted(&fs, &d).unwrap()), fresh(&d));
        assert_eq!(c.stats(), (1, 1));
    }

    #[test]
    fn small_directories_are_not_cached_and_bound_holds() {
        let (_t, d, fs, dev) = setup(10);
        let c = DirCache::new(Some(dev));
        c.read_sorted(&fs, &d).unwrap();
        assert_eq!(c.len(), 0);
        // More large directories than the bound: the least recently used go, with their watches.
        for i in 0..CACHE_MAX_DIRS + 3 {
            let sub = d.join(format!("s{i}"));
            std::fs::create_dir(&sub).unwrap();
            for j in 0..CACHE_MIN_ENTRIES {
                std::fs::write(sub.join(format!("f{j:05}")), b"").unwrap();
            }
            // Twice: a directory that looks small by its size is watched from its second read.
            c.read_sorted(&fs, &sub).unwrap();
            c.read_sorted(&fs, &sub).unwrap();
        }
        assert_eq!(c.len(), CACHE_MAX_DIRS);
        assert_eq!(c.lock().wds.len(), CACHE_MAX_DIRS);
    }

    #[test]
    fn set_keeps_key_order() {
        let mut v: Vec<Entry> = ["a-b", "a0"].iter().map(|n| Entry { name: (*n).into(), dir: false }).collect();
        set(&mut v, "a", Some(true));
        assert_eq!(names(&v), ["a-b", "a/", "a0"]);
        set(&mut v, "a", Some(false));
        assert_eq!(names(&v), ["a", "a-b", "a0"]);
        set(&mut v, "a0", None);
        set(&mut v, "zz", None);
        assert_eq!(names(&v), ["a", "a-b"]);
    }
}
