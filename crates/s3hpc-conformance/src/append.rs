//! Append cases (stores without it answer NotImplemented: the cases pass over them).

use super::*;

/// `true` when the store answers NotImplemented to an append (checked as [`lacks_rename`]).
pub async fn lacks_append(s: &DynStore) -> bool {
    let r = s.append_object("conf-no-such-bucket-probe", "a", 0, PutObjectRequest::default(), Body::from("x")).await;
    matches!(r, Err(e) if e.code == ErrorCode::NotImplemented)
}

pub(crate) async fn append_object(s: DynStore, c: Caps, b: String) -> R {
    if lacks_append(&s).await {
        return Ok(());
    }
    let app = |key: &'static str, off: u64, data: &'static str| {
        let s = s.clone();
        let b = b.clone();
        async move { s.append_object(&b, key, off, PutObjectRequest::default(), Body::from(data)).await }
    };
    expect_code(app("a", 0, "x").await, ErrorCode::NoSuchBucket, "append in a missing bucket")?;
    ok(s.create_bucket(&b).await, "create")?;
    let first = ok(app("a", 0, "hello").await, "append at 0 creates")?;
    ensure_eq!(first.size, 5);
    let out = ok(app("a", 5, " world").await, "append at the size")?;
    ensure_eq!(out.size, 11);
    ensure!(out.etag != first.etag, "append kept the ETag");
    let (info, data) = get(&s, &b, "a").await?;
    ensure!(data == "hello world", "appended bytes: {data:?}");
    ensure_eq!(info.etag, out.etag);
    ensure_eq!(info.size, 11);
    if c.etag_md5 {
        ensure_eq!(info.etag, md5_hex(b"hello world"));
    }
    for (off, what) in [(5u64, "stale offset"), (0, "offset 0 on an existing object"), (12, "offset past the end")] {
        expect_code(app("a", off, "zz").await, ErrorCode::InvalidWriteOffset, what)?;
    }
    expect_one_of(app("nothing", 3, "x").await, &[ErrorCode::InvalidWriteOffset, ErrorCode::NoSuchKey], "absent key")?;
    expect_code(app("a", 11, "").await, ErrorCode::InvalidRequest, "empty append")?;
    let with_meta = PutObjectRequest {
        meta: ObjectMeta { user: [("x".to_string(), "y".to_string())].into_iter().collect(), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.append_object(&b, "a", 11, with_meta, Body::from("m")).await,
        ErrorCode::InvalidRequest,
        "append with user metadata to an existing object",
    )?;
    ensure!(get(&s, &b, "a").await?.1 == "hello world", "refused appends changed the object");

    // Metadata and checksum of a PUT object carry on; the checksum covers the whole object.
    let base = pattern(41, 70_000);
    let meta = ObjectMeta { content_type: Some("text/x-log".into()), ..Default::default() };
    let req = PutObjectRequest {
        meta: meta.clone(),
        checksum: Some(ChecksumRequest { algorithm: ChecksumAlgorithm::Crc32c, expected: None }),
        ..Default::default()
    };
    ok(s.put_object(&b, "log", req, Body::from(base.clone())).await, "put log")?;
    let more = pattern(42, 5_000);
    let out = ok(
        s.append_object(&b, "log", base.len() as u64, PutObjectRequest::default(), Body::from(more.clone())).await,
        "append to a PUT object",
    )?;
    let whole: Bytes = [base, more].concat().into();
    ensure_eq!(out.size, whole.len() as u64);
    let (info, data) = get(&s, &b, "log").await?;
    ensure!(data == whole, "appended object bytes");
    ensure_eq!(info.meta, meta);
    ensure_eq!(info.checksum, Some(checksum_of(ChecksumAlgorithm::Crc32c, &whole)));
    ensure_eq!(out.checksum, info.checksum);
    Ok(())
}

pub(crate) async fn append_concurrent(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_append(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    // Racers at one offset, round after round: exactly one wins each, its bytes whole.
    let mut want = BytesMut::from(&b"base"[..]);
    put(&s, &b, "k", "base").await?;
    for round in 0..12u64 {
        let bodies: Vec<Bytes> = (0..8u64).map(|i| pattern(100 * round + i, 1000 + 4096 * i as usize)).collect();
        let offset = want.len() as u64;
        let tasks: Vec<_> = bodies
            .iter()
            .map(|body| {
                let (s, b, body) = (s.clone(), b.clone(), body.clone());
                tokio::spawn(async move {
                    s.append_object(&b, "k", offset, PutObjectRequest::default(), Body::from(body)).await
                })
            })
            .collect();
        let mut winners = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            match t.await.map_err(|e| format!("task: {e}"))? {
                Ok(_) => winners.push(i),
                Err(e) if e.code == ErrorCode::InvalidWriteOffset => {}
                Err(e) => return Err(format!("racer {i}: unexpected error {e}")),
            }
        }
        ensure!(winners.len() == 1, "round {round}: racers at one offset: winners {winners:?}");
        want.extend_from_slice(&bodies[winners[0]]);
        ensure!(get(&s, &b, "k").await?.1 == want, "round {round}: content after the race");
    }

    // Appenders that retry at the new size: every record lands whole, none lost.
    put(&s, &b, "log", "").await?;
    let writers = 6u64;
    let per = 20u64;
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let (s, b) = (s.clone(), b.clone());
            tokio::spawn(async move {
                for n in 0..per {
                    let rec = format!("<{w}:{n:03}:{}>", "x".repeat((w * 7 + n) as usize % 50));
                    loop {
                        let size = s.head_object(&b, "log", GetObjectRequest::default()).await?.size;
                        match s
                            .append_object(
                                &b,
                                "log",
                                size,
                                PutObjectRequest::default(),
                                Body::from(Bytes::from(rec.clone())),
                            )
                            .await
                        {
                            Ok(_) => break,
                            Err(e) if e.code == ErrorCode::InvalidWriteOffset => continue,
                            Err(e) => return Err(e),
                        }
                    }
                }
                Ok::<_, Error>(())
            })
        })
        .collect();
    for t in tasks {
        let r = t.await.map_err(|e| format!("appender task: {e}"))?;
        ok(r, "appender")?;
    }
    let (_, data) = get(&s, &b, "log").await?;
    let text = String::from_utf8(data.to_vec()).map_err(|_| "log is not text".to_string())?;
    let mut seen: Vec<String> = text.split_inclusive('>').map(str::to_string).collect();
    let mut want: Vec<String> = (0..writers)
        .flat_map(|w| (0..per).map(move |n| format!("<{w}:{n:03}:{}>", "x".repeat((w * 7 + n) as usize % 50))))
        .collect();
    seen.sort();
    want.sort();
    ensure!(seen == want, "appended records lost or interleaved ({} bytes): {:.300}", text.len(), text);
    Ok(())
}
