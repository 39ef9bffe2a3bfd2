//! The web console (`s3hpc serve --console-listen ADDR`, docs/CONSOLE.md): a single-page app
//! built into the binary ([`assets`]) and a small JSON API, served by the gateway's own HTTP
//! engine (so over its TLS too).
//!
//! Design: the browser never holds a secret. Login (`POST /api/login`) checks the access key and
//! secret against the gateway's accounts and starts a server-side session (an HttpOnly,
//! SameSite=Strict cookie, Secure over TLS, plus a per-session CSRF token the page sends in the
//! `x-csrf-token` header of every state-changing request). S3 operations go through
//! `/s3/<bucket>/<key>?<query>`: the same S3 REST requests a client would send, unsigned; the
//! console takes the session's account instead of a signature ([`Preauth`]) and hands the
//! request to the gateway's own S3 handler, so the authorization (owners, policies, ACLs, public
//! access block), validation and error documents are exactly the S3 endpoint's. Share links are
//! presigned by the server with the account's key (`POST /api/presign`).
//!
//! | route | what |
//! |---|---|
//! | `GET /`, `/assets/*` | the app (HTML, JS, CSS; nothing fetched from elsewhere) |
//! | `POST /api/login` | `{"accessKey","secretKey"}` (JSON only) -> session cookie + `{csrf, account...}` |
//! | `GET /api/session` | who is logged in, and the CSRF token (401 without a session) |
//! | `POST /api/logout` | ends the session (the cookie no longer works) |
//! | `POST /api/presign` | `{"bucket","key","versionId"?,"expires"}` -> a presigned GET URL on the S3 endpoint |
//! | `GET /api/admin/health`, `/api/admin/metrics` | admins: readiness and the Prometheus text |
//! | `* /s3/...` | S3 as the session's account |

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderValue, Method, Response, StatusCode, header};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use crate::{Config, ReqBody, RequestRecord, RespBody, State};

mod assets;

/// What the console shows administrators: the gateway's health and metrics (the admin
/// listener's `/health/ready` and `/metrics`).
pub trait AdminView: Send + Sync {
    /// `Ok` when ready, else why not.
    fn health(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>>;
    /// The Prometheus text exposition.
    fn metrics(&self) -> Pin<Box<dyn Future<Output = String> + Send + '_>>;
    /// Accounts and self-service keys, as the admin API lists them (`GET /admin/v1/accounts`).
    fn accounts(&self) -> Pin<Box<dyn Future<Output = Result<serde_json::Value, String>> + Send + '_>> {
        Box::pin(async { Err("this gateway has no admin API".to_string()) })
    }
    /// Usage per bucket and account from the last walk (`GET /admin/v1/usage`).
    fn usage(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Console settings.
#[derive(Clone)]
pub struct ConsoleOptions {
    /// Base URL of the S3 endpoint that share links point to (`https://s3.example.org`). `None`:
    /// the console request's host name with `s3_port` (and https when the gateway serves TLS).
    pub s3_url: Option<String>,
    /// Port of the gateway's S3 listener (`None` with no HTTP listener and no `s3_url`: share
    /// links are refused).
    pub s3_port: Option<u16>,
    /// Health and metrics for administrators (`None`: the admin page says they are off).
    pub admin: Option<Arc<dyn AdminView>>,
    /// Self-service keys (`serve --user-keys`): the "My keys" page of accounts bound to a
    /// POSIX user (`None`: no such page).
    pub keys: Option<Arc<dyn s3hpc_core::creds::KeyAdmin>>,
    /// A session unused for this long ends.
    pub idle: Duration,
    /// A session ends this long after login, used or not.
    pub lifetime: Duration,
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        ConsoleOptions {
            s3_url: None,
            s3_port: None,
            admin: None,
            keys: None,
            idle: Duration::from_secs(3600),
            lifetime: Duration::from_secs(12 * 3600),
        }
    }
}

/// Sessions at most (beyond, expired ones are swept; if none are, logins wait for them).
const MAX_SESSIONS: usize = 100_000;
/// The session cookie's name.
const COOKIE: &str = "s3hpc_console";
/// The header carrying the CSRF token.
const CSRF_HEADER: &str = "x-csrf-token";
/// Largest JSON body the console API reads.
const MAX_JSON: usize = 64 * 1024;

/// A console request authenticated by its session: the S3 handler acts as this key's account
/// (set only by the console, in-process; nothing on the wire can set it).
#[derive(Clone, Debug)]
pub(crate) struct Preauth {
    pub access_key: String,
}

struct Session {
    access_key: String,
    /// SHA-256 of the secret at login: a key rotated or removed since ends the session.
    secret_fp: [u8; 32],
    csrf: String,
    created: Instant,
    last: Instant,
}

/// The console's state: its options and the sessions (by SHA-256 of the cookie's token).
pub(crate) struct Console {
    opts: ConsoleOptions,
    sessions: Mutex<HashMap<[u8; 32], Session>>,
}

/// Serve the web console on `listener` until `shutdown` completes: the same HTTP engine, store,
/// accounts and TLS as the S3 listener of `cfg`.
pub async fn serve(
    listener: TcpListener,
    cfg: Config,
    opts: ConsoleOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut st = State::new(cfg);
    st.console = Some(Arc::new(Console { opts, sessions: Mutex::new(HashMap::new()) }));
    crate::serve_state(listener, Arc::new(st), shutdown).await
}

fn random_token() -> String {
    use base64::Engine;
    let mut b = [0u8; 32];
    let mut got = 0;
    while got < b.len() {
        match rustix::rand::getrandom(&mut b[got..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => panic!("getrandom failed: {}", std::io::Error::from(e)),
        }
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn sha256(s: &[u8]) -> [u8; 32] {
    Sha256::digest(s).into()
}

/// Equality whose time does not depend on where the inputs differ.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hdr<'a>(parts: &'a http::request::Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

/// The session token of the request's cookie.
fn cookie_token(parts: &http::request::Parts) -> Option<String> {
    for v in parts.headers.get_all(header::COOKIE) {
        let Ok(v) = v.to_str() else { continue };
        for c in v.split(';') {
            if let Some((n, val)) = c.trim().split_once('=')
                && n == COOKIE
                && !val.is_empty()
            {
                return Some(val.to_string());
            }
        }
    }
    None
}

/// The logged-in caller of a request.
struct Who {
    key: [u8; 32],
    access_key: String,
    csrf: String,
}

impl Console {
    /// The live session of the request's cookie, touched; ends (and forgets) one that expired or
    /// whose key was removed or rotated.
    fn session(&self, st: &State, parts: &http::request::Parts) -> Option<Who> {
        let token = cookie_token(parts)?;
        let key = sha256(token.as_bytes());
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let s = sessions.get_mut(&key)?;
        let now = Instant::now();
        let secret_ok = st.cfg.creds.secret_for(&s.access_key).is_some_and(|sk| sha256(sk.as_bytes()) == s.secret_fp);
        if !secret_ok
            || now.duration_since(s.last) > self.opts.idle
            || now.duration_since(s.created) > self.opts.lifetime
        {
            sessions.remove(&key);
            return None;
        }
        s.last = now;
        Some(Who { key, access_key: s.access_key.clone(), csrf: s.csrf.clone() })
    }

    fn start_session(&self, access_key: &str, secret: &str) -> Option<(String, String)> {
        let token = random_token();
        let csrf = random_token();
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            let (idle, life) = (self.opts.idle, self.opts.lifetime);
            sessions.retain(|_, s| now.duration_since(s.last) <= idle && now.duration_since(s.created) <= life);
            if sessions.len() >= MAX_SESSIONS {
                return None;
            }
        }
        sessions.insert(
            sha256(token.as_bytes()),
            Session {
                access_key: access_key.to_string(),
                secret_fp: sha256(secret.as_bytes()),
                csrf: csrf.clone(),
                created: now,
                last: now,
            },
        );
        Some((token, csrf))
    }

    fn end_session(&self, key: &[u8; 32]) {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// Headers every console page and API answer carries.
fn secure_headers(resp: &mut Response<RespBody>) {
    let h = resp.headers_mut();
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn json_response(status: StatusCode, v: &serde_json::Value) -> Response<RespBody> {
    let body = v.to_string();
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, body.len())
        .body(RespBody::full(body))
        .expect("valid response")
}

fn json_error(status: StatusCode, code: &str, message: &str) -> Response<RespBody> {
    json_response(status, &serde_json::json!({ "error": code, "message": message }))
}

fn not_logged_in() -> Response<RespBody> {
    json_error(StatusCode::UNAUTHORIZED, "NotLoggedIn", "Log in to the console first")
}

fn csrf_refused() -> Response<RespBody> {
    json_error(
        StatusCode::FORBIDDEN,
        "InvalidCsrfToken",
        "This request changes state and must carry the session's x-csrf-token header",
    )
}

/// Whether a browser says the request comes from another site: `Sec-Fetch-Site` other than
/// same-origin / none, or an `Origin` whose host is not the request's `Host`.
fn cross_site(parts: &http::request::Parts) -> bool {
    if let Some(s) = hdr(parts, "sec-fetch-site")
        && s != "same-origin"
        && s != "none"
    {
        return true;
    }
    match (hdr(parts, "origin"), hdr(parts, "host")) {
        (Some(o), Some(h)) => o.split_once("://").map(|(_, rest)| rest) != Some(h),
        (Some(_), None) => true,
        _ => false,
    }
}

/// The request's own CSRF check: the session's token in `x-csrf-token`, from this site.
fn csrf_ok(parts: &http::request::Parts, who: &Who) -> bool {
    !cross_site(parts) && hdr(parts, CSRF_HEADER).is_some_and(|t| ct_eq(t.as_bytes(), who.csrf.as_bytes()))
}

/// Read a small JSON body.
async fn read_json(mut body: ReqBody) -> Result<serde_json::Value, Response<RespBody>> {
    let mut data = Vec::new();
    while let Some(chunk) = body.chunk().await {
        let chunk = chunk.map_err(|_| json_error(StatusCode::BAD_REQUEST, "IncompleteBody", "The body ended early"))?;
        if data.len() + chunk.len() > MAX_JSON {
            return Err(json_error(StatusCode::PAYLOAD_TOO_LARGE, "BodyTooLarge", "The JSON body is too large"));
        }
        data.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&data)
        .map_err(|e| json_error(StatusCode::BAD_REQUEST, "MalformedJSON", &format!("The body is not JSON: {e}")))
}

fn is_json(parts: &http::request::Parts) -> bool {
    hdr(parts, "content-type")
        .is_some_and(|t| t.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")))
}

/// Answer one request of the console's listener.
pub(crate) async fn handle(
    st: &State,
    c: &Console,
    parts: http::request::Parts,
    body: ReqBody,
    req: &mut RequestRecord<'_>,
) -> Response<RespBody> {
    let path = parts.uri.path().to_string();
    if path == "/s3" || path.starts_with("/s3/") {
        return proxy(st, c, parts, body, req).await;
    }
    req.op = "Console";
    let mut resp = match (&parts.method, path.as_str()) {
        (&Method::GET | &Method::HEAD, "/" | "/index.html") => assets::page("index.html"),
        (&Method::GET | &Method::HEAD, p) if p.starts_with("/assets/") => assets::page(&p["/assets/".len()..]),
        (&Method::POST, "/api/login") => login(st, c, &parts, body).await,
        (&Method::GET, "/api/session") => match c.session(st, &parts) {
            Some(who) => session_info(st, c, &who),
            None => not_logged_in(),
        },
        (&Method::POST, "/api/logout") => match c.session(st, &parts) {
            Some(who) if csrf_ok(&parts, &who) => {
                c.end_session(&who.key);
                let mut r = json_response(StatusCode::OK, &serde_json::json!({ "loggedOut": true }));
                r.headers_mut().insert(header::SET_COOKIE, cookie_header(st, "", true));
                r
            }
            Some(_) => csrf_refused(),
            None => not_logged_in(),
        },
        (&Method::POST, "/api/presign") => match c.session(st, &parts) {
            Some(who) if csrf_ok(&parts, &who) => match read_json(body).await {
                Ok(v) => presign(st, c, &parts, &who, &v),
                Err(r) => r,
            },
            Some(_) => csrf_refused(),
            None => not_logged_in(),
        },
        (&Method::GET, "/api/admin/health" | "/api/admin/metrics") => match c.session(st, &parts) {
            Some(who) => admin(st, c, &who, path.ends_with("metrics")).await,
            None => not_logged_in(),
        },
        (&Method::GET, "/api/admin/accounts" | "/api/admin/usage") => match c.session(st, &parts) {
            Some(who) => admin_data(st, c, &who, path.ends_with("usage")).await,
            None => not_logged_in(),
        },
        (&Method::GET, "/api/keys") => match c.session(st, &parts) {
            Some(who) => my_keys(st, c, &who, KeyOp::List).await,
            None => not_logged_in(),
        },
        (&Method::POST, "/api/keys") => match c.session(st, &parts) {
            Some(who) if csrf_ok(&parts, &who) => match read_json(body).await {
                Ok(v) => my_keys(st, c, &who, KeyOp::Create(v)).await,
                Err(r) => r,
            },
            Some(_) => csrf_refused(),
            None => not_logged_in(),
        },
        (&Method::DELETE, p) if p.starts_with("/api/keys/") => match c.session(st, &parts) {
            Some(who) if csrf_ok(&parts, &who) => {
                my_keys(st, c, &who, KeyOp::Revoke(p["/api/keys/".len()..].to_string())).await
            }
            Some(_) => csrf_refused(),
            None => not_logged_in(),
        },
        (m, "/" | "/index.html" | "/api/login" | "/api/session" | "/api/logout" | "/api/presign")
            if m != Method::GET && m != Method::POST =>
        {
            json_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "Method not allowed")
        }
        _ => json_error(StatusCode::NOT_FOUND, "NotFound", "No such console page"),
    };
    secure_headers(&mut resp);
    resp
}

fn cookie_header(st: &State, token: &str, clear: bool) -> HeaderValue {
    let secure = if st.cfg.tls.is_some() { "; Secure" } else { "" };
    let age = if clear { "; Max-Age=0" } else { "" };
    HeaderValue::from_str(&format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{secure}{age}"))
        .expect("token is base64url")
}

fn session_info(st: &State, c: &Console, who: &Who) -> Response<RespBody> {
    let account = st.cfg.creds.account_for(&who.access_key);
    json_response(
        StatusCode::OK,
        &serde_json::json!({
            "accessKey": who.access_key,
            "accountId": account.as_ref().map(|a| a.id.clone()),
            "name": account.as_ref().and_then(|a| a.name.clone()),
            "admin": account.as_ref().is_some_and(|a| a.admin),
            "csrf": who.csrf,
            "region": st.cfg.region,
            "keys": c.opts.keys.is_some() && account.as_ref().is_some_and(|a| a.uid.is_some()),
        }),
    )
}

async fn login(st: &State, c: &Console, parts: &http::request::Parts, body: ReqBody) -> Response<RespBody> {
    // JSON only: a cross-site HTML form cannot send it without a CORS preflight (login CSRF).
    if !is_json(parts) || cross_site(parts) {
        return json_error(StatusCode::FORBIDDEN, "InvalidLoginRequest", "Log in from the console's own page");
    }
    let v = match read_json(body).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let ak = v.get("accessKey").and_then(|x| x.as_str()).unwrap_or("").trim().to_string();
    let sk = v.get("secretKey").and_then(|x| x.as_str()).unwrap_or("");
    let ok = st.cfg.creds.secret_for(&ak).is_some_and(|real| ct_eq(real.as_bytes(), sk.as_bytes()));
    // Temporary credentials (STS sessions) are refused: their secret alone is not enough
    // anywhere (requests must carry the session token), and a console session would outlive
    // neither check. The console takes long-term keys.
    let temporary = ok && st.cfg.creds.resolve(&ak).is_some_and(|k| k.session.is_some());
    if temporary {
        return json_error(
            StatusCode::FORBIDDEN,
            "InvalidLogin",
            "Temporary credentials (STS sessions) cannot log in to the console: use a long-term access key",
        );
    }
    if !ok || ak.is_empty() || sk.is_empty() {
        // Slows guessing down; says nothing about which half was wrong.
        tokio::time::sleep(Duration::from_millis(300)).await;
        return json_error(StatusCode::FORBIDDEN, "InvalidLogin", "The access key or the secret key is wrong");
    }
    let Some((token, csrf)) = c.start_session(&ak, sk) else {
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "TooManySessions",
            "Too many console sessions; retry later",
        );
    };
    let mut r = session_info(st, c, &Who { key: [0; 32], access_key: ak, csrf });
    r.headers_mut().insert(header::SET_COOKIE, cookie_header(st, &token, false));
    r
}

/// The base URL of share links (no trailing slash).
fn s3_base(st: &State, c: &Console, parts: &http::request::Parts) -> Option<String> {
    if let Some(u) = &c.opts.s3_url {
        return Some(u.trim_end_matches('/').to_string());
    }
    let port = c.opts.s3_port?;
    let host = hdr(parts, "host").unwrap_or("127.0.0.1");
    // The host name of `Host` (an IPv6 literal keeps its brackets).
    let name = if host.starts_with('[') {
        host.split_once(']').map_or(host, |(h, _)| &host[..h.len() + 1])
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    let scheme = if st.cfg.tls.is_some() { "https" } else { "http" };
    Some(format!("{scheme}://{name}:{port}"))
}

fn presign(
    st: &State,
    c: &Console,
    parts: &http::request::Parts,
    who: &Who,
    v: &serde_json::Value,
) -> Response<RespBody> {
    use s3hpc_sigv4::encode::uri_encode;
    let bucket = v.get("bucket").and_then(|x| x.as_str()).unwrap_or("");
    let key = v.get("key").and_then(|x| x.as_str()).unwrap_or("");
    let expires = v.get("expires").and_then(|x| x.as_u64()).unwrap_or(3600);
    if bucket.is_empty() || key.is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "InvalidArgument", "bucket and key are required");
    }
    if expires == 0 || expires > s3hpc_sigv4::MAX_PRESIGN_EXPIRES {
        return json_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            &format!("expires must be 1 to {} seconds (7 days)", s3hpc_sigv4::MAX_PRESIGN_EXPIRES),
        );
    }
    let Some(base) = s3_base(st, c, parts) else {
        return json_error(StatusCode::CONFLICT, "NoS3Endpoint", "This gateway has no HTTP S3 endpoint to share from");
    };
    let Some(secret) = st.cfg.creds.secret_for(&who.access_key) else { return not_logged_in() };
    let mut url = format!("{base}/{}/{}", uri_encode(bucket, false), uri_encode(key, true));
    if let Some(vid) = v.get("versionId").and_then(|x| x.as_str()).filter(|s| !s.is_empty()) {
        url.push_str("?versionId=");
        url.push_str(&uri_encode(vid, false));
    }
    let Ok(uri) = url.parse::<http::Uri>() else {
        return json_error(StatusCode::BAD_REQUEST, "InvalidArgument", "bucket or key do not make a URL");
    };
    let creds = s3hpc_core::Credentials::new(who.access_key.clone(), secret);
    let now = SystemTime::now();
    let signed = s3hpc_sigv4::presign(&Method::GET, &uri, &creds, &st.cfg.region, Duration::from_secs(expires), now);
    let until = now + Duration::from_secs(expires);
    json_response(StatusCode::OK, &serde_json::json!({ "url": signed, "expires": crate::util::iso8601(until) }))
}

async fn admin(st: &State, c: &Console, who: &Who, metrics: bool) -> Response<RespBody> {
    if !st.cfg.creds.account_for(&who.access_key).is_some_and(|a| a.admin) {
        return json_error(StatusCode::FORBIDDEN, "AccessDenied", "Only administrators see the gateway's health");
    }
    let Some(a) = &c.opts.admin else {
        return json_error(StatusCode::NOT_FOUND, "NoMetrics", "This gateway keeps no metrics");
    };
    if metrics {
        let text = a.metrics().await;
        return Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(header::CONTENT_LENGTH, text.len())
            .body(RespBody::full(text))
            .expect("valid response");
    }
    let ready = a.health().await;
    json_response(
        StatusCode::OK,
        &serde_json::json!({
            "live": true,
            "ready": ready.is_ok(),
            "why": ready.err(),
            "version": env!("CARGO_PKG_VERSION"),
        }),
    )
}

/// Administrators' data pages: accounts and keys, usage per bucket and account.
async fn admin_data(st: &State, c: &Console, who: &Who, usage: bool) -> Response<RespBody> {
    if !st.cfg.creds.account_for(&who.access_key).is_some_and(|a| a.admin) {
        return json_error(StatusCode::FORBIDDEN, "AccessDenied", "Only administrators see accounts and usage");
    }
    let Some(a) = &c.opts.admin else {
        return json_error(StatusCode::NOT_FOUND, "NoAdminApi", "This gateway has no admin API");
    };
    if usage {
        return match a.usage() {
            Some(v) => json_response(StatusCode::OK, &v),
            None => json_error(StatusCode::NOT_FOUND, "NoUsage", "This gateway computes no usage (--usage-interval 0)"),
        };
    }
    match a.accounts().await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", &e),
    }
}

enum KeyOp {
    List,
    Create(serde_json::Value),
    Revoke(String),
}

/// "My keys": the self-service keys of the POSIX user the session's account is bound to, as
/// `s3hpc credentials` run by that user manages them; only that user's keys, even for an
/// administrator (whose key administration is the admin API's).
async fn my_keys(st: &State, c: &Console, who: &Who, op: KeyOp) -> Response<RespBody> {
    let Some(keys) = c.opts.keys.clone() else {
        return json_error(
            StatusCode::NOT_FOUND,
            "NotEnabled",
            "This gateway offers no self-service keys (serve --user-keys)",
        );
    };
    let Some(uid) = st.cfg.creds.account_for(&who.access_key).and_then(|a| a.uid) else {
        return json_error(
            StatusCode::FORBIDDEN,
            "NoPosixUser",
            "Your account is not bound to a POSIX user: it has no self-service keys",
        );
    };
    let r = tokio::task::spawn_blocking(move || -> s3hpc_core::Result<serde_json::Value> {
        let info = |k: &s3hpc_core::creds::AccessKeyInfo| {
            serde_json::json!({
                "accessKey": k.access_key,
                "user": k.user,
                "description": k.description,
                "created": crate::util::iso8601(k.created),
                "expires": k.expires.map(crate::util::iso8601),
            })
        };
        let mine =
            |keys: &dyn s3hpc_core::creds::KeyAdmin| -> s3hpc_core::Result<Vec<s3hpc_core::creds::AccessKeyInfo>> {
                Ok(keys.list(uid)?.into_iter().filter(|k| k.uid == uid).collect())
            };
        match op {
            KeyOp::List => Ok(serde_json::json!({ "keys": mine(&*keys)?.iter().map(info).collect::<Vec<_>>() })),
            KeyOp::Create(v) => {
                let secs = match v.get("expiresSeconds") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(x) => Some(x.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                        s3hpc_core::Error::invalid_argument("expiresSeconds must be a whole number of seconds above 0")
                    })?),
                };
                let description = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                let (cred, k) = keys.create(uid, secs.map(Duration::from_secs), description)?;
                let mut j = info(&k);
                j["secretKey"] = serde_json::Value::from(cred.secret_key);
                Ok(j)
            }
            KeyOp::Revoke(ak) => {
                // Only one's own key, whoever one is.
                if !mine(&*keys)?.iter().any(|k| k.access_key == ak) {
                    return Err(s3hpc_core::Error::new(
                        s3hpc_core::ErrorCode::AccessDenied,
                        format!("{ak} is not one of your keys"),
                    ));
                }
                keys.revoke(uid, &ak)?;
                Ok(serde_json::json!({ "revoked": ak }))
            }
        }
    })
    .await;
    match r {
        Ok(Ok(v)) => json_response(StatusCode::OK, &v),
        Ok(Err(e)) => json_error(
            StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST),
            e.code.as_str(),
            &e.message,
        ),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", &e.to_string()),
    }
}

/// Headers a console S3 request may not carry to the S3 handler: its own authentication
/// (the session stands for it), the browser's cookies and origin, and the Host (so that the
/// request is path style whatever `--domain` says).
const STRIPPED: &[&str] = &[
    "authorization",
    "cookie",
    "origin",
    "referer",
    "host",
    "x-amz-content-sha256",
    "x-amz-decoded-content-length",
    "x-amz-security-token",
    "x-amz-date",
    CSRF_HEADER,
];

/// `/s3/<bucket>/<key>?<query>`: the S3 request as the session's account.
async fn proxy(
    st: &State,
    c: &Console,
    mut parts: http::request::Parts,
    body: ReqBody,
    req: &mut RequestRecord<'_>,
) -> Response<RespBody> {
    req.op = "Console";
    let mut resp = match c.session(st, &parts) {
        None => not_logged_in(),
        Some(_)
            if !matches!(parts.method, Method::GET | Method::HEAD | Method::PUT | Method::POST | Method::DELETE) =>
        {
            json_error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "Method not allowed")
        }
        Some(who) if !matches!(parts.method, Method::GET | Method::HEAD) && !csrf_ok(&parts, &who) => csrf_refused(),
        Some(who) => {
            let rest = &parts.uri.path()["/s3".len()..];
            let rest = if rest.is_empty() { "/" } else { rest };
            let target = match parts.uri.query() {
                Some(q) => format!("{rest}?{q}"),
                None => rest.to_string(),
            };
            match target.parse::<http::Uri>() {
                Err(_) => json_error(StatusCode::BAD_REQUEST, "InvalidURI", "Couldn't parse the specified URI."),
                Ok(uri) => {
                    parts.uri = uri;
                    for h in STRIPPED {
                        parts.headers.remove(*h);
                    }
                    parts.extensions.insert(Preauth { access_key: who.access_key });
                    let mut r = crate::handle_s3(st, parts, body, req).await;
                    if req.op == s3hpc_core::S3Op::GetObject.name() && r.status().is_success() {
                        // Never rendered in the console's origin: saved as a file.
                        let raw = target.split('?').next().unwrap_or("").rsplit('/').next().unwrap_or("");
                        let name = crate::util::decode_path(raw).unwrap_or_default();
                        let name = if name.is_empty() { "download".into() } else { name };
                        let v =
                            format!("attachment; filename*=UTF-8''{}", s3hpc_sigv4::encode::uri_encode(&name, false));
                        if let Ok(v) = HeaderValue::from_str(&v) {
                            r.headers_mut().insert(header::CONTENT_DISPOSITION, v);
                        }
                    }
                    r
                }
            }
        }
    };
    // Whatever an object holds, a browser must not run it as a page of the console's origin.
    resp.headers_mut().insert("content-security-policy", HeaderValue::from_static("sandbox; default-src 'none'"));
    for h in ["access-control-allow-origin", "access-control-allow-credentials", "access-control-expose-headers"] {
        resp.headers_mut().remove(h);
    }
    secure_headers(&mut resp);
    resp
}

/// Bytes of an asset (for tests).
#[cfg(test)]
pub(crate) fn asset_bytes(name: &str) -> Option<bytes::Bytes> {
    assets::get(name).map(|(b, _)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }

    #[test]
    fn tokens_are_random_and_url_safe() {
        let (a, b) = (random_token(), random_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn assets_are_built_in() {
        for n in ["index.html", "app.js", "style.css"] {
            assert!(asset_bytes(n).is_some_and(|b| !b.is_empty()), "{n}");
        }
        assert!(asset_bytes("../lib.rs").is_none());
    }

    #[test]
    fn cross_site_requests_are_recognised() {
        let mk = |pairs: &[(&str, &str)]| {
            let mut b = http::Request::builder().uri("/api/login");
            for (k, v) in pairs {
                b = b.header(*k, *v);
            }
            b.body(()).unwrap().into_parts().0
        };
        assert!(!cross_site(&mk(&[("host", "h:1")])));
        assert!(!cross_site(&mk(&[("host", "h:1"), ("origin", "http://h:1")])));
        assert!(cross_site(&mk(&[("host", "h:1"), ("origin", "http://evil:1")])));
        assert!(cross_site(&mk(&[("host", "h:1"), ("sec-fetch-site", "cross-site")])));
        assert!(!cross_site(&mk(&[("host", "h:1"), ("sec-fetch-site", "same-origin")])));
    }
}
