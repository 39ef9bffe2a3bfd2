//! AWS Signature Version 4 (and Version 2, [`sigv2`]) for s3hpc.
//!
//! Server side: [`verify`] checks a request's `Authorization` header or presigned query, and
//! [`verified_body`] turns the request body into the plain object bytes while checking what the
//! payload mode promises (SHA-256, chunk signatures, trailers).
//! Client side: [`sign`] and [`presign`].
//!
//! Strict as AWS is ([`Accept`]): the credential scope must name the server's region
//! (otherwise AuthorizationHeaderMalformed / AuthorizationQueryParametersError naming the
//! expected one) and the service `s3`; every `x-amz-*` header of a request must be among its
//! signed headers (otherwise 403 AccessDenied with `HeadersNotSigned`), except
//! `x-amz-content-sha256` on a presigned URL (its value is the payload line of the canonical
//! request, so a changed value fails the signature anyway). SigV2 requests are accepted only
//! when [`Accept::sigv2`] is set.
//!
//! Performance: signing keys are cached per thread (they change once a day per user), so a
//! verification costs one SHA-256 of the canonical request and one HMAC.
#![forbid(unsafe_code)]

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

pub use s3hpc_core::{ByteStream, CredentialSet, Credentials, Error};

pub mod chunked;
pub mod encode;
pub mod signer;
pub mod sigv2;
mod verify;

pub use signer::sha256_hex as signer_sha256_hex;
pub use signer::{
    EMPTY_SHA256, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER, UNSIGNED_PAYLOAD,
};
pub use verify::{MAX_PRESIGN_EXPIRES, MAX_SKEW, is_anonymous, verify_service};

use encode::{amz_date, canonical_query_into, uri_encode};
use signer::*;

/// How the body of a verified request is protected (from `x-amz-content-sha256`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// `UNSIGNED-PAYLOAD`, or a presigned URL.
    Unsigned,
    /// The body must hash to this hex SHA-256.
    Sha256(String),
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]` (signed chunks) or
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`.
    Streaming { signed_chunks: bool, trailer: bool },
}

/// What the server accepts besides a valid signature by a known key.
#[derive(Debug, Clone)]
pub struct Accept {
    /// The server's region: a SigV4 credential scope must name it (as on AWS).
    pub region: String,
    /// Accept Signature Version 2 (`Authorization: AWS AKID:sig`, presigned URLs with
    /// `AWSAccessKeyId`/`Expires`/`Signature`); otherwise such requests get AWS's answer for an
    /// unsupported mechanism (400 InvalidRequest "Please use AWS4-HMAC-SHA256").
    pub sigv2: bool,
    /// Base domain of virtual-host-style requests (`bucket.DOMAIN`): SigV2's canonical resource
    /// names the bucket, which such a request carries in its Host only.
    pub domain: Option<String>,
}

impl Accept {
    /// SigV4 for `region`, SigV2 accepted, no virtual-host domain.
    pub fn new(region: impl Into<String>) -> Self {
        Accept { region: region.into(), sigv2: true, domain: None }
    }
}

/// A request whose signature was checked.
#[derive(Debug, Clone)]
pub struct Verified {
    pub access_key: String,
    pub payload: Payload,
    /// What chunk signatures chain from (the seed signature, scope, signing key); opaque.
    pub chunk_ctx: Option<ChunkContext>,
}

/// Opaque state for chunk-signature verification.
#[derive(Clone)]
pub struct ChunkContext {
    pub(crate) key: [u8; 32],
    pub(crate) amz_date: String,
    pub(crate) scope: String,
    /// The seed signature (the request's own signature).
    pub(crate) seed: String,
    /// `x-amz-decoded-content-length`, checked when the body ends.
    pub(crate) decoded_len: Option<u64>,
}

impl std::fmt::Debug for ChunkContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkContext")
            .field("amz_date", &self.amz_date)
            .field("scope", &self.scope)
            .field("seed", &self.seed)
            .field("decoded_len", &self.decoded_len)
            .finish_non_exhaustive()
    }
}

impl ChunkContext {
    /// A context for signing or verifying chunks outside a request (client encoders, tests, fuzzing).
    pub fn new(
        creds: &Credentials,
        region: &str,
        amz_date: &str,
        seed_signature: &str,
        decoded_len: Option<u64>,
    ) -> Self {
        let date = &amz_date[..amz_date.len().min(8)];
        ChunkContext {
            key: signing_key(&creds.secret_key, date, region),
            amz_date: amz_date.to_string(),
            scope: scope(date, region),
            seed: seed_signature.to_string(),
            decoded_len,
        }
    }

    /// The seed signature chunk signatures chain from.
    pub fn seed_signature(&self) -> &str {
        &self.seed
    }

    /// Signature of a chunk with `data`, chained from `prev`.
    pub fn chunk_signature(&self, prev: &str, data: &[u8]) -> String {
        use sha2::Digest;
        chunk_signature(&self.key, &self.amz_date, &self.scope, prev, &sha2::Sha256::digest(data))
    }

    /// Signature of the trailer block (`name:value\n` lines), chained from `prev`.
    pub fn trailer_signature(&self, prev: &str, canonical_trailers: &[u8]) -> String {
        trailer_signature(&self.key, &self.amz_date, &self.scope, prev, canonical_trailers)
    }
}

/// Where the decoder puts the value of one trailer (e.g. `x-amz-checksum-crc32`).
#[derive(Debug, Clone)]
pub struct TrailerSink {
    /// Lower-case trailer header name.
    pub name: String,
    pub value: Arc<OnceLock<String>>,
}

/// Verify header auth or a presigned URL (SigV4, and SigV2 when `accept.sigv2`). `now` is the
/// server clock (15 min skew allowed for header auth; presigned X-Amz-Expires 1..=604800 s).
/// Anonymous requests are refused.
///
/// Errors: no auth -> `AccessDenied`; unknown key -> `InvalidAccessKeyId`; wrong signature ->
/// `SignatureDoesNotMatch`; unparsable header or another region -> `AuthorizationHeaderMalformed`;
/// bad presign parameters or another region -> `AuthorizationQueryParametersError`; expired URL
/// -> `AccessDenied` ("Request has expired"); clock skew -> `RequestTimeTooSkewed`; an unsigned
/// `x-amz-*` header -> `AccessDenied` with `HeadersNotSigned`.
pub fn verify(
    parts: &http::request::Parts,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
) -> Result<Verified, Error> {
    verify::verify(parts, creds, now, accept)
}

/// The request body as the store should read it: de-chunked and verified as the payload mode
/// requires. A failed check ends the stream with an `Err` wrapping the S3 error
/// (`XAmzContentSHA256Mismatch`, `SignatureDoesNotMatch`, `IncompleteBody`, `InvalidRequest`),
/// so the store publishes nothing.
pub fn verified_body(v: &Verified, body: ByteStream, trailer: Option<TrailerSink>) -> ByteStream {
    match &v.payload {
        Payload::Unsigned => body,
        Payload::Sha256(h) => Box::pin(chunked::Sha256Stream::new(body, h)),
        Payload::Streaming { signed_chunks, trailer: has_trailer } => {
            let ctx = if *signed_chunks {
                match &v.chunk_ctx {
                    Some(c) => Some(c.clone()),
                    None => {
                        return chunked::error_stream(Error::internal(
                            "signed aws-chunked body without a chunk context",
                        ));
                    }
                }
            } else {
                None
            };
            let sink = if *has_trailer { trailer } else { None };
            Box::pin(chunked::DecodeStream::new(body, chunked::Decoder::new(ctx, *has_trailer, sink)))
        }
    }
}

/// Headers never signed by [`sign`]: proxies and client stacks add or rewrite them.
const UNSIGNED_HEADERS: &[&str] =
    &["authorization", "user-agent", "expect", "x-amzn-trace-id", "connection", "transfer-encoding", "content-length"];

/// Sign a request in place (adds `x-amz-date`, `x-amz-content-sha256`, `authorization`; `host`
/// must already be present, else it is taken from the URI's authority). `payload_sha256` is a
/// hex digest or `UNSIGNED-PAYLOAD` (or a `STREAMING-*` mode). Every header present is signed
/// except those proxies may change (user-agent, expect, content-length, ...).
pub fn sign(
    method: &http::Method,
    uri: &http::Uri,
    headers: &mut http::HeaderMap,
    creds: &Credentials,
    region: &str,
    payload_sha256: &str,
    now: SystemTime,
) {
    let _ = sign_with_seed(method, uri, headers, creds, region, payload_sha256, now);
}

/// [`sign`], returning the signature (the seed for signed aws-chunked bodies).
pub fn sign_with_seed(
    method: &http::Method,
    uri: &http::Uri,
    headers: &mut http::HeaderMap,
    creds: &Credentials,
    region: &str,
    payload_sha256: &str,
    now: SystemTime,
) -> String {
    use http::header::{HeaderName, HeaderValue};
    let amz = amz_date(now);
    let date = &amz[..8];
    if !headers.contains_key(http::header::HOST)
        && let Some(a) = uri.authority()
        && let Ok(v) = HeaderValue::from_str(a.as_str())
    {
        headers.insert(http::header::HOST, v);
    }
    headers.insert(HeaderName::from_static("x-amz-date"), HeaderValue::from_str(&amz).expect("ascii date"));
    if let Ok(v) = HeaderValue::from_str(payload_sha256) {
        headers.insert(HeaderName::from_static("x-amz-content-sha256"), v);
    }
    if let Some(t) = &creds.session_token
        && let Ok(v) = HeaderValue::from_str(t)
    {
        headers.insert(HeaderName::from_static("x-amz-security-token"), v);
    }
    let mut names: Vec<&str> = headers.keys().map(|k| k.as_str()).filter(|n| !UNSIGNED_HEADERS.contains(n)).collect();
    names.sort_unstable();
    names.dedup();
    let key = signing_key(&creds.secret_key, date, region);
    let scope = scope(date, region);
    let creq = canonical_request_hash(&CanonicalInput {
        method: method.as_str(),
        raw_path: uri.path(),
        raw_query: uri.query(),
        skip_param: None,
        signed_headers: &names,
        headers,
        fallback_host: uri.authority().map(|a| a.as_str()),
        payload_hash: payload_sha256,
    })
    .expect("every signed header is present");
    let sig = request_signature(&key, &amz, &scope, &creq);
    let auth = format!(
        "{ALGORITHM} Credential={}/{scope}, SignedHeaders={}, Signature={sig}",
        creds.access_key,
        names.join(";")
    );
    if let Ok(v) = HeaderValue::from_str(&auth) {
        headers.insert(http::header::AUTHORIZATION, v);
    }
    sig
}

/// A presigned URL for `method uri` valid for `expires` (clamped to 1 s ..= 7 days). `uri`
/// must be absolute (`http://host:port/bucket/key?query`); only `host` is signed and the
/// payload is `UNSIGNED-PAYLOAD`.
pub fn presign(
    method: &http::Method,
    uri: &http::Uri,
    creds: &Credentials,
    region: &str,
    expires: Duration,
    now: SystemTime,
) -> String {
    let amz = amz_date(now);
    let date = &amz[..8];
    let scope = scope(date, region);
    let expires = expires.as_secs().clamp(1, MAX_PRESIGN_EXPIRES);
    let mut query = String::new();
    if let Some(q) = uri.query().filter(|q| !q.is_empty()) {
        query.push_str(q);
        query.push('&');
    }
    query.push_str(&format!(
        "X-Amz-Algorithm={ALGORITHM}&X-Amz-Credential={}&X-Amz-Date={amz}&X-Amz-Expires={expires}&X-Amz-SignedHeaders=host",
        uri_encode(&format!("{}/{scope}", creds.access_key), false)
    ));
    if let Some(t) = &creds.session_token {
        query.push_str("&X-Amz-Security-Token=");
        query.push_str(&uri_encode(t, false));
    }
    let host = uri.authority().map(|a| a.as_str()).unwrap_or("");
    let mut headers = http::HeaderMap::new();
    if let Ok(v) = http::HeaderValue::from_str(host) {
        headers.insert(http::header::HOST, v);
    }
    let key = signing_key(&creds.secret_key, date, region);
    let creq = canonical_request_hash(&CanonicalInput {
        method: method.as_str(),
        raw_path: uri.path(),
        raw_query: Some(&query),
        skip_param: None,
        signed_headers: &["host"],
        headers: &headers,
        fallback_host: Some(host),
        payload_hash: UNSIGNED_PAYLOAD,
    })
    .unwrap_or_default();
    let sig = request_signature(&key, &amz, &scope, &creq);
    let scheme = uri.scheme_str().unwrap_or("http");
    format!("{scheme}://{host}{}?{query}&X-Amz-Signature={sig}", uri.path())
}

/// The canonical query string of a raw query (exposed for clients that build URLs).
pub fn canonical_query(raw: &str) -> String {
    let mut s = String::new();
    canonical_query_into(Some(raw), None, &mut s);
    s
}

/// Helpers that build aws-chunked bodies (tests, fuzzing, clients that send signed chunks).
pub mod testing {
    use super::ChunkContext;

    /// A signed aws-chunked body of `data` cut into `chunk` byte chunks; with `trailers`
    /// (`(name, value)`) the trailer section and its signature follow the zero chunk.
    pub fn signed_chunked_body(
        ctx: &ChunkContext,
        data: &[u8],
        chunk: usize,
        trailers: Option<&[(&str, &str)]>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + 256);
        let mut prev = ctx.seed_signature().to_string();
        let chunk = chunk.max(1);
        let mut pieces: Vec<&[u8]> = data.chunks(chunk).collect();
        pieces.push(&[]);
        for p in pieces {
            let sig = ctx.chunk_signature(&prev, p);
            out.extend_from_slice(format!("{:x};chunk-signature={sig}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            if !p.is_empty() || trailers.is_none() {
                out.extend_from_slice(b"\r\n");
            }
            prev = sig;
        }
        if let Some(tr) = trailers {
            let mut canon = Vec::new();
            for (k, v) in tr {
                out.extend_from_slice(format!("{k}:{v}\r\n").as_bytes());
                canon.extend_from_slice(format!("{k}:{v}\n").as_bytes());
            }
            let sig = ctx.trailer_signature(&prev, &canon);
            out.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n\r\n").as_bytes());
        }
        out
    }

    /// An unsigned aws-chunked body (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`).
    pub fn unsigned_chunked_body(data: &[u8], chunk: usize, trailers: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + 256);
        for p in data.chunks(chunk.max(1)) {
            out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n");
        for (k, v) in trailers {
            out.extend_from_slice(format!("{k}:{v}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

#[cfg(test)]
mod tests;
