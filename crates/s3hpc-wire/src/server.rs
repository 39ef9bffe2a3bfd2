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

enum Listener {
    Unix(UnixListener, std::path::PathBuf),
    Tcp(TcpListener),
    Tls(TcpListener),
}

/// A connection as accepted: ready to serve, or a TCP connection of a `tls://` listener whose
/// handshake runs on the connection's own task (a slow client must not hold up `accept`).
enum Accepted {
    Ready(Stream),
    Tls(TcpStream),
}

/// A bound, not yet running server (bind first to learn the address of port 0).
pub struct WireServer {
    listener: Listener,
    url: String,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: Arc<ServerOptions>,
}

/// Bind a listener: `unix:///path` (a stale socket file at the path is replaced) or
/// `tcp://host:port` (port 0 picks a free port; see [`WireServer::url`]).
pub async fn bind(
    listen: &str,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: ServerOptions,
) -> io::Result<WireServer> {
    let (listener, url) = match Endpoint::parse(listen)? {
        Endpoint::Unix(path) => {
            if let Ok(md) = std::fs::symlink_metadata(&path) {
                use std::os::unix::fs::FileTypeExt;
                if md.file_type().is_socket() {
                    std::fs::remove_file(&path)?;
                }
            }
            let l = UnixListener::bind(&path)?;
            (Listener::Unix(l, path.clone()), format!("unix://{}", path.display()))
        }
        Endpoint::Tcp(addr) => {
            let l = TcpListener::bind(&addr).await?;
            let url = format!("tcp://{}", l.local_addr()?);
            (Listener::Tcp(l), url)
        }
        Endpoint::Tls(addr) => {
            if opts.tls.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("tls://{addr} needs a certificate and key (--tls-cert, --tls-key)"),
                ));
            }
            let l = TcpListener::bind(&addr).await?;
            let url = format!("tls://{}", l.local_addr()?);
            (Listener::Tls(l), url)
        }
    };
    Ok(WireServer { listener, url, store, creds, opts: Arc::new(opts) })
}

/// Serve until `shutdown` resolves: bind `listen` (`unix:///path` or `tcp://127.0.0.1:PORT`) and
/// run. Open connections are closed at shutdown (uploads in progress publish nothing).
pub async fn serve(
    listen: &str,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: ServerOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    bind(listen, store, creds, opts).await?.run(shutdown).await
}

impl WireServer {
    /// The URL clients connect to (with the real port when bound to port 0).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Accept connections until `shutdown` resolves.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> io::Result<()> {
        let WireServer { listener, url, store, creds, opts } = self;
        tracing::info!(%url, "binary protocol server listening");
        let mut conns = JoinSet::new();
        // Connections on threads of their own: each ends when told to stop, and `threads` sees
        // them go (a waiter per thread, woken when the thread drops its sender).
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut threads = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => continue,
                Some(_) = threads.join_next(), if !threads.is_empty() => continue,
                a = accept(&listener) => a,
            };
            let accepted = match accepted {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let (store, creds, opts) = (store.clone(), creds.clone(), opts.clone());
            if threads.len() < opts.dedicated_threads {
                let (gone, waiter) = tokio::sync::oneshot::channel::<()>();
                let mut stopped = stopped.clone();
                let serve = move || {
                    let _gone = gone;
                    // The runtime's own blocking pool serves this connection's other requests
                    // (a streamed PUT's writer, listings); bounded well below Tokio's 512 per
                    // runtime, since there may be many such runtimes. Beyond it they queue.
                    let built = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .max_blocking_threads(CONN_BLOCKING_THREADS)
                        .build();
                    let rt = match built {
                        Ok(rt) => rt,
                        Err(e) => return tracing::warn!(error = %e, "cannot start a connection's runtime"),
                    };
                    rt.block_on(async move {
                        tokio::select! {
                            r = serve_accepted(accepted, store, creds, opts, true) => {
                                if let Err(e) = r {
                                    tracing::warn!(error = %e, "binary protocol connection closed with an error");
                                }
                            }
                            // Shutdown: dropping the connection tears it down, as for the
                            // shared runtime's tasks below.
                            _ = stopped.wait_for(|s| *s) => {}
                        }
                    });
                };
                match std::thread::Builder::new().name("s3hpc-wire-conn".into()).spawn(serve) {
                    Ok(thread) => {
                        threads.spawn(async move {
                            let _ = waiter.await;
                            // The sender drops just before the thread returns: join it, so a
                            // shutdown that waited for `threads` returns with the thread gone.
                            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
                        });
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot start a connection's thread; connection dropped"),
                }
                continue;
            }
            conns.spawn(async move {
                if let Err(e) = serve_accepted(accepted, store, creds, opts, false).await {
                    tracing::warn!(error = %e, "binary protocol connection closed with an error");
                }
            });
        }
        let _ = stop.send(true);
        conns.shutdown().await;
        while threads.join_next().await.is_some() {}
        if let Listener::Unix(_, path) = &listener {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    /// Run on a background task; the handle stops it.
    pub fn spawn(self) -> ServerHandle {
        let url = self.url.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(self.run(async move {
            let _ = rx.await;
        }));
        ServerHandle { url, stop: Some(tx), task }
    }
}

/// A server running in the background.
pub struct ServerHandle {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<io::Result<()>>,
}

impl ServerHandle {
    /// Stop accepting, close every connection, and wait.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        (&mut self.task).await.map_err(io::Error::other)?
    }
}

async fn accept(l: &Listener) -> io::Result<Accepted> {
    match l {
        Listener::Unix(l, _) => {
            let s = l.accept().await?.0;
            crate::sys::tune_unix(&s);
            Ok(Accepted::Ready(Stream::Unix(s)))
        }
        Listener::Tcp(l) => {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            Ok(Accepted::Ready(Stream::Tcp(s)))
        }
        Listener::Tls(l) => {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            Ok(Accepted::Tls(s))
        }
    }
}

/// Finish a `tls://` connection's handshake, then serve it.
async fn serve_accepted(
    accepted: Accepted,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: Arc<ServerOptions>,
    dedicated: bool,
) -> io::Result<()> {
    let stream = match accepted {
        Accepted::Ready(s) => s,
        Accepted::Tls(tcp) => {
            let cfg =
                opts.tls.clone().ok_or_else(|| io::Error::other("tls:// listener without a TLS configuration"))?;
            Stream::Tls(crate::tls::accept(tcp, cfg, opts.handshake_timeout).await?)
        }
    };
    handle_connection(stream, store, creds, opts, dedicated).await
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

// ---------------------------------------------------------------------------------------------
// a connection

impl ConnShared {
    /// Request `id` is done: forget it.
    fn finish(&self, id: u32) {
        self.active.lock().unwrap().remove(&id);
        self.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn proto(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidRequest, msg.into())
}

async fn read_exact_timeout<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8], t: Duration) -> io::Result<()> {
    match tokio::time::timeout(t, r.read_exact(buf)).await {
        Ok(res) => res.map(|_| ()),
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timed out")),
    }
}

async fn handle_connection(
    stream: Stream,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: Arc<ServerOptions>,
    dedicated: bool,
) -> io::Result<()> {
    let peer_uid = stream.peer_uid();
    let is_unix = matches!(stream, Stream::Unix(_));
    // Encrypted or local: what `aws:SecureTransport` says to bucket policies.
    let secure = matches!(stream, Stream::Unix(_) | Stream::Tls(_));
    let trusted = match (&opts.trusted_uids, peer_uid) {
        (Some(list), Some(uid)) => list.contains(&uid),
        _ => false,
    };
    let (mut r, mut w) = stream.split()?;
    let limits = opts.limits();

    // ---- handshake
    let mut pre = [0u8; frame::CLIENT_PREAMBLE_LEN];
    read_exact_timeout(&mut r, &mut pre, opts.handshake_timeout).await?;
    let mut nonce = [0u8; 32];
    rand::rng().fill_bytes(&mut nonce);
    let mut sp = BytesMut::with_capacity(frame::SERVER_PREAMBLE_LEN);
    sp.extend_from_slice(&frame::MAGIC);
    let client_flags = frame::parse_client_preamble(&pre);
    if let Err(msg) = client_flags {
        sp.extend_from_slice(&0u16.to_le_bytes());
        sp.extend_from_slice(&0u16.to_le_bytes());
        sp.extend_from_slice(&nonce);
        sp.extend_from_slice(&goaway(&proto(msg.clone())));
        let _ = w.write_all(&sp).await;
        w.shutdown_write();
        return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
    }
    let fd_ok = is_unix && opts.fd_passing && client_flags.unwrap_or(0) & frame::PREAMBLE_FD_PASSING != 0;
    sp.extend_from_slice(&frame::VERSION.to_le_bytes());
    let sflags = if trusted { frame::SERVER_TRUSTED } else { 0 } | if fd_ok { frame::SERVER_FD_BODIES } else { 0 };
    sp.extend_from_slice(&sflags.to_le_bytes());
    sp.extend_from_slice(&nonce);
    w.write_all(&sp).await?;

    let mut hdr = [0u8; HEADER_LEN];
    read_exact_timeout(&mut r, &mut hdr, opts.handshake_timeout).await?;
    let auth = match Header::decode(&hdr, limits.max_data_frame) {
        Ok(h) if h.ty == ty::AUTH && h.len <= 4096 => {
            let mut p = vec![0u8; h.len as usize];
            read_exact_timeout(&mut r, &mut p, opts.handshake_timeout).await?;
            check_auth(&p, &nonce, &creds, trusted, peer_uid, &opts)
        }
        Ok(h) => Err(proto(format!("expected an AUTH frame, got type {:#04x} of {} bytes", h.ty, h.len))),
        Err(m) => Err(proto(m)),
    };
    let access_key = match auth {
        // No account has the peer's uid, but it may manage its own keys: a connection that
        // can do only that.
        Err(e)
            if e.code == ErrorCode::AccessDenied
                && is_unix
                && peer_uid.is_some()
                && opts.keys.is_some()
                && e.message.starts_with(NO_ACCOUNT) =>
        {
            String::new()
        }
        Ok(ak) => ak,
        Err(e) => {
            let _ = w.write_all(&goaway(&e)).await;
            w.shutdown_write();
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("handshake failed: {e}")));
        }
    };
    w.write_all(&frame_bytes(ty::AUTH_OK, 0, 0, &limits.encode())).await?;
    tracing::debug!(access_key, ?peer_uid, "binary protocol client authenticated");

    // ---- frames
    let (out, drain) = crate::writer::writer(w);
    let writer = tokio::spawn(drain);
    let shared = Arc::new(ConnShared {
        active: Mutex::new(HashMap::new()),
        inflight: AtomicU32::new(0),
        observer: opts.observer.clone(),
    });
    let mut conn = Conn {
        store,
        out: out.clone(),
        shared: shared.clone(),
        limits,
        inbound: HashMap::new(),
        fd_ok,
        fds: std::collections::VecDeque::new(),
        slots: Default::default(),
        ended: false,
        batch: Vec::new(),
        dedicated,
        // With `--identity posix`, every request of the connection acts as its account's
        // POSIX user (task-locals do not cross the spawns below, so each carries it).
        ident: creds.identity_for(&access_key),
        // S3 authorization sees the connection's account; a Unix socket or TLS is a secure transport.
        caller: creds
            .account_for(&access_key)
            .map(|a| Arc::new(s3hpc_core::caller::Caller { account: Some(a), secure, ..Default::default() })),
        peer_uid: if is_unix { peer_uid } else { None },
        keys: opts.keys.clone(),
        keys_only: access_key.is_empty(),
    };
    let res = conn.run(&mut r).await;
    conn.ended = true;

    conn.teardown();
    if let Err(e) = &res {
        let _ = out.send(Out::Frames(goaway(e)));
        let _ = out.send(Out::Close);
    }
    drop(conn);
    drop(out);
    match res {
        Ok(()) => {
            let _ = writer.await;
            Ok(())
        }
        Err(e) => {
            // Give the writer a moment to deliver GOAWAY, then drop the connection.
            let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
            Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
        }
    }
}

/// The start of the handshake's refusal when no account has the peer's uid.
const NO_ACCOUNT: &str = "no account has the peer's uid ";

fn check_auth(
    p: &[u8],
    nonce: &[u8; 32],
    creds: &CredentialSet,
    trusted: bool,
    peer_uid: Option<u32>,
    opts: &ServerOptions,
) -> Result<String, Error> {
    let mut d = Dec::new(p);
    let ak = d.str()?;
    let proof = d.bytes(64)?;
    d.end()?;
    if opts.require_trusted_uid && peer_uid.is_some() && !trusted {
        return Err(Error::new(ErrorCode::AccessDenied, format!("peer uid {peer_uid:?} is not allowed")));
    }
    if ak.is_empty() && proof.is_empty() {
        // No key: on a Unix socket the kernel says who the peer is (SO_PEERCRED), and the
        // connection acts as the account with that uid.
        let Some(uid) = peer_uid else {
            return Err(Error::new(ErrorCode::AccessDenied, "an access key is needed over TCP"));
        };
        return creds
            .access_key_for_uid(uid)
            .ok_or_else(|| Error::new(ErrorCode::AccessDenied, format!("{NO_ACCOUNT}{uid}")));
    }
    let Some(key) = creds.resolve(&ak) else {
        return Err(Error::code(ErrorCode::InvalidAccessKeyId));
    };
    if key.session.is_some() {
        // The handshake carries no session token: temporary credentials are for HTTP.
        return Err(Error::new(ErrorCode::AccessDenied, "temporary (session) credentials are not accepted here"));
    }
    let secret = key.secret;
    if proof.is_empty() && trusted {
        return Ok(ak);
    }
    if !verify_proof(&secret, nonce, &ak, proof) {
        return Err(Error::code(ErrorCode::SignatureDoesNotMatch));
    }
    Ok(ak)
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

impl Drop for Conn {
    /// Also when the connection task is aborted (server shutdown): a body must never see a clean
    /// end that the client did not send.
    fn drop(&mut self) {
        self.teardown();
        if !self.ended {
            // Handlers may still hold senders (a store call that does not return); the client
            // must not wait for them to see that the connection is gone.
            self.out.abort();
        }
    }
}

impl Conn {
    /// Whatever ended the connection, bodies still being received end in an error (never a clean
    /// end, so the store publishes nothing), and response streams stop.
    fn teardown(&mut self) {
        for (_, ib) in self.inbound.drain() {
            if let Inbound::Live { tx, .. } = ib {
                let _ = tx.send(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "binary protocol client vanished in the middle of a body",
                )));
            }
        }
        for (_, a) in self.shared.active.lock().unwrap().iter() {
            a.credit.close();
        }
    }

    async fn run(&mut self, r: &mut ReadHalf) -> Result<(), Error> {
        let res = self.frames(r).await;
        // Requests accepted before the connection ended still run, as spawned ones do.
        self.flush_batch();
        res
    }

    async fn frames(&mut self, r: &mut ReadHalf) -> Result<(), Error> {
        let dec = FrameDecoder { max_data: self.limits.max_data_frame };
        let mut buf = BytesMut::with_capacity(256 << 10);
        loop {
            loop {
                if let Some(h) = large_data_pending(&buf, self.limits.max_data_frame) {
                    self.flush_batch();
                    let payload = read_large_payload(r, &mut buf, h.len as usize).await?;
                    self.on_frame(h, payload)?;
                    continue;
                }
                match dec.decode(&mut buf).map_err(proto)? {
                    Some((h, payload)) => self.on_frame(h, payload)?,
                    None => break,
                }
            }
            self.flush_batch();
            if buf.capacity() - buf.len() < 64 << 10 {
                buf.reserve(256 << 10);
            }
            // A descriptor arrives with the first byte of its BODY_FD request: once every complete
            // frame is taken, only the incomplete one may still have one waiting.
            if self.fds.len() > 1 || (buf.is_empty() && !self.fds.is_empty()) {
                return Err(proto("a descriptor came with a frame that is not a BODY_FD request"));
            }
            let n =
                if self.fd_ok { r.read_with_fds(&mut buf, &mut self.fds).await } else { r.read_buf(&mut buf).await };
            let n = n.map_err(|e| proto(format!("read failed: {e}")))?;
            if n == 0 {
                if buf.is_empty() {
                    return Ok(());
                }
                return Err(proto(format!("connection closed inside a frame ({} bytes pending)", buf.len())));
            }
        }
    }

    /// One frame. Errors are protocol violations: the connection is closed.
    fn on_frame(&mut self, h: Header, payload: Bytes) -> Result<(), Error> {
        match h.ty {
            ty::REQUEST => self.on_request(h, payload),
            ty::DATA => {
                match self.inbound.get_mut(&h.id) {
                    Some(Inbound::Live { tx, credit, .. }) => {
                        if credit.remaining.fetch_sub(h.len as i64, Ordering::AcqRel) < h.len as i64 {
                            return Err(proto(format!("request {}: DATA beyond the flow-control window", h.id)));
                        }
                        if tx.send(Ok(payload)).is_err() {
                            let credit = credit.clone();
                            self.inbound.insert(h.id, Inbound::Discard { credit });
                        }
                    }
                    Some(Inbound::Discard { credit }) => {
                        // The handler is done; the client may still send what the window allows.
                        if credit.remaining.fetch_sub(h.len as i64, Ordering::AcqRel) < h.len as i64 {
                            return Err(proto(format!("request {}: DATA beyond the flow-control window", h.id)));
                        }
                    }
                    None => return Err(proto(format!("DATA for request {} which has no body open", h.id))),
                }
                Ok(())
            }
            ty::END => match self.inbound.remove(&h.id) {
                Some(Inbound::Live { tx, deferred, .. }) => {
                    if !payload.is_empty() {
                        let mut d = Dec::new(&payload);
                        let v = d.str()?;
                        d.end()?;
                        match deferred {
                            Some(cell) => {
                                let _ = cell.set(v);
                            }
                            None => {
                                let _ = tx.send(Err(Error::new(
                                    ErrorCode::InvalidRequest,
                                    "END carries a checksum but none was announced as deferred",
                                )
                                .into()));
                                return Ok(());
                            }
                        }
                    }
                    drop(tx);
                    Ok(())
                }
                Some(Inbound::Discard { .. }) => Ok(()),
                None => Err(proto(format!("END for request {} which has no body open", h.id))),
            },
            ty::ABORT => {
                let err = if payload.is_empty() {
                    Error::new(ErrorCode::IncompleteBody, "the client aborted the upload")
                } else {
                    let mut d = Dec::new(&payload);
                    let e = d.error()?;
                    d.end()?;
                    e
                };
                match self.inbound.remove(&h.id) {
                    Some(Inbound::Live { tx, .. }) => {
                        let _ = tx.send(Err(err.into()));
                    }
                    Some(Inbound::Discard { .. }) => {}
                    None => {
                        // Cancel a response stream (the client dropped the body), if still running.
                        if let Some(a) = self.shared.active.lock().unwrap().get(&h.id) {
                            a.credit.close();
                        }
                    }
                }
                Ok(())
            }
            ty::CREDIT => {
                let n = u32::from_le_bytes(payload[..4].try_into().unwrap());
                if let Some(a) = self.shared.active.lock().unwrap().get(&h.id) {
                    if a.credit.available_permits() + n as usize > (64usize << 30) {
                        return Err(proto("credit overflow"));
                    }
                    a.credit.add_permits(n as usize);
                }
                Ok(())
            }
            t => Err(proto(format!("unexpected frame type {t:#04x} from a client"))),
        }
    }

    fn on_request(&mut self, h: Header, payload: Bytes) -> Result<(), Error> {
        let mut d = Dec::new(&payload);
        let req = Request::decode(&mut d)?;
        let inline_at = d.pos();
        if h.flags != 0 && !req.takes_body() {
            return Err(proto(format!("request {}: opcode {} carries no body", h.id, req.opcode())));
        }
        let slot_body = if h.flags & flag::BODY_FD != 0 { Some(self.slot_body(h.id, &mut d)?) } else { None };
        if h.flags & flag::BODY_INLINE == 0 {
            d.end()?;
        }
        if self.inbound.contains_key(&h.id) {
            return Err(proto(format!("request id {} is still in use", h.id)));
        }
        let credit = Arc::new(Semaphore::new(self.limits.initial_window as usize));
        {
            let mut active = self.shared.active.lock().unwrap();
            if active.contains_key(&h.id) {
                return Err(proto(format!("request id {} is still in use", h.id)));
            }
            // Tolerate 2x: a cancelled response may finish a moment after the client moved on.
            if self.shared.inflight.load(Ordering::Acquire) >= self.limits.max_inflight.saturating_mul(2) {
                return Err(proto(format!("more than {} requests in flight", self.limits.max_inflight)));
            }
            active.insert(h.id, Active { credit: credit.clone() });
            self.shared.inflight.fetch_add(1, Ordering::AcqRel);
        }

        let mut deferred_cell = None;
        let body = if h.flags & flag::BODY_INLINE != 0 {
            Body::from(payload.slice(inline_at..))
        } else if h.flags & flag::BODY_STREAM != 0 {
            let (tx, rx) = mpsc::unbounded_channel();
            let in_credit = Arc::new(InCredit {
                remaining: AtomicI64::new(self.limits.initial_window as i64),
                window: self.limits.initial_window,
            });
            let deferred = match &req {
                Request::PutObject { upload, .. }
                | Request::AppendObject { upload, .. }
                | Request::UploadPart { upload, .. }
                    if upload.checksum.as_ref().is_some_and(|c| c.expected == WireExpected::Deferred) =>
                {
                    Some(Arc::new(OnceLock::new()))
                }
                _ => None,
            };
            deferred_cell = deferred.clone();
            self.inbound.insert(h.id, Inbound::Live { tx, credit: in_credit.clone(), deferred });
            Body::Stream(Box::pin(CreditedBody {
                rx,
                credit: in_credit,
                out: self.out.clone(),
                id: h.id,
                ungranted: 0,
            }))
        } else {
            Body::Empty
        };

        if req.is_key_op() || self.keys_only {
            let (out, shared, id) = (self.out.clone(), self.shared.clone(), h.id);
            let (keys, uid, keys_only) = (self.keys.clone(), self.peer_uid, self.keys_only);
            tokio::spawn(async move {
                let t0 = std::time::Instant::now();
                let op = req.op_name();
                let r = if req.is_key_op() {
                    key_op(keys, uid, req).await
                } else {
                    debug_assert!(keys_only);
                    Err(Error::new(
                        ErrorCode::AccessDenied,
                        "this connection may only manage access keys: no account has the peer's uid",
                    ))
                };
                if let Some(obs) = shared.observer.as_deref() {
                    obs.request(op, r.as_ref().err().map(|e| e.code), t0.elapsed());
                }
                let _ = respond_now(&out, id, r.map(|e| (e, Body::Empty)), false);
                shared.finish(id);
            });
            return Ok(());
        }
        if h.flags & (flag::BODY_STREAM | flag::BODY_FD) == 0 && quick(&req) && self.store.capabilities().offloads_io {
            self.batch.push(Job { id: h.id, req, body, credit });
            if self.batch.len() >= BATCH_MAX {
                self.flush_batch();
            }
            return Ok(());
        }
        let (store, out, shared, limits, id, fd_ok) =
            (self.store.clone(), self.out.clone(), self.shared.clone(), self.limits, h.id, self.fd_ok);
        let caller = self.caller.clone();
        tokio::spawn(s3hpc_core::identity::scope(
            self.ident.clone(),
            s3hpc_core::caller::scope(caller, async move {
                match slot_body {
                    Some(Err(e)) => {
                        let _ = respond_now(&out, id, Err(e), fd_ok);
                    }
                    slot_body => {
                        // The slot is lent until the answer: a store that may keep the bytes gets a copy.
                        let body = match slot_body {
                            Some(Ok(b)) if store.capabilities().keeps_body_bytes => {
                                Body::from(Bytes::copy_from_slice(&b))
                            }
                            Some(Ok(b)) => Body::from(b),
                            _ => body,
                        };
                        let obs = shared.observer.as_deref();
                        handle_request(&store, obs, &out, id, req, body, deferred_cell, credit, limits, fd_ok).await;
                    }
                }
                shared.finish(id);
            }),
        ));
        Ok(())
    }

    /// The body of a BODY_FD request: `len` bytes at the start of an upload slot, attaching the
    /// slot's descriptor first if it came with the frame. Malformed fields and a missing
    /// descriptor are protocol errors; a slot that cannot be used fails only the request.
    fn slot_body(&mut self, id: u32, d: &mut Dec<'_>) -> Result<Result<Bytes, Error>, Error> {
        if !self.fd_ok {
            return Err(proto(format!("request {id}: BODY_FD is not offered on this connection")));
        }
        let (slot, attached, len) = (d.var_u32()?, d.bool()?, d.var()?);
        if slot >= frame::MAX_SLOTS {
            return Err(proto(format!(
                "request {id}: upload slot {slot} (at most {} per connection)",
                frame::MAX_SLOTS
            )));
        }
        let bad =
            |m: String| Error::new(ErrorCode::InvalidRequest, format!("binary protocol: upload slot {slot}: {m}"));
        if attached {
            let fd =
                self.fds.pop_front().ok_or_else(|| proto(format!("request {id}: BODY_FD without a descriptor")))?;
            match crate::sys::SlotMap::read_only(&std::fs::File::from(fd)) {
                Ok(m) => self.slots[slot as usize] = Some(Arc::new(m)),
                Err(e) => {
                    self.slots[slot as usize] = None;
                    return Ok(Err(bad(e.to_string())));
                }
            }
        }
        let Some(map) = &self.slots[slot as usize] else { return Ok(Err(bad("no descriptor attached".into()))) };
        if len > map.len() as u64 {
            return Ok(Err(bad(format!("a body of {len} bytes in a slot of {}", map.len()))));
        }
        Ok(Ok(Bytes::from_owner(SlotView(map.clone())).slice(..len as usize)))
    }

    /// Run the batched requests on one blocking-pool thread (on the connection's own thread when
    /// it has one; for stores that work in place, on this worker inside `block_in_place`), one
    /// after the other, with the
    /// store's file-system work on that thread (`s3hpc_core::io::blocking_here`) and each
    /// response written from there: one thread hand-off for the batch, where a spawned request
    /// takes a task hand-off plus the store's two. Responses whose bodies must stream within
    /// the client's credit continue in tasks of their own.
    fn flush_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let jobs = std::mem::take(&mut self.batch);
        let (store, out, shared, limits, fd_ok) =
            (self.store.clone(), self.out.clone(), self.shared.clone(), self.limits, self.fd_ok);
        let (ident, caller) = (self.ident.clone(), self.caller.clone());
        let rt = tokio::runtime::Handle::current();
        let in_place = self.store.capabilities().offloads_in_place
            && rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
        // On the connection's own thread (inside its runtime, which must not be re-entered) the
        // store's futures are polled to completion by a plain executor: a store that offloads
        // its I/O does it synchronously inside `blocking_here` and never waits on this runtime.
        let here = self.dedicated;
        let run = move || {
            s3hpc_core::io::blocking_here(|| {
                for Job { id, req, body, credit } in jobs {
                    // A panic in one request fails that request, not the rest of the batch.
                    let call = std::panic::AssertUnwindSafe(|| {
                        let f = s3hpc_core::identity::scope(
                            ident.clone(),
                            s3hpc_core::caller::scope(
                                caller.clone(),
                                execute(&store, shared.observer.as_deref(), req, body, None),
                            ),
                        );
                        if here { futures::executor::block_on(f) } else { rt.block_on(f) }
                    });
                    let result = std::panic::catch_unwind(call)
                        .unwrap_or_else(|_| Err(Error::internal("the request's handler panicked")));
                    match respond_now(&out, id, result, fd_ok) {
                        None => shared.finish(id),
                        Some((e, body)) => {
                            let (out, shared) = (out.clone(), shared.clone());
                            rt.spawn(async move {
                                stream_body(&out, id, e, body, &credit, limits).await;
                                shared.finish(id);
                            });
                        }
                    }
                }
            })
        };
        if here {
            // The batch's responses leave together when it is done (on this thread nothing
            // else could write meanwhile): one write and one wake-up of the client per batch
            // (PERFORMANCE.md, eleventh round).
            self.out.hold();
            run();
            self.out.release();
        } else if in_place {
            // Like the store's own in-place calls: this worker's other tasks move to another
            // thread first, the batch runs here (no hand-off on the requests' path).
            tokio::task::block_in_place(run);
        } else {
            tokio::task::spawn_blocking(run);
        }
    }
}

/// A shared reference to an upload slot's mapping, as the owner of a body's `Bytes`.
struct SlotView(Arc<crate::sys::SlotMap>);

impl AsRef<[u8]> for SlotView {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref().as_ref()
    }
}

/// DATA payloads at least this large are read straight into a pooled buffer.
const LARGE_DATA: usize = 128 << 10;

/// The header of a large DATA frame at the front of `buf` whose payload has not fully arrived.
fn large_data_pending(buf: &[u8], max_data: u32) -> Option<Header> {
    let hdr: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
    // A bad header is reported by the decoder.
    let h = Header::decode(hdr, max_data).ok()?;
    (h.ty == ty::DATA && h.len as usize >= LARGE_DATA && buf.len() < HEADER_LEN + h.len as usize).then_some(h)
}

/// Read the rest of a large DATA frame (its header and first bytes are in `buf`) into a buffer
/// from [`POOL`]: no growth of the connection buffer, no copy, and, once the pool is warm, no
/// fresh pages to fault in. The buffer goes back to the pool when the store drops the payload.
async fn read_large_payload(r: &mut ReadHalf, buf: &mut BytesMut, len: usize) -> Result<Bytes, Error> {
    bytes::Buf::advance(buf, HEADER_LEN);
    let mut v = pool_take(len);
    let have = buf.len();
    v[..have].copy_from_slice(buf);
    buf.clear();
    let mut filled = have;
    while filled < len {
        let n = r.read(&mut v[filled..len]).await.map_err(|e| proto(format!("read failed: {e}")))?;
        if n == 0 {
            return Err(proto(format!("connection closed inside a frame ({} bytes pending)", HEADER_LEN + filled)));
        }
        filled += n;
    }
    Ok(Bytes::from_owner(Pooled { v: Some(v), len }))
}

/// Receive buffers for large DATA payloads, shared by all connections, at most
/// [`POOL_MAX_BYTES`] kept. Buffers are zero-filled once when created, so reading into them needs
/// no unsafe code.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
const POOL_MAX_BYTES: usize = 32 << 20;

fn pool_take(len: usize) -> Vec<u8> {
    let mut p = POOL.lock().unwrap();
    // A buffer much larger than needed would pin memory in a store that keeps the payload.
    if let Some(i) = p.iter().rposition(|v| v.len() >= len && v.len() <= len * 2) {
        return p.swap_remove(i);
    }
    drop(p);
    vec![0u8; len]
}

struct Pooled {
    v: Option<Vec<u8>>,
    len: usize,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.v.as_deref().unwrap_or_default()[..self.len]
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(v) = self.v.take() else { return };
        let mut p = POOL.lock().unwrap();
        if p.iter().map(Vec::len).sum::<usize>() + v.len() <= POOL_MAX_BYTES {
            p.push(v);
        }
    }
}

fn upload_checksum(u: &UploadFields, deferred: Option<Arc<OnceLock<String>>>) -> Option<ChecksumRequest> {
    u.checksum.as_ref().map(|c| ChecksumRequest {
        algorithm: c.algorithm,
        expected: match &c.expected {
            WireExpected::None => None,
            WireExpected::Known(v) => Some(Expected::Known(v.clone())),
            WireExpected::Deferred => deferred.map(Expected::Deferred),
        },
    })
}

fn ok_frame(id: u32, flags: u8, e: Enc) -> Bytes {
    frame_bytes(ty::RESPONSE, flags, id, &e.finish())
}

fn ok() -> Enc {
    let mut e = Enc::new();
    e.u8(0);
    e
}

#[allow(clippy::too_many_arguments)]
async fn handle_request(
    store: &DynStore,
    observer: Option<&dyn Observer>,
    out: &OutTx,
    id: u32,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
    credit: Arc<Semaphore>,
    limits: Limits,
    fd_ok: bool,
) {
    let result = execute(store, observer, req, body, deferred).await;
    if let Some((e, body)) = respond_now(out, id, result, fd_ok) {
        stream_body(out, id, e, body, &credit, limits).await;
    }
}

/// Run one request against the store, telling `observer`: the response's fields and body, or the
/// error.
async fn execute(
    store: &DynStore,
    observer: Option<&dyn Observer>,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
) -> Result<(Enc, Body), Error> {
    let Some(obs) = observer else { return run(store, req, body, deferred).await };
    let (op, t0) = (req.op_name(), std::time::Instant::now());
    let r = run(store, req, body, deferred).await;
    obs.request(op, r.as_ref().err().map(|e| e.code), t0.elapsed());
    r
}

/// Run one request against the store: the response's fields and body, or the error. Each answer
/// is written with its operation's declared encoding (`out::<ops::X>`, the operation table in
/// `ops.rs`), which the client reads back with the same type.
async fn run(
    store: &DynStore,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
) -> Result<(Enc, Body), Error> {
    use Request::*;
    let mut e = ok();
    match req {
        CreateBucket { bucket } => out::<ops::CreateBucket>(&store.create_bucket(&bucket).await?, &mut e),
        DeleteBucket { bucket } => out::<ops::DeleteBucket>(&store.delete_bucket(&bucket).await?, &mut e),
        HeadBucket { bucket } => out::<ops::HeadBucket>(&store.head_bucket(&bucket).await?, &mut e),
        ListBuckets {} => out::<ops::ListBuckets>(&store.list_buckets().await?, &mut e),
        GetBucketTagging { bucket } => out::<ops::GetBucketTagging>(&store.get_bucket_tagging(&bucket).await?, &mut e),
        PutBucketTagging { bucket, tags } => {
            out::<ops::PutBucketTagging>(&store.put_bucket_tagging(&bucket, tags).await?, &mut e)
        }
        DeleteBucketTagging { bucket } => {
            out::<ops::DeleteBucketTagging>(&store.delete_bucket_tagging(&bucket).await?, &mut e)
        }
        GetBucketConfig { bucket, name } => {
            out::<ops::GetBucketConfig>(&store.get_bucket_config(&bucket, &name).await?, &mut e)
        }
        PutBucketConfig { bucket, name, doc } => {
            out::<ops::PutBucketConfig>(&store.put_bucket_config(&bucket, &name, doc).await?, &mut e)
        }
        GetObjectAcl { bucket, key } => out::<ops::GetObjectAcl>(&store.get_object_acl(&bucket, &key).await?, &mut e),
        Fs { bucket, key, op } => {
            let op = s3hpc_core::fsattr::FsOp::parse(&op)?;
            out::<ops::Fs>(&store.fs(&bucket, &key, op).await?.encode(), &mut e)
        }
        PutObjectAcl { bucket, key, doc } => {
            out::<ops::PutObjectAcl>(&store.put_object_acl(&bucket, &key, doc).await?, &mut e)
        }
        PutObject { bucket, key, meta, tags, conditions, upload } => {
            let r = PutObjectRequest {
                meta,
                tags,
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                conditions,
                // Lock parameters are not carried (PROTOCOL.md 8a); the bucket's default applies.
                lock: Default::default(),
            };
            out::<ops::PutObject>(&store.put_object(&bucket, &key, r, body).await?, &mut e)
        }
        GetObject { bucket, key, req } => {
            let o = store.get_object(&bucket, &key, req.into()).await?;
            out::<ops::GetObject>(&(o.info, o.range), &mut e);
            return Ok((e, o.body));
        }
        HeadObject { bucket, key, req } => {
            out::<ops::HeadObject>(&store.head_object(&bucket, &key, req.into()).await?, &mut e)
        }
        DeleteObject { bucket, key } => out::<ops::DeleteObject>(&store.delete_object(&bucket, &key).await?, &mut e),
        CopyObject { src_bucket, src_key, dst_bucket, dst_key, req } => out::<ops::CopyObject>(
            &store.copy_object(&src_bucket, &src_key, &dst_bucket, &dst_key, req.into()).await?,
            &mut e,
        ),
        RenameObject { bucket, src_key, dst_key, source_conditions, conditions, client_token } => {
            let r = s3hpc_core::RenameObjectRequest { source_conditions, conditions, client_token };
            out::<ops::RenameObject>(&store.rename_object(&bucket, &src_key, &dst_key, r).await?, &mut e)
        }
        AppendObject { bucket, key, offset, meta, tags, conditions, upload } => {
            let r = PutObjectRequest {
                meta,
                tags,
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                conditions,
                // Lock parameters are not carried (PROTOCOL.md 8a); the bucket's default applies.
                lock: Default::default(),
            };
            out::<ops::AppendObject>(&store.append_object(&bucket, &key, offset, r, body).await?, &mut e)
        }
        GetObjectTagging { bucket, key } => {
            out::<ops::GetObjectTagging>(&store.get_object_tagging(&bucket, &key, None).await?.tags, &mut e)
        }
        PutObjectTagging { bucket, key, tags } => {
            store.put_object_tagging(&bucket, &key, None, tags).await?;
            out::<ops::PutObjectTagging>(&(), &mut e)
        }
        DeleteObjectTagging { bucket, key } => {
            store.delete_object_tagging(&bucket, &key, None).await?;
            out::<ops::DeleteObjectTagging>(&(), &mut e)
        }
        ListObjects { bucket, req } => out::<ops::ListObjects>(&store.list_objects(&bucket, req).await?, &mut e),
        CreateMultipart { bucket, key, meta, tags, checksum_algorithm, checksum_type } => {
            let r = s3hpc_core::CreateMultipartRequest {
                meta,
                tags,
                checksum_algorithm,
                checksum_type,
                lock: Default::default(),
            };
            out::<ops::CreateMultipart>(&store.create_multipart_upload(&bucket, &key, r).await?, &mut e)
        }
        UploadPart { bucket, key, upload_id, part_number, upload } => {
            let r = UploadPartRequest {
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                default_checksum: None,
            };
            out::<ops::UploadPart>(&store.upload_part(&bucket, &key, &upload_id, part_number, r, body).await?, &mut e)
        }
        UploadPartCopy { bucket, key, upload_id, part_number, src_bucket, src_key, src_range, src_conditions } => {
            let src = PartCopySource {
                bucket: src_bucket,
                key: src_key,
                version_id: None,
                range: src_range,
                conditions: src_conditions,
            };
            out::<ops::UploadPartCopy>(
                &store.upload_part_copy(&bucket, &key, &upload_id, part_number, src).await?,
                &mut e,
            )
        }
        ListParts { bucket, key, upload_id, req } => {
            out::<ops::ListParts>(&store.list_parts(&bucket, &key, &upload_id, req).await?, &mut e)
        }
        ListUploads { bucket, req } => {
            out::<ops::ListUploads>(&store.list_multipart_uploads(&bucket, req).await?, &mut e)
        }
        CompleteMultipart { bucket, key, upload_id, req } => out::<ops::CompleteMultipart>(
            &store.complete_multipart_upload_with(&bucket, &key, &upload_id, req).await?,
            &mut e,
        ),
        AbortMultipart { bucket, key, upload_id } => {
            out::<ops::AbortMultipart>(&store.abort_multipart_upload(&bucket, &key, &upload_id).await?, &mut e)
        }
        CreateAccessKey { .. } | ListAccessKeys {} | RevokeAccessKey { .. } => {
            return Err(Error::new(ErrorCode::InternalError, "key operations do not reach the store"));
        }
    }
    Ok((e, Body::Empty))
}

/// A self-service key operation for the Unix-socket peer `uid` (the file work on a blocking
/// thread).
async fn key_op(
    keys: Option<Arc<dyn s3hpc_core::creds::KeyAdmin>>,
    uid: Option<u32>,
    req: Request,
) -> Result<Enc, Error> {
    let Some(keys) = keys else {
        return Err(Error::not_implemented("this server does not issue access keys (s3hpc serve --user-keys)"));
    };
    let Some(uid) = uid else {
        return Err(Error::new(
            ErrorCode::AccessDenied,
            "access keys are managed only over a Unix socket, where the kernel names the caller",
        ));
    };
    tokio::task::spawn_blocking(move || {
        let mut e = ok();
        match req {
            Request::CreateAccessKey { lifetime, description } => {
                let (c, info) = keys.create(uid, lifetime.map(Duration::from_secs), &description)?;
                out::<ops::CreateAccessKey>(&(c.secret_key, info), &mut e)
            }
            Request::ListAccessKeys {} => out::<ops::ListAccessKeys>(&keys.list(uid)?, &mut e),
            Request::RevokeAccessKey { access_key } => {
                out::<ops::RevokeAccessKey>(&keys.revoke(uid, &access_key)?, &mut e)
            }
            _ => return Err(Error::new(ErrorCode::InternalError, "not a key operation")),
        }
        Ok(e)
    })
    .await
    .map_err(|e| Error::new(ErrorCode::InternalError, format!("key operation failed: {e}")))?
}

/// Send what needs no waiting: an error, a response without a body or with a small one inline,
/// or one whose file the client reads itself. Returns a response whose body must be streamed
/// within the client's credit ([`stream_body`]).
fn respond_now(out: &OutTx, id: u32, result: Result<(Enc, Body), Error>, fd_ok: bool) -> Option<(Enc, Body)> {
    let (mut e, body) = match result {
        Ok(r) => r,
        Err(err) => {
            send_error(out, id, &err);
            return None;
        }
    };
    let small = body.known_len().is_some_and(|n| n <= INLINE_MAX as u64);
    match body {
        Body::Empty => {
            let _ = out.send(Out::Frames(ok_frame(id, 0, e)));
        }
        Body::Bytes(b) if small => {
            e.buf.extend_from_slice(&b);
            let _ = out.send(Out::Frames(ok_frame(id, flag::BODY_INLINE, e)));
        }
        Body::File { file, offset, len } if small => {
            let start = e.buf.len();
            e.buf.resize(start + len as usize, 0);
            match read_full_at(&file, &mut e.buf[start..], offset) {
                Ok(()) => {
                    let _ = out.send(Out::Frames(ok_frame(id, flag::BODY_INLINE, e)));
                }
                Err(err) => send_error(out, id, &Error::from(err)),
            }
        }
        Body::File { file, offset, len } if fd_ok && read_only(&file) => {
            // Node-local zero copy: the client reads the region from the page cache itself.
            e.var(offset);
            e.var(len);
            let _ = out.send(Out::Fd { frame: ok_frame(id, flag::BODY_FD, e), file });
        }
        body => return Some((e, body)),
    }
    None
}

fn send_error(out: &OutTx, id: u32, err: &Error) {
    let mut e = Enc::new();
    e.u8(1);
    e.error(err);
    let _ = out.send(Out::Frames(frame_bytes(ty::RESPONSE, 0, id, &e.finish())));
}

/// Send a response whose body goes in DATA frames within the client's credit (file regions with
/// sendfile).
async fn stream_body(out: &OutTx, id: u32, e: Enc, body: Body, credit: &Semaphore, limits: Limits) {
    match body {
        Body::File { file, offset, len } => {
            if out.send(Out::Frames(ok_frame(id, flag::BODY_STREAM, e))).is_err() {
                return;
            }
            let file = Arc::new(file);
            let mut pos = 0u64;
            while pos < len {
                let n = ((len - pos) as u32).min(limits.max_data_frame);
                let Ok(permit) = credit.acquire_many(n).await else { return };
                permit.forget();
                let header = Header { ty: ty::DATA, flags: 0, id, len: n }.encode();
                if out.send(Out::File { header, file: file.clone(), offset: offset + pos, len: n }).is_err() {
                    return;
                }
                pos += n as u64;
            }
            let _ = out.send(Out::Frames(frame_bytes(ty::END, 0, id, &[])));
        }
        body => {
            if out.send(Out::Frames(ok_frame(id, flag::BODY_STREAM, e))).is_err() {
                return;
            }
            let mut s = body.into_stream();
            while let Some(chunk) = s.next().await {
                let mut chunk = match chunk {
                    Ok(c) => c,
                    Err(err) => {
                        let mut e = Enc::new();
                        e.error(&Error::from(err));
                        let _ = out.send(Out::Frames(frame_bytes(ty::ABORT, 0, id, &e.finish())));
                        return;
                    }
                };
                while !chunk.is_empty() {
                    let n = (chunk.len() as u32).min(limits.max_data_frame);
                    let Ok(permit) = credit.acquire_many(n).await else { return };
                    permit.forget();
                    let piece = chunk.split_to(n as usize);
                    let header = Header { ty: ty::DATA, flags: 0, id, len: n }.encode();
                    if out.send(Out::Data { header, payload: piece }).is_err() {
                        return;
                    }
                }
            }
            let _ = out.send(Out::Frames(frame_bytes(ty::END, 0, id, &[])));
        }
    }
}

/// Only descriptors opened read-only are handed to clients (a backend might return a writable one).
fn read_only(f: &std::fs::File) -> bool {
    use rustix::fs::OFlags;
    rustix::fs::fcntl_getfl(f).is_ok_and(|fl| fl & OFlags::ACCMODE == OFlags::RDONLY)
}

fn read_full_at(f: &std::fs::File, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match f.read_at(buf, off) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "object file shorter than its recorded size"));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A descriptor for the fuzzer's BODY_FD requests: a 4000-byte slot file as a client makes it,
/// or (`unsealed`) one that is not a memory file.
fn fuzz_body_file(unsealed: bool) -> std::fs::File {
    if unsealed {
        return std::fs::File::open("/dev/null").expect("/dev/null");
    }
    crate::sys::slot_file(4000).expect("memfd_create")
}

/// Fuzzing entry point: feed arbitrary bytes (as received after a successful handshake) through
/// the server's frame decoder and connection state machine, backed by a memory store, and run
/// the request handlers to completion; each input runs three times: with requests spawned one by
/// one, with quick requests batched on blocking threads (the store then reports that it offloads
/// its I/O), and with those batches run on the connection's thread as on a
/// [dedicated](ServerOptions::dedicated_threads) one. Protocol violations end the input like they
/// end a connection. Must never panic.
#[doc(hidden)]
pub fn fuzz_connection(data: &[u8]) {
    fuzz_connection_with(data, false, false);
    fuzz_connection_with(data, true, false);
    fuzz_connection_with(data, true, true);
}

/// A hook that does nothing: lets the fuzzer wrap the memory store in a `HookedStore` that
/// reports `offloads_io`.
struct NoHook;

#[async_trait::async_trait]
impl s3hpc_core::hooked::Hook for NoHook {
    async fn before(&self, _op: s3hpc_core::hooked::Op, _bucket: &str, _key: &str) -> s3hpc_core::Result<()> {
        Ok(())
    }
}

fn fuzz_connection_with(data: &[u8], batches: bool, dedicated: bool) {
    thread_local! {
        static RT: tokio::runtime::Runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    }
    RT.with(|rt| {
        rt.block_on(async {
            let mem: DynStore = Arc::new(s3hpc_core::memory::MemoryStore::new());
            let store: DynStore =
                if batches { Arc::new(s3hpc_core::hooked::HookedStore::new(mem, NoHook).offloading_io()) } else { mem };
            let _ = store.create_bucket("bkt").await;
            // The connection writes into one end of a socket pair; a sink drains the other.
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            b.set_nonblocking(true).unwrap();
            let (_, w) = Stream::Unix(tokio::net::UnixStream::from_std(a).unwrap()).split().unwrap();
            let mut peer = tokio::net::UnixStream::from_std(b).unwrap();
            let sink = tokio::spawn(async move {
                let mut junk = vec![0u8; 64 << 10];
                while matches!(peer.read(&mut junk).await, Ok(n) if n > 0) {}
            });
            let (out, drain) = crate::writer::writer(w);
            let drain = tokio::spawn(drain);
            let shared = Arc::new(ConnShared {
                active: Mutex::new(HashMap::new()),
                inflight: AtomicU32::new(0),
                observer: None,
            });
            let limits = Limits { max_data_frame: 4096, initial_window: 16384, max_inflight: 8 };
            let mut conn = Conn {
                store,
                out,
                shared: shared.clone(),
                limits,
                inbound: HashMap::new(),
                fd_ok: true,
                fds: std::collections::VecDeque::new(),
                slots: Default::default(),
                ended: true,
                batch: Vec::new(),
                dedicated,
                ident: None,
                caller: None,
                peer_uid: None,
                keys: None,
                keys_only: false,
            };
            let dec = FrameDecoder { max_data: limits.max_data_frame };
            let mut buf = BytesMut::from(data);
            'frames: loop {
                match dec.decode(&mut buf) {
                    Ok(Some((h, payload))) => {
                        if h.ty == ty::REQUEST && h.flags & flag::BODY_FD != 0 && h.id % 4 != 0 {
                            // A slot's descriptor as a client passes it, or (ids 4k+1) one that is
                            // not a memory file; none for ids 4k.
                            conn.fds.push_back(fuzz_body_file(h.id % 4 == 1).into());
                        }
                        let res = conn.on_frame(h, payload);
                        // Every other frame ends a "read": what is batched runs.
                        if res.is_err() || buf.len() % 2 == 0 {
                            conn.flush_batch();
                        }
                        if res.is_err() {
                            break 'frames;
                        }
                    }
                    _ => break 'frames,
                }
                tokio::task::yield_now().await;
            }
            conn.flush_batch();
            conn.teardown();
            drop(conn);
            for i in 0..64 {
                if shared.inflight.load(Ordering::Acquire) == 0 {
                    break;
                }
                tokio::task::yield_now().await;
                if batches && i >= 32 {
                    // Batches run on blocking threads: give them real time.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            // Handlers still waiting (none should be, after teardown) are cut off with the runtime
            // turn; the writer and the sink end once every sender is gone.
            let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
            let _ = tokio::time::timeout(Duration::from_secs(5), sink).await;
        })
    })
}
