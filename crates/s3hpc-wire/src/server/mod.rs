//! The binary-protocol server: accepts Unix or TCP connections, authenticates them, and runs
//! every request of a connection concurrently against a [`DynStore`].
//!
//! Per connection: one reader (this task) decodes frames and routes body chunks, one writer task
//! owns the socket's write side and coalesces small frames into single writes (and sends file
//! regions with `sendfile`), and one task per request calls the store; for stores that offload
//! blocking file-system work, the quick requests decoded from one read run instead as a batch
//! on one blocking-pool thread, or right on the connection's thread when it has one of its own
//! ([`ServerOptions::dedicated_threads`]; see `Conn::flush_batch`).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use rand::RngCore;
use s3hpc_core::{
    Body, ChecksumRequest, CredentialSet, DynStore, Error, ErrorCode, Expected, PartCopySource, PutObjectRequest,
    UploadPartRequest,
};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::codec::{Dec, Enc, Request, UploadFields, WireExpected};
use crate::frame::{self, FrameDecoder, HEADER_LEN, Header, INLINE_MAX, Limits, flag, put_frame, ty};
use crate::ops::{ops, put_output as out};
use crate::sys::{Endpoint, ReadHalf, Stream, verify_proof};

mod conn;
mod exec;
mod fuzz;
mod listen;
mod payload;
#[doc(hidden)]
pub use fuzz::fuzz_connection;
pub use listen::{ServerHandle, WireServer, bind, serve};
use {conn::*, exec::*, payload::*};

/// Server tuning and policy.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest DATA frame payload (at most 4 MiB).
    pub max_data_frame: u32,
    /// Per-request flow-control window, both directions (>= `max_data_frame`).
    pub initial_window: u32,
    /// Requests a client may have in flight on one connection.
    pub max_inflight: u32,
    /// Time a new connection gets to finish the handshake.
    pub handshake_timeout: Duration,
    /// On Unix sockets: peers whose uid (SO_PEERCRED) is listed may authenticate with the access
    /// key alone (an empty proof). `None`: every peer must prove the secret.
    pub trusted_uids: Option<Vec<u32>>,
    /// On Unix sockets: refuse peers whose uid is not in `trusted_uids`, even with a valid proof.
    pub require_trusted_uid: bool,
    /// On Unix sockets, to clients that offer it: answer GETs of file-backed bodies larger than
    /// the inline limit by passing the open file descriptor (SCM_RIGHTS) instead of the bytes.
    pub fd_passing: bool,
    /// Connections served each on a thread of its own (running its own single-threaded Tokio
    /// runtime) rather than on the shared runtime; further connections share the runtime. On its
    /// own thread a connection reads, runs its quick requests (stores that
    /// [offload their I/O](s3hpc_core::Capabilities::offloads_io)) and writes their responses with no
    /// hand-off between threads. 0: every connection on the shared runtime.
    pub dedicated_threads: usize,
    /// The TLS configuration of `tls://` listeners (certificate resolver and versions; see
    /// [`crate::tls::server_config`]). A `tls://` listener without it is refused at bind.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Told of every request answered (metrics).
    pub observer: Option<Arc<dyn Observer>>,
    /// Self-service keys (`s3hpc credentials`): on Unix sockets, a peer may create, list and
    /// revoke keys of its own uid (SO_PEERCRED), and may connect without a key or account to do
    /// only that. `None`: those operations answer `NotImplemented`.
    pub keys: Option<Arc<dyn s3hpc_core::creds::KeyAdmin>>,
}

/// Sees every request the server answers: for metrics (`s3hpc serve --admin-listen`).
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// One request of operation `op` (the [`Request`] variant's name) answered by the store in
    /// `elapsed`, with the error code if it failed. Response bodies still streaming are not
    /// counted in `elapsed`.
    fn request(&self, op: &'static str, error: Option<ErrorCode>, elapsed: Duration);
}

/// The default of [`ServerOptions::dedicated_threads`].
pub const DEDICATED_THREADS: usize = 64;

/// Blocking-pool threads of a connection served on a thread of its own.
const CONN_BLOCKING_THREADS: usize = 32;

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            max_data_frame: 1 << 20,
            initial_window: 4 << 20,
            max_inflight: 256,
            handshake_timeout: Duration::from_secs(10),
            trusted_uids: None,
            require_trusted_uid: false,
            fd_passing: true,
            dedicated_threads: DEDICATED_THREADS,
            tls: None,
            observer: None,
            keys: None,
        }
    }
}

impl ServerOptions {
    fn limits(&self) -> Limits {
        let max_data_frame = self.max_data_frame.clamp(4096, frame::MAX_DATA_FRAME_HARD);
        Limits {
            max_data_frame,
            initial_window: self.initial_window.max(max_data_frame),
            max_inflight: self.max_inflight.max(1),
        }
    }
}

pub(crate) use crate::writer::{Out, OutTx};

pub(crate) fn frame_bytes(ty: u8, flags: u8, id: u32, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(HEADER_LEN + payload.len());
    put_frame(&mut b, ty, flags, id, payload);
    b.freeze()
}

pub(crate) fn credit_frame(id: u32, n: u32) -> Bytes {
    frame_bytes(ty::CREDIT, 0, id, &n.to_le_bytes())
}

fn goaway(e: &Error) -> Bytes {
    let mut enc = Enc::new();
    enc.error(e);
    frame_bytes(ty::GOAWAY, 0, 0, &enc.finish())
}

// ---------------------------------------------------------------------------------------------
// flow-controlled incoming bodies

/// Credit accounting shared by the reader (which charges DATA frames) and the body consumer
/// (which returns credit as it consumes).
pub(crate) struct InCredit {
    pub remaining: AtomicI64,
    pub window: u32,
}

/// A received body as a stream that grants credit back as it is consumed.
pub(crate) struct CreditedBody {
    pub rx: mpsc::UnboundedReceiver<io::Result<Bytes>>,
    pub credit: Arc<InCredit>,
    pub out: OutTx,
    pub id: u32,
    pub ungranted: u32,
}

impl futures::Stream for CreditedBody {
    type Item = io::Result<Bytes>;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.rx.poll_recv(cx) {
            std::task::Poll::Ready(Some(Ok(b))) => {
                this.ungranted += b.len() as u32;
                if this.ungranted >= this.credit.window / 4 {
                    let n = std::mem::take(&mut this.ungranted);
                    this.credit.remaining.fetch_add(n as i64, Ordering::AcqRel);
                    let _ = this.out.send(Out::Frames(credit_frame(this.id, n)));
                }
                std::task::Poll::Ready(Some(Ok(b)))
            }
            other => other,
        }
    }
}

enum Inbound {
    Live {
        tx: mpsc::UnboundedSender<io::Result<Bytes>>,
        credit: Arc<InCredit>,
        deferred: Option<Arc<OnceLock<String>>>,
    },
    /// The handler no longer wants the body: drop chunks until END/ABORT.
    Discard { credit: Arc<InCredit> },
}

struct Active {
    /// Credit for the response body (the client grants it).
    credit: Arc<Semaphore>,
}

struct ConnShared {
    active: Mutex<HashMap<u32, Active>>,
    inflight: AtomicU32,
    observer: Option<Arc<dyn Observer>>,
}

struct Conn {
    store: DynStore,
    out: OutTx,
    shared: Arc<ConnShared>,
    limits: Limits,
    inbound: HashMap<u32, Inbound>,
    /// The client accepts BODY_FD responses, and may send BODY_FD requests.
    fd_ok: bool,
    /// Descriptors received and not yet taken by a BODY_FD request, in arrival order.
    fds: std::collections::VecDeque<std::os::fd::OwnedFd>,
    /// The client's upload slots, mapped (BODY_FD requests).
    slots: [Option<Arc<crate::sys::SlotMap>>; frame::MAX_SLOTS as usize],
    /// `run` returned (the connection ended by itself). If the connection is dropped without
    /// that (the task was cancelled: server shutdown), the socket is torn down at once.
    ended: bool,
    /// Quick requests decoded since the last read, run together on one thread (only for stores
    /// that [offload their I/O](s3hpc_core::Capabilities::offloads_io)).
    batch: Vec<Job>,
    /// The connection has a thread of its own ([`ServerOptions::dedicated_threads`]): batches
    /// run right here.
    dedicated: bool,
    /// The POSIX identity the connection's requests act as (its account's; `None`: the
    /// gateway's).
    ident: Option<s3hpc_core::identity::Identity>,
    /// Who the connection's requests are made by, for S3 authorization.
    caller: Option<Arc<s3hpc_core::caller::Caller>>,
    /// The peer's uid (Unix sockets), for self-service key operations.
    peer_uid: Option<u32>,
    keys: Option<Arc<dyn s3hpc_core::creds::KeyAdmin>>,
    /// Authenticated for key operations only (no account has the peer's uid).
    keys_only: bool,
}

/// A quick request waiting in a connection's batch.
struct Job {
    id: u32,
    req: Request,
    body: Body,
    credit: Arc<Semaphore>,
}

/// At most this many requests run in one batch; more start another.
const BATCH_MAX: usize = 8;

/// Requests that a batch may run: single small file-system operations (bodies, if any, came
/// inline in the request frame). Listings, copies and multipart completion, which can take long,
/// and streamed bodies, which arrive through the reader, run in tasks of their own.
fn quick(req: &Request) -> bool {
    use Request::*;
    matches!(
        req,
        HeadBucket { .. }
            | PutObject { .. }
            | GetObject { .. }
            | HeadObject { .. }
            | DeleteObject { .. }
            | GetObjectTagging { .. }
            | PutObjectTagging { .. }
            | DeleteObjectTagging { .. }
    )
}
