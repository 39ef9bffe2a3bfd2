//! Who makes a request, as S3 authorization sees it.
//!
//! A front end that authenticated a request (SigV4, the binary protocol's handshake or its
//! socket peer's credentials) runs the store call inside [`scope`] with a [`Caller`]; a store
//! that authorizes requests (`s3hpc_authz::Authorized`) reads it with [`current`]. This is the S3
//! side of a request's identity; [`crate::identity`] is the POSIX side (what the kernel checks).
//! Outside any scope there is no caller: an authorizing store refuses the call.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

/// An s3hpc account: the canonical user id S3 shows as Owner (and the account id bucket
/// policies name), its user name, and whether it administers the gateway.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Account {
    pub id: String,
    pub name: Option<String>,
    pub admin: bool,
    /// The POSIX uid the account acts as, if one is configured (pre-existing bucket
    /// directories are owned by the account with the directory's uid).
    pub uid: Option<u32>,
}

/// The request headers S3 authorization reads besides who asks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallerHeaders {
    /// `x-amz-expected-bucket-owner`.
    pub expected_bucket_owner: Option<String>,
    /// `x-amz-source-expected-bucket-owner` (CopyObject, UploadPartCopy).
    pub source_expected_bucket_owner: Option<String>,
    /// `x-amz-acl` and `x-amz-grant-*`, as sent (lower-case names).
    pub acl: Vec<(String, String)>,
    /// `x-amz-object-ownership` (CreateBucket).
    pub object_ownership: Option<String>,
    /// `x-amz-bypass-governance-retention: true` (see [`crate::lock::bypass_requested`]).
    pub bypass_governance_retention: bool,
    /// Further headers that are bucket-policy condition keys `s3:<name>`
    /// (`x-amz-copy-source`, `x-amz-metadata-directive`, `x-amz-storage-class`, ...), as
    /// `(name, value)` with lower-case names; `x-amz-copy-source` as `bucket/key`, decoded.
    pub condition_keys: Vec<(String, String)>,
}

/// The caller of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// `None`: an anonymous (unsigned) request.
    pub account: Option<Arc<Account>>,
    /// The client's address (`aws:SourceIp`), where the transport has one.
    pub source_ip: Option<IpAddr>,
    /// Whether the request came over TLS or a local socket (`aws:SecureTransport`).
    pub secure: bool,
    pub headers: CallerHeaders,
}

impl Caller {
    /// A caller signed in as `account`, with no further request details.
    pub fn account(account: Arc<Account>) -> Caller {
        Caller { account: Some(account), ..Default::default() }
    }

    /// An anonymous caller.
    pub fn anonymous() -> Caller {
        Caller::default()
    }
}

tokio::task_local! {
    static CURRENT: Option<Arc<Caller>>;
}

thread_local! {
    static SYNC_CURRENT: std::cell::RefCell<Option<Arc<Caller>>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` on behalf of `c` (`None`: the enclosing scope's caller, if any).
pub fn scope<F: Future>(c: Option<Arc<Caller>>, f: F) -> impl Future<Output = F::Output> {
    // `None` keeps the enclosing scope's value, as no scope at all would. One task-local scope
    // either way, not an `async fn` with a branch per case: that stored `f` once per branch
    // and per nesting level, and request futures grew to ~15 KB (copied on every request).
    let c = c.or_else(current);
    CURRENT.scope(c, f)
}

/// Run the blocking `f` on behalf of `c` on this thread (front ends without a runtime).
pub fn sync_scope<T>(c: Option<Arc<Caller>>, f: impl FnOnce() -> T) -> T {
    let prev = SYNC_CURRENT.with(|s| s.replace(c));
    struct Restore(Option<Arc<Caller>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            SYNC_CURRENT.with(|s| *s.borrow_mut() = prev);
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The caller of the request being served here, if any.
pub fn current() -> Option<Arc<Caller>> {
    CURRENT.try_with(|c| c.clone()).ok().flatten().or_else(|| SYNC_CURRENT.with(|s| s.borrow().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scopes_nest_and_end() {
        assert_eq!(current(), None);
        let a = Arc::new(Caller::account(Arc::new(Account { id: "a".into(), ..Default::default() })));
        let b = Arc::new(Caller::anonymous());
        scope(Some(a.clone()), async {
            assert_eq!(current(), Some(a.clone()));
            scope(Some(b.clone()), async { assert_eq!(current(), Some(b.clone())) }).await;
            assert_eq!(current(), Some(a.clone()));
        })
        .await;
        assert_eq!(current(), None);
        sync_scope(Some(b.clone()), || assert_eq!(current(), Some(b.clone())));
        assert_eq!(current(), None);
    }
}
