//! The key store: self-service access keys of local users (`s3hpc credentials`) and STS
//! session credentials, kept in the gateway's state area beside the buckets' state, where no
//! local user can reach them (`ROOT/.s3hpc/credentials/`, mode 0700, owned by the gateway; see
//! `s3hpc_posix::PosixStore::credentials_dir` and docs/CREDENTIALS.md).
//!
//! One file per key, `<AccessKeyId>.json` (mode 0600), written once (temp file + rename) and
//! removed to revoke: every gateway on the root reads the same directory. SigV4 needs the
//! secret itself, so the secret is stored, readable by the gateway's user only.
//!
//! Lookups (every request signed by such a key) are served from memory. Each gateway refreshes
//! its copy when the directory's change stamp moves (checked every [`POLL`]), and reads a key it
//! does not know straight from its file (with a short negative cache), so a key made on one
//! gateway works on the others at once and a revoked one stops within a second. Expiry is
//! checked on every lookup. The users file (`[[users]]`) is asked first
//! ([`s3hpc_core::CredentialSet`]); this store only for keys it does not list.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use s3hpc_core::caller::Account;
use s3hpc_core::creds::{AccessKeyInfo, KeyAdmin, KeyKind, KeySource, StoredKey};
use s3hpc_core::identity::Identity;
use s3hpc_core::{CredentialSet, Credentials, Error, ErrorCode};

/// How often each gateway checks the directory for keys made or revoked elsewhere.
pub const POLL: Duration = Duration::from_millis(250);
/// How long an unknown key is remembered as unknown before its file is looked for again.
const NEGATIVE_TTL: Duration = Duration::from_millis(500);
/// How long a uid's NSS answer (name, groups) is used.
const NSS_TTL: Duration = Duration::from_secs(60);
/// Expired keys are removed this long after they expired (until then an expired session is
/// answered `ExpiredToken`, not `InvalidAccessKeyId`).
const REMOVE_AFTER: Duration = Duration::from_secs(3600);
/// Longest description.
const MAX_DESCRIPTION: usize = 256;

/// Settings of the key store.
#[derive(Debug, Clone)]
pub struct KeyStoreOptions {
    /// uids that list and revoke every key (root always does).
    pub admins: Vec<u32>,
    /// Lifetime of a key created without one.
    pub default_lifetime: Duration,
    /// Longest lifetime a key may ask for.
    pub max_lifetime: Duration,
    /// Most live keys one uid may hold.
    pub max_per_user: usize,
}

/// One key file.
#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct Record {
    access_key: String,
    secret_key: String,
    /// `"user"` or `"session"`.
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(default)]
    description: String,
    /// Seconds since the epoch.
    created: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

impl Record {
    fn expires_at(&self) -> Option<SystemTime> {
        self.expires.map(|s| UNIX_EPOCH + Duration::from_secs(s))
    }
    fn expired(&self, now: SystemTime) -> bool {
        self.expires_at().is_some_and(|e| e <= now)
    }
    fn info(&self) -> AccessKeyInfo {
        AccessKeyInfo {
            access_key: self.access_key.clone(),
            uid: self.uid.unwrap_or(u32::MAX),
            user: self.user.clone().unwrap_or_default(),
            description: self.description.clone(),
            created: UNIX_EPOCH + Duration::from_secs(self.created),
            expires: self.expires_at(),
        }
    }
}

/// The directory's change stamp (what moves when a file is added or removed).
type Stamp = (i64, i64, i64, i64, u64);

fn stamp(dir: &File) -> io::Result<Stamp> {
    let m = dir.metadata()?;
    Ok((m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec(), m.size()))
}

/// What a uid's keys act as.
#[derive(Clone)]
struct UserOf {
    login: String,
    identity: Identity,
    account: Arc<Account>,
}

/// The key store of one gateway (see the module doc).
pub struct KeyStore {
    dir: File,
    opts: KeyStoreOptions,
    /// The users file: the account a uid has there is the account its keys act as.
    users: CredentialSet,
    keys: RwLock<HashMap<String, Arc<Record>>>,
    seen: Mutex<Option<Stamp>>,
    negative: Mutex<HashMap<String, Instant>>,
    /// Per uid, for [`NSS_TTL`]: login, identity and account (what every request signed by a
    /// key of that uid needs, so it is worked out once a minute, not per request).
    nss: Mutex<HashMap<u32, (Instant, Option<UserOf>)>>,
    last_sweep: Mutex<Instant>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore").field("keys", &self.keys.read().map(|k| k.len()).unwrap_or(0)).finish()
    }
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InternalError, format!("key store: {e}"))
}

/// An access key id as this store writes them (also what may name a file).
fn valid_key_name(ak: &str) -> bool {
    (16..=64).contains(&ak.len()) && ak.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl KeyStore {
    /// A store over `dir` (the held `ROOT/.s3hpc/credentials`), reading what it holds now.
    pub fn open(dir: File, opts: KeyStoreOptions, users: CredentialSet) -> io::Result<Arc<KeyStore>> {
        let ks = Arc::new(KeyStore {
            dir,
            opts,
            users,
            keys: RwLock::new(HashMap::new()),
            seen: Mutex::new(None),
            negative: Mutex::new(HashMap::new()),
            nss: Mutex::new(HashMap::new()),
            last_sweep: Mutex::new(Instant::now()),
        });
        gateway(|| ks.refresh(true))??;
        Ok(ks)
    }

    /// Keep this gateway's copy current (every [`POLL`]) on a thread of its own, until the
    /// store is dropped.
    pub fn watch(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new().name("s3hpc-keys".into()).spawn(move || {
            loop {
                std::thread::sleep(POLL);
                let Some(ks) = weak.upgrade() else { return };
                match gateway(|| ks.refresh(false)) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) | Err(e) => tracing::warn!("key store: refreshing: {e}"),
                }
                ks.sweep();
            }
        });
    }

    /// Re-read the directory if its change stamp moved (or `force`): files are written once,
    /// so only new names are read; names gone are revoked keys.
    fn refresh(&self, force: bool) -> io::Result<()> {
        let now = stamp(&self.dir)?;
        {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if !force && *seen == Some(now) {
                return Ok(());
            }
        }
        let names = list_dir(&self.dir)?;
        let present: std::collections::HashSet<&str> =
            names.iter().filter_map(|n| n.strip_suffix(".json")).filter(|n| valid_key_name(n)).collect();
        let known: Vec<String> = self.keys.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect();
        let mut fresh = Vec::new();
        for ak in &present {
            if !known.iter().any(|k| k == ak)
                && let Some(r) = self.read_file(ak)?
            {
                fresh.push(r);
            }
        }
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        keys.retain(|k, _| present.contains(k.as_str()));
        for r in fresh {
            keys.insert(r.access_key.clone(), Arc::new(r));
        }
        drop(keys);
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        Ok(())
    }

    /// The record in `<ak>.json`, if there is one (a file that does not parse is logged and
    /// skipped).
    fn read_file(&self, ak: &str) -> io::Result<Option<Record>> {
        self.read_named(ak, &format!("{ak}.json"))
    }

    /// The record of key `ak` in file `name` (`<ak>.json`, or `<ak>.disabled`).
    fn read_named(&self, ak: &str, name: &str) -> io::Result<Option<Record>> {
        let mut f = match open_at(&self.dir, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut text = String::new();
        f.read_to_string(&mut text)?;
        match serde_json::from_str::<Record>(&text) {
            Ok(r) if r.access_key == ak => Ok(Some(r)),
            Ok(_) => {
                tracing::warn!("key store: {name} names another key: ignored");
                Ok(None)
            }
            Err(e) => {
                tracing::warn!("key store: {name}: {e}: ignored");
                Ok(None)
            }
        }
    }

    /// Write a new key file (create-only, atomically: temp file, then linked into place).
    fn write(&self, r: &Record) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(r).map_err(io::Error::other)?;
        let tmp = format!(".{}.{}.tmp", r.access_key, std::process::id());
        let mut f = open_at(&self.dir, &tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, 0o600)?;
        let res = f.write_all(&text).and_then(|_| f.sync_all()).and_then(|_| {
            rename_at(&self.dir, &tmp, &format!("{}.json", r.access_key))?;
            // The directory entry too: a key handed out must survive a crash.
            self.dir.sync_all()
        });
        if res.is_err() {
            let _ = unlink_at(&self.dir, &tmp);
        }
        res
    }

    /// A record from memory, else from its file (a key made by another gateway a moment ago).
    fn get(&self, ak: &str) -> Option<Arc<Record>> {
        if let Some(r) = self.keys.read().unwrap_or_else(|e| e.into_inner()).get(ak) {
            return Some(r.clone());
        }
        if !valid_key_name(ak) {
            return None;
        }
        {
            let mut neg = self.negative.lock().unwrap_or_else(|e| e.into_inner());
            if neg.get(ak).is_some_and(|t| t.elapsed() < NEGATIVE_TTL) {
                return None;
            }
            if neg.len() > 10_000 {
                neg.clear();
            }
            neg.insert(ak.to_string(), Instant::now());
        }
        // Read as the process: this may run on a thread acting as a request's user.
        let r = s3hpc_posix::ident::as_process(|| self.read_file(ak)).ok()?.ok()??;
        let r = Arc::new(r);
        self.keys.write().unwrap_or_else(|e| e.into_inner()).insert(ak.to_string(), r.clone());
        self.negative.lock().unwrap_or_else(|e| e.into_inner()).remove(ak);
        Some(r)
    }

    /// Name and identity of `uid` through NSS (getpwuid + getgrouplist), and its account,
    /// cached for [`NSS_TTL`].
    fn nss(&self, uid: u32) -> Option<UserOf> {
        let mut m = self.nss.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((t, v)) = m.get(&uid)
            && t.elapsed() < NSS_TTL
        {
            return v.clone();
        }
        let v = user_of_uid(uid).and_then(|login| {
            let (u, gid, groups) = crate::serve::lookup_login(&login).ok()?;
            (u == uid).then(|| UserOf {
                account: self.account_of(uid, &login),
                login,
                identity: Identity { uid, gid, groups },
            })
        });
        if m.len() > 100_000 {
            m.clear();
        }
        m.insert(uid, (Instant::now(), v.clone()));
        v
    }

    /// The account keys of `uid` act as: the users file's account with that uid, if there is
    /// exactly one, else an account named after the login.
    fn account_of(&self, uid: u32, login: &str) -> Arc<Account> {
        if let Some(a) = self.users.access_key_for_uid(uid).and_then(|k| self.users.account_for(&k)) {
            return a;
        }
        Arc::new(Account { id: login.to_string(), name: Some(login.to_string()), admin: false, uid: Some(uid) })
    }

    fn is_admin(&self, uid: u32) -> bool {
        uid == 0
            || self.opts.admins.contains(&uid)
            || self.users.access_key_for_uid(uid).and_then(|k| self.users.account_for(&k)).is_some_and(|a| a.admin)
    }

    /// Remove keys long expired (any gateway may; removing twice is harmless), at most once a
    /// minute.
    fn sweep(&self) {
        {
            let mut last = self.last_sweep.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < Duration::from_secs(60) {
                return;
            }
            *last = Instant::now();
        }
        let cutoff = SystemTime::now() - REMOVE_AFTER;
        let old: Vec<String> = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|r| r.expired(cutoff))
            .map(|r| r.access_key.clone())
            .collect();
        for ak in old {
            let _ = gateway(|| unlink_at(&self.dir, &format!("{ak}.json")));
            self.keys.write().unwrap_or_else(|e| e.into_inner()).remove(&ak);
        }
    }

    fn live_keys_of(&self, uid: u32) -> usize {
        let now = SystemTime::now();
        self.keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|r| r.kind == "user" && r.uid == Some(uid) && !r.expired(now))
            .count()
    }
}

/// Run `f` as the gateway (file work on a thread that may last have acted as a user).
fn gateway<T>(f: impl FnOnce() -> T) -> io::Result<T> {
    s3hpc_posix::ident::as_gateway(f)
}

impl KeySource for KeyStore {
    fn lookup(&self, access_key: &str) -> Option<StoredKey> {
        let r = self.get(access_key)?;
        let kind = match r.kind.as_str() {
            "user" => {
                let u = self.nss(r.uid?)?;
                KeyKind::Account { account: u.account, identity: Some(u.identity) }
            }
            "session" => KeyKind::Session { parent: r.parent.clone()?, token: r.token.clone()? },
            _ => return None,
        };
        Some(StoredKey { secret: r.secret_key.clone(), expires: r.expires_at(), kind })
    }

    fn account_by_uid(&self, uid: u32) -> Option<Arc<Account>> {
        let now = SystemTime::now();
        let has = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .any(|r| r.kind == "user" && r.uid == Some(uid) && !r.expired(now));
        if !has {
            return None;
        }
        self.nss(uid).map(|u| u.account)
    }

    fn account_exists(&self, id: &str) -> bool {
        let now = SystemTime::now();
        let uids: Vec<u32> = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|r| r.kind == "user" && !r.expired(now))
            .filter_map(|r| r.uid)
            .collect();
        uids.into_iter().any(|uid| self.nss(uid).is_some_and(|u| u.account.id == id))
    }

    fn issue_session(&self, parent: &str, expires: SystemTime) -> s3hpc_core::Result<Credentials> {
        let c = Credentials::generate();
        let token = format!("S3HPC{}{}", Credentials::generate().secret_key, Credentials::generate().secret_key);
        let r = Record {
            access_key: c.access_key.clone(),
            secret_key: c.secret_key.clone(),
            kind: "session".into(),
            uid: None,
            user: None,
            description: String::new(),
            created: now_secs(),
            expires: Some(expires.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)),
            parent: Some(parent.to_string()),
            token: Some(token.clone()),
        };
        gateway(|| self.write(&r)).and_then(|r| r).map_err(internal)?;
        self.keys.write().unwrap_or_else(|e| e.into_inner()).insert(r.access_key.clone(), Arc::new(r));
        Ok(c.with_session_token(Some(token)))
    }
}

impl KeyAdmin for KeyStore {
    fn create(
        &self,
        uid: u32,
        lifetime: Option<Duration>,
        description: &str,
    ) -> s3hpc_core::Result<(Credentials, AccessKeyInfo)> {
        let lifetime = lifetime.unwrap_or(self.opts.default_lifetime);
        if lifetime.is_zero() || lifetime > self.opts.max_lifetime {
            return Err(Error::invalid_argument(format!(
                "the lifetime must be between 1 second and {} seconds (this gateway's --user-keys-max-lifetime)",
                self.opts.max_lifetime.as_secs()
            )));
        }
        if description.chars().count() > MAX_DESCRIPTION || description.chars().any(char::is_control) {
            return Err(Error::invalid_argument(format!(
                "the description must be at most {MAX_DESCRIPTION} characters, without control characters"
            )));
        }
        let login = self
            .nss(uid)
            .ok_or_else(|| Error::new(ErrorCode::AccessDenied, format!("uid {uid} has no user name (NSS)")))?
            .login;
        gateway(|| self.refresh(false)).and_then(|r| r).map_err(internal)?;
        if self.live_keys_of(uid) >= self.opts.max_per_user {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                format!("user {login} has {} access keys, the most allowed: revoke one first", self.opts.max_per_user),
            ));
        }
        let c = Credentials::generate();
        let created = now_secs();
        let r = Record {
            access_key: c.access_key.clone(),
            secret_key: c.secret_key.clone(),
            kind: "user".into(),
            uid: Some(uid),
            user: Some(login.clone()),
            description: description.to_string(),
            created,
            expires: Some(created + lifetime.as_secs()),
            parent: None,
            token: None,
        };
        gateway(|| self.write(&r)).and_then(|r| r).map_err(internal)?;
        let info = r.info();
        self.keys.write().unwrap_or_else(|e| e.into_inner()).insert(r.access_key.clone(), Arc::new(r));
        tracing::info!(target: "s3hpc::access", uid, user = %login, access_key = %c.access_key, "access key created");
        Ok((c, info))
    }

    fn list(&self, uid: u32) -> s3hpc_core::Result<Vec<AccessKeyInfo>> {
        gateway(|| self.refresh(false)).and_then(|r| r).map_err(internal)?;
        let (admin, now) = (self.is_admin(uid), SystemTime::now());
        let mut v: Vec<AccessKeyInfo> = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|r| r.kind == "user" && !r.expired(now) && (admin || r.uid == Some(uid)))
            .map(|r| r.info())
            .collect();
        v.sort_by(|a, b| (a.uid, a.created, &a.access_key).cmp(&(b.uid, b.created, &b.access_key)));
        Ok(v)
    }

    fn revoke(&self, uid: u32, access_key: &str) -> s3hpc_core::Result<()> {
        let r = if valid_key_name(access_key) {
            gateway(|| self.read_file(access_key)).and_then(|r| r).map_err(internal)?
        } else {
            None
        };
        let Some(r) = r.filter(|r| r.kind == "user") else {
            return Err(Error::new(
                ErrorCode::InvalidAccessKeyId,
                format!("no access key {access_key} in the key store"),
            ));
        };
        if r.uid != Some(uid) && !self.is_admin(uid) {
            return Err(Error::new(ErrorCode::AccessDenied, format!("access key {access_key} is not yours")));
        }
        // Its sessions end with it (they are refused at once anyway: their parent is gone).
        let sessions: Vec<String> = self
            .keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|s| s.parent.as_deref() == Some(access_key))
            .map(|s| s.access_key.clone())
            .collect();
        gateway(|| -> io::Result<()> {
            match unlink_at(&self.dir, &format!("{access_key}.json")) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            for s in &sessions {
                let _ = unlink_at(&self.dir, &format!("{s}.json"));
            }
            self.dir.sync_all()
        })
        .and_then(|r| r)
        .map_err(internal)?;
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        keys.remove(access_key);
        for s in &sessions {
            keys.remove(s);
        }
        tracing::info!(target: "s3hpc::access", uid, access_key, "access key revoked");
        Ok(())
    }
}

/// A self-service key as the admin API lists it.
#[derive(Debug, Clone)]
pub struct AdminKeyInfo {
    pub info: AccessKeyInfo,
    /// Disabled by an administrator (`<ak>.disabled`): refused until enabled again.
    pub disabled: bool,
    pub expired: bool,
}

/// Administrators' operations (the admin API, docs/CREDENTIALS.md, "The admin API").
impl KeyStore {
    /// Every self-service key, live, expired (until swept) or disabled.
    pub fn admin_list(&self) -> s3hpc_core::Result<Vec<AdminKeyInfo>> {
        let now = SystemTime::now();
        gateway(|| -> io::Result<Vec<AdminKeyInfo>> {
            let mut out = Vec::new();
            for name in list_dir(&self.dir)? {
                let (ak, disabled) = match (name.strip_suffix(".json"), name.strip_suffix(".disabled")) {
                    (Some(ak), _) => (ak, false),
                    (_, Some(ak)) => (ak, true),
                    _ => continue,
                };
                if !valid_key_name(ak) {
                    continue;
                }
                if let Some(r) = self.read_named(ak, &name)?.filter(|r| r.kind == "user") {
                    out.push(AdminKeyInfo { expired: r.expired(now), info: r.info(), disabled });
                }
            }
            Ok(out)
        })
        .and_then(|r| r)
        .map_err(internal)
        .map(|mut v| {
            v.sort_by(|a, b| {
                (a.info.uid, a.info.created, &a.info.access_key).cmp(&(b.info.uid, b.info.created, &b.info.access_key))
            });
            v
        })
    }

    /// Disable a key (its file renamed to `<ak>.disabled`: every gateway drops it within a
    /// poll, its sessions end with it) or enable it again. `Ok(false)`: no such key.
    pub fn set_disabled(&self, access_key: &str, disabled: bool) -> s3hpc_core::Result<bool> {
        if !valid_key_name(access_key) {
            return Ok(false);
        }
        let (json, off) = (format!("{access_key}.json"), format!("{access_key}.disabled"));
        let (from, to) = if disabled { (&json, &off) } else { (&off, &json) };
        let moved = gateway(|| -> io::Result<bool> {
            // Only user keys are disabled (not sessions); one already in the wanted state is done.
            match self.read_named(access_key, from)? {
                Some(r) if r.kind == "user" => {}
                _ => return Ok(self.read_named(access_key, to)?.is_some_and(|r| r.kind == "user")),
            }
            rename_at(&self.dir, from, to)?;
            self.dir.sync_all()?;
            Ok(true)
        })
        .and_then(|r| r)
        .map_err(internal)?;
        if moved {
            if disabled {
                let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
                keys.remove(access_key);
                keys.retain(|_, s| s.parent.as_deref() != Some(access_key));
            } else {
                self.negative.lock().unwrap_or_else(|e| e.into_inner()).remove(access_key);
            }
            tracing::info!(target: "s3hpc::access", access_key, disabled, "access key disabled or enabled by an administrator");
        }
        Ok(moved)
    }

    /// Whether the store holds key `access_key` (enabled or disabled).
    pub fn holds(&self, access_key: &str) -> bool {
        valid_key_name(access_key)
            && gateway(|| {
                [format!("{access_key}.json"), format!("{access_key}.disabled")]
                    .iter()
                    .any(|n| self.read_named(access_key, n).ok().flatten().is_some_and(|r| r.kind == "user"))
            })
            .unwrap_or(false)
    }

    /// Remove a key, enabled or disabled (an administrator's revoke).
    pub fn remove(&self, access_key: &str) -> s3hpc_core::Result<()> {
        if valid_key_name(access_key) {
            let off = format!("{access_key}.disabled");
            gateway(|| match unlink_at(&self.dir, &off) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            })
            .and_then(|r| r)
            .map_err(internal)?;
        }
        match self.revoke(0, access_key) {
            Err(e) if e.code == ErrorCode::InvalidAccessKeyId => Ok(()),
            r => r,
        }
    }

    /// The uid of login `login` (NSS), for keys an administrator makes for a user.
    pub fn uid_of(login: &str) -> Option<u32> {
        crate::serve::lookup_login(login).ok().map(|(uid, _, _)| uid)
    }
}

/// The login name of `uid` (getpwuid_r).
fn user_of_uid(uid: u32) -> Option<String> {
    // SAFETY: all-zero is a valid passwd; the buffer outlives the call and the returned
    // pointers are read only while it lives.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16384];
    let mut res: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `pw`, `buf` (of `buf.len()` bytes) and `res` are live locals that outlive the call.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut res) };
    if rc != 0 || res.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r set pw_name to a NUL-terminated string inside `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    name.to_str().ok().map(str::to_string)
}

fn cstr(name: &str) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name with a NUL byte"))
}

fn open_at(dir: &File, name: &str, flags: libc::c_int, mode: u32) -> io::Result<File> {
    let c = cstr(name)?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

fn rename_at(dir: &File, from: &str, to: &str) -> io::Result<()> {
    let (a, b) = (cstr(from)?, cstr(to)?);
    // SAFETY: valid descriptor and NUL-terminated names.
    if unsafe { libc::renameat(dir.as_raw_fd(), a.as_ptr(), dir.as_raw_fd(), b.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn unlink_at(dir: &File, name: &str) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The names in directory `dir` (read through a fresh descriptor of it).
fn list_dir(dir: &File) -> io::Result<Vec<String>> {
    let d = open_at(dir, ".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    use std::os::fd::IntoRawFd;
    let fd = d.into_raw_fd();
    // SAFETY: fdopendir takes ownership of a valid directory descriptor.
    let dp = unsafe { libc::fdopendir(fd) };
    if dp.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: still ours when fdopendir failed.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: a valid DIR stream; the entry is read before the next call.
        let ent = unsafe { libc::readdir(dp) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        if let Ok(n) = name.to_str()
            && n != "."
            && n != ".."
        {
            out.push(n.to_string());
        }
    }
    // SAFETY: closes the stream and its descriptor.
    unsafe { libc::closedir(dp) };
    Ok(out)
}

/// `30d`, `12h`, `90m`, `2s` or plain seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: u64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        "y" => 365 * 86_400,
        _ => return None,
    };
    n.checked_mul(mult).map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30d"), Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("5x"), None);
        assert_eq!(parse_duration(""), None);
    }

    fn store(dir: &Path) -> Arc<KeyStore> {
        let opts = KeyStoreOptions {
            admins: vec![],
            default_lifetime: Duration::from_secs(3600),
            max_lifetime: Duration::from_secs(86_400),
            max_per_user: 2,
        };
        KeyStore::open(File::open(dir).unwrap(), opts, CredentialSet::default()).unwrap()
    }

    use std::path::Path;

    /// A key made by one store is seen by another on the same directory at once (read on a
    /// miss), and its revocation within a poll; files are 0600.
    #[test]
    fn shared_between_stores() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (store(t.path()), store(t.path()));
        let me = rustix::process::getuid().as_raw();
        let (c, info) = a.create(me, None, "test").unwrap();
        assert_eq!(info.uid, me);
        let md = std::fs::metadata(t.path().join(format!("{}.json", c.access_key))).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600);
        let k = b.lookup(&c.access_key).expect("seen by the other store");
        assert_eq!(k.secret, c.secret_key);
        let set = CredentialSet::default();
        set.set_source(b.clone());
        assert_eq!(set.secret_for(&c.access_key).as_deref(), Some(c.secret_key.as_str()));
        // Another user may not revoke it; the owner may.
        assert_eq!(a.revoke(me + 1, &c.access_key).unwrap_err().code, ErrorCode::AccessDenied);
        a.revoke(me, &c.access_key).unwrap();
        b.refresh(false).unwrap();
        assert!(b.lookup(&c.access_key).is_none());
        assert!(set.secret_for(&c.access_key).is_none());
    }

    /// An administrator's disable renames the file: the other store drops the key within a
    /// poll (and its sessions end), enable brings it back, remove takes a disabled key too.
    #[test]
    fn disable_enable_remove() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (store(t.path()), store(t.path()));
        let me = rustix::process::getuid().as_raw();
        let (c, _) = a.create(me, None, "d").unwrap();
        let set = CredentialSet::default();
        set.set_source(b.clone());
        let s = set.issue_session(&c.access_key, SystemTime::now() + Duration::from_secs(60)).unwrap();
        assert!(set.resolve(&s.access_key).is_some());
        assert!(a.set_disabled(&c.access_key, true).unwrap());
        b.refresh(false).unwrap();
        assert!(set.secret_for(&c.access_key).is_none(), "disabled key refused by the other store");
        assert!(set.resolve(&s.access_key).is_none(), "its session ends with it");
        let l = a.admin_list().unwrap();
        assert_eq!((l.len(), l[0].disabled), (1, true));
        assert!(a.holds(&c.access_key));
        assert!(a.set_disabled(&c.access_key, false).unwrap());
        b.refresh(false).unwrap();
        assert!(set.secret_for(&c.access_key).is_some());
        a.set_disabled(&c.access_key, true).unwrap();
        a.remove(&c.access_key).unwrap();
        assert!(!a.holds(&c.access_key) && a.admin_list().unwrap().is_empty());
        assert!(!a.set_disabled("S3HPCNOSUCHKEY000000", true).unwrap());
    }

    #[test]
    fn limits() {
        let t = tempfile::tempdir().unwrap();
        let a = store(t.path());
        let me = rustix::process::getuid().as_raw();
        assert_eq!(a.create(me, Some(Duration::from_secs(86_401)), "").unwrap_err().code, ErrorCode::InvalidArgument);
        a.create(me, None, "").unwrap();
        a.create(me, None, "").unwrap();
        assert_eq!(a.create(me, None, "").unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(a.list(me).unwrap().len(), 2);
        assert_eq!(a.list(me + 1).unwrap().len(), 0);
    }

    /// An expired key is unknown to the credential set; an expired session is ExpiredToken,
    /// a wrong token InvalidToken.
    #[test]
    fn expiry_and_sessions() {
        let t = tempfile::tempdir().unwrap();
        let a = store(t.path());
        let me = rustix::process::getuid().as_raw();
        let set = CredentialSet::default();
        set.set_source(a.clone());
        let (c, _) = a.create(me, Some(Duration::from_secs(1)), "").unwrap();
        assert!(set.secret_for(&c.access_key).is_some());
        let s = set.issue_session(&c.access_key, SystemTime::now() + Duration::from_secs(60)).unwrap();
        let tok = s.session_token.clone().unwrap();
        set.check_session_token(&s.access_key, Some(&tok)).unwrap();
        assert_eq!(set.check_session_token(&s.access_key, Some("x")).unwrap_err().code, ErrorCode::InvalidToken);
        assert_eq!(set.check_session_token(&c.access_key, Some(&tok)).unwrap_err().code, ErrorCode::InvalidToken);
        std::thread::sleep(Duration::from_millis(2100));
        assert!(set.secret_for(&c.access_key).is_none(), "expired key refused");
        // Its session ends with it.
        assert!(set.resolve(&s.access_key).is_none());
        let (c2, _) = a.create(me, None, "").unwrap();
        let s2 = set.issue_session(&c2.access_key, SystemTime::now() + Duration::from_secs(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2100));
        let e = set.check_session_token(&s2.access_key, s2.session_token.as_deref()).unwrap_err();
        assert_eq!(e.code, ErrorCode::ExpiredToken);
    }
}
