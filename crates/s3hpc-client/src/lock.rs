//! Object lock over HTTP: the `x-amz-object-lock-*` headers, the lock configuration document
//! (the seam's [`BucketLock`] document as S3's `ObjectLockConfiguration`), and the
//! `x-amz-bypass-governance-retention` header of the caller in scope.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::HeaderMap;
use s3hpc_core::lock::{BucketLock, LockMode, Period};
use s3hpc_core::{ObjectLock, Result, Retention};

use crate::xml::Node;

/// `2006-01-02T15:04:05.000Z`.
pub(crate) fn date(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, dd) = s3hpc_sigv4::encode::civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3600, (rem / 60) % 60, rem % 60, d.subsec_millis())
}

/// [`date`]'s form (or without the fraction), to the millisecond.
pub(crate) fn parse_date(s: &str) -> Option<SystemTime> {
    let s = s.trim().strip_suffix('Z')?;
    let (main, frac) = s.split_once('.').unwrap_or((s, ""));
    let compact: String = main.chars().filter(|c| *c != '-' && *c != ':').collect();
    let t = s3hpc_sigv4::encode::parse_amz_date(&format!("{compact}Z"))?;
    let ms: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<3}").get(..3)?.parse().ok()? };
    Some(t + Duration::from_millis(ms))
}

/// The lock headers a write sends.
pub(crate) fn headers(lock: &ObjectLock) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(r) = lock.retention {
        out.push(("x-amz-object-lock-mode", r.mode.as_str().to_string()));
        out.push(("x-amz-object-lock-retain-until-date", date(r.until)));
    }
    if let Some(on) = lock.legal_hold {
        out.push(("x-amz-object-lock-legal-hold", if on { "ON" } else { "OFF" }.to_string()));
    }
    out
}

/// The lock a GET/HEAD answer shows.
pub(crate) fn of_headers(h: &HeaderMap) -> ObjectLock {
    let s = |n: &str| h.get(n).and_then(|v| v.to_str().ok());
    let retention =
        match (s("x-amz-object-lock-mode").and_then(LockMode::parse), s("x-amz-object-lock-retain-until-date")) {
            (Some(mode), Some(d)) => parse_date(d).map(|until| Retention { mode, until }),
            _ => None,
        };
    let legal_hold = s("x-amz-object-lock-legal-hold").map(|v| v == "ON");
    ObjectLock { retention, legal_hold }
}

/// Whether the caller in scope asked to bypass GOVERNANCE retention (sent on as the header).
pub(crate) fn bypass() -> bool {
    s3hpc_core::lock::bypass_requested()
}

/// `ObjectLockConfiguration` for the seam's document.
pub(crate) fn config_xml(doc: &[u8]) -> Result<String> {
    let b = BucketLock::from_doc(doc).ok_or_else(|| s3hpc_core::Error::code(s3hpc_core::ErrorCode::MalformedXML))?;
    let mut s = String::from(
        "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><ObjectLockEnabled>Enabled</ObjectLockEnabled>",
    );
    if let Some((mode, p)) = b.default {
        let period = match p {
            Period::Days(n) => format!("<Days>{n}</Days>"),
            Period::Years(n) => format!("<Years>{n}</Years>"),
        };
        s.push_str(&format!(
            "<Rule><DefaultRetention><Mode>{}</Mode>{period}</DefaultRetention></Rule>",
            mode.as_str()
        ));
    }
    s.push_str("</ObjectLockConfiguration>");
    Ok(s)
}

/// The seam's document for an `ObjectLockConfiguration` answer.
pub(crate) fn config_doc(n: &Node) -> Option<Vec<u8>> {
    if n.text_of("ObjectLockEnabled").map(str::trim) != Some("Enabled") {
        return None;
    }
    let default = n.child("Rule").and_then(|r| r.child("DefaultRetention")).and_then(|d| {
        let mode = LockMode::parse(d.text_of("Mode")?.trim())?;
        let p = match (d.text_of("Days"), d.text_of("Years")) {
            (Some(v), _) => Period::Days(v.trim().parse().ok()?),
            (None, Some(v)) => Period::Years(v.trim().parse().ok()?),
            _ => return None,
        };
        Some((mode, p))
    });
    Some(BucketLock { default }.to_doc())
}

/// `Retention` for PutObjectRetention (`None`: an empty one, which removes it).
pub(crate) fn retention_xml(r: Option<Retention>) -> String {
    let inner =
        r.map(|r| format!("<Mode>{}</Mode><RetainUntilDate>{}</RetainUntilDate>", r.mode.as_str(), date(r.until)));
    format!("<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{}</Retention>", inner.unwrap_or_default())
}
