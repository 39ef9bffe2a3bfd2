//! The POSIX identity a request acts as.
//!
//! A front end that has authenticated a request runs the store call inside [`scope`] with the
//! account's identity; a backend that enforces POSIX permissions (the posix store in
//! `--identity posix` mode) reads it with [`current`] where the call starts and performs the
//! call's file-system work with that identity's fsuid, fsgid and supplementary groups. Outside
//! any scope (and for backends that ignore it) requests act as the process.

use std::future::Future;

/// A POSIX user: uid, primary gid and supplementary groups (as `getgrouplist` gives them).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups (the primary gid may or may not be among them).
    pub groups: Vec<u32>,
}

tokio::task_local! {
    static CURRENT: Option<Identity>;
}

thread_local! {
    static SYNC_CURRENT: std::cell::RefCell<Option<Identity>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` as `id` (`None`: as the enclosing scope, else as the process).
pub fn scope<F: Future>(id: Option<Identity>, f: F) -> impl Future<Output = F::Output> {
    // `None` keeps the enclosing scope's value, as no scope at all would. One task-local scope
    // either way, not an `async fn` with a branch per case: that stored `f` once per branch
    // and per nesting level, and request futures grew to ~15 KB (copied on every request).
    let id = id.or_else(current);
    CURRENT.scope(id, f)
}

/// Run the blocking `f` as `id` on this thread (for front ends without a runtime, such as the
/// C drop-in; store calls made inside see it through [`current`]).
pub fn sync_scope<T>(id: Option<Identity>, f: impl FnOnce() -> T) -> T {
    let prev = SYNC_CURRENT.with(|c| c.replace(id));
    struct Restore(Option<Identity>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            SYNC_CURRENT.with(|c| *c.borrow_mut() = prev);
        }
    }
    let _restore = Restore(prev);
    f()
}

/// The identity of the request being served here, if any.
pub fn current() -> Option<Identity> {
    CURRENT.try_with(|c| c.clone()).ok().flatten().or_else(|| SYNC_CURRENT.with(|c| c.borrow().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scopes_nest_and_end() {
        assert_eq!(current(), None);
        let a = Identity { uid: 1, gid: 2, groups: vec![3] };
        let b = Identity { uid: 4, gid: 5, groups: vec![] };
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
