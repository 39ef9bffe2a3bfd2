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

/// ListBuckets, with AWS's optional paging: `max-buckets` (1 to 10000), `continuation-token`
/// (opaque, as ListObjectsV2's) and `prefix`.
pub(super) async fn list_buckets(r: &Req<'_>) -> Result<Resp> {
    let q = &r.q;
    let max = match q.get("max-buckets") {
        None => None,
        Some(v) => Some(v.parse::<usize>().ok().filter(|n| (1..=10_000).contains(n)).ok_or_else(|| {
            Error::invalid_arg("Argument max-buckets must be an integer between 1 and 10000", "max-buckets", v)
        })?),
    };
    // Bucket names are never empty, so the empty "bucket" keeps these tokens apart from listings'.
    let after = q.get("continuation-token").map(|t| super::list::decode_continuation_token("", t)).transpose()?;
    let prefix = q.get("prefix").unwrap_or("");
    let mut buckets = r.st.cfg.store.list_buckets().await?;
    buckets.sort_by(|a, b| a.name.cmp(&b.name));
    buckets.retain(|b| b.name.starts_with(prefix) && after.as_deref().is_none_or(|a| b.name.as_str() > a));
    let next = match max {
        Some(m) if buckets.len() > m => {
            buckets.truncate(m);
            buckets.last().map(|b| super::list::encode_continuation_token("", &b.name))
        }
        _ => None,
    };
    let mut s = String::with_capacity(256 + buckets.len() * 96);
    s.push_str(DECL);
    s.push_str(&format!("<ListAllMyBucketsResult xmlns=\"{NS}\">"));
    // The caller's account (a gateway without accounts: its one owner).
    match s3hpc_core::caller::current().and_then(|c| c.account.clone()) {
        Some(a) => {
            s.push_str("<Owner>");
            elem(&mut s, "ID", &a.id);
            elem(&mut s, "DisplayName", a.name.as_deref().unwrap_or(&a.id));
            s.push_str("</Owner>");
        }
        None => owner_xml(&mut s, "Owner"),
    }
    s.push_str("<Buckets>");
    for b in &buckets {
        s.push_str("<Bucket>");
        elem(&mut s, "Name", &b.name);
        elem(&mut s, "CreationDate", &iso8601(b.created));
        elem(&mut s, "BucketRegion", &r.st.cfg.region);
        s.push_str("</Bucket>");
    }
    s.push_str("</Buckets>");
    if let Some(t) = next {
        elem(&mut s, "ContinuationToken", &t);
    }
    if q.has("prefix") {
        elem(&mut s, "Prefix", prefix);
    }
    s.push_str("</ListAllMyBucketsResult>");
    Ok(xml_ok(s))
}

pub(super) async fn create_bucket(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let h = &r.parts.headers;
    let lock = hdr(h, "x-amz-bucket-object-lock-enabled").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    refuse_unsupported_write_headers(h)?;
    let data = small_body(r, body, false).await?;
    let mut tags = Vec::new();
    if !data.iter().all(u8::is_ascii_whitespace) {
        // s3hpc has one location, the gateway's region, as an S3 regional endpoint: a
        // constraint naming another region is AWS's IllegalLocationConstraintException; an
        // empty one, or `us-east-1` (which S3 spells as no constraint), InvalidLocationConstraint.
        if let Some(c) = xml::parse_create_bucket_configuration(&data)? {
            if c.is_empty() || c == "us-east-1" && r.st.cfg.region == "us-east-1" {
                return Err(Error::code(ErrorCode::InvalidLocationConstraint));
            }
            if c != r.st.cfg.region {
                return Err(Error::new(
                    ErrorCode::IllegalLocationConstraintException,
                    format!(
                        "The {c} location constraint is incompatible for the region specific endpoint this request was sent to."
                    ),
                ));
            }
        }
        tags = xml::parse_create_bucket_tags(&data)?;
        // Checked before the bucket exists, so a bad tag creates nothing.
        names::validate_tags(&tags, names::MAX_BUCKET_TAGS)?;
    }
    let ok = || {
        Ok(empty_ok()
            .header(header::LOCATION, hval(&format!("/{}", r.bucket))?)
            .header("x-amz-bucket-arn", hval(&format!("arn:aws:s3:::{}", r.bucket))?)
            .body(RespBody::Empty)
            .unwrap())
    };
    match store(r).create_bucket(&r.bucket).await {
        Ok(()) => {}
        // In us-east-1 S3 answers 200 to the owner re-creating a bucket (409
        // BucketAlreadyOwnedByYou in every other region); nothing of the request applies.
        Err(e) if e.code == ErrorCode::BucketAlreadyOwnedByYou && r.st.cfg.region == "us-east-1" => return ok(),
        Err(e) => return Err(e),
    }
    if lock {
        super::object_lock::enable_at_create(r).await?;
    }
    if !tags.is_empty() {
        store(r).put_bucket_tagging(&r.bucket, tags).await?;
    }
    ok()
}

/// GET of a bucket configuration s3hpc does not support: the answer AWS gives for a bucket
/// where it was never configured.
pub(super) async fn get_bucket_config(r: &Req<'_>, sub: &str) -> Result<Resp> {
    store(r).head_bucket(&r.bucket).await?;
    let doc = |name: &str, inner: &str| xml_ok(format!("{DECL}<{name} xmlns=\"{NS}\">{inner}</{name}>"));
    let missing = |code: &str, msg: &str| {
        let named = [("BucketName", r.bucket.clone())];
        Ok(crate::error_response_raw(404, code, msg, Some(&r.bucket), &named, false, r.parts.uri.path(), 0))
    };
    match sub {
        "versioning" => Ok(doc("VersioningConfiguration", "")),
        "acl" => Ok(xml_ok(acl_xml())),
        "logging" => Ok(doc("BucketLoggingStatus", "")),
        "notification" => Ok(doc("NotificationConfiguration", "")),
        "accelerate" => Ok(doc("AccelerateConfiguration", "")),
        "requestPayment" => Ok(doc("RequestPaymentConfiguration", "<Payer>BucketOwner</Payer>")),
        "policy" => missing("NoSuchBucketPolicy", "The bucket policy does not exist"),
        "encryption" => missing(
            "ServerSideEncryptionConfigurationNotFoundError",
            "The server side encryption configuration was not found",
        ),
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
