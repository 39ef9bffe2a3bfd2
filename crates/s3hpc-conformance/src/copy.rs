//! CopyObject cases.

use super::*;

pub(crate) async fn copy_object(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let data = pattern(10, 12_345);
    let mut meta = ObjectMeta { content_type: Some("image/png".into()), ..Default::default() };
    meta.user.insert("origin".into(), "src".into());
    let tags = vec![("t".to_string(), "1".to_string())];
    let req = PutObjectRequest { meta: meta.clone(), tags: tags.clone(), ..Default::default() };
    let src = ok(s.put_object(&b, "src", req, Body::from(data.clone())).await, "put src")?;

    let out = ok(s.copy_object(&b, "src", &b, "dst", CopyObjectRequest::default()).await, "copy")?;
    ensure_eq!(out.etag, src.etag);
    let (info, got) = get(&s, &b, "dst").await?;
    ensure!(got == data, "copy content differs");
    ensure_eq!(info.meta, meta);
    ensure_eq!(ok(s.get_object_tagging(&b, "dst", None).await, "tags of copy")?.tags, tags);

    let mut new_meta = ObjectMeta::default();
    new_meta.user.insert("fresh".into(), "yes".into());
    let req = CopyObjectRequest {
        metadata: Directive::Replace(new_meta.clone()),
        tagging: Directive::Replace(vec![]),
        ..Default::default()
    };
    ok(s.copy_object(&b, "src", &b, "dst2", req).await, "copy replace")?;
    let head = ok(s.head_object(&b, "dst2", GetObjectRequest::default()).await, "head dst2")?;
    ensure_eq!(head.meta, new_meta);
    ensure_eq!(head.tag_count, 0);

    expect_code(
        s.copy_object(&b, "src", &b, "src", CopyObjectRequest::default()).await,
        ErrorCode::InvalidRequest,
        "self copy without replace",
    )?;
    let req = CopyObjectRequest { metadata: Directive::Replace(new_meta.clone()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "src", req).await, "self copy with replace")?;
    let (info, got) = get(&s, &b, "src").await?;
    ensure!(got == data, "self copy changed content");
    ensure_eq!(info.meta, new_meta);

    let req = CopyObjectRequest {
        source_conditions: Conditions { if_match: Some("\"nope\"".into()), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.copy_object(&b, "src", &b, "dst3", req).await,
        ErrorCode::PreconditionFailed,
        "copy-source-if-match",
    )?;
    let req = CopyObjectRequest {
        source_conditions: Conditions { if_none_match: Some(src.etag.clone()), ..Default::default() },
        ..Default::default()
    };
    expect_code(
        s.copy_object(&b, "src", &b, "dst3", req).await,
        ErrorCode::PreconditionFailed,
        "copy-source-if-none-match",
    )?;
    expect_code(
        s.copy_object(&b, "nope", &b, "dst3", CopyObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "copy missing source",
    )?;
    expect_code(
        s.head_object(&b, "dst3", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "failed copy created object",
    )?;
    Ok(())
}

/// S3 never copies the source's `x-amz-website-redirect-location`: the new object has the
/// request's, with either directive, and a new redirect makes a self copy legal.
pub(crate) async fn copy_website_redirect(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta {
        content_type: Some("text/html".into()),
        website_redirect_location: Some("/src-page.html".into()),
        ..Default::default()
    };
    meta.user.insert("origin".into(), "src".into());
    let req = PutObjectRequest { meta: meta.clone(), ..Default::default() };
    ok(s.put_object(&b, "src", req, Body::from("page")).await, "put src")?;
    let head = |k: &'static str| {
        let (s, b) = (s.clone(), b.clone());
        async move { ok(s.head_object(&b, k, GetObjectRequest::default()).await, &format!("head {k}")) }
    };
    ensure_eq!(head("src").await?.meta, meta);

    // COPY without a redirect: everything but the redirect.
    ok(s.copy_object(&b, "src", &b, "plain", CopyObjectRequest::default()).await, "copy")?;
    let want = ObjectMeta { website_redirect_location: None, ..meta.clone() };
    ensure_eq!(head("plain").await?.meta, want);

    // COPY with one: the source's metadata and the request's redirect.
    let req =
        CopyObjectRequest { website_redirect_location: Some("https://example.com/new".into()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "moved", req).await, "copy with redirect")?;
    let want = ObjectMeta { website_redirect_location: Some("https://example.com/new".into()), ..meta.clone() };
    ensure_eq!(head("moved").await?.meta, want);

    // REPLACE: the new metadata and the request's redirect (or none).
    let fresh = ObjectMeta { content_type: Some("text/plain".into()), ..Default::default() };
    let req = CopyObjectRequest {
        metadata: Directive::Replace(fresh.clone()),
        website_redirect_location: Some("/other.html".into()),
        ..Default::default()
    };
    ok(s.copy_object(&b, "src", &b, "replaced", req).await, "copy replace with redirect")?;
    let want = ObjectMeta { website_redirect_location: Some("/other.html".into()), ..fresh.clone() };
    ensure_eq!(head("replaced").await?.meta, want);
    let req = CopyObjectRequest { metadata: Directive::Replace(fresh.clone()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "replaced2", req).await, "copy replace")?;
    ensure_eq!(head("replaced2").await?.meta, fresh);

    // A self copy that only sets a redirect is legal and keeps the bytes and the rest.
    let req = CopyObjectRequest { website_redirect_location: Some("/self.html".into()), ..Default::default() };
    ok(s.copy_object(&b, "src", &b, "src", req).await, "self copy with redirect")?;
    let (info, got) = get(&s, &b, "src").await?;
    ensure!(got == "page", "self copy changed content");
    ensure_eq!(info.meta, ObjectMeta { website_redirect_location: Some("/self.html".into()), ..meta.clone() });

    let req = CopyObjectRequest { website_redirect_location: Some("ftp://x".into()), ..Default::default() };
    expect_code(
        s.copy_object(&b, "src", &b, "bad", req).await,
        ErrorCode::InvalidRedirectLocation,
        "copy with a bad redirect",
    )?;
    expect_code(s.head_object(&b, "bad", GetObjectRequest::default()).await, ErrorCode::NoSuchKey, "bad copy stored")?;
    Ok(())
}
