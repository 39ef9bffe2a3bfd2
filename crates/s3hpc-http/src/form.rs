//! A streaming `multipart/form-data` reader (RFC 7578) for POST object: the small fields before
//! the file are read into memory (bounded), the file field is handed on as a stream that ends
//! at its closing boundary, so a file of any size is never buffered whole. A body that ends
//! before the file's closing boundary ends that stream with an error (nothing is published).

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use memchr::memmem::Finder;

use s3hpc_core::{ByteStream, Error, ErrorCode, Result};

/// Most bytes a part's header block may have.
const MAX_PART_HEAD: usize = 8 * 1024;

fn malformed(msg: &str) -> Error {
    Error::new(
        ErrorCode::MalformedPOSTRequest,
        format!("{} ({msg})", ErrorCode::MalformedPOSTRequest.default_message()),
    )
}

/// The boundary of a `multipart/form-data` Content-Type, `None` if it is not one.
pub(crate) fn boundary(content_type: &str) -> Option<String> {
    let mut it = content_type.split(';');
    if !it.next()?.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    it.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_string())
    })
    .filter(|b| !b.is_empty() && b.len() <= 70)
}

/// One part's head: its field name, the file name if it has one, and its Content-Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartHead {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
}

pub(crate) struct FormReader {
    stream: ByteStream,
    buf: BytesMut,
    /// `\r\n--boundary`: what ends every part.
    delim: Vec<u8>,
    eof: bool,
    /// Bytes read from the stream so far.
    pub read: u64,
}

impl FormReader {
    pub(crate) fn new(stream: ByteStream, boundary: &str) -> Self {
        // The body's first boundary has no CRLF in front: pretend it had.
        let mut buf = BytesMut::with_capacity(64 * 1024);
        buf.extend_from_slice(b"\r\n");
        FormReader { stream, buf, delim: format!("\r\n--{boundary}").into_bytes(), eof: false, read: 0 }
    }

    /// Read more from the body; `false` at its end.
    async fn fill(&mut self) -> Result<bool> {
        if self.eof {
            return Ok(false);
        }
        match self.stream.next().await {
            Some(Ok(b)) => {
                self.read += b.len() as u64;
                self.buf.extend_from_slice(&b);
                Ok(true)
            }
            Some(Err(e)) => Err(Error::from(e)),
            None => {
                self.eof = true;
                Ok(false)
            }
        }
    }

    /// Skip to just past the first boundary (anything before it is the preamble).
    pub(crate) async fn start(&mut self) -> Result<()> {
        let f = Finder::new(&self.delim).into_owned();
        loop {
            if let Some(i) = f.find(&self.buf) {
                self.buf.advance(i + self.delim.len());
                return Ok(());
            }
            // Keep what could be the start of the boundary.
            let keep = self.delim.len().min(self.buf.len());
            let drop = self.buf.len() - keep;
            self.buf.advance(drop);
            if self.buf.len() > MAX_PART_HEAD + self.delim.len() || !self.fill().await? {
                return Err(malformed("no boundary"));
            }
        }
    }

    /// Called just past a boundary: the next part's head, or `None` after the closing one.
    pub(crate) async fn next_part(&mut self) -> Result<Option<PartHead>> {
        while self.buf.len() < 2 {
            if !self.fill().await? {
                return Err(malformed("the body ends after a boundary"));
            }
        }
        if self.buf.starts_with(b"--") {
            return Ok(None);
        }
        let f = Finder::new(b"\r\n\r\n").into_owned();
        let end = loop {
            // The boundary line may carry trailing white space before its CRLF.
            if let Some(i) = f.find(&self.buf) {
                break i;
            }
            if self.buf.len() > MAX_PART_HEAD {
                return Err(malformed("part headers too long"));
            }
            if !self.fill().await? {
                return Err(malformed("the body ends inside part headers"));
            }
        };
        let head = self.buf.split_to(end + 4);
        let text = std::str::from_utf8(&head).map_err(|_| malformed("part headers are not UTF-8"))?;
        let mut lines = text.split("\r\n");
        // The rest of the boundary line: only white space.
        if !lines.next().unwrap_or("").trim().is_empty() {
            return Err(malformed("text after a boundary"));
        }
        let (mut name, mut filename, mut content_type) = (None, None, None);
        for l in lines.filter(|l| !l.is_empty()) {
            let (k, v) = l.split_once(':').ok_or_else(|| malformed("a part header without ':'"))?;
            let k = k.trim();
            if k.eq_ignore_ascii_case("content-disposition") {
                let mut ps = v.split(';');
                if !ps.next().unwrap_or("").trim().eq_ignore_ascii_case("form-data") {
                    return Err(malformed("a part that is not form-data"));
                }
                for p in ps {
                    let Some((pk, pv)) = p.split_once('=') else { continue };
                    let pv = pv.trim();
                    let pv = pv.strip_prefix('"').and_then(|x| x.strip_suffix('"')).unwrap_or(pv).to_string();
                    match pk.trim().to_ascii_lowercase().as_str() {
                        "name" => name = Some(pv),
                        "filename" => filename = Some(pv),
                        _ => {}
                    }
                }
            } else if k.eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_string());
            }
        }
        let name = name.ok_or_else(|| malformed("a part without a name"))?;
        Ok(Some(PartHead { name, filename, content_type }))
    }

    /// The current part's value, at most `limit` bytes (else `too_large`), ending past the next
    /// boundary.
    pub(crate) async fn value(&mut self, limit: usize, too_large: impl Fn() -> Error) -> Result<Bytes> {
        let f = Finder::new(&self.delim).into_owned();
        loop {
            if let Some(i) = f.find(&self.buf) {
                if i > limit {
                    return Err(too_large());
                }
                let v = self.buf.split_to(i).freeze();
                self.buf.advance(self.delim.len());
                return Ok(v);
            }
            if self.buf.len() > limit + self.delim.len() {
                return Err(too_large());
            }
            if !self.fill().await? {
                return Err(malformed("the body ends inside a field"));
            }
        }
    }

    /// The current part's bytes as a stream that ends at the next boundary, and fails if the
    /// body ends before it. The rest of the body (the parts after it) is left unread.
    pub(crate) fn into_stream(self) -> ByteStream {
        let finder = Finder::new(&self.delim).into_owned();
        Box::pin(futures::stream::unfold(Some((self, finder)), |st| async move {
            let (mut r, f) = st?;
            loop {
                if let Some(i) = f.find(&r.buf) {
                    let v = r.buf.split_to(i).freeze();
                    return if v.is_empty() { None } else { Some((Ok(v), None)) };
                }
                // Everything but what could be the start of the boundary can go.
                let keep = r.delim.len() - 1;
                if r.buf.len() > keep + 64 * 1024 || (r.eof && r.buf.len() > keep) {
                    let n = r.buf.len() - keep;
                    let v = r.buf.split_to(n).freeze();
                    return Some((Ok(v), Some((r, f))));
                }
                match r.fill().await {
                    Ok(true) => {}
                    Ok(false) => {
                        let e = malformed("the body ends inside the file");
                        return Some((Err(std::io::Error::from(e)), None));
                    }
                    Err(e) => return Some((Err(std::io::Error::from(e)), None)),
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(chunks: Vec<Vec<u8>>) -> ByteStream {
        Box::pin(futures::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c)))))
    }

    fn form(file: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nuser/${filename}\r\n");
        b.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n");
        b.extend_from_slice(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\nContent-Type: text/plain\r\n\r\n",
        );
        b.extend_from_slice(file);
        b.extend_from_slice(b"\r\n--XyZ--\r\n");
        b
    }

    async fn parse(chunks: Vec<Vec<u8>>) -> Result<(Vec<(String, Bytes)>, PartHead, Vec<u8>)> {
        let mut r = FormReader::new(body(chunks), "XyZ");
        r.start().await?;
        let mut fields = Vec::new();
        loop {
            let h = r.next_part().await?.ok_or_else(|| malformed("no file"))?;
            if h.filename.is_some() {
                let mut s = r.into_stream();
                let mut data = Vec::new();
                while let Some(c) = s.next().await {
                    data.extend_from_slice(&c.map_err(Error::from)?);
                }
                return Ok((fields, h, data));
            }
            fields.push((h.name, r.value(100, || Error::code(ErrorCode::MaxPostPreDataLengthExceededError)).await?));
        }
    }

    #[tokio::test]
    async fn fields_and_file_in_any_split() {
        // File content with near-boundaries in it.
        let file = b"line\r\n--XyY\r\n--XY\r\n--Xy\r\n-XyZ\n--XyZ\r\r\nend\r\n".repeat(3);
        let whole = form(&file);
        for step in [1, 2, 3, 7, 64, whole.len()] {
            let chunks: Vec<Vec<u8>> = whole.chunks(step).map(<[u8]>::to_vec).collect();
            let (fields, head, data) = parse(chunks).await.unwrap();
            assert_eq!(fields.len(), 2, "step {step}");
            assert_eq!((fields[0].0.as_str(), &fields[0].1[..]), ("key", &b"user/${filename}"[..]));
            assert_eq!(&fields[1].1[..], b"");
            assert_eq!(head.filename.as_deref(), Some("a b.txt"));
            assert_eq!(head.content_type.as_deref(), Some("text/plain"));
            assert_eq!(data, file, "step {step}");
        }
    }

    #[tokio::test]
    async fn a_body_cut_short_is_an_error_never_a_shorter_file() {
        let whole = form(b"0123456789");
        for cut in [whole.len() - 12, whole.len() - 9, 40] {
            let e = parse(vec![whole[..cut].to_vec()]).await.unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedPOSTRequest, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn limits_and_garbage() {
        let big = format!("--XyZ\r\nContent-Disposition: form-data; name=\"k\"\r\n\r\n{}\r\n--XyZ--", "v".repeat(500));
        assert_eq!(parse(vec![big.into_bytes()]).await.unwrap_err().code, ErrorCode::MaxPostPreDataLengthExceededError);
        for junk in [&b"no boundary at all"[..], b"--XyZ\r\nX: y\r\n\r\nv\r\n--XyZ--", b"--XyZ\r\nnot a header\r\n\r\n"]
        {
            assert_eq!(parse(vec![junk.to_vec()]).await.unwrap_err().code, ErrorCode::MalformedPOSTRequest);
        }
        assert_eq!(boundary("multipart/form-data; boundary=\"ab c\"").as_deref(), Some("ab c"));
        assert_eq!(boundary("Multipart/Form-Data;boundary=x"), Some("x".into()));
        assert_eq!(boundary("application/x-www-form-urlencoded"), None);
    }
}
