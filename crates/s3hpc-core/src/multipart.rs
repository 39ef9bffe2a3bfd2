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

/// The rules of CompleteMultipartUpload, shared by every backend: a non-empty list in strictly
/// ascending part order (`InvalidPartOrder`), each part uploaded with a matching ETag and, when
/// the client sends one, a matching checksum (`InvalidPart`), and every part but the last at
/// least [`MIN_PART_SIZE`] (`EntityTooSmall`). Returns the stored infos of the chosen parts.
pub fn validate_completion<'a>(
    parts: &[CompletePart],
    lookup: impl Fn(u32) -> Option<&'a PartInfo>,
) -> Result<Vec<PartInfo>> {
    if parts.is_empty() {
        return Err(Error::new(ErrorCode::MalformedXML, "You must specify at least one part"));
    }
    let mut chosen = Vec::with_capacity(parts.len());
    let mut prev = 0u32;
    for p in parts {
        if p.part_number <= prev {
            return Err(Error::code(ErrorCode::InvalidPartOrder));
        }
        prev = p.part_number;
        let stored = lookup(p.part_number).ok_or_else(|| Error::code(ErrorCode::InvalidPart))?;
        if stored.etag != p.etag.trim_matches('"') {
            return Err(Error::code(ErrorCode::InvalidPart));
        }
        if let Some(c) = &p.checksum
            && stored.checksum.as_ref().map(|s| &s.value) != Some(&c.value)
        {
            return Err(Error::code(ErrorCode::InvalidPart));
        }
        chosen.push(stored.clone());
    }
    for p in &chosen[..chosen.len() - 1] {
        if p.size < MIN_PART_SIZE {
            return Err(Error::new(
                ErrorCode::EntityTooSmall,
                format!("Part {} is {} bytes; every part but the last must be at least 5 MiB", p.part_number, p.size),
            ));
        }
    }
    Ok(chosen)
}

/// The composite checksum of a completed upload, when the upload was created with an algorithm.
pub fn multipart_checksum(alg: Option<ChecksumAlgorithm>, chosen: &[PartInfo]) -> Result<Option<Checksum>> {
    let Some(alg) = alg else { return Ok(None) };
    let mut sums = Vec::with_capacity(chosen.len());
    for p in chosen {
        match &p.checksum {
            Some(c) if c.algorithm == alg => sums.push(c),
            _ => return Ok(None),
        }
    }
    checksum::composite_checksum(alg, sums).map(Some)
}
