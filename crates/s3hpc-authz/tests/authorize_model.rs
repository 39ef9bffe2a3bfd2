//! Property test: `authorize` against a reference model of the decision order (explicit deny,
//! admin, ownership, policy allow with its limits, ACL grants with IgnorePublicAcls, implicit
//! deny), over random buckets (ownership, public access block, bucket ACL, one of a few policies),
//! objects (owner, ACL) and requests. The model decides the policies by hand, not with the crate.

use proptest::prelude::*;
use s3hpc_authz::{
    Account, Acl, BucketAuth, CannedAcl, ErrorCode, ObjectOwnership, Owner, Principal, PublicAccessBlock, RequestedAcl,
    S3Op, S3OpAuthz, authorize,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Who {
    Anon,
    Own,
    Bob,
    Admin,
}

const OPS: &[S3Op] = &[
    S3Op::GetObject,
    S3Op::PutObject,
    S3Op::DeleteObject,
    S3Op::ListObjects,
    S3Op::GetBucketAcl,
    S3Op::GetObjectAcl,
    S3Op::GetBucketPolicy,
    S3Op::PutObjectTagging,
];
const OWNERSHIPS: &[ObjectOwnership] =
    &[ObjectOwnership::BucketOwnerEnforced, ObjectOwnership::BucketOwnerPreferred, ObjectOwnership::ObjectWriter];
const BUCKET_ACLS: &[CannedAcl] =
    &[CannedAcl::Private, CannedAcl::PublicRead, CannedAcl::PublicReadWrite, CannedAcl::AuthenticatedRead];
const OBJECT_ACLS: &[CannedAcl] = &[CannedAcl::Private, CannedAcl::PublicRead, CannedAcl::BucketOwnerFullControl];
/// 0: none; 1: public GetObject; 2: bob may do anything; 3: bob denied GetObject; 4: bob may
/// GetBucketPolicy; 5: everyone denied DeleteObject and GetBucketPolicy.
const POLICIES: &[&str] = &[
    "",
    r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    r#"{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]}"#,
    r#"{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    r#"{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetBucketPolicy","Resource":"arn:aws:s3:::bkt"}"#,
    r#"{"Effect":"Deny","Principal":"*","Action":["s3:DeleteObject","s3:GetBucketPolicy"],"Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]}"#,
];

#[derive(Debug, Clone)]
struct Case {
    ownership: usize,
    pab: [bool; 4],
    bucket_acl: usize,
    policy: usize,
    object: Option<(bool, usize)>, // (owned by bob, canned)
    who: Who,
    op: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..OWNERSHIPS.len(),
        any::<[bool; 4]>(),
        0..BUCKET_ACLS.len(),
        0..POLICIES.len(),
        proptest::option::of((any::<bool>(), 0..OBJECT_ACLS.len())),
        proptest::sample::select(vec![Who::Anon, Who::Own, Who::Bob, Who::Admin]),
        0..OPS.len(),
    )
        .prop_map(|(ownership, pab, bucket_acl, policy, object, who, op)| Case {
            ownership,
            pab,
            bucket_acl,
            policy,
            object,
            who,
            op,
        })
}

fn principal(w: Who) -> Principal {
    match w {
        Who::Anon => Principal::Anonymous,
        Who::Own => Principal::account("own"),
        Who::Bob => Principal::account("bob"),
        Who::Admin => Principal::Account(Account { id: "root".into(), name: None, admin: true }),
    }
}

/// The model: the rules written out again, plainly.
fn model(c: &Case) -> Result<(), ErrorCode> {
    let op = OPS[c.op];
    let enforced = OWNERSHIPS[c.ownership] == ObjectOwnership::BucketOwnerEnforced;
    let [_, ignore_public, _, restrict] = c.pab;
    // Policy decision, by hand.
    let (deny, allow) = match c.policy {
        1 => (false, op == S3Op::GetObject),
        2 => (false, c.who == Who::Bob),
        3 => (c.who == Who::Bob && op == S3Op::GetObject, false),
        4 => (false, c.who == Who::Bob && op == S3Op::GetBucketPolicy),
        5 => (matches!(op, S3Op::DeleteObject | S3Op::GetBucketPolicy), false),
        _ => (false, false),
    };
    let policy_public = c.policy == 1;
    let policy_op = op == S3Op::GetBucketPolicy;
    if deny && !(policy_op && matches!(c.who, Who::Own | Who::Admin)) {
        return Err(ErrorCode::AccessDenied);
    }
    if c.who == Who::Admin {
        return Ok(());
    }
    let object_owner_is_bob = !enforced && c.object.is_some_and(|(bob, _)| bob);
    let reads_object = matches!(op, S3Op::GetObject | S3Op::GetObjectAcl | S3Op::PutObjectTagging);
    let owner_ok = if reads_object {
        (c.who == Who::Bob && object_owner_is_bob) || (c.who == Who::Own && !object_owner_is_bob)
    } else {
        c.who == Who::Own
    };
    if owner_ok {
        return Ok(());
    }
    if allow && !(restrict && policy_public) && !(reads_object && object_owner_is_bob) {
        return if policy_op { Err(ErrorCode::MethodNotAllowed) } else { Ok(()) };
    }
    if !enforced {
        let public_grant = |canned: CannedAcl, write: bool| -> bool {
            if ignore_public {
                return false;
            }
            match canned {
                CannedAcl::PublicRead => !write,
                CannedAcl::PublicReadWrite => true,
                CannedAcl::AuthenticatedRead => !write && c.who != Who::Anon,
                _ => false,
            }
        };
        let granted = match op {
            S3Op::ListObjects => public_grant(BUCKET_ACLS[c.bucket_acl], false),
            S3Op::PutObject | S3Op::DeleteObject => public_grant(BUCKET_ACLS[c.bucket_acl], true),
            S3Op::GetObject => match c.object {
                Some((bob_owns, canned)) => {
                    let canned = OBJECT_ACLS[canned];
                    public_grant(canned, false)
                        // bucket-owner-full-control on bob's object gives the bucket owner all.
                        || (canned == CannedAcl::BucketOwnerFullControl && bob_owns && c.who == Who::Own)
                }
                None => false,
            },
            S3Op::GetObjectAcl => matches!(c.object, Some((true, 2))) && c.who == Who::Own,
            _ => false,
        };
        if granted {
            return Ok(());
        }
    }
    Err(ErrorCode::AccessDenied)
}

fn build(c: &Case) -> (BucketAuth, Option<Acl>) {
    let mut b = BucketAuth::new(Owner::new("own"));
    b.set_ownership(OWNERSHIPS[c.ownership]).unwrap();
    if !OWNERSHIPS[c.ownership].acls_disabled() {
        b.put_bucket_acl(&RequestedAcl::Canned(BUCKET_ACLS[c.bucket_acl]), None).unwrap();
    }
    if c.policy > 0 {
        b.put_policy(&format!(r#"{{"Version":"2012-10-17","Statement":[{}]}}"#, POLICIES[c.policy]), "bkt", None)
            .unwrap();
    }
    let [block_public_acls, ignore_public_acls, block_public_policy, restrict_public_buckets] = c.pab;
    b.public_access_block =
        Some(PublicAccessBlock { block_public_acls, ignore_public_acls, block_public_policy, restrict_public_buckets });
    let object = c.object.map(|(bob, canned)| {
        let owner = Owner::new(if bob { "bob" } else { "own" });
        OBJECT_ACLS[canned].expand(&owner, b.owner(), true)
    });
    (b, object)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    #[test]
    fn authorize_agrees_with_model(c in case()) {
        let (b, object) = build(&c);
        let op = OPS[c.op];
        let ctx = op.context(principal(c.who), "bkt", Some("k"), false);
        let got = authorize(op, &ctx, &b, object.as_ref()).map(|_| ()).map_err(|e| e.code);
        prop_assert_eq!(got, model(&c), "{:?}", c);
    }
}
