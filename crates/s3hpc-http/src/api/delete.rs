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
    let data = small_body(r, body, true).await?;
    let req = xml::parse_delete_objects(&data)?;
    // NoSuchBucket for the whole request; a caller who may not list the bucket still gets a
    // per-key answer (S3 authorizes each key as DeleteObject).
    match store(r).head_bucket(&r.bucket).await {
        Err(e) if e.code != ErrorCode::AccessDenied => return Err(e),
        _ => {}
    }
    let results: Vec<(String, Result<()>)> = futures::stream::iter(req.objects)
        .map(|(key, version)| async move {
            let res = match check_version_id(version.as_deref()) {
                Err(e) => Err(e),
                Ok(()) => match names::validate_key(&key) {
                    Err(e) => Err(e),
                    Ok(()) => store(r).delete_object(&r.bucket, &key).await,
                },
            };
            (key, res)
        })
        .buffered(16)
        .collect()
        .await;
    let mut s = String::from(DECL);
    s.push_str(&format!("<DeleteResult xmlns=\"{NS}\">"));
    for (key, res) in results {
        match res {
            Ok(()) if req.quiet => {}
            Ok(()) => {
                s.push_str("<Deleted>");
                elem(&mut s, "Key", &key);
                s.push_str("</Deleted>");
            }
            Err(e) => {
                s.push_str("<Error>");
                elem(&mut s, "Key", &key);
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
    check_version_id(r.q.get("versionId"))?;
    store(r).delete_object(&r.bucket, &r.key).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
