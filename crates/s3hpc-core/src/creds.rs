//! Access keys and secrets, shared by every authenticating front end (HTTP SigV4, binary
//! protocol handshake) and by clients.

use std::collections::HashMap;

/// One access key and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
    /// Temporary-credential session token (AWS STS). Clients send it as
    /// `x-amz-security-token` (signed); s3hpc's own servers never issue one.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field("session_token", &self.session_token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Credentials {
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Credentials { access_key: access_key.into(), secret_key: secret_key.into(), session_token: None }
    }

    /// The same key pair with a session token (temporary credentials); empty means none.
    pub fn with_session_token(mut self, token: Option<String>) -> Self {
        self.session_token = token.filter(|t| !t.is_empty());
        self
    }

    /// A fresh random key pair: 20-character upper-case access key, 40-character secret.
    pub fn generate() -> Self {
        use rand::Rng;
        const AK: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        const SK: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut rng = rand::rng();
        let mut pick =
            |set: &[u8], n: usize| -> String { (0..n).map(|_| set[rng.random_range(0..set.len())] as char).collect() };
        let access_key = format!("S3HPC{}", pick(AK, 15));
        let secret_key = pick(SK, 40);
        Credentials { access_key, secret_key, session_token: None }
    }
}

/// The users a server accepts: access key -> secret, and the POSIX identity each acts as
/// (where one is configured). Clones share one set, which [`CredentialSet::replace`] swaps
/// whole (a reload of the users file): requests already verified keep going, later ones see the
/// new set.
#[derive(Debug, Clone, Default)]
pub struct CredentialSet {
    inner: std::sync::Arc<std::sync::RwLock<Users>>,
}

#[derive(Debug, Clone, Default)]
struct Users {
    users: HashMap<String, Credentials>,
    identities: HashMap<String, crate::identity::Identity>,
    accounts: HashMap<String, std::sync::Arc<crate::caller::Account>>,
    /// Keys beyond the users file (self-service keys, STS sessions), asked on a miss. Kept
    /// across [`CredentialSet::replace`].
    source: Option<std::sync::Arc<dyn KeySource>>,
}

/// A key a [`KeySource`] knows.
#[derive(Clone)]
pub struct StoredKey {
    pub secret: String,
    /// `None`: never expires.
    pub expires: Option<std::time::SystemTime>,
    pub kind: KeyKind,
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey").field("expires", &self.expires).field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// What a stored key is.
#[derive(Clone)]
pub enum KeyKind {
    /// A long-term key of an account (a POSIX user's self-service key).
    Account { account: std::sync::Arc<crate::caller::Account>, identity: Option<crate::identity::Identity> },
    /// Temporary credentials (STS) of the key `parent`: valid only with `token` sent as
    /// `x-amz-security-token`, and only while `parent` is.
    Session { parent: String, token: String },
}

impl std::fmt::Debug for KeyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyKind::Account { account, .. } => f.debug_struct("Account").field("id", &account.id).finish(),
            KeyKind::Session { parent, .. } => f.debug_struct("Session").field("parent", parent).finish(),
        }
    }
}

/// A store of keys besides the users file: [`CredentialSet`] asks it for keys the file does not
/// list. Lookups run on every request signed by such a key, so they must be served from memory.
pub trait KeySource: Send + Sync + std::fmt::Debug {
    /// The key, if the source has it (expired keys included: the set decides).
    fn lookup(&self, access_key: &str) -> Option<StoredKey>;
    /// The account the source binds to POSIX uid `uid`, if any.
    fn account_by_uid(&self, _uid: u32) -> Option<std::sync::Arc<crate::caller::Account>> {
        None
    }
    /// Whether some live key of the source acts as the account with canonical id `id`.
    fn account_exists(&self, _id: &str) -> bool {
        false
    }
    /// Store temporary credentials of `parent` valid until `expires`; returns them with their
    /// session token.
    fn issue_session(&self, parent: &str, expires: std::time::SystemTime) -> crate::Result<Credentials>;
}

/// A key as a front end needs it.
#[derive(Clone)]
pub struct ResolvedKey {
    pub secret: String,
    pub account: std::sync::Arc<crate::caller::Account>,
    pub identity: Option<crate::identity::Identity>,
    /// Temporary credentials: the token requests must carry, and when they end.
    pub session: Option<(String, Option<std::time::SystemTime>)>,
}

impl CredentialSet {
    pub fn new(creds: impl IntoIterator<Item = Credentials>) -> Self {
        let users =
            Users { users: creds.into_iter().map(|c| (c.access_key.clone(), c)).collect(), ..Default::default() };
        CredentialSet { inner: std::sync::Arc::new(std::sync::RwLock::new(users)) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Users> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Users> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&mut self, c: Credentials) {
        self.write().users.insert(c.access_key.clone(), c);
    }

    /// Requests signed with `access_key` act as `id` on the file system (`--identity posix`).
    pub fn set_identity(&mut self, access_key: &str, id: crate::identity::Identity) {
        self.write().identities.insert(access_key.to_string(), id);
    }

    /// The POSIX identity of an access key, if one is configured.
    pub fn identity_for(&self, access_key: &str) -> Option<crate::identity::Identity> {
        let users = self.read();
        if users.users.contains_key(access_key) {
            return users.identities.get(access_key).cloned();
        }
        drop(users);
        self.resolve(access_key).and_then(|k| k.identity)
    }

    /// Ask `source` for keys the users file does not list (kept by every clone, and across
    /// [`CredentialSet::replace`]).
    pub fn set_source(&self, source: std::sync::Arc<dyn KeySource>) {
        self.write().source = Some(source);
    }

    /// The key source, if one is set.
    pub fn source(&self) -> Option<std::sync::Arc<dyn KeySource>> {
        self.read().source.clone()
    }

    /// Everything about an access key: from the users file, else from the key source. A
    /// source's account key past its expiry is unknown; a session whose parent is unknown is
    /// unknown; an expired session is returned (the token check says `ExpiredToken`).
    pub fn resolve(&self, access_key: &str) -> Option<ResolvedKey> {
        let users = self.read();
        if let Some(c) = users.users.get(access_key) {
            let identity = users.identities.get(access_key).cloned();
            let account = match users.accounts.get(access_key) {
                Some(a) => a.clone(),
                None => std::sync::Arc::new(crate::caller::Account {
                    id: access_key.to_string(),
                    name: None,
                    admin: true,
                    uid: identity.as_ref().map(|i| i.uid),
                }),
            };
            return Some(ResolvedKey { secret: c.secret_key.clone(), account, identity, session: None });
        }
        let source = users.source.clone()?;
        drop(users);
        let k = source.lookup(access_key)?;
        match k.kind {
            KeyKind::Account { account, identity } => {
                if k.expires.is_some_and(|e| e <= std::time::SystemTime::now()) {
                    return None;
                }
                Some(ResolvedKey { secret: k.secret, account, identity, session: None })
            }
            KeyKind::Session { parent, token } => {
                let p = self.resolve(&parent).filter(|p| p.session.is_none())?;
                Some(ResolvedKey {
                    secret: k.secret,
                    account: p.account,
                    identity: p.identity,
                    session: Some((token, k.expires)),
                })
            }
        }
    }

    /// Whether `access_key` names temporary credentials (a session).
    pub fn is_session(&self, access_key: &str) -> bool {
        self.resolve(access_key).is_some_and(|k| k.session.is_some())
    }

    /// Check the session token a request signed by `access_key` carried (`x-amz-security-token`,
    /// or `X-Amz-Security-Token` in a presigned URL), as S3 does: a long-term key with a token,
    /// or a session with another token, is `InvalidToken`; an expired session is
    /// `ExpiredToken`; a session without a token is `InvalidAccessKeyId`.
    pub fn check_session_token(&self, access_key: &str, presented: Option<&str>) -> crate::Result<()> {
        use crate::{Error, ErrorCode};
        let Some(k) = self.resolve(access_key) else { return Err(Error::code(ErrorCode::InvalidAccessKeyId)) };
        match (k.session, presented) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(Error::code(ErrorCode::InvalidToken)),
            (Some(_), None) => Err(Error::code(ErrorCode::InvalidAccessKeyId)),
            (Some((token, expires)), Some(p)) => {
                if !ct_eq(token.as_bytes(), p.as_bytes()) {
                    return Err(Error::code(ErrorCode::InvalidToken));
                }
                if expires.is_some_and(|e| e <= std::time::SystemTime::now()) {
                    return Err(Error::code(ErrorCode::ExpiredToken));
                }
                Ok(())
            }
        }
    }

    /// Temporary credentials of `parent` (a long-term key), valid until `expires`.
    pub fn issue_session(&self, parent: &str, expires: std::time::SystemTime) -> crate::Result<Credentials> {
        use crate::{Error, ErrorCode};
        match self.resolve(parent) {
            None => return Err(Error::code(ErrorCode::InvalidAccessKeyId)),
            Some(k) if k.session.is_some() => {
                return Err(Error::new(
                    ErrorCode::AccessDenied,
                    "Cannot call GetSessionToken with session credentials",
                ));
            }
            Some(_) => {}
        }
        let Some(source) = self.source() else {
            return Err(Error::not_implemented("temporary credentials need a key store (the posix backend)"));
        };
        source.issue_session(parent, expires)
    }

    /// Requests signed with `access_key` are made by `account` (S3 authorization).
    pub fn set_account(&mut self, access_key: &str, account: crate::caller::Account) {
        self.write().accounts.insert(access_key.to_string(), std::sync::Arc::new(account));
    }

    /// The account of an access key: the one set with [`CredentialSet::set_account`], else an
    /// administrator whose id is the access key (a key given without an account, as
    /// `--access-key` is, keeps the full access it always had).
    pub fn account_for(&self, access_key: &str) -> Option<std::sync::Arc<crate::caller::Account>> {
        self.account_and_identity(access_key).map(|(a, _)| a)
    }

    /// [`CredentialSet::account_for`] and [`CredentialSet::identity_for`] in one lookup (what a
    /// front end needs per request).
    pub fn account_and_identity(
        &self,
        access_key: &str,
    ) -> Option<(std::sync::Arc<crate::caller::Account>, Option<crate::identity::Identity>)> {
        self.resolve(access_key).map(|k| (k.account, k.identity))
    }

    /// Whether some access key belongs to the account with canonical id `id`.
    pub fn account_exists(&self, id: &str) -> bool {
        let users = self.read();
        if users.users.keys().any(|k| match users.accounts.get(k) {
            Some(a) => a.id == id,
            None => k == id,
        }) {
            return true;
        }
        // Not under the lock: the source may ask this set.
        let source = users.source.clone();
        drop(users);
        source.is_some_and(|s| s.account_exists(id))
    }

    /// The display name of the account with canonical id `id`, if it has one.
    pub fn account_name(&self, id: &str) -> Option<String> {
        let users = self.read();
        users.accounts.values().find(|a| a.id == id).and_then(|a| a.name.clone())
    }

    /// The account whose POSIX uid is `uid`, if exactly one has it.
    pub fn account_by_uid(&self, uid: u32) -> Option<std::sync::Arc<crate::caller::Account>> {
        self.access_key_for_uid(uid)
            .and_then(|k| self.account_for(&k))
            .or_else(|| self.source().and_then(|s| s.account_by_uid(uid)))
    }

    /// An access key of the account whose POSIX uid is `uid` (the first, sorted), if exactly one
    /// account has that uid: how the binary protocol maps a Unix-socket peer (SO_PEERCRED) to an
    /// account without a key.
    pub fn access_key_for_uid(&self, uid: u32) -> Option<String> {
        let mut found: Option<(String, std::sync::Arc<crate::caller::Account>)> = None;
        for k in self.access_keys() {
            let Some(a) = self.account_for(&k) else { continue };
            if a.uid == Some(uid) {
                match &found {
                    Some((_, f)) if f.id != a.id => return None,
                    Some(_) => {}
                    None => found = Some((k, a)),
                }
            }
        }
        found.map(|(k, _)| k)
    }

    /// The secret for an access key, if the key is known.
    pub fn secret_for(&self, access_key: &str) -> Option<String> {
        if let Some(c) = self.read().users.get(access_key) {
            return Some(c.secret_key.clone());
        }
        self.resolve(access_key).map(|k| k.secret)
    }

    /// Make every clone of this set hold what `other` holds now (the key source stays).
    pub fn replace(&self, other: &CredentialSet) {
        let mut new = other.read().clone();
        let mut w = self.write();
        new.source = w.source.take();
        *w = new;
    }

    /// Whether the users file (not the key source) lists `access_key`.
    pub fn is_listed(&self, access_key: &str) -> bool {
        self.read().users.contains_key(access_key)
    }

    /// The access keys, sorted.
    pub fn access_keys(&self) -> Vec<String> {
        let mut v: Vec<String> = self.read().users.keys().cloned().collect();
        v.sort();
        v
    }

    pub fn is_empty(&self) -> bool {
        self.read().users.is_empty()
    }

    pub fn len(&self) -> usize {
        self.read().users.len()
    }
}

/// Constant-time equality of two byte strings (their lengths are not secret).
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One self-service access key, as `s3hpc credentials list` shows it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessKeyInfo {
    pub access_key: String,
    /// The POSIX user the key acts as.
    pub uid: u32,
    pub user: String,
    pub description: String,
    pub created: std::time::SystemTime,
    /// `None`: never expires.
    pub expires: Option<std::time::SystemTime>,
}

/// Self-service keys for local users, asked by the binary protocol on behalf of a Unix-socket
/// peer whose uid the kernel gave (SO_PEERCRED). The implementation decides who may do what:
/// a user manages their own keys; root and configured administrators all keys.
pub trait KeyAdmin: Send + Sync + std::fmt::Debug {
    /// A new key for `uid` (printed once: the secret is not shown again).
    fn create(
        &self,
        uid: u32,
        lifetime: Option<std::time::Duration>,
        description: &str,
    ) -> crate::Result<(Credentials, AccessKeyInfo)>;
    /// The keys `uid` may see: its own, or every key for an administrator.
    fn list(&self, uid: u32) -> crate::Result<Vec<AccessKeyInfo>>;
    /// Remove a key: `uid`'s own, or any for an administrator (others' are `AccessDenied`).
    fn revoke(&self, uid: u32, access_key: &str) -> crate::Result<()>;
}
