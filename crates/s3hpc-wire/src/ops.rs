//! The operation table: every opcode of the protocol declared once, with its number, its name
//! in PROTOCOL.md, its request fields (each with its encoding, [`crate::field`]) and its success
//! payload. From it come the [`Request`] enum, the [`Opcode`] enum and its names, the request
//! encoder and decoder, and one marker type per operation ([`ops`]) that ties an
//! operation to its response encoding for both the server ([`Op::Out`] written after the status
//! byte) and the client (read back with the same type). The server's dispatch is one exhaustive
//! match over [`Request`], so a new row that the server does not answer does not compile.
//! A test checks PROTOCOL.md's opcode table (section 5) against this one.

use s3hpc_core::Result;

use crate::codec::{Dec, Enc, malformed};
#[allow(unused_imports)]
use crate::field::*;

/// An operation: its opcode and the encoding of its success payload.
pub trait Op {
    const OPCODE: Opcode;
    type Out: Field;
}

/// The value an operation's success payload carries.
pub type Output<O> = <<O as Op>::Out as Field>::Value;

/// Whether `$want` is among the flags.
macro_rules! flag {
    ($want:ident;) => { false };
    (body; body $($rest:ident)*) => { true };
    (key; key $($rest:ident)*) => { true };
    ($want:ident; $other:ident $($rest:ident)*) => { flag!($want; $($rest)*) };
}

macro_rules! operations {
    ($(
        $(#[$doc:meta])*
        $code:literal $Name:ident $proto:literal [$($flag:ident)*]
        { $($(#[$fdoc:meta])* $field:ident : $codec:ident),* $(,)? } -> $out:ident;
    )*) => {
        /// A decoded request (everything but the body).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request {
            $(
                $(#[$doc])*
                $Name { $($(#[$fdoc])* $field: <$codec as Field>::Value),* },
            )*
        }

        /// The opcodes (PROTOCOL.md section 5). Numbers on the wire, kept apart from
        /// `s3hpc_core::S3Op` (the S3 API's operations, as the HTTP router and the authorization
        /// layer name them): an opcode keeps its number and name for the protocol's
        /// compatibility (its name is the `operation` label of the binary protocol's metrics),
        /// most name one `Store` method rather than an S3 request (`GetBucketConfig`,
        /// `AppendObject`, `CreateMultipart`), and some are no S3 operation at all (the
        /// self-service key operations).
        #[repr(u8)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $($Name = $code,)*
        }

        impl Opcode {
            /// Every opcode, in table order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$Name),*];

            pub fn from_u8(b: u8) -> Option<Opcode> {
                match b {
                    $($code => Some(Opcode::$Name),)*
                    _ => None,
                }
            }

            /// The name for logs and metrics (the variant's).
            pub fn name(self) -> &'static str {
                match self {
                    $(Opcode::$Name => stringify!($Name),)*
                }
            }

            /// The name PROTOCOL.md gives it.
            pub fn protocol_name(self) -> &'static str {
                match self {
                    $(Opcode::$Name => $proto,)*
                }
            }

            /// Whether requests of this opcode carry a body (PutObject, AppendObject, UploadPart).
            pub fn takes_body(self) -> bool {
                match self {
                    $(Opcode::$Name => flag!(body; $($flag)*),)*
                }
            }

            /// Whether this is a self-service key operation (answered for the peer's uid, not by
            /// the store).
            pub fn is_key_op(self) -> bool {
                match self {
                    $(Opcode::$Name => flag!(key; $($flag)*),)*
                }
            }
        }

        /// One marker type per operation, naming its opcode and its success payload.
        pub mod ops {
            #[allow(unused_imports)]
            use crate::field::*;
            use super::{Op, Opcode};
            $(
                pub struct $Name;
                impl Op for $Name {
                    const OPCODE: Opcode = Opcode::$Name;
                    type Out = $out;
                }
            )*
        }

        impl Request {
            pub fn op(&self) -> Opcode {
                match self {
                    $(Request::$Name { .. } => Opcode::$Name,)*
                }
            }

            /// Encode opcode and fields (the body, if inline, is appended by the caller).
            pub fn encode(&self, e: &mut Enc) {
                e.u8(self.opcode());
                match self {
                    $(
                        #[allow(unused_variables)]
                        Request::$Name { $($field),* } => {
                            $(<$codec as Field>::put($field, e);)*
                        }
                    )*
                }
            }

            /// Decode opcode and fields; the decoder is left at the start of an inline body (if
            /// any).
            pub fn decode(d: &mut Dec<'_>) -> Result<Request> {
                let opcode = d.u8()?;
                match Opcode::from_u8(opcode) {
                    $(
                        // struct expressions evaluate their fields in the order written
                        Some(Opcode::$Name) => Ok(Request::$Name { $($field: <$codec as Field>::get(d)?),* }),
                    )*
                    None => Err(malformed(format!("unknown opcode {opcode}"))),
                }
            }
        }
    };
}

operations! {
    1 CreateBucket "CreateBucket" [] { bucket: Str } -> Unit;
    2 DeleteBucket "DeleteBucket" [] { bucket: Str } -> Unit;
    3 HeadBucket "HeadBucket" [] { bucket: Str } -> Unit;
    4 ListBuckets "ListBuckets" [] {} -> Buckets;
    5 GetBucketTagging "GetBucketTagging" [] { bucket: Str } -> TagList;
    6 PutBucketTagging "PutBucketTagging" [] { bucket: Str, tags: TagList } -> Unit;
    7 DeleteBucketTagging "DeleteBucketTagging" [] { bucket: Str } -> Unit;
    /// A bucket configuration document (policy, ACL, ownership controls, ...).
    8 GetBucketConfig "GetBucketConfig" [] { bucket: Str, name: Str } -> OptDoc;
    /// Set (`Some`) or remove (`None`) a bucket configuration document.
    9 PutBucketConfig "PutBucketConfig" [] { bucket: Str, name: Str, doc: OptDoc } -> Unit;
    16 PutObject "PutObject" [body] {
        bucket: Str, key: Str, meta: Meta, tags: TagList, conditions: Conds, upload: Upload,
    } -> PutOut;
    17 GetObject "GetObject" [] { bucket: Str, key: Str, req: GetReq } -> GetOut;
    18 HeadObject "HeadObject" [] { bucket: Str, key: Str, req: GetReq } -> Info;
    19 DeleteObject "DeleteObject" [] { bucket: Str, key: Str } -> Unit;
    20 CopyObject "CopyObject" [] {
        src_bucket: Str, src_key: Str, dst_bucket: Str, dst_key: Str, req: CopyReq,
    } -> PutOut;
    21 GetObjectTagging "GetObjectTagging" [] { bucket: Str, key: Str } -> TagList;
    22 PutObjectTagging "PutObjectTagging" [] { bucket: Str, key: Str, tags: TagList } -> Unit;
    23 DeleteObjectTagging "DeleteObjectTagging" [] { bucket: Str, key: Str } -> Unit;
    24 RenameObject "RenameObject" [] {
        bucket: Str, src_key: Str, dst_key: Str, source_conditions: Conds, conditions: Conds,
        client_token: OptStr,
    } -> Unit;
    /// PutObject with a write offset (append).
    25 AppendObject "AppendObject" [body] {
        bucket: Str, key: Str, offset: Var, meta: Meta, tags: TagList, conditions: Conds, upload: Upload,
    } -> PutOut;
    26 GetObjectAcl "GetObjectAcl" [] { bucket: Str, key: Str } -> OptDoc;
    27 PutObjectAcl "PutObjectAcl" [] { bucket: Str, key: Str, doc: OptDoc } -> Unit;
    /// s3hpc's file-system extension (`Store::fs`): the operation as `FsOp::encode` writes it;
    /// the answer is the attributes as `FsAttr::encode` writes them (one string).
    28 Fs "Fs" [] { bucket: Str, key: Str, op: Str } -> Str;
    32 ListObjects "ListObjects" [] { bucket: Str, req: ListObjectsReq } -> ListPage;
    48 CreateMultipart "CreateMultipartUpload" [] {
        bucket: Str, key: Str, meta: Meta, tags: TagList, checksum_algorithm: Alg,
        /// Optional trailing field: sent only when `Some`, so requests without it stay what
        /// version-1 peers that predate it send and accept.
        checksum_type: TrailingCtype,
    } -> Str;
    49 UploadPart "UploadPart" [body] {
        bucket: Str, key: Str, upload_id: Str, part_number: VarU32, upload: Upload,
    } -> Part;
    50 UploadPartCopy "UploadPartCopy" [] {
        bucket: Str, key: Str, upload_id: Str, part_number: VarU32, src_bucket: Str, src_key: Str,
        src_range: Range, src_conditions: Conds,
    } -> Part;
    51 ListParts "ListParts" [] { bucket: Str, key: Str, upload_id: Str, req: ListPartsReq } -> PartsPage;
    52 ListUploads "ListMultipartUploads" [] { bucket: Str, req: ListUploadsReq } -> UploadsPage;
    53 CompleteMultipart "CompleteMultipartUpload" [] {
        bucket: Str, key: Str, upload_id: Str, req: CompleteReq,
    } -> PutOut;
    54 AbortMultipart "AbortMultipartUpload" [] { bucket: Str, key: Str, upload_id: Str } -> Unit;
    /// A self-service key for the Unix-socket peer's uid (`s3hpc credentials create`).
    96 CreateAccessKey "CreateAccessKey" [key] {
        /// Lifetime in seconds (`None`: the server's default).
        lifetime: OptVar,
        description: Str,
    } -> NewKey;
    /// The peer's keys (an administrator's: all).
    97 ListAccessKeys "ListAccessKeys" [key] {} -> KeyInfos;
    98 RevokeAccessKey "RevokeAccessKey" [key] { access_key: Str } -> Unit;
}

impl Request {
    /// The opcode's number.
    pub fn opcode(&self) -> u8 {
        self.op() as u8
    }

    /// The operation's name (the variant's), for logs and metrics.
    pub fn op_name(&self) -> &'static str {
        self.op().name()
    }

    /// Whether this opcode carries a body (PutObject, AppendObject, UploadPart).
    pub fn takes_body(&self) -> bool {
        self.op().takes_body()
    }

    /// Whether this is a self-service key operation (answered for the peer's uid, not by the
    /// store).
    pub fn is_key_op(&self) -> bool {
        self.op().is_key_op()
    }

    /// Whether sending this request a second time, after a connection was lost before its
    /// answer arrived, cannot change the outcome: reads, and writes whose repetition leaves the
    /// same state (tagging, DeleteObject, unconditional PutObject/UploadPart; their body must be
    /// replayable too, which the caller checks). CreateBucket, multipart create/complete/abort,
    /// copies and conditional writes are not replayed: a second attempt could report an error
    /// for an operation that succeeded.
    pub fn replayable(&self) -> bool {
        use Request::*;
        match self {
            HeadBucket { .. }
            | ListBuckets {}
            | GetBucketTagging { .. }
            | PutBucketTagging { .. }
            | DeleteBucketTagging { .. }
            | GetBucketConfig { .. }
            | PutBucketConfig { .. }
            | GetObjectAcl { .. }
            | PutObjectAcl { .. }
            | HeadObject { .. }
            | GetObject { .. }
            | DeleteObject { .. }
            | GetObjectTagging { .. }
            | PutObjectTagging { .. }
            | DeleteObjectTagging { .. }
            | ListObjects { .. }
            | ListParts { .. }
            | ListUploads { .. }
            | UploadPart { .. }
            | ListAccessKeys {}
            | RevokeAccessKey { .. } => true,
            PutObject { conditions, .. } => conditions.is_empty(),
            Fs { op, .. } => op == "getattr",
            _ => false,
        }
    }
}

/// Write an operation's success payload (after the status byte).
pub fn put_output<O: Op>(v: &Output<O>, e: &mut Enc) {
    <O::Out as Field>::put(v, e)
}

/// Read an operation's success payload (after the status byte), to its end.
pub fn get_output<O: Op>(d: &mut Dec<'_>) -> Result<Output<O>> {
    let v = <O::Out as Field>::get(d)?;
    d.end()?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PROTOCOL.md section 5's opcode table, as (number, name) rows.
    fn protocol_md_opcodes() -> Vec<(u8, String)> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PROTOCOL.md");
        let text = std::fs::read_to_string(path).expect("docs/PROTOCOL.md");
        let mut lines = text.lines().skip_while(|l| !l.starts_with("| op | name |"));
        assert!(lines.next().is_some(), "PROTOCOL.md has no `| op | name |` table");
        lines
            .skip(1) // the |---| row
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let n = cells[1].parse().unwrap_or_else(|_| panic!("PROTOCOL.md opcode row {l:?}"));
                (n, cells[2].to_string())
            })
            .collect()
    }

    #[test]
    fn protocol_md_opcode_table_matches_the_declaration() {
        let doc = protocol_md_opcodes();
        let table: Vec<(u8, String)> = Opcode::ALL.iter().map(|o| (*o as u8, o.protocol_name().to_string())).collect();
        assert_eq!(doc, table, "docs/PROTOCOL.md's opcode table and the operation table (ops.rs) differ");
    }

    #[test]
    fn opcodes_roundtrip_and_are_unique() {
        for o in Opcode::ALL {
            assert_eq!(Opcode::from_u8(*o as u8), Some(*o));
        }
        let mut n: Vec<u8> = Opcode::ALL.iter().map(|o| *o as u8).collect();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), Opcode::ALL.len());
        for b in 0..=255u8 {
            assert_eq!(
                Opcode::from_u8(b).map(|o| o as u8),
                Opcode::ALL.iter().find(|o| **o as u8 == b).map(|o| *o as u8)
            );
        }
    }
}
