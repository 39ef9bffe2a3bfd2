//! What S3 authorization adds to one store call: HEAD of a 4 KiB object in the memory store,
//! called directly and through `Authorized` (as an admin and as the owner of a bucket without a
//! policy, and as another account let in by a bucket policy), on one thread, in ns per call.
//!
//!   cargo run --release -p s3hpc-authz --example guard_cost [CALLS]

use std::sync::Arc;
use std::time::Instant;

use s3hpc_authz::Authorized;
use s3hpc_core::caller::{self, Account, Caller};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;

fn caller_of(id: &str, admin: bool) -> Option<Arc<Caller>> {
    Some(Arc::new(Caller::account(Arc::new(Account { id: id.into(), name: None, admin, uid: None }))))
}

async fn time(store: &dyn Store, bucket: &str, who: Option<Arc<Caller>>, calls: u32) -> f64 {
    caller::scope(who, async {
        let t = Instant::now();
        for _ in 0..calls {
            store.head_object(bucket, "obj", GetObjectRequest::default()).await.unwrap();
        }
        t.elapsed().as_nanos() as f64 / calls as f64
    })
    .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let mut set = CredentialSet::default();
    for (k, id) in [("AK1", "owner"), ("AK2", "reader")] {
        set.insert(Credentials::new(k, "s"));
        set.set_account(k, Account { id: id.into(), name: None, admin: false, uid: None });
    }
    let inner: DynStore = Arc::new(MemoryStore::new());
    let guarded = Authorized::new(inner.clone(), set);
    caller::scope(caller_of("owner", false), async {
        for b in ["bkt", "shared"] {
            guarded.create_bucket(b).await.unwrap();
            guarded.put_object(b, "obj", PutObjectRequest::default(), Body::from(vec![0u8; 4096])).await.unwrap();
        }
        let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"reader"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::shared/*"}]}"#;
        guarded.put_bucket_config("shared", "policy", Some(policy.into())).await.unwrap();
    })
    .await;
    for round in 1..=3 {
        let direct = time(&*inner, "bkt", None, calls).await;
        let admin = time(&guarded, "bkt", caller_of("root", true), calls).await;
        let owner = time(&guarded, "bkt", caller_of("owner", false), calls).await;
        let reader = time(&guarded, "shared", caller_of("reader", false), calls).await;
        println!(
            "round {round}: direct {direct:.0} ns/call; through Authorized: admin {admin:.0}, owner {owner:.0}, \
             policy reader {reader:.0} ns/call (+{:.0} / +{:.0} / +{:.0})",
            admin - direct,
            owner - direct,
            reader - direct
        );
    }
}
