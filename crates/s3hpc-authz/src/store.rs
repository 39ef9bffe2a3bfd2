//! [`Authorized`]: a [`Store`] that authorizes every call with S3's rules before the store it
//! wraps sees it. Every front end (HTTP, the binary protocol) serves through it, so the rules are
//! written once: the caller comes from [`s3hpc_core::caller::current`], the bucket's
//! [`BucketAuth`] from the bucket configuration document [`AUTH_CONFIG`] (JSON), kept for
//! [`CACHE_TTL`] so that a change made through another gateway on the same root takes effect
//! within that time.
//!
//! The S3 configuration subresources that authorization owns (`policy`, `acl`,
//! `ownershipControls`, `publicAccessBlock`, `policyStatus`) go through
//! [`Store::get_bucket_config`] / [`Store::put_bucket_config`] of this store, which gives them
//! S3's meaning and keeps them in the one [`AUTH_CONFIG`] document.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use s3hpc_core::caller::{self, Caller};
use s3hpc_core::{Body, CredentialSet, DynStore, Error, ErrorCode as Code, Result, Retention, Store, types::*};

use crate::Acl;
use crate::acl::{AclHeaders, CannedAcl, RequestedAcl};
use crate::bucket::{BucketAuth, authorize, authorize_service, owner_of, reveals_missing_key};
use crate::error::{AuthzError, ErrorCode as AzCode};
use crate::eval::{Account, Principal, RequestContext};
use crate::ops::{AclNeed, S3Op, S3OpAuthz, Target};
use crate::ownership::{ObjectOwnership, PublicAccessBlock, policy_status_xml};

/// The bucket configuration name under which a bucket's [`BucketAuth`] is kept.
pub const AUTH_CONFIG: &str = "s3hpc-auth";

/// How long a bucket's authorization state is used before it is read again.
pub const CACHE_TTL: Duration = Duration::from_secs(1);

/// `inner`, with every call authorized for the caller in scope.
pub struct Authorized {
    inner: DynStore,
    accounts: CredentialSet,
    /// Read on every call, written once per bucket per [`CACHE_TTL`]: a read-write lock, so the
    /// gateway's worker threads do not queue on it.
    cache: RwLock<HashMap<String, (Instant, Arc<BucketAuth>)>>,
    /// The Object Ownership of buckets created without `x-amz-object-ownership`.
    default_ownership: ObjectOwnership,
}

/// An authorization error as the core error S3 front ends answer with.
pub fn to_error(e: AuthzError) -> Error {
    let code = match e.code {
        AzCode::AccessDenied => Code::AccessDenied,
        AzCode::MalformedPolicy => Code::MalformedPolicy,
        AzCode::MalformedACLError => Code::MalformedACLError,
        AzCode::MalformedXML => Code::MalformedXML,
        AzCode::InvalidArgument => Code::InvalidArgument,
        AzCode::InvalidRequest => Code::InvalidRequest,
        AzCode::UnresolvableGrantByEmailAddress => Code::UnresolvableGrantByEmailAddress,
        AzCode::AccessControlListNotSupported => Code::AccessControlListNotSupported,
        AzCode::InvalidBucketAclWithObjectOwnership => Code::InvalidBucketAclWithObjectOwnership,
        AzCode::UnexpectedContent => Code::UnexpectedContent,
        AzCode::MissingSecurityHeader => Code::MissingSecurityHeader,
        AzCode::MethodNotAllowed => Code::MethodNotAllowed,
    };
    let mut out = Error::new(code, e.message);
    out.details = e.extra;
    out
}

fn denied() -> Error {
    Error::code(Code::AccessDenied)
}

/// The caller in scope; none is an error (a front end that forgot to say who asks).
fn caller() -> Result<Arc<Caller>> {
    caller::current().ok_or_else(|| Error::new(Code::AccessDenied, "Access Denied: no caller"))
}

/// The request context of `op` when the request names a version: S3's version action
/// (s3:GetObjectVersion, s3:DeleteObjectVersion, ...).
fn versioned(mut ctx: RequestContext, op: S3Op, version: bool) -> RequestContext {
    if version {
        ctx.action = op.action(true).to_owned();
    }
    ctx
}

/// The bucket configuration document that holds the ACL of a multipart upload in progress.
fn upload_acl_config(upload_id: &str) -> String {
    format!("upload-acl-{upload_id}")
}

/// What an object without an ACL record has: the bucket owner's, private.
fn is_default_acl(acl: &Acl, auth: &BucketAuth) -> bool {
    acl.owner.id == auth.owner().id && acl.is_private_of(&acl.owner.id)
}

fn principal(c: &Caller) -> Principal {
    match &c.account {
        None => Principal::Anonymous,
        Some(a) => Principal::Account(Account { id: a.id.clone(), name: a.name.clone(), admin: a.admin }),
    }
}

fn header<'a>(c: &'a Caller, name: &str) -> Option<&'a str> {
    c.headers.acl.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn acl_headers(c: &Caller) -> AclHeaders<'_> {
    AclHeaders {
        canned: header(c, "x-amz-acl"),
        grant_read: header(c, "x-amz-grant-read"),
        grant_write: header(c, "x-amz-grant-write"),
        grant_read_acp: header(c, "x-amz-grant-read-acp"),
        grant_write_acp: header(c, "x-amz-grant-write-acp"),
        grant_full_control: header(c, "x-amz-grant-full-control"),
    }
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

impl Authorized {
    /// Authorize calls to `inner` for the accounts of `accounts`.
    pub fn new(inner: DynStore, accounts: CredentialSet) -> Authorized {
        Authorized {
            inner,
            accounts,
            cache: RwLock::new(HashMap::new()),
            default_ownership: ObjectOwnership::default(),
        }
    }

    /// New buckets created without `x-amz-object-ownership` get `ownership` (default
    /// BucketOwnerEnforced, AWS's default; `s3hpc serve --default-object-ownership`).
    pub fn with_default_ownership(mut self, ownership: ObjectOwnership) -> Authorized {
        self.default_ownership = ownership;
        self
    }

    fn account_exists(&self) -> impl Fn(&str) -> bool + '_ {
        |id: &str| self.accounts.account_exists(id)
    }

    fn cached(&self, bucket: &str) -> Option<Arc<BucketAuth>> {
        let cache = self.cache.read().unwrap_or_else(|e| e.into_inner());
        cache.get(bucket).filter(|(t, _)| t.elapsed() < CACHE_TTL).map(|(_, a)| a.clone())
    }

    fn remember(&self, bucket: &str, auth: Option<Arc<BucketAuth>>) {
        let mut cache = self.cache.write().unwrap_or_else(|e| e.into_inner());
        match auth {
            Some(a) => {
                if cache.len() > 10_000 {
                    cache.retain(|_, (t, _)| t.elapsed() < CACHE_TTL);
                }
                cache.insert(bucket.to_string(), (Instant::now(), a));
            }
            None => {
                cache.remove(bucket);
            }
        }
    }

    /// The bucket's authorization state: its [`AUTH_CONFIG`] document, else (a directory made
    /// outside S3, or by a gateway before authorization existed) owned by the account whose uid
    /// owns the directory, else by no account (admins only).
    pub async fn bucket_auth(&self, bucket: &str) -> Result<Arc<BucketAuth>> {
        if let Some(a) = self.cached(bucket) {
            return Ok(a);
        }
        let auth = match self.inner.get_bucket_config(bucket, AUTH_CONFIG).await? {
            Some(doc) => serde_json::from_slice::<BucketAuth>(&doc)
                .map_err(|e| Error::internal(format!("bucket {bucket}: unreadable authorization record: {e}")))?,
            None => {
                match self.inner.bucket_owner_uid(bucket).await?.and_then(|uid| self.accounts.account_by_uid(uid)) {
                    Some(a) => BucketAuth::new(owner_of(&principal(&Caller::account(a)))),
                    None => BucketAuth::admin_only(),
                }
            }
        };
        let auth = Arc::new(auth);
        self.remember(bucket, Some(auth.clone()));
        Ok(auth)
    }

    async fn save(&self, bucket: &str, auth: BucketAuth) -> Result<()> {
        let doc = serde_json::to_vec(&auth).map_err(|e| Error::internal(e.to_string()))?;
        self.inner.put_bucket_config(bucket, AUTH_CONFIG, Some(doc)).await?;
        self.remember(bucket, Some(Arc::new(auth)));
        Ok(())
    }

    fn context(c: &Caller, op: S3Op, bucket: &str, key: Option<&str>) -> RequestContext {
        let mut ctx = op.context(principal(c), bucket, key, false).with_secure_transport(c.secure);
        ctx = ctx.with_current_time(now_secs());
        if let Some(ip) = c.source_ip {
            ctx = ctx.with_source_ip(ip);
        }
        if !c.headers.acl.is_empty() {
            ctx = ctx.with_acl_headers(&acl_headers(c));
        }
        if let Some(o) = &c.headers.object_ownership {
            ctx = ctx.with_key("s3:x-amz-object-ownership", o.as_str());
        }
        for (name, v) in &c.headers.condition_keys {
            ctx = ctx.with_key(&format!("s3:{name}"), v.as_str());
        }
        ctx
    }

    /// Authorizes `op` on `bucket` (and `key`) for the caller in scope; returns the caller, the
    /// bucket's state and the request context (`None` when the fast path decided: an admin or
    /// the bucket owner of a bucket without a policy, whom [`authorize`] always allows and who
    /// may always list).
    async fn check_with(
        &self,
        op: S3Op,
        bucket: &str,
        key: Option<&str>,
        extend: impl FnOnce(RequestContext) -> RequestContext,
    ) -> Result<(Arc<Caller>, Arc<BucketAuth>, Option<RequestContext>)> {
        let c = caller()?;
        let auth = self.bucket_auth(bucket).await?;
        auth.check_expected_owner(c.headers.expected_bucket_owner.as_deref()).map_err(to_error)?;
        // No policy: nothing can deny an admin, or the bucket owner where ACLs are disabled
        // (the bucket owner then owns every object), and building the context would be the
        // dearest part of the check.
        let acls_on = !auth.ownership.acls_disabled();
        if auth.policy.is_none() && c.account.as_ref().is_some_and(|a| a.admin || (a.id == auth.owner().id && !acls_on))
        {
            return Ok((c, auth, None));
        }
        let mut ctx = extend(Self::context(&c, op, bucket, key));
        let mut object_acl = None;
        if let Some(key) = key {
            ctx = self.with_existing_tags(ctx, op, bucket, key, &auth).await;
            // An existing object's ACL record decides its owner and grants (ACLs enabled only).
            // A request naming a version is judged without it (the bucket owner's alone).
            let on_object =
                op.target() == Target::Object && matches!(op.acl_need(), AclNeed::Object(_) | AclNeed::None);
            if acls_on && on_object && !ctx.action.ends_with("Version") {
                object_acl = self.stored_object_acl(bucket, key).await?;
            }
        }
        authorize(op, &ctx, &auth, object_acl.as_ref()).map_err(to_error)?;
        Ok((c, auth, Some(ctx)))
    }

    /// The object's ACL record, if it has one (none for a missing object).
    async fn stored_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Acl>> {
        match self.inner.get_object_acl(bucket, key).await {
            Ok(Some(doc)) => serde_json::from_slice(&doc)
                .map(Some)
                .map_err(|e| Error::internal(format!("{bucket}/{key}: unreadable ACL record: {e}"))),
            Ok(None) => Ok(None),
            Err(e) if matches!(e.code, Code::NoSuchKey | Code::NotImplemented) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Keep `acl` as the object's ACL record: none when it is the default (the bucket owner's,
    /// private), which is what an object without a record has.
    async fn keep_object_acl(&self, bucket: &str, key: &str, auth: &BucketAuth, acl: &Acl) -> Result<()> {
        let doc = if is_default_acl(acl, auth) {
            None
        } else {
            Some(serde_json::to_vec(acl).map_err(|e| Error::internal(e.to_string()))?)
        };
        self.inner.put_object_acl(bucket, key, doc).await
    }

    /// At completion: the ACL the upload was created with becomes the object's record. A
    /// retried completion finds none left and changes nothing.
    async fn apply_upload_acl(&self, bucket: &str, key: &str, upload_id: &str, auth: &BucketAuth) -> Result<()> {
        let name = upload_acl_config(upload_id);
        let Some(doc) = self.inner.get_bucket_config(bucket, &name).await? else { return Ok(()) };
        let acl: Acl = serde_json::from_slice(&doc)
            .map_err(|e| Error::internal(format!("upload {upload_id}: unreadable ACL record: {e}")))?;
        self.keep_object_acl(bucket, key, auth, &acl).await?;
        self.forget_upload_acl(bucket, upload_id).await;
        Ok(())
    }

    async fn forget_upload_acl(&self, bucket: &str, upload_id: &str) {
        let name = upload_acl_config(upload_id);
        if let Err(e) = self.inner.put_bucket_config(bucket, &name, None).await
            && e.code != Code::NoSuchKey
        {
            tracing::warn!("{bucket}: upload {upload_id}: ACL record not removed: {e}");
        }
    }

    /// `s3:ExistingObjectTag/<key>` for the object's tags, when the bucket policy has a condition
    /// on them and `op` acts on an existing object (AWS evaluates the key for the object reads,
    /// its ACL and tagging calls; not for writes, deletes or multipart calls). The tags are
    /// read only then: a bucket whose policy does not use the key pays nothing. A missing
    /// object has no tags (the operation then answers for itself).
    async fn with_existing_tags(
        &self,
        ctx: RequestContext,
        op: S3Op,
        bucket: &str,
        key: &str,
        auth: &BucketAuth,
    ) -> RequestContext {
        use S3Op::*;
        let uses =
            matches!(
                op,
                GetObject
                    | HeadObject
                    | GetObjectAttributes
                    | GetObjectAcl
                    | PutObjectAcl
                    | GetObjectTagging
                    | PutObjectTagging
                    | DeleteObjectTagging
            ) && auth.policy.as_deref().is_some_and(|p| p.to_ascii_lowercase().contains("s3:existingobjecttag/"));
        if !uses {
            return ctx;
        }
        match self.inner.get_object_tagging(bucket, key, None).await {
            Ok(ObjectTagging { tags, .. }) => {
                ctx.with_existing_object_tags(tags.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            }
            Err(_) => ctx,
        }
    }

    async fn check(&self, op: S3Op, bucket: &str, key: Option<&str>) -> Result<(Arc<Caller>, Arc<BucketAuth>)> {
        self.check_with(op, bucket, key, |c| c).await.map(|(c, a, _)| (c, a))
    }

    /// A copy source: readable by the caller (`x-amz-source-expected-bucket-owner` checked).
    async fn check_source(&self, bucket: &str, key: &str) -> Result<()> {
        self.check_source_version(bucket, key, false).await
    }

    /// [`Self::check_source`]; `version`: the source names a version (s3:GetObjectVersion).
    async fn check_source_version(&self, bucket: &str, key: &str, version: bool) -> Result<()> {
        let c = caller()?;
        let auth = self.bucket_auth(bucket).await?;
        auth.check_expected_owner(c.headers.source_expected_bucket_owner.as_deref()).map_err(to_error)?;
        let ctx = versioned(Self::context(&c, S3Op::GetObject, bucket, Some(key)), S3Op::GetObject, version);
        let ctx = self.with_existing_tags(ctx, S3Op::GetObject, bucket, key, &auth).await;
        // The source object's ACL record decides as for a GET (its owner, its READ or
        // FULL_CONTROL grants); a version is judged without it, as in `check_with`.
        let object_acl =
            if !auth.ownership.acls_disabled() && !version { self.stored_object_acl(bucket, key).await? } else { None };
        authorize(S3Op::GetObject, &ctx, &auth, object_acl.as_ref()).map_err(to_error)?;
        Ok(())
    }

    /// RenameObject of a prefix (both keys end in '/'): each key under `src` must be readable
    /// and deletable by the caller and its new name under `dst` writable, as for the rename of
    /// that one object (a policy may grant or deny parts of a prefix). Keys are listed from
    /// the inner store: O(keys) checks; a key added under `src` after the listing moves
    /// unchecked with the rest.
    async fn check_prefix_rename(&self, bucket: &str, src: &str, dst: &str) -> Result<()> {
        let mut start_after = None;
        loop {
            let req = ListObjectsRequest { prefix: src.to_string(), start_after, max_keys: 1000, ..Default::default() };
            let page = self.inner.list_objects(bucket, req).await?;
            for o in &page.objects {
                self.check_source(bucket, &o.key).await?;
                self.check(S3Op::DeleteObject, bucket, Some(&o.key)).await?;
                let to = format!("{dst}{}", &o.key[src.len()..]);
                self.check(S3Op::PutObject, bucket, Some(&to)).await?;
            }
            match page.objects.last() {
                Some(last) if page.is_truncated => start_after = Some(last.key.clone()),
                _ => return Ok(()),
            }
        }
    }

    /// The ACL of an object the caller creates, from the request's ACL headers: refused as S3
    /// refuses them (ACLs disabled, public ACLs blocked). `None` where ACLs are disabled (the
    /// bucket owner owns every object); else the ACL to keep once the object exists (see
    /// [`Self::keep_object_acl`]).
    fn new_object_acl(&self, c: &Caller, auth: &BucketAuth) -> Result<Option<Acl>> {
        let requested = acl_headers(c).parse(Some(&self.account_exists())).map_err(to_error)?;
        if requested == RequestedAcl::None && auth.ownership.acls_disabled() {
            return Ok(None);
        }
        // AWS refuses even `private` with ACLs disabled; s3hpc accepts it (it asks for what the
        // object gets anyway), because rclone and other tools send it on every upload by default.
        if requested == RequestedAcl::Canned(CannedAcl::Private) && auth.ownership.acls_disabled() {
            return Ok(None);
        }
        let acl = auth.new_object_acl(&principal(c), &requested).map_err(to_error)?;
        Ok((!auth.ownership.acls_disabled()).then_some(acl))
    }

    /// After an object was written: keep its ACL record (ACLs enabled, an ACL other than the
    /// default; a new object has no record). The object is there with the default ACL (the
    /// bucket owner's, private) until this is done.
    async fn after_write(&self, bucket: &str, key: &str, auth: &BucketAuth, acl: Option<Acl>) -> Result<()> {
        match acl {
            Some(acl) if !is_default_acl(&acl, auth) => self.keep_object_acl(bucket, key, auth, &acl).await,
            _ => Ok(()),
        }
    }

    /// GET/HEAD of a key that is not there: 404 only for callers who may list the key (S3).
    fn hide_missing(&self, e: Error, ctx: &Option<RequestContext>, auth: &BucketAuth) -> Error {
        match ctx {
            Some(ctx) if e.code == Code::NoSuchKey && !reveals_missing_key(ctx, auth) => denied(),
            _ => e,
        }
    }

    /// GET/HEAD refused (`e`, AccessDenied) of a key that is not there: S3 answers 404 NoSuchKey
    /// to a caller who may list the bucket (a public-read bucket ACL, a policy granting
    /// s3:ListBucket) even when nothing grants it s3:GetObject, since a missing object has no
    /// ACL to decide; 403 otherwise. A request naming a version keeps its 403.
    async fn denied_or_missing(&self, e: Error, op: S3Op, bucket: &str, key: &str, version: bool) -> Error {
        if e.code != Code::AccessDenied || version {
            return e;
        }
        let (Ok(c), Ok(auth)) = (caller(), self.bucket_auth(bucket).await) else { return e };
        if !reveals_missing_key(&Self::context(&c, op, bucket, Some(key)), &auth) {
            return e;
        }
        match self.inner.head_object(bucket, key, GetObjectRequest::default()).await {
            Err(missing) if missing.code == Code::NoSuchKey => missing,
            _ => e,
        }
    }

    /// A write that asks for a retention or legal hold also needs s3:PutObjectRetention /
    /// s3:PutObjectLegalHold (as on S3).
    async fn check_new_lock(&self, lock: &s3hpc_core::ObjectLock, bucket: &str, key: &str) -> Result<()> {
        if lock.retention.is_some() {
            self.check(S3Op::PutObjectRetention, bucket, Some(key)).await?;
        }
        if lock.legal_hold.is_some() {
            self.check(S3Op::PutObjectLegalHold, bucket, Some(key)).await?;
        }
        Ok(())
    }

    /// The caller the inner store must see for a call that may bypass GOVERNANCE retention:
    /// `None` to keep the current one; a copy without `x-amz-bypass-governance-retention` when
    /// the caller asked for it but s3:BypassGovernanceRetention is not allowed on the object
    /// (the store then protects the version as if the header were absent).
    async fn bypass_caller(&self, bucket: &str, key: &str) -> Option<Arc<Caller>> {
        let c = caller::current()?;
        if !c.headers.bypass_governance_retention
            || self.check(S3Op::BypassGovernanceRetention, bucket, Some(key)).await.is_ok()
        {
            return None;
        }
        let mut c = (*c).clone();
        c.headers.bypass_governance_retention = false;
        Some(Arc::new(c))
    }

    /// GET/HEAD answers show a version's retention and legal hold only to callers allowed
    /// s3:GetObjectRetention / s3:GetObjectLegalHold (`ctx` `None`: the fast path's owner or
    /// admin, allowed everything).
    async fn filter_lock(&self, info: &mut ObjectInfo, ctx: &Option<RequestContext>, bucket: &str, key: &str) {
        if ctx.is_none() || info.lock.is_empty() {
            return;
        }
        if info.lock.retention.is_some() && self.check(S3Op::GetObjectRetention, bucket, Some(key)).await.is_err() {
            info.lock.retention = None;
        }
        if info.lock.legal_hold.is_some() && self.check(S3Op::GetObjectLegalHold, bucket, Some(key)).await.is_err() {
            info.lock.legal_hold = None;
        }
    }

    fn bucket_op(name: &str, get: bool, delete: bool) -> Option<S3Op> {
        use S3Op::*;
        Some(match (name, get, delete) {
            ("policy", true, _) => GetBucketPolicy,
            ("policy", false, false) => PutBucketPolicy,
            ("policy", false, true) => DeleteBucketPolicy,
            ("policyStatus", true, _) => GetBucketPolicyStatus,
            ("acl", true, _) => GetBucketAcl,
            ("acl", false, _) => PutBucketAcl,
            ("ownershipControls", true, _) => GetBucketOwnershipControls,
            ("ownershipControls", false, false) => PutBucketOwnershipControls,
            ("ownershipControls", false, true) => DeleteBucketOwnershipControls,
            ("publicAccessBlock", true, _) => GetPublicAccessBlock,
            ("publicAccessBlock", false, false) => PutPublicAccessBlock,
            ("publicAccessBlock", false, true) => DeletePublicAccessBlock,
            ("lifecycle", true, _) => GetBucketLifecycleConfiguration,
            ("lifecycle", false, false) => PutBucketLifecycleConfiguration,
            ("lifecycle", false, true) => DeleteBucketLifecycle,
            ("cors", true, _) => GetBucketCors,
            ("cors", false, false) => PutBucketCors,
            ("cors", false, true) => DeleteBucketCors,
            ("website", true, _) => GetBucketWebsite,
            ("website", false, false) => PutBucketWebsite,
            ("website", false, true) => DeleteBucketWebsite,
            ("versioning", true, _) => GetBucketVersioning,
            ("versioning", false, _) => PutBucketVersioning,
            ("objectLock", true, _) => GetObjectLockConfiguration,
            ("objectLock", false, _) => PutObjectLockConfiguration,
            _ => return None,
        })
    }
}

/// Every method written out, none taken from the trait's defaults (the rule on [`Store`]): a
/// method added to the trait fails `clippy` here until this wrapper says what it does with it.
/// What is deliberately not forwarded says why where it is written; the test
/// `every_operation_is_forwarded` checks the rest reach the wrapped store.
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Store for Authorized {
    // ---- capabilities: the wrapped store's (they say how it works, not what it holds) ----

    fn capabilities(&self) -> s3hpc_core::Capabilities {
        self.inner.capabilities()
    }

    fn body_buffer(&self, len: usize) -> Option<s3hpc_core::BodyBuffer> {
        self.inner.body_buffer(len)
    }

    async fn appends(&self, bucket: &str) -> bool {
        self.inner.appends(bucket).await
    }

    // ---- fast paths: deliberately NOT forwarded ----

    /// `None`, never the wrapped store's fast path: that would answer GET without the
    /// authorization of [`get_object`](Store::get_object), so the caller takes `get_object`.
    fn get_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        None
    }

    /// `None`, as [`get_object_inline`](Store::get_object_inline): HEAD is authorized too.
    fn head_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        None
    }

    // ---- operations ----

    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        let c = caller()?;
        let who = principal(&c);
        authorize_service(S3Op::CreateBucket, &who).map_err(to_error)?;
        let requested = acl_headers(&c).parse(Some(&self.account_exists())).map_err(to_error)?;
        let ownership = match c.headers.object_ownership.as_deref() {
            None => None,
            Some(v) => Some(
                ObjectOwnership::parse(v)
                    .ok_or_else(|| Error::invalid_argument(format!("Invalid x-amz-object-ownership header: {v}")))?,
            ),
        };
        let mut auth =
            BucketAuth::for_create(&who, &requested, ownership.or(Some(self.default_ownership))).map_err(to_error)?;
        // S3: a bucket created with the `private` canned ACL and no ownership header gets
        // BucketOwnerPreferred (ACLs enabled), which clients that always send `x-amz-acl:
        // private` (rclone) rely on. A gateway whose default enables ACLs keeps its default.
        if ownership.is_none()
            && self.default_ownership.acls_disabled()
            && requested == RequestedAcl::Canned(CannedAcl::Private)
        {
            auth.ownership = ObjectOwnership::BucketOwnerPreferred;
        }
        match self.inner.create_bucket(bucket).await {
            Ok(()) => {}
            Err(e) if e.code == Code::BucketAlreadyOwnedByYou => {
                let existing = self.bucket_auth(bucket).await?;
                if who.is_admin() || who.id() == Some(existing.owner().id.as_str()) {
                    return Err(e);
                }
                return Err(Error::code(Code::BucketAlreadyExists).with_bucket(bucket));
            }
            Err(e) => return Err(e),
        }
        if let Err(e) = self.save(bucket, auth).await {
            // Without its record the bucket would belong to whoever owns the directory.
            let _ = self.inner.delete_bucket(bucket).await;
            self.remember(bucket, None);
            return Err(e);
        }
        Ok(())
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.check(S3Op::DeleteBucket, bucket, None).await?;
        let r = self.inner.delete_bucket(bucket).await;
        self.remember(bucket, None);
        r
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.check(S3Op::HeadBucket, bucket, None).await?;
        self.inner.head_bucket(bucket).await
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let c = caller()?;
        let who = principal(&c);
        authorize_service(S3Op::ListBuckets, &who).map_err(to_error)?;
        let all = self.inner.list_buckets().await?;
        if who.is_admin() {
            return Ok(all);
        }
        let mut out = Vec::with_capacity(all.len());
        for b in all {
            // A bucket whose state cannot be read (removed meanwhile, unreadable) is not listed.
            if let Ok(a) = self.bucket_auth(&b.name).await
                && a.listed_for(&who)
            {
                out.push(b);
            }
        }
        Ok(out)
    }

    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        let op = Self::bucket_op(name, true, false)
            .ok_or_else(|| Error::invalid_argument(format!("unknown bucket configuration {name:?}")))?;
        let (_, auth) = self.check(op, bucket, None).await?;
        Ok(match name {
            "policy" => Some(
                auth.policy.clone().ok_or_else(|| Error::code(Code::NoSuchBucketPolicy).with_bucket(bucket))?.into(),
            ),
            "policyStatus" => Some(
                policy_status_xml(
                    auth.policy_is_public().ok_or_else(|| Error::code(Code::NoSuchBucketPolicy).with_bucket(bucket))?,
                )
                .into(),
            ),
            "acl" => Some(auth.effective_bucket_acl().with_names(|id| self.accounts.account_name(id)).to_xml().into()),
            "ownershipControls" if auth.ownership_controls_deleted => {
                return Err(Error::code(Code::OwnershipControlsNotFoundError).with_bucket(bucket));
            }
            "ownershipControls" => Some(auth.ownership.to_xml().into()),
            "publicAccessBlock" => Some(
                auth.public_access_block
                    .ok_or_else(|| Error::code(Code::NoSuchPublicAccessBlockConfiguration).with_resource(bucket))?
                    .to_xml()
                    .into(),
            ),
            other => self.inner.get_bucket_config(bucket, other).await?,
        })
    }

    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let op = Self::bucket_op(name, false, doc.is_none())
            .filter(|op| *op != S3Op::GetBucketPolicyStatus)
            .ok_or_else(|| Error::invalid_argument(format!("unknown bucket configuration {name:?}")))?;
        let (c, auth) = self.check(op, bucket, None).await?;
        let mut auth = (*auth).clone();
        match (name, doc) {
            ("policy", Some(text)) => {
                let text = std::str::from_utf8(&text).map_err(|_| {
                    Error::new(Code::MalformedPolicy, "Policies must be valid JSON and the first byte must be '{'")
                })?;
                auth.put_policy(text, bucket, Some(&self.account_exists())).map_err(to_error)?;
            }
            ("policy", None) => auth.delete_policy(),
            ("acl", doc) => {
                let requested = acl_headers(&c).parse(Some(&self.account_exists())).map_err(to_error)?;
                let body = match doc.filter(|d| !d.iter().all(u8::is_ascii_whitespace)) {
                    Some(d) => Some(Acl::from_xml(&d, Some(&self.account_exists())).map_err(to_error)?),
                    None => None,
                };
                auth.put_bucket_acl(&requested, body).map_err(to_error)?;
            }
            ("ownershipControls", Some(d)) => {
                auth.set_ownership(ObjectOwnership::from_xml(&d).map_err(to_error)?).map_err(to_error)?;
                auth.ownership_controls_deleted = false;
            }
            // Without ownership controls a bucket keeps its ACLs, as ObjectWriter; GET then
            // answers 404 OwnershipControlsNotFoundError, as S3.
            ("ownershipControls", None) => {
                auth.ownership = ObjectOwnership::ObjectWriter;
                auth.ownership_controls_deleted = true;
            }
            ("publicAccessBlock", Some(d)) => {
                auth.public_access_block = Some(PublicAccessBlock::from_xml(&d).map_err(to_error)?)
            }
            ("publicAccessBlock", None) => auth.public_access_block = None,
            (other, doc) => return self.inner.put_bucket_config(bucket, other, doc).await,
        }
        self.save(bucket, auth).await
    }

    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        self.check(S3Op::HeadBucket, bucket, None).await?;
        self.inner.bucket_owner_uid(bucket).await
    }

    /// The bucket owner; an object's or an upload's owner is the account that wrote it where
    /// ACLs are enabled (its ACL record's owner; none kept: the bucket owner, as
    /// [`BucketAuth::effective_object_acl`] shows it), the bucket owner where they are disabled.
    /// Deliberately not forwarded: owners are this store's records (S3's accounts), which the
    /// wrapped store does not know.
    async fn owner(&self, bucket: &str, of: Owned<'_>) -> Result<Option<OwnerInfo>> {
        let auth = self.bucket_auth(bucket).await?;
        let written_by = match of {
            _ if auth.ownership.acls_disabled() => None,
            Owned::Bucket => None,
            // An unreadable record names the bucket owner rather than failing the listing.
            Owned::Object(key) => self.stored_object_acl(bucket, key).await.ok().flatten().map(|a| a.owner),
            Owned::Upload(id) => match self.inner.get_bucket_config(bucket, &upload_acl_config(id)).await {
                Ok(Some(doc)) => serde_json::from_slice::<Acl>(&doc).ok().map(|a| a.owner),
                _ => None,
            },
        };
        let o = written_by.unwrap_or_else(|| auth.owner().clone());
        Ok(Some(OwnerInfo { id: o.id, display_name: o.display_name }))
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.check(S3Op::GetBucketTagging, bucket, None).await?;
        self.inner.get_bucket_tagging(bucket).await
    }

    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.check(S3Op::PutBucketTagging, bucket, None).await?;
        self.inner.put_bucket_tagging(bucket, tags).await
    }

    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.check(S3Op::DeleteBucketTagging, bucket, None).await?;
        self.inner.delete_bucket_tagging(bucket).await
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        let (c, auth) = self.check(S3Op::PutObject, bucket, Some(key)).await?;
        let acl = self.new_object_acl(&c, &auth)?;
        self.check_new_lock(&req.lock, bucket, key).await?;
        let out = self.inner.put_object(bucket, key, req, body).await?;
        self.after_write(bucket, key, &auth, acl).await?;
        Ok(out)
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        let ver = req.version_id.is_some();
        let (_, auth, ctx) =
            match self.check_with(S3Op::GetObject, bucket, Some(key), |c| versioned(c, S3Op::GetObject, ver)).await {
                Ok(v) => v,
                Err(e) => return Err(self.denied_or_missing(e, S3Op::GetObject, bucket, key, ver).await),
            };
        let mut out = self.inner.get_object(bucket, key, req).await.map_err(|e| self.hide_missing(e, &ctx, &auth))?;
        self.filter_lock(&mut out.info, &ctx, bucket, key).await;
        Ok(out)
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        let ver = req.version_id.is_some();
        let (_, auth, ctx) =
            match self.check_with(S3Op::HeadObject, bucket, Some(key), |c| versioned(c, S3Op::HeadObject, ver)).await {
                Ok(v) => v,
                Err(e) => return Err(self.denied_or_missing(e, S3Op::HeadObject, bucket, key, ver).await),
            };
        let mut info = self.inner.head_object(bucket, key, req).await.map_err(|e| self.hide_missing(e, &ctx, &auth))?;
        self.filter_lock(&mut info, &ctx, bucket, key).await;
        Ok(info)
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.check(S3Op::DeleteObject, bucket, Some(key)).await?;
        let c = self.bypass_caller(bucket, key).await;
        match c {
            Some(c) => caller::scope(Some(c), self.inner.delete_object(bucket, key)).await,
            None => self.inner.delete_object(bucket, key).await,
        }
    }

    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<s3hpc_core::DeleteObjectOutput> {
        // With a version id S3 asks for s3:DeleteObjectVersion.
        let ver = version_id.is_some();
        self.check_with(S3Op::DeleteObject, bucket, Some(key), |c| versioned(c, S3Op::DeleteObject, ver)).await?;
        let c = self.bypass_caller(bucket, key).await;
        match c {
            Some(c) => caller::scope(Some(c), self.inner.delete_object_version(bucket, key, version_id)).await,
            None => self.inner.delete_object_version(bucket, key, version_id).await,
        }
    }

    async fn get_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Retention>> {
        self.check(S3Op::GetObjectRetention, bucket, Some(key)).await?;
        self.inner.get_object_retention(bucket, key, version_id).await
    }

    async fn get_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<bool>> {
        self.check(S3Op::GetObjectLegalHold, bucket, Some(key)).await?;
        self.inner.get_object_legal_hold(bucket, key, version_id).await
    }

    async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        retention: Option<Retention>,
    ) -> Result<()> {
        self.check(S3Op::PutObjectRetention, bucket, Some(key)).await?;
        let c = self.bypass_caller(bucket, key).await;
        match c {
            Some(c) => {
                caller::scope(Some(c), self.inner.put_object_retention(bucket, key, version_id, retention)).await
            }
            None => self.inner.put_object_retention(bucket, key, version_id, retention).await,
        }
    }

    async fn put_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>, on: bool) -> Result<()> {
        self.check(S3Op::PutObjectLegalHold, bucket, Some(key)).await?;
        self.inner.put_object_legal_hold(bucket, key, version_id, on).await
    }

    async fn list_object_versions(
        &self,
        bucket: &str,
        req: s3hpc_core::ListVersionsRequest,
    ) -> Result<s3hpc_core::ListVersionsPage> {
        let (prefix, delim, max) = (req.prefix.clone(), req.delimiter.clone(), req.max_keys);
        self.check_with(S3Op::ListObjectVersions, bucket, None, |ctx| {
            ctx.with_list_params(Some(&prefix), delim.as_deref(), Some(max.min(1000) as u32))
        })
        .await?;
        self.inner.list_object_versions(bucket, req).await
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        self.check_source_version(src_bucket, src_key, req.source_version_id.is_some()).await?;
        let (c, auth) = self.check(S3Op::CopyObject, dst_bucket, Some(dst_key)).await?;
        let acl = self.new_object_acl(&c, &auth)?;
        self.check_new_lock(&req.lock, dst_bucket, dst_key).await?;
        let out = self.inner.copy_object(src_bucket, src_key, dst_bucket, dst_key, req).await?;
        self.after_write(dst_bucket, dst_key, &auth, acl).await?;
        Ok(out)
    }

    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        // A rename reads and removes the source and writes the destination.
        self.check_source(bucket, src_key).await?;
        self.check(S3Op::DeleteObject, bucket, Some(src_key)).await?;
        self.check(S3Op::PutObject, bucket, Some(dst_key)).await?;
        if src_key.ends_with('/') && dst_key.ends_with('/') {
            self.check_prefix_rename(bucket, src_key, dst_key).await?;
        }
        self.inner.rename_object(bucket, src_key, dst_key, req).await
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        self.check(S3Op::PutObject, bucket, Some(key)).await?;
        self.inner.append_object(bucket, key, offset, req, body).await
    }

    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        // s3hpc's file-system extension: reading attributes is a HEAD, changing them (or making
        // a symlink or a hard link there) a PUT of the key; a hard link also reads its source.
        // The file system then decides as the request's identity (--identity posix).
        // A rename reads and removes its source, as RenameObject; unlink and rmdir delete.
        if let s3hpc_core::fsattr::FsOp::Link(src) = &op {
            self.check_source(bucket, src).await?;
        }
        if let s3hpc_core::fsattr::FsOp::Rename { source, .. } = &op {
            self.check_source(bucket, source).await?;
            self.check(S3Op::DeleteObject, bucket, Some(source)).await?;
        }
        let s3op = if op.removes() {
            S3Op::DeleteObject
        } else if op.writes() {
            S3Op::PutObject
        } else {
            S3Op::HeadObject
        };
        self.check(s3op, bucket, Some(key)).await?;
        self.inner.fs(bucket, key, op).await
    }

    /// The ACL as S3 shows it. The wrapped store's `get_object_acl` is asked for the record
    /// (`stored_object_acl`) only where ACLs are enabled: with them disabled the ACL is
    /// the bucket owner's FULL_CONTROL and no record is read (nor written by `put_object_acl`).
    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let (_, auth, ctx) = self.check_with(S3Op::GetObjectAcl, bucket, Some(key), |c| c).await?;
        self.inner
            .head_object(bucket, key, GetObjectRequest::default())
            .await
            .map_err(|e| self.hide_missing(e, &ctx, &auth))?;
        let stored = if auth.ownership.acls_disabled() { None } else { self.stored_object_acl(bucket, key).await? };
        let acl = auth.effective_object_acl(stored.as_ref()).with_names(|id| self.accounts.account_name(id));
        Ok(Some(acl.to_xml().into_bytes()))
    }

    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let (c, auth) = self.check(S3Op::PutObjectAcl, bucket, Some(key)).await?;
        let requested = acl_headers(&c).parse(Some(&self.account_exists())).map_err(to_error)?;
        let body = match doc.filter(|d| !d.iter().all(u8::is_ascii_whitespace)) {
            Some(d) => Some(Acl::from_xml(&d, Some(&self.account_exists())).map_err(to_error)?),
            None => None,
        };
        self.inner.head_object(bucket, key, GetObjectRequest::default()).await?;
        let stored = if auth.ownership.acls_disabled() { None } else { self.stored_object_acl(bucket, key).await? };
        let acl = auth.put_object_acl(stored.as_ref(), &requested, body).map_err(to_error)?;
        if auth.ownership.acls_disabled() {
            return Ok(());
        }
        self.keep_object_acl(bucket, key, &auth, &acl).await
    }

    // With a version id S3 asks for s3:GetObjectVersionTagging, s3:PutObjectVersionTagging,
    // s3:DeleteObjectVersionTagging.
    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        let (op, ver) = (S3Op::GetObjectTagging, version_id.is_some());
        self.check_with(op, bucket, Some(key), |c| versioned(c, op, ver)).await?;
        self.inner.get_object_tagging(bucket, key, version_id).await
    }

    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        let (op, ver) = (S3Op::PutObjectTagging, version_id.is_some());
        self.check_with(op, bucket, Some(key), |c| versioned(c, op, ver)).await?;
        self.inner.put_object_tagging(bucket, key, version_id, tags).await
    }

    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        let (op, ver) = (S3Op::DeleteObjectTagging, version_id.is_some());
        self.check_with(op, bucket, Some(key), |c| versioned(c, op, ver)).await?;
        self.inner.delete_object_tagging(bucket, key, version_id).await
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let (prefix, delim, max) = (req.prefix.clone(), req.delimiter.clone(), req.max_keys);
        self.check_with(S3Op::ListObjects, bucket, None, |ctx| {
            ctx.with_list_params(Some(&prefix), delim.as_deref(), Some(max.min(1000) as u32))
        })
        .await?;
        self.inner.list_objects(bucket, req).await
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        let (c, auth) = self.check(S3Op::CreateMultipartUpload, bucket, Some(key)).await?;
        let acl = self.new_object_acl(&c, &auth)?;
        self.check_new_lock(&req.lock, bucket, key).await?;
        let id = self.inner.create_multipart_upload(bucket, key, req).await?;
        // The ACL asked for at the start applies at completion, by whichever gateway completes.
        if let Some(acl) = acl.filter(|a| !is_default_acl(a, &auth)) {
            let doc = serde_json::to_vec(&acl).map_err(|e| Error::internal(e.to_string()))?;
            self.inner.put_bucket_config(bucket, &upload_acl_config(&id), Some(doc)).await?;
        }
        Ok(id)
    }

    async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo> {
        self.check(S3Op::UploadPart, bucket, Some(key)).await?;
        self.inner.upload_part(bucket, key, upload_id, part_number, req, body).await
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        self.check_source_version(&src.bucket, &src.key, src.version_id.is_some()).await?;
        self.check(S3Op::UploadPartCopy, bucket, Some(key)).await?;
        self.inner.upload_part_copy(bucket, key, upload_id, part_number, src).await
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.check(S3Op::ListParts, bucket, Some(key)).await?;
        self.inner.list_parts(bucket, key, upload_id, req).await
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        self.check(S3Op::ListMultipartUploads, bucket, None).await?;
        self.inner.list_multipart_uploads(bucket, req).await
    }

    /// The shorthand, through this store's [`complete_multipart_upload_with`] (authorized there).
    ///
    /// [`complete_multipart_upload_with`]: Store::complete_multipart_upload_with
    async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletePart>,
        conditions: Conditions,
    ) -> Result<PutObjectOutput> {
        let req = CompleteMultipartRequest { parts, conditions, ..Default::default() };
        self.complete_multipart_upload_with(bucket, key, upload_id, req).await
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let (_, auth) = self.check(S3Op::CompleteMultipartUpload, bucket, Some(key)).await?;
        let out = self.inner.complete_multipart_upload_with(bucket, key, upload_id, req).await?;
        if !auth.ownership.acls_disabled() {
            self.apply_upload_acl(bucket, key, upload_id, &auth).await?;
        }
        Ok(out)
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.check(S3Op::AbortMultipartUpload, bucket, Some(key)).await?;
        self.inner.abort_multipart_upload(bucket, key, upload_id).await?;
        self.forget_upload_acl(bucket, upload_id).await;
        Ok(())
    }
}
