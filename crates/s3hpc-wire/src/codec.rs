//! Field encoding: LEB128 varints, length-prefixed UTF-8 strings, presence bytes, and the
//! request/response bodies of every opcode. Every length is checked against a limit.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use bytes::{BufMut, Bytes, BytesMut};
use s3hpc_core::{
    BucketInfo, ByteRange, Checksum, ChecksumAlgorithm, ChecksumType, Conditions, CopyObjectRequest, Directive, Error,
    ErrorCode, GetObjectRequest, ListObjectsPage, ListPartsPage, ListUploadsPage, ObjectInfo, ObjectMeta,
    ObjectSummary, PartInfo, PutObjectOutput, Result, Tags, UploadInfo,
};

use crate::frame::{MAX_LIST, MAX_STR};
pub use crate::ops::{Opcode, Request};

/// Largest configuration or ACL document a request carries (S3's bucket policy limit is 20 KiB).
pub const MAX_DOC: usize = 64 * 1024;
/// The user metadata name under which `meta` carries the website redirect location: a space
/// starts it, so no `x-amz-meta-*` header name can be it (PROTOCOL.md, `meta`).
pub const WEBSITE_REDIRECT_ENTRY: &str = " x-amz-website-redirect-location";

/// Malformed field data: a protocol error.
pub fn malformed(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InvalidRequest, format!("malformed frame: {what}"))
}

// ---------------------------------------------------------------------------------------------
// primitives

#[derive(Default)]
pub struct Enc {
    pub buf: BytesMut,
}

impl Enc {
    pub fn new() -> Self {
        Enc { buf: BytesMut::with_capacity(128) }
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.put_u8(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.put_u16_le(v);
    }
    pub fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }
    pub fn str(&mut self, s: &str) {
        self.var(s.len() as u64);
        self.buf.put_slice(s.as_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.buf.put_slice(b);
    }
    /// An optional document (a presence byte, then the bytes).
    pub fn opt_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.u8(0),
            Some(b) => {
                self.u8(1);
                self.bytes(b);
            }
        }
    }
    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }
    pub fn opt_var(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.var(v);
            }
        }
    }
    pub fn time(&mut self, t: SystemTime) {
        let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        self.var(d.as_secs());
        self.var(d.subsec_nanos() as u64);
    }
    pub fn opt_time(&mut self, t: Option<SystemTime>) {
        match t {
            None => self.u8(0),
            Some(t) => {
                self.u8(1);
                self.time(t);
            }
        }
    }
    pub fn tags(&mut self, t: &Tags) {
        self.var(t.len() as u64);
        for (k, v) in t {
            self.str(k);
            self.str(v);
        }
    }
    pub fn meta(&mut self, m: &ObjectMeta) {
        for f in [&m.content_type, &m.content_encoding, &m.content_disposition, &m.content_language, &m.cache_control] {
            self.opt_str(f.as_deref());
        }
        self.opt_str(m.expires.as_deref());
        // The website redirect location travels as a user metadata entry under a name no
        // `x-amz-meta-*` header can carry (WEBSITE_REDIRECT_ENTRY), so `meta` keeps its format.
        let wr = m.website_redirect_location.as_deref();
        self.var(m.user.len() as u64 + wr.is_some() as u64);
        for (k, v) in &m.user {
            self.str(k);
            self.str(v);
        }
        if let Some(v) = wr {
            self.str(WEBSITE_REDIRECT_ENTRY);
            self.str(v);
        }
    }
    pub fn alg(&mut self, a: Option<ChecksumAlgorithm>) {
        self.u8(match a {
            None => 0,
            Some(a) => ChecksumAlgorithm::ALL.iter().position(|x| *x == a).unwrap() as u8 + 1,
        });
    }
    /// Checksum type, one byte: 0 none, 1 COMPOSITE, 2 FULL_OBJECT.
    pub fn ctype(&mut self, t: Option<ChecksumType>) {
        self.u8(match t {
            None => 0,
            Some(ChecksumType::Composite) => 1,
            Some(ChecksumType::FullObject) => 2,
        });
    }
    pub fn checksum(&mut self, c: Option<&Checksum>) {
        match c {
            None => self.u8(0),
            Some(c) => {
                self.alg(Some(c.algorithm));
                self.str(&c.value);
            }
        }
    }
    pub fn conditions(&mut self, c: &Conditions) {
        let mask = c.if_match.is_some() as u8
            | (c.if_none_match.is_some() as u8) << 1
            | (c.if_modified_since.is_some() as u8) << 2
            | (c.if_unmodified_since.is_some() as u8) << 3;
        self.u8(mask);
        if let Some(s) = &c.if_match {
            self.str(s);
        }
        if let Some(s) = &c.if_none_match {
            self.str(s);
        }
        if let Some(t) = c.if_modified_since {
            self.time(t);
        }
        if let Some(t) = c.if_unmodified_since {
            self.time(t);
        }
    }
    pub fn range(&mut self, r: Option<ByteRange>) {
        match r {
            None => self.u8(0),
            Some(ByteRange::FromTo(a, b)) => {
                self.u8(1);
                self.var(a);
                self.var(b);
            }
            Some(ByteRange::From(a)) => {
                self.u8(2);
                self.var(a);
            }
            Some(ByteRange::Suffix(n)) => {
                self.u8(3);
                self.var(n);
            }
        }
    }
    pub fn md5(&mut self, m: Option<[u8; 16]>) {
        match m {
            None => self.u8(0),
            Some(m) => {
                self.u8(1);
                self.buf.put_slice(&m);
            }
        }
    }
    pub fn error(&mut self, e: &Error) {
        let idx = ErrorCode::ALL.iter().position(|c| *c == e.code).unwrap_or(0) as u16;
        self.u16(idx);
        self.str(truncate(&e.message, 4096));
        self.opt_str(e.resource.as_deref().map(|r| truncate(r, 4096)));
    }
    pub fn object_info(&mut self, i: &ObjectInfo) {
        self.str(&i.key);
        self.var(i.size);
        self.str(&i.etag);
        self.time(i.last_modified);
        self.meta(&i.meta);
        self.checksum(i.checksum.as_ref());
        self.var(i.part_sizes.len() as u64);
        for s in &i.part_sizes {
            self.var(*s);
        }
        self.var(i.tag_count as u64);
    }
    pub fn put_output(&mut self, o: &PutObjectOutput) {
        self.str(&o.etag);
        self.checksum(o.checksum.as_ref());
        self.var(o.size);
        self.time(o.last_modified);
    }
    pub fn part_info(&mut self, p: &PartInfo) {
        self.var(p.part_number as u64);
        self.str(&p.etag);
        self.var(p.size);
        self.time(p.last_modified);
        self.checksum(p.checksum.as_ref());
    }
    pub fn finish(self) -> BytesMut {
        self.buf
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Dec { buf, pos: 0 }
    }
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(malformed(format!("field runs past the end of the frame ({n} bytes wanted)")));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn var(&mut self) -> Result<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return Err(malformed("varint overflows 64 bits"));
            }
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }
    pub fn var_u32(&mut self) -> Result<u32> {
        u32::try_from(self.var()?).map_err(|_| malformed("value does not fit 32 bits"))
    }
    pub fn len(&mut self, max: usize, what: &str) -> Result<usize> {
        let n = self.var()?;
        if n > max as u64 {
            return Err(malformed(format!("{what} length {n} exceeds the limit of {max}")));
        }
        Ok(n as usize)
    }
    pub fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(malformed(format!("presence byte {b} is not 0 or 1"))),
        }
    }
    pub fn str(&mut self) -> Result<String> {
        let n = self.len(MAX_STR, "string")?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| malformed("string is not UTF-8"))
    }
    pub fn bytes(&mut self, max: usize) -> Result<&'a [u8]> {
        let n = self.len(max, "byte string")?;
        self.take(n)
    }
    /// An optional document of at most [`MAX_DOC`] bytes.
    pub fn opt_bytes(&mut self) -> Result<Option<Vec<u8>>> {
        Ok(if self.bool()? { Some(self.bytes(MAX_DOC)?.to_vec()) } else { None })
    }
    pub fn opt_str(&mut self) -> Result<Option<String>> {
        Ok(if self.bool()? { Some(self.str()?) } else { None })
    }
    pub fn opt_var(&mut self) -> Result<Option<u64>> {
        Ok(if self.bool()? { Some(self.var()?) } else { None })
    }
    pub fn time(&mut self) -> Result<SystemTime> {
        let s = self.var()?;
        let n = self.var()?;
        if n >= 1_000_000_000 {
            return Err(malformed("nanoseconds out of range"));
        }
        SystemTime::UNIX_EPOCH
            .checked_add(Duration::new(s, n as u32))
            .ok_or_else(|| malformed("timestamp out of range"))
    }
    pub fn opt_time(&mut self) -> Result<Option<SystemTime>> {
        Ok(if self.bool()? { Some(self.time()?) } else { None })
    }
    pub fn tags(&mut self) -> Result<Tags> {
        let n = self.len(MAX_LIST, "tag list")?;
        let mut t = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            t.push((self.str()?, self.str()?));
        }
        Ok(t)
    }
    pub fn meta(&mut self) -> Result<ObjectMeta> {
        let mut m = ObjectMeta {
            content_type: self.opt_str()?,
            content_encoding: self.opt_str()?,
            content_disposition: self.opt_str()?,
            content_language: self.opt_str()?,
            cache_control: self.opt_str()?,
            expires: self.opt_str()?,
            user: BTreeMap::new(),
            website_redirect_location: None,
        };
        let n = self.len(MAX_LIST, "metadata list")?;
        for _ in 0..n {
            let k = self.str()?;
            let v = self.str()?;
            if k == WEBSITE_REDIRECT_ENTRY {
                m.website_redirect_location = Some(v);
                continue;
            }
            m.user.insert(k, v);
        }
        Ok(m)
    }
    pub fn alg(&mut self) -> Result<Option<ChecksumAlgorithm>> {
        match self.u8()? {
            0 => Ok(None),
            n if (n as usize) <= ChecksumAlgorithm::ALL.len() => Ok(Some(ChecksumAlgorithm::ALL[n as usize - 1])),
            n => Err(malformed(format!("unknown checksum algorithm {n}"))),
        }
    }
    pub fn ctype(&mut self) -> Result<Option<ChecksumType>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(ChecksumType::Composite)),
            2 => Ok(Some(ChecksumType::FullObject)),
            n => Err(malformed(format!("unknown checksum type {n}"))),
        }
    }
    pub fn checksum(&mut self) -> Result<Option<Checksum>> {
        Ok(match self.alg()? {
            None => None,
            Some(algorithm) => Some(Checksum { algorithm, value: self.str()? }),
        })
    }
    pub fn conditions(&mut self) -> Result<Conditions> {
        let mask = self.u8()?;
        if mask & !0x0f != 0 {
            return Err(malformed("unknown condition bits"));
        }
        Ok(Conditions {
            if_match: if mask & 1 != 0 { Some(self.str()?) } else { None },
            if_none_match: if mask & 2 != 0 { Some(self.str()?) } else { None },
            if_modified_since: if mask & 4 != 0 { Some(self.time()?) } else { None },
            if_unmodified_since: if mask & 8 != 0 { Some(self.time()?) } else { None },
        })
    }
    pub fn range(&mut self) -> Result<Option<ByteRange>> {
        Ok(match self.u8()? {
            0 => None,
            1 => Some(ByteRange::FromTo(self.var()?, self.var()?)),
            2 => Some(ByteRange::From(self.var()?)),
            3 => Some(ByteRange::Suffix(self.var()?)),
            k => return Err(malformed(format!("unknown range kind {k}"))),
        })
    }
    pub fn md5(&mut self) -> Result<Option<[u8; 16]>> {
        Ok(if self.bool()? { Some(self.take(16)?.try_into().unwrap()) } else { None })
    }
    pub fn error(&mut self) -> Result<Error> {
        let idx = self.u16()? as usize;
        let code = ErrorCode::ALL.get(idx).copied().unwrap_or(ErrorCode::InternalError);
        let message = self.str()?;
        let resource = self.opt_str()?;
        let mut e = Error::new(code, message);
        e.resource = resource;
        Ok(e)
    }
    pub fn object_info(&mut self) -> Result<ObjectInfo> {
        let key = self.str()?;
        let size = self.var()?;
        let etag = self.str()?;
        let last_modified = self.time()?;
        let meta = self.meta()?;
        let checksum = self.checksum()?;
        let n = self.len(MAX_LIST, "part size list")?;
        let mut part_sizes = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            part_sizes.push(self.var()?);
        }
        let tag_count = self.var()? as usize;
        Ok(ObjectInfo {
            version_id: None,
            lock: Default::default(),
            key,
            size,
            etag,
            last_modified,
            meta,
            checksum,
            part_sizes,
            part_checksums: Vec::new(),
            tag_count,
        })
    }
    pub fn put_output(&mut self) -> Result<PutObjectOutput> {
        Ok(PutObjectOutput {
            version_id: None,
            etag: self.str()?,
            checksum: self.checksum()?,
            size: self.var()?,
            last_modified: self.time()?,
        })
    }
    pub fn part_info(&mut self) -> Result<PartInfo> {
        Ok(PartInfo {
            part_number: self.var_u32()?,
            etag: self.str()?,
            size: self.var()?,
            last_modified: self.time()?,
            checksum: self.checksum()?,
        })
    }
    pub fn end(&self) -> Result<()> {
        if !self.is_empty() {
            return Err(malformed(format!("{} unexpected trailing bytes", self.buf.len() - self.pos)));
        }
        Ok(())
    }
}

/// How the expected checksum of an upload travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireExpected {
    None,
    Known(String),
    /// The value arrives in the END frame (a trailer).
    Deferred,
}

/// Checksum part of an upload request, as on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireChecksum {
    pub algorithm: ChecksumAlgorithm,
    pub expected: WireExpected,
}

/// The fields common to PutObject and UploadPart bodies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UploadFields {
    pub content_md5: Option<[u8; 16]>,
    pub checksum: Option<WireChecksum>,
    pub content_length: Option<u64>,
}

impl Enc {
    pub fn upload_fields(&mut self, u: &UploadFields) {
        self.md5(u.content_md5);
        match &u.checksum {
            None => self.u8(0),
            Some(c) => {
                self.alg(Some(c.algorithm));
                match &c.expected {
                    WireExpected::None => self.u8(0),
                    WireExpected::Known(v) => {
                        self.u8(1);
                        self.str(v);
                    }
                    WireExpected::Deferred => self.u8(2),
                }
            }
        }
        self.opt_var(u.content_length);
    }
}

impl Dec<'_> {
    pub fn upload_fields(&mut self) -> Result<UploadFields> {
        let content_md5 = self.md5()?;
        let checksum = match self.alg()? {
            None => None,
            Some(algorithm) => {
                let expected = match self.u8()? {
                    0 => WireExpected::None,
                    1 => WireExpected::Known(self.str()?),
                    2 => WireExpected::Deferred,
                    k => return Err(malformed(format!("unknown expected-checksum kind {k}"))),
                };
                Some(WireChecksum { algorithm, expected })
            }
        };
        Ok(UploadFields { content_md5, checksum, content_length: self.opt_var()? })
    }
}

/// GetObjectRequest in a comparable form.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireGet {
    pub range: Option<ByteRange>,
    pub part_number: Option<u32>,
    pub conditions: Conditions,
}

impl From<&GetObjectRequest> for WireGet {
    fn from(r: &GetObjectRequest) -> Self {
        WireGet { range: r.range, part_number: r.part_number, conditions: r.conditions.clone() }
    }
}

impl From<WireGet> for GetObjectRequest {
    fn from(r: WireGet) -> Self {
        GetObjectRequest { version_id: None, range: r.range, part_number: r.part_number, conditions: r.conditions }
    }
}

/// CopyObjectRequest in a comparable form.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireCopy {
    pub metadata: Directive<ObjectMeta>,
    pub tagging: Directive<Tags>,
    pub source_conditions: Conditions,
    pub conditions: Conditions,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// Optional trailing field: sent only when `Some`, so requests without it stay what
    /// version-1 peers that predate it send and accept.
    pub website_redirect_location: Option<String>,
}

impl From<&CopyObjectRequest> for WireCopy {
    fn from(r: &CopyObjectRequest) -> Self {
        WireCopy {
            metadata: r.metadata.clone(),
            tagging: r.tagging.clone(),
            source_conditions: r.source_conditions.clone(),
            conditions: r.conditions.clone(),
            checksum_algorithm: r.checksum_algorithm,
            website_redirect_location: r.website_redirect_location.clone(),
        }
    }
}

impl From<WireCopy> for CopyObjectRequest {
    fn from(r: WireCopy) -> Self {
        CopyObjectRequest {
            source_version_id: None,
            lock: Default::default(),
            metadata: r.metadata,
            tagging: r.tagging,
            source_conditions: r.source_conditions,
            conditions: r.conditions,
            checksum_algorithm: r.checksum_algorithm,
            website_redirect_location: r.website_redirect_location,
            default_checksum: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// responses (the OK payloads; the first byte of a RESPONSE is 0 = ok, 1 = error)

impl Enc {
    pub fn key_info(&mut self, k: &s3hpc_core::creds::AccessKeyInfo) {
        self.str(&k.access_key);
        self.var(k.uid as u64);
        self.str(&k.user);
        self.str(&k.description);
        self.time(k.created);
        self.opt_time(k.expires);
    }
    pub fn buckets(&mut self, b: &[BucketInfo]) {
        self.var(b.len() as u64);
        for b in b {
            self.str(&b.name);
            self.time(b.created);
        }
    }
    pub fn list_page(&mut self, p: &ListObjectsPage) {
        self.var(p.objects.len() as u64);
        for o in &p.objects {
            self.str(&o.key);
            self.var(o.size);
            self.str(&o.etag);
            self.time(o.last_modified);
        }
        self.var(p.common_prefixes.len() as u64);
        for c in &p.common_prefixes {
            self.str(c);
        }
        self.u8(p.is_truncated as u8);
        self.opt_str(p.next_marker.as_deref());
    }
    pub fn parts_page(&mut self, p: &ListPartsPage) {
        self.var(p.parts.len() as u64);
        for part in &p.parts {
            self.part_info(part);
        }
        self.u8(p.is_truncated as u8);
        self.opt_var(p.next_part_number_marker.map(u64::from));
        self.alg(p.checksum_algorithm);
        // Optional trailing field, sent only for FULL_OBJECT: absent means COMPOSITE when an
        // algorithm is set (what every upload was before the type existed).
        if p.checksum_algorithm.is_some() && p.checksum_type == Some(ChecksumType::FullObject) {
            self.ctype(p.checksum_type);
        }
    }
    pub fn uploads_page(&mut self, p: &ListUploadsPage) {
        self.var(p.uploads.len() as u64);
        for u in &p.uploads {
            self.str(&u.key);
            self.str(&u.upload_id);
            self.time(u.initiated);
        }
        self.var(p.common_prefixes.len() as u64);
        for c in &p.common_prefixes {
            self.str(c);
        }
        self.u8(p.is_truncated as u8);
        self.opt_str(p.next_key_marker.as_deref());
        self.opt_str(p.next_upload_id_marker.as_deref());
        // Optional trailing field: each upload's checksum algorithm and type, in upload order,
        // sent only when some upload has an algorithm.
        if p.uploads.iter().any(|u| u.checksum_algorithm.is_some()) {
            for u in &p.uploads {
                self.alg(u.checksum_algorithm);
                self.ctype(u.checksum_type);
            }
        }
    }
    /// GetObject answer header: info and the served range.
    pub fn get_output(&mut self, info: &ObjectInfo, range: Option<(u64, u64)>) {
        self.object_info(info);
        match range {
            None => self.u8(0),
            Some((o, l)) => {
                self.u8(1);
                self.var(o);
                self.var(l);
            }
        }
    }
}

impl Dec<'_> {
    pub fn key_info(&mut self) -> Result<s3hpc_core::creds::AccessKeyInfo> {
        Ok(s3hpc_core::creds::AccessKeyInfo {
            access_key: self.str()?,
            uid: self.var()?.min(u32::MAX as u64) as u32,
            user: self.str()?,
            description: self.str()?,
            created: self.time()?,
            expires: self.opt_time()?,
        })
    }
    pub fn key_infos(&mut self) -> Result<Vec<s3hpc_core::creds::AccessKeyInfo>> {
        let n = self.len(MAX_LIST, "key list")?;
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(self.key_info()?);
        }
        Ok(v)
    }
    pub fn buckets(&mut self) -> Result<Vec<BucketInfo>> {
        let n = self.len(usize::MAX >> 1, "bucket list")?;
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(BucketInfo { name: self.str()?, created: self.time()? });
        }
        Ok(v)
    }
    pub fn list_page(&mut self) -> Result<ListObjectsPage> {
        let n = self.len(MAX_LIST, "object list")?;
        let mut objects = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            objects.push(ObjectSummary {
                key: self.str()?,
                size: self.var()?,
                etag: self.str()?,
                last_modified: self.time()?,
            });
        }
        let n = self.len(MAX_LIST, "prefix list")?;
        let mut common_prefixes = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            common_prefixes.push(self.str()?);
        }
        Ok(ListObjectsPage { objects, common_prefixes, is_truncated: self.bool()?, next_marker: self.opt_str()? })
    }
    pub fn parts_page(&mut self) -> Result<ListPartsPage> {
        let n = self.len(MAX_LIST, "part list")?;
        let mut parts = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            parts.push(self.part_info()?);
        }
        let is_truncated = self.bool()?;
        let next_part_number_marker = self.opt_var()?.map(|n| n as u32);
        let checksum_algorithm = self.alg()?;
        let checksum_type = match (checksum_algorithm, self.is_empty()) {
            (None, true) => None,
            (Some(_), true) => Some(ChecksumType::Composite),
            (None, false) => return Err(malformed("checksum type without an algorithm")),
            (Some(_), false) => self.ctype()?,
        };
        Ok(ListPartsPage { parts, is_truncated, next_part_number_marker, checksum_algorithm, checksum_type })
    }
    pub fn uploads_page(&mut self) -> Result<ListUploadsPage> {
        let n = self.len(MAX_LIST, "upload list")?;
        let mut uploads = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            uploads.push(UploadInfo {
                key: self.str()?,
                upload_id: self.str()?,
                initiated: self.time()?,
                checksum_algorithm: None,
                checksum_type: None,
            });
        }
        let n = self.len(MAX_LIST, "prefix list")?;
        let mut common_prefixes = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            common_prefixes.push(self.str()?);
        }
        let is_truncated = self.bool()?;
        let next_key_marker = self.opt_str()?;
        let next_upload_id_marker = self.opt_str()?;
        if !self.is_empty() {
            for u in &mut uploads {
                u.checksum_algorithm = self.alg()?;
                u.checksum_type = self.ctype()?;
                if u.checksum_algorithm.is_some() != u.checksum_type.is_some() {
                    return Err(malformed("upload checksum type without an algorithm, or the reverse"));
                }
            }
        }
        Ok(ListUploadsPage { uploads, common_prefixes, is_truncated, next_key_marker, next_upload_id_marker })
    }
    pub fn get_output(&mut self) -> Result<(ObjectInfo, Option<(u64, u64)>)> {
        let info = self.object_info()?;
        let range = if self.bool()? { Some((self.var()?, self.var()?)) } else { None };
        Ok((info, range))
    }
}

/// Bytes of a payload as `Bytes`, sharing the frame buffer.
pub fn tail(payload: &Bytes, from: usize) -> Bytes {
    payload.slice(from..)
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3hpc_core::{CompleteMultipartRequest, CompletePart};

    fn roundtrip(r: Request) {
        let mut e = Enc::new();
        r.encode(&mut e);
        let b = e.finish();
        let mut d = Dec::new(&b);
        assert_eq!(Request::decode(&mut d).unwrap(), r);
        d.end().unwrap();
        // every strict prefix fails cleanly, except one that ends just before an optional
        // trailing field: that is the request without it, exactly as it encodes
        for cut in 0..b.len() {
            let mut d = Dec::new(&b[..cut]);
            if let Ok(short) = Request::decode(&mut d).and_then(|x| d.end().map(|_| x)) {
                let mut e = Enc::new();
                short.encode(&mut e);
                assert!(short != r && e.finish()[..] == b[..cut], "prefix {cut} of {r:?} decoded as {short:?}");
            }
        }
    }

    #[test]
    fn requests_roundtrip() {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123);
        let cond = Conditions {
            if_match: Some("\"abc\"".into()),
            if_none_match: None,
            if_modified_since: Some(t),
            if_unmodified_since: None,
        };
        let mut meta = ObjectMeta { content_type: Some("text/plain".into()), ..Default::default() };
        meta.user.insert("k".into(), "v".into());
        roundtrip(Request::ListBuckets {});
        roundtrip(Request::PutBucketTagging { bucket: "b".into(), tags: vec![("a".into(), "b".into())] });
        roundtrip(Request::PutObject {
            bucket: "b".into(),
            key: "k/ü".into(),
            meta: meta.clone(),
            tags: vec![],
            conditions: cond.clone(),
            upload: UploadFields {
                content_md5: Some([7; 16]),
                checksum: Some(WireChecksum { algorithm: ChecksumAlgorithm::Crc32c, expected: WireExpected::Deferred }),
                content_length: Some(5),
            },
        });
        roundtrip(Request::AppendObject {
            bucket: "b".into(),
            key: "log".into(),
            offset: 1 << 40,
            meta: ObjectMeta::default(),
            tags: vec![],
            conditions: cond.clone(),
            upload: UploadFields { content_md5: None, checksum: None, content_length: Some(9) },
        });
        roundtrip(Request::GetBucketConfig { bucket: "b".into(), name: "policy".into() });
        roundtrip(Request::PutBucketConfig { bucket: "b".into(), name: "policy".into(), doc: Some(b"{}".to_vec()) });
        roundtrip(Request::PutBucketConfig { bucket: "b".into(), name: "acl".into(), doc: None });
        roundtrip(Request::GetObjectAcl { bucket: "b".into(), key: "k".into() });
        roundtrip(Request::Fs { bucket: "b".into(), key: "d/k".into(), op: "setattr mode=420".into() });
        roundtrip(Request::PutObjectAcl { bucket: "b".into(), key: "k".into(), doc: Some(b"<x/>".to_vec()) });
        roundtrip(Request::RenameObject {
            bucket: "b".into(),
            src_key: "a/x".into(),
            dst_key: "b/y".into(),
            source_conditions: cond.clone(),
            conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
            client_token: Some("tok".into()),
        });
        roundtrip(Request::RenameObject {
            bucket: "b".into(),
            src_key: "a".into(),
            dst_key: "b".into(),
            source_conditions: Conditions::default(),
            conditions: Conditions::default(),
            client_token: None,
        });
        roundtrip(Request::GetObject {
            bucket: "b".into(),
            key: "k".into(),
            req: WireGet { range: Some(ByteRange::Suffix(3)), part_number: Some(2), conditions: cond.clone() },
        });
        roundtrip(Request::CopyObject {
            src_bucket: "a".into(),
            src_key: "b".into(),
            dst_bucket: "c".into(),
            dst_key: "d".into(),
            req: WireCopy {
                metadata: Directive::Replace(meta),
                tagging: Directive::Copy,
                source_conditions: cond.clone(),
                conditions: Conditions::default(),
                checksum_algorithm: Some(ChecksumAlgorithm::Sha256),
                website_redirect_location: None,
            },
        });
        // The optional trailing redirect location of CopyObject.
        roundtrip(Request::CopyObject {
            src_bucket: "a".into(),
            src_key: "b".into(),
            dst_bucket: "c".into(),
            dst_key: "d".into(),
            req: WireCopy {
                metadata: Directive::Copy,
                tagging: Directive::Copy,
                source_conditions: Conditions::default(),
                conditions: Conditions::default(),
                checksum_algorithm: None,
                website_redirect_location: Some("https://example.com/x".into()),
            },
        });
        roundtrip(Request::CompleteMultipart {
            bucket: "b".into(),
            key: "k".into(),
            upload_id: "u".into(),
            req: CompleteMultipartRequest {
                parts: vec![CompletePart {
                    part_number: 1,
                    etag: "e".into(),
                    checksum: Some(Checksum { algorithm: ChecksumAlgorithm::Crc32, value: "AAAA".into() }),
                }],
                conditions: cond.clone(),
                checksum: None,
                checksum_type: None,
            },
        });
        // The optional trailing fields of CreateMultipart and CompleteMultipart.
        for checksum_type in [None, Some(ChecksumType::Composite), Some(ChecksumType::FullObject)] {
            roundtrip(Request::CreateMultipart {
                bucket: "b".into(),
                key: "k".into(),
                meta: ObjectMeta::default(),
                tags: vec![],
                checksum_algorithm: Some(ChecksumAlgorithm::Crc32c),
                checksum_type,
            });
            for checksum in
                [None, Some(Checksum { algorithm: ChecksumAlgorithm::Crc64Nvme, value: "AAAAAAAAAAA=".into() })]
            {
                roundtrip(Request::CompleteMultipart {
                    bucket: "b".into(),
                    key: "k".into(),
                    upload_id: "u".into(),
                    req: CompleteMultipartRequest { parts: vec![], conditions: cond.clone(), checksum, checksum_type },
                });
            }
        }
        // A bad checksum type byte is a protocol error, not a guess.
        let mut e = Enc::new();
        Request::CreateMultipart {
            bucket: "b".into(),
            key: "k".into(),
            meta: ObjectMeta::default(),
            tags: vec![],
            checksum_algorithm: None,
            checksum_type: None,
        }
        .encode(&mut e);
        e.u8(3);
        let b = e.finish();
        assert!(Request::decode(&mut Dec::new(&b)).is_err());
    }

    #[test]
    fn parts_page_checksum_type() {
        let base = ListPartsPage { is_truncated: true, next_part_number_marker: Some(3), ..Default::default() };
        for (alg, ty) in [
            (None, None),
            (Some(ChecksumAlgorithm::Sha1), Some(ChecksumType::Composite)),
            (Some(ChecksumAlgorithm::Crc32), Some(ChecksumType::FullObject)),
        ] {
            let p = ListPartsPage { checksum_algorithm: alg, checksum_type: ty, ..base.clone() };
            let mut e = Enc::new();
            e.parts_page(&p);
            let b = e.finish();
            // COMPOSITE (and none) encode exactly as before the type existed.
            let old_len = 1 + 1 + 2 + 1;
            assert_eq!(b.len(), if ty == Some(ChecksumType::FullObject) { old_len + 1 } else { old_len });
            let mut d = Dec::new(&b);
            assert_eq!(d.parts_page().unwrap(), p);
            d.end().unwrap();
        }
    }

    #[test]
    fn error_numbers_match_protocol_md() {
        // docs/PROTOCOL.md section 6 publishes these numbers; they must never change.
        let fixed = [
            (0, ErrorCode::AccessDenied),
            (3, ErrorCode::BadDigest),
            (10, ErrorCode::IncompleteBody),
            (11, ErrorCode::InternalError),
            (20, ErrorCode::InvalidRequest),
            (29, ErrorCode::NoSuchBucket),
            (30, ErrorCode::NoSuchKey),
            (34, ErrorCode::NotModified),
            (35, ErrorCode::PreconditionFailed),
            (38, ErrorCode::SignatureDoesNotMatch),
            (45, ErrorCode::RequestHeaderSectionTooLarge),
            (46, ErrorCode::InvalidWriteOffset),
            (47, ErrorCode::MalformedPolicy),
            (52, ErrorCode::NoSuchBucketPolicy),
            (54, ErrorCode::NoSuchPublicAccessBlockConfiguration),
            (62, ErrorCode::IdempotencyParameterMismatch),
            (63, ErrorCode::PrefixNotEmpty),
        ];
        for (n, c) in fixed {
            assert_eq!(ErrorCode::ALL[n], c);
            let mut e = Enc::new();
            e.error(&Error::code(c));
            let b = e.finish();
            assert_eq!(u16::from_le_bytes([b[0], b[1]]) as usize, n);
            assert_eq!(Dec::new(&b).error().unwrap().code, c);
        }
    }

    #[test]
    fn limits_are_enforced() {
        let mut e = Enc::new();
        e.u8(Opcode::CreateBucket as u8);
        e.var((MAX_STR + 1) as u64);
        let b = e.finish();
        assert!(Request::decode(&mut Dec::new(&b)).is_err());
        let mut d = Dec::new(&[0xff; 11]);
        assert!(d.var().is_err());
        assert!(Request::decode(&mut Dec::new(&[200])).is_err());
    }
}
