//! S3 Object Lock rules shared by the backends (docs/SEMANTICS.md, "Object lock"): the bucket's
//! lock configuration (kept as the bucket configuration document `objectLock`), the retention
//! and legal hold of one object version, and the checks every store runs before it removes a
//! version or changes its retention. The stores enforce them, so every front end (HTTP, the
//! binary protocol, the C library, embedded use) and every gateway on one root obeys them.

use std::time::{Duration, SystemTime};

use crate::error::{Error, ErrorCode, Result};
use crate::versions::VersioningState;

/// The bucket configuration document (see [`crate::Store::put_bucket_config`]) that says object
/// lock is enabled, with the default retention if any ([`BucketLock::to_doc`]). Once set it is
/// never removed (S3 cannot disable object lock).
pub const OBJECT_LOCK_CONFIG: &str = "objectLock";

/// Longest default retention S3 accepts.
pub const MAX_DEFAULT_DAYS: u32 = 36_500;
pub const MAX_DEFAULT_YEARS: u32 = 100;

/// A retention mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockMode {
    /// Removable or shortenable with `x-amz-bypass-governance-retention: true` and the
    /// `s3:BypassGovernanceRetention` permission.
    Governance,
    /// Nobody can remove or shorten it before it ends.
    Compliance,
}

impl LockMode {
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Governance => "GOVERNANCE",
            LockMode::Compliance => "COMPLIANCE",
        }
    }

    /// Exactly `GOVERNANCE` or `COMPLIANCE` (S3 takes no other spelling).
    pub fn parse(s: &str) -> Option<LockMode> {
        match s {
            "GOVERNANCE" => Some(LockMode::Governance),
            "COMPLIANCE" => Some(LockMode::Compliance),
            _ => None,
        }
    }
}

/// The retention of one object version: protected until `until` (millisecond precision).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub mode: LockMode,
    pub until: SystemTime,
}

impl Retention {
    pub fn in_force(&self, now: SystemTime) -> bool {
        self.until > now
    }
}

/// The lock state of one object version (also what a write asks for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectLock {
    pub retention: Option<Retention>,
    /// `None`: never set (GetObjectLegalHold answers NoSuchObjectLockConfiguration);
    /// `Some(false)`: OFF.
    pub legal_hold: Option<bool>,
}

impl ObjectLock {
    pub fn is_empty(&self) -> bool {
        self.retention.is_none() && self.legal_hold.is_none()
    }

    /// May this version be removed now? AccessDenied (S3's text) when a legal hold is ON or a
    /// retention is in force (GOVERNANCE: unless `bypass`).
    pub fn check_delete(&self, bypass: bool, now: SystemTime) -> Result<()> {
        if self.legal_hold == Some(true) {
            return Err(protected());
        }
        match self.retention {
            Some(r) if r.in_force(now) && (r.mode == LockMode::Compliance || !bypass) => Err(protected()),
            _ => Ok(()),
        }
    }
}

/// A default retention period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Days(u32),
    Years(u32),
}

impl Period {
    pub fn duration(self) -> Duration {
        let days = match self {
            Period::Days(d) => d as u64,
            Period::Years(y) => y as u64 * 365,
        };
        Duration::from_secs(days * 86_400)
    }
}

/// A bucket's object lock configuration: enabled, with an optional default retention.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BucketLock {
    pub default: Option<(LockMode, Period)>,
}

impl BucketLock {
    /// `Enabled`, or `Enabled MODE Nd` / `Enabled MODE Ny`.
    pub fn to_doc(&self) -> Vec<u8> {
        match self.default {
            None => b"Enabled".to_vec(),
            Some((m, Period::Days(n))) => format!("Enabled {} {n}d", m.as_str()).into_bytes(),
            Some((m, Period::Years(n))) => format!("Enabled {} {n}y", m.as_str()).into_bytes(),
        }
    }

    /// The configuration a document holds (`None`: not a lock document).
    pub fn from_doc(doc: &[u8]) -> Option<BucketLock> {
        let s = std::str::from_utf8(doc).ok()?.trim();
        let mut it = s.split_ascii_whitespace();
        if it.next()? != "Enabled" {
            return None;
        }
        let Some(mode) = it.next() else { return Some(BucketLock { default: None }) };
        let mode = LockMode::parse(mode)?;
        let p = it.next()?;
        let period = if let Some(n) = p.strip_suffix('d') {
            Period::Days(n.parse().ok()?)
        } else {
            Period::Years(p.strip_suffix('y')?.parse().ok()?)
        };
        it.next().is_none().then_some(BucketLock { default: Some((mode, period)) })
    }

    /// The lock a new version gets: what the write asked for, the bucket's default retention
    /// when it asked for none.
    pub fn lock_for_new(&self, asked: ObjectLock, now: SystemTime) -> ObjectLock {
        let retention = asked
            .retention
            .or_else(|| self.default.map(|(mode, p)| Retention { mode, until: round_ms(now + p.duration()) }));
        ObjectLock { retention, legal_hold: asked.legal_hold }
    }
}

/// Truncate to whole milliseconds (what S3 keeps and the posix record stores).
pub fn round_ms(t: SystemTime) -> SystemTime {
    let ms = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

/// 403 AccessDenied as S3 answers for a version its lock protects.
pub fn protected() -> Error {
    Error::new(ErrorCode::AccessDenied, "Access Denied because object protected by object lock.")
}

/// Is `e` the refusal of [`protected`] (and not some other AccessDenied)?
pub fn is_protected(e: &Error) -> bool {
    e.code == ErrorCode::AccessDenied && e.message == protected().message
}

/// 400 InvalidRequest: lock parameters or lock operations on a bucket without object lock.
pub fn missing_bucket_lock() -> Error {
    Error::new(ErrorCode::InvalidRequest, "Bucket is missing Object Lock Configuration")
}

/// 400 InvalidArgument: the bypass header on a delete in a bucket without object lock.
pub fn bypass_without_lock() -> Error {
    Error::invalid_argument("x-amz-bypass-governance-retention is only applicable to Object Lock enabled buckets.")
}

/// 400 InvalidArgument for a retain-until date that is not in the future.
pub fn past_date() -> Error {
    Error::invalid_argument("The retain until date must be in the future!")
}

/// Whether the request being served asked to bypass GOVERNANCE retention
/// (`x-amz-bypass-governance-retention: true`, carried in the caller's headers; an authorizing
/// store clears it for callers without `s3:BypassGovernanceRetention`).
pub fn bypass_requested() -> bool {
    crate::caller::current().is_some_and(|c| c.headers.bypass_governance_retention)
}

/// The lock for a new version written to a bucket with lock configuration `bucket` (`None`: no
/// object lock): InvalidRequest when the write asks for a lock the bucket cannot have, the
/// bucket's default retention when it asks for no retention. `integrity`: for PutObject,
/// whether the request carried Content-MD5 or a checksum, which S3 requires of writes that set
/// a lock (`None` for writes without a body: copies, multipart creation).
pub fn lock_for_put(
    bucket: Option<&BucketLock>,
    asked: ObjectLock,
    integrity: Option<bool>,
    now: SystemTime,
) -> Result<ObjectLock> {
    let Some(b) = bucket else {
        return if asked.is_empty() { Ok(ObjectLock::default()) } else { Err(missing_bucket_lock()) };
    };
    if asked.retention.is_some_and(|r| !r.in_force(now)) {
        return Err(past_date());
    }
    let lock = b.lock_for_new(asked, now);
    if !lock.is_empty() && integrity == Some(false) {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters",
        ));
    }
    Ok(lock)
}

/// PutObjectRetention: may the retention `old` of a version become `new`? Extending (same
/// mode, a later or equal date) is always allowed; a COMPLIANCE retention in force can be
/// neither shortened, removed nor changed to GOVERNANCE; a GOVERNANCE one only with `bypass`.
pub fn check_retention_change(
    old: Option<Retention>,
    new: Option<Retention>,
    bypass: bool,
    now: SystemTime,
) -> Result<()> {
    if let Some(n) = new
        && !n.in_force(now)
    {
        return Err(past_date());
    }
    let Some(o) = old.filter(|o| o.in_force(now)) else { return Ok(()) };
    let extends = new.is_some_and(|n| n.mode == o.mode && n.until >= o.until);
    match o.mode {
        _ if extends => Ok(()),
        LockMode::Governance if bypass => Ok(()),
        _ => Err(protected()),
    }
}

/// A bucket configuration change that object lock forbids, checked by the stores'
/// `put_bucket_config`: the lock document only on a bucket with versioning Enabled, never
/// removed; versioning never suspended on a bucket with object lock.
pub fn check_config_change(
    name: &str,
    doc: Option<&[u8]>,
    versioning: Option<VersioningState>,
    lock: Option<&BucketLock>,
) -> Result<()> {
    if name == OBJECT_LOCK_CONFIG {
        let Some(d) = doc else {
            return Err(Error::new(ErrorCode::InvalidBucketState, "Object Lock cannot be disabled on a bucket"));
        };
        if BucketLock::from_doc(d).is_none() {
            return Err(Error::code(ErrorCode::MalformedXML));
        }
        if versioning != Some(VersioningState::Enabled) {
            return Err(Error::new(
                ErrorCode::InvalidBucketState,
                "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration",
            ));
        }
    }
    if name == crate::versions::VERSIONING_CONFIG
        && lock.is_some()
        && doc.and_then(VersioningState::from_doc) != Some(VersioningState::Enabled)
    {
        return Err(Error::new(
            ErrorCode::InvalidBucketState,
            "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn bucket_documents_roundtrip() {
        for b in [
            BucketLock { default: None },
            BucketLock { default: Some((LockMode::Governance, Period::Days(30))) },
            BucketLock { default: Some((LockMode::Compliance, Period::Years(2))) },
        ] {
            assert_eq!(BucketLock::from_doc(&b.to_doc()), Some(b));
        }
        for bad in [
            "",
            "Disabled",
            "Enabled governance 1d",
            "Enabled GOVERNANCE",
            "Enabled GOVERNANCE 1w",
            "Enabled COMPLIANCE 1d x",
        ] {
            assert_eq!(BucketLock::from_doc(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn deletes_and_retention_changes() {
        let now = at(1000);
        let gov = Retention { mode: LockMode::Governance, until: at(2000) };
        let comp = Retention { mode: LockMode::Compliance, until: at(2000) };
        let lock = |r, h| ObjectLock { retention: r, legal_hold: h };
        assert!(lock(Some(gov), None).check_delete(false, now).is_err());
        assert!(lock(Some(gov), None).check_delete(true, now).is_ok());
        assert!(lock(Some(comp), None).check_delete(true, now).is_err());
        assert!(lock(Some(comp), None).check_delete(false, at(2000)).is_ok(), "expired");
        assert!(lock(None, Some(true)).check_delete(true, now).is_err());
        assert!(lock(None, Some(false)).check_delete(false, now).is_ok());
        let later = |r: Retention| Retention { until: at(3000), ..r };
        let sooner = |r: Retention| Retention { until: at(1500), ..r };
        assert!(check_retention_change(Some(comp), Some(later(comp)), false, now).is_ok());
        assert!(check_retention_change(Some(comp), Some(sooner(comp)), true, now).is_err());
        assert!(check_retention_change(Some(comp), None, true, now).is_err());
        assert!(check_retention_change(Some(comp), Some(later(gov)), true, now).is_err());
        assert!(check_retention_change(Some(gov), Some(later(gov)), false, now).is_ok());
        assert!(check_retention_change(Some(gov), Some(sooner(gov)), false, now).is_err());
        assert!(check_retention_change(Some(gov), Some(sooner(gov)), true, now).is_ok());
        assert!(check_retention_change(Some(gov), Some(later(comp)), false, now).is_err());
        assert!(check_retention_change(Some(gov), None, true, now).is_ok());
        assert!(check_retention_change(None, Some(Retention { until: at(10), ..gov }), true, now).is_err());
    }

    #[test]
    fn puts_get_defaults_and_need_the_bucket() {
        let now = at(1000);
        let asked = ObjectLock { legal_hold: Some(true), ..Default::default() };
        assert_eq!(lock_for_put(None, asked, Some(true), now).unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(lock_for_put(None, ObjectLock::default(), Some(false), now).unwrap(), ObjectLock::default());
        let b = BucketLock { default: Some((LockMode::Compliance, Period::Days(1))) };
        let l = lock_for_put(Some(&b), ObjectLock::default(), None, now).unwrap();
        assert_eq!(l.retention, Some(Retention { mode: LockMode::Compliance, until: at(1000 + 86_400) }));
        assert_eq!(
            lock_for_put(Some(&b), ObjectLock::default(), Some(false), now).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        let plain = BucketLock::default();
        assert_eq!(lock_for_put(Some(&plain), ObjectLock::default(), Some(false), now).unwrap(), ObjectLock::default());
        let e = check_config_change(OBJECT_LOCK_CONFIG, Some(b"Enabled"), Some(VersioningState::Suspended), None);
        assert_eq!(e.unwrap_err().code, ErrorCode::InvalidBucketState);
        let e = check_config_change("versioning", Some(b"Suspended"), Some(VersioningState::Enabled), Some(&plain));
        assert_eq!(e.unwrap_err().code, ErrorCode::InvalidBucketState);
        assert!(check_config_change("versioning", Some(b"Suspended"), Some(VersioningState::Enabled), None).is_ok());
    }
}
