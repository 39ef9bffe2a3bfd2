//! Whether a wrapper forwards every [`Store`] method to the store it wraps: [`Recorder`] is a
//! store (over the memory store) that notes each method called on it, and [`not_forwarded`]
//! calls every method once through a wrapper built over one, answering the methods that did
//! not reach it. Each wrapper's tests use it (`HookedStore`, `s3hpc_authz::Authorized`, the
//! conformance suite's `AsCaller`) and compare the answer with what that wrapper deliberately
//! keeps to itself.
//!
//! The list of operations is [`StoreOp::ALL`]; `not_forwarded` has one arm per operation (a
//! `match` the compiler checks is complete) and the recorder writes every method out
//! (`#[deny(clippy::missing_trait_methods)]`), so a method added to [`Store`] is tested here
//! once it compiles.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::fsattr::{FsAttr, FsOp};
use crate::memory::MemoryStore;
use crate::store::{Capabilities, Store, StoreOp};
use crate::types::*;
use crate::versions::{DeleteObjectOutput, ListVersionsPage, ListVersionsRequest};
use crate::{Body, BodyBuffer, Result, Retention};

/// Methods of [`Store`] that are not operations, as [`not_forwarded`] names them.
pub const CAPABILITIES: &str = "capabilities";
pub const BODY_BUFFER: &str = "body_buffer";
pub const APPENDS: &str = "appends";
pub const GET_OBJECT_INLINE: &str = "get_object_inline";
pub const HEAD_OBJECT_INLINE: &str = "head_object_inline";
/// The shorthand [`Store::complete_multipart_upload`] (counted as reaching the wrapped store
/// when either form does).
pub const COMPLETE_SHORTHAND: &str = "complete_multipart_upload";

/// A memory store that notes every call: the method (an operation's [`StoreOp::name`], or one
/// of the names above) and what it names (the key; the configuration's name; else the bucket).
#[derive(Default)]
pub struct Recorder {
    inner: MemoryStore,
    calls: Mutex<Vec<(&'static str, String)>>,
}

/// What the recorder answers for [`Store::capabilities`]: every field unlike the default, so
/// a wrapper that does not pass them on shows.
pub const RECORDER_CAPABILITIES: Capabilities =
    Capabilities { offloads_io: true, offloads_in_place: true, keeps_body_bytes: false };

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    fn note(&self, method: &'static str, what: &str) {
        self.calls.lock().unwrap().push((method, what.to_string()));
    }

    fn op(&self, op: StoreOp, what: &str) {
        self.note(op.name(), what)
    }

    /// Forget the calls so far.
    pub fn clear(&self) {
        self.calls.lock().unwrap().clear();
    }

    /// Whether `method` was called naming `what`.
    pub fn saw(&self, method: &str, what: &str) -> bool {
        self.calls.lock().unwrap().iter().any(|(m, w)| *m == method && w == what)
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Store for Recorder {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.op(StoreOp::CreateBucket, bucket);
        self.inner.create_bucket(bucket).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.op(StoreOp::DeleteBucket, bucket);
        self.inner.delete_bucket(bucket).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.op(StoreOp::HeadBucket, bucket);
        self.inner.head_bucket(bucket).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.op(StoreOp::ListBuckets, "");
        self.inner.list_buckets().await
    }
    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        self.op(StoreOp::GetBucketConfig, name);
        self.inner.get_bucket_config(bucket, name).await
    }
    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.op(StoreOp::PutBucketConfig, name);
        self.inner.put_bucket_config(bucket, name, doc).await
    }
    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        self.op(StoreOp::BucketOwnerUid, bucket);
        self.inner.bucket_owner_uid(bucket).await
    }
    async fn owner(&self, bucket: &str, of: Owned<'_>) -> Result<Option<OwnerInfo>> {
        self.op(StoreOp::Owner, bucket);
        self.inner.owner(bucket, of).await
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.op(StoreOp::GetBucketTagging, bucket);
        self.inner.get_bucket_tagging(bucket).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.op(StoreOp::PutBucketTagging, bucket);
        self.inner.put_bucket_tagging(bucket, tags).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.op(StoreOp::DeleteBucketTagging, bucket);
        self.inner.delete_bucket_tagging(bucket).await
    }
    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        self.op(StoreOp::PutObject, key);
        self.inner.put_object(bucket, key, req, body).await
    }
    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        self.op(StoreOp::GetObject, key);
        self.inner.get_object(bucket, key, req).await
    }
    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        self.op(StoreOp::HeadObject, key);
        self.inner.head_object(bucket, key, req).await
    }
    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.op(StoreOp::DeleteObject, key);
        self.inner.delete_object(bucket, key).await
    }
    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        self.op(StoreOp::DeleteObjectVersion, key);
        self.inner.delete_object_version(bucket, key, version_id).await
    }
    async fn get_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Retention>> {
        self.op(StoreOp::GetObjectRetention, key);
        self.inner.get_object_retention(bucket, key, version_id).await
    }
    async fn get_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<bool>> {
        self.op(StoreOp::GetObjectLegalHold, key);
        self.inner.get_object_legal_hold(bucket, key, version_id).await
    }
    async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        retention: Option<Retention>,
    ) -> Result<()> {
        self.op(StoreOp::PutObjectRetention, key);
        self.inner.put_object_retention(bucket, key, version_id, retention).await
    }
    async fn put_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>, on: bool) -> Result<()> {
        self.op(StoreOp::PutObjectLegalHold, key);
        self.inner.put_object_legal_hold(bucket, key, version_id, on).await
    }
    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        self.op(StoreOp::ListObjectVersions, bucket);
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
        self.op(StoreOp::CopyObject, dst_key);
        self.inner.copy_object(src_bucket, src_key, dst_bucket, dst_key, req).await
    }
    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        self.op(StoreOp::RenameObject, dst_key);
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
        self.op(StoreOp::AppendObject, key);
        self.inner.append_object(bucket, key, offset, req, body).await
    }
    async fn fs(&self, bucket: &str, key: &str, op: FsOp) -> Result<FsAttr> {
        self.op(StoreOp::Fs, key);
        self.inner.fs(bucket, key, op).await
    }
    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.op(StoreOp::GetObjectAcl, key);
        self.inner.get_object_acl(bucket, key).await
    }
    /// Accepted and kept nowhere (the memory store has no object ACLs), so that writes through
    /// a wrapper that keeps ACL records succeed.
    async fn put_object_acl(&self, bucket: &str, key: &str, _doc: Option<Vec<u8>>) -> Result<()> {
        self.op(StoreOp::PutObjectAcl, key);
        self.inner.head_object(bucket, key, GetObjectRequest::default()).await.map(|_| ())
    }
    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        self.op(StoreOp::GetObjectTagging, key);
        self.inner.get_object_tagging(bucket, key, version_id).await
    }
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        self.op(StoreOp::PutObjectTagging, key);
        self.inner.put_object_tagging(bucket, key, version_id, tags).await
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.op(StoreOp::DeleteObjectTagging, key);
        self.inner.delete_object_tagging(bucket, key, version_id).await
    }
    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        self.op(StoreOp::ListObjects, bucket);
        self.inner.list_objects(bucket, req).await
    }
    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        self.op(StoreOp::CreateMultipartUpload, key);
        self.inner.create_multipart_upload(bucket, key, req).await
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
        self.op(StoreOp::UploadPart, key);
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
        self.op(StoreOp::UploadPartCopy, key);
        self.inner.upload_part_copy(bucket, key, upload_id, part_number, src).await
    }
    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.op(StoreOp::ListParts, key);
        self.inner.list_parts(bucket, key, upload_id, req).await
    }
    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        self.op(StoreOp::ListMultipartUploads, bucket);
        self.inner.list_multipart_uploads(bucket, req).await
    }
    async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletePart>,
        conditions: Conditions,
    ) -> Result<PutObjectOutput> {
        self.op(StoreOp::CompleteMultipartUpload, key);
        self.inner.complete_multipart_upload(bucket, key, upload_id, parts, conditions).await
    }
    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        self.op(StoreOp::CompleteMultipartUpload, key);
        self.inner.complete_multipart_upload_with(bucket, key, upload_id, req).await
    }
    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.op(StoreOp::AbortMultipartUpload, key);
        self.inner.abort_multipart_upload(bucket, key, upload_id).await
    }

    fn capabilities(&self) -> Capabilities {
        self.note(CAPABILITIES, "");
        RECORDER_CAPABILITIES
    }
    fn body_buffer(&self, len: usize) -> Option<BodyBuffer> {
        self.note(BODY_BUFFER, "");
        self.inner.body_buffer(len)
    }
    async fn appends(&self, bucket: &str) -> bool {
        self.note(APPENDS, bucket);
        self.inner.appends(bucket).await
    }

    fn get_object_inline(&self, _bucket: &str, key: &str, _req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        self.note(GET_OBJECT_INLINE, key);
        None
    }
    fn head_object_inline(&self, _bucket: &str, key: &str, _req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        self.note(HEAD_OBJECT_INLINE, key);
        None
    }
}

/// The bucket [`not_forwarded`] works in (created through the wrapper).
pub const BUCKET: &str = "forwarding";

fn key(op: StoreOp) -> String {
    format!("k-{}", op.name())
}

/// Calls every [`Store`] method once through `wrapped`, a wrapper over `recorder`, and answers
/// the methods that did not reach `recorder` (an operation by [`StoreOp::name`], the others by
/// the names above). `wrapped` must let the calls through (an authorizing wrapper: run this as
/// an administrator); what they answer does not matter, only whether the wrapped store was
/// asked. It works in [`BUCKET`] (and `forwarding-new`, `forwarding-del`), made here.
pub async fn not_forwarded(wrapped: &dyn Store, recorder: &Recorder) -> Vec<&'static str> {
    let b = BUCKET;
    let put = |k: String| async move {
        wrapped.put_object(b, &k, PutObjectRequest::default(), Body::from("x")).await.expect("put through the wrapper");
    };
    let upload = |k: String| async move {
        wrapped
            .create_multipart_upload(b, &k, CreateMultipartRequest::default())
            .await
            .expect("upload through the wrapper")
    };
    wrapped.create_bucket(b).await.expect("create the bucket through the wrapper");
    wrapped.create_bucket("forwarding-del").await.expect("create a second bucket through the wrapper");
    for op in StoreOp::ALL {
        put(key(*op)).await;
    }
    put(COMPLETE_SHORTHAND.to_string()).await;
    let mut uploads = std::collections::HashMap::new();
    for op in [
        StoreOp::UploadPart,
        StoreOp::UploadPartCopy,
        StoreOp::ListParts,
        StoreOp::CompleteMultipartUpload,
        StoreOp::AbortMultipartUpload,
    ] {
        uploads.insert(op.name(), upload(key(op)).await);
    }
    let shorthand_upload = upload(COMPLETE_SHORTHAND.to_string()).await;

    let mut missed = Vec::new();
    for &op in StoreOp::ALL {
        recorder.clear();
        let k = key(op);
        let k = k.as_str();
        let id = uploads.get(op.name()).map(String::as_str).unwrap_or("");
        // What the recorder notes for this call: the key, the configuration's name, the bucket.
        let what = match op {
            StoreOp::CreateBucket => {
                let _ = wrapped.create_bucket("forwarding-new").await;
                "forwarding-new"
            }
            StoreOp::DeleteBucket => {
                let _ = wrapped.delete_bucket("forwarding-del").await;
                "forwarding-del"
            }
            StoreOp::HeadBucket => {
                let _ = wrapped.head_bucket(b).await;
                b
            }
            StoreOp::ListBuckets => {
                let _ = wrapped.list_buckets().await;
                ""
            }
            StoreOp::GetBucketConfig => {
                let _ = wrapped.get_bucket_config(b, "cors").await;
                "cors"
            }
            StoreOp::PutBucketConfig => {
                let _ = wrapped.put_bucket_config(b, "cors", None).await;
                "cors"
            }
            StoreOp::BucketOwnerUid => {
                let _ = wrapped.bucket_owner_uid(b).await;
                b
            }
            StoreOp::Owner => {
                let _ = wrapped.owner(b, Owned::Object(k)).await;
                b
            }
            StoreOp::GetBucketTagging => {
                let _ = wrapped.get_bucket_tagging(b).await;
                b
            }
            StoreOp::PutBucketTagging => {
                let _ = wrapped.put_bucket_tagging(b, vec![("t".into(), "v".into())]).await;
                b
            }
            StoreOp::DeleteBucketTagging => {
                let _ = wrapped.delete_bucket_tagging(b).await;
                b
            }
            StoreOp::PutObject => {
                let _ = wrapped.put_object(b, k, PutObjectRequest::default(), Body::from("y")).await;
                k
            }
            StoreOp::GetObject => {
                let _ = wrapped.get_object(b, k, GetObjectRequest::default()).await;
                k
            }
            StoreOp::HeadObject => {
                let _ = wrapped.head_object(b, k, GetObjectRequest::default()).await;
                k
            }
            StoreOp::DeleteObject => {
                let _ = wrapped.delete_object(b, k).await;
                k
            }
            StoreOp::DeleteObjectVersion => {
                let _ = wrapped.delete_object_version(b, k, None).await;
                k
            }
            StoreOp::GetObjectRetention => {
                let _ = wrapped.get_object_retention(b, k, None).await;
                k
            }
            StoreOp::GetObjectLegalHold => {
                let _ = wrapped.get_object_legal_hold(b, k, None).await;
                k
            }
            StoreOp::PutObjectRetention => {
                let _ = wrapped.put_object_retention(b, k, None, None).await;
                k
            }
            StoreOp::PutObjectLegalHold => {
                let _ = wrapped.put_object_legal_hold(b, k, None, false).await;
                k
            }
            StoreOp::ListObjectVersions => {
                let _ = wrapped.list_object_versions(b, ListVersionsRequest::default()).await;
                b
            }
            StoreOp::CopyObject => {
                let _ = wrapped.copy_object(b, k, b, "k-copy", CopyObjectRequest::default()).await;
                "k-copy"
            }
            StoreOp::RenameObject => {
                let _ = wrapped.rename_object(b, k, "k-renamed", RenameObjectRequest::default()).await;
                "k-renamed"
            }
            StoreOp::AppendObject => {
                let _ = wrapped.append_object(b, k, 1, PutObjectRequest::default(), Body::from("z")).await;
                k
            }
            StoreOp::Fs => {
                let _ = wrapped.fs(b, k, FsOp::GetAttr).await;
                k
            }
            StoreOp::GetObjectAcl => {
                let _ = wrapped.get_object_acl(b, k).await;
                k
            }
            StoreOp::PutObjectAcl => {
                let _ = wrapped.put_object_acl(b, k, None).await;
                k
            }
            StoreOp::GetObjectTagging => {
                let _ = wrapped.get_object_tagging(b, k, None).await;
                k
            }
            StoreOp::PutObjectTagging => {
                let _ = wrapped.put_object_tagging(b, k, None, vec![("t".into(), "v".into())]).await;
                k
            }
            StoreOp::DeleteObjectTagging => {
                let _ = wrapped.delete_object_tagging(b, k, None).await;
                k
            }
            StoreOp::ListObjects => {
                let _ = wrapped.list_objects(b, ListObjectsRequest::default()).await;
                b
            }
            StoreOp::CreateMultipartUpload => {
                let _ = wrapped.create_multipart_upload(b, k, CreateMultipartRequest::default()).await;
                k
            }
            StoreOp::UploadPart => {
                let _ = wrapped.upload_part(b, k, id, 1, UploadPartRequest::default(), Body::from("p")).await;
                k
            }
            StoreOp::UploadPartCopy => {
                let src = PartCopySource {
                    bucket: b.to_string(),
                    key: k.to_string(),
                    version_id: None,
                    range: None,
                    conditions: Conditions::default(),
                };
                let _ = wrapped.upload_part_copy(b, k, id, 1, src).await;
                k
            }
            StoreOp::ListParts => {
                let _ = wrapped.list_parts(b, k, id, ListPartsRequest::default()).await;
                k
            }
            StoreOp::ListMultipartUploads => {
                let _ = wrapped.list_multipart_uploads(b, ListUploadsRequest::default()).await;
                b
            }
            StoreOp::CompleteMultipartUpload => {
                let _ = wrapped.complete_multipart_upload_with(b, k, id, CompleteMultipartRequest::default()).await;
                k
            }
            StoreOp::AbortMultipartUpload => {
                let _ = wrapped.abort_multipart_upload(b, k, id).await;
                k
            }
        };
        if !recorder.saw(op.name(), what) {
            missed.push(op.name());
        }
    }

    recorder.clear();
    let _ = wrapped
        .complete_multipart_upload(b, COMPLETE_SHORTHAND, &shorthand_upload, vec![], Conditions::default())
        .await;
    if !recorder.saw(StoreOp::CompleteMultipartUpload.name(), COMPLETE_SHORTHAND) {
        missed.push(COMPLETE_SHORTHAND);
    }
    recorder.clear();
    if wrapped.capabilities() != RECORDER_CAPABILITIES || !recorder.saw(CAPABILITIES, "") {
        missed.push(CAPABILITIES);
    }
    let _ = wrapped.body_buffer(1 << 20);
    if !recorder.saw(BODY_BUFFER, "") {
        missed.push(BODY_BUFFER);
    }
    let _ = wrapped.appends(b).await;
    if !recorder.saw(APPENDS, b) {
        missed.push(APPENDS);
    }
    let k = key(StoreOp::GetObject);
    let _ = wrapped.get_object_inline(b, &k, &GetObjectRequest::default());
    if !recorder.saw(GET_OBJECT_INLINE, &k) {
        missed.push(GET_OBJECT_INLINE);
    }
    let _ = wrapped.head_object_inline(b, &k, &GetObjectRequest::default());
    if !recorder.saw(HEAD_OBJECT_INLINE, &k) {
        missed.push(HEAD_OBJECT_INLINE);
    }
    missed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorder itself: every method, called directly, is noted (the check of the checker).
    #[tokio::test]
    async fn the_recorder_notes_every_method() {
        let r = Recorder::new();
        assert_eq!(not_forwarded(&r, &r).await, Vec::<&str>::new());
    }

    #[test]
    fn store_ops_are_listed_once() {
        let mut names: Vec<_> = StoreOp::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), StoreOp::ALL.len());
    }
}
