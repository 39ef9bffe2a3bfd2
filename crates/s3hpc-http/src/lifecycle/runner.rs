//! The lifecycle runner of `s3hpc serve`: every `interval` it looks at each bucket's
//! `lifecycle` configuration and applies its enabled rules through the Store seam (list, then
//! delete or abort), so it works for any backend:
//!
//! - Expiration `Days` (creation time + days, rounded up to the next midnight UTC, as AWS) and
//!   `Date`, with the rule's prefix, tag and object-size conditions;
//! - AbortIncompleteMultipartUpload `DaysAfterInitiation` (prefix only, as AWS);
//! - NoncurrentVersionExpiration (`NoncurrentDays` after the next version was written, keeping
//!   `NewerNoncurrentVersions`) and ExpiredObjectDeleteMarker, over ListObjectVersions.
//!
//! Store calls are paced to at most `ops_per_sec`. Several gateways on one root run each bucket
//! once: a [`Leases`] implementation gives one runner at a time a bucket's lease (posix: flock
//! on `ROOT/.s3hpc/lifecycle/BUCKET`, see [`FileLeases`]) and keeps when the last run started,
//! so a gateway that gets the lease later in the same interval skips the bucket.
//!
//! Who the runner is: in S3 terms an internal administrator (lifecycle, like AWS's, is not
//! subject to bucket policies: the rule was authorized when it was put); in POSIX terms, with
//! `--identity posix`, the bucket owner's account (so the kernel checks its deletes as it would
//! the owner's own); a bucket whose owner has no POSIX identity is skipped.
//!
//! `S3HPC_LIFECYCLE_DAY_SECONDS` (a test knob, never for production) makes a "day" that many
//! seconds, so tests can watch objects expire.

use std::collections::HashMap;
use std::io::{self, Read, Seek, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use s3hpc_core::caller::{self, Account, Caller};
use s3hpc_core::identity::{self, Identity};
use s3hpc_core::versions::{ListVersionsRequest, VersionEntry};
use s3hpc_core::{CredentialSet, DynStore, Error, ErrorCode, ListObjectsRequest, ListUploadsRequest, Result};

use super::{Expiration, LifecycleConfig, Rule, due_after_days};
use crate::HttpMetrics;

/// Seconds in a lifecycle day: 86,400, or `S3HPC_LIFECYCLE_DAY_SECONDS` (a test knob).
pub fn day_seconds() -> u64 {
    std::env::var("S3HPC_LIFECYCLE_DAY_SECONDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|d| *d > 0)
        .unwrap_or(86_400)
}

/// The S3 caller internal work (the runner, reading CORS configurations) runs as.
pub fn internal_caller() -> Arc<Caller> {
    Arc::new(Caller::account(Arc::new(Account {
        id: "s3hpc-internal".into(),
        name: Some("s3hpc lifecycle".into()),
        admin: true,
        uid: None,
    })))
}

/// One bucket's lease: held until dropped; knows when the last run started.
pub trait Lease: Send {
    /// When the last completed run started (milliseconds since the epoch).
    fn last_run(&mut self) -> Option<u64>;
    /// Record a completed run that started at `started` (milliseconds since the epoch).
    fn record(&mut self, started: u64) -> io::Result<()>;
}

/// Who may run a bucket now.
pub trait Leases: Send + Sync {
    /// The bucket's lease, or `None` when another runner holds it.
    fn try_lease(&self, bucket: &str) -> io::Result<Option<Box<dyn Lease>>>;
}

/// Leases across processes and hosts: an exclusive, non-blocking `flock` on `DIR/BUCKET`, whose
/// content is when the last run started. On NFS flock maps to POSIX byte-range locks (NLM);
/// Lustre needs the `flock` mount option for it to hold across clients (docs/SEMANTICS.md).
pub struct FileLeases {
    dir: PathBuf,
}

impl FileLeases {
    /// Leases under `dir` (created when first needed, mode 0700).
    pub fn new(dir: PathBuf) -> Self {
        FileLeases { dir }
    }
}

struct FileLease(std::fs::File);

impl Lease for FileLease {
    fn last_run(&mut self) -> Option<u64> {
        let mut s = String::new();
        self.0.seek(io::SeekFrom::Start(0)).ok()?;
        self.0.read_to_string(&mut s).ok()?;
        s.lines().find_map(|l| l.strip_prefix("last_run_started_ms=")).and_then(|v| v.trim().parse().ok())
    }

    fn record(&mut self, started: u64) -> io::Result<()> {
        let text = format!("last_run_started_ms={started}\n");
        self.0.set_len(0)?;
        self.0.seek(io::SeekFrom::Start(0))?;
        self.0.write_all(text.as_bytes())?;
        self.0.sync_data()
    }
}

impl Leases for FileLeases {
    fn try_lease(&self, bucket: &str) -> io::Result<Option<Box<dyn Lease>>> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        // Bucket names cannot hold '/' or start with '.', so the name is a plain file name.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.dir.join(bucket))?;
        // Released when the file is closed (the lease dropped).
        if let Err(e) = rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            let e = io::Error::from(e);
            return if e.raw_os_error() == Some(libc::EWOULDBLOCK) { Ok(None) } else { Err(e) };
        }
        Ok(Some(Box::new(FileLease(f))))
    }
}

/// Per bucket: whether its lease is held, and when its last run started.
type LocalState = Arc<Mutex<HashMap<String, (bool, Option<u64>)>>>;

/// Leases within one process (the memory backend, tests).
#[derive(Default)]
pub struct LocalLeases {
    state: LocalState,
}

struct LocalLease {
    bucket: String,
    state: LocalState,
}

impl Lease for LocalLease {
    fn last_run(&mut self) -> Option<u64> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).get(&self.bucket).and_then(|s| s.1)
    }
    fn record(&mut self, started: u64) -> io::Result<()> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).entry(self.bucket.clone()).or_default().1 = Some(started);
        Ok(())
    }
}

impl Drop for LocalLease {
    fn drop(&mut self) {
        if let Some(s) = self.state.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&self.bucket) {
            s.0 = false;
        }
    }
}

impl Leases for LocalLeases {
    fn try_lease(&self, bucket: &str) -> io::Result<Option<Box<dyn Lease>>> {
        let mut m = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.entry(bucket.to_string()).or_default();
        if e.0 {
            return Ok(None);
        }
        e.0 = true;
        Ok(Some(Box::new(LocalLease { bucket: bucket.to_string(), state: self.state.clone() })))
    }
}

/// How the runner runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Time between runs of a bucket (across every gateway on the root).
    pub interval: Duration,
    /// Store calls per second at most (listing pages, deletes, aborts, tag reads).
    pub ops_per_sec: u32,
    /// Seconds in a lifecycle day ([`day_seconds`]).
    pub day: u64,
}

/// What one run of a bucket did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    pub expired: u64,
    pub aborted: u64,
    pub errors: u64,
    /// Due versions that object lock kept (skipped, not errors).
    pub locked: u64,
}

/// Paces store calls: at most one per `gap`.
struct Pace {
    gap: Duration,
    next: Instant,
}

impl Pace {
    async fn tick(&mut self) {
        let now = Instant::now();
        if self.next > now {
            tokio::time::sleep_until(self.next.into()).await;
        }
        self.next = self.next.max(now) + self.gap;
    }
}

/// The lifecycle runner.
pub struct Runner {
    pub store: DynStore,
    pub leases: Arc<dyn Leases>,
    pub opts: Options,
    pub metrics: Option<Arc<HttpMetrics>>,
    /// With `--identity posix`: the accounts, to act as each bucket's owner.
    pub posix_accounts: Option<CredentialSet>,
}

fn now_secs() -> u64 {
    now_ms() / 1000
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

impl Runner {
    /// Run until `stop` completes: a pass over every bucket at start and then every interval.
    pub async fn run(self: Arc<Self>, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        let mut tick = tokio::time::interval(self.opts.interval.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = &mut stop => return,
            }
            tokio::select! {
                _ = self.pass() => {}
                _ = &mut stop => return,
            }
        }
    }

    /// One pass over every bucket.
    pub async fn pass(&self) {
        let buckets = match caller::scope(Some(internal_caller()), self.store.list_buckets()).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("lifecycle: listing buckets failed: {e}");
                return;
            }
        };
        for b in buckets {
            if let Err(e) = self.bucket(&b.name).await {
                self.count_errors(1);
                tracing::warn!(bucket = b.name, "lifecycle: run failed: {e}");
            }
        }
    }

    fn count_errors(&self, n: u64) {
        if let Some(m) = &self.metrics {
            m.lifecycle.errors.inc_by(n);
        }
    }

    fn skipped(&self, reason: &'static str) {
        if let Some(m) = &self.metrics {
            m.lifecycle.skipped.get_or_create(&crate::metrics::ReasonLabel { reason }).inc();
        }
    }

    /// Run one bucket if it has a configuration, its lease is free and nobody ran it within
    /// the interval. `Ok(None)`: not run.
    pub async fn bucket(&self, bucket: &str) -> Result<Option<RunStats>> {
        let admin = Some(internal_caller());
        let doc = match caller::scope(admin.clone(), self.store.get_bucket_config(bucket, "lifecycle")).await {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(None),
            Err(e) if e.code == ErrorCode::NoSuchBucket => return Ok(None),
            Err(e) => return Err(e),
        };
        let config = LifecycleConfig::parse(&doc, None)?;
        if !config.rules.iter().any(|r| r.enabled) {
            return Ok(None);
        }
        let leases = self.leases.clone();
        let name = bucket.to_string();
        let lease = tokio::task::spawn_blocking(move || leases.try_lease(&name))
            .await
            .map_err(|e| Error::internal(e.to_string()))?
            .map_err(|e| Error::internal(format!("lifecycle lease: {e}")))?;
        let Some(mut lease) = lease else {
            self.skipped("busy");
            return Ok(None);
        };
        let started = now_ms();
        // Nine tenths of the interval, so gateways whose timers drift apart do not skip a turn.
        let recent = self.opts.interval.as_millis() as u64 * 9 / 10;
        if lease.last_run().is_some_and(|last| started.saturating_sub(last) < recent) {
            self.skipped("recent");
            return Ok(None);
        }
        let id = match &self.posix_accounts {
            None => None,
            Some(accounts) => match self.owner_identity(bucket, accounts).await? {
                Some(id) => Some(id),
                None => {
                    self.skipped("no_owner");
                    tracing::warn!(bucket, "lifecycle: the bucket's owner has no POSIX identity; not run");
                    return Ok(None);
                }
            },
        };
        let t0 = Instant::now();
        let stats =
            identity::scope(id, caller::scope(admin, self.apply(bucket, &config, (started / 1000) as i64))).await;
        let took = t0.elapsed();
        let lease_ok = tokio::task::spawn_blocking(move || lease.record(started)).await;
        if !matches!(lease_ok, Ok(Ok(()))) {
            tracing::warn!(bucket, "lifecycle: could not record the run; another gateway may repeat it");
        }
        tracing::info!(
            target: "s3hpc::lifecycle",
            bucket,
            expired = stats.expired,
            aborted = stats.aborted,
            errors = stats.errors,
            locked = stats.locked,
            duration_ms = took.as_millis() as u64,
            "lifecycle run: bucket {bucket}: {} objects expired, {} uploads aborted, {} errors, {} locked, {:.3}s",
            stats.expired,
            stats.aborted,
            stats.errors,
            stats.locked,
            took.as_secs_f64()
        );
        if let Some(m) = &self.metrics {
            let l = &m.lifecycle;
            l.runs.inc();
            l.expired.inc_by(stats.expired);
            l.aborted.inc_by(stats.aborted);
            l.errors.inc_by(stats.errors);
            l.locked.inc_by(stats.locked);
            l.duration.observe(took.as_secs_f64());
            l.last_run.set(now_secs() as i64);
        }
        Ok(Some(stats))
    }

    /// The POSIX identity of the bucket owner's account (its canonical id is the ACL's owner).
    async fn owner_identity(&self, bucket: &str, accounts: &CredentialSet) -> Result<Option<Identity>> {
        let acl = caller::scope(Some(internal_caller()), self.store.get_bucket_config(bucket, "acl")).await?;
        let Some(acl) = acl else { return Ok(None) };
        let acl = String::from_utf8_lossy(&acl);
        let owner = acl
            .split_once("<Owner>")
            .and_then(|(_, r)| r.split_once("<ID>"))
            .and_then(|(_, r)| r.split_once("</ID>"))
            .map(|(id, _)| id.to_string());
        let Some(owner) = owner else { return Ok(None) };
        Ok(accounts
            .access_keys()
            .into_iter()
            .find(|k| accounts.account_for(k).is_some_and(|a| a.id == owner))
            .and_then(|k| accounts.identity_for(&k)))
    }

    /// Apply every enabled rule of `config` as of `now` (seconds since the epoch).
    pub async fn apply(&self, bucket: &str, config: &LifecycleConfig, now: i64) -> RunStats {
        let mut pace =
            Pace { gap: Duration::from_secs_f64(1.0 / f64::from(self.opts.ops_per_sec.max(1))), next: Instant::now() };
        let mut stats = RunStats::default();
        for rule in config.rules.iter().filter(|r| r.enabled) {
            if let Some(exp) = &rule.expiration {
                self.expire(bucket, rule, exp, now, &mut pace, &mut stats).await;
            }
            if let Some(days) = rule.abort_incomplete_days {
                self.abort_uploads(bucket, rule, days, now, &mut pace, &mut stats).await;
            }
            if rule.noncurrent_expiration.is_some() || matches!(rule.expiration, Some(Expiration::DeleteMarker(true))) {
                self.noncurrent(bucket, rule, now, &mut pace, &mut stats).await;
            }
        }
        stats
    }

    /// Expiration by Days or Date: list the rule's prefix, delete what is due and matches.
    async fn expire(
        &self,
        bucket: &str,
        rule: &Rule,
        exp: &Expiration,
        now: i64,
        pace: &mut Pace,
        stats: &mut RunStats,
    ) {
        let f = &rule.filter;
        let mut after: Option<String> = None;
        loop {
            pace.tick().await;
            let req = ListObjectsRequest {
                prefix: f.prefix.clone(),
                delimiter: None,
                start_after: after.clone(),
                max_keys: 1000,
            };
            let page = match self.store.list_objects(bucket, req).await {
                Ok(p) => p,
                Err(e) => {
                    stats.errors += 1;
                    tracing::warn!(bucket, rule = rule.id, "lifecycle: listing failed: {e}");
                    return;
                }
            };
            for o in &page.objects {
                let due = match exp {
                    Expiration::Days(d) => due_after_days(secs(o.last_modified), *d, self.opts.day),
                    Expiration::Date(t) => *t,
                    Expiration::DeleteMarker(_) => return,
                };
                if now < due || !f.size_matches(o.size) {
                    continue;
                }
                if !f.tags.is_empty() {
                    pace.tick().await;
                    match self.store.get_object_tagging(bucket, &o.key, None).await.map(|t| t.tags) {
                        Ok(tags) if f.tags_match(&tags) => {}
                        Ok(_) => continue,
                        Err(e) if e.code == ErrorCode::NoSuchKey => continue,
                        Err(e) => {
                            stats.errors += 1;
                            tracing::warn!(bucket, key = o.key, "lifecycle: reading tags failed: {e}");
                            continue;
                        }
                    }
                }
                pace.tick().await;
                match self.store.delete_object(bucket, &o.key).await {
                    Ok(()) => stats.expired += 1,
                    Err(e) => {
                        stats.errors += 1;
                        tracing::warn!(bucket, key = o.key, "lifecycle: expiring failed: {e}");
                    }
                }
            }
            match page.next_marker.filter(|_| page.is_truncated) {
                Some(m) => after = Some(m),
                None => return,
            }
        }
    }

    /// AbortIncompleteMultipartUpload: abort uploads of the rule's prefix initiated `days` ago.
    async fn abort_uploads(
        &self,
        bucket: &str,
        rule: &Rule,
        days: u32,
        now: i64,
        pace: &mut Pace,
        stats: &mut RunStats,
    ) {
        let mut req =
            ListUploadsRequest { prefix: rule.filter.prefix.clone(), max_uploads: 1000, ..Default::default() };
        loop {
            pace.tick().await;
            let page = match self.store.list_multipart_uploads(bucket, req.clone()).await {
                Ok(p) => p,
                Err(e) => {
                    stats.errors += 1;
                    tracing::warn!(bucket, rule = rule.id, "lifecycle: listing uploads failed: {e}");
                    return;
                }
            };
            for u in &page.uploads {
                if now < due_after_days(secs(u.initiated), days, self.opts.day) {
                    continue;
                }
                pace.tick().await;
                match self.store.abort_multipart_upload(bucket, &u.key, &u.upload_id).await {
                    Ok(()) => stats.aborted += 1,
                    Err(e) if e.code == ErrorCode::NoSuchUpload => {}
                    Err(e) => {
                        stats.errors += 1;
                        tracing::warn!(bucket, key = u.key, "lifecycle: aborting an upload failed: {e}");
                    }
                }
            }
            if !page.is_truncated {
                return;
            }
            req.key_marker = page.next_key_marker;
            req.upload_id_marker = page.next_upload_id_marker;
            if req.key_marker.is_none() {
                return;
            }
        }
    }

    /// NoncurrentVersionExpiration and ExpiredObjectDeleteMarker, over ListObjectVersions (a
    /// store without versioning lists every object as its one current version: nothing to do).
    /// Tag filters would need every version's tags, which the Store seam does not read: a rule
    /// with tags leaves versions alone (said in the log).
    async fn noncurrent(&self, bucket: &str, rule: &Rule, now: i64, pace: &mut Pace, stats: &mut RunStats) {
        if !rule.filter.tags.is_empty() {
            tracing::warn!(bucket, rule = rule.id, "lifecycle: noncurrent versions are not filtered by tags; skipped");
            return;
        }
        let mut req = ListVersionsRequest { prefix: rule.filter.prefix.clone(), max_keys: 1000, ..Default::default() };
        // One key's versions, newest first; a key's versions may span pages.
        let mut key: Vec<VersionEntry> = Vec::new();
        loop {
            pace.tick().await;
            let page = match self.store.list_object_versions(bucket, req.clone()).await {
                Ok(p) => p,
                Err(e) => {
                    stats.errors += 1;
                    tracing::warn!(bucket, rule = rule.id, "lifecycle: listing versions failed: {e}");
                    return;
                }
            };
            for v in page.versions {
                if key.first().is_some_and(|k| k.key != v.key) {
                    self.noncurrent_key(bucket, rule, std::mem::take(&mut key), now, pace, stats).await;
                }
                key.push(v);
            }
            req.key_marker = page.next_key_marker.filter(|_| page.is_truncated);
            req.version_id_marker = page.next_version_id_marker;
            if req.key_marker.is_none() {
                break;
            }
        }
        if !key.is_empty() {
            self.noncurrent_key(bucket, rule, key, now, pace, stats).await;
        }
    }

    /// One key's versions (newest first): a version became noncurrent when the one after it
    /// was written; it goes `days` after that (rounded up to midnight UTC, as Expiration),
    /// except the `newer_versions` newest noncurrent ones. A delete marker left as the only
    /// version goes with ExpiredObjectDeleteMarker.
    async fn noncurrent_key(
        &self,
        bucket: &str,
        rule: &Rule,
        versions: Vec<VersionEntry>,
        now: i64,
        pace: &mut Pace,
        stats: &mut RunStats,
    ) {
        let mut left = versions.len();
        if let Some(n) = &rule.noncurrent_expiration {
            let mut newer = 0u32;
            for (i, v) in versions.iter().enumerate().filter(|(_, v)| !v.is_latest) {
                let Some(successor) = i.checked_sub(1).map(|j| &versions[j]) else { continue };
                let due = due_after_days(secs(successor.last_modified), n.days, self.opts.day);
                let keep = newer < n.newer_versions.unwrap_or(0);
                newer += 1;
                if keep || now < due || (!v.delete_marker && !rule.filter.size_matches(v.size)) {
                    continue;
                }
                if self.remove_version(bucket, v, pace, stats).await {
                    left -= 1;
                }
            }
        }
        let marker_alone = left == 1 && versions.first().is_some_and(|v| v.is_latest && v.delete_marker);
        if marker_alone && matches!(rule.expiration, Some(Expiration::DeleteMarker(true))) {
            self.remove_version(bucket, &versions[0], pace, stats).await;
        }
    }

    /// Remove one version (or delete marker) for good; whether it went.
    async fn remove_version(&self, bucket: &str, v: &VersionEntry, pace: &mut Pace, stats: &mut RunStats) -> bool {
        pace.tick().await;
        match self.store.delete_object_version(bucket, &v.key, Some(&v.version_id)).await {
            Ok(_) => {
                stats.expired += 1;
                true
            }
            // Object lock keeps the version (as on S3): skipped and counted, not an error.
            Err(e) if s3hpc_core::lock::is_protected(&e) => {
                stats.locked += 1;
                false
            }
            Err(e) => {
                stats.errors += 1;
                tracing::warn!(
                    bucket,
                    key = v.key,
                    version = v.version_id,
                    "lifecycle: removing a version failed: {e}"
                );
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3hpc_core::memory::MemoryStore;
    use s3hpc_core::{Body, CreateMultipartRequest, PutObjectRequest, Store};

    fn runner(store: DynStore, leases: Arc<dyn Leases>) -> Runner {
        Runner {
            store,
            leases,
            opts: Options { interval: Duration::from_secs(3600), ops_per_sec: 10_000, day: 86_400 },
            metrics: Some(HttpMetrics::new()),
            posix_accounts: None,
        }
    }

    async fn put(s: &MemoryStore, key: &str, len: usize) {
        s.put_object("bkt", key, PutObjectRequest::default(), Body::Bytes(vec![b'x'; len].into())).await.unwrap();
    }

    #[tokio::test]
    async fn locked_versions_are_skipped_and_counted() {
        use s3hpc_core::lock::{LockMode, OBJECT_LOCK_CONFIG};
        use s3hpc_core::versions::VERSIONING_CONFIG;
        use s3hpc_core::{ObjectLock, Retention};
        let mem = Arc::new(MemoryStore::new());
        mem.create_bucket("bkt").await.unwrap();
        mem.put_bucket_config("bkt", VERSIONING_CONFIG, Some(b"Enabled".to_vec())).await.unwrap();
        mem.put_bucket_config("bkt", OBJECT_LOCK_CONFIG, Some(b"Enabled".to_vec())).await.unwrap();
        let until = std::time::SystemTime::now() + Duration::from_secs(3600);
        let lock = ObjectLock { retention: Some(Retention { mode: LockMode::Compliance, until }), legal_hold: None };
        let req = PutObjectRequest { lock, content_md5: Some(s3hpc_core::checksum::md5(b"x")), ..Default::default() };
        mem.put_object("bkt", "k", req, Body::Bytes(b"x".to_vec().into())).await.unwrap();
        put(&mem, "k", 1).await;
        put(&mem, "k", 1).await;
        let doc = "<LifecycleConfiguration><Rule><ID>a</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>\
            <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>\
            </LifecycleConfiguration>";
        let cfg = LifecycleConfig::parse(doc.as_bytes(), None).unwrap();
        let r = runner(mem.clone(), Arc::new(LocalLeases::default()));
        let s = r.apply("bkt", &cfg, now_secs() as i64 + 2 * 86_400).await;
        assert_eq!(s, RunStats { expired: 1, aborted: 0, errors: 0, locked: 1 });
    }

    #[tokio::test]
    async fn noncurrent_versions_and_lone_delete_markers() {
        use s3hpc_core::versions::{ListVersionsRequest, VERSIONING_CONFIG};
        let mem = Arc::new(MemoryStore::new());
        mem.create_bucket("bkt").await.unwrap();
        mem.put_bucket_config("bkt", VERSIONING_CONFIG, Some(b"Enabled".to_vec())).await.unwrap();
        for _ in 0..3 {
            put(&mem, "a/k", 10).await;
        }
        put(&mem, "a/big", 100).await;
        put(&mem, "a/big", 100).await;
        put(&mem, "b/gone", 10).await;
        mem.delete_object("bkt", "b/gone").await.unwrap();
        let doc = "<LifecycleConfiguration>\
            <Rule><ID>a</ID><Filter><And><Prefix>a/</Prefix><ObjectSizeLessThan>50</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>\
            <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>\
            <Rule><ID>b</ID><Filter><Prefix>b/</Prefix></Filter><Status>Enabled</Status>\
            <Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>\
            <NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>\
            </LifecycleConfiguration>";
        let cfg = LifecycleConfig::parse(doc.as_bytes(), None).unwrap();
        let r = runner(mem.clone(), Arc::new(LocalLeases::default()));
        let versions = || async {
            let req = ListVersionsRequest { max_keys: 1000, ..Default::default() };
            let page = mem.list_object_versions("bkt", req).await.unwrap();
            page.versions.into_iter().map(|v| (v.key, v.is_latest, v.delete_marker)).collect::<Vec<_>>()
        };
        assert_eq!(versions().await.len(), 7);
        // Nothing has been noncurrent for a day yet.
        let now = now_secs() as i64;
        assert_eq!(r.apply("bkt", &cfg, now).await, RunStats::default());
        // Two days on: a/k keeps its newest noncurrent version (NewerNoncurrentVersions 1) and
        // loses the oldest; a/big is too large for the rule; b/gone loses its one noncurrent
        // version, and then its delete marker, left alone.
        let s = r.apply("bkt", &cfg, now + 2 * 86_400).await;
        assert_eq!(s, RunStats { expired: 3, aborted: 0, errors: 0, locked: 0 });
        let left = versions().await;
        let a_k: Vec<_> = left.iter().filter(|v| v.0 == "a/k").map(|v| v.1).collect();
        assert_eq!(a_k, [true, false]);
        assert_eq!(left.iter().filter(|v| v.0 == "a/big").count(), 2);
        assert!(!left.iter().any(|v| v.0 == "b/gone"), "{left:?}");
        // Run again: nothing more is due.
        assert_eq!(r.apply("bkt", &cfg, now + 2 * 86_400).await, RunStats::default());
    }

    #[tokio::test]
    async fn expires_by_filter_and_aborts_uploads_once_per_interval() {
        let mem = Arc::new(MemoryStore::new());
        mem.create_bucket("bkt").await.unwrap();
        for k in ["tmp/a", "tmp/b", "tmp/big", "keep/a"] {
            put(&mem, k, if k.ends_with("big") { 100 } else { 10 }).await;
        }
        mem.put_object_tagging("bkt", "keep/a", None, vec![("purge".into(), "yes".into())]).await.unwrap();
        let up = mem.create_multipart_upload("bkt", "up/x", CreateMultipartRequest::default()).await.unwrap();
        let doc = "<LifecycleConfiguration>\
            <Rule><ID>tmp</ID><Filter><And><Prefix>tmp/</Prefix><ObjectSizeLessThan>50</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>\
            <Rule><ID>tag</ID><Filter><Tag><Key>purge</Key><Value>yes</Value></Tag></Filter><Status>Enabled</Status><Expiration><Date>2020-01-01T00:00:00Z</Date></Expiration></Rule>\
            <Rule><ID>off</ID><Filter/><Status>Disabled</Status><Expiration><Days>1</Days></Expiration></Rule>\
            <Rule><ID>mpu</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>\
            </LifecycleConfiguration>";
        let cfg = LifecycleConfig::parse(doc.as_bytes(), None).unwrap();
        mem.put_bucket_config("bkt", "lifecycle", Some(cfg.to_xml(true).into_bytes())).await.unwrap();
        let r = runner(mem.clone(), Arc::new(LocalLeases::default()));
        // Today nothing is a day old: only the dated, tagged rule applies.
        let now = now_secs() as i64;
        let s = r.apply("bkt", &cfg, now).await;
        assert_eq!(s, RunStats { expired: 1, aborted: 0, errors: 0, locked: 0 });
        // Two days on: the small tmp/ objects and the upload.
        let s = r.apply("bkt", &cfg, now + 2 * 86_400).await;
        assert_eq!(s, RunStats { expired: 2, aborted: 1, errors: 0, locked: 0 });
        let left = mem.list_objects("bkt", ListObjectsRequest { max_keys: 1000, ..Default::default() }).await.unwrap();
        let keys: Vec<_> = left.objects.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["tmp/big"]);
        assert!(mem.list_parts("bkt", "up/x", &up, Default::default()).await.is_err());
        // The whole bucket step: run once, then "recent" until the interval passes.
        put(&mem, "keep/b", 1).await;
        mem.put_object_tagging("bkt", "keep/b", None, vec![("purge".into(), "yes".into())]).await.unwrap();
        assert_eq!(r.bucket("bkt").await.unwrap(), Some(RunStats { expired: 1, aborted: 0, errors: 0, locked: 0 }));
        assert_eq!(r.bucket("bkt").await.unwrap(), None);
        let m = r.metrics.as_ref().unwrap();
        assert_eq!(m.lifecycle.runs.get(), 1);
        assert_eq!(m.lifecycle.expired.get(), 1);
    }

    #[test]
    fn file_leases_exclude_each_other_and_keep_the_last_run() {
        let dir = std::env::temp_dir().join(format!("s3hpc-lease-{}-{}", std::process::id(), now_secs()));
        let a = FileLeases::new(dir.clone());
        let b = FileLeases::new(dir.clone());
        let mut l = a.try_lease("bkt").unwrap().expect("free");
        assert!(b.try_lease("bkt").unwrap().is_none(), "held by another open file");
        assert!(b.try_lease("other").unwrap().is_some());
        assert_eq!(l.last_run(), None);
        l.record(1234).unwrap();
        drop(l);
        let mut l2 = b.try_lease("bkt").unwrap().expect("released");
        assert_eq!(l2.last_run(), Some(1234));
        let _ = std::fs::remove_dir_all(dir);
    }
}
