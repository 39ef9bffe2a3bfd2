//! The metadata record kept with every object (one `user.s3hpc` xattr, or a sidecar file):
//! a compact, versioned binary encoding of the object's etag, checksum, part sizes, S3
//! metadata and tags, plus the size/mtime (and inode) of the file it describes, so a record
//! whose file was changed behind our back by a POSIX tool is recognised as stale and ignored.

use std::collections::BTreeMap;

use s3hpc_core::lock::{LockMode, ObjectLock, Retention};
use s3hpc_core::{Checksum, ChecksumAlgorithm, ChecksumType, ObjectMeta, Tags};

/// Encoding version (first byte). The encoding is compact on purpose: ext4 keeps an xattr inside
/// the inode only while the value stays under ~64 bytes (256-byte inodes); a larger one costs an
/// extra 4 KiB block per object. A plain object's record is about 40 bytes.
const VERSION: u8 = 2;
/// An xattr value that says "the record is in the sidecar file" (xattr space too small).
pub const SIDECAR_POINTER: &[u8; 4] = b"S3H>";

/// Everything stored about an object, part or upload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Size of the file the record describes (objects and parts).
    pub size: u64,
    /// mtime of that file, nanoseconds since the epoch; for directory objects the time of the put.
    pub mtime_ns: i64,
    /// Inode of the file (a copy with preserved xattrs or a sidecar of another inode is stale).
    pub ino: u64,
    pub etag: String,
    pub checksum: Option<Checksum>,
    pub part_sizes: Vec<u64>,
    /// The parts' checksums of an object completed from a COMPOSITE upload (see
    /// `ObjectInfo::part_checksums`). Encoded after the algorithm byte, whose bit 5 says they
    /// follow, so records without them are byte for byte what stores predating them wrote.
    pub part_checksums: Vec<String>,
    pub meta: ObjectMeta,
    pub tags: Tags,
    /// Content of a directory object (kept in the record: a directory cannot hold bytes).
    pub inline: Option<Vec<u8>>,
    /// Key (multipart upload records).
    pub key: String,
    /// Checksum algorithm chosen at CreateMultipartUpload.
    pub algorithm: Option<ChecksumAlgorithm>,
    /// Checksum type of the upload (`Some` exactly when `algorithm` is). Kept in the algorithm's
    /// byte: bit 4 set means FULL_OBJECT, clear COMPOSITE (as every upload recorded before the
    /// type was kept), so older records still decode.
    pub checksum_type: Option<ChecksumType>,
    /// The object's version id on a versioned bucket (32 lower-case hex digits; `None`: the
    /// null version). Encoded as 16 trailing bytes, absent for the null version, so records
    /// written before versioning existed decode unchanged.
    pub version_id: Option<String>,
    /// Object lock retention and legal hold (also the lock an upload asked for). Encoded as
    /// [`LOCK_LEN`] trailing bytes after the version id, absent when empty, so records without
    /// a lock are byte for byte what builds before object lock wrote.
    pub lock: ObjectLock,
}

/// The lock block: `L`, a flags byte (bits 0-1 the mode: 0 none, 1 GOVERNANCE, 2 COMPLIANCE;
/// bits 2-3 the legal hold: 0 never set, 1 OFF, 2 ON), the retain-until date in milliseconds
/// since the epoch (i64, little-endian).
const LOCK_LEN: usize = 10;

fn encode_lock(l: &ObjectLock, out: &mut Vec<u8>) {
    if l.is_empty() {
        return;
    }
    let mode = match l.retention.map(|r| r.mode) {
        None => 0u8,
        Some(LockMode::Governance) => 1,
        Some(LockMode::Compliance) => 2,
    };
    let hold = match l.legal_hold {
        None => 0u8,
        Some(false) => 1,
        Some(true) => 2,
    };
    let ms = l
        .retention
        .map(|r| match r.until.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_millis() as i64,
            Err(e) => -(e.duration().as_millis() as i64),
        })
        .unwrap_or(0);
    out.push(b'L');
    out.push(mode | (hold << 2));
    out.extend_from_slice(&ms.to_le_bytes());
}

fn decode_lock(b: &[u8]) -> Option<ObjectLock> {
    let (&[tag, flags], ms) = b.split_first_chunk::<2>()?;
    if tag != b'L' || flags & !0x0f != 0 || ms.len() != 8 {
        return None;
    }
    let ms = i64::from_le_bytes(ms.try_into().ok()?);
    let until = if ms >= 0 {
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64)
    } else {
        std::time::UNIX_EPOCH - std::time::Duration::from_millis(ms.unsigned_abs())
    };
    let retention = match flags & 3 {
        0 => None,
        1 => Some(Retention { mode: LockMode::Governance, until }),
        2 => Some(Retention { mode: LockMode::Compliance, until }),
        _ => return None,
    };
    let legal_hold = match flags >> 2 {
        0 => None,
        1 => Some(false),
        2 => Some(true),
        _ => return None,
    };
    let l = ObjectLock { retention, legal_hold };
    (!l.is_empty()).then_some(l)
}

/// Bit of the upload's algorithm byte that marks a FULL_OBJECT upload.
const FULL_OBJECT_BIT: u8 = 0x10;
/// Bit of the algorithm byte that says the part checksums follow it.
const PART_CHECKSUMS_BIT: u8 = 0x20;

fn alg_index(a: Option<ChecksumAlgorithm>) -> u8 {
    match a {
        None => 0,
        Some(a) => ChecksumAlgorithm::ALL.iter().position(|x| *x == a).map(|i| i as u8 + 1).unwrap_or(0),
    }
}

fn alg_from(i: u8) -> Option<Option<ChecksumAlgorithm>> {
    if i == 0 { Some(None) } else { ChecksumAlgorithm::ALL.get(i as usize - 1).map(|a| Some(*a)) }
}

/// 32 lower-case hex digits as 16 bytes.
fn hex16(s: &str) -> Option<[u8; 16]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let s: &[u8; 32] = s.as_bytes().try_into().ok()?;
    let mut out = [0u8; 16];
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

struct W(Vec<u8>);

impl W {
    fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn pairs<'a>(&mut self, it: impl ExactSizeIterator<Item = (&'a String, &'a String)>) {
        self.var(it.len() as u64);
        for (k, v) in it {
            self.bytes(k.as_bytes());
            self.bytes(v.as_bytes());
        }
    }
    fn etag(&mut self, e: &str) {
        // MD5 ETags (and fast / multipart ones, hex + "-N") are kept as 16 binary bytes.
        let (h, n) = match e.split_once('-') {
            Some((h, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0') => {
                (h, n.parse::<u64>().ok())
            }
            _ => (e, None),
        };
        match (hex16(h), n, e.contains('-')) {
            (Some(b), None, false) => {
                self.0.push(1);
                self.0.extend_from_slice(&b);
            }
            (Some(b), Some(n), true) => {
                self.0.push(2);
                self.0.extend_from_slice(&b);
                self.var(n);
            }
            _ => {
                self.0.push(0);
                self.bytes(e.as_bytes());
            }
        }
    }
}

/// 16 bytes as 32 lower-case hex digits, then `-n` if given (decoded on every HEAD and listed
/// key, so without the formatting machinery).
fn hex32(b: &[u8], n: Option<u64>) -> String {
    let mut s = String::with_capacity(32 + 1 + 20);
    s3hpc_core::checksum::push_hex(&mut s, &b[..b.len().min(16)]);
    if let Some(mut n) = n {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        s.push('-');
        s.extend(digits[i..].iter().map(|&d| d as char));
    }
    s
}

struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn var(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn len(&mut self) -> Option<usize> {
        let n = self.var()? as usize;
        (n <= self.0.len()).then_some(n)
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
    fn pairs(&mut self) -> Option<Vec<(String, String)>> {
        let n = self.len()?;
        (0..n).map(|_| Some((self.string()?, self.string()?))).collect()
    }
    fn etag(&mut self) -> Option<String> {
        match self.u8()? {
            0 => self.string(),
            1 => Some(hex32(self.take(16)?, None)),
            2 => {
                let b = self.take(16)?;
                Some(hex32(b, Some(self.var()?)))
            }
            _ => None,
        }
    }
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = W(Vec::with_capacity(64));
        w.0.push(VERSION);
        w.var(self.size);
        w.var(self.mtime_ns as u64);
        w.var(self.ino);
        w.etag(&self.etag);
        match &self.checksum {
            None => w.0.push(0),
            Some(c) => {
                w.0.push(alg_index(Some(c.algorithm)));
                w.bytes(c.value.as_bytes());
            }
        }
        w.var(self.part_sizes.len() as u64);
        for p in &self.part_sizes {
            w.var(*p);
        }
        let m = &self.meta;
        let fields = [
            &m.content_type,
            &m.content_encoding,
            &m.content_disposition,
            &m.content_language,
            &m.cache_control,
            &m.expires,
        ];
        let mut flags = 0u8;
        for (i, f) in fields.iter().enumerate() {
            if f.is_some() {
                flags |= 1 << i;
            }
        }
        if self.inline.is_some() {
            flags |= 1 << 6;
        }
        // Bit 7: a website redirect location follows the six fields (records without one are
        // byte for byte what stores predating it wrote; those stores ignore records with it).
        if m.website_redirect_location.is_some() {
            flags |= 1 << 7;
        }
        w.0.push(flags);
        for f in fields.iter().copied().flatten() {
            w.bytes(f.as_bytes());
        }
        if let Some(wr) = &m.website_redirect_location {
            w.bytes(wr.as_bytes());
        }
        if let Some(b) = &self.inline {
            w.bytes(b);
        }
        w.pairs(m.user.iter());
        w.pairs(self.tags.iter().map(|(k, v)| (k, v)));
        w.bytes(self.key.as_bytes());
        let full = self.algorithm.is_some() && self.checksum_type == Some(ChecksumType::FullObject);
        let parts = if self.part_checksums.is_empty() { 0 } else { PART_CHECKSUMS_BIT };
        w.0.push(alg_index(self.algorithm) | if full { FULL_OBJECT_BIT } else { 0 } | parts);
        if !self.part_checksums.is_empty() {
            w.var(self.part_checksums.len() as u64);
            for c in &self.part_checksums {
                w.bytes(c.as_bytes());
            }
        }
        if let Some(v) = self.version_id.as_deref().and_then(hex16) {
            w.0.extend_from_slice(&v);
        }
        encode_lock(&self.lock, &mut w.0);
        w.0
    }

    /// Only the ETag of an encoding that [`Record::decode`] accepted before (a cached one):
    /// listings need nothing else of the record.
    pub fn decode_etag(b: &[u8]) -> Option<String> {
        let (&v, rest) = b.split_first()?;
        if v != VERSION {
            return None;
        }
        let mut r = Rd(rest);
        r.var()?;
        r.var()?;
        r.var()?;
        r.etag()
    }

    /// Is this the record of a file of `size`, `mtime_ns`, `ino` with an ETag, at most a
    /// checksum (a PUT's, CRC64NVME by default), and nothing else?
    pub fn is_plain(&self, size: u64, mtime_ns: i64, ino: u64) -> bool {
        let Record {
            size: s,
            mtime_ns: m,
            ino: i,
            etag: _,
            checksum,
            part_sizes,
            part_checksums,
            meta,
            tags,
            inline,
            key,
            algorithm,
            checksum_type,
            version_id,
            lock,
        } = self;
        *s == size
            && *m == mtime_ns
            && *i == ino
            && checksum.as_ref().is_none_or(|c| c.checksum_type() == ChecksumType::FullObject)
            && part_sizes.is_empty()
            && part_checksums.is_empty()
            && *meta == ObjectMeta::default()
            && tags.is_empty()
            && inline.is_none()
            && key.is_empty()
            && algorithm.is_none()
            && checksum_type.is_none()
            && version_id.is_none()
            && lock.is_empty()
    }

    pub fn decode(b: &[u8]) -> Option<Record> {
        let (&v, rest) = b.split_first()?;
        if v != VERSION {
            return None;
        }
        let mut r = Rd(rest);
        let size = r.var()?;
        let mtime_ns = r.var()? as i64;
        let ino = r.var()?;
        let etag = r.etag()?;
        let checksum = match r.u8()? {
            0 => None,
            i => Some(Checksum { algorithm: alg_from(i)??, value: r.string()? }),
        };
        let n = r.len()?;
        let part_sizes = (0..n).map(|_| r.var()).collect::<Option<Vec<u64>>>()?;
        let flags = r.u8()?;
        let mut opt =
            |i: u8| -> Option<Option<String>> { if flags & (1 << i) != 0 { r.string().map(Some) } else { Some(None) } };
        let (content_type, content_encoding, content_disposition) = (opt(0)?, opt(1)?, opt(2)?);
        let (content_language, cache_control, expires) = (opt(3)?, opt(4)?, opt(5)?);
        let website_redirect_location = opt(7)?;
        let inline = if flags & (1 << 6) != 0 { Some(r.bytes()?.to_vec()) } else { None };
        let user = r.pairs()?.into_iter().collect::<BTreeMap<_, _>>();
        let meta = ObjectMeta {
            content_type,
            content_encoding,
            content_disposition,
            content_language,
            cache_control,
            expires,
            user,
            website_redirect_location,
        };
        let tags = r.pairs()?;
        let key = r.string()?;
        let ab = r.u8()?;
        if ab & !(FULL_OBJECT_BIT | PART_CHECKSUMS_BIT | 0x0f) != 0 {
            return None;
        }
        let algorithm = alg_from(ab & 0x0f)?;
        let part_checksums = if ab & PART_CHECKSUMS_BIT != 0 {
            let n = r.len()?;
            let v = (0..n).map(|_| r.string()).collect::<Option<Vec<String>>>()?;
            if v.is_empty() {
                return None;
            }
            v
        } else {
            Vec::new()
        };
        let checksum_type = match (algorithm, ab & FULL_OBJECT_BIT != 0) {
            (None, false) => None,
            (None, true) => return None,
            (Some(_), false) => Some(ChecksumType::Composite),
            (Some(_), true) => Some(ChecksumType::FullObject),
        };
        let (version_id, lock) = match r.0.len() {
            0 => (None, ObjectLock::default()),
            16 => (Some(hex32(r.0, None)), ObjectLock::default()),
            LOCK_LEN => (None, decode_lock(r.0)?),
            n if n == 16 + LOCK_LEN => (Some(hex32(&r.0[..16], None)), decode_lock(&r.0[16..])?),
            _ => return None,
        };
        Some(Record {
            size,
            mtime_ns,
            ino,
            etag,
            checksum,
            part_sizes,
            part_checksums,
            meta,
            tags,
            inline,
            key,
            algorithm,
            checksum_type,
            version_id,
            lock,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex16_takes_exactly_32_lower_case_hex_digits() {
        let h = "0123456789abcdeffedcba9876543210";
        let b = hex16(h).unwrap();
        assert_eq!(hex32(&b, None), h);
        assert_eq!(hex16(&"f".repeat(32)), Some([0xff; 16]));
        for bad in
            ["", &h[..31], &format!("{h}0"), &h.to_uppercase(), &format!("g{}", &h[1..]), &format!("{}-", &h[..31])]
        {
            assert_eq!(hex16(bad), None, "{bad:?}");
        }
        // A non-hex ETag is stored as its text and comes back unchanged.
        let rec = Record { etag: "0123456789ABCDEF0123456789abcdef".into(), ..Default::default() };
        assert_eq!(Record::decode(&rec.encode()).unwrap().etag, rec.etag);
    }

    #[test]
    fn roundtrip_and_rejects_garbage() {
        let mut meta =
            ObjectMeta { content_type: Some("text/plain".into()), expires: Some("x".into()), ..Default::default() };
        meta.user.insert("a".into(), "b".into());
        meta.website_redirect_location = Some("/elsewhere".into());
        let r = Record {
            version_id: None,
            lock: ObjectLock::default(),
            size: 42,
            mtime_ns: 1_700_000_000_123_456_789,
            ino: 7,
            etag: "abc".into(),
            checksum: Some(Checksum { algorithm: ChecksumAlgorithm::Crc64Nvme, value: "AAAA".into() }),
            part_sizes: vec![5, 6],
            part_checksums: vec!["AAAA".into(), "BBBB".into()],
            meta,
            tags: vec![("t".into(), "".into())],
            inline: Some(b"dir".to_vec()),
            key: "k/é".into(),
            algorithm: Some(ChecksumAlgorithm::Sha256),
            checksum_type: Some(ChecksumType::Composite),
        };
        let enc = r.encode();
        assert_eq!(Record::decode(&enc), Some(r.clone()));
        assert_eq!(Record::decode_etag(&enc), Some(r.etag.clone()));
        // The upload's checksum type: FULL_OBJECT round-trips; a record written before the type
        // was kept (bit clear) reads as COMPOSITE; the bit without an algorithm is garbage.
        let full = Record {
            key: "u".into(),
            algorithm: Some(ChecksumAlgorithm::Crc32c),
            checksum_type: Some(ChecksumType::FullObject),
            ..Default::default()
        };
        assert_eq!(Record::decode(&full.encode()), Some(full.clone()));
        let mut old = full.encode();
        *old.last_mut().unwrap() &= !FULL_OBJECT_BIT;
        assert_eq!(Record::decode(&old).unwrap().checksum_type, Some(ChecksumType::Composite));
        let mut bad = Record::default().encode();
        *bad.last_mut().unwrap() |= FULL_OBJECT_BIT;
        assert_eq!(Record::decode(&bad), None);
        *bad.last_mut().unwrap() = 0x20;
        assert_eq!(Record::decode(&bad), None);
        assert_eq!(Record::decode(&Record::default().encode()), Some(Record::default()));
        // Part checksums round-trip with a version id after them; the records of objects
        // without them carry no bit and no bytes (as before they existed).
        let parts = Record {
            part_sizes: vec![1, 2],
            part_checksums: vec!["c1".into(), "c2".into()],
            version_id: Some("0123456789abcdef0123456789abcdef".into()),
            ..Default::default()
        };
        assert_eq!(Record::decode(&parts.encode()), Some(parts.clone()));
        let plain = Record { part_sizes: vec![1, 2], ..Default::default() };
        assert_eq!(plain.encode().last(), Some(&0));
        for cut in 0..enc.len() {
            assert_eq!(Record::decode(&enc[..cut]), None, "truncated at {cut}");
        }
        assert_eq!(Record::decode(b"garbage"), None);
        // ETag shapes: MD5, fast/multipart (hex-N), and anything else verbatim.
        for e in [
            "d41d8cd98f00b204e9800998ecf8427e",
            "0123456789abcdef0123456789abcdef-1",
            "ABC",
            "x-1",
            "",
            "0123456789abcdef0123456789abcdef-01",
            "0123456789abcdef0123456789abcdef-18446744073709551615",
            "ffffffffffffffffffffffffffffffff-10000",
        ] {
            let r = Record { etag: e.into(), ..Default::default() };
            assert_eq!(Record::decode(&r.encode()).unwrap().etag, e);
        }
        // A plain object's record stays small enough to live inside an ext4 inode.
        let plain = Record {
            size: 1 << 40,
            mtime_ns: 1_800_000_000_000_000_000,
            ino: u32::MAX as u64,
            etag: "0123456789abcdef0123456789abcdef-1".into(),
            ..Default::default()
        };
        assert!(plain.encode().len() <= 48, "{} bytes", plain.encode().len());
        assert_eq!(Record::decode(SIDECAR_POINTER), None);
    }

    #[test]
    fn lock_roundtrips_with_and_without_a_version_id() {
        let until = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_800_000_000_123);
        for vid in [None, Some("0123456789abcdeffedcba9876543210".to_string())] {
            for lock in [
                ObjectLock { retention: Some(Retention { mode: LockMode::Governance, until }), legal_hold: None },
                ObjectLock { retention: Some(Retention { mode: LockMode::Compliance, until }), legal_hold: Some(true) },
                ObjectLock { retention: None, legal_hold: Some(false) },
            ] {
                let r = Record { etag: "e".into(), version_id: vid.clone(), lock, ..Default::default() };
                let enc = r.encode();
                assert_eq!(Record::decode(&enc), Some(r.clone()));
                assert!(!r.is_plain(0, 0, 0));
                for cut in 0..enc.len() {
                    assert_eq!(Record::decode(&enc[..cut]).filter(|d| *d == r), None, "truncated at {cut}");
                }
            }
        }
        // A lock block with unknown bits is garbage.
        let mut enc =
            Record { lock: ObjectLock { legal_hold: Some(true), ..Default::default() }, ..Default::default() }.encode();
        let n = enc.len();
        enc[n - 9] |= 0x30;
        assert_eq!(Record::decode(&enc), None);
    }
}
