//! A bounded in-memory cache of object records read from xattrs.
//!
//! Reading an xattr costs far more than a `stat` on ext4 (the in-inode xattr area is read from
//! the inode's buffer on every call; measured ~7 us against ~1.5 us for the `stat`), and HEAD,
//! GET and listings need both. An entry is keyed by (device, inode) and stamped with size,
//! mtime and ctime: every change of the file's content or xattrs (by this store, another
//! process or a POSIX tool) moves its ctime, so a stamp that still matches a fresh `stat`
//! proves the cached record is the one on disk. Only records whose ctime is older than the
//! file system's timestamp granularity (see [`DirCache`](crate::dircache::DirCache)) are cached, so
//! a second change within the same clock tick cannot hide behind an unchanged ctime.
//! Sidecar records are never cached (their changes do not touch the object's ctime).

use std::collections::HashMap;
use std::sync::Mutex;

use s3hpc_core::Checksum;

use crate::meta::Record;

const SHARDS: usize = 16;
/// Entries per shard: at most `SHARDS * SHARD_CAP` (131072) entries of ~110-170 bytes (the ETag,
/// and checksum of a plain object, or the encoded record, plus key, stamp and table overhead),
/// at most about 21 MiB, so
/// listings of directories of 100k objects are served from the cache. A full shard drops an
/// eighth of its entries (a different, pseudo-random eighth each time), so a working set
/// somewhat larger than the cache still mostly hits instead of thrashing.
const SHARD_CAP: usize = 8192;

/// What must be unchanged for a cached record to be current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

/// FxHash-style mixing of (device, inode): cheap, and inodes are not chosen by clients.
#[derive(Default, Clone, Copy)]
pub struct InoHasher(u64);

impl std::hash::Hasher for InoHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// A cached record: plain ones (an ETag and at most a whole-object checksum, the common case) by
/// their ETag and checksum, so a hit costs no decoding; others as their encoding.
enum Cached {
    Plain(Box<str>, Option<Checksum>),
    Encoded(Box<[u8]>),
}

/// A cache hit: the ETag and checksum of a plain record (size, mtime and inode are the stamp's),
/// or the record.
pub enum Hit {
    Plain(String, Option<Checksum>),
    Record(Box<Record>),
}

type Shard = Mutex<HashMap<(u64, u64), (Stamp, Cached), std::hash::BuildHasherDefault<InoHasher>>>;

#[derive(Default)]
pub struct RecordCache {
    shards: [Shard; SHARDS],
    evictions: std::sync::atomic::AtomicU64,
}

impl RecordCache {
    fn shard(&self, dev: u64, ino: u64) -> &Shard {
        &self.shards[(ino ^ dev.rotate_left(17)) as usize % SHARDS]
    }

    pub fn get(&self, dev: u64, ino: u64, stamp: Stamp) -> Option<Record> {
        Some(match self.lookup(dev, ino, stamp)? {
            Hit::Plain(etag, checksum) => {
                Record { size: stamp.size, mtime_ns: stamp.mtime_ns, ino, etag, checksum, ..Default::default() }
            }
            Hit::Record(r) => *r,
        })
    }

    /// As [`Self::get`], without building a [`Record`] for a plain one (HEAD and GET answer
    /// from its ETag and the stamp; a `Record` is some 450 bytes to fill and move).
    pub fn lookup(&self, dev: u64, ino: u64, stamp: Stamp) -> Option<Hit> {
        let m = self.shard(dev, ino).lock().unwrap_or_else(|p| p.into_inner());
        match &m.get(&(dev, ino)).filter(|(s, _)| *s == stamp)?.1 {
            Cached::Plain(etag, checksum) => Some(Hit::Plain(String::from(&**etag), checksum.clone())),
            Cached::Encoded(enc) => Record::decode(enc).map(|r| Hit::Record(Box::new(r))),
        }
    }

    /// The ETag of the cached record, if there is one with this stamp (listings).
    pub fn get_etag(&self, dev: u64, ino: u64, stamp: Stamp) -> Option<String> {
        let m = self.shard(dev, ino).lock().unwrap_or_else(|p| p.into_inner());
        match &m.get(&(dev, ino)).filter(|(s, _)| *s == stamp)?.1 {
            Cached::Plain(etag, _) => Some(String::from(&**etag)),
            Cached::Encoded(enc) => Record::decode_etag(enc),
        }
    }

    /// Cache `rec` (read from the xattr, valid for the file with this stamp; `enc` is its encoding).
    pub fn put(&self, dev: u64, ino: u64, stamp: Stamp, rec: &Record, enc: &[u8]) {
        let value = if rec.is_plain(stamp.size, stamp.mtime_ns, ino) {
            Cached::Plain(rec.etag.as_str().into(), rec.checksum.clone())
        } else {
            Cached::Encoded(enc.into())
        };
        let mut m = self.shard(dev, ino).lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= SHARD_CAP && !m.contains_key(&(dev, ino)) {
            let round = self.evictions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            m.retain(|&(d, i), _| (i ^ d).wrapping_add(round).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61 != 0);
        }
        m.insert((dev, ino), (stamp, value));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_must_match_and_memory_is_bounded() {
        let c = RecordCache::default();
        let st = Stamp { size: 1, mtime_ns: 2, ctime_ns: 3 };
        let rec = Record { etag: "e".into(), ino: 9, size: 1, mtime_ns: 2, ..Default::default() };
        c.put(1, 9, st, &rec, &rec.encode());
        assert_eq!(c.get(1, 9, st), Some(rec.clone()));
        assert_eq!(c.get_etag(1, 9, st), Some("e".to_string()));
        // A record with more than an ETag comes back whole.
        let mut full = Record { etag: "f".into(), ino: 10, size: 1, mtime_ns: 2, ..Default::default() };
        full.meta.content_type = Some("text/plain".into());
        full.tags = vec![("k".into(), "v".into())];
        c.put(1, 10, st, &full, &full.encode());
        assert_eq!(c.get(1, 10, st), Some(full.clone()));
        assert_eq!(c.get_etag(1, 10, st), Some("f".to_string()));
        // HEAD/GET's lookup: the ETag alone for the plain one, the whole record for the other.
        assert!(matches!(c.lookup(1, 9, st), Some(Hit::Plain(e, None)) if e == "e"));
        assert!(matches!(c.lookup(1, 10, st), Some(Hit::Record(r)) if *r == full));
        // A PUT's whole-object checksum (every new object has one by default) keeps it plain.
        let sum = Checksum { algorithm: s3hpc_core::ChecksumAlgorithm::Crc64Nvme, value: "AAAAAAAAAAA=".into() };
        let summed = Record {
            etag: "s".into(),
            ino: 11,
            size: 1,
            mtime_ns: 2,
            checksum: Some(sum.clone()),
            ..Default::default()
        };
        c.put(1, 11, st, &summed, &summed.encode());
        assert!(matches!(c.lookup(1, 11, st), Some(Hit::Plain(e, Some(s))) if e == "s" && s == sum));
        assert_eq!(c.get(1, 11, st), Some(summed.clone()));
        assert!(c.lookup(1, 10, Stamp { size: 2, ..st }).is_none(), "another size must miss");
        assert!(c.get(1, 9, Stamp { ctime_ns: 4, ..st }).is_none(), "a newer ctime must miss");
        assert!(c.get(2, 9, st).is_none(), "another device must miss");
        for i in 0..(SHARDS * SHARD_CAP * 3) as u64 {
            c.put(1, i, st, &rec, &rec.encode());
        }
        assert!(c.len() <= SHARDS * SHARD_CAP);
    }
}
