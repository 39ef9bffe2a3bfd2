//! File bodies on a blocking-pool thread: `sendfile(2)` (pread/send where the file system cannot),
//! TLS by pieces, poll(2) for `POLLOUT` on `EAGAIN`.

use super::*;

/// Largest `sendfile` call (Linux moves at most 0x7ffff000 bytes per call). Unit tests use a
/// small one so that a few MiB take many calls.
pub(super) const SENDFILE_MAX: u64 = if cfg!(test) { 64 * 1024 } else { 1 << 30 };

/// Wait (blocking) until `fd` is writable, for at most `idle`.
pub(crate) fn wait_writable(fd: BorrowedFd<'_>, idle: Duration) -> io::Result<()> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let ms = idle.as_millis().min(i32::MAX as u128) as i64;
    let timeout = Timespec { tv_sec: ms / 1000, tv_nsec: ms % 1000 * 1_000_000 };
    loop {
        let mut p = [PollFd::from_borrowed_fd(fd, PollFlags::OUT)];
        let r = match rustix::event::poll(&mut p, Some(&timeout)) {
            Ok(r) => r,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if r == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading the response"));
        }
        if p[0].revents().contains(PollFlags::OUT) {
            return Ok(());
        }
        return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection closed"));
    }
}

/// Send `head` and then `len` bytes of `file` from `offset` on the non-blocking socket `fd`,
/// blocking this (blocking-pool) thread: `sendfile(2)` until done, poll(2) on `EAGAIN`. Falls
/// back to pread/send where the file system cannot sendfile.
pub(crate) fn send_file(
    fd: BorrowedFd<'_>,
    head: &[u8],
    file: &File,
    offset: u64,
    len: u64,
    idle: Duration,
) -> io::Result<()> {
    send_bytes(fd, head, SendFlags::MORE, idle)?;
    let end = offset.checked_add(len).ok_or_else(|| invalid("file range overflows"))?;
    let mut off = offset;
    while off < end {
        let want = (end - off).min(SENDFILE_MAX) as usize;
        match rustix::fs::sendfile(fd, file, Some(&mut off), want) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shorter than the response")),
            Ok(_) => {}
            Err(e) => {
                let e = io::Error::from(e);
                match e.kind() {
                    io::ErrorKind::WouldBlock => wait_writable(fd, idle)?,
                    io::ErrorKind::Interrupted => {}
                    _ if (e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOSYS))
                        && off == offset =>
                    {
                        return send_file_copy(fd, file, offset, len, idle);
                    }
                    _ => return Err(e),
                }
            }
        }
    }
    Ok(())
}

/// [`send_file`] under TLS: the file is read in pieces on this (blocking-pool) thread and each
/// piece encrypted and sent.
pub(super) fn send_file_tls(
    t: &crate::tls::TlsIo,
    fd: BorrowedFd<'_>,
    head: &[u8],
    file: &File,
    offset: u64,
    len: u64,
    idle: Duration,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    t.write_all_blocking(fd, head, idle)?;
    let mut buf = vec![0u8; (len.min(256 * 1024)) as usize];
    let mut pos = offset;
    let end = offset.checked_add(len).ok_or_else(|| invalid("file range overflows"))?;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..want], pos).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(e.kind(), "file shorter than the response"),
            _ => e,
        })?;
        t.write_all_blocking(fd, &buf[..want], idle)?;
        pos += want as u64;
    }
    Ok(())
}

pub(super) fn send_file_copy(fd: BorrowedFd<'_>, file: &File, offset: u64, len: u64, idle: Duration) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; (len.min(256 * 1024)) as usize];
    let mut pos = offset;
    let end = offset + len;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..want], pos)?;
        send_bytes(fd, &buf[..want], SendFlags::empty(), idle)?;
        pos += want as u64;
    }
    Ok(())
}

pub(super) fn send_bytes(fd: BorrowedFd<'_>, mut b: &[u8], flags: SendFlags, idle: Duration) -> io::Result<()> {
    while !b.is_empty() {
        match rustix::net::send(fd, b, flags | SendFlags::NOSIGNAL) {
            Ok(n) => b = &b[n..],
            Err(e) => {
                let e = io::Error::from(e);
                match e.kind() {
                    io::ErrorKind::WouldBlock => wait_writable(fd, idle)?,
                    io::ErrorKind::Interrupted => {}
                    _ => return Err(e),
                }
            }
        }
    }
    Ok(())
}
