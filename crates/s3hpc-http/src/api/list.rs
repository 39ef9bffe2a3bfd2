//! Listings: ListObjects (v1, v2, versions), ListParts, ListMultipartUploads.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use sha2::{Digest, Sha256};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::util::{Query, iso8601, url_encode_key};
use crate::xml::{DECL, NS, checksum_element, elem};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ListKind {
    V1,
    V2,
}

/// Version byte of the continuation tokens this gateway writes.
const TOKEN_VERSION: u8 = 1;
/// Length of a token's tag.
const TOKEN_TAG: usize = 8;

/// The tag that binds a token to its bucket and position: the first bytes of a SHA-256 over a
/// domain string, the version, the bucket and the key. Not a secret (a client may start a
/// listing anywhere with `start-after` anyway), but junk and tokens of another bucket fail it.
fn token_tag(bucket: &str, key: &str) -> [u8; TOKEN_TAG] {
    let mut h = Sha256::new();
    h.update(b"s3hpc ListObjectsV2 continuation\0");
    h.update([TOKEN_VERSION]);
    h.update((bucket.len() as u64).to_be_bytes());
    h.update(bucket.as_bytes());
    h.update(key.as_bytes());
    let d = h.finalize();
    let mut tag = [0u8; TOKEN_TAG];
    tag.copy_from_slice(&d[..TOKEN_TAG]);
    tag
}

/// XOR `data` with a key stream drawn from the tag (SHA-256 in counter mode), so a token does
/// not spell the key it resumes after. Obfuscation, not secrecy.
fn mask(tag: &[u8], data: &mut [u8]) {
    for (i, chunk) in data.chunks_mut(32).enumerate() {
        let block = Sha256::new().chain_update(tag).chain_update((i as u32).to_be_bytes()).finalize();
        chunk.iter_mut().zip(block.iter()).for_each(|(b, k)| *b ^= k);
    }
}

/// `NextContinuationToken` for a page that ended at `key`: URL-safe base64 of version, tag and
/// masked key. Opaque to clients and stateless: any gateway on the root can continue it.
pub(super) fn encode_continuation_token(bucket: &str, key: &str) -> String {
    let tag = token_tag(bucket, key);
    let mut raw = Vec::with_capacity(1 + TOKEN_TAG + key.len());
    raw.push(TOKEN_VERSION);
    raw.extend_from_slice(&tag);
    raw.extend_from_slice(key.as_bytes());
    mask(&tag, &mut raw[1 + TOKEN_TAG..]);
    B64URL.encode(raw)
}

/// The key a continuation token resumes after; anything this gateway did not write for this
/// bucket is AWS's InvalidArgument.
pub(super) fn decode_continuation_token(bucket: &str, token: &str) -> Result<String> {
    let bad = || Error::invalid_argument("The continuation token provided is incorrect");
    let mut raw = B64URL.decode(token).map_err(|_| bad())?;
    if raw.len() < 1 + TOKEN_TAG || raw[0] != TOKEN_VERSION {
        return Err(bad());
    }
    let (head, key) = raw.split_at_mut(1 + TOKEN_TAG);
    mask(&head[1..], key);
    let key = std::str::from_utf8(key).map_err(|_| bad())?;
    if head[1..] != token_tag(bucket, key) {
        return Err(bad());
    }
    Ok(key.to_string())
}

pub(super) fn parse_max(q: &Query, name: &'static str) -> Result<usize> {
    Ok(parse_int_arg(q, name, 1000)?.min(MAX_KEYS))
}

/// A non-negative int32 query argument (`default` when absent), refused with AWS's texts.
pub(super) fn parse_int_arg(q: &Query, name: &'static str, default: usize) -> Result<usize> {
    match q.get(name) {
        None => Ok(default),
        Some(v) => match v.parse::<i64>() {
            Ok(n) if n < 0 => {
                Err(Error::invalid_arg(format!("Argument {name} must be an integer between 0 and 2147483647"), name, v))
            }
            Ok(n) if n <= i64::from(i32::MAX) => Ok(n as usize),
            _ => Err(Error::invalid_arg(format!("Provided {name} not an integer or within integer range"), name, v)),
        },
    }
}

pub(super) fn encoding(q: &Query) -> Result<bool> {
    match q.get("encoding-type") {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(true),
        Some(v) => Err(Error::invalid_arg("Invalid Encoding Method specified in Request", "encoding-type", v)),
    }
}

pub(super) async fn list_objects(r: &Req<'_>, kind: ListKind) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let max_keys = parse_max(q, "max-keys")?;
    let prefix = q.get("prefix").unwrap_or("").to_string();
    let delimiter = q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned);
    let token = match (kind, q.get("continuation-token")) {
        (ListKind::V2, Some(t)) => Some(decode_continuation_token(&r.bucket, t)?),
        _ => None,
    };
    let start_after = match kind {
        ListKind::V1 => q.get("marker").filter(|m| !m.is_empty()).map(str::to_owned),
        ListKind::V2 => token.clone().or_else(|| q.get("start-after").filter(|m| !m.is_empty()).map(str::to_owned)),
    };
    let req = ListObjectsRequest { prefix: prefix.clone(), delimiter: delimiter.clone(), start_after, max_keys };
    let page = store(r).list_objects(&r.bucket, req).await?;

    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let mut s = String::with_capacity(512 + page.objects.len() * 256);
    s.push_str(DECL);
    let root = "ListBucketResult";
    s.push_str(&format!("<{root} xmlns=\"{NS}\">"));
    elem(&mut s, "Name", &r.bucket);
    // ListObjects v1 leaves its top-level Prefix unencoded even with encoding-type=url (AWS
    // encodes it only in v2 and versions; SDKs decode it accordingly).
    elem(&mut s, "Prefix", &if kind == ListKind::V1 { prefix.clone() } else { enc(&prefix) });
    match kind {
        ListKind::V1 => {
            elem(&mut s, "Marker", &enc(q.get("marker").unwrap_or("")));
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextMarker", &enc(m));
            }
        }
        ListKind::V2 => {
            if let Some(t) = q.get("continuation-token") {
                elem(&mut s, "ContinuationToken", t);
            }
            if let Some(sa) = q.get("start-after") {
                elem(&mut s, "StartAfter", &enc(sa));
            }
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextContinuationToken", &encode_continuation_token(&r.bucket, m));
            }
            elem(&mut s, "KeyCount", &(page.objects.len() + page.common_prefixes.len()).to_string());
        }
    }
    elem(&mut s, "MaxKeys", &max_keys.to_string());
    if let Some(d) = &delimiter {
        elem(&mut s, "Delimiter", &enc(d));
    }
    if url {
        elem(&mut s, "EncodingType", "url");
    }
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    let owner = kind != ListKind::V2 || q.get("fetch-owner").is_some_and(|v| v == "true");
    let owners = if owner { object_owners(r, page.objects.iter().map(|o| o.key.as_str())).await? } else { Vec::new() };
    // Objects and common prefixes are interleaved in key order, as S3 does.
    let (mut oi, mut pi) = (0, 0);
    while oi < page.objects.len() || pi < page.common_prefixes.len() {
        let take_obj = match (page.objects.get(oi), page.common_prefixes.get(pi)) {
            (Some(o), Some(p)) => o.key.as_str() < p.as_str(),
            (Some(_), None) => true,
            _ => false,
        };
        if take_obj {
            let o = &page.objects[oi];
            oi += 1;
            let tag = "Contents";
            s.push('<');
            s.push_str(tag);
            s.push('>');
            elem(&mut s, "Key", &enc(&o.key));
            elem(&mut s, "LastModified", &iso8601(o.last_modified));
            elem(&mut s, "ETag", &quoted(&o.etag));
            elem(&mut s, "Size", &o.size.to_string());
            s.push_str("<StorageClass>STANDARD</StorageClass>");
            if owner {
                owner_elem(&mut s, "Owner", owners[oi - 1].as_ref());
            }
            s.push_str("</");
            s.push_str(tag);
            s.push('>');
        } else {
            let p = &page.common_prefixes[pi];
            pi += 1;
            s.push_str("<CommonPrefixes>");
            elem(&mut s, "Prefix", &enc(p));
            s.push_str("</CommonPrefixes>");
        }
    }
    s.push_str("</");
    s.push_str(root);
    s.push('>');
    Ok(xml_ok(s))
}

/// The owner of each object a listing shows (see [`Store::owner`]).
pub(super) async fn object_owners<'k>(
    r: &Req<'_>,
    keys: impl Iterator<Item = &'k str>,
) -> Result<Vec<Option<OwnerInfo>>> {
    let mut out = Vec::new();
    for k in keys {
        out.push(store(r).owner(&r.bucket, Owned::Object(k)).await?);
    }
    Ok(out)
}

pub(super) async fn list_parts(r: &Req<'_>) -> Result<Resp> {
    let id = upload_id(r)?;
    let q = &r.q;
    // AWS's texts: "Argument part-number-marker must be an integer between 0 and 2147483647"
    // for a negative marker, "Provided part-number-marker not an integer or within integer
    // range" for anything else that is not an int32 (as for max-keys / max-parts).
    let marker = match q.get("part-number-marker") {
        None | Some("") => None,
        Some(_) => Some(parse_int_arg(q, "part-number-marker", 0)?.min(u32::MAX as usize) as u32),
    };
    let max_parts = parse_max(q, "max-parts")?;
    let page =
        store(r).list_parts(&r.bucket, &r.key, id, ListPartsRequest { part_number_marker: marker, max_parts }).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<ListPartsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "Key", &r.key);
    elem(&mut s, "UploadId", id);
    let owner = store(r).owner(&r.bucket, Owned::Upload(id)).await?;
    owner_elem(&mut s, "Initiator", owner.as_ref());
    owner_elem(&mut s, "Owner", owner.as_ref());
    s.push_str("<StorageClass>STANDARD</StorageClass>");
    elem(&mut s, "PartNumberMarker", &marker.unwrap_or(0).to_string());
    // Always present, as on AWS: the last part listed (also on a last page), 0 when none is.
    let next = page.next_part_number_marker.or_else(|| page.parts.last().map(|p| p.part_number)).unwrap_or(0);
    elem(&mut s, "NextPartNumberMarker", &next.to_string());
    elem(&mut s, "MaxParts", &max_parts.to_string());
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    if let Some(a) = page.checksum_algorithm {
        elem(&mut s, "ChecksumAlgorithm", a.as_str());
    }
    if let Some(t) = page.checksum_type {
        elem(&mut s, "ChecksumType", t.as_str());
    }
    for p in &page.parts {
        s.push_str("<Part>");
        elem(&mut s, "PartNumber", &p.part_number.to_string());
        elem(&mut s, "LastModified", &iso8601(p.last_modified));
        elem(&mut s, "ETag", &quoted(&p.etag));
        elem(&mut s, "Size", &p.size.to_string());
        if let Some(c) = &p.checksum {
            elem(&mut s, checksum_element(c.algorithm), &c.value);
        }
        s.push_str("</Part>");
    }
    s.push_str("</ListPartsResult>");
    Ok(xml_ok(s))
}

pub(super) async fn list_uploads(r: &Req<'_>) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let max_uploads = parse_max(q, "max-uploads")?;
    let req = ListUploadsRequest {
        prefix: q.get("prefix").unwrap_or("").to_string(),
        delimiter: q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned),
        key_marker: q.get("key-marker").filter(|d| !d.is_empty()).map(str::to_owned),
        upload_id_marker: q.get("upload-id-marker").filter(|d| !d.is_empty()).map(str::to_owned),
        max_uploads,
    };
    let page = store(r).list_multipart_uploads(&r.bucket, req.clone()).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<ListMultipartUploadsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "KeyMarker", &enc(req.key_marker.as_deref().unwrap_or("")));
    elem(&mut s, "UploadIdMarker", req.upload_id_marker.as_deref().unwrap_or(""));
    if let Some(m) = &page.next_key_marker {
        elem(&mut s, "NextKeyMarker", &enc(m));
    }
    if let Some(m) = &page.next_upload_id_marker {
        elem(&mut s, "NextUploadIdMarker", m);
    }
    elem(&mut s, "Prefix", &enc(&req.prefix));
    if let Some(d) = &req.delimiter {
        elem(&mut s, "Delimiter", &enc(d));
    }
    elem(&mut s, "MaxUploads", &max_uploads.to_string());
    if url {
        elem(&mut s, "EncodingType", "url");
    }
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    for u in &page.uploads {
        s.push_str("<Upload>");
        elem(&mut s, "Key", &enc(&u.key));
        elem(&mut s, "UploadId", &u.upload_id);
        let owner = store(r).owner(&r.bucket, Owned::Upload(&u.upload_id)).await?;
        owner_elem(&mut s, "Initiator", owner.as_ref());
        owner_elem(&mut s, "Owner", owner.as_ref());
        s.push_str("<StorageClass>STANDARD</StorageClass>");
        elem(&mut s, "Initiated", &iso8601(u.initiated));
        if let Some(a) = u.checksum_algorithm {
            elem(&mut s, "ChecksumAlgorithm", a.as_str());
        }
        if let Some(t) = u.checksum_type {
            elem(&mut s, "ChecksumType", t.as_str());
        }
        s.push_str("</Upload>");
    }
    for p in &page.common_prefixes {
        s.push_str("<CommonPrefixes>");
        elem(&mut s, "Prefix", &enc(p));
        s.push_str("</CommonPrefixes>");
    }
    s.push_str("</ListMultipartUploadsResult>");
    Ok(xml_ok(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_tokens_round_trip_and_refuse_junk() {
        for key in ["a", "dir/key with spaces", "é/ü", &"k".repeat(1024)] {
            let t = encode_continuation_token("bkt", key);
            assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{t}");
            assert_eq!(decode_continuation_token("bkt", &t).unwrap(), key);
            // Bound to the bucket.
            assert_eq!(decode_continuation_token("other", &t).unwrap_err().code, ErrorCode::InvalidArgument);
        }
        let good = encode_continuation_token("bkt", "abc");
        let mut flipped = B64URL.decode(&good).unwrap();
        *flipped.last_mut().unwrap() ^= 1;
        let junk = [
            String::new(),
            "not base64!".to_string(),
            B64URL.encode(b"abc"),
            "YWJj".to_string(),
            B64URL.encode(&flipped),
            B64URL.encode([2u8; 12]),
        ];
        for j in junk {
            let e = decode_continuation_token("bkt", &j).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (ErrorCode::InvalidArgument, "The continuation token provided is incorrect")
            );
        }
    }
}
