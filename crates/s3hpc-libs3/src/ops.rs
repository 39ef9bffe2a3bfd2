//! The requests, on owned arguments: each runs the store call and makes the libs3 callbacks in
//! libs3's order (properties, then data or list callbacks). Callbacks run on the calling
//! thread, and all but one kind outside any runtime, so a callback may itself call the library
//! (IOR deletes objects from inside its list callback). The exception: the data callback of an
//! upload to an embedded store is called while the store pulls the body (from inside the store
//! call, as libs3 calls it from inside `S3_put_object`); a request made from there still works,
//! on a helper thread.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::fs::FileExt;
use std::ptr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::StreamExt;
use s3hpc_core::{
    Body, ByteRange, CompletePart, Conditions, CopyObjectRequest, CreateMultipartRequest, Directive, DynStore, Error,
    ErrorCode, GetObjectRequest, ListObjectsRequest, ListPartsRequest, ListUploadsRequest, ObjectMeta, PartCopySource,
    PutObjectRequest, UploadPartRequest,
};

use crate::exec::*;
use crate::ffi::*;
use crate::status::*;
use crate::target::{block_on, shared, store_for};

/// Bodies for a remote store up to this size are gathered from the data callback into one
/// buffer and handed to the client whole; larger ones stream in [`STREAM_CHUNK`] pieces.
pub const INLINE_MAX: u64 = 16 << 20;
pub const STREAM_CHUNK: usize = 4 << 20;
/// Size of the pieces a file-backed GET hands to the data callback.
pub const GET_CHUNK: usize = 256 << 10;
/// libs3 delivers listings in batches of this many entries.
const LIST_BATCH: usize = 32;
const PREFIX_BATCH: usize = 8;

fn store(b: &Bucket) -> Res<DynStore> {
    store_or_connect_error(store_for(&b.access_key, &b.secret_key))
}

/// A gateway that cannot be reached is `S3StatusFailedToConnect` (retryable), as libs3 reports
/// an unreachable host; refused credentials keep their S3 error.
fn store_or_connect_error(r: s3hpc_core::Result<DynStore>) -> Res<DynStore> {
    r.map_err(|e| {
        if crate::target::target().is_err() {
            // No usable S3HPC_TARGET: the library itself cannot run requests.
            Fail::Status(S3StatusInternalError, e.message)
        } else if e.code == ErrorCode::InternalError && crate::target::is_remote() {
            Fail::Status(S3StatusFailedToConnect, e.message)
        } else {
            e.into()
        }
    })
}

// ---------------------------------------------------------------- put properties and conditions

/// Owned copy of `S3PutProperties`.
#[derive(Default, Clone)]
pub struct PutProps {
    pub meta: ObjectMeta,
    pub md5: Option<[u8; 16]>,
}

/// # Safety
/// `p` is NULL or a valid `S3PutProperties` whose strings are NUL-terminated.
pub unsafe fn put_props(p: *const S3PutProperties) -> Res<Option<PutProps>> {
    // SAFETY: `p` is NULL (None) or a valid S3PutProperties (# Safety above).
    let Some(p) = (unsafe { p.as_ref() }) else {
        return Ok(None);
    };
    let mut meta = ObjectMeta {
        // SAFETY: a valid S3PutProperties' strings are NULL or NUL-terminated (# Safety above).
        content_type: unsafe { opt_str(p.contentType, "contentType") }?,
        // SAFETY: as above.
        cache_control: unsafe { opt_str(p.cacheControl, "cacheControl") }?,
        // SAFETY: as above.
        content_encoding: unsafe { opt_str(p.contentEncoding, "contentEncoding") }?,
        // SAFETY: as above.
        content_disposition: unsafe { opt_str(p.contentDispositionFilename, "contentDispositionFilename") }?
            .map(|f| format!("attachment; filename=\"{f}\"")),
        expires: (p.expires >= 0).then(|| http_date(p.expires)),
        ..Default::default()
    };
    if p.metaDataCount > 0 && !p.metaData.is_null() {
        // SAFETY: not NULL (checked above); libs3's contract: metaData points to metaDataCount name-value pairs.
        let nv = unsafe { std::slice::from_raw_parts(p.metaData, p.metaDataCount as usize) };
        for e in nv {
            // SAFETY: the same contract: each name is NUL-terminated.
            let name = unsafe { req_str(e.name, "metaData name") }?;
            // SAFETY: the same contract: each value is NULL or NUL-terminated.
            let value = unsafe { opt_str(e.value, "metaData value") }?.unwrap_or_default();
            meta.user.insert(name.to_ascii_lowercase(), value);
        }
    }
    // SAFETY: a valid S3PutProperties' md5 is NULL or NUL-terminated (# Safety above).
    let md5 = match unsafe { opt_str(p.md5, "md5") }? {
        Some(m) => Some(s3hpc_core::checksum::parse_content_md5(&m)?),
        None => None,
    };
    Ok(Some(PutProps { meta, md5 }))
}

/// # Safety
/// `c` is NULL or a valid `S3GetConditions`.
pub unsafe fn get_conditions(c: *const S3GetConditions) -> Res<Conditions> {
    // SAFETY: `c` is NULL (None) or a valid S3GetConditions (# Safety above).
    let Some(c) = (unsafe { c.as_ref() }) else {
        return Ok(Conditions::default());
    };
    let t = |s: i64| (s >= 0).then(|| UNIX_EPOCH + Duration::from_secs(s as u64));
    Ok(Conditions {
        // SAFETY: a valid S3GetConditions' ETags are NULL or NUL-terminated (# Safety above).
        if_match: unsafe { opt_str(c.ifMatchETag, "ifMatchETag") }?,
        // SAFETY: as above.
        if_none_match: unsafe { opt_str(c.ifNotMatchETag, "ifNotMatchETag") }?,
        if_modified_since: t(c.ifModifiedSince),
        if_unmodified_since: t(c.ifNotModifiedSince),
    })
}

// ---------------------------------------------------------------- request bodies

/// The program's body producer.
#[derive(Clone, Copy)]
pub struct DataSource {
    pub cb: PutObjectDataCallback,
    pub data: *mut c_void,
}

impl DataSource {
    /// Ask the callback for up to `buf.len()` bytes; `Ok(0)` at its end.
    fn fill(&self, buf: &mut [std::mem::MaybeUninit<u8>]) -> Res<usize> {
        self.fill_raw(buf.as_mut_ptr().cast(), buf.len())
    }

    /// As [`fill`](Self::fill), into the `len` writable bytes at `buf`.
    fn fill_raw(&self, buf: *mut u8, len: usize) -> Res<usize> {
        let Some(cb) = self.cb else {
            return Ok(0);
        };
        let want = len.min(i32::MAX as usize);
        // SAFETY: cb is the program's data callback, called with the data pointer it gave us; `buf` has
        // `len` >= `want` writable bytes (every caller passes a buffer it owns).
        let n = unsafe { cb(want as c_int, buf as *mut c_char, self.data) };
        if n < 0 {
            return Err(Fail::Status(S3StatusAbortedByCallback, "the data callback aborted the upload".into()));
        }
        Ok((n as usize).min(want))
    }

    fn short(got: u64, want: u64) -> Fail {
        Fail::Store(
            Error::new(
                ErrorCode::IncompleteBody,
                format!("the data callback ended after {got} of the {want} bytes promised; nothing was stored"),
            ),
            true,
        )
    }

    /// Fill all of `buf` from the callback.
    fn gather_into(&self, buf: &mut [u8]) -> Res<()> {
        let mut at = 0;
        while at < buf.len() {
            let n = self.fill_raw(buf[at..].as_mut_ptr(), buf.len() - at)?;
            if n == 0 {
                return Err(Self::short(at as u64, buf.len() as u64));
            }
            at += n;
        }
        Ok(())
    }

    /// Gather exactly `len` bytes (small bodies).
    fn gather(&self, len: u64) -> Res<Vec<u8>> {
        let len = len as usize;
        let mut v: Vec<u8> = Vec::with_capacity(len);
        while v.len() < len {
            let room = len - v.len();
            let n = self.fill(&mut v.spare_capacity_mut()[..room])?;
            if n == 0 {
                return Err(Self::short(v.len() as u64, len as u64));
            }
            // SAFETY: the callback initialised n bytes of the spare capacity (libs3's contract).
            unsafe { v.set_len(v.len() + n) };
        }
        Ok(v)
    }
}

/// Pieces an embedded store pulls from the data callback.
pub const PULL_PIECE: usize = crate::pagebuf::PIECE;

/// A body read from the program's data callback when the store polls it. Only given to
/// embedded stores, which poll their body inside [`block_on`] on the calling thread (or, if
/// the caller is itself inside a runtime, on a helper thread while the caller waits).
struct Pull {
    src: DataSource,
    left: u64,
    len: u64,
    /// Why the body ended early (callback abort or short body), for the libs3 status.
    failure: std::sync::Arc<std::sync::Mutex<Option<Fail>>>,
}

// SAFETY: the raw pointers are the program's callback and its data; the stream is polled by
// one thread at a time while the thread that called the library waits for the store call,
// which is how libs3 itself calls back (from within the call).
unsafe impl Send for Pull {}

impl futures::Stream for Pull {
    type Item = std::io::Result<Bytes>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let want = (self.left as usize).min(PULL_PIECE);
        let mut piece = crate::pagebuf::Piece::take();
        while piece.len < want {
            let at = piece.len;
            match self.src.fill_raw(piece.space()[at..want].as_mut_ptr(), want - at) {
                Ok(n) if n > 0 => piece.len += n,
                Ok(_) => {
                    let (got, len) = (self.len - self.left + piece.len as u64, self.len);
                    return Poll::Ready(Some(Err(self.fail(DataSource::short(got, len)))));
                }
                Err(f) => return Poll::Ready(Some(Err(self.fail(f)))),
            }
        }
        self.left -= want as u64;
        Poll::Ready(Some(Ok(Bytes::from_owner(piece))))
    }
}

impl Pull {
    fn fail(&mut self, f: Fail) -> std::io::Error {
        let e = std::io::Error::other(Error::new(ErrorCode::IncompleteBody, format!("{f:?}")));
        self.left = 0;
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
        e
    }
}

/// Run a store write whose body comes from the program's data callback. Small bodies are
/// gathered whole. Larger ones stream: to an embedded store as pieces pulled from the callback
/// when the store asks for them (on this thread, each piece hashed and written while it is
/// still in the CPU cache); to a remote store gathered whole up to [`INLINE_MAX`] (into the
/// store's own memory when it lends some, `Store::body_buffer`: then the callback's copy is the
/// only one on the way to the gateway's store), beyond that
/// through a channel to the store running on the shared runtime while this thread keeps
/// calling the callback. An abort or a short body ends the stream with an error, so the store
/// publishes nothing.
pub fn with_body<T, F, Fut>(store: &DynStore, src: DataSource, len: u64, f: F) -> Res<T>
where
    T: Send + 'static,
    F: FnOnce(Body) -> Fut,
    Fut: std::future::Future<Output = s3hpc_core::Result<T>> + Send + 'static,
{
    if len <= PULL_PIECE as u64 || (len <= INLINE_MAX && !crate::target::is_embedded()) {
        if let Some(mut buf) = store.body_buffer(len as usize) {
            src.gather_into(&mut buf)?;
            return Ok(block_on(f(Body::from(buf.freeze())))?);
        }
        let buf = src.gather(len)?;
        return Ok(block_on(f(Body::from(buf)))?);
    }
    if crate::target::is_embedded() {
        let failure = std::sync::Arc::new(std::sync::Mutex::new(None));
        let body = Body::Stream(Box::pin(Pull { src, left: len, len, failure: failure.clone() }));
        let out = block_on(f(body));
        if let Some(f) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(f);
        }
        return Ok(out?);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(2);
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed();
    let task = shared().spawn(f(Body::Stream(stream)));
    let mut sent: u64 = 0;
    let mut failure: Option<Fail> = None;
    while sent < len {
        let want = ((len - sent) as usize).min(STREAM_CHUNK);
        let mut chunk: Vec<u8> = Vec::with_capacity(want);
        let mut end = false;
        while chunk.len() < want {
            let room = want - chunk.len();
            match src.fill(&mut chunk.spare_capacity_mut()[..room]) {
                Ok(0) => {
                    end = true;
                    break;
                }
                // SAFETY: as in `gather`.
                Ok(n) => unsafe { chunk.set_len(chunk.len() + n) },
                Err(f) => {
                    failure = Some(f);
                    break;
                }
            }
        }
        sent += chunk.len() as u64;
        if failure.is_none() && end && sent < len {
            failure = Some(DataSource::short(sent, len));
        }
        if let Some(f) = &failure {
            let _ =
                tx.blocking_send(Err(std::io::Error::other(Error::new(ErrorCode::IncompleteBody, format!("{f:?}")))));
            break;
        }
        if tx.blocking_send(Ok(Bytes::from(chunk))).is_err() {
            break; // the store stopped reading: its result says why
        }
    }
    drop(tx);
    let out = shared().block_on(task).map_err(|e| Error::internal(format!("upload task failed: {e}")));
    if let Some(f) = failure {
        return Err(f);
    }
    Ok(out??)
}

// ---------------------------------------------------------------- objects

pub fn put_object(b: Bucket, key: String, len: u64, props: Option<PutProps>, src: DataSource, resp: &Resp) -> Res {
    let s = store(&b)?;
    let props = props.unwrap_or_default();
    let req =
        PutObjectRequest { meta: props.meta, content_md5: props.md5, content_length: Some(len), ..Default::default() };
    let st = s.clone();
    let out = with_body(&s, src, len, move |body| async move { st.put_object(&b.name, &key, req, body).await })?;
    resp.properties(&Props::written(&out.etag, out.last_modified))
}

/// The range libs3 asks for: `byteCount` 0 means "to the end"; both 0 means the whole object.
pub fn get_range(start: u64, count: u64) -> Option<ByteRange> {
    match (start, count) {
        (0, 0) => None,
        (s, 0) => Some(ByteRange::From(s)),
        (s, c) => Some(ByteRange::FromTo(s, s.saturating_add(c - 1))),
    }
}

thread_local! {
    static GET_BUF: std::cell::RefCell<Option<crate::pagebuf::PageBuf>> = const { std::cell::RefCell::new(None) };
}

fn deliver(cb: GetObjectDataCallback, data: *mut c_void, chunk: &[u8]) -> Res {
    let Some(cb) = cb else {
        return Err(Fail::Status(
            S3StatusInternalError,
            "object data arrived but no getObjectDataCallback was given".into(),
        ));
    };
    for piece in chunk.chunks(i32::MAX as usize) {
        // SAFETY: cb is the program's data callback, called with the data pointer it gave us; `piece` is
        // valid for `piece.len()` bytes while it runs.
        let st = unsafe { cb(piece.len() as c_int, piece.as_ptr() as *const c_char, data) };
        check_cb(st, "data callback")?;
    }
    Ok(())
}

fn deliver_file(cb: GetObjectDataCallback, data: *mut c_void, file: &std::fs::File, offset: u64, len: u64) -> Res {
    let want = (len as usize).min(GET_CHUNK);
    let buf = GET_BUF.try_with(|b| b.borrow_mut().take()).ok().flatten().filter(|b| b.len() >= want);
    let mut buf = buf.unwrap_or_else(|| crate::pagebuf::PageBuf::new(GET_CHUNK));
    let mut pos = 0u64;
    let r = (|| {
        while pos < len {
            let n = ((len - pos) as usize).min(GET_CHUNK);
            let got = file.read_at(&mut buf[..n], offset + pos).map_err(Error::from)?;
            if got == 0 {
                return Err(Fail::Store(
                    Error::new(ErrorCode::InternalError, "object file shorter than its recorded size"),
                    true,
                ));
            }
            deliver(cb, data, &buf[..got])?;
            pos += got as u64;
        }
        Ok(())
    })();
    let _ = GET_BUF.try_with(|b| *b.borrow_mut() = Some(buf));
    r
}

pub fn get_object(
    b: Bucket,
    key: String,
    conditions: Conditions,
    start: u64,
    count: u64,
    cb: GetObjectDataCallback,
    resp: &Resp,
) -> Res {
    let req = GetObjectRequest { version_id: None, range: get_range(start, count), part_number: None, conditions };
    let s = store(&b)?;
    // An embedded posix store answers on this thread: no future, no runtime.
    let out = match s.get_object_inline(&b.name, &key, &req) {
        Some(r) => r?,
        None => block_on(async move { s.get_object(&b.name, &key, req).await })?,
    };
    let len = out.range.map_or(out.info.size, |(_, l)| l);
    resp.properties(&Props::of_object(&out.info, len))?;
    match out.body {
        Body::Empty => Ok(()),
        Body::Bytes(bytes) => {
            if bytes.is_empty() {
                Ok(())
            } else {
                deliver(cb, resp.data, &bytes)
            }
        }
        Body::File { file, offset, len } => deliver_file(cb, resp.data, &file, offset, len),
        Body::Stream(mut st) => loop {
            match block_on(st.next()) {
                None => break Ok(()),
                Some(Ok(chunk)) => deliver(cb, resp.data, &chunk)?,
                Some(Err(e)) => break Err(Error::from(e).into()),
            }
        },
    }
}

pub fn head_object(b: Bucket, key: String, resp: &Resp) -> Res {
    let s = store(&b)?;
    let info = match s.head_object_inline(&b.name, &key, &GetObjectRequest::default()) {
        Some(r) => r,
        None => block_on(async move { s.head_object(&b.name, &key, GetObjectRequest::default()).await }),
    }
    .map_err(|e| Fail::Store(e, false))?;
    resp.properties(&Props::of_object(&info, info.size))
}

pub fn delete_object(b: Bucket, key: String, resp: &Resp) -> Res {
    let s = store(&b)?;
    block_on(async move { s.delete_object(&b.name, &key).await })?;
    resp.properties(&Props::default())
}

/// Where a copy writes its ETag and time for the program.
pub struct CopyOut {
    pub last_modified: *mut i64,
    pub etag: *mut c_char,
    pub etag_size: c_int,
}

impl CopyOut {
    fn clear(&self) {
        if !self.etag.is_null() && self.etag_size > 0 {
            // SAFETY: not NULL and etag_size > 0 (checked above): libs3's contract makes it the caller's buffer
            // of etag_size bytes, kept until the request completes.
            unsafe { *self.etag = 0 };
        }
    }

    fn write(&self, etag: &str, mtime: SystemTime) {
        if !self.last_modified.is_null() {
            // SAFETY: not NULL (checked above): the caller's i64, kept until the request completes (libs3's contract).
            unsafe { *self.last_modified = secs(mtime) };
        }
        if !self.etag.is_null() && self.etag_size > 0 {
            let q = quoted(etag);
            let n = q.len().min(self.etag_size as usize - 1);
            // SAFETY: n < etag_size (the min above), so n bytes and the NUL fit in the caller's etag_size-byte
            // buffer (libs3's contract); `q` is ours, so they do not overlap.
            unsafe {
                ptr::copy_nonoverlapping(q.as_ptr() as *const c_char, self.etag, n);
                *self.etag.add(n) = 0;
            }
        }
    }
}

pub struct CopyArgs {
    pub src: Bucket,
    pub src_key: String,
    pub dst_bucket: String,
    pub dst_key: String,
    pub part_no: c_int,
    pub upload_id: Option<String>,
    pub start: u64,
    pub count: u64,
    pub props: Option<PutProps>,
}

pub fn copy_object(a: CopyArgs, out: CopyOut, resp: &Resp) -> Res {
    out.clear();
    let s = store(&a.src)?;
    let (etag, mtime) = if a.part_no > 0 {
        let Some(upload_id) = a.upload_id else {
            return Err(Fail::invalid("a part copy (partNo > 0) needs an uploadId"));
        };
        // As libs3 sends it: bytes=start-(start+count), both ends included.
        let range = (a.count > 0).then(|| ByteRange::FromTo(a.start, a.start.saturating_add(a.count)));
        let p = block_on(async move {
            let src =
                PartCopySource { bucket: a.src.name.clone(), key: a.src_key.clone(), range, ..Default::default() };
            s.upload_part_copy(&a.dst_bucket, &a.dst_key, &upload_id, a.part_no as u32, src).await
        })?;
        (p.etag, p.last_modified)
    } else {
        if a.count > 0 {
            return Err(Fail::invalid("a byte range can only be copied into a multipart upload part (partNo > 0)"));
        }
        let req = CopyObjectRequest {
            metadata: match a.props {
                Some(p) => Directive::Replace(p.meta),
                None => Directive::Copy,
            },
            ..Default::default()
        };
        let o = block_on(async move { s.copy_object(&a.src.name, &a.src_key, &a.dst_bucket, &a.dst_key, req).await })?;
        (o.etag, o.last_modified)
    };
    out.write(&etag, mtime);
    resp.properties(&Props::written(&etag, mtime))
}

// ---------------------------------------------------------------- buckets

pub fn create_bucket(b: Bucket, resp: &Resp) -> Res {
    let s = store(&b)?;
    block_on(async move { s.create_bucket(&b.name).await })?;
    resp.properties(&Props::default())
}

pub fn delete_bucket(b: Bucket, resp: &Resp) -> Res {
    let s = store(&b)?;
    block_on(async move { s.delete_bucket(&b.name).await })?;
    resp.properties(&Props::default())
}

/// Where `S3_test_bucket` writes the location constraint (always empty here).
pub struct LocationOut {
    pub buf: *mut c_char,
    pub size: c_int,
}

pub fn test_bucket(b: Bucket, out: LocationOut, resp: &Resp) -> Res {
    if !out.buf.is_null() && out.size > 0 {
        // SAFETY: not NULL and size > 0 (checked above): the caller's buffer of `size` bytes, kept until the
        // request completes (libs3's contract).
        unsafe { *out.buf = 0 };
    }
    let s = store(&b)?;
    block_on(async move { s.head_bucket(&b.name).await })?;
    resp.properties(&Props::default())
}

pub type ListServiceCb = ListServiceCallback;

pub fn list_service(access: String, secret: String, cb: ListServiceCb, resp: &Resp) -> Res {
    let s = store_or_connect_error(store_for(&access, &secret))?;
    let buckets = block_on(async move { s.list_buckets().await })?;
    resp.properties(&Props::default())?;
    if let Some(cb) = cb {
        for bk in buckets {
            let name = cstring(&bk.name);
            // SAFETY: cb is the program's list service callback, called with the data pointer it gave us; `name`
            // lives until it returns.
            let st = unsafe { cb(ptr::null(), ptr::null(), name.as_ptr(), secs(bk.created), resp.data) };
            check_cb(st, "list service callback")?;
        }
    }
    Ok(())
}

pub struct ListArgs {
    pub prefix: Option<String>,
    pub marker: Option<String>,
    pub delimiter: Option<String>,
    pub max_keys: c_int,
}

pub fn list_bucket(b: Bucket, a: ListArgs, cb: ListBucketCallback, resp: &Resp) -> Res {
    let s = store(&b)?;
    let req = ListObjectsRequest {
        prefix: a.prefix.unwrap_or_default(),
        delimiter: a.delimiter.filter(|d| !d.is_empty()),
        start_after: a.marker.filter(|m| !m.is_empty()),
        max_keys: if a.max_keys <= 0 { s3hpc_core::MAX_KEYS } else { (a.max_keys as usize).min(s3hpc_core::MAX_KEYS) },
    };
    let page = block_on(async move { s.list_objects(&b.name, req).await })?;
    resp.properties(&Props::default())?;
    let Some(cb) = cb else {
        return Ok(());
    };
    let truncated = c_int::from(page.is_truncated);
    let next = kept(page.next_marker.as_deref().filter(|_| page.is_truncated).unwrap_or(""));
    let (mut oi, mut pi) = (0, 0);
    while oi < page.objects.len() || pi < page.common_prefixes.len() {
        let objs = &page.objects[oi..(oi + LIST_BATCH).min(page.objects.len())];
        let pres = &page.common_prefixes[pi..(pi + PREFIX_BATCH).min(page.common_prefixes.len())];
        oi += objs.len();
        pi += pres.len();
        let keys: Vec<(CString, CString)> = objs.iter().map(|o| (cstring(&o.key), cstring(&quoted(&o.etag)))).collect();
        let contents: Vec<S3ListBucketContent> = objs
            .iter()
            .zip(&keys)
            .map(|(o, (k, e))| S3ListBucketContent {
                key: k.as_ptr(),
                lastModified: secs(o.last_modified),
                eTag: e.as_ptr(),
                size: o.size,
                ownerId: ptr::null(),
                ownerDisplayName: ptr::null(),
            })
            .collect();
        let pcs: Vec<CString> = pres.iter().map(|p| cstring(p)).collect();
        let pptrs: Vec<*const c_char> = pcs.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: cb is the program's list bucket callback, called with the data pointer it gave us; the
        // arrays and the C strings they point to are locals that outlive the call (`next` is kept).
        let st = unsafe {
            cb(
                truncated,
                next,
                contents.len() as c_int,
                if contents.is_empty() { ptr::null() } else { contents.as_ptr() },
                pptrs.len() as c_int,
                if pptrs.is_empty() { ptr::null() } else { pptrs.as_ptr() },
                resp.data,
            )
        };
        check_cb(st, "list bucket callback")?;
    }
    Ok(())
}

// ---------------------------------------------------------------- multipart

pub fn initiate_multipart(
    b: Bucket,
    key: String,
    props: Option<PutProps>,
    cb: MultipartInitialCallback,
    resp: &Resp,
) -> Res {
    let s = store(&b)?;
    let req = CreateMultipartRequest { meta: props.unwrap_or_default().meta, ..Default::default() };
    let id = block_on(async move { s.create_multipart_upload(&b.name, &key, req).await })?;
    resp.properties(&Props::default())?;
    if let Some(cb) = cb {
        // SAFETY: cb is the program's multipart initial callback, called with the data pointer it gave us;
        // `kept` strings stay valid after it returns.
        let st = unsafe { cb(kept(&id), resp.data) };
        check_cb(st, "multipart initial callback")?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn upload_part(
    b: Bucket,
    key: String,
    upload_id: String,
    part: c_int,
    len: u64,
    props: Option<PutProps>,
    src: DataSource,
    resp: &Resp,
) -> Res {
    if part <= 0 {
        return Err(Fail::invalid("Part number must be an integer between 1 and 10000, inclusive"));
    }
    let s = store(&b)?;
    let req =
        UploadPartRequest { content_md5: props.and_then(|p| p.md5), content_length: Some(len), ..Default::default() };
    let st = s.clone();
    let p = with_body(&s, src, len, move |body| async move {
        st.upload_part(&b.name, &key, &upload_id, part as u32, req, body).await
    })?;
    resp.properties(&Props::written(&p.etag, p.last_modified))
}

/// Parse a CompleteMultipartUpload document.
pub fn parse_complete_xml(xml: &[u8]) -> Result<Vec<CompletePart>, Error> {
    use quick_xml::events::Event;
    let bad = |why: String| Error::new(ErrorCode::MalformedXML, why);
    let mut r = quick_xml::Reader::from_reader(xml);
    let mut path: Vec<Vec<u8>> = Vec::new();
    let mut parts = Vec::new();
    let (mut num, mut etag): (Option<u32>, Option<String>) = (None, None);
    let mut saw_root = false;
    loop {
        match r.read_event().map_err(|e| bad(format!("CompleteMultipartUpload: {e}")))? {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_vec();
                if path.is_empty() {
                    if name != b"CompleteMultipartUpload" {
                        return Err(bad("root element must be CompleteMultipartUpload".into()));
                    }
                    saw_root = true;
                }
                path.push(name);
            }
            Event::End(_) => {
                if path.len() == 2 && path[1] == b"Part" {
                    let n = num.take().ok_or_else(|| bad("Part without PartNumber".into()))?;
                    let e = etag.take().ok_or_else(|| bad("Part without ETag".into()))?;
                    parts.push(CompletePart { part_number: n, etag: e, checksum: None });
                }
                path.pop();
            }
            Event::Text(t) if path.len() == 3 && path[1] == b"Part" => {
                let text = t.xml_content().map_err(|e| bad(format!("CompleteMultipartUpload: {e}")))?;
                let text = text.trim();
                match path[2].as_slice() {
                    b"PartNumber" => {
                        num = Some(text.parse().map_err(|_| bad(format!("bad PartNumber {text:?}")))?);
                    }
                    b"ETag" => etag.get_or_insert_with(String::new).push_str(text),
                    _ => {}
                }
            }
            // An entity such as &quot; inside ETag.
            Event::GeneralRef(g) if path.len() == 3 && path[1] == b"Part" && path[2] == b"ETag" => {
                let ch = match g.as_ref() {
                    b"quot" => "\"",
                    b"amp" => "&",
                    b"apos" => "'",
                    b"lt" => "<",
                    b"gt" => ">",
                    _ => return Err(bad("unknown entity in ETag".into())),
                };
                etag.get_or_insert_with(String::new).push_str(ch);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root || !path.is_empty() {
        return Err(bad("incomplete CompleteMultipartUpload document".into()));
    }
    Ok(parts)
}

pub fn complete_multipart(
    b: Bucket,
    key: String,
    upload_id: String,
    len: u64,
    src: DataSource,
    cb: MultipartCommitCallback,
    resp: &Resp,
) -> Res {
    if len > 4 << 20 {
        return Err(Fail::Store(Error::code(ErrorCode::MaxMessageLengthExceeded), true));
    }
    let xml = src.gather(len)?;
    let parts = parse_complete_xml(&xml)?;
    let s = store(&b)?;
    let location = format!("/{}/{}", b.name, key);
    let out =
        block_on(
            async move { s.complete_multipart_upload(&b.name, &key, &upload_id, parts, Conditions::default()).await },
        )?;
    resp.properties(&Props::written(&out.etag, out.last_modified))?;
    if let Some(cb) = cb {
        let loc = cstring(&location);
        let etag = cstring(&quoted(&out.etag));
        // SAFETY: cb is the program's multipart commit callback, called with the data pointer it gave us;
        // `loc` and `etag` live until it returns.
        let st = unsafe { cb(loc.as_ptr(), etag.as_ptr(), resp.data) };
        check_cb(st, "multipart commit callback")?;
    }
    Ok(())
}

pub fn abort_multipart(b: Bucket, key: String, upload_id: String, resp: &Resp) -> Res {
    let s = store(&b)?;
    block_on(async move { s.abort_multipart_upload(&b.name, &key, &upload_id).await })?;
    resp.properties(&Props::default())
}

pub fn list_parts(
    b: Bucket,
    key: String,
    upload_id: String,
    marker: Option<String>,
    max_parts: c_int,
    cb: ListPartsCallback,
    resp: &Resp,
) -> Res {
    let marker = match marker.filter(|m| !m.is_empty()) {
        Some(m) => Some(m.trim().parse::<u32>().map_err(|_| Fail::invalid(format!("bad part number marker {m:?}")))?),
        None => None,
    };
    let s = store(&b)?;
    let req = ListPartsRequest { part_number_marker: marker, max_parts: max_parts.max(0) as usize };
    let page = block_on(async move { s.list_parts(&b.name, &key, &upload_id, req).await })?;
    resp.properties(&Props::default())?;
    let Some(cb) = cb else {
        return Ok(());
    };
    let next = page.next_part_number_marker.map(|n| n.to_string()).unwrap_or_default();
    let next = cstring(&next);
    let storage = c"STANDARD";
    for (i, batch) in page.parts.chunks(LIST_BATCH).enumerate() {
        let etags: Vec<CString> = batch.iter().map(|p| cstring(&quoted(&p.etag))).collect();
        let parts: Vec<S3ListPart> = batch
            .iter()
            .zip(&etags)
            .map(|(p, e)| S3ListPart {
                eTag: e.as_ptr(),
                lastModified: secs(p.last_modified),
                partNumber: u64::from(p.part_number),
                size: p.size,
            })
            .collect();
        // SAFETY: cb is the program's list parts callback, called with the data pointer it gave us; the
        // array and the C strings it points to are locals that outlive the call.
        let st = unsafe {
            cb(
                c_int::from(page.is_truncated),
                next.as_ptr(),
                ptr::null(),
                ptr::null(),
                ptr::null(),
                ptr::null(),
                storage.as_ptr(),
                parts.len() as c_int,
                (i * LIST_BATCH) as c_int,
                parts.as_ptr(),
                resp.data,
            )
        };
        check_cb(st, "list parts callback")?;
    }
    Ok(())
}

pub struct ListUploadsArgs {
    pub prefix: Option<String>,
    pub key_marker: Option<String>,
    pub upload_id_marker: Option<String>,
    pub delimiter: Option<String>,
    pub max_uploads: c_int,
}

pub fn list_uploads(b: Bucket, a: ListUploadsArgs, cb: ListMultipartUploadsCallback, resp: &Resp) -> Res {
    let s = store(&b)?;
    let req = ListUploadsRequest {
        prefix: a.prefix.unwrap_or_default(),
        delimiter: a.delimiter.filter(|d| !d.is_empty()),
        key_marker: a.key_marker.filter(|m| !m.is_empty()),
        upload_id_marker: a.upload_id_marker.filter(|m| !m.is_empty()),
        max_uploads: a.max_uploads.max(0) as usize,
    };
    let page = block_on(async move { s.list_multipart_uploads(&b.name, req).await })?;
    resp.properties(&Props::default())?;
    let Some(cb) = cb else {
        return Ok(());
    };
    let nk = cstring(page.next_key_marker.as_deref().unwrap_or(""));
    let nu = cstring(page.next_upload_id_marker.as_deref().unwrap_or(""));
    let storage = c"STANDARD";
    let (mut ui, mut pi) = (0, 0);
    while ui < page.uploads.len() || pi < page.common_prefixes.len() {
        let ups = &page.uploads[ui..(ui + LIST_BATCH).min(page.uploads.len())];
        let pres = &page.common_prefixes[pi..(pi + PREFIX_BATCH).min(page.common_prefixes.len())];
        ui += ups.len();
        pi += pres.len();
        let strs: Vec<(CString, CString)> = ups.iter().map(|u| (cstring(&u.key), cstring(&u.upload_id))).collect();
        let list: Vec<S3ListMultipartUpload> = ups
            .iter()
            .zip(&strs)
            .map(|(u, (k, id))| S3ListMultipartUpload {
                key: k.as_ptr(),
                uploadId: id.as_ptr(),
                initiatorId: ptr::null(),
                initiatorDisplayName: ptr::null(),
                ownerId: ptr::null(),
                ownerDisplayName: ptr::null(),
                storageClass: storage.as_ptr(),
                initiated: secs(u.initiated),
            })
            .collect();
        let pcs: Vec<CString> = pres.iter().map(|p| cstring(p)).collect();
        let pptrs: Vec<*const c_char> = pcs.iter().map(|c| c.as_ptr()).collect();
        // SAFETY: cb is the program's list multipart uploads callback, called with the data pointer it gave
        // us; the arrays and the C strings they point to are locals that outlive the call.
        let st = unsafe {
            cb(
                c_int::from(page.is_truncated),
                nk.as_ptr(),
                nu.as_ptr(),
                list.len() as c_int,
                if list.is_empty() { ptr::null() } else { list.as_ptr() },
                pptrs.len() as c_int,
                if pptrs.is_empty() { ptr::null() } else { pptrs.as_ptr() },
                resp.data,
            )
        };
        check_cb(st, "list multipart uploads callback")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_xml_is_parsed() {
        let xml = br#"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"abc"</ETag></Part>
            <Part><PartNumber>2</PartNumber><ETag>&quot;def&quot;</ETag></Part></CompleteMultipartUpload>"#;
        let parts = parse_complete_xml(xml).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].part_number, parts[0].etag.as_str()), (1, "\"abc\""));
        assert_eq!((parts[1].part_number, parts[1].etag.as_str()), (2, "\"def\""));
    }

    #[test]
    fn bad_complete_xml_is_malformed() {
        for bad in [&b"<Other/>"[..], b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber>", b"not xml <"] {
            assert_eq!(parse_complete_xml(bad).unwrap_err().code, ErrorCode::MalformedXML, "{bad:?}");
        }
    }

    #[test]
    fn ranges_as_libs3_builds_them() {
        assert_eq!(get_range(0, 0), None);
        assert_eq!(get_range(5, 0), Some(ByteRange::From(5)));
        assert_eq!(get_range(5, 10), Some(ByteRange::FromTo(5, 14)));
    }
}
