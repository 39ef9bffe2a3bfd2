//! s3hpc-client: an S3 HTTP client implementing [`s3hpc_core::Store`].
//!
//! Every Store operation maps to its S3 REST call (path-style or virtual-host addressing),
//! signed with SigV4 (`UNSIGNED-PAYLOAD`, so bodies stream without a hashing pass). Request and
//! response bodies stream; connections are kept alive in a pool sized for hundreds of
//! concurrent requests. `https://` endpoints use rustls (the `tls` feature, on by default; see
//! [`TlsOptions`] for what is trusted).
//!
//! Mapping notes: a `Content-Type: binary/octet-stream` answer (S3's default) reads back as
//! "no content type"; `ObjectInfo::part_sizes` holds one entry per part when the server sends
//! `x-amz-mp-parts-count` (sizes 0: HTTP does not carry them unless the server adds
//! `x-s3hpc-part-sizes`); `tag_count` comes from `x-amz-tagging-count` when the server sends it.
//!
//! Where plain S3 responses lack a field the Store seam returns (the size after CopyObject or
//! CompleteMultipartUpload, the source size of a whole-object UploadPartCopy), the client asks
//! with one extra HEAD.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use s3hpc_core::*;
use s3hpc_sigv4::encode::{parse_amz_date, percent_decode, uri_encode, uri_encode_into};

mod chunked;
mod lock;
mod spread;
#[cfg(feature = "tls")]
mod tls;
pub mod xml;

mod errors;
mod mapping;
mod store;
mod upload;
use {errors::*, mapping::*, upload::*};

#[cfg(feature = "tls")]
pub use tls::TlsOptions;

/// TLS options (this build has no TLS: only `http://` endpoints work).
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub ca_bundle: Option<std::path::PathBuf>,
    pub insecure: bool,
}

#[cfg(not(feature = "tls"))]
impl TlsOptions {
    pub fn from_env() -> TlsOptions {
        TlsOptions::default()
    }
}

#[cfg(feature = "tls")]
type Connector = tls::Connector;
#[cfg(not(feature = "tls"))]
type Connector = spread::Spread<HttpConnector>;

use xml::{Node, elem};

/// Where and how to reach an S3 endpoint.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `http://host:port` or `https://host:port` (an optional path prefix is kept). A
    /// comma-separated list names several endpoints of one service (gateways on one shared
    /// root): requests are addressed to the first, and each new connection goes to the next
    /// endpoint in turn (same scheme and path prefix for all; over TLS every endpoint must hold
    /// a certificate for the first one's name).
    pub endpoint: String,
    pub credentials: Credentials,
    pub region: String,
    /// Address buckets as `bucket.host` instead of `host/bucket`.
    pub virtual_host: bool,
}

/// An S3 client over HTTP; cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct S3Client {
    inner: Arc<Inner>,
}

type ReqBody = UnsyncBoxBody<Bytes, std::io::Error>;

struct Inner {
    http: Client<Connector, ReqBody>,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    base_path: String,
    creds: Credentials,
    region: String,
    virtual_host: bool,
    /// Whether the server is s3hpc (it honours `x-amz-write-offset-bytes` and RenameObject,
    /// of prefixes too; see `appends`).
    server_s3hpc: tokio::sync::OnceCell<bool>,
}

/// Upper bound of hyper's adaptive read buffer per connection. The default (~400 KiB) halves
/// large-GET throughput on loopback (measured 242 vs 477 MB/s for 16 MiB objects).
const READ_BUF_MAX: usize = 4 << 20;

/// The Content-Type S3 reports for objects stored without one.
const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// Largest XML response read into memory.
const MAX_XML: usize = 64 * 1024 * 1024;

fn hname(s: &'static str) -> HeaderName {
    HeaderName::from_static(s)
}

fn hval(v: &str) -> Result<HeaderValue> {
    HeaderValue::from_bytes(v.as_bytes())
        .map_err(|_| Error::invalid_argument(format!("value {v:?} cannot be sent in an HTTP header")))
}

/// A request about to be sent.
struct Req<'a> {
    method: Method,
    bucket: Option<&'a str>,
    key: Option<&'a str>,
    query: String,
    headers: HeaderMap,
    body: Body,
    /// Exact body length when known (sets Content-Length; enforced on streams).
    length: Option<u64>,
    /// The error a bodiless 404 means.
    not_found: ErrorCode,
}

impl<'a> Req<'a> {
    fn new(method: Method, bucket: Option<&'a str>, key: Option<&'a str>) -> Self {
        let not_found = if key.is_some() { ErrorCode::NoSuchKey } else { ErrorCode::NoSuchBucket };
        Req {
            method,
            bucket,
            key,
            query: String::new(),
            headers: HeaderMap::new(),
            body: Body::Empty,
            length: None,
            not_found,
        }
    }

    /// Append `name=value` (both encoded) to the query; `value` None gives a bare `name`.
    fn q(mut self, name: &str, value: Option<&str>) -> Self {
        if !self.query.is_empty() {
            self.query.push('&');
        }
        uri_encode_into(name.as_bytes(), false, &mut self.query);
        if let Some(v) = value {
            self.query.push('=');
            uri_encode_into(v.as_bytes(), false, &mut self.query);
        }
        self
    }

    fn h(mut self, name: &'static str, value: &str) -> Result<Self> {
        self.headers.insert(hname(name), hval(value)?);
        Ok(self)
    }

    fn body(mut self, body: Body, length: Option<u64>) -> Self {
        self.body = body;
        self.length = length;
        self
    }

    fn xml_body(self, doc: String) -> Result<Self> {
        let md5 = B64.encode(s3hpc_core::checksum::md5(doc.as_bytes()));
        let len = doc.len() as u64;
        self.h("content-md5", &md5)?
            .h("content-type", "application/xml")
            .map(|r| r.body(Body::from(doc.into_bytes()), Some(len)))
    }
}

impl S3Client {
    /// A client; `https://` endpoints trust the system roots plus `AWS_CA_BUNDLE` if set.
    pub fn new(cfg: ClientConfig) -> Result<S3Client> {
        S3Client::with_tls(cfg, &TlsOptions::from_env())
    }

    /// A client with explicit TLS options (used by `https://` endpoints only).
    pub fn with_tls(cfg: ClientConfig, tls_opts: &TlsOptions) -> Result<S3Client> {
        S3Client::build(cfg, tls_opts, 4096)
    }

    /// A client that opens a new connection for every request (none is kept alive), so a list
    /// of endpoints takes turns per request instead of per connection: for tests that treat
    /// several gateways on one shared root as one store (each request, even of one sequential
    /// caller, goes to the next gateway). Slower; not for benchmarks.
    pub fn alternating(cfg: ClientConfig) -> Result<S3Client> {
        S3Client::build(cfg, &TlsOptions::from_env(), 0)
    }

    fn build(cfg: ClientConfig, tls_opts: &TlsOptions, idle_per_host: usize) -> Result<S3Client> {
        let mut list = cfg.endpoint.split(',').map(str::trim).filter(|e| !e.is_empty());
        let first = list.next().unwrap_or("");
        let uri: Uri =
            first.parse().map_err(|e| Error::invalid_argument(format!("endpoint {first:?} is not a URL: {e}")))?;
        let mut others = Vec::new();
        for e in list {
            let u: Uri =
                e.parse().map_err(|err| Error::invalid_argument(format!("endpoint {e:?} is not a URL: {err}")))?;
            if u.scheme() != uri.scheme() || u.path().trim_end_matches('/') != uri.path().trim_end_matches('/') {
                return Err(Error::invalid_argument(format!(
                    "endpoint {e:?}: every endpoint of a list needs the first one's scheme and path ({first:?})"
                )));
            }
            others.push(
                u.authority().cloned().ok_or_else(|| Error::invalid_argument(format!("endpoint {e:?} has no host")))?,
            );
        }
        let scheme = uri.scheme().cloned().unwrap_or(http::uri::Scheme::HTTP);
        let https = scheme == http::uri::Scheme::HTTPS;
        if !https && scheme != http::uri::Scheme::HTTP {
            return Err(Error::invalid_argument(format!(
                "endpoint {:?}: the scheme must be http:// or https://",
                cfg.endpoint
            )));
        }
        #[cfg(not(feature = "tls"))]
        if https {
            return Err(Error::not_implemented(format!(
                "endpoint {:?}: this build has no TLS (the s3hpc-client `tls` feature is off)",
                cfg.endpoint
            )));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| Error::invalid_argument(format!("endpoint {:?} has no host", cfg.endpoint)))?;
        let base_path = uri.path().trim_end_matches('/').to_string();
        #[cfg(feature = "tls")]
        let mut conn = HttpConnector::new_with_resolver(tls::VhostResolver::new(authority.host(), cfg.virtual_host));
        #[cfg(not(feature = "tls"))]
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        conn.set_keepalive(Some(Duration::from_secs(60)));
        conn.set_connect_timeout(Some(Duration::from_secs(10)));
        #[cfg(feature = "tls")]
        let conn = {
            conn.enforce_http(false);
            tls::connector(spread::Spread::new(conn, others), tls_opts, https)?
        };
        #[cfg(not(feature = "tls"))]
        let conn = {
            let _ = tls_opts;
            spread::Spread::new(conn, others)
        };
        let http = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(idle_per_host)
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .http1_max_buf_size(READ_BUF_MAX)
            .build(conn);
        Ok(S3Client {
            inner: Arc::new(Inner {
                http,
                scheme,
                authority,
                base_path,
                creds: cfg.credentials,
                region: cfg.region,
                virtual_host: cfg.virtual_host,
                server_s3hpc: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// A presigned URL for an object (GET or PUT by anyone holding it, for `expires`).
    pub fn presign_object(&self, method: Method, bucket: &str, key: &str, expires: Duration) -> Result<String> {
        let (uri, _) = self.uri_for(bucket.into(), Some(key), "")?;
        Ok(s3hpc_sigv4::presign(&method, &uri, &self.inner.creds, &self.inner.region, expires, SystemTime::now()))
    }

    fn uri_for(&self, bucket: Option<&str>, key: Option<&str>, query: &str) -> Result<(Uri, String)> {
        let i = &self.inner;
        let mut path =
            String::with_capacity(i.base_path.len() + 2 + bucket.map_or(0, str::len) + key.map_or(0, |k| k.len() + 8));
        path.push_str(&i.base_path);
        let host;
        match bucket {
            Some(b) if i.virtual_host => {
                host = format!("{b}.{}", i.authority);
                path.push('/');
            }
            Some(b) => {
                host = i.authority.to_string();
                path.push('/');
                uri_encode_into(b.as_bytes(), false, &mut path);
                if key.is_some() {
                    path.push('/');
                }
            }
            None => {
                host = i.authority.to_string();
                path.push('/');
            }
        }
        if let Some(k) = key {
            uri_encode_into(k.as_bytes(), true, &mut path);
        }
        if !query.is_empty() {
            path.push('?');
            path.push_str(query);
        }
        // Over TLS a virtual-host request names the bucket host in the URI, so SNI and the
        // certificate check use it; the resolver still connects to the endpoint's address.
        let authority = if i.virtual_host && bucket.is_some() && i.scheme == http::uri::Scheme::HTTPS {
            http::uri::Authority::try_from(host.as_str())
                .map_err(|e| Error::invalid_argument(format!("bucket host {host:?}: {e}")))?
        } else {
            i.authority.clone()
        };
        let uri = Uri::builder()
            .scheme(i.scheme.clone())
            .authority(authority)
            .path_and_query(path)
            .build()
            .map_err(|e| Error::invalid_argument(format!("cannot build a request URI: {e}")))?;
        Ok((uri, host))
    }

    /// Send a request; non-2xx answers become errors.
    async fn send(&self, r: Req<'_>) -> Result<Response<Incoming>> {
        let not_found = r.not_found;
        let is_head = r.method == Method::HEAD;
        let resp = self.exchange(r).await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let hdr_code = resp.headers().get("x-amz-error-code").and_then(|v| v.to_str().ok()).and_then(ErrorCode::parse);
        let marker = (hstr(resp.headers(), "x-amz-delete-marker") == Some("true"))
            .then(|| header_text(resp.headers(), "x-amz-version-id").unwrap_or_else(|| "null".into()));
        let body = if is_head { Bytes::new() } else { read_body(resp.into_body(), 1 << 20).await.unwrap_or_default() };
        let mut e = error_from(status, &body, hdr_code, not_found);
        e.delete_marker = marker;
        Err(e)
    }

    /// Sign and send a request; the answer whatever its status.
    async fn exchange(&self, r: Req<'_>) -> Result<Response<Incoming>> {
        let (uri, host) = self.uri_for(r.bucket, r.key, &r.query)?;
        let mut headers = r.headers;
        headers.insert(http::header::HOST, hval(&host)?);
        let body = match (r.body, r.length) {
            (Body::Empty, _) => Empty::new().map_err(|n| match n {}).boxed_unsync(),
            (Body::Bytes(b), _) => Full::new(b).map_err(|n| match n {}).boxed_unsync(),
            (other, len) => {
                let s = other.into_stream();
                let s = match len {
                    Some(n) => chunked::exact_length(s, n),
                    None => s,
                };
                StreamBody::new(s.map_ok(Frame::data)).boxed_unsync()
            }
        };
        if let Some(n) = r.length
            && (n > 0 || matches!(r.method, Method::PUT | Method::POST))
        {
            headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(n));
        }
        let payload = headers
            .get("x-amz-content-sha256")
            .and_then(|v| v.to_str().ok())
            .unwrap_or(s3hpc_sigv4::UNSIGNED_PAYLOAD)
            .to_string();
        s3hpc_sigv4::sign(
            &r.method,
            &uri,
            &mut headers,
            &self.inner.creds,
            &self.inner.region,
            &payload,
            SystemTime::now(),
        );
        let mut req = Request::new(body);
        *req.method_mut() = r.method;
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        self.inner.http.request(req).await.map_err(transport_error)
    }

    /// Send and parse an XML answer; a 200 carrying an `<Error>` document is an error.
    async fn send_xml(&self, r: Req<'_>) -> Result<(HeaderMap, Node)> {
        let resp = self.send(r).await?;
        let (parts, body) = resp.into_parts();
        let body = read_body(body, MAX_XML).await?;
        let node = xml::parse(&body)?;
        if node.name == "Error" {
            return Err(error_from(StatusCode::INTERNAL_SERVER_ERROR, &body, None, ErrorCode::InternalError));
        }
        Ok((parts.headers, node))
    }

    async fn send_empty(&self, r: Req<'_>) -> Result<HeaderMap> {
        let resp = self.send(r).await?;
        let (parts, body) = resp.into_parts();
        // Drain so the connection goes back to the pool.
        let _ = read_body(body, MAX_XML).await?;
        Ok(parts.headers)
    }

    /// Send the object PUT `r` (PutObject, or an append) with `req`'s metadata, tags,
    /// Content-MD5, conditions and checksum headers and `body`; the answer's headers and the
    /// bytes sent.
    async fn send_put(&self, mut r: Req<'_>, req: PutObjectRequest, body: Body) -> Result<(HeaderMap, u64)> {
        add_meta(&mut r.headers, &req.meta)?;
        if !req.tags.is_empty() {
            r = r.h("x-amz-tagging", &tags_query(&req.tags))?;
        }
        if let Some(m) = req.content_md5 {
            r = r.h("content-md5", &B64.encode(m))?;
        }
        add_conditions(&mut r.headers, &req.conditions, "")?;
        for (n, v) in lock::headers(&req.lock) {
            r = r.h(n, &v)?;
        }
        let plan = checksum_headers(&mut r.headers, &req.checksum)?;
        let sent = Arc::new(AtomicU64::new(0));
        let r = upload_body(r, body, req.content_length, plan, sent.clone())?;
        let h = self.send_empty(r).await?;
        Ok((h, sent.load(Ordering::Relaxed)))
    }

    fn object_req<'a>(&self, method: Method, bucket: &'a str, key: &'a str, req: &GetObjectRequest) -> Result<Req<'a>> {
        let mut r = Req::new(method, Some(bucket), Some(key)).h("x-amz-checksum-mode", "ENABLED")?;
        if let Some(n) = req.part_number {
            r = r.q("partNumber", Some(&n.to_string()));
        }
        if let Some(range) = req.range {
            let v = match range {
                ByteRange::FromTo(a, b) => format!("bytes={a}-{b}"),
                ByteRange::From(a) => format!("bytes={a}-"),
                ByteRange::Suffix(n) => format!("bytes=-{n}"),
            };
            r = r.h("range", &v)?;
        }
        add_conditions(&mut r.headers, &req.conditions, "")?;
        if let Some(v) = &req.version_id {
            r = r.q("versionId", Some(v));
        }
        Ok(r)
    }

    async fn head_size(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectInfo> {
        let req = GetObjectRequest { version_id: version_id.map(str::to_owned), ..Default::default() };
        let r = self.object_req(Method::HEAD, bucket, key, &req)?;
        let resp = self.send(r).await?;
        Ok(object_info(key, resp.status(), resp.headers()).0)
    }

    /// A `?tagging` request, of version `v` when given.
    fn tagging_req<'a>(method: Method, bucket: &'a str, key: Option<&'a str>, v: Option<&'a str>) -> Req<'a> {
        let mut r = Req::new(method, Some(bucket), key).q("tagging", None);
        if let Some(v) = v {
            r = r.q("versionId", Some(v));
        }
        r
    }

    /// The tags and the answer's `x-amz-version-id` (`null` and none: no version id).
    async fn tagging_get(&self, bucket: &str, key: Option<&str>, v: Option<&str>) -> Result<ObjectTagging> {
        let mut r = Self::tagging_req(Method::GET, bucket, key, v);
        if key.is_none() {
            r.not_found = ErrorCode::NoSuchBucket;
        }
        let (h, n) = self.send_xml(r).await?;
        let set = n.child("TagSet").unwrap_or(&n);
        let tags = set
            .children("Tag")
            .map(|t| (t.text_of("Key").unwrap_or("").to_string(), t.text_of("Value").unwrap_or("").to_string()))
            .collect();
        Ok(ObjectTagging { tags, version_id: version_of(&h) })
    }

    async fn tagging_put(
        &self,
        bucket: &str,
        key: Option<&str>,
        v: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        let mut doc = String::from("<Tagging><TagSet>");
        for (k, v) in &tags {
            doc.push_str("<Tag>");
            elem(&mut doc, "Key", k);
            elem(&mut doc, "Value", v);
            doc.push_str("</Tag>");
        }
        doc.push_str("</TagSet></Tagging>");
        let r = Self::tagging_req(Method::PUT, bucket, key, v).xml_body(doc)?;
        self.send_empty(r).await.map(|h| version_of(&h))
    }

    async fn tagging_delete(&self, bucket: &str, key: Option<&str>, v: Option<&str>) -> Result<Option<String>> {
        let r = Self::tagging_req(Method::DELETE, bucket, key, v);
        self.send_empty(r).await.map(|h| version_of(&h))
    }
}

/// `r` with the document `doc` as its body (Content-MD5, as S3 requires for these PUTs).
fn doc_body<'a>(r: Req<'a>, doc: Vec<u8>, content_type: &str) -> Result<Req<'a>> {
    let md5 = B64.encode(s3hpc_core::checksum::md5(&doc));
    let len = doc.len() as u64;
    r.h("content-md5", &md5)?.h("content-type", content_type).map(|r| r.body(Body::from(doc), Some(len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::copy_source;

    #[test]
    fn header_parsing() {
        let mut h = HeaderMap::new();
        h.insert("content-length", "10".parse().unwrap());
        h.insert("content-range", "bytes 5-14/100".parse().unwrap());
        h.insert("etag", "\"abc\"".parse().unwrap());
        h.insert("last-modified", "Fri, 24 May 2013 00:00:00 GMT".parse().unwrap());
        h.insert("x-amz-meta-color", "blue".parse().unwrap());
        h.insert("x-amz-checksum-crc32", "DUoRhQ==".parse().unwrap());
        h.insert("x-amz-tagging-count", "2".parse().unwrap());
        let (info, range) = object_info("k", StatusCode::PARTIAL_CONTENT, &h);
        assert_eq!((info.size, range), (100, Some((5, 10))));
        assert_eq!(info.etag, "abc");
        assert_eq!(info.meta.user["color"], "blue");
        assert_eq!(info.checksum.unwrap().value, "DUoRhQ==");
        assert_eq!(info.tag_count, 2);
        assert_eq!(info.last_modified, SystemTime::UNIX_EPOCH + Duration::from_secs(1_369_353_600));
        assert_eq!(parse_iso8601("2013-05-24T00:00:00.000Z"), Some(info.last_modified));
    }

    #[test]
    fn errors_from_documents_and_statuses() {
        let doc = b"<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>gone</Message><Resource>/b</Resource></Error>";
        let e = error_from(StatusCode::NOT_FOUND, doc, None, ErrorCode::NoSuchKey);
        assert_eq!((e.code, e.message.as_str(), e.resource.as_deref()), (ErrorCode::NoSuchBucket, "gone", Some("/b")));
        let e = error_from(StatusCode::NOT_FOUND, b"", None, ErrorCode::NoSuchKey);
        assert_eq!(e.code, ErrorCode::NoSuchKey);
        let e = error_from(StatusCode::NOT_FOUND, b"", Some(ErrorCode::NoSuchBucket), ErrorCode::NoSuchKey);
        assert_eq!(e.code, ErrorCode::NoSuchBucket);
        let e = error_from(StatusCode::PRECONDITION_FAILED, b"", None, ErrorCode::NoSuchKey);
        assert_eq!(e.code, ErrorCode::PreconditionFailed);
        let e = error_from(
            StatusCode::BAD_REQUEST,
            b"<Error><Code>WeirdCode</Code><Message>m</Message></Error>",
            None,
            ErrorCode::NoSuchKey,
        );
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidRequest, "WeirdCode: m"));
    }

    #[test]
    fn uris() {
        let c = S3Client::new(ClientConfig {
            endpoint: "http://127.0.0.1:9000".into(),
            credentials: Credentials::new("a", "b"),
            region: "us-east-1".into(),
            virtual_host: false,
        })
        .unwrap();
        let (u, host) = c.uri_for(Some("bkt"), Some("a b/c+d?#"), "x=1").unwrap();
        assert_eq!(u.to_string(), "http://127.0.0.1:9000/bkt/a%20b/c%2Bd%3F%23?x=1");
        assert_eq!(host, "127.0.0.1:9000");
        let v = S3Client::new(ClientConfig {
            endpoint: "http://localhost:9000/".into(),
            credentials: Credentials::new("a", "b"),
            region: "us-east-1".into(),
            virtual_host: true,
        })
        .unwrap();
        let (u, host) = v.uri_for(Some("bkt"), Some("k"), "").unwrap();
        assert_eq!((u.path(), host.as_str()), ("/k", "bkt.localhost:9000"));
        assert!(S3Client::new(ClientConfig { endpoint: "ftp://x".into(), ..c_cfg() }).is_err());
        assert_eq!(
            S3Client::new(ClientConfig { endpoint: "https://x".into(), ..c_cfg() }).is_ok(),
            cfg!(feature = "tls")
        );
        #[cfg(feature = "tls")]
        {
            // Virtual-host style over TLS puts the bucket host in the URI (SNI, certificate name).
            let t = S3Client::new(ClientConfig {
                endpoint: "https://localhost:9443".into(),
                virtual_host: true,
                ..c_cfg()
            })
            .unwrap();
            let (u, host) = t.uri_for(Some("bkt"), Some("k"), "").unwrap();
            assert_eq!((u.to_string().as_str(), host.as_str()), ("https://bkt.localhost:9443/k", "bkt.localhost:9443"));
            let (u, _) = t.uri_for(None, None, "").unwrap();
            assert_eq!(u.to_string(), "https://localhost:9443/");
        }
        assert_eq!(copy_source("b", "dir/a b"), "/b/dir/a%20b");
        assert_eq!(tags_query(&vec![("a b".into(), "c&d".into())]), "a%20b=c%26d");
    }

    fn c_cfg() -> ClientConfig {
        ClientConfig {
            endpoint: "http://127.0.0.1:1".into(),
            credentials: Credentials::new("a", "b"),
            region: "r".into(),
            virtual_host: false,
        }
    }
}
