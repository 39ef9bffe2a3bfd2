//! Body adapters for uploads: exact-length enforcement, byte counting, and the aws-chunked
//! encoder with a checksum trailer (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use s3hpc_core::checksum::ChecksumHasher;
use s3hpc_core::{ByteStream, ChecksumAlgorithm, Error, ErrorCode, Expected};

/// A checksum that goes in the trailer: the expected value if the caller has one by the end of
/// the body, else the value computed while sending.
pub struct TrailerPlan {
    pub algorithm: ChecksumAlgorithm,
    pub expected: Option<Expected>,
}

fn incomplete(msg: String) -> std::io::Error {
    Error::new(ErrorCode::IncompleteBody, msg).into()
}

/// Fail the stream (so the request is aborted) unless it yields exactly `n` bytes.
pub fn exact_length(s: ByteStream, n: u64) -> ByteStream {
    let mut seen = 0u64;
    let mut done = false;
    Box::pin(s.map(Some).chain(futures::stream::once(async { None })).filter_map(move |item| {
        let out = if done {
            None
        } else {
            match item {
                Some(Ok(b)) => {
                    seen += b.len() as u64;
                    if seen > n {
                        done = true;
                        Some(Err(incomplete(format!("body is longer than the announced {n} bytes"))))
                    } else {
                        Some(Ok(b))
                    }
                }
                Some(Err(e)) => {
                    done = true;
                    Some(Err(e))
                }
                None if seen < n => {
                    done = true;
                    Some(Err(incomplete(format!("body had {seen} bytes, Content-Length announced {n}"))))
                }
                None => None,
            }
        };
        async move { out }
    }))
}

/// Count the bytes that pass.
pub fn counting(s: ByteStream, counter: Arc<AtomicU64>) -> ByteStream {
    Box::pin(s.inspect(move |r| {
        if let Ok(b) = r {
            counter.fetch_add(b.len() as u64, Ordering::Relaxed);
        }
    }))
}

/// aws-chunked framing (`hex-size\r\n data \r\n`, then `0\r\n`, the checksum trailer, `\r\n`).
/// Payload chunks are passed through without copying.
pub fn encode_unsigned_trailer(s: ByteStream, plan: TrailerPlan) -> ByteStream {
    Box::pin(TrailerEncoder {
        inner: s,
        hasher: Some(ChecksumHasher::new(plan.algorithm)),
        expected: plan.expected,
        name: plan.algorithm.header_name(),
        queue: std::collections::VecDeque::new(),
        ended: false,
    })
}

struct TrailerEncoder {
    inner: ByteStream,
    hasher: Option<ChecksumHasher>,
    expected: Option<Expected>,
    name: &'static str,
    queue: std::collections::VecDeque<Bytes>,
    ended: bool,
}

impl futures::Stream for TrailerEncoder {
    type Item = std::io::Result<Bytes>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            if let Some(b) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(b))) => {
                    if b.is_empty() {
                        continue;
                    }
                    if let Some(h) = this.hasher.as_mut() {
                        h.update(&b);
                    }
                    this.queue.push_back(Bytes::from(format!("{:x}\r\n", b.len())));
                    this.queue.push_back(b);
                    this.queue.push_back(Bytes::from_static(b"\r\n"));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    let computed = this.hasher.take().map(|h| h.finish().value).unwrap_or_default();
                    let value = this.expected.as_ref().and_then(|e| e.get()).map(str::to_string).unwrap_or(computed);
                    this.queue.push_back(Bytes::from(format!("0\r\n{}:{value}\r\n\r\n", this.name)));
                }
            }
        }
    }
}
