//! The s3hpc S3 HTTP gateway: an HTTP/1.1 server (our own connection engine, [`conn`]) that maps S3 REST requests onto any
//! [`s3hpc_core::Store`].
//!
//! ```ignore
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let cfg = Config::new(store, creds);
//! s3hpc_http::serve(listener, cfg, shutdown_signal).await?;
//! ```
//!
//! Requests are authenticated with SigV4, or SigV2 unless `Config::sigv2` is off
//! ([`s3hpc_sigv4::verify`], strict as AWS: every `x-amz-*` header signed, the credential scope
//! in `Config::region`); bodies stream straight into
//! the store through [`s3hpc_sigv4::verified_body`]; every error is an S3 XML error document
//! carrying the request id.

// The module docs link the crate's private parts (its map for maintainers: `cargo doc
// --document-private-items`), which the public build shows as plain names.
#![allow(rustdoc::private_intra_doc_links)]
#![deny(unsafe_code)] // the one function left (tls.rs) allows itself
#![deny(clippy::undocumented_unsafe_blocks)]

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::{HeaderValue, Method, Response, StatusCode};
use s3hpc_core::{CredentialSet, DynStore, Error, ErrorCode};
use tokio::net::TcpListener;

mod api;
pub mod body;
mod bucket_cache;
mod conn;
pub mod console;
mod cors;
mod form;
pub mod lifecycle;
pub mod metrics;
pub mod roles;
pub mod tls;
pub mod util;
pub mod xml;

pub use body::{ReqBody, RespBody};
pub use metrics::HttpMetrics;

tokio::task_local! {
    /// The id of the request being handled (the `x-amz-request-id` it answers), set around each
    /// request by the connection loop. Log formatters read it ([`current_request_id`]) so that
    /// every line logged while a request is handled carries the id. It replaces a tracing span
    /// per request, which cost ~10 µs of server CPU per request (span slot, fields formatted
    /// into a string, enter/exit on every poll) whether anything was logged or not; setting a
    /// task-local costs a few nanoseconds per poll.
    static REQUEST_ID: u64;
}

/// The id of the request the calling task is handling, if any (see [`REQUEST_ID`]). Work a
/// request hands to blocking threads does not carry it.
pub fn current_request_id() -> Option<u64> {
    REQUEST_ID.try_with(|id| *id).ok()
}

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// SigV4 header or presigned-URL authentication (the only mode `s3hpc serve` uses).
    SigV4,
    /// No authentication at all. For in-process tests of routing only.
    DisabledForTests,
}

/// Gateway configuration.
#[derive(Clone)]
pub struct Config {
    pub store: DynStore,
    pub creds: CredentialSet,
    pub auth: Auth,
    /// The gateway's region: reported by GetBucketLocation / HeadBucket, and the one a SigV4
    /// credential scope must name (AWS's AuthorizationHeaderMalformed otherwise).
    pub region: String,
    /// Accept Signature Version 2 (header, presigned URLs, POST policies); `s3hpc serve
    /// --no-sigv2` turns it off.
    pub sigv2: bool,
    /// Base domain for virtual-host-style requests (`bucket.DOMAIN`); path style always works.
    pub domain: Option<String>,
    /// Website endpoint domains: a request whose Host is `BUCKET.DOMAIN` for one of them is a
    /// website request (`api::website_serve`); empty: none (`s3hpc serve --website-domain`).
    pub website_domains: Vec<String>,
    /// Emit one access-log line per request (tracing target `s3hpc::access`, level info).
    pub access_log: bool,
    /// A request body that delivers nothing for this long is aborted (RequestTimeout); a
    /// client that reads nothing of a response for this long is dropped.
    pub body_idle_timeout: Duration,
    /// A large upload whose body delivers nothing for this long lends its upload slot to other
    /// uploads until its bytes arrive again (then it waits for a slot like a new upload), so
    /// stalled clients cannot hold every slot.
    pub slot_idle: Duration,
    /// Open connections above which connections waiting for a request head for at least a
    /// second (idle keep-alive ones, and ones that sent part of a head) are closed to make room
    /// for new ones. `None`: derived from the file-descriptor limit
    /// (`RLIMIT_NOFILE` minus an eighth, at least 64, kept for files and other sockets).
    pub max_connections: Option<usize>,
    /// Prometheus metrics to record into (`None`: none recorded).
    pub metrics: Option<Arc<HttpMetrics>>,
    /// Serve HTTPS with this TLS configuration (see [`tls::TlsFiles`]); `None`: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Time allowed to receive a request's headers.
    pub header_timeout: Duration,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
    /// Large uploads (PUT / UploadPart bodies above 256 KiB) streamed at once; more wait, their
    /// bytes held back by TCP. Bounds memory under many concurrent uploads.
    pub max_concurrent_uploads: usize,
    /// Largest request head accepted (at least 8 KiB) and size of the pieces a request body is
    /// read in (128 KiB by default: the posix store's write batch, so pieces reach the file
    /// without another copy). Bounds memory per connection under many concurrent uploads.
    pub read_buffer_max: usize,
    /// A CompleteMultipartUpload still running after this long answers `200 OK` at once and
    /// sends a space every second until its result (or error) document follows, as AWS does, so
    /// clients with short read timeouts survive long completes.
    pub complete_keepalive_after: Duration,
    /// Serve unsigned requests as the anonymous caller (S3 authorization decides what it may
    /// do). Only for a store that authorizes requests (`s3hpc_authz::Authorized`); otherwise
    /// unsigned requests are refused (AccessDenied).
    pub anonymous: bool,
    /// The POSIX identity anonymous requests act as (with `--identity posix`: nobody), so the
    /// kernel checks them too; `None`: the gateway's own.
    pub anonymous_identity: Option<s3hpc_core::identity::Identity>,
    /// The checksum computed for new objects uploaded without one (PutObject, POST object,
    /// parts of uploads created without an algorithm, CopyObject of an object without one), as
    /// S3 does with CRC64NVME (the default); `None` computes nothing unasked
    /// (`s3hpc serve --default-checksum none`).
    pub default_checksum: Option<s3hpc_core::ChecksumAlgorithm>,
    /// Shortest `DurationSeconds` STS GetSessionToken accepts (AWS: 900 seconds).
    pub sts_min_duration: Duration,
    /// Roles STS `AssumeRole` may give ([`roles`]).
    pub roles: roles::Roles,
}

impl Config {
    pub fn new(store: DynStore, creds: CredentialSet) -> Self {
        Config {
            store,
            creds,
            auth: Auth::SigV4,
            region: "us-east-1".into(),
            sigv2: true,
            domain: None,
            website_domains: Vec::new(),
            access_log: false,
            body_idle_timeout: Duration::from_secs(60),
            slot_idle: Duration::from_secs(2),
            max_connections: None,
            metrics: None,
            tls: None,
            header_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(20),
            max_concurrent_uploads: 64,
            read_buffer_max: 128 * 1024,
            complete_keepalive_after: Duration::from_secs(1),
            anonymous: false,
            anonymous_identity: None,
            default_checksum: Some(s3hpc_core::ChecksumAlgorithm::Crc64Nvme),
            sts_min_duration: Duration::from_secs(900),
            roles: roles::Roles::default(),
        }
    }
}

/// Shared server state.
pub(crate) struct State {
    pub cfg: Config,
    /// Lower-cased `.domain` suffix for virtual-host matching.
    pub domain_suffix: Option<String>,
    /// Lower-cased `.DOMAIN` suffixes of the website endpoint's domains.
    pub website_suffixes: Vec<String>,
    /// What request authentication accepts (region, SigV2, domain), from `cfg`.
    pub accept: s3hpc_sigv4::Accept,
    next_id: AtomicU64,
    id_seed: u64,
    pub uploads: Arc<tokio::sync::Semaphore>,
    /// Buckets' CORS configurations, read only for requests with an `Origin`.
    pub(crate) cors: cors::CorsCache,
    /// Buckets' lifecycle configurations, for the `x-amz-expiration` of object reads and writes.
    pub(crate) lifecycle: lifecycle::LifecycleCache,
    /// Open connections.
    pub(crate) conns: AtomicUsize,
    /// Connection count above which idle ones are shed.
    max_conns: usize,
    /// Shedding: connections idle since before this time ([`State::now_ms`]) close.
    pub(crate) shed: tokio::sync::watch::Sender<u64>,
    epoch: Instant,
    /// Set on the web console's listener ([`console`]): its requests go to the console's router.
    pub(crate) console: Option<Arc<console::Console>>,
}

impl State {
    fn new(cfg: Config) -> Self {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let id_seed = (seed.as_nanos() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id());
        State {
            uploads: Arc::new(tokio::sync::Semaphore::new(cfg.max_concurrent_uploads.max(1))),
            domain_suffix: cfg.domain.as_ref().map(|d| format!(".{}", d.to_ascii_lowercase())),
            website_suffixes: cfg
                .website_domains
                .iter()
                .map(|d| d.trim().trim_matches('.'))
                .filter(|d| !d.is_empty())
                .map(|d| format!(".{}", d.to_ascii_lowercase()))
                .collect(),
            accept: s3hpc_sigv4::Accept { region: cfg.region.clone(), sigv2: cfg.sigv2, domain: cfg.domain.clone() },
            conns: AtomicUsize::new(0),
            cors: cors::CorsCache::default(),
            lifecycle: lifecycle::LifecycleCache::default(),
            max_conns: cfg.max_connections.unwrap_or_else(default_max_connections).max(1),
            shed: tokio::sync::watch::channel(0).0,
            epoch: Instant::now(),
            console: None,
            cfg,
            next_id: AtomicU64::new(1),
            id_seed,
        }
    }

    /// Milliseconds since the server started (the clock of idle-connection shedding).
    pub(crate) fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Close the connections that have been waiting for a request head for at least a second,
    /// with none or part of it received.
    fn shed_idle(&self) {
        let cutoff = self.now_ms().saturating_sub(SHED_MIN_IDLE_MS);
        if cutoff > *self.shed.borrow() {
            self.shed.send_replace(cutoff);
            if let Some(m) = &self.cfg.metrics {
                m.connections_shed.inc();
            }
        }
    }

    fn request_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed).wrapping_mul(0xA24B_AED4_963E_E407) ^ self.id_seed
    }
}

/// Connections idle for less than this are never shed.
const SHED_MIN_IDLE_MS: u64 = 1000;

/// The default connection limit: the soft `RLIMIT_NOFILE` less an eighth (at least 64) kept for
/// the files requests open and other sockets.
fn default_max_connections() -> usize {
    let Some(cur) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current else {
        return 1 << 20; // unlimited
    };
    let n = usize::try_from(cur).unwrap_or(1 << 20).min(1 << 20);
    n.saturating_sub((n / 8).max(64)).max(16)
}

/// accept(2) failures back off from 5 ms to 1 s, and are logged at most every 10 s (with the
/// number of failures since the last line).
struct AcceptBackoff {
    delay: Duration,
    failures: u64,
    last_log: Option<Instant>,
}

impl AcceptBackoff {
    fn failed(&mut self, e: &io::Error) -> Duration {
        self.failures += 1;
        if self.last_log.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            tracing::warn!(failures = self.failures, "accept failed: {e}; backing off");
            self.failures = 0;
            self.last_log = Some(Instant::now());
        }
        self.delay = (self.delay * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
        self.delay
    }
}

/// Serve S3 on `listener` until `shutdown` completes, then stop accepting and wait (up to
/// `shutdown_grace`) for the requests in flight. Connections are run by our own HTTP/1.1 engine
/// ([`conn`]), which sends file bodies with `sendfile(2)`.
///
/// Above `max_connections` open connections, the ones that have waited a second or more for a
/// request head (idle keep-alive connections, and ones that sent only part of a head) are
/// closed (shed) so that new clients are served; when accept(2) fails (out of file
/// descriptors), they are shed too and accepting backs off (5 ms doubling to 1 s).
pub async fn serve(listener: TcpListener, cfg: Config, shutdown: impl Future<Output = ()>) -> io::Result<()> {
    let state = Arc::new(State::new(cfg));
    if let Some(m) = &state.cfg.metrics
        && let Ok(mut w) = m.state.lock()
    {
        *w = Arc::downgrade(&state);
    }
    serve_state(listener, state, shutdown).await
}

/// The accept loop of [`serve`] (and of the web console's listener, [`console::serve`]).
pub(crate) async fn serve_state(
    listener: TcpListener,
    state: Arc<State>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    let mut backoff = AcceptBackoff { delay: Duration::ZERO, failures: 0, last_log: None };
    loop {
        tokio::select! {
            acc = listener.accept() => {
                let stream = match acc {
                    Ok((s, _)) => s,
                    Err(e) => {
                        if let Some(m) = &state.cfg.metrics {
                            m.accept_errors.inc();
                        }
                        if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)) {
                            state.shed_idle();
                        }
                        let wait = backoff.failed(&e);
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = &mut shutdown => break,
                        }
                        continue;
                    }
                };
                backoff.delay = Duration::ZERO;
                let _ = stream.set_nodelay(true);
                if state.conns.fetch_add(1, Ordering::Relaxed) + 1 > state.max_conns {
                    state.shed_idle();
                }
                tokio::spawn(conn::serve_conn(state.clone(), stream, stop_rx.clone()));
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(true);
    // Every connection holds a receiver until it ends: idle ones end at once, busy ones after
    // their response.
    tokio::select! {
        _ = stop_tx.closed() => {}
        _ = tokio::time::sleep(state.cfg.shutdown_grace) => tracing::warn!("shutdown grace period over; closing"),
    }
    Ok(())
}

/// The metrics record of one request, from its head to its last response byte: counted in
/// flight while it lives, and recorded in the metrics (operation, status, latency, body bytes)
/// when dropped. (The request itself is `http::request::Parts` and a [`ReqBody`].)
pub(crate) struct RequestRecord<'a> {
    metrics: Option<&'a HttpMetrics>,
    start: Instant,
    pub rid: u64,
    pub op: &'static str,
    pub status: u16,
    /// The S3 error code of an error response.
    pub error: Option<&'static str>,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

impl<'a> RequestRecord<'a> {
    pub(crate) fn begin(st: &'a State, rid: u64) -> Self {
        let metrics = st.cfg.metrics.as_deref();
        if let Some(m) = metrics {
            m.in_flight.inc();
        }
        RequestRecord {
            metrics,
            start: Instant::now(),
            rid,
            op: "Unknown",
            status: 0,
            error: None,
            bytes_in: 0,
            bytes_out: 0,
        }
    }
}

impl Drop for RequestRecord<'_> {
    fn drop(&mut self) {
        let Some(m) = self.metrics else { return };
        m.in_flight.dec();
        let op = metrics::OpLabel { operation: self.op };
        m.requests.get_or_create(&metrics::OpStatus { operation: self.op, status: self.status }).inc();
        m.duration.get_or_create(&op).observe(self.start.elapsed().as_secs_f64());
        if self.bytes_in > 0 {
            m.bytes_in.get_or_create(&op).inc_by(self.bytes_in);
        }
        if self.bytes_out > 0 {
            m.bytes_out.get_or_create(&op).inc_by(self.bytes_out);
        }
        if let Some(code) = self.error {
            m.errors.get_or_create(&metrics::CodeLabel { code }).inc();
        }
    }
}

pub(crate) async fn handle(
    state: &State,
    parts: http::request::Parts,
    body: ReqBody,
    req: &mut RequestRecord<'_>,
) -> Response<RespBody> {
    if let Some(c) = &state.console {
        return Box::pin(console::handle(state, c, parts, body, req)).await;
    }
    handle_s3(state, parts, body, req).await
}

/// One S3 request: dispatched, answered, its CORS and id headers added, logged.
pub(crate) async fn handle_s3(
    state: &State,
    parts: http::request::Parts,
    body: ReqBody,
    req: &mut RequestRecord<'_>,
) -> Response<RespBody> {
    let start = Instant::now();
    let rid = req.rid;
    let mut op = "Unknown";
    let result = api::dispatch(state, &parts, body, rid, &mut op).await;
    req.op = op;
    if let Err(e) = &result {
        req.error = Some(e.code.as_str());
        if e.code.http_status() >= 500 {
            tracing::warn!(op, code = e.code.as_str(), "{}", e.message);
        }
    }
    let is_head = parts.method == Method::HEAD;
    let mut resp = match result {
        Ok(r) => r,
        Err(mut e) => {
            // AWS names the method refused beside the resource type (`<Method>GET</Method>
            // <ResourceType>DeleteMarker</ResourceType>`); the store knows the type, not the method.
            if e.code == ErrorCode::MethodNotAllowed
                && e.detail("ResourceType").is_some()
                && e.detail("Method").is_none()
            {
                e.details.insert(0, ("Method", parts.method.as_str().to_string()));
            }
            error_response(&e, is_head, parts.uri.path(), rid)
        }
    };
    // CORS headers: only requests with an Origin pay for them.
    if parts.headers.contains_key(http::header::ORIGIN) && parts.method != Method::OPTIONS {
        api::cors::apply(state, &parts, &mut resp).await;
    }
    let id = request_id_header(rid);
    let h = resp.headers_mut();
    h.insert("x-amz-id-2", id.clone());
    h.insert("x-amz-request-id", id);
    h.insert(http::header::SERVER, HeaderValue::from_static("s3hpc"));
    if state.cfg.access_log {
        let bytes_out = resp.headers().get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).unwrap_or("-");
        let bytes_in = parts.headers.get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).unwrap_or("-");
        tracing::info!(
            target: "s3hpc::access",
            "{rid:016X} {} {} {op} {} in={bytes_in} out={bytes_out} {}us",
            parts.method,
            parts.uri.path(),
            resp.status().as_u16(),
            start.elapsed().as_micros()
        );
    }
    resp
}

/// The request id as 16 upper-case hex digits, without going through `format!` (every response
/// carries it twice).
fn request_id_header(rid: u64) -> HeaderValue {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut b = [0u8; 16];
    for (i, c) in b.iter_mut().enumerate() {
        *c = HEX[((rid >> (60 - 4 * i)) & 0xF) as usize];
    }
    HeaderValue::from_bytes(&b).expect("hex is a valid header value")
}

/// The S3 error document for `e` (no body for HEAD requests and 304).
pub(crate) fn error_response(e: &Error, is_head: bool, path: &str, rid: u64) -> Response<RespBody> {
    if e.code == ErrorCode::XMinioStorageFull {
        log_storage_full(e, path);
    }
    let mut resp = error_response_raw(
        e.code.http_status(),
        e.code.as_str(),
        &e.message,
        e.resource.as_deref(),
        &e.details,
        is_head,
        path,
        rid,
    );
    // A read that met a delete marker says so (S3: `x-amz-delete-marker`, the marker's id).
    if let Some(v) = &e.delete_marker
        && let Ok(v) = http::HeaderValue::from_str(v)
    {
        resp.headers_mut().insert("x-amz-delete-marker", http::HeaderValue::from_static("true"));
        resp.headers_mut().insert("x-amz-version-id", v);
    }
    resp
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn error_response_raw(
    status: u16,
    code: &str,
    message: &str,
    resource: Option<&str>,
    details: &[(&'static str, String)],
    is_head: bool,
    path: &str,
    rid: u64,
) -> Response<RespBody> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut b = Response::builder().status(status);
    if is_head || status == StatusCode::NOT_MODIFIED {
        if status != StatusCode::NOT_MODIFIED {
            b = b.header(http::header::CONTENT_LENGTH, "0");
        }
        return b.body(RespBody::Empty).expect("valid response");
    }
    let mut s = String::with_capacity(256);
    s.push_str(xml::DECL);
    error_xml(&mut s, code, message, resource, details, path, rid);
    b.header(http::header::CONTENT_TYPE, "application/xml")
        .header(http::header::CONTENT_LENGTH, s.len())
        .body(RespBody::full(s))
        .expect("valid response")
}

/// Say (at most once a second) that the store's file system is full, naming the request's path
/// (the bucket's directory under the root is on that file system).
fn log_storage_full(e: &Error, path: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if LAST.swap(now, Ordering::Relaxed) != now {
        tracing::error!(
            "s3hpc: the file system under {path} is full ({}): writes answer 507 XMinioStorageFull until space is freed",
            e.message
        );
    }
}

/// The `<Error>` element of an S3 error document (without the XML declaration): `Code`,
/// `Message`, the error's own elements (`details`, in order, as AWS places them after the
/// message), `Resource`, `RequestId`, `HostId`.
pub(crate) fn error_xml(
    s: &mut String,
    code: &str,
    message: &str,
    resource: Option<&str>,
    details: &[(&'static str, String)],
    path: &str,
    rid: u64,
) {
    s.push_str("<Error>");
    xml::elem(s, "Code", code);
    xml::elem(s, "Message", message);
    for (name, value) in details {
        xml::elem(s, name, value);
    }
    match resource {
        Some(r) => xml::elem(s, "Resource", &format!("/{}", r.trim_start_matches('/'))),
        None => xml::elem(s, "Resource", path),
    }
    xml::elem(s, "RequestId", &format!("{rid:016X}"));
    xml::elem(s, "HostId", &format!("{rid:016X}"));
    s.push_str("</Error>");
}

#[cfg(test)]
mod tests {
    use s3hpc_core::{Error, ErrorCode};

    fn body_of(resp: super::Response<super::RespBody>) -> String {
        match resp.into_body() {
            super::RespBody::Full(b) => String::from_utf8(b.to_vec()).unwrap(),
            _ => panic!("an error document is one buffer"),
        }
    }

    #[test]
    fn error_elements_follow_the_message_in_order_and_escaped() {
        let e = Error::invalid_arg("Bad <arg>", "x-amz-meta-a&b", "v<1>&'\"\n");
        let doc = body_of(super::error_response(&e, false, "/b/k", 0x1234));
        assert_eq!(
            doc,
            format!(
                "{}<Error><Code>InvalidArgument</Code><Message>Bad &lt;arg&gt;</Message>\
                 <ArgumentName>x-amz-meta-a&amp;b</ArgumentName>\
                 <ArgumentValue>v&lt;1&gt;&amp;&apos;&quot;&#xA;</ArgumentValue>\
                 <Resource>/b/k</Resource><RequestId>0000000000001234</RequestId>\
                 <HostId>0000000000001234</HostId></Error>",
                crate::xml::DECL
            )
        );
    }

    #[test]
    fn core_constructors_name_what_is_missing() {
        let doc = body_of(super::error_response(&Error::no_such_key("bk", "a&b"), false, "/x", 1));
        assert!(doc.contains("</Message><Key>a&amp;b</Key><Resource>/bk/a&amp;b</Resource>"), "{doc}");
        let doc = body_of(super::error_response(&Error::no_such_bucket("bk"), false, "/x", 1));
        assert!(doc.contains("</Message><BucketName>bk</BucketName><Resource>/bk</Resource>"), "{doc}");
        let doc = body_of(super::error_response(&Error::no_such_upload("U1"), false, "/x", 1));
        assert!(doc.contains("</Message><UploadId>U1</UploadId>"), "{doc}");
        // Errors without elements: the document is as before.
        let doc = body_of(super::error_response(&Error::code(ErrorCode::InternalError), false, "/x", 1));
        assert!(doc.contains("</Message><Resource>/x</Resource>"), "{doc}");
    }

    #[test]
    fn request_id_header_matches_format() {
        for rid in [0u64, 1, 0xA24B_AED4_963E_E407, u64::MAX, 0x0123_4567_89AB_CDEF] {
            assert_eq!(super::request_id_header(rid).to_str().unwrap(), format!("{rid:016X}"));
        }
    }
}
