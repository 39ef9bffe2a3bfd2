//! Identity and S3 authorization cases: one authorizing store seen by several callers (two
//! accounts, an administrator and, where the front end has one, the anonymous caller). The same
//! cases run in process (through [`AsCaller`] handles), through the gateway with the HTTP client
//! and through the binary protocol, so every front end carries who asks the same way.

use std::sync::Arc;

use s3hpc_core::caller::{self, Account, Caller};
use s3hpc_core::layer::{Call, Layer, OpFuture};
use s3hpc_core::*;

/// The accounts the cases use: (access key, secret, canonical id, admin).
pub const ACCOUNTS: [(&str, &str, &str, bool); 3] = [
    ("ACCESSALICE000000001", "alice/secret/0123456789", "alice-id", false),
    ("ACCESSBOB00000000001", "bob/secret/0123456789", "bob-id", false),
    ("ACCESSADMIN000000001", "admin/secret/0123456789", "admin-id", true),
];

/// [`ACCOUNTS`] as a server's credential set.
pub fn accounts() -> CredentialSet {
    let mut set = CredentialSet::default();
    for (ak, sk, id, admin) in ACCOUNTS {
        set.insert(Credentials::new(ak, sk));
        set.set_account(ak, Account { id: id.into(), name: None, admin, uid: None });
    }
    set
}

/// [`ACCOUNTS`] as a `--config` users file.
pub fn users_toml() -> String {
    ACCOUNTS
        .iter()
        .map(|(ak, sk, id, admin)| {
            format!("[[users]]\naccess_key = \"{ak}\"\nsecret_key = \"{sk}\"\nid = \"{id}\"\nadmin = {admin}\n")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The same authorizing store, as each caller.
pub struct Callers {
    pub alice: DynStore,
    pub bob: DynStore,
    pub admin: DynStore,
    /// Unsigned requests, where the front end has them.
    pub anonymous: Option<DynStore>,
}

/// Runs every access case; panics naming the first that fails.
pub async fn run_access(c: &Callers) {
    let tag = format!("{:08x}", rand::random::<u32>());
    for (name, r) in [
        ("owners", owners(c, &format!("acc-own-{tag}")).await),
        ("policy", policy(c, &format!("acc-pol-{tag}")).await),
        ("copy_source", copy_source(c, &format!("acc-cpa-{tag}"), &format!("acc-cpb-{tag}")).await),
        ("prefix_rename", prefix_rename(c, &format!("acc-ren-{tag}")).await),
        ("ownership_documents", ownership_documents(c, &format!("acc-doc-{tag}")).await),
    ] {
        if let Err(e) = r {
            panic!("access case {name} failed: {e}");
        }
    }
}

fn expect_code<T>(what: &str, r: Result<T>, code: ErrorCode) -> Result<(), String> {
    match r {
        Err(e) if e.code == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got {e}")),
        Ok(_) => Err(format!("{what}: expected {code}, got success")),
    }
}

fn ok<T>(what: &str, r: Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

async fn put(s: &DynStore, b: &str, k: &str, data: &'static [u8]) -> Result<PutObjectOutput> {
    s.put_object(b, k, PutObjectRequest::default(), Body::from(data)).await
}

async fn read(s: &DynStore, b: &str, k: &str) -> Result<Vec<u8>> {
    let o = s.get_object(b, k, GetObjectRequest::default()).await?;
    Ok(o.body.collect().await?.to_vec())
}

/// Removes the bucket as the administrator.
async fn remove(c: &Callers, bucket: &str) {
    crate::cleanup(&c.admin, bucket).await;
}

async fn owners(c: &Callers, b: &str) -> Result<(), String> {
    ok("alice creates", c.alice.create_bucket(b).await)?;
    let r = async {
        ok("alice puts", put(&c.alice, b, "k", b"alice's").await)?;
        expect_code("bob gets", read(&c.bob, b, "k").await, ErrorCode::AccessDenied)?;
        expect_code("bob puts", put(&c.bob, b, "x", b"x").await, ErrorCode::AccessDenied)?;
        expect_code("bob deletes", c.bob.delete_object(b, "k").await, ErrorCode::AccessDenied)?;
        expect_code("bob lists", c.bob.list_objects(b, ListObjectsRequest::default()).await, ErrorCode::AccessDenied)?;
        expect_code("bob deletes the bucket", c.bob.delete_bucket(b).await, ErrorCode::AccessDenied)?;
        expect_code("bob creates it too", c.bob.create_bucket(b).await, ErrorCode::BucketAlreadyExists)?;
        // Ok from an HTTP gateway in us-east-1 (S3 answers the owner 200 there).
        if let Err(e) = c.alice.create_bucket(b).await {
            expect_code("alice creates it again", Err::<(), _>(e), ErrorCode::BucketAlreadyOwnedByYou)?;
        }
        let listed = |v: Vec<BucketInfo>| v.iter().any(|x| x.name == b);
        if listed(ok("bob lists buckets", c.bob.list_buckets().await)?) {
            return Err("bob's ListBuckets shows alice's bucket".into());
        }
        if !listed(ok("alice lists buckets", c.alice.list_buckets().await)?) {
            return Err("alice's ListBuckets misses her bucket".into());
        }
        if !listed(ok("admin lists buckets", c.admin.list_buckets().await)?) {
            return Err("the admin's ListBuckets misses alice's bucket".into());
        }
        if ok("admin reads", read(&c.admin, b, "k").await)? != b"alice's" {
            return Err("admin read other bytes".into());
        }
        if let Some(anon) = &c.anonymous {
            expect_code("anonymous reads", read(anon, b, "k").await, ErrorCode::AccessDenied)?;
            expect_code("anonymous lists buckets", anon.list_buckets().await, ErrorCode::AccessDenied)?;
        }
        if ok("alice reads", read(&c.alice, b, "k").await)? != b"alice's" {
            return Err("alice's object changed".into());
        }
        Ok(())
    }
    .await;
    remove(c, b).await;
    r
}

async fn policy(c: &Callers, b: &str) -> Result<(), String> {
    ok("alice creates", c.alice.create_bucket(b).await)?;
    let r = async {
        ok("alice puts", put(&c.alice, b, "shared/x", b"shared").await)?;
        expect_code("no policy yet", c.alice.get_bucket_config(b, "policy").await, ErrorCode::NoSuchBucketPolicy)?;
        let text = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"bob-id"}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::{b}/shared/*"}}]}}"#
        );
        expect_code(
            "bob puts a policy on alice's bucket",
            c.bob.put_bucket_config(b, "policy", Some(text.clone().into_bytes())).await,
            ErrorCode::AccessDenied,
        )?;
        ok("alice puts a policy", c.alice.put_bucket_config(b, "policy", Some(text.clone().into_bytes())).await)?;
        let got = ok("alice gets the policy", c.alice.get_bucket_config(b, "policy").await)?;
        if got.as_deref() != Some(text.as_bytes()) {
            return Err(format!("GetBucketPolicy answered {:?}", got.map(String::from_utf8)));
        }
        if ok("bob reads", read(&c.bob, b, "shared/x").await)? != b"shared" {
            return Err("bob read other bytes".into());
        }
        expect_code("bob writes", put(&c.bob, b, "shared/y", b"y").await, ErrorCode::AccessDenied)?;
        expect_code("bob gets the policy", c.bob.get_bucket_config(b, "policy").await, ErrorCode::AccessDenied)?;
        if let Some(anon) = &c.anonymous {
            expect_code("anonymous reads", read(anon, b, "shared/x").await, ErrorCode::AccessDenied)?;
        }
        expect_code(
            "a malformed policy",
            c.alice.put_bucket_config(b, "policy", Some(b"{\"Version\":".to_vec())).await,
            ErrorCode::MalformedPolicy,
        )?;
        ok("alice deletes the policy", c.alice.put_bucket_config(b, "policy", None).await)?;
        expect_code("bob reads after the delete", read(&c.bob, b, "shared/x").await, ErrorCode::AccessDenied)?;
        Ok(())
    }
    .await;
    remove(c, b).await;
    r
}

async fn copy_source(c: &Callers, a: &str, b: &str) -> Result<(), String> {
    ok("alice creates", c.alice.create_bucket(a).await)?;
    ok("bob creates", c.bob.create_bucket(b).await)?;
    let r = async {
        ok("alice puts", put(&c.alice, a, "secret", b"s").await)?;
        expect_code(
            "bob copies alice's object",
            c.bob.copy_object(a, "secret", b, "stolen", CopyObjectRequest::default()).await,
            ErrorCode::AccessDenied,
        )?;
        expect_code(
            "bob renames in alice's bucket",
            c.bob.rename_object(a, "secret", "moved", RenameObjectRequest::default()).await,
            ErrorCode::AccessDenied,
        )?;
        Ok(())
    }
    .await;
    remove(c, a).await;
    remove(c, b).await;
    r
}

/// RenameObject of a prefix is authorized per key: a policy that lets bob move what is under
/// `src/` except `src/keep/` (no s3:DeleteObject there) refuses the rename of `src/` whole.
async fn prefix_rename(c: &Callers, b: &str) -> Result<(), String> {
    if crate::lacks_rename(&c.admin).await {
        return Ok(());
    }
    ok("alice creates", c.alice.create_bucket(b).await)?;
    let r = async {
        ok("alice puts", put(&c.alice, b, "src/free/f", b"f").await)?;
        ok("alice puts", put(&c.alice, b, "src/keep/k", b"k").await)?;
        let text = format!(
            r#"{{"Version":"2012-10-17","Statement":[
                {{"Effect":"Allow","Principal":{{"AWS":"bob-id"}},"Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::{b}/*"}},
                {{"Effect":"Deny","Principal":{{"AWS":"bob-id"}},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::{b}/src/keep/*"}}]}}"#
        );
        ok("alice puts a policy", c.alice.put_bucket_config(b, "policy", Some(text.into_bytes())).await)?;
        expect_code(
            "bob renames src/ (src/keep/k may not be deleted)",
            c.bob.rename_object(b, "src/", "dst/", RenameObjectRequest::default()).await,
            ErrorCode::AccessDenied,
        )?;
        if ok("alice reads", read(&c.alice, b, "src/keep/k").await)? != b"k" {
            return Err("a refused prefix rename moved src/keep/k".into());
        }
        ok("bob renames src/free/", c.bob.rename_object(b, "src/free/", "dst/", RenameObjectRequest::default()).await)?;
        if ok("alice reads the moved key", read(&c.alice, b, "dst/f").await)? != b"f" {
            return Err("dst/f holds other bytes".into());
        }
        expect_code(
            "bob renames alice's bucket's prefix without the policy",
            c.alice.put_bucket_config(b, "policy", None).await.and(
                c.bob.rename_object(b, "dst/", "dst2/", RenameObjectRequest::default()).await,
            ),
            ErrorCode::AccessDenied,
        )?;
        Ok(())
    }
    .await;
    remove(c, b).await;
    r
}

async fn ownership_documents(c: &Callers, b: &str) -> Result<(), String> {
    ok("alice creates", c.alice.create_bucket(b).await)?;
    let r = async {
        let doc = ok("ownership controls", c.alice.get_bucket_config(b, "ownershipControls").await)?.unwrap_or_default();
        if !String::from_utf8_lossy(&doc).contains("BucketOwnerEnforced") {
            return Err(format!("new bucket's ownership: {}", String::from_utf8_lossy(&doc)));
        }
        let acl = ok("bucket ACL", c.alice.get_bucket_config(b, "acl").await)?.unwrap_or_default();
        if !String::from_utf8_lossy(&acl).contains("<ID>alice-id</ID>") {
            return Err(format!("bucket ACL does not name the owner: {}", String::from_utf8_lossy(&acl)));
        }
        expect_code("bob reads the ACL", c.bob.get_bucket_config(b, "acl").await, ErrorCode::AccessDenied)?;
        expect_code(
            "no public access block yet",
            c.alice.get_bucket_config(b, "publicAccessBlock").await,
            ErrorCode::NoSuchPublicAccessBlockConfiguration,
        )?;
        let pab = b"<PublicAccessBlockConfiguration><BlockPublicPolicy>true</BlockPublicPolicy></PublicAccessBlockConfiguration>";
        ok("alice blocks public policies", c.alice.put_bucket_config(b, "publicAccessBlock", Some(pab.to_vec())).await)?;
        let public = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{b}/*"}}]}}"#
        );
        expect_code(
            "a public policy under BlockPublicPolicy",
            c.alice.put_bucket_config(b, "policy", Some(public.into_bytes())).await,
            ErrorCode::AccessDenied,
        )?;
        Ok(())
    }
    .await;
    remove(c, b).await;
    r
}

/// A handle on `inner` whose every call is made by `caller` (for in-process front ends, which
/// have no keys: what a front end does with [`caller::scope`]).
pub struct AsCaller {
    inner: DynStore,
    caller: Arc<Caller>,
}

impl AsCaller {
    pub fn store(inner: DynStore, caller: Caller) -> DynStore {
        Arc::new(AsCaller { inner, caller: Arc::new(caller) })
    }

    /// [`ACCOUNTS`] entry `i` as a caller.
    pub fn account(inner: DynStore, i: usize) -> DynStore {
        let (_, _, id, admin) = ACCOUNTS[i];
        AsCaller::store(inner, Caller::account(Arc::new(Account { id: id.into(), name: None, admin, uid: None })))
    }
}

/// A [`Layer`]: every operation is forwarded inside the caller's scope (the fast paths are
/// not: the scope is the future's).
impl Layer for AsCaller {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, _call: Call<'a>, inner: OpFuture<'a, T>) -> OpFuture<'a, T> {
        Box::pin(caller::scope(Some(self.caller.clone()), inner))
    }
}

#[cfg(test)]
mod tests {
    use s3hpc_core::forwarding::{self, Recorder};

    use super::*;

    /// Every operation reaches the wrapped store, in the caller's scope; the fast paths do not
    /// (they would run outside it).
    #[tokio::test]
    async fn every_operation_is_forwarded_as_the_caller() {
        let rec = Arc::new(Recorder::new());
        let s = AsCaller::account(rec.clone(), 0);
        assert_eq!(
            forwarding::not_forwarded(&*s, &rec).await,
            [forwarding::GET_OBJECT_INLINE, forwarding::HEAD_OBJECT_INLINE]
        );
    }
}
