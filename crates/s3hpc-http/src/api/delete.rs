//! DeleteObject and DeleteObjects.

use futures::StreamExt;
use http::StatusCode;

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::ReqBody;
use crate::xml::{self, DECL, NS, elem};

pub(super) async fn delete_objects(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, true).await.and_then(nonempty)?;
    let req = xml::parse_delete_objects(&data)?;
    // NoSuchBucket for the whole request; a caller who may not list the bucket still gets a
    // per-key answer (S3 authorizes each key as DeleteObject).
    match store(r).head_bucket(&r.bucket).await {
        Err(e) if e.code != ErrorCode::AccessDenied => return Err(e),
        _ => {}
    }
    type Outcome = Result<DeleteObjectOutput>;
    let results: Vec<(String, Option<String>, Outcome)> = futures::stream::iter(req.objects)
        .map(|(key, version)| async move {
            let res = match check_version_id(version.as_deref()) {
                Err(e) => Err(e),
                Ok(()) => match names::validate_key(&key) {
                    Err(e) => Err(e),
                    Ok(()) => store(r).delete_object_version(&r.bucket, &key, version.as_deref()).await,
                },
            };
            (key, version, res)
        })
        .buffered(16)
        .collect()
        .await;
    // The bypass header in a bucket without Object Lock refuses every key alike (nothing was
    // deleted): S3 refuses the whole request, 400 InvalidArgument.
    let bypass = s3hpc_core::lock::bypass_without_lock();
    if let Some((_, _, Err(e))) =
        results.iter().find(|(_, _, res)| matches!(res, Err(e) if e.code == bypass.code && e.message == bypass.message))
    {
        return Err(e.clone());
    }
    let mut s = String::from(DECL);
    s.push_str(&format!("<DeleteResult xmlns=\"{NS}\">"));
    for (key, version, res) in results {
        match res {
            Ok(_) if req.quiet => {}
            Ok(out) => {
                s.push_str("<Deleted>");
                elem(&mut s, "Key", &key);
                if let Some(v) = &version {
                    elem(&mut s, "VersionId", v);
                }
                if out.delete_marker {
                    elem(&mut s, "DeleteMarker", "true");
                    if let Some(m) = &out.version_id {
                        elem(&mut s, "DeleteMarkerVersionId", m);
                    }
                }
                s.push_str("</Deleted>");
            }
            Err(e) => {
                s.push_str("<Error>");
                elem(&mut s, "Key", &key);
                if let Some(v) = &version {
                    elem(&mut s, "VersionId", v);
                }
                elem(&mut s, "Code", e.code.as_str());
                elem(&mut s, "Message", &e.message);
                s.push_str("</Error>");
            }
        }
    }
    s.push_str("</DeleteResult>");
    Ok(xml_ok(s))
}

pub(super) async fn delete_object(r: &Req<'_>) -> Result<Resp> {
    let version = version_param(r)?;
    let out = store(r).delete_object_version(&r.bucket, &r.key, version.as_deref()).await?;
    let mut resp = empty(StatusCode::NO_CONTENT);
    if let Some(v) = &out.version_id {
        resp.headers_mut().insert("x-amz-version-id", hval(v)?);
    }
    if out.delete_marker {
        resp.headers_mut().insert("x-amz-delete-marker", http::HeaderValue::from_static("true"));
    }
    Ok(resp)
}
