//! AWS STS on the gateway's own endpoint: `POST /` with a form body
//! (`Action=GetSessionToken&Version=2011-06-15[&DurationSeconds=N]`), signed with SigV4 for
//! service `sts`, answered with STS's XML, so the SDKs' own STS clients
//! (`boto3.client("sts", endpoint_url=...)`) get temporary credentials. The session (access key,
//! secret, token) is kept by the key store (`s3hpc_core::creds::KeySource`); requests signed
//! with it must carry its token as `x-amz-security-token` (checked in `dispatch`), and it ends at
//! its expiry or when the key that asked for it is revoked. `AssumeRole` gives sessions acting
//! as a role's account ([`crate::roles`]) to the accounts the role trusts.

use std::time::{Duration, SystemTime};

use http::StatusCode;
use http::request::Parts;
use s3hpc_core::{Body, Error, ErrorCode};

use super::response::Resp;
use crate::State;
use crate::body::{ReqBody, RespBody};

/// STS's XML namespace.
const NS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";
/// GetSessionToken's longest DurationSeconds (AWS: 36 hours for IAM users).
const MAX_DURATION: u64 = 129_600;
/// Its default (12 hours).
const DEFAULT_DURATION: u64 = 43_200;
/// Largest form body read.
const MAX_FORM: usize = 64 * 1024;

/// Whether a request is an STS call: `POST /` with a form body.
pub(super) fn is_sts(parts: &Parts, bucket: &str) -> bool {
    parts.method == http::Method::POST
        && bucket.is_empty()
        && parts.uri.path() == "/"
        && parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"))
}

/// Answer an STS call (errors as STS's `ErrorResponse` document). `op` names the action for
/// logs and metrics.
pub(super) async fn handle(st: &State, parts: &Parts, body: ReqBody, rid: u64, op: &mut &'static str) -> Resp {
    *op = "StsUnknown";
    let request_id = format!("{rid:016X}");
    match run(st, parts, body, op).await {
        Ok(xml) => xml_resp(StatusCode::OK, xml),
        Err(e) => {
            let (status, code, msg) = sts_error(&e);
            let xml = format!(
                "<ErrorResponse xmlns=\"{NS}\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>",
                esc(&msg)
            );
            xml_resp(status, xml)
        }
    }
}

fn xml_resp(status: StatusCode, xml: String) -> Resp {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/xml")
        .header(http::header::CONTENT_LENGTH, xml.len())
        .body(RespBody::full(xml))
        .unwrap()
}

/// STS's status, code and message for an error (STS names some failures differently from S3).
fn sts_error(e: &Error) -> (StatusCode, &'static str, String) {
    let s = |n: u16| StatusCode::from_u16(n).unwrap_or(StatusCode::BAD_REQUEST);
    match e.code {
        ErrorCode::InvalidAccessKeyId | ErrorCode::InvalidToken => {
            (s(403), "InvalidClientTokenId", "The security token included in the request is invalid.".into())
        }
        ErrorCode::ExpiredToken => {
            (s(400), "ExpiredToken", "The security token included in the request is expired".into())
        }
        ErrorCode::SignatureDoesNotMatch => (s(403), "SignatureDoesNotMatch", e.message.clone()),
        ErrorCode::AuthorizationHeaderMalformed => (s(400), "IncompleteSignature", e.message.clone()),
        ErrorCode::RequestTimeTooSkewed => (s(400), "RequestExpired", "Request has expired.".into()),
        ErrorCode::AccessDenied => (s(403), "AccessDenied", e.message.clone()),
        ErrorCode::InvalidArgument => (s(400), "ValidationError", e.message.clone()),
        ErrorCode::InvalidRequest => (s(400), "InvalidAction", e.message.clone()),
        ErrorCode::NotImplemented => (s(501), "NotImplemented", e.message.clone()),
        ErrorCode::MaxMessageLengthExceeded => (s(400), "ValidationError", "The request body is too large.".into()),
        _ => (s(500), "InternalFailure", e.message.clone()),
    }
}

/// The form's fields, decoded (`+` is a space).
fn form(data: &[u8]) -> Vec<(String, String)> {
    let dec = |s: &str| {
        let s = s.replace('+', " ");
        String::from_utf8_lossy(&s3hpc_sigv4::encode::percent_decode(&s)).into_owned()
    };
    String::from_utf8_lossy(data)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (dec(k), dec(v))
        })
        .collect()
}

async fn run(st: &State, parts: &Parts, body: ReqBody, op: &mut &'static str) -> Result<String, Error> {
    let data =
        Body::Stream(crate::body::incoming_stream(body, st.cfg.body_idle_timeout)).collect_limited(MAX_FORM).await?;
    let hash = s3hpc_sigv4::signer_sha256_hex(&data);
    let now = SystemTime::now();
    let v = s3hpc_sigv4::verify_service(parts, &st.cfg.creds, now, &st.accept, "sts", &hash)?;
    let token = parts.headers.get("x-amz-security-token").and_then(|t| t.to_str().ok());
    st.cfg.creds.check_session_token(&v.access_key, token)?;
    let f = form(&data);
    let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let action = get("Action").unwrap_or("");
    match action {
        "GetSessionToken" => {
            *op = "GetSessionToken";
            let min = st.cfg.sts_min_duration.as_secs();
            let secs = match get("DurationSeconds") {
                None => DEFAULT_DURATION,
                Some(d) => {
                    let n: i64 = d.trim().parse().map_err(|_| {
                        Error::invalid_argument(format!(
                            "1 validation error detected: Value '{d}' at 'durationSeconds' failed to satisfy constraint: Member must be a number"
                        ))
                    })?;
                    if n < min as i64 {
                        return Err(Error::invalid_argument(format!(
                            "1 validation error detected: Value '{n}' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to {min}"
                        )));
                    }
                    if n > MAX_DURATION as i64 {
                        return Err(Error::invalid_argument(format!(
                            "1 validation error detected: Value '{n}' at 'durationSeconds' failed to satisfy constraint: Member must have value less than or equal to {MAX_DURATION}"
                        )));
                    }
                    n as u64
                }
            };
            // Whole seconds, so the Expiration shown is the one enforced.
            let exp = SystemTime::UNIX_EPOCH
                + Duration::from_secs(
                    now.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) + secs,
                );
            let c = st.cfg.creds.issue_session(&v.access_key, exp)?;
            Ok(format!(
                "<GetSessionTokenResponse xmlns=\"{NS}\"><GetSessionTokenResult><Credentials>\
                 <AccessKeyId>{}</AccessKeyId><SecretAccessKey>{}</SecretAccessKey>\
                 <SessionToken>{}</SessionToken><Expiration>{}</Expiration></Credentials>\
                 </GetSessionTokenResult><ResponseMetadata><RequestId>{:016X}</RequestId></ResponseMetadata>\
                 </GetSessionTokenResponse>",
                esc(&c.access_key),
                esc(&c.secret_key),
                esc(c.session_token.as_deref().unwrap_or("")),
                crate::util::iso8601(exp),
                rand_id(),
            ))
        }
        "AssumeRole" => {
            *op = "AssumeRole";
            assume_role(st, &v.access_key, &get, now)
        }
        "" => Err(Error::new(ErrorCode::InvalidRequest, "Missing Action")),
        other => Err(Error::new(
            ErrorCode::InvalidRequest,
            format!(
                "Could not find operation {other} for version {}",
                get("Version").unwrap_or("NO_VERSION_SPECIFIED")
            ),
        )),
    }
}

/// The account number in the ARNs s3hpc shows (it has one account namespace).
const ACCOUNT: &str = "000000000000";

fn validation(v: &str, field: &str, constraint: &str) -> Error {
    Error::invalid_argument(format!(
        "1 validation error detected: Value {v} at '{field}' failed to satisfy constraint: {constraint}"
    ))
}

/// AssumeRole: temporary credentials acting as the role's account, for a caller the role
/// trusts. Answered as AWS does: an unknown role and a role that does not trust the caller
/// get the same AccessDenied (nothing says which).
fn assume_role<'a>(
    st: &State,
    access_key: &str,
    get: &dyn Fn(&str) -> Option<&'a str>,
    now: SystemTime,
) -> Result<String, Error> {
    let arn = get("RoleArn").ok_or_else(|| validation("null", "roleArn", "Member must not be null"))?;
    let session =
        get("RoleSessionName").ok_or_else(|| validation("null", "roleSessionName", "Member must not be null"))?;
    if arn.len() < 20 || arn.len() > 2048 {
        return Err(validation(
            &format!("'{arn}'"),
            "roleArn",
            if arn.len() < 20 {
                "Member must have length greater than or equal to 20"
            } else {
                "Member must have length less than or equal to 2048"
            },
        ));
    }
    if session.len() < 2 || session.len() > 64 {
        return Err(validation(
            &format!("'{session}'"),
            "roleSessionName",
            if session.len() < 2 {
                "Member must have length greater than or equal to 2"
            } else {
                "Member must have length less than or equal to 64"
            },
        ));
    }
    if !session.chars().all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c)) {
        return Err(validation(
            &format!("'{session}'"),
            "roleSessionName",
            "Member must satisfy regular expression pattern: [\\w+=,.@-]*",
        ));
    }
    let caller = st.cfg.creds.account_for(access_key).ok_or_else(|| Error::code(ErrorCode::InvalidAccessKeyId))?;
    let who = caller.name.clone().unwrap_or_else(|| caller.id.clone());
    let name =
        arn.strip_prefix("arn:").and_then(|a| a.split_once(":role/")).map(|(_, r)| r.rsplit('/').next().unwrap_or(r));
    let role = name.and_then(|n| st.cfg.roles.get(n)).filter(|r| r.trusts(&caller.id, access_key));
    let Some(role) = role else {
        return Err(Error::new(
            ErrorCode::AccessDenied,
            format!(
                "User: arn:aws:iam::{ACCOUNT}:user/{who} is not authorized to perform: sts:AssumeRole on resource: {arn}"
            ),
        ));
    };
    let max = role.max_session.as_secs();
    let min = st.cfg.sts_min_duration.as_secs();
    let secs = match get("DurationSeconds") {
        None => 3600.min(max),
        Some(d) => {
            let n: i64 = d
                .trim()
                .parse()
                .map_err(|_| validation(&format!("'{d}'"), "durationSeconds", "Member must be a number"))?;
            if n < min as i64 {
                return Err(validation(
                    &format!("'{n}'"),
                    "durationSeconds",
                    &format!("Member must have value greater than or equal to {min}"),
                ));
            }
            if n > 43_200 {
                return Err(validation(
                    &format!("'{n}'"),
                    "durationSeconds",
                    "Member must have value less than or equal to 43200",
                ));
            }
            if n as u64 > max {
                return Err(Error::invalid_argument(
                    "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.",
                ));
            }
            n as u64
        }
    };
    let exp = SystemTime::UNIX_EPOCH
        + Duration::from_secs(now.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) + secs);
    // The session's parent is the role's account key: it acts as that account, and ends when
    // that key is removed from the users file.
    if !st.cfg.creds.is_listed(&role.account) {
        return Err(Error::internal(format!(
            "role {}: its account {} is not in the users file",
            role.name, role.account
        )));
    }
    let source = st
        .cfg
        .creds
        .source()
        .ok_or_else(|| Error::not_implemented("temporary credentials need a key store (the posix backend)"))?;
    let c = source.issue_session(&role.account, exp)?;
    tracing::info!(target: "s3hpc::access", caller = %caller.id, role = %role.name, session, access_key = %c.access_key, "AssumeRole");
    let role_id = format!(
        "AROA{}",
        role.account.chars().filter(|c| c.is_ascii_alphanumeric()).take(17).collect::<String>().to_ascii_uppercase()
    );
    Ok(format!(
        "<AssumeRoleResponse xmlns=\"{NS}\"><AssumeRoleResult><AssumedRoleUser>\
         <AssumedRoleId>{}:{}</AssumedRoleId><Arn>arn:aws:sts::{ACCOUNT}:assumed-role/{}/{}</Arn></AssumedRoleUser>\
         <Credentials><AccessKeyId>{}</AccessKeyId><SecretAccessKey>{}</SecretAccessKey>\
         <SessionToken>{}</SessionToken><Expiration>{}</Expiration></Credentials>\
         </AssumeRoleResult><ResponseMetadata><RequestId>{:016X}</RequestId></ResponseMetadata>\
         </AssumeRoleResponse>",
        esc(&role_id),
        esc(session),
        esc(&role.name),
        esc(session),
        esc(&c.access_key),
        esc(&c.secret_key),
        esc(c.session_token.as_deref().unwrap_or("")),
        crate::util::iso8601(exp),
        rand_id(),
    ))
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    crate::xml::escape_into(&mut out, s);
    out
}

fn rand_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0));
    h.finish()
}
