//! Name rules shared by every backend.

use crate::error::{Error, ErrorCode, Result};
use crate::types::MAX_KEY_LEN;

/// S3's rules for new bucket names: 3-63 characters of lower-case letters, digits, `.` and `-`,
/// starting and ending with a letter or digit, no `..`, not shaped like an IPv4 address, and
/// none of the reserved prefixes/suffixes (`xn--`, `sthree-`, `-s3alias`, `--ol-s3`).
pub fn validate_bucket_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::new(ErrorCode::InvalidBucketName, format!("The specified bucket is not valid: {why}"))
            .with_resource(name))
    };
    if name.len() < 3 || name.len() > 63 {
        return bad("length must be 3 to 63 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-') {
        return bad("only lower-case letters, digits, '.' and '-' are allowed");
    }
    let first = name.as_bytes()[0];
    let last = name.as_bytes()[name.len() - 1];
    if !(first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric()) {
        return bad("must begin and end with a letter or digit");
    }
    if name.contains("..") || name.contains(".-") || name.contains("-.") {
        return bad("adjacent periods or period-hyphen pairs");
    }
    if name.split('.').count() == 4
        && name.split('.').all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return bad("must not be formatted as an IP address");
    }
    for p in ["xn--", "sthree-", "amzn-s3-demo-"] {
        if name.starts_with(p) {
            return bad("reserved prefix");
        }
    }
    for s in ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"] {
        if name.ends_with(s) {
            return bad("reserved suffix");
        }
    }
    Ok(())
}

/// Whether a name could name an existing bucket (looser than [`validate_bucket_name`]; used on
/// every request before touching storage, so a name with `/` or NUL never reaches a backend).
pub fn check_bucket_name_for_access(name: &str) -> Result<()> {
    if name.len() < 3
        || name.len() > 255
        || name.starts_with('.')
        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    {
        return Err(Error::code(ErrorCode::InvalidBucketName).with_bucket(name));
    }
    Ok(())
}

/// Rules every backend applies to keys: non-empty, at most 1024 bytes of UTF-8.
/// A bucket configuration name ([`crate::Store::put_bucket_config`]): `[A-Za-z0-9-]{1,64}`.
pub fn validate_config_name(name: &str) -> Result<()> {
    if !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("invalid bucket configuration name {name:?}")))
    }
}

pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::new(ErrorCode::InvalidArgument, "Object key must not be empty"));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(Error::code(ErrorCode::KeyTooLongError).with_resource(key.to_string()));
    }
    Ok(())
}

/// Validate a tag set: at most `max` tags, keys 1..=128 and values 0..=256 characters, unique keys.
pub fn validate_tags(tags: &[(String, String)], max: usize) -> Result<()> {
    if tags.len() > max {
        return Err(Error::new(ErrorCode::InvalidTag, format!("Object tags cannot be greater than {max}")));
    }
    let mut seen = std::collections::HashSet::new();
    for (k, v) in tags {
        if k.is_empty() || k.chars().count() > 128 {
            return Err(Error::new(ErrorCode::InvalidTag, "The TagKey you have provided is invalid"));
        }
        if v.chars().count() > 256 {
            return Err(Error::new(ErrorCode::InvalidTag, "The TagValue you have provided is invalid"));
        }
        if !seen.insert(k.as_str()) {
            return Err(Error::new(ErrorCode::InvalidTag, "Cannot provide multiple Tags with the same key"));
        }
    }
    Ok(())
}

/// User metadata (names plus values of `x-amz-meta-*`) is limited to 2 KiB: `MetadataTooLarge`.
pub fn validate_meta(meta: &crate::types::ObjectMeta) -> Result<()> {
    let size: usize = meta.user.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > crate::types::MAX_USER_META {
        return Err(Error::code(ErrorCode::MetadataTooLarge));
    }
    if let Some(w) = &meta.website_redirect_location {
        if !(w.starts_with('/') || w.starts_with("http://") || w.starts_with("https://")) {
            return Err(Error::code(ErrorCode::InvalidRedirectLocation));
        }
        if w.len() > MAX_WEBSITE_REDIRECT {
            return Err(Error::new(
                ErrorCode::InvalidRedirectLocation,
                "The length of website redirect location cannot exceed 2,048 characters.",
            ));
        }
    }
    Ok(())
}

/// Longest `x-amz-website-redirect-location` (AWS: 2 KB).
pub const MAX_WEBSITE_REDIRECT: usize = 2048;

/// Maximum tags on an object.
pub const MAX_OBJECT_TAGS: usize = 10;
/// Maximum tags on a bucket.
pub const MAX_BUCKET_TAGS: usize = 50;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names() {
        for ok in ["abc", "my-bucket", "my.bucket.1", &"a".repeat(63)] {
            assert!(validate_bucket_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "ab",
            "Abc",
            "a_b",
            "-ab",
            "ab-",
            "a..b",
            "192.168.1.1",
            "xn--abc",
            "abc-s3alias",
            &"a".repeat(64),
            "a/b",
            "a\0b",
        ] {
            assert_eq!(validate_bucket_name(bad).unwrap_err().code, ErrorCode::InvalidBucketName, "{bad}");
        }
    }

    #[test]
    fn keys() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key(&"k".repeat(1024)).is_ok());
        assert_eq!(validate_key(&"k".repeat(1025)).unwrap_err().code, ErrorCode::KeyTooLongError);
        assert!(validate_key("").is_err());
    }
}
