//! Multipart uploads: create, upload a part, complete, abort.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use s3hpc_core::checksum::parse_content_md5;
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::util::url_encode_key;
use crate::xml::{self, DECL, NS, elem};

/// `x-amz-checksum-type`: COMPOSITE or FULL_OBJECT.
pub(super) fn checksum_type_header(h: &HeaderMap) -> Result<Option<ChecksumType>> {
    hdr(h, "x-amz-checksum-type")
        .map(|v| {
            ChecksumType::parse(v.trim()).ok_or_else(|| {
                Error::new(ErrorCode::InvalidRequest, format!("Value for x-amz-checksum-type header is invalid: {v}"))
            })
        })
        .transpose()
}

pub(super) async fn create_multipart(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    refuse_unsupported_object_headers(h)?;
    let lock = super::object_lock::lock_headers(h)?;
    let checksum_algorithm = match hdr(h, "x-amz-checksum-algorithm") {
        None => None,
        Some(a) => Some(
            ChecksumAlgorithm::parse(a)
                .ok_or_else(|| Error::new(ErrorCode::InvalidRequest, "Checksum algorithm provided is unsupported."))?,
        ),
    };
    // Refused here already (the store checks again) so the answer can name the type it will use.
    let checksum_type = multipart::resolve_checksum_type(checksum_algorithm, checksum_type_header(h)?)?;
    let req = CreateMultipartRequest {
        meta: object_meta(h)?,
        tags: tags_header(h)?,
        checksum_algorithm,
        checksum_type,
        lock,
    };
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

pub(super) async fn upload_part(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    let (id, n) = upload_part_target(r)?;
    let content_length = upload_length(r)?;
    let (checksum, sink) = checksum_request(h)?;
    let req = UploadPartRequest {
        content_md5: hdr(h, "content-md5").map(parse_content_md5).transpose()?,
        checksum,
        content_length,
        default_checksum: r.st.cfg.default_checksum,
    };
    let (body, _permit) = object_body(r, body, sink, content_length.unwrap_or(u64::MAX)).await?;
    let p = store(r).upload_part(&r.bucket, &r.key, id, n, req, body).await?;
    let mut b = empty_ok().header(header::ETAG, hval(&quoted(&p.etag))?);
    if let Some(c) = &p.checksum {
        b = b.header(c.algorithm.header_name(), hval(&c.value)?);
    }
    Ok(b.body(RespBody::Empty).unwrap())
}

/// Whitespace sent while a long CompleteMultipartUpload runs, once per this interval.
pub(super) const COMPLETE_KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The whole-object checksum a CompleteMultipartUpload expects: at most one
/// `x-amz-checksum-<alg>` header (on a complete it names the object's checksum, not the XML's).
pub(super) fn complete_checksum_header(h: &HeaderMap) -> Result<Option<Checksum>> {
    refuse_unknown_checksum_headers(h)?;
    let mut found = None;
    for algorithm in ChecksumAlgorithm::ALL {
        if let Some(v) = hdr(h, algorithm.header_name()) {
            if found.is_some() {
                return Err(Error::new(ErrorCode::InvalidRequest, "Expecting a single x-amz-checksum- header"));
            }
            // The value's form is checked before the parts are (S3 answers this before
            // EntityTooSmall); a COMPOSITE value may carry its `-N` part count.
            let v = v.trim();
            let digest = v.rsplit_once('-').filter(|(_, n)| n.parse::<u32>().is_ok()).map_or(v, |(d, _)| d);
            if !checksum_value_is_well_formed(algorithm, digest) {
                let msg = format!("Value for {} header is invalid.", algorithm.header_name());
                return Err(Error::new(ErrorCode::InvalidRequest, msg));
            }
            found = Some(Checksum { algorithm, value: v.to_string() });
        }
    }
    Ok(found)
}

pub(super) async fn complete_multipart(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let id = r.q.get("uploadId").unwrap_or("");
    let h = &r.parts.headers;
    let conditions = write_conditions(h)?;
    let checksum = complete_checksum_header(h)?;
    let checksum_type = checksum_type_header(h)?;
    // Only a trailer checksums the XML document itself.
    let body_ck = if hdr(h, "x-amz-trailer").is_some() { checksum_request(h)? } else { (None, None) };
    let expected_size = mp_object_size_header(h)?;
    let data = small_body_with(r, body, false, body_ck).await?;
    let parts = xml::parse_complete_multipart_upload(&data)?;
    if let Some(expected) = expected_size {
        check_mp_object_size(r, id, &parts, expected).await?;
    }
    let req = CompleteMultipartRequest { parts, conditions, checksum, checksum_type };
    let host = hdr(h, "host").unwrap_or("localhost");
    let location = format!("http://{host}/{}/{}", r.bucket, url_encode_key(&r.key));
    // The complete runs as its own task so that, when it takes long, the response can start
    // (200 and whitespace) while it runs; a client that goes away does not cancel it.
    let (store, bucket, key, id2) = (store(r).clone(), r.bucket.clone(), r.key.clone(), id.to_string());
    // The spawned task keeps the request's identity and caller (task-locals do not cross a
    // spawn).
    let (ident, caller) = (s3hpc_core::identity::current(), s3hpc_core::caller::current());
    let mut task = tokio::spawn(s3hpc_core::identity::scope(
        ident,
        s3hpc_core::caller::scope(caller, async move {
            store.complete_multipart_upload_with(&bucket, &key, &id2, req).await
        }),
    ));
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
            let out = joined(res).map_err(|e| name_upload(e, id))?;
            let mut resp = xml_ok(format!("{DECL}{}", result_doc(&out)));
            if let Some(v) = &out.version_id {
                resp.headers_mut().insert("x-amz-version-id", hval(v)?);
            }
            // Only here: a complete that outlasts `complete_keepalive_after` has sent its head.
            let tags = super::lifecycle::ObjectTags::Unknown;
            if let Some(v) = super::lifecycle::expiration_header(r, out.size, out.last_modified, tags).await {
                resp.headers_mut().insert("x-amz-expiration", v);
            }
            Ok(resp)
        }
        Err(_) => {
            // Still running: commit to 200 now. The declaration goes first, then a space per
            // interval, then the result or an <Error> document (clients read errors from it).
            let (path, rid, upload_id) = (r.parts.uri.path().to_string(), r.rid, id.to_string());
            let finish = move |res: Result<PutObjectOutput>| match res {
                Ok(out) => result_doc(&out),
                Err(e) => {
                    let e = name_upload(e, &upload_id);
                    let mut s = String::new();
                    crate::error_xml(
                        &mut s,
                        e.code.as_str(),
                        &e.message,
                        e.resource.as_deref(),
                        &e.details,
                        &path,
                        rid,
                    );
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

/// `x-amz-mp-object-size` on CompleteMultipartUpload: the object's expected size, a
/// non-negative integer (S3's InvalidRequest texts otherwise).
fn mp_object_size_header(h: &HeaderMap) -> Result<Option<u64>> {
    let Some(v) = hdr(h, "x-amz-mp-object-size") else { return Ok(None) };
    match v.trim().parse::<i64>() {
        Ok(n) if n < 0 => Err(Error::new(
            ErrorCode::InvalidRequest,
            format!("Value for x-amz-mp-object-size header is less than zero: '{v}'"),
        )),
        Ok(n) => Ok(Some(n as u64)),
        Err(_) => Err(Error::new(
            ErrorCode::InvalidRequest,
            format!("Value for x-amz-mp-object-size header is invalid: '{v}'"),
        )),
    }
}

/// The parts a completion names must add up to `x-amz-mp-object-size` (400 InvalidRequest, as
/// S3, nothing completed). Their sizes are read with ListParts; when a named part is missing or
/// its ETag differs (or the parts cannot be listed, e.g. the upload is gone: a retried
/// completion), nothing is judged here and the completion gives its own answer (InvalidPart,
/// NoSuchUpload, the first 200).
async fn check_mp_object_size(r: &Req<'_>, upload_id: &str, parts: &[CompletePart], expected: u64) -> Result<()> {
    let mut stored = std::collections::HashMap::new();
    let mut marker = None;
    loop {
        let req = ListPartsRequest { part_number_marker: marker, max_parts: 1000 };
        let Ok(page) = store(r).list_parts(&r.bucket, &r.key, upload_id, req).await else { return Ok(()) };
        for p in page.parts {
            stored.insert(p.part_number, (p.etag, p.size));
        }
        match page.next_part_number_marker {
            Some(m) if page.is_truncated => marker = Some(m),
            _ => break,
        }
    }
    let mut total = 0u64;
    for p in parts {
        match stored.get(&p.part_number) {
            Some((etag, size)) if etag.trim_matches('"') == p.etag.trim_matches('"') => total += size,
            _ => return Ok(()),
        }
    }
    if total != expected {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            format!(
                "The provided 'x-amz-mp-object-size' header value {expected} does not match what was computed: {total}"
            ),
        ));
    }
    Ok(())
}

/// InvalidPart names the upload first (AWS: `<UploadId>`, `<PartNumber>`, `<ETag>`); the shared
/// completion rules know the part, not the upload.
fn name_upload(mut e: Error, upload_id: &str) -> Error {
    if e.code == ErrorCode::InvalidPart && e.detail("UploadId").is_none() {
        e.details.insert(0, ("UploadId", upload_id.to_string()));
    }
    e
}

pub(super) async fn abort_multipart(r: &Req<'_>) -> Result<Resp> {
    let id = r.q.get("uploadId").unwrap_or("");
    store(r).abort_multipart_upload(&r.bucket, &r.key, id).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
