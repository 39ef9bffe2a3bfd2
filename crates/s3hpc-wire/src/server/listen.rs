//! Listening: binding the endpoints, the accept loop, the connections' own threads
//! ([`ServerOptions::dedicated_threads`]), shutdown.

use super::*;

pub(super) enum Listener {
    Unix(UnixListener, std::path::PathBuf),
    Tcp(TcpListener),
    Tls(TcpListener),
}

/// A connection as accepted: ready to serve, or a TCP connection of a `tls://` listener whose
/// handshake runs on the connection's own task (a slow client must not hold up `accept`).
pub(super) enum Accepted {
    Ready(Stream),
    Tls(TcpStream),
}

/// A bound, not yet running server (bind first to learn the address of port 0).
pub struct WireServer {
    pub(super) listener: Listener,
    pub(super) url: String,
    pub(super) store: DynStore,
    pub(super) creds: Arc<CredentialSet>,
    pub(super) opts: Arc<ServerOptions>,
}

/// Bind a listener: `unix:///path` (a stale socket file at the path is replaced) or
/// `tcp://host:port` (port 0 picks a free port; see [`WireServer::url`]).
pub async fn bind(
    listen: &str,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: ServerOptions,
) -> io::Result<WireServer> {
    let (listener, url) = match Endpoint::parse(listen)? {
        Endpoint::Unix(path) => {
            if let Ok(md) = std::fs::symlink_metadata(&path) {
                use std::os::unix::fs::FileTypeExt;
                if md.file_type().is_socket() {
                    std::fs::remove_file(&path)?;
                }
            }
            let l = UnixListener::bind(&path)?;
            (Listener::Unix(l, path.clone()), format!("unix://{}", path.display()))
        }
        Endpoint::Tcp(addr) => {
            let l = TcpListener::bind(&addr).await?;
            let url = format!("tcp://{}", l.local_addr()?);
            (Listener::Tcp(l), url)
        }
        Endpoint::Tls(addr) => {
            if opts.tls.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("tls://{addr} needs a certificate and key (--tls-cert, --tls-key)"),
                ));
            }
            let l = TcpListener::bind(&addr).await?;
            let url = format!("tls://{}", l.local_addr()?);
            (Listener::Tls(l), url)
        }
    };
    Ok(WireServer { listener, url, store, creds, opts: Arc::new(opts) })
}

/// Serve until `shutdown` resolves: bind `listen` (`unix:///path` or `tcp://127.0.0.1:PORT`) and
/// run. Open connections are closed at shutdown (uploads in progress publish nothing).
pub async fn serve(
    listen: &str,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: ServerOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    bind(listen, store, creds, opts).await?.run(shutdown).await
}

impl WireServer {
    /// The URL clients connect to (with the real port when bound to port 0).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Accept connections until `shutdown` resolves.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> io::Result<()> {
        let WireServer { listener, url, store, creds, opts } = self;
        tracing::info!(%url, "binary protocol server listening");
        let mut conns = JoinSet::new();
        // Connections on threads of their own: each ends when told to stop, and `threads` sees
        // them go (a waiter per thread, woken when the thread drops its sender).
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut threads = JoinSet::new();
        // Threads serving now: a thread counts itself out as its connection ends, before it
        // exits, so a connection accepted after that takes the free thread even when `threads`
        // has not reaped the finished one yet (`tests/threads.rs` saw the thread gone and the
        // next connection still on the shared runtime).
        let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => continue,
                Some(_) = threads.join_next(), if !threads.is_empty() => continue,
                a = accept(&listener) => a,
            };
            let accepted = match accepted {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let (store, creds, opts) = (store.clone(), creds.clone(), opts.clone());
            if live.load(std::sync::atomic::Ordering::Acquire) < opts.dedicated_threads {
                let (gone, waiter) = tokio::sync::oneshot::channel::<()>();
                let mut stopped = stopped.clone();
                live.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                let counted = LiveThread(live.clone());
                let serve = move || {
                    let _gone = gone;
                    let _counted = counted;
                    // The runtime's own blocking pool serves this connection's other requests
                    // (a streamed PUT's writer, listings); bounded well below Tokio's 512 per
                    // runtime, since there may be many such runtimes. Beyond it they queue.
                    let built = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .max_blocking_threads(CONN_BLOCKING_THREADS)
                        .build();
                    let rt = match built {
                        Ok(rt) => rt,
                        Err(e) => return tracing::warn!(error = %e, "cannot start a connection's runtime"),
                    };
                    rt.block_on(async move {
                        tokio::select! {
                            r = serve_accepted(accepted, store, creds, opts, true) => {
                                if let Err(e) = r {
                                    tracing::warn!(error = %e, "binary protocol connection closed with an error");
                                }
                            }
                            // Shutdown: dropping the connection tears it down, as for the
                            // shared runtime's tasks below.
                            _ = stopped.wait_for(|s| *s) => {}
                        }
                    });
                };
                match std::thread::Builder::new().name("s3hpc-wire-conn".into()).spawn(serve) {
                    Ok(thread) => {
                        threads.spawn(async move {
                            let _ = waiter.await;
                            // The sender drops just before the thread returns: join it, so a
                            // shutdown that waited for `threads` returns with the thread gone.
                            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
                        });
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot start a connection's thread; connection dropped"),
                }
                continue;
            }
            conns.spawn(async move {
                if let Err(e) = serve_accepted(accepted, store, creds, opts, false).await {
                    tracing::warn!(error = %e, "binary protocol connection closed with an error");
                }
            });
        }
        let _ = stop.send(true);
        conns.shutdown().await;
        while threads.join_next().await.is_some() {}
        if let Listener::Unix(_, path) = &listener {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    /// Run on a background task; the handle stops it.
    pub fn spawn(self) -> ServerHandle {
        let url = self.url.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(self.run(async move {
            let _ = rx.await;
        }));
        ServerHandle { url, stop: Some(tx), task }
    }
}

/// A server running in the background.
pub struct ServerHandle {
    pub url: String,
    pub(super) stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) task: tokio::task::JoinHandle<io::Result<()>>,
}

impl ServerHandle {
    /// Stop accepting, close every connection, and wait.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        (&mut self.task).await.map_err(io::Error::other)?
    }
}

pub(super) async fn accept(l: &Listener) -> io::Result<Accepted> {
    match l {
        Listener::Unix(l, _) => {
            let s = l.accept().await?.0;
            crate::sys::tune_unix(&s);
            Ok(Accepted::Ready(Stream::Unix(s)))
        }
        Listener::Tcp(l) => {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            Ok(Accepted::Ready(Stream::Tcp(s)))
        }
        Listener::Tls(l) => {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            Ok(Accepted::Tls(s))
        }
    }
}

/// Finish a `tls://` connection's handshake, then serve it.
pub(super) async fn serve_accepted(
    accepted: Accepted,
    store: DynStore,
    creds: Arc<CredentialSet>,
    opts: Arc<ServerOptions>,
    dedicated: bool,
) -> io::Result<()> {
    let stream = match accepted {
        Accepted::Ready(s) => s,
        Accepted::Tls(tcp) => {
            let cfg =
                opts.tls.clone().ok_or_else(|| io::Error::other("tls:// listener without a TLS configuration"))?;
            Stream::Tls(crate::tls::accept(tcp, cfg, opts.handshake_timeout).await?)
        }
    };
    handle_connection(stream, store, creds, opts, dedicated).await
}

/// One connection thread counted in `live` (see `WireServer::run`) until dropped: at the end of
/// the thread's work, or with the closure when the thread could not be started.
struct LiveThread(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for LiveThread {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}
