//! Directory listings of the mount: one page of ListObjectsV2 at a time, merged with the names
//! made here (mkdir, files being written) that the bucket does not show yet.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::time::SystemTime;

use fuser::FileType;
use s3hpc_core::Error;

use super::{Ctx, lock, valid_name};
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
pub(super) fn entry_ino(ctx: &Ctx, t: &mut Table, d: &DirState, name: &str, found: &Found) -> Option<u64> {
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

/// The replies of readdir and readdirplus, as the listing code uses them.
pub(super) trait DirReply: Send + 'static {
    fn ok(self);
    fn error(self, e: fuser::Errno);
}

impl DirReply for fuser::ReplyDirectory {
    fn ok(self) {
        fuser::ReplyDirectory::ok(self)
    }
    fn error(self, e: fuser::Errno) {
        fuser::ReplyDirectory::error(self, e)
    }
}

impl DirReply for fuser::ReplyDirectoryPlus {
    fn ok(self) {
        fuser::ReplyDirectoryPlus::ok(self)
    }
    fn error(self, e: fuser::Errno) {
        fuser::ReplyDirectoryPlus::error(self, e)
    }
}

pub(super) fn kind_of(found: &Found) -> FileType {
    match found {
        Found::File { .. } => FileType::RegularFile,
        _ => FileType::Directory,
    }
}
