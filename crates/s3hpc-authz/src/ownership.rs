//! BucketOwnershipControls, PublicAccessBlock and PolicyStatus documents.

use crate::error::AuthzError;
use crate::xml::{self, S3_NS};
use serde::{Deserialize, Serialize};

/// S3 Object Ownership.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum ObjectOwnership {
    /// ACLs disabled; the bucket owner owns every object (AWS's default since April 2023).
    #[default]
    BucketOwnerEnforced,
    /// The bucket owner owns objects written with `bucket-owner-full-control`; ACLs apply.
    BucketOwnerPreferred,
    /// The writer owns the object; ACLs apply.
    ObjectWriter,
}

impl ObjectOwnership {
    /// The name in XML.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectOwnership::BucketOwnerEnforced => "BucketOwnerEnforced",
            ObjectOwnership::BucketOwnerPreferred => "BucketOwnerPreferred",
            ObjectOwnership::ObjectWriter => "ObjectWriter",
        }
    }

    /// Parses a name (exact case); also the `x-amz-object-ownership` header of CreateBucket.
    pub fn parse(s: &str) -> Option<ObjectOwnership> {
        [ObjectOwnership::BucketOwnerEnforced, ObjectOwnership::BucketOwnerPreferred, ObjectOwnership::ObjectWriter]
            .into_iter()
            .find(|o| o.as_str() == s)
    }

    /// Whether ACLs are disabled.
    pub fn acls_disabled(self) -> bool {
        self == ObjectOwnership::BucketOwnerEnforced
    }

    /// The OwnershipControls document (GetBucketOwnershipControls answer).
    pub fn to_xml(self) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><OwnershipControls xmlns="{S3_NS}"><Rule><ObjectOwnership>{}</ObjectOwnership></Rule></OwnershipControls>"#,
            self.as_str()
        )
    }

    /// Parses an OwnershipControls document: exactly one Rule with a known ObjectOwnership,
    /// else `MalformedXML`.
    pub fn from_xml(doc: &[u8]) -> Result<ObjectOwnership, AuthzError> {
        let root = xml::parse(doc).ok_or_else(AuthzError::malformed_xml)?;
        if root.name != "OwnershipControls" {
            return Err(AuthzError::malformed_xml());
        }
        let rules: Vec<_> = root.children_named("Rule").collect();
        let [rule] = rules.as_slice() else { return Err(AuthzError::malformed_xml()) };
        rule.child("ObjectOwnership")
            .and_then(|o| ObjectOwnership::parse(o.trimmed()))
            .ok_or_else(AuthzError::malformed_xml)
    }
}

/// Block Public Access settings of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct PublicAccessBlock {
    /// Refuse PUTs of public ACLs (403).
    #[serde(default)]
    pub block_public_acls: bool,
    /// Ignore grants to AllUsers / AuthenticatedUsers when authorizing.
    #[serde(default)]
    pub ignore_public_acls: bool,
    /// Refuse PutBucketPolicy of a public policy (403).
    #[serde(default)]
    pub block_public_policy: bool,
    /// With a public policy, only the bucket owner's account (and admins) get access.
    #[serde(default)]
    pub restrict_public_buckets: bool,
}

impl PublicAccessBlock {
    /// All four on: what AWS gives new buckets since April 2023.
    pub const ALL_BLOCKED: PublicAccessBlock = PublicAccessBlock {
        block_public_acls: true,
        ignore_public_acls: true,
        block_public_policy: true,
        restrict_public_buckets: true,
    };

    /// The PublicAccessBlockConfiguration document.
    pub fn to_xml(&self) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><PublicAccessBlockConfiguration xmlns="{S3_NS}"><BlockPublicAcls>{}</BlockPublicAcls><IgnorePublicAcls>{}</IgnorePublicAcls><BlockPublicPolicy>{}</BlockPublicPolicy><RestrictPublicBuckets>{}</RestrictPublicBuckets></PublicAccessBlockConfiguration>"#,
            self.block_public_acls, self.ignore_public_acls, self.block_public_policy, self.restrict_public_buckets
        )
    }

    /// Parses a PublicAccessBlockConfiguration document; an absent element is `false`, a value
    /// other than `true`/`false` is `MalformedXML`.
    pub fn from_xml(doc: &[u8]) -> Result<PublicAccessBlock, AuthzError> {
        let root = xml::parse(doc).ok_or_else(AuthzError::malformed_xml)?;
        if root.name != "PublicAccessBlockConfiguration" {
            return Err(AuthzError::malformed_xml());
        }
        let flag = |name: &str| -> Result<bool, AuthzError> {
            match root.child(name).map(|n| n.trimmed()) {
                None => Ok(false),
                Some("true") => Ok(true),
                Some("false") => Ok(false),
                Some(_) => Err(AuthzError::malformed_xml()),
            }
        };
        Ok(PublicAccessBlock {
            block_public_acls: flag("BlockPublicAcls")?,
            ignore_public_acls: flag("IgnorePublicAcls")?,
            block_public_policy: flag("BlockPublicPolicy")?,
            restrict_public_buckets: flag("RestrictPublicBuckets")?,
        })
    }
}

/// The PolicyStatus document (GetBucketPolicyStatus answer).
pub fn policy_status_xml(is_public: bool) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><PolicyStatus xmlns="{S3_NS}"><IsPublic>{is_public}</IsPublic></PolicyStatus>"#
    )
}
