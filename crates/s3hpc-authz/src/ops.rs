//! S3 operations: the policy action each one needs and the ACL permission that can grant it.

use crate::acl::Permission;

/// The S3 operations s3hpc authorizes.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum S3Op {
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
    GetBucketObjectLockConfiguration,
    PutBucketObjectLockConfiguration,
    GetObjectRetention,
    PutObjectRetention,
    GetObjectLegalHold,
    PutObjectLegalHold,
    /// `x-amz-bypass-governance-retention: true` on a delete or PutObjectRetention.
    BypassGovernanceRetention,
}

/// What an operation acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// No bucket: ListBuckets, CreateBucket (authorized by [`crate::authorize_service`]).
    Service,
    /// The bucket.
    Bucket,
    /// An object.
    Object,
}

/// The ACL permission that can grant an operation (besides ownership and policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclNeed {
    /// A permission on the bucket's ACL.
    Bucket(Permission),
    /// A permission on the object's ACL.
    Object(Permission),
    /// No ACL grants it: the owner, an admin or the policy only.
    None,
}

impl S3Op {
    /// The policy action (`version`: the request names a version id).
    pub fn action(self, version: bool) -> &'static str {
        use S3Op::*;
        match self {
            ListBuckets => "s3:ListAllMyBuckets",
            CreateBucket => "s3:CreateBucket",
            DeleteBucket => "s3:DeleteBucket",
            HeadBucket | ListObjects | ListObjectsV2 => "s3:ListBucket",
            ListObjectVersions => "s3:ListBucketVersions",
            ListMultipartUploads => "s3:ListBucketMultipartUploads",
            GetBucketLocation => "s3:GetBucketLocation",
            GetBucketVersioning => "s3:GetBucketVersioning",
            PutBucketVersioning => "s3:PutBucketVersioning",
            GetBucketTagging => "s3:GetBucketTagging",
            PutBucketTagging | DeleteBucketTagging => "s3:PutBucketTagging",
            GetBucketAcl => "s3:GetBucketAcl",
            PutBucketAcl => "s3:PutBucketAcl",
            GetBucketPolicy => "s3:GetBucketPolicy",
            PutBucketPolicy => "s3:PutBucketPolicy",
            DeleteBucketPolicy => "s3:DeleteBucketPolicy",
            GetBucketPolicyStatus => "s3:GetBucketPolicyStatus",
            GetBucketOwnershipControls => "s3:GetBucketOwnershipControls",
            PutBucketOwnershipControls | DeleteBucketOwnershipControls => "s3:PutBucketOwnershipControls",
            GetPublicAccessBlock => "s3:GetBucketPublicAccessBlock",
            PutPublicAccessBlock | DeletePublicAccessBlock => "s3:PutBucketPublicAccessBlock",
            GetBucketLifecycleConfiguration => "s3:GetLifecycleConfiguration",
            PutBucketLifecycleConfiguration | DeleteBucketLifecycle => "s3:PutLifecycleConfiguration",
            GetBucketCors => "s3:GetBucketCORS",
            PutBucketCors | DeleteBucketCors => "s3:PutBucketCORS",
            GetBucketWebsite => "s3:GetBucketWebsite",
            PutBucketWebsite => "s3:PutBucketWebsite",
            DeleteBucketWebsite => "s3:DeleteBucketWebsite",
            GetObject | HeadObject if version => "s3:GetObjectVersion",
            GetObject | HeadObject => "s3:GetObject",
            GetObjectAttributes if version => "s3:GetObjectVersionAttributes",
            GetObjectAttributes => "s3:GetObjectAttributes",
            PutObject | CopyObject | CreateMultipartUpload | UploadPart | UploadPartCopy | CompleteMultipartUpload => {
                "s3:PutObject"
            }
            DeleteObject if version => "s3:DeleteObjectVersion",
            DeleteObject => "s3:DeleteObject",
            GetObjectAcl if version => "s3:GetObjectVersionAcl",
            GetObjectAcl => "s3:GetObjectAcl",
            PutObjectAcl if version => "s3:PutObjectVersionAcl",
            PutObjectAcl => "s3:PutObjectAcl",
            GetObjectTagging if version => "s3:GetObjectVersionTagging",
            GetObjectTagging => "s3:GetObjectTagging",
            PutObjectTagging if version => "s3:PutObjectVersionTagging",
            PutObjectTagging => "s3:PutObjectTagging",
            DeleteObjectTagging if version => "s3:DeleteObjectVersionTagging",
            DeleteObjectTagging => "s3:DeleteObjectTagging",
            AbortMultipartUpload => "s3:AbortMultipartUpload",
            ListParts => "s3:ListMultipartUploadParts",
            GetBucketObjectLockConfiguration => "s3:GetBucketObjectLockConfiguration",
            PutBucketObjectLockConfiguration => "s3:PutBucketObjectLockConfiguration",
            GetObjectRetention => "s3:GetObjectRetention",
            PutObjectRetention => "s3:PutObjectRetention",
            GetObjectLegalHold => "s3:GetObjectLegalHold",
            PutObjectLegalHold => "s3:PutObjectLegalHold",
            BypassGovernanceRetention => "s3:BypassGovernanceRetention",
        }
    }

    /// What the operation acts on.
    pub fn target(self) -> Target {
        use S3Op::*;
        match self {
            ListBuckets | CreateBucket => Target::Service,
            GetObject
            | HeadObject
            | GetObjectAttributes
            | PutObject
            | CopyObject
            | DeleteObject
            | GetObjectAcl
            | PutObjectAcl
            | GetObjectTagging
            | PutObjectTagging
            | DeleteObjectTagging
            | CreateMultipartUpload
            | UploadPart
            | UploadPartCopy
            | CompleteMultipartUpload
            | AbortMultipartUpload
            | ListParts
            | GetObjectRetention
            | PutObjectRetention
            | GetObjectLegalHold
            | PutObjectLegalHold
            | BypassGovernanceRetention => Target::Object,
            _ => Target::Bucket,
        }
    }

    /// The ACL permission that grants the operation.
    pub fn acl_need(self) -> AclNeed {
        use Permission::*;
        use S3Op::*;
        match self {
            HeadBucket | ListObjects | ListObjectsV2 | ListObjectVersions | ListMultipartUploads => {
                AclNeed::Bucket(Read)
            }
            PutObject
            | CopyObject
            | DeleteObject
            | CreateMultipartUpload
            | UploadPart
            | UploadPartCopy
            | CompleteMultipartUpload
            | AbortMultipartUpload
            | ListParts => AclNeed::Bucket(Write),
            GetBucketAcl => AclNeed::Bucket(ReadAcp),
            PutBucketAcl => AclNeed::Bucket(WriteAcp),
            GetObject | HeadObject | GetObjectAttributes => AclNeed::Object(Read),
            GetObjectAcl => AclNeed::Object(ReadAcp),
            PutObjectAcl => AclNeed::Object(WriteAcp),
            // No single ACL permission maps to s3:GetObjectTagging; S3 lets a FULL_CONTROL
            // grantee of the object read its tags (READ alone is not enough).
            GetObjectTagging => AclNeed::Object(FullControl),
            _ => AclNeed::None,
        }
    }

    /// Get/Put/DeleteBucketPolicy: only the bucket owner's account may run them, and its root
    /// may run them even when the policy denies it (AWS's lock-out protection).
    pub fn is_policy_op(self) -> bool {
        matches!(self, S3Op::GetBucketPolicy | S3Op::PutBucketPolicy | S3Op::DeleteBucketPolicy)
    }
}
