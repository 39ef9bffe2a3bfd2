//! `Store` for [`S3Client`]: each operation as its S3 REST call.

use super::*;

impl S3Client {
    /// Whether the server names itself s3hpc (`Server: s3hpc`), asked once.
    async fn is_s3hpc(&self, bucket: &str) -> bool {
        let probe = self
            .inner
            .server_s3hpc
            .get_or_try_init(|| async {
                // Any answer names the server, an error too (the caller may not list the bucket).
                let resp = self.exchange(Req::new(Method::HEAD, Some(bucket), None)).await?;
                let s3hpc = resp.headers().get(http::header::SERVER).is_some_and(|v| v.as_bytes() == b"s3hpc");
                let _ = read_body(resp.into_body(), MAX_XML).await;
                Ok::<_, Error>(s3hpc)
            })
            .await;
        probe.is_ok_and(|b| *b)
    }
}

#[async_trait]
impl Store for S3Client {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.send_empty(Req::new(Method::PUT, Some(bucket), None)).await.map(|_| ())
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.send_empty(Req::new(Method::DELETE, Some(bucket), None)).await.map(|_| ())
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.send_empty(Req::new(Method::HEAD, Some(bucket), None)).await.map(|_| ())
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let (_, n) = self.send_xml(Req::new(Method::GET, None, None)).await?;
        let list = n.child("Buckets").unwrap_or(&n);
        let mut v: Vec<BucketInfo> = list
            .children("Bucket")
            .map(|b| BucketInfo {
                name: b.text_of("Name").unwrap_or("").to_string(),
                created: xml_time(b, "CreationDate"),
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(v)
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.tagging_get(bucket, None, None).await.map(|t| t.tags)
    }

    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        self.tagging_put(bucket, None, None, tags).await.map(|_| ())
    }

    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.tagging_delete(bucket, None, None).await.map(|_| ())
    }

    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        names::validate_config_name(name)?;
        if name == s3hpc_core::versions::VERSIONING_CONFIG {
            // The seam's document is the state; S3's is a VersioningConfiguration.
            let (_, n) = self.send_xml(Req::new(Method::GET, Some(bucket), None).q(name, None)).await?;
            return Ok(n.text_of("Status").map(|s| s.trim().as_bytes().to_vec()));
        }
        if name == s3hpc_core::lock::OBJECT_LOCK_CONFIG {
            return match self.send_xml(Req::new(Method::GET, Some(bucket), None).q("object-lock", None)).await {
                Ok((_, n)) => Ok(lock::config_doc(&n)),
                Err(e) if e.code == ErrorCode::ObjectLockConfigurationNotFoundError => Ok(None),
                Err(e) => Err(e),
            };
        }
        let r = Req::new(Method::GET, Some(bucket), None).q(name, None);
        let resp = self.send(r).await?;
        Ok(Some(read_body(resp.into_body(), MAX_XML).await?.to_vec()))
    }

    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        names::validate_config_name(name)?;
        if name == s3hpc_core::versions::VERSIONING_CONFIG {
            let state = doc.as_deref().and_then(VersioningState::from_doc).ok_or_else(|| {
                Error::invalid_argument("a versioning document is Enabled or Suspended (it cannot be removed)")
            })?;
            let xml = format!(
                "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>{}</Status></VersioningConfiguration>",
                state.as_str()
            );
            let r =
                doc_body(Req::new(Method::PUT, Some(bucket), None).q(name, None), xml.into_bytes(), "application/xml")?;
            return self.send_empty(r).await.map(|_| ());
        }
        if name == s3hpc_core::lock::OBJECT_LOCK_CONFIG {
            let xml = lock::config_xml(doc.as_deref().unwrap_or_default())?;
            let r = doc_body(
                Req::new(Method::PUT, Some(bucket), None).q("object-lock", None),
                xml.into_bytes(),
                "application/xml",
            )?;
            return self.send_empty(r).await.map(|_| ());
        }
        let r = match doc {
            None => Req::new(Method::DELETE, Some(bucket), None).q(name, None),
            Some(doc) => {
                let ct = if name == "policy" { "application/json" } else { "application/xml" };
                doc_body(Req::new(Method::PUT, Some(bucket), None).q(name, None), doc, ct)?
            }
        };
        self.send_empty(r).await.map(|_| ())
    }

    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let r = Req::new(Method::GET, Some(bucket), Some(key)).q("acl", None);
        let resp = self.send(r).await?;
        Ok(Some(read_body(resp.into_body(), MAX_XML).await?.to_vec()))
    }

    async fn put_object_acl(&self, bucket: &str, key: &str, doc: Option<Vec<u8>>) -> Result<()> {
        let r = Req::new(Method::PUT, Some(bucket), Some(key)).q("acl", None);
        let r = match doc {
            Some(doc) => doc_body(r, doc, "application/xml")?,
            None => r,
        };
        self.send_empty(r).await.map(|_| ())
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        let r = Req::new(Method::PUT, Some(bucket), Some(key));
        let (h, sent) = self.send_put(r, req, body).await?;
        Ok(PutObjectOutput {
            version_id: version_of(&h),
            etag: etag_of(&h),
            checksum: checksum_of_headers(&h),
            size: sent,
            last_modified: last_modified(&h),
        })
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        let r = self.object_req(Method::GET, bucket, key, &req)?;
        let resp = self.send(r).await?;
        let (info, range) = object_info(key, resp.status(), resp.headers());
        let body = if resp.headers().get(http::header::CONTENT_LENGTH).is_some_and(|v| v == "0") {
            Body::Empty
        } else {
            response_stream(resp.into_body())
        };
        Ok(GetObjectOutput { info, range, body })
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        let r = self.object_req(Method::HEAD, bucket, key, &req)?;
        let resp = self.send(r).await?;
        Ok(object_info(key, resp.status(), resp.headers()).0)
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let mut r = Req::new(Method::DELETE, Some(bucket), Some(key));
        if lock::bypass() {
            r = r.h("x-amz-bypass-governance-retention", "true")?;
        }
        self.send_empty(r).await.map(|_| ())
    }

    async fn get_object_retention(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<Retention>> {
        let mut r = Req::new(Method::GET, Some(bucket), Some(key)).q("retention", None);
        if let Some(v) = v {
            r = r.q("versionId", Some(v));
        }
        match self.send_xml(r).await {
            Ok((_, n)) => Ok(n.text_of("Mode").and_then(|m| {
                let until = lock::parse_date(n.text_of("RetainUntilDate")?)?;
                Some(Retention { mode: s3hpc_core::LockMode::parse(m.trim())?, until })
            })),
            Err(e) if e.code == ErrorCode::NoSuchObjectLockConfiguration => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn get_object_legal_hold(&self, bucket: &str, key: &str, v: Option<&str>) -> Result<Option<bool>> {
        let mut r = Req::new(Method::GET, Some(bucket), Some(key)).q("legal-hold", None);
        if let Some(v) = v {
            r = r.q("versionId", Some(v));
        }
        match self.send_xml(r).await {
            Ok((_, n)) => Ok(n.text_of("Status").map(|s| s.trim() == "ON")),
            Err(e) if e.code == ErrorCode::NoSuchObjectLockConfiguration => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn put_object_retention(&self, b: &str, k: &str, v: Option<&str>, ret: Option<Retention>) -> Result<()> {
        let mut r = Req::new(Method::PUT, Some(b), Some(k)).q("retention", None);
        if let Some(v) = v {
            r = r.q("versionId", Some(v));
        }
        if lock::bypass() {
            r = r.h("x-amz-bypass-governance-retention", "true")?;
        }
        let r = doc_body(r, lock::retention_xml(ret).into_bytes(), "application/xml")?;
        self.send_empty(r).await.map(|_| ())
    }

    async fn put_object_legal_hold(&self, b: &str, k: &str, v: Option<&str>, on: bool) -> Result<()> {
        let mut r = Req::new(Method::PUT, Some(b), Some(k)).q("legal-hold", None);
        if let Some(v) = v {
            r = r.q("versionId", Some(v));
        }
        let doc = format!(
            "<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>{}</Status></LegalHold>",
            if on { "ON" } else { "OFF" }
        );
        self.send_empty(doc_body(r, doc.into_bytes(), "application/xml")?).await.map(|_| ())
    }

    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        let mut r = Req::new(Method::DELETE, Some(bucket), Some(key));
        if let Some(v) = version_id {
            r = r.q("versionId", Some(v));
        }
        if lock::bypass() {
            r = r.h("x-amz-bypass-governance-retention", "true")?;
        }
        let h = self.send_empty(r).await?;
        Ok(DeleteObjectOutput {
            version_id: header_text(&h, "x-amz-version-id"),
            delete_marker: hstr(&h, "x-amz-delete-marker") == Some("true"),
        })
    }

    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        let mut r = Req::new(Method::GET, Some(bucket), None).q("versions", None).q("encoding-type", Some("url"));
        if !req.prefix.is_empty() {
            r = r.q("prefix", Some(&req.prefix));
        }
        if let Some(d) = req.delimiter.as_deref().filter(|d| !d.is_empty()) {
            r = r.q("delimiter", Some(d));
        }
        if let Some(m) = req.key_marker.as_deref().filter(|m| !m.is_empty()) {
            r = r.q("key-marker", Some(m));
        }
        if let Some(m) = req.version_id_marker.as_deref().filter(|m| !m.is_empty()) {
            r = r.q("version-id-marker", Some(m));
        }
        r = r.q("max-keys", Some(&req.max_keys.min(MAX_KEYS).to_string()));
        let (_, n) = self.send_xml(r).await?;
        let url = n.text_of("EncodingType").is_some_and(|e| e.eq_ignore_ascii_case("url"));
        // Versions and delete markers come interleaved in S3's order.
        let versions = n
            .children
            .iter()
            .filter(|c| c.name == "Version" || c.name == "DeleteMarker")
            .map(|c| VersionEntry {
                key: listed_name(c.text_of("Key").unwrap_or(""), url),
                version_id: c.text_of("VersionId").unwrap_or("null").to_string(),
                is_latest: c.bool_of("IsLatest"),
                delete_marker: c.name == "DeleteMarker",
                size: c.text_of("Size").and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                etag: c.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string(),
                last_modified: xml_time(c, "LastModified"),
            })
            .collect();
        let is_truncated = n.bool_of("IsTruncated");
        Ok(ListVersionsPage {
            versions,
            common_prefixes: common_prefixes(&n, url),
            is_truncated,
            next_key_marker: n.text_of("NextKeyMarker").map(|m| listed_name(m, url)).filter(|_| is_truncated),
            next_version_id_marker: n.text_of("NextVersionIdMarker").map(str::to_string).filter(|_| is_truncated),
        })
    }

    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        let source = copy_source_version(src_bucket, src_key, req.source_version_id.as_deref());
        let mut r = Req::new(Method::PUT, Some(dst_bucket), Some(dst_key)).h("x-amz-copy-source", &source)?;
        for (n, v) in lock::headers(&req.lock) {
            r = r.h(n, &v)?;
        }
        if let Directive::Replace(m) = &req.metadata {
            r = r.h("x-amz-metadata-directive", "REPLACE")?;
            add_meta(&mut r.headers, m)?;
        }
        if let Some(w) = &req.website_redirect_location {
            r = r.h("x-amz-website-redirect-location", w)?;
        }
        if let Directive::Replace(t) = &req.tagging {
            r = r.h("x-amz-tagging-directive", "REPLACE")?;
            if !t.is_empty() {
                r = r.h("x-amz-tagging", &tags_query(t))?;
            }
        }
        add_conditions(&mut r.headers, &req.source_conditions, "x-amz-copy-source-")?;
        add_conditions(&mut r.headers, &req.conditions, "")?;
        if let Some(a) = req.checksum_algorithm {
            r = r.h("x-amz-checksum-algorithm", a.as_str())?;
        }
        let (h, n) = self.send_xml(r).await?;
        let n = n.child("CopyObjectResult").unwrap_or(&n).clone();
        let etag = n.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string();
        let head = self.head_size(dst_bucket, dst_key, None).await?;
        Ok(PutObjectOutput {
            version_id: version_of(&h),
            etag,
            checksum: checksum_of_xml(&n).or(head.checksum),
            size: head.size,
            last_modified: n.text_of("LastModified").and_then(parse_iso8601).unwrap_or(head.last_modified),
        })
    }

    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        // A server without RenameObject may take `PUT ?renameObject` for a PutObject and make an
        // empty destination (versitygw does): send it only where it is known to be understood.
        if !self.appends(bucket).await {
            return Err(Error::not_implemented("RenameObject: this server is not known to implement it"));
        }
        // The rename of a prefix (keys ending in '/') is s3hpc's own: not for directory buckets.
        if src_key.ends_with('/') && dst_key.ends_with('/') && !self.is_s3hpc(bucket).await {
            return Err(Error::not_implemented("RenameObject of a prefix: this server is not s3hpc"));
        }
        let mut r = Req::new(Method::PUT, Some(bucket), Some(dst_key))
            .q("renameObject", None)
            .h("x-amz-rename-source", &copy_source(bucket, src_key))?;
        add_conditions(&mut r.headers, &req.source_conditions, "x-amz-rename-source-")?;
        add_conditions(&mut r.headers, &req.conditions, "")?;
        if let Some(t) = &req.client_token {
            r = r.h("x-amz-client-token", t)?;
        }
        self.send_empty(r).await.map(|_| ())
    }

    /// s3hpc's file-system extension: `POST /bucket/key?s3hpc-fs` with the operation in
    /// `x-s3hpc-fs`, the attributes back in `x-s3hpc-fs-attr`; sent only to s3hpc gateways
    /// (`NotImplemented` elsewhere, and from gateways that predate it).
    async fn fs(&self, bucket: &str, key: &str, op: s3hpc_core::fsattr::FsOp) -> Result<s3hpc_core::fsattr::FsAttr> {
        if !self.is_s3hpc(bucket).await {
            return Err(Error::not_implemented("file-system attributes: this server is not s3hpc"));
        }
        let key = (!key.is_empty()).then_some(key);
        let r = Req::new(Method::POST, Some(bucket), key).q("s3hpc-fs", None).h("x-s3hpc-fs", &op.encode())?;
        let h = self.send_empty(r).await?;
        let line = h
            .get("x-s3hpc-fs-attr")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::not_implemented("file-system attributes: the server answered none"))?;
        s3hpc_core::fsattr::FsAttr::parse(line)
    }

    /// An s3hpc gateway (it names itself in `Server`) and AWS's directory buckets (`--x-s3`)
    /// honour the write offset and RenameObject; other servers may ignore both (versitygw
    /// replaces the object with the appended bytes, and takes a rename for an empty PutObject).
    async fn appends(&self, bucket: &str) -> bool {
        bucket.ends_with("--x-s3") || self.is_s3hpc(bucket).await
    }

    async fn append_object(
        &self,
        bucket: &str,
        key: &str,
        offset: u64,
        req: PutObjectRequest,
        body: Body,
    ) -> Result<PutObjectOutput> {
        if !self.appends(bucket).await {
            return Err(Error::not_implemented(
                "PutObject with a write offset: this server is not known to honour x-amz-write-offset-bytes",
            ));
        }
        let r = Req::new(Method::PUT, Some(bucket), Some(key)).h("x-amz-write-offset-bytes", &offset.to_string())?;
        let (h, sent) = self.send_put(r, req, body).await?;
        // The whole object's size (the server's x-amz-object-size), not the appended bytes.
        let size = h.get("x-amz-object-size").and_then(|v| v.to_str().ok()?.parse().ok());
        Ok(PutObjectOutput {
            version_id: None,
            etag: etag_of(&h),
            checksum: checksum_of_headers(&h),
            size: size.unwrap_or(offset + sent),
            last_modified: last_modified(&h),
        })
    }

    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        self.tagging_get(bucket, Some(key), version_id).await
    }

    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        self.tagging_put(bucket, Some(key), version_id, tags).await
    }

    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.tagging_delete(bucket, Some(key), version_id).await
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let mut r = Req::new(Method::GET, Some(bucket), None).q("list-type", Some("2"));
        if !req.prefix.is_empty() {
            r = r.q("prefix", Some(&req.prefix));
        }
        if let Some(d) = req.delimiter.as_deref().filter(|d| !d.is_empty()) {
            r = r.q("delimiter", Some(d));
        }
        r = r.q("max-keys", Some(&req.max_keys.min(MAX_KEYS).to_string()));
        if let Some(sa) = &req.start_after {
            r = r.q("start-after", Some(sa));
        }
        let (_, n) = self.send_xml(r).await?;
        let url = n.text_of("EncodingType").is_some_and(|e| e.eq_ignore_ascii_case("url"));
        let objects: Vec<ObjectSummary> = n
            .children("Contents")
            .map(|c| ObjectSummary {
                key: listed_name(c.text_of("Key").unwrap_or(""), url),
                size: c.text_of("Size").and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                etag: c.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string(),
                last_modified: xml_time(c, "LastModified"),
            })
            .collect();
        let common_prefixes: Vec<String> = common_prefixes(&n, url);
        let is_truncated = n.bool_of("IsTruncated");
        let next_marker = if is_truncated {
            let last_key = objects.last().map(|o| o.key.as_str());
            let last_prefix = common_prefixes.last().map(String::as_str);
            last_key.max(last_prefix).map(str::to_string)
        } else {
            None
        };
        Ok(ListObjectsPage { objects, common_prefixes, is_truncated, next_marker })
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        let mut r = Req::new(Method::POST, Some(bucket), Some(key)).q("uploads", None);
        add_meta(&mut r.headers, &req.meta)?;
        for (n, v) in lock::headers(&req.lock) {
            r = r.h(n, &v)?;
        }
        if !req.tags.is_empty() {
            r = r.h("x-amz-tagging", &tags_query(&req.tags))?;
        }
        if let Some(a) = req.checksum_algorithm {
            r = r.h("x-amz-checksum-algorithm", a.as_str())?;
        }
        if let Some(t) = req.checksum_type {
            r = r.h("x-amz-checksum-type", t.as_str())?;
        }
        r.not_found = ErrorCode::NoSuchBucket;
        let (_, n) = self.send_xml(r).await?;
        n.text_of("UploadId")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| Error::internal("InitiateMultipartUploadResult without UploadId"))
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
        let mut r = Req::new(Method::PUT, Some(bucket), Some(key))
            .q("partNumber", Some(&part_number.to_string()))
            .q("uploadId", Some(upload_id));
        r.not_found = ErrorCode::NoSuchUpload;
        if let Some(m) = req.content_md5 {
            r = r.h("content-md5", &B64.encode(m))?;
        }
        let plan = checksum_headers(&mut r.headers, &req.checksum)?;
        let sent = Arc::new(AtomicU64::new(0));
        let r = upload_body(r, body, req.content_length, plan, sent.clone())?;
        let h = self.send_empty(r).await?;
        Ok(PartInfo {
            part_number,
            etag: etag_of(&h),
            size: sent.load(Ordering::Relaxed),
            last_modified: last_modified(&h),
            checksum: checksum_of_headers(&h),
        })
    }

    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo> {
        let v = src.version_id.as_deref();
        // S3 only takes `first-last` copy ranges: other forms are resolved against the source size.
        let range = match src.range {
            None => None,
            Some(ByteRange::FromTo(a, b)) => Some((a, b)),
            Some(other) => {
                let size = self.head_size(&src.bucket, &src.key, v).await?.size;
                let (off, len) = other.resolve(size)?;
                Some((off, off + len - 1))
            }
        };
        let mut r = Req::new(Method::PUT, Some(bucket), Some(key))
            .q("partNumber", Some(&part_number.to_string()))
            .q("uploadId", Some(upload_id))
            .h("x-amz-copy-source", &copy_source_version(&src.bucket, &src.key, v))?;
        if let Some((a, b)) = range {
            r = r.h("x-amz-copy-source-range", &format!("bytes={a}-{b}"))?;
        }
        add_conditions(&mut r.headers, &src.conditions, "x-amz-copy-source-")?;
        let (_, n) = self.send_xml(r).await?;
        let n = n.child("CopyPartResult").unwrap_or(&n).clone();
        let size = match range {
            Some((a, b)) => b - a + 1,
            None => self.head_size(&src.bucket, &src.key, v).await?.size,
        };
        Ok(PartInfo {
            part_number,
            etag: n.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string(),
            size,
            last_modified: n.text_of("LastModified").and_then(parse_iso8601).unwrap_or_else(SystemTime::now),
            checksum: checksum_of_xml(&n),
        })
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        let mut r = Req::new(Method::GET, Some(bucket), Some(key)).q("uploadId", Some(upload_id));
        if req.max_parts > 0 {
            r = r.q("max-parts", Some(&req.max_parts.to_string()));
        }
        if let Some(m) = req.part_number_marker {
            r = r.q("part-number-marker", Some(&m.to_string()));
        }
        r.not_found = ErrorCode::NoSuchUpload;
        let (_, n) = self.send_xml(r).await?;
        let parts = n
            .children("Part")
            .map(|p| PartInfo {
                part_number: p.text_of("PartNumber").and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                etag: p.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string(),
                size: p.text_of("Size").and_then(|s| s.trim().parse().ok()).unwrap_or(0),
                last_modified: xml_time(p, "LastModified"),
                checksum: checksum_of_xml(p),
            })
            .collect();
        let is_truncated = n.bool_of("IsTruncated");
        let checksum_algorithm = n.text_of("ChecksumAlgorithm").and_then(|a| ChecksumAlgorithm::parse(a.trim()));
        Ok(ListPartsPage {
            parts,
            is_truncated,
            next_part_number_marker: if is_truncated {
                n.text_of("NextPartNumberMarker").and_then(|s| s.trim().parse().ok())
            } else {
                None
            },
            checksum_algorithm,
            // A server that predates checksum types sends none: its uploads are COMPOSITE.
            checksum_type: checksum_algorithm.map(|_| {
                n.text_of("ChecksumType").and_then(|t| ChecksumType::parse(t.trim())).unwrap_or(ChecksumType::Composite)
            }),
        })
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        let mut r = Req::new(Method::GET, Some(bucket), None).q("uploads", None);
        if !req.prefix.is_empty() {
            r = r.q("prefix", Some(&req.prefix));
        }
        if let Some(d) = req.delimiter.as_deref().filter(|d| !d.is_empty()) {
            r = r.q("delimiter", Some(d));
        }
        if let Some(m) = &req.key_marker {
            r = r.q("key-marker", Some(m));
        }
        if let Some(m) = &req.upload_id_marker {
            r = r.q("upload-id-marker", Some(m));
        }
        if req.max_uploads > 0 {
            r = r.q("max-uploads", Some(&req.max_uploads.to_string()));
        }
        let (_, n) = self.send_xml(r).await?;
        let url = n.text_of("EncodingType").is_some_and(|e| e.eq_ignore_ascii_case("url"));
        let uploads = n
            .children("Upload")
            .map(|u| {
                let checksum_algorithm =
                    u.text_of("ChecksumAlgorithm").and_then(|a| ChecksumAlgorithm::parse(a.trim()));
                UploadInfo {
                    key: listed_name(u.text_of("Key").unwrap_or(""), url),
                    upload_id: u.text_of("UploadId").unwrap_or("").to_string(),
                    initiated: xml_time(u, "Initiated"),
                    checksum_algorithm,
                    checksum_type: checksum_algorithm.map(|_| {
                        u.text_of("ChecksumType")
                            .and_then(|t| ChecksumType::parse(t.trim()))
                            .unwrap_or(ChecksumType::Composite)
                    }),
                }
            })
            .collect();
        let is_truncated = n.bool_of("IsTruncated");
        let nonempty = |name: &str| n.text_of(name).filter(|s| !s.is_empty());
        Ok(ListUploadsPage {
            uploads,
            common_prefixes: common_prefixes(&n, url),
            is_truncated,
            next_key_marker: if is_truncated { nonempty("NextKeyMarker").map(|s| listed_name(s, url)) } else { None },
            next_upload_id_marker: if is_truncated { nonempty("NextUploadIdMarker").map(str::to_string) } else { None },
        })
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        let CompleteMultipartRequest { parts, conditions, checksum, checksum_type } = req;
        let mut doc = String::with_capacity(64 + parts.len() * 96);
        doc.push_str("<CompleteMultipartUpload>");
        for p in &parts {
            doc.push_str("<Part>");
            elem(&mut doc, "PartNumber", &p.part_number.to_string());
            let etag = p.etag.trim_matches('"');
            elem(&mut doc, "ETag", &format!("\"{etag}\""));
            if let Some(c) = &p.checksum {
                elem(&mut doc, &format!("Checksum{}", c.algorithm.as_str()), &c.value);
            }
            doc.push_str("</Part>");
        }
        doc.push_str("</CompleteMultipartUpload>");
        let mut r = Req::new(Method::POST, Some(bucket), Some(key)).q("uploadId", Some(upload_id)).xml_body(doc)?;
        r.not_found = ErrorCode::NoSuchUpload;
        add_conditions(&mut r.headers, &conditions, "")?;
        // On a complete these headers speak of the whole object, not of the XML document.
        if let Some(c) = &checksum {
            r = r.h(c.algorithm.header_name(), &c.value)?;
        }
        if let Some(t) = checksum_type {
            r = r.h("x-amz-checksum-type", t.as_str())?;
        }
        let (h, n) = self.send_xml(r).await?;
        let etag = n.text_of("ETag").unwrap_or("").trim().trim_matches('"').to_string();
        let head = self.head_size(bucket, key, None).await?;
        Ok(PutObjectOutput {
            version_id: version_of(&h),
            etag,
            checksum: checksum_of_xml(&n).or(head.checksum),
            size: head.size,
            last_modified: head.last_modified,
        })
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        let mut r = Req::new(Method::DELETE, Some(bucket), Some(key)).q("uploadId", Some(upload_id));
        r.not_found = ErrorCode::NoSuchUpload;
        self.send_empty(r).await.map(|_| ())
    }
}

/// `x-amz-copy-source`: `/bucket/key`, URL-encoded (slashes kept).
pub(crate) fn copy_source(bucket: &str, key: &str) -> String {
    format!("/{}/{}", uri_encode(bucket, false), uri_encode(key, true))
}

/// `x-amz-copy-source` naming a version (`None`: the current one).
pub(crate) fn copy_source_version(bucket: &str, key: &str, version_id: Option<&str>) -> String {
    let mut s = copy_source(bucket, key);
    if let Some(v) = version_id {
        s.push_str("?versionId=");
        s.push_str(&uri_encode(v, false));
    }
    s
}
