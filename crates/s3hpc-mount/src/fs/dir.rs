//! Directory listings of the mount: one page of ListObjectsV2 at a time, merged with the names
//! made here (mkdir, files being written) that the bucket does not show yet, handed to the
//! kernel's reply buffer ([`DirSink`]) by readdir and readdirplus.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::time::{Duration, Instant, SystemTime};

use fuser::{Errno, FileAttr, FileType};
use s3hpc_core::Error;

use super::{Ctx, Handle, lock, valid_name};
use crate::errors::errno;
use crate::inode::{Found, Kind, Local, Table};

/// A directory being listed: one page of entries at a time (no full listing in memory).
pub(super) struct DirState {
    pub(super) ino: u64,
    pub(super) parent: u64,
    pub(super) prefix: String,
    /// Stream position of `entries[0]` (0 is ".", 1 is "..").
    pub(super) base: u64,
    pub(super) entries: Vec<(String, Found)>,
    /// The table's epoch when `entries` were listed: names this mount changed since then are
    /// answered from the table, not from the page.
    pub(super) epoch: u64,
    started: bool,
    marker: Option<String>,
    listed_all: bool,
    locals_done: bool,
    seen_local: HashSet<String>,
}

impl DirState {
    pub(super) fn new(ino: u64, parent: u64, prefix: String) -> DirState {
        DirState {
            ino,
            parent,
            prefix,
            base: 0,
            entries: Vec::new(),
            epoch: 0,
            started: false,
            marker: None,
            listed_all: false,
            locals_done: false,
            seen_local: HashSet::new(),
        }
    }

    /// The listed directory was renamed (its prefix is already the new one): continue after
    /// the same name under the new prefix.
    pub(super) fn rekey_marker(&mut self, src: &str, dst: &str) {
        if let Some(rest) = self.marker.as_deref().and_then(|m| m.strip_prefix(src)) {
            self.marker = Some(format!("{dst}{rest}"));
        }
    }

    fn exhausted(&self) -> bool {
        self.started && self.listed_all && self.locals_done
    }

    /// Move on to the next batch of entries.
    async fn fetch_next(&mut self, ctx: &Ctx) -> Result<(), Error> {
        if !self.started {
            self.started = true;
            self.base = 0;
            self.entries = vec![(".".into(), Found::Dir), ("..".into(), Found::Dir)];
            return Ok(());
        }
        self.base += self.entries.len() as u64;
        self.entries.clear();
        if !self.listed_all {
            self.epoch = lock(&ctx.table).epoch();
            let page = ctx.list(&self.prefix, self.marker.clone(), s3hpc_core::MAX_KEYS).await?;
            let mut dirs = HashSet::new();
            for cp in &page.common_prefixes {
                let name = cp.strip_prefix(&self.prefix).unwrap_or(cp).trim_end_matches('/');
                if valid_name(OsStr::new(name)).is_some() && dirs.insert(name.to_string()) {
                    self.entries.push((name.to_string(), Found::Dir));
                }
            }
            for o in &page.objects {
                let name = o.key.strip_prefix(&self.prefix).unwrap_or(&o.key);
                if valid_name(OsStr::new(name)).is_some() && !dirs.contains(name) {
                    self.entries.push((
                        name.to_string(),
                        Found::File { size: o.size, etag: o.etag.clone(), mtime: o.last_modified },
                    ));
                }
            }
            self.entries.sort_by(|a, b| a.0.cmp(&b.0));
            self.marker = page.next_marker.clone();
            self.listed_all = !page.is_truncated || page.next_marker.is_none();
            let t = lock(&ctx.table);
            if let Some(locals) = t.local_children.get(&self.ino) {
                for (n, _) in &self.entries {
                    if locals.contains(n) {
                        self.seen_local.insert(n.clone());
                    }
                }
            }
            return Ok(());
        }
        if !self.locals_done {
            self.locals_done = true;
            let t = lock(&ctx.table);
            if let Some(locals) = t.local_children.get(&self.ino) {
                for n in locals {
                    if self.seen_local.contains(n) {
                        continue;
                    }
                    if let Some(ino) = t.child(self.ino, n) {
                        let found = match t.inodes[&ino].kind {
                            Kind::Dir => Found::Dir,
                            Kind::File => Found::File { size: 0, etag: String::new(), mtime: SystemTime::now() },
                        };
                        self.entries.push((n.clone(), found));
                    }
                }
            }
        }
        Ok(())
    }

    /// Position the window at stream offset `offset`; `false` when the listing is over.
    pub(super) async fn seek(&mut self, offset: u64, ctx: &Ctx) -> Result<bool, Error> {
        if !self.started || offset < self.base {
            *self = DirState::new(self.ino, self.parent, std::mem::take(&mut self.prefix));
            self.fetch_next(ctx).await?;
        }
        loop {
            if offset < self.base + self.entries.len() as u64 {
                return Ok(true);
            }
            if self.exhausted() {
                return Ok(false);
            }
            self.fetch_next(ctx).await?;
        }
    }
}

/// The inode a listing entry stands for (installing it with the listing's attributes).
fn entry_ino(ctx: &Ctx, t: &mut Table, d: &DirState, name: &str, found: &Found) -> Option<u64> {
    match name {
        "." => Some(d.ino),
        ".." => Some(d.parent),
        _ => {
            if let Some(ino) = t.child(d.ino, name)
                && t.inodes.get(&ino).is_some_and(|i| i.local != Local::No)
            {
                return Some(ino);
            }
            if t.changed_since(d.ino, name, d.epoch) {
                // This mount created, removed or renamed the name after the page was listed
                // (a page is handed out over many READDIRPLUS calls, the directory unlocked in
                // between): the table is newer. A name gone since is left out.
                return t.child(d.ino, name);
            }
            t.install(d.ino, name, found.clone(), ctx.until())
        }
    }
}

/// One entry of a listing as the kernel gets it.
pub(super) struct DirEntry<'a> {
    pub ino: u64,
    /// The stream offset of the entry after this one (where a next readdir goes on).
    pub next: u64,
    pub name: &'a str,
    pub kind: FileType,
    /// readdirplus: the entry's attributes and how long the kernel may keep them.
    pub attr: Option<(FileAttr, Duration)>,
}

/// Where a listing's entries go (the kernel's reply buffer): `add` answers `true` when it is
/// full, the entry not taken.
pub(super) trait DirSink: Send {
    fn add(&mut self, e: DirEntry<'_>) -> bool;
}

impl Ctx {
    /// opendir of `ino`: a listing handle, positioned before ".".
    pub(super) fn opendir(&self, ino: u64) -> Result<u64, Errno> {
        let t = lock(&self.table);
        let i = t.inodes.get(&ino).ok_or(Errno::ENOENT)?;
        let prefix = t.dir_prefix(ino).ok_or(Errno::ENOTDIR)?;
        let parent = i.parent;
        drop(t);
        Ok(self.new_fh(Handle::Dir(tokio::sync::Mutex::new(DirState::new(ino, parent, prefix)))))
    }

    /// releasedir: the listing handle `fh` is gone.
    pub(super) fn releasedir(&self, fh: u64) {
        lock(&self.handles).remove(&fh);
    }

    /// readdir (`plus`: readdirplus) of the open listing `fh` from the stream offset `offset`:
    /// the entries go to `out` until it is full. A readdirplus entry taken (not "." or "..")
    /// counts as a lookup the kernel will forget. With `--metadata s3fs` a symlink or special
    /// file known here shows its type, and a listing's attributes (which carry no metadata)
    /// are kept by the kernel only while the entry's are fresh.
    pub(super) async fn readdir(&self, fh: u64, offset: u64, plus: bool, out: &mut impl DirSink) -> Result<(), Errno> {
        let h = self.handle(fuser::FileHandle(fh)).ok_or(Errno::EBADF)?;
        let Handle::Dir(d) = &*h else {
            return Err(Errno::EBADF);
        };
        let mut d = d.lock().await;
        match d.seek(offset, self).await {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => return Err(errno(&e, "list", &d.prefix)),
        }
        let mut t = lock(&self.table);
        let start = (offset - d.base) as usize;
        for (k, (name, found)) in d.entries.iter().enumerate().skip(start) {
            let Some(ino) = entry_ino(self, &mut t, &d, name, found) else {
                continue;
            };
            let next = d.base + k as u64 + 1;
            if !plus {
                let kind = t
                    .inodes
                    .get(&ino)
                    .and_then(|i| i.meta.as_ref().filter(|_| self.opts.s3fs_metadata && i.kind == Kind::File))
                    .map_or_else(|| kind_of(found), |m| m.file_type());
                if out.add(DirEntry { ino, next, name, kind, attr: None }) {
                    break;
                }
                continue;
            }
            let Some(i) = t.inodes.get(&ino) else {
                continue;
            };
            let attr = self.attr(ino, i);
            let ttl =
                if self.opts.s3fs_metadata && !self.fresh(i, Instant::now()) { Duration::ZERO } else { self.ttl() };
            if out.add(DirEntry { ino, next, name, kind: attr.kind, attr: Some((attr, ttl)) }) {
                break;
            }
            if name != "." && name != ".." {
                t.inodes.get_mut(&ino).expect("present").lookups += 1;
            }
        }
        Ok(())
    }
}

fn kind_of(found: &Found) -> FileType {
    match found {
        Found::File { .. } => FileType::RegularFile,
        _ => FileType::Directory,
    }
}

#[cfg(test)]
mod tests {
    use super::super::ops::tests::{OWNER, found, fs_over, put, store};
    use super::*;
    use crate::inode::ROOT;

    /// A reply buffer that holds `room` entries.
    struct Sink {
        room: usize,
        got: Vec<(u64, u64, String, FileType, Option<Duration>)>,
    }

    impl DirSink for Sink {
        fn add(&mut self, e: DirEntry<'_>) -> bool {
            if self.got.len() == self.room {
                return true;
            }
            self.got.push((e.ino, e.next, e.name.to_string(), e.kind, e.attr.map(|(_, ttl)| ttl)));
            false
        }
    }

    fn sink(room: usize) -> Sink {
        Sink { room, got: Vec::new() }
    }

    fn names(s: &Sink) -> Vec<&str> {
        s.got.iter().map(|g| g.2.as_str()).collect()
    }

    /// Read the listing `fh` from `offset` as the kernel does: a call per batch of at most
    /// `room` entries, each going on after the last entry taken, until one brings nothing.
    async fn read_all(ctx: &Ctx, fh: u64, mut offset: u64, plus: bool, room: usize) -> Sink {
        let mut all = sink(usize::MAX);
        loop {
            let mut out = sink(room);
            ctx.readdir(fh, offset, plus, &mut out).await.unwrap();
            let Some(last) = out.got.last() else {
                return all;
            };
            offset = last.1;
            all.got.append(&mut out.got);
        }
    }

    #[tokio::test]
    async fn readdir_pages_through_a_listing_and_counts_lookups() {
        let s = store().await;
        for k in ["a", "b", "sub/x", "c"] {
            put(&s, k, b"1").await;
        }
        let ctx = fs_over(&s, |_| {}).await;
        // A directory made here (nothing of it in the bucket) shows too, after the listing.
        found(ctx.mkdir(OWNER, ROOT, "local", 0o755, 0).await.unwrap());
        let fh = ctx.opendir(ROOT).unwrap();
        // A call gives what the buffer holds of one batch ("." and ".." first, then a page of
        // the bucket's listing): an entry that does not fit waits for the next call.
        let mut out = sink(1);
        ctx.readdir(fh, 0, true, &mut out).await.unwrap();
        assert_eq!(names(&out), ["."]);
        let mut out = sink(100);
        ctx.readdir(fh, 2, true, &mut out).await.unwrap();
        assert_eq!(names(&out), ["a", "b", "c", "sub"]);
        assert_eq!(out.got[3].3, FileType::Directory);
        assert_eq!(out.got[0].4, Some(ctx.ttl()));
        let a = out.got[0].0;
        assert_eq!(lock(&ctx.table).inodes[&a].lookups, 1, "an entry taken is a lookup");
        // Two at a time from the start: every name once, in order, the local one last.
        let all = read_all(&ctx, fh, 0, true, 2).await;
        assert_eq!(names(&all), [".", "..", "a", "b", "c", "sub", "local"]);
        assert_eq!(lock(&ctx.table).inodes[&a].lookups, 2);
        // An entry that did not fit is not counted: "b" was taken once in each full reading.
        let mut one = sink(0);
        ctx.readdir(fh, 3, true, &mut one).await.unwrap();
        assert_eq!(lock(&ctx.table).inodes[&all.got[3].0].lookups, 2);
        // Plain readdir: names and types, no attributes, no lookups.
        let plain = read_all(&ctx, fh, 0, false, 100).await;
        assert_eq!(names(&plain), [".", "..", "a", "b", "c", "sub", "local"]);
        assert!(plain.got.iter().all(|g| g.4.is_none()));
        assert_eq!(lock(&ctx.table).inodes[&a].lookups, 2);
        ctx.releasedir(fh);
        assert_eq!(ctx.readdir(fh, 0, true, &mut sink(1)).await, Err(Errno::EBADF));
        // opendir of a file, of nothing.
        assert_eq!(ctx.opendir(a).err(), Some(Errno::ENOTDIR));
        assert_eq!(ctx.opendir(999).err(), Some(Errno::ENOENT));
    }

    #[tokio::test]
    async fn s3fs_metadata_listings_show_types_and_stale_attributes_expire_at_once() {
        let s = store().await;
        put(&s, "plain", b"1").await;
        let ctx = fs_over(&s, |o| o.s3fs_metadata = true).await;
        found(ctx.symlink(OWNER, ROOT, "sl", "plain").await.unwrap());
        let fh = ctx.opendir(ROOT).unwrap();
        let out = read_all(&ctx, fh, 0, false, 100).await;
        let kind = |n: &str| out.got.iter().find(|g| g.2 == n).unwrap().3;
        assert_eq!((kind("sl"), kind("plain")), (FileType::Symlink, FileType::RegularFile));
        // readdirplus: a file whose metadata was never read (a listing carries none) is kept
        // by the kernel for no time; the symlink's, read when it was made, for the TTL.
        let plus = read_all(&ctx, fh, 0, true, 100).await;
        let ttl = |n: &str| plus.got.iter().find(|g| g.2 == n).unwrap().4.unwrap();
        assert_eq!((ttl("plain"), ttl("sl")), (Duration::ZERO, ctx.ttl()));
    }
}
