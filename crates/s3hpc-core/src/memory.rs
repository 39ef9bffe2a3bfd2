//! The `memory` backend: a plain in-memory model of S3 semantics. It is the oracle the other
//! backends and the clients are tested against, so it favours obviousness over speed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};

use crate::body::Body;
use crate::checksum::{self, BodyDigester, EtagMode};
use crate::error::{Error, ErrorCode, Result};
use crate::listing::{Flow, Lister};
use crate::lock::{BucketLock, OBJECT_LOCK_CONFIG, bypass_requested, bypass_without_lock, lock_for_put};
use crate::lock::{ObjectLock, Retention};
use crate::multipart::{check_part_number, completion_checksum, resolve_checksum_type, validate_completion};
use crate::names;
use crate::store::Store;
use crate::types::*;
use crate::versions::{
    DeleteObjectOutput, ListVersionsPage, ListVersionsRequest, NULL_VERSION, VERSIONING_CONFIG, VersionEntry,
    VersioningState, copy_source_error,
};

struct Object {
    data: Bytes,
    info: ObjectInfo,
    tags: Tags,
    /// File-system attributes, once `Store::fs` touched the object (shared by hard links).
    fs: Option<fs::SharedAttr>,
}

#[path = "memory_fs.rs"]
mod fs;

struct Bucket {
    created: SystemTime,
    objects: BTreeMap<String, Object>,
    tags: Option<Tags>,
    configs: BTreeMap<String, Vec<u8>>,
    /// Versioning: the noncurrent versions and delete markers of each key, newest first. When
    /// a key has no current object and its newest entry here is a marker, that marker is the
    /// key's current version.
    versions: BTreeMap<String, Vec<Noncurrent>>,
    /// `Store::fs`: symlinks, and the attributes of directories that were changed.
    symlinks: BTreeMap<String, fs::MemLink>,
    fs_dirs: BTreeMap<String, fs::MemAttr>,
}

enum Noncurrent {
    /// An object version (its `info.version_id`: `None` for the null version).
    Obj(Box<Object>),
    Marker {
        vid: Option<String>,
        at: SystemTime,
    },
}

impl Noncurrent {
    fn vid(&self) -> &str {
        match self {
            Noncurrent::Obj(o) => o.info.version_id.as_deref().unwrap_or(NULL_VERSION),
            Noncurrent::Marker { vid, .. } => vid.as_deref().unwrap_or(NULL_VERSION),
        }
    }
}

impl Bucket {
    fn versioning(&self) -> Option<VersioningState> {
        self.configs.get(VERSIONING_CONFIG).and_then(|d| VersioningState::from_doc(d))
    }

    fn lock(&self) -> Option<BucketLock> {
        self.configs.get(OBJECT_LOCK_CONFIG).and_then(|d| BucketLock::from_doc(d))
    }

    /// The object version `vid` of `key` (`None`: the current object), to change its lock.
    fn find_mut(&mut self, bucket: &str, key: &str, vid: Option<&str>) -> Result<&mut Object> {
        self.find(bucket, key, vid)?;
        let vid = vid.map(str::to_string);
        let current = self
            .objects
            .get(key)
            .is_some_and(|o| vid.as_deref().is_none_or(|v| o.info.version_id.as_deref().unwrap_or(NULL_VERSION) == v));
        if current {
            return Ok(self.objects.get_mut(key).expect("found above"));
        }
        let list = self.versions.get_mut(key).expect("found above");
        match list.iter_mut().find(|v| Some(v.vid()) == vid.as_deref()) {
            Some(Noncurrent::Obj(o)) => Ok(o),
            _ => unreachable!("found above"),
        }
    }

    /// Make `obj` the current version of `key` under the bucket's versioning state; returns its
    /// version id. The replaced current version becomes noncurrent (unless it is the null
    /// version and the new one is null too: it is replaced, as is a noncurrent null version).
    fn publish(&mut self, key: &str, mut obj: Object) -> Option<String> {
        let state = self.versioning();
        let vid = (state == Some(VersioningState::Enabled)).then(crate::versions::new_version_id);
        obj.info.version_id = vid.clone();
        if state.is_some() {
            self.retire_current(key, vid.is_none());
        }
        self.objects.insert(key.to_string(), obj);
        vid
    }

    /// The current object of `key` (if any) becomes noncurrent; `null_next`: the next current
    /// version is a null one, so every other null version goes.
    fn retire_current(&mut self, key: &str, null_next: bool) {
        let old = self.objects.remove(key);
        let list = self.versions.entry(key.to_string()).or_default();
        if null_next {
            list.retain(|v| v.vid() != NULL_VERSION);
        }
        if let Some(o) = old
            && !(null_next && o.info.version_id.is_none())
        {
            list.insert(0, Noncurrent::Obj(Box::new(o)));
        }
        if list.is_empty() {
            self.versions.remove(key);
        }
    }

    /// The marker that is the current version of `key`, if it is one.
    /// RenameObject of the prefix `src` to `dst` (both ending in '/'; see
    /// [`crate::prefix_rename`]), under the store's lock.
    fn rename_prefix(&mut self, bucket: &str, src: &str, dst: &str) -> Result<()> {
        let under = |p: &str| -> Vec<String> {
            self.objects.range(p.to_string()..).take_while(|(k, _)| k.starts_with(p)).map(|(k, _)| k.clone()).collect()
        };
        let keys = under(src);
        if keys.is_empty() {
            return Err(Error::no_such_key(bucket, src));
        }
        if src == dst {
            return Ok(());
        }
        if under(dst).iter().any(|k| k != dst) {
            return Err(crate::prefix_rename::prefix_not_empty(bucket, dst));
        }
        // The destination's own directory object is replaced, as rename(2) replaces an empty
        // directory.
        self.objects.remove(dst);
        for k in keys {
            let mut o = self.objects.remove(&k).expect("listed above");
            let nk = format!("{dst}{}", &k[src.len()..]);
            o.info.key = nk.clone();
            self.objects.insert(nk, o);
        }
        Ok(())
    }

    fn current_marker(&self, key: &str) -> Option<&str> {
        if self.objects.contains_key(key) {
            return None;
        }
        match self.versions.get(key)?.first()? {
            m @ Noncurrent::Marker { .. } => Some(m.vid()),
            Noncurrent::Obj(_) => None,
        }
    }

    /// The object version `vid` of `key` (`None`: the current object).
    fn find(&self, bucket: &str, key: &str, vid: Option<&str>) -> Result<&Object> {
        let Some(vid) = vid else {
            return self.objects.get(key).ok_or_else(|| {
                let e = Error::no_such_key(bucket, key);
                match self.current_marker(key) {
                    Some(m) => e.with_delete_marker(m),
                    None => e,
                }
            });
        };
        crate::versions::check_version_id(vid)?;
        if let Some(o) = self.objects.get(key)
            && o.info.version_id.as_deref().unwrap_or(NULL_VERSION) == vid
        {
            return Ok(o);
        }
        match self.versions.get(key).and_then(|l| l.iter().find(|v| v.vid() == vid)) {
            Some(Noncurrent::Obj(o)) => Ok(o),
            Some(m @ Noncurrent::Marker { .. }) => Err(crate::versions::marker_not_allowed(m.vid())),
            None => Err(crate::versions::no_such_version(bucket, key, vid)),
        }
    }

    fn delete_version(&mut self, key: &str, vid: Option<&str>, bypass: bool) -> Result<DeleteObjectOutput> {
        if bypass && self.lock().is_none() {
            return Err(bypass_without_lock());
        }
        let Some(vid) = vid else {
            let Some(state) = self.versioning() else {
                // A symlink made by `Store::fs` goes as a file system's unlink removes it.
                if self.objects.remove(key).is_none() {
                    self.symlinks.remove(key);
                }
                return Ok(DeleteObjectOutput::default());
            };
            let mvid = (state == VersioningState::Enabled).then(crate::versions::new_version_id);
            self.retire_current(key, mvid.is_none());
            let out = DeleteObjectOutput {
                version_id: Some(mvid.clone().unwrap_or(NULL_VERSION.into())),
                delete_marker: true,
            };
            self.versions
                .entry(key.to_string())
                .or_default()
                .insert(0, Noncurrent::Marker { vid: mvid, at: SystemTime::now() });
            return Ok(out);
        };
        crate::versions::check_version_id(vid)?;
        if self.lock().is_some() {
            let now = SystemTime::now();
            match self.find("", key, Some(vid)) {
                Ok(o) => o.info.lock.check_delete(bypass, now)?,
                Err(e) if e.code == ErrorCode::MethodNotAllowed || e.code == ErrorCode::NoSuchVersion => {}
                Err(e) => return Err(e),
            }
        }
        if self.objects.get(key).is_some_and(|o| o.info.version_id.as_deref().unwrap_or(NULL_VERSION) == vid) {
            self.objects.remove(key);
            // The newest noncurrent object version (not a marker) becomes current.
            if let Some(list) = self.versions.get_mut(key)
                && matches!(list.first(), Some(Noncurrent::Obj(_)))
                && let Noncurrent::Obj(o) = list.remove(0)
            {
                if list.is_empty() {
                    self.versions.remove(key);
                }
                self.objects.insert(key.to_string(), *o);
            }
            return Ok(DeleteObjectOutput { version_id: Some(vid.to_string()), delete_marker: false });
        }
        let mut marker = false;
        if let Some(list) = self.versions.get_mut(key)
            && let Some(i) = list.iter().position(|v| v.vid() == vid)
        {
            marker = matches!(list.remove(i), Noncurrent::Marker { .. });
            // With no current object, a noncurrent object version on top becomes current.
            if i == 0 && !self.objects.contains_key(key) && matches!(list.first(), Some(Noncurrent::Obj(_))) {
                let Noncurrent::Obj(o) = list.remove(0) else { unreachable!() };
                self.objects.insert(key.to_string(), *o);
            }
            if list.is_empty() {
                self.versions.remove(key);
            }
        }
        Ok(DeleteObjectOutput { version_id: Some(vid.to_string()), delete_marker: marker })
    }
}

struct Part {
    info: PartInfo,
    data: Bytes,
}

struct Upload {
    bucket: String,
    key: String,
    initiated: SystemTime,
    req: CreateMultipartRequest,
    parts: BTreeMap<u32, Part>,
}

#[derive(Default)]
struct State {
    buckets: BTreeMap<String, Bucket>,
    uploads: HashMap<String, Upload>,
    /// Completed uploads by id (with their bucket), answering retried completes for
    /// [`crate::multipart::COMPLETED_RETRY_WINDOW`].
    completed: HashMap<String, (String, crate::multipart::CompletedUpload)>,
    /// Renames that carried a client token, by bucket and token, answering retries for
    /// [`crate::renames::RENAME_TOKEN_WINDOW`].
    renames: HashMap<(String, String), crate::renames::CompletedRename>,
}

/// See the module documentation.
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut st)
    }
}

impl State {
    fn bucket(&self, name: &str) -> Result<&Bucket> {
        self.buckets.get(name).ok_or_else(|| Error::no_such_bucket(name))
    }

    fn bucket_mut(&mut self, name: &str) -> Result<&mut Bucket> {
        self.buckets.get_mut(name).ok_or_else(|| Error::no_such_bucket(name))
    }

    fn object(&self, bucket: &str, key: &str) -> Result<&Object> {
        self.bucket(bucket)?.objects.get(key).ok_or_else(|| Error::no_such_key(bucket, key))
    }

    fn upload(&self, bucket: &str, key: &str, id: &str) -> Result<&Upload> {
        self.bucket(bucket)?;
        match self.uploads.get(id) {
            Some(u) if u.bucket == bucket && u.key == key => Ok(u),
            _ => Err(Error::no_such_upload(id)),
        }
    }

    fn object_lock(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectLock> {
        names::validate_key(key)?;
        let b = self.bucket(bucket)?;
        b.lock().ok_or_else(crate::lock::missing_bucket_lock)?;
        Ok(b.find(bucket, key, version_id)?.info.lock)
    }

    fn current(&self, bucket: &str, key: &str) -> Option<(&str, SystemTime)> {
        self.buckets.get(bucket)?.objects.get(key).map(|o| (o.info.etag.as_str(), o.info.last_modified))
    }
}

fn new_upload_id() -> String {
    use rand::Rng;
    hex::encode(rand::rng().random::<[u8; 16]>())
}

async fn read_body(
    body: Body,
    content_md5: Option<[u8; 16]>,
    checksum: Option<&ChecksumRequest>,
    content_length: Option<u64>,
) -> Result<(Bytes, checksum::Digests)> {
    let data = body.collect().await?;
    let mut d = BodyDigester::new(EtagMode::Md5, content_md5.is_some(), checksum.map(|c| c.algorithm));
    d.update(&data);
    let digests = d.finish();
    digests.verify(content_length, content_md5, checksum)?;
    Ok((data, digests))
}

/// RenameObject renames objects, not directory objects (keys ending in '/').
pub fn check_rename_keys(src_key: &str, dst_key: &str) -> Result<()> {
    if src_key.ends_with('/') || dst_key.ends_with('/') {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "RenameObject does not rename directory objects (keys ending in '/')",
        ));
    }
    Ok(())
}

/// An append must add bytes (AWS's message).
pub fn check_append_body(size: u64) -> Result<()> {
    if size == 0 {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "Request body cannot be empty when 'write offset' is specified.",
        ));
    }
    Ok(())
}

/// `InvalidWriteOffset` unless `offset` is the object's current size.
pub fn check_write_offset(offset: u64, size: u64) -> Result<()> {
    if offset != size {
        return Err(Error::code(ErrorCode::InvalidWriteOffset));
    }
    Ok(())
}

/// An append to an existing object keeps its metadata and tags: giving new ones is refused
/// (AWS's message).
pub fn check_append_meta(req: &PutObjectRequest) -> Result<()> {
    if !req.meta.user.is_empty() || !req.tags.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "Cannot specify both a write offset value and user-defined object metadata for existing objects.",
        ));
    }
    Ok(())
}

fn slice(data: &Bytes, off: u64, len: u64) -> Bytes {
    data.slice(off as usize..(off + len) as usize)
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_bucket(&self, bucket: &str) -> Result<()> {
        names::validate_bucket_name(bucket)?;
        self.with(|st| {
            if st.buckets.contains_key(bucket) {
                return Err(Error::code(ErrorCode::BucketAlreadyOwnedByYou).with_bucket(bucket));
            }
            st.buckets.insert(
                bucket.to_string(),
                Bucket {
                    created: SystemTime::now(),
                    objects: BTreeMap::new(),
                    tags: None,
                    configs: BTreeMap::new(),
                    versions: BTreeMap::new(),
                    symlinks: BTreeMap::new(),
                    fs_dirs: BTreeMap::new(),
                },
            );
            Ok(())
        })
    }

    async fn delete_bucket(&self, bucket: &str) -> Result<()> {
        self.with(|st| {
            let b = st.bucket(bucket)?;
            if !b.objects.is_empty() || !b.versions.is_empty() || !b.symlinks.is_empty() {
                return Err(Error::code(ErrorCode::BucketNotEmpty).with_bucket(bucket));
            }
            st.buckets.remove(bucket);
            st.uploads.retain(|_, u| u.bucket != bucket);
            st.completed.retain(|_, (b, _)| b != bucket);
            st.renames.retain(|(b, _), _| b != bucket);
            Ok(())
        })
    }

    async fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.with(|st| st.bucket(bucket).map(|_| ()))
    }

    async fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        self.with(|st| Ok(st.buckets.iter().map(|(n, b)| BucketInfo { name: n.clone(), created: b.created }).collect()))
    }

    async fn get_bucket_config(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>> {
        names::validate_config_name(name)?;
        self.with(|st| Ok(st.bucket(bucket)?.configs.get(name).cloned()))
    }

    async fn put_bucket_config(&self, bucket: &str, name: &str, doc: Option<Vec<u8>>) -> Result<()> {
        names::validate_config_name(name)?;
        self.with(|st| {
            let b = st.bucket_mut(bucket)?;
            crate::lock::check_config_change(name, doc.as_deref(), b.versioning(), b.lock().as_ref())?;
            match doc {
                Some(d) => b.configs.insert(name.to_string(), d),
                None => b.configs.remove(name),
            };
            Ok(())
        })
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags> {
        self.with(|st| st.bucket(bucket)?.tags.clone().ok_or_else(|| Error::code(ErrorCode::NoSuchTagSet)))
    }

    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()> {
        names::validate_tags(&tags, names::MAX_BUCKET_TAGS)?;
        self.with(|st| {
            st.bucket_mut(bucket)?.tags = Some(tags);
            Ok(())
        })
    }

    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()> {
        self.with(|st| {
            st.bucket_mut(bucket)?.tags = None;
            Ok(())
        })
    }

    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput> {
        names::validate_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let integrity = req.content_md5.is_some() || req.checksum.as_ref().is_some_and(|c| c.expected.is_some());
        let asked = req.lock;
        self.with(|st| lock_for_put(st.bucket(bucket)?.lock().as_ref(), asked, Some(integrity), SystemTime::now()))?;
        let (data, d) = read_body(body, req.content_md5, req.checksum.as_ref(), req.content_length).await?;
        self.with(|st| {
            req.conditions.check_write(st.current(bucket, key))?;
            let now = SystemTime::now();
            let lock = lock_for_put(st.bucket(bucket)?.lock().as_ref(), asked, None, now)?;
            let info = ObjectInfo {
                key: key.to_string(),
                size: d.size,
                etag: d.etag.clone(),
                last_modified: now,
                meta: req.meta,
                checksum: d.checksum.clone(),
                part_sizes: Vec::new(),
                part_checksums: Vec::new(),
                tag_count: req.tags.len(),
                version_id: None,
                lock,
            };
            let version_id = st.bucket_mut(bucket)?.publish(key, Object { data, info, tags: req.tags, fs: None });
            Ok(PutObjectOutput { etag: d.etag, checksum: d.checksum, size: d.size, last_modified: now, version_id })
        })
    }

    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput> {
        names::validate_key(key)?;
        self.with(|st| {
            let o = st.bucket(bucket)?.find(bucket, key, req.version_id.as_deref())?;
            req.conditions.check_read(Some((&o.info.etag, o.info.last_modified)))?;
            let range = match (req.range, req.part_number) {
                (Some(_), Some(_)) => {
                    return Err(Error::new(
                        ErrorCode::InvalidRequest,
                        "Cannot specify both Range header and partNumber",
                    ));
                }
                (Some(r), None) => Some(r.resolve(o.info.size)?),
                (None, Some(n)) => Some(o.info.part_range(n)?),
                (None, None) => None,
            };
            let body = match range {
                Some((off, len)) => Body::from(slice(&o.data, off, len)),
                None => Body::from(o.data.clone()),
            };
            Ok(GetObjectOutput { info: o.info.clone(), range, body })
        })
    }

    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo> {
        let out = self.get_object(bucket, key, req).await?;
        Ok(out.info)
    }

    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        names::validate_key(key)?;
        let bypass = bypass_requested();
        self.with(|st| st.bucket_mut(bucket)?.delete_version(key, None, bypass).map(|_| ()))
    }

    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<DeleteObjectOutput> {
        names::validate_key(key)?;
        let bypass = bypass_requested();
        self.with(|st| st.bucket_mut(bucket)?.delete_version(key, version_id, bypass))
    }

    async fn get_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Option<Retention>> {
        self.with(|st| st.object_lock(bucket, key, version_id)).map(|l| l.retention)
    }

    async fn get_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<bool>> {
        self.with(|st| st.object_lock(bucket, key, version_id)).map(|l| l.legal_hold)
    }

    async fn put_object_retention(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        retention: Option<Retention>,
    ) -> Result<()> {
        names::validate_key(key)?;
        let bypass = bypass_requested();
        self.with(|st| {
            let b = st.bucket_mut(bucket)?;
            b.lock().ok_or_else(crate::lock::missing_bucket_lock)?;
            let o = b.find_mut(bucket, key, version_id)?;
            crate::lock::check_retention_change(o.info.lock.retention, retention, bypass, SystemTime::now())?;
            o.info.lock.retention = retention.map(|r| Retention { until: crate::lock::round_ms(r.until), ..r });
            Ok(())
        })
    }

    async fn put_object_legal_hold(&self, bucket: &str, key: &str, version_id: Option<&str>, on: bool) -> Result<()> {
        names::validate_key(key)?;
        self.with(|st| {
            let b = st.bucket_mut(bucket)?;
            b.lock().ok_or_else(crate::lock::missing_bucket_lock)?;
            b.find_mut(bucket, key, version_id)?.info.lock.legal_hold = Some(on);
            Ok(())
        })
    }

    async fn list_object_versions(&self, bucket: &str, req: ListVersionsRequest) -> Result<ListVersionsPage> {
        self.with(|st| {
            let b = st.bucket(bucket)?;
            let mut keys: Vec<&String> = b.objects.range(req.prefix.clone()..).map(|(k, _)| k).collect();
            keys.extend(b.versions.range(req.prefix.clone()..).map(|(k, _)| k));
            keys.sort();
            keys.dedup();
            let mut all = Vec::new();
            for k in keys.into_iter().take_while(|k| k.starts_with(req.prefix.as_str())) {
                let entry = |o: &Object, latest: bool| VersionEntry {
                    key: k.clone(),
                    version_id: o.info.version_id.clone().unwrap_or(NULL_VERSION.into()),
                    is_latest: latest,
                    delete_marker: false,
                    size: o.info.size,
                    etag: o.info.etag.clone(),
                    last_modified: o.info.last_modified,
                };
                let cur = b.objects.get(k);
                if let Some(o) = cur {
                    all.push(entry(o, true));
                }
                for (i, v) in b.versions.get(k).into_iter().flatten().enumerate() {
                    all.push(match v {
                        Noncurrent::Obj(o) => entry(o, false),
                        Noncurrent::Marker { at, .. } => VersionEntry {
                            key: k.clone(),
                            version_id: v.vid().to_string(),
                            is_latest: cur.is_none() && i == 0,
                            delete_marker: true,
                            size: 0,
                            etag: String::new(),
                            last_modified: *at,
                        },
                    });
                }
            }
            Ok(crate::versions::page_versions(all, &req))
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
        names::validate_key(src_key)?;
        names::validate_key(dst_key)?;
        req.validate()?;
        self.with(|st| {
            let src = st.bucket(src_bucket)?.find(src_bucket, src_key, req.source_version_id.as_deref()).map_err(copy_source_error)?;
            req.source_conditions.check_copy_source(Some((&src.info.etag, src.info.last_modified)))?;
            if src_bucket == dst_bucket && src_key == dst_key && req.changes_nothing() {
                return Err(Error::new(
                    ErrorCode::InvalidRequest,
                    "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
                ));
            }
            let lock = lock_for_put(st.bucket(dst_bucket)?.lock().as_ref(), req.lock, None, SystemTime::now())?;
            req.conditions.check_write(st.current(dst_bucket, dst_key))?;
            let src = st.bucket(src_bucket)?.find(src_bucket, src_key, req.source_version_id.as_deref()).map_err(copy_source_error)?;
            let data = src.data.clone();
            let meta = req.destination_meta(&src.info.meta);
            let tags = match &req.tagging {
                Directive::Copy => src.tags.clone(),
                Directive::Replace(t) => t.clone(),
            };
            let checksum = match req.checksum_algorithm {
                Some(a) => Some(checksum::checksum_of(a, &data)),
                None => src
                    .info
                    .checksum
                    .clone()
                    .filter(|_| src.info.part_sizes.is_empty())
                    .or_else(|| req.default_checksum.map(|a| checksum::checksum_of(a, &data))),
            };
            let etag = if src.info.part_sizes.is_empty() { src.info.etag.clone() } else { checksum::md5_hex(&data) };
            let now = SystemTime::now();
            let info = ObjectInfo {
                key: dst_key.to_string(),
                size: data.len() as u64,
                etag: etag.clone(),
                last_modified: now,
                meta,
                checksum: checksum.clone(),
                part_sizes: Vec::new(),
                part_checksums: Vec::new(),
                tag_count: tags.len(),
                version_id: None,
                lock,
            };
            let size = info.size;
            let version_id = st.bucket_mut(dst_bucket)?.publish(dst_key, Object { data, info, tags, fs: None });
            Ok(PutObjectOutput { etag, checksum, size, last_modified: now, version_id })
        })
    }

    async fn rename_object(&self, bucket: &str, src_key: &str, dst_key: &str, req: RenameObjectRequest) -> Result<()> {
        names::validate_key(src_key)?;
        names::validate_key(dst_key)?;
        let prefix = crate::prefix_rename::is_prefix_rename(src_key, dst_key, &req)?;
        check_rename_keys(src_key, dst_key).or_else(|e| if prefix { Ok(()) } else { Err(e) })?;
        self.with(|st| {
            if st.bucket(bucket)?.versioning().is_some() {
                return Err(crate::versions::unversioned_only("RenameObject"));
            }
            let now = SystemTime::now();
            st.renames.retain(|_, r| !r.expired(now));
            let token = req.client_token.as_ref().map(|t| (bucket.to_string(), t.clone()));
            if let Some(done) = token.as_ref().and_then(|t| st.renames.get(t)) {
                return done.answer(src_key, dst_key);
            }
            if prefix {
                st.bucket_mut(bucket)?.rename_prefix(bucket, src_key, dst_key)?;
            } else {
                let src = st.object(bucket, src_key)?;
                req.source_conditions.check_copy_source(Some((&src.info.etag, src.info.last_modified)))?;
                req.conditions.check_write(st.current(bucket, dst_key))?;
                if src_key != dst_key {
                    let b = st.bucket_mut(bucket)?;
                    let mut o = b.objects.remove(src_key).expect("checked above");
                    o.info.key = dst_key.to_string();
                    b.objects.insert(dst_key.to_string(), o);
                }
            }
            if let Some(t) = token {
                let done = crate::renames::CompletedRename::new(&t.1, src_key, dst_key);
                st.renames.insert(t, done);
            }
            Ok(())
        })
    }

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
        names::validate_key(key)?;
        names::validate_meta(&req.meta)?;
        self.head_bucket(bucket).await?;
        let (data, d) = read_body(body, req.content_md5, req.checksum.as_ref(), req.content_length).await?;
        check_append_body(d.size)?;
        self.with(|st| {
            if st.bucket(bucket)?.versioning().is_some() {
                return Err(crate::versions::unversioned_only("PutObject with a write offset"));
            }
            req.conditions.check_write(st.current(bucket, key))?;
            let now = SystemTime::now();
            let b = st.bucket_mut(bucket)?;
            let Some(o) = b.objects.get_mut(key) else {
                check_write_offset(offset, 0)?;
                let info = ObjectInfo {
                    key: key.to_string(),
                    size: d.size,
                    etag: d.etag.clone(),
                    last_modified: now,
                    meta: req.meta,
                    checksum: d.checksum.clone(),
                    part_sizes: Vec::new(),
                    part_checksums: Vec::new(),
                    tag_count: req.tags.len(),
                    version_id: None,
                    lock: ObjectLock::default(),
                };
                b.objects.insert(key.to_string(), Object { data, info, tags: req.tags, fs: None });
                return Ok(PutObjectOutput {
                    etag: d.etag,
                    checksum: d.checksum,
                    size: d.size,
                    last_modified: now,
                    version_id: None,
                });
            };
            check_write_offset(offset, o.info.size)?;
            check_append_meta(&req)?;
            let mut whole = BytesMut::with_capacity(o.data.len() + data.len());
            whole.extend_from_slice(&o.data);
            whole.extend_from_slice(&data);
            let whole = whole.freeze();
            let alg = o.info.checksum.as_ref().map(|c| c.algorithm).or(req.checksum.as_ref().map(|c| c.algorithm));
            let etag = checksum::md5_hex(&whole);
            let cks = alg.map(|a| checksum::checksum_of(a, &whole));
            o.info.size = whole.len() as u64;
            o.info.etag = etag.clone();
            o.info.checksum = cks.clone();
            o.info.part_sizes = Vec::new();
            o.info.part_checksums = Vec::new();
            o.info.last_modified = now;
            o.data = whole;
            Ok(PutObjectOutput { etag, checksum: cks, size: o.info.size, last_modified: now, version_id: None })
        })
    }

    async fn fs(&self, bucket: &str, key: &str, op: crate::fsattr::FsOp) -> Result<crate::fsattr::FsAttr> {
        self.with(|st| st.fs(bucket, key, op))
    }

    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging> {
        names::validate_key(key)?;
        self.with(|st| {
            let o = st.bucket(bucket)?.find(bucket, key, version_id)?;
            Ok(ObjectTagging { tags: o.tags.clone(), version_id: o.info.version_id.clone() })
        })
    }

    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>> {
        names::validate_key(key)?;
        names::validate_tags(&tags, names::MAX_OBJECT_TAGS)?;
        self.with(|st| {
            let o = st.bucket_mut(bucket)?.find_mut(bucket, key, version_id)?;
            o.info.tag_count = tags.len();
            o.tags = tags;
            Ok(o.info.version_id.clone())
        })
    }

    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>> {
        self.put_object_tagging(bucket, key, version_id, Vec::new()).await
    }

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage> {
        self.with(|st| {
            let b = st.bucket(bucket)?;
            let mut lister = Lister::new(&req);
            let mut skip: Option<String> = None;
            for (key, o) in b.objects.range(req.prefix.clone()..) {
                if let Some(p) = &skip
                    && key.starts_with(p.as_str())
                {
                    continue;
                }
                let summary = || {
                    Some(ObjectSummary {
                        key: key.clone(),
                        size: o.info.size,
                        etag: o.info.etag.clone(),
                        last_modified: o.info.last_modified,
                    })
                };
                match lister.offer(key, summary) {
                    Flow::Continue => skip = None,
                    Flow::SkipPrefix(p) => skip = Some(p),
                    Flow::Done => break,
                }
            }
            Ok(lister.finish())
        })
    }

    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String> {
        names::validate_key(key)?;
        names::validate_meta(&req.meta)?;
        names::validate_tags(&req.tags, names::MAX_OBJECT_TAGS)?;
        let checksum_type = resolve_checksum_type(req.checksum_algorithm, req.checksum_type)?;
        let req = CreateMultipartRequest { checksum_type, ..req };
        self.with(|st| {
            lock_for_put(st.bucket(bucket)?.lock().as_ref(), req.lock, None, SystemTime::now())?;
            let id = new_upload_id();
            st.uploads.insert(
                id.clone(),
                Upload {
                    bucket: bucket.to_string(),
                    key: key.to_string(),
                    initiated: SystemTime::now(),
                    req,
                    parts: BTreeMap::new(),
                },
            );
            Ok(id)
        })
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
        check_part_number(part_number)?;
        let alg = self.with(|st| st.upload(bucket, key, upload_id).map(|u| u.req.checksum_algorithm))?;
        crate::multipart::check_part_checksum(alg, req.checksum.as_ref())?;
        let (data, d) = read_body(body, req.content_md5, req.checksum.as_ref(), req.content_length).await?;
        self.with(|st| {
            st.upload(bucket, key, upload_id)?;
            let u = st.uploads.get_mut(upload_id).expect("checked above");
            let checksum = match (&d.checksum, u.req.checksum_algorithm) {
                (Some(c), _) => Some(c.clone()),
                (None, Some(a)) => Some(checksum::checksum_of(a, &data)),
                (None, None) => req.default_checksum.map(|a| checksum::checksum_of(a, &data)),
            };
            let info = PartInfo { part_number, etag: d.etag, size: d.size, last_modified: SystemTime::now(), checksum };
            u.parts.insert(part_number, Part { info: info.clone(), data });
            Ok(info)
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
        check_part_number(part_number)?;
        self.with(|st| {
            st.upload(bucket, key, upload_id)?;
            let o = st
                .bucket(&src.bucket)?
                .find(&src.bucket, &src.key, src.version_id.as_deref())
                .map_err(copy_source_error)?;
            src.conditions.check_copy_source(Some((&o.info.etag, o.info.last_modified)))?;
            let data = match src.range {
                Some(_) => {
                    let (off, len) = crate::multipart::copy_source_range(src.range, o.info.size)?;
                    slice(&o.data, off, len)
                }
                None => o.data.clone(),
            };
            let u = st.uploads.get_mut(upload_id).expect("checked above");
            let checksum = u.req.checksum_algorithm.map(|a| checksum::checksum_of(a, &data));
            let info = PartInfo {
                part_number,
                etag: checksum::md5_hex(&data),
                size: data.len() as u64,
                last_modified: SystemTime::now(),
                checksum,
            };
            u.parts.insert(part_number, Part { info: info.clone(), data });
            Ok(info)
        })
    }

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage> {
        self.with(|st| {
            let u = st.upload(bucket, key, upload_id)?;
            let max = if req.max_parts == 0 { 1000 } else { req.max_parts.min(1000) };
            let after = req.part_number_marker.unwrap_or(0);
            let mut parts: Vec<PartInfo> =
                u.parts.range(after + 1..).take(max + 1).map(|(_, p)| p.info.clone()).collect();
            let is_truncated = parts.len() > max;
            parts.truncate(max);
            let next = if is_truncated { parts.last().map(|p| p.part_number) } else { None };
            Ok(ListPartsPage {
                parts,
                is_truncated,
                next_part_number_marker: next,
                checksum_algorithm: u.req.checksum_algorithm,
                checksum_type: u.req.checksum_type,
            })
        })
    }

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage> {
        self.with(|st| {
            st.bucket(bucket)?;
            let all = st
                .uploads
                .iter()
                .filter(|(_, u)| u.bucket == bucket)
                .map(|(id, u)| crate::types::UploadInfo {
                    key: u.key.clone(),
                    upload_id: id.clone(),
                    initiated: u.initiated,
                    checksum_algorithm: u.req.checksum_algorithm,
                    checksum_type: u.req.checksum_type,
                })
                .collect();
            Ok(crate::listing::page_uploads(&req, all))
        })
    }

    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput> {
        self.with(|st| {
            let now = SystemTime::now();
            st.completed.retain(|_, (_, c)| !c.expired(now));
            if let Some((b, done)) = st.completed.get(upload_id)
                && b == bucket
            {
                st.bucket(bucket)?;
                return done.answer(key, upload_id, &req);
            }
            let u = st.upload(bucket, key, upload_id)?;
            let chosen = validate_completion(&req.parts, |n| u.parts.get(&n).map(|p| &p.info))?;
            let checksum = completion_checksum(u.req.checksum_algorithm, u.req.checksum_type, &chosen, &req)?;
            req.conditions.check_write(st.current(bucket, key))?;
            let mut data = BytesMut::new();
            for p in &chosen {
                data.extend_from_slice(&u.parts[&p.part_number].data);
            }
            let etag = checksum::multipart_etag(chosen.iter().map(|p| p.etag.as_str()));
            let u = st.uploads.remove(upload_id).expect("checked above");
            let lock = st.bucket(bucket)?.lock().map(|b| b.lock_for_new(u.req.lock, now)).unwrap_or_default();
            let info = ObjectInfo {
                key: key.to_string(),
                size: data.len() as u64,
                etag: etag.clone(),
                last_modified: now,
                meta: u.req.meta,
                checksum: checksum.clone(),
                part_sizes: chosen.iter().map(|p| p.size).collect(),
                part_checksums: crate::multipart::kept_part_checksums(checksum.as_ref(), &chosen),
                tag_count: u.req.tags.len(),
                version_id: None,
                lock,
            };
            let size = info.size;
            let version_id =
                st.bucket_mut(bucket)?.publish(key, Object { data: data.freeze(), info, tags: u.req.tags, fs: None });
            let out = PutObjectOutput { etag, checksum, size, last_modified: now, version_id };
            let done = crate::multipart::CompletedUpload::new(key, &chosen, &out);
            st.completed.insert(upload_id.to_string(), (bucket.to_string(), done));
            Ok(out)
        })
    }

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        self.with(|st| {
            st.upload(bucket, key, upload_id)?;
            st.uploads.remove(upload_id);
            Ok(())
        })
    }
}
