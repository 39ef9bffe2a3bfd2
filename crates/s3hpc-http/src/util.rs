//! Small helpers: timestamps, query strings, URL encoding.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// `2006-01-02T15:04:05.000Z`, as S3 writes timestamps in XML.
pub fn iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, dd) = s3hpc_sigv4::encode::civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, (rem / 60) % 60, rem % 60, d.subsec_millis())
}

/// HTTP date (`Last-Modified`).
pub fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// Decoded query parameters in request order. Keys without `=` get an empty value.
#[derive(Debug, Default)]
pub struct Query<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

impl<'a> Query<'a> {
    pub fn parse(q: Option<&'a str>) -> Query<'a> {
        let Some(q) = q else { return Query::default() };
        let pairs = q
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode_query(k), decode_query(v))
            })
            .collect();
        Query { pairs }
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_ref())
    }

    pub fn has(&self, k: &str) -> bool {
        self.pairs.iter().any(|(key, _)| key == k)
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(k, _)| k.as_ref())
    }
}

/// Decode a query component (`+` is a space, as in forms; SigV4 clients encode spaces as %20).
fn decode_query(s: &str) -> Cow<'_, str> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Cow::Borrowed(s);
    }
    let plus = s.replace('+', " ");
    Cow::Owned(percent_decode_str(&plus).decode_utf8_lossy().into_owned())
}

/// Percent-decode a path; `None` when the result is not UTF-8.
pub fn decode_path(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('%') {
        return Some(Cow::Borrowed(s));
    }
    percent_decode_str(s).decode_utf8().ok()
}

/// Everything but unreserved characters and `/` is encoded (`encoding-type=url` in listings).
const URL_KEY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~').remove(b'/');

pub fn url_encode_key(s: &str) -> Cow<'_, str> {
    utf8_percent_encode(s, URL_KEY).into()
}

/// Parse `x-amz-tagging` (a URL query string: `k1=v1&k2=v2`).
pub fn parse_tagging_header(v: &str) -> Vec<(String, String)> {
    Query::parse(Some(v)).pairs.into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_136_214_245_123);
        assert_eq!(iso8601(t), "2006-01-02T15:04:05.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601(t), "2000-02-29T00:00:00.000Z");
        assert_eq!(http_date(t), "Tue, 29 Feb 2000 00:00:00 GMT");
    }

    #[test]
    fn queries() {
        let q = Query::parse(Some("list-type=2&prefix=a%2Fb+c&delimiter=%2F&uploads"));
        assert_eq!(q.get("list-type"), Some("2"));
        assert_eq!(q.get("prefix"), Some("a/b c"));
        assert_eq!(q.get("delimiter"), Some("/"));
        assert!(q.has("uploads"));
        assert!(!q.has("tagging"));
        assert_eq!(parse_tagging_header("a=1&b=x%20y"), vec![("a".into(), "1".into()), ("b".into(), "x y".into())]);
    }

    #[test]
    fn url_encoding() {
        assert_eq!(url_encode_key("a b/c+d~é"), "a%20b/c%2Bd~%C3%A9");
        assert_eq!(decode_path("/b/a%20b").unwrap(), "/b/a b");
        assert!(decode_path("/b/%ff").is_none());
    }
}
