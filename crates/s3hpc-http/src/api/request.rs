//! Reading requests: headers, conditions, metadata, checksums and bodies.

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use http::HeaderMap;

use s3hpc_core::checksum::{checksum_of, parse_content_md5};
use s3hpc_core::names::{MAX_OBJECT_TAGS, validate_tags};
use s3hpc_core::*;
use s3hpc_sigv4::{Payload, TrailerSink};

use super::Req;
use crate::body::{ReqBody, incoming_stream};
use crate::util::parse_tagging_header;
use crate::xml;

pub(super) fn hdr<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
}

pub(super) fn store<'a>(r: &'a Req<'a>) -> &'a DynStore {
    &r.st.cfg.store
}

/// A `versionId` as S3 checks it: `null` or an id this gateway gives, else 400 InvalidArgument.
pub(super) fn check_version_id(v: Option<&str>) -> Result<()> {
    match v {
        None => Ok(()),
        Some(v) => s3hpc_core::versions::check_version_id(v),
    }
}

/// The request's `versionId` query parameter, checked.
pub(super) fn version_param(r: &Req<'_>) -> Result<Option<String>> {
    check_version_id(r.q.get("versionId"))?;
    Ok(r.q.get("versionId").map(str::to_owned))
}

// ---- request parsing helpers ----

pub(super) fn parse_date(v: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(v.trim()).ok()
}

pub(super) fn conditions(h: &HeaderMap, prefix: &str) -> Conditions {
    let get = |n: &str| hdr(h, &format!("{prefix}{n}"));
    Conditions {
        if_match: get("if-match").map(str::to_owned),
        if_none_match: get("if-none-match").map(str::to_owned),
        if_modified_since: get("if-modified-since").and_then(parse_date),
        if_unmodified_since: get("if-unmodified-since").and_then(parse_date),
    }
}

/// The conditions of a write that creates an object (PutObject, CompleteMultipartUpload): S3
/// supports only `If-None-Match: *` there; another value is 501 NotImplemented naming the
/// header (aws/aws-sdk-ruby#3144, against S3).
pub(super) fn write_conditions(h: &HeaderMap) -> Result<Conditions> {
    let c = conditions(h, "");
    if c.if_none_match.as_deref().is_some_and(|v| v.trim() != "*") {
        return Err(Error::code(ErrorCode::NotImplemented).with("Header", "If-None-Match"));
    }
    Ok(c)
}

pub(super) fn object_meta(h: &HeaderMap) -> Result<ObjectMeta> {
    let s = |n: &str| hdr(h, n).map(str::to_owned);
    // Stored as sent (`deflate, gzip` stays so), less the `aws-chunked` coding of the transfer.
    let content_encoding = hdr(h, "content-encoding").and_then(|v| {
        let codings = v.split(',').map(str::trim).filter(|e| !e.is_empty());
        if !codings.clone().any(|e| e.eq_ignore_ascii_case("aws-chunked")) {
            return (!v.trim().is_empty()).then(|| v.trim().to_string());
        }
        let kept: Vec<&str> = codings.filter(|e| !e.eq_ignore_ascii_case("aws-chunked")).collect();
        (!kept.is_empty()).then(|| kept.join(", "))
    });
    let mut meta = ObjectMeta {
        content_type: s("content-type"),
        content_encoding,
        content_disposition: s("content-disposition"),
        content_language: s("content-language"),
        cache_control: s("cache-control"),
        expires: s("expires"),
        user: Default::default(),
        website_redirect_location: s("x-amz-website-redirect-location"),
    };
    for (k, v) in h {
        if let Some(name) = k.as_str().strip_prefix("x-amz-meta-") {
            // Repeated headers of one name are combined, comma-separated, as AWS does.
            let v = meta_value(v.as_bytes());
            match meta.user.get_mut(name) {
                Some(prev) => {
                    prev.push(',');
                    prev.push_str(&v);
                }
                None => {
                    meta.user.insert(name.to_string(), v);
                }
            }
        }
    }
    names::validate_meta(&meta)?;
    Ok(meta)
}

/// A user-metadata header value as S3 stores it: RFC 2047 encoded-words (`=?UTF-8?B?...?=`,
/// `=?ISO-8859-1?Q?...?=`; a value made only of them) decoded (AWS: "Values of such headers are
/// character decoded as per RFC 2047 before storing"); raw bytes outside US-ASCII as UTF-8 (what
/// SDKs send, and AWS returns them as the same text), or, when they are not UTF-8, as
/// ISO-8859-1 (HTTP's reading of header bytes) rather than replaced. [`meta_header`] is the
/// way back.
pub(super) fn meta_value(raw: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(raw) else {
        return raw.iter().map(|&b| b as char).collect();
    };
    if !text.is_ascii() {
        return text.to_owned();
    }
    if text.contains("=?") {
        let words: Option<Vec<String>> = text.split_ascii_whitespace().map(decode_encoded_word).collect();
        if let Some(words) = words.filter(|w| !w.is_empty()) {
            return words.concat();
        }
    }
    text.to_owned()
}

/// One RFC 2047 encoded-word `=?charset?B|Q?text?=` (charset UTF-8, US-ASCII or ISO-8859-1).
fn decode_encoded_word(w: &str) -> Option<String> {
    use base64::Engine as _;
    let inner = w.strip_prefix("=?")?.strip_suffix("?=")?;
    let mut it = inner.splitn(3, '?');
    let (charset, enc, text) = (it.next()?, it.next()?, it.next()?);
    let bytes = match enc {
        "B" | "b" => base64::engine::general_purpose::STANDARD.decode(text).ok()?,
        "Q" | "q" => {
            let (mut out, b) = (Vec::with_capacity(text.len()), text.as_bytes());
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    b'_' => out.push(b' '),
                    b'=' => {
                        let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                        out.push(u8::from_str_radix(hex, 16).ok()?);
                        i += 2;
                    }
                    c => out.push(c),
                }
                i += 1;
            }
            out
        }
        _ => return None,
    };
    if charset.eq_ignore_ascii_case("utf-8") || charset.eq_ignore_ascii_case("us-ascii") {
        String::from_utf8(bytes).ok()
    } else if charset.eq_ignore_ascii_case("iso-8859-1") {
        Some(bytes.iter().map(|&b| b as char).collect())
    } else {
        None
    }
}

/// A stored user-metadata value as S3 returns it: unchanged when it is printable US-ASCII, else
/// one RFC 2047 encoded-word over its UTF-8 bytes (`=?UTF-8?B?...?=`), as AWS makes non-ASCII
/// values "mail-safe before returning".
pub(super) fn meta_header(v: &str) -> std::borrow::Cow<'_, str> {
    use base64::Engine as _;
    if v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        std::borrow::Cow::Borrowed(v)
    } else {
        std::borrow::Cow::Owned(format!("=?UTF-8?B?{}?=", base64::engine::general_purpose::STANDARD.encode(v)))
    }
}

pub(super) fn tags_header(h: &HeaderMap) -> Result<Tags> {
    match hdr(h, "x-amz-tagging") {
        None => Ok(Vec::new()),
        Some(v) => {
            let tags = parse_tagging_header(v);
            validate_tags(&tags, MAX_OBJECT_TAGS)?;
            Ok(tags)
        }
    }
}

/// `x-amz-storage-class` of a write. STANDARD, and REDUCED_REDUNDANCY (a class AWS still
/// accepts and which promises less than STANDARD, so storing it as STANDARD keeps every promise:
/// AWS's own aws-chunked example request sends it) are stored; AWS's other classes (archive
/// tiers with restore semantics, other media) are 501 NotImplemented; a name AWS does not know is
/// 400 InvalidStorageClass, as AWS answers.
fn storage_class(v: &[u8]) -> Result<()> {
    match v {
        b"STANDARD" | b"REDUCED_REDUNDANCY" => Ok(()),
        b"STANDARD_IA"
        | b"ONEZONE_IA"
        | b"INTELLIGENT_TIERING"
        | b"GLACIER"
        | b"DEEP_ARCHIVE"
        | b"OUTPOSTS"
        | b"GLACIER_IR"
        | b"SNOW"
        | b"EXPRESS_ONEZONE"
        | b"FSX_OPENZFS"
        | b"FSX_ONTAP" => Err(Error::not_implemented("only the STANDARD storage class is supported")),
        _ => Err(Error::code(ErrorCode::InvalidStorageClass)),
    }
}

/// Headers that ask for features s3hpc does not have: refuse rather than succeed wrongly.
pub(super) fn refuse_unsupported_write_headers(h: &HeaderMap) -> Result<()> {
    refuse_unsupported(h, false)
}

/// [`refuse_unsupported_write_headers`] for the writes that take `x-amz-object-lock-*`
/// (PutObject, CopyObject, CreateMultipartUpload).
pub(super) fn refuse_unsupported_object_headers(h: &HeaderMap) -> Result<()> {
    refuse_unsupported(h, true)
}

fn refuse_unsupported(h: &HeaderMap, lock: bool) -> Result<()> {
    for (k, v) in h {
        let k = k.as_str();
        if k.starts_with("x-amz-server-side-encryption") || (!lock && k.starts_with("x-amz-object-lock")) {
            return Err(Error::not_implemented(format!("{k} is not supported by s3hpc")));
        }
        if k == "x-amz-storage-class" {
            storage_class(v.as_bytes())?;
        }
    }
    Ok(())
}

/// The checksum a request asks for: a trailer (deferred), a header value (known), or just an
/// algorithm to compute and store.
pub(super) fn checksum_request(h: &HeaderMap) -> Result<(Option<ChecksumRequest>, Option<TrailerSink>)> {
    refuse_unknown_checksum_headers(h)?;
    if let Some(t) = hdr(h, "x-amz-trailer") {
        let name = t.trim().to_ascii_lowercase();
        let alg = name.strip_prefix("x-amz-checksum-").and_then(ChecksumAlgorithm::parse).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidRequest,
                format!("The value specified in the x-amz-trailer header is not supported: {name}"),
            )
        })?;
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
            let v = v.trim();
            if !checksum_value_is_well_formed(alg, v) {
                let msg = format!("Value for {} header is invalid.", alg.header_name());
                return Err(Error::new(ErrorCode::InvalidRequest, msg));
            }
            found = Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(v.to_string())) });
        }
    }
    if let Some(a) = hdr(h, "x-amz-sdk-checksum-algorithm").or(hdr(h, "x-amz-checksum-algorithm")) {
        let alg = ChecksumAlgorithm::parse(a.trim()).ok_or_else(|| {
            let which = if h.contains_key("x-amz-sdk-checksum-algorithm") {
                "x-amz-sdk-checksum-algorithm"
            } else {
                "x-amz-checksum-algorithm"
            };
            Error::new(ErrorCode::InvalidRequest, format!("Value for {which} header is invalid."))
        })?;
        match &found {
            None => found = Some(ChecksumRequest { algorithm: alg, expected: None }),
            // The algorithm named must be the one whose value was sent.
            Some(c) if c.algorithm != alg => {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.",
                ));
            }
            Some(_) => {}
        }
    }
    Ok((found, None))
}

/// The checksum a new object uploaded without one gets (`Config::default_checksum`): computed
/// while the body streams, nothing to verify.
pub(super) fn default_checksum(r: &Req) -> Option<ChecksumRequest> {
    r.st.cfg.default_checksum.map(|algorithm| ChecksumRequest { algorithm, expected: None })
}

/// Every `x-amz-checksum-<name>` header must name an algorithm s3hpc verifies: a checksum a
/// client sends is checked or refused, never ignored. An unknown name is InvalidRequest, with
/// AWS's text (versitygw issue 1104 records AWS's answer to `x-amz-checksum-sha256a`).
pub(super) fn refuse_unknown_checksum_headers(h: &HeaderMap) -> Result<()> {
    for name in h.keys() {
        let Some(alg) = name.as_str().strip_prefix("x-amz-checksum-") else { continue };
        if matches!(alg, "type" | "mode" | "algorithm") || ChecksumAlgorithm::parse(alg).is_some() {
            continue;
        }
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "The algorithm type you specified in x-amz-checksum- header is invalid.",
        ));
    }
    Ok(())
}

/// Whether a checksum header value is the base64 of a digest of the algorithm's size.
pub(super) fn checksum_value_is_well_formed(alg: ChecksumAlgorithm, v: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(v).is_ok_and(|d| d.len() == alg.digest_len())
}

pub(super) fn is_streaming(r: &Req) -> bool {
    match &r.verified {
        Some(v) => matches!(v.payload, Payload::Streaming { .. }),
        None => hdr(&r.parts.headers, "x-amz-content-sha256").is_some_and(|v| v.starts_with("STREAMING-")),
    }
}

/// The announced object length: `x-amz-decoded-content-length` for aws-chunked bodies,
/// `Content-Length` otherwise.
pub(super) fn content_length(r: &Req) -> Result<Option<u64>> {
    let h = &r.parts.headers;
    let name = if is_streaming(r) { "x-amz-decoded-content-length" } else { "content-length" };
    match hdr(h, name) {
        Some(v) => v.trim().parse().map(Some).map_err(|_| Error::invalid_argument(format!("invalid {name}"))),
        None => Ok(None),
    }
}

/// The length of an object or part body: the announced length, or `None` for a body sent with
/// `Transfer-Encoding: chunked` and no length (accepted, as AWS-compatible servers do). Neither is
/// MissingContentLength; more than 5 GiB is EntityTooLarge.
pub(super) fn upload_length(r: &Req) -> Result<Option<u64>> {
    match content_length(r)? {
        Some(n) if n > MAX_PUT_SIZE => Err(Error::code(ErrorCode::EntityTooLarge)
            .with("ProposedSize", n.to_string())
            .with("MaxSizeAllowed", MAX_PUT_SIZE.to_string())),
        Some(n) => Ok(Some(n)),
        None if is_chunked(r) => Ok(None),
        None => Err(Error::code(ErrorCode::MissingContentLength)),
    }
}

/// Whether the HTTP body is sent with `Transfer-Encoding: chunked`.
fn is_chunked(r: &Req) -> bool {
    r.parts
        .headers
        .get_all(http::header::TRANSFER_ENCODING)
        .iter()
        .any(|v| v.to_str().is_ok_and(|s| s.split(',').any(|c| c.trim().eq_ignore_ascii_case("chunked"))))
}

/// The request body as the store reads it (de-chunked and verified by the SigV4 layer).
pub(super) fn body_stream(r: &Req, body: ReqBody, trailer: Option<TrailerSink>) -> ByteStream {
    let raw = incoming_stream(body, r.st.cfg.body_idle_timeout);
    match &r.verified {
        Some(v) => s3hpc_sigv4::verified_body(v, raw, trailer),
        None => raw,
    }
}

/// Object bodies up to this size are read whole before the store sees them: one blocking call
/// in the backend instead of a streaming writer, which is what small-object rates need.
pub(super) const SMALL_BODY: u64 = 256 * 1024;

/// An object body for the store (`len` is `u64::MAX` when none was announced). Small bodies
/// are collected (bounded by the announced length);
/// large ones stream, at most `max_concurrent_uploads` at a time (the permit is held until the
/// request ends), so memory stays bounded however many clients upload at once: waiting bodies
/// stay in the kernel's socket buffers.
pub(super) async fn object_body(
    r: &Req<'_>,
    body: ReqBody,
    sink: Option<TrailerSink>,
    len: u64,
) -> Result<(Body, Option<tokio::sync::OwnedSemaphorePermit>)> {
    if r.verified.is_none() && sink.is_none() {
        return Ok((anonymous_body(r, body, len), None));
    }
    if len <= SMALL_BODY {
        let data = Body::Stream(body_stream(r, body, sink)).collect_limited(len as usize).await.map_err(|e| {
            if e.code == ErrorCode::MaxMessageLengthExceeded {
                Error::new(ErrorCode::IncompleteBody, "the body is longer than the announced length")
            } else {
                e
            }
        })?;
        // A body that ended before the announced length (an aws-chunked body whose chunks add up
        // to less than x-amz-decoded-content-length): AWS answers IncompleteBody.
        if len != u64::MAX && (data.len() as u64) < len {
            return Err(Error::code(ErrorCode::IncompleteBody));
        }
        return Ok((Body::from(data), None));
    }
    let (body, permit) = body.upload_slot(&r.st.uploads).await?;
    let stream = body_stream(r, body, sink);
    if len != u64::MAX {
        return Ok((Body::Stream(stream), Some(permit)));
    }
    // No announced length (chunked transfer): the 5 GiB limit is enforced as the bytes arrive;
    // beyond it the stream ends with EntityTooLarge and nothing is published.
    let mut seen = 0u64;
    let capped = futures::StreamExt::map(stream, move |item| {
        let chunk = item?;
        seen += chunk.len() as u64;
        if seen > MAX_PUT_SIZE {
            return Err(std::io::Error::from(Error::code(ErrorCode::EntityTooLarge)));
        }
        Ok(chunk)
    });
    Ok((Body::Stream(Box::pin(capped)), Some(permit)))
}

/// The body of an anonymous upload, read only when the store asks for it: the store decides
/// whether anyone may write there first, so a refused request is answered (403) without a
/// `100 Continue` and without reading a byte, as S3 does. The upload slot is taken at the
/// first read and held until the body ends.
fn anonymous_body(r: &Req<'_>, body: ReqBody, len: u64) -> Body {
    use futures::StreamExt;
    let slots = r.st.uploads.clone();
    let idle = r.st.cfg.body_idle_timeout;
    let lazy =
        futures::stream::once(async move { body.upload_slot(&slots).await }).flat_map(move |got| -> ByteStream {
            match got {
                Ok((b, permit)) => {
                    let mut seen = 0u64;
                    Box::pin(incoming_stream(b, idle).map(move |item| {
                        let _held = &permit;
                        let chunk = item?;
                        seen += chunk.len() as u64;
                        if len == u64::MAX && seen > MAX_PUT_SIZE {
                            return Err(std::io::Error::from(Error::code(ErrorCode::EntityTooLarge)));
                        }
                        Ok(chunk)
                    }))
                }
                Err(e) => Box::pin(futures::stream::iter([Err(std::io::Error::from(e))])),
            }
        });
    Body::Stream(Box::pin(lazy))
}

/// Read a small request body (XML documents), verifying Content-MD5 and checksum headers or
/// trailers when present; `require_digest` demands one of them (as DeleteObjects does).
pub(super) async fn small_body(r: &Req<'_>, body: ReqBody, require_digest: bool) -> Result<Bytes> {
    let ck = checksum_request(&r.parts.headers)?;
    small_body_with(r, body, require_digest, ck).await
}

/// [`small_body`] with the body's checksum request already chosen.
pub(super) async fn small_body_with(
    r: &Req<'_>,
    body: ReqBody,
    require_digest: bool,
    (ck, sink): (Option<ChecksumRequest>, Option<TrailerSink>),
) -> Result<Bytes> {
    // Unsigned aws-chunked bodies are for PutObject and UploadPart only; AWS refuses them for
    // the XML documents of other operations (versity/versitygw#1601, direct to S3).
    if r.verified.as_ref().is_some_and(|v| matches!(v.payload, Payload::Streaming { signed_chunks: false, .. })) {
        return Err(Error::new(ErrorCode::InvalidRequest, "The value of x-amz-content-sha256 header is invalid."));
    }
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
            return Err(Error::new(
                ErrorCode::BadDigest,
                "The Content-MD5 you specified did not match what we received.",
            ));
        }
    }
    if let Some(c) = ck
        && let Some(exp) = &c.expected
    {
        let got = checksum_of(c.algorithm, &data);
        match exp.get() {
            Some(want) if want == got.value => {}
            Some(_) => {
                let msg = format!("The {} you specified did not match the calculated checksum.", c.algorithm.as_str());
                return Err(Error::new(ErrorCode::BadDigest, msg));
            }
            None => return Err(Error::new(ErrorCode::InvalidRequest, "checksum trailer missing")),
        }
    }
    Ok(data)
}

/// An operation whose XML document is required refuses an empty body as AWS does: 400
/// MissingRequestBodyError "Request Body is empty" (not MalformedXML).
pub(super) fn nonempty(data: Bytes) -> Result<Bytes> {
    if data.is_empty() { Err(Error::code(ErrorCode::MissingRequestBodyError)) } else { Ok(data) }
}

pub(super) fn upload_id<'a>(r: &'a Req) -> Result<&'a str> {
    r.q.get("uploadId").filter(|s| !s.is_empty()).ok_or_else(|| Error::invalid_argument("uploadId is required"))
}

/// Upload ID and part number of UploadPart / UploadPartCopy, refused as AWS refuses a request
/// lacking one of them: a part number without an upload ID is 400 InvalidArgument, an upload ID
/// without a part number is a PUT on the upload itself, which has no such operation (405, as for
/// the upload resource's other unsupported methods; AWS answers `Allow: DELETE, POST, GET`).
pub(super) fn upload_part_target<'a>(r: &'a Req) -> Result<(&'a str, u32)> {
    if !r.q.has("uploadId") {
        return Err(Error::invalid_arg(
            "This operation does not accept partNumber without uploadId",
            "partNumber",
            "partNumber",
        ));
    }
    if !r.q.has("partNumber") {
        return Err(Error::code(ErrorCode::MethodNotAllowed)
            .with("Method", r.parts.method.as_str())
            .with("ResourceType", "UPLOAD"));
    }
    Ok((upload_id(r)?, part_number(r)?))
}

pub(super) fn part_number(r: &Req) -> Result<u32> {
    let sent = r.q.get("partNumber");
    sent.and_then(|p| p.parse::<u32>().ok()).filter(|n| (1..=MAX_PART_NUMBER).contains(n)).ok_or_else(|| {
        Error::invalid_arg(
            "Part number must be an integer between 1 and 10000, inclusive",
            "partNumber",
            sent.unwrap_or_default(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{meta_header, meta_value};

    #[test]
    fn metadata_values_as_s3_stores_and_returns_them() {
        // Bytes that are not UTF-8 are read as ISO-8859-1, not replaced.
        assert_eq!(meta_value(b"caf\xe9"), "caf\u{e9}");
        assert_eq!(meta_value("caf\u{e9}".as_bytes()), "caf\u{e9}");
        assert_eq!(meta_value(b"=?UTF-8?B?Y2Fmw6k=?="), "caf\u{e9}");
        assert_eq!(meta_value(b"=?iso-8859-1?q?caf=E9_x?="), "caf\u{e9} x");
        // Not only encoded-words, or a malformed one: kept as sent.
        assert_eq!(meta_value(b"a =?UTF-8?B?Y2Fmw6k=?="), "a =?UTF-8?B?Y2Fmw6k=?=");
        assert_eq!(meta_value(b"=?UTF-8?Q?caf=E?="), "=?UTF-8?Q?caf=E?=");
        assert_eq!(meta_header("plain"), "plain");
        assert_eq!(meta_header("caf\u{e9}"), "=?UTF-8?B?Y2Fmw6k=?=");
        assert_eq!(meta_header("a\nb"), "=?UTF-8?B?YQpi?=");
    }
}
