//! AWS Signature Version 2: header auth (`Authorization: AWS AKID:signature`), presigned URLs
//! (`AWSAccessKeyId`, `Expires`, `Signature` query parameters) and the signature of a SigV2
//! POST policy, as MinIO and Ceph RGW accept them for older clients (awscli v1 `aws s3
//! presign`, boto3 with `signature_version='s3'`, s3cmd with `signature_v2 = True`, libs3).
//!
//! The signature is `base64(HMAC-SHA1(secret, StringToSign))` where StringToSign is
//!
//! ```text
//! METHOD \n Content-MD5 \n Content-Type \n Date \n CanonicalizedAmzHeaders CanonicalizedResource
//! ```
//!
//! - Date: the `Date` header, empty when an `x-amz-date` header is present (that header is
//!   signed among the amz headers instead); on a presigned URL the `Expires` value.
//! - CanonicalizedAmzHeaders: every `x-amz-*` header, lower case, sorted, values trimmed and
//!   joined with `,`, one `name:value\n` each. Every `x-amz-*` header is covered by
//!   construction, so SigV2 has no unsigned-header case. On a presigned URL the `x-amz-*`
//!   query parameters count too (clients move the signed headers into the query).
//! - CanonicalizedResource: `/bucket/key` as sent (the bucket of a virtual-host request taken
//!   from its Host), then the sub-resources among the query parameters ([`SUBRESOURCES`]),
//!   sorted, values decoded.
//!
//! SigV2 has no region and no payload hash: a verified request's body is unsigned (its
//! `Content-MD5`, when sent, is checked by the operation as for any request).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use s3hpc_core::{CredentialSet, Error, ErrorCode};
use sha1::Sha1;

use crate::encode::{iso8601, parse_amz_date, percent_decode};
use crate::signer::sig_eq;
use crate::verify::{MAX_SKEW, abs_diff, header_str, query_param, unknown_key};
use crate::{Accept, Payload, Verified};

/// The query parameters that are part of the canonical resource (botocore's `QSAOfInterest`,
/// a superset of s3cmd's list and AWS's documented one).
pub const SUBRESOURCES: &[&str] = &[
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// The three parameters of a SigV2 presigned URL.
const QUERY_PARAMS: [&str; 3] = ["AWSAccessKeyId", "Signature", "Expires"];

/// Whether a query carries SigV2 query authentication (any of its three parameters).
pub fn is_presigned(query: &str) -> bool {
    !query.is_empty()
        && query.split('&').any(|p| {
            let k = p.split_once('=').map_or(p, |(k, _)| k);
            QUERY_PARAMS.contains(&k)
        })
}

/// `base64(HMAC-SHA1(secret, data))`: the signature of a string to sign, or of a POST policy
/// (`data` = the policy as sent, base64).
pub fn signature(secret: &str, data: &[u8]) -> String {
    let mut m = <Hmac<Sha1> as KeyInit>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    m.update(data);
    base64::engine::general_purpose::STANDARD.encode(m.finalize().into_bytes())
}

/// What a string to sign is built from beyond the request line.
pub struct StringToSignInput<'a> {
    pub method: &'a str,
    /// The raw path as sent (`/bucket/key`, or `/key` of a virtual-host request).
    pub raw_path: &'a str,
    pub raw_query: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
    /// The bucket of a virtual-host-style request (prefixed to the path).
    pub vhost_bucket: Option<&'a str>,
    /// Presigned: the `Expires` value (the Date line), and the query's `x-amz-*`,
    /// `content-type` and `content-md5` parameters count as headers.
    pub expires: Option<&'a str>,
    /// Sub-resource values percent-decoded (botocore, AWS) or as sent (some older clients).
    pub decode_values: bool,
    /// A path-style request for a bucket alone (`/bucket`) signs `/bucket/` (AWS's rule, what
    /// botocore and s3cmd sign); `false` signs the path as sent.
    pub bucket_slash: bool,
}

/// The SigV2 string to sign of a request.
pub fn string_to_sign(inp: &StringToSignInput<'_>) -> String {
    let query = inp.raw_query.unwrap_or("");
    let hval = |name: &str| -> Vec<String> {
        inp.headers.get_all(name).iter().map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string()).collect()
    };
    let from_query = |name: &str| -> Option<String> {
        inp.expires?;
        query.split('&').find_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            percent_decode(k)
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| String::from_utf8_lossy(&percent_decode(v)).trim().to_string())
        })
    };
    let standard = |name: &str| -> String {
        let v = hval(name);
        if v.is_empty() { from_query(name).unwrap_or_default() } else { v.join(",") }
    };
    let mut s = String::with_capacity(256);
    s.push_str(inp.method);
    s.push('\n');
    s.push_str(&standard("content-md5"));
    s.push('\n');
    s.push_str(&standard("content-type"));
    s.push('\n');
    match inp.expires {
        Some(e) => s.push_str(e),
        None if inp.headers.contains_key("x-amz-date") => {}
        None => s.push_str(&hval("date").join(",")),
    }
    s.push('\n');
    // x-amz-* headers (and, presigned, query parameters), sorted by name.
    let mut amz: Vec<(String, String)> = Vec::new();
    for name in inp.headers.keys() {
        let n = name.as_str();
        if n.starts_with("x-amz-") {
            amz.push((n.to_string(), hval(n).join(",")));
        }
    }
    if inp.expires.is_some() {
        for p in query.split('&') {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let k = String::from_utf8_lossy(&percent_decode(k)).to_ascii_lowercase();
            if k.starts_with("x-amz-") && !amz.iter().any(|(n, _)| *n == k) {
                amz.push((k, String::from_utf8_lossy(&percent_decode(v)).trim().to_string()));
            }
        }
    }
    amz.sort();
    for (k, v) in &amz {
        s.push_str(k);
        s.push(':');
        s.push_str(v);
        s.push('\n');
    }
    // The canonical resource.
    if let Some(b) = inp.vhost_bucket {
        s.push('/');
        s.push_str(b);
    }
    s.push_str(inp.raw_path);
    if inp.bucket_slash && inp.vhost_bucket.is_none() {
        let p = inp.raw_path.strip_prefix('/').unwrap_or(inp.raw_path);
        if !p.is_empty() && !p.contains('/') {
            s.push('/');
        }
    }
    let mut sub: Vec<(String, Option<String>)> = Vec::new();
    for p in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = match p.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (p, None),
        };
        let k = String::from_utf8_lossy(&percent_decode(k)).into_owned();
        if SUBRESOURCES.contains(&k.as_str()) {
            let v = v.map(|v| {
                if inp.decode_values { String::from_utf8_lossy(&percent_decode(v)).into_owned() } else { v.to_string() }
            });
            sub.push((k, v));
        }
    }
    sub.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (k, v)) in sub.iter().enumerate() {
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(k);
        if let Some(v) = v {
            s.push('=');
            s.push_str(v);
        }
    }
    s
}

/// The bucket a virtual-host-style request names in its Host (`bucket.DOMAIN`).
fn vhost_bucket(parts: &http::request::Parts, accept: &Accept) -> Option<String> {
    let domain = accept.domain.as_deref()?.trim_start_matches('.').to_ascii_lowercase();
    let host = parts.headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).or(parts.uri.host())?;
    let host = host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h);
    let host = host.to_ascii_lowercase();
    let b = host.strip_suffix(&domain)?.strip_suffix('.')?;
    (!b.is_empty()).then(|| b.to_string())
}

fn mismatch(access_key: &str, provided: &str, sts: &str) -> Error {
    let hex_bytes = sts.as_bytes().iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ");
    Error::code(ErrorCode::SignatureDoesNotMatch)
        .with("AWSAccessKeyId", access_key)
        .with("StringToSign", sts)
        .with("SignatureProvided", provided)
        .with("StringToSignBytes", hex_bytes)
}

/// Check `provided` against the request's string to sign: AWS's form first, then the forms
/// some clients sign (sub-resource values as sent, a bucket path without its `/`).
fn check_signature(
    parts: &http::request::Parts,
    accept: &Accept,
    access_key: &str,
    secret: &str,
    provided: &str,
    expires: Option<&str>,
) -> Result<(), Error> {
    let bucket = vhost_bucket(parts, accept);
    let mut first = None;
    let mut tried: Vec<String> = Vec::with_capacity(4);
    for (decode_values, bucket_slash) in [(true, true), (false, true), (true, false), (false, false)] {
        let sts = string_to_sign(&StringToSignInput {
            method: parts.method.as_str(),
            raw_path: parts.uri.path(),
            raw_query: parts.uri.query(),
            headers: &parts.headers,
            vhost_bucket: bucket.as_deref(),
            expires,
            decode_values,
            bucket_slash,
        });
        if tried.contains(&sts) {
            continue;
        }
        if sig_eq(&signature(secret, sts.as_bytes()), provided) {
            return Ok(());
        }
        first.get_or_insert_with(|| sts.clone());
        tried.push(sts);
    }
    Err(mismatch(access_key, provided, &first.unwrap_or_default()))
}

/// The payload mode of a SigV2 request: no payload hash is signed; a SHA-256 sent in
/// `x-amz-content-sha256` is still checked, signed aws-chunked bodies cannot be (no seed).
fn payload(parts: &http::request::Parts) -> Result<Payload, Error> {
    let Some(v) = header_str(parts, "x-amz-content-sha256")? else {
        return Ok(Payload::Unsigned);
    };
    let p = crate::verify::payload_mode(Some(v), true)?;
    if matches!(p, Payload::Streaming { signed_chunks: true, .. }) {
        return Err(Error::new(ErrorCode::InvalidRequest, "Signed aws-chunked payloads need SigV4 authentication"));
    }
    Ok(p)
}

/// A SigV2 request time: an HTTP date (`GMT`, or the `+0000` offset AWS's examples use), or
/// ISO 8601 basic (`20070327T193642Z`).
fn parse_date(d: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(d)
        .ok()
        .or_else(|| d.strip_suffix("+0000").and_then(|b| httpdate::parse_http_date(&format!("{b}GMT")).ok()))
        .or_else(|| parse_amz_date(d))
        .or_else(|| parse_date_any_weekday(d))
}

/// An RFC 1123 date whose weekday does not match its date ("Tue, 07 Jul 2010 ..."): S3 reads
/// the date and ignores the weekday, so such a request is judged by its time (a skewed one is
/// RequestTimeTooSkewed, not refused as undated).
fn parse_date_any_weekday(d: &str) -> Option<SystemTime> {
    let (_, rest) = d.split_once(", ")?;
    let f: Vec<&str> = rest.split(' ').collect();
    let [day, mon, year, time, "GMT"] = f[..] else { return None };
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let m = MONTHS.iter().position(|x| *x == mon)? + 1;
    let t: Vec<&str> = time.split(':').collect();
    let [h, mi, se] = t[..] else { return None };
    if day.len() != 2 || year.len() != 4 || [h, mi, se].iter().any(|x| x.len() != 2) {
        return None;
    }
    parse_amz_date(&format!("{year}{m:02}{day}T{h}{mi}{se}Z"))
}

/// `Authorization: AWS AKID:signature`.
pub(crate) fn verify_header(
    parts: &http::request::Parts,
    auth: &str,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
) -> Result<Verified, Error> {
    let invalid = || {
        Error::invalid_argument("AWS authorization header is invalid.  Expected AwsAccessKeyId:signature")
            .with_argument("Authorization", auth)
    };
    let rest = auth.strip_prefix("AWS ").ok_or_else(invalid)?;
    let (ak, sig) = rest.trim().rsplit_once(':').ok_or_else(invalid)?;
    if ak.is_empty() || sig.is_empty() {
        return Err(invalid());
    }
    let secret = creds.secret_for(ak).ok_or_else(|| unknown_key(ak))?;
    // The request time: x-amz-date (HTTP date, or ISO 8601 basic) over Date.
    let no_date =
        || Error::new(ErrorCode::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header");
    let (sent, t) = match (header_str(parts, "x-amz-date")?, header_str(parts, "date")?) {
        (Some(d), _) | (None, Some(d)) => {
            let t = parse_date(d).ok_or_else(no_date)?;
            (d.to_string(), t)
        }
        (None, None) => return Err(no_date()),
    };
    if abs_diff(t, now) > MAX_SKEW {
        return Err(Error::code(ErrorCode::RequestTimeTooSkewed)
            .with("RequestTime", sent)
            .with("ServerTime", iso8601(now))
            .with("MaxAllowedSkewMilliseconds", MAX_SKEW.as_millis().to_string()));
    }
    let payload = payload(parts)?;
    check_signature(parts, accept, ak, &secret, sig, None)?;
    Ok(Verified { access_key: ak.to_string(), payload, chunk_ctx: None })
}

/// `?AWSAccessKeyId=AK&Expires=EPOCH&Signature=SIG`.
pub(crate) fn verify_presigned(
    parts: &http::request::Parts,
    query: &str,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
) -> Result<Verified, Error> {
    let missing = || {
        Error::new(
            ErrorCode::AccessDenied,
            "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
        )
    };
    let ak = query_param(query, "AWSAccessKeyId").filter(|v| !v.is_empty()).ok_or_else(missing)?;
    // A `+` of the base64 signature sent unencoded reads as a space in form encoding.
    let sig = query_param(query, "Signature").filter(|v| !v.is_empty()).ok_or_else(missing)?.replace(' ', "+");
    let expires_s = query_param(query, "Expires").ok_or_else(missing)?;
    let expires: u64 = expires_s.parse().map_err(|_| {
        Error::new(ErrorCode::AccessDenied, format!("Invalid date (should be seconds since epoch): {expires_s}"))
    })?;
    let secret = creds.secret_for(&ak).ok_or_else(|| unknown_key(&ak))?;
    let end = UNIX_EPOCH + Duration::from_secs(expires);
    if now > end {
        return Err(Error::new(ErrorCode::AccessDenied, "Request has expired")
            .with("Expires", iso8601(end))
            .with("ServerTime", iso8601(now)));
    }
    let payload = payload(parts)?;
    if matches!(payload, Payload::Streaming { .. }) {
        return Err(Error::new(ErrorCode::InvalidRequest, "aws-chunked payloads need header authentication"));
    }
    check_signature(parts, accept, &ak, &secret, &sig, Some(&expires_s))?;
    Ok(Verified { access_key: ak, payload, chunk_ctx: None })
}
