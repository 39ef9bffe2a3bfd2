//! Where requests go: chosen once per process by `S3HPC_TARGET`, plus the runtimes that drive
//! the stores.
//!
//! - `file:///path`: embedded, the posix backend on `path`, in this process, with its uid.
//! - `memory://`: embedded, an in-process memory store (tests).
//! - `noop://`: embedded, a store that keeps nothing (measures the library's own cost).
//! - `unix:///path.sock`, `tcp://host:port`: the node-local gateway (binary protocol); one
//!   client per access key.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use s3hpc_core::{DynStore, Error};

/// The parsed `S3HPC_TARGET`.
pub enum Target {
    /// One store for the whole process.
    Embedded(DynStore),
    /// A gateway URL; clients are made per credentials.
    Remote(String),
}

static TARGET: OnceLock<Result<Target, String>> = OnceLock::new();
static WARNED: std::sync::Once = std::sync::Once::new();

fn parse_target() -> Result<Target, String> {
    let spec = std::env::var("S3HPC_TARGET").map_err(|_| {
        "S3HPC_TARGET is not set: set it to file:///path (embedded), unix:///path.sock or tcp://host:port \
         (node-local gateway); s3hpc's libs3 does not speak HTTP"
            .to_string()
    })?;
    open_target(&spec)
}

/// Open a target from its URL (also used by tests that do not go through the environment).
pub fn open_target(spec: &str) -> Result<Target, String> {
    if spec == "memory://" || spec == "memory:" {
        return Ok(Target::Embedded(Arc::new(s3hpc_core::memory::MemoryStore::new())));
    }
    if let Some(rest) = spec.strip_prefix("noop://") {
        let size = rest.parse().unwrap_or(0);
        return Ok(Target::Embedded(Arc::new(s3hpc_core::noop::NoopStore::new(size))));
    }
    if let Some(path) = spec.strip_prefix("file://") {
        return crate::backends::open_posix(path).map(Target::Embedded);
    }
    if ["unix://", "tcp://", "tls://"].iter().any(|p| spec.starts_with(p)) {
        crate::backends::check_remote(spec)?;
        return Ok(Target::Remote(spec.to_string()));
    }
    Err(format!(
        "S3HPC_TARGET={spec:?} is not understood (file:///path, memory://, unix:///path.sock, tcp://host:port, tls://host:port)"
    ))
}

/// The process's target, opened on first use; `Err` carries the reason, printed once to stderr.
pub fn target() -> Result<&'static Target, Error> {
    match TARGET.get_or_init(parse_target) {
        Ok(t) => Ok(t),
        Err(msg) => {
            WARNED.call_once(|| eprintln!("s3hpc libs3: {msg}"));
            Err(Error::internal(msg.clone()))
        }
    }
}

pub fn is_remote() -> bool {
    matches!(TARGET.get(), Some(Ok(Target::Remote(_))))
}

pub fn is_embedded() -> bool {
    matches!(TARGET.get(), Some(Ok(Target::Embedded(_))))
}

type ClientKey = (String, String, String);
static CLIENTS: OnceLock<Mutex<HashMap<ClientKey, DynStore>>> = OnceLock::new();

/// The store to use for a request made with these credentials.
pub fn store_for(access_key: &str, secret_key: &str) -> Result<DynStore, Error> {
    match target()? {
        Target::Embedded(s) => Ok(s.clone()),
        Target::Remote(url) => {
            let key = (url.clone(), access_key.to_string(), secret_key.to_string());
            let map = CLIENTS.get_or_init(Default::default);
            if let Some(s) = map.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
                return Ok(s.clone());
            }
            let client = crate::backends::connect_remote(url, access_key, secret_key)?;
            map.lock().unwrap_or_else(|p| p.into_inner()).insert(key, client.clone());
            Ok(client)
        }
    }
}

// ---------------------------------------------------------------- runtimes

static SHARED: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The process-wide multi-thread runtime (remote clients, streamed uploads).
pub fn shared() -> &'static tokio::runtime::Runtime {
    SHARED.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("s3hpc-libs3")
            .enable_all()
            .build()
            .expect("s3hpc libs3: cannot start the tokio runtime")
    })
}

thread_local! {
    static LOCAL: std::cell::RefCell<Option<tokio::runtime::Runtime>> = const { std::cell::RefCell::new(None) };
}

fn local_runtime_wanted() -> bool {
    static MODE: OnceLock<bool> = OnceLock::new();
    *MODE.get_or_init(|| std::env::var("S3HPC_RUNTIME").map(|v| v != "shared").unwrap_or(true))
}

fn local_runtime_drivers() -> bool {
    static DRIVERS: OnceLock<bool> = OnceLock::new();
    *DRIVERS.get_or_init(|| std::env::var("S3HPC_RUNTIME").is_ok_and(|v| v == "local-drivers"))
}

/// Run a future to completion on the calling thread. Embedded stores run on a per-thread
/// current-thread runtime (no cross-thread hop); remote clients on the shared runtime whose
/// workers drive their connections. Never called from inside a runtime by this library; if a
/// caller does that anyway, the future runs on a helper thread instead of panicking.
pub fn block_on<F: Future + Send>(f: F) -> F::Output
where
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|s| s.spawn(|| shared().block_on(f)).join().expect("s3hpc libs3: helper panicked"));
    }
    if is_embedded() && local_runtime_wanted() {
        let mut f = Some(f);
        let out = LOCAL
            .try_with(|cell| {
                let mut slot = cell.try_borrow_mut().ok()?;
                // No I/O or timer driver: embedded stores only hand work to the blocking pool, and
                // without a driver the runtime parks on a futex instead of epoll (cheaper wake-ups).
                let rt = slot.get_or_insert_with(|| {
                    let mut b = tokio::runtime::Builder::new_current_thread();
                    if local_runtime_drivers() {
                        b.enable_all();
                    }
                    b.build().expect("s3hpc libs3: cannot start a tokio runtime")
                });
                let mut f = std::pin::pin!(f.take().expect("future present"));
                // An Inline posix store finishes a request in its first poll: try that poll
                // without entering the scheduler (inside the runtime's context, so the future
                // may still spawn tasks or use the blocking pool); anything still pending is
                // then driven by the scheduler as before, which polls it again with its own
                // waker.
                {
                    let _ctx = rt.enter();
                    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                    if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                        return Some(v);
                    }
                }
                Some(rt.block_on(f))
            })
            .ok()
            .flatten();
        if let Some(out) = out {
            return out;
        }
        return shared().block_on(f.take().expect("future not yet run"));
    }
    shared().block_on(f)
}
