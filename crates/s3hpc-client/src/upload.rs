//! Request bodies of uploads: checksum headers and trailers, aws-chunked framing where needed.

use super::*;

/// Checksum headers of an upload. Returns the trailer plan when the value is not known yet.
pub(crate) fn checksum_headers(h: &mut HeaderMap, c: &Option<ChecksumRequest>) -> Result<Option<chunked::TrailerPlan>> {
    let Some(c) = c else { return Ok(None) };
    match c.expected.as_ref().and_then(|e| e.get()) {
        Some(v) => {
            h.insert(HeaderName::from_static(c.algorithm.header_name()), hval(v)?);
            h.insert(hname("x-amz-sdk-checksum-algorithm"), hval(c.algorithm.as_str())?);
            Ok(None)
        }
        None => Ok(Some(chunked::TrailerPlan { algorithm: c.algorithm, expected: c.expected.clone() })),
    }
}

/// Prepare an upload body: length checks, and aws-chunked with a checksum trailer when the
/// checksum value is only known at the end.
pub(crate) fn upload_body<'a>(
    mut r: Req<'a>,
    body: Body,
    content_length: Option<u64>,
    plan: Option<chunked::TrailerPlan>,
    sent: Arc<AtomicU64>,
) -> Result<Req<'a>> {
    let known = body.known_len();
    if let (Some(k), Some(n)) = (known, content_length)
        && k != n
    {
        return Err(Error::new(ErrorCode::IncompleteBody, format!("body has {k} bytes, Content-Length announced {n}")));
    }
    let len = content_length.or(known);
    match plan {
        None => {
            let body = match body {
                Body::Stream(s) => Body::Stream(chunked::counting(s, sent)),
                other => {
                    sent.store(other.known_len().unwrap_or(0), Ordering::Relaxed);
                    other
                }
            };
            Ok(r.body(body, len))
        }
        Some(plan) => {
            if let Some(n) = len {
                r = r.h("x-amz-decoded-content-length", &n.to_string())?;
            }
            r = r
                .h("content-encoding", "aws-chunked")?
                .h("x-amz-trailer", plan.algorithm.header_name())?
                .h("x-amz-sdk-checksum-algorithm", plan.algorithm.as_str())?
                .h("x-amz-content-sha256", s3hpc_sigv4::STREAMING_UNSIGNED_TRAILER)?;
            let mut s = body.into_stream();
            if let Some(n) = len {
                s = chunked::exact_length(s, n);
            }
            let s = chunked::counting(s, sent);
            Ok(r.body(Body::Stream(chunked::encode_unsigned_trailer(s, plan)), None))
        }
    }
}
