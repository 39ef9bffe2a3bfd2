//! GetObject, HeadObject, GetObjectAttributes, GetObjectAcl.

use http::{HeaderValue, Response, StatusCode, header};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::RespBody;
use crate::util::http_date;
use crate::xml::{DECL, NS, checksum_element, elem};

pub(super) async fn get_object(r: &Req<'_>, head: bool) -> Result<Resp> {
    let h = &r.parts.headers;
    let version_id = version_param(r)?;
    let range = hdr(h, "range").and_then(ByteRange::parse_header);
    let part_number = match r.q.get("partNumber") {
        None => None,
        Some(p) => Some(p.parse::<u32>().ok().filter(|n| (1..=MAX_PART_NUMBER).contains(n)).ok_or_else(|| {
            Error::invalid_arg("Part number must be an integer between 1 and 10000, inclusive", "partNumber", p)
        })?),
    };
    if range.is_some() && part_number.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    let req = GetObjectRequest { version_id: version_id.clone(), range, part_number, conditions: conditions(h, "") };
    let checksum_mode = hdr(h, "x-amz-checksum-mode").is_some_and(|v| v.eq_ignore_ascii_case("ENABLED"));
    let (info, served, body) = match read_object(r, head, req).await {
        Ok(x) => x,
        // A suffix range of an empty object is the whole (empty) object, as AWS answers.
        Err(e) if e.code == ErrorCode::InvalidRange && matches!(range, Some(ByteRange::Suffix(n)) if n > 0) => {
            let whole = GetObjectRequest {
                conditions: conditions(h, ""),
                version_id: version_id.clone(),
                ..Default::default()
            };
            match read_object(r, head, whole).await? {
                (info, _, body) if info.size == 0 => (info, None, body),
                _ => return Err(e),
            }
        }
        Err(e) => return read_error(r, e, head, part_number).await,
    };
    let len = served.map_or(info.size, |(_, l)| l);
    let mut b = Response::builder().status(if served.is_some() { StatusCode::PARTIAL_CONTENT } else { StatusCode::OK });
    let hm = b.headers_mut().unwrap();
    hm.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    hm.insert(header::ETAG, hval(&quoted(&info.etag))?);
    hm.insert(header::LAST_MODIFIED, hval(&http_date(info.last_modified))?);
    hm.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(v) = info.version_id.as_deref().or(version_id.as_deref()) {
        hm.insert("x-amz-version-id", hval(v)?);
    }
    if let Some((off, l)) = served {
        let cr = if l == 0 {
            format!("bytes */{}", info.size)
        } else {
            format!("bytes {off}-{}/{}", off + l - 1, info.size)
        };
        hm.insert(header::CONTENT_RANGE, hval(&cr)?);
    }
    if let Some(n) = info.parts_count()
        && part_number.is_some()
    {
        hm.insert("x-amz-mp-parts-count", HeaderValue::from(n));
    }
    let q = &r.q;
    let meta = &info.meta;
    if let Some(v) = meta.website_redirect_location.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
        hm.insert("x-amz-website-redirect-location", v);
    }
    let pairs: [(header::HeaderName, Option<&str>, &str); 6] = [
        (header::CONTENT_TYPE, meta.content_type.as_deref(), "response-content-type"),
        (header::CONTENT_ENCODING, meta.content_encoding.as_deref(), "response-content-encoding"),
        (header::CONTENT_DISPOSITION, meta.content_disposition.as_deref(), "response-content-disposition"),
        (header::CONTENT_LANGUAGE, meta.content_language.as_deref(), "response-content-language"),
        (header::CACHE_CONTROL, meta.cache_control.as_deref(), "response-cache-control"),
        (header::EXPIRES, meta.expires.as_deref(), "response-expires"),
    ];
    for (name, stored, over) in pairs {
        let v = q.get(over).or(stored);
        match v {
            Some(v) => {
                if let Ok(v) = HeaderValue::from_str(v) {
                    hm.insert(name, v);
                }
            }
            None if name == header::CONTENT_TYPE => {
                // Directory objects (`key/`) without a type of their own read as directories.
                let t = if r.key.ends_with('/') { "application/x-directory" } else { "binary/octet-stream" };
                hm.insert(name, HeaderValue::from_static(t));
            }
            None => {}
        }
    }
    for (k, v) in &meta.user {
        if let (Ok(n), Ok(v)) = (
            header::HeaderName::from_bytes(format!("x-amz-meta-{k}").as_bytes()),
            HeaderValue::from_str(&meta_header(v)),
        ) {
            hm.append(n, v);
        }
    }
    if info.tag_count > 0 {
        hm.insert("x-amz-tagging-count", HeaderValue::from(info.tag_count));
    }
    super::object_lock::insert_headers(hm, &info.lock)?;
    if version_id.is_none() {
        let tags = super::lifecycle::ObjectTags::Count(info.tag_count);
        if let Some(v) = super::lifecycle::expiration_header(r, info.size, info.last_modified, tags).await {
            hm.insert("x-amz-expiration", v);
        }
    }
    // With checksum mode: the object's checksum for the whole object; for `partNumber` of a
    // COMPOSITE object the part's own checksum (as S3 answers; a FULL_OBJECT one has none).
    let checksum = match (served, part_number) {
        (None, _) => info.checksum.clone(),
        // Part 1 of a single-part object is the whole object.
        (Some(_), Some(_)) if info.part_sizes.is_empty() => info.checksum.clone(),
        (Some(_), Some(n)) => info.part_checksum(n),
        (Some(_), None) => None,
    };
    if checksum_mode && let Some(c) = &checksum {
        hm.insert(c.algorithm.header_name(), hval(&c.value)?);
        hm.insert("x-amz-checksum-type", HeaderValue::from_static(c.checksum_type().as_str()));
    }
    Ok(b.body(body).unwrap())
}

/// The object's info, the range served and the body (empty for HEAD).
async fn read_object(
    r: &Req<'_>,
    head: bool,
    req: GetObjectRequest,
) -> Result<(ObjectInfo, Option<(u64, u64)>, RespBody)> {
    if head {
        let (range, part_number) = (req.range, req.part_number);
        let info = store(r).head_object(&r.bucket, &r.key, req).await?;
        let served = match (range, part_number) {
            (Some(rg), _) => Some(rg.resolve(info.size)?),
            (None, Some(n)) => Some(info.part_range(n)?),
            _ => None,
        };
        Ok((info, served, RespBody::Empty))
    } else {
        let out = store(r).get_object(&r.bucket, &r.key, req).await?;
        let len = out.range.map_or(out.info.size, |(_, l)| l);
        let body = RespBody::from_store(out.body).with_len(len);
        Ok((out.info, out.range, body))
    }
}

/// AWS's answer for a failed read: a 304 names the object's ETag and Last-Modified (read once
/// more, only in that case); a part number beyond the object's parts is 416 InvalidPartNumber.
async fn read_error(r: &Req<'_>, e: Error, head: bool, part_number: Option<u32>) -> Result<Resp> {
    if e.code == ErrorCode::NotModified {
        let mut b = Response::builder().status(StatusCode::NOT_MODIFIED);
        if let Ok(info) = store(r).head_object(&r.bucket, &r.key, GetObjectRequest::default()).await {
            b = b
                .header(header::ETAG, hval(&quoted(&info.etag))?)
                .header(header::LAST_MODIFIED, hval(&http_date(info.last_modified))?);
        }
        return Ok(b.body(RespBody::Empty).unwrap());
    }
    if part_number.is_some() && e.code == ErrorCode::InvalidPart {
        let msg = "The requested partnumber is not satisfiable";
        return Ok(crate::error_response_raw(
            416,
            "InvalidPartNumber",
            msg,
            None,
            &[],
            head,
            r.parts.uri.path(),
            r.rid,
        ));
    }
    let mut e = e;
    // `<RangeRequested>` is the header as sent.
    if e.code == ErrorCode::InvalidRange
        && let Some(sent) = r.parts.headers.get(header::RANGE).and_then(|v| v.to_str().ok())
        && let Some(slot) = e.details.iter_mut().find(|(k, _)| *k == "RangeRequested")
    {
        slot.1 = sent.to_string();
    }
    Err(e)
}

pub(super) async fn get_object_attributes(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    // A list header: comma-separated, or one header line per attribute (aws-sdk-go-v2).
    let wanted: Vec<String> = h
        .get_all("x-amz-object-attributes")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(Error::invalid_arg("Invalid attribute name specified.", "x-amz-object-attributes", ""));
    }
    for w in &wanted {
        if !matches!(w.as_str(), "ETag" | "Checksum" | "ObjectParts" | "StorageClass" | "ObjectSize") {
            return Err(Error::invalid_arg("Invalid attribute name specified.", "x-amz-object-attributes", w.as_str()));
        }
    }
    let max_parts = match hdr(h, "x-amz-max-parts") {
        None => 1000usize,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid x-amz-max-parts"))?.min(1000),
    };
    let marker = match hdr(h, "x-amz-part-number-marker") {
        None => 0u32,
        Some(v) => v.parse().map_err(|_| Error::invalid_argument("invalid x-amz-part-number-marker"))?,
    };
    let version_id = version_param(r)?;
    let req = GetObjectRequest { conditions: conditions(h, ""), version_id: version_id.clone(), ..Default::default() };
    let info = store(r).head_object(&r.bucket, &r.key, req).await?;
    let has = |n: &str| wanted.iter().any(|w| w == n);
    let mut s = String::from(DECL);
    s.push_str(&format!("<GetObjectAttributesResponse xmlns=\"{NS}\">"));
    if has("ETag") {
        elem(&mut s, "ETag", info.etag.trim_matches('"'));
    }
    if has("Checksum")
        && let Some(c) = &info.checksum
    {
        // The value without the `-N` part count of a COMPOSITE one; the type says which it is.
        s.push_str("<Checksum>");
        elem(&mut s, checksum_element(c.algorithm), c.value.split('-').next().unwrap_or(&c.value));
        elem(&mut s, "ChecksumType", c.checksum_type().as_str());
        s.push_str("</Checksum>");
    }
    if has("ObjectParts") && !info.part_sizes.is_empty() {
        object_parts_xml(&mut s, &info, marker, max_parts);
    }
    if has("StorageClass") {
        elem(&mut s, "StorageClass", "STANDARD");
    }
    if has("ObjectSize") {
        elem(&mut s, "ObjectSize", &info.size.to_string());
    }
    s.push_str("</GetObjectAttributesResponse>");
    let mut resp = xml_ok(s);
    resp.headers_mut().insert(header::LAST_MODIFIED, hval(&http_date(info.last_modified))?);
    if let Some(v) = info.version_id.as_deref().or(version_id.as_deref()) {
        resp.headers_mut().insert("x-amz-version-id", hval(v)?);
    }
    Ok(resp)
}

/// GetObjectAttributes' ObjectParts of a multipart object. As on S3 (general purpose buckets):
/// only the part count unless the object has a COMPOSITE checksum; then a ListParts-like page of
/// the parts with their sizes and checksums.
fn object_parts_xml(s: &mut String, info: &ObjectInfo, marker: u32, max_parts: usize) {
    let total = info.part_sizes.len();
    s.push_str("<ObjectParts>");
    elem(s, "PartsCount", &total.to_string());
    let composite = info.checksum.as_ref().is_some_and(|c| c.checksum_type() == ChecksumType::Composite);
    if composite {
        let parts: Vec<(u32, u64)> =
            (1..).zip(info.part_sizes.iter().copied()).filter(|(n, _)| *n > marker).take(max_parts).collect();
        let last = parts.last().map_or(marker, |p| p.0);
        elem(s, "PartNumberMarker", &marker.to_string());
        elem(s, "NextPartNumberMarker", &last.to_string());
        elem(s, "MaxParts", &max_parts.to_string());
        elem(s, "IsTruncated", if (last as usize) < total { "true" } else { "false" });
        for (n, sz) in parts {
            s.push_str("<Part>");
            elem(s, "PartNumber", &n.to_string());
            elem(s, "Size", &sz.to_string());
            if let Some(c) = info.part_checksum(n) {
                elem(s, checksum_element(c.algorithm), &c.value);
            }
            s.push_str("</Part>");
        }
    }
    s.push_str("</ObjectParts>");
}

pub(super) async fn get_object_acl(r: &Req<'_>) -> Result<Resp> {
    match store(r).get_object_acl(&r.bucket, &r.key).await? {
        Some(doc) => Ok(xml_ok(String::from_utf8(doc).map_err(|_| Error::internal("ACL document is not UTF-8"))?)),
        None => Ok(xml_ok(acl_xml())),
    }
}
