//! [`Layer`]: a wrapper that adds the same thing to every [`Store`] operation (a hook, a
//! caller's scope) writes one function, [`Layer::around`], and gets every operation forwarded
//! through it by the one implementation below: a wrapper written this way cannot miss an
//! operation, and a new operation reaches every such wrapper by being added here once.
//!
//! Wrappers that treat operations differently (`s3hpc_authz::Authorized`) implement [`Store`]
//! themselves, every method written out (see the rule on [`Store`]).

use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;

use crate::fsattr::{FsAttr, FsOp};
use crate::store::{Capabilities, Store, StoreOp};
use crate::types::*;
use crate::versions::{DeleteObjectOutput, ListVersionsPage, ListVersionsRequest};
use crate::{Body, BodyBuffer, Result, Retention};

/// The future of one operation of the wrapped store.
pub type OpFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// One operation on its way to the wrapped store, as a [`Layer`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call<'a> {
    pub op: StoreOp,
    /// Empty where the operation has none (ListBuckets). CopyObject: the destination's.
    pub bucket: &'a str,
    /// Empty where the operation has none (bucket operations, listings). CopyObject and
    /// RenameObject: the destination's.
    pub key: &'a str,
}

/// A store over another that adds the same thing to every operation.
pub trait Layer: Send + Sync + 'static {
    /// The wrapped store.
    fn inner(&self) -> &dyn Store;

    /// Runs one operation: `inner` is the wrapped store's answer to `call`, not yet polled. A
    /// layer may run something first, refuse (an `Err` without polling `inner`), or run
    /// `inner` inside a scope.
    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, inner: OpFuture<'a, T>) -> OpFuture<'a, T>;

    /// The layered store's [`Capabilities`], given the wrapped store's: the same by default.
    /// ([`Store::body_buffer`] and [`Store::appends`] are always the wrapped store's.)
    fn capabilities_over(&self, inner: Capabilities) -> Capabilities {
        inner
    }
}

fn call<'a>(op: StoreOp, bucket: &'a str, key: &'a str) -> Call<'a> {
    Call { op, bucket, key }
}

/// Every method written out, none taken from the trait's defaults: a method added to [`Store`]
/// fails `clippy` here until it is forwarded.
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<L: Layer> Store for L {
    // ---- operations: each through `around` ----

    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.around(call(StoreOp::CreateBucket, bucket, ""), self.inner().create_bucket(bucket)).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.around(call(StoreOp::DeleteBucket, bucket, ""), self.inner().delete_bucket(bucket)).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.around(call(StoreOp::HeadBucket, bucket, ""), self.inner().head_bucket(bucket)).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.around(call(StoreOp::ListBuckets, "", ""), self.inner().list_buckets()).await
    }
    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        self.around(call(StoreOp::GetBucketConfig, bucket, ""), self.inner().get_bucket_config(bucket, name)).await
    }
    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.around(call(StoreOp::PutBucketConfig, bucket, ""), self.inner().put_bucket_config(bucket, name, doc)).await
    }
    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        self.around(call(StoreOp::BucketOwnerUid, bucket, ""), self.inner().bucket_owner_uid(bucket)).await
    }
    async fn owner(&self, bucket: &str, of: Owned<'_>) -> Result<Option<OwnerInfo>> {
        self.around(call(StoreOp::Owner, bucket, ""), self.inner().owner(bucket, of)).await
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.around(call(StoreOp::GetBucketTagging, bucket, ""), self.inner().get_bucket_tagging(bucket)).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.around(call(StoreOp::PutBucketTagging, bucket, ""), self.inner().put_bucket_tagging(bucket, tags)).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.around(call(StoreOp::DeleteBucketTagging, bucket, ""), self.inner().delete_bucket_tagging(bucket)).await
    }
    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        self.around(call(StoreOp::PutObject, bucket, key), self.inner().put_object(bucket, key, req, body)).await
    }
    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        self.around(call(StoreOp::GetObject, bucket, key), self.inner().get_object(bucket, key, req)).await
    }
    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        self.around(call(StoreOp::HeadObject, bucket, key), self.inner().head_object(bucket, key, req)).await
    }
    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.around(call(StoreOp::DeleteObject, bucket, key), self.inner().delete_object(bucket, key)).await
    }
    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        let inner = self.inner().delete_object_version(bucket, key, version_id);
        self.around(call(StoreOp::DeleteObjectVersion, bucket, key), inner).await
    }
    async fn get_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Retention>> {
        let inner = self.inner().get_object_retention(bucket, key, version_id);
        self.around(call(StoreOp::GetObjectRetention, bucket, key), inner).await
    }
    async fn get_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<bool>> {
        let inner = self.inner().get_object_legal_hold(bucket, key, version_id);
        self.around(call(StoreOp::GetObjectLegalHold, bucket, key), inner).await
    }
    async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        retention: Option<Retention>,
    ) -> Result<()> {
        let inner = self.inner().put_object_retention(bucket, key, version_id, retention);
        self.around(call(StoreOp::PutObjectRetention, bucket, key), inner).await
    }
    async fn put_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>, on: bool) -> Result<()> {
        let inner = self.inner().put_object_legal_hold(bucket, key, version_id, on);
        self.around(call(StoreOp::PutObjectLegalHold, bucket, key), inner).await
    }
    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        self.around(call(StoreOp::ListObjectVersions, bucket, ""), self.inner().list_object_versions(bucket, req)).await
    }
    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        let inner = self.inner().copy_object(src_bucket, src_key, dst_bucket, dst_key, req);
        self.around(call(StoreOp::CopyObject, dst_bucket, dst_key), inner).await
    }
    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        let inner = self.inner().rename_object(bucket, src_key, dst_key, req);
        self.around(call(StoreOp::RenameObject, bucket, dst_key), inner).await
    }
    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        let inner = self.inner().append_object(bucket, key, offset, req, body);
        self.around(call(StoreOp::AppendObject, bucket, key), inner).await
    }
    async fn fs(&self, bucket: &str, key: &str, op: FsOp) -> Result<FsAttr> {
        self.around(call(StoreOp::Fs, bucket, key), self.inner().fs(bucket, key, op)).await
    }
    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.around(call(StoreOp::GetObjectAcl, bucket, key), self.inner().get_object_acl(bucket, key)).await
    }
    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.around(call(StoreOp::PutObjectAcl, bucket, key), self.inner().put_object_acl(bucket, key, doc)).await
    }
    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        let inner = self.inner().get_object_tagging(bucket, key, version_id);
        self.around(call(StoreOp::GetObjectTagging, bucket, key), inner).await
    }
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        let inner = self.inner().put_object_tagging(bucket, key, version_id, tags);
        self.around(call(StoreOp::PutObjectTagging, bucket, key), inner).await
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        let inner = self.inner().delete_object_tagging(bucket, key, version_id);
        self.around(call(StoreOp::DeleteObjectTagging, bucket, key), inner).await
    }
    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        self.around(call(StoreOp::ListObjects, bucket, ""), self.inner().list_objects(bucket, req)).await
    }
    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        let inner = self.inner().create_multipart_upload(bucket, key, req);
        self.around(call(StoreOp::CreateMultipartUpload, bucket, key), inner).await
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
        let inner = self.inner().upload_part(bucket, key, upload_id, part_number, req, body);
        self.around(call(StoreOp::UploadPart, bucket, key), inner).await
    }
    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        let inner = self.inner().upload_part_copy(bucket, key, upload_id, part_number, src);
        self.around(call(StoreOp::UploadPartCopy, bucket, key), inner).await
    }
    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.around(call(StoreOp::ListParts, bucket, key), self.inner().list_parts(bucket, key, upload_id, req)).await
    }
    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let inner = self.inner().list_multipart_uploads(bucket, req);
        self.around(call(StoreOp::ListMultipartUploads, bucket, ""), inner).await
    }
    async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: Vec<CompletePart>,
        conditions: Conditions,
    ) -> Result<PutObjectOutput> {
        let inner = self.inner().complete_multipart_upload(bucket, key, upload_id, parts, conditions);
        self.around(call(StoreOp::CompleteMultipartUpload, bucket, key), inner).await
    }
    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let inner = self.inner().complete_multipart_upload_with(bucket, key, upload_id, req);
        self.around(call(StoreOp::CompleteMultipartUpload, bucket, key), inner).await
    }
    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        let inner = self.inner().abort_multipart_upload(bucket, key, upload_id);
        self.around(call(StoreOp::AbortMultipartUpload, bucket, key), inner).await
    }

    // ---- capabilities: the wrapped store's ----

    fn capabilities(&self) -> Capabilities {
        self.capabilities_over(self.inner().capabilities())
    }
    fn body_buffer(&self, len: usize) -> Option<BodyBuffer> {
        self.inner().body_buffer(len)
    }
    async fn appends(&self, bucket: &str) -> bool {
        self.inner().appends(bucket).await
    }

    // ---- fast paths: deliberately not forwarded ----

    /// `None`: the inner store's fast path would skip [`Layer::around`] (which cannot run on
    /// the calling thread: it is asynchronous), so the caller takes `get_object`, through it.
    fn get_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        None
    }
    /// `None`, as [`get_object_inline`](Store::get_object_inline).
    fn head_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        None
    }
}
