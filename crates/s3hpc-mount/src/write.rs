//! Writes: a file opened for writing streams out as it is written. Bytes gather into a part
//! buffer; every full part goes out as an UploadPart of one multipart upload (created with the
//! first full part) while the application goes on writing, with at most `max_upload_parts` parts
//! of the whole mount in flight (a write waits for a slot: memory stays bounded). Closing the
//! file (or fsync) sends the rest and completes the upload, so the object appears whole or not
//! at all; a file that never filled a part is one PUT.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::{FutureExt, Shared};
use s3hpc_core::{
    Body, CompletePart, Conditions, CreateMultipartRequest, DynStore, Error, ErrorCode, PutObjectOutput,
    PutObjectRequest, UploadPartRequest,
};
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinHandle;

/// What every writer of a mount shares.
pub struct WriteCtx {
    pub store: DynStore,
    pub bucket: String,
    pub rt: tokio::runtime::Handle,
    pub part_size: u64,
    pub slots: Arc<Semaphore>,
}

pub type Completion = Shared<Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>>>;

/// Why a write was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteError {
    /// Not at the end of what was written (S3 objects are written front to back).
    NotSequential,
    /// The upload was completed (close, fsync) or failed.
    Closed,
    Failed,
    /// More than 10,000 parts.
    TooLarge,
}

pub struct Writer {
    pub key: String,
    pub opener_pid: u32,
    ctx: Arc<WriteCtx>,
    buf: PartBuf,
    pub offset: u64,
    next_part: u32,
    upload_id: Arc<OnceCell<String>>,
    parts: Vec<JoinHandle<Result<CompletePart, Error>>>,
    failed: Arc<AtomicBool>,
    completion: Option<Completion>,
}

impl Writer {
    pub fn new(ctx: Arc<WriteCtx>, key: String, opener_pid: u32) -> Writer {
        Writer {
            key,
            opener_pid,
            ctx,
            buf: PartBuf::None,
            offset: 0,
            next_part: 1,
            upload_id: Arc::new(OnceCell::new()),
            parts: Vec::new(),
            failed: Arc::new(AtomicBool::new(false)),
            completion: None,
        }
    }

    pub fn is_completing(&self) -> bool {
        self.completion.is_some()
    }

    /// Append `data` written at `offset`. `Ok(Some(rx))`: a part is waiting for an upload slot;
    /// answer the write when `rx` fires (back-pressure on the application).
    pub fn write(
        &mut self,
        offset: u64,
        data: &[u8],
    ) -> Result<Option<tokio::sync::oneshot::Receiver<()>>, WriteError> {
        if self.completion.is_some() {
            return Err(WriteError::Closed);
        }
        if self.failed.load(Ordering::Relaxed) {
            return Err(WriteError::Failed);
        }
        if offset != self.offset {
            return Err(WriteError::NotSequential);
        }
        let part = self.ctx.part_size as usize;
        if self.offset + data.len() as u64 > self.ctx.part_size * s3hpc_core::MAX_PART_NUMBER as u64 {
            return Err(WriteError::TooLarge);
        }
        let mut rest = data;
        let mut wait = None;
        while !rest.is_empty() {
            if let PartBuf::None = self.buf {
                self.buf = PartBuf::new(&self.ctx, part);
            }
            let n = self.buf.append(&rest[..rest.len().min(part - self.buf.len())]);
            rest = &rest[n..];
            if self.buf.len() == part {
                let body = self.buf.take();
                if let Some(rx) = self.send_part(body) {
                    wait = Some(rx);
                }
            }
        }
        self.offset += data.len() as u64;
        Ok(wait)
    }

    fn send_part(&mut self, body: Bytes) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let n = self.next_part;
        self.next_part += 1;
        let (ctx, key, id, failed) = (self.ctx.clone(), self.key.clone(), self.upload_id.clone(), self.failed.clone());
        let permit = self.ctx.slots.clone().try_acquire_owned().ok();
        let (tx, rx) = if permit.is_some() {
            (None, None)
        } else {
            let (tx, rx) = tokio::sync::oneshot::channel();
            (Some(tx), Some(rx))
        };
        let task = self.ctx.rt.spawn(async move {
            let _permit = match permit {
                Some(p) => p,
                None => {
                    ctx.slots.clone().acquire_owned().await.map_err(|_| Error::internal("mount is shutting down"))?
                }
            };
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
            let r = upload_part(&ctx, &key, &id, n, body).await;
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        });
        self.parts.push(task);
        rx
    }

    /// Finish the object (idempotent: every caller gets the same outcome).
    pub fn complete(&mut self) -> Completion {
        if let Some(c) = &self.completion {
            return c.clone();
        }
        let ctx = self.ctx.clone();
        let key = self.key.clone();
        let id = self.upload_id.clone();
        let rest = self.buf.take();
        let len = self.offset;
        let fut: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> = if self.parts.is_empty() {
            Box::pin(async move { put_small(&ctx, &key, rest, len).await.map_err(Arc::new) })
        } else {
            if !rest.is_empty() {
                self.send_part(rest);
            }
            let parts = std::mem::take(&mut self.parts);
            let task =
                self.ctx.rt.spawn(async move { finish_multipart(&ctx, &key, &id, parts).await.map_err(Arc::new) });
            Box::pin(async move {
                match task.await {
                    Ok(r) => r,
                    Err(e) => Err(Arc::new(Error::internal(format!("upload task: {e}")))),
                }
            })
        };
        let c = fut.shared();
        self.completion = Some(c.clone());
        c
    }
}

/// The part being filled: memory the store lends (the binary protocol's upload slots, which then
/// reach the gateway without a copy) or our own.
enum PartBuf {
    None,
    Lent(s3hpc_core::BodyBuffer, usize),
    Own(BytesMut),
}

impl PartBuf {
    fn new(ctx: &WriteCtx, part: usize) -> PartBuf {
        match ctx.store.body_buffer(part) {
            Some(b) if b.len() >= part => PartBuf::Lent(b, 0),
            _ => PartBuf::Own(BytesMut::with_capacity(part)),
        }
    }

    fn len(&self) -> usize {
        match self {
            PartBuf::None => 0,
            PartBuf::Lent(_, n) => *n,
            PartBuf::Own(b) => b.len(),
        }
    }

    /// Copy in as much of `data` as fits; returns how much.
    fn append(&mut self, data: &[u8]) -> usize {
        match self {
            PartBuf::None => 0,
            PartBuf::Lent(b, n) => {
                let k = data.len().min(b.len() - *n);
                b[*n..*n + k].copy_from_slice(&data[..k]);
                *n += k;
                k
            }
            PartBuf::Own(b) => {
                b.extend_from_slice(data);
                data.len()
            }
        }
    }

    /// The filled bytes; the buffer is empty afterwards.
    fn take(&mut self) -> Bytes {
        match std::mem::replace(self, PartBuf::None) {
            PartBuf::None => Bytes::new(),
            PartBuf::Lent(b, n) => b.freeze().slice(..n),
            PartBuf::Own(b) => b.freeze(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Never completed (unmount, a handle the kernel dropped): abort a started upload.
        if self.completion.is_none() && !self.parts.is_empty() {
            let parts = std::mem::take(&mut self.parts);
            let (ctx, key, id) = (self.ctx.clone(), self.key.clone(), self.upload_id.clone());
            self.ctx.rt.spawn(async move {
                for p in parts {
                    let _ = p.await;
                }
                if let Some(id) = id.get() {
                    let _ = ctx.store.abort_multipart_upload(&ctx.bucket, &key, id).await;
                }
            });
        }
    }
}

async fn retry<T, F, Fut>(what: &str, key: &str, mut f: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut attempt = 0u32;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 3 && crate::errors::retryable(&e) => {
                attempt += 1;
                tracing::debug!("s3hpc mount: {what} {key} retry {attempt}: {e:?}");
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn upload_part(
    ctx: &WriteCtx,
    key: &str,
    id: &OnceCell<String>,
    n: u32,
    body: Bytes,
) -> Result<CompletePart, Error> {
    let upload_id = id
        .get_or_try_init(|| async {
            retry("CreateMultipartUpload", key, || {
                ctx.store.create_multipart_upload(&ctx.bucket, key, CreateMultipartRequest::default())
            })
            .await
        })
        .await?
        .clone();
    let info = retry("UploadPart", key, || {
        let req = UploadPartRequest { content_length: Some(body.len() as u64), ..Default::default() };
        ctx.store.upload_part(&ctx.bucket, key, &upload_id, n, req, Body::Bytes(body.clone()))
    })
    .await?;
    Ok(CompletePart { part_number: n, etag: info.etag, checksum: None })
}

async fn put_small(ctx: &WriteCtx, key: &str, body: Bytes, len: u64) -> Result<PutObjectOutput, Error> {
    retry("PutObject", key, || {
        let req = PutObjectRequest { content_length: Some(len), ..Default::default() };
        ctx.store.put_object(&ctx.bucket, key, req, Body::from(body.clone()))
    })
    .await
}

async fn finish_multipart(
    ctx: &WriteCtx,
    key: &str,
    id: &OnceCell<String>,
    parts: Vec<JoinHandle<Result<CompletePart, Error>>>,
) -> Result<PutObjectOutput, Error> {
    let mut done = Vec::with_capacity(parts.len());
    let mut first_err = None;
    for p in parts {
        match p.await {
            Ok(Ok(part)) => done.push(part),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(Error::internal(format!("part task: {e}")));
            }
        }
    }
    let Some(upload_id) = id.get().cloned() else {
        return Err(first_err.unwrap_or_else(|| Error::internal("no upload was started")));
    };
    if let Some(e) = first_err {
        let _ = ctx.store.abort_multipart_upload(&ctx.bucket, key, &upload_id).await;
        return Err(e);
    }
    done.sort_by_key(|p| p.part_number);
    let r = retry("CompleteMultipartUpload", key, || {
        ctx.store.complete_multipart_upload(&ctx.bucket, key, &upload_id, done.clone(), Conditions::default())
    })
    .await;
    if let Err(e) = &r
        && e.code != ErrorCode::NoSuchUpload
    {
        let _ = ctx.store.abort_multipart_upload(&ctx.bucket, key, &upload_id).await;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3hpc_core::{GetObjectRequest, Store};

    fn ctx(store: DynStore, slots: usize) -> Arc<WriteCtx> {
        Arc::new(WriteCtx {
            store,
            bucket: "bkt".into(),
            rt: tokio::runtime::Handle::current(),
            part_size: 5 << 20,
            slots: Arc::new(Semaphore::new(slots)),
        })
    }

    async fn get(store: &DynStore, key: &str) -> (Bytes, s3hpc_core::ObjectInfo) {
        let out = store.get_object("bkt", key, GetObjectRequest::default()).await.unwrap();
        (out.body.collect().await.unwrap(), out.info)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_parts_and_completes_on_close() {
        let mem = s3hpc_core::memory::MemoryStore::new();
        mem.create_bucket("bkt").await.unwrap();
        let store: DynStore = Arc::new(mem);
        let data: Vec<u8> = (0..(12u32 << 20) + 7).map(|i| (i % 253) as u8).collect();
        let mut w = Writer::new(ctx(store.clone(), 1), "big".into(), 1);
        let mut off = 0;
        for piece in data.chunks(1 << 20) {
            if let Some(rx) = w.write(off, piece).unwrap() {
                rx.await.unwrap();
            }
            off += piece.len() as u64;
        }
        assert!(matches!(w.write(3, b"x"), Err(WriteError::NotSequential)));
        // nothing visible before the close
        assert!(store.head_object("bkt", "big", GetObjectRequest::default()).await.is_err());
        let out = w.complete().await.unwrap();
        assert_eq!(out.size, data.len() as u64);
        let (body, info) = get(&store, "big").await;
        assert_eq!(&body[..], &data[..]);
        assert_eq!(info.part_sizes, vec![5 << 20, 5 << 20, (2 << 20) + 7], "three parts, streamed");
        assert_eq!(w.write(off, b"late").unwrap_err(), WriteError::Closed);
        // completing again gives the same outcome
        assert_eq!(w.complete().await.unwrap().etag, out.etag);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn small_file_is_one_put_and_empty_file_exists() {
        let mem = s3hpc_core::memory::MemoryStore::new();
        mem.create_bucket("bkt").await.unwrap();
        let store: DynStore = Arc::new(mem);
        let mut w = Writer::new(ctx(store.clone(), 4), "small".into(), 1);
        w.write(0, b"hello ").unwrap();
        w.write(6, b"world").unwrap();
        w.complete().await.unwrap();
        let (body, info) = get(&store, "small").await;
        assert_eq!(&body[..], b"hello world");
        assert!(info.part_sizes.is_empty());
        let mut e = Writer::new(ctx(store.clone(), 4), "empty".into(), 1);
        e.complete().await.unwrap();
        assert_eq!(get(&store, "empty").await.0.len(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failed_upload_publishes_nothing() {
        // No bucket: every request fails; the writer reports it and nothing appears.
        let store: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
        let mut w = Writer::new(ctx(store.clone(), 4), "k".into(), 1);
        let part = vec![1u8; 5 << 20];
        if let Some(rx) = w.write(0, &part).unwrap() {
            rx.await.unwrap();
        }
        let e = w.complete().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NoSuchBucket);
    }
}
