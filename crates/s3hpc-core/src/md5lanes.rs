//! MD5 of many bodies at once: a shared hashing service with multi-buffer SIMD.
//!
//! One MD5 stream cannot use SIMD (each 64-byte block depends on the previous one), so a single
//! body hashes at about 0.7 GB/s per core here, which made MD5 the largest CPU cost of concurrent
//! 1 MiB PUTs. Independent bodies can share the vector lanes instead: `md5-many` hashes 8 streams
//! at about 3.9 GB/s in total with AVX2 (16 at 5-6 GB/s), where one stream alone runs at the
//! single-stream speed. The service keeps the MD5 state of every body being written; writers
//! hand it their pieces without waiting (a [`Lane`] per body) and collect the digest at the end.
//! Worker threads take the oldest piece of each body that has one, up to [`MAX_BATCH`] bodies per
//! step, and hash them in one `update_many` call: with one body in flight this is a helper thread
//! hashing beside the writer, with many it is one SIMD pass over all of them.
//!
//! Memory is bounded per body: a writer with [`MAX_QUEUED`] bytes not yet hashed waits.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;
use md5_many::{Md5Many, Md5State};

/// Bodies hashed together in one step (the widest AVX-512 kernels take 16 per chain).
pub const MAX_BATCH: usize = 16;
const _: () = assert!(MAX_BATCH <= 16, "the padding below assumes at most 16 pieces per step");
/// Bodies are hashed in units of this size (equal lengths keep md5-many on its fast kernels);
/// a piece's last part shorter than this is hashed on its own.
pub const UNIT: usize = 64 << 10;
/// Bytes a body may have queued and not yet hashed before its writer waits: four units, so a
/// worker always finds the body's next unit queued while the writer writes the one after. Every
/// queued byte pins a body piece in memory, so this times the admitted uploads bounds what
/// hashing holds back (2 MiB per body until issue 39: up to 32 MiB for 16 uploads where the
/// hashing lags, as on a loaded host; docs/perf/scale.md, "Memory").
pub const MAX_QUEUED: usize = 4 * UNIT;

struct Body {
    /// `None` while a worker is hashing a piece of this body.
    state: Option<Md5State>,
    queue: VecDeque<Bytes>,
    queued: usize,
    /// The hashing of a piece of this body panicked: its digest is lost.
    failed: bool,
}

#[derive(Default)]
struct Table {
    bodies: HashMap<u64, Body>,
    next_id: u64,
    /// Bodies with a piece queued and no worker on them, oldest first (each at most once), so
    /// every body gets its turn when more than [`MAX_BATCH`] are waiting. Ids of bodies dropped
    /// meanwhile are skipped.
    ready: VecDeque<u64>,
}

struct Service {
    table: Mutex<Table>,
    /// Workers wait here for pieces.
    work: Condvar,
    /// Writers wait here for room in their queue, or for their last piece to be hashed.
    progress: Condvar,
    engine: Md5Many,
}

fn service() -> &'static Service {
    static S: OnceLock<&'static Service> = OnceLock::new();
    S.get_or_init(|| {
        let s: &'static Service = Box::leak(Box::new(Service {
            table: Mutex::new(Table::default()),
            work: Condvar::new(),
            progress: Condvar::new(),
            engine: Md5Many::new(),
        }));
        // One worker per 8 cores (at least one): a worker hashes 4-6 GB/s with full lanes.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(8));
        for i in 0..workers {
            std::thread::Builder::new()
                .name(format!("s3hpc-md5-{i}"))
                .spawn(move || worker(s))
                .expect("s3hpc: cannot start the MD5 hashing thread");
        }
        s
    })
}

impl Service {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn worker(s: &'static Service) {
    // Equal-length units of full pieces (hashed together), and short last pieces (alone).
    let mut ids: Vec<u64> = Vec::with_capacity(MAX_BATCH);
    let mut states: Vec<Md5State> = Vec::with_capacity(MAX_BATCH);
    let mut units: Vec<Bytes> = Vec::with_capacity(MAX_BATCH);
    let mut shorts: Vec<(u64, Md5State, Bytes)> = Vec::new();
    loop {
        {
            let mut t = s.lock();
            loop {
                // One pass over the bodies waiting now: each gives one unit (or its short piece).
                for _ in 0..t.ready.len() {
                    if ids.len() == MAX_BATCH {
                        break;
                    }
                    let Some(id) = t.ready.pop_front() else { break };
                    let Some(b) = t.bodies.get_mut(&id) else { continue };
                    let (Some(st), Some(front)) = (b.state.take(), b.queue.front_mut()) else {
                        unreachable!("a ready body has a state and a piece")
                    };
                    if front.len() >= UNIT {
                        let unit = front.split_to(UNIT);
                        if front.is_empty() {
                            b.queue.pop_front();
                        }
                        ids.push(id);
                        states.push(st);
                        units.push(unit);
                    } else {
                        let piece = b.queue.pop_front().expect("present");
                        shorts.push((id, st, piece));
                    }
                }
                if !ids.is_empty() || !shorts.is_empty() {
                    break;
                }
                t = s.work.wait(t).unwrap_or_else(|p| p.into_inner());
            }
        }
        let mut units_ok = true;
        if !units.is_empty() {
            let mut inputs: Vec<&[u8]> = units.iter().map(|p| &p[..]).collect();
            // md5-many's fast kernels take full groups of 8 or 16 equal-length inputs; other
            // shapes fall to a generic path that is slower than one stream (here: 6 pieces of
            // 128 KiB at 190 MB/s in all, 2961 MB/s padded to 8; mixed lengths ~0.4 GB/s).
            // Fill the group with copies of a unit whose results are thrown away.
            let real = inputs.len();
            let lanes = match real {
                1 => 1,
                2..=8 => 8,
                _ => 16,
            };
            states.resize_with(lanes, Md5State::new);
            inputs.resize(lanes, inputs[0]);
            let engine = s.engine;
            units_ok = catch_unwind(AssertUnwindSafe(|| engine.update_many(&mut states, &inputs))).is_ok();
            states.truncate(real);
        }
        let shorts_ok = catch_unwind(AssertUnwindSafe(|| {
            for (_, st, piece) in shorts.iter_mut() {
                st.update(piece);
            }
        }))
        .is_ok();
        // Writers wait for their last piece (finish) or for room (feed): wake them only when
        // a body caught up or got room back, not after every step.
        let mut wake = false;
        let more = {
            let mut t = s.lock();
            let done =
                ids.drain(..).zip(states.drain(..)).zip(units.drain(..)).map(|((i, st), u)| (i, st, u, units_ok));
            for (id, st, p, ok) in done.chain(shorts.drain(..).map(|(i, st, p)| (i, st, p, shorts_ok))) {
                // A body dropped meanwhile (its writer failed) is simply gone.
                if let Some(b) = t.bodies.get_mut(&id) {
                    b.failed |= !ok;
                    b.state = Some(st);
                    let was_full = b.queued >= MAX_QUEUED;
                    b.queued -= p.len();
                    wake |= b.queue.is_empty() || b.failed || (was_full && b.queued < MAX_QUEUED);
                    if !b.queue.is_empty() {
                        t.ready.push_back(id);
                    }
                }
            }
            !t.ready.is_empty()
        };
        if wake {
            s.progress.notify_all();
        }
        if more {
            // Other workers (if any) may take part of the rest.
            s.work.notify_one();
        }
    }
}

/// The MD5 of one body, computed by the shared service from the pieces given to [`feed`](Lane::feed),
/// in order. Dropping a lane without [`finish`](Lane::finish) discards it.
pub struct Lane {
    id: u64,
    /// Bytes fed so far.
    size: u64,
}

impl Lane {
    pub fn new() -> Lane {
        let s = service();
        let mut t = s.lock();
        let id = t.next_id;
        t.next_id += 1;
        t.bodies.insert(id, Body { state: Some(Md5State::new()), queue: VecDeque::new(), queued: 0, failed: false });
        Lane { id, size: 0 }
    }

    /// Queue the next piece of the body (no copy: `b` is shared). Waits only while this body
    /// already has [`MAX_QUEUED`] bytes waiting.
    pub fn feed(&mut self, b: Bytes) {
        self.push(b, true);
    }

    /// Queue the next piece without ever waiting, for a body the caller already holds whole in
    /// memory: queuing it costs no memory, and waiting here would keep the caller from writing
    /// the body while it is hashed.
    pub fn feed_held(&mut self, b: Bytes) {
        self.push(b, false);
    }

    fn push(&mut self, b: Bytes, bounded: bool) {
        if b.is_empty() {
            return;
        }
        self.size += b.len() as u64;
        let s = service();
        let mut t = s.lock();
        while bounded && t.bodies.get(&self.id).is_some_and(|x| x.queued >= MAX_QUEUED) {
            t = s.progress.wait(t).unwrap_or_else(|p| p.into_inner());
        }
        let Some(x) = t.bodies.get_mut(&self.id) else { return };
        x.queued += b.len();
        x.queue.push_back(b);
        // Not ready yet if a worker holds the state: it queues the body again when done.
        let newly_ready = x.queue.len() == 1 && x.state.is_some();
        if newly_ready {
            t.ready.push_back(self.id);
        }
        drop(t);
        if newly_ready {
            s.work.notify_one();
        }
    }

    /// Bytes fed so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether every piece fed so far has been hashed.
    pub fn caught_up(&self) -> bool {
        let t = service().lock();
        t.bodies.get(&self.id).is_none_or(|x| x.queue.is_empty() && x.state.is_some())
    }

    /// The digest, once every piece is hashed; `None` if hashing failed (a panic in the
    /// hashing code: the caller must not publish the body).
    pub fn finish(self) -> Option<[u8; 16]> {
        let s = service();
        let mut t = s.lock();
        let state = loop {
            match t.bodies.get_mut(&self.id) {
                Some(x) if x.failed => return None,
                Some(x) if x.queue.is_empty() && x.state.is_some() => break x.state.take().expect("checked"),
                Some(_) => t = s.progress.wait(t).unwrap_or_else(|p| p.into_inner()),
                None => unreachable!("a lane's body leaves the table only in finish or drop"),
            }
        };
        drop(t);
        // Drop removes the entry.
        Some(state.finalize())
    }
}

impl Default for Lane {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let s = service();
        s.lock().bodies.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5_ref::Digest;

    fn reference(pieces: &[Bytes]) -> [u8; 16] {
        let mut h = md5_ref::Md5::new();
        for p in pieces {
            h.update(p);
        }
        h.finalize().into()
    }

    fn body(seed: u64, len: usize) -> Bytes {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect::<Vec<u8>>()
            .into()
    }

    /// Pieces of a body cut at uneven places (block boundaries and not).
    fn cut(b: &Bytes, seed: usize) -> Vec<Bytes> {
        let sizes = [1usize, 63, 64, 65, 4096, 131_072, 262_144, 7, 100_000];
        let mut out = Vec::new();
        let mut off = 0;
        let mut i = seed;
        while off < b.len() {
            let n = sizes[i % sizes.len()].min(b.len() - off);
            out.push(b.slice(off..off + n));
            off += n;
            i += 1;
        }
        out
    }

    #[test]
    fn one_body_matches_the_reference() {
        for len in [0usize, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 300_001, 1 << 20] {
            let b = body(len as u64, len);
            let pieces = cut(&b, len);
            let mut lane = Lane::new();
            for p in &pieces {
                lane.feed(p.clone());
            }
            assert_eq!(lane.size(), len as u64);
            assert_eq!(lane.finish(), Some(reference(&pieces)), "len {len}");
        }
    }

    /// A held body is queued whole, past the per-body bound, mixed with bounded feeds.
    #[test]
    fn held_bodies_past_the_bound_match_the_reference() {
        let b = body(7, 3 * MAX_QUEUED + 12_345);
        let pieces = cut(&b, 3);
        let mut lane = Lane::new();
        for (i, p) in pieces.iter().enumerate() {
            if i % 3 == 0 { lane.feed(p.clone()) } else { lane.feed_held(p.clone()) }
        }
        assert_eq!(lane.size(), b.len() as u64);
        assert_eq!(lane.finish(), Some(reference(&pieces)));
    }

    /// Many writers at once, with different lengths and piece sizes (so the batches mix bodies
    /// at different offsets), some abandoned half-way: every finished digest is right.
    #[test]
    fn concurrent_bodies_match_the_reference() {
        std::thread::scope(|sc| {
            for w in 0..24usize {
                sc.spawn(move || {
                    for round in 0..4usize {
                        let len = [3 << 20, 1 << 20, 777_777, 64, 131_072 * 3][(w + round) % 5];
                        let b = body((w * 10 + round) as u64, len);
                        let pieces = cut(&b, w + round);
                        let mut lane = Lane::new();
                        if (w + round) % 7 == 3 {
                            for p in pieces.iter().take(pieces.len() / 2) {
                                lane.feed(p.clone());
                            }
                            drop(lane);
                            continue;
                        }
                        for p in &pieces {
                            lane.feed(p.clone());
                        }
                        assert_eq!(lane.finish(), Some(reference(&pieces)), "writer {w} round {round}");
                    }
                });
            }
        });
    }
}
