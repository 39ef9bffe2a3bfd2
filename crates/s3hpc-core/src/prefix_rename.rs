//! RenameObject of a whole prefix, an s3hpc extension: when the source and the destination
//! key both end in '/', every key under the source prefix (the directory object `src` itself
//! included) gets the destination prefix instead, atomically where the store can (the posix
//! backend: one rename(2) of the directory). The rules are those of rename(2) of a directory:
//! the source must exist (some key under it: else `NoSuchKey`), the destination must hold no
//! key but its own directory object, which is replaced (else `PrefixNotEmpty`, 409), and must
//! not lie inside the source (`InvalidArgument`). Conditional headers do not apply (400
//! `InvalidRequest`). AWS's RenameObject renames single objects only (see docs/SEMANTICS.md).

use crate::error::{Error, ErrorCode, Result};
use crate::types::RenameObjectRequest;

/// Whether RenameObject `src` -> `dst` renames a prefix (both keys end in '/'), after the
/// checks every store makes: exactly one key ending in '/' is refused (a directory object is
/// renamed with its prefix), and so are conditions on a prefix and a destination inside the
/// source.
pub fn is_prefix_rename(src: &str, dst: &str, req: &RenameObjectRequest) -> Result<bool> {
    match (src.ends_with('/'), dst.ends_with('/')) {
        (false, false) => return Ok(false),
        (true, true) => {}
        _ => {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "RenameObject renames a prefix (a directory) only when both the source and the destination key end in '/'",
            ));
        }
    }
    if !req.source_conditions.is_empty() || !req.conditions.is_empty() {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "conditional headers do not apply to RenameObject of a prefix (keys ending in '/')",
        ));
    }
    if dst != src && dst.starts_with(src) {
        return Err(Error::invalid_argument("the destination prefix of a RenameObject is inside its source prefix"));
    }
    Ok(true)
}

/// The destination prefix holds keys other than its directory object.
pub fn prefix_not_empty(bucket: &str, dst: &str) -> Error {
    Error::new(ErrorCode::PrefixNotEmpty, format!("The destination prefix {dst} holds objects."))
        .with_resource(format!("{bucket}/{dst}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Conditions;

    #[test]
    fn classifies_and_refuses() {
        let none = RenameObjectRequest::default();
        assert!(!is_prefix_rename("a", "b", &none).unwrap());
        assert!(is_prefix_rename("a/", "b/", &none).unwrap());
        assert!(is_prefix_rename("a/", "a/", &none).unwrap());
        assert_eq!(is_prefix_rename("a/", "b", &none).unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(is_prefix_rename("a", "b/", &none).unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(is_prefix_rename("a/", "a/b/", &none).unwrap_err().code, ErrorCode::InvalidArgument);
        // "ab/" is beside "a/", not inside it
        assert!(is_prefix_rename("a/", "ab/", &none).unwrap());
        let cond = RenameObjectRequest {
            conditions: Conditions { if_none_match: Some("*".into()), ..Default::default() },
            ..Default::default()
        };
        assert_eq!(is_prefix_rename("a/", "b/", &cond).unwrap_err().code, ErrorCode::InvalidRequest);
        assert_eq!(prefix_not_empty("b", "d/").code.http_status(), 409);
    }
}
