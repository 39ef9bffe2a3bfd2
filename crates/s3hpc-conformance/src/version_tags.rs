//! Object tagging of any version: GetObjectTagging / PutObjectTagging / DeleteObjectTagging with
//! a version id act on that version only (noncurrent ones and the null version too), answer its
//! id, and a versioned GET/HEAD counts that version's tags; a delete marker's id is
//! MethodNotAllowed, an unknown one NoSuchVersion, a malformed one InvalidArgument.

use s3hpc_core::versions::{NULL_VERSION, new_version_id};
use s3hpc_core::*;

use super::{R, expect_code, get_v, ok, put, set_versioning, versioned_bucket};

fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

async fn tags_of(s: &DynStore, b: &str, k: &str, v: Option<&str>) -> Result<ObjectTagging, String> {
    ok(s.get_object_tagging(b, k, v).await, &format!("get tags of {k} {v:?}"))
}

async fn tag_count(s: &DynStore, b: &str, k: &str, v: Option<&str>) -> Result<usize, String> {
    let req = GetObjectRequest { version_id: v.map(str::to_owned), ..Default::default() };
    let h = ok(s.head_object(b, k, req.clone()).await, &format!("head {k} {v:?}"))?;
    let g = ok(s.get_object(b, k, req).await, &format!("get {k} {v:?}"))?;
    ensure_eq!(h.tag_count, g.info.tag_count);
    Ok(h.tag_count)
}

pub(crate) async fn version_tagging(s: DynStore, _c: super::Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(()); // a store (or front end) without version ids
    }
    let v1 = put(&s, &b, "k", "one").await?.version_id.ok_or("no version id")?;
    ok(s.put_object_tagging(&b, "k", None, tags(&[("gen", "1")])).await, "tag v1 while current")?;
    let v2 = put(&s, &b, "k", "two").await?.version_id.ok_or("no version id")?;
    let r = ok(s.put_object_tagging(&b, "k", None, tags(&[("gen", "2")])).await, "tag current")?;
    ensure_eq!(r.as_deref(), Some(v2.as_str()));

    // A noncurrent version keeps its tags, and gets new ones without touching the current's.
    ensure_eq!(tags_of(&s, &b, "k", Some(&v1)).await?.tags, tags(&[("gen", "1")]));
    let r = ok(s.put_object_tagging(&b, "k", Some(&v1), tags(&[("a", "b"), ("old", "yes")])).await, "tag v1")?;
    ensure_eq!(r.as_deref(), Some(v1.as_str()));
    let t = tags_of(&s, &b, "k", Some(&v1)).await?;
    ensure_eq!(t.tags, tags(&[("a", "b"), ("old", "yes")]));
    ensure_eq!(t.version_id.as_deref(), Some(v1.as_str()));
    let t = tags_of(&s, &b, "k", None).await?;
    ensure_eq!(t.tags, tags(&[("gen", "2")]));
    ensure_eq!(t.version_id.as_deref(), Some(v2.as_str()));
    ensure_eq!(tags_of(&s, &b, "k", Some(&v2)).await?.tags, tags(&[("gen", "2")]));
    ensure_eq!(tag_count(&s, &b, "k", Some(&v1)).await?, 2);
    ensure_eq!(tag_count(&s, &b, "k", None).await?, 1);
    // The version's data is untouched.
    let (_, data) = ok(get_v(&s, &b, "k", &v1).await, "get v1")?;
    ensure_eq!(&data[..], b"one");

    // The current version named by its id.
    let r = ok(s.put_object_tagging(&b, "k", Some(&v2), tags(&[("gen", "2b")])).await, "tag v2 by id")?;
    ensure_eq!(r.as_deref(), Some(v2.as_str()));
    ensure_eq!(tags_of(&s, &b, "k", None).await?.tags, tags(&[("gen", "2b")]));
    ensure_eq!(tags_of(&s, &b, "k", Some(&v1)).await?.tags.len(), 2);

    // DeleteObjectTagging of a noncurrent version.
    let r = ok(s.delete_object_tagging(&b, "k", Some(&v1)).await, "untag v1")?;
    ensure_eq!(r.as_deref(), Some(v1.as_str()));
    ensure_eq!(tags_of(&s, &b, "k", Some(&v1)).await?.tags, Tags::new());
    ensure_eq!(tag_count(&s, &b, "k", Some(&v1)).await?, 0);
    ensure_eq!(tags_of(&s, &b, "k", None).await?.tags, tags(&[("gen", "2b")]));

    // A delete marker has no tags; with it current, the key has none either.
    let m = ok(s.delete_object_version(&b, "k", None).await, "delete")?.version_id.ok_or("no marker id")?;
    expect_code(s.get_object_tagging(&b, "k", Some(&m)).await, ErrorCode::MethodNotAllowed, "get marker tags")?;
    expect_code(
        s.put_object_tagging(&b, "k", Some(&m), tags(&[("x", "y")])).await,
        ErrorCode::MethodNotAllowed,
        "tag a marker",
    )?;
    expect_code(s.delete_object_tagging(&b, "k", Some(&m)).await, ErrorCode::MethodNotAllowed, "untag a marker")?;
    expect_code(s.get_object_tagging(&b, "k", None).await, ErrorCode::NoSuchKey, "tags under a marker")?;
    expect_code(
        s.put_object_tagging(&b, "k", None, tags(&[("x", "y")])).await,
        ErrorCode::NoSuchKey,
        "tag under marker",
    )?;
    // v2, noncurrent now, kept its tags and can be tagged.
    ensure_eq!(tags_of(&s, &b, "k", Some(&v2)).await?.tags, tags(&[("gen", "2b")]));
    ok(s.put_object_tagging(&b, "k", Some(&v2), tags(&[("gen", "2c")])).await, "tag noncurrent v2")?;
    ensure_eq!(tags_of(&s, &b, "k", Some(&v2)).await?.tags, tags(&[("gen", "2c")]));

    // Unknown and malformed ids.
    let missing = new_version_id();
    expect_code(s.get_object_tagging(&b, "k", Some(&missing)).await, ErrorCode::NoSuchVersion, "get unknown")?;
    expect_code(
        s.put_object_tagging(&b, "k", Some(&missing), tags(&[("x", "y")])).await,
        ErrorCode::NoSuchVersion,
        "tag unknown",
    )?;
    expect_code(s.delete_object_tagging(&b, "k", Some(&missing)).await, ErrorCode::NoSuchVersion, "untag unknown")?;
    expect_code(s.get_object_tagging(&b, "nokey", Some(&missing)).await, ErrorCode::NoSuchVersion, "unknown key")?;
    expect_code(
        s.get_object_tagging(&b, "k", Some("not-a-version")).await,
        ErrorCode::InvalidArgument,
        "malformed id",
    )?;

    // The null version, noncurrent.
    if !set_versioning(&s, &b, VersioningState::Suspended).await? {
        return Ok(());
    }
    put(&s, &b, "n", "null").await?;
    ok(s.put_object_tagging(&b, "n", None, tags(&[("null", "1")])).await, "tag null current")?;
    ensure!(set_versioning(&s, &b, VersioningState::Enabled).await?, "re-enable versioning");
    put(&s, &b, "n", "newer").await?;
    ensure_eq!(tags_of(&s, &b, "n", Some(NULL_VERSION)).await?.tags, tags(&[("null", "1")]));
    ok(s.put_object_tagging(&b, "n", Some(NULL_VERSION), tags(&[("null", "2")])).await, "tag null")?;
    ensure_eq!(tags_of(&s, &b, "n", Some(NULL_VERSION)).await?.tags, tags(&[("null", "2")]));
    ensure_eq!(tag_count(&s, &b, "n", None).await?, 0);
    let (_, data) = ok(get_v(&s, &b, "n", NULL_VERSION).await, "get null")?;
    ensure_eq!(&data[..], b"null");
    Ok(())
}
