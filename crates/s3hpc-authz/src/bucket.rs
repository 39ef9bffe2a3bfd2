//! A bucket's authorization state and the one call a front end makes per request.

use crate::acl::{ANONYMOUS_OWNER_ID, Acl, CannedAcl, Grantee, Owner, Permission, RequestedAcl};
use crate::error::{AuthzError, ErrorCode};
use crate::eval::{Decision, Principal, RequestContext, evaluate};
use crate::ops::{AclNeed, S3Op, S3OpAuthz, Target};
use crate::ownership::{ObjectOwnership, PublicAccessBlock};
use crate::policy::{ParseOptions, Policy};
use crate::public::policy_is_public;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// Everything authorization keeps per bucket; serializable so the store can persist it (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BucketAuth {
    /// The bucket ACL; its `owner` is the bucket owner.
    pub acl: Acl,
    /// The bucket policy as put (GetBucketPolicy answers this text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Object Ownership (default BucketOwnerEnforced: ACLs disabled).
    #[serde(default)]
    pub ownership: ObjectOwnership,
    /// Block Public Access, if configured (None: nothing blocked, GetPublicAccessBlock 404).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_access_block: Option<PublicAccessBlock>,
    /// The ownership controls were deleted (DeleteBucketOwnershipControls): the bucket acts as
    /// ObjectWriter and GetBucketOwnershipControls answers 404 OwnershipControlsNotFoundError,
    /// as on S3, until controls are put again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ownership_controls_deleted: bool,
    #[serde(skip)]
    parsed: OnceLock<Option<Arc<Policy>>>,
}

impl PartialEq for BucketAuth {
    fn eq(&self, o: &Self) -> bool {
        self.acl == o.acl
            && self.policy == o.policy
            && self.ownership == o.ownership
            && self.public_access_block == o.public_access_block
            && self.ownership_controls_deleted == o.ownership_controls_deleted
    }
}

/// The owner id of buckets no account owns ([`BucketAuth::admin_only`]). It contains a `:`, which
/// no account id that a policy may name contains; the gateway must not give an account this id.
pub const ADMIN_ONLY_OWNER_ID: &str = "s3hpc:admin-only";

/// Why a request was allowed (for access logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounds {
    /// An administrator.
    Admin,
    /// The owner of the bucket (or of the object).
    Owner,
    /// A bucket policy `Allow`.
    Policy,
    /// An ACL grant.
    Acl,
}

fn denied() -> AuthzError {
    AuthzError::access_denied()
}

/// The owner id a principal gets for what it creates.
pub fn owner_of(p: &Principal) -> Owner {
    match p {
        Principal::Anonymous => Owner::new(ANONYMOUS_OWNER_ID),
        Principal::Account(a) => Owner { id: a.id.clone(), display_name: a.name.clone() },
    }
}

impl BucketAuth {
    /// A bucket owned by `owner`: private ACL, no policy, BucketOwnerEnforced, no block.
    pub fn new(owner: Owner) -> BucketAuth {
        BucketAuth {
            acl: Acl::private(owner),
            policy: None,
            ownership: ObjectOwnership::default(),
            public_access_block: None,
            ownership_controls_deleted: false,
            parsed: OnceLock::new(),
        }
    }

    /// The state CreateBucket gives a bucket: the creator owns it; `x-amz-object-ownership`
    /// (default BucketOwnerEnforced) and an ACL from the request headers. With ACLs disabled only
    /// a private ACL is accepted (`InvalidBucketAclWithObjectOwnership`); `bucket-owner-read` and
    /// `bucket-owner-full-control` are ignored on buckets, as S3 does.
    pub fn for_create(
        creator: &Principal,
        requested: &RequestedAcl,
        ownership: Option<ObjectOwnership>,
    ) -> Result<BucketAuth, AuthzError> {
        if matches!(creator, Principal::Anonymous) {
            return Err(denied());
        }
        let mut b = BucketAuth::new(owner_of(creator));
        b.ownership = ownership.unwrap_or_default();
        let acl = b.acl_from_request(requested)?;
        if b.ownership.acls_disabled() && !acl.is_private_of(&b.owner().id) {
            return Err(invalid_acl_with_ownership());
        }
        b.acl = acl;
        Ok(b)
    }

    /// A bucket no account owns (e.g. a directory whose uid maps to no account): only admins
    /// pass ownership checks. Its owner id is [`ADMIN_ONLY_OWNER_ID`].
    pub fn admin_only() -> BucketAuth {
        BucketAuth::new(Owner::new(ADMIN_ONLY_OWNER_ID))
    }

    /// The bucket owner.
    pub fn owner(&self) -> &Owner {
        &self.acl.owner
    }

    /// The parsed policy (parsed once from [`BucketAuth::policy`]; a stored text that no longer
    /// parses counts as no policy).
    pub fn parsed_policy(&self) -> Option<&Policy> {
        self.parsed
            .get_or_init(|| self.policy.as_deref().and_then(|t| Policy::parse_stored(t).ok()).map(Arc::new))
            .as_deref()
    }

    fn pab(&self) -> PublicAccessBlock {
        self.public_access_block.unwrap_or_default()
    }

    /// PutBucketPolicy: validates `text` for bucket `bucket` (principals checked with
    /// `account_exists` if given); a public policy under BlockPublicPolicy is `AccessDenied`.
    pub fn put_policy(
        &mut self,
        text: &str,
        bucket: &str,
        account_exists: Option<&dyn Fn(&str) -> bool>,
    ) -> Result<(), AuthzError> {
        let policy = Policy::parse_with(text, &ParseOptions { bucket: Some(bucket), account_exists })?;
        if self.pab().block_public_policy && policy_is_public(&policy) {
            return Err(denied());
        }
        self.policy = Some(text.to_owned());
        self.parsed = OnceLock::from(Some(Arc::new(policy)));
        Ok(())
    }

    /// DeleteBucketPolicy.
    pub fn delete_policy(&mut self) {
        self.policy = None;
        self.parsed = OnceLock::from(None);
    }

    /// GetBucketPolicyStatus: whether the policy is public (`None`: no policy, NoSuchBucketPolicy).
    pub fn policy_is_public(&self) -> Option<bool> {
        self.policy.as_ref()?;
        Some(self.parsed_policy().is_some_and(policy_is_public))
    }

    /// PutBucketOwnershipControls: BucketOwnerEnforced while the bucket ACL grants anyone but
    /// the owner is `InvalidBucketAclWithObjectOwnership`.
    pub fn set_ownership(&mut self, o: ObjectOwnership) -> Result<(), AuthzError> {
        if o.acls_disabled() && !self.acl.only_owner(&self.owner().id) {
            return Err(invalid_acl_with_ownership());
        }
        self.ownership = o;
        Ok(())
    }

    /// The bucket ACL as GetBucketAcl shows it (with ACLs disabled: owner FULL_CONTROL only).
    pub fn effective_bucket_acl(&self) -> Acl {
        if self.ownership.acls_disabled() { Acl::private(self.owner().clone()) } else { self.acl.clone() }
    }

    /// An object's ACL as GetObjectAcl shows it (`stored`: the object's ACL record, if any).
    pub fn effective_object_acl(&self, stored: Option<&Acl>) -> Acl {
        match stored {
            Some(a) if !self.ownership.acls_disabled() => a.clone(),
            _ => Acl::private(self.owner().clone()),
        }
    }

    fn acl_from_request(&self, requested: &RequestedAcl) -> Result<Acl, AuthzError> {
        Ok(match requested {
            RequestedAcl::None => Acl::private(self.owner().clone()),
            RequestedAcl::Canned(c) => c.expand(self.owner(), self.owner(), false),
            RequestedAcl::Grants(g) => Acl { owner: self.owner().clone(), grants: g.clone() },
        })
    }

    /// PutBucketAcl: the new bucket ACL from headers (`requested`) or a document (`body`, already
    /// parsed with [`Acl::from_xml`]). Both is `UnexpectedContent`, neither `MissingSecurityHeader`
    /// (with `<MissingHeaderName>x-amz-acl</MissingHeaderName>`). With ACLs disabled only a private-equivalent ACL is accepted
    /// (else `AccessControlListNotSupported`); a public ACL under BlockPublicAcls is
    /// `AccessDenied`; a document naming another owner is `AccessDenied`.
    pub fn put_bucket_acl(&mut self, requested: &RequestedAcl, body: Option<Acl>) -> Result<(), AuthzError> {
        check_acl_source(requested, body.as_ref())?;
        let acl = match body {
            Some(doc) => {
                if doc.owner.id != self.owner().id {
                    return Err(denied());
                }
                Acl { owner: self.owner().clone(), grants: doc.grants }
            }
            None => self.acl_from_request(requested)?,
        };
        if self.ownership.acls_disabled() && !acl.is_private_of(&self.owner().id) {
            return Err(AuthzError::acl_not_supported());
        }
        if self.pab().block_public_acls && acl.is_public() {
            return Err(denied());
        }
        if !self.ownership.acls_disabled() {
            self.acl = acl;
        }
        Ok(())
    }

    /// The owner and ACL of an object `writer` creates (PutObject, CopyObject,
    /// CreateMultipartUpload) with the ACL headers `requested`.
    ///
    /// BucketOwnerEnforced: the bucket owner owns it, and any ACL but `bucket-owner-full-control`
    /// (or grants of FULL_CONTROL to the bucket owner only) is `AccessControlListNotSupported`.
    /// BucketOwnerPreferred: the bucket owner owns it when written with
    /// `bucket-owner-full-control`, else the writer. ObjectWriter: the writer. A public ACL under
    /// BlockPublicAcls is `AccessDenied`.
    pub fn new_object_acl(&self, writer: &Principal, requested: &RequestedAcl) -> Result<Acl, AuthzError> {
        let bucket_owner = self.owner();
        if self.ownership.acls_disabled() {
            let ok = match requested {
                RequestedAcl::None | RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl) => true,
                RequestedAcl::Canned(_) => false,
                RequestedAcl::Grants(g) => g.iter().all(|g| {
                    g.permission == Permission::FullControl
                        && matches!(&g.grantee, Grantee::CanonicalUser { id, .. } if *id == bucket_owner.id)
                }),
            };
            if !ok {
                return Err(AuthzError::acl_not_supported());
            }
            return Ok(Acl::private(bucket_owner.clone()));
        }
        let owner = match (self.ownership, requested) {
            (ObjectOwnership::BucketOwnerPreferred, RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl)) => {
                bucket_owner.clone()
            }
            _ => owner_of(writer),
        };
        let acl = match requested {
            RequestedAcl::None => Acl::private(owner),
            RequestedAcl::Canned(c) => c.expand(&owner, bucket_owner, true),
            RequestedAcl::Grants(g) => Acl { owner, grants: g.clone() },
        };
        if self.pab().block_public_acls && acl.is_public() {
            return Err(denied());
        }
        Ok(acl)
    }

    /// PutObjectAcl: the object's new ACL (`current`: its ACL record). Same rules as
    /// [`BucketAuth::put_bucket_acl`]; the owner stays the object's owner.
    pub fn put_object_acl(
        &self,
        current: Option<&Acl>,
        requested: &RequestedAcl,
        body: Option<Acl>,
    ) -> Result<Acl, AuthzError> {
        check_acl_source(requested, body.as_ref())?;
        let cur = self.effective_object_acl(current);
        let owner = cur.owner.clone();
        let acl = match (body, requested) {
            (Some(doc), _) => {
                if doc.owner.id != owner.id {
                    return Err(denied());
                }
                Acl { owner, grants: doc.grants }
            }
            (None, RequestedAcl::None) => Acl::private(owner),
            (None, RequestedAcl::Canned(c)) => c.expand(&owner, self.owner(), true),
            (None, RequestedAcl::Grants(g)) => Acl { owner, grants: g.clone() },
        };
        if self.ownership.acls_disabled() {
            let only_bucket_owner = acl.grants.iter().all(|g| {
                g.permission == Permission::FullControl
                    && matches!(&g.grantee, Grantee::CanonicalUser { id, .. } if *id == self.owner().id)
            });
            if !only_bucket_owner {
                return Err(AuthzError::acl_not_supported());
            }
            return Ok(Acl::private(self.owner().clone()));
        }
        if self.pab().block_public_acls && acl.is_public() {
            return Err(denied());
        }
        Ok(acl)
    }

    /// Whether ListBuckets shows this bucket to `p` (its owner; admins see all).
    pub fn listed_for(&self, p: &Principal) -> bool {
        p.is_admin() || p.id() == Some(self.owner().id.as_str())
    }

    /// `x-amz-expected-bucket-owner` (and `x-amz-source-expected-bucket-owner` for a copy
    /// source): a value other than the owner's id is `AccessDenied`.
    pub fn check_expected_owner(&self, expected: Option<&str>) -> Result<(), AuthzError> {
        match expected {
            Some(e) if e != self.owner().id => Err(denied()),
            _ => Ok(()),
        }
    }
}

/// PutBucketAcl / PutObjectAcl take the ACL from headers or from a document, never both, and
/// need one of them (S3's errors).
fn check_acl_source(requested: &RequestedAcl, body: Option<&Acl>) -> Result<(), AuthzError> {
    match (requested, body) {
        (RequestedAcl::None, None) => {
            Err(AuthzError::new(ErrorCode::MissingSecurityHeader, "Your request was missing a required header")
                .with_element("MissingHeaderName", "x-amz-acl"))
        }
        (RequestedAcl::Canned(_) | RequestedAcl::Grants(_), Some(_)) => {
            Err(AuthzError::new(ErrorCode::UnexpectedContent, "This request does not support content"))
        }
        _ => Ok(()),
    }
}

fn invalid_acl_with_ownership() -> AuthzError {
    AuthzError::new(
        ErrorCode::InvalidBucketAclWithObjectOwnership,
        "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
    )
}

/// Authorizes ListBuckets and CreateBucket: any account, never anonymous.
pub fn authorize_service(op: S3Op, principal: &Principal) -> Result<Grounds, AuthzError> {
    match principal {
        Principal::Anonymous => Err(denied()),
        Principal::Account(a) if a.admin => Ok(Grounds::Admin),
        Principal::Account(_) if op.target() == Target::Service => Ok(Grounds::Owner),
        Principal::Account(_) => Err(denied()),
    }
}

/// Authorizes one request on a bucket or object: the call a front end makes per request.
///
/// `ctx.action` must be `op.action(..)` (see [`S3OpAuthz::context`]); `object` is the ACL record of the
/// object the request acts on, if it exists and has one. The order is AWS's:
///
/// 1. an explicit `Deny` of the bucket policy refuses (except Get/Put/DeleteBucketPolicy by the
///    bucket owner or an admin: lock-out protection);
/// 2. an admin is allowed;
/// 3. the owner is allowed: the bucket owner for bucket operations and for writes into the bucket,
///    the object owner for operations on an object (with ACLs disabled, the bucket owner owns
///    every object);
/// 4. a policy `Allow` allows, unless RestrictPublicBuckets is on and the policy is public, and
///    for object operations only on objects the bucket owner owns (AWS); Get/Put/DeleteBucketPolicy
///    allowed by policy to another account are `MethodNotAllowed` (405), as S3;
/// 5. an ACL grant allows, when ACLs are enabled (IgnorePublicAcls drops the public grants);
/// 6. else `AccessDenied`.
pub fn authorize(
    op: S3Op,
    ctx: &RequestContext,
    bucket: &BucketAuth,
    object: Option<&Acl>,
) -> Result<Grounds, AuthzError> {
    if op.target() == Target::Service {
        return authorize_service(op, &ctx.principal);
    }
    let who = &ctx.principal;
    let bucket_owner = &bucket.owner().id;
    let is_bucket_owner = who.id() == Some(bucket_owner.as_str());
    let policy = bucket.parsed_policy();
    let decision = policy.map_or(Decision::NoMatch, |p| evaluate(p, ctx));
    if decision == Decision::ExplicitDeny && !(op.is_policy_op() && (is_bucket_owner || who.is_admin())) {
        return Err(denied());
    }
    if who.is_admin() {
        return Ok(Grounds::Admin);
    }
    let acls_on = !bucket.ownership.acls_disabled();
    let object_owner: &str = match object {
        Some(a) if acls_on => &a.owner.id,
        _ => bucket_owner,
    };
    let owner_hit = match (op.target(), op.acl_need()) {
        (Target::Object, AclNeed::Object(_) | AclNeed::None) => who.id() == Some(object_owner),
        _ => is_bucket_owner,
    };
    if owner_hit {
        return Ok(Grounds::Owner);
    }
    if decision == Decision::Allow {
        let restricted = bucket.pab().restrict_public_buckets && policy.is_some_and(policy_is_public);
        // AWS: an Allow reaches only objects the bucket owner owns (reads and changes of an
        // existing object; writes into the bucket are bucket-level).
        let on_object = matches!((op.target(), op.acl_need()), (Target::Object, AclNeed::Object(_) | AclNeed::None));
        let owned_by_bucket_owner = !on_object || object_owner == bucket_owner;
        if !restricted && owned_by_bucket_owner {
            if op.is_policy_op() {
                return Err(AuthzError::new(
                    ErrorCode::MethodNotAllowed,
                    "The specified method is not allowed against this resource.",
                ));
            }
            return Ok(Grounds::Policy);
        }
    }
    if acls_on {
        let ignore_public = bucket.pab().ignore_public_acls;
        let granted = match op.acl_need() {
            AclNeed::Bucket(p) => bucket.acl.allows(who, p, ignore_public),
            AclNeed::Object(p) => match object {
                Some(a) => a.allows(who, p, ignore_public),
                None => false,
            },
            AclNeed::None => false,
        };
        if granted {
            return Ok(Grounds::Acl);
        }
    }
    Err(denied())
}

/// For a GET or HEAD of a key that does not exist: whether the caller may learn that it does
/// not exist (404 NoSuchKey) rather than get 403 AccessDenied. As S3, that is when the caller
/// could list the bucket with the key as `s3:prefix` (`ctx` is the GET/HEAD's context).
pub fn reveals_missing_key(ctx: &RequestContext, bucket: &BucketAuth) -> bool {
    let mut list = ctx.clone();
    list.action = S3Op::ListObjects.action(false).to_owned();
    list.key = None;
    list.keys.remove("s3:prefix");
    if let Some(k) = &ctx.key {
        list = list.with_key("s3:prefix", k.clone());
    }
    authorize(S3Op::ListObjects, &list, bucket, None).is_ok()
}
