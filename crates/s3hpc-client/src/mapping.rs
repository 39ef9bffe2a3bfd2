//! The seam's types as S3 request headers (conditions, metadata, tags) and back from response
//! headers and listing XML (object info, checksums, versions, times).

use super::*;

pub(crate) fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// `If-*` headers (`prefix` "x-amz-copy-source-" for copy sources).
pub(crate) fn add_conditions(h: &mut HeaderMap, c: &Conditions, prefix: &str) -> Result<()> {
    let mut put = |name: &str, v: &str| -> Result<()> {
        let n = HeaderName::from_bytes(format!("{prefix}{name}").as_bytes()).expect("valid header name");
        h.insert(n, hval(v)?);
        Ok(())
    };
    if let Some(v) = &c.if_match {
        put("if-match", v)?;
    }
    if let Some(v) = &c.if_none_match {
        put("if-none-match", v)?;
    }
    if let Some(t) = c.if_modified_since {
        put("if-modified-since", &http_date(t))?;
    }
    if let Some(t) = c.if_unmodified_since {
        put("if-unmodified-since", &http_date(t))?;
    }
    Ok(())
}

pub(crate) fn add_meta(h: &mut HeaderMap, m: &ObjectMeta) -> Result<()> {
    for (name, v) in [
        ("content-type", &m.content_type),
        ("content-encoding", &m.content_encoding),
        ("content-disposition", &m.content_disposition),
        ("content-language", &m.content_language),
        ("cache-control", &m.cache_control),
        ("expires", &m.expires),
        ("x-amz-website-redirect-location", &m.website_redirect_location),
    ] {
        if let Some(v) = v {
            h.insert(hname(name), hval(v)?);
        }
    }
    for (k, v) in &m.user {
        let n = HeaderName::from_bytes(format!("x-amz-meta-{k}").as_bytes())
            .map_err(|_| Error::invalid_argument(format!("metadata name {k:?} is not a valid header name")))?;
        h.append(n, hval(v)?);
    }
    Ok(())
}

pub(crate) fn tags_query(tags: &Tags) -> String {
    let mut s = String::new();
    for (i, (k, v)) in tags.iter().enumerate() {
        if i > 0 {
            s.push('&');
        }
        s.push_str(&uri_encode(k, false));
        s.push('=');
        s.push_str(&uri_encode(v, false));
    }
    s
}

pub(crate) fn hstr<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

pub(crate) fn header_text(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

pub(crate) fn etag_of(h: &HeaderMap) -> String {
    hstr(h, "etag").unwrap_or("").trim().trim_matches('"').to_string()
}

pub(crate) fn checksum_of_headers(h: &HeaderMap) -> Option<Checksum> {
    ChecksumAlgorithm::ALL
        .into_iter()
        .find_map(|a| hstr(h, a.header_name()).map(|v| Checksum { algorithm: a, value: v.trim().to_string() }))
}

pub(crate) fn last_modified(h: &HeaderMap) -> SystemTime {
    hstr(h, "last-modified")
        .or_else(|| hstr(h, "date"))
        .and_then(|v| httpdate::parse_http_date(v).ok())
        .unwrap_or_else(SystemTime::now)
}

/// `2009-10-12T17:50:30.000Z` (S3's XML timestamps).
pub(crate) fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let main = s.split('.').next()?.trim_end_matches('Z');
    let compact: String = main.chars().filter(|c| *c != '-' && *c != ':').collect();
    parse_amz_date(&format!("{compact}Z"))
}

pub(crate) fn xml_time(n: &Node, name: &str) -> SystemTime {
    n.text_of(name).and_then(parse_iso8601).unwrap_or(SystemTime::UNIX_EPOCH)
}

pub(crate) fn checksum_of_xml(n: &Node) -> Option<Checksum> {
    ChecksumAlgorithm::ALL.into_iter().find_map(|a| {
        let tag = format!("Checksum{}", a.as_str());
        n.text_of(&tag).map(|v| Checksum { algorithm: a, value: v.trim().to_string() })
    })
}

/// Object info from GET/HEAD headers, and the served range for 206 answers.
pub(crate) fn object_info(key: &str, status: StatusCode, h: &HeaderMap) -> (ObjectInfo, Option<(u64, u64)>) {
    let len: u64 = hstr(h, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut size = len;
    let mut range = None;
    if let Some(cr) = hstr(h, "content-range")
        && let Some(spec) = cr.trim().strip_prefix("bytes ")
        && let Some((span, total)) = spec.split_once('/')
    {
        if let Ok(t) = total.trim().parse() {
            size = t;
        }
        if status == StatusCode::PARTIAL_CONTENT
            && let Some((a, b)) = span.split_once('-')
            && let (Ok(a), Ok(b)) = (a.trim().parse::<u64>(), b.trim().parse::<u64>())
            && b >= a
        {
            range = Some((a, b - a + 1));
        }
    }
    let mut meta = ObjectMeta {
        // S3 answers `binary/octet-stream` for objects stored without a type: that is "none".
        // A directory object (`key/`) without a type is served as application/x-directory.
        content_type: header_text(h, "content-type")
            .filter(|t| t != DEFAULT_CONTENT_TYPE && !(key.ends_with('/') && t == "application/x-directory")),
        content_encoding: header_text(h, "content-encoding"),
        content_disposition: header_text(h, "content-disposition"),
        content_language: header_text(h, "content-language"),
        cache_control: header_text(h, "cache-control"),
        expires: header_text(h, "expires"),
        website_redirect_location: header_text(h, "x-amz-website-redirect-location"),
        ..Default::default()
    };
    for (name, v) in h {
        if let Some(k) = name.as_str().strip_prefix("x-amz-meta-") {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            meta.user
                .entry(k.to_string())
                .and_modify(|e| {
                    e.push(',');
                    e.push_str(&v)
                })
                .or_insert(v);
        }
    }
    // Only the part count crosses HTTP (x-amz-mp-parts-count); the sizes are unknown here, so
    // every part is recorded as 0 bytes except the one that was served.
    let parts: usize = hstr(h, "x-amz-mp-parts-count").and_then(|v| v.parse().ok()).unwrap_or(0);
    let part_sizes = if let Some(ps) = hstr(h, "x-s3hpc-part-sizes") {
        ps.split(',').filter_map(|p| p.trim().parse().ok()).collect()
    } else {
        vec![0; parts.min(10_000)]
    };
    let info = ObjectInfo {
        version_id: version_of(h),
        key: key.to_string(),
        size,
        etag: etag_of(h),
        last_modified: last_modified(h),
        meta,
        checksum: checksum_of_headers(h),
        part_sizes,
        part_checksums: Vec::new(),
        tag_count: hstr(h, "x-amz-tagging-count").and_then(|v| v.parse().ok()).unwrap_or(0),
        lock: lock::of_headers(h),
    };
    (info, range)
}

/// `x-amz-version-id` (`null` and none: the null version).
pub(crate) fn version_of(h: &HeaderMap) -> Option<String> {
    header_text(h, "x-amz-version-id").filter(|v| v != s3hpc_core::versions::NULL_VERSION)
}

pub(crate) fn response_stream(body: Incoming) -> Body {
    let s = http_body_util::BodyStream::new(body).filter_map(|f| async move {
        match f {
            Ok(frame) => frame.into_data().ok().map(Ok),
            Err(e) => Some(Err(std::io::Error::other(Error::new(
                ErrorCode::IncompleteBody,
                format!("response body failed: {e}"),
            )))),
        }
    });
    Body::Stream(Box::pin(s))
}

/// The key as listed: decoded when the server used `encoding-type=url`.
/// The `CommonPrefixes` of a listing answer (URL-decoded when `url`).
pub(crate) fn common_prefixes(n: &xml::Node, url: bool) -> Vec<String> {
    n.children("CommonPrefixes").filter_map(|p| p.text_of("Prefix")).map(|p| listed_name(p, url)).collect()
}

pub(crate) fn listed_name(s: &str, url: bool) -> String {
    if !url {
        return s.to_string();
    }
    let plus = s.replace('+', " ");
    String::from_utf8_lossy(&percent_decode(&plus)).into_owned()
}
