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

pub(super) async fn get_object_tagging(r: &Req<'_>) -> Result<Resp> {
    if let Some(v) = version_param(r)? {
        super::versioning::current_version_only(r, &r.bucket, &r.key, &v, "GetObjectTagging").await?;
    }
    let tags = store(r).get_object_tagging(&r.bucket, &r.key).await?;
    Ok(xml_ok(tagging_xml(&tags)))
}

pub(super) async fn put_object_tagging(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, false).await?;
    let tags = xml::parse_tagging(&data)?;
    validate_tags(&tags, MAX_OBJECT_TAGS)?;
    if let Some(v) = version_param(r)? {
        super::versioning::current_version_only(r, &r.bucket, &r.key, &v, "PutObjectTagging").await?;
    }
    store(r).put_object_tagging(&r.bucket, &r.key, tags).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

pub(super) async fn delete_object_tagging(r: &Req<'_>) -> Result<Resp> {
    if let Some(v) = version_param(r)? {
        super::versioning::current_version_only(r, &r.bucket, &r.key, &v, "DeleteObjectTagging").await?;
    }
    store(r).delete_object_tagging(&r.bucket, &r.key).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(super) async fn get_bucket_tagging(r: &Req<'_>) -> Result<Resp> {
    let tags = store(r).get_bucket_tagging(&r.bucket).await?;
    if tags.is_empty() {
        return Err(Error::code(ErrorCode::NoSuchTagSet).with_resource(r.bucket.clone()));
    }
    Ok(xml_ok(tagging_xml(&tags)))
}

pub(super) async fn put_bucket_tagging(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await?;
    let tags = xml::parse_tagging(&data)?;
    validate_tags(&tags, MAX_BUCKET_TAGS)?;
    store(r).put_bucket_tagging(&r.bucket, tags).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

pub(super) async fn delete_bucket_tagging(r: &Req<'_>) -> Result<Resp> {
    store(r).delete_bucket_tagging(&r.bucket).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
