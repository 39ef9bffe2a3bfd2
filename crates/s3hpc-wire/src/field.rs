//! How each field of the operation table ([`crate::ops`]) travels: one type per encoding, naming
//! the Rust value it carries and writing/reading it with the [`Enc`]/[`Dec`] primitives
//! (PROTOCOL.md sections 4 and 5). A request variant's field types and a response's type come
//! from these, so encoder and decoder cannot disagree about a field.

use s3hpc_core::creds::AccessKeyInfo;
use s3hpc_core::{
    BucketInfo, ByteRange, ChecksumAlgorithm, ChecksumType, CompleteMultipartRequest, CompletePart, Conditions,
    Directive, ListObjectsPage, ListObjectsRequest, ListPartsPage, ListPartsRequest, ListUploadsPage,
    ListUploadsRequest, ObjectInfo, ObjectMeta, PartInfo, PutObjectOutput, Result, Tags,
};

use crate::codec::{Dec, Enc, UploadFields, WireCopy, WireGet, malformed};
use crate::frame::MAX_LIST;

/// One field encoding: the value it carries, how it is written and read.
pub trait Field {
    type Value;
    fn put(v: &Self::Value, e: &mut Enc);
    fn get(d: &mut Dec<'_>) -> Result<Self::Value>;
}

macro_rules! field {
    ($(#[$m:meta])* $name:ident: $ty:ty, |$v:ident, $e:ident| $put:expr, |$d:ident| $get:expr $(,)?) => {
        $(#[$m])*
        pub struct $name;
        impl Field for $name {
            type Value = $ty;
            #[inline]
            fn put($v: &$ty, $e: &mut Enc) {
                $put
            }
            #[inline]
            fn get($d: &mut Dec<'_>) -> Result<$ty> {
                $get
            }
        }
    };
}

// --- scalars and small groups

field! {
    /// Nothing (an empty success payload).
    Unit: (), |_v, _e| (), |_d| Ok(())
}
field! {
    /// `str`.
    Str: String, |v, e| e.str(v), |d| d.str()
}
field! {
    /// `varint`.
    Var: u64, |v, e| e.var(*v), |d| d.var()
}
field! {
    /// `varint` that must fit 32 bits (part numbers).
    VarU32: u32, |v, e| e.var(*v as u64), |d| d.var_u32()
}
field! {
    /// `opt<str>`.
    OptStr: Option<String>, |v, e| e.opt_str(v.as_deref()), |d| d.opt_str()
}
field! {
    /// `opt<varint>`.
    OptVar: Option<u64>, |v, e| e.opt_var(*v), |d| d.opt_var()
}
field! {
    /// `opt<bytes>`: a configuration or ACL document of at most `MAX_DOC` bytes.
    OptDoc: Option<Vec<u8>>, |v, e| e.opt_bytes(v.as_deref()), |d| d.opt_bytes()
}
field! {
    /// `tags`.
    TagList: Tags, |v, e| e.tags(v), |d| d.tags()
}
field! {
    /// `meta`.
    Meta: ObjectMeta, |v, e| e.meta(v), |d| d.meta()
}
field! {
    /// `conditions`.
    Conds: Conditions, |v, e| e.conditions(v), |d| d.conditions()
}
field! {
    /// `range`.
    Range: Option<ByteRange>, |v, e| e.range(*v), |d| d.range()
}
field! {
    /// `alg`.
    Alg: Option<ChecksumAlgorithm>, |v, e| e.alg(*v), |d| d.alg()
}
field! {
    /// `upload`.
    Upload: UploadFields, |v, e| e.upload_fields(v), |d| d.upload_fields()
}
field! {
    /// An optional trailing `ctype`: written only when `Some`, read only when bytes are left, so
    /// a request without it is what peers that predate it send and accept.
    TrailingCtype: Option<ChecksumType>,
    |v, e| if v.is_some() { e.ctype(*v) },
    |d| if d.is_empty() { Ok(None) } else { d.ctype() }
}

// --- request groups

field! {
    /// GetObject/HeadObject: `range`, `opt<varint> part_number`, `conditions`.
    GetReq: WireGet,
    |v, e| {
        e.range(v.range);
        e.opt_var(v.part_number.map(u64::from));
        e.conditions(&v.conditions);
    },
    |d| {
        let range = d.range()?;
        let part_number = match d.opt_var()? {
            None => None,
            Some(n) => Some(u32::try_from(n).map_err(|_| malformed("part number does not fit 32 bits"))?),
        };
        Ok(WireGet { range, part_number, conditions: d.conditions()? })
    }
}

field! {
    /// CopyObject after the four names: `directive<meta>`, `directive<tags>`, `conditions`
    /// source, `conditions` destination, `alg`, [`str website_redirect_location`].
    CopyReq: WireCopy,
    |v, e| {
        match &v.metadata {
            Directive::Copy => e.u8(0),
            Directive::Replace(m) => {
                e.u8(1);
                e.meta(m);
            }
        }
        match &v.tagging {
            Directive::Copy => e.u8(0),
            Directive::Replace(t) => {
                e.u8(1);
                e.tags(t);
            }
        }
        e.conditions(&v.source_conditions);
        e.conditions(&v.conditions);
        e.alg(v.checksum_algorithm);
        if let Some(w) = &v.website_redirect_location {
            e.str(w);
        }
    },
    |d| {
        let metadata = if d.bool()? { Directive::Replace(d.meta()?) } else { Directive::Copy };
        let tagging = if d.bool()? { Directive::Replace(d.tags()?) } else { Directive::Copy };
        Ok(WireCopy {
            metadata,
            tagging,
            source_conditions: d.conditions()?,
            conditions: d.conditions()?,
            checksum_algorithm: d.alg()?,
            website_redirect_location: if d.is_empty() { None } else { Some(d.str()?) },
        })
    }
}

field! {
    /// ListObjects after the bucket: `str prefix`, `opt<str> delimiter`, `opt<str> start_after`,
    /// `varint max_keys`.
    ListObjectsReq: ListObjectsRequest,
    |v, e| {
        e.str(&v.prefix);
        e.opt_str(v.delimiter.as_deref());
        e.opt_str(v.start_after.as_deref());
        e.var(v.max_keys as u64);
    },
    |d| Ok(ListObjectsRequest {
        prefix: d.str()?,
        delimiter: d.opt_str()?,
        start_after: d.opt_str()?,
        max_keys: d.var()?.min(u32::MAX as u64) as usize,
    })
}

field! {
    /// ListParts after the upload id: `opt<varint> part_number_marker`, `varint max_parts`.
    ListPartsReq: ListPartsRequest,
    |v, e| {
        e.opt_var(v.part_number_marker.map(u64::from));
        e.var(v.max_parts as u64);
    },
    |d| {
        let part_number_marker = match d.opt_var()? {
            None => None,
            Some(n) => Some(u32::try_from(n).map_err(|_| malformed("part number marker too large"))?),
        };
        let max_parts = d.var()?.min(u32::MAX as u64) as usize;
        Ok(ListPartsRequest { part_number_marker, max_parts })
    }
}

field! {
    /// ListMultipartUploads after the bucket: `str prefix`, `opt<str> delimiter`, `opt<str>
    /// key_marker`, `opt<str> upload_id_marker`, `varint max_uploads`.
    ListUploadsReq: ListUploadsRequest,
    |v, e| {
        e.str(&v.prefix);
        e.opt_str(v.delimiter.as_deref());
        e.opt_str(v.key_marker.as_deref());
        e.opt_str(v.upload_id_marker.as_deref());
        e.var(v.max_uploads as u64);
    },
    |d| Ok(ListUploadsRequest {
        prefix: d.str()?,
        delimiter: d.opt_str()?,
        key_marker: d.opt_str()?,
        upload_id_marker: d.opt_str()?,
        max_uploads: d.var()?.min(u32::MAX as u64) as usize,
    })
}

field! {
    /// CompleteMultipartUpload after the upload id: `list<(varint part_number, str etag,
    /// checksum)>`, `conditions`, and the optional trailing group [`checksum` expected whole-object
    /// checksum, `ctype`], written only when either is set.
    CompleteReq: CompleteMultipartRequest,
    |v, e| {
        e.var(v.parts.len() as u64);
        for p in &v.parts {
            e.var(p.part_number as u64);
            e.str(&p.etag);
            e.checksum(p.checksum.as_ref());
        }
        e.conditions(&v.conditions);
        if v.checksum.is_some() || v.checksum_type.is_some() {
            e.checksum(v.checksum.as_ref());
            e.ctype(v.checksum_type);
        }
    },
    |d| {
        let n = d.len(MAX_LIST, "part list")?;
        let mut parts = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            parts.push(CompletePart { part_number: d.var_u32()?, etag: d.str()?, checksum: d.checksum()? });
        }
        let conditions = d.conditions()?;
        let (checksum, checksum_type) = if d.is_empty() { (None, None) } else { (d.checksum()?, d.ctype()?) };
        Ok(CompleteMultipartRequest { parts, conditions, checksum, checksum_type })
    }
}

// --- responses

field! {
    /// ListBuckets: `list<(str name, time created)>`.
    Buckets: Vec<BucketInfo>, |v, e| e.buckets(v), |d| d.buckets()
}
field! {
    /// `put_output`.
    PutOut: PutObjectOutput, |v, e| e.put_output(v), |d| d.put_output()
}
field! {
    /// GetObject: `object_info`, `opt<(varint offset, varint len)>` served range (a body
    /// descriptor's region follows, written by the server's responder).
    GetOut: (ObjectInfo, Option<(u64, u64)>), |v, e| e.get_output(&v.0, v.1), |d| d.get_output()
}
field! {
    /// `object_info`.
    Info: ObjectInfo, |v, e| e.object_info(v), |d| d.object_info()
}
field! {
    /// ListObjects' page.
    ListPage: ListObjectsPage, |v, e| e.list_page(v), |d| d.list_page()
}
field! {
    /// `part_info`.
    Part: PartInfo, |v, e| e.part_info(v), |d| d.part_info()
}
field! {
    /// ListParts' page.
    PartsPage: ListPartsPage, |v, e| e.parts_page(v), |d| d.parts_page()
}
field! {
    /// ListMultipartUploads' page.
    UploadsPage: ListUploadsPage, |v, e| e.uploads_page(v), |d| d.uploads_page()
}
field! {
    /// CreateAccessKey: `str secret_key`, `key_info`.
    NewKey: (String, AccessKeyInfo),
    |v, e| {
        e.str(&v.0);
        e.key_info(&v.1);
    },
    |d| Ok((d.str()?, d.key_info()?))
}
field! {
    /// ListAccessKeys: `list<key_info>`.
    KeyInfos: Vec<AccessKeyInfo>,
    |v, e| {
        e.var(v.len() as u64);
        for k in v {
            e.key_info(k);
        }
    },
    |d| d.key_infos()
}
