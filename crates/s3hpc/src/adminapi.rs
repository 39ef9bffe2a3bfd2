//! The admin API on the admin listener (`serve --admin-listen`, docs/CREDENTIALS.md, "The admin
//! API"): accounts of the users file and self-service keys (list, create, disable, enable,
//! rotate, remove) and usage per bucket and per account, for remote administration
//! (`s3hpc user ... --endpoint URL`, [`client`]).
//!
//! Every request under `/admin/v1/` is signed with SigV4 (service `s3`, the gateway's region,
//! the payload hash of the body it sends) by the key of an administrator: an `admin = true`
//! account of the users file, or a key given without an account (`--access-key`). Anyone else
//! gets 403 `AccessDenied`. Answers are JSON; errors are S3 error documents (XML).
//!
//! Usage is never computed per request: a background walk ([`Usage`]) lists every bucket with
//! `list_objects` as the gateway, paced to `--usage-ops` listing pages per second, every
//! `--usage-interval` seconds; requests read its last result and are told its age.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use s3hpc_core::caller::{self, Caller};
use s3hpc_core::{CredentialSet, DynStore, Error, ErrorCode, ListObjectsRequest};
use serde_json::{Value, json};

use crate::keystore::KeyStore;
use crate::serve::ServeArgs;
use crate::user::{EditError, NewAccount};

/// Largest request body read (JSON documents of a few fields).
pub const MAX_BODY: usize = 64 * 1024;

/// An admin API error: HTTP status, code, message.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }
    fn denied() -> Self {
        ApiError::new(403, "AccessDenied", "Access Denied")
    }
    fn no_such(ak: &str) -> Self {
        ApiError::new(404, "NoSuchEntity", format!("The user with name {ak} cannot be found."))
    }
    fn invalid(msg: impl Into<String>) -> Self {
        ApiError::new(400, "InvalidArgument", msg)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError { status: e.code.http_status(), code: e.code.as_str(), message: e.message }
    }
}

impl From<EditError> for ApiError {
    fn from(e: EditError) -> Self {
        match e {
            EditError::NoSuchKey(ak) => ApiError::no_such(&ak),
            EditError::Exists(ak) => {
                ApiError::new(409, "EntityAlreadyExists", format!("The user with name {ak} already exists."))
            }
            EditError::Invalid(why) => ApiError::invalid(why),
            EditError::Io(e) => ApiError::new(500, "InternalError", format!("{e:#}")),
        }
    }
}

/// The admin API of one gateway.
pub struct AdminApi {
    /// The live accounts (replaced whole after an edit of the users file).
    creds: CredentialSet,
    keys: Option<Arc<KeyStore>>,
    /// For re-reading the accounts as the gateway does at start (`--config`, `--access-key`).
    args: ServeArgs,
    accept: s3hpc_sigv4::Accept,
    /// One edit of the users file at a time (from this gateway).
    edit: tokio::sync::Mutex<()>,
    pub usage: Arc<Usage>,
}

impl AdminApi {
    /// The API, and its usage walk started in the background (unless `--usage-interval 0`).
    pub fn start(args: &ServeArgs, creds: CredentialSet, keys: Option<Arc<KeyStore>>, store: DynStore) -> Arc<Self> {
        let usage = Arc::new(Usage::default());
        if args.ops.usage_interval > 0 {
            let interval = Duration::from_secs(args.ops.usage_interval);
            tokio::spawn(usage.clone().run(store, interval, args.ops.usage_ops.max(1), creds.clone()));
        }
        let accept = s3hpc_sigv4::Accept { region: args.region.clone(), sigv2: false, domain: None };
        Arc::new(AdminApi { creds, keys, args: args.clone(), accept, edit: tokio::sync::Mutex::new(()), usage })
    }

    /// Answer one request: status, content type, body.
    pub async fn handle(&self, parts: &http::request::Parts, body: &[u8]) -> (u16, &'static str, String) {
        match self.route(parts, body).await {
            Ok(v) => (200, "application/json", format!("{v:#}\n")),
            Err(e) => {
                if e.status >= 500 {
                    tracing::warn!("admin API: {} {}: {}", parts.method, parts.uri.path(), e.message);
                }
                let mut s = String::from(s3hpc_http::xml::DECL);
                s.push_str("<Error>");
                s3hpc_http::xml::elem(&mut s, "Code", e.code);
                s3hpc_http::xml::elem(&mut s, "Message", &e.message);
                s3hpc_http::xml::elem(&mut s, "Resource", parts.uri.path());
                s.push_str("</Error>");
                (e.status, "application/xml", s)
            }
        }
    }

    /// Accounts and keys for the console's administrators' page.
    pub async fn accounts_json(&self) -> Result<Value, String> {
        self.list().await.map_err(|e| e.message)
    }

    /// Usage for the console (`None` with `--usage-interval 0`).
    pub fn usage_json(&self) -> Option<Value> {
        (self.args.ops.usage_interval > 0).then(|| self.usage.report(&self.creds))
    }

    /// Check the signature, the session token and that the key is an administrator's.
    fn authorize(&self, parts: &http::request::Parts, body: &[u8]) -> Result<String, ApiError> {
        let hash = s3hpc_sigv4::signer_sha256_hex(body);
        let v = s3hpc_sigv4::verify_service(parts, &self.creds, SystemTime::now(), &self.accept, "s3", &hash)?;
        let token = parts.headers.get("x-amz-security-token").and_then(|t| t.to_str().ok());
        self.creds.check_session_token(&v.access_key, token)?;
        let account = self.creds.account_for(&v.access_key).ok_or_else(ApiError::denied)?;
        if !account.admin {
            return Err(ApiError::denied());
        }
        Ok(v.access_key)
    }

    async fn route(&self, parts: &http::request::Parts, body: &[u8]) -> Result<Value, ApiError> {
        let who = self.authorize(parts, body)?;
        let path = parts.uri.path();
        let rest = path.strip_prefix("/admin/v1/").unwrap_or("");
        let segs: Vec<&str> = rest.split('/').collect();
        let m = &parts.method;
        use http::Method;
        let r = match (m, segs.as_slice()) {
            (&Method::GET, ["accounts"]) => self.list().await,
            (&Method::POST, ["accounts"]) => self.add(parse(body)?).await,
            (&Method::POST, ["keys"]) => self.add_key(parse(body)?).await,
            (&Method::DELETE, ["accounts", ak]) => self.remove(ak).await,
            (&Method::POST, ["accounts", ak, "disable"]) => self.set_disabled(ak, true).await,
            (&Method::POST, ["accounts", ak, "enable"]) => self.set_disabled(ak, false).await,
            (&Method::POST, ["accounts", ak, "rotate"]) => self.rotate(ak).await,
            (&Method::GET, ["usage"]) => Ok(self.usage.report(&self.creds)),
            (_, ["accounts"] | ["keys"] | ["usage"] | ["accounts", _] | ["accounts", _, _]) => Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "The specified method is not allowed against this resource.",
            )),
            _ => Err(ApiError::new(404, "NoSuchResource", format!("no admin API resource {path}"))),
        };
        if r.is_ok() && *m != Method::GET {
            tracing::info!(target: "s3hpc::access", admin = %who, "admin API: {m} {path}");
        }
        r
    }

    fn users_file(&self) -> Result<PathBuf, ApiError> {
        self.args.config.clone().ok_or_else(|| {
            ApiError::new(
                400,
                "InvalidRequest",
                "this gateway has no users file (serve --config): accounts can only be listed",
            )
        })
    }

    /// Run an edit of the users file (off the runtime, one at a time), then load the accounts
    /// again at once, as a reload would (every other gateway on the file reloads it within a
    /// second by itself).
    async fn edit<T: Send + 'static>(
        &self,
        f: impl FnOnce(&std::path::Path) -> Result<T, EditError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let path = self.users_file()?;
        let _one = self.edit.lock().await;
        let args = self.args.clone();
        let (out, set) = tokio::task::spawn_blocking(move || {
            let out = f(&path)?;
            let set = crate::serve::credentials(&args)
                .and_then(|(set, _, _)| crate::serve::check_identities(&args, &set).map(|_| set))
                .map_err(EditError::Io)?;
            Ok::<_, EditError>((out, set))
        })
        .await
        .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
        self.creds.replace(&set);
        Ok(out)
    }

    async fn list(&self) -> Result<Value, ApiError> {
        let file = match self.args.config.clone() {
            Some(p) => Some(
                tokio::task::spawn_blocking(move || crate::user::load_users(&p))
                    .await
                    .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))?
                    .map_err(|e| ApiError::new(500, "InternalError", format!("{e:#}")))?,
            ),
            None => None,
        };
        let mut accounts = Vec::new();
        let mut listed = std::collections::HashSet::new();
        for u in file.iter().flat_map(|f| f.users.iter()) {
            listed.insert(u.access_key.clone());
            let uid = crate::serve::posix_identity(u).ok().flatten().map(|i| i.uid);
            accounts.push(json!({
                "accessKey": u.access_key,
                "source": "users-file",
                "id": u.id.clone().unwrap_or_else(|| u.access_key.clone()),
                "name": u.name,
                "user": u.user,
                "uid": uid,
                "admin": u.admin.unwrap_or(false),
                "disabled": u.disabled.unwrap_or(false),
            }));
        }
        for k in self.creds.access_keys().into_iter().filter(|k| !listed.contains(k)) {
            let Some(a) = self.creds.account_for(&k) else { continue };
            accounts.push(json!({
                "accessKey": k, "source": "command-line", "id": a.id, "name": a.name, "user": null,
                "uid": a.uid, "admin": a.admin, "disabled": false,
            }));
        }
        let mut keys = Vec::new();
        if let Some(ks) = self.keys.clone() {
            let all = tokio::task::spawn_blocking(move || ks.admin_list())
                .await
                .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
            for k in all {
                keys.push(json!({
                    "accessKey": k.info.access_key,
                    "source": "key-store",
                    "user": k.info.user,
                    "uid": k.info.uid,
                    "description": k.info.description,
                    "created": iso(k.info.created),
                    "expires": k.info.expires.map(iso),
                    "expired": k.expired,
                    "disabled": k.disabled,
                }));
            }
        }
        Ok(json!({ "accounts": accounts, "keys": keys }))
    }

    async fn add(&self, n: NewAccount) -> Result<Value, ApiError> {
        let c = self.edit(move |p| crate::user::add_account(p, n)).await?;
        Ok(json!({ "accessKey": c.access_key, "secretKey": c.secret_key }))
    }

    async fn add_key(&self, n: NewKey) -> Result<Value, ApiError> {
        let ks = self.key_store()?;
        let lifetime =
            match n.expires.as_deref() {
                None => None,
                Some(e) => Some(crate::keystore::parse_duration(e).filter(|d| !d.is_zero()).ok_or_else(|| {
                    ApiError::invalid(format!("expires {e:?}: expected a duration such as 30d or 12h"))
                })?),
            };
        let (c, info) = tokio::task::spawn_blocking(move || {
            use s3hpc_core::creds::KeyAdmin;
            let uid = KeyStore::uid_of(&n.user)
                .ok_or_else(|| ApiError::invalid(format!("no such user `{}` (getpwnam)", n.user)))?;
            ks.create(uid, lifetime, &n.description).map_err(ApiError::from)
        })
        .await
        .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
        Ok(json!({
            "accessKey": c.access_key, "secretKey": c.secret_key, "user": info.user, "uid": info.uid,
            "expires": info.expires.map(iso),
        }))
    }

    fn key_store(&self) -> Result<Arc<KeyStore>, ApiError> {
        self.keys.clone().ok_or_else(|| {
            ApiError::new(
                501,
                "NotImplemented",
                "this gateway has no key store (self-service keys need the posix backend)",
            )
        })
    }

    /// Whether `ak` is an account of the users file.
    async fn in_file(&self, ak: &str) -> Result<bool, ApiError> {
        let Some(p) = self.args.config.clone() else { return Ok(false) };
        let ak = ak.to_string();
        tokio::task::spawn_blocking(move || {
            crate::user::load_users(&p).map(|f| f.users.iter().any(|u| u.access_key == ak))
        })
        .await
        .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))?
        .map_err(|e| ApiError::new(500, "InternalError", format!("{e:#}")))
    }

    /// The key store holding `ak`, if it does.
    async fn in_store(&self, ak: &str) -> Option<Arc<KeyStore>> {
        let ks = self.keys.clone()?;
        let ak = ak.to_string();
        let k = ks.clone();
        tokio::task::spawn_blocking(move || k.holds(&ak)).await.ok()?.then_some(ks)
    }

    async fn remove(&self, ak: &str) -> Result<Value, ApiError> {
        if self.in_file(ak).await? {
            let a = ak.to_string();
            self.edit(move |p| crate::user::remove_account(p, &a)).await?;
            return Ok(json!({ "removed": ak, "source": "users-file" }));
        }
        let ks = self.in_store(ak).await.ok_or_else(|| ApiError::no_such(ak))?;
        let a = ak.to_string();
        tokio::task::spawn_blocking(move || ks.remove(&a))
            .await
            .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
        Ok(json!({ "removed": ak, "source": "key-store" }))
    }

    async fn set_disabled(&self, ak: &str, off: bool) -> Result<Value, ApiError> {
        if self.in_file(ak).await? {
            let a = ak.to_string();
            self.edit(move |p| crate::user::set_account_disabled(p, &a, off)).await?;
            return Ok(json!({ "accessKey": ak, "source": "users-file", "disabled": off }));
        }
        let ks = self.in_store(ak).await.ok_or_else(|| ApiError::no_such(ak))?;
        let a = ak.to_string();
        tokio::task::spawn_blocking(move || ks.set_disabled(&a, off))
            .await
            .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
        Ok(json!({ "accessKey": ak, "source": "key-store", "disabled": off }))
    }

    async fn rotate(&self, ak: &str) -> Result<Value, ApiError> {
        if !self.in_file(ak).await? {
            return Err(if self.in_store(ak).await.is_some() {
                ApiError::invalid("self-service keys are not rotated: make a new one and remove this one")
            } else {
                ApiError::no_such(ak)
            });
        }
        let a = ak.to_string();
        let secret = self.edit(move |p| crate::user::rotate_account(p, &a)).await?;
        Ok(json!({ "accessKey": ak, "secretKey": secret }))
    }
}

/// `POST /admin/v1/keys`: a self-service key for a POSIX user.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewKey {
    user: String,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    description: String,
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::new(400, "MalformedJSON", format!("The request body is not a valid JSON document: {e}")))
}

fn iso(t: SystemTime) -> String {
    s3hpc_sigv4::encode::iso8601(t)
}

/// One bucket's usage.
#[derive(Debug, Clone)]
pub struct BucketUsage {
    pub name: String,
    /// The bucket owner's canonical id.
    pub owner: Option<String>,
    pub objects: u64,
    pub bytes: u64,
    /// Why the bucket was not walked to its end (its counts are then partial).
    pub error: Option<String>,
}

/// The result of one walk.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub finished: SystemTime,
    pub took: Duration,
    pub buckets: Vec<BucketUsage>,
}

/// Usage per bucket and account: the last completed walk over every bucket.
#[derive(Default)]
pub struct Usage {
    last: RwLock<Option<Arc<Snapshot>>>,
    running: AtomicBool,
}

impl Usage {
    /// Walk now and then every `interval`, pacing listing pages to `ops` per second.
    async fn run(self: Arc<Self>, store: DynStore, interval: Duration, ops: u32, creds: CredentialSet) {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.running.store(true, Ordering::Release);
            let snap = walk(&store, ops, &creds).await;
            *self.last.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(snap));
            self.running.store(false, Ordering::Release);
        }
    }

    /// The last walk's result (none before the first one ends).
    pub fn last(&self) -> Option<Arc<Snapshot>> {
        self.last.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The JSON answer of `GET /admin/v1/usage`.
    pub fn report(&self, creds: &CredentialSet) -> Value {
        let running = self.running.load(Ordering::Acquire);
        let Some(s) = self.last() else {
            return json!({ "computedAt": null, "ageSeconds": null, "running": running, "buckets": [], "accounts": [] });
        };
        let age = SystemTime::now().duration_since(s.finished).unwrap_or_default();
        let mut accounts: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
        let buckets: Vec<Value> = s
            .buckets
            .iter()
            .map(|b| {
                let owner = b.owner.clone().unwrap_or_default();
                let e = accounts.entry(owner).or_default();
                e.0 += 1;
                e.1 += b.objects;
                e.2 += b.bytes;
                json!({ "name": b.name, "owner": b.owner, "objects": b.objects, "bytes": b.bytes,
                        "complete": b.error.is_none(), "error": b.error })
            })
            .collect();
        let accounts: Vec<Value> = accounts
            .into_iter()
            .map(|(id, (n, o, b))| {
                json!({ "id": if id.is_empty() { Value::Null } else { Value::from(id.clone()) },
                        "name": creds.account_name(&id), "buckets": n, "objects": o, "bytes": b })
            })
            .collect();
        json!({
            "computedAt": iso(s.finished),
            "ageSeconds": age.as_secs(),
            "walkMilliseconds": s.took.as_millis() as u64,
            "running": running,
            "buckets": buckets,
            "accounts": accounts,
        })
    }
}

/// The caller the walk lists as: an administrator (the gateway itself), so S3 authorization
/// lets it see every bucket.
fn gateway_caller() -> Arc<Caller> {
    s3hpc_http::lifecycle::runner::internal_caller()
}

/// With `--identity posix` the store needs an identity to act as: the gateway's own.
fn gateway_identity() -> s3hpc_core::identity::Identity {
    s3hpc_core::identity::Identity {
        uid: rustix::process::geteuid().as_raw(),
        gid: rustix::process::getegid().as_raw(),
        groups: vec![],
    }
}

/// One walk over every bucket: `list_objects` pages of 1,000 keys, at most `ops` a second.
async fn walk(store: &DynStore, ops: u32, _creds: &CredentialSet) -> Snapshot {
    let t0 = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / f64::from(ops));
    let mut next = tokio::time::Instant::now();
    let mut pace = || {
        let at = next;
        next = at.max(tokio::time::Instant::now()) + gap;
        tokio::time::sleep_until(at)
    };
    let me = Some(gateway_caller());
    let id = Some(gateway_identity());
    let mut out = Vec::new();
    let buckets = match s3hpc_core::identity::scope(id.clone(), caller::scope(me.clone(), store.list_buckets())).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("usage: listing the buckets failed: {e}");
            Vec::new()
        }
    };
    for b in buckets {
        let acl =
            s3hpc_core::identity::scope(id.clone(), caller::scope(me.clone(), store.get_bucket_config(&b.name, "acl")))
                .await;
        let owner = acl.ok().flatten().and_then(|a| {
            let a = String::from_utf8_lossy(&a);
            a.split_once("<Owner>")
                .and_then(|(_, r)| r.split_once("<ID>"))
                .and_then(|(_, r)| r.split_once("</ID>"))
                .map(|(id, _)| id.to_string())
        });
        let mut u = BucketUsage { name: b.name.clone(), owner, objects: 0, bytes: 0, error: None };
        let mut after: Option<String> = None;
        loop {
            pace().await;
            let req = ListObjectsRequest {
                prefix: String::new(),
                delimiter: None,
                start_after: after.clone(),
                max_keys: 1000,
            };
            let page =
                s3hpc_core::identity::scope(id.clone(), caller::scope(me.clone(), store.list_objects(&b.name, req)));
            match page.await {
                Ok(page) => {
                    u.objects += page.objects.len() as u64;
                    u.bytes += page.objects.iter().map(|o| o.size).sum::<u64>();
                    let last = page.next_marker.clone().or_else(|| page.objects.last().map(|o| o.key.clone()));
                    if !page.is_truncated || last.is_none() {
                        break;
                    }
                    after = last;
                }
                Err(e) => {
                    if e.code != ErrorCode::NoSuchBucket {
                        u.error = Some(format!("{}: {}", e.code.as_str(), e.message));
                    }
                    break;
                }
            }
        }
        out.push(u);
    }
    Snapshot { finished: SystemTime::now(), took: t0.elapsed(), buckets: out }
}

/// `s3hpc user ... --endpoint URL`: the same commands through the admin API.
pub mod client {
    use std::io::Write;
    use std::time::SystemTime;

    use anyhow::{Context, bail};
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::user::{Cmd, Remote};

    /// Send one signed request; the JSON answer, or the error document's code and message.
    pub async fn call(r: &Remote, method: &str, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let endpoint = r.endpoint.as_deref().context("--endpoint")?;
        let hostport = endpoint
            .strip_prefix("http://")
            .with_context(|| format!("--endpoint {endpoint}: expected http://HOST:PORT (the admin listener)"))?
            .trim_end_matches('/');
        let (Some(ak), Some(sk)) = (r.admin_access_key.clone(), r.admin_secret_key.clone()) else {
            bail!(
                "--endpoint needs an administrator's key: --admin-access-key and --admin-secret-key (or S3HPC_ADMIN_ACCESS_KEY / S3HPC_ADMIN_SECRET_KEY)"
            );
        };
        let data = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let uri: http::Uri = format!("http://{hostport}{path}").parse().context("the request URI")?;
        let method = http::Method::from_bytes(method.as_bytes())?;
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::HOST, http::HeaderValue::from_str(hostport)?);
        if !data.is_empty() {
            headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        }
        let creds = s3hpc_core::Credentials::new(ak, sk);
        let hash = s3hpc_sigv4::signer_sha256_hex(&data);
        s3hpc_sigv4::sign(&method, &uri, &mut headers, &creds, &r.region, &hash, SystemTime::now());
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        for (k, v) in &headers {
            req.push_str(&format!("{k}: {}\r\n", v.to_str()?));
        }
        req.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", data.len()));
        let mut s =
            tokio::net::TcpStream::connect(hostport).await.with_context(|| format!("connecting to {hostport}"))?;
        s.write_all(req.as_bytes()).await?;
        s.write_all(&data).await?;
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).await?;
        let split = resp.windows(4).position(|w| w == b"\r\n\r\n").context("no answer from the admin listener")?;
        let head = String::from_utf8_lossy(&resp[..split]).into_owned();
        let text = String::from_utf8_lossy(&resp[split + 4..]).into_owned();
        let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        if status == 200 {
            return serde_json::from_str(&text).context("the admin API's answer is not JSON");
        }
        let tag = |t: &str| {
            text.split_once(&format!("<{t}>"))
                .and_then(|(_, r)| r.split_once(&format!("</{t}>")))
                .map(|(v, _)| v.to_string())
        };
        match (tag("Code"), tag("Message")) {
            (Some(c), Some(m)) => bail!("{status} {c}: {m}"),
            _ => bail!("{head}\n{text}"),
        }
    }

    fn s(v: &Value) -> String {
        match v {
            Value::Null => "-".into(),
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    pub fn run_user(r: Remote, cmd: Cmd) -> anyhow::Result<()> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(run(r, cmd))
    }

    async fn run(r: Remote, cmd: Cmd) -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        match cmd {
            Cmd::Add { account, user, uid, gid, groups, admin, id, name, access_key, .. } => {
                let n =
                    crate::user::NewAccount { name: name.or(account), user, uid, gid, groups, admin, id, access_key };
                let v = call(&r, "POST", "/admin/v1/accounts", Some(serde_json::to_value(n)?)).await?;
                writeln!(out, "access key: {}\nsecret key: {}", s(&v["accessKey"]), s(&v["secretKey"]))?;
            }
            Cmd::AddKey { login, expires, description, .. } => {
                let v = call(
                    &r,
                    "POST",
                    "/admin/v1/keys",
                    Some(json!({ "user": login, "expires": expires, "description": description })),
                )
                .await?;
                writeln!(
                    out,
                    "AccessKeyId: {}\nSecretAccessKey: {}\nExpiration: {}\nUser: {} (uid {})",
                    s(&v["accessKey"]),
                    s(&v["secretKey"]),
                    s(&v["expires"]),
                    s(&v["user"]),
                    s(&v["uid"])
                )?;
            }
            Cmd::List { .. } => {
                let v = call(&r, "GET", "/admin/v1/accounts", None).await?;
                writeln!(
                    out,
                    "{:<22} {:<10} {:<16} {:>6}  {:<6} {:<8} DETAILS",
                    "ACCESS_KEY", "SOURCE", "USER", "UID", "ADMIN", "STATE"
                )?;
                for a in v["accounts"].as_array().into_iter().flatten() {
                    let state = if a["disabled"] == true { "disabled" } else { "enabled" };
                    writeln!(
                        out,
                        "{:<22} {:<10} {:<16} {:>6}  {:<6} {:<8} id={} name={}",
                        s(&a["accessKey"]),
                        s(&a["source"]),
                        s(&a["user"]),
                        s(&a["uid"]),
                        s(&a["admin"]),
                        state,
                        s(&a["id"]),
                        s(&a["name"])
                    )?;
                }
                for k in v["keys"].as_array().into_iter().flatten() {
                    let state = if k["disabled"] == true {
                        "disabled"
                    } else if k["expired"] == true {
                        "expired"
                    } else {
                        "enabled"
                    };
                    writeln!(
                        out,
                        "{:<22} {:<10} {:<16} {:>6}  {:<6} {:<8} expires={} description={}",
                        s(&k["accessKey"]),
                        s(&k["source"]),
                        s(&k["user"]),
                        s(&k["uid"]),
                        "false",
                        state,
                        s(&k["expires"]),
                        s(&k["description"])
                    )?;
                }
            }
            Cmd::Remove { access_key, .. } => {
                call(&r, "DELETE", &format!("/admin/v1/accounts/{access_key}"), None).await?;
                writeln!(out, "removed {access_key}")?;
            }
            Cmd::Rotate { access_key, .. } => {
                let v = call(&r, "POST", &format!("/admin/v1/accounts/{access_key}/rotate"), None).await?;
                writeln!(out, "access key: {access_key}\nsecret key: {}", s(&v["secretKey"]))?;
            }
            Cmd::Disable { access_key, .. } => {
                call(&r, "POST", &format!("/admin/v1/accounts/{access_key}/disable"), None).await?;
                writeln!(out, "disabled {access_key}")?;
            }
            Cmd::Enable { access_key, .. } => {
                call(&r, "POST", &format!("/admin/v1/accounts/{access_key}/enable"), None).await?;
                writeln!(out, "enabled {access_key}")?;
            }
            Cmd::Usage { .. } => {
                let v = call(&r, "GET", "/admin/v1/usage", None).await?;
                if v["computedAt"].is_null() {
                    writeln!(out, "usage: the first walk has not finished yet")?;
                    return Ok(());
                }
                writeln!(
                    out,
                    "computed at {} ({} s ago, walk took {} ms)",
                    s(&v["computedAt"]),
                    s(&v["ageSeconds"]),
                    s(&v["walkMilliseconds"])
                )?;
                writeln!(out, "{:<40} {:<24} {:>12} {:>16}", "BUCKET", "OWNER", "OBJECTS", "BYTES")?;
                for b in v["buckets"].as_array().into_iter().flatten() {
                    let partial = if b["complete"] == false { " (partial)" } else { "" };
                    writeln!(
                        out,
                        "{:<40} {:<24} {:>12} {:>16}{partial}",
                        s(&b["name"]),
                        s(&b["owner"]),
                        s(&b["objects"]),
                        s(&b["bytes"])
                    )?;
                }
                writeln!(out, "{:<40} {:<24} {:>12} {:>16}", "ACCOUNT", "NAME", "OBJECTS", "BYTES")?;
                for a in v["accounts"].as_array().into_iter().flatten() {
                    writeln!(
                        out,
                        "{:<40} {:<24} {:>12} {:>16}",
                        s(&a["id"]),
                        s(&a["name"]),
                        s(&a["objects"]),
                        s(&a["bytes"])
                    )?;
                }
            }
        }
        Ok(())
    }
}
