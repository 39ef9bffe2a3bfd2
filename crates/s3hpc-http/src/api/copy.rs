//! CopyObject and UploadPartCopy.

use http::HeaderMap;

use s3hpc_core::names::check_bucket_name_for_access;
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::util::{Query, decode_path, iso8601};
use crate::xml::{DECL, NS, checksum_element, elem};

/// `x-amz-copy-source`: `[/]bucket/key[?versionId=ID]`, URL-encoded: bucket, key, version.
pub(super) fn copy_source(h: &HeaderMap) -> Result<(String, String, Option<String>)> {
    let raw = hdr(h, "x-amz-copy-source").ok_or_else(|| {
        Error::invalid_arg(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
            "x-amz-copy-source",
            "",
        )
    })?;
    let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
    let mut version = None;
    if !query.is_empty() {
        let q = Query::parse(Some(query));
        check_version_id(q.get("versionId"))?;
        version = q.get("versionId").map(str::to_owned);
    }
    let bad = || {
        Error::invalid_arg(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
            "x-amz-copy-source",
            raw,
        )
    };
    let path = decode_path(path).ok_or_else(bad)?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let (b, k) = path.split_once('/').ok_or_else(bad)?;
    if b.is_empty() || k.is_empty() {
        return Err(bad());
    }
    check_bucket_name_for_access(b)?;
    names::validate_key(k)?;
    Ok((b.to_string(), k.to_string(), version))
}

pub(super) fn directive(h: &HeaderMap, name: &'static str) -> Result<bool> {
    match hdr(h, name) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("COPY") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("REPLACE") => Ok(true),
        // AWS: "Unknown metadata directive." / "Unknown tagging directive."
        Some(v) => {
            let what = name.trim_start_matches("x-amz-").trim_end_matches("-directive");
            Err(Error::invalid_arg(format!("Unknown {what} directive."), name, v))
        }
    }
}

/// CopyObject and UploadPartCopy take no body: a non-empty one is refused as AWS refuses it
/// (versitygw issue 1242 records AWS's answer).
fn refuse_body(r: &Req) -> Result<()> {
    let h = &r.parts.headers;
    let sent = |name| hdr(h, name).and_then(|v| v.trim().parse::<u64>().ok()).is_some_and(|n| n > 0);
    if sent("content-length") || sent("x-amz-decoded-content-length") {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "The request included a body. Requests of this type must not include a non-empty body.",
        ));
    }
    Ok(())
}

pub(super) async fn copy_object(r: &Req<'_>) -> Result<Resp> {
    refuse_body(r)?;
    let h = &r.parts.headers;
    refuse_unsupported_object_headers(h)?;
    let lock = super::object_lock::lock_headers(h)?;
    let (sb, sk, sv) = copy_source(h)?;
    let metadata =
        if directive(h, "x-amz-metadata-directive")? { Directive::Replace(object_meta(h)?) } else { Directive::Copy };
    let tagging =
        if directive(h, "x-amz-tagging-directive")? { Directive::Replace(tags_header(h)?) } else { Directive::Copy };
    let checksum_algorithm = match hdr(h, "x-amz-checksum-algorithm") {
        None => None,
        Some(a) => Some(
            ChecksumAlgorithm::parse(a).ok_or_else(|| Error::invalid_argument("invalid x-amz-checksum-algorithm"))?,
        ),
    };
    let req = CopyObjectRequest {
        source_version_id: sv.clone(),
        metadata,
        tagging,
        source_conditions: conditions(h, "x-amz-copy-source-"),
        conditions: conditions(h, ""),
        checksum_algorithm,
        // Never the source's, with either directive (S3's CopyObject).
        website_redirect_location: hdr(h, "x-amz-website-redirect-location").map(str::to_owned),
        lock,
        default_checksum: r.st.cfg.default_checksum,
    };
    let out = store(r).copy_object(&sb, &sk, &r.bucket, &r.key, req).await.map_err(|e| {
        // Source conditions never answer 304 on a copy.
        if e.code == ErrorCode::NotModified { Error::code(ErrorCode::PreconditionFailed) } else { e }
    })?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<CopyObjectResult xmlns=\"{NS}\">"));
    elem(&mut s, "ETag", &quoted(&out.etag));
    elem(&mut s, "LastModified", &iso8601(out.last_modified));
    checksum_xml(&mut s, &out.checksum);
    s.push_str("</CopyObjectResult>");
    let mut resp = xml_ok(s);
    if let Some(v) = &out.version_id {
        resp.headers_mut().insert("x-amz-version-id", hval(v)?);
    }
    if let Some(v) = &sv {
        resp.headers_mut().insert("x-amz-copy-source-version-id", hval(v)?);
    }
    let tags = super::lifecycle::ObjectTags::Unknown;
    if let Some(v) = super::lifecycle::expiration_header(r, out.size, out.last_modified, tags).await {
        resp.headers_mut().insert("x-amz-expiration", v);
    }
    Ok(resp)
}

pub(super) async fn upload_part_copy(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    let (id, n) = upload_part_target(r)?;
    refuse_body(r)?;
    let (sb, sk, sv) = copy_source(h)?;
    let range = match hdr(h, "x-amz-copy-source-range") {
        None => None,
        Some(v) => match ByteRange::parse_header(v) {
            Some(ByteRange::FromTo(a, b)) => Some(ByteRange::FromTo(a, b)),
            _ => {
                return Err(Error::invalid_argument(
                    "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
                ));
            }
        },
    };
    // A range past the end of the source is refused by the store, as AWS does
    // (s3hpc_core::multipart::copy_source_range).
    let src = PartCopySource {
        bucket: sb,
        key: sk,
        version_id: sv.clone(),
        range,
        conditions: conditions(h, "x-amz-copy-source-"),
    };
    let p = store(r)
        .upload_part_copy(&r.bucket, &r.key, id, n, src)
        .await
        .map_err(|e| if e.code == ErrorCode::NotModified { Error::code(ErrorCode::PreconditionFailed) } else { e })?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<CopyPartResult xmlns=\"{NS}\">"));
    elem(&mut s, "LastModified", &iso8601(p.last_modified));
    elem(&mut s, "ETag", &quoted(&p.etag));
    if let Some(c) = &p.checksum {
        elem(&mut s, checksum_element(c.algorithm), &c.value);
    }
    s.push_str("</CopyPartResult>");
    let mut resp = xml_ok(s);
    if let Some(v) = &sv {
        resp.headers_mut().insert("x-amz-copy-source-version-id", hval(v)?);
    }
    Ok(resp)
}
