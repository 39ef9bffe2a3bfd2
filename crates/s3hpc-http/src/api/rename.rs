//! RenameObject (`PUT /bucket/key?renameObject` with `x-amz-rename-source`).

use http::HeaderMap;

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::RespBody;
use crate::util::decode_path;

/// `x-amz-rename-source`: `/bucket/key` or `bucket/key`, URL-encoded; the bucket must be the
/// request's. Returns the source key.
pub(super) fn rename_source(h: &HeaderMap, bucket: &str) -> Result<String> {
    let bad = || Error::invalid_argument("x-amz-rename-source must name the source object as /bucket/key");
    let raw = hdr(h, "x-amz-rename-source").ok_or_else(bad)?;
    let path = decode_path(raw).ok_or_else(bad)?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let (b, k) = path.split_once('/').ok_or_else(bad)?;
    if b.is_empty() || k.is_empty() {
        return Err(bad());
    }
    if b != bucket {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "RenameObject renames objects within one bucket: the rename source must be in the destination bucket",
        ));
    }
    names::validate_key(k)?;
    Ok(k.to_string())
}

pub(super) async fn rename_object(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    let src = rename_source(h, &r.bucket)?;
    let client_token = hdr(h, "x-amz-client-token").map(str::to_owned);
    if client_token.as_ref().is_some_and(|t| t.is_empty() || t.len() > 64) {
        return Err(Error::invalid_argument("x-amz-client-token must be 1 to 64 characters"));
    }
    let req = RenameObjectRequest {
        source_conditions: conditions(h, "x-amz-rename-source-"),
        conditions: conditions(h, ""),
        client_token,
    };
    store(r).rename_object(&r.bucket, &src, &r.key, req).await.map_err(|e| {
        // Source conditions never answer 304 (as on a copy).
        if e.code == ErrorCode::NotModified { Error::code(ErrorCode::PreconditionFailed) } else { e }
    })?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}
