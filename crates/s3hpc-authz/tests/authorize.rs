//! The per-request decision and the PUT-time ACL rules.

use s3hpc_authz::acl::ANONYMOUS_OWNER_ID;
use s3hpc_authz::{
    Account, Acl, BucketAuth, CannedAcl, ErrorCode, Grant, Grantee, Grounds, Group, ObjectOwnership, Owner, Permission,
    Principal, PublicAccessBlock, RequestedAcl, S3Op, S3OpAuthz, authorize, authorize_service,
};

fn owner() -> Principal {
    Principal::account("own")
}
fn bob() -> Principal {
    Principal::account("bob")
}
fn admin() -> Principal {
    Principal::Account(Account { id: "root".into(), name: None, admin: true })
}

fn bucket() -> BucketAuth {
    BucketAuth::new(Owner::new("own"))
}

fn run(op: S3Op, who: Principal, b: &BucketAuth, key: Option<&str>, obj: Option<&Acl>) -> Result<Grounds, ErrorCode> {
    authorize(op, &op.context(who, "bkt", key, false), b, obj).map_err(|e| e.code)
}

fn with_policy(b: &mut BucketAuth, stmts: &str) {
    b.put_policy(&format!(r#"{{"Version":"2012-10-17","Statement":[{stmts}]}}"#), "bkt", None).unwrap();
}

const PUBLIC_READ: &str =
    r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#;

#[test]
fn owner_may_do_everything_others_nothing() {
    let b = bucket();
    for op in [S3Op::ListObjectsV2, S3Op::PutBucketAcl, S3Op::DeleteBucket, S3Op::GetBucketPolicy] {
        assert_eq!(run(op, owner(), &b, None, None), Ok(Grounds::Owner), "{op:?}");
        assert_eq!(run(op, bob(), &b, None, None), Err(ErrorCode::AccessDenied), "{op:?}");
        assert_eq!(run(op, Principal::Anonymous, &b, None, None), Err(ErrorCode::AccessDenied), "{op:?}");
    }
    for op in [S3Op::GetObject, S3Op::PutObject, S3Op::DeleteObject, S3Op::PutObjectTagging] {
        assert_eq!(run(op, owner(), &b, Some("k"), None), Ok(Grounds::Owner), "{op:?}");
        assert_eq!(run(op, bob(), &b, Some("k"), None), Err(ErrorCode::AccessDenied), "{op:?}");
    }
}

#[test]
fn admin_is_allowed_everywhere() {
    let b = bucket();
    assert_eq!(run(S3Op::GetObject, admin(), &b, Some("k"), None), Ok(Grounds::Admin));
    assert_eq!(run(S3Op::DeleteBucket, admin(), &b, None, None), Ok(Grounds::Admin));
    assert!(b.listed_for(&admin()));
    assert!(b.listed_for(&owner()));
    assert!(!b.listed_for(&bob()));
    assert!(!b.listed_for(&Principal::Anonymous));
}

#[test]
fn service_operations_need_an_account() {
    assert_eq!(authorize_service(S3Op::ListBuckets, &Principal::Anonymous).unwrap_err().code, ErrorCode::AccessDenied);
    assert_eq!(authorize_service(S3Op::CreateBucket, &bob()), Ok(Grounds::Owner));
    assert_eq!(authorize_service(S3Op::GetObject, &bob()).unwrap_err().code, ErrorCode::AccessDenied);
    let ctx = S3Op::CreateBucket.context(Principal::Anonymous, "x", None, false);
    assert_eq!(authorize(S3Op::CreateBucket, &ctx, &bucket(), None).unwrap_err().code, ErrorCode::AccessDenied);
}

#[test]
fn policy_allows_others_and_anonymous() {
    let mut b = bucket();
    with_policy(&mut b, PUBLIC_READ);
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), None), Ok(Grounds::Policy));
    assert_eq!(run(S3Op::HeadObject, Principal::Anonymous, &b, Some("k"), None), Ok(Grounds::Policy));
    assert_eq!(run(S3Op::PutObject, bob(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::ListObjects, bob(), &b, None, None), Err(ErrorCode::AccessDenied));
}

#[test]
fn explicit_deny_binds_the_owner_too() {
    let mut b = bucket();
    with_policy(
        &mut b,
        r#"{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]}"#,
    );
    assert_eq!(run(S3Op::GetObject, owner(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::ListObjectsV2, owner(), &b, None, None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::GetObject, admin(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
    // Lock-out protection: the owner and admins can still manage the policy.
    for op in [S3Op::GetBucketPolicy, S3Op::PutBucketPolicy, S3Op::DeleteBucketPolicy] {
        assert_eq!(run(op, owner(), &b, None, None), Ok(Grounds::Owner), "{op:?}");
        assert_eq!(run(op, admin(), &b, None, None), Ok(Grounds::Admin), "{op:?}");
        assert_eq!(run(op, bob(), &b, None, None), Err(ErrorCode::AccessDenied), "{op:?}");
    }
}

#[test]
fn deny_beats_acl_and_policy_allow() {
    let mut b = bucket();
    b.ownership = ObjectOwnership::ObjectWriter;
    b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt"},
           {"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt"}"#,
    );
    assert_eq!(run(S3Op::ListObjects, bob(), &b, None, None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::ListObjects, Principal::account("carol"), &b, None, None), Ok(Grounds::Policy));
}

#[test]
fn policy_operations_by_other_accounts_are_method_not_allowed() {
    let mut b = bucket();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":["s3:GetBucketPolicy","s3:GetBucketAcl"],"Resource":"arn:aws:s3:::bkt"}"#,
    );
    assert_eq!(run(S3Op::GetBucketPolicy, bob(), &b, None, None), Err(ErrorCode::MethodNotAllowed));
    assert_eq!(ErrorCode::MethodNotAllowed.http_status(), 405);
    assert_eq!(run(S3Op::GetBucketAcl, bob(), &b, None, None), Ok(Grounds::Policy));
}

#[test]
fn acls_count_only_when_enabled() {
    let mut b = bucket();
    let obj = CannedAcl::PublicRead.expand(&Owner::new("own"), &Owner::new("own"), true);
    // BucketOwnerEnforced (default): ACL grants are ignored.
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), Some(&obj)), Err(ErrorCode::AccessDenied));
    b.set_ownership(ObjectOwnership::BucketOwnerPreferred).unwrap();
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), Some(&obj)), Ok(Grounds::Acl));
    assert_eq!(run(S3Op::GetObject, Principal::Anonymous, &b, Some("k"), Some(&obj)), Ok(Grounds::Acl));
    assert_eq!(run(S3Op::GetObjectAcl, bob(), &b, Some("k"), Some(&obj)), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
}

#[test]
fn bucket_acl_grants_bucket_permissions() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    let grants = vec![
        Grant {
            grantee: Grantee::CanonicalUser { id: "bob".into(), display_name: None },
            permission: Permission::Write,
        },
        Grant { grantee: Grantee::Group(Group::AuthenticatedUsers), permission: Permission::Read },
    ];
    b.put_bucket_acl(&RequestedAcl::Grants(grants), None).unwrap();
    assert_eq!(run(S3Op::PutObject, bob(), &b, Some("k"), None), Ok(Grounds::Acl));
    assert_eq!(run(S3Op::DeleteObject, bob(), &b, Some("k"), None), Ok(Grounds::Acl));
    assert_eq!(run(S3Op::ListObjectsV2, Principal::account("carol"), &b, None, None), Ok(Grounds::Acl));
    assert_eq!(run(S3Op::ListObjectsV2, Principal::Anonymous, &b, None, None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::GetBucketAcl, bob(), &b, None, None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::PutBucketPolicy, bob(), &b, None, None), Err(ErrorCode::AccessDenied));
}

#[test]
fn object_owner_rules_with_acls_enabled() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    let bobs = Acl::private(Owner::new("bob"));
    // The object owner has its object; the bucket owner does not read it...
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), Some(&bobs)), Ok(Grounds::Owner));
    assert_eq!(run(S3Op::PutObjectTagging, bob(), &b, Some("k"), Some(&bobs)), Ok(Grounds::Owner));
    assert_eq!(run(S3Op::GetObject, owner(), &b, Some("k"), Some(&bobs)), Err(ErrorCode::AccessDenied));
    // ...but may delete it (WRITE on the bucket).
    assert_eq!(run(S3Op::DeleteObject, owner(), &b, Some("k"), Some(&bobs)), Ok(Grounds::Owner));
    // A policy Allow does not reach objects the bucket owner does not own.
    with_policy(&mut b, PUBLIC_READ);
    assert_eq!(
        run(S3Op::GetObject, Principal::account("carol"), &b, Some("k"), Some(&bobs)),
        Err(ErrorCode::AccessDenied)
    );
    let owned = Acl::private(Owner::new("own"));
    assert_eq!(run(S3Op::GetObject, Principal::account("carol"), &b, Some("k"), Some(&owned)), Ok(Grounds::Policy));
}

#[test]
fn ignore_public_acls() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap();
    assert_eq!(run(S3Op::ListObjects, Principal::Anonymous, &b, None, None), Ok(Grounds::Acl));
    b.public_access_block = Some(PublicAccessBlock { ignore_public_acls: true, ..Default::default() });
    assert_eq!(run(S3Op::ListObjects, Principal::Anonymous, &b, None, None), Err(ErrorCode::AccessDenied));
}

#[test]
fn restrict_public_buckets() {
    let mut b = bucket();
    with_policy(&mut b, PUBLIC_READ);
    b.public_access_block = Some(PublicAccessBlock { restrict_public_buckets: true, ..Default::default() });
    assert_eq!(run(S3Op::GetObject, Principal::Anonymous, &b, Some("k"), None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
    assert_eq!(run(S3Op::GetObject, owner(), &b, Some("k"), None), Ok(Grounds::Owner));
    // A non-public policy still grants.
    let mut b = bucket();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    b.public_access_block = Some(PublicAccessBlock { restrict_public_buckets: true, ..Default::default() });
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), None), Ok(Grounds::Policy));
}

#[test]
fn block_public_policy() {
    let mut b = bucket();
    b.public_access_block = Some(PublicAccessBlock { block_public_policy: true, ..Default::default() });
    let public = format!(r#"{{"Statement":[{PUBLIC_READ}]}}"#);
    assert_eq!(b.put_policy(&public, "bkt", None).unwrap_err().code, ErrorCode::AccessDenied);
    assert!(b.policy.is_none());
    let private = r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}"#;
    b.put_policy(private, "bkt", None).unwrap();
    assert_eq!(b.policy_is_public(), Some(false));
    b.public_access_block = None;
    b.put_policy(&public, "bkt", None).unwrap();
    assert_eq!(b.policy_is_public(), Some(true));
    assert_eq!(b.policy.as_deref(), Some(public.as_str()));
    b.delete_policy();
    assert_eq!(b.policy_is_public(), None);
    assert_eq!(run(S3Op::GetObject, bob(), &b, Some("k"), None), Err(ErrorCode::AccessDenied));
}

#[test]
fn put_policy_validates_against_the_bucket() {
    let mut b = bucket();
    let other = r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}"#;
    let e = b.put_policy(other, "bkt", None).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::MalformedPolicy, "Policy has invalid resource"));
}

#[test]
fn objects_in_enforced_buckets_take_only_bucket_owner_full_control() {
    let b = bucket();
    for ok in [RequestedAcl::None, RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl)] {
        let acl = b.new_object_acl(&bob(), &ok).unwrap();
        assert_eq!(acl, Acl::private(Owner::new("own")), "{ok:?}");
    }
    let fc_owner = RequestedAcl::Grants(vec![Grant {
        grantee: Grantee::CanonicalUser { id: "own".into(), display_name: None },
        permission: Permission::FullControl,
    }]);
    assert!(b.new_object_acl(&bob(), &fc_owner).is_ok());
    for bad in [
        RequestedAcl::Canned(CannedAcl::PublicRead),
        RequestedAcl::Canned(CannedAcl::Private),
        RequestedAcl::Grants(vec![Grant { grantee: Grantee::Group(Group::AllUsers), permission: Permission::Read }]),
    ] {
        let e = b.new_object_acl(&bob(), &bad).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::AccessControlListNotSupported, "The bucket does not allow ACLs")
        );
        assert_eq!(e.http_status(), 400);
    }
}

#[test]
fn object_owner_by_ownership_setting() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    let bfc = RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl);
    assert_eq!(b.new_object_acl(&bob(), &bfc).unwrap().owner.id, "bob");
    assert_eq!(b.new_object_acl(&Principal::Anonymous, &RequestedAcl::None).unwrap().owner.id, ANONYMOUS_OWNER_ID);
    b.set_ownership(ObjectOwnership::BucketOwnerPreferred).unwrap();
    assert_eq!(b.new_object_acl(&bob(), &bfc).unwrap().owner.id, "own");
    assert_eq!(b.new_object_acl(&bob(), &RequestedAcl::None).unwrap().owner.id, "bob");
    let pr = b.new_object_acl(&bob(), &RequestedAcl::Canned(CannedAcl::PublicRead)).unwrap();
    assert!(pr.is_public());
    b.public_access_block = Some(PublicAccessBlock { block_public_acls: true, ..Default::default() });
    let e = b.new_object_acl(&bob(), &RequestedAcl::Canned(CannedAcl::PublicRead)).unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
}

#[test]
fn put_bucket_acl_rules() {
    let mut b = bucket();
    // Enforced: only private-equivalent ACLs.
    assert!(b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::Private), None).is_ok());
    assert_eq!(
        b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap_err().code,
        ErrorCode::AccessControlListNotSupported
    );
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    b.public_access_block = Some(PublicAccessBlock { block_public_acls: true, ..Default::default() });
    assert_eq!(
        b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::AuthenticatedRead), None).unwrap_err().code,
        ErrorCode::AccessDenied
    );
    b.public_access_block = None;
    // A document naming another owner is refused.
    let doc = Acl::private(Owner::new("bob"));
    assert_eq!(b.put_bucket_acl(&RequestedAcl::None, Some(doc)).unwrap_err().code, ErrorCode::AccessDenied);
    let doc = CannedAcl::PublicRead.expand(&Owner::new("own"), &Owner::new("own"), false);
    b.put_bucket_acl(&RequestedAcl::None, Some(doc.clone())).unwrap();
    assert_eq!(b.effective_bucket_acl(), doc);
    // Going back to Enforced needs the ACL private first.
    let e = b.set_ownership(ObjectOwnership::BucketOwnerEnforced).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidBucketAclWithObjectOwnership);
    b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::Private), None).unwrap();
    b.set_ownership(ObjectOwnership::BucketOwnerEnforced).unwrap();
}

#[test]
fn put_object_acl_rules() {
    let mut b = bucket();
    let stored = Acl::private(Owner::new("own"));
    assert_eq!(
        b.put_object_acl(Some(&stored), &RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap_err().code,
        ErrorCode::AccessControlListNotSupported
    );
    assert!(b.put_object_acl(Some(&stored), &RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl), None).is_ok());
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    let bobs = Acl::private(Owner::new("bob"));
    let new = b.put_object_acl(Some(&bobs), &RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap();
    assert_eq!(new.owner.id, "bob");
    assert!(new.is_public());
    let e = b.put_object_acl(Some(&bobs), &RequestedAcl::None, Some(Acl::private(Owner::new("own")))).unwrap_err();
    assert_eq!(e.code, ErrorCode::AccessDenied);
    b.public_access_block = Some(PublicAccessBlock { block_public_acls: true, ..Default::default() });
    assert_eq!(
        b.put_object_acl(Some(&bobs), &RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap_err().code,
        ErrorCode::AccessDenied
    );
}

#[test]
fn read_acls_with_acls_disabled_show_owner_full_control() {
    let mut b = bucket();
    let bobs = Acl::private(Owner::new("bob"));
    assert_eq!(b.effective_object_acl(Some(&bobs)), Acl::private(Owner::new("own")));
    assert_eq!(b.effective_object_acl(None), Acl::private(Owner::new("own")));
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    assert_eq!(b.effective_object_acl(Some(&bobs)), bobs);
}

#[test]
fn create_bucket_rules() {
    let b = BucketAuth::for_create(&bob(), &RequestedAcl::None, None).unwrap();
    assert_eq!(b.owner().id, "bob");
    assert_eq!(b.ownership, ObjectOwnership::BucketOwnerEnforced);
    let e = BucketAuth::for_create(&bob(), &RequestedAcl::Canned(CannedAcl::PublicRead), None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidBucketAclWithObjectOwnership);
    assert!(BucketAuth::for_create(&bob(), &RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl), None).is_ok());
    let b = BucketAuth::for_create(
        &bob(),
        &RequestedAcl::Canned(CannedAcl::PublicRead),
        Some(ObjectOwnership::ObjectWriter),
    )
    .unwrap();
    assert!(b.acl.is_public());
    assert_eq!(
        BucketAuth::for_create(&Principal::Anonymous, &RequestedAcl::None, None).unwrap_err().code,
        ErrorCode::AccessDenied
    );
}

#[test]
fn expected_bucket_owner() {
    let b = bucket();
    assert!(b.check_expected_owner(None).is_ok());
    assert!(b.check_expected_owner(Some("own")).is_ok());
    assert_eq!(b.check_expected_owner(Some("bob")).unwrap_err().code, ErrorCode::AccessDenied);
}

#[test]
fn bucket_auth_persists_as_json() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::BucketOwnerPreferred).unwrap();
    b.public_access_block = Some(PublicAccessBlock::ALL_BLOCKED);
    b.public_access_block = None;
    with_policy(&mut b, PUBLIC_READ);
    let j = serde_json::to_string(&b).unwrap();
    let back: BucketAuth = serde_json::from_str(&j).unwrap();
    assert_eq!(back, b);
    // The policy is parsed again on first use.
    assert_eq!(run(S3Op::GetObject, bob(), &back, Some("k"), None), Ok(Grounds::Policy));
    let minimal: BucketAuth = serde_json::from_str(r#"{"acl":{"owner":{"id":"o"},"grants":[]}}"#).unwrap();
    assert_eq!(minimal.ownership, ObjectOwnership::BucketOwnerEnforced);
    assert_eq!(minimal.owner().id, "o");
}

#[test]
fn operation_table() {
    use s3hpc_authz::{AclNeed, Target};
    let cases: &[(S3Op, &str, &str, AclNeed)] = &[
        (S3Op::GetObject, "s3:GetObject", "s3:GetObjectVersion", AclNeed::Object(Permission::Read)),
        (S3Op::HeadObject, "s3:GetObject", "s3:GetObjectVersion", AclNeed::Object(Permission::Read)),
        (S3Op::PutObject, "s3:PutObject", "s3:PutObject", AclNeed::Bucket(Permission::Write)),
        (S3Op::DeleteObject, "s3:DeleteObject", "s3:DeleteObjectVersion", AclNeed::Bucket(Permission::Write)),
        (S3Op::ListObjectsV2, "s3:ListBucket", "s3:ListBucket", AclNeed::Bucket(Permission::Read)),
        (S3Op::HeadBucket, "s3:ListBucket", "s3:ListBucket", AclNeed::Bucket(Permission::Read)),
        (S3Op::GetBucketAcl, "s3:GetBucketAcl", "s3:GetBucketAcl", AclNeed::Bucket(Permission::ReadAcp)),
        (S3Op::PutBucketAcl, "s3:PutBucketAcl", "s3:PutBucketAcl", AclNeed::Bucket(Permission::WriteAcp)),
        (S3Op::GetObjectAcl, "s3:GetObjectAcl", "s3:GetObjectVersionAcl", AclNeed::Object(Permission::ReadAcp)),
        (S3Op::PutObjectAcl, "s3:PutObjectAcl", "s3:PutObjectVersionAcl", AclNeed::Object(Permission::WriteAcp)),
        (
            S3Op::GetObjectTagging,
            "s3:GetObjectTagging",
            "s3:GetObjectVersionTagging",
            AclNeed::Object(Permission::FullControl),
        ),
        (S3Op::PutObjectTagging, "s3:PutObjectTagging", "s3:PutObjectVersionTagging", AclNeed::None),
        (S3Op::DeleteObjectTagging, "s3:DeleteObjectTagging", "s3:DeleteObjectVersionTagging", AclNeed::None),
        (S3Op::UploadPart, "s3:PutObject", "s3:PutObject", AclNeed::Bucket(Permission::Write)),
        (
            S3Op::ListParts,
            "s3:ListMultipartUploadParts",
            "s3:ListMultipartUploadParts",
            AclNeed::Bucket(Permission::Write),
        ),
        (S3Op::DeleteBucketPolicy, "s3:DeleteBucketPolicy", "s3:DeleteBucketPolicy", AclNeed::None),
        (
            S3Op::DeletePublicAccessBlock,
            "s3:PutBucketPublicAccessBlock",
            "s3:PutBucketPublicAccessBlock",
            AclNeed::None,
        ),
    ];
    for &(op, action, versioned, need) in cases {
        assert_eq!(op.action(false), action, "{op:?}");
        assert_eq!(op.action(true), versioned, "{op:?}");
        assert_eq!(op.acl_need(), need, "{op:?}");
        // Every action an operation needs is one a policy may name.
        assert!(s3hpc_authz::actions::resource_kind(action).is_some(), "{action}");
    }
    assert_eq!(S3Op::ListBuckets.target(), Target::Service);
    assert_eq!(S3Op::GetObjectTagging.target(), Target::Object);
    let ctx = S3Op::ListObjects.context(bob(), "bkt", Some("ignored"), false);
    assert_eq!(ctx.resource_arn(), "arn:aws:s3:::bkt");
    let ctx = S3Op::GetObject.context(bob(), "bkt", Some("a/b"), false);
    assert_eq!(ctx.resource_arn(), "arn:aws:s3:::bkt/a/b");
}

#[test]
fn admin_only_buckets() {
    let b = BucketAuth::admin_only();
    assert_eq!(run(S3Op::ListObjects, admin(), &b, None, None), Ok(Grounds::Admin));
    assert_eq!(run(S3Op::ListObjects, owner(), &b, None, None), Err(ErrorCode::AccessDenied));
    assert!(!b.listed_for(&owner()));
    assert!(b.listed_for(&admin()));
}

#[test]
fn writes_into_the_bucket_are_not_limited_by_object_ownership() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":{"AWS":"carol"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    let bobs = Acl::private(Owner::new("bob"));
    assert_eq!(run(S3Op::DeleteObject, Principal::account("carol"), &b, Some("k"), Some(&bobs)), Ok(Grounds::Policy));
}

#[test]
fn request_keys_from_headers_and_listing() {
    use s3hpc_authz::AclHeaders;
    let mut b = bucket();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringEquals":{"s3:prefix":"pub/","s3:delimiter":"/"},"NumericLessThanEquals":{"s3:max-keys":100}}},
           {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*","Condition":{"StringLike":{"s3:x-amz-acl":"public*"}}},
           {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    let list = |p, d, m| {
        let ctx = S3Op::ListObjectsV2.context(bob(), "bkt", None, false).with_list_params(p, d, m);
        authorize(S3Op::ListObjectsV2, &ctx, &b, None).map_err(|e| e.code)
    };
    assert_eq!(list(Some("pub/"), Some("/"), Some(100)), Ok(Grounds::Policy));
    assert_eq!(list(Some("pub/"), Some("/"), Some(1000)), Err(ErrorCode::AccessDenied));
    assert_eq!(list(Some("priv/"), Some("/"), None), Err(ErrorCode::AccessDenied));
    assert_eq!(list(Some("pub/"), None, None), Err(ErrorCode::AccessDenied));
    let put = |h: AclHeaders<'_>| {
        let ctx = S3Op::PutObject.context(bob(), "bkt", Some("k"), false).with_acl_headers(&h);
        authorize(S3Op::PutObject, &ctx, &b, None).map_err(|e| e.code)
    };
    assert_eq!(put(AclHeaders::default()), Ok(Grounds::Policy));
    assert_eq!(put(AclHeaders { canned: Some("private"), ..Default::default() }), Ok(Grounds::Policy));
    assert_eq!(put(AclHeaders { canned: Some("public-read"), ..Default::default() }), Err(ErrorCode::AccessDenied));
}

#[test]
fn missing_keys_are_404_only_to_who_may_list_them() {
    use s3hpc_authz::reveals_missing_key;
    let mut b = bucket();
    with_policy(
        &mut b,
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"},
           {"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringLike":{"s3:prefix":"public/*"}}}"#,
    );
    let head = |who: Principal, key: &str| S3Op::HeadObject.context(who, "bkt", Some(key), false);
    assert!(reveals_missing_key(&head(bob(), "public/object"), &b));
    assert!(!reveals_missing_key(&head(bob(), "private/object"), &b));
    assert!(reveals_missing_key(&head(Principal::Anonymous, "public/x"), &b));
    assert!(reveals_missing_key(&head(owner(), "private/object"), &bucket()));
    assert!(!reveals_missing_key(&head(bob(), "public/object"), &bucket()));
}

#[test]
fn readme_json_example_is_what_serde_reads() {
    let readme = include_str!("../README.md");
    let start = readme.find(r#"{"acl":"#).unwrap();
    let end = start + readme[start..].find("\n```").unwrap();
    let json: String = readme[start..end].lines().map(str::trim).collect();
    let json = json.replace(r#""policy":"{...as put...}","#, "");
    let b: BucketAuth = serde_json::from_str(&json).unwrap();
    assert_eq!(b.owner().id, "alice");
    assert_eq!(b.public_access_block, Some(PublicAccessBlock::ALL_BLOCKED));
    assert_eq!(serde_json::to_value(&b).unwrap(), serde_json::from_str::<serde_json::Value>(&json).unwrap());
}

#[test]
fn put_acl_takes_headers_or_a_document() {
    let mut b = bucket();
    b.set_ownership(ObjectOwnership::ObjectWriter).unwrap();
    let doc = Acl::private(Owner::new("own"));
    let e = b.put_bucket_acl(&RequestedAcl::None, None).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ErrorCode::MissingSecurityHeader, "Your request was missing a required header")
    );
    assert_eq!(e.extra, vec![("MissingHeaderName", "x-amz-acl".to_owned())]);
    let e = b.put_bucket_acl(&RequestedAcl::Canned(CannedAcl::Private), Some(doc.clone())).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::UnexpectedContent, "This request does not support content"));
    assert_eq!(
        b.put_object_acl(Some(&doc), &RequestedAcl::None, None).unwrap_err().code,
        ErrorCode::MissingSecurityHeader
    );
    assert_eq!(
        b.put_object_acl(Some(&doc), &RequestedAcl::Canned(CannedAcl::Private), Some(doc.clone())).unwrap_err().code,
        ErrorCode::UnexpectedContent
    );
    assert!(b.put_object_acl(Some(&doc), &RequestedAcl::None, Some(doc.clone())).is_ok());
}
