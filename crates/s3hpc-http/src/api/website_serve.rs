//! The static website endpoint (`s3hpc serve --website-domain DOMAIN`), as AWS's S3 website
//! endpoints (`BUCKET.s3-website-REGION.amazonaws.com`) behave: a request whose `Host` is
//! `BUCKET.DOMAIN` (any port) reads BUCKET's objects by the bucket's website configuration (the
//! bucket configuration `website` that PutBucketWebsite keeps, [`super::website`]).
//!
//! - Only GET and HEAD; any other method is 405 MethodNotAllowed.
//! - Requests are anonymous (a signature, if any, is ignored), and each object read is the
//!   anonymous GetObject / HeadObject of the REST endpoint, run through the same store and so
//!   judged by the same authorization (bucket policy, ACLs, Block Public Access): what an
//!   unsigned REST GET may not read is 403 here too, and a missing key is 403 unless anonymous
//!   users may list the bucket (then 404 NoSuchKey). Where the gateway does not serve anonymous
//!   requests at all (`Config::anonymous` off), every object read is 403.
//! - No configuration: 404 NoSuchWebsiteConfiguration; no bucket: 404 NoSuchBucket.
//! - `RedirectAllRequestsTo`: 301 to `PROTOCOL://HOSTNAME/KEY` (the request's protocol unless one
//!   is named), whatever the object.
//! - Routing rules, in order, first match: a rule without a condition, or with `KeyPrefixEquals`
//!   alone, redirects before the object is read; one with `HttpErrorCodeReturnedEquals` (and a
//!   `KeyPrefixEquals`, if given, matching too) redirects when the read fails with that status.
//!   The redirect goes to `Protocol` (default: the request's), `HostName` (default: the request's
//!   `Host`), the key with `ReplaceKeyWith`, or with the matched prefix replaced by
//!   `ReplaceKeyPrefixWith`, and `HttpRedirectCode` (default 301).
//! - `IndexDocument`: `/` and keys ending in `/` read `KEY` + suffix; a key without the slash
//!   that does not exist, while `KEY/` + suffix may be read, is 302 Found to `/KEY/`.
//! - An object with `x-amz-website-redirect-location` answers 301 to that location.
//! - `ErrorDocument`: a 4xx answer is that object (with the error's status); when it cannot be
//!   read, the HTML error page says so in a second list.
//! - Errors are AWS's HTML page (not XML): `<h1>STATUS REASON</h1>` and a list of `Code`,
//!   `Message`, the error's elements (`Key`, `BucketName`...), `RequestId` and `HostId`, with the
//!   `x-amz-error-code`, `x-amz-error-message` and `x-amz-error-detail-NAME` headers.
//!
//! The router's only cost when the flag is off is one empty-list check per request
//! ([`website_bucket`]).

use std::sync::Arc;

use http::request::Parts;
use http::{HeaderName, HeaderValue, Method, Response, StatusCode, header};

use s3hpc_core::caller::Caller;
use s3hpc_core::*;

use super::website::{CONFIG, Redirect, Website};
use super::{Req, object_get, request::hdr, response::Resp};
use crate::State;
use crate::body::RespBody;
use crate::util::{Query, decode_path};

/// The bucket a website request is for: the `Host` (port and case aside) is `BUCKET.DOMAIN` for
/// one of the `--website-domain`s. `None` (an S3 request) at once when there are none.
pub(crate) fn website_bucket(st: &State, parts: &Parts) -> Option<String> {
    if st.website_suffixes.is_empty() {
        return None;
    }
    let host = hdr(&parts.headers, "host").or(parts.uri.host())?;
    let host = host.rsplit_once(':').filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h);
    let host = host.to_ascii_lowercase();
    st.website_suffixes.iter().find_map(|s| host.strip_suffix(s.as_str()).filter(|b| !b.is_empty()).map(str::to_owned))
}

/// An error as the website endpoint shows it.
struct Failure {
    status: u16,
    code: String,
    message: String,
    /// The error's own elements (`Key`, `BucketName`, `Method`...), in order.
    fields: Vec<(&'static str, String)>,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure {
            status: e.code.http_status(),
            code: e.code.as_str().to_owned(),
            message: e.message,
            fields: e.details,
        }
    }
}

/// One website request.
struct Web<'a> {
    st: &'a State,
    parts: &'a Parts,
    bucket: String,
    rid: u64,
    head: bool,
    /// The anonymous caller every object read acts as.
    caller: Option<Arc<Caller>>,
}

/// Answer a website request for `bucket` (always a response: errors are HTML pages).
pub(super) async fn serve(st: &State, parts: &Parts, bucket: String, rid: u64) -> Resp {
    let w = Web {
        st,
        parts,
        bucket,
        rid,
        head: parts.method == Method::HEAD,
        caller: st.cfg.anonymous.then(|| super::caller(st, parts, None)),
    };
    match w.run().await {
        Ok(r) => r,
        Err(f) => w.page(&f, None),
    }
}

impl Web<'_> {
    async fn run(&self) -> std::result::Result<Resp, Failure> {
        if self.parts.method != Method::GET && !self.head {
            let mut e = Error::code(ErrorCode::MethodNotAllowed);
            e.details = vec![("Method", self.parts.method.as_str().to_owned()), ("ResourceType", "OBJECT".into())];
            let mut r = self.page(&e.into(), None);
            r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Ok(r);
        }
        names::check_bucket_name_for_access(&self.bucket)?;
        let raw = self.parts.uri.path();
        let key = decode_path(raw.strip_prefix('/').unwrap_or(raw))
            .ok_or_else(|| Error::invalid_argument("The request path is not valid UTF-8 after decoding"))?
            .into_owned();
        let config = self.config().await?;
        if let Some(all) = &config.redirect_all {
            return Ok(self.redirect(all, "", &key));
        }
        // Rules without a condition on the answer apply before the object is read.
        for rule in &config.routing_rules {
            match &rule.condition {
                None => return Ok(self.redirect(&rule.redirect, "", &key)),
                Some((Some(prefix), None)) if key.starts_with(prefix.as_str()) => {
                    return Ok(self.redirect(&rule.redirect, prefix, &key));
                }
                _ => {}
            }
        }
        let suffix = config.index_suffix.as_deref().unwrap_or_default();
        let target = if key.is_empty() || key.ends_with('/') { format!("{key}{suffix}") } else { key.clone() };
        names::validate_key(&target)?;
        let err = match self.read(&target, self.parts, self.head).await {
            Ok(resp) => return Ok(self.object_answer(resp, None)),
            Err(e) => e,
        };
        let status = err.code.http_status();
        if status >= 500 {
            return Err(err.into());
        }
        // `KEY` missing, `KEY/` + suffix readable: the request was for the folder.
        if !key.is_empty() && !key.ends_with('/') && !suffix.is_empty() && self.missing(&key, &err).await {
            let folder = format!("{key}/{suffix}");
            if names::validate_key(&folder).is_ok() && self.read(&folder, &self.plain(), true).await.is_ok() {
                let location = format!("/{}/", crate::util::url_encode_key(&key));
                return Ok(redirect_response(StatusCode::FOUND, &location));
            }
        }
        for rule in &config.routing_rules {
            if let Some((prefix, Some(code))) = &rule.condition
                && code.trim().parse::<u16>().ok() == Some(status)
                && prefix.as_deref().is_none_or(|p| key.starts_with(p))
            {
                return Ok(self.redirect(&rule.redirect, prefix.as_deref().unwrap_or(""), &key));
            }
        }
        let failure = Failure::from(err);
        let Some(error_key) = config.error_key.as_deref().filter(|_| (400..500).contains(&status)) else {
            return Err(failure);
        };
        let doc = match names::validate_key(error_key) {
            Ok(()) => self.read(error_key, &self.plain(), self.head).await,
            Err(e) => Err(e),
        };
        match doc {
            Ok(resp) => Ok(self.object_answer(resp, Some(status))),
            Err(e) => Ok(self.page(&failure, Some(&e.into()))),
        }
    }

    /// The bucket's website configuration, read as the gateway itself (anonymous callers may
    /// not read it; AWS reads it for them too).
    async fn config(&self) -> std::result::Result<Website, Failure> {
        let read = self.st.cfg.store.get_bucket_config(&self.bucket, CONFIG);
        let internal = Some(crate::lifecycle::runner::internal_caller());
        let doc = s3hpc_core::identity::scope(None, s3hpc_core::caller::scope(internal, read)).await?;
        let Some(doc) = doc else {
            return Err(Failure {
                status: 404,
                code: "NoSuchWebsiteConfiguration".into(),
                message: "The specified bucket does not have a website configuration".into(),
                fields: vec![("BucketName", self.bucket.clone())],
            });
        };
        Ok(Website::parse(&doc)?)
    }

    /// The anonymous GetObject (HeadObject with `head`) of `key` as the REST endpoint answers
    /// it, with the conditional and range headers of `parts`; no query parameters apply.
    async fn read(&self, key: &str, parts: &Parts, head: bool) -> Result<Resp> {
        let Some(caller) = self.caller.clone() else {
            return Err(Error::code(ErrorCode::AccessDenied));
        };
        let r = Req {
            st: self.st,
            parts,
            q: Query::parse(None),
            bucket: self.bucket.clone(),
            key: key.to_owned(),
            verified: None,
            rid: self.rid,
        };
        let id = self.st.cfg.anonymous_identity.clone();
        s3hpc_core::identity::scope(id, s3hpc_core::caller::scope(Some(caller), object_get::get_object(&r, head))).await
    }

    /// The request without its headers (no range or conditions), for reading the documents the
    /// website adds (index probe, error document).
    fn plain(&self) -> Parts {
        let mut p = http::Request::new(()).into_parts().0;
        p.method = self.parts.method.clone();
        p.uri = self.parts.uri.clone();
        p
    }

    /// Whether the read's failure means `key` does not exist: NoSuchKey, or AccessDenied (a
    /// caller who may not list is told 403 for a missing key) where the gateway finds no such
    /// object either.
    async fn missing(&self, key: &str, err: &Error) -> bool {
        match err.code {
            ErrorCode::NoSuchKey => true,
            ErrorCode::AccessDenied => {
                let head = self.st.cfg.store.head_object(&self.bucket, key, GetObjectRequest::default());
                let internal = Some(crate::lifecycle::runner::internal_caller());
                let got = s3hpc_core::identity::scope(None, s3hpc_core::caller::scope(internal, head)).await;
                matches!(got, Err(e) if e.code == ErrorCode::NoSuchKey)
            }
            _ => false,
        }
    }

    /// An object read's answer: 301 to its `x-amz-website-redirect-location` if it has one; else
    /// the object, with `status` in place of 200 (an error document).
    fn object_answer(&self, mut resp: Resp, status: Option<u16>) -> Resp {
        if let Some(loc) = resp.headers().get("x-amz-website-redirect-location").and_then(|v| v.to_str().ok()) {
            return redirect_response(StatusCode::MOVED_PERMANENTLY, loc);
        }
        if let Some(s) = status.and_then(|s| StatusCode::from_u16(s).ok()) {
            *resp.status_mut() = s;
        }
        resp
    }

    /// A redirect by `r` (of RedirectAllRequestsTo or a routing rule that matched `prefix`).
    fn redirect(&self, r: &Redirect, prefix: &str, key: &str) -> Resp {
        let tls = if self.st.cfg.tls.is_some() { "https" } else { "http" };
        let protocol = r.protocol.as_deref().filter(|p| !p.is_empty()).unwrap_or(tls);
        let host = r
            .host_name
            .as_deref()
            .filter(|h| !h.is_empty())
            .or_else(|| hdr(&self.parts.headers, "host"))
            .unwrap_or(&self.bucket);
        let new_key = match (&r.replace_key_with, &r.replace_key_prefix_with) {
            (Some(k), _) => k.clone(),
            (None, Some(p)) => format!("{p}{}", key.strip_prefix(prefix).unwrap_or(key)),
            (None, None) => key.to_owned(),
        };
        let mut location = format!("{protocol}://{host}/{}", crate::util::url_encode_key(&new_key));
        if let Some(q) = self.parts.uri.query().filter(|q| !q.is_empty()) {
            location.push('?');
            location.push_str(q);
        }
        let code = r
            .http_redirect_code
            .as_deref()
            .and_then(|c| c.trim().parse::<u16>().ok())
            .and_then(|c| StatusCode::from_u16(c).ok())
            .filter(StatusCode::is_redirection)
            .unwrap_or(StatusCode::MOVED_PERMANENTLY);
        redirect_response(code, &location)
    }

    /// AWS's HTML error page for `f`; `doc`: why the error document could not be read.
    fn page(&self, f: &Failure, doc: Option<&Failure>) -> Resp {
        let status = StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut b = Response::builder().status(status);
        let h = b.headers_mut().expect("a new builder");
        let mut set = |name: HeaderName, value: &str| {
            if let Ok(v) = HeaderValue::from_str(value) {
                h.insert(name, v);
            }
        };
        set(HeaderName::from_static("x-amz-error-code"), &f.code);
        set(HeaderName::from_static("x-amz-error-message"), &f.message);
        for (name, value) in &f.fields {
            if let Ok(n) = HeaderName::from_bytes(format!("x-amz-error-detail-{name}").as_bytes()) {
                set(n, value);
            }
        }
        let body = if self.head { String::new() } else { error_html(status, f, doc, self.rid) };
        b.header(header::CONTENT_TYPE, "text/html; charset=utf-8")
            .header(header::CONTENT_LENGTH, body.len())
            .body(if self.head { RespBody::Empty } else { RespBody::full(body) })
            .expect("valid response")
    }
}

fn redirect_response(code: StatusCode, location: &str) -> Resp {
    let mut b = Response::builder().status(code).header(header::CONTENT_LENGTH, 0);
    if let Ok(v) = HeaderValue::from_str(location) {
        b = b.header(header::LOCATION, v);
    }
    b.body(RespBody::Empty).expect("valid response")
}

/// `s` with HTML's special characters escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page AWS's website endpoint answers an error with (seen from AWS: the title and heading
/// are the status line, then one `<li>NAME: VALUE</li>` per element; a failed error document
/// adds an `<h3>` and its own list).
fn error_html(status: StatusCode, f: &Failure, doc: Option<&Failure>, rid: u64) -> String {
    let title = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or(""));
    let mut s = format!("<html>\n<head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n<ul>\n");
    let item = |s: &mut String, name: &str, value: &str| {
        s.push_str(&format!("<li>{name}: {}</li>\n", escape(value)));
    };
    let list = |s: &mut String, f: &Failure| {
        item(s, "Code", &f.code);
        item(s, "Message", &f.message);
        for (name, value) in &f.fields {
            item(s, name, value);
        }
    };
    list(&mut s, f);
    item(&mut s, "RequestId", &format!("{rid:016X}"));
    item(&mut s, "HostId", &format!("{rid:016X}"));
    s.push_str("</ul>\n");
    if let Some(d) = doc {
        s.push_str("<h3>An Error Occurred While Attempting to Retrieve a Custom Error Document</h3>\n<ul>\n");
        list(&mut s, d);
        s.push_str("</ul>\n");
    }
    s.push_str("<hr/>\n</body>\n</html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_page_is_aws_shape() {
        let f = Failure::from(Error::no_such_key("b", "a<b"));
        let d = Failure::from(Error::no_such_key("b", "error.html"));
        let page = error_html(StatusCode::NOT_FOUND, &f, Some(&d), 0xAB);
        assert_eq!(
            page,
            "<html>\n<head><title>404 Not Found</title></head>\n<body>\n<h1>404 Not Found</h1>\n<ul>\n\
             <li>Code: NoSuchKey</li>\n<li>Message: The specified key does not exist.</li>\n<li>Key: a&lt;b</li>\n\
             <li>RequestId: 00000000000000AB</li>\n<li>HostId: 00000000000000AB</li>\n</ul>\n\
             <h3>An Error Occurred While Attempting to Retrieve a Custom Error Document</h3>\n<ul>\n\
             <li>Code: NoSuchKey</li>\n<li>Message: The specified key does not exist.</li>\n\
             <li>Key: error.html</li>\n</ul>\n<hr/>\n</body>\n</html>\n"
        );
    }
}
