//! The S3 operations: one enum ([`S3Op`]) that every layer which speaks of an S3 API operation
//! shares, named as AWS's API reference names them. The HTTP router routes requests to them
//! (its access log and metrics print [`S3Op::name`]), and the authorization layer
//! (`s3hpc_authz`) gives each the policy action and ACL permission it needs.
//!
//! Not every operation enum is this one, because not every "operation" means an S3 request:
//! [`crate::StoreOp`] is a method of the [`crate::Store`] trait (an S3 request may make several
//! store calls, or none, and the store has calls no request names, as `Owner`); the binary
//! protocol's `s3hpc_wire::Opcode` is a number on the wire with its own compatibility rules
//! (PROTOCOL.md); the HTTP router's own `Op` adds to this enum what only a router has (the
//! unsupported subresources, the CORS preflight, s3hpc's extensions, and the S3 requests that are
//! authorized as the operations they make: DeleteObjects, PostObject, RenameObject).

macro_rules! s3_ops {
    ($($(#[$doc:meta])* $op:ident),* $(,)?) => {
        /// An S3 API operation, by its name in AWS's API reference.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum S3Op { $($(#[$doc])* $op),* }

        impl S3Op {
            /// Every operation, in declaration order.
            pub const ALL: &'static [S3Op] = &[$(S3Op::$op),*];

            /// The operation's name (`PutObject`): what the access log prints and the metrics'
            /// `operation` label carries.
            pub fn name(self) -> &'static str {
                match self { $(S3Op::$op => stringify!($op)),* }
            }
        }
    };
}

s3_ops! {
    ListBuckets,
    CreateBucket,
    DeleteBucket,
    HeadBucket,
    ListObjects,
    ListObjectsV2,
    ListObjectVersions,
    ListMultipartUploads,
    GetBucketLocation,
    GetBucketVersioning,
    PutBucketVersioning,
    GetBucketTagging,
    PutBucketTagging,
    DeleteBucketTagging,
    GetBucketAcl,
    PutBucketAcl,
    GetBucketPolicy,
    PutBucketPolicy,
    DeleteBucketPolicy,
    GetBucketPolicyStatus,
    GetBucketOwnershipControls,
    PutBucketOwnershipControls,
    DeleteBucketOwnershipControls,
    GetPublicAccessBlock,
    PutPublicAccessBlock,
    DeletePublicAccessBlock,
    GetBucketLifecycleConfiguration,
    PutBucketLifecycleConfiguration,
    DeleteBucketLifecycle,
    GetBucketCors,
    PutBucketCors,
    DeleteBucketCors,
    GetBucketWebsite,
    PutBucketWebsite,
    DeleteBucketWebsite,
    GetObject,
    HeadObject,
    GetObjectAttributes,
    /// PutObject, and the destination of CopyObject (authorize the source as GetObject).
    PutObject,
    CopyObject,
    DeleteObject,
    GetObjectAcl,
    PutObjectAcl,
    GetObjectTagging,
    PutObjectTagging,
    DeleteObjectTagging,
    CreateMultipartUpload,
    UploadPart,
    /// The destination of UploadPartCopy (authorize the source as GetObject).
    UploadPartCopy,
    CompleteMultipartUpload,
    AbortMultipartUpload,
    ListParts,
    /// The bucket's Object Lock configuration (`?object-lock`; its policy action is
    /// `s3:GetBucketObjectLockConfiguration`).
    GetObjectLockConfiguration,
    /// The bucket's Object Lock configuration (`?object-lock`; its policy action is
    /// `s3:PutBucketObjectLockConfiguration`).
    PutObjectLockConfiguration,
    GetObjectRetention,
    PutObjectRetention,
    GetObjectLegalHold,
    PutObjectLegalHold,
    /// Not a request of its own: the permission `x-amz-bypass-governance-retention: true` asks
    /// for on a delete or PutObjectRetention, authorized as if it were one (never routed).
    BypassGovernanceRetention,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_complete() {
        let mut names: Vec<_> = S3Op::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), S3Op::ALL.len());
        assert_eq!(S3Op::ALL.len(), 59);
        assert_eq!(S3Op::PutObject.name(), "PutObject");
        assert_eq!(S3Op::GetObjectLockConfiguration.name(), "GetObjectLockConfiguration");
    }
}
