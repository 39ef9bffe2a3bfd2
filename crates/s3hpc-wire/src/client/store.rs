//! `Store` for [`WireClient`]: each operation as a request frame and its answer.

use super::*;

pub(super) fn fields(r: &Resp) -> Dec<'_> {
    Dec::new(&r.payload[1..])
}

/// The success payload of operation `O`, read with its declared encoding (the one the server
/// wrote it with), to its end.
pub(super) fn answer<O: Op>(r: &Resp) -> Result<Output<O>> {
    get_output::<O>(&mut fields(r))
}

#[async_trait]
impl Store for WireClient {
    /// A buffer in one of a connection's upload slots (Unix socket with descriptor passing,
    /// [`FD_BODY_MIN`](frame::FD_BODY_MIN) to [`FD_BODY_MAX`](frame::FD_BODY_MAX) bytes): a
    /// body sent from it crosses neither the socket nor a copy. Requests with such a body go on
    /// the slot's connection. It counts against that connection's slots (16, 256 MiB) until its
    /// last `Bytes` is dropped; `None` when they are all taken.
    fn body_buffer(&self, len: usize) -> Option<BodyBuffer> {
        if len < frame::FD_BODY_MIN || len as u64 > frame::FD_BODY_MAX {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let conn = self.slots[i].conn.lock().unwrap().clone()?;
        if conn.dead.load(Ordering::Acquire) || !conn.fd_bodies {
            return None;
        }
        let slot = SlotLease::take(&conn, len)?.slot.take();
        Some(BodyBuffer::new(LentBuffer { conn: Arc::downgrade(&conn), slot, len }))
    }

    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::CreateBucket { bucket: bucket.into() }).await
    }
    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::DeleteBucket { bucket: bucket.into() }).await
    }
    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::HeadBucket { bucket: bucket.into() }).await
    }
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let r = self.call(Request::ListBuckets {}, None, None).await?;
        answer::<ops::ListBuckets>(&r)
    }
    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        let r = self.call(Request::GetBucketTagging { bucket: bucket.into() }, None, None).await?;
        answer::<ops::GetBucketTagging>(&r)
    }
    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        self.call_doc(Request::GetBucketConfig { bucket: bucket.into(), name: name.into() }).await
    }
    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.call_unit(Request::PutBucketConfig { bucket: bucket.into(), name: name.into(), doc }).await
    }
    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        let req = Request::Fs { bucket: bucket.into(), key: key.into(), op: op.encode() };
        let r = self.call(req, None, None).await?;
        let attr = answer::<ops::Fs>(&r)?;
        s3hpc_core::fsattr::FsAttr::parse(&attr)
    }

    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.call_doc(Request::GetObjectAcl { bucket: bucket.into(), key: key.into() }).await
    }
    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        self.call_unit(Request::PutObjectAcl { bucket: bucket.into(), key: key.into(), doc }).await
    }
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.call_unit(Request::PutBucketTagging { bucket: bucket.into(), tags }).await
    }
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.call_unit(Request::DeleteBucketTagging { bucket: bucket.into() }).await
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        refuse_lock(&req.lock)?;
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::PutObject {
            bucket: bucket.into(),
            key: key.into(),
            meta: req.meta,
            tags: req.tags,
            conditions: req.conditions,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::PutObject>(&r)
    }

    /// The binary protocol is s3hpc's own: its server always appends.
    async fn appends(&self, _bucket: &str) -> bool {
        true
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::AppendObject {
            bucket: bucket.into(),
            key: key.into(),
            offset,
            meta: req.meta,
            tags: req.tags,
            conditions: req.conditions,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::AppendObject>(&r)
    }

    async fn rename_object(
        &self,
        bucket: &str,
        src_key: &str,
        dst_key: &str,
        req: s3hpc_core::RenameObjectRequest,
    ) -> Result<()> {
        self.call_unit(Request::RenameObject {
            bucket: bucket.into(),
            src_key: src_key.into(),
            dst_key: dst_key.into(),
            source_conditions: req.source_conditions,
            conditions: req.conditions,
            client_token: req.client_token,
        })
        .await
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        refuse_version(&req.version_id)?;
        let r =
            self.call(Request::GetObject { bucket: bucket.into(), key: key.into(), req: (&req).into() }, None, None);
        let mut r = r.await?;
        let (file, stream) = (r.file.take(), r.stream.take());
        let mut d = fields(&r);
        let (info, range) = <<ops::GetObject as Op>::Out as Field>::get(&mut d)?;
        let at = 1 + d.pos();
        let body = if let Some(file) = file {
            let (offset, len) = (d.var()?, d.var()?);
            d.end()?;
            if offset.checked_add(len).is_none() {
                return Err(conn_lost("bad file region"));
            }
            Body::File { file, offset, len }
        } else if r.inline {
            Body::from(r.payload.slice(at..))
        } else {
            d.end()?;
            match stream {
                Some(s) => Body::Stream(Box::pin(s)),
                None => Body::Empty,
            }
        };
        Ok(GetObjectOutput { info, range, body })
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        refuse_version(&req.version_id)?;
        let r = Request::HeadObject { bucket: bucket.into(), key: key.into(), req: (&req).into() };
        let r = self.call(r, None, None).await?;
        answer::<ops::HeadObject>(&r)
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        self.call_unit(Request::DeleteObject { bucket: bucket.into(), key: key.into() }).await
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        refuse_lock(&req.lock)?;
        refuse_version(&req.source_version_id)?;
        let r = Request::CopyObject {
            src_bucket: src_bucket.into(),
            src_key: src_key.into(),
            dst_bucket: dst_bucket.into(),
            dst_key: dst_key.into(),
            req: (&req).into(),
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::CopyObject>(&r)
    }

    async fn get_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<s3hpc_core::ObjectTagging> {
        refuse_version(&version_id.map(str::to_owned))?;
        let r = self.call(Request::GetObjectTagging { bucket: bucket.into(), key: key.into() }, None, None).await?;
        let t = answer::<ops::GetObjectTagging>(&r)?;
        Ok(s3hpc_core::ObjectTagging { tags: t, version_id: None })
    }
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        refuse_version(&version_id.map(str::to_owned))?;
        self.call_unit(Request::PutObjectTagging { bucket: bucket.into(), key: key.into(), tags }).await.map(|_| None)
    }
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        refuse_version(&version_id.map(str::to_owned))?;
        self.call_unit(Request::DeleteObjectTagging { bucket: bucket.into(), key: key.into() }).await.map(|_| None)
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let r = self.call(Request::ListObjects { bucket: bucket.into(), req }, None, None).await?;
        answer::<ops::ListObjects>(&r)
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        refuse_lock(&req.lock)?;
        let r = Request::CreateMultipart {
            bucket: bucket.into(),
            key: key.into(),
            meta: req.meta,
            tags: req.tags,
            checksum_algorithm: req.checksum_algorithm,
            checksum_type: req.checksum_type,
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::CreateMultipart>(&r)
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
        let (upload, deferred) = upload_fields(req.content_md5, req.checksum.as_ref(), req.content_length);
        let r = Request::UploadPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part_number,
            upload,
        };
        let r = self.call(r, Some(body), deferred).await?;
        answer::<ops::UploadPart>(&r)
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        refuse_version(&src.version_id)?;
        let r = Request::UploadPartCopy {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part_number,
            src_bucket: src.bucket,
            src_key: src.key,
            src_range: src.range,
            src_conditions: src.conditions,
        };
        let r = self.call(r, None, None).await?;
        answer::<ops::UploadPartCopy>(&r)
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        let r = Request::ListParts { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into(), req };
        let r = self.call(r, None, None).await?;
        answer::<ops::ListParts>(&r)
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let r = self.call(Request::ListUploads { bucket: bucket.into(), req }, None, None).await?;
        answer::<ops::ListUploads>(&r)
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let r = Request::CompleteMultipart { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into(), req };
        let r = self.call(r, None, None).await?;
        answer::<ops::CompleteMultipart>(&r)
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.call_unit(Request::AbortMultipart { bucket: bucket.into(), key: key.into(), upload_id: upload_id.into() })
            .await
    }
}

/// The protocol does not carry version ids (PROTOCOL.md 8a): a request naming a version is
/// refused rather than answered from the current version.
pub(super) fn refuse_version(version_id: &Option<String>) -> Result<()> {
    match version_id {
        None => Ok(()),
        Some(_) => Err(Error::not_implemented("the binary protocol does not carry version ids")),
    }
}

/// The protocol does not carry object lock parameters (PROTOCOL.md 8a): a write that asks for a
/// retention or legal hold is refused rather than stored without it.
pub(super) fn refuse_lock(lock: &s3hpc_core::ObjectLock) -> Result<()> {
    if lock.is_empty() {
        Ok(())
    } else {
        Err(Error::not_implemented("the binary protocol does not carry object lock parameters"))
    }
}
