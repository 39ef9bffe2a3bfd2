//! Server side: checking a request's `Authorization` header or presigned query.

use std::time::{Duration, SystemTime};

use s3hpc_core::{CredentialSet, Error, ErrorCode};

use crate::encode::{iso8601, parse_amz_date, percent_decode};
use crate::signer::*;
use crate::{Accept, ChunkContext, Payload, Verified};

/// Allowed difference between the request time and the server clock for header auth.
pub const MAX_SKEW: Duration = Duration::from_secs(15 * 60);
/// Longest validity of a presigned URL (7 days).
pub const MAX_PRESIGN_EXPIRES: u64 = 604_800;

fn malformed(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::AuthorizationHeaderMalformed, msg)
}

fn query_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::AuthorizationQueryParametersError, msg)
}

/// The parsed `Credential=AK/date/region/s3/aws4_request`.
struct Credential<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
}

/// Parse a credential scope; the error is AWS's wording of what is wrong (without the prefix
/// that says which of header or query carried it).
fn parse_credential<'a>(c: &'a str, want_service: &str) -> Result<Credential<'a>, String> {
    const MALFORMED: &str =
        "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".";
    // The access key itself never holds '/', so split from the right: the scope has 4 parts.
    let mut it = c.rsplitn(5, '/');
    let (Some(term), Some(service), Some(region), Some(date), Some(access_key)) =
        (it.next(), it.next(), it.next(), it.next(), it.next())
    else {
        return Err(MALFORMED.into());
    };
    if access_key.is_empty() || region.is_empty() {
        return Err(MALFORMED.into());
    }
    if date.len() != 8 || !date.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "incorrect date format \"{date}\". This date in the credential must be in the format \"yyyyMMdd\"."
        ));
    }
    if service != want_service {
        return Err(format!("incorrect service \"{service}\". This endpoint belongs to \"{want_service}\"."));
    }
    if term != "aws4_request" {
        return Err(format!("incorrect terminal \"{term}\". This endpoint uses \"aws4_request\"."));
    }
    Ok(Credential { access_key, date, region })
}

fn valid_signed_headers(s: &str) -> Option<Vec<&str>> {
    if s.is_empty() {
        return None;
    }
    let v: Vec<&str> = s.split(';').collect();
    if v.iter().any(|h| h.is_empty() || h.bytes().any(|b| b.is_ascii_uppercase() || b <= b' ')) {
        return None;
    }
    Some(v)
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The payload mode promised by `x-amz-content-sha256`.
pub(crate) fn payload_mode(v: Option<&str>, presigned: bool) -> Result<Payload, Error> {
    let Some(v) = v else {
        return if presigned {
            Ok(Payload::Unsigned)
        } else {
            Err(Error::new(ErrorCode::InvalidRequest, "Missing required header for this request: x-amz-content-sha256"))
        };
    };
    Ok(match v {
        UNSIGNED_PAYLOAD => Payload::Unsigned,
        STREAMING_SIGNED => Payload::Streaming { signed_chunks: true, trailer: false },
        STREAMING_SIGNED_TRAILER => Payload::Streaming { signed_chunks: true, trailer: true },
        STREAMING_UNSIGNED_TRAILER => Payload::Streaming { signed_chunks: false, trailer: true },
        v if is_hex64(v) => Payload::Sha256(v.to_ascii_lowercase()),
        v if v.starts_with("STREAMING-AWS4-ECDSA") => {
            return Err(Error::not_implemented("SigV4a (ECDSA) streaming payloads are not supported"));
        }
        _ => {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, \
                 STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
            ));
        }
    })
}

pub(crate) fn header_str<'a>(parts: &'a http::request::Parts, name: &str) -> Result<Option<&'a str>, Error> {
    match parts.headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.trim()))
            .map_err(|_| Error::new(ErrorCode::InvalidArgument, format!("header {name} is not valid text"))),
    }
}

/// Find a query parameter by exact (decoded) name; the value decoded.
pub(crate) fn query_param(raw: &str, name: &str) -> Option<String> {
    raw.split('&').find_map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (percent_decode(k).as_ref() == name.as_bytes())
            .then(|| String::from_utf8_lossy(&percent_decode(v)).into_owned())
    })
}

fn signed_time(parts: &http::request::Parts) -> Result<(String, SystemTime), Error> {
    if let Some(d) = header_str(parts, "x-amz-date")? {
        let t = parse_amz_date(d).ok_or_else(|| {
            Error::new(ErrorCode::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
        })?;
        return Ok((d.to_string(), t));
    }
    if let Some(d) = header_str(parts, "date")? {
        let t = httpdate::parse_http_date(d).map_err(|_| {
            Error::new(ErrorCode::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
        })?;
        return Ok((crate::encode::amz_date(t), t));
    }
    Err(Error::new(ErrorCode::AccessDenied, "AWS authentication requires a valid Date or x-amz-date header"))
}

/// InvalidAccessKeyId naming the key (AWS: `<AWSAccessKeyId>`).
pub(crate) fn unknown_key(access_key: &str) -> Error {
    Error::code(ErrorCode::InvalidAccessKeyId).with("AWSAccessKeyId", access_key)
}

/// SignatureDoesNotMatch with the elements AWS sends so a client can see what the server signed:
/// the key id, the string to sign, the signature sent, the canonical request, and the two as
/// bytes in hex. Only what the request itself carries: nothing derived from the secret.
fn sig_mismatch(access_key: &str, provided: &str, amz_date: &str, scope: &str, inp: &CanonicalInput<'_>) -> Error {
    let creq = canonical_request(inp).unwrap_or_default();
    let sts = string_to_sign(amz_date, scope, &sha256_hex(&creq));
    let hex_bytes = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ");
    Error::code(ErrorCode::SignatureDoesNotMatch)
        .with("AWSAccessKeyId", access_key)
        .with("StringToSign", sts.clone())
        .with("SignatureProvided", provided)
        .with("StringToSignBytes", hex_bytes(sts.as_bytes()))
        .with("CanonicalRequest", String::from_utf8_lossy(&creq))
        .with("CanonicalRequestBytes", hex_bytes(&creq))
}

/// AWS's refusal of a request carrying `x-amz-*` headers its signature does not cover: 403
/// AccessDenied with the unsigned names (lower case, comma-separated, in request order).
/// `exempt`: a header allowed unsigned (`x-amz-content-sha256` on presigned URLs).
fn check_unsigned_amz_headers(
    parts: &http::request::Parts,
    signed: &[&str],
    exempt: Option<&str>,
) -> Result<(), Error> {
    let mut unsigned = String::new();
    for name in parts.headers.keys() {
        let n = name.as_str();
        if n.starts_with("x-amz-") && !signed.contains(&n) && Some(n) != exempt {
            if !unsigned.is_empty() {
                unsigned.push_str(", ");
            }
            unsigned.push_str(n);
        }
    }
    if unsigned.is_empty() {
        return Ok(());
    }
    Err(Error::new(ErrorCode::AccessDenied, "There were headers present in the request which were not signed")
        .with("HeadersNotSigned", unsigned))
}

/// The region part of AWS's refusal of a credential scoped to another region.
fn wrong_region(region: &str, expected: &str) -> String {
    format!("the region '{region}' is wrong; expecting '{expected}'")
}

pub(crate) fn abs_diff(a: SystemTime, b: SystemTime) -> Duration {
    a.duration_since(b).or_else(|_| b.duration_since(a)).unwrap_or_default()
}

/// Whether a request carries no authentication at all (no Authorization header, no presigned
/// query): an anonymous request.
pub fn is_anonymous(parts: &http::request::Parts) -> bool {
    let query = parts.uri.query().unwrap_or("");
    !parts.headers.contains_key(http::header::AUTHORIZATION)
        && !query.contains("X-Amz-Algorithm=")
        && !query.contains("X-Amz-Signature=")
        && !query.contains("X-Amz-Credential=")
        && !crate::sigv2::is_presigned(query)
}

/// AWS's answer to a mechanism it does not take (SigV2 where it is turned off).
pub(crate) fn unsupported_mechanism() -> Error {
    Error::new(
        ErrorCode::InvalidRequest,
        "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
    )
}

pub fn verify(
    parts: &http::request::Parts,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
) -> Result<Verified, Error> {
    let auth = header_str(parts, "authorization")?;
    let query = parts.uri.query().unwrap_or("");
    let presigned = query.contains("X-Amz-Algorithm=") || query.contains("X-Amz-Signature=");
    let presigned_v2 = !presigned && crate::sigv2::is_presigned(query);
    match (auth, presigned || presigned_v2) {
        (Some(_), true) => Err(Error::invalid_argument(
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified",
        )),
        (Some(a), false) if a.starts_with("AWS ") => {
            if !accept.sigv2 {
                return Err(unsupported_mechanism());
            }
            crate::sigv2::verify_header(parts, a, creds, now, accept)
        }
        (Some(a), false) => verify_header(parts, a, creds, now, accept, None),
        (None, true) if presigned => verify_presigned(parts, query, creds, now, accept),
        (None, _) if presigned_v2 => {
            if !accept.sigv2 {
                return Err(unsupported_mechanism());
            }
            crate::sigv2::verify_presigned(parts, query, creds, now, accept)
        }
        (None, _) => Err(Error::new(ErrorCode::AccessDenied, "Access Denied: anonymous requests are not allowed")),
    }
}

fn host_of(parts: &http::request::Parts) -> Option<&str> {
    parts.uri.authority().map(|a| a.as_str())
}

/// A header-signed request to another AWS service on this endpoint (STS: service `sts`), whose
/// payload hash the caller computed from the body it read (`payload_sha256`, hex). Only the
/// `Authorization` header is taken.
pub fn verify_service(
    parts: &http::request::Parts,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
    service: &str,
    payload_sha256: &str,
) -> Result<Verified, Error> {
    match header_str(parts, "authorization")? {
        Some(a) if a.starts_with(ALGORITHM) => {
            verify_header(parts, a, creds, now, accept, Some((service, payload_sha256)))
        }
        Some(_) => Err(unsupported_mechanism()),
        None => Err(Error::new(ErrorCode::AccessDenied, "Access Denied: anonymous requests are not allowed")),
    }
}

fn verify_header(
    parts: &http::request::Parts,
    auth: &str,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
    other_service: Option<(&str, &str)>,
) -> Result<Verified, Error> {
    let Some(rest) = auth.strip_prefix(ALGORITHM) else {
        return Err(malformed("The authorization header is malformed; unsupported algorithm."));
    };
    if !rest.starts_with(' ') {
        return Err(malformed("The authorization header is malformed; unsupported algorithm."));
    }
    let (mut cred, mut signed, mut sig) = (None, None, None);
    for field in rest.split(',') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let (k, v) = field.split_once('=').ok_or_else(|| {
            malformed(format!("The authorization header is malformed; '{field}' is not a key=value pair."))
        })?;
        let slot = match k.trim() {
            "Credential" => &mut cred,
            "SignedHeaders" => &mut signed,
            "Signature" => &mut sig,
            other => return Err(malformed(format!("The authorization header is malformed; unknown field '{other}'."))),
        };
        if slot.replace(v.trim()).is_some() {
            return Err(malformed(format!("The authorization header is malformed; '{}' appears twice.", k.trim())));
        }
    }
    let cred = cred.ok_or_else(|| malformed("The authorization header is malformed; missing Credential."))?;
    let signed = signed.ok_or_else(|| malformed("The authorization header is malformed; missing SignedHeaders."))?;
    let sig = sig.ok_or_else(|| malformed("The authorization header is malformed; missing Signature."))?;
    let want_service = other_service.map_or("s3", |(s, _)| s);
    let cred = parse_credential(cred, want_service)
        .map_err(|why| malformed(format!("The authorization header is malformed; {why}")))?;
    if cred.region != accept.region {
        return Err(malformed(format!(
            "The authorization header is malformed; {}",
            wrong_region(cred.region, &accept.region)
        ))
        .with("Region", accept.region.clone()));
    }
    let signed_list = valid_signed_headers(signed)
        .ok_or_else(|| malformed("The authorization header is malformed; invalid SignedHeaders."))?;
    if !signed_list.contains(&"host") {
        return Err(malformed("The authorization header is malformed; the host header must be signed."));
    }
    let secret = creds.secret_for(cred.access_key).ok_or_else(|| unknown_key(cred.access_key))?;
    let (amz_date, t) = signed_time(parts)?;
    if !amz_date.starts_with(cred.date) {
        return Err(malformed(format!(
            "The authorization header is malformed; Invalid credential date \"{}\". This date is not the same as X-Amz-Date: \"{}\".",
            cred.date,
            &amz_date[..8]
        )));
    }
    if abs_diff(t, now) > MAX_SKEW {
        // AWS echoes the time as sent (X-Amz-Date, else Date), its own in ISO 8601, the limit.
        let sent = match header_str(parts, "x-amz-date")? {
            Some(d) => d.to_string(),
            None => header_str(parts, "date")?.map_or_else(|| amz_date.clone(), str::to_string),
        };
        return Err(Error::code(ErrorCode::RequestTimeTooSkewed)
            .with("RequestTime", sent)
            .with("ServerTime", iso8601(now))
            .with("MaxAllowedSkewMilliseconds", MAX_SKEW.as_millis().to_string()));
    }
    check_unsigned_amz_headers(parts, &signed_list, None)?;
    let (content_sha, payload, key, scope) = match other_service {
        None => {
            let content_sha = header_str(parts, "x-amz-content-sha256")?;
            (
                content_sha,
                payload_mode(content_sha, false)?,
                signing_key(&secret, cred.date, cred.region),
                scope(cred.date, cred.region),
            )
        }
        Some((service, hash)) => (
            Some(hash),
            Payload::Sha256(hash.to_string()),
            derive_service_key(&secret, cred.date, cred.region, service),
            format!("{}/{}/{service}/aws4_request", cred.date, cred.region),
        ),
    };
    let input = CanonicalInput {
        method: parts.method.as_str(),
        raw_path: parts.uri.path(),
        raw_query: parts.uri.query(),
        skip_param: None,
        signed_headers: &signed_list,
        headers: &parts.headers,
        fallback_host: host_of(parts),
        payload_hash: content_sha.unwrap_or(UNSIGNED_PAYLOAD),
    };
    let creq = canonical_request_hash(&input)
        .map_err(|h| Error::new(ErrorCode::AccessDenied, format!("Signed header '{h}' is missing from the request")))?;
    let want = request_signature(&key, &amz_date, &scope, &creq);
    if !sig_eq(&want, sig) {
        return Err(sig_mismatch(cred.access_key, sig, &amz_date, &scope, &input));
    }
    let chunk_ctx = match &payload {
        Payload::Streaming { .. } => {
            let decoded_len = match header_str(parts, "x-amz-decoded-content-length")? {
                None => None,
                Some(v) => Some(v.parse::<u64>().map_err(|_| {
                    Error::invalid_argument("x-amz-decoded-content-length must be a non-negative integer")
                })?),
            };
            Some(ChunkContext { key, amz_date, scope, seed: want, decoded_len })
        }
        _ => None,
    };
    Ok(Verified { access_key: cred.access_key.to_string(), payload, chunk_ctx })
}

fn verify_presigned(
    parts: &http::request::Parts,
    query: &str,
    creds: &CredentialSet,
    now: SystemTime,
    accept: &Accept,
) -> Result<Verified, Error> {
    let get = |name: &str| query_param(query, name);
    let missing = || {
        query_error(
            "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
        )
    };
    let alg = get("X-Amz-Algorithm").ok_or_else(missing)?;
    let cred_s = get("X-Amz-Credential").ok_or_else(missing)?;
    let date_s = get("X-Amz-Date").ok_or_else(missing)?;
    let expires_s = get("X-Amz-Expires").ok_or_else(missing)?;
    let signed_s = get("X-Amz-SignedHeaders").ok_or_else(missing)?;
    let sig = get("X-Amz-Signature").ok_or_else(missing)?;
    if alg != ALGORITHM {
        return Err(query_error("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\""));
    }
    let cred = parse_credential(&cred_s, "s3")
        .map_err(|why| query_error(format!("Error parsing the X-Amz-Credential parameter; {why}")))?;
    if cred.region != accept.region {
        return Err(query_error(format!(
            "Error parsing the X-Amz-Credential parameter; {}",
            wrong_region(cred.region, &accept.region)
        ))
        .with("Region", accept.region.clone()));
    }
    let t = parse_amz_date(&date_s)
        .ok_or_else(|| query_error("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\""))?;
    let expires: i64 = expires_s.parse().map_err(|_| query_error("X-Amz-Expires should be a number"))?;
    if expires < 0 {
        return Err(query_error("X-Amz-Expires must be non-negative"));
    }
    if expires as u64 > MAX_PRESIGN_EXPIRES {
        return Err(query_error(format!(
            "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than {MAX_PRESIGN_EXPIRES} seconds"
        )));
    }
    let expires = expires as u64;
    if !date_s.starts_with(cred.date) {
        return Err(query_error(format!(
            "Invalid credential date \"{}\". This date is not the same as X-Amz-Date: \"{}\".",
            cred.date,
            &date_s[..8]
        )));
    }
    let signed_list = valid_signed_headers(&signed_s).ok_or_else(|| query_error("X-Amz-SignedHeaders is invalid"))?;
    if !signed_list.contains(&"host") {
        return Err(query_error("X-Amz-SignedHeaders must include host"));
    }
    let secret = creds.secret_for(cred.access_key).ok_or_else(|| unknown_key(cred.access_key))?;
    if t > now + MAX_SKEW {
        return Err(Error::new(ErrorCode::AccessDenied, "Request is not valid yet"));
    }
    if now > t + Duration::from_secs(expires) {
        // AWS: the lifetime as sent, the instant it ended, its own time (ISO 8601).
        return Err(Error::new(ErrorCode::AccessDenied, "Request has expired.")
            .with("X-Amz-Expires", expires_s.clone())
            .with("Expires", iso8601(t + Duration::from_secs(expires)))
            .with("ServerTime", iso8601(now)));
    }
    check_unsigned_amz_headers(parts, &signed_list, Some("x-amz-content-sha256"))?;
    let content_sha = header_str(parts, "x-amz-content-sha256")?;
    let payload = payload_mode(content_sha, true)?;
    if matches!(payload, Payload::Streaming { .. }) {
        return Err(Error::new(ErrorCode::InvalidRequest, "aws-chunked payloads need header authentication"));
    }
    let key = signing_key(&secret, cred.date, cred.region);
    let scope = scope(cred.date, cred.region);
    let input = CanonicalInput {
        method: parts.method.as_str(),
        raw_path: parts.uri.path(),
        raw_query: parts.uri.query(),
        skip_param: Some("X-Amz-Signature"),
        signed_headers: &signed_list,
        headers: &parts.headers,
        fallback_host: host_of(parts),
        payload_hash: content_sha.unwrap_or(UNSIGNED_PAYLOAD),
    };
    let creq = canonical_request_hash(&input)
        .map_err(|h| Error::new(ErrorCode::AccessDenied, format!("Signed header '{h}' is missing from the request")))?;
    let want = request_signature(&key, &date_s, &scope, &creq);
    if !sig_eq(&want, &sig) {
        return Err(sig_mismatch(cred.access_key, &sig, &date_s, &scope, &input));
    }
    Ok(Verified { access_key: cred.access_key.to_string(), payload, chunk_ctx: None })
}
