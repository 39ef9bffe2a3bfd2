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
    hash_pieces_into(&mut t.file, Some(d), data)
}

/// Write `data` with calls of at most [`WRITE_PIECE`] bytes (see there: one call for a body
/// of several MiB costs the page-cache copy several times as much CPU).
pub(crate) fn write_pieces(f: &mut File, data: &[u8]) -> io::Result<()> {
    hash_pieces_into(f, None, data)
}

/// Write `data` into `w` in pieces of at most [`WRITE_PIECE`] bytes, each fed to `d` (if
/// any) just before it is written, while it is in the CPU cache.
fn hash_pieces_into(w: &mut impl Write, mut d: Option<&mut BodyDigester>, data: &[u8]) -> io::Result<()> {
    for piece in data.chunks(WRITE_PIECE) {
        if let Some(d) = d.as_deref_mut() {
            d.update(piece);
        }
        w.write_all(piece)?;
    }
    Ok(())
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

/// A batch of body pieces, in order, written with one `writev` (see [`write_batch`]).
pub(crate) type Batch = Vec<Bytes>;

/// Gathers stream chunks into batches of about `WRITE_BATCH` without copying them where it can:
/// a chunk that starts on an alignment boundary of the body passes as it is (its whole units;
/// the few bytes after them are copied), and only small chunks and the bytes between two
/// boundaries are copied into a buffer. Every piece of a batch but the last of the body is a
/// whole number of alignment units, so every piece starts on a boundary: 64-byte MD5 blocks, or
/// with `units` (the MD5 goes to the shared multi-buffer service) its 64 KiB units, which that
/// service hashes together with other bodies' (a shorter piece is hashed alone, several times
/// slower). Chunks of aws-chunked bodies (64 KiB or 1 MiB from current SDKs) and full network
/// reads of 128 KiB are boundaries of both kinds, so they reach the file without a copy.
pub(crate) struct Batcher {
    parts: Batch,
    /// Bytes in `parts`.
    len: usize,
    /// Copied bytes, after `parts`.
    buf: BytesMut,
    /// The alignment unit: `BLOCK`, or `md5lanes::UNIT` with `units`.
    unit: usize,
}

/// MD5's block size.
pub(crate) const BLOCK: usize = 64;
/// Chunks shorter than this are copied: a piece of its own would cost more than the copy.
const PASS_MIN: usize = 4 << 10;

impl Batcher {
    pub(crate) fn new(units: bool) -> Batcher {
        let unit = if units { md5lanes::UNIT } else { BLOCK };
        Batcher { parts: Vec::new(), len: 0, buf: BytesMut::new(), unit }
    }

    pub(crate) fn push(&mut self, mut c: Bytes) -> Option<Batch> {
        let u = self.unit;
        // Bytes needed to complete the unit the buffer ends in.
        let need = (u - self.buf.len() % u) % u;
        if c.len() >= need + u.max(PASS_MIN) {
            if need > 0 {
                self.copy(&c[..need]);
                bytes::Buf::advance(&mut c, need);
            }
            self.flush_buf(self.buf.len());
            let whole = c.len() - c.len() % u;
            self.len += whole;
            self.parts.push(c.slice(..whole));
            self.copy(&c[whole..]);
        } else {
            self.copy(&c);
        }
        if self.len + self.buf.len() < WRITE_BATCH {
            return None;
        }
        // Whole units of the buffer go now; the rest (less than a unit) starts the next batch.
        self.flush_buf(self.buf.len() - self.buf.len() % u);
        self.len = 0;
        Some(std::mem::take(&mut self.parts))
    }

    /// The first `n` bytes of the buffer become a piece of the batch (no copy).
    fn flush_buf(&mut self, n: usize) {
        if n > 0 {
            self.len += n;
            self.parts.push(self.buf.split_to(n).freeze());
        }
    }

    fn copy(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        if self.buf.capacity() - self.buf.len() < b.len() {
            // Small chunks are gathered up to a batch in one allocation; a chunk that passed
            // leaves at most a unit behind.
            let want = if b.len() < PASS_MIN { WRITE_BATCH } else { b.len() };
            self.buf.reserve(want.max(b.len()));
        }
        self.buf.extend_from_slice(b);
    }

    pub(crate) fn rest(&mut self) -> Option<Batch> {
        self.flush_buf(self.buf.len());
        self.len = 0;
        (!self.parts.is_empty()).then(|| std::mem::take(&mut self.parts))
    }
}

/// Write a batch's pieces into `f` with `writev` (one call for the whole batch as a rule).
pub(crate) fn write_batch(f: &mut File, parts: &[Bytes]) -> io::Result<()> {
    if let [one] = parts {
        return write_pieces(f, one);
    }
    let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match f.write_vectored(left) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "failed to write a body batch")),
            Ok(n) => io::IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Hash a batch's pieces, then write them.
pub(crate) fn hash_and_write(h: &mut Hashing, t: &mut Temp, parts: &[Bytes]) -> Result<()> {
    for p in parts {
        h.feed(p)?;
    }
    write_batch(&mut t.file, parts)?;
    Ok(())
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

    /// Batches keep the stream's bytes in order; every piece of every batch but the last is
    /// whole units (so each starts on a unit boundary of the body); no batch but the last is much
    /// smaller than `WRITE_BATCH`; and chunks that start on a boundary pass without a copy.
    #[test]
    fn batches_are_aligned_lossless_and_pass_aligned_chunks() {
        for units in [false, true] {
            let unit = if units { md5lanes::UNIT } else { BLOCK };
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for round in 0..50 {
                let mut b = Batcher::new(units);
                let mut input = Vec::new();
                let mut out: Vec<Batch> = Vec::new();
                for _ in 0..40 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let len = match x % 5 {
                        0 => (x >> 8) as usize % 100,
                        1 => (x >> 8) as usize % 70_000,
                        2 => WRITE_BATCH + (x >> 8) as usize % 100_000,
                        3 => md5lanes::UNIT * (1 + (x >> 8) as usize % 3),
                        _ => (x >> 8) as usize % (3 * WRITE_BATCH),
                    };
                    let chunk: Vec<u8> = (0..len).map(|i| (i as u64 ^ x ^ round) as u8).collect();
                    input.extend_from_slice(&chunk);
                    out.extend(b.push(Bytes::from(chunk)));
                }
                for batch in &out {
                    let total: usize = batch.iter().map(Bytes::len).sum();
                    assert!(total >= WRITE_BATCH - unit, "batch of {total}");
                    for p in batch {
                        assert_eq!(p.len() % unit, 0, "piece of {} (unit {unit})", p.len());
                    }
                }
                out.extend(b.rest());
                assert!(b.rest().is_none());
                let got: Vec<u8> = out.iter().flatten().flat_map(|p| p.iter().copied()).collect();
                assert!(got == input, "units={units} round {round}: bytes differ");
            }
        }
    }

    /// Aligned chunks (aws-chunked 64 KiB chunks, full 128 KiB reads) reach the batch as the
    /// same memory, and the halves of a chunk split across two reads are copied once into one
    /// unit, after which the following chunks pass again.
    #[test]
    fn aligned_chunks_are_not_copied() {
        for units in [false, true] {
            let mut b = Batcher::new(units);
            let unit = md5lanes::UNIT;
            let chunks: Vec<Bytes> = (0..4u8).map(|i| Bytes::from(vec![i; unit])).collect();
            let mut out = Vec::new();
            out.extend(b.push(chunks[0].clone()));
            // The second chunk arrives in two reads.
            out.extend(b.push(chunks[1].slice(..1000)));
            out.extend(b.push(chunks[1].slice(1000..)));
            out.extend(b.push(chunks[2].clone()));
            out.extend(b.push(chunks[3].clone()));
            out.extend(b.rest());
            let pieces: Vec<&Bytes> = out.iter().flatten().collect();
            let same = |p: &Bytes, c: &Bytes| p.as_ptr() == c.as_ptr() && p.len() == c.len();
            assert!(same(pieces[0], &chunks[0]), "units={units}: first chunk copied");
            assert!(pieces.iter().any(|p| same(p, &chunks[2])), "units={units}: chunk after a split one copied");
            assert!(pieces.iter().any(|p| same(p, &chunks[3])), "units={units}: last chunk copied");
            let got: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
            assert!(got == chunks.concat());
        }
    }

    /// A batch of several pieces is written in order.
    #[test]
    fn write_batch_writes_every_piece_in_order() {
        let mut f = tempfile::tempfile().unwrap();
        let parts: Vec<Bytes> =
            (0..300u32).map(|i| Bytes::from(vec![(i % 251) as u8; 1 + (i as usize * 37) % 5000])).collect();
        write_batch(&mut f, &parts).unwrap();
        let mut got = Vec::new();
        use std::io::{Read, Seek};
        f.rewind().unwrap();
        f.read_to_end(&mut got).unwrap();
        assert!(got == parts.concat());
    }

    /// An in-memory body of several MiB reaches the file in calls of at most `WRITE_PIECE`
    /// bytes (one `write(2)` of a whole 8 MiB part cost the page-cache copy several times as
    /// much CPU), every byte in order, and its digests are those of the whole body.
    #[test]
    fn in_memory_bodies_are_written_in_pieces_and_hashed_whole() {
        #[derive(Default)]
        struct Calls {
            sizes: Vec<usize>,
            data: Vec<u8>,
        }
        impl Write for Calls {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                // As a file may: a short write now and then.
                let n = if self.sizes.len() % 3 == 1 { b.len().min(4097) } else { b.len() };
                self.sizes.push(b.len());
                self.data.extend_from_slice(&b[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let body: Vec<u8> = (0..(8 << 20) + 12_345u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        let mut w = Calls::default();
        let mut d = BodyDigester::new(EtagMode::Md5, false, Some(s3hpc_core::ChecksumAlgorithm::Crc64Nvme));
        hash_pieces_into(&mut w, Some(&mut d), &body).unwrap();
        let largest = w.sizes.iter().copied().max().unwrap();
        assert!(largest <= WRITE_PIECE, "a write of {largest} bytes (at most {WRITE_PIECE})");
        assert!(w.data == body, "{} bytes written of {}", w.data.len(), body.len());
        let mut whole = BodyDigester::new(EtagMode::Md5, false, Some(s3hpc_core::ChecksumAlgorithm::Crc64Nvme));
        whole.update(&body);
        let (got, want) = (d.finish(), whole.finish());
        assert_eq!((got.etag, got.md5, got.checksum, got.size), (want.etag, want.md5, want.checksum, want.size));

        // The same for a file, through the helpers the store calls.
        let mut f = tempfile::tempfile().unwrap();
        write_pieces(&mut f, &body).unwrap();
        write_batch(&mut f, &[Bytes::from(body[..3 << 20].to_vec())]).unwrap();
        let mut got = Vec::new();
        use std::io::{Read, Seek};
        f.rewind().unwrap();
        f.read_to_end(&mut got).unwrap();
        assert!(got[..body.len()] == body[..] && got[body.len()..] == body[..3 << 20]);
    }
}
