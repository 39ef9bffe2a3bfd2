//! Running a request against the store and answering it: inline, as a file descriptor, or as
//! a body streamed within the client's credit.

use super::*;

pub(super) fn upload_checksum(u: &UploadFields, deferred: Option<Arc<OnceLock<String>>>) -> Option<ChecksumRequest> {
    u.checksum.as_ref().map(|c| ChecksumRequest {
        algorithm: c.algorithm,
        expected: match &c.expected {
            WireExpected::None => None,
            WireExpected::Known(v) => Some(Expected::Known(v.clone())),
            WireExpected::Deferred => deferred.map(Expected::Deferred),
        },
    })
}

pub(super) fn ok_frame(id: u32, flags: u8, e: Enc) -> Bytes {
    frame_bytes(ty::RESPONSE, flags, id, &e.finish())
}

pub(super) fn ok() -> Enc {
    let mut e = Enc::new();
    e.u8(0);
    e
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn handle_request(
    store: &DynStore,
    observer: Option<&dyn Observer>,
    out: &OutTx,
    id: u32,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
    credit: Arc<Semaphore>,
    limits: Limits,
    fd_ok: bool,
) {
    let result = execute(store, observer, req, body, deferred).await;
    if let Some((e, body)) = respond_now(out, id, result, fd_ok) {
        stream_body(out, id, e, body, &credit, limits).await;
    }
}

/// Run one request against the store, telling `observer`: the response's fields and body, or the
/// error.
pub(super) async fn execute(
    store: &DynStore,
    observer: Option<&dyn Observer>,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
) -> Result<(Enc, Body), Error> {
    let Some(obs) = observer else { return run(store, req, body, deferred).await };
    let (op, t0) = (req.op_name(), std::time::Instant::now());
    let r = run(store, req, body, deferred).await;
    obs.request(op, r.as_ref().err().map(|e| e.code), t0.elapsed());
    r
}

/// Run one request against the store: the response's fields and body, or the error. Each answer
/// is written with its operation's declared encoding (`out::<ops::X>`, the operation table in
/// `ops.rs`), which the client reads back with the same type.
pub(super) async fn run(
    store: &DynStore,
    req: Request,
    body: Body,
    deferred: Option<Arc<OnceLock<String>>>,
) -> Result<(Enc, Body), Error> {
    use Request::*;
    let mut e = ok();
    match req {
        CreateBucket { bucket } => out::<ops::CreateBucket>(&store.create_bucket(&bucket).await?, &mut e),
        DeleteBucket { bucket } => out::<ops::DeleteBucket>(&store.delete_bucket(&bucket).await?, &mut e),
        HeadBucket { bucket } => out::<ops::HeadBucket>(&store.head_bucket(&bucket).await?, &mut e),
        ListBuckets {} => out::<ops::ListBuckets>(&store.list_buckets().await?, &mut e),
        GetBucketTagging { bucket } => out::<ops::GetBucketTagging>(&store.get_bucket_tagging(&bucket).await?, &mut e),
        PutBucketTagging { bucket, tags } => {
            out::<ops::PutBucketTagging>(&store.put_bucket_tagging(&bucket, tags).await?, &mut e)
        }
        DeleteBucketTagging { bucket } => {
            out::<ops::DeleteBucketTagging>(&store.delete_bucket_tagging(&bucket).await?, &mut e)
        }
        GetBucketConfig { bucket, name } => {
            out::<ops::GetBucketConfig>(&store.get_bucket_config(&bucket, &name).await?, &mut e)
        }
        PutBucketConfig { bucket, name, doc } => {
            out::<ops::PutBucketConfig>(&store.put_bucket_config(&bucket, &name, doc).await?, &mut e)
        }
        GetObjectAcl { bucket, key } => out::<ops::GetObjectAcl>(&store.get_object_acl(&bucket, &key).await?, &mut e),
        Fs { bucket, key, op } => {
            let op = s3hpc_core::fsattr::FsOp::parse(&op)?;
            out::<ops::Fs>(&store.fs(&bucket, &key, op).await?.encode(), &mut e)
        }
        PutObjectAcl { bucket, key, doc } => {
            out::<ops::PutObjectAcl>(&store.put_object_acl(&bucket, &key, doc).await?, &mut e)
        }
        PutObject { bucket, key, meta, tags, conditions, upload } => {
            let r = PutObjectRequest {
                meta,
                tags,
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                conditions,
                // Lock parameters are not carried (PROTOCOL.md 8a); the bucket's default applies.
                lock: Default::default(),
            };
            out::<ops::PutObject>(&store.put_object(&bucket, &key, r, body).await?, &mut e)
        }
        GetObject { bucket, key, req } => {
            let o = store.get_object(&bucket, &key, req.into()).await?;
            out::<ops::GetObject>(&(o.info, o.range), &mut e);
            return Ok((e, o.body));
        }
        HeadObject { bucket, key, req } => {
            out::<ops::HeadObject>(&store.head_object(&bucket, &key, req.into()).await?, &mut e)
        }
        DeleteObject { bucket, key } => out::<ops::DeleteObject>(&store.delete_object(&bucket, &key).await?, &mut e),
        CopyObject { src_bucket, src_key, dst_bucket, dst_key, req } => out::<ops::CopyObject>(
            &store.copy_object(&src_bucket, &src_key, &dst_bucket, &dst_key, req.into()).await?,
            &mut e,
        ),
        RenameObject { bucket, src_key, dst_key, source_conditions, conditions, client_token } => {
            let r = s3hpc_core::RenameObjectRequest { source_conditions, conditions, client_token };
            out::<ops::RenameObject>(&store.rename_object(&bucket, &src_key, &dst_key, r).await?, &mut e)
        }
        AppendObject { bucket, key, offset, meta, tags, conditions, upload } => {
            let r = PutObjectRequest {
                meta,
                tags,
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                conditions,
                // Lock parameters are not carried (PROTOCOL.md 8a); the bucket's default applies.
                lock: Default::default(),
            };
            out::<ops::AppendObject>(&store.append_object(&bucket, &key, offset, r, body).await?, &mut e)
        }
        GetObjectTagging { bucket, key } => {
            out::<ops::GetObjectTagging>(&store.get_object_tagging(&bucket, &key, None).await?.tags, &mut e)
        }
        PutObjectTagging { bucket, key, tags } => {
            store.put_object_tagging(&bucket, &key, None, tags).await?;
            out::<ops::PutObjectTagging>(&(), &mut e)
        }
        DeleteObjectTagging { bucket, key } => {
            store.delete_object_tagging(&bucket, &key, None).await?;
            out::<ops::DeleteObjectTagging>(&(), &mut e)
        }
        ListObjects { bucket, req } => out::<ops::ListObjects>(&store.list_objects(&bucket, req).await?, &mut e),
        CreateMultipart { bucket, key, meta, tags, checksum_algorithm, checksum_type } => {
            let r = s3hpc_core::CreateMultipartRequest {
                meta,
                tags,
                checksum_algorithm,
                checksum_type,
                lock: Default::default(),
            };
            out::<ops::CreateMultipart>(&store.create_multipart_upload(&bucket, &key, r).await?, &mut e)
        }
        UploadPart { bucket, key, upload_id, part_number, upload } => {
            let r = UploadPartRequest {
                content_md5: upload.content_md5,
                checksum: upload_checksum(&upload, deferred),
                content_length: upload.content_length,
                default_checksum: None,
            };
            out::<ops::UploadPart>(&store.upload_part(&bucket, &key, &upload_id, part_number, r, body).await?, &mut e)
        }
        UploadPartCopy { bucket, key, upload_id, part_number, src_bucket, src_key, src_range, src_conditions } => {
            let src = PartCopySource {
                bucket: src_bucket,
                key: src_key,
                version_id: None,
                range: src_range,
                conditions: src_conditions,
            };
            out::<ops::UploadPartCopy>(
                &store.upload_part_copy(&bucket, &key, &upload_id, part_number, src).await?,
                &mut e,
            )
        }
        ListParts { bucket, key, upload_id, req } => {
            out::<ops::ListParts>(&store.list_parts(&bucket, &key, &upload_id, req).await?, &mut e)
        }
        ListUploads { bucket, req } => {
            out::<ops::ListUploads>(&store.list_multipart_uploads(&bucket, req).await?, &mut e)
        }
        CompleteMultipart { bucket, key, upload_id, req } => out::<ops::CompleteMultipart>(
            &store.complete_multipart_upload_with(&bucket, &key, &upload_id, req).await?,
            &mut e,
        ),
        AbortMultipart { bucket, key, upload_id } => {
            out::<ops::AbortMultipart>(&store.abort_multipart_upload(&bucket, &key, &upload_id).await?, &mut e)
        }
        CreateAccessKey { .. } | ListAccessKeys {} | RevokeAccessKey { .. } => {
            return Err(Error::new(ErrorCode::InternalError, "key operations do not reach the store"));
        }
    }
    Ok((e, Body::Empty))
}

/// A self-service key operation for the Unix-socket peer `uid` (the file work on a blocking
/// thread).
pub(super) async fn key_op(
    keys: Option<Arc<dyn s3hpc_core::creds::KeyAdmin>>,
    uid: Option<u32>,
    req: Request,
) -> Result<Enc, Error> {
    let Some(keys) = keys else {
        return Err(Error::not_implemented("this server does not issue access keys (s3hpc serve --user-keys)"));
    };
    let Some(uid) = uid else {
        return Err(Error::new(
            ErrorCode::AccessDenied,
            "access keys are managed only over a Unix socket, where the kernel names the caller",
        ));
    };
    tokio::task::spawn_blocking(move || {
        let mut e = ok();
        match req {
            Request::CreateAccessKey { lifetime, description } => {
                let (c, info) = keys.create(uid, lifetime.map(Duration::from_secs), &description)?;
                out::<ops::CreateAccessKey>(&(c.secret_key, info), &mut e)
            }
            Request::ListAccessKeys {} => out::<ops::ListAccessKeys>(&keys.list(uid)?, &mut e),
            Request::RevokeAccessKey { access_key } => {
                out::<ops::RevokeAccessKey>(&keys.revoke(uid, &access_key)?, &mut e)
            }
            _ => return Err(Error::new(ErrorCode::InternalError, "not a key operation")),
        }
        Ok(e)
    })
    .await
    .map_err(|e| Error::new(ErrorCode::InternalError, format!("key operation failed: {e}")))?
}

/// Send what needs no waiting: an error, a response without a body or with a small one inline,
/// or one whose file the client reads itself. Returns a response whose body must be streamed
/// within the client's credit ([`stream_body`]).
pub(super) fn respond_now(
    out: &OutTx,
    id: u32,
    result: Result<(Enc, Body), Error>,
    fd_ok: bool,
) -> Option<(Enc, Body)> {
    let (mut e, body) = match result {
        Ok(r) => r,
        Err(err) => {
            send_error(out, id, &err);
            return None;
        }
    };
    let small = body.known_len().is_some_and(|n| n <= INLINE_MAX as u64);
    match body {
        Body::Empty => {
            let _ = out.send(Out::Frames(ok_frame(id, 0, e)));
        }
        Body::Bytes(b) if small => {
            e.buf.extend_from_slice(&b);
            let _ = out.send(Out::Frames(ok_frame(id, flag::BODY_INLINE, e)));
        }
        Body::File { file, offset, len } if small => {
            let start = e.buf.len();
            e.buf.resize(start + len as usize, 0);
            match read_full_at(&file, &mut e.buf[start..], offset) {
                Ok(()) => {
                    let _ = out.send(Out::Frames(ok_frame(id, flag::BODY_INLINE, e)));
                }
                Err(err) => send_error(out, id, &Error::from(err)),
            }
        }
        Body::File { file, offset, len } if fd_ok && read_only(&file) => {
            // Node-local zero copy: the client reads the region from the page cache itself.
            e.var(offset);
            e.var(len);
            let _ = out.send(Out::Fd { frame: ok_frame(id, flag::BODY_FD, e), file });
        }
        body => return Some((e, body)),
    }
    None
}

pub(super) fn send_error(out: &OutTx, id: u32, err: &Error) {
    let mut e = Enc::new();
    e.u8(1);
    e.error(err);
    let _ = out.send(Out::Frames(frame_bytes(ty::RESPONSE, 0, id, &e.finish())));
}

/// Send a response whose body goes in DATA frames within the client's credit (file regions with
/// sendfile).
pub(super) async fn stream_body(out: &OutTx, id: u32, e: Enc, body: Body, credit: &Semaphore, limits: Limits) {
    match body {
        Body::File { file, offset, len } => {
            if out.send(Out::Frames(ok_frame(id, flag::BODY_STREAM, e))).is_err() {
                return;
            }
            let file = Arc::new(file);
            let mut pos = 0u64;
            while pos < len {
                let n = ((len - pos) as u32).min(limits.max_data_frame);
                let Ok(permit) = credit.acquire_many(n).await else { return };
                permit.forget();
                let header = Header { ty: ty::DATA, flags: 0, id, len: n }.encode();
                if out.send(Out::File { header, file: file.clone(), offset: offset + pos, len: n }).is_err() {
                    return;
                }
                pos += n as u64;
            }
            let _ = out.send(Out::Frames(frame_bytes(ty::END, 0, id, &[])));
        }
        body => {
            if out.send(Out::Frames(ok_frame(id, flag::BODY_STREAM, e))).is_err() {
                return;
            }
            let mut s = body.into_stream();
            while let Some(chunk) = s.next().await {
                let mut chunk = match chunk {
                    Ok(c) => c,
                    Err(err) => {
                        let mut e = Enc::new();
                        e.error(&Error::from(err));
                        let _ = out.send(Out::Frames(frame_bytes(ty::ABORT, 0, id, &e.finish())));
                        return;
                    }
                };
                while !chunk.is_empty() {
                    let n = (chunk.len() as u32).min(limits.max_data_frame);
                    let Ok(permit) = credit.acquire_many(n).await else { return };
                    permit.forget();
                    let piece = chunk.split_to(n as usize);
                    let header = Header { ty: ty::DATA, flags: 0, id, len: n }.encode();
                    if out.send(Out::Data { header, payload: piece }).is_err() {
                        return;
                    }
                }
            }
            let _ = out.send(Out::Frames(frame_bytes(ty::END, 0, id, &[])));
        }
    }
}

/// Only descriptors opened read-only are handed to clients (a backend might return a writable one).
pub(super) fn read_only(f: &std::fs::File) -> bool {
    use rustix::fs::OFlags;
    rustix::fs::fcntl_getfl(f).is_ok_and(|fl| fl & OFlags::ACCMODE == OFlags::RDONLY)
}

pub(super) fn read_full_at(f: &std::fs::File, mut buf: &mut [u8], mut off: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match f.read_at(buf, off) {
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "object file shorter than its recorded size"));
            }
            Ok(n) => {
                buf = &mut buf[n..];
                off += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
