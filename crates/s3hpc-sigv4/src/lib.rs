//! AWS Signature Version 4 for s3hpc.
//!
//! Server side: [`verify`] checks a request's `Authorization` header or presigned query, and
//! [`verified_body`] turns the request body into the plain object bytes while checking what the
//! payload mode promises (SHA-256, chunk signatures, trailers).
//! Client side: [`sign`] and [`presign`].
//!
//! CONTRACT (agreed between the gateway, the client and this crate; keep these signatures):
//! the bodies below are being written now.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

pub use s3hpc_core::{ByteStream, CredentialSet, Credentials, Error};

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

/// A request whose signature was checked.
#[derive(Debug, Clone)]
pub struct Verified {
    pub access_key: String,
    pub payload: Payload,
    /// What chunk signatures chain from (the seed signature, scope, signing key); opaque.
    pub chunk_ctx: Option<ChunkContext>,
}

/// Opaque state for chunk-signature verification.
#[derive(Debug, Clone)]
pub struct ChunkContext {
    _private: (),
}

/// Where the decoder puts the value of one trailer (e.g. `x-amz-checksum-crc32`).
#[derive(Debug, Clone)]
pub struct TrailerSink {
    /// Lower-case trailer header name.
    pub name: String,
    pub value: Arc<OnceLock<String>>,
}

/// Verify header auth or a presigned URL. `now` is the server clock (15 min skew allowed for
/// header auth; presigned X-Amz-Expires 1..=604800 s). Anonymous requests are refused.
pub fn verify(_parts: &http::request::Parts, _creds: &CredentialSet, _now: SystemTime) -> Result<Verified, Error> {
    Err(Error::not_implemented("SigV4 verification is being written"))
}

/// The request body as the store should read it: de-chunked and verified as the payload mode
/// requires. A failed check ends the stream with an `Err` wrapping the S3 error
/// (`XAmzContentSHA256Mismatch`, `SignatureDoesNotMatch`, `IncompleteBody`, `InvalidRequest`),
/// so the store publishes nothing.
pub fn verified_body(_v: &Verified, body: ByteStream, _trailer: Option<TrailerSink>) -> ByteStream {
    body
}

/// Sign a request in place (adds `x-amz-date`, `x-amz-content-sha256`, `authorization`; `host`
/// must already be present). `payload_sha256` is a hex digest or `UNSIGNED-PAYLOAD`.
pub fn sign(
    _method: &http::Method,
    _uri: &http::Uri,
    _headers: &mut http::HeaderMap,
    _creds: &Credentials,
    _region: &str,
    _payload_sha256: &str,
    _now: SystemTime,
) {
}

/// A presigned URL for `method uri` valid for `expires`.
pub fn presign(
    _method: &http::Method,
    _uri: &http::Uri,
    _creds: &Credentials,
    _region: &str,
    _expires: Duration,
    _now: SystemTime,
) -> String {
    String::new()
}
