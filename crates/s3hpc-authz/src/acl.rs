//! Access control lists: owner and grants, canned ACLs, the AccessControlPolicy document and the
//! `x-amz-grant-*` headers.

use crate::error::{AuthzError, ErrorCode};
use crate::eval::Principal;
use crate::xml::{self, S3_NS, esc};
use serde::{Deserialize, Serialize};

/// The group of everyone, anonymous included.
pub const ALL_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
/// The group of every signed request.
pub const AUTHENTICATED_USERS_URI: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
/// The log delivery group.
pub const LOG_DELIVERY_URI: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";
/// The canonical user `aws-exec-read` grants READ to (Amazon EC2's AMI bundle reader).
pub const EC2_CANONICAL_ID: &str = "6aa5a366c34c1cbe25dc49211496e913e0351eb0e8c37aa3477e40942ec6b97c";
/// The owner id of objects written by anonymous requests.
pub const ANONYMOUS_OWNER_ID: &str = "65a011a29cdf8ec533ec3d1ccaae921c";

/// An ACL permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Permission {
    /// `READ`: list a bucket / read an object.
    Read,
    /// `WRITE`: create, overwrite and delete objects in a bucket.
    Write,
    /// `READ_ACP`: read the ACL.
    ReadAcp,
    /// `WRITE_ACP`: write the ACL.
    WriteAcp,
    /// `FULL_CONTROL`: all of the above.
    FullControl,
}

impl Permission {
    /// The name in XML and headers.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "READ",
            Permission::Write => "WRITE",
            Permission::ReadAcp => "READ_ACP",
            Permission::WriteAcp => "WRITE_ACP",
            Permission::FullControl => "FULL_CONTROL",
        }
    }

    /// Parses a permission name (exact case, as S3).
    pub fn parse(s: &str) -> Option<Permission> {
        Some(match s {
            "READ" => Permission::Read,
            "WRITE" => Permission::Write,
            "READ_ACP" => Permission::ReadAcp,
            "WRITE_ACP" => Permission::WriteAcp,
            "FULL_CONTROL" => Permission::FullControl,
            _ => return None,
        })
    }

    /// Whether holding `self` gives `wanted`.
    pub fn implies(self, wanted: Permission) -> bool {
        self == Permission::FullControl || self == wanted
    }
}

/// A predefined group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Group {
    /// Everyone.
    AllUsers,
    /// Every signed request.
    AuthenticatedUsers,
    /// The log delivery group (no s3hpc principal is in it).
    LogDelivery,
}

impl Group {
    /// The group's URI.
    pub fn uri(self) -> &'static str {
        match self {
            Group::AllUsers => ALL_USERS_URI,
            Group::AuthenticatedUsers => AUTHENTICATED_USERS_URI,
            Group::LogDelivery => LOG_DELIVERY_URI,
        }
    }

    /// The group of `uri`, if it is one of S3's.
    pub fn from_uri(uri: &str) -> Option<Group> {
        [Group::AllUsers, Group::AuthenticatedUsers, Group::LogDelivery].into_iter().find(|g| g.uri() == uri)
    }
}

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Grantee {
    /// A canonical user (an s3hpc account id).
    CanonicalUser {
        /// The id.
        id: String,
        /// The display name shown in GetAcl answers.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_name: Option<String>,
    },
    /// A predefined group.
    Group(Group),
}

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Grant {
    /// Who.
    pub grantee: Grantee,
    /// What.
    pub permission: Permission,
}

/// An owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    /// The canonical id.
    pub id: String,
    /// The display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

impl Owner {
    /// An owner without a display name.
    pub fn new(id: impl Into<String>) -> Owner {
        Owner { id: id.into(), display_name: None }
    }
}

/// An ACL: its owner and grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    /// The owner of the bucket or object.
    pub owner: Owner,
    /// The grants, in document order.
    pub grants: Vec<Grant>,
}

impl Acl {
    /// The private ACL: the owner has FULL_CONTROL.
    pub fn private(owner: Owner) -> Acl {
        let grants = vec![Grant { grantee: user_grantee(&owner), permission: Permission::FullControl }];
        Acl { owner, grants }
    }

    /// Whether the grants give `who` permission `wanted`. `ignore_public` drops the grants to
    /// AllUsers and AuthenticatedUsers (PublicAccessBlock IgnorePublicAcls).
    pub fn allows(&self, who: &Principal, wanted: Permission, ignore_public: bool) -> bool {
        self.grants.iter().any(|g| {
            g.permission.implies(wanted)
                && match (&g.grantee, who) {
                    (Grantee::Group(Group::AllUsers), _) => !ignore_public,
                    (Grantee::Group(Group::AuthenticatedUsers), Principal::Account(_)) => !ignore_public,
                    (Grantee::CanonicalUser { id, .. }, Principal::Account(a)) => *id == a.id,
                    _ => false,
                }
        })
    }

    /// Whether a grant goes to AllUsers or AuthenticatedUsers (AWS's "public" ACL).
    pub fn is_public(&self) -> bool {
        self.grants
            .iter()
            .any(|g| matches!(g.grantee, Grantee::Group(Group::AllUsers) | Grantee::Group(Group::AuthenticatedUsers)))
    }

    /// Whether the ACL grants nothing to anyone but `owner_id` (what ACLs disabled accept).
    pub fn only_owner(&self, owner_id: &str) -> bool {
        self.grants.iter().all(|g| matches!(&g.grantee, Grantee::CanonicalUser { id, .. } if id == owner_id))
    }

    /// Whether this is the private ACL of `owner_id`: FULL_CONTROL to the owner and nothing else
    /// (what S3 accepts where ACLs are disabled, and what an object without an ACL record has).
    /// An ACL that takes grants away from the owner (none at all, or only WRITE) is not.
    pub fn is_private_of(&self, owner_id: &str) -> bool {
        !self.grants.is_empty()
            && self.grants.iter().all(|g| {
                g.permission == Permission::FullControl
                    && matches!(&g.grantee, Grantee::CanonicalUser { id, .. } if id == owner_id)
            })
    }

    /// This ACL with the display name of each account grantee that was granted by id alone
    /// (`x-amz-grant-*: id=...`, a document without DisplayName), as S3 shows it.
    pub fn with_names(mut self, name_of: impl Fn(&str) -> Option<String>) -> Acl {
        for g in &mut self.grants {
            if let Grantee::CanonicalUser { id, display_name: dn @ None } = &mut g.grantee {
                *dn = name_of(id);
            }
        }
        self
    }

    /// The AccessControlPolicy document (GetBucketAcl / GetObjectAcl answer).
    pub fn to_xml(&self) -> String {
        let mut s = String::with_capacity(256 + 200 * self.grants.len());
        s.push_str(r#"<?xml version="1.0" encoding="UTF-8"?>"#);
        s.push_str(&format!(r#"<AccessControlPolicy xmlns="{S3_NS}"><Owner><ID>{}</ID>"#, esc(&self.owner.id)));
        if let Some(n) = &self.owner.display_name {
            s.push_str(&format!("<DisplayName>{}</DisplayName>", esc(n)));
        }
        s.push_str("</Owner><AccessControlList>");
        for g in &self.grants {
            s.push_str(r#"<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" "#);
            match &g.grantee {
                Grantee::CanonicalUser { id, display_name } => {
                    s.push_str(&format!(r#"xsi:type="CanonicalUser"><ID>{}</ID>"#, esc(id)));
                    if let Some(n) = display_name {
                        s.push_str(&format!("<DisplayName>{}</DisplayName>", esc(n)));
                    }
                }
                Grantee::Group(gr) => s.push_str(&format!(r#"xsi:type="Group"><URI>{}</URI>"#, gr.uri())),
            }
            s.push_str(&format!("</Grantee><Permission>{}</Permission></Grant>", g.permission.as_str()));
        }
        s.push_str("</AccessControlList></AccessControlPolicy>");
        s
    }

    /// Parses an AccessControlPolicy document (PutBucketAcl / PutObjectAcl body).
    ///
    /// Errors as S3: not well-formed or not the schema -> `MalformedACLError`; an unknown group
    /// URI -> `InvalidArgument`; a grant by e-mail -> `UnresolvableGrantByEmailAddress`.
    /// `account_exists` (if given) refuses unknown canonical ids with `InvalidArgument`.
    pub fn from_xml(doc: &[u8], account_exists: Option<&dyn Fn(&str) -> bool>) -> Result<Acl, AuthzError> {
        let root = xml::parse(doc).ok_or_else(AuthzError::malformed_acl)?;
        if root.name != "AccessControlPolicy" {
            return Err(AuthzError::malformed_acl());
        }
        let owner = root.child("Owner").ok_or_else(AuthzError::malformed_acl)?;
        let owner_id = owner.child("ID").map(|n| n.trimmed()).filter(|s| !s.is_empty());
        let owner = Owner {
            id: owner_id.ok_or_else(AuthzError::malformed_acl)?.to_owned(),
            display_name: owner.child("DisplayName").map(|n| n.trimmed().to_owned()).filter(|s| !s.is_empty()),
        };
        let mut grants = Vec::new();
        if let Some(list) = root.child("AccessControlList") {
            for g in list.children_named("Grant") {
                let grantee = g.child("Grantee").ok_or_else(AuthzError::malformed_acl)?;
                let permission = g
                    .child("Permission")
                    .and_then(|p| Permission::parse(p.trimmed()))
                    .ok_or_else(AuthzError::malformed_acl)?;
                let kind = grantee.attr("type").ok_or_else(AuthzError::malformed_acl)?;
                let grantee = match kind {
                    "CanonicalUser" => {
                        let id = grantee.child("ID").map(|n| n.trimmed()).unwrap_or("");
                        if id.is_empty() {
                            return Err(AuthzError::malformed_acl());
                        }
                        if let Some(exists) = account_exists
                            && !exists(id)
                        {
                            return Err(AuthzError::new(ErrorCode::InvalidArgument, "Invalid id")
                                .with_argument("CanonicalUser/ID", id));
                        }
                        Grantee::CanonicalUser {
                            id: id.to_owned(),
                            display_name: grantee
                                .child("DisplayName")
                                .map(|n| n.trimmed().to_owned())
                                .filter(|s| !s.is_empty()),
                        }
                    }
                    "Group" => {
                        let uri = grantee.child("URI").map(|n| n.trimmed()).ok_or_else(AuthzError::malformed_acl)?;
                        Grantee::Group(Group::from_uri(uri).ok_or_else(|| {
                            AuthzError::new(ErrorCode::InvalidArgument, "Invalid group uri")
                                .with_argument("Group/URI", uri)
                        })?)
                    }
                    "AmazonCustomerByEmail" => return Err(unresolvable_email()),
                    _ => return Err(AuthzError::malformed_acl()),
                };
                grants.push(Grant { grantee, permission });
            }
        }
        Ok(Acl { owner, grants })
    }
}

fn user_grantee(owner: &Owner) -> Grantee {
    Grantee::CanonicalUser { id: owner.id.clone(), display_name: owner.display_name.clone() }
}

fn unresolvable_email() -> AuthzError {
    AuthzError::new(
        ErrorCode::UnresolvableGrantByEmailAddress,
        "The email address that you provided does not match any account on record.",
    )
}

/// A canned ACL (`x-amz-acl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CannedAcl {
    /// `private`
    Private,
    /// `public-read`
    PublicRead,
    /// `public-read-write`
    PublicReadWrite,
    /// `authenticated-read`
    AuthenticatedRead,
    /// `aws-exec-read`
    AwsExecRead,
    /// `bucket-owner-read` (objects; on a bucket S3 ignores it: private)
    BucketOwnerRead,
    /// `bucket-owner-full-control` (objects; on a bucket S3 ignores it: private)
    BucketOwnerFullControl,
    /// `log-delivery-write` (buckets)
    LogDeliveryWrite,
}

impl CannedAcl {
    /// Every canned ACL.
    pub const ALL: [CannedAcl; 8] = [
        CannedAcl::Private,
        CannedAcl::PublicRead,
        CannedAcl::PublicReadWrite,
        CannedAcl::AuthenticatedRead,
        CannedAcl::AwsExecRead,
        CannedAcl::BucketOwnerRead,
        CannedAcl::BucketOwnerFullControl,
        CannedAcl::LogDeliveryWrite,
    ];

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            CannedAcl::Private => "private",
            CannedAcl::PublicRead => "public-read",
            CannedAcl::PublicReadWrite => "public-read-write",
            CannedAcl::AuthenticatedRead => "authenticated-read",
            CannedAcl::AwsExecRead => "aws-exec-read",
            CannedAcl::BucketOwnerRead => "bucket-owner-read",
            CannedAcl::BucketOwnerFullControl => "bucket-owner-full-control",
            CannedAcl::LogDeliveryWrite => "log-delivery-write",
        }
    }

    /// Parses an `x-amz-acl` value; anything else is `InvalidArgument` with an empty message and
    /// the header as ArgumentName / ArgumentValue, as S3 answers.
    pub fn parse(s: &str) -> Result<CannedAcl, AuthzError> {
        CannedAcl::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| AuthzError::new(ErrorCode::InvalidArgument, "").with_argument("x-amz-acl", s))
    }

    /// The ACL this canned ACL stands for, as S3 expands it. `owner` owns the resource;
    /// `bucket_owner` is the owner of the bucket it is in (the same for a bucket).
    pub fn expand(self, owner: &Owner, bucket_owner: &Owner, for_object: bool) -> Acl {
        let mut acl = Acl::private(owner.clone());
        let group = |g, p| Grant { grantee: Grantee::Group(g), permission: p };
        match self {
            CannedAcl::Private => {}
            CannedAcl::PublicRead => acl.grants.push(group(Group::AllUsers, Permission::Read)),
            CannedAcl::PublicReadWrite => {
                acl.grants.push(group(Group::AllUsers, Permission::Read));
                acl.grants.push(group(Group::AllUsers, Permission::Write));
            }
            CannedAcl::AuthenticatedRead => acl.grants.push(group(Group::AuthenticatedUsers, Permission::Read)),
            CannedAcl::AwsExecRead => acl.grants.push(Grant {
                grantee: Grantee::CanonicalUser {
                    id: EC2_CANONICAL_ID.to_owned(),
                    display_name: Some("za-team".to_owned()),
                },
                permission: Permission::Read,
            }),
            CannedAcl::BucketOwnerRead | CannedAcl::BucketOwnerFullControl => {
                let p = if self == CannedAcl::BucketOwnerRead { Permission::Read } else { Permission::FullControl };
                if for_object && bucket_owner.id != owner.id {
                    acl.grants.push(Grant { grantee: user_grantee(bucket_owner), permission: p });
                }
            }
            CannedAcl::LogDeliveryWrite => {
                acl.grants.push(group(Group::LogDelivery, Permission::Write));
                acl.grants.push(group(Group::LogDelivery, Permission::ReadAcp));
            }
        }
        acl
    }
}

/// The ACL headers of a request: `x-amz-acl` and `x-amz-grant-*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclHeaders<'a> {
    /// `x-amz-acl`
    pub canned: Option<&'a str>,
    /// `x-amz-grant-read`
    pub grant_read: Option<&'a str>,
    /// `x-amz-grant-write`
    pub grant_write: Option<&'a str>,
    /// `x-amz-grant-read-acp`
    pub grant_read_acp: Option<&'a str>,
    /// `x-amz-grant-write-acp`
    pub grant_write_acp: Option<&'a str>,
    /// `x-amz-grant-full-control`
    pub grant_full_control: Option<&'a str>,
}

/// What a request's ACL headers ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestedAcl {
    /// No ACL header.
    None,
    /// `x-amz-acl`.
    Canned(CannedAcl),
    /// `x-amz-grant-*`: exactly these grants.
    Grants(Vec<Grant>),
}

impl AclHeaders<'_> {
    /// Whether no ACL header is present.
    pub fn is_empty(&self) -> bool {
        self.canned.is_none() && self.grant_headers().iter().all(|(h, _, _)| h.is_none())
    }

    fn grant_headers(&self) -> [(Option<&str>, Permission, &'static str); 5] {
        [
            (self.grant_read, Permission::Read, "x-amz-grant-read"),
            (self.grant_write, Permission::Write, "x-amz-grant-write"),
            (self.grant_read_acp, Permission::ReadAcp, "x-amz-grant-read-acp"),
            (self.grant_write_acp, Permission::WriteAcp, "x-amz-grant-write-acp"),
            (self.grant_full_control, Permission::FullControl, "x-amz-grant-full-control"),
        ]
    }

    /// Parses the headers. Both a canned ACL and grants -> `InvalidRequest`; a bad canned name or
    /// grantee -> `InvalidArgument`; `emailAddress=` -> `UnresolvableGrantByEmailAddress`.
    pub fn parse(&self, account_exists: Option<&dyn Fn(&str) -> bool>) -> Result<RequestedAcl, AuthzError> {
        let has_grants = self.grant_headers().iter().any(|(h, _, _)| h.is_some());
        match (self.canned, has_grants) {
            (Some(_), true) => Err(AuthzError::new(
                ErrorCode::InvalidRequest,
                "Specifying both Canned ACLs and Header Grants is not allowed",
            )),
            (Some(c), false) => Ok(RequestedAcl::Canned(CannedAcl::parse(c.trim())?)),
            (None, false) => Ok(RequestedAcl::None),
            (None, true) => {
                let mut grants = Vec::new();
                for (value, permission, header) in self.grant_headers() {
                    if let Some(v) = value {
                        for grantee in parse_grantees(header, v, account_exists)? {
                            grants.push(Grant { grantee, permission });
                        }
                    }
                }
                Ok(RequestedAcl::Grants(grants))
            }
        }
    }
}

/// Parses the value of grant header `header` (e.g. `x-amz-grant-read`): `id="..."`, `uri="..."`,
/// `emailAddress="..."`, comma separated (quotes optional). Errors as S3 (`InvalidArgument` with
/// ArgumentName / ArgumentValue): "Argument format not recognized" (the header and the item),
/// "Invalid group uri" (`uri`), "Invalid id" (`id`, when `account_exists` refuses it);
/// `emailAddress` is `UnresolvableGrantByEmailAddress`.
pub fn parse_grantees(
    header: &str,
    value: &str,
    account_exists: Option<&dyn Fn(&str) -> bool>,
) -> Result<Vec<Grantee>, AuthzError> {
    let unrecognized = |item: &str| {
        AuthzError::new(ErrorCode::InvalidArgument, "Argument format not recognized").with_argument(header, item.trim())
    };
    let mut out = Vec::new();
    for item in split_outside_quotes(value) {
        let (k, v) = item.split_once('=').ok_or_else(|| unrecognized(item))?;
        let v = v.trim();
        let v = match v.strip_prefix('"') {
            Some(inner) => inner.strip_suffix('"').ok_or_else(|| unrecognized(item))?,
            None => v,
        };
        if v.is_empty() || v.contains('"') {
            return Err(unrecognized(item));
        }
        match k.trim() {
            "id" => {
                if let Some(exists) = account_exists
                    && !exists(v)
                {
                    return Err(AuthzError::new(ErrorCode::InvalidArgument, "Invalid id").with_argument("id", v));
                }
                out.push(Grantee::CanonicalUser { id: v.to_owned(), display_name: None });
            }
            "uri" => out.push(Grantee::Group(Group::from_uri(v).ok_or_else(|| {
                AuthzError::new(ErrorCode::InvalidArgument, "Invalid group uri").with_argument("uri", v)
            })?)),
            "emailAddress" => return Err(unresolvable_email()),
            _ => return Err(unrecognized(item)),
        }
    }
    if out.is_empty() {
        return Err(unrecognized(value));
    }
    Ok(out)
}

fn split_outside_quotes(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted) = (0usize, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}
