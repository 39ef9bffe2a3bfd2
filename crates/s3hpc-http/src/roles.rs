//! Roles for STS `AssumeRole` (docs/CREDENTIALS.md, "Roles"): `[[roles]]` tables of the users
//! file, each naming the account its sessions act as and the accounts that may take it.

use std::sync::{Arc, RwLock};
use std::time::Duration;

/// One role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    /// `arn:aws:iam::...:role/NAME` names it.
    pub name: String,
    /// The access key of the users-file account its sessions act as (that account's canonical
    /// id, POSIX identity, bucket ownership and policies).
    pub account: String,
    /// Who may assume it: canonical account ids (a self-service key's account is its login) or
    /// access keys; `*` for every authenticated account.
    pub trusted: Vec<String>,
    /// Longest `DurationSeconds` (AWS's MaxSessionDuration; 3600 unless set).
    pub max_session: Duration,
}

impl Role {
    /// Whether the account `account_id`, signing with `access_key`, may assume the role.
    pub fn trusts(&self, account_id: &str, access_key: &str) -> bool {
        self.trusted.iter().any(|t| t == "*" || t == account_id || t == access_key)
    }
}

/// The roles in force, shared by the HTTP front ends and replaced whole at a reload.
#[derive(Debug, Clone, Default)]
pub struct Roles(Arc<RwLock<Vec<Role>>>);

impl Roles {
    /// Replace the roles (a reload of the users file).
    pub fn replace(&self, roles: Vec<Role>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = roles;
    }

    /// The role named `name`.
    pub fn get(&self, name: &str) -> Option<Role> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).iter().find(|r| r.name == name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_by_id_key_or_anyone() {
        let r = Role {
            name: "ingest".into(),
            account: "K".into(),
            trusted: vec!["alice".into(), "BOBKEY".into()],
            max_session: Duration::from_secs(3600),
        };
        assert!(r.trusts("alice", "ANYKEY"));
        assert!(r.trusts("bob", "BOBKEY"));
        assert!(!r.trusts("bob", "OTHERKEY"));
        assert!(Role { trusted: vec!["*".into()], ..r.clone() }.trusts("carol", "C"));
        let roles = Roles::default();
        roles.replace(vec![r.clone()]);
        assert_eq!(roles.get("ingest"), Some(r));
        assert_eq!(roles.get("other"), None);
    }
}
