//! Frames: a fixed 12-byte header (type, flags, reserved, request id, payload length) and a
//! payload. See `docs/PROTOCOL.md` for the normative description.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Protocol magic, sent first by both sides.
pub const MAGIC: [u8; 4] = *b"S3HW";
/// The protocol version this crate speaks.
pub const VERSION: u16 = 1;
/// Length of the client preamble (magic, version, flags).
pub const CLIENT_PREAMBLE_LEN: usize = 8;
/// Length of the server preamble (magic, version, flags, 32-byte nonce).
pub const SERVER_PREAMBLE_LEN: usize = 40;
/// Frame header length.
pub const HEADER_LEN: usize = 12;

/// Hard upper bound for a DATA frame payload (the server announces its own, at most this).
pub const MAX_DATA_FRAME_HARD: u32 = 4 << 20;
/// Largest payload of any non-DATA frame (REQUEST, RESPONSE, AUTH, ...).
pub const MAX_CONTROL_FRAME: u32 = 2 << 20;
/// Longest string field.
pub const MAX_STR: usize = 64 << 10;
/// Most entries in any list field (tags, metadata, parts, listings).
pub const MAX_LIST: usize = 10_000;
/// Bodies up to this size travel inside the REQUEST/RESPONSE frame.
pub const INLINE_MAX: usize = 64 << 10;

/// Frame types.
pub mod ty {
    pub const AUTH: u8 = 0x01;
    pub const AUTH_OK: u8 = 0x02;
    pub const REQUEST: u8 = 0x10;
    pub const DATA: u8 = 0x11;
    pub const END: u8 = 0x12;
    pub const ABORT: u8 = 0x13;
    pub const CREDIT: u8 = 0x14;
    pub const RESPONSE: u8 = 0x20;
    pub const GOAWAY: u8 = 0x30;
}

/// Flags of REQUEST and RESPONSE frames.
pub mod flag {
    /// The bytes after the fields are the whole body.
    pub const BODY_INLINE: u8 = 0x01;
    /// DATA frames with this request id follow, then END (or ABORT).
    pub const BODY_STREAM: u8 = 0x02;
    /// (Unix sockets, when both sides offered it) the body is in a file shared through the
    /// socket (SCM_RIGHTS). RESPONSE: the object's file travels with this frame; the fields end
    /// with `varint offset, varint len`. REQUEST: the body is the first bytes of one of the
    /// connection's upload slots, memory files the client fills and the server maps once; the
    /// fields end with `varint slot, bool attached, varint len`, and a slot's (new) descriptor
    /// travels with the frame when `attached`.
    pub const BODY_FD: u8 = 0x04;
}

/// Seals an upload slot's memory file must carry (its size can never change, so a server that
/// maps it never faults on it).
pub const SLOT_SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
/// Largest upload slot, and so largest request body passed through one.
pub const FD_BODY_MAX: u64 = 64 << 20;
/// Slots per connection (ids `0..MAX_SLOTS`).
pub const MAX_SLOTS: u32 = 16;
/// The reference client sends request bodies from this size up through a slot (smaller ones
/// cost less to copy through the socket).
pub const FD_BODY_MIN: usize = 256 << 10;

/// Client preamble flag: the client accepts [`flag::BODY_FD`] responses (Unix sockets only).
pub const PREAMBLE_FD_PASSING: u16 = 0x0001;
/// Server preamble flag: the peer's uid is trusted, an empty proof is accepted.
pub const SERVER_TRUSTED: u16 = 0x0001;
/// Server preamble flag: the server accepts [`flag::BODY_FD`] requests (sent only to clients that
/// offered [`PREAMBLE_FD_PASSING`] on a Unix socket).
pub const SERVER_FD_BODIES: u16 = 0x0002;

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub ty: u8,
    pub flags: u8,
    pub id: u32,
    pub len: u32,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0] = self.ty;
        h[1] = self.flags;
        h[4..8].copy_from_slice(&self.id.to_le_bytes());
        h[8..12].copy_from_slice(&self.len.to_le_bytes());
        h
    }

    pub fn put(&self, out: &mut BytesMut) {
        out.put_slice(&self.encode());
    }

    /// Parse and validate a header: known type, zero reserved bytes, length within the limit for
    /// its type.
    pub fn decode(b: &[u8; HEADER_LEN], max_data: u32) -> Result<Header, String> {
        let h = Header {
            ty: b[0],
            flags: b[1],
            id: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            len: u32::from_le_bytes(b[8..12].try_into().unwrap()),
        };
        if b[2] != 0 || b[3] != 0 {
            return Err(format!("frame type {:#04x}: reserved header bytes are not zero", h.ty));
        }
        let limit = match h.ty {
            ty::DATA => max_data,
            ty::AUTH | ty::AUTH_OK | ty::REQUEST | ty::RESPONSE | ty::ABORT | ty::GOAWAY | ty::END => MAX_CONTROL_FRAME,
            ty::CREDIT => 4,
            t => return Err(format!("unknown frame type {t:#04x}")),
        };
        if h.len > limit {
            return Err(format!("frame type {:#04x} of {} bytes exceeds the limit of {limit}", h.ty, h.len));
        }
        if h.ty == ty::CREDIT && h.len != 4 {
            return Err("CREDIT frame payload must be 4 bytes".into());
        }
        let allowed_flags = match h.ty {
            ty::REQUEST | ty::RESPONSE => flag::BODY_INLINE | flag::BODY_STREAM | flag::BODY_FD,
            _ => 0,
        };
        if h.flags & !allowed_flags != 0 || h.flags.count_ones() > 1 {
            return Err(format!("frame type {:#04x}: invalid flags {:#04x}", h.ty, h.flags));
        }
        Ok(h)
    }
}

/// Append one whole frame.
pub fn put_frame(out: &mut BytesMut, ty: u8, flags: u8, id: u32, payload: &[u8]) {
    Header { ty, flags, id, len: payload.len() as u32 }.put(out);
    out.put_slice(payload);
}

/// Incremental frame decoder over a byte buffer: the same code the server uses on its socket
/// (and the fuzz target feeds with random bytes).
#[derive(Debug)]
pub struct FrameDecoder {
    pub max_data: u32,
}

impl FrameDecoder {
    /// Take one complete frame off the front of `buf`; `Ok(None)` when more bytes are needed.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<(Header, Bytes)>, String> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let h = Header::decode(buf[..HEADER_LEN].try_into().unwrap(), self.max_data)?;
        if buf.len() < HEADER_LEN + h.len as usize {
            buf.reserve(HEADER_LEN + h.len as usize - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        Ok(Some((h, buf.split_to(h.len as usize).freeze())))
    }
}

/// The client preamble.
pub fn client_preamble(flags: u16) -> [u8; CLIENT_PREAMBLE_LEN] {
    let mut p = [0u8; CLIENT_PREAMBLE_LEN];
    p[..4].copy_from_slice(&MAGIC);
    p[4..6].copy_from_slice(&VERSION.to_le_bytes());
    p[6..8].copy_from_slice(&flags.to_le_bytes());
    p
}

/// Check a client preamble; returns its flags.
pub fn parse_client_preamble(p: &[u8; CLIENT_PREAMBLE_LEN]) -> Result<u16, String> {
    if p[..4] != MAGIC {
        return Err(format!("bad magic {:02x?}", &p[..4]));
    }
    let v = u16::from_le_bytes([p[4], p[5]]);
    if v != VERSION {
        return Err(format!("unsupported protocol version {v} (server speaks {VERSION})"));
    }
    let flags = u16::from_le_bytes([p[6], p[7]]);
    if flags & !PREAMBLE_FD_PASSING != 0 {
        return Err(format!("unknown preamble flags {flags:#06x}"));
    }
    Ok(flags)
}

/// Server limits sent in AUTH_OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest DATA payload either side may send.
    pub max_data_frame: u32,
    /// Body bytes a sender may have outstanding per request before it needs CREDIT.
    pub initial_window: u32,
    /// Requests a client may have in flight per connection.
    pub max_inflight: u32,
}

impl Limits {
    pub fn encode(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&self.max_data_frame.to_le_bytes());
        b[4..8].copy_from_slice(&self.initial_window.to_le_bytes());
        b[8..].copy_from_slice(&self.max_inflight.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<Limits> {
        if b.len() < 12 {
            return None;
        }
        let g = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let l = Limits { max_data_frame: g(0), initial_window: g(4), max_inflight: g(8) };
        (l.max_data_frame >= 4096
            && l.max_data_frame <= MAX_DATA_FRAME_HARD
            && l.initial_window >= l.max_data_frame
            && l.max_inflight >= 1)
            .then_some(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_limits() {
        let h = Header { ty: ty::DATA, flags: 0, id: 7, len: 1000 };
        assert_eq!(Header::decode(&h.encode(), 1 << 20), Ok(h));
        let big = Header { len: (1 << 20) + 1, ..h };
        assert!(Header::decode(&big.encode(), 1 << 20).is_err());
        let mut unknown = h.encode();
        unknown[0] = 0x77;
        assert!(Header::decode(&unknown, 1 << 20).is_err());
        let both = Header { ty: ty::REQUEST, flags: 3, id: 1, len: 0 };
        assert!(Header::decode(&both.encode(), 1 << 20).is_err());
    }

    #[test]
    fn decoder_waits_for_whole_frames() {
        let d = FrameDecoder { max_data: 1 << 20 };
        let mut out = BytesMut::new();
        put_frame(&mut out, ty::DATA, 0, 3, b"hello");
        let mut partial = BytesMut::from(&out[..10]);
        assert_eq!(d.decode(&mut partial).unwrap(), None);
        partial.extend_from_slice(&out[10..]);
        let (h, p) = d.decode(&mut partial).unwrap().unwrap();
        assert_eq!((h.id, &p[..]), (3, &b"hello"[..]));
        assert!(partial.is_empty());
    }
}
