//! Answering: response builders and XML pieces several operations share.

use http::{HeaderValue, Response, StatusCode, header};

use s3hpc_core::*;

use crate::body::RespBody;
use crate::xml::{DECL, NS, checksum_element, elem};

pub(crate) type Resp = Response<RespBody>;

pub(super) const OWNER_ID: &str = "5b3c6f0e7a2d4c1b9e8f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d";
pub(super) const OWNER_NAME: &str = "s3hpc";

// ---- response helpers ----

pub(super) fn empty_ok() -> http::response::Builder {
    Response::builder().status(StatusCode::OK).header(header::CONTENT_LENGTH, "0")
}

pub(super) fn empty(status: StatusCode) -> Resp {
    let mut b = Response::builder().status(status);
    if status != StatusCode::NO_CONTENT {
        b = b.header(header::CONTENT_LENGTH, "0");
    }
    b.body(RespBody::Empty).unwrap()
}

pub(super) fn xml_ok(s: String) -> Resp {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/xml")
        .header(header::CONTENT_LENGTH, s.len())
        .body(RespBody::full(s))
        .unwrap()
}

pub(super) fn quoted(etag: &str) -> String {
    format!("\"{}\"", etag.trim_matches('"'))
}

pub(super) fn owner_xml(s: &mut String, tag: &str) {
    s.push_str(&format!("<{tag}><ID>{OWNER_ID}</ID><DisplayName>{OWNER_NAME}</DisplayName></{tag}>"));
}

/// `<tag>` naming `owner` (the display name is the id when the account has no name, as
/// ListBuckets shows it). A store that knows no owners (`None`): the caller's account, else
/// the gateway's one user.
pub(super) fn owner_elem(s: &mut String, tag: &str, owner: Option<&OwnerInfo>) {
    let caller = s3hpc_core::caller::current();
    let (id, name) = match (owner, caller.as_ref().and_then(|c| c.account.as_ref())) {
        (Some(o), _) => (o.id.as_str(), o.display_name.as_deref().unwrap_or(&o.id)),
        (None, Some(a)) => (a.id.as_str(), a.name.as_deref().unwrap_or(&a.id)),
        (None, None) => return owner_xml(s, tag),
    };
    s.push('<');
    s.push_str(tag);
    s.push('>');
    elem(s, "ID", id);
    elem(s, "DisplayName", name);
    s.push_str("</");
    s.push_str(tag);
    s.push('>');
}

pub(super) fn acl_xml() -> String {
    let mut s = String::from(DECL);
    s.push_str(&format!("<AccessControlPolicy xmlns=\"{NS}\">"));
    owner_xml(&mut s, "Owner");
    s.push_str("<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">");
    s.push_str(&format!("<ID>{OWNER_ID}</ID><DisplayName>{OWNER_NAME}</DisplayName></Grantee>"));
    s.push_str("<Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>");
    s
}

pub(super) fn checksum_xml(s: &mut String, c: &Option<Checksum>) {
    if let Some(c) = c {
        elem(s, checksum_element(c.algorithm), &c.value);
        elem(s, "ChecksumType", c.checksum_type().as_str());
    }
}

pub(super) fn hval(s: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(s).map_err(|_| Error::internal("value cannot be sent as a header"))
}
