//! Buckets: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation, and the
//! bucket configurations s3hpc does not support.

use http::{StatusCode, header};

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::{ReqBody, RespBody};
use crate::util::iso8601;
use crate::xml::{self, DECL, NS, elem, escape_into};

pub(super) async fn list_buckets(r: &Req<'_>) -> Result<Resp> {
    let buckets = r.st.cfg.store.list_buckets().await?;
    let mut s = String::with_capacity(256 + buckets.len() * 96);
    s.push_str(DECL);
    s.push_str(&format!("<ListAllMyBucketsResult xmlns=\"{NS}\">"));
    owner_xml(&mut s, "Owner");
    s.push_str("<Buckets>");
    for b in &buckets {
        s.push_str("<Bucket>");
        elem(&mut s, "Name", &b.name);
        elem(&mut s, "CreationDate", &iso8601(b.created));
        s.push_str("</Bucket>");
    }
    s.push_str("</Buckets></ListAllMyBucketsResult>");
    Ok(xml_ok(s))
}

pub(super) async fn create_bucket(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    if hdr(h, "x-amz-bucket-object-lock-enabled").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(Error::not_implemented("object lock is not supported"));
    }
    refuse_unsupported_write_headers(h)?;
    let data = small_body(r, body, false).await?;
    if !data.iter().all(u8::is_ascii_whitespace) {
        // Any LocationConstraint is accepted: s3hpc has one location.
        xml::parse_create_bucket_configuration(&data)?;
    }
    store(r).create_bucket(&r.bucket).await?;
    Ok(empty_ok().header(header::LOCATION, hval(&format!("/{}", r.bucket))?).body(RespBody::Empty).unwrap())
}

/// GET of a bucket configuration s3hpc does not support: the answer AWS gives for a bucket
/// where it was never configured.
pub(super) async fn get_bucket_config(r: &Req<'_>, sub: &str) -> Result<Resp> {
    store(r).head_bucket(&r.bucket).await?;
    let doc = |name: &str, inner: &str| xml_ok(format!("{DECL}<{name} xmlns=\"{NS}\">{inner}</{name}>"));
    let missing = |code: &str, msg: &str| {
        Ok(crate::error_response_raw(404, code, msg, Some(&r.bucket), false, r.parts.uri.path(), 0))
    };
    match sub {
        "versioning" => Ok(doc("VersioningConfiguration", "")),
        "acl" => Ok(xml_ok(acl_xml())),
        "logging" => Ok(doc("BucketLoggingStatus", "")),
        "notification" => Ok(doc("NotificationConfiguration", "")),
        "accelerate" => Ok(doc("AccelerateConfiguration", "")),
        "requestPayment" => Ok(doc("RequestPaymentConfiguration", "<Payer>BucketOwner</Payer>")),
        "policy" => missing("NoSuchBucketPolicy", "The bucket policy does not exist"),
        "lifecycle" => missing("NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist"),
        "cors" => missing("NoSuchCORSConfiguration", "The CORS configuration does not exist"),
        "encryption" => missing(
            "ServerSideEncryptionConfigurationNotFoundError",
            "The server side encryption configuration was not found",
        ),
        "website" => {
            missing("NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration")
        }
        "object-lock" => {
            missing("ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket")
        }
        "ownershipControls" => {
            missing("OwnershipControlsNotFoundError", "The bucket ownership controls were not found")
        }
        "publicAccessBlock" => {
            missing("NoSuchPublicAccessBlockConfiguration", "The public access block configuration was not found")
        }
        "replication" => {
            missing("ReplicationConfigurationNotFoundError", "The replication configuration was not found")
        }
        other => Err(Error::not_implemented(format!("GET ?{other} is not supported by s3hpc"))),
    }
}

pub(super) async fn head_bucket(r: &Req<'_>) -> Result<Resp> {
    store(r).head_bucket(&r.bucket).await?;
    Ok(empty_ok().header("x-amz-bucket-region", r.st.cfg.region.as_str()).body(RespBody::Empty).unwrap())
}

pub(super) async fn get_bucket_location(r: &Req<'_>) -> Result<Resp> {
    store(r).head_bucket(&r.bucket).await?;
    let region = if r.st.cfg.region == "us-east-1" { "" } else { r.st.cfg.region.as_str() };
    let mut s = String::from(DECL);
    s.push_str(&format!("<LocationConstraint xmlns=\"{NS}\">"));
    escape_into(&mut s, region);
    s.push_str("</LocationConstraint>");
    Ok(xml_ok(s))
}

pub(super) async fn delete_bucket(r: &Req<'_>) -> Result<Resp> {
    store(r).delete_bucket(&r.bucket).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
