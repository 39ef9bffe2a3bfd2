//! The s3hpc S3 HTTP gateway: an HTTP/1.1 server (our own connection engine, [`conn`]) that maps S3 REST requests onto any
//! [`s3hpc_core::Store`].
//!
//! ```ignore
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let cfg = Config::new(store, creds);
//! s3hpc_http::serve(listener, cfg, shutdown_signal).await?;
//! ```
//!
//! Requests are authenticated with SigV4 ([`s3hpc_sigv4::verify`]); bodies stream straight into
//! the store through [`s3hpc_sigv4::verified_body`]; every error is an S3 XML error document
//! carrying the request id.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::{HeaderValue, Method, Response, StatusCode};
use s3hpc_core::{CredentialSet, DynStore, Error};
use tokio::net::TcpListener;

mod api;
pub mod body;
mod conn;
pub mod util;
pub mod xml;

pub use body::{ReqBody, RespBody};

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
    /// Region reported by GetBucketLocation / HeadBucket.
    pub region: String,
    /// Base domain for virtual-host-style requests (`bucket.DOMAIN`); path style always works.
    pub domain: Option<String>,
    /// Emit one access-log line per request (tracing target `s3hpc::access`, level info).
    pub access_log: bool,
    /// A request body that delivers nothing for this long is aborted (RequestTimeout).
    pub body_idle_timeout: Duration,
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
}

impl Config {
    pub fn new(store: DynStore, creds: CredentialSet) -> Self {
        Config {
            store,
            creds,
            auth: Auth::SigV4,
            region: "us-east-1".into(),
            domain: None,
            access_log: false,
            body_idle_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(20),
            max_concurrent_uploads: 64,
            read_buffer_max: 128 * 1024,
            complete_keepalive_after: Duration::from_secs(1),
            anonymous: false,
            anonymous_identity: None,
        }
    }
}

/// Shared server state.
pub(crate) struct State {
    pub cfg: Config,
    /// Lower-cased `.domain` suffix for virtual-host matching.
    pub domain_suffix: Option<String>,
    next_id: AtomicU64,
    id_seed: u64,
    pub uploads: Arc<tokio::sync::Semaphore>,
}

impl State {
    fn new(cfg: Config) -> Self {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let id_seed = (seed.as_nanos() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id());
        State {
            uploads: Arc::new(tokio::sync::Semaphore::new(cfg.max_concurrent_uploads.max(1))),
            domain_suffix: cfg.domain.as_ref().map(|d| format!(".{}", d.to_ascii_lowercase())),
            cfg,
            next_id: AtomicU64::new(1),
            id_seed,
        }
    }

    fn request_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed).wrapping_mul(0xA24B_AED4_963E_E407) ^ self.id_seed
    }
}

/// Serve S3 on `listener` until `shutdown` completes, then stop accepting and wait (up to
/// `shutdown_grace`) for the requests in flight. Connections are run by our own HTTP/1.1 engine
/// ([`conn`]), which sends file bodies with `sendfile(2)`.
pub async fn serve(listener: TcpListener, cfg: Config, shutdown: impl Future<Output = ()>) -> io::Result<()> {
    let state = Arc::new(State::new(cfg));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            acc = listener.accept() => {
                let stream = match acc {
                    Ok((s, _)) => s,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
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

pub(crate) async fn handle(state: &State, parts: http::request::Parts, body: ReqBody) -> Response<RespBody> {
    let start = Instant::now();
    let rid = state.request_id();
    let mut op = "Unknown";
    let result = api::dispatch(state, &parts, body, rid, &mut op).await;
    let is_head = parts.method == Method::HEAD;
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => error_response(&e, is_head, parts.uri.path(), rid),
    };
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
    error_response_raw(e.code.http_status(), e.code.as_str(), &e.message, e.resource.as_deref(), is_head, path, rid)
}

pub(crate) fn error_response_raw(
    status: u16,
    code: &str,
    message: &str,
    resource: Option<&str>,
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
    error_xml(&mut s, code, message, resource, path, rid);
    b.header(http::header::CONTENT_TYPE, "application/xml")
        .header(http::header::CONTENT_LENGTH, s.len())
        .body(RespBody::full(s))
        .expect("valid response")
}

/// The `<Error>` element of an S3 error document (without the XML declaration).
pub(crate) fn error_xml(s: &mut String, code: &str, message: &str, resource: Option<&str>, path: &str, rid: u64) {
    s.push_str("<Error>");
    xml::elem(s, "Code", code);
    xml::elem(s, "Message", message);
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
    #[test]
    fn request_id_header_matches_format() {
        for rid in [0u64, 1, 0xA24B_AED4_963E_E407, u64::MAX, 0x0123_4567_89AB_CDEF] {
            assert_eq!(super::request_id_header(rid).to_str().unwrap(), format!("{rid:016X}"));
        }
    }
}
