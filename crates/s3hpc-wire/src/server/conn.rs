//! A connection: the handshake and authentication, the reader that decodes frames and routes
//! body chunks, and the batches of quick requests.

use super::*;

impl ConnShared {
    /// Request `id` is done: forget it.
    pub(super) fn finish(&self, id: u32) {
        self.active.lock().unwrap().remove(&id);
        self.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(super) fn proto(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidRequest, msg.into())
}

pub(super) async fn read_exact_timeout<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8], t: Duration) -> io::Result<()> {
    match tokio::time::timeout(t, r.read_exact(buf)).await {
        Ok(res) => res.map(|_| ()),
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timed out")),
    }
}

pub(super) async fn handle_connection(
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
pub(super) const NO_ACCOUNT: &str = "no account has the peer's uid ";

pub(super) fn check_auth(
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
    pub(super) fn teardown(&mut self) {
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

    pub(super) async fn run(&mut self, r: &mut ReadHalf) -> Result<(), Error> {
        let res = self.frames(r).await;
        // Requests accepted before the connection ended still run, as spawned ones do.
        self.flush_batch();
        res
    }

    pub(super) async fn frames(&mut self, r: &mut ReadHalf) -> Result<(), Error> {
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
    pub(super) fn on_frame(&mut self, h: Header, payload: Bytes) -> Result<(), Error> {
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

    pub(super) fn on_request(&mut self, h: Header, payload: Bytes) -> Result<(), Error> {
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
    pub(super) fn slot_body(&mut self, id: u32, d: &mut Dec<'_>) -> Result<Result<Bytes, Error>, Error> {
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
    pub(super) fn flush_batch(&mut self) {
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
