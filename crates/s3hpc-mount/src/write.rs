//! Writes: a file opened for writing streams out as it is written. Bytes gather into a part
//! buffer; every full part goes out as an UploadPart of one multipart upload (created with the
//! first full part) while the application goes on writing, with at most `max_upload_parts` parts
//! of the whole mount in flight (a write waits for a slot: memory stays bounded). Closing the
//! file (or fsync) sends the rest and completes the upload, so the object appears whole or not
//! at all; a file that never filled a part is one PUT.
//!
//! An existing file opened for writing without `O_TRUNC` on a store that appends (an s3hpc
//! gateway) is an appender instead: its writes become appends (PutObject with a write offset)
//! at the object's end. The first write of a handle is one append and returns when it is done,
//! so a conflict with another writer (another mount, a client of the bucket) fails the very
//! write, where programs (a shell's `echo >> log`, one write per open) look, not only the
//! close. Later writes gather, whole, into parts of up to the part size, each one append sent
//! in order while the application goes on writing (an append costs the gateway more as the
//! object grows, so a stream of small writes must not become as many appends); the rest goes
//! at close or fsync, and a failed append fails the next write. With `O_APPEND` an append goes
//! to the object's end whatever others appended meanwhile (it is sent again at the new end, as
//! POSIX's `O_APPEND` writes at the end of the file as it is; writes are never split between
//! appends, so each stays whole); without, it fails.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::{FutureExt, Shared};
use s3hpc_core::{
    Body, CompletePart, Conditions, CreateMultipartRequest, DynStore, Error, ErrorCode, GetObjectRequest,
    PutObjectOutput, PutObjectRequest, UploadPartRequest,
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
    /// Where this handle's writes began (0, or the object's size for an appender).
    start: u64,
    append: Option<Append>,
    /// The file exists, empty, in the store already (`--posix-attrs`: made by mknod at create,
    /// or truncated at open): closing it with nothing written uploads nothing.
    made: bool,
    /// The metadata the object is uploaded with (`--metadata s3fs`: its mode, owner, time).
    pub meta: s3hpc_core::ObjectMeta,
}

/// An appender's state: the last append, which the next one waits for.
struct Append {
    /// Whether an append was sent through this handle (the first write goes at once).
    sent_any: bool,
    /// The last append (or the object as it was at open): appends go out one after another,
    /// each at the end the one before left.
    tail: Completion,
    /// `O_APPEND`: every write goes to the end, whatever offset the kernel gives, and to the
    /// object's end as it is when another writer appended meanwhile.
    any_offset: bool,
}

/// What a write waits for before it is answered.
pub enum Wait {
    /// Nothing: answer at once.
    Done,
    /// A full part waits for an upload slot (back-pressure on the application).
    Slot(tokio::sync::oneshot::Receiver<()>),
    /// An appender's write: its append (the object as it is after it, or why it failed).
    Append(Completion),
}

impl std::fmt::Debug for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Wait::Done => "Done",
            Wait::Slot(_) => "Slot",
            Wait::Append(_) => "Append",
        })
    }
}

/// How often an `O_APPEND` write is sent again at the new end when other writers appended
/// in between (each time after a short, growing, jittered pause).
const APPEND_ATTEMPTS: u32 = 20;

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
            start: 0,
            append: None,
            made: false,
            meta: Default::default(),
        }
    }

    /// Whether the file may be truncated in the store under this handle (`--posix-attrs`):
    /// nothing written through it yet, and the file exists there (made at create, or an
    /// appender's object).
    pub fn can_truncate(&self) -> bool {
        self.untouched() && self.buf.len() == 0 && (self.made || self.append.as_ref().is_some_and(|a| !a.sent_any))
    }

    /// The file was truncated (or extended) to `size` in the store ([`Writer::can_truncate`]):
    /// an appender goes on at its new end; a new file is complete as it is now (writes through
    /// this handle afterwards are refused, as after an fsync).
    pub fn truncated(&mut self, size: u64) {
        let out = PutObjectOutput {
            etag: String::new(),
            checksum: None,
            size,
            last_modified: std::time::SystemTime::now(),
            version_id: None,
        };
        let fut: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> =
            Box::pin(std::future::ready(Ok(out)));
        match &mut self.append {
            Some(a) => {
                self.offset = size;
                self.start = size;
                a.tail = fut.shared();
            }
            None => self.completion = Some(fut.shared()),
        }
    }

    /// Cut what was written to `size` bytes (`--metadata s3fs`'s ftruncate of a file being
    /// written): possible while every byte is still in the part buffer (no part sent, nothing
    /// being completed, not an appender); `false` otherwise.
    pub fn shrink(&mut self, size: u64) -> bool {
        if self.append.is_some() || self.completion.is_some() || !self.parts.is_empty() || size > self.offset {
            return false;
        }
        let keep = size as usize;
        match &mut self.buf {
            PartBuf::None => {}
            PartBuf::Lent(_, n) => *n = keep.min(*n),
            PartBuf::Own(b) => b.truncate(keep),
        }
        self.offset = size;
        true
    }

    /// The writer of a file that exists, empty, in the store (see `made`).
    pub fn made_empty(mut self) -> Writer {
        self.made = true;
        self
    }

    /// A writer that appends to the existing object `at` (its size, ETag and time at open).
    pub fn appender(ctx: Arc<WriteCtx>, key: String, opener_pid: u32, at: PutObjectOutput, any_offset: bool) -> Writer {
        let mut w = Writer::new(ctx, key, opener_pid);
        w.offset = at.size;
        w.start = at.size;
        let tail: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> =
            Box::pin(std::future::ready(Ok(at)));
        w.append = Some(Append { sent_any: false, tail: tail.shared(), any_offset });
        w
    }

    pub fn is_appender(&self) -> bool {
        self.append.is_some()
    }

    /// Nothing was written through this handle and nothing is being completed.
    pub fn untouched(&self) -> bool {
        self.offset == self.start && self.completion.is_none()
    }

    pub fn is_completing(&self) -> bool {
        self.completion.is_some()
    }

    /// Take `data` written at `offset`; the write is answered when what [`Wait`] names is done.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<Wait, WriteError> {
        if self.completion.is_some() {
            return Err(WriteError::Closed);
        }
        if self.failed.load(Ordering::Relaxed) {
            return Err(WriteError::Failed);
        }
        if offset != self.offset && !self.append.as_ref().is_some_and(|a| a.any_offset) {
            return Err(WriteError::NotSequential);
        }
        let part = self.ctx.part_size as usize;
        if let Some(a) = &self.append {
            self.offset += data.len() as u64;
            if !a.sent_any && self.buf.len() == 0 {
                // The first write: one append, answered when it is in the object.
                let (append, _) = self.send_append(Bytes::copy_from_slice(data));
                return Ok(Wait::Append(append));
            }
            // Whole writes gather into parts: a part that this write would overflow goes first.
            let mut wait = Wait::Done;
            if self.buf.len() > 0 && self.buf.len() + data.len() > part {
                let body = self.buf.take();
                if let (_, Some(rx)) = self.send_append(body) {
                    wait = Wait::Slot(rx);
                }
            }
            if let PartBuf::None = self.buf {
                self.buf = PartBuf::new(&self.ctx, part.max(data.len()));
            }
            self.buf.append(data);
            return Ok(wait);
        }
        if self.offset + data.len() as u64 > self.ctx.part_size * s3hpc_core::MAX_PART_NUMBER as u64 {
            return Err(WriteError::TooLarge);
        }
        let mut rest = data;
        let mut wait = Wait::Done;
        while !rest.is_empty() {
            if let PartBuf::None = self.buf {
                self.buf = PartBuf::new(&self.ctx, part);
            }
            let n = self.buf.append(&rest[..rest.len().min(part - self.buf.len())]);
            rest = &rest[n..];
            if self.buf.len() == part {
                let body = self.buf.take();
                if let Some(rx) = self.send_part(body) {
                    wait = Wait::Slot(rx);
                }
            }
        }
        self.offset += data.len() as u64;
        Ok(wait)
    }

    /// An appender's write is done: the object ends at `size` (beyond what this handle wrote
    /// when an `O_APPEND` write went to an end that others had moved).
    pub fn appended(&mut self, size: u64) {
        if self.append.is_some() {
            self.offset = self.offset.max(size);
        }
    }

    fn send_part(&mut self, body: Bytes) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let n = self.next_part;
        self.next_part += 1;
        let (ctx, key, id, failed) = (self.ctx.clone(), self.key.clone(), self.upload_id.clone(), self.failed.clone());
        let meta = self.meta.clone();
        let (slot, rx) = Slot::take(&self.ctx);
        let task = self.ctx.rt.spawn(async move {
            let _permit = slot.wait(&ctx).await?;
            let r = upload_part(&ctx, &key, &id, n, body, meta).await;
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        });
        self.parts.push(task);
        rx
    }

    /// Send `body` as the next append, at the end the appends before it left; returns the
    /// append (the new tail) and, when it waits for an upload slot, when it got one.
    fn send_append(&mut self, body: Bytes) -> (Completion, Option<tokio::sync::oneshot::Receiver<()>>) {
        let a = self.append.as_mut().expect("an appender");
        a.sent_any = true;
        let (prev, any_offset) = (a.tail.clone(), a.any_offset);
        let (ctx, key, failed) = (self.ctx.clone(), self.key.clone(), self.failed.clone());
        let (slot, rx) = Slot::take(&self.ctx);
        let task = self.ctx.rt.spawn(async move {
            let _permit = slot.wait(&ctx).await?;
            let offset = prev.await.map_err(|e| (*e).clone())?.size;
            let r = append_at(&ctx, &key, offset, body, any_offset).await;
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        });
        let fut: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> = Box::pin(async move {
            match task.await {
                Ok(r) => r.map_err(Arc::new),
                Err(e) => Err(Arc::new(Error::internal(format!("append task: {e}")))),
            }
        });
        a.tail = fut.shared();
        (a.tail.clone(), rx)
    }

    /// Finish the object (idempotent: every caller gets the same outcome). An appender sends
    /// what it holds and answers when every append so far is done; it may go on writing.
    pub fn complete(&mut self) -> Completion {
        if let Some(c) = &self.completion {
            return c.clone();
        }
        if self.append.is_some() {
            let rest = self.buf.take();
            if !rest.is_empty() {
                // The close waits for the append itself; no write waits for its slot.
                return self.send_append(rest).0;
            }
            return self.append.as_ref().expect("an appender").tail.clone();
        }
        if self.made && self.offset == 0 && self.parts.is_empty() && self.buf.len() == 0 {
            // Nothing to upload: the empty file is there, with the mode and owner it was made
            // with (an upload would replace it with a new file).
            let out = PutObjectOutput {
                etag: String::new(),
                checksum: None,
                size: 0,
                last_modified: std::time::SystemTime::now(),
                version_id: None,
            };
            let fut: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> =
                Box::pin(std::future::ready(Ok(out)));
            let c = fut.shared();
            self.completion = Some(c.clone());
            return c;
        }
        let ctx = self.ctx.clone();
        let key = self.key.clone();
        let id = self.upload_id.clone();
        let rest = self.buf.take();
        let len = self.offset;
        let meta = self.meta.clone();
        let fut: Pin<Box<dyn Future<Output = Result<PutObjectOutput, Arc<Error>>> + Send>> = if self.parts.is_empty() {
            Box::pin(async move { put_small(&ctx, &key, rest, len, meta).await.map_err(Arc::new) })
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

/// An upload slot: taken at once, or waited for (the write that filled the part waits too).
enum Slot {
    Got(tokio::sync::OwnedSemaphorePermit),
    Wait(tokio::sync::oneshot::Sender<()>),
}

impl Slot {
    fn take(ctx: &WriteCtx) -> (Slot, Option<tokio::sync::oneshot::Receiver<()>>) {
        match ctx.slots.clone().try_acquire_owned() {
            Ok(p) => (Slot::Got(p), None),
            Err(_) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                (Slot::Wait(tx), Some(rx))
            }
        }
    }

    async fn wait(self, ctx: &WriteCtx) -> Result<tokio::sync::OwnedSemaphorePermit, Error> {
        match self {
            Slot::Got(p) => Ok(p),
            Slot::Wait(tx) => {
                let p =
                    ctx.slots.clone().acquire_owned().await.map_err(|_| Error::internal("mount is shutting down"))?;
                let _ = tx.send(());
                Ok(p)
            }
        }
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

/// One append of `body` at `offset`. Not retried after a transport error: a retry could not
/// tell its own earlier success from another writer's. An answer of `InvalidWriteOffset` is
/// certain (nothing was written); with `O_APPEND` (`any_offset`) the body is then sent again
/// at the object's end as it is now, a bounded number of times.
async fn append_at(
    ctx: &WriteCtx,
    key: &str,
    mut offset: u64,
    body: Bytes,
    any_offset: bool,
) -> Result<PutObjectOutput, Error> {
    let mut attempt = 0;
    loop {
        let req = PutObjectRequest { content_length: Some(body.len() as u64), ..Default::default() };
        let r = ctx.store.append_object(&ctx.bucket, key, offset, req, Body::Bytes(body.clone())).await;
        match r {
            Err(e) if any_offset && e.code == ErrorCode::InvalidWriteOffset && attempt + 1 < APPEND_ATTEMPTS => {
                attempt += 1;
                // Another writer appended: let it finish, then go to the end it left.
                let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
                let jitter = u64::from(nanos.subsec_nanos() % 1000);
                tokio::time::sleep(Duration::from_micros(500 * u64::from(attempt) + jitter)).await;
                let info = ctx.store.head_object(&ctx.bucket, key, GetObjectRequest::default()).await?;
                tracing::debug!(
                    "s3hpc mount: append to {key:?} at {offset}: another writer appended; now at {}",
                    info.size
                );
                offset = info.size;
            }
            r => return r,
        }
    }
}

async fn upload_part(
    ctx: &WriteCtx,
    key: &str,
    id: &OnceCell<String>,
    n: u32,
    body: Bytes,
    meta: s3hpc_core::ObjectMeta,
) -> Result<CompletePart, Error> {
    let upload_id = id
        .get_or_try_init(|| async {
            retry("CreateMultipartUpload", key, || {
                let req = CreateMultipartRequest { meta: meta.clone(), ..Default::default() };
                ctx.store.create_multipart_upload(&ctx.bucket, key, req)
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

async fn put_small(
    ctx: &WriteCtx,
    key: &str,
    body: Bytes,
    len: u64,
    meta: s3hpc_core::ObjectMeta,
) -> Result<PutObjectOutput, Error> {
    retry("PutObject", key, || {
        let req = PutObjectRequest { content_length: Some(len), meta: meta.clone(), ..Default::default() };
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
            if let Wait::Slot(rx) = w.write(off, piece).unwrap() {
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

    /// An appender's write, answered when its append is done.
    async fn append(w: &mut Writer, off: u64, data: &[u8]) -> Result<PutObjectOutput, Arc<Error>> {
        match w.write(off, data).unwrap() {
            Wait::Append(c) => {
                let r = c.await;
                if let Ok(out) = &r {
                    w.appended(out.size);
                }
                r
            }
            _ => panic!("an appender's write is an append"),
        }
    }

    /// A later write of an appender: taken into a part (waiting for an upload slot if asked).
    async fn gather(w: &mut Writer, off: u64, data: &[u8]) {
        match w.write(off, data).unwrap() {
            Wait::Done => {}
            Wait::Slot(rx) => rx.await.unwrap(),
            Wait::Append(_) => panic!("only the first write of an appender goes at once"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appender_first_write_goes_through_later_ones_gather() {
        let mem = s3hpc_core::memory::MemoryStore::new();
        mem.create_bucket("bkt").await.unwrap();
        let store: DynStore = Arc::new(mem);
        let out = store.put_object("bkt", "log", PutObjectRequest::default(), Body::from(b"head|".to_vec())).await;
        let mut w = Writer::appender(ctx(store.clone(), 1), "log".into(), 1, out.unwrap(), false);
        assert!(w.untouched());
        assert_eq!(w.write(0, b"x").unwrap_err(), WriteError::NotSequential, "not at the end");
        // The first write is in the object when it is answered.
        assert_eq!(append(&mut w, 5, b"line\n").await.unwrap().size, 10);
        assert_eq!(&get(&store, "log").await.0[..], b"head|line\n");
        // 11 MiB in 1 MiB writes: whole writes gather into 5 MiB parts, appended in order.
        let data: Vec<u8> = (0..11u32 << 20).map(|i| (i % 251) as u8).collect();
        let mut off = 10;
        for piece in data.chunks(1 << 20) {
            gather(&mut w, off, piece).await;
            off += piece.len() as u64;
        }
        assert_eq!(w.offset, off, "st_size counts what was written");
        let synced = w.complete().await.unwrap();
        assert_eq!(synced.size, off);
        let (body, _) = get(&store, "log").await;
        assert_eq!(&body[..10], b"head|line\n");
        assert_eq!(&body[10..], &data[..]);
        // After an fsync the appender goes on.
        gather(&mut w, off, b"tail").await;
        assert_eq!(w.complete().await.unwrap().size, synced.size + 4);
        assert!(get(&store, "log").await.0.ends_with(b"tail"));
        // Someone else appended meanwhile: the next append fails, nothing interleaves, and the
        // handle stays failed (the next write fails too).
        let size = synced.size + 4;
        store
            .append_object("bkt", "log", size, PutObjectRequest::default(), Body::from(b"other".to_vec()))
            .await
            .unwrap();
        gather(&mut w, size, b"mine").await;
        assert_eq!(w.complete().await.unwrap_err().code, ErrorCode::InvalidWriteOffset);
        assert_eq!(w.write(size + 4, b"more").unwrap_err(), WriteError::Failed);
        assert!(get(&store, "log").await.0.ends_with(b"tailother"));
        // A new handle whose first write lost: that write fails itself.
        let info = get(&store, "log").await.1;
        let at = PutObjectOutput {
            version_id: None,
            etag: info.etag,
            checksum: None,
            size: info.size,
            last_modified: info.last_modified,
        };
        let mut w = Writer::appender(ctx(store.clone(), 1), "log".into(), 1, at, false);
        store
            .append_object("bkt", "log", info.size, PutObjectRequest::default(), Body::from(b"x".to_vec()))
            .await
            .unwrap();
        assert_eq!(append(&mut w, info.size, b"y").await.unwrap_err().code, ErrorCode::InvalidWriteOffset);
        assert!(get(&store, "log").await.0.ends_with(b"otherx"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn o_append_goes_to_the_end_others_left() {
        let mem = s3hpc_core::memory::MemoryStore::new();
        mem.create_bucket("bkt").await.unwrap();
        let store: DynStore = Arc::new(mem);
        let out = store.put_object("bkt", "log", PutObjectRequest::default(), Body::from(b"a\n".to_vec())).await;
        let mut w = Writer::appender(ctx(store.clone(), 4), "log".into(), 1, out.unwrap(), true);
        // Another writer appends after this one opened: the O_APPEND write goes after it.
        store.append_object("bkt", "log", 2, PutObjectRequest::default(), Body::from(b"b\n".to_vec())).await.unwrap();
        let out = append(&mut w, 0, b"c\n").await.unwrap();
        assert_eq!(out.size, 6);
        assert_eq!(w.offset, 6, "st_size follows the object's end");
        // Later writes too (at close), each whole.
        store.append_object("bkt", "log", 6, PutObjectRequest::default(), Body::from(b"d\n".to_vec())).await.unwrap();
        gather(&mut w, 0, b"e\n").await;
        gather(&mut w, 0, b"f\n").await;
        assert_eq!(w.complete().await.unwrap().size, 12);
        assert_eq!(&get(&store, "log").await.0[..], b"a\nb\nc\nd\ne\nf\n");
        // The object gone: the append fails (NoSuchKey), it does not make a new one.
        store.delete_object("bkt", "log").await.unwrap();
        gather(&mut w, 0, b"g\n").await;
        assert_eq!(w.complete().await.unwrap_err().code, ErrorCode::NoSuchKey);
        assert!(store.head_object("bkt", "log", GetObjectRequest::default()).await.is_err());
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
        if let Wait::Slot(rx) = w.write(0, &part).unwrap() {
            rx.await.unwrap();
        }
        let e = w.complete().await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NoSuchBucket);
    }
}
