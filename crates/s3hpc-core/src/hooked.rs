//! A store that delegates to another and runs a hook before each operation: the one place that
//! forwards every [`Store`] method, for wrappers that inject faults, delays or hangs (the bench's
//! fault injection, tests that hold a request "in flight" inside a server).

use async_trait::async_trait;

use crate::store::{DynStore, Store};
use crate::types::*;
use crate::{Body, Result};

/// A [`Store`] operation, as seen by a [`Hook`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    CreateBucket,
    DeleteBucket,
    HeadBucket,
    ListBuckets,
    GetBucketTagging,
    PutBucketTagging,
    DeleteBucketTagging,
    PutObject,
    GetObject,
    HeadObject,
    DeleteObject,
    /// The bucket and key given to the hook are the destination's.
    CopyObject,
    GetObjectTagging,
    PutObjectTagging,
    DeleteObjectTagging,
    ListObjects,
    CreateMultipartUpload,
    UploadPart,
    UploadPartCopy,
    ListParts,
    ListMultipartUploads,
    CompleteMultipartUpload,
    AbortMultipartUpload,
    /// The key given to the hook is the destination's.
    RenameObject,
    /// PutObject with a write offset.
    AppendObject,
    /// s3hpc's file-system extension (`Store::fs`).
    Fs,
}

/// Runs before each operation of a [`HookedStore`]; an `Err` is returned to the caller instead
/// of calling the inner store. `bucket` and `key` are empty where the operation has none.
#[async_trait]
pub trait Hook: Send + Sync + 'static {
    async fn before(&self, op: Op, bucket: &str, key: &str) -> Result<()>;
}

/// `inner` with `hook` run before every operation.
pub struct HookedStore<H> {
    inner: DynStore,
    hook: H,
    offloads_io: bool,
}

impl<H: Hook> HookedStore<H> {
    pub fn new(inner: DynStore, hook: H) -> HookedStore<H> {
        HookedStore { inner, hook, offloads_io: false }
    }

    /// Report [`Store::offloads_io`] as `true`, so servers run the wrapped store's quick
    /// requests in batches on blocking-pool threads (hooks then run there too). Off by default:
    /// a hook that holds one request would also hold the requests batched after it.
    pub fn offloading_io(mut self) -> HookedStore<H> {
        self.offloads_io = true;
        self
    }

    pub fn hook(&self) -> &H {
        &self.hook
    }
}

#[async_trait]
impl<H: Hook> Store for HookedStore<H> {
    fn offloads_io(&self) -> bool {
        self.offloads_io
    }
    fn keeps_body_bytes(&self) -> bool {
        self.inner.keeps_body_bytes()
    }
    fn body_buffer(&self, len: usize) -> Option<crate::BodyBuffer> {
        self.inner.body_buffer(len)
    }
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.hook.before(Op::CreateBucket, bucket, "").await?;
        self.inner.create_bucket(bucket).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.hook.before(Op::DeleteBucket, bucket, "").await?;
        self.inner.delete_bucket(bucket).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.hook.before(Op::HeadBucket, bucket, "").await?;
        self.inner.head_bucket(bucket).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.hook.before(Op::ListBuckets, "", "").await?;
        self.inner.list_buckets().await
    }
    async fn owner(&self, bucket: &str, of: Owned<'_>) -> Result<Option<OwnerInfo>> {
        self.inner.owner(bucket, of).await
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.hook.before(Op::GetBucketTagging, bucket, "").await?;
        self.inner.get_bucket_tagging(bucket).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.hook.before(Op::PutBucketTagging, bucket, "").await?;
        self.inner.put_bucket_tagging(bucket, tags).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.hook.before(Op::DeleteBucketTagging, bucket, "").await?;
        self.inner.delete_bucket_tagging(bucket).await
    }
    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        self.hook.before(Op::PutObject, bucket, key).await?;
        self.inner.put_object(bucket, key, req, body).await
    }
    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        self.hook.before(Op::GetObject, bucket, key).await?;
        self.inner.get_object(bucket, key, req).await
    }
    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        self.hook.before(Op::HeadObject, bucket, key).await?;
        self.inner.head_object(bucket, key, req).await
    }
    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.hook.before(Op::DeleteObject, bucket, key).await?;
        self.inner.delete_object(bucket, key).await
    }
    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<crate::DeleteObjectOutput> {
        self.hook.before(Op::DeleteObject, bucket, key).await?;
        self.inner.delete_object_version(bucket, key, version_id).await
    }
    async fn get_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<crate::Retention>> {
        self.hook.before(Op::HeadObject, bucket, key).await?;
        self.inner.get_object_retention(bucket, key, version_id).await
    }
    async fn get_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<bool>> {
        self.hook.before(Op::HeadObject, bucket, key).await?;
        self.inner.get_object_legal_hold(bucket, key, version_id).await
    }
    async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        retention: Option<crate::Retention>,
    ) -> Result<()> {
        self.hook.before(Op::PutObjectTagging, bucket, key).await?;
        self.inner.put_object_retention(bucket, key, version_id, retention).await
    }
    async fn put_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>, on: bool) -> Result<()> {
        self.hook.before(Op::PutObjectTagging, bucket, key).await?;
        self.inner.put_object_legal_hold(bucket, key, version_id, on).await
    }
    async fn list_object_versions(
        &self,
        bucket: &str,
        req: crate::ListVersionsRequest,
    ) -> Result<crate::ListVersionsPage> {
        self.hook.before(Op::ListObjects, bucket, "").await?;
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
        self.hook.before(Op::CopyObject, dst_bucket, dst_key).await?;
        self.inner.copy_object(src_bucket, src_key, dst_bucket, dst_key, req).await
    }
    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        self.hook.before(Op::RenameObject, bucket, dst_key).await?;
        self.inner.rename_object(bucket, src_key, dst_key, req).await
    }
    async fn appends(&self, bucket: &str) -> bool {
        self.inner.appends(bucket).await
    }
    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        self.hook.before(Op::AppendObject, bucket, key).await?;
        self.inner.append_object(bucket, key, offset, req, body).await
    }
    async fn fs(&self, bucket: &str, key: &str, op: crate::fsattr::FsOp) -> Result<crate::fsattr::FsAttr> {
        self.hook.before(Op::Fs, bucket, key).await?;
        self.inner.fs(bucket, key, op).await
    }
    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        self.hook.before(Op::GetObjectTagging, bucket, key).await?;
        self.inner.get_object_tagging(bucket, key, version_id).await
    }
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        self.hook.before(Op::PutObjectTagging, bucket, key).await?;
        self.inner.put_object_tagging(bucket, key, version_id, tags).await
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.hook.before(Op::DeleteObjectTagging, bucket, key).await?;
        self.inner.delete_object_tagging(bucket, key, version_id).await
    }
    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        self.hook.before(Op::ListObjects, bucket, "").await?;
        self.inner.list_objects(bucket, req).await
    }
    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        self.hook.before(Op::CreateMultipartUpload, bucket, key).await?;
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
        self.hook.before(Op::UploadPart, bucket, key).await?;
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
        self.hook.before(Op::UploadPartCopy, bucket, key).await?;
        self.inner.upload_part_copy(bucket, key, upload_id, part_number, src).await
    }
    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.hook.before(Op::ListParts, bucket, key).await?;
        self.inner.list_parts(bucket, key, upload_id, req).await
    }
    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        self.hook.before(Op::ListMultipartUploads, bucket, "").await?;
        self.inner.list_multipart_uploads(bucket, req).await
    }
    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        self.hook.before(Op::CompleteMultipartUpload, bucket, key).await?;
        self.inner.complete_multipart_upload_with(bucket, key, upload_id, req).await
    }
    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.hook.before(Op::AbortMultipartUpload, bucket, key).await?;
        self.inner.abort_multipart_upload(bucket, key, upload_id).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::memory::MemoryStore;
    use crate::{Error, ErrorCode};

    /// Refuses HEAD of key `no`; counts every call.
    struct Refuse(AtomicUsize);

    #[async_trait]
    impl Hook for Refuse {
        async fn before(&self, op: Op, _bucket: &str, key: &str) -> Result<()> {
            self.0.fetch_add(1, Ordering::Relaxed);
            if op == Op::HeadObject && key == "no" {
                return Err(Error::new(ErrorCode::AccessDenied, "refused by hook"));
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn hook_runs_before_each_operation_and_can_refuse() {
        let s = HookedStore::new(Arc::new(MemoryStore::new()), Refuse(AtomicUsize::new(0)));
        s.create_bucket("bkt").await.unwrap();
        for k in ["yes", "no"] {
            s.put_object("bkt", k, PutObjectRequest::default(), Body::from("x")).await.unwrap();
        }
        assert!(s.head_object("bkt", "yes", GetObjectRequest::default()).await.is_ok());
        let e = s.head_object("bkt", "no", GetObjectRequest::default()).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied);
        assert_eq!(s.hook().0.load(Ordering::Relaxed), 5);
    }
}
