//! RenameObject of a prefix (source and destination keys ending in '/', an s3hpc extension):
//! every key under the source gets the destination prefix, as rename(2) of a directory.

use super::*;

fn plain() -> RenameObjectRequest {
    RenameObjectRequest::default()
}

pub(crate) async fn rename_prefix(s: DynStore, c: Caps, b: String) -> R {
    if lacks_rename(&s).await {
        return Ok(());
    }
    expect_code(s.rename_object(&b, "a/", "b/", plain()).await, ErrorCode::NoSuchBucket, "prefix rename, no bucket")?;
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(77, 5_000);
    let meta = ObjectMeta {
        content_type: Some("text/x-moved".into()),
        user: [("k".to_string(), "v".to_string())].into_iter().collect(),
        ..Default::default()
    };
    let req = PutObjectRequest { meta: meta.clone(), tags: vec![("t".into(), "2".into())], ..Default::default() };
    let first = ok(s.put_object(&b, "d1/a", req, Body::from(data.clone())).await, "put d1/a")?;
    put(&s, &b, "d1/", "").await?;
    put(&s, &b, "d1/sub/b", "bee").await?;
    put(&s, &b, "d1/sub/c", "sea").await?;
    put(&s, &b, "d1x", "beside").await?;

    ok(s.rename_object(&b, "d1/", "d2/", plain()).await, "rename d1/ -> d2/")?;
    let keys = list_all(&s, &b, "", None, 1000).await?.0;
    ensure_eq!(keys, vec!["d1x", "d2/", "d2/a", "d2/sub/b", "d2/sub/c"]);
    let (info, got) = get(&s, &b, "d2/a").await?;
    ensure!(got == data, "moved object's bytes differ");
    ensure_eq!(info.etag, first.etag);
    ensure_eq!(info.meta, meta);
    ensure_eq!(
        ok(s.get_object_tagging(&b, "d2/a", None).await, "tags")?.tags,
        vec![("t".to_string(), "2".to_string())]
    );
    ensure!(get(&s, &b, "d2/sub/c").await?.1 == "sea", "moved nested object");
    expect_code(s.head_object(&b, "d1/a", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "old key")?;
    expect_code(s.rename_object(&b, "d1/", "d3/", plain()).await, ErrorCode::NoSuchKey, "renamed-away source")?;
    expect_code(s.rename_object(&b, "none/", "d3/", plain()).await, ErrorCode::NoSuchKey, "missing source prefix")?;

    // Refused forms: one key with '/', a destination inside the source, conditions.
    expect_code(s.rename_object(&b, "d2/", "d3", plain()).await, ErrorCode::InvalidRequest, "prefix onto a key")?;
    expect_code(s.rename_object(&b, "d2/", "d2/in/", plain()).await, ErrorCode::InvalidArgument, "into itself")?;
    let cond = RenameObjectRequest {
        conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
        ..Default::default()
    };
    expect_code(s.rename_object(&b, "d2/", "d3/", cond).await, ErrorCode::InvalidRequest, "conditions")?;

    // A destination holding keys is refused and nothing moves; one holding only its
    // directory object is replaced.
    put(&s, &b, "full/f", "f").await?;
    expect_code(
        s.rename_object(&b, "d2/", "full/", plain()).await,
        ErrorCode::PrefixNotEmpty,
        "onto a non-empty prefix",
    )?;
    ensure!(get(&s, &b, "d2/a").await?.1 == data, "refused rename moved the source");
    ensure!(get(&s, &b, "full/f").await?.1 == "f", "refused rename changed the destination");
    expect_code(s.rename_object(&b, "d2/sub/", "d2/", plain()).await, ErrorCode::PrefixNotEmpty, "onto its parent")?;
    put(&s, &b, "empty/", "").await?;
    ok(s.rename_object(&b, "d2/", "empty/", plain()).await, "onto a lone directory object")?;
    let keys = list_all(&s, &b, "empty/", None, 1000).await?.0;
    ensure_eq!(keys, vec!["empty/", "empty/a", "empty/sub/b", "empty/sub/c"]);

    // Into new parents, and out again: emptied parents leave no keys behind.
    ok(s.rename_object(&b, "empty/sub/", "n/o/p/", plain()).await, "into new parents")?;
    ensure!(get(&s, &b, "n/o/p/b").await?.1 == "bee", "deep rename");
    ok(s.rename_object(&b, "n/o/p/", "top/", plain()).await, "out of a/b/c")?;
    ok(s.rename_object(&b, "top/", "top/", plain()).await, "onto itself")?;
    let keys = list_all(&s, &b, "", None, 1000).await?.0;
    ensure_eq!(keys, vec!["d1x", "empty/", "empty/a", "full/f", "top/b", "top/c"]);
    let (_, prefixes) = list_all(&s, &b, "", Some("/"), 1000).await?;
    ensure_eq!(prefixes, vec!["empty/", "full/", "top/"]);
    if !c.file_and_dir_same_name {
        expect_code(s.rename_object(&b, "top/", "d1x/", plain()).await, ErrorCode::InvalidRequest, "onto a file key")?;
        ensure!(get(&s, &b, "top/b").await?.1 == "bee", "refused rename lost the source");
    }

    // A client token makes a retry idempotent, as for one key: the retry answers 200 although
    // the source is gone, and the token reused for other keys is refused.
    let token = |t: &str| RenameObjectRequest { client_token: Some(t.into()), ..Default::default() };
    ok(s.rename_object(&b, "top/", "tok/", token("prefix-token-1")).await, "rename with a token")?;
    ok(s.rename_object(&b, "top/", "tok/", token("prefix-token-1")).await, "retried rename with its token")?;
    ensure!(get(&s, &b, "tok/b").await?.1 == "bee", "token rename moved the prefix");
    expect_code(
        s.rename_object(&b, "tok/", "other/", token("prefix-token-1")).await,
        ErrorCode::IdempotencyParameterMismatch,
        "token reused for other keys",
    )?;
    expect_code(s.rename_object(&b, "top/", "tok/", plain()).await, ErrorCode::NoSuchKey, "retry without the token")?;
    Ok(())
}
