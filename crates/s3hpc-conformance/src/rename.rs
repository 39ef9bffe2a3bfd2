//! RenameObject cases (stores without it answer NotImplemented: the cases pass over them; the
//! memory and posix test files check that those two implement it).

use super::*;

/// `true` when the store answers NotImplemented to RenameObject (checked on a missing key of a
/// missing bucket, which a store with the operation answers otherwise).
pub async fn lacks_rename(s: &DynStore) -> bool {
    let r = s.rename_object("conf-no-such-bucket-probe", "a", "b", RenameObjectRequest::default()).await;
    matches!(r, Err(e) if e.code == ErrorCode::NotImplemented)
}

/// A rename retried with its client token answers success without renaming again (the source
/// is gone by then); the token reused for other keys is IdempotencyParameterMismatch.
pub(crate) async fn rename_client_token(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "src", Bytes::from_static(b"moved once")).await?;
    let with = |t: &str| RenameObjectRequest { client_token: Some(t.to_string()), ..Default::default() };
    ok(s.rename_object(&b, "src", "dst", with("tok-1")).await, "rename with a token")?;
    // The retry: 200, and nothing changes (a new "src" is not moved by it).
    put(&s, &b, "src", Bytes::from_static(b"newer")).await?;
    ok(s.rename_object(&b, "src", "dst", with("tok-1")).await, "retried rename")?;
    ensure!(get(&s, &b, "dst").await?.1 == "moved once", "the retry renamed again");
    ensure!(get(&s, &b, "src").await?.1 == "newer", "the retry moved the new source");
    expect_code(
        s.rename_object(&b, "src", "other", with("tok-1")).await,
        ErrorCode::IdempotencyParameterMismatch,
        "token reused for other keys",
    )?;
    expect_code(
        s.head_object(&b, "other", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "mismatch renamed",
    )?;
    // Another token renames; without a token a completed rename's retry is NoSuchKey.
    ok(s.rename_object(&b, "src", "dst2", with("tok-2")).await, "rename with another token")?;
    ok(s.rename_object(&b, "dst2", "dst3", RenameObjectRequest::default()).await, "rename without a token")?;
    expect_code(
        s.rename_object(&b, "dst2", "dst3", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "retry without a token",
    )?;
    // A failed rename leaves no record: the same token works once the source exists.
    expect_code(s.rename_object(&b, "none", "x", with("tok-3")).await, ErrorCode::NoSuchKey, "missing source")?;
    put(&s, &b, "none", Bytes::from_static(b"late")).await?;
    ok(s.rename_object(&b, "none", "x", with("tok-3")).await, "token of a failed rename")?;
    ensure!(get(&s, &b, "x").await?.1 == "late", "rename after a failed one with its token");
    Ok(())
}

pub(crate) fn rename_req(source: Conditions, dest: Conditions) -> RenameObjectRequest {
    RenameObjectRequest { source_conditions: source, conditions: dest, client_token: None }
}

pub(crate) async fn rename_object(s: DynStore, c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    expect_code(
        s.rename_object(&b, "a", "b", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchBucket,
        "rename in a missing bucket",
    )?;
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(31, 10_000);
    let meta = ObjectMeta {
        content_type: Some("text/x-rename".into()),
        user: [("k".to_string(), "v".to_string())].into_iter().collect(),
        ..Default::default()
    };
    let req = PutObjectRequest { meta: meta.clone(), tags: vec![("t".into(), "1".into())], ..Default::default() };
    let put_out = ok(s.put_object(&b, "src", req, Body::from(data.clone())).await, "put src")?;
    ok(s.rename_object(&b, "src", "dst", RenameObjectRequest::default()).await, "rename src -> dst")?;
    let (info, got) = get(&s, &b, "dst").await?;
    ensure!(got == data, "renamed object's bytes differ");
    ensure_eq!(info.etag, put_out.etag);
    ensure_eq!(info.meta, meta);
    ensure_eq!(ok(s.get_object_tagging(&b, "dst", None).await, "tags")?.tags, vec![("t".to_string(), "1".to_string())]);
    expect_code(
        s.head_object(&b, "src", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "source after rename",
    )?;
    expect_code(
        s.rename_object(&b, "src", "again", RenameObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "rename of a missing source",
    )?;
    expect_code(
        s.head_object(&b, "again", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed rename's dst",
    )?;

    // Onto an existing key: replaced, unless If-None-Match: *.
    put(&s, &b, "other", "other bytes").await?;
    let create_only = Conditions { if_none_match: Some("*".into()), ..Default::default() };
    expect_code(
        s.rename_object(&b, "dst", "other", rename_req(Conditions::default(), create_only.clone())).await,
        ErrorCode::PreconditionFailed,
        "rename onto an existing key with If-None-Match: *",
    )?;
    ensure!(get(&s, &b, "other").await?.1 == "other bytes", "refused rename changed the destination");
    ensure!(get(&s, &b, "dst").await?.1 == data, "refused rename changed the source");
    ok(s.rename_object(&b, "dst", "other", RenameObjectRequest::default()).await, "rename onto an existing key")?;
    ensure!(get(&s, &b, "other").await?.1 == data, "rename did not replace the destination");
    expect_code(s.head_object(&b, "dst", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "old name")?;
    ok(
        s.rename_object(&b, "other", "fresh", rename_req(Conditions::default(), create_only)).await,
        "If-None-Match: * onto an absent key",
    )?;

    // Into and out of "directories".
    ok(s.rename_object(&b, "fresh", "d1/d2/deep", RenameObjectRequest::default()).await, "rename into a/b/c")?;
    ensure!(get(&s, &b, "d1/d2/deep").await?.1 == data, "nested rename");
    ok(s.rename_object(&b, "d1/d2/deep", "top", RenameObjectRequest::default()).await, "rename out of a/b/c")?;
    let keys = list_all(&s, &b, "", None, 1000).await?.0;
    ensure_eq!(keys, vec!["top".to_string()]);
    if !c.file_and_dir_same_name {
        put(&s, &b, "file", "f").await?;
        expect_code(
            s.rename_object(&b, "top", "file/below", RenameObjectRequest::default()).await,
            ErrorCode::InvalidRequest,
            "rename below a file key",
        )?;
        ensure!(get(&s, &b, "top").await?.1 == data, "refused rename lost the source");
    }
    expect_code(
        s.rename_object(&b, "top", "dir/", RenameObjectRequest::default()).await,
        ErrorCode::InvalidRequest,
        "rename onto a directory-object key",
    )?;
    Ok(())
}

pub(crate) async fn rename_conditions(s: DynStore, _c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    ok(s.create_bucket(&b).await, "create")?;
    let etag = put(&s, &b, "s", "source").await?.etag;
    let dst_etag = put(&s, &b, "d", "dest").await?.etag;
    let past = SystemTime::now() - Duration::from_secs(86_400);
    let future = SystemTime::now() + Duration::from_secs(86_400);
    let src_fail = [
        Conditions { if_match: Some("\"0123456789abcdef0123456789abcdef\"".into()), ..Default::default() },
        Conditions { if_none_match: Some(format!("\"{etag}\"")), ..Default::default() },
        Conditions { if_unmodified_since: Some(past), ..Default::default() },
        Conditions { if_modified_since: Some(future), ..Default::default() },
    ];
    for (i, cond) in src_fail.into_iter().enumerate() {
        expect_code(
            s.rename_object(&b, "s", "t", rename_req(cond, Conditions::default())).await,
            ErrorCode::PreconditionFailed,
            &format!("failing source condition {i}"),
        )?;
    }
    let dst_fail = Conditions { if_match: Some("\"0123456789abcdef0123456789abcdef\"".into()), ..Default::default() };
    expect_code(
        s.rename_object(&b, "s", "d", rename_req(Conditions::default(), dst_fail)).await,
        ErrorCode::PreconditionFailed,
        "failing destination If-Match",
    )?;
    expect_one_of(
        s.rename_object(
            &b,
            "s",
            "absent",
            rename_req(Conditions::default(), Conditions { if_match: Some(etag.clone()), ..Default::default() }),
        )
        .await,
        &[ErrorCode::NoSuchKey, ErrorCode::PreconditionFailed],
        "destination If-Match on an absent key",
    )?;
    ensure!(get(&s, &b, "s").await?.1 == "source", "failed renames moved the source");
    ensure!(get(&s, &b, "d").await?.1 == "dest", "failed renames changed the destination");
    expect_code(
        s.head_object(&b, "t", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed renames' dst",
    )?;
    let src_ok =
        Conditions { if_match: Some(format!("\"{etag}\"")), if_unmodified_since: Some(future), ..Default::default() };
    let dst_ok = Conditions { if_match: Some(dst_etag), ..Default::default() };
    ok(s.rename_object(&b, "s", "d", rename_req(src_ok, dst_ok)).await, "rename with holding conditions")?;
    ensure!(get(&s, &b, "d").await?.1 == "source", "conditional rename");
    let src_ok =
        Conditions { if_none_match: Some("\"other\"".into()), if_modified_since: Some(past), ..Default::default() };
    ok(s.rename_object(&b, "d", "e", rename_req(src_ok, Conditions::default())).await, "If-None-Match other etag")?;
    Ok(())
}
