//! Transports (Unix and TCP sockets behind one type), zero-copy `sendfile`, peer credentials, and
//! the handshake proof.
//!
//! The socket calls go through rustix's safe API (`send`, `sendmsg` with `SCM_RIGHTS`,
//! `shutdown`, `sendfile`, `setsockopt`); `unsafe` is left where memory is handed over
//! uninitialised (reads into a buffer's spare capacity: `recv` into a `ReadBuf`, `recvmsg`,
//! whose safe rustix form needs initialised buffers), for the shared mappings of upload slots
//! (`mmap`), and for registering a descriptor with Tokio's reactor.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hmac::{KeyInit, Mac};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWriteExt, Interest, ReadBuf};
use tokio::net::{TcpStream, UnixStream, tcp};

/// Where to listen or connect: `unix:///path`, `tcp://host:port`, or `tls://host:port` (TCP
/// with TLS; see [`crate::tls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(std::path::PathBuf),
    Tcp(String),
    Tls(String),
}

impl Endpoint {
    pub fn parse(url: &str) -> io::Result<Endpoint> {
        if let Some(p) = url.strip_prefix("unix://") {
            if p.is_empty() {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "unix:// URL without a path"));
            }
            Ok(Endpoint::Unix(p.into()))
        } else if let Some((scheme, a)) = url.split_once("://").filter(|(s, _)| *s == "tcp" || *s == "tls") {
            let a = a.trim_end_matches('/');
            if a.is_empty() {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{scheme}:// URL without host:port")));
            }
            Ok(if scheme == "tls" { Endpoint::Tls(a.to_string()) } else { Endpoint::Tcp(a.to_string()) })
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("binary protocol URL must be unix:///path, tcp://host:port or tls://host:port, got {url:?}"),
            ))
        }
    }

    /// Connect; a `tls://` server's certificate is checked against the system's roots plus the
    /// PEM bundle `ca_bundle`.
    pub async fn connect(&self, ca_bundle: Option<&std::path::Path>) -> io::Result<Stream> {
        match self {
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p).await?;
                tune_unix(&s);
                Ok(Stream::Unix(s))
            }
            Endpoint::Tcp(a) => {
                let s = TcpStream::connect(a).await?;
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
            Endpoint::Tls(a) => Ok(Stream::Tls(crate::tls::connect(a, ca_bundle).await?)),
        }
    }
}

/// Send buffer asked for on Unix stream sockets. The default (`net.core.wmem_default`, usually
/// 208 KiB) is less than one 1 MiB DATA frame, so a bulk transfer takes several wake-ups of each
/// side per frame. The kernel caps the value at `net.core.wmem_max`.
pub const UNIX_SNDBUF: usize = 2 << 20;

/// Enlarge the send buffer of a Unix stream socket (best effort).
pub fn tune_unix(s: &UnixStream) {
    set_sndbuf(s, UNIX_SNDBUF);
}

/// Ask for a send buffer of `v` bytes (best effort; the kernel doubles and caps it).
fn set_sndbuf(s: &impl AsFd, v: usize) {
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(s, v);
}

/// A connected socket.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    /// A TLS connection, seen through the Unix socket of its relay ([`crate::tls`]): served as a
    /// Unix socket, but with no descriptor passing and no peer credentials.
    Tls(UnixStream),
}

impl Stream {
    pub fn split(self) -> io::Result<(ReadHalf, WriteHalf)> {
        Ok(match self {
            Stream::Unix(s) | Stream::Tls(s) => {
                let io = UnixIo::new(s)?;
                (ReadHalf::Unix(io.clone()), WriteHalf::Unix(UnixWrite(io)))
            }
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
        })
    }

    /// The peer's uid on a Unix socket (SO_PEERCRED), `None` on TCP.
    pub fn peer_uid(&self) -> Option<u32> {
        match self {
            Stream::Unix(s) => s.peer_cred().ok().map(|c| c.uid()),
            Stream::Tcp(_) | Stream::Tls(_) => None,
        }
    }
}

/// A Unix stream socket registered with the reactor for read readiness only.
///
/// Reading from a Unix stream socket makes the kernel signal write space to the peer's socket
/// (`unix_write_space` on every consumed message), which wakes every epoll that watches the
/// peer for writability: Tokio's own sockets are always registered for both directions, so
/// each request read by the server woke the client's parked reactor thread for nothing, and
/// each response read by the client woke the server's (TCP signals write space only to writers
/// that ran out of it). Here write readiness is asked for only while a write waits for space,
/// through a duplicate descriptor registered for that alone.
pub struct UnixIo {
    fd: AsyncFd<OwnedFd>,
}

impl UnixIo {
    fn new(s: UnixStream) -> io::Result<Arc<UnixIo>> {
        // `into_std` deregisters the socket and leaves it non-blocking.
        let fd = OwnedFd::from(s.into_std()?);
        Ok(Arc::new(UnixIo { fd: register(fd, Interest::READABLE)? }))
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.get_ref().as_fd()
    }

    /// Run a non-blocking read operation once the socket is readable, retrying on `WouldBlock`.
    async fn read_with<R>(&self, mut f: impl FnMut(RawFd) -> io::Result<R>) -> io::Result<R> {
        loop {
            let mut g = self.fd.readable().await?;
            match g.try_io(|fd| f(fd.as_raw_fd())) {
                Ok(r) => return r,
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut g = std::task::ready!(self.fd.poll_read_ready(cx))?;
            // SAFETY: recv(2) only writes into the unfilled part (never de-initialises it); the
            // bytes it wrote are then marked initialised and filled.
            let spare = unsafe { buf.unfilled_mut() };
            let res = g.try_io(|fd| Ok(rustix::net::recv(fd, spare, rustix::net::RecvFlags::empty())?.1));
            match res {
                Ok(Ok(n)) => {
                    // SAFETY: the kernel initialised `n` bytes of the unfilled part.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }

    /// Wait until the socket has write space. Registers a duplicate of the descriptor for write
    /// readiness for the duration of the wait (epoll reports the current state on registration,
    /// so space freed before this call is not missed).
    async fn writable(&self) -> io::Result<()> {
        let dup = self.fd.get_ref().try_clone()?;
        let w = register(dup, Interest::WRITABLE)?;
        let _ready = w.writable().await?;
        Ok(())
    }

    fn try_write(&self, b: &[u8]) -> io::Result<usize> {
        // MSG_NOSIGNAL: a closed peer gives EPIPE, never SIGPIPE (the C library runs inside
        // programs that keep SIGPIPE).
        Ok(rustix::net::send(self.fd(), b, rustix::net::SendFlags::NOSIGNAL)?)
    }

    fn try_write_vectored(&self, b: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let mut no_control = rustix::net::SendAncillaryBuffer::default();
        Ok(rustix::net::sendmsg(self.fd(), b, &mut no_control, rustix::net::SendFlags::NOSIGNAL)?)
    }
}

impl AsRawFd for UnixIo {
    fn as_raw_fd(&self) -> RawFd {
        self.raw()
    }
}

impl AsFd for UnixIo {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd()
    }
}

fn register(fd: OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an OwnedFd is open, is owned by the AsyncFd for the AsyncFd's whole life, and
    // always returns the same descriptor.
    Ok(unsafe { AsyncFd::register_with_interest(fd, interest) }?)
}

/// The write side of a [`UnixIo`]; dropping it shuts the write direction down (as Tokio's
/// owned write halves do), so the peer sees the end of the stream.
pub struct UnixWrite(Arc<UnixIo>);

impl Drop for UnixWrite {
    fn drop(&mut self) {
        // Errors are irrelevant.
        let _ = rustix::net::shutdown(self.0.fd(), rustix::net::Shutdown::Write);
    }
}

pub enum ReadHalf {
    Unix(Arc<UnixIo>),
    Tcp(tcp::OwnedReadHalf),
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Unix(r) => r.poll_read(cx, buf),
            ReadHalf::Tcp(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

pub enum WriteHalf {
    Unix(UnixWrite),
    Tcp(tcp::OwnedWriteHalf),
}

impl WriteHalf {
    /// Write everything, waiting for the socket as needed (used by the handshake).
    pub async fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        match self {
            WriteHalf::Unix(w) => {
                while !b.is_empty() {
                    match w.0.try_write(b) {
                        Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => b = &b[n..],
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => w.0.writable().await?,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
            WriteHalf::Tcp(w) => w.write_all(b).await,
        }
    }

    /// One non-blocking write.
    pub fn try_write(&self, b: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Unix(w) => w.0.try_write(b),
            WriteHalf::Tcp(w) => w.try_write(b),
        }
    }

    async fn writable(&self) -> io::Result<()> {
        match self {
            WriteHalf::Unix(w) => w.0.writable().await,
            WriteHalf::Tcp(w) => w.as_ref().writable().await,
        }
    }

    fn try_write_vectored(&self, b: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            WriteHalf::Unix(w) => w.0.try_write_vectored(b),
            WriteHalf::Tcp(w) => w.try_write_vectored(b),
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            WriteHalf::Unix(w) => w.0.fd(),
            WriteHalf::Tcp(w) => w.as_ref().as_fd(),
        }
    }

    /// Write several buffers with vectored writes.
    pub async fn write_all_vectored(&self, bufs: &mut [Bytes]) -> io::Result<()> {
        let mut idx = 0;
        loop {
            while idx < bufs.len() && bufs[idx].is_empty() {
                idx += 1;
            }
            if idx == bufs.len() {
                return Ok(());
            }
            let slices: Vec<io::IoSlice<'_>> = bufs[idx..].iter().take(64).map(|b| io::IoSlice::new(b)).collect();
            let mut n = match self.try_write_vectored(&slices) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    drop(slices);
                    self.writable().await?;
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            drop(slices);
            while idx < bufs.len() && n >= bufs[idx].len() {
                n -= bufs[idx].len();
                idx += 1;
            }
            if n > 0 {
                let rest = bufs[idx].slice(n..);
                bufs[idx] = rest;
            }
        }
    }

    /// Close the write direction (the peer sees end of stream).
    pub fn shutdown_write(&self) {
        // Errors (already closed) are irrelevant.
        let _ = rustix::net::shutdown(self.fd(), rustix::net::Shutdown::Write);
    }

    /// Whether the peer has closed the connection (its end of stream is waiting to be read): one
    /// non-blocking `recv(MSG_PEEK)`, which consumes nothing.
    pub fn peer_closed(&self) -> bool {
        use rustix::net::RecvFlags;
        let mut b = [0u8; 1];
        // MSG_PEEK leaves the data (and any attached descriptors) queued for the reader.
        matches!(rustix::net::recv(self.fd(), &mut b, RecvFlags::PEEK | RecvFlags::DONTWAIT), Ok((_, 0)))
    }

    /// Shut the socket down in both directions (the peer sees end of stream; our reads end).
    pub fn shutdown_both(&self) {
        // Errors (already closed) are irrelevant.
        let _ = rustix::net::shutdown(self.fd(), rustix::net::Shutdown::Both);
    }

    /// Write `data` with `fd` attached (SCM_RIGHTS) to its first byte. Unix sockets only.
    pub async fn send_with_fd(&self, data: &[u8], fd: BorrowedFd<'_>) -> io::Result<()> {
        let WriteHalf::Unix(w) = self else {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "descriptor passing needs a Unix socket"));
        };
        let sent = loop {
            match sendmsg_fd(w.0.fd(), data, fd) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => w.0.writable().await?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        // The descriptor went with the first byte; the rest is plain data.
        self.write_all_vectored(&mut [Bytes::copy_from_slice(&data[sent..])]).await
    }

    /// Send `len` bytes of `file` from `offset` straight from the page cache into the socket.
    pub async fn sendfile(&self, file: &std::fs::File, offset: u64, len: u64) -> io::Result<()> {
        match self {
            WriteHalf::Unix(w) => sendfile_on(&*w.0, file, offset, len).await,
            WriteHalf::Tcp(w) => sendfile_on(w.as_ref(), file, offset, len).await,
        }
    }
}

/// One `sendmsg(2)` of `data` with `fd` attached (SCM_RIGHTS); the bytes sent.
pub fn sendmsg_fd(sock: impl AsFd, data: &[u8], fd: impl AsFd) -> io::Result<usize> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let fds = [fd.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor's control message"));
    }
    Ok(rustix::net::sendmsg(sock, &[io::IoSlice::new(data)], &mut control, SendFlags::NOSIGNAL)?)
}

impl ReadHalf {
    /// Read into the spare capacity of `buf`; descriptors that arrive (SCM_RIGHTS, Unix sockets
    /// only) are appended to `fds` in order.
    pub async fn read_with_fds(
        &mut self,
        buf: &mut bytes::BytesMut,
        fds: &mut std::collections::VecDeque<std::os::fd::OwnedFd>,
    ) -> io::Result<usize> {
        use tokio::io::AsyncReadExt;
        let ReadHalf::Unix(r) = self else {
            return self.read_buf(buf).await;
        };
        if buf.capacity() == buf.len() {
            buf.reserve(64 << 10);
        }
        loop {
            match r.read_with(|fd| recvmsg_fds(fd, buf, fds)).await {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                res => return res,
            }
        }
    }
}

fn recvmsg_fds(
    sock: std::os::fd::RawFd,
    buf: &mut bytes::BytesMut,
    fds: &mut std::collections::VecDeque<std::os::fd::OwnedFd>,
) -> io::Result<usize> {
    use bytes::BufMut;
    use std::os::fd::FromRawFd;
    const MAX_FDS: usize = 16;
    // SAFETY: recvmsg(2) writes at most `spare.len()` bytes into the spare capacity, which we
    // then mark initialised; control messages are walked with the CMSG_* accessors and every
    // received descriptor is wrapped in an OwnedFd exactly once.
    unsafe {
        let spare = buf.chunk_mut();
        let mut iov = libc::iovec { iov_base: spare.as_mut_ptr() as *mut libc::c_void, iov_len: spare.len() };
        let space = libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<libc::c_int>()) as u32) as usize;
        let mut cbuf = vec![0u64; space.div_ceil(8)];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const libc::c_int;
                let bytes = (*c).cmsg_len as usize - (data as usize - c as usize);
                for i in 0..bytes / std::mem::size_of::<libc::c_int>() {
                    fds.push_back(std::os::fd::OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "too many descriptors in one message"));
        }
        buf.advance_mut(n as usize);
        Ok(n as usize)
    }
}

trait Socketish: AsFd {
    async fn writable(&self) -> io::Result<()>;
    fn try_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
}

impl Socketish for UnixIo {
    async fn writable(&self) -> io::Result<()> {
        UnixIo::writable(self).await
    }
    fn try_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        f()
    }
}

impl Socketish for TcpStream {
    async fn writable(&self) -> io::Result<()> {
        TcpStream::writable(self).await
    }
    fn try_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        TcpStream::try_io(self, Interest::WRITABLE, f)
    }
}

async fn sendfile_on<S: Socketish>(sock: &S, file: &std::fs::File, offset: u64, len: u64) -> io::Result<()> {
    let mut off = offset;
    let end = offset + len;
    while off < end {
        let want = ((end - off) as usize).min(1 << 30);
        // The kernel advances `off` by the bytes sent.
        match sock.try_io(|| Ok(rustix::fs::sendfile(sock.as_fd(), file, Some(&mut off), want)?)) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "object file shorter than its recorded size"));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => sock.writable().await?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A memory file of `len` bytes for a client's upload slot ([`crate::frame::flag::BODY_FD`]),
/// sealed so that its size never changes: a server that maps it can never fault on it.
pub fn slot_file(len: usize) -> io::Result<std::fs::File> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create(c"s3hpc-upload", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    let f = std::fs::File::from(fd);
    f.set_len(len as u64)?;
    let seals = SealFlags::from_bits_retain(crate::frame::SLOT_SEALS as u32) | SealFlags::SEAL;
    rustix::fs::fcntl_add_seals(&f, seals)?;
    Ok(f)
}

/// A shared mapping of a whole memory file: read-write in the client that fills an upload slot,
/// read-only in the server that takes bodies from it. Unmapped on drop.
pub struct SlotMap {
    ptr: *mut u8,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain memory that lives as long as `self`; writes go through `&mut self`.
unsafe impl Send for SlotMap {}
// SAFETY: `&SlotMap` only reads the mapping (`as_ref`); writing needs `&mut self` (`bytes_mut`).
unsafe impl Sync for SlotMap {}

impl SlotMap {
    /// The client's view of a file made by [`slot_file`].
    pub fn writable(file: &std::fs::File) -> io::Result<SlotMap> {
        // Populated: the client's own pages, allocated once per slot rather than on first use.
        Self::map(file, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_POPULATE)
    }

    /// The server's view of a client's slot file. Refused unless the file is sealed against
    /// shrinking and growing ([`crate::frame::SLOT_SEALS`], which only memory files allow) and
    /// is 1 byte to [`crate::frame::FD_BODY_MAX`] long: then its size is fixed and reading the
    /// mapping cannot fault, whatever the client does.
    pub fn read_only(file: &std::fs::File) -> io::Result<SlotMap> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let need = rustix::fs::SealFlags::from_bits_retain(crate::frame::SLOT_SEALS as u32);
        if !rustix::fs::fcntl_get_seals(file).is_ok_and(|seals| seals.contains(need)) {
            return Err(invalid("the slot descriptor is not a memory file sealed against resizing".into()));
        }
        let size = file.metadata()?.len();
        if size == 0 || size > crate::frame::FD_BODY_MAX {
            return Err(invalid(format!("a slot file of {size} bytes (1 to {} allowed)", crate::frame::FD_BODY_MAX)));
        }
        // Not populated: a client could attach a large file it never wrote, and reading its holes
        // would allocate pages here; pages are mapped as bodies are read, once per slot.
        Self::map(file, libc::PROT_READ, 0)
    }

    fn map(file: &std::fs::File, prot: libc::c_int, flags: libc::c_int) -> io::Result<SlotMap> {
        let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
        // SAFETY: a fresh shared mapping of the whole file, whose size is sealed (checked by
        // the callers: `slot_file` made it, or `read_only` verified the seals); unmapped once, in
        // `drop`.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED | flags, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SlotMap { ptr: ptr as *mut u8, len, writable: prot & libc::PROT_WRITE != 0 })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copy `data` to the start of a [`writable`](Self::writable) mapping.
    pub fn fill(&mut self, data: &[u8]) {
        assert!(data.len() <= self.len, "slot too small");
        self.bytes_mut()[..data.len()].copy_from_slice(data);
    }

    /// The whole of a [`writable`](Self::writable) mapping.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        assert!(self.writable, "a read-only slot mapping cannot be written");
        // SAFETY: `ptr` maps `len` writable bytes for the life of `self` (checked above), which
        // no other reference of this process aliases while `&mut self` is held.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl AsRef<[u8]> for SlotMap {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for the life of `self`, and the file's size is
        // sealed, so reading never faults. Another process (the client) may write to the file
        // meanwhile; only a client that breaks the protocol does, and then only the content of
        // its own upload is unspecified: nothing here derives a length or an index from it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for SlotMap {
    fn drop(&mut self) {
        // SAFETY: unmaps the region mapped in `map`, once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Domain-separation label of the handshake proof.
pub const AUTH_LABEL: &[u8] = b"s3hpc-wire-auth-v1";

/// The handshake proof: HMAC-SHA256(secret, label || server nonce || access key).
pub fn auth_proof(secret: &str, nonce: &[u8; 32], access_key: &str) -> [u8; 32] {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(AUTH_LABEL);
    mac.update(nonce);
    mac.update(access_key.as_bytes());
    mac.finalize().into_bytes().into()
}

/// Constant-time check of a proof.
pub fn verify_proof(secret: &str, nonce: &[u8; 32], access_key: &str, proof: &[u8]) -> bool {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(AUTH_LABEL);
    mac.update(nonce);
    mac.update(access_key.as_bytes());
    mac.verify_slice(proof).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// A Unix socket pair: our halves on `a`, and the peer's end `b` as a tokio stream.
    fn pair(sndbuf: usize) -> (ReadHalf, WriteHalf, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        set_sndbuf(&a, sndbuf);
        let (r, w) = Stream::Unix(a).split().unwrap();
        (r, w, b)
    }

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    /// Writes that fill the socket wait for space (through the write-only registration) and
    /// resume when a slow reader drains it; every byte arrives in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_to_a_full_unix_socket_wait_for_space() {
        let (_r, mut w, mut peer) = pair(16 << 10);
        let a = pattern(3 << 20, 1);
        let b = pattern(5 << 20, 2);
        let expect: Vec<u8> = [&a[..1000], &a[1000..], &b[..]].concat();
        let reader = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut got = Vec::new();
            let mut buf = vec![0u8; 7000];
            loop {
                let n = peer.read(&mut buf).await.unwrap();
                if n == 0 {
                    return got;
                }
                got.extend_from_slice(&buf[..n]);
                if got.len() % 5 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        });
        let writes = async {
            w.write_all(&a[..1000]).await?;
            w.write_all_vectored(&mut [Bytes::copy_from_slice(&a[1000..]), Bytes::from(b)]).await
        };
        tokio::time::timeout(Duration::from_secs(20), writes).await.expect("a write never saw space").unwrap();
        drop(w); // shuts the write direction down: the reader sees the end
        let got = tokio::time::timeout(Duration::from_secs(20), reader).await.unwrap().unwrap();
        assert!(got == expect, "{} bytes arrived, {} sent", got.len(), expect.len());
    }

    /// `sendfile` into a full Unix socket waits for space the same way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sendfile_into_a_full_unix_socket_waits_for_space() {
        let (_r, w, mut peer) = pair(16 << 10);
        let data = pattern(4 << 20, 3);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&data).unwrap();
        let reader = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut got = Vec::new();
            peer.read_to_end(&mut got).await.unwrap();
            got
        });
        let send = w.sendfile(&f, 1000, (data.len() - 1000) as u64);
        tokio::time::timeout(Duration::from_secs(20), send).await.expect("sendfile never saw space").unwrap();
        drop(w);
        let got = tokio::time::timeout(Duration::from_secs(20), reader).await.unwrap().unwrap();
        assert!(got[..] == data[1000..], "{} bytes arrived", got.len());
    }

    /// Reads wait for data that arrives later, see the end of the stream, and pick up passed
    /// descriptors; the peer's reads do not depend on our write registration.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_wait_for_late_data_and_descriptors() {
        let (mut r, w, peer) = pair(1 << 20);
        let peer = peer.into_std().unwrap();
        let f = tempfile::tempfile().unwrap();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            sendmsg_fd(&peer, b"hello", &f).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            (&peer).write_all(b" world").unwrap();
            drop(peer);
        });
        let mut buf = bytes::BytesMut::new();
        let mut fds = std::collections::VecDeque::new();
        while buf.len() < 11 {
            let n = r.read_with_fds(&mut buf, &mut fds).await.unwrap();
            assert!(n > 0, "early end after {:?}", buf);
        }
        assert_eq!(&buf[..], b"hello world");
        assert_eq!(fds.len(), 1, "the passed descriptor arrives with the first byte");
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        sender.join().unwrap();
        drop(w);
    }
}
