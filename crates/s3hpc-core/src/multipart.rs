//! The rules of multipart uploads that every backend applies the same way.

use crate::checksum;
use crate::error::{Error, ErrorCode, Result};
use crate::types::*;

/// Part numbers are 1..=10000.
pub fn check_part_number(n: u32) -> Result<()> {
    if n == 0 || n > MAX_PART_NUMBER {
        return Err(Error::invalid_argument("Part number must be an integer between 1 and 10000, inclusive"));
    }
    Ok(())
}

/// A part's checksum algorithm must be the upload's (S3 answers InvalidRequest "Checksum Type
/// mismatch occurred" otherwise). A part without one gets the upload's algorithm computed.
pub fn check_part_checksum(upload: Option<ChecksumAlgorithm>, part: Option<&ChecksumRequest>) -> Result<()> {
    match (upload, part.map(|c| c.algorithm)) {
        (Some(u), Some(p)) if u != p => Err(Error::new(
            ErrorCode::InvalidRequest,
            format!(
                "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                u.as_str().to_ascii_lowercase(),
                p.as_str().to_ascii_lowercase()
            ),
        )),
        _ => Ok(()),
    }
}

/// The rules of CompleteMultipartUpload, shared by every backend: a non-empty list in strictly
/// ascending part order (`InvalidPartOrder`), each part uploaded with a matching ETag and, when
/// the client sends one, a matching checksum (`InvalidPart`), and every part but the last at
/// least [`MIN_PART_SIZE`] (`EntityTooSmall`). Returns the stored infos of the chosen parts.
///
/// The order is judged on the whole list before any part is looked up, so a list naming a part
/// number twice is InvalidPartOrder whichever ETags it gives (AWS answers a completion that
/// repeats a part with InvalidPartOrder, e.g. transloadit/uppy#2351; a part uploaded again keeps
/// only its latest upload, so the first of two entries with different ETags would otherwise be
/// answered InvalidPart).
pub fn validate_completion<'a>(
    parts: &[CompletePart],
    lookup: impl Fn(u32) -> Option<&'a PartInfo>,
) -> Result<Vec<PartInfo>> {
    if parts.is_empty() {
        return Err(Error::new(ErrorCode::MalformedXML, "You must specify at least one part"));
    }
    if parts.windows(2).any(|w| w[1].part_number <= w[0].part_number) {
        return Err(Error::code(ErrorCode::InvalidPartOrder));
    }
    let mut chosen = Vec::with_capacity(parts.len());
    for p in parts {
        // AWS names the part (`<PartNumber>`, `<ETag>` as listed); the front end adds `<UploadId>`.
        let invalid = || {
            Error::code(ErrorCode::InvalidPart)
                .with("PartNumber", p.part_number.to_string())
                .with("ETag", p.etag.as_str())
        };
        let stored = lookup(p.part_number).ok_or_else(invalid)?;
        if stored.etag != p.etag.trim_matches('"') {
            return Err(invalid());
        }
        if let Some(c) = &p.checksum
            && stored.checksum.as_ref().map(|s| &s.value) != Some(&c.value)
        {
            return Err(invalid());
        }
        chosen.push(stored.clone());
    }
    for p in &chosen[..chosen.len() - 1] {
        if p.size < MIN_PART_SIZE {
            return Err(Error::new(
                ErrorCode::EntityTooSmall,
                format!("Part {} is {} bytes; every part but the last must be at least 5 MiB", p.part_number, p.size),
            )
            .with("ProposedSize", p.size.to_string())
            .with("MinSizeAllowed", MIN_PART_SIZE.to_string()));
        }
    }
    Ok(chosen)
}

/// The checksum type of an upload created with `alg` and the requested `ty` (S3's rules):
/// CRC64NVME is always FULL_OBJECT, CRC32 and CRC32C may be either (COMPOSITE by default), the
/// SHAs, MD5 and the xxHashes only COMPOSITE (they do not combine). A type without an algorithm, or a combination S3 does not support,
/// is `InvalidRequest`. `Some` exactly when `alg` is.
pub fn resolve_checksum_type(alg: Option<ChecksumAlgorithm>, ty: Option<ChecksumType>) -> Result<Option<ChecksumType>> {
    use ChecksumAlgorithm as A;
    use ChecksumType as T;
    let Some(a) = alg else {
        return match ty {
            None => Ok(None),
            Some(_) => Err(Error::new(
                ErrorCode::InvalidRequest,
                "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header",
            )),
        };
    };
    match (a, ty) {
        (A::Crc64Nvme, None | Some(T::FullObject)) => Ok(Some(T::FullObject)),
        (A::Crc32 | A::Crc32c, Some(t)) => Ok(Some(t)),
        (
            A::Crc32 | A::Crc32c | A::Sha1 | A::Sha256 | A::Sha512 | A::Md5 | A::Xxhash64 | A::Xxhash3 | A::Xxhash128,
            None,
        )
        | (A::Sha1 | A::Sha256 | A::Sha512 | A::Md5 | A::Xxhash64 | A::Xxhash3 | A::Xxhash128, Some(T::Composite)) => {
            Ok(Some(T::Composite))
        }
        (_, Some(t)) => Err(Error::new(
            ErrorCode::InvalidRequest,
            // AWS's text: the type in capitals, the algorithm in lower case, a full stop.
            format!(
                "The {} checksum type cannot be used with the {} checksum algorithm.",
                t.as_str(),
                a.as_str().to_ascii_lowercase()
            ),
        )),
    }
}

/// The checksum of a completed upload created with `alg` and type `ty` (as resolved by
/// [`resolve_checksum_type`]; `None` with an algorithm means its default), from the chosen parts:
/// COMPOSITE is the checksum of the part checksums plus `-N`, FULL_OBJECT the CRC of the whole
/// object combined from the part CRCs. `None` when the upload has no algorithm or a part lacks a
/// checksum of it. Then the client's side of the complete is checked: a `checksum_type` other
/// than the upload's, or an expected checksum of another algorithm, is `InvalidRequest`; an
/// expected value that differs (or cannot be verified) is `BadDigest`. For COMPOSITE uploads the
/// expected value may omit the `-N` suffix.
pub fn completion_checksum(
    alg: Option<ChecksumAlgorithm>,
    ty: Option<ChecksumType>,
    chosen: &[PartInfo],
    req: &CompleteMultipartRequest,
) -> Result<Option<Checksum>> {
    let ty = match (alg, ty) {
        (Some(_), Some(t)) => Some(t),
        _ => resolve_checksum_type(alg, None)?,
    };
    if let Some(want) = req.checksum_type
        && Some(want) != ty
    {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            format!(
                "The upload was created using the {} checksum mode; the complete request must use the same mode, not {}",
                ty.map_or("null", ChecksumType::as_str),
                want.as_str()
            ),
        ));
    }
    let computed = match alg {
        // An upload created without an algorithm: the FULL_OBJECT CRC64NVME when every chosen
        // part has one (the gateway's default checksum, or parts the client sent it for).
        None => {
            let crcs: Vec<_> = chosen
                .iter()
                .map_while(|p| p.checksum.as_ref().filter(|c| c.algorithm == ChecksumAlgorithm::Crc64Nvme))
                .zip(chosen.iter().map(|p| p.size))
                .collect();
            if crcs.len() == chosen.len() && !chosen.is_empty() {
                Some(checksum::full_object_checksum(ChecksumAlgorithm::Crc64Nvme, crcs)?)
            } else {
                None
            }
        }
        Some(alg) => {
            let mut sums = Vec::with_capacity(chosen.len());
            for p in chosen {
                match &p.checksum {
                    Some(c) if c.algorithm == alg => sums.push((c, p.size)),
                    _ => break,
                }
            }
            if sums.len() < chosen.len() {
                None
            } else if ty == Some(ChecksumType::FullObject) {
                Some(checksum::full_object_checksum(alg, sums)?)
            } else {
                Some(checksum::composite_checksum(alg, sums.into_iter().map(|(c, _)| c))?)
            }
        }
    };
    if let Some(exp) = &req.checksum {
        if Some(exp.algorithm) != alg {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                format!(
                    "The upload was created using the {} checksum algorithm; the complete request sent {}",
                    alg.map_or("null", ChecksumAlgorithm::as_str),
                    exp.algorithm.header_name()
                ),
            ));
        }
        let matches = computed.as_ref().is_some_and(|c| {
            c.value == exp.value
                || (ty == Some(ChecksumType::Composite) && c.value.split_once('-').is_some_and(|(v, _)| v == exp.value))
        });
        if !matches {
            return Err(Error::new(
                ErrorCode::BadDigest,
                format!("The {} you specified did not match the calculated checksum.", exp.algorithm.as_str()),
            ));
        }
    }
    Ok(computed)
}

/// The bytes an UploadPartCopy takes from a source of `size` bytes: the whole source, or the
/// `x-amz-copy-source-range`, which must lie inside it (AWS answers InvalidArgument otherwise).
pub fn copy_source_range(range: Option<crate::ByteRange>, size: u64) -> crate::Result<(u64, u64)> {
    let Some(r) = range else { return Ok((0, size)) };
    let past_end = match r {
        crate::ByteRange::FromTo(first, last) => last >= size || first > last,
        _ => false,
    };
    if past_end {
        return Err(crate::Error::invalid_argument(format!(
            "Range specified is not valid for source object of size: {size}"
        )));
    }
    r.resolve(size)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::checksum::checksum_of;

    #[test]
    fn checksum_type_rules() {
        use ChecksumAlgorithm as A;
        use ChecksumType as T;
        let ok = |a, t| resolve_checksum_type(a, t).unwrap();
        let err = |a, t| resolve_checksum_type(a, t).unwrap_err().code;
        assert_eq!(ok(None, None), None);
        assert_eq!(err(None, Some(T::FullObject)), ErrorCode::InvalidRequest);
        assert_eq!(err(None, Some(T::Composite)), ErrorCode::InvalidRequest);
        assert_eq!(ok(Some(A::Crc64Nvme), None), Some(T::FullObject));
        assert_eq!(ok(Some(A::Crc64Nvme), Some(T::FullObject)), Some(T::FullObject));
        assert_eq!(err(Some(A::Crc64Nvme), Some(T::Composite)), ErrorCode::InvalidRequest);
        for a in [A::Crc32, A::Crc32c] {
            assert_eq!(ok(Some(a), None), Some(T::Composite));
            assert_eq!(ok(Some(a), Some(T::Composite)), Some(T::Composite));
            assert_eq!(ok(Some(a), Some(T::FullObject)), Some(T::FullObject));
        }
        for a in [A::Sha1, A::Sha256, A::Sha512, A::Md5, A::Xxhash64, A::Xxhash3, A::Xxhash128] {
            assert_eq!(ok(Some(a), None), Some(T::Composite));
            assert_eq!(ok(Some(a), Some(T::Composite)), Some(T::Composite));
            assert_eq!(err(Some(a), Some(T::FullObject)), ErrorCode::InvalidRequest);
        }
    }

    fn part(n: u32, alg: ChecksumAlgorithm, data: &[u8]) -> PartInfo {
        PartInfo {
            part_number: n,
            etag: String::new(),
            size: data.len() as u64,
            last_modified: SystemTime::UNIX_EPOCH,
            checksum: Some(checksum_of(alg, data)),
        }
    }

    #[test]
    fn a_repeated_part_number_is_invalid_part_order_whatever_its_etags() {
        let stored = PartInfo {
            part_number: 1,
            etag: "new".into(),
            size: 8,
            last_modified: SystemTime::UNIX_EPOCH,
            checksum: None,
        };
        let cp = |etag: &str| CompletePart { part_number: 1, etag: etag.into(), checksum: None };
        let lookup = |n: u32| (n == 1).then_some(&stored);
        for list in [vec![cp("old"), cp("new")], vec![cp("new"), cp("old")], vec![cp("new"), cp("new")]] {
            assert_eq!(validate_completion(&list, lookup).unwrap_err().code, ErrorCode::InvalidPartOrder);
        }
        assert_eq!(validate_completion(&[cp("old")], lookup).unwrap_err().code, ErrorCode::InvalidPart);
        assert_eq!(validate_completion(&[cp("new")], lookup).unwrap().len(), 1);
    }

    #[test]
    fn completion_checksum_types_and_expected_values() {
        use ChecksumAlgorithm as A;
        use ChecksumType as T;
        let (a, b) = (vec![7u8; 1000], b"tail".to_vec());
        let whole = [a.as_slice(), b.as_slice()].concat();
        let none = CompleteMultipartRequest::default();
        for alg in [A::Crc32, A::Crc32c, A::Crc64Nvme] {
            let parts = [part(1, alg, &a), part(2, alg, &b)];
            let full = completion_checksum(Some(alg), Some(T::FullObject), &parts, &none).unwrap().unwrap();
            assert_eq!(full, checksum_of(alg, &whole));
            assert_eq!(full.checksum_type(), T::FullObject);
            // The right expected value passes, a wrong one is BadDigest.
            let good = CompleteMultipartRequest { checksum: Some(full.clone()), ..Default::default() };
            assert_eq!(completion_checksum(Some(alg), Some(T::FullObject), &parts, &good).unwrap(), Some(full));
            let bad = CompleteMultipartRequest { checksum: Some(checksum_of(alg, b"other")), ..Default::default() };
            let e = completion_checksum(Some(alg), Some(T::FullObject), &parts, &bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadDigest);
        }
        // CRC64NVME without a stored type is FULL_OBJECT; CRC32 without one COMPOSITE.
        let parts = [part(1, A::Crc64Nvme, &a), part(2, A::Crc64Nvme, &b)];
        let c = completion_checksum(Some(A::Crc64Nvme), None, &parts, &none).unwrap().unwrap();
        assert_eq!(c, checksum_of(A::Crc64Nvme, &whole));
        let parts = [part(1, A::Crc32, &a), part(2, A::Crc32, &b)];
        let comp = completion_checksum(Some(A::Crc32), None, &parts, &none).unwrap().unwrap();
        assert!(comp.value.ends_with("-2") && comp.checksum_type() == T::Composite, "{comp:?}");
        // A composite expected value with or without the -N suffix.
        for v in [comp.value.clone(), comp.value.trim_end_matches("-2").to_string()] {
            let r = CompleteMultipartRequest {
                checksum: Some(Checksum { algorithm: A::Crc32, value: v }),
                ..Default::default()
            };
            assert!(completion_checksum(Some(A::Crc32), Some(T::Composite), &parts, &r).is_ok());
        }
        // The whole-object CRC is not the value of a COMPOSITE upload.
        let r = CompleteMultipartRequest { checksum: Some(checksum_of(A::Crc32, &whole)), ..Default::default() };
        assert_eq!(
            completion_checksum(Some(A::Crc32), Some(T::Composite), &parts, &r).unwrap_err().code,
            ErrorCode::BadDigest
        );
        // Another mode, or another algorithm, than the upload's: InvalidRequest.
        let r = CompleteMultipartRequest { checksum_type: Some(T::FullObject), ..Default::default() };
        let e = completion_checksum(Some(A::Crc32), Some(T::Composite), &parts, &r).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        let r = CompleteMultipartRequest { checksum_type: Some(T::Composite), ..Default::default() };
        assert!(completion_checksum(Some(A::Crc32), Some(T::Composite), &parts, &r).is_ok());
        let r = CompleteMultipartRequest { checksum: Some(checksum_of(A::Crc32c, &whole)), ..Default::default() };
        let e = completion_checksum(Some(A::Crc32), Some(T::FullObject), &parts, &r).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        let e = completion_checksum(None, None, &parts, &r).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        // A part without a checksum of the algorithm: no checksum, and an expected one fails.
        let mixed = [part(1, A::Crc32, &a), part(2, A::Crc32c, &b)];
        assert_eq!(completion_checksum(Some(A::Crc32), Some(T::FullObject), &mixed, &none).unwrap(), None);
        let r = CompleteMultipartRequest { checksum: Some(checksum_of(A::Crc32, &whole)), ..Default::default() };
        let e = completion_checksum(Some(A::Crc32), Some(T::FullObject), &mixed, &r).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadDigest);
        // No algorithm: no checksum.
        assert_eq!(completion_checksum(None, None, &parts, &none).unwrap(), None);
    }
}

/// The part checksums a completed object keeps ([`crate::ObjectInfo::part_checksums`]): those of
/// the chosen parts when the object's checksum is COMPOSITE and every part has one of its
/// algorithm, else none (a FULL_OBJECT object lists no part checksums, as on S3).
pub fn kept_part_checksums(object: Option<&Checksum>, chosen: &[PartInfo]) -> Vec<String> {
    let Some(c) = object.filter(|c| c.checksum_type() == ChecksumType::Composite) else { return Vec::new() };
    chosen
        .iter()
        .map(|p| p.checksum.as_ref().filter(|pc| pc.algorithm == c.algorithm).map(|pc| pc.value.clone()))
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default()
}

/// How long the result of a completed upload answers a retried CompleteMultipartUpload of it
/// (SDKs retry a complete whose answer they did not get; S3 answers them with the first result).
pub const COMPLETED_RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);

/// What a completed upload leaves behind for [`COMPLETED_RETRY_WINDOW`]: its key, the part list
/// it was completed with and the answer given, so that a retried complete gets the same 200.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedUpload {
    pub key: String,
    /// Part numbers and ETags (unquoted) of the parts the object was made of.
    pub parts: Vec<(u32, String)>,
    pub etag: String,
    pub checksum: Option<Checksum>,
    pub size: u64,
    pub last_modified: std::time::SystemTime,
    pub completed_at: std::time::SystemTime,
    /// The version id the object got (versioned buckets), answered again on a retry.
    pub version_id: Option<String>,
}

fn to_ns(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn from_ns(ns: u128) -> Option<std::time::SystemTime> {
    let d = std::time::Duration::new(u64::try_from(ns / 1_000_000_000).ok()?, (ns % 1_000_000_000) as u32);
    std::time::UNIX_EPOCH.checked_add(d)
}

const COMPLETED_MAGIC: &str = "s3hpc-completed-upload 1";

impl CompletedUpload {
    /// The record of an upload of `key` completed with `chosen` parts and answered `out`.
    pub fn new(key: &str, chosen: &[PartInfo], out: &PutObjectOutput) -> Self {
        CompletedUpload {
            key: key.to_string(),
            parts: chosen.iter().map(|p| (p.part_number, p.etag.clone())).collect(),
            etag: out.etag.clone(),
            checksum: out.checksum.clone(),
            size: out.size,
            last_modified: out.last_modified,
            completed_at: std::time::SystemTime::now(),
            version_id: out.version_id.clone(),
        }
    }

    /// Is the record past [`COMPLETED_RETRY_WINDOW`] at `now`?
    pub fn expired(&self, now: std::time::SystemTime) -> bool {
        now.duration_since(self.completed_at).is_ok_and(|d| d > COMPLETED_RETRY_WINDOW)
    }

    /// The answer to a complete of this upload: the first answer when the request names the same
    /// key and the same parts (numbers and ETags, quotes ignored) and any whole-object checksum it
    /// expects is the one the object got. A complete with another part list (or another key) is
    /// `NoSuchUpload`: that list never became an object, and the upload no longer exists.
    pub fn answer(&self, key: &str, upload_id: &str, req: &CompleteMultipartRequest) -> Result<PutObjectOutput> {
        let same_parts = req.parts.len() == self.parts.len()
            && req
                .parts
                .iter()
                .zip(&self.parts)
                .all(|(a, (n, e))| a.part_number == *n && a.etag.trim_matches('"') == e);
        if key != self.key || !same_parts {
            return Err(Error::no_such_upload(upload_id));
        }
        if let Some(exp) = &req.checksum {
            let matches = self.checksum.as_ref().is_some_and(|c| {
                c.algorithm == exp.algorithm
                    && (c.value == exp.value || c.value.split_once('-').is_some_and(|(v, _)| v == exp.value))
            });
            if !matches {
                return Err(Error::new(
                    ErrorCode::BadDigest,
                    format!("The {} you specified did not match the calculated checksum.", exp.algorithm.as_str()),
                ));
            }
        }
        Ok(PutObjectOutput {
            version_id: self.version_id.clone(),
            etag: self.etag.clone(),
            checksum: self.checksum.clone(),
            size: self.size,
            last_modified: self.last_modified,
        })
    }

    /// A line-based text form (the key hex-encoded, so any byte of it is safe).
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("{COMPLETED_MAGIC}\nkey {}\netag {}\n", hex::encode(&self.key), self.etag);
        if let Some(c) = &self.checksum {
            s.push_str(&format!("checksum {} {}\n", c.algorithm.as_str(), c.value));
        }
        s.push_str(&format!(
            "size {}\nmodified {}\ncompleted {}\n",
            self.size,
            to_ns(self.last_modified),
            to_ns(self.completed_at)
        ));
        if let Some(v) = &self.version_id {
            s.push_str(&format!("version {v}\n"));
        }
        for (n, e) in &self.parts {
            s.push_str(&format!("part {n} {e}\n"));
        }
        s.push_str("end\n");
        s.into_bytes()
    }

    /// The record [`Self::encode`] wrote; `None` for anything else (also a truncated record).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let s = std::str::from_utf8(b).ok()?;
        let mut lines = s.lines();
        if lines.next()? != COMPLETED_MAGIC {
            return None;
        }
        let (mut key, mut etag, mut checksum, mut size, mut modified, mut completed) =
            (None, None, None, None, None, None);
        let mut version_id = None;
        let mut parts = Vec::new();
        let mut ended = false;
        for l in lines {
            let (tag, rest) = l.split_once(' ').unwrap_or((l, ""));
            match tag {
                "key" => key = Some(String::from_utf8(hex::decode(rest).ok()?).ok()?),
                "etag" => etag = Some(rest.to_string()),
                "checksum" => {
                    let (a, v) = rest.split_once(' ')?;
                    checksum = Some(Checksum { algorithm: ChecksumAlgorithm::parse(a)?, value: v.to_string() });
                }
                "size" => size = Some(rest.parse().ok()?),
                "modified" => modified = from_ns(rest.parse().ok()?),
                "completed" => completed = from_ns(rest.parse().ok()?),
                "version" => version_id = Some(rest.to_string()).filter(|v| crate::versions::is_valid_version_id(v)),
                "part" => {
                    let (n, e) = rest.split_once(' ')?;
                    parts.push((n.parse().ok()?, e.to_string()));
                }
                "end" => ended = true,
                _ => return None,
            }
        }
        if !ended || parts.is_empty() {
            return None;
        }
        Some(CompletedUpload {
            key: key?,
            parts,
            etag: etag?,
            checksum,
            size: size?,
            last_modified: modified?,
            completed_at: completed?,
            version_id,
        })
    }
}

#[cfg(test)]
mod completed_tests {
    use super::*;

    fn rec() -> CompletedUpload {
        let parts = vec![
            PartInfo {
                part_number: 1,
                etag: "aa".into(),
                size: 5,
                last_modified: std::time::UNIX_EPOCH,
                checksum: None,
            },
            PartInfo {
                part_number: 3,
                etag: "bb".into(),
                size: 5,
                last_modified: std::time::UNIX_EPOCH,
                checksum: None,
            },
        ];
        let out = PutObjectOutput {
            version_id: Some("0123456789abcdef0123456789abcdef".into()),
            etag: "cc-2".into(),
            checksum: Some(Checksum { algorithm: ChecksumAlgorithm::Crc32, value: "AAAAAA==-2".into() }),
            size: 10,
            last_modified: std::time::UNIX_EPOCH + std::time::Duration::from_nanos(1_700_000_000_123_456_789),
        };
        CompletedUpload::new("a key\nwith a newline/ü", &parts, &out)
    }

    fn cp(n: u32, e: &str) -> CompletePart {
        CompletePart { part_number: n, etag: e.into(), checksum: None }
    }

    #[test]
    fn completed_record_round_trips_and_refuses_damage() {
        let r = rec();
        let b = r.encode();
        assert_eq!(CompletedUpload::decode(&b), Some(r.clone()));
        // A record cut short (a crash mid-write) or of another kind is not one.
        assert_eq!(CompletedUpload::decode(&b[..b.len() - 4]), None);
        assert_eq!(CompletedUpload::decode(b"junk"), None);
        assert!(!r.expired(std::time::SystemTime::now()));
        assert!(r.expired(r.completed_at + COMPLETED_RETRY_WINDOW + std::time::Duration::from_secs(1)));
    }

    #[test]
    fn only_the_same_part_list_gets_the_first_answer() {
        let r = rec();
        let key = r.key.clone();
        let req = |parts| CompleteMultipartRequest { parts, ..Default::default() };
        let out = r.answer(&key, "id", &req(vec![cp(1, "\"aa\""), cp(3, "bb")])).unwrap();
        assert_eq!((out.etag.as_str(), out.size), ("cc-2", 10));
        assert_eq!(out.version_id.as_deref(), Some("0123456789abcdef0123456789abcdef"));
        for parts in [vec![cp(1, "aa")], vec![cp(1, "aa"), cp(2, "bb")], vec![cp(1, "aa"), cp(3, "bx")]] {
            assert_eq!(r.answer(&key, "id", &req(parts)).unwrap_err().code, ErrorCode::NoSuchUpload);
        }
        let same = vec![cp(1, "aa"), cp(3, "bb")];
        assert_eq!(r.answer("other", "id", &req(same.clone())).unwrap_err().code, ErrorCode::NoSuchUpload);
        let mut wrong = req(same.clone());
        wrong.checksum = Some(Checksum { algorithm: ChecksumAlgorithm::Crc32, value: "AAAAAB==".into() });
        assert_eq!(r.answer(&key, "id", &wrong).unwrap_err().code, ErrorCode::BadDigest);
        let mut right = req(same);
        right.checksum = Some(Checksum { algorithm: ChecksumAlgorithm::Crc32, value: "AAAAAA==".into() });
        assert!(r.answer(&key, "id", &right).is_ok());
    }
}
