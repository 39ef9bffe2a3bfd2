//! Get/Put/DeleteBucketLifecycleConfiguration (`?lifecycle`). The document is validated here
//! ([`crate::lifecycle::LifecycleConfig`]) and kept as the bucket configuration `lifecycle`;
//! the lifecycle runner of `s3hpc serve` ([`crate::lifecycle::runner`]) applies it.
//! [`expiration_header`] gives PutObject, CopyObject, CompleteMultipartUpload, GetObject and HeadObject the `x-amz-expiration`
//! header AWS sends when an Expiration rule applies to the object.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderValue, StatusCode};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::State;
use crate::body::ReqBody;
use crate::lifecycle::LifecycleConfig;
use crate::lifecycle::runner::{day_seconds, internal_caller};

/// A rule id in `x-amz-expiration`: everything but unreserved characters percent-encoded.
const RULE_ID: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

const MIN_SIZE_HEADER: &str = "x-amz-transition-default-minimum-object-size";

pub(super) async fn get(r: &Req<'_>) -> Result<Resp> {
    let Some(doc) = store(r).get_bucket_config(&r.bucket, "lifecycle").await? else {
        return Ok(crate::error_response_raw(
            404,
            "NoSuchLifecycleConfiguration",
            "The lifecycle configuration does not exist",
            Some(&r.bucket),
            &[("BucketName", r.bucket.clone())],
            false,
            r.parts.uri.path(),
            r.rid,
        ));
    };
    let config = LifecycleConfig::parse(&doc, None)?;
    let mut resp = xml_ok(config.to_xml(false));
    resp.headers_mut().insert(MIN_SIZE_HEADER, hval(&config.min_size)?);
    Ok(resp)
}

pub(super) async fn put(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let min_size = hdr(&r.parts.headers, MIN_SIZE_HEADER).map(str::to_owned);
    let data = small_body(r, body, true).await?;
    let config = LifecycleConfig::parse(&data, min_size.as_deref())?;
    store(r).put_bucket_config(&r.bucket, "lifecycle", Some(config.to_xml(true).into_bytes())).await?;
    r.st.lifecycle.forget(&r.bucket);
    let mut resp = empty(StatusCode::OK);
    resp.headers_mut().insert(MIN_SIZE_HEADER, hval(&config.min_size)?);
    Ok(resp)
}

pub(super) async fn delete(r: &Req<'_>) -> Result<Resp> {
    store(r).put_bucket_config(&r.bucket, "lifecycle", None).await?;
    r.st.lifecycle.forget(&r.bucket);
    Ok(empty(StatusCode::NO_CONTENT))
}

/// The bucket's lifecycle configuration, read as the gateway itself (the caller of an object
/// read need not be allowed to read it) and cached briefly ([`crate::lifecycle::LifecycleCache`]).
async fn config(st: &State, bucket: &str) -> Result<Option<Arc<LifecycleConfig>>> {
    if let Some(c) = st.lifecycle.get(bucket) {
        return Ok(c);
    }
    let doc = s3hpc_core::identity::scope(
        None,
        s3hpc_core::caller::scope(Some(internal_caller()), st.cfg.store.get_bucket_config(bucket, "lifecycle")),
    )
    .await?;
    let c = match doc {
        Some(d) => Some(Arc::new(LifecycleConfig::parse(&d, None)?)),
        None => None,
    };
    st.lifecycle.put(bucket, c.clone());
    Ok(c)
}

/// What the caller knows of an object's tags.
pub(super) enum ObjectTags<'a> {
    /// The tag set (a PutObject's `x-amz-tagging`).
    Known(&'a [(String, String)]),
    /// Only how many there are (a read's ObjectInfo); read when a rule's tag condition needs them.
    Count(usize),
    /// Not known where the object was made (CompleteMultipartUpload: the tags came with
    /// CreateMultipartUpload; CopyObject: the source's or the request's, by the tagging
    /// directive); read when a rule's tag condition needs them.
    Unknown,
}

/// AWS's `x-amz-expiration` for the current object `r.key` (`expiry-date="Fri, 23 Dec 2012
/// 00:00:00 GMT", rule-id="..."`, the rule id URL-encoded), when an enabled Expiration rule of
/// the bucket's lifecycle configuration applies to it; `None` otherwise. Costs a cache lookup
/// when the bucket has no configuration; the object's tags are read only when a rule that
/// would apply has a tag condition. A configuration that cannot be read gives no header.
pub(super) async fn expiration_header(
    r: &Req<'_>,
    size: u64,
    created: SystemTime,
    tags: ObjectTags<'_>,
) -> Option<HeaderValue> {
    let config = match config(r.st, &r.bucket).await {
        Ok(Some(c)) => c,
        Ok(None) => return None,
        Err(e) => {
            tracing::debug!(bucket = r.bucket, "x-amz-expiration: lifecycle configuration unreadable: {e}");
            return None;
        }
    };
    let read;
    let tags: Option<&[(String, String)]> = match tags {
        ObjectTags::Known(t) => Some(t),
        ObjectTags::Count(0) => Some(&[]),
        ObjectTags::Count(_) | ObjectTags::Unknown if !config.expiry_needs_tags(&r.key, size) => None,
        ObjectTags::Count(_) | ObjectTags::Unknown => {
            let got = s3hpc_core::identity::scope(
                None,
                s3hpc_core::caller::scope(
                    Some(internal_caller()),
                    store(r).get_object_tagging(&r.bucket, &r.key, None),
                ),
            )
            .await;
            read = got.map(|t| t.tags).unwrap_or_default();
            Some(&read)
        }
    };
    let created = created.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let (due, id) = config.expiry(&r.key, size, created, tags, day_seconds())?;
    let when = UNIX_EPOCH + Duration::from_secs(due.max(0) as u64);
    let v =
        format!("expiry-date=\"{}\", rule-id=\"{}\"", crate::util::http_date(when), utf8_percent_encode(id, RULE_ID));
    HeaderValue::from_str(&v).ok()
}
