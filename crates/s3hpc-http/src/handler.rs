//! Routing and the S3 operations.

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use futures::StreamExt;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};

use s3hpc_core::checksum::{checksum_of, parse_content_md5};
use s3hpc_core::names::{MAX_BUCKET_TAGS, MAX_OBJECT_TAGS, check_bucket_name_for_access, validate_tags};
use s3hpc_core::*;
use s3hpc_sigv4::{Payload, TrailerSink, Verified};

use crate::body::{ReqBody, RespBody, incoming_stream};
use crate::util::{Query, decode_path, http_date, iso8601, parse_tagging_header, url_encode_key};
use crate::xml::{self, DECL, NS, checksum_element, elem, escape_into};
use crate::{Auth, State};

type Resp = Response<RespBody>;

const OWNER_ID: &str = "5b3c6f0e7a2d4c1b9e8f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d";
const OWNER_NAME: &str = "s3hpc";
/// Total size of request headers accepted (names plus values).
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Bucket subresources that are known but not supported: GET answers "not configured" where
/// AWS has such an answer; writes answer 501.
const BUCKET_UNSUPPORTED: &[&str] = &[
    "policy",
    "lifecycle",
    "cors",
    "encryption",
    "website",
    "object-lock",
    "ownershipControls",
    "publicAccessBlock",
    "replication",
    "logging",
    "notification",
    "accelerate",
    "requestPayment",
    "analytics",
    "metrics",
    "inventory",
    "intelligent-tiering",
    "policyStatus",
    "versioning",
    "acl",
    "metadataTable",
];
const OBJECT_UNSUPPORTED: &[&str] = &["acl", "retention", "legal-hold", "torrent", "restore", "select", "renameObject"];

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

fn hdr<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
}

fn store<'a>(r: &'a Req<'a>) -> &'a DynStore {
    &r.st.cfg.store
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
    // Bucket and key: virtual-host style when the Host names a bucket under --domain, else path style.
    let path = decode_path(parts.uri.path())
        .ok_or_else(|| Error::invalid_argument("The request path is not valid UTF-8 after decoding"))?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let vhost = st.domain_suffix.as_deref().and_then(|suffix| {
        let host = hdr(&parts.headers, "host").or(parts.uri.host())?;
        let host =
            host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h);
        let host = host.to_ascii_lowercase();
        host.strip_suffix(suffix).filter(|b| !b.is_empty()).map(str::to_owned)
    });
    let (bucket, key) = match vhost {
        Some(b) => (b, path.to_string()),
        None => match path.split_once('/') {
            Some((b, k)) => (b.to_string(), k.to_string()),
            None => (path.to_string(), String::new()),
        },
    };
    let verified = match st.cfg.auth {
        Auth::SigV4 => Some(s3hpc_sigv4::verify(parts, &st.cfg.creds, SystemTime::now())?),
        Auth::DisabledForTests => None,
    };
    let r = Req { st, parts, q: Query::parse(parts.uri.query()), bucket, key, verified, rid };
    let m = &parts.method;
    if r.bucket.is_empty() {
        *op = "ListBuckets";
        return if m == Method::GET { list_buckets(&r).await } else { Err(Error::code(ErrorCode::MethodNotAllowed)) };
    }
    let create = r.key.is_empty() && m == Method::PUT && !r.q.keys().any(|k| k != "x-id");
    if !create {
        check_bucket_name_for_access(&r.bucket)?;
    } else if r.bucket.starts_with('.') {
        return Err(Error::code(ErrorCode::InvalidBucketName).with_resource(r.bucket.clone()));
    }
    if r.key.is_empty() { bucket_op(&r, body, op).await } else { object_op(&r, body, op).await }
}

async fn bucket_op(r: &Req<'_>, body: ReqBody, op: &mut &'static str) -> Result<Resp> {
    let q = &r.q;
    let unsupported = BUCKET_UNSUPPORTED.iter().copied().find(|s| q.has(s));
    match r.parts.method {
        Method::HEAD => {
            *op = "HeadBucket";
            store(r).head_bucket(&r.bucket).await?;
            Ok(empty_ok().header("x-amz-bucket-region", r.st.cfg.region.as_str()).body(RespBody::Empty).unwrap())
        }
        Method::GET => {
            if q.has("location") {
                *op = "GetBucketLocation";
                store(r).head_bucket(&r.bucket).await?;
                let region = if r.st.cfg.region == "us-east-1" { "" } else { r.st.cfg.region.as_str() };
                let mut s = String::from(DECL);
                s.push_str(&format!("<LocationConstraint xmlns=\"{NS}\">"));
                escape_into(&mut s, region);
                s.push_str("</LocationConstraint>");
                return Ok(xml_ok(s));
            }
            if q.has("tagging") {
                *op = "GetBucketTagging";
                let tags = store(r).get_bucket_tagging(&r.bucket).await?;
                if tags.is_empty() {
                    return Err(Error::code(ErrorCode::NoSuchTagSet).with_resource(r.bucket.clone()));
                }
                return Ok(xml_ok(tagging_xml(&tags)));
            }
            if q.has("uploads") {
                *op = "ListMultipartUploads";
                return list_uploads(r).await;
            }
            if q.has("versions") {
                *op = "ListObjectVersions";
                return list_objects(r, ListKind::Versions).await;
            }
            if let Some(sub) = unsupported {
                *op = "GetBucketConfig";
                store(r).head_bucket(&r.bucket).await?;
                return bucket_config_get(r, sub);
            }
            match q.get("list-type") {
                Some("2") => {
                    *op = "ListObjectsV2";
                    list_objects(r, ListKind::V2).await
                }
                Some(_) => Err(Error::invalid_argument("Invalid list type")),
                None => {
                    *op = "ListObjects";
                    list_objects(r, ListKind::V1).await
                }
            }
        }
        Method::PUT => {
            if q.has("tagging") {
                *op = "PutBucketTagging";
                let data = small_body(r, body, true).await?;
                let tags = xml::parse_tagging(&data)?;
                validate_tags(&tags, MAX_BUCKET_TAGS)?;
                store(r).put_bucket_tagging(&r.bucket, tags).await?;
                return Ok(empty(StatusCode::NO_CONTENT));
            }
            if let Some(sub) = unsupported {
                *op = "PutBucketConfig";
                return Err(Error::not_implemented(format!("PUT ?{sub} is not supported by s3hpc")));
            }
            *op = "CreateBucket";
            create_bucket(r, body).await
        }
        Method::DELETE => {
            if q.has("tagging") {
                *op = "DeleteBucketTagging";
                store(r).delete_bucket_tagging(&r.bucket).await?;
                return Ok(empty(StatusCode::NO_CONTENT));
            }
            if let Some(sub) = unsupported {
                *op = "DeleteBucketConfig";
                return Err(Error::not_implemented(format!("DELETE ?{sub} is not supported by s3hpc")));
            }
            *op = "DeleteBucket";
            store(r).delete_bucket(&r.bucket).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Method::POST if q.has("delete") => {
            *op = "DeleteObjects";
            delete_objects(r, body).await
        }
        Method::POST => Err(Error::not_implemented("this POST on a bucket is not supported by s3hpc")),
        _ => Err(Error::code(ErrorCode::MethodNotAllowed)),
    }
}

/// GET of a bucket configuration s3hpc does not support: the answer AWS gives for a bucket
/// where it was never configured.
fn bucket_config_get(r: &Req, sub: &str) -> Result<Resp> {
    let doc = |name: &str, inner: &str| xml_ok(format!("{DECL}<{name} xmlns=\"{NS}\">{inner}</{name}>"));
    let missing = |code: &str, msg: &str| {
        Ok(crate::error_response_raw(404, code, msg, Some(&r.bucket), false, r.parts.uri.path(), 0))
    };
    match sub {
        "versioning" => Ok(doc("VersioningConfiguration", "")),
        "acl" => Ok(xml_ok(acl_xml())),
        "logging" => Ok(doc("BucketLoggingStatus", "")),
        "notification" => Ok(doc("NotificationConfiguration", "")),
        "accelerate" => Ok(doc("AccelerateConfiguration", "")),
        "requestPayment" => Ok(doc("RequestPaymentConfiguration", "<Payer>BucketOwner</Payer>")),
        "policy" => missing("NoSuchBucketPolicy", "The bucket policy does not exist"),
        "lifecycle" => missing("NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist"),
        "cors" => missing("NoSuchCORSConfiguration", "The CORS configuration does not exist"),
        "encryption" => missing(
            "ServerSideEncryptionConfigurationNotFoundError",
            "The server side encryption configuration was not found",
        ),
        "website" => {
            missing("NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration")
        }
        "object-lock" => {
            missing("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket")
        }
        "ownershipControls" => {
            missing("OwnershipControlsNotFoundError", "The bucket ownership controls were not found")
        }
        "publicAccessBlock" => {
            missing("NoSuchPublicAccessBlockConfiguration", "The public access block configuration was not found")
        }
        "replication" => {
            missing("ReplicationConfigurationNotFoundError", "The replication configuration was not found")
        }
        other => Err(Error::not_implemented(format!("GET ?{other} is not supported by s3hpc"))),
    }
}

async fn object_op(r: &Req<'_>, body: ReqBody, op: &mut &'static str) -> Result<Resp> {
    validate_key_for_request(&r.key)?;
    let q = &r.q;
    let unsupported = OBJECT_UNSUPPORTED.iter().copied().find(|s| q.has(s));
    match r.parts.method {
        Method::HEAD => {
            *op = "HeadObject";
            get_object(r, true).await
        }
        Method::GET => {
            if q.has("tagging") {
                *op = "GetObjectTagging";
                let tags = store(r).get_object_tagging(&r.bucket, &r.key).await?;
                return Ok(xml_ok(tagging_xml(&tags)));
            }
            if q.has("uploadId") {
                *op = "ListParts";
                return list_parts(r).await;
            }
            if q.has("attributes") {
                *op = "GetObjectAttributes";
                return get_object_attributes(r).await;
            }
            if unsupported == Some("acl") {
                *op = "GetObjectAcl";
                store(r).head_object(&r.bucket, &r.key, GetObjectRequest::default()).await?;
                return Ok(xml_ok(acl_xml()));
            }
            if let Some(sub) = unsupported {
                return Err(Error::not_implemented(format!("GET ?{sub} is not supported by s3hpc")));
            }
            *op = "GetObject";
            get_object(r, false).await
        }
        Method::PUT => {
            if q.has("tagging") {
                *op = "PutObjectTagging";
                let data = small_body(r, body, false).await?;
                let tags = xml::parse_tagging(&data)?;
                validate_tags(&tags, MAX_OBJECT_TAGS)?;
                store(r).put_object_tagging(&r.bucket, &r.key, tags).await?;
                return Ok(empty_ok().body(RespBody::Empty).unwrap());
            }
            if let Some(sub) = unsupported {
                return Err(Error::not_implemented(format!("PUT ?{sub} is not supported by s3hpc")));
            }
            if q.has("uploadId") || q.has("partNumber") {
                if r.parts.headers.contains_key("x-amz-copy-source") {
                    *op = "UploadPartCopy";
                    return upload_part_copy(r).await;
                }
                *op = "UploadPart";
                return upload_part(r, body).await;
            }
            if r.parts.headers.contains_key("x-amz-copy-source") {
                *op = "CopyObject";
                return copy_object(r).await;
            }
            *op = "PutObject";
            put_object(r, body).await
        }
        Method::DELETE => {
            if q.has("tagging") {
                *op = "DeleteObjectTagging";
                store(r).delete_object_tagging(&r.bucket, &r.key).await?;
                return Ok(empty(StatusCode::NO_CONTENT));
            }
            if let Some(id) = q.get("uploadId") {
                *op = "AbortMultipartUpload";
                store(r).abort_multipart_upload(&r.bucket, &r.key, id).await?;
                return Ok(empty(StatusCode::NO_CONTENT));
            }
            if let Some(sub) = unsupported {
                return Err(Error::not_implemented(format!("DELETE ?{sub} is not supported by s3hpc")));
            }
            check_version_id(q.get("versionId"))?;
            *op = "DeleteObject";
            store(r).delete_object(&r.bucket, &r.key).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        Method::POST => {
            if q.has("uploads") {
                *op = "CreateMultipartUpload";
                return create_multipart(r).await;
            }
            if let Some(id) = q.get("uploadId") {
                *op = "CompleteMultipartUpload";
                return complete_multipart(r, id, body).await;
            }
            Err(Error::not_implemented("this POST on an object is not supported by s3hpc"))
        }
        _ => Err(Error::code(ErrorCode::MethodNotAllowed)),
    }
}

fn validate_key_for_request(key: &str) -> Result<()> {
    names::validate_key(key)
}

fn check_version_id(v: Option<&str>) -> Result<()> {
    match v {
        None | Some("null") => Ok(()),
        Some(_) => Err(Error::invalid_argument("Invalid version id specified (versioning is not enabled)")),
    }
}

// ---- response helpers ----

fn empty_ok() -> http::response::Builder {
    Response::builder().status(StatusCode::OK).header(header::CONTENT_LENGTH, "0")
}

fn empty(status: StatusCode) -> Resp {
    let mut b = Response::builder().status(status);
    if status != StatusCode::NO_CONTENT {
        b = b.header(header::CONTENT_LENGTH, "0");
    }
    b.body(RespBody::Empty).unwrap()
}

fn xml_ok(s: String) -> Resp {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/xml")
        .header(header::CONTENT_LENGTH, s.len())
        .body(RespBody::full(s))
        .unwrap()
}

fn quoted(etag: &str) -> String {
    format!("\"{}\"", etag.trim_matches('"'))
}

fn owner_xml(s: &mut String, tag: &str) {
    s.push_str(&format!("<{tag}><ID>{OWNER_ID}</ID><DisplayName>{OWNER_NAME}</DisplayName></{tag}>"));
}

fn acl_xml() -> String {
    let mut s = String::from(DECL);
    s.push_str(&format!("<AccessControlPolicy xmlns=\"{NS}\">"));
    owner_xml(&mut s, "Owner");
    s.push_str("<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">");
    s.push_str(&format!("<ID>{OWNER_ID}</ID><DisplayName>{OWNER_NAME}</DisplayName></Grantee>"));
    s.push_str("<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>");
    s
}

fn tagging_xml(tags: &Tags) -> String {
    let mut s = String::from(DECL);
    s.push_str(&format!("<Tagging xmlns=\"{NS}\"><TagSet>"));
    for (k, v) in tags {
        s.push_str("<Tag>");
        elem(&mut s, "Key", k);
        elem(&mut s, "Value", v);
        s.push_str("</Tag>");
    }
    s.push_str("</TagSet></Tagging>");
    s
}

fn checksum_xml(s: &mut String, c: &Option<Checksum>) {
    if let Some(c) = c {
        elem(s, checksum_element(c.algorithm), &c.value);
        elem(s, "ChecksumType", c.checksum_type().as_str());
    }
}

fn hval(s: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(s).map_err(|_| Error::internal("value cannot be sent as a header"))
}

// ---- request parsing helpers ----

fn parse_date(v: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(v.trim()).ok()
}

fn conditions(h: &HeaderMap, prefix: &str) -> Conditions {
    let get = |n: &str| hdr(h, &format!("{prefix}{n}"));
    Conditions {
        if_match: get("if-match").map(str::to_owned),
        if_none_match: get("if-none-match").map(str::to_owned),
        if_modified_since: get("if-modified-since").and_then(parse_date),
        if_unmodified_since: get("if-unmodified-since").and_then(parse_date),
    }
}

fn object_meta(h: &HeaderMap) -> Result<ObjectMeta> {
    let s = |n: &str| hdr(h, n).map(str::to_owned);
    let content_encoding = hdr(h, "content-encoding").and_then(|v| {
        let kept: Vec<&str> = v.split(',').map(str::trim).filter(|e| !e.is_empty() && *e != "aws-chunked").collect();
        (!kept.is_empty()).then(|| kept.join(","))
    });
    let mut meta = ObjectMeta {
        content_type: s("content-type"),
        content_encoding,
        content_disposition: s("content-disposition"),
        content_language: s("content-language"),
        cache_control: s("cache-control"),
        expires: s("expires"),
        user: Default::default(),
    };
    for (k, v) in h {
        if let Some(name) = k.as_str().strip_prefix("x-amz-meta-") {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            meta.user.insert(name.to_string(), v);
        }
    }
    names::validate_meta(&meta)?;
    Ok(meta)
}

fn tags_header(h: &HeaderMap) -> Result<Tags> {
    match hdr(h, "x-amz-tagging") {
        None => Ok(Vec::new()),
        Some(v) => {
            let tags = parse_tagging_header(v);
            validate_tags(&tags, MAX_OBJECT_TAGS)?;
            Ok(tags)
        }
    }
}

/// Headers that ask for features s3hpc does not have: refuse rather than succeed wrongly.
fn refuse_unsupported_write_headers(h: &HeaderMap) -> Result<()> {
    for (k, v) in h {
        let k = k.as_str();
        if k.starts_with("x-amz-server-side-encryption") || k.starts_with("x-amz-object-lock") {
            return Err(Error::not_implemented(format!("{k} is not supported by s3hpc")));
        }
        if k == "x-amz-storage-class" && v.as_bytes() != b"STANDARD" {
            return Err(Error::not_implemented("only the STANDARD storage class is supported"));
        }
        if k == "x-amz-acl" && !matches!(v.as_bytes(), b"private" | b"bucket-owner-full-control") {
            return Err(Error::not_implemented("only the private canned ACL is supported"));
        }
        if k.starts_with("x-amz-grant-") {
            return Err(Error::not_implemented("ACL grants are not supported"));
        }
        if k == "x-amz-website-redirect-location" {
            return Err(Error::not_implemented("website redirects are not supported"));
        }
    }
    Ok(())
}

/// The checksum a request asks for: a trailer (deferred), a header value (known), or just an
/// algorithm to compute and store.
fn checksum_request(h: &HeaderMap) -> Result<(Option<ChecksumRequest>, Option<TrailerSink>)> {
    if let Some(t) = hdr(h, "x-amz-trailer") {
        let name = t.trim().to_ascii_lowercase();
        let alg = name
            .strip_prefix("x-amz-checksum-")
            .and_then(ChecksumAlgorithm::parse)
            .ok_or_else(|| Error::invalid_argument(format!("unsupported trailer {name}")))?;
        let cell = Arc::new(OnceLock::new());
        let sink = TrailerSink { name, value: cell.clone() };
        return Ok((Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Deferred(cell)) }), Some(sink)));
    }
    let mut found = None;
    for alg in ChecksumAlgorithm::ALL {
        if let Some(v) = hdr(h, alg.header_name()) {
            if found.is_some() {
                return Err(Error::new(ErrorCode::InvalidRequest, "Expecting a single x-amz-checksum- header"));
            }
            found = Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(v.trim().to_string())) });
        }
    }
    if found.is_none()
        && let Some(a) = hdr(h, "x-amz-sdk-checksum-algorithm").or(hdr(h, "x-amz-checksum-algorithm"))
    {
        let alg = ChecksumAlgorithm::parse(a.trim())
            .ok_or_else(|| Error::invalid_argument(format!("unsupported checksum algorithm {a}")))?;
        found = Some(ChecksumRequest { algorithm: alg, expected: None });
    }
    Ok((found, None))
}

fn is_streaming(r: &Req) -> bool {
    match &r.verified {
        Some(v) => matches!(v.payload, Payload::Streaming { .. }),
        None => hdr(&r.parts.headers, "x-amz-content-sha256").is_some_and(|v| v.starts_with("STREAMING-")),
    }
}

/// The announced object length: `x-amz-decoded-content-length` for aws-chunked bodies,
/// `Content-Length` otherwise.
fn content_length(r: &Req) -> Result<Option<u64>> {
    let h = &r.parts.headers;
    let name = if is_streaming(r) { "x-amz-decoded-content-length" } else { "content-length" };
    match hdr(h, name) {
        Some(v) => v.trim().parse().map(Some).map_err(|_| Error::invalid_argument(format!("invalid {name}"))),
        None => Ok(None),
    }
}

/// The request body as the store reads it (de-chunked and verified by the SigV4 layer).
fn body_stream(r: &Req, body: ReqBody, trailer: Option<TrailerSink>) -> ByteStream {
    let raw = incoming_stream(body, r.st.cfg.body_idle_timeout);
    match &r.verified {
        Some(v) => s3hpc_sigv4::verified_body(v, raw, trailer),
        None => raw,
    }
}

/// Object bodies up to this size are read whole before the store sees them: one blocking call
/// in the backend instead of a streaming writer, which is what small-object rates need.
const SMALL_BODY: u64 = 256 * 1024;

/// An object body for the store. Small bodies are collected (bounded by the announced length);
/// large ones stream, at most `max_concurrent_uploads` at a time (the permit is held until the
/// request ends), so memory stays bounded however many clients upload at once: waiting bodies
/// stay in the kernel's socket buffers.
async fn object_body(
    r: &Req<'_>,
    body: ReqBody,
    sink: Option<TrailerSink>,
    len: u64,
) -> Result<(Body, Option<tokio::sync::OwnedSemaphorePermit>)> {
    if len <= SMALL_BODY {
        let data = Body::Stream(body_stream(r, body, sink)).collect_limited(len as usize).await.map_err(|e| {
            if e.code == ErrorCode::MaxMessageLengthExceeded {
                Error::new(ErrorCode::IncompleteBody, "the body is longer than the announced length")
            } else {
                e
            }
        })?;
        return Ok((Body::from(data), None));
    }
    let permit = r.st.uploads.clone().acquire_owned().await.map_err(|_| Error::code(ErrorCode::ServiceUnavailable))?;
    Ok((Body::Stream(body_stream(r, body, sink)), Some(permit)))
}

/// Read a small request body (XML documents), verifying Content-MD5 and checksum headers or
/// trailers when present; `require_digest` demands one of them (as DeleteObjects does).
async fn small_body(r: &Req<'_>, body: ReqBody, require_digest: bool) -> Result<Bytes> {
    let ck = checksum_request(&r.parts.headers)?;
    small_body_with(r, body, require_digest, ck).await
}

/// [`small_body`] with the body's checksum request already chosen.
async fn small_body_with(
    r: &Req<'_>,
    body: ReqBody,
    require_digest: bool,
    (ck, sink): (Option<ChecksumRequest>, Option<TrailerSink>),
) -> Result<Bytes> {
    let h = &r.parts.headers;
    let md5 = hdr(h, "content-md5").map(parse_content_md5).transpose()?;
    let has_value = ck.as_ref().is_some_and(|c| c.expected.is_some());
    if require_digest && md5.is_none() && !has_value {
        return Err(Error::new(ErrorCode::InvalidRequest, "Missing required header for this request: Content-MD5"));
    }
    if let Some(n) = content_length(r)?
        && n > xml::MAX_XML_BODY as u64
    {
        return Err(Error::code(ErrorCode::MaxMessageLengthExceeded));
    }
    let data = Body::Stream(body_stream(r, body, sink)).collect_limited(xml::MAX_XML_BODY).await?;
    if let Some(want) = md5 {
        let got = s3hpc_core::checksum::md5(&data);
        if got != want {
            return Err(Error::code(ErrorCode::BadDigest));
        }
    }
    if let Some(c) = ck
        && let Some(exp) = &c.expected
    {
        let got = checksum_of(c.algorithm, &data);
        match exp.get() {
            Some(want) if want == got.value => {}
            Some(_) => return Err(Error::code(ErrorCode::BadDigest)),
            None => return Err(Error::new(ErrorCode::InvalidRequest, "checksum trailer missing")),
        }
    }
    Ok(data)
}

// ---- buckets ----

async fn list_buckets(r: &Req<'_>) -> Result<Resp> {
    let buckets = r.st.cfg.store.list_buckets().await?;
    let mut s = String::with_capacity(256 + buckets.len() * 96);
    s.push_str(DECL);
    s.push_str(&format!("<ListAllMyBucketsResult xmlns=\"{NS}\">"));
    owner_xml(&mut s, "Owner");
    s.push_str("<Buckets>");
    for b in &buckets {
        s.push_str("<Bucket>");
        elem(&mut s, "Name", &b.name);
        elem(&mut s, "CreationDate", &iso8601(b.created));
        s.push_str("</Bucket>");
    }
    s.push_str("</Buckets></ListAllMyBucketsResult>");
    Ok(xml_ok(s))
}

async fn create_bucket(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    if hdr(h, "x-amz-bucket-object-lock-enabled").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(Error::not_implemented("object lock is not supported"));
    }
    refuse_unsupported_write_headers(h)?;
    let data = small_body(r, body, false).await?;
    if !data.iter().all(u8::is_ascii_whitespace) {
        // Any LocationConstraint is accepted: s3hpc has one location.
        xml::parse_create_bucket_configuration(&data)?;
    }
    store(r).create_bucket(&r.bucket).await?;
    Ok(empty_ok().header(header::LOCATION, hval(&format!("/{}", r.bucket))?).body(RespBody::Empty).unwrap())
}

async fn delete_objects(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await?;
    let req = xml::parse_delete_objects(&data)?;
    store(r).head_bucket(&r.bucket).await?;
    let results: Vec<(String, Result<()>)> = futures::stream::iter(req.objects)
        .map(|(key, version)| async move {
            let res = match check_version_id(version.as_deref()) {
                Err(e) => Err(e),
                Ok(()) => match names::validate_key(&key) {
                    Err(e) => Err(e),
                    Ok(()) => store(r).delete_object(&r.bucket, &key).await,
                },
            };
            (key, res)
        })
        .buffered(16)
        .collect()
        .await;
    let mut s = String::from(DECL);
    s.push_str(&format!("<DeleteResult xmlns=\"{NS}\">"));
    for (key, res) in results {
        match res {
            Ok(()) if req.quiet => {}
            Ok(()) => {
                s.push_str("<Deleted>");
                elem(&mut s, "Key", &key);
                s.push_str("</Deleted>");
            }
            Err(e) => {
                s.push_str("<Error>");
                elem(&mut s, "Key", &key);
                elem(&mut s, "Code", e.code.as_str());
                elem(&mut s, "Message", &e.message);
                s.push_str("</Error>");
            }
        }
    }
    s.push_str("</DeleteResult>");
    Ok(xml_ok(s))
}

// ---- listing ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListKind {
    V1,
    V2,
    Versions,
}

fn parse_max(q: &Query, name: &str) -> Result<usize> {
    match q.get(name) {
        None => Ok(1000),
        Some(v) => {
            v.parse::<i64>().ok().filter(|n| *n >= 0).map(|n| (n as usize).min(MAX_KEYS)).ok_or_else(|| {
                Error::invalid_argument(format!("Provided {name} not an integer or within integer range"))
            })
        }
    }
}

fn encoding(q: &Query) -> Result<bool> {
    match q.get("encoding-type") {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => Err(Error::invalid_argument("Invalid Encoding Method specified in Request")),
    }
}

async fn list_objects(r: &Req<'_>, kind: ListKind) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let max_keys = parse_max(q, "max-keys")?;
    let prefix = q.get("prefix").unwrap_or("").to_string();
    let delimiter = q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned);
    let token = match (kind, q.get("continuation-token")) {
        (ListKind::V2, Some(t)) => Some(
            B64.decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| Error::invalid_argument("The continuation token provided is incorrect"))?,
        ),
        _ => None,
    };
    let start_after = match kind {
        ListKind::V1 => q.get("marker").filter(|m| !m.is_empty()).map(str::to_owned),
        ListKind::V2 => token.clone().or_else(|| q.get("start-after").filter(|m| !m.is_empty()).map(str::to_owned)),
        ListKind::Versions => q.get("key-marker").filter(|m| !m.is_empty()).map(str::to_owned),
    };
    let req = ListObjectsRequest { prefix: prefix.clone(), delimiter: delimiter.clone(), start_after, max_keys };
    let page = store(r).list_objects(&r.bucket, req).await?;

    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let mut s = String::with_capacity(512 + page.objects.len() * 256);
    s.push_str(DECL);
    let root = match kind {
        ListKind::Versions => "ListVersionsResult",
        _ => "ListBucketResult",
    };
    s.push_str(&format!("<{root} xmlns=\"{NS}\">"));
    elem(&mut s, "Name", &r.bucket);
    elem(&mut s, "Prefix", &enc(&prefix));
    match kind {
        ListKind::V1 => {
            elem(&mut s, "Marker", &enc(q.get("marker").unwrap_or("")));
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextMarker", &enc(m));
            }
        }
        ListKind::V2 => {
            if let Some(t) = q.get("continuation-token") {
                elem(&mut s, "ContinuationToken", t);
            }
            if let Some(sa) = q.get("start-after") {
                elem(&mut s, "StartAfter", &enc(sa));
            }
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextContinuationToken", &B64.encode(m.as_bytes()));
            }
            elem(&mut s, "KeyCount", &(page.objects.len() + page.common_prefixes.len()).to_string());
        }
        ListKind::Versions => {
            elem(&mut s, "KeyMarker", &enc(q.get("key-marker").unwrap_or("")));
            elem(&mut s, "VersionIdMarker", q.get("version-id-marker").unwrap_or(""));
            if page.is_truncated
                && let Some(m) = &page.next_marker
            {
                elem(&mut s, "NextKeyMarker", &enc(m));
                elem(&mut s, "NextVersionIdMarker", "null");
            }
        }
    }
    elem(&mut s, "MaxKeys", &max_keys.to_string());
    if let Some(d) = &delimiter {
        elem(&mut s, "Delimiter", &enc(d));
    }
    if url {
        elem(&mut s, "EncodingType", "url");
    }
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    let owner = kind != ListKind::V2 || q.get("fetch-owner").is_some_and(|v| v == "true");
    // Objects and common prefixes are interleaved in key order, as S3 does.
    let (mut oi, mut pi) = (0, 0);
    while oi < page.objects.len() || pi < page.common_prefixes.len() {
        let take_obj = match (page.objects.get(oi), page.common_prefixes.get(pi)) {
            (Some(o), Some(p)) => o.key.as_str() < p.as_str(),
            (Some(_), None) => true,
            _ => false,
        };
        if take_obj {
            let o = &page.objects[oi];
            oi += 1;
            let tag = if kind == ListKind::Versions { "Version" } else { "Contents" };
            s.push('<');
            s.push_str(tag);
            s.push('>');
            elem(&mut s, "Key", &enc(&o.key));
            if kind == ListKind::Versions {
                s.push_str("<VersionId>null</VersionId><IsLatest>true</IsLatest>");
            }
            elem(&mut s, "LastModified", &iso8601(o.last_modified));
            elem(&mut s, "ETag", &quoted(&o.etag));
            elem(&mut s, "Size", &o.size.to_string());
            s.push_str("<StorageClass>STANDARD</StorageClass>");
            if owner {
                owner_xml(&mut s, "Owner");
            }
            s.push_str("</");
            s.push_str(tag);
            s.push('>');
        } else {
            let p = &page.common_prefixes[pi];
            pi += 1;
            s.push_str("<CommonPrefixes>");
            elem(&mut s, "Prefix", &enc(p));
            s.push_str("</CommonPrefixes>");
        }
    }
    s.push_str("</");
    s.push_str(root);
    s.push('>');
    Ok(xml_ok(s))
}

// ---- objects ----

async fn put_object(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    refuse_unsupported_write_headers(h)?;
    let content_length = content_length(r)?;
    if content_length.is_none() {
        return Err(Error::code(ErrorCode::MissingContentLength));
    }
    if content_length.is_some_and(|n| n > MAX_PUT_SIZE) {
        return Err(Error::code(ErrorCode::EntityTooLarge));
    }
    let (checksum, sink) = checksum_request(h)?;
    let req = PutObjectRequest {
        meta: object_meta(h)?,
        tags: tags_header(h)?,
        content_md5: hdr(h, "content-md5").map(parse_content_md5).transpose()?,
        checksum,
        content_length,
        conditions: conditions(h, ""),
    };
    let (body, _permit) = object_body(r, body, sink, content_length.unwrap_or(0)).await?;
    let out = store(r).put_object(&r.bucket, &r.key, req, body).await?;
    write_response(&out)
}

fn write_response(out: &PutObjectOutput) -> Result<Resp> {
    let mut b = empty_ok().header(header::ETAG, hval(&quoted(&out.etag))?);
    if let Some(c) = &out.checksum {
        b = b.header(c.algorithm.header_name(), hval(&c.value)?);
    }
    Ok(b.body(RespBody::Empty).unwrap())
}

async fn get_object(r: &Req<'_>, head: bool) -> Result<Resp> {
    let h = &r.parts.headers;
    check_version_id(r.q.get("versionId"))?;
    let range = hdr(h, "range").and_then(ByteRange::parse_header);
    let part_number =
        match r.q.get("partNumber") {
            None => None,
            Some(p) => Some(p.parse::<u32>().ok().filter(|n| (1..=MAX_PART_NUMBER).contains(n)).ok_or_else(|| {
                Error::invalid_argument("Part number must be an integer between 1 and 10000, inclusive")
            })?),
        };
    if range.is_some() && part_number.is_some() {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    let req = GetObjectRequest { range, part_number, conditions: conditions(h, "") };
    let checksum_mode = hdr(h, "x-amz-checksum-mode").is_some_and(|v| v.eq_ignore_ascii_case("ENABLED"));
    let (info, served, body) = if head {
        let info = store(r).head_object(&r.bucket, &r.key, req.clone()).await?;
        let served = match (range, part_number) {
            (Some(rg), _) => Some(rg.resolve(info.size)?),
            (None, Some(n)) => Some(info.part_range(n)?),
            _ => None,
        };
        (info, served, RespBody::Empty)
    } else {
        let out = store(r).get_object(&r.bucket, &r.key, req).await?;
        let len = out.range.map_or(out.info.size, |(_, l)| l);
        let body = RespBody::from_store(out.body).with_len(len);
        (out.info, out.range, body)
    };
    let len = served.map_or(info.size, |(_, l)| l);
    let mut b = Response::builder().status(if served.is_some() { StatusCode::PARTIAL_CONTENT } else { StatusCode::OK });
    let hm = b.headers_mut().unwrap();
    hm.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    hm.insert(header::ETAG, hval(&quoted(&info.etag))?);
    hm.insert(header::LAST_MODIFIED, hval(&http_date(info.last_modified))?);
    hm.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some((off, l)) = served {
        let cr = if l == 0 {
            format!("bytes */{}", info.size)
        } else {
            format!("bytes {off}-{}/{}", off + l - 1, info.size)
        };
        hm.insert(header::CONTENT_RANGE, hval(&cr)?);
    }
    if let Some(n) = info.parts_count()
        && part_number.is_some()
    {
        hm.insert("x-amz-mp-parts-count", HeaderValue::from(n));
    }
    let q = &r.q;
    let meta = &info.meta;
    let pairs: [(header::HeaderName, Option<&str>, &str); 6] = [
        (header::CONTENT_TYPE, meta.content_type.as_deref(), "response-content-type"),
        (header::CONTENT_ENCODING, meta.content_encoding.as_deref(), "response-content-encoding"),
        (header::CONTENT_DISPOSITION, meta.content_disposition.as_deref(), "response-content-disposition"),
        (header::CONTENT_LANGUAGE, meta.content_language.as_deref(), "response-content-language"),
        (header::CACHE_CONTROL, meta.cache_control.as_deref(), "response-cache-control"),
        (header::EXPIRES, meta.expires.as_deref(), "response-expires"),
    ];
    for (name, stored, over) in pairs {
        let v = q.get(over).or(stored);
        match v {
            Some(v) => {
                if let Ok(v) = HeaderValue::from_str(v) {
                    hm.insert(name, v);
                }
            }
            None if name == header::CONTENT_TYPE => {
                hm.insert(name, HeaderValue::from_static("binary/octet-stream"));
            }
            None => {}
        }
    }
    for (k, v) in &meta.user {
        if let (Ok(n), Ok(v)) =
            (header::HeaderName::from_bytes(format!("x-amz-meta-{k}").as_bytes()), HeaderValue::from_str(v))
        {
            hm.append(n, v);
        }
    }
    if info.tag_count > 0 && !head {
        hm.insert("x-amz-tagging-count", HeaderValue::from(info.tag_count));
    }
    if checksum_mode
        && served.is_none()
        && let Some(c) = &info.checksum
    {
        hm.insert(c.algorithm.header_name(), hval(&c.value)?);
        hm.insert("x-amz-checksum-type", HeaderValue::from_static(c.checksum_type().as_str()));
    }
    Ok(b.body(body).unwrap())
}

/// `x-amz-copy-source`: `[/]bucket/key[?versionId=null]`, URL-encoded.
fn copy_source(h: &HeaderMap) -> Result<(String, String)> {
    let raw = hdr(h, "x-amz-copy-source").ok_or_else(|| {
        Error::invalid_argument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
    })?;
    let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
    if !query.is_empty() {
        let q = Query::parse(Some(query));
        check_version_id(q.get("versionId"))?;
    }
    let bad = || Error::invalid_argument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
    let path = decode_path(path).ok_or_else(bad)?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    let (b, k) = path.split_once('/').ok_or_else(bad)?;
    if b.is_empty() || k.is_empty() {
        return Err(bad());
    }
    check_bucket_name_for_access(b)?;
    names::validate_key(k)?;
    Ok((b.to_string(), k.to_string()))
}

fn directive(h: &HeaderMap, name: &str) -> Result<bool> {
    match hdr(h, name) {
        None => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("COPY") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("REPLACE") => Ok(true),
        Some(_) => Err(Error::invalid_argument(format!("Unknown {name}"))),
    }
}

async fn copy_object(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    refuse_unsupported_write_headers(h)?;
    let (sb, sk) = copy_source(h)?;
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
        metadata,
        tagging,
        source_conditions: conditions(h, "x-amz-copy-source-"),
        conditions: conditions(h, ""),
        checksum_algorithm,
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
    Ok(xml_ok(s))
}

async fn get_object_attributes(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    let wanted: Vec<String> = hdr(h, "x-amz-object-attributes")
        .map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    if wanted.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "Invalid attribute name specified."));
    }
    for w in &wanted {
        if !matches!(w.as_str(), "ETag" | "Checksum" | "ObjectParts" | "StorageClass" | "ObjectSize") {
            return Err(Error::new(ErrorCode::InvalidArgument, "Invalid attribute name specified."));
        }
    }
    let max_parts = match hdr(h, "x-amz-max-parts") {
        None => 1000usize,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid x-amz-max-parts"))?.min(1000),
    };
    let marker = match hdr(h, "x-amz-part-number-marker") {
        None => 0u32,
        Some(v) => v.parse().map_err(|_| Error::invalid_argument("invalid x-amz-part-number-marker"))?,
    };
    let info = store(r)
        .head_object(&r.bucket, &r.key, GetObjectRequest { conditions: conditions(h, ""), ..Default::default() })
        .await?;
    let has = |n: &str| wanted.iter().any(|w| w == n);
    let mut s = String::from(DECL);
    s.push_str(&format!("<GetObjectAttributesResponse xmlns=\"{NS}\">"));
    if has("ETag") {
        elem(&mut s, "ETag", info.etag.trim_matches('"'));
    }
    if has("Checksum") && info.checksum.is_some() {
        s.push_str("<Checksum>");
        checksum_xml(&mut s, &info.checksum);
        s.push_str("</Checksum>");
    }
    if has("ObjectParts") && !info.part_sizes.is_empty() {
        let total = info.part_sizes.len();
        s.push_str("<ObjectParts>");
        elem(&mut s, "PartsCount", &total.to_string());
        elem(&mut s, "PartNumberMarker", &marker.to_string());
        let parts: Vec<(usize, u64)> = info
            .part_sizes
            .iter()
            .copied()
            .enumerate()
            .map(|(i, sz)| (i + 1, sz))
            .filter(|(n, _)| *n > marker as usize)
            .take(max_parts)
            .collect();
        let last = parts.last().map_or(marker as usize, |p| p.0);
        let truncated = last < total;
        elem(&mut s, "NextPartNumberMarker", &last.to_string());
        elem(&mut s, "MaxParts", &max_parts.to_string());
        elem(&mut s, "IsTruncated", if truncated { "true" } else { "false" });
        for (n, sz) in parts {
            s.push_str("<Part>");
            elem(&mut s, "PartNumber", &n.to_string());
            elem(&mut s, "Size", &sz.to_string());
            s.push_str("</Part>");
        }
        s.push_str("</ObjectParts>");
    }
    if has("StorageClass") {
        elem(&mut s, "StorageClass", "STANDARD");
    }
    if has("ObjectSize") {
        elem(&mut s, "ObjectSize", &info.size.to_string());
    }
    s.push_str("</GetObjectAttributesResponse>");
    let mut resp = xml_ok(s);
    resp.headers_mut().insert(header::LAST_MODIFIED, hval(&http_date(info.last_modified))?);
    Ok(resp)
}

// ---- multipart ----

fn upload_id<'a>(r: &'a Req) -> Result<&'a str> {
    r.q.get("uploadId").filter(|s| !s.is_empty()).ok_or_else(|| Error::invalid_argument("uploadId is required"))
}

fn part_number(r: &Req) -> Result<u32> {
    r.q.get("partNumber")
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|n| (1..=MAX_PART_NUMBER).contains(n))
        .ok_or_else(|| Error::invalid_argument("Part number must be an integer between 1 and 10000, inclusive"))
}

/// `x-amz-checksum-type`: COMPOSITE or FULL_OBJECT.
fn checksum_type_header(h: &HeaderMap) -> Result<Option<ChecksumType>> {
    hdr(h, "x-amz-checksum-type")
        .map(|v| {
            ChecksumType::parse(v.trim()).ok_or_else(|| {
                Error::new(ErrorCode::InvalidRequest, format!("Value for x-amz-checksum-type header is invalid: {v}"))
            })
        })
        .transpose()
}

async fn create_multipart(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    refuse_unsupported_write_headers(h)?;
    let checksum_algorithm = match hdr(h, "x-amz-checksum-algorithm") {
        None => None,
        Some(a) => Some(
            ChecksumAlgorithm::parse(a).ok_or_else(|| Error::invalid_argument("invalid x-amz-checksum-algorithm"))?,
        ),
    };
    // Refused here already (the store checks again) so the answer can name the type it will use.
    let checksum_type = multipart::resolve_checksum_type(checksum_algorithm, checksum_type_header(h)?)?;
    let req =
        CreateMultipartRequest { meta: object_meta(h)?, tags: tags_header(h)?, checksum_algorithm, checksum_type };
    let id = store(r).create_multipart_upload(&r.bucket, &r.key, req).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<InitiateMultipartUploadResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "Key", &r.key);
    elem(&mut s, "UploadId", &id);
    s.push_str("</InitiateMultipartUploadResult>");
    let mut resp = xml_ok(s);
    if let (Some(a), Some(t)) = (checksum_algorithm, checksum_type) {
        resp.headers_mut().insert("x-amz-checksum-algorithm", HeaderValue::from_static(a.as_str()));
        resp.headers_mut().insert("x-amz-checksum-type", HeaderValue::from_static(t.as_str()));
    }
    Ok(resp)
}

async fn upload_part(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    let id = upload_id(r)?;
    let n = part_number(r)?;
    let content_length = content_length(r)?;
    if content_length.is_none() {
        return Err(Error::code(ErrorCode::MissingContentLength));
    }
    if content_length.is_some_and(|n| n > MAX_PUT_SIZE) {
        return Err(Error::code(ErrorCode::EntityTooLarge));
    }
    let (checksum, sink) = checksum_request(h)?;
    let req = UploadPartRequest {
        content_md5: hdr(h, "content-md5").map(parse_content_md5).transpose()?,
        checksum,
        content_length,
    };
    let (body, _permit) = object_body(r, body, sink, content_length.unwrap_or(0)).await?;
    let p = store(r).upload_part(&r.bucket, &r.key, id, n, req, body).await?;
    let mut b = empty_ok().header(header::ETAG, hval(&quoted(&p.etag))?);
    if let Some(c) = &p.checksum {
        b = b.header(c.algorithm.header_name(), hval(&c.value)?);
    }
    Ok(b.body(RespBody::Empty).unwrap())
}

async fn upload_part_copy(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    let id = upload_id(r)?;
    let n = part_number(r)?;
    let (sb, sk) = copy_source(h)?;
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
    let p = store(r)
        .upload_part_copy(&r.bucket, &r.key, id, n, &sb, &sk, range, conditions(h, "x-amz-copy-source-"))
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
    Ok(xml_ok(s))
}

/// Whitespace sent while a long CompleteMultipartUpload runs, once per this interval.
const COMPLETE_KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The whole-object checksum a CompleteMultipartUpload expects: at most one
/// `x-amz-checksum-<alg>` header (on a complete it names the object's checksum, not the XML's).
fn complete_checksum_header(h: &HeaderMap) -> Result<Option<Checksum>> {
    let mut found = None;
    for algorithm in ChecksumAlgorithm::ALL {
        if let Some(v) = hdr(h, algorithm.header_name()) {
            if found.is_some() {
                return Err(Error::new(ErrorCode::InvalidRequest, "Expecting a single x-amz-checksum- header"));
            }
            found = Some(Checksum { algorithm, value: v.trim().to_string() });
        }
    }
    Ok(found)
}

async fn complete_multipart(r: &Req<'_>, id: &str, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    let checksum = complete_checksum_header(h)?;
    let checksum_type = checksum_type_header(h)?;
    // Only a trailer checksums the XML document itself.
    let body_ck = if hdr(h, "x-amz-trailer").is_some() { checksum_request(h)? } else { (None, None) };
    let data = small_body_with(r, body, false, body_ck).await?;
    let parts = xml::parse_complete_multipart_upload(&data)?;
    let req = CompleteMultipartRequest { parts, conditions: conditions(h, ""), checksum, checksum_type };
    let host = hdr(h, "host").unwrap_or("localhost");
    let location = format!("http://{host}/{}/{}", r.bucket, url_encode_key(&r.key));
    // The complete runs as its own task so that, when it takes long, the response can start
    // (200 and whitespace) while it runs; a client that goes away does not cancel it.
    let (store, bucket, key, id2) = (store(r).clone(), r.bucket.clone(), r.key.clone(), id.to_string());
    let mut task = tokio::spawn(async move { store.complete_multipart_upload_with(&bucket, &key, &id2, req).await });
    let result_doc = {
        let (bucket, key) = (r.bucket.clone(), r.key.clone());
        move |out: &PutObjectOutput| {
            let mut s = String::new();
            s.push_str(&format!("<CompleteMultipartUploadResult xmlns=\"{NS}\">"));
            elem(&mut s, "Location", &location);
            elem(&mut s, "Bucket", &bucket);
            elem(&mut s, "Key", &key);
            elem(&mut s, "ETag", &quoted(&out.etag));
            checksum_xml(&mut s, &out.checksum);
            s.push_str("</CompleteMultipartUploadResult>");
            s
        }
    };
    let joined = |j: std::result::Result<Result<PutObjectOutput>, tokio::task::JoinError>| {
        j.unwrap_or_else(|e| Err(Error::internal(format!("complete task failed: {e}"))))
    };
    match tokio::time::timeout(r.st.cfg.complete_keepalive_after, &mut task).await {
        Ok(res) => {
            let out = joined(res)?;
            Ok(xml_ok(format!("{DECL}{}", result_doc(&out))))
        }
        Err(_) => {
            // Still running: commit to 200 now. The declaration goes first, then a space per
            // interval, then the result or an <Error> document (clients read errors from it).
            let (path, rid) = (r.parts.uri.path().to_string(), r.rid);
            let finish = move |res: Result<PutObjectOutput>| match res {
                Ok(out) => result_doc(&out),
                Err(e) => {
                    let mut s = String::new();
                    crate::error_xml(&mut s, e.code.as_str(), &e.message, e.resource.as_deref(), &path, rid);
                    s
                }
            };
            let stream = futures::stream::unfold(Some((task, finish, true)), move |st| async move {
                let (mut task, finish, first) = st?;
                if first {
                    return Some((Ok(Bytes::from_static(DECL.as_bytes())), Some((task, finish, false))));
                }
                tokio::select! {
                    res = &mut task => Some((Ok(Bytes::from(finish(joined(res)))), None)),
                    _ = tokio::time::sleep(COMPLETE_KEEPALIVE_EVERY) => {
                        Some((Ok(Bytes::from_static(b" ")), Some((task, finish, false))))
                    }
                }
            });
            Ok(Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/xml")
                .body(RespBody::Stream(Box::pin(stream), u64::MAX))
                .unwrap())
        }
    }
}

async fn list_parts(r: &Req<'_>) -> Result<Resp> {
    let id = upload_id(r)?;
    let q = &r.q;
    let marker = match q.get("part-number-marker") {
        None | Some("") => None,
        Some(v) => Some(v.parse::<u32>().map_err(|_| Error::invalid_argument("invalid part-number-marker"))?),
    };
    let max_parts = match q.get("max-parts") {
        None => 1000,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid max-parts"))?.min(1000),
    };
    let page =
        store(r).list_parts(&r.bucket, &r.key, id, ListPartsRequest { part_number_marker: marker, max_parts }).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<ListPartsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "Key", &r.key);
    elem(&mut s, "UploadId", id);
    owner_xml(&mut s, "Initiator");
    owner_xml(&mut s, "Owner");
    s.push_str("<StorageClass>STANDARD</StorageClass>");
    elem(&mut s, "PartNumberMarker", &marker.unwrap_or(0).to_string());
    if let Some(n) = page.next_part_number_marker {
        elem(&mut s, "NextPartNumberMarker", &n.to_string());
    }
    elem(&mut s, "MaxParts", &max_parts.to_string());
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    if let Some(a) = page.checksum_algorithm {
        elem(&mut s, "ChecksumAlgorithm", a.as_str());
    }
    if let Some(t) = page.checksum_type {
        elem(&mut s, "ChecksumType", t.as_str());
    }
    for p in &page.parts {
        s.push_str("<Part>");
        elem(&mut s, "PartNumber", &p.part_number.to_string());
        elem(&mut s, "LastModified", &iso8601(p.last_modified));
        elem(&mut s, "ETag", &quoted(&p.etag));
        elem(&mut s, "Size", &p.size.to_string());
        if let Some(c) = &p.checksum {
            elem(&mut s, checksum_element(c.algorithm), &c.value);
        }
        s.push_str("</Part>");
    }
    s.push_str("</ListPartsResult>");
    Ok(xml_ok(s))
}

async fn list_uploads(r: &Req<'_>) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let max_uploads = match q.get("max-uploads") {
        None => 1000,
        Some(v) => v.parse::<usize>().map_err(|_| Error::invalid_argument("invalid max-uploads"))?.min(1000),
    };
    let req = ListUploadsRequest {
        prefix: q.get("prefix").unwrap_or("").to_string(),
        delimiter: q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned),
        key_marker: q.get("key-marker").filter(|d| !d.is_empty()).map(str::to_owned),
        upload_id_marker: q.get("upload-id-marker").filter(|d| !d.is_empty()).map(str::to_owned),
        max_uploads,
    };
    let page = store(r).list_multipart_uploads(&r.bucket, req.clone()).await?;
    let mut s = String::from(DECL);
    s.push_str(&format!("<ListMultipartUploadsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Bucket", &r.bucket);
    elem(&mut s, "KeyMarker", &enc(req.key_marker.as_deref().unwrap_or("")));
    elem(&mut s, "UploadIdMarker", req.upload_id_marker.as_deref().unwrap_or(""));
    if let Some(m) = &page.next_key_marker {
        elem(&mut s, "NextKeyMarker", &enc(m));
    }
    if let Some(m) = &page.next_upload_id_marker {
        elem(&mut s, "NextUploadIdMarker", m);
    }
    elem(&mut s, "Prefix", &enc(&req.prefix));
    if let Some(d) = &req.delimiter {
        elem(&mut s, "Delimiter", &enc(d));
    }
    elem(&mut s, "MaxUploads", &max_uploads.to_string());
    if url {
        elem(&mut s, "EncodingType", "url");
    }
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    for u in &page.uploads {
        s.push_str("<Upload>");
        elem(&mut s, "Key", &enc(&u.key));
        elem(&mut s, "UploadId", &u.upload_id);
        owner_xml(&mut s, "Initiator");
        owner_xml(&mut s, "Owner");
        s.push_str("<StorageClass>STANDARD</StorageClass>");
        elem(&mut s, "Initiated", &iso8601(u.initiated));
        if let Some(a) = u.checksum_algorithm {
            elem(&mut s, "ChecksumAlgorithm", a.as_str());
        }
        if let Some(t) = u.checksum_type {
            elem(&mut s, "ChecksumType", t.as_str());
        }
        s.push_str("</Upload>");
    }
    for p in &page.common_prefixes {
        s.push_str("<CommonPrefixes>");
        elem(&mut s, "Prefix", &enc(p));
        s.push_str("</CommonPrefixes>");
    }
    s.push_str("</ListMultipartUploadsResult>");
    Ok(xml_ok(s))
}
