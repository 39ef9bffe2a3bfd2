//! Listings: ListObjects (v1, v2, versions), ListParts, ListMultipartUploads.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

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
    Versions,
}

pub(super) fn parse_max(q: &Query, name: &str) -> Result<usize> {
    match q.get(name) {
        None => Ok(1000),
        Some(v) => {
            v.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| (n as usize).min(MAX_KEYS)).ok_or_else(|| {
                Error::invalid_argument(format!("Provided {name} not an integer or within integer range"))
            })
        }
    }
}

pub(super) fn encoding(q: &Query) -> Result<bool> {
    match q.get("encoding-type") {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => Err(Error::invalid_argument("Invalid Encoding Method specified in Request")),
    }
}

pub(super) async fn list_objects(r: &Req<'_>, kind: ListKind) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let max_keys = parse_max(q, "max-keys")?;
    let prefix = q.get("prefix").unwrap_or("").to_string();
    let delimiter = q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned);
    let token = match (kind, q.get("continuation-token")) {
        (ListKind::V2, Some(t)) => Some(
            B64.decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| Error::invalid_argument("The continuation token provided is incorrect"))?,
        ),
        _ => None,
    };
    let start_after = match kind {
        ListKind::V1 => q.get("marker").filter(|m| !m.is_empty()).map(str::to_owned),
        ListKind::V2 => token.clone().or_else(|| q.get("start-after").filter(|m| !m.is_empty()).map(str::to_owned)),
        ListKind::Versions => q.get("key-marker").filter(|m| !m.is_empty()).map(str::to_owned),
    };
    let req = ListObjectsRequest { prefix: prefix.clone(), delimiter: delimiter.clone(), start_after, max_keys };
    let page = store(r).list_objects(&r.bucket, req).await?;

    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let mut s = String::with_capacity(512 + page.objects.len() * 256);
    s.push_str(DECL);
    let root = match kind {
        ListKind::Versions => "ListVersionsResult",
        _ => "ListBucketResult",
    };
    s.push_str(&format!("<{root} xmlns=\"{NS}\">"));
    elem(&mut s, "Name", &r.bucket);
    elem(&mut s, "Prefix", &enc(&prefix));
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
                elem(&mut s, "NextContinuationToken", &B64.encode(m.as_bytes()));
            }
            elem(&mut s, "KeyCount", &(page.objects.len() + page.common_prefixes.len()).to_string());
        }
        ListKind::Versions => {
            elem(&mut s, "KeyMarker", &enc(q.get("key-marker").unwrap_or("")));
            elem(&mut s, "VersionIdMarker", q.get("version-id-marker").unwrap_or(""));
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextKeyMarker", &enc(m));
                elem(&mut s, "NextVersionIdMarker", "null");
            }
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
            let tag = if kind == ListKind::Versions { "Version" } else { "Contents" };
            s.push('<');
            s.push_str(tag);
            s.push('>');
            elem(&mut s, "Key", &enc(&o.key));
            if kind == ListKind::Versions {
                s.push_str("<VersionId>null</VersionId><IsLatest>true</IsLatest>");
            }
            elem(&mut s, "LastModified", &iso8601(o.last_modified));
            elem(&mut s, "ETag", &quoted(&o.etag));
            elem(&mut s, "Size", &o.size.to_string());
            s.push_str("<StorageClass>STANDARD</StorageClass>");
            if owner {
                owner_xml(&mut s, "Owner");
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

pub(super) async fn list_parts(r: &Req<'_>) -> Result<Resp> {
    let id = upload_id(r)?;
    let q = &r.q;
    let marker = match q.get("part-number-marker") {
        None | Some("") => None,
        Some(v) => Some(v.parse::<u32>().map_err(|_| Error::invalid_argument("invalid part-number-marker"))?),
    };
    let max_parts = match q.get("max-parts") {
        None => 1000,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid max-parts"))?.min(1000),
    };
    let page =
        store(r).list_parts(&r.bucket, &r.key, id, ListPartsRequest { part_number_marker: marker, max_parts }).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<ListPartsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "Key", &r.key);
    elem(&mut s, "UploadId", id);
    owner_xml(&mut s, "Initiator");
    owner_xml(&mut s, "Owner");
    s.push_str("<StorageClass>STANDARD</StorageClass>");
    elem(&mut s, "PartNumberMarker", &marker.unwrap_or(0).to_string());
    if let Some(n) = page.next_part_number_marker {
        elem(&mut s, "NextPartNumberMarker", &n.to_string());
    }
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
    let max_uploads = match q.get("max-uploads") {
        None => 1000,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid max-uploads"))?.min(1000),
    };
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
        owner_xml(&mut s, "Initiator");
        owner_xml(&mut s, "Owner");
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
