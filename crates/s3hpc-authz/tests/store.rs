//! The authorizing store over the memory backend: each S3 rule the front ends rely on, checked
//! from the outside (each test fails when its rule is removed from `Authorized`).

use std::sync::Arc;

use s3hpc_authz::Authorized;
use s3hpc_core::caller::{self, Account, Caller, CallerHeaders};
use s3hpc_core::memory::MemoryStore;
use s3hpc_core::*;

struct World {
    store: Arc<Authorized>,
    inner: DynStore,
    creds: CredentialSet,
}

fn account(id: &str, admin: bool) -> Account {
    Account { id: id.into(), name: Some(id.into()), admin, uid: None }
}

fn world() -> World {
    let mut creds = CredentialSet::default();
    for (key, id, admin) in [("AKA", "alice", false), ("AKB", "bob", false), ("AKROOT", "root", true)] {
        creds.insert(Credentials::new(key, "secret"));
        creds.set_account(key, account(id, admin));
    }
    let inner: DynStore = Arc::new(MemoryStore::new());
    World { store: Arc::new(Authorized::new(inner.clone(), creds.clone())), inner, creds }
}

fn who(id: &str) -> Option<Arc<Caller>> {
    Some(Arc::new(Caller::account(Arc::new(account(id, id == "root")))))
}

fn anon() -> Option<Arc<Caller>> {
    Some(Arc::new(Caller::anonymous()))
}

fn with_headers(id: &str, headers: CallerHeaders) -> Option<Arc<Caller>> {
    let mut c = Caller::account(Arc::new(account(id, id == "root")));
    c.headers = headers;
    Some(Arc::new(c))
}

async fn as_<T>(c: Option<Arc<Caller>>, f: impl std::future::Future<Output = T>) -> T {
    caller::scope(c, f).await
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> ErrorCode {
    r.expect_err("expected an error").code
}

async fn put(s: &dyn Store, b: &str, k: &str) -> Result<PutObjectOutput> {
    s.put_object(b, k, PutObjectRequest::default(), Body::from(&b"data"[..])).await
}

async fn get(s: &dyn Store, b: &str, k: &str) -> Result<GetObjectOutput> {
    s.get_object(b, k, GetObjectRequest::default()).await
}

const PUBLIC_READ: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::abkt/*"}]}"#;

#[tokio::test]
async fn no_caller_is_refused() {
    let w = world();
    assert_eq!(code(w.store.create_bucket("abkt").await), ErrorCode::AccessDenied);
    assert_eq!(code(w.store.list_buckets().await), ErrorCode::AccessDenied);
}

#[tokio::test]
async fn owner_is_recorded_and_others_are_refused() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "k").await.unwrap();
        get(s, "abkt", "k").await.unwrap();
    })
    .await;
    as_(who("bob"), async {
        assert_eq!(code(get(s, "abkt", "k").await), ErrorCode::AccessDenied);
        assert_eq!(code(put(s, "abkt", "x").await), ErrorCode::AccessDenied);
        assert_eq!(code(s.delete_object("abkt", "k").await), ErrorCode::AccessDenied);
        assert_eq!(code(s.list_objects("abkt", ListObjectsRequest::default()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.head_bucket("abkt").await), ErrorCode::AccessDenied);
        assert_eq!(code(s.delete_bucket("abkt").await), ErrorCode::AccessDenied);
        assert_eq!(
            code(s.put_bucket_config("abkt", "policy", Some(PUBLIC_READ.into())).await),
            ErrorCode::AccessDenied
        );
        // The name is taken by someone else.
        assert_eq!(code(s.create_bucket("abkt").await), ErrorCode::BucketAlreadyExists);
    })
    .await;
    as_(who("alice"), async {
        assert_eq!(code(s.create_bucket("abkt").await), ErrorCode::BucketAlreadyOwnedByYou);
    })
    .await;
    // An admin may do everything.
    as_(who("root"), async {
        get(s, "abkt", "k").await.unwrap();
        s.list_objects("abkt", ListObjectsRequest::default()).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn list_buckets_shows_the_callers_own() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), s.create_bucket("abkt")).await.unwrap();
    as_(who("bob"), s.create_bucket("bbkt")).await.unwrap();
    let names = |v: Vec<BucketInfo>| v.into_iter().map(|b| b.name).collect::<Vec<_>>();
    assert_eq!(names(as_(who("alice"), s.list_buckets()).await.unwrap()), ["abkt"]);
    assert_eq!(names(as_(who("bob"), s.list_buckets()).await.unwrap()), ["bbkt"]);
    assert_eq!(names(as_(who("root"), s.list_buckets()).await.unwrap()), ["abkt", "bbkt"]);
    assert_eq!(code(as_(anon(), s.list_buckets()).await), ErrorCode::AccessDenied);
    assert_eq!(code(as_(anon(), s.create_bucket("cbkt")).await), ErrorCode::AccessDenied);
}

#[tokio::test]
async fn public_read_policy_lets_others_read_only() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "k").await.unwrap();
        s.put_bucket_config("abkt", "policy", Some(PUBLIC_READ.into())).await.unwrap();
    })
    .await;
    for c in [who("bob"), anon()] {
        as_(c, async {
            get(s, "abkt", "k").await.unwrap();
            assert_eq!(code(put(s, "abkt", "k").await), ErrorCode::AccessDenied);
            assert_eq!(code(s.delete_object("abkt", "k").await), ErrorCode::AccessDenied);
            assert_eq!(code(s.get_bucket_config("abkt", "policy").await), ErrorCode::AccessDenied);
            // Without s3:ListBucket a missing key is 403, not 404 (S3 hides what does not exist).
            assert_eq!(code(get(s, "abkt", "missing").await), ErrorCode::AccessDenied);
        })
        .await;
    }
    as_(who("alice"), async {
        assert_eq!(code(get(s, "abkt", "missing").await), ErrorCode::NoSuchKey);
        let status = s.get_bucket_config("abkt", "policyStatus").await.unwrap().unwrap();
        assert!(String::from_utf8(status).unwrap().contains("<IsPublic>true</IsPublic>"));
        s.put_bucket_config("abkt", "policy", None).await.unwrap();
        assert_eq!(code(s.get_bucket_config("abkt", "policy").await), ErrorCode::NoSuchBucketPolicy);
    })
    .await;
    as_(anon(), async { assert_eq!(code(get(s, "abkt", "k").await), ErrorCode::AccessDenied) }).await;
}

#[tokio::test]
async fn explicit_deny_binds_the_owner_but_not_for_the_policy_itself() {
    let w = world();
    let s = &*w.store;
    let deny = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::abkt/*"}]}"#;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "k").await.unwrap();
        s.put_bucket_config("abkt", "policy", Some(deny.into())).await.unwrap();
        assert_eq!(code(s.delete_object("abkt", "k").await), ErrorCode::AccessDenied);
        s.put_bucket_config("abkt", "policy", None).await.unwrap();
        s.delete_object("abkt", "k").await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn malformed_policy_is_refused() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        assert_eq!(
            code(s.put_bucket_config("abkt", "policy", Some(b"nope".to_vec())).await),
            ErrorCode::MalformedPolicy
        );
        let other = PUBLIC_READ.replace("abkt", "otherbkt");
        assert_eq!(code(s.put_bucket_config("abkt", "policy", Some(other.into())).await), ErrorCode::MalformedPolicy);
    })
    .await;
}

#[tokio::test]
async fn expected_bucket_owner_is_checked() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), s.create_bucket("abkt")).await.unwrap();
    let h = |v: &str| CallerHeaders { expected_bucket_owner: Some(v.into()), ..Default::default() };
    as_(with_headers("alice", h("alice")), s.head_bucket("abkt")).await.unwrap();
    assert_eq!(code(as_(with_headers("alice", h("bob")), s.head_bucket("abkt")).await), ErrorCode::AccessDenied);
}

#[tokio::test]
async fn copy_needs_read_access_to_the_source() {
    let w = world();
    let s = &*w.store;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "secret").await.unwrap();
    })
    .await;
    as_(who("bob"), async {
        s.create_bucket("bbkt").await.unwrap();
        let r = s.copy_object("abkt", "secret", "bbkt", "stolen", CopyObjectRequest::default()).await;
        assert_eq!(code(r), ErrorCode::AccessDenied);
        let up = s.create_multipart_upload("bbkt", "m", CreateMultipartRequest::default()).await.unwrap();
        let src = PartCopySource { bucket: "abkt".into(), key: "secret".into(), ..Default::default() };
        let r = s.upload_part_copy("bbkt", "m", &up, 1, src).await;
        assert_eq!(code(r), ErrorCode::AccessDenied);
        // Nor may bob rename within alice's bucket.
        let r = s.rename_object("abkt", "secret", "moved", RenameObjectRequest::default()).await;
        assert_eq!(code(r), ErrorCode::AccessDenied);
    })
    .await;
}

#[tokio::test]
async fn acls_follow_object_ownership() {
    let w = world();
    let s = &*w.store;
    let acl = |v: &str| CallerHeaders { acl: vec![("x-amz-acl".into(), v.into())], ..Default::default() };
    as_(who("alice"), s.create_bucket("abkt")).await.unwrap();
    // BucketOwnerEnforced (the default): ACLs are refused, even private.
    let r = as_(with_headers("alice", acl("public-read")), put(s, "abkt", "k")).await;
    assert_eq!(code(r), ErrorCode::AccessControlListNotSupported);
    let r = as_(with_headers("alice", acl("public-read")), s.put_bucket_config("abkt", "acl", None)).await;
    assert_eq!(code(r), ErrorCode::AccessControlListNotSupported);
    // A bucket created with `x-amz-acl: private` keeps ACLs enabled (as S3 and rclone expect).
    as_(with_headers("alice", acl("private")), s.create_bucket("pbkt")).await.unwrap();
    as_(with_headers("alice", acl("private")), put(s, "pbkt", "k")).await.unwrap();
    let own = as_(who("alice"), s.get_bucket_config("pbkt", "ownershipControls")).await.unwrap().unwrap();
    assert!(String::from_utf8(own).unwrap().contains("BucketOwnerPreferred"));
    // A public-read bucket ACL lets bob list.
    as_(with_headers("alice", acl("public-read")), s.put_bucket_config("pbkt", "acl", None)).await.unwrap();
    as_(who("bob"), s.list_objects("pbkt", ListObjectsRequest::default())).await.unwrap();
    as_(anon(), s.list_objects("pbkt", ListObjectsRequest::default())).await.unwrap();
    assert_eq!(code(as_(who("bob"), put(s, "pbkt", "x")).await), ErrorCode::AccessDenied);
    // Block Public Access ignores that grant once set.
    let pab =
        b"<PublicAccessBlockConfiguration><IgnorePublicAcls>true</IgnorePublicAcls></PublicAccessBlockConfiguration>";
    as_(who("alice"), s.put_bucket_config("pbkt", "publicAccessBlock", Some(pab.to_vec()))).await.unwrap();
    let r = as_(anon(), s.list_objects("pbkt", ListObjectsRequest::default())).await;
    assert_eq!(code(r), ErrorCode::AccessDenied);
}

#[tokio::test]
async fn buckets_without_a_record_belong_to_admins() {
    let w = world();
    // Made behind the authorizing store's back (a directory made outside S3).
    w.inner.create_bucket("legacy").await.unwrap();
    let s = &*w.store;
    assert_eq!(
        code(as_(who("alice"), s.list_objects("legacy", ListObjectsRequest::default())).await),
        ErrorCode::AccessDenied
    );
    as_(who("root"), s.list_objects("legacy", ListObjectsRequest::default())).await.unwrap();
    assert!(as_(who("alice"), s.list_buckets()).await.unwrap().is_empty());
}

#[tokio::test]
async fn another_gateway_sees_a_policy_change_within_the_cache_time() {
    let w = world();
    let other = Authorized::new(w.inner.clone(), w.creds.clone());
    let s = &*w.store;
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "k").await.unwrap();
    })
    .await;
    assert_eq!(code(as_(who("bob"), get(&other, "abkt", "k")).await), ErrorCode::AccessDenied);
    as_(who("alice"), s.put_bucket_config("abkt", "policy", Some(PUBLIC_READ.into()))).await.unwrap();
    tokio::time::sleep(s3hpc_authz::store::CACHE_TTL + std::time::Duration::from_millis(100)).await;
    as_(who("bob"), get(&other, "abkt", "k")).await.unwrap();
}

/// A request that names a version needs S3's version action: a policy granting s3:GetObject,
/// s3:DeleteObject and s3:PutObject lets bob read, copy and delete the current version, not a
/// named one, until it also
/// grants s3:GetObjectVersion / s3:DeleteObjectVersion.
#[tokio::test]
async fn named_versions_need_the_version_actions() {
    let w = world();
    let s = &*w.store;
    let policy = |actions: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"bob"}},"Action":[{actions}],"Resource":"arn:aws:s3:::abkt/*"}}]}}"#
        )
    };
    let v = as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        s.put_bucket_config("abkt", "versioning", Some(b"Enabled".to_vec())).await.unwrap();
        s.put_bucket_config(
            "abkt",
            "policy",
            Some(policy(r#""s3:GetObject","s3:DeleteObject","s3:PutObject""#).into_bytes()),
        )
        .await
        .unwrap();
        put(s, "abkt", "k").await.unwrap().version_id.unwrap()
    })
    .await;
    let named = GetObjectRequest { version_id: Some(v.clone()), ..Default::default() };
    as_(who("bob"), async {
        get(s, "abkt", "k").await.unwrap();
        assert_eq!(code(s.get_object("abkt", "k", named.clone()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.head_object("abkt", "k", named.clone()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.delete_object_version("abkt", "k", Some(&v)).await), ErrorCode::AccessDenied);
        let cp = CopyObjectRequest { source_version_id: Some(v.clone()), ..Default::default() };
        assert_eq!(code(s.copy_object("abkt", "k", "abkt", "k2", cp).await), ErrorCode::AccessDenied);
        s.copy_object("abkt", "k", "abkt", "k2", CopyObjectRequest::default()).await.unwrap();
    })
    .await;
    let both = r#""s3:GetObject","s3:GetObjectVersion","s3:DeleteObject","s3:DeleteObjectVersion""#;
    as_(who("alice"), async {
        s.put_bucket_config("abkt", "policy", Some(policy(both).into_bytes())).await.unwrap();
    })
    .await;
    as_(who("bob"), async {
        s.get_object("abkt", "k", named.clone()).await.unwrap();
        s.delete_object_version("abkt", "k", Some(&v)).await.unwrap();
    })
    .await;
}

/// Object tagging of a named version needs S3's version actions (s3:GetObjectVersionTagging,
/// s3:PutObjectVersionTagging, s3:DeleteObjectVersionTagging): a policy granting the plain
/// tagging actions lets bob tag the current version, not a named one; denying
/// s3:PutObjectVersionTagging blocks a versioned put only.
#[tokio::test]
async fn version_tagging_needs_the_version_actions() {
    let w = world();
    let s = &*w.store;
    let policy = |allow: &str, deny: &str| {
        let deny = if deny.is_empty() {
            String::new()
        } else {
            format!(
                r#",{{"Effect":"Deny","Principal":{{"AWS":"bob"}},"Action":[{deny}],"Resource":"arn:aws:s3:::abkt/*"}}"#
            )
        };
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"bob"}},"Action":[{allow}],"Resource":"arn:aws:s3:::abkt/*"}}{deny}]}}"#
        )
    };
    let plain = r#""s3:GetObjectTagging","s3:PutObjectTagging","s3:DeleteObjectTagging""#;
    let set_policy = |p: String| async move {
        as_(who("alice"), s.put_bucket_config("abkt", "policy", Some(p.into_bytes()))).await.unwrap();
    };
    let v = as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        s.put_bucket_config("abkt", "versioning", Some(b"Enabled".to_vec())).await.unwrap();
        put(s, "abkt", "k").await.unwrap().version_id.unwrap()
    })
    .await;
    set_policy(policy(plain, "")).await;
    let tags = || vec![("t".to_string(), "v".to_string())];
    as_(who("bob"), async {
        s.put_object_tagging("abkt", "k", None, tags()).await.unwrap();
        s.get_object_tagging("abkt", "k", None).await.unwrap();
        s.delete_object_tagging("abkt", "k", None).await.unwrap();
        assert_eq!(code(s.get_object_tagging("abkt", "k", Some(&v)).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.put_object_tagging("abkt", "k", Some(&v), tags()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.delete_object_tagging("abkt", "k", Some(&v)).await), ErrorCode::AccessDenied);
    })
    .await;
    let all = r#""s3:GetObjectTagging","s3:PutObjectTagging","s3:DeleteObjectTagging","s3:GetObjectVersionTagging","s3:PutObjectVersionTagging","s3:DeleteObjectVersionTagging""#;
    set_policy(policy(all, "")).await;
    as_(who("bob"), async {
        s.put_object_tagging("abkt", "k", Some(&v), tags()).await.unwrap();
        assert_eq!(s.get_object_tagging("abkt", "k", Some(&v)).await.unwrap().tags, tags());
        s.delete_object_tagging("abkt", "k", Some(&v)).await.unwrap();
    })
    .await;
    set_policy(policy(all, r#""s3:PutObjectVersionTagging""#)).await;
    as_(who("bob"), async {
        assert_eq!(code(s.put_object_tagging("abkt", "k", Some(&v), tags()).await), ErrorCode::AccessDenied);
        s.put_object_tagging("abkt", "k", None, tags()).await.unwrap();
        s.get_object_tagging("abkt", "k", Some(&v)).await.unwrap();
        s.delete_object_tagging("abkt", "k", Some(&v)).await.unwrap();
    })
    .await;
    assert_eq!(w.inner.get_object_tagging("abkt", "k", None).await.unwrap().tags, Vec::new());
}

/// s3hpc's file-system extension: reading attributes needs read access to the key (HEAD),
/// changing them, a symlink or a hard link there write access (PUT), a link also read access
/// to its source.
#[tokio::test]
async fn fs_operations_are_authorized_as_head_and_put() {
    use s3hpc_core::fsattr::{FsOp, SetFsAttr};
    let w = world();
    let s = &*w.store;
    let chmod = || FsOp::SetAttr(SetFsAttr { mode: Some(0o600), ..Default::default() });
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        put(s, "abkt", "k").await.unwrap();
        s.put_bucket_config("abkt", "policy", Some(PUBLIC_READ.into())).await.unwrap();
        assert_eq!(s.fs("abkt", "k", chmod()).await.unwrap().mode, 0o600);
    })
    .await;
    as_(who("bob"), async {
        assert_eq!(s.fs("abkt", "k", FsOp::GetAttr).await.unwrap().mode, 0o600);
        assert_eq!(code(s.fs("abkt", "k", chmod()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.fs("abkt", "l", FsOp::Symlink("k".into())).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.fs("abkt", "h", FsOp::Link("k".into())).await), ErrorCode::AccessDenied);
    })
    .await;
    as_(anon(), async {
        assert_eq!(code(s.fs("abkt", "k", chmod()).await), ErrorCode::AccessDenied);
    })
    .await;
    // Nothing changed behind the refusals.
    assert_eq!(w.inner.fs("abkt", "k", FsOp::GetAttr).await.unwrap().mode, 0o600);
    assert!(w.inner.fs("abkt", "l", FsOp::GetAttr).await.is_err());
}

/// The extension's rename reads and deletes its source and writes the key, as RenameObject;
/// its unlink and rmdir delete the key: PutObject alone does not allow them.
#[tokio::test]
async fn fs_rename_and_unlink_need_delete() {
    use s3hpc_core::fsattr::{FsOp, SetFsAttr, SetTime};
    let w = world();
    let s = &*w.store;
    let policy = |actions: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"bob"}},"Action":[{actions}],"Resource":"arn:aws:s3:::abkt/*"}}]}}"#
        )
    };
    let set_policy = |actions: &'static str| {
        let doc = policy(actions).into_bytes();
        as_(who("alice"), async move { s.put_bucket_config("abkt", "policy", Some(doc)).await.unwrap() })
    };
    as_(who("alice"), async {
        s.create_bucket("abkt").await.unwrap();
        s.fs("abkt", "l", FsOp::Symlink("target".into())).await.unwrap();
        s.fs("abkt", "d", FsOp::Mkdir { mode: 0o755, owner: None }).await.unwrap();
    })
    .await;
    set_policy(r#""s3:GetObject","s3:PutObject""#).await;
    let mv = || FsOp::Rename { source: "l".into(), noreplace: false };
    as_(who("bob"), async {
        let touch = FsOp::SetAttr(SetFsAttr { mtime: Some(SetTime::Now), ..Default::default() });
        s.fs("abkt", "l", touch).await.unwrap();
        assert_eq!(code(s.fs("abkt", "l2", mv()).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.fs("abkt", "l", FsOp::Unlink).await), ErrorCode::AccessDenied);
        assert_eq!(code(s.fs("abkt", "d", FsOp::Rmdir).await), ErrorCode::AccessDenied);
    })
    .await;
    assert!(w.inner.fs("abkt", "l", FsOp::GetAttr).await.is_ok(), "the refused rename moved the link");
    set_policy(r#""s3:GetObject","s3:PutObject","s3:DeleteObject""#).await;
    as_(who("bob"), async {
        s.fs("abkt", "l2", mv()).await.unwrap();
        s.fs("abkt", "l2", FsOp::Unlink).await.unwrap();
        s.fs("abkt", "d", FsOp::Rmdir).await.unwrap();
    })
    .await;
    assert!(w.inner.fs("abkt", "l2", FsOp::GetAttr).await.is_err());
}
