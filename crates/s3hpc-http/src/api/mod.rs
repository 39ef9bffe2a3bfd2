//! The S3 API: one routing table ([`ROUTES`]) from method + target + subresource to an
//! operation ([`Op`]), and one module per operation family.
//!
//! | module | operations |
//! |---|---|
//! | [`lifecycle`] | Get/Put/DeleteBucketLifecycleConfiguration |
//! | [`cors`] | Get/Put/DeleteBucketCors, the preflight `OPTIONS`, CORS headers on other requests |
//! | [`website`] | Get/Put/DeleteBucketWebsite (the document, kept through the Store seam) |
//! | [`website_serve`] | the website endpoint (`--website-domain`): GET/HEAD of `BUCKET.DOMAIN` |
//! | [`access`] | Get/Put/DeleteBucketPolicy, GetBucketPolicyStatus, Get/PutBucketAcl, PutObjectAcl, Get/Put/DeleteBucketOwnershipControls, Get/Put/DeletePublicAccessBlock |
//! | [`bucket`] | ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation, unsupported bucket configurations |
//! | [`list`] | ListObjects (v1, v2, versions), ListMultipartUploads, ListParts |
//! | [`object_get`] | GetObject, HeadObject, GetObjectAttributes, GetObjectAcl |
//! | [`object_put`] | PutObject |
//! | [`object_lock`] | Get/PutObjectLockConfiguration, Get/PutObjectRetention, Get/PutObjectLegalHold |
//! | [`post_object`] | PostObject (browser form uploads) |
//! | [`copy`] | CopyObject, UploadPartCopy |
//! | [`multipart`] | CreateMultipartUpload, UploadPart, CompleteMultipartUpload, AbortMultipartUpload |
//! | [`delete`] | DeleteObject, DeleteObjects |
//! | [`tagging`] | Get/Put/DeleteObjectTagging, Get/Put/DeleteBucketTagging |
//!
//! [`request`] holds what the operations share to read a request (headers, bodies, checksums),
//! [`response`] what they share to answer.

use std::time::SystemTime;

use http::Method;
use http::request::Parts;

use s3hpc_core::caller::{Caller, CallerHeaders};
use s3hpc_core::names::check_bucket_name_for_access;
use s3hpc_core::*;
use s3hpc_sigv4::Verified;

use crate::body::ReqBody;
use crate::util::{Query, decode_path};
use crate::{Auth, State};

mod access;
mod bucket;
mod copy;
pub(crate) mod cors;
mod delete;
mod fs;
mod lifecycle;
mod list;
mod multipart;
mod object_get;
mod object_lock;
mod object_put;
#[cfg(test)]
mod op_tests;
mod post_object;
mod rename;
mod request;
mod response;
mod sts;
mod tagging;
mod versioning;
mod website;
pub(crate) mod website_serve;

use request::hdr;
use response::Resp;

/// Total size of request headers accepted (names plus values).
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Bucket subresources that are known but not supported: GET answers "not configured" where
/// AWS has such an answer; writes answer 501.
const BUCKET_UNSUPPORTED: &[&str] = &[
    "encryption",
    "replication",
    "logging",
    "notification",
    "accelerate",
    "requestPayment",
    "analytics",
    "metrics",
    "inventory",
    "intelligent-tiering",
    "metadataTable",
];
/// Object subresources that are known but not supported (501).
const OBJECT_UNSUPPORTED: &[&str] = &["torrent", "restore", "select"];

macro_rules! operations {
    ($($(#[$doc:meta])* $op:ident),* $(,)?) => {
        /// The operations the router knows: the S3 operations ([`S3Op`], shared with the
        /// authorization layer) and what only a router has. The name is what the access log
        /// prints and the metrics' `operation` label carries.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Op {
            S3(S3Op),
            $($(#[$doc])* $op),*
        }
        impl Op {
            /// The router's own operations (every `Op` but `Op::S3`).
            #[cfg(test)]
            const ROUTER_ONLY: &'static [Op] = &[$(Op::$op),*];

            pub(crate) fn name(self) -> &'static str {
                match self {
                    Op::S3(o) => o.name(),
                    $(Op::$op => stringify!($op)),*
                }
            }
        }
    };
}

// The router's own operations. Not `S3Op`s: the authorization layer has no entry for them, as
// they are no single S3 operation (the unsupported subresources, the CORS preflight, s3hpc's
// extensions) or are authorized as the operations they make (DeleteObjects: each key's
// DeleteObject; PostObject: PutObject; RenameObject: DeleteObject and PutObject).
operations! {
    /// GET on a bucket subresource of [`BUCKET_UNSUPPORTED`].
    GetBucketConfig,
    /// PUT on a bucket subresource of [`BUCKET_UNSUPPORTED`].
    PutBucketConfig,
    /// DELETE on a bucket subresource of [`BUCKET_UNSUPPORTED`].
    DeleteBucketConfig,
    /// A browser form upload (`POST /bucket`).
    PostObject,
    /// `OPTIONS` on a bucket or object (unsigned; chosen before the routing table is read).
    PreflightCors,
    /// `PUT ?renameObject`.
    RenameObject,
    /// s3hpc's file-system extension (`POST ?s3hpc-fs`).
    Fs,
    DeleteObjects,
    /// An object subresource of [`OBJECT_UNSUPPORTED`].
    UnsupportedObjectSubresource,
    /// Any other POST on an object.
    UnsupportedObjectPost,
}

/// What a request addresses: the service (no bucket), a bucket (no key) or an object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Service,
    Bucket,
    Object,
}

/// The methods S3 uses; anything else is MethodNotAllowed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum M {
    Head,
    Get,
    Put,
    Post,
    Delete,
}

/// What a route needs besides target and method.
#[derive(Clone, Copy)]
enum When {
    Always,
    /// The query has this parameter (a subresource such as `?tagging`, with or without a value).
    Query(&'static str),
    /// The request has this header.
    Header(&'static str),
    /// Both.
    QueryAndHeader(&'static str, &'static str),
    /// The query names a subresource s3hpc knows but does not support.
    Unsupported,
}

use M::*;
use Target::*;
use When::*;

/// The routing table, read top to bottom: the first row whose target, method and condition
/// match names the operation. A request no row matches is MethodNotAllowed.
#[rustfmt::skip]
const ROUTES: &[(Target, M, When, Op)] = &[
    (Service, Get,    Always,                                       Op::S3(S3Op::ListBuckets)),

    (Bucket,  Head,   Always,                                       Op::S3(S3Op::HeadBucket)),
    (Bucket,  Get,    Query("location"),                            Op::S3(S3Op::GetBucketLocation)),
    (Bucket,  Get,    Query("tagging"),                             Op::S3(S3Op::GetBucketTagging)),
    (Bucket,  Get,    Query("uploads"),                             Op::S3(S3Op::ListMultipartUploads)),
    (Bucket,  Get,    Query("versions"),                            Op::S3(S3Op::ListObjectVersions)),
    (Bucket,  Get,    Query("versioning"),                          Op::S3(S3Op::GetBucketVersioning)),
    (Bucket,  Get,    Query("policy"),                              Op::S3(S3Op::GetBucketPolicy)),
    (Bucket,  Get,    Query("policyStatus"),                        Op::S3(S3Op::GetBucketPolicyStatus)),
    (Bucket,  Get,    Query("acl"),                                 Op::S3(S3Op::GetBucketAcl)),
    (Bucket,  Get,    Query("ownershipControls"),                   Op::S3(S3Op::GetBucketOwnershipControls)),
    (Bucket,  Get,    Query("publicAccessBlock"),                   Op::S3(S3Op::GetPublicAccessBlock)),
    (Bucket,  Get,    Query("lifecycle"),                           Op::S3(S3Op::GetBucketLifecycleConfiguration)),
    (Bucket,  Get,    Query("cors"),                                Op::S3(S3Op::GetBucketCors)),
    (Bucket,  Get,    Query("website"),                             Op::S3(S3Op::GetBucketWebsite)),
    (Bucket,  Get,    Query("object-lock"),                         Op::S3(S3Op::GetObjectLockConfiguration)),
    (Bucket,  Get,    Unsupported,                                  Op::GetBucketConfig),
    (Bucket,  Get,    Query("list-type"),                           Op::S3(S3Op::ListObjectsV2)),
    (Bucket,  Get,    Always,                                       Op::S3(S3Op::ListObjects)),
    (Bucket,  Put,    Query("tagging"),                             Op::S3(S3Op::PutBucketTagging)),
    (Bucket,  Put,    Query("versioning"),                          Op::S3(S3Op::PutBucketVersioning)),
    (Bucket,  Put,    Query("policy"),                              Op::S3(S3Op::PutBucketPolicy)),
    (Bucket,  Put,    Query("acl"),                                 Op::S3(S3Op::PutBucketAcl)),
    (Bucket,  Put,    Query("ownershipControls"),                   Op::S3(S3Op::PutBucketOwnershipControls)),
    (Bucket,  Put,    Query("publicAccessBlock"),                   Op::S3(S3Op::PutPublicAccessBlock)),
    (Bucket,  Put,    Query("lifecycle"),                           Op::S3(S3Op::PutBucketLifecycleConfiguration)),
    (Bucket,  Put,    Query("cors"),                                Op::S3(S3Op::PutBucketCors)),
    (Bucket,  Put,    Query("website"),                             Op::S3(S3Op::PutBucketWebsite)),
    (Bucket,  Put,    Query("object-lock"),                         Op::S3(S3Op::PutObjectLockConfiguration)),
    (Bucket,  Put,    Unsupported,                                  Op::PutBucketConfig),
    (Bucket,  Put,    Always,                                       Op::S3(S3Op::CreateBucket)),
    (Bucket,  Delete, Query("tagging"),                             Op::S3(S3Op::DeleteBucketTagging)),
    (Bucket,  Delete, Query("policy"),                              Op::S3(S3Op::DeleteBucketPolicy)),
    (Bucket,  Delete, Query("ownershipControls"),                   Op::S3(S3Op::DeleteBucketOwnershipControls)),
    (Bucket,  Delete, Query("publicAccessBlock"),                   Op::S3(S3Op::DeletePublicAccessBlock)),
    (Bucket,  Delete, Query("lifecycle"),                           Op::S3(S3Op::DeleteBucketLifecycle)),
    (Bucket,  Delete, Query("cors"),                                Op::S3(S3Op::DeleteBucketCors)),
    (Bucket,  Delete, Query("website"),                             Op::S3(S3Op::DeleteBucketWebsite)),
    (Bucket,  Delete, Unsupported,                                  Op::DeleteBucketConfig),
    (Bucket,  Delete, Always,                                       Op::S3(S3Op::DeleteBucket)),
    (Bucket,  Post,   Query("delete"),                              Op::DeleteObjects),
    (Bucket,  Post,   Query("s3hpc-fs"),                            Op::Fs),
    (Bucket,  Post,   Always,                                       Op::PostObject),

    (Object,  Head,   Always,                                       Op::S3(S3Op::HeadObject)),
    (Object,  Get,    Query("tagging"),                             Op::S3(S3Op::GetObjectTagging)),
    (Object,  Get,    Query("uploadId"),                            Op::S3(S3Op::ListParts)),
    (Object,  Get,    Query("attributes"),                          Op::S3(S3Op::GetObjectAttributes)),
    (Object,  Get,    Query("acl"),                                 Op::S3(S3Op::GetObjectAcl)),
    (Object,  Get,    Query("retention"),                           Op::S3(S3Op::GetObjectRetention)),
    (Object,  Get,    Query("legal-hold"),                          Op::S3(S3Op::GetObjectLegalHold)),
    (Object,  Get,    Unsupported,                                  Op::UnsupportedObjectSubresource),
    (Object,  Get,    Always,                                       Op::S3(S3Op::GetObject)),
    (Object,  Put,    Query("tagging"),                             Op::S3(S3Op::PutObjectTagging)),
    (Object,  Put,    Query("renameObject"),                        Op::RenameObject),
    (Object,  Put,    Query("acl"),                                 Op::S3(S3Op::PutObjectAcl)),
    (Object,  Put,    Query("retention"),                           Op::S3(S3Op::PutObjectRetention)),
    (Object,  Put,    Query("legal-hold"),                          Op::S3(S3Op::PutObjectLegalHold)),
    (Object,  Put,    Unsupported,                                  Op::UnsupportedObjectSubresource),
    (Object,  Put,    QueryAndHeader("uploadId", "x-amz-copy-source"),   Op::S3(S3Op::UploadPartCopy)),
    (Object,  Put,    QueryAndHeader("partNumber", "x-amz-copy-source"), Op::S3(S3Op::UploadPartCopy)),
    (Object,  Put,    Query("uploadId"),                            Op::S3(S3Op::UploadPart)),
    (Object,  Put,    Query("partNumber"),                          Op::S3(S3Op::UploadPart)),
    (Object,  Put,    Header("x-amz-copy-source"),                  Op::S3(S3Op::CopyObject)),
    (Object,  Put,    Always,                                       Op::S3(S3Op::PutObject)),
    (Object,  Delete, Query("tagging"),                             Op::S3(S3Op::DeleteObjectTagging)),
    (Object,  Delete, Query("uploadId"),                            Op::S3(S3Op::AbortMultipartUpload)),
    (Object,  Delete, Unsupported,                                  Op::UnsupportedObjectSubresource),
    (Object,  Delete, Always,                                       Op::S3(S3Op::DeleteObject)),
    (Object,  Post,   Query("uploads"),                             Op::S3(S3Op::CreateMultipartUpload)),
    (Object,  Post,   Query("uploadId"),                            Op::S3(S3Op::CompleteMultipartUpload)),
    (Object,  Post,   Query("s3hpc-fs"),                            Op::Fs),
    (Object,  Post,   Always,                                       Op::UnsupportedObjectPost),
];

/// The operation `ROUTES` gives a request, or `None` (MethodNotAllowed).
fn route(target: Target, method: &Method, q: &Query, headers: &http::HeaderMap) -> Option<Op> {
    let m = match *method {
        Method::HEAD => Head,
        Method::GET => Get,
        Method::PUT => Put,
        Method::POST => Post,
        Method::DELETE => Delete,
        _ => return None,
    };
    let unsupported = if target == Bucket { BUCKET_UNSUPPORTED } else { OBJECT_UNSUPPORTED };
    ROUTES
        .iter()
        .find(|(t, rm, when, _)| {
            *t == target
                && *rm == m
                && match *when {
                    Always => true,
                    Query(p) => q.has(p),
                    Header(h) => headers.contains_key(h),
                    QueryAndHeader(p, h) => q.has(p) && headers.contains_key(h),
                    Unsupported => unsupported.iter().any(|s| q.has(s)),
                }
        })
        .map(|r| r.3)
}

/// The session token a request carries: `x-amz-security-token`, or `X-Amz-Security-Token` in a
/// presigned URL's query.
fn session_token(parts: &Parts) -> Option<String> {
    if let Some(v) = parts.headers.get("x-amz-security-token") {
        return Some(String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    // SigV4 URLs name it `X-Amz-Security-Token`, SigV2 ones (boto3) `x-amz-security-token`.
    let q = parts.uri.query()?;
    if !q.contains("ecurity-") && !q.contains("ECURITY-") {
        return None;
    }
    q.split('&').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.eq_ignore_ascii_case("x-amz-security-token")
            .then(|| String::from_utf8_lossy(&s3hpc_sigv4::encode::percent_decode(v)).into_owned())
    })
}

/// A request being served.
pub(crate) struct Req<'a> {
    st: &'a State,
    parts: &'a Parts,
    q: Query<'a>,
    bucket: String,
    key: String,
    verified: Option<Verified>,
    rid: u64,
}

impl Req<'_> {
    /// The first unsupported subresource the query names (for the 501 message).
    fn unsupported_subresource(&self, list: &[&'static str]) -> &'static str {
        list.iter().copied().find(|s| self.q.has(s)).unwrap_or("")
    }
}

pub(crate) async fn dispatch(
    st: &State,
    parts: &Parts,
    body: ReqBody,
    rid: u64,
    op: &mut &'static str,
) -> Result<Resp> {
    let header_bytes: usize = parts.headers.iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Err(Error::code(ErrorCode::RequestHeaderSectionTooLarge));
    }
    // The website endpoint: `Host: BUCKET.DOMAIN` of a --website-domain (none: no cost).
    if let Some(bucket) = website_serve::website_bucket(st, parts) {
        *op = "Website";
        return Ok(website_serve::serve(st, parts, bucket, rid).await);
    }
    let (bucket, key) = bucket_and_key(st, parts)?;
    if st.cfg.auth == Auth::SigV4 && sts::is_sts(parts, &bucket) {
        return Ok(sts::handle(st, parts, body, rid, op).await);
    }
    // A CORS preflight is unsigned (browsers send no credentials): answered before any auth.
    if parts.method == Method::OPTIONS && !bucket.is_empty() {
        *op = Op::PreflightCors.name();
        check_bucket_name_for_access(&bucket)?;
        return cors::preflight(st, parts, &bucket, rid).await;
    }
    // Who asks: the verified key's account and POSIX identity (one lookup), or anonymous.
    // A browser form upload (POST /bucket, no query) is signed inside its form: the POST object
    // operation verifies it there and scopes the store call itself.
    let form_post = parts.method == Method::POST
        && key.is_empty()
        && !bucket.is_empty()
        && parts.uri.query().is_none_or(str::is_empty)
        && s3hpc_sigv4::is_anonymous(parts);
    // The web console's requests (crate::console) were authenticated by its session: they act as
    // its account, exactly as a request signed with that account's key.
    let pre = parts.extensions.get::<crate::console::Preauth>();
    let (verified, caller, id) = match st.cfg.auth {
        _ if pre.is_some() => {
            let ak = pre.map(|p| p.access_key.clone()).unwrap_or_default();
            let (account, id) =
                st.cfg.creds.account_and_identity(&ak).ok_or(Error::code(ErrorCode::InvalidAccessKeyId))?;
            let v = Verified { access_key: ak, payload: s3hpc_sigv4::Payload::Unsigned, chunk_ctx: None };
            (Some(v), Some(caller(st, parts, Some(account))), id)
        }
        Auth::SigV4 if form_post => (None, None, None),
        Auth::SigV4 if st.cfg.anonymous && s3hpc_sigv4::is_anonymous(parts) => {
            // Nothing verifies an unsigned request's aws-chunked framing, so it is refused
            // rather than stored as the body.
            if hdr(&parts.headers, "x-amz-content-sha256").is_some_and(|v| v.starts_with("STREAMING-")) {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "An anonymous request cannot send an aws-chunked (STREAMING-*) payload",
                ));
            }
            (None, Some(caller(st, parts, None)), st.cfg.anonymous_identity.clone())
        }
        Auth::SigV4 => {
            // An unsigned aws-chunked body is for object uploads only (a PUT of a key): AWS
            // refuses it for other operations (versity/versitygw#1601, direct to S3).
            if hdr(&parts.headers, "x-amz-content-sha256") == Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER")
                && (parts.method != Method::PUT || key.is_empty())
            {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "The value of x-amz-content-sha256 header is invalid.",
                ));
            }
            // An aws-chunked body without its decoded length: 411 MissingContentLength, as AWS
            // answers before looking at the signature (which may well name the absent header).
            if hdr(&parts.headers, "x-amz-content-sha256").is_some_and(|v| v.starts_with("STREAMING-"))
                && !parts.headers.contains_key("x-amz-decoded-content-length")
            {
                return Err(Error::code(ErrorCode::MissingContentLength));
            }
            let v = s3hpc_sigv4::verify(parts, &st.cfg.creds, SystemTime::now(), &st.accept)?;
            // Temporary credentials (STS) need their session token; a long-term key takes none.
            let token = session_token(parts);
            if token.is_some() || !st.cfg.creds.is_listed(&v.access_key) {
                st.cfg.creds.check_session_token(&v.access_key, token.as_deref())?;
            }
            // None: the key was removed by a reload between verifying and here.
            let (account, id) =
                st.cfg.creds.account_and_identity(&v.access_key).ok_or(Error::code(ErrorCode::InvalidAccessKeyId))?;
            (Some(v), Some(caller(st, parts, Some(account))), id)
        }
        Auth::DisabledForTests => (None, None, None),
    };
    let r = Req { st, parts, q: Query::parse(parts.uri.query()), bucket, key, verified, rid };
    let target = if r.bucket.is_empty() {
        Service
    } else if r.key.is_empty() {
        Bucket
    } else {
        Object
    };
    match target {
        Service => {}
        Bucket => {
            let create = parts.method == Method::PUT && !r.q.keys().any(|k| k != "x-id");
            if create {
                // The full rules for new names, before the body is read.
                names::validate_bucket_name(&r.bucket)?;
            } else {
                check_bucket_name_for_access(&r.bucket)?;
            }
        }
        Object => {
            check_bucket_name_for_access(&r.bucket)?;
            if r.q.has("s3hpc-fs") {
                // s3hpc's file-system extension names paths, up to PATH_MAX.
                s3hpc_core::fsattr::validate_fs_key(&r.key)?;
            } else {
                names::validate_key(&r.key)?;
            }
            if parts.method == Method::GET && r.q.has("versions") {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "There is no such thing as the ?versions sub-resource for a key",
                ));
            }
        }
    }
    let Some(o) = route(target, &parts.method, &r.q, &parts.headers) else {
        if target == Service {
            *op = Op::S3(S3Op::ListBuckets).name();
        }
        return Err(Error::code(ErrorCode::MethodNotAllowed));
    };
    *op = o.name();
    // With `--identity posix` the store call acts as the account's POSIX user (see
    // s3hpc_core::identity); otherwise as the gateway.
    s3hpc_core::identity::scope(id, s3hpc_core::caller::scope(caller, run(o, &r, body))).await
}

/// Bucket and key of a request: virtual-host style when the Host names a bucket under
/// --domain, else path style. The path is split at its first raw `/` before decoding, so an
/// encoded slash (`/%2Ftmp/x`) stays inside the bucket name (and fails its rules) and never
/// moves the bucket/key boundary.
pub(crate) fn bucket_and_key(st: &State, parts: &Parts) -> Result<(String, String)> {
    let raw = parts.uri.path();
    let raw = raw.strip_prefix('/').unwrap_or(raw);
    let decode = |s| {
        decode_path(s)
            .map(|c| c.into_owned())
            .ok_or_else(|| Error::invalid_argument("The request path is not valid UTF-8 after decoding"))
    };
    // A website request's bucket is its Host's (the CORS headers of its answer are that bucket's).
    if let Some(b) = website_serve::website_bucket(st, parts) {
        return Ok((b, decode(raw)?));
    }
    let vhost = st.domain_suffix.as_deref().and_then(|suffix| {
        let host = hdr(&parts.headers, "host").or(parts.uri.host())?;
        let host =
            host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h);
        let host = host.to_ascii_lowercase();
        host.strip_suffix(suffix).filter(|b| !b.is_empty()).map(str::to_owned)
    });
    Ok(match vhost {
        Some(b) => (b, decode(raw)?),
        None => {
            let (b, k) = raw.split_once('/').unwrap_or((raw, ""));
            if b.is_empty() && !raw.is_empty() {
                // `//key` or `//`: an empty bucket name, not the service.
                return Err(Error::code(ErrorCode::InvalidBucketName).with_resource(""));
            }
            (decode(b)?, decode(k)?)
        }
    })
}

/// Who makes the request, for S3 authorization (`account` `None`: anonymous).
fn caller(
    st: &State,
    parts: &Parts,
    account: Option<std::sync::Arc<s3hpc_core::caller::Account>>,
) -> std::sync::Arc<Caller> {
    // One pass over the headers for the ten the authorization layer may need (most requests
    // carry none of them), instead of ten lookups by name, each parsing and hashing the name.
    const ACL: [&str; 6] = [
        "x-amz-acl",
        "x-amz-grant-read",
        "x-amz-grant-write",
        "x-amz-grant-read-acp",
        "x-amz-grant-write-acp",
        "x-amz-grant-full-control",
    ];
    // Headers a bucket policy can test as condition keys `s3:<name>` (x-amz-copy-source apart;
    // not x-amz-content-sha256, which every signed request carries: no copy per request).
    const POLICY_KEYS: [&str; 5] = [
        "x-amz-metadata-directive",
        "x-amz-storage-class",
        "x-amz-server-side-encryption",
        "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-website-redirect-location",
    ];
    let mut acl: [Option<&str>; 6] = [None; 6];
    let mut headers = CallerHeaders::default();
    let mut bypass = None;
    for (name, v) in &parts.headers {
        let n = name.as_str();
        if !n.starts_with("x-amz-") {
            continue;
        }
        // As `hdr`: the first value of a name, if it is UTF-8.
        let Ok(v) = std::str::from_utf8(v.as_bytes()) else { continue };
        match n {
            "x-amz-expected-bucket-owner" => {
                headers.expected_bucket_owner.get_or_insert_with(|| v.to_owned());
            }
            "x-amz-source-expected-bucket-owner" => {
                headers.source_expected_bucket_owner.get_or_insert_with(|| v.to_owned());
            }
            "x-amz-object-ownership" => {
                headers.object_ownership.get_or_insert_with(|| v.to_owned());
            }
            "x-amz-bypass-governance-retention" => {
                bypass.get_or_insert(v.trim().eq_ignore_ascii_case("true"));
            }
            // The source as a policy's `s3:x-amz-copy-source` names it: `bucket/key`, decoded,
            // without the leading '/' or a `?versionId=`.
            "x-amz-copy-source" => {
                let path = v.split_once("?versionId=").map_or(v, |(p, _)| p);
                let path = crate::util::decode_path(path).map_or_else(|| path.to_owned(), |p| p.into_owned());
                headers.condition_keys.push((n.to_owned(), path.trim_start_matches('/').to_owned()));
            }
            _ => {
                if let Some(i) = ACL.iter().position(|a| *a == n) {
                    acl[i].get_or_insert(v);
                } else if POLICY_KEYS.contains(&n) {
                    headers.condition_keys.push((n.to_owned(), v.trim().to_owned()));
                }
            }
        }
    }
    headers.bypass_governance_retention = bypass.unwrap_or(false);
    for (name, v) in ACL.iter().zip(acl) {
        if let Some(v) = v {
            headers.acl.push(((*name).to_owned(), v.to_owned()));
        }
    }
    std::sync::Arc::new(Caller {
        account,
        source_ip: parts.extensions.get::<crate::conn::PeerIp>().map(|p| p.0),
        secure: st.cfg.tls.is_some(),
        headers,
    })
}

/// Run one operation. Each operation's future is boxed: the state of an `async fn` holds every
/// arm's future side by side (rustc does not overlap them), so a `match` of ~60 inline
/// operations made each request's future ~15 KB, copied as it was built and wrapped. Boxed,
/// the request future is ~2.4 KB for one allocation of the operation's own size
/// (`cargo clippy -p s3hpc-http -- -W clippy::large_futures` with a lower
/// `future-size-threshold` shows the sizes).
async fn run(op: Op, r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    match op {
        Op::S3(S3Op::ListBuckets) => Box::pin(bucket::list_buckets(r)).await,
        Op::S3(S3Op::HeadBucket) => Box::pin(bucket::head_bucket(r)).await,
        Op::S3(S3Op::GetBucketLocation) => Box::pin(bucket::get_bucket_location(r)).await,
        Op::S3(S3Op::CreateBucket) => Box::pin(bucket::create_bucket(r, body)).await,
        Op::S3(S3Op::DeleteBucket) => Box::pin(bucket::delete_bucket(r)).await,
        Op::GetBucketConfig => {
            Box::pin(bucket::get_bucket_config(r, r.unsupported_subresource(BUCKET_UNSUPPORTED))).await
        }
        Op::PutBucketConfig | Op::DeleteBucketConfig => Err(Error::not_implemented(format!(
            "{} ?{} is not supported by s3hpc",
            r.parts.method,
            r.unsupported_subresource(BUCKET_UNSUPPORTED)
        ))),
        Op::PostObject => Box::pin(post_object::post_object(r, body)).await,
        Op::S3(S3Op::GetBucketPolicy) => Box::pin(access::get(r, "policy")).await,
        Op::S3(S3Op::GetBucketPolicyStatus) => Box::pin(access::get(r, "policyStatus")).await,
        Op::S3(S3Op::GetBucketAcl) => Box::pin(access::get(r, "acl")).await,
        Op::S3(S3Op::GetBucketOwnershipControls) => Box::pin(access::get(r, "ownershipControls")).await,
        Op::S3(S3Op::GetPublicAccessBlock) => Box::pin(access::get(r, "publicAccessBlock")).await,
        Op::S3(S3Op::PutBucketPolicy) => Box::pin(access::put(r, "policy", body)).await,
        Op::S3(S3Op::PutBucketAcl) => Box::pin(access::put(r, "acl", body)).await,
        Op::S3(S3Op::PutBucketOwnershipControls) => Box::pin(access::put(r, "ownershipControls", body)).await,
        Op::S3(S3Op::PutPublicAccessBlock) => Box::pin(access::put(r, "publicAccessBlock", body)).await,
        Op::S3(S3Op::DeleteBucketPolicy) => Box::pin(access::delete(r, "policy")).await,
        Op::S3(S3Op::DeleteBucketOwnershipControls) => Box::pin(access::delete(r, "ownershipControls")).await,
        Op::S3(S3Op::DeletePublicAccessBlock) => Box::pin(access::delete(r, "publicAccessBlock")).await,
        Op::S3(S3Op::PutObjectAcl) => Box::pin(access::put_object_acl(r, body)).await,
        Op::S3(S3Op::GetBucketLifecycleConfiguration) => Box::pin(lifecycle::get(r)).await,
        Op::S3(S3Op::PutBucketLifecycleConfiguration) => Box::pin(lifecycle::put(r, body)).await,
        Op::S3(S3Op::DeleteBucketLifecycle) => Box::pin(lifecycle::delete(r)).await,
        Op::S3(S3Op::GetBucketCors) => Box::pin(cors::get(r)).await,
        Op::S3(S3Op::PutBucketCors) => Box::pin(cors::put(r, body)).await,
        Op::S3(S3Op::DeleteBucketCors) => Box::pin(cors::delete(r)).await,
        Op::S3(S3Op::GetBucketWebsite) => Box::pin(website::get(r)).await,
        Op::S3(S3Op::PutBucketWebsite) => Box::pin(website::put(r, body)).await,
        Op::S3(S3Op::DeleteBucketWebsite) => Box::pin(website::delete(r)).await,
        Op::PreflightCors => Err(Error::code(ErrorCode::MethodNotAllowed)),
        Op::S3(S3Op::GetObjectLockConfiguration) => Box::pin(object_lock::get_config(r)).await,
        Op::S3(S3Op::PutObjectLockConfiguration) => Box::pin(object_lock::put_config(r, body)).await,
        Op::S3(S3Op::GetObjectRetention) => Box::pin(object_lock::get_retention(r)).await,
        Op::S3(S3Op::PutObjectRetention) => Box::pin(object_lock::put_retention(r, body)).await,
        Op::S3(S3Op::GetObjectLegalHold) => Box::pin(object_lock::get_legal_hold(r)).await,
        Op::S3(S3Op::PutObjectLegalHold) => Box::pin(object_lock::put_legal_hold(r, body)).await,
        Op::S3(S3Op::GetBucketTagging) => Box::pin(tagging::get_bucket_tagging(r)).await,
        Op::S3(S3Op::PutBucketTagging) => Box::pin(tagging::put_bucket_tagging(r, body)).await,
        Op::S3(S3Op::DeleteBucketTagging) => Box::pin(tagging::delete_bucket_tagging(r)).await,
        Op::S3(S3Op::ListObjects) => Box::pin(list::list_objects(r, list::ListKind::V1)).await,
        Op::S3(S3Op::ListObjectsV2) => match r.q.get("list-type") {
            Some("2") => Box::pin(list::list_objects(r, list::ListKind::V2)).await,
            // `list-type=1` names ListObjects (v1) explicitly; S3 answers it as such.
            Some("1") => Box::pin(list::list_objects(r, list::ListKind::V1)).await,
            _ => Err(Error::invalid_argument("Invalid list type")),
        },
        Op::S3(S3Op::ListObjectVersions) => Box::pin(versioning::list_object_versions(r)).await,
        Op::S3(S3Op::GetBucketVersioning) => Box::pin(versioning::get_bucket_versioning(r)).await,
        Op::S3(S3Op::PutBucketVersioning) => Box::pin(versioning::put_bucket_versioning(r, body)).await,
        Op::S3(S3Op::ListMultipartUploads) => Box::pin(list::list_uploads(r)).await,
        Op::S3(S3Op::ListParts) => Box::pin(list::list_parts(r)).await,
        Op::S3(S3Op::HeadObject) => Box::pin(object_get::get_object(r, true)).await,
        Op::S3(S3Op::GetObject) => Box::pin(object_get::get_object(r, false)).await,
        Op::S3(S3Op::GetObjectAttributes) => Box::pin(object_get::get_object_attributes(r)).await,
        Op::S3(S3Op::GetObjectAcl) => Box::pin(object_get::get_object_acl(r)).await,
        Op::S3(S3Op::PutObject) => Box::pin(object_put::put_object(r, body)).await,
        Op::S3(S3Op::CopyObject) => Box::pin(copy::copy_object(r)).await,
        Op::RenameObject => Box::pin(rename::rename_object(r)).await,
        Op::Fs => Box::pin(fs::fs(r)).await,
        Op::S3(S3Op::DeleteObject) => Box::pin(delete::delete_object(r)).await,
        Op::DeleteObjects => Box::pin(delete::delete_objects(r, body)).await,
        Op::S3(S3Op::GetObjectTagging) => Box::pin(tagging::get_object_tagging(r)).await,
        Op::S3(S3Op::PutObjectTagging) => Box::pin(tagging::put_object_tagging(r, body)).await,
        Op::S3(S3Op::DeleteObjectTagging) => Box::pin(tagging::delete_object_tagging(r)).await,
        Op::S3(S3Op::CreateMultipartUpload) => Box::pin(multipart::create_multipart(r)).await,
        Op::S3(S3Op::UploadPart) => Box::pin(multipart::upload_part(r, body)).await,
        Op::S3(S3Op::UploadPartCopy) => Box::pin(copy::upload_part_copy(r)).await,
        Op::S3(S3Op::CompleteMultipartUpload) => Box::pin(multipart::complete_multipart(r, body)).await,
        Op::S3(S3Op::AbortMultipartUpload) => Box::pin(multipart::abort_multipart(r)).await,
        Op::UnsupportedObjectSubresource => Err(Error::not_implemented(format!(
            "{} ?{} is not supported by s3hpc",
            r.parts.method,
            r.unsupported_subresource(OBJECT_UNSUPPORTED)
        ))),
        Op::UnsupportedObjectPost => Err(Error::not_implemented("this POST on an object is not supported by s3hpc")),
        // A permission, not a request: no route names it (as a request no route matches).
        Op::S3(S3Op::BypassGovernanceRetention) => Err(Error::code(ErrorCode::MethodNotAllowed)),
    }
}
