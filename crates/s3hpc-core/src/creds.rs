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
        self.read().identities.get(access_key).cloned()
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
        let users = self.read();
        if !users.users.contains_key(access_key) {
            return None;
        }
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
        Some((account, identity))
    }

    /// Whether some access key belongs to the account with canonical id `id`.
    pub fn account_exists(&self, id: &str) -> bool {
        let users = self.read();
        users.users.keys().any(|k| match users.accounts.get(k) {
            Some(a) => a.id == id,
            None => k == id,
        })
    }

    /// The display name of the account with canonical id `id`, if it has one.
    pub fn account_name(&self, id: &str) -> Option<String> {
        let users = self.read();
        users.accounts.values().find(|a| a.id == id).and_then(|a| a.name.clone())
    }

    /// The account whose POSIX uid is `uid`, if exactly one has it.
    pub fn account_by_uid(&self, uid: u32) -> Option<std::sync::Arc<crate::caller::Account>> {
        self.access_key_for_uid(uid).and_then(|k| self.account_for(&k))
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
        self.read().users.get(access_key).map(|c| c.secret_key.clone())
    }

    /// Make every clone of this set hold what `other` holds now.
    pub fn replace(&self, other: &CredentialSet) {
        let new = other.read().clone();
        *self.write() = new;
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
