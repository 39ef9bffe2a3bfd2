//! The `noop` backend: reads and discards PUT bodies, answers reads from one fixed object held in
//! memory. It measures the front end and the client without storage cost; it stores no objects.
//! Bucket configuration documents (owner, ACL, policy: what S3 authorization reads) are kept in
//! memory, so a gateway on it authorizes requests as on any other backend.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;

use crate::body::Body;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::types::*;

/// See the module documentation.
pub struct NoopStore {
    object: Bytes,
    etag: String,
    started: SystemTime,
    /// (bucket, document name) -> document.
    configs: Mutex<HashMap<(String, String), Vec<u8>>>,
}

impl NoopStore {
    /// Every GET returns `object_size` zero bytes.
    pub fn new(object_size: usize) -> Self {
        let object = Bytes::from(vec![0u8; object_size]);
        let etag = crate::checksum::md5_hex(&object);
        NoopStore { object, etag, started: SystemTime::now(), configs: Mutex::default() }
    }

    fn info(&self, key: &str) -> ObjectInfo {
        ObjectInfo {
            version_id: None,
            lock: Default::default(),
            key: key.to_string(),
            size: self.object.len() as u64,
            etag: self.etag.clone(),
            last_modified: self.started,
            meta: ObjectMeta { content_type: Some("application/octet-stream".into()), ..Default::default() },
            checksum: None,
            part_sizes: Vec::new(),
            part_checksums: Vec::new(),
            tag_count: 0,
        }
    }

    async fn drain(&self, body: Body, content_length: Option<u64>) -> Result<PutObjectOutput> {
        let size = match body {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::File { len, .. } => len,
            Body::Stream(mut s) => {
                let mut n = 0u64;
                while let Some(c) = s.next().await {
                    n += c?.len() as u64;
                }
                n
            }
        };
        if let Some(want) = content_length
            && want != size
        {
            return Err(Error::new(crate::ErrorCode::IncompleteBody, "body length differs from Content-Length"));
        }
        Ok(PutObjectOutput {
            version_id: None,
            etag: self.etag.clone(),
            checksum: None,
            size,
            last_modified: SystemTime::now(),
        })
    }
}

impl Default for NoopStore {
    fn default() -> Self {
        NoopStore::new(4096)
    }
}

#[async_trait]
impl Store for NoopStore {
    fn capabilities(&self) -> crate::Capabilities {
        crate::Capabilities { keeps_body_bytes: false, ..crate::Capabilities::DEFAULT }
    }
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        crate::names::validate_bucket_name(bucket)
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.configs.lock().unwrap_or_else(|e| e.into_inner()).retain(|(b, _), _| b != bucket);
        Ok(())
    }
    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        let m = self.configs.lock().unwrap_or_else(|e| e.into_inner());
        Ok(m.get(&(bucket.to_string(), name.to_string())).cloned())
    }
    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let mut m = self.configs.lock().unwrap_or_else(|e| e.into_inner());
        let k = (bucket.to_string(), name.to_string());
        match doc {
            Some(d) => m.insert(k, d),
            None => m.remove(&k),
        };
        Ok(())
    }
    async fn head_bucket(&self, _bucket: &str) -> Result<()> {
        Ok(())
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        Ok(Vec::new())
    }
    async fn get_bucket_tagging(&self, _bucket: &str) -> Result<Tags> {
        Err(Error::code(crate::ErrorCode::NoSuchTagSet))
    }
    async fn put_bucket_tagging(&self, _bucket: &str, _tags: Tags) -> Result<()> {
        Ok(())
    }
    async fn delete_bucket_tagging(&self, _bucket: &str) -> Result<()> {
        Ok(())
    }
    async fn put_object(
        &self,
        _bucket: &str,
        _key: &str,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        self.drain(body, req.content_length).await
    }
    async fn get_object(&self, _bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        let info = self.info(key);
        let range = match (req.range, req.part_number) {
            (Some(r), _) => Some(r.resolve(info.size)?),
            (None, Some(n)) => Some(info.part_range(n)?),
            _ => None,
        };
        let body = match range {
            Some((off, len)) => Body::from(self.object.slice(off as usize..(off + len) as usize)),
            None => Body::from(self.object.clone()),
        };
        Ok(GetObjectOutput { info, range, body })
    }
    async fn head_object(&self, _bucket: &str, key: &str, _req: GetObjectRequest) -> Result<ObjectInfo> {
        Ok(self.info(key))
    }
    async fn delete_object(&self, _bucket: &str, _key: &str) -> Result<()> {
        Ok(())
    }
    async fn copy_object(
        &self,
        _sb: &str,
        _sk: &str,
        _db: &str,
        _dk: &str,
        _req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        Ok(PutObjectOutput {
            version_id: None,
            etag: self.etag.clone(),
            checksum: None,
            size: self.object.len() as u64,
            last_modified: SystemTime::now(),
        })
    }
    async fn get_object_tagging(&self, _bucket: &str, _key: &str, _version_id: Option<&str>) -> Result<ObjectTagging> {
        Ok(ObjectTagging::default())
    }
    async fn put_object_tagging(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _tags: Tags,
    ) -> Result<Option<String>> {
        Ok(None)
    }
    async fn delete_object_tagging(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> Result<Option<String>> {
        Ok(None)
    }
    async fn list_objects(&self, _bucket: &str, _req: ListObjectsRequest) -> Result<ListObjectsPage> {
        Ok(ListObjectsPage::default())
    }
    async fn create_multipart_upload(&self, _bucket: &str, _key: &str, _req: CreateMultipartRequest) -> Result<String> {
        Ok("noop".to_string())
    }
    async fn upload_part(
        &self,
        _b: &str,
        _k: &str,
        _u: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo> {
        let out = self.drain(body, req.content_length).await?;
        Ok(PartInfo { part_number, etag: out.etag, size: out.size, last_modified: out.last_modified, checksum: None })
    }
    async fn upload_part_copy(
        &self,
        _b: &str,
        _k: &str,
        _u: &str,
        part_number: u32,
        _src: PartCopySource,
    ) -> Result<PartInfo> {
        Ok(PartInfo {
            part_number,
            etag: self.etag.clone(),
            size: self.object.len() as u64,
            last_modified: SystemTime::now(),
            checksum: None,
        })
    }
    async fn list_parts(&self, _b: &str, _k: &str, _u: &str, _req: ListPartsRequest) -> Result<ListPartsPage> {
        Ok(ListPartsPage::default())
    }
    async fn list_multipart_uploads(&self, _bucket: &str, _req: ListUploadsRequest) -> Result<ListUploadsPage> {
        Ok(ListUploadsPage::default())
    }
    async fn complete_multipart_upload_with(
        &self,
        _b: &str,
        _k: &str,
        _u: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let etag = crate::checksum::multipart_etag(req.parts.iter().map(|p| p.etag.as_str()));
        Ok(PutObjectOutput { version_id: None, etag, checksum: None, size: 0, last_modified: SystemTime::now() })
    }
    async fn abort_multipart_upload(&self, _b: &str, _k: &str, _u: &str) -> Result<()> {
        Ok(())
    }
}
