//! The response writer: status line and headers, then the body inline, chunked, streamed or (on
//! a blocking-pool thread) from a file.

use super::*;

/// Full bodies up to this size are copied behind the head and sent with one `send`.
pub(super) const COPY_BODY_MAX: usize = 32 * 1024;

/// A header name as AWS writes it on the wire: `x-amz-*` and other `x-` names in lower case,
/// `ETag`, and every other name capitalised per word (`Content-Length`, `Last-Modified`,
/// `Access-Control-Allow-Origin`). HTTP names are case-insensitive, but clients that read the
/// raw head (scripts grepping `curl -i` output, as the versitygw suite does) look for AWS's case.
pub(super) fn push_name(out: &mut Vec<u8>, name: &str) {
    let b = name.as_bytes();
    if b.starts_with(b"x-") || b.starts_with(b"X-") {
        out.extend_from_slice(b);
    } else if name.eq_ignore_ascii_case("etag") {
        out.extend_from_slice(b"ETag");
    } else if name.eq_ignore_ascii_case("content-md5") {
        out.extend_from_slice(b"Content-MD5");
    } else {
        let mut start = true;
        for &c in b {
            out.push(if start { c.to_ascii_uppercase() } else { c });
            start = c == b'-';
        }
    }
}

/// The `date` header value, formatted once per second per thread.
pub(super) fn push_date(out: &mut Vec<u8>) {
    thread_local! {
        static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = SystemTime::now();
    let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    DATE.with(|d| {
        let mut d = d.borrow_mut();
        if d.0 != secs {
            *d = (secs, httpdate::fmt_http_date(now));
        }
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(d.1.as_bytes());
        out.extend_from_slice(b"\r\n");
    });
}

/// Write `resp`. Returns whether the connection may be kept (false when the body had to be
/// delimited by closing) and the body bytes sent; an error means the connection is unusable.
pub(super) async fn write_response(
    st: &State,
    io: &Arc<Conn>,
    resp: Response<RespBody>,
    is_head: bool,
    version: Version,
    mut keep: bool,
) -> io::Result<(bool, u64)> {
    let idle = st.cfg.body_idle_timeout;
    let (parts, body) = resp.into_parts();
    let status = parts.status;
    let no_body = status.is_informational() || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let mut declared: Option<u64> = None;
    let mut has_date = false;
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(b"HTTP/1.1 ");
    head.extend_from_slice(status.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(status.canonical_reason().unwrap_or("Unknown").as_bytes());
    head.extend_from_slice(b"\r\n");
    for (k, v) in &parts.headers {
        if k == header::TRANSFER_ENCODING || k == header::CONNECTION {
            continue; // framing is ours
        }
        if k == header::CONTENT_LENGTH {
            if no_body {
                continue;
            }
            declared =
                Some(v.to_str().ok().and_then(|s| s.trim().parse().ok()).ok_or_else(|| invalid("bad content-length"))?);
        }
        has_date |= k == header::DATE;
        push_name(&mut head, k.as_str());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if !has_date {
        push_date(&mut head);
    }
    let len = declared.or_else(|| body.known_len());
    if let (Some(d), Some(b)) = (declared, body.known_len())
        && !is_head
        && !no_body
        && d != b
        && !matches!(body, RespBody::Empty)
    {
        return Err(invalid("response content-length does not match its body"));
    }
    let chunked = !no_body && len.is_none() && version == Version::HTTP_11;
    if !no_body && len.is_none() && version != Version::HTTP_11 && !is_head {
        keep = false; // delimited by closing
    }
    if !no_body && declared.is_none() {
        match len {
            Some(n) => {
                head.extend_from_slice(b"Content-Length: ");
                head.extend_from_slice(n.to_string().as_bytes());
                head.extend_from_slice(b"\r\n");
            }
            None if chunked => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            None => {}
        }
    }
    if !keep {
        head.extend_from_slice(b"Connection: close\r\n");
    } else if version == Version::HTTP_10 {
        head.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    head.extend_from_slice(b"\r\n");
    if is_head || no_body {
        write_all(io, &head, idle).await?;
        return Ok((keep, 0));
    }
    let body_len = len.unwrap_or(0);
    match body {
        RespBody::Empty => {
            if len.unwrap_or(0) != 0 {
                return Err(invalid("empty response body with a non-zero content-length"));
            }
            write_all(io, &head, idle).await?;
        }
        RespBody::Full(b) if b.len() <= COPY_BODY_MAX => {
            head.extend_from_slice(&b);
            write_all(io, &head, idle).await?;
        }
        RespBody::Full(b) => write_all_vec(io, &mut [IoSlice::new(&head), IoSlice::new(&b)], idle).await?,
        RespBody::Stream(mut s, _) => {
            write_all(io, &head, idle).await?;
            let mut sent = 0u64;
            while let Some(c) = s.next().await {
                let c = c?;
                if c.is_empty() {
                    continue;
                }
                sent += c.len() as u64;
                if len.is_some_and(|l| sent > l) {
                    return Err(invalid("response body longer than its content-length"));
                }
                if chunked {
                    let size = format!("{:x}\r\n", c.len());
                    let mut parts = [IoSlice::new(size.as_bytes()), IoSlice::new(&c), IoSlice::new(b"\r\n")];
                    write_all_vec(io, &mut parts, idle).await?;
                } else {
                    write_all(io, &c, idle).await?;
                }
            }
            if len.is_some_and(|l| sent != l) {
                return Err(invalid("response body shorter than its content-length"));
            }
            if chunked {
                write_all(io, b"0\r\n\r\n", idle).await?;
            }
            return Ok((keep, sent));
        }
        RespBody::File { file, offset, len } => {
            let sock = io.clone();
            tokio::task::spawn_blocking(move || match &sock.tls {
                Some(t) => send_file_tls(t, sock.fd(), &head, &file, offset, len, idle),
                None => send_file(sock.fd(), &head, &file, offset, len, idle),
            })
            .await
            .map_err(io::Error::other)??;
        }
    }
    Ok((keep, body_len))
}
