//! Authorization parsing and verification on arbitrary requests.
//!
//! Input: text, first line `METHOD URI`, then `name: value` header lines. Two properties:
//! - `verify` never panics on the request as given (whatever its Authorization header says);
//! - the same request signed with `sign` always verifies, and any change of the signed
//!   method makes it fail.
#![no_main]

use std::time::{Duration, SystemTime};

use libfuzzer_sys::fuzz_target;
use s3hpc_sigv4::{Accept, CredentialSet, Credentials, sign};

fn verify(
    p: &http::request::Parts,
    c: &CredentialSet,
    now: SystemTime,
) -> Result<s3hpc_sigv4::Verified, s3hpc_sigv4::Error> {
    s3hpc_sigv4::verify(p, c, now, &Accept::new("us-east-1"))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let first = lines.next().unwrap_or("");
    let (method, uri) = first.split_once(' ').unwrap_or(("GET", first));
    let Ok(method) = http::Method::from_bytes(method.trim().as_bytes()) else { return };
    let Ok(uri) = uri.trim().parse::<http::Uri>() else { return };
    let mut headers = http::HeaderMap::new();
    for l in lines {
        let Some((k, v)) = l.split_once(':') else { continue };
        let (Ok(k), Ok(v)) = (http::HeaderName::from_bytes(k.trim().as_bytes()), http::HeaderValue::from_str(v)) else {
            continue;
        };
        headers.append(k, v);
    }
    let creds = Credentials::new("AKIAFUZZ", "fuzzsecret");
    let set = CredentialSet::new([creds.clone()]);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut parts = http::Request::builder().method(method.clone()).uri(uri.clone()).body(()).unwrap().into_parts().0;
    parts.headers = headers.clone();
    let _ = verify(&parts, &set, now);

    // Presigned URLs are the query's business: leave them out of the signing property.
    if uri.query().is_some_and(|q| q.contains("X-Amz-")) {
        return;
    }
    headers.remove(http::header::AUTHORIZATION);
    if !headers.contains_key(http::header::HOST) {
        headers.insert(http::header::HOST, http::HeaderValue::from_static("127.0.0.1:9000"));
    }
    headers.remove("x-amz-date");
    headers.remove("x-amz-content-sha256");
    headers.remove("date");
    sign(&method, &uri, &mut headers, &creds, "us-east-1", "UNSIGNED-PAYLOAD", now);
    parts.headers = headers;
    if let Err(e) = verify(&parts, &set, now) {
        panic!("signed request failed to verify: {e}\n{:?}", parts);
    }
    let other = if method == http::Method::GET { http::Method::PUT } else { http::Method::GET };
    parts.method = other;
    assert!(verify(&parts, &set, now).is_err(), "changed method still verifies");
});
