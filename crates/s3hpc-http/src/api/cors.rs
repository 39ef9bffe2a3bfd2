//! Get/Put/DeleteBucketCors (`?cors`), the preflight `OPTIONS /bucket/key`, and the CORS headers
//! of other requests that carry an `Origin` ([`apply`]). Requests without `Origin` never read
//! a CORS configuration; those with one read it through a per-gateway cache
//! ([`crate::cors::CorsCache`]).

use std::sync::Arc;

use http::request::Parts;
use http::{HeaderName, HeaderValue, StatusCode};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::State;
use crate::body::ReqBody;
use crate::cors::CorsConfig;

pub(super) async fn get(r: &Req<'_>) -> Result<Resp> {
    let Some(doc) = store(r).get_bucket_config(&r.bucket, "cors").await? else {
        return Ok(crate::error_response_raw(
            404,
            "NoSuchCORSConfiguration",
            "The CORS configuration does not exist",
            Some(&r.bucket),
            &[("BucketName", r.bucket.clone())],
            false,
            r.parts.uri.path(),
            r.rid,
        ));
    };
    Ok(xml_ok(CorsConfig::parse(&doc)?.to_xml()))
}

pub(super) async fn put(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await.and_then(nonempty)?;
    let config = CorsConfig::parse(&data)?;
    store(r).put_bucket_config(&r.bucket, "cors", Some(config.to_xml().into_bytes())).await?;
    r.st.cors.forget(&r.bucket);
    Ok(empty(StatusCode::OK))
}

pub(super) async fn delete(r: &Req<'_>) -> Result<Resp> {
    store(r).put_bucket_config(&r.bucket, "cors", None).await?;
    r.st.cors.forget(&r.bucket);
    Ok(empty(StatusCode::NO_CONTENT))
}

/// The bucket's CORS configuration, read as the gateway itself (a browser's request may be
/// anonymous, and the configuration is not the caller's to read), cached briefly.
async fn config(st: &State, bucket: &str) -> Result<Option<Arc<CorsConfig>>> {
    if let Some(c) = st.cors.get(bucket) {
        return Ok(c);
    }
    let admin = Some(crate::lifecycle::runner::internal_caller());
    let doc = s3hpc_core::identity::scope(
        None,
        s3hpc_core::caller::scope(admin, st.cfg.store.get_bucket_config(bucket, "cors")),
    )
    .await?;
    let c = match doc {
        Some(d) => Some(Arc::new(CorsConfig::parse(&d)?)),
        None => None,
    };
    st.cors.put(bucket, c.clone());
    Ok(c)
}

fn forbidden(parts: &Parts, rid: u64, why: &str) -> Resp {
    crate::error_response_raw(403, "AccessForbidden", why, None, &[], false, parts.uri.path(), rid)
}

/// `OPTIONS /bucket[/key]`: a browser's preflight. Unsigned; answered from the bucket's CORS
/// rules with AWS's errors.
pub(super) async fn preflight(st: &State, parts: &Parts, bucket: &str, rid: u64) -> Result<Resp> {
    let h = &parts.headers;
    let bad = |msg: &str| crate::error_response_raw(400, "BadRequest", msg, None, &[], false, parts.uri.path(), rid);
    let Some(origin) = hdr(h, "origin") else {
        return Ok(bad("Insufficient information. Origin request header needed."));
    };
    let Some(method) = hdr(h, "access-control-request-method") else {
        return Ok(bad("Invalid Access-Control-Request-Method: null"));
    };
    let config = match config(st, bucket).await {
        Ok(c) => c,
        Err(e) if e.code == ErrorCode::NoSuchBucket => return Err(e.with_resource(bucket.to_string())),
        Err(e) => return Err(e),
    };
    let Some(config) = config else {
        return Ok(forbidden(parts, rid, "CORSResponse: CORS is not enabled for this bucket."));
    };
    let requested = hdr(h, "access-control-request-headers");
    let headers: Vec<&str> = requested.map(|v| v.split(',').collect()).unwrap_or_default();
    let Some(rule) = config.find(origin, method, &headers) else {
        return Ok(forbidden(
            parts,
            rid,
            "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, \
             request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted \
             by the resource's CORS spec.",
        ));
    };
    let mut resp = empty(StatusCode::OK);
    add(&mut resp, rule.headers(origin, requested));
    Ok(resp)
}

fn add(resp: &mut Resp, headers: Vec<(&'static str, String)>) {
    let out = resp.headers_mut();
    for (k, v) in headers {
        if let Ok(v) = HeaderValue::from_str(&v) {
            out.insert(HeaderName::from_static(k), v);
        }
    }
}

/// The CORS headers of a request with an `Origin` (any method but OPTIONS, success or error):
/// those of the first rule allowing the origin, the method and the headers, judged as S3 judges
/// them: the method is `Access-Control-Request-Method` where the request carries one (else the
/// request's own), and `Access-Control-Request-Headers`, where sent, must all be allowed and
/// are echoed in `Access-Control-Allow-Headers`, as on a preflight. Nothing when the bucket has
/// no configuration, no rule matches, or the request names no bucket.
pub(crate) async fn apply(st: &State, parts: &Parts, resp: &mut Resp) {
    let h = &parts.headers;
    let Some(origin) = hdr(h, "origin") else { return };
    let Ok((bucket, _)) = super::bucket_and_key(st, parts) else { return };
    if bucket.is_empty() || s3hpc_core::names::check_bucket_name_for_access(&bucket).is_err() {
        return;
    }
    let Ok(Some(config)) = config(st, &bucket).await else { return };
    let method = hdr(h, "access-control-request-method").unwrap_or(parts.method.as_str());
    let requested = hdr(h, "access-control-request-headers");
    let headers: Vec<&str> = requested.map(|v| v.split(',').collect()).unwrap_or_default();
    if let Some(rule) = config.find(origin, method, &headers) {
        add(resp, rule.headers(origin, requested));
    }
}
