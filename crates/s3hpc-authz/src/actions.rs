//! The S3 policy actions and condition keys this crate knows, with the resource each action
//! applies to (AWS's Service Authorization Reference for Amazon S3, the bucket-policy subset).

/// What an action's `Resource` must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// `arn:aws:s3:::bucket`
    Bucket,
    /// `arn:aws:s3:::bucket/key`
    Object,
    /// No bucket or object (account level, e.g. `s3:ListAllMyBuckets`): never in a bucket policy.
    Account,
}

/// Every action this crate accepts in a bucket policy, and what it applies to.
pub const ACTIONS: &[(&str, ResourceKind)] = {
    use ResourceKind::*;
    &[
        ("s3:AbortMultipartUpload", Object),
        ("s3:BypassGovernanceRetention", Object),
        ("s3:CreateBucket", Bucket),
        ("s3:DeleteBucket", Bucket),
        ("s3:DeleteBucketOwnershipControls", Bucket),
        ("s3:DeleteBucketPolicy", Bucket),
        ("s3:DeleteBucketWebsite", Bucket),
        ("s3:DeleteObject", Object),
        ("s3:DeleteObjectTagging", Object),
        ("s3:DeleteObjectVersion", Object),
        ("s3:DeleteObjectVersionTagging", Object),
        ("s3:GetAccelerateConfiguration", Bucket),
        ("s3:GetAnalyticsConfiguration", Bucket),
        ("s3:GetBucketAcl", Bucket),
        ("s3:GetBucketCORS", Bucket),
        ("s3:GetBucketLocation", Bucket),
        ("s3:GetBucketLogging", Bucket),
        ("s3:GetBucketNotification", Bucket),
        ("s3:GetBucketObjectLockConfiguration", Bucket),
        ("s3:GetBucketOwnershipControls", Bucket),
        ("s3:GetBucketPolicy", Bucket),
        ("s3:GetBucketPolicyStatus", Bucket),
        ("s3:GetBucketPublicAccessBlock", Bucket),
        ("s3:GetBucketRequestPayment", Bucket),
        ("s3:GetBucketTagging", Bucket),
        ("s3:GetBucketVersioning", Bucket),
        ("s3:GetBucketWebsite", Bucket),
        ("s3:GetEncryptionConfiguration", Bucket),
        ("s3:GetIntelligentTieringConfiguration", Bucket),
        ("s3:GetInventoryConfiguration", Bucket),
        ("s3:GetLifecycleConfiguration", Bucket),
        ("s3:GetMetricsConfiguration", Bucket),
        ("s3:GetObject", Object),
        ("s3:GetObjectAcl", Object),
        ("s3:GetObjectAttributes", Object),
        ("s3:GetObjectLegalHold", Object),
        ("s3:GetObjectRetention", Object),
        ("s3:GetObjectTagging", Object),
        ("s3:GetObjectTorrent", Object),
        ("s3:GetObjectVersion", Object),
        ("s3:GetObjectVersionAcl", Object),
        ("s3:GetObjectVersionAttributes", Object),
        ("s3:GetObjectVersionForReplication", Object),
        ("s3:GetObjectVersionTagging", Object),
        ("s3:GetObjectVersionTorrent", Object),
        ("s3:GetReplicationConfiguration", Bucket),
        ("s3:ListAllMyBuckets", Account),
        ("s3:ListBucket", Bucket),
        ("s3:ListBucketMultipartUploads", Bucket),
        ("s3:ListBucketVersions", Bucket),
        ("s3:ListMultipartUploadParts", Object),
        ("s3:ObjectOwnerOverrideToBucketOwner", Object),
        ("s3:PutAccelerateConfiguration", Bucket),
        ("s3:PutAnalyticsConfiguration", Bucket),
        ("s3:PutBucketAcl", Bucket),
        ("s3:PutBucketCORS", Bucket),
        ("s3:PutBucketLogging", Bucket),
        ("s3:PutBucketNotification", Bucket),
        ("s3:PutBucketObjectLockConfiguration", Bucket),
        ("s3:PutBucketOwnershipControls", Bucket),
        ("s3:PutBucketPolicy", Bucket),
        ("s3:PutBucketPublicAccessBlock", Bucket),
        ("s3:PutBucketRequestPayment", Bucket),
        ("s3:PutBucketTagging", Bucket),
        ("s3:PutBucketVersioning", Bucket),
        ("s3:PutBucketWebsite", Bucket),
        ("s3:PutEncryptionConfiguration", Bucket),
        ("s3:PutIntelligentTieringConfiguration", Bucket),
        ("s3:PutInventoryConfiguration", Bucket),
        ("s3:PutLifecycleConfiguration", Bucket),
        ("s3:PutMetricsConfiguration", Bucket),
        ("s3:PutObject", Object),
        ("s3:PutObjectAcl", Object),
        ("s3:PutObjectLegalHold", Object),
        ("s3:PutObjectRetention", Object),
        ("s3:PutObjectTagging", Object),
        ("s3:PutObjectVersionAcl", Object),
        ("s3:PutObjectVersionTagging", Object),
        ("s3:PutReplicationConfiguration", Bucket),
        ("s3:ReplicateDelete", Object),
        ("s3:ReplicateObject", Object),
        ("s3:ReplicateTags", Object),
        ("s3:RestoreObject", Object),
    ]
};

/// The kind of resource `action` (an exact name, any case) applies to, if it is known.
pub fn resource_kind(action: &str) -> Option<ResourceKind> {
    ACTIONS.iter().find(|(name, _)| name.eq_ignore_ascii_case(action)).map(|&(_, k)| k)
}

/// S3 condition keys accepted in a bucket policy (besides every `aws:` key), lower case.
/// Names ending in `/` take a suffix (a tag key, a grant name).
pub const S3_CONDITION_KEYS: &[&str] = &[
    "s3:authtype",
    "s3:dataaccesspointaccount",
    "s3:dataaccesspointarn",
    "s3:delimiter",
    "s3:existingobjecttag/",
    "s3:if-match",
    "s3:if-none-match",
    "s3:locationconstraint",
    "s3:max-keys",
    "s3:object-lock-legal-hold",
    "s3:object-lock-mode",
    "s3:object-lock-remaining-retention-days",
    "s3:object-lock-retain-until-date",
    "s3:objectcreationoperation",
    "s3:prefix",
    "s3:requestobjecttag/",
    "s3:requestobjecttagkeys",
    "s3:resourceaccount",
    "s3:signatureage",
    "s3:signatureversion",
    "s3:tlsversion",
    "s3:versionid",
    "s3:x-amz-acl",
    "s3:x-amz-content-sha256",
    "s3:x-amz-copy-source",
    "s3:x-amz-grant-full-control",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-object-ownership",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-storage-class",
    "s3:x-amz-website-redirect-location",
];

/// Normalizes a condition key name: the part before the first `/` lower-cased (key names are
/// case-insensitive), the rest (a tag key) kept as written.
pub fn normalize_key(key: &str) -> String {
    match key.split_once('/') {
        Some((head, tail)) => format!("{}/{}", head.to_ascii_lowercase(), tail),
        None => key.to_ascii_lowercase(),
    }
}

/// Whether a condition key (normalized) is accepted in a bucket policy.
pub fn is_known_condition_key(key: &str) -> bool {
    if key.starts_with("aws:") {
        return key.len() > 4;
    }
    S3_CONDITION_KEYS
        .iter()
        .any(|k| if k.ends_with('/') { key.starts_with(k) && key.len() > k.len() } else { key == *k })
}
