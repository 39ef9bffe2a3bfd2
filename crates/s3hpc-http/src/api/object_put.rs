//! PutObject.

use http::header;

use s3hpc_core::checksum::parse_content_md5;
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};

pub(super) async fn put_object(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    refuse_unsupported_object_headers(h)?;
    let lock = super::object_lock::lock_headers(h)?;
    let content_length = upload_length(r)?;
    let offset = write_offset(h)?;
    let (checksum, sink) = checksum_request(h)?;
    // S3's default checksum for a new object uploaded without one (not for appends: the
    // object is not new, and an append's checksum covers its own bytes only).
    let checksum = checksum.or_else(|| if offset.is_none() { default_checksum(r) } else { None });
    let tags = tags_header(h)?;
    let req = PutObjectRequest {
        meta: object_meta(h)?,
        tags: tags.clone(),
        content_md5: hdr(h, "content-md5").map(parse_content_md5).transpose()?,
        checksum,
        content_length,
        conditions: write_conditions(h)?,
        lock,
    };
    let (body, _permit) = object_body(r, body, sink, content_length.unwrap_or(u64::MAX)).await?;
    let out = match offset {
        Some(off) => store(r).append_object(&r.bucket, &r.key, off, req, body).await?,
        None => store(r).put_object(&r.bucket, &r.key, req, body).await?,
    };
    let mut resp = write_response(&out)?;
    let tags = super::lifecycle::ObjectTags::Known(&tags);
    if let Some(v) = super::lifecycle::expiration_header(r, out.size, out.last_modified, tags).await {
        resp.headers_mut().insert("x-amz-expiration", v);
    }
    Ok(resp)
}

/// `x-amz-write-offset-bytes`: a PutObject that appends at this offset.
fn write_offset(h: &http::HeaderMap) -> Result<Option<u64>> {
    match hdr(h, "x-amz-write-offset-bytes") {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| Error::invalid_argument("x-amz-write-offset-bytes must be a non-negative integer")),
    }
}

pub(super) fn write_response(out: &PutObjectOutput) -> Result<Resp> {
    let mut b = empty_ok().header(header::ETAG, hval(&quoted(&out.etag))?).header("x-amz-object-size", out.size);
    if let Some(v) = &out.version_id {
        b = b.header("x-amz-version-id", hval(v)?);
    }
    if let Some(c) = &out.checksum {
        b = b
            .header(c.algorithm.header_name(), hval(&c.value)?)
            .header("x-amz-checksum-type", c.checksum_type().as_str());
    }
    Ok(b.body(RespBody::Empty).unwrap())
}
