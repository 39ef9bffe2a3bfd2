//! A store that delegates to another and runs a hook before each operation, for wrappers that
//! inject faults, delays or hangs (the bench's fault injection, tests that hold a request "in
//! flight" inside a server). A [`Layer`]: every operation is forwarded by construction.

use async_trait::async_trait;

use crate::Result;
use crate::layer::{Call, Layer, OpFuture};
use crate::store::{Capabilities, DynStore, Store};

/// A [`Store`] operation, as a [`Hook`] is told it (the one operation list, [`crate::store::StoreOp`]).
pub use crate::store::StoreOp as Op;

/// Runs before each operation of a [`HookedStore`]; an `Err` is returned to the caller instead
/// of calling the inner store. `bucket` and `key` are empty where the operation has none
/// ([`Call`]).
#[async_trait]
pub trait Hook: Send + Sync + 'static {
    async fn before(&self, op: Op, bucket: &str, key: &str) -> Result<()>;
}

/// `inner` with `hook` run before every operation: a [`Layer`], so every operation is hooked
/// and forwarded. The fast paths (`get_object_inline`) are not: a hook is asynchronous.
pub struct HookedStore<H> {
    inner: DynStore,
    hook: H,
    offloads_io: bool,
}

impl<H: Hook> HookedStore<H> {
    pub fn new(inner: DynStore, hook: H) -> HookedStore<H> {
        HookedStore { inner, hook, offloads_io: false }
    }

    /// Report [`Capabilities::offloads_io`] as `true`, so servers run the wrapped store's quick
    /// requests in batches on blocking-pool threads (hooks then run there too). Off by default:
    /// a hook that holds one request would also hold the requests batched after it.
    pub fn offloading_io(mut self) -> HookedStore<H> {
        self.offloads_io = true;
        self
    }

    pub fn hook(&self) -> &H {
        &self.hook
    }
}

impl<H: Hook> Layer for HookedStore<H> {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, inner: OpFuture<'a, T>) -> OpFuture<'a, T> {
        Box::pin(async move {
            self.hook.before(call.op, call.bucket, call.key).await?;
            inner.await
        })
    }

    /// Batching is this wrapper's choice ([`HookedStore::offloading_io`]), not the wrapped
    /// store's: a hook may hold a request, and in place would hold the worker too.
    fn capabilities_over(&self, inner: Capabilities) -> Capabilities {
        Capabilities { offloads_io: self.offloads_io, offloads_in_place: false, ..inner }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::memory::MemoryStore;
    use crate::types::*;
    use crate::{Body, Error, ErrorCode};

    /// Refuses HEAD of key `no`; counts every call.
    struct Refuse(AtomicUsize);

    #[async_trait]
    impl Hook for Refuse {
        async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            if op == Op::HeadObject && key == "no" {
                return Err(Error::new(ErrorCode::AccessDenied, "refused by hook"));
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn hook_runs_before_each_operation_and_can_refuse() {
        let s = HookedStore::new(Arc::new(MemoryStore::new()), Refuse(AtomicUsize::new(0)));
        s.create_bucket("bkt").await.unwrap();
        for k in ["yes", "no"] {
            s.put_object("bkt", k, PutObjectRequest::default(), Body::from("x")).await.unwrap();
        }
        assert!(s.head_object("bkt", "yes", GetObjectRequest::default()).await.is_ok());
        let e = s.head_object("bkt", "no", GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied);
        assert_eq!(s.hook().0.load(Ordering::Relaxed), 5);
    }

    /// Every operation reaches the wrapped store; what the wrapper keeps to itself is its own
    /// batching choice and the fast paths (a hook cannot run on them).
    #[tokio::test]
    async fn every_operation_is_forwarded() {
        use crate::forwarding::{self, Recorder};
        let rec = Arc::new(Recorder::new());
        let s = HookedStore::new(rec.clone(), Refuse(AtomicUsize::new(0)));
        assert_eq!(
            forwarding::not_forwarded(&s, &rec).await,
            [forwarding::CAPABILITIES, forwarding::GET_OBJECT_INLINE, forwarding::HEAD_OBJECT_INLINE]
        );
        let c = s.capabilities();
        assert!(!c.offloads_io && !c.offloads_in_place && !c.keeps_body_bytes, "{c:?}");
        assert!(s.offloading_io().capabilities().offloads_io);
    }

    /// Bucket configurations and object ACLs go through the hook to the wrapped store (they
    /// used to fall to the trait's defaults: NotImplemented).
    #[tokio::test]
    async fn bucket_configuration_and_object_acls_are_forwarded() {
        struct Seen(std::sync::Mutex<Vec<Op>>);
        #[async_trait]
        impl Hook for Seen {
            async fn before(&self, op: Op, _bucket: &str, _key: &str) -> Result<()> {
                self.0.lock().unwrap().push(op);
                Ok(())
            }
        }
        let s = HookedStore::new(Arc::new(MemoryStore::new()), Seen(Default::default()));
        s.create_bucket("bkt").await.unwrap();
        s.put_object("bkt", "k", PutObjectRequest::default(), Body::from("x")).await.unwrap();
        s.put_bucket_config("bkt", "cors", Some(b"<CORSConfiguration/>".to_vec())).await.unwrap();
        assert_eq!(s.get_bucket_config("bkt", "cors").await.unwrap().as_deref(), Some(&b"<CORSConfiguration/>"[..]));
        assert_eq!(s.get_object_acl("bkt", "k").await.unwrap(), None);
        let seen = s.hook().0.lock().unwrap().clone();
        assert_eq!(seen, [Op::CreateBucket, Op::PutObject, Op::PutBucketConfig, Op::GetBucketConfig, Op::GetObjectAcl]);
    }
}
