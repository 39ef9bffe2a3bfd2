//! Multipart upload cases: the happy path, retried completes, errors, listing, checksum types,
//! UploadPartCopy.

use super::*;

pub(crate) async fn multipart_happy_path(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta { content_type: Some("application/x-test".into()), ..Default::default() };
    meta.user.insert("mp".into(), "yes".into());
    let tags = vec![("mp".to_string(), "1".to_string())];
    let req = CreateMultipartRequest {
        meta: meta.clone(),
        tags: tags.clone(),
        checksum_algorithm: None,
        checksum_type: None,
        lock: ObjectLock::default(),
    };
    let id = ok(s.create_multipart_upload(&b, "mp", req).await, "create upload")?;
    let id2 = ok(s.create_multipart_upload(&b, "mp", CreateMultipartRequest::default()).await, "second upload")?;
    ensure!(id != id2 && id.len() >= 16, "upload ids not unique or too short: {id} {id2}");
    let p1 = pattern(11, 5 * MIB);
    let p2 = pattern(12, 5 * MIB + 3);
    let p3 = pattern(13, 1234);
    let i1 = ok(
        s.upload_part(&b, "mp", &id, 1, UploadPartRequest::default(), Body::from(pattern(99, 10))).await,
        "part 1 (to be replaced)",
    )?;
    let i1b =
        ok(s.upload_part(&b, "mp", &id, 1, UploadPartRequest::default(), Body::from(p1.clone())).await, "part 1")?;
    ensure!(i1.etag != i1b.etag, "replaced part has the same ETag");
    let i2 = ok(s.upload_part(&b, "mp", &id, 2, UploadPartRequest::default(), Body::from(p2.clone())).await, "part 2")?;
    let i3 = ok(s.upload_part(&b, "mp", &id, 4, UploadPartRequest::default(), Body::from(p3.clone())).await, "part 4")?;
    if c.etag_md5 {
        ensure_eq!(i1b.etag, md5_hex(&p1));
    }
    // Not visible before completion.
    expect_code(
        s.head_object(&b, "mp", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object before complete",
    )?;
    let lp = ok(s.list_parts(&b, "mp", &id, ListPartsRequest::default()).await, "list parts")?;
    let nums: Vec<u32> = lp.parts.iter().map(|p| p.part_number).collect();
    ensure_eq!(nums, vec![1, 2, 4]);
    ensure_eq!(lp.parts[0].size, p1.len() as u64);
    ensure_eq!(lp.parts[0].etag, i1b.etag);
    let lp = ok(
        s.list_parts(&b, "mp", &id, ListPartsRequest { part_number_marker: Some(1), max_parts: 1 }).await,
        "list parts page",
    )?;
    ensure_eq!(lp.parts.iter().map(|p| p.part_number).collect::<Vec<_>>(), vec![2]);
    ensure!(lp.is_truncated && lp.next_part_number_marker == Some(2), "parts page markers {lp:?}");

    let parts = vec![
        CompletePart { part_number: 1, etag: format!("\"{}\"", i1b.etag), checksum: None },
        CompletePart { part_number: 2, etag: i2.etag.clone(), checksum: None },
        CompletePart { part_number: 4, etag: i3.etag.clone(), checksum: None },
    ];
    let out = ok(s.complete_multipart_upload(&b, "mp", &id, parts, Conditions::default()).await, "complete")?;
    ensure!(out.etag.ends_with("-3"), "multipart etag {}", out.etag);
    if c.etag_md5 {
        let want = s3hpc_core::checksum::multipart_etag([i1b.etag.as_str(), i2.etag.as_str(), i3.etag.as_str()]);
        ensure_eq!(out.etag, want);
    }
    let (info, data) = get(&s, &b, "mp").await?;
    ensure_eq!(data.len(), p1.len() + p2.len() + p3.len());
    ensure!(
        data[..p1.len()] == p1[..]
            && data[p1.len()..p1.len() + p2.len()] == p2[..]
            && data[p1.len() + p2.len()..] == p3[..],
        "assembled content differs"
    );
    ensure_eq!(info.meta, meta);
    ensure_eq!(info.etag, out.etag);
    // S3 reports the part count when a part is asked for (x-amz-mp-parts-count).
    let head1 = ok(
        s.head_object(&b, "mp", GetObjectRequest { part_number: Some(1), ..Default::default() }).await,
        "head part 1",
    )?;
    ensure_eq!(head1.parts_count(), Some(3));
    ensure_eq!(ok(s.get_object_tagging(&b, "mp", None).await, "tags")?.tags, tags);
    let part2 = ok(
        s.get_object(&b, "mp", GetObjectRequest { part_number: Some(2), ..Default::default() }).await,
        "get part 2",
    )?;
    ensure_eq!(part2.range, Some((p1.len() as u64, p2.len() as u64)));
    let body = part2.body.collect().await.map_err(|e| e.to_string())?;
    ensure!(body == p2, "part 2 content differs");
    // The upload is gone, the other one is still there.
    expect_code(
        s.list_parts(&b, "mp", &id, ListPartsRequest::default()).await,
        ErrorCode::NoSuchUpload,
        "parts after complete",
    )?;
    ok(s.abort_multipart_upload(&b, "mp", &id2).await, "abort second")?;
    expect_code(s.abort_multipart_upload(&b, "mp", &id2).await, ErrorCode::NoSuchUpload, "abort twice")?;
    Ok(())
}

/// A retried CompleteMultipartUpload of a completed upload answers the first answer (SDKs retry a
/// complete whose answer they lost); one with another part list is NoSuchUpload; concurrent
/// completes of one upload all get the same answer and the object is made once.
pub(crate) async fn multipart_complete_retries(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let req = CreateMultipartRequest { checksum_algorithm: Some(ChecksumAlgorithm::Crc32), ..Default::default() };
    let id = ok(s.create_multipart_upload(&b, "r", req.clone()).await, "create upload")?;
    let (d1, d2) = (pattern(31, 5 * MIB), pattern(32, 1000));
    let p1 = ok(s.upload_part(&b, "r", &id, 1, UploadPartRequest::default(), Body::from(d1.clone())).await, "part 1")?;
    let p2 = ok(s.upload_part(&b, "r", &id, 2, UploadPartRequest::default(), Body::from(d2.clone())).await, "part 2")?;
    let cp = |n: u32, e: &str| CompletePart { part_number: n, etag: format!("\"{e}\""), checksum: None };
    let parts = vec![cp(1, &p1.etag), cp(2, &p2.etag)];
    let first = ok(s.complete_multipart_upload(&b, "r", &id, parts.clone(), Conditions::default()).await, "complete")?;
    ensure!(first.checksum.is_some(), "no checksum from a CRC32 upload");
    for i in 0..2 {
        let again = ok(
            s.complete_multipart_upload(&b, "r", &id, parts.clone(), Conditions::default()).await,
            &format!("retried complete {i}"),
        )?;
        ensure_eq!((again.etag, again.checksum, again.size), (first.etag.clone(), first.checksum.clone(), first.size));
    }
    // A create-only complete retried: the object it made is not a reason to fail it.
    let again = ok(
        s.complete_multipart_upload(
            &b,
            "r",
            &id,
            parts.clone(),
            Conditions { if_none_match: Some("*".into()), ..Default::default() },
        )
        .await,
        "retried create-only complete",
    )?;
    ensure_eq!(again.etag, first.etag);
    expect_code(
        s.complete_multipart_upload(&b, "r", &id, vec![cp(1, &p1.etag)], Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "retry with another part list",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "other", &id, parts.clone(), Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "retry naming another key",
    )?;
    expect_code(s.abort_multipart_upload(&b, "r", &id).await, ErrorCode::NoSuchUpload, "abort after complete")?;
    expect_code(
        s.list_parts(&b, "r", &id, ListPartsRequest::default()).await,
        ErrorCode::NoSuchUpload,
        "parts after complete",
    )?;
    let (info, data) = get(&s, &b, "r").await?;
    ensure_eq!(info.etag, first.etag);
    ensure!(data.len() == d1.len() + d2.len() && data[..d1.len()] == d1[..] && data[d1.len()..] == d2[..], "content");
    expect_code(
        s.complete_multipart_upload(&b, "other", "0123456789abcdef0123456789abcdef", parts, Conditions::default())
            .await,
        ErrorCode::NoSuchUpload,
        "complete of an upload that never existed",
    )?;

    // Five completes of one upload at once: every one gets the same 200.
    let id = ok(s.create_multipart_upload(&b, "c", req).await, "create upload c")?;
    let p1 =
        ok(s.upload_part(&b, "c", &id, 1, UploadPartRequest::default(), Body::from(d1.clone())).await, "c part 1")?;
    let p2 =
        ok(s.upload_part(&b, "c", &id, 2, UploadPartRequest::default(), Body::from(d2.clone())).await, "c part 2")?;
    let parts = vec![cp(1, &p1.etag), cp(2, &p2.etag)];
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let (s, b, id, parts) = (s.clone(), b.clone(), id.clone(), parts.clone());
            tokio::spawn(async move { s.complete_multipart_upload(&b, "c", &id, parts, Conditions::default()).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        let out = ok(t.await.map_err(|e| Error::internal(e.to_string())).and_then(|r| r), "concurrent complete")?;
        answers.push((out.etag, out.checksum, out.size));
    }
    ensure!(answers.windows(2).all(|w| w[0] == w[1]), "concurrent completes answered differently: {answers:?}");
    let (info, data) = get(&s, &b, "c").await?;
    ensure_eq!(info.etag, answers[0].0);
    ensure_eq!(data.len(), d1.len() + d2.len());
    Ok(())
}

pub(crate) async fn multipart_errors(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let id = ok(s.create_multipart_upload(&b, "e", CreateMultipartRequest::default()).await, "create upload")?;
    let small = ok(
        s.upload_part(&b, "e", &id, 1, UploadPartRequest::default(), Body::from(pattern(14, 100))).await,
        "small part",
    )?;
    let big = ok(
        s.upload_part(&b, "e", &id, 2, UploadPartRequest::default(), Body::from(pattern(15, 5 * MIB))).await,
        "big part",
    )?;
    let cp = |n: u32, e: &str| CompletePart { part_number: n, etag: e.to_string(), checksum: None };
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(2, &big.etag), cp(1, &small.etag)], Conditions::default())
            .await,
        ErrorCode::InvalidPartOrder,
        "descending",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag), cp(1, &small.etag)], Conditions::default())
            .await,
        ErrorCode::InvalidPartOrder,
        "duplicate",
    )?;
    expect_code(
        s.complete_multipart_upload(
            &b,
            "e",
            &id,
            vec![cp(1, "0123456789abcdef0123456789abcdef")],
            Conditions::default(),
        )
        .await,
        ErrorCode::InvalidPart,
        "wrong etag",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(3, &big.etag)], Conditions::default()).await,
        ErrorCode::InvalidPart,
        "missing part",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag), cp(2, &big.etag)], Conditions::default())
            .await,
        ErrorCode::EntityTooSmall,
        "small first part",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e", &id, vec![], Conditions::default()).await,
        ErrorCode::MalformedXML,
        "no parts",
    )?;
    expect_code(
        s.head_object(&b, "e", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after failed completes",
    )?;
    expect_code(
        s.upload_part(&b, "e", &id, 0, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::InvalidArgument,
        "part 0",
    )?;
    expect_code(
        s.upload_part(&b, "e", &id, 10_001, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::InvalidArgument,
        "part 10001",
    )?;
    expect_code(
        s.upload_part(&b, "e", "no-such-upload", 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "unknown upload",
    )?;
    expect_code(
        s.upload_part(&b, "other-key", &id, 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "upload id of another key",
    )?;
    // A single part below 5 MiB is fine (it is the last part).
    let out = ok(
        s.complete_multipart_upload(&b, "e", &id, vec![cp(1, &small.etag)], Conditions::default()).await,
        "complete with one small part",
    )?;
    ensure!(out.etag.ends_with("-1"), "etag {}", out.etag);
    let (_, data) = get(&s, &b, "e").await?;
    ensure!(data == pattern(14, 100), "content of one-part upload");
    // Aborted uploads take no more parts.
    let id = ok(s.create_multipart_upload(&b, "e2", CreateMultipartRequest::default()).await, "create upload 2")?;
    ok(s.abort_multipart_upload(&b, "e2", &id).await, "abort")?;
    expect_code(
        s.upload_part(&b, "e2", &id, 1, UploadPartRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchUpload,
        "part after abort",
    )?;
    expect_code(
        s.complete_multipart_upload(&b, "e2", &id, vec![cp(1, &small.etag)], Conditions::default()).await,
        ErrorCode::NoSuchUpload,
        "complete after abort",
    )?;
    Ok(())
}

pub(crate) async fn multipart_listing(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut ids = Vec::new();
    for k in ["x/1", "x/2", "y", "y"] {
        ids.push((k, ok(s.create_multipart_upload(&b, k, CreateMultipartRequest::default()).await, "create")?));
    }
    let page = ok(s.list_multipart_uploads(&b, ListUploadsRequest::default()).await, "list uploads")?;
    let keys: Vec<&str> = page.uploads.iter().map(|u| u.key.as_str()).collect();
    ensure_eq!(keys, vec!["x/1", "x/2", "y", "y"]);
    ensure!(
        page.uploads.iter().all(|u| u.checksum_algorithm.is_none() && u.checksum_type.is_none()),
        "uploads without a checksum algorithm list one"
    );
    let page = ok(
        s.list_multipart_uploads(&b, ListUploadsRequest { delimiter: Some("/".into()), ..Default::default() }).await,
        "delimited",
    )?;
    ensure_eq!(page.common_prefixes, vec!["x/"]);
    ensure_eq!(page.uploads.len(), 2);
    let page = ok(
        s.list_multipart_uploads(&b, ListUploadsRequest { prefix: "x/".into(), ..Default::default() }).await,
        "prefixed",
    )?;
    ensure_eq!(page.uploads.len(), 2);
    let first =
        ok(s.list_multipart_uploads(&b, ListUploadsRequest { max_uploads: 2, ..Default::default() }).await, "page 1")?;
    ensure!(first.is_truncated && first.uploads.len() == 2, "page 1 {first:?}");
    let second = ok(
        s.list_multipart_uploads(
            &b,
            ListUploadsRequest {
                key_marker: first.next_key_marker.clone(),
                upload_id_marker: first.next_upload_id_marker.clone(),
                max_uploads: 2,
                ..Default::default()
            },
        )
        .await,
        "page 2",
    )?;
    ensure_eq!(second.uploads.iter().map(|u| u.key.as_str()).collect::<Vec<_>>(), vec!["y", "y"]);
    ensure!(!second.is_truncated, "page 2 truncated");
    // Uploads in progress are not objects.
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(ks.is_empty(), "uploads listed as objects: {ks:?}");
    for (k, id) in ids {
        ok(s.abort_multipart_upload(&b, k, &id).await, "abort")?;
    }
    Ok(())
}

/// Multipart checksum types: FULL_OBJECT uploads (CRC32, CRC32C; CRC64NVME always) end with the
/// CRC of the whole object, COMPOSITE ones with the checksum of the part checksums plus `-N`;
/// ListParts and HEAD report the type; the whole-object checksum a complete expects is verified
/// (`BadDigest`: nothing published, the upload stays); unsupported combinations are refused.
pub(crate) async fn multipart_checksum_types(s: DynStore, c: Caps, b: String) -> R {
    use ChecksumAlgorithm as A;
    use ChecksumType as T;
    ok(s.create_bucket(&b).await, "create")?;
    let (p1, p2) = (pattern(21, 5 * MIB + 1), pattern(22, 777));
    let whole = [&p1[..], &p2[..]].concat();
    let cases = [
        (A::Crc32, Some(T::FullObject), T::FullObject),
        (A::Crc32c, Some(T::FullObject), T::FullObject),
        (A::Crc64Nvme, None, T::FullObject),
        (A::Crc64Nvme, Some(T::FullObject), T::FullObject),
        (A::Crc32c, None, T::Composite),
        (A::Sha256, Some(T::Composite), T::Composite),
        (A::Sha512, None, T::Composite),
        (A::Xxhash128, Some(T::Composite), T::Composite),
    ];
    for (i, (alg, ty, want_type)) in cases.into_iter().enumerate() {
        let key = format!("ck{i}-{}", alg.as_str());
        let what = format!("{} {:?}", alg.as_str(), ty);
        let req = CreateMultipartRequest { checksum_algorithm: Some(alg), checksum_type: ty, ..Default::default() };
        let id = ok(s.create_multipart_upload(&b, &key, req).await, &format!("create {what}"))?;
        // Part 1 carries the client's value, part 2 only gets the upload's algorithm.
        let with_value =
            ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(checksum_of(alg, &p1).value)) };
        let r1 = UploadPartRequest { checksum: Some(with_value), ..Default::default() };
        let i1 = ok(s.upload_part(&b, &key, &id, 1, r1, Body::from(p1.clone())).await, &format!("part 1 {what}"))?;
        let i2 = ok(
            s.upload_part(&b, &key, &id, 2, UploadPartRequest::default(), Body::from(p2.clone())).await,
            &format!("part 2 {what}"),
        )?;
        ensure_eq!(i1.checksum, Some(checksum_of(alg, &p1)));
        ensure_eq!(i2.checksum, Some(checksum_of(alg, &p2)));
        // A part with another algorithm than the upload's: InvalidRequest, the part untouched.
        let other_part = if alg == A::Crc32 { A::Crc32c } else { A::Crc32 };
        let r3 = UploadPartRequest {
            checksum: Some(ChecksumRequest { algorithm: other_part, expected: None }),
            ..Default::default()
        };
        expect_code(
            s.upload_part(&b, &key, &id, 2, r3, Body::from(p2.clone())).await,
            ErrorCode::InvalidRequest,
            &format!("{what}: part with {}", other_part.as_str()),
        )?;
        let lp = ok(s.list_parts(&b, &key, &id, ListPartsRequest::default()).await, "list parts")?;
        ensure_eq!((lp.checksum_algorithm, lp.checksum_type), (Some(alg), Some(want_type)));
        // ListMultipartUploads names the upload's algorithm and type too.
        let ups = ok(
            s.list_multipart_uploads(&b, ListUploadsRequest { prefix: key.clone(), ..Default::default() }).await,
            "list uploads",
        )?;
        let listed: Vec<_> =
            ups.uploads.iter().map(|u| (u.upload_id.as_str(), u.checksum_algorithm, u.checksum_type)).collect();
        ensure_eq!(listed, vec![(id.as_str(), Some(alg), Some(want_type))]);
        let parts = vec![
            CompletePart { part_number: 1, etag: i1.etag.clone(), checksum: i1.checksum.clone() },
            CompletePart { part_number: 2, etag: i2.etag.clone(), checksum: None },
        ];
        let want = match want_type {
            T::FullObject => checksum_of(alg, &whole),
            T::Composite => checksum::composite_checksum(alg, [&checksum_of(alg, &p1), &checksum_of(alg, &p2)])
                .map_err(|e| e.to_string())?,
        };
        // A wrong expected value: BadDigest, nothing published, the upload still there.
        let wrong = CompleteMultipartRequest {
            parts: parts.clone(),
            checksum: Some(checksum_of(alg, b"not the object")),
            ..Default::default()
        };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, wrong).await, ErrorCode::BadDigest, &what)?;
        expect_code(s.head_object(&b, &key, GetObjectRequest::default()).await, ErrorCode::NoSuchKey, &what)?;
        // Another checksum mode than the upload's, or another algorithm: InvalidRequest.
        let other = if want_type == T::FullObject { T::Composite } else { T::FullObject };
        let mode = CompleteMultipartRequest { parts: parts.clone(), checksum_type: Some(other), ..Default::default() };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, mode).await, ErrorCode::InvalidRequest, &what)?;
        let other_alg = if alg == A::Sha1 { A::Crc32 } else { A::Sha1 };
        let alg_req = CompleteMultipartRequest {
            parts: parts.clone(),
            checksum: Some(checksum_of(other_alg, &whole)),
            ..Default::default()
        };
        expect_code(s.complete_multipart_upload_with(&b, &key, &id, alg_req).await, ErrorCode::InvalidRequest, &what)?;
        ensure_eq!(ok(s.list_parts(&b, &key, &id, ListPartsRequest::default()).await, "parts after")?.parts.len(), 2);
        let good = CompleteMultipartRequest {
            parts,
            checksum: Some(want.clone()),
            checksum_type: Some(want_type),
            ..Default::default()
        };
        let out = ok(s.complete_multipart_upload_with(&b, &key, &id, good).await, &format!("complete {what}"))?;
        ensure_eq!(out.checksum, Some(want.clone()));
        ensure_eq!(want.checksum_type(), want_type);
        let (info, data) = get(&s, &b, &key).await?;
        ensure!(data[..] == whole[..], "{what}: assembled content differs");
        ensure_eq!(info.checksum, Some(want));
        // A COMPOSITE object keeps its parts' checksums (GetObjectAttributes lists them).
        let want_parts = match want_type {
            T::Composite if c.part_checksums => vec![checksum_of(alg, &p1).value, checksum_of(alg, &p2).value],
            _ => vec![],
        };
        ensure_eq!(info.part_checksums, want_parts);
        if c.part_checksums && want_type == T::Composite {
            ensure_eq!(info.part_checksum(2), Some(checksum_of(alg, &p2)));
        }
    }
    // Combinations S3 refuses; nothing is created.
    for (alg, ty) in [
        (Some(A::Sha256), T::FullObject),
        (Some(A::Sha1), T::FullObject),
        (Some(A::Sha512), T::FullObject),
        (Some(A::Md5), T::FullObject),
        (Some(A::Xxhash64), T::FullObject),
        (Some(A::Xxhash3), T::FullObject),
        (Some(A::Xxhash128), T::FullObject),
        (Some(A::Crc64Nvme), T::Composite),
        (None, T::FullObject),
    ] {
        let req = CreateMultipartRequest { checksum_algorithm: alg, checksum_type: Some(ty), ..Default::default() };
        expect_code(
            s.create_multipart_upload(&b, "refused", req).await,
            ErrorCode::InvalidRequest,
            &format!("{alg:?} {ty:?}"),
        )?;
    }
    let ups = ok(s.list_multipart_uploads(&b, ListUploadsRequest::default()).await, "list uploads")?;
    ensure!(ups.uploads.is_empty(), "uploads left: {:?}", ups.uploads);
    Ok(())
}

/// The parts of a CompleteMultipartUpload, as uploaded (ETags only, no checksums).
pub(crate) fn as_completed(parts: &[PartInfo]) -> Vec<CompletePart> {
    parts.iter().map(|p| CompletePart { part_number: p.part_number, etag: p.etag.clone(), checksum: None }).collect()
}

pub(crate) fn part_src(bucket: &str, key: &str, range: Option<ByteRange>) -> PartCopySource {
    PartCopySource { bucket: bucket.into(), key: key.into(), range, ..Default::default() }
}

pub(crate) async fn upload_part_copy(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let src = pattern(16, 6 * MIB);
    put(&s, &b, "src", src.clone()).await?;
    let id = ok(s.create_multipart_upload(&b, "dst", CreateMultipartRequest::default()).await, "create upload")?;
    let p1 = ok(
        s.upload_part_copy(&b, "dst", &id, 1, part_src(&b, "src", Some(ByteRange::FromTo(0, 5 * MIB as u64 - 1))))
            .await,
        "part copy 1",
    )?;
    ensure_eq!(p1.size, 5 * MIB as u64);
    let p2 = ok(s.upload_part_copy(&b, "dst", &id, 2, part_src(&b, "src", None)).await, "part copy whole")?;
    ensure_eq!(p2.size, src.len() as u64);
    expect_code(
        s.upload_part_copy(
            &b,
            "dst",
            &id,
            3,
            part_src(&b, "src", Some(ByteRange::FromTo(7 * MIB as u64, 8 * MIB as u64))),
        )
        .await,
        ErrorCode::InvalidArgument,
        "range beyond source",
    )?;
    expect_code(
        s.upload_part_copy(
            &b,
            "dst",
            &id,
            3,
            PartCopySource {
                conditions: Conditions { if_match: Some("\"x\"".into()), ..Default::default() },
                ..part_src(&b, "src", None)
            },
        )
        .await,
        ErrorCode::PreconditionFailed,
        "source condition",
    )?;
    expect_code(
        s.upload_part_copy(&b, "dst", &id, 3, part_src(&b, "nope", None)).await,
        ErrorCode::NoSuchKey,
        "missing source",
    )?;
    ok(s.complete_multipart_upload(&b, "dst", &id, as_completed(&[p1, p2]), Conditions::default()).await, "complete")?;
    let (_, data) = get(&s, &b, "dst").await?;
    ensure!(
        data.len() == 11 * MIB && data[..5 * MIB] == src[..5 * MIB] && data[5 * MIB..] == src[..],
        "copied parts differ"
    );
    Ok(())
}
