//! One connection: sending requests and their bodies, the reader task that routes responses,
//! streamed response bodies.

use super::*;

impl ClientConn {
    /// A slot back from a request or the caller: into the free pool if the server is done
    /// with it (`reusable`), else dropped, its id free for a new file.
    pub(super) fn give_back(&self, slot: UploadSlot, reusable: bool) {
        let mut p = self.slots.lock().unwrap();
        if reusable {
            p.free.push(slot);
        } else {
            p.bytes -= slot.map.len();
            p.spare_ids.push(slot.id);
        }
    }

    pub(super) async fn open(ep: &Endpoint, creds: &Credentials, opts: &ClientOptions) -> Result<Arc<ClientConn>> {
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

    pub(super) fn fail_all(&self, reason: String) {
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

    pub(super) fn on_frame(
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

    pub(super) async fn call(
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
    pub(super) fn send_request(
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
    pub(super) async fn response(
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
    pub(super) fn timed_out(&self, id: u32, seen: u64, what: &str) -> Error {
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

pub(super) async fn read_goaway(r: &mut ReadHalf) -> Result<Error> {
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

pub(super) async fn reader_task(mut r: ReadHalf, conn: &std::sync::Weak<ClientConn>, limits: Limits) -> String {
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
pub(super) async fn upload(
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
pub(super) struct ClientBody {
    pub(super) rx: mpsc::UnboundedReceiver<io::Result<Bytes>>,
    pub(super) conn: Arc<ClientConn>,
    pub(super) id: u32,
    pub(super) ungranted: u32,
    pub(super) window: u32,
    pub(super) done: bool,
    /// Armed while waiting for the next piece ([`ClientOptions::request_timeout`]), with the
    /// frame count when the wait began.
    pub(super) timer: Option<(Pin<Box<tokio::time::Sleep>>, u64)>,
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

pub(super) fn upload_fields(
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
