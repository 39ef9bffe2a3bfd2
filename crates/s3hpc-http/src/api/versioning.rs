//! Bucket versioning: GetBucketVersioning, PutBucketVersioning, ListObjectVersions.

use s3hpc_core::versions::{VERSIONING_CONFIG, check_version_id};
use s3hpc_core::*;

use super::Req;
use super::list::{encoding, parse_max};
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::util::{iso8601, url_encode_key};
use crate::xml::{self, DECL, NS, elem};

pub(super) async fn get_bucket_versioning(r: &Req<'_>) -> Result<Resp> {
    let doc = store(r).get_bucket_config(&r.bucket, VERSIONING_CONFIG).await?;
    let mut s = format!("{DECL}<VersioningConfiguration xmlns=\"{NS}\">");
    if let Some(st) = doc.as_deref().and_then(VersioningState::from_doc) {
        elem(&mut s, "Status", st.as_str());
    }
    s.push_str("</VersioningConfiguration>");
    Ok(xml_ok(s))
}

pub(super) async fn put_bucket_versioning(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, false).await.and_then(nonempty)?;
    let (status, mfa) = xml::parse_versioning(&data)?;
    let illegal = || Error::code(ErrorCode::IllegalVersioningConfigurationException);
    match mfa.as_deref() {
        None | Some("Disabled") => {}
        Some("Enabled") => {
            return Err(Error::not_implemented(
                "MFA Delete is not supported by s3hpc (it has no MFA devices); send MfaDelete Disabled or leave it out",
            ));
        }
        Some(_) => return Err(illegal()),
    }
    let state = match status.as_deref() {
        // Nothing to change (AWS accepts a document without a status).
        None => {
            store(r).head_bucket(&r.bucket).await?;
            return Ok(empty_ok().body(RespBody::Empty).unwrap());
        }
        Some("Enabled") => VersioningState::Enabled,
        Some("Suspended") => VersioningState::Suspended,
        Some(_) => return Err(illegal()),
    };
    store(r).put_bucket_config(&r.bucket, VERSIONING_CONFIG, Some(state.as_str().as_bytes().to_vec())).await?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

pub(super) async fn list_object_versions(r: &Req<'_>) -> Result<Resp> {
    let q = &r.q;
    let url = encoding(q)?;
    let max_keys = parse_max(q, "max-keys")?;
    let prefix = q.get("prefix").unwrap_or("").to_string();
    let delimiter = q.get("delimiter").filter(|d| !d.is_empty()).map(str::to_owned);
    let key_marker = q.get("key-marker").filter(|m| !m.is_empty()).map(str::to_owned);
    let version_id_marker = q.get("version-id-marker").filter(|m| !m.is_empty()).map(str::to_owned);
    if let Some(v) = &version_id_marker {
        if key_marker.is_none() {
            return Err(Error::invalid_argument("A version-id marker cannot be specified without a key marker."));
        }
        check_version_id(v)?;
    }
    let req = ListVersionsRequest {
        prefix: prefix.clone(),
        delimiter: delimiter.clone(),
        key_marker,
        version_id_marker,
        max_keys,
    };
    let page = store(r).list_object_versions(&r.bucket, req).await?;

    let enc = |s: &str| if url { url_encode_key(s).into_owned() } else { s.to_string() };
    let mut s = String::with_capacity(512 + page.versions.len() * 320);
    s.push_str(DECL);
    s.push_str(&format!("<ListVersionsResult xmlns=\"{NS}\">"));
    elem(&mut s, "Name", &r.bucket);
    elem(&mut s, "Prefix", &enc(&prefix));
    elem(&mut s, "KeyMarker", &enc(q.get("key-marker").unwrap_or("")));
    elem(&mut s, "VersionIdMarker", q.get("version-id-marker").unwrap_or(""));
    if page.is_truncated {
        if let Some(m) = &page.next_key_marker {
            elem(&mut s, "NextKeyMarker", &enc(m));
        }
        if let Some(v) = &page.next_version_id_marker {
            elem(&mut s, "NextVersionIdMarker", v);
        }
    }
    elem(&mut s, "MaxKeys", &max_keys.to_string());
    if let Some(d) = &delimiter {
        elem(&mut s, "Delimiter", &enc(d));
    }
    if url {
        elem(&mut s, "EncodingType", "url");
    }
    elem(&mut s, "IsTruncated", if page.is_truncated { "true" } else { "false" });
    // Owners: a current version's is its object's (ACL record, see `Store::owner`); noncurrent
    // versions and delete markers keep no record of their writer and name the bucket owner.
    let bucket_owner = store(r).owner(&r.bucket, Owned::Bucket).await?;
    let mut owners = Vec::with_capacity(page.versions.len());
    for v in &page.versions {
        owners.push(if v.is_latest && !v.delete_marker {
            store(r).owner(&r.bucket, Owned::Object(&v.key)).await?
        } else {
            bucket_owner.clone()
        });
    }
    // Versions, delete markers and common prefixes in key order, as S3 interleaves them.
    let (mut vi, mut pi) = (0, 0);
    while vi < page.versions.len() || pi < page.common_prefixes.len() {
        let take_version = match (page.versions.get(vi), page.common_prefixes.get(pi)) {
            (Some(v), Some(p)) => v.key.as_str() < p.as_str(),
            (Some(_), None) => true,
            _ => false,
        };
        if !take_version {
            s.push_str("<CommonPrefixes>");
            elem(&mut s, "Prefix", &enc(&page.common_prefixes[pi]));
            s.push_str("</CommonPrefixes>");
            pi += 1;
            continue;
        }
        let v = &page.versions[vi];
        vi += 1;
        let tag = if v.delete_marker { "DeleteMarker" } else { "Version" };
        s.push('<');
        s.push_str(tag);
        s.push('>');
        elem(&mut s, "Key", &enc(&v.key));
        elem(&mut s, "VersionId", &v.version_id);
        elem(&mut s, "IsLatest", if v.is_latest { "true" } else { "false" });
        elem(&mut s, "LastModified", &iso8601(v.last_modified));
        if !v.delete_marker {
            elem(&mut s, "ETag", &quoted(&v.etag));
            elem(&mut s, "Size", &v.size.to_string());
            s.push_str("<StorageClass>STANDARD</StorageClass>");
        }
        owner_elem(&mut s, "Owner", owners[vi - 1].as_ref());
        s.push_str("</");
        s.push_str(tag);
        s.push('>');
    }
    s.push_str("</ListVersionsResult>");
    Ok(xml_ok(s))
}
