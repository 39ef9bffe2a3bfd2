//! Reads: a per-handle prefetcher. A reader that keeps going forward gets ranged GETs issued
//! ahead of it, in parallel, over a window that doubles each time it consumes a chunk (up to
//! `max_read_window`), with chunks that grow too (up to `max_read_chunk`). A read elsewhere is
//! fetched as asked, and the prefetch starts over if the reader then goes on sequentially.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::future::{FutureExt, Shared};
use s3hpc_core::{Body, ByteRange, Conditions, DynStore, Error, GetObjectRequest};

/// First prefetch chunk and window: small, so that reading the head of a file stays cheap.
const FIRST_CHUNK: u64 = 256 << 10;
const FIRST_WINDOW: u64 = 1 << 20;

pub type ChunkResult = Result<Bytes, Arc<Error>>;
type ChunkFuture = Shared<Pin<Box<dyn Future<Output = ChunkResult> + Send>>>;

struct Chunk {
    start: u64,
    end: u64,
    data: ChunkFuture,
    abort: tokio::task::AbortHandle,
}

/// Where the bytes of one read come from.
pub enum Plan {
    /// Nothing to read (at or past the end).
    Empty,
    /// From prefetched chunks: `(chunk future, chunk start)` in order, covering `[offset, end)`.
    Chunks { parts: Vec<(ChunkFuture, u64)>, offset: u64, end: u64 },
    /// One ranged GET for exactly this range.
    Direct { offset: u64, end: u64 },
}

pub struct Reader {
    pub key: String,
    pub etag: String,
    pub size: u64,
    chunks: VecDeque<Chunk>,
    fetch_end: u64,
    next_chunk: u64,
    window: u64,
    last_end: u64,
    max_chunk: u64,
    max_window: u64,
}

impl Reader {
    pub fn new(key: String, etag: String, size: u64, max_chunk: u64, max_window: u64) -> Reader {
        Reader {
            key,
            etag,
            size,
            chunks: VecDeque::new(),
            fetch_end: 0,
            next_chunk: FIRST_CHUNK.min(max_chunk),
            window: FIRST_WINDOW.min(max_window),
            last_end: 0,
            max_chunk,
            max_window,
        }
    }

    /// The object was renamed (its directory was): read `key` from now on. Ranges prefetched
    /// under the old key are dropped.
    pub fn rekey(&mut self, key: String) {
        self.key = key;
        self.reset(self.last_end);
    }

    fn reset(&mut self, at: u64) {
        for c in self.chunks.drain(..) {
            c.abort.abort();
        }
        self.fetch_end = at;
        self.next_chunk = FIRST_CHUNK.min(self.max_chunk);
        self.window = FIRST_WINDOW.min(self.max_window);
    }

    /// Decide where a read of `size` bytes at `offset` comes from, starting GETs as needed.
    pub fn plan(
        &mut self,
        offset: u64,
        size: u32,
        store: &DynStore,
        bucket: &str,
        rt: &tokio::runtime::Handle,
    ) -> Plan {
        let end = offset.saturating_add(size as u64).min(self.size);
        if offset >= end {
            return Plan::Empty;
        }
        let front = self.chunks.front().map(|c| c.start);
        let hit = front.is_some_and(|f| offset >= f && offset < self.fetch_end);
        if !hit {
            if offset == self.last_end {
                // Sequential, but not (or no longer) prefetched: start the window here.
                self.reset(offset);
            } else {
                // Random: fetch what is asked. Keep the prefetched chunks when the read is near
                // them (the kernel's readahead can arrive slightly out of order).
                let near =
                    front.is_some_and(|f| offset + self.max_chunk >= f && offset <= self.fetch_end + self.max_chunk);
                if !near {
                    self.reset(offset);
                }
                self.last_end = end;
                return Plan::Direct { offset, end };
            }
        }
        // Chunks wholly before the read are consumed: the reader is streaming, widen the window.
        while self.chunks.front().is_some_and(|c| c.end <= offset) {
            self.chunks.pop_front();
            self.window = (self.window * 2).min(self.max_window);
            self.next_chunk = (self.next_chunk * 2).min(self.max_chunk);
        }
        let want = offset.saturating_add(self.window).max(end).min(self.size);
        while self.fetch_end < want {
            let start = self.fetch_end;
            let stop = start.saturating_add(self.next_chunk).min(self.size);
            let task = rt.spawn(get_range(
                store.clone(),
                bucket.to_string(),
                self.key.clone(),
                self.etag.clone(),
                start,
                stop,
            ));
            let abort = task.abort_handle();
            let fut: Pin<Box<dyn Future<Output = ChunkResult> + Send>> = Box::pin(async move {
                match task.await {
                    Ok(r) => r.map_err(Arc::new),
                    Err(e) => Err(Arc::new(Error::internal(format!("prefetch task: {e}")))),
                }
            });
            self.chunks.push_back(Chunk { start, end: stop, data: fut.shared(), abort });
            self.fetch_end = stop;
        }
        self.last_end = end;
        let parts =
            self.chunks.iter().filter(|c| c.start < end && c.end > offset).map(|c| (c.data.clone(), c.start)).collect();
        Plan::Chunks { parts, offset, end }
    }

    /// A chunk failed: start over at the next read.
    pub fn failed(&mut self) {
        let at = self.last_end;
        self.reset(at);
        self.last_end = u64::MAX;
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        for c in self.chunks.drain(..) {
            c.abort.abort();
        }
    }
}

/// The bytes `[offset, end)` out of the planned chunks, if they have all arrived.
pub fn assemble_ready(parts: &[(ChunkFuture, u64)], offset: u64, end: u64) -> Option<ChunkResult> {
    let mut ready = Vec::with_capacity(parts.len());
    for (f, start) in parts {
        ready.push((f.peek()?.clone(), *start));
    }
    Some(assemble(ready, offset, end))
}

/// Wait for the planned chunks and cut `[offset, end)` out of them.
pub async fn assemble_wait(parts: Vec<(ChunkFuture, u64)>, offset: u64, end: u64) -> ChunkResult {
    let mut ready = Vec::with_capacity(parts.len());
    for (f, start) in parts {
        ready.push((f.await, start));
    }
    assemble(ready, offset, end)
}

fn assemble(parts: Vec<(ChunkResult, u64)>, offset: u64, end: u64) -> ChunkResult {
    if parts.len() == 1 {
        let (r, start) = parts.into_iter().next().expect("one part");
        let b = r?;
        return Ok(slice(&b, offset - start, end - start));
    }
    let mut out = BytesMut::with_capacity((end - offset) as usize);
    for (r, start) in parts {
        let b = r?;
        let lo = offset.max(start) - start;
        let hi = (end.min(start + b.len() as u64)).saturating_sub(start);
        if lo < hi {
            out.extend_from_slice(&b[lo as usize..hi as usize]);
        }
    }
    if out.len() as u64 != end - offset {
        return Err(Arc::new(Error::internal("short read: the object ended before its size")));
    }
    Ok(out.freeze())
}

fn slice(b: &Bytes, lo: u64, hi: u64) -> Bytes {
    let hi = (hi as usize).min(b.len());
    let lo = (lo as usize).min(hi);
    b.slice(lo..hi)
}

/// GET `[offset, end)` of `key` as of `etag`, retried on transport errors (a restarting gateway).
pub async fn get_range(
    store: DynStore,
    bucket: String,
    key: String,
    etag: String,
    offset: u64,
    end: u64,
) -> Result<Bytes, Error> {
    let mut attempt = 0u32;
    loop {
        match get_once(&store, &bucket, &key, &etag, offset, end).await {
            Ok(b) => return Ok(b),
            Err(e) if attempt < 4 && crate::errors::retryable(&e) => {
                attempt += 1;
                tracing::debug!("s3hpc mount: GET {key} retry {attempt}: {e:?}");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn get_once(
    store: &DynStore,
    bucket: &str,
    key: &str,
    etag: &str,
    offset: u64,
    end: u64,
) -> Result<Bytes, Error> {
    let req = GetObjectRequest {
        version_id: None,
        range: Some(ByteRange::FromTo(offset, end - 1)),
        part_number: None,
        conditions: Conditions { if_match: (!etag.is_empty()).then(|| etag.to_string()), ..Default::default() },
    };
    let out = store.get_object(bucket, key, req).await?;
    let want = (end - offset) as usize;
    match out.body {
        // Already whole in memory: no copy.
        Body::Bytes(b) if b.len() == want => return Ok(b),
        // A region of the gateway's own file (the binary protocol on a unix socket passes the
        // descriptor): one pread into the buffer, not a chunked stream copied again.
        Body::File { file, offset: at, len } if len == want as u64 => {
            return tokio::task::spawn_blocking(move || read_file_range(&file, at, want))
                .await
                .map_err(|e| Error::internal(format!("GET {key}: read task: {e}")))?
                .map_err(|e| Error::internal(format!("GET {key}: {e}")));
        }
        _ => {}
    }
    let mut buf = BytesMut::with_capacity(want);
    let mut s = out.body.into_stream();
    while let Some(chunk) = s.next().await {
        let chunk = chunk.map_err(Error::from)?;
        buf.extend_from_slice(&chunk);
        if buf.len() > want {
            return Err(Error::internal(format!("GET {key}: server sent more than the {want} bytes asked")));
        }
    }
    if buf.len() != want {
        return Err(Error::internal(format!("GET {key}: {} of {want} bytes (object shorter than listed?)", buf.len())));
    }
    Ok(buf.freeze())
}

/// `len` bytes of `file` at `at`, read straight into one buffer.
fn read_file_range(file: &std::fs::File, at: u64, len: usize) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    // Zeroed by the allocator (fresh pages for large buffers), not by a pass over them.
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        match file.read_at(&mut buf[done..], at + done as u64) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "object file shorter than its size",
                ));
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3hpc_core::{PutObjectRequest, Store};

    async fn store_with(data: &[u8]) -> (DynStore, String) {
        let s = s3hpc_core::memory::MemoryStore::new();
        s.create_bucket("bkt").await.unwrap();
        let out = s.put_object("bkt", "k", PutObjectRequest::default(), Body::from(data.to_vec())).await.unwrap();
        (Arc::new(s), out.etag)
    }

    async fn read(r: &mut Reader, store: &DynStore, off: u64, n: u32) -> (Bytes, bool) {
        let rt = tokio::runtime::Handle::current();
        match r.plan(off, n, store, "bkt", &rt) {
            Plan::Empty => (Bytes::new(), false),
            Plan::Chunks { parts, offset, end } => (assemble_wait(parts, offset, end).await.unwrap(), true),
            Plan::Direct { offset, end } => {
                let b = get_range(store.clone(), "bkt".into(), "k".into(), r.etag.clone(), offset, end).await.unwrap();
                (b, false)
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sequential_prefetches_random_fetches_directly() {
        let data: Vec<u8> = (0..(20u32 << 20)).map(|i| (i % 251) as u8).collect();
        let (store, etag) = store_with(&data).await;
        let mut r = Reader::new("k".into(), etag, data.len() as u64, 4 << 20, 16 << 20);
        let mut off = 0u64;
        while off < data.len() as u64 {
            let (b, prefetched) = read(&mut r, &store, off, 128 << 10).await;
            assert!(prefetched, "sequential read at {off} was not served from the prefetch window");
            assert_eq!(&b[..], &data[off as usize..off as usize + b.len()]);
            off += b.len() as u64;
        }
        assert_eq!(r.window, 16 << 20, "window grows to its maximum while streaming");
        assert_eq!(read(&mut r, &store, off, 4096).await.0.len(), 0, "EOF");
        // far away: fetched as asked, and the window starts over
        let (b, prefetched) = read(&mut r, &store, 3 << 20, 4096).await;
        assert!(!prefetched);
        assert_eq!(&b[..], &data[3 << 20..(3 << 20) + 4096]);
        assert!(r.chunks.is_empty());
        // reading on from there is sequential again
        let (b, prefetched) = read(&mut r, &store, (3 << 20) + 4096, 10).await;
        assert!(prefetched);
        assert_eq!(&b[..], &data[(3 << 20) + 4096..(3 << 20) + 4106]);
        // a read spanning two chunks is stitched together
        let (b, _) = read(&mut r, &store, (3 << 20) + 4106 + (250 << 10), 1 << 20).await;
        let o = (3 << 20) + 4106 + (250 << 10);
        assert_eq!(&b[..], &data[o..o + (1 << 20)]);
    }

    #[test]
    fn file_region_is_read_whole_or_fails_short() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let path = std::env::temp_dir().join(format!("s3hpc-mount-read-{}", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let b = read_file_range(&f, 1000, 5000).unwrap();
        assert_eq!(&b[..], &data[1000..6000]);
        let e = read_file_range(&f, 9000, 2000).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changed_object_fails_instead_of_mixing_versions() {
        let (store, etag) = store_with(b"first version").await;
        store.put_object("bkt", "k", PutObjectRequest::default(), Body::from(&b"second version!"[..])).await.unwrap();
        let e = get_range(store.clone(), "bkt".into(), "k".into(), etag, 0, 5).await.unwrap_err();
        assert_eq!(e.code, s3hpc_core::ErrorCode::PreconditionFailed);
    }
}
