//! POST object: a browser form upload (`POST /bucket`, `multipart/form-data`).
//!
//! The fields before `file` are read (at most [`MAX_PRE_DATA`] bytes); the `file` field streams
//! into the store as a PutObject body, and whatever follows it is ignored (as AWS does). A form
//! signed with SigV4 (`policy`, `x-amz-algorithm`, `x-amz-credential`, `x-amz-date`,
//! `x-amz-signature`) acts as the key's account once the signature of the policy is verified
//! and every condition of the policy holds; an unsigned form is anonymous, so the bucket policy
//! or ACL decides as for any anonymous PutObject (through the authorizing store).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode, header};
use serde_json::Value;

use s3hpc_core::caller::Caller;
use s3hpc_core::names::{MAX_OBJECT_TAGS, validate_tags};
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::form::FormReader;
use crate::util::url_encode_key;
use crate::xml::{self, DECL, elem};

/// Most bytes of the form fields before the file (names and values), as on AWS.
pub(super) const MAX_PRE_DATA: usize = 20 * 1024;

/// Fields no policy condition needs to cover (AWS's list).
fn exempt(name: &str) -> bool {
    matches!(name, "x-amz-signature" | "file" | "policy" | "signature" | "awsaccesskeyid")
        || name.starts_with("x-ignore-")
}

fn invalid_policy(msg: &str) -> Error {
    Error::new(ErrorCode::InvalidPolicyDocument, format!("Invalid Policy: {msg}"))
}

fn denied(msg: String) -> Error {
    Error::new(ErrorCode::AccessDenied, format!("Invalid according to Policy: {msg}"))
}

fn missing_field(name: &str) -> Error {
    Error::invalid_argument(format!(
        "Bucket POST must contain a field named '{name}'.  If it is specified, please check the order of the fields."
    ))
}

/// The form fields before the file: lower-case names, values as sent.
struct Fields(Vec<(String, String)>);

impl Fields {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

pub(super) async fn post_object(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    let Some(boundary) = crate::form::boundary(hdr(h, "content-type").unwrap_or("")) else {
        return Err(Error::new(
            ErrorCode::PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold: Bucket POST must be of the enclosure-type multipart/form-data",
        ));
    };
    let (body, _permit) = body.upload_slot(&r.st.uploads).await?;
    let mut form = FormReader::new(body_stream(r, body, None), &boundary);
    form.start().await?;
    let mut fields = Vec::new();
    let mut pre = 0usize;
    let file = loop {
        let Some(part) = form.next_part().await? else {
            return Err(Error::invalid_argument("POST requires exactly one file upload per request."));
        };
        let name = part.name.to_ascii_lowercase();
        if name == "file" {
            break part;
        }
        pre += name.len();
        let too_large = || Error::code(ErrorCode::MaxPostPreDataLengthExceededError);
        let v = form.value(MAX_PRE_DATA.checked_sub(pre).ok_or_else(too_large)?, too_large).await?;
        pre += v.len();
        let v = String::from_utf8(v.to_vec())
            .map_err(|_| Error::invalid_argument(format!("The value of form field {name} is not UTF-8")))?;
        if fields.iter().any(|(n, _)| *n == name) {
            return Err(Error::invalid_argument(format!("The form field {name} appears more than once")));
        }
        fields.push((name, v));
    };
    let fields = Fields(fields);
    let key_field = fields.get("key").ok_or_else(|| missing_field("key"))?;
    let key = key_field.replace("${filename}", file.filename.as_deref().unwrap_or(""));
    if key.is_empty() {
        return Err(Error::invalid_argument("User key must have a length greater than 0."));
    }
    names::validate_key(&key)?;

    // Who asks: the form's signer, the request's (a header-signed POST), or anonymous.
    let v2 = fields.get("x-amz-signature").is_none()
        && (fields.get("signature").is_some() || fields.get("awsaccesskeyid").is_some());
    let scope = if v2 {
        if !r.st.cfg.sigv2 {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
            ));
        }
        Some(verify_signature_v2(r, &fields)?)
    } else if fields.get("x-amz-signature").is_some() || fields.get("policy").is_some() {
        Some(verify_signature(r, &fields)?)
    } else if r.verified.is_some() {
        None
    } else if r.st.cfg.anonymous {
        Some((None, r.st.cfg.anonymous_identity.clone()))
    } else {
        return Err(Error::new(ErrorCode::AccessDenied, "Access Denied"));
    };
    let mut length_range = (0u64, MAX_PUT_SIZE);
    if let Some(policy) = fields.get("policy") {
        length_range = check_policy(policy, &fields, &r.bucket, &key, SystemTime::now())?;
    }

    // The object: metadata, tags, checksum and refused features as the same-named headers.
    let mut hm = HeaderMap::new();
    for (n, v) in &fields.0 {
        let keep = n.starts_with("x-amz-")
            || matches!(
                n.as_str(),
                "content-type"
                    | "cache-control"
                    | "content-disposition"
                    | "content-encoding"
                    | "content-language"
                    | "expires"
            );
        if keep
            && !matches!(
                n.as_str(),
                "x-amz-signature" | "x-amz-credential" | "x-amz-date" | "x-amz-algorithm" | "x-amz-security-token"
            )
            && let (Ok(name), Ok(value)) = (HeaderName::from_bytes(n.as_bytes()), HeaderValue::from_str(v))
        {
            hm.append(name, value);
        }
    }
    // The file part's own Content-Type is not the object's (as on S3): only the `Content-Type`
    // field sets one, else the object reads as binary/octet-stream.
    refuse_unsupported_write_headers(&hm)?;
    let (checksum, _) = checksum_request(&hm)?;
    let checksum = checksum.or_else(|| default_checksum(r));
    let tags = match fields.get("tagging") {
        Some(doc) => {
            let tags = xml::parse_tagging(doc.as_bytes())?;
            validate_tags(&tags, MAX_OBJECT_TAGS)?;
            tags
        }
        None => Vec::new(),
    };
    let req = PutObjectRequest {
        meta: object_meta(&hm)?,
        tags,
        content_md5: None,
        checksum,
        content_length: None,
        conditions: Conditions::default(),
        lock: ObjectLock::default(),
    };
    // The file, within the policy's content-length-range: too many bytes end the body with
    // EntityTooLarge as they arrive, too few with EntityTooSmall at its end (before the store
    // publishes), so nothing outside the range is ever stored.
    let (min, max) = length_range;
    let too = |code, msg: &str| std::io::Error::from(Error::new(code, msg));
    let data = futures::stream::unfold(Some((form.into_stream(), 0u64)), move |st| async move {
        let (mut inner, seen) = st?;
        match futures::StreamExt::next(&mut inner).await {
            Some(Ok(c)) => {
                let seen = seen + c.len() as u64;
                if seen > max {
                    let e = too(ErrorCode::EntityTooLarge, "Your proposed upload exceeds the maximum allowed size");
                    return Some((Err(e), None));
                }
                Some((Ok(c), Some((inner, seen))))
            }
            Some(Err(e)) => Some((Err(e), None)),
            None if seen < min => Some((
                Err(too(ErrorCode::EntityTooSmall, "Your proposed upload is smaller than the minimum allowed size")),
                None,
            )),
            None => None,
        }
    });
    let store = store(r).clone();
    let (bucket, key2) = (r.bucket.clone(), key.clone());
    let put = async move { store.put_object(&bucket, &key2, req, Body::Stream(Box::pin(data))).await };
    let out = match scope {
        None => put.await?,
        Some((account, id)) => {
            let mut c: Caller = (*super::caller(r.st, r.parts, account)).clone();
            if let Some(acl) = fields.get("acl") {
                c.headers.acl = vec![("x-amz-acl".to_string(), acl.to_string())];
            }
            s3hpc_core::identity::scope(id, s3hpc_core::caller::scope(Some(Arc::new(c)), put)).await?
        }
    };
    answer(r, &fields, &key, &out)
}

/// The signer of a SigV4 form: the policy's signature checked with the credential's key.
#[allow(clippy::type_complexity)]
fn verify_signature(
    r: &Req<'_>,
    f: &Fields,
) -> Result<(Option<Arc<s3hpc_core::caller::Account>>, Option<s3hpc_core::identity::Identity>)> {
    let policy = f.get("policy").ok_or_else(|| missing_field("policy"))?;
    let sig = f.get("x-amz-signature").ok_or_else(|| missing_field("x-amz-signature"))?;
    let alg = f.get("x-amz-algorithm").ok_or_else(|| missing_field("x-amz-algorithm"))?;
    if alg != "AWS4-HMAC-SHA256" {
        return Err(Error::invalid_argument(format!(
            "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\", not \"{alg}\""
        )));
    }
    let cred = f.get("x-amz-credential").ok_or_else(|| missing_field("x-amz-credential"))?;
    let date = f.get("x-amz-date").ok_or_else(|| missing_field("x-amz-date"))?;
    let parts: Vec<&str> = cred.split('/').collect();
    let [ak, day, region, "s3", "aws4_request"] = parts[..] else {
        return Err(Error::invalid_argument(format!("Invalid x-amz-credential: {cred}")));
    };
    if day.len() != 8 || !date.starts_with(day) {
        return Err(Error::invalid_argument(format!("Invalid x-amz-date or x-amz-credential date: {date}, {cred}")));
    }
    if region != r.st.cfg.region {
        // AWS: 400 InvalidArgument for a POST form scoped to another region.
        return Err(Error::invalid_argument(format!(
            "Error parsing the X-Amz-Credential parameter; the region '{region}' is wrong; expecting '{}'",
            r.st.cfg.region
        ))
        .with_argument("x-amz-credential", cred)
        .with("Region", r.st.cfg.region.clone()));
    }
    let creds = &r.st.cfg.creds;
    let unknown = || Error::code(ErrorCode::InvalidAccessKeyId).with("AWSAccessKeyId", ak);
    let secret = creds.secret_for(ak).ok_or_else(unknown)?;
    let key = s3hpc_sigv4::signer::signing_key(&secret, day, region);
    let want = hex_lower(&s3hpc_sigv4::signer::hmac(&key, policy.as_bytes()));
    if !s3hpc_sigv4::signer::sig_eq(&want, sig) {
        return Err(Error::code(ErrorCode::SignatureDoesNotMatch));
    }
    // Temporary credentials need their session token (the form's field), as in headers.
    creds.check_session_token(ak, f.get("x-amz-security-token"))?;
    let (account, id) = creds.account_and_identity(ak).ok_or_else(unknown)?;
    Ok((Some(account), id))
}

/// The signer of a SigV2 form: `signature` = base64(HMAC-SHA1(secret, policy)) with the key of
/// `AWSAccessKeyId`; the same account and identity as a SigV4 form's.
#[allow(clippy::type_complexity)]
fn verify_signature_v2(
    r: &Req<'_>,
    f: &Fields,
) -> Result<(Option<Arc<s3hpc_core::caller::Account>>, Option<s3hpc_core::identity::Identity>)> {
    let ak = f.get("awsaccesskeyid").ok_or_else(|| missing_field("AWSAccessKeyId"))?;
    let policy = f.get("policy").ok_or_else(|| missing_field("policy"))?;
    let sig = f.get("signature").ok_or_else(|| missing_field("signature"))?;
    let creds = &r.st.cfg.creds;
    let unknown = || Error::code(ErrorCode::InvalidAccessKeyId).with("AWSAccessKeyId", ak);
    let secret = creds.secret_for(ak).ok_or_else(unknown)?;
    if !s3hpc_sigv4::signer::sig_eq(&s3hpc_sigv4::sigv2::signature(&secret, policy.as_bytes()), sig.trim()) {
        return Err(Error::code(ErrorCode::SignatureDoesNotMatch));
    }
    creds.check_session_token(ak, f.get("x-amz-security-token"))?;
    let (account, id) = creds.account_and_identity(ak).ok_or_else(unknown)?;
    Ok((Some(account), id))
}

fn hex_lower(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `2026-11-26T05:00:00Z` or `2026-11-26T05:00:00.000Z`.
fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let (time, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<u64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [y, m, day] = d[..] else { return None };
    let [hh, mm, ss] = t[..] else { return None };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    if !frac.is_empty() && !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days).ok()? * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Render a condition as AWS quotes it in its message: `["eq", "$key", "x"]`.
fn render(c: &Value) -> String {
    match c {
        Value::Array(a) => format!("[{}]", a.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => {
            let (k, v) = o.iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap_or_default();
            format!("[\"eq\", \"${k}\", {v}]")
        }
        other => other.to_string(),
    }
}

/// Check a base64 policy document against the form: expiration, every condition, every field
/// covered. Returns the content-length-range (0..=5 GiB when the policy has none).
fn check_policy(policy_b64: &str, f: &Fields, bucket: &str, key: &str, now: SystemTime) -> Result<(u64, u64)> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(policy_b64.trim())
        .map_err(|_| invalid_policy("Invalid 'Policy' field: not base64 encoded."))?;
    let doc: Value = serde_json::from_slice(&raw).map_err(|_| invalid_policy("Invalid JSON."))?;
    let obj = doc.as_object().ok_or_else(|| invalid_policy("Invalid JSON."))?;
    let exp = obj.get("expiration").ok_or_else(|| invalid_policy("Policy missing expiration."))?;
    let exp = exp.as_str().and_then(parse_iso8601).ok_or_else(|| invalid_policy("Invalid 'expiration' value."))?;
    if exp <= now {
        return Err(denied("Policy expired.".into()));
    }
    let conds = obj
        .get("conditions")
        .ok_or_else(|| invalid_policy("Policy missing conditions."))?
        .as_array()
        .ok_or_else(|| invalid_policy("Invalid 'conditions' value: must be a list."))?;
    let value_of = |name: &str| -> Option<String> {
        match name {
            "bucket" => Some(bucket.to_string()),
            "key" => Some(key.to_string()),
            n => f.get(n).map(str::to_string),
        }
    };
    let mut covered: Vec<String> = Vec::new();
    let mut range = (0u64, MAX_PUT_SIZE);
    for c in conds {
        let fail = || denied(format!("Policy Condition failed: {}", render(c)));
        match c {
            Value::Object(o) => {
                if o.len() != 1 {
                    return Err(invalid_policy(&format!("Invalid Condition: {c}")));
                }
                let (k, v) = o.iter().next().expect("one entry");
                let name = k.trim_start_matches('$').to_ascii_lowercase();
                let want = v.as_str().ok_or_else(|| invalid_policy(&format!("Invalid Condition: {c}")))?;
                if value_of(&name).as_deref() != Some(want) {
                    return Err(fail());
                }
                covered.push(name);
            }
            Value::Array(a) => {
                let op = a.first().and_then(Value::as_str).map(str::to_ascii_lowercase);
                match op.as_deref() {
                    Some("content-length-range") => {
                        let n = |i: usize| {
                            a.get(i).and_then(|v| v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
                        };
                        match (a.len(), n(1), n(2)) {
                            (3, Some(lo), Some(hi)) if lo <= hi => range = (lo, hi),
                            _ => return Err(invalid_policy(&format!("Invalid content-length-range: {c}"))),
                        }
                    }
                    Some(op @ ("eq" | "starts-with")) => {
                        let (Some(name), Some(want), 3) =
                            (a.get(1).and_then(Value::as_str), a.get(2).and_then(Value::as_str), a.len())
                        else {
                            return Err(invalid_policy(&format!("Invalid Condition: {c}")));
                        };
                        let Some(name) = name.strip_prefix('$') else {
                            return Err(invalid_policy(&format!("Invalid Condition: {c}")));
                        };
                        let name = name.to_ascii_lowercase();
                        let got = value_of(&name);
                        let ok = if op == "eq" {
                            got.as_deref() == Some(want)
                        } else {
                            // starts-with "" matches anything, the field being absent too.
                            want.is_empty() || got.is_some_and(|g| g.starts_with(want))
                        };
                        if !ok {
                            return Err(fail());
                        }
                        covered.push(name);
                    }
                    _ => return Err(invalid_policy(&format!("Invalid Condition: {c}"))),
                }
            }
            _ => return Err(invalid_policy(&format!("Invalid Condition: {c}"))),
        }
    }
    let extra: Vec<&str> =
        f.0.iter().map(|(n, _)| n.as_str()).filter(|n| !exempt(n) && !covered.iter().any(|c| c == n)).collect();
    if !extra.is_empty() {
        return Err(denied(format!("Extra input fields: {}", extra.join(", "))));
    }
    Ok(range)
}

/// `x-amz-version-id` of a new version (versioning-enabled buckets), as a PUT answers.
fn versioned(b: http::response::Builder, out: &PutObjectOutput) -> Result<http::response::Builder> {
    Ok(match &out.version_id {
        Some(v) => b.header("x-amz-version-id", hval(v)?),
        None => b,
    })
}

/// success_action_redirect (303 to it, with bucket, key and ETag added to its query), else
/// success_action_status: 200 or 204 empty, 201 with the PostResponse document; 204 otherwise.
fn answer(r: &Req<'_>, f: &Fields, key: &str, out: &PutObjectOutput) -> Result<Resp> {
    let host = hdr(&r.parts.headers, "host").unwrap_or("localhost");
    let scheme = if r.st.cfg.tls.is_some() { "https" } else { "http" };
    let location = format!("{scheme}://{host}/{}/{}", r.bucket, url_encode_key(key));
    let etag = quoted(&out.etag);
    let redirect = f.get("success_action_redirect").or(f.get("redirect"));
    if let Some(url) = redirect.filter(|u| u.starts_with("http://") || u.starts_with("https://")) {
        let enc = |s: &str| url_encode_key(s).replace('/', "%2F");
        let sep = if url.contains('?') { '&' } else { '?' };
        let to = format!("{url}{sep}bucket={}&key={}&etag={}", enc(&r.bucket), enc(key), enc(&etag));
        return Ok(versioned(Response::builder(), out)?
            .status(StatusCode::SEE_OTHER)
            .header(header::LOCATION, hval(&to)?)
            .header(header::ETAG, hval(&etag)?)
            .header(header::CONTENT_LENGTH, "0")
            .body(RespBody::Empty)
            .unwrap());
    }
    let b = |status| -> Result<http::response::Builder> {
        Ok(versioned(Response::builder(), out)?
            .status(status)
            .header(header::ETAG, hval(&etag)?)
            .header(header::LOCATION, hval(&location)?))
    };
    match f.get("success_action_status") {
        Some("200") => Ok(b(StatusCode::OK)?.header(header::CONTENT_LENGTH, "0").body(RespBody::Empty).unwrap()),
        Some("201") => {
            let mut s = String::from(DECL);
            // Without a namespace, as AWS writes it (S3's answers quoted in minio/minio#1477 and
            // localstack/localstack#1302; ceph s3-tests test_post_object_set_success_code reads
            // `Key` without one).
            s.push_str("<PostResponse>");
            elem(&mut s, "Location", &location);
            elem(&mut s, "Bucket", &r.bucket);
            elem(&mut s, "Key", key);
            elem(&mut s, "ETag", &etag);
            s.push_str("</PostResponse>");
            Ok(b(StatusCode::CREATED)?
                .header(header::CONTENT_TYPE, "application/xml")
                .header(header::CONTENT_LENGTH, s.len())
                .body(RespBody::full(s))
                .unwrap())
        }
        _ => Ok(b(StatusCode::NO_CONTENT)?.body(RespBody::Empty).unwrap()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: &[(&str, &str)]) -> Fields {
        Fields(v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect())
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn iso_dates() {
        let t = parse_iso8601("2026-11-26T05:00:00Z").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 1_795_669_200);
        assert_eq!(parse_iso8601("2026-11-26T05:00:00.123Z"), Some(t));
        assert_eq!(parse_iso8601("2026-11-26 05:00:00"), None);
        assert_eq!(parse_iso8601("2026-13-26T05:00:00Z"), None);
    }

    #[test]
    fn policy_conditions() {
        let now = parse_iso8601("2026-11-26T04:00:00Z").unwrap();
        let f = fields(&[("key", "user/a.txt"), ("x-amz-meta-a", "1"), ("policy", "p"), ("x-ignore-me", "x")]);
        let doc =
            |conds: &str| b64(&format!("{{\"expiration\": \"2026-11-26T05:00:00Z\", \"conditions\": [{conds}]}}"));
        let ok = doc(
            r#"{"bucket": "b"}, ["starts-with", "$key", "user/"], ["eq", "$x-amz-meta-a", "1"], ["content-length-range", 1, 10]"#,
        );
        assert_eq!(check_policy(&ok, &f, "b", "user/a.txt", now).unwrap(), (1, 10));
        let code = |p: &str| check_policy(p, &f, "b", "user/a.txt", now).unwrap_err();
        let e = code(&doc(r#"{"bucket": "b"}, ["starts-with", "$key", "other/"], ["eq", "$x-amz-meta-a", "1"]"#));
        assert_eq!(e.code, ErrorCode::AccessDenied);
        assert_eq!(
            e.message,
            r#"Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "other/"]"#
        );
        let e = code(&doc(r#"{"bucket": "b"}, ["starts-with", "$key", "user/"]"#));
        assert_eq!(e.message, "Invalid according to Policy: Extra input fields: x-amz-meta-a");
        let e = code(&doc(r#"{"bucket": "c"}"#));
        assert_eq!(e.message, r#"Invalid according to Policy: Policy Condition failed: ["eq", "$bucket", "c"]"#);
        let late = parse_iso8601("2026-11-26T06:00:00Z").unwrap();
        let e = check_policy(&ok, &f, "b", "user/a.txt", late).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::AccessDenied, "Invalid according to Policy: Policy expired.")
        );
        for bad in [
            b64("{"),
            b64(r#"{"conditions": []}"#),
            "%%%".to_string(),
            doc(r#"["in", "$key", "x"]"#),
            doc(r#"["content-length-range", 5, 1]"#),
        ] {
            assert_eq!(code(&bad).code, ErrorCode::InvalidPolicyDocument, "{bad}");
        }
    }
}
