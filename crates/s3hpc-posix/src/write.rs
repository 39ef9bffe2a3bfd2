//! Receiving a body into a temp file: batching stream chunks, hashing beside the writes
//! (on the writing thread, a helper, or the shared MD5 lanes), and kernel copies.

use super::*;

/// The key of a directory inside the bucket (`a/b/`).
pub(crate) fn dir_key(bdir: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(bdir).unwrap_or(dir);
    let mut k = rel.to_string_lossy().into_owned();
    k.push('/');
    k
}

/// Write `data` into the temp file while feeding the digester.
pub(crate) fn write_hashing(t: &mut Temp, d: &mut BodyDigester, data: &[u8]) -> io::Result<()> {
    d.update(data);
    t.file.write_all(data)
}

/// The digests of a body being written: computed on the writing thread, or (costly digests
/// of large bodies) on a helper thread fed with `Bytes` clones of what is written, so hashing
/// overlaps the writes. Bytes reach the digester in body order either way.
// One per body being written, on the stack: not worth a box for the common (`Here`) case.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Hashing {
    /// Hashing on this thread; `hint`: the body size announced up front (0 if unknown).
    Here {
        d: BodyDigester,
        hint: u64,
    },
    Helper {
        tx: std::sync::mpsc::SyncSender<Bytes>,
        done: std::sync::mpsc::Receiver<BodyDigester>,
    },
    /// The MD5 computed by the shared multi-buffer service; `rest`: the other digests (if
    /// any), computed on this thread.
    Lanes {
        rest: BodyDigester,
        lane: md5lanes::Lane,
    },
}

impl Hashing {
    pub(crate) fn new(d: BodyDigester, hint: Option<u64>) -> Hashing {
        Hashing::Here { d, hint: hint.unwrap_or(0) }
    }

    /// Hash `b` (before or while it is written). An MD5 of a body announced (or starting) at
    /// `LANES_MIN` or more goes to the shared MD5 service from the first byte; other costly
    /// digests move to a pooled helper thread once the body is announced (or seen) to reach
    /// `OVERLAP_MIN`, if a helper is free.
    pub(crate) fn feed(&mut self, b: &Bytes) -> Result<()> {
        // An MD5 announced large enough goes to the shared service from the first byte.
        if let Hashing::Here { d, hint } = self
            && d.size() == 0
            && d.wants_md5()
            && (b.len() as u64).max(*hint) >= LANES_MIN
        {
            let mut rest = std::mem::replace(d, BodyDigester::new(EtagMode::Fast, false, None));
            rest.detach_md5();
            *self = Hashing::Lanes { rest, lane: md5lanes::Lane::new() };
        }
        if let Hashing::Here { d, hint } = self
            && d.is_costly()
            && (d.size() + b.len() as u64).max(*hint) >= OVERLAP_MIN
            && let Some(ticket) = hashpool::ticket()
        {
            let mut d = std::mem::replace(d, BodyDigester::new(EtagMode::Fast, false, None));
            let (tx, rx) = std::sync::mpsc::sync_channel::<Bytes>(HELPER_QUEUE);
            let done = ticket
                .run(move || {
                    for b in rx {
                        d.update(&b);
                    }
                    d
                })
                .map_err(|e| Error::internal(format!("cannot start a hashing thread: {e}")))?;
            *self = Hashing::Helper { tx, done };
        }
        match self {
            Hashing::Here { d, .. } => d.update(b),
            Hashing::Helper { tx, .. } => {
                // A send fails only if the helper died; `finish` reports that.
                let _ = tx.send(b.clone());
            }
            Hashing::Lanes { rest, lane } => {
                lane.feed(b.clone());
                rest.update(b);
            }
        }
        Ok(())
    }

    /// The digests, once every byte of the body written to `t` was fed.
    pub(crate) fn finish(self, t: &Temp) -> Result<Digests> {
        match self {
            Hashing::Here { d, .. } => Ok(d.finish()),
            Hashing::Helper { tx, done } => {
                drop(tx);
                Ok(wait_hash(&done, t)?.finish())
            }
            Hashing::Lanes { rest, lane } => finish_lane(rest, lane, t),
        }
    }
}

/// The digests of a body whose MD5 went to the shared service. If the service has not caught
/// up, the write-back of `t` is started meanwhile (as in [`wait_hash`]).
pub(crate) fn finish_lane(rest: BodyDigester, lane: md5lanes::Lane, t: &Temp) -> Result<Digests> {
    if !lane.caught_up() {
        sys::start_writeback(&t.file);
    }
    let md5 = lane.finish().ok_or_else(|| Error::internal("the MD5 hashing service failed"))?;
    Ok(rest.finish_with_md5(md5))
}

/// Wait for a helper's digests of the body written to `t`. If the helper is still hashing,
/// this thread would only wait: it starts the write-back of the file meanwhile (it has to
/// happen anyway, and ext4 would otherwise do it inside the publishing `rename` over an
/// existing object, after the hash, where it adds to the PUT's latency).
pub(crate) fn wait_hash(done: &std::sync::mpsc::Receiver<BodyDigester>, t: &Temp) -> Result<BodyDigester> {
    use std::sync::mpsc::TryRecvError;
    match done.try_recv() {
        Ok(d) => return Ok(d),
        Err(TryRecvError::Disconnected) => return Err(Error::internal("the hashing thread failed")),
        Err(TryRecvError::Empty) => sys::start_writeback(&t.file),
    }
    done.recv().map_err(|_| Error::internal("the hashing thread failed"))
}

/// Write an in-memory body into the temp file, hashing it piece by piece: each piece is
/// hashed while it is in the CPU cache and then written from there (costly digests of large
/// bodies run on a helper thread while the writes go on). With nothing to hash (fast ETags, no
/// checksum) the body is written in one call.
pub(crate) fn write_bytes(t: &mut Temp, d: BodyDigester, data: &Bytes) -> Result<Digests> {
    if data.len() <= HASH_PIECE || !d.is_costly() {
        let mut d = d;
        write_hashing(t, &mut d, data)?;
        return Ok(d.finish());
    }
    // The size is known: a helper (if any) takes the body from its first piece.
    let mut h = Hashing::new(d, Some(data.len() as u64));
    let mut off = 0;
    while off < data.len() {
        let piece = data.slice(off..(off + HASH_PIECE).min(data.len()));
        h.feed(&piece)?;
        t.file.write_all(&piece)?;
        off += piece.len();
    }
    h.finish(t)
}

/// Coalesces small stream chunks into batches of about `WRITE_BATCH`. Every batch but the last
/// is a whole number of 64-byte blocks: the MD5 service hashes concurrent bodies together only
/// while their pieces start on block boundaries (a few bytes are carried to the next batch).
#[derive(Default)]
pub(crate) struct Batcher {
    buf: BytesMut,
}

/// MD5's block size.
pub(crate) const BLOCK: usize = 64;

impl Batcher {
    pub(crate) fn push(&mut self, c: Bytes) -> Option<Bytes> {
        if self.buf.is_empty() && c.len() >= WRITE_BATCH {
            // Large chunks pass through (without their last partial block).
            let whole = c.len() - c.len() % BLOCK;
            if whole < c.len() {
                self.buf.reserve(WRITE_BATCH + BLOCK);
                self.buf.extend_from_slice(&c[whole..]);
            }
            return Some(c.slice(..whole));
        }
        if self.buf.capacity() == 0 {
            // One allocation per batch (growing by doubling would leave larger, half-used ones).
            self.buf.reserve(WRITE_BATCH + c.len());
        }
        self.buf.extend_from_slice(&c);
        if self.buf.len() < WRITE_BATCH {
            return None;
        }
        let whole = self.buf.len() - self.buf.len() % BLOCK;
        let out = self.buf.split_to(whole).freeze();
        if !self.buf.is_empty() {
            let tail = std::mem::take(&mut self.buf);
            self.buf.reserve(WRITE_BATCH + BLOCK);
            self.buf.extend_from_slice(&tail);
        }
        Some(out)
    }

    pub(crate) fn rest(&mut self) -> Option<Bytes> {
        (!self.buf.is_empty()).then(|| std::mem::take(&mut self.buf).freeze())
    }
}

/// Copy `len` bytes of `src` from `off` into `t`, hashing them.
pub(crate) fn copy_hashing(src: &File, mut off: u64, len: u64, t: &mut Temp, d: &mut BodyDigester) -> io::Result<()> {
    let mut buf = vec![0u8; (len as usize).clamp(1, WRITE_BATCH)];
    let mut left = len;
    while left > 0 {
        let want = (left as usize).min(buf.len());
        let n = src.read_at(&mut buf[..want], off)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "source object shrank while copying"));
        }
        write_hashing(t, d, &buf[..n])?;
        off += n as u64;
        left -= n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod batcher_tests {
    use super::*;

    /// Batches keep the stream's bytes in order, every batch but the last is whole 64-byte
    /// blocks, and none (but a large chunk passed through) is much smaller than `WRITE_BATCH`.
    #[test]
    fn batches_are_block_aligned_and_lossless() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for round in 0..50 {
            let mut b = Batcher::default();
            let mut input = Vec::new();
            let mut out: Vec<Bytes> = Vec::new();
            for _ in 0..40 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = match x % 4 {
                    0 => (x >> 8) as usize % 100,
                    1 => (x >> 8) as usize % 70_000,
                    2 => WRITE_BATCH + (x >> 8) as usize % 100_000,
                    _ => (x >> 8) as usize % (3 * WRITE_BATCH),
                };
                let chunk: Vec<u8> = (0..len).map(|i| (i as u64 ^ x ^ round) as u8).collect();
                input.extend_from_slice(&chunk);
                out.extend(b.push(Bytes::from(chunk)));
            }
            for o in &out {
                assert_eq!(o.len() % BLOCK, 0);
                assert!(o.len() >= WRITE_BATCH - BLOCK, "batch of {}", o.len());
            }
            out.extend(b.rest());
            assert_eq!(out.concat(), input);
        }
    }
}
