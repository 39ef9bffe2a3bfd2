//! Signing keys, canonical requests and signatures shared by the verifier and the signer.

use std::cell::RefCell;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::encode::{canonical_header_value_into, canonical_query_into, canonical_uri_into};

pub type HmacSha256 = Hmac<Sha256>;

/// Hex SHA-256 of the empty string.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
pub const STREAMING_SIGNED: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
pub const STREAMING_SIGNED_TRAILER: &str = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
pub const STREAMING_UNSIGNED_TRAILER: &str = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";

pub fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(data);
    m.finalize().into_bytes().into()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The SigV4 signing key for `secret`, `date` (YYYYMMDD), `region`, service `s3`.
pub fn derive_signing_key(secret: &str, date: &str, region: &str) -> [u8; 32] {
    let mut k = Vec::with_capacity(4 + secret.len());
    k.extend_from_slice(b"AWS4");
    k.extend_from_slice(secret.as_bytes());
    let k = hmac(&k, date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, b"s3");
    hmac(&k, b"aws4_request")
}

/// The SigV4 signing key of another service (`sts`).
pub fn derive_service_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let mut k = Vec::with_capacity(4 + secret.len());
    k.extend_from_slice(b"AWS4");
    k.extend_from_slice(secret.as_bytes());
    let k = hmac(&k, date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, service.as_bytes());
    hmac(&k, b"aws4_request")
}

struct KeyCacheEntry {
    secret: String,
    date: String,
    region: String,
    key: [u8; 32],
}

thread_local! {
    static KEY_CACHE: RefCell<Vec<KeyCacheEntry>> = const { RefCell::new(Vec::new()) };
}

/// [`derive_signing_key`] with a small per-thread cache (the key changes once a day per user),
/// so a request costs one HMAC for the signature instead of five.
pub fn signing_key(secret: &str, date: &str, region: &str) -> [u8; 32] {
    KEY_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if let Some(e) = c.iter().find(|e| e.secret == secret && e.date == date && e.region == region) {
            return e.key;
        }
        let key = derive_signing_key(secret, date, region);
        if c.len() >= 8 {
            c.remove(0);
        }
        c.push(KeyCacheEntry { secret: secret.to_string(), date: date.to_string(), region: region.to_string(), key });
        key
    })
}

/// `date/region/s3/aws4_request`.
pub fn scope(date: &str, region: &str) -> String {
    format!("{date}/{region}/s3/aws4_request")
}

/// Everything a canonical request is built from.
pub struct CanonicalInput<'a> {
    pub method: &'a str,
    pub raw_path: &'a str,
    pub raw_query: Option<&'a str>,
    /// Query parameter left out (X-Amz-Signature of presigned URLs).
    pub skip_param: Option<&'a str>,
    /// Signed header names, lower-case, in the order of the SignedHeaders list.
    pub signed_headers: &'a [&'a str],
    pub headers: &'a http::HeaderMap,
    /// Host to use when `host` is signed but absent from the headers (HTTP/2 `:authority`).
    pub fallback_host: Option<&'a str>,
    pub payload_hash: &'a str,
}

/// Hex SHA-256 of the canonical request. `Err(name)` when a signed header is absent.
pub fn canonical_request_hash(inp: &CanonicalInput<'_>) -> Result<String, String> {
    Ok(sha256_hex(&canonical_request(inp)?))
}

/// The canonical request (bytes: header values are as sent). `Err(name)` when a signed header is
/// absent.
pub fn canonical_request(inp: &CanonicalInput<'_>) -> Result<Vec<u8>, String> {
    let mut s = String::with_capacity(256);
    s.push_str(inp.method);
    s.push('\n');
    canonical_uri_into(inp.raw_path, &mut s);
    s.push('\n');
    canonical_query_into(inp.raw_query, inp.skip_param, &mut s);
    s.push('\n');
    let mut buf: Vec<u8> = s.into_bytes();
    for name in inp.signed_headers {
        buf.extend_from_slice(name.as_bytes());
        buf.push(b':');
        let mut any = false;
        for v in inp.headers.get_all(*name) {
            if any {
                buf.push(b',');
            }
            canonical_header_value_into(v.as_bytes(), &mut buf);
            any = true;
        }
        if !any {
            match (*name, inp.fallback_host) {
                ("host", Some(h)) => buf.extend_from_slice(h.as_bytes()),
                _ => return Err(name.to_string()),
            }
        }
        buf.push(b'\n');
    }
    buf.push(b'\n');
    for (i, name) in inp.signed_headers.iter().enumerate() {
        if i > 0 {
            buf.push(b';');
        }
        buf.extend_from_slice(name.as_bytes());
    }
    buf.push(b'\n');
    buf.extend_from_slice(inp.payload_hash.as_bytes());
    Ok(buf)
}

/// The string to sign of a request whose canonical request hashes to `creq_hash`.
pub fn string_to_sign(amz_date: &str, scope: &str, creq_hash: &str) -> String {
    format!("{ALGORITHM}\n{amz_date}\n{scope}\n{creq_hash}")
}

/// The request signature (hex) from the canonical request hash.
pub fn request_signature(key: &[u8; 32], amz_date: &str, scope: &str, creq_hash: &str) -> String {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(ALGORITHM.as_bytes());
    m.update(b"\n");
    m.update(amz_date.as_bytes());
    m.update(b"\n");
    m.update(scope.as_bytes());
    m.update(b"\n");
    m.update(creq_hash.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

/// Signature of one aws-chunked chunk, chained from `prev`.
pub fn chunk_signature(key: &[u8; 32], amz_date: &str, scope: &str, prev: &str, data_sha256: &[u8]) -> String {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(b"AWS4-HMAC-SHA256-PAYLOAD\n");
    m.update(amz_date.as_bytes());
    m.update(b"\n");
    m.update(scope.as_bytes());
    m.update(b"\n");
    m.update(prev.as_bytes());
    m.update(b"\n");
    m.update(EMPTY_SHA256.as_bytes());
    m.update(b"\n");
    m.update(hex::encode(data_sha256).as_bytes());
    hex::encode(m.finalize().into_bytes())
}

/// Signature of the trailer block (`name:value\n` per trailer), chained from `prev`.
pub fn trailer_signature(key: &[u8; 32], amz_date: &str, scope: &str, prev: &str, canonical_trailers: &[u8]) -> String {
    let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(b"AWS4-HMAC-SHA256-TRAILER\n");
    m.update(amz_date.as_bytes());
    m.update(b"\n");
    m.update(scope.as_bytes());
    m.update(b"\n");
    m.update(prev.as_bytes());
    m.update(b"\n");
    m.update(sha256_hex(canonical_trailers).as_bytes());
    hex::encode(m.finalize().into_bytes())
}

/// Constant-time comparison of two signatures.
pub fn sig_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}
