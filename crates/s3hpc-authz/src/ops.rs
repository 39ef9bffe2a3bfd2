//! S3 operations: the policy action each one needs and the ACL permission that can grant it
//! ([`S3OpAuthz`], over the shared [`S3Op`]).

use crate::acl::Permission;
use crate::eval::{Principal, RequestContext};

/// The S3 operations, shared with the HTTP router (`s3hpc_core::op`); what each means to
/// authorization is [`S3OpAuthz`].
pub use s3hpc_core::S3Op;

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

/// What an [`S3Op`] needs to be authorized: bring it into scope (`use s3hpc_authz::S3OpAuthz`)
/// to call these on an operation.
pub trait S3OpAuthz: Copy {
    /// The policy action (`version`: the request names a version id).
    fn action(self, version: bool) -> &'static str;

    /// What the operation acts on.
    fn target(self) -> Target;

    /// The ACL permission that grants the operation.
    fn acl_need(self) -> AclNeed;

    /// Get/Put/DeleteBucketPolicy: only the bucket owner's account may run them, and its root
    /// may run them even when the policy denies it (AWS's lock-out protection).
    fn is_policy_op(self) -> bool;

    /// The request context for this operation (`version`: a version id is named).
    fn context(self, principal: Principal, bucket: &str, key: Option<&str>, version: bool) -> RequestContext {
        let key = if self.target() == Target::Object { key.map(str::to_owned) } else { None };
        RequestContext::new(principal, self.action(version), bucket, key)
    }
}

impl S3OpAuthz for S3Op {
    fn action(self, version: bool) -> &'static str {
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
            GetObjectLockConfiguration => "s3:GetBucketObjectLockConfiguration",
            PutObjectLockConfiguration => "s3:PutBucketObjectLockConfiguration",
            GetObjectRetention => "s3:GetObjectRetention",
            PutObjectRetention => "s3:PutObjectRetention",
            GetObjectLegalHold => "s3:GetObjectLegalHold",
            PutObjectLegalHold => "s3:PutObjectLegalHold",
            BypassGovernanceRetention => "s3:BypassGovernanceRetention",
        }
    }

    fn target(self) -> Target {
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

    fn acl_need(self) -> AclNeed {
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

    fn is_policy_op(self) -> bool {
        matches!(self, S3Op::GetBucketPolicy | S3Op::PutBucketPolicy | S3Op::DeleteBucketPolicy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::{ResourceKind, resource_kind};

    /// Every operation of the shared enum has a policy action this crate knows (with and
    /// without a version id), applying to what the operation acts on: an operation added to
    /// `s3hpc_core::op` without its authorization here fails this test (`target` and `acl_need`
    /// have catch-all arms, so the compiler alone would not say so).
    #[test]
    fn every_operation_has_a_known_action_on_its_target() {
        for &op in S3Op::ALL {
            for version in [false, true] {
                let action = op.action(version);
                let kind = resource_kind(action).unwrap_or_else(|| panic!("{op:?}: unknown action {action}"));
                let ok = match op.target() {
                    // CreateBucket names the bucket it makes; ListBuckets the account.
                    Target::Service => kind != ResourceKind::Object,
                    Target::Bucket => kind == ResourceKind::Bucket,
                    Target::Object => kind == ResourceKind::Object,
                };
                assert!(ok, "{op:?}: {action} applies to {kind:?}, the operation to {:?}", op.target());
            }
            // An ACL grant on the object only makes sense for an operation on an object.
            if matches!(op.acl_need(), AclNeed::Object(_)) {
                assert_eq!(op.target(), Target::Object, "{op:?}");
            }
        }
    }
}
