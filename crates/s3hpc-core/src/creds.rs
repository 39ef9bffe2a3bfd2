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
/// (where one is configured).
#[derive(Debug, Clone, Default)]
pub struct CredentialSet {
    users: HashMap<String, Credentials>,
    identities: HashMap<String, crate::identity::Identity>,
}

impl CredentialSet {
    pub fn new(creds: impl IntoIterator<Item = Credentials>) -> Self {
        CredentialSet {
            users: creds.into_iter().map(|c| (c.access_key.clone(), c)).collect(),
            identities: HashMap::new(),
        }
    }

    /// Requests signed with `access_key` act as `id` on the file system (`--identity posix`).
    pub fn set_identity(&mut self, access_key: &str, id: crate::identity::Identity) {
        self.identities.insert(access_key.to_string(), id);
    }

    /// The POSIX identity of an access key, if one is configured.
    pub fn identity_for(&self, access_key: &str) -> Option<&crate::identity::Identity> {
        self.identities.get(access_key)
    }

    pub fn insert(&mut self, c: Credentials) {
        self.users.insert(c.access_key.clone(), c);
    }

    /// The secret for an access key, if the key is known.
    pub fn secret_for(&self, access_key: &str) -> Option<&str> {
        self.users.get(access_key).map(|c| c.secret_key.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }
}
