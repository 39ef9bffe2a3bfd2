//! The write side of a connection, shared by every task of that connection.
//!
//! Small frames take a fast path: when nothing is queued and nobody is writing, the sending task
//! writes them straight into the socket with one non-blocking `write` (saving a task hand-off per
//! response). Everything else (a full socket buffer, a partial write, file regions, passed
//! descriptors) goes through a queue that one background task drains, coalescing small frames
//! into vectored writes. Frame order is preserved: the fast path is only taken with an empty
//! queue, and the remainder of a partial write goes to the front of the queue. A sender may also
//! hold frames back for a while ([`OutTx::hold`]) and then send them with one write.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::frame::HEADER_LEN;
use crate::sys::WriteHalf;

/// What the writer sends.
pub(crate) enum Out {
    /// Complete frames.
    Frames(Bytes),
    /// A DATA frame header followed by a file region sent with `sendfile`.
    File { header: [u8; HEADER_LEN], file: Arc<std::fs::File>, offset: u64, len: u32 },
    /// A RESPONSE frame sent together with a file descriptor (SCM_RIGHTS).
    Fd { frame: Bytes, file: std::fs::File },
    /// A DATA frame header followed by a large payload written without copying.
    Data { header: [u8; HEADER_LEN], payload: Bytes },
    /// Flush and close the write side.
    Close,
}

struct State {
    queue: VecDeque<Out>,
    /// Someone (a fast-path sender or the drain task) is writing to the socket.
    busy: bool,
    /// No more frames are accepted (closed, or the socket failed).
    closed: bool,
    /// While [`OutTx::hold`] is in effect: the complete frames sent since, concatenated.
    held: Option<Vec<u8>>,
}

struct Shared {
    sock: WriteHalf,
    state: Mutex<State>,
    wake: Notify,
    senders: AtomicUsize,
}

/// A handle for sending frames; cheap to clone. When the last handle is dropped the drain task
/// writes what is queued and closes the write side.
pub(crate) struct OutTx(Arc<Shared>);

impl Clone for OutTx {
    fn clone(&self) -> Self {
        self.0.senders.fetch_add(1, Ordering::AcqRel);
        OutTx(self.0.clone())
    }
}

impl Drop for OutTx {
    fn drop(&mut self) {
        if self.0.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.wake.notify_one();
        }
    }
}

const FAST_PATH_MAX: usize = 64 << 10;

impl OutTx {
    /// Queue (or directly write) one item. `Err` when the connection is closed.
    pub(crate) fn send(&self, o: Out) -> Result<(), Out> {
        let s = &*self.0;
        let mut st = s.state.lock().unwrap();
        if st.closed {
            return Err(o);
        }
        if let Some(h) = st.held.as_mut() {
            if let Out::Frames(b) = &o {
                h.extend_from_slice(b);
                return Ok(());
            }
            // Anything else goes after what is held: queue that first (order is kept).
            let before = std::mem::take(h);
            if !before.is_empty() {
                st.queue.push_back(Out::Frames(Bytes::from(before)));
            }
        }
        let fast = !st.busy && st.queue.is_empty() && matches!(&o, Out::Frames(b) if b.len() <= FAST_PATH_MAX);
        if !fast {
            st.queue.push_back(o);
            if !st.busy {
                s.wake.notify_one();
            }
            return Ok(());
        }
        st.busy = true;
        drop(st);
        let Out::Frames(b) = o else { unreachable!() };
        // WouldBlock, or an error the drain task will meet again and report: nothing written.
        let written = s.sock.try_write(&b).unwrap_or_default();
        let mut st = s.state.lock().unwrap();
        st.busy = false;
        if written < b.len() {
            st.queue.push_front(Out::Frames(b.slice(written..)));
        }
        if !st.queue.is_empty() {
            s.wake.notify_one();
        }
        Ok(())
    }

    /// Hold complete frames back until [`release`](Self::release), to send them with one
    /// write: a server's batch of quick requests answers all of them at once (one system call
    /// and one wake-up of the client instead of one per response). Other items still go out in
    /// order, after what is held.
    pub(crate) fn hold(&self) {
        self.0.state.lock().unwrap().held = Some(Vec::new());
    }

    /// Send what [`hold`](Self::hold) kept back, and stop holding.
    pub(crate) fn release(&self) {
        let held = self.0.state.lock().unwrap().held.take();
        if let Some(h) = held
            && !h.is_empty()
        {
            let _ = self.send(Out::Frames(Bytes::from(h)));
        }
    }

    /// Whether the peer has closed the connection (see [`WriteHalf::peer_closed`]).
    pub(crate) fn peer_closed(&self) -> bool {
        self.0.sock.peer_closed()
    }

    /// Tear the connection down now (the server is shutting down or the connection task was
    /// cancelled): drop what is queued, refuse further frames and shut the socket down in both
    /// directions, so the peer sees the end of the connection at once even while request handlers
    /// still hold senders.
    pub(crate) fn abort(&self) {
        let s = &*self.0;
        let mut st = s.state.lock().unwrap();
        st.closed = true;
        st.queue.clear();
        drop(st);
        s.sock.shutdown_both();
        s.wake.notify_one();
    }
}

/// Create the writer for a socket: the sending handle and the drain task to spawn.
pub(crate) fn writer(sock: WriteHalf) -> (OutTx, impl Future<Output = io::Result<()>> + Send) {
    let shared = Arc::new(Shared {
        sock,
        state: Mutex::new(State { queue: VecDeque::new(), busy: false, closed: false, held: None }),
        wake: Notify::new(),
        senders: AtomicUsize::new(1),
    });
    let task_shared = shared.clone();
    (OutTx(shared), drain(task_shared))
}

async fn drain(s: Arc<Shared>) -> io::Result<()> {
    let res = drain_inner(&s).await;
    let mut st = s.state.lock().unwrap();
    st.closed = true;
    st.queue.clear();
    drop(st);
    s.sock.shutdown_write();
    res
}

async fn drain_inner(s: &Shared) -> io::Result<()> {
    let mut bufs: Vec<Bytes> = Vec::with_capacity(64);
    loop {
        let batch: Vec<Out> = {
            let mut st = s.state.lock().unwrap();
            if st.closed {
                return Ok(());
            }
            if st.busy || st.queue.is_empty() {
                None
            } else {
                st.busy = true;
                Some(st.queue.drain(..).collect())
            }
        }
        .unwrap_or_default();
        if batch.is_empty() {
            if s.senders.load(Ordering::Acquire) == 0 && s.state.lock().unwrap().queue.is_empty() {
                return Ok(());
            }
            s.wake.notified().await;
            continue;
        }
        let res = write_batch(s, batch, &mut bufs).await;
        s.state.lock().unwrap().busy = false;
        match res {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Write a batch; `Ok(true)` when it contained `Close`.
async fn write_batch(s: &Shared, batch: Vec<Out>, bufs: &mut Vec<Bytes>) -> io::Result<bool> {
    let mut pending = 0usize;
    for item in batch {
        match item {
            Out::Frames(b) => {
                pending += b.len();
                bufs.push(b);
            }
            Out::Data { header, payload } => {
                pending += HEADER_LEN + payload.len();
                bufs.push(Bytes::copy_from_slice(&header));
                bufs.push(payload);
            }
            Out::File { header, file, offset, len } => {
                bufs.push(Bytes::copy_from_slice(&header));
                s.sock.write_all_vectored(bufs).await?;
                bufs.clear();
                pending = 0;
                s.sock.sendfile(&file, offset, len as u64).await?;
            }
            Out::Fd { frame, file } => {
                s.sock.write_all_vectored(bufs).await?;
                bufs.clear();
                pending = 0;
                use std::os::fd::AsFd;
                s.sock.send_with_fd(&frame, file.as_fd()).await?;
            }
            Out::Close => {
                s.sock.write_all_vectored(bufs).await?;
                bufs.clear();
                return Ok(true);
            }
        }
        if pending >= 256 << 10 || bufs.len() >= 64 {
            s.sock.write_all_vectored(bufs).await?;
            bufs.clear();
            pending = 0;
        }
    }
    if !bufs.is_empty() {
        s.sock.write_all_vectored(bufs).await?;
        bufs.clear();
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Stream;
    use tokio::io::AsyncReadExt;

    /// Frames sent while held leave together at `release`, and items of other kinds sent
    /// meanwhile go out after the frames held before them: the peer sees the sending order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn held_frames_keep_their_order_with_other_items() {
        let (a, mut peer) = tokio::net::UnixStream::pair().unwrap();
        let (_r, w) = Stream::Unix(a).split().unwrap();
        let (out, drain) = writer(w);
        let drain = tokio::spawn(drain);
        let frames = |s: &'static str| Out::Frames(Bytes::from_static(s.as_bytes()));
        out.hold();
        assert!(out.send(frames("one,")).is_ok());
        assert!(out.send(frames("two,")).is_ok());
        let header = [b'H'; HEADER_LEN];
        assert!(out.send(Out::Data { header, payload: Bytes::from_static(b"three,") }).is_ok());
        assert!(out.send(frames("four,")).is_ok());
        out.release();
        assert!(out.send(frames("five")).is_ok());
        drop(out);
        drain.await.unwrap().unwrap();
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        let want = [&b"one,two,"[..], &header[..], b"three,four,five"].concat();
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want));
    }
}
