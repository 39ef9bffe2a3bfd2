//! Bucket CORS: the configuration document (PutBucketCors's XML, validated as AWS validates it),
//! rule matching for preflight (`OPTIONS`) and actual requests, and a short-lived per-gateway
//! cache of each bucket's configuration, read only for requests that carry an `Origin` header.

use s3hpc_core::{Error, ErrorCode, Result};

use crate::xml::{self, DECL, NS, elem};

/// AWS's limit of rules per configuration.
pub(crate) const MAX_RULES: usize = 100;
const METHODS: [&str; 5] = ["GET", "PUT", "HEAD", "POST", "DELETE"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorsRule {
    pub id: Option<String>,
    pub origins: Vec<String>,
    pub methods: Vec<String>,
    /// As given (matched without regard to case).
    pub headers: Vec<String>,
    pub expose: Vec<String>,
    pub max_age: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorsConfig {
    pub rules: Vec<CorsRule>,
}

fn invalid_request(msg: String) -> Error {
    Error::new(ErrorCode::InvalidRequest, msg)
}

/// `*` matching any run of characters; at most one `*` (validated on PUT).
fn wildcard(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((pre, post)) => s.len() >= pre.len() + post.len() && s.starts_with(pre) && s.ends_with(post),
    }
}

/// A character of an HTTP header name (RFC 9110 `tchar`).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl CorsConfig {
    pub(crate) fn parse(data: &[u8]) -> Result<CorsConfig> {
        let root = xml::parse_tree(data)?;
        xml::expect_root(&root, "CORSConfiguration")?;
        let rules: Vec<_> = root.children("CORSRule").collect();
        if rules.is_empty() {
            return Err(xml::malformed("a CORS configuration needs at least one CORSRule"));
        }
        if rules.len() > MAX_RULES {
            return Err(invalid_request(format!(
                "The number of CORS rules should not exceed allowed limit of {MAX_RULES} rules."
            )));
        }
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            let texts = |name| r.children(name).map(|e| e.text.trim().to_string()).collect::<Vec<_>>();
            let (origins, methods, headers, expose) =
                (texts("AllowedOrigin"), texts("AllowedMethod"), texts("AllowedHeader"), texts("ExposeHeader"));
            if origins.is_empty() || methods.is_empty() {
                return Err(xml::malformed("a CORSRule needs an AllowedOrigin and an AllowedMethod"));
            }
            if let Some(m) = methods.iter().find(|m| !METHODS.contains(&m.as_str())) {
                return Err(invalid_request(format!(
                    "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
                )));
            }
            if let Some(o) = origins.iter().find(|o| o.matches('*').count() > 1) {
                return Err(invalid_request(format!("AllowedOrigin \"{o}\" can not have more than one wildcard.")));
            }
            if let Some(h) = headers.iter().find(|h| h.matches('*').count() > 1) {
                return Err(invalid_request(format!("AllowedHeader \"{h}\" can not have more than one wildcard.")));
            }
            // AWS checks both lists for characters a header name (an RFC 9110 token) cannot
            // hold and names the first offender as an AllowedHeader whichever list it is in.
            if let Some(h) = headers.iter().chain(&expose).find(|h| !h.bytes().all(is_tchar)) {
                return Err(invalid_request(format!("AllowedHeader \"{h}\" contains invalid character.")));
            }
            let id = r.child_text("ID").map(str::to_string);
            if id.as_ref().is_some_and(|i| i.chars().count() > 255) {
                return Err(invalid_request("ID length should not exceed allowed limit of 255".into()));
            }
            let max_age = match r.child_text("MaxAgeSeconds") {
                None => None,
                Some(t) => {
                    Some(t.trim().parse::<i64>().map_err(|_| xml::malformed("MaxAgeSeconds is not an integer"))?)
                }
            };
            out.push(CorsRule { id, origins, methods, headers, expose, max_age });
        }
        Ok(CorsConfig { rules: out })
    }

    pub(crate) fn to_xml(&self) -> String {
        let mut s = String::from(DECL);
        s.push_str(&format!("<CORSConfiguration xmlns=\"{NS}\">"));
        for r in &self.rules {
            s.push_str("<CORSRule>");
            if let Some(id) = &r.id {
                elem(&mut s, "ID", id);
            }
            for h in &r.headers {
                elem(&mut s, "AllowedHeader", h);
            }
            for m in &r.methods {
                elem(&mut s, "AllowedMethod", m);
            }
            for o in &r.origins {
                elem(&mut s, "AllowedOrigin", o);
            }
            for e in &r.expose {
                elem(&mut s, "ExposeHeader", e);
            }
            if let Some(a) = r.max_age {
                elem(&mut s, "MaxAgeSeconds", &a.to_string());
            }
            s.push_str("</CORSRule>");
        }
        s.push_str("</CORSConfiguration>");
        s
    }

    /// The first rule allowing `origin` to use `method` with every one of `headers` (the
    /// preflight's `Access-Control-Request-Headers`, any case).
    pub(crate) fn find(&self, origin: &str, method: &str, headers: &[&str]) -> Option<&CorsRule> {
        self.rules.iter().find(|r| {
            r.origins.iter().any(|o| wildcard(o, origin))
                && r.methods.iter().any(|m| m == method)
                && headers.iter().all(|h| {
                    let h = h.trim().to_ascii_lowercase();
                    h.is_empty() || r.headers.iter().any(|p| wildcard(&p.to_ascii_lowercase(), &h))
                })
        })
    }
}

impl CorsRule {
    /// The CORS headers answering `origin` under this rule (`allow_headers`: the request's
    /// `Access-Control-Request-Headers`, echoed back as S3 writes them: lower case, `, `
    /// between names).
    pub(crate) fn headers(&self, origin: &str, allow_headers: Option<&str>) -> Vec<(&'static str, String)> {
        let any = self.origins.iter().any(|o| o == "*");
        let mut h = vec![("access-control-allow-origin", if any { "*".to_string() } else { origin.to_string() })];
        h.push(("access-control-allow-methods", self.methods.join(", ")));
        let requested: Vec<String> = allow_headers
            .unwrap_or("")
            .split(',')
            .map(|n| n.trim().to_ascii_lowercase())
            .filter(|n| !n.is_empty())
            .collect();
        if !requested.is_empty() {
            h.push(("access-control-allow-headers", requested.join(", ")));
        }
        if !self.expose.is_empty() {
            h.push(("access-control-expose-headers", self.expose.join(", ")));
        }
        if let Some(a) = self.max_age {
            h.push(("access-control-max-age", a.to_string()));
        }
        if !any {
            h.push(("access-control-allow-credentials", "true".to_string()));
        }
        h.push(("vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method".to_string()));
        h
    }
}

/// Per-gateway cache of CORS configurations.
pub(crate) type CorsCache = crate::bucket_cache::BucketConfigCache<CorsConfig>;

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rules: &str) -> Result<CorsConfig> {
        CorsConfig::parse(format!("<CORSConfiguration>{rules}</CORSConfiguration>").as_bytes())
    }

    #[test]
    fn validates_as_aws() {
        let e = cfg("<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule>")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidRequest);
        assert_eq!(e.message, "Found unsupported HTTP method in CORS config. Unsupported method is PATCH");
        let e =
            cfg("<CORSRule><AllowedOrigin>http://*.*.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>")
                .unwrap_err();
        assert_eq!(e.message, "AllowedOrigin \"http://*.*.com\" can not have more than one wildcard.");
        let e = cfg("<CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>").unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedXML);
        assert_eq!(cfg("").unwrap_err().code, ErrorCode::MalformedXML);
        let rule = "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>";
        assert!(cfg(&rule.repeat(100)).is_ok());
        assert_eq!(cfg(&rule.repeat(101)).unwrap_err().code, ErrorCode::InvalidRequest);
    }

    #[test]
    fn matches_origin_method_and_headers() {
        let c = cfg("<CORSRule><ID>one</ID><AllowedOrigin>https://*.example.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
             <AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>Content-Type</AllowedHeader>\
             <ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>300</MaxAgeSeconds></CORSRule>\
             <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>HEAD</AllowedMethod></CORSRule>")
        .unwrap();
        let r = c.find("https://app.example.com", "PUT", &["x-amz-meta-a", "content-type"]).unwrap();
        assert_eq!(r.id.as_deref(), Some("one"));
        assert!(c.find("https://app.example.com", "DELETE", &[]).is_none());
        assert!(c.find("https://app.example.org", "GET", &[]).is_none());
        assert!(c.find("https://app.example.com", "GET", &["authorization"]).is_none());
        let h = r.headers("https://app.example.com", Some("content-type"));
        assert!(h.contains(&("access-control-allow-origin", "https://app.example.com".into())));
        assert!(h.contains(&("access-control-allow-methods", "GET, PUT".into())));
        assert!(h.contains(&("access-control-expose-headers", "ETag".into())));
        assert!(h.contains(&("access-control-max-age", "300".into())));
        assert!(h.contains(&("access-control-allow-credentials", "true".into())));
        // Requested headers come back lower case, `, ` between them (S3's form).
        let h = r.headers("https://app.example.com", Some("X-Amz-Meta-A,Content-Type ,"));
        assert!(h.contains(&("access-control-allow-headers", "x-amz-meta-a, content-type".into())));
        let any = c.find("http://else", "HEAD", &[]).unwrap();
        let h = any.headers("http://else", None);
        assert!(h.contains(&("access-control-allow-origin", "*".into())));
        assert!(!h.iter().any(|(k, _)| *k == "access-control-allow-credentials"));
        // Round trip.
        assert_eq!(CorsConfig::parse(c.to_xml().as_bytes()).unwrap(), c);
    }
}
