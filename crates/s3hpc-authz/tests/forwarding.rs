//! `Authorized` forwards every `Store` method to the store it wraps, after authorizing it,
//! except what it deliberately keeps to itself (each said where it is written): the fast paths
//! (they would skip authorization) and the owners, which are its own records.

use std::sync::Arc;

use s3hpc_authz::Authorized;
use s3hpc_authz::ownership::ObjectOwnership;
use s3hpc_core::caller::{self, Account, Caller};
use s3hpc_core::forwarding::{self, Recorder};
use s3hpc_core::*;

/// What does not reach the wrapped store, called by an administrator (sending `x-amz-acl`
/// when given: PutObjectAcl needs an ACL).
async fn missed(ownership: ObjectOwnership, canned_acl: Option<&str>) -> Vec<&'static str> {
    let rec = Arc::new(Recorder::new());
    let store = Authorized::new(rec.clone(), CredentialSet::default()).with_default_ownership(ownership);
    let mut admin = Caller::account(Arc::new(Account { id: "root".into(), admin: true, ..Default::default() }));
    if let Some(acl) = canned_acl {
        admin.headers.acl = vec![("x-amz-acl".into(), acl.into())];
    }
    caller::scope(Some(Arc::new(admin)), forwarding::not_forwarded(&store, &rec)).await
}

#[tokio::test]
async fn every_operation_is_forwarded_but_the_fast_paths_and_owners() {
    let kept = [StoreOp::Owner.name(), forwarding::GET_OBJECT_INLINE, forwarding::HEAD_OBJECT_INLINE];
    assert_eq!(missed(ObjectOwnership::ObjectWriter, Some("public-read")).await, kept);
}

/// With ACLs disabled (S3's default) the object ACL is the bucket owner's FULL_CONTROL: none is
/// read from or written to the wrapped store.
#[tokio::test]
async fn without_acls_object_acls_stay_here() {
    let kept = [
        StoreOp::Owner.name(),
        StoreOp::GetObjectAcl.name(),
        StoreOp::PutObjectAcl.name(),
        forwarding::GET_OBJECT_INLINE,
        forwarding::HEAD_OBJECT_INLINE,
    ];
    assert_eq!(missed(ObjectOwnership::BucketOwnerEnforced, None).await, kept);
}
