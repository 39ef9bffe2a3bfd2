//! Get/Put/DeleteBucketLifecycleConfiguration (`?lifecycle`). The document is validated here
//! ([`crate::lifecycle::LifecycleConfig`]) and kept as the bucket configuration `lifecycle`;
//! the lifecycle runner of `s3hpc serve` ([`crate::lifecycle::runner`]) applies it.

use http::StatusCode;

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::ReqBody;
use crate::lifecycle::LifecycleConfig;

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
    let mut resp = empty(StatusCode::OK);
    resp.headers_mut().insert(MIN_SIZE_HEADER, hval(&config.min_size)?);
    Ok(resp)
}

pub(super) async fn delete(r: &Req<'_>) -> Result<Resp> {
    store(r).put_bucket_config(&r.bucket, "lifecycle", None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
