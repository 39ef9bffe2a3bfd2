//! Request and response bodies: the request body as a [`ByteStream`] whose disconnects and stalls
//! end in an `Err` (so the store publishes nothing), and the response body type. File bodies stay
//! files: the connection engine sends them with `sendfile(2)` (see [`crate::conn`]).

use std::io;
use std::time::Duration;

use bytes::Bytes;
use s3hpc_core::{Body, ByteStream};

pub use crate::conn::ReqBody;

/// The request body as a stream. A connection that closes early or breaks ends the stream with an
/// `Err` (`UnexpectedEof`, i.e. `IncompleteBody`); a body that stalls for `idle` ends with
/// `TimedOut` (`RequestTimeout`). Only a body that really ended ends the stream cleanly.
pub fn incoming_stream(body: ReqBody, idle: Duration) -> ByteStream {
    Box::pin(futures::stream::unfold(Some(body), move |st| async move {
        let mut body = st?;
        match tokio::time::timeout(idle, body.chunk()).await {
            Err(_) => {
                let e = io::Error::new(io::ErrorKind::TimedOut, "request body stalled");
                body.poison();
                Some((Err(e), None))
            }
            Ok(None) => None,
            Ok(Some(Ok(d))) => Some((Ok(d), Some(body))),
            Ok(Some(Err(e))) => {
                let e = io::Error::new(io::ErrorKind::UnexpectedEof, format!("request body: {e}"));
                Some((Err(e), None))
            }
        }
    }))
}

/// A response body.
pub enum RespBody {
    Empty,
    Full(Bytes),
    /// A stream of `len` bytes (`u64::MAX`: unknown, sent chunked).
    Stream(ByteStream, u64),
    /// `len` bytes of `file` from `offset`, sent with `sendfile(2)`.
    File {
        file: std::fs::File,
        offset: u64,
        len: u64,
    },
}

impl RespBody {
    pub fn full(b: impl Into<Bytes>) -> Self {
        let b = b.into();
        if b.is_empty() { RespBody::Empty } else { RespBody::Full(b) }
    }

    /// The body of a GET. Files are not read here: the connection engine sends them from the
    /// page cache with `sendfile(2)` on the blocking pool.
    pub fn from_store(body: Body) -> Self {
        match body {
            Body::Empty => RespBody::Empty,
            Body::Bytes(b) => RespBody::full(b),
            Body::Stream(s) => RespBody::Stream(s, u64::MAX),
            Body::File { len: 0, .. } => RespBody::Empty,
            Body::File { file, offset, len } => RespBody::File { file, offset, len },
        }
    }

    /// Attach the known length to a stream body.
    pub fn with_len(self, n: u64) -> Self {
        match self {
            RespBody::Stream(s, _) => RespBody::Stream(s, n),
            other => other,
        }
    }

    /// The body's length, when known.
    pub fn known_len(&self) -> Option<u64> {
        match self {
            RespBody::Empty => Some(0),
            RespBody::Full(b) => Some(b.len() as u64),
            RespBody::Stream(_, n) => (*n != u64::MAX).then_some(*n),
            RespBody::File { len, .. } => Some(*len),
        }
    }
}
