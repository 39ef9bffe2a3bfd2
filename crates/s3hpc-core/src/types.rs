//! Request and response types of the Store seam.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::error::{Error, ErrorCode, Result};

/// A bucket as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    pub name: String,
    pub created: SystemTime,
}

/// Ordered key/value tags (object or bucket tagging). S3 allows at most 10 per object, 50 per
/// bucket; keys up to 128 and values up to 256 UTF-16 code units.
pub type Tags = Vec<(String, String)>;

/// GetObjectTagging's answer: the tag set of a version and that version's id (`None`: the
/// object has none, as on a bucket that never had versioning, or the `null` version, as
/// [`ObjectInfo::version_id`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectTagging {
    pub tags: Tags,
    pub version_id: Option<String>,
}

/// The metadata an object carries besides its bytes. Stored by the backend, returned on
/// GET/HEAD, copied or replaced by CopyObject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    /// The `Expires` header, kept as the client sent it.
    pub expires: Option<String>,
    /// `x-amz-meta-*` entries, names lower-cased and without the prefix.
    pub user: BTreeMap<String, String>,
    /// `x-amz-website-redirect-location`: `/...`, `http://...` or `https://...`, at most 2 KiB
    /// ([`crate::names::validate_meta`]).
    pub website_redirect_location: Option<String>,
}

/// Checksum algorithms S3 supports (`x-amz-checksum-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlgorithm {
    Crc32,
    Crc32c,
    Crc64Nvme,
    Sha1,
    Sha256,
    Sha512,
    Md5,
    Xxhash64,
    Xxhash3,
    Xxhash128,
}

impl ChecksumAlgorithm {
    /// Every algorithm, in the order of their codes in stored records and the binary protocol
    /// (position + 1): new algorithms go at the end.
    pub const ALL: [ChecksumAlgorithm; 10] = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
        ChecksumAlgorithm::Sha512,
        ChecksumAlgorithm::Md5,
        ChecksumAlgorithm::Xxhash64,
        ChecksumAlgorithm::Xxhash3,
        ChecksumAlgorithm::Xxhash128,
    ];

    /// As in `x-amz-checksum-algorithm` / `ChecksumAlgorithm` XML: `CRC32`, `CRC32C`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "CRC32",
            ChecksumAlgorithm::Crc32c => "CRC32C",
            ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
            ChecksumAlgorithm::Sha1 => "SHA1",
            ChecksumAlgorithm::Sha256 => "SHA256",
            ChecksumAlgorithm::Sha512 => "SHA512",
            ChecksumAlgorithm::Md5 => "MD5",
            ChecksumAlgorithm::Xxhash64 => "XXHASH64",
            ChecksumAlgorithm::Xxhash3 => "XXHASH3",
            ChecksumAlgorithm::Xxhash128 => "XXHASH128",
        }
    }

    /// The size of the algorithm's digest in bytes (a value is the base64 of this many bytes).
    pub fn digest_len(self) -> usize {
        match self {
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => 4,
            ChecksumAlgorithm::Crc64Nvme | ChecksumAlgorithm::Xxhash64 | ChecksumAlgorithm::Xxhash3 => 8,
            ChecksumAlgorithm::Md5 | ChecksumAlgorithm::Xxhash128 => 16,
            ChecksumAlgorithm::Sha1 => 20,
            ChecksumAlgorithm::Sha256 => 32,
            ChecksumAlgorithm::Sha512 => 64,
        }
    }

    /// The lower-case header suffix: `x-amz-checksum-crc32`, ...
    pub fn header_name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
            ChecksumAlgorithm::Sha512 => "x-amz-checksum-sha512",
            ChecksumAlgorithm::Md5 => "x-amz-checksum-md5",
            ChecksumAlgorithm::Xxhash64 => "x-amz-checksum-xxhash64",
            ChecksumAlgorithm::Xxhash3 => "x-amz-checksum-xxhash3",
            ChecksumAlgorithm::Xxhash128 => "x-amz-checksum-xxhash128",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str().eq_ignore_ascii_case(s))
    }
}

/// A checksum value: algorithm plus the base64 of the digest, as S3 transmits it. For multipart
/// objects of the COMPOSITE type the value is the checksum of the part checksums followed by
/// `-N`; a FULL_OBJECT value (single puts, FULL_OBJECT multipart uploads) has no suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checksum {
    pub algorithm: ChecksumAlgorithm,
    pub value: String,
}

impl Checksum {
    /// The type of a stored object checksum, as HEAD/GET/GetObjectAttributes report it: a
    /// composite value carries the `-N` part count, a full-object one does not.
    pub fn checksum_type(&self) -> ChecksumType {
        if self.value.contains('-') { ChecksumType::Composite } else { ChecksumType::FullObject }
    }
}

/// How the checksum of a multipart object is formed (`x-amz-checksum-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// The checksum of the concatenated part checksums, then `-N` (every algorithm but CRC64NVME).
    Composite,
    /// The checksum of the whole object, combined from the part CRCs (CRC32, CRC32C, CRC64NVME).
    FullObject,
}

impl ChecksumType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumType::Composite => "COMPOSITE",
            ChecksumType::FullObject => "FULL_OBJECT",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [ChecksumType::Composite, ChecksumType::FullObject].into_iter().find(|t| t.as_str().eq_ignore_ascii_case(s))
    }
}

/// A value the client promises for the body, known before the body (a header) or only after it
/// (an HTTP trailer). The front end fills a deferred value before it ends the body stream; the
/// backend reads it once the stream has ended.
#[derive(Debug, Clone)]
pub enum Expected {
    Known(String),
    Deferred(Arc<OnceLock<String>>),
}

impl Expected {
    pub fn get(&self) -> Option<&str> {
        match self {
            Expected::Known(s) => Some(s),
            Expected::Deferred(cell) => cell.get().map(String::as_str),
        }
    }
}

/// What the client asked for about checksums on an upload.
#[derive(Debug, Clone)]
pub struct ChecksumRequest {
    pub algorithm: ChecksumAlgorithm,
    /// When present the backend verifies the computed value against it after the body ended and
    /// fails with `BadDigest` (nothing published) on mismatch. When absent the backend only
    /// computes and stores the checksum.
    pub expected: Option<Expected>,
}

/// Conditional request headers. Backends evaluate them with [`Conditions::check_read`] and
/// [`Conditions::check_write`] against the current object, atomically with the operation as
/// far as the file system allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    /// `If-Match`: ETag list (quotes optional) or `*`.
    pub if_match: Option<String>,
    /// `If-None-Match`: ETag list or `*` (on PUT: create only).
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<SystemTime>,
    pub if_unmodified_since: Option<SystemTime>,
}

fn etag_list_matches(list: &str, etag: &str) -> bool {
    let etag = etag.trim_matches('"');
    list.split(',').map(|t| t.trim()).any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t).trim_matches('"') == etag)
}

/// 412 PreconditionFailed naming the header that failed (AWS: `<Condition>If-Match</Condition>`).
pub fn precondition_failed(header: &'static str) -> Error {
    Error::code(ErrorCode::PreconditionFailed).with("Condition", header)
}

/// Truncate to whole seconds: HTTP dates carry no sub-second part.
fn secs(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Conditions {
    pub fn is_empty(&self) -> bool {
        self == &Conditions::default()
    }

    /// Evaluate for a read (GET/HEAD, copy source) as RFC 7232 and S3 do: If-Match then
    /// If-Unmodified-Since (412), If-None-Match then If-Modified-Since (304). `current` is the
    /// object's ETag (without quotes) and mtime, or `None` when there is no object.
    pub fn check_read(&self, current: Option<(&str, SystemTime)>) -> Result<()> {
        let Some((etag, mtime)) = current else {
            return Ok(());
        };
        if let Some(m) = &self.if_match {
            if !etag_list_matches(m, etag) {
                return Err(precondition_failed("If-Match"));
            }
        } else if let Some(t) = self.if_unmodified_since
            && secs(mtime) > secs(t)
        {
            return Err(precondition_failed("If-Unmodified-Since"));
        }
        if let Some(m) = &self.if_none_match {
            if etag_list_matches(m, etag) {
                return Err(Error::code(ErrorCode::NotModified));
            }
        } else if let Some(t) = self.if_modified_since
            && secs(mtime) <= secs(t)
        {
            return Err(Error::code(ErrorCode::NotModified));
        }
        Ok(())
    }

    /// Evaluate `x-amz-copy-source-if-*` against the copy source: as [`Conditions::check_read`],
    /// but S3 answers 412 where a read would answer 304.
    pub fn check_copy_source(&self, current: Option<(&str, SystemTime)>) -> Result<()> {
        // Without `<Condition>`: the copy-source headers' name in AWS's answer is not known here.
        self.check_read(current).map_err(|e| match e.code {
            ErrorCode::NotModified | ErrorCode::PreconditionFailed => Error::code(ErrorCode::PreconditionFailed),
            _ => e,
        })
    }

    /// Evaluate for a write (PUT, CompleteMultipartUpload, copy destination): If-None-Match `*`
    /// fails with 412 when the key exists; If-Match fails with 412 when it is absent
    /// (S3 answers NoSuchKey there) or does not match.
    pub fn check_write(&self, current: Option<(&str, SystemTime)>) -> Result<()> {
        if let Some(m) = &self.if_none_match {
            match current {
                Some((etag, _)) if etag_list_matches(m, etag) => {
                    return Err(precondition_failed("If-None-Match"));
                }
                _ => {}
            }
        }
        if let Some(m) = &self.if_match {
            match current {
                None => return Err(Error::code(ErrorCode::NoSuchKey)),
                Some((etag, _)) if !etag_list_matches(m, etag) => {
                    return Err(precondition_failed("If-Match"));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A byte range as requested (`Range: bytes=...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `first-last`, inclusive.
    FromTo(u64, u64),
    /// `first-`.
    From(u64),
    /// `-n`: the last n bytes.
    Suffix(u64),
}

impl ByteRange {
    /// Parse the value of a Range header. `Ok(None)` means "ignore the header" (S3 serves the
    /// whole object for syntactically unusable ranges such as multiple ranges or other units).
    pub fn parse_header(v: &str) -> Option<ByteRange> {
        let spec = v.trim().strip_prefix("bytes=")?;
        if spec.contains(',') {
            return None;
        }
        let (a, b) = spec.split_once('-')?;
        let (a, b) = (a.trim(), b.trim());
        match (a.is_empty(), b.is_empty()) {
            (true, false) => b.parse().ok().map(ByteRange::Suffix),
            (false, true) => a.parse().ok().map(ByteRange::From),
            (false, false) => {
                let (x, y) = (a.parse().ok()?, b.parse().ok()?);
                if y < x { None } else { Some(ByteRange::FromTo(x, y)) }
            }
            (true, true) => None,
        }
    }

    /// Resolve against an object size to `(offset, len)`; `InvalidRange` when unsatisfiable.
    pub fn resolve(self, size: u64) -> Result<(u64, u64)> {
        // AWS names the range and the object's size (`<RangeRequested>`, `<ActualObjectSize>`).
        let bad = || {
            let asked = match self {
                ByteRange::FromTo(a, b) => format!("bytes={a}-{b}"),
                ByteRange::From(a) => format!("bytes={a}-"),
                ByteRange::Suffix(n) => format!("bytes=-{n}"),
            };
            Error::new(ErrorCode::InvalidRange, "The requested range is not satisfiable")
                .with("RangeRequested", asked)
                .with("ActualObjectSize", size.to_string())
        };
        match self {
            ByteRange::FromTo(a, b) => {
                if a >= size {
                    return Err(bad());
                }
                Ok((a, b.min(size - 1) - a + 1))
            }
            ByteRange::From(a) => {
                if a >= size {
                    return Err(bad());
                }
                Ok((a, size - a))
            }
            ByteRange::Suffix(n) => {
                if n == 0 || size == 0 {
                    return Err(bad());
                }
                let n = n.min(size);
                Ok((size - n, n))
            }
        }
    }
}

/// Everything stored about an object (HEAD, and the header of a GET).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    /// Entity tag without quotes.
    pub etag: String,
    pub last_modified: SystemTime,
    pub meta: ObjectMeta,
    /// Stored checksum, if the object was uploaded with one.
    pub checksum: Option<Checksum>,
    /// Sizes of the parts for objects made by multipart upload (enables `partNumber` reads and
    /// GetObjectAttributes ObjectParts); empty for single puts.
    pub part_sizes: Vec<u64>,
    /// The parts' checksums (values of `checksum`'s algorithm, in part order) of an object
    /// completed from a COMPOSITE upload, as GetObjectAttributes lists them; empty otherwise
    /// (and over the HTTP and binary clients, which do not carry them).
    pub part_checksums: Vec<String>,
    pub tag_count: usize,
    /// The version id (`None`: the null version, or a store without versioning).
    pub version_id: Option<String>,
    /// The version's object lock retention and legal hold (empty on buckets without lock).
    pub lock: crate::lock::ObjectLock,
}

impl ObjectInfo {
    /// `(offset, len)` of part `n` (1-based). A single-put object is one part.
    pub fn part_range(&self, n: u32) -> Result<(u64, u64)> {
        let bad = || Error::new(ErrorCode::InvalidPart, format!("part {n} does not exist"));
        if n == 0 {
            return Err(Error::invalid_argument("Part number must be an integer between 1 and 10000, inclusive"));
        }
        if self.part_sizes.is_empty() {
            return if n == 1 { Ok((0, self.size)) } else { Err(bad()) };
        }
        let idx = (n - 1) as usize;
        if idx >= self.part_sizes.len() {
            return Err(bad());
        }
        let off: u64 = self.part_sizes[..idx].iter().sum();
        Ok((off, self.part_sizes[idx]))
    }

    /// The checksum of part `n` (1-based) of a COMPOSITE multipart object, when kept.
    pub fn part_checksum(&self, n: u32) -> Option<Checksum> {
        let c = self.checksum.as_ref().filter(|c| c.checksum_type() == ChecksumType::Composite)?;
        let v = self.part_checksums.get((n as usize).checked_sub(1)?)?;
        Some(Checksum { algorithm: c.algorithm, value: v.clone() })
    }

    pub fn parts_count(&self) -> Option<u32> {
        (!self.part_sizes.is_empty()).then_some(self.part_sizes.len() as u32)
    }
}

/// A PutObject.
#[derive(Debug, Default)]
pub struct PutObjectRequest {
    pub meta: ObjectMeta,
    /// Tags from `x-amz-tagging`.
    pub tags: Tags,
    /// Content-MD5 (decoded). Mismatch gives `BadDigest`, nothing published.
    pub content_md5: Option<[u8; 16]>,
    pub checksum: Option<ChecksumRequest>,
    /// The length the client announced, if any: a body that ends early or runs long fails with
    /// `IncompleteBody` and nothing is published.
    pub content_length: Option<u64>,
    pub conditions: Conditions,
    /// `x-amz-object-lock-*`: the retention and legal hold asked for (the bucket's default
    /// retention applies when none is asked).
    pub lock: crate::lock::ObjectLock,
}

/// A RenameObject (`PUT /bucket/dst?renameObject` with `x-amz-rename-source`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenameObjectRequest {
    /// `x-amz-rename-source-if-*`, evaluated against the source as copy-source conditions are
    /// (any failure is 412 PreconditionFailed).
    pub source_conditions: Conditions,
    /// `If-Match` / `If-None-Match` (`*`: the destination must not exist) against the
    /// destination, as a PUT's write conditions.
    pub conditions: Conditions,
    /// `x-amz-client-token`: a retry with the same token and keys answers success without
    /// renaming again, the token with other keys IdempotencyParameterMismatch
    /// ([`crate::renames`]).
    pub client_token: Option<String>,
}

/// What a successful write returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutObjectOutput {
    pub etag: String,
    pub checksum: Option<Checksum>,
    pub size: u64,
    pub last_modified: SystemTime,
    /// The new version's id on a versioning-enabled bucket (`None`: the null version).
    pub version_id: Option<String>,
}

/// A GetObject (also used for HEAD with `head_object`).
#[derive(Debug, Clone, Default)]
pub struct GetObjectRequest {
    pub range: Option<ByteRange>,
    /// `partNumber` query parameter (mutually exclusive with range).
    pub part_number: Option<u32>,
    pub conditions: Conditions,
    /// `versionId`: read this version (`null`: the null version) instead of the current one.
    pub version_id: Option<String>,
}

/// A GetObject answer: the object's info, the served byte range, and the body.
#[derive(Debug)]
pub struct GetObjectOutput {
    pub info: ObjectInfo,
    /// `(offset, len)` when a range or part was requested (HTTP 206 with Content-Range).
    pub range: Option<(u64, u64)>,
    pub body: crate::Body,
}

/// MetadataDirective / TaggingDirective of CopyObject.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Directive<T> {
    #[default]
    Copy,
    Replace(T),
}

/// The source of an UploadPartCopy: an object, or one version of it, a byte range of it, and
/// the `x-amz-copy-source-if-*` conditions checked against it.
#[derive(Debug, Clone, Default)]
pub struct PartCopySource {
    pub bucket: String,
    pub key: String,
    /// `x-amz-copy-source: /b/k?versionId=`: copy from this version (`None`: the current one).
    pub version_id: Option<String>,
    pub range: Option<ByteRange>,
    pub conditions: Conditions,
}

/// A CopyObject.
#[derive(Debug, Clone, Default)]
pub struct CopyObjectRequest {
    pub metadata: Directive<ObjectMeta>,
    pub tagging: Directive<Tags>,
    /// `x-amz-copy-source-if-*`, evaluated against the source (412 on failure, never 304).
    pub source_conditions: Conditions,
    /// Conditions on the destination (If-None-Match `*` etc.).
    pub conditions: Conditions,
    /// Compute and store this checksum for the new object.
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// `x-amz-copy-source: /b/k?versionId=`: copy this version of the source.
    pub source_version_id: Option<String>,
    /// `x-amz-website-redirect-location` of the request. S3 never copies the source's redirect
    /// location, with either metadata directive: the new object has this one, or none
    /// ([`CopyObjectRequest::destination_meta`]).
    pub website_redirect_location: Option<String>,
    /// The new object's lock, as [`PutObjectRequest::lock`] (a copy never takes the source's).
    pub lock: crate::lock::ObjectLock,
    /// Compute this checksum when the new object would otherwise have none (no
    /// `checksum_algorithm`, and the source has no checksum that carries over): S3's default
    /// CRC64NVME, which the gateway asks for (`s3hpc serve --default-checksum`).
    pub default_checksum: Option<ChecksumAlgorithm>,
}

impl CopyObjectRequest {
    /// Validate what the request itself carries: replaced metadata and tags, the redirect.
    pub fn validate(&self) -> Result<()> {
        if let Directive::Replace(m) = &self.metadata {
            crate::names::validate_meta(m)?;
        }
        if let Directive::Replace(t) = &self.tagging {
            crate::names::validate_tags(t, crate::names::MAX_OBJECT_TAGS)?;
        }
        if self.website_redirect_location.is_some() {
            let only =
                ObjectMeta { website_redirect_location: self.website_redirect_location.clone(), ..Default::default() };
            crate::names::validate_meta(&only)?;
        }
        Ok(())
    }

    /// The new object's metadata, given the source's: the source's (COPY) or the request's
    /// (REPLACE), and in both cases the request's redirect location, never the source's (S3's
    /// CopyObject: the redirect "is not copied when using the x-amz-metadata-directive header";
    /// a REPLACE meta that names one keeps it when the request field is absent).
    pub fn destination_meta(&self, source: &ObjectMeta) -> ObjectMeta {
        let mut m = match &self.metadata {
            Directive::Copy => ObjectMeta { website_redirect_location: None, ..source.clone() },
            Directive::Replace(m) => m.clone(),
        };
        if self.website_redirect_location.is_some() {
            m.website_redirect_location = self.website_redirect_location.clone();
        }
        m
    }

    /// A copy of an object onto itself is legal only when it changes the metadata or the
    /// redirect location, or restores another version; otherwise S3 answers InvalidRequest.
    pub fn changes_nothing(&self) -> bool {
        self.metadata == Directive::Copy && self.website_redirect_location.is_none() && self.source_version_id.is_none()
    }
}

/// ListObjects (v1 and v2 map onto this).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListObjectsRequest {
    pub prefix: String,
    pub delimiter: Option<String>,
    /// Return keys strictly after this one (marker, start-after, or the decoded continuation
    /// token). When a delimiter is given and `start_after` is a common prefix (it starts with
    /// `prefix` and ends with the delimiter's first occurrence after the prefix), every key under
    /// that common prefix is skipped too, as S3 does.
    pub start_after: Option<String>,
    /// 0..=1000; values above 1000 are capped at 1000.
    pub max_keys: usize,
}

/// One listed object. `etag` and `size` are always filled; the full metadata is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectSummary {
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub last_modified: SystemTime,
}

/// A page of a listing: objects and common prefixes, each in key order (they are interleaved
/// in S3's order; `next_marker` is the greatest of the returned entries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListObjectsPage {
    pub objects: Vec<ObjectSummary>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    /// When truncated: the last key or common prefix returned; pass it as `start_after` to continue.
    pub next_marker: Option<String>,
}

/// Maximum keys per listing page.
pub const MAX_KEYS: usize = 1000;

/// An owner as listings name it (their `Owner` and `Initiator` elements): a canonical id and,
/// when known, a display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerInfo {
    pub id: String,
    pub display_name: Option<String>,
}

/// What [`crate::Store::owner`] is asked about: the bucket, an object (its current version), or
/// a multipart upload in progress (by upload id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned<'a> {
    Bucket,
    Object(&'a str),
    Upload(&'a str),
}

/// Multipart upload as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadInfo {
    pub key: String,
    pub upload_id: String,
    pub initiated: SystemTime,
    /// The checksum algorithm the upload was created with, if any.
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// The upload's checksum type (present exactly when `checksum_algorithm` is).
    pub checksum_type: Option<ChecksumType>,
}

/// ListMultipartUploads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListUploadsRequest {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub key_marker: Option<String>,
    pub upload_id_marker: Option<String>,
    /// 0 means the default, 1000; larger values are capped at 1000.
    pub max_uploads: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListUploadsPage {
    pub uploads: Vec<UploadInfo>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    pub next_key_marker: Option<String>,
    pub next_upload_id_marker: Option<String>,
}

/// CreateMultipartUpload.
#[derive(Debug, Clone, Default)]
pub struct CreateMultipartRequest {
    pub meta: ObjectMeta,
    pub tags: Tags,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// `x-amz-checksum-type`. `None` means the algorithm's default (FULL_OBJECT for CRC64NVME,
    /// COMPOSITE for the others); see [`crate::multipart::resolve_checksum_type`].
    pub checksum_type: Option<ChecksumType>,
    /// The completed object's lock, as [`PutObjectRequest::lock`].
    pub lock: crate::lock::ObjectLock,
}

/// UploadPart.
#[derive(Debug, Default)]
pub struct UploadPartRequest {
    pub content_md5: Option<[u8; 16]>,
    pub checksum: Option<ChecksumRequest>,
    pub content_length: Option<u64>,
    /// Compute this checksum of the part when neither the request nor the upload names an
    /// algorithm (S3's default CRC64NVME, asked for by the gateway). A complete of an upload
    /// without an algorithm whose chosen parts all have a CRC64NVME gets the FULL_OBJECT
    /// CRC64NVME combined from them ([`crate::multipart::completion_checksum`]).
    pub default_checksum: Option<ChecksumAlgorithm>,
}

/// An uploaded part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    pub part_number: u32,
    pub etag: String,
    pub size: u64,
    pub last_modified: SystemTime,
    pub checksum: Option<Checksum>,
}

/// ListParts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPartsRequest {
    pub part_number_marker: Option<u32>,
    /// 0 means the default, 1000; larger values are capped at 1000.
    pub max_parts: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPartsPage {
    pub parts: Vec<PartInfo>,
    pub is_truncated: bool,
    pub next_part_number_marker: Option<u32>,
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// The upload's checksum type (present exactly when `checksum_algorithm` is).
    pub checksum_type: Option<ChecksumType>,
}

/// One entry of CompleteMultipartUpload's part list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletePart {
    pub part_number: u32,
    /// ETag as sent by the client (quotes optional).
    pub etag: String,
    /// Checksum the client claims for the part, if any (verified against the stored one).
    pub checksum: Option<Checksum>,
}

/// CompleteMultipartUpload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompleteMultipartRequest {
    /// The chosen parts, in ascending part order.
    pub parts: Vec<CompletePart>,
    pub conditions: Conditions,
    /// The whole object's checksum the client expects (`x-amz-checksum-crc32` etc. on the
    /// complete): it must name the upload's algorithm and equal the final checksum, otherwise
    /// the complete fails (`BadDigest` on a different value) and nothing is published.
    pub checksum: Option<Checksum>,
    /// `x-amz-checksum-type` on the complete: must be the upload's type when given.
    pub checksum_type: Option<ChecksumType>,
}

/// Minimum size of every part but the last.
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;
/// Largest part number.
pub const MAX_PART_NUMBER: u32 = 10_000;
/// Largest single PUT AWS accepts.
pub const MAX_PUT_SIZE: u64 = 5 * 1024 * 1024 * 1024;
/// Longest key in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// Largest user metadata (names plus values) in bytes.
pub const MAX_USER_META: usize = 2048;
