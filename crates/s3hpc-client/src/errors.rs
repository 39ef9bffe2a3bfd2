//! Errors: transport failures, error documents and statuses mapped to the seam's `ErrorCode`s,
//! and the bounded reading of (error and XML) response bodies.

use super::*;

/// Map a hyper client error; an S3 error smuggled through the body stream comes back whole.
pub(crate) fn transport_error(e: hyper_util::client::legacy::Error) -> Error {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(s3) = inner.downcast_ref::<Error>()
        {
            return s3.clone();
        }
        if let Some(s3) = s.downcast_ref::<Error>() {
            return s3.clone();
        }
        src = s.source();
    }
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    #[cfg(feature = "tls")]
    if let Some(hint) = tls::failure_hint(&e) {
        return Error::new(ErrorCode::ServiceUnavailable, format!("{hint}: {msg}"));
    }
    if e.is_connect() {
        return Error::new(ErrorCode::ServiceUnavailable, format!("cannot connect: {msg}"));
    }
    Error::internal(format!("HTTP transport error: {msg}"))
}

pub(crate) async fn read_body(body: Incoming, limit: usize) -> Result<Bytes> {
    let b = http_body_util::Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| Error::internal(format!("reading the response body failed: {e}")))?;
    Ok(b.to_bytes())
}

/// An S3 error from a non-2xx answer: the `<Error>` document when there is one, else by status.
pub(crate) fn error_from(status: StatusCode, body: &[u8], hdr_code: Option<ErrorCode>, not_found: ErrorCode) -> Error {
    if let Ok(n) = xml::parse(body)
        && n.name == "Error"
    {
        let code_s = n.text_of("Code").unwrap_or("");
        let msg = n.text_of("Message").unwrap_or("").to_string();
        let (code, msg) = match ErrorCode::parse(code_s) {
            Some(c) => (c, msg),
            None => (status_code(status, not_found), format!("{code_s}: {msg}")),
        };
        let mut e = if msg.is_empty() { Error::code(code) } else { Error::new(code, msg) };
        if let Some(r) = n.text_of("Resource").filter(|r| !r.is_empty()) {
            e = e.with_resource(r);
        }
        return e;
    }
    Error::code(hdr_code.unwrap_or_else(|| status_code(status, not_found)))
}

pub(crate) fn status_code(status: StatusCode, not_found: ErrorCode) -> ErrorCode {
    match status.as_u16() {
        304 => ErrorCode::NotModified,
        400 => ErrorCode::InvalidRequest,
        403 => ErrorCode::AccessDenied,
        404 => not_found,
        405 => ErrorCode::MethodNotAllowed,
        409 => ErrorCode::ConditionalRequestConflict,
        411 => ErrorCode::MissingContentLength,
        412 => ErrorCode::PreconditionFailed,
        416 => ErrorCode::InvalidRange,
        501 => ErrorCode::NotImplemented,
        503 => ErrorCode::ServiceUnavailable,
        _ => ErrorCode::InternalError,
    }
}
