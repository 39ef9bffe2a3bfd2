//! [`WireClient`]: a [`Store`] that speaks the binary protocol, multiplexing any number of
//! concurrent calls over a small pool of connections.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use s3hpc_core::{
    Body, BodyBuffer, BucketInfo, BufferMemory, ChecksumRequest, CompleteMultipartRequest, CopyObjectRequest,
    CreateMultipartRequest, Credentials, Error, ErrorCode, Expected, GetObjectOutput, GetObjectRequest,
    ListObjectsPage, ListObjectsRequest, ListPartsPage, ListPartsRequest, ListUploadsPage, ListUploadsRequest,
    ObjectInfo, PartCopySource, PartInfo, PutObjectOutput, PutObjectRequest, Result, Store, Tags, UploadPartRequest,
};
use tokio::io::AsyncReadExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::codec::{Dec, Enc, Request, UploadFields, WireChecksum, WireExpected};
use crate::field::Field;
use crate::frame::{self, FrameDecoder, HEADER_LEN, Header, INLINE_MAX, Limits, flag, ty};
use crate::ops::{Op, Output, get_output, ops};
use crate::server::{Out, OutTx, credit_frame, frame_bytes};
use crate::sys::{Endpoint, ReadHalf, auth_proof};

/// Client tuning.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Connections in the pool; calls are spread over them round-robin. Each carries many
    /// concurrent requests, so 1-4 is plenty.
    pub connections: usize,
    pub connect_timeout: Duration,
    /// On Unix sockets, descriptors cross the socket instead of body bytes: large GET bodies
    /// arrive as the object's file (zero copy), and PUT/UploadPart bodies held in memory of
    /// [`FD_BODY_MIN`](crate::frame::FD_BODY_MIN) to [`FD_BODY_MAX`](crate::frame::FD_BODY_MAX)
    /// go through the connection's upload slots, memory files the server has mapped (one copy,
    /// into the slot; `docs/PROTOCOL.md` "Upload slots").
    pub fd_passing: bool,
    /// Send a request that is safe to repeat (reads, tagging, DeleteObject, unconditional
    /// PutObject/UploadPart with an in-memory body) once more on a new connection when its
    /// connection is lost before the answer arrives.
    pub replay_on_reconnect: bool,
    /// The longest the client waits for the server on one request: for its RESPONSE (counted
    /// from the moment the request, and its body if any, is sent), for upload credit, and for
    /// each next piece of a response body. A request that waits longer fails with
    /// `RequestTimeout`; if nothing at all arrived on its connection meanwhile, the connection is
    /// treated as dead (its other requests fail as "connection lost", the next call reconnects).
    /// `None`: wait forever.
    pub request_timeout: Option<Duration>,
    /// Largest DATA frame the client sends for a streamed upload (capped by the server's
    /// `max_data_frame`). Smaller frames let the server's store start writing sooner and finish
    /// sooner after the last byte (1 MiB frames measured ~0.7x of an embedded PUT on posix,
    /// 256 KiB ~0.85-1.0x: docs/perf/wire.md).
    pub upload_frame: u32,
    /// For `tls://` endpoints: a PEM bundle of CA certificates trusted besides the system's roots
    /// (default: `AWS_CA_BUNDLE`, as the HTTP client and the AWS CLI read it).
    pub ca_bundle: Option<std::path::PathBuf>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connections: 2,
            connect_timeout: Duration::from_secs(10),
            fd_passing: true,
            replay_on_reconnect: true,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            upload_frame: 256 << 10,
            ca_bundle: std::env::var_os("AWS_CA_BUNDLE").filter(|v| !v.is_empty()).map(Into::into),
        }
    }
}

/// Default [`ClientOptions::request_timeout`]: long enough for server-side work without progress
/// frames (CopyObject or CompleteMultipartUpload of large objects on a slow file system), short
/// enough that a hung server does not hang its clients for good.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// A [`Store`] over the binary protocol.
pub struct WireClient {
    endpoint: Endpoint,
    creds: Credentials,
    opts: ClientOptions,
    slots: Vec<Slot>,
    next: AtomicUsize,
}

struct Slot {
    conn: Mutex<Option<Arc<ClientConn>>>,
    reconnect: tokio::sync::Mutex<()>,
}

const CONN_LOST: &str = "binary protocol connection lost: ";

fn conn_lost(msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InternalError, format!("{CONN_LOST}{msg}"))
}

fn is_conn_lost(e: &Error) -> bool {
    e.code == ErrorCode::InternalError && e.message.starts_with(CONN_LOST)
}

impl WireClient {
    /// Connect to `unix:///path` or `tcp://host:port` with the default options.
    pub async fn connect(url: &str, creds: Credentials) -> Result<WireClient> {
        Self::connect_with(url, creds, ClientOptions::default()).await
    }

    /// Connect with explicit options. All connections are opened (and authenticated) now, so a
    /// wrong URL or key fails here.
    pub async fn connect_with(url: &str, creds: Credentials, opts: ClientOptions) -> Result<WireClient> {
        let endpoint = Endpoint::parse(url).map_err(|e| Error::invalid_argument(e.to_string()))?;
        let n = opts.connections.max(1);
        let mut slots = Vec::with_capacity(n);
        for _ in 0..n {
            let c = ClientConn::open(&endpoint, &creds, &opts).await?;
            slots.push(Slot { conn: Mutex::new(Some(c)), reconnect: tokio::sync::Mutex::new(()) });
        }
        Ok(WireClient { endpoint, creds, opts, slots, next: AtomicUsize::new(0) })
    }

    /// The live connection of slot `i`, reconnecting when it was lost.
    async fn conn(&self, i: usize) -> Result<Arc<ClientConn>> {
        let slot = &self.slots[i];
        if let Some(c) = slot.conn.lock().unwrap().as_ref()
            && !c.dead.load(Ordering::Acquire)
        {
            return Ok(c.clone());
        }
        let _g = slot.reconnect.lock().await;
        if let Some(c) = slot.conn.lock().unwrap().as_ref()
            && !c.dead.load(Ordering::Acquire)
        {
            return Ok(c.clone());
        }
        let c = ClientConn::open(&self.endpoint, &self.creds, &self.opts).await?;
        *slot.conn.lock().unwrap() = Some(c.clone());
        Ok(c)
    }

    /// One call. A request that is safe to repeat ([`Request::replayable`], no streamed body) and
    /// fails because its connection was lost is sent once more on a fresh connection: the loss
    /// may have happened before the request was written (a server restart noticed only now).
    async fn call(&self, req: Request, body: Option<Body>, deferred: Option<Arc<OnceLock<String>>>) -> Result<Resp> {
        // A body in a buffer lent by `body_buffer` goes on the connection whose slot it is.
        let lent = match &body {
            Some(Body::Bytes(b)) if deferred.is_none() => Lent::of(b).and_then(|l| {
                let i = self.slots.iter().position(|s| {
                    s.conn.lock().unwrap().as_ref().is_some_and(|c| std::ptr::eq(Arc::as_ptr(c), l.conn.as_ptr()))
                })?;
                Some((i, l))
            }),
            _ => None,
        };
        let (i, lent) = match lent {
            Some((i, l)) => (i, Some(l)),
            None => (self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len(), None),
        };
        let replay_body = match &body {
            None => Some(None),
            Some(Body::Empty) => Some(Some(Body::Empty)),
            Some(Body::Bytes(b)) => Some(Some(Body::Bytes(b.clone()))),
            Some(_) => None,
        };
        let again = match replay_body {
            Some(b) if deferred.is_none() && self.opts.replay_on_reconnect && req.replayable() => {
                Some((req.clone(), b))
            }
            _ => None,
        };
        let mut conn = self.conn(i).await?;
        if again.is_none() && conn.out.peer_closed() {
            // Cannot be replayed: make sure it is not written to a connection the server has
            // already closed (a restart the reader task has not noticed yet).
            conn.fail_all("the server closed the connection".into());
            conn = self.conn(i).await?;
        }
        // Lent to another connection than the one in place now (replaced after a loss): copied.
        let lent = lent.filter(|l| std::ptr::eq(Arc::as_ptr(&conn), l.conn.as_ptr()));
        match conn.call(req, body, deferred, lent).await {
            Err(e) if is_conn_lost(&e) && again.is_some() => {
                let (req, body) = again.unwrap();
                tracing::debug!(error = %e, "binary protocol: replaying a request on a new connection");
                self.conn(i).await?.call(req, body, None, None).await
            }
            r => r,
        }
    }

    async fn call_unit(&self, req: Request) -> Result<()> {
        let r = self.call(req, None, None).await?;
        Dec::new(&r.payload[1..]).end()
    }

    /// A new self-service access key for this process's user (Unix sockets: the server takes
    /// the uid from the kernel). `lifetime`: `None` for the server's default.
    pub async fn create_access_key(
        &self,
        lifetime: Option<Duration>,
        description: &str,
    ) -> Result<(Credentials, s3hpc_core::creds::AccessKeyInfo)> {
        let req = Request::CreateAccessKey {
            lifetime: lifetime.map(|d| d.as_secs().max(1)),
            description: description.to_string(),
        };
        let r = self.call(req, None, None).await?;
        let (secret, info) = answer::<ops::CreateAccessKey>(&r)?;
        Ok((Credentials::new(info.access_key.clone(), secret), info))
    }

    /// The keys this process's user may see (its own; an administrator's: all).
    pub async fn list_access_keys(&self) -> Result<Vec<s3hpc_core::creds::AccessKeyInfo>> {
        let r = self.call(Request::ListAccessKeys {}, None, None).await?;
        answer::<ops::ListAccessKeys>(&r)
    }

    /// Revoke a key (this user's own; an administrator: any).
    pub async fn revoke_access_key(&self, access_key: &str) -> Result<()> {
        self.call_unit(Request::RevokeAccessKey { access_key: access_key.to_string() }).await
    }

    /// A request answered with an optional document (bucket configurations, object ACLs).
    async fn call_doc(&self, req: Request) -> Result<Option<Vec<u8>>> {
        let r = self.call(req, None, None).await?;
        answer::<ops::GetBucketConfig>(&r)
    }
}

/// A response: header, payload, the body channel (BODY_STREAM) or the passed file (BODY_FD).
type RespMsg = Result<(Header, Bytes, Option<mpsc::UnboundedReceiver<io::Result<Bytes>>>, Option<std::fs::File>)>;

struct Pending {
    resp: Option<oneshot::Sender<RespMsg>>,
    body: Option<mpsc::UnboundedSender<io::Result<Bytes>>>,
    upload_credit: Option<Arc<Semaphore>>,
    _permit: OwnedSemaphorePermit,
}

struct ClientConn {
    out: OutTx,
    pending: Mutex<HashMap<u32, Pending>>,
    dead: AtomicBool,
    dead_reason: Mutex<Option<String>>,
    limits: Limits,
    inflight: Arc<Semaphore>,
    next_id: AtomicU32,
    request_timeout: Option<Duration>,
    upload_frame: u32,
    /// Frames received so far (tells a silent connection from a slow request).
    frames_in: AtomicU64,
    /// The server accepts request bodies in upload slots (BODY_FD).
    fd_bodies: bool,
    slots: Mutex<SlotPool>,
}

/// Most bytes of upload slots one connection keeps.
const SLOT_BYTES_MAX: usize = 256 << 20;

/// A connection's upload slots: memory files shared with the server, each filled with one
/// request body at a time (BODY_FD requests, `docs/PROTOCOL.md`).
#[derive(Default)]
struct SlotPool {
    /// Slots not carrying a body.
    free: Vec<UploadSlot>,
    /// Ids with no slot behind them.
    spare_ids: Vec<u32>,
    /// Bytes of all slots, free or lent.
    bytes: usize,
}

struct UploadSlot {
    id: u32,
    map: crate::sys::SlotMap,
    /// The descriptor, until it has gone to the server with the slot's first body.
    unsent: Option<std::fs::File>,
}

/// A slot lent to one request. It goes back to the pool only once the server answered that
/// request with success; otherwise (error, timeout, lost connection, cancelled call) the server
/// may still be reading it, so it is dropped and its id later gets a new memory file.
struct SlotLease {
    conn: Arc<ClientConn>,
    slot: Option<UploadSlot>,
    done: bool,
}

impl SlotLease {
    /// A slot of at least `len` bytes: a free one, or a new one (in place of a smaller free
    /// one if no id is spare). `None` when every slot is lent or the byte budget is spent.
    fn take(conn: &Arc<ClientConn>, len: usize) -> Option<SlotLease> {
        let mut p = conn.slots.lock().unwrap();
        let lease = |slot| SlotLease { conn: conn.clone(), slot: Some(slot), done: false };
        if let Some(i) = p.free.iter().position(|s| s.map.len() >= len) {
            let slot = p.free.swap_remove(i);
            return Some(lease(slot));
        }
        let id = match p.spare_ids.pop() {
            Some(id) => id,
            None => {
                let i = (0..p.free.len()).min_by_key(|&i| p.free[i].map.len())?;
                let old = p.free.swap_remove(i);
                p.bytes -= old.map.len();
                old.id
            }
        };
        let size = len.next_multiple_of(1 << 20).min(frame::FD_BODY_MAX as usize);
        if p.bytes + size > SLOT_BYTES_MAX {
            p.spare_ids.push(id);
            return None;
        }
        // Reserved; the file is made (and its pages allocated) outside the lock.
        p.bytes += size;
        drop(p);
        match crate::sys::slot_file(size).and_then(|f| Ok((crate::sys::SlotMap::writable(&f)?, f))) {
            Ok((map, file)) => Some(lease(UploadSlot { id, map, unsent: Some(file) })),
            Err(e) => {
                tracing::debug!(error = %e, "no upload slot; the body streams");
                let mut p = conn.slots.lock().unwrap();
                p.bytes -= size;
                p.spare_ids.push(id);
                None
            }
        }
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.conn.give_back(slot, self.done);
        }
    }
}

/// A request whose frame is queued ([`ClientConn::send_request`]).
struct Sent {
    rx: oneshot::Receiver<RespMsg>,
    stream_body: Option<Body>,
    credit: Option<Arc<Semaphore>>,
    _slot_lease: Option<SlotLease>,
    lent_use: Option<LentUse>,
}

/// A slot lent to the caller by [`WireClient::body_buffer`], being filled.
struct LentBuffer {
    conn: Weak<ClientConn>,
    /// Taken when frozen.
    slot: Option<UploadSlot>,
    len: usize,
}

impl AsRef<[u8]> for LentBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.slot.as_ref().expect("not frozen").map.as_ref()[..self.len]
    }
}

impl AsMut<[u8]> for LentBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.slot.as_mut().expect("not frozen").map.bytes_mut()[..self.len]
    }
}

impl BufferMemory for LentBuffer {
    fn into_bytes(mut self: Box<Self>) -> Bytes {
        let UploadSlot { id, map, unsent } = self.slot.take().expect("frozen once");
        let base = map.as_ref().as_ptr() as usize;
        let lent = Arc::new(Lent {
            conn: std::mem::take(&mut self.conn),
            id,
            map: Some(map),
            len: self.len,
            unsent: Mutex::new(unsent),
            spoiled: AtomicBool::new(false),
        });
        LENT.lock().unwrap().insert(base, Arc::downgrade(&lent));
        Bytes::from_owner(LentView(lent))
    }
}

impl Drop for LentBuffer {
    fn drop(&mut self) {
        // Never frozen, so never sent: the server has not read it.
        if let (Some(slot), Some(conn)) = (self.slot.take(), self.conn.upgrade()) {
            conn.give_back(slot, true);
        }
    }
}

/// Frozen lent buffers by the address of their memory: a `Bytes` body starting there is (a
/// prefix of) that buffer, since a live mapping's address belongs to it alone.
static LENT: std::sync::LazyLock<Mutex<HashMap<usize, Weak<Lent>>>> = std::sync::LazyLock::new(Default::default);

/// A lent slot after [`BodyBuffer::freeze`]: the memory of any number of request bodies. Back to
/// its connection's pool when the last `Bytes` over it is dropped, unless a request that used it
/// did not end in success (the server might still read it; see [`SlotLease`]).
struct Lent {
    conn: Weak<ClientConn>,
    id: u32,
    /// Taken only in `drop`.
    map: Option<crate::sys::SlotMap>,
    len: usize,
    /// The descriptor until a request attaches it. Locked by the request that attaches it until
    /// its frame is queued, so every other request using the slot is queued after it.
    unsent: Mutex<Option<std::fs::File>>,
    spoiled: AtomicBool,
}

impl Lent {
    /// The lent buffer `b` is (a prefix of), if any.
    fn of(b: &Bytes) -> Option<Arc<Lent>> {
        if b.len() < frame::FD_BODY_MIN {
            return None;
        }
        let l = LENT.lock().unwrap().get(&(b.as_ptr() as usize))?.upgrade()?;
        (b.len() <= l.len).then_some(l)
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        let map = self.map.take().expect("dropped once");
        let base = map.as_ref().as_ptr() as usize;
        {
            let mut reg = LENT.lock().unwrap();
            // The entry is this buffer's unless the address was already mapped anew for another.
            if reg.get(&base).is_some_and(|w| w.strong_count() == 0) {
                reg.remove(&base);
            }
        }
        if let Some(conn) = self.conn.upgrade() {
            let unsent = self.unsent.get_mut().unwrap().take();
            conn.give_back(UploadSlot { id: self.id, map, unsent }, !*self.spoiled.get_mut());
        }
    }
}

/// The owner of a frozen lent buffer's `Bytes`.
struct LentView(Arc<Lent>);

impl AsRef<[u8]> for LentView {
    fn as_ref(&self) -> &[u8] {
        &self.0.map.as_ref().expect("live").as_ref()[..self.0.len]
    }
}

/// One request's use of a lent buffer: spoils the buffer unless the request ends in success.
struct LentUse {
    lent: Arc<Lent>,
    done: bool,
}

impl Drop for LentUse {
    fn drop(&mut self) {
        if !self.done {
            self.lent.spoiled.store(true, Ordering::Relaxed);
        }
    }
}

struct Resp {
    /// The RESPONSE payload, status byte included (always 0 here).
    payload: Bytes,
    /// Where the fields end and an inline body starts is known only to the caller's decoder.
    inline: bool,
    stream: Option<ClientBody>,
    file: Option<std::fs::File>,
}

impl ClientConn {
    /// A slot back from a request or the caller: into the free pool if the server is done
    /// with it (`reusable`), else dropped, its id free for a new file.
    fn give_back(&self, slot: UploadSlot, reusable: bool) {
        let mut p = self.slots.lock().unwrap();
        if reusable {
            p.free.push(slot);
        } else {
            p.bytes -= slot.map.len();
            p.spare_ids.push(slot.id);
        }
    }

    async fn open(ep: &Endpoint, creds: &Credentials, opts: &ClientOptions) -> Result<Arc<ClientConn>> {
        let timeout = opts.connect_timeout;
        let pflags = if opts.fd_passing && matches!(ep, Endpoint::Unix(_)) { frame::PREAMBLE_FD_PASSING } else { 0 };
        let fut = async {
            let stream = ep.connect(opts.ca_bundle.as_deref()).await.map_err(|e| conn_lost(format!("connect: {e}")))?;
            let (mut r, mut w) = stream.split()?;
            let io_err = |e: io::Error| conn_lost(format!("handshake: {e}"));
            w.write_all(&frame::client_preamble(pflags)).await.map_err(io_err)?;
            let mut sp = [0u8; frame::SERVER_PREAMBLE_LEN];
            r.read_exact(&mut sp).await.map_err(io_err)?;
            if sp[..4] != frame::MAGIC {
                return Err(conn_lost("the server does not speak the s3hpc binary protocol"));
            }
            let version = u16::from_le_bytes([sp[4], sp[5]]);
            if version != frame::VERSION {
                // The server follows a refusal with GOAWAY; report its reason when it arrives.
                if let Ok(e) = read_goaway(&mut r).await {
                    return Err(e);
                }
                return Err(conn_lost(format!("server refused protocol version {}", frame::VERSION)));
            }
            let server_flags = u16::from_le_bytes([sp[6], sp[7]]);
            let nonce: [u8; 32] = sp[8..40].try_into().unwrap();
            let mut e = Enc::new();
            e.str(&creds.access_key);
            if creds.access_key.is_empty() {
                // No key: a Unix-socket server maps this process's uid (SO_PEERCRED) to an account.
                e.bytes(&[]);
            } else {
                e.bytes(&auth_proof(&creds.secret_key, &nonce, &creds.access_key));
            }
            w.write_all(&frame_bytes(ty::AUTH, 0, 0, &e.finish())).await.map_err(io_err)?;
            let mut hdr = [0u8; HEADER_LEN];
            r.read_exact(&mut hdr).await.map_err(io_err)?;
            let h = Header::decode(&hdr, frame::MAX_DATA_FRAME_HARD).map_err(conn_lost)?;
            let mut p = vec![0u8; h.len as usize];
            r.read_exact(&mut p).await.map_err(io_err)?;
            match h.ty {
                ty::AUTH_OK => {
                    let limits = Limits::decode(&p).ok_or_else(|| conn_lost("bad limits in AUTH_OK"))?;
                    Ok((r, w, limits, server_flags))
                }
                ty::GOAWAY => Err(Dec::new(&p).error()?),
                t => Err(conn_lost(format!("unexpected frame {t:#04x} in the handshake"))),
            }
        };
        let (r, w, limits, server_flags) =
            tokio::time::timeout(timeout, fut).await.map_err(|_| conn_lost("handshake timed out"))??;
        let (out, drain) = crate::writer::writer(w);
        tokio::spawn(async move {
            if let Err(e) = drain.await {
                tracing::debug!(error = %e, "binary protocol client writer stopped");
            }
        });
        let conn = Arc::new(ClientConn {
            out,
            pending: Mutex::new(HashMap::new()),
            dead: AtomicBool::new(false),
            dead_reason: Mutex::new(None),
            limits,
            inflight: Arc::new(Semaphore::new(limits.max_inflight as usize)),
            next_id: AtomicU32::new(1),
            request_timeout: opts.request_timeout,
            upload_frame: opts.upload_frame.clamp(4096, limits.max_data_frame),
            fd_bodies: pflags & frame::PREAMBLE_FD_PASSING != 0 && server_flags & frame::SERVER_FD_BODIES != 0,
            slots: Mutex::new(SlotPool { spare_ids: (0..frame::MAX_SLOTS).rev().collect(), ..Default::default() }),
            frames_in: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&conn);
        tokio::spawn(async move {
            let reason = reader_task(r, &weak, limits).await;
            if let Some(c) = weak.upgrade() {
                c.fail_all(reason);
            }
        });
        Ok(conn)
    }

    fn fail_all(&self, reason: String) {
        self.dead.store(true, Ordering::Release);
        *self.dead_reason.lock().unwrap() = Some(reason.clone());
        let drained: Vec<Pending> = self.pending.lock().unwrap().drain().map(|(_, p)| p).collect();
        for p in drained {
            if let Some(r) = p.resp {
                let _ = r.send(Err(conn_lost(&reason)));
            }
            if let Some(b) = p.body {
                let _ = b.send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, conn_lost(&reason))));
            }
            if let Some(c) = p.upload_credit {
                c.close();
            }
        }
        let _ = self.out.send(Out::Close);
    }

    fn on_frame(
        &self,
        h: Header,
        payload: Bytes,
        fds: &mut std::collections::VecDeque<std::os::fd::OwnedFd>,
    ) -> std::result::Result<(), String> {
        self.frames_in.fetch_add(1, Ordering::Relaxed);
        let file = if h.ty == ty::RESPONSE && h.flags & flag::BODY_FD != 0 {
            match fds.pop_front() {
                Some(fd) => Some(std::fs::File::from(fd)),
                None => return Err("BODY_FD response without a descriptor".into()),
            }
        } else {
            None
        };
        let mut pending = self.pending.lock().unwrap();
        match h.ty {
            ty::RESPONSE => {
                let Some(p) = pending.get_mut(&h.id) else { return Ok(()) };
                let Some(resp) = p.resp.take() else {
                    return Err(format!("second RESPONSE for request {}", h.id));
                };
                if h.flags & flag::BODY_STREAM != 0 {
                    let (tx, rx) = mpsc::unbounded_channel();
                    p.body = Some(tx);
                    let _ = resp.send(Ok((h, payload, Some(rx), None)));
                } else {
                    if let Some(c) = &p.upload_credit {
                        c.close();
                    }
                    pending.remove(&h.id);
                    let _ = resp.send(Ok((h, payload, None, file)));
                }
            }
            ty::DATA => {
                if let Some(Pending { body: Some(b), .. }) = pending.get(&h.id) {
                    let _ = b.send(Ok(payload));
                }
            }
            ty::END => {
                pending.remove(&h.id);
            }
            ty::ABORT => {
                if let Some(p) = pending.remove(&h.id)
                    && let Some(b) = p.body
                {
                    let e = Dec::new(&payload).error().unwrap_or_else(|e| e);
                    let _ = b.send(Err(e.into()));
                }
            }
            ty::CREDIT => {
                if let Some(Pending { upload_credit: Some(c), .. }) = pending.get(&h.id) {
                    c.add_permits(u32::from_le_bytes(payload[..4].try_into().unwrap()) as usize);
                }
            }
            ty::GOAWAY => {
                let e = Dec::new(&payload).error().unwrap_or_else(|e| e);
                return Err(format!("server closed the connection: {e}"));
            }
            t => return Err(format!("unexpected frame type {t:#04x} from the server")),
        }
        Ok(())
    }

    async fn call(
        self: Arc<Self>,
        req: Request,
        body: Option<Body>,
        deferred: Option<Arc<OnceLock<String>>>,
        lent: Option<Arc<Lent>>,
    ) -> Result<Resp> {
        let permit = self.inflight.clone().acquire_owned().await.map_err(|_| conn_lost("closed"))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut e = Enc::new();
        req.encode(&mut e);
        let Sent { rx, stream_body, credit, _slot_lease: mut slot_lease, mut lent_use } =
            self.send_request(id, e, body, deferred.is_none(), lent, permit)?;
        let seen = self.frames_in.load(Ordering::Relaxed);
        let mut rx = rx;
        let msg = match (stream_body, credit) {
            (Some(body), Some(credit)) => {
                let t = self.request_timeout;
                let upload = upload(&self.out, id, body, credit, deferred, self.upload_frame, t);
                tokio::pin!(upload);
                let early = tokio::select! {
                    r = &mut rx => Some(r),
                    u = &mut upload => match u {
                        Ok(()) => None,
                        Err(()) => return Err(self.timed_out(id, seen, "upload credit")),
                    },
                };
                match early {
                    Some(r) => {
                        // The server answered before the body was complete: stop sending.
                        let _ = self.out.send(Out::Frames(frame_bytes(ty::ABORT, 0, id, &[])));
                        r
                    }
                    // The body is sent: the wait for the answer starts now.
                    None => self.response(id, &mut rx).await?,
                }
            }
            _ => self.response(id, &mut rx).await?,
        };
        let (h, payload, body_rx, file) = match msg {
            Ok(m) => m?,
            Err(_) => {
                let reason = self.dead_reason.lock().unwrap().clone().unwrap_or_else(|| "closed".into());
                return Err(conn_lost(reason));
            }
        };
        if payload.is_empty() {
            return Err(conn_lost("empty RESPONSE"));
        }
        if payload[0] != 0 {
            let mut d = Dec::new(&payload[1..]);
            return Err(d.error()?);
        }
        if let Some(l) = slot_lease.as_mut() {
            // The server is done with the slot's bytes: it may carry the next body.
            l.done = true;
        }
        if let Some(u) = lent_use.as_mut() {
            u.done = true;
        }
        let stream = body_rx.map(|rx| ClientBody {
            rx,
            conn: self.clone(),
            id,
            ungranted: 0,
            window: self.limits.initial_window,
            done: false,
            timer: None,
        });
        Ok(Resp { payload, inline: h.flags & flag::BODY_INLINE != 0, stream, file })
    }
}

impl ClientConn {
    /// Encode request `id`'s body fields (or inline body), register it as pending and queue its
    /// frame. Synchronous: a lent slot's lock is held from the decision to attach its
    /// descriptor until this frame is queued.
    #[allow(clippy::too_many_arguments)]
    fn send_request(
        self: &Arc<Self>,
        id: u32,
        mut e: Enc,
        body: Option<Body>,
        no_deferred: bool,
        lent: Option<Arc<Lent>>,
        permit: OwnedSemaphorePermit,
    ) -> Result<Sent> {
        let (mut fd_file, mut slot_lease, mut lent_use) = (None, None, None);
        let lent = lent.filter(|_| self.fd_bodies && no_deferred);
        let mut attaching = None;
        let (flags, stream_body) = match body {
            None | Some(Body::Empty) => (0, None),
            Some(Body::Bytes(b)) if b.len() <= INLINE_MAX && no_deferred => {
                e.buf.extend_from_slice(&b);
                (flag::BODY_INLINE, None)
            }
            Some(Body::Bytes(b)) if lent.is_some() => {
                // Already in a slot of this connection: no copy at all.
                let lent = lent.as_ref().unwrap();
                let mut unsent = lent.unsent.lock().unwrap();
                e.var(lent.id as u64);
                e.u8(unsent.is_some() as u8);
                e.var(b.len() as u64);
                fd_file = unsent.take();
                if fd_file.is_some() {
                    attaching = Some(unsent);
                } else {
                    drop(unsent);
                }
                lent_use = Some(LentUse { lent: lent.clone(), done: false });
                (flag::BODY_FD, None)
            }
            Some(Body::Bytes(b))
                if self.fd_bodies
                    && no_deferred
                    && b.len() >= frame::FD_BODY_MIN
                    && b.len() as u64 <= frame::FD_BODY_MAX =>
            {
                // One copy into an upload slot, which the server has mapped: the bytes do not
                // cross the socket. Without a free slot they stream.
                match SlotLease::take(self, b.len()) {
                    Some(mut lease) => {
                        let slot = lease.slot.as_mut().unwrap();
                        slot.map.fill(&b);
                        e.var(slot.id as u64);
                        e.u8(slot.unsent.is_some() as u8);
                        e.var(b.len() as u64);
                        fd_file = slot.unsent.take();
                        slot_lease = Some(lease);
                        (flag::BODY_FD, None)
                    }
                    None => (flag::BODY_STREAM, Some(Body::Bytes(b))),
                }
            }
            Some(b) => (flag::BODY_STREAM, Some(b)),
        };
        let (tx, rx) = oneshot::channel();
        let credit = stream_body.as_ref().map(|_| Arc::new(Semaphore::new(self.limits.initial_window as usize)));
        {
            let mut pending = self.pending.lock().unwrap();
            if self.dead.load(Ordering::Acquire) {
                let reason = self.dead_reason.lock().unwrap().clone().unwrap_or_default();
                return Err(conn_lost(reason));
            }
            pending.insert(id, Pending { resp: Some(tx), body: None, upload_credit: credit.clone(), _permit: permit });
        }
        let frame = frame_bytes(ty::REQUEST, flags, id, &e.finish());
        let item = match fd_file {
            Some(file) => Out::Fd { frame, file },
            None => Out::Frames(frame),
        };
        let sent = self.out.send(item);
        drop(attaching);
        if sent.is_err() {
            self.pending.lock().unwrap().remove(&id);
            return Err(conn_lost("writer stopped"));
        }
        Ok(Sent { rx, stream_body, credit, _slot_lease: slot_lease, lent_use })
    }

    /// Wait for the RESPONSE of request `id`, within the request timeout.
    async fn response(
        &self,
        id: u32,
        rx: &mut oneshot::Receiver<RespMsg>,
    ) -> Result<std::result::Result<RespMsg, oneshot::error::RecvError>> {
        let Some(t) = self.request_timeout else { return Ok(rx.await) };
        let seen = self.frames_in.load(Ordering::Relaxed);
        tokio::time::timeout(t, rx).await.map_err(|_| self.timed_out(id, seen, "response"))
    }

    /// Request `id` waited `request_timeout` for the server: forget it (a late answer is ignored),
    /// tell the server to stop, and give up on the connection if it has been silent all along
    /// (`seen`: the frame count when the wait began).
    fn timed_out(&self, id: u32, seen: u64, what: &str) -> Error {
        let t = self.request_timeout.unwrap_or_default();
        self.pending.lock().unwrap().remove(&id);
        let _ = self.out.send(Out::Frames(frame_bytes(ty::ABORT, 0, id, &[])));
        if self.frames_in.load(Ordering::Relaxed) == seen {
            self.fail_all(format!("no frame from the server for {t:?}"));
        }
        Error::new(
            ErrorCode::RequestTimeout,
            format!("binary protocol: the server sent no {what} for request {id} within {t:?}"),
        )
    }
}

async fn read_goaway(r: &mut ReadHalf) -> Result<Error> {
    let mut hdr = [0u8; HEADER_LEN];
    r.read_exact(&mut hdr).await.map_err(|e| conn_lost(e.to_string()))?;
    let h = Header::decode(&hdr, frame::MAX_DATA_FRAME_HARD).map_err(conn_lost)?;
    if h.ty != ty::GOAWAY {
        return Err(conn_lost("expected GOAWAY"));
    }
    let mut p = vec![0u8; h.len as usize];
    r.read_exact(&mut p).await.map_err(|e| conn_lost(e.to_string()))?;
    Dec::new(&p).error()
}

async fn reader_task(mut r: ReadHalf, conn: &std::sync::Weak<ClientConn>, limits: Limits) -> String {
    let dec = FrameDecoder { max_data: limits.max_data_frame };
    let mut buf = BytesMut::with_capacity(256 << 10);
    let mut fds = std::collections::VecDeque::new();
    loop {
        loop {
            match dec.decode(&mut buf) {
                Ok(Some((h, payload))) => {
                    let Some(c) = conn.upgrade() else { return "client dropped".into() };
                    if let Err(e) = c.on_frame(h, payload, &mut fds) {
                        return e;
                    }
                }
                Ok(None) => break,
                Err(e) => return format!("bad frame from the server: {e}"),
            }
        }
        if buf.capacity() - buf.len() < 64 << 10 {
            buf.reserve(256 << 10);
        }
        match r.read_with_fds(&mut buf, &mut fds).await {
            Ok(0) => return "the server closed the connection".into(),
            Ok(_) => {}
            Err(e) => return format!("read failed: {e}"),
        }
    }
}

/// Send a streamed request body within the server's credit. Body errors become ABORT frames
/// carrying the error, so the server's store sees an `Err` item and publishes nothing.
async fn upload(
    out: &OutTx,
    id: u32,
    body: Body,
    credit: Arc<Semaphore>,
    deferred: Option<Arc<OnceLock<String>>>,
    max_frame: u32,
    timeout: Option<Duration>,
) -> std::result::Result<(), ()> {
    let mut s = body.into_stream();
    while let Some(chunk) = s.next().await {
        let mut chunk = match chunk {
            Ok(c) => c,
            Err(err) => {
                let mut e = Enc::new();
                e.error(&Error::from(err));
                let _ = out.send(Out::Frames(frame_bytes(ty::ABORT, 0, id, &e.finish())));
                return Ok(());
            }
        };
        while !chunk.is_empty() {
            let n = (chunk.len() as u32).min(max_frame);
            let p = match timeout {
                None => credit.acquire_many(n).await,
                Some(t) => tokio::time::timeout(t, credit.acquire_many(n)).await.map_err(|_| ())?,
            };
            let Ok(p) = p else { return Ok(()) };
            p.forget();
            let header = Header { ty: ty::DATA, flags: 0, id, len: n }.encode();
            if out.send(Out::Data { header, payload: chunk.split_to(n as usize) }).is_err() {
                return Ok(());
            }
        }
    }
    let mut e = Enc::new();
    if let Some(v) = deferred.as_ref().and_then(|c| c.get()) {
        e.str(v);
    }
    let _ = out.send(Out::Frames(frame_bytes(ty::END, 0, id, &e.finish())));
    Ok(())
}

/// A response body arriving in DATA frames; grants credit as it is consumed and cancels the
/// transfer when dropped early.
struct ClientBody {
    rx: mpsc::UnboundedReceiver<io::Result<Bytes>>,
    conn: Arc<ClientConn>,
    id: u32,
    ungranted: u32,
    window: u32,
    done: bool,
    /// Armed while waiting for the next piece ([`ClientOptions::request_timeout`]), with the
    /// frame count when the wait began.
    timer: Option<(Pin<Box<tokio::time::Sleep>>, u64)>,
}

impl futures::Stream for ClientBody {
    type Item = io::Result<Bytes>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(b))) => {
                this.timer = None;
                this.ungranted += b.len() as u32;
                if this.ungranted >= this.window / 4 {
                    let n = std::mem::take(&mut this.ungranted);
                    let _ = this.conn.out.send(Out::Frames(credit_frame(this.id, n)));
                }
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let Some(t) = this.conn.request_timeout else { return Poll::Pending };
                // The wait starts now (not at the last chunk: the consumer may have been slow).
                let (sleep, seen) = this.timer.get_or_insert_with(|| {
                    (Box::pin(tokio::time::sleep(t)), this.conn.frames_in.load(Ordering::Relaxed))
                });
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let seen = *seen;
                this.done = true;
                this.timer = None;
                let e = this.conn.timed_out(this.id, seen, "body data");
                Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::TimedOut, e))))
            }
        }
    }
}

impl Drop for ClientBody {
    fn drop(&mut self) {
        if !self.done && self.conn.pending.lock().unwrap().remove(&self.id).is_some() {
            let _ = self.conn.out.send(Out::Frames(frame_bytes(ty::ABORT, 0, self.id, &[])));
        }
    }
}

fn upload_fields(
    content_md5: Option<[u8; 16]>,
    checksum: Option<&ChecksumRequest>,
    content_length: Option<u64>,
) -> (UploadFields, Option<Arc<OnceLock<String>>>) {
    let mut deferred = None;
    let checksum = checksum.map(|c| WireChecksum {
        algorithm: c.algorithm,
        expected: match &c.expected {
            None => WireExpected::None,
            Some(Expected::Known(v)) => WireExpected::Known(v.clone()),
            Some(Expected::Deferred(cell)) => match cell.get() {
                Some(v) => WireExpected::Known(v.clone()),
                None => {
                    deferred = Some(cell.clone());
                    WireExpected::Deferred
                }
            },
        },
    });
    (UploadFields { content_md5, checksum, content_length }, deferred)
}

fn fields(r: &Resp) -> Dec<'_> {
    Dec::new(&r.payload[1..])
}

/// The success payload of operation `O`, read with its declared encoding (the one the server
/// wrote it with), to its end.
fn answer<O: Op>(r: &Resp) -> Result<Output<O>> {
    get_output::<O>(&mut fields(r))
}

#[async_trait]
impl Store for WireClient {
    /// A buffer in one of a connection's upload slots (Unix socket with descriptor passing,
    /// [`FD_BODY_MIN`](frame::FD_BODY_MIN) to [`FD_BODY_MAX`](frame::FD_BODY_MAX) bytes): a
    /// body sent from it crosses neither the socket nor a copy. Requests with such a body go on
    /// the slot's connection. It counts against that connection's slots (16, 256 MiB) until its
    /// last `Bytes` is dropped; `None` when they are all taken.
    fn body_buffer(&self, len: usize) -> Option<BodyBuffer> {
        if len < frame::FD_BODY_MIN || len as u64 > frame::FD_BODY_MAX {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let conn = self.slots[i].conn.lock().unwrap().clone()?;
        if conn.dead.load(Ordering::Acquire) || !conn.fd_bodies {
            return None;
        }
        let slot = SlotLease::take(&conn, len)?.slot.take();
        Some(BodyBuffer::new(LentBuffer { conn: Arc::downgrade(&conn), slot, len }))
    }

    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::CreateBucket { bucket: bucket.into() }).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::DeleteBucket { bucket: bucket.into() }).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::HeadBucket { bucket: bucket.into() }).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let r = self.call(Request::ListBuckets {}, None, None).await?;
        answer::<ops::ListBuckets>(&r)
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        let r = self.call(Request::GetBucketTagging { bucket: bucket.into() }, None, None).await?;
        answer::<ops::GetBucketTagging>(&r)
    }
    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        self.call_doc(Request::GetBucketConfig { bucket: bucket.into(), name: name.into() }).await
    }
    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.call_unit(Request::PutBucketConfig { bucket: bucket.into(), name: name.into(), doc }).await
    }
    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        let req = Request::Fs { bucket: bucket.into(), key: key.into(), op: op.encode() };
        let r = self.call(req, None, None).await?;
        let attr = answer::<ops::Fs>(&r)?;
        s3hpc_core::fsattr::FsAttr::parse(&attr)
    }

    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.call_doc(Request::GetObjectAcl { bucket: bucket.into(), key: key.into() }).await
    }
    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.call_unit(Request::PutObjectAcl { bucket: bucket.into(), key: key.into(), doc }).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.call_unit(Request::PutBucketTagging { bucket: bucket.into(), tags }).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::DeleteBucketTagging { bucket: bucket.into() }).await
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        refuse_lock(&req.lock)?;
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::PutObject {
            bucket: bucket.into(),
            key: key.into(),
            meta: req.meta,
            tags: req.tags,
            conditions: req.conditions,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::PutObject>(&r)
    }

    /// The binary protocol is s3hpc's own: its server always appends.
    async fn appends(&self, _bucket: &str) -> bool {
        true
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::AppendObject {
            bucket: bucket.into(),
            key: key.into(),
            offset,
            meta: req.meta,
            tags: req.tags,
            conditions: req.conditions,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::AppendObject>(&r)
    }

    async fn rename_object(
        &self,
        bucket: &str,
        src_key: &str,
        dst_key: &str,
        req: s3hpc_core::RenameObjectRequest,
    ) -> Result<()> {
        self.call_unit(Request::RenameObject {
            bucket: bucket.into(),
            src_key: src_key.into(),
            dst_key: dst_key.into(),
            source_conditions: req.source_conditions,
            conditions: req.conditions,
            client_token: req.client_token,
        })
        .await
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        refuse_version(&req.version_id)?;
        let r =
            self.call(Request::GetObject { bucket: bucket.into(), key: key.into(), req: (&req).into() }, None, None);
        let mut r = r.await?;
        let (file, stream) = (r.file.take(), r.stream.take());
        let mut d = fields(&r);
        let (info, range) = <<ops::GetObject as Op>::Out as Field>::get(&mut d)?;
        let at = 1 + d.pos();
        let body = if let Some(file) = file {
            let (offset, len) = (d.var()?, d.var()?);
            d.end()?;
            if offset.checked_add(len).is_none() {
                return Err(conn_lost("bad file region"));
            }
            Body::File { file, offset, len }
        } else if r.inline {
            Body::from(r.payload.slice(at..))
        } else {
            d.end()?;
            match stream {
                Some(s) => Body::Stream(Box::pin(s)),
                None => Body::Empty,
            }
        };
        Ok(GetObjectOutput { info, range, body })
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        refuse_version(&req.version_id)?;
        let r = Request::HeadObject { bucket: bucket.into(), key: key.into(), req: (&req).into() };
        let r = self.call(r, None, None).await?;
        answer::<ops::HeadObject>(&r)
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.call_unit(Request::DeleteObject { bucket: bucket.into(), key: key.into() }).await
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        refuse_lock(&req.lock)?;
        refuse_version(&req.source_version_id)?;
        let r = Request::CopyObject {
            src_bucket: src_bucket.into(),
            src_key: src_key.into(),
            dst_bucket: dst_bucket.into(),
            dst_key: dst_key.into(),
            req: (&req).into(),
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::CopyObject>(&r)
    }

    async fn get_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<s3hpc_core::ObjectTagging> {
        refuse_version(&version_id.map(str::to_owned))?;
        let r = self.call(Request::GetObjectTagging { bucket: bucket.into(), key: key.into() }, None, None).await?;
        let t = answer::<ops::GetObjectTagging>(&r)?;
        Ok(s3hpc_core::ObjectTagging { tags: t, version_id: None })
    }
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        refuse_version(&version_id.map(str::to_owned))?;
        self.call_unit(Request::PutObjectTagging { bucket: bucket.into(), key: key.into(), tags }).await.map(|_| None)
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        refuse_version(&version_id.map(str::to_owned))?;
        self.call_unit(Request::DeleteObjectTagging { bucket: bucket.into(), key: key.into() }).await.map(|_| None)
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let r = self.call(Request::ListObjects { bucket: bucket.into(), req }, None, None).await?;
        answer::<ops::ListObjects>(&r)
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        refuse_lock(&req.lock)?;
        let r = Request::CreateMultipart {
            bucket: bucket.into(),
            key: key.into(),
            meta: req.meta,
            tags: req.tags,
            checksum_algorithm: req.checksum_algorithm,
            checksum_type: req.checksum_type,
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::CreateMultipart>(&r)
    }

    async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo> {
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::UploadPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part_number,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::UploadPart>(&r)
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        refuse_version(&src.version_id)?;
        let r = Request::UploadPartCopy {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part_number,
            src_bucket: src.bucket,
            src_key: src.key,
            src_range: src.range,
            src_conditions: src.conditions,
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::UploadPartCopy>(&r)
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        let r = Request::ListParts { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into(), req };
        let r = self.call(r, None, None).await?;
        answer::<ops::ListParts>(&r)
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let r = self.call(Request::ListUploads { bucket: bucket.into(), req }, None, None).await?;
        answer::<ops::ListUploads>(&r)
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let r = Request::CompleteMultipart { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into(), req };
        let r = self.call(r, None, None).await?;
        answer::<ops::CompleteMultipart>(&r)
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.call_unit(Request::AbortMultipart { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into() })
            .await
    }
}

/// The protocol does not carry version ids (PROTOCOL.md 8a): a request naming a version is
/// refused rather than answered from the current version.
fn refuse_version(version_id: &Option<String>) -> Result<()> {
    match version_id {
        None => Ok(()),
        Some(_) => Err(Error::not_implemented("the binary protocol does not carry version ids")),
    }
}

/// The protocol does not carry object lock parameters (PROTOCOL.md 8a): a write that asks for a
/// retention or legal hold is refused rather than stored without it.
fn refuse_lock(lock: &s3hpc_core::ObjectLock) -> Result<()> {
    if lock.is_empty() {
        Ok(())
    } else {
        Err(Error::not_implemented("the binary protocol does not carry object lock parameters"))
    }
}
