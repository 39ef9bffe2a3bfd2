//! Object and bucket tagging.

use http::StatusCode;

use s3hpc_core::names::{MAX_BUCKET_TAGS, MAX_OBJECT_TAGS, validate_tags};
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::xml::{self, DECL, NS, elem};

pub(super) fn tagging_xml(tags: &Tags) -> String {
    let mut s = String::from(DECL);
    s.push_str(&format!("<Tagging xmlns=\"{NS}\"><TagSet>"));
    // In key order, as AWS returns them (whatever order they were sent in).
    let mut sorted: Vec<&(String, String)> = tags.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in sorted {
        s.push_str("<Tag>");
        elem(&mut s, "Key", k);
        elem(&mut s, "Value", v);
        s.push_str("</Tag>");
    }
    s.push_str("</TagSet></Tagging>");
    s
}

/// `x-amz-version-id` of the version whose tags were read or written, as S3 answers all three
/// object tagging calls (none for an object without a version id).
fn with_version(mut resp: Resp, version_id: Option<String>) -> Result<Resp> {
    if let Some(v) = version_id {
        resp.headers_mut().insert("x-amz-version-id", hval(&v)?);
    }
    Ok(resp)
}

pub(super) async fn get_object_tagging(r: &Req<'_>) -> Result<Resp> {
    let v = version_param(r)?;
    let t = store(r).get_object_tagging(&r.bucket, &r.key, v.as_deref()).await?;
    with_version(xml_ok(tagging_xml(&t.tags)), t.version_id)
}

pub(super) async fn put_object_tagging(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, false).await.and_then(nonempty)?;
    let tags = xml::parse_tagging(&data)?;
    validate_tags(&tags, MAX_OBJECT_TAGS)?;
    let v = version_param(r)?;
    let vid = store(r).put_object_tagging(&r.bucket, &r.key, v.as_deref(), tags).await?;
    with_version(empty_ok().body(RespBody::Empty).unwrap(), vid)
}

pub(super) async fn delete_object_tagging(r: &Req<'_>) -> Result<Resp> {
    let v = version_param(r)?;
    let vid = store(r).delete_object_tagging(&r.bucket, &r.key, v.as_deref()).await?;
    with_version(empty(StatusCode::NO_CONTENT), vid)
}

pub(super) async fn get_bucket_tagging(r: &Req<'_>) -> Result<Resp> {
    let tags = store(r).get_bucket_tagging(&r.bucket).await?;
    if tags.is_empty() {
        return Err(Error::code(ErrorCode::NoSuchTagSet).with_resource(r.bucket.clone()));
    }
    Ok(xml_ok(tagging_xml(&tags)))
}

pub(super) async fn put_bucket_tagging(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await.and_then(nonempty)?;
    let tags = xml::parse_tagging(&data)?;
    validate_bucket_tags(&tags)?;
    store(r).put_bucket_tagging(&r.bucket, tags).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(super) async fn delete_bucket_tagging(r: &Req<'_>) -> Result<Resp> {
    store(r).delete_bucket_tagging(&r.bucket).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Bucket tags (as AWS checks them; object tags keep the shared rules of
/// [`validate_tags`]): more than 50 is 400 BadRequest "Bucket tag count cannot be greater than
/// 50"; a key or value with a character outside AWS's tag pattern (letters, numbers,
/// separators and `_ . : / = + - @`, as in `\t` or `&`) is InvalidTag.
fn validate_bucket_tags(tags: &[(String, String)]) -> Result<()> {
    if tags.len() > MAX_BUCKET_TAGS {
        return Err(Error::new(
            ErrorCode::BadRequest,
            format!("Bucket tag count cannot be greater than {MAX_BUCKET_TAGS}"),
        ));
    }
    validate_tags(tags, MAX_BUCKET_TAGS)?;
    let ok = |s: &str| {
        s.chars().all(|c| c.is_alphanumeric() || (c.is_whitespace() && !c.is_control()) || "_.:/=+-@".contains(c))
    };
    for (k, v) in tags {
        if !ok(k) {
            return Err(Error::new(ErrorCode::InvalidTag, "The TagKey you have provided is invalid"));
        }
        if !ok(v) {
            return Err(Error::new(ErrorCode::InvalidTag, "The TagValue you have provided is invalid"));
        }
    }
    Ok(())
}
