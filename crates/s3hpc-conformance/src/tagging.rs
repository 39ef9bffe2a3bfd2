//! Object and bucket tagging cases.

use super::*;

pub(crate) async fn object_tagging(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let tags = vec![("project".to_string(), "hpc".to_string()), ("tier".to_string(), "".to_string())];
    let req = PutObjectRequest { tags: tags.clone(), ..Default::default() };
    ok(s.put_object(&b, "t", req, Body::from("x")).await, "put with tags")?;
    ensure_eq!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags, tags);
    // S3 reports the tag count on GET (x-amz-tagging-count), not on HEAD.
    let got = ok(s.get_object(&b, "t", GetObjectRequest::default()).await, "get")?;
    ensure_eq!(got.info.tag_count, 2);
    let new = vec![("a".to_string(), "b".to_string())];
    ok(s.put_object_tagging(&b, "t", None, new.clone()).await, "put tags")?;
    ensure_eq!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags, new);
    ok(s.delete_object_tagging(&b, "t", None).await, "delete tags")?;
    ensure!(ok(s.get_object_tagging(&b, "t", None).await, "get tags")?.tags.is_empty(), "tags after delete");
    let too_many: Tags = (0..11).map(|i| (format!("k{i}"), "v".to_string())).collect();
    expect_code(s.put_object_tagging(&b, "t", None, too_many).await, ErrorCode::InvalidTag, "11 tags")?;
    let dup = vec![("k".to_string(), "1".to_string()), ("k".to_string(), "2".to_string())];
    expect_code(s.put_object_tagging(&b, "t", None, dup).await, ErrorCode::InvalidTag, "duplicate tag keys")?;
    expect_code(s.put_object_tagging(&b, "none", None, new).await, ErrorCode::NoSuchKey, "tags on missing key")?;
    let (_, data) = get(&s, &b, "t").await?;
    ensure!(data == "x", "tagging changed content");
    Ok(())
}

pub(crate) async fn bucket_tagging(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    expect_code(s.get_bucket_tagging(&b).await, ErrorCode::NoSuchTagSet, "no tags yet")?;
    let tags = vec![("owner".to_string(), "team-a".to_string())];
    ok(s.put_bucket_tagging(&b, tags.clone()).await, "put")?;
    ensure_eq!(ok(s.get_bucket_tagging(&b).await, "get")?, tags);
    ok(s.delete_bucket_tagging(&b).await, "delete")?;
    expect_code(s.get_bucket_tagging(&b).await, ErrorCode::NoSuchTagSet, "after delete")?;
    expect_code(s.get_bucket_tagging(&format!("{b}-x")).await, ErrorCode::NoSuchBucket, "missing bucket")?;
    Ok(())
}
