//! Request heads: reading one from the connection (limits, deadline) and parsing it (httparse)
//! into the request parts and the body framing.

use super::*;

/// Most request headers accepted.
pub(super) const MAX_HEADERS: usize = 200;

/// A parsed request head.
pub(super) struct Head {
    pub(super) parts: Parts,
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
    pub(super) expect_continue: bool,
}

/// Parse a complete head at the start of `buf` (and consume it). `None`: incomplete;
/// `Some(Err(status))`: malformed.
pub(super) fn parse_head(buf: &mut BytesMut) -> Option<Result<Head, u16>> {
    let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut hs);
    let n = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return None,
        Err(httparse::Error::TooManyHeaders) => return Some(Err(431)),
        Err(_) => return Some(Err(400)),
    };
    let head = build_head(&req);
    buf.advance(n);
    Some(head)
}

pub(super) fn build_head(req: &httparse::Request<'_, '_>) -> Result<Head, u16> {
    let method = Method::from_bytes(req.method.unwrap_or_default().as_bytes()).map_err(|_| 400u16)?;
    let uri: Uri = req.path.unwrap_or_default().parse().map_err(|_| 400u16)?;
    let version = if req.version == Some(1) { Version::HTTP_11 } else { Version::HTTP_10 };
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|_| 400u16)?;
        let value = HeaderValue::from_bytes(h.value).map_err(|_| 400u16)?;
        headers.append(name, value);
    }
    let mut chunked = false;
    let mut te_seen = false;
    for v in headers.get_all(header::TRANSFER_ENCODING) {
        te_seen = true;
        let s = v.to_str().map_err(|_| 400u16)?;
        // Only the last coding may be (and must be) chunked; other codings are not supported.
        chunked =
            s.split(',').map(str::trim).rfind(|t| !t.is_empty()).is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    }
    let mut length: Option<u64> = None;
    for v in headers.get_all(header::CONTENT_LENGTH) {
        for part in v.to_str().map_err(|_| 400u16)?.split(',') {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(400);
            }
            let n: u64 = part.parse().map_err(|_| 400u16)?;
            if length.is_some_and(|l| l != n) {
                return Err(400);
            }
            length = Some(n);
        }
    }
    let framing = match (te_seen, chunked, length) {
        (true, false, _) => return Err(501),
        // Both framings at once is a request-smuggling pattern: refuse it.
        (true, true, Some(_)) => return Err(400),
        (true, true, None) if version == Version::HTTP_10 => return Err(400),
        (true, true, None) => Framing::Chunked(Chunk::Size),
        (false, _, Some(n)) => Framing::Length(n),
        (false, _, None) => Framing::Length(0),
    };
    let (mut close, mut ka) = (false, false);
    for v in headers.get_all(header::CONNECTION) {
        for t in v.to_str().unwrap_or_default().split(',') {
            let t = t.trim();
            close |= t.eq_ignore_ascii_case("close");
            ka |= t.eq_ignore_ascii_case("keep-alive");
        }
    }
    let keep_alive = if version == Version::HTTP_11 { !close } else { ka && !close };
    let expect_continue = version == Version::HTTP_11
        && framing != Framing::Length(0)
        && headers.get(header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let (mut parts, ()) = Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = version;
    parts.headers = headers;
    Ok(Head { parts, framing, keep_alive, expect_continue })
}

pub(super) enum HeadResult {
    Head(Box<Head>),
    /// Malformed or too large: answer with this status and close.
    Bad(u16),
    /// EOF, timeout, shutdown or an I/O error: close.
    Close,
}

pub(super) async fn read_head(
    st: &State,
    io: &Conn,
    buf: &mut BytesMut,
    stop: &mut watch::Receiver<bool>,
    shed: &mut watch::Receiver<u64>,
) -> HeadResult {
    let deadline = tokio::time::Instant::now() + st.cfg.header_timeout;
    let max = st.cfg.read_buffer_max.max(8192);
    let idle_since = st.now_ms();
    loop {
        // Empty lines before a request line are ignored (RFC 9112 section 2.2).
        let skip = buf.iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
        buf.advance(skip);
        if !buf.is_empty() {
            match parse_head(buf) {
                Some(Ok(h)) => return HeadResult::Head(Box::new(h)),
                Some(Err(status)) => return HeadResult::Bad(status),
                None if buf.len() >= max => return HeadResult::Bad(431),
                None => {}
            }
        }
        if buf.is_empty() && *stop.borrow() {
            return HeadResult::Close;
        }
        let idle = buf.is_empty();
        let r = tokio::select! {
            r = read_more(io, buf, 8192) => r,
            _ = tokio::time::sleep_until(deadline) => return HeadResult::Close,
            _ = stop.changed(), if idle => return HeadResult::Close,
            // Too many connections: the server sheds those waiting for a head since before the
            // cutoff, silent or with part of a head sent (a client sends its head at once, so
            // one still incomplete after a second is as idle as a silent one, and dribbling
            // bytes does not keep it).
            _ = shed.changed() => {
                if idle_since < *shed.borrow_and_update() {
                    return HeadResult::Close;
                }
                continue;
            }
        };
        match r {
            Ok(0) | Err(_) => return HeadResult::Close,
            Ok(_) => {}
        }
    }
}
