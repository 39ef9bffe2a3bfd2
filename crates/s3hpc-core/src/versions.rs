//! S3 versioning rules shared by the backends: the bucket's versioning state (kept as the
//! bucket configuration document `versioning`), version ids, and ListObjectVersions paging.

use std::time::SystemTime;

use crate::error::{Error, ErrorCode, Result};
use crate::types::MAX_KEYS;

/// The bucket configuration document (see [`crate::Store::put_bucket_config`]) that holds the
/// versioning state: the bytes `Enabled` or `Suspended`. No document: versioning was never
/// enabled (a bucket cannot go back to that state).
pub const VERSIONING_CONFIG: &str = "versioning";

/// The version id S3 gives objects written while versioning was never enabled or suspended.
pub const NULL_VERSION: &str = "null";

/// A bucket's versioning state once it was ever set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersioningState {
    Enabled,
    Suspended,
}

impl VersioningState {
    pub fn as_str(self) -> &'static str {
        match self {
            VersioningState::Enabled => "Enabled",
            VersioningState::Suspended => "Suspended",
        }
    }

    /// The state a `versioning` configuration document holds (`None`: not a state document).
    pub fn from_doc(doc: &[u8]) -> Option<VersioningState> {
        match doc.trim_ascii() {
            b"Enabled" => Some(VersioningState::Enabled),
            b"Suspended" => Some(VersioningState::Suspended),
            _ => None,
        }
    }
}

/// A new version id: 32 lower-case hex digits, the first 16 the inverted time in nanoseconds,
/// so versions of one key sort newest first by id (within one clock), the rest random.
pub fn new_version_id() -> String {
    let ns = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    format!("{:016x}{:016x}", u64::MAX - ns, rand::random::<u64>())
}

/// Is `v` a version id this gateway could have given (or `null`)?
pub fn is_valid_version_id(v: &str) -> bool {
    v == NULL_VERSION || (v.len() == 32 && v.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
}

/// `InvalidArgument` (400) as S3 answers a version id it never gave.
pub fn check_version_id(v: &str) -> Result<()> {
    if is_valid_version_id(v) {
        Ok(())
    } else {
        Err(Error::invalid_arg("Invalid version id specified", "versionId", v))
    }
}

/// `NoSuchVersion` (404) for a well-formed version id that names no version of `key`.
pub fn no_such_version(bucket: &str, key: &str, version_id: &str) -> Error {
    Error::new(ErrorCode::NoSuchVersion, "The specified version does not exist.")
        .with_resource(format!("{bucket}/{key}?versionId={version_id}"))
        .with("Key", key)
        .with("VersionId", version_id)
}

/// GET/HEAD of a version that is a delete marker: 405, with the marker named.
pub fn marker_not_allowed(version_id: &str) -> Error {
    // AWS names the resource type; the HTTP front end adds the `<Method>` before it.
    Error::code(ErrorCode::MethodNotAllowed).with_delete_marker(version_id).with("ResourceType", "DeleteMarker")
}

/// A copy (CopyObject, UploadPartCopy) whose source names a delete marker: AWS answers 400
/// InvalidRequest where a GET of it gets 405.
pub fn copy_source_error(e: Error) -> Error {
    if e.code == ErrorCode::MethodNotAllowed {
        Error::new(
            ErrorCode::InvalidRequest,
            "The source of a copy request may not specifically refer to a delete marker by version id.",
        )
    } else {
        e
    }
}

/// Operations this gateway does not offer on a bucket whose versioning was ever enabled.
pub fn unversioned_only(what: &str) -> Error {
    Error::new(
        ErrorCode::InvalidRequest,
        format!("{what} is not supported on a bucket with versioning enabled or suspended"),
    )
}

/// What a DeleteObject did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteObjectOutput {
    /// The version removed (a version id was given) or the delete marker created (`None`: the
    /// bucket is not versioned and nothing was named).
    pub version_id: Option<String>,
    /// The removed version was a delete marker, or a delete marker was created.
    pub delete_marker: bool,
}

/// ListObjectVersions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListVersionsRequest {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub key_marker: Option<String>,
    /// Only with `key_marker`: continue after this version of that key.
    pub version_id_marker: Option<String>,
    /// 0..=1000 (larger values are capped).
    pub max_keys: usize,
}

/// One listed version or delete marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    pub key: String,
    /// `null` for the null version.
    pub version_id: String,
    pub is_latest: bool,
    pub delete_marker: bool,
    /// 0 and empty for delete markers.
    pub size: u64,
    pub etag: String,
    pub last_modified: SystemTime,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListVersionsPage {
    /// Versions and delete markers in S3's order: by key, newest first within a key.
    pub versions: Vec<VersionEntry>,
    pub common_prefixes: Vec<String>,
    pub is_truncated: bool,
    pub next_key_marker: Option<String>,
    pub next_version_id_marker: Option<String>,
}

/// The common prefix `key` rolls into, if any.
fn common_prefix<'a>(key: &'a str, prefix: &str, delimiter: Option<&str>) -> Option<&'a str> {
    let d = delimiter?;
    let rest = key.strip_prefix(prefix)?;
    rest.find(d).map(|i| &key[..prefix.len() + i + d.len()])
}

/// One page of ListObjectVersions from every version of the keys under `req.prefix`, in S3's
/// order (ascending key, newest version first within a key).
pub fn page_versions(all: impl IntoIterator<Item = VersionEntry>, req: &ListVersionsRequest) -> ListVersionsPage {
    let delimiter = req.delimiter.as_deref().filter(|d| !d.is_empty());
    let max = req.max_keys.min(MAX_KEYS);
    let mut page = ListVersionsPage::default();
    if max == 0 {
        return page; // as ListObjects: an empty page, not truncated
    }
    let key_marker = req.key_marker.as_deref().filter(|m| !m.is_empty());
    let vid_marker = req.version_id_marker.as_deref().filter(|m| !m.is_empty());
    // A key marker that is a common prefix skips that whole prefix (S3 continues after it).
    let skip_under = key_marker.filter(|m| common_prefix(m, &req.prefix, delimiter) == Some(*m));
    let mut after_version = vid_marker.is_none();
    let mut count = 0usize;
    let mut last_cp: Option<String> = None;
    for e in all {
        if !e.key.starts_with(req.prefix.as_str()) {
            continue;
        }
        if let Some(m) = key_marker {
            if e.key.as_str() < m {
                continue;
            }
            if e.key == m {
                if !after_version {
                    if Some(e.version_id.as_str()) == vid_marker {
                        after_version = true;
                    }
                    continue;
                }
                if vid_marker.is_none() {
                    continue;
                }
            }
        }
        if let Some(s) = skip_under
            && e.key.starts_with(s)
        {
            continue;
        }
        let cp = common_prefix(&e.key, &req.prefix, delimiter);
        if let Some(cp) = cp
            && last_cp.as_deref() == Some(cp)
        {
            continue;
        }
        if count == max {
            page.is_truncated = true;
            break;
        }
        count += 1;
        match cp {
            Some(cp) => {
                last_cp = Some(cp.to_string());
                page.common_prefixes.push(cp.to_string());
                page.next_key_marker = Some(cp.to_string());
                page.next_version_id_marker = None;
            }
            None => {
                page.next_key_marker = Some(e.key.clone());
                page.next_version_id_marker = Some(e.version_id.clone());
                page.versions.push(e);
            }
        }
    }
    if !page.is_truncated {
        page.next_key_marker = None;
        page.next_version_id_marker = None;
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(key: &str, vid: &str) -> VersionEntry {
        VersionEntry {
            key: key.into(),
            version_id: vid.into(),
            is_latest: false,
            delete_marker: false,
            size: 0,
            etag: String::new(),
            last_modified: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn ids_sort_newest_first_and_validate() {
        let a = new_version_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_version_id();
        assert!(b < a);
        assert!(is_valid_version_id(&a) && is_valid_version_id("null"));
        assert!(!is_valid_version_id("x") && !is_valid_version_id(&a.to_uppercase()) && !is_valid_version_id(""));
    }

    #[test]
    fn paging_by_key_and_version_marker() {
        let all = vec![v("a", "1"), v("a", "2"), v("b", "1"), v("c/x", "1"), v("c/y", "1"), v("d", "1")];
        let req = ListVersionsRequest { max_keys: 2, ..Default::default() };
        let p = page_versions(all.clone(), &req);
        assert_eq!(p.versions, vec![v("a", "1"), v("a", "2")]);
        assert_eq!(page_versions(all.clone(), &ListVersionsRequest::default()), ListVersionsPage::default());
        assert!(p.is_truncated);
        assert_eq!((p.next_key_marker.as_deref(), p.next_version_id_marker.as_deref()), (Some("a"), Some("2")));
        let req = ListVersionsRequest {
            max_keys: 2,
            key_marker: Some("a".into()),
            version_id_marker: Some("1".into()),
            delimiter: Some("/".into()),
            ..Default::default()
        };
        let p = page_versions(all.clone(), &req);
        assert_eq!(p.versions, vec![v("a", "2"), v("b", "1")]);
        let req = ListVersionsRequest {
            max_keys: 2,
            key_marker: Some("b".into()),
            delimiter: Some("/".into()),
            ..Default::default()
        };
        let p = page_versions(all.clone(), &req);
        assert_eq!(p.common_prefixes, vec!["c/".to_string()]);
        assert_eq!(p.versions, vec![v("d", "1")]);
        assert!(!p.is_truncated);
        let req = ListVersionsRequest {
            max_keys: 1,
            key_marker: Some("b".into()),
            delimiter: Some("/".into()),
            ..Default::default()
        };
        let p = page_versions(all.clone(), &req);
        assert_eq!((p.next_key_marker.as_deref(), p.next_version_id_marker.as_deref()), (Some("c/"), None));
        let req = ListVersionsRequest {
            max_keys: 5,
            key_marker: Some("c/".into()),
            delimiter: Some("/".into()),
            ..Default::default()
        };
        assert_eq!(page_versions(all, &req).versions, vec![v("d", "1")]);
    }
}
