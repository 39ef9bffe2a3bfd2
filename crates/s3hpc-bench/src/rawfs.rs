//! `posix://DIR`: raw POSIX with the access pattern of the workloads, the baseline every S3 path
//! is compared with. Buckets are directories, objects plain files written in place: no temp
//! file, no rename, no fsync, no checksums, no metadata. Operations the workloads do not use
//! answer `NotImplemented`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use s3hpc_core::listing::{Flow, Lister};
use s3hpc_core::*;

pub struct RawFsStore {
    root: Arc<PathBuf>,
}

impl RawFsStore {
    /// Use `root` (created if missing) as the directory that holds the buckets.
    pub fn open(root: impl Into<PathBuf>) -> Result<RawFsStore> {
        let root = root.into();
        std::fs::create_dir_all(&root)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", root.display())))?;
        Ok(RawFsStore { root: Arc::new(root) })
    }

    fn bucket_path(&self, bucket: &str) -> Result<PathBuf> {
        names::validate_bucket_name(bucket)?;
        Ok(self.root.join(bucket))
    }

    fn object_path(&self, bucket: &str, key: &str) -> Result<(PathBuf, PathBuf)> {
        let b = self.bucket_path(bucket)?;
        if key.is_empty()
            || key.starts_with('/')
            || key.ends_with('/')
            || key.split('/').any(|c| c.is_empty() || c == "." || c == "..")
            || key.contains('\0')
        {
            return Err(Error::new(ErrorCode::InvalidArgument, format!("key {key:?} cannot be a POSIX path")));
        }
        let p = b.join(key);
        Ok((b, p))
    }
}

fn etag(size: u64, mtime: SystemTime) -> String {
    let ns = mtime.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{size:x}-{ns:x}")
}

fn info(key: &str, md: &std::fs::Metadata) -> ObjectInfo {
    let mtime = md.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    ObjectInfo {
        version_id: None,
        lock: Default::default(),
        key: key.to_string(),
        size: md.len(),
        etag: etag(md.len(), mtime),
        last_modified: mtime,
        meta: ObjectMeta::default(),
        checksum: None,
        part_sizes: Vec::new(),
        part_checksums: Vec::new(),
        tag_count: 0,
    }
}

/// Map an I/O error on an object path to the S3 error it means.
fn obj_err(e: std::io::Error, bucket_dir: &Path, bucket: &str, key: &str) -> Error {
    match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            if bucket_dir.is_dir() {
                Error::no_such_key(bucket, key)
            } else {
                Error::no_such_bucket(bucket)
            }
        }
        _ => Error::from(e).with_resource(format!("{bucket}/{key}")),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}

fn not_impl<T>(op: &str) -> Result<T> {
    Err(Error::not_implemented(format!("{op} is not part of the raw POSIX baseline (posix://)")))
}

/// Collect every file below `dir` as a key relative to `base`.
fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for ent in rd {
        let ent = ent?;
        let ft = ent.file_type()?;
        let p = ent.path();
        if ft.is_dir() {
            walk(base, &p, out)?;
        } else if ft.is_file()
            && let Ok(rel) = p.strip_prefix(base)
            && let Some(s) = rel.to_str()
        {
            out.push(s.to_string());
        }
    }
    Ok(())
}

#[async_trait]
impl Store for RawFsStore {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        let p = self.bucket_path(bucket)?;
        let b = bucket.to_string();
        blocking(move || match std::fs::create_dir(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(Error::code(ErrorCode::BucketAlreadyOwnedByYou).with_resource(b))
            }
            Err(e) => Err(Error::from(e).with_resource(b)),
        })
        .await
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let p = self.bucket_path(bucket)?;
        let b = bucket.to_string();
        blocking(move || {
            if !p.is_dir() {
                return Err(Error::no_such_bucket(&b));
            }
            let mut files = Vec::new();
            walk(&p, &p, &mut files)?;
            if !files.is_empty() {
                return Err(Error::code(ErrorCode::BucketNotEmpty).with_resource(b));
            }
            // Only empty directories are left (key prefixes); remove them with the bucket.
            std::fs::remove_dir_all(&p)?;
            Ok(())
        })
        .await
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        let p = self.bucket_path(bucket)?;
        if p.is_dir() { Ok(()) } else { Err(Error::no_such_bucket(bucket)) }
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let root = self.root.clone();
        blocking(move || {
            let mut v = Vec::new();
            for ent in std::fs::read_dir(&*root)? {
                let ent = ent?;
                if ent.file_type()?.is_dir()
                    && let Some(name) = ent.file_name().to_str()
                {
                    let created = ent.metadata()?.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    v.push(BucketInfo { name: name.to_string(), created });
                }
            }
            v.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(v)
        })
        .await
    }

    async fn get_bucket_tagging(&self, _bucket: &str) -> Result<Tags> {
        not_impl("GetBucketTagging")
    }
    async fn put_bucket_tagging(&self, _bucket: &str, _tags: Tags) -> Result<()> {
        not_impl("PutBucketTagging")
    }
    async fn delete_bucket_tagging(&self, _bucket: &str) -> Result<()> {
        not_impl("DeleteBucketTagging")
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        let (bdir, path) = self.object_path(bucket, key)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        let open = {
            let (bdir, path, b, k) = (bdir.clone(), path.clone(), b.clone(), k.clone());
            move || -> Result<std::fs::File> {
                if !bdir.is_dir() {
                    return Err(Error::no_such_bucket(&b));
                }
                if let Some(parent) = path.parent()
                    && parent != bdir
                {
                    std::fs::create_dir_all(parent).map_err(|e| obj_err(e, &bdir, &b, &k))?;
                }
                std::fs::File::create(&path).map_err(|e| obj_err(e, &bdir, &b, &k))
            }
        };
        let size = match body {
            Body::Empty => {
                blocking(open).await?;
                0
            }
            Body::Bytes(data) => {
                blocking(move || {
                    let mut f = open()?;
                    f.write_all(&data)?;
                    Ok(data.len() as u64)
                })
                .await?
            }
            Body::File { .. } => return not_impl("PUT from a file body"),
            Body::Stream(mut s) => {
                let mut file = Some(blocking(open).await?);
                let mut n = 0u64;
                let mut batch: Vec<Bytes> = Vec::new();
                let mut batched = 0usize;
                loop {
                    let next = s.next().await.transpose()?;
                    let end = next.is_none();
                    if let Some(c) = next {
                        batched += c.len();
                        n += c.len() as u64;
                        batch.push(c);
                    }
                    if (end && !batch.is_empty()) || batched >= 8 << 20 {
                        let mut f = file.take().expect("file present");
                        let chunks = std::mem::take(&mut batch);
                        batched = 0;
                        file = Some(
                            blocking(move || {
                                for c in &chunks {
                                    f.write_all(c)?;
                                }
                                Ok(f)
                            })
                            .await?,
                        );
                    }
                    if end {
                        break;
                    }
                }
                n
            }
        };
        if let Some(want) = req.content_length
            && want != size
        {
            let p = path.clone();
            let _ = blocking(move || Ok(std::fs::remove_file(p))).await;
            return Err(Error::code(ErrorCode::IncompleteBody).with_resource(format!("{b}/{k}")));
        }
        let now = SystemTime::now();
        Ok(PutObjectOutput { version_id: None, etag: etag(size, now), checksum: None, size, last_modified: now })
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        let (bdir, path) = self.object_path(bucket, key)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        blocking(move || {
            let file = std::fs::File::open(&path).map_err(|e| obj_err(e, &bdir, &b, &k))?;
            let md = file.metadata()?;
            if !md.is_file() {
                return Err(Error::no_such_key(&b, &k));
            }
            let info = info(&k, &md);
            let (range, offset, len) = match req.range {
                Some(r) => {
                    let (o, l) = r.resolve(info.size)?;
                    (Some((o, l)), o, l)
                }
                None => (None, 0, info.size),
            };
            let body = if len == 0 { Body::Empty } else { Body::File { file, offset, len } };
            Ok(GetObjectOutput { info, range, body })
        })
        .await
    }

    async fn head_object(&self, bucket: &str, key: &str, _req: GetObjectRequest) -> Result<ObjectInfo> {
        let (bdir, path) = self.object_path(bucket, key)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        blocking(move || {
            let md = std::fs::metadata(&path).map_err(|e| obj_err(e, &bdir, &b, &k))?;
            if !md.is_file() {
                return Err(Error::no_such_key(&b, &k));
            }
            Ok(info(&k, &md))
        })
        .await
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        let (bdir, path) = self.object_path(bucket, key)?;
        let (b, k) = (bucket.to_string(), key.to_string());
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                if bdir.is_dir() { Ok(()) } else { Err(Error::no_such_bucket(&b)) }
            }
            Err(e) => Err(obj_err(e, &bdir, &b, &k)),
        })
        .await
    }

    async fn copy_object(
        &self,
        _src_bucket: &str,
        _src_key: &str,
        _dst_bucket: &str,
        _dst_key: &str,
        _req: CopyObjectRequest,
    ) -> Result<PutObjectOutput> {
        not_impl("CopyObject")
    }

    async fn get_object_tagging(&self, _bucket: &str, _key: &str, _version_id: Option<&str>) -> Result<ObjectTagging> {
        not_impl("GetObjectTagging")
    }
    async fn put_object_tagging(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _tags: Tags,
    ) -> Result<Option<String>> {
        not_impl("PutObjectTagging")
    }
    async fn delete_object_tagging(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> Result<Option<String>> {
        not_impl("DeleteObjectTagging")
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        let bdir = self.bucket_path(bucket)?;
        let b = bucket.to_string();
        blocking(move || {
            if !bdir.is_dir() {
                return Err(Error::no_such_bucket(&b));
            }
            // Walk only below the directory part of the prefix.
            let start = match req.prefix.rfind('/') {
                Some(i) => bdir.join(&req.prefix[..i]),
                None => bdir.clone(),
            };
            let mut keys = Vec::new();
            walk(&bdir, &start, &mut keys)?;
            keys.sort_unstable();
            let mut lister = Lister::new(&req);
            let mut skip: Option<String> = None;
            for k in &keys {
                if let Some(s) = &skip {
                    if k.starts_with(s.as_str()) {
                        continue;
                    }
                    skip = None;
                }
                let flow = lister.offer(k, || {
                    std::fs::metadata(bdir.join(k)).ok().map(|md| {
                        let i = info(k, &md);
                        ObjectSummary { key: i.key, size: i.size, etag: i.etag, last_modified: i.last_modified }
                    })
                });
                match flow {
                    Flow::Continue => {}
                    Flow::SkipPrefix(p) => skip = Some(p),
                    Flow::Done => break,
                }
            }
            Ok(lister.finish())
        })
        .await
    }

    async fn create_multipart_upload(&self, _b: &str, _k: &str, _req: CreateMultipartRequest) -> Result<String> {
        not_impl("CreateMultipartUpload")
    }

    async fn upload_part(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _part_number: u32,
        _req: UploadPartRequest,
        _body: Body,
    ) -> Result<PartInfo> {
        not_impl("UploadPart")
    }

    async fn upload_part_copy(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _part_number: u32,
        _src: PartCopySource,
    ) -> Result<PartInfo> {
        not_impl("UploadPartCopy")
    }

    async fn list_parts(&self, _b: &str, _k: &str, _u: &str, _req: ListPartsRequest) -> Result<ListPartsPage> {
        not_impl("ListParts")
    }

    async fn list_multipart_uploads(&self, _bucket: &str, _req: ListUploadsRequest) -> Result<ListUploadsPage> {
        not_impl("ListMultipartUploads")
    }

    async fn complete_multipart_upload_with(
        &self,
        _bucket: &str,
        _key: &str,
        _upload_id: &str,
        _req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        not_impl("CompleteMultipartUpload")
    }

    async fn abort_multipart_upload(&self, _bucket: &str, _key: &str, _upload_id: &str) -> Result<()> {
        not_impl("AbortMultipartUpload")
    }
}
