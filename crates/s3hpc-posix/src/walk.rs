//! The ordered, lazy walk behind ListObjects: directories are read one at a time, their entries
//! sorted in S3 key order (a directory sorts as `name/`, so `a-b` < `a/x` < `a0`), the walk
//! seeks straight to the start marker and skips whole subtrees the [`Lister`] rolls up. Sorted
//! entry lists of large directories come from [`DirCache`], so paginating a 100k-entry
//! directory, or listing it with one prefix after another, reads and sorts it once.

use std::cmp::Ordering;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use s3hpc_core::listing::{Flow, Lister};
use s3hpc_core::{ListObjectsPage, ListObjectsRequest, ObjectSummary};

use crate::beneath::Beneath;
use crate::dircache::DirCache;

/// One directory entry as the walk sees it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: Box<str>,
    pub dir: bool,
}

pub(crate) fn sort_key(e: &Entry) -> impl Iterator<Item = u8> + '_ {
    e.name.bytes().chain(e.dir.then_some(b'/'))
}

fn cmp_to(e: &Entry, r: &str) -> Ordering {
    sort_key(e).cmp(r.bytes())
}

/// A listing read less than this long after the directory's last change is not cached: file
/// system timestamps can be coarse (a jiffy on Linux; whole seconds on ext4 with small inodes,
/// some NFS servers and other file systems), so a change within the same tick could leave the
/// mtime unchanged. Two seconds covers one-second granularity with margin for clock skew
/// between hosts of a shared file system.
const RACY_NS: i64 = 2_000_000_000;
/// The same on a local file system with nanosecond timestamps from this host's clock (ext4,
/// xfs, btrfs, tmpfs, and the mtime has a non-zero sub-second part: ext4 with 128-byte inodes
/// keeps whole seconds): a change gets a newer mtime once a clock tick (<= 10 ms; Linux stamps
/// files from the coarse clock) has passed, so 100 ms is ample.
const RACY_LOCAL_NS: i64 = 100_000_000;

/// Has timestamp `ts_ns` settled at `now_ns`, so that any later change of the file gets a later
/// timestamp (and a cache keyed by it cannot miss the change)? `local` tells whether the file
/// system is local with fine timestamps from this host's clock (asked only when it matters).
pub(crate) fn settled(ts_ns: i64, now_ns: i64, local: impl FnOnce() -> bool) -> bool {
    let age = now_ns.saturating_sub(ts_ns);
    // Whole-second timestamps (ext4 with 128-byte inodes, ...) show as nanoseconds 0.
    let fine = ts_ns.rem_euclid(1_000_000_000) != 0;
    age > RACY_NS || (age > RACY_LOCAL_NS && fine && local())
}

/// A directory entry offered to the walk's callbacks: its directory (path and, when it could
/// be opened, descriptor, for `*at` calls) and its name.
pub struct At<'a> {
    pub dir: &'a Path,
    pub fd: Option<&'a fs::File>,
    pub name: &'a str,
}

impl At<'_> {
    pub fn path(&self) -> PathBuf {
        self.dir.join(self.name)
    }
}

struct Frame {
    /// Unique within one walk (names the frame for summaries computed ahead).
    id: u64,
    /// Key prefix of this directory: "" for the bucket, "a/b/" below.
    rel: String,
    path: PathBuf,
    /// The directory, opened on first use (`None` inside: it could not be opened).
    fd: Option<Option<fs::File>>,
    entries: Arc<Vec<Entry>>,
    idx: usize,
    /// The directory's own key (`a/b/`, a directory object) has not been offered yet.
    self_pending: bool,
}

/// Fewer files than this are summarized one by one, as the walk reaches them.
const AHEAD_MIN: usize = 32;
/// At most this many summaries are computed ahead at once (a page holds at most 1000).
const AHEAD_MAX: usize = 1000;

/// Threads that summarize files ahead of the walk: the cores, at most 8.
fn ahead_threads() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8))
}

/// Summaries of the files `start..start + items.len()` of the frame `frame`, computed ahead.
#[derive(Default)]
struct Ahead {
    frame: u64,
    start: usize,
    items: Vec<Option<ObjectSummary>>,
}

impl Ahead {
    /// The summary of entry `idx` of `frame` if it was computed ahead (`Some(None)`: the file
    /// vanished or is not a file).
    fn take(&mut self, frame: u64, idx: usize) -> Option<Option<ObjectSummary>> {
        let i = idx.checked_sub(self.start)?;
        (frame == self.frame && i < self.items.len()).then(|| self.items[i].take())
    }

    /// Summarize `batch` (name, key) split over [`ahead_threads`] threads (this one included).
    fn compute(
        frame: u64,
        start: usize,
        batch: &[(&str, String)],
        summary: impl Fn(&str, &str) -> Option<ObjectSummary> + Sync,
    ) -> Ahead {
        let mut items: Vec<Option<ObjectSummary>> = (0..batch.len()).map(|_| None).collect();
        let threads = ahead_threads().min(batch.len() / (AHEAD_MIN / 2)).max(1);
        let per = batch.len().div_ceil(threads);
        let summary = &summary;
        std::thread::scope(|sc| {
            let mut parts = items.chunks_mut(per).zip(batch.chunks(per));
            let first = parts.next();
            for (out, keys) in parts {
                sc.spawn(move || fill(out, keys, summary));
            }
            if let Some((out, keys)) = first {
                fill(out, keys, summary);
            }
        });
        Ahead { frame, start, items }
    }
}

fn fill(
    out: &mut [Option<ObjectSummary>],
    keys: &[(&str, String)],
    summary: &impl Fn(&str, &str) -> Option<ObjectSummary>,
) {
    for (o, (name, key)) in out.iter_mut().zip(keys) {
        *o = summary(name, key);
    }
}

fn read_or_empty(cache: &DirCache, fs: &Beneath, p: &Path) -> io::Result<Arc<Vec<Entry>>> {
    match cache.read_sorted(fs, p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => {
            Ok(Arc::new(Vec::new()))
        }
        r => r,
    }
}

/// One listing page of the bucket at `bdir`. `file_summary` is called for returned file keys
/// only (one stat + one metadata read each, relative to the open directory); `dir_object` for
/// each directory the walk enters (is it a directory object?).
pub fn walk(
    cache: &DirCache,
    fs: &Beneath,
    bdir: &Path,
    req: &ListObjectsRequest,
    file_summary: impl Fn(At, &str) -> Option<ObjectSummary> + Sync,
    dir_object: impl Fn(&Path, &str) -> Option<ObjectSummary>,
) -> io::Result<ListObjectsPage> {
    let mut lister = Lister::new(req);
    if lister.is_done() {
        // Still report a missing bucket.
        fs.metadata(bdir)?;
        return Ok(lister.finish());
    }
    let prefix = req.prefix.as_str();
    let (mut r, incl) = match &req.start_after {
        Some(sa) if sa.as_str() >= prefix => (sa.as_str(), false),
        _ => (prefix, true),
    };

    // Seek: descend along the bound, leaving each level positioned after it.
    let mut stack: Vec<Frame> = Vec::new();
    let mut rel = String::new();
    let mut path = bdir.to_path_buf();
    loop {
        let entries = if stack.is_empty() { cache.read_sorted(fs, &path)? } else { read_or_empty(cache, fs, &path)? };
        let idx = entries.partition_point(|e| match cmp_to(e, r) {
            Ordering::Less => true,
            Ordering::Equal => !incl,
            Ordering::Greater => false,
        });
        let descend = (idx > 0).then(|| &entries[idx - 1]).filter(|e| {
            e.dir && r.len() > e.name.len() && r.as_bytes()[e.name.len()] == b'/' && r.starts_with(&*e.name)
        });
        let next = descend.map(|e| e.name.clone());
        stack.push(Frame {
            id: stack.len() as u64,
            rel: rel.clone(),
            path: path.clone(),
            fd: None,
            entries,
            idx,
            self_pending: false,
        });
        let Some(name) = next else { break };
        rel = format!("{rel}{name}/");
        path = path.join(&*name);
        r = &r[name.len() + 1..];
    }

    let mut next_id = stack.len() as u64;
    // With no delimiter or `/`, a returned file makes every following file of its directory
    // (that still matches the prefix) an object entry too, so their summaries can be computed
    // ahead, in parallel: a listing is one stat + one xattr read per key, latency that adds up
    // on a parallel file system and that spreads over cores here.
    let speculate = matches!(lister.delimiter(), None | Some("/"));
    let mut ahead = Ahead::default();
    let mut skip: Option<String> = None;
    while let Some(top) = stack.last_mut() {
        let flow = if top.self_pending {
            top.self_pending = false;
            let key = top.rel.clone();
            match dir_object(&top.path, &key) {
                Some(s) => lister.offer(&key, || Some(s)),
                None => continue,
            }
        } else {
            let Some(e) = top.entries.get(top.idx) else {
                stack.pop();
                continue;
            };
            top.idx += 1;
            let key = if e.dir { format!("{}{}/", top.rel, e.name) } else { format!("{}{}", top.rel, e.name) };
            if let Some(p) = &skip {
                if key.starts_with(p.as_str()) {
                    continue;
                }
                if !(e.dir && p.starts_with(&key)) {
                    skip = None;
                }
            }
            if !(key.starts_with(prefix) || e.dir && prefix.starts_with(&key)) {
                if key.as_str() > prefix {
                    break;
                }
                continue;
            }
            if e.dir {
                let path = top.path.join(&*e.name);
                let entries = match read_or_empty(cache, fs, &path) {
                    // A subdirectory the caller may not read (`--identity posix`) is left out of
                    // the listing, not the end of it: the rest of the bucket stays listable.
                    Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
                        tracing::warn!("listing {}: skipped {key}: {err}", bdir.display());
                        Arc::new(Vec::new())
                    }
                    r => r?,
                };
                next_id += 1;
                stack.push(Frame { id: next_id, rel: key, path, fd: None, entries, idx: 0, self_pending: true });
                continue;
            }
            let name = e.name.clone();
            let idx = top.idx - 1;
            let remaining = lister.remaining();
            let Frame { id, rel, path, fd, entries, .. } = top;
            let fd = fd.get_or_insert_with(|| fs.open_dir(path).ok()).as_ref();
            lister.offer(&key, || {
                if let Some(s) = ahead.take(*id, idx) {
                    return s;
                }
                if speculate && remaining >= AHEAD_MIN {
                    // This entry and the files after it, up to what the page can take.
                    let batch: Vec<(&str, String)> = entries[idx..]
                        .iter()
                        .take(remaining.min(AHEAD_MAX))
                        .take_while(|e| !e.dir)
                        .map(|e| (&*e.name, format!("{rel}{}", e.name)))
                        .take_while(|(_, k)| k.starts_with(prefix))
                        .collect();
                    if batch.len() >= AHEAD_MIN {
                        ahead =
                            Ahead::compute(*id, idx, &batch, |name, key| file_summary(At { dir: path, fd, name }, key));
                        if let Some(s) = ahead.take(*id, idx) {
                            return s;
                        }
                    }
                }
                file_summary(At { dir: path, fd, name: &name }, &key)
            })
        };
        match flow {
            Flow::Continue => {}
            Flow::SkipPrefix(p) => {
                while stack.last().is_some_and(|f| !f.rel.is_empty() && f.rel.starts_with(p.as_str())) {
                    stack.pop();
                }
                skip = Some(p);
            }
            Flow::Done => break,
        }
    }
    Ok(lister.finish())
}
