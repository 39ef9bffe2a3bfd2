//! Versioning cases, and the helpers other case modules use to turn versioning on.

use super::*;

/// Turn versioning on (`Enabled`) or suspend it; `Ok(false)` when the store under test does not
/// carry versions through (no configuration documents, or no version id on a PUT after enabling:
/// a front end that does not carry them yet), and the case is skipped.
pub(crate) async fn set_versioning(s: &DynStore, b: &str, state: VersioningState) -> Result<bool, String> {
    match s.put_bucket_config(b, s3hpc_core::versions::VERSIONING_CONFIG, Some(state.as_str().into())).await {
        Ok(()) => Ok(true),
        Err(e) if e.code == ErrorCode::NotImplemented => Ok(false),
        Err(e) => Err(format!("set versioning: {e}")),
    }
}

pub(crate) async fn versioned_bucket(s: &DynStore, b: &str) -> Result<bool, String> {
    ok(s.create_bucket(b).await, "create")?;
    if !set_versioning(s, b, VersioningState::Enabled).await? {
        return Ok(false);
    }
    let probe = put(s, b, "probe", "x").await?;
    let _ = s.delete_object_version(b, "probe", probe.version_id.as_deref()).await;
    Ok(probe.version_id.is_some())
}

pub(crate) async fn get_v(s: &DynStore, b: &str, k: &str, v: &str) -> Result<(ObjectInfo, Bytes)> {
    let out = s.get_object(b, k, GetObjectRequest { version_id: Some(v.into()), ..Default::default() }).await?;
    let info = out.info;
    Ok((info, out.body.collect().await?))
}

pub(crate) async fn all_versions(
    s: &DynStore,
    b: &str,
    prefix: &str,
    page: usize,
) -> Result<Vec<VersionEntry>, String> {
    let mut out = Vec::new();
    let (mut km, mut vm) = (None, None);
    for _ in 0..10_000 {
        let req = ListVersionsRequest {
            prefix: prefix.into(),
            key_marker: km.clone(),
            version_id_marker: vm.clone(),
            max_keys: page,
            ..Default::default()
        };
        let p = ok(s.list_object_versions(b, req).await, "list versions")?;
        ensure!(p.versions.len() <= page, "page holds more than max_keys");
        out.extend(p.versions);
        if !p.is_truncated {
            return Ok(out);
        }
        ensure!(p.next_key_marker.is_some(), "truncated page without a next key marker");
        km = p.next_key_marker;
        vm = p.next_version_id_marker;
    }
    Err("version listing never ended".into())
}

pub(crate) fn summary(v: &[VersionEntry]) -> Vec<(String, String, bool, bool)> {
    v.iter().map(|e| (e.key.clone(), e.version_id.clone(), e.is_latest, e.delete_marker)).collect()
}

pub(crate) async fn versioning_basics(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    match s.get_bucket_config(&b, s3hpc_core::versions::VERSIONING_CONFIG).await {
        Ok(None) => {}
        Ok(Some(d)) => return Err(format!("a new bucket has a versioning state: {d:?}")),
        Err(e) if e.code == ErrorCode::NotImplemented => return Ok(()),
        Err(e) => return Err(format!("get versioning: {e}")),
    }
    // Before versioning: the null version.
    let p1 = put(&s, &b, "k", "one").await?;
    ensure_eq!(p1.version_id, None);
    if !set_versioning(&s, &b, VersioningState::Enabled).await? {
        return Ok(());
    }
    let p2 = put(&s, &b, "k", "two").await?;
    let Some(v2) = p2.version_id.clone() else { return Ok(()) }; // front end without version ids
    ensure!(s3hpc_core::versions::is_valid_version_id(&v2) && v2 != "null", "bad version id {v2}");
    let v3 = put(&s, &b, "k", "three").await?.version_id.ok_or("no version id")?;
    ensure!(v3 != v2, "two PUTs gave one version id");
    let (info, data) = get(&s, &b, "k").await?;
    ensure_eq!(&data[..], b"three");
    ensure_eq!(info.version_id.as_deref(), Some(v3.as_str()));
    let (info, data) = ok(get_v(&s, &b, "k", &v2).await, "get v2")?;
    ensure_eq!(&data[..], b"two");
    ensure_eq!(info.version_id.as_deref(), Some(v2.as_str()));
    let (_, data) = ok(get_v(&s, &b, "k", "null").await, "get null")?;
    ensure_eq!(&data[..], b"one");
    let h = ok(
        s.head_object(&b, "k", GetObjectRequest { version_id: Some(v2.clone()), ..Default::default() }).await,
        "head v2",
    )?;
    ensure_eq!(h.size, 3);
    let k = |v: &str, latest: bool, marker: bool| ("k".to_string(), v.to_string(), latest, marker);
    ensure_eq!(
        summary(&all_versions(&s, &b, "", 1000).await?),
        vec![k(&v3, true, false), k(&v2, false, false), k("null", false, false)]
    );
    // Bad and missing version ids.
    expect_code(get_v(&s, &b, "k", "not-a-version").await, ErrorCode::InvalidArgument, "malformed id")?;
    let missing = s3hpc_core::versions::new_version_id();
    expect_code(get_v(&s, &b, "k", &missing).await, ErrorCode::NoSuchVersion, "missing id")?;
    // A delete makes a marker; the key is gone, its versions stay.
    let d = ok(s.delete_object_version(&b, "k", None).await, "delete")?;
    ensure!(d.delete_marker, "delete on a versioned bucket made no marker");
    let m = d.version_id.ok_or("no marker version id")?;
    match s.get_object(&b, "k", GetObjectRequest::default()).await {
        Err(e) if e.code == ErrorCode::NoSuchKey => {
            ensure_eq!(e.delete_marker.as_deref(), Some(m.as_str()));
        }
        other => return Err(format!("get after delete: expected NoSuchKey, got {:?}", other.map(|o| o.info))),
    }
    match get_v(&s, &b, "k", &m).await {
        Err(e) if e.code == ErrorCode::MethodNotAllowed => {
            ensure_eq!(e.delete_marker.as_deref(), Some(m.as_str()));
        }
        other => return Err(format!("get of a marker: expected MethodNotAllowed, got {:?}", other.map(|o| o.0))),
    }
    let (keys, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(!keys.contains(&"k".to_string()), "a deleted key is listed");
    ensure_eq!(
        summary(&all_versions(&s, &b, "", 1000).await?),
        vec![k(&m, true, true), k(&v3, false, false), k(&v2, false, false), k("null", false, false)]
    );
    expect_code(s.delete_bucket(&b).await, ErrorCode::BucketNotEmpty, "delete a bucket holding versions")?;
    // Copy from an old version.
    let cp = CopyObjectRequest { source_version_id: Some("null".into()), ..Default::default() };
    ok(s.copy_object(&b, "k", &b, "k2", cp).await, "copy null version")?;
    ensure_eq!(&get(&s, &b, "k2").await?.1[..], b"one");
    // Removing the marker brings the key back; removing the current version promotes the next.
    let d = ok(s.delete_object_version(&b, "k", Some(&m)).await, "delete marker")?;
    ensure!(d.delete_marker, "removing a marker does not say so");
    ensure_eq!(&get(&s, &b, "k").await?.1[..], b"three");
    ok(s.delete_object_version(&b, "k", Some(&v3)).await, "delete current version")?;
    let (info, data) = get(&s, &b, "k").await?;
    ensure_eq!(&data[..], b"two");
    ensure_eq!(info.version_id.as_deref(), Some(v2.as_str()));
    ok(s.delete_object_version(&b, "k", Some(&missing)).await, "delete a missing version")?;
    expect_code(s.delete_object_version(&b, "k", Some("zz")).await, ErrorCode::InvalidArgument, "delete bad id")?;
    ok(s.delete_object_version(&b, "k", Some("null")).await, "delete null")?;
    expect_code(get_v(&s, &b, "k", "null").await, ErrorCode::NoSuchVersion, "deleted null version")?;
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?)[..1], vec![k(&v2, true, false)]);
    Ok(())
}

pub(crate) async fn versioning_suspended(s: DynStore, _c: Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(());
    }
    let va = put(&s, &b, "k", "a").await?.version_id.ok_or("no version id")?;
    ensure!(set_versioning(&s, &b, VersioningState::Suspended).await?, "suspend");
    let doc = ok(s.get_bucket_config(&b, s3hpc_core::versions::VERSIONING_CONFIG).await, "get state")?;
    ensure_eq!(doc.as_deref().and_then(VersioningState::from_doc), Some(VersioningState::Suspended));
    ensure_eq!(put(&s, &b, "k", "b").await?.version_id, None);
    ensure_eq!(put(&s, &b, "k", "c").await?.version_id, None);
    let k = |v: &str, latest: bool, marker: bool| ("k".to_string(), v.to_string(), latest, marker);
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, false), k(&va, false, false)]);
    ensure_eq!(&ok(get_v(&s, &b, "k", "null").await, "get null")?.1[..], b"c");
    let d = ok(s.delete_object_version(&b, "k", None).await, "delete")?;
    ensure!(d.delete_marker && d.version_id.as_deref() == Some("null"), "suspended delete: {d:?}");
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, true), k(&va, false, false)]);
    ensure_eq!(put(&s, &b, "k", "d").await?.version_id, None);
    ensure_eq!(summary(&all_versions(&s, &b, "k", 1000).await?), vec![k("null", true, false), k(&va, false, false)]);
    ensure_eq!(&ok(get_v(&s, &b, "k", &va).await, "get a")?.1[..], b"a");
    // Enabled again: the null version becomes noncurrent and stays readable.
    ensure!(set_versioning(&s, &b, VersioningState::Enabled).await?, "enable");
    let ve = put(&s, &b, "k", "e").await?.version_id.ok_or("no version id")?;
    ensure_eq!(
        summary(&all_versions(&s, &b, "k", 1000).await?),
        vec![k(&ve, true, false), k("null", false, false), k(&va, false, false)]
    );
    ensure_eq!(&ok(get_v(&s, &b, "k", "null").await, "get null")?.1[..], b"d");
    Ok(())
}

/// UploadPartCopy from a noncurrent version, the null version, and a delete marker (refused).
pub(crate) async fn versions_part_copy(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    put(&s, &b, "src", "null-version").await?;
    if !set_versioning(&s, &b, VersioningState::Enabled).await? {
        return Ok(());
    }
    let first = pattern(3, 5 * MIB);
    let out1 = put(&s, &b, "src", first.clone()).await?;
    let Some(v1) = out1.version_id else { return Ok(()) };
    put(&s, &b, "src", "second").await?;
    let id = ok(s.create_multipart_upload(&b, "dst", CreateMultipartRequest::default()).await, "create upload")?;
    let from = |v: &str, range| PartCopySource { version_id: Some(v.into()), ..part_src(&b, "src", range) };
    let p1 = ok(s.upload_part_copy(&b, "dst", &id, 1, from(&v1, None)).await, "part copy of v1")?;
    ensure_eq!(p1.size, first.len() as u64);
    let p2 = ok(s.upload_part_copy(&b, "dst", &id, 2, from("null", Some(ByteRange::FromTo(0, 3)))).await, "null")?;
    ensure_eq!(p2.size, 4);
    // A condition is checked against the version named, not the current one.
    let cond = Conditions { if_match: Some(format!("\"{}\"", out1.etag)), ..Default::default() };
    let src = PartCopySource { conditions: cond, ..from(&v1, None) };
    ok(s.upload_part_copy(&b, "dst", &id, 3, src).await, "if-match of v1's etag")?;
    let missing = s3hpc_core::versions::new_version_id();
    expect_code(s.upload_part_copy(&b, "dst", &id, 4, from(&missing, None)).await, ErrorCode::NoSuchVersion, "gone")?;
    let marker = ok(s.delete_object_version(&b, "src", None).await, "delete")?;
    let mv = marker.version_id.ok_or("no delete marker version")?;
    expect_code(s.upload_part_copy(&b, "dst", &id, 4, from(&mv, None)).await, ErrorCode::InvalidRequest, "marker")?;
    let copy = CopyObjectRequest { source_version_id: Some(mv.clone()), ..Default::default() };
    expect_code(s.copy_object(&b, "src", &b, "c", copy).await, ErrorCode::InvalidRequest, "copy of a marker")?;
    expect_code(
        s.upload_part_copy(&b, "dst", &id, 4, part_src(&b, "src", None)).await,
        ErrorCode::NoSuchKey,
        "current",
    )?;
    ok(s.complete_multipart_upload(&b, "dst", &id, as_completed(&[p1, p2]), Conditions::default()).await, "complete")?;
    let (_, data) = get(&s, &b, "dst").await?;
    ensure!(data.len() == first.len() + 4 && data[..first.len()] == first[..], "part 1 is not version 1");
    ensure_eq!(&data[first.len()..], b"null");
    Ok(())
}

pub(crate) async fn versions_listing(s: DynStore, _c: Caps, b: String) -> R {
    if !versioned_bucket(&s, &b).await? {
        return Ok(());
    }
    for k in ["a", "b/1", "b/2", "c"] {
        put(&s, &b, k, "x").await?;
        put(&s, &b, k, "y").await?;
    }
    ok(s.delete_object_version(&b, "c", None).await, "delete c")?;
    let full = all_versions(&s, &b, "", 1000).await?;
    let keys: Vec<&str> = full.iter().map(|v| v.key.as_str()).collect();
    ensure_eq!(keys, vec!["a", "a", "b/1", "b/1", "b/2", "b/2", "c", "c", "c"]);
    ensure!(full[6].delete_marker && full[6].is_latest && full[6].size == 0, "c's marker: {:?}", full[6]);
    ensure!(full.iter().filter(|v| v.is_latest).count() == 4, "one latest per key");
    for page in [1, 2, 3, 4] {
        ensure_eq!(summary(&all_versions(&s, &b, "", page).await?), summary(&full));
    }
    ensure_eq!(all_versions(&s, &b, "b/", 1000).await?.len(), 4);
    let req = ListVersionsRequest { delimiter: Some("/".into()), max_keys: 1000, ..Default::default() };
    let p = ok(s.list_object_versions(&b, req).await, "list with delimiter")?;
    ensure_eq!(p.common_prefixes, vec!["b/".to_string()]);
    ensure_eq!(p.versions.len(), 5);
    let req = ListVersionsRequest { delimiter: Some("/".into()), max_keys: 3, ..Default::default() };
    let p = ok(s.list_object_versions(&b, req).await, "list with delimiter, short page")?;
    ensure!(p.is_truncated, "3 of 6 entries, not truncated");
    ensure_eq!(p.common_prefixes, vec!["b/".to_string()]);
    ensure_eq!(p.next_key_marker.as_deref(), Some("b/"));
    ensure_eq!(p.next_version_id_marker, None);
    Ok(())
}
