//! Cases of single objects: buckets, PUT/GET/HEAD and metadata, ranges, conditions, deletes,
//! digests and checksums, streamed bodies.

use super::*;

pub(crate) async fn buckets(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    // An HTTP gateway in us-east-1 answers the owner's second create 200, as S3 there does.
    if let Err(e) = s.create_bucket(&b).await {
        expect_one_of(
            Err::<(), _>(e),
            &[ErrorCode::BucketAlreadyOwnedByYou, ErrorCode::BucketAlreadyExists],
            "create twice",
        )?;
    }
    for bad in ["ab", "UPPER-case", "under_score", "-leading", "a..b", "192.168.0.1"] {
        expect_code(s.create_bucket(bad).await, ErrorCode::InvalidBucketName, bad)?;
    }
    ok(s.head_bucket(&b).await, "head")?;
    let list = ok(s.list_buckets().await, "list buckets")?;
    ensure!(list.iter().any(|x| x.name == b), "bucket not listed");
    ensure!(list.windows(2).all(|w| w[0].name < w[1].name), "buckets not sorted");
    let created = list.iter().find(|x| x.name == b).unwrap().created;
    ensure!(created <= SystemTime::now() + Duration::from_secs(5), "creation date in the future");
    put(&s, &b, "k", "v").await?;
    expect_code(s.delete_bucket(&b).await, ErrorCode::BucketNotEmpty, "delete non-empty")?;
    ok(s.delete_object(&b, "k").await, "delete object")?;
    ok(s.delete_bucket(&b).await, "delete bucket")?;
    expect_code(s.head_bucket(&b).await, ErrorCode::NoSuchBucket, "head deleted")?;
    expect_code(s.delete_bucket(&b).await, ErrorCode::NoSuchBucket, "delete deleted")?;
    Ok(())
}

pub(crate) async fn put_get_head_metadata(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(1, 10_000);
    let mut meta = ObjectMeta {
        content_type: Some("text/plain; charset=utf-8".into()),
        content_encoding: Some("identity".into()),
        content_disposition: Some("attachment; filename=\"x.txt\"".into()),
        content_language: Some("en".into()),
        cache_control: Some("no-cache".into()),
        expires: Some("Thu, 01 Dec 2033 16:00:00 GMT".into()),
        website_redirect_location: Some("/other/page.html".into()),
        ..Default::default()
    };
    meta.user.insert("color".into(), "blue".into());
    meta.user.insert("two-words".into(), "hello world".into());
    let req = PutObjectRequest { meta: meta.clone(), content_length: Some(data.len() as u64), ..Default::default() };
    let out = ok(s.put_object(&b, "obj", req, Body::from(data.clone())).await, "put")?;
    ensure_eq!(out.size, data.len() as u64);
    if c.etag_md5 {
        ensure_eq!(out.etag, md5_hex(&data));
    } else {
        ensure!(out.etag.contains('-'), "fast ETag {} looks like an MD5", out.etag);
    }
    let (info, got) = get(&s, &b, "obj").await?;
    ensure!(got == data, "body differs");
    ensure_eq!(info.etag, out.etag);
    ensure_eq!(info.size, data.len() as u64);
    ensure_eq!(info.meta, meta);
    let head = ok(s.head_object(&b, "obj", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(head.etag, out.etag);
    ensure_eq!(head.meta, meta);
    ensure_eq!(head.size, info.size);
    let age = SystemTime::now().duration_since(head.last_modified).unwrap_or_default();
    ensure!(age < Duration::from_secs(300), "last_modified is {age:?} old");
    // Empty objects are objects.
    let e = put(&s, &b, "empty", Bytes::new()).await?;
    ensure_eq!(e.size, 0);
    if c.etag_md5 {
        ensure_eq!(e.etag, "d41d8cd98f00b204e9800998ecf8427e");
    }
    let (einfo, edata) = get(&s, &b, "empty").await?;
    ensure!(edata.is_empty() && einfo.size == 0, "empty object not empty");
    Ok(())
}

pub(crate) async fn overwrite_replaces(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut m1 = ObjectMeta::default();
    m1.user.insert("v".into(), "1".into());
    ok(
        s.put_object(&b, "k", PutObjectRequest { meta: m1, ..Default::default() }, Body::from(pattern(2, 5000))).await,
        "put 1",
    )?;
    put(&s, &b, "k", pattern(3, 100)).await?;
    let (info, data) = get(&s, &b, "k").await?;
    ensure!(data == pattern(3, 100), "old content survived overwrite");
    ensure!(info.meta.user.is_empty(), "old metadata survived overwrite: {:?}", info.meta.user);
    Ok(())
}

pub(crate) async fn ranges(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(4, 1000);
    put(&s, &b, "r", data.clone()).await?;
    let cases = [
        (ByteRange::FromTo(0, 0), 0, 1),
        (ByteRange::FromTo(10, 19), 10, 10),
        (ByteRange::FromTo(990, 5000), 990, 10),
        (ByteRange::From(900), 900, 100),
        (ByteRange::Suffix(10), 990, 10),
        (ByteRange::Suffix(5000), 0, 1000),
    ];
    for (r, off, len) in cases {
        let (range, got) = ok(get_range(&s, &b, "r", r).await, &format!("range {r:?}"))?;
        ensure_eq!(range, Some((off as u64, len as u64)));
        ensure!(got == data.slice(off..off + len), "range {r:?} content differs");
    }
    expect_code(get_range(&s, &b, "r", ByteRange::From(1000)).await, ErrorCode::InvalidRange, "start at size")?;
    expect_code(get_range(&s, &b, "r", ByteRange::FromTo(2000, 3000)).await, ErrorCode::InvalidRange, "beyond")?;
    put(&s, &b, "empty", Bytes::new()).await?;
    expect_code(get_range(&s, &b, "empty", ByteRange::FromTo(0, 0)).await, ErrorCode::InvalidRange, "empty object")?;
    let h = s.head_object(&b, "r", GetObjectRequest { range: Some(ByteRange::From(5000)), ..Default::default() }).await;
    expect_code(h, ErrorCode::InvalidRange, "head with bad range")?;
    Ok(())
}

pub(crate) async fn read_conditions(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let out = put(&s, &b, "c", "conditional").await?;
    let etag = out.etag.clone();
    let cond = |c: Conditions| GetObjectRequest { conditions: c, ..Default::default() };
    let past = SystemTime::now() - Duration::from_secs(3600);
    let future = SystemTime::now() + Duration::from_secs(3600);
    ok(
        s.get_object(&b, "c", cond(Conditions { if_match: Some(format!("\"{etag}\"")), ..Default::default() })).await,
        "if-match quoted",
    )?;
    ok(
        s.head_object(&b, "c", cond(Conditions { if_match: Some("*".into()), ..Default::default() })).await,
        "if-match *",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_match: Some("\"0000\"".into()), ..Default::default() })).await,
        ErrorCode::PreconditionFailed,
        "if-match other",
    )?;
    expect_code(
        s.head_object(&b, "c", cond(Conditions { if_none_match: Some(etag.clone()), ..Default::default() })).await,
        ErrorCode::NotModified,
        "if-none-match same",
    )?;
    ok(
        s.get_object(&b, "c", cond(Conditions { if_none_match: Some("\"zzz\"".into()), ..Default::default() })).await,
        "if-none-match other",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_modified_since: Some(future), ..Default::default() })).await,
        ErrorCode::NotModified,
        "if-modified-since future",
    )?;
    ok(
        s.get_object(&b, "c", cond(Conditions { if_modified_since: Some(past), ..Default::default() })).await,
        "if-modified-since past",
    )?;
    expect_code(
        s.get_object(&b, "c", cond(Conditions { if_unmodified_since: Some(past), ..Default::default() })).await,
        ErrorCode::PreconditionFailed,
        "if-unmodified-since past",
    )?;
    // If-Match wins over If-Unmodified-Since (RFC 7232 and S3).
    ok(
        s.get_object(
            &b,
            "c",
            cond(Conditions { if_match: Some(etag.clone()), if_unmodified_since: Some(past), ..Default::default() }),
        )
        .await,
        "if-match + if-unmodified-since",
    )?;
    Ok(())
}

pub(crate) async fn write_conditions(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let create_only = || PutObjectRequest {
        conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
        ..Default::default()
    };
    ok(s.put_object(&b, "w", create_only(), Body::from("first")).await, "create-only on absent key")?;
    expect_code(
        s.put_object(&b, "w", create_only(), Body::from("second")).await,
        ErrorCode::PreconditionFailed,
        "create-only on existing key",
    )?;
    let (_, data) = get(&s, &b, "w").await?;
    ensure!(data == "first", "failed conditional put changed the object");
    let etag = ok(s.head_object(&b, "w", GetObjectRequest::default()).await, "head")?.etag;
    let if_match = |e: &str| PutObjectRequest {
        conditions: Conditions { if_match: Some(e.to_string()), ..Default::default() },
        ..Default::default()
    };
    ok(s.put_object(&b, "w", if_match(&etag), Body::from("third")).await, "if-match current")?;
    expect_code(
        s.put_object(&b, "w", if_match(&etag), Body::from("fourth")).await,
        ErrorCode::PreconditionFailed,
        "if-match stale",
    )?;
    expect_one_of(
        s.put_object(&b, "absent", if_match(&etag), Body::from("x")).await,
        &[ErrorCode::NoSuchKey, ErrorCode::PreconditionFailed],
        "if-match absent",
    )?;
    let (_, data) = get(&s, &b, "w").await?;
    ensure!(data == "third", "content after conditional puts");
    Ok(())
}

pub(crate) async fn delete_is_idempotent(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "d", "x").await?;
    ok(s.delete_object(&b, "d").await, "delete")?;
    expect_code(s.get_object(&b, "d", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "get deleted")?;
    ok(s.delete_object(&b, "d").await, "delete again")?;
    ok(s.delete_object(&b, "never/existed").await, "delete never existed")?;
    Ok(())
}

pub(crate) async fn missing_bucket_and_key(s: DynStore, _c: Caps, b: String) -> R {
    let nb = format!("{b}-missing");
    expect_code(
        s.get_object(&nb, "k", GetObjectRequest::default()).await,
        ErrorCode::NoSuchBucket,
        "get in missing bucket",
    )?;
    expect_code(
        s.put_object(&nb, "k", PutObjectRequest::default(), Body::from("x")).await,
        ErrorCode::NoSuchBucket,
        "put in missing bucket",
    )?;
    expect_code(
        s.list_objects(&nb, ListObjectsRequest { max_keys: 10, ..Default::default() }).await,
        ErrorCode::NoSuchBucket,
        "list missing bucket",
    )?;
    ok(s.create_bucket(&b).await, "create")?;
    expect_code(s.get_object(&b, "nope", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "get missing key")?;
    expect_code(
        s.head_object(&b, "nope", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "head missing key",
    )?;
    expect_code(s.get_object_tagging(&b, "nope", None).await, ErrorCode::NoSuchKey, "tagging missing key")?;
    Ok(())
}

pub(crate) async fn digests_and_lengths(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(5, 4096);
    let md5: [u8; 16] = {
        let h = md5_hex(&data);
        let v: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap()).collect();
        v.try_into().unwrap()
    };
    let good = PutObjectRequest { content_md5: Some(md5), ..Default::default() };
    ok(s.put_object(&b, "md5", good, Body::from(data.clone())).await, "good Content-MD5")?;
    let mut bad_md5 = md5;
    bad_md5[0] ^= 1;
    let bad = PutObjectRequest { content_md5: Some(bad_md5), ..Default::default() };
    expect_code(
        s.put_object(&b, "md5-bad", bad, Body::from(data.clone())).await,
        ErrorCode::BadDigest,
        "bad Content-MD5",
    )?;
    expect_code(
        s.head_object(&b, "md5-bad", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after BadDigest",
    )?;
    let short = PutObjectRequest { content_length: Some(5000), ..Default::default() };
    expect_code(
        s.put_object(&b, "short", short, Body::from(data.clone())).await,
        ErrorCode::IncompleteBody,
        "short body",
    )?;
    expect_code(
        s.head_object(&b, "short", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "object after short body",
    )?;
    // A bad digest on overwrite keeps the old object.
    let bad = PutObjectRequest { content_md5: Some(bad_md5), ..Default::default() };
    expect_code(
        s.put_object(&b, "md5", bad, Body::from(pattern(6, 10))).await,
        ErrorCode::BadDigest,
        "bad Content-MD5 overwrite",
    )?;
    let (_, got) = get(&s, &b, "md5").await?;
    ensure!(got == data, "failed overwrite damaged the object");
    Ok(())
}

pub(crate) async fn failed_body_publishes_nothing(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "keep", "old").await?;
    for key in ["keep", "new"] {
        let body = stream_body(vec![
            Ok(pattern(7, 100_000)),
            Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "client went away")),
        ]);
        let r = s.put_object(&b, key, PutObjectRequest::default(), body).await;
        ensure!(r.is_err(), "put with failing body succeeded");
    }
    let (_, got) = get(&s, &b, "keep").await?;
    ensure!(got == "old", "failed overwrite changed the object");
    expect_code(
        s.head_object(&b, "new", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "partial object visible",
    )?;
    let (keys, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(keys, vec!["keep".to_string()]);
    Ok(())
}

/// S3's default checksum: the parts of an upload created without an algorithm get the
/// `default_checksum` (CRC64NVME), and the complete the FULL_OBJECT CRC64NVME of the object,
/// combined from them; a copy of an object whose checksum does not carry over gets it too.
pub(crate) async fn default_checksum(s: DynStore, c: Caps, b: String) -> R {
    if !c.default_checksum {
        return Ok(());
    }
    use ChecksumAlgorithm as A;
    ok(s.create_bucket(&b).await, "create")?;
    let (p1, p2) = (pattern(31, 5 * MIB + 3), pattern(32, 1000));
    let whole = [&p1[..], &p2[..]].concat();
    let id = ok(s.create_multipart_upload(&b, "mp", CreateMultipartRequest::default()).await, "create upload")?;
    let mut parts = Vec::new();
    for (n, data) in [(1u32, &p1), (2, &p2)] {
        let req = UploadPartRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
        let p = ok(s.upload_part(&b, "mp", &id, n, req, Body::from(data.clone())).await, "part")?;
        ensure_eq!(p.checksum, Some(checksum_of(A::Crc64Nvme, data)));
        parts.push(CompletePart { part_number: n, etag: p.etag, checksum: None });
    }
    // The client's checksum wins over the default.
    let req = UploadPartRequest {
        checksum: Some(ChecksumRequest { algorithm: A::Crc32, expected: None }),
        default_checksum: Some(A::Crc64Nvme),
        ..Default::default()
    };
    let id2 = ok(s.create_multipart_upload(&b, "mp2", CreateMultipartRequest::default()).await, "create upload 2")?;
    let p = ok(s.upload_part(&b, "mp2", &id2, 1, req, Body::from(p2.clone())).await, "part with crc32")?;
    ensure_eq!(p.checksum, Some(checksum_of(A::Crc32, &p2)));
    ok(s.abort_multipart_upload(&b, "mp2", &id2).await, "abort")?;
    let out = ok(s.complete_multipart_upload(&b, "mp", &id, parts, Conditions::default()).await, "complete")?;
    let want = checksum_of(A::Crc64Nvme, &whole);
    ensure_eq!(out.checksum.as_ref(), Some(&want));
    ensure_eq!(want.checksum_type(), ChecksumType::FullObject);
    let head = ok(s.head_object(&b, "mp", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(head.checksum.as_ref(), Some(&want));
    // A copy of the multipart object (its checksum does not carry over) gets the default.
    let req = CopyObjectRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
    let out = ok(s.copy_object(&b, "mp", &b, "copy", req).await, "copy")?;
    ensure_eq!(out.checksum.as_ref(), Some(&want));
    // A copy of an object with a checksum keeps it; one asking for an algorithm gets that one.
    let req = PutObjectRequest {
        checksum: Some(ChecksumRequest { algorithm: A::Sha512, expected: None }),
        ..Default::default()
    };
    ok(s.put_object(&b, "sha", req, Body::from(p2.clone())).await, "put sha512")?;
    let req = CopyObjectRequest { default_checksum: Some(A::Crc64Nvme), ..Default::default() };
    let out = ok(s.copy_object(&b, "sha", &b, "sha-copy", req).await, "copy sha512")?;
    ensure_eq!(out.checksum, Some(checksum_of(A::Sha512, &p2)));
    let req = CopyObjectRequest {
        checksum_algorithm: Some(A::Xxhash3),
        default_checksum: Some(A::Crc64Nvme),
        ..Default::default()
    };
    let out = ok(s.copy_object(&b, "sha", &b, "xx-copy", req).await, "copy xxhash3")?;
    ensure_eq!(out.checksum, Some(checksum_of(A::Xxhash3, &p2)));
    Ok(())
}

pub(crate) async fn checksums_stored(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(8, 70_000);
    for alg in ChecksumAlgorithm::ALL {
        let want = checksum_of(alg, &data);
        let key = format!("ck-{}", alg.as_str());
        let req = PutObjectRequest {
            checksum: Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(want.value.clone())) }),
            ..Default::default()
        };
        let out = ok(s.put_object(&b, &key, req, Body::from(data.clone())).await, &key)?;
        ensure_eq!(out.checksum.as_ref(), Some(&want));
        let head = ok(s.head_object(&b, &key, GetObjectRequest::default()).await, "head")?;
        ensure_eq!(head.checksum.as_ref(), Some(&want));
        let wrong = checksum_of(alg, b"something else");
        let req = PutObjectRequest {
            checksum: Some(ChecksumRequest { algorithm: alg, expected: Some(Expected::Known(wrong.value)) }),
            ..Default::default()
        };
        expect_code(
            s.put_object(&b, &format!("{key}-bad"), req, Body::from(data.clone())).await,
            ErrorCode::BadDigest,
            "wrong checksum",
        )?;
        expect_code(
            s.head_object(&b, &format!("{key}-bad"), GetObjectRequest::default()).await,
            ErrorCode::NoSuchKey,
            "object after wrong checksum",
        )?;
    }
    // Computed without an expected value (the trailer case resolves before the body ends).
    let cell = Arc::new(std::sync::OnceLock::new());
    let want = checksum_of(ChecksumAlgorithm::Crc32c, &data);
    cell.set(want.value.clone()).unwrap();
    let req = PutObjectRequest {
        checksum: Some(ChecksumRequest {
            algorithm: ChecksumAlgorithm::Crc32c,
            expected: Some(Expected::Deferred(cell)),
        }),
        ..Default::default()
    };
    let out = ok(s.put_object(&b, "deferred", req, Body::from(data.clone())).await, "deferred checksum")?;
    ensure_eq!(out.checksum, Some(want));
    Ok(())
}

pub(crate) async fn streamed_large_object(s: DynStore, c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(9, 3 * 1024 * 1024 + 17);
    let chunks: Vec<std::io::Result<Bytes>> = data.chunks(65_531).map(|ch| Ok(Bytes::copy_from_slice(ch))).collect();
    let req = PutObjectRequest { content_length: Some(data.len() as u64), ..Default::default() };
    let out = ok(s.put_object(&b, "big", req, stream_body(chunks)).await, "streamed put")?;
    if c.etag_md5 {
        ensure_eq!(out.etag, md5_hex(&data));
    }
    let (_, got) = get(&s, &b, "big").await?;
    ensure!(got == data, "streamed object differs");
    Ok(())
}
