//! Deterministic object content: every object's bytes are a window of one seeded random pool,
//! starting at an offset derived from the key. Bodies are zero-copy slices of the pool, and what
//! is read back can be verified (`--verify`) without storing anything per object.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use rand::{RngCore, SeedableRng};
use s3hpc_core::{Body, Error, ErrorCode, Result};

/// Pool period: a little over 1 MiB and odd, so windows of different keys rarely align.
pub const PERIOD: usize = (1 << 20) + 4093;

pub struct Pattern {
    /// `2 * PERIOD` bytes: any window of length <= PERIOD starting below PERIOD is contiguous.
    pool: Bytes,
}

static PATTERN: OnceLock<Arc<Pattern>> = OnceLock::new();

/// FNV-1a, 64 bit: stable across runs and platforms.
pub fn key_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Pattern {
    pub fn global() -> Arc<Pattern> {
        PATTERN
            .get_or_init(|| {
                let mut rng = rand::rngs::StdRng::seed_from_u64(0x5333_4850_4320_4245);
                let mut v = vec![0u8; PERIOD];
                rng.fill_bytes(&mut v);
                let mut pool = Vec::with_capacity(2 * PERIOD);
                pool.extend_from_slice(&v);
                pool.extend_from_slice(&v);
                Arc::new(Pattern { pool: Bytes::from(pool) })
            })
            .clone()
    }

    fn start(key: &str) -> usize {
        (key_hash(key) % PERIOD as u64) as usize
    }

    /// The body of object `key` with `size` bytes.
    pub fn body(&self, key: &str, size: u64) -> Body {
        if size == 0 {
            return Body::Empty;
        }
        let o = Self::start(key);
        if size <= PERIOD as u64 {
            return Body::Bytes(self.pool.slice(o..o + size as usize));
        }
        let pool = self.pool.clone();
        let chunks = size.div_ceil(PERIOD as u64);
        let stream = futures::stream::iter((0..chunks).map(move |i| {
            let pos = i * PERIOD as u64;
            let n = (size - pos).min(PERIOD as u64) as usize;
            let s = ((o as u64 + pos) % PERIOD as u64) as usize;
            Ok::<Bytes, std::io::Error>(pool.slice(s..s + n))
        }));
        Body::Stream(Box::pin(stream))
    }

    /// Check that `chunk`, found at byte `pos` of object `key`, holds the expected bytes.
    pub fn check(&self, key: &str, pos: u64, chunk: &[u8]) -> bool {
        let o = Self::start(key) as u64;
        let mut done = 0usize;
        while done < chunk.len() {
            let s = ((o + pos + done as u64) % PERIOD as u64) as usize;
            let n = (chunk.len() - done).min(PERIOD);
            if self.pool[s..s + n] != chunk[done..done + n] {
                return false;
            }
            done += n;
        }
        true
    }
}

/// What to check while draining a GET body.
pub struct Expect<'a> {
    pub pattern: &'a Pattern,
    pub key: &'a str,
    pub size: u64,
}

fn corrupt(key: &str, detail: String) -> Error {
    Error::new(ErrorCode::BadDigest, format!("verify: object {key}: {detail}")).with_resource(key.to_string())
}

const READ_BUF: usize = 1 << 20;

/// Read a body to the end, counting bytes and (with `expect`) verifying the content. Returns the
/// number of bytes and the delay until the first byte was available (measured from `t0`).
pub async fn drain(
    body: Body,
    expect: Option<Expect<'_>>,
    t0: std::time::Instant,
) -> Result<(u64, std::time::Duration)> {
    let mut first = None;
    let mut pos = 0u64;
    match body {
        Body::Empty => {}
        Body::Bytes(b) => {
            first = Some(t0.elapsed());
            if let Some(e) = &expect
                && !e.pattern.check(e.key, 0, &b)
            {
                return Err(corrupt(e.key, "content differs".into()));
            }
            pos = b.len() as u64;
        }
        Body::File { file, offset, len } => {
            first = Some(t0.elapsed());
            let (key, verify) = match &expect {
                Some(e) => (e.key.to_string(), true),
                None => (String::new(), false),
            };
            let pattern = Pattern::global();
            pos = tokio::task::spawn_blocking(move || -> Result<u64> {
                use std::os::unix::fs::FileExt;
                let mut buf = vec![0u8; READ_BUF.min(len.max(1) as usize)];
                let mut done = 0u64;
                while done < len {
                    let want = ((len - done) as usize).min(buf.len());
                    let n = file.read_at(&mut buf[..want], offset + done)?;
                    if n == 0 {
                        return Err(Error::new(ErrorCode::IncompleteBody, "object file ended early"));
                    }
                    if verify && !pattern.check(&key, done, &buf[..n]) {
                        return Err(corrupt(&key, format!("content differs near byte {done}")));
                    }
                    done += n as u64;
                }
                Ok(done)
            })
            .await
            .map_err(|e| Error::internal(format!("reader task failed: {e}")))??;
        }
        Body::Stream(mut s) => {
            use futures::StreamExt;
            while let Some(chunk) = s.next().await {
                let chunk = chunk?;
                if first.is_none() {
                    first = Some(t0.elapsed());
                }
                if let Some(e) = &expect
                    && !e.pattern.check(e.key, pos, &chunk)
                {
                    return Err(corrupt(e.key, format!("content differs near byte {pos}")));
                }
                pos += chunk.len() as u64;
            }
        }
    }
    if let Some(e) = &expect
        && pos != e.size
    {
        return Err(corrupt(e.key, format!("read {pos} bytes, expected {}", e.size)));
    }
    Ok((pos, first.unwrap_or_else(|| t0.elapsed())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pattern_roundtrip_and_detects_corruption() {
        let p = Pattern::global();
        for size in [0u64, 1, 4096, PERIOD as u64, PERIOD as u64 * 2 + 17] {
            let body = p.body("k/1", size);
            let bytes = body.collect().await.unwrap();
            assert_eq!(bytes.len() as u64, size);
            let t0 = std::time::Instant::now();
            let (n, _) =
                drain(Body::from(bytes.clone()), Some(Expect { pattern: &p, key: "k/1", size }), t0).await.unwrap();
            assert_eq!(n, size);
            if size > 0 {
                let mut bad = bytes.to_vec();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                let r = drain(Body::from(bad), Some(Expect { pattern: &p, key: "k/1", size }), t0).await;
                assert_eq!(r.unwrap_err().code, ErrorCode::BadDigest);
                // Another key's content does not verify as this one.
                let r = drain(Body::from(bytes), Some(Expect { pattern: &p, key: "k/2", size }), t0).await;
                assert!(r.is_err());
            }
        }
    }
}
