//! S3 authorization for s3hpc, shared by every front end (HTTP, wire, libs3): bucket policies,
//! ACLs, Object Ownership and Block Public Access, with AWS's semantics and error texts.
//!
//! A front end builds a [`RequestContext`] (usually with [`S3OpAuthz::context`]), loads the bucket's
//! [`BucketAuth`] (and the object's [`Acl`] for object requests) and calls [`authorize`] once per
//! request. PUTs that carry ACLs go through [`BucketAuth::new_object_acl`],
//! [`BucketAuth::put_bucket_acl`] or [`BucketAuth::put_object_acl`]; PutBucketPolicy through
//! [`BucketAuth::put_policy`]. The rules are described in `README.md` of this crate.
//!
//! # Error texts
//!
//! `MalformedPolicy` messages, and where each comes from (AWS: observed from S3 and recorded in
//! public issues/tests or AWS documentation; third-party: another S3 implementation's catalogue
//! of S3 answers; ours: no source found, our wording):
//!
//! | message | source |
//! |---|---|
//! | Policies must be valid JSON and the first byte must be '{' | AWS (empty and non-JSON bodies) |
//! | This policy contains invalid Json | third-party (JSON errors after a leading `{`; also duplicate member names: ours) |
//! | Normalized policy document exceeds the maximum allowed size of 20480 bytes | AWS |
//! | Missing required field Statement | AWS |
//! | Missing required field Principal | AWS |
//! | Missing required field Effect / Action / Resource | ours, by analogy with the two above |
//! | Unknown field NAME | AWS (wording per the brief; exact spacing unverified) |
//! | Could not parse the policy: Statement is empty! | third-party |
//! | The policy must contain a valid version string | third-party |
//! | Invalid effect: VALUE | third-party |
//! | Invalid principal in policy | AWS (also used for `NotPrincipal` with `Allow`: ours) |
//! | Policy has invalid resource | AWS (another bucket; `"*"`) |
//! | Policy has invalid action | AWS |
//! | Action does not apply to any resource(s) in statement | AWS |
//! | Policy has an invalid condition key | AWS |
//! | Invalid Condition type : NAME | third-party |
//! | Invalid IP address in Conditions | third-party |
//! | Invalid policy syntax. | AWS for `"Action": null`; ours for other wrongly typed values and for `X` with `NotX` |
//! | Invalid numeric value in Conditions for operator OP / Invalid boolean value ... / Invalid date value ... | ours |
//!
//! Other codes: `MalformedACLError` "The XML you provided was not well-formed or did not validate
//! against our published schema" (AWS); `UnresolvableGrantByEmailAddress` "The email address that
//! you provided does not match any account on record." (AWS's error table);
//! `AccessControlListNotSupported` "The bucket does not allow ACLs" (AWS);
//! `InvalidBucketAclWithObjectOwnership` "Bucket cannot have ACLs set with ObjectOwnership's
//! BucketOwnerEnforced setting" (AWS); `InvalidRequest` "Specifying both Canned ACLs and Header
//! Grants is not allowed" (AWS); `InvalidArgument` with an empty message and
//! ArgumentName `x-amz-acl` for an unknown canned ACL (AWS); `InvalidArgument` "Argument format not recognized"
//! (ArgumentName: the grant header), "Invalid group uri" (`uri` / `Group/URI`), "Invalid id"
//! (`id` / `CanonicalUser/ID`), `UnexpectedContent` "This request does not support content",
//! `MissingSecurityHeader` "Your request was missing a required header" (AWS, as recorded by
//! LocalStack's AWS-validated tests); `MalformedXML` (AWS's text).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
pub mod actions;
mod bucket;
pub mod cidr;
pub mod date;
mod error;
pub mod eval;
mod json;
pub mod ops;
pub mod ownership;
pub mod policy;
pub mod public;
pub mod store;
pub mod wildcard;
mod xml;

pub use acl::{Acl, AclHeaders, CannedAcl, Grant, Grantee, Group, Owner, Permission, RequestedAcl};
pub use bucket::{
    ADMIN_ONLY_OWNER_ID, BucketAuth, Grounds, authorize, authorize_service, owner_of, reveals_missing_key,
};
pub use error::{AuthzError, ErrorCode};
pub use eval::{Account, Decision, Principal, RequestContext, evaluate};
pub use ops::{AclNeed, S3Op, S3OpAuthz, Target};
pub use ownership::{ObjectOwnership, PublicAccessBlock, policy_status_xml};
pub use policy::Policy;
pub use public::policy_is_public;
pub use store::Authorized;
