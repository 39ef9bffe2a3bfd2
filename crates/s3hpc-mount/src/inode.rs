//! The inode table: names the kernel has looked up, what they stand for in the bucket, and
//! how long their attributes are trusted.

use std::collections::{BTreeSet, HashMap};
use std::time::{Instant, SystemTime};

pub const ROOT: u64 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// Whether an inode exists only in this mount so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// Seen in the bucket (or the root).
    No,
    /// Made by `mkdir` here; nothing below it has been uploaded yet (as far as we know).
    Dir,
    /// A file being written by the handle `fh`; the object appears when it is closed.
    Writing(u64),
}

#[derive(Debug, Clone)]
pub struct Inode {
    pub parent: u64,
    pub name: String,
    /// The object key (files) or the key prefix without its trailing `/` (directories); the
    /// root's is the mount prefix without its `/`.
    pub key: String,
    pub kind: Kind,
    pub size: u64,
    pub etag: String,
    pub mtime: SystemTime,
    pub valid_until: Instant,
    /// The kernel's references (lookup replies not yet forgotten).
    pub lookups: u64,
    /// Open file handles.
    pub opens: u32,
    pub local: Local,
    /// The ETag the kernel's page cache holds data of (set when the file is opened for reading).
    pub cached_etag: Option<String>,
    /// The file system's own attributes, from the store (`--posix-attrs`, s3hpc's extension).
    pub fs: Option<s3hpc_core::fsattr::FsAttr>,
    /// Other names of this inode (hard links, `--posix-attrs`): `(parent, name)` slots that
    /// point here besides `(parent, name)`, which `key` spells.
    pub links: Vec<(u64, String)>,
    /// `--metadata s3fs`: the mode, owner and times in the object's metadata (`None`: none
    /// there, or not read yet), and until when they are trusted (read with a HEAD).
    pub meta: Option<crate::fs::meta::S3fsAttr>,
    pub meta_until: Option<Instant>,
}

impl Inode {
    pub fn fresh(&self, now: Instant) -> bool {
        self.local != Local::No || self.kind == Kind::Dir || now < self.valid_until
    }

    /// Take what a HEAD of the object said (size, time, ETag, s3fs-style attributes), valid
    /// until `until`.
    pub fn take_head(&mut self, info: s3hpc_core::ObjectInfo, until: Instant) {
        self.size = info.size;
        self.mtime = info.last_modified;
        self.valid_until = until;
        self.meta = crate::fs::meta::S3fsAttr::of(&info.meta.user);
        self.meta_until = Some(until);
        self.etag = info.etag;
    }
}

/// What a lookup in the bucket found under a name.
#[derive(Debug, Clone)]
pub enum Found {
    Dir,
    File { size: u64, etag: String, mtime: SystemTime },
    Nothing,
}

pub struct Table {
    pub inodes: HashMap<u64, Inode>,
    pub children: HashMap<(u64, String), u64>,
    /// Names known to be absent, until the instant.
    pub negative: HashMap<(u64, String), Instant>,
    /// Children of a directory that exist only here (local dirs, files being written), so
    /// that a listing shows them.
    pub local_children: HashMap<u64, BTreeSet<String>>,
    next_ino: u64,
    /// Key prefix of the mount (empty or ending with `/`).
    prefix: String,
    /// Counts the namespace changes this mount made (create, mkdir, unlink, rmdir, rename).
    epoch: u64,
    /// The epoch of the last change this mount made to each name: what a lookup or a listing
    /// page fetched before it says about the name is older than what the table knows.
    changed: HashMap<(u64, String), u64>,
    /// Changes before this epoch were forgotten (bounded memory): answers fetched before it
    /// are treated as older than every name.
    forgotten_below: u64,
    /// `--posix-attrs`: the inode of each store inode number seen (hard links of one file are
    /// one inode here). Checked on use: an entry may outlive its inode.
    by_store_ino: HashMap<u64, u64>,
}

/// How many name changes [`Table::changed`] remembers before it forgets the oldest half.
const CHANGES_KEPT: usize = 8192;

impl Table {
    pub fn new(prefix: &str) -> Table {
        let mut inodes = HashMap::new();
        inodes.insert(
            ROOT,
            Inode {
                parent: ROOT,
                name: String::new(),
                key: prefix.trim_end_matches('/').to_string(),
                kind: Kind::Dir,
                size: 0,
                etag: String::new(),
                mtime: SystemTime::now(),
                valid_until: Instant::now(),
                lookups: 1,
                opens: 0,
                local: Local::No,
                cached_etag: None,
                fs: None,
                links: Vec::new(),
                meta: None,
                meta_until: None,
            },
        );
        Table {
            inodes,
            children: HashMap::new(),
            negative: HashMap::new(),
            local_children: HashMap::new(),
            next_ino: ROOT + 1,
            prefix: prefix.to_string(),
            epoch: 0,
            changed: HashMap::new(),
            forgotten_below: 0,
            by_store_ino: HashMap::new(),
        }
    }

    /// The epoch now: keep it with a request whose answer will be installed later (a lookup,
    /// a listing page), and ask [`Table::changed_since`] before installing it.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether this mount changed `name` in `parent` after `epoch` (so an answer fetched at
    /// `epoch` is stale for it).
    pub fn changed_since(&self, parent: u64, name: &str, epoch: u64) -> bool {
        epoch < self.forgotten_below || self.changed.get(&(parent, name.to_string())).is_some_and(|e| *e > epoch)
    }

    /// Record a change of `name` in `parent` made by this mount.
    fn touch(&mut self, parent: u64, name: &str) {
        self.epoch += 1;
        if self.changed.len() >= CHANGES_KEPT {
            let cut = self.epoch - (CHANGES_KEPT / 2) as u64;
            self.changed.retain(|_, e| *e >= cut);
            self.forgotten_below = cut;
        }
        self.changed.insert((parent, name.to_string()), self.epoch);
        // The directory's own times changed (what `--posix-attrs` reports is then fetched
        // again; other directories are always fresh).
        if let Some(d) = self.inodes.get_mut(&parent) {
            d.valid_until = Instant::now();
        }
    }

    /// The key prefix of directory `ino`'s children ("" or ending with `/`).
    pub fn dir_prefix(&self, ino: u64) -> Option<String> {
        if ino == ROOT {
            return Some(self.prefix.clone());
        }
        let i = self.inodes.get(&ino)?;
        (i.kind == Kind::Dir).then(|| format!("{}/", i.key))
    }

    pub fn child(&self, parent: u64, name: &str) -> Option<u64> {
        self.children.get(&(parent, name.to_string())).copied()
    }

    /// Record what the bucket holds under `name` in `parent` (a lookup or a listing entry) and
    /// return the inode, or `None` when nothing is there. Local inodes win over "nothing";
    /// a changed kind gets a new inode number.
    pub fn install(&mut self, parent: u64, name: &str, found: Found, valid_until: Instant) -> Option<u64> {
        let pfx = self.dir_prefix(parent)?;
        let key = format!("{pfx}{name}");
        let slot = (parent, name.to_string());
        let existing = self.children.get(&slot).copied();
        let kind = match &found {
            Found::Dir => Kind::Dir,
            Found::File { .. } => Kind::File,
            Found::Nothing => {
                if let Some(ino) = existing {
                    let i = &self.inodes[&ino];
                    if i.local != Local::No {
                        return Some(ino);
                    }
                    self.children.remove(&slot);
                }
                self.negative.insert(slot, valid_until);
                return None;
            }
        };
        self.negative.remove(&slot);
        if let Some(ino) = existing {
            let i = self.inodes.get_mut(&ino).expect("children point at live inodes");
            if let Local::Writing(_) = i.local {
                return Some(ino);
            }
            if i.kind == kind {
                if let Found::File { size, etag, mtime } = found {
                    i.size = size;
                    i.etag = etag;
                    i.mtime = mtime;
                }
                i.valid_until = valid_until;
                return Some(ino);
            }
            // A file became a directory or back: the old inode lives on until forgotten.
            self.children.remove(&slot);
        }
        let (size, etag, mtime) = match found {
            Found::File { size, etag, mtime } => (size, etag, mtime),
            _ => (0, String::new(), SystemTime::now()),
        };
        Some(self.insert(Inode {
            parent,
            name: name.to_string(),
            key,
            kind,
            size,
            etag,
            mtime,
            valid_until,
            lookups: 0,
            opens: 0,
            local: Local::No,
            cached_etag: None,
            fs: None,
            links: Vec::new(),
            meta: None,
            meta_until: None,
        }))
    }

    /// Add a local inode (mkdir, create) under `parent`.
    pub fn insert_local(&mut self, parent: u64, name: &str, kind: Kind, local: Local) -> Option<u64> {
        let pfx = self.dir_prefix(parent)?;
        self.touch(parent, name);
        let slot = (parent, name.to_string());
        self.negative.remove(&slot);
        self.children.remove(&slot);
        self.local_children.entry(parent).or_default().insert(name.to_string());
        Some(self.insert(Inode {
            parent,
            name: name.to_string(),
            key: format!("{pfx}{name}"),
            kind,
            size: 0,
            etag: String::new(),
            mtime: SystemTime::now(),
            valid_until: Instant::now(),
            lookups: 0,
            opens: 0,
            local,
            cached_etag: None,
            fs: None,
            links: Vec::new(),
            meta: None,
            meta_until: None,
        }))
    }

    fn insert(&mut self, inode: Inode) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.children.insert((inode.parent, inode.name.clone()), ino);
        self.inodes.insert(ino, inode);
        ino
    }

    /// The inode is no longer local (its object was uploaded, or it was found in the bucket).
    pub fn make_remote(&mut self, ino: u64) {
        if let Some(i) = self.inodes.get_mut(&ino) {
            i.local = Local::No;
            let (parent, name) = (i.parent, i.name.clone());
            if let Some(set) = self.local_children.get_mut(&parent) {
                set.remove(&name);
                if set.is_empty() {
                    self.local_children.remove(&parent);
                }
            }
        }
    }

    /// Take `name` out of `parent` (unlink, rmdir, a failed upload); the name is then known
    /// to be absent until `negative_until`.
    pub fn remove_name(&mut self, parent: u64, name: &str, negative_until: Instant) {
        self.touch(parent, name);
        let slot = (parent, name.to_string());
        if let Some(ino) = self.unslot(&slot) {
            if let Some(i) = self.inodes.get_mut(&ino) {
                if i.links.is_empty() && (i.parent, i.name.as_str()) == (parent, name) {
                    i.local = Local::No;
                }
                i.valid_until = Instant::now();
            }
            self.drop_if_unused(ino);
        }
        if let Some(set) = self.local_children.get_mut(&parent) {
            set.remove(name);
            if set.is_empty() {
                self.local_children.remove(&parent);
            }
        }
        self.negative.insert(slot, negative_until);
    }

    /// Take the slot `(parent, name)` out of the directory tree; its inode keeps its other
    /// names (hard links): when the slot was the name its key spells, another name becomes it.
    fn unslot(&mut self, slot: &(u64, String)) -> Option<u64> {
        let ino = self.children.remove(slot)?;
        let promote = {
            let i = self.inodes.get_mut(&ino)?;
            if let Some(k) = i.links.iter().position(|l| l == slot) {
                i.links.swap_remove(k);
                None
            } else if (i.parent, &i.name) == (slot.0, &slot.1) && !i.links.is_empty() {
                Some(i.links.swap_remove(0))
            } else {
                None
            }
        };
        if let Some((p, n)) = promote
            && let Some(pfx) = self.dir_prefix(p)
            && let Some(i) = self.inodes.get_mut(&ino)
        {
            i.key = format!("{pfx}{n}");
            i.parent = p;
            i.name = n;
        }
        Some(ino)
    }

    /// `name` in `parent` is one more name (a hard link) of the inode `ino`: whatever the slot
    /// held is dropped.
    pub fn alias(&mut self, parent: u64, name: &str, ino: u64) -> bool {
        let slot = (parent, name.to_string());
        if !self.inodes.contains_key(&ino) || self.dir_prefix(parent).is_none() {
            return false;
        }
        self.touch(parent, name);
        self.negative.remove(&slot);
        if self.children.get(&slot) == Some(&ino) {
            return true;
        }
        if let Some(old) = self.unslot(&slot) {
            if let Some(i) = self.inodes.get_mut(&old) {
                i.valid_until = Instant::now();
            }
            self.drop_if_unused(old);
        }
        let i = self.inodes.get_mut(&ino).expect("checked");
        if (i.parent, i.name.as_str()) != (parent, name) {
            i.links.push(slot.clone());
        }
        self.children.insert(slot, ino);
        true
    }

    /// Remember that inode `ino` stands for the store's inode `store_ino`.
    pub fn note_store_ino(&mut self, ino: u64, store_ino: u64) {
        if store_ino != 0 {
            if self.by_store_ino.len() > 65536 {
                let inodes = &self.inodes;
                self.by_store_ino.retain(|s, i| inodes.get(i).and_then(|i| i.fs.as_ref()).is_some_and(|a| a.ino == *s));
            }
            self.by_store_ino.insert(store_ino, ino);
        }
    }

    /// The live inode that stands for the store's inode `store_ino` (a file, not a directory).
    pub fn by_store_ino(&self, store_ino: u64) -> Option<u64> {
        let ino = *self.by_store_ino.get(&store_ino)?;
        let i = self.inodes.get(&ino)?;
        let a = i.fs.as_ref()?;
        (store_ino != 0 && a.ino == store_ino && i.kind == Kind::File).then_some(ino)
    }

    /// A file renamed in the bucket: its inode now stands for `key` under `newname` in
    /// `newparent`; whatever was there is dropped, and the old name is free (known absent
    /// until `negative_until`).
    pub fn rename(
        &mut self,
        parent: u64,
        name: &str,
        newparent: u64,
        newname: &str,
        key: String,
        negative_until: Instant,
    ) {
        self.touch(parent, name);
        self.touch(newparent, newname);
        let src = (parent, name.to_string());
        let dst = (newparent, newname.to_string());
        if src != dst && self.children.get(&src).is_some_and(|i| self.children.get(&dst) == Some(i)) {
            // Two names of one file: rename(2) does nothing.
            return;
        }
        if src != dst {
            self.negative.insert(src.clone(), negative_until);
        }
        if src != dst
            && let Some(old) = self.unslot(&dst)
        {
            if let Some(i) = self.inodes.get_mut(&old) {
                i.valid_until = Instant::now();
            }
            self.drop_if_unused(old);
        }
        self.negative.remove(&dst);
        if let Some(ino) = self.children.remove(&src) {
            if let Some(i) = self.inodes.get_mut(&ino) {
                if let Some(l) = i.links.iter_mut().find(|l| **l == src) {
                    // Another name of the file moved; the one its key spells stays.
                    *l = dst.clone();
                } else {
                    i.parent = newparent;
                    i.name = newname.to_string();
                    i.key = key;
                }
            }
            self.children.insert(dst, ino);
        }
    }

    /// A directory renamed (in the bucket, or a local one): its inode now stands for the prefix
    /// `key` under `newname` in `newparent`, and every inode below it gets its key under the new
    /// prefix (children keep their numbers and slots). An empty directory at the destination
    /// is dropped, as rename(2) replaces it.
    pub fn rename_dir(&mut self, parent: u64, name: &str, newparent: u64, newname: &str, key: String) {
        let Some(ino) = self.child(parent, name) else { return };
        let (old, local) = (self.inodes[&ino].key.clone(), self.inodes[&ino].local);
        if let Some(i) = self.child(newparent, newname).filter(|d| *d != ino).and_then(|d| self.inodes.get_mut(&d)) {
            // The replaced directory is gone (a local one too, so that it can be freed).
            i.local = Local::No;
        }
        for (p, n) in [(newparent, newname), (parent, name)] {
            if let Some(set) = self.local_children.get_mut(&p) {
                set.remove(n);
                if set.is_empty() {
                    self.local_children.remove(&p);
                }
            }
        }
        if local != Local::No {
            self.local_children.entry(newparent).or_default().insert(newname.to_string());
        }
        self.rename(parent, name, newparent, newname, key.clone(), Instant::now());
        let (from, to) = (format!("{old}/"), format!("{key}/"));
        for i in self.inodes.values_mut() {
            if let Some(rest) = i.key.strip_prefix(&from) {
                i.key = format!("{to}{rest}");
            }
        }
    }

    /// The kernel dropped `n` references.
    pub fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        if let Some(i) = self.inodes.get_mut(&ino) {
            i.lookups = i.lookups.saturating_sub(n);
        }
        self.drop_if_unused(ino);
    }

    /// Free an inode nobody refers to (kernel, open handles) unless it is local state.
    pub fn drop_if_unused(&mut self, ino: u64) {
        let Some(i) = self.inodes.get(&ino) else {
            return;
        };
        if ino == ROOT || i.lookups > 0 || i.opens > 0 || i.local != Local::No {
            return;
        }
        let mut slots = i.links.clone();
        slots.push((i.parent, i.name.clone()));
        for slot in slots {
            if self.children.get(&slot) == Some(&ino) {
                self.children.remove(&slot);
            }
        }
        self.inodes.remove(&ino);
    }

    /// Whether a directory has local children (files being written, local subdirectories).
    pub fn has_local_children(&self, ino: u64) -> bool {
        self.local_children.get(&ino).is_some_and(|s| !s.is_empty())
    }

    /// Drop expired negative entries once the map grows (bounded memory).
    pub fn prune_negative(&mut self, now: Instant) {
        if self.negative.len() > 4096 {
            self.negative.retain(|_, t| *t > now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn with_store_ino(t: &mut Table, ino: u64, store_ino: u64, nlink: u32) {
        let a = s3hpc_core::fsattr::FsAttr {
            kind: s3hpc_core::fsattr::FsKind::File,
            mode: 0o644,
            uid: 0,
            gid: 0,
            size: 1,
            nlink,
            atime: Default::default(),
            mtime: Default::default(),
            ctime: Default::default(),
            rdev: 0,
            target: None,
            ino: store_ino,
        };
        t.inodes.get_mut(&ino).unwrap().fs = Some(a);
        t.note_store_ino(ino, store_ino);
    }

    #[test]
    fn hard_links_are_one_inode() {
        let mut t = Table::new("");
        let later = Instant::now() + Duration::from_secs(5);
        let f = Found::File { size: 1, etag: "e".into(), mtime: SystemTime::now() };
        let d = t.install(ROOT, "d", Found::Dir, later).unwrap();
        let a = t.install(ROOT, "a", f.clone(), later).unwrap();
        t.inodes.get_mut(&a).unwrap().lookups = 1;
        with_store_ino(&mut t, a, 77, 3);
        assert_eq!(t.by_store_ino(77), Some(a));
        assert_eq!(t.by_store_ino(78), None);
        // Two more names of the file: the same inode.
        assert!(t.alias(ROOT, "b", a));
        assert!(t.alias(d, "c", a));
        assert_eq!((t.child(ROOT, "b"), t.child(d, "c")), (Some(a), Some(a)));
        assert_eq!(t.inodes[&a].links.len(), 2);
        // The name its key spells goes: another name takes over, with its key.
        t.remove_name(ROOT, "a", later);
        assert_eq!(t.child(ROOT, "a"), None);
        assert!(t.inodes.contains_key(&a));
        assert!(["b", "d/c"].contains(&t.inodes[&a].key.as_str()), "{}", t.inodes[&a].key);
        assert_eq!(t.inodes[&a].links.len(), 1);
        // A name that is not the key's moves alone; the key stays.
        let key = t.inodes[&a].key.clone();
        let (lp, ln) = t.inodes[&a].links[0].clone();
        t.rename(lp, &ln, ROOT, "moved", "moved".into(), later);
        assert_eq!(t.child(ROOT, "moved"), Some(a));
        assert_eq!(t.inodes[&a].key, key);
        // rename(2) between two names of one file does nothing.
        let (kp, kn) = (t.inodes[&a].parent, t.inodes[&a].name.clone());
        t.rename(kp, &kn, ROOT, "moved", "moved".into(), later);
        assert_eq!((t.child(kp, &kn), t.child(ROOT, "moved")), (Some(a), Some(a)));
        // Forgotten by the kernel: every name goes with the inode.
        t.forget(a, 1);
        assert!(!t.inodes.contains_key(&a));
        assert_eq!((t.child(kp, &kn), t.child(ROOT, "moved")), (None, None));
        assert_eq!(t.by_store_ino(77), None, "a stale number finds nothing");
        // An alias over a name that held another file drops that one.
        let x = t.install(ROOT, "x", f.clone(), later).unwrap();
        let y = t.install(ROOT, "y", f, later).unwrap();
        t.inodes.get_mut(&x).unwrap().lookups = 1;
        assert!(t.alias(ROOT, "y", x));
        assert!(!t.inodes.contains_key(&y));
        assert!(!t.alias(ROOT, "z", y), "no alias of a dead inode");
    }

    #[test]
    fn install_forget_and_kinds() {
        let mut t = Table::new("p/");
        let later = Instant::now() + Duration::from_secs(5);
        let f = Found::File { size: 3, etag: "e".into(), mtime: SystemTime::now() };
        let a = t.install(ROOT, "a", f.clone(), later).unwrap();
        assert_eq!(t.inodes[&a].key, "p/a");
        assert_eq!(t.install(ROOT, "a", f, later), Some(a));
        // a file that became a directory gets a new inode
        let d = t.install(ROOT, "a", Found::Dir, later).unwrap();
        assert_ne!(a, d);
        assert_eq!(t.dir_prefix(d).unwrap(), "p/a/");
        t.inodes.get_mut(&d).unwrap().lookups = 1;
        t.forget(d, 1);
        assert!(!t.inodes.contains_key(&d));
        assert_eq!(t.install(ROOT, "a", Found::Nothing, later), None);
        assert!(t.negative.contains_key(&(ROOT, "a".to_string())));
        // local inodes survive "nothing" and show as local children
        let l = t.insert_local(ROOT, "new", Kind::Dir, Local::Dir).unwrap();
        assert_eq!(t.install(ROOT, "new", Found::Nothing, later), Some(l));
        assert!(t.has_local_children(ROOT));
        t.make_remote(l);
        assert!(!t.has_local_children(ROOT));
        // a directory renamed: the subtree keeps its numbers, with new keys
        let later2 = Instant::now() + Duration::from_secs(5);
        let top = t.install(ROOT, "top", Found::Dir, later2).unwrap();
        let sub = t.install(top, "sub", Found::Dir, later2).unwrap();
        let leaf = t.install(sub, "leaf", Found::File { size: 1, etag: "l".into(), mtime: SystemTime::now() }, later2);
        let loc = t.insert_local(top, "mine", Kind::Dir, Local::Dir).unwrap();
        let gone = t.install(ROOT, "empty", Found::Dir, later2).unwrap();
        t.rename_dir(ROOT, "top", ROOT, "empty", "p/empty".into());
        assert_eq!(t.child(ROOT, "empty"), Some(top));
        assert_eq!(t.child(ROOT, "top"), None);
        assert!(!t.inodes.contains_key(&gone), "the replaced empty directory is dropped");
        assert_eq!(t.inodes[&sub].key, "p/empty/sub");
        assert_eq!(t.inodes[&leaf.unwrap()].key, "p/empty/sub/leaf");
        assert_eq!(t.inodes[&loc].key, "p/empty/mine");
        assert_eq!(t.dir_prefix(sub).unwrap(), "p/empty/sub/");
        assert!(t.has_local_children(top));
        // a local directory moves between the local children of its parents
        let ld = t.insert_local(ROOT, "ld", Kind::Dir, Local::Dir).unwrap();
        t.rename_dir(ROOT, "ld", sub, "ld2", "p/empty/sub/ld2".into());
        assert_eq!(t.child(sub, "ld2"), Some(ld));
        assert!(t.local_children.get(&sub).is_some_and(|s| s.contains("ld2")));
        assert!(!t.local_children.get(&ROOT).is_some_and(|s| s.contains("ld")));
        // what this mount changed after an epoch is newer than answers fetched at it
        let e = t.epoch();
        let src = t.install(ROOT, "src", Found::File { size: 1, etag: "s".into(), mtime: SystemTime::now() }, later);
        assert!(!t.changed_since(ROOT, "src", e), "an install is not a change of this mount");
        t.rename(ROOT, "src", ROOT, "dst", "p/dst".into(), later);
        assert!(t.changed_since(ROOT, "src", e) && t.changed_since(ROOT, "dst", e));
        assert!(!t.changed_since(ROOT, "src", t.epoch()));
        assert_eq!(t.child(ROOT, "dst"), src);
        assert!(
            t.negative.get(&(ROOT, "src".to_string())).is_some_and(|u| *u == later),
            "the old name is known absent"
        );
        t.remove_name(ROOT, "dst", later);
        assert!(t.changed_since(ROOT, "dst", e + 2));
        // memory stays bounded; answers older than what was forgotten count as stale
        let mut t2 = Table::new("");
        let e0 = t2.epoch();
        for i in 0..CHANGES_KEPT + 10 {
            t2.remove_name(ROOT, &format!("n{i}"), Instant::now());
        }
        assert!(t2.changed.len() <= CHANGES_KEPT);
        assert!(t2.changed_since(ROOT, "never-changed", e0));
        assert!(!t2.changed_since(ROOT, "never-changed", t2.epoch()));
        // a file's dir_prefix is None
        let f2 = t.install(ROOT, "f", Found::File { size: 0, etag: "x".into(), mtime: SystemTime::now() }, later);
        assert!(t.dir_prefix(f2.unwrap()).is_none());
    }
}
