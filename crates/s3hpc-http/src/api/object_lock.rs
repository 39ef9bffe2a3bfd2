//! S3 Object Lock: Get/PutObjectLockConfiguration (`?object-lock`), Get/PutObjectRetention
//! (`?retention`), Get/PutObjectLegalHold (`?legal-hold`), the `x-amz-object-lock-*` headers of
//! PutObject, CopyObject and CreateMultipartUpload, and the lock headers of GET/HEAD answers.
//! The rules themselves (defaults, what protects a version, who may shorten a retention) are
//! the stores' ([`s3hpc_core::lock`]), so every front end obeys them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::HeaderValue;

use s3hpc_core::lock::{BucketLock, LockMode, MAX_DEFAULT_DAYS, MAX_DEFAULT_YEARS, OBJECT_LOCK_CONFIG, Period};
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::util::iso8601;
use crate::xml::{self, DECL, NS, elem};

/// `2026-11-26T05:00:00Z`, with an optional fraction of a second (kept to the millisecond).
fn parse_date(s: &str) -> Option<SystemTime> {
    // `Z`, or an offset `+HH:MM` / `+HHMM` (`-` likewise), as S3 reads an ISO 8601 time (the
    // versitygw suite sends `date +%z`'s `+0000`).
    let s = s.trim();
    let (s, offset) = match s.strip_suffix('Z') {
        Some(s) => (s, 0i64),
        None => {
            let at = s.rfind(['+', '-']).filter(|&i| s[..i].contains('T'))?;
            let (sign, hm) = (if &s[at..=at] == "-" { -1 } else { 1 }, s[at + 1..].replace(':', ""));
            if hm.len() != 4 || !hm.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (h, m): (i64, i64) = (hm[..2].parse().ok()?, hm[2..].parse().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            (&s[..at], sign * (h * 3600 + m * 60))
        }
    };
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let (time, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<u64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [y, m, day] = d[..] else { return None };
    let [hh, mm, ss] = t[..] else { return None };
    if !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || hh > 23
        || mm > 59
        || ss > 59
        || !(1970..=9999).contains(&y)
    {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms: u64 = format!("{frac:0<3}")[..3].parse().ok()?;
    // Days from civil (Howard Hinnant's algorithm).
    let yy = if m <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = u64::try_from(days * 86_400 + (hh * 3600 + mm * 60 + ss) as i64 - offset).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms))
}

fn bad_date() -> Error {
    Error::invalid_argument("The retain until date must be provided in ISO 8601 format")
}

/// The `x-amz-object-lock-*` headers of a write (checked as S3 does, before the bucket's lock
/// is looked at).
pub(super) fn lock_headers(h: &HeaderMap) -> Result<ObjectLock> {
    let mode = hdr(h, "x-amz-object-lock-mode");
    let date = hdr(h, "x-amz-object-lock-retain-until-date");
    let legal_hold = match hdr(h, "x-amz-object-lock-legal-hold") {
        None => None,
        Some("ON") => Some(true),
        Some("OFF") => Some(false),
        Some(v) => {
            return Err(Error::invalid_arg(
                "Legal Hold must be either of 'ON' or 'OFF'",
                "x-amz-object-lock-legal-hold",
                v,
            ));
        }
    };
    let retention = match (mode, date) {
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            return Err(Error::invalid_argument(
                "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied",
            ));
        }
        (Some(m), Some(d)) => {
            let until =
                parse_date(d).ok_or_else(|| bad_date().with_argument("x-amz-object-lock-retain-until-date", d))?;
            if until <= SystemTime::now() {
                return Err(s3hpc_core::lock::past_date());
            }
            let mode = LockMode::parse(m)
                .ok_or_else(|| Error::invalid_arg("Unknown wormMode directive.", "x-amz-object-lock-mode", m))?;
            Some(Retention { mode, until })
        }
    };
    Ok(ObjectLock { retention, legal_hold })
}

/// The lock headers of a GET/HEAD answer.
pub(super) fn insert_headers(hm: &mut HeaderMap, lock: &ObjectLock) -> Result<()> {
    if let Some(r) = lock.retention {
        hm.insert("x-amz-object-lock-mode", HeaderValue::from_static(r.mode.as_str()));
        hm.insert("x-amz-object-lock-retain-until-date", hval(&iso8601(r.until))?);
    }
    if let Some(on) = lock.legal_hold {
        hm.insert("x-amz-object-lock-legal-hold", HeaderValue::from_static(if on { "ON" } else { "OFF" }));
    }
    Ok(())
}

/// CreateBucket with `x-amz-bucket-object-lock-enabled: true`: versioning Enabled, then the
/// lock configuration (the bucket exists already).
pub(super) async fn enable_at_create(r: &Req<'_>) -> Result<()> {
    let s = store(r);
    s.put_bucket_config(&r.bucket, versions::VERSIONING_CONFIG, Some(b"Enabled".to_vec())).await?;
    s.put_bucket_config(&r.bucket, OBJECT_LOCK_CONFIG, Some(BucketLock::default().to_doc())).await
}

pub(super) async fn get_config(r: &Req<'_>) -> Result<Resp> {
    let doc = store(r).get_bucket_config(&r.bucket, OBJECT_LOCK_CONFIG).await?;
    let Some(cfg) = doc.as_deref().and_then(BucketLock::from_doc) else {
        return Ok(crate::error_response_raw(
            404,
            ErrorCode::ObjectLockConfigurationNotFoundError.as_str(),
            ErrorCode::ObjectLockConfigurationNotFoundError.default_message(),
            Some(&r.bucket),
            &[("BucketName", r.bucket.clone())],
            false,
            r.parts.uri.path(),
            0,
        ));
    };
    let mut s = format!("{DECL}<ObjectLockConfiguration xmlns=\"{NS}\"><ObjectLockEnabled>Enabled</ObjectLockEnabled>");
    if let Some((mode, p)) = cfg.default {
        s.push_str("<Rule><DefaultRetention>");
        elem(&mut s, "Mode", mode.as_str());
        match p {
            Period::Days(n) => elem(&mut s, "Days", &n.to_string()),
            Period::Years(n) => elem(&mut s, "Years", &n.to_string()),
        }
        s.push_str("</DefaultRetention></Rule>");
    }
    s.push_str("</ObjectLockConfiguration>");
    Ok(xml_ok(s))
}

/// A `Days` / `Years` value: a positive integer up to S3's limit. A zero or negative `Days` is
/// AWS's InvalidArgument with `<ArgumentName>Days</ArgumentName>` (AWS's answer quoted in
/// versity/versitygw#1738); for `Years` the element is not confirmed and left out.
fn period(text: &str, max: u32, what: fn(u32) -> Period) -> Result<Period> {
    let n: i64 = text.trim().parse().map_err(|_| xml::malformed("Days and Years must be integers"))?;
    if n <= 0 {
        let e = Error::invalid_argument("Default retention period must be a positive integer value.");
        return Err(if matches!(what(1), Period::Days(_)) { e.with("ArgumentName", "Days") } else { e });
    }
    if n > max as i64 {
        return Err(Error::invalid_argument("Default retention period too large."));
    }
    Ok(what(n as u32))
}

/// An `ObjectLockConfiguration` document: `ObjectLockEnabled` `Enabled`, and an optional
/// `Rule/DefaultRetention` with a mode and exactly one of `Days` and `Years`.
fn parse_config(data: &[u8]) -> Result<BucketLock> {
    let root = xml::parse_tree(data)?;
    xml::expect_root(&root, "ObjectLockConfiguration")?;
    if root.child_text("ObjectLockEnabled").map(str::trim) != Some("Enabled") {
        return Err(Error::code(ErrorCode::MalformedXML));
    }
    let Some(rule) = root.child("Rule") else { return Ok(BucketLock::default()) };
    let dr = rule.child("DefaultRetention").ok_or_else(|| Error::code(ErrorCode::MalformedXML))?;
    let mode = dr
        .child_text("Mode")
        .and_then(|m| LockMode::parse(m.trim()))
        .ok_or_else(|| Error::code(ErrorCode::MalformedXML))?;
    let p = match (dr.child_text("Days"), dr.child_text("Years")) {
        (Some(d), None) => period(d, MAX_DEFAULT_DAYS, Period::Days)?,
        (None, Some(y)) => period(y, MAX_DEFAULT_YEARS, Period::Years)?,
        _ => return Err(Error::code(ErrorCode::MalformedXML)),
    };
    Ok(BucketLock { default: Some((mode, p)) })
}

pub(super) async fn put_config(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await.and_then(nonempty)?;
    let cfg = parse_config(&data)?;
    store(r).put_bucket_config(&r.bucket, OBJECT_LOCK_CONFIG, Some(cfg.to_doc())).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

fn no_lock() -> Error {
    Error::code(ErrorCode::NoSuchObjectLockConfiguration)
}

pub(super) async fn get_retention(r: &Req<'_>) -> Result<Resp> {
    let v = version_param(r)?;
    let ret = store(r).get_object_retention(&r.bucket, &r.key, v.as_deref()).await?.ok_or_else(no_lock)?;
    let mut s = format!("{DECL}<Retention xmlns=\"{NS}\">");
    elem(&mut s, "Mode", ret.mode.as_str());
    elem(&mut s, "RetainUntilDate", &iso8601(ret.until));
    s.push_str("</Retention>");
    Ok(xml_ok(s))
}

/// A `Retention` document: a mode and a date, or neither (removes the retention).
fn parse_retention(data: &[u8]) -> Result<Option<Retention>> {
    let root = xml::parse_tree(data)?;
    xml::expect_root(&root, "Retention")?;
    match (root.child_text("Mode"), root.child_text("RetainUntilDate")) {
        (None, None) => Ok(None),
        (Some(m), Some(d)) => {
            let mode = LockMode::parse(m.trim()).ok_or_else(|| Error::code(ErrorCode::MalformedXML))?;
            let until = parse_date(d).ok_or_else(|| Error::code(ErrorCode::MalformedXML))?;
            Ok(Some(Retention { mode, until }))
        }
        _ => Err(Error::code(ErrorCode::MalformedXML)),
    }
}

pub(super) async fn put_retention(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let v = version_param(r)?;
    let data = small_body(r, body, true).await?;
    let ret = parse_retention(&data)?;
    store(r).put_object_retention(&r.bucket, &r.key, v.as_deref(), ret).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

pub(super) async fn get_legal_hold(r: &Req<'_>) -> Result<Resp> {
    let v = version_param(r)?;
    let on = store(r).get_object_legal_hold(&r.bucket, &r.key, v.as_deref()).await?.ok_or_else(no_lock)?;
    let mut s = format!("{DECL}<LegalHold xmlns=\"{NS}\">");
    elem(&mut s, "Status", if on { "ON" } else { "OFF" });
    s.push_str("</LegalHold>");
    Ok(xml_ok(s))
}

pub(super) async fn put_legal_hold(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let v = version_param(r)?;
    let data = small_body(r, body, true).await?;
    let root = xml::parse_tree(&data)?;
    xml::expect_root(&root, "LegalHold")?;
    let on = match root.child_text("Status").map(str::trim) {
        Some("ON") => true,
        Some("OFF") => false,
        _ => return Err(Error::code(ErrorCode::MalformedXML)),
    };
    store(r).put_object_legal_hold(&r.bucket, &r.key, v.as_deref(), on).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_documents() {
        let t = parse_date("2030-01-02T03:04:05.678Z").unwrap();
        assert_eq!(iso8601(t), "2030-01-02T03:04:05.678Z");
        assert_eq!(iso8601(parse_date("2030-01-02T03:04:05Z").unwrap()), "2030-01-02T03:04:05.000Z");
        // Offsets, with or without the colon (`date +%z` gives `+0200`).
        assert_eq!(parse_date("2030-01-02T05:04:05+0200"), parse_date("2030-01-02T03:04:05Z"));
        assert_eq!(parse_date("2030-01-02T01:04:05.5-02:00"), parse_date("2030-01-02T03:04:05.5Z"));
        for bad in [
            "abc",
            "2030-01-02",
            "2030-13-02T00:00:00Z",
            "2030-01-02T00:00:00",
            "2030-01-02T00:00:00.x1Z",
            "2030-01-02T00:00:00+2500",
            "2030-01-02T00:00:00+02",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        let cfg = |inner: &str| {
            parse_config(format!("<ObjectLockConfiguration>{inner}</ObjectLockConfiguration>").as_bytes())
        };
        assert_eq!(cfg("<ObjectLockEnabled>Enabled</ObjectLockEnabled>").unwrap(), BucketLock::default());
        let r = "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Years>2</Years></DefaultRetention></Rule>";
        assert_eq!(cfg(r).unwrap().default, Some((LockMode::Compliance, Period::Years(2))));
        for (inner, code) in [
            ("", ErrorCode::MalformedXML),
            ("<ObjectLockEnabled>Disabled</ObjectLockEnabled>", ErrorCode::MalformedXML),
            ("<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule/>", ErrorCode::MalformedXML),
            (
                "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>governance</Mode><Days>1</Days></DefaultRetention></Rule>",
                ErrorCode::MalformedXML,
            ),
            (
                "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention></Rule>",
                ErrorCode::MalformedXML,
            ),
            (
                "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode></DefaultRetention></Rule>",
                ErrorCode::MalformedXML,
            ),
            (
                "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>0</Days></DefaultRetention></Rule>",
                ErrorCode::InvalidArgument,
            ),
            (
                "<ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>36501</Days></DefaultRetention></Rule>",
                ErrorCode::InvalidArgument,
            ),
        ] {
            assert_eq!(cfg(inner).unwrap_err().code, code, "{inner}");
        }
    }
}
