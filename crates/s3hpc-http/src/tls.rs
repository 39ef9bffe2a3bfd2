//! Native TLS for the gateway (rustls, TLS 1.2 and 1.3, the ring provider).
//!
//! [`TlsFiles`] holds the certificate chain and key loaded from PEM files; [`TlsFiles::reload`]
//! swaps them for new handshakes (connections already open keep theirs), which is what
//! `s3hpc serve` does on SIGHUP. [`TlsIo`] runs one connection's TLS over the engine's
//! non-blocking socket with rustls's buffer-level API, so the engine keeps its readiness-based
//! reads and writes, and file bodies are read on a blocking-pool thread and encrypted there.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};

use rustix::net::{RecvFlags, SendFlags, Shutdown};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The certificate and key files, and what was last loaded from them.
pub struct TlsFiles {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsFiles").field("cert", &self.cert).field("key", &self.key).finish()
    }
}

fn load(cert: &Path, key: &Path) -> io::Result<CertifiedKey> {
    let bad = |what: &Path, e: &dyn fmt::Display| {
        io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", what.display()))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(cert, &e))?;
    if chain.is_empty() {
        return Err(bad(cert, &"no certificate in the file"));
    }
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, &e))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&der).map_err(|e| bad(key, &e))?;
    let ck = CertifiedKey::new(chain, signer);
    ck.keys_match().map_err(|e| bad(key, &format!("does not match the certificate: {e}")))?;
    Ok(ck)
}

impl TlsFiles {
    /// Load `cert` (PEM chain, leaf first) and `key` (PEM, PKCS#8, PKCS#1 or SEC1).
    pub fn load(cert: &Path, key: &Path) -> io::Result<Arc<Self>> {
        let ck = load(cert, key)?;
        Ok(Arc::new(TlsFiles { cert: cert.into(), key: key.into(), current: RwLock::new(Arc::new(ck)) }))
    }

    /// Load the files again; on success new handshakes use the new certificate and key. On
    /// failure the old ones stay in use.
    pub fn reload(&self) -> io::Result<()> {
        let ck = load(&self.cert, &self.key)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(ck);
        Ok(())
    }

    /// The rustls server configuration (TLS 1.2 and 1.3, HTTP/1.1 by ALPN) over these files.
    pub fn server_config(self: &Arc<Self>) -> io::Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Resolver(self.clone())));
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }
}

#[derive(Debug)]
struct Resolver(Arc<TlsFiles>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.current.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// `io::Read`/`io::Write` over a non-blocking socket descriptor (WouldBlock when not ready).
struct Fd<'a>(BorrowedFd<'a>);

impl Read for Fd<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        Ok(rustix::net::recv(self.0, b, RecvFlags::empty())?.0)
    }
}

impl Write for Fd<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        Ok(rustix::net::send(self.0, b, SendFlags::NOSIGNAL)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One TLS connection over the engine's socket. Reads and writes of a connection never overlap
/// (one request at a time), so one mutex, never held across an await, is enough.
pub(crate) struct TlsIo {
    conn: Mutex<ServerConnection>,
    /// The connection's first bytes were looked at (plain HTTP on the TLS port, see
    /// [`plain_http_refused`]).
    first_checked: std::sync::atomic::AtomicBool,
}

/// The answer a client that speaks plain HTTP to the TLS port gets instead of a bare close: a
/// 400 with an S3 error document saying so (as AWS's endpoints and nginx answer plain HTTP on
/// their HTTPS ports with a 400).
pub(crate) const PLAIN_HTTP_ANSWER: &str = "This port serves HTTPS (TLS): the request was sent as plain HTTP. \
     Use an https:// endpoint.";

fn plain_http_response() -> String {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>BadRequest</Code><Message>{PLAIN_HTTP_ANSWER}</Message></Error>"
    );
    format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Whether the first bytes of a connection are a plain HTTP request line (a TLS record starts
/// with a byte below 0x20): an upper-case method and a space.
fn looks_like_http(b: &[u8]) -> bool {
    let n = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    (3..=7).contains(&n) && b.get(n) == Some(&b' ')
}

/// On a connection's first bytes: if they are plain HTTP, answer [`plain_http_response`]
/// (the request head that arrived is read and dropped, then the write side shut, so the client
/// reads the answer rather than a reset) and return `true`. `Err(WouldBlock)`: nothing yet.
fn plain_http_refused(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut b = [0u8; 8];
    let (n, _) = rustix::net::recv(fd, &mut b, RecvFlags::PEEK)?;
    // EOF, a TLS record (its first byte is below 0x20) or anything else goes on to rustls.
    if !looks_like_http(&b[..n]) {
        return Ok(false);
    }
    let mut sink = [0u8; 16384];
    for _ in 0..4 {
        // the bytes are dropped
        if !matches!(rustix::net::recv(fd, &mut sink, RecvFlags::DONTWAIT), Ok((1.., _))) {
            break;
        }
    }
    let _ = Fd(fd).write_all(plain_http_response().as_bytes());
    let _ = rustix::net::shutdown(fd, Shutdown::Write);
    Ok(true)
}

/// What a TLS operation needs from the socket before it can go on.
enum Need {
    Read,
    Write,
}

impl TlsIo {
    pub(crate) fn new(cfg: &Arc<rustls::ServerConfig>) -> io::Result<Self> {
        Ok(TlsIo {
            conn: Mutex::new(ServerConnection::new(cfg.clone()).map_err(io::Error::other)?),
            first_checked: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ServerConnection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send what rustls has queued; `Err(WouldBlock)` when the socket is full.
    fn flush_tls(c: &mut ServerConnection, fd: BorrowedFd<'_>) -> io::Result<()> {
        while c.wants_write() {
            c.write_tls(&mut Fd(fd))?;
        }
        Ok(())
    }

    /// [`Self::flush_tls`] through Tokio, so that a full socket clears Tokio's write readiness
    /// (else `writable()` would return at once and the task would spin).
    fn flush_tls_async(c: &mut ServerConnection, tcp: &TcpStream) -> io::Result<()> {
        let fd = tcp.as_fd();
        tcp.try_io(Interest::WRITABLE, || Self::flush_tls(c, fd))
    }

    /// Decrypted bytes into `buf` (at most `want` more); 0 at EOF (close_notify or TCP EOF).
    #[allow(unsafe_code)] // rustls reads into the buffer's spare capacity (no zeroing per read)
    pub(crate) async fn read(&self, tcp: &TcpStream, buf: &mut bytes::BytesMut, want: usize) -> io::Result<usize> {
        if buf.capacity() - buf.len() < want {
            buf.reserve(want);
        }
        let fd = tcp.as_fd();
        loop {
            let need = {
                let mut c = self.lock();
                let spare = buf.spare_capacity_mut();
                // SAFETY: rustls only writes into the slice; the bytes it reports are initialised.
                let spare = unsafe { &mut *(spare as *mut [std::mem::MaybeUninit<u8>] as *mut [u8]) };
                match c.reader().read(spare) {
                    Ok(n) => {
                        // SAFETY: `n` bytes of the spare capacity were just written.
                        unsafe { buf.set_len(buf.len() + n) };
                        return Ok(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(e) => return Err(e),
                }
                match Self::flush_tls_async(&mut c, tcp) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if c.wants_write() {
                    Need::Write
                } else if !self.first_checked.load(std::sync::atomic::Ordering::Relaxed) {
                    match tcp.try_io(Interest::READABLE, || plain_http_refused(fd)) {
                        Ok(true) => {
                            return Err(io::Error::new(io::ErrorKind::InvalidData, "plain HTTP on the TLS port"));
                        }
                        Ok(false) => {
                            self.first_checked.store(true, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Need::Read,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                } else {
                    // Through Tokio, so that an empty socket clears its read readiness.
                    match tcp.try_io(Interest::READABLE, || c.read_tls(&mut Fd(fd))) {
                        Ok(0) => return Ok(0),
                        Ok(_) => {
                            if let Err(e) = c.process_new_packets() {
                                // Tell the peer why (an alert), then fail.
                                let _ = Self::flush_tls(&mut c, fd);
                                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                            }
                            continue;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Need::Read,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                }
            };
            match need {
                Need::Read => tcp.readable().await?,
                Need::Write => tcp.writable().await?,
            }
        }
    }

    /// Whether decrypted bytes are waiting (then the socket need not be readable for a read).
    pub(crate) fn has_plaintext(&self) -> bool {
        let mut c = self.lock();
        c.process_new_packets().is_ok_and(|s| s.plaintext_bytes_to_read() > 0)
    }

    /// Encrypt and send all of `bufs`; a client that takes nothing for `idle` is given up.
    pub(crate) async fn write_all(&self, tcp: &TcpStream, bufs: &[&[u8]], idle: Duration) -> io::Result<()> {
        let (mut i, mut off) = (0usize, 0usize);
        loop {
            {
                let mut c = self.lock();
                while i < bufs.len() {
                    let n = c.writer().write(&bufs[i][off..])?;
                    off += n;
                    if off == bufs[i].len() {
                        i += 1;
                        off = 0;
                    } else if n == 0 {
                        break; // rustls's buffer is full: send first
                    }
                }
                match Self::flush_tls_async(&mut c, tcp) {
                    Ok(()) if i == bufs.len() => return Ok(()),
                    Ok(()) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            match tokio::time::timeout(idle, tcp.writable()).await {
                Ok(r) => r?,
                Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading the response")),
            }
        }
    }

    /// Blocking (on a blocking-pool thread): encrypt and send `b`, waiting with poll(2).
    pub(crate) fn write_all_blocking(&self, fd: BorrowedFd<'_>, mut b: &[u8], idle: Duration) -> io::Result<()> {
        loop {
            {
                let mut c = self.lock();
                while !b.is_empty() {
                    let n = c.writer().write(b)?;
                    if n == 0 {
                        break;
                    }
                    b = &b[n..];
                }
                match Self::flush_tls(&mut c, fd) {
                    Ok(()) if b.is_empty() => return Ok(()),
                    Ok(()) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            crate::conn::wait_writable(fd, idle)?;
        }
    }

    /// Queue close_notify and send what can be sent without waiting.
    pub(crate) fn close_notify(&self, fd: BorrowedFd<'_>) {
        let mut c = self.lock();
        c.send_close_notify();
        let _ = Self::flush_tls(&mut c, fd);
    }
}
