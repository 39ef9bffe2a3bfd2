//! Large request payloads: DATA frames read into pooled buffers, bodies over upload slots.

use super::*;

/// A shared reference to an upload slot's mapping, as the owner of a body's `Bytes`.
pub(super) struct SlotView(pub(super) Arc<crate::sys::SlotMap>);

impl AsRef<[u8]> for SlotView {
    fn as_ref(&self) -> &[u8] {
        self.0.as_ref().as_ref()
    }
}

/// DATA payloads at least this large are read straight into a pooled buffer.
pub(super) const LARGE_DATA: usize = 128 << 10;

/// The header of a large DATA frame at the front of `buf` whose payload has not fully arrived.
pub(super) fn large_data_pending(buf: &[u8], max_data: u32) -> Option<Header> {
    let hdr: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
    // A bad header is reported by the decoder.
    let h = Header::decode(hdr, max_data).ok()?;
    (h.ty == ty::DATA && h.len as usize >= LARGE_DATA && buf.len() < HEADER_LEN + h.len as usize).then_some(h)
}

/// Read the rest of a large DATA frame (its header and first bytes are in `buf`) into a buffer
/// from [`POOL`]: no growth of the connection buffer, no copy, and, once the pool is warm, no
/// fresh pages to fault in. The buffer goes back to the pool when the store drops the payload.
pub(super) async fn read_large_payload(r: &mut ReadHalf, buf: &mut BytesMut, len: usize) -> Result<Bytes, Error> {
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
pub(super) static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
pub(super) const POOL_MAX_BYTES: usize = 32 << 20;

pub(super) fn pool_take(len: usize) -> Vec<u8> {
    let mut p = POOL.lock().unwrap();
    // A buffer much larger than needed would pin memory in a store that keeps the payload.
    if let Some(i) = p.iter().rposition(|v| v.len() >= len && v.len() <= len * 2) {
        return p.swap_remove(i);
    }
    drop(p);
    vec![0u8; len]
}

pub(super) struct Pooled {
    pub(super) v: Option<Vec<u8>>,
    pub(super) len: usize,
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
