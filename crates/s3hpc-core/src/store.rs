//! The Store seam: S3 semantics as an async trait. Backends (posix, memory, noop) implement it;
//! front ends (HTTP, binary protocol, C ABI) call it; clients (HTTP, binary) implement it too,
//! so the benchmark and the C library run unchanged against any of them. Wrappers (authorization,
//! hooks, a caller's scope) implement it over another store: see [`crate::layer`].

use std::sync::Arc;

use async_trait::async_trait;

use crate::body::Body;
use crate::error::{Error, Result};
use crate::lock::Retention;
use crate::types::*;

/// How a store works, as a front end needs to know to call it well: never what it holds, never
/// an answer to a request (see [`Store`] for the rule). One value per store, the same for
/// every caller and every call; a front end may read it once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether this store's calls do blocking file-system work that it would otherwise hand to
    /// a blocking pool, and that it runs on the calling thread inside
    /// [`io::blocking_here`](crate::io::blocking_here). A server may then run a batch of small
    /// requests on one blocking-pool thread (one hand-off for the batch instead of two per
    /// call), or on a connection's own thread, polling the store's futures there with a plain
    /// executor: inside `blocking_here` such a store's calls must finish without waiting on a
    /// Tokio runtime (no timers, no runtime I/O). `false` for stores that never block or that
    /// wait on the network.
    pub offloads_io: bool,
    /// With [`offloads_io`](Self::offloads_io): the store runs that work on the calling worker
    /// inside `block_in_place` (multi-thread runtimes) rather than on the pool, so a server may
    /// run its batches the same way, without a hand-off on the request's path.
    pub offloads_in_place: bool,
    /// Whether the store may still hold a [`Body::Bytes`] it was given (or a part of it) after
    /// `put_object`/`upload_part` returned, as the memory backend does (the bytes become the
    /// object). A front end that only lends the bytes for the duration of the call (the binary
    /// protocol server's shared upload buffers) copies them first when this is `true`; stores
    /// that write the bytes somewhere and drop them say `false`.
    pub keeps_body_bytes: bool,
}

impl Capabilities {
    /// What a store that says nothing about itself has: no blocking work of its own, and it may
    /// keep body bytes (the answer that is always safe).
    pub const DEFAULT: Capabilities =
        Capabilities { offloads_io: false, offloads_in_place: false, keeps_body_bytes: true };
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities::DEFAULT
    }
}

macro_rules! store_ops {
    ($($(#[$doc:meta])* $op:ident),* $(,)?) => {
        /// One operation of the [`Store`] trait (one method, by its name in CamelCase): what a
        /// wrapper ([`crate::layer::Layer`], a [`crate::hooked::Hook`]) is told a call is.
        /// Not an S3 API request (one of those may make several store calls, or none) and not a
        /// binary-protocol opcode.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum StoreOp { $($(#[$doc])* $op),* }

        impl StoreOp {
            /// Every operation, in the trait's order.
            pub const ALL: &'static [StoreOp] = &[$(StoreOp::$op),*];

            /// The name, as written above (`PutObject`).
            pub fn name(self) -> &'static str {
                match self { $(StoreOp::$op => stringify!($op)),* }
            }
        }
    };
}

store_ops! {
    CreateBucket,
    DeleteBucket,
    HeadBucket,
    ListBuckets,
    GetBucketConfig,
    PutBucketConfig,
    BucketOwnerUid,
    /// [`Store::owner`].
    Owner,
    GetBucketTagging,
    PutBucketTagging,
    DeleteBucketTagging,
    PutObject,
    GetObject,
    HeadObject,
    DeleteObject,
    DeleteObjectVersion,
    GetObjectRetention,
    GetObjectLegalHold,
    PutObjectRetention,
    PutObjectLegalHold,
    ListObjectVersions,
    /// The bucket and key a wrapper is told are the destination's.
    CopyObject,
    /// The key a wrapper is told is the destination's.
    RenameObject,
    /// PutObject with a write offset.
    AppendObject,
    /// s3hpc's file-system extension ([`Store::fs`]).
    Fs,
    GetObjectAcl,
    PutObjectAcl,
    GetObjectTagging,
    PutObjectTagging,
    DeleteObjectTagging,
    ListObjects,
    CreateMultipartUpload,
    UploadPart,
    UploadPartCopy,
    ListParts,
    ListMultipartUploads,
    /// [`Store::complete_multipart_upload_with`] (and the shorthand
    /// [`Store::complete_multipart_upload`]).
    CompleteMultipartUpload,
    AbortMultipartUpload,
}

/// The seam every backend, front end and wrapper shares. Its methods are of three kinds, and a
/// new method must say which it is (the section it is written in):
///
/// - **Operations**: a method is an operation when its answer depends on what the store holds,
///   or it changes what the store holds, or a caller may be refused it: the S3 operations,
///   s3hpc's extensions ([`fs`](Self::fs), [`append_object`](Self::append_object),
///   [`rename_object`](Self::rename_object)) and the owner queries listings make. Each has a
///   [`StoreOp`]. A wrapper that adds something to calls (authorization, a hook, a caller's
///   scope) must see every operation: write it as a [`crate::layer::Layer`] (which forwards
///   every operation through one function), or implement every method (no defaults taken:
///   `#[deny(clippy::missing_trait_methods)]` on the impl); the test in
///   [`crate::forwarding`] calls each operation through each wrapper. Defaults answer for
///   stores without the feature (`NotImplemented`, or the feature's meaning without it, as
///   versioning's `null` version).
/// - **Capabilities**: how the store works, never what it holds: the same answer for every
///   caller and every state of the data (per bucket at most), never refused, never an answer
///   to a request; a front end reads them to choose how to call the operations (batching,
///   copying, which memory to write a body into, whether to try an append). They are the
///   [`Capabilities`] value, [`body_buffer`](Self::body_buffer) and
///   [`appends`](Self::appends). A wrapper passes them on or states its own.
/// - **Fast paths**: an operation answered by another road ([`get_object_inline`],
///   [`head_object_inline`]: on the calling thread, without a future). They answer with data,
///   so they count as their operation: a wrapper that adds anything to GET or HEAD must
///   answer `None` (the caller then takes the ordinary road, through the wrapper) and say so
///   where it does.
///
/// [`get_object_inline`]: Self::get_object_inline
/// [`head_object_inline`]: Self::head_object_inline
#[async_trait]
pub trait Store: Send + Sync + 'static {
    // ======== operations ========

    // ---- buckets ----

    /// Create a bucket. `BucketAlreadyOwnedByYou` if it exists, `InvalidBucketName` if the name
    /// breaks the DNS rules ([`crate::names::validate_bucket_name`]).
    async fn create_bucket(&self, bucket: &str) -> Result<()>;

    /// Delete an empty bucket: `BucketNotEmpty` when it holds objects (in-progress multipart
    /// uploads do not count), `NoSuchBucket` when absent.
    async fn delete_bucket(&self, bucket: &str) -> Result<()>;

    /// `Ok` when the bucket exists, `NoSuchBucket` otherwise.
    async fn head_bucket(&self, bucket: &str) -> Result<()>;

    /// All buckets, sorted by name.
    async fn list_buckets(&self) -> Result<Vec<BucketInfo>>;

    /// A bucket configuration document by name (`policy`, `acl`, `ownershipControls`,
    /// `publicAccessBlock`, `policyStatus`, ... as the S3 subresource is named): `None` when the
    /// bucket has none. A plain store keeps documents as given; an authorizing store
    /// (`s3hpc_authz::Authorized`) gives them S3's meaning (validation, defaults, the bucket
    /// owner). `NoSuchBucket` when the bucket is missing. The default answers `NotImplemented`.
    async fn get_bucket_config(&self, _bucket: &str, _name: &str) -> Result<Option<Vec<u8>>> {
        Err(Error::not_implemented("bucket configurations are not implemented by this store"))
    }

    /// Set (`Some`) or remove (`None`) a bucket configuration document, atomically (readers see
    /// the old or the new document). Names are `[A-Za-z0-9-]{1,64}`.
    async fn put_bucket_config(&self, _bucket: &str, _name: &str, _doc: Option<Vec<u8>>) -> Result<()> {
        Err(Error::not_implemented("bucket configurations are not implemented by this store"))
    }

    /// The POSIX uid that owns the bucket's directory, for stores that have one (`None` by
    /// default). `NoSuchBucket` when the bucket is missing.
    async fn bucket_owner_uid(&self, bucket: &str) -> Result<Option<u32>> {
        self.head_bucket(bucket).await.map(|_| None)
    }

    /// Who owns the bucket, an object or an upload, for the `Owner` / `Initiator` elements of
    /// listings (ListObjects, ListObjectVersions, ListParts, ListMultipartUploads). It authorizes
    /// nothing: a front end asks only for what a listing it already answered shows. `None` (the
    /// default) for stores that know no owners: the front end names its one user.
    async fn owner(&self, _bucket: &str, _of: Owned<'_>) -> Result<Option<OwnerInfo>> {
        Ok(None)
    }

    async fn get_bucket_tagging(&self, bucket: &str) -> Result<Tags>;
    async fn put_bucket_tagging(&self, bucket: &str, tags: Tags) -> Result<()>;
    async fn delete_bucket_tagging(&self, bucket: &str) -> Result<()>;

    // ---- objects ----

    /// Store an object from a streamed body; published atomically only after the whole body
    /// arrived and every digest matched.
    async fn put_object(&self, bucket: &str, key: &str, req: PutObjectRequest, body: Body) -> Result<PutObjectOutput>;

    /// Read an object (whole, a range, or a part), conditions evaluated first.
    async fn get_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<GetObjectOutput>;

    /// Metadata of an object, conditions evaluated. `req.range` / `req.part_number` are
    /// validated (InvalidRange) but no body is produced.
    async fn head_object(&self, bucket: &str, key: &str, req: GetObjectRequest) -> Result<ObjectInfo>;

    /// Delete an object; deleting a missing key succeeds (S3 is idempotent here).
    async fn delete_object(&self, bucket: &str, key: &str) -> Result<()>;

    /// DeleteObject with S3 versioning: without `version_id` on a versioned bucket a delete
    /// marker becomes the current version (suspended: the `null` one); with one, that version
    /// (or marker) is removed for good (a missing version succeeds, as on S3; a malformed id is
    /// `InvalidArgument`). The default, for stores without versioning: the `null` version is the
    /// object, any other version does not exist.
    async fn delete_object_version(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<crate::versions::DeleteObjectOutput> {
        if let Some(v) = version_id {
            crate::versions::check_version_id(v)?;
            if v != crate::versions::NULL_VERSION {
                self.head_bucket(bucket).await?;
                return Ok(crate::versions::DeleteObjectOutput {
                    version_id: Some(v.to_string()),
                    delete_marker: false,
                });
            }
        }
        self.delete_object(bucket, key).await?;
        Ok(crate::versions::DeleteObjectOutput { version_id: version_id.map(str::to_string), delete_marker: false })
    }

    /// GetObjectRetention: the retention of a version (`None`: the current one), `None` when it
    /// has none. InvalidRequest on a bucket without object lock, NoSuchKey / NoSuchVersion, 405
    /// for a delete marker. The default answers `NotImplemented`, for stores without object
    /// lock (as do the other object lock calls).
    async fn get_object_retention(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> Result<Option<Retention>> {
        Err(Error::not_implemented("object lock is not implemented by this store"))
    }

    /// GetObjectLegalHold: a version's legal hold (`None`: never set), as
    /// [`get_object_retention`](Self::get_object_retention).
    async fn get_object_legal_hold(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
    ) -> Result<Option<bool>> {
        Err(Error::not_implemented("object lock is not implemented by this store"))
    }

    /// PutObjectRetention: set (`Some`) or remove (`None`) a version's retention, under
    /// [`crate::lock::check_retention_change`] (GOVERNANCE bypass from
    /// [`crate::lock::bypass_requested`]).
    async fn put_object_retention(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _retention: Option<Retention>,
    ) -> Result<()> {
        Err(Error::not_implemented("object lock is not implemented by this store"))
    }

    /// PutObjectLegalHold: set a version's legal hold ON (`true`) or OFF.
    async fn put_object_legal_hold(
        &self,
        _bucket: &str,
        _key: &str,
        _version_id: Option<&str>,
        _on: bool,
    ) -> Result<()> {
        Err(Error::not_implemented("object lock is not implemented by this store"))
    }

    /// ListObjectVersions. The default, for stores without versioning: every object is its one
    /// `null` version, the latest.
    async fn list_object_versions(
        &self,
        bucket: &str,
        req: crate::versions::ListVersionsRequest,
    ) -> Result<crate::versions::ListVersionsPage> {
        use crate::versions::*;
        let marker = req.key_marker.clone().filter(|m| !m.is_empty());
        // The null version is the only one: after "key-marker + a version" comes the next key.
        let lreq = ListObjectsRequest {
            prefix: req.prefix.clone(),
            delimiter: req.delimiter.clone(),
            start_after: marker,
            max_keys: req.max_keys,
        };
        let p = self.list_objects(bucket, lreq).await?;
        let versions = p
            .objects
            .into_iter()
            .map(|o| VersionEntry {
                key: o.key,
                version_id: NULL_VERSION.to_string(),
                is_latest: true,
                delete_marker: false,
                size: o.size,
                etag: o.etag,
                last_modified: o.last_modified,
            })
            .collect::<Vec<_>>();
        let next_version_id_marker = match (&p.next_marker, versions.last()) {
            (Some(m), Some(v)) if *m == v.key => Some(NULL_VERSION.to_string()),
            _ => None,
        };
        Ok(ListVersionsPage {
            versions,
            common_prefixes: p.common_prefixes,
            is_truncated: p.is_truncated,
            next_key_marker: p.next_marker.filter(|_| p.is_truncated),
            next_version_id_marker: next_version_id_marker.filter(|_| p.is_truncated),
        })
    }

    /// Server-side copy; source and destination may be the same object (then metadata must be
    /// replaced, else `InvalidRequest`, as S3 does).
    async fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        dst_bucket: &str,
        dst_key: &str,
        req: CopyObjectRequest,
    ) -> Result<PutObjectOutput>;

    /// RenameObject: give the object `src_key` the name `dst_key` in the same bucket, atomically
    /// (no moment where both or neither exist), with its data, ETag, metadata and tags.
    /// `NoSuchKey` when the source is missing; `req.source_conditions` as copy-source conditions
    /// (412), `req.conditions` as a PUT's write conditions on the destination (`If-None-Match: *`
    /// refuses to replace). Keys naming directory objects (ending in '/') are refused. The
    /// default answers `NotImplemented`, for stores without the operation.
    async fn rename_object(
        &self,
        _bucket: &str,
        _src_key: &str,
        _dst_key: &str,
        _req: RenameObjectRequest,
    ) -> Result<()> {
        Err(Error::not_implemented("RenameObject is not implemented by this store"))
    }

    /// Append (PutObject with `x-amz-write-offset-bytes`): add `body` to the end of `key` when
    /// `offset` equals its current size (0 with no object creates it), else
    /// `InvalidWriteOffset`. The new ETag and checksum describe the whole object. Appenders of
    /// one key are serialized: of concurrent appends at one offset exactly one succeeds, and no
    /// bytes interleave. The default answers `NotImplemented`.
    async fn append_object(
        &self,
        _bucket: &str,
        _key: &str,
        _offset: u64,
        _req: PutObjectRequest,
        _body: Body,
    ) -> Result<PutObjectOutput> {
        Err(Error::not_implemented("PutObject with a write offset (append) is not implemented by this store"))
    }

    /// s3hpc's file-system extension ([`crate::fsattr`]): on a store that keeps objects as files,
    /// get or change the entry `key` names as the file system has it (mode, owner, times, size,
    /// symlinks, hard links), and answer its attributes afterwards. The file system decides as it
    /// would for the caller (under `--identity posix`, as the request's account). Errors carry
    /// their errno ([`crate::fsattr::errno_of`]). The default answers `NotImplemented`, for
    /// stores without files (and clients of servers that do not offer it).
    async fn fs(&self, _bucket: &str, _key: &str, _op: crate::fsattr::FsOp) -> Result<crate::fsattr::FsAttr> {
        Err(Error::not_implemented("file-system attributes (s3hpc's extension) are not implemented by this store"))
    }

    /// GetObjectAcl: the object's access control list as an S3 `AccessControlPolicy` document,
    /// or `None` (the default, for stores that do not authorize: the front end's one user has
    /// FULL_CONTROL) once the object is known to exist.
    async fn get_object_acl(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        self.head_object(bucket, key, GetObjectRequest::default()).await.map(|_| None)
    }

    /// PutObjectAcl with a document (`doc`) or the request's ACL headers (see
    /// [`crate::caller::CallerHeaders`]). The default answers `NotImplemented`.
    async fn put_object_acl(&self, _bucket: &str, _key: &str, _doc: Option<Vec<u8>>) -> Result<()> {
        Err(Error::not_implemented("object ACLs are not implemented by this store"))
    }

    /// GetObjectTagging: the tags of a version (`None`: the current one) and its version id.
    /// `NoSuchKey` (marked when the current version is a delete marker) / `NoSuchVersion`,
    /// `MethodNotAllowed` for a delete marker's id, `InvalidArgument` for a malformed one.
    async fn get_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<ObjectTagging>;

    /// PutObjectTagging: replace the tag set of a version (`None`: the current one), errors as
    /// [`get_object_tagging`](Self::get_object_tagging); returns the version's id.
    async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: Tags,
    ) -> Result<Option<String>>;

    /// DeleteObjectTagging: a version's tag set emptied, as
    /// [`put_object_tagging`](Self::put_object_tagging).
    async fn delete_object_tagging(&self, bucket: &str, key: &str, version_id: Option<&str>) -> Result<Option<String>>;

    // ---- listing ----

    async fn list_objects(&self, bucket: &str, req: ListObjectsRequest) -> Result<ListObjectsPage>;

    // ---- multipart ----

    /// Start an upload; returns an unguessable upload id.
    async fn create_multipart_upload(&self, bucket: &str, key: &str, req: CreateMultipartRequest) -> Result<String>;

    async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        req: UploadPartRequest,
        body: Body,
    ) -> Result<PartInfo>;

    /// UploadPartCopy: a part made from (a range of) an existing object or one of its versions.
    async fn upload_part_copy(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        src: PartCopySource,
    ) -> Result<PartInfo>;

    async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: ListPartsRequest,
    ) -> Result<ListPartsPage>;

    async fn list_multipart_uploads(&self, bucket: &str, req: ListUploadsRequest) -> Result<ListUploadsPage>;

    /// [`Store::complete_multipart_upload_with`] with just the parts and conditions (no expected
    /// whole-object checksum, no checksum type).
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

    /// Assemble the listed parts (ascending part numbers, ETags matching, every part but the last
    /// at least [`MIN_PART_SIZE`]) into the object and publish it atomically. ETag: MD5 of the
    /// concatenated binary part MD5s, hex, `-N`. Checksum: per the upload's checksum type
    /// ([`crate::multipart::completion_checksum`]), verified against `req.checksum` if given.
    async fn complete_multipart_upload_with(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        req: CompleteMultipartRequest,
    ) -> Result<PutObjectOutput>;

    async fn abort_multipart_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()>;

    // ======== capabilities ========

    /// How this store works ([`Capabilities`]); [`Capabilities::DEFAULT`] unless it says more.
    fn capabilities(&self) -> Capabilities {
        Capabilities::DEFAULT
    }

    /// Memory for a PUT or UploadPart body of `len` bytes that this store takes without copying
    /// it: the binary-protocol client lends an upload slot, memory its server has mapped, so a
    /// body written there is never copied on its way to the server's store. `None` (the
    /// default, and when the store has no such memory to spare): use any memory.
    fn body_buffer(&self, _len: usize) -> Option<crate::BodyBuffer> {
        None
    }

    /// Whether `append_object` (and `rename_object`) work in `bucket`: a probe for clients that
    /// must choose before their first append (the mount decides at open whether a file can be
    /// appended to). An S3 server that ignores the write offset would replace the object with
    /// the appended bytes, so a client store answers true only for servers known to honour it
    /// (and refuses both calls elsewhere). Default: false.
    async fn appends(&self, _bucket: &str) -> bool {
        false
    }

    // ======== fast paths ========

    /// [`get_object`](Self::get_object) completed on the calling thread, for callers that wait
    /// for the answer anyway (the C library): `Some` when the store answers without waiting on
    /// anything asynchronous (an in-process store whose I/O runs inline), saving the future and
    /// the runtime; `None` (the default) to use `get_object`.
    fn get_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<GetObjectOutput>> {
        None
    }

    /// [`head_object`](Self::head_object) on the calling thread, as
    /// [`get_object_inline`](Self::get_object_inline).
    fn head_object_inline(&self, _bucket: &str, _key: &str, _req: &GetObjectRequest) -> Option<Result<ObjectInfo>> {
        None
    }
}

/// A shared, dynamically chosen store.
pub type DynStore = Arc<dyn Store>;
