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

mod conn;
mod slots;
mod store;
use {conn::*, slots::*, store::answer};

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

/// A request whose frame is queued ([`ClientConn::send_request`]).
struct Sent {
    rx: oneshot::Receiver<RespMsg>,
    stream_body: Option<Body>,
    credit: Option<Arc<Semaphore>>,
    _slot_lease: Option<SlotLease>,
    lent_use: Option<LentUse>,
}

struct Resp {
    /// The RESPONSE payload, status byte included (always 0 here).
    payload: Bytes,
    /// Where the fields end and an inline body starts is known only to the caller's decoder.
    inline: bool,
    stream: Option<ClientBody>,
    file: Option<std::fs::File>,
}
