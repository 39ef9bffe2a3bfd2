//! Access control documents: bucket policy (and its status), bucket and object ACLs, Object
//! Ownership controls and Block Public Access. The store gives them their meaning (the
//! authorizing store, `s3hpc_authz::Authorized`, validates them and keeps them); this module
//! only moves documents between HTTP and [`Store::get_bucket_config`] /
//! [`Store::put_bucket_config`].

use http::{StatusCode, header};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};

fn content_type(name: &str) -> &'static str {
    if name == "policy" { "application/json" } else { "application/xml" }
}

/// GET `?policy`, `?policyStatus`, `?acl`, `?ownershipControls`, `?publicAccessBlock`.
pub(super) async fn get(r: &Req<'_>, name: &str) -> Result<Resp> {
    let doc = store(r).get_bucket_config(&r.bucket, name).await?;
    let Some(doc) = doc else {
        // A plain store that keeps documents as given and has none.
        return Err(match name {
            "policy" | "policyStatus" => Error::code(ErrorCode::NoSuchBucketPolicy),
            "ownershipControls" => Error::code(ErrorCode::OwnershipControlsNotFoundError),
            "publicAccessBlock" => Error::code(ErrorCode::NoSuchPublicAccessBlockConfiguration),
            _ => Error::internal(format!("no {name} document")),
        }
        .with_bucket(&r.bucket));
    };
    Ok(http::Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, content_type(name))
        .header(header::CONTENT_LENGTH, doc.len())
        .body(RespBody::full(doc))
        .unwrap())
}

/// PUT `?policy` (204, as S3), `?acl`, `?ownershipControls`, `?publicAccessBlock` (200).
pub(super) async fn put(r: &Req<'_>, name: &str, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, false).await?;
    store(r).put_bucket_config(&r.bucket, name, Some(data.to_vec())).await?;
    Ok(if name == "policy" { empty(StatusCode::NO_CONTENT) } else { empty_ok().body(RespBody::Empty).unwrap() })
}

/// DELETE `?policy`, `?ownershipControls`, `?publicAccessBlock` (204).
pub(super) async fn delete(r: &Req<'_>, name: &str) -> Result<Resp> {
    store(r).put_bucket_config(&r.bucket, name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// PUT `?acl` on an object: the ACL from the request headers or the body.
pub(super) async fn put_object_acl(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    check_version_id(r.q.get("versionId"))?;
    let data = small_body(r, body, false).await?;
    let doc = (!data.is_empty()).then(|| data.to_vec());
    store(r).put_object_acl(&r.bucket, &r.key, doc).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}
