//! s3hpc's file-system extension over HTTP (`Store::fs`, see `s3hpc_core::fsattr`):
//! `POST /bucket/key?s3hpc-fs` (or `POST /bucket?s3hpc-fs` for the bucket's own directory) with
//! the operation in the `x-s3hpc-fs` header (`FsOp::encode`'s line); the answer is 200 with the
//! entry's attributes in the `x-s3hpc-fs-attr` header (`FsAttr::encode`'s line) and no body.
//! Errors are S3 error documents whose message starts with the POSIX error (`[EPERM] ...`).

use s3hpc_core::fsattr::FsOp;
use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::RespBody;

pub(super) async fn fs(r: &Req<'_>) -> Result<Resp> {
    let line = hdr(&r.parts.headers, "x-s3hpc-fs")
        .ok_or_else(|| Error::invalid_argument("?s3hpc-fs needs the operation in the x-s3hpc-fs header"))?;
    let op = FsOp::parse(line)?;
    let attr = store(r).fs(&r.bucket, &r.key, op).await?;
    Ok(empty_ok().header("x-s3hpc-fs-attr", attr.encode()).body(RespBody::Empty).unwrap())
}
