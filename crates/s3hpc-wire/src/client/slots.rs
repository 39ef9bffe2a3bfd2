//! Upload slots: a connection's memory files shared with the server (BODY_FD requests), and
//! slots lent to callers as body buffers ([`WireClient::body_buffer`]).

use super::*;

/// Most bytes of upload slots one connection keeps.
pub(super) const SLOT_BYTES_MAX: usize = 256 << 20;

/// A connection's upload slots: memory files shared with the server, each filled with one
/// request body at a time (BODY_FD requests, `docs/PROTOCOL.md`).
#[derive(Default)]
pub(super) struct SlotPool {
    /// Slots not carrying a body.
    pub(super) free: Vec<UploadSlot>,
    /// Ids with no slot behind them.
    pub(super) spare_ids: Vec<u32>,
    /// Bytes of all slots, free or lent.
    pub(super) bytes: usize,
}

pub(super) struct UploadSlot {
    pub(super) id: u32,
    pub(super) map: crate::sys::SlotMap,
    /// The descriptor, until it has gone to the server with the slot's first body.
    pub(super) unsent: Option<std::fs::File>,
}

/// A slot lent to one request. It goes back to the pool only once the server answered that
/// request with success; otherwise (error, timeout, lost connection, cancelled call) the server
/// may still be reading it, so it is dropped and its id later gets a new memory file.
pub(super) struct SlotLease {
    pub(super) conn: Arc<ClientConn>,
    pub(super) slot: Option<UploadSlot>,
    pub(super) done: bool,
}

impl SlotLease {
    /// A slot of at least `len` bytes: a free one, or a new one (in place of a smaller free
    /// one if no id is spare). `None` when every slot is lent or the byte budget is spent.
    pub(super) fn take(conn: &Arc<ClientConn>, len: usize) -> Option<SlotLease> {
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

/// A slot lent to the caller by [`WireClient::body_buffer`], being filled.
pub(super) struct LentBuffer {
    pub(super) conn: Weak<ClientConn>,
    /// Taken when frozen.
    pub(super) slot: Option<UploadSlot>,
    pub(super) len: usize,
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
pub(super) static LENT: std::sync::LazyLock<Mutex<HashMap<usize, Weak<Lent>>>> =
    std::sync::LazyLock::new(Default::default);

/// A lent slot after [`BodyBuffer::freeze`]: the memory of any number of request bodies. Back to
/// its connection's pool when the last `Bytes` over it is dropped, unless a request that used it
/// did not end in success (the server might still read it; see [`SlotLease`]).
pub(super) struct Lent {
    pub(super) conn: Weak<ClientConn>,
    pub(super) id: u32,
    /// Taken only in `drop`.
    pub(super) map: Option<crate::sys::SlotMap>,
    pub(super) len: usize,
    /// The descriptor until a request attaches it. Locked by the request that attaches it until
    /// its frame is queued, so every other request using the slot is queued after it.
    pub(super) unsent: Mutex<Option<std::fs::File>>,
    pub(super) spoiled: AtomicBool,
}

impl Lent {
    /// The lent buffer `b` is (a prefix of), if any.
    pub(super) fn of(b: &Bytes) -> Option<Arc<Lent>> {
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
pub(super) struct LentView(pub(super) Arc<Lent>);

impl AsRef<[u8]> for LentView {
    fn as_ref(&self) -> &[u8] {
        &self.0.map.as_ref().expect("live").as_ref()[..self.0.len]
    }
}

/// One request's use of a lent buffer: spoils the buffer unless the request ends in success.
pub(super) struct LentUse {
    pub(super) lent: Arc<Lent>,
    pub(super) done: bool,
}

impl Drop for LentUse {
    fn drop(&mut self) {
        if !self.done {
            self.lent.spoiled.store(true, Ordering::Relaxed);
        }
    }
}
