//! A [`Store`] wrapper that injects faults: every n-th call of chosen operations fails (or
//! hangs, to exercise the request timeout). Used by the tests of the benchmark's error handling.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use s3hpc_core::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Fail with this code.
    Fail(ErrorCode),
    /// Never answer (the caller's timeout must fire).
    Hang,
}

pub struct FaultStore {
    inner: DynStore,
    /// Operation names to fault: `put`, `get`, `head`, `delete`, `list`, `create-bucket`.
    ops: Vec<&'static str>,
    every: u64,
    kind: FaultKind,
    calls: AtomicU64,
    injected: AtomicU64,
}

impl FaultStore {
    /// Fault every `every`-th call (1 = all) of the operations in `ops`.
    pub fn new(inner: DynStore, ops: &[&'static str], every: u64, kind: FaultKind) -> FaultStore {
        FaultStore {
            inner,
            ops: ops.to_vec(),
            every: every.max(1),
            kind,
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    async fn gate(&self, op: &'static str) -> Result<()> {
        if !self.ops.contains(&op) {
            return Ok(());
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if !n.is_multiple_of(self.every) {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        match self.kind {
            FaultKind::Fail(code) => Err(Error::new(code, format!("injected fault in {op}"))),
            FaultKind::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Err(Error::internal("hang ended"))
            }
        }
    }
}

#[async_trait]
impl Store for FaultStore {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.gate("create-bucket").await?;
        self.inner.create_bucket(bucket).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.inner.delete_bucket(bucket).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.inner.head_bucket(bucket).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.inner.list_buckets().await
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.inner.get_bucket_tagging(bucket).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.inner.put_bucket_tagging(bucket, tags).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.inner.delete_bucket_tagging(bucket).await
    }
    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        self.gate("put").await?;
        self.inner.put_object(bucket, key, req, body).await
    }
    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        self.gate("get").await?;
        self.inner.get_object(bucket, key, req).await
    }
    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        self.gate("head").await?;
        self.inner.head_object(bucket, key, req).await
    }
    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.gate("delete").await?;
        self.inner.delete_object(bucket, key).await
    }
    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        self.inner.copy_object(src_bucket, src_key, dst_bucket, dst_key, req).await
    }
    async fn get_object_tagging(&self, bucket: &str, key: &str) -> Result<Tags> {
        self.inner.get_object_tagging(bucket, key).await
    }
    async fn put_object_tagging(&self, bucket: &str, key: &str, tags: Tags) -> Result<()> {
        self.inner.put_object_tagging(bucket, key, tags).await
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str) -> Result<()> {
        self.inner.delete_object_tagging(bucket, key).await
    }
    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        self.gate("list").await?;
        self.inner.list_objects(bucket, req).await
    }
    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
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
        self.inner.upload_part(bucket, key, upload_id, part_number, req, body).await
    }
    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src_bucket: &str,
        src_key: &str,
        src_range: Option<ByteRange>,
        src_conditions: Conditions,
    ) -> Result<PartInfo> {
        self.inner
            .upload_part_copy(bucket, key, upload_id, part_number, src_bucket, src_key, src_range, src_conditions)
            .await
    }
    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.inner.list_parts(bucket, key, upload_id, req).await
    }
    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
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
        self.inner.complete_multipart_upload(bucket, key, upload_id, parts, conditions).await
    }
    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.inner.abort_multipart_upload(bucket, key, upload_id).await
    }
}
