//! Operations side of `s3hpc serve`: the admin listener (`/metrics`, `/health/live`,
//! `/health/ready`, and the signed admin API under `/admin/v1/`, crate::adminapi), log set-up
//! (`--log-format`), and the file-descriptor limit.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The operations flags of `serve` (flattened into `ServeArgs`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OpsArgs {
    /// Serve Prometheus metrics (`/metrics`) and health checks (`/health/live`,
    /// `/health/ready`) over plain HTTP on this address (off by default; keep it private).
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// Log format on stderr: `text` (one line per event) or `json` (one object per line).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// What to log: a tracing filter such as `info` or `warn,s3hpc::access=info` (also
    /// RUST_LOG). Default: warnings, the lifecycle runner's line per run and, with
    /// --access-log, the access log. In the --config file's `[serve]` table (and not on the
    /// command line or in RUST_LOG) it is applied again on SIGHUP.
    #[arg(long, value_name = "FILTER", env = "RUST_LOG")]
    pub log_level: Option<String>,
    /// Serve HTTPS: the certificate chain (PEM, leaf first), with --tls-key. Reloaded on SIGHUP
    /// for new connections (open ones keep theirs).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Seconds between walks over every bucket that count objects and bytes per bucket and
    /// per account (the admin API's and the console's usage; the first walk runs at start).
    /// 0: no walks. Only with --admin-listen or --console-listen.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub usage_interval: u64,
    /// Listing pages (of 1,000 keys) per second at most of the usage walk.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub usage_ops: u32,
}

type FilterHandle = tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>;

/// The installed filter, changed by [`set_log_level`].
static LOG_FILTER: std::sync::OnceLock<FilterHandle> = std::sync::OnceLock::new();

/// Install the tracing subscriber: `level` (--log-level or RUST_LOG), else `warn` plus the
/// lifecycle runner's line per run (`s3hpc::lifecycle=info`) and, with the access log,
/// `s3hpc::access=info`; text or JSON lines on stderr. A `level` that does not parse is
/// reported and the default used.
pub fn init_logging(format: &str, access_log: bool, level: Option<&str>) {
    use tracing_subscriber::prelude::*;
    let default =
        if access_log { "warn,s3hpc::lifecycle=info,s3hpc::access=info" } else { "warn,s3hpc::lifecycle=info" };
    let mut bad = None;
    let filter = match level.map(tracing_subscriber::EnvFilter::try_new) {
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            bad = Some(e);
            tracing_subscriber::EnvFilter::new(default)
        }
        None => tracing_subscriber::EnvFilter::new(default),
    };
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    // Colours (the field names' escapes) only on a terminal: a file or the journal gets plain text.
    let fmt =
        tracing_subscriber::fmt::layer().with_writer(io::stderr).with_ansi(io::IsTerminal::is_terminal(&io::stderr()));
    // Both formats add the id of the request being handled (crate::logfmt).
    let r = if format == "json" {
        let json = crate::logfmt::JsonLine(tracing_subscriber::fmt::format().json().flatten_event(true));
        tracing_subscriber::registry().with(filter).with(fmt.json().event_format(json)).try_init()
    } else {
        tracing_subscriber::registry().with(filter).with(fmt.event_format(crate::logfmt::Text)).try_init()
    };
    if r.is_ok() {
        let _ = LOG_FILTER.set(handle);
    }
    if let Some(e) = bad {
        tracing::error!("--log-level {:?} is not a tracing filter ({e}); using {default:?}", level.unwrap_or(""));
    }
}

/// Replace the log filter (SIGHUP with a changed `[serve] log-level`).
pub fn set_log_level(level: &str) -> Result<(), String> {
    let f = tracing_subscriber::EnvFilter::try_new(level).map_err(|e| e.to_string())?;
    let h = LOG_FILTER.get().ok_or("no log filter is installed")?;
    h.reload(f).map_err(|e| e.to_string())
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit: every connection is a descriptor, and the
/// default soft limit (often 1,024) is far below what a gateway needs. Returns (before, after);
/// `u64::MAX` stands for unlimited.
pub fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let lim = getrlimit(Resource::Nofile);
    let before = lim.current.unwrap_or(u64::MAX);
    let hard = lim.maximum.unwrap_or(u64::MAX);
    if before < hard {
        let mut want = lim;
        want.current = lim.maximum;
        setrlimit(Resource::Nofile, want)?;
    }
    Ok((before, before.max(hard)))
}

/// What `/health/ready` checks.
pub struct Readiness {
    /// A directory whose file system must be reachable and writable (posix backend): the probe
    /// creates, writes and removes a file under `ROOT/.s3hpc/`.
    pub root: Option<PathBuf>,
    pub timeout: Duration,
    probing: AtomicBool,
}

impl Readiness {
    pub fn new(root: Option<PathBuf>, timeout: Duration) -> Arc<Self> {
        Arc::new(Readiness { root, timeout, probing: AtomicBool::new(false) })
    }

    /// `Ok(())` when ready, else why not.
    async fn check(self: &Arc<Self>) -> Result<(), String> {
        let Some(root) = self.root.clone() else { return Ok(()) };
        // A probe stuck in the file system (a hung NFS server) is not started again.
        if self.probing.swap(true, Ordering::AcqRel) {
            return Err("the previous probe of the root has not returned yet".into());
        }
        let me = self.clone();
        let probe = tokio::task::spawn_blocking(move || {
            // The gateway's own work: whatever user this pool thread acted as last.
            let r = s3hpc_posix::ident::as_gateway(|| probe_root(&root)).and_then(|r| r);
            me.probing.store(false, Ordering::Release);
            r
        });
        match tokio::time::timeout(self.timeout, probe).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(format!("root not writable: {e}")),
            Ok(Err(e)) => Err(format!("probe failed: {e}")),
            Err(_) => Err(format!("root did not answer within {:?}", self.timeout)),
        }
    }
}

fn probe_root(root: &std::path::Path) -> io::Result<()> {
    use std::io::Write;
    // The root itself must exist (it is never re-created here); .s3hpc/ under it may be made.
    if !std::fs::metadata(root)?.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, "the root is not a directory"));
    }
    let dir = root.join(".s3hpc");
    match std::fs::create_dir(&dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let path = dir.join(format!(".ready.{}", std::process::id()));
    let mut f = std::fs::File::create(&path)?;
    let r = f.write_all(b"ok\n");
    drop(f);
    let removed = std::fs::remove_file(&path);
    r.and(removed)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WireOpCode {
    operation: &'static str,
    /// `OK`, or the S3 error code the request failed with.
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WireOp {
    operation: &'static str,
}

/// The binary protocol's requests (`--binary`), as the HTTP front end's are counted.
#[derive(Debug)]
pub struct WireMetrics {
    requests: Family<WireOpCode, Counter>,
    duration: Family<WireOp, Histogram, fn() -> Histogram>,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 19))
}

impl WireMetrics {
    fn new() -> Self {
        WireMetrics { requests: Family::default(), duration: Family::new_with_constructor(latency_histogram) }
    }

    fn register(&self, registry: &mut Registry) {
        registry.register(
            "binary_requests",
            "Binary-protocol requests answered, by operation and outcome (OK or the S3 error code)",
            self.requests.clone(),
        );
        registry.register_with_unit(
            "binary_request_duration",
            "Time the store took on a binary-protocol request (response bodies still streaming not counted)",
            Unit::Seconds,
            self.duration.clone(),
        );
    }
}

impl s3hpc_wire::Observer for WireMetrics {
    fn request(&self, operation: &'static str, error: Option<s3hpc_core::ErrorCode>, elapsed: Duration) {
        let code = error.map_or("OK", |c| c.as_str());
        self.requests.get_or_create(&WireOpCode { operation, code }).inc();
        self.duration.get_or_create(&WireOp { operation }).observe(elapsed.as_secs_f64());
    }
}

/// What the front ends record into.
#[derive(Clone)]
pub struct Metrics {
    pub http: Arc<s3hpc_http::HttpMetrics>,
    pub wire: Arc<WireMetrics>,
}

/// The admin endpoint's state.
pub struct Admin {
    registry: Registry,
    http: Arc<s3hpc_http::HttpMetrics>,
    ready: Arc<Readiness>,
    /// `identity_switches`, brought up to `s3hpc_posix::ident::switches()` at each scrape.
    switches: Counter,
    /// `multipart_uploads_in_progress`, counted at each scrape (posix backend only).
    uploads: Gauge,
    root: Option<PathBuf>,
    /// A count of the uploads is running (on a hung file system it may never return: scrapes
    /// then keep the last value instead of piling up blocked threads).
    counting: Arc<AtomicBool>,
    /// The admin API (`/admin/v1/...`), set once the store and accounts exist.
    api: std::sync::OnceLock<Arc<crate::adminapi::AdminApi>>,
}

impl Admin {
    /// A registry (prefix `s3hpc`) with the front ends' metrics in it.
    pub fn new(m: &Metrics, ready: Arc<Readiness>, root: Option<PathBuf>) -> Self {
        let mut registry = Registry::with_prefix("s3hpc");
        m.http.register(&mut registry);
        m.wire.register(&mut registry);
        let build = prometheus_client::metrics::family::Family::<
            Vec<(String, String)>,
            prometheus_client::metrics::gauge::Gauge,
        >::default();
        build.get_or_create(&vec![("version".to_string(), env!("CARGO_PKG_VERSION").to_string())]).set(1);
        registry.register("build_info", "The running s3hpc version", build);
        let switches = Counter::default();
        registry.register(
            "identity_switches",
            "File-system identity switches (--identity posix: a thread starting to act as another user)",
            switches.clone(),
        );
        let uploads = Gauge::default();
        if root.is_some() {
            registry.register(
                "multipart_uploads_in_progress",
                "Multipart uploads created and not yet completed or aborted, in every bucket of the root (all gateways)",
                uploads.clone(),
            );
        }
        Admin {
            registry,
            http: m.http.clone(),
            ready,
            switches,
            uploads,
            root,
            counting: Arc::default(),
            api: Default::default(),
        }
    }

    /// Serve the admin API from now on.
    pub fn set_api(&self, api: Arc<crate::adminapi::AdminApi>) {
        let _ = self.api.set(api);
    }

    /// The admin API, once set.
    pub fn api(&self) -> Option<&Arc<crate::adminapi::AdminApi>> {
        self.api.get()
    }

    /// Count the uploads in progress (a `readdir` per bucket, off the runtime, waited for at most
    /// 5 s; one count at a time).
    async fn count_uploads(&self) {
        let Some(root) = self.root.clone() else { return };
        if self.counting.swap(true, Ordering::AcqRel) {
            return;
        }
        let counting = self.counting.clone();
        let count = tokio::task::spawn_blocking(move || {
            let n = s3hpc_posix::ident::as_gateway(|| s3hpc_posix::uploads_in_progress(&root)).unwrap_or(0);
            counting.store(false, Ordering::Release);
            n
        });
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), count).await {
            self.uploads.set(n as i64);
        }
    }

    fn metrics_text(&self) -> String {
        self.http.refresh();
        self.switches.inner().fetch_max(s3hpc_posix::ident::switches(), Ordering::Relaxed);
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!("encoding metrics: {e}");
        }
        out
    }
}

/// Bind the admin listener.
pub async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| format!("--admin-listen {addr}"))
}

/// Serve the admin endpoint on `listener` until the process ends: one request per connection.
pub async fn run(listener: TcpListener, admin: Arc<Admin>) {
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                let admin = admin.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(30), serve_one(s, &admin)).await;
                });
            }
            Err(e) => {
                tracing::warn!("admin listener: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

async fn serve_one(mut s: TcpStream, admin: &Admin) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut tmp = [0u8; 4096];
    let (parts, body_at, length) = loop {
        let n = s.read(&mut tmp).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        let mut hs = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut hs);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(at)) => {
                let mut b = http::Request::builder().method(req.method.unwrap_or("")).uri(req.path.unwrap_or("/"));
                let mut length = 0usize;
                for h in req.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        length =
                            std::str::from_utf8(h.value).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(usize::MAX);
                    }
                    b = b.header(h.name, h.value);
                }
                match b.body(()) {
                    Ok(r) => break (r.into_parts().0, at, length),
                    Err(_) => return respond(&mut s, "400 Bad Request", "text/plain", "bad request\n", false).await,
                }
            }
            Ok(httparse::Status::Partial) if buf.len() < 16 * 1024 => {}
            _ => return respond(&mut s, "400 Bad Request", "text/plain", "bad request\n", false).await,
        }
    };
    let path = parts.uri.path().to_string();
    if path.starts_with("/admin/") {
        let Some(api) = admin.api() else {
            return respond(&mut s, "404 Not Found", "text/plain", "not found\n", false).await;
        };
        if length > crate::adminapi::MAX_BODY {
            return respond(&mut s, "413 Payload Too Large", "text/plain", "request body too large\n", false).await;
        }
        let mut body = buf.split_off(body_at);
        while body.len() < length {
            let n = s.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            body.extend_from_slice(&tmp[..n]);
        }
        body.truncate(length);
        let (status, ctype, text) = api.handle(&parts, &body).await;
        let status = format!(
            "{status} {}",
            http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("")
        );
        return respond(&mut s, &status, ctype, &text, false).await;
    }
    let head_only = parts.method == http::Method::HEAD;
    if parts.method != http::Method::GET && !head_only {
        return respond(&mut s, "405 Method Not Allowed", "text/plain", "GET only\n", head_only).await;
    }
    match path.as_str() {
        "/metrics" => {
            admin.count_uploads().await;
            let text = admin.metrics_text();
            respond(&mut s, "200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", &text, head_only)
                .await
        }
        "/health/live" => respond(&mut s, "200 OK", "text/plain", "live\n", head_only).await,
        "/health/ready" => match admin.ready.check().await {
            Ok(()) => respond(&mut s, "200 OK", "text/plain", "ready\n", head_only).await,
            Err(why) => {
                tracing::warn!("not ready: {why}");
                respond(&mut s, "503 Service Unavailable", "text/plain", &format!("not ready: {why}\n"), head_only)
                    .await
            }
        },
        _ => respond(&mut s, "404 Not Found", "text/plain", "not found\n", head_only).await,
    }
}

async fn respond(s: &mut TcpStream, status: &str, ctype: &str, body: &str, head_only: bool) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    if !head_only {
        s.write_all(body.as_bytes()).await?;
    }
    s.shutdown().await
}

/// Start the admin listener when `--admin-listen` is given: bind it, print its address, serve it
/// in the background, and return the metrics the HTTP front end records into. With `console`
/// (`--console-listen`) the metrics and health are kept even without the listener, for the
/// console's administrator page.
pub async fn start(
    ops: &OpsArgs,
    root: Option<PathBuf>,
    console: bool,
) -> anyhow::Result<Option<(Metrics, Arc<Admin>)>> {
    if ops.admin_listen.is_none() && !console {
        return Ok(None);
    }
    let metrics = Metrics { http: s3hpc_http::HttpMetrics::new(), wire: Arc::new(WireMetrics::new()) };
    let admin = Arc::new(Admin::new(&metrics, Readiness::new(root.clone(), Duration::from_secs(5)), root));
    if let Some(addr) = &ops.admin_listen {
        let listener = bind(addr).await?;
        println!(
            "s3hpc: admin on http://{} (/metrics, /health/live, /health/ready, /admin/v1/)",
            listener.local_addr()?
        );
        tokio::spawn(run(listener, admin.clone()));
    }
    Ok(Some((metrics, admin)))
}

/// The console's administrator page reads the same health check and metrics as the listener.
impl s3hpc_http::console::AdminView for Admin {
    fn health(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(self.ready.check())
    }

    fn metrics(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + Send + '_>> {
        Box::pin(async move {
            self.count_uploads().await;
            self.metrics_text()
        })
    }

    fn accounts(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<serde_json::Value, String>> + Send + '_>> {
        Box::pin(async move {
            match self.api() {
                Some(api) => api.accounts_json().await,
                None => Err("the admin API is not started yet".into()),
            }
        })
    }

    fn usage(&self) -> Option<serde_json::Value> {
        self.api().and_then(|a| a.usage_json())
    }
}

/// The TLS files of `--tls-cert` / `--tls-key`, loaded (both or neither).
pub fn tls_files(ops: &OpsArgs) -> anyhow::Result<Option<Arc<s3hpc_http::tls::TlsFiles>>> {
    match (&ops.tls_cert, &ops.tls_key) {
        (Some(c), Some(k)) => Ok(Some(s3hpc_http::tls::TlsFiles::load(c, k).context("loading the TLS certificate")?)),
        (None, None) => Ok(None),
        _ => anyhow::bail!("--tls-cert and --tls-key go together"),
    }
}

/// SIGHUP: load the TLS files again (new connections get them; open ones keep theirs). A
/// failure leaves the old certificate in use and says why in the log.
pub fn reload_tls(tls: Option<&s3hpc_http::tls::TlsFiles>) {
    let Some(t) = tls else { return };
    match t.reload() {
        Ok(()) => tracing::warn!("TLS certificate and key reloaded ({t:?})"),
        Err(e) => tracing::error!("TLS certificate NOT reloaded, the old one stays in use: {e}"),
    }
}
