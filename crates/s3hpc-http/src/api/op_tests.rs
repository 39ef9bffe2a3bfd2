//! The router's operations: every name the access log prints and the metrics' `operation`
//! label carries, pinned (dashboards and scripts select on them), and every operation routed.

use super::*;

/// Every operation's printed name, as it was before the router's `Op` and the authorization
/// layer's `S3Op` became one enum. Changing one breaks dashboards: add, never rename.
const NAMES: &[&str] = &[
    "ListBuckets",
    "HeadBucket",
    "GetBucketLocation",
    "CreateBucket",
    "DeleteBucket",
    "GetBucketConfig",
    "PutBucketConfig",
    "DeleteBucketConfig",
    "PostObject",
    "GetBucketTagging",
    "PutBucketTagging",
    "DeleteBucketTagging",
    "GetBucketPolicy",
    "PutBucketPolicy",
    "DeleteBucketPolicy",
    "GetBucketPolicyStatus",
    "GetBucketAcl",
    "PutBucketAcl",
    "PutObjectAcl",
    "GetBucketOwnershipControls",
    "PutBucketOwnershipControls",
    "DeleteBucketOwnershipControls",
    "GetPublicAccessBlock",
    "PutPublicAccessBlock",
    "DeletePublicAccessBlock",
    "GetBucketLifecycleConfiguration",
    "PutBucketLifecycleConfiguration",
    "DeleteBucketLifecycle",
    "GetBucketCors",
    "PutBucketCors",
    "DeleteBucketCors",
    "PreflightCors",
    "GetBucketWebsite",
    "PutBucketWebsite",
    "DeleteBucketWebsite",
    "GetObjectLockConfiguration",
    "PutObjectLockConfiguration",
    "GetObjectRetention",
    "PutObjectRetention",
    "GetObjectLegalHold",
    "PutObjectLegalHold",
    "ListObjects",
    "ListObjectsV2",
    "ListObjectVersions",
    "ListMultipartUploads",
    "ListParts",
    "GetBucketVersioning",
    "PutBucketVersioning",
    "HeadObject",
    "GetObject",
    "GetObjectAttributes",
    "GetObjectAcl",
    "PutObject",
    "CopyObject",
    "RenameObject",
    "Fs",
    "DeleteObject",
    "DeleteObjects",
    "GetObjectTagging",
    "PutObjectTagging",
    "DeleteObjectTagging",
    "CreateMultipartUpload",
    "UploadPart",
    "UploadPartCopy",
    "CompleteMultipartUpload",
    "AbortMultipartUpload",
    "UnsupportedObjectSubresource",
    "UnsupportedObjectPost",
];

/// S3 operations no route names: not requests of their own.
const S3_NOT_ROUTED: &[S3Op] = &[S3Op::BypassGovernanceRetention];

/// Router operations no route names: chosen by `dispatch` before the table is read.
const ROUTER_NOT_ROUTED: &[Op] = &[Op::PreflightCors];

/// Every operation the router can name.
fn all_ops() -> Vec<Op> {
    S3Op::ALL
        .iter()
        .filter(|o| !S3_NOT_ROUTED.contains(o))
        .map(|&o| Op::S3(o))
        .chain(Op::ROUTER_ONLY.iter().copied())
        .collect()
}

#[test]
fn printed_names_are_pinned() {
    let mut got: Vec<&str> = all_ops().iter().map(|o| o.name()).collect();
    let mut want = NAMES.to_vec();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    // The S3 operations print their S3 name; the router's own, the variant's.
    assert_eq!(Op::S3(S3Op::GetObjectLockConfiguration).name(), "GetObjectLockConfiguration");
    assert_eq!(Op::S3(S3Op::PutObject).name(), "PutObject");
    assert_eq!(Op::UnsupportedObjectPost.name(), "UnsupportedObjectPost");
}

#[test]
fn every_operation_is_routed() {
    let routed: Vec<Op> = ROUTES.iter().map(|r| r.3).collect();
    for op in all_ops() {
        assert_eq!(
            routed.contains(&op),
            !ROUTER_NOT_ROUTED.contains(&op),
            "{op:?}: routed, or listed in S3_NOT_ROUTED / ROUTER_NOT_ROUTED, not both"
        );
    }
    for o in S3_NOT_ROUTED {
        assert!(!routed.contains(&Op::S3(*o)), "{o:?} is routed: take it off S3_NOT_ROUTED");
    }
}

#[test]
fn router_only_operations_are_no_s3_operation() {
    // An operation that became an `S3Op` must leave the router's own list (one name, one enum).
    for op in Op::ROUTER_ONLY {
        assert!(!S3Op::ALL.iter().any(|o| o.name() == op.name()), "{op:?} is also an S3Op");
    }
}
