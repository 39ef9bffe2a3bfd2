//! RenameObject (`PUT /bucket/key?renameObject` with `x-amz-rename-source`).

use http::HeaderMap;

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::RespBody;
use crate::util::decode_path;

/// The source key `x-amz-rename-source` names, in every form AWS takes: `/bucket/key`,
/// `bucket/key`, or the bare key (what Mountpoint for Amazon S3 sends, unencoded), each
/// URL-encoded or not (a `%` that starts no valid escape is taken as it is). The bucket, when
/// named, must be the request's. `bucket/rest` is ambiguous (it may be the bare key
/// `bucket/rest`): it is read as `rest` in `bucket`, unless `rest` does not exist and the key
/// `bucket/rest` does (see [`resolve_ambiguous`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RenameSource {
    Key(String),
    /// `bucket/rest` without a leading `/`: `rest` (first choice) or the whole value.
    Ambiguous {
        rest: String,
        whole: String,
    },
}

pub(super) fn rename_source(h: &HeaderMap, bucket: &str) -> Result<RenameSource> {
    let bad = || Error::invalid_argument("x-amz-rename-source must name the source object as /bucket/key or key");
    let raw = hdr(h, "x-amz-rename-source").ok_or_else(bad)?;
    let value = match decode_path(raw) {
        Some(v) => v.into_owned(),
        // Escapes that decode to no UTF-8: the value as sent (a raw key with a `%` in it).
        None => raw.to_string(),
    };
    if value.is_empty() {
        return Err(bad());
    }
    let other_bucket = || {
        Error::new(
            ErrorCode::InvalidRequest,
            "RenameObject renames objects within one bucket: the rename source must be in the destination bucket",
        )
    };
    let src = if let Some(path) = value.strip_prefix('/') {
        // `/bucket/key`: the copy-source form.
        let (b, k) = path.split_once('/').ok_or_else(bad)?;
        if b.is_empty() || k.is_empty() {
            return Err(bad());
        }
        if b != bucket {
            return Err(other_bucket());
        }
        RenameSource::Key(k.to_string())
    } else {
        match value.split_once('/') {
            Some((b, k)) if b == bucket && !k.is_empty() => {
                RenameSource::Ambiguous { rest: k.to_string(), whole: value.clone() }
            }
            _ => RenameSource::Key(value.clone()),
        }
    };
    match &src {
        RenameSource::Key(k) => names::validate_key(k)?,
        RenameSource::Ambiguous { rest, .. } => names::validate_key(rest)?,
    }
    Ok(src)
}

/// `bucket/rest`: `rest` unless it is missing while the key `bucket/rest` exists (a bare key
/// whose first segment is the bucket's name, as Mountpoint would send it). Prefix renames
/// (keys ending in `/`) always read `rest`.
async fn resolve_ambiguous(r: &Req<'_>, src: RenameSource) -> Result<String> {
    let (rest, whole) = match src {
        RenameSource::Key(k) => return Ok(k),
        RenameSource::Ambiguous { rest, whole } => (rest, whole),
    };
    if rest.ends_with('/') || names::validate_key(&whole).is_err() {
        return Ok(rest);
    }
    let head = |k: String| async move { store(r).head_object(&r.bucket, &k, GetObjectRequest::default()).await };
    match head(rest.clone()).await {
        Err(e) if e.code == ErrorCode::NoSuchKey && head(whole.clone()).await.is_ok() => Ok(whole),
        _ => Ok(rest),
    }
}

pub(super) async fn rename_object(r: &Req<'_>) -> Result<Resp> {
    let h = &r.parts.headers;
    let src = rename_source(h, &r.bucket)?;
    let client_token = hdr(h, "x-amz-client-token").map(str::to_owned);
    if client_token.as_ref().is_some_and(|t| t.is_empty() || t.len() > 64) {
        return Err(Error::invalid_argument("x-amz-client-token must be 1 to 64 characters"));
    }
    let src = resolve_ambiguous(r, src).await?;
    let req = RenameObjectRequest {
        source_conditions: conditions(h, "x-amz-rename-source-"),
        conditions: conditions(h, ""),
        client_token,
    };
    store(r).rename_object(&r.bucket, &src, &r.key, req).await.map_err(|e| {
        // Source conditions never answer 304 (as on a copy).
        if e.code == ErrorCode::NotModified { Error::code(ErrorCode::PreconditionFailed) } else { e }
    })?;
    Ok(empty_ok().body(RespBody::Empty).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[u8]) -> Result<RenameSource> {
        let mut h = HeaderMap::new();
        h.insert("x-amz-rename-source", http::HeaderValue::from_bytes(v).unwrap());
        rename_source(&h, "bkt")
    }

    fn key(k: &str) -> RenameSource {
        RenameSource::Key(k.to_string())
    }

    #[test]
    fn rename_source_forms() {
        // The copy-source form, encoded or not.
        assert_eq!(parse(b"/bkt/a/b.txt").unwrap(), key("a/b.txt"));
        assert_eq!(parse(b"/bkt/dir%2Fa%20b").unwrap(), key("dir/a b"));
        // Bare keys (Mountpoint sends the key unencoded, UTF-8 included).
        assert_eq!(parse(b"file.txt").unwrap(), key("file.txt"));
        assert_eq!(parse(b"dir/sub/file").unwrap(), key("dir/sub/file"));
        assert_eq!(parse("dir/é ü.txt".as_bytes()).unwrap(), key("dir/é ü.txt"));
        assert_eq!(parse(b"a%20b").unwrap(), key("a b"));
        assert_eq!(parse(b"100%").unwrap(), key("100%"));
        assert_eq!(parse(b"%ff%fe").unwrap(), key("%ff%fe"));
        assert_eq!(parse(b"other/key").unwrap(), key("other/key"));
        // `bucket/key`: either form.
        assert_eq!(parse(b"bkt/x").unwrap(), RenameSource::Ambiguous { rest: "x".into(), whole: "bkt/x".into() });
        // Refused: another bucket named with a leading `/`, nothing named.
        assert_eq!(parse(b"/other/key").unwrap_err().code, ErrorCode::InvalidRequest);
        for v in [&b""[..], b"/", b"/bkt", b"/bkt/", b"//x"] {
            assert_eq!(parse(v).unwrap_err().code, ErrorCode::InvalidArgument, "{v:?}");
        }
    }
}
